// SPDX-License-Identifier: BSD-3-Clause
// dgemm-auto (dgemm_auto.hpp): cuBLAS DGEMM or ozaki2-int8, by a cost model measured per GPU.
#include "mixsolve/gemm/dgemm_auto.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "device_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::gemm {

namespace {

// Times, in seconds, of ozaki2-int8 with N moduli on an m x n x k product:
//   N (2 m n k / int8_ops + per_entry_modulus m n + per_operand_modulus (m + n) k) + per_entry m n,
// against DGEMM's 2 m n k / dgemm_flops. Fitted (least squares on relative error,
// tools/fit_dgemm_auto_model.py) to dgemm_benchmark's times of shapes with 256 <= k <= 32768 and
// 4096 <= m, n <= 32768 at 9 to 16 moduli: on the H100 44 of them, every predicted speed-up
// within 15% of the measured one; on the H200 39, within 18%, and all but two below the measured
// one (those by at most 3%). dgemm_flops is DGEMM's best measured rate, so that the model errs
// towards DGEMM.
struct EmulationModel {
  const char* device_name;
  int multiprocessors;
  double dgemm_flops, int8_ops, per_entry_modulus, per_operand_modulus, per_entry;
  const char* measured;
};

constexpr EmulationModel kModels[] = {
    {"NVIDIA H100 80GB HBM3", 132, 60e12, 1.577e15, 2.24e-12, 1.52e-12, 9.45e-12,
     "H100 80GB HBM3, driver 580.159.04, cuBLAS 13.1.0, 2026-11-25 (docs/ozaki.md)"},
    {"NVIDIA H200", 132, 61.6e12, 1.443e15, 2.29e-12, 8.34e-13, 5.73e-12,
     "H200, driver 580.159.04, cuBLAS 13.1.0, 2026-11-26 (docs/ozaki.md)"},
};

// The model of ctx's GPU, or null; device properties are read once per device.
const EmulationModel* model_for(const Context& ctx) {
  static std::mutex mutex;
  static std::map<int, const EmulationModel*> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = known.find(ctx.device());
  if (it != known.end()) return it->second;
  const DeviceInfo info = device_info(ctx.device());
  const EmulationModel* found = nullptr;
  for (const EmulationModel& model : kModels)
    if (info.name == model.device_name && info.multiprocessors == model.multiprocessors) found = &model;
  known[ctx.device()] = found;
  return found;
}

std::string fixed2(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", x);
  return text;
}

// The largest m, n or k ozaki2-int8 takes (cuBLAS's int sizes, after its padding to 16).
constexpr std::int64_t kEmulationSizeLimit = 2147483647 - 16;

class DgemmAuto final : public Backend {
 public:
  std::string name() const override { return "dgemm-auto"; }
  std::string description() const override {
    return "cuBLAS DGEMM, or ozaki2-int8 where a cost model measured on this GPU predicts it " +
           fixed2(kDgemmAutoMargin) + "x faster at the requested bits; parameter bits";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 75); }
  std::vector<ParameterSpec> parameters() const override {
    return {{"bits",
             "the emulation's accuracy, ozaki2-int8's bits (a grid of 2^-bits of each row's and column's 2-norm); 0: " +
                 std::to_string(kOzaki2DefaultBits) + " (DGEMM's accuracy)",
             0, 64, 0}};
  }

 protected:
  std::int64_t size_limit() const override { return 2147483647; }  // cuBLAS DGEMM's int sizes
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters,
                   const Execution& execution) const override {
    const std::int64_t asked = parameter_value(parameters, "bits");
    const int bits = asked == 0 ? kOzaki2DefaultBits : int(asked);
    const DgemmAutoChoice choice = dgemm_auto_choice(ctx, p.m, p.n, p.k, bits);
    if (choice.backend == "ozaki2-int8") {
      try {
        find_backend("ozaki2-int8").run(ctx, p, {{"moduli", choice.moduli}}, execution);
        return;
      } catch (const RangeError&) {
        // NaN or Inf in A or B, ozaki2-int8's only RangeError, found before it writes C: DGEMM
        // propagates them.
      }
    }
    find_backend("cublas-dgemm").run(ctx, p, {}, execution);
  }
};

}  // namespace

DgemmAutoChoice dgemm_auto_choice(const Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, int bits) {
  if (m < 0 || n < 0 || k < 0)
    throw InvalidArgument("dgemm_auto_choice: m, n, k (" + std::to_string(m) + ", " + std::to_string(n) + ", " +
                          std::to_string(k) + ") must be >= 0");
  if (bits < 1 || bits > 64)
    throw InvalidArgument("dgemm_auto_choice: bits (" + std::to_string(bits) + ") outside [1, 64]");
  DgemmAutoChoice choice{"cublas-dgemm", 0, 0, ""};
  if (k < 1 || k > kOzaki2MaxK || m == 0 || n == 0 || std::max(m, n) > kEmulationSizeLimit) {
    choice.reason = "m, n, k = " + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) +
                    ": outside the emulation's sizes (k in [1, " + std::to_string(kOzaki2MaxK) + "], m and n in [1, " +
                    std::to_string(kEmulationSizeLimit) + "])";
    return choice;
  }
  choice.moduli = ozaki2_moduli_for_bits(bits, k);
  const EmulationModel* model = ctx.has_device() ? model_for(ctx) : nullptr;
  if (!model) {
    choice.reason = "no emulation model measured on this GPU";
    return choice;
  }
  const double mn = double(m) * double(n), flops = 2 * mn * double(k);
  const double emulation = choice.moduli * (flops / model->int8_ops + model->per_entry_modulus * mn +
                                            model->per_operand_modulus * double(m + n) * double(k)) +
                           model->per_entry * mn;
  choice.predicted_speedup = flops / model->dgemm_flops / emulation;
  const std::string model_text = fixed2(choice.predicted_speedup) + "x DGEMM with " + std::to_string(choice.moduli) +
                                 " moduli (model: " + model->measured + ")";
  if (choice.predicted_speedup < kDgemmAutoMargin) {
    choice.reason = "predicted " + model_text + ", below " + fixed2(kDgemmAutoMargin) + "x";
    return choice;
  }
  // The workspace at the narrowest panel ozaki2-int8 takes must fit beside what is allocated.
  std::size_t free = 0, total = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::size_t needed =
      detail::ozaki2_int8_workspace_bytes(m, n, k, choice.moduli, std::min<std::int64_t>(1024, (n + 15) / 16 * 16));
  if (double(needed) > 0.9 * double(free + ctx.workspace_capacity())) {
    choice.reason = "predicted " + model_text + ", but its workspace (" + fixed2(double(needed) / 1e9) +
                    " GB) exceeds the free device memory";
    return choice;
  }
  choice.backend = "ozaki2-int8";
  choice.reason = "predicted " + model_text + ", at least " + fixed2(kDgemmAutoMargin) + "x";
  return choice;
}

void add_dgemm_auto_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<DgemmAuto>());
}

}  // namespace mixsolve::gemm
