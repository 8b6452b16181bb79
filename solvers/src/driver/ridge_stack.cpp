// SPDX-License-Identifier: BSD-3-Clause
#include "driver/ridge_stack.hpp"

#include <algorithm>
#include <cmath>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::solvers_detail {

RidgeStack::RidgeStack(Context& ctx, const MatrixView<const double>& a, double lambda)
    : ctx_(ctx), m_(a.rows), n_(a.cols), memory_(a.memory), diagonal_(std::size_t(a.cols), std::sqrt(lambda)) {
  const std::int64_t rows = m_ + n_, ld = std::max<std::int64_t>(rows, 1);
  if (memory_ == Memory::Host) {
    host_a_.assign(std::size_t(rows * n_), 0.0);
    for (std::int64_t j = 0; j < n_; ++j) {
      for (std::int64_t i = 0; i < m_; ++i) host_a_[std::size_t(i + j * rows)] = a(i, j);
      host_a_[std::size_t(m_ + j + j * rows)] = diagonal_[std::size_t(j)];
    }
    a_ = host_view<const double>(host_a_.data(), rows, n_, ld);
    return;
  }
  device_a_ = DeviceBuffer<double>(ctx, std::size_t(rows * n_));
  a_ = {device_a_.data(), rows, n_, ld, Memory::Device};
  if (n_ == 0) return;
  cudaStream_t stream = ctx.stream();
  double* to = device_a_.data();
  if (m_ > 0)
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(to, rows * sizeof(double), a.data, a.ld * sizeof(double), m_ * sizeof(double),
                                          n_, cudaMemcpyDeviceToDevice, stream));
  MIXSOLVE_CUDA_CHECK(cudaMemset2DAsync(to + m_, rows * sizeof(double), 0, n_ * sizeof(double), n_, stream));
  // The diagonal of the lower block: element (m + j, j), a stride of rows + 1 values.
  MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(to + m_, (rows + 1) * sizeof(double), diagonal_.data(), sizeof(double),
                                        sizeof(double), n_, cudaMemcpyHostToDevice, stream));
}

MatrixView<const double> RidgeStack::b(const MatrixView<const double>& b) {
  const std::int64_t rows = m_ + n_, k = b.cols, ld = std::max<std::int64_t>(rows, 1);
  if (memory_ == Memory::Host) {
    host_b_.assign(std::size_t(rows * k), 0.0);
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < m_; ++i) host_b_[std::size_t(i + j * rows)] = b(i, j);
    return host_view<const double>(host_b_.data(), rows, k, ld);
  }
  if (device_b_.size() < std::size_t(rows * k)) device_b_ = DeviceBuffer<double>(ctx_, std::size_t(rows * k));
  if (k > 0 && rows > 0) {
    cudaStream_t stream = ctx_.stream();
    double* to = device_b_.data();
    MIXSOLVE_CUDA_CHECK(cudaMemset2DAsync(to, rows * sizeof(double), 0, rows * sizeof(double), k, stream));
    if (m_ > 0)
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(to, rows * sizeof(double), b.data, b.ld * sizeof(double),
                                            m_ * sizeof(double), k, cudaMemcpyDeviceToDevice, stream));
  }
  return {device_b_.data(), rows, k, ld, Memory::Device};
}

}  // namespace mixsolve::solvers_detail
