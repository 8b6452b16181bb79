// GPU kernels of the device LU and its solves: the cooperative panel factorization, row
// interchanges, the pivot permutation, and bandwidth-bound triangular solves.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

unsigned blocks_for(std::int64_t total, int threads = 256) {
  const std::int64_t b = (total + threads - 1) / threads;
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(b, 1), 65535));
}

// ---------------------------------------------------------------------------------------------
// Panel factorization with tournament pivoting (communication-avoiding LU, "CALU": Grigori,
// Demmel and Xiang, SIAM J. Matrix Anal. Appl. 32(4), 2011). Partial pivoting needs one
// grid-wide argmax per column: 32 exchanges per 32-column sub-panel, ~3.7 us per column on an
// H100 (measured, session 4). A tournament picks a sub-panel's 32 pivot rows with one exchange:
// each block factors its own rows with partial pivoting and proposes the rows it pivoted on; the
// proposals are factored once more, and the rows that win are the pivots. This is not GEPP (|L|
// is not bounded by 1, only small in practice); the refinement and the FP64 fallback cover the
// difference, as they cover the low-precision update. One cooperative launch factors the whole
// m x w panel (w <= kPanelMaxWidth); each block owns a contiguous range of rows. Per sub-panel of
// kPanelSubWidth columns (LAPACK's getrf inside getrf2's place):
//   a. the block loads its rows of the sub-panel into shared memory and
//      1. factors those at or below the sub-panel's diagonal with partial pivoting (tile_lu:
//         block barriers only) and publishes the original values of the (up to) 32 rows it
//         pivoted on; the owners of the sub-panel's top 32 rows publish those too;
//      2. grid.sync; every block, redundantly, factors all proposals (in rounds where they do not
//         fit its shared memory, the winners so far against the next proposals). The first 32
//         rows of that factorization are the pivots, in order, and hold L11 and U11;
//      3. warp 0 turns the pivots into LAPACK's sequential interchanges and into moves ("row
//         `to` receives the old row `from`");
//      4. the block reloads its rows and computes its rows of L21 = A21 U11^-1 (the rows that
//         move in come from the published top rows), and stores the sub-panel;
//   b. applies the moves to the panel's other columns (the rows that move are staged through
//      global memory: two grid synchronisations);
//   c. every block computes U12 = L11^-1 A12 for the sub-panel's rows (a 32 x 32 unit lower
//      solve per column of the rest of the panel) into shared memory; the owners of the rows
//      store it in the next sub-panel's step b;
//   d. updates its own rows of the rest of the panel: A22 -= L21 U12 (FP32, shared-memory L21).
// FP32 throughout: these are a few percent of the LU's flops, and the pivot search then sees
// FP32-accurate columns whatever the trailing update's arithmetic.
constexpr int kPanelThreads = 512;
constexpr int kPanelWarps = kPanelThreads / 32;
constexpr int kPanelMinRowsPerBlock = 64;
constexpr int kSub = kPanelSubWidth;
constexpr int kTileStride = kSub + 1;  // padded row of the shared tile: no bank conflicts
constexpr int kUpdateChunk = 32;       // columns of A22 one thread updates per task in step d
static_assert(kSub == 32, "the interchange bookkeeping of step a3 uses one lane per sub-panel row");

__host__ __device__ inline int round_up4(std::int64_t v) { return int((v + 3) / 4 * 4); }

// The dynamic shared memory of the panel kernel, in 4-byte words, in layout order (each part
// 16-byte aligned; U12's rows padded with zeros to whole kUpdateChunks): the tile (the block's
// rows of the sub-panel, or the proposals in step a2), the tile rows' panel rows and proposal
// slots, U12, L11 (L11 and U11 in step a) and the proposals' prefix counts per block.
struct PanelShared {
  int tile, ids, slots, u12_stride, u12, l11, counts;
  __host__ __device__ PanelShared(int tile_rows, int w, int blocks)
      : tile(round_up4(std::int64_t(tile_rows) * kTileStride)),
        ids(round_up4(tile_rows)),
        slots(round_up4(tile_rows)),
        u12_stride(w > kSub ? (w - kSub + kUpdateChunk - 1) / kUpdateChunk * kUpdateChunk : 0),
        u12(kSub * u12_stride),
        l11(round_up4(kSub * kTileStride)),
        counts(round_up4(blocks + 1)) {}
  __host__ __device__ std::size_t bytes() const {
    return std::size_t(tile + ids + slots + u12 + l11 + counts) * 4;
  }
  // Shared memory per tile row.
  static constexpr std::size_t kRowBytes = (kTileStride + 2) * 4;
};

struct PanelArgs {
  float* a;
  std::int64_t lda;
  int m, w, rows_per_block, tile_rows;
  float* proposals;    // [blocks * kSub + kSub][kSub]: the proposed rows' values, then the top rows
  int* proposal_rows;  // [blocks * kSub]: their panel rows
  float* moved_rows;   // [2 * kSub][kPanelMaxWidth]: step b's staging
  int* pivots;
  std::int64_t row_offset;
  int* first_zero_pivot;
  std::int64_t column_offset;
};

// 64-bit words that the triangular solver publishes its parts of x through: single-copy atomic,
// so a reader that sees a word's current tag sees its current payload, no fence.
__device__ inline void store_word(unsigned long long* word, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(v) : "memory");
}
__device__ inline unsigned long long load_word(const unsigned long long* word) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
}

// Rows one tile_lu call factors: kLuRowsPerThread per thread, in registers.
constexpr int kLuRowsPerThread = 2;
constexpr int kLuRows = kPanelThreads * kLuRowsPerThread;

// The pivot search compares keys: 0 for no row, 1 for NaN, 2 + the bits of |value| otherwise
// (the bits of non-negative floats order as the floats do). Ties go to the lower row, as isamax.
__device__ inline unsigned pivot_key(float value) {
  const float a = fabsf(value);
  return a == a ? __float_as_uint(a) + 2u : 1u;
}
// The warp's best (key, row): every lane gets it, and the lane that holds it. Two warp
// reductions (redux.sync) instead of a five-step shuffle tree: the search is on the critical path
// of every column.
struct WarpBest {
  unsigned key;
  int row, lane;
};
__device__ inline WarpBest warp_best(unsigned key, int row) {
  const unsigned top = __reduce_max_sync(0xffffffffu, key);
  const int lowest = __reduce_min_sync(0xffffffffu, key == top ? row : INT_MAX);
  const unsigned holders = __ballot_sync(0xffffffffu, key == top && row == lowest);
  return WarpBest{top, lowest, __ffs(holders) - 1};
}

// A warp's best candidate of a column with its row: the slots tile_lu exchanges through, two
// sets (by column parity) so that one barrier per column suffices.
struct alignas(16) LuExchange {
  float values[2][kPanelWarps][kSub];  // first: 16-byte aligned rows
  unsigned key[2][kPanelWarps];
  int row[2][kPanelWarps], position[2][kPanelWarps];
};

// LU with partial pivoting, as getf2 (a zero pivot leaves its column unscaled), of the columns
// [0, ws) of up to kLuRows rows of the tile: the rows at the positions winners[0 .. held), then
// those at [begin, begin + count - held). The tile is only read: the rows are factored in
// registers. Writes the pivots' positions, in order, to pivots[0 .. min(ws, count)) (which may
// be `winners`) and their factored rows (L left of the diagonal, U from it) to lu (stride
// kTileStride); returns the first column with a zero pivot, ws if none. Per column: one block
// barrier; every warp then reduces the warps' candidates itself and reads the pivot row from the
// winning warp's slot. A NaN loses to every number, and wins only where the column has nothing
// else left (a NaN pivot, as getf2 would take).
__device__ int tile_lu(const float* tile, const int* tile_rows, const int* winners, int held, int begin, int count,
                       int ws, int* pivots, float* lu, LuExchange& x) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int steps = min(ws, count);
  float v[kLuRowsPerThread][kSub];
  int row[kLuRowsPerThread], position[kLuRowsPerThread];
  bool live[kLuRowsPerThread];
#pragma unroll
  for (int k = 0; k < kLuRowsPerThread; ++k) {
    const int i = threadIdx.x + k * kPanelThreads;
    live[k] = i < count;
    position[k] = !live[k] ? 0 : i < held ? winners[i] : begin + (i - held);
    row[k] = live[k] ? tile_rows[position[k]] : INT_MAX;
#pragma unroll
    for (int c = 0; c < kSub; ++c) v[k][c] = live[k] && c < ws ? tile[position[k] * kTileStride + c] : 0.0f;
  }
  __syncthreads();  // every winner is read before `pivots` (which may be `winners`) is written
  int zero_column = ws;
#pragma unroll
  for (int j = 0; j < kSub; ++j) {
    if (j >= steps) break;
    const int parity = j & 1;
    // This thread's best row, then the warp's.
    unsigned key = 0;
    int best_row = INT_MAX, best_k = 0;
#pragma unroll
    for (int k = 0; k < kLuRowsPerThread; ++k) {
      const unsigned rk = live[k] ? pivot_key(v[k][j]) : 0u;
      if (rk > key || (rk == key && rk != 0u && row[k] < best_row)) {
        key = rk;
        best_row = row[k];
        best_k = k;
      }
    }
    const WarpBest mine = warp_best(key, best_row);
    if (lane == mine.lane) {  // publish the warp's best row (none: key 0)
      x.key[parity][warp] = mine.key;
      x.row[parity][warp] = mine.row;
#pragma unroll
      for (int k = 0; k < kLuRowsPerThread; ++k)
        if (k == best_k) {
          x.position[parity][warp] = position[k];
#pragma unroll
          for (int c = 0; c < kSub; ++c) x.values[parity][warp][c] = v[k][c];
        }
    }
    __syncthreads();
    const WarpBest all = warp_best(lane < kPanelWarps ? x.key[parity][lane] : 0u,
                                   lane < kPanelWarps ? x.row[parity][lane] : INT_MAX);
    const float* pivot_row = x.values[parity][all.lane];
    const float pivot_value = pivot_row[j];
    if (pivot_value == 0.0f && zero_column == ws) zero_column = j;
    if (warp == 0) {
      if (lane < ws) lu[j * kTileStride + lane] = pivot_row[lane];
      if (lane == 0) pivots[j] = x.position[parity][all.lane];
    }
#pragma unroll
    for (int k = 0; k < kLuRowsPerThread; ++k) {
      if (!live[k]) continue;
      if (row[k] == all.row) {
        live[k] = false;  // the pivot row: finished
        continue;
      }
      if (pivot_value == 0.0f) continue;
      const float l = v[k][j] / pivot_value;
      v[k][j] = l;
#pragma unroll
      for (int c = j + 1; c < kSub; ++c) v[k][c] = fmaf(-l, pivot_row[c], v[k][c]);
    }
  }
  __syncthreads();  // the caller reads pivots and lu next
  return zero_column;
}

// L U = A where U is the upper triangle (with its diagonal) of the ws x ws `lu11` (stride
// kTileStride): row v := v U^-1 in place, as getf2 would have computed that row's multipliers
// (a zero pivot leaves its column unscaled).
__device__ inline void solve_with_u11(float (&v)[kSub], const float* lu11, int ws) {
#pragma unroll
  for (int k = 0; k < kSub; ++k) {
    if (k >= ws) break;
    float x = v[k];
#pragma unroll
    for (int i = 0; i < k; ++i) x = fmaf(-v[i], lu11[i * kTileStride + k], x);
    const float u = lu11[k * kTileStride + k];
    v[k] = u != 0.0f ? x / u : x;
  }
}

__global__ void __launch_bounds__(kPanelThreads) panel_lu_kernel(PanelArgs p) {
  extern __shared__ float4 shared4[];
  const cg::grid_group grid = cg::this_grid();
  const int block = blockIdx.x, blocks = gridDim.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r0 = block * p.rows_per_block;
  const int rows = max(0, min(p.m, r0 + p.rows_per_block) - r0);
  const PanelShared layout(p.tile_rows, p.w, blocks);
  float* tile = reinterpret_cast<float*>(shared4);          // [position * kTileStride + sub-panel column]
  int* tile_rows = reinterpret_cast<int*>(tile + layout.tile);  // the panel row at each position
  int* tile_slots = tile_rows + layout.ids;                   // the proposal slot at each position
  float* u12 = reinterpret_cast<float*>(tile_slots + layout.slots);  // [k * u12_stride + column right of the sub-panel]
  float* l11 = u12 + layout.u12;                              // [i * kTileStride + k]
  int* proposals_before = reinterpret_cast<int*>(l11 + layout.l11);  // [block]: proposals of the blocks before
  __shared__ LuExchange lu_exchange;
  __shared__ int pivot_positions[kSub];  // tile_lu's pivots, as tile positions, in order
  __shared__ int pivot_rows[kSub];       // the sub-panel's pivots, as panel rows, in order
  __shared__ int move_to[2 * kSub], move_from[2 * kSub], moves, zero_column;
  const auto owned = [&](int row) { return row >= r0 && row < r0 + rows; };
  // Block b's proposals in sub-panel s: its rows at or below the diagonal, at most ws.
  const auto proposals_of = [&](int b, int s, int ws) {
    const int begin = max(b * p.rows_per_block, s), end = min(p.m, (b + 1) * p.rows_per_block);
    return max(0, min(ws, end - begin));
  };

  for (int s = 0; s < p.w; s += kSub) {
    const int ws = min(kSub, p.w - s), right = p.w - s - ws;
    const int own_first = max(0, s - r0);  // this block's first position at or below the diagonal
    const int own_count = max(0, rows - own_first);
    const auto load_own_rows = [&] {
      for (int idx = threadIdx.x; idx < own_count * ws; idx += kPanelThreads) {
        const int r = own_first + idx % own_count, c = idx / own_count;
        tile[r * kTileStride + c] = __ldcg(p.a + (r0 + r) + std::int64_t(s + c) * p.lda);
      }
    };
    // a1. This block's proposals: partial pivoting on its rows at or below the diagonal, in
    //     rounds of kLuRows rows (the winners so far against the next rows). Rows above s are
    //     finished (or hold the previous U12, which reaches global memory in step b).
    load_own_rows();
    for (int r = own_first + threadIdx.x; r < rows; r += kPanelThreads) tile_rows[r] = r0 + r;
    __syncthreads();
    int held = 0;
    for (int begin = own_first; begin < rows;) {
      const int take = min(rows - begin, kLuRows - held);
      tile_lu(tile, tile_rows, pivot_positions, held, begin, held + take, ws, pivot_positions, l11, lu_exchange);
      held = min(ws, held + take);
      begin += take;
    }
    const int proposed = held;  // min(ws, own_count)
    float* top_rows = p.proposals + std::size_t(blocks) * kSub * kSub;  // [i][c]: row s + i, original
    for (int idx = threadIdx.x; idx < (proposed + ws) * ws; idx += kPanelThreads) {
      const int i = idx / ws, c = idx % ws;
      if (i < proposed) {  // the tile still holds the original rows
        const int position = pivot_positions[i];
        p.proposals[(std::size_t(block) * kSub + i) * kSub + c] = tile[position * kTileStride + c];
        if (c == 0) p.proposal_rows[block * kSub + i] = tile_rows[position];
      } else if (owned(s + i - proposed)) {
        const int t = i - proposed;
        top_rows[t * kSub + c] = tile[(s + t - r0) * kTileStride + c];
      }
    }
    grid.sync();

    // a2. The final rounds, in every block. The proposals come in chunks that fill the tile
    //     from position kSub; the winners of the chunk before wait in positions [0, kSub).
    if (warp == 0) {  // exclusive prefix sums of the blocks' proposal counts
      int carry = 0;
      for (int b0 = 0; b0 <= blocks; b0 += 32) {
        const int b = b0 + lane;
        const int count = b < blocks ? proposals_of(b, s, ws) : 0;
        int inclusive = count;
        for (int o = 1; o < 32; o <<= 1) {
          const int t = __shfl_up_sync(0xffffffffu, inclusive, o);
          if (lane >= o) inclusive += t;
        }
        if (b <= blocks) proposals_before[b] = carry + inclusive - count;
        carry += __shfl_sync(0xffffffffu, inclusive, 31);
      }
    }
    __syncthreads();
    const int total = proposals_before[blocks];  // >= ws: the panel has m - s >= ws such rows
    int zero = ws;
    held = 0;
    for (int next = 0; next < total;) {
      if (held > 0) {  // the winners so far to positions [0, held), through registers
        float value[kLuRowsPerThread];
        int row[kLuRowsPerThread];
#pragma unroll
        for (int k = 0; k < kLuRowsPerThread; ++k) {
          const int idx = threadIdx.x + k * kPanelThreads, i = idx / ws, c = idx % ws;
          if (idx < held * ws) {
            value[k] = tile[pivot_positions[i] * kTileStride + c];
            row[k] = tile_rows[pivot_positions[i]];
          }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kLuRowsPerThread; ++k) {
          const int idx = threadIdx.x + k * kPanelThreads, i = idx / ws, c = idx % ws;
          if (idx < held * ws) {
            tile[i * kTileStride + c] = value[k];
            if (c == 0) tile_rows[i] = row[k];
          }
        }
        if (threadIdx.x < held) pivot_positions[threadIdx.x] = threadIdx.x;
      }
      const int take = min(total - next, p.tile_rows - kSub);
      for (int q = threadIdx.x; q < take; q += kPanelThreads) {
        const int t = next + q;  // the proposal number t: find its block
        int lo = 0, hi = blocks - 1;
        while (lo < hi) {
          const int mid = (lo + hi + 1) / 2;
          if (proposals_before[mid] <= t) lo = mid; else hi = mid - 1;
        }
        const int slot = lo * kSub + (t - proposals_before[lo]);
        tile_slots[kSub + q] = slot;
        tile_rows[kSub + q] = __ldcg(p.proposal_rows + slot);
      }
      __syncthreads();
      for (int idx = threadIdx.x; idx < take * ws; idx += kPanelThreads) {
        const int q = kSub + idx / ws, c = idx % ws;
        tile[q * kTileStride + c] = __ldcg(p.proposals + std::size_t(tile_slots[q]) * kSub + c);
      }
      __syncthreads();
      for (int begin = kSub; begin < kSub + take;) {
        const int t = min(kSub + take - begin, kLuRows - held);
        zero = tile_lu(tile, tile_rows, pivot_positions, held, begin, held + t, ws, pivot_positions, l11, lu_exchange);
        held = min(ws, held + t);
        begin += t;
      }
      next += take;
    }
    // l11 holds the pivots' factored rows: L11 and U11.
    if (threadIdx.x < ws) pivot_rows[threadIdx.x] = tile_rows[pivot_positions[threadIdx.x]];
    if (threadIdx.x == 0) zero_column = zero;
    __syncthreads();
    if (block == 0 && threadIdx.x == 0 && zero_column < ws)
      atomicMin(p.first_zero_pivot, int(p.column_offset + s + zero_column));

    // a3. Warp 0: the sequential interchanges that bring the pivots to rows s, s+1, ... (LAPACK's
    //     ipiv), and the moves they amount to. Lane i tracks which original row position s + i
    //     holds; lane k the k-th position below the sub-panel's rows that took part.
    if (warp == 0) {
      int from_inside = s + lane;
      int below_row = -1, from_below = -1, below = 0;
      for (int jj = 0; jj < ws; ++jj) {
        const int wanted = pivot_rows[jj];
        const unsigned inside = __ballot_sync(0xffffffffu, lane < ws && from_inside == wanted);
        const unsigned seen = __ballot_sync(0xffffffffu, lane < below && from_below == wanted);
        const int old_j = __shfl_sync(0xffffffffu, from_inside, jj);
        int position;
        if (inside) {
          const int at = __ffs(inside) - 1;
          position = s + at;
          if (lane == at) from_inside = old_j;
        } else {
          const int at = seen ? __ffs(seen) - 1 : below;
          position = seen ? __shfl_sync(0xffffffffu, below_row, at) : wanted;
          if (!seen) {
            if (lane == below) below_row = wanted;
            ++below;
          }
          if (lane == at) from_below = old_j;
        }
        if (lane == jj) from_inside = wanted;
        if (block == 0 && lane == 0) p.pivots[s + jj] = int(p.row_offset + position);
      }
      const unsigned before = (1u << lane) - 1u;
      const bool inside_moves = lane < ws && from_inside != s + lane, below_moves = lane < below && from_below != below_row;
      const unsigned inside_mask = __ballot_sync(0xffffffffu, inside_moves), below_mask = __ballot_sync(0xffffffffu, below_moves);
      if (inside_moves) {
        move_to[__popc(inside_mask & before)] = s + lane;
        move_from[__popc(inside_mask & before)] = from_inside;
      }
      if (below_moves) {
        move_to[__popc(inside_mask) + __popc(below_mask & before)] = below_row;
        move_from[__popc(inside_mask) + __popc(below_mask & before)] = from_below;
      }
      if (lane == 0) moves = __popc(inside_mask) + __popc(below_mask);
    }
    // a4. This block's rows of the factored sub-panel: L11 / U11 on the sub-panel's rows, and
    //     L21 = A21 U11^-1 below (from the original rows: global memory still holds them; a row
    //     that moves below the sub-panel's rows is one of its original top rows, published in a1).
    load_own_rows();
    __syncthreads();
    for (int r = own_first + threadIdx.x; r < rows; r += kPanelThreads) {
      const int row = r0 + r;
      float* out = tile + r * kTileStride;
      if (row < s + ws) {
        for (int c = 0; c < ws; ++c) out[c] = l11[(row - s) * kTileStride + c];
        continue;
      }
      int from = row;
      for (int mv = 0; mv < moves; ++mv)
        if (move_to[mv] == row) from = move_from[mv];
      const float* source = from == row ? out : top_rows + (from - s) * kSub;
      float v[kSub];
#pragma unroll
      for (int c = 0; c < kSub; ++c) v[c] = c < ws ? (from == row ? source[c] : __ldcg(source + c)) : 0.0f;
      solve_with_u11(v, l11, ws);
#pragma unroll
      for (int c = 0; c < kSub; ++c)
        if (c < ws) out[c] = v[c];
    }
    __syncthreads();
    for (int c = 0; c < ws; ++c)  // rows above s are unchanged, or the previous U12 (step b stores it)
      for (int r = own_first + threadIdx.x; r < rows; r += kPanelThreads)
        p.a[(r0 + r) + (s + c) * p.lda] = tile[r * kTileStride + c];
    if (p.w == ws) break;  // a panel of one sub-panel is done

    // b. The sub-panel's interchanges on the panel's other columns.
    //    A warp moves one row: its lanes load all of the row's columns at once, then store them.
    const int others = p.w - ws;  // the columns outside the sub-panel
    const auto column_of = [&](int c) { return std::int64_t(c < s ? c : c + ws) * p.lda; };
    constexpr int kPerLane = kPanelMaxWidth / 32;
    for (int mv = warp; mv < moves; mv += kPanelThreads / 32) {
      if (!owned(move_from[mv])) continue;
      float v[kPerLane];
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) v[q] = __ldcg(p.a + move_from[mv] + column_of(lane + 32 * q));
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) p.moved_rows[mv * kPanelMaxWidth + lane + 32 * q] = v[q];
    }
    grid.sync();
    for (int mv = warp; mv < moves; mv += kPanelThreads / 32) {
      if (!owned(move_to[mv])) continue;
      float v[kPerLane];
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) v[q] = __ldcg(p.moved_rows + mv * kPanelMaxWidth + lane + 32 * q);
#pragma unroll
      for (int q = 0; q < kPerLane; ++q)
        if (lane + 32 * q < others) p.a[move_to[mv] + column_of(lane + 32 * q)] = v[q];
    }
    if (s > 0) {  // the previous sub-panel's U12, now that every block has read that A12
      const int u_columns = p.w - s;
      for (int idx = threadIdx.x; idx < kSub * u_columns; idx += kPanelThreads) {
        const int i = idx % kSub, c = idx / kSub;
        if (owned(s - kSub + i)) p.a[(s - kSub + i) + std::int64_t(s + c) * p.lda] = u12[i * layout.u12_stride + c];
      }
    }
    grid.sync();
    if (right == 0) continue;

    // c. U12 = L11^-1 A12: thread c solves column c of the rest of the panel in registers (ws ==
    //    kSub here: only the last sub-panel is narrower, and it has nothing to its right). Every
    //    block keeps U12 in shared memory; it is stored over A12 in the next step b, after a grid
    //    synchronisation: storing it now would race with slower blocks still reading A12.
    for (int idx = threadIdx.x; idx < kSub * kSub; idx += kPanelThreads) {
      const int i = idx % kSub, k = idx / kSub;
      l11[i * kTileStride + k] = k < i ? __ldcg(p.a + (s + i) + (s + k) * p.lda) : 0.0f;
    }
    __syncthreads();
    for (int c = threadIdx.x; c < layout.u12_stride; c += kPanelThreads) {
      float column[kSub];
      const float* a12 = p.a + s + std::int64_t(s + kSub + c) * p.lda;
#pragma unroll
      for (int i = 0; i < kSub; ++i) column[i] = c < right ? __ldcg(a12 + i) : 0.0f;
#pragma unroll
      for (int k = 0; k < kSub; ++k)
#pragma unroll
        for (int i = k + 1; i < kSub; ++i) column[i] = fmaf(-l11[i * kTileStride + k], column[k], column[i]);
#pragma unroll
      for (int i = 0; i < kSub; ++i) u12[i * layout.u12_stride + c] = column[i];
    }
    __syncthreads();
    // d. A22 -= L21 U12 on this block's rows below the sub-panel; a task is one row and
    //    kUpdateChunk columns, loaded at once (one round trip), U12 read as broadcast float4s.
    const int first = max(0, s + kSub - r0), update_rows = rows - first;
    const int chunks = (right + kUpdateChunk - 1) / kUpdateChunk;
    for (int task = threadIdx.x; task < update_rows * chunks; task += kPanelThreads) {
      const int r = first + task % update_rows, c0 = (task / update_rows) * kUpdateChunk;
      float* out = p.a + (r0 + r) + std::int64_t(s + kSub + c0) * p.lda;
      float acc[kUpdateChunk];
#pragma unroll
      for (int q = 0; q < kUpdateChunk; ++q) acc[q] = c0 + q < right ? __ldcg(out + std::int64_t(q) * p.lda) : 0.0f;
#pragma unroll
      for (int k = 0; k < kSub; ++k) {
        const float l = tile[r * kTileStride + k];
        const float* u = u12 + k * layout.u12_stride + c0;  // zero past `right`, up to the stride
#pragma unroll
        for (int q = 0; q < kUpdateChunk; q += 4) {
          const float4 u4 = *reinterpret_cast<const float4*>(u + q);
          acc[q] = fmaf(-l, u4.x, acc[q]);
          acc[q + 1] = fmaf(-l, u4.y, acc[q + 1]);
          acc[q + 2] = fmaf(-l, u4.z, acc[q + 2]);
          acc[q + 3] = fmaf(-l, u4.w, acc[q + 3]);
        }
      }
#pragma unroll
      for (int q = 0; q < kUpdateChunk; ++q)
        if (c0 + q < right) out[std::int64_t(q) * p.lda] = acc[q];
    }
    __syncthreads();  // the tile is reloaded next
  }
}

// ---------------------------------------------------------------------------------------------
// Row interchanges of a panel on the other columns. Applied in order with one thread per column
// (LAPACK's laswp), each swap waits for the previous one: 2 x 256 dependent memory round trips
// per column and panel. Here one warp first turns the panel's sequential swaps into moves ("row
// to[i] receives the old row from[i]": the panel's rows and at most as many rows below), then a
// warp per column loads every moved value at once and stores them (one round trip).
constexpr int kMaxMoves = 2 * kPanelMaxWidth;

__global__ void interchanges_to_moves_kernel(const int* pivots, std::int64_t first, int count, int* to, int* from,
                                             int* moves) {
  __shared__ int inside_from[kPanelMaxWidth];                  // the source of row first + i
  __shared__ int below_row[kPanelMaxWidth], below_from[kPanelMaxWidth];  // rows below the panel's
  __shared__ int below_count, panel_pivots[kPanelMaxWidth];
  const int lane = threadIdx.x;
  for (int i = lane; i < count; i += 32) {
    inside_from[i] = int(first) + i;
    panel_pivots[i] = pivots[first + i];  // loaded at once, not one round trip per swap
  }
  if (lane == 0) below_count = 0;
  __syncwarp();
  for (int i = 0; i < count; ++i) {
    const int row = int(first) + i, pivot = panel_pivots[i];
    if (pivot == row) continue;
    if (pivot < first + count) {
      if (lane == 0) {
        const int t = inside_from[i];
        inside_from[i] = inside_from[pivot - first];
        inside_from[pivot - first] = t;
      }
    } else {
      int at = -1;
      for (int b = lane; b < below_count; b += 32)
        if (below_row[b] == pivot) at = b;
      for (int o = 16; o > 0; o >>= 1) at = max(at, __shfl_xor_sync(0xffffffffu, at, o));
      if (lane == 0) {
        if (at < 0) {
          at = below_count++;
          below_row[at] = below_from[at] = pivot;
        }
        const int t = inside_from[i];
        inside_from[i] = below_from[at];
        below_from[at] = t;
      }
    }
    __syncwarp();
  }
  if (lane == 0) {
    int m = 0;
    for (int i = 0; i < count; ++i)
      if (inside_from[i] != int(first) + i) {
        to[m] = int(first) + i;
        from[m++] = inside_from[i];
      }
    for (int b = 0; b < below_count; ++b)
      if (below_from[b] != below_row[b]) {
        to[m] = below_row[b];
        from[m++] = below_from[b];
      }
    *moves = m;
  }
}

constexpr int kMovesPerLane = kMaxMoves / 32;
constexpr int kMoveWarps = 4;  // columns per block

__global__ void __launch_bounds__(32 * kMoveWarps)
    apply_row_moves_kernel(float* a, std::int64_t lda, const int* to, const int* from, const int* moves,
                           std::int64_t c0, std::int64_t c1, std::int64_t skip0, std::int64_t skip1) {
  const int lane = threadIdx.x & 31;
  std::int64_t c = c0 + std::int64_t(blockIdx.x) * kMoveWarps + (threadIdx.x >> 5);
  if (c >= skip0) c += skip1 - skip0;
  if (c >= c1) return;
  const int count = *moves;
  float* column = a + c * lda;
  float v[kMovesPerLane];
#pragma unroll
  for (int q = 0; q < kMovesPerLane; ++q)
    if (lane + 32 * q < count) v[q] = column[from[lane + 32 * q]];
  __syncwarp();  // every value is read before any is overwritten (the moves form cycles)
#pragma unroll
  for (int q = 0; q < kMovesPerLane; ++q)
    if (lane + 32 * q < count) column[to[lane + 32 * q]] = v[q];
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
// SolveRows<T> rows of x is one thread block; blocks take tickets in launch order (so a block only
// waits for blocks that are already running), accumulate the products of their row of the
// factor with the parts of x already published, then apply the precomputed inverse of their
// diagonal block (a small mat-vec instead of a sequential substitution) and publish their part.
// The factor is read once. Two things keep the chain of blocks short:
//  - the factor's tiles stream into a ring of shared memory (cp.async) ahead of the parts of x
//    they multiply, so when a part of x arrives only a tile product from shared memory is left;
//  - a part of x is published as tagged words (value and launch tag in one 64-bit store, two for
//    FP64), so a reader polls the values themselves: no flag, no fence, one L2 trip per hand-over.
// At n = 16384 on the H100 this took a solve pair from 2.0 ms (flags, tiles read after the flag)
// to 0.85 ms, results bit-identical (docs/solver.md).
template <class T>
struct SolveRows {
  static constexpr int value = sizeof(T) == 4 ? 128 : 64;  // the inversion kernel holds two tiles in shared memory
};
constexpr int kSolveThreads = 1024;

// Inverts the diagonal blocks: blockIdx.y == 0 the unit lower triangles of L, 1 the upper
// triangles of U (column c of the inverse by thread c, column-oriented substitution). A short last
// block is padded with the identity.
template <class T>
__global__ void invert_diagonal_blocks_kernel(const T* lu, std::int64_t ld, std::int64_t n, T* inverses) {
  constexpr int B = SolveRows<T>::value;
  extern __shared__ unsigned char shared_bytes[];
  T* tile = reinterpret_cast<T*>(shared_bytes);  // tile[i * B + k] = factor(r0 + i, r0 + k)
  T* y = tile + B * B;                           // y[k * B + c]: column c of the inverse
  const bool lower = blockIdx.y == 0;
  const std::int64_t r0 = std::int64_t(blockIdx.x) * B;
  const int rows = int(min(std::int64_t(B), n - r0));
  for (int idx = threadIdx.x; idx < B * B; idx += blockDim.x) {
    const int i = idx % B, k = idx / B;
    T v = i < rows && k < rows ? lu[(r0 + i) + (r0 + k) * ld] : T(i == k ? 1 : 0);
    if (lower && i == k) v = 1;  // the unit diagonal of L (U's diagonal is stored there)
    tile[i * B + k] = v;
  }
  const int c = threadIdx.x;
  for (int k = 0; k < B; ++k) y[k * B + c] = T(k == c ? 1 : 0);
  __syncthreads();
  if (lower) {
    for (int k = c; k < B; ++k) {
      const T yk = y[k * B + c];
      for (int i = k + 1; i < B; ++i) y[i * B + c] -= tile[i * B + k] * yk;
    }
  } else {
    for (int k = c; k >= 0; --k) {
      const T yk = y[k * B + c] / tile[k * B + k];
      y[k * B + c] = yk;
      for (int i = 0; i < k; ++i) y[i * B + c] -= tile[i * B + k] * yk;
    }
  }
  __syncthreads();
  T* out = inverses + (std::int64_t(blockIdx.y) * gridDim.x + blockIdx.x) * B * B;  // column-major B x B
  for (int idx = threadIdx.x; idx < B * B; idx += blockDim.x) out[idx] = y[(idx % B) * B + idx / B];
}

constexpr int kSolveRing = 3;   // tiles of the factor in flight or waiting per thread block
constexpr int kSolveXSlots = 8; // parts of x staged in shared memory

__device__ inline void copy_async_16(void* shared_dst, const void* src, int bytes) {  // zero-fills past bytes
  const unsigned dst = unsigned(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
template <int kBytes>
__device__ inline void copy_async_element(void* shared_dst, const void* src, int bytes) {
  const unsigned dst = unsigned(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(dst), "l"(src), "n"(kBytes), "r"(bytes) : "memory");
}
__device__ inline void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ inline void copy_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

// A published value of x: the bits and the launch's tag in 64-bit words, each stored and loaded
// whole (single-copy atomic), so a reader that sees the tag sees the value.
template <class T>
struct TaggedValue;
template <>
struct TaggedValue<float> {
  static constexpr int kWords = 1;
  __device__ static void store(unsigned long long* w, float v, unsigned tag) {
    store_word(w, (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(v));
  }
  __device__ static bool load(const unsigned long long* w, unsigned tag, float& v) {
    const unsigned long long a = load_word(w);
    v = __uint_as_float(unsigned(a));
    return unsigned(a >> 32) == tag;
  }
};
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

// x := L^-1 x (kLower, unit diagonal) or U^-1 x for one vector; one thread block per block of
// B rows, in ticket order. Step s of block t multiplies the tile of the factor in column block
// block_of_step(s) by that part of x: tiles stream through a ring of kSolveRing tiles in shared
// memory (one barrier per step), warp 0 fetches the published parts of x into shared memory.
template <class T, bool kLower>
__global__ void __launch_bounds__(kSolveThreads, 1)
    triangular_solve_kernel(const T* lu, std::int64_t ld, std::int64_t n, const T* inverses, T* x,
                            unsigned long long* published, unsigned tag, unsigned* ticket, bool vector_copies) {
  constexpr int B = SolveRows<T>::value, kGroups = kSolveThreads / B, kPerThread = B / kGroups;
  constexpr int kPerLane = B / 32, kWords = TaggedValue<T>::kWords;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* ring = reinterpret_cast<T*>(shared_bytes);  // kSolveRing column-major B x B tiles
  __shared__ T partial[kGroups][B];
  __shared__ T x_parts[kSolveXSlots][B];
  __shared__ T y[B];
  __shared__ int ticket_taken;
  const int row_blocks = int((n + B - 1) / B);
  if (threadIdx.x == 0) ticket_taken = int(atomicAdd(ticket, 1u));
  __syncthreads();
  const int t = ticket_taken;  // the number of steps
  const int rb = kLower ? t : row_blocks - 1 - t;
  const std::int64_t r0 = std::int64_t(rb) * B;
  const int rows = int(min(std::int64_t(B), n - r0));
  const int r = threadIdx.x % B, group = threadIdx.x / B, lane = threadIdx.x % 32;
  auto block_of_step = [&](int step) { return kLower ? step : row_blocks - 1 - step; };

  // Starts copying the tile of `step` into its ring slot; one commit group per step, empty past
  // the last, so that waiting for kSolveRing - 2 pending groups means "this step's tile is in".
  auto start_tile = [&](int step) {
    if (step < t) {
      const std::int64_t c0 = std::int64_t(block_of_step(step)) * B;
      const int cols = int(min(std::int64_t(B), n - c0));
      T* tile = ring + (step % kSolveRing) * B * B;
      if (vector_copies) {  // 16-byte pieces of columns; rows past the end are zero-filled
        constexpr int kPiece = 16 / int(sizeof(T)), kPiecesPerColumn = B / kPiece;
        for (int idx = threadIdx.x; idx < B * kPiecesPerColumn; idx += kSolveThreads) {
          const int c = idx / kPiecesPerColumn, i = (idx % kPiecesPerColumn) * kPiece;
          const int valid = c < cols ? max(0, min(kPiece, rows - i)) : 0;
          copy_async_16(tile + c * B + i, valid > 0 ? lu + (r0 + i) + (c0 + c) * ld : lu, valid * int(sizeof(T)));
        }
      } else {
        for (int idx = threadIdx.x; idx < B * B; idx += kSolveThreads) {
          const int i = idx % B, c = idx / B;
          const bool valid = i < rows && c < cols;
          copy_async_element<sizeof(T)>(tile + idx, valid ? lu + (r0 + i) + (c0 + c) * ld : lu,
                                        valid ? int(sizeof(T)) : 0);
        }
      }
    }
    copy_async_commit();
  };
  for (int s = 0; s < kSolveRing - 1; ++s) start_tile(s);

  T inverse[kPerThread];  // this thread's part of the inverse of the diagonal block
  const T* own_inverse = inverses + (std::int64_t(kLower ? 0 : 1) * row_blocks + rb) * B * B;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) inverse[k] = own_inverse[r + (group + kGroups * k) * B];
  const T own_rhs = threadIdx.x < rows ? x[r0 + threadIdx.x] : T(0);

  int x_ready = 0;  // warp 0: the steps whose part of x is in x_parts
  T acc = 0;
  for (int s = 0; s < t; ++s) {
    copy_async_wait<kSolveRing - 2>();
    // Warp 0 waits for the part of x of step s and takes those of the next steps already
    // published (up to kSolveXSlots - 2 ahead: the slot of step s - 1 may still be read).
    if (threadIdx.x < 32 && s >= x_ready) {
      const int last = min(t, s + kSolveXSlots - 2);
      while (true) {
        int ready = s;
        for (int j = s; j < last; ++j) {
          const std::int64_t c0 = std::int64_t(block_of_step(j)) * B;
          T v[kPerLane];
          bool ok = true;
#pragma unroll
          for (int i = 0; i < kPerLane; ++i) {
            const std::int64_t c = c0 + kPerLane * lane + i;
            v[i] = T(0);
            if (c < n) ok &= TaggedValue<T>::load(published + c * kWords, tag, v[i]);
          }
          if (!__all_sync(0xffffffffu, ok)) break;
#pragma unroll
          for (int i = 0; i < kPerLane; ++i) x_parts[j % kSolveXSlots][kPerLane * lane + i] = v[i];
          ready = j + 1;
        }
        if (ready > s) {
          x_ready = ready;
          break;
        }
        __nanosleep(32);
      }
    }
    __syncthreads();  // the tile and the part of x of step s are in; step s - 1's slot is free
    start_tile(s + kSolveRing - 1);
    const T* tile = ring + (s % kSolveRing) * B * B;
    const T* part = x_parts[s % kSolveXSlots];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) acc += tile[(group + kGroups * k) * B + r] * part[group + kGroups * k];
  }
  partial[group][r] = acc;
  __syncthreads();
  if (threadIdx.x < B) {
    T sum = 0;
    for (int g = 0; g < kGroups; ++g) sum += partial[g][threadIdx.x];
    y[threadIdx.x] = own_rhs - sum;
  }
  __syncthreads();
  // x(block) = inverse(diagonal block) * y
  T v = 0;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) v += inverse[k] * y[group + kGroups * k];
  partial[group][r] = v;
  __syncthreads();
  if (threadIdx.x < rows) {
    T sum = 0;
    for (int g = 0; g < kGroups; ++g) sum += partial[g][threadIdx.x];
    TaggedValue<T>::store(published + (r0 + threadIdx.x) * kWords, sum, tag);
    x[r0 + threadIdx.x] = sum;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

PanelWorkspace::PanelWorkspace(std::int64_t max_rows, int max_blocks) {
  int device = 0, sms = 0, max_shared = 0, cooperative = 0;
  MIXSOLVE_CUDA_CHECK(cudaGetDevice(&device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  // One block per multiprocessor at most (the cooperative launch needs every block resident), and
  // enough blocks for each block's rows of a sub-panel to fit in its shared memory beside U12,
  // L11 and the prefix counts (and the kernel's static shared variables). The final round of the
  // tournament takes up to max_tile_rows_ proposals at once.
  cudaFuncAttributes attributes{};
  MIXSOLVE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, panel_lu_kernel));
  const int max_dynamic = max_shared - int(attributes.sharedSizeBytes);
  const std::size_t fixed = PanelShared(0, kPanelMaxWidth, sms).bytes();
  const std::int64_t fit =
      std::max<std::int64_t>(0, std::int64_t(max_dynamic) - std::int64_t(fixed)) / std::int64_t(PanelShared::kRowBytes);
  const std::int64_t least = fit > 0 ? (max_rows + fit - 1) / fit : std::int64_t(sms) + 1;
  grid_ = int(std::min<std::int64_t>(sms, std::max<std::int64_t>(least, max_blocks > 0 ? max_blocks : sms)));
  max_tile_rows_ = int(std::min<std::int64_t>(fit, INT_MAX));
  // Rounds of the final tournament need room for the 32 winners and more proposals.
  supported_ = cooperative != 0 && max_rows > 0 && least <= sms && fit >= 2 * kSub;
  if (!supported_) return;
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(panel_lu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic));
  proposals_ = DeviceBuffer<float>((std::size_t(grid_) + 1) * kSub * kSub);
  proposal_rows_ = DeviceBuffer<int>(std::size_t(grid_) * kSub);
  moved_rows_ = DeviceBuffer<float>(2 * kSub * kPanelMaxWidth);
}

void PanelWorkspace::factor(float* a, std::int64_t lda, std::int64_t m, int w, int* pivots, std::int64_t row_offset,
                            int* first_zero_pivot, std::int64_t column_offset, cudaStream_t stream) {
  if (w <= 0) return;
  if (w > kPanelMaxWidth || w > m)
    throw InvalidArgument("PanelWorkspace::factor: w = " + std::to_string(w) + " must be at most kPanelMaxWidth = " +
                          std::to_string(kPanelMaxWidth) + " and m = " + std::to_string(m));
  const int blocks = int(std::min<std::int64_t>(grid_, (m + kPanelMinRowsPerBlock - 1) / kPanelMinRowsPerBlock));
  const int rows_per_block = int((m + blocks - 1) / blocks);
  // The tile holds a block's rows, and (after kSub rows for the winners of a chunk) all
  // proposals at once where they fit: one chunk.
  const int tile_rows = std::max(rows_per_block, std::min((blocks + 1) * kSub, max_tile_rows_));
  PanelArgs args{a,
                 lda,
                 int(m),
                 w,
                 rows_per_block,
                 tile_rows,
                 proposals_.data(),
                 proposal_rows_.data(),
                 moved_rows_.data(),
                 pivots,
                 row_offset,
                 first_zero_pivot,
                 column_offset};
  const std::size_t shared = PanelShared(tile_rows, w, blocks).bytes();
  void* params[] = {&args};
  MIXSOLVE_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(panel_lu_kernel), dim3(blocks),
                                                  dim3(kPanelThreads), params, shared, stream));
}

void interchanges_to_moves(const int* pivots, std::int64_t first, int count, int* to, int* from, int* moves,
                           cudaStream_t stream) {
  if (count < 0 || count > kPanelMaxWidth)
    throw InvalidArgument("interchanges_to_moves: count = " + std::to_string(count) + " is not in [0, " +
                          std::to_string(kPanelMaxWidth) + "]");
  interchanges_to_moves_kernel<<<1, 32, 0, stream>>>(pivots, first, count, to, from, moves);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

void apply_row_moves(float* a, std::int64_t lda, const int* to, const int* from, const int* moves, std::int64_t c0,
                     std::int64_t c1, std::int64_t skip0, std::int64_t skip1, cudaStream_t stream) {
  skip0 = std::clamp(skip0, c0, c1);
  skip1 = std::clamp(skip1, skip0, c1);
  const std::int64_t columns = (c1 - c0) - (skip1 - skip0);
  if (columns <= 0) return;
  apply_row_moves_kernel<<<unsigned((columns + kMoveWarps - 1) / kMoveWarps), 32 * kMoveWarps, 0, stream>>>(
      a, lda, to, from, moves, c0, c1, skip0, skip1);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

void pivots_to_permutation(const int* pivots, std::int64_t n, int* permutation, cudaStream_t stream) {
  std::vector<int> p(n), perm(n);
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(p.data(), pivots, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::iota(perm.begin(), perm.end(), 0);
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

template <class T>
TriangularSolver<T>::TriangularSolver(const T* lu, std::int64_t n, std::int64_t ld, cudaStream_t stream)
    : lu_(lu), n_(n), ld_(ld) {
  constexpr int B = SolveRows<T>::value;
  const std::int64_t blocks = std::max<std::int64_t>((n + B - 1) / B, 1);
  published_ = DeviceBuffer<unsigned long long>(std::max<std::int64_t>(n, 1) * TaggedValue<T>::kWords);
  ticket_ = DeviceBuffer<unsigned>(1);
  inverses_ = DeviceBuffer<T>(2 * blocks * B * B);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(published_.data(), 0, published_.bytes(), stream));  // tag 0 is never used
  vector_copies_ = ld % (16 / sizeof(T)) == 0 && reinterpret_cast<std::uintptr_t>(lu) % 16 == 0;
  if (n == 0) return;
  const int shared = int(2 * B * B * sizeof(T));
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(invert_diagonal_blocks_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  invert_diagonal_blocks_kernel<T><<<dim3(unsigned(blocks), 2), B, shared, stream>>>(lu, ld, n, inverses_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <class T>
void TriangularSolver<T>::solve(T* x, cudaStream_t stream) {
  if (n_ == 0) return;
  constexpr int B = SolveRows<T>::value;
  const int shared = int(kSolveRing * B * B * sizeof(T));
  static const cudaError_t lower_attribute = cudaFuncSetAttribute(
      triangular_solve_kernel<T, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  static const cudaError_t upper_attribute = cudaFuncSetAttribute(
      triangular_solve_kernel<T, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  MIXSOLVE_CUDA_CHECK(lower_attribute);
  MIXSOLVE_CUDA_CHECK(upper_attribute);
  if (tag_ >= 0xfffffffeu) {  // the tags would wrap: start again from a clean slate
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(published_.data(), 0, published_.bytes(), stream));
    tag_ = 0;
  }
  const unsigned blocks = unsigned((n_ + B - 1) / B);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned), stream));
  triangular_solve_kernel<T, true><<<blocks, kSolveThreads, shared, stream>>>(
      lu_, ld_, n_, inverses_.data(), x, published_.data(), ++tag_, ticket_.data(), vector_copies_);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned), stream));
  triangular_solve_kernel<T, false><<<blocks, kSolveThreads, shared, stream>>>(
      lu_, ld_, n_, inverses_.data(), x, published_.data(), ++tag_, ticket_.data(), vector_copies_);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template class TriangularSolver<float>;
template class TriangularSolver<double>;

}  // namespace mixsolve::solvers_detail
