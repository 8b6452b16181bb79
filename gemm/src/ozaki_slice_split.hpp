// SPDX-License-Identifier: BSD-3-Clause
// Internal: one slice of the Ozaki scheme with BF16 / FP16 slices (ozaki_slices.hpp, Niimi 2025,
// eqs. (2)-(5)), host and device alike, so that host-ozaki-bf16 / -fp16 and the device backends
// slice bit for bit alike.
#pragma once

#include <cmath>

#include "mixsolve/core/hd.hpp"
#include "ozaki2_crt.hpp"

namespace mixsolve::gemm::detail {

// The slice 2^-c v of the remainder r on the grid of exponent c (a multiple of 2^-(53 - rho),
// exact in the slice format); r is replaced by r - v, exactly.
MIXSOLVE_HD inline double take_ozaki_slice(double& r, int rho, int c) {
  const double sigma = 0.75 * ldexp(1.0, rho + c);    // eq. (2)
  const double v = add_rn(add_rn(r, sigma), -sigma);  // eq. (3)
  r = add_rn(r, -v);                                  // eq. (4), exact
  return ldexp(v, -c);                                // eq. (5)
}

}  // namespace mixsolve::gemm::detail
