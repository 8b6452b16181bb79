// SPDX-License-Identifier: BSD-3-Clause
// Internal: the FP64 Householder QR least-squares solve as cuSOLVER's users write it (geqrf, then
// ormqr with Q^T and a triangular solve with R), for the problems too small for the cheap path's
// fixed costs to pay (LeastSquaresOptions::auto_min_work): the same kernels, so as fast.
#pragma once

#include <cusolverDn.h>

#include <cstdint>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::solvers_detail {

class CusolverQrSolve {
 public:
  // Factors `a` (m x n, m >= n, device memory) in place: R above the diagonal, the reflectors
  // below (LAPACK's geqrf form).
  // @throws DeviceError if a cuSOLVER call fails.
  CusolverQrSolve(Context& ctx, const MatrixView<double>& a);
  // |r_jj| for j = 0 .. n-1, on the host.
  std::vector<double> diagonal() const;
  // The first n rows of c (m x k, device memory) := R^-1 (Q^T c)(1:n).
  void solve(const MatrixView<double>& c);
  // x (n, device memory) := R^-1 x or R^-T x.
  void solve_r(double* x, bool transposed);

 private:
  Context& ctx_;  // its cuSOLVER handle (Context::cusolver)
  MatrixView<double> a_;
  DeviceBuffer<double> tau_, work_;
  DeviceBuffer<int> info_;
};

}  // namespace mixsolve::solvers_detail
