// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme with BF16 / FP16 slices on the host (gemm/ozaki_slices.hpp, Niimi 2025): rho as
// the article defines it, FP64-level results with every slice pair, the accuracy/work trade of fast
// mode d (Niimi's (2025) d table at n = 256), and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "mixsolve/gemm/ozaki_slices.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "ozaki_test_support.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve::testing::phi_matrix;

TEST(OzakiSlices, RhoFollowsNiimi) {
  EXPECT_EQ(ozaki_slices_rho(8, 128), 45);  // BF16: ceil(53 - 17 / 2) = 45 = 53 - 8
  EXPECT_EQ(ozaki_slice_bits(8, 128), 8);
  EXPECT_EQ(ozaki_slice_bits(8, 256), 8);   // 2 8 + 8 = 24
  EXPECT_EQ(ozaki_slice_bits(8, 16384), 5); // 2 5 + 14 = 24
  EXPECT_EQ(ozaki_slice_bits(11, 1), 11);   // FP16 at k = 1: the format's own 11 bits
  EXPECT_EQ(ozaki_slice_bits(11, 256), 8);  // beyond k = 4, FP32's 24 bits bind, not FP16's 11
  EXPECT_THROW(ozaki_slice_bits(8, std::int64_t{1} << 23), InvalidArgument);
}

// With every pair of slices the result is at FP64's level (within 4x of FP64 GEMM's maximum
// relative error against MPFR); fast mode trades pairs for accuracy, and the error falls as d
// admits more pairs until it reaches the rounding of the FP64 sum (below 1e-12 here), where more
// pairs change only the last bits. The table is printed. At k = 256 an FP16 slice keeps the same
// 8 bits as a BF16 one (FP32's 24 bits bind, Niimi 2025), so host-ozaki-fp16 gives the same bits.
TEST(OzakiSlices, FastModeTradesSlicePairsForAccuracy) {
  const std::int64_t n = 256;
  Context ctx = Context::host_only();
  const Backend& dgemm = find_backend("host-fp64");
  const Backend& ozaki = find_backend("host-ozaki-bf16");
  for (const double phi : {0.1, 1.0}) {
    const std::vector<double> a = phi_matrix(n, n, phi, 31), b = phi_matrix(n, n, phi, 32);
    const std::vector<double> reference = mixsolve::testing::mpfr_gemm(n, n, n, a.data(), n, b.data(), n);
    std::vector<double> c(n * n), c16(n * n);
    const auto problem = [&](double* out) {
      return Problem{n, n, n, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data(), n),
                     Operand::dense(Format::F64, Op::N, b.data(), n), Output{Format::F64, out, n}};
    };
    dgemm.run(ctx, problem(c.data()));
    const double fp64 = mixsolve::testing::max_relative_error(n, n, c.data(), n, reference);
    std::printf("host-ozaki-bf16, n = %lld, phi %g (8 slices of 8 bits; FP64 %.2e): d, pairs, max relative error\n",
                (long long)n, phi, fp64);
    double previous = 1e300;
    for (const int d : {4, 5, 6, 7, 8, 9, 0}) {
      ozaki.run(ctx, problem(c.data()), {{"d", d}});
      const double error = mixsolve::testing::max_relative_error(n, n, c.data(), n, reference);
      int pairs = 0;
      for (int p = 0; p < 8; ++p)
        for (int q = 0; q < 8; ++q) pairs += d == 0 || p + q < d;
      std::printf("  d = %d  %2d pairs  %.2e\n", d, pairs, error);
      EXPECT_LE(error, std::max(previous, 1e-12)) << "phi " << phi << " d " << d;
      previous = error;
    }
    EXPECT_LE(previous, 4 * fp64) << "phi " << phi << ": every pair";
    find_backend("host-ozaki-fp16").run(ctx, problem(c16.data()));
    EXPECT_EQ(c16, c) << "phi " << phi;
  }
}

TEST(OzakiSlices, WideExponentsZerosAndNonFiniteInputs) {
  for (const char* name : {"host-ozaki-bf16", "host-ozaki-fp16"})
    for (const std::int64_t fused : {0, 1})
      mixsolve::testing::expect_any_finite_input_and_refusals(find_backend(name), {{"fused", fused}}, 1e-12,
                                                              std::int64_t{1} << 22);
}

// Vectors near the top and the bottom of FP64's range: each vector is scaled by a power of two
// before it is sliced, so sigma = 0.75 2^(rho + c) stays finite (it would overflow from |x| ~
// 2^978) and the grids of tiny vectors stay normal; the products are as accurate as elsewhere.
TEST(OzakiSlices, HugeAndTinyVectorsKeepTheirBits) {
  using namespace mixsolve::testing;
  Context ctx = Context::host_only();
  const std::int64_t m = 6, n = 5, k = 64;
  std::vector<double> a = phi_matrix(m, k, 0.5, 51), b = phi_matrix(k, n, 0.5, 52);
  for (std::int64_t l = 0; l < k; ++l) {
    a[0 + l * m] *= 0x1p+1000;  // a row near the top of the range
    a[1 + l * m] *= 0x1p-1000;  // and one of normal values near its bottom
    b[l + 0 * k] *= 0x1p-1010;
  }
  const std::vector<double> reference = mpfr_gemm(m, n, k, a.data(), m, b.data(), k);
  for (const char* name : {"host-ozaki-bf16", "host-ozaki-fp16"})
    for (const std::int64_t fused : {0, 1}) {
      std::vector<double> c(m * n);
      const Problem problem{m, n, k, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data(), m),
                            Operand::dense(Format::F64, Op::N, b.data(), k), Output{Format::F64, c.data(), m}};
      find_backend(name).run(ctx, problem, {{"fused", fused}});
      for (double v : c) EXPECT_TRUE(std::isfinite(v)) << name;
      EXPECT_LT(max_relative_error(m, n, c.data(), m, reference), 1e-12) << name << " fused " << fused;
    }
}

// The fused split (every slice's exponent from the vector's largest |value|, as the device
// backends split) keeps fast mode's trade: at each d its error stays within 4x of the split with
// each slice's own exponent (n = 256, phi 0.1 and 1, MPFR).
TEST(OzakiSlices, FusedSplitKeepsTheAccuracy) {
  const std::int64_t n = 256;
  Context ctx = Context::host_only();
  const Backend& ozaki = find_backend("host-ozaki-bf16");
  for (const double phi : {0.1, 1.0}) {
    const std::vector<double> a = phi_matrix(n, n, phi, 41), b = phi_matrix(n, n, phi, 42);
    const std::vector<double> reference = mixsolve::testing::mpfr_gemm(n, n, n, a.data(), n, b.data(), n);
    std::vector<double> c(n * n);
    const Problem problem{n, n, n, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data(), n),
                          Operand::dense(Format::F64, Op::N, b.data(), n), Output{Format::F64, c.data(), n}};
    for (const int d : {5, 7}) {
      ozaki.run(ctx, problem, {{"d", d}});
      const double own = mixsolve::testing::max_relative_error(n, n, c.data(), n, reference);
      ozaki.run(ctx, problem, {{"d", d}, {"fused", 1}});
      const double fused = mixsolve::testing::max_relative_error(n, n, c.data(), n, reference);
      std::printf("phi %g, d = %d: max relative error %.2e (each slice's exponent), %.2e (fused)\n", phi, d, own,
                  fused);
      EXPECT_LE(fused, 4 * std::max(own, 1e-15)) << "phi " << phi << " d " << d;
    }
  }
}

}  // namespace
