// SPDX-License-Identifier: BSD-3-Clause
#include "refinement/cuda/device_space.hpp"

#include <cublas_v2.h>

#include <algorithm>

#include "column_max.cuh"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail {

namespace {

__global__ void column_abs_max_kernel(const double* m, std::int64_t ld, std::int64_t rows, double* out) {
  const double r = column_abs_max_in_block(m, ld, rows, nullptr);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

}  // namespace

DeviceSpace::DeviceSpace(Context& ctx, const MatrixView<const double>& a) : ctx_(ctx), a_(a) {
  n_ = a.rows;
  column_max_ = DeviceBuffer<double>(ctx_, 64);
}

std::size_t DeviceSpace::space_bytes() const {
  std::size_t bytes = projection_.bytes();
  for (const auto& s : scratch_) bytes += s.bytes();
  return bytes;
}

void DeviceSpace::residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                           const MatrixView<double>& r) {
  profile_.start(Profile::Residual, stream());
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

void DeviceSpace::multiply(const double* x, double* y) {
  profile_.start(Profile::Multiply, stream());
  const double one = 1.0, zero = 0.0;
  MIXSOLVE_CUBLAS_CHECK(
      cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(n_), int(n_), &one, a_.data, int(a_.ld), x, 1, &zero, y, 1));
  profile_.stop(Profile::Multiply, stream());
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
