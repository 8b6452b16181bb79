// SPDX-License-Identifier: BSD-3-Clause
// Formats: host conversions against independent references, split properties, and the
// expected retained mantissa length of Ootomo & Yokota (2021) Table 1 / §3.1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mixsolve/formats/split.hpp"

namespace {

using namespace mixsolve::formats;

std::vector<float> edge_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65519.996f, 65520.0f, -65520.0f, 1e6f,
                          -1e30f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                          0x1p-14f, 0x1p-15f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f, 0x1.8p-25f, 0x1p-26f,
                          0x1.ffep-15f, 0x1.fffp-15f, 0x1.001p0f, 0x1.003p0f, 0x1.002p0f, 0x1.0018p0f,
                          0x1.fffffep127f, 0x1.ffffep127f, 0x1.ffefp127f, inf, -inf,
                          std::numeric_limits<float>::quiet_NaN(), 3.14159265f, -2.71828182f};
  return v;
}

bool same_or_both_nan16(std::uint16_t a, std::uint16_t b) {
  const bool na = (a & 0x7C00) == 0x7C00 && (a & 0x3FF), nb = (b & 0x7C00) == 0x7C00 && (b & 0x3FF);
  return na || nb ? (na && nb) : a == b;
}

// GCC's _Float16 conversion (libgcc's IEEE round-to-nearest-even) is an independent reference.
std::uint16_t reference_half_bits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

TEST(Formats, HostHalfConversionMatchesIeeeReferenceOnEdgeValues) {
  for (float f : edge_values()) {
    SCOPED_TRACE(f);
    EXPECT_TRUE(same_or_both_nan16(float_to_half_bits_rn_host(f), reference_half_bits(f)));
  }
}

TEST(Formats, HostHalfConversionMatchesIeeeReferenceOnStridedAllFloats) {
  // Every 97th bit pattern: ~44 million values covering all exponents, both signs.
  std::uint64_t mismatches = 0;
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 97) {
    const float f = bits_float(static_cast<std::uint32_t>(u));
    if (!same_or_both_nan16(float_to_half_bits_rn_host(f), reference_half_bits(f))) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(Formats, HalfToFloatIsExactInverseOnAllHalfValues) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint16_t bits = static_cast<std::uint16_t>(h);
    const float f = half_bits_to_float_host(bits);
    std::uint16_t ref_bits = bits;
    _Float16 ref;
    std::memcpy(&ref, &ref_bits, sizeof ref);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(ref)));
      continue;
    }
    ASSERT_EQ(f, static_cast<float>(ref)) << "half bits " << h;
    ASSERT_EQ(float_to_half_bits_rn_host(f), bits) << "round trip of half bits " << h;
  }
}

// Independent TF32 reference: round |f| to 11 significant bits, ties away from zero, with
// frexp/ldexp in double (subnormal floats keep their absolute quantum of 2^-149 * 2^13).
float reference_tf32(float f) {
  if (!std::isfinite(f) || f == 0) return f;
  const double a = std::fabs(double(f));
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int quantum_exponent = std::max(e - 11, -149 + 13);  // 10 stored bits; subnormal floats keep the same grid
  const double q = std::ldexp(1.0, quantum_exponent);
  const double r = std::floor(a / q + 0.5) * q;  // ties away from zero (a > 0)
  const double out = r > double(std::numeric_limits<float>::max()) ? INFINITY : r;
  return static_cast<float>(f < 0 ? -out : out);
}

TEST(Formats, HostTf32ConversionMatchesIndependentReference) {
  std::mt19937 gen(20261122);
  std::vector<float> values = edge_values();
  for (int i = 0; i < 200000; ++i) values.push_back(bits_float(gen()));
  for (float f : values) {
    const float got = bits_float(float_to_tf32_bits_rna_host(f));
    if (std::isnan(f)) {  // the instruction truncates NaN bit patterns (conversions.hpp)
      EXPECT_EQ(float_bits(got), float_bits(f) & 0xFFFFE000u);
      EXPECT_TRUE(std::isnan(bits_float(split_tf32tf32(f).hi))) << "the split keeps NaN";
      continue;
    }
    ASSERT_EQ(float_bits(got), float_bits(reference_tf32(f))) << "input " << f;
    ASSERT_EQ(float_bits(got) & 0x1FFFu, 0u) << "TF32 values keep the low 13 bits zero";
  }
}

TEST(Formats, HostBf16ConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits_rn_host(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits_rn_host(bits_float(0x3F808000u)), 0x3F80) << "tie to even (down)";
  EXPECT_EQ(float_to_bf16_bits_rn_host(bits_float(0x3F818000u)), 0x3F82) << "tie to even (up)";
  EXPECT_EQ(float_to_bf16_bits_rn_host(bits_float(0x3F808001u)), 0x3F81) << "above the tie";
  EXPECT_EQ(float_to_bf16_bits_rn_host(std::numeric_limits<float>::max()), 0x7F80) << "rounds to Inf";
  EXPECT_TRUE(std::isnan(to_bf16_rn_host(std::numeric_limits<float>::quiet_NaN())));
  std::mt19937 gen(3);
  for (int i = 0; i < 100000; ++i) {  // against rounding in double: nearest of the two neighbours
    const float f = bits_float(gen() & 0x7F7FFFFFu);
    if ((float_bits(f) >> 23) == 0xFE) continue;  // top binade: rounding into overflow, checked above
    const float r = to_bf16_rn_host(f);
    const float down = bits_float(float_bits(f) & 0xFFFF0000u), up = bits_float((float_bits(f) & 0xFFFF0000u) + 0x10000u);
    const double dd = double(f) - double(down), du = double(up) - double(f);
    ASSERT_EQ(r, dd < du ? down : du < dd ? up : ((float_bits(down) >> 16) & 1 ? up : down)) << f;
  }
}

TEST(Formats, HalfhalfSplitErrorIsOneUlpWhileTheScaledResidualIsNormal) {
  // The residual's leading bit sits at most 12 bits below v's (Ootomo & Yokota 2021, §3.3, Fig. 5); scaled by
  // 2^11 it is a normal FP16 number whenever |v| >= 2^-1, and then at most the last bit is lost
  // (Table 1). Below that the residual may be subnormal: the error is at most half its quantum.
  std::mt19937 gen(7);
  for (int i = 0; i < 200000; ++i) {
    const int e = int(gen() % 30) - 15;  // exp_rand(-15, 15)
    const float v = std::ldexp(1.0f + float(gen() & 0x7FFFFF) * 0x1p-23f, e) * (gen() & 1 ? 1.0f : -1.0f);
    const double error = std::fabs(join_halfhalf(split_halfhalf(v)) - double(v));
    if (e >= -1) ASSERT_LE(error, std::ldexp(std::fabs(double(v)), -23)) << v;
    else ASSERT_LE(error, std::fmax(std::ldexp(std::fabs(double(v)), -23), 0x1p-25 * 0x1p-11)) << v;
  }
}

TEST(Formats, MarkidisResidualUnderflowsWhereHalfhalfDoesNot) {
  // Ootomo & Yokota (2021) §3.3: around |v| ~ 2^-10 the unscaled residual (~2^-21) is an FP16 subnormal and loses
  // bits, while the 2^11-scaled one stays normal.
  const float v = 0x1.234568p-10f;
  const HalfSplit markidis = split_markidis(v), halfhalf = split_halfhalf(v);
  EXPECT_EQ(markidis.hi, halfhalf.hi);
  EXPECT_EQ(half_bits_to_float_host(markidis.lo) != 0 && (markidis.lo & 0x7C00) == 0, true)
      << "Markidis residual is subnormal";
  EXPECT_NE(halfhalf.lo & 0x7C00, 0) << "halfhalf residual is normal";
  EXPECT_LT(std::fabs(join_halfhalf(halfhalf) - v), std::fabs(join_markidis(markidis) - v));
}

TEST(Formats, SplitsOfNonFiniteOrOverflowingValuesCarryTheSpecialValueInHi) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, 1e6f, -65520.0f}) {
    const HalfSplit s = split_halfhalf(v);
    EXPECT_EQ(s.hi & 0x7FFF, 0x7C00) << v;
    EXPECT_EQ(s.lo, 0) << v;
  }
  const HalfSplit n = split_halfhalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(half_bits_to_float_host(n.hi)));
  EXPECT_EQ(n.lo, 0);
  const Tf32Split t = split_tf32tf32(-inf);
  EXPECT_EQ(bits_float(t.hi), -inf);
  EXPECT_EQ(t.lo, 0u);
  const Tf32Split big = split_tf32tf32(std::numeric_limits<float>::max());
  EXPECT_TRUE(std::isinf(bits_float(big.hi))) << "RNA of FLT_MAX to TF32 overflows, as cvt.rna does";
}

// Ootomo & Yokota (2021) §3.1 / Table 1: with uniformly random mantissa bits (assumption 1), v16 + dv16 retains
// 22.75 of the 23 mantissa bits on average (len 22 with probability 1/4, else 23). The same holds
// for RNA (tf32tf32). Tolerance: 5 standard errors of the mean of N Bernoulli(1/4) draws.
template <class SplitAndJoin>
void expect_mean_retained_bits(SplitAndJoin split_and_join, int exponent) {
  constexpr int kSamples = 1 << 20;
  std::mt19937 gen(12345 + exponent);
  double sum = 0;
  int below_22 = 0;
  for (int i = 0; i < kSamples; ++i) {
    const std::uint32_t mantissa = gen() & 0x7FFFFFu;
    const float v = bits_float(((127u + exponent) << 23) | mantissa);
    const int bits = retained_mantissa_bits(v, split_and_join(v));
    sum += bits;
    below_22 += bits < 22;
  }
  const double mean = sum / kSamples;
  const double standard_error = std::sqrt(0.25 * 0.75 / kSamples);
  EXPECT_NEAR(mean, 22.75, 5 * standard_error);
  EXPECT_EQ(below_22, 0) << "Table 1 has no case losing more than one bit";
}

TEST(Formats, HalfhalfRetainsTwentyTwoPointSevenFiveBitsOnAverage) {
  for (int e : {-10, 0, 7})
    expect_mean_retained_bits([](float v) { return join_halfhalf(split_halfhalf(v)); }, e);
}

TEST(Formats, Tf32tf32RetainsTwentyTwoPointSevenFiveBitsOnAverage) {
  for (int e : {-100, 0, 100})
    expect_mean_retained_bits([](float v) { return join_tf32tf32(split_tf32tf32(v)); }, e);
}

TEST(Formats, MarkidisSplitRetainsTheSameBitsWhileItsResidualIsNormal) {
  // §3.1's 22.75 concerns the split itself; Markidis only differs once the residual underflows.
  expect_mean_retained_bits([](float v) { return join_markidis(split_markidis(v)); }, 8);
}

}  // namespace
