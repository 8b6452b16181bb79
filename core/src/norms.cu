// SPDX-License-Identifier: BSD-3-Clause
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/hd.hpp"
#include "mixsolve/core/norms.hpp"

namespace mixsolve {

namespace {

// Partial sums kept in double; max relative error combined through the bit pattern of a
// non-negative double, which orders like an unsigned integer.
struct DeviceAccumulators {
  double diff_sq;
  double ref_sq;
  unsigned long long max_rel_bits;
  unsigned long long nonfinite;
};

template <class T>
__global__ void compare_kernel(const T* c, std::int64_t ldc, const double* ref, std::int64_t ldr,
                               std::int64_t rows, std::int64_t cols, DeviceAccumulators* acc) {
  double diff_sq = 0, ref_sq = 0, max_rel = 0;
  unsigned long long nonfinite = 0;
  const std::int64_t total = rows * cols;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    const double v = static_cast<double>(c[i + j * ldc]);
    const double r = ref[i + j * ldr];
    if (!isfinite(v)) { ++nonfinite; continue; }
    const double d = v - r;
    diff_sq += d * d;
    ref_sq += r * r;
    if (r != 0) max_rel = fmax(max_rel, fabs(d) / fabs(r));
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    diff_sq += __shfl_down_sync(0xffffffffu, diff_sq, offset);
    ref_sq += __shfl_down_sync(0xffffffffu, ref_sq, offset);
    max_rel = fmax(max_rel, __shfl_down_sync(0xffffffffu, max_rel, offset));
    nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&acc->diff_sq, diff_sq);
    atomicAdd(&acc->ref_sq, ref_sq);
    atomicMax(&acc->max_rel_bits, static_cast<unsigned long long>(__double_as_longlong(max_rel)));
    atomicAdd(&acc->nonfinite, nonfinite);
  }
}

template <class T>
ErrorStats compare_impl(const MatrixView<const T>& c, const MatrixView<const double>& ref, cudaStream_t stream) {
  detail::check_view("compare_to_reference", "c", c);
  detail::check_view("compare_to_reference", "ref", ref);
  if (c.rows != ref.rows || c.cols != ref.cols)
    throw InvalidArgument("compare_to_reference: c is " + std::to_string(c.rows) + " x " +
                          std::to_string(c.cols) + " but ref is " + std::to_string(ref.rows) + " x " +
                          std::to_string(ref.cols));
  if (c.memory != ref.memory)
    throw InvalidArgument("compare_to_reference: c and ref must both be on the host or the device");
  ErrorStats s;
  if (c.empty()) return s;
  double diff_sq = 0, ref_sq = 0;
  if (c.memory == Memory::Host) {
    for (std::int64_t j = 0; j < c.cols; ++j)
      for (std::int64_t i = 0; i < c.rows; ++i) {
        const double v = static_cast<double>(c(i, j)), r = ref(i, j);
        if (!std::isfinite(v)) { ++s.nonfinite; continue; }
        diff_sq += (v - r) * (v - r);
        ref_sq += r * r;
        if (r != 0) s.max_relative_error = std::fmax(s.max_relative_error, std::fabs(v - r) / std::fabs(r));
      }
  } else {
    DeviceBuffer<DeviceAccumulators> acc(1);
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(acc.data(), 0, sizeof(DeviceAccumulators), stream));
    compare_kernel<<<1024, 256, 0, stream>>>(c.data, c.ld, ref.data, ref.ld, c.rows, c.cols, acc.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    DeviceAccumulators h{};
    acc.copy_to_host(&h, 1, stream);
    diff_sq = h.diff_sq;
    ref_sq = h.ref_sq;
    s.max_relative_error = __builtin_bit_cast(double, h.max_rel_bits);
    s.nonfinite = static_cast<std::int64_t>(h.nonfinite);
  }
  s.relative_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
  return s;
}

// Row i's Oettli-Prager ratio |r_i| / (sum_j |a_ij| |x_j| + |b_i|): 0 where the row and b_i are
// all zero, INFINITY where it is NaN (so a maximum over rows keeps it).
MIXSOLVE_HD inline double componentwise_ratio(double r, double magnitude, double b) {
  const double denominator = magnitude + fabs(b);
  const double ratio = denominator > 0 ? fabs(r) / denominator : 0.0;
  return isnan(ratio) ? INFINITY : ratio;
}

// componentwise_backward_error: for a thread's row i and blockIdx.y's chunk of
// kComponentwiseChunk columns, sum |a_ij| |x_j| into magnitude[i] and, unless product is null
// (the caller brought the residual), a_ij x_j into product[i] (consecutive rows: coalesced reads
// of each column).
constexpr int kComponentwiseChunk = 256;
__global__ void componentwise_sums_kernel(const double* a, std::int64_t lda, std::int64_t n, const double* x,
                                          double* product, double* magnitude) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::int64_t c0 = std::int64_t(blockIdx.y) * kComponentwiseChunk;
  const std::int64_t c1 = c0 + kComponentwiseChunk < n ? c0 + kComponentwiseChunk : n;
  double p = 0, m = 0;
  for (std::int64_t j = c0; j < c1; ++j) {
    const double aij = a[i + j * lda], xj = x[j];
    if (product) p += aij * xj;
    m += fabs(aij) * fabs(xj);
  }
  if (product) atomicAdd(&product[i], p);
  atomicAdd(&magnitude[i], m);
}

// max_i |r_i| / (magnitude_i + |b_i|), r = residual or b - product, folded into *worst through
// its bits.
__global__ void componentwise_ratio_kernel(const double* b, const double* product, const double* residual,
                                           const double* magnitude, std::int64_t n, unsigned long long* worst) {
  double largest = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double r = residual ? residual[i] : b[i] - product[i];
    largest = fmax(largest, componentwise_ratio(r, magnitude[i], b[i]));
  }
  for (int o = 16; o > 0; o /= 2) largest = fmax(largest, __shfl_down_sync(0xffffffffu, largest, o));
  if ((threadIdx.x & 31) == 0) atomicMax(worst, static_cast<unsigned long long>(__double_as_longlong(largest)));
}

}  // namespace

double componentwise_backward_error(const MatrixView<const double>& a, const double* x, const double* b,
                                    CUstream_st* stream, double* workspace, const double* residual) {
  detail::check_view("componentwise_backward_error", "a", a);
  if (a.rows != a.cols)
    throw InvalidArgument("componentwise_backward_error: a is " + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + ", not square");
  const std::int64_t n = a.rows;
  if (n == 0) return 0;
  if (a.memory == Memory::Host) {
    std::vector<double> product(residual ? 0 : n, 0.0), magnitude(n, 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        if (!residual) product[i] += a(i, j) * x[j];
        magnitude[i] += std::fabs(a(i, j)) * std::fabs(x[j]);
      }
    double worst = 0;
    for (std::int64_t i = 0; i < n; ++i)
      worst = std::fmax(worst, componentwise_ratio(residual ? residual[i] : b[i] - product[i], magnitude[i], b[i]));
    return worst;
  }
  DeviceBuffer<double> allocated;
  if (!workspace) {
    allocated = DeviceBuffer<double>(2 * n + 1);
    workspace = allocated.data();
  }
  double* product = workspace;
  double* magnitude = workspace + n;
  auto* worst = reinterpret_cast<unsigned long long*>(workspace + 2 * n);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(workspace, 0, (2 * n + 1) * sizeof(double), stream));
  const dim3 grid(unsigned((n + 255) / 256), unsigned((n + kComponentwiseChunk - 1) / kComponentwiseChunk));
  componentwise_sums_kernel<<<grid, 256, 0, stream>>>(a.data, a.ld, n, x, residual ? nullptr : product, magnitude);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const unsigned blocks = unsigned(std::min<std::int64_t>((n + 255) / 256, 64));
  componentwise_ratio_kernel<<<blocks, 256, 0, stream>>>(b, product, residual, magnitude, n, worst);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  unsigned long long bits = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&bits, worst, sizeof bits, cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return __builtin_bit_cast(double, bits);
}

ErrorStats compare_to_reference(const MatrixView<const float>& c, const MatrixView<const double>& ref,
                                CUstream_st* stream) {
  return compare_impl(c, ref, stream);
}
ErrorStats compare_to_reference(const MatrixView<const double>& c, const MatrixView<const double>& ref,
                                CUstream_st* stream) {
  return compare_impl(c, ref, stream);
}

}  // namespace mixsolve
