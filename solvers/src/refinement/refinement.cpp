// SPDX-License-Identifier: BSD-3-Clause
#include "refinement/refinement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <vector>

#include "refinement/givens_hessenberg.hpp"
#include "refinement/krylov_basis.hpp"
#include "tuning.hpp"

namespace mixsolve::solvers_detail {

namespace {

// Inner GMRES tolerance (relative to the preconditioned residual): the outer FP64 loop corrects
// what the inner solve leaves, so a moderate value suffices. A later outer step, whose backward
// error is already close to the stop test, only asks for the reduction it still needs (times a
// safety factor of 10), down to this.
constexpr double kGmresTolerance = 1e-8;
constexpr double kGmresLoosest = 1e-2;
// The least inner target with a Krylov basis stored in a format of unit roundoff u: this times u.
constexpr double kStoredBasisTargetFactor = 4;

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
  Refiner(RefinementSpace& e, const SolveOptions& o, double norm_a, bool componentwise, const MatrixView<const double>& b,
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
    proven_.assign(k_, fp64_factorization(attempt) || o_.stop_test == StopTest::Lapack);
    ready_.assign(k_, false);
    correction_norm_.assign(k_, 0.0);
    correction_ratio_.assign(k_, INFINITY);
    contracting_.assign(k_, false);
    // With FP64 factors the FP64 residual's own rounding (about n u |A||x|) makes every
    // correction about cond(A) u ||x||, the size of the LU's own error: refinement in one precision
    // lowers the backward error, not the forward error (Higham, ASNA 2nd ed., sec. 12.2), and a
    // correction that halves by chance buys nothing (watching it, the GPU solves at n = 2100
    // cond 1e3 and n = 20480 take 3-4 steps instead of 2, with the same errors). With
    // double-double residuals the corrections are the forward error's (refinement in three
    // precisions, u_r = u^2: Carson & Higham 2018), so they are watched, and a column is done
    // once the next one, extrapolated, falls to x's rounding (settle_, evaluate), whatever the
    // factors: the backward error, which then keeps halving below u, would take one to three
    // steps more (FP64 factors: mostly one step instead of two).
    residual_precision_ = residual_precision_for(o_, k_);
    settle_ = residual_precision_ == ResidualPrecision::DoubleDouble;
    watch_correction_ = !fp64_factorization(attempt) || settle_;
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
    e_.residual(x_, b_, r, residual_precision_);
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
      bool settled = false;
      if (previous && !done[j] && watch_correction_) {
        const double ratio = xn[j] > 0 ? correction_norm_[j] / xn[j] : 0.0;
        // ... and while the next correction, extrapolated from the last two, would still exceed
        // FP64's rounding of x: the step that would only confirm a settled x is saved (1-5% on
        // elasticity, convdiff and the FP64 fallbacks of Hilbert and rankdef, same errors).
        contracting_[j] = ratio > kSettledCorrection && ratio <= 0.5 * correction_ratio_[j] &&
                          ratio * (ratio / correction_ratio_[j]) > kSettledCorrection &&
                          polishing_steps_[j] < kPolishingSteps;
        // settle_: the next correction extrapolated from this one and the one before: the step
        // after it would not move x. After the first step the rate is guessed from the first
        // solve's error (this correction against x, of ratio 1), which can underestimate it:
        // kFirstStepRateMargin.
        const double predicted = correction_ratio_[j] < INFINITY ? ratio * (ratio / correction_ratio_[j])
                                                                 : kFirstStepRateMargin * ratio * ratio;
        settled = settle_ && predicted <= kSettledCorrection;
        correction_ratio_[j] = ratio;
        if (was_ready) ++polishing_steps_[j];
      }
      done[j] = done[j] || (o_.stop_test == StopTest::Lapack
                                ? converged_[j]
                                : ready_[j] && (rn[j] == 0 || settled || (at_limit && !contracting_[j])));
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
  // How much the first step's rate estimate (its correction over x) may fall short of the true
  // rate: 3-270x where the next correction still lay above x's rounding (a host model, n = 200,
  // FP64 LU, cond 1e3-1e10, 252 cases, 2026-12-03), so 1024.
  static constexpr double kFirstStepRateMargin = 1024;
  // The most steps a converged column takes while its correction contracts (evaluate).
  static constexpr int kPolishingSteps = 4;
  double stop_test_backward_error() const { return lapack_stop_test_backward_error(o_, n_); }

  // GMRES on (LU)^-1 A d = (LU)^-1 r in FP64 (left preconditioning), restarted, until the
  // preconditioned residual falls by `target`; x += d. Returns the number of inner iterations.
  // first_step: the attempt's first outer step, whose budget is also judged inside a cycle.
  int gmres_correction(const double* r, double* x, double target, bool first_step, double* correction_norm) {
    const auto gmres_start = Clock::now();
    const int m = o_.gmres_restart;
    // The basis: FP64 columns of scratch slot 2, or stored short (krylov_basis.hpp), where slot 2
    // holds only the widened column being multiplied.
    const bool stored = o_.krylov_basis_format != slfp::Format::Fp64;
    if (stored && (!stored_basis_ || stored_basis_->columns() < m + 1))
      stored_basis_ = std::make_unique<StoredKrylovBasis>(e_, m + 1, o_.krylov_basis_format);
    // A stored basis' Givens estimate follows the true residual only down to about its unit
    // roundoff (krylov_basis.hpp): below that the estimate stalls and the budget would read the
    // stall as a slow rate. The inner solve stops there instead, and the outer steps go on.
    if (stored) target = std::max(target, kStoredBasisTargetFactor * stored_basis_->unit_roundoff());
    const MatrixView<double> v = e_.scratch(2, stored ? 1 : m + 1);
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
      GivensHessenberg hessenberg(m, beta);
      e_.copy(wv, column(v, 0));
      e_.scal(1.0 / beta, &v(0, 0));
      if (stored) stored_basis_->store(0, &v(0, 0));
      int j = 0;
      const bool later_cycle = total > 0;
      for (; j < m && total < o_.gmres_max_inner; ++j, ++total) {
        if (stored) stored_basis_->load(j, &v(0, 0));
        e_.multiply(stored ? &v(0, 0) : &v(0, j), w);
        e_.apply_inverse(host_column(w));
        const double hn = stored ? stored_basis_->orthogonalize(j + 1, w, hessenberg.column(j))
                                 : e_.orthogonalize(v, j + 1, w, hessenberg.column(j));
        hessenberg.at(j + 1, j) = hn;
        if (hn > 0 && stored) {
          e_.scal(1.0 / hn, w);
          stored_basis_->store(j + 1, w);
        } else if (hn > 0) {
          e_.copy(host_column(w), column(v, j + 1));
          e_.scal(1.0 / hn, &v(0, j + 1));
        }
        const double estimate = hessenberg.rotate(j);
        estimates.push_back(estimate);
        if (trace_ && (total + 1) % 4 == 0)
          std::fprintf(stderr, "gmres: iteration %d, Givens estimate %.3e of the first residual\n", total + 1,
                       estimate / beta0);
        if (estimate <= target * beta0 || hn == 0) {
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
        if (later_cycle && j + 1 == kGmresJudgeAfter && estimate > 0.5 * beta) {
          ++j;
          ++total;
          stagnated = true;
          break;
        }
      }
      // y = H^-1 g (upper triangular j x j), d += V y
      const std::vector<double> y = hessenberg.solve(j);
      if (stored)
        stored_basis_->add_combination(j, y.data(), d);
      else
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

  RefinementSpace& e_;
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
  bool watch_correction_ = true;  // the corrections say how far x is from settled (run())
  bool settle_ = false;           // double-double residuals: a column is done once settled (run())
  ResidualPrecision residual_precision_ = ResidualPrecision::DoubleDouble;  // resolved (run())
  std::vector<int> polishing_steps_;  // steps taken since the column was ready
  // The normwise backward errors of the last evaluate: how far a column is from the (normwise)
  // LAPACK test, where berr is componentwise (componentwise_).
  std::vector<double> normwise_;
  bool inner_stagnated_ = false;  // the last inner solve ended because a cycle stagnated
  std::unique_ptr<StoredKrylovBasis> stored_basis_;  // SolveOptions::krylov_basis_format other than Fp64
  bool too_slow_ = false;  // a GMRES of this attempt predicted more iterations or time than its budget
  double next_rung_seconds_;
  bool gmres_may_follow_;
  BestIterate& best_;
  // Tuning::gmres_trace: each budget judgement goes to stderr.
  bool trace_ = solvers_detail::tuning().gmres_trace;
};

}  // namespace

StopReason refine(RefinementSpace& e, const SolveOptions& o, double norm_a, bool componentwise, const MatrixView<const double>& b,
                  const MatrixView<double>& x, double next_rung_seconds, bool gmres_may_follow, BestIterate& best,
                  Refinement method, Attempt& attempt, SolveReport& report) {
  Refiner refiner(e, o, norm_a, componentwise, b, x, next_rung_seconds, gmres_may_follow, best);
  return refiner.run(method, attempt, report);
}

}  // namespace mixsolve::solvers_detail
