// SPDX-License-Identifier: BSD-3-Clause
// Internal: the part of an engine in device memory that does not touch the factors: FP64 vectors
// and blocks of n rows (scratch, copies, axpy, dot, Gram-Schmidt, transfers), the operator A
// (residual, mat-vec, componentwise backward error, read in place from the user's matrix), on the
// context's stream with its cuBLAS handle. An engine derives from it and adds its factorization
// and preconditioner (lu/cuda/device_engine.cu).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_profile.hpp"
#include "engine.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::solvers_detail {

class DeviceSpace : public Engine {
 public:
  // a: the user's n x n FP64 matrix in device memory, read in place (it must outlive the space).
  DeviceSpace(Context& ctx, const MatrixView<const double>& a);

  Memory memory() const override { return Memory::Device; }
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
  cudaStream_t stream() const { return ctx_.stream(); }
  void gemv(cublasOperation_t op, const double* x, double* y);
  // Device memory the space holds (scratch blocks and the Gram-Schmidt projections).
  std::size_t space_bytes() const;
  // Records the engine's memory high-water mark (`transient`: a workspace of the current step
  // only); scratch() calls it after it grows a block.
  virtual void track_peak(std::size_t transient = 0) = 0;

  Context& ctx_;
  MatrixView<const double> a_;  // the user's matrix, read only
  Profile profile_;             // the solve phases; the LU's too (Tuning::profile)

 private:
  DeviceBuffer<double> column_max_;               // column_norms_inf's
  DeviceBuffer<double> gram_;                     // gram's k x k result
  DeviceBuffer<double> componentwise_workspace_;  // componentwise_backward_error's
  DeviceBuffer<double> projection_;               // orthogonalize: the projections of the two passes
  DeviceBuffer<double> residual_partials_;        // the double-double residual's partial sums
  std::vector<DeviceBuffer<double>> scratch_;
};

}  // namespace mixsolve::solvers_detail
