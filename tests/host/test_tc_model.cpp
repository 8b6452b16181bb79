// SPDX-License-Identifier: BSD-3-Clause
// The host tensor-core model (Ootomo & Yokota 2021, §3.2): its rounding semantics, and the accuracy effects
// the paper reports (Fig. 3: RZ accumulation is what degrades the correction; Fig. 8: halfhalf's
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

// C = A B by backend `name` on m x k times k x n inputs drawn from spec_a / spec_b, and the
// reference product of the same FP32 inputs (testing::ordered_reference_product).
struct ModelRun {
  std::vector<float> c;
  std::vector<double> reference;
  std::int64_t m = 0, n = 0;
  // Ootomo & Yokota (2021) eq. 6: ||C - C_ref||_F / ||C_ref||_F.
  double relative_error() const {
    return compare_to_reference(host_view<const float>(c.data(), m, n, m),
                                host_view<const double>(reference.data(), m, n, m))
        .relative_error;
  }
  // Entries of C below / above the reference.
  int below() const {
    return count([](double d) { return d < 0; });
  }
  int above() const {
    return count([](double d) { return d > 0; });
  }
  template <class Predicate>
  int count(Predicate p) const {
    int t = 0;
    for (std::size_t i = 0; i < c.size(); ++i) t += p(double(c[i]) - reference[i]);
    return t;
  }
};

ModelRun run_model(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, const RandomSpec& spec_a,
                   const RandomSpec& spec_b) {
  HostMatrix<float> a(m, k, m), b(k, n, k), c(m, n, m);
  fill_random(a.view(), spec_a);
  fill_random(b.view(), spec_b);
  Context ctx = Context::host_only();
  GemmArgs<float> args;
  args.m = m; args.n = n; args.k = k;
  args.a = a.data.data(); args.lda = a.ld;
  args.b = b.data.data(); args.ldb = b.ld;
  args.c = c.data.data(); args.ldc = c.ld;
  find_backend(name).run(ctx, args);
  return ModelRun{c.data, mixsolve::testing::ordered_reference_product(a, b), m, n};
}

double relative_error_of(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k,
                         const RandomSpec& spec_a, const RandomSpec& spec_b) {
  return run_model(name, m, n, k, spec_a, spec_b).relative_error();
}

// Ootomo & Yokota (2021) Fig. 3: with mma_rz accumulation the corrected product (halfhalf) is degraded like
// Markidis's; with mma_rn it is as accurate as the FP32 product of the same inputs is expected to
// be. Positive inputs make RZ's bias accumulate over the k / 16 accumulator additions (one per
// 16-term step). Bounds, with T = k / 16 and the operands' split 2^-23 each:
//  - worst case (testing::inner_product_bound): T additions with unit roundoff 2^-24 (RN) or
//    2^-23 (RZ);
//  - RZ's bias: with positive terms every truncation lowers the partial sum, so every entry lies
//    below the exact product; the mean loss is half an ulp of a partial sum that grows linearly,
//    about T 2^-23 / 5 relative to the result to first order: at least T 2^-23 / 16 (measured
//    0.17 T 2^-23);
//  - RN's accumulation is unbiased up to the steps' own truncation (at most 2^-23 of each step's
//    sum, 2^-23 of the result): errors of both signs, and the probabilistic bound
//    4 sqrt(T) 2^-24 (Higham and Mary, "A new approach to probabilistic rounding error analysis",
//    2019, lambda = 4) plus those 2^-23 and the split's 2 * 2^-23;
//  - the FP32 product (host-fp32: Eigen's SGEMM, whose summation order follows the CPU's caches)
//    within the same probabilistic bound for k additions, 4 sqrt(k) 2^-24.
TEST(TcModel, RoundTowardZeroAccumulationIsWhatDegradesTheCorrection) {
  const auto spec_a = RandomSpec::uniform(0, 1, 11), spec_b = RandomSpec::uniform(0, 1, 12);
  const std::int64_t k = 4096;
  const double steps = double(k / 16);
  const ModelRun rz = run_model("model-halfhalf-rz", 8, 8, k, spec_a, spec_b);
  const ModelRun rn = run_model("model-halfhalf-rn", 8, 8, k, spec_a, spec_b);
  const ModelRun fp32 = run_model("host-fp32", 8, 8, k, spec_a, spec_b);
  const ModelRun markidis = run_model("model-markidis-rz", 8, 8, k, spec_a, spec_b);
  std::printf(
      "k=%lld relative error: model-halfhalf-rz %.3g, model-halfhalf-rn %.3g (entries below / above: %d / %d), "
      "model-markidis-rz %.3g, host-fp32 %.3g\n",
      static_cast<long long>(k), rz.relative_error(), rn.relative_error(), rn.below(), rn.above(),
      markidis.relative_error(), fp32.relative_error());
  const double rz_bias = steps * 0x1p-23 / 16;
  for (const ModelRun* run : {&rz, &markidis}) {
    SCOPED_TRACE(run == &rz ? "model-halfhalf-rz" : "model-markidis-rz");
    EXPECT_EQ(run->below(), 64) << "RZ's truncations all lower a positive sum";
    EXPECT_GE(run->relative_error(), rz_bias);
  }
  EXPECT_LE(rz.relative_error(), mixsolve::testing::inner_product_bound(k / 16, 0x1p-23, 0x1p-23));
  EXPECT_LE(rn.relative_error(), mixsolve::testing::inner_product_bound(k / 16, 0x1p-23, 0x1p-24));
  EXPECT_GT(rn.below(), 0);
  EXPECT_GT(rn.above(), 0) << "RN's errors take both signs";
  EXPECT_LE(rn.relative_error(), 4 * std::sqrt(steps) * 0x1p-24 + 3 * 0x1p-23);
  EXPECT_LE(fp32.relative_error(), 4 * std::sqrt(double(k)) * 0x1p-24);
  // The degradation is RZ's: the same corrected split with RN accumulation stays below RZ's bias.
  EXPECT_LT(rn.relative_error(), rz_bias);
}

TEST(TcModel, UncorrectedFp16IsLimitedByInputRounding) {
  const auto spec_a = RandomSpec::uniform(-1, 1, 21), spec_b = RandomSpec::uniform(-1, 1, 22);
  const double fp16 = relative_error_of("model-fp16-rz", 16, 16, 256, spec_a, spec_b);
  const double halfhalf = relative_error_of("model-halfhalf-rn", 16, 16, 256, spec_a, spec_b);
  EXPECT_GT(fp16, 0x1p-16) << "FP16 inputs carry ~2^-12 relative error each";
  EXPECT_LT(halfhalf, fp16 * 0x1p-8) << "the correction recovers at least 8 more bits";
}

TEST(TcModel, HalfhalfLosesAccuracyBelowFp16RangeWhileTf32tf32DoesNot) {
  // Ootomo & Yokota (2021) Fig. 8 (middle): A in exp_rand(-35,-15) underflows FP16 in part; TF32 keeps FP32's
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
