// SPDX-License-Identifier: BSD-3-Clause
// Reproducible random test matrices, identical on host and device: element (i, j) of a rows x cols
// matrix is a pure function of (seed, i + j * rows), so a matrix generated on the GPU equals the
// one generated on the host for the same seed, whatever the leading dimensions.
//
// Input classes follow seed 000 §4.1: uniform(lo, hi) and exp_rand(a, b) -- exponent uniform over
// the integers a..b-1, 23 uniformly random mantissa bits, positive sign (the paper gives none).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

enum class Distribution { Uniform, ExpRand };

struct RandomSpec {
  Distribution distribution = Distribution::Uniform;
  double lo = -1.0;  // uniform: lower bound; exp_rand: smallest binary exponent
  double hi = 1.0;   // uniform: upper bound; exp_rand: one past the largest exponent
  std::uint64_t seed = 1;

  static RandomSpec uniform(double lo, double hi, std::uint64_t seed) {
    return {Distribution::Uniform, lo, hi, seed};
  }
  static RandomSpec exp_rand(int a, int b, std::uint64_t seed) {
    return {Distribution::ExpRand, double(a), double(b), seed};
  }
  std::string name() const;  // "uniform(-1,1)" or "exp_rand(-15,15)"
};

// SplitMix64 finaliser: a counter-based generator, so any element can be drawn independently.
MIXSOLVE_HD inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

MIXSOLVE_HD inline std::uint64_t random_bits(std::uint64_t seed, std::uint64_t index) {
  return mix64(mix64(seed) ^ (index * 0xD2B74407B1CE6E93ull));
}

// Element `index` of a float matrix drawn from `spec`.
MIXSOLVE_HD inline float random_float(const RandomSpec& spec, std::uint64_t index) {
  const std::uint64_t bits = random_bits(spec.seed, index);
  if (spec.distribution == Distribution::Uniform) {
    const double u = double(bits >> 40) * 0x1p-24;  // 24 bits: exact in float
    return static_cast<float>(spec.lo + (spec.hi - spec.lo) * u);
  }
  const int a = static_cast<int>(spec.lo), b = static_cast<int>(spec.hi);
  const int exponent = a + static_cast<int>((bits >> 32) % static_cast<std::uint64_t>(b - a));
  const float mantissa = 1.0f + float(bits & 0x7FFFFFu) * 0x1p-23f;  // 1.m, 23 random bits
  return ldexpf(mantissa, exponent);
}

// Element `index` of a double matrix drawn from `spec` (53 random bits for uniform).
MIXSOLVE_HD inline double random_double(const RandomSpec& spec, std::uint64_t index) {
  const std::uint64_t bits = random_bits(spec.seed, index);
  if (spec.distribution == Distribution::Uniform) {
    const double u = double(bits >> 11) * 0x1p-53;
    return spec.lo + (spec.hi - spec.lo) * u;
  }
  const int a = static_cast<int>(spec.lo), b = static_cast<int>(spec.hi);
  const int exponent = a + static_cast<int>((bits >> 52) % static_cast<std::uint64_t>(b - a));
  const double mantissa = 1.0 + double(bits & ((1ull << 52) - 1)) * 0x1p-52;
  return ldexp(mantissa, exponent);
}

// Fills `m` (host or device, by m.memory) from `spec`. Device fills are ordered on `stream`.
void fill_random(const MatrixView<float>& m, const RandomSpec& spec, CUstream_st* stream = nullptr);
void fill_random(const MatrixView<double>& m, const RandomSpec& spec, CUstream_st* stream = nullptr);

// Fills a device or host matrix with a constant (used to poison outputs before a test run).
void fill_constant(const MatrixView<float>& m, float value, CUstream_st* stream = nullptr);
void fill_constant(const MatrixView<double>& m, double value, CUstream_st* stream = nullptr);

}  // namespace mixsolve
