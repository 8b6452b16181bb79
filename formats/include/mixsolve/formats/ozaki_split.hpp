// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// The element operations of the Ozaki scheme with FP32 splits (Nanai & Fujimoto 2021:
/// Algorithms 1 and 2, eqs. (6)-(10)), shared by the host and the device so that both split
/// bit for bit alike.
///
/// A row of A (a column of B) whose largest |value| is mu is cut on the grid of
/// sigma = 2^(ceil(log2 mu) + beta): high = fl32(fl32(v) + sigma) - sigma keeps the bits of v
/// from 2^(ceil(log2 mu) - 1) down to 2^(ceil(log2 mu) - alpha), alpha = 24 - beta, so that a
/// product of two such high parts, summed over k terms, needs at most 2 alpha + ceil(log2 k)
/// <= 24 bits and an FP32 GEMM computes it without rounding error (eq. (5)).
#pragma once

#include <cmath>
#include <cstdint>

#include "mixsolve/core/hd.hpp"

namespace mixsolve::formats {

/// Nanai & Fujimoto (2021) eq. (10) with u = 2^-24: beta = ceil((24 + log2 k) / 2).
/// @param k the inner dimension, >= 1.
/// @return beta, in [12, 28] for k < 2^31.
MIXSOLVE_HD inline int ozaki_fp32_beta(std::int64_t k) {
  int log2_k = 0;  // ceil(log2 k)
  while ((std::int64_t{1} << log2_k) < k) ++log2_k;
  return (24 + log2_k + 1) / 2;
}

/// ceil(log2 mu) for a finite mu > 0, exactly (frexp: mu = f 2^e with f in [1/2, 1)).
/// @param mu a finite positive value.
/// @return the least e with mu <= 2^e.
MIXSOLVE_HD inline int ceil_log2(double mu) {
  int e = 0;
  const double f = frexp(mu, &e);
  return f == 0.5 ? e - 1 : e;
}

/// The high part of v on the grid of sigma (Nanai & Fujimoto 2021, Algorithm 2 line 9):
/// fl32(fl32(v) + sigma) - sigma, each operation rounded to nearest in FP32.
/// @param v     the value (FP64; rounded to FP32 first, as Nanai & Fujimoto's (2021) single(A)).
/// @param sigma 2^(ceil(log2 mu) + beta) for the row's or column's largest |value| mu, in FP32.
/// @return a float whose bits lie on sigma's grid: |high| <= 2^(ceil(log2 mu)).
MIXSOLVE_HD inline float ozaki_high_part(double v, float sigma) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(__fadd_rn(__double2float_rn(v), sigma), sigma);
#else
  volatile float shifted = static_cast<float>(v) + sigma;  // no reassociation across the two roundings
  return shifted - sigma;
#endif
}

}  // namespace mixsolve::formats
