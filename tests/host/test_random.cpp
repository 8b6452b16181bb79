// SPDX-License-Identifier: BSD-3-Clause
// The test-input generators of seed 000 §4.1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "mixsolve/core/random.hpp"

namespace {

using namespace mixsolve;

TEST(Random, ExpRandHasExponentsInRangeAndRandomMantissas) {
  std::vector<float> v(100000);
  fill_random(host_view(v.data(), 1000, 100, 1000), RandomSpec::exp_rand(-35, -15, 3));
  int low = 99, high = -99;
  std::uint32_t mantissa_or = 0, mantissa_and = 0x7FFFFF;
  for (float x : v) {
    ASSERT_GT(x, 0.0f);
    int e;
    std::frexp(x, &e);
    low = std::min(low, e - 1);
    high = std::max(high, e - 1);
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    mantissa_or |= bits & 0x7FFFFF;
    mantissa_and &= bits & 0x7FFFFF;
  }
  EXPECT_EQ(low, -35);
  EXPECT_EQ(high, -16);
  EXPECT_EQ(mantissa_or, 0x7FFFFFu) << "every mantissa bit varies";
  EXPECT_EQ(mantissa_and, 0u);
}

TEST(Random, UniformStaysInRangeAndDependsOnlyOnSeedAndIndex) {
  std::vector<float> a(60), b(200);
  fill_random(host_view(a.data(), 6, 10, 6), RandomSpec::uniform(-1, 1, 9));
  fill_random(host_view(b.data(), 6, 10, 20), RandomSpec::uniform(-1, 1, 9));  // other ld, same matrix
  for (int j = 0; j < 10; ++j)
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(a[i + 6 * j], b[i + 20 * j]);
      EXPECT_GE(a[i + 6 * j], -1.0f);
      EXPECT_LT(a[i + 6 * j], 1.0f);
    }
  std::vector<float> c(60);
  fill_random(host_view(c.data(), 6, 10, 6), RandomSpec::uniform(-1, 1, 10));
  EXPECT_NE(a, c);
}

}  // namespace
