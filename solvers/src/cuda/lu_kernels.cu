// GPU kernels of the device LU and its solves: the cooperative panel factorization, row
// interchanges, the pivot permutation, and bandwidth-bound triangular solves.
#include <cooperative_groups.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <vector>

#include "lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::solvers_detail {

namespace cg = cooperative_groups;

namespace {

unsigned blocks_for(std::int64_t total, int threads = 256) {
  const std::int64_t b = (total + threads - 1) / threads;
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(b, 1), 65535));
}

// ---------------------------------------------------------------------------------------------
// Panel factorization. Partial pivoting needs one global argmax per column, so a panel of n
// columns costs n grid-wide synchronisations; launching a kernel (or several) per column, as a
// cuSOLVER getrf on a tall panel does, costs several times more. Here one cooperative launch keeps
// its share of the m x w panel in shared memory for all w columns, and per column:
//   1. each block finds its candidate (largest |a(i,j)|, i >= j, lowest index on ties, as isamax)
//      and publishes it with its whole row, the owner of row j publishes row j;
//   2. grid.sync();
//   3. every block picks the winner from the published candidates (redundantly, so no second
//      synchronisation), swaps rows j and p where it owns them, scales its part of column j by
//      1/pivot and applies the rank-1 update to its rows.
// The exchange buffers alternate by column parity: a block can only overwrite buffer j % 2 for
// column j + 2 after the synchronisation of column j + 1, which every reader of column j passed.
constexpr int kPanelThreads = 256;
constexpr int kPanelMinRowsPerBlock = 64;
constexpr int kTileStride = kPanelBaseWidth + 1;  // padded row of the shared tile: no bank conflicts

struct PanelArgs {
  float* a;
  std::int64_t lda;
  int m, w, rows_per_block;
  float* candidate_values;  // [2][grid]
  int* candidate_indices;   // [2][grid]
  float* candidate_rows;    // [2][grid][kPanelBaseWidth]
  float* diagonal_rows;     // [2][kPanelBaseWidth]
  int* pivots;
  std::int64_t row_offset;
  int* first_zero_pivot;
  std::int64_t column_offset;
};

// Combines two (|value|, row) candidates: the larger value, the lower row on ties. NaN never wins.
__device__ inline void take_better(float& value, int& row, float other_value, int other_row) {
  if (other_value > value || (other_value == value && other_row < row)) {
    value = other_value;
    row = other_row;
  }
}

__global__ void __launch_bounds__(kPanelThreads) panel_lu_kernel(PanelArgs p) {
  // rows_per_block x kTileStride (this block's rows, row-major), then every block's candidate row
  extern __shared__ float tile[];
  float* all_rows = tile + p.rows_per_block * kTileStride;
  __shared__ float warp_value[kPanelThreads / 32];
  __shared__ int warp_row[kPanelThreads / 32];
  __shared__ float pivot_row[kPanelBaseWidth], old_diagonal_row[kPanelBaseWidth];
  __shared__ int block_best_row, winner;

  const cg::grid_group grid = cg::this_grid();
  const int block = blockIdx.x, blocks = gridDim.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r0 = block * p.rows_per_block;
  const int rows = max(0, min(p.m, r0 + p.rows_per_block) - r0);
  const int w = p.w;

  for (int c = 0; c < w; ++c)
    for (int r = threadIdx.x; r < rows; r += kPanelThreads) tile[r * kTileStride + c] = p.a[(r0 + r) + c * p.lda];
  __syncthreads();

  for (int j = 0; j < w; ++j) {
    const int parity = j & 1;
    // 1. This block's candidate.
    float best = -1.0f;
    int best_row = INT_MAX;
    for (int r = threadIdx.x; r < rows; r += kPanelThreads)
      if (r0 + r >= j) take_better(best, best_row, fabsf(tile[r * kTileStride + j]), r0 + r);
    for (int o = 16; o > 0; o >>= 1)
      take_better(best, best_row, __shfl_down_sync(0xffffffffu, best, o), __shfl_down_sync(0xffffffffu, best_row, o));
    if (lane == 0) {
      warp_value[warp] = best;
      warp_row[warp] = best_row;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int v = 1; v < kPanelThreads / 32; ++v) take_better(best, best_row, warp_value[v], warp_row[v]);
      block_best_row = best_row;
      __stcg(p.candidate_values + parity * blocks + block, best);
      __stcg(p.candidate_indices + parity * blocks + block, best_row);
    }
    __syncthreads();
    if (threadIdx.x < w) {
      const int local = block_best_row - r0;
      const float v = (local >= 0 && local < rows) ? tile[local * kTileStride + threadIdx.x] : 0.0f;
      __stcg(p.candidate_rows + (parity * blocks + block) * kPanelBaseWidth + threadIdx.x, v);
      if (j >= r0 && j < r0 + rows)
        __stcg(p.diagonal_rows + parity * kPanelBaseWidth + threadIdx.x, tile[(j - r0) * kTileStride + threadIdx.x]);
    }
    // 2.
    grid.sync();
    // 3. The winner (read through L2: another SM wrote it). Every candidate row is fetched in the
    //    same round trip as the candidates' values, so the pivot row needs no second one.
    for (int idx = threadIdx.x; idx < blocks * kPanelBaseWidth; idx += kPanelThreads)
      all_rows[idx] = __ldcg(p.candidate_rows + parity * blocks * kPanelBaseWidth + idx);
    if (threadIdx.x < w) old_diagonal_row[threadIdx.x] = __ldcg(p.diagonal_rows + parity * kPanelBaseWidth + threadIdx.x);
    if (warp == 0) {
      float v = -1.0f;
      int row = INT_MAX, from = 0;
      for (int b = lane; b < blocks; b += 32) {
        const float bv = __ldcg(p.candidate_values + parity * blocks + b);
        const int br = __ldcg(p.candidate_indices + parity * blocks + b);
        if (bv > v || (bv == v && br < row)) {
          v = bv;
          row = br;
          from = b;
        }
      }
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_down_sync(0xffffffffu, v, o);
        const int orow = __shfl_down_sync(0xffffffffu, row, o), ofrom = __shfl_down_sync(0xffffffffu, from, o);
        if (ov > v || (ov == v && orow < row)) {
          v = ov;
          row = orow;
          from = ofrom;
        }
      }
      if (lane == 0) {
        winner = from;
        // An all-NaN column leaves no candidate: treat it as a zero pivot at row j.
        block_best_row = row == INT_MAX ? j : row;
      }
    }
    __syncthreads();
    const int pivot = block_best_row;
    if (threadIdx.x < w)
      pivot_row[threadIdx.x] = pivot == j ? old_diagonal_row[threadIdx.x] : all_rows[winner * kPanelBaseWidth + threadIdx.x];
    if (block == 0 && threadIdx.x == 0) p.pivots[j] = int(p.row_offset + pivot);
    __syncthreads();
    if (threadIdx.x < w && pivot != j) {
      if (j >= r0 && j < r0 + rows) tile[(j - r0) * kTileStride + threadIdx.x] = pivot_row[threadIdx.x];
      if (pivot >= r0 && pivot < r0 + rows) tile[(pivot - r0) * kTileStride + threadIdx.x] = old_diagonal_row[threadIdx.x];
    }
    __syncthreads();
    const float pivot_value = pivot_row[j];
    if (pivot_value == 0.0f) {
      if (block == 0 && threadIdx.x == 0) atomicMin(p.first_zero_pivot, int(p.column_offset + j));
      continue;  // as getf2: no scaling, and the update would add zeros
    }
    for (int r = threadIdx.x; r < rows; r += kPanelThreads) {
      if (r0 + r <= j) continue;
      float* row = tile + r * kTileStride;
      const float l = row[j] / pivot_value;
      row[j] = l;
      for (int c = j + 1; c < w; ++c) row[c] = fmaf(-l, pivot_row[c], row[c]);
    }
  }
  __syncthreads();
  for (int c = 0; c < w; ++c)
    for (int r = threadIdx.x; r < rows; r += kPanelThreads) p.a[(r0 + r) + c * p.lda] = tile[r * kTileStride + c];
}

// One thread per column applies the interchanges in order (LAPACK's laswp).
__global__ void swap_rows_kernel(float* a, std::int64_t lda, const int* pivots, std::int64_t first, int count,
                                 std::int64_t c0, std::int64_t c1, std::int64_t skip0, std::int64_t skip1) {
  std::int64_t c = c0 + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (c >= skip0) c += skip1 - skip0;
  if (c >= c1) return;
  float* column = a + c * lda;
  for (int i = 0; i < count; ++i) {
    const std::int64_t row = first + i, pivot = pivots[first + i];
    if (pivot != row) {
      const float t = column[row];
      column[row] = column[pivot];
      column[pivot] = t;
    }
  }
}

template <class T>
__global__ void gather_rows_kernel(const double* y, std::int64_t ldy, const int* permutation, std::int64_t n,
                                   std::int64_t k, T* w, std::int64_t ldw) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < n * k;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % n, c = idx / n;
    w[i + c * ldw] = static_cast<T>(y[permutation[i] + c * ldy]);
  }
}

// ---------------------------------------------------------------------------------------------
// Triangular solves for one vector. cublas<t>trsv/trsm with one right-hand side run a chain of
// small dependent steps and reach a fraction of the memory bandwidth. Here each block of
// SolveRows<T> rows of x is one thread block; blocks take tickets in launch order (so a block only
// waits for blocks that are already running), accumulate the products of their row of the
// factor with the parts of x already published, then apply the precomputed inverse of their
// diagonal block (a small mat-vec instead of a sequential substitution) and publish their part
// with a flag. The factor is read once; the critical path is one flag hand-over, one tile
// product and one small mat-vec per block of rows.
template <class T>
struct SolveRows {
  static constexpr int value = sizeof(T) == 4 ? 128 : 64;  // the inversion kernel holds two tiles in shared memory
};
constexpr int kSolveThreads = 256;

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

template <class T, bool kLower>
__global__ void __launch_bounds__(kSolveThreads)
    triangular_solve_kernel(const T* lu, std::int64_t ld, std::int64_t n, const T* inverses, T* x, unsigned* flags,
                            unsigned epoch, unsigned* ticket) {
  constexpr int B = SolveRows<T>::value, kGroups = kSolveThreads / B;
  // The tile of the block this one depends on last and the inverse of its own diagonal block,
  // fetched before the wait: after the last flag only x and shared memory are read.
  extern __shared__ unsigned char shared_bytes[];
  T* last_tile = reinterpret_cast<T*>(shared_bytes);  // column-major B x B
  T* inverse = last_tile + B * B;                      // column-major B x B
  __shared__ T partial[kGroups][B];
  __shared__ T y[B];
  __shared__ int ticket_taken, ready_end;
  const int row_blocks = int((n + B - 1) / B);
  if (threadIdx.x == 0) ticket_taken = int(atomicAdd(ticket, 1u));
  __syncthreads();
  const int t = ticket_taken;
  const int rb = kLower ? t : row_blocks - 1 - t;
  const std::int64_t r0 = std::int64_t(rb) * B;
  const int rows = int(min(std::int64_t(B), n - r0));
  const int r = threadIdx.x % B, group = threadIdx.x / B;
  auto block_of_step = [&](int step) { return kLower ? step : row_blocks - 1 - step; };

  const T* own_inverse = inverses + (std::int64_t(kLower ? 0 : 1) * row_blocks + rb) * B * B;
  for (int idx = threadIdx.x; idx < B * B; idx += kSolveThreads) inverse[idx] = own_inverse[idx];
  if (t > 0) {
    const std::int64_t c0 = std::int64_t(block_of_step(t - 1)) * B;
    const int cols = int(min(std::int64_t(B), n - c0));
    for (int idx = threadIdx.x; idx < B * B; idx += kSolveThreads) {
      const int i = idx % B, c = idx / B;
      last_tile[idx] = i < rows && c < cols ? lu[(r0 + i) + (c0 + c) * ld] : T(0);
    }
  }

  // Off-diagonal blocks but the last, in the order they are finished; one barrier per run of
  // published blocks (thread 0 waits for the first and takes every later one already published).
  T acc = 0;
  for (int step = 0; step < t - 1;) {
    if (threadIdx.x == 0) {
      while (*(volatile unsigned*)(flags + block_of_step(step)) != epoch) __nanosleep(20);
      int end = step + 1;
      while (end < t - 1 && *(volatile unsigned*)(flags + block_of_step(end)) == epoch) ++end;
      __threadfence();
      ready_end = end;
    }
    __syncthreads();
    const int end = ready_end;
    for (; step < end; ++step) {
      const std::int64_t c0 = std::int64_t(block_of_step(step)) * B;
      const int cols = int(min(std::int64_t(B), n - c0));  // short: the last block, first for U
      // Unrolled so that each thread has many independent loads in flight.
      if (r < rows) {
#pragma unroll 16
        for (int c = group; c < cols; c += kGroups) acc += lu[(r0 + r) + (c0 + c) * ld] * __ldcg(x + c0 + c);
      }
    }
    __syncthreads();  // ready_end is rewritten next round
  }
  // The last dependency: its tile is in shared memory.
  if (t > 0) {
    const int cb = block_of_step(t - 1);
    if (threadIdx.x == 0) {
      while (*(volatile unsigned*)(flags + cb) != epoch) __nanosleep(20);
      __threadfence();
    }
    __syncthreads();
    const std::int64_t c0 = std::int64_t(cb) * B;
    const int cols = int(min(std::int64_t(B), n - c0));
    if (r < rows)
      for (int c = group; c < cols; c += kGroups) acc += last_tile[r + c * B] * __ldcg(x + c0 + c);
  }
  partial[group][r] = acc;
  __syncthreads();
  if (threadIdx.x < B) {
    T sum = 0;
    for (int g = 0; g < kGroups; ++g) sum += partial[g][threadIdx.x];
    y[threadIdx.x] = threadIdx.x < rows ? x[r0 + threadIdx.x] - sum : T(0);
  }
  __syncthreads();
  // x(block) = inverse(diagonal block) * y
  T v = 0;
  for (int c = group; c < B; c += kGroups) v += inverse[r + c * B] * y[c];
  partial[group][r] = v;
  __syncthreads();
  if (threadIdx.x < rows) {
    T sum = 0;
    for (int g = 0; g < kGroups; ++g) sum += partial[g][threadIdx.x];
    __stcg(x + r0 + threadIdx.x, sum);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) atomicExch(flags + rb, epoch);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

PanelWorkspace::PanelWorkspace(std::int64_t max_rows, int max_blocks) {
  int device = 0, sms = 0, max_shared = 0, cooperative = 0;
  MIXSOLVE_CUDA_CHECK(cudaGetDevice(&device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  // The kernel's own shared variables (rounded up) and the candidate rows of up to all SMs.
  const std::size_t static_bytes = 2048 + std::size_t(sms) * kPanelBaseWidth * sizeof(float);
  const std::int64_t fit = (std::int64_t(max_shared) - std::int64_t(static_bytes)) / (kTileStride * sizeof(float));
  // One block per multiprocessor at most (the cooperative launch needs every block resident), and
  // enough blocks for each block's rows to fit in its shared memory.
  const std::int64_t least = (max_rows + fit - 1) / fit;
  grid_ = int(std::min<std::int64_t>(sms, std::max<std::int64_t>(least, max_blocks > 0 ? max_blocks : sms)));
  supported_ = cooperative != 0 && max_rows > 0 && least <= sms;
  if (!supported_) return;
  const std::int64_t needed = (max_rows + grid_ - 1) / grid_;
  shared_bytes_ = (std::size_t(std::max<std::int64_t>(needed, kPanelMinRowsPerBlock)) * kTileStride +
                   std::size_t(grid_) * kPanelBaseWidth) * sizeof(float);
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(panel_lu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           int(std::min<std::size_t>(shared_bytes_, std::size_t(max_shared)))));
  candidate_values_ = DeviceBuffer<float>(2 * grid_);
  candidate_indices_ = DeviceBuffer<int>(2 * grid_);
  candidate_rows_ = DeviceBuffer<float>(2 * grid_ * kPanelBaseWidth);
  diagonal_rows_ = DeviceBuffer<float>(2 * kPanelBaseWidth);
}

void PanelWorkspace::factor(float* a, std::int64_t lda, std::int64_t m, int w, int* pivots, std::int64_t row_offset,
                            int* first_zero_pivot, std::int64_t column_offset, cudaStream_t stream) {
  const int blocks = int(std::min<std::int64_t>(grid_, (m + kPanelMinRowsPerBlock - 1) / kPanelMinRowsPerBlock));
  PanelArgs args{a,
                 lda,
                 int(m),
                 w,
                 int((m + blocks - 1) / blocks),
                 candidate_values_.data(),
                 candidate_indices_.data(),
                 candidate_rows_.data(),
                 diagonal_rows_.data(),
                 pivots,
                 row_offset,
                 first_zero_pivot,
                 column_offset};
  const std::size_t shared = (std::size_t(args.rows_per_block) * kTileStride + std::size_t(blocks) * kPanelBaseWidth) * sizeof(float);
  void* params[] = {&args};
  MIXSOLVE_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(panel_lu_kernel), dim3(blocks),
                                                  dim3(kPanelThreads), params, shared, stream));
}

void swap_rows(float* a, std::int64_t lda, const int* pivots, std::int64_t first, int count, std::int64_t c0,
               std::int64_t c1, std::int64_t skip0, std::int64_t skip1, cudaStream_t stream) {
  skip0 = std::clamp(skip0, c0, c1);
  skip1 = std::clamp(skip1, skip0, c1);
  const std::int64_t columns = (c1 - c0) - (skip1 - skip0);
  if (columns <= 0 || count <= 0) return;
  swap_rows_kernel<<<blocks_for(columns, 128), 128, 0, stream>>>(a, lda, pivots, first, count, c0, c1, skip0, skip1);
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
                 std::int64_t ldw, cudaStream_t stream) {
  if (n * k == 0) return;
  gather_rows_kernel<<<blocks_for(n * k), 256, 0, stream>>>(y, ldy, permutation, n, k, w, ldw);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}
template void gather_rows<float>(const double*, std::int64_t, const int*, std::int64_t, std::int64_t, float*,
                                 std::int64_t, cudaStream_t);
template void gather_rows<double>(const double*, std::int64_t, const int*, std::int64_t, std::int64_t, double*,
                                  std::int64_t, cudaStream_t);

template <class T>
TriangularSolver<T>::TriangularSolver(const T* lu, std::int64_t n, std::int64_t ld, cudaStream_t stream)
    : lu_(lu), n_(n), ld_(ld) {
  constexpr int B = SolveRows<T>::value;
  const std::int64_t blocks = std::max<std::int64_t>((n + B - 1) / B, 1);
  flags_ = DeviceBuffer<unsigned>(blocks);
  ticket_ = DeviceBuffer<unsigned>(1);
  inverses_ = DeviceBuffer<T>(2 * blocks * B * B);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(flags_.data(), 0, flags_.bytes(), stream));
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
  const int shared = int(2 * B * B * sizeof(T));
  static const cudaError_t lower_attribute = cudaFuncSetAttribute(
      triangular_solve_kernel<T, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  static const cudaError_t upper_attribute = cudaFuncSetAttribute(
      triangular_solve_kernel<T, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  MIXSOLVE_CUDA_CHECK(lower_attribute);
  MIXSOLVE_CUDA_CHECK(upper_attribute);
  const unsigned blocks = unsigned(flags_.size());
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned), stream));
  triangular_solve_kernel<T, true><<<blocks, kSolveThreads, shared, stream>>>(lu_, ld_, n_, inverses_.data(), x,
                                                                              flags_.data(), ++epoch_, ticket_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned), stream));
  triangular_solve_kernel<T, false><<<blocks, kSolveThreads, shared, stream>>>(lu_, ld_, n_, inverses_.data(), x,
                                                                               flags_.data(), ++epoch_, ticket_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template class TriangularSolver<float>;
template class TriangularSolver<double>;

}  // namespace mixsolve::solvers_detail
