// SPDX-License-Identifier: BSD-3-Clause
// Test matrices of the MAGMA / LAWN-41 families (design.md §4) for the solvers:
//   svd   A = U diag(s) V^T      U, V Haar-random orthogonal
//   poev  A = Q diag(s) Q^T      symmetric positive definite
//   heev  A = Q diag(+-s) Q^T    symmetric indefinite (random signs)
// with singular values s (s_1 = 1, s_n = 1/cond):
//   arith     s_i = 1 - (i-1)/(n-1) (1 - 1/cond)
//   geo       s_i = cond^(-(i-1)/(n-1))
//   cluster0  s = (1, 1/cond, ..., 1/cond)
//   cluster1  s = (1, ..., 1, 1/cond)
//   logrand   log s_i uniform in [log(1/cond), 0] (s_1 = 1 and s_n = 1/cond pinned)
// Options: `dominant` adds sum_j |a_ij| to each diagonal entry (diagonally dominant; the
// condition number then no longer follows `cond`), and `scale` multiplies A by a factor (for
// entries near overflow or underflow of a working precision).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

enum class MatrixFamily { Svd, Poev, Heev };
enum class Spectrum { Arith, Geo, Cluster0, Cluster1, Logrand };

struct TestMatrixSpec {
  MatrixFamily family = MatrixFamily::Svd;
  Spectrum spectrum = Spectrum::Geo;
  double cond = 1e2;
  std::uint64_t seed = 1;
  bool dominant = false;
  double scale = 1.0;

  // e.g. "svd_geo cond=1e+06", "poev_arith_dominant cond=100 scale=1e+30"
  std::string name() const;
  // Parses "svd_geo", "poev_cluster1_dominant", ... (family_spectrum[_dominant]); cond, seed and
  // scale are set separately. Throws InvalidArgument naming the text.
  static TestMatrixSpec parse(const std::string& text);
};

// The n singular values (descending) of the spec's spectrum.
std::vector<double> spectrum_values(const TestMatrixSpec& spec, std::int64_t n);

// Fills the square host matrix `a` (n x n). Host generation costs O(n^3) through Eigen's
// Householder QR: intended for n up to a few thousand.
void generate_test_matrix(const TestMatrixSpec& spec, const MatrixView<double>& a);

// The same family on the GPU, for large n: the Haar orthogonal factors come from cuSOLVER's QR of
// Gaussian matrices drawn on the device (the matrix differs from the host one of the same seed,
// the spectrum is the same). Synchronises `stream` before returning.
void generate_test_matrix_on_device(const TestMatrixSpec& spec, const MatrixView<double>& a, CUstream_st* stream = nullptr);

}  // namespace mixsolve
