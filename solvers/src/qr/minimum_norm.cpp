// SPDX-License-Identifier: BSD-3-Clause
#include "qr/minimum_norm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "engine.hpp"  // Clock, seconds_since
#include "mixsolve/gemm/registry.hpp"
#include "qr/column_pivoted_qr.hpp"
#include "qr/householder_qr.hpp"
#include "scaled_norm.hpp"
#include "tuning.hpp"

namespace mixsolve::solvers_detail {

namespace {

// Stage 1 keeps a column only where |r_jj| of the cheap R exceeds this fraction of sigma_max:
// there FP32 factors' rounding (u_32 ||A||) cannot have made it, and A_S1's condition number
// stays near 2^12, so that the FP32-accurate R preconditions CGLS on A_S1 well.
constexpr double kCheapRankFloor = 0x1p-12;

// A dense column-major matrix on the host.
struct Dense {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Dense(std::int64_t r, std::int64_t c) : rows(r), cols(c), v(std::size_t(r * c), 0.0) {}
  double& operator()(std::int64_t i, std::int64_t j) { return v[std::size_t(i + j * rows)]; }
  double operator()(std::int64_t i, std::int64_t j) const { return v[std::size_t(i + j * rows)]; }
  MatrixView<const double> view() const {
    return host_view<const double>(v.data(), rows, cols, std::max<std::int64_t>(rows, 1));
  }
  MatrixView<double> view() { return host_view<double>(v.data(), rows, cols, std::max<std::int64_t>(rows, 1)); }
};

// y := R^-1 y for an upper triangular R (k x k).
void solve_upper(const Dense& r, double* y) {
  for (std::int64_t i = r.rows - 1; i >= 0; --i) {
    double sum = y[i];
    for (std::int64_t l = i + 1; l < r.rows; ++l) sum -= r(i, l) * y[l];
    y[i] = sum / r(i, i);
  }
}

LsFactorScales scales_of(const Dense& r) {
  double largest = 0, smallest = INFINITY;
  for (std::int64_t j = 0; j < r.rows; ++j) {
    largest = std::max(largest, std::fabs(r(j, j)));
    smallest = std::min(smallest, std::fabs(r(j, j)));
  }
  return {smallest, largest, largest > 0 ? smallest / largest : 0};
}

int severity(LeastSquaresStop s) {
  switch (s) {
    case LeastSquaresStop::Converged: return 0;
    case LeastSquaresStop::Stagnated: return 1;
    case LeastSquaresStop::MaxIterations: return 2;
    default: return 3;
  }
}

void note(MinimumNormResult& out, const LsRefinementResult& refined) {
  if (severity(refined.stop) > severity(out.stop)) out.stop = refined.stop;
  out.iterations = std::max(out.iterations, refined.iterations);
  out.inner_iterations = std::max(out.inner_iterations, refined.inner_iterations);
}

// The stages' times for the profile (tuning().profile: one line to stderr per solve).
struct StageTimes {
  Clock::time_point last = Clock::now();
  double pivots = 0, first_w = 0, remainder = 0, second_w = 0, solutions = 0, minimum_norm = 0;
  // Adds the time since the last call to `stage`.
  void lap(double& stage) {
    const auto now = Clock::now();
    stage += std::chrono::duration<double>(now - last).count();
    last = now;
  }
};

}  // namespace

TallColumns::PivotedR pivoted_r(const MatrixView<double>& c) {
  const ColumnPivotedQr qr(c);
  TallColumns::PivotedR out;
  out.rows = qr.steps();
  out.pivots = qr.pivots();
  out.r.assign(std::size_t(out.rows * c.cols), 0.0);
  for (std::int64_t q = 0; q < c.cols; ++q)
    for (std::int64_t i = 0; i < out.rows; ++i) out.r[std::size_t(i + q * out.rows)] = qr.r(i, q);
  return out;
}

double largest_singular_value(const MatrixView<const double>& r, int steps) {
  const std::int64_t p = r.rows, n = r.cols;
  double largest_column = 0;
  for (std::int64_t j = 0; j < n; ++j) largest_column = std::max(largest_column, scaled_norm2(&r(0, j), p));
  if (!(largest_column > 0)) return largest_column;
  // v: a fixed start with every component nonzero; w = R v, v = R^T w / ||R^T w||.
  std::vector<double> v(n), w(p);
  for (std::int64_t j = 0; j < n; ++j) v[j] = 1.0 + 0.5 * std::sin(double(j + 1));
  double estimate = 0;
  for (int step = 0; step < steps; ++step) {
    const double norm_v = scaled_norm2(v.data(), n);
    if (!(norm_v > 0)) break;  // R^T R v = 0: v in R's null space
    for (double& e : v) e /= norm_v;
    std::fill(w.begin(), w.end(), 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < p; ++i) w[i] += r(i, j) * v[j];
    estimate = std::max(estimate, scaled_norm2(w.data(), p));  // ||R v|| <= sigma_max for a unit v
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t i = 0; i < p; ++i) sum += r(i, j) * w[i];
      v[j] = sum;
    }
  }
  return std::max(estimate, largest_column);
}

LeadingPivots leading_pivots_on_host(const MatrixView<const double>& r, double relative_threshold) {
  const std::int64_t p = r.rows, n = r.cols;
  LeadingPivots out;
  out.sigma_max = n > 0 && p > 0 ? largest_singular_value(r) : 0;
  if (!(out.sigma_max > 0)) {  // r = 0: rank 0
    out.pivots.resize(std::size_t(n));
    for (std::int64_t j = 0; j < n; ++j) out.pivots[std::size_t(j)] = j;
    return out;
  }
  Dense copy(p, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < p; ++i) copy(i, j) = r(i, j);
  const ColumnPivotedQr qr(copy.view());
  const double threshold = relative_threshold * out.sigma_max;
  while (out.rank < qr.steps() && qr.diagonal(out.rank) > threshold) ++out.rank;
  out.pivots = qr.pivots();
  out.r.assign(std::size_t(out.rank * n), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < out.rank; ++i) out.r[std::size_t(i + j * out.rank)] = qr.r(i, j);
  return out;
}

LeadingPivots TallColumns::leading_pivots(const MatrixView<const double>& r, double relative_threshold) {
  return leading_pivots_on_host(r, relative_threshold);
}

MinimumNormResult minimum_norm_solution(Context& ctx, TallColumns& tall, const MatrixView<const double>& r,
                                        double rcond, int max_iterations, const MatrixView<double>& x) {
  const std::int64_t p = r.rows, n = r.cols, columns = x.cols;
  MinimumNormResult out;
  const auto start = Clock::now();
  // Columns first .. first + count - 1 of the target, into Y (kept x count).
  const auto refine = [&](TallColumns::Target target, std::int64_t first, std::int64_t count,
                          const LsFactorScales& scales, bool start_from_y, double* y) {
    const auto t0 = Clock::now();
    for (const LsRefinementResult& refined : tall.refine(target, first, count, scales, max_iterations, start_from_y, y))
      note(out, refined);
    out.refine_seconds += seconds_since(t0);
  };
  StageTimes stages;
  const auto finish = [&]() -> MinimumNormResult& {
    out.factor_seconds = seconds_since(start) - out.refine_seconds;
    if (tuning().profile) {
      stages.lap(stages.minimum_norm);
      std::fprintf(stderr,
                   "rank-revealing profile: n %lld, rank %lld (stage 1 %lld), %lld right-hand sides: stage 1 "
                   "pivots %.2f ms, W %.2f ms, remainder QR %.2f ms, W again %.2f ms, solutions %.2f ms, "
                   "minimum-norm %.2f ms; most iterations %d (%d inner)\n",
                   static_cast<long long>(n), static_cast<long long>(out.rank), static_cast<long long>(out.cheap_rank),
                   static_cast<long long>(columns), 1e3 * stages.pivots, 1e3 * stages.first_w, 1e3 * stages.remainder,
                   1e3 * stages.second_w, 1e3 * stages.solutions, 1e3 * stages.minimum_norm, out.iterations,
                   out.inner_iterations);
    }
    return out;
  };
  for (std::int64_t j = 0; j < columns; ++j)
    for (std::int64_t i = 0; i < n; ++i) x(i, j) = 0;
  // Stage 1: column pivoting on R.
  const LeadingPivots p1 = tall.leading_pivots(r, std::max(rcond, kCheapRankFloor));
  out.sigma_max = p1.sigma_max;
  stages.lap(stages.pivots);
  if (!(out.sigma_max > 0)) return finish();  // A = 0: rank 0, x = 0
  const double tau = rcond * out.sigma_max;
  const std::int64_t k1 = p1.rank;
  const auto r1 = [&](std::int64_t i, std::int64_t j) { return p1.r[std::size_t(i + j * k1)]; };
  out.cheap_rank = k1;
  const std::int64_t nd = n - k1;
  Dense rs1(k1, k1), w(k1, nd);
  for (std::int64_t j = 0; j < k1; ++j)
    for (std::int64_t i = 0; i <= j; ++i) rs1(i, j) = r1(i, j);
  std::vector<std::int64_t> order = p1.pivots;
  tall.choose(order, k1);
  // W = A_S1^+ A_N1, from R_1's own R11^-1 R12 refined in FP64.
  bool preconditioned = false;  // the tall side's preconditioner is R of the current A_S
  if (k1 > 0 && nd > 0) {
    const LsFactorScales scales = scales_of(rs1);
    tall.precondition(rs1.view());
    preconditioned = true;
    for (std::int64_t c = 0; c < nd; ++c) {
      for (std::int64_t i = 0; i < k1; ++i) w(i, c) = r1(i, k1 + c);
      solve_upper(rs1, &w(0, c));
    }
    refine(TallColumns::Target::DroppedColumn, 0, nd, scales, true, w.v.data());
  }
  stages.lap(stages.first_w);

  // Stage 2: the remainder C = A_N1 - A_S1 W in FP64, with column pivoting.
  std::int64_t k2 = 0;
  Dense rs = rs1, wt = w;  // R_S and W = A_S^+ A_N for the final S and N
  if (nd > 0) {
    const TallColumns::PivotedR c = tall.remainder_qr(w.view());
    stages.lap(stages.remainder);
    const auto rc = [&](std::int64_t i, std::int64_t j) { return c.r[std::size_t(i + j * c.rows)]; };
    // At most min(m, n) = p columns in S: beyond, C's |r_jj| can only be rounding.
    while (k2 < c.rows && k1 + k2 < p && std::fabs(rc(k2, k2)) > tau) ++k2;
    const std::vector<std::int64_t>& q = c.pivots;
    for (std::int64_t i = 0; i < nd; ++i) order[k1 + i] = p1.pivots[k1 + q[i]];
    const std::int64_t k = k1 + k2, rest = n - k;
    // R_S = [R11, R11 W_sel; 0, R_2,11], W_sel = W's columns that joined S.
    rs = Dense(k, k);
    for (std::int64_t j = 0; j < k1; ++j)
      for (std::int64_t i = 0; i <= j; ++i) rs(i, j) = rs1(i, j);
    for (std::int64_t col = 0; col < k2; ++col) {
      for (std::int64_t i = 0; i < k1; ++i) {
        double sum = 0;
        for (std::int64_t l = i; l < k1; ++l) sum += rs1(i, l) * w(l, q[col]);
        rs(i, k1 + col) = sum;
      }
      for (std::int64_t i = 0; i <= col; ++i) rs(k1 + i, k1 + col) = rc(i, col);
    }
    // W for S: C_rest = C_sel Z + (dropped), Z = R_2,11^-1 R_2,12, so A_rest = A_S1 (W_rest -
    // W_sel Z) + A_sel Z up to the dropped part.
    Dense r211(k2, k2);
    for (std::int64_t j = 0; j < k2; ++j)
      for (std::int64_t i = 0; i <= j; ++i) r211(i, j) = rc(i, j);
    wt = Dense(k, rest);
    std::vector<double> z(k2);
    for (std::int64_t col = 0; col < rest; ++col) {
      for (std::int64_t i = 0; i < k2; ++i) z[i] = rc(i, k2 + col);
      solve_upper(r211, z.data());
      for (std::int64_t i = 0; i < k1; ++i) {
        double sum = w(i, q[k2 + col]);
        for (std::int64_t l = 0; l < k2; ++l) sum -= w(i, q[l]) * z[l];
        wt(i, col) = sum;
      }
      for (std::int64_t i = 0; i < k2; ++i) wt(k1 + i, col) = z[i];
    }
    // With no column joining S (k2 = 0), A_S and its preconditioner stay; W is no longer needed
    // by the tall side (the solutions target B).
    if (k2 > 0) {
      tall.choose(order, k);
      preconditioned = false;
    }
    if (k2 > 0 && rest > 0) {
      const LsFactorScales scales = scales_of(rs);
      tall.precondition(rs.view());
      preconditioned = true;
      refine(TallColumns::Target::DroppedColumn, 0, rest, scales, true, wt.v.data());
    }
    stages.lap(stages.second_w);
    out.sigma_dropped = k2 < c.rows ? std::fabs(rc(k2, k2)) : 0;
    out.sigma_kept = k2 > 0 ? std::fabs(rc(k2 - 1, k2 - 1)) : k1 > 0 ? std::fabs(r1(k1 - 1, k1 - 1)) : 0;
  } else {
    out.sigma_kept = std::fabs(r1(n - 1, n - 1));
  }
  const std::int64_t k = k1 + k2, rest = n - k;
  out.rank = k;
  if (k == 0) return finish();  // every column below tau: x = 0

  // The basic solutions z = A_S^+ b, then the minimum-norm solution x' (in S, N order) of
  // [I W] x' = z.
  const LsFactorScales scales = scales_of(rs);
  if (!preconditioned) tall.precondition(rs.view());
  Dense z(k, columns);
  refine(TallColumns::Target::RightHandSide, 0, columns, scales, false, z.v.data());
  stages.lap(stages.solutions);
  Dense y(n, columns);
  const gemm::Backend& fp64 = gemm::find_backend("host-fp64");
  if (rest == 0) {
    y = z;
  } else if (k <= rest) {  // x' = Q R^-T z for [I; W^T] = Q R (n x k)
    Dense mt(n, k);
    for (std::int64_t col = 0; col < k; ++col) {
      mt(col, col) = 1;
      for (std::int64_t j = 0; j < rest; ++j) mt(k + j, col) = wt(col, j);
    }
    const HouseholderQr<double> qr(ctx, mt.view(), 32, fp64);
    for (std::int64_t j = 0; j < columns; ++j)
      for (std::int64_t i = 0; i < k; ++i) y(i, j) = z(i, j);
    qr.solve_rt(y.view());
    qr.apply_q(y.view());
  } else {  // x_N = argmin ||[W; I] x_N - [z; 0]||, x_S = z - W x_N
    Dense mw(n, rest);
    for (std::int64_t col = 0; col < rest; ++col) {
      for (std::int64_t i = 0; i < k; ++i) mw(i, col) = wt(i, col);
      mw(k + col, col) = 1;
    }
    const HouseholderQr<double> qr(ctx, mw.view(), 32, fp64);
    Dense t(n, columns);
    for (std::int64_t j = 0; j < columns; ++j)
      for (std::int64_t i = 0; i < k; ++i) t(i, j) = z(i, j);
    qr.apply_qt(t.view());
    qr.solve_r(t.view());  // rows 0 .. rest-1: x_N
    for (std::int64_t j = 0; j < columns; ++j) {
      for (std::int64_t i = 0; i < k; ++i) {
        double sum = z(i, j);
        for (std::int64_t col = 0; col < rest; ++col) sum -= wt(i, col) * t(col, j);
        y(i, j) = sum;
      }
      for (std::int64_t col = 0; col < rest; ++col) y(k + col, j) = t(col, j);
    }
  }
  for (std::int64_t j = 0; j < columns; ++j)
    for (std::int64_t i = 0; i < n; ++i) x(order[i], j) = y(i, j);
  return finish();
}

}  // namespace mixsolve::solvers_detail
