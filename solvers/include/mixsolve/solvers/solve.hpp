// SPDX-License-Identifier: BSD-3-Clause
// Solve A X = B (A square, B with one or several right-hand sides) to FP64 accuracy: factorize A
// in a cheaper arithmetic, refine in FP64, escalate the precision when refinement fails.
//
//   mixsolve::SolveReport r = mixsolve::solve(ctx, A, B, X);          // defaults below
//
// A, B, X are views in host or device memory (all three in the same one); A and B are not
// modified. Host matrices are solved with the host backends (Eigen, and gemm/'s models of the
// tensor-core roundings for the cheaper precisions), so the whole logic runs without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve {

// Arithmetic of the LU factorization. All but FP64 store the factors in FP32 and differ in the
// GEMM backend of the trailing updates: FP32 (cublas-sgemm), TF32 (cublas-tf32), FP16 / BF16
// (tensor cores, inputs rounded), Halfhalf / Tf32tf32 (the corrected tensor-core SGEMM of
// gemm/, about FP32-accurate), Fp16x3 (FP16 hi/lo split, three products in one FP16 tensor-core
// GEMM of inner dimension 3k on operands scaled by powers of two: cublas-fp16x3; ~22 bits, at
// close to the cost of an FP16 update because the update is bound by reading and writing A22).
enum class Precision { FP64, FP32, TF32, FP16, BF16, Halfhalf, Tf32tf32, Fp16x3, Auto };

enum class Refinement {
  None,     // one solve with the factors, no refinement
  Classic,  // x += LU \ (b - A x), residuals and updates in FP64
  Gmres,    // GMRES-IR: the correction from GMRES on A d = r preconditioned by the LU (FP64)
  Auto,     // Classic first; when it stalls, or contracts so slowly that from its 5th step its
            // rate predicts more than 15 further steps (StopReason::TooSlow), Gmres with the same
            // factors (no refactorization)
};

// When refinement ends for a right-hand side. Either way the solve reports it as converged only
// where the returned x meets the LAPACK test (SolveReport::converged_rhs).
enum class StopTest {
  // Refine to the attainable accuracy, as LAPACK's dgerfs and xGERFSX do: a right-hand side is
  // done once it meets the LAPACK test, a step fails to halve its backward error (componentwise
  // where A is badly scaled: SolveReport::componentwise_backward_error) and, with factors cheaper
  // than FP64, its correction no longer halves or it or the next one extrapolated from the last
  // two has fallen to FP64's rounding of x (the forward error can still fall after the backward
  // error has reached its floor; at most 4 such steps). dgerfs also stops at a backward error of u =
  // 2^-53; a normwise one below u can still fall by orders of magnitude where A is badly scaled.
  // The answer is then as accurate as the FP64 LU's; it costs two or three steps beyond Lapack
  // (each a pass over A and a triangular-solve pair).
  Attainable,
  // LAPACK's dsgesv and cuSOLVER IRS: done once
  //   ||r||_inf < tolerance_factor * sqrt(n) * ||x||_inf * ||A||_inf * eps_64,
  // a backward error up to sqrt(n) eps, up to ~100x that of an FP64 LU at n ~ 10^4.
  Lapack,
};

// When the solve estimates cond_inf(A) and bounds the forward error (SolveReport::
// condition_estimate): Higham's 1-norm estimator (LAPACK's xGECON) on A^-T with the factors in
// use, 2 to 11 solves with them or their transpose, once per factorization. The transposed solves
// go through cuBLAS trsv, whose one-vector solves are far below the memory's pace: on the H100
// the estimate takes 12 ms at n = 16384 and 24 ms at n = 32768, 9-15% of an fp16x3 solve.
enum class ConditionEstimate {
  Never,
  WhenNotConverged,  // only for a solve that did not meet the LAPACK test: why, and how far off x may be
  Always,
};

std::string to_string(Precision p);
std::string to_string(Refinement r);
std::string to_string(StopTest t);
StopTest parse_stop_test(const std::string& text);    // "attainable", "lapack"
std::string to_string(ConditionEstimate c);
ConditionEstimate parse_condition_estimate(const std::string& text);  // "never", "when-not-converged", "always"
Precision parse_precision(const std::string& text);    // "fp16", "halfhalf", "auto", ...
Refinement parse_refinement(const std::string& text);  // "none", "classic", "gmres", "auto"

struct SolveOptions {
  // Auto tries the factorizations of auto_path in order (then FP64 when fallback is on), going up
  // one step when refinement stagnates, diverges or is too slow, when the LU meets a zero pivot,
  // overflows or its pivots collapse, or when the probe finds the factors too weak.
  Precision factorization = Precision::Auto;
  // Default {Fp16x3}: factors as accurate as FP32's at about the cost of an FP16 LU, so a second
  // cheap rung (FP32) would repeat an LU of the same accuracy at a higher cost (docs/solver.md,
  // "Precisions and the default path"). With FP64 next, a stalled classic IR gets a GMRES-IR
  // retry on the same factors first. Must not be empty or contain Auto.
  std::vector<Precision> auto_path = {Precision::Fp16x3};
  // Under Auto, matrices with fewer rows than this are factored in FP64 at once: below it the
  // cheap LU and its refinement are no faster than an FP64 solve (H100, cond 1e2: fp16x3 0.91x
  // dgetrf+getrs at n = 8192, 1.12x at n = 12288). -1: the engine's choice, 12288 for device
  // matrices and 0 for host matrices (the host engine's cheap factorizations are rounding
  // models, there to exercise the refinement and escalation logic at small n).
  std::int64_t auto_min_n = -1;
  Refinement refinement = Refinement::Auto;
  StopTest stop_test = StopTest::Attainable;
  // The LAPACK test (StopTest), per right-hand side:
  //   ||r||_inf < tolerance_factor * sqrt(n) * ||x||_inf * ||A||_inf * eps_64.
  // The driver asks its computed FP64 residual for 0.95 of that bound, a margin for the residual's
  // own rounding, so that the true residual of a converged solution meets the test.
  double tolerance_factor = 1.0;
  // Refinement steps per factorization: outer iterations (both methods).
  int max_iterations = 30;
  // GMRES: restart length and total inner iterations per outer step and right-hand side. The
  // inner iteration limit is also a budget: at each restart (from 16 iterations on), and in an
  // attempt's first outer step also every 8 iterations inside a cycle (on the rate of the last
  // 16), an outer step whose convergence rate predicts more than gmres_max_inner iterations ends
  // the attempt (StopReason::TooSlow), so a preconditioner too weak for the matrix is dropped
  // early. An outer GMRES step that does not halve the backward error also ends it.
  int gmres_restart = 50;
  int gmres_max_inner = 200;
  // When a higher rung remains (auto's next precision, or the FP64 fallback), a GMRES attempt
  // also ends as TooSlow at those judgements if the predicted time of the rest of the current inner
  // solve exceeds twice the time its factorization took: the estimate of what refactoring one
  // rung up costs (on the H100 the FP64 LU takes 1.55x / 2.25x the fp16x3 LU at n = 16384 /
  // 32768, the FP32 LU ~2x the FP16 LU), after which a few steps usually converge. The time
  // already spent does not count (it is spent either way). The rule calibrates itself on the
  // machine (measured times) but makes the path depend on timing.
  bool escalate_by_cost = true;
  // Refactor in FP64 when refinement fails at the requested precision (for Auto: whether FP64 is
  // the last step of the escalation). The report says when it happened.
  bool fallback = true;
  // An FP64 factorization that follows a cheaper one (the fallback, or auto's last rung) takes
  // over the cheaper LU's row order: the rows are put in that order first and pivots are then
  // searched only inside each 256 x 256 diagonal block, so the panels need no search over the
  // column and no interchange beyond the block (L21 = A21 U11^-1 by a GEMM). Only the leading
  // panels whose cheaper pivots stood above that LU's rounding error follow the order; the rest
  // pivot partially (Attempt::reused_columns). A multiplier |l_ij| above
  // kReusedOrderMaxMultiplier (below), a zero pivot in a diagonal block or a non-finite entry
  // rejects the order, on the GPU a few panels after one shows it, and the LU is redone with partial
  // pivoting; so is one whose FP64 refinement fails. Attempt::pivot_order says which happened.
  bool reuse_pivot_order = true;
  // Probe of a cheaper factorization where a higher rung remains (auto's next precision, or the
  // FP64 fallback), before any refinement. With E = (LU)^-1 A - I (how far the preconditioned
  // operator is from I, with A^-1 applied as refinement applies it) and Omega n x 4 random, the
  // 4th singular value of E Omega over ||Omega||_2 is a lower bound on E's 4th singular value,
  // and for a random Omega about the root mean square of E's singular values beyond its 3
  // largest. From kWeakFactorsProbe (below) on, the LU is far off in a large share of
  // directions, which GMRES-IR would have to resolve one by one: the attempt ends at once
  // (StopReason::WeakFactors) instead of after a refinement that fails. A few outlying
  // directions (a handful of tiny singular values) leave the estimate small. Costs a product of
  // A with 4 vectors and one 4-vector triangular-solve pair (H100: 3.4 ms at n = 16384, 9.3 ms
  // at 32768), so it is taken only where the LU's pivots hint at trouble: min |u_kk| / max |u_kk|
  // (Attempt::pivot_ratio) below probe_pivot_ratio x u / 2^-24 (u: the factorization's unit
  // roundoff; 2^-24 for FP32-stored factors of FP32 accuracy, 2^-11 for FP16 and TF32, 2^-8 for
  // BF16), and where n exceeds gmres_max_inner (below that, GMRES's budget spans the whole
  // space). 0: never probe; INFINITY: probe every such attempt. H100, fp16x3, `geo` and `arith`
  // at cond 1e2 .. 1e10, n = 16384 / 32768: pivot ratios 1.4e-5 - 2.2e-5 (and 3e-6) where
  // refinement fails (`geo` 1e8, 1e10), 2.7e-4 and more where it converges.
  // The same bound stops an LU of FP32 accuracy (u = 2^-24) part way where its pivots collapse:
  // once at least 256 of its pivots, and more than half of those so far, lie below
  // probe_pivot_ratio times the largest so far (StopReason::CollapsedPivots; a Hilbert matrix
  // at column ~260 of 16384). Not with INFINITY.
  double probe_pivot_ratio = 1e-4;
  // Range scaling of FP16, BF16 and fp16x3 factorizations (Higham, Pranesh & Zounon 2019,
  // "Squeezing a matrix into half precision"): they factor mu A, a power of two times A with its
  // largest entry in [1/2, 1); where A's rows' or columns' largest entries spread over more than
  // 2^12, mu R A S with diagonal R and S (powers of two, so every scaling is exact) that bring
  // each row's and column's largest entry into [1/2, 1). A is scaled in FP64 before it is rounded
  // to the factors' FP32 storage, so entries beyond FP32's range then factorize, and for FP16
  // entries beyond its range or near its underflow (BF16 and fp16x3, whose products scale their
  // operands by powers of two themselves, keep FP32's exponent range). Refinement works with A
  // itself. Off: A is rounded as it is, and an overflow escalates. FP64, FP32, TF32, Halfhalf
  // and Tf32tf32 factorizations are never scaled.
  bool range_scaling = true;
  ConditionEstimate condition_estimate = ConditionEstimate::WhenNotConverged;
  // LU block size; 0 picks one for the matrix size and memory space (the GPU LU takes at most 256).
  int block_size = 0;
  // Called at the start of each phase ("factorization fp16", "refinement gmres", ...), e.g. to
  // print progress during long solves. May be empty.
  std::function<void(const std::string& phase)> progress;
};

// SolveOptions::probe_pivot_ratio: the probe's estimate at and above which a cheaper LU is too
// far from A to refine. H100, fp16x3, n = 16384 / 32768, `geo` and `arith` at cond 1e2 .. 1e10:
// 25 to 43 where refinement fails (`geo` 1e8 and 1e10), at most 0.77 where it converges (n =
// 32768, `geo` 1e6: GMRES-IR, 32 iterations; the rest 0.37 and below). 4 leaves a factor of ~5
// to either side, for the run-to-run variation of the cheap LU and for other matrices.
inline constexpr double kWeakFactorsProbe = 4.0;

// Why one factorization's refinement stopped.
enum class StopReason {
  Converged, ZeroPivot, Overflow, Stagnated, Diverged, MaxIterations, TooSlow, NoRefinement,
  WeakFactors,  // the probe of the factors (SolveOptions::probe_pivot_ratio) found them too far from A
  CollapsedPivots,  // most of the LU's pivots so far were tiny: stopped part way (probe_pivot_ratio)
};
std::string to_string(StopReason s);

// SolveOptions::reuse_pivot_order: an FP64 LU that follows a cheaper LU's row order (pivoting
// only inside the diagonal blocks) keeps it while every multiplier |l_ij| stays within this
// bound: threshold pivoting with threshold 1e-6, a guard against an order that is plainly wrong
// for the FP64 values (partial pivoting keeps |l_ij| <= 1; sparse solvers use thresholds of 0.1
// to 0.01). Accuracy is judged by the FP64 refinement's stop test, and an FP64 refinement that
// fails with a reused order is redone with partial pivoting. Measured with fp16x3 orders (H100):
// max |l_ij| 33 (n = 2100, geo cond 1e12), 780-1200 (n = 16384, geo 1e8-1e10), 230-5100 (n =
// 32768), and in every case the first FP64 solve met the stop test; the late Schur complements
// of such matrices lie below fp16x3's rounding error, so its pivots there follow that error.
inline constexpr double kReusedOrderMaxMultiplier = 1e6;

// How a factorization chose its row interchanges (SolveOptions::reuse_pivot_order).
enum class PivotOrder {
  Partial,   // partial pivoting, as LAPACK's getrf
  Reused,    // the previous factorization's row order, pivoting inside each diagonal block
  Rejected,  // Reused failed its check and the LU was redone with partial pivoting (both count)
};
std::string to_string(PivotOrder o);

struct Attempt {
  Precision precision = Precision::FP64;
  Refinement refinement = Refinement::Classic;
  StopReason stop = StopReason::Converged;
  std::int64_t zero_pivot_column = -1;  // for StopReason::ZeroPivot
  std::int64_t collapsed_at_column = -1;  // for StopReason::CollapsedPivots: up to which column
  bool range_scaled = false;            // the LU factored mu R A S (SolveOptions::range_scaling)
  PivotOrder pivot_order = PivotOrder::Partial;
  double largest_multiplier = 0;        // max |l_ij| of a reused row order (Reused, Rejected)
  // Reused: the leading columns that followed the order (SolveOptions::reuse_pivot_order); the
  // rest pivoted partially, where the cheaper LU's pivots had fallen to its rounding error.
  std::int64_t reused_columns = 0;
  // min |u_kk| / max |u_kk| of a cheaper LU that the probe could judge (SolveOptions::
  // probe_pivot_ratio's screen); 0 where it was not computed (FP64, nothing higher left, small n).
  double pivot_ratio = 0;
  // The probe's estimate of the 4th singular value of (LU)^-1 A - I (SolveOptions::
  // probe_pivot_ratio); negative where the factors were not probed. Its time counts in
  // refinement_seconds.
  double probe_estimate = -1;
  int iterations = 0;                   // outer refinement iterations
  int inner_iterations = 0;             // GMRES iterations, all right-hand sides
  double factorization_seconds = 0, refinement_seconds = 0;
};

struct SolveReport {
  // Every right-hand side's returned x meets the LAPACK test (SolveOptions::tolerance_factor),
  // under either StopTest.
  bool converged = false;
  std::vector<bool> converged_rhs;
  // The returned X holds, for each right-hand side, the iterate with the smallest backward error
  // of every solve and refinement step of every attempt: never one that refinement made worse.
  // backward_error: its normwise backward error (max over the right-hand sides);
  // stop_test_backward_error: about what the LAPACK test asks (tolerance_factor sqrt(n) 2^-53),
  // so a solve that did not converge says how close it got; returned_earlier_iterate: for some
  // right-hand side the returned x is not the last iterate computed.
  double backward_error = 0;
  double stop_test_backward_error = 0;
  // Where A's rows' or columns' largest entries spread over more than 2^12 (badly scaled: the
  // two-sided range scaling's criterion), refinement judges iterates, and picks the returned
  // one, by the componentwise backward error max_i |b - A x|_i / (|A| |x| + |b|)_i (Oettli and
  // Prager; LAPACK dgerfs's BERR), which row scaling does not change: this is the returned X's
  // (max over the right-hand sides). 0 for other matrices (not computed).
  double componentwise_backward_error = 0;
  bool returned_earlier_iterate = false;
  // SolveOptions::condition_estimate: an estimate of cond_inf(A) = ||A||_inf ||A^-1||_inf from the
  // factors in use (Higham's estimator, a lower bound up to the factors' accuracy: FP64 factors,
  // or cheap ones that refinement made converge), and the normwise bound on the returned X's
  // forward error ||x - x_true||_inf / ||x||_inf <= ||A^-1|| (||r|| + (n + 1) u (||A|| ||x|| +
  // ||b||)) / ||x|| (Higham, "Accuracy and Stability of Numerical Algorithms", §7.7; max over the
  // right-hand sides). 0 where not computed (not asked for, or no factorization completed).
  double condition_estimate = 0;
  double forward_error_bound = 0;
  double condition_seconds = 0;  // the estimate's time (in total_seconds)
  int iterations = 0;                  // outer refinement iterations, all attempts
  // Normwise backward error max_j ||b_j - A x_j||_inf / (||A||_inf ||x_j||_inf + ||b_j||_inf)
  // after each solve (initial and each refinement step), all attempts in order.
  std::vector<double> backward_error_history;
  std::vector<Attempt> attempts;       // the precision path actually taken
  bool fell_back = false;              // an FP64 factorization was needed after a cheaper one
  double factorization_seconds = 0, refinement_seconds = 0, fallback_seconds = 0, total_seconds = 0;
  std::size_t peak_workspace_bytes = 0;

  std::string summary() const;         // one line per attempt, for printing
};

// Exactly singular A: zero pivot in the FP64 factorization.
class SingularMatrix : public Error {
 public:
  SingularMatrix(const std::string& message, std::int64_t column) : Error(message), column_(column) {}
  std::int64_t column() const { return column_; }

 private:
  std::int64_t column_;
};

SolveReport solve(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                  const MatrixView<double>& x, const SolveOptions& options = {});

// Factor once, solve many: the factorization (and any escalation) happens on the first solve;
// later solves reuse the factors of the precision that succeeded. A host matrix is copied (an
// FP64 copy for the residuals, and the factors beside it). A device matrix is not: it is read in
// place (its scan in the constructor, its conversion into the factors' own storage, the
// residuals and mat-vecs), so it must outlive the Factorization and stay unchanged. A itself is
// never written.
class Factorization {
 public:
  Factorization(Context& ctx, const MatrixView<const double>& a, const SolveOptions& options = {});
  ~Factorization();
  Factorization(Factorization&&) noexcept;
  Factorization& operator=(Factorization&&) noexcept;

  SolveReport solve(const MatrixView<const double>& b, const MatrixView<double>& x);
  Precision precision() const;  // of the factors in use (Auto before the first solve)

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mixsolve
