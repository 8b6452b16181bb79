// SPDX-License-Identifier: BSD-3-Clause
#include "qr/cuda/pivoted_cholesky.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"

namespace mixsolve::solvers_detail {

namespace {

constexpr int kPivotPanel = 32;     // columns between two updates of the trailing Schur complement
constexpr int kPanelThreads = 1024;  // one block per panel: the steps are a chain, not parallel work

// The largest (value, index) of a block, the smaller index on ties (pstrf's first maximum).
struct Candidate {
  double value;
  std::int64_t index;
};

__device__ bool better(const Candidate& a, const Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

__device__ Candidate block_argmax(Candidate c, Candidate* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const Candidate other{__shfl_xor_sync(0xffffffffu, c.value, offset),
                          __shfl_xor_sync(0xffffffffu, c.index, offset)};
    if (better(other, c)) c = other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = c;
  __syncthreads();
  if (warp == 0) {
    c = lane < int(blockDim.x / 32) ? scratch[lane] : Candidate{-INFINITY, -1};
    for (int offset = 16; offset > 0; offset /= 2) {
      const Candidate other{__shfl_xor_sync(0xffffffffu, c.value, offset),
                            __shfl_xor_sync(0xffffffffu, c.index, offset)};
      if (better(other, c)) c = other;
    }
    if (lane == 0) scratch[32] = c;
  }
  __syncthreads();
  return scratch[32];
}

// Steps s .. min(s + kPivotPanel, steps) - 1 of the pivoted Cholesky factorization of g (n x n,
// full symmetric storage, rows and columns >= s the Schur complement after the earlier panels).
// d[i] (i >= s): the current Schur diagonal, g(i,i) less the squares of L(i, s .. j-1), contiguous
// for the pivot search. status[0] becomes 1 and status[1] the rank at the first step whose largest
// diagonal entry is at most tol_sq; the kernel does nothing once status[0] is set. Each step is a
// chain of dependent global memory round trips, so the L column's sum over the panel's earlier
// columns loads them eight at a time (row j's entries from shared memory).
__global__ void __launch_bounds__(kPanelThreads)
    pivot_panel_kernel(double* g, double* l, double* d, std::int64_t* perm, int* status, std::int64_t n, std::int64_t s,
                       std::int64_t steps, double tol_sq) {
  __shared__ Candidate scratch[33];
  __shared__ double row_j[kPivotPanel];  // L(j, s .. j-1)
  if (status[0] != 0) return;
  const std::int64_t end = s + kPivotPanel < steps ? s + kPivotPanel : steps;
  const int t = threadIdx.x, threads = blockDim.x;
  for (std::int64_t i = s + t; i < n; i += threads) d[i] = g[i + i * n];
  __syncthreads();
  for (std::int64_t j = s; j < end; ++j) {
    Candidate mine{-INFINITY, -1};
    for (std::int64_t i = j + t; i < n; i += threads) {
      const Candidate c{d[i], i};
      if (better(c, mine)) mine = c;
    }
    const Candidate pivot = block_argmax(mine, scratch);
    // A NaN diagonal entry is never chosen (better() is false for it); only NaN left ends the
    // steps, through -INFINITY.
    if (!(pivot.value > tol_sq)) {
      if (t == 0) {
        status[0] = 1;
        status[1] = int(j);
      }
      return;
    }
    const std::int64_t p = pivot.index;
    if (p != j) {  // P^T G P: the columns, then the rows (both only where they are still used)
      for (std::int64_t i = s + t; i < n; i += threads) {
        const double v = g[i + j * n];
        g[i + j * n] = g[i + p * n];
        g[i + p * n] = v;
      }
      __syncthreads();
      for (std::int64_t c = s + t; c < n; c += threads) {
        const double v = g[j + c * n];
        g[j + c * n] = g[p + c * n];
        g[p + c * n] = v;
      }
      for (std::int64_t c = t; c < j; c += threads) {
        const double v = l[j + c * n];
        l[j + c * n] = l[p + c * n];
        l[p + c * n] = v;
      }
      if (t == 0) {
        const double w = d[j];
        d[j] = d[p];
        d[p] = w;
        const std::int64_t q = perm[j];
        perm[j] = perm[p];
        perm[p] = q;
      }
      __syncthreads();
    }
    const int count = int(j - s);  // the panel's columns before j
    if (t < count) row_j[t] = l[j + (s + t) * n];
    __syncthreads();
    // Column j of L from G's column and the panel's earlier columns (the earlier panels are in
    // g already).
    const double l_jj = sqrt(pivot.value);
    for (std::int64_t i = j + 1 + t; i < n; i += threads) {
      double sum = g[i + j * n];
      for (int c0 = 0; c0 < count; c0 += 8) {
        double part = 0;
#pragma unroll
        for (int c = 0; c < 8; ++c)
          if (c0 + c < count) part += l[i + (s + c0 + c) * n] * row_j[c0 + c];
        sum -= part;
      }
      const double l_ij = sum / l_jj;
      l[i + j * n] = l_ij;
      d[i] -= l_ij * l_ij;
    }
    if (t == 0) l[j + j * n] = l_jj;
    __syncthreads();
  }
}

// r (rank x n, column major) := the leading rows of R = L^T: r_ij = L(j, i) for j >= i, else 0.
__global__ void leading_rows_kernel(const double* l, std::int64_t n, std::int64_t rank, double* r) {
  for (std::int64_t j = blockIdx.y; j < n; j += gridDim.y)
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rank;
         i += std::int64_t(gridDim.x) * blockDim.x)
      r[i + j * rank] = j >= i ? l[j + i * n] : 0.0;
}

// y = g v for the power iteration, with the Rayleigh quotient's pieces: out[0] = v . g v.
double rayleigh_step(cublasHandle_t handle, const double* g, std::int64_t n, double* v, double* y) {
  const double one = 1, zero = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemv(handle, CUBLAS_OP_N, int(n), int(n), &one, g, int(n), v, 1, &zero, y, 1));
  double quotient = 0, norm = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDdot(handle, int(n), v, 1, y, 1, &quotient));
  MIXSOLVE_CUBLAS_CHECK(cublasDnrm2(handle, int(n), y, 1, &norm));
  if (norm > 0) {
    const double inverse = 1 / norm;
    MIXSOLVE_CUBLAS_CHECK(cublasDscal(handle, int(n), &inverse, y, 1));
  }
  return quotient;
}

}  // namespace

LeadingPivots pivot_by_gram_cholesky(Context& ctx, const double* r, std::int64_t p, std::int64_t n, std::int64_t ld,
                                    double relative_threshold) {
  LeadingPivots out;
  out.pivots.resize(std::size_t(n));
  std::iota(out.pivots.begin(), out.pivots.end(), std::int64_t(0));
  if (n == 0 || p == 0) return out;
  cudaStream_t stream = ctx.stream();
  cublasHandle_t handle = ctx.cublas();
  DeviceBuffer<double> g(ctx, std::size_t(n * n)), l(ctx, std::size_t(n * n)), diagonal(ctx, std::size_t(n));
  const double one = 1, zero = 0, minus_one = -1;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(n), int(p), &one, r, int(ld), r,
                                    int(ld), &zero, g.data(), int(n)));

  // sigma_max^2 >= the largest diagonal entry of G and the Rayleigh quotients of the iterates
  // (from the host estimate's fixed start, minimum_norm.cpp's largest_singular_value).
  int largest = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasIdamax(handle, int(n), g.data(), int(n + 1), &largest));
  double largest_square = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&largest_square, g.data() + std::int64_t(largest - 1) * (n + 1), sizeof(double),
                                      cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (!(largest_square > 0)) return out;  // R = 0: rank 0
  {
    std::vector<double> start(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) start[std::size_t(j)] = 1.0 + 0.5 * std::sin(double(j + 1));
    const double norm = std::sqrt(std::inner_product(start.begin(), start.end(), start.begin(), 0.0));
    for (double& e : start) e /= norm;
    DeviceBuffer<double> v(ctx, std::size_t(n)), y(ctx, std::size_t(n));
    v.copy_from_host(start, stream);
    for (int step = 0; step < 12; ++step) {
      largest_square = std::max(largest_square, rayleigh_step(handle, g.data(), n, v.data(), y.data()));
      std::swap(v, y);
    }
  }
  out.sigma_max = std::sqrt(largest_square);
  const double threshold = relative_threshold * out.sigma_max;

  std::vector<int> status = {0, 0};
  DeviceBuffer<int> status_d(ctx, 2);
  status_d.copy_from_host(status, stream);
  DeviceBuffer<std::int64_t> perm(ctx, std::size_t(n));
  perm.copy_from_host(out.pivots, stream);
  l.set_zero(stream);
  const std::int64_t steps = std::min(p, n);
  std::int64_t rank = steps;
  for (std::int64_t s = 0; s < steps; s += kPivotPanel) {
    pivot_panel_kernel<<<1, kPanelThreads, 0, stream>>>(g.data(), l.data(), diagonal.data(), perm.data(),
                                                        status_d.data(), n, s, steps, threshold * threshold);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    status_d.copy_to_host(status.data(), 2, stream);
    if (status[0] != 0) {
      rank = status[1];
      break;
    }
    // The trailing Schur complement: G22 -= L21 L21^T over this panel's columns.
    const std::int64_t e = std::min(s + kPivotPanel, steps);
    if (e < n)
      MIXSOLVE_CUBLAS_CHECK(cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, int(n - e), int(n - e), int(e - s),
                                        &minus_one, l.data() + e + s * n, int(n), l.data() + e + s * n, int(n), &one,
                                        g.data() + e + e * n, int(n)));
  }
  out.rank = rank;
  perm.copy_to_host(out.pivots.data(), std::size_t(n), stream);
  // R's leading rows, formed on the device (the host's strided transposition cost more than the
  // copy).
  out.r.assign(std::size_t(rank * n), 0.0);
  if (rank > 0) {
    DeviceBuffer<double> rows(ctx, std::size_t(rank * n));
    const dim3 grid(unsigned(std::min<std::int64_t>((rank + 255) / 256, 64)),
                    unsigned(std::min<std::int64_t>(n, 4096)));
    leading_rows_kernel<<<grid, 256, 0, stream>>>(l.data(), n, rank, rows.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    rows.copy_to_host(out.r.data(), out.r.size(), stream);
  }
  return out;
}

}  // namespace mixsolve::solvers_detail
