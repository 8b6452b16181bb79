// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Application test matrices: dense n x n matrices with the structure of covariance
/// kernels, discretized PDEs, boundary integrals and of badly scaled, numerically singular or
/// rank-deficient problems, for any n (on and off any alignment grid).
///
/// Every family is generated on the host (generate_application_matrix) and on the GPU
/// (generate_application_matrix_on_device) with the same values: points, factors and patterns
/// come from the counter-based generator of core/random.hpp, and element (i, j) is one formula
/// evaluated with the same IEEE operations on both sides. The only differences are the last bits
/// of exp() in the covariance kernels (CUDA's and the C library's differ by an ulp or two) and the
/// summation order of the rank-deficient family's product (cuBLAS DGEMM against Eigen).
///
/// Families (name used by ApplicationSpec::parse, parameters with defaults, structure, and the
/// 2-norm condition number as measured at the defaults for n = 97 ... 2000):
///
///   cov_se        a_ij = exp(-r_ij^2 / (2 l^2)) + nugget [i == j]
///   cov_matern32  a_ij = (1 + s) exp(-s) + nugget [i == j],             s = sqrt(3) r_ij / l
///   cov_matern52  a_ij = (1 + s + s^2 / 3) exp(-s) + nugget [i == j],   s = sqrt(5) r_ij / l
///       r_ij = |p_i - p_j| for n random points p uniform in the unit cube [0, 1)^3 (seed).
///       length l = 0.1, nugget = 1e-6. SPD. lambda_max ~ n (2 pi)^(3/2) l^3 (cov_se); the kernel
///       matrix alone becomes numerically singular as the points fill the cube, so cond rises
///       towards lambda_max / nugget: cov_se 2e2 / 1e3 / 9e5 at n = 97 / 301 / 1000 (the bound
///       lambda_max / nugget is ~5e8 at n = 32768); the Matern kernels' spectra decay slower:
///       1.5e3 (3/2) and 6e3 (5/2) at n = 1000.
///
///   convdiff      -Laplace(u) + w . grad(u) on the unit square, 5-point stencil with first-order
///       upwind convection, times h^2. Grid: nx = ceil(sqrt(n)) unknowns per row, numbered row by
///       row, the last row partial when n is not nx * ny; neighbours outside the n unknowns are
///       Dirichlet (dropped). h = 1 / (nx + 1), w = peclet (0.8, 0.6). Row i: diagonal
///       4 + h (|w_x| + |w_y|); -1 - h |w_x| (or |w_y|) on a neighbour upwind, -1 downwind.
///       peclet = 100. Nonsymmetric (SPD at peclet = 0), a nonsingular M-matrix (row sums >= 0,
///       > 0 on boundary rows). cond ~ 0.43 n at peclet = 0 (the Laplacian); convection lowers
///       it: 1e2 at n = 1000, peclet = 100.
///
///   elasticity    2D linear elasticity (plane strain, Navier-Cauchy, finite differences) with 2
///       unknowns (u_x, u_y) per grid node: -mu Laplace(u) - (lambda + mu) grad(div u), times
///       h^2, mu = 1, lambda = 2 nu / (1 - 2 nu). Nodes as in convdiff with ceil(n / 2) nodes;
///       for odd n the last node keeps only u_x (u_y fixed by a Dirichlet condition). Stencil:
///       u_x-u_x: diagonal 2(lambda + 2 mu) + 2 mu, x-neighbours -(lambda + 2 mu), y-neighbours -mu
///       (u_y-u_y: x and y swapped); u_x-u_y at the diagonal neighbours (dx, dy):
///       -(lambda + mu) dx dy / 4. poisson nu = 0.3, in (-1, 0.5). SPD (the compact second
///       differences dominate the wide mixed ones); cond ~ 0.23 n for nu <= 0.3, growing as the
///       material becomes incompressible (nu -> 0.5): 1.8e3 / 6.5e3 at n = 1000, nu = 0.49 / 0.499.
///
///   bie_single, bie_double  Nystrom discretizations of Laplace boundary integral operators on the
///       ellipsoid x^2 + (y / b)^2 + (z / c)^2 = 1, b = 0.75, c = 0.5 (b = c = 1: the unit
///       sphere). Nodes x_j: the Fibonacci lattice on the unit sphere (z_j = 1 - (2j + 1) / n,
///       azimuth 2 pi frac(j (3 - sqrt 5) / 2)) projected radially onto the ellipsoid, with outward
///       unit normals n_j and area weights w_j = (4 pi / n) rho_j^3 |M^-2 x_j| (the projection's
///       area element; x_j = rho_j u_j, M = diag(1, b, c)).
///     bie_single: a_ij = w_j / (4 pi |x_i - x_j|); the diagonal is the integral of the kernel
///       over a flat disc of area w_i around x_i, sqrt(w_i / pi) / 2 (1 / sqrt(n) on the sphere,
///       where A 1 ~ 1). First kind: A = K W with K symmetric, so A is similar to the symmetric
///       W^(1/2) K W^(1/2) (A itself is symmetric on the sphere up to rounding); cond grows like
///       sqrt(n) (the operator's eigenvalues on the sphere are 1 / (2l + 1)): 36 / 86 at n = 301 /
///       1000.
///     bie_double: a = 1/2 I - K, K_ij = w_j (x_i - x_j) . n_j / (4 pi |x_i - x_j|^3), K_ii = 0:
///       the interior Dirichlet problem, second kind with the 1/2 jump on the diagonal (Gauss:
///       K 1 ~ -1/2, so A 1 ~ 1). Nonsymmetric (symmetric on the sphere up to rounding);
///       cond ~ 2 (2.8 at b = 0.3, c = 0.2), independent of n.
///
///   toeplitz_ar1  a_ij = rho^|i - j| (AR(1) covariance), rho = 0.99 in (-1, 1). SPD, symmetric
///       Toeplitz; cond -> ((1 + |rho|) / (1 - |rho|))^2 as n grows: 1.4e4 / 3.7e4 at n = 97 / 1000.
///
///   scaled        a = D_1 B D_2 with power-of-ten diagonal scalings 10^e_i (rows) and 10^f_j
///       (columns), e and f uniform integers in [-exponent_range, exponent_range]
///       (exponent_range = 12, at most 150). B is the well-conditioned random base
///       b_ij = uniform(-1, 1) + 2 sqrt(n) [i == j] (||R||_2 ~ 1.15 sqrt(n) for the random part
///       R, so cond(B) < 4). Nonsymmetric; |a_ij| spans up to 10^(4 exponent_range); cond ~1e47
///       at the default, all of it removed by row and column equilibration.
///
///   graded        a_ij = b_ij 10^(-grading j / (n - 1)), B the base of `scaled`; grading = 12.
///       Nonsymmetric; cond ~ 10^grading, removed by column equilibration.
///
///   hilbert       a_ij = 1 / (i + j + 1). Symmetric, numerically singular: the exact Hilbert
///       matrix is SPD with cond ~ e^(3.5 n); the stored one has cond ~1e19 and beyond for
///       n >= 97, where Cholesky breaks down.
///
///   rankdef       a = X Y^T + perturbation E, X and Y n x r with r = floor(rank_ratio n) and
///       entries uniform(-1, 1), E uniform(-1, 1) entries (the entries of X Y^T are ~sqrt(r) / 3).
///       rank_ratio = 0.5 in [0, 1), perturbation = 0. Nonsymmetric, rank r: sigma_(r+1) at
///       the rounding level, cond ~1e19 and beyond. A perturbation lifts the n - r smallest
///       singular values to its own scale (at most perturbation n).
///
///   sparse_lowrank  a = S + U V^T: S has nnz_per_row off-diagonal entries uniform(-1, 1) per row
///       at random columns (never the diagonal) and diagonal nnz_per_row + 1 (strictly diagonally
///       dominant, so nonsingular with ||S^-1||_inf <= 1); U, V n x rank with entries
///       uniform(-1, 1). nnz_per_row = 4, rank = 8. Nonsymmetric; ||U V^T||_2 ~ n / 3 dominates
///       and the rank-k update brings S's small singular values down: cond 2e2 / 8e3 / 2e5 at
///       n = 97 / 301 / 2000, growing roughly like n^(3/2) with a random factor.
///
///   hpl_mxp       the matrix style of the HPL-MxP benchmark: random and diagonally dominant.
///       a_ij = u_ij uniform(-1/2, 1/2) for i != j, a_jj = 1/2 + sum_(i != j) |u_ij|.
///       Nonsymmetric, strictly column diagonally dominant (by 1/2 in every column), which Schur
///       complements preserve: Gaussian elimination with partial pivoting makes no row interchange,
///       and the growth factor is at most 2. a_jj ~ n / 4 against a random part of 2-norm
///       ~ sqrt(n / 3) (entries of variance 1/12): cond 1.5 / 1.3 / 1.16 at n = 97 / 301 / 1000,
///       roughly 1 + 8 / sqrt(3 n).
///
/// The random families also take a seed (default 1); the others ignore it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

/// The application families; the comment of each enumerator is the name ApplicationSpec::parse
/// reads (the file description defines them).
enum class ApplicationFamily {
  /// cov_se: squared-exponential covariance kernel plus nugget.
  CovarianceSquaredExponential,
  /// cov_matern32: Matern 3/2 covariance kernel plus nugget.
  CovarianceMatern32,
  /// cov_matern52: Matern 5/2 covariance kernel plus nugget.
  CovarianceMatern52,
  /// convdiff: 2D convection-diffusion, 5-point stencil with upwind convection.
  ConvectionDiffusion,
  /// elasticity: 2D linear elasticity (plane strain), 2 unknowns per node.
  Elasticity,
  /// bie_single: Nystrom single-layer Laplace operator on an ellipsoid (first kind).
  SingleLayer,
  /// bie_double: Nystrom double-layer Laplace operator on an ellipsoid (second kind).
  DoubleLayer,
  /// toeplitz_ar1: AR(1) covariance rho^|i - j|.
  ToeplitzAr1,
  /// scaled: D_1 B D_2 with random power-of-ten row and column scalings.
  BadlyScaled,
  /// graded: B with columns graded over `grading` decades.
  GradedColumns,
  /// hilbert: 1 / (i + j + 1).
  Hilbert,
  /// rankdef: X Y^T of rank floor(rank_ratio n), plus a perturbation.
  RankDeficient,
  /// sparse_lowrank: diagonally dominant sparse S plus a rank-`rank` update U V^T.
  SparseLowRank,
  /// hpl_mxp: random, column diagonally dominant (the HPL-MxP benchmark's style).
  HplMxp,
};

/// Structure a family guarantees for every n (at its parameters).
enum class MatrixStructure {
  /// Symmetric positive definite.
  Spd,
  /// Symmetric, definiteness not guaranteed.
  Symmetric,
  /// General.
  Nonsymmetric,
};

/// The family's name as ApplicationSpec::parse reads it ("cov_se", ...).
/// @param family a family.
/// @return its name.
/// @throws InvalidArgument for a value outside the enumeration.
const char* to_string(ApplicationFamily family);
/// The structure's name.
/// @param structure a structure.
/// @return "spd", "symmetric" or "nonsymmetric".
const char* to_string(MatrixStructure structure);

/// Every family, in the order of the list above.
/// @return the 14 families.
std::vector<ApplicationFamily> application_families();

/// An application matrix: the family, its parameters and the seed. Build one by hand (defaults
/// below) or with parse(); generate_application_matrix() and
/// generate_application_matrix_on_device() check it (validate()). Each family reads the
/// parameters its entry in the file description names; the others are ignored.
struct ApplicationSpec {
  /// The family.
  ApplicationFamily family = ApplicationFamily::CovarianceSquaredExponential;
  /// Seed of the random families (uses_seed()); the others ignore it.
  std::uint64_t seed = 1;
  // Each family reads the parameters its entry above names; the others are ignored.
  /// cov_*: correlation length l (> 0).
  double length = 0.1;
  /// cov_*: added to the diagonal (>= 0).
  double nugget = 1e-6;
  /// convdiff: |w| (>= 0).
  double peclet = 100;
  /// elasticity: Poisson ratio nu, in (-1, 0.5).
  double poisson = 0.3;
  /// bie_*: ellipsoid semi-axes along y (b) and z (c) (> 0).
  double b = 0.75, c = 0.5;
  /// toeplitz_ar1: rho, in (-1, 1).
  double rho = 0.99;
  /// scaled: the scalings' exponents are uniform integers in [-exponent_range, exponent_range];
  /// 0 ... 150.
  int exponent_range = 12;
  /// graded: decades across the columns, 0 ... 300.
  double grading = 12;
  /// rankdef: r = floor(rank_ratio n), in [0, 1).
  double rank_ratio = 0.5;
  /// rankdef: weight of the full-rank noise (>= 0).
  double perturbation = 0;
  /// sparse_lowrank: off-diagonal entries per row of S (>= 0).
  int nnz_per_row = 4;
  /// sparse_lowrank: columns of U and V (>= 0).
  int rank = 8;

  /// The family's parameters (key, value), in a fixed order; the seed is not among them.
  /// @return the keys the family reads with their values (integers as doubles); empty for
  ///         hilbert and hpl_mxp.
  std::vector<std::pair<std::string, double>> parameters() const;
  /// Whether the family draws random numbers (then `seed` determines the matrix too).
  /// @return true for cov_*, scaled, graded, rankdef, sparse_lowrank and hpl_mxp.
  bool uses_seed() const;
  /// The family and its parameters, the seed last where it is used: e.g.
  /// "cov_se length=0.1 nugget=1e-06 seed=1", "toeplitz_ar1 rho=0.99". parse(name())
  /// gives the spec back.
  /// @return the name; each value is the shortest decimal that reads back as it.
  std::string name() const;
  /// The structure the family guarantees (MatrixStructure) at these parameters.
  /// @return Spd for cov_*, elasticity, toeplitz_ar1 and convdiff at peclet = 0; Symmetric for
  ///         hilbert; Nonsymmetric for the others.
  MatrixStructure structure() const;
  /// Parses a family name followed by key=value parameters, separated by spaces or ':'
  /// ("cov_matern32:length=0.05:nugget=1e-8"); parameters not given keep their defaults. Throws
  /// InvalidArgument naming the text for an unknown family or parameter, a parameter the family
  /// does not take, or a value out of range.
  /// @param text the family name, then key=value pairs; "seed" is taken by the random families.
  /// @return the spec, validated.
  /// @throws InvalidArgument for an empty text, an unknown family, a token that is not
  ///                         key=value, a parameter the family does not take, a value that is
  ///                         not a number (or not an integer, for seed and the int parameters),
  ///                         or a value out of range (validate()).
  static ApplicationSpec parse(const std::string& text);
  /// Throws InvalidArgument, naming `where`, the parameter and its value, if one of the family's
  /// parameters is out of range.
  /// @param where the caller's name, for the message.
  /// @throws InvalidArgument if a parameter the family reads is out of the range given with its
  ///                         field (a real parameter must also be finite).
  void validate(const char* where) const;
};

/// Fills the square host matrix `a` (n x n, any n >= 0). O(n^2) elementwise but for rankdef,
/// whose X Y^T costs an O(n^2 r) Eigen product: intended for n up to a few thousand.
/// @param spec the matrix; validated.
/// @param a    the n x n host matrix; written.
/// @throws InvalidArgument if `a` is malformed, not square or a device matrix, or `spec` is out
///                         of range (ApplicationSpec::validate()).
void generate_application_matrix(const ApplicationSpec& spec, const MatrixView<double>& a);

/// The same matrix on the GPU: O(n^2) elementwise kernels (rankdef: a cuBLAS DGEMM), for n up to
/// what fits in device memory. Ordered on `stream`, which it synchronises before returning.
/// @param spec   the matrix; validated.
/// @param a      the n x n device matrix; written.
/// @param stream CUDA stream of the generation (null: the default stream).
/// @throws InvalidArgument if `a` is malformed, not square or a host matrix, or `spec` is out of
///                         range (ApplicationSpec::validate()).
/// @throws DeviceError     if a CUDA or cuBLAS call or an allocation fails.
void generate_application_matrix_on_device(const ApplicationSpec& spec, const MatrixView<double>& a,
                                           CUstream_st* stream = nullptr);

}  // namespace mixsolve
