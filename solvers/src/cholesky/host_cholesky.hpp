// SPDX-License-Identifier: BSD-3-Clause
// Internal: the host engine's Cholesky (lu/host_engine.cpp): a right-looking blocked A = L L^T of
// the lower triangle whose trailing updates go through a host GEMM backend (the same models of the
// tensor-core roundings as the host LU), and the rewrite of L as LU factors, so that the engine's
// triangular solves, probe and condition estimate serve both kinds (engine.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::solvers_detail {

// Where a Cholesky stopped: the first column whose pivot (the Schur complement's diagonal entry,
// before its square root) was not positive, -1 where none; and that pivot's value.
struct CholeskyBreakdown {
  std::int64_t column = -1;
  double pivot = 0;
};

// A = L L^T for the n x n column-major a (leading dimension n) in T's arithmetic: L overwrites
// the lower triangle, the strict upper triangle is neither read nor kept. Blocks of nb columns:
// each panel unblocked (the diagonal block's columns in turn, then L21 in the same loop), then
// A22 -= L21 L21^T through `update` in column blocks of nb, each from its diagonal block down,
// so the products cover the lower triangle and the diagonal blocks' upper halves only. Stops at
// the first pivot that is not positive (NaN included).
template <class T>
CholeskyBreakdown cholesky_factor(std::vector<T>& a, std::int64_t n, int nb, const gemm::Backend& update,
                                  const gemm::Parameters& parameters, Context& ctx) {
  auto at = [&](std::int64_t i, std::int64_t j) -> T& { return a[i + j * n]; };
  for (std::int64_t j0 = 0; j0 < n; j0 += nb) {
    const std::int64_t jb = std::min<std::int64_t>(nb, n - j0);
    for (std::int64_t j = j0; j < j0 + jb; ++j) {
      const T pivot = at(j, j);
      if (!(pivot > T(0))) return {j, double(pivot)};
      const T l = std::sqrt(pivot);
      at(j, j) = l;
      const T inv = T(1) / l;
      for (std::int64_t i = j + 1; i < n; ++i) at(i, j) *= inv;
      for (std::int64_t c = j + 1; c < j0 + jb; ++c)  // the panel's later columns, lower part
        for (std::int64_t i = c; i < n; ++i) at(i, c) -= at(i, j) * at(c, j);
    }
    for (std::int64_t c0 = j0 + jb; c0 < n; c0 += nb) {  // A22 -= L21 L21^T, lower column blocks
      const std::int64_t cb = std::min<std::int64_t>(nb, n - c0);
      gemm::GemmArgs<T> g{gemm::Op::N, gemm::Op::T, n - c0, cb, jb, T(-1), &at(c0, j0), n,
                          &at(c0, j0), n, T(1), &at(c0, c0), n};
      update.run(ctx, gemm::to_problem(g), parameters, gemm::Execution{g.check_range});
    }
  }
  return {};
}

// Rewrites a Cholesky factor L (cholesky_factor's lower triangle, diagonal d) in place as the LU
// factors of the same matrix, L L^T = (L D^-1)(D L^T) with D = diag(d): the unit lower triangle
// L D^-1 below the diagonal, the upper triangle D L^T on and above it. No row interchanges.
template <class T>
void cholesky_to_lu_form(std::vector<T>& a, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    const T d = a[j + j * n];
    for (std::int64_t i = j + 1; i < n; ++i) {
      const T l = a[i + j * n];
      a[j + i * n] = d * l;  // U(j, i) = d_j L(i, j)
      a[i + j * n] = l / d;
    }
    a[j + j * n] = d * d;
  }
}

}  // namespace mixsolve::solvers_detail
