// SPDX-License-Identifier: BSD-3-Clause
// Internal: the device's block refinement steps (LsBlockSteps, qr/least_squares_refinement.hpp):
// CGLS on the semi-normal equations for the c columns of T at once, each matrix-vector product
// of the single-column steps a DGEMM over all c columns, the per-column scalars by one block per
// column (a fixed order of summation: the same bits on every run).
#pragma once

#include <cstdint>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/matrix.hpp"
#include "qr/cuda/normal_equations_solver.hpp"
#include "qr/least_squares_refinement.hpp"

namespace mixsolve::solvers_detail {

class DeviceBlockSemiNormalSteps final : public LsBlockSteps {
 public:
  // a: A (m x k), t: T (m x c), y: Y (k x c), all device memory, FP64; normal: (R^T R)^-1 for an
  // R of A. start_from_y: Y holds the first solutions already.
  DeviceBlockSemiNormalSteps(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& t,
                             NormalEquationsSolver& normal, const MatrixView<double>& y, bool start_from_y);

  std::int64_t rows() const override { return a_.rows; }
  std::int64_t columns() const override { return t_.cols; }
  std::vector<LsSteps::Start> start() override;
  std::vector<double> residual_norms() override;
  std::vector<double> cg_begin(const std::vector<char>& selected) override;
  std::vector<double> cg_product(const std::vector<char>& selected) override;
  std::vector<double> cg_update(const std::vector<double>& alpha) override;
  void cg_direction(const std::vector<double>& beta) override;
  void cg_keep(const std::vector<char>& selected) override;
  std::vector<LsSteps::Norms> cg_finish(const std::vector<char>& selected) override;

 private:
  // out (k x c, leading dimension k) := A^T v (v m x c).
  void transposed_product(const double* v, double* out);
  // For the selected columns of v (m x c, leading dimension ld): e_j from max_i |v_ij|
  // (rhs_scale_exponent) and s_j := v_j 2^-e_j.
  void scale_into_s(const double* v, std::int64_t ld, const std::vector<char>& selected);
  // g := A^T s, z := (R^T R)^-1 g for (at least) the selected columns; returns g_j^T z_j for
  // those (CGLS's ||s||^2).
  std::vector<double> normal_solve(const std::vector<char>& selected);
  // f := T - A Y.
  void residual(double* f);
  // The per-column values of a kernel's output (c values), to the host.
  std::vector<double> fetch(const DeviceBuffer<double>& values);
  void upload(const std::vector<char>& selected);
  void upload(const std::vector<double>& coefficients);
  void upload_exponents();

  Context& ctx_;
  MatrixView<const double> a_, t_;
  NormalEquationsSolver& normal_;
  MatrixView<double> y_;
  bool start_from_y_;
  // m x c: f_ = T - A Y, next_f_ the next one, s_ CGLS's residual (f_ 2^-e_j), q_ = A p.
  DeviceBuffer<double> f_, next_f_, s_, q_;
  // k x c: g_ = A^T s_, z_ = (R^T R)^-1 g_, p_ the directions, d_ the corrections, kept_ the best.
  DeviceBuffer<double> g_, z_, p_, d_, kept_;
  DeviceBuffer<double> values_, coefficients_;  // c per-column results; c scalars going down
  DeviceBuffer<char> selected_;                 // c flags going down
  DeviceBuffer<int> exponents_d_;               // e_j
  std::vector<int> exponents_;                  // e_j: column j of s_ is f_j 2^-e_j
};

}  // namespace mixsolve::solvers_detail
