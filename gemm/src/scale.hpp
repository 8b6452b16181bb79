// SPDX-License-Identifier: BSD-3-Clause
// C = beta * C on host or device memory (beta == 0 writes zeros without reading C).
#pragma once

#include <cstdint>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::gemm::detail {

void scale_matrix(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, float beta, float* c, std::int64_t ldc);
void scale_matrix(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, double beta, double* c, std::int64_t ldc);

}  // namespace mixsolve::gemm::detail
