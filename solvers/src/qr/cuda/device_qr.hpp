// SPDX-License-Identifier: BSD-3-Clause
// Internal: blocked Householder QR of an m x n matrix (m >= n) in device memory, FP32 or FP64,
// the GPU's counterpart of qr/householder_qr.hpp with the same algorithm: per block of nb columns,
// the panel (by default 32 columns at a time by the TSQR tree of qr/cuda/tsqr_panel.hpp, each
// applied to the panel's other columns by cuBLAS; or by cuSOLVER's geqrf), T of the compact WY
// form (TSQR: joined from the subpanels' on the device, the last block's only when Q is first
// applied, since no trailing update needs it; geqrf: from V^T V by larft's recurrence on the host,
// nb^3 / 6 work), and the trailing update C := C - V (T^T (V^T C)) with its two products on a GEMM
// backend of the interface (for FP32 data: cublas-sgemm, or the corrected tf32tf32 / halfhalf on
// the tensor cores). The result is in LAPACK's geqrf form (R above the diagonal, the reflectors
// below, tau); each block's V and T are also kept, so that Q and Q^T apply as two products per
// block, an extra m x n of memory in V beside the factors.
#pragma once

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/gemm/backend.hpp"
#include "qr/cuda/tsqr_panel.hpp"

namespace mixsolve::solvers_detail {

// How DeviceQr factorizes a panel.
enum class QrPanel { Tsqr, Cusolver };

template <class T>
class DeviceQr {
 public:
  // Factors `a` (m x n, m >= n, device memory, column major) in place. `block`: columns per
  // panel (>= 1); `update`: the GEMM backend of the trailing updates, for device data of type T;
  // `panel`: the panel factorization.
  // @throws InvalidArgument for m < n, block < 1, m or the leading dimension beyond cuSOLVER's
  //                         int, a view not in device memory, or a backend of another type or
  //                         memory.
  // @throws DeviceError     if a CUDA, cuBLAS or cuSOLVER call fails.
  // `vt_c_update`, where given, takes the trailing updates' V^T C instead (its inner dimension is
  // the block's rows: a backend whose error grows with it, as tensor-core accumulation does,
  // can still take C - V W, whose inner dimension is the block's width).
  DeviceQr(Context& ctx, const MatrixView<T>& a, std::int64_t block, const gemm::Backend& update,
           QrPanel panel = QrPanel::Tsqr, const gemm::Backend* vt_c_update = nullptr);

  std::int64_t rows() const { return m_; }
  std::int64_t cols() const { return n_; }
  // |r_jj| for j = 0 .. n-1, on the host.
  std::vector<double> diagonal() const;

  // c := Q^T c and c := Q c, c m x k in device memory.
  void apply_qt(const MatrixView<T>& c);
  void apply_q(const MatrixView<T>& c);
  // x := R^-1 x and x := R^-T x on the first n rows of x (device memory).
  void solve_r(const MatrixView<T>& x);
  void solve_rt(const MatrixView<T>& x);

 private:
  void apply(const MatrixView<T>& c, bool transposed);
  // The TSQR path's panel: 32 columns at a time, each subpanel's reflectors applied to the
  // columns right of it within the panel; its V into v (rows x nb), its subpanels' T on the
  // diagonal of t (nb x nb).
  void factor_panel_tsqr(T* panel, std::int64_t rows, std::int64_t nb, T* v, T* t);

  Context& ctx_;
  MatrixView<T> a_;
  std::int64_t m_, n_;
  struct DestroySolver {
    void operator()(cusolverDnHandle_t h) const { cusolverDnDestroy(h); }
  };
  std::unique_ptr<std::remove_pointer_t<cusolverDnHandle_t>, DestroySolver> solver_;
  std::unique_ptr<TsqrPanel<T>> tsqr_;
  DeviceBuffer<T> tau_, work_;
  DeviceBuffer<int> info_;
  // The compact WY form of each block, kept for apply(): V (rows j0 .. m, nb columns, unit lower
  // trapezoidal, explicit zeros above) and T (nb x nb, upper triangular; until joined, only its
  // 32 x 32 diagonal blocks, the subpanels' T).
  struct Block {
    std::int64_t j0, nb;
    bool joined;
    DeviceBuffer<T> v, t;
  };
  std::vector<Block> blocks_;
  // A TSQR block's T from its subpanels' (no-op once joined).
  void join_subpanels(Block& b);
  DeviceBuffer<T> apply_w_, apply_tw_;  // apply()'s nb x k products
  DeviceBuffer<T> gram_;                // join_subpanels()'s V^T V
  DeviceBuffer<T> panel_w_, panel_tw_;  // factor_panel_tsqr()'s products
};

extern template class DeviceQr<float>;
extern template class DeviceQr<double>;

}  // namespace mixsolve::solvers_detail
