// SPDX-License-Identifier: BSD-3-Clause
// The device Cholesky (device_cholesky.hpp): the recursion on the host, the leaf kernel, and the
// rewrite into LU form.
#include "cholesky/cuda/device_cholesky.hpp"

#include <algorithm>
#include <type_traits>

#include "lu/cuda/lu_kernels.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/gemm/problem.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail::device_cholesky {

namespace {

// Leading dimension of a leaf in shared memory: its rows and 4 more, a multiple of 4 so that the
// trailing update loads 4 rows of a column as one 16-byte word (float4; two for double); a warp's
// lanes walk down a column elsewhere, conflict-free with any leading dimension.
constexpr int kLeafLd = int(kCholeskyDeviceLeaf) + 4;
// The trailing update's tiles: kLeafTile x kLeafTile entries per thread.
constexpr int kLeafTile = 4;
constexpr int kLeafThreads = 512;
static_assert(kLeafThreads >= int(kCholeskyDeviceLeaf), "a thread per row of a leaf's L21");

// The largest symmetric update taken as one product (Fill::Lower): its split operands, 2 m
// inner_chunk x 4 bytes for halfhalf, stay within those of the recursion's largest triangular
// solve at n = 32768 (16384 x 8192).
constexpr std::int64_t kWholeUpdateMaxRows = 8192;

// Columns of a leaf's panels: one warp factors a panel's diagonal block in registers.
constexpr int kLeafPanel = 32;

// v[0..3] = p[0..3] from shared memory in 16-byte words (p 16-byte aligned).
__device__ inline void load_four(const float* p, float (&v)[4]) {
  const float4 w = *reinterpret_cast<const float4*>(p);
  v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
}
__device__ inline void load_four(const double* p, double (&v)[4]) {
  const double2 w0 = reinterpret_cast<const double2*>(p)[0], w1 = reinterpret_cast<const double2*>(p)[1];
  v[0] = w0.x, v[1] = w0.y, v[2] = w1.x, v[3] = w1.y;
}

// Factors the m x m leaf (m <= kCholeskyDeviceLeaf) at a (leading dimension ld), L into its lower
// triangle, in T's arithmetic in shared memory, blocked in panels of kLeafPanel columns (the
// right-looking blocked Cholesky, Golub & Van Loan, Matrix Computations, 4th ed., alg. 4.2.2 in
// the form of LAPACK's dpotrf): per panel, (1) one warp factors the 32 x 32 diagonal block with
// its rows in the lanes' registers, a shuffle per entry and no barrier; (2) a thread per row below
// solves L21 = A21 L11^-T by substitution; (3) the warps update the trailing lower triangle,
// A22 -= L21 L21^T. Three barriers a panel instead of one a column (the unblocked elimination took
// ~118 us a leaf at 128 columns on an H200, its 128 barriers in series). The leaf is padded to
// whole panels with the identity, which leaves L's first m columns as they are. A pivot that is
// not positive records its column (column0 + j) and value in *verdict and *pivot and ends the
// kernel; a leaf after an earlier breakdown does nothing.
template <class T>
__global__ void __launch_bounds__(kLeafThreads) leaf_cholesky_kernel(T* a, std::int64_t m, std::int64_t ld,
                                                                      std::int64_t column0, long long* verdict,
                                                                      double* pivot_out) {
  if (*verdict >= 0) return;
  extern __shared__ __align__(16) unsigned char leaf_memory[];
  __shared__ int broken;                         // the leaf's column whose pivot was not positive, or -1
  __shared__ T reciprocal_diagonal[kLeafPanel];  // 1 / L(p + j, p + j) of the current panel
  T* s = reinterpret_cast<T*>(leaf_memory);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int rows = int(m), padded = (rows + kLeafPanel - 1) / kLeafPanel * kLeafPanel;
  {  // A's lower triangle, 0 above it (the update's scratch there), kStaged loads in flight
     // before their stores (a load and a store to shared memory in turn wait one memory latency
     // each: 32 in series per thread)
    constexpr int kPerThread = int(kCholeskyDeviceLeaf * kCholeskyDeviceLeaf) / kLeafThreads, kStaged = 8;
    static_assert(kPerThread * kLeafThreads == int(kCholeskyDeviceLeaf * kCholeskyDeviceLeaf) &&
                      kPerThread % kStaged == 0, "whole leaves");
    for (int q0 = 0; q0 < kPerThread; q0 += kStaged) {
      T staged[kStaged];
#pragma unroll
      for (int q = 0; q < kStaged; ++q) {  // consecutive threads, consecutive rows of a column
        const int idx = int(threadIdx.x) + (q0 + q) * kLeafThreads, i = idx % int(kCholeskyDeviceLeaf),
                  c = idx / int(kCholeskyDeviceLeaf);
        staged[q] = i >= c && i < rows && c < rows ? a[i + c * ld] : T(0);
      }
#pragma unroll
      for (int q = 0; q < kStaged; ++q) {
        const int idx = int(threadIdx.x) + (q0 + q) * kLeafThreads, i = idx % int(kCholeskyDeviceLeaf),
                  c = idx / int(kCholeskyDeviceLeaf);
        if (i < padded && c < padded) s[i + c * kLeafLd] = i < rows && c < rows ? staged[q] : T(i == c);
      }
    }
  }
  if (threadIdx.x == 0) broken = -1;
  __syncthreads();
  for (int p = 0; p < padded; p += kLeafPanel) {
    if (warp == 0) {  // (1) lane i holds row p + i of the diagonal block, its entries left of the diagonal
      T row[kLeafPanel];
#pragma unroll
      for (int c = 0; c < kLeafPanel; ++c) row[c] = c <= lane ? s[p + lane + (p + c) * kLeafLd] : T(0);
      bool positive = true;  // the same in every lane: the pivot comes from one lane
#pragma unroll
      for (int j = 0; j < kLeafPanel; ++j) {
        const T pivot = __shfl_sync(0xffffffffu, row[j], j);
        if (positive && !(pivot > T(0))) {
          positive = false;
          if (lane == 0) {
            broken = p + j;
            *verdict = column0 + p + j;
            *pivot_out = double(pivot);
          }
        }
        if (positive) {
          const T root = sqrt(pivot), reciprocal = T(1) / root;
          row[j] = lane == j ? root : row[j] * reciprocal;  // L(p + lane, p + j); 0 above the diagonal
          if (lane == 0) reciprocal_diagonal[j] = reciprocal;
#pragma unroll
          for (int c = j + 1; c < kLeafPanel; ++c) {
            const T l_cj = __shfl_sync(0xffffffffu, row[j], c);
            if (lane >= c) row[c] -= row[j] * l_cj;
          }
        }
      }
#pragma unroll
      for (int c = 0; c < kLeafPanel; ++c)
        if (c <= lane) s[p + lane + (p + c) * kLeafLd] = row[c];
    }
    __syncthreads();
    if (broken >= 0) return;  // the same in every thread: all leave together
    const int below = padded - p - kLeafPanel;
    if (int(threadIdx.x) < below) {  // (2) row r of L21: x = a(r, p..) L11^-T, forward substitution
      const int r = p + kLeafPanel + int(threadIdx.x);
      T x[kLeafPanel];
#pragma unroll
      for (int j = 0; j < kLeafPanel; ++j) {
        T v = s[r + (p + j) * kLeafLd];
#pragma unroll
        for (int c = 0; c < j; ++c) v -= x[c] * s[p + j + (p + c) * kLeafLd];
        x[j] = v * reciprocal_diagonal[j];
        s[r + (p + j) * kLeafLd] = x[j];
      }
    }
    __syncthreads();
    // (3) s(i, c) -= L21(i, :) L21(c, :)^T on the trailing lower triangle in kLeafTile x
    // kLeafTile tiles: warp w takes the tile columns w, w + warps, ..., its lane l the tile l
    // below the diagonal one; per step t the lane loads its 4 rows of L21's column t as one word
    // and the tile column's 4 (the same in the warp: a broadcast). A diagonal tile computes its
    // upper entries too, which are scratch. (One column a warp and a load per product, as before,
    // made the shared-memory loads bound the update.)
    const int first = p + kLeafPanel, tiles = (padded - first) / kLeafTile;
    for (int tile_column = warp; tile_column < tiles; tile_column += warps) {
      const int tile_row = tile_column + lane;
      if (tile_row < tiles) {
        const int i0 = first + kLeafTile * tile_row, c0 = first + kLeafTile * tile_column;
        T sums[kLeafTile][kLeafTile] = {};
#pragma unroll 8
        for (int t = 0; t < kLeafPanel; ++t) {
          T rows_t[kLeafTile], columns_t[kLeafTile];
          load_four(s + i0 + (p + t) * kLeafLd, rows_t);
          load_four(s + c0 + (p + t) * kLeafLd, columns_t);
#pragma unroll
          for (int r = 0; r < kLeafTile; ++r)
#pragma unroll
            for (int c = 0; c < kLeafTile; ++c) sums[r][c] += rows_t[r] * columns_t[c];
        }
#pragma unroll
        for (int c = 0; c < kLeafTile; ++c)
#pragma unroll
          for (int r = 0; r < kLeafTile; ++r) s[i0 + r + (c0 + c) * kLeafLd] -= sums[r][c];
      }
    }
    __syncthreads();
  }
  for (int c = warp; c < rows; c += warps)
    for (int i = c + lane; i < rows; i += 32) a[i + c * ld] = s[i + c * kLeafLd];
}

// The LU form of a Cholesky factor (engine.hpp), in 32 x 32 tiles of the lower triangle: tile
// (r0, c0), r0 >= c0, gives L(i, j) / d_j to its own place and d_j L(i, j) to (j, i) in the upper
// triangle, with d_j = L(j, j); the diagonal becomes d_j^2 after every tile has read it
// (lu_form_diagonal_kernel).
template <class T>
__global__ void lu_form_kernel(T* f, std::int64_t n, std::int64_t ld) {
  if (blockIdx.x < blockIdx.y) return;
  __shared__ T tile[32][33];
  __shared__ T diagonal[32];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * 32, c0 = std::int64_t(blockIdx.y) * 32;
  if (threadIdx.y == 0 && c0 + threadIdx.x < n) diagonal[threadIdx.x] = f[(c0 + threadIdx.x) * (ld + 1)];
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t i = r0 + threadIdx.x, j = c0 + k;
    if (i < n && j < n) tile[threadIdx.x][k] = f[i + j * ld];
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t i = r0 + threadIdx.x, j = c0 + k;  // the lower part: L(i, j) / d_j
    if (i < n && j < n && i > j) f[i + j * ld] = tile[threadIdx.x][k] / diagonal[k];
    // the upper part, coalesced along its rows: U(j', i') = d_j' L(i', j') with j' = c0 + lane
    const std::int64_t row = c0 + threadIdx.x, column = r0 + k;  // (j', i')
    if (row < n && column < n && column > row) f[row + column * ld] = diagonal[threadIdx.x] * tile[k][threadIdx.x];
  }
}

template <class T>
__global__ void lu_form_diagonal_kernel(T* f, std::int64_t n, std::int64_t ld) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n; j += std::int64_t(gridDim.x) * blockDim.x)
    f[j * (ld + 1)] *= f[j * (ld + 1)];
}

// Tile pair (r0, c0) and (c0, r0), r0 >= c0: the smallest i + j n with a(i, j) != a(j, i), i > j.
__global__ void asymmetry_kernel(const double* a, std::int64_t lda, std::int64_t n, unsigned long long* first) {
  if (blockIdx.x < blockIdx.y) return;
  __shared__ double upper[32][33];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * 32, c0 = std::int64_t(blockIdx.y) * 32;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {  // upper[j'][i'] = a(c0 + j', r0 + i')
    const std::int64_t row = c0 + threadIdx.x, column = r0 + k;
    if (row < n && column < n) upper[threadIdx.x][k] = a[row + column * lda];
  }
  __syncthreads();
  unsigned long long local = ~0ull;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t i = r0 + threadIdx.x, j = c0 + k;
    if (i < n && j < n && i > j && a[i + j * lda] != upper[k][threadIdx.x])
      local = min(local, static_cast<unsigned long long>(i + j * n));
  }
  // The warp's minimum (a row of the block is one warp), then one atomic where it would lower the
  // minimum so far: on a nonsymmetric A nearly every pair differs, and an atomic per pair on one
  // word took ~0.4 s at n = 32768 (H200, structure auto, 2026-12-03). A stale read of *first only
  // costs an atomic that changes nothing.
  for (int offset = 16; offset > 0; offset /= 2) local = min(local, __shfl_down_sync(0xffffffffu, local, offset));
  if (threadIdx.x == 0 && local < *static_cast<volatile unsigned long long*>(first)) atomicMin(first, local);
}

__global__ void identity_pivots_kernel(int* pivots, std::int64_t n) {
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < n; k += std::int64_t(gridDim.x) * blockDim.x)
    pivots[k] = int(k);
}

}  // namespace

void identity_pivots(int* pivots, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  identity_pivots_kernel<<<unsigned(std::min<std::int64_t>((n + 255) / 256, 1024)), 256, 0, stream>>>(pivots, n);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

std::pair<std::int64_t, std::int64_t> first_asymmetric_pair(const double* a, std::int64_t lda, std::int64_t n,
                                                            unsigned long long* first, cudaStream_t stream) {
  if (n < 2) return {-1, -1};
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), stream));
  const unsigned tiles = unsigned((n + 31) / 32);
  asymmetry_kernel<<<dim3(tiles, tiles), dim3(32, 8), 0, stream>>>(a, lda, n, first);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  unsigned long long index = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&index, first, sizeof index, cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (index == ~0ull) return {-1, -1};
  return {std::int64_t(index % n), std::int64_t(index / n)};
}

DeviceCholesky::DeviceCholesky(Context& ctx, Profile& profile)
    : ctx_(ctx), profile_(profile), verdict_(ctx, 1), pivot_(ctx, 1) {
  MIXSOLVE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinned_verdicts_), (kVerdictLag + 1) * sizeof(long long),
                                    cudaHostAllocDefault));
  for (cudaEvent_t& e : events_) MIXSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

DeviceCholesky::~DeviceCholesky() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  cudaFreeHost(pinned_verdicts_);
}

// A phase of the profile for a scope (its events on `stream`; nothing when profiling is off).
struct ProfiledPhase {
  Profile& profile;
  Profile::Phase phase;
  cudaStream_t stream;
  ProfiledPhase(Profile& p, Profile::Phase ph, cudaStream_t s, Profile::Shape shape = {})
      : profile(p), phase(ph), stream(s) {
    p.start(ph, s, shape);
  }
  ProfiledPhase(const ProfiledPhase&) = delete;
  ProfiledPhase& operator=(const ProfiledPhase&) = delete;
  ~ProfiledPhase() {
    try {
      profile.stop(phase, stream);
    } catch (...) {  // a profile never ends the program
    }
  }
};

// The recursion's operations on the device (recursive_cholesky.hpp), on ctx's stream.
template <class T>
struct DeviceCholeskyOps {
  DeviceCholesky& owner;
  std::int64_t ld;
  bool stopped() const { return owner.stopped_; }
  // Symmetric updates of up to kWholeUpdateMaxRows rows as one product where the backend skips the
  // tiles above the diagonal.
  std::int64_t whole_update_rows() const {
    return owner.update_->skips_upper_fill(owner.ctx_) ? kWholeUpdateMaxRows : 0;
  }
  // cuBLAS's GEMM in T's arithmetic.
  static const gemm::Backend& exact_backend() {
    static const gemm::Backend& exact = gemm::find_backend(std::is_same_v<T, float> ? "cublas-sgemm" : "cublas-dgemm");
    return exact;
  }
  T* base() const { return static_cast<T*>(const_cast<void*>(owner.factors_)); }
  // The leaf's L11^-1, column-major with leading dimension its columns, by the leaf's first column.
  T* inverse_of(std::int64_t column0) const {
    return reinterpret_cast<T*>(owner.inverses_.data()) + column0 / kCholeskyDeviceLeaf * kCholeskyDeviceLeaf *
                                                              kCholeskyDeviceLeaf;
  }
  bool factor_leaf(T* a, std::int64_t m, std::int64_t column0) {
    const std::size_t shared = std::size_t(kLeafLd) * kCholeskyDeviceLeaf * sizeof(T);
    // Per call: the attribute belongs to the current device, and a Context may sit on another.
    MIXSOLVE_CUDA_CHECK(
        cudaFuncSetAttribute(leaf_cholesky_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    owner.profile_.start(Profile::CholeskyLeaf, owner.ctx_.stream());
    leaf_cholesky_kernel<T><<<1, kLeafThreads, shared, owner.ctx_.stream()>>>(a, m, ld, column0, owner.verdict_.data(),
                                                                              owner.pivot_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    owner.profile_.stop(Profile::CholeskyLeaf, owner.ctx_.stream());
    {  // L11^-1 for solve_leaf: L11 read row-major is the upper triangle L11^T, whose row-major
       // inverse L11^-T is L11^-1 column-major.
      const ProfiledPhase phase(owner.profile_, Profile::CholeskyLeafInverse, owner.ctx_.stream());
      invert_upper(a, ld, int(m), inverse_of(column0), owner.ctx_.stream(), true);
    }
    owner.watch_verdicts();
    return true;  // the verdict comes kVerdictLag leaves later (stopped)
  }
  // b := b l^-T = b M^T with M = l^-1 (factor_leaf's inverse of this leaf) as a GEMM in T's
  // arithmetic (cublas-sgemm, cublas-dgemm) into the scratch, then back into b: cublasStrsm took
  // ~44 us a call at n = 32768 (H200), 1024 calls, for products that take a fraction of that (the
  // LU applies its L11^-1 the same way, blocked_lu.cu). l is a leaf's diagonal block.
  void solve_leaf(const T* l, std::int64_t columns, T* b, std::int64_t rows) {
    const ProfiledPhase phase(owner.profile_, Profile::CholeskyLeafSolve, owner.ctx_.stream(), {rows, columns, columns});
    const gemm::Backend& exact = exact_backend();
    const std::int64_t column0 = (l - base()) / ld;
    T* product = reinterpret_cast<T*>(owner.solve_scratch_.data());
    exact.run(owner.ctx_, gemm::to_problem(gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::T, rows, columns, columns, T(1), b,
                                                              ld, inverse_of(column0), columns, T(0), product, rows,
                                                              false}),
              {}, gemm::Execution{false});
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(b, ld * sizeof(T), product, rows * sizeof(T), rows * sizeof(T), columns,
                                          cudaMemcpyDeviceToDevice, owner.ctx_.stream()));
  }
  // c -= a b^T on the update backend in chunks of the inner dimension (inner_chunk_), or, with an
  // inner dimension below tensor_min_inner_, in T's own arithmetic (cuBLAS SGEMM or DGEMM: a
  // tensor-core split's packing launches cost more than such a product's arithmetic); no range
  // check (the engine checks the factors for NaN and Inf).
  void subtract_product(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
                        bool lower = false) {
    const ProfiledPhase phase(owner.profile_, Profile::CholeskyProduct, owner.ctx_.stream(), {m, n, k});
    const gemm::Fill fill = lower ? gemm::Fill::Lower : gemm::Fill::Full;
    if (k < owner.tensor_min_inner_) {
      gemm::GemmArgs<T> g{gemm::Op::N, gemm::Op::T, m, n, k, T(-1), a, ld, b, ld, T(1), c, ld, false, fill};
      exact_backend().run(owner.ctx_, gemm::to_problem(g), {}, gemm::Execution{false});
      return;
    }
    for (std::int64_t p0 = 0; p0 < k; p0 += owner.inner_chunk_) {
      const std::int64_t kc = std::min(owner.inner_chunk_, k - p0);
      gemm::GemmArgs<T> g{gemm::Op::N, gemm::Op::T, m, n, kc, T(-1), a + p0 * ld, ld, b + p0 * ld, ld, T(1), c, ld,
                          false, fill};
      owner.update_->run(owner.ctx_, gemm::to_problem(g), owner.parameters_, gemm::Execution{false});
    }
  }
};

template <class T>
Breakdown DeviceCholesky::run(T* f, std::int64_t n, std::int64_t ld, std::int64_t inner_chunk,
                              const gemm::Backend& update, const gemm::Parameters& parameters,
                              std::int64_t tensor_min_inner) {
  update_ = &update;
  inner_chunk_ = std::max<std::int64_t>(inner_chunk, 1);
  tensor_min_inner_ = tensor_min_inner;
  factors_ = f;
  const std::int64_t leaves = (n + kCholeskyDeviceLeaf - 1) / kCholeskyDeviceLeaf;
  const std::size_t inverse_doubles = (leaves * kCholeskyDeviceLeaf * kCholeskyDeviceLeaf * sizeof(T) + 7) / 8,
                    scratch_doubles = (n * kCholeskyDeviceLeaf * sizeof(T) + 7) / 8;
  inverses_ = DeviceBuffer<double>(ctx_, inverse_doubles);
  solve_scratch_ = DeviceBuffer<double>(ctx_, scratch_doubles);
  parameters_ = parameters;
  stopped_ = false;
  pending_.clear();
  leaf_count_ = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(verdict_.data(), 0xff, sizeof(long long), ctx_.stream()));  // -1
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(pivot_.data(), 0, sizeof(double), ctx_.stream()));
  DeviceCholeskyOps<T> ops{*this, ld};
  RecursiveCholesky<T, DeviceCholeskyOps<T>>(ops, ld, kCholeskyDeviceLeaf).factor(f, n);
  Breakdown result;
  long long column = -1;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&column, verdict_.data(), sizeof column, cudaMemcpyDeviceToHost, ctx_.stream()));
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&result.pivot, pivot_.data(), sizeof(double), cudaMemcpyDeviceToHost, ctx_.stream()));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
  result.column = column;
  pending_.clear();
  transient_bytes_ = inverses_.bytes() + solve_scratch_.bytes();
  inverses_ = DeviceBuffer<double>();  // back to the pool: needed during the factorization only
  solve_scratch_ = DeviceBuffer<double>();
  return result;
}

// After each leaf: its verdict copied to a pinned slot; the host waits for the one kVerdictLag
// leaves back and stops the recursion where it says the factorization broke down.
void DeviceCholesky::watch_verdicts() {
  const std::size_t slot = leaf_count_++ % (kVerdictLag + 1);
  long long* host = pinned_verdicts_ + slot;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(host, verdict_.data(), sizeof(long long), cudaMemcpyDeviceToHost, ctx_.stream()));
  MIXSOLVE_CUDA_CHECK(cudaEventRecord(events_[slot], ctx_.stream()));
  pending_.emplace_back(events_[slot], host);
  if (pending_.size() > kVerdictLag) {
    MIXSOLVE_CUDA_CHECK(cudaEventSynchronize(pending_.front().first));
    if (*pending_.front().second >= 0) stopped_ = true;
    pending_.pop_front();
  }
}

template <class T>
void DeviceCholesky::to_lu_form(T* f, std::int64_t n, std::int64_t ld) {
  if (n == 0) return;
  const unsigned tiles = unsigned((n + 31) / 32);
  lu_form_kernel<T><<<dim3(tiles, tiles), dim3(32, 8), 0, ctx_.stream()>>>(f, n, ld);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  lu_form_diagonal_kernel<T><<<unsigned(std::min<std::int64_t>((n + 255) / 256, 1024)), 256, 0, ctx_.stream()>>>(f, n, ld);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template Breakdown DeviceCholesky::run<float>(float*, std::int64_t, std::int64_t, std::int64_t,
                                              const gemm::Backend&, const gemm::Parameters&, std::int64_t);
template Breakdown DeviceCholesky::run<double>(double*, std::int64_t, std::int64_t, std::int64_t,
                                               const gemm::Backend&, const gemm::Parameters&, std::int64_t);
template void DeviceCholesky::to_lu_form<float>(float*, std::int64_t, std::int64_t);
template void DeviceCholesky::to_lu_form<double>(double*, std::int64_t, std::int64_t);

}  // namespace mixsolve::solvers_detail::device_cholesky
