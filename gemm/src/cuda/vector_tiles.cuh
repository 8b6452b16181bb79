// SPDX-License-Identifier: BSD-3-Clause
// Internal: what the emulated DGEMMs (ozaki2-int8, ozaki-fp32*, ozaki-bf16/fp16) share: their
// operands seen as vectors of length k (rows of op(A), columns of op(B)), read through 64 x 64
// tiles in shared memory so that reads follow the stored matrix whatever the transposes; the
// largest |value| and the exponent of each vector, with the refusal of NaN and Inf; and the final
// C = alpha AB + beta C, rounded operation by operation as the host references round it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/internal/launch.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/problem.hpp"

namespace mixsolve::gemm::detail {

inline std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

// The vector kernels' grid-stride loops take at most 8192 blocks.
inline unsigned grid_for(std::int64_t total) { return mixsolve::detail::blocks_for(total, 8192); }

constexpr int kTile = 64;      // tile: 64 vectors x 64 elements
constexpr int kThreads = 256;  // per tile
constexpr int kGroup = 16;     // elements one thread turns into residues: one 16-byte store per plane

// One operand seen as `vectors` vectors of length k: element l of vector v at
// data[v * vector_stride + l * element_stride].
struct Vectors {
  const double* data;
  std::int64_t vectors, k, vector_stride, element_stride;
  __device__ double at(std::int64_t v, std::int64_t l) const { return data[v * vector_stride + l * element_stride]; }
};

// The rows of op(A) and the columns of op(B) of an FP64 problem.
inline Vectors rows_of_op_a(const Problem& p) {
  return {static_cast<const double*>(p.a.data), p.m, p.k, p.a.op == Op::N ? 1 : p.a.ld, p.a.op == Op::N ? p.a.ld : 1};
}
inline Vectors columns_of_op_b(const Problem& p) {
  return {static_cast<const double*>(p.b.data), p.n, p.k, p.b.op == Op::N ? p.b.ld : 1, p.b.op == Op::N ? 1 : p.b.ld};
}

// alpha ab + beta c (beta == 0: c is not read), each operation rounded to nearest.
__device__ inline double alpha_ab_plus_beta_c(double alpha, double ab, double beta, double c) {
  return beta == 0 ? __dmul_rn(alpha, ab) : __dadd_rn(__dmul_rn(alpha, ab), __dmul_rn(beta, c));
}

// tile[dv][dl] = value(x(v0 + dv, l0 + dl), v0 + dv) inside the operand, 0 outside; consecutive
// threads read consecutive addresses, along l or along v, whichever is contiguous.
template <class Value>
__device__ void load_tile(const Vectors& x, std::int64_t v0, std::int64_t l0, double (*tile)[kTile + 1], Value value) {
  const bool along_l = x.element_stride == 1;
  for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
    const int fast = e % kTile, slow = e / kTile;
    const int dv = along_l ? slow : fast, dl = along_l ? fast : slow;
    const std::int64_t v = v0 + dv, l = l0 + dl;
    tile[dv][dl] = v < x.vectors && l < x.k ? value(x.at(v, l), v) : 0.0;
  }
  __syncthreads();
}

// Kernels in an unnamed namespace: each translation unit that launches them has its own.
namespace {

// largest_bits[v] = max over l of |x(v, l)| as the bits of a non-negative double (start: 0);
// nonfinite[0] counts NaN and Inf. Grid: (tiles along the vectors, tiles along k).
__global__ void __launch_bounds__(kThreads)
    largest_per_vector_kernel(Vectors x, unsigned long long* largest_bits, unsigned int* nonfinite) {
  __shared__ double tile[kTile][kTile + 1];
  const std::int64_t v0 = std::int64_t(blockIdx.x) * kTile, l0 = std::int64_t(blockIdx.y) * kTile;
  unsigned int bad = 0;  // this thread's NaN and Inf
  load_tile(x, v0, l0, tile, [&](double value, std::int64_t) {
    const double a = fabs(value);
    if (a <= 1.7976931348623157e308) return a;
    ++bad;
    return 0.0;
  });
  const int dv = threadIdx.x / 4, part = threadIdx.x % 4;  // 4 threads per vector, 16 elements each
  double largest = 0;
  for (int dl = part * kGroup; dl < (part + 1) * kGroup; ++dl) largest = fmax(largest, tile[dv][dl]);
  largest = fmax(largest, __shfl_xor_sync(0xffffffffu, largest, 1));
  largest = fmax(largest, __shfl_xor_sync(0xffffffffu, largest, 2));
  if (part == 0 && largest > 0 && v0 + dv < x.vectors)
    atomicMax(&largest_bits[v0 + dv], static_cast<unsigned long long>(__double_as_longlong(largest)));
  if (bad) atomicAdd(nonfinite, bad);
}

// exponent[v] = ceil(log2 largest_v), or zero_exponent for a zero vector.
__global__ void exponents_kernel(const unsigned long long* largest_bits, std::int64_t vectors, int zero_exponent,
                                 int* exponent) {
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < vectors;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const double largest = __longlong_as_double(static_cast<long long>(largest_bits[v]));
    exponent[v] = largest > 0 ? formats::ceil_log2(largest) : zero_exponent;
  }
}

// C (m x n) = alpha 2^(a_exponent_i + b_exponent_j) sum + beta C; null exponents count as 0.
__global__ void scaled_sum_to_c_kernel(const double* sum, std::int64_t m, std::int64_t n, const int* a_exponent,
                                       const int* b_exponent, double alpha, double beta, double* c, std::int64_t ldc) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < m * n;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % m, j = e / m;
    const double ab = a_exponent ? ldexp(sum[e], a_exponent[i] + b_exponent[j]) : sum[e];
    double& cij = c[i + j * ldc];
    cij = alpha_ab_plus_beta_c(alpha, ab, beta, cij);
  }
}

}  // namespace

// The largest k a grid of tiles covers: CUDA's 65535 blocks along y.
constexpr std::int64_t kMaxTiledDepth = std::int64_t{65535} * kTile;

// The grid of tiles over `vectors` vectors of length k (k <= kMaxTiledDepth).
inline dim3 tiles(std::int64_t vectors, std::int64_t k) {
  return dim3(unsigned((vectors + kTile - 1) / kTile), unsigned((k + kTile - 1) / kTile));
}

namespace {

// exponent (device, x.vectors ints) := ceil(log2 max_l |x(v, l)|) per vector, zero_exponent for a
// zero vector, on ctx's stream. Throws RangeError naming `backend` and `operand` where x holds NaN
// or Inf (one synchronisation), before anything is written to C.
void vector_exponents(Context& ctx, const Vectors& x, int zero_exponent, int* exponent, const std::string& backend,
                      const char* operand) {
  if (x.vectors == 0) return;
  cudaStream_t stream = ctx.stream();
  DeviceBuffer<unsigned long long> largest(ctx, x.vectors);
  DeviceBuffer<unsigned int> nonfinite(ctx, 1);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(largest.data(), 0, x.vectors * sizeof(unsigned long long), stream));
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(nonfinite.data(), 0, sizeof(unsigned int), stream));
  largest_per_vector_kernel<<<tiles(x.vectors, x.k), kThreads, 0, stream>>>(x, largest.data(), nonfinite.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  unsigned int bad = 0;
  nonfinite.copy_to_host(&bad, 1, stream);
  if (bad)
    throw RangeError("gemm(" + backend + "): " + operand + " holds " + std::to_string(bad) +
                     " NaN or Inf; the scheme represents finite values only: use cublas-dgemm");
  exponents_kernel<<<grid_for(x.vectors), 256, 0, stream>>>(largest.data(), x.vectors, zero_exponent, exponent);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

}  // namespace mixsolve::gemm::detail
