// SPDX-License-Identifier: BSD-3-Clause
// Internal: the part of an engine in host memory that does not touch the factors: FP64 vectors
// and blocks of n rows, and the operator A on the engine's copy of the user's matrix. The host LU
// engine (lu/host_engine.cpp) derives from it and adds its factorization and preconditioner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::solvers_detail {

class HostSpace : public Engine {
 public:
  // a: the user's n x n FP64 matrix, copied (the user's is never touched).
  HostSpace(Context& ctx, const MatrixView<const double>& a);

  Memory memory() const override { return Memory::Host; }
  Context& context() override { return ctx_; }
  void residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                const MatrixView<double>& r, ResidualPrecision precision) override;
  double componentwise_backward_error(const double* x, const double* b, const double* r) override;
  void multiply(const double* x, double* y) override;
  void multiply_transpose(const double* x, double* y) override;
  void diagonal(double* host) override;
  void column(std::int64_t j, double* host) override;
  void column_norms_inf(const MatrixView<const double>& m, double* out) override;
  MatrixView<double> scratch(int slot, std::int64_t cols) override;
  void copy(const MatrixView<const double>& src, const MatrixView<double>& dst) override;
  void upload(const double* host, double* y) override;
  void download(const double* y, double* host) override;
  void fill_random(const MatrixView<double>& m, const RandomSpec& spec) override;
  void axpy(double alpha, const double* x, double* y) override;
  void scal(double alpha, double* x) override;
  void zero(double* x) override;
  double dot(const double* x, const double* y) override;
  void gram(const MatrixView<const double>& x, const MatrixView<const double>& y, double* out) override;
  double orthogonalize(const MatrixView<const double>& v, std::int64_t count, double* w, double* h) override;
  void add(const MatrixView<const double>& x, const MatrixView<double>& y) override;
  void synchronize() override;

 protected:
  // Host memory the scratch blocks hold.
  std::size_t scratch_bytes() const;
  // Records the engine's memory high-water mark; scratch() calls it after it grows a block.
  virtual void track_peak() = 0;

  Context& ctx_;
  std::vector<double> a_;  // the FP64 matrix, column-major with leading dimension n

 private:
  std::vector<std::vector<double>> scratch_;
};

}  // namespace mixsolve::solvers_detail
