// SPDX-License-Identifier: BSD-3-Clause
#include "driver/near_diagonal.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "mixsolve/core/random.hpp"

namespace mixsolve::solvers_detail {

namespace {

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

}  // namespace

double near_diagonal_estimate(Engine& e, double reject_above) {
  const std::int64_t n = e.n();
  if (n == 0) return 0;
  std::vector<double> d(n), v(n);
  e.diagonal(d.data());
  for (double di : d)
    if (!(di != 0)) return INFINITY;
  double estimate = 0;
  for (int c = 0; c < kNearDiagonalColumns && c < n; ++c) {
    const std::int64_t j = (2 * c + 1) * n / (2 * kNearDiagonalColumns);  // the middle of each quarter
    e.column(j, v.data());
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (i != j) s += (v[i] / d[i]) * (v[i] / d[i]);
    estimate = std::fmax(estimate, std::sqrt(s));
    if (!(estimate <= reject_above)) return estimate;
  }
  // Power iteration: x and B^T B x on the host, A x and A^T y by the engine.
  std::vector<double> x(n), y(n);
  fill_random(host_view(x.data(), n, 1, n), RandomSpec::uniform(-1.0, 1.0, 0x6e6561726469ull));
  double* in = e.scratch(0, 1).data;
  double* out = e.scratch(1, 1).data;
  for (int step = 0; step < kNearDiagonalPowerSteps; ++step) {
    const double x_norm = norm2(x);
    if (!(x_norm > 0)) break;
    for (double& xi : x) xi /= x_norm;
    e.upload(x.data(), in);
    e.multiply(in, out);
    e.download(out, y.data());
    for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] / d[i] - x[i];  // y = B x
    const double y_norm = norm2(y);
    estimate = std::fmax(estimate, y_norm);
    if (!(estimate <= reject_above)) return estimate;
    if (!(y_norm > 0)) break;
    for (std::int64_t i = 0; i < n; ++i) v[i] = y[i] / d[i];
    e.upload(v.data(), in);
    e.multiply_transpose(in, out);
    e.download(out, x.data());
    for (std::int64_t i = 0; i < n; ++i) x[i] -= y[i];  // x = B^T y
    estimate = std::fmax(estimate, norm2(x) / y_norm);
    if (!(estimate <= reject_above)) return estimate;
  }
  return estimate;
}

}  // namespace mixsolve::solvers_detail
