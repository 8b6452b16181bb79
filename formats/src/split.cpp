// SPDX-License-Identifier: BSD-3-Clause
#include <cmath>

#include "mixsolve/formats/split.hpp"

namespace mixsolve::formats {

int retained_mantissa_bits(float v, double represented) {
  const double error = std::fabs(double(v) - represented);
  if (error == 0) return 23;
  int exponent = 0;
  std::frexp(double(v), &exponent);                     // |v| in [2^(exponent-1), 2^exponent)
  const double ulp = std::ldexp(1.0, exponent - 1 - 23);  // ulp of v in FP32
  // An error of one ulp loses the last bit; of 2..3 ulp, two bits; and so on.
  const int lost = static_cast<int>(std::floor(std::log2(error / ulp))) + 1;
  return 23 - lost;
}

}  // namespace mixsolve::formats
