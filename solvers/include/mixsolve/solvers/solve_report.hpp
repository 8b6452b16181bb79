// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// What solve() and Factorization::solve return (mixsolve/solvers/solve.hpp): SolveReport, one
/// Attempt per factorization or refinement method, and why each stopped (StopReason).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mixsolve/solvers/solve_options.hpp"

namespace mixsolve {

/// Why one factorization's refinement stopped (Attempt::stop), or why the factorization itself
/// failed before any refinement:
///  * Converged: every right-hand side met the stop test (SolveOptions::stop_test).
///  * ZeroPivot: the LU met an exactly zero pivot (Attempt::zero_pivot_column); in the FP64 LU
///    solve() throws SingularMatrix instead.
///  * NotPositiveDefinite: the Cholesky met a pivot that is not positive in its arithmetic
///    (Attempt::zero_pivot_column says where); in the FP64 Cholesky under Structure::Spd solve()
///    throws NotPositiveDefinite instead.
///  * Overflow: the factors (or A rounded to their FP32 storage) hold Inf or NaN.
///  * Stagnated: refinement steps in a row failed to halve the backward error (3 for classic IR,
///    1 for GMRES-IR), or a GMRES inner solve stagnated and its step did not cut the backward
///    error tenfold.
///  * Diverged: as Stagnated, but each of those steps made the backward error worse; or an
///    iterate was not finite.
///  * MaxIterations: SolveOptions::max_iterations steps without meeting the stop test.
///  * TooSlow: classic IR's rate predicted more than 15 further steps (Refinement::Auto), or
///    GMRES's predicted more iterations or time than its budget (SolveOptions::gmres_max_inner,
///    SolveOptions::escalate_by_cost).
///  * NoRefinement: Refinement::None, and not every right-hand side met the LAPACK test.
///  * WeakFactors, CollapsedPivots: below.
enum class StopReason {
  Converged, ZeroPivot, Overflow, Stagnated, Diverged, MaxIterations, TooSlow, NoRefinement,
  /// The probe of the factors (SolveOptions::probe_pivot_ratio) found them too far from A.
  WeakFactors,
  /// Most of the LU's pivots so far were tiny: stopped part way (probe_pivot_ratio;
  /// Attempt::collapsed_at_column).
  CollapsedPivots,
  /// The Cholesky met a pivot that is not positive (see above).
  NotPositiveDefinite,
};
/// A short description of a stop reason, for reports.
/// @param s a stop reason.
/// @return e.g. "converged", "zero pivot", "iteration limit".
std::string to_string(StopReason s);

/// How a factorization chose its row interchanges (SolveOptions::reuse_pivot_order,
/// SolveOptions::fp16_when_near_diagonal).
enum class PivotOrder {
  /// Partial pivoting, as LAPACK's getrf.
  Partial,
  /// The previous factorization's row order, pivoting inside each diagonal block.
  Reused,
  /// Reused failed its check and the LU was redone with partial pivoting (both count).
  Rejected,
  /// A's own row order, pivoting inside each diagonal block only: the FP16 LU that auto tries
  /// first where A is close to its diagonal (SolveOptions::fp16_when_near_diagonal).
  DiagonalBlocks,
  /// DiagonalBlocks failed its check and the LU was redone with partial pivoting (both count).
  DiagonalBlocksRejected,
};
/// A short description of a pivot order, for reports.
/// @param o a pivot order.
/// @return e.g. "partial pivoting", "reused row order", "reused row order rejected, then partial
///         pivoting", "pivoting inside the diagonal blocks".
std::string to_string(PivotOrder o);

/// One attempt of a solve: a factorization (or the reuse of earlier factors) and its refinement.
struct Attempt {
  /// The factorization: LU or Cholesky (SolveOptions::structure).
  FactorKind factor = FactorKind::Lu;
  /// The factorization's precision.
  Precision precision = Precision::FP64;
  /// The refinement method used (SolveOptions::refinement; Auto appears as Classic, and as Gmres
  /// for its retry on the same factors).
  Refinement refinement = Refinement::Classic;
  /// How the attempt ended (StopReason).
  StopReason stop = StopReason::Converged;
  /// For StopReason::ZeroPivot and NotPositiveDefinite: the pivot's column (0-based); -1
  /// otherwise.
  std::int64_t zero_pivot_column = -1;
  /// For StopReason::CollapsedPivots: up to which column the LU ran; -1 otherwise.
  std::int64_t collapsed_at_column = -1;
  /// The factorization was of mu R A S, or for a Cholesky of mu S A S (SolveOptions::
  /// range_scaling).
  bool range_scaled = false;
  /// How the LU chose its row interchanges (SolveOptions::reuse_pivot_order).
  PivotOrder pivot_order = PivotOrder::Partial;
  /// max |l_ij| of a reused row order or of diagonal-block pivoting (every order but Partial); 0
  /// otherwise.
  double largest_multiplier = 0;
  /// Reused: the leading columns that followed the order (SolveOptions::reuse_pivot_order); the
  /// rest pivoted partially, where the cheaper LU's pivots had fallen to its rounding error.
  std::int64_t reused_columns = 0;
  /// Precision::Ozaki: the bits of each operand that its emulated trailing updates kept
  /// (SolveOptions::ozaki_bits); 0 where every update ran in FP64 (on a GPU without a cost model
  /// for the emulation, or where the matrix is too small for it to pay: the LU was then the FP64
  /// one), and for the other precisions. On the GPU this is the plan: dgemm-auto may still run a
  /// planned product in DGEMM (its workspace would not fit, or NaN), which costs speed only.
  int emulated_bits = 0;
  /// min |u_kk| / max |u_kk| of a cheaper LU that the probe could judge (SolveOptions::
  /// probe_pivot_ratio's screen); 0 where it was not computed (FP64, nothing higher left, small n).
  double pivot_ratio = 0;
  /// The probe's estimate of the 4th singular value of (LU)^-1 A - I (SolveOptions::
  /// probe_pivot_ratio); negative where the factors were not probed. Its time counts in
  /// refinement_seconds.
  double probe_estimate = -1;
  /// Outer refinement iterations.
  int iterations = 0;
  /// GMRES iterations, all right-hand sides.
  int inner_iterations = 0;
  /// Wall-clock seconds of the factorization (0 where earlier factors were reused) and of the
  /// refinement (the probe included).
  double factorization_seconds = 0, refinement_seconds = 0;
};

/// What a solve did and how well: convergence, backward errors, the attempts and times.
struct SolveReport {
  /// Every right-hand side's returned x meets the LAPACK test (SolveOptions::tolerance_factor),
  /// under either StopTest.
  bool converged = false;
  /// Per right-hand side: its returned x meets the LAPACK test (all true for a B with no rows).
  std::vector<bool> converged_rhs;
  /// The returned X holds, for each right-hand side, the best iterate of every solve and
  /// refinement step of every attempt: never one that refinement made worse. An iterate that
  /// meets the LAPACK test from factors whose refinement proved itself ranks above any that does
  /// not; otherwise the smaller backward error (componentwise where A is badly scaled) wins, and
  /// among iterates that meet the test a later one within 2x of the smallest is kept (at that
  /// floor the value is noise, and the later iterate had one more correction).
  /// backward_error: its normwise backward error (max over the right-hand sides); INFINITY where
  /// every factorization failed before a solve (X then holds no iterate);
  /// stop_test_backward_error: about what the LAPACK test asks (tolerance_factor sqrt(n) 2^-53),
  /// so a solve that did not converge says how close it got; returned_earlier_iterate: for some
  /// right-hand side the returned x is not the last iterate computed.
  double backward_error = 0;
  /// About the backward error the LAPACK test asks for: tolerance_factor sqrt(n) 2^-53 (see
  /// backward_error).
  double stop_test_backward_error = 0;
  /// The arithmetic refinement's residuals were summed in: DoubleDouble or Fp64
  /// (SolveOptions::residual_precision, Auto resolved for this B's columns).
  ResidualPrecision residual_precision = ResidualPrecision::DoubleDouble;
  /// Where A's rows' or columns' largest entries spread over more than 2^12 (badly scaled: the
  /// two-sided range scaling's criterion), refinement judges iterates, and picks the returned
  /// one, by the componentwise backward error max_i |b - A x|_i / (|A| |x| + |b|)_i (Oettli and
  /// Prager; LAPACK dgerfs's BERR), which row scaling does not change: this is the returned X's
  /// (max over the right-hand sides). 0 for other matrices (not computed).
  double componentwise_backward_error = 0;
  /// For some right-hand side the returned x is not the last iterate computed (see
  /// backward_error).
  bool returned_earlier_iterate = false;
  /// SolveOptions::fp16_when_near_diagonal's estimate of ||D^-1 (A - D)||_2, D = diag(A) (a lower
  /// bound; a value above 1/8 may be where the screen stopped early, INFINITY for a zero on the
  /// diagonal), where Factorization's constructor computed it; -1 where it did not. Its time
  /// counts in the constructor's, not in total_seconds.
  double near_diagonal_estimate = -1;
  /// SolveOptions::condition_estimate: an estimate of cond_inf(A) = ||A||_inf ||A^-1||_inf from the
  /// factors in use (Higham's estimator, a lower bound up to the factors' accuracy: FP64 factors,
  /// or cheap ones that refinement made converge), and the normwise bound on the returned X's
  /// forward error ||x - x_true||_inf / ||x||_inf <= ||A^-1|| (||r|| + (n + 1) u (||A|| ||x|| +
  /// ||b||)) / ||x|| (Higham, "Accuracy and Stability of Numerical Algorithms", §7.7; max over the
  /// right-hand sides). 0 where not computed (not asked for, or the last factorization tried did
  /// not complete).
  double condition_estimate = 0;
  /// The forward error bound described with condition_estimate (max over the right-hand
  /// sides); 0 where not computed.
  double forward_error_bound = 0;
  /// The estimate's time, in seconds (in total_seconds).
  double condition_seconds = 0;
  /// Outer refinement iterations, all attempts.
  int iterations = 0;
  /// Normwise backward error max_j ||b_j - A x_j||_inf / (||A||_inf ||x_j||_inf + ||b_j||_inf)
  /// after each solve (initial and each refinement step), all attempts in order.
  std::vector<double> backward_error_history;
  /// The precision path actually taken: one entry per factorization tried, per GMRES-IR retry
  /// on the same factors, and (in a later Factorization::solve) one for the reused factors.
  std::vector<Attempt> attempts;
  /// An FP64 factorization was needed after a cheaper one.
  bool fell_back = false;
  /// Wall-clock seconds: the attempts' factorizations and refinements, except those of an FP64
  /// attempt that reached refinement after a cheaper one (the fallback), which count in
  /// fallback_seconds; total_seconds is the whole call.
  double factorization_seconds = 0, refinement_seconds = 0, fallback_seconds = 0, total_seconds = 0;
  /// The most memory, in bytes, the solver held for factors, scratch vectors and workspaces
  /// over the Factorization's life so far.
  std::size_t peak_workspace_bytes = 0;

  /// A text for printing: the outcome, one line per attempt, the backward errors and, where
  /// computed, the condition estimate.
  /// @return several lines, each ending in a newline.
  std::string summary() const;
};

}  // namespace mixsolve
