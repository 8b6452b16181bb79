// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Accuracy measures, against an FP64 reference.
#pragma once

#include <cstdint>

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

/// Errors of a computed matrix C against its FP64 reference C* (compare_to_reference()).
/// Non-finite entries of C are counted in `nonfinite` and left out of both error measures.
struct ErrorStats {
  /// Ootomo & Yokota (2021) eq. (6): ||C_ref - C||_F / ||C_ref||_F (the absolute ||C_ref - C||_F where
  /// ||C_ref||_F = 0).
  double relative_error = 0;
  /// Nanai & Fujimoto (2021) eq. (21): max_ij |c*_ij - c_ij| / |c*_ij| over the entries with c*_ij != 0
  double max_relative_error = 0;
  /// entries of C that are NaN or Inf
  std::int64_t nonfinite = 0;
};

/// Compares `c` with the reference `ref` (same shape; both on the host or both on the device).
/// Device comparisons run on `stream` and synchronise it to return the numbers.
/// @param c      the computed FP32 matrix; read.
/// @param ref    the FP64 reference, same shape and memory space as `c`; read.
/// @param stream CUDA stream of a device comparison (null: the default stream); unused on the
///               host.
/// @return the relative errors and the count of non-finite entries of `c` (all 0 for an empty
///         matrix).
/// @throws InvalidArgument if a view is malformed, the shapes differ or the memory spaces differ.
/// @throws DeviceError     if a CUDA call fails.
ErrorStats compare_to_reference(const MatrixView<const float>& c, const MatrixView<const double>& ref,
                                CUstream_st* stream = nullptr);
/// @overload
/// The same comparison for an FP64 computed matrix `c`.
ErrorStats compare_to_reference(const MatrixView<const double>& c, const MatrixView<const double>& ref,
                                CUstream_st* stream = nullptr);

/// Componentwise backward error of x for A x = b (Oettli and Prager; Higham, "Accuracy and
/// Stability of Numerical Algorithms", Thm. 7.3; LAPACK's xGERFS BERR):
///   max_i |b - A x|_i / (|A| |x| + |b|)_i,
/// the smallest relative perturbation of each entry of A and b that makes x exact, so a row
/// scaling of A and b leaves it unchanged (the normwise measure is dominated by the largest rows).
/// A row whose denominator is 0 has a zero residual too and counts as 0; NaN counts as Inf. n x n
/// A and vectors x and b of length n, all on the host or all on the device, in FP64 arithmetic in
/// one pass over A. `residual` (optional, same memory): b - A x as the caller computed it, for the
/// numerator; without it the numerator is summed here, on the device in chunks of columns added
/// in no fixed order (at the FP64 floor the residual is its own rounding, and the ratio then
/// varies from run to run; the denominator needs a digit or two only). Device calls synchronise
/// `stream`; `workspace` (device only, optional): 2 n + 1 doubles, else allocated.
/// @param a         the n x n matrix A (host or device memory, by a.memory); read.
/// @param x         the n entries of x, in a's memory space; read.
/// @param b         the n entries of b, in a's memory space; read.
/// @param stream    CUDA stream of a device computation (null: the default stream); unused on
///                  the host.
/// @param workspace device only: 2 n + 1 doubles of scratch, overwritten; null: allocated and
///                  freed here.
/// @param residual  optional n entries of b - A x, in a's memory space; read. Null: computed here.
/// @return the componentwise backward error (0 for n = 0; Inf where a ratio is NaN).
/// @throws InvalidArgument if `a` is a malformed view or not square.
/// @throws DeviceError     if a CUDA call or the workspace allocation fails.
double componentwise_backward_error(const MatrixView<const double>& a, const double* x, const double* b,
                                    CUstream_st* stream = nullptr, double* workspace = nullptr,
                                    const double* residual = nullptr);

}  // namespace mixsolve
