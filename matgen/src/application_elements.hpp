// SPDX-License-Identifier: BSD-3-Clause
// Element (i, j) of the application families (mixsolve/matgen/application_matrices.hpp): one
// function, compiled for the host loop and for the device kernel, so both sides evaluate the same
// IEEE operations in the same order. Contraction into FMA would break that, so the files that
// include this header are compiled with it off (-ffp-contract=off, nvcc --fmad=false:
// matgen/CMakeLists.txt). What costs more than O(1) per index (points, normals, scale factors,
// sparsity patterns, factors) is computed once on the host (prepare_elements) and read here.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/application_matrices.hpp"

namespace mixsolve::matgen_detail {

// The per-index arrays a family reads (host or device pointers, by where the element is evaluated).
enum ArrayId {
  kPoints,        // cov_*: random points; bie_*: nodes (x, y, z per index)
  kNormals,       // bie_double: n_j w_j / (4 pi) (3 per index)
  kWeights,       // bie_single: w_j / (4 pi)
  kDiagonal,      // bie_single: the disc integral on the diagonal
  kRowScale,      // scaled: 10^e_i
  kColumnScale,   // scaled: 10^f_j; graded: 10^(-grading j / (n - 1))
  kPowers,        // toeplitz_ar1: rho^k
  kSparseValues,  // sparse_lowrank: the off-diagonal values of S, nnz_per_row per row
  kFactorU,       // sparse_lowrank: U, row-major (rank per row)
  kFactorV,       // sparse_lowrank: V, row-major
  kArrayCount
};

struct ElementData {
  ApplicationFamily family = ApplicationFamily::CovarianceSquaredExponential;
  std::int64_t n = 0;
  const double* arrays[kArrayCount] = {};
  const std::int64_t* sparse_columns = nullptr;  // sparse_lowrank: the columns of kSparseValues

  double length_factor = 0;  // cov_se: 1 / (2 l^2); cov_matern32: sqrt(3) / l; cov_matern52: sqrt(5) / l
  double nugget = 0;
  std::int64_t nx = 1;       // convdiff, elasticity: grid nodes per row
  double center = 0, west = 0, east = 0, south = 0, north = 0;  // convdiff stencil
  double lame_axial = 0, lame_shear = 0, lame_mixed = 0;        // elasticity: lambda + 2 mu, mu, (lambda + mu) / 4
  std::uint64_t random_seed = 0;  // scaled, graded: the base's entries; rankdef: the perturbation's; hpl_mxp: the entries
  double base_shift = 0;          // scaled, graded: 2 sqrt(n)
  double perturbation = 0;        // rankdef
  int nnz_per_row = 0, rank = 0;  // sparse_lowrank
  double sparse_diagonal = 0;     // sparse_lowrank: nnz_per_row + 1
};

// The arrays on the host, with data.arrays pointing into them: movable (a vector's buffer moves
// with it), not copyable (a copy's pointers would still point into the original).
struct PreparedElements {
  ElementData data;
  std::vector<double> arrays[kArrayCount];
  std::vector<std::int64_t> sparse_columns;

  PreparedElements() = default;
  PreparedElements(PreparedElements&&) = default;
  PreparedElements& operator=(PreparedElements&&) = default;
  PreparedElements(const PreparedElements&) = delete;
  PreparedElements& operator=(const PreparedElements&) = delete;
};

// Checks the spec (InvalidArgument naming `where`) and computes the scalars and arrays for n.
PreparedElements prepare_elements(const ApplicationSpec& spec, std::int64_t n, const char* where);

// rankdef: the streams of X, Y (column-major n x r, uniform(-1, 1) through fill_random) and r.
RandomSpec rankdef_factor(const ApplicationSpec& spec, int which);
std::int64_t rankdef_rank(const ApplicationSpec& spec, std::int64_t n);

MIXSOLVE_HD inline double uniform_pm1(std::uint64_t seed, std::uint64_t index) {
  return random_double(RandomSpec{Distribution::Uniform, -1.0, 1.0, seed}, index);
}

MIXSOLVE_HD inline double covariance(const ElementData& d, std::int64_t i, std::int64_t j) {
  const double* p = d.arrays[kPoints];
  const double dx = p[3 * i] - p[3 * j], dy = p[3 * i + 1] - p[3 * j + 1], dz = p[3 * i + 2] - p[3 * j + 2];
  const double r2 = dx * dx + dy * dy + dz * dz;
  double k;
  if (d.family == ApplicationFamily::CovarianceSquaredExponential) {
    k = exp(-r2 * d.length_factor);
  } else {
    const double s = sqrt(r2) * d.length_factor;
    k = d.family == ApplicationFamily::CovarianceMatern32 ? (1.0 + s) * exp(-s) : (1.0 + s + s * s / 3.0) * exp(-s);
  }
  return i == j ? k + d.nugget : k;
}

// Unknowns numbered row by row, nx per row; j is a matrix index, so a neighbour beyond the last
// unknown (partial last row) never appears: it is the Dirichlet boundary.
MIXSOLVE_HD inline double convection_diffusion(const ElementData& d, std::int64_t i, std::int64_t j) {
  if (i == j) return d.center;
  const std::int64_t ix = i % d.nx;
  if (j == i - 1) return ix > 0 ? d.west : 0.0;
  if (j == i + 1) return ix < d.nx - 1 ? d.east : 0.0;
  if (j == i - d.nx) return d.south;
  if (j == i + d.nx) return d.north;
  return 0.0;
}

// Unknown 2k is u_x at node k, 2k + 1 its u_y.
MIXSOLVE_HD inline double elasticity(const ElementData& d, std::int64_t i, std::int64_t j) {
  const std::int64_t node_i = i / 2, node_j = j / 2;
  const std::int64_t dx = node_j % d.nx - node_i % d.nx, dy = node_j / d.nx - node_i / d.nx;
  if (dx < -1 || dx > 1 || dy < -1 || dy > 1) return 0.0;
  const bool x_i = i % 2 == 0, x_j = j % 2 == 0;
  if (x_i != x_j) {  // -(lambda + mu) d^2/dxdy, centred on the four diagonal neighbours
    if (dx == 0 || dy == 0) return 0.0;
    return dx * dy > 0 ? -d.lame_mixed : d.lame_mixed;
  }
  if (dx == 0 && dy == 0) return 2.0 * d.lame_axial + 2.0 * d.lame_shear;
  if (dx != 0 && dy != 0) return 0.0;
  // -(lambda + 2 mu) along the component's own direction, -mu across it
  const bool along = (dx != 0) == x_i;
  return along ? -d.lame_axial : -d.lame_shear;
}

MIXSOLVE_HD inline double single_layer(const ElementData& d, std::int64_t i, std::int64_t j) {
  if (i == j) return d.arrays[kDiagonal][i];
  const double* x = d.arrays[kPoints];
  const double dx = x[3 * i] - x[3 * j], dy = x[3 * i + 1] - x[3 * j + 1], dz = x[3 * i + 2] - x[3 * j + 2];
  return d.arrays[kWeights][j] / sqrt(dx * dx + dy * dy + dz * dz);
}

MIXSOLVE_HD inline double double_layer(const ElementData& d, std::int64_t i, std::int64_t j) {
  if (i == j) return 0.5;
  const double* x = d.arrays[kPoints];
  const double* nw = d.arrays[kNormals];
  const double dx = x[3 * i] - x[3 * j], dy = x[3 * i + 1] - x[3 * j + 1], dz = x[3 * i + 2] - x[3 * j + 2];
  const double r2 = dx * dx + dy * dy + dz * dz;
  const double dot = dx * nw[3 * j] + dy * nw[3 * j + 1] + dz * nw[3 * j + 2];
  return -dot / (r2 * sqrt(r2));
}

// The well-conditioned random base of `scaled` and `graded`.
MIXSOLVE_HD inline double random_base(const ElementData& d, std::int64_t i, std::int64_t j) {
  const double r = uniform_pm1(d.random_seed, std::uint64_t(i + j * d.n));
  return i == j ? r + d.base_shift : r;
}

MIXSOLVE_HD inline double sparse_plus_low_rank(const ElementData& d, std::int64_t i, std::int64_t j) {
  double s = i == j ? d.sparse_diagonal : 0.0;
  for (int m = 0; m < d.nnz_per_row; ++m)
    if (d.sparse_columns[i * d.nnz_per_row + m] == j) s += d.arrays[kSparseValues][i * d.nnz_per_row + m];
  const double* u = d.arrays[kFactorU] + i * d.rank;
  const double* v = d.arrays[kFactorV] + j * d.rank;
  double low = 0.0;
  for (int t = 0; t < d.rank; ++t) low += u[t] * v[t];
  return s + low;
}

// hpl_mxp: uniform(-1/2, 1/2) entries; the diagonal entry of column j is 1/2 plus the absolute sum of
// the column's other entries, summed in row order on both sides so that host and device agree
// exactly. O(n) for a diagonal entry: O(n^2) added to the matrix's O(n^2).
MIXSOLVE_HD inline double hpl_mxp_entry(const ElementData& d, std::int64_t i, std::int64_t j) {
  return 0.5 * uniform_pm1(d.random_seed, std::uint64_t(i + j * d.n));
}
MIXSOLVE_HD inline double hpl_mxp(const ElementData& d, std::int64_t i, std::int64_t j) {
  if (i != j) return hpl_mxp_entry(d, i, j);
  double column_sum = 0.5;
  for (std::int64_t k = 0; k < d.n; ++k)
    if (k != j) column_sum += fabs(hpl_mxp_entry(d, k, j));
  return column_sum;
}

// Element (i, j); for rankdef only the perturbation, added to the product X Y^T.
MIXSOLVE_HD inline double application_element(const ElementData& d, std::int64_t i, std::int64_t j) {
  switch (d.family) {
    case ApplicationFamily::CovarianceSquaredExponential:
    case ApplicationFamily::CovarianceMatern32:
    case ApplicationFamily::CovarianceMatern52: return covariance(d, i, j);
    case ApplicationFamily::ConvectionDiffusion: return convection_diffusion(d, i, j);
    case ApplicationFamily::Elasticity: return elasticity(d, i, j);
    case ApplicationFamily::SingleLayer: return single_layer(d, i, j);
    case ApplicationFamily::DoubleLayer: return double_layer(d, i, j);
    case ApplicationFamily::ToeplitzAr1: return d.arrays[kPowers][i > j ? i - j : j - i];
    case ApplicationFamily::BadlyScaled:
      return random_base(d, i, j) * d.arrays[kRowScale][i] * d.arrays[kColumnScale][j];
    case ApplicationFamily::GradedColumns: return random_base(d, i, j) * d.arrays[kColumnScale][j];
    case ApplicationFamily::Hilbert: return 1.0 / double(i + j + 1);
    case ApplicationFamily::RankDeficient:
      return d.perturbation * uniform_pm1(d.random_seed, std::uint64_t(i + j * d.n));
    case ApplicationFamily::SparseLowRank: return sparse_plus_low_rank(d, i, j);
    case ApplicationFamily::HplMxp: return hpl_mxp(d, i, j);
  }
  return 0.0;
}

}  // namespace mixsolve::matgen_detail
