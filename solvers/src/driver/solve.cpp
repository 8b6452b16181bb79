// SPDX-License-Identifier: BSD-3-Clause
// The solve driver: argument checks, the precision path (escalation and fallback), the probe, one
// refinement per attempt (refinement.hpp), the best iterate, the condition estimate and the
// report. All arithmetic goes through an Engine (engine.hpp), so host and device share this logic.
#include "mixsolve/solvers/solve.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "refinement/condition_estimate.hpp"
#include "engine.hpp"
#include "precisions.hpp"
#include "refinement/refinement.hpp"
#include "driver/near_diagonal.hpp"
#include "driver/option_checks.hpp"
#include "driver/square_ladder.hpp"
#include "tuning.hpp"

namespace mixsolve {

namespace solvers_detail {

// engine.hpp. The singular values come from the k x k Gram matrices W^T W and Omega^T Omega.
double probe_factors(Engine& e) {
  const int k = kProbeColumns;
  const MatrixView<double> omega = e.scratch(0, k), zeros = e.scratch(1, k), w = e.scratch(2, k);
  e.fill_random(omega, RandomSpec::uniform(-1.0, 1.0, 0x70726f6265ull));
  for (int j = 0; j < k; ++j) e.zero(&zeros(0, j));
  e.residual(omega, zeros, w, ResidualPrecision::Fp64);  // w = -A Omega
  e.apply_inverse(w);           // w = -(LU)^-1 A Omega
  e.add(omega, w);              // w = -W
  std::vector<double> gram_w(k * k), gram_omega(k * k);
  e.gram(w, w, gram_w.data());
  e.gram(omega, omega, gram_omega.data());
  for (double g : gram_w)
    if (!std::isfinite(g)) return NAN;
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> w_eigen(Eigen::Map<Eigen::MatrixXd>(gram_w.data(), k, k),
                                                               Eigen::EigenvaluesOnly);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> omega_eigen(
      Eigen::Map<Eigen::MatrixXd>(gram_omega.data(), k, k), Eigen::EigenvaluesOnly);
  const double w_smallest = w_eigen.eigenvalues().minCoeff(), omega_largest = omega_eigen.eigenvalues().maxCoeff();
  if (!(omega_largest > 0)) return NAN;
  return std::sqrt(std::max(0.0, w_smallest) / omega_largest);
}

}  // namespace solvers_detail

using solvers_detail::Engine;
using solvers_detail::FactorResult;

namespace {

// A double for a message: "0.0001", "-1", "nan", "inf".
std::string number(double v) {
  std::ostringstream text;
  text << v;
  return text.str();
}

// The factorizations SolveOptions::range_scaling applies to (precisions.cpp says why).
bool range_limited(Precision p) { return solvers_detail::precision_info(p).range_limited; }

using solvers_detail::BestIterate;
using solvers_detail::Clock;
using solvers_detail::lapack_stop_test_backward_error;
using solvers_detail::seconds_since;

// SolveOptions::escalate_by_cost: the next rung's factorization is estimated at this multiple of
// the current one's time: on the H100 the device engine's FP64 LU takes 1.55x / 2.25x the fp16x3
// LU at n = 16384 / 32768 (docs/solver.md). With a factor of 1, fp16x3 -> FP64 at n = 32768, cond 1e6
// sends a GMRES with 38 iterations behind it to the FP64 LU (0.53x dgetrf+getrs's speed).
constexpr double kNextRungCostFactor = 2.0;

// The first refinement under Refinement::Auto: classic IR, for every precision. FP16 / BF16 /
// TF32 factors need GMRES-IR (Carson and Higham) once cond * u_low passes ~1, but below that
// classic IR is cheaper per step and overall (FP16 LU at n = 16384, cond 1e2, H100: 15 classic
// steps in 27 ms against 24 GMRES iterations in 70-79 ms); where classic IR stagnates, it does so
// within a few cheap steps and GMRES-IR takes over with the same factors (see solve()).
Refinement resolve_refinement(Refinement r) { return r == Refinement::Auto ? Refinement::Classic : r; }


}  // namespace

struct Factorization::State {
  Context* ctx = nullptr;
  SolveOptions options;
  std::unique_ptr<Engine> engine;
  // The caller's A where the engine reads it in place (device memory: Factorization::solve checks X
  // against it); empty for a host A, copied by the constructor: its storage may since hold X.
  MatrixView<const double> user_a_in_place;
  double norm_a = 0;
  bool badly_scaled = false;  // Engine::badly_scaled: iterates judged componentwise
  std::unique_ptr<solvers_detail::SquareLadder> ladder;  // the rungs (driver/square_ladder.hpp)
  Precision current = Precision::Auto;
  FactorKind current_kind = FactorKind::Lu;
  Refinement current_refinement = Refinement::Classic;  // the method that converged with the factors
  int current_emulated_bits = 0;                         // Attempt::emulated_bits of the current factors
  double current_factor_seconds = 0;                     // the time the current factors took
  bool factored = false;
  // The engine holds factors from a factorization that completed (the last one asked for), and
  // the estimate of ||A^-1||_inf from them (SolveOptions::condition_estimate; < 0: not yet).
  bool factors_complete = false;
  double inverse_norm_estimate = -1;
  double near_diagonal_estimate = -1;  // SolveReport::near_diagonal_estimate
  bool fp16_near_diagonal = false;     // the screen put an FP16 LU first, not yet taken
};

Factorization::Factorization(Context& ctx, const MatrixView<const double>& a, const SolveOptions& options)
    : state_(std::make_unique<State>()) {
  const char* where = "solve";
  detail::check_view(where, "A", a);
  if (a.rows != a.cols)
    throw InvalidArgument(std::string(where) + ": A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ", not square");
  solvers_detail::check_solve_options(where, options);
  State& s = *state_;
  s.ctx = &ctx;
  s.options = options;
  if (a.memory == Memory::Device) {
    s.user_a_in_place = a;
    if (!ctx.has_device()) throw InvalidArgument(std::string(where) + ": A is in device memory but the Context is host-only");
    s.engine = solvers_detail::make_device_engine(ctx, a, options.block_size);
  } else {
    s.engine = solvers_detail::make_host_engine(ctx, a, options.block_size);
  }
  s.engine->set_ozaki_bits(options.ozaki_bits);
  s.engine->set_factor_storage(options.factor_storage);
  // The engine is told the first factorization before anything reads A (the device engine's copy
  // for it rides on the scan for NaN and Inf): the LU's where A is General, or Auto and not
  // symmetric. Under Auto the symmetry check therefore comes first, so that a symmetric A's
  // Cholesky is not preceded by an LU's copy of A (a NaN makes its pair unequal: the scan then
  // names it). Under Spd it comes after the scan, which names a NaN or Inf before it is taken for
  // an asymmetry.
  std::pair<std::int64_t, std::int64_t> asymmetric{-1, -1};
  if (options.structure == Structure::Auto) asymmetric = s.engine->find_asymmetry();
  if (options.structure == Structure::General || (options.structure == Structure::Auto && asymmetric.first >= 0)) {
    const std::vector<solvers_detail::Rung> lu =
        solvers_detail::rung_path(options, FactorKind::Lu, s.engine->n(), *s.engine);
    if (!lu.empty()) s.engine->expect_factorization(lu.front().precision);
  }
  const auto bad = s.engine->find_nonfinite(a);
  if (bad.first >= 0)
    throw InvalidArgument(std::string(where) + ": A(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) +
                          ") is NaN or Inf");
  if (options.structure == Structure::Spd) asymmetric = s.engine->find_asymmetry();
  FactorKind kind = FactorKind::Lu;
  if (options.structure != Structure::General) {
    if (asymmetric.first < 0) kind = FactorKind::Cholesky;
    else if (options.structure == Structure::Spd)
      throw InvalidArgument(std::string(where) + ": structure is spd but A is not symmetric: A(" +
                            std::to_string(asymmetric.first) + ", " + std::to_string(asymmetric.second) + ") != A(" +
                            std::to_string(asymmetric.second) + ", " + std::to_string(asymmetric.first) + ")");
  }
  s.ladder = std::make_unique<solvers_detail::SquareLadder>(
      options, kind, kind == FactorKind::Cholesky && options.structure == Structure::Auto, s.engine->n(), *s.engine);
  // SolveOptions::fp16_when_near_diagonal: an LU path that starts above FP16 (not at FP16, BF16
  // or FP64) gets an FP16 LU first where A is close to its diagonal (driver/near_diagonal.hpp).
  const Precision first = s.ladder->first_precision();
  if (kind == FactorKind::Lu && options.factorization == Precision::Auto && options.fp16_when_near_diagonal &&
      first != Precision::FP16 && first != Precision::BF16 && first != Precision::FP64) {
    s.near_diagonal_estimate = solvers_detail::near_diagonal_estimate(*s.engine, solvers_detail::kNearDiagonalMax);
    if (s.near_diagonal_estimate <= solvers_detail::kNearDiagonalMax) {
      s.ladder->put_first(Precision::FP16);
      s.fp16_near_diagonal = true;
    }
  }
  s.norm_a = s.engine->norm_inf();
  s.badly_scaled = s.engine->badly_scaled();
}

Factorization::~Factorization() = default;
Factorization::Factorization(Factorization&&) noexcept = default;
Factorization& Factorization::operator=(Factorization&&) noexcept = default;

Precision Factorization::precision() const { return state_->factored ? state_->current : Precision::Auto; }

namespace {

// ||A^-1||_inf estimated with the engine's current factors (condition_estimate.hpp): the host
// vectors of the estimator go through the engine's scratch slot 0.
double estimate_inverse_norm_inf(Engine& e) {
  const std::int64_t n = e.n();
  double* y = e.scratch(0, 1).data;
  const solvers_detail::LinearOperator inverse = [&](std::vector<double>& v) {
    e.upload(v.data(), y);
    e.apply_inverse(MatrixView<double>{y, n, 1, n, e.memory()});
    e.download(y, v.data());
  };
  const solvers_detail::LinearOperator inverse_transpose = [&](std::vector<double>& v) {
    e.upload(v.data(), y);
    e.apply_inverse_transpose(y);
    e.download(y, v.data());
  };
  return solvers_detail::estimate_inverse_norm_inf(n, inverse, inverse_transpose);
}

}  // namespace

SolveReport Factorization::solve(const MatrixView<const double>& b, const MatrixView<double>& x) {
  State& s = *state_;
  const auto t_start = Clock::now();
  detail::check_view("solve", "B", b);
  detail::check_view("solve", "X", x);
  if (b.rows != s.engine->n())
    throw InvalidArgument("solve: B has " + std::to_string(b.rows) + " rows but A is " + std::to_string(s.engine->n()) +
                          " x " + std::to_string(s.engine->n()));
  if (x.rows != b.rows || x.cols != b.cols)
    throw InvalidArgument("solve: X is " + std::to_string(x.rows) + " x " + std::to_string(x.cols) + " but B is " +
                          std::to_string(b.rows) + " x " + std::to_string(b.cols));
  if (b.memory != s.engine->memory() || x.memory != s.engine->memory())
    throw InvalidArgument(std::string("solve: B and X must be in ") + to_string(s.engine->memory()) + " memory, as A");
  // B (and a device A) are read until the end, while X is written: no byte of X's storage range
  // may lie in theirs.
  detail::check_no_overlap("solve", "X", x, "B", b);
  detail::check_no_overlap("solve", "X", x, "A", s.user_a_in_place);
  const auto bad = s.engine->find_nonfinite(b);
  if (bad.first >= 0)
    throw InvalidArgument("solve: B(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) + ") is NaN or Inf");

  SolveReport report;
  report.near_diagonal_estimate = s.near_diagonal_estimate;
  report.converged_rhs.assign(b.cols, b.rows == 0);
  report.residual_precision = solvers_detail::residual_precision_for(s.options, b.cols);
  if (b.cols == 0 || b.rows == 0) {
    report.converged = true;
    return report;
  }
  BestIterate best(*s.engine, b.cols);
  report.stop_test_backward_error = lapack_stop_test_backward_error(s.options, s.engine->n());
  bool first_attempt = true;
  bool cheaper_tried = false;
  // An attempt that ends before refinement (its factorization failed, or the probe judged it
  // weak): the next rung takes over. An FP64 one that failed (a Cholesky of an A that is not
  // positive definite, under Structure::Auto) makes the FP64 LU after it no fallback.
  const auto give_up = [&](const Attempt& attempt) {
    report.attempts.push_back(attempt);
    report.factorization_seconds += attempt.factorization_seconds;
    report.refinement_seconds += attempt.refinement_seconds;
    if (!solvers_detail::fp64_factorization(attempt)) cheaper_tried = true;
  };
  while (true) {
    solvers_detail::SquareLadder& ladder = *s.ladder;
    if (!s.factored) {
      if (ladder.exhausted()) break;  // every factorization tried
      Attempt attempt;
      const solvers_detail::Rung rung = ladder.take();
      attempt.factor = rung.kind;
      attempt.precision = rung.precision;
      attempt.refinement = resolve_refinement(s.options.refinement);
      const bool cholesky = rung.kind == FactorKind::Cholesky;
      if (s.options.progress)
        s.options.progress(std::string(cheaper_tried && attempt.precision == Precision::FP64 ? "fallback: " : "") +
                           "factorization " + to_string(attempt.precision) + (cholesky ? " Cholesky" : "") +
                           " (n = " + std::to_string(s.engine->n()) + ")");
      const auto t0 = Clock::now();
      attempt.range_scaled = s.options.range_scaling && range_limited(attempt.precision);
      const bool reuse_order = s.options.reuse_pivot_order && ladder.order_reuse_allowed() && !cholesky;
      // The probe (SolveOptions::probe_pivot_ratio) judges a cheaper LU where something higher
      // remains; the same bound stops one of FP32 accuracy whose pivots collapse.
      const std::int64_t n = s.engine->n();
      const double unit_roundoff = solvers_detail::unit_roundoff(attempt.precision, s.options.ozaki_bits);
      const double probe_below = s.options.probe_pivot_ratio * unit_roundoff / 0x1p-24;
      const bool may_probe = attempt.precision != Precision::FP64 && ladder.higher_remains() && probe_below > 0 &&
                             n > s.options.gmres_max_inner && n >= 4 * solvers_detail::kProbeColumns;
      const double collapse_below =
          may_probe && std::isfinite(probe_below) && unit_roundoff <= 0x1p-24 && !cholesky ? probe_below : 0.0;
      // The screen's FP16 LU pivots inside its diagonal blocks only (FactorRequest::diagonal_blocks):
      // with ||D^-1 (A - D)||_2 <= 1/8 every leading block of D^-1 A is I + E, ||E||_2 <= 1/8,
      // so the LU in A's own order exists and its Schur complements stay near their diagonals.
      using DiagonalBlockPivoting = solvers_detail::Tuning::DiagonalBlockPivoting;
      const DiagonalBlockPivoting blocks_only = solvers_detail::tuning().diagonal_block_pivoting;
      const bool screened = !cholesky && s.fp16_near_diagonal && attempt.precision == Precision::FP16;
      if (screened) s.fp16_near_diagonal = false;  // the FP16 LU put first only, not one later on the path
      const bool diagonal_blocks = !cholesky && !solvers_detail::fp64_factors(attempt.precision) &&
                                   (blocks_only == DiagonalBlockPivoting::Always ||
                                    (blocks_only == DiagonalBlockPivoting::Screened && screened));
      const FactorResult f = s.engine->factor(
          {rung.kind, attempt.precision, attempt.range_scaled, reuse_order, collapse_below, diagonal_blocks});
      s.engine->synchronize();
      s.factors_complete = f.status == StopReason::Converged;
      s.inverse_norm_estimate = -1;
      attempt.factorization_seconds = seconds_since(t0);
      attempt.pivot_order = f.pivot_order;
      attempt.largest_multiplier = f.largest_multiplier;
      attempt.reused_columns = f.reused_columns;
      attempt.emulated_bits = f.emulated_bits;
      if (f.status != StopReason::Converged) {
        if (f.status == StopReason::ZeroPivot && solvers_detail::fp64_factorization(attempt))
          throw SingularMatrix("solve: A is singular: zero pivot in column " + std::to_string(f.zero_pivot_column) +
                                   " of the FP64 LU factorization",
                               f.zero_pivot_column);
        if (ladder.after_breakdown(attempt, f, n, unit_roundoff) ==
            solvers_detail::SquareLadder::AfterBreakdown::NotPositiveDefinite)
          throw NotPositiveDefinite(
              "solve: A is not positive definite: " +
                  (f.breakdown_pivot_known ? "pivot " + number(f.breakdown_pivot) : std::string("a pivot not positive")) +
                  " in column " + std::to_string(f.zero_pivot_column) + " of the FP64 Cholesky factorization (structure spd)",
              f.zero_pivot_column);
        attempt.stop = f.status;
        attempt.zero_pivot_column = f.zero_pivot_column;
        attempt.collapsed_at_column = f.collapsed_at_column;
        give_up(attempt);
        continue;
      }
      // Weak factors end the attempt before any refinement. Screened by the pivot ratio.
      const bool probe = may_probe && !solvers_detail::fp64_factorization(attempt);
      if (probe) attempt.pivot_ratio = s.engine->pivot_ratio();
      if (probe && attempt.pivot_ratio < probe_below) {
        if (s.options.progress) s.options.progress("probe of the " + to_string(attempt.precision) + " factors");
        const auto t_probe = Clock::now();
        attempt.probe_estimate = solvers_detail::probe_factors(*s.engine);
        attempt.refinement_seconds = seconds_since(t_probe);
        if (!(attempt.probe_estimate < kWeakFactorsProbe)) {
          attempt.stop = StopReason::WeakFactors;
          give_up(attempt);
          continue;
        }
      }
      s.factored = true;
      s.current = attempt.precision;
      s.current_kind = attempt.factor;
      s.current_emulated_bits = attempt.emulated_bits;
      s.current_factor_seconds = attempt.factorization_seconds;
      s.current_refinement = attempt.refinement;
      report.attempts.push_back(attempt);
    } else if (first_attempt) {
      Attempt attempt;  // reuse of the factors from an earlier solve, with the method that worked
      attempt.factor = s.current_kind;
      attempt.precision = s.current;
      attempt.emulated_bits = s.current_emulated_bits;
      attempt.refinement = s.current_refinement;
      report.attempts.push_back(attempt);
    }
    first_attempt = false;
    Attempt& attempt = report.attempts.back();
    const bool is_fallback = solvers_detail::fp64_factorization(attempt) && cheaper_tried;
    if (s.options.progress)
      s.options.progress("refinement " + to_string(attempt.refinement) + " with " + to_string(attempt.precision) +
                         " factors (" + std::to_string(b.cols) + " right-hand side" + (b.cols > 1 ? "s)" : ")"));
    const auto t1 = Clock::now();
    const bool higher_rung = ladder.higher_remains() && !solvers_detail::fp64_factorization(attempt);
    // Under Refinement::Auto a classic refinement that stalls gets GMRES-IR with the same factors
    // before anything is refactored: the LU may be good enough as a preconditioner although its
    // contraction (~ cond * u * growth) is too close to 1 for classic IR (FP32-accurate LUs from
    // n ~ 32768 at cond 1e6, on the GPU). Not while another factorization short of FP64 remains
    // on the path: refactoring one rung up then costs about as much as the retry and converges
    // where it does not (H100, n = 16384 and 32768, a path FP16 -> FP32 -> FP64: every FP16 retry
    // from cond 1e4 fails or runs out of budget after 50-81 GMRES iterations, and FP32 converges).
    const bool cheaper_rung_left = ladder.cheaper_remains();
    const bool gmres_may_follow = s.options.refinement == Refinement::Auto &&
                                  attempt.refinement == Refinement::Classic &&
                                  !solvers_detail::fp64_factorization(attempt) && !cheaper_rung_left;
    attempt.stop = solvers_detail::refine(
        *s.engine, s.options, s.norm_a, s.badly_scaled, b, x,
        s.options.escalate_by_cost && higher_rung ? kNextRungCostFactor * s.current_factor_seconds : INFINITY,
        gmres_may_follow, best, attempt.refinement, attempt, report);
    s.engine->synchronize();
    attempt.refinement_seconds += seconds_since(t1);  // after the probe's time, if it ran
    if (is_fallback) {
      report.fell_back = true;
      report.fallback_seconds += attempt.factorization_seconds + attempt.refinement_seconds;
    } else {
      report.factorization_seconds += attempt.factorization_seconds;
      report.refinement_seconds += attempt.refinement_seconds;
    }
    if (attempt.stop == StopReason::Converged) {
      s.current_refinement = attempt.refinement;
      break;
    }
    if (gmres_may_follow && (attempt.stop == StopReason::Stagnated || attempt.stop == StopReason::Diverged ||
                             attempt.stop == StopReason::MaxIterations || attempt.stop == StopReason::TooSlow)) {
      Attempt retry;
      retry.factor = attempt.factor;
      retry.precision = attempt.precision;
      retry.emulated_bits = attempt.emulated_bits;
      retry.refinement = Refinement::Gmres;
      report.attempts.push_back(retry);
      continue;
    }
    if (attempt.precision == Precision::FP64 && attempt.pivot_order == PivotOrder::Reused) {
      ladder.redo_fp64_lu_with_partial_pivoting();
      s.factored = false;
      continue;
    }
    if (solvers_detail::fp64_factorization(attempt) || ladder.exhausted()) break;  // nothing higher to try
    s.factored = false;  // escalate
    cheaper_tried = true;
  }
  if (report.backward_error_history.empty()) {
    report.backward_error = INFINITY;  // every factorization failed before a solve: X holds no iterate
  } else {
    best.restore(x, report, s.badly_scaled);
    report.converged = std::all_of(report.converged_rhs.begin(), report.converged_rhs.end(), [](bool v) { return v; });
    const bool estimate = s.options.condition_estimate == ConditionEstimate::Always ||
                          (s.options.condition_estimate == ConditionEstimate::WhenNotConverged && !report.converged);
    if (estimate && s.factors_complete) {
      const auto t_estimate = Clock::now();
      if (s.options.progress) s.options.progress("condition estimate");
      if (s.inverse_norm_estimate < 0) s.inverse_norm_estimate = estimate_inverse_norm_inf(*s.engine);
      report.condition_estimate = s.norm_a * s.inverse_norm_estimate;
      std::vector<double> norm_b(b.cols);
      s.engine->column_norms_inf(b, norm_b.data());
      for (std::int64_t j = 0; j < b.cols; ++j) {
        const BestIterate::Candidate& x_j = best.returned()[j];
        report.forward_error_bound =
            std::max(report.forward_error_bound,
                     solvers_detail::normwise_forward_error_bound(b.rows, s.inverse_norm_estimate, s.norm_a,
                                                                  x_j.residual_norm, x_j.x_norm, norm_b[j]));
      }
      report.condition_seconds = seconds_since(t_estimate);
    }
  }
  report.peak_workspace_bytes = s.engine->peak_workspace_bytes();
  report.total_seconds = seconds_since(t_start);
  return report;
}

SolveReport solve(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                  const MatrixView<double>& x, const SolveOptions& options) {
  // X must not overlap A, even a host A that the Factorization copies: A is the caller's, not to
  // be written. Checked before any work; Factorization::solve checks X against B and a device A.
  detail::check_view("solve", "A", a);
  detail::check_view("solve", "X", x);
  detail::check_no_overlap("solve", "X", x, "A", a);
  Factorization f(ctx, a, options);  // checks A and the options
  return f.solve(b, x);              // checks B and X
}

}  // namespace mixsolve
