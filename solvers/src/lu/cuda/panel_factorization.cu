// SPDX-License-Identifier: BSD-3-Clause
// The cooperative panel factorization of the device LU (one launch per panel) and its workspace.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "tuning.hpp"
#include "mixsolve/primitives/tagged_words.cuh"
#include "mixsolve/primitives/warp.cuh"
#include "cuda_helpers.hpp"
#include "lu/cuda/lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

using primitives::load_word;
using primitives::publish;
using primitives::store_word;
using primitives::tagged;
using primitives::take_better;
using primitives::warp_best;

// ---------------------------------------------------------------------------------------------
// Panel factorization. Partial pivoting needs one global argmax per column, so a panel of w
// columns costs w grid-wide exchanges; launching a kernel (or several) per column, as a cuSOLVER
// getrf on a tall panel does, costs several times more. Here one cooperative launch factors the
// whole m x w panel (w <= kPanelMaxWidth). Each block owns a contiguous range of rows. The panel
// is column-major or row-major (PanelArgs::row_major; the device LU factors row-major, where the
// global accesses below run along rows). It is blocked by sub-panels of kSub columns, 32 or 16
// (PanelWorkspace::factor picks per launch; LAPACK's getrf inside getrf2's place):
//   a. the block loads its rows of the sub-panel into shared memory and, per column j:
//      1. scales its part of column j - 1 by 1/pivot, updates column j by that pivot, and finds
//         its candidate (largest |a(i,j)|, i >= j, lowest index on ties, as isamax);
//      2. warp 0 publishes the candidate with its row of the sub-panel (the owner of row j
//         publishes row j), polls every block's candidate (this is also the barrier, see
//         `publish`), picks the winner (every block, redundantly), fetches the winner's row and
//         row j, and swaps rows j and p where the block owns them;
//      3. meanwhile the other warps apply column j - 1's rank-1 update right of column j, and
//         warp 1 turns column j - 1's swap into step b's moves (both off the per-column critical
//         path);
//   b. writes the sub-panel back and applies the sub-panel's interchanges to the panel's other
//      columns (the rows that move are staged through global memory: two grid synchronisations);
//   c. every block computes U12 = L11^-1 A12 for the sub-panel's rows (a kSub x kSub unit lower
//      solve per column of the rest of the panel) into shared memory; the owners of the rows
//      store it in the next sub-panel's step b;
//   d. updates its own rows of the rest of the panel: A22 -= L21 U12 (in T, shared-memory L21).
// T = float for the cheap factorizations: FP32 throughout (a few percent of the LU's flops, and
// the pivot search then sees FP32-accurate columns whatever the trailing update's arithmetic).
// T = double for the FP64 LU. PanelTraits<T> holds what differs.
constexpr int kPanelThreads = 512;
constexpr int kPanelWarps = kPanelThreads / 32;
constexpr int kPanelMinRowsPerBlock = 64;
constexpr unsigned kNoCandidate = 0xffffu;  // a block with no row at or below the diagonal
constexpr unsigned kMaxTag = 0xffffu;       // tags are 16 bits; 0 is never current

template <class T>
struct PanelTraits;
template <>
struct PanelTraits<float> {
  static constexpr int kNarrowSub = 32;         // the narrowest sub-panel (the widest is 32)
  static constexpr int kWords = 1;              // tagged words per published value or candidate
  static constexpr int kUpdateChunk = 32;       // step d, column-major: columns of A22 per task
  static constexpr int kRowsPerUpdateTask = 8;  // step d, row-major: rows per task
};
// An FP64 row of a sub-panel takes twice the shared memory: where a block's rows of a 32-column
// sub-panel do not fit (m = 32768 on 32 blocks), 16-column sub-panels keep each block's share of
// the rows, so the panel runs on as few multiprocessors as in FP32 and leaves the rest to the
// DGEMMs. A value travels as two tagged words (its halves); smaller step-d tasks keep the FP64
// accumulators within the 128 registers a 512-thread block allows.
template <>
struct PanelTraits<double> {
  static constexpr int kNarrowSub = 16;
  static constexpr int kWords = 2;
  static constexpr int kUpdateChunk = 16;
  static constexpr int kRowsPerUpdateTask = 4;  // 8: 168 bytes spilled
};
constexpr int kWideSub = 32;  // the interchange bookkeeping of step a uses one lane per sub-panel row
template <int kSub>
constexpr int kTileStride = kSub + 1;  // padded row of the shared tile: no bank conflicts
template <class T, int kSub>  // a block's publication: its candidate, then the candidate's row of the sub-panel
constexpr int kSlotWords = PanelTraits<T>::kWords * (1 + kSub);

template <class T>
__host__ __device__ inline int round_up_16_bytes(std::int64_t elements) {
  constexpr int kPer16 = 16 / int(sizeof(T));
  return int((elements + kPer16 - 1) / kPer16 * kPer16);
}

// The dynamic shared memory of the panel kernel, in elements of T, in layout order (each part
// 16-byte aligned; U12's rows padded with zeros to whole update chunks): the block's rows of the
// sub-panel, U12 and L11.
template <class T, int kSub>
struct PanelShared {
  static constexpr int kChunk = PanelTraits<T>::kUpdateChunk;
  int tile, u12_stride, u12, l11;
  __host__ __device__ PanelShared(int rows_per_block, int w)
      : tile(round_up_16_bytes<T>(std::int64_t(rows_per_block) * kTileStride<kSub>)),
        u12_stride(w > kSub ? (w - kSub + kChunk - 1) / kChunk * kChunk : 0),
        u12(kSub * u12_stride),
        l11(round_up_16_bytes<T>(kSub * kTileStride<kSub>)) {}
  __host__ __device__ std::size_t bytes() const { return std::size_t(tile + u12 + l11) * sizeof(T); }
};

template <class T>
struct PanelArgs {
  T* a;
  std::int64_t lda;
  int m, w, rows_per_block;
  unsigned long long* exchange;  // [2][blocks * kSlotWords + kSub * kWords]: per column parity
  T* moved_rows;                 // [2 * kWideSub][kPanelMaxWidth]: step b's staging
  int* pivots;
  std::int64_t row_offset;
  int* first_zero_pivot;
  std::int64_t column_offset;
  unsigned tag0;  // column j publishes with tag tag0 + j (unique across launches)
  bool row_major;  // element (i, j) at a[j + i lda] (else a[i + j lda])
};


// The panel publishes through tagged words (primitives/tagged_words.cuh): a 48-bit payload of (32 bits of a value, or a
// block's candidate: its row within the block above 32 bits of |value|; FP64 values take two
// words, the high half first). 64-bit accesses are single-copy atomic, so a reader that sees the
// current column's tag sees the current payload: no fence. Waiting for every block's candidate
// word is the grid-wide barrier of the column; the winner's row and row j follow in a second
// round trip (fetching every block's row at once is slower: L2 contention). A block
// overwrites a word of parity j % 2 for column j + 2 only after it has seen every candidate of
// column j + 1, which each block published after it had fetched what it needed of column j.
// A value (a candidate: with its local row `local`, 16 bits, above the value's first 32 bits) as
// PanelTraits<T>::kWords tagged words; the loads return whether every word carries `tag`.
__device__ inline void publish_value(unsigned long long* w, unsigned tag, float v, unsigned local = 0) {
  publish(w, tag, static_cast<unsigned long long>(local) << 32 | __float_as_uint(v));
}
__device__ inline void publish_value(unsigned long long* w, unsigned tag, double v, unsigned local = 0) {
  const auto bits = static_cast<unsigned long long>(__double_as_longlong(v));
  publish(w, tag, static_cast<unsigned long long>(local) << 32 | (bits >> 32));
  publish(w + 1, tag, bits & 0xffffffffull);
}
__device__ inline bool load_value(const unsigned long long* w, unsigned tag, float& v, unsigned* local = nullptr) {
  const unsigned long long word = load_word(w);
  v = __uint_as_float(static_cast<unsigned>(word));
  if (local) *local = static_cast<unsigned>(word >> 32) & 0xffffu;
  return tagged(word, tag);
}
__device__ inline bool load_value(const unsigned long long* w, unsigned tag, double& v, unsigned* local = nullptr) {
  const unsigned long long high = load_word(w), low = load_word(w + 1);
  v = __longlong_as_double(static_cast<long long>((high & 0xffffffffull) << 32 | (low & 0xffffffffull)));
  if (local) *local = static_cast<unsigned>(high >> 32) & 0xffffu;
  return tagged(high, tag) && tagged(low, tag);
}

// fma and |x| in the panel's type (no silent promotion of FP32 to FP64).
__device__ inline float multiply_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double multiply_add(double a, double b, double c) { return fma(a, b, c); }
__device__ inline float magnitude(float v) { return fabsf(v); }
__device__ inline double magnitude(double v) { return fabs(v); }


// Four consecutive values of U12 (16-byte aligned) in one or two vector loads.
template <class T>
struct Four {
  T x, y, z, w;
};
__device__ inline Four<float> load_four(const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  return {v.x, v.y, v.z, v.w};
}
__device__ inline Four<double> load_four(const double* p) {
  const double2 a = *reinterpret_cast<const double2*>(p), b = *reinterpret_cast<const double2*>(p + 2);
  return {a.x, a.y, b.x, b.y};
}

// Four consecutive values of global memory (16-byte aligned) through L2 only, in one or two
// vector loads or stores.
__device__ inline Four<float> load_four_cg(const float* p) {
  const float4 v = __ldcg(reinterpret_cast<const float4*>(p));
  return {v.x, v.y, v.z, v.w};
}
__device__ inline Four<double> load_four_cg(const double* p) {
  const double2 a = __ldcg(reinterpret_cast<const double2*>(p)), b = __ldcg(reinterpret_cast<const double2*>(p) + 1);
  return {a.x, a.y, b.x, b.y};
}
__device__ inline void store_four(float* p, const float (&v)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ inline void store_four(double* p, const double (&v)[4]) {
  reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
  reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
}

// Step d for a row-major panel: A22 -= L21 U12 on the block's rows [first, rows) and the `right`
// columns from `column`. A task is kRowsPerUpdateTask rows x 4 columns; a warp's lanes take
// consecutive column groups of the same rows, so global accesses are contiguous along the rows,
// L21 is a shared-memory broadcast and U12 four values per k. A task's four columns of a row are
// one vector access where the row's start allows (lda and the panel's offset multiples of 4):
// four scalar accesses at a 16-byte stride would make every warp instruction touch 4x the L2
// sectors it needs, which the DGEMMs running beside the panel make slow.
template <class T, int kSub>
__device__ void update_rows_row_major(const PanelArgs<T>& p, const T* tile, const T* u12, int u12_stride, int r0,
                                      int first, int rows, int column, int right) {
  constexpr int kTaskRows = PanelTraits<T>::kRowsPerUpdateTask;
  const int groups = (right + 3) / 4, row_blocks = (rows - first + kTaskRows - 1) / kTaskRows;
  const bool vectors = (reinterpret_cast<std::uintptr_t>(p.a + column) | std::uintptr_t(p.lda) * sizeof(T)) % 16 == 0;
  for (int task = threadIdx.x; task < row_blocks * groups; task += kPanelThreads) {
    const int c0 = 4 * (task % groups), rb = first + kTaskRows * (task / groups);
    const bool whole = vectors && c0 + 4 <= right;
    T acc[kTaskRows][4];
#pragma unroll
    for (int q = 0; q < kTaskRows; ++q) {
      const T* run = p.a + std::int64_t(r0 + rb + q) * p.lda + column + c0;
      if (whole && rb + q < rows) {
        const Four<T> v = load_four_cg(run);
        acc[q][0] = v.x;
        acc[q][1] = v.y;
        acc[q][2] = v.z;
        acc[q][3] = v.w;
      } else {
#pragma unroll
        for (int t = 0; t < 4; ++t) acc[q][t] = rb + q < rows && c0 + t < right ? __ldcg(run + t) : T(0);
      }
    }
#pragma unroll 8
    for (int k = 0; k < kSub; ++k) {
      const Four<T> u4 = load_four(u12 + k * u12_stride + c0);  // zero past `right`
#pragma unroll
      for (int q = 0; q < kTaskRows; ++q) {
        const T l = rb + q < rows ? tile[(rb + q) * kTileStride<kSub> + k] : T(0);
        acc[q][0] = multiply_add(-l, u4.x, acc[q][0]);
        acc[q][1] = multiply_add(-l, u4.y, acc[q][1]);
        acc[q][2] = multiply_add(-l, u4.z, acc[q][2]);
        acc[q][3] = multiply_add(-l, u4.w, acc[q][3]);
      }
    }
#pragma unroll
    for (int q = 0; q < kTaskRows; ++q) {
      T* run = p.a + std::int64_t(r0 + rb + q) * p.lda + column + c0;
      if (whole && rb + q < rows) {
        store_four(run, acc[q]);
      } else {
#pragma unroll
        for (int t = 0; t < 4; ++t)
          if (rb + q < rows && c0 + t < right) run[t] = acc[q][t];
      }
    }
  }
}

// Step b's bookkeeping, one warp: the sub-panel's sequential swaps j <-> pivot as moves "row `to`
// receives the old row `from`". Lane i tracks row s + i of the sub-panel, lane k the k-th row below
// it that took part. The warp takes one swap per call of `swap`, during the next column's exchange
// (off the critical path), and `emit` writes the moves.
// (interchanges_to_moves_kernel does the same for a whole panel in shared memory; used here it
// would add ~6 ms to the panels' critical path at n = 16384.)
struct SubPanelMoves {
  int s, ws, lane, from_inside, below_row = -1, from_below = -1, below = 0;
  __device__ SubPanelMoves(int s_, int ws_, int lane_) : s(s_), ws(ws_), lane(lane_), from_inside(s_ + lane_) {}
  __device__ void swap(int jj, int pv) {
    const int j = s + jj;
    if (pv == j) return;
    const int old_j = __shfl_sync(0xffffffffu, from_inside, jj);
    if (pv < s + ws) {
      const int old_pv = __shfl_sync(0xffffffffu, from_inside, pv - s);
      if (lane == jj) from_inside = old_pv;
      if (lane == pv - s) from_inside = old_j;
    } else {
      const unsigned seen = __ballot_sync(0xffffffffu, below_row == pv);
      const int at = seen ? __ffs(seen) - 1 : below;
      if (!seen) {
        if (lane == below) below_row = from_below = pv;
        ++below;
      }
      const int old_pv = __shfl_sync(0xffffffffu, from_below, at);
      if (lane == jj) from_inside = old_pv;
      if (lane == at) from_below = old_j;
    }
  }
  __device__ void emit(int* move_to, int* move_from, int* moves) const {
    const unsigned before = (1u << lane) - 1u;
    const bool inside_moves = lane < ws && from_inside != s + lane;
    const bool below_moves = lane < below && from_below != below_row;
    const unsigned inside_mask = __ballot_sync(0xffffffffu, inside_moves);
    const unsigned below_mask = __ballot_sync(0xffffffffu, below_moves);
    if (inside_moves) {
      move_to[__popc(inside_mask & before)] = s + lane;
      move_from[__popc(inside_mask & before)] = from_inside;
    }
    if (below_moves) {
      move_to[__popc(inside_mask) + __popc(below_mask & before)] = below_row;
      move_from[__popc(inside_mask) + __popc(below_mask & before)] = from_below;
    }
    if (lane == 0) *moves = __popc(inside_mask) + __popc(below_mask);
  }
};

template <class T, int kSub>
__global__ void __launch_bounds__(kPanelThreads) panel_lu_kernel(PanelArgs<T> p) {
  static_assert(kSub <= kWideSub, "the interchange bookkeeping of step a uses one lane per sub-panel row");
  constexpr int kWords = PanelTraits<T>::kWords, kStride = kTileStride<kSub>;
  constexpr int kSlot = kSlotWords<T, kSub>;
  extern __shared__ float4 shared4[];
  const cg::grid_group grid = cg::this_grid();
  const int block = blockIdx.x, blocks = gridDim.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r0 = block * p.rows_per_block;
  const int rows = max(0, min(p.m, r0 + p.rows_per_block) - r0);
  const PanelShared<T, kSub> layout(p.rows_per_block, p.w);
  T* tile = reinterpret_cast<T*>(shared4);  // [local row * kStride + sub-panel column]
  T* u12 = tile + layout.tile;              // [k * u12_stride + column right of the sub-panel]
  T* l11 = u12 + layout.u12;                // [i * kStride + k]
  __shared__ T warp_value[kPanelWarps];
  __shared__ int warp_row[kPanelWarps];
  __shared__ T pivot_rows[2][kSub];  // the pivot rows of columns of either parity
  __shared__ int sub_pivots[kSub];
  __shared__ int move_to[2 * kSub], move_from[2 * kSub], moves;
  const auto owned = [&](int row) { return row >= r0 && row < r0 + rows; };
  // Element (i, j) of the panel is p.a[i * rs + j * cs].
  const std::int64_t rs = p.row_major ? p.lda : 1, cs = p.row_major ? 1 : p.lda;

  for (int s = 0; s < p.w; s += kSub) {
    const int ws = min(kSub, p.w - s), right = p.w - s - ws;
    // a. The sub-panel, column by column. Rows [s - kSub, s) hold the previous sub-panel's U12,
    //    which reaches global memory only in step b (see step c): they come from shared memory.
    //    Column-major: a warp reads 32 rows of one column; row-major: one row's columns.
    const auto load_tile = [&](int r, int c) {
      const int row = r0 + r;
      tile[r * kStride + c] = s > 0 && row >= s - kSub && row < s ? u12[(row - (s - kSub)) * layout.u12_stride + c]
                                                                  : __ldcg(p.a + row * rs + (s + c) * cs);
    };
    if (p.row_major) {
      for (int idx = threadIdx.x; idx < rows * ws; idx += kPanelThreads) load_tile(idx / ws, idx % ws);
    } else {
      for (int c = 0; c < ws; ++c)
        for (int r = threadIdx.x; r < rows; r += kPanelThreads) load_tile(r, c);
    }
    __syncthreads();
    SubPanelMoves moves_of_sub_panel(s, ws, lane);  // warp 1's
    for (int jj = 0; jj < ws; ++jj) {
      const int j = s + jj;
      const unsigned tag = p.tag0 + unsigned(j);
      unsigned long long* slots = p.exchange + (j & 1) * (blocks * kSlot + kSub * kWords);
      unsigned long long* diagonal_slot = slots + blocks * kSlot;
      // 1. Column j - 1's pivot (a zero pivot leaves its column unscaled and updates nothing, as
      //    getf2): the multipliers of rows j and below and their update of column j, which the
      //    search reads; the update of the columns right of j follows in step 3, beside the
      //    exchange. Then this block's candidate: per warp, then over the warps.
      const T* previous = pivot_rows[(jj + 1) & 1];  // the pivot row of column j - 1
      const bool apply_previous = jj > 0 && previous[jj - 1] != T(0);
      T best = -1;
      int best_row = INT_MAX;
      for (int r = threadIdx.x; r < rows; r += kPanelThreads) {
        if (r0 + r < j) continue;
        T* row = tile + r * kStride;
        if (apply_previous) {
          const T l = row[jj - 1] / previous[jj - 1];
          row[jj - 1] = l;
          row[jj] = multiply_add(-l, previous[jj], row[jj]);
        }
        take_better(best, best_row, magnitude(row[jj]), r0 + r);
      }
      warp_best(best, best_row);
      if (lane == 0) {
        warp_value[warp] = best;
        warp_row[warp] = best_row;
      }
      __syncthreads();
      best = lane < kPanelWarps ? warp_value[lane] : T(-1);  // every warp learns the block's candidate
      best_row = lane < kPanelWarps ? warp_row[lane] : INT_MAX;
      warp_best(best, best_row);
      const bool found = best_row != INT_MAX;
      const int candidate = found ? best_row - r0 : -1, diagonal = owned(j) ? j - r0 : -1;  // local rows
      if (warp == 0) {
        // 2. Warp 0 completes the two rows it publishes (column j - 1's update right of j), then
        //    publishes the block's candidate (the local row above |value|, and the candidate's
        //    row of the sub-panel; row j where the block owns it), polls every block's candidate
        //    (one lane per block: one poller per word keeps the L2 quiet), picks the winner
        //    (every block, redundantly), fetches the winner's row and row j (one more round
        //    trip), and swaps rows j and p where this block owns them (p, if owned, is the
        //    candidate: the winner is its block's best).
        if (apply_previous && lane > jj && lane < ws) {
          if (found) {
            T* row = tile + candidate * kStride;
            row[lane] = multiply_add(-row[jj - 1], previous[lane], row[lane]);
          }
          if (diagonal >= 0 && diagonal != candidate) {
            T* row = tile + diagonal * kStride;
            row[lane] = multiply_add(-row[jj - 1], previous[lane], row[lane]);
          }
        }
        // The candidate first: every block waits for it, while the rows are read a round trip
        // later (on an H100 this shortens the wait for every candidate by ~10%, the panels by
        // 1-3%).
        if (lane == 0) publish_value(slots + block * kSlot, tag, best, found ? unsigned(candidate) : kNoCandidate);
        if (lane < ws) {
          const T candidate_value = found ? tile[candidate * kStride + lane] : T(0);
          publish_value(slots + block * kSlot + kWords * (1 + lane), tag, candidate_value);
          if (diagonal >= 0) publish_value(diagonal_slot + kWords * lane, tag, tile[diagonal * kStride + lane]);
        }
        T v = -1;
        int row = INT_MAX;
        for (int b = lane; b < blocks; b += 32) {
          T bv;
          unsigned local;
          while (!load_value(slots + b * kSlot, tag, bv, &local)) {
          }
          if (local != kNoCandidate) take_better(v, row, bv, b * p.rows_per_block + int(local));
        }
        warp_best(v, row);
        const int from = row == INT_MAX ? 0 : row / p.rows_per_block;  // the winner's block (block 0: none)
        const int pivot = row == INT_MAX ? j : row;  // an all-NaN column: a zero pivot at row j
        if (lane < ws) {
          const unsigned long long* winner_words = slots + from * kSlot + kWords * (1 + lane);
          T old_j, winner;
          bool have_j = load_value(diagonal_slot + kWords * lane, tag, old_j);  // both loads in flight at once
          bool have_winner = load_value(winner_words, tag, winner);
          while (!have_j) have_j = load_value(diagonal_slot + kWords * lane, tag, old_j);
          while (!have_winner) have_winner = load_value(winner_words, tag, winner);
          const T moved = pivot == j ? old_j : winner;
          pivot_rows[jj & 1][lane] = moved;
          if (pivot != j) {
            if (diagonal >= 0) tile[diagonal * kStride + lane] = moved;
            if (owned(pivot)) tile[(pivot - r0) * kStride + lane] = old_j;
          }
          if (lane == jj && block == 0 && moved == T(0)) atomicMin(p.first_zero_pivot, int(p.column_offset + j));
        }
        if (lane == 0) {
          sub_pivots[jj] = pivot;
          if (block == 0) p.pivots[j] = int(p.row_offset + pivot);
        }
      } else {
        // 3. Meanwhile the other warps update the rest of this block's rows right of column j
        //    by column j - 1's pivot: the rank-1 update leaves the critical path, which the
        //    exchange's two round trips set (every entry receives its updates in column order,
        //    so the results do not depend on which warp applies them).
        //    Warp 1 also turns column j - 1's swap into moves (step b).
        if (warp == 1 && jj > 0) moves_of_sub_panel.swap(jj - 1, sub_pivots[jj - 1]);
        if (apply_previous)
          for (int r = threadIdx.x - 32; r < rows; r += kPanelThreads - 32) {
            if (r0 + r < j || r == candidate || r == diagonal) continue;
            T* row = tile + r * kStride;
            const T l = row[jj - 1];
            for (int c = jj + 1; c < ws; ++c) row[c] = multiply_add(-l, previous[c], row[c]);
          }
      }
      __syncthreads();
    }
    if (warp == 1) {
      moves_of_sub_panel.swap(ws - 1, sub_pivots[ws - 1]);
      moves_of_sub_panel.emit(move_to, move_from, &moves);
    }
    {  // the multipliers of the sub-panel's last column
      const T* last = pivot_rows[(ws - 1) & 1];
      if (last[ws - 1] != T(0))
        for (int r = threadIdx.x; r < rows; r += kPanelThreads)
          if (r0 + r > s + ws - 1) tile[r * kStride + ws - 1] /= last[ws - 1];
    }
    __syncthreads();
    // Rows above s are unchanged, or the previous U12 (step b stores it).
    if (p.row_major) {
      const int stored = max(0, s - r0);
      for (int idx = threadIdx.x; idx < (rows - stored) * ws; idx += kPanelThreads) {
        const int r = stored + idx / ws, c = idx % ws;
        p.a[(r0 + r) * rs + s + c] = tile[r * kStride + c];
      }
    } else {
      for (int c = 0; c < ws; ++c)
        for (int r = max(0, s - r0) + threadIdx.x; r < rows; r += kPanelThreads)
          p.a[(r0 + r) + (s + c) * cs] = tile[r * kStride + c];
    }
    if (p.w == ws) break;  // a panel of one sub-panel is done

    // b. The sub-panel's interchanges on the panel's other columns (the moves from step a).
    //    A warp moves one row: its lanes load all of the row's columns at once, then store them.
    const int others = p.w - ws;  // the columns outside the sub-panel
    const auto column_of = [&](int c) { return std::int64_t(c < s ? c : c + ws) * cs; };
    constexpr int kPerLane = kPanelMaxWidth / 32;
    for (int mv = warp; mv < moves; mv += kPanelThreads / 32) {
      if (!owned(move_from[mv])) continue;
      T v[kPerLane];
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) v[q] = __ldcg(p.a + move_from[mv] * rs + column_of(lane + 32 * q));
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) p.moved_rows[mv * kPanelMaxWidth + lane + 32 * q] = v[q];
    }
    grid.sync();
    for (int mv = warp; mv < moves; mv += kPanelThreads / 32) {
      if (!owned(move_to[mv])) continue;
      T v[kPerLane];
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) v[q] = __ldcg(p.moved_rows + mv * kPanelMaxWidth + lane + 32 * q);
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) p.a[move_to[mv] * rs + column_of(lane + 32 * q)] = v[q];
    }
    if (s > 0) {  // the previous sub-panel's U12, now that every block has read that A12
      const int u_columns = p.w - s;
      for (int idx = threadIdx.x; idx < kSub * u_columns; idx += kPanelThreads) {
        // consecutive threads on contiguous addresses in either layout
        const int i = p.row_major ? idx / u_columns : idx % kSub, c = p.row_major ? idx % u_columns : idx / kSub;
        if (owned(s - kSub + i)) p.a[(s - kSub + i) * rs + std::int64_t(s + c) * cs] = u12[i * layout.u12_stride + c];
      }
    }
    grid.sync();
    if (right == 0) continue;

    // c. U12 = L11^-1 A12: thread c solves column c of the rest of the panel in registers (ws ==
    //    kSub here: only the last sub-panel is narrower, and it has nothing to its right). Every
    //    block keeps U12 in shared memory; it is stored over A12 in the next step b, after a grid
    //    synchronisation: storing it now would race with slower blocks still reading A12.
    for (int idx = threadIdx.x; idx < kSub * kSub; idx += kPanelThreads) {
      const int i = p.row_major ? idx / kSub : idx % kSub, k = p.row_major ? idx % kSub : idx / kSub;
      l11[i * kStride + k] = k < i ? __ldcg(p.a + (s + i) * rs + (s + k) * cs) : T(0);
    }
    __syncthreads();
    for (int c = threadIdx.x; c < layout.u12_stride; c += kPanelThreads) {
      T column[kSub];
      const T* a12 = p.a + s * rs + std::int64_t(s + kSub + c) * cs;
#pragma unroll
      for (int i = 0; i < kSub; ++i) column[i] = c < right ? __ldcg(a12 + i * rs) : T(0);
#pragma unroll
      for (int k = 0; k < kSub; ++k)
#pragma unroll
        for (int i = k + 1; i < kSub; ++i) column[i] = multiply_add(-l11[i * kStride + k], column[k], column[i]);
#pragma unroll
      for (int i = 0; i < kSub; ++i) u12[i * layout.u12_stride + c] = column[i];
    }
    __syncthreads();
    // d. A22 -= L21 U12 on this block's rows below the sub-panel; a task is one row and
    //    kUpdateChunk columns, loaded at once (one round trip), U12 read as vectors of four.
    const int first = max(0, s + kSub - r0), update_rows = rows - first;
    if (p.row_major) {
      update_rows_row_major<T, kSub>(p, tile, u12, layout.u12_stride, r0, first, rows, s + kSub, right);
      __syncthreads();  // the tile is reloaded next
      continue;
    }
    constexpr int kChunk = PanelTraits<T>::kUpdateChunk;
    const int chunks = (right + kChunk - 1) / kChunk;
    for (int task = threadIdx.x; task < update_rows * chunks; task += kPanelThreads) {
      const int r = first + task % update_rows, c0 = (task / update_rows) * kChunk;
      T* out = p.a + (r0 + r) * rs + std::int64_t(s + kSub + c0) * cs;
      T acc[kChunk];
#pragma unroll
      for (int q = 0; q < kChunk; ++q) acc[q] = c0 + q < right ? __ldcg(out + std::int64_t(q) * cs) : T(0);
#pragma unroll
      for (int k = 0; k < kSub; ++k) {
        const T l = tile[r * kStride + k];
        const T* u = u12 + k * layout.u12_stride + c0;  // zero past `right`, up to the stride
#pragma unroll
        for (int q = 0; q < kChunk; q += 4) {
          const Four<T> u4 = load_four(u + q);
          acc[q] = multiply_add(-l, u4.x, acc[q]);
          acc[q + 1] = multiply_add(-l, u4.y, acc[q + 1]);
          acc[q + 2] = multiply_add(-l, u4.z, acc[q + 2]);
          acc[q + 3] = multiply_add(-l, u4.w, acc[q + 3]);
        }
      }
#pragma unroll
      for (int q = 0; q < kChunk; ++q)
        if (c0 + q < right) out[std::int64_t(q) * cs] = acc[q];
    }
    __syncthreads();  // the tile is reloaded next
  }
}

}  // namespace

template <class T>
PanelWorkspace<T>::PanelWorkspace(std::int64_t max_rows, int max_blocks, Context* memory) {
  int device = 0, sms = 0, max_shared = 0, cooperative = 0;
  MIXSOLVE_CUDA_CHECK(cudaGetDevice(&device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  // One block per multiprocessor at most (the cooperative launch needs every block resident), and
  // enough blocks for each block's rows of a narrow sub-panel to fit in its shared memory beside
  // U12 and L11 (and the kernel's static shared variables).
  constexpr int kNarrow = PanelTraits<T>::kNarrowSub;
  cudaFuncAttributes wide{}, narrow{};
  MIXSOLVE_CUDA_CHECK(cudaFuncGetAttributes(&wide, panel_lu_kernel<T, kWideSub>));
  MIXSOLVE_CUDA_CHECK(cudaFuncGetAttributes(&narrow, panel_lu_kernel<T, kNarrow>));
  max_dynamic_wide_ = max_shared - int(wide.sharedSizeBytes);
  const int max_dynamic_narrow = max_shared - int(narrow.sharedSizeBytes);
  const std::size_t fixed = PanelShared<T, kNarrow>(0, kPanelMaxWidth).bytes();
  const std::int64_t fit = std::max<std::int64_t>(0, std::int64_t(max_dynamic_narrow) - std::int64_t(fixed)) /
                           (kTileStride<kNarrow> * sizeof(T));
  const std::int64_t least = fit > 0 ? (max_rows + fit - 1) / fit : std::int64_t(sms) + 1;
  grid_ = int(std::min<std::int64_t>(sms, std::max<std::int64_t>(least, max_blocks > 0 ? max_blocks : sms)));
  supported_ = cooperative != 0 && max_rows > 0 && least <= sms;
  if (!supported_) return;
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(panel_lu_kernel<T, kWideSub>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           max_dynamic_wide_));
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(panel_lu_kernel<T, kNarrow>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           max_dynamic_narrow));
  if (tuning().narrow_panels_only) max_dynamic_wide_ = 0;
  constexpr int kWords = PanelTraits<T>::kWords;
  const std::size_t words = 2 * (std::size_t(grid_) * kSlotWords<T, kWideSub> + kWideSub * kWords);
  const std::size_t moved = 2 * kWideSub * kPanelMaxWidth;
  exchange_ = device_buffer<unsigned long long>(memory, words);
  moved_rows_ = device_buffer<T>(memory, moved);
  if (memory)  // tag 0 is never current
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(exchange_.data(), 0, exchange_.bytes(), memory->stream()));
  else
    MIXSOLVE_CUDA_CHECK(cudaMemset(exchange_.data(), 0, exchange_.bytes()));
}

template <class T>
void PanelWorkspace<T>::factor(T* a, std::int64_t lda, std::int64_t m, int w, int* pivots, std::int64_t row_offset,
                               int* first_zero_pivot, std::int64_t column_offset, cudaStream_t stream, bool row_major) {
  if (w <= 0) return;
  if (w > kPanelMaxWidth || w > m)
    throw InvalidArgument("PanelWorkspace::factor: w = " + std::to_string(w) + " must be at most kPanelMaxWidth = " +
                          std::to_string(kPanelMaxWidth) + " and m = " + std::to_string(m));
  if (next_tag_ + unsigned(w) > kMaxTag) {  // tags would wrap: start again from a clean slate
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(exchange_.data(), 0, exchange_.bytes(), stream));
    next_tag_ = 1;
  }
  const int blocks = int(std::min<std::int64_t>(grid_, (m + kPanelMinRowsPerBlock - 1) / kPanelMinRowsPerBlock));
  PanelArgs<T> args{a,
                    lda,
                    int(m),
                    w,
                    int((m + blocks - 1) / blocks),
                    exchange_.data(),
                    moved_rows_.data(),
                    pivots,
                    row_offset,
                    first_zero_pivot,
                    column_offset,
                    next_tag_,
                    row_major};
  next_tag_ += unsigned(w);
  // 32-column sub-panels where the block's rows fit (every FP32 panel; FP64 ones up to m ~ 16384
  // on 32 blocks): half the grid synchronisations and passes over the panel of 16-column ones.
  constexpr int kNarrow = PanelTraits<T>::kNarrowSub;
  const std::size_t wide_shared = PanelShared<T, kWideSub>(args.rows_per_block, w).bytes();
  const bool wide = wide_shared <= std::size_t(max_dynamic_wide_);
  const std::size_t shared = wide ? wide_shared : PanelShared<T, kNarrow>(args.rows_per_block, w).bytes();
  void* params[] = {&args};
  const void* kernel = wide ? reinterpret_cast<const void*>(panel_lu_kernel<T, kWideSub>)
                            : reinterpret_cast<const void*>(panel_lu_kernel<T, kNarrow>);
  MIXSOLVE_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(kPanelThreads), params, shared, stream));
}

template class PanelWorkspace<float>;
template class PanelWorkspace<double>;

}  // namespace mixsolve::solvers_detail
