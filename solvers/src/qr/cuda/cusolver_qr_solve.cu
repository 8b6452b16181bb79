// SPDX-License-Identifier: BSD-3-Clause
#include "qr/cuda/cusolver_qr_solve.hpp"

#include <cublas_v2.h>

#include <algorithm>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"

namespace mixsolve::solvers_detail {

namespace {

// d[j] := |a_jj| (leading dimension ld).
__global__ void absolute_diagonal_kernel(const double* a, std::int64_t ld, std::int64_t n, double* d) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x)
    d[j] = fabs(a[j + j * ld]);
}

}  // namespace

CusolverQrSolve::CusolverQrSolve(Context& ctx, const MatrixView<double>& a)
    : ctx_(ctx), a_(a), tau_(ctx, std::max<std::int64_t>(a.cols, 1)), info_(ctx, 1) {
  cusolverDnHandle_t h = ctx.cusolver();
  const int m = int(a.rows), n = int(a.cols), ld = int(a.ld);
  int geqrf = 0, ormqr = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf_bufferSize(h, m, n, a.data, ld, &geqrf));
  // The largest ormqr workspace: for Q^T applied to as many columns as solve() takes at once.
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, m, 1, n, a.data, ld,
                                                      tau_.data(), a.data, m, &ormqr));
  work_ = DeviceBuffer<double>(ctx, std::max({geqrf, ormqr, 1}));
  MIXSOLVE_CUSOLVER_CHECK(
      cusolverDnDgeqrf(h, m, n, a.data, ld, tau_.data(), work_.data(), int(work_.size()), info_.data()));
}

std::vector<double> CusolverQrSolve::diagonal() const {
  const std::int64_t n = a_.cols;
  DeviceBuffer<double> d(ctx_, std::max<std::int64_t>(n, 1));
  absolute_diagonal_kernel<<<unsigned(std::clamp<std::int64_t>((n + 255) / 256, 1, 1024)), 256, 0, ctx_.stream()>>>(
      a_.data, a_.ld, n, d.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  std::vector<double> out(static_cast<std::size_t>(n));
  d.copy_to_host(out.data(), out.size(), ctx_.stream());
  return out;
}

void CusolverQrSolve::solve(const MatrixView<double>& c) {
  const int m = int(a_.rows), n = int(a_.cols), ld = int(a_.ld);
  cusolverDnHandle_t h = ctx_.cusolver();
  // Column by column: ormqr's workspace was sized for one (it grows with the columns).
  for (std::int64_t j = 0; j < c.cols; ++j)
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, m, 1, n, a_.data, ld, tau_.data(),
                                             c.data + j * c.ld, int(c.ld), work_.data(), int(work_.size()),
                                             info_.data()));
  const double one = 1;
  MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                    CUBLAS_DIAG_NON_UNIT, n, int(c.cols), &one, a_.data, ld, c.data, int(c.ld)));
}

void CusolverQrSolve::solve_r(double* x, bool transposed) {
  MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(ctx_.cublas(), CUBLAS_FILL_MODE_UPPER, transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    CUBLAS_DIAG_NON_UNIT, int(a_.cols), a_.data, int(a_.ld), x, 1));
}

}  // namespace mixsolve::solvers_detail
