// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// The settings of solve() and Factorization (mixsolve/solvers/solve.hpp): the factorization
/// precisions, the structure of A, the refinement method and stop test, and SolveOptions, with
/// the names the options table (mixsolve/solvers/options.hpp) reads and writes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mixsolve/slfp/blas.hpp"

namespace mixsolve {

/// Arithmetic of the LU factorization. All but FP64 and Ozaki store the factors in FP32 and
/// differ in the GEMM backend of the trailing updates: FP32 (cublas-sgemm), TF32 (cublas-tf32),
/// FP16 / BF16 (tensor cores, inputs rounded), Halfhalf / Tf32tf32 (the corrected tensor-core
/// SGEMM of gemm/, about FP32-accurate), Fp16x3 (FP16 hi/lo split, three products in one FP16
/// tensor-core GEMM of inner dimension 3k on operands scaled by powers of two: cublas-fp16x3; ~22
/// bits, at close to the cost of an FP16 update because the update is bound by reading and
/// writing A22). Ozaki: FP64-stored factors whose trailing updates keep SolveOptions::ozaki_bits
/// bits of each operand (default 40): on the GPU an LU with wide outer blocks (4096 columns) whose
/// updates run on dgemm-auto (the INT8 emulation ozaki2-int8 where its cost model predicts it
/// faster than DGEMM, else DGEMM), on the host the model host-ozaki2-int8.
/// Auto: SolveOptions::auto_path, escalating (SolveOptions::factorization); not a precision of
/// its own. Names (to_string, parse_precision): "fp64", "fp32", "tf32", "fp16", "bf16",
/// "halfhalf", "tf32tf32", "fp16x3", "ozaki", "auto".
enum class Precision { FP64, FP32, TF32, FP16, BF16, Halfhalf, Tf32tf32, Fp16x3, Ozaki, Auto };

/// What solve() may assume of A (SolveOptions::structure). Names (to_string, parse_structure):
/// "general", "spd", "auto".
enum class Structure {
  /// Any square A: LU factorizations with partial pivoting.
  General,
  /// A is symmetric positive definite: Cholesky factorizations (A = L L^T of the lower triangle),
  /// half the LU's arithmetic and no pivoting; refinement works with all of A, so A must be
  /// symmetric (checked: InvalidArgument). A cheaper Cholesky that breaks down (a pivot that is
  /// not positive in its arithmetic) escalates like a failed LU; where the FP64 Cholesky breaks
  /// down, solve() throws NotPositiveDefinite.
  Spd,
  /// A symmetric A (checked exactly, in one pass over A) is treated as Spd, except that where A
  /// turns out not to be positive definite (a cheaper Cholesky's pivot negative beyond its
  /// arithmetic's rounding, or the FP64 Cholesky's breakdown) the solve goes on with the LU path
  /// (SolveOptions::factorization) instead of throwing; any other A as General. A cheaper
  /// Cholesky's breakdown within its rounding goes to the next Cholesky rung, as under Spd (with
  /// fallback off there may be none: the solve then returns no iterate).
  Auto,
};

/// The factorization an attempt used (Attempt::factor). Names (to_string): "LU", "Cholesky".
enum class FactorKind { Lu, Cholesky };

/// The refinement method of an attempt (SolveOptions::refinement). Names (to_string,
/// parse_refinement): "none", "classic", "gmres", "auto".
enum class Refinement {
  /// One solve with the factors, no refinement.
  None,
  /// x += LU \ (b - A x): updates in FP64, residuals in SolveOptions::residual_precision.
  Classic,
  /// GMRES-IR: the correction from GMRES on A d = r preconditioned by the LU (FP64).
  Gmres,
  /// Classic first; when it stalls (stagnates, diverges or reaches max_iterations), or contracts
  /// so slowly that from its 5th step its rate predicts more than 15 further steps
  /// (StopReason::TooSlow), Gmres with the same factors (no refactorization). The retry is made
  /// for factors cheaper than FP64, and only where no other factorization short of FP64 remains
  /// on the precision path (else that one is tried next).
  Auto,
};

/// When refinement ends for a right-hand side. Either way the solve reports it as converged only
/// where the returned x meets the LAPACK test (SolveReport::converged_rhs).
/// Names (to_string, parse_stop_test): "attainable", "lapack".
enum class StopTest {
  /// Refine to the attainable accuracy, as LAPACK's dgerfs and xGERFSX do: a right-hand side is
  /// done once it meets the LAPACK test, a step fails to halve its backward error (componentwise
  /// where A is badly scaled: SolveReport::componentwise_backward_error) and, with factors cheaper
  /// than FP64, its correction no longer halves or it or the next one extrapolated from the last
  /// two has fallen to FP64's rounding of x (the forward error can still fall after the backward
  /// error has reached its floor; at most 4 such steps). With double-double residuals
  /// (ResidualPrecision) it is also done once its next correction, extrapolated from the last two
  /// (the first solve's x the first), falls to FP64's rounding of x, for FP64 factors too.
  /// dgerfs also stops at a backward error of u = 2^-53; a normwise one below u can still fall by
  /// orders of magnitude where A is badly scaled.
  /// The answer is then as accurate as the FP64 LU's; it costs two or three steps beyond Lapack
  /// (each a pass over A and a triangular-solve pair).
  Attainable,
  /// LAPACK's dsgesv and cuSOLVER IRS: done once
  ///   ||r||_inf < tolerance_factor * sqrt(n) * ||x||_inf * ||A||_inf * eps_64,
  /// a backward error up to sqrt(n) eps, up to ~100x that of an FP64 LU at n ~ 10^4.
  Lapack,
};

/// The arithmetic of refinement's residuals r = b - A x (SolveOptions::residual_precision).
/// Names (to_string, parse_residual_precision): "auto", "fp64", "double-double".
enum class ResidualPrecision {
  /// DoubleDouble for B of at most kDoubleDoubleResidualMaxColumns columns, Fp64 for more
  /// (SolveReport::residual_precision says which).
  Auto,
  /// FP64, one pass over A (a GEMV; a GEMM for several right-hand sides). Refinement then reaches
  /// a forward error of about u cond(A, x), u = 2^-53: that of the FP64 LU or Cholesky, sometimes
  /// a few times more.
  Fp64,
  /// Each entry as accurate as if summed in twice FP64's precision and rounded once (Dot2 of Ogita,
  /// Rump & Oishi): refinement then reaches a forward error near u wherever it converges, not
  /// u cond(A, x), as LAPACK's xGERFSX with extra-precise residuals. A pass over A per right-hand
  /// side (four at a time), at about the memory's pace for one to four; for many right-hand sides
  /// slower than an FP64 GEMM.
  DoubleDouble,
};

/// ResidualPrecision::Auto: the most right-hand sides that get double-double residuals.
inline constexpr std::int64_t kDoubleDoubleResidualMaxColumns = 8;

/// When the solve estimates cond_inf(A) and bounds the forward error (SolveReport::
/// condition_estimate): Higham's 1-norm estimator (LAPACK's xGECON) on A^-T with the factors in
/// use, 2 to 11 solves with them or their transpose, once per factorization. The transposed solves
/// go through cuBLAS trsv, whose one-vector solves are far below the memory's pace: the estimate
/// costs a tenth or so of a cheap solve (docs/solver.md, "The numbers behind the defaults").
/// Names (to_string, parse_condition_estimate): "never", "when-not-converged", "always".
enum class ConditionEstimate {
  /// Never estimate.
  Never,
  /// Only for a solve that did not meet the LAPACK test: why, and how far off x may be.
  WhenNotConverged,
  /// After every solve.
  Always,
};

/// The name of a precision, as parse_precision() reads it.
/// @param p a precision.
/// @return "fp64", "fp32", "tf32", "fp16", "bf16", "halfhalf", "tf32tf32", "fp16x3", "ozaki" or
///         "auto".
std::string to_string(Precision p);
/// The name of a structure, as parse_structure() reads it.
/// @param s a structure.
/// @return "general", "spd" or "auto".
std::string to_string(Structure s);
/// Reads a structure's name.
/// @param text "general", "spd" or "auto" (exact, lower case).
/// @return the structure.
/// @throws InvalidArgument for any other text.
Structure parse_structure(const std::string& text);
/// The name of a factorization kind, for reports.
/// @param k a kind.
/// @return "LU" or "Cholesky".
std::string to_string(FactorKind k);
/// The name of a refinement method, as parse_refinement() reads it.
/// @param r a method.
/// @return "none", "classic", "gmres" or "auto".
std::string to_string(Refinement r);
/// The name of a residual precision, as parse_residual_precision() reads it.
/// @param p a residual precision.
/// @return "auto", "fp64" or "double-double".
std::string to_string(ResidualPrecision p);
/// Reads a residual precision's name.
/// @param text "auto", "fp64" or "double-double" (exact, lower case).
/// @return the residual precision.
/// @throws InvalidArgument for any other text.
ResidualPrecision parse_residual_precision(const std::string& text);
/// The name of a stop test, as parse_stop_test() reads it.
/// @param t a stop test.
/// @return "attainable" or "lapack".
std::string to_string(StopTest t);
/// Reads a stop test's name.
/// @param text "attainable" or "lapack" (exact, lower case).
/// @return the stop test.
/// @throws InvalidArgument for any other text.
StopTest parse_stop_test(const std::string& text);
/// The name of a ConditionEstimate setting, as parse_condition_estimate() reads it.
/// @param c a setting.
/// @return "never", "when-not-converged" or "always".
std::string to_string(ConditionEstimate c);
/// Reads a ConditionEstimate setting's name.
/// @param text "never", "when-not-converged" or "always" (exact, lower case).
/// @return the setting.
/// @throws InvalidArgument for any other text.
ConditionEstimate parse_condition_estimate(const std::string& text);
/// Reads a precision's name.
/// @param text "fp64", "fp32", "tf32", "fp16", "bf16", "halfhalf", "tf32tf32", "fp16x3",
///             "ozaki" or "auto" (exact, lower case).
/// @return the precision.
/// @throws InvalidArgument for any other text; the message lists the names.
Precision parse_precision(const std::string& text);
/// Reads a refinement method's name.
/// @param text "none", "classic", "gmres" or "auto" (exact, lower case).
/// @return the method.
/// @throws InvalidArgument for any other text.
Refinement parse_refinement(const std::string& text);

/// The settings of solve() and Factorization; the defaults suit most uses. Factorization's
/// constructor checks them (InvalidArgument).
struct SolveOptions {
  // ---- What most users set ----
  /// The factorization precision. Auto tries the factorizations of auto_path in order
  /// (cholesky_auto_path for a Cholesky; then FP64 when fallback is on), going up one step when refinement stagnates, diverges, is too slow or
  /// reaches max_iterations, when the LU meets a zero pivot, overflows or its pivots collapse, or
  /// when the probe finds the factors too weak. Another value: that precision (then FP64 when
  /// fallback is on).
  Precision factorization = Precision::Auto;
  /// What may be assumed of A (Structure): General (LU), Spd (Cholesky; A must be symmetric) or
  /// Auto (Cholesky where A is symmetric, the LU path where it is not or turns out not to be
  /// positive definite). The precisions are factorization's, or under Auto auto_path's for an LU
  /// and cholesky_auto_path's for a Cholesky.
  Structure structure = Structure::General;
  /// The refinement method (Refinement); Auto: classic IR, then GMRES-IR on the same factors.
  Refinement refinement = Refinement::Auto;
  /// When refinement ends for a right-hand side (StopTest).
  StopTest stop_test = StopTest::Attainable;
  /// The arithmetic of the residuals (ResidualPrecision). DoubleDouble makes the answer as
  /// accurate as the FP64 solvers' or more, Fp64 the residuals of many right-hand sides cheaper;
  /// Auto takes DoubleDouble for up to kDoubleDoubleResidualMaxColumns right-hand sides.
  ResidualPrecision residual_precision = ResidualPrecision::Auto;
  /// The LAPACK test (StopTest), per right-hand side:
  ///   ||r||_inf < tolerance_factor * sqrt(n) * ||x||_inf * ||A||_inf * eps_64.
  /// The driver asks its computed residual for 0.95 of that bound, a margin for the residual's
  /// own rounding, so that the true residual of a converged solution meets the test. Must be > 0
  /// and finite (InvalidArgument).
  double tolerance_factor = 1.0;
  /// Refinement steps per attempt: outer iterations (both methods); a GMRES-IR retry on the same
  /// factors (Refinement::Auto) counts its own. Must be >= 0 (0: the first solve only).
  int max_iterations = 30;
  /// Refactor in FP64 when refinement fails at the requested precision (for Auto: whether FP64 is
  /// the last step of the escalation). The report says when it happened.
  bool fallback = true;
  /// When to estimate cond_inf(A) and bound the forward error (ConditionEstimate;
  /// SolveReport::condition_estimate).
  ConditionEstimate condition_estimate = ConditionEstimate::WhenNotConverged;
  /// Called at the start of each phase ("factorization fp16", "refinement gmres", ...), e.g. to
  /// print progress during long solves. May be empty. The phase texts are "factorization <p>
  /// (n = <n>)" ("factorization <p> Cholesky (n = <n>)" for a Cholesky; prefixed "fallback: "
  /// for an FP64 one after a cheaper one), "probe of the <p>
  /// factors", "refinement <method> with <p> factors (<k> right-hand side(s))" and "condition
  /// estimate".
  std::function<void(const std::string& phase)> progress;

  // ---- Expert options: the rungs, refinement's budgets and formats, the factorizations'
  // knobs. What each does and the measurements behind the defaults: docs/solver.md ("Options a
  // user tunes", "The numbers behind the defaults"), docs/robustness.md, docs/slfp.md. ----
  /// The precisions Auto tries for an LU, in order. Must not be empty or contain Auto (checked
  /// where factorization is Auto).
  std::vector<Precision> auto_path = {Precision::Fp16x3};
  /// Under Auto, an LU of fewer rows than this is factored in FP64 at once (the cheap path does
  /// not pay there). -1: the engine's choice, 12288 for device matrices, 0 for host matrices
  /// (whose cheap factorizations are rounding models, there to exercise the logic at small n).
  /// Must be >= -1.
  std::int64_t auto_min_n = -1;
  /// Under Auto, an LU whose path starts above FP16 (fp16x3 by default) tries an FP16 LU first
  /// where A is close to its diagonal: where an estimate of ||D^-1 (A - D)||_2, D = diag(A), is
  /// at most 1/8 (SolveReport::near_diagonal_estimate). There the one-product FP16 LU
  /// preconditions as well as fp16x3's three products (HPL-MxP's matrices: random entries and a
  /// dominant diagonal); where its refinement fails anyway, auto_path follows. That LU keeps A's
  /// row order and pivots only inside its diagonal blocks (Attempt::pivot_order
  /// PivotOrder::DiagonalBlocks), with multipliers up to kReusedOrderMaxMultiplier, else it starts
  /// over with partial pivoting (DiagonalBlocksRejected). The screen reads
  /// five columns' worth of A for most matrices, and up to six FP64 mat-vecs more for those it
  /// does not rule out (docs/solver.md).
  bool fp16_when_near_diagonal = true;
  /// auto_path for a Cholesky (structure Spd, or Auto on a symmetric A); the LU path after an
  /// indefinite A under Structure::Auto keeps auto_path. Must not be empty or contain Auto.
  std::vector<Precision> cholesky_auto_path = {Precision::Halfhalf};
  /// auto_min_n for a Cholesky. -1: the engine's choice, 24576 for device matrices, 0 for host
  /// matrices. Must be >= -1.
  std::int64_t cholesky_auto_min_n = -1;
  /// GMRES's restart length (Krylov vectors per cycle), >= 1.
  int gmres_restart = 50;
  /// GMRES iterations per outer step and right-hand side, >= 1; also a budget: an outer step
  /// whose convergence rate predicts more ends the attempt (StopReason::TooSlow).
  int gmres_max_inner = 200;
  /// The format GMRES stores its Krylov basis in (slfp/blas.hpp): Fp64, or an SLFP format with
  /// FP64's exponent range (slfp64in56b .. slfp64in16b; an FP32-based one is an InvalidArgument).
  /// Shorter formats read fewer bytes and can cost outer steps. A stored basis is not counted in
  /// SolveReport::peak_workspace_bytes.
  slfp::Format krylov_basis_format = slfp::Format::Fp64;
  /// The format refinement reads FP32-stored factors in: Fp32, or an SLFP format no wider
  /// (slfp32in24b, slfp32in16b, slfp64in32b, slfp64in24b, slfp64in16b), rounded from them after
  /// each factorization; fewer bits can cost iterations. On the device the packed copy is held
  /// beside the FP32 factors (counted in peak_workspace_bytes).
  slfp::Format factor_storage = slfp::Format::Fp32;
  /// With a higher rung left, a GMRES attempt also ends as TooSlow where the rest of its inner
  /// solve is predicted to take longer than twice its factorization (the cost of refactoring one
  /// rung up). Makes the precision path depend on timing.
  bool escalate_by_cost = true;
  /// An FP64 LU after a cheaper LU follows that LU's row order where it can be trusted, pivoting
  /// only inside each diagonal block; a multiplier above kReusedOrderMaxMultiplier, a zero pivot
  /// in a block or a failed refinement sends it back to partial pivoting (Attempt::pivot_order,
  /// Attempt::reused_columns). Cholesky factorizations have no row order.
  bool reuse_pivot_order = true;
  /// The screen of the probe and of the collapse watch, for cheaper factors with a higher rung
  /// left: where min |u_kk| / max |u_kk| lies below probe_pivot_ratio x u / 2^-24 (u: the
  /// factorization's unit roundoff), n > gmres_max_inner and n >= 16, the probe estimates how far
  /// (LU)^-1 A is from I in 4 random directions and ends the attempt as WeakFactors from
  /// kWeakFactorsProbe on; an LU of FP32 accuracy whose pivots collapse below that ratio (at
  /// least 256 and most of them) stops part way (CollapsedPivots). 0: never probe; INFINITY:
  /// probe every such attempt (and no collapse watch). NaN or a negative value is an
  /// InvalidArgument.
  double probe_pivot_ratio = 1e-4;
  /// Power-of-two range scaling of FP16, BF16 and fp16x3 factorizations (Higham, Pranesh &
  /// Zounon 2019): mu A, or mu R A S where A's rows' or columns' largest entries spread over more
  /// than 2^12 (symmetric, mu S A S, for a Cholesky); exact, and refinement works with A itself.
  /// Off: A is rounded as it is, and an overflow escalates.
  bool range_scaling = true;
  /// LU block size; 0: the memory space's choice (256 on the GPU, which takes at most 256; 32 on
  /// the host, where it is also the Cholesky's leaf width). Must be >= 0.
  int block_size = 0;
  /// The bits of each operand a Precision::Ozaki LU's trailing updates keep, in [kOzakiMinBits,
  /// kOzakiMaxBits]: its accuracy knob (factors about as accurate as an LU of unit roundoff
  /// 2^-bits).
  int ozaki_bits = 40;
};

/// The range of SolveOptions::ozaki_bits.
inline constexpr int kOzakiMinBits = 16, kOzakiMaxBits = 53;

/// SolveOptions::probe_pivot_ratio: the probe's estimate from which cheaper factors are too far
/// from A to refine (docs/solver.md, "The numbers behind the defaults").
inline constexpr double kWeakFactorsProbe = 4.0;

/// SolveOptions::reuse_pivot_order: the largest multiplier |l_ij| a reused row order may produce
/// (threshold pivoting with threshold 1e-6; docs/robustness.md); also the bound of the near-
/// diagonal FP16 LU's pivoting inside its diagonal blocks (SolveOptions::fp16_when_near_diagonal).
inline constexpr double kReusedOrderMaxMultiplier = 1e6;

}  // namespace mixsolve
