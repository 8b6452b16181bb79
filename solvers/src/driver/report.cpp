// SPDX-License-Identifier: BSD-3-Clause
// The names of solve_options.hpp's and solve_report.hpp's enumerations (to_string and parse_*),
// and SolveReport::summary.
#include <iomanip>
#include <sstream>
#include <string>

#include "mixsolve/core/error.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "precisions.hpp"

namespace mixsolve {

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

std::string to_string(Structure s) {
  switch (s) {
    case Structure::General: return "general";
    case Structure::Spd: return "spd";
    case Structure::Auto: return "auto";
  }
  return "?";
}

Structure parse_structure(const std::string& text) {
  for (Structure s : {Structure::General, Structure::Spd, Structure::Auto})
    if (to_string(s) == text) return s;
  throw InvalidArgument("structure \"" + text + "\" is not one of general, spd, auto");
}

std::string to_string(FactorKind k) { return k == FactorKind::Cholesky ? "Cholesky" : "LU"; }

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

std::string to_string(ResidualPrecision p) {
  switch (p) {
    case ResidualPrecision::Auto: return "auto";
    case ResidualPrecision::Fp64: return "fp64";
    case ResidualPrecision::DoubleDouble: return "double-double";
  }
  return "?";
}

ResidualPrecision parse_residual_precision(const std::string& text) {
  for (ResidualPrecision p : {ResidualPrecision::Auto, ResidualPrecision::Fp64, ResidualPrecision::DoubleDouble})
    if (to_string(p) == text) return p;
  throw InvalidArgument("residual precision \"" + text + "\" is not one of auto, fp64, double-double");
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
    case StopReason::NotPositiveDefinite: return "pivot not positive (not positive definite in this arithmetic)";
  }
  return "?";
}

std::string to_string(PivotOrder o) {
  switch (o) {
    case PivotOrder::Partial: return "partial pivoting";
    case PivotOrder::Reused: return "reused row order";
    case PivotOrder::Rejected: return "reused row order rejected, then partial pivoting";
    case PivotOrder::DiagonalBlocks: return "pivoting inside the diagonal blocks";
    case PivotOrder::DiagonalBlocksRejected:
      return "pivoting inside the diagonal blocks rejected, then partial pivoting";
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
  if (residual_precision == ResidualPrecision::Fp64) s << ", FP64 residuals";
  s << "\n";
  if (near_diagonal_estimate >= 0)
    s << "  near-diagonal screen: ||D^-1 (A - D)||_2 ~ " << std::setprecision(3) << near_diagonal_estimate
      << std::setprecision(6) << "\n";
  for (const Attempt& a : attempts) {
    s << "  " << to_string(a.precision) << (a.range_scaled ? " (range-scaled)" : "");
    if (a.precision == Precision::Ozaki)
      s << (a.emulated_bits > 0 ? " (updates emulated, " + std::to_string(a.emulated_bits) + " bits)"
                                : " (every update in FP64)");
    if (a.pivot_order != PivotOrder::Partial) {
      s << " (" << to_string(a.pivot_order);
      if (a.pivot_order == PivotOrder::Reused) s << " for " << a.reused_columns << " columns";
      s << ", max |l_ij| " << std::setprecision(3) << a.largest_multiplier << std::setprecision(6) << ")";
    }
    s << " " << to_string(a.factor) << " + " << to_string(a.refinement) << ": " << to_string(a.stop);
    if (a.stop == StopReason::ZeroPivot || a.stop == StopReason::NotPositiveDefinite)
      s << " in column " << a.zero_pivot_column;
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

}  // namespace mixsolve
