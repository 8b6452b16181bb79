// SPDX-License-Identifier: BSD-3-Clause
// The host tensor-core model (seed 000 §3.2): its rounding semantics, and the accuracy effects
// the seed reports (Fig. 3: RZ accumulation is what degrades the correction; Fig. 8: halfhalf's
// exponent range).
#include <gtest/gtest.h>

#include <cmath>

#include "gemm_test_support.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/gemm/tc_model.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve::testing::HostMatrix;

TEST(TcModel, MmaStepRoundsTheDotProductTowardZero) {
  const float a[2] = {1.0f, 0x1p-30f}, b[2] = {1.0f, 1.0f};
  EXPECT_EQ(mma_step(a, b, 2, 0.0f, TcRounding::RN), 1.0f);
  const float na[2] = {-1.0f, -0x1p-30f};
  EXPECT_EQ(mma_step(na, b, 2, 0.0f, TcRounding::RN), -1.0f);
}

TEST(TcModel, MmaStepAddsTheAccumulatorWithTheChosenRounding) {
  // 1 + (2^-24 + 2^-26): above half an ulp of 1, so RN rounds up and RZ truncates.
  const float a[2] = {0x1p-24f, 0x1p-26f}, b[2] = {1.0f, 1.0f};
  EXPECT_EQ(mma_step(a, b, 2, 1.0f, TcRounding::RN), 1.0f + 0x1p-23f);
  EXPECT_EQ(mma_step(a, b, 2, 1.0f, TcRounding::RZ), 1.0f);
}

struct ModelRun {
  double relative_error;
};

// C = op(A) op(B) by backend `name` on m x n x k inputs drawn from spec_a / spec_b; returns the
// relative error (seed 000 eq. 6) against the FP64 product of the same FP32 inputs.
double relative_error_of(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k,
                         const RandomSpec& spec_a, const RandomSpec& spec_b) {
  HostMatrix<float> a(m, k, m), b(k, n, k), c(m, n, m), c0(m, n, m);
  fill_random(a.view(), spec_a);
  fill_random(b.view(), spec_b);
  Context ctx = Context::host_only();
  GemmArgs<float> args;
  args.m = m; args.n = n; args.k = k;
  args.a = a.data.data(); args.lda = a.ld;
  args.b = b.data.data(); args.ldb = b.ld;
  args.c = c.data.data(); args.ldc = c.ld;
  find_backend(name).run(ctx, args);
  const auto ref = mixsolve::testing::reference_gemm(Op::N, Op::N, m, n, k, 1.0, a, b, 0.0, c0);
  std::vector<double> ref_data(ref.value.data(), ref.value.data() + m * n);
  return compare_to_reference(MatrixView<const float>(c.view()), host_view<const double>(ref_data.data(), m, n, m))
      .relative_error;
}

TEST(TcModel, RoundTowardZeroAccumulationIsWhatDegradesTheCorrection) {
  // seed 000 Fig. 3: with mma_rz the corrected product is as bad as Markidis's; with mma_rn it is
  // as good as FP32 SIMT. Positive inputs make RZ's bias accumulate over k.
  const auto spec_a = RandomSpec::uniform(0, 1, 11), spec_b = RandomSpec::uniform(0, 1, 12);
  const std::int64_t k = 4096;
  const double rz = relative_error_of("model-halfhalf-rz", 8, 8, k, spec_a, spec_b);
  const double rn = relative_error_of("model-halfhalf-rn", 8, 8, k, spec_a, spec_b);
  const double fp32 = relative_error_of("host-fp32", 8, 8, k, spec_a, spec_b);
  const double markidis = relative_error_of("model-markidis-rz", 8, 8, k, spec_a, spec_b);
  EXPECT_GT(rz, rn);
  EXPECT_GT(markidis, rn);
  // RN accumulation: k/16 FP32 additions (u = 2^-24) plus the split's 2^-23 per operand.
  EXPECT_LE(rn, mixsolve::testing::inner_product_bound(k / 16, 0x1p-23, 0x1p-24));
  std::printf("k=%lld relative error: model-halfhalf-rz %.3g, model-halfhalf-rn %.3g, model-markidis-rz %.3g, host-fp32 %.3g\n",
              static_cast<long long>(k), rz, rn, markidis, fp32);
}

TEST(TcModel, UncorrectedFp16IsLimitedByInputRounding) {
  const auto spec_a = RandomSpec::uniform(-1, 1, 21), spec_b = RandomSpec::uniform(-1, 1, 22);
  const double fp16 = relative_error_of("model-fp16-rz", 16, 16, 256, spec_a, spec_b);
  const double halfhalf = relative_error_of("model-halfhalf-rn", 16, 16, 256, spec_a, spec_b);
  EXPECT_GT(fp16, 0x1p-16) << "FP16 inputs carry ~2^-12 relative error each";
  EXPECT_LT(halfhalf, fp16 * 0x1p-8) << "the correction recovers at least 8 more bits";
}

TEST(TcModel, HalfhalfLosesAccuracyBelowFp16RangeWhileTf32tf32DoesNot) {
  // seed 000 Fig. 8 (middle): A in exp_rand(-35,-15) underflows FP16 in part; TF32 keeps FP32's
  // exponent range.
  const auto spec_a = RandomSpec::exp_rand(-35, -15, 31), spec_b = RandomSpec::exp_rand(-15, 15, 32);
  const std::int64_t k = 512;
  const double halfhalf = relative_error_of("model-halfhalf-rn", 8, 8, k, spec_a, spec_b);
  const double tf32tf32 = relative_error_of("model-tf32tf32-rn", 8, 8, k, spec_a, spec_b);
  EXPECT_LE(tf32tf32, mixsolve::testing::inner_product_bound(k / 8, 0x1p-23, 0x1p-24));
  EXPECT_GT(halfhalf, tf32tf32);
}

// C = A B (m x k times k x n, both packed) by host backend `name`.
std::vector<float> host_product(const std::string& name, const HostMatrix<float>& a, const HostMatrix<float>& b) {
  std::vector<float> c(a.rows * b.cols, 0.0f);
  Context ctx = Context::host_only();
  GemmArgs<float> args{Op::N, Op::N, a.rows, b.cols, a.cols, 1.0f, a.data.data(), a.ld, b.data.data(), b.ld, 0.0f,
                       c.data(), a.rows};
  find_backend(name).run(ctx, args);
  return c;
}

TEST(TcModel, Fp16x3IsAccurateWhateverTheOperandsMagnitudes) {
  // An LU's trailing Schur complements shrink towards the smallest singular values, so its U12
  // blocks get small. Unscaled (model-markidis-rz), lo is subnormal in FP16 below 2^-3 and hi
  // below 2^-14; fp16x3 scales each operand by a power of two first (formats::fp16x3_operand_shift).
  const std::int64_t k = 256;
  const double bound = mixsolve::testing::inner_product_bound(k, 0x1p-22, 0x1p-23);
  const RandomSpec magnitudes[] = {RandomSpec::uniform(-1, 1, 51), RandomSpec::uniform(-0x1p-12, 0x1p-12, 52),
                                   RandomSpec::uniform(-0x1p-30, 0x1p-30, 53), RandomSpec::uniform(-0x1p40, 0x1p40, 54),
                                   RandomSpec::exp_rand(-20, 0, 55)};
  for (const RandomSpec& sa : magnitudes)
    for (const RandomSpec& sb : {RandomSpec::uniform(-1, 1, 61), RandomSpec::uniform(-0x1p-20, 0x1p-20, 62)})
      EXPECT_LE(relative_error_of("model-fp16x3-rz", 8, 8, k, sa, sb), bound) << sa.name() << " x " << sb.name();
  // What the scaling fixes: the unscaled split of values below 2^-12.
  const auto unit = RandomSpec::uniform(-1, 1, 61), small = RandomSpec::uniform(-0x1p-12, 0x1p-12, 52);
  const double scaled = relative_error_of("model-fp16x3-rz", 8, 8, k, unit, small);
  const double unscaled = relative_error_of("model-markidis-rz", 8, 8, k, unit, small);
  std::printf("k=%lld, B in (-2^-12, 2^-12): relative error fp16x3 %.3g, unscaled Markidis %.3g\n",
              static_cast<long long>(k), scaled, unscaled);
  EXPECT_GT(unscaled, 64 * scaled);
}

TEST(TcModel, Fp16x3ScalingIsExact) {
  // Scaling an operand by a power of two scales the product by it, bit for bit: the operand's own
  // power of two absorbs it.
  const std::int64_t m = 9, n = 7, k = 100;
  HostMatrix<float> a(m, k, m), b(k, n, k);
  fill_random(a.view(), RandomSpec::uniform(-1, 1, 71));
  fill_random(b.view(), RandomSpec::uniform(-1, 1, 72));
  const std::vector<float> c = host_product("model-fp16x3-rz", a, b);
  for (float& v : a.data) v *= 0x1p-37f;
  const std::vector<float> scaled = host_product("model-fp16x3-rz", a, b);
  for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(scaled[i], c[i] * 0x1p-37f) << "entry " << i;
}

}  // namespace
