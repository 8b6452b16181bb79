// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Least squares min ||b - A x||_2 to FP64 accuracy (A m x n), also where the residual is not
/// zero, and the minimum-norm solution where A is numerically rank deficient or underdetermined
/// (m < n): a Householder QR of A in a cheaper
/// precision, refined in FP64 by CGLS right-preconditioned with its R (Bjorck, Numerical Methods for Least Squares
/// Problems, section 7.4; outer steps on FP64 residuals b - A x), with FP64 factors where that refinement does not
/// converge: a Cholesky QR preconditioned by the cheap R, else an FP64 Householder QR.
///
/// The FP32 QR refines to the FP64 QR's accuracy, in x and in the residual r, while
/// kappa(A) u_32 < 1; beyond, its refinement is detected to diverge within a few steps and FP64
/// factors take over. The plain steps on the augmented system [I A; A^T 0] [r; x] = [b; 0]
/// (Bjorck; Higham, Accuracy and Stability of Numerical Algorithms, section 20.5; with x refined
/// alone as their rescue) and GMRES-LS (Carson, Higham & Pranesh 2020) are the alternatives
/// (LeastSquaresOptions::refinement). Where the FP32 R's diagonal spans more than 1 / (16 u_32)
/// (about kappa > 1e6) FP64 factors decide at once: FP32 factors cannot tell such an A from a
/// rank-deficient one, whose least-squares solution is not unique. For a rank-deficient A the
/// rank-revealing attempt returns the minimum-norm solution with the numerical rank, or, under
/// LeastSquaresOptions::RankDeficiency::FullRank, least_squares() throws RankDeficientMatrix. The
/// report says which factors produced X and how each refinement ended.
///
/// A, B and X in host or device memory (all three in the same space; device matrices need a
/// Context with a GPU). On the device the FP32 QR's trailing updates run on cuBLAS SGEMM, or for
/// n >= 1024 partly on FP16 tensor cores (LeastSquaresOptions::fp32_update), and the residuals on
/// cuBLAS DGEMV (docs/least_squares.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace mixsolve {

/// The settings of least_squares().
struct LeastSquaresOptions {
  /// The QR's precision: FP32 (refined to FP64 accuracy where kappa(A) u_32 < 1), FP64, or Auto:
  /// FP32 where the problem is large enough for the cheap QR to pay (auto_min_work), else one
  /// FP64 Householder QR whose solution is taken as it is, not refined (the FP64 QR solve a user
  /// would call: on the device cuSOLVER's geqrf, ormqr and a triangular solve; path
  /// "fp64/unrefined").
  Precision factorization = Precision::Auto;
  /// Under Auto, an A (m x n; with ridge the stacked matrix) with m n^2 below this takes the FP64
  /// QR solve. -1: the memory space's choice, 2^32 for device matrices, 0 for host matrices (whose
  /// FP32 path is the device's model, there to exercise it at small sizes). Must be >= -1.
  std::int64_t auto_min_work = -1;
  /// Refinement steps per attempt, >= 1 (InvalidArgument).
  int max_iterations = 30;
  /// Factor again in FP64 where the cheaper factors' refinement does not converge. Without, such
  /// a solve returns that attempt's X with converged = false (NaN where it stopped RankUndecided:
  /// there is no solution to return; FP32 factors stop so on A too ill conditioned for them,
  /// beyond kappa ~ 1e6, see LeastSquaresStop::RankUndecided).
  bool fallback = true;
  /// Householder reflectors per compact-WY block; 0: 32 for host matrices; for device ones 256
  /// with cublas-fp16x3 updates, else 128 (FP64: 256 where n >= 1024). Must be >= 0
  /// (InvalidArgument).
  int block_size = 0;
  /// The GEMM backend (gemm registry name) of the FP32 QR's trailing updates, both of their
  /// products; "": host-fp32 for host matrices; for device ones, where n >= 1024 and A's column
  /// norms span at most 2^12, cublas-fp16x3 for C - V W and tf32tf32 for V^T C (cublas-fp16x3's
  /// split errs by ~2^-39 of each operand's largest entry, not column by column, and its
  /// tensor-core accumulation truncates over V^T C's m terms), else cublas-sgemm
  /// (docs/least_squares.md).
  std::string fp32_update;
  /// The GEMM backend of V^T C alone in the FP32 QR's trailing updates of device matrices
  /// (C - V W keeps fp32_update's); "": as described under fp32_update. Ignored for host matrices.
  std::string fp32_vt_c_update;
  /// The refinement of the cheaper factors. Cgls (the default): x += d, d the least-squares
  /// solution of A d ~ b - A x (FP64 residual) by CGLS right-preconditioned with the cheap R in
  /// FP64 (no Q; Bjorck, Numerical Methods for Least Squares Problems, section 7.4): its
  /// iterations remove one by one the few singular values of A R^-1 that R's rounding moves far
  /// from 1, where the plain steps contract only by the largest of them (about kappa(A) u_32;
  /// docs/least_squares.md measures both). Augmented: the
  /// plain steps on the augmented system; where they do not converge, x refined alone with the
  /// same factors, an attempt of its own, before any FP64 QR. Gmres: GMRES-LS only;
  /// AugmentedThenGmres: as Augmented, then GMRES-LS with the same factors (GMRES-LS has not yet
  /// paid on the device: docs/least_squares.md). FP64 factors take the plain or the semi-normal
  /// steps. Another value (a cast integer) is an InvalidArgument.
  enum class Refinement { Augmented, Gmres, AugmentedThenGmres, Cgls };
  Refinement refinement = Refinement::Cgls;
  /// With fallback, where the FP32 attempt fails: first FP64 factors by Cholesky QR of
  /// A R_32^-1 (the FP32 R as its preconditioner: R = chol((A R_32^-1)^T (A R_32^-1)) R_32, no Q),
  /// refined by the semi-normal steps, and the FP64 Householder QR only where that Cholesky breaks
  /// down. Its products (a triangular solve with m x n right-hand sides and a Gram matrix) cost a
  /// fraction of an FP64 QR's; its x is as accurate as the FP64 QR's up to kappa ~ 1e10
  /// (docs/least_squares.md).
  bool cholesky_qr = true;
  /// What a numerically rank-deficient A gets (one whose column-pivoted QR has |r_jj| at or
  /// below rcond sigma_max(A) for some j). MinimumNorm: the minimum-norm least-squares solution of
  /// A with the part of those columns that the pivoted QR drops (R22) left out, and the numerical
  /// rank in the report, as LAPACK's gelsy: a rank-revealing attempt after the cheaper ones
  /// (docs/least_squares.md), for host and device matrices (m < n: host matrices only). It needs
  /// FP64 work: with fallback off and FP32 factorization a tall A the FP32 factors cannot decide
  /// ends "rank undecided" (X NaN), as under FullRank.
  /// FullRank: least-squares solutions of full-rank A only; a rank-deficient A throws
  /// RankDeficientMatrix (its least-squares solution is not unique). Another value (a cast
  /// integer) is an InvalidArgument.
  enum class RankDeficiency { MinimumNorm, FullRank };
  RankDeficiency rank_deficient = RankDeficiency::MinimumNorm;
  /// The rank threshold relative to sigma_max(A): |r_jj| <= rcond sigma_max(A) counts as zero.
  /// In [0, 1); negative: max(m, n) 2^-53 (NumPy's lstsq default). NaN or >= 1: InvalidArgument.
  /// 0 drops only exactly zero remainders: an exactly rank-deficient A then keeps columns whose
  /// remainder is FP64 rounding, and its refinement is likely to fail.
  double rcond = -1;
  /// Ridge regression (Tikhonov): min ||b - A x||^2 + ridge ||x||^2 where ridge > 0, solved as the
  /// least-squares problem of [A; sqrt(ridge) I] and [b; 0] with the same factors and refinement
  /// (full rank whatever A's rank and shape, so also for m < n; the problem solved has
  /// fl(sqrt(ridge))^2, within two roundings of ridge). It costs a copy of A with n more rows in
  /// A's memory. residual_norms stay ||b - A x||. Must be finite and >= 0 (InvalidArgument);
  /// 0: plain least squares.
  double ridge = 0;
};

/// How the refinement of one attempt ended (the worst over the right-hand sides).
enum class LeastSquaresStop {
  /// The corrections fell below 2^-53 of x and of b, or, shrinking by 2^-8 or more per step
  /// from below 2^-26, would at the next step.
  Converged,
  /// The corrections stopped halving after they had halved twice down to 2^-16 of x (or fallen
  /// to 2^-40), or (CGLS, the semi-normal steps) at FP64's attainable accuracy,
  /// 64 u (kappa + kappa^2 ||r|| / (||A|| ||x||)): x and r are as accurate as FP64 residuals make
  /// them.
  Stagnated,
  /// The corrections stopped short of that (or overflowed): the factors are too far from A
  /// (kappa(A) u >~ 1).
  Diverged,
  /// Neither within LeastSquaresOptions::max_iterations.
  MaxIterations,
  /// Not refined: the FP32 R's diagonal spans more than 1 / (16 u_32) (about kappa(A) > 1e6), where
  /// FP32 factors cannot tell an ill-conditioned A from a rank-deficient one; or, where the
  /// diagonal spans more than 2^10 (m >= n), the FP64 test of the columns of smallest |r_jj| and
  /// the last one (each one's distance from the columns before it, by CGLS with the FP32 R) did
  /// not converge, or found an |r_jj| more than 2^8 times ||A v|| for the unit
  /// v = [-y; 1; 0] / ||[-y; 1]|| of that distance: A is far more ill conditioned than the FP32 R
  /// shows, and that R cannot precondition it.
  RankUndecided,
  /// Not refined: the Cholesky QR of A R_32^-1 broke down (its Gram matrix not numerically positive
  /// definite, or the diagonal of its Cholesky factor R_2 spanning more than 2^10): the FP32 R is
  /// too far from A's.
  CholeskyBreakdown,
  /// Not refined: the factors show A numerically rank deficient (a unit v with ||A v|| <=
  /// max(m, n) 2^-53 ||A||_F, computed in FP64; for FP32 factors from the column of smallest
  /// |r_jj| and the columns before it); the rank-revealing attempt follows
  /// (RankDeficiency::MinimumNorm).
  RankDeficient,
};

/// @param s a stop reason.
/// @return "converged", "stagnated", "diverged", "max iterations", "rank undecided", "cholesky
/// breakdown" or "rank deficient".
std::string to_string(LeastSquaresStop s);

/// One QR and its refinement.
struct LeastSquaresAttempt {
  /// The QR's precision.
  Precision precision = Precision::FP32;
  /// The refinement: the plain steps on the augmented system (false) or GMRES-LS (true), which
  /// reuses the factors of the attempt before it (factor_seconds 0).
  bool gmres = false;
  /// Refining x alone (x += R^-1 Q^T (b - A x)), after the plain steps failed, with the same
  /// factors (factor_seconds 0); accepted only where ||b - A x|| comes down to FP64's rounding
  /// level: a consistent system.
  bool x_only = false;
  /// The cheap factors' R alone, each correction by CGLS (LeastSquaresOptions::Refinement::Cgls).
  bool cgls = false;
  /// The FP64 Householder QR's own solution, not refined (factorization Auto below
  /// auto_min_work): stop Converged with no steps (or RankDeficient, decided before solving).
  bool unrefined = false;
  /// FP64 factors by Cholesky QR preconditioned with the FP32 attempt's R (precision FP64;
  /// LeastSquaresOptions::cholesky_qr), refined by the semi-normal steps
  /// x += (R^T R)^-1 A^T (b - A x) (no Q).
  bool cholesky_qr = false;
  /// The rank-revealing attempt (LeastSquaresOptions::RankDeficiency::MinimumNorm; precision
  /// FP64): the held factors' R with column pivoting, the columns it cannot tell from dependent
  /// ones factored again in FP64, every solve refined by CGLS (LeastSquaresReport::rank).
  bool rank_revealing = false;
  /// With rank_revealing: the numerical rank it found.
  std::int64_t rank = 0;
  /// The GEMM backend of the Householder QR's trailing updates, e.g. "cublas-sgemm",
  /// "cublas-fp16x3 (V^T C: tf32tf32)", "host-fp32"; empty for the Cholesky QR.
  std::string update_backend;
  /// The worst stop over the right-hand sides (in the order of LeastSquaresStop).
  LeastSquaresStop stop = LeastSquaresStop::Converged;
  /// The most refinement steps any right-hand side took.
  int iterations = 0;
  /// With cgls: the most CGLS iterations any right-hand side took over all its steps.
  int inner_iterations = 0;
  /// min_j |r_jj| / max_j |r_jj| of the factors' R, of the order of 1 / kappa(A).
  double diagonal_ratio = 0;
  /// Wall-clock seconds of the QR and of the refinement.
  double factor_seconds = 0, refine_seconds = 0;
};

/// What least_squares() did.
struct LeastSquaresReport {
  /// The last attempt's refinement converged or stagnated for every right-hand side: X holds
  /// FP64-accurate least-squares solutions.
  bool converged = false;
  /// A cheaper attempt failed and FP64 factors (a Cholesky or Householder QR, or the rank-revealing
  /// attempt) produced X.
  bool fell_back = false;
  /// Every attempt, in order.
  std::vector<LeastSquaresAttempt> attempts;
  /// ||b_j - A x_j||_2 for each column of X, in FP64.
  std::vector<double> residual_norms;
  /// The numerical rank: n where X holds least-squares solutions of a full-rank A (and where
  /// nothing was solved), else the rank-revealing attempt's.
  std::int64_t rank = 0;
  /// Where the rank-revealing attempt ran (else 0): its estimate of sigma_max(A) (from below),
  /// the threshold rcond sigma_max it applied, and |r_jj| of its pivoted QR for the last column
  /// kept and the first dropped (0 where none): estimates of sigma_rank(A) and sigma_rank+1(A),
  /// as a pivoted QR's diagonal tracks the singular values.
  double sigma_max_estimate = 0, rank_threshold = 0, sigma_kept_estimate = 0, sigma_dropped_estimate = 0;
  /// The path in one line, e.g. "fp32/augmented(6)", "fp32/cgls(2, 9 inner)", "fp64/unrefined",
  /// "fp32[diverged after 2] -> fp32/x-only(4)",
  /// "fp32[rank undecided] -> fp64-cholqr/semi-normal(3)", "fp32[rank undecided] ->
  /// fp64-cholqr[cholesky breakdown] -> fp64/augmented(2)", "fp32[rank undecided] ->
  /// fp64-cholqr[cholesky breakdown] -> rrqr[rank 63]/cgls(3, 12 inner)" or, where the
  /// rank-revealing attempt keeps every column but its refinement fails,
  /// "... -> rrqr[rank 30][diverged after 3] -> fp64/augmented(4)".
  std::string path() const;
};

/// Solves min ||B - A X||_F column by column to FP64 accuracy (see the file description).
/// @param ctx     the context (a host-only Context is enough for host matrices).
/// @param a       the m x n matrix A, host or device memory (m < n: host memory, and
///                rank_deficient MinimumNorm: the rank-revealing attempt alone, whatever
///                factorization and fallback say); read, not modified. No NaN
///                or Inf.
/// @param b       the m x k right-hand sides, in A's memory; read, not modified. No NaN or Inf.
/// @param x       the n x k solutions, in A's memory, not overlapping A or B (no byte of its
///                storage range [x.data, x.data + (k - 1) ldx + n) in A's or B's:
///                detail::check_no_overlap); written, but not the rows between n and ldx.
/// @param options the settings (LeastSquaresOptions).
/// @return the report; check LeastSquaresReport::converged. With n = 0 or k = 0 there is nothing
///         to solve: converged, no attempts, residual_norms ||b_j||_2 (X, empty, untouched).
/// @throws InvalidArgument      if a view is malformed, B or X not in A's memory, device
///                              matrices with a host-only ctx, m < n for a device A or under
///                              FullRank (without ridge), B has not m
///                              rows, X not n rows or not B's columns, A or B holds NaN or Inf,
///                              X's storage overlaps A's or B's (the message names both and
///                              their byte ranges), factorization is not FP32, FP64 or Auto,
///                              auto_min_work < -1,
///                              max_iterations < 1, block_size < 0, refinement not one of
///                              LeastSquaresOptions::Refinement's values, or fp32_update
///                              (fp32_vt_c_update) names no FP32 GEMM backend for A's memory,
///                              rank_deficient is not a RankDeficiency, rcond is NaN or >= 1, or
///                              ridge is negative or not finite.
/// @throws RankDeficientMatrix  if A is numerically rank deficient and options.rank_deficient is
///                              FullRank.
/// @throws DeviceError          if a CUDA, cuBLAS or cuSOLVER call fails.
LeastSquaresReport least_squares(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                                 const MatrixView<double>& x, const LeastSquaresOptions& options = {});

/// Factor once, solve many least-squares problems with the same A:
///
///   mixsolve::LeastSquares ls(ctx, A);                      // checks A; nothing factored yet
///   mixsolve::LeastSquaresReport r = ls.solve(B, X);        // factors (and escalates) here
///   r = ls.solve(B2, X2);                                   // refines with the factors that worked
///
/// The first solve runs least_squares()'s path; a later one refines its X with the factors
/// whose refinement was accepted last (an attempt with factor_seconds 0), and where that
/// refinement fails for the new B goes on along the path from the next factors. After a solve
/// that no factors solved, the next one starts the path again. A (host or device) is read in
/// place, never written: it must outlive the object unchanged. A moved-from LeastSquares may only
/// be assigned to or destroyed.
class LeastSquares {
 public:
  /// Checks A and the options and scans A for NaN and Inf; nothing is factored yet.
  /// @param ctx     the context; it must outlive the object. A device A needs a Context with a GPU.
  /// @param a       the m x n matrix A, host or device memory (m < n: as least_squares());
  ///                read in place.
  /// @param options the settings (LeastSquaresOptions).
  /// @throws InvalidArgument as least_squares() for A and the options.
  /// @throws DeviceError     if a CUDA call fails.
  LeastSquares(Context& ctx, const MatrixView<const double>& a, const LeastSquaresOptions& options = {});
  ~LeastSquares();
  LeastSquares(LeastSquares&&) noexcept;
  LeastSquares& operator=(LeastSquares&&) noexcept;

  /// Solves min ||B - A X||_F column by column (least_squares()).
  /// @param b the m x k right-hand sides, in A's memory; read, not modified. No NaN or Inf.
  /// @param x the n x k solutions, in A's memory, not overlapping A or B; written.
  /// @return the report of this solve (its attempts only).
  /// @throws InvalidArgument     as least_squares() for B and X.
  /// @throws RankDeficientMatrix as least_squares().
  /// @throws DeviceError         if a CUDA, cuBLAS or cuSOLVER call fails.
  LeastSquaresReport solve(const MatrixView<const double>& b, const MatrixView<double>& x);

  /// @return the precision of the factors the next solve refines with first (Precision::Auto
  ///         before the first solve and after one that no factors solved).
  Precision precision() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mixsolve
