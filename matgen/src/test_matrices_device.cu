// SPDX-License-Identifier: BSD-3-Clause
// Device generation of the LAWN-41 test matrices (matgen/test_matrices.hpp) for large n: Gaussian
// matrices from the counter-based generator, orthogonal factors from cuSOLVER's QR (geqrf +
// orgqr, with Mezzadri's sign correction), and the products through cuBLAS DGEMM.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <string>
#include <vector>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/internal/launch.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/test_matrices.hpp"

namespace mixsolve {

namespace {

__global__ void gaussian_kernel(double* g, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < count;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const double u1 = (double(random_bits(seed, 2 * idx) >> 11) + 0.5) * 0x1p-53;
    const double u2 = double(random_bits(seed, 2 * idx + 1) >> 11) * 0x1p-53;
    g[idx] = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  }
}

// Column j of q times sign(r_jj) (Mezzadri), r's diagonal saved before orgqr overwrites it,
// then times d_j (d may be null): q diag(sign(r)) diag(d); q rows x cols.
__global__ void scale_columns_kernel(double* q, std::int64_t rows, std::int64_t cols, const double* r_diagonal,
                                     const double* d) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < rows * cols;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t j = idx / rows;
    double f = r_diagonal[j] < 0 ? -1.0 : 1.0;
    if (d) f *= d[j];
    q[idx] *= f;
  }
}

__global__ void copy_diagonal_kernel(const double* a, std::int64_t ld, std::int64_t n, double* out) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j < n) out[j] = a[j + j * ld];
}

// a := scale c (rows x cols), or scale (c + c^T) / 2 (square).
__global__ void symmetrize_and_scale_kernel(double* a, std::int64_t lda, const double* c, std::int64_t rows,
                                            std::int64_t cols, double scale, bool symmetric) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < rows * cols;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    const double v = symmetric ? 0.5 * (c[i + j * rows] + c[j + i * rows]) : c[i + j * rows];
    a[i + j * lda] = scale * v;
  }
}

__global__ void dominant_diagonal_kernel(double* a, std::int64_t lda, std::int64_t n) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j) s += fabs(a[i + j * lda]);
  a[i + i * lda] += a[i + i * lda] >= 0 ? s : -s;
}

using mixsolve::detail::blocks_for;

// A Haar-random rows x cols matrix with orthonormal columns (rows >= cols) in q, columns scaled
// by d (if non-null).
void random_orthogonal_device(cusolverDnHandle_t solver, cudaStream_t stream, std::int64_t rows, std::int64_t cols,
                              std::uint64_t seed, double* q, const double* d) {
  const int m = int(rows), n = int(cols);
  gaussian_kernel<<<blocks_for(rows * cols), 256, 0, stream>>>(q, rows * cols, seed);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  DeviceBuffer<double> tau(cols), r_diagonal(cols);
  DeviceBuffer<int> info(1);
  int lwork_qr = 0, lwork_q = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf_bufferSize(solver, m, n, q, m, &lwork_qr));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDorgqr_bufferSize(solver, m, n, n, q, m, tau.data(), &lwork_q));
  DeviceBuffer<double> work(std::max(std::max(lwork_qr, lwork_q), 1));
  // cuSOLVER's geqrf reads words of tau and of its workspace before writing them (compute-sanitizer
  // initcheck, cuSOLVER 12 on an H200): zeroed, no read is of uninitialized memory.
  tau.set_zero(stream);
  work.set_zero(stream);
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf(solver, m, n, q, m, tau.data(), work.data(), int(work.size()), info.data()));
  copy_diagonal_kernel<<<blocks_for(cols), 256, 0, stream>>>(q, rows, cols, r_diagonal.data());
  MIXSOLVE_CUSOLVER_CHECK(
      cusolverDnDorgqr(solver, m, n, n, q, m, tau.data(), work.data(), int(work.size()), info.data()));
  scale_columns_kernel<<<blocks_for(rows * cols), 256, 0, stream>>>(q, rows, cols, r_diagonal.data(), d);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));  // tau, work and r_diagonal go out of scope
}

}  // namespace

void generate_test_matrix_on_device(const TestMatrixSpec& spec, const MatrixView<double>& a, CUstream_st* stream) {
  detail::check_view("generate_test_matrix_on_device", "a", a);
  if (a.memory != Memory::Device) throw InvalidArgument("generate_test_matrix_on_device: a must be a device matrix");
  if (a.rows != a.cols && (a.rows < a.cols || spec.family != MatrixFamily::Svd || spec.dominant))
    throw InvalidArgument("generate_test_matrix_on_device: a is " + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + "; only the svd family without dominant has m > n");
  const std::int64_t m = a.rows, n = a.cols;
  if (n == 0) return;
  std::vector<double> s = spectrum_values(spec, n);
  if (spec.family == MatrixFamily::Heev)
    for (std::int64_t i = 0; i < n; ++i)
      if (random_bits(spec.seed ^ 0x51611ull, std::uint64_t(i)) & 1) s[i] = -s[i];
  DeviceBuffer<double> d(n), u(m * n), v(n * n), c(m * n);
  d.copy_from_host(s, stream);
  cusolverDnHandle_t solver = nullptr;
  cublasHandle_t blas = nullptr;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver, stream));
  MIXSOLVE_CUBLAS_CHECK(cublasCreate(&blas));
  MIXSOLVE_CUBLAS_CHECK(cublasSetStream(blas, stream));
  try {
    const bool symmetric = spec.family != MatrixFamily::Svd;
    // A = (U D) V^T, with V = U for the symmetric families.
    random_orthogonal_device(solver, stream, m, n, spec.seed, u.data(), d.data());
    if (symmetric)
      random_orthogonal_device(solver, stream, n, n, spec.seed, v.data(), nullptr);
    else
      random_orthogonal_device(solver, stream, n, n, spec.seed + 0x9e3779b9ull, v.data(), nullptr);
    const double one = 1.0, zero = 0.0;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, int(m), int(n), int(n), &one, u.data(), int(m),
                                      v.data(), int(n), &zero, c.data(), int(m)));
    symmetrize_and_scale_kernel<<<blocks_for(m * n), 256, 0, stream>>>(a.data, a.ld, c.data(), m, n, 1.0, symmetric);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    if (spec.dominant) dominant_diagonal_kernel<<<blocks_for(n), 256, 0, stream>>>(a.data, a.ld, n);
    if (spec.scale != 1.0) {
      for (std::int64_t j = 0; j < n; ++j)
        MIXSOLVE_CUBLAS_CHECK(cublasDscal(blas, int(m), &spec.scale, a.data + j * a.ld, 1));
    }
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    cublasDestroy(blas);
    cusolverDnDestroy(solver);
    throw;
  }
  cublasDestroy(blas);
  cusolverDnDestroy(solver);
}

}  // namespace mixsolve
