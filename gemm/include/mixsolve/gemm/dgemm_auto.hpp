// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// dgemm-auto: C = alpha op(A) op(B) + beta C in FP64 on the GPU, by cuBLAS DGEMM or by its
/// emulation ozaki2-int8, whichever a cost model of the GPU predicts to be faster at the requested
/// accuracy (parameter bits, default kOzaki2DefaultBits). The emulation is taken only where the
/// model predicts at least kDgemmAutoMargin times DGEMM's speed, so that model error cannot make
/// dgemm-auto slower than DGEMM. Products whose emulation would not fit in the free device
/// memory, and inputs holding NaN or Inf, run cuBLAS DGEMM.
///
/// The model is found from what sets the speed (DgemmAutoDevice: architecture, multiprocessors,
/// SM clock, memory bandwidth; dgemm_auto_model_for): a GPU with a measured model's properties
/// gets that model; another GPU of a measured architecture gets the nearest measured model scaled
/// to it, conservatively (towards DGEMM); a GPU of another architecture gets none and runs DGEMM.
/// A model registered for a device (register_dgemm_auto_model, ScopedDgemmAutoModel) replaces
/// the one found. The measured models were fitted for m, n >= 4096 and 256 <= k <= 32768; beyond
/// that range their margin is not measured.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"

namespace mixsolve::gemm {

/// The predicted speed-up over DGEMM that dgemm-auto asks of the emulation.
constexpr double kDgemmAutoMargin = 1.15;

/// What dgemm-auto runs for one product, and why.
struct DgemmAutoChoice {
  /// "cublas-dgemm" or "ozaki2-int8".
  std::string backend;
  /// The moduli ozaki2-int8 would take (0 when the sizes are outside the emulation's).
  int moduli = 0;
  /// DGEMM's time over the emulation's, as the model predicts it (0 without a model).
  double predicted_speedup = 0;
  /// One line: the model's verdict and the model's source (measured, scaled from a measured one,
  /// or registered), or why there is no verdict.
  std::string reason;
};

/// The properties of a GPU that set DGEMM's and the emulation's speed (dgemm_auto_device takes
/// them from device_info).
struct DgemmAutoDevice {
  /// The device's name: used in the choice's reason only; the lookup goes by the fields below.
  std::string name;
  /// 10 major + minor: 90 for Hopper. The tensor cores' rates per SM and clock are the architecture's.
  int compute_capability = 0;
  /// Streaming multiprocessors.
  int multiprocessors = 0;
  /// Peak SM clock in kHz (cudaDevAttrClockRate).
  int sm_clock_khz = 0;
  /// Peak memory clock in kHz (cudaDevAttrMemoryClockRate).
  int memory_clock_khz = 0;
  /// Memory bus width in bits (cudaDevAttrGlobalMemoryBusWidth).
  int memory_bus_width = 0;
  /// Peak memory bandwidth in bytes/s: 2 transfers per memory clock over the bus.
  double bandwidth() const { return 2.0 * 1e3 * double(memory_clock_khz) * double(memory_bus_width) / 8; }
  /// Multiprocessors x SM clock in Hz: what the tensor cores' rates scale with on one architecture.
  double sm_rate() const { return double(multiprocessors) * 1e3 * double(sm_clock_khz); }
};

/// A cost model of ozaki2-int8 against cuBLAS DGEMM on one GPU, the form that
/// tools/fit_dgemm_auto_model.py fits to dgemm_benchmark's times: an m x n x k product takes
/// DGEMM 2 m n k / dgemm_flops seconds, and ozaki2-int8 with N moduli
///   N (2 m n k / int8_ops + per_entry_modulus m n + per_operand_modulus (m + n) k) + per_entry m n.
struct DgemmAutoModel {
  /// DGEMM's rate, FLOP/s (finite, > 0).
  double dgemm_flops = 0;
  /// The INT8 GEMM's rate, operations/s (finite, > 0).
  double int8_ops = 0;
  /// Seconds per entry of C and modulus (finite, >= 0).
  double per_entry_modulus = 0;
  /// Seconds per entry of op(A) and op(B) and modulus (finite, >= 0).
  double per_operand_modulus = 0;
  /// Seconds per entry of C (finite, >= 0).
  double per_entry = 0;
  /// Where the numbers come from (GPU, software, date, document); quoted in DgemmAutoChoice::reason.
  std::string source;
};

/// A model measured on one GPU, with that GPU's properties.
struct DgemmAutoMeasuredModel {
  DgemmAutoDevice device;
  DgemmAutoModel model;
};

/// The models measured with dgemm_benchmark and fitted with tools/fit_dgemm_auto_model.py that
/// dgemm_auto_model_for chooses from.
/// @return them, in a fixed order.
const std::vector<DgemmAutoMeasuredModel>& dgemm_auto_measured_models();

/// `measured`'s model carried to a GPU of the same architecture with `target`'s properties,
/// conservatively (towards DGEMM). With s the ratio of SM rates (target over measured,
/// DgemmAutoDevice::sm_rate) and w that of bandwidths: dgemm_flops is multiplied by s, int8_ops
/// by min(s, 1) (a faster part may be held back by power, which the INT8 GEMM reaches first), the
/// three per-entry times by max(1, 1 / w, 1 / s) (they are bound by memory or by the SMs and are
/// never taken faster than measured); then the emulation's time is taken 10% longer, for what
/// these ratios do not capture (docs/ozaki.md). The source names the measured model and the factors.
/// @param measured a measured model and the properties of the GPU it was measured on.
/// @param target   the properties of the GPU to carry it to.
/// @return the scaled model.
/// @throws InvalidArgument where the two compute capabilities differ, or either device's
///         multiprocessors, clocks or bus width are not positive (naming the field and value).
DgemmAutoModel dgemm_auto_scaled_model(const DgemmAutoMeasuredModel& measured, const DgemmAutoDevice& target);

/// The model dgemm-auto uses, unless one is registered, on a GPU with these properties. A
/// measured model whose GPU has the same compute capability and multiprocessors, and an SM clock
/// and bandwidth within 2%, is returned as measured. Otherwise the nearest measured model of the
/// same compute capability (the smallest |ln s| + |ln w|, dgemm_auto_scaled_model) is returned
/// scaled. None (DGEMM) for an architecture without a measured model, or where a clock, the bus
/// width or the multiprocessors are not positive (a device that does not report them).
/// @param device the GPU's properties.
/// @return the model, or none. Never throws.
std::optional<DgemmAutoModel> dgemm_auto_model_for(const DgemmAutoDevice& device);

/// The properties of CUDA device `device` that dgemm_auto_model_for reads.
/// @param device a CUDA device index.
/// @return its name, compute capability, multiprocessors, SM and memory clocks and bus width.
/// @throws DeviceError if no CUDA GPU is available or `device` is not a valid index.
DgemmAutoDevice dgemm_auto_device(int device);

/// dgemm-auto's choice from a given model, without the GPU (no CUDA call): what
/// dgemm_auto_choice(ctx, ...) returns for ctx's model and memory.
/// @param model           the cost model; none (std::nullopt): cuBLAS DGEMM.
/// @param available_bytes the device memory the emulation's workspace may take: the free device
///                        memory and what the Context's workspace holds. The emulation is taken
///                        only where its workspace at its narrowest panel is at most 90% of it.
/// @param m, n, k         the product's sizes, >= 0.
/// @param bits            the bits kept of each operand, 1 to 64.
/// @return the choice and its reason.
/// @throws InvalidArgument for negative sizes, bits outside [1, 64], or a model with a rate not
///         finite and positive or a per-entry time not finite and >= 0 (naming the value).
DgemmAutoChoice dgemm_auto_choice(const std::optional<DgemmAutoModel>& model, std::size_t available_bytes,
                                  std::int64_t m, std::int64_t n, std::int64_t k, int bits);

/// dgemm-auto's choice for an m x n x k product keeping `bits` bits of each operand (1 to 64) on
/// ctx's GPU: its registered model, else dgemm_auto_model_for(dgemm_auto_device(ctx.device()))
/// (found once per device), and the free device memory. NaN or Inf in A or B sends a call to
/// cuBLAS DGEMM whatever this says. A host-only Context has no model.
/// @throws InvalidArgument for negative sizes or bits outside [1, 64].
DgemmAutoChoice dgemm_auto_choice(const Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, int bits);

/// Makes dgemm-auto (and dgemm_auto_choice) use `model` on CUDA device `device`, for every
/// Context on that device in this process, in place of the model found from the device's
/// properties: for a GPU measured with dgemm_benchmark and fitted with
/// tools/fit_dgemm_auto_model.py, or for tests. Replaces an earlier registration for the device.
/// Thread-safe; a call already choosing may still use the model it found.
/// @param device a CUDA device index, >= 0 (not checked against the devices present).
/// @param model  the model, checked as dgemm_auto_choice checks one.
/// @throws InvalidArgument for device < 0 or a model dgemm_auto_choice refuses (naming the value).
void register_dgemm_auto_model(int device, const DgemmAutoModel& model);

/// Removes the model registered for `device`, if any: dgemm-auto goes back to the one found from
/// its properties. Thread-safe.
/// @param device a CUDA device index.
void unregister_dgemm_auto_model(int device);

/// The model registered for `device`, if any. Thread-safe.
/// @param device a CUDA device index.
/// @return the registered model, or none.
std::optional<DgemmAutoModel> registered_dgemm_auto_model(int device);

/// Registers a model for `device` while it lives (register_dgemm_auto_model), then restores what
/// was registered for the device when it was made (or none). Scopes on one device must end in the
/// reverse order of their start.
class ScopedDgemmAutoModel {
 public:
  /// @throws InvalidArgument as register_dgemm_auto_model.
  ScopedDgemmAutoModel(int device, const DgemmAutoModel& model);
  ~ScopedDgemmAutoModel();
  ScopedDgemmAutoModel(const ScopedDgemmAutoModel&) = delete;
  ScopedDgemmAutoModel& operator=(const ScopedDgemmAutoModel&) = delete;

 private:
  int device_;
  std::optional<DgemmAutoModel> previous_;
};

}  // namespace mixsolve::gemm
