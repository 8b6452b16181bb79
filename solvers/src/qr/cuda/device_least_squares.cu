// SPDX-License-Identifier: BSD-3-Clause
// The device's least-squares space (qr/least_squares_space.hpp): A, B and X in device memory, the
// factors a DeviceQr<T> (FP32: TSQR panels, trailing updates on cublas-fp16x3 or cublas-sgemm:
// fp32_update_backend), the refinement's FP64 residuals by cuBLAS DGEMV.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/internal/launch.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "qr/cuda/block_semi_normal_steps.hpp"
#include "qr/cuda/cusolver_qr_solve.hpp"
#include "qr/cuda/device_qr.hpp"
#include "qr/cuda/normal_equations_solver.hpp"
#include "qr/cuda/pivoted_cholesky.hpp"
#include "qr/least_squares_space.hpp"
#include "triangular/triangular_solver.hpp"

namespace mixsolve::solvers_detail {

namespace {

// The vector kernels here take at most 8192 blocks (their per-block partial sums follow the grid).
unsigned vector_blocks(std::int64_t count) { return mixsolve::detail::blocks_for(count, 8192); }

// A grid over the entries of a rows x cols matrix: rows along x, columns along y (no division
// per entry).
dim3 matrix_grid(std::int64_t rows, std::int64_t cols) {
  return dim3(unsigned(std::min<std::int64_t>((rows + 255) / 256, 64)), unsigned(std::min<std::int64_t>(cols, 256)));
}
#define FOR_EACH_ENTRY(rows, cols)                                                         \
  for (std::int64_t j = blockIdx.y; j < (cols); j += gridDim.y)                            \
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (rows); \
         i += std::int64_t(gridDim.x) * blockDim.x)

// One pass over m: scan[0] := min over NaN/Inf entries of i + j rows (start: all ones), scan[1] :=
// max over the finite |m_ij| as the bits of a non-negative double (they order as the values;
// start: 0).
__global__ void scan_kernel(const double* m, std::int64_t ld, std::int64_t rows, std::int64_t cols,
                            unsigned long long* scan) {
  double local = 0;
  FOR_EACH_ENTRY(rows, cols) {
    const double v = m[i + j * ld];
    if (isfinite(v))
      local = fmax(local, fabs(v));
    else
      atomicMin(scan, static_cast<unsigned long long>(i + j * rows));
  }
  for (int offset = 16; offset > 0; offset /= 2) local = fmax(local, __shfl_xor_sync(0xffffffffu, local, offset));
  if (threadIdx.x % 32 == 0 && local > 0)  // one atomic per warp
    atomicMax(scan + 1, static_cast<unsigned long long>(__double_as_longlong(local)));
}

// sums[j] += sum over i of (m_ij * scale)^2 (start: 0).
__global__ void column_squares_kernel(const double* m, std::int64_t ld, std::int64_t rows, std::int64_t cols,
                                      double scale, double* sums) {
  for (std::int64_t j = blockIdx.y; j < cols; j += gridDim.y) {
    double local = 0;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const double y = m[i + j * ld] * scale;
      local += y * y;
    }
    for (int offset = 16; offset > 0; offset /= 2) local += __shfl_xor_sync(0xffffffffu, local, offset);
    if (threadIdx.x % 32 == 0 && local > 0) atomicAdd(sums + j, local);
  }
}

// out (rows x cols, leading dimension rows) := T(scale m).
template <class T>
__global__ void scaled_copy_kernel(const double* m, std::int64_t ld, std::int64_t rows, std::int64_t cols, double scale,
                                   T* out, std::int64_t out_ld) {
  FOR_EACH_ENTRY(rows, cols) { out[i + j * out_ld] = T(scale * m[i + j * ld]); }
}

// y := T(x 2^exponent), the scaling exact.
template <class T>
__global__ void scale_to_kernel(const double* x, std::int64_t count, int exponent, T* y) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = T(scalbn(x[i], exponent));
}

// x := x + z 2^exponent (z in T), or x := z 2^exponent where `assign`.
template <class T>
__global__ void add_scaled_kernel(const T* z, std::int64_t count, int exponent, bool assign, double* x) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double v = scalbn(double(z[i]), exponent);
    x[i] = assign ? v : x[i] + v;
  }
}

// z := d - h (length n, in T).
template <class T>
__global__ void difference_kernel(const T* d, const T* h, std::int64_t count, T* z) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    z[i] = d[i] - h[i];
}

// f := b - r.
__global__ void b_minus_r_kernel(const double* b, const double* r, std::int64_t count, double* f) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    f[i] = b[i] - r[i];
}

// b := a - b.
__global__ void subtract_from_kernel(const double* a, std::int64_t count, double* b) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    b[i] = a[i] - b[i];
}

// r (n x n, leading dimension n) := scale times the upper triangle of the first n rows of f
// (leading dimension ld), in FP64, zeros below.
__global__ void upper_triangle_kernel(const float* f, std::int64_t ld, std::int64_t n, double scale, double* r) {
  FOR_EACH_ENTRY(n, n) { r[i + j * n] = i <= j ? scale * double(f[i + j * ld]) : 0.0; }
}

// d[j] := |a_jj| and d[n + j] := |b_jj| (both n x n, leading dimension n).
__global__ void two_diagonals_kernel(const double* a, const double* b, std::int64_t n, double* d) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x) {
    d[j] = fabs(a[j + j * n]);
    d[n + j] = fabs(b[j + j * n]);
  }
}

__global__ void fill_nan_kernel(double* x, std::int64_t ld, std::int64_t rows, std::int64_t cols) {
  FOR_EACH_ENTRY(rows, cols) { x[i + j * ld] = NAN; }
}

// Column c of A's columns `order` (n of them) into kept (c < kept) or dropped (the rest), both
// with leading dimension rows.
__global__ void gather_columns_kernel(const double* a, std::int64_t ld, std::int64_t rows, const std::int64_t* order,
                                      std::int64_t n, std::int64_t kept, double* kept_columns,
                                      double* dropped_columns) {
  FOR_EACH_ENTRY(rows, n) {
    double* to = j < kept ? kept_columns + j * rows : dropped_columns + (j - kept) * rows;
    to[i] = a[i + order[j] * ld];
  }
}

#undef FOR_EACH_ENTRY

double nrm2(cublasHandle_t h, std::int64_t n, const float* x) {
  float r = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasSnrm2(h, int(n), x, 1, &r));
  return r;
}
double nrm2(cublasHandle_t h, std::int64_t n, const double* x) {
  double r = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDnrm2(h, int(n), x, 1, &r));
  return r;
}

// max_i |x_i| of a device vector (a synchronisation).
double max_abs(cublasHandle_t h, cudaStream_t stream, std::int64_t n, const double* x) {
  if (n == 0) return 0;
  int index = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasIdamax(h, int(n), x, 1, &index));
  double v = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&v, x + index - 1, sizeof v, cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::fabs(v);
}

// f := b - A x in FP64 (A m x n; f, b of length m; device memory).
void b_minus_ax(Context& ctx, const MatrixView<const double>& a, const double* b, const double* x, double* f) {
  const double minus_one = -1, one = 1;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(f, b, sizeof(double) * a.rows, cudaMemcpyDeviceToDevice, ctx.stream()));
  if (a.cols > 0)
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(a.rows), int(a.cols), &minus_one, a.data,
                                      int(a.ld), x, 1, &one, f, 1));
}

// x := the factors' solution a_scale R^-1 (Q^T b 2^-e)(1:n) 2^e (a_scale = 2^a_exponent), b
// scaled into T's range by 2^-e; work: m values of T.
template <class T>
void factors_solution(Context& ctx, DeviceQr<T>& qr, const double* b, int a_exponent, T* work, double* x) {
  const std::int64_t m = qr.rows(), n = qr.cols();
  const int e = rhs_scale_exponent(max_abs(ctx.cublas(), ctx.stream(), m, b));
  scale_to_kernel<<<vector_blocks(m), 256, 0, ctx.stream()>>>(b, m, -e, work);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  qr.apply_qt(device_view(work, m, 1, m));
  qr.solve_r(device_view(work, m, 1, m));
  add_scaled_kernel<<<vector_blocks(n), 256, 0, ctx.stream()>>>(work, n, e + a_exponent, true, x);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

// The device's steps for one right-hand side (least_squares_refinement.hpp, LsSteps): the same
// arithmetic as the host's, with DGEMV residuals and the factors' solves on the device.
template <class T>
class DeviceLsSteps final : public LsSteps {
 public:
  DeviceLsSteps(Context& ctx, const MatrixView<const double>& a, const double* b, DeviceQr<T>& qr, double a_scale,
                double* x, double* r)
      : ctx_(ctx),
        a_(a),
        b_(b),
        qr_(qr),
        a_scale_(a_scale),
        a_exponent_(std::ilogb(a_scale)),
        x_(x),
        r_(r),
        f_(ctx, a.rows),
        g_(ctx, a.cols),
        y_(ctx, a.rows),
        d_(ctx, a.rows),
        h_(ctx, a.cols),
        z_(ctx, a.cols) {}

  Start start() override {
    const std::int64_t m = a_.rows;
    factors_solution(ctx_, qr_, b_, a_exponent_, d_.data(), x_);
    b_minus_ax(r_);
    return {nrm2(ctx_.cublas(), m, b_), nrm2(ctx_.cublas(), m, r_)};
  }

  Norms step() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    cudaStream_t stream = ctx_.stream();
    cublasHandle_t h = ctx_.cublas();
    const double minus_one = -1, one = 1, zero = 0, minus_a_scale = -a_scale_;
    // f = b - r - A x in FP64; g_ := -a_scale A^T (r 2^-er) = a_scale g 2^-er (a_scale as DGEMV's
    // alpha), with r scaled into [0.5, 1) first: each product a_ij r_i 2^-er is at most max |A|, so
    // the sum overflows only where max |A| is within a factor m of FP64's largest value.
    b_minus_r_kernel<<<vector_blocks(m), 256, 0, stream>>>(b_, r_, m, f_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    MIXSOLVE_CUBLAS_CHECK(
        cublasDgemv(h, CUBLAS_OP_N, int(m), int(n), &minus_one, a_.data, int(a_.ld), x_, 1, &one, f_.data(), 1));
    const int er = rhs_scale_exponent(max_abs(h, stream, m, r_));
    scale_to_kernel<<<vector_blocks(m), 256, 0, stream>>>(r_, m, -er, y_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(h, CUBLAS_OP_T, int(m), int(n), &minus_a_scale, a_.data, int(a_.ld), y_.data(), 1,
                                      &zero, g_.data(), 1));
    const int e = correct(f_.data(), g_.data(), er);
    add_scaled_kernel<<<vector_blocks(n), 256, 0, stream>>>(z_.data(), n, e + a_exponent_, false, x_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    add_scaled_kernel<<<vector_blocks(m), 256, 0, stream>>>(d_.data(), m, e, false, r_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    return {nrm2(h, n, x_), std::ldexp(nrm2(h, n, z_.data()), e + a_exponent_), std::ldexp(nrm2(h, m, d_.data()), e)};
  }

  Norms x_step() override {
    const std::int64_t n = a_.cols;
    b_minus_ax(f_.data());
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(g_.data(), 0, sizeof(double) * n, ctx_.stream()));
    const int e = correct(f_.data(), g_.data(), 0);
    add_scaled_kernel<<<vector_blocks(n), 256, 0, ctx_.stream()>>>(z_.data(), n, e + a_exponent_, false, x_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    cublasHandle_t h = ctx_.cublas();
    return {nrm2(h, n, x_), std::ldexp(nrm2(h, n, z_.data()), e + a_exponent_), 0.0};
  }
  std::int64_t rows() const override { return a_.rows; }
  double residual_norm() override {
    b_minus_ax(f_.data());
    return nrm2(ctx_.cublas(), a_.rows, f_.data());
  }
  void reserve(int slots) override {
    const std::int64_t length = a_.rows + a_.cols;
    slots_ = DeviceBuffer<double>(ctx_, length * slots);
    correction_ = DeviceBuffer<double>(ctx_, length);
    coefficients_ = DeviceBuffer<double>(ctx_, slots);
  }
  void residual(int to, double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols;
    const double minus_one = -1, one = 1, zero = 0, minus_a_scale = -a_scale_ / alpha;
    double* u = slot(to);
    b_minus_r_kernel<<<vector_blocks(m), 256, 0, ctx_.stream()>>>(b_, r_, m, u);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    MIXSOLVE_CUBLAS_CHECK(
        cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(m), int(n), &minus_one, a_.data, int(a_.ld), x_, 1, &one, u, 1));
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_T, int(m), int(n), &minus_a_scale, a_.data, int(a_.ld),
                                      r_, 1, &zero, u + m, 1));
  }
  // The plain correction of [f; alpha g] (alpha = 2^ea): R^-1 (d1 - alpha h) and alpha du.
  void precondition(int from, int to, double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols;
    const int ea = std::ilogb(alpha);
    const int e = correct(slot(from), slot(from) + m, ea);
    add_scaled_kernel<<<vector_blocks(m), 256, 0, ctx_.stream()>>>(d_.data(), m, e - ea, true, slot(to));
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    add_scaled_kernel<<<vector_blocks(n), 256, 0, ctx_.stream()>>>(z_.data(), n, e, true, slot(to) + m);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  void augmented_product(int from, int to, double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols;
    const double zero = 0, a_scale = a_scale_;
    MIXSOLVE_CUDA_CHECK(
        cudaMemcpyAsync(slot(to), slot(from), sizeof(double) * m, cudaMemcpyDeviceToDevice, ctx_.stream()));
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(m), int(n), &a_scale, a_.data, int(a_.ld),
                                      slot(from) + m, 1, &alpha, slot(to), 1));
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_T, int(m), int(n), &a_scale, a_.data, int(a_.ld),
                                      slot(from), 1, &zero, slot(to) + m, 1));
  }
  double dot(int a, int b) override {
    double out = 0;
    MIXSOLVE_CUBLAS_CHECK(cublasDdot(ctx_.cublas(), int(a_.rows + a_.cols), slot(a), 1, slot(b), 1, &out));
    return out;
  }
  void axpy(double alpha, int from, int to) override {
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(a_.rows + a_.cols), &alpha, slot(from), 1, slot(to), 1));
  }
  void scale(int index, double factor) override {
    MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(a_.rows + a_.cols), &factor, slot(index), 1));
  }
  Norms add_correction(const std::vector<double>& coefficients, double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols, length = m + n;
    cublasHandle_t h = ctx_.cublas();
    if (coefficients.empty()) return {nrm2(h, n, x_), 0, 0};
    const double one = 1, zero = 0, a_scale = a_scale_;
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(coefficients_.data(), coefficients.data(), sizeof(double) * coefficients.size(),
                                        cudaMemcpyHostToDevice, ctx_.stream()));
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(h, CUBLAS_OP_N, int(length), int(coefficients.size()), &one, slots_.data(),
                                      int(length), coefficients_.data(), 1, &zero, correction_.data(), 1));
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(h, int(m), &alpha, correction_.data(), 1, r_, 1));
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(h, int(n), &a_scale, correction_.data() + m, 1, x_, 1));
    return {nrm2(h, n, x_), a_scale_ * nrm2(h, n, correction_.data() + m), alpha * nrm2(h, m, correction_.data())};
  }

 private:
  double* slot(int index) { return slots_.data() + index * (a_.rows + a_.cols); }

  void b_minus_ax(double* f) { solvers_detail::b_minus_ax(ctx_, a_, b_, x_, f); }

  // The factors' solution of [I A'; A'^T 0] [dr; z] = [f; g 2^er] (A' = a_scale A), both
  // right-hand sides scaled by 2^-e into T's range: h = R^-T (g 2^(er-e)), d = Q^T (f 2^-e),
  // z_ = R^-1 (d1 - h), d_ = Q [h; d2]; dr = d_ 2^e and z = z_ 2^e. Returns e.
  int correct(const double* f, const double* g, int er) {
    const std::int64_t m = a_.rows, n = a_.cols;
    cudaStream_t stream = ctx_.stream();
    cublasHandle_t h = ctx_.cublas();
    const double largest_g = max_abs(h, stream, n, g);
    const int ef = rhs_scale_exponent(max_abs(h, stream, m, f));
    const int eg = largest_g > 0 ? rhs_scale_exponent(largest_g) + er : ef;
    const int e = std::max(ef, eg);
    scale_to_kernel<<<vector_blocks(n), 256, 0, stream>>>(g, n, er - e, h_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    scale_to_kernel<<<vector_blocks(m), 256, 0, stream>>>(f, m, -e, d_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    qr_.solve_rt(device_view(h_.data(), n, 1, n));
    qr_.apply_qt(device_view(d_.data(), m, 1, m));
    difference_kernel<<<vector_blocks(n), 256, 0, stream>>>(d_.data(), h_.data(), n, z_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    qr_.solve_r(device_view(z_.data(), n, 1, n));
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(d_.data(), h_.data(), sizeof(T) * n, cudaMemcpyDeviceToDevice, stream));
    qr_.apply_q(device_view(d_.data(), m, 1, m));
    return e;
  }

  Context& ctx_;
  MatrixView<const double> a_;
  const double* b_;
  DeviceQr<T>& qr_;
  double a_scale_;
  int a_exponent_;  // a_scale = 2^a_exponent_
  double *x_, *r_;
  DeviceBuffer<double> f_, g_, y_;
  DeviceBuffer<T> d_, h_, z_;
  DeviceBuffer<double> slots_, correction_, coefficients_;  // GMRES-LS's augmented vectors
};

// The semi-normal steps on the device (refine_semi_normal in least_squares_refinement.hpp): R of
// A' = a_scale A alone, through `normal` ((R^T R)^-1); f_ = b - A x of the current x.
class DeviceSemiNormalSteps final : public LsSteps {
 public:
  // start_from_x: x holds the first solution already (refine_semi_normal).
  DeviceSemiNormalSteps(Context& ctx, const MatrixView<const double>& a, const double* b, NormalEquationsSolver& normal,
                        double a_scale, double* x, bool start_from_x = false)
      : start_from_x_(start_from_x),
        ctx_(ctx),
        a_(a),
        b_(b),
        normal_(normal),
        a_scale_(a_scale),
        a_exponent_(std::ilogb(a_scale)),
        x_(x),
        f_(ctx, a.rows),
        next_f_(ctx, a.rows),
        y_(ctx, a.rows),
        z_(ctx, a.cols) {}

  Start start() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    if (!start_from_x_) {
      const int e = correction(b_);
      add_scaled_kernel<<<vector_blocks(n), 256, 0, ctx_.stream()>>>(z_.data(), n, e, true, x_);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    b_minus_ax(f_.data());
    return {nrm2(ctx_.cublas(), m, b_), nrm2(ctx_.cublas(), m, f_.data())};
  }
  Norms step() override { return take_correction(correction(f_.data())); }
  std::int64_t rows() const override { return a_.rows; }
  double residual_norm() override { return nrm2(ctx_.cublas(), a_.rows, f_.data()); }

  double cg_begin() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    cudaStream_t stream = ctx_.stream();
    if (cg_q_.size() == 0) {
      cg_p_ = DeviceBuffer<double>(ctx_, n);
      cg_g_ = DeviceBuffer<double>(ctx_, n);
      cg_d_ = DeviceBuffer<double>(ctx_, n);
      cg_kept_ = DeviceBuffer<double>(ctx_, n);
      cg_q_ = DeviceBuffer<double>(ctx_, m);
    }
    cg_exponent_ = rhs_scale_exponent(max_abs(ctx_.cublas(), stream, m, f_.data()));
    scale_to_kernel<<<vector_blocks(m), 256, 0, stream>>>(f_.data(), m, -cg_exponent_, y_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const double gamma = normal_solve(true);
    copy(cg_p_.data(), z_.data(), n);
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(cg_d_.data(), 0, sizeof(double) * n, stream));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(cg_kept_.data(), 0, sizeof(double) * n, stream));
    return gamma;
  }
  double cg_product() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    const double zero = 0, a_scale = a_scale_;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(m), int(n), &a_scale, a_.data, int(a_.ld),
                                      cg_p_.data(), 1, &zero, cg_q_.data(), 1));
    return inner_product(cg_q_.data(), cg_q_.data(), m);
  }
  double cg_update(double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols;
    const double minus_alpha = -alpha;
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(n), &alpha, cg_p_.data(), 1, cg_d_.data(), 1));
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(m), &minus_alpha, cg_q_.data(), 1, y_.data(), 1));
    return normal_solve(true);
  }
  void cg_direction(double beta) override {
    const double one = 1;
    MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(a_.cols), &beta, cg_p_.data(), 1));
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(a_.cols), &one, z_.data(), 1, cg_p_.data(), 1));
  }
  void cg_keep() override { copy(cg_kept_.data(), cg_d_.data(), a_.cols); }
  Norms cg_finish() override {
    copy(z_.data(), cg_kept_.data(), a_.cols);
    return take_correction(cg_exponent_ + a_exponent_);
  }

 private:
  void copy(double* to, const double* from, std::int64_t count) {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(to, from, sizeof(double) * count, cudaMemcpyDeviceToDevice, ctx_.stream()));
  }
  double inner_product(const double* v, const double* w, std::int64_t count) {
    double out = 0;
    MIXSOLVE_CUBLAS_CHECK(cublasDdot(ctx_.cublas(), int(count), v, 1, w, 1, &out));
    return out;
  }
  // g := A'^T y_ (into cg_g_ where `keep_g`, else into z_), z_ := (R^T R)^-1 g; returns
  // g^T z_ = ||R^-T g||^2 (CGLS's ||s||^2) where g is kept, else 0.
  double normal_solve(bool keep_g) {
    const double zero = 0, a_scale = a_scale_;
    double* g = keep_g ? cg_g_.data() : z_.data();
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_T, int(a_.rows), int(a_.cols), &a_scale, a_.data,
                                      int(a_.ld), y_.data(), 1, &zero, g, 1));
    if (keep_g) copy(z_.data(), g, a_.cols);
    normal_.solve(z_.data());
    return keep_g ? inner_product(g, z_.data(), a_.cols) : 0.0;
  }
  // x += z_ 2^e; f_ := b - A x; returns ||x||, ||z_|| 2^e and the change of b - A x.
  Norms take_correction(int e) {
    const std::int64_t m = a_.rows, n = a_.cols;
    cublasHandle_t h = ctx_.cublas();
    add_scaled_kernel<<<vector_blocks(n), 256, 0, ctx_.stream()>>>(z_.data(), n, e, false, x_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    b_minus_ax(next_f_.data());
    subtract_from_kernel<<<vector_blocks(m), 256, 0, ctx_.stream()>>>(next_f_.data(), m, f_.data());  // the change
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const double dr = nrm2(h, m, f_.data());
    std::swap(f_, next_f_);
    return {nrm2(h, n, x_), std::ldexp(nrm2(h, n, z_.data()), e), dr};
  }
  // z_ := (R^T R)^-1 A'^T (v 2^-e), v scaled into [0.5, 1) so that A'^T v cannot overflow; the
  // correction a_scale (R^T R)^-1 A'^T v is z_ 2^returned.
  int correction(const double* v) {
    const std::int64_t m = a_.rows;
    const int e = rhs_scale_exponent(max_abs(ctx_.cublas(), ctx_.stream(), m, v));
    scale_to_kernel<<<vector_blocks(m), 256, 0, ctx_.stream()>>>(v, m, -e, y_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    normal_solve(false);
    return e + a_exponent_;
  }
  void b_minus_ax(double* f) { solvers_detail::b_minus_ax(ctx_, a_, b_, x_, f); }

  bool start_from_x_;
  Context& ctx_;
  MatrixView<const double> a_;
  const double* b_;
  NormalEquationsSolver& normal_;
  double a_scale_;
  int a_exponent_;  // a_scale = 2^a_exponent_
  double* x_;
  DeviceBuffer<double> f_, next_f_, y_, z_;
  // CGLS in x's variables (the normal equations preconditioned by (R^T R)^-1): y_ holds its r (in
  // units of 2^cg_exponent_), cg_g_ A'^T r, z_ (R^T R)^-1 A'^T r, cg_p_ the direction.
  DeviceBuffer<double> cg_p_, cg_g_, cg_d_, cg_kept_, cg_q_;
  int cg_exponent_ = 0;
};

// The rank-revealing attempt's tall work on the device (qr/minimum_norm.hpp): A_S and A_N
// gathered into FP64 copies column by column, CGLS preconditioned with the host's R through
// NormalEquationsSolver, the remainder C = A_N - A_S W by DGEMM and its QR by DeviceQr (TSQR
// panels), that R pivoted on the host.
class DeviceTallColumns final : public TallColumns {
  // The block refinements take at most this many columns at once (a few 1 GiB work arrays).
  static constexpr std::int64_t kBlockValues = std::int64_t(1) << 27;

 public:
  DeviceTallColumns(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b)
      : ctx_(ctx), a_(a), b_(b) {}

  void choose(const std::vector<std::int64_t>& order, std::int64_t kept) override {
    const std::int64_t m = a_.rows, n = std::int64_t(order.size());
    normal_.reset();  // a preconditioner belongs to the columns it was given for
    kept_ = kept;
    chosen_ = n;
    kept_columns_ = DeviceBuffer<double>(ctx_, m * kept);
    dropped_columns_ = DeviceBuffer<double>(ctx_, m * (n - kept));
    if (n == 0 || m == 0) return;
    // One gather kernel (a copy per column cost a launch each: thousands of them).
    DeviceBuffer<std::int64_t> columns(ctx_, std::size_t(n));
    columns.copy_from_host(order, ctx_.stream());
    gather_columns_kernel<<<matrix_grid(m, n), 256, 0, ctx_.stream()>>>(a_.data, a_.ld, m, columns.data(), n, kept,
                                                                        kept_columns_.data(), dropped_columns_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  void precondition(const MatrixView<const double>& r) override {
    const std::int64_t k = r.rows;
    r_ = DeviceBuffer<double>(ctx_, k * k);
    // The solver reads R's upper triangle only: a k x k r goes up as it is, no host copy.
    if (k > 0)
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(r_.data(), sizeof(double) * k, r.data, sizeof(double) * r.ld,
                                            sizeof(double) * k, k, cudaMemcpyHostToDevice, ctx_.stream()));
    normal_ = std::make_unique<NormalEquationsSolver>(ctx_, r_.data(), k, k);
  }
  std::vector<LsRefinementResult> refine(Target target, std::int64_t first, std::int64_t count,
                                         const LsFactorScales& scales, int max_iterations, bool start_from_y,
                                         double* y) override {
    if (!normal_) throw std::logic_error("least_squares: a rank-revealing refinement without its preconditioner");
    const std::int64_t m = a_.rows, k = kept_;
    std::vector<LsRefinementResult> out;
    if (count == 0) return out;
    // At most kBlockValues values in each of the steps' m x c work arrays.
    const std::int64_t block = std::clamp<std::int64_t>(kBlockValues / std::max<std::int64_t>(m, 1), 1, 256);
    for (std::int64_t c0 = 0; c0 < count; c0 += block) {
      const std::int64_t c = std::min(block, count - c0);
      DeviceBuffer<double> yd(ctx_, std::size_t(k * c));
      yd.copy_from_host(y + c0 * k, std::size_t(k * c), ctx_.stream());
      const MatrixView<const double> t =
          target == Target::RightHandSide
              ? device_view<const double>(b_.data + (first + c0) * b_.ld, m, c, b_.ld)
              : device_view<const double>(dropped_columns_.data() + (first + c0) * m, m, c, m);
      DeviceBlockSemiNormalSteps steps(ctx_, device_view<const double>(kept_columns_.data(), m, k, m), t, *normal_,
                                       device_view(yd.data(), k, c, k), start_from_y);
      for (LsRefinementResult& refined : refine_block(steps, max_iterations, scales)) out.push_back(std::move(refined));
      yd.copy_to_host(y + c0 * k, std::size_t(k * c), ctx_.stream());
    }
    return out;
  }
  double residual_norm(Target target, std::int64_t j, const double* y) override {
    const std::int64_t m = a_.rows, k = kept_;
    cudaStream_t stream = ctx_.stream();
    DeviceBuffer<double> f(ctx_, m), yd(ctx_, k);
    const double* t = target == Target::RightHandSide ? b_.data + j * b_.ld : dropped_columns_.data() + j * m;
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(f.data(), t, sizeof(double) * m, cudaMemcpyDeviceToDevice, stream));
    if (k > 0) {
      yd.copy_from_host(y, k, stream);
      const double minus_one = -1, one = 1;
      MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(m), int(k), &minus_one, kept_columns_.data(),
                                        int(m), yd.data(), 1, &one, f.data(), 1));
    }
    return nrm2(ctx_.cublas(), m, f.data());
  }
  PivotedR remainder_qr(const MatrixView<const double>& w) override {
    const std::int64_t m = a_.rows, nd = chosen_ - kept_, k = kept_;
    cudaStream_t stream = ctx_.stream();
    DeviceBuffer<double> c(ctx_, m * nd);
    MIXSOLVE_CUDA_CHECK(
        cudaMemcpyAsync(c.data(), dropped_columns_.data(), sizeof(double) * m * nd, cudaMemcpyDeviceToDevice, stream));
    if (k > 0) {  // C -= A_S W
      std::vector<double> packed(std::size_t(k * nd));
      for (std::int64_t q = 0; q < nd; ++q)
        for (std::int64_t i = 0; i < k; ++i) packed[std::size_t(i + q * k)] = w(i, q);
      DeviceBuffer<double> wd(ctx_, k * nd);
      wd.copy_from_host(packed, stream);
      const double minus_one = -1, one = 1;
      MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(nd), int(k), &minus_one,
                                        kept_columns_.data(), int(m), wd.data(), int(k), &one, c.data(), int(m)));
    }
    // C's R: an FP64 QR on the device where C is tall, then column pivoting on the host of that R
    // (the pivots of C itself: they depend only on C's columns' inner products).
    std::vector<double> r;
    std::int64_t rows = 0;
    if (m >= nd) {
      DeviceQr<double> qr(ctx_, device_view(c.data(), m, nd, m), nd >= 1024 ? 256 : 128,
                          gemm::find_backend("cublas-dgemm"), QrPanel::Tsqr);
      rows = nd;
      r.assign(std::size_t(nd * nd), 0.0);
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(r.data(), sizeof(double) * nd, c.data(), sizeof(double) * m,
                                            sizeof(double) * nd, nd, cudaMemcpyDeviceToHost, stream));
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (std::int64_t q = 0; q < nd; ++q)
        for (std::int64_t i = q + 1; i < nd; ++i) r[std::size_t(i + q * nd)] = 0;  // the reflectors
    } else {
      rows = m;
      r.resize(std::size_t(m * nd));
      c.copy_to_host(r.data(), std::size_t(m * nd), stream);
    }
    return pivoted_r(host_view(r.data(), rows, nd, std::max<std::int64_t>(rows, 1)));
  }
  // Stage 1 on the device: the pivoted Cholesky factorization of R^T R (qr/cuda/pivoted_cholesky.hpp)
  // in place of the host's O(n^3) QR with column pivoting, which is as accurate as stage 1 needs.
  LeadingPivots leading_pivots(const MatrixView<const double>& r, double relative_threshold) override {
    const std::int64_t p = r.rows, n = r.cols;
    DeviceBuffer<double> copy(ctx_, std::size_t(p * n));
    if (p > 0 && n > 0)
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(copy.data(), sizeof(double) * p, r.data, sizeof(double) * r.ld,
                                            sizeof(double) * p, n, cudaMemcpyHostToDevice, ctx_.stream()));
    return pivot_by_gram_cholesky(ctx_, copy.data(), p, n, std::max<std::int64_t>(p, 1), relative_threshold);
  }

 private:
  Context& ctx_;
  MatrixView<const double> a_, b_;
  std::int64_t kept_ = 0, chosen_ = 0;                   // columns in A_S; in A_S and A_N
  DeviceBuffer<double> kept_columns_, dropped_columns_;  // m x kept and m x (n - kept)
  DeviceBuffer<double> r_;                               // the preconditioner's R, kept x kept
  std::unique_ptr<NormalEquationsSolver> normal_;
};

class DeviceLsSpace final : public LsSpace {
 private:
  // scan_kernel over m: the first NaN or Inf (i + j rows, or -1) and max |m_ij| over the finite entries.
  std::int64_t scan(const MatrixView<const double>& m, double& largest) {
    largest = 0;
    if (m.empty()) return -1;  // no empty grid (an empty A or B: nothing to read)
    const unsigned long long start[2] = {~0ull, 0};
    scan_.copy_from_host(start, 2, ctx_.stream());
    scan_kernel<<<matrix_grid(m.rows, m.cols), 256, 0, ctx_.stream()>>>(m.data, m.ld, m.rows, m.cols, scan_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    unsigned long long out[2] = {0, 0};
    scan_.copy_to_host(out, 2, ctx_.stream());
    std::memcpy(&largest, &out[1], sizeof largest);
    return out[0] == ~0ull ? -1 : std::int64_t(out[0]);
  }

 public:
  DeviceLsSpace(Context& ctx, const MatrixView<const double>& a)
      : ctx_(ctx), a_(a), r_(ctx, std::max<std::int64_t>(a.rows, 1)), scan_(ctx, 2) {}

  void bind(const MatrixView<const double>& b, const MatrixView<double>& x) override {
    if (b.ld > INT_MAX) throw InvalidArgument("least_squares: B's leading dimension (" + std::to_string(b.ld) +
                                              ") beyond cuBLAS's int");
    b_ = b;
    x_ = x;
  }

  // A's scan also gives max |a_ij|, kept for largest_abs_a(): one pass over A for both.
  std::pair<std::int64_t, std::int64_t> find_nonfinite(int which) override {
    const MatrixView<const double>& m = which == 0 ? a_ : b_;
    if (m.empty()) return {-1, -1};
    double largest = 0;
    const std::int64_t first = scan(m, largest);
    if (which == 0) largest_a_ = largest;
    if (first < 0) return {-1, -1};
    return {first % m.rows, first / m.rows};
  }

  double largest_abs_a() override {
    if (largest_a_ < 0) {
      double largest = 0;
      scan(a_, largest);
      largest_a_ = largest;
    }
    return largest_a_;
  }

  double norm_a_frobenius() override {
    double sum = 0;
    for (const double v : column_squares()) sum += v;
    return largest_abs_a() * std::sqrt(sum);
  }

  // ||a_j||^2 / max |a_ij|^2 for each column (one pass over A, kept: A does not change); empty
  // for a zero A.
  const std::vector<double>& column_squares() {
    const std::int64_t m = a_.rows, n = a_.cols;
    const double largest = largest_abs_a();
    if (column_squares_.empty() && largest > 0) {
      DeviceBuffer<double> sums(ctx_, n);
      MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, sizeof(double) * n, ctx_.stream()));
      column_squares_kernel<<<matrix_grid(m, n), 256, 0, ctx_.stream()>>>(a_.data, a_.ld, m, n, 1 / largest,
                                                                          sums.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      column_squares_.resize(n);
      sums.copy_to_host(column_squares_.data(), n, ctx_.stream());
    }
    return column_squares_;
  }

  std::vector<double> factor(bool fp64, double a_scale, std::int64_t block, const std::string& fp32_update,
                             const std::string& fp32_vt_c_update, bool unrefined) override {
    a_scale_ = a_scale;
    r64_ = DeviceBuffer<double>();
    cheap_r_ = DeviceBuffer<double>();
    normal32_.reset();
    normal64_.reset();
    qr32_.reset();
    qr64_.reset();
    qr_unrefined_.reset();
    factors32_ = DeviceBuffer<float>();  // the other precision's factors go
    factors64_ = DeviceBuffer<double>();
    const std::int64_t m = a_.rows, n = a_.cols;
    if (fp64 && unrefined) {  // cuSOLVER's geqrf, for solve_unrefined
      factors64_ = DeviceBuffer<double>(ctx_, m * n);
      scaled_copy_kernel<<<matrix_grid(m, n), 256, 0, ctx_.stream()>>>(a_.data, a_.ld, m, n, a_scale, factors64_.data(),
                                                                       m);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      update_ = "cusolver-dgeqrf";
      qr_unrefined_ = std::make_unique<CusolverQrSolve>(ctx_, device_view(factors64_.data(), m, n, m));
      return qr_unrefined_->diagonal();
    }
    if (fp64) {
      // Wider blocks where the trailing updates dominate (docs/least_squares.md).
      if (block == 0) block = n >= 1024 ? 256 : 128;
      update_ = "cublas-dgemm";
      factors64_ = DeviceBuffer<double>(ctx_, m * n);
      scaled_copy_kernel<<<matrix_grid(m, n), 256, 0, ctx_.stream()>>>(a_.data, a_.ld, m, n, a_scale, factors64_.data(),
                                                                       m);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      // FP64 panels: the TSQR tree, faster than cuSOLVER's geqrf panels on every measured shape
      // (docs/least_squares.md).
      qr64_ = std::make_unique<DeviceQr<double>>(ctx_, device_view(factors64_.data(), m, n, m), block,
                                                 gemm::find_backend("cublas-dgemm"), QrPanel::Tsqr);
      return qr64_->diagonal();
    }
    const std::string update = fp32_update.empty() ? fp32_update_backend() : fp32_update;
    // cublas-fp16x3 accumulates in the tensor cores (truncating), so its error grows with the inner
    // dimension: V^T C, whose inner dimension is m, goes to tf32tf32 (Ootomo & Yokota's (2021) corrected product,
    // RN sums outside the tensor cores, split-K: more accurate than SGEMM, so that CGLS takes
    // fewer iterations with the R it gives, and a little faster at these shapes; a backend asked
    // for by name takes both products unless fp32_vt_c_update names another).
    std::string vt_c = fp32_vt_c_update;
    if (vt_c.empty() && fp32_update.empty() && update == "cublas-fp16x3") vt_c = "tf32tf32";
    if (vt_c == update) vt_c.clear();
    update_ = vt_c.empty() ? update : update + " (V^T C: " + vt_c + ")";
    if (block == 0) block = update == "cublas-fp16x3" ? 256 : 128;
    // Columns padded to 128 bytes: TMA reads the trailing matrix in place for V^T C on tf32tf32
    // (16-byte aligned columns), and every column starts on a memory transaction.
    ld32_ = (m + 31) / 32 * 32;
    factors32_ = DeviceBuffer<float>(ctx_, ld32_ * n);
    // The padding rows are zeroed: cuBLAS's trsm with R loads whole tiles, rows m .. ld32 - 1 too
    // where m < n rounded up to 32, and must not read uninitialized memory there (compute-sanitizer
    // initcheck, cublasStrsm from DeviceQr::solve_r).
    if (ld32_ > m)
      MIXSOLVE_CUDA_CHECK(cudaMemset2DAsync(factors32_.data() + m, ld32_ * sizeof(float), 0,
                                            (ld32_ - m) * sizeof(float), n, ctx_.stream()));
    scaled_copy_kernel<<<matrix_grid(m, n), 256, 0, ctx_.stream()>>>(a_.data, a_.ld, m, n, a_scale, factors32_.data(),
                                                                     ld32_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    qr32_ = std::make_unique<DeviceQr<float>>(ctx_, device_view(factors32_.data(), m, n, ld32_), block,
                                              gemm::find_backend(update), QrPanel::Tsqr,
                                              vt_c.empty() ? nullptr : &gemm::find_backend(vt_c));
    return qr32_->diagonal();
  }

  std::string update_backend() const override { return update_; }

  // The FP32 trailing updates' backend where none is asked for: cublas-fp16x3 (with 256-column
  // blocks) where the updates dominate the QR, n >= 1024, and A's column norms span at most 2^12.
  // Its split scales each whole operand and keeps an absolute error of ~2^-39 of the operand's
  // largest entry (its FP16 lo part goes subnormal below that), so in C - V W the columns of
  // W = T^T V^T C, as large as C's columns, err relative to themselves by ~2^-39 times the span
  // of the column norms: within FP32's rounding where it is 2^12 or less. (SGEMM's error is
  // relative to each column's own products; trailing columns only shrink as the QR goes on, and
  // each update is scaled anew.)
  std::string fp32_update_backend() {
    if (a_.cols < 1024) return "cublas-sgemm";
    const std::vector<double>& squares = column_squares();
    if (squares.empty()) return "cublas-sgemm";
    const auto [smallest, largest] = std::minmax_element(squares.begin(), squares.end());
    // Squared norms: a span of 2^24 is one of 2^12 in the norms.
    return *smallest > 0 && *largest <= 0x1p24 * *smallest ? "cublas-fp16x3" : "cublas-sgemm";
  }

  CholeskyQrFactors factor_cholesky_qr() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    CholeskyQrFactors out;
    if (!qr32_) return out;
    cudaStream_t stream = ctx_.stream();
    cublasHandle_t h = ctx_.cublas();
    const double one = 1, zero = 0;
    DeviceBuffer<double> r32(ctx_, n * n), gram(ctx_, n * n);
    upper_triangle_kernel<<<matrix_grid(n, n), 256, 0, stream>>>(factors32_.data(), ld32_, n, 1.0, r32.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    // The FP32 factors go before Y comes (4 m n bytes of the peak): whatever follows, this R or the
    // FP64 Householder QR, has no use for them.
    qr32_.reset();
    factors32_ = DeviceBuffer<float>();
    normal32_.reset();
    {
      // Y := a_scale A R_32^-1 and its Gram matrix, in FP64.
      DeviceBuffer<double> y(ctx_, m * n);
      scaled_copy_kernel<<<matrix_grid(m, n), 256, 0, stream>>>(a_.data, a_.ld, m, n, a_scale_, y.data(), m);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                                        int(m), int(n), &one, r32.data(), int(n), y.data(), int(m)));
      // DGEMM for n <= 1024 (it ran 0.6 ms against DSYRK's 1.7 ms at 262144 x 256, 4.7 against 5.8 at
      // 100003 x 1000), DSYRK above (22 ms against 40 at 65536 x 4096; H100, lstsq_benchmark
      // --cholesky-parts).
      if (n <= 1024)
        MIXSOLVE_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(n), int(m), &one, y.data(), int(m),
                                          y.data(), int(m), &zero, gram.data(), int(n)));
      else
        MIXSOLVE_CUBLAS_CHECK(cublasDsyrk(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, int(n), int(m), &one, y.data(),
                                          int(m), &zero, gram.data(), int(n)));
    }
    // R_2 := chol(Y^T Y) (upper) in place of the Gram matrix.
    cusolverDnHandle_t solver = ctx_.cusolver();
    int work_size = 0;
    MIXSOLVE_CUSOLVER_CHECK(
        cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_UPPER, int(n), gram.data(), int(n), &work_size));
    DeviceBuffer<double> work(ctx_, std::max(work_size, 1));
    DeviceBuffer<int> info(ctx_, 1);
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_UPPER, int(n), gram.data(), int(n), work.data(),
                                             work_size, info.data()));
    int status = 0;
    info.copy_to_host(&status, 1, stream);
    if (status != 0) {  // not numerically positive definite: the FP32 R stays for the rank-revealing attempt
      cheap_r_ = std::move(r32);
      return out;
    }
    // R := R_2 R_32.
    DeviceBuffer<double> r(ctx_, n * n);
    MIXSOLVE_CUBLAS_CHECK(cublasDtrmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                                      int(n), int(n), &one, gram.data(), int(n), r32.data(), int(n), r.data(), int(n)));
    DeviceBuffer<double> diagonals(ctx_, 2 * n);
    two_diagonals_kernel<<<vector_blocks(n), 256, 0, stream>>>(r.data(), gram.data(), n, diagonals.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    std::vector<double> d(2 * n);
    diagonals.copy_to_host(d.data(), 2 * n, stream);
    double largest2 = 0, smallest2 = INFINITY;
    for (std::int64_t j = 0; j < n; ++j) {
      if (!(d[j] > 0) || !std::isfinite(d[j])) {
        cheap_r_ = std::move(r32);
        return out;
      }
      largest2 = std::max(largest2, d[n + j]);
      smallest2 = std::min(smallest2, d[n + j]);
    }
    out.ok = true;
    out.diagonal.assign(d.begin(), d.begin() + n);
    out.y_diagonal_ratio = smallest2 / largest2;
    r64_ = std::move(r);
    normal64_.reset();
    return out;
  }

  std::vector<double> smallest_singular_vector(std::int64_t start) override {
    const std::int64_t n = a_.cols;
    if (!qr64_ && !qr_unrefined_ && r64_.size() == 0)
      throw InvalidArgument("smallest_singular_vector: needs FP64 factors");
    std::vector<double> e(n, 0.0);
    e[start] = 1;
    DeviceBuffer<double> v(ctx_, n);
    v.copy_from_host(e, ctx_.stream());
    const MatrixView<double> view = device_view(v.data(), n, 1, n);
    const auto normalize = [&] {
      const double norm = nrm2(ctx_.cublas(), n, v.data());
      if (norm > 0 && std::isfinite(norm)) {
        const double inverse = 1 / norm;
        MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(n), &inverse, v.data(), 1));
      }
    };
    const auto solve = [&](bool transposed) {  // v := R^-1 v or R^-T v
      if (qr64_) {
        transposed ? qr64_->solve_rt(view) : qr64_->solve_r(view);
        return;
      }
      if (qr_unrefined_) {
        qr_unrefined_->solve_r(v.data(), transposed);
        return;
      }
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(ctx_.cublas(), CUBLAS_FILL_MODE_UPPER, transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        CUBLAS_DIAG_NON_UNIT, int(n), r64_.data(), int(n), v.data(), 1));
    };
    // R's entries where the factors keep them: the Cholesky QR's n x n R, or the factored matrix's
    // upper triangle (Householder, geqrf form).
    const double* r = r64_.size() > 0 ? r64_.data() : factors64_.data();
    const std::int64_t ld = r64_.size() > 0 ? n : a_.rows;
    double pivot = 0;
    MIXSOLVE_CUDA_CHECK(
        cudaMemcpyAsync(&pivot, r + start + start * ld, sizeof pivot, cudaMemcpyDeviceToHost, ctx_.stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
    if (pivot == 0) {
      // r_start,start = 0 (an exactly dependent column; the first such: start is the first column
      // of smallest |r_jj|): v = [-R11^-1 r_12; 1; 0] with R11 = R(0:start, 0:start) nonsingular,
      // so that R v = 0 exactly (the iteration below would divide by that zero, as the host's
      // skips).
      if (start > 0) {
        MIXSOLVE_CUDA_CHECK(
            cudaMemcpyAsync(v.data(), r + start * ld, sizeof(double) * start, cudaMemcpyDeviceToDevice, ctx_.stream()));
        const double minus_one = -1;
        MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(start), &minus_one, v.data(), 1));
        MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(ctx_.cublas(), CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                                          int(start), r, int(ld), v.data(), 1));
      }
      normalize();
      v.copy_to_host(e.data(), n, ctx_.stream());
      return e;
    }
    solve(false);
    normalize();
    solve(true);
    solve(false);
    normalize();
    v.copy_to_host(e.data(), n, ctx_.stream());
    return e;
  }

  // Without copies: A_0:j is a view of A, R(0:j+1, 0:j+1) the FP32 factors' leading block in FP64
  // at A's scale (the host's way, through factors_r and the tall columns, moved n^2 values each
  // way and gathered the columns: 0.40 s of a 0.47 s FP32 attempt at 65536 x 4096, H100).
  ColumnDistance column_distance(std::int64_t j, int max_iterations) override {
    if (!qr32_ || a_.rows < a_.cols) return {};
    const std::int64_t m = a_.rows, k = j, ldr = j + 1;
    cudaStream_t stream = ctx_.stream();
    cublasHandle_t h = ctx_.cublas();
    if (k == 0) return {nrm2(h, m, a_.data), true};  // v = e_0
    DeviceBuffer<double> r(ctx_, std::size_t(ldr * ldr)), y(ctx_, std::size_t(k));
    // R of A itself: the factors hold a_scale A (a_scale a power of two: the division is exact).
    upper_triangle_kernel<<<matrix_grid(ldr, ldr), 256, 0, stream>>>(factors32_.data(), ld32_, ldr, 1 / a_scale_,
                                                                     r.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    // y = R11^-1 R(0:j, j), the FP32 factors' own solution.
    MIXSOLVE_CUDA_CHECK(
        cudaMemcpyAsync(y.data(), r.data() + k * ldr, sizeof(double) * k, cudaMemcpyDeviceToDevice, stream));
    MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, int(k), r.data(),
                                      int(ldr), y.data(), 1));
    // R11's diagonal extremes for the refinement's scales.
    int smallest_at = 0, largest_at = 0;
    MIXSOLVE_CUBLAS_CHECK(cublasIdamin(h, int(k), r.data(), int(ldr + 1), &smallest_at));
    MIXSOLVE_CUBLAS_CHECK(cublasIdamax(h, int(k), r.data(), int(ldr + 1), &largest_at));
    double smallest = 0, largest = 0;
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&smallest, r.data() + std::int64_t(smallest_at - 1) * (ldr + 1), sizeof(double),
                                        cudaMemcpyDeviceToHost, stream));
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&largest, r.data() + std::int64_t(largest_at - 1) * (ldr + 1), sizeof(double),
                                        cudaMemcpyDeviceToHost, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
    smallest = std::fabs(smallest);
    largest = std::fabs(largest);
    NormalEquationsSolver normal(ctx_, r.data(), ldr, k);
    DeviceBlockSemiNormalSteps steps(ctx_, device_view<const double>(a_.data, m, k, a_.ld),
                                     device_view<const double>(a_.data + k * a_.ld, m, 1, a_.ld), normal,
                                     device_view(y.data(), k, 1, k), true);
    const LsRefinementResult refined =
        refine_block(steps, max_iterations, {smallest, largest, largest > 0 ? smallest / largest : 0})[0];
    const double distance = steps.residual_norms()[0];
    return {distance / std::hypot(1.0, nrm2(h, k, y.data())), accepted(refined.stop)};
  }

  double norm_a_times(const std::vector<double>& v) override {
    DeviceBuffer<double> dv(ctx_, v.size()), y(ctx_, a_.rows);
    dv.copy_from_host(v, ctx_.stream());
    const double one = 1, zero = 0;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(a_.rows), int(a_.cols), &one, a_.data, int(a_.ld),
                                      dv.data(), 1, &zero, y.data(), 1));
    return nrm2(ctx_.cublas(), a_.rows, y.data());
  }

  LsRefinementResult refine(std::int64_t j, int max_iterations, LsMethod method,
                            const LsFactorScales& scales) override {
    if (qr_unrefined_) throw std::logic_error("least_squares: factors for an unrefined solve are not refined");
    const double* b = b_.data + j * b_.ld;
    double* x = x_.data + j * x_.ld;
    if (method == LsMethod::Cgls) {  // the FP32 R alone, in FP64
      if (!qr32_) throw std::logic_error("least_squares: CGLS refines the FP32 factors only");
      // The first x: the FP32 factors' own.
      DeviceBuffer<float> work(ctx_, a_.rows);
      factors_solution(ctx_, *qr32_, b, std::ilogb(a_scale_), work.data(), x);
      if (!normal32_) normal32_ = std::make_unique<NormalEquationsSolver>(ctx_, factors32_.data(), ld32_, a_.cols);
      DeviceSemiNormalSteps steps(ctx_, a_, b, *normal32_, a_scale_, x, true);
      return solvers_detail::refine(steps, LsFactorKind::Cheap, max_iterations, LsMethod::Cgls, scales);
    }
    if (r64_.size() > 0) {  // Cholesky QR factors
      if (method != LsMethod::Augmented)
        throw std::logic_error("least_squares: Cholesky QR factors take the semi-normal steps only");
      if (!normal64_) normal64_ = std::make_unique<NormalEquationsSolver>(ctx_, r64_.data(), a_.cols, a_.cols);
      DeviceSemiNormalSteps steps(ctx_, a_, b, *normal64_, a_scale_, x);
      return solvers_detail::refine(steps, LsFactorKind::SemiNormal, max_iterations, LsMethod::Augmented, scales);
    }
    if (qr64_) {
      DeviceLsSteps<double> steps(ctx_, a_, b, *qr64_, a_scale_, x, r_.data());
      return solvers_detail::refine(steps, LsFactorKind::Fp64Qr, max_iterations, method, scales);
    }
    DeviceLsSteps<float> steps(ctx_, a_, b, *qr32_, a_scale_, x, r_.data());
    return solvers_detail::refine(steps, LsFactorKind::Cheap, max_iterations, method, scales);
  }

  void solve_unrefined() override {
    if (!qr_unrefined_) throw std::logic_error("least_squares: an unrefined solve without its factors");
    const std::int64_t m = a_.rows, n = a_.cols, k = b_.cols;
    if (k == 0) return;
    // X := a_scale R^-1 (Q^T B)(1:n) (the factors hold a_scale A).
    DeviceBuffer<double> c(ctx_, m * k);
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(c.data(), sizeof(double) * m, b_.data, sizeof(double) * b_.ld,
                                          sizeof(double) * m, k, cudaMemcpyDeviceToDevice, ctx_.stream()));
    qr_unrefined_->solve(device_view(c.data(), m, k, m));
    scaled_copy_kernel<<<matrix_grid(n, k), 256, 0, ctx_.stream()>>>(c.data(), m, n, k, a_scale_, x_.data, x_.ld);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  std::vector<double> residual_norms() override {
    std::vector<double> out;
    for (std::int64_t j = 0; j < b_.cols; ++j) {
      b_minus_ax(ctx_, a_, b_.data + j * b_.ld, x_.data + j * x_.ld, r_.data());
      out.push_back(nrm2(ctx_.cublas(), b_.rows, r_.data()));
    }
    return out;
  }

  std::vector<double> factors_r() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    if (m < n || n == 0) return {};
    std::vector<double> r(std::size_t(n * n), 0.0);
    cudaStream_t stream = ctx_.stream();
    if (r64_.size() > 0) {  // the Cholesky QR's R, n x n
      r64_.copy_to_host(r.data(), std::size_t(n * n), stream);
    } else if (qr32_) {
      DeviceBuffer<double> r32(ctx_, n * n);
      upper_triangle_kernel<<<matrix_grid(n, n), 256, 0, stream>>>(factors32_.data(), ld32_, n, 1.0, r32.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      r32.copy_to_host(r.data(), std::size_t(n * n), stream);
    } else if (cheap_r_.size() > 0) {  // the FP32 R the failed Cholesky QR started from
      cheap_r_.copy_to_host(r.data(), std::size_t(n * n), stream);
    } else if (qr64_ || qr_unrefined_) {  // the top n rows of the factored matrix, reflectors below the diagonal
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(r.data(), sizeof(double) * n, factors64_.data(), sizeof(double) * m,
                                            sizeof(double) * n, n, cudaMemcpyDeviceToHost, stream));
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
    } else {
      return {};
    }
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        double& e = r[std::size_t(i + j * n)];
        e = i <= j ? e / a_scale_ : 0.0;  // R of A at its own scale
      }
    return r;
  }
  std::unique_ptr<TallColumns> tall_columns() override { return std::make_unique<DeviceTallColumns>(ctx_, a_, b_); }
  void write_x(const MatrixView<const double>& x) override {
    if (x_.empty()) return;
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(x_.data, sizeof(double) * x_.ld, x.data, sizeof(double) * x.ld,
                                          sizeof(double) * x_.rows, x_.cols, cudaMemcpyHostToDevice, ctx_.stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
  }

  void fill_x_with_nan() override {
    if (x_.empty()) return;
    fill_nan_kernel<<<matrix_grid(x_.rows, x_.cols), 256, 0, ctx_.stream()>>>(x_.data, x_.ld, x_.rows, x_.cols);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

 private:
  Context& ctx_;
  MatrixView<const double> a_, b_;
  MatrixView<double> x_;
  DeviceBuffer<double> r_;
  DeviceBuffer<unsigned long long> scan_;
  double largest_a_ = -1;               // max |a_ij| once A has been scanned
  std::vector<double> column_squares_;  // column_squares(), once computed
  DeviceBuffer<float> factors32_;
  std::int64_t ld32_ = 0;  // factors32_'s leading dimension
  DeviceBuffer<double> factors64_;
  std::unique_ptr<DeviceQr<float>> qr32_;
  std::unique_ptr<DeviceQr<double>> qr64_;
  std::unique_ptr<CusolverQrSolve> qr_unrefined_;  // FP64 factors for solve_unrefined, in factors64_
  // n x n: the Cholesky QR's R, where it holds the factors; and (R^T R)^-1 of it and of the FP32
  // factors' R (for CGLS).
  DeviceBuffer<double> r64_;
  std::unique_ptr<NormalEquationsSolver> normal64_, normal32_;
  // The FP32 R in FP64 (n x n), kept where the Cholesky QR failed after the FP32 factors went: the
  // rank-revealing attempt's start (factors_r), saving it an FP32 QR.
  DeviceBuffer<double> cheap_r_;
  std::string update_;  // the Householder factors' update backend(s)
  double a_scale_ = 1;
};

}  // namespace

std::unique_ptr<LsSpace> make_device_ls_space(Context& ctx, const MatrixView<const double>& a) {
  if (!ctx.has_device()) throw InvalidArgument("least_squares: device matrices need a Context with a GPU");
  if (a.rows > INT_MAX || a.ld > INT_MAX)
    throw InvalidArgument("least_squares: m (" + std::to_string(a.rows) +
                          ") or a leading dimension beyond cuBLAS's int");
  return std::make_unique<DeviceLsSpace>(ctx, a);
}

}  // namespace mixsolve::solvers_detail
