// SPDX-License-Identifier: BSD-3-Clause
// Test problems shared by the host and GPU solve tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mixsolve/core/matrix.hpp"
#include "mixsolve/core/random.hpp"
#include "tuning.hpp"  // solvers_detail::tuning(): the variants of the LU

namespace mixsolve::test_problems {

// Restores the solver's tuning knobs when a test that changes them ends.
struct ScopedTuning {
  solvers_detail::Tuning saved = solvers_detail::tuning();
  ScopedTuning() = default;
  ScopedTuning(const ScopedTuning&) = delete;
  ScopedTuning& operator=(const ScopedTuning&) = delete;
  ~ScopedTuning() { solvers_detail::tuning() = saved; }
};

// The n x n column-major `a` with the rows of each block of `block` rows (the last one shorter)
// in reverse order: a column-dominant matrix then needs an interchange in every block column,
// each inside its diagonal block.
inline std::vector<double> rows_reversed_within_blocks(const std::vector<double>& a, std::int64_t n,
                                                       std::int64_t block) {
  std::vector<double> reversed(a.size());
  for (std::int64_t i0 = 0; i0 < n; i0 += block) {
    const std::int64_t rows = std::min(block, n - i0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t r = 0; r < rows; ++r) reversed[(i0 + r) + j * n] = a[(i0 + rows - 1 - r) + j * n];
  }
  return reversed;
}

// An n x n matrix (column-major, n even) that partial pivoting factors at once and pivoting
// inside diagonal blocks (FactorRequest::diagonal_blocks) must reject: A = [0 I; I 0] + 1e-8 R,
// R uniform in [-1, 1]. A is orthogonal up to 1e-8 n (cond ~1), but its leading diagonal block
// is 1e-8 R's, so L21 = A21 U11^-1 ~ 1e8 (or Inf in FP16).
inline std::vector<double> exchanged_halves_matrix(std::int64_t n, std::uint64_t seed) {
  std::vector<double> a(n * n);
  fill_random(host_view(a.data(), n, n, n), RandomSpec::uniform(-1, 1, seed));
  for (double& v : a) v *= 1e-8;
  const std::int64_t half = n / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    a[i + (i + half) * n] += 1;
    a[(i + half) + i * n] += 1;
  }
  return a;
}

// An n x n matrix (column-major, n = 3 b) whose FP16 LU picks a row order that FP64 must reject
// (SolveOptions::reuse_pivot_order). A = [4 I, C; D, D C / 4 + E] with b x b blocks on top and
// C, D uniform in [-1, 1]: the first b pivots are rows 0 .. b-1, and the Schur complement of the
// rest is exactly E (in exact arithmetic). E's rows alternate between scales 1e-4 and 1e-14,
// below the FP16 update's rounding error in D C / 4 (~1e-3), so the FP16 LU chooses the next b
// pivot rows by that error, about half of them from the 1e-14 rows. With that order the FP64
// LU's next diagonal block has half its rows at 1e-14, and the 1e-4 rows below it get
// multipliers near 1e10.
inline std::vector<double> misleading_order_matrix(std::int64_t b, std::uint64_t seed) {
  const std::int64_t n = 3 * b, rest = 2 * b;
  std::vector<double> a(n * n, 0.0), c(b * rest), d(rest * b), e(rest * rest);
  fill_random(host_view(c.data(), b, rest, b), RandomSpec::uniform(-1, 1, seed));
  fill_random(host_view(d.data(), rest, b, rest), RandomSpec::uniform(-1, 1, seed + 1));
  fill_random(host_view(e.data(), rest, rest, rest), RandomSpec::uniform(-1, 1, seed + 2));
  const auto at = [&](std::int64_t i, std::int64_t j) -> double& { return a[i + j * n]; };
  for (std::int64_t i = 0; i < b; ++i) at(i, i) = 4;
  for (std::int64_t j = 0; j < rest; ++j)
    for (std::int64_t i = 0; i < b; ++i) at(i, b + j) = c[i + j * b];
  for (std::int64_t j = 0; j < b; ++j)
    for (std::int64_t i = 0; i < rest; ++i) at(b + i, j) = d[i + j * rest];
  for (std::int64_t j = 0; j < rest; ++j)
    for (std::int64_t i = 0; i < rest; ++i) {
      double dc = 0;
      for (std::int64_t k = 0; k < b; ++k) dc += d[i + k * rest] * c[k + j * b];
      at(b + i, b + j) = dc / 4 + (i % 2 ? 1e-4 : 1e-14) * e[i + j * rest];
    }
  return a;
}

// max_j ||b_j - A x_j||_inf / (sqrt(n) ||x_j||_inf ||A||_inf 2^-53) for the column-major n x n A
// and n x k B and X: < 1 is the stop test. The residual is summed in long double, so that the
// ratio is that of the true residual: at the stop test's level an FP64 residual's own rounding,
// about sqrt(n) 2^-53 |A||x|, is as large as the test (n = 1024: an x that met the solver's test
// at ~0.997 of the threshold gave 1.0 with an Eigen FP64 residual, another summation order).
// Every column_step-th column only, for problems with many right-hand sides; INFINITY where a
// checked column of X is not finite.
inline double stop_test_ratio(const std::vector<double>& a, const std::vector<double>& b, const std::vector<double>& x,
                              std::int64_t n, std::int64_t k, std::int64_t column_step = 1) {
  double norm_a = 0;
  std::vector<double> row_sums(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t i = 0; i < n; ++i) row_sums[std::size_t(i)] += std::fabs(a[std::size_t(i + c * n)]);
  for (double v : row_sums) norm_a = std::max(norm_a, v);
  double worst = 0;
  std::vector<long double> r(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < k; j += column_step) {
    const double* xj = x.data() + j * n;
    double norm_x = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      r[std::size_t(i)] = b[std::size_t(i + j * n)];
      if (!std::isfinite(xj[i])) return INFINITY;
      norm_x = std::max(norm_x, std::fabs(xj[i]));
    }
    for (std::int64_t c = 0; c < n; ++c)
      for (std::int64_t i = 0; i < n; ++i) r[std::size_t(i)] -= static_cast<long double>(a[std::size_t(i + c * n)]) * xj[c];
    const double threshold = std::sqrt(double(n)) * norm_x * norm_a * 0x1p-53;
    for (std::int64_t i = 0; i < n; ++i) worst = std::max(worst, double(std::fabs(r[std::size_t(i)])) / threshold);
  }
  return worst;
}

}  // namespace mixsolve::test_problems
