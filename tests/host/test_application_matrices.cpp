// SPDX-License-Identifier: BSD-3-Clause
// The application test-matrix families (matgen/application_matrices.hpp): structure, definiteness,
// rank and conditioning checked with Eigen at small n, odd and off any grid among them; names,
// parse and argument errors.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mixsolve/core/error.hpp"
#include "mixsolve/matgen/application_matrices.hpp"

namespace {

using namespace mixsolve;

constexpr double kU = 0x1p-53;  // unit roundoff of FP64
const std::vector<std::int64_t> kSizes = {97, 250, 301};

Eigen::MatrixXd generate(const ApplicationSpec& spec, std::int64_t n) {
  Eigen::MatrixXd a(n, n);
  generate_application_matrix(spec, host_view(a.data(), n, n, n));
  return a;
}

// A family's matrix and, from the same seed, its base: the spec with `neutralize` applied to the
// parameter under test (e.g. scaled's exponent_range = 0 gives the unscaled matrix).
struct MatrixAndBase {
  Eigen::MatrixXd a, base;
};
template <class Neutralize>
MatrixAndBase generate_with_base(const std::string& text, std::int64_t n, const Neutralize& neutralize) {
  ApplicationSpec spec = ApplicationSpec::parse(text);
  const Eigen::MatrixXd a = generate(spec, n);
  neutralize(spec);
  return {a, generate(spec, n)};
}

ApplicationSpec spec_of(ApplicationFamily family) {
  ApplicationSpec spec;
  spec.family = family;
  return spec;
}

std::int64_t nonzeros_in_row(const Eigen::MatrixXd& a, std::int64_t i) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < a.cols(); ++j) count += a(i, j) != 0;
  return count;
}

// Singular values in extended precision: a backward-stable SVD resolves sigma_min only down to
// ~n u sigma_max of its working precision, so a condition number beyond 1/u_64 needs more bits.
Eigen::Matrix<long double, Eigen::Dynamic, 1> singular_values_extended(const Eigen::MatrixXd& a) {
  const Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic> wide = a.cast<long double>();
  return Eigen::JacobiSVD<Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>>(wide).singularValues();
}

double condition_number(const Eigen::MatrixXd& a) {
  const Eigen::VectorXd s = Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues();
  return s(0) / s(s.size() - 1);
}

TEST(ApplicationMatrices, EveryFamilyIsFiniteAndKeepsItsSymmetryAtOddAndOffGridSizes) {
  for (ApplicationFamily family : application_families())
    for (std::int64_t n : {std::int64_t(1), std::int64_t(2), std::int64_t(97), std::int64_t(250), std::int64_t(301)}) {
      const ApplicationSpec spec = spec_of(family);
      SCOPED_TRACE(spec.name() + ", n = " + std::to_string(n));
      const Eigen::MatrixXd a = generate(spec, n);
      ASSERT_TRUE(a.allFinite());
      if (spec.structure() != MatrixStructure::Nonsymmetric) {
        EXPECT_EQ((a - a.transpose()).cwiseAbs().maxCoeff(), 0.0) << "exactly symmetric";
      } else if (n >= 97) {
        // Clearly beyond the rounding-level asymmetry a symmetric formula could produce.
        EXPECT_GT((a - a.transpose()).cwiseAbs().maxCoeff(), n * kU * a.cwiseAbs().maxCoeff()) << "nonsymmetric";
      }
    }
}

TEST(ApplicationMatrices, SpdFamiliesFactorWithCholesky) {
  std::vector<ApplicationSpec> specs;
  for (ApplicationFamily family : application_families())
    if (spec_of(family).structure() == MatrixStructure::Spd) specs.push_back(spec_of(family));
  ASSERT_EQ(specs.size(), 5u) << "three covariance kernels, elasticity, toeplitz_ar1";
  specs.push_back(ApplicationSpec::parse("convdiff peclet=0"));
  specs.push_back(ApplicationSpec::parse("elasticity poisson=0.49"));
  specs.push_back(ApplicationSpec::parse("elasticity poisson=-0.9"));
  specs.push_back(ApplicationSpec::parse("toeplitz_ar1 rho=-0.999"));
  for (const ApplicationSpec& spec : specs)
    for (std::int64_t n : kSizes) {
      SCOPED_TRACE(spec.name() + ", n = " + std::to_string(n));
      EXPECT_EQ(spec.structure(), MatrixStructure::Spd);
      const Eigen::MatrixXd a = generate(spec, n);
      EXPECT_EQ(Eigen::LLT<Eigen::MatrixXd>(a).info(), Eigen::Success);
    }
}

TEST(ApplicationMatrices, CovarianceDiagonalIsOnePlusNuggetAndKernelsDecay) {
  const std::int64_t n = 97;
  for (const char* name : {"cov_se", "cov_matern32", "cov_matern52"}) {
    SCOPED_TRACE(name);
    ApplicationSpec spec = ApplicationSpec::parse(name);
    spec.nugget = 0.5;
    const Eigen::MatrixXd with_nugget = generate(spec, n);
    spec.nugget = 0;
    const Eigen::MatrixXd without = generate(spec, n);
    EXPECT_EQ(with_nugget - without, Eigen::MatrixXd(0.5 * Eigen::MatrixXd::Identity(n, n)))
        << "the nugget is added exactly";
    EXPECT_EQ(without.diagonal(), Eigen::VectorXd::Ones(n)) << "k(0) = 1";
    Eigen::MatrixXd off = without;
    off.diagonal().setZero();
    EXPECT_GE(off.minCoeff(), 0.0);
    EXPECT_LT(off.maxCoeff(), 1.0) << "k(r) < 1 for distinct points";
    spec.length = 0.2;  // a longer correlation length correlates every pair more strongly
    const Eigen::MatrixXd longer = generate(spec, n);
    std::int64_t compared = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        if (i != j && without(i, j) > 0) {
          EXPECT_GT(longer(i, j), without(i, j)) << i << "," << j;
          ++compared;
        }
    // The points lie in the unit cube (distances below sqrt(3)), where no kernel here underflows
    // (squared exponential at length 0.1: exp(-150) at worst).
    EXPECT_EQ(compared, n * (n - 1)) << "every distinct pair compared";
  }
}

TEST(ApplicationMatrices, ToeplitzIsConstantAlongDiagonalsWithPowersOfRho) {
  for (std::int64_t n : kSizes) {
    const ApplicationSpec spec = ApplicationSpec::parse("toeplitz_ar1 rho=0.95");
    const Eigen::MatrixXd a = generate(spec, n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(a(i, j), a(std::abs(i - j), 0)) << i << "," << j;
    EXPECT_EQ(a(0, 0), 1.0);
    EXPECT_EQ(a(1, 0), 0.95);
    // rho^k from one pow call: within an ulp of the repeated product's exact value, whose own
    // rounding error is at most (k - 1) u.
    double product = 1;
    for (int k = 1; k < 40; ++k) {
      product *= 0.95;
      EXPECT_NEAR(a(k, 0), product, (k + 2) * kU * product) << "k = " << k;
    }
  }
}

TEST(ApplicationMatrices, ConvectionDiffusionIsAnUpwindFivePointMMatrixOnAPartialGrid) {
  for (std::int64_t n : kSizes) {
    const std::int64_t nx = std::int64_t(std::ceil(std::sqrt(double(n))));
    ASSERT_NE(n % nx, 0) << "the sizes leave the last grid row partial";
    const ApplicationSpec spec = ApplicationSpec::parse("convdiff peclet=100");
    const Eigen::MatrixXd a = generate(spec, n);
    SCOPED_TRACE("n = " + std::to_string(n));
    bool some_row_strict = false;
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_LE(nonzeros_in_row(a, i), 5);
      EXPECT_GT(a(i, i), 0.0);
      const double row_sum = a.row(i).sum();
      // Row sums are >= 0 exactly; summing 5 terms of size <= a_ii rounds by at most 5 u a_ii.
      EXPECT_GE(row_sum, -5 * kU * a(i, i)) << "row " << i;
      some_row_strict = some_row_strict || row_sum > 5 * kU * a(i, i);
      for (std::int64_t j = 0; j < n; ++j)
        if (j != i) EXPECT_LE(a(i, j), 0.0);
    }
    EXPECT_TRUE(some_row_strict) << "boundary rows are strictly dominant";
    // Row-by-row numbering with nx per row: no coupling across the end of a grid row.
    EXPECT_NE(a(0, 1), 0.0);
    EXPECT_EQ(a(nx - 1, nx), 0.0);
    EXPECT_EQ(a(nx, nx - 1), 0.0);
    EXPECT_NE(a(0, nx), 0.0);
    // Upwind: the wind (0.8, 0.6) peclet makes the west and south couplings the stronger ones.
    EXPECT_LT(a(1, 0), a(0, 1));
    EXPECT_LT(a(nx, 0), a(0, nx));
  }
}

TEST(ApplicationMatrices, ElasticityCouplesTwoUnknownsPerNodeAndOddNDropsTheLastOne) {
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const Eigen::MatrixXd a = generate(ApplicationSpec::parse("elasticity"), n);
    for (std::int64_t i = 0; i < n; ++i) EXPECT_LE(nonzeros_in_row(a, i), 9) << "5-point self + 4 mixed couplings";
    // The matrix of odd n is the leading block of the one of n + 1 (the last u_y is Dirichlet).
    if (n % 2 == 1) {
      const Eigen::MatrixXd bigger = generate(ApplicationSpec::parse("elasticity"), n + 1);
      EXPECT_EQ(a, bigger.topLeftCorner(n, n));
    }
  }
  // Towards incompressibility the Lame parameter lambda grows and with it the condition number.
  const std::int64_t n = 250;
  EXPECT_GT(condition_number(generate(ApplicationSpec::parse("elasticity poisson=0.49"), n)),
            2 * condition_number(generate(ApplicationSpec::parse("elasticity poisson=0.3"), n)));
}

TEST(ApplicationMatrices, BoundaryIntegralOperatorsOnTheSphere) {
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // The single layer on the unit sphere: equal weights 4 pi / n, so a_ij = 1 / (n |x_i - x_j|)
    // is symmetric up to the rounding of the weights, and the disc diagonal is 1 / sqrt(n).
    const Eigen::MatrixXd s = generate(ApplicationSpec::parse("bie_single b=1 c=1"), n);
    const double tolerance = 16 * kU;  // a few roundings in the nodes, weights and distances
    for (std::int64_t i = 0; i < n; ++i) EXPECT_NEAR(s(i, i) * std::sqrt(double(n)), 1.0, tolerance);
    EXPECT_LE((s - s.transpose()).cwiseAbs().maxCoeff(), tolerance * s.cwiseAbs().maxCoeff());
    const Eigen::MatrixXd d = generate(ApplicationSpec::parse("bie_double"), n);
    EXPECT_EQ(d.diagonal(), Eigen::VectorXd::Constant(n, 0.5)) << "the jump term";
  }
  // Gauss's identity K 1 = -1/2 (so A 1 = 1 for 1/2 I - K) and the single layer's S 1 = 1 on the
  // unit sphere hold up to a quadrature error that shrinks as the nodes fill the surface.
  const auto identity_error = [](const char* name, std::int64_t n) {
    const Eigen::MatrixXd a = generate(ApplicationSpec::parse(name), n);
    return (a * Eigen::VectorXd::Ones(n) - Eigen::VectorXd::Ones(n)).cwiseAbs().maxCoeff();
  };
  for (const char* name : {"bie_single b=1 c=1", "bie_double b=1 c=1", "bie_double"}) {
    SCOPED_TRACE(name);
    EXPECT_LT(identity_error(name, 301), identity_error(name, 97));
  }
}

TEST(ApplicationMatrices, BoundaryIntegralConditioningFirstAndSecondKind) {
  // Second kind: the spectrum of 1/2 I - K stays in (0, 1] whatever n (cond ~2); the first-kind
  // single layer's smallest eigenvalues fall like 1 / sqrt(n).
  const double double_97 = condition_number(generate(ApplicationSpec::parse("bie_double"), 97));
  const double double_301 = condition_number(generate(ApplicationSpec::parse("bie_double"), 301));
  const double single_97 = condition_number(generate(ApplicationSpec::parse("bie_single"), 97));
  const double single_301 = condition_number(generate(ApplicationSpec::parse("bie_single"), 301));
  EXPECT_LT(double_301, single_301);
  EXPECT_GT(single_301, 1.5 * single_97) << "sqrt(301 / 97) = 1.76";
  EXPECT_LT(std::abs(double_301 - double_97), 0.1 * double_97) << "second kind: independent of n";
  // A = K W with K symmetric and W > 0 diagonal: the eigenvalues of W^(1/2) K W^(1/2), positive.
  const Eigen::MatrixXd a = generate(ApplicationSpec::parse("bie_single"), 97);
  const Eigen::VectorXcd eigenvalues = Eigen::EigenSolver<Eigen::MatrixXd>(a, false).eigenvalues();
  EXPECT_GT(eigenvalues.real().minCoeff(), 0.0);
}

TEST(ApplicationMatrices, BadlyScaledIsAPowerOfTenRowAndColumnScalingOfTheBase) {
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto [a, base] =
        generate_with_base("scaled exponent_range=12 seed=5", n, [](ApplicationSpec& s) { s.exponent_range = 0; });
    EXPECT_LT(condition_number(base), 4.0) << "uniform(-1, 1) + 2 sqrt(n) I";
    // a_ij = fl(fl(b_ij 10^e_i) 10^f_j) with 10^e rounded once: log10(a_ij / b_ij) lies within
    // log10(1 + 5u) of the integer e_i + f_j.
    Eigen::MatrixXi exponent(n, n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        const double k = std::log10(a(i, j) / base(i, j));
        exponent(i, j) = int(std::lround(k));
        ASSERT_NEAR(k, exponent(i, j), 5 * kU / std::log(10.0) + 4 * kU * std::abs(k)) << i << "," << j;
      }
    // A rank-one pattern e_i + f_j with e and f in [-12, 12].
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(exponent(i, j) - exponent(i, 0) - exponent(0, j) + exponent(0, 0), 0) << i << "," << j;
    const Eigen::VectorXi rows = exponent.col(0), columns = exponent.row(0).transpose();
    EXPECT_LE(rows.maxCoeff() - rows.minCoeff(), 24);
    EXPECT_LE(columns.maxCoeff() - columns.minCoeff(), 24);
    EXPECT_LE(exponent.cwiseAbs().maxCoeff(), 24);
    if (n >= 250) {  // each end of [-12, 12] is missed by n draws with probability (24/25)^n < 1e-4
      EXPECT_EQ(rows.maxCoeff() - rows.minCoeff(), 24);
      EXPECT_EQ(columns.maxCoeff() - columns.minCoeff(), 24);
    }
  }
}

TEST(ApplicationMatrices, GradedColumnsFollowTheGrading) {
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto [a, base] = generate_with_base("graded grading=10 seed=3", n, [](ApplicationSpec& s) { s.grading = 0; });
    for (std::int64_t j = 0; j < n; ++j) {
      const double g = std::pow(10.0, -10.0 * double(j) / double(n - 1));
      // fl(b g) / b: two roundings, and pow's result within an ulp of ours.
      for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(a(i, j) / base(i, j), g, 4 * kU * g) << i << "," << j;
    }
    EXPECT_EQ(a.col(0), base.col(0));
  }
}

TEST(ApplicationMatrices, HilbertIsNumericallySingular) {
  const std::int64_t n = 97;
  const Eigen::MatrixXd a = generate(ApplicationSpec::parse("hilbert"), n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(a(i, j), 1.0 / double(i + j + 1));
  // In extended precision (u = 2^-64) the computed sigma_min is within ~n 2^-64 sigma_max of the
  // stored matrix's, far below the 1e-16 sigma_max this asserts.
  const auto s = singular_values_extended(a);
  EXPECT_GT(double(s(0) / s(n - 1)), 1e16);
}

TEST(ApplicationMatrices, RankDeficientHasExactlyRankR) {
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const ApplicationSpec spec = ApplicationSpec::parse("rankdef rank_ratio=0.5 seed=2");
    const std::int64_t r = n / 2;
    const Eigen::MatrixXd a = generate(spec, n);
    // Eigen's default rank threshold: pivots below n eps |largest pivot| count as zero.
    EXPECT_EQ(Eigen::ColPivHouseholderQR<Eigen::MatrixXd>(a).rank(), r);
    // fl(X Y^T) = X Y^T + E with |E_ij| <= gamma_r (|X| |Y|^T)_ij <= gamma_r r (|x|, |y| <= 1), so
    // sigma_(r+1) <= ||E||_F <= n r gamma_r, plus the SVD's own n u sigma_1.
    const Eigen::VectorXd s = Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues();
    const double gamma_r = r * kU / (1 - r * kU);
    const double bound = n * r * gamma_r + n * kU * s(0);
    EXPECT_LE(s(r), bound);
    EXPECT_GT(s(r - 1), 1e3 * bound) << "the r-th singular value is far from the rounding level";
    // The perturbation lifts the n - r zero singular values to its own scale (||E||_2 <= n).
    ApplicationSpec perturbed = spec;
    perturbed.perturbation = 1e-6;
    const Eigen::MatrixXd b = generate(perturbed, n);
    EXPECT_EQ(Eigen::ColPivHouseholderQR<Eigen::MatrixXd>(b).rank(), n);
    const Eigen::VectorXd t = Eigen::JacobiSVD<Eigen::MatrixXd>(b).singularValues();
    EXPECT_LE(t(r), 1e-6 * n + bound);
  }
}

TEST(ApplicationMatrices, SparsePlusLowRankIsDominantSparsePlusRankK) {
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // S alone: the same spec without the low-rank term.
    const auto [a, s] =
        generate_with_base("sparse_lowrank nnz_per_row=4 rank=8 seed=9", n, [](ApplicationSpec& t) { t.rank = 0; });
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_LE(nonzeros_in_row(s, i), 5);
      EXPECT_EQ(s(i, i), 5.0);
      EXPECT_GT(std::abs(s(i, i)) - (s.row(i).cwiseAbs().sum() - std::abs(s(i, i))), 0.0) << "strictly dominant row " << i;
    }
    // A - S is U V^T up to one rounding of each entry of A: numerically of rank 8.
    EXPECT_EQ(Eigen::ColPivHouseholderQR<Eigen::MatrixXd>(a - s).rank(), 8);
    EXPECT_LT(condition_number(a), 1 / (n * kU)) << "numerically nonsingular";
  }
}

TEST(ApplicationMatrices, HplMxpIsStrictlyColumnDominantAndPartialPivotingKeepsItsRows) {
  for (std::int64_t n : {std::int64_t(1), std::int64_t(2), std::int64_t(97), std::int64_t(250), std::int64_t(301)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const Eigen::MatrixXd a = generate(ApplicationSpec::parse("hpl_mxp seed=5"), n);
    for (std::int64_t j = 0; j < n; ++j) {
      double diagonal = 0.5;
      for (std::int64_t i = 0; i < n; ++i) {
        if (i == j) continue;
        EXPECT_LT(std::abs(a(i, j)), 0.5);
        diagonal += std::abs(a(i, j));
      }
      // The generator sums in row order from 1/2, this loop too: the same additions.
      EXPECT_EQ(a(j, j), diagonal) << "column " << j;
    }
    // Strict column dominance survives elimination: partial pivoting keeps the diagonal pivots.
    const Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(lu.permutationP().indices()(i), i) << "row " << i << " moved";
    if (n >= 97) {
      const double cond = condition_number(a);
      EXPECT_GT(cond, 1.0);
      EXPECT_LT(cond, 1.0 + 8.0 / std::sqrt(double(n))) << "the diagonal ~n/4 dominates the random part ~sqrt(n/3)";
      std::printf("hpl_mxp n = %lld: cond %.4g\n", static_cast<long long>(n), cond);
    }
  }
  EXPECT_TRUE(generate(ApplicationSpec::parse("hpl_mxp seed=5"), 50) != generate(ApplicationSpec::parse("hpl_mxp seed=6"), 50))
      << "the seed determines the matrix";
}

TEST(ApplicationMatrices, GenerationIgnoresTheLeadingDimensionsPadding) {
  const std::int64_t n = 97, ld = 101;
  for (ApplicationFamily family : application_families()) {
    const ApplicationSpec spec = spec_of(family);
    SCOPED_TRACE(spec.name());
    const Eigen::MatrixXd packed = generate(spec, n);
    std::vector<double> padded(ld * n, -7.0);
    generate_application_matrix(spec, host_view(padded.data(), n, n, ld));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < ld; ++i) ASSERT_EQ(padded[i + j * ld], i < n ? packed(i, j) : -7.0) << i << "," << j;
  }
}

TEST(ApplicationMatrices, NamesRoundTripThroughParse) {
  for (ApplicationFamily family : application_families()) {
    ApplicationSpec spec = spec_of(family);
    spec.seed = 42;
    spec.length = 0.05;
    spec.nugget = 1e-8;
    spec.peclet = 12.5;
    spec.poisson = 0.45;
    spec.b = 0.9;
    spec.c = 1.0 / 3.0;  // needs all 17 digits
    spec.rho = -0.5;
    spec.exponent_range = 7;
    spec.grading = 6;
    spec.rank_ratio = 0.25;
    spec.perturbation = 1e-10;
    spec.nnz_per_row = 3;
    spec.rank = 2;
    const std::string name = spec.name();
    SCOPED_TRACE(name);
    EXPECT_EQ(name.rfind(to_string(family), 0), 0u) << "starts with the family";
    const ApplicationSpec back = ApplicationSpec::parse(name);
    EXPECT_EQ(back.family, family);
    EXPECT_EQ(back.parameters(), spec.parameters());
    EXPECT_EQ(back.name(), name);
    std::string with_colons = name;
    for (char& ch : with_colons)
      if (ch == ' ') ch = ':';
    EXPECT_EQ(ApplicationSpec::parse(with_colons).name(), name);
  }
  EXPECT_EQ(ApplicationSpec::parse("toeplitz_ar1").name(), "toeplitz_ar1 rho=0.99");
  EXPECT_EQ(ApplicationSpec::parse("cov_se").name(), "cov_se length=0.1 nugget=1e-06 seed=1");
  EXPECT_EQ(ApplicationSpec::parse("hilbert").name(), "hilbert");
}

// The InvalidArgument that `call` throws names `text`.
template <class Call>
void expect_invalid_naming(const Call& call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no exception for \"" << text << "\"";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(ApplicationMatrices, BadNamesAndValuesAreInvalidArgumentsNamingTheText) {
  for (const char* text : {"", "cov_gauss", "toeplitz_ar1 rho=1", "toeplitz_ar1 rho=abc", "toeplitz_ar1 rho=0.5x",
                           "cov_se length=0", "cov_se nugget=-1", "cov_se length", "cov_se seed=-3", "cov_se seed=x",
                           "hilbert seed=3", "convdiff length=0.1", "convdiff peclet=nan", "elasticity poisson=0.5",
                           "bie_single b=0", "scaled exponent_range=151", "scaled exponent_range=2.5",
                           "graded grading=inf", "rankdef rank_ratio=1", "rankdef perturbation=-1e-9",
                           "sparse_lowrank rank=-1", "sparse_lowrank nnz_per_row=99999999999", "hpl_mxp rank=2"})
    expect_invalid_naming([&] { ApplicationSpec::parse(text); }, "\"" + std::string(text) + "\"");
  expect_invalid_naming([] { ApplicationSpec::parse("convdiff rho=0.5"); }, "its parameters: peclet");

  // Specs built in code are checked when a matrix is generated.
  Eigen::MatrixXd a(4, 4);
  ApplicationSpec bad = ApplicationSpec::parse("cov_matern32");
  bad.length = -1;
  expect_invalid_naming([&] { generate_application_matrix(bad, host_view(a.data(), 4, 4, 4)); }, "length (-1)");
  expect_invalid_naming([&] { generate_application_matrix(ApplicationSpec{}, host_view(a.data(), 4, 3, 4)); },
                        "4 x 3, not square");
  expect_invalid_naming([&] { generate_application_matrix(ApplicationSpec{}, device_view(a.data(), 4, 4, 4)); },
                        "device matrix");
  expect_invalid_naming([&] { generate_application_matrix(ApplicationSpec{}, host_view(a.data(), 4, 4, 2)); },
                        "ld (2) < rows (4)");
  EXPECT_NO_THROW(generate_application_matrix(ApplicationSpec{}, host_view<double>(nullptr, 0, 0, 1)))
      << "n = 0: nothing to do";
}

}  // namespace
