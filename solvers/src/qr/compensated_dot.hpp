// SPDX-License-Identifier: BSD-3-Clause
// Internal: FP64 sums of products as accurate as if computed in twice the working precision and
// rounded once (Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26,
// 2005, Algorithm 5.3, Dot2: TwoProduct by FMA, TwoSum, the errors summed apart), for the
// least-squares refinement's residuals b - r - A x and A^T r, on the host and in CUDA kernels.
//
// Why: with residuals rounded in FP64 the refinement's limit carries u kappa(A) in every direction
// of x, while an FP64 Householder QR's error can lie far below that (A with one small singular
// value: the refined x was 11-68x the FP64 QR's error in a numpy model, kappa 1e5 - 3e5); with
// these residuals it was 0.01-0.1x.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define MIXSOLVE_HOST_DEVICE __host__ __device__
#else
#define MIXSOLVE_HOST_DEVICE
#endif

namespace mixsolve::solvers_detail {

// Rounded FP64 operations that the compiler may not fuse into an FMA (a fused s + x y would break
// the error terms below): CUDA's _rn intrinsics on the device; on the host a product stored
// through a volatile (a compiler contracts only expressions it sees whole).
MIXSOLVE_HOST_DEVICE inline double rounded_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
MIXSOLVE_HOST_DEVICE inline double rounded_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  volatile double p = a * b;
  return p;
#endif
}

// A running sum s + c: s the FP64 sum, c the sum of the rounding errors of every step.
struct CompensatedSum {
  double s = 0, c = 0;

  // += a (TwoSum: s + a = new s + error, exactly).
  MIXSOLVE_HOST_DEVICE void add(double a) {
    const double t = rounded_add(s, a);
    const double z = rounded_add(t, -s);
    c = rounded_add(c, rounded_add(rounded_add(s, -rounded_add(t, -z)), rounded_add(a, -z)));
    s = t;
  }
  // += x y (TwoProduct by FMA: x y = p + e, exactly).
  MIXSOLVE_HOST_DEVICE void add_product(double x, double y) {
    const double p = rounded_mul(x, y);
    const double e = fma(x, y, -p);
    add(p);
    c = rounded_add(c, e);
  }
  // += another running sum.
  MIXSOLVE_HOST_DEVICE void add(const CompensatedSum& o) {
    add(o.s);
    c = rounded_add(c, o.c);
  }
  MIXSOLVE_HOST_DEVICE double value() const { return rounded_add(s, c); }
};

}  // namespace mixsolve::solvers_detail

#undef MIXSOLVE_HOST_DEVICE
