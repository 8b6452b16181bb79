// SPDX-License-Identifier: BSD-3-Clause
// The check of an engine's residual r = b - A x (solvers/src/engine.hpp, RefinementSpace::
// residual), host and device engines alike, against a residual exact to about 2^-100
// (reference_solvers.hpp). b is fl(A x), A x rounded in FP64, so that the true residual is that
// product's rounding error: |r| ~ u |A| |x|, all of it cancellation, where an FP64 residual has a
// relative error near 1 and a double-double one stays accurate.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine.hpp"
#include "reference_solvers.hpp"

namespace mixsolve::testing {

// The error bound of a computed residual entry, from the sum it rounds (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2002, §3.1, gamma_m = m u / (1 - m u), m = n + 1 terms):
//   FP64:          gamma_m (|A| |x| + |b|)_i
//   double-double: u |r_i| + gamma_m^2 (|A| |x| + |b|)_i   (Dot2: Ogita, Rump & Oishi 2005, §5),
// doubled: the device adds its column chunks' Dot2 partial sums in chunk order, a bound of the
// same form.
inline double residual_bound(ResidualPrecision precision, std::int64_t n, long double r, long double magnitude) {
  const long double u = 0x1p-53L, gamma = (n + 1) * u / (1 - (n + 1) * u);
  const long double bound = precision == ResidualPrecision::DoubleDouble ? u * std::fabs(r) + gamma * gamma * magnitude
                                                                         : gamma * magnitude;
  return double(2 * bound);
}

// The largest |r_i - r*_i| / residual_bound(judged_by) of the engine's residual computed in
// `precision`, over the k right-hand sides of x (n x k, column major) with b = fl(A x); a: the
// engine's matrix (n x n, column major). Uses the engine's scratch slots 0-2.
inline double residual_error_ratio(solvers_detail::Engine& e, const Eigen::MatrixXd& a, const Eigen::MatrixXd& x,
                                   ResidualPrecision precision, ResidualPrecision judged_by) {
  const std::int64_t n = a.rows(), k = x.cols();
  const Eigen::MatrixXd b = a * x;
  const MatrixView<double> x_e = e.scratch(0, k), b_e = e.scratch(1, k), r_e = e.scratch(2, k);
  for (std::int64_t j = 0; j < k; ++j) {
    e.upload(x.col(j).data(), &x_e(0, j));
    e.upload(b.col(j).data(), &b_e(0, j));
  }
  e.residual(x_e, b_e, r_e, precision);
  const SplitMatrix split(a);
  double worst = 0;
  std::vector<double> r(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < k; ++j) {
    e.download(&r_e(0, j), r.data());
    const std::vector<long double> xl(x.col(j).data(), x.col(j).data() + n);
    const std::vector<long double> exact = accurate_residual(split, b.col(j).data(), nullptr, xl.data());
    for (std::int64_t i = 0; i < n; ++i) {
      long double magnitude = std::fabs(static_cast<long double>(b(i, j)));
      for (std::int64_t c = 0; c < n; ++c) magnitude += std::fabs(static_cast<long double>(a(i, c)) * xl[c]);
      const long double error = std::fabs(r[i] - exact[i]);
      const double ratio = double(error) / residual_bound(judged_by, n, exact[i], magnitude);
      if (!(ratio <= worst)) worst = ratio;  // a NaN entry (a kernel that read A's padding) too
    }
  }
  return worst;
}

// A test matrix for it: uniform entries in [-1, 1], and with `scaled_rows` each row times a power
// of two between 2^-30 and 2^30 (a badly scaled A).
inline Eigen::MatrixXd residual_test_matrix(std::int64_t n, bool scaled_rows, std::uint64_t seed) {
  Eigen::MatrixXd a(n, n);
  fill_random(host_view(a.data(), n, n, n), RandomSpec::uniform(-1, 1, seed));
  if (scaled_rows)
    for (std::int64_t i = 0; i < n; ++i) a.row(i) *= std::ldexp(1.0, int((i * 37) % 61) - 30);
  return a;
}

}  // namespace mixsolve::testing
