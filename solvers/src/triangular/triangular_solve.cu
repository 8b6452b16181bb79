// SPDX-License-Identifier: BSD-3-Clause
// The bandwidth-bound triangular solver of the device LU's factors (TriangularSolver).
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "mixsolve/primitives/async_copy.cuh"
#include "mixsolve/primitives/tagged_words.cuh"
#include "cuda_helpers.hpp"
#include "triangular/triangular_solver.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

using primitives::load_word;
using primitives::store_word;
using primitives::tagged;

// ---------------------------------------------------------------------------------------------
// Triangular solves for one vector. cublas<t>trsv/trsm with one right-hand side run a chain of
// small dependent steps and reach a fraction of the memory bandwidth. Here each block of
// kSolveRows rows of x is one thread block; blocks take tickets in launch order (so a block only
// waits for blocks that are already running), accumulate the products of their row of the
// factor with the parts of x already published, then apply the precomputed inverse of their
// diagonal block (a small mat-vec instead of a sequential substitution) and publish their part.
// The factor is read once. Two things keep the chain of blocks short:
//  - the factor's tiles stream into a ring of shared memory (cp.async) ahead of the parts of x
//    they multiply, so when a part of x arrives only a tile product from shared memory is left;
//  - a part of x is published as tagged words (value and launch tag in one 64-bit store, two for
//    FP64), so a reader polls the values themselves: no flag, no fence, one L2 trip per hand-over.
// At n = 16384 on the H100 a solve pair then takes 0.85 ms, against 2.0 ms with flags and the
// tiles read after the flag, with bit-identical results (docs/history/solver-log.md).
// The factor's type F and the arithmetic's type V may differ: FP32 factors are applied in FP64
// (V = double), reading the same bytes, so that GMRES-IR's preconditioned operator is applied in
// the working precision (Amestoy, Buttari, Higham, L'Excellent, Mary and Vieuble, "Five-precision
// GMRES-based iterative refinement", SIAM J. Matrix Anal. Appl. 45(1), 2024: with the
// preconditioner applied in precision u_p, GMRES-IR needs about kappa(A) u_p < 1).
//
// The chain of hand-overs bounds a solve at n = 16384. A hand-over costs the detection of the
// published part (~1 us) plus the block's last tile product and inverse, whose work grows with
// the square of the block's rows: 64-row blocks rather than 128 save ~18% of a solve pair with
// FP32 factors at n = 16384 on an H100, though the chain has twice as many links. (At 32768 the
// block size makes no difference: there each hand-over slows to ~5.6 us under the other blocks'
// streaming.)
constexpr int kSolveRows = 64;
// Threads per block: 1024, except FP32 factors with several vectors, whose partial sums (a
// thread group per column slice, K vectors each) fit in a ring slot only with 8 groups: two
// blocks of 512 per multiprocessor (measurements: docs/history/solver-log.md).
template <class F, int K>
constexpr int kSolveThreads = sizeof(F) == 4 && K > 1 ? 512 : 1024;

// Inverts the diagonal blocks in V arithmetic: blockIdx.y == 0 the unit lower triangles of L, 1
// the upper triangles of U (column-oriented substitution). A short last block is padded with the
// identity. kInverseThreadsPerColumn threads of one warp share a column of the inverse, the rows
// of each substitution step split among them: with one thread per column (128 per block, one
// block per multiprocessor for its shared memory) the multiprocessors wait on latency. On an H100
// at n = 32768 this saves ~1.3 ms of a factorization.
constexpr int kInverseThreadsPerColumn = 8;
constexpr int kInverseYStride = kSolveRows + 1;  // padded rows of y: the threads of a column hit different banks
template <class F, class V>
__global__ void invert_diagonal_blocks_kernel(const F* lu, std::int64_t ld, std::int64_t n, V* inverses) {
  constexpr int B = kSolveRows, S = kInverseYStride, P = kInverseThreadsPerColumn;
  static_assert(32 % P == 0, "a column's threads lie in one warp");
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  V* y = reinterpret_cast<V*>(shared_bytes);  // y[k * S + c]: column c of the inverse
  V* tile = y + B * S;                         // tile[i * B + k] = factor(r0 + i, r0 + k), widened
  const bool lower = blockIdx.y == 0;
  const std::int64_t r0 = std::int64_t(blockIdx.x) * B;
  const int rows = int(min(std::int64_t(B), n - r0));
  for (int idx = threadIdx.x; idx < B * B; idx += blockDim.x) {
    const int i = idx % B, k = idx / B;
    V v = i < rows && k < rows ? widen<V>(lu[(r0 + i) + (r0 + k) * ld]) : V(i == k ? 1 : 0);
    if (lower && i == k) v = 1;  // the unit diagonal of L (U's diagonal is stored there)
    tile[i * B + k] = v;
    y[k * S + i] = V(i == k ? 1 : 0);
  }
  __syncthreads();
  const int c = threadIdx.x / P, t = threadIdx.x % P;  // column c, its thread t of P
  constexpr int kColumnsPerWarp = 32 / P;
  const int first = (c / kColumnsPerWarp) * kColumnsPerWarp, last = first + kColumnsPerWarp - 1;  // the warp's
  if (lower) {  // step k: y(i, c) -= L(i, k) y(k, c) for i > k, from k = c on
    for (int k = first; k < B; ++k) {  // uniform in the warp, for __syncwarp
      if (k >= c) {
        const V yk = y[k * S + c];
        for (int i = k + 1 + t; i < B; i += P) y[i * S + c] -= tile[i * B + k] * yk;
      }
      __syncwarp();
    }
  } else {  // step k: y(k, c) /= U(k, k), then y(i, c) -= U(i, k) y(k, c) for i < k, from k = c down
    for (int k = last; k >= 0; --k) {
      V yk = 0;
      if (k <= c) yk = y[k * S + c] / tile[k * B + k];
      __syncwarp();  // every thread of the column has read y(k, c)
      if (k <= c) {
        if (t == 0) y[k * S + c] = yk;
        for (int i = t; i < k; i += P) y[i * S + c] -= tile[i * B + k] * yk;
      }
      __syncwarp();
    }
  }
  __syncthreads();
  V* out = inverses + (std::int64_t(blockIdx.y) * gridDim.x + blockIdx.x) * B * B;  // column-major B x B
  for (int idx = threadIdx.x; idx < B * B; idx += blockDim.x) out[idx] = y[(idx % B) * S + idx / B];
}

// Tiles of the factor in flight or waiting per thread block. One vector and FP32 factors: 6, which
// keeps more of a block's row in flight while it runs ahead of the chain (~6% off a solve pair at
// n = 16384 on an H100; more slots gain nothing). 3 where the tiles or the partial sums take more
// shared memory (FP64 factors, several vectors: for 4 vectors 6 slots make the pair slower).
template <class F, int K>
constexpr int kSolveRing = sizeof(F) <= 4 && K == 1 ? 6 : 3;

// Whether F is a packed SLFP entry (PackedSlfp): copied by 16-byte pieces only, one vector a launch.
template <class F>
constexpr bool kPackedFactor = !std::is_arithmetic_v<F>;

using primitives::copy_async_16;
using primitives::copy_async_commit;
using primitives::copy_async_small;
using primitives::copy_async_wait;
using primitives::shared_address;

// A published value of x: the bits and the launch's tag in 64-bit words, each stored and loaded
// whole (single-copy atomic), so a reader that sees the tag sees the value.
template <class T>
struct TaggedValue;
template <>
struct TaggedValue<double> {
  static constexpr int kWords = 2;  // low and high halves, each with the tag
  __device__ static void store(unsigned long long* w, double v, unsigned tag) {
    const auto bits = static_cast<unsigned long long>(__double_as_longlong(v));
    const unsigned long long t = static_cast<unsigned long long>(tag) << 32;
    store_word(w, t | (bits & 0xffffffffull));
    store_word(w + 1, t | (bits >> 32));
  }
  __device__ static bool load(const unsigned long long* w, unsigned tag, double& v) {
    const unsigned long long low = load_word(w), high = load_word(w + 1);
    v = __longlong_as_double(static_cast<long long>((high << 32) | (low & 0xffffffffull)));
    return unsigned(low >> 32) == tag && unsigned(high >> 32) == tag;
  }
};

// X := L^-1 X (kLower, unit diagonal) or U^-1 X for `columns` <= K vectors (n x columns, leading
// dimension ldx), factors F, arithmetic and X V; one thread block per block of B rows, in ticket
// order. Step s of block t multiplies the tile of the factor in column block block_of_step(s) by
// that part of every vector: tiles stream through a ring of kRing tiles in shared memory (one
// barrier per step), warp 0 fetches the published parts of the vectors into shared memory. The
// tile is read once for all the vectors, and the blocks hand over once per step for all of them.
// Thread (r, g) owns row r and the columns g, g + kGroups, ... of each tile. For FP64 factors the
// kGroups threads of a row lie in one warp (kSolveGroupsInWarp), so the sums over them are
// shuffles and the hand-over from the last part of X to this block's publication holds one
// barrier (the diagonal block's inverse needs every row of y) instead of three. The blocks hand
// over one after another, so the hand-over bounds a solve: a pair at n = 16384 takes 2.3 ms
// against 3.0 with three barriers (H100). For FP32 factors the same layout is ~5% slower, so
// there a group is B consecutive threads and the sums go through shared memory.
template <class F>
constexpr bool kSolveGroupsInWarp = sizeof(F) == 8;
template <class F>  // the tiles' column stride, padded where a warp reads several columns
constexpr int kSolveTileStride = kSolveRows + (kSolveGroupsInWarp<F> ? 16 / int(sizeof(F)) : 0);
template <int K>
constexpr int kSolveXSlots = K == 1 ? 8 : 6;  // parts of the vectors staged in shared memory (fewer fit for 4)
template <class F, class V, bool kLower, int K>
__global__ void __launch_bounds__(kSolveThreads<F, K>, 1024 / kSolveThreads<F, K>)
    triangular_solve_kernel(const F* lu, std::int64_t ld, std::int64_t n, const V* inverses, V* x, std::int64_t ldx,
                            int columns, unsigned long long* published, unsigned tag, unsigned* ticket,
                            bool vector_copies) {
  constexpr int kThreads = kSolveThreads<F, K>, kRing = kSolveRing<F, K>;
  constexpr int B = kSolveRows, S = kSolveTileStride<F>, kGroups = kThreads / B;
  constexpr int kPerThread = B / kGroups, kPerLane = B / 32, kWords = TaggedValue<V>::kWords, kSlots = kSolveXSlots<K>;
  constexpr bool kGroupsInWarp = kSolveGroupsInWarp<F>;
  static_assert(K <= kGroups && (!kGroupsInWarp || 32 % kGroups == 0), "a vector per group; a row's groups in a warp");
  static_assert(K * B * sizeof(V) <= B * S * sizeof(F), "y fits in one ring slot");
  static_assert(kGroupsInWarp || kGroups * K * B * sizeof(V) <= B * S * sizeof(F), "the partial sums fit in one");
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  F* ring = reinterpret_cast<F*>(shared_bytes);  // kRing column-major B x B tiles, columns S apart
  __shared__ V x_parts[kSlots][K][B];
  __shared__ int ticket_taken;
  const int row_blocks = int((n + B - 1) / B);
  if (threadIdx.x == 0) ticket_taken = int(atomicAdd(ticket, 1u));
  __syncthreads();
  const int t = ticket_taken;  // the number of steps
  const int rb = kLower ? t : row_blocks - 1 - t;
  const std::int64_t r0 = std::int64_t(rb) * B;
  const int rows = int(min(std::int64_t(B), n - r0));
  const int r = kGroupsInWarp ? threadIdx.x / kGroups : threadIdx.x % B;
  const int group = kGroupsInWarp ? threadIdx.x % kGroups : threadIdx.x / B, lane = threadIdx.x % 32;
  auto block_of_step = [&](int step) { return kLower ? step : row_blocks - 1 - step; };

  // Starts copying the tile of `step` into its ring slot; one commit group per step, empty past
  // the last, so that waiting for kRing - 2 pending groups means "this step's tile is in".
  auto start_tile = [&](int step) {
    if (step < t) {
      const std::int64_t c0 = std::int64_t(block_of_step(step)) * B;
      const int cols = int(min(std::int64_t(B), n - c0));
      F* tile = ring + (step % kRing) * B * S;
      if (kPackedFactor<F> || vector_copies) {  // 16-byte pieces of columns; bytes past the last row zero-filled
        constexpr int kColumnBytes = B * int(sizeof(F)), kPiecesPerColumn = kColumnBytes / 16;
        static_assert(kColumnBytes % 16 == 0 && S * int(sizeof(F)) % 16 == 0, "columns of whole pieces");
        const int valid_bytes = rows * int(sizeof(F));
        for (int idx = threadIdx.x; idx < B * kPiecesPerColumn; idx += kThreads) {
          const int c = idx / kPiecesPerColumn, offset = (idx % kPiecesPerColumn) * 16;
          const int valid = c < cols ? max(0, min(16, valid_bytes - offset)) : 0;
          const char* column = reinterpret_cast<const char*>(lu + r0 + (c0 + c) * ld);
          copy_async_16(shared_address(reinterpret_cast<char*>(tile + c * S) + offset),
                        valid > 0 ? column + offset : reinterpret_cast<const char*>(lu), valid);
        }
      } else if constexpr (!kPackedFactor<F>) {
        for (int idx = threadIdx.x; idx < B * B; idx += kThreads) {
          const int i = idx % B, c = idx / B;
          const bool valid = i < rows && c < cols;
          copy_async_small<sizeof(F)>(shared_address(tile + c * S + i), valid ? lu + (r0 + i) + (c0 + c) * ld : lu,
                                        valid ? int(sizeof(F)) : 0);
        }
      }
    }
    copy_async_commit();
  };
  for (int s = 0; s < kRing - 1; ++s) start_tile(s);

  V inverse[kPerThread];  // row r of the inverse of the diagonal block, this thread's columns
  const V* own_inverse = inverses + (std::int64_t(kLower ? 0 : 1) * row_blocks + rb) * B * B;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) inverse[k] = own_inverse[r + (group + kGroups * k) * B];
  // Thread (r, g) holds row r of vector g (groups past `columns` hold nothing).
  const bool owns_value = group < columns && r < rows;
  const V own_rhs = owns_value ? x[r0 + r + group * ldx] : V(0);

  int x_ready = 0;  // warp 0: the steps whose parts of the vectors are in x_parts
  V acc[K] = {};
  for (int s = 0; s < t; ++s) {
    copy_async_wait<kRing - 2>();
    // Warp 0 waits for the parts of step s and takes those of the next steps already published
    // (up to kSlots - 2 ahead: the slot of step s - 1 may still be read).
    if (threadIdx.x < 32 && s >= x_ready) {
      const int last = min(t, s + kSlots - 2);
      while (true) {
        int ready = s;
        for (int j = s; j < last; ++j) {
          const std::int64_t c0 = std::int64_t(block_of_step(j)) * B;
          V v[K][kPerLane];
          bool ok = true;
#pragma unroll
          for (int c = 0; c < K; ++c)
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
              const std::int64_t row = c0 + kPerLane * lane + i;
              v[c][i] = V(0);
              if (c < columns && row < n) ok &= TaggedValue<V>::load(published + (c * n + row) * kWords, tag, v[c][i]);
            }
          if (!__all_sync(0xffffffffu, ok)) break;
#pragma unroll
          for (int c = 0; c < K; ++c)
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) x_parts[j % kSlots][c][kPerLane * lane + i] = v[c][i];
          ready = j + 1;
        }
        if (ready > s) {
          x_ready = ready;
          break;
        }
        __nanosleep(32);
      }
    }
    __syncthreads();  // the tile and the parts of step s are in; step s - 1's slot is free
    start_tile(s + kRing - 1);
    const F* tile = ring + (s % kRing) * B * S;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int column = group + kGroups * k;
      const V factor = widen<V>(tile[column * S + r]);
#pragma unroll
      for (int c = 0; c < K; ++c) acc[c] += factor * x_parts[s % kSlots][c][column];
    }
  }
  // y = b - (the product with the solved parts), then x(block) = inverse(diagonal block) * y, in
  // the ring slots that no step reads last (t % kRing and the next: only empty copy groups
  // were committed for them), so no barrier before.
  V* y = reinterpret_cast<V*>(ring + (t % kRing) * B * S);                               // [K][B]
  [[maybe_unused]] V* partial = reinterpret_cast<V*>(ring + ((t + 1) % kRing) * B * S);  // [kGroups][K][B]
  // Each vector's values summed over a row's kGroups threads; thread (r, c) gets vector c's sum
  // (c < K). In a warp: shuffles; else through `partial`, whose earlier readers have passed a
  // barrier since (the one after y).
  const auto sums_over_groups = [&](const V(&values)[K]) {
    V mine = 0;
    if constexpr (kGroupsInWarp) {
#pragma unroll
      for (int c = 0; c < K; ++c) {
        V v = values[c];
#pragma unroll
        for (int offset = 1; offset < kGroups; offset *= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
        if (group == c) mine = v;
      }
    } else {
#pragma unroll
      for (int c = 0; c < K; ++c) partial[(group * K + c) * B + r] = values[c];
      __syncthreads();
      if (group < K)
        for (int g = 0; g < kGroups; ++g) mine += partial[(g * K + group) * B + r];
    }
    return mine;
  };
  const V sum = sums_over_groups(acc);
  if (group < K) y[group * B + r] = own_rhs - sum;
  __syncthreads();
  V v[K] = {};
#pragma unroll
  for (int k = 0; k < kPerThread; ++k)
#pragma unroll
    for (int c = 0; c < K; ++c) v[c] += inverse[k] * y[c * B + group + kGroups * k];
  const V value = sums_over_groups(v);
  if (owns_value) {
    TaggedValue<V>::store(published + (group * n + r0 + r) * kWords, value, tag);
    x[r0 + r + group * ldx] = value;
  }
}

}  // namespace

template <class F, class V>
TriangularSolver<F, V>::TriangularSolver(const F* lu, std::int64_t n, std::int64_t ld, cudaStream_t stream,
                                         Context* memory)
    : lu_(lu), n_(n), ld_(ld) {
  constexpr int B = kSolveRows;
  const std::int64_t blocks = std::max<std::int64_t>((n + B - 1) / B, 1);
  published_ = device_buffer<unsigned long long>(
      memory, std::max<std::int64_t>(n, 1) * kTriangularSolveMaxColumns * TaggedValue<V>::kWords);
  ticket_ = device_buffer<unsigned>(memory, 1);
  inverses_ = device_buffer<V>(memory, 2 * blocks * B * B);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(published_.data(), 0, published_.bytes(), stream));  // tag 0 is never used
  vector_copies_ = ld * sizeof(F) % 16 == 0 && reinterpret_cast<std::uintptr_t>(lu) % 16 == 0;
  if (kPackedFactor<F> && !vector_copies_)
    throw InvalidArgument("TriangularSolver: packed factors need 16-byte aligned columns (ld = " + std::to_string(ld) +
                          " of " + std::to_string(sizeof(F)) + "-byte entries)");
  if (n == 0) return;
  const int shared = int(B * kInverseYStride * sizeof(V) + B * B * sizeof(V));
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(invert_diagonal_blocks_kernel<F, V>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  invert_diagonal_blocks_kernel<F, V><<<dim3(unsigned(blocks), 2), B * kInverseThreadsPerColumn, shared, stream>>>(
      lu, ld, n, inverses_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <class F, class V>
template <int K>
void TriangularSolver<F, V>::launch(V* x, std::int64_t ldx, int columns, cudaStream_t stream) {
  constexpr int B = kSolveRows;
  const int shared = int(kSolveRing<F, K> * B * kSolveTileStride<F> * sizeof(F));
  static const cudaError_t lower_attribute = cudaFuncSetAttribute(
      triangular_solve_kernel<F, V, true, K>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  static const cudaError_t upper_attribute = cudaFuncSetAttribute(
      triangular_solve_kernel<F, V, false, K>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  MIXSOLVE_CUDA_CHECK(lower_attribute);
  MIXSOLVE_CUDA_CHECK(upper_attribute);
  const unsigned blocks = unsigned((n_ + B - 1) / B);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned), stream));
  triangular_solve_kernel<F, V, true, K><<<blocks, kSolveThreads<F, K>, shared, stream>>>(
      lu_, ld_, n_, inverses_.data(), x, ldx, columns, published_.data(), ++tag_, ticket_.data(), vector_copies_);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned), stream));
  triangular_solve_kernel<F, V, false, K><<<blocks, kSolveThreads<F, K>, shared, stream>>>(
      lu_, ld_, n_, inverses_.data(), x, ldx, columns, published_.data(), ++tag_, ticket_.data(), vector_copies_);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <class F, class V>
void TriangularSolver<F, V>::solve(V* x, std::int64_t ldx, int columns, cudaStream_t stream) {
  if (columns < 1 || columns > kTriangularSolveMaxColumns)
    throw InvalidArgument("TriangularSolver::solve: columns = " + std::to_string(columns) + " must lie in [1, " +
                          std::to_string(kTriangularSolveMaxColumns) + "]");
  if (columns > 1 && ldx < n_)
    throw InvalidArgument("TriangularSolver::solve: ldx = " + std::to_string(ldx) + " is below n = " +
                          std::to_string(n_));
  if (n_ == 0) return;
  if (tag_ >= 0xffffffffu - 2 * kTriangularSolveMaxColumns) {  // the tags would wrap: start again from a clean slate
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(published_.data(), 0, published_.bytes(), stream));
    tag_ = 0;
  }
  // One vector (every GMRES application) keeps the kernel without the other vectors' registers.
  // Packed factors take one vector a launch (their narrow ring slots hold one vector's partial sums).
  if constexpr (kPackedFactor<F>) {
    for (int c = 0; c < columns; ++c) launch<1>(x + c * ldx, ldx, 1, stream);
  } else {
    if (columns == 1) launch<1>(x, ldx, 1, stream);
    else launch<kTriangularSolveMaxColumns>(x, ldx, columns, stream);
  }
}

template class TriangularSolver<float, double>;
template class TriangularSolver<double>;

// ---- PackedFactors ---------------------------------------------------------------------------

namespace {

// out(i, j) := lu(i, j) rounded to nearest in F, packed; the same leading dimension.
template <class F>
__global__ void pack_factors_kernel(const float* lu, std::int64_t ld, std::int64_t n, PackedSlfp<F>* out) {
  using Value = typename F::value_type;
  const std::int64_t count = ld * n;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const typename F::Bits stored = F::template encode<formats::Rounding::NearestEven>(Value(lu[i]));
    PackedSlfp<F> p;
    for (int b = 0; b < int(sizeof p.bytes); ++b) p.bytes[b] = static_cast<unsigned char>(stored >> (8 * b));
    out[i] = p;
  }
}

template <class Fn>
decltype(auto) with_packed_format(slfp::Format format, Fn&& fn) {
  switch (format) {
    case slfp::Format::Slfp32in24: return fn(formats::Slfp32in24{});
    case slfp::Format::Slfp32in16: return fn(formats::Slfp32in16{});
    case slfp::Format::Slfp64in32: return fn(formats::Slfp64in32{});
    case slfp::Format::Slfp64in24: return fn(formats::Slfp64in24{});
    case slfp::Format::Slfp64in16: return fn(formats::Slfp64in16{});
    default: break;
  }
  throw InvalidArgument(std::string("PackedFactors: format ") + slfp::to_string(format) +
                        " is not one of slfp32in24b, slfp32in16b, slfp64in32b, slfp64in24b, slfp64in16b");
}

}  // namespace

class PackedFactors::Solver {
 public:
  virtual ~Solver() = default;
  virtual void solve(double* x, std::int64_t ldx, int columns, cudaStream_t stream) = 0;
  virtual std::size_t bytes() const = 0;
};

namespace {
template <class F>
class PackedSolver final : public PackedFactors::Solver {
 public:
  PackedSolver(const PackedSlfp<F>* lu, std::int64_t n, std::int64_t ld, cudaStream_t stream, Context* memory)
      : solver_(lu, n, ld, stream, memory) {}
  void solve(double* x, std::int64_t ldx, int columns, cudaStream_t stream) override {
    solver_.solve(x, ldx, columns, stream);
  }
  std::size_t bytes() const override { return solver_.bytes(); }

 private:
  TriangularSolver<PackedSlfp<F>, double> solver_;
};
}  // namespace

PackedFactors::PackedFactors(slfp::Format format, const float* lu, std::int64_t n, std::int64_t ld,
                             cudaStream_t stream, Context* memory)
    : format_(format), n_(n) {
  with_packed_format(format, [&](auto tag) {
    using F = decltype(tag);
    packed_ = device_buffer<unsigned char>(memory, std::max<std::int64_t>(1, ld * n) * sizeof(PackedSlfp<F>));
    auto* packed = reinterpret_cast<PackedSlfp<F>*>(packed_.data());
    if (n > 0) {
      pack_factors_kernel<F><<<1024, 256, 0, stream>>>(lu, ld, n, packed);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    solver_ = std::make_unique<PackedSolver<F>>(packed, n, ld, stream, memory);
  });
}

PackedFactors::~PackedFactors() = default;

void PackedFactors::solve(double* x, std::int64_t ldx, int columns, cudaStream_t stream) {
  solver_->solve(x, ldx, columns, stream);
}

std::size_t PackedFactors::bytes() const { return packed_.bytes() + solver_->bytes(); }

}  // namespace mixsolve::solvers_detail
