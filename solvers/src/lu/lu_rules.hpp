// SPDX-License-Identifier: BSD-3-Clause
// Internal: the rules both engines (host_engine.cpp, cuda/device_engine.cu) follow for their LU
// and Cholesky factorizations, so that the host model and the GPU factor alike: range scaling's
// choice, how many columns FP32-stored factors are applied in FP64, how much of a cheaper LU's
// row order to trust, the pivot collapse watch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mixsolve/core/hd.hpp"
#include "precisions.hpp"

namespace mixsolve::solvers_detail {

// Range scaling (SolveOptions::range_scaling; Higham, Pranesh & Zounon 2019, "Squeezing a
// matrix into half precision", Alg. 2.2 with powers of two, so every scaling is exact): the LU
// factors M = mu R A S and A^-1 = mu S M^-1 R.
//
// The power of two that brings a row's or column's largest magnitude `largest` into [1/2, 1)
// (1 for an all-zero row or column, which the LU then reports as a zero pivot).
MIXSOLVE_HD inline double equilibrating_power_of_two(double largest) {
  if (!(largest > 0)) return 1.0;
  int exponent = 0;
  frexp(largest, &exponent);  // largest = m 2^exponent, m in [1/2, 1)
  return ldexp(1.0, -exponent);
}

struct RangeScaling {
  bool two_sided = false;  // R and S equilibrate the rows and columns; else R = S = I
  double mu = 1.0;         // mu R A S has its largest entry in [1/2, 1)
};

// A Cholesky's range scaling keeps A symmetric: R = S, with s_i the power of two that brings
// sqrt(a_ii) into [1/2, 1), so the diagonal of S A S lies in [1/4, 1) and, A being positive
// definite, every entry in (-1, 1) (|a_ij| <= sqrt(a_ii a_jj)). A diagonal entry that is not
// positive gets 1: the Cholesky then stops there.
MIXSOLVE_HD inline double symmetric_equilibrating_power_of_two(double diagonal) {
  return diagonal > 0 ? equilibrating_power_of_two(sqrt(diagonal)) : 1.0;
}

// Why the scaled entries end below 1 and not near FP16's top (the paper's mu = 0.1 x_max): U's
// entries grow with the elimination and go through FP16 in the trailing updates. With A's
// largest entry scaled to 2^10, the FP16 LU failed before any refinement step at n = 16384 on
// `arith` matrices (cond 1e2 .. 1e10, H100), where the unscaled one converged; below 1 the
// growth has 2^16 of room, and entries 2^14 below the largest are still normal.
//
// Two-sided equilibration changes the preconditioned operator (GMRES-IR then works with
// S X S^-1 for an X near I): on well-scaled matrices it cost ~20% more GMRES iterations (host
// model, FP16, svd_geo cond 1e6, n = 96, three seeds), while a power of two for the whole
// matrix changes nothing but the exponents. So R and S are used only where the rows' or
// columns' largest entries spread over more than kEquilibrationSpread: with the whole matrix
// scaled into [-1, 1], a row or column whose largest entry lies below 2^-13 would be held with
// FP16's subnormal spacing 2^-24, coarser than FP16's unit roundoff relative to that entry.
constexpr double kEquilibrationSpread = 0x1p12;
inline RangeScaling choose_range_scaling(const std::vector<double>& row_largest,
                                         const std::vector<double>& column_largest) {
  double largest = 0, smallest = INFINITY;
  for (const std::vector<double>* v : {&row_largest, &column_largest})
    for (double x : *v) {
      largest = std::max(largest, x);
      smallest = std::min(smallest, x);
    }
  RangeScaling s;
  if (!(largest > 0)) return s;  // A = 0: nothing to scale (the LU reports the zero pivot)
  s.two_sided = smallest < largest / kEquilibrationSpread;
  s.mu = s.two_sided ? 1.0 : equilibrating_power_of_two(largest);
  return s;
}

// Up to this many right-hand sides, FP32-stored factors are applied in FP64 arithmetic
// (Engine::apply_inverse). GMRES-IR applies its preconditioner to one vector at a time and needs
// it applied in about the working precision once cond(A) u_32 nears 1 (Amestoy, Buttari, Higham,
// L'Excellent, Mary and Vieuble, "Five-precision GMRES-based iterative refinement", SIAM J.
// Matrix Anal. Appl. 45(1), 2024; host model, fp16x3, n = 512: geo cond 1e8 50 -> 28 GMRES
// iterations, arith cond 1e12 55 -> 13; FP16 LU, arith cond 1e10 and 1e12 failed, now converge).
// On the GPU it reads the same FP32 bytes, so it costs what an FP32 solve does; wider blocks
// (classic IR on many right-hand sides) go through cuBLAS trsm in FP32.
constexpr std::int64_t kFp64ApplyMaxColumns = 4;

// SolveOptions::reuse_pivot_order: how many leading columns of a cheaper LU's row order the FP64
// LU follows, from the cheaper LU's pivots |u_kk| (`pivots`, in column order) and its arithmetic.
// Its trailing updates leave a rounding error of about sqrt(n) u max |u_kk| in every Schur
// complement entry, so from the first pivot below that size on its pivot choices followed the
// error, not the values, and so would an FP64 LU in that order, which then fails its multiplier
// check (kReusedOrderMaxMultiplier) at the end: a squared-exponential covariance matrix, n =
// 32761 (H100), spent 0.27 s on such an LU before partial pivoting started over. The FP64 LU
// follows the order up to there and pivots partially after; a whole order where no pivot is
// that small. Not at all after a two-sided range scaling (RangeScaling): the cheaper LU chose
// its pivots among the rows of R A S, and for A's own rows that order's multipliers carry the
// ratios of R's entries (10^+-12 scaled rows, host, n = 600: max |l_ij| 1.7e24, rejected).
inline std::int64_t trusted_order_columns(const std::vector<double>& pivots, double cheap_unit_roundoff) {
  double largest = 0;
  for (double u : pivots) largest = std::max(largest, u);
  const double noise = std::sqrt(double(pivots.size())) * cheap_unit_roundoff * largest;
  for (std::size_t k = 0; k < pivots.size(); ++k)
    if (!(pivots[k] >= noise)) return std::int64_t(k);
  return std::int64_t(pivots.size());
}

// A cheaper LU whose pivots collapse stops early (SolveOptions::probe_pivot_ratio): once at
// least kCollapseMinPivots of its pivots, and more than half of those so far, lie below
// `below` times the largest so far, the matrix is numerically rank-deficient at that precision,
// its factors would be too far from A for refinement, and the rest of the LU would be wasted.
// H100, fp16x3 (below = 1e-4), n = 16384 and 32761: a Hilbert matrix collapses at column ~260,
// a squared-exponential covariance (nugget 1e-6) near 40% of n (n = 16384) / 20% (n = 32761);
// every matrix whose fp16x3 factors refined had at most 28% of its pivots that small, at the
// end of its LU (`poev` `geo` cond 1e8; `svd` `cluster0` cond 1e8 16%, the 13 application
// families at most 0.5%). The early half never holds most of the small ones, so a fraction of
// the pivots so far, not of n, decides. A collapse that is judged wrongly costs speed only:
// the FP64 LU follows.
constexpr std::int64_t kCollapseMinPivots = 256;
struct PivotWatch {
  double largest = 0;  // max |u_kk| so far
  long long small = 0;  // pivots below `below` times the largest so far (NaN counts)
};
MIXSOLVE_HD inline void watch_pivot(PivotWatch& w, double magnitude, double below) {
  w.largest = fmax(w.largest, magnitude);
  if (!(magnitude >= below * w.largest)) ++w.small;
}
inline bool pivots_collapsed(long long small, std::int64_t seen) {
  return small >= kCollapseMinPivots && 2 * small > seen;
}

}  // namespace mixsolve::solvers_detail
