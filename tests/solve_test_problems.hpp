// SPDX-License-Identifier: BSD-3-Clause
// Test problems shared by the host and GPU solve tests.
#pragma once

#include <cstdint>
#include <vector>

#include "mixsolve/core/matrix.hpp"
#include "mixsolve/core/random.hpp"

namespace mixsolve::test_problems {

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

}  // namespace mixsolve::test_problems
