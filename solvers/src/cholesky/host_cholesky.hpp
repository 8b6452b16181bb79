// SPDX-License-Identifier: BSD-3-Clause
// Internal: the host engine's Cholesky (lu/host_engine.cpp): A = L L^T of the lower triangle by the
// device's recursion (recursive_cholesky.hpp), its products through a host GEMM backend (the same
// models of the tensor-core roundings as the host LU), and the rewrite of L as LU factors, so that
// the engine's triangular solves, probe and condition estimate serve both kinds (engine.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cholesky/recursive_cholesky.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::solvers_detail {

// Where a Cholesky stopped: the first column whose pivot (the Schur complement's diagonal entry,
// before its square root) was not positive, -1 where none; and that pivot's value.
struct CholeskyBreakdown {
  std::int64_t column = -1;
  double pivot = 0;
};

// A = L L^T for the n x n column-major a (leading dimension n) in T's arithmetic, by the
// recursion of recursive_cholesky.hpp with leaves of `leaf` columns: L overwrites the lower
// triangle, the strict upper triangle is scratch. Leaves and the leaves' triangular solves are
// unblocked, in T; the products go through `update` with `parameters`, their inner dimension cut
// into chunks of at most `inner_chunk` (update_inner_chunk). Stops at the first pivot that is not
// positive (NaN included).
template <class T>
CholeskyBreakdown cholesky_factor(std::vector<T>& a, std::int64_t n, std::int64_t leaf, std::int64_t inner_chunk,
                                  const gemm::Backend& update, const gemm::Parameters& parameters, Context& ctx) {
  struct Ops {
    std::int64_t ld, inner_chunk;
    const gemm::Backend& update;
    const gemm::Parameters& parameters;
    Context& ctx;
    CholeskyBreakdown breakdown;
    bool stopped() const { return breakdown.column >= 0; }
    // The unblocked right-looking Cholesky of the m x m leaf.
    bool factor_leaf(T* l, std::int64_t m, std::int64_t column0) {
      auto at = [&](std::int64_t i, std::int64_t j) -> T& { return l[i + j * ld]; };
      for (std::int64_t j = 0; j < m; ++j) {
        const T pivot = at(j, j);
        if (!(pivot > T(0))) {
          breakdown = {column0 + j, double(pivot)};
          return false;
        }
        const T root = std::sqrt(pivot), inverse = T(1) / root;
        at(j, j) = root;
        for (std::int64_t i = j + 1; i < m; ++i) at(i, j) *= inverse;
        for (std::int64_t c = j + 1; c < m; ++c)
          for (std::int64_t i = c; i < m; ++i) at(i, c) -= at(i, j) * at(c, j);
      }
      return true;
    }
    // b := b l^-T column by column: x_j = b_j / l_jj, then b_c -= x_j l_cj for the later columns.
    void solve_leaf(const T* l, std::int64_t columns, T* b, std::int64_t rows) {
      for (std::int64_t j = 0; j < columns; ++j) {
        const T inverse = T(1) / l[j + j * ld];
        for (std::int64_t i = 0; i < rows; ++i) b[i + j * ld] *= inverse;
        for (std::int64_t c = j + 1; c < columns; ++c) {
          const T l_cj = l[c + j * ld];
          for (std::int64_t i = 0; i < rows; ++i) b[i + c * ld] -= b[i + j * ld] * l_cj;
        }
      }
    }
    // c -= a b^T through the update backend, in chunks of the inner dimension (inner_chunk).
    std::int64_t whole_update_rows() const { return 0; }  // the device's blocks (its fallback)
    void subtract_product(std::int64_t m, std::int64_t nc, std::int64_t k, const T* pa, const T* pb, T* pc,
                          bool /*lower: the host computes c whole*/ = false) {
      for (std::int64_t p0 = 0; p0 < k; p0 += inner_chunk) {
        const std::int64_t kc = std::min(inner_chunk, k - p0);
        gemm::GemmArgs<T> g{gemm::Op::N, gemm::Op::T, m, nc, kc, T(-1), pa + p0 * ld, ld, pb + p0 * ld, ld,
                            T(1), pc, ld};
        update.run(ctx, gemm::to_problem(g), parameters, gemm::Execution{g.check_range});
      }
    }
  };
  Ops ops{n, std::max<std::int64_t>(inner_chunk, 1), update, parameters, ctx, {}};
  RecursiveCholesky<T, Ops>(ops, n, std::max<std::int64_t>(leaf, 1)).factor(a.data(), n);
  return ops.breakdown;
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
