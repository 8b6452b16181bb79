// SPDX-License-Identifier: BSD-3-Clause
// Solves a small host system through the installed headers and libraries; exits 0 when the
// report says converged and x matches the known solution.
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
  return report.converged && error < 1e-12 ? 0 : 1;
}
