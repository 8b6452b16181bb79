// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Test matrices of the MAGMA / LAWN-41 families for the solvers:
///   svd   A = U diag(s) V^T      U, V Haar-random orthogonal
///   poev  A = Q diag(s) Q^T      symmetric positive definite
///   heev  A = Q diag(+-s) Q^T    symmetric indefinite (random signs)
/// with singular values s (s_1 = 1, s_n = 1/cond):
///   arith     s_i = 1 - (i-1)/(n-1) (1 - 1/cond)
///   geo       s_i = cond^(-(i-1)/(n-1))
///   cluster0  s = (1, 1/cond, ..., 1/cond)
///   cluster1  s = (1, ..., 1, 1/cond)
///   logrand   log s_i uniform in [log(1/cond), 0] (s_1 = 1 and s_n = 1/cond pinned)
/// Options: `dominant` adds sum_j |a_ij| to each diagonal entry's magnitude (a_ii moves away
/// from 0 by the row's absolute sum, keeping its sign: diagonally dominant; the condition number
/// then no longer follows `cond`), and `scale` multiplies A by a factor (for entries near
/// overflow or underflow of a working precision), after `dominant`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

/// The structure of a test matrix: Svd (U diag(s) V^T), Poev (symmetric positive definite) or
/// Heev (symmetric indefinite); see the file description.
enum class MatrixFamily { Svd, Poev, Heev };
/// The distribution of the singular values: arith, geo, cluster0, cluster1 or logrand (see the
/// file description).
enum class Spectrum { Arith, Geo, Cluster0, Cluster1, Logrand };

/// A test matrix: family, spectrum, condition number, seed and options.
struct TestMatrixSpec {
  /// svd, poev or heev.
  MatrixFamily family = MatrixFamily::Svd;
  /// The distribution of the singular values.
  Spectrum spectrum = Spectrum::Geo;
  /// 2-norm condition number s_1 / s_n (without `dominant`); finite and >= 1.
  double cond = 1e2;
  /// Seed of the random orthogonal factors (and of logrand's values and heev's signs).
  std::uint64_t seed = 1;
  /// Add sum_j |a_ij| to |a_ii| (diagonally dominant; cond no longer applies).
  bool dominant = false;
  /// Factor A is multiplied by.
  double scale = 1.0;

  /// The spec's name, e.g. "svd_geo cond=1e+06", "poev_arith_dominant cond=100 scale=1e+30"
  /// (scale only where it is not 1; the seed is not included).
  /// @return the name.
  std::string name() const;
  /// Parses "svd_geo", "poev_cluster1_dominant", ... (family_spectrum[_dominant]); cond, seed and
  /// scale are set separately. Throws InvalidArgument naming the text.
  /// @param text family_spectrum[_dominant], lower case.
  /// @return a spec with that family, spectrum and option, and default cond, seed and scale.
  /// @throws InvalidArgument for an unknown family, spectrum or suffix, naming the text.
  static TestMatrixSpec parse(const std::string& text);
};

/// The n singular values (descending) of the spec's spectrum.
/// @param spec the spec (its spectrum, cond and, for logrand, seed are read).
/// @param n    the matrix order, >= 1.
/// @return s_1 = 1 >= ... >= s_n = 1/cond (all 1 for n = 1).
/// @throws InvalidArgument if n < 1, or cond is not finite and >= 1.
std::vector<double> spectrum_values(const TestMatrixSpec& spec, std::int64_t n);

/// Fills the square host matrix `a` (n x n). Host generation costs O(n^3) through Eigen's
/// Householder QR: intended for n up to a few thousand.
/// @param spec the test matrix.
/// @param a    the n x n host matrix (n >= 0); written.
/// @throws NotSupported    if `a` is a device matrix (use generate_test_matrix_on_device()).
/// @throws InvalidArgument if `a` is malformed or not square, or spec.cond is not finite and
///                         >= 1.
void generate_test_matrix(const TestMatrixSpec& spec, const MatrixView<double>& a);

/// The same family on the GPU, for large n: the Haar orthogonal factors come from cuSOLVER's QR of
/// Gaussian matrices drawn on the device (the matrix differs from the host one of the same seed,
/// the spectrum is the same). Synchronises `stream` before returning.
/// @param spec   the test matrix.
/// @param a      the n x n device matrix (n >= 0), or m x n with m > n for the svd family
///               without `dominant` (U then m x n with orthonormal columns); written.
///               Temporaries of about 2 m n + n^2 doubles are allocated besides it (cudaMalloc).
/// @param stream CUDA stream of the generation (null: the default stream).
/// @throws InvalidArgument if `a` is malformed or not a device matrix, not square where the spec
///                         needs it (or m < n), or spec.cond is not finite and >= 1.
/// @throws DeviceError     if a CUDA, cuBLAS or cuSOLVER call or an allocation fails.
void generate_test_matrix_on_device(const TestMatrixSpec& spec, const MatrixView<double>& a,
                                    CUstream_st* stream = nullptr);

}  // namespace mixsolve
