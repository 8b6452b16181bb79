// SPDX-License-Identifier: BSD-3-Clause
// Internal: the host emulated DGEMMs' refusal of NaN and Inf, which no split or residue
// represents, naming the element.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "mixsolve/core/error.hpp"

namespace mixsolve::gemm::detail {

// Throws RangeError naming `backend`, the operand and the first non-finite element of the
// vectors (element l of vector v at x[v vector_stride + l element_stride]; A's vectors are rows,
// B's columns).
inline void require_finite_vectors(const std::string& backend, const double* x, std::int64_t vectors, std::int64_t k,
                                   std::int64_t vector_stride, std::int64_t element_stride, const char* operand) {
  for (std::int64_t v = 0; v < vectors; ++v)
    for (std::int64_t l = 0; l < k; ++l)
      if (!std::isfinite(x[v * vector_stride + l * element_stride]))
        throw RangeError("gemm(" + backend + "): " + operand + " holds NaN or Inf (element " + std::to_string(l) +
                         " of " + (operand[0] == 'A' ? "row " : "column ") + std::to_string(v) +
                         "); emulated DGEMMs represent finite values only: use host-fp64");
}

}  // namespace mixsolve::gemm::detail
