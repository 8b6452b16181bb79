// SPDX-License-Identifier: BSD-3-Clause
#include "qr/cuda/tsqr_panel.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace {

// Warps of the leaves' blocks (kTsqrBlockRows rows) and of the larger blocks a level above them
// may take (twice the rows: a fan-in of 16 R factors), as plan_upper_levels decides.
constexpr int kLeafWarps = 8, kUpperWarps = 16;
constexpr int kRowThreads = 256;  // reconstruct_rows_kernel's

// Thread (warp w, lane c) of a block holds column c of the warp's kRowsPerThread rows in
// registers: a reflector's dot products and update cost two FMAs per element and one shared
// load of v, with v = 0 above the diagonal so no row needs a test.
template <class T>
constexpr int kRowsPerThread = kTsqrBlockRows<T> / kLeafWarps;
template <class T, int Warps>
constexpr int kBlockRows = Warps* kRowsPerThread<T>;

// A block's cols x rows tile in shared memory, column after column; the odd leading dimension
// puts the 32 columns of one row in 32 banks.
template <class T, int Warps>
constexpr int kTileLd = kBlockRows<T, Warps> + 1;
template <class T, int Warps>
constexpr std::size_t kTileBytes = sizeof(T) * kTsqrMaxCols* kTileLd<T, Warps>;
// form_q's tile of reflectors: columns 16-byte aligned, so that a warp's rows of one reflector
// load as vectors (the loads are broadcasts: no bank conflicts to avoid).
template <class T, int Warps>
constexpr int kReflectorLd = kBlockRows<T, Warps> + 16 / int(sizeof(T));
template <class T, int Warps>
constexpr std::size_t kReflectorBytes = sizeof(T) * kTsqrMaxCols* kReflectorLd<T, Warps>;

// Block k of `blocks` over `rows` rows: [begin, end), balanced, so each has >= rows / blocks.
__device__ inline void block_range(std::int64_t rows, std::int64_t blocks, std::int64_t k, std::int64_t& begin,
                                   std::int64_t& end) {
  begin = k * rows / blocks;
  end = (k + 1) * rows / blocks;
}

// dst[0 .. N) := src[0 .. N) for a 16-byte aligned src in shared memory, as 16-byte loads.
template <class T, int N>
__device__ inline void load_aligned(const T* src, T (&dst)[N]) {
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int q = 0; q < N / 4; ++q) {
      const float4 e = reinterpret_cast<const float4*>(src)[q];
      dst[4 * q] = e.x, dst[4 * q + 1] = e.y, dst[4 * q + 2] = e.z, dst[4 * q + 3] = e.w;
    }
  } else {
#pragma unroll
    for (int q = 0; q < N / 2; ++q) {
      const double2 e = reinterpret_cast<const double2*>(src)[q];
      dst[2 * q] = e.x, dst[2 * q + 1] = e.y;
    }
  }
}

// dst[0 .. N) := src[0 .. N) for a 16-byte aligned dst in shared memory, as 16-byte stores.
template <class T, int N>
__device__ inline void store_aligned(const T (&src)[N], T* dst) {
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int q = 0; q < N / 4; ++q)
      reinterpret_cast<float4*>(dst)[q] = make_float4(src[4 * q], src[4 * q + 1], src[4 * q + 2], src[4 * q + 3]);
  } else {
#pragma unroll
    for (int q = 0; q < N / 2; ++q) reinterpret_cast<double2*>(dst)[q] = make_double2(src[2 * q], src[2 * q + 1]);
  }
}

// The per-warp partial sums of one column, stored transposed (partial[column][warp]) with this
// row length: a whole row loads as 16-byte vectors, and 8 lanes reading 8 different rows hit 32
// different banks (the row length is an odd multiple of 16 bytes).
template <class T, int Warps>
constexpr int kPartialLd = Warps + 16 / int(sizeof(T));

// The sum of a row of Warps partial sums: 16-byte vectors added lane-wise, then their lanes.
template <class T, int Warps>
__device__ inline T sum_partials(const T* row) {
  if constexpr (sizeof(T) == 4) {
    float4 acc = reinterpret_cast<const float4*>(row)[0];
#pragma unroll
    for (int q = 1; q < Warps / 4; ++q) {
      const float4 e = reinterpret_cast<const float4*>(row)[q];
      acc.x += e.x, acc.y += e.y, acc.z += e.z, acc.w += e.w;
    }
    return (acc.x + acc.y) + (acc.z + acc.w);
  } else {
    double2 acc0 = reinterpret_cast<const double2*>(row)[0], acc1 = reinterpret_cast<const double2*>(row)[1];
#pragma unroll
    for (int q = 2; q < Warps / 2; q += 2) {
      const double2 e = reinterpret_cast<const double2*>(row)[q], f = reinterpret_cast<const double2*>(row)[q + 1];
      acc0.x += e.x, acc0.y += e.y, acc1.x += f.x, acc1.y += f.y;
    }
    return (acc0.x + acc0.y) + (acc1.x + acc1.y);
  }
}

struct Sum {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct Max {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// The reduction of every thread's v, returned to all threads. scratch: Warps doubles.
template <int Warps, class Op>
__device__ double block_reduce(double v, double* scratch, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();  // scratch's previous readers are done
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double total = scratch[0];
  for (int w = 1; w < Warps; ++w) total = op(total, scratch[w]);
  return total;
}

// Rows [begin, begin + h) of x's first cols columns (zeros elsewhere) into a tile of leading
// dimension Ld; with UnitLower, as reflectors: their unit diagonal, zeros above it. Thread i
// takes row i: its 32 loads are coalesced across the block and all in flight at once.
template <class T, int Warps, int Ld, bool UnitLower = false>
__device__ void load_tile(const T* x, std::int64_t ldx, std::int64_t begin, int h, int cols, T* tile) {
  static_assert(kBlockRows<T, Warps> <= Warps * 32, "a row per thread");
  const int i = threadIdx.x;
  if (i >= kBlockRows<T, Warps>) return;
  T row[kTsqrMaxCols];
#pragma unroll
  for (int c = 0; c < kTsqrMaxCols; ++c) {
    const bool inside = i < h && c < cols;
    if constexpr (UnitLower)
      row[c] = inside && i > c ? x[begin + i + c * ldx] : T(inside && i == c);
    else
      row[c] = inside ? x[begin + i + c * ldx] : T(0);
  }
#pragma unroll
  for (int c = 0; c < kTsqrMaxCols; ++c) tile[c * Ld + i] = row[c];
}
template <class T, int Ld>
__device__ void store_tile(const T* tile, int h, int cols, T* x, std::int64_t ldx, std::int64_t begin) {
  const int i = threadIdx.x;
  if (i >= h) return;
#pragma unroll
  for (int c = 0; c < kTsqrMaxCols; ++c)
    if (c < cols) x[begin + i + c * ldx] = tile[c * Ld + i];
}

// The fast path's range, with R = 100 for FP32 and 900 for FP64: |alpha| <= 2^(R / 2),
// ||x below alpha||^2 in [2^-R, 2^R], each reflector's multiplier s finite and 0 or >= 2^-R.
// Within it neither the pivot column's squares nor beta, tau and v over- or underflow; a product
// with another column that overflows, or a multiplier that underflows, shows in s.
template <class T>
constexpr double kFastTiny = sizeof(T) == 4 ? 0x1p-100 : 0x1p-900;  // 2^-R
template <class T>
constexpr double kFastAlphaLimit = sizeof(T) == 4 ? 0x1p50 : 0x1p450;  // 2^(R / 2)

// Householder on a block's tile with ONE block-wide reduction per column (LAPACK's larfg
// reflector, computed differently). Thread (warp w, lane c) holds column c of the warp's
// kRowsPerThread rows in registers. For column j with x = its entries from row j down (alpha =
// x_j), every thread's partial sum x^T a_c over its rows, for c = j without row j, goes into one
// reduction: ||x below alpha||^2 from column j's, d_c = x^T a_c from the others. Then beta =
// -sign(alpha) sqrt(alpha^2 + ||x below||^2), and with the unnormalised reflector u = x - beta e_j
// (u^T a_c = d_c - beta a_jc), H a_c = a_c - s_c u, s_c = (d_c - beta a_jc) / (beta (beta - alpha)):
// tau = (beta - alpha) / beta and v = u / (alpha - beta) as larfg's. Row j of each column c > j is
// final then (R's row j) and goes to the tile. The warp holding row j shifts its registers up by
// one row as it updates them (row j leaves, a zero enters at the bottom), so row j is always
// register 0 of warp j / kRowsPerThread and a column's rows above its diagonal are gone by the
// time it is reduced.
// The block's last row, where it is a pivot (a square block: h = cols), has nothing below it:
// H = I there (larfg's tau = 0). Returns false (every thread alike) where a column leaves the
// fast range; the tile is then partly factorized and the caller starts over on the robust path.
template <class T, int Warps>
__device__ bool factor_tile_one_reduction(T* tile, int h, int cols, T* tau_shared) {
  constexpr int ld = kTileLd<T, Warps>, per_thread = kRowsPerThread<T>, block_rows = kBlockRows<T, Warps>;
  constexpr int partial_ld = kPartialLd<T, Warps>;
  // Alternating buffers: one barrier per column.
  __shared__ __align__(16) T column[2][block_rows];  // column j, spread over its warps' lanes
  __shared__ __align__(16) T partial[2][32][partial_ld];
  __shared__ T row_j[2][32];
  const int w = threadIdx.x / 32, c = threadIdx.x % 32, row0 = w * per_thread;
  constexpr T tiny = T(kFastTiny<T>), huge = T(1 / kFastTiny<T>), alpha_limit = T(kFastAlphaLimit<T>);
  T a[per_thread], x[per_thread];
#pragma unroll
  for (int t = 0; t < per_thread; ++t) a[t] = tile[c * ld + row0 + t];
  bool outside = false;  // this thread's last multiplier left the fast range
  for (int j = 0; j < cols; ++j) {
    const int buffer = j % 2;
    const bool pivot_warp = w == j / per_thread;  // its register 0: row j
    T* spread = column[buffer];
    if (c == j) store_aligned(a, spread + row0);
    __syncwarp();
    load_aligned(spread + row0, x);
    T dot[4] = {pivot_warp && c == j ? T(0) : x[0] * a[0], 0, 0, 0};  // four chains of FMAs, not one
#pragma unroll
    for (int t = 1; t < per_thread; ++t) dot[t % 4] += x[t] * a[t];
    partial[buffer][c][w] = (dot[0] + dot[1]) + (dot[2] + dot[3]);
    if (pivot_warp) row_j[buffer][c] = a[0];
    if (__syncthreads_or(outside)) return false;
    const T below = sum_partials<T, Warps>(partial[buffer][j]), alpha = row_j[buffer][j];
    if (j == h - 1) {  // the last row and (h >= cols) the last column: no rows below, H = I
      if (c == 0) tile[j * ld + j] = alpha;
      if (threadIdx.x == 0) tau_shared[j] = T(0);
      break;
    }
    if (!(below >= tiny && below <= huge && fabs(alpha) <= alpha_limit)) return false;  // alike in every thread
    const T norm = std::sqrt(alpha * alpha + below);
    const T beta = -copysign(norm, alpha);
    const T divisor = alpha - beta;  // |alpha| + norm: no cancellation
    const T reciprocal = T(1) / divisor;
    // Column j is final: v below the diagonal, beta on it (R's rows above it went to the tile at
    // earlier columns). Lane l writes the row its spread entry holds: the pivot warp's are
    // shifted by j - row0, the warps before it hold no rows any more.
    if (c < per_thread && w * per_thread + per_thread > j) {
      const int i = row0 + c + (pivot_warp ? j - row0 : 0);
      if (i > j && i < row0 + per_thread) tile[j * ld + i] = spread[row0 + c] * reciprocal;
      if (i == j) tile[j * ld + i] = beta;
    }
    if (threadIdx.x == 0) tau_shared[j] = (beta - alpha) / beta;
    if (c > j && c < cols) {
      const T a_jc = row_j[buffer][c];
      const T s = (sum_partials<T, Warps>(partial[buffer][c]) - beta * a_jc) / (beta * -divisor);
      outside = !(std::isfinite(s) && (s == T(0) || fabs(s) >= tiny));
      if (w == 0) tile[c * ld + j] = a_jc - s * divisor;  // R(j, c)
      if (pivot_warp) {
#pragma unroll
        for (int t = 0; t + 1 < per_thread; ++t) a[t] = a[t + 1] - s * x[t + 1];
        a[per_thread - 1] = T(0);
      } else {
#pragma unroll
        for (int t = 0; t < per_thread; ++t) a[t] -= s * x[t];
      }
    }
  }
  return !__syncthreads_or(outside);
}

// Householder on a block's tile for any data: larfg's reflector from the column scaled by a power
// of two near its largest entry (a reduction for that, one for the norm, in FP64), so that v and
// tau are accurate also where the column is subnormal in the working precision, as larfg's
// rescaling makes them. Column j is spread over each warp's lanes, which form v in shared memory;
// every lane c > j takes (I - tau v v^T).
template <class T, int Warps>
__device__ void factor_tile_robust(T* tile, int cols, T* tau_shared) {
  __shared__ __align__(16) T v_shared[kBlockRows<T, Warps>];
  __shared__ T partial[Warps][32];
  __shared__ T alpha_shared;
  __shared__ double scratch[Warps];
  constexpr int ld = kTileLd<T, Warps>, per_thread = kRowsPerThread<T>;
  const int w = threadIdx.x / 32, c = threadIdx.x % 32;
  // Thread (w, c) holds column c of the warp's rows row0 .. row0 + per_thread - 1. Column j is
  // final once step j is done: its lanes write it back to the tile then, so no register of a
  // finished column is touched again.
  const int row0 = w * per_thread;
  T a[per_thread], v[per_thread];
#pragma unroll
  for (int t = 0; t < per_thread; ++t) a[t] = tile[c * ld + row0 + t];
  for (int j = 0; j < cols; ++j) {
    // Column j, held by lane j of each warp, spread over its warp: lane l takes row row0 + l.
    if (c == j)
#pragma unroll
      for (int t = 0; t < per_thread; ++t) v_shared[row0 + t] = a[t];
    __syncwarp();
    const bool holds_row = c < per_thread;
    const int i_mine = row0 + c;
    const T x_mine = holds_row ? v_shared[i_mine] : T(0);
    if (holds_row && i_mine == j) alpha_shared = x_mine;
    double scale = 1;
    const double largest = block_reduce<Warps>(i_mine >= j ? fabs(double(x_mine)) : 0.0, scratch, Max{});
    // 2^-e with 2^e near the largest entry, the exponent capped so the scale stays finite for
    // subnormal FP64 columns.
    if (largest > 0) scale = scalbn(1.0, min(-ilogb(largest), 1022));
    const double x_scaled = double(x_mine) * scale;
    const double squares = block_reduce<Warps>(i_mine > j ? x_scaled * x_scaled : 0.0, scratch, Sum{});
    const T alpha = alpha_shared;
    T tau = 0, beta = alpha, below = x_mine;
    if (squares > 0) {
      // tau and v from the scaled column, in FP64 (exact powers of two: in normal range even
      // where the column is subnormal); beta unscaled.
      const double scaled_alpha = double(alpha) * scale;
      const double scaled_beta = -copysign(std::sqrt(scaled_alpha * scaled_alpha + squares), double(alpha));
      beta = T(scaled_beta / scale);
      tau = T((scaled_beta - scaled_alpha) / scaled_beta);
      // alpha - beta, scaled: |alpha - beta| >= ||x|| (no cancellation), near the largest entry.
      const double divisor = scaled_alpha - scaled_beta;
      below = T(x_scaled / divisor);
      if (holds_row) v_shared[i_mine] = i_mine < j ? T(0) : i_mine == j ? T(1) : below;
      __syncwarp();
    }
    if (holds_row) tile[j * ld + i_mine] = i_mine < j ? x_mine : i_mine == j ? beta : below;
    if (threadIdx.x == 0) tau_shared[j] = tau;
    if (tau == T(0)) {  // the same for every thread
      __syncthreads();  // v_shared's and alpha_shared's readers are done before the next column
      continue;
    }
    const bool right = c > j && c < cols;
    if (right) {
      T dot[4] = {0, 0, 0, 0};  // four chains of FMAs, not one
      load_aligned(v_shared + row0, v);
#pragma unroll
      for (int t = 0; t < per_thread; ++t) dot[t % 4] += v[t] * a[t];
      partial[w][c] = (dot[0] + dot[1]) + (dot[2] + dot[3]);
    }
    __syncthreads();
    if (right) {
      T sum = 0;
      for (int q = 0; q < Warps; ++q) sum += partial[q][c];
      sum *= tau;
#pragma unroll
      for (int t = 0; t < per_thread; ++t) a[t] -= v[t] * sum;
    }
  }
}

// One level of the tree going up: block k factorizes rows [begin, end) of x (leading dimension
// ldx) in place by Householder (LAPACK's larfg per column: beta = -sign(alpha) ||x||,
// v = x / (alpha - beta), tau = (beta - alpha) / beta, tau = 0 where x below the diagonal is 0),
// its taus to tau[k cols ..], its R (cols x cols, zeros below) to rows [k cols, (k + 1) cols) of
// r (leading dimension ldr). The one-reduction path where every column is in its range, else
// the robust path from the block's input again. FP32 leaves: three blocks to an SM (registers
// capped at 80, with a few spills, faster on the H100 than two blocks without).
template <class T, int Warps>
__global__ void __launch_bounds__(Warps * 32, sizeof(T) == 4 && Warps == 8 ? 3 : 1)
    factor_blocks_kernel(T* x, std::int64_t ldx, std::int64_t rows, std::int64_t blocks, int cols, T* tau, T* r,
                         std::int64_t ldr) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* tile = reinterpret_cast<T*>(shared_bytes);
  __shared__ T tau_shared[kTsqrMaxCols];
  constexpr int ld = kTileLd<T, Warps>;
  std::int64_t begin, end;
  block_range(rows, blocks, blockIdx.x, begin, end);
  const int h = int(end - begin);
  load_tile<T, Warps, ld>(x, ldx, begin, h, cols, tile);
  __syncthreads();
  if (!factor_tile_one_reduction<T, Warps>(tile, h, cols, tau_shared)) {
    load_tile<T, Warps, ld>(x, ldx, begin, h, cols, tile);  // every thread is past its last tile access
    __syncthreads();
    factor_tile_robust<T, Warps>(tile, cols, tau_shared);
  }
  __syncthreads();
  store_tile<T, ld>(tile, h, cols, x, ldx, begin);
  if (threadIdx.x < cols) {  // thread i: row i of R and tau_i
    const int i = threadIdx.x;
#pragma unroll
    for (int col = 0; col < kTsqrMaxCols; ++col)
      if (col < cols) r[blockIdx.x * std::int64_t(cols) + i + col * ldr] = i <= col ? tile[col * ld + i] : T(0);
    tau[blockIdx.x * std::int64_t(cols) + i] = tau_shared[i];
  }
}

// One level of the tree going down: block k forms its rows of the explicit Q, H_0 .. H_{cols-1}
// applied to [C_k; 0] (reflectors from the factorized x, C_k rows [k cols, (k + 1) cols) of c,
// or the identity at the root), into rows [begin, end) of q. The reflectors wait in shared
// memory with their unit diagonal and zeros above; the product in registers as in the
// factorization.
template <class T, int Warps>
__global__ void __launch_bounds__(Warps * 32)
    form_q_kernel(const T* x, std::int64_t ldx, std::int64_t rows, std::int64_t blocks, int cols, const T* tau,
                  const T* c, std::int64_t ldc, T* q, std::int64_t ldq) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* tile = reinterpret_cast<T*>(shared_bytes);
  __shared__ __align__(16) T partial[2][32][kPartialLd<T, Warps>];  // alternating: one barrier per reflector
  __shared__ T taus[kTsqrMaxCols];
  constexpr int ld = kReflectorLd<T, Warps>, per_thread = kRowsPerThread<T>;
  std::int64_t begin, end;
  block_range(rows, blocks, blockIdx.x, begin, end);
  const int h = int(end - begin), w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t slice = blockIdx.x * std::int64_t(cols);
  if (threadIdx.x < cols) taus[threadIdx.x] = tau[slice + threadIdx.x];
  load_tile<T, Warps, ld, true>(x, ldx, begin, h, cols, tile);
  T out[per_thread], v[per_thread];
  const int row0 = w * per_thread;  // this warp's rows, as in the factorization
#pragma unroll
  for (int t = 0; t < per_thread; ++t) {
    const int i = row0 + t;
    out[t] = i >= cols || lane >= cols ? T(0) : c ? c[slice + i + lane * ldc] : T(i == lane);
  }
  __syncthreads();
  int buffer = 0;
  for (int j = cols - 1; j >= 0; --j) {
    const T t_j = taus[j];
    if (t_j == T(0)) continue;
    buffer ^= 1;
    T dot[4] = {0, 0, 0, 0};  // four chains of FMAs, not one
    load_aligned(tile + j * ld + row0, v);
#pragma unroll
    for (int t = 0; t < per_thread; ++t) dot[t % 4] += v[t] * out[t];
    partial[buffer][lane][w] = (dot[0] + dot[1]) + (dot[2] + dot[3]);
    __syncthreads();
    const T sum = sum_partials<T, Warps>(partial[buffer][lane]) * t_j;
#pragma unroll
    for (int t = 0; t < per_thread; ++t) out[t] -= v[t] * sum;
  }
  __syncthreads();  // the tile's reflectors are read
#pragma unroll
  for (int t = 0; t < per_thread; ++t) tile[lane * ld + row0 + t] = out[t];
  __syncthreads();
  store_tile<T, ld>(tile, h, cols, q, ldq, begin);
}

// The reconstruction's top block, thread (p, l) = (warp, lane) on entry (p, l). M :=
// Q(0:cols, 0:cols) - S = L U without pivoting, s_i = -sign(pivot_i) chosen as the elimination
// reaches it; then T = -U S L^-T (T L^T = -U S, L unit lower) column by column, right-looking;
// R_householder = S R; U^-1 for the rows below (|u_ii| >= 1 by the choice of S), by back
// substitution on the identity, row i of X = U^-1 final once rows > i are.
// Writes a's top block (S R on and above the diagonal, L below), v's (L with its unit diagonal,
// zeros above), t, tau = diag T, and u_inverse (leading dimension 32).
template <class T>
__global__ void __launch_bounds__(1024)
    reconstruct_top_kernel(const T* q, std::int64_t ldq, const T* r, int cols, T* a, std::int64_t lda, T* v,
                           std::int64_t ldv, T* t, std::int64_t ldt, T* tau, T* u_inverse) {
  __shared__ T lu[32][33];  // lu[row][column]
  __shared__ T tt[32][33];
  __shared__ T inverse[32][33];
  __shared__ T sign[32];
  const int p = threadIdx.x / 32, l = threadIdx.x % 32;
  const bool inside = p < cols && l < cols;
  lu[p][l] = inside ? q[p + l * ldq] : T(0);
  __syncthreads();
  for (int i = 0; i < cols; ++i) {
    if (threadIdx.x == 0) {
      sign[i] = lu[i][i] >= T(0) ? T(-1) : T(1);
      lu[i][i] -= sign[i];
    }
    __syncthreads();
    if (l == i && p > i && p < cols) lu[p][i] /= lu[i][i];
    __syncthreads();
    if (inside && p > i && l > i) lu[p][l] -= lu[p][i] * lu[i][l];
    __syncthreads();
  }
  tt[p][l] = inside && p <= l ? -lu[p][l] * sign[l] : T(0);
  __syncthreads();
  for (int k = 0; k < cols; ++k) {  // column k of T is final: t_pc -= t_pk l_ck for c > k
    if (inside && l > k) tt[p][l] -= tt[p][k] * lu[l][k];
    __syncthreads();
  }
  inverse[p][l] = inside && p == l ? T(1) : T(0);
  __syncthreads();
  for (int i = cols - 1; i >= 0; --i) {  // X(i, :) /= u_ii; X(0:i, :) -= U(0:i, i) X(i, :)
    if (p == i && inside) inverse[i][l] /= lu[i][i];
    __syncthreads();
    if (p < i && inside) inverse[p][l] -= lu[p][i] * inverse[i][l];
    __syncthreads();
  }
  if (inside) {
    if (p <= l) t[p + l * ldt] = tt[p][l];
    a[p + l * lda] = p <= l ? sign[p] * r[p + l * cols] : lu[p][l];
    v[p + l * ldv] = p < l ? T(0) : p == l ? T(1) : lu[p][l];
    if (p == l) tau[l] = tt[l][l];
  }
  u_inverse[p + l * 32] = p <= l && inside ? inverse[p][l] : T(0);
}

// Rows cols .. rows-1 of V: x = q U^-1 for each row (q's row loaded first), a row per thread,
// into a and v.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    reconstruct_rows_kernel(const T* __restrict__ q, std::int64_t ldq, std::int64_t rows, int cols,
                            const T* __restrict__ u_inverse, T* __restrict__ a, std::int64_t lda, T* __restrict__ v,
                            std::int64_t ldv) {
  __shared__ T inverse[32 * 32];
  for (int e = threadIdx.x; e < 32 * 32; e += kRowThreads) inverse[e] = u_inverse[e];
  __syncthreads();
  for (std::int64_t i = cols + blockIdx.x * std::int64_t(kRowThreads) + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * kRowThreads) {
    T row[kTsqrMaxCols];
#pragma unroll
    for (int k = 0; k < kTsqrMaxCols; ++k) row[k] = k < cols ? q[i + k * ldq] : T(0);
    for (int col = 0; col < cols; ++col) {
      T x = 0;
#pragma unroll
      for (int k = 0; k < kTsqrMaxCols; ++k) x += row[k] * inverse[k + col * 32];  // zeros below the diagonal
      a[i + col * lda] = x;
      v[i + col * ldv] = x;
    }
  }
}

// The upper levels' plan from `rows` stacked rows up: per level 8 or 16 warps (256 or 512 rows a
// block in FP32), the cheapest in all, a level of 16 warps costing 1.3 of one of 8 (the H100's
// latency-bound columns, docs/least_squares.md). Appends to `plan`; returns
// the cost.
template <class T>
double plan_upper_levels(std::int64_t rows, int cols, std::vector<typename TsqrPanel<T>::Level>& plan) {
  double best = INFINITY;
  std::vector<typename TsqrPanel<T>::Level> best_plan;
  for (const int warps : {kLeafWarps, kUpperWarps}) {
    const std::int64_t block_rows = std::int64_t(warps) * kRowsPerThread<T>;
    const std::int64_t blocks = (rows + block_rows - 1) / block_rows;
    std::vector<typename TsqrPanel<T>::Level> candidate{{rows, blocks, warps}};
    double cost = warps == kLeafWarps ? 1.0 : 1.3;
    if (blocks > 1) cost += plan_upper_levels<T>(blocks * cols, cols, candidate);  // <= rows / 4
    if (cost < best) best = cost, best_plan = candidate;
  }
  plan.insert(plan.end(), best_plan.begin(), best_plan.end());
  return best;
}

}  // namespace

template <class T>
std::vector<typename TsqrPanel<T>::Level> TsqrPanel<T>::levels(std::int64_t rows, int cols) {
  const std::int64_t blocks = (rows + kTsqrBlockRows<T> - 1) / kTsqrBlockRows<T>;
  std::vector<Level> out{{rows, blocks, kLeafWarps}};
  if (blocks > 1) plan_upper_levels<T>(blocks * cols, cols, out);
  return out;
}

template <class T>
TsqrPanel<T>::TsqrPanel(Context& ctx, std::int64_t max_rows) : ctx_(ctx), max_rows_(max_rows) {
  // Sizes for any panel's plan: 8-warp blocks at every level leave the most rows and blocks at
  // each level, for the most levels; 32 columns and max_rows rows, the most of each.
  std::int64_t stacked = 0, taus = 0;
  for (std::int64_t rows = std::max<std::int64_t>(max_rows, 1);;) {
    const std::int64_t blocks = (rows + kTsqrBlockRows<T> - 1) / kTsqrBlockRows<T>;
    stacked += rows;
    taus += blocks * kTsqrMaxCols;
    if (blocks == 1) break;
    rows = blocks * kTsqrMaxCols;
  }
  stacked -= std::max<std::int64_t>(max_rows, 1);  // level 0 lives in the panel itself
  stack_ = DeviceBuffer<T>(ctx, std::max<std::int64_t>(stacked * kTsqrMaxCols, 1));
  q_up_ = DeviceBuffer<T>(ctx, std::max<std::int64_t>(stacked * kTsqrMaxCols, 1));
  q_ = DeviceBuffer<T>(ctx, std::max<std::int64_t>(max_rows * kTsqrMaxCols, 1));
  tau_ = DeviceBuffer<T>(ctx, taus);
  r_ = DeviceBuffer<T>(ctx, kTsqrMaxCols * kTsqrMaxCols);
  u_ = DeviceBuffer<T>(ctx, kTsqrMaxCols * kTsqrMaxCols);
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(factor_blocks_kernel<T, kLeafWarps>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           int(kTileBytes<T, kLeafWarps>)));
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(factor_blocks_kernel<T, kUpperWarps>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           int(kTileBytes<T, kUpperWarps>)));
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(form_q_kernel<T, kLeafWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           int(kReflectorBytes<T, kLeafWarps>)));
  MIXSOLVE_CUDA_CHECK(cudaFuncSetAttribute(form_q_kernel<T, kUpperWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           int(kReflectorBytes<T, kUpperWarps>)));
}

template <class T>
void TsqrPanel<T>::factor(T* a, std::int64_t lda, std::int64_t rows, int cols, T* v, std::int64_t ldv, T* t,
                          std::int64_t ldt, T* tau) {
  if (cols < 1 || cols > kTsqrMaxCols || rows < cols || rows > max_rows_)
    throw InvalidArgument("TsqrPanel: a panel of " + std::to_string(rows) + " x " + std::to_string(cols) +
                          " is outside 1 <= cols <= 32, cols <= rows <= " + std::to_string(max_rows_));
  cudaStream_t stream = ctx_.stream();
  const std::vector<Level> tree = levels(rows, cols);
  // Level l's factorized input: x[l] (leading dimension ld[l]); level 0 is the panel.
  std::vector<T*> x(tree.size()), q(tree.size()), taus(tree.size());
  std::vector<std::int64_t> ld(tree.size());
  x[0] = a;
  ld[0] = lda;
  q[0] = q_.data();
  std::int64_t stack_offset = 0, tau_offset = 0;
  for (std::size_t l = 0; l < tree.size(); ++l) {
    taus[l] = tau_.data() + tau_offset;
    tau_offset += tree[l].blocks * cols;
    if (l == 0) continue;
    x[l] = stack_.data() + stack_offset;
    q[l] = q_up_.data() + stack_offset;
    ld[l] = tree[l].rows;
    stack_offset += tree[l].rows * cols;
  }
  for (std::size_t l = 0; l < tree.size(); ++l) {
    const bool root = l + 1 == tree.size();
    const unsigned grid = unsigned(tree[l].blocks);
    T* r = root ? r_.data() : x[l + 1];
    const std::int64_t ldr = root ? cols : ld[l + 1];
    if (tree[l].warps == kLeafWarps)
      factor_blocks_kernel<T, kLeafWarps><<<grid, kLeafWarps * 32, kTileBytes<T, kLeafWarps>, stream>>>(
          x[l], ld[l], tree[l].rows, tree[l].blocks, cols, taus[l], r, ldr);
    else
      factor_blocks_kernel<T, kUpperWarps><<<grid, kUpperWarps * 32, kTileBytes<T, kUpperWarps>, stream>>>(
          x[l], ld[l], tree[l].rows, tree[l].blocks, cols, taus[l], r, ldr);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  for (std::size_t l = tree.size(); l-- > 0;) {
    const bool root = l + 1 == tree.size();
    const unsigned grid = unsigned(tree[l].blocks);
    const T* c = root ? nullptr : q[l + 1];
    const std::int64_t ldc = root ? 0 : ld[l + 1], ldq = l == 0 ? rows : ld[l];
    if (tree[l].warps == kLeafWarps)
      form_q_kernel<T, kLeafWarps><<<grid, kLeafWarps * 32, kReflectorBytes<T, kLeafWarps>, stream>>>(
          x[l], ld[l], tree[l].rows, tree[l].blocks, cols, taus[l], c, ldc, q[l], ldq);
    else
      form_q_kernel<T, kUpperWarps><<<grid, kUpperWarps * 32, kReflectorBytes<T, kUpperWarps>, stream>>>(
          x[l], ld[l], tree[l].rows, tree[l].blocks, cols, taus[l], c, ldc, q[l], ldq);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  reconstruct_top_kernel<T>
      <<<1, 1024, 0, stream>>>(q_.data(), rows, r_.data(), cols, a, lda, v, ldv, t, ldt, tau, u_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  if (rows > cols) {
    const unsigned grid = unsigned(std::min<std::int64_t>((rows - cols + kRowThreads - 1) / kRowThreads, 4096));
    reconstruct_rows_kernel<T>
        <<<grid, kRowThreads, 0, stream>>>(q_.data(), rows, rows, cols, u_.data(), a, lda, v, ldv);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
}

template class TsqrPanel<float>;
template class TsqrPanel<double>;

}  // namespace mixsolve::solvers_detail
