// SPDX-License-Identifier: BSD-3-Clause
// Internal: the operands of the emulated DGEMMs (ozaki2-int8, ozaki-fp32) seen as vectors of
// length k (rows of op(A), columns of op(B)), read through 64 x 64 tiles in shared memory so that
// reads follow the stored matrix whatever the transposes, and the largest |value| per vector.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace mixsolve::gemm::detail {

inline std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

inline unsigned grid_for(std::int64_t total) {
  return unsigned(std::clamp<std::int64_t>((total + 255) / 256, 1, 8192));
}

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

}  // namespace

// The largest k a grid of tiles covers: CUDA's 65535 blocks along y.
constexpr std::int64_t kMaxTiledDepth = std::int64_t{65535} * kTile;

// The grid of tiles over `vectors` vectors of length k (k <= kMaxTiledDepth).
inline dim3 tiles(std::int64_t vectors, std::int64_t k) {
  return dim3(unsigned((vectors + kTile - 1) / kTile), unsigned((k + kTile - 1) / kTile));
}

}  // namespace mixsolve::gemm::detail
