// SPDX-License-Identifier: BSD-3-Clause
// The solve driver: argument checks, the precision path (escalation and fallback), classic and
// GMRES iterative refinement for several right-hand sides, the stop test, and the report. All
// arithmetic goes through an Engine (engine.hpp), so host and device share this logic.
#include "mixsolve/solvers/solve.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <iomanip>
#include <sstream>
#include <vector>

#include "condition_estimate.hpp"
#include "engine.hpp"
#include "precisions.hpp"
#include "tuning.hpp"

namespace mixsolve {

namespace solvers_detail {

// engine.hpp. The singular values come from the k x k Gram matrices W^T W and Omega^T Omega.
double probe_factors(Engine& e) {
  const int k = kProbeColumns;
  const MatrixView<double> omega = e.scratch(0, k), zeros = e.scratch(1, k), w = e.scratch(2, k);
  e.fill_random(omega, RandomSpec::uniform(-1.0, 1.0, 0x70726f6265ull));
  for (int j = 0; j < k; ++j) e.zero(&zeros(0, j));
  e.residual(omega, zeros, w);  // w = -A Omega
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

std::string to_string(Precision p) {
  if (p == Precision::Auto) return "auto";
  for (const solvers_detail::PrecisionInfo& info : solvers_detail::factorization_precisions())
    if (info.precision == p) return info.name;
  return "?";
}

std::string to_string(Refinement r) {
  switch (r) {
    case Refinement::None: return "none";
    case Refinement::Classic: return "classic";
    case Refinement::Gmres: return "gmres";
    case Refinement::Auto: return "auto";
  }
  return "?";
}

std::string to_string(StopTest t) {
  switch (t) {
    case StopTest::Attainable: return "attainable";
    case StopTest::Lapack: return "lapack";
  }
  return "?";
}

StopTest parse_stop_test(const std::string& text) {
  for (StopTest t : {StopTest::Attainable, StopTest::Lapack})
    if (to_string(t) == text) return t;
  throw InvalidArgument("stop test \"" + text + "\" is not one of attainable, lapack");
}

std::string to_string(ConditionEstimate c) {
  switch (c) {
    case ConditionEstimate::Never: return "never";
    case ConditionEstimate::WhenNotConverged: return "when-not-converged";
    case ConditionEstimate::Always: return "always";
  }
  return "?";
}

ConditionEstimate parse_condition_estimate(const std::string& text) {
  for (ConditionEstimate c : {ConditionEstimate::Never, ConditionEstimate::WhenNotConverged, ConditionEstimate::Always})
    if (to_string(c) == text) return c;
  throw InvalidArgument("condition estimate \"" + text + "\" is not one of never, when-not-converged, always");
}

std::string to_string(StopReason s) {
  switch (s) {
    case StopReason::Converged: return "converged";
    case StopReason::ZeroPivot: return "zero pivot";
    case StopReason::Overflow: return "overflow in the factors";
    case StopReason::Stagnated: return "stagnated";
    case StopReason::Diverged: return "diverged";
    case StopReason::MaxIterations: return "iteration limit";
    case StopReason::TooSlow: return "too slow (its rate predicted more iterations or time than its budget)";
    case StopReason::NoRefinement: return "no refinement requested";
    case StopReason::WeakFactors: return "factors too far from A for refinement (probe)";
    case StopReason::CollapsedPivots: return "most pivots tiny (numerically rank-deficient at this precision), LU stopped";
  }
  return "?";
}

std::string to_string(PivotOrder o) {
  switch (o) {
    case PivotOrder::Partial: return "partial pivoting";
    case PivotOrder::Reused: return "reused row order";
    case PivotOrder::Rejected: return "reused row order rejected, then partial pivoting";
  }
  return "?";
}

Precision parse_precision(const std::string& text) {
  if (text == "auto") return Precision::Auto;
  std::string names;
  for (const solvers_detail::PrecisionInfo& info : solvers_detail::factorization_precisions()) {
    if (text == info.name) return info.precision;
    names += std::string(info.name) + ", ";
  }
  throw InvalidArgument("precision \"" + text + "\" is not one of " + names + "auto");
}

Refinement parse_refinement(const std::string& text) {
  for (Refinement r : {Refinement::None, Refinement::Classic, Refinement::Gmres, Refinement::Auto})
    if (to_string(r) == text) return r;
  throw InvalidArgument("refinement \"" + text + "\" is not one of none, classic, gmres, auto");
}

std::string SolveReport::summary() const {
  std::ostringstream s;
  s << (converged ? "converged" : "NOT converged") << " after " << iterations << " refinement iterations, "
    << total_seconds << " s";
  if (fell_back) s << " (fell back to FP64)";
  s << "\n";
  for (const Attempt& a : attempts) {
    s << "  " << to_string(a.precision) << (a.range_scaled ? " (range-scaled)" : "");
    if (a.pivot_order != PivotOrder::Partial) {
      s << " (" << to_string(a.pivot_order);
      if (a.pivot_order == PivotOrder::Reused) s << " for " << a.reused_columns << " columns";
      s << ", max |l_ij| " << std::setprecision(3) << a.largest_multiplier << std::setprecision(6) << ")";
    }
    s << " LU + " << to_string(a.refinement) << ": " << to_string(a.stop);
    if (a.stop == StopReason::ZeroPivot) s << " in column " << a.zero_pivot_column;
    if (a.stop == StopReason::CollapsedPivots) s << " after " << a.collapsed_at_column << " columns";
    s << ", " << a.iterations << " iterations";
    if (a.inner_iterations) s << " (" << a.inner_iterations << " GMRES)";
    s << ", factorization " << a.factorization_seconds << " s, refinement " << a.refinement_seconds << " s";
    if (a.pivot_ratio > 0) s << "; pivot ratio " << std::setprecision(3) << a.pivot_ratio;
    if (a.probe_estimate >= 0) s << "; probe " << std::setprecision(3) << a.probe_estimate;
    s << std::setprecision(6) << "\n";
  }
  if (!backward_error_history.empty()) {
    s << "  backward error after each solve:";
    for (double e : backward_error_history) s << " " << std::setprecision(3) << e;
    s << "\n  returned x: backward error " << std::setprecision(3) << backward_error;
    if (componentwise_backward_error > 0) s << " (componentwise " << componentwise_backward_error << ")";
    s << (converged ? ", meets" : ", does NOT meet") << " the LAPACK test (~" << stop_test_backward_error << ")";
    if (returned_earlier_iterate) s << "; the best iterate, not the last";
    s << std::setprecision(6) << "\n";
  }
  if (condition_estimate > 0) {
    s << "  condition estimate (inf-norm) " << std::setprecision(3) << condition_estimate
      << ", forward error bound " << forward_error_bound << " (" << condition_seconds << " s)" << std::setprecision(6)
      << "\n";
  }
  return s.str();
}

namespace {

// The factorizations SolveOptions::range_scaling applies to (precisions.cpp says why).
bool range_limited(Precision p) { return solvers_detail::precision_info(p).range_limited; }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Inner GMRES tolerance (relative to the preconditioned residual): the outer FP64 loop corrects
// what the inner solve leaves, so a moderate value suffices. A later outer step, whose backward
// error is already close to the stop test, only asks for the reduction it still needs (times a
// safety factor of 10), down to this.
constexpr double kGmresTolerance = 1e-8;
constexpr double kGmresLoosest = 1e-2;

// Refinement steps in a row that may fail to halve the backward error before an attempt is
// declared stagnated (or diverged). A GMRES-IR step that converged inner solve should reduce
// the backward error by orders of magnitude, so one that does not halve it ends the attempt (each
// costs up to gmres_max_inner triangular-solve pairs and mat-vecs).
constexpr int kBadStepsAllowedClassic = 3;
constexpr int kBadStepsAllowedGmres = 1;
// Classic IR gives way to GMRES-IR (where that may follow; Refiner::classic_too_slow) when, from
// kClassicJudgeAfter steps on, its rate over the last kClassicJudgeWindow steps predicts more
// than kClassicMaxPredictedSteps further steps. Not sooner nor on a shorter window: early steps
// can be slow in a refinement that converges in a few more (n = 32768 arith cond 1e6 takes 7
// classic steps; judged after 3 steps on the last 2, it would go to GMRES and take ~15% longer
// on an H100).
constexpr int kClassicJudgeAfter = 5;
constexpr int kClassicJudgeWindow = 3;
constexpr double kClassicMaxPredictedSteps = 15;

// GMRES iterations after which the convergence rate is trusted to predict the rest (judged at
// each restart on the true residual, and inside a cycle every kGmresJudgeEvery iterations on the
// Givens estimate's rate over the last kGmresJudgeWindow iterations).
constexpr int kGmresJudgeAfter = 16;
constexpr int kGmresJudgeEvery = 8;
constexpr int kGmresJudgeWindow = 16;
// SolveOptions::escalate_by_cost: the next rung's factorization is estimated at this multiple of
// the current one's time: on the H100 the device engine's FP64 LU takes 1.55x / 2.25x the fp16x3
// LU at n = 16384 / 32768 (solve.hpp). With a factor of 1, fp16x3 -> FP64 at n = 32768, cond 1e6
// sends a GMRES with 38 iterations behind it to the FP64 LU (0.53x dgetrf+getrs's speed).
constexpr double kNextRungCostFactor = 2.0;

// The first refinement under Refinement::Auto: classic IR, for every precision. FP16 / BF16 /
// TF32 factors need GMRES-IR (Carson and Higham) once cond * u_low passes ~1, but below that
// classic IR is cheaper per step and overall (FP16 LU at n = 16384, cond 1e2, H100: 15 classic
// steps in 27 ms against 24 GMRES iterations in 70-79 ms); where classic IR stagnates, it does so
// within a few cheap steps and GMRES-IR takes over with the same factors (see solve()).
Refinement resolve_refinement(Refinement r) { return r == Refinement::Auto ? Refinement::Classic : r; }

// The factorizations to try, in order.
std::vector<Precision> precision_path(const SolveOptions& o, std::int64_t n, std::int64_t engine_auto_min_n) {
  std::vector<Precision> path;
  const std::int64_t auto_min_n = o.auto_min_n >= 0 ? o.auto_min_n : engine_auto_min_n;
  if (o.factorization == Precision::Auto) path = n >= auto_min_n ? o.auto_path : std::vector<Precision>{Precision::FP64};
  else path = {o.factorization};
  if (o.fallback && path.back() != Precision::FP64) path.push_back(Precision::FP64);
  return path;
}

}  // namespace

struct Factorization::State {
  Context* ctx = nullptr;
  SolveOptions options;
  std::unique_ptr<Engine> engine;
  const void* user_a = nullptr;  // the caller's A (read in place by the device engine)
  double norm_a = 0;
  bool badly_scaled = false;  // Engine::badly_scaled: iterates judged componentwise
  std::vector<Precision> path;
  std::size_t next = 0;  // index in path of the next factorization to try
  Precision current = Precision::Auto;
  Refinement current_refinement = Refinement::Classic;  // the method that converged with the factors
  double current_factor_seconds = 0;                     // the time the current factors took
  bool factored = false;
  // An FP64 refinement failed with factors in a reused row order: later FP64 LUs pivot fully.
  bool reused_order_failed = false;
  // The engine holds factors from a factorization that completed (the last one asked for), and
  // the estimate of ||A^-1||_inf from them (SolveOptions::condition_estimate; < 0: not yet).
  bool factors_complete = false;
  double inverse_norm_estimate = -1;
};

Factorization::Factorization(Context& ctx, const MatrixView<const double>& a, const SolveOptions& options)
    : state_(std::make_unique<State>()) {
  const char* where = "solve";
  detail::check_view(where, "A", a);
  if (a.rows != a.cols)
    throw InvalidArgument(std::string(where) + ": A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ", not square");
  if (options.max_iterations < 0)
    throw InvalidArgument(std::string(where) + ": max_iterations (" + std::to_string(options.max_iterations) + ") < 0");
  if (options.auto_min_n < -1)
    throw InvalidArgument(std::string(where) + ": auto_min_n (" + std::to_string(options.auto_min_n) +
                          ") < -1 (-1: the engine's choice)");
  if (options.gmres_restart < 1)
    throw InvalidArgument(std::string(where) + ": gmres_restart (" + std::to_string(options.gmres_restart) + ") < 1");
  if (options.factorization == Precision::Auto) {
    if (options.auto_path.empty()) throw InvalidArgument(std::string(where) + ": auto_path is empty");
    for (std::size_t i = 0; i < options.auto_path.size(); ++i)
      if (options.auto_path[i] == Precision::Auto)
        throw InvalidArgument(std::string(where) + ": auto_path[" + std::to_string(i) + "] is auto");
  }
  if (!(options.tolerance_factor > 0))
    throw InvalidArgument(std::string(where) + ": tolerance_factor (" + std::to_string(options.tolerance_factor) + ") <= 0");
  State& s = *state_;
  s.ctx = &ctx;
  s.options = options;
  s.user_a = a.data;
  if (a.memory == Memory::Device) {
    if (!ctx.has_device()) throw InvalidArgument(std::string(where) + ": A is in device memory but the Context is host-only");
    s.engine = solvers_detail::make_device_engine(ctx, a, options.block_size);
  } else {
    s.engine = solvers_detail::make_host_engine(ctx, a, options.block_size);
  }
  s.path = precision_path(options, s.engine->n(), s.engine->default_auto_min_n());
  if (!s.path.empty()) s.engine->expect_factorization(s.path.front());
  const auto bad = s.engine->find_nonfinite(a);
  if (bad.first >= 0)
    throw InvalidArgument(std::string(where) + ": A(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) +
                          ") is NaN or Inf");
  s.norm_a = s.engine->norm_inf();
  s.badly_scaled = s.engine->badly_scaled();
}

Factorization::~Factorization() = default;
Factorization::Factorization(Factorization&&) noexcept = default;
Factorization& Factorization::operator=(Factorization&&) noexcept = default;

Precision Factorization::precision() const { return state_->factored ? state_->current : Precision::Auto; }

namespace {

// About the backward error the LAPACK test asks for (SolveOptions::tolerance_factor): the test is
// ||r|| < this ||A|| ||x||. eps = LAPACK's dlamch('E') = 2^-53, as dsgesv.
double lapack_stop_test_backward_error(const SolveOptions& o, std::int64_t n) {
  return o.tolerance_factor * std::sqrt(double(n)) * std::numeric_limits<double>::epsilon() * 0.5;
}

// The engine's scratch slot that holds BestIterate's copy (Refiner uses 0-3, the probe 0-2).
constexpr int kBestIterateSlot = 4;

// For each right-hand side, the best iterate seen over every solve and refinement step of every
// attempt of one Factorization::solve: what the solve returns (SolveReport::backward_error).
// Refinement can make an iterate worse (a diverging classic IR on a numerically singular matrix)
// and a GMRES retry restarts from LU \ b; the copy costs one vector copy per improving step.
class BestIterate {
 public:
  // What is known of one column's iterate: its normwise backward error, the measure it is judged
  // by (the normwise one, or the componentwise one where A is badly scaled: Refiner), whether it
  // meets the LAPACK test, whether that counts (accepted: from factors whose refinement proved
  // itself, Refiner's proven_), and the ||.||_inf of its residual and of itself.
  struct Candidate {
    double backward_error = INFINITY, judged_error = INFINITY;
    bool meets = false, accepted = false;
    double residual_norm = INFINITY, x_norm = 0;
  };

  BestIterate(Engine& e, std::int64_t k)
      : e_(e), store_(e.scratch(kBestIterateSlot, k)), best_(k), current_(k), last_is_best_(k, false),
        stored_(k, false), smallest_accepted_(k, INFINITY) {}

  // x's columns after a solve or step: keeps those that rank above the best so far. Columns
  // with moved[j] false kept their x since they were last offered.
  void offer(const MatrixView<double>& x, const std::vector<Candidate>& candidates, const std::vector<bool>& moved) {
    for (std::int64_t j = 0; j < x.cols; ++j) {
      if (!moved[j]) continue;
      current_[j] = candidates[j];
      last_is_best_[j] = replaces(current_[j], best_[j], smallest_accepted_[j]);
      if (current_[j].accepted) smallest_accepted_[j] = std::min(smallest_accepted_[j], current_[j].judged_error);
      if (!last_is_best_[j]) continue;
      best_[j] = current_[j];
      stored_[j] = true;
      e_.copy(x.block(0, j, x.rows, 1), store_.block(0, j, x.rows, 1));
    }
  }

  // Puts the best iterate back into x where x's last one ranks below it; fills the report's
  // fields. After it, returned()[j] describes x's column j.
  void restore(const MatrixView<double>& x, SolveReport& report, bool componentwise) {
    report.backward_error = 0;
    report.componentwise_backward_error = 0;
    for (std::int64_t j = 0; j < x.cols; ++j) {
      if (!last_is_best_[j] && stored_[j]) {
        e_.copy(store_.block(0, j, x.rows, 1), x.block(0, j, x.rows, 1));
        current_[j] = best_[j];
        report.returned_earlier_iterate = true;
      }
      report.backward_error = std::max(report.backward_error, current_[j].backward_error);
      if (componentwise)
        report.componentwise_backward_error = std::max(report.componentwise_backward_error, current_[j].judged_error);
      report.converged_rhs[j] = current_[j].meets;
    }
  }
  const std::vector<Candidate>& returned() const { return current_; }

 private:
  // Whether a later iterate replaces the best so far: an accepted one before any that is not, then
  // the smaller error by the measure it is judged by; among accepted ones the later also within
  // 2x of the smallest accepted one's, since at the backward error's floor its value is noise and
  // the later iterate had one more correction (Refiner::evaluate's polishing).
  static bool replaces(const Candidate& later, const Candidate& best, double smallest_accepted) {
    if (later.accepted != best.accepted) return later.accepted;
    return later.accepted ? later.judged_error <= 2 * smallest_accepted : later.judged_error < best.judged_error;
  }

  Engine& e_;
  MatrixView<double> store_;
  std::vector<Candidate> best_, current_;  // current_: the column's last iterate (x's, until restore)
  std::vector<bool> last_is_best_;           // offer() kept the column's last iterate
  std::vector<bool> stored_;                 // store_ holds an iterate of the column
  std::vector<double> smallest_accepted_;    // the smallest judged error of an accepted iterate
};

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

// Refinement of one right-hand-side block with the engine's current factors.
class Refiner {
 public:
  // next_rung_seconds: the estimated cost of refactoring one rung up; a GMRES inner solve whose
  // remaining iterations would take longer gives way to it (SolveOptions::escalate_by_cost;
  // INFINITY where there is no higher rung).
  // gmres_may_follow: a classic refinement whose contraction is too slow gives way to GMRES-IR
  // with the same factors (StopReason::TooSlow; see run()).
  // best: offered every iterate (BestIterate).
  // componentwise (A is badly scaled, Engine::badly_scaled): every decision on an iterate (a step
  // that halves, the best one) reads its componentwise backward error, dgerfs's BERR, instead of
  // the normwise one. Where rows span 10^+-12 the normwise measure is ruled by the largest rows
  // and by ||x||_inf: it ranks an x whose norm is far too large above a more accurate one, and it
  // moves up and down by 10x between steps, which stops refinement early (docs/robustness.md,
  // "Badly scaled matrices are judged componentwise"). The LAPACK test (converged) stays normwise.
  Refiner(Engine& e, const SolveOptions& o, double norm_a, bool componentwise, const MatrixView<const double>& b,
          const MatrixView<double>& x, double next_rung_seconds, bool gmres_may_follow, BestIterate& best)
      : e_(e), o_(o), norm_a_(norm_a), componentwise_(componentwise), b_(b), x_(x), k_(b.cols), n_(e.n()),
        next_rung_seconds_(next_rung_seconds), gmres_may_follow_(gmres_may_follow), best_(best) {}

  // Runs one attempt: X = LU \ B, then refinement. Appends to the report. A GMRES retry after
  // classic IR with the same factors starts from LU \ B too: from classic's last iterate, whose
  // residual lies in the directions classic IR cannot reduce, GMRES-IR with FP16 factors can
  // diverge where it converges from LU \ B (host model, n = 96, geo cond 1e6: 9.1e-6 -> 1.1e-5
  // against 9.8e-6 -> 6.0e-10 -> 2.1e-16).
  StopReason run(Refinement method, Attempt& attempt, SolveReport& report) {
    const MatrixView<double> r = e_.scratch(0, k_);
    e_.copy(b_, x_);
    e_.apply_inverse(x_);
    std::vector<double> berr(k_);
    // The backward errors before each step (history.back(): before this one; classic_too_slow
    // reads further back).
    std::vector<std::vector<double>> history;
    std::vector<int> slow(k_, 0), grew(k_, 0);
    std::vector<bool> done(k_, false);
    // GMRES: columns whose inner solves run to kGmresTolerance, since a step with a looser target
    // failed to halve their backward error (see below).
    std::vector<bool> tight(k_, false), loose_step(k_, false);
    std::vector<bool> inner_stalled(k_, false);  // the column's last inner solve stagnated
    // StopTest::Attainable: a column's answer from cheaper factors counts only once a step has
    // halved its backward error (proven_). The first solve with them is backward stable only to
    // their precision, and where A's rows span many orders of magnitude the normwise LAPACK test
    // cannot see that: 10^+-12 scaled rows and columns (n = 151, host, fp16x3) meet it at the
    // first solve, 1.0e-24, and the first step makes it 2.4e-24, while FP64 factors give 1.1e-26.
    proven_.assign(k_, attempt.precision == Precision::FP64 || o_.stop_test == StopTest::Lapack);
    ready_.assign(k_, false);
    correction_norm_.assign(k_, 0.0);
    correction_ratio_.assign(k_, INFINITY);
    contracting_.assign(k_, false);
    // With FP64 factors the FP64 residual's own rounding (about n u |A||x|) makes every
    // correction about cond(A) u ||x||, the size of the LU's own error: refinement in one precision
    // lowers the backward error, not the forward error (Higham, ASNA 2nd ed., sec. 12.2), and a
    // correction that halves by chance buys nothing (watching it, the GPU solves at n = 2100
    // cond 1e3 and n = 20480 take 3-4 steps instead of 2, with the same errors).
    watch_correction_ = attempt.precision != Precision::FP64;
    polishing_steps_.assign(k_, 0);
    normwise_.assign(k_, INFINITY);
    evaluate(r, berr, done, report, nullptr);
    // Converged wherever every column has a converged (and proven) iterate, whatever else ended
    // the attempt: BestIterate returns it.
    const auto finish = [&](StopReason reason) {
      for (std::int64_t j = 0; j < k_; ++j)
        if (!(method == Refinement::None ? converged_[j] : ready_[j])) return reason;
      return StopReason::Converged;
    };
    if (method == Refinement::None) return finish(StopReason::NoRefinement);
    const int bad_steps_allowed = method == Refinement::Gmres ? kBadStepsAllowedGmres : kBadStepsAllowedClassic;
    too_slow_ = false;
    for (int it = 0; it < o_.max_iterations && !all(done); ++it) {
      history.push_back(berr);
      const std::vector<double>& previous = history.back();
      if (method == Refinement::Classic) {
        const MatrixView<double> d = e_.scratch(1, k_);
        e_.copy(r, d);
        e_.apply_inverse(d);
        for (std::int64_t j = 0; j < k_; ++j)
          if (!done[j]) e_.axpy(1.0, &d(0, j), &x_(0, j));
        e_.column_norms_inf(d, correction_norm_.data());
      } else {
        for (std::int64_t j = 0; j < k_; ++j) {
          if (done[j]) continue;
          // StopTest::Attainable's polishing of a converged column (proven_): a classic
          // correction, one triangular-solve pair, instead of an inner GMRES solve. A GMRES step
          // to the unit roundoff and the step that confirms it cost 22 more inner iterations
          // than the one step to the LAPACK test (n = 32768, geo cond 1e6, H100); where classic
          // IR no longer contracts, the step that finds it out costs a pass over A and one solve.
          if (ready_[j]) {
            const MatrixView<double> d = e_.scratch(3, 1);
            e_.copy(column(r, j), d);
            e_.apply_inverse(d);
            e_.axpy(1.0, d.data, &x_(0, j));
            e_.column_norms_inf(d, &correction_norm_[j]);
            inner_stalled[j] = false;
            loose_step[j] = false;
            continue;
          }
          const double needed = 0.1 * stop_test_backward_error() / normwise_[j];
          const double target = tight[j] ? kGmresTolerance : std::clamp(needed, kGmresTolerance, kGmresLoosest);
          loose_step[j] = target > kGmresTolerance;
          attempt.inner_iterations += gmres_correction(&r(0, j), &x_(0, j), target, it == 0, &correction_norm_[j]);
          inner_stalled[j] = inner_stagnated_;
        }
      }
      ++attempt.iterations;
      ++report.iterations;
      evaluate(r, berr, done, report, &previous);
      // A step that does not halve the backward error is a bad step (after a backward-stable first
      // solve, one step may raise the backward error while the forward error still contracts).
      // Three bad steps in a row (one for GMRES) end the attempt: "diverged" if each of them made
      // things worse, else "stagnated". A non-finite iterate ends it at once; so does a GMRES
      // whose rate predicted more than its budget (after its correction has been applied).
      if (too_slow_ && !all(done)) return finish(StopReason::TooSlow);
      for (std::int64_t j = 0; j < k_; ++j) {
        if (done[j]) continue;
        if (!std::isfinite(berr[j])) return finish(StopReason::Diverged);
        if (ready_[j] && contracting_[j]) {  // polishing while the correction contracts (evaluate)
          slow[j] = grew[j] = 0;
          continue;
        }
        // An inner solve that stagnated says the LU is too weak a preconditioner for this matrix:
        // unless its step still cut the backward error tenfold, the attempt ends here (host
        // model, fp16x3, n = 512, geo cond 1e10: every inner solve stagnates, no step cuts the
        // backward error by more than 4x, and two more steps cost 100 GMRES iterations).
        if (method == Refinement::Gmres && inner_stalled[j] && berr[j] > 0.1 * previous[j])
          return finish(berr[j] >= previous[j] ? StopReason::Diverged : StopReason::Stagnated);
        // A relaxed inner target bounds the preconditioned residual, and the true residual only
        // up to cond(LU): near the stop test such a step may not halve the backward error. It is
        // not counted as bad; the column's later inner solves run to kGmresTolerance. (Host
        // model, fp16x3, n = 1024, arith cond 1e8: 7.5e-15 -> 8.3e-15 with a 1e-2 target; counted
        // as bad, that step would end the attempt in an FP64 LU a factor of 2.4 from the stop test.)
        if (method == Refinement::Gmres && loose_step[j] && berr[j] > 0.5 * previous[j]) {
          tight[j] = true;
          continue;
        }
        if (berr[j] > 0.5 * previous[j]) {
          ++slow[j];
          grew[j] = berr[j] >= previous[j] ? grew[j] + 1 : 0;
        } else {
          slow[j] = grew[j] = 0;
        }
        if (slow[j] >= bad_steps_allowed)
          return finish(grew[j] >= bad_steps_allowed ? StopReason::Diverged : StopReason::Stagnated);
      }
      if (method == Refinement::Classic && gmres_may_follow_ && it + 1 >= kClassicJudgeAfter &&
          classic_too_slow(berr, history[it + 1 - kClassicJudgeWindow], done))
        return finish(StopReason::TooSlow);
    }
    return finish(StopReason::MaxIterations);
  }

 private:
  static bool all(const std::vector<bool>& v) { return std::all_of(v.begin(), v.end(), [](bool b) { return b; }); }

  // r = b - A x; backward errors; the LAPACK test ||r||_inf < f sqrt(n) ||x||_inf ||A||_inf eps
  // (converged_); which columns are done under the StopTest. previous: the backward errors before
  // this step (null after the first solve).
  void evaluate(const MatrixView<double>& r, std::vector<double>& berr, std::vector<bool>& done, SolveReport& report,
                const std::vector<double>* previous) {
    e_.residual(x_, b_, r);
    std::vector<double> rn(k_), xn(k_), bn(k_), componentwise(k_);
    e_.column_norms_inf(r, rn.data());
    e_.column_norms_inf(x_, xn.data());
    e_.column_norms_inf(b_, bn.data());
    // A column already done keeps its x, and its measure (the last one in berr).
    std::vector<bool> moved(k_);
    for (std::int64_t j = 0; j < k_; ++j) moved[j] = !(previous && done[j]);
    if (componentwise_)
      for (std::int64_t j = 0; j < k_; ++j)
        componentwise[j] = moved[j] ? e_.componentwise_backward_error(&x_(0, j), &b_(0, j), &r(0, j)) : berr[j];
    double worst = 0;
    converged_.assign(k_, false);
    std::vector<BestIterate::Candidate> candidates(k_);
    for (std::int64_t j = 0; j < k_; ++j) {
      const double denominator = norm_a_ * xn[j] + bn[j];
      const double normwise =
          std::isfinite(rn[j]) && std::isfinite(xn[j]) ? (denominator > 0 ? rn[j] / denominator : 0.0) : INFINITY;
      berr[j] = componentwise_ ? (std::isfinite(normwise) ? componentwise[j] : INFINITY) : normwise;
      normwise_[j] = normwise;
      converged_[j] = rn[j] == 0 || (std::isfinite(xn[j]) &&
                                     rn[j] < kComputedResidualMargin * stop_test_backward_error() * xn[j] * norm_a_);
      // StopTest::Attainable: no longer halving once converged (and proven_). Not dgerfs's "at
      // most u" as well: a normwise backward error below u is not yet the attainable one where A's
      // rows or columns span many orders (10^+-12 scaled rows and columns, n = 16384, H100: 4.9e-24 at the first
      // solve against 2.7e-27 for dgetrf+getrs, and a forward error 6.5e5x dgetrf's).
      const bool at_limit = previous && berr[j] > 0.5 * (*previous)[j];
      if (previous && !at_limit) proven_[j] = true;
      // A step that left the backward error exactly as it was left x as it was: every correction
      // was below half an ulp of its component (factors that are exact for A, a diagonal one, say).
      if (rn[j] == 0 || (previous && berr[j] == (*previous)[j])) proven_[j] = true;
      // A polishing step that does not halve the backward error ends the column even where it
      // made the iterate worse: the converged one before it is the best (BestIterate).
      const bool was_ready = ready_[j];
      ready_[j] = (converged_[j] && proven_[j]) || (was_ready && at_limit);
      // Nor while its corrections still contract (LAPACK xGERFSX's test on ||dx|| / ||x||): once
      // the backward error is at its floor the forward error can still fall, in the directions
      // where A is ill-conditioned, whose residual is small. `elasticity`, n = 32761, H100: the
      // backward error stops halving after 4 steps with a forward error 18x dgetrf+getrs's, which
      // one more step brings to 0.26x (docs/results/solve_h100_2026-11-25_predicted_correction_ab.txt).
      // Kept alive this way within its first kPolishingSteps steps after it became ready
      // (xGERFSX's ITHRESH), whichever kept it going before. A column once done stays done: its x
      // no longer moves, and its correction was computed but not applied.
      contracting_[j] = false;
      if (previous && !done[j] && watch_correction_) {
        const double ratio = xn[j] > 0 ? correction_norm_[j] / xn[j] : 0.0;
        // ... and while the next correction, extrapolated from the last two, would still exceed
        // FP64's rounding of x: the step that would only confirm a settled x is saved (1-5% on
        // elasticity, convdiff and the FP64 fallbacks of Hilbert and rankdef, same errors).
        contracting_[j] = ratio > kSettledCorrection && ratio <= 0.5 * correction_ratio_[j] &&
                          ratio * (ratio / correction_ratio_[j]) > kSettledCorrection &&
                          polishing_steps_[j] < kPolishingSteps;
        correction_ratio_[j] = ratio;
        if (was_ready) ++polishing_steps_[j];
      }
      done[j] = done[j] || (o_.stop_test == StopTest::Lapack
                                ? converged_[j]
                                : ready_[j] && (rn[j] == 0 || (at_limit && !contracting_[j])));
      candidates[j] = {normwise, berr[j], converged_[j], converged_[j] && proven_[j], rn[j], xn[j]};
      worst = std::max(worst, normwise);
    }
    best_.offer(x_, candidates, moved);
    report.backward_error_history.push_back(worst);
  }

  // The LAPACK test is ||r|| < stop_test_backward_error() ||A|| ||x||. At that level the computed
  // residual's own rounding (about sqrt(n) eps |A||x|) matters: an x whose FP64 residual meets the
  // test at 0.997 of the threshold can have a true residual (long double) at 1.0003 of it (GPU,
  // fp16x3, n = 1024). So a column counts as converged only where its residual meets
  // kComputedResidualMargin of the threshold: the claim then holds for the true residual too,
  // unless the rounding exceeds 5% of the test.
  static constexpr double kComputedResidualMargin = 0.95;
  // A correction below this fraction of ||x||_inf changes x by about its FP64 rounding.
  static constexpr double kSettledCorrection = 0x1p-51;
  // The most steps a converged column takes while its correction contracts (evaluate).
  static constexpr int kPolishingSteps = 4;
  double stop_test_backward_error() const { return lapack_stop_test_backward_error(o_, n_); }

  // GMRES on (LU)^-1 A d = (LU)^-1 r in FP64 (left preconditioning), restarted, until the
  // preconditioned residual falls by `target`; x += d. Returns the number of inner iterations.
  // first_step: the attempt's first outer step, whose budget is also judged inside a cycle.
  int gmres_correction(const double* r, double* x, double target, bool first_step, double* correction_norm) {
    const auto gmres_start = Clock::now();
    const int m = o_.gmres_restart;
    const MatrixView<double> v = e_.scratch(2, m + 1);
    const MatrixView<double> work = e_.scratch(3, 2);
    double* w = &work(0, 0);
    double* d = &work(0, 1);
    e_.zero(d);
    int total = 0;
    double beta0 = -1, cycle_start = -1;
    std::vector<double> estimates;  // of the residual after each iteration (Givens), from beta0
    bool stagnated = false;  // a restarted cycle stopped making progress
    while (total < o_.gmres_max_inner && !stagnated) {
      // z = (LU)^-1 (r - A d)
      e_.multiply(d, w);
      e_.scal(-1.0, w);
      e_.axpy(1.0, r, w);
      const MatrixView<double> wv = host_column(w);
      e_.apply_inverse(wv);
      const double beta = std::sqrt(e_.dot(w, w));
      if (beta0 < 0) {
        beta0 = beta;
        estimates.push_back(beta);
      }
      if (beta == 0 || beta <= target * beta0) break;
      // A restart cycle that did not halve the preconditioned residual means the LU is not a
      // good enough preconditioner: stop here and let the outer loop judge (failing attempts
      // stay cheap: each inner iteration costs an FP64 mat-vec and two triangular solves).
      if (cycle_start > 0 && beta > 0.5 * cycle_start) {
        stagnated = true;
        break;
      }
      // The budget, judged at each restart from kGmresJudgeAfter iterations on, on the true
      // preconditioned residual: the geometric-mean rate so far, extrapolated to the target,
      // against gmres_max_inner and (escalate_by_cost) against the time refactoring would
      // take. Judged only inside a cycle, on its Givens estimate, the budget misses attempts
      // whose cycles each "converge" early where the estimate runs ahead of the true residual
      // (a preconditioner applied in FP32: fp16 at n = 16384, arith cond 1e6, runs 376
      // iterations in cycles shorter than the restart length). Judged after less than a full
      // cycle, it mistakes GMRES's plateau (while it resolves outlying eigenvalues) for its rate.
      // The time already spent is sunk: only what this inner solve still needs is weighed
      // against the next rung's cost. (Counting the attempt's refinement so far gives up on
      // solves close to converging: n = 32768, cond 1e6, after 105 of the ~117 iterations.)
      if (cycle_start > 0 && total >= kGmresJudgeAfter &&
          over_budget(beta, beta0, total, target * beta0, total, gmres_start, "at a restart"))
        break;
      cycle_start = beta;
      std::vector<double> h((m + 1) * m, 0.0), cs(m), sn(m), g(m + 1, 0.0);
      g[0] = beta;
      e_.copy(wv, column(v, 0));
      e_.scal(1.0 / beta, &v(0, 0));
      int j = 0;
      const bool later_cycle = total > 0;
      for (; j < m && total < o_.gmres_max_inner; ++j, ++total) {
        e_.multiply(&v(0, j), w);
        e_.apply_inverse(host_column(w));
        const double hn = e_.orthogonalize(v, j + 1, w, &h[j * (m + 1)]);
        h[j + 1 + j * (m + 1)] = hn;
        if (hn > 0) {
          e_.copy(host_column(w), column(v, j + 1));
          e_.scal(1.0 / hn, &v(0, j + 1));
        }
        for (int i = 0; i < j; ++i) {  // apply the earlier Givens rotations
          const double a = h[i + j * (m + 1)], b = h[i + 1 + j * (m + 1)];
          h[i + j * (m + 1)] = cs[i] * a + sn[i] * b;
          h[i + 1 + j * (m + 1)] = -sn[i] * a + cs[i] * b;
        }
        const double a = h[j + j * (m + 1)], b = h[j + 1 + j * (m + 1)];
        const double rho = std::hypot(a, b);
        cs[j] = rho > 0 ? a / rho : 1.0;
        sn[j] = rho > 0 ? b / rho : 0.0;
        h[j + j * (m + 1)] = rho;
        h[j + 1 + j * (m + 1)] = 0;
        g[j + 1] = -sn[j] * g[j];
        g[j] = cs[j] * g[j];
        estimates.push_back(std::fabs(g[j + 1]));
        if (trace_ && (total + 1) % 4 == 0)
          std::fprintf(stderr, "gmres: iteration %d, Givens estimate %.3e of the first residual\n", total + 1,
                       std::fabs(g[j + 1]) / beta0);
        if (std::fabs(g[j + 1]) <= target * beta0 || hn == 0) {
          ++j;
          ++total;
          break;
        }
        // The budget inside a cycle, in the attempt's first step: with the preconditioner applied
        // in FP64 the Givens estimate follows the true residual, so its recent rate predicts the
        // rest. Failing attempts then end after 16-24 iterations instead of a cycle or more
        // (H100, `geo` at n = 16384 / 32768: failing ones run at rates of 0.89-0.93 per
        // iteration, converging ones at 0.64 or faster). The recent window, not the mean since
        // the start, because a failing GMRES slows down after its first iterations. Not in later
        // steps: their residual lies in the directions the preconditioner handles worst, and
        // GMRES crosses a plateau before it converges (host model, FP16, n = 96, geo 1e6: rate
        // 0.97 over a second step's first 16 iterations, 468 more predicted, and the step
        // converges within its cycle).
        const int done = total + 1, window = std::min(done, kGmresJudgeWindow);
        if (first_step && done >= kGmresJudgeAfter && done % kGmresJudgeEvery == 0 &&
            over_budget(estimates[done], estimates[done - window], window, target * beta0, done, gmres_start,
                        "inside a cycle")) {
          ++j;
          ++total;
          break;
        }
        // A restarted cycle whose Givens estimate (which runs ahead of the true residual) has
        // not halved after kGmresJudgeAfter iterations stagnates: the same verdict as the test
        // at the restart, 34 iterations sooner (n = 32768 geo cond 1e8 / 1e10 on the H100: the
        // second cycle stagnates).
        if (later_cycle && j + 1 == kGmresJudgeAfter && std::fabs(g[j + 1]) > 0.5 * beta) {
          ++j;
          ++total;
          stagnated = true;
          break;
        }
      }
      // y = H^-1 g (upper triangular j x j), d += V y
      std::vector<double> y(j, 0.0);
      for (int i = j - 1; i >= 0; --i) {
        double s = g[i];
        for (int c = i + 1; c < j; ++c) s -= h[i + c * (m + 1)] * y[c];
        y[i] = h[i + i * (m + 1)] != 0 ? s / h[i + i * (m + 1)] : 0.0;
      }
      for (int i = 0; i < j; ++i) e_.axpy(y[i], &v(0, i), d);
      if (j == 0 || too_slow_) break;
    }
    e_.axpy(1.0, d, x);
    e_.column_norms_inf(MatrixView<const double>{d, n_, 1, n_, e_.memory()}, correction_norm);
    inner_stagnated_ = stagnated;
    if (trace_)
      std::fprintf(stderr, "gmres: inner solve ended after %d iterations (%s), target %.1e\n", total,
                   too_slow_ ? "budget" : stagnated ? "stagnated" : "target or limit", target);
    return total;
  }

  // Classic IR that halves the backward error each step is not "bad", but may need 20-30 steps,
  // where GMRES-IR with the same factors needs fewer iterations of about the same cost (a
  // triangular-solve pair and a mat-vec each): H100, n = 16384, geo cond 1e6, classic contracts
  // 0.5-0.6 per step and takes 12-22 steps, GMRES 18 iterations after 3 classic steps (the retry
  // starts again from LU \ B, so those steps are lost).
  bool classic_too_slow(const std::vector<double>& berr, const std::vector<double>& window_start,
                        const std::vector<bool>& done) const {
    for (std::int64_t j = 0; j < k_; ++j) {
      if (done[j] || ready_[j]) continue;  // a converged column only polishes
      // The rate from the measure iterates are judged by, the distance from the normwise one the
      // LAPACK test reads: where they differ (badly scaled A) a rough prediction either way.
      const double rate = std::pow(berr[j] / window_start[j], 1.0 / kClassicJudgeWindow);
      const double more = rate < 1 ? std::log(stop_test_backward_error() / normwise_[j]) / std::log(rate) : INFINITY;
      if (more > kClassicMaxPredictedSteps) return true;
    }
    return false;
  }

  // The GMRES budget: whether the preconditioned residual's rate from `before` to `now` over
  // `window` iterations, extrapolated to `goal`, needs more than gmres_max_inner iterations in
  // all (`done` so far), or (escalate_by_cost) more time than the next rung's factorization at
  // this inner solve's time per iteration. Sets too_slow_ if so.
  bool over_budget(double now, double before, int window, double goal, int done, Clock::time_point gmres_start,
                   const char* where) {
    const double rate = now > 0 && before > 0 ? std::pow(now / before, 1.0 / window) : 0.0;
    const double more = rate < 1 ? std::max(0.0, std::log(goal / now) / std::log(rate)) : INFINITY;
    const double per_iteration = seconds_since(gmres_start) / done;
    if (trace_)
      std::fprintf(stderr, "gmres: %s after %d iterations, rate %.4f over the last %d, %.0f more predicted, "
                   "%.4f s per iteration, %.3f s to go, next rung %.3f s\n", where, done, rate, window, more,
                   per_iteration, more * per_iteration, next_rung_seconds_);
    too_slow_ = done + more > o_.gmres_max_inner || more * per_iteration > next_rung_seconds_;
    return too_slow_;
  }

  MatrixView<double> column(const MatrixView<double>& m, std::int64_t j) const { return m.block(0, j, n_, 1); }
  MatrixView<double> host_column(double* p) const { return MatrixView<double>{p, n_, 1, n_, e_.memory()}; }

  Engine& e_;
  const SolveOptions& o_;
  double norm_a_;
  bool componentwise_;
  MatrixView<const double> b_;
  MatrixView<double> x_;
  std::int64_t k_, n_;
  std::vector<bool> converged_;
  std::vector<bool> proven_;  // a step halved the column's backward error (run())
  // The column has had a converged, proven iterate: under StopTest::Attainable the refinement
  // then only polishes it.
  std::vector<bool> ready_;
  // ||d||_inf of the column's correction in the step just taken, and ||d||_inf / ||x||_inf of the
  // one before; contracting_: the last correction halved and it and the next one extrapolated
  // exceed kSettledCorrection (evaluate).
  std::vector<double> correction_norm_, correction_ratio_;
  std::vector<bool> contracting_;
  bool watch_correction_ = true;  // the factors are cheaper than FP64 (run())
  std::vector<int> polishing_steps_;  // steps taken since the column was ready
  // The normwise backward errors of the last evaluate: how far a column is from the (normwise)
  // LAPACK test, where berr is componentwise (componentwise_).
  std::vector<double> normwise_;
  bool inner_stagnated_ = false;  // the last inner solve ended because a cycle stagnated
  bool too_slow_ = false;  // a GMRES of this attempt predicted more iterations or time than its budget
  double next_rung_seconds_;
  bool gmres_may_follow_;
  BestIterate& best_;
  // Tuning::gmres_trace: each budget judgement goes to stderr.
  bool trace_ = solvers_detail::tuning().gmres_trace;
};

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
  if (x.data != nullptr && (x.data == b.data || static_cast<const void*>(x.data) == s.user_a))
    throw InvalidArgument("solve: X must not alias A or B (both are read until the end)");
  const auto bad = s.engine->find_nonfinite(b);
  if (bad.first >= 0)
    throw InvalidArgument("solve: B(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) + ") is NaN or Inf");

  SolveReport report;
  report.converged_rhs.assign(b.cols, b.rows == 0);
  if (b.cols == 0 || b.rows == 0) {
    report.converged = true;
    return report;
  }
  BestIterate best(*s.engine, b.cols);
  report.stop_test_backward_error = lapack_stop_test_backward_error(s.options, s.engine->n());
  bool first_attempt = true;
  bool cheaper_tried = false;
  // An attempt that ends before refinement (its LU failed, or the probe judged it weak): the next
  // precision takes over.
  const auto give_up = [&](const Attempt& attempt) {
    report.attempts.push_back(attempt);
    report.factorization_seconds += attempt.factorization_seconds;
    report.refinement_seconds += attempt.refinement_seconds;
    cheaper_tried = true;
  };
  while (true) {
    if (!s.factored) {
      if (s.next >= s.path.size()) break;  // every factorization tried
      Attempt attempt;
      attempt.precision = s.path[s.next++];
      attempt.refinement = resolve_refinement(s.options.refinement);
      if (s.options.progress)
        s.options.progress(std::string(cheaper_tried && attempt.precision == Precision::FP64 ? "fallback: " : "") +
                           "factorization " + to_string(attempt.precision) + " (n = " + std::to_string(s.engine->n()) + ")");
      const auto t0 = Clock::now();
      attempt.range_scaled = s.options.range_scaling && range_limited(attempt.precision);
      const bool reuse_order = s.options.reuse_pivot_order && !s.reused_order_failed;
      // The probe (SolveOptions::probe_pivot_ratio) judges a cheaper LU where something higher
      // remains; the same bound stops one of FP32 accuracy whose pivots collapse.
      const std::int64_t n = s.engine->n();
      const double probe_below =
          s.options.probe_pivot_ratio * solvers_detail::unit_roundoff(attempt.precision) / 0x1p-24;
      const bool may_probe = attempt.precision != Precision::FP64 && s.next < s.path.size() && probe_below > 0 &&
                             n > s.options.gmres_max_inner && n >= 4 * solvers_detail::kProbeColumns;
      const double collapse_below =
          may_probe && std::isfinite(probe_below) && solvers_detail::unit_roundoff(attempt.precision) <= 0x1p-24
              ? probe_below
              : 0.0;
      const FactorResult f = s.engine->factor(attempt.precision, attempt.range_scaled, reuse_order, collapse_below);
      s.engine->synchronize();
      s.factors_complete = f.status == StopReason::Converged;
      s.inverse_norm_estimate = -1;
      attempt.factorization_seconds = seconds_since(t0);
      attempt.pivot_order = f.pivot_order;
      attempt.largest_multiplier = f.largest_multiplier;
      attempt.reused_columns = f.reused_columns;
      if (f.status != StopReason::Converged) {
        if (f.status == StopReason::ZeroPivot && attempt.precision == Precision::FP64)
          throw SingularMatrix("solve: A is singular: zero pivot in column " + std::to_string(f.zero_pivot_column) +
                                   " of the FP64 LU factorization",
                               f.zero_pivot_column);
        attempt.stop = f.status;
        attempt.zero_pivot_column = f.zero_pivot_column;
        attempt.collapsed_at_column = f.collapsed_at_column;
        give_up(attempt);
        continue;
      }
      // Weak factors end the attempt before any refinement. Screened by the pivot ratio.
      if (may_probe) attempt.pivot_ratio = s.engine->pivot_ratio();
      if (may_probe && attempt.pivot_ratio < probe_below) {
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
      s.current_factor_seconds = attempt.factorization_seconds;
      s.current_refinement = attempt.refinement;
      report.attempts.push_back(attempt);
    } else if (first_attempt) {
      Attempt attempt;  // reuse of the factors from an earlier solve, with the method that worked
      attempt.precision = s.current;
      attempt.refinement = s.current_refinement;
      report.attempts.push_back(attempt);
    }
    first_attempt = false;
    Attempt& attempt = report.attempts.back();
    const bool is_fallback = attempt.precision == Precision::FP64 && cheaper_tried;
    if (s.options.progress)
      s.options.progress("refinement " + to_string(attempt.refinement) + " with " + to_string(attempt.precision) +
                         " factors (" + std::to_string(b.cols) + " right-hand side" + (b.cols > 1 ? "s)" : ")"));
    const auto t1 = Clock::now();
    const bool higher_rung = s.next < s.path.size() && attempt.precision != Precision::FP64;
    // Under Refinement::Auto a classic refinement that stalls gets GMRES-IR with the same factors
    // before anything is refactored: the LU may be good enough as a preconditioner although its
    // contraction (~ cond * u * growth) is too close to 1 for classic IR (FP32-accurate LUs from
    // n ~ 32768 at cond 1e6, on the GPU). Not while another factorization short of FP64 remains
    // on the path: refactoring one rung up then costs about as much as the retry and converges
    // where it does not (H100, n = 16384 and 32768, a path FP16 -> FP32 -> FP64: every FP16 retry
    // from cond 1e4 fails or runs out of budget after 50-81 GMRES iterations, and FP32 converges).
    const bool cheaper_rung_left = s.next < s.path.size() && s.path[s.next] != Precision::FP64;
    const bool gmres_may_follow = s.options.refinement == Refinement::Auto &&
                                  attempt.refinement == Refinement::Classic &&
                                  attempt.precision != Precision::FP64 && !cheaper_rung_left;
    Refiner refiner(*s.engine, s.options, s.norm_a, s.badly_scaled, b, x,
                    s.options.escalate_by_cost && higher_rung ? kNextRungCostFactor * s.current_factor_seconds
                                                               : INFINITY,
                    gmres_may_follow, best);
    attempt.stop = refiner.run(attempt.refinement, attempt, report);
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
      retry.precision = attempt.precision;
      retry.refinement = Refinement::Gmres;
      report.attempts.push_back(retry);
      continue;
    }
    if (attempt.precision == Precision::FP64 && attempt.pivot_order == PivotOrder::Reused) {
      // The reused order's growth may be what stopped it: once more with partial pivoting.
      s.reused_order_failed = true;
      s.path.insert(s.path.begin() + std::ptrdiff_t(s.next), Precision::FP64);
      s.factored = false;
      continue;
    }
    if (attempt.precision == Precision::FP64 || s.next >= s.path.size()) break;  // nothing higher to try
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
  Factorization f(ctx, a, options);  // checks A
  return f.solve(b, x);              // checks B and X
}

}  // namespace mixsolve
