// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Factor once, solve many, with the kind of factorization in the type:
///
///   mixsolve::Cholesky chol(ctx, A);               // A symmetric positive definite: Cholesky rungs
///   mixsolve::SolveReport r = chol.solve(B, X);    // factors on the first solve; later ones reuse them
///   mixsolve::Lu lu(ctx, A);                       // any square A: LU rungs
///
/// Each is Factorization with SolveOptions::structure fixed (Spd, General); solve_options.hpp,
/// solve_report.hpp and solve.hpp document the options, the report and the errors.
#pragma once

#include <utility>

#include "mixsolve/solvers/solve.hpp"

namespace mixsolve {

/// Factorization with SolveOptions::structure fixed to S (Lu, Cholesky below).
template <Structure S>
class StructuredFactorization {
 public:
  /// Checks A and the options; nothing is factored yet.
  /// @param ctx     the context; it must outlive the object. A device A needs a Context with a GPU.
  /// @param a       the n x n matrix A (host or device memory); read, never written. A device A is
  ///                read in place: it must outlive the object unchanged.
  /// @param options the settings (SolveOptions); their structure is set to S.
  /// @throws InvalidArgument as Factorization's constructor (for Cholesky also where A is not
  ///                         symmetric: the message names an asymmetric pair).
  /// @throws DeviceError     if a CUDA call fails or device memory runs out.
  StructuredFactorization(Context& ctx, const MatrixView<const double>& a, SolveOptions options = {})
      : factorization_(ctx, a, with_structure(std::move(options))) {}

  /// Solves A X = B (Factorization::solve): the factorization, and any escalation, on the first
  /// call.
  /// @param b the n x k right-hand sides, in A's memory space; read.
  /// @param x the n x k solution, in A's memory space; written.
  /// @return the report of this solve.
  /// @throws InvalidArgument     as Factorization::solve.
  /// @throws SingularMatrix      (Lu) if the FP64 LU meets a zero pivot.
  /// @throws NotPositiveDefinite (Cholesky) if the FP64 Cholesky meets a pivot that is not positive.
  /// @throws DeviceError         if a CUDA, cuBLAS or cuSOLVER call fails.
  SolveReport solve(const MatrixView<const double>& b, const MatrixView<double>& x) { return factorization_.solve(b, x); }

  /// @return the precision of the factors in use (Precision::Auto before the first solve).
  Precision precision() const { return factorization_.precision(); }

 private:
  static SolveOptions with_structure(SolveOptions o) {
    o.structure = S;
    return o;
  }
  Factorization factorization_;
};

/// LU factorizations with partial pivoting, for any square A.
using Lu = StructuredFactorization<Structure::General>;
/// Cholesky factorizations (A = L L^T of the lower triangle), for a symmetric positive definite A.
using Cholesky = StructuredFactorization<Structure::Spd>;

}  // namespace mixsolve
