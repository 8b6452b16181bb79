// SPDX-License-Identifier: BSD-3-Clause
#include "qr/column_pivoted_qr.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "mixsolve/core/error.hpp"
#include "scaled_norm.hpp"

namespace mixsolve::solvers_detail {

ColumnPivotedQr::ColumnPivotedQr(const MatrixView<double>& a) : a_(a), pivots_(a.cols) {
  if (a.memory != Memory::Host) throw InvalidArgument("ColumnPivotedQr: a must be in host memory");
  const std::int64_t m = a.rows, n = a.cols;
  MatrixView<double> at = a_;
  // norm[c]: the norm of column c below the rows done; exact[c]: its last computed value, against
  // which the downdate's cancellation is judged.
  std::vector<double> norm(n), exact(n);
  for (std::int64_t c = 0; c < n; ++c) {
    pivots_[c] = c;
    norm[c] = exact[c] = scaled_norm2(&at(0, c), m);
  }
  const double tolerance = std::sqrt(0x1p-53);  // LAPACK's tol3z
  for (std::int64_t j = 0; j < std::min(m, n); ++j) {
    std::int64_t p = j;
    for (std::int64_t c = j + 1; c < n; ++c)
      if (norm[c] > norm[p]) p = c;
    if (p != j) {
      for (std::int64_t i = 0; i < m; ++i) std::swap(at(i, j), at(i, p));
      std::swap(pivots_[j], pivots_[p]);
      std::swap(norm[j], norm[p]);
      std::swap(exact[j], exact[p]);
    }
    // The reflector of column j (LAPACK larfg): H = I - tau v v^T, v(j) = 1, H x = beta e_j;
    // none (H = I) where the column is zero below the diagonal already.
    const double alpha = at(j, j);
    const double below = j + 1 < m ? scaled_norm2(&at(j + 1, j), m - j - 1) : 0.0;
    if (below != 0) {
      const double beta = -std::copysign(std::hypot(alpha, below), alpha);
      const double tau = (beta - alpha) / beta;
      const double scale = 1 / (alpha - beta);
      for (std::int64_t i = j + 1; i < m; ++i) at(i, j) *= scale;
      at(j, j) = beta;
      for (std::int64_t c = j + 1; c < n; ++c) {
        double w = at(j, c);
        for (std::int64_t i = j + 1; i < m; ++i) w += at(i, j) * at(i, c);
        w *= tau;
        at(j, c) -= w;
        for (std::int64_t i = j + 1; i < m; ++i) at(i, c) -= w * at(i, j);
      }
    }
    // Downdates: the norm of column c below row j is sqrt(norm^2 - r_jc^2); recomputed where it
    // has fallen so far that the subtraction has lost half of FP64's digits.
    for (std::int64_t c = j + 1; c < n; ++c) {
      if (norm[c] == 0) continue;
      const double ratio = std::fabs(at(j, c)) / norm[c];
      const double left = std::max(0.0, (1 + ratio) * (1 - ratio));
      const double relative = norm[c] / exact[c];
      if (left * relative * relative <= tolerance)
        norm[c] = exact[c] = j + 1 < m ? scaled_norm2(&at(j + 1, c), m - j - 1) : 0.0;
      else
        norm[c] *= std::sqrt(left);
    }
  }
}

double ColumnPivotedQr::diagonal(std::int64_t j) const { return std::fabs(a_(j, j)); }

}  // namespace mixsolve::solvers_detail
