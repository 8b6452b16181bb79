// SPDX-License-Identifier: BSD-3-Clause
// Internal: the 2-norm the host solvers share, scaled against overflow and underflow.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mixsolve::solvers_detail {

// ||v||_2 (or ||V||_F) of a rows x cols block of T with leading dimension ld, accumulated in FP64
// with every entry divided by the largest |v_ij| first (no overflow or underflow of the squares,
// as in LAPACK's dnrm2 before its 2017 rewrite), the columns in order. NaN where an entry is not
// finite; 0 for an empty or zero block.
template <class T>
double scaled_norm2(const T* v, std::int64_t rows, std::int64_t cols = 1, std::int64_t ld = 0) {
  if (ld == 0) ld = rows;
  double largest = 0;
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const double e = double(v[i + j * ld]);
      if (!std::isfinite(e)) return NAN;
      largest = std::max(largest, std::fabs(e));
    }
  if (largest == 0) return 0;
  double sum = 0;
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const double y = double(v[i + j * ld]) / largest;
      sum += y * y;
    }
  return largest * std::sqrt(sum);
}

}  // namespace mixsolve::solvers_detail
