// SPDX-License-Identifier: BSD-3-Clause
// Internal: v := (R^T R)^-1 v on the device for an upper triangular R (n x n), the semi-normal
// refinements' preconditioner (qr/least_squares_refinement.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "triangular/triangular_solver.hpp"

namespace mixsolve::solvers_detail {

// One bandwidth-bound solve (triangular/triangular_solver.hpp) on an n x n array holding
// L = R^T D^-1 and U = D R (D = diag(R)): its pair of triangles reads n^2 values in one chain of
// hand-overs, where cuBLAS's DTRSV with R and with R^T runs a chain of small dependent steps twice
// (docs/least_squares.md). L and U carry FP64 rounding of R^T's and R's entries: a
// preconditioner as exact as the triangular solves.
class NormalEquationsSolver {
 public:
  // R: the upper triangle of r (n x n of leading dimension ld, device memory; T float for the
  // FP32 factors, double for an FP64 R), read once here.
  template <class T>
  NormalEquationsSolver(Context& ctx, const T* r, std::int64_t ld, std::int64_t n);
  // v (n, device memory) := (R^T R)^-1 v.
  void solve(double* v) { solve(v, n_, 1); }
  // The columns of V (n x columns, leading dimension ld, device memory) := (R^T R)^-1 V; with
  // `selected` (one flag per column) at least the selected ones (the solver's groups of columns
  // without one are skipped).
  void solve(double* v, std::int64_t ld, int columns, const std::vector<char>* selected = nullptr);

 private:
  Context& ctx_;
  std::int64_t n_;
  DeviceBuffer<double> lu_;
  std::unique_ptr<TriangularSolver<double>> solver_;
};

}  // namespace mixsolve::solvers_detail
