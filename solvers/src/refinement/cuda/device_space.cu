// SPDX-License-Identifier: BSD-3-Clause
#include "refinement/cuda/device_space.hpp"

#include <cublas_v2.h>

#include <algorithm>

#include "column_max.cuh"
#include "cuda_helpers.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/primitives/error_free.hpp"

namespace mixsolve::solvers_detail {

namespace {

__global__ void column_abs_max_kernel(const double* m, std::int64_t ld, std::int64_t rows, double* out) {
  const double r = column_abs_max_in_block(m, ld, rows, nullptr);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

// The double-double residual (ResidualPrecision::DoubleDouble) in two kernels. The first sums,
// for a block of kResidualThreads rows and a chunk of A's columns, Dot2 partial sums of -A x for
// K right-hand sides (one thread per row: each column's rows are read coalesced, x's chunk from
// shared memory); the second adds a row's partials to b in chunk order, so the result does not
// depend on the order the blocks ran in. Dot2 (Ogita, Rump & Oishi 2005, Algorithm 5.3) keeps the
// rounding errors of every product and sum, so each entry is as accurate as a sum in twice FP64's
// precision, rounded once: |r_computed - r| <= u |r| + gamma_n^2 (|A| |x| + |b|).
constexpr int kResidualThreads = 256;
constexpr int kResidualMaxRhs = 4;      // right-hand sides per pass over A
constexpr int kResidualChunkMax = 1024;  // columns per block: K x chunk of x in shared memory (32 KiB)

// Columns per chunk: about 64 chunks (blocks enough to fill the GPU from n ~ 8192), at least
// 256 columns (fewer partials for small n), at most kResidualChunkMax.
std::int64_t residual_chunk(std::int64_t n) {
  const std::int64_t per_chunk = (n + 63) / 64;
  return std::clamp<std::int64_t>((per_chunk + 31) / 32 * 32, 256, kResidualChunkMax);
}

template <int K>
__global__ void __launch_bounds__(kResidualThreads)
    dot2_residual_partials_kernel(const double* a, std::int64_t lda, std::int64_t n, const double* x,
                                  std::int64_t ldx, std::int64_t chunk, double* partial_sums, double* partial_errors) {
  extern __shared__ double minus_x[];  // K x chunk, right-hand side by right-hand side
  const std::int64_t first_column = std::int64_t(blockIdx.y) * chunk;
  const int columns = int(min(chunk, n - first_column));
  for (int t = threadIdx.x; t < columns; t += blockDim.x)
    for (int k = 0; k < K; ++k) minus_x[k * chunk + t] = -x[first_column + t + k * ldx];
  __syncthreads();
  const std::int64_t row = std::int64_t(blockIdx.x) * kResidualThreads + threadIdx.x;
  if (row >= n) return;  // no barrier follows
  error_free::Dot2 sums[K];
  const double* entry = a + row + first_column * lda;
#pragma unroll 8
  for (int j = 0; j < columns; ++j) {
    const double v = entry[j * lda];
#pragma unroll
    for (int k = 0; k < K; ++k) sums[k].add_product(v, minus_x[k * chunk + j]);
  }
  for (int k = 0; k < K; ++k) {
    const std::int64_t at = (std::int64_t(blockIdx.y) * K + k) * n + row;
    partial_sums[at] = sums[k].sum;
    partial_errors[at] = sums[k].errors;
  }
}

// r(:, k) = b(:, k) + the partials of its chunks (blockIdx.y = k).
__global__ void dot2_residual_finish_kernel(const double* b, std::int64_t ldb, std::int64_t n, int rhs, int chunks,
                                            const double* partial_sums, const double* partial_errors, double* r,
                                            std::int64_t ldr) {
  const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= n) return;
  const int k = int(blockIdx.y);
  error_free::Dot2 total{b[row + k * ldb], 0.0};
  for (int c = 0; c < chunks; ++c) {
    const std::int64_t at = (std::int64_t(c) * rhs + k) * n + row;
    total.add(error_free::Dot2{partial_sums[at], partial_errors[at]});
  }
  r[row + k * ldr] = total.value();
}

}  // namespace

DeviceSpace::DeviceSpace(Context& ctx, const MatrixView<const double>& a) : ctx_(ctx), a_(a) {
  n_ = a.rows;
  column_max_ = DeviceBuffer<double>(ctx_, 64);
}

std::size_t DeviceSpace::space_bytes() const {
  std::size_t bytes = projection_.bytes() + residual_partials_.bytes();
  for (const auto& s : scratch_) bytes += s.bytes();
  return bytes;
}

void DeviceSpace::residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                           const MatrixView<double>& r, ResidualPrecision precision) {
  if (n_ == 0 || x.cols == 0) return;
  profile_.start(Profile::Residual, stream());
  if (precision == ResidualPrecision::DoubleDouble) {
    const std::int64_t chunk = residual_chunk(n_);
    const int chunks = int((n_ + chunk - 1) / chunk);
    const std::size_t partials =
        std::size_t(chunks) * std::size_t(std::min<std::int64_t>(kResidualMaxRhs, x.cols)) * std::size_t(n_);
    if (residual_partials_.size() < 2 * partials) {
      residual_partials_ = DeviceBuffer<double>(ctx_, 2 * partials);
      track_peak();
    }
    double *sums = residual_partials_.data(), *errors = sums + partials;
    const dim3 partial_grid(unsigned((n_ + kResidualThreads - 1) / kResidualThreads), unsigned(chunks));
    for (std::int64_t c = 0; c < x.cols;) {
      const int rhs = x.cols - c >= 4 ? 4 : x.cols - c >= 2 ? 2 : 1;
      const std::size_t shared = std::size_t(rhs * chunk) * sizeof(double);
      const double* xc = x.data + c * x.ld;
      if (rhs == 4)
        dot2_residual_partials_kernel<4><<<partial_grid, kResidualThreads, shared, stream()>>>(a_.data, a_.ld, n_, xc,
                                                                                              x.ld, chunk, sums, errors);
      else if (rhs == 2)
        dot2_residual_partials_kernel<2><<<partial_grid, kResidualThreads, shared, stream()>>>(a_.data, a_.ld, n_, xc,
                                                                                              x.ld, chunk, sums, errors);
      else
        dot2_residual_partials_kernel<1><<<partial_grid, kResidualThreads, shared, stream()>>>(a_.data, a_.ld, n_, xc,
                                                                                              x.ld, chunk, sums, errors);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      dot2_residual_finish_kernel<<<dim3(blocks_for(n_, 1 << 30), unsigned(rhs)), 256, 0, stream()>>>(
          b.data + c * b.ld, b.ld, n_, rhs, chunks, sums, errors, r.data + c * r.ld, r.ld);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      c += rhs;
    }
    profile_.stop(Profile::Residual, stream());
    return;
  }
  copy(b, r);
  const double minus_one = -1.0, one = 1.0;
  if (x.cols == 1)  // DGEMM with one column is not a GEMV in every cuBLAS
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(n_), int(n_), &minus_one, a_.data, int(a_.ld),
                                      x.data, 1, &one, r.data, 1));
  else {
    // Many right-hand sides make the residual a GEMM; dgemm-auto emulates it at DGEMM's accuracy
    // (its default bits) where its model predicts a gain, from about 4096 columns at n = 16384 on
    // the H100. A workspace the emulation grew is counted in the peak, then given back.
    const gemm::Problem product{n_,
                                x.cols,
                                n_,
                                minus_one,
                                one,
                                gemm::Operand::dense(gemm::Format::F64, gemm::Op::N, a_.data, a_.ld),
                                gemm::Operand::dense(gemm::Format::F64, gemm::Op::N, x.data, x.ld),
                                gemm::Output{gemm::Format::F64, r.data, r.ld}};
    const std::size_t workspace_before = ctx_.workspace_capacity();
    gemm::find_backend("dgemm-auto").run(ctx_, product);
    if (ctx_.workspace_capacity() > workspace_before) {  // the emulation grew it
      track_peak();
      ctx_.release_workspace();
    }
  }
  profile_.stop(Profile::Residual, stream());
}

double DeviceSpace::componentwise_backward_error(const double* x, const double* b, const double* r) {
  profile_.start(Profile::Residual, stream());
  if (componentwise_workspace_.size() < std::size_t(2 * n_ + 1))
    componentwise_workspace_ = DeviceBuffer<double>(ctx_, 2 * n_ + 1);
  const double e = mixsolve::componentwise_backward_error(a_, x, b, stream(), componentwise_workspace_.data(), r);
  profile_.stop(Profile::Residual, stream());
  return e;
}

// y := op(A) x by DGEMV on the user's A (multiply, multiply_transpose).
void DeviceSpace::gemv(cublasOperation_t op, const double* x, double* y) {
  profile_.start(Profile::Multiply, stream());
  const double one = 1.0, zero = 0.0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), op, int(n_), int(n_), &one, a_.data, int(a_.ld), x, 1, &zero, y, 1));
  profile_.stop(Profile::Multiply, stream());
}
void DeviceSpace::multiply(const double* x, double* y) { gemv(CUBLAS_OP_N, x, y); }
void DeviceSpace::multiply_transpose(const double* x, double* y) { gemv(CUBLAS_OP_T, x, y); }

void DeviceSpace::diagonal(double* host) {
  if (n_ == 0) return;
  double* gathered = scratch(0, 1).data;  // the diagonal's stride is ld + 1: gathered first
  MIXSOLVE_CUBLAS_CHECK(cublasDcopy(ctx_.cublas(), int(n_), a_.data, int(a_.ld + 1), gathered, 1));
  download(gathered, host);
}

void DeviceSpace::column(std::int64_t j, double* host) {
  if (n_ == 0) return;
  download(a_.data + j * a_.ld, host);
}

void DeviceSpace::column_norms_inf(const MatrixView<const double>& m, double* out) {
  if (column_max_.size() < std::size_t(m.cols)) column_max_ = DeviceBuffer<double>(ctx_, m.cols);
  column_abs_max_kernel<<<unsigned(m.cols), 256, 0, stream()>>>(m.data, m.ld, m.rows, column_max_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  column_max_.copy_to_host(out, m.cols, stream());
}

MatrixView<double> DeviceSpace::scratch(int slot, std::int64_t cols) {
  if (slot >= int(scratch_.size())) scratch_.resize(slot + 1);
  if (scratch_[slot].size() < std::size_t(n_ * cols)) scratch_[slot] = DeviceBuffer<double>(ctx_, n_ * cols);
  track_peak();
  return device_view(scratch_[slot].data(), n_, cols, std::max<std::int64_t>(n_, 1));
}

void DeviceSpace::copy(const MatrixView<const double>& src, const MatrixView<double>& dst) {
  MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.ld * sizeof(double), src.data, src.ld * sizeof(double),
                                        src.rows * sizeof(double), src.cols, cudaMemcpyDeviceToDevice, stream()));
}
void DeviceSpace::upload(const double* host, double* y) {
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(y, host, n_ * sizeof(double), cudaMemcpyHostToDevice, stream()));
}
void DeviceSpace::download(const double* y, double* host) {
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(host, y, n_ * sizeof(double), cudaMemcpyDeviceToHost, stream()));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}
void DeviceSpace::fill_random(const MatrixView<double>& m, const RandomSpec& spec) {
  mixsolve::fill_random(m, spec, stream());
}
void DeviceSpace::axpy(double alpha, const double* x, double* y) {
  MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(n_), &alpha, x, 1, y, 1));
}
void DeviceSpace::scal(double alpha, double* x) {
  MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(n_), &alpha, x, 1));
}

void DeviceSpace::zero(double* x) { MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(x, 0, n_ * sizeof(double), stream())); }

double DeviceSpace::dot(const double* x, const double* y) {
  double r = 0;  // host pointer mode: cuBLAS returns after the result is written (a synchronisation)
  MIXSOLVE_CUBLAS_CHECK(cublasDdot(ctx_.cublas(), int(n_), x, 1, y, 1, &r));
  return r;
}
void DeviceSpace::gram(const MatrixView<const double>& x, const MatrixView<const double>& y, double* out) {
  const std::size_t entries = std::size_t(x.cols * y.cols);
  if (gram_.size() < entries) gram_ = DeviceBuffer<double>(ctx_, entries);
  const double one = 1.0, zero = 0.0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(x.cols), int(y.cols), int(n_), &one,
                                    x.data, int(x.ld), y.data, int(y.ld), &zero, gram_.data(), int(x.cols)));
  gram_.copy_to_host(out, entries, stream());
}
double DeviceSpace::orthogonalize(const MatrixView<const double>& v, std::int64_t count, double* w, double* h) {
  if (projection_.size() < std::size_t(2 * count)) projection_ = DeviceBuffer<double>(ctx_, 2 * count);
  double *sum = projection_.data(), *pass = sum + count;
  const double one = 1.0, minus_one = -1.0, zero = 0.0;
  cublasHandle_t handle = ctx_.cublas();
  for (int p = 0; p < 2; ++p) {
    double* target = p == 0 ? sum : pass;
    MIXSOLVE_CUBLAS_CHECK(
        cublasDgemv(handle, CUBLAS_OP_T, int(n_), int(count), &one, v.data, int(v.ld), w, 1, &zero, target, 1));
    MIXSOLVE_CUBLAS_CHECK(
        cublasDgemv(handle, CUBLAS_OP_N, int(n_), int(count), &minus_one, v.data, int(v.ld), target, 1, &one, w, 1));
  }
  MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(handle, int(count), &one, pass, 1, sum, 1));
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(h, sum, count * sizeof(double), cudaMemcpyDeviceToHost, stream()));
  double norm = 0;  // host pointer mode: returns once written, after the copy above (same stream)
  MIXSOLVE_CUBLAS_CHECK(cublasDnrm2(handle, int(n_), w, 1, &norm));
  return norm;
}
void DeviceSpace::add(const MatrixView<const double>& x, const MatrixView<double>& y) {
  for (std::int64_t j = 0; j < x.cols; ++j) axpy(1.0, x.data + j * x.ld, y.data + j * y.ld);
}
void DeviceSpace::synchronize() { ctx_.synchronize(); }

}  // namespace mixsolve::solvers_detail
