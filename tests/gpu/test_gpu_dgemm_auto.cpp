// SPDX-License-Identifier: BSD-3-Clause
// dgemm-auto on the GPU: with a cost model registered for the device, both branches run on any
// GPU, each checked bit for bit against the backend it names (and shown to differ from the other
// one); NaN sends an emulated product to DGEMM; the device's properties find its model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gemm_test_support.hpp"
#include "gpu_test_support.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/dgemm_auto.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The H200's magnitudes with DGEMM at 10 TFLOP/s: at 30 bits a 96^3 product is predicted at
// ~0.4x DGEMM and a product of ~1000^3 at ~3.5x, far from the margin either way, whatever the GPU.
DgemmAutoModel branch_model() {
  return DgemmAutoModel{1e13, 1.5e15, 2e-12, 1e-12, 6e-12, "test model: DGEMM at 10 TFLOP/s"};
}

struct Shape {
  std::int64_t m, n, k;
  const char* expected;  // the backend the registered model must choose
};

// dgemm-auto runs what dgemm_auto_choice names, bit for bit, with beta != 0 and odd sizes: cuBLAS
// DGEMM for 96^3 and ozaki2-int8 for 1000 x 1030 x 1111, as the registered model predicts on any
// GPU; each result also differs from the other backend's (30 bits against DGEMM's 53), so the
// comparison tells the branches apart. NaN in A sends the emulated product to DGEMM, which
// propagates it to exactly the n entries of C's first row.
TEST(GpuDgemmAuto, BothBranchesRunTheirChoiceBitForBitAndNanGoesToDgemm) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const ScopedDgemmAutoModel registered(ctx.device(), branch_model());
  const Backend& automatic = find_backend("dgemm-auto");
  int emulated = 0, kept = 0;
  for (const Shape& shape : {Shape{96, 96, 96, "cublas-dgemm"}, Shape{1000, 1030, 1111, "ozaki2-int8"}}) {
    const std::int64_t m = shape.m, n = shape.n, k = shape.k;
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
    const DgemmAutoChoice choice = dgemm_auto_choice(ctx, m, n, k, 30);
    std::printf("%lld x %lld x %lld, 30 bits: %s, %s\n", (long long)m, (long long)n, (long long)k,
                choice.backend.c_str(), choice.reason.c_str());
    ASSERT_EQ(choice.backend, shape.expected) << choice.reason;
    EXPECT_TRUE(has(choice.reason, "registered for device " + std::to_string(ctx.device()) + ": test model"))
        << choice.reason;
    const bool emulates = choice.backend == "ozaki2-int8";
    (emulates ? emulated : kept) += 1;
    DeviceBuffer<double> a(ctx, m * k), b(ctx, k * n), c(ctx, m * n), d(ctx, m * n), e(ctx, m * n);
    fill_random(device_view(a.data(), m, k, m), RandomSpec::phi_spread(1, 91), ctx.stream());
    fill_random(device_view(b.data(), k, n, k), RandomSpec::phi_spread(1, 92), ctx.stream());
    const auto fresh_c = [&] {  // the same C before each call
      for (double* out : {c.data(), d.data(), e.data()})
        fill_random(device_view(out, m, n, m), RandomSpec::uniform(-1, 1, 93), ctx.stream());
    };
    const auto problem = [&](double* out) {
      return mixsolve::testing::packed_f64_problem(m, n, k, 1.0, 0.5, a.data(), b.data(), out);
    };
    const auto download = [&](const DeviceBuffer<double>& buffer) {
      std::vector<double> x(m * n);
      buffer.copy_to_host(x.data(), x.size());
      return x;
    };
    // Entries of x and y that differ (NaN equal to NaN).
    const auto differing = [](const std::vector<double>& x, const std::vector<double>& y) {
      std::int64_t count = 0;
      for (std::size_t i = 0; i < x.size(); ++i) count += !(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])));
      return count;
    };
    const auto run = [&](const std::string& backend, double* out) {
      if (backend == "ozaki2-int8")
        find_backend(backend).run(ctx, problem(out), {{"moduli", choice.moduli}});
      else
        find_backend(backend).run(ctx, problem(out));
    };

    fresh_c();
    automatic.run(ctx, problem(c.data()), {{"bits", 30}});
    run(choice.backend, d.data());
    run(emulates ? "cublas-dgemm" : "ozaki2-int8", e.data());
    ctx.synchronize();
    const std::vector<double> result = download(c), chosen = download(d), other = download(e);
    EXPECT_EQ(differing(result, chosen), 0) << "dgemm-auto against " << choice.backend;
    EXPECT_GT(differing(result, other), 0) << "the other backend's result is the same: the branches are not told apart";

    const double nan = std::nan("");
    MIXSOLVE_CUDA_CHECK(cudaMemcpy(a.data(), &nan, sizeof nan, cudaMemcpyHostToDevice));
    fresh_c();
    automatic.run(ctx, problem(c.data()), {{"bits", 30}});
    run("cublas-dgemm", d.data());
    ctx.synchronize();
    const std::vector<double> with_nan = download(c), dgemm_nan = download(d);
    EXPECT_EQ(differing(with_nan, dgemm_nan), 0) << "NaN in A: dgemm-auto against cuBLAS DGEMM";
    std::int64_t nans = 0, first_row_nans = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        nans += std::isnan(with_nan[i + j * m]);
        first_row_nans += i == 0 && std::isnan(with_nan[i + j * m]);
      }
    EXPECT_EQ(first_row_nans, n);
    EXPECT_EQ(nans, n);
  }
  EXPECT_EQ(emulated, 1);
  EXPECT_EQ(kept, 1);
  EXPECT_THROW(dgemm_auto_choice(ctx, 8, 8, 8, 0), InvalidArgument);
}

// The properties dgemm-auto reads are the device's (device_info's, the clocks and bus width as
// the runtime reports them), and an index beyond the devices is a named DeviceError; the choice
// without a registration uses the model they find (or names why there is none), with a
// registration the registered one, and after it the found one again. On the two GPUs the models
// were measured on, the properties find the measured model itself, not a scaled one: the table of
// their properties matches the parts.
TEST(GpuDgemmAuto, TheDevicePropertiesFindItsModelAndARegistrationReplacesIt) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  ASSERT_FALSE(registered_dgemm_auto_model(ctx.device()).has_value());
  const DgemmAutoDevice device = dgemm_auto_device(ctx.device());
  const DeviceInfo info = device_info(ctx.device());
  std::printf("%s: compute capability %d, %d SMs, SM clock %d kHz, memory clock %d kHz, %d-bit bus (%.2f TB/s)\n",
              device.name.c_str(), device.compute_capability, device.multiprocessors, device.sm_clock_khz,
              device.memory_clock_khz, device.memory_bus_width, device.bandwidth() / 1e12);
  EXPECT_EQ(device.name, info.name);
  EXPECT_EQ(device.compute_capability, info.compute_capability);
  EXPECT_EQ(device.multiprocessors, info.multiprocessors);
  EXPECT_GT(device.sm_clock_khz, 0);
  EXPECT_GT(device.memory_clock_khz, 0);
  EXPECT_GT(device.memory_bus_width, 0);
  // device_info's clocks and bus width, which dgemm_auto_device passes on, are the runtime's.
  const auto attribute = [&](cudaDeviceAttr which) {
    int value = 0;
    MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&value, which, ctx.device()));
    return value;
  };
  EXPECT_EQ(info.sm_clock_khz, attribute(cudaDevAttrClockRate));
  EXPECT_EQ(info.memory_clock_khz, attribute(cudaDevAttrMemoryClockRate));
  EXPECT_EQ(info.memory_bus_width, attribute(cudaDevAttrGlobalMemoryBusWidth));
  EXPECT_EQ(device.sm_clock_khz, info.sm_clock_khz);
  EXPECT_EQ(device.memory_clock_khz, info.memory_clock_khz);
  EXPECT_EQ(device.memory_bus_width, info.memory_bus_width);
  // A device index beyond the devices is a named DeviceError of either.
  int count = 0;
  MIXSOLVE_CUDA_CHECK(cudaGetDeviceCount(&count));
  const auto refuses_bad_indices = [&](const std::string& who, auto call) {
    for (const int bad : {-1, count}) {
      try {
        call(bad);
        ADD_FAILURE() << who << "(" << bad << ") did not throw";
      } catch (const DeviceError& e) {
        EXPECT_TRUE(has(e.what(), who + ": device (" + std::to_string(bad) + ") is not a valid index (" +
                                      std::to_string(count) + " devices)"))
            << e.what();
      }
    }
  };
  refuses_bad_indices("dgemm_auto_device", [](int d) { dgemm_auto_device(d); });
  refuses_bad_indices("device_info", [](int d) { device_info(d); });
  const std::optional<DgemmAutoModel> found = dgemm_auto_model_for(device);
  if (info.name == "NVIDIA H100 80GB HBM3" || info.name == "NVIDIA H200") {
    ASSERT_TRUE(found.has_value());
    EXPECT_FALSE(has(found->source, "scaled")) << found->source;
  }
  const std::int64_t size = 16384;
  const auto expect_found_model = [&] {
    const DgemmAutoChoice choice = dgemm_auto_choice(ctx, size, size, size, 53);
    std::printf("n = %lld, 53 bits: %s, %s\n", (long long)size, choice.backend.c_str(), choice.reason.c_str());
    if (found) {
      EXPECT_TRUE(has(choice.reason, "(model: " + found->source + ")")) << choice.reason;
      const DgemmAutoChoice pure =
          dgemm_auto_choice(found, std::numeric_limits<std::size_t>::max(), size, size, size, 53);
      EXPECT_EQ(choice.predicted_speedup, pure.predicted_speedup);
    } else {
      EXPECT_TRUE(has(choice.reason, "no emulation model for " + device.name)) << choice.reason;
      EXPECT_EQ(choice.backend, "cublas-dgemm");
    }
  };
  expect_found_model();
  {
    const ScopedDgemmAutoModel registered(ctx.device(), branch_model());
    const DgemmAutoChoice choice = dgemm_auto_choice(ctx, size, size, size, 53);
    EXPECT_TRUE(has(choice.reason, "registered for device")) << choice.reason;
    const DgemmAutoChoice pure =
        dgemm_auto_choice(branch_model(), std::numeric_limits<std::size_t>::max(), size, size, size, 53);
    EXPECT_EQ(choice.predicted_speedup, pure.predicted_speedup);
  }
  EXPECT_FALSE(registered_dgemm_auto_model(ctx.device()).has_value());
  expect_found_model();
}

}  // namespace
