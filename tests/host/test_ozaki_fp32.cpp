// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme with FP32 splits (gemm/ozaki_fp32.hpp, Nanai & Fujimoto 2021): the split's properties, the
// exactness of the high-by-high products (eq. (5)), the fall of the maximum relative error with
// the number of splits against an MPFR reference (the trend of Nanai & Fujimoto 2021, Table 2), and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "mixsolve/core/random.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/ozaki_fp32.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "ozaki_test_support.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve::testing::phi_matrix;


TEST(OzakiFp32, BetaFollowsNanaiFujimotoEq10) {
  EXPECT_EQ(formats::ozaki_fp32_beta(1), 12);     // ceil((24 + 0) / 2)
  EXPECT_EQ(formats::ozaki_fp32_beta(1024), 17);  // ceil((24 + 10) / 2)
  EXPECT_EQ(formats::ozaki_fp32_beta(1025), 18);  // ceil(log2 k) = 11
  EXPECT_EQ(formats::ozaki_fp32_beta(kOzakiFp32MaxK), 23);
  EXPECT_EQ(formats::ceil_log2(1.0), 0);
  EXPECT_EQ(formats::ceil_log2(1.5), 1);
  EXPECT_EQ(formats::ceil_log2(0.75), 0);
  EXPECT_EQ(formats::ceil_log2(0x1p-1074), -1074);
}

// The first high part lies on its vector's grid (alpha + 1 bits at most), the parts and the last
// remainder add up to the scaled vector (up to the remainder's FP32 rounding), and every product
// of high parts with p + q <= s is exact in FP32 (Nanai & Fujimoto 2021, eq. (5)): what the split is for.
TEST(OzakiFp32, SplitsAreOnTheirGridAndHighProductsAreExact) {
  const std::int64_t m = 37, n = 29, k = 300;
  const int beta = formats::ozaki_fp32_beta(k);
  for (const double phi : {0.1, 1.0, 2.0}) {
    const std::vector<double> a = phi_matrix(m, k, phi, 11), b = phi_matrix(k, n, phi, 12);
    for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) {
      const OzakiFp32Operand sa = ozaki_fp32_split(m, k, a.data(), 1, m, s);  // rows of A
      const OzakiFp32Operand sb = ozaki_fp32_split(n, k, b.data(), k, 1, s);  // columns of B
      ASSERT_EQ(sa.high.size(), std::size_t(s - 1));
      ASSERT_EQ(sa.remainder.size(), std::size_t(s));
      for (std::int64_t i = 0; i < m; ++i) {
        long double rebuilt = 0, largest = 0;
        for (std::int64_t l = 0; l < k; ++l) largest = std::fmax(largest, std::fabs((long double)a[i + l * m]));
        EXPECT_EQ(sa.exponent[i], formats::ceil_log2(double(largest)));
        for (std::int64_t l = 0; l < k; ++l) {
          const long double x = std::ldexp((long double)a[i + l * m], -sa.exponent[i]);
          rebuilt = 0;
          for (int p = 0; p + 1 < s; ++p) rebuilt += sa.high[p][i * k + l];
          const long double last = sa.remainder[s - 1][i * k + l];
          EXPECT_LE(std::fabs(x - rebuilt - last), std::ldexp(std::fabs(last), -24)) << "phi " << phi << " s " << s;
        }
        // The first high part lies on the grid 2^(beta - 24) = 2^-alpha (sigma = 2^beta after the
        // scaling, and fl32(x + sigma) in [sigma - 1, sigma + 1] has that ulp or twice it), within
        // |x| <= 1: an integer of at most alpha + 1 bits times 2^-alpha.
        for (std::int64_t l = 0; l < k; ++l) {
          const double h = sa.high[0][i * k + l];
          EXPECT_EQ(std::fmod(h, std::ldexp(1.0, beta - 24)), 0.0);
          EXPECT_LE(std::fabs(h), 1.0);
        }
      }
      for (const OzakiFp32Product& t : ozaki_fp32_products(s)) {
        if (!(t.a_high && t.b_high)) continue;
        const std::vector<float>& pa = sa.high[t.a_index - 1];
        const std::vector<float>& pb = sb.high[t.b_index - 1];
        for (std::int64_t j = 0; j < n; j += 7)
          for (std::int64_t i = 0; i < m; i += 5) {
            float single = 0;
            long double exact = 0;
            for (std::int64_t l = 0; l < k; ++l) {
              volatile float product = pa[i * k + l] * pb[j * k + l];  // rounded alone, as a GEMM's may be
              single = single + product;
              exact += (long double)pa[i * k + l] * pb[j * k + l];
            }
            ASSERT_EQ((long double)single, exact) << "A_" << t.a_index << " B_" << t.b_index << " s " << s;
          }
      }
    }
  }
}

TEST(OzakiFp32, ProductsCoverTheExpansion) {
  for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) {
    const std::vector<OzakiFp32Product> products = ozaki_fp32_products(s);
    EXPECT_EQ(products.size(), std::size_t(s * (s + 1) / 2));
    int high_pairs = 0;
    for (const OzakiFp32Product& t : products) {
      if (t.a_high && t.b_high) {
        EXPECT_LE(t.a_index + t.b_index, s);
        ++high_pairs;
      }
    }
    EXPECT_EQ(high_pairs, (s - 1) * s / 2);
  }
  EXPECT_THROW(ozaki_fp32_products(1), InvalidArgument);
  EXPECT_THROW(ozaki_fp32_products(7), InvalidArgument);
}

// Nanai & Fujimoto (2021) Table 2 at n = 256 on the host: the mean over seeds of the maximum relative error (eq.
// (21)) against MPFR falls with every added split for phi = 0.1 and 1, and from 2 to 6 splits for
// phi = 2 (where the paper's own table is not monotone at every size); 6 splits at phi = 0.1 come
// within 10x of DGEMM's error. The table is printed.
TEST(OzakiFp32, MaxRelativeErrorFallsWithTheNumberOfSplits) {
  const std::int64_t n = 256;
  const int seeds = 2;
  Context ctx = Context::host_only();
  const Backend& ozaki = find_backend("host-ozaki-fp32");
  const Backend& dgemm = find_backend("host-fp64");
  std::printf("Nanai & Fujimoto (2021) Table 2 at n = %lld (mean of %d seeds): max relative error\n  phi   ",
              (long long)n, seeds);
  for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) std::printf("   s = %d  ", s);
  std::printf("    FP64\n");
  for (const double phi : {0.1, 1.0, 2.0}) {
    std::vector<double> mean(kOzakiFp32MaxSplits + 1, 0.0);
    double mean_fp64 = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      const std::vector<double> a = phi_matrix(n, n, phi, 2 * seed), b = phi_matrix(n, n, phi, 2 * seed + 1);
      const std::vector<double> reference = mixsolve::testing::mpfr_gemm(n, n, n, a.data(), n, b.data(), n);
      std::vector<double> c(n * n);
      const Problem problem{n, n, n, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data(), n),
                            Operand::dense(Format::F64, Op::N, b.data(), n), Output{Format::F64, c.data(), n}};
      for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) {
        ozaki.run(ctx, problem, {{"splits", s}});
        mean[s] += mixsolve::testing::max_relative_error(n, n, c.data(), n, reference) / seeds;
      }
      dgemm.run(ctx, problem);
      mean_fp64 += mixsolve::testing::max_relative_error(n, n, c.data(), n, reference) / seeds;
    }
    std::printf("  %-4g", phi);
    for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) std::printf("  %9.2e", mean[s]);
    std::printf("  %9.2e\n", mean_fp64);
    if (phi < 1.5) {
      for (int s = kOzakiFp32MinSplits + 1; s <= kOzakiFp32MaxSplits; ++s)
        EXPECT_LT(mean[s], mean[s - 1]) << "phi " << phi << ": " << s << " splits no better than " << s - 1;
    } else {
      EXPECT_LT(mean[kOzakiFp32MaxSplits], mean[kOzakiFp32MinSplits]) << "phi " << phi;
    }
    if (phi == 0.1) EXPECT_LT(mean[kOzakiFp32MaxSplits], 10 * mean_fp64);
  }
}

// Any finite input: rows and columns far outside FP32's range, zero rows and columns, and
// subnormal entries are split after scaling by powers of two; NaN and Inf are refused by name; a k
// beyond eq. (5)'s reach is refused by can_implement.
TEST(OzakiFp32, WideExponentsZerosAndNonFiniteInputs) {
  const Backend& ozaki = find_backend("host-ozaki-fp32");
  mixsolve::testing::expect_any_finite_input_and_refusals(ozaki, {{"splits", 6}}, 1e-9, kOzakiFp32MaxK);
  Context ctx = Context::host_only();
  std::vector<double> x(4);
  const Problem p{2, 2, 2, 1.0, 0.0, Operand::dense(Format::F64, Op::N, x.data(), 2),
                  Operand::dense(Format::F64, Op::N, x.data(), 2), Output{Format::F64, x.data(), 2}};
  EXPECT_EQ(ozaki.can_implement(ctx, p, {{"splits", 7}}).status, Support::Status::InvalidArgument);
}

}  // namespace
