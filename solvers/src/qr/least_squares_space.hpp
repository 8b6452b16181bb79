// SPDX-License-Identifier: BSD-3-Clause
// Internal: what one attempt of least_squares() (driver/least_squares.cpp) needs from the memory
// space of A, B and X, so that the precision path, the rank decisions and the report are written
// once for host and device matrices. The host's space: driver/least_squares.cpp; the device's:
// qr/cuda/device_least_squares.cu.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "qr/least_squares_refinement.hpp"
#include "qr/minimum_norm.hpp"

namespace mixsolve::solvers_detail {

class LsSpace {
 public:
  virtual ~LsSpace() = default;
  // The right-hand sides B (m x k) and the solutions X (n x k) the calls below read and write,
  // in A's memory, until bound again (LeastSquares::solve).
  virtual void bind(const MatrixView<const double>& b, const MatrixView<double>& x) = 0;
  // The first (row, column) of A (which = 0) or B (1) holding NaN or Inf, or (-1, -1).
  virtual std::pair<std::int64_t, std::int64_t> find_nonfinite(int which) = 0;
  // max |a_ij| and ||A||_F.
  virtual double largest_abs_a() = 0;
  virtual double norm_a_frobenius() = 0;
  // Factors a_scale A rounded to FP32 (fp64 false) or FP64 with `block` columns per block and
  // the FP32 trailing updates on the GEMM backend `fp32_update`, their V^T C on `fp32_vt_c_update`
  // where the space has a choice for it (0 and "": the space's choice), replacing any factors
  // held; returns |r_jj| for j = 0 .. n-1. unrefined (with fp64): FP64 factors for
  // solve_unrefined, not refine (on the device cuSOLVER's geqrf; on the host the FP64 QR).
  virtual std::vector<double> factor(bool fp64, double a_scale, std::int64_t block, const std::string& fp32_update,
                                     const std::string& fp32_vt_c_update, bool unrefined = false) = 0;
  // The GEMM backend(s) of the current Householder factors' trailing updates, for the report.
  virtual std::string update_backend() const = 0;
  // FP64 factors from the current FP32 ones, by Cholesky QR preconditioned with their R:
  // Y = A' R_32^-1 in FP64 (A' = a_scale A), R_2 = chol(Y^T Y), R = R_2 R_32 (a preconditioned
  // Cholesky QR, as LU-Cholesky QR, Terao, Ozaki & Ogita 2020, preconditions with an LU factor).
  // R alone replaces the FP32 factors (refine() then takes the semi-normal steps).
  // Where A R_32^-1 is well conditioned, as it is while kappa(A) u_32 <~ 1e3, R is as close to
  // A's R as an FP64 QR's (Y^T Y's rounding is u_64 kappa(Y)^2 relative).
  struct CholeskyQrFactors {
    bool ok = false;               // Cholesky succeeded, and R is finite with a nonzero diagonal
    std::vector<double> diagonal;  // |r_jj| of R, where ok
    double y_diagonal_ratio = 0;   // min_j |(R_2)_jj| / max_j |(R_2)_jj|, of the order of 1 / kappa(Y)
  };
  virtual CholeskyQrFactors factor_cholesky_qr() = 0;
  // A unit vector v (on the host) near the smallest right singular vector of A, from the current
  // FP64 factors (Householder or Cholesky QR): v = R^-1 e_start, then v := R^-1 R^-T v (inverse iteration on R^T R),
  // normalised after each; start: the column of the smallest |r_jj|.
  virtual std::vector<double> smallest_singular_vector(std::int64_t start) = 0;
  // ||A v||_2 for a host vector v of length n, in FP64.
  virtual double norm_a_times(const std::vector<double>& v) = 0;
  // With FP32 factors held (m >= n): ||A v|| for the unit v = [-y; 1; 0] / ||[-y; 1]||, y =
  // argmin ||A_0:j y - a_j|| in FP64 by CGLS preconditioned with the factors' leading block
  // R(0:j, 0:j) (an R of A_0:j: the factors are an unpivoted QR's): how far column j is from the
  // span of columns 0 .. j-1. norm_av NaN where no estimate is had; converged: whether that
  // refinement was accepted (where not, the FP32 R does not precondition A_0:j).
  struct ColumnDistance {
    double norm_av = NAN;
    bool converged = false;
  };
  virtual ColumnDistance column_distance(std::int64_t j, int max_iterations) = 0;
  // Refines column j of X (and its residual) against column j of B with the current factors,
  // whose R gives `scales`.
  virtual LsRefinementResult refine(std::int64_t j, int max_iterations, LsMethod method,
                                    const LsFactorScales& scales) = 0;
  // X := the FP64 factors' solutions a_scale R^-1 (Q^T B)(1:n), not refined (factors from
  // factor(true, ..., unrefined true)).
  virtual void solve_unrefined() = 0;
  // ||b_j - A x_j||_2 for every column, in FP64.
  virtual std::vector<double> residual_norms() = 0;
  // X := NaN.
  virtual void fill_x_with_nan() = 0;

  // The rank-revealing attempt (qr/minimum_norm.hpp). R (n x n, upper triangular, FP64, host,
  // column major) of A at its own scale from the factors held (FP32, Cholesky QR or FP64
  // Householder); empty where none are held. For m < n: an m x n R with R^T R = A^T A (a
  // pivoted QR's R, its columns in A's order).
  virtual std::vector<double> factors_r() = 0;
  // The attempt's tall work on A and the bound B (both spaces have it).
  virtual std::unique_ptr<TallColumns> tall_columns() = 0;
  // X := x (n x k, host, column major).
  virtual void write_x(const MatrixView<const double>& x) = 0;
};

// The device's space: A in device memory (ctx with a GPU), B and X there too (bind); the FP32
// factors' trailing updates on cublas-sgemm.
std::unique_ptr<LsSpace> make_device_ls_space(Context& ctx, const MatrixView<const double>& a);

}  // namespace mixsolve::solvers_detail
