// SPDX-License-Identifier: BSD-3-Clause
#include "qr/cuda/normal_equations_solver.hpp"

#include <algorithm>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::solvers_detail {

namespace {

// lu (n x n, leading dimension n) := L below the diagonal and U on and above it, L = R^T D^-1 and
// U = D R in FP64 for the upper triangle R of r (leading dimension ld, FP32 or FP64) and
// D = diag(R): U^-1 L^-1 = (R^T R)^-1.
template <class T>
__global__ void normal_equations_factors_kernel(const T* r, std::int64_t ld, std::int64_t n, double* lu) {
  for (std::int64_t j = blockIdx.y; j < n; j += gridDim.y)
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
      lu[i + j * n] =
          i > j ? double(r[j + i * ld]) / double(r[j + j * ld]) : double(r[i + i * ld]) * double(r[i + j * ld]);
}

}  // namespace

template <class T>
NormalEquationsSolver::NormalEquationsSolver(Context& ctx, const T* r, std::int64_t ld, std::int64_t n)
    : ctx_(ctx), n_(n), lu_(ctx, n * n) {
  const dim3 grid(unsigned(std::min<std::int64_t>((n + 255) / 256, 64)), unsigned(std::clamp<std::int64_t>(n, 1, 256)));
  if (n > 0) {
    normal_equations_factors_kernel<<<grid, 256, 0, ctx.stream()>>>(r, ld, n, lu_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  solver_ = std::make_unique<TriangularSolver<double>>(lu_.data(), n, n, ctx.stream());
}

void NormalEquationsSolver::solve(double* v, std::int64_t ld, int columns, const std::vector<char>* selected) {
  // The triangular solver takes up to kTriangularSolveMaxColumns columns a call.
  for (int c0 = 0; c0 < columns; c0 += kTriangularSolveMaxColumns) {
    const int count = std::min(kTriangularSolveMaxColumns, columns - c0);
    if (selected && std::none_of(selected->begin() + c0, selected->begin() + c0 + count, [](char s) { return s != 0; }))
      continue;
    solver_->solve(v + std::int64_t(c0) * ld, ld, count, ctx_.stream());
  }
}

template NormalEquationsSolver::NormalEquationsSolver(Context&, const float*, std::int64_t, std::int64_t);
template NormalEquationsSolver::NormalEquationsSolver(Context&, const double*, std::int64_t, std::int64_t);

}  // namespace mixsolve::solvers_detail
