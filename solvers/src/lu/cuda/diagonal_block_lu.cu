// SPDX-License-Identifier: BSD-3-Clause
// The one-block LU of a diagonal block whose rows stand in a given order (the FP64 LU that follows
// a cheaper LU's row order; the FP16 LU of a matrix close to its diagonal, in A's own order).
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "mixsolve/primitives/mma.cuh"
#include "mixsolve/primitives/warp.cuh"
#include "cuda_helpers.hpp"
#include "lu/cuda/lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

using primitives::warp_best;

// ---------------------------------------------------------------------------------------------
// LU with partial pivoting of one w x w row-major block (w <= kPanelMaxWidth) of T = double or
// float, in FP64 arithmetic, in a single thread block: the diagonal block of a panel whose rows
// already stand in a chosen order (the FP64 LU that follows a cheaper LU's row order,
// SolveOptions::reuse_pivot_order; the FP32-stored LU in A's own order, FactorRequest::
// diagonal_blocks), where only the block's own rows are searched. FP32 values are widened on
// their way in and rounded once per sub-panel on their way out. It runs once per panel on the
// LU's critical path, so it is built for latency. Right-looking in sub-panels of kBlockSub columns:
//   a. factor_sub_panel: a thread per row holds the row's kBlockSub values in registers. Per
//      column one barrier: each warp finds its candidate (warp_best) and the candidate posts its
//      row to shared memory before the barrier, so after it every thread reads the warp winners,
//      picks the pivot and updates its own row from the posted one in registers. Rows never move:
//      a row's logical place is a register, interchanges are index swaps;
//   b. U12 = L11^-1 A12 by forward substitution, a column per thread;
//   c. A22 -= L21 U12 on the FP64 tensor cores (trailing_update).
// In global memory rows do not move either: perm (logical -> physical row) is followed on every
// access, and the rows that moved are put in their final order at the end, through `scratch`.
// On an H100 a 256 x 256 Gaussian block takes ~0.4 ms alone (step a ~0.8 us per column, of which
// the two warp_best reductions ~0.3; step c ~77 us) and ~0.55 ms inside the n = 16384 FP64 LU,
// beside the DGEMMs. docs/history/solver-log.md has the variants measured against this layout (rows in
// shared memory, step c on CUDA cores, a shuffle tree over the warps' candidates, getf2's
// reciprocal during the search, the column loop not unrolled).
constexpr int kBlockSub = 32;
constexpr int kBlockThreads = 256;
constexpr int kBlockWarps = kBlockThreads / 32;
constexpr int kRowOwnerWarps = kPanelMaxWidth / 32;  // step a: a thread per row of the block
// Row strides that are 4 modulo 16 doubles: the DMMA fragment loads of step c (lanes 4 g + t read
// row g, column t) then hit 16 distinct 8-byte banks in each half-warp.
constexpr int kBlockPanelStride = kBlockSub + 4;
constexpr int kBlockU12Stride = kPanelMaxWidth - kBlockSub + 4;
static_assert(kPanelMaxWidth <= kBlockThreads, "one thread per row of the block");
static_assert(kPanelMaxWidth <= 256, "the pivot code packs (logical row, thread) in 8 bits each");

struct DiagonalBlockShared {
  double panel[kPanelMaxWidth][kBlockPanelStride];  // the factored sub-panel, by logical row
  double u12[kBlockSub][kBlockU12Stride];          // U12 of the sub-panel's block row
  double posted_row[2][kRowOwnerWarps][kBlockSub];  // each warp's candidate row; by column parity
  double posted_value[2][kRowOwnerWarps];
  int posted_code[2][kRowOwnerWarps];
  int perm[kPanelMaxWidth];   // logical row -> physical row of the block
  int moved[kPanelMaxWidth];  // the logical rows whose physical row differs, at the end
  int moved_count;
};

// Step a on the sub-panel [c0, c0 + cw) of logical rows [c0, c0 + rows), called by every thread
// of the block: thread t owns the sub-panel's logical row t at the start, and the warps holding
// rows (the first ceil(rows / 32)) do the work. The per-column barrier is the block's
// __syncthreads, reached by every thread at the same place: the warps without rows only pass
// through it (a barrier among the row warps alone, bar.sync 1 with a thread count, is no faster,
// and racecheck reported hazards across the later __syncthreads with it). On return the factored
// rows are in s.panel by logical row and in global memory, and s.perm holds the new order (after
// the caller's __syncthreads).
template <class T>
__device__ void factor_sub_panel(DiagonalBlockShared& s, T* __restrict__ a, std::int64_t lda, int c0, int cw, int rows,
                                 int* __restrict__ pivots, std::int64_t row_offset, int* first_zero_pivot,
                                 std::int64_t column_offset) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int row_warps = (rows + 31) / 32;
  const bool row_warp = warp < row_warps;  // uniform over the warp
  const bool owner = tid < rows;
  const int physical = owner ? s.perm[c0 + tid] : 0;
  // The warp's 32 rows through shared memory, a row per load instruction: each thread loading
  // its own row would touch 32 rows per instruction (up to 4x the L2 sector requests), which the
  // DGEMMs running beside the LU make slow (inside the n = 16384 LU: 0.72 against 0.55 ms).
  double v[kBlockSub] = {};
  if (row_warp) {
    double staged[kBlockSub];
#pragma unroll
    for (int r = 0; r < 32; ++r) {
      const int source = __shfl_sync(0xffffffffu, physical, r);
      staged[r] = 32 * warp + r < rows && lane < cw ? double(a[c0 + lane + std::int64_t(source) * lda]) : 0.0;
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) s.panel[32 * warp + r][lane] = staged[r];
    __syncwarp();
#pragma unroll
    for (int c = 0; c < kBlockSub; ++c) v[c] = s.panel[tid][c];
  }
  int logical = tid;        // the row's place among the sub-panel's rows
  bool pivotal = !owner;    // already a pivot row (or no row)
#pragma unroll
  for (int j = 0; j < kBlockSub; ++j) {
    if (j >= cw) break;
    const int parity = j & 1;  // a warp is at most one column ahead: two sets of posts suffice
    // The search: (|value|, logical row << 8 | thread), so the lowest logical row wins a tie
    // (LAPACK's choice) and the owner comes with it.
    const int my_code = logical << 8 | tid;
    double best = pivotal ? -1.0 : fabs(v[j]);
    int code = pivotal ? INT_MAX : my_code;
    if (row_warp) {
      warp_best(best, code);
      if (!pivotal && code == my_code) {
#pragma unroll
        for (int c = j; c < kBlockSub; ++c) s.posted_row[parity][warp][c] = v[c];
      }
      if (lane == 0) {
        s.posted_value[parity][warp] = best;
        s.posted_code[parity][warp] = code;
      }
    }
    __syncthreads();
    if (!row_warp) continue;
    best = lane < row_warps ? s.posted_value[parity][lane] : -1.0;
    code = lane < row_warps ? s.posted_code[parity][lane] : INT_MAX;
    warp_best(best, code);
    if (code == INT_MAX) {  // no row left unpivoted: not reachable for j < cw <= rows; keep the order
      if (!pivotal && logical == j) pivotal = true;
      continue;
    }
    const int winner = code & 0xff, p = code >> 8;  // the pivot's owner and logical row
    const double* pivot_row = s.posted_row[parity][winner >> 5];
    const double pivot = pivot_row[j];
    // The other unpivoted rows take their multiplier and the rank-1 update; a zero pivot leaves
    // its column (getf2). A NaN column (no candidate passes warp_best's test) makes NaN factors,
    // which the factors' check rejects.
    if (!pivotal && tid != winner && pivot != 0.0) {
      const double l = v[j] / pivot;
      v[j] = l;
#pragma unroll
      for (int c = j + 1; c < kBlockSub; ++c) v[c] -= l * pivot_row[c];
    }
    if (tid == winner) {
      pivotal = true;
      logical = j;
    } else if (logical == j) {  // the interchange of logical rows j and p
      logical = p;
    }
    if (tid == 0) {
      pivots[c0 + j] = int(row_offset + c0 + p);
      if (best == 0) atomicMin(first_zero_pivot, int(column_offset + c0 + j));
    }
  }
  if (!row_warp) return;
  if (owner) {
    s.perm[c0 + logical] = physical;  // every owner read its physical row before the first barrier
#pragma unroll
    for (int c = 0; c < kBlockSub; ++c) s.panel[logical][c] = v[c];
  }
  __syncwarp();
  // The warp's rows back to their physical rows, a row per store instruction.
#pragma unroll
  for (int r = 0; r < 32; ++r) {
    const int source = __shfl_sync(0xffffffffu, logical, r), target = __shfl_sync(0xffffffffu, physical, r);
    if (32 * warp + r < rows && lane < cw) a[c0 + lane + std::int64_t(target) * lda] = T(s.panel[source][lane]);
  }
}

// Step c: A22 -= L21 U12 for the m2 x m2 block below and right of a full sub-panel at c0, with
// L21 in s.panel (logical rows kBlockSub ..) and U12 in s.u12. A warp takes 32 x 32 tiles of
// A22 as 2 x 4 DMMA tiles of 16 x 8, accumulates in registers from global memory and stores back.
// Fragments past m2 read stale shared memory; they reach only accumulators that are not stored.
// m16n8k8 (primitives/mma.cuh) takes the same time as m8n8k4 here: the accumulators' loads from
// L2 set the pace.
template <class T>
__device__ void trailing_update(DiagonalBlockShared& s, T* __restrict__ a, std::int64_t lda, int c0, int m2) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int tiles = (m2 + 31) / 32;
  for (int tile = warp; tile < tiles * tiles; tile += kBlockWarps) {
    const int r0 = tile / tiles * 32, q0 = tile % tiles * 32;
    T* rows[4];  // the lane's rows r0 + 8 h + g, h = 0 .. 3, at column q0 of A22
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int r = r0 + 8 * h + g;
      rows[h] = r < m2 ? a + c0 + kBlockSub + q0 + std::int64_t(s.perm[c0 + kBlockSub + r]) * lda : nullptr;
    }
    // c[i][jj][2 h2 + e]: row r0 + 16 i + 8 h2 + g, column q0 + 8 jj + 2 t + e; those inside A22
    // are loaded first and stored at the end (the rest stay zero).
    double c[2][4][4] = {};
    const auto for_each_inside = [&](auto&& f) {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            T* row = rows[2 * i + e / 2];
            const int q = 8 * jj + 2 * t + e % 2;
            if (row && q0 + q < m2) f(row[q], c[i][jj][e]);
          }
    };
    for_each_inside([](T& global, double& accumulator) { accumulator = double(global); });
#pragma unroll
    for (int k0 = 0; k0 < kBlockSub; k0 += 8) {
      double l[2][4], u[4][2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) l[i][e] = -s.panel[kBlockSub + r0 + 16 * i + 8 * (e % 2) + g][k0 + t + 4 * (e / 2)];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
#pragma unroll
        for (int e = 0; e < 2; ++e) u[jj][e] = s.u12[k0 + t + 4 * e][q0 + 8 * jj + g];
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) primitives::mma_16x8x8_fp64(c[i][jj], l[i], u[jj]);
    }
    for_each_inside([](T& global, double& accumulator) { global = T(accumulator); });
  }
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    factor_diagonal_block_kernel(T* __restrict__ a, std::int64_t lda, int w, int* __restrict__ pivots,
                                 std::int64_t row_offset, int* first_zero_pivot, std::int64_t column_offset,
                                 T* __restrict__ scratch) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  DiagonalBlockShared& s = *reinterpret_cast<DiagonalBlockShared*>(shared_raw);
  const int tid = threadIdx.x;
  const auto at = [&](int row, int column) -> T& { return a[column + std::int64_t(s.perm[row]) * lda]; };
  for (int r = tid; r < w; r += kBlockThreads) s.perm[r] = r;
  if (tid == 0) s.moved_count = 0;
  __syncthreads();
  for (int c0 = 0; c0 < w; c0 += kBlockSub) {
    const int cw = min(kBlockSub, w - c0), rows = w - c0;
    factor_sub_panel(s, a, lda, c0, cw, rows, pivots, row_offset, first_zero_pivot, column_offset);
    __syncthreads();
    const int right = rows - cw;  // columns right of the sub-panel, and rows below it
    if (right == 0) break;
    // Step b: U12 = L11^-1 A12, a column per thread, L11 from shared memory (broadcasts).
    for (int col = tid; col < right; col += kBlockThreads) {
      double x[kBlockSub];
#pragma unroll
      for (int k = 0; k < kBlockSub; ++k) x[k] = double(at(c0 + k, c0 + kBlockSub + col));
#pragma unroll
      for (int k = 1; k < kBlockSub; ++k)
#pragma unroll
        for (int i = 0; i < k; ++i) x[k] -= s.panel[k][i] * x[i];
#pragma unroll
      for (int k = 0; k < kBlockSub; ++k) {
        s.u12[k][col] = x[k];
        at(c0 + k, c0 + kBlockSub + col) = T(x[k]);
      }
    }
    __syncthreads();
    trailing_update(s, a, lda, c0, right);
    __syncthreads();
  }
  // The rows in their final order. Only the rows that moved are copied, all read (into scratch)
  // before any is written, since a moved row's source may be another moved row.
  for (int r = tid; r < w; r += kBlockThreads)
    if (s.perm[r] != r) s.moved[atomicAdd(&s.moved_count, 1)] = r;
  __syncthreads();
  const int total = s.moved_count * w;
  constexpr int kBatch = 16;  // global loads issued before their stores: each is an L2 round trip
  for (int idx0 = tid; idx0 < total; idx0 += kBatch * kBlockThreads) {
    T v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int idx = idx0 + b * kBlockThreads;
      if (idx < total) v[b] = at(s.moved[idx / w], idx % w);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (idx0 + b * kBlockThreads < total) scratch[idx0 + b * kBlockThreads] = v[b];
  }
  __syncthreads();
  for (int idx0 = tid; idx0 < total; idx0 += kBatch * kBlockThreads) {
    T v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (idx0 + b * kBlockThreads < total) v[b] = scratch[idx0 + b * kBlockThreads];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int idx = idx0 + b * kBlockThreads;
      if (idx < total) a[idx % w + std::int64_t(s.moved[idx / w]) * lda] = v[b];
    }
  }
}

}  // namespace

template <class T>
void factor_diagonal_block(T* a, std::int64_t lda, int w, int* pivots, std::int64_t row_offset, int* first_zero_pivot,
                           std::int64_t column_offset, T* scratch, cudaStream_t stream) {
  if (w <= 0) return;
  if (w > kPanelMaxWidth || lda < w)
    throw InvalidArgument("factor_diagonal_block: w = " + std::to_string(w) + " must be at most kPanelMaxWidth = " +
                          std::to_string(kPanelMaxWidth) + " and lda = " + std::to_string(lda));
  constexpr int kShared = int(sizeof(DiagonalBlockShared));
  // The shared memory beyond the default 48 KB, per call: the attribute belongs to the current
  // device, and a Context may sit on another than the last call's.
  MIXSOLVE_CUDA_CHECK(
      cudaFuncSetAttribute(factor_diagonal_block_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kShared));
  factor_diagonal_block_kernel<T>
      <<<1, kBlockThreads, kShared, stream>>>(a, lda, w, pivots, row_offset, first_zero_pivot, column_offset, scratch);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template void factor_diagonal_block<float>(float*, std::int64_t, int, int*, std::int64_t, int*, std::int64_t, float*,
                                           cudaStream_t);
template void factor_diagonal_block<double>(double*, std::int64_t, int, int*, std::int64_t, int*, std::int64_t, double*,
                                            cudaStream_t);

}  // namespace mixsolve::solvers_detail
