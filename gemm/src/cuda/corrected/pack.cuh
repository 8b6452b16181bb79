// SPDX-License-Identifier: BSD-3-Clause
// Packing kernels: split op(A) (m x k) and op(B)^T (n x k) into hi / lo arrays of tensor-core
// inputs, rows padded to the CTA tile and k padded to 32, k contiguous ("TN" layout), so that the
// GEMM kernel loads every operand the same way, whatever the transposes, and never bound-checks.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "mixsolve/formats/split.hpp"
#include "scheme.hpp"

namespace mixsolve::gemm::corrected {

// Element (r, c) of the packed operand (r < rows, c < depth) as it lies in user memory.
struct PackSource {
  const float* data;
  std::int64_t ld;
  bool depth_contiguous;  // element at data[c + r * ld] if true, data[r + c * ld] if false
  std::int64_t rows, depth;
  __device__ float load(std::int64_t r, std::int64_t c) const {
    if (r >= rows || c >= depth) return 0.0f;
    return depth_contiguous ? data[c + r * ld] : data[r + c * ld];
  }
};

// Exponent s for a power-of-two row scale: the scaled row maximum 2^s * max lies in [2^14, 2^15),
// well inside FP16 (max 65504) with 28 binades of normal numbers below it. Ootomo & Yokota (2021) §4.1 concludes
// that halfhalf needs such an exponent shift; rows that are zero or hold Inf/NaN are not scaled.
// Integer work on the bits of the (non-negative) maximum: the epilogue calls this per column.
__device__ __forceinline__ int row_scale_exponent(unsigned int max_abs_bits) {
  const unsigned int exponent_field = (max_abs_bits >> 23) & 0xFFu;
  if (max_abs_bits == 0 || exponent_field == 0xFFu) return 0;  // zero row; Inf or NaN
  if (exponent_field != 0) return 14 - (int(exponent_field) - 127);
  return 14 - ilogbf(__uint_as_float(max_abs_bits));  // subnormal maximum
}

// v * 2^-shift with one rounding, as scalbnf(v, -shift), by a multiplication where 2^-shift is a
// normal float (the common case) -- the undo of the row and column scaling in the epilogues.
__device__ __forceinline__ float unscale(float v, int shift) {
  if (shift >= -127 && shift <= 126) return v * __uint_as_float(static_cast<unsigned int>(127 - shift) << 23);
  return scalbnf(v, -shift);
}

constexpr int kPackTile = 32;

// Grouped rasterization of a 1-D grid over tiles_m x tiles_n output tiles: consecutive blocks walk
// down a group of kGroup tile rows before moving right, so the blocks running at once share a few
// A and B tiles in L2 instead of streaming all of A per wave.
struct TileCoordinates {
  int m, n;
};
__device__ __forceinline__ TileCoordinates grouped_tile(int linear, int tiles_m, int tiles_n) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n;
  const int group = linear / per_group;
  const int first_m = group * kGroup;
  const int group_rows = min(tiles_m - first_m, kGroup);
  const int within = linear % per_group;
  return {first_m + within % group_rows, within / group_rows};
}

// Per-row max |x| of the packed operand, as float bits (non-negative floats order like unsigned
// ints; NaN bits exceed Inf's, so a row with NaN reports NaN). `row_max` must start at 0.
__global__ void row_max_kernel(PackSource src, unsigned int* row_max) {
  __shared__ float tile[kPackTile][kPackTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kPackTile;
  float local[kPackTile / 8] = {0, 0, 0, 0};
  for (std::int64_t c0 = std::int64_t(blockIdx.x) * kPackTile; c0 < src.depth; c0 += std::int64_t(gridDim.x) * kPackTile) {
    for (int i = 0; i < kPackTile / 8; ++i) {
      const int a = ty + 8 * i;
      if (src.depth_contiguous) tile[a][tx] = fabsf(src.load(r0 + a, c0 + tx));
      else tile[tx][a] = fabsf(src.load(r0 + tx, c0 + a));
    }
    __syncthreads();
    for (int i = 0; i < kPackTile / 8; ++i) {
      const float v = tile[ty + 8 * i][tx];
      local[i] = (v > local[i] || isnan(v)) ? v : local[i];
    }
    __syncthreads();
  }
  for (int i = 0; i < kPackTile / 8; ++i) {
    unsigned int bits = __float_as_uint(local[i]);
    for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_down_sync(0xffffffffu, bits, offset));
    const std::int64_t r = r0 + ty + 8 * i;
    if (tx == 0 && r < src.rows) atomicMax(&row_max[r], bits);
  }
}

template <Element E>
struct PackedType;
template <>
struct PackedType<Element::Fp16> { using type = std::uint16_t; };
template <>
struct PackedType<Element::Tf32> { using type = std::uint32_t; };

// Writes hi[r * padded_depth + c], lo[...] for the whole padded grid (zeros outside the matrix).
// grid = (padded_depth / 32, padded_rows / 32), block = (32, 8).
template <Element E, bool kScaledResidual, bool kRowScaling, bool kCheckRange>
__global__ void pack_split_kernel(PackSource src, std::int64_t padded_depth, const unsigned int* row_max,
                                  typename PackedType<E>::type* hi, typename PackedType<E>::type* lo,
                                  unsigned int* overflow_count) {
  __shared__ float tile[kPackTile][kPackTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kPackTile, c0 = std::int64_t(blockIdx.x) * kPackTile;
  for (int i = 0; i < kPackTile / 8; ++i) {
    const int a = ty + 8 * i;
    if (src.depth_contiguous) tile[a][tx] = src.load(r0 + a, c0 + tx);
    else tile[tx][a] = src.load(r0 + tx, c0 + a);
  }
  __syncthreads();
  unsigned int overflows = 0;
  for (int i = 0; i < kPackTile / 8; ++i) {
    const std::int64_t r = r0 + ty + 8 * i;
    float v = tile[ty + 8 * i][tx];
    if constexpr (kRowScaling) {
      if (r < src.rows) v = scalbnf(v, row_scale_exponent(row_max[r]));
    }
    const std::int64_t out = r * padded_depth + c0 + tx;
    if constexpr (E == Element::Fp16) {
      const formats::HalfSplit s = kScaledResidual ? formats::split_halfhalf(v) : formats::split_markidis(v);
      hi[out] = s.hi;
      lo[out] = s.lo;
      if constexpr (kCheckRange) overflows += (isfinite(v) && !formats::is_finite_bits16(s.hi)) ? 1u : 0u;
    } else {
      const formats::Tf32Split s = kScaledResidual ? formats::split_tf32tf32(v) : formats::split_tf32tf32_unscaled(v);
      hi[out] = s.hi;
      lo[out] = s.lo;
    }
  }
  if constexpr (kCheckRange) {
    for (int offset = 16; offset > 0; offset /= 2) overflows += __shfl_down_sync(0xffffffffu, overflows, offset);
    if (tx == 0 && overflows) atomicAdd(overflow_count, overflows);
  }
}

}  // namespace mixsolve::gemm::corrected
