// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Solve A X = B (A square, B with one or several right-hand sides) to FP64 accuracy: factorize A
/// in a cheaper arithmetic, refine with residuals in double-double (or FP64), escalate the
/// precision when refinement fails.
///
///   mixsolve::SolveReport r = mixsolve::solve(ctx, A, B, X);          // defaults below
///
/// A, B, X are views in host or device memory (all three in the same one); A and B are not
/// modified. Host matrices are solved with the host backends (Eigen, and gemm/'s models of the
/// tensor-core roundings for the cheaper precisions), so the whole logic runs without a GPU.
/// The settings: mixsolve/solvers/solve_options.hpp; the report: mixsolve/solvers/solve_report.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/errors.hpp"
#include "mixsolve/solvers/solve_options.hpp"
#include "mixsolve/solvers/solve_report.hpp"

namespace mixsolve {

/// Solves A X = B to FP64 accuracy (see the file description): Factorization(ctx, a, options)
/// followed by its solve(b, x).
/// @param ctx     the context: its GPU, stream and memory pool for device matrices; a host-only
///                Context is enough for host matrices.
/// @param a       the n x n matrix A (host or device memory); read, not modified. No NaN or Inf.
/// @param b       the n x k right-hand sides B, in a's memory space; read, not modified. No NaN
///                or Inf.
/// @param x       the n x k solution X, in a's memory space, not overlapping A or B (no byte of
///                its storage range [x.data, x.data + (k - 1) ldx + n) in A's or B's;
///                detail::check_no_overlap); written (the best iterate: SolveReport::backward_error).
///                The rows between n and ldx are not written.
/// @param options the settings (SolveOptions).
/// @return the report; check SolveReport::converged.
/// @throws InvalidArgument if a view is malformed, A is not square or holds NaN or Inf, B has
///                         not n rows or holds NaN or Inf, X's shape differs from B's, the
///                         matrices lie in different memory spaces or A on the device with a
///                         host-only ctx, X's storage overlaps A's or B's (the message names
///                         both and their byte ranges), structure is Spd and A is not
///                         symmetric (the message names an asymmetric pair), or an option is
///                         out of range
///                         (structure not General, Spd or Auto, auto_path or cholesky_auto_path
///                         empty or containing Auto, auto_min_n or cholesky_auto_min_n < -1,
///                         max_iterations < 0, gmres_restart < 1,
///                         gmres_max_inner < 1, block_size < 0, probe_pivot_ratio NaN or < 0,
///                         residual_precision not Auto, Fp64 or DoubleDouble,
///                         tolerance_factor <= 0 or not finite, ozaki_bits outside
///                         [kOzakiMinBits, kOzakiMaxBits], factor_storage wider than 32 bits,
///                         krylov_basis_format FP32-based).
/// @throws SingularMatrix  if the FP64 LU meets a zero pivot.
/// @throws NotPositiveDefinite if structure is Spd and the FP64 Cholesky meets a pivot that is
///                         not positive.
/// @throws DeviceError     if a CUDA, cuBLAS or cuSOLVER call fails, or device memory runs out.
SolveReport solve(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                  const MatrixView<double>& x, const SolveOptions& options = {});

/// Factor once, solve many: the factorization (and any escalation) happens on the first solve;
/// later solves reuse the factors of the precision that succeeded. A host matrix is copied (an
/// FP64 copy for the residuals, and the factors beside it). A device matrix is not: it is read in
/// place (its scan in the constructor, its conversion into the factors' own storage, the
/// residuals and mat-vecs), so it must outlive the Factorization and stay unchanged. A itself is
/// never written.
class Factorization {
 public:
  /// Checks A and the options and prepares the engine of A's memory space; nothing is factored
  /// yet.
  /// @param ctx     the context; it must outlive the Factorization. A device A needs a Context
  ///                with a GPU.
  /// @param a       the n x n matrix A (host or device memory); read, never written. A device A
  ///                must outlive the Factorization and stay unchanged.
  /// @param options the settings (SolveOptions), copied.
  /// @throws InvalidArgument if `a` is malformed, not square or holds NaN or Inf, `a` is on the
  ///                         device and ctx host-only, structure is Spd and A is not symmetric,
  ///                         or an option is out of range (structure not General, Spd or
  ///                         Auto, auto_path or cholesky_auto_path empty or containing Auto
  ///                         where factorization is Auto, auto_min_n or cholesky_auto_min_n
  ///                         < -1, max_iterations < 0, gmres_restart < 1,
  ///                         gmres_max_inner < 1, block_size < 0, probe_pivot_ratio NaN or < 0,
  ///                         residual_precision not Auto, Fp64 or DoubleDouble,
  ///                         tolerance_factor <= 0 or not finite, ozaki_bits outside
  ///                         [kOzakiMinBits, kOzakiMaxBits], factor_storage wider than 32 bits,
  ///                         krylov_basis_format FP32-based).
  /// @throws DeviceError     if a CUDA call fails or device memory runs out.
  Factorization(Context& ctx, const MatrixView<const double>& a, const SolveOptions& options = {});
  /// Frees the factors and the engine's memory (device memory goes back to the Context's pool).
  ~Factorization();
  /// Moves the factors and state; the moved-from object may only be destroyed or assigned to.
  Factorization(Factorization&&) noexcept;
  /// Moves the factors and state; the moved-from object may only be destroyed or assigned to.
  Factorization& operator=(Factorization&&) noexcept;

  /// Solves A X = B with the factors, factoring (and escalating) first where none are in use.
  /// A later solve starts from the factors that succeeded, with the refinement method that
  /// worked, and may still escalate to the next precision of the path if they fail for this B.
  /// @param b the n x k right-hand sides, in A's memory space; read. No NaN or Inf.
  /// @param x the n x k solution, in A's memory space; written (not the rows between n and ldx).
  ///          Its storage range must not overlap B's, nor a device A's (read in place); a host A
  ///          was copied by the constructor, so its storage may since hold X.
  /// @return the report of this solve (SolveReport); a B with no columns or rows returns at once,
  ///         converged.
  /// @throws InvalidArgument if a view is malformed, B has not n rows or holds NaN or Inf, X's
  ///                         shape differs from B's, B or X is not in A's memory space, or X's
  ///                         storage overlaps B's or a device A's (the message names both).
  /// @throws SingularMatrix  if the FP64 LU meets a zero pivot.
  /// @throws NotPositiveDefinite if structure is Spd and the FP64 Cholesky meets a pivot that
  ///                         is not positive.
  /// @throws DeviceError     if a CUDA, cuBLAS or cuSOLVER call fails, or device memory runs out.
  SolveReport solve(const MatrixView<const double>& b, const MatrixView<double>& x);
  /// The precision of the factors in use (Auto before the first solve).
  /// @return the precision, or Precision::Auto where no factors are in use.
  Precision precision() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mixsolve
