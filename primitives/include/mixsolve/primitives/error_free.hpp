// SPDX-License-Identifier: BSD-3-Clause
// Internal, host and device alike: floating-point operations rounded one by one (never fused into
// an FMA by the compiler, whatever its -ffp-contract and -march), the error-free transformations
// TwoSum and TwoProduct (Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput.
// 26(6), 2005, Algorithms 3.1 and 3.5 with an FMA), and Dot2 (their Algorithm 5.3): a dot product
// as accurate as one computed in twice the working precision and rounded once,
//     |dot2 - a^T b| <= u |a^T b| + gamma_n^2 |a|^T |b|,   u = 2^-53.
#pragma once

#include <cmath>

#include "mixsolve/core/hd.hpp"

namespace mixsolve::error_free {

// a * b and a + b, rounded to nearest, each on its own: the device and the host round alike.
MIXSOLVE_HD inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  volatile double r = a * b;
  return r;
#endif
}
MIXSOLVE_HD inline double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  volatile double r = a + b;
  return r;
#endif
}

// s + e = a + b exactly, s = fl(a + b) (TwoSum: no branch, any order of magnitude).
MIXSOLVE_HD inline void two_sum(double a, double b, double& s, double& e) {
  s = add_rn(a, b);
  const double z = add_rn(s, -a);
  e = add_rn(add_rn(a, -add_rn(s, -z)), add_rn(b, -z));
}

// s + e = a + b exactly where |a| >= |b| or a = 0 (FastTwoSum).
MIXSOLVE_HD inline void fast_two_sum(double a, double b, double& s, double& e) {
  s = add_rn(a, b);
  e = add_rn(b, -add_rn(s, -a));
}

// p + e = a b exactly, p = fl(a b), unless a b underflows (TwoProduct with an FMA).
MIXSOLVE_HD inline void two_product(double a, double b, double& p, double& e) {
  p = mul_rn(a, b);
  e = fma(a, b, -p);
}

// Dot2's running state: the rounded sum, and the sum of the rounding errors of every product and
// addition so far. value() rounds the two once.
struct Dot2 {
  double sum = 0, errors = 0;

  MIXSOLVE_HD void add(double v) {
    double e;
    two_sum(sum, v, sum, e);
    errors = add_rn(errors, e);
  }
  MIXSOLVE_HD void add_product(double a, double b) {
    double p, ep, es;
    two_product(a, b, p, ep);
    two_sum(sum, p, sum, es);
    errors = add_rn(errors, add_rn(es, ep));
  }
  // Another Dot2's terms (a partial sum of the same dot product).
  MIXSOLVE_HD void add(const Dot2& other) {
    add(other.sum);
    errors = add_rn(errors, other.errors);
  }
  MIXSOLVE_HD double value() const { return add_rn(sum, errors); }
};

}  // namespace mixsolve::error_free
