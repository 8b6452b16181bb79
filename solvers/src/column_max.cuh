// SPDX-License-Identifier: BSD-3-Clause
// Internal: a block's reduction over one column, shared by the device engine's kernels (range
// scaling's column factors) and the refinement's column norms.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mixsolve::solvers_detail {

// max_i |row_factor_i m(i, blockIdx.x)| (row_factor may be null), in thread 0 of a block per
// column.
__device__ inline double column_abs_max_in_block(const double* m, std::int64_t ld, std::int64_t rows,
                                                 const double* row_factor) {
  double v = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x)
    v = fmax(v, fabs(m[i + blockIdx.x * ld]) * (row_factor ? row_factor[i] : 1.0));
  for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
  __shared__ double warp_max[32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  double r = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < (blockDim.x + 31) / 32; ++w) r = fmax(r, warp_max[w]);
  return r;
}

}  // namespace mixsolve::solvers_detail
