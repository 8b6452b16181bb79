// SPDX-License-Identifier: BSD-3-Clause
// least_squares(): the precision path (the cheap QR, then FP64 where its refinement fails), the
// checks of the arguments, and the report. The QR and the refinement: src/qr/.
#include "mixsolve/solvers/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "engine.hpp"  // Clock, seconds_since
#include "mixsolve/gemm/registry.hpp"
#include "qr/householder_qr.hpp"
#include "qr/least_squares_refinement.hpp"

namespace mixsolve {

namespace {

using solvers_detail::LsStop;

constexpr int kDefaultQrBlock = 32;
// Below this min |r_jj| / max |r_jj|, FP32 factors leave the rank to the FP64 QR.
constexpr double kCheapRankRatio = 16 * 0x1p-24;

LeastSquaresStop public_stop(LsStop s) {
  switch (s) {
    case LsStop::Converged: return LeastSquaresStop::Converged;
    case LsStop::Stagnated: return LeastSquaresStop::Stagnated;
    case LsStop::Diverged: return LeastSquaresStop::Diverged;
    case LsStop::MaxIterations: return LeastSquaresStop::MaxIterations;
  }
  return LeastSquaresStop::Diverged;
}

// The order in which stops are worse: the attempt reports its worst column's.
int severity(LeastSquaresStop s) {
  switch (s) {
    case LeastSquaresStop::Converged: return 0;
    case LeastSquaresStop::Stagnated: return 1;
    case LeastSquaresStop::MaxIterations: return 2;
    case LeastSquaresStop::Diverged: return 3;
    case LeastSquaresStop::RankUndecided: return 4;
  }
  return 4;
}

bool accepted(LeastSquaresStop s) { return s == LeastSquaresStop::Converged || s == LeastSquaresStop::Stagnated; }

// The first (row, column) of a host matrix holding NaN or Inf, or (-1, -1).
std::pair<std::int64_t, std::int64_t> find_nonfinite(const MatrixView<const double>& m) {
  for (std::int64_t j = 0; j < m.cols; ++j)
    for (std::int64_t i = 0; i < m.rows; ++i)
      if (!std::isfinite(m(i, j))) return {i, j};
  return {-1, -1};
}

// An estimate of sigma_min(A) from above: ||A v||_2 (A in FP64) for the unit v that
// v = R^-1 e_j, then v := R^-1 R^-T v (inverse iteration on R^T R), normalised, give; j the
// smallest |r_jj|. With FP64 factors v is the
// smallest singular vector to about u_64 kappa, so a rank deficiency shows as ||A v|| near
// u_64 ||A||; ||A v|| >= sigma_min(A) holds for any v.
double smallest_singular_value_bound(const MatrixView<const double>& a, const std::vector<double>& factors,
                                     std::int64_t start) {
  const std::int64_t m = a.rows, n = a.cols;
  const auto r = [&](std::int64_t i, std::int64_t j) { return factors[i + j * m]; };
  const auto normalize = [](std::vector<double>& v) {
    double s = 0;
    for (double e : v) s += e * e;
    s = std::sqrt(s);
    if (s > 0 && std::isfinite(s))
      for (double& e : v) e /= s;
  };
  const auto solve_r = [&](std::vector<double>& v) {  // v := R^-1 v
    for (std::int64_t i = n - 1; i >= 0; --i) {
      double s = v[i];
      for (std::int64_t j = i + 1; j < n; ++j) s -= r(i, j) * v[j];
      v[i] = r(i, i) != 0 ? s / r(i, i) : s;
    }
  };
  const auto solve_rt = [&](std::vector<double>& v) {  // v := R^-T v
    for (std::int64_t i = 0; i < n; ++i) {
      double s = v[i];
      for (std::int64_t j = 0; j < i; ++j) s -= r(j, i) * v[j];
      v[i] = r(i, i) != 0 ? s / r(i, i) : s;
    }
  };
  const auto times_a = [&](const std::vector<double>& v) {  // A v, FP64
    std::vector<double> y(m, 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) y[i] += a(i, j) * v[j];
    return y;
  };
  std::vector<double> v(n, 0.0);
  v[start] = 1;
  solve_r(v);
  normalize(v);
  solve_rt(v);
  solve_r(v);
  normalize(v);
  double sum = 0;
  for (const double e : times_a(v)) sum += e * e;
  return std::sqrt(sum);
}

// One attempt in precision T: the QR of A rounded to T, then each column refined in FP64.
template <class T>
LeastSquaresAttempt attempt(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                            const MatrixView<double>& x, const LeastSquaresOptions& options) {
  const std::int64_t m = a.rows, n = a.cols;
  LeastSquaresAttempt result;
  result.precision = std::is_same_v<T, float> ? Precision::FP32 : Precision::FP64;
  const auto t0 = solvers_detail::Clock::now();
  // The factors are of a_scale A, a power of two that brings A's largest entry near 1: FP32's
  // range would not hold every FP64 A (the refinement undoes the scale exactly).
  double largest_entry = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) largest_entry = std::max(largest_entry, std::fabs(a(i, j)));
  int exponent = 0;
  if (largest_entry > 0) std::frexp(largest_entry, &exponent);
  const double a_scale = std::ldexp(1.0, -exponent);
  std::vector<T> factors(m * n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) factors[i + j * m] = T(a_scale * a(i, j));
  const solvers_detail::HouseholderQr<T> qr(ctx, host_view(factors.data(), m, n, m),
                                            options.block_size > 0 ? options.block_size : kDefaultQrBlock,
                                            gemm::find_backend(std::is_same_v<T, float> ? "host-fp32" : "host-fp64"));
  double largest = 0, smallest = INFINITY;
  std::int64_t smallest_column = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double d = std::fabs(double(factors[j + j * m]));
    largest = std::max(largest, d);
    if (d < smallest) smallest = d, smallest_column = j;
  }
  result.diagonal_ratio = largest > 0 ? smallest / largest : 0;
  result.factor_seconds = solvers_detail::seconds_since(t0);
  // FP32 factors carry rounding of order u_32 ||A||: where R's diagonal falls to 16 u_32 of its
  // largest entry they cannot tell an ill-conditioned A (kappa >~ 1e6) from a rank-deficient one,
  // and the FP64 QR decides, unrefined here.
  if (std::is_same_v<T, float> && !(result.diagonal_ratio > kCheapRankRatio)) {
    result.stop = LeastSquaresStop::RankUndecided;
    return result;
  }
  // Numerically rank deficient (sigma_min(A) <= max(m, n) 2^-53 ||A||_F): the least-squares
  // solution is not unique, and a refinement would settle on one of them. Checked where R's
  // diagonal spans more than 2^10.
  if constexpr (std::is_same_v<T, double>)
    if (!(result.diagonal_ratio > 0x1p-10)) {
      double norm_a = 0;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) norm_a += a(i, j) * a(i, j);
      norm_a = std::sqrt(norm_a);
      const double bound = smallest_singular_value_bound(a, factors, smallest_column);
      const double tolerance = double(std::max(m, n)) * 0x1p-53 * norm_a;
      if (!(bound > tolerance)) {
        char text[200];
        std::snprintf(text, sizeof text,
                      "least_squares: A is numerically rank deficient: ||A v|| = %.3g for a unit v (at most max(m, n) "
                      "2^-53 ||A||_F = %.3g); smallest |r_jj| at column %lld",
                      bound, tolerance, static_cast<long long>(smallest_column));
        throw RankDeficientMatrix(text, smallest_column);
      }
    }
  const auto t1 = solvers_detail::Clock::now();
  std::vector<double> r(m);
  for (std::int64_t j = 0; j < b.cols; ++j) {
    const solvers_detail::LsRefinementResult refined =
        solvers_detail::refine_least_squares(a, &b(0, j), qr, a_scale, options.max_iterations, &x(0, j), r.data());
    const LeastSquaresStop stop = public_stop(refined.stop);
    if (severity(stop) > severity(result.stop)) result.stop = stop;
    result.iterations = std::max(result.iterations, refined.iterations);
  }
  result.refine_seconds = solvers_detail::seconds_since(t1);
  return result;
}

}  // namespace

std::string to_string(LeastSquaresStop s) {
  switch (s) {
    case LeastSquaresStop::Converged: return "converged";
    case LeastSquaresStop::Stagnated: return "stagnated";
    case LeastSquaresStop::Diverged: return "diverged";
    case LeastSquaresStop::MaxIterations: return "max iterations";
    case LeastSquaresStop::RankUndecided: return "rank undecided";
  }
  return "unknown";
}

std::string LeastSquaresReport::path() const {
  std::string out;
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    const LeastSquaresAttempt& t = attempts[i];
    if (i) out += " -> ";
    out += to_string(t.precision);
    if (accepted(t.stop))
      out += "/augmented(" + std::to_string(t.iterations) + ")";
    else
      out += "[" + to_string(t.stop) +
             (t.stop == LeastSquaresStop::RankUndecided ? std::string() : " after " + std::to_string(t.iterations)) +
             "]";
  }
  return out;
}

LeastSquaresReport least_squares(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                                 const MatrixView<double>& x, const LeastSquaresOptions& options) {
  const char* where = "least_squares";
  detail::check_view(where, "A", a);
  detail::check_view(where, "B", b);
  detail::check_view(where, "X", x);
  if (a.memory != Memory::Host || b.memory != Memory::Host || x.memory != Memory::Host)
    throw InvalidArgument("least_squares: A, B and X must be in host memory (the device path is not built yet)");
  if (a.rows < a.cols)
    throw InvalidArgument("least_squares: A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ": fewer rows than columns (underdetermined systems are not supported)");
  if (b.rows != a.rows)
    throw InvalidArgument("least_squares: B has " + std::to_string(b.rows) + " rows, A " + std::to_string(a.rows));
  if (x.rows != a.cols || x.cols != b.cols)
    throw InvalidArgument("least_squares: X is " + std::to_string(x.rows) + " x " + std::to_string(x.cols) + ", not " +
                          std::to_string(a.cols) + " x " + std::to_string(b.cols));
  const auto overlap = [](const auto& p, const auto& q) {  // the address ranges the two views span
    if (p.empty() || q.empty()) return false;
    const auto* p0 = reinterpret_cast<const char*>(p.data);
    const auto* p1 = reinterpret_cast<const char*>(p.data + (p.cols - 1) * p.ld + p.rows);
    const auto* q0 = reinterpret_cast<const char*>(q.data);
    const auto* q1 = reinterpret_cast<const char*>(q.data + (q.cols - 1) * q.ld + q.rows);
    return p0 < q1 && q0 < p1;
  };
  if (overlap(x, a) || overlap(x, b))
    throw InvalidArgument("least_squares: X must not overlap A or B (both are read until the end)");
  if (options.factorization != Precision::FP32 && options.factorization != Precision::FP64)
    throw InvalidArgument("least_squares: factorization " + to_string(options.factorization) +
                          " is not supported (fp32 or fp64)");
  if (options.max_iterations < 1)
    throw InvalidArgument("least_squares: max_iterations (" + std::to_string(options.max_iterations) + ") < 1");
  if (options.block_size < 0)
    throw InvalidArgument("least_squares: block_size (" + std::to_string(options.block_size) + ") < 0");
  for (const auto& [name, m] : {std::pair{"A", a}, std::pair{"B", b}}) {
    const auto bad = find_nonfinite(m);
    if (bad.first >= 0)
      throw InvalidArgument(std::string("least_squares: ") + name + "(" + std::to_string(bad.first) + ", " +
                            std::to_string(bad.second) + ") is NaN or Inf");
  }

  LeastSquaresReport report;
  if (a.cols == 0 || b.cols == 0) {
    report.converged = true;
  } else {
    std::vector<Precision> path = {options.factorization};
    if (options.fallback && options.factorization != Precision::FP64) path.push_back(Precision::FP64);
    for (std::size_t i = 0; i < path.size(); ++i) {
      report.attempts.push_back(path[i] == Precision::FP32 ? attempt<float>(ctx, a, b, x, options)
                                                           : attempt<double>(ctx, a, b, x, options));
      report.fell_back = i > 0;
      if (accepted(report.attempts.back().stop)) {
        report.converged = true;
        break;
      }
    }
    if (report.attempts.back().stop == LeastSquaresStop::RankUndecided)  // no fallback: no solution
      for (std::int64_t j = 0; j < x.cols; ++j)
        for (std::int64_t i = 0; i < x.rows; ++i) x(i, j) = NAN;
  }
  for (std::int64_t j = 0; j < b.cols; ++j) {
    std::vector<double> r(b.rows);
    for (std::int64_t i = 0; i < b.rows; ++i) r[i] = b(i, j);
    for (std::int64_t l = 0; l < a.cols; ++l)
      for (std::int64_t i = 0; i < a.rows; ++i) r[i] -= a(i, l) * x(l, j);
    double sum = 0;
    for (double v : r) sum += v * v;
    report.residual_norms.push_back(std::sqrt(sum));
  }
  return report;
}

}  // namespace mixsolve
