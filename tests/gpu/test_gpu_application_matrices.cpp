// SPDX-License-Identifier: BSD-3-Clause
// Device generation of the application families against the host generation: the same values,
// element by element, with tolerances from the few operations that may round differently.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu/gpu_test_support.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/application_matrices.hpp"

namespace {

using namespace mixsolve;

constexpr double kU = 0x1p-53;  // unit roundoff of FP64

// |device - host| allowed for element (i, j) of value `host`.
double tolerance(const ApplicationSpec& spec, std::int64_t n, double host) {
  switch (spec.family) {
    case ApplicationFamily::CovarianceSquaredExponential:
    case ApplicationFamily::CovarianceMatern32:
    case ApplicationFamily::CovarianceMatern52:
      // exp() is within an ulp (2u relative) of the exact value on each side, so the two differ by
      // up to 4u; the Matern polynomial factor is identical and its product rounds once more on
      // each side (2u).
      return 6 * kU * std::abs(host);
    case ApplicationFamily::RankDeficient: {
      // cuBLAS and Eigen sum X Y^T in different orders: each within gamma_r (|X| |Y|^T)_ij <= gamma_r r
      // of the exact product (|x|, |y| <= 1). The perturbation is the same on both sides; adding
      // it rounds once on each (2u).
      const double r = std::floor(spec.rank_ratio * double(n));
      return 2 * r * (r * kU / (1 - r * kU)) + 2 * kU * std::abs(host);
    }
    default:
      // Arrays prepared on the host, the same IEEE operations in the same order, no FMA
      // contraction on either side (matgen/CMakeLists.txt): bitwise equal.
      return 0.0;
  }
}

TEST(GpuApplicationMatrices, DeviceGenerationMatchesTheHostForEveryFamily) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  // 97: one block of rows; 1000: several, off any power of two; ld > n: padding untouched.
  for (std::int64_t n : {std::int64_t(97), std::int64_t(1000)})
    for (ApplicationFamily family : application_families()) {
      ApplicationSpec spec;
      spec.family = family;
      spec.seed = 11;
      if (family == ApplicationFamily::RankDeficient) spec.perturbation = 1e-8;
      SCOPED_TRACE(spec.name() + ", n = " + std::to_string(n));
      const std::int64_t ld = n + 5;
      std::vector<double> host(n * n);
      generate_application_matrix(spec, host_view(host.data(), n, n, n));
      DeviceBuffer<double> device(ld * n);
      fill_constant(device_view(device.data(), ld, n, ld), double(NAN), ctx.stream());
      generate_application_matrix_on_device(spec, device_view(device.data(), n, n, ld), ctx.stream());
      const std::vector<double> got = device.to_host(ctx.stream());
      std::int64_t mismatches = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        for (std::int64_t i = 0; i < n; ++i) {
          const double h = host[i + j * n], d = got[i + j * ld];
          if (!(std::abs(d - h) <= tolerance(spec, n, h)) && ++mismatches <= 5)
            ADD_FAILURE() << "a(" << i << ", " << j << "): device " << d << ", host " << h << ", difference " << d - h;
        }
        for (std::int64_t i = n; i < ld; ++i) ASSERT_TRUE(std::isnan(got[i + j * ld])) << "padding row " << i << " written";
      }
      EXPECT_EQ(mismatches, 0);
    }
}

TEST(GpuApplicationMatrices, DeviceArgumentsAreChecked) {
  MIXSOLVE_REQUIRE_GPU();
  DeviceBuffer<double> a(16);
  std::vector<double> host(16);
  EXPECT_THROW(generate_application_matrix_on_device(ApplicationSpec{}, host_view(host.data(), 4, 4, 4)), InvalidArgument);
  EXPECT_THROW(generate_application_matrix_on_device(ApplicationSpec{}, device_view(a.data(), 4, 3, 4)), InvalidArgument);
  ApplicationSpec bad = ApplicationSpec::parse("toeplitz_ar1");
  bad.rho = 1;
  EXPECT_THROW(generate_application_matrix_on_device(bad, device_view(a.data(), 4, 4, 4)), InvalidArgument);
}

}  // namespace
