// Internal: what the solve driver needs from a memory space. The driver (solve.cpp: escalation,
// refinement, stop test, report) is shared; an engine holds the matrix and its factors in host
// or device memory and does the arithmetic there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace mixsolve::solvers_detail {

struct FactorResult {
  StopReason status = StopReason::Converged;  // Converged (factors usable), ZeroPivot or Overflow
  std::int64_t zero_pivot_column = -1;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual Memory memory() const = 0;
  std::int64_t n() const { return n_; }

  // ||A||_inf of the FP64 matrix.
  virtual double norm_inf() = 0;
  // Position of a NaN or Inf in `m` (same memory space), or {-1, -1}.
  virtual std::pair<std::int64_t, std::int64_t> find_nonfinite(const MatrixView<const double>& m) = 0;
  // Factorizes A in precision p (replacing earlier factors).
  virtual FactorResult factor(Precision p) = 0;
  // y := (LU)^-1 P y for an n x k FP64 block, in the working precision of the factors.
  virtual void apply_inverse(const MatrixView<double>& y) = 0;
  // r := b - A x in FP64.
  virtual void residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                        const MatrixView<double>& r) = 0;
  // y := A x in FP64 for vectors of length n.
  virtual void multiply(const double* x, double* y) = 0;
  // ||column j||_inf for every column of m, into host memory.
  virtual void column_norms_inf(const MatrixView<const double>& m, double* out) = 0;

  // An n x cols FP64 block of scratch memory owned by the engine (valid until the next call).
  virtual MatrixView<double> scratch(int slot, std::int64_t cols) = 0;
  virtual void copy(const MatrixView<const double>& src, const MatrixView<double>& dst) = 0;
  // y += alpha x, x *= alpha, x . y, ||x||_2 on vectors of length n.
  virtual void axpy(double alpha, const double* x, double* y) = 0;
  virtual void scal(double alpha, double* x) = 0;
  virtual void zero(double* x) = 0;
  virtual double dot(const double* x, const double* y) = 0;
  // Y += X for n x k blocks.
  virtual void add(const MatrixView<const double>& x, const MatrixView<double>& y) = 0;

  virtual void synchronize() = 0;
  virtual std::size_t peak_workspace_bytes() const = 0;

 protected:
  std::int64_t n_ = 0;
};

std::unique_ptr<Engine> make_host_engine(Context& ctx, const MatrixView<const double>& a, int block_size);
// A is read in place (it must outlive the engine and stay unchanged).
std::unique_ptr<Engine> make_device_engine(Context& ctx, const MatrixView<const double>& a, int block_size);

}  // namespace mixsolve::solvers_detail
