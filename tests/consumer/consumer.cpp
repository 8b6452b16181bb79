// SPDX-License-Identifier: BSD-3-Clause
// Solves a small host system through the installed headers and libraries, then its symmetric
// part as an SPD system with options read from text; exits 0 when both reports say converged and
// x matches the known solution.
#include <mixsolve/solvers/factor_once.hpp>
#include <mixsolve/solvers/options.hpp>
#include <mixsolve/solvers/solve.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  const std::int64_t n = 64;
  std::vector<double> a(n * n), x_true(n), b(n, 0.0), x(n, 0.0);
  for (std::int64_t j = 0; j < n; ++j) {
    x_true[j] = 1.0 + 0.01 * static_cast<double>(j);
    for (std::int64_t i = 0; i < n; ++i) a[i + j * n] = i == j ? 4.0 : 1.0 / static_cast<double>(1 + i + 2 * j);
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) b[i] += a[i + j * n] * x_true[j];

  mixsolve::Context ctx = mixsolve::Context::host_only();
  const mixsolve::SolveReport report =
      mixsolve::solve(ctx, mixsolve::host_view<const double>(a.data(), n, n, n),
                      mixsolve::host_view<const double>(b.data(), n, 1, n), mixsolve::host_view(x.data(), n, 1, n));
  double error = 0.0;
  for (std::int64_t i = 0; i < n; ++i) error = std::fmax(error, std::fabs(x[i] - x_true[i]));
  std::printf("%s\nmax |x - x_true| = %.3g\n", report.summary().c_str(), error);

  // (A + A^T) / 2: diagonal 4, off-diagonal entries below 1: symmetric positive definite.
  std::vector<double> s(n * n), bs(n, 0.0), xs(n, 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) s[i + j * n] = 0.5 * (a[i + j * n] + a[j + i * n]);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) bs[i] += s[i + j * n] * x_true[j];
  mixsolve::Cholesky cholesky(ctx, mixsolve::host_view<const double>(s.data(), n, n, n),
                              mixsolve::parse_solve_options("precision=fp32,max-iterations=10"));
  const mixsolve::SolveReport spd =
      cholesky.solve(mixsolve::host_view<const double>(bs.data(), n, 1, n), mixsolve::host_view(xs.data(), n, 1, n));
  double spd_error = 0.0;
  for (std::int64_t i = 0; i < n; ++i) spd_error = std::fmax(spd_error, std::fabs(xs[i] - x_true[i]));
  std::printf("%s\nmax |x - x_true| = %.3g\n", spd.summary().c_str(), spd_error);
  const bool cholesky_used = !spd.attempts.empty() && spd.attempts.front().factor == mixsolve::FactorKind::Cholesky;
  return report.converged && error < 1e-12 && spd.converged && spd_error < 1e-12 && cholesky_used ? 0 : 1;
}
