// SPDX-License-Identifier: BSD-3-Clause
// Internal: the device engine's own kernels (device_engine.cu includes this once): conversions
// and transposes of the factors, the one-pass scan of A, row scatters, pivot bookkeeping, the
// pivot range, range scaling's column factors.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdint>

#include "column_max.cuh"
#include "cuda_helpers.hpp"
#include "lu/lu_rules.hpp"
#include "lu/cuda/lu_kernels.hpp"

namespace mixsolve::solvers_detail::device_lu {

// Element-wise kernels over a rows x cols column-major matrix: a block takes 256 rows (one per
// thread, coalesced) of kStripeColumns columns; no 64-bit division per element.
constexpr int kStripeColumns = 16;
inline dim3 stripe_grid(std::int64_t rows, std::int64_t cols) {
  return dim3(unsigned(std::max<std::int64_t>(1, (rows + 255) / 256)),
              unsigned(std::clamp<std::int64_t>((cols + kStripeColumns - 1) / kStripeColumns, 1, 65535)));
}
#define MIXSOLVE_FOR_EACH_STRIPE_ELEMENT(i, j, rows, cols)                                                        \
  for (std::int64_t j##_0 = std::int64_t(blockIdx.y) * kStripeColumns; j##_0 < (cols);                          \
       j##_0 += std::int64_t(gridDim.y) * kStripeColumns)                                                       \
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (rows); i += std::int64_t(gridDim.x) * blockDim.x) \
      for (std::int64_t j = j##_0; j < min(std::int64_t(cols), j##_0 + kStripeColumns); ++j)

// dst = To(src), or To(mu * diag(row_factor) * src * diag(column_factor)) where the factors
// are given (powers of two: exact in FP64 before the one rounding to To). With first_nonfinite,
// the smallest i + j rows of a result that is NaN or Inf (beyond To's range) lowers it.
template <class From, class To>
__global__ void convert_kernel(const From* src, std::int64_t lds, To* dst, std::int64_t ldd, std::int64_t rows,
                               std::int64_t cols, const double* row_factor = nullptr,
                               const double* column_factor = nullptr, double mu = 1.0,
                               unsigned long long* first_nonfinite = nullptr) {
  MIXSOLVE_FOR_EACH_STRIPE_ELEMENT(i, j, rows, cols) {
    double v = double(src[i + j * lds]) * mu;
    if (row_factor) v *= row_factor[i];
    if (column_factor) v *= column_factor[j];
    const To t = static_cast<To>(v);
    if (first_nonfinite && !isfinite(double(t))) atomicMin(first_nonfinite, static_cast<unsigned long long>(i + j * rows));
    dst[i + j * ldd] = t;
  }
}

// dst = the same conversion as convert_kernel of the n x cols column-major src, stored row-major
// (element (i, j) at dst[j + i ldd]), through 32 x 32 shared-memory tiles (block 32 x 8). With
// destination_row (not null), src's row i becomes dst's row destination_row[i]: the stores stay
// runs of 32 values, where a gather would read one 32-byte sector per 8-byte value.
template <class To>
__global__ void convert_transposed_kernel(const double* src, std::int64_t lds, To* dst, std::int64_t ldd,
                                          std::int64_t n, const double* row_factor, const double* column_factor,
                                          double mu, unsigned long long* first_nonfinite,
                                          const int* destination_row) {
  __shared__ To tile[32][33];
  const std::int64_t i0 = std::int64_t(blockIdx.x) * 32, j0 = std::int64_t(blockIdx.y) * 32;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t i = i0 + threadIdx.x, j = j0 + k;
    if (i < n && j < n) {
      double v = src[i + j * lds] * mu;
      if (row_factor) v *= row_factor[i];
      if (column_factor) v *= column_factor[j];
      const To t = static_cast<To>(v);
      if (first_nonfinite && !isfinite(t)) atomicMin(first_nonfinite, static_cast<unsigned long long>(i + j * n));
      tile[threadIdx.x][k] = t;
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t i = i0 + k, j = j0 + threadIdx.x;
    if (i < n && j < n) dst[j + (destination_row ? destination_row[i] : i) * ldd] = tile[k][threadIdx.x];
  }
}

// The border of the nf x nf matrix [A 0; 0 I] that the LU factors (DeviceEngine::nf_): entries
// (i, j) with i >= n or j >= n become 1 on the diagonal and 0 elsewhere. Symmetric, so the same
// for row- and column-major storage. Partial pivoting never takes a border row for a column
// j < n (its entries there stay 0) unless the whole column is 0, and then the LU reports a zero
// pivot and its factors are discarded.
template <class T>
__global__ void identity_border_kernel(T* f, std::int64_t nf, std::int64_t n) {
  const std::int64_t border = nf - n;  // columns n.. of every row, and their mirror, rows n..
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < nf * border;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = k % nf, j = n + k / nf;  // (i, j) in the border columns
    f[i + j * nf] = i == j ? T(1) : T(0);
    f[j + i * nf] = i == j ? T(1) : T(0);
  }
}

// Transposes the n x n matrix a (leading dimension lda) in place: the block at tile (x, y) with
// x <= y swaps tiles (x, y) and (y, x) through shared memory (block 32 x 8). The first NaN/Inf
// of the result (index i + j n) lowers *first_nonfinite: the pass the check would need anyway.
template <class T>
__global__ void transpose_in_place_kernel(T* a, std::int64_t lda, std::int64_t n, unsigned long long* first_nonfinite) {
  if (blockIdx.x > blockIdx.y) return;
  __shared__ T upper[32][33], lower[32][33];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * 32, c0 = std::int64_t(blockIdx.y) * 32;  // tile (r0, c0)
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t r = r0 + threadIdx.x, c = c0 + k;
    if (r < n && c < n) upper[threadIdx.x][k] = a[r + c * lda];
    const std::int64_t r2 = c0 + threadIdx.x, c2 = r0 + k;
    if (r2 < n && c2 < n) lower[threadIdx.x][k] = a[r2 + c2 * lda];
  }
  __syncthreads();
  const auto store = [&](std::int64_t r, std::int64_t c, T v) {
    if (r >= n || c >= n) return;
    if (!isfinite(v)) atomicMin(first_nonfinite, static_cast<unsigned long long>(r + c * n));
    a[r + c * lda] = v;
  };
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    // element (c0 + threadIdx.x, r0 + k) of the result = (r0 + k, c0 + threadIdx.x) of the input
    store(c0 + threadIdx.x, r0 + k, upper[k][threadIdx.x]);
    store(r0 + threadIdx.x, c0 + k, lower[k][threadIdx.x]);
  }
}

template <class T>
__global__ void count_nonfinite_kernel(const T* a, std::int64_t lda, std::int64_t rows, std::int64_t cols,
                                       unsigned long long* first_bad) {
  MIXSOLVE_FOR_EACH_STRIPE_ELEMENT(i, j, rows, cols) {
    if (!isfinite(double(a[i + j * lda]))) atomicMin(first_bad, static_cast<unsigned long long>(i + j * rows));
  }
}

// One pass over the n x n matrix A for everything the driver and the range scaling read of it
// (on an H100 at n = 16384 a pass costs ~0.65 ms, four separate ones 4.8 ms): a block of
// kScanRows rows (one per thread) and kScanColumns columns writes its rows' sums of |a_ij| to
// row_partial_sums[i + n blockIdx.y] (summed in order afterwards: deterministic), and raises
// the rows' and columns' largest |a_ij| (as the bits of non-negative doubles, whose order is the
// integer order), lowers the first NaN/Inf's index i + j n and the smallest nonzero finite
// |a_ij|. Non-finite entries count as 0. With `converted` the same pass also writes FP32(a_ij)
// row-major (element (i, j) at converted[j + i ld_converted]) through kScanChunk columns at a
// time in shared memory, so that a warp stores whole runs of a row: the FP32 copy of an LU
// without a second read of A (DeviceEngine::prepared_copy_usable). A thread loads kScanChunk
// values before it uses any, which keeps the pass at the memory's pace despite the barriers.
constexpr int kScanRows = 256;
constexpr int kScanColumns = 256;
constexpr int kScanChunk = 32;  // columns loaded at once (a thread's loads in flight)
__global__ void __launch_bounds__(kScanRows)
    scan_matrix_kernel(const double* a, std::int64_t lda, std::int64_t n, double* row_partial_sums,
                       unsigned long long* row_max, unsigned long long* column_max, unsigned long long* first_bad,
                       unsigned long long* min_nonzero, float* converted, std::int64_t ld_converted) {
  __shared__ double warp_column_max[kScanRows / 32][kScanChunk];
  __shared__ float stage[kScanRows][kScanChunk + 1];
  const std::int64_t i0 = std::int64_t(blockIdx.x) * kScanRows, i = i0 + threadIdx.x;
  const std::int64_t j0 = std::int64_t(blockIdx.y) * kScanColumns, j1 = min(n, j0 + kScanColumns);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double sum = 0, largest = 0, smallest = INFINITY;
  for (std::int64_t c0 = j0; c0 < j1; c0 += kScanChunk) {
    const int width = int(min(std::int64_t(kScanChunk), j1 - c0));
    double x[kScanChunk];
#pragma unroll
    for (int c = 0; c < kScanChunk; ++c) x[c] = i < n && c < width ? a[i + (c0 + c) * lda] : 0.0;
#pragma unroll
    for (int c = 0; c < kScanChunk; ++c) {
      double v = 0;
      if (isfinite(x[c])) v = fabs(x[c]);
      else atomicMin(first_bad, static_cast<unsigned long long>(i + (c0 + c) * n));
      if (converted) stage[threadIdx.x][c] = static_cast<float>(x[c]);
      sum += v;
      largest = fmax(largest, v);
      if (v > 0) smallest = fmin(smallest, v);
      for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
      if (lane == 0) warp_column_max[warp][c] = v;
    }
    __syncthreads();
    if (threadIdx.x < width) {
      double m = 0;
      for (int w = 0; w < kScanRows / 32; ++w) m = fmax(m, warp_column_max[w][threadIdx.x]);
      atomicMax(column_max + c0 + threadIdx.x, static_cast<unsigned long long>(__double_as_longlong(m)));
    }
    if (converted)  // a warp stores one row's run of the chunk at a time
      for (int r = warp; r < kScanRows; r += kScanRows / 32)
        if (i0 + r < n && lane < width) converted[c0 + lane + (i0 + r) * ld_converted] = stage[r][lane];
    __syncthreads();  // the stage and the column maxima are rewritten next
  }
  if (i < n) {
    row_partial_sums[i + std::int64_t(blockIdx.y) * n] = sum;
    atomicMax(row_max + i, static_cast<unsigned long long>(__double_as_longlong(largest)));
  }
  for (int o = 16; o > 0; o /= 2) smallest = fmin(smallest, __shfl_xor_sync(0xffffffffu, smallest, o));
  if (lane == 0 && smallest < INFINITY)
    atomicMin(min_nonzero, static_cast<unsigned long long>(__double_as_longlong(smallest)));
}

// row_sums[i] = the sum over the stripes s of row_partial_sums[i + n s], in order.
__global__ void sum_row_partials_kernel(const double* row_partial_sums, std::int64_t n, std::int64_t stripes,
                                        unsigned long long* row_sums) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double s = 0;
  for (std::int64_t q = 0; q < stripes; ++q) s += row_partial_sums[i + q * n];
  row_sums[i] = static_cast<unsigned long long>(__double_as_longlong(s));
}

// y[permutation[i]] = mu row_factor[permutation[i]] scale[0] w[i]: the transpose of gather_rows
// (row_factor and scale may be null).
template <class T>
__global__ void scatter_rows_kernel(const T* w, const int* permutation, std::int64_t n, const double* row_factor,
                                    const double* scale, double mu, double* y) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = permutation[i];
    double v = double(w[i]);
    if (row_factor) v *= row_factor[row];
    if (scale) v *= scale[0];
    y[row] = v * mu;
  }
}

__global__ void add_panel_pivots_kernel(const int* panel, int count, std::int64_t first, int* global) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) global[first + i] = int(first + panel[i] - 1);
}

// range[0] = min |a_kk| and range[1] = max |a_kk| over the diagonal of an n x n column-major
// matrix, as the bits of non-negative doubles (ordered as unsigned integers; range[0] starts at
// all ones, range[1] at 0). NaNs are skipped: the factorization's own checks catch them.
template <class T>
__global__ void diagonal_abs_range_kernel(const T* a, std::int64_t lda, std::int64_t n, unsigned long long* range) {
  double smallest = INFINITY, largest = 0;
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < n;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const double u = fabs(double(a[k + k * lda]));
    smallest = fmin(smallest, u);
    largest = fmax(largest, u);
  }
  for (int o = 16; o > 0; o /= 2) {
    smallest = fmin(smallest, __shfl_down_sync(0xffffffffu, smallest, o));
    largest = fmax(largest, __shfl_down_sync(0xffffffffu, largest, o));
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMin(&range[0], static_cast<unsigned long long>(__double_as_longlong(smallest)));
    atomicMax(&range[1], static_cast<unsigned long long>(__double_as_longlong(largest)));
  }
}

// For each column j of m (one block per column): the power of two
// factor[j] that brings max_i |row_factor_i m_ij| into [1/2, 1) (row_factor may be null), and
// optionally its reciprocal.
__global__ void column_factors_kernel(const double* m, std::int64_t ld, std::int64_t rows, const double* row_factor,
                                      double* factor, double* reciprocal) {
  const double r = column_abs_max_in_block(m, ld, rows, row_factor);
  if (threadIdx.x == 0) {
    const double f = equilibrating_power_of_two(r);
    factor[blockIdx.x] = f;
    if (reciprocal) reciprocal[blockIdx.x] = 1.0 / f;
  }
}

}  // namespace mixsolve::solvers_detail::device_lu
