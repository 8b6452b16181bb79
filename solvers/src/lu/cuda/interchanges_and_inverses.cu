// SPDX-License-Identifier: BSD-3-Clause
// Row interchanges as moves, the inverses of a panel's triangles, the pivot permutation and the
// gather of permuted rows: the device LU's small kernels around the panel.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_helpers.hpp"
#include "lu/cuda/lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

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

}  // namespace

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
  // The shared memory beyond the default 48 KB, per call: the attribute belongs to the current
  // device, and a Context may sit on another than the last call's.
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(invert_triangles_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           kInverseSharedBytes<T>));
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

}  // namespace mixsolve::solvers_detail
