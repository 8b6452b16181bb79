// SPDX-License-Identifier: BSD-3-Clause
// Internal: iterative refinement of one right-hand-side block with an engine's current factors
// (classic IR and GMRES-IR, corrections in FP64, residuals in SolveOptions::residual_precision),
// the stop tests, and the best
// iterate a solve returns. The driver (solve.cpp) runs one refinement per attempt.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine.hpp"

namespace mixsolve::solvers_detail {

// About the backward error the LAPACK test asks for (SolveOptions::tolerance_factor): the test is
// ||r|| < this ||A|| ||x||. eps = LAPACK's dlamch('E') = 2^-53, as dsgesv.
inline double lapack_stop_test_backward_error(const SolveOptions& o, std::int64_t n) {
  return o.tolerance_factor * std::sqrt(double(n)) * std::numeric_limits<double>::epsilon() * 0.5;
}

// SolveOptions::residual_precision for a B of `columns` columns: Auto resolved.
inline ResidualPrecision residual_precision_for(const SolveOptions& o, std::int64_t columns) {
  if (o.residual_precision != ResidualPrecision::Auto) return o.residual_precision;
  return columns <= kDoubleDoubleResidualMaxColumns ? ResidualPrecision::DoubleDouble : ResidualPrecision::Fp64;
}

// The engine's scratch slot that holds BestIterate's copy (Refiner uses 0-3, the probe 0-2).
inline constexpr int kBestIterateSlot = 4;

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

  BestIterate(RefinementSpace& e, std::int64_t k)
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

  RefinementSpace& e_;
  MatrixView<double> store_;
  std::vector<Candidate> best_, current_;  // current_: the column's last iterate (x's, until restore)
  std::vector<bool> last_is_best_;           // offer() kept the column's last iterate
  std::vector<bool> stored_;                 // store_ holds an iterate of the column
  std::vector<double> smallest_accepted_;    // the smallest judged error of an accepted iterate
};

// Runs one attempt's refinement: X = LU \ B with the engine's current factors, then `method`
// (Classic or Gmres; None: the solve alone) until the stop test (SolveOptions::stop_test) ends
// every column or the attempt fails. Every iterate is offered to `best`; the attempt's iterations
// and the backward error after each solve go to `attempt` and `report`.
// next_rung_seconds: the estimated cost of refactoring one rung up; a GMRES inner solve whose
// remaining iterations would take longer gives way to it (SolveOptions::escalate_by_cost;
// INFINITY where there is no higher rung).
// gmres_may_follow: a classic refinement whose contraction is too slow gives way to GMRES-IR
// with the same factors (StopReason::TooSlow).
// componentwise (A is badly scaled, Engine::badly_scaled): iterates are judged by their
// componentwise backward error (docs/robustness.md); the LAPACK test stays normwise.
StopReason refine(RefinementSpace& e, const SolveOptions& o, double norm_a, bool componentwise, const MatrixView<const double>& b,
                  const MatrixView<double>& x, double next_rung_seconds, bool gmres_may_follow, BestIterate& best,
                  Refinement method, Attempt& attempt, SolveReport& report);

}  // namespace mixsolve::solvers_detail
