// SPDX-License-Identifier: BSD-3-Clause
#include "qr/cuda/device_qr.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace {

// cuSOLVER and cuBLAS by element type.
int geqrf_work(cusolverDnHandle_t h, int m, int n, float* a, int lda) {
  int lwork = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgeqrf_bufferSize(h, m, n, a, lda, &lwork));
  return lwork;
}
int geqrf_work(cusolverDnHandle_t h, int m, int n, double* a, int lda) {
  int lwork = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf_bufferSize(h, m, n, a, lda, &lwork));
  return lwork;
}
void geqrf(cusolverDnHandle_t h, int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info) {
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgeqrf(h, m, n, a, lda, tau, work, lwork, info));
}
void geqrf(cusolverDnHandle_t h, int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info) {
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf(h, m, n, a, lda, tau, work, lwork, info));
}
// y := alpha op(V) x + beta y for V rows x cols (leading dimension ldv); cuBLAS's GEMV for one
// column, its GEMM for several.
void multiply(cublasHandle_t h, cublasOperation_t op, int rows, int cols, int k, float alpha, const float* v, int ldv,
              const float* x, int ldx, float beta, float* y, int ldy) {
  const int out = op == CUBLAS_OP_N ? rows : cols, inner = op == CUBLAS_OP_N ? cols : rows;
  if (k == 1)
    MIXSOLVE_CUBLAS_CHECK(cublasSgemv(h, op, rows, cols, &alpha, v, ldv, x, 1, &beta, y, 1));
  else
    MIXSOLVE_CUBLAS_CHECK(cublasSgemm(h, op, CUBLAS_OP_N, out, k, inner, &alpha, v, ldv, x, ldx, &beta, y, ldy));
}
void multiply(cublasHandle_t h, cublasOperation_t op, int rows, int cols, int k, double alpha, const double* v, int ldv,
              const double* x, int ldx, double beta, double* y, int ldy) {
  const int out = op == CUBLAS_OP_N ? rows : cols, inner = op == CUBLAS_OP_N ? cols : rows;
  if (k == 1)
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(h, op, rows, cols, &alpha, v, ldv, x, 1, &beta, y, 1));
  else
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(h, op, CUBLAS_OP_N, out, k, inner, &alpha, v, ldv, x, ldx, &beta, y, ldy));
}
void trsm(cublasHandle_t h, cublasOperation_t op, int n, int k, const float* a, int lda, float* x, int ldx) {
  const float one = 1;
  MIXSOLVE_CUBLAS_CHECK(
      cublasStrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, n, k, &one, a, lda, x, ldx));
}
void trsm(cublasHandle_t h, cublasOperation_t op, int n, int k, const double* a, int lda, double* x, int ldx) {
  const double one = 1;
  MIXSOLVE_CUBLAS_CHECK(
      cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, n, k, &one, a, lda, x, ldx));
}
// c := alpha op(a) b + beta c, every operand with its leading dimension.
void gemm(cublasHandle_t h, cublasOperation_t op, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  MIXSOLVE_CUBLAS_CHECK(cublasSgemm(h, op, CUBLAS_OP_N, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc));
}
void gemm(cublasHandle_t h, cublasOperation_t op, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  MIXSOLVE_CUBLAS_CHECK(cublasDgemm(h, op, CUBLAS_OP_N, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc));
}
// c := op(T) b (T nb x nb upper triangular), out of place; leading dimensions nb unless given.
void trmm(cublasHandle_t h, cublasOperation_t op, int nb, int k, const float* t, int ldt, const float* b, int ldb,
          float* c, int ldc) {
  const float one = 1;
  MIXSOLVE_CUBLAS_CHECK(cublasStrmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, nb, k, &one,
                                    t, ldt, b, ldb, c, ldc));
}
void trmm(cublasHandle_t h, cublasOperation_t op, int nb, int k, const double* t, int ldt, const double* b, int ldb,
          double* c, int ldc) {
  const double one = 1;
  MIXSOLVE_CUBLAS_CHECK(cublasDtrmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, nb, k, &one,
                                    t, ldt, b, ldb, c, ldc));
}
template <class T>
void trmm(cublasHandle_t h, cublasOperation_t op, int nb, int k, const T* t, const T* b, T* c) {
  trmm(h, op, nb, k, t, nb, b, nb, c, nb);
}
// c := alpha b T (b rows x nb, T nb x nb upper triangular), out of place.
void trmm_right(cublasHandle_t h, int rows, int nb, float alpha, const float* t, int ldt, const float* b, int ldb,
                float* c, int ldc) {
  MIXSOLVE_CUBLAS_CHECK(cublasStrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                                    rows, nb, &alpha, t, ldt, b, ldb, c, ldc));
}
void trmm_right(cublasHandle_t h, int rows, int nb, double alpha, const double* t, int ldt, const double* b, int ldb,
                double* c, int ldc) {
  MIXSOLVE_CUBLAS_CHECK(cublasDtrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                                    rows, nb, &alpha, t, ldt, b, ldb, c, ldc));
}
template <class T>
void gram(cublasHandle_t h, int nb, int rows, const T* v, T* s) {  // s := V^T V
  gemm(h, CUBLAS_OP_T, nb, nb, rows, T(1), v, rows, v, rows, T(0), s, nb);
}

// v (rows x nb, leading dimension rows) := the panel's reflectors with their unit diagonal and
// zeros above it.
template <class T>
__global__ void unit_lower_kernel(const T* panel, std::int64_t lda, std::int64_t rows, std::int64_t nb, T* v) {
  for (std::int64_t q = blockIdx.y; q < nb; q += gridDim.y)  // columns along y: no division per entry
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows;
         i += std::int64_t(gridDim.x) * blockDim.x)
      v[i + q * rows] = i == q ? T(1) : i > q ? panel[i + q * lda] : T(0);
}

// d[j] := |a(j, j)| in FP64.
template <class T>
__global__ void diagonal_kernel(const T* a, std::int64_t ld, std::int64_t n, double* d) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x)
    d[j] = fabs(double(a[j + j * ld]));
}

}  // namespace

template <class T>
DeviceQr<T>::DeviceQr(Context& ctx, const MatrixView<T>& a, std::int64_t block, const gemm::Backend& update,
                      QrPanel panel_kind, const gemm::Backend* vt_c_update)
    : ctx_(ctx), a_(a), m_(a.rows), n_(a.cols) {
  if (m_ < n_)
    throw InvalidArgument("DeviceQr: a has fewer rows (" + std::to_string(m_) + ") than columns (" +
                          std::to_string(n_) + ")");
  if (block < 1) throw InvalidArgument("DeviceQr: block (" + std::to_string(block) + ") must be >= 1");
  if (a.memory != Memory::Device) throw InvalidArgument("DeviceQr: a must be in device memory");
  constexpr gemm::DataType kType = std::is_same_v<T, float> ? gemm::DataType::F32 : gemm::DataType::F64;
  for (const gemm::Backend* b : {&update, vt_c_update})
    if (b && (b->data_type() != kType || b->memory() != Memory::Device))
      throw InvalidArgument("DeviceQr: update backend " + b->name() + " is not a device backend for " +
                            (std::is_same_v<T, float> ? "FP32" : "FP64") + " data");
  const gemm::Backend& vt_c_backend = vt_c_update ? *vt_c_update : update;
  if (a.ld > INT_MAX || m_ > INT_MAX)
    throw InvalidArgument("DeviceQr: m (" + std::to_string(m_) + ") or the leading dimension (" + std::to_string(a.ld) +
                          ") beyond cuSOLVER's int");
  cusolverDnHandle_t handle = nullptr;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&handle));
  solver_.reset(handle);
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(handle, ctx.stream()));
  tau_ = DeviceBuffer<T>(ctx, std::max<std::int64_t>(n_, 1));
  info_ = DeviceBuffer<int>(ctx, 1);
  if (n_ == 0) return;
  const std::int64_t nb_max = std::min(block, n_);
  const bool tsqr = panel_kind == QrPanel::Tsqr;
  if (tsqr) {
    tsqr_ = std::make_unique<TsqrPanel<T>>(ctx, m_);
  } else {
    const int lwork = geqrf_work(solver_.get(), int(m_), int(nb_max), a_.data, int(a_.ld));
    work_ = DeviceBuffer<T>(ctx, std::max(lwork, 1));
    // geqrf reads words of tau and of its workspace before writing them (compute-sanitizer
    // initcheck): zeroed once, no read is of uninitialized memory.
    work_.set_zero(ctx.stream());
    tau_.set_zero(ctx.stream());
  }
  DeviceBuffer<T> s(ctx, nb_max * nb_max), w(ctx, nb_max * n_), tw(ctx, nb_max * n_);
  std::vector<T> s_host(nb_max * nb_max), tau_host(nb_max);
  cudaStream_t stream = ctx.stream();
  for (std::int64_t j0 = 0; j0 < n_; j0 += block) {
    const std::int64_t nb = std::min(block, n_ - j0), rows = m_ - j0, rest = n_ - j0 - nb;
    T* panel = a_.data + j0 + j0 * a_.ld;
    Block b{j0, nb, !tsqr || nb <= kTsqrMaxCols, DeviceBuffer<T>(ctx, rows * nb), DeviceBuffer<T>(ctx, nb * nb)};
    if (tsqr) {
      factor_panel_tsqr(panel, rows, nb, b.v.data(), b.t.data());
      // The trailing update needs the block's T; the last block's is joined only where Q is
      // applied (apply()): a factorization alone skips its V^T V, as many flops as the panel's
      // updates.
      if (rest > 0) join_subpanels(b);
    } else {
      geqrf(solver_.get(), int(rows), int(nb), panel, int(a_.ld), tau_.data() + j0, work_.data(), int(work_.size()),
            info_.data());
      unit_lower_kernel<<<dim3(unsigned(std::min<std::int64_t>((rows + 255) / 256, 64)),
                               unsigned(std::min<std::int64_t>(nb, 65535))),
                          256, 0, stream>>>(panel, a_.ld, rows, nb, b.v.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    if (!tsqr) {
      // T (LAPACK larft, forward, columnwise) from S = V^T V and tau: T(q, q) = tau_q,
      // T(0:q, q) = -tau_q T(0:q, 0:q) S(0:q, q). nb^3 / 6 work on the host.
      gram(ctx.cublas(), int(nb), int(rows), b.v.data(), s.data());
      MIXSOLVE_CUDA_CHECK(
          cudaMemcpyAsync(s_host.data(), s.data(), sizeof(T) * nb * nb, cudaMemcpyDeviceToHost, stream));
      MIXSOLVE_CUDA_CHECK(
          cudaMemcpyAsync(tau_host.data(), tau_.data() + j0, sizeof(T) * nb, cudaMemcpyDeviceToHost, stream));
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<T> t_host(nb * nb, T(0));
      for (std::int64_t q = 0; q < nb; ++q) {
        t_host[q + q * nb] = tau_host[q];
        for (std::int64_t p = 0; p < q; ++p) {
          double sum = 0;
          for (std::int64_t r = p; r < q; ++r) sum += double(t_host[p + r * nb]) * double(s_host[r + q * nb]);
          t_host[p + q * nb] = T(-double(tau_host[q]) * sum);
        }
      }
      b.t.copy_from_host(t_host, stream);  // synchronous for pageable memory: t_host may go
    }
    if (rest > 0) {
      // C := C - V (T^T (V^T C)), the two products on the backends.
      T* c = a_.data + j0 + (j0 + nb) * a_.ld;
      const gemm::GemmArgs<T> vt_c{gemm::Op::T, gemm::Op::N, nb,    rest, rows,     T(1), b.v.data(),
                                   rows,        c,           a_.ld, T(0), w.data(), nb};
      vt_c_backend.run(ctx, gemm::to_problem(vt_c));
      trmm(ctx.cublas(), CUBLAS_OP_T, int(nb), int(rest), b.t.data(), w.data(), tw.data());
      const gemm::GemmArgs<T> c_update{gemm::Op::N, gemm::Op::N, rows, rest, nb, T(-1), b.v.data(),
                                       rows,        tw.data(),   nb,   T(1), c,  a_.ld};
      update.run(ctx, gemm::to_problem(c_update));
    }
    blocks_.push_back(std::move(b));
  }
}

// Subpanel by subpanel of kTsqrMaxCols columns: the TSQR tree factorizes it (its V straight into
// v, the rest of v stays zero; its T on t's diagonal), then C := C - V (T^T (V^T C)) on the
// panel's columns right of it.
template <class T>
void DeviceQr<T>::factor_panel_tsqr(T* panel, std::int64_t rows, std::int64_t nb, T* v, T* t) {
  const std::int64_t lda = a_.ld, j0 = m_ - rows;
  cudaStream_t stream = ctx_.stream();
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(v, 0, sizeof(T) * rows * nb, stream));
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(t, 0, sizeof(T) * nb * nb, stream));
  if (panel_w_.size() == 0) {
    panel_w_ = DeviceBuffer<T>(ctx_, kTsqrMaxCols * nb);
    panel_tw_ = DeviceBuffer<T>(ctx_, kTsqrMaxCols * nb);
  }
  cublasHandle_t h = ctx_.cublas();
  for (std::int64_t s0 = 0; s0 < nb; s0 += kTsqrMaxCols) {
    const int width = int(std::min<std::int64_t>(kTsqrMaxCols, nb - s0));
    const int sub_rows = int(rows - s0), rest = int(nb - s0 - width);
    T* vs = v + s0 + s0 * rows;
    T* ts = t + s0 + s0 * nb;
    tsqr_->factor(panel + s0 + s0 * lda, lda, sub_rows, width, vs, rows, ts, nb, tau_.data() + j0 + s0);
    if (rest == 0) continue;
    T* c = panel + s0 + (s0 + width) * lda;
    gemm(h, CUBLAS_OP_T, width, rest, sub_rows, T(1), vs, int(rows), c, int(lda), T(0), panel_w_.data(), width);
    trmm(h, CUBLAS_OP_T, width, rest, ts, int(nb), panel_w_.data(), width, panel_tw_.data(), width);
    gemm(h, CUBLAS_OP_N, sub_rows, rest, width, T(-1), vs, int(rows), panel_tw_.data(), width, T(1), c, int(lda));
  }
}

// b's T from its subpanels' (on its diagonal), as in joining two compact WY forms:
// T(0:s0, s) = -T(0:s0, 0:s0) (V(:, 0:s0)^T V(:, s)) T(s, s), from gram = V^T V (nb x nb), all on
// the device.
template <class T>
void DeviceQr<T>::join_subpanels(Block& b) {
  const std::int64_t nb = b.nb, rows = m_ - b.j0;
  if (b.joined) return;
  if (gram_.size() < std::size_t(nb * nb)) gram_ = DeviceBuffer<T>(ctx_, nb * nb);
  cublasHandle_t h = ctx_.cublas();
  T* t = b.t.data();
  gram(h, int(nb), int(rows), b.v.data(), gram_.data());
  for (std::int64_t s0 = kTsqrMaxCols; s0 < nb; s0 += kTsqrMaxCols) {
    const int width = int(std::min<std::int64_t>(kTsqrMaxCols, nb - s0));
    // W := T(0:s0, 0:s0) G(0:s0, s), then T(0:s0, s) := -W T(s, s).
    trmm(h, CUBLAS_OP_N, int(s0), width, t, int(nb), gram_.data() + s0 * nb, int(nb), panel_w_.data(), int(s0));
    trmm_right(h, int(s0), width, T(-1), t + s0 + s0 * nb, int(nb), panel_w_.data(), int(s0), t + s0 * nb, int(nb));
  }
  b.joined = true;
}

template <class T>
std::vector<double> DeviceQr<T>::diagonal() const {
  std::vector<double> out(n_);
  if (n_ == 0) return out;
  DeviceBuffer<double> d(ctx_, n_);  // gathered by a kernel: no 2D copy with pitch ld + 1 (its limit)
  diagonal_kernel<<<unsigned(std::min<std::int64_t>((n_ + 255) / 256, 1024)), 256, 0, ctx_.stream()>>>(a_.data, a_.ld,
                                                                                                       n_, d.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  d.copy_to_host(out.data(), n_, ctx_.stream());
  return out;
}

// Block by block from the compact WY form kept from the factorization (the last block's T joined
// at the first call): Q^T c applies (I - V T V^T)^T = I - V T^T V^T in the blocks' order, Q c
// applies I - V T V^T in reverse; each as W = V^T c, W := op(T) W, c -= V W (GEMV for one
// column, GEMM for several): every reflector is read twice per application.
template <class T>
void DeviceQr<T>::apply(const MatrixView<T>& c, bool transposed) {
  if (c.rows != m_ || c.memory != Memory::Device)
    throw InvalidArgument("DeviceQr: c must be a device block of " + std::to_string(m_) + " rows");
  if (c.cols == 0 || n_ == 0) return;
  const std::int64_t k = c.cols;
  const std::int64_t nb_max = blocks_.front().nb;
  if (apply_w_.size() < std::size_t(nb_max * k)) {
    apply_w_ = DeviceBuffer<T>(ctx_, nb_max * k);
    apply_tw_ = DeviceBuffer<T>(ctx_, nb_max * k);
  }
  for (Block& b : blocks_) join_subpanels(b);
  cublasHandle_t h = ctx_.cublas();
  const auto apply_block = [&](const Block& b) {
    const int rows = int(m_ - b.j0), nb = int(b.nb);
    T* c0 = c.data + b.j0;
    multiply(h, CUBLAS_OP_T, rows, nb, int(k), T(1), b.v.data(), rows, c0, int(c.ld), T(0), apply_w_.data(), nb);
    trmm(h, transposed ? CUBLAS_OP_T : CUBLAS_OP_N, nb, int(k), b.t.data(), apply_w_.data(), apply_tw_.data());
    multiply(h, CUBLAS_OP_N, rows, nb, int(k), T(-1), b.v.data(), rows, apply_tw_.data(), nb, T(1), c0, int(c.ld));
  };
  if (transposed)
    for (const Block& b : blocks_) apply_block(b);
  else
    for (auto b = blocks_.rbegin(); b != blocks_.rend(); ++b) apply_block(*b);
}

template <class T>
void DeviceQr<T>::apply_qt(const MatrixView<T>& c) {
  apply(c, true);
}
template <class T>
void DeviceQr<T>::apply_q(const MatrixView<T>& c) {
  apply(c, false);
}

// x must be device memory with at least n rows.
template <class T>
void check_solve_operand(const MatrixView<T>& x, std::int64_t n, const char* where) {
  if (x.memory != Memory::Device || x.rows < n)
    throw InvalidArgument(std::string("DeviceQr::") + where + ": x must be a device block of at least " +
                          std::to_string(n) + " rows");
}

template <class T>
void DeviceQr<T>::solve_r(const MatrixView<T>& x) {
  check_solve_operand(x, n_, "solve_r");
  if (n_ > 0 && x.cols > 0)
    trsm(ctx_.cublas(), CUBLAS_OP_N, int(n_), int(x.cols), a_.data, int(a_.ld), x.data, int(x.ld));
}
template <class T>
void DeviceQr<T>::solve_rt(const MatrixView<T>& x) {
  check_solve_operand(x, n_, "solve_rt");
  if (n_ > 0 && x.cols > 0)
    trsm(ctx_.cublas(), CUBLAS_OP_T, int(n_), int(x.cols), a_.data, int(a_.ld), x.data, int(x.ld));
}

template class DeviceQr<float>;
template class DeviceQr<double>;

}  // namespace mixsolve::solvers_detail
