// SPDX-License-Identifier: BSD-3-Clause
// least_squares() on rank-deficient host matrices (LeastSquaresOptions::RankDeficiency::
// MinimumNorm, the default): the minimum-norm solution and the numerical rank, against a
// truncated SVD in long double of the stored problem (the reference) and the same SVD in FP64
// (the comparator: "an FP64 SVD-based solve", the median over row orders), on exactly and
// numerically rank-deficient problems with a gap in the spectrum, the dummy-variable trap,
// duplicated and zero columns, the rank threshold, a zero A and a zero B; and the rank-revealing
// attempt on full-rank A beyond the Cholesky QR's reach; ridge regression.
#include "mixsolve/solvers/least_squares.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mixsolve/core/random.hpp"
#include "mixsolve/solvers/errors.hpp"
#include "reference_solvers.hpp"

namespace {

using namespace mixsolve;
using MatrixD = Eigen::MatrixXd;
using mixsolve::testing::ordered_norm2;
using mixsolve::testing::ordered_product;
mixsolve::testing::MatrixLd MatrixLd_of(const MatrixD& a) { return a.cast<long double>(); }

MatrixD random_matrix(std::int64_t m, std::int64_t n, std::uint64_t seed) {
  MatrixD a(m, n);
  fill_random(host_view(a.data(), m, n, m), RandomSpec::uniform(-1, 1, seed));
  return a;
}

// A = U diag(sigma) V^T with the given singular values (zeros make A rank deficient: its stored
// FP64 values then have singular values of order u ||A|| there), U and V from Householder QRs of
// random matrices (reference_solvers.hpp: the same bits on every machine).
MatrixD with_singular_values(std::int64_t m, const std::vector<double>& sigma, std::uint64_t seed) {
  using mixsolve::testing::householder_qr;
  using mixsolve::testing::thin_q;
  const std::int64_t n = std::int64_t(sigma.size());
  const MatrixD u = thin_q(householder_qr(random_matrix(m, n, seed)), n);
  MatrixD sigma_vt = thin_q(householder_qr(random_matrix(n, n, seed + 1)), n).transpose();
  for (std::int64_t i = 0; i < n; ++i) sigma_vt.row(i) *= sigma[std::size_t(i)];
  return ordered_product(u, sigma_vt);
}

// sigma_1 .. sigma_kept geometric from 1 to 1 / kappa, then `zeros` zeros.
std::vector<double> gap_spectrum(std::int64_t kept, double kappa, std::int64_t zeros) {
  std::vector<double> s;
  for (std::int64_t i = 0; i < kept; ++i)
    s.push_back(std::pow(kappa, -double(i) / double(std::max<std::int64_t>(kept - 1, 1))));
  s.insert(s.end(), std::size_t(zeros), 0.0);
  return s;
}

struct Solved {
  MatrixD x;
  LeastSquaresReport report;
};
Solved solve(Context& ctx, const MatrixD& a, const MatrixD& b, const LeastSquaresOptions& options = {}) {
  const std::int64_t m = a.rows(), n = a.cols(), k = b.cols();
  Solved s{MatrixD::Constant(n, k, -7.0), {}};
  s.report = least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                           host_view(s.x.data(), n, k, n), options);
  return s;
}

// The errors of x and of its residual against the reference, max over the columns (x relative to
// ||x_ref||, the residual to ||b||).
struct Errors {
  double x = 0, r = 0;
};
Errors errors_against(const mixsolve::testing::MinimumNormReference& ref, const MatrixD& a, const MatrixD& b,
                      const MatrixD& x) {
  Errors e;
  const MatrixD r = b - ordered_product(a, x);
  for (std::int64_t c = 0; c < x.cols(); ++c) {
    e.x = std::max(e.x, mixsolve::testing::relative_error(x.col(c).data(), ref.x.col(c).data(), x.rows()));
    long double d = 0;
    for (std::int64_t i = 0; i < b.rows(); ++i) {
      const long double v = r(i, c) - ref.r(i, c);
      d += v * v;
    }
    e.r = std::max(e.r, double(std::sqrt(d)) / ordered_norm2(b.col(c).data(), b.rows()));
  }
  return e;
}

// The accuracy rule: x and the residual within 10x of an FP64 SVD-based solve's error
// against the reference, with two floors. 4 n u kappa_rank (kappa_rank = sigma_1 / sigma_rank):
// the FP64 SVD's error is a draw whose lower tail can fall far below what FP64 factors attain.
// And the distance between the two truncations: the solver drops the pivoted QR's R22 (gelsy's
// truncation), the reference the trailing singular values (gelsd's). Both are rank-`rank`
// matrices within (1 + sqrt(n)) sigma_rank+1 of A (a pivoted QR's ||R22|| is about sqrt(n)
// sigma_rank+1 or less), so by Wedin's theorem their minimum-norm solutions differ by up to
// about 2 (1 + sqrt(n)) sigma_rank+1 / sigma_rank^2 ||b||: negligible where the dropped singular
// values are rounding (an exactly rank-deficient A), not where rcond cuts through nonzero ones.
void expect_as_accurate_as_an_fp64_svd(const mixsolve::testing::MinimumNormReference& ref, const Errors& e,
                                       const MatrixD& b, std::int64_t n, std::int64_t rank, const std::string& what) {
  const double sigma_1 = double(ref.sigma[0]), sigma_k = double(ref.sigma[std::size_t(rank - 1)]);
  const double sigma_next = rank < n ? double(ref.sigma[std::size_t(rank)]) : 0.0;
  double x_norm = 0, b_norm = 0;
  for (std::int64_t c = 0; c < b.cols(); ++c) {
    x_norm = std::max(x_norm, double(ref.x.col(c).norm()));
    b_norm = std::max(b_norm, b.col(c).norm());
  }
  const double truncations = 2 * (1 + std::sqrt(double(n))) * sigma_next / (sigma_k * sigma_k) * b_norm;
  const double x_floor = std::max(4 * double(n) * 0x1p-53 * sigma_1 / sigma_k, truncations / x_norm);
  const double r_floor = std::max(4 * double(n) * 0x1p-53 * sigma_1 / sigma_k, truncations * sigma_1 / b_norm);
  EXPECT_LE(e.x, std::max(10 * ref.fp64_svd_x, x_floor)) << what << ": FP64 SVD " << ref.fp64_svd_x;
  EXPECT_LE(e.r, std::max(10 * ref.fp64_svd_r, r_floor)) << what << ": FP64 SVD " << ref.fp64_svd_r;
}

TEST(LeastSquaresRankDeficient, MinimumNormSolutionMatchesTheTruncatedSvd) {
  Context ctx = Context::host_only();
  const std::int64_t m = 240, kept = 36, zeros = 12, n = kept + zeros;
  for (double kappa : {1e2, 1e6, 1e10})
    for (std::uint64_t seed : {11u, 12u}) {
      const MatrixD a = with_singular_values(m, gap_spectrum(kept, kappa, zeros), seed);
      const MatrixD b = random_matrix(m, 2, seed + 7);  // inconsistent
      const MatrixD a0 = a, b0 = b;
      const Solved s = solve(ctx, a, b);
      const auto ref = mixsolve::testing::minimum_norm_reference(a, b, kept);
      const Errors e = errors_against(ref, a, b, s.x);
      const std::string what =
          "kappa " + std::to_string(kappa) + " seed " + std::to_string(seed) + ": " + s.report.path();
      std::printf("%s: rank %lld, x error %.2e (FP64 SVD %.2e), r error %.2e (%.2e)\n", what.c_str(),
                  static_cast<long long>(s.report.rank), e.x, ref.fp64_svd_x, e.r, ref.fp64_svd_r);
      EXPECT_TRUE(s.report.converged) << what;
      EXPECT_EQ(s.report.rank, kept) << what;
      EXPECT_NE(s.report.path().find("rrqr[rank " + std::to_string(kept) + "]/cgls("), std::string::npos) << what;
      expect_as_accurate_as_an_fp64_svd(ref, e, b, n, kept, what);
      // The estimates: sigma_max from below (of the FP32 R, whose singular values are A's to
      // about u_32), the kept |r_kk| above the threshold, the dropped below.
      EXPECT_LE(s.report.sigma_max_estimate, double(ref.sigma[0]) * (1 + 0x1p-20)) << what;
      EXPECT_GE(s.report.sigma_max_estimate, 0.5 * double(ref.sigma[0])) << what;
      EXPECT_GT(s.report.sigma_kept_estimate, s.report.rank_threshold) << what;
      EXPECT_LE(s.report.sigma_dropped_estimate, s.report.rank_threshold) << what;
      // The reported residual norms, up to the rounding of b - A x (u ||A|| ||x|| and more).
      for (std::int64_t j = 0; j < b.cols(); ++j)
        EXPECT_NEAR(s.report.residual_norms[std::size_t(j)], (b.col(j) - a * s.x.col(j)).norm(),
                    1e-12 * (b.col(j).norm() + a.norm() * s.x.col(j).norm()));
      EXPECT_EQ(a, a0);  // inputs untouched
      EXPECT_EQ(b, b0);
    }
}

// A deficiency by one beside an ill-conditioned kept part (kappa 1e6: the FP32 R's smallest
// |r_jj| is rounding, 1e-6 .. 4e-6, at the kept part's smallest singular value): the FP32
// factors must not take A for full rank. Before the last column was tested and a dependence test
// that did not converge handed over to FP64 factors, fp32/cgls converged here to least-squares
// solutions 3e-3 .. 2.6 away from the minimum-norm one and reported rank n.
TEST(LeastSquaresRankDeficient, DeficiencyByOneBesideAnIllConditionedKeptPart) {
  Context ctx = Context::host_only();
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{200, 30}, {500, 60}})
    for (int spectrum = 0; spectrum < 3; ++spectrum)  // kept part geometric, one small, half small
      for (bool consistent : {true, false}) {
        const std::int64_t kept = n - 1;
        std::vector<double> sigma = gap_spectrum(kept, 1e6, 1);
        if (spectrum > 0)
          for (std::int64_t i = 0; i < kept; ++i)
            sigma[std::size_t(i)] = (spectrum == 1 ? i + 1 < kept : i < kept / 2) ? 1 : 1e-6;
        const std::uint64_t seed = 500 + std::uint64_t(m) + std::uint64_t(spectrum);
        const MatrixD a = with_singular_values(m, sigma, seed);
        const MatrixD b =
            consistent ? MatrixD(ordered_product(a, random_matrix(n, 1, seed + 2))) : random_matrix(m, 1, seed + 1);
        const Solved s = solve(ctx, a, b);
        const auto ref = mixsolve::testing::minimum_norm_reference(a, b, kept);
        const Errors e = errors_against(ref, a, b, s.x);
        const std::string what = std::to_string(m) + " x " + std::to_string(n) + ", spectrum " +
                                 std::to_string(spectrum) + (consistent ? ", consistent: " : ": ") + s.report.path();
        EXPECT_TRUE(s.report.converged) << what;
        EXPECT_EQ(s.report.rank, kept) << what;
        expect_as_accurate_as_an_fp64_svd(ref, e, b, n, kept, what);
      }
}

// Structured rank deficiency as regression designs have it: an intercept with a full set of
// one-hot group columns (the dummy-variable trap: the groups sum to the intercept), a column
// duplicated, a zero column; from FP32 factors and from FP64 ones. With 30 groups of 10 rows the
// FP32 R's |r_jj| of the dependent column is FP32 rounding of the intercept's, above 16 u_32 of
// its largest |r_jj|: the FP64 test of that column must find the dependence.
TEST(LeastSquaresRankDeficient, DependentColumnsOfRegressionDesigns) {
  Context ctx = Context::host_only();
  const std::int64_t m = 300;
  const auto dummy_design = [&](std::int64_t groups, std::int64_t continuous) {
    MatrixD design(m, 1 + groups + continuous);
    const MatrixD draws = random_matrix(m, continuous + 1, 31);
    for (std::int64_t i = 0; i < m; ++i) {
      design(i, 0) = 1;
      const std::int64_t g = std::int64_t(std::floor((draws(i, continuous) + 1) / 2 * double(groups))) % groups;
      for (std::int64_t q = 0; q < groups; ++q) design(i, 1 + q) = q == g ? 1 : 0;
      for (std::int64_t q = 0; q < continuous; ++q) design(i, 1 + groups + q) = draws(i, q);
    }
    return design;
  };
  const MatrixD design = dummy_design(6, 5), many_groups = dummy_design(30, 30);
  MatrixD duplicated = random_matrix(m, 9, 32);
  duplicated.col(6) = duplicated.col(2);
  MatrixD zero_column = random_matrix(m, 9, 33);
  zero_column.col(4).setZero();
  const struct {
    const char* name;
    MatrixD a;
    std::int64_t rank;
  } cases[] = {{"dummy-variable trap", design, 11},
               {"dummy-variable trap, 30 groups", many_groups, 60},
               {"duplicated column", duplicated, 8},
               {"zero column", zero_column, 8}};
  for (const auto& c : cases)
    for (Precision precision : {Precision::FP32, Precision::FP64}) {
      const MatrixD b = random_matrix(m, 1, 34);
      LeastSquaresOptions options;
      options.factorization = precision;
      const Solved s = solve(ctx, c.a, b, options);
      const auto ref = mixsolve::testing::minimum_norm_reference(c.a, b, c.rank);
      const Errors e = errors_against(ref, c.a, b, s.x);
      const std::string what = std::string(c.name) + ", " + to_string(precision) + ": " + s.report.path();
      std::printf("%s: x error %.2e (FP64 SVD %.2e), r error %.2e (%.2e)\n", what.c_str(), e.x, ref.fp64_svd_x, e.r,
                  ref.fp64_svd_r);
      EXPECT_TRUE(s.report.converged) << what;
      EXPECT_EQ(s.report.rank, c.rank) << what;
      expect_as_accurate_as_an_fp64_svd(ref, e, b, c.a.cols(), c.rank, what);
      if (precision == Precision::FP64)
        EXPECT_EQ(s.report.path().rfind("fp64[rank deficient] -> rrqr[rank ", 0), 0u) << what;
      if (precision == Precision::FP32 && c.a.cols() == 61)
        EXPECT_EQ(s.report.path().rfind("fp32[rank deficient] -> rrqr[rank 60]", 0), 0u) << what;
    }
  // Without FP64 work to follow (fallback off, FP32 factorization) MinimumNorm has no solution to
  // give: "rank undecided", X NaN, nothing thrown; FullRank throws RankDeficientMatrix.
  const MatrixD b = random_matrix(m, 1, 34);
  LeastSquaresOptions fp32_only;
  fp32_only.factorization = Precision::FP32;
  fp32_only.fallback = false;
  const Solved undecided = solve(ctx, many_groups, b, fp32_only);
  EXPECT_FALSE(undecided.report.converged) << undecided.report.path();
  EXPECT_EQ(undecided.report.path(), "fp32[rank undecided]");
  EXPECT_TRUE(undecided.x.array().isNaN().all()) << undecided.report.path();
  fp32_only.rank_deficient = LeastSquaresOptions::RankDeficiency::FullRank;
  EXPECT_THROW(solve(ctx, many_groups, b, fp32_only), RankDeficientMatrix);
}

// rcond sets the rank: singular values 1 .. 1e-3 (20), then 1e-8 .. 1e-9 (10), then zeros (6).
// rcond 1e-6 keeps the first 20 (and drops nonzero singular values: the truncations differ by
// about 1e-5 there), rcond 1e-12 the first 30.
TEST(LeastSquaresRankDeficient, RcondSetsTheRank) {
  Context ctx = Context::host_only();
  std::vector<double> sigma = gap_spectrum(20, 1e3, 0);
  for (int i = 0; i < 10; ++i) sigma.push_back(1e-8 * std::pow(0.1, i / 9.0));
  sigma.insert(sigma.end(), 6, 0.0);
  const std::int64_t m = 200, n = std::int64_t(sigma.size());
  const MatrixD a = with_singular_values(m, sigma, 41);
  const MatrixD b = random_matrix(m, 1, 42);
  for (const auto& [rcond, rank] : {std::pair<double, std::int64_t>{1e-6, 20}, {1e-12, 30}}) {
    LeastSquaresOptions options;
    options.rcond = rcond;
    const Solved s = solve(ctx, a, b, options);
    const auto ref = mixsolve::testing::minimum_norm_reference(a, b, rank);
    const Errors e = errors_against(ref, a, b, s.x);
    const std::string what = "rcond " + std::to_string(rcond) + ": " + s.report.path();
    std::printf("%s: x error %.2e (FP64 SVD %.2e), r error %.2e (%.2e)\n", what.c_str(), e.x, ref.fp64_svd_x, e.r,
                ref.fp64_svd_r);
    EXPECT_TRUE(s.report.converged) << what;
    EXPECT_EQ(s.report.rank, rank) << what;
    EXPECT_NEAR(s.report.rank_threshold, rcond * s.report.sigma_max_estimate, 1e-15 * s.report.sigma_max_estimate);
    expect_as_accurate_as_an_fp64_svd(ref, e, b, n, rank, what);
  }
}

// A = 0: rank 0 and x = 0; B = 0 with a rank-deficient A: x = 0.
TEST(LeastSquaresRankDeficient, ZeroMatrixAndZeroRightHandSide) {
  Context ctx = Context::host_only();
  const std::int64_t m = 40, n = 7;
  const Solved zero_a = solve(ctx, MatrixD::Zero(m, n), random_matrix(m, 2, 51));
  EXPECT_TRUE(zero_a.report.converged) << zero_a.report.path();
  EXPECT_EQ(zero_a.report.rank, 0);
  EXPECT_EQ(zero_a.x, MatrixD::Zero(n, 2));
  EXPECT_EQ(zero_a.report.sigma_max_estimate, 0);
  MatrixD a = random_matrix(m, n, 52);
  a.col(3) = 2 * a.col(1);
  const Solved zero_b = solve(ctx, a, MatrixD::Zero(m, 1));
  EXPECT_TRUE(zero_b.report.converged) << zero_b.report.path();
  EXPECT_EQ(zero_b.report.rank, n - 1);
  EXPECT_EQ(zero_b.x, MatrixD::Zero(n, 1));
}

// Ill-conditioned full-rank A (item 2 of least_squares' accuracy promise, docs/least_squares.md):
// kappa 1e8 .. 1e13, below the default rank threshold max(m, n) u (so rank n), three spectra
// (geometric; one small singular value, which FP32 factors cannot see; half the values small),
// consistent and inconsistent b. Whatever path solves it (FP32 factors, the Cholesky QR, the
// rank-revealing attempt, the FP64 QR after it), the answer is converged, of rank n, x within 10x
// of the FP64 QR solve's error against a long-double reference, and the residual norm within a
// relative 1e-10 of the FP64 QR's (or below), both computed exactly.
TEST(LeastSquaresRankDeficient, IllConditionedFullRankIsSolvedAsWellAsByTheFp64Qr) {
  Context ctx = Context::host_only();
  enum Spectrum { Geometric, OneSmall, HalfSmall };
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{200, 30}, {137, 41}, {500, 60}})
    for (Spectrum spectrum : {Geometric, OneSmall, HalfSmall})
      for (double kappa : {1e8, 1e10, 1e11, 1e12, 1e13})
        for (double rho : {0.0, 1e-6, 1e-3, 1.0}) {
          std::vector<double> sigma = gap_spectrum(n, kappa, 0);
          if (spectrum != Geometric)
            for (std::int64_t i = 0; i < n; ++i)
              sigma[std::size_t(i)] = (spectrum == OneSmall ? i + 1 < n : i < n / 2) ? 1 : 1 / kappa;
          const std::uint64_t seed = 61 + std::uint64_t(m) + std::uint64_t(spectrum);
          const MatrixD a = with_singular_values(m, sigma, seed);
          MatrixD b = ordered_product(a, random_matrix(n, 1, seed + 1));
          MatrixD z = random_matrix(m, 1, seed + 2);
          z -= ordered_product(a, mixsolve::testing::householder_least_squares(a, z));  // orthogonal to A's range
          b += rho * b.norm() / z.norm() * z;
          const Solved s = solve(ctx, a, b);
          const mixsolve::testing::ReferenceSolution ref = mixsolve::testing::reference_least_squares(a, b);
          ASSERT_TRUE(ref.converged);
          const double fp64_qr = mixsolve::testing::fp64_qr_errors(a, b, ref).x;
          const double error = mixsolve::testing::relative_error(s.x.data(), ref.x.data(), n);
          const mixsolve::testing::SplitMatrix split(a);
          const auto exact_residual_norm = [&](const MatrixD& y) {
            const std::vector<long double> yl(y.data(), y.data() + n);
            long double squares = 0;
            for (long double v : mixsolve::testing::accurate_residual(split, b.data(), nullptr, yl.data()))
              squares += v * v;
            return double(std::sqrt(squares));
          };
          const double r_qr = exact_residual_norm(mixsolve::testing::householder_least_squares(a, b));
          const double r_ours = exact_residual_norm(s.x);
          const std::string where = std::to_string(m) + " x " + std::to_string(n) + ", spectrum " +
                                    std::to_string(int(spectrum)) + ", kappa " + std::to_string(kappa) + ", rho " +
                                    std::to_string(rho) + ": " + s.report.path();
          EXPECT_TRUE(s.report.converged) << where;
          EXPECT_EQ(s.report.rank, n) << where;
          EXPECT_LE(error, 10 * fp64_qr + 0x1p-50) << where << ", FP64 QR's x error " << fp64_qr;
          EXPECT_LE(r_ours, (1 + 1e-10) * r_qr) << where << ", FP64 QR's residual " << r_qr;
        }
}

// rcond out of range and a rule that is none are InvalidArguments naming the option. (FullRank's
// RankDeficientMatrix: LeastSquares.RankDeficiencyIsReportedNotSolvedUnderFullRank.)
TEST(LeastSquaresRankDeficient, BadRcondAndRuleAreNamed) {
  Context ctx = Context::host_only();
  const MatrixD a = random_matrix(50, 6, 71), b = random_matrix(50, 1, 72);
  for (double rcond : {1.0, 2.0, double(NAN)}) {
    LeastSquaresOptions bad;
    bad.rcond = rcond;
    try {
      solve(ctx, a, b, bad);
      ADD_FAILURE() << "rcond " << rcond << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("rcond"), std::string::npos) << e.what();
    }
  }
  LeastSquaresOptions bad_rule;
  bad_rule.rank_deficient = static_cast<LeastSquaresOptions::RankDeficiency>(7);
  EXPECT_THROW(solve(ctx, a, b, bad_rule), InvalidArgument);
}

// LeastSquares solves again with the factors held: the rank-revealing attempt runs again for a
// new B and gives least_squares()'s X for it.
TEST(LeastSquaresRankDeficient, FactorOnceSolvesAgain) {
  Context ctx = Context::host_only();
  const std::int64_t m = 120, n = 20;
  const MatrixD a = with_singular_values(m, gap_spectrum(15, 1e4, 5), 81);
  LeastSquares ls(ctx, host_view<const double>(a.data(), m, n, m));
  for (std::uint64_t seed : {82u, 83u}) {
    const MatrixD b = random_matrix(m, 1, seed);
    MatrixD x(n, 1);
    const LeastSquaresReport r = ls.solve(host_view<const double>(b.data(), m, 1, m), host_view(x.data(), n, 1, n));
    const Solved once = solve(ctx, a, b);
    EXPECT_TRUE(r.converged) << r.path();
    EXPECT_EQ(r.rank, 15) << r.path();
    EXPECT_EQ(x, once.x) << r.path();
  }
}

// Polynomial regression in the Chebyshev basis at random points, degree far beyond what the
// points resolve (sqrt(m) ~ 45): the singular values fall to FP64's rounding without a gap.
// The solver returns a solution that fits as the truncated SVD at its rank does, with a norm of
// the same order (a gelsy-type truncation, not gelsd's: the two differ without a gap), where the
// FP32 and FP64 QRs' refinements diverge.
TEST(LeastSquaresRankDeficient, ChebyshevRegressionWithoutAGap) {
  Context ctx = Context::host_only();
  const std::int64_t m = 500, n = 250;
  const MatrixD t = random_matrix(m, 1, 91);
  MatrixD a(m, n);
  for (std::int64_t i = 0; i < m; ++i) {
    a(i, 0) = 1;
    a(i, 1) = t(i, 0);
    for (std::int64_t j = 2; j < n; ++j) a(i, j) = 2 * t(i, 0) * a(i, j - 1) - a(i, j - 2);
  }
  MatrixD b(m, 1);
  const MatrixD noise = random_matrix(m, 1, 92);
  for (std::int64_t i = 0; i < m; ++i) b(i, 0) = std::exp(std::sin(5 * t(i, 0))) + 0.01 * noise(i, 0);
  const Solved s = solve(ctx, a, b);
  ASSERT_GT(s.report.rank, 0);
  const auto ref = mixsolve::testing::minimum_norm_reference(a, b, s.report.rank);
  const Errors e = errors_against(ref, a, b, s.x);
  const double r = (b - a * s.x).norm(),
               r_ref = double((b.cast<long double>() - ordered_product(MatrixLd_of(a), ref.x)).norm());
  std::printf(
      "%s: rank %lld of %lld, sigma %.2e .. %.2e (kept %.2e, dropped %.2e), x error %.2e (FP64 SVD %.2e), ||x|| %.3e "
      "(ref %.3e), ||r|| %.10e (ref %.10e)\n",
      s.report.path().c_str(), static_cast<long long>(s.report.rank), static_cast<long long>(n), double(ref.sigma[0]),
      double(ref.sigma[std::size_t(n - 1)]), s.report.sigma_kept_estimate, s.report.sigma_dropped_estimate, e.x,
      ref.fp64_svd_x, s.x.norm(), double(ref.x.norm()), r, r_ref);
  EXPECT_TRUE(s.report.converged) << s.report.path();
  expect_as_accurate_as_an_fp64_svd(ref, e, b, n, s.report.rank, s.report.path());
  // The rank: the count of singular values above the threshold, up to those within the factor
  // 2 sqrt(n) of it by which a pivoted QR's |r_jj| may stray from sigma_j.
  const double tau = s.report.rank_threshold, slack = 2 * std::sqrt(double(n));
  std::int64_t above = 0, near = 0;
  for (long double sigma : ref.sigma) {
    above += double(sigma) > tau;
    near += double(sigma) > tau / slack && double(sigma) <= tau * slack;
  }
  std::printf("singular values above the threshold: %lld, within 2 sqrt(n) of it: %lld\n",
              static_cast<long long>(above), static_cast<long long>(near));
  EXPECT_LE(std::abs(s.report.rank - above), near) << s.report.path();
}

// Underdetermined A (m < n): the minimum-norm solution, of full row rank (well and ill
// conditioned: consistent, so x solves A x = b to FP64's accuracy) and of lower rank (inconsistent),
// against the truncated SVD; and the same as the transposed problem's view of it would give:
// x in the row space of A.
TEST(LeastSquaresRankDeficient, UnderdeterminedSystemsGetTheMinimumNormSolution) {
  Context ctx = Context::host_only();
  const std::int64_t m = 40, n = 110;
  const struct {
    const char* name;
    std::vector<double> sigma;
    std::int64_t rank;
  } cases[] = {{"full row rank, kappa 1e2", gap_spectrum(m, 1e2, 0), m},
               {"full row rank, kappa 1e8", gap_spectrum(m, 1e8, 0), m},
               {"rank 25", gap_spectrum(25, 1e3, m - 25), 25}};
  for (const auto& c : cases) {
    const MatrixD a = with_singular_values(n, c.sigma, 101).transpose();  // m x n
    const MatrixD b = random_matrix(m, 2, 105);  // (seed 102 drew V: b would lie in A's range)
    const Solved s = solve(ctx, a, b);
    const mixsolve::testing::SvdFactors<long double> f = mixsolve::testing::jacobi_svd<long double>(
        a.transpose().cast<long double>());  // A^T = U S V^T: A = V S U^T
    mixsolve::testing::SvdFactors<long double> g{f.v, f.u, f.sigma};  // A's factors: U_A = V, V_A = U
    const mixsolve::testing::MatrixLd x_ref = mixsolve::testing::svd_minimum_norm(g, MatrixLd_of(b), c.rank);
    double error = 0;
    for (std::int64_t j = 0; j < b.cols(); ++j)
      error = std::max(error, mixsolve::testing::relative_error(s.x.col(j).data(), x_ref.col(j).data(), n));
    const double kappa = double(f.sigma[0] / f.sigma[std::size_t(c.rank - 1)]);
    std::printf("%s: %s, x error %.2e, ||b - A x|| / ||b|| %.2e\n", c.name, s.report.path().c_str(), error,
                (b - a * s.x).norm() / b.norm());
    EXPECT_TRUE(s.report.converged) << c.name << ": " << s.report.path();
    EXPECT_EQ(s.report.rank, c.rank) << c.name << ": " << s.report.path();
    EXPECT_EQ(s.report.path().rfind("rrqr[rank ", 0), 0u) << s.report.path();
    EXPECT_LE(error, 16 * double(n) * 0x1p-53 * kappa) << c.name << ": " << s.report.path();
    if (c.rank == m)  // consistent: A x = b to FP64's rounding
      EXPECT_LE((b - a * s.x).norm(), 16 * double(n) * 0x1p-53 * (b.norm() + a.norm() * s.x.norm())) << c.name;
  }
}

// Ridge regression: min ||b - A x||^2 + lambda ||x||^2 as the least-squares problem of
// [A; sqrt(lambda) I] and [b; 0], against that stacked problem's long double reference (with the
// solver's fl(sqrt(lambda))) and the FP64 QR's error on it; on a full-rank, a rank-deficient and a
// wide A. residual_norms are ||b - A x||.
TEST(LeastSquaresRankDeficient, RidgeRegressionSolvesTheStackedProblem) {
  Context ctx = Context::host_only();
  const MatrixD tall = with_singular_values(150, gap_spectrum(30, 1e6, 0), 111);
  const MatrixD deficient = with_singular_values(150, gap_spectrum(20, 1e3, 10), 112);
  const MatrixD wide = with_singular_values(60, gap_spectrum(25, 1e2, 0), 113).transpose();  // 25 x 60
  for (const MatrixD* a : {&tall, &deficient, &wide})
    for (double lambda : {1e-8, 1e-2}) {
      const std::int64_t m = a->rows(), n = a->cols();
      const MatrixD b = random_matrix(m, 2, 114);
      LeastSquaresOptions options;
      options.ridge = lambda;
      const Solved s = solve(ctx, *a, b, options);
      MatrixD stacked = MatrixD::Zero(m + n, n), b_stacked = MatrixD::Zero(m + n, 2);
      stacked.topRows(m) = *a;
      for (std::int64_t j = 0; j < n; ++j) stacked(m + j, j) = std::sqrt(lambda);
      b_stacked.topRows(m) = b;
      const mixsolve::testing::ReferenceSolution ref = mixsolve::testing::reference_least_squares(stacked, b_stacked);
      ASSERT_TRUE(ref.converged);
      const double fp64_qr = mixsolve::testing::fp64_qr_errors(stacked, b_stacked, ref).x;
      double error = 0;
      for (std::int64_t j = 0; j < 2; ++j)
        error = std::max(error, mixsolve::testing::relative_error(s.x.col(j).data(), ref.x.col(j).data(), n));
      const std::string what =
          std::to_string(m) + " x " + std::to_string(n) + ", lambda " + std::to_string(lambda) + ": " + s.report.path();
      std::printf("%s: x error %.2e (FP64 QR %.2e)\n", what.c_str(), error, fp64_qr);
      EXPECT_TRUE(s.report.converged) << what;
      EXPECT_EQ(s.report.rank, n) << what;
      EXPECT_LE(error, 10 * fp64_qr + 0x1p-50) << what;
      for (std::int64_t j = 0; j < 2; ++j)
        EXPECT_NEAR(s.report.residual_norms[std::size_t(j)], (b.col(j) - *a * s.x.col(j)).norm(),
                    1e-12 * (b.col(j).norm() + a->norm() * s.x.col(j).norm()))
            << what;
    }
  LeastSquaresOptions bad;
  for (double lambda : {-1.0, double(INFINITY), double(NAN)}) {
    bad.ridge = lambda;
    EXPECT_THROW(solve(ctx, tall, random_matrix(150, 1, 115), bad), InvalidArgument) << lambda;
  }
}

}  // namespace
