// Device engine (first version): blocked LU with partial pivoting on the GPU whose trailing
// updates go through the chosen gemm/ backend; FP64 through cuSOLVER dgetrf; FP64 residuals and
// vector operations through cuBLAS; triangular solves in the working precision with cublas?trsm.
// Correct first: the panel (cuSOLVER getrf on the tall panel) and the row interchanges (one
// thread per column) are not yet tuned; zero pivots are collected per panel and read at the end.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../engine.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail {

namespace {

unsigned blocks_for(std::int64_t total) {
  const std::int64_t b = (total + 255) / 256;
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(b, 1), 65535));
}

template <class From, class To>
__global__ void convert_kernel(const From* src, std::int64_t lds, To* dst, std::int64_t ldd, std::int64_t rows,
                               std::int64_t cols) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < rows * cols;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    dst[i + j * ldd] = static_cast<To>(src[i + j * lds]);
  }
}

// Applies the panel's row interchanges (1-based, relative to row `first`) to columns [c0, c1).
template <class T>
__global__ void swap_rows_kernel(T* a, std::int64_t lda, std::int64_t first, const int* pivots, int count,
                                 std::int64_t c0, std::int64_t c1) {
  const std::int64_t c = c0 + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (c >= c1) return;
  T* column = a + c * lda;
  for (int i = 0; i < count; ++i) {
    const std::int64_t p = first + pivots[i] - 1;
    if (p != first + i) {
      const T t = column[first + i];
      column[first + i] = column[p];
      column[p] = t;
    }
  }
}

// Applies a whole factorization's interchanges (global 0-based pivot rows) to the rows of y.
template <class T>
__global__ void apply_pivots_kernel(T* y, std::int64_t ldy, std::int64_t cols, const int* pivots, std::int64_t n) {
  const std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  T* column = y + c * ldy;
  for (std::int64_t i = 0; i < n; ++i) {
    const int p = pivots[i];
    if (p != i) {
      const T t = column[i];
      column[i] = column[p];
      column[p] = t;
    }
  }
}

__global__ void add_panel_pivots_kernel(const int* panel, int count, std::int64_t first, int* global) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) global[first + i] = int(first + panel[i] - 1);
}

template <class T>
__global__ void count_nonfinite_kernel(const T* a, std::int64_t lda, std::int64_t rows, std::int64_t cols,
                                       unsigned long long* first_bad) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < rows * cols;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    if (!isfinite(double(a[i + j * lda]))) atomicMin(first_bad, static_cast<unsigned long long>(idx));
  }
}

__global__ void row_abs_sums_kernel(const double* a, std::int64_t lda, std::int64_t n, double* sums) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j) s += fabs(a[i + j * lda]);
  sums[i] = s;
}

__global__ void column_abs_max_kernel(const double* m, std::int64_t ld, std::int64_t rows, double* out) {
  // one block per column
  double v = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) v = fmax(v, fabs(m[i + blockIdx.x * ld]));
  for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
  __shared__ double warp_max[32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double r = 0;
    for (int w = 0; w < (blockDim.x + 31) / 32; ++w) r = fmax(r, warp_max[w]);
    out[blockIdx.x] = r;
  }
}

const gemm::Backend& device_update_backend(Precision p) {
  switch (p) {
    case Precision::FP32: return gemm::find_backend("cublas-sgemm");
    case Precision::TF32: return gemm::find_backend("cublas-tf32");
    case Precision::FP16: return gemm::find_backend("cublas-fp16");
    case Precision::BF16: return gemm::find_backend("cublas-bf16");
    case Precision::Halfhalf: return gemm::find_backend("halfhalf");
    case Precision::Tf32tf32: return gemm::find_backend("tf32tf32");
    default: break;
  }
  throw InvalidArgument("device engine: no FP32-stored factorization for precision " + to_string(p));
}

class DeviceEngine final : public Engine {
 public:
  DeviceEngine(Context& ctx, const MatrixView<const double>& a, int block_size) : ctx_(ctx), a_(a) {
    n_ = a.rows;
    nb_ = block_size > 0 ? block_size : 256;
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver_));
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver_, ctx.stream()));
    pivots_ = DeviceBuffer<int>(std::max<std::int64_t>(n_, 1));
    info_ = DeviceBuffer<int>(1);
    flag_ = DeviceBuffer<unsigned long long>(1);
    column_max_ = DeviceBuffer<double>(64);
  }
  ~DeviceEngine() override { cusolverDnDestroy(solver_); }

  Memory memory() const override { return Memory::Device; }

  double norm_inf() override {
    DeviceBuffer<double> sums(std::max<std::int64_t>(n_, 1));
    row_abs_sums_kernel<<<blocks_for(n_), 256, 0, stream()>>>(a_.data, a_.ld, n_, sums.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    std::vector<double> h = sums.to_host(stream());
    return h.empty() ? 0.0 : *std::max_element(h.begin(), h.end());
  }

  std::pair<std::int64_t, std::int64_t> find_nonfinite(const MatrixView<const double>& m) override {
    return find_nonfinite_in(m.data, m.ld, m.rows, m.cols);
  }

  FactorResult factor(Precision p) override {
    FactorResult result;
    precision_ = p;
    if (p == Precision::FP64) {
      factors64_ = DeviceBuffer<double>(n_ * n_);
      factors32_ = DeviceBuffer<float>();
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(factors64_.data(), n_ * sizeof(double), a_.data, a_.ld * sizeof(double),
                                            n_ * sizeof(double), n_, cudaMemcpyDeviceToDevice, stream()));
      int lwork = 0;
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(solver_, int(n_), int(n_), factors64_.data(), int(n_), &lwork));
      DeviceBuffer<double> work(std::max(lwork, 1));
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf(solver_, int(n_), int(n_), factors64_.data(), int(n_), work.data(),
                                               pivots_.data(), info_.data()));
      const int info = read_info();
      if (info > 0) {
        result.status = StopReason::ZeroPivot;
        result.zero_pivot_column = info - 1;
        return result;
      }
      // cuSOLVER's pivots are 1-based and sequential; keep them as global 0-based rows.
      add_panel_pivots_kernel<<<blocks_for(n_), 256, 0, stream()>>>(pivots_.data(), int(n_), 0, pivots_.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      if (find_nonfinite_in(factors64_.data(), n_, n_, n_).first >= 0) result.status = StopReason::Overflow;
      track_peak();
      return result;
    }
    const gemm::Backend& update = device_update_backend(p);
    factors64_ = DeviceBuffer<double>();
    factors32_ = DeviceBuffer<float>(n_ * n_);
    float* f = factors32_.data();
    convert_kernel<<<blocks_for(n_ * n_), 256, 0, stream()>>>(a_.data, a_.ld, f, n_, n_, n_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    if (find_nonfinite_in(f, n_, n_, n_).first >= 0) {
      result.status = StopReason::Overflow;  // beyond FP32's range
      return result;
    }
    int lwork = 0;
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgetrf_bufferSize(solver_, int(n_), int(std::min<std::int64_t>(nb_, n_)), f, int(n_), &lwork));
    DeviceBuffer<float> work(std::max(lwork, 1));
    DeviceBuffer<int> panel_pivots(nb_);
    // One info slot per panel, read once at the end: no synchronisation inside the loop. After a
    // zero pivot the remaining panels compute with Inf/NaN; those factors are discarded.
    const std::int64_t panels = (n_ + nb_ - 1) / nb_;
    DeviceBuffer<int> panel_info(std::max<std::int64_t>(panels, 1));
    const float one = 1.0f;
    for (std::int64_t j0 = 0, panel_index = 0; j0 < n_; j0 += nb_, ++panel_index) {
      const std::int64_t jb = std::min<std::int64_t>(nb_, n_ - j0), rows = n_ - j0;
      float* panel = f + j0 + j0 * n_;
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgetrf(solver_, int(rows), int(jb), panel, int(n_), work.data(),
                                               panel_pivots.data(), panel_info.data() + panel_index));
      add_panel_pivots_kernel<<<blocks_for(jb), 256, 0, stream()>>>(panel_pivots.data(), int(jb), j0, pivots_.data());
      if (j0 > 0)
        swap_rows_kernel<<<blocks_for(j0), 256, 0, stream()>>>(f, n_, j0, panel_pivots.data(), int(jb), 0, j0);
      if (j0 + jb < n_)
        swap_rows_kernel<<<blocks_for(n_ - j0 - jb), 256, 0, stream()>>>(f, n_, j0, panel_pivots.data(), int(jb),
                                                                          j0 + jb, n_);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      const std::int64_t rest = n_ - j0 - jb;
      if (rest == 0) continue;
      // U12 = L11^-1 A12, then A22 -= L21 U12 in the backend's arithmetic.
      MIXSOLVE_CUBLAS_CHECK(cublasStrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                        CUBLAS_DIAG_UNIT, int(jb), int(rest), &one, panel, int(n_),
                                        f + j0 + (j0 + jb) * n_, int(n_)));
      gemm::GemmArgs<float> g{gemm::Op::N, gemm::Op::N, rest, rest, jb, -1.0f, f + (j0 + jb) + j0 * n_, n_,
                              f + j0 + (j0 + jb) * n_, n_, 1.0f, f + (j0 + jb) + (j0 + jb) * n_, n_};
      update.run(ctx_, g);
    }
    const std::vector<int> infos = panel_info.to_host(stream());
    for (std::int64_t i = 0; i < panels; ++i)
      if (infos[i] > 0) {
        result.status = StopReason::ZeroPivot;
        result.zero_pivot_column = i * nb_ + infos[i] - 1;
        return result;
      }
    if (find_nonfinite_in(f, n_, n_, n_).first >= 0) result.status = StopReason::Overflow;
    track_peak();
    return result;
  }

  void apply_inverse(const MatrixView<double>& y) override {
    const std::int64_t k = y.cols;
    if (precision_ == Precision::FP64) {
      apply_pivots_kernel<<<blocks_for(k), 256, 0, stream()>>>(y.data, y.ld, k, pivots_.data(), n_);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      const double one = 1.0;
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                        CUBLAS_DIAG_UNIT, int(n_), int(k), &one, factors64_.data(), int(n_), y.data, int(y.ld)));
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                        CUBLAS_DIAG_NON_UNIT, int(n_), int(k), &one, factors64_.data(), int(n_), y.data,
                                        int(y.ld)));
      return;
    }
    if (solve_buffer_.size() < std::size_t(n_ * k)) solve_buffer_ = DeviceBuffer<float>(n_ * k);
    float* w = solve_buffer_.data();
    convert_kernel<<<blocks_for(n_ * k), 256, 0, stream()>>>(y.data, y.ld, w, n_, n_, k);
    apply_pivots_kernel<<<blocks_for(k), 256, 0, stream()>>>(w, n_, k, pivots_.data(), n_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const float one = 1.0f;
    MIXSOLVE_CUBLAS_CHECK(cublasStrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                      CUBLAS_DIAG_UNIT, int(n_), int(k), &one, factors32_.data(), int(n_), w, int(n_)));
    MIXSOLVE_CUBLAS_CHECK(cublasStrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                      CUBLAS_DIAG_NON_UNIT, int(n_), int(k), &one, factors32_.data(), int(n_), w, int(n_)));
    convert_kernel<<<blocks_for(n_ * k), 256, 0, stream()>>>(w, n_, y.data, y.ld, n_, k);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  void residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                const MatrixView<double>& r) override {
    copy(b, r);
    const double minus_one = -1.0, one = 1.0;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(n_), int(x.cols), int(n_), &minus_one,
                                      a_.data, int(a_.ld), x.data, int(x.ld), &one, r.data, int(r.ld)));
  }

  void multiply(const double* x, double* y) override {
    const double one = 1.0, zero = 0.0;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(n_), int(n_), &one, a_.data, int(a_.ld), x, 1,
                                      &zero, y, 1));
  }

  void column_norms_inf(const MatrixView<const double>& m, double* out) override {
    if (column_max_.size() < std::size_t(m.cols)) column_max_ = DeviceBuffer<double>(m.cols);
    column_abs_max_kernel<<<unsigned(m.cols), 256, 0, stream()>>>(m.data, m.ld, m.rows, column_max_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    column_max_.copy_to_host(out, m.cols, stream());
  }

  MatrixView<double> scratch(int slot, std::int64_t cols) override {
    if (slot >= int(scratch_.size())) scratch_.resize(slot + 1);
    if (scratch_[slot].size() < std::size_t(n_ * cols)) scratch_[slot] = DeviceBuffer<double>(n_ * cols);
    track_peak();
    return device_view(scratch_[slot].data(), n_, cols, std::max<std::int64_t>(n_, 1));
  }

  void copy(const MatrixView<const double>& src, const MatrixView<double>& dst) override {
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.ld * sizeof(double), src.data, src.ld * sizeof(double),
                                          src.rows * sizeof(double), src.cols, cudaMemcpyDeviceToDevice, stream()));
  }
  void axpy(double alpha, const double* x, double* y) override {
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(n_), &alpha, x, 1, y, 1));
  }
  void scal(double alpha, double* x) override { MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(n_), &alpha, x, 1)); }
  void zero(double* x) override { MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(x, 0, n_ * sizeof(double), stream())); }
  double dot(const double* x, const double* y) override {
    double r = 0;  // host pointer mode: cuBLAS returns after the result is written (a synchronisation)
    MIXSOLVE_CUBLAS_CHECK(cublasDdot(ctx_.cublas(), int(n_), x, 1, y, 1, &r));
    return r;
  }
  void add(const MatrixView<const double>& x, const MatrixView<double>& y) override {
    for (std::int64_t j = 0; j < x.cols; ++j) axpy(1.0, x.data + j * x.ld, y.data + j * y.ld);
  }
  void synchronize() override { ctx_.synchronize(); }
  std::size_t peak_workspace_bytes() const override { return peak_; }

 private:
  cudaStream_t stream() const { return ctx_.stream(); }

  int read_info() {
    int info = 0;
    info_.copy_to_host(&info, 1, stream());
    return info;
  }

  template <class T>
  std::pair<std::int64_t, std::int64_t> find_nonfinite_in(const T* data, std::int64_t ld, std::int64_t rows,
                                                          std::int64_t cols) {
    if (rows == 0 || cols == 0) return {-1, -1};
    const unsigned long long none = ~0ull;
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(flag_.data(), &none, sizeof none, cudaMemcpyHostToDevice, stream()));
    count_nonfinite_kernel<<<blocks_for(rows * cols), 256, 0, stream()>>>(data, ld, rows, cols, flag_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    unsigned long long first = 0;
    flag_.copy_to_host(&first, 1, stream());
    if (first == none) return {-1, -1};
    return {std::int64_t(first % rows), std::int64_t(first / rows)};
  }

  void track_peak() {
    std::size_t bytes = factors32_.bytes() + factors64_.bytes() + pivots_.bytes() + solve_buffer_.bytes() +
                        ctx_.workspace_capacity();
    for (const auto& s : scratch_) bytes += s.bytes();
    peak_ = std::max(peak_, bytes);
  }

  Context& ctx_;
  MatrixView<const double> a_;  // the user's matrix, read only
  cusolverDnHandle_t solver_ = nullptr;
  Precision precision_ = Precision::FP64;
  DeviceBuffer<float> factors32_, solve_buffer_;
  DeviceBuffer<double> factors64_, column_max_;
  DeviceBuffer<int> pivots_, info_;
  DeviceBuffer<unsigned long long> flag_;
  std::vector<DeviceBuffer<double>> scratch_;
  std::int64_t nb_ = 256;
  std::size_t peak_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_device_engine(Context& ctx, const MatrixView<const double>& a, int block_size) {
  return std::make_unique<DeviceEngine>(ctx, a, block_size);
}

}  // namespace mixsolve::solvers_detail
