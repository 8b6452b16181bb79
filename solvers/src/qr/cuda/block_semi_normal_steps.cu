// SPDX-License-Identifier: BSD-3-Clause
#include "qr/cuda/block_semi_normal_steps.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::solvers_detail {

namespace {

constexpr int kThreads = 256;  // one block per column

// The block's sum (op: a + b) or largest value (op: max) of `value`; every thread gets it.
template <bool Max>
__device__ double block_reduce(double value, double* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const double other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmax(value, other) : value + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from an earlier call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < int(blockDim.x / 32) ? scratch[lane] : 0.0;
  for (int offset = 16; offset > 0; offset /= 2) {
    const double other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmax(value, other) : value + other;
  }
  return value;
}

// out[j] := max_i |x_ij| for the selected columns (blockIdx.x = j).
__global__ void column_max_abs_kernel(const double* x, std::int64_t ld, std::int64_t rows, const char* selected,
                                      double* out) {
  __shared__ double scratch[32];
  const std::int64_t j = blockIdx.x;
  if (!selected[j]) return;
  double largest = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) largest = fmax(largest, fabs(x[i + j * ld]));
  largest = block_reduce<true>(largest, scratch);
  if (threadIdx.x == 0) out[j] = largest;
}

// out[j] := sum_i x_ij y_ij for the selected columns.
__global__ void column_dots_kernel(const double* x, std::int64_t ldx, const double* y, std::int64_t ldy,
                                   std::int64_t rows, const char* selected, double* out) {
  __shared__ double scratch[32];
  const std::int64_t j = blockIdx.x;
  if (selected && !selected[j]) return;
  double sum = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) sum += x[i + j * ldx] * y[i + j * ldy];
  sum = block_reduce<false>(sum, scratch);
  if (threadIdx.x == 0) out[j] = sum;
}

// out[j] := ||x_j||_2 (NaN where x_j holds NaN or Inf), with the squares scaled by a power of two
// near the largest |x_ij|, so that they neither overflow nor underflow.
__global__ void column_norms_kernel(const double* x, std::int64_t ld, std::int64_t rows, double* out) {
  __shared__ double scratch[32];
  const std::int64_t j = blockIdx.x;
  double largest = 0;
  bool finite = true;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const double v = x[i + j * ld];
    finite = finite && isfinite(v);
    largest = fmax(largest, fabs(v));
  }
  largest = block_reduce<true>(finite ? largest : INFINITY, scratch);
  if (!isfinite(largest) || largest == 0) {
    if (threadIdx.x == 0) out[j] = isfinite(largest) ? 0.0 : NAN;
    return;
  }
  const int e = ilogb(largest);
  double sum = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const double v = scalbn(x[i + j * ld], -e);
    sum += v * v;
  }
  sum = block_reduce<false>(sum, scratch);
  if (threadIdx.x == 0) out[j] = scalbn(sqrt(sum), e);
}

// out_j := x_j 2^-e_j for the selected columns (exact).
__global__ void column_scale_kernel(const double* x, std::int64_t ldx, std::int64_t rows, const char* selected,
                                    const int* exponents, double* out, std::int64_t ldo) {
  const std::int64_t j = blockIdx.y;
  if (!selected[j]) return;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i + j * ldo] = scalbn(x[i + j * ldx], -exponents[j]);
}

// y_j += sign alpha_j x_j for the columns with alpha_j != 0.
__global__ void column_axpy_kernel(const double* alpha, double sign, const double* x, std::int64_t ldx,
                                   std::int64_t rows, double* y, std::int64_t ldy) {
  const std::int64_t j = blockIdx.y;
  const double a = alpha[j];
  if (a == 0) return;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i + j * ldy] += sign * a * x[i + j * ldx];
}

// p_j := z_j + beta_j p_j for the columns with beta_j != 0.
__global__ void column_direction_kernel(const double* beta, const double* z, std::int64_t rows, double* p) {
  const std::int64_t j = blockIdx.y;
  const double b = beta[j];
  if (b == 0) return;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * blockDim.x)
    p[i + j * rows] = z[i + j * rows] + b * p[i + j * rows];
}

// to_j := from_j for the selected columns; with `exponents` to_j := from_j 2^e_j and y_j += to_j.
__global__ void column_take_kernel(const char* selected, const double* from, const int* exponents, std::int64_t rows,
                                   double* to, double* y, std::int64_t ldy) {
  const std::int64_t j = blockIdx.y;
  if (!selected[j]) return;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double v = exponents ? scalbn(from[i + j * rows], exponents[j]) : from[i + j * rows];
    to[i + j * rows] = v;
    if (y) y[i + j * ldy] += v;
  }
}

// b := a - b (rows x c, leading dimension rows).
__global__ void difference_kernel(const double* a, std::int64_t count, double* b) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    b[i] = a[i] - b[i];
}

// A grid for the column-wise kernels: columns along y, rows along x.
dim3 columns_grid(std::int64_t rows, std::int64_t columns) {
  return dim3(unsigned(std::clamp<std::int64_t>((rows + kThreads - 1) / kThreads, 1, 64)), unsigned(columns));
}

}  // namespace

DeviceBlockSemiNormalSteps::DeviceBlockSemiNormalSteps(Context& ctx, const MatrixView<const double>& a,
                                                       const MatrixView<const double>& t, NormalEquationsSolver& normal,
                                                       const MatrixView<double>& y, bool start_from_y)
    : ctx_(ctx),
      a_(a),
      t_(t),
      normal_(normal),
      y_(y),
      start_from_y_(start_from_y),
      f_(ctx, a.rows * t.cols),
      next_f_(ctx, a.rows * t.cols),
      s_(ctx, a.rows * t.cols),
      q_(ctx, a.rows * t.cols),
      g_(ctx, a.cols * t.cols),
      z_(ctx, a.cols * t.cols),
      p_(ctx, a.cols * t.cols),
      d_(ctx, a.cols * t.cols),
      kept_(ctx, a.cols * t.cols),
      values_(ctx, t.cols),
      coefficients_(ctx, t.cols),
      selected_(ctx, t.cols),
      exponents_d_(ctx, t.cols),
      exponents_(std::size_t(t.cols), 0) {
  // Column j of the kernels' grids is blockIdx.x or blockIdx.y (at most 65535).
  if (a.cols < 1 || t.cols < 1 || t.cols > 65535)
    throw std::logic_error("DeviceBlockSemiNormalSteps: A needs a column, T 1 .. 65535 of them");
}

std::vector<LsSteps::Start> DeviceBlockSemiNormalSteps::start() {
  const std::int64_t m = a_.rows, k = a_.cols, c = t_.cols;
  cudaStream_t stream = ctx_.stream();
  const std::vector<char> all(std::size_t(c), 1);
  upload(all);
  if (!start_from_y_) {  // Y := (R^T R)^-1 A^T (T 2^-e) 2^e, column by column scaled
    scale_into_s(t_.data, t_.ld, all);
    transposed_product(s_.data(), z_.data());
    normal_.solve(z_.data(), k, int(c));
    // Y := Z 2^e: Y's columns start at 0, then take Z scaled.
    for (std::int64_t j = 0; j < c; ++j)
      MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(y_.data + j * y_.ld, 0, sizeof(double) * k, stream));
    column_take_kernel<<<columns_grid(k, c), kThreads, 0, stream>>>(selected_.data(), z_.data(), exponents_d_.data(), k,
                                                                    g_.data(), y_.data, y_.ld);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  residual(f_.data());
  column_norms_kernel<<<unsigned(c), kThreads, 0, stream>>>(t_.data, t_.ld, m, values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const std::vector<double> norm_t = fetch(values_);
  const std::vector<double> norm_f = residual_norms();
  std::vector<LsSteps::Start> out;
  for (std::int64_t j = 0; j < c; ++j) out.push_back({norm_t[std::size_t(j)], norm_f[std::size_t(j)]});
  return out;
}

std::vector<double> DeviceBlockSemiNormalSteps::residual_norms() {
  column_norms_kernel<<<unsigned(t_.cols), kThreads, 0, ctx_.stream()>>>(f_.data(), a_.rows, a_.rows, values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  return fetch(values_);
}

std::vector<double> DeviceBlockSemiNormalSteps::cg_begin(const std::vector<char>& selected) {
  const std::int64_t c = t_.cols;
  cudaStream_t stream = ctx_.stream();
  scale_into_s(f_.data(), a_.rows, selected);
  // p := z, d := 0, kept := 0 (all columns: the others are not read again before their next
  // cg_begin).
  std::vector<double> gamma = normal_solve(selected);
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(p_.data(), z_.data(), z_.bytes(), cudaMemcpyDeviceToDevice, stream));
  d_.set_zero(stream);
  kept_.set_zero(stream);
  for (std::int64_t j = 0; j < c; ++j)
    if (!selected[std::size_t(j)]) gamma[std::size_t(j)] = 0;
  return gamma;
}

void DeviceBlockSemiNormalSteps::scale_into_s(const double* v, std::int64_t ld, const std::vector<char>& selected) {
  const std::int64_t m = a_.rows, c = t_.cols;
  cudaStream_t stream = ctx_.stream();
  upload(selected);
  column_max_abs_kernel<<<unsigned(c), kThreads, 0, stream>>>(v, ld, m, selected_.data(), values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const std::vector<double> largest = fetch(values_);
  for (std::int64_t j = 0; j < c; ++j)
    if (selected[std::size_t(j)]) exponents_[std::size_t(j)] = rhs_scale_exponent(largest[std::size_t(j)]);
  upload_exponents();
  column_scale_kernel<<<columns_grid(m, c), kThreads, 0, stream>>>(v, ld, m, selected_.data(), exponents_d_.data(),
                                                                   s_.data(), m);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

std::vector<double> DeviceBlockSemiNormalSteps::normal_solve(const std::vector<char>& selected) {
  const std::int64_t k = a_.cols, c = t_.cols;
  cudaStream_t stream = ctx_.stream();
  transposed_product(s_.data(), g_.data());
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(z_.data(), g_.data(), g_.bytes(), cudaMemcpyDeviceToDevice, stream));
  normal_.solve(z_.data(), k, int(c), &selected);
  upload(selected);
  column_dots_kernel<<<unsigned(c), kThreads, 0, stream>>>(g_.data(), k, z_.data(), k, k, selected_.data(),
                                                           values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  return fetch(values_);
}

std::vector<double> DeviceBlockSemiNormalSteps::cg_product(const std::vector<char>& selected) {
  const std::int64_t m = a_.rows, k = a_.cols, c = t_.cols;
  const double one = 1, zero = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(c), int(k), &one, a_.data,
                                    int(a_.ld), p_.data(), int(k), &zero, q_.data(), int(m)));
  upload(selected);
  column_dots_kernel<<<unsigned(c), kThreads, 0, ctx_.stream()>>>(q_.data(), m, q_.data(), m, m, selected_.data(),
                                                                  values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  return fetch(values_);
}

std::vector<double> DeviceBlockSemiNormalSteps::cg_update(const std::vector<double>& alpha) {
  const std::int64_t m = a_.rows, k = a_.cols, c = t_.cols;
  cudaStream_t stream = ctx_.stream();
  upload(alpha);
  column_axpy_kernel<<<columns_grid(k, c), kThreads, 0, stream>>>(coefficients_.data(), 1.0, p_.data(), k, k, d_.data(),
                                                                  k);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  column_axpy_kernel<<<columns_grid(m, c), kThreads, 0, stream>>>(coefficients_.data(), -1.0, q_.data(), m, m,
                                                                  s_.data(), m);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  std::vector<char> updated(static_cast<std::size_t>(c));
  for (std::int64_t j = 0; j < c; ++j) updated[std::size_t(j)] = alpha[std::size_t(j)] != 0;
  return normal_solve(updated);
}

void DeviceBlockSemiNormalSteps::cg_direction(const std::vector<double>& beta) {
  const std::int64_t k = a_.cols, c = t_.cols;
  upload(beta);
  column_direction_kernel<<<columns_grid(k, c), kThreads, 0, ctx_.stream()>>>(coefficients_.data(), z_.data(), k,
                                                                              p_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

void DeviceBlockSemiNormalSteps::cg_keep(const std::vector<char>& selected) {
  const std::int64_t k = a_.cols, c = t_.cols;
  upload(selected);
  column_take_kernel<<<columns_grid(k, c), kThreads, 0, ctx_.stream()>>>(selected_.data(), d_.data(), nullptr, k,
                                                                         kept_.data(), nullptr, 0);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

std::vector<LsSteps::Norms> DeviceBlockSemiNormalSteps::cg_finish(const std::vector<char>& selected) {
  const std::int64_t m = a_.rows, k = a_.cols, c = t_.cols;
  cudaStream_t stream = ctx_.stream();
  upload(selected);
  // z_j := kept_j 2^e_j, y_j += z_j; then f := T - A Y, next_f_ := the change of f.
  column_take_kernel<<<columns_grid(k, c), kThreads, 0, stream>>>(selected_.data(), kept_.data(), exponents_d_.data(),
                                                                  k, z_.data(), y_.data, y_.ld);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  residual(next_f_.data());
  std::swap(f_, next_f_);
  difference_kernel<<<unsigned(std::min<std::int64_t>((m * c + kThreads - 1) / kThreads, 8192)), kThreads, 0, stream>>>(
      f_.data(), m * c, next_f_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  column_norms_kernel<<<unsigned(c), kThreads, 0, stream>>>(next_f_.data(), m, m, values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const std::vector<double> dr = fetch(values_);
  column_norms_kernel<<<unsigned(c), kThreads, 0, stream>>>(y_.data, y_.ld, k, values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const std::vector<double> x = fetch(values_);
  column_norms_kernel<<<unsigned(c), kThreads, 0, stream>>>(z_.data(), k, k, values_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const std::vector<double> dx = fetch(values_);
  std::vector<LsSteps::Norms> out(std::size_t(c), LsSteps::Norms{NAN, NAN, NAN});
  for (std::int64_t j = 0; j < c; ++j)
    if (selected[std::size_t(j)]) out[std::size_t(j)] = {x[std::size_t(j)], dx[std::size_t(j)], dr[std::size_t(j)]};
  return out;
}

void DeviceBlockSemiNormalSteps::transposed_product(const double* v, double* out) {
  const std::int64_t m = a_.rows, k = a_.cols, c = t_.cols;
  const double one = 1, zero = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(k), int(c), int(m), &one, a_.data,
                                    int(a_.ld), v, int(m), &zero, out, int(k)));
}

void DeviceBlockSemiNormalSteps::residual(double* f) {
  const std::int64_t m = a_.rows, k = a_.cols, c = t_.cols;
  const double minus_one = -1, one = 1;
  MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(f, sizeof(double) * m, t_.data, sizeof(double) * t_.ld, sizeof(double) * m, c,
                                        cudaMemcpyDeviceToDevice, ctx_.stream()));
  if (k > 0)
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(c), int(k), &minus_one,
                                      a_.data, int(a_.ld), y_.data, int(y_.ld), &one, f, int(m)));
}

std::vector<double> DeviceBlockSemiNormalSteps::fetch(const DeviceBuffer<double>& values) {
  std::vector<double> out(values.size());
  values.copy_to_host(out.data(), out.size(), ctx_.stream());
  return out;
}

void DeviceBlockSemiNormalSteps::upload(const std::vector<char>& selected) {
  selected_.copy_from_host(selected, ctx_.stream());
}
void DeviceBlockSemiNormalSteps::upload(const std::vector<double>& coefficients) {
  coefficients_.copy_from_host(coefficients, ctx_.stream());
}
void DeviceBlockSemiNormalSteps::upload_exponents() { exponents_d_.copy_from_host(exponents_, ctx_.stream()); }

}  // namespace mixsolve::solvers_detail
