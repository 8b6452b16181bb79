// SPDX-License-Identifier: BSD-3-Clause
// GPU kernels of the device LU and its solves: the cooperative panel factorization, row
// interchanges, the pivot permutation, and bandwidth-bound triangular solves.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "../tuning.hpp"
#include "mixsolve/primitives/async_copy.cuh"
#include "mixsolve/primitives/mma.cuh"
#include "lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

// From memory's pool where given (Context::allocate), else from cudaMalloc.
template <class U>
DeviceBuffer<U> device_buffer(Context* memory, std::size_t count) {
  return memory ? DeviceBuffer<U>(*memory, count) : DeviceBuffer<U>(count);
}

unsigned blocks_for(std::int64_t total, int threads = 256) {
  const std::int64_t b = (total + threads - 1) / threads;
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(b, 1), 65535));
}

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

// Publications are 64-bit words, a 16-bit tag above a 48-bit payload (32 bits of a value, or a
// block's candidate: its row within the block above 32 bits of |value|; FP64 values take two
// words, the high half first). 64-bit accesses are single-copy atomic, so a reader that sees the
// current column's tag sees the current payload: no fence. Waiting for every block's candidate
// word is the grid-wide barrier of the column; the winner's row and row j follow in a second
// round trip (fetching every block's row at once is slower: L2 contention). A block
// overwrites a word of parity j % 2 for column j + 2 only after it has seen every candidate of
// column j + 1, which each block published after it had fetched what it needed of column j.
__device__ inline void store_word(unsigned long long* word, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(v) : "memory");
}
__device__ inline void publish(unsigned long long* word, unsigned tag, unsigned long long payload) {
  store_word(word, (static_cast<unsigned long long>(tag) << 48) | payload);
}
__device__ inline unsigned long long load_word(const unsigned long long* word) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
}
__device__ inline bool tagged(unsigned long long v, unsigned tag) { return static_cast<unsigned>(v >> 48) == tag; }

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

// Combines two (|value|, row) candidates: the larger value, the lower row on ties. NaN never wins.
template <class T>
__device__ inline void take_better(T& value, int& row, T other_value, int other_row) {
  if (other_value > value || (other_value == value && other_row < row)) {
    value = other_value;
    row = other_row;
  }
}

// The warp's best (|value|, row) candidate, in every lane: the largest value, the lowest row on
// ties (as isamax); a lane without a candidate holds value < 0 and row INT_MAX. Two redux.sync
// (non-negative floats order as their bits) instead of five shuffle rounds of take_better: the
// pivot search runs three such reductions per column on the LU's critical path.
__device__ inline void warp_best(float& value, int& row) {
  const unsigned key = value >= 0.0f ? __float_as_uint(value) + 1u : 0u;
  const unsigned best_key = __reduce_max_sync(0xffffffffu, key);
  row = __reduce_min_sync(0xffffffffu, key == best_key ? row : INT_MAX);
  value = best_key == 0u ? -1.0f : __uint_as_float(best_key - 1u);
}
// FP64: redux.sync takes 32-bit keys, so the high halves first, then the low halves of the lanes
// that hold the largest high half.
__device__ inline void warp_best(double& value, int& row) {
  const auto bits = static_cast<unsigned long long>(__double_as_longlong(value));
  const unsigned high = value >= 0.0 ? static_cast<unsigned>(bits >> 32) + 1u : 0u;
  const unsigned best_high = __reduce_max_sync(0xffffffffu, high);
  const unsigned low = high == best_high ? static_cast<unsigned>(bits) : 0u;
  const unsigned best_low = __reduce_max_sync(0xffffffffu, low);
  row = __reduce_min_sync(0xffffffffu, high == best_high && low == best_low ? row : INT_MAX);
  value = best_high == 0u ? -1.0
                          : __longlong_as_double(static_cast<long long>(
                                static_cast<unsigned long long>(best_high - 1u) << 32 | best_low));
}

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

// ---------------------------------------------------------------------------------------------
// Row interchanges of a panel on the other columns. Applied in order with one thread per column
// (LAPACK's laswp), each swap waits for the previous one: 2 x 256 dependent memory round trips
// per column and panel. Here one block first turns the panel's sequential swaps into moves ("row
// to[i] receives the old row from[i]": the panel's rows and at most as many rows below), then a
// warp per column loads every moved value at once and stores them (one round trip).
constexpr int kMaxMoves = 2 * kPanelMaxWidth;

// Exclusive prefix count of `flag` over the block's threads (blockDim.x = kPanelMaxWidth) in
// thread order; *total gets the sum. Uses warp ballots and one barrier pair.
__device__ int block_exclusive_count(bool flag, int* warp_counts, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) warp_counts[warp] = __popc(ballot);
  __syncthreads();
  int before = __popc(ballot & ((1u << lane) - 1u));
  for (int w = 0; w < warp; ++w) before += warp_counts[w];
  if (threadIdx.x == 0) {
    int sum = 0;
    for (int w = 0; w < warps; ++w) sum += warp_counts[w];
    *total = sum;
  }
  __syncthreads();
  return before;
}

// One block of kPanelMaxWidth threads. The rows a panel's swaps touch get slots: slot s < count
// is panel row first + s, slot count + b the b-th distinct pivot row below the panel (in order of
// first appearance). With the slots numbered, each slot finds the original row it ends up
// holding, source[s], by following the swaps backwards; every slot whose source changed becomes
// a move. Every slot at once, because the kernel sits on the LU's critical path: one thread doing
// the swaps in order costs ~33 us per panel on an H100 (docs/history/solver-log.md).
__global__ void __launch_bounds__(kPanelMaxWidth)
    interchanges_to_moves_kernel(const int* pivots, std::int64_t first, int count, int* to, int* from, int* moves) {
  __shared__ int pivot[kPanelMaxWidth], slot_of_swap[kPanelMaxWidth], below_slot[kPanelMaxWidth];
  __shared__ int source[2 * kPanelMaxWidth], slot_row[2 * kPanelMaxWidth];
  __shared__ int warp_counts[kPanelMaxWidth / 32], below_count, move_count;
  const int i = threadIdx.x, end = int(first) + count;
  if (i < count) pivot[i] = pivots[first + i];
  __syncthreads();
  // The first swap whose pivot is this swap's row below the panel numbers that row's slot.
  int first_use = -1;
  if (i < count && pivot[i] >= end) {
    first_use = i;
    for (int k = 0; k < i; ++k)
      if (pivot[k] == pivot[i]) {
        first_use = k;
        break;
      }
  }
  const int rank = block_exclusive_count(first_use == i, warp_counts, &below_count);
  if (first_use == i) below_slot[i] = count + rank;
  if (i < count) {
    slot_row[i] = int(first) + i;
    if (first_use == i) slot_row[count + rank] = pivot[i];
  }
  __syncthreads();
  if (i < count) slot_of_swap[i] = pivot[i] >= end ? below_slot[first_use] : pivot[i] - int(first);
  __syncthreads();
  // Each slot traces the swaps backwards to the slot its final row started in (all slots at
  // once: the swaps run sequentially only in this index arithmetic).
  const int slots = count + below_count;
  for (int s = i; s < slots; s += kPanelMaxWidth) {
    int at = s;
    for (int k = count - 1; k >= 0; --k) {
      const int other = slot_of_swap[k];
      at = at == k ? other : at == other ? k : at;
    }
    source[s] = slot_row[at];
  }
  __syncthreads();
  // Moves in slot order (the panel's rows, then the rows below), two slots per thread.
  int written = 0;
  for (int half = 0; half < 2; ++half) {
    const int s = half * kPanelMaxWidth + i;
    const bool moved = s < slots && source[s] != slot_row[s];
    const int at = written + block_exclusive_count(moved, warp_counts, &move_count);
    if (moved) {
      to[at] = slot_row[s];
      from[at] = source[s];
    }
    written += move_count;
    __syncthreads();  // move_count is rewritten by the next round
  }
  if (i == 0) *moves = written;
}

constexpr int kMovesPerLane = kMaxMoves / 32;
constexpr int kMoveWarps = 4;  // columns per block

template <class T>
__global__ void __launch_bounds__(32 * kMoveWarps)
    apply_row_moves_kernel(T* a, std::int64_t lda, const int* to, const int* from, const int* moves,
                           std::int64_t c0, std::int64_t c1, std::int64_t skip0, std::int64_t skip1) {
  const int lane = threadIdx.x & 31;
  std::int64_t c = c0 + std::int64_t(blockIdx.x) * kMoveWarps + (threadIdx.x >> 5);
  if (c >= skip0) c += skip1 - skip0;
  if (c >= c1) return;
  const int count = *moves;
  T* column = a + c * lda;
  T v[kMovesPerLane];
#pragma unroll
  for (int q = 0; q < kMovesPerLane; ++q)
    if (lane + 32 * q < count) v[q] = column[from[lane + 32 * q]];
  __syncwarp();  // every value is read before any is overwritten (the moves form cycles)
#pragma unroll
  for (int q = 0; q < kMovesPerLane; ++q)
    if (lane + 32 * q < count) column[to[lane + 32 * q]] = v[q];
}

// The same for a row-major matrix (element (i, j) at a[j + i lda]): a moved row is a contiguous
// run. A block takes kRowMoveColumns<T> columns (64 bytes: two 32-byte sectors) of every moved
// row: all of them are loaded into shared memory (32 KB) before any is stored (the moves form
// cycles). The move list is staged in shared memory first, and each thread issues kMoveBatch
// loads before it waits: with the row indices loaded from global memory inside the loop, each of
// a thread's up to 32 moves would cost two dependent round trips (about twice the LU's time in
// interchanges on an H100; docs/history/solver-log.md).
template <class T>
constexpr int kRowMoveColumns = 64 / int(sizeof(T));
constexpr int kMoveBatch = 8;
template <class T>
__global__ void __launch_bounds__(256)
    apply_row_moves_row_major_kernel(T* a, std::int64_t lda, const int* to, const int* from, const int* moves,
                                     std::int64_t c0, std::int64_t c1, std::int64_t skip0, std::int64_t skip1) {
  constexpr int kColumns = kRowMoveColumns<T>;
  __shared__ T staged[kMaxMoves][kColumns];
  __shared__ int move_to[kMaxMoves], move_from[kMaxMoves];
  const int count = *moves;
  for (int mv = threadIdx.x; mv < count; mv += blockDim.x) {
    move_to[mv] = to[mv];
    move_from[mv] = from[mv];
  }
  const std::int64_t first = c0 + std::int64_t(blockIdx.x) * kColumns;
  const int lane = threadIdx.x % kColumns, group = threadIdx.x / kColumns;
  const int groups = blockDim.x / kColumns;
  std::int64_t c = first + lane;  // columns [skip0, skip1) are left out of the numbering
  if (c >= skip0) c += skip1 - skip0;
  const bool inside = c < c1;
  __syncthreads();
  for (int base = group; inside && base < count; base += kMoveBatch * groups) {
    T v[kMoveBatch];
#pragma unroll
    for (int b = 0; b < kMoveBatch; ++b) {
      const int mv = base + b * groups;
      if (mv < count) v[b] = __ldcg(a + std::int64_t(move_from[mv]) * lda + c);
    }
#pragma unroll
    for (int b = 0; b < kMoveBatch; ++b)
      if (base + b * groups < count) staged[base + b * groups][lane] = v[b];
  }
  __syncthreads();
  for (int mv = group; inside && mv < count; mv += groups) a[std::int64_t(move_to[mv]) * lda + c] = staged[mv][lane];
}

// The inverse of a w x w block's unit lower triangle (kUpper false; the diagonal is taken as 1)
// or of its upper triangle (kUpper true, diagonal included), in FP64 arithmetic, stored as T
// (a's type) row-major w x w. A block of kPanelMaxWidth threads computes kInverseColumns columns
// X of the inverse by blocked substitution over row blocks of 32 (forward for L, backward for U):
// per row block, its rows of the triangle go to shared memory, every thread forms one of the
// block's 32 x 8 right-hand sides (the identity minus the row block's product with the rows of X
// already final: a dot product from shared memory), and warp c solves the 32 x 32 diagonal block
// for column c with shuffles. Three barriers per 32 rows, not one per row; the next row block's
// loads are issued before the current one's work. The LU's chain waits for each panel's L11^-1:
// a 256 x 256 one takes 36 us alone on an H100, against 56 us for a row-by-row substitution with
// a barrier per row (that and the other variants measured: docs/history/solver-log.md).
constexpr int kInverseColumns = 8;
constexpr int kInverseRows = 32;                   // a row block: one warp's lanes
constexpr int kInverseStrip = kPanelMaxWidth + 1;  // a row block's padded row in shared memory
template <class T>
constexpr int kInverseSharedBytes = kInverseRows * kInverseStrip * int(sizeof(T));
template <class T, bool kUpper>
__device__ void invert_triangle_columns(const T* a, std::int64_t row_stride, std::int64_t column_stride, int w,
                                        T* inverse, T* strip) {
  static_assert(kInverseRows * kInverseColumns == kPanelMaxWidth, "a thread per right-hand side of a row block");
  static_assert(kInverseColumns <= kPanelMaxWidth / 32, "a warp per column in the diagonal block");
  __shared__ double x[kPanelMaxWidth][kInverseColumns];  // rows of X, zero where not (yet) reached
  __shared__ double rhs[kInverseRows][kInverseColumns + 1];
  const int c0 = blockIdx.x * kInverseColumns, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int last_column = min(w, c0 + kInverseColumns) - 1;
  for (int idx = t; idx < kPanelMaxWidth * kInverseColumns; idx += kPanelMaxWidth)
    x[idx / kInverseColumns][idx % kInverseColumns] = 0;
  // The row blocks with nonzeros in these columns: L from c0's on, U from last_column's back to 0.
  const int first_block = (kUpper ? last_column : c0) / kInverseRows;
  const int steps = kUpper ? first_block + 1 : (w - 1) / kInverseRows + 1 - first_block;
  // Step s's row block: rows r0 .. r0 + rows - 1, and the columns k0 .. k0 + width - 1 of the
  // triangle that meet nonzeros of X (L: from the first block's, U: up to last_column) or the
  // diagonal block, all loaded (no garbage times a zero of X).
  struct RowBlock {
    int r0, rows, k0, width;
  };
  const auto row_block = [&](int s) {
    RowBlock b;
    b.r0 = (kUpper ? first_block - s : first_block + s) * kInverseRows;
    b.rows = min(kInverseRows, w - b.r0);
    b.k0 = kUpper ? b.r0 : first_block * kInverseRows;
    b.width = (kUpper ? max(last_column + 1, b.r0 + b.rows) : b.r0 + b.rows) - b.k0;
    return b;
  };
  // A row block's strip goes through registers: warp q loads rows q, q + 8, ..., a lane every
  // 32nd column, all loads in flight at once; the next block's loads are issued before this
  // block's work (one L2 round trip per block, hidden).
  constexpr int kWarps = kPanelMaxWidth / 32, kRowsPerWarp = kInverseRows / kWarps, kPerLane = kPanelMaxWidth / 32;
  T staged[kRowsPerWarp][kPerLane];
  const auto for_each_staged = [&](const RowBlock& b, auto&& visit) {  // visit(staged value, row, column)
#pragma unroll
    for (int qi = 0; qi < kRowsPerWarp; ++qi)
#pragma unroll
      for (int qk = 0; qk < kPerLane; ++qk) {
        const int i = warp + kWarps * qi, k = lane + 32 * qk;
        if (i < b.rows && k < b.width) visit(staged[qi][qk], i, k);
      }
  };
  const auto load = [&](const RowBlock& b) {
    for_each_staged(b, [&](T& v, int i, int k) {
      v = a[std::int64_t(b.r0 + i) * row_stride + std::int64_t(b.k0 + k) * column_stride];
    });
  };
  const auto store = [&](const RowBlock& b) {
    for_each_staged(b, [&](T& v, int i, int k) { strip[i * kInverseStrip + k] = v; });
  };
  load(row_block(0));
  for (int step = 0; step < steps; ++step) {
    const RowBlock block = row_block(step);
    const int r0 = block.r0, rows = block.rows, k0 = block.k0;
    store(block);
    __syncthreads();
    if (step + 1 < steps) load(row_block(step + 1));
    {  // right-hand side (i, c): the identity minus the products with the final rows of X
      const int i = t / kInverseColumns, c = t % kInverseColumns;
      double sum = r0 + i == c0 + c ? 1.0 : 0.0;
      if (i < rows) {
        const int from = kUpper ? r0 + rows : k0, to = kUpper ? last_column + 1 : r0;
        const T* row = strip + i * kInverseStrip - k0;
        double partial[4] = {0, 0, 0, 0};  // four chains of FMAs, not one
        int k = from;
        for (; k + 4 <= to; k += 4)
#pragma unroll
          for (int q = 0; q < 4; ++q) partial[q] -= double(row[k + q]) * x[k + q][c];
        for (; k < to; ++k) partial[0] -= double(row[k]) * x[k][c];
        sum += (partial[0] + partial[1]) + (partial[2] + partial[3]);
      }
      rhs[i][c] = sum;
    }
    __syncthreads();
    if (warp < kInverseColumns) {  // the diagonal block, column `warp`: lane i holds row r0 + i
      const T* row = strip + lane * kInverseStrip + r0 - k0;  // row r0 + lane's diagonal block
      double v = rhs[lane][warp];
      if (kUpper) {
        const double reciprocal = lane < rows ? 1.0 / double(row[lane]) : 0.0;
#pragma unroll
        for (int k = kInverseRows - 1; k >= 0; --k) {  // unrolled: the loads of row[k] leave the chain
          if (k >= rows) continue;
          if (lane == k) v *= reciprocal;
          const double xk = __shfl_sync(0xffffffffu, v, k);
          if (lane < k) v -= double(row[k]) * xk;
        }
      } else {
#pragma unroll
        for (int k = 0; k < kInverseRows - 1; ++k) {
          if (k >= rows - 1) break;
          const double xk = __shfl_sync(0xffffffffu, v, k);
          if (lane > k && lane < rows) v -= double(row[k]) * xk;
        }
      }
      if (lane < rows) x[r0 + lane][warp] = v;
    }
    __syncthreads();
  }
  for (int idx = t; idx < w * kInverseColumns; idx += kPanelMaxWidth) {
    const int i = idx / kInverseColumns, c = idx % kInverseColumns;
    if (c0 + c < w) inverse[std::int64_t(i) * w + c0 + c] = T(x[i][c]);
  }
}
// L^-1 into lower_inverse and U^-1 into upper_inverse, either may be null: one grid row
// (blockIdx.y) per triangle asked for, L's first; one launch where the chain needs both.
template <class T>
__global__ void __launch_bounds__(kPanelMaxWidth)
    invert_triangles_kernel(const T* a, std::int64_t row_stride, std::int64_t column_stride, int w,
                            T* lower_inverse, T* upper_inverse) {
  extern __shared__ double strip_storage[];  // kInverseSharedBytes<T>
  T* strip = reinterpret_cast<T*>(strip_storage);
  if (blockIdx.y == 0 && lower_inverse)
    invert_triangle_columns<T, false>(a, row_stride, column_stride, w, lower_inverse, strip);
  else
    invert_triangle_columns<T, true>(a, row_stride, column_stride, w, upper_inverse, strip);
}

template <class T>
__global__ void gather_rows_kernel(const double* y, std::int64_t ldy, const int* permutation, std::int64_t n,
                                   std::int64_t k, T* w, std::int64_t ldw, const double* row_factor,
                                   const double* column_factor) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < n * k;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % n, c = idx / n, row = permutation[i];
    double v = y[row + c * ldy];
    if (row_factor) v *= row_factor[row];
    if (column_factor) v *= column_factor[c];
    w[i + c * ldw] = static_cast<T>(v);
  }
}

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
  V* y = reinterpret_cast<V*>(shared_bytes);     // y[k * S + c]: column c of the inverse
  F* tile = reinterpret_cast<F*>(y + B * S);     // tile[i * B + k] = factor(r0 + i, r0 + k)
  const bool lower = blockIdx.y == 0;
  const std::int64_t r0 = std::int64_t(blockIdx.x) * B;
  const int rows = int(min(std::int64_t(B), n - r0));
  for (int idx = threadIdx.x; idx < B * B; idx += blockDim.x) {
    const int i = idx % B, k = idx / B;
    F v = i < rows && k < rows ? lu[(r0 + i) + (r0 + k) * ld] : F(i == k ? 1 : 0);
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
        for (int i = k + 1 + t; i < B; i += P) y[i * S + c] -= V(tile[i * B + k]) * yk;
      }
      __syncwarp();
    }
  } else {  // step k: y(k, c) /= U(k, k), then y(i, c) -= U(i, k) y(k, c) for i < k, from k = c down
    for (int k = last; k >= 0; --k) {
      V yk = 0;
      if (k <= c) yk = y[k * S + c] / V(tile[k * B + k]);
      __syncwarp();  // every thread of the column has read y(k, c)
      if (k <= c) {
        if (t == 0) y[k * S + c] = yk;
        for (int i = t; i < k; i += P) y[i * S + c] -= V(tile[i * B + k]) * yk;
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
constexpr int kSolveRing = sizeof(F) == 4 && K == 1 ? 6 : 3;

using primitives::copy_async_commit;
using primitives::copy_async_wait;
// cp.async of 16 bytes (.cg) or of one 4- or 8-byte element (.ca), zero-filled past `bytes`.
__device__ inline void copy_async_16(void* shared_dst, const void* src, int bytes) {
  primitives::copy_async_16(primitives::shared_address(shared_dst), src, bytes);
}
template <int kBytes>
__device__ inline void copy_async_element(void* shared_dst, const void* src, int bytes) {
  primitives::copy_async_small<kBytes>(primitives::shared_address(shared_dst), src, bytes);
}

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
      if (vector_copies) {  // 16-byte pieces of columns; rows past the end are zero-filled
        constexpr int kPiece = 16 / int(sizeof(F)), kPiecesPerColumn = B / kPiece;
        for (int idx = threadIdx.x; idx < B * kPiecesPerColumn; idx += kThreads) {
          const int c = idx / kPiecesPerColumn, i = (idx % kPiecesPerColumn) * kPiece;
          const int valid = c < cols ? max(0, min(kPiece, rows - i)) : 0;
          copy_async_16(tile + c * S + i, valid > 0 ? lu + (r0 + i) + (c0 + c) * ld : lu, valid * int(sizeof(F)));
        }
      } else {
        for (int idx = threadIdx.x; idx < B * B; idx += kThreads) {
          const int i = idx % B, c = idx / B;
          const bool valid = i < rows && c < cols;
          copy_async_element<sizeof(F)>(tile + c * S + i, valid ? lu + (r0 + i) + (c0 + c) * ld : lu,
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
      const V factor = V(tile[column * S + r]);
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

// ---------------------------------------------------------------------------------------------
// LU with partial pivoting of one w x w row-major FP64 block (w <= kPanelMaxWidth) in a single
// thread block: the diagonal block of a panel whose rows already stand in a chosen order (the FP64
// LU that follows a cheaper LU's row order, SolveOptions::reuse_pivot_order), where only the
// block's own rows are searched. It runs once per panel on the LU's critical path, so it is built
// for latency. Right-looking in sub-panels of kBlockSub columns:
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

// A barrier among the first `threads` threads only (the row owners of step a; the other warps
// wait at the next __syncthreads).
__device__ inline void owners_barrier(int threads) { asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory"); }

// C += A B on the FP64 tensor cores, one 16 x 8 tile, k = 8 (fragments: primitives/mma.cuh);
// step c takes the same time with m8n8k4: its accumulators' loads from L2 set the pace.
__device__ inline void dmma_16x8x8(double (&c)[4], const double (&a)[4], const double (&b)[2]) {
  primitives::mma_16x8x8_fp64(c, a, b);
}

// Step a on the sub-panel [c0, c0 + cw) of logical rows [c0, c0 + rows), by the first
// 32 ceil(rows / 32) threads (thread t owns the sub-panel's logical row t at the start). On
// return the factored rows are in s.panel by logical row and in global memory, and s.perm holds
// the new order (after the caller's __syncthreads).
__device__ void factor_sub_panel(DiagonalBlockShared& s, double* __restrict__ a, std::int64_t lda, int c0, int cw,
                                 int rows, int* __restrict__ pivots, std::int64_t row_offset, int* first_zero_pivot,
                                 std::int64_t column_offset) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int owner_threads = (rows + 31) / 32 * 32;
  const bool owner = tid < rows;
  const int physical = owner ? s.perm[c0 + tid] : 0;
  // The warp's 32 rows through shared memory, a row per load instruction: each thread loading
  // its own row would touch 32 rows per instruction (up to 4x the L2 sector requests), which the
  // DGEMMs running beside the LU make slow (inside the n = 16384 LU: 0.72 against 0.55 ms).
  {
    double staged[kBlockSub];
#pragma unroll
    for (int r = 0; r < 32; ++r) {
      const int source = __shfl_sync(0xffffffffu, physical, r);
      staged[r] = 32 * warp + r < rows && lane < cw ? a[c0 + lane + std::int64_t(source) * lda] : 0.0;
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) s.panel[32 * warp + r][lane] = staged[r];
  }
  __syncwarp();
  double v[kBlockSub];
#pragma unroll
  for (int c = 0; c < kBlockSub; ++c) v[c] = s.panel[tid][c];
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
    warp_best(best, code);
    if (!pivotal && code == my_code) {
#pragma unroll
      for (int c = j; c < kBlockSub; ++c) s.posted_row[parity][warp][c] = v[c];
    }
    if (lane == 0) {
      s.posted_value[parity][warp] = best;
      s.posted_code[parity][warp] = code;
    }
    owners_barrier(owner_threads);
    best = lane < owner_threads / 32 ? s.posted_value[parity][lane] : -1.0;
    code = lane < owner_threads / 32 ? s.posted_code[parity][lane] : INT_MAX;
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
    if (32 * warp + r < rows && lane < cw) a[c0 + lane + std::int64_t(target) * lda] = s.panel[source][lane];
  }
}

// Step c: A22 -= L21 U12 for the m2 x m2 block below and right of a full sub-panel at c0, with
// L21 in s.panel (logical rows kBlockSub ..) and U12 in s.u12. A warp takes 32 x 32 tiles of
// A22 as 2 x 4 DMMA tiles of 16 x 8, accumulates in registers from global memory and stores back.
// Fragments past m2 read stale shared memory; they reach only accumulators that are not stored.
__device__ void trailing_update(DiagonalBlockShared& s, double* __restrict__ a, std::int64_t lda, int c0, int m2) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int tiles = (m2 + 31) / 32;
  for (int tile = warp; tile < tiles * tiles; tile += kBlockWarps) {
    const int r0 = tile / tiles * 32, q0 = tile % tiles * 32;
    double* rows[4];  // the lane's rows r0 + 8 h + g, h = 0 .. 3, at column q0 of A22
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
            double* row = rows[2 * i + e / 2];
            const int q = 8 * jj + 2 * t + e % 2;
            if (row && q0 + q < m2) f(row[q], c[i][jj][e]);
          }
    };
    for_each_inside([](double& global, double& accumulator) { accumulator = global; });
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
        for (int jj = 0; jj < 4; ++jj) dmma_16x8x8(c[i][jj], l[i], u[jj]);
    }
    for_each_inside([](double& global, double& accumulator) { global = accumulator; });
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    factor_diagonal_block_kernel(double* __restrict__ a, std::int64_t lda, int w, int* __restrict__ pivots,
                                 std::int64_t row_offset, int* first_zero_pivot, std::int64_t column_offset,
                                 double* __restrict__ scratch) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  DiagonalBlockShared& s = *reinterpret_cast<DiagonalBlockShared*>(shared_raw);
  const int tid = threadIdx.x;
  const auto at = [&](int row, int column) -> double& { return a[column + std::int64_t(s.perm[row]) * lda]; };
  for (int r = tid; r < w; r += kBlockThreads) s.perm[r] = r;
  if (tid == 0) s.moved_count = 0;
  __syncthreads();
  for (int c0 = 0; c0 < w; c0 += kBlockSub) {
    const int cw = min(kBlockSub, w - c0), rows = w - c0;
    if (tid < (rows + 31) / 32 * 32)
      factor_sub_panel(s, a, lda, c0, cw, rows, pivots, row_offset, first_zero_pivot, column_offset);
    __syncthreads();
    const int right = rows - cw;  // columns right of the sub-panel, and rows below it
    if (right == 0) break;
    // Step b: U12 = L11^-1 A12, a column per thread, L11 from shared memory (broadcasts).
    for (int col = tid; col < right; col += kBlockThreads) {
      double x[kBlockSub];
#pragma unroll
      for (int k = 0; k < kBlockSub; ++k) x[k] = at(c0 + k, c0 + kBlockSub + col);
#pragma unroll
      for (int k = 1; k < kBlockSub; ++k)
#pragma unroll
        for (int i = 0; i < k; ++i) x[k] -= s.panel[k][i] * x[i];
#pragma unroll
      for (int k = 0; k < kBlockSub; ++k) {
        s.u12[k][col] = x[k];
        at(c0 + k, c0 + kBlockSub + col) = x[k];
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
    double v[kBatch];
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
    double v[kBatch];
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

// ---------------------------------------------------------------------------------------------

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

void interchanges_to_moves(const int* pivots, std::int64_t first, int count, int* to, int* from, int* moves,
                           cudaStream_t stream) {
  if (count < 0 || count > kPanelMaxWidth)
    throw InvalidArgument("interchanges_to_moves: count = " + std::to_string(count) + " is not in [0, " +
                          std::to_string(kPanelMaxWidth) + "]");
  interchanges_to_moves_kernel<<<1, kPanelMaxWidth, 0, stream>>>(pivots, first, count, to, from, moves);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <class T>
void apply_row_moves(T* a, std::int64_t lda, const int* to, const int* from, const int* moves, std::int64_t c0,
                     std::int64_t c1, std::int64_t skip0, std::int64_t skip1, cudaStream_t stream, bool row_major) {
  skip0 = std::clamp(skip0, c0, c1);
  skip1 = std::clamp(skip1, skip0, c1);
  const std::int64_t columns = (c1 - c0) - (skip1 - skip0);
  if (columns <= 0) return;
  if (row_major) {
    constexpr int kColumns = kRowMoveColumns<T>;
    apply_row_moves_row_major_kernel<T><<<unsigned((columns + kColumns - 1) / kColumns), 256, 0, stream>>>(
        a, lda, to, from, moves, c0, c1, skip0, skip1);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    return;
  }
  apply_row_moves_kernel<T><<<unsigned((columns + kMoveWarps - 1) / kMoveWarps), 32 * kMoveWarps, 0, stream>>>(
      a, lda, to, from, moves, c0, c1, skip0, skip1);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}
template void apply_row_moves<float>(float*, std::int64_t, const int*, const int*, const int*, std::int64_t,
                                     std::int64_t, std::int64_t, std::int64_t, cudaStream_t, bool);
template void apply_row_moves<double>(double*, std::int64_t, const int*, const int*, const int*, std::int64_t,
                                      std::int64_t, std::int64_t, std::int64_t, cudaStream_t, bool);

template <class T>
void invert_triangles(const char* name, const T* a, std::int64_t lda, int w, T* lower_inverse, T* upper_inverse,
                      cudaStream_t stream, bool row_major) {
  if (w <= 0) return;
  if (w > kPanelMaxWidth)
    throw InvalidArgument(std::string(name) + ": w = " + std::to_string(w) + " exceeds kPanelMaxWidth = " +
                          std::to_string(kPanelMaxWidth));
  const std::int64_t row_stride = row_major ? lda : 1, column_stride = row_major ? 1 : lda;
  const dim3 grid(unsigned((w + kInverseColumns - 1) / kInverseColumns),
                  (lower_inverse ? 1u : 0u) + (upper_inverse ? 1u : 0u));
  static const bool configured = [] {  // once per T: the shared memory beyond the default 48 KB
    MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(invert_triangles_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             kInverseSharedBytes<T>));
    return true;
  }();
  (void)configured;
  invert_triangles_kernel<T><<<grid, kPanelMaxWidth, kInverseSharedBytes<T>, stream>>>(
      a, row_stride, column_stride, w, lower_inverse, upper_inverse);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <class T>
void invert_unit_lower(const T* a, std::int64_t lda, int w, T* inverse, cudaStream_t stream, bool row_major) {
  invert_triangles<T>("invert_unit_lower", a, lda, w, inverse, nullptr, stream, row_major);
}
template <class T>
void invert_upper(const T* a, std::int64_t lda, int w, T* inverse, cudaStream_t stream, bool row_major) {
  invert_triangles<T>("invert_upper", a, lda, w, nullptr, inverse, stream, row_major);
}
template <class T>
void invert_both_triangles(const T* a, std::int64_t lda, int w, T* lower_inverse, T* upper_inverse,
                           cudaStream_t stream, bool row_major) {
  invert_triangles<T>("invert_both_triangles", a, lda, w, lower_inverse, upper_inverse, stream, row_major);
}
template void invert_both_triangles<float>(const float*, std::int64_t, int, float*, float*, cudaStream_t, bool);
template void invert_both_triangles<double>(const double*, std::int64_t, int, double*, double*, cudaStream_t, bool);
template void invert_unit_lower<float>(const float*, std::int64_t, int, float*, cudaStream_t, bool);
template void invert_unit_lower<double>(const double*, std::int64_t, int, double*, cudaStream_t, bool);
template void invert_upper<float>(const float*, std::int64_t, int, float*, cudaStream_t, bool);
template void invert_upper<double>(const double*, std::int64_t, int, double*, cudaStream_t, bool);

void factor_diagonal_block(double* a, std::int64_t lda, int w, int* pivots, std::int64_t row_offset,
                           int* first_zero_pivot, std::int64_t column_offset, double* scratch, cudaStream_t stream) {
  if (w <= 0) return;
  if (w > kPanelMaxWidth || lda < w)
    throw InvalidArgument("factor_diagonal_block: w = " + std::to_string(w) + " must be at most kPanelMaxWidth = " +
                          std::to_string(kPanelMaxWidth) + " and lda = " + std::to_string(lda));
  constexpr int kShared = int(sizeof(DiagonalBlockShared));
  static const bool configured = [] {  // once: the shared memory beyond the default 48 KB
    MIXSOLVE_CUDA_CHECK(
        cudaFuncSetAttribute(factor_diagonal_block_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kShared));
    return true;
  }();
  (void)configured;
  factor_diagonal_block_kernel<<<1, kBlockThreads, kShared, stream>>>(a, lda, w, pivots, row_offset, first_zero_pivot,
                                                                     column_offset, scratch);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

void pivots_to_permutation(const int* pivots, std::int64_t n, int* permutation, cudaStream_t stream,
                           const std::vector<int>& row_order) {
  if (!row_order.empty() && std::int64_t(row_order.size()) != n)
    throw InvalidArgument("pivots_to_permutation: row_order has " + std::to_string(row_order.size()) +
                          " entries, not n = " + std::to_string(n));
  std::vector<int> p(n), perm(n);
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(p.data(), pivots, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (row_order.empty()) std::iota(perm.begin(), perm.end(), 0);
  else perm = row_order;
  for (std::int64_t i = 0; i < n; ++i) std::swap(perm[i], perm[p[i]]);
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(permutation, perm.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));  // perm is a local vector
}

template <class T>
void gather_rows(const double* y, std::int64_t ldy, const int* permutation, std::int64_t n, std::int64_t k, T* w,
                 std::int64_t ldw, cudaStream_t stream, const double* row_factor,
                 const double* column_factor) {
  if (n * k == 0) return;
  gather_rows_kernel<<<blocks_for(n * k), 256, 0, stream>>>(y, ldy, permutation, n, k, w, ldw, row_factor,
                                                            column_factor);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}
template void gather_rows<float>(const double*, std::int64_t, const int*, std::int64_t, std::int64_t, float*,
                                 std::int64_t, cudaStream_t, const double*, const double*);
template void gather_rows<double>(const double*, std::int64_t, const int*, std::int64_t, std::int64_t, double*,
                                  std::int64_t, cudaStream_t, const double*, const double*);

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
  vector_copies_ = ld % (16 / sizeof(F)) == 0 && reinterpret_cast<std::uintptr_t>(lu) % 16 == 0;
  if (n == 0) return;
  const int shared = int(B * kInverseYStride * sizeof(V) + B * B * sizeof(F));
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
  if (tag_ >= 0xfffffffdu) {  // the tags would wrap: start again from a clean slate
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(published_.data(), 0, published_.bytes(), stream));
    tag_ = 0;
  }
  // One vector (every GMRES application) keeps the kernel without the other vectors' registers.
  if (columns == 1) launch<1>(x, ldx, 1, stream);
  else launch<kTriangularSolveMaxColumns>(x, ldx, columns, stream);
}

template class TriangularSolver<float, double>;
template class TriangularSolver<double>;

}  // namespace mixsolve::solvers_detail
