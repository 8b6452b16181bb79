// SPDX-License-Identifier: BSD-3-Clause
#include "scale.hpp"

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::gemm::detail {

namespace {

template <class T>
__global__ void scale_kernel(std::int64_t m, std::int64_t n, T beta, T* c, std::int64_t ldc) {
  const std::int64_t total = m * n;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    T& v = c[idx % m + (idx / m) * ldc];
    v = beta == T(0) ? T(0) : beta * v;
  }
}

template <class T>
void scale_impl(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, T beta, T* c, std::int64_t ldc) {
  if (beta == T(1)) return;
  if (memory == Memory::Host) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) c[i + j * ldc] = beta == T(0) ? T(0) : beta * c[i + j * ldc];
    return;
  }
  const std::int64_t blocks = (m * n + 255) / 256;
  scale_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, ctx.stream()>>>(m, n, beta, c, ldc);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void scale_matrix(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, float beta, float* c, std::int64_t ldc) {
  scale_impl(ctx, memory, m, n, beta, c, ldc);
}
void scale_matrix(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, double beta, double* c, std::int64_t ldc) {
  scale_impl(ctx, memory, m, n, beta, c, ldc);
}

}  // namespace mixsolve::gemm::detail
