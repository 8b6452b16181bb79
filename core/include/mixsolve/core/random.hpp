// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Reproducible random test matrices: element (i, j) of a rows x cols matrix is a pure function of
/// (seed, i + j * rows), so a matrix generated on the GPU equals the one generated on the host for
/// the same seed, whatever the leading dimensions (phi matrices up to their last bits: random_phi).
///
/// Input classes follow Ootomo & Yokota (2021) §4.1: uniform(lo, hi) and exp_rand(a, b) -- exponent uniform over
/// the integers a..b-1, 23 uniformly random mantissa bits, positive sign (the paper gives none) --
/// and Nanai & Fujimoto (2021) §5.1: phi(phi) = (u - 1/2) exp(phi rn), u uniform in [0, 1), rn standard normal,
/// whose magnitudes spread wider as phi grows.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

/// The input class of a RandomSpec: Uniform (uniform(lo, hi)), ExpRand (exp_rand(a, b)) or Phi
/// (phi(phi), Nanai & Fujimoto 2021).
enum class Distribution { Uniform, ExpRand, Phi };

/// A distribution and a seed: what fill_random() and random_float() / random_double() draw from.
/// Build one with uniform() or exp_rand().
struct RandomSpec {
  /// Which input class.
  Distribution distribution = Distribution::Uniform;
  /// uniform: lower bound; exp_rand: smallest binary exponent; phi: phi.
  double lo = -1.0;
  /// uniform: upper bound; exp_rand: one past the largest exponent (must exceed lo).
  double hi = 1.0;
  /// Seed of the counter-based generator: the same seed gives the same matrix.
  std::uint64_t seed = 1;

  /// uniform(lo, hi): lo + (hi - lo) u with u uniform in [0, 1).
  /// @param lo   lower bound.
  /// @param hi   upper bound.
  /// @param seed generator seed.
  /// @return the spec.
  static RandomSpec uniform(double lo, double hi, std::uint64_t seed) {
    return {Distribution::Uniform, lo, hi, seed};
  }
  /// exp_rand(a, b): positive values 1.m * 2^e with e uniform over the integers a..b-1.
  /// @param a    smallest binary exponent.
  /// @param b    one past the largest exponent; b > a.
  /// @param seed generator seed.
  /// @return the spec.
  static RandomSpec exp_rand(int a, int b, std::uint64_t seed) {
    return {Distribution::ExpRand, double(a), double(b), seed};
  }
  /// phi(phi) (Nanai & Fujimoto 2021, §5.1): (u - 1/2) exp(phi rn), u uniform in [0, 1), rn standard normal
  /// (Box-Muller from the element's own random bits).
  /// @param phi  the spread, >= 0 (0.1, 1 and 2 in Nanai & Fujimoto (2021) Table 2).
  /// @param seed generator seed.
  /// @return the spec.
  static RandomSpec phi_spread(double phi, std::uint64_t seed) { return {Distribution::Phi, phi, phi, seed}; }
  /// The input class for reports.
  /// @return "uniform(-1,1)", "exp_rand(-15,15)" or "phi(0.1)" (the seed is not included).
  std::string name() const;
};

/// SplitMix64 finaliser: a counter-based generator, so any element can be drawn independently.
/// @param x the input word.
/// @return the mixed 64-bit word.
MIXSOLVE_HD inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// 64 random bits for element `index` of the stream `seed` (two rounds of mix64()); the same on
/// host and device.
/// @param seed  the stream's seed.
/// @param index the element's counter.
/// @return 64 pseudo-random bits.
MIXSOLVE_HD inline std::uint64_t random_bits(std::uint64_t seed, std::uint64_t index) {
  return mix64(mix64(seed) ^ (index * 0xD2B74407B1CE6E93ull));
}

/// Element `index` of a phi(phi) matrix (Nanai & Fujimoto 2021, §5.1): u from 53 bits of the element's first
/// random word, rn = sqrt(-2 ln u1) cos(2 pi u2) from the two halves of a second. Unlike the other
/// classes, host and device values may differ in their last bits: CUDA's log, cos and exp are not
/// correctly rounded. Generate phi matrices on one side and copy them where both must agree.
/// @param phi   the spread.
/// @param seed  the stream's seed.
/// @param index the element's position i + j * rows.
/// @return the value.
MIXSOLVE_HD inline double random_phi(double phi, std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = random_bits(seed, index), more = mix64(bits);
  const double u = double(bits >> 11) * 0x1p-53;
  const double u1 = (double(more >> 32) + 1.0) * 0x1p-32, u2 = double(more & 0xFFFFFFFFull) * 0x1p-32;
  const double rn = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  return (u - 0.5) * exp(phi * rn);
}

/// Element `index` of a float matrix drawn from `spec`.
/// Uniform: u takes 24 random bits (exact in float); ExpRand: 23 random mantissa bits and an
/// exponent uniform over the integers lo..hi-1.
/// @param spec  the distribution; for ExpRand, hi must exceed lo (not checked here).
/// @param index the element's position i + j * rows.
/// @return the value.
MIXSOLVE_HD inline float random_float(const RandomSpec& spec, std::uint64_t index) {
  if (spec.distribution == Distribution::Phi) return static_cast<float>(random_phi(spec.lo, spec.seed, index));
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

/// Element `index` of a double matrix drawn from `spec` (53 random bits for uniform).
/// ExpRand: 52 random mantissa bits and an exponent uniform over the integers lo..hi-1.
/// @param spec  the distribution; for ExpRand, hi must exceed lo (not checked here).
/// @param index the element's position i + j * rows.
/// @return the value.
MIXSOLVE_HD inline double random_double(const RandomSpec& spec, std::uint64_t index) {
  if (spec.distribution == Distribution::Phi) return random_phi(spec.lo, spec.seed, index);
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

/// Fills `m` (host or device, by m.memory) from `spec`. Device fills are ordered on `stream`.
/// A device fill is launched and not waited for; a host fill runs at once.
/// @param m      the matrix to fill; written. Element (i, j) gets random_float(spec, i + j * rows).
/// @param spec   the distribution and seed.
/// @param stream CUDA stream of a device fill (null: the default stream); unused on the host.
/// @throws InvalidArgument if `m` is malformed, or `spec` is exp_rand with hi <= lo.
/// @throws DeviceError     if the kernel launch fails.
void fill_random(const MatrixView<float>& m, const RandomSpec& spec, CUstream_st* stream = nullptr);
/// @overload
/// The same for a double matrix: element (i, j) gets random_double(spec, i + j * rows).
void fill_random(const MatrixView<double>& m, const RandomSpec& spec, CUstream_st* stream = nullptr);

/// Fills a device or host matrix with a constant (used to poison outputs before a test run).
/// A device fill is ordered on `stream` and not waited for.
/// @param m      the matrix to fill (host or device, by m.memory); written.
/// @param value  the value of every element.
/// @param stream CUDA stream of a device fill (null: the default stream); unused on the host.
/// @throws InvalidArgument if `m` is malformed.
/// @throws DeviceError     if the kernel launch fails.
void fill_constant(const MatrixView<float>& m, float value, CUstream_st* stream = nullptr);
/// @overload
/// The same for a double matrix.
void fill_constant(const MatrixView<double>& m, double value, CUstream_st* stream = nullptr);

}  // namespace mixsolve
