// SPDX-License-Identifier: BSD-3-Clause
// dgemm-auto (dgemm_auto.hpp): cuBLAS DGEMM or ozaki2-int8, by a cost model keyed on what sets
// the GPU's speed (architecture, multiprocessors, SM clock, memory bandwidth).
#include "mixsolve/gemm/dgemm_auto.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
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

std::string fixed2(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", x);
  return text;
}

std::string general(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

// A measured model is the device's own where the device has its multiprocessors and its SM
// clock and bandwidth within this (the same part reporting slightly different clocks).
constexpr double kSameDeviceTolerance = 0.02;
// A scaled model's emulation time is taken this much longer, for what the ratios of SM rates and
// bandwidths do not capture: carried from the H100 to the H200 (equal SM rates, 1.47x the
// bandwidth) the H100's model predicted up to 7.7% above the H200's own on the fitted shapes
// (k 256-32768, m and n 4096-32768, 9-16 moduli), as the H200's INT8 GEMM was fitted 9% slower.
constexpr double kScaledModelPenalty = 1.1;

// Why a device's properties cannot be scaled from, or "" where they can.
std::string unusable_properties(const DgemmAutoDevice& d) {
  const std::pair<const char*, int> fields[] = {{"multiprocessors", d.multiprocessors},
                                                {"sm_clock_khz", d.sm_clock_khz},
                                                {"memory_clock_khz", d.memory_clock_khz},
                                                {"memory_bus_width", d.memory_bus_width}};
  for (const auto& [field, value] : fields)
    if (value <= 0) return std::string(field) + " (" + std::to_string(value) + ") must be > 0";
  return "";
}

std::string properties_text(const DgemmAutoDevice& d) {
  return (d.name.empty() ? std::string("this GPU") : d.name) + ", compute capability " +
         std::to_string(d.compute_capability / 10) + "." + std::to_string(d.compute_capability % 10) + ", " +
         std::to_string(d.multiprocessors) + " SMs at " + std::to_string(d.sm_clock_khz / 1000) + " MHz, " +
         fixed2(d.bandwidth() / 1e12) + " TB/s";
}

void check_model(const DgemmAutoModel& model, const std::string& who) {
  const std::pair<const char*, double> rates[] = {{"dgemm_flops", model.dgemm_flops}, {"int8_ops", model.int8_ops}};
  for (const auto& [field, value] : rates)
    if (!(std::isfinite(value) && value > 0))
      throw InvalidArgument(who + ": model." + field + " (" + general(value) + ") must be finite and > 0");
  const std::pair<const char*, double> times[] = {{"per_entry_modulus", model.per_entry_modulus},
                                                  {"per_operand_modulus", model.per_operand_modulus},
                                                  {"per_entry", model.per_entry}};
  for (const auto& [field, value] : times)
    if (!(std::isfinite(value) && value >= 0))
      throw InvalidArgument(who + ": model." + field + " (" + general(value) + ") must be finite and >= 0");
}

// The largest m, n or k ozaki2-int8 takes (cuBLAS's int sizes, after its padding to 16).
constexpr std::int64_t kEmulationSizeLimit = 2147483647 - 16;

// dgemm_auto_choice's rule; `no_model` is the reason where model is null.
DgemmAutoChoice choose(const DgemmAutoModel* model, const std::string& no_model, std::size_t available_bytes,
                       std::int64_t m, std::int64_t n, std::int64_t k, int bits) {
  if (m < 0 || n < 0 || k < 0)
    throw InvalidArgument("dgemm_auto_choice: m, n, k (" + std::to_string(m) + ", " + std::to_string(n) + ", " +
                          std::to_string(k) + ") must be >= 0");
  if (bits < 1 || bits > 64)
    throw InvalidArgument("dgemm_auto_choice: bits (" + std::to_string(bits) + ") outside [1, 64]");
  if (model) check_model(*model, "dgemm_auto_choice");
  DgemmAutoChoice choice{"cublas-dgemm", 0, 0, ""};
  if (k < 1 || k > kOzaki2MaxK || m == 0 || n == 0 || std::max(m, n) > kEmulationSizeLimit) {
    choice.reason = "m, n, k = " + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) +
                    ": outside the emulation's sizes (k in [1, " + std::to_string(kOzaki2MaxK) + "], m and n in [1, " +
                    std::to_string(kEmulationSizeLimit) + "])";
    return choice;
  }
  choice.moduli = ozaki2_moduli_for_bits(bits, k);
  if (!model) {
    choice.reason = no_model;
    return choice;
  }
  const double mn = double(m) * double(n), flops = 2 * mn * double(k);
  const double emulation = choice.moduli * (flops / model->int8_ops + model->per_entry_modulus * mn +
                                            model->per_operand_modulus * double(m + n) * double(k)) +
                           model->per_entry * mn;
  choice.predicted_speedup = flops / model->dgemm_flops / emulation;
  const std::string model_text = fixed2(choice.predicted_speedup) + "x DGEMM with " + std::to_string(choice.moduli) +
                                 " moduli (model: " + model->source + ")";
  if (!(choice.predicted_speedup >= kDgemmAutoMargin)) {
    choice.reason = "predicted " + model_text + ", below " + fixed2(kDgemmAutoMargin) + "x";
    return choice;
  }
  // The workspace at the narrowest panel ozaki2-int8 takes must fit beside what is allocated.
  const std::size_t needed =
      detail::ozaki2_int8_workspace_bytes(m, n, k, choice.moduli, std::min<std::int64_t>(1024, (n + 15) / 16 * 16));
  if (double(needed) > 0.9 * double(available_bytes)) {
    choice.reason = "predicted " + model_text + ", but its workspace (" + fixed2(double(needed) / 1e9) +
                    " GB) exceeds 90% of the device memory available (" + fixed2(double(available_bytes) / 1e9) +
                    " GB)";
    return choice;
  }
  choice.backend = "ozaki2-int8";
  choice.reason = "predicted " + model_text + ", at least " + fixed2(kDgemmAutoMargin) + "x";
  return choice;
}

// What dgemm-auto knows of each device: the model found from its properties (or why none), and
// the registered models. One lock for both.
struct Found {
  std::optional<DgemmAutoModel> model;
  std::string no_model;  // the reason where there is none
};

struct Models {
  std::mutex mutex;
  std::map<int, Found> found;
  std::map<int, DgemmAutoModel> registered;
};

Models& models() {
  static Models state;
  return state;
}

std::string no_model_reason(const DgemmAutoDevice& device) {
  const std::string unusable = unusable_properties(device);
  if (!unusable.empty())
    return "no emulation model for " + (device.name.empty() ? std::string("this GPU") : device.name) +
           ": its properties cannot be scaled from (" + unusable + ")";
  return "no emulation model for " + properties_text(device) +
         ": none is measured on its architecture, nor registered (register_dgemm_auto_model)";
}

class DgemmAuto final : public Backend {
 public:
  std::string name() const override { return "dgemm-auto"; }
  std::string description() const override {
    return "cuBLAS DGEMM, or ozaki2-int8 where a cost model of this GPU (measured, scaled from a measured GPU of its "
           "architecture, or registered) predicts it " +
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

const std::vector<DgemmAutoMeasuredModel>& dgemm_auto_measured_models() {
  // Times, in seconds, of ozaki2-int8 with N moduli on an m x n x k product:
  //   N (2 m n k / int8_ops + per_entry_modulus m n + per_operand_modulus (m + n) k) + per_entry m n,
  // against DGEMM's 2 m n k / dgemm_flops. Fitted (least squares on relative error,
  // tools/fit_dgemm_auto_model.py) to dgemm_benchmark's times of shapes with 256 <= k <= 32768 and
  // 4096 <= m, n <= 32768 at 9 to 16 moduli: on the H100 44 of them, every predicted speed-up
  // within 15% of the measured one; on the H200 39, within 18%, and all but two below the measured
  // one (those by at most 3%). dgemm_flops is DGEMM's best measured rate, so that the model errs
  // towards DGEMM. The properties are the parts' peak clocks and bus widths as the CUDA runtime
  // reports them (cudaDevAttrClockRate, cudaDevAttrMemoryClockRate, cudaDevAttrGlobalMemoryBusWidth):
  // the H200's as read on one (driver 580.159.04, 2026-12-01: a 6016-bit bus, not the 6144 bits of
  // its six stacks); the H100's are its published values, still to be read on the card.
  static const std::vector<DgemmAutoMeasuredModel> measured = {
      {{"NVIDIA H100 80GB HBM3", 90, 132, 1980000, 2619000, 5120},
       {60e12, 1.577e15, 2.24e-12, 1.52e-12, 9.45e-12,
        "H100 80GB HBM3, driver 580.159.04, cuBLAS 13.1.0, 2026-11-25 (docs/ozaki.md)"}},
      {{"NVIDIA H200", 90, 132, 1980000, 3201000, 6016},
       {61.6e12, 1.443e15, 2.29e-12, 8.34e-13, 5.73e-12,
        "H200, driver 580.159.04, cuBLAS 13.1.0, 2026-11-26 (docs/ozaki.md)"}},
  };
  return measured;
}

DgemmAutoModel dgemm_auto_scaled_model(const DgemmAutoMeasuredModel& measured, const DgemmAutoDevice& target) {
  for (const auto& [which, device] : {std::pair{"measured.device", &measured.device}, std::pair{"target", &target}}) {
    const std::string unusable = unusable_properties(*device);
    if (!unusable.empty()) throw InvalidArgument(std::string("dgemm_auto_scaled_model: ") + which + "." + unusable);
  }
  if (measured.device.compute_capability != target.compute_capability)
    throw InvalidArgument("dgemm_auto_scaled_model: target.compute_capability (" +
                          std::to_string(target.compute_capability) + ") differs from the measured GPU's (" +
                          std::to_string(measured.device.compute_capability) +
                          "): no model carries across architectures");
  const double s = target.sm_rate() / measured.device.sm_rate(), w = target.bandwidth() / measured.device.bandwidth();
  const double per_entry = std::max({1.0, 1 / w, 1 / s}) * kScaledModelPenalty;
  DgemmAutoModel model = measured.model;
  model.dgemm_flops *= s;
  model.int8_ops *= std::min(s, 1.0) / kScaledModelPenalty;
  model.per_entry_modulus *= per_entry;
  model.per_operand_modulus *= per_entry;
  model.per_entry *= per_entry;
  model.source = measured.model.source + ", scaled to " + properties_text(target) + ": DGEMM x" + fixed2(s) +
                 ", INT8 x" + fixed2(std::min(s, 1.0) / kScaledModelPenalty) + ", per-entry times x" +
                 fixed2(per_entry);
  return model;
}

std::optional<DgemmAutoModel> dgemm_auto_model_for(const DgemmAutoDevice& device) {
  if (!unusable_properties(device).empty()) return std::nullopt;
  const DgemmAutoMeasuredModel* nearest = nullptr;
  double nearest_distance = std::numeric_limits<double>::infinity();
  for (const DgemmAutoMeasuredModel& measured : dgemm_auto_measured_models()) {
    if (measured.device.compute_capability != device.compute_capability) continue;
    const double clock = double(device.sm_clock_khz) / double(measured.device.sm_clock_khz);
    const double w = device.bandwidth() / measured.device.bandwidth();
    if (device.multiprocessors == measured.device.multiprocessors && std::abs(clock - 1) <= kSameDeviceTolerance &&
        std::abs(w - 1) <= kSameDeviceTolerance)
      return measured.model;
    const double distance = std::abs(std::log(device.sm_rate() / measured.device.sm_rate())) + std::abs(std::log(w));
    if (distance < nearest_distance) {
      nearest = &measured;
      nearest_distance = distance;
    }
  }
  if (!nearest) return std::nullopt;
  return dgemm_auto_scaled_model(*nearest, device);
}

DgemmAutoDevice dgemm_auto_device(int device) {
  mixsolve::detail::check_device_index("dgemm_auto_device", device);  // errors that name this function
  const DeviceInfo info = device_info(device);
  return {info.name,         info.compute_capability, info.multiprocessors,
          info.sm_clock_khz, info.memory_clock_khz,   info.memory_bus_width};
}

DgemmAutoChoice dgemm_auto_choice(const std::optional<DgemmAutoModel>& model, std::size_t available_bytes,
                                  std::int64_t m, std::int64_t n, std::int64_t k, int bits) {
  return choose(model ? &*model : nullptr, "no emulation model for this GPU", available_bytes, m, n, k, bits);
}

DgemmAutoChoice dgemm_auto_choice(const Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, int bits) {
  if (!ctx.has_device()) return choose(nullptr, "no emulation model: a host-only Context has no GPU", 0, m, n, k, bits);
  std::optional<DgemmAutoModel> model;
  std::string no_model;
  {
    Models& state = models();
    const std::lock_guard<std::mutex> lock(state.mutex);
    const auto registered = state.registered.find(ctx.device());
    if (registered != state.registered.end()) {
      model = registered->second;
      model->source = "registered for device " + std::to_string(ctx.device()) + ": " + model->source;
    } else {
      auto found = state.found.find(ctx.device());
      if (found == state.found.end()) {  // the device's properties are read once
        const DgemmAutoDevice device = dgemm_auto_device(ctx.device());
        Found entry{dgemm_auto_model_for(device), ""};
        if (!entry.model) entry.no_model = no_model_reason(device);
        found = state.found.emplace(ctx.device(), std::move(entry)).first;
      }
      model = found->second.model;
      no_model = found->second.no_model;
    }
  }
  // The free memory is read only where the model would emulate.
  const DgemmAutoModel* used = model ? &*model : nullptr;
  DgemmAutoChoice choice = choose(used, no_model, std::numeric_limits<std::size_t>::max(), m, n, k, bits);
  if (choice.backend != "ozaki2-int8") return choice;
  std::size_t free = 0, total = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return choose(used, no_model, free + ctx.workspace_capacity(), m, n, k, bits);
}

void register_dgemm_auto_model(int device, const DgemmAutoModel& model) {
  if (device < 0)
    throw InvalidArgument("register_dgemm_auto_model: device (" + std::to_string(device) + ") must be >= 0");
  check_model(model, "register_dgemm_auto_model");
  Models& state = models();
  const std::lock_guard<std::mutex> lock(state.mutex);
  state.registered[device] = model;
}

void unregister_dgemm_auto_model(int device) {
  Models& state = models();
  const std::lock_guard<std::mutex> lock(state.mutex);
  state.registered.erase(device);
}

std::optional<DgemmAutoModel> registered_dgemm_auto_model(int device) {
  Models& state = models();
  const std::lock_guard<std::mutex> lock(state.mutex);
  const auto it = state.registered.find(device);
  if (it == state.registered.end()) return std::nullopt;
  return it->second;
}

ScopedDgemmAutoModel::ScopedDgemmAutoModel(int device, const DgemmAutoModel& model)
    : device_(device), previous_(registered_dgemm_auto_model(device)) {
  register_dgemm_auto_model(device, model);
}

ScopedDgemmAutoModel::~ScopedDgemmAutoModel() {
  if (previous_)
    register_dgemm_auto_model(device_, *previous_);
  else
    unregister_dgemm_auto_model(device_);
}

void add_dgemm_auto_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<DgemmAuto>());
}

}  // namespace mixsolve::gemm
