// SPDX-License-Identifier: BSD-3-Clause
// Internal: the minimum-norm least-squares solution for a numerically rank-deficient or an
// underdetermined A (m x n), from an R of A (a cheap unpivoted QR's where m >= n), refined to FP64
// accuracy; least_squares()'s
// rank-revealing attempt (driver/least_squares.cpp, docs/least_squares.md "Rank-deficient A").
//
// The numerical rank is the column-pivoted QR's (as LAPACK's gelsy and MATLAB's backslash take
// it): A P = Q [R11 R12; 0 R22] with |r_kk| > tau >= |r_k+1,k+1|, tau = rcond sigma_max(A), and
// the solution is the minimum-norm least-squares solution of A with R22 dropped. Two stages:
//
//  1. The cheap R (A = Q R) is factored again with column pivoting in FP64, R P_1 = Q_1 R_1: P_1
//     is A's own column pivoting. Its leading k_1 columns S_1 (|r_jj| > max(tau, 2^-12 sigma_max))
//     are the columns that even FP32 factors tell from dependent ones, and R_1's leading block is
//     an FP32-accurate R of A_S1, a preconditioner good enough for CGLS (kappa(A_S1) u_32 << 1).
//  2. The remaining columns N_1 in FP64: W = A_S1^+ A_N1 by CGLS with that R (refined: FP64
//     residuals), C = A_N1 - A_S1 W (orthogonal to A_S1's columns), C = Q_C R_C in FP64 and
//     R_C P_2 = Q_2 R_2 with pivoting: its leading k_2 columns (|r_jj| > tau) join S. Then
//     A_S = [Q_S1 Q_C'] [R11 R11 W_sel; 0 R_2,11] with Q_C' orthogonal to A_S1 in FP64, so that R
//     preconditions A_S as the FP32 R alone could not where A_S is ill conditioned.
//
// With S (k columns) and the rest N: W = A_S^+ A_N (refined again), z = A_S^+ b (refined), and
// the minimum-norm x of min ||A_S (x_S + W x_N) - b|| is the minimum-norm solution of
// [I W] x' = z: x' = [I; W^T] t with (I + W W^T) t = z, from an FP64 QR of the n x k matrix
// [I; W^T], or where n - k < k the same as x_N = argmin ||[W; I] y - [z; 0]|| (an FP64 QR of
// that n x (n - k) matrix), x_S = z - W x_N.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/least_squares.hpp"
#include "qr/column_pivoted_qr.hpp"
#include "qr/least_squares_refinement.hpp"

namespace mixsolve::solvers_detail {

// The tall (m-row) work of the rank-revealing attempt, in A's memory space; the small (n x n)
// work happens on the host.
class TallColumns {
 public:
  virtual ~TallColumns() = default;
  // The columns of A in `order` (distinct indices; a permutation of 0 .. n-1 where all of A is
  // meant): the first `kept` are A_S, the others A_N, until chosen again.
  virtual void choose(const std::vector<std::int64_t>& order, std::int64_t kept) = 0;
  // What a refinement solves for: A_S y ~ column j of B, or ~ column j of A_N.
  enum class Target { RightHandSide, DroppedColumn };
  // The preconditioner of the refinements until the next call: r (kept x kept, upper
  // triangular, FP64, host: an R of A_S or close to one), copied.
  virtual void precondition(const MatrixView<const double>& r) = 0;
  // Refines Y (host, kept x count, column major, leading dimension kept) towards the
  // least-squares solutions of A_S y_c ~ target column first + c by CGLS preconditioned with that
  // R, all columns at once (refine_block: the rules of refining each alone), from Y as given where
  // start_from_y, else from the semi-normal equations' solutions. One result per column.
  virtual std::vector<LsRefinementResult> refine(Target target, std::int64_t first, std::int64_t count,
                                                 const LsFactorScales& scales, int max_iterations, bool start_from_y,
                                                 double* y) = 0;
  // ||target - A_S y||_2 in FP64 for y (host, `kept` values).
  virtual double residual_norm(Target target, std::int64_t j, const double* y) = 0;
  // An FP64 QR with column pivoting of C = A_N - A_S W (W kept x (n - kept) on the host):
  // C P = Q R, R min(m, n - kept) x (n - kept), upper trapezoidal, column major, on the host.
  struct PivotedR {
    std::int64_t rows = 0;
    std::vector<double> r;
    std::vector<std::int64_t> pivots;  // column j of C P is column pivots[j] of C
  };
  virtual PivotedR remainder_qr(const MatrixView<const double>& w) = 0;
  // Stage 1's column pivoting of r (p x n, host; see minimum_norm_solution): its leading
  // columns while |r_jj| > relative_threshold sigma_max(r). By default an FP64 QR with column
  // pivoting on the host (leading_pivots_on_host); a space may pivot where A lives.
  virtual LeadingPivots leading_pivots(const MatrixView<const double>& r, double relative_threshold);
};

// Stage 1's pivoting on the host: sigma_max by largest_singular_value, then ColumnPivotedQr.
LeadingPivots leading_pivots_on_host(const MatrixView<const double>& r, double relative_threshold);

// The pivoted R of `c` (host, any shape; overwritten by its QR with column pivoting): the step both
// spaces' remainder_qr end with, on C itself or on the R of its unpivoted QR.
TallColumns::PivotedR pivoted_r(const MatrixView<double>& c);

// What the rank-revealing attempt found.
struct MinimumNormResult {
  std::int64_t rank = 0;                                // k = |S|
  std::int64_t cheap_rank = 0;                          // k_1: the columns stage 1 kept
  double sigma_max = 0;                                 // the estimate of sigma_max(A) that tau is relative to
  double sigma_kept = 0;                                // |r_kk| of the last kept column (0 for rank 0)
  double sigma_dropped = 0;                             // |r_k+1,k+1| of the first dropped column (0 for rank n)
  LeastSquaresStop stop = LeastSquaresStop::Converged;  // the worst refinement's
  int iterations = 0, inner_iterations = 0;             // the most any refinement took
  double factor_seconds = 0;                            // the pivoted QRs, the remainder's QR, the small solves
  double refine_seconds = 0;                            // the refinements of W and of the solutions
};

// The minimum-norm least-squares solutions X (n x columns, host, column major) of A X ~ B (A
// m x n, any shape), with A's columns through `tall` and `r` (p x n, FP64, host) a matrix with
// r^T r = A^T A up to the rounding of the QR it comes from: an R of A from any QR (FP32, Cholesky
// or FP64; A's own scale), or for m < n the R of a pivoted QR with its columns put back in A's
// order. rcond: the threshold relative to sigma_max(A), in [0, 1).
MinimumNormResult minimum_norm_solution(Context& ctx, TallColumns& tall, const MatrixView<const double>& r,
                                        double rcond, int max_iterations, const MatrixView<double>& x);

// sigma_max of R (p x n, host), estimated from below by the power iteration on R^T R (a fixed
// start, `steps` steps), at least the largest column norm.
double largest_singular_value(const MatrixView<const double>& r, int steps = 12);

}  // namespace mixsolve::solvers_detail
