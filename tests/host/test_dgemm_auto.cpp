// SPDX-License-Identifier: BSD-3-Clause
// dgemm-auto's choice without a GPU (gemm/dgemm_auto.hpp): the rule on an injected cost model takes
// both branches at the margin, the workspace and the size limits; the model is found from the
// GPU's properties (measured, scaled within an architecture towards DGEMM, or none); registered
// models replace it, thread-safely; bad input is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"  // detail::ozaki2_int8_workspace_bytes: the workspace the choice compares
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/gemm/dgemm_auto.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;

constexpr std::size_t kPlentyOfMemory = std::size_t{1} << 50;

// Round numbers of the H200's magnitude; the tests below hold for any model of this form.
DgemmAutoModel test_model() { return DgemmAutoModel{60e12, 1.5e15, 2e-12, 1e-12, 6e-12, "test model"}; }

// The documented prediction, evaluated in long double: DGEMM's time over the emulation's.
double predicted(const DgemmAutoModel& model, std::int64_t m, std::int64_t n, std::int64_t k, int moduli) {
  const long double mn = (long double)m * n, flops = 2 * mn * k;
  const long double emulation = moduli * (flops / model.int8_ops + model.per_entry_modulus * mn +
                                          model.per_operand_modulus * (long double)(m + n) * k) +
                                model.per_entry * mn;
  return double(flops / model.dgemm_flops / emulation);
}

// Whether `text` contains `part`, for EXPECT_TRUE with the text in the message.
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The properties of the two measured parts, written out here (not read from the library's table).
DgemmAutoDevice h100_sxm() { return DgemmAutoDevice{"", 90, 132, 1980000, 2619000, 5120}; }
DgemmAutoDevice h200() { return DgemmAutoDevice{"", 90, 132, 1980000, 3201000, 6016}; }

const DgemmAutoMeasuredModel& measured(const std::string& source_start) {
  for (const DgemmAutoMeasuredModel& m : dgemm_auto_measured_models())
    if (m.model.source.rfind(source_start, 0) == 0) return m;
  throw std::runtime_error("no measured model from " + source_start);
}

void expect_same_model(const DgemmAutoModel& a, const DgemmAutoModel& b) {
  EXPECT_EQ(a.dgemm_flops, b.dgemm_flops);
  EXPECT_EQ(a.int8_ops, b.int8_ops);
  EXPECT_EQ(a.per_entry_modulus, b.per_entry_modulus);
  EXPECT_EQ(a.per_operand_modulus, b.per_operand_modulus);
  EXPECT_EQ(a.per_entry, b.per_entry);
  EXPECT_EQ(a.source, b.source);
}

// A small product stays on DGEMM, a large one is emulated with the moduli its bits and k need;
// the predicted speed-up is the documented formula's (to 1e-12: a few roundings in double).
TEST(DgemmAutoChoice, InjectedModelTakesDgemmForSmallAndTheEmulationForLargeProducts) {
  const DgemmAutoModel model = test_model();
  const DgemmAutoChoice small = dgemm_auto_choice(model, kPlentyOfMemory, 96, 96, 96, 30);
  EXPECT_EQ(small.backend, "cublas-dgemm") << small.reason;
  EXPECT_EQ(small.moduli, ozaki2_moduli_for_bits(30, 96));
  EXPECT_LT(small.predicted_speedup, kDgemmAutoMargin);
  EXPECT_NEAR(small.predicted_speedup, predicted(model, 96, 96, 96, small.moduli), 1e-12 * small.predicted_speedup);
  EXPECT_TRUE(has(small.reason, "below 1.15x") && has(small.reason, "test model")) << small.reason;

  const DgemmAutoChoice large = dgemm_auto_choice(model, kPlentyOfMemory, 16384, 12288, 16384, 53);
  EXPECT_EQ(large.backend, "ozaki2-int8") << large.reason;
  EXPECT_EQ(large.moduli, ozaki2_moduli_for_bits(53, 16384));
  EXPECT_GE(large.predicted_speedup, kDgemmAutoMargin);
  EXPECT_NEAR(large.predicted_speedup, predicted(model, 16384, 12288, 16384, large.moduli),
              1e-12 * large.predicted_speedup);
  EXPECT_TRUE(has(large.reason, "at least 1.15x") && has(large.reason, "test model")) << large.reason;

  // Fewer bits, fewer moduli: a faster emulation.
  const DgemmAutoChoice fewer = dgemm_auto_choice(model, kPlentyOfMemory, 16384, 12288, 16384, 30);
  EXPECT_LT(fewer.moduli, large.moduli);
  EXPECT_GT(fewer.predicted_speedup, large.predicted_speedup);
}

// The margin decides: a model whose DGEMM rate puts the prediction just above kDgemmAutoMargin
// emulates, just below stays on DGEMM (relative steps of 1e-9, far above double's rounding).
TEST(DgemmAutoChoice, PredictedSpeedupJustAboveTheMarginEmulatesAndJustBelowDoesNot) {
  const std::int64_t m = 8192, n = 4096, k = 2048;
  const int bits = 40, moduli = ozaki2_moduli_for_bits(bits, k);
  for (const double step : {1e-9, -1e-9}) {
    DgemmAutoModel model = test_model();
    model.dgemm_flops *= predicted(model, m, n, k, moduli) / (kDgemmAutoMargin * (1 + step));
    const DgemmAutoChoice choice = dgemm_auto_choice(model, kPlentyOfMemory, m, n, k, bits);
    SCOPED_TRACE(choice.reason);
    EXPECT_NEAR(choice.predicted_speedup, kDgemmAutoMargin * (1 + step), 1e-12);
    EXPECT_EQ(choice.backend, step > 0 ? "ozaki2-int8" : "cublas-dgemm");
  }
}

// A product the model would emulate stays on DGEMM where the workspace at the narrowest panel
// exceeds 90% of the memory available, and is emulated where it fits.
TEST(DgemmAutoChoice, WorkspaceBeyondTheAvailableMemoryKeepsDgemm) {
  const std::int64_t m = 16384, n = 16384, k = 16384;
  const int moduli = ozaki2_moduli_for_bits(kOzaki2DefaultBits, k);
  const std::size_t needed = gemm::detail::ozaki2_int8_workspace_bytes(m, n, k, moduli, 1024);
  ASSERT_GT(needed, std::size_t{1} << 20);
  const auto fits = std::size_t(std::ceil(double(needed) / 0.9)) + 1;
  const DgemmAutoChoice emulated = dgemm_auto_choice(test_model(), fits, m, n, k, kOzaki2DefaultBits);
  EXPECT_EQ(emulated.backend, "ozaki2-int8") << emulated.reason;
  const DgemmAutoChoice kept = dgemm_auto_choice(test_model(), needed, m, n, k, kOzaki2DefaultBits);
  EXPECT_EQ(kept.backend, "cublas-dgemm");
  EXPECT_EQ(kept.predicted_speedup, emulated.predicted_speedup);
  EXPECT_TRUE(has(kept.reason, "workspace") && has(kept.reason, "exceeds")) << kept.reason;
  EXPECT_EQ(dgemm_auto_choice(test_model(), 0, m, n, k, kOzaki2DefaultBits).backend, "cublas-dgemm");
}

// Sizes outside the emulation's (k beyond kOzaki2MaxK, an empty product) stay on DGEMM whatever the
// model; without a model every product does; a host-only Context has none.
TEST(DgemmAutoChoice, SizesOutsideTheEmulationAndNoModelKeepDgemm) {
  const DgemmAutoChoice deep = dgemm_auto_choice(test_model(), kPlentyOfMemory, 64, 64, kOzaki2MaxK + 1, 53);
  EXPECT_EQ(deep.backend, "cublas-dgemm");
  EXPECT_EQ(deep.moduli, 0);
  EXPECT_TRUE(has(deep.reason, "outside the emulation's sizes (k in [1, 131071]")) << deep.reason;
  const DgemmAutoChoice deepest_emulated = dgemm_auto_choice(test_model(), kPlentyOfMemory, 64, 64, kOzaki2MaxK, 53);
  EXPECT_GT(deepest_emulated.moduli, 0) << deepest_emulated.reason;
  using Sizes = std::array<std::int64_t, 3>;
  for (const auto& [m, n, k] : {Sizes{0, 64, 64}, Sizes{64, 0, 64}, Sizes{64, 64, 0}}) {
    const DgemmAutoChoice empty = dgemm_auto_choice(test_model(), kPlentyOfMemory, m, n, k, 53);
    EXPECT_EQ(empty.backend, "cublas-dgemm");
    EXPECT_TRUE(has(empty.reason, "outside the emulation's sizes")) << empty.reason;
  }
  const DgemmAutoChoice none = dgemm_auto_choice(std::nullopt, kPlentyOfMemory, 32768, 32768, 32768, 53);
  EXPECT_EQ(none.backend, "cublas-dgemm");
  EXPECT_EQ(none.moduli, ozaki2_moduli_for_bits(53, 32768));
  EXPECT_EQ(none.predicted_speedup, 0);
  EXPECT_EQ(none.reason, "no emulation model for this GPU");
  const Context host = Context::host_only();
  const DgemmAutoChoice on_host = dgemm_auto_choice(host, 16384, 16384, 16384, 53);
  EXPECT_EQ(on_host.backend, "cublas-dgemm");
  EXPECT_EQ(on_host.moduli, ozaki2_moduli_for_bits(53, 16384));
  EXPECT_TRUE(has(on_host.reason, "host-only")) << on_host.reason;
}

// Bad arguments are refused with their names and values, with and without a model.
TEST(DgemmAutoChoice, BadArgumentsAndModelsAreNamed) {
  const auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no InvalidArgument";
  };
  for (const int bits : {0, 65, -3}) {
    const std::string text = "bits (" + std::to_string(bits) + ")";
    EXPECT_TRUE(has(message([&] { dgemm_auto_choice(test_model(), kPlentyOfMemory, 64, 64, 64, bits); }), text));
    EXPECT_TRUE(has(message([&] { dgemm_auto_choice(std::nullopt, 0, 64, 64, 64, bits); }), text));
    EXPECT_TRUE(has(message([&] { dgemm_auto_choice(Context::host_only(), 64, 64, 64, bits); }), text));
  }
  EXPECT_TRUE(has(message([] { dgemm_auto_choice(test_model(), kPlentyOfMemory, -1, 64, 64, 53); }), "(-1, 64, 64)"));
  EXPECT_TRUE(has(message([] { dgemm_auto_choice(Context::host_only(), 64, 64, -5, 53); }), "(64, 64, -5)"));
  struct Bad {
    double DgemmAutoModel::*field;
    double value;
    const char* text;
  };
  for (const Bad& bad : {Bad{&DgemmAutoModel::dgemm_flops, 0, "model.dgemm_flops (0)"},
                         Bad{&DgemmAutoModel::int8_ops, -1e15, "model.int8_ops (-1e+15)"},
                         Bad{&DgemmAutoModel::int8_ops, std::nan(""), "model.int8_ops (nan)"},
                         Bad{&DgemmAutoModel::per_entry_modulus, -1e-12, "model.per_entry_modulus (-1e-12)"},
                         Bad{&DgemmAutoModel::per_operand_modulus, HUGE_VAL, "model.per_operand_modulus (inf)"},
                         Bad{&DgemmAutoModel::per_entry, -1, "model.per_entry (-1)"}}) {
    DgemmAutoModel model = test_model();
    model.*bad.field = bad.value;
    const std::string refused = message([&] { dgemm_auto_choice(model, kPlentyOfMemory, 64, 64, 64, 53); });
    EXPECT_TRUE(has(refused, bad.text)) << refused;
    const std::string unregistered = message([&] { register_dgemm_auto_model(90001, model); });
    EXPECT_TRUE(has(unregistered, bad.text)) << unregistered;
  }
  EXPECT_FALSE(registered_dgemm_auto_model(90001).has_value());
  DgemmAutoModel free_overheads = test_model();  // zero per-entry times are a valid model
  free_overheads.per_entry_modulus = free_overheads.per_operand_modulus = free_overheads.per_entry = 0;
  EXPECT_EQ(dgemm_auto_choice(free_overheads, kPlentyOfMemory, 4096, 4096, 4096, 53).backend, "ozaki2-int8");
}

// The two measured GPUs are found by their properties alone (no name), clocks reported up to 2%
// off included, with their measured numbers and sources.
TEST(DgemmAutoLookup, FindsTheMeasuredModelsByTheirProperties) {
  ASSERT_EQ(dgemm_auto_measured_models().size(), 2u);
  const auto& h100_model = measured("H100 80GB HBM3, driver 580.159.04");
  const auto& h200_model = measured("H200, driver 580.159.04");
  EXPECT_EQ(h100_model.model.dgemm_flops, 60e12);  // the fitted numbers stay (docs/ozaki.md)
  EXPECT_EQ(h100_model.model.int8_ops, 1.577e15);
  EXPECT_EQ(h200_model.model.dgemm_flops, 61.6e12);
  EXPECT_EQ(h200_model.model.per_entry, 5.73e-12);
  for (const auto& [device, expected] : {std::pair{h100_sxm(), &h100_model}, std::pair{h200(), &h200_model}}) {
    const std::optional<DgemmAutoModel> found = dgemm_auto_model_for(device);
    ASSERT_TRUE(found.has_value());
    expect_same_model(*found, expected->model);
    EXPECT_FALSE(has(found->source, "scaled")) << found->source;
    DgemmAutoDevice nearly = device;  // the same part, its clocks reported 1.5% low
    nearly.sm_clock_khz = int(device.sm_clock_khz * 0.985);
    nearly.memory_clock_khz = int(device.memory_clock_khz * 0.985);
    nearly.name = "a name the lookup does not read";
    const std::optional<DgemmAutoModel> close = dgemm_auto_model_for(nearly);
    ASSERT_TRUE(close.has_value());
    expect_same_model(*close, expected->model);
  }
}

// An unmeasured Hopper part (an H100 PCIe's properties: 114 SMs at 1755 MHz, HBM2e at 2.04 TB/s)
// gets the nearest measured model (the H100's) scaled: DGEMM's and the INT8 rates by its SM rate
// (0.766x; the INT8 one 10% lower again), the per-entry times by the bandwidth ratio (1.64x,
// larger than 1 / 0.766) and 10%; the choice's reason says so.
TEST(DgemmAutoLookup, AnUnmeasuredHopperPartGetsTheNearestModelScaledAndTheReasonSaysSo) {
  const DgemmAutoDevice pcie{"NVIDIA H100 PCIe", 90, 114, 1755000, 1593000, 5120};
  const std::optional<DgemmAutoModel> found = dgemm_auto_model_for(pcie);
  ASSERT_TRUE(found.has_value());
  const DgemmAutoModel& h100 = measured("H100 80GB HBM3").model;
  const double s = (114.0 * 1755) / (132.0 * 1980), w = 1593.0 / 2619;
  EXPECT_NEAR(found->dgemm_flops, h100.dgemm_flops * s, 1e-12 * h100.dgemm_flops);
  EXPECT_NEAR(found->int8_ops, h100.int8_ops * s / 1.1, 1e-12 * h100.int8_ops);
  EXPECT_NEAR(found->per_entry, h100.per_entry / w * 1.1, 1e-12 * h100.per_entry);
  EXPECT_NEAR(found->per_entry_modulus, h100.per_entry_modulus / w * 1.1, 1e-12 * h100.per_entry_modulus);
  EXPECT_NEAR(found->per_operand_modulus, h100.per_operand_modulus / w * 1.1, 1e-12 * h100.per_operand_modulus);
  EXPECT_EQ(found->source.rfind(h100.source, 0), 0u) << found->source;
  EXPECT_TRUE(has(found->source, "scaled to NVIDIA H100 PCIe")) << found->source;
  const DgemmAutoChoice choice = dgemm_auto_choice(found, kPlentyOfMemory, 32768, 32768, 32768, 40);
  EXPECT_TRUE(has(choice.reason, "scaled")) << choice.reason;
  // Hopper with the H200's bandwidth at a lower SM clock: the H200's model is the nearer.
  const DgemmAutoDevice slower_h200{"", 90, 132, 1785000, 3201000, 6016};
  const std::optional<DgemmAutoModel> from_h200 = dgemm_auto_model_for(slower_h200);
  ASSERT_TRUE(from_h200.has_value());
  EXPECT_EQ(from_h200->source.rfind(measured("H200,").model.source, 0), 0u) << from_h200->source;
  EXPECT_TRUE(has(from_h200->source, "scaled")) << from_h200->source;
}

// Other architectures (Ampere, Blackwell) have no model, nor a Hopper part that reports no memory
// clock: dgemm-auto runs DGEMM there.
TEST(DgemmAutoLookup, OtherArchitecturesAndUnreportedPropertiesHaveNoModel) {
  EXPECT_FALSE(
      dgemm_auto_model_for(DgemmAutoDevice{"NVIDIA A100-SXM4-80GB", 80, 108, 1410000, 1593000, 5120}).has_value());
  EXPECT_FALSE(dgemm_auto_model_for(DgemmAutoDevice{"", 100, 148, 1965000, 3996000, 8192}).has_value());
  EXPECT_FALSE(dgemm_auto_model_for(DgemmAutoDevice{"", 89, 132, 1980000, 2619000, 5120}).has_value());
  for (int field = 0; field < 4; ++field) {
    DgemmAutoDevice device = h200();
    int* fields[] = {&device.multiprocessors, &device.sm_clock_khz, &device.memory_clock_khz, &device.memory_bus_width};
    *fields[field] = 0;
    EXPECT_FALSE(dgemm_auto_model_for(device).has_value()) << "field " << field;
  }
  try {
    dgemm_auto_scaled_model(measured("H200,"), DgemmAutoDevice{"", 80, 108, 1410000, 1593000, 5120});
    ADD_FAILURE() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(has(e.what(), "compute_capability (80)")) << e.what();
  }
  try {
    dgemm_auto_scaled_model(measured("H200,"), DgemmAutoDevice{"", 90, 132, 0, 3201000, 6016});
    ADD_FAILURE() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(has(e.what(), "target.sm_clock_khz (0)")) << e.what();
  }
}

// A scaled model errs towards DGEMM: on the shapes the models were fitted on (k 256-32768, m and
// n 4096-32768, 9-16 moduli), each measured model carried to the other GPU predicts no more than
// that GPU's own measured model; and over a grid of Hopper parts, slower and faster, a scaled
// model never predicts more than its measured model does on the GPU it was measured on, over 1.1.
TEST(DgemmAutoLookup, ScaledModelsPredictNoMoreThanTheMeasuredOnes) {
  const auto& h100 = measured("H100 80GB HBM3");
  const auto& h200 = measured("H200,");
  const std::vector<std::int64_t> mn = {4096, 8192, 16384, 32768}, ks = {256, 1024, 2048, 4096, 8192, 16384, 32768};
  const auto ratio = [](const DgemmAutoModel& a, const DgemmAutoModel& b, std::int64_t m, std::int64_t n,
                        std::int64_t k,
                        int moduli) { return predicted(a, m, n, k, moduli) / predicted(b, m, n, k, moduli); };
  double worst = 0;
  for (const auto& [from, to] : {std::pair{&h100, &h200}, std::pair{&h200, &h100}}) {
    const DgemmAutoModel scaled = dgemm_auto_scaled_model(*from, to->device);
    for (const std::int64_t m : mn)
      for (const std::int64_t n : mn)
        for (const std::int64_t k : ks)
          for (int moduli = 9; moduli <= 16; ++moduli)
            worst = std::max(worst, ratio(scaled, to->model, m, n, k, moduli));
  }
  EXPECT_LE(worst, 1.0) << "a model carried to the other measured GPU predicts more than its own";
  double worst_scaled = 0;
  int parts = 0;
  for (const auto* source : {&h100, &h200})
    for (const int sms : {66, 114, 132, 170})
      for (const int clock : {1400000, 1755000, 1980000, 2400000})
        for (const int memory_clock : {1215000, 2619000, 3996000})
          for (const int bus : {4096, 6144}) {
            const DgemmAutoDevice part{"", 90, sms, clock, memory_clock, bus};
            const DgemmAutoModel scaled = dgemm_auto_scaled_model(*source, part);
            ++parts;
            for (const std::int64_t m : mn)
              for (const std::int64_t k : ks)
                for (const int moduli : {9, 12, 16})
                  worst_scaled = std::max(worst_scaled, 1.1 * ratio(scaled, source->model, m, m, k, moduli));
          }
  EXPECT_EQ(parts, 2 * 4 * 4 * 3 * 2);
  EXPECT_LE(worst_scaled, 1 + 1e-12);
}

// A registered model is returned until unregistered; scopes restore what was registered before
// them; a bad device index is named.
TEST(DgemmAutoRegistration, RegistersRestoresAndNamesABadDevice) {
  const int device = 90002;  // an index no machine has: the tests' real devices are untouched
  EXPECT_FALSE(registered_dgemm_auto_model(device).has_value());
  DgemmAutoModel first = test_model(), second = test_model();
  first.source = "first";
  second.source = "second";
  register_dgemm_auto_model(device, first);
  ASSERT_TRUE(registered_dgemm_auto_model(device).has_value());
  EXPECT_EQ(registered_dgemm_auto_model(device)->source, "first");
  {
    const ScopedDgemmAutoModel inner(device, second);
    EXPECT_EQ(registered_dgemm_auto_model(device)->source, "second");
    {
      const ScopedDgemmAutoModel innermost(device, first);
      EXPECT_EQ(registered_dgemm_auto_model(device)->source, "first");
    }
    EXPECT_EQ(registered_dgemm_auto_model(device)->source, "second");
    EXPECT_FALSE(registered_dgemm_auto_model(device + 1).has_value());
  }
  EXPECT_EQ(registered_dgemm_auto_model(device)->source, "first");
  unregister_dgemm_auto_model(device);
  EXPECT_FALSE(registered_dgemm_auto_model(device).has_value());
  {
    const ScopedDgemmAutoModel scope(device, second);
    EXPECT_EQ(registered_dgemm_auto_model(device)->source, "second");
  }
  EXPECT_FALSE(registered_dgemm_auto_model(device).has_value());
  unregister_dgemm_auto_model(device);  // nothing registered: nothing happens
  try {
    register_dgemm_auto_model(-1, first);
    ADD_FAILURE() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(has(e.what(), "device (-1)")) << e.what();
  }
  EXPECT_THROW(ScopedDgemmAutoModel(-2, first), InvalidArgument);
  // A host-only Context (device -1) never takes a registered model.
  EXPECT_TRUE(has(dgemm_auto_choice(Context::host_only(), 16384, 16384, 16384, 53).reason, "host-only"));
}

// Registrations from several threads at once, each on its own device, each thread reading back
// only its own models (a lost or torn update would show as another thread's source).
TEST(DgemmAutoRegistration, ConcurrentRegistrationsOnSeparateDevicesStayApart) {
  constexpr int kThreads = 4, kRounds = 2000, kFirstDevice = 90100;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &wrong] {
      const int device = kFirstDevice + t;
      for (int round = 0; round < kRounds; ++round) {
        DgemmAutoModel model = test_model();
        model.source = std::to_string(t) + ":" + std::to_string(round);
        const ScopedDgemmAutoModel scope(device, model);
        const std::optional<DgemmAutoModel> back = registered_dgemm_auto_model(device);
        wrong[t] += !back || back->source != model.source;
      }
      wrong[t] += registered_dgemm_auto_model(device).has_value();
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
