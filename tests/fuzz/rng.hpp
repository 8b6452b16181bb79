// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' reproducible random numbers: xoshiro256** with its own distributions, so that
// a seed gives the same cases with every standard library.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace mixsolve::fuzz {

// xoshiro256** seeded by splitmix64 (Blackman & Vigna, "Scrambled linear pseudorandom number
// generators", 2021), with its own integer and real distributions: std::uniform_int_distribution
// differs between standard libraries, and a seed must give the same cases everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (std::uint64_t& w : s_) w = splitmix(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // An integer in [lo, hi] (the modulo's bias is below 2^-40 for the ranges used here).
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + std::int64_t(next() % std::uint64_t(hi - lo + 1));
  }
  // A real in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return values.begin()[range(0, std::int64_t(values.size()) - 1)];
  }
  template <class T>
  const T& pick(const std::vector<T>& values) {
    return values[std::size_t(range(0, std::int64_t(values.size()) - 1))];
  }

  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace mixsolve::fuzz
