// SPDX-License-Identifier: BSD-3-Clause
// The test-input generators of Ootomo & Yokota (2021) §4.1 and Nanai & Fujimoto (2021) §5.1.
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

// phi(phi) = (u - 1/2) exp(phi rn): phi = 0 gives uniform(-1/2, 1/2); the spread of |x| widens
// with phi (rn standard normal: about 1 in 370 draws beyond 3 sigma), and the matrix depends
// only on the seed and the element's index.
TEST(Random, PhiSpreadsMagnitudesAsNanaiFujimotoDescribe) {
  const std::int64_t count = 200000;
  std::vector<double> x(count);
  const auto spread = [&](double phi) {
    fill_random(host_view(x.data(), 400, 500, 400), RandomSpec::phi_spread(phi, 4));
    double largest = 0, sum = 0;
    for (double v : x) {
      largest = std::fmax(largest, std::fabs(v));
      sum += v;
    }
    EXPECT_LT(std::fabs(sum / count), 0.05 * std::exp(phi * phi / 2)) << "phi " << phi << ": mean near 0";
    return largest;
  };
  EXPECT_LT(spread(0.0), 0.5);
  EXPECT_GE(spread(0.0), 0.499);
  const double at_1 = spread(1.0), at_2 = spread(2.0);
  EXPECT_GT(at_1, 0.5 * std::exp(3.0));  // some draw beyond 3 standard deviations
  EXPECT_LT(at_1, 0.5 * std::exp(6.0));
  EXPECT_GT(at_2, at_1 * std::exp(2.0));
  std::vector<double> again(count);
  fill_random(host_view(again.data(), 400, 500, 400), RandomSpec::phi_spread(2.0, 4));
  EXPECT_EQ(x, again);
  EXPECT_EQ(RandomSpec::phi_spread(0.1, 1).name(), "phi(0.1)");
  std::vector<double> one(1);
  EXPECT_THROW(fill_random(host_view(one.data(), 1, 1, 1), RandomSpec::phi_spread(-1.0, 1)), InvalidArgument);
}

}  // namespace
