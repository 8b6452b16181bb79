// SPDX-License-Identifier: BSD-3-Clause
// The Cholesky rungs of solve() on host matrices (SolveOptions::structure): every precision on
// SPD test and application matrices against the FP64 Cholesky (dpotf2 + dpotrs, unblocked) and a
// long-double reference, breakdown and escalation, the auto structure on symmetric indefinite and
// nonsymmetric matrices, bad input. The cheaper factorizations use the host tensor-core models.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cholesky/host_cholesky.hpp"  // the recursion, against dpotf2
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/matgen/application_matrices.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/factor_once.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "reference_solvers.hpp"

namespace {

using namespace mixsolve;
namespace reference = mixsolve::testing;

// A stored problem A X = B (A n x n in an lda x n array), B uniform in [-1, 1].
struct SpdProblem {
  std::int64_t n, k, lda;
  std::vector<double> a, b, x;
  SpdProblem(std::int64_t n_, std::int64_t k_ = 1, std::int64_t lda_ = 0)
      : n(n_), k(k_), lda(std::max<std::int64_t>(lda_, std::max<std::int64_t>(n_, 1))), a(lda * n_, 0.0),
        b(std::max<std::int64_t>(n_, 1) * k_), x(std::max<std::int64_t>(n_, 1) * k_, NAN) {
    fill_random(host_view(b.data(), n, k, std::max<std::int64_t>(n, 1)), RandomSpec::uniform(-1, 1, 77));
  }
  static SpdProblem test_matrix(const TestMatrixSpec& spec, std::int64_t n, std::int64_t k = 1, std::int64_t lda = 0) {
    SpdProblem p(n, k, lda);
    generate_test_matrix(spec, host_view(p.a.data(), n, n, p.lda));
    return p;
  }
  static SpdProblem application(const std::string& name, std::int64_t n) {
    SpdProblem p(n);
    generate_application_matrix(ApplicationSpec::parse(name), host_view(p.a.data(), n, n, p.lda));
    return p;
  }
  MatrixView<const double> A() const { return host_view<const double>(a.data(), n, n, lda); }
  MatrixView<const double> B() const { return host_view<const double>(b.data(), n, k, std::max<std::int64_t>(n, 1)); }
  MatrixView<double> X() { return host_view(x.data(), n, k, std::max<std::int64_t>(n, 1)); }
  Eigen::MatrixXd dense_a() const {
    Eigen::MatrixXd m(n, n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) m(i, j) = a[i + j * lda];
    return m;
  }
  Eigen::MatrixXd dense_b() const { return Eigen::Map<const Eigen::MatrixXd>(b.data(), n, k); }
  Eigen::MatrixXd dense_x() const { return Eigen::Map<const Eigen::MatrixXd>(x.data(), n, k); }
};

TestMatrixSpec poev(Spectrum spectrum, double cond, std::uint64_t seed = 5) {
  TestMatrixSpec s;
  s.family = MatrixFamily::Poev;
  s.spectrum = spectrum;
  s.cond = cond;
  s.seed = seed;
  return s;
}

// max_j ||b_j - A x_j||_inf / (||A||_inf ||x_j||_inf + ||b_j||_inf).
double backward_error(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const Eigen::MatrixXd& x) {
  const double norm_a = a.cwiseAbs().rowwise().sum().maxCoeff();
  double worst = 0;
  for (std::int64_t j = 0; j < b.cols(); ++j)
    worst = std::max(worst, (b.col(j) - a * x.col(j)).cwiseAbs().maxCoeff() /
                                (norm_a * x.col(j).cwiseAbs().maxCoeff() + b.col(j).cwiseAbs().maxCoeff()));
  return worst;
}

// max_j ||x_j - x_true_j||_inf / ||x_true_j||_inf against the long-double reference.
double forward_error(const Eigen::MatrixXd& x, const reference::MatrixLd& truth) {
  double worst = 0;
  for (std::int64_t j = 0; j < x.cols(); ++j) {
    long double diff = 0, size = 0;
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      diff = std::max(diff, std::fabs((long double)x(i, j) - truth(i, j)));
      size = std::max(size, std::fabs(truth(i, j)));
    }
    worst = std::max(worst, double(diff / size));
  }
  return worst;
}

SolveReport run(SpdProblem& p, Precision precision, Structure structure = Structure::Spd, bool fallback = true,
                Refinement refinement = Refinement::Auto) {
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = precision;
  o.structure = structure;
  o.fallback = fallback;
  o.refinement = refinement;
  o.block_size = 16;  // several blocks even at small n, so the GEMM backend does real work
  return solve(ctx, p.A(), p.B(), p.X(), o);
}

// The returned X is within 10x of the FP64 Cholesky's backward and forward errors (floored at u;
// the rule of tests/host/test_solve.cpp), against the long-double solution.
void expect_as_accurate_as_fp64_cholesky(const SpdProblem& p, const SolveReport& r) {
  const Eigen::MatrixXd a = p.dense_a(), b = p.dense_b();
  const reference::CholeskyFactors<double> fp64 = reference::cholesky_factor(a);
  ASSERT_LT(fp64.not_positive, 0) << "the FP64 comparator broke down";
  const Eigen::MatrixXd x64 = reference::cholesky_solve(fp64, b);
  const reference::ReferenceSolution truth = reference::reference_solve(a, b);
  ASSERT_TRUE(truth.converged);
  ASSERT_TRUE(r.converged) << r.summary();
  const Eigen::MatrixXd x = p.dense_x();
  EXPECT_LE(backward_error(a, b, x), 10 * std::max(backward_error(a, b, x64), 0x1p-53)) << r.summary();
  EXPECT_LE(forward_error(x, truth.x), 10 * std::max(forward_error(x64, truth.x), 0x1p-53)) << r.summary();
}

TEST(Cholesky, EveryPrecisionIsAsAccurateAsTheFp64CholeskyOnSpdMatrices) {
  const std::vector<Precision> precisions = {Precision::FP64,     Precision::FP32,     Precision::TF32,
                                             Precision::FP16,     Precision::BF16,     Precision::Halfhalf,
                                             Precision::Tf32tf32, Precision::Fp16x3,   Precision::Ozaki};
  struct Family {
    std::string name;
    SpdProblem (*make)();
  };
  const std::vector<Family> families = {
      {"poev_geo cond 1e4, n 101", [] { return SpdProblem::test_matrix(poev(Spectrum::Geo, 1e4), 101); }},
      {"poev_arith cond 1e6, n 96", [] { return SpdProblem::test_matrix(poev(Spectrum::Arith, 1e6), 96); }},
      {"cov_matern32 nugget 1e-4, n 90",
       [] { return SpdProblem::application("cov_matern32 length=0.1 nugget=1e-4 seed=3", 90); }},
      {"toeplitz_ar1 rho 0.9, n 77", [] { return SpdProblem::application("toeplitz_ar1 rho=0.9", 77); }},
  };
  int cases = 0;
  for (const Family& family : families)
    for (Precision precision : precisions) {
      SCOPED_TRACE(family.name + ", " + to_string(precision));
      SpdProblem p = family.make();
      const SolveReport r = run(p, precision);
      expect_as_accurate_as_fp64_cholesky(p, r);
      ASSERT_FALSE(r.attempts.empty());
      EXPECT_EQ(r.attempts.front().precision, precision);
      for (const Attempt& a : r.attempts) EXPECT_EQ(a.factor, FactorKind::Cholesky) << r.summary();
      ++cases;
    }
  EXPECT_EQ(cases, 36);
}

// The default path (fp16x3 Cholesky, refinement, FP64 Cholesky where that fails) on every SPD
// family of matgen: the LAWN-41 poev spectra from cond 1e2 to 1e10 and the SPD application
// families at their defaults and with small nuggets.
TEST(Cholesky, DefaultPathIsAsAccurateAsTheFp64CholeskyOnEverySpdFamily) {
  int cases = 0;
  for (Spectrum spectrum : {Spectrum::Arith, Spectrum::Geo, Spectrum::Cluster0, Spectrum::Cluster1, Spectrum::Logrand})
    for (double cond : {1e2, 1e6, 1e10}) {
      SpdProblem p = SpdProblem::test_matrix(poev(spectrum, cond, 20 + cases), 90);
      SCOPED_TRACE(poev(spectrum, cond).name());
      const SolveReport r = run(p, Precision::Auto);
      expect_as_accurate_as_fp64_cholesky(p, r);
      for (const Attempt& a : r.attempts) EXPECT_EQ(a.factor, FactorKind::Cholesky) << r.summary();
      ++cases;
    }
  for (const char* name : {"cov_se", "cov_se length=0.2 nugget=1e-8 seed=4", "cov_matern32", "cov_matern52 nugget=1e-9",
                           "elasticity", "toeplitz_ar1", "toeplitz_ar1 rho=0.999", "convdiff peclet=0"}) {
    const ApplicationSpec spec = ApplicationSpec::parse(name);
    ASSERT_EQ(spec.structure(), MatrixStructure::Spd) << name;
    SpdProblem p = SpdProblem::application(name, 100);
    SCOPED_TRACE(spec.name());
    const SolveReport r = run(p, Precision::Auto);
    expect_as_accurate_as_fp64_cholesky(p, r);
    ++cases;
  }
  EXPECT_EQ(cases, 23);
}

// The recursion of recursive_cholesky.hpp (the device's too) against dpotf2, in FP64: every
// leaf width from 1 column on, orders on and off its grid, and the column of a breakdown.
TEST(Cholesky, RecursionFactorsAsTheUnblockedReference) {
  Context ctx = Context::host_only();
  const gemm::Backend& fp64 = gemm::find_backend("host-fp64");
  int cases = 0;
  for (std::int64_t n : {1, 5, 16, 17, 100, 300})
    for (std::int64_t leaf : {1, 3, 16, 128}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", leaf " + std::to_string(leaf));
      SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e3, 40), n);
      std::vector<double> l = p.a;
      // Products cut into chunks of 7 (update_inner_chunk) for half the cases.
      const std::int64_t chunk = leaf % 2 == 1 ? 7 : solvers_detail::kMaxUpdateInner;
      const solvers_detail::CholeskyBreakdown b = solvers_detail::cholesky_factor(l, n, leaf, chunk, fp64, {}, ctx);
      ASSERT_EQ(b.column, -1);
      const reference::CholeskyFactors<double> ref = reference::cholesky_factor(p.dense_a());
      double worst = 0, largest = 0;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = j; i < n; ++i) {
          worst = std::max(worst, std::fabs(l[i + j * n] - ref.l(i, j)));
          largest = std::max(largest, std::fabs(ref.l(i, j)));
        }
      EXPECT_LE(worst, 64 * double(n) * 0x1p-53 * 1e3 * largest);  // a forward error of about n u cond(A)
      ++cases;
    }
  EXPECT_EQ(cases, 24);
  // A breakdown is found in the column dpotf2 finds it, whichever leaf it lies in.
  TestMatrixSpec heev = poev(Spectrum::Geo, 1e3, 8);
  heev.family = MatrixFamily::Heev;
  SpdProblem q = SpdProblem::test_matrix(heev, 200);
  const reference::CholeskyFactors<double> ref = reference::cholesky_factor(q.dense_a());
  ASSERT_GE(ref.not_positive, 0);
  for (std::int64_t leaf : {1, 7, 16, 64}) {
    std::vector<double> l = q.a;
    EXPECT_EQ(solvers_detail::cholesky_factor(l, 200, leaf, solvers_detail::kMaxUpdateInner, fp64, {}, ctx).column,
              ref.not_positive)
        << "leaf " << leaf;
  }
}

// fp16x3's products sum their split terms in the tensor core with truncation (the host model of
// cublas-fp16x3), an error that grows with the product's length: the Cholesky cuts its products
// to the LU's block width, and its factors are then as good a preconditioner as the LU's: the
// first solve's backward error within 2x of the LU's, and no more classic steps to the LAPACK
// test (with products of the recursion's full length it was 7x, and 9 steps against 6 to the
// attainable accuracy, at n = 640, block 32).
TEST(Cholesky, Fp16x3FactorsAreAsAccurateAsTheLus) {
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e6, 11), 400);
  const auto first_solve = [&](Structure structure) {
    const SolveReport r = run(p, Precision::Fp16x3, structure, false, Refinement::Classic);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_EQ(r.attempts.back().factor, structure == Structure::Spd ? FactorKind::Cholesky : FactorKind::Lu);
    return r;
  };
  const SolveReport lu = first_solve(Structure::General), cholesky = first_solve(Structure::Spd);
  ASSERT_FALSE(lu.backward_error_history.empty());
  ASSERT_FALSE(cholesky.backward_error_history.empty());
  EXPECT_LE(cholesky.backward_error_history.front(), 2 * lu.backward_error_history.front())
      << "LU: " << lu.summary() << "Cholesky: " << cholesky.summary();
  // The steps until the LAPACK test is met (the polishing steps after it depend on noise at the
  // backward error's floor).
  const auto steps_to_the_lapack_test = [](const SolveReport& r) {
    return std::count_if(r.backward_error_history.begin(), r.backward_error_history.end(),
                         [&](double e) { return !(e < r.stop_test_backward_error); });
  };
  EXPECT_LE(steps_to_the_lapack_test(cholesky), steps_to_the_lapack_test(lu))
      << "LU: " << lu.summary() << "Cholesky: " << cholesky.summary();
}

TEST(Cholesky, OddOrdersAndLeadingDimensions) {
  int cases = 0;
  // With block size 16 the recursion's leaves have 16 columns and its symmetric updates split
  // beyond 128 rows: n = 300 takes every branch of recursive_cholesky.hpp.
  for (std::int64_t n : {1, 2, 15, 17, 33, 64, 300}) {
    for (std::int64_t extra : {0, 5}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", lda n + " + std::to_string(extra));
      SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e3, 9), n, 2, n + extra);
      const SolveReport r = run(p, Precision::Fp16x3);
      expect_as_accurate_as_fp64_cholesky(p, r);
      EXPECT_EQ(r.attempts.front().factor, FactorKind::Cholesky);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 14);
}

// Powers of ten over +-6 decades on both sides of a well-conditioned SPD matrix: D A D stays
// SPD, and the FP16 Cholesky only factors it after the symmetric range scaling.
TEST(Cholesky, BadlyScaledMatrixFactorsAfterSymmetricScaling) {
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e2, 4), 80);
  std::vector<double> d(p.n);
  fill_random(host_view(d.data(), p.n, 1, p.n), RandomSpec::uniform(-6, 6, 12));
  for (double& v : d) v = std::pow(10.0, std::round(v));
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.n; ++i) p.a[i + j * p.lda] *= d[i] * d[j];
  const SolveReport r = run(p, Precision::FP16);
  ASSERT_TRUE(r.converged) << r.summary();
  EXPECT_TRUE(r.attempts.front().range_scaled);
  EXPECT_EQ(r.attempts.front().stop, StopReason::Converged) << r.summary();
  EXPECT_GT(r.componentwise_backward_error, 0) << "a badly scaled A is judged componentwise";
  const Eigen::MatrixXd a = p.dense_a(), b = p.dense_b();
  const reference::ReferenceSolution truth = reference::reference_solve(a, b);
  const Eigen::MatrixXd x64 = reference::cholesky_solve(reference::cholesky_factor(a), b);
  EXPECT_LE(forward_error(p.dense_x(), truth.x), 10 * std::max(forward_error(x64, truth.x), 0x1p-53)) << r.summary();
}

// cond 1e10 is far beyond what FP16 arithmetic (u = 2^-11) can factor: its Cholesky meets a
// pivot that is not positive, and the FP64 Cholesky takes over.
TEST(Cholesky, CheapBreakdownEscalatesToTheFp64Cholesky) {
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e10, 6), 96);
  const SolveReport r = run(p, Precision::FP16);
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].stop, StopReason::NotPositiveDefinite) << r.summary();
  EXPECT_GE(r.attempts[0].zero_pivot_column, 0);
  EXPECT_LT(r.attempts[0].zero_pivot_column, p.n);
  EXPECT_EQ(r.attempts.back().factor, FactorKind::Cholesky);
  EXPECT_EQ(r.attempts.back().precision, Precision::FP64);
  EXPECT_NE(r.summary().find("Cholesky + classic: pivot not positive"), std::string::npos) << r.summary();
  expect_as_accurate_as_fp64_cholesky(p, r);
  // Without the fallback nothing remains: no iterate, reported as such.
  SpdProblem q = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e10, 6), 96);
  const SolveReport none = run(q, Precision::FP16, Structure::Spd, false);
  EXPECT_FALSE(none.converged);
  EXPECT_EQ(none.backward_error, INFINITY);
  ASSERT_EQ(none.attempts.size(), 1u);
  EXPECT_EQ(none.attempts[0].stop, StopReason::NotPositiveDefinite);
}

// Entries beyond FP16's range without range scaling: the FP16 products overflow, which is no
// verdict on A. Under Structure::Auto the FP64 Cholesky follows, not the LU path.
TEST(Cholesky, OverflowInTheCheapFactorsIsNotIndefiniteness) {
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e2, 10), 64);
  for (double& v : p.a) v *= 1e12;  // L ~ 1e6, beyond FP16's 65504
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP16;
  o.structure = Structure::Auto;
  o.range_scaling = false;
  o.block_size = 16;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].stop, StopReason::Overflow) << r.summary();
  EXPECT_EQ(r.attempts[0].zero_pivot_column, -1);
  EXPECT_EQ(r.attempts.back().factor, FactorKind::Cholesky) << r.summary();
  EXPECT_EQ(r.attempts.back().precision, Precision::FP64);
  expect_as_accurate_as_fp64_cholesky(p, r);
}

TEST(Cholesky, IndefiniteMatrixDeclaredSpdIsANamedError) {
  TestMatrixSpec heev = poev(Spectrum::Geo, 1e3, 8);
  heev.family = MatrixFamily::Heev;
  SpdProblem p = SpdProblem::test_matrix(heev, 64);
  const std::vector<double> a_before = p.a, b_before = p.b;
  try {
    run(p, Precision::Fp16x3);
    FAIL() << "no error";
  } catch (const NotPositiveDefinite& e) {
    EXPECT_GE(e.column(), 0);
    EXPECT_LT(e.column(), p.n);
    EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.a, a_before);
  EXPECT_EQ(p.b, b_before);
  // A zero matrix is not positive definite either (its first pivot is 0).
  SpdProblem zero(8);
  EXPECT_THROW(run(zero, Precision::FP64), NotPositiveDefinite);
}

// Under Structure::Auto a symmetric indefinite A goes to the LU path: the cheap Cholesky's
// negative pivot lies far beyond its rounding, so no FP64 Cholesky is tried.
TEST(Cholesky, AutoStructureTakesTheLuPathForSymmetricIndefiniteMatrices) {
  TestMatrixSpec heev = poev(Spectrum::Geo, 1e3, 8);
  heev.family = MatrixFamily::Heev;
  SpdProblem p = SpdProblem::test_matrix(heev, 64);
  const SolveReport r = run(p, Precision::Fp16x3, Structure::Auto);
  ASSERT_TRUE(r.converged) << r.summary();
  ASSERT_GE(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(r.attempts[0].stop, StopReason::NotPositiveDefinite);
  EXPECT_EQ(r.attempts[1].factor, FactorKind::Lu);
  EXPECT_EQ(r.attempts[1].precision, Precision::Fp16x3);
  for (std::size_t i = 1; i < r.attempts.size(); ++i) EXPECT_EQ(r.attempts[i].factor, FactorKind::Lu) << r.summary();
  // A singular symmetric A ends in the FP64 LU's named error, as under Structure::General.
  SpdProblem zero(8);
  EXPECT_THROW(run(zero, Precision::FP64, Structure::Auto), SingularMatrix);
}

// Under Auto a Cholesky climbs cholesky_auto_path (FP64 alone below cholesky_auto_min_n), the LU
// path that follows an indefinite A under Structure::Auto climbs auto_path.
TEST(Cholesky, AutoTakesTheCholeskysOwnPathAndMinimumOrder) {
  Context ctx = Context::host_only();
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e3, 5), 64);
  SolveOptions o;
  o.structure = Structure::Spd;
  o.block_size = 16;
  EXPECT_EQ(o.cholesky_auto_path, std::vector<Precision>{Precision::Halfhalf});
  const SolveReport by_default = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_as_accurate_as_fp64_cholesky(p, by_default);
  ASSERT_FALSE(by_default.attempts.empty());
  EXPECT_EQ(by_default.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(by_default.attempts[0].precision, Precision::Halfhalf) << by_default.summary();

  o.cholesky_auto_path = {Precision::Tf32tf32};
  o.auto_path = {Precision::FP16};  // the LU's: not taken by a Cholesky
  const SolveReport own_path = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_as_accurate_as_fp64_cholesky(p, own_path);
  EXPECT_EQ(own_path.attempts.at(0).precision, Precision::Tf32tf32) << own_path.summary();

  o.cholesky_auto_min_n = 65;  // n < cholesky_auto_min_n: the FP64 Cholesky at once
  o.auto_min_n = 0;
  const SolveReport small = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_as_accurate_as_fp64_cholesky(p, small);
  ASSERT_EQ(small.attempts.size(), 1u) << small.summary();
  EXPECT_EQ(small.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(small.attempts[0].precision, Precision::FP64);
  o.cholesky_auto_min_n = 64;
  EXPECT_EQ(solve(ctx, p.A(), p.B(), p.X(), o).attempts.at(0).precision, Precision::Tf32tf32);

  // A symmetric indefinite A under Structure::Auto: the Cholesky's path, then the LU's.
  TestMatrixSpec heev = poev(Spectrum::Geo, 1e3, 8);
  heev.family = MatrixFamily::Heev;
  SpdProblem q = SpdProblem::test_matrix(heev, 64);
  o.structure = Structure::Auto;
  o.cholesky_auto_min_n = -1;
  const SolveReport indefinite = solve(ctx, q.A(), q.B(), q.X(), o);
  ASSERT_TRUE(indefinite.converged) << indefinite.summary();
  ASSERT_GE(indefinite.attempts.size(), 2u) << indefinite.summary();
  EXPECT_EQ(indefinite.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(indefinite.attempts[0].precision, Precision::Tf32tf32);
  EXPECT_EQ(indefinite.attempts[1].factor, FactorKind::Lu);
  EXPECT_EQ(indefinite.attempts[1].precision, Precision::FP16) << indefinite.summary();
}

// A nonsymmetric A: a named error where declared SPD; under Auto the LU path, bit for bit the
// general solve.
TEST(Cholesky, NonsymmetricMatrix) {
  TestMatrixSpec svd = poev(Spectrum::Geo, 1e3, 2);
  svd.family = MatrixFamily::Svd;
  SpdProblem p = SpdProblem::test_matrix(svd, 50);
  try {
    run(p, Precision::Fp16x3);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("structure is spd but A is not symmetric: A("), std::string::npos) << e.what();
  }
  const SolveReport automatic = run(p, Precision::Fp16x3, Structure::Auto);
  const std::vector<double> x_auto = p.x;
  const SolveReport general = run(p, Precision::Fp16x3, Structure::General);
  EXPECT_EQ(p.x, x_auto);
  ASSERT_EQ(automatic.attempts.size(), general.attempts.size());
  for (const Attempt& a : automatic.attempts) EXPECT_EQ(a.factor, FactorKind::Lu);
  // One asymmetric pair is enough, wherever it lies.
  SpdProblem q = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e3, 2), 50);
  q.a[49 + 48 * q.lda] = std::nextafter(q.a[49 + 48 * q.lda], 2.0);
  try {
    run(q, Precision::Fp16x3);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("A(49, 48) != A(48, 49)"), std::string::npos) << e.what();
  }
}

// A NaN or Inf in A is named as such under every structure, off the diagonal (where it also makes
// its pair unequal) and on it, before the symmetry is judged.
TEST(Cholesky, NanOrInfIsNamedUnderEveryStructure) {
  int cases = 0;
  for (const Structure structure : {Structure::General, Structure::Spd, Structure::Auto})
    for (const std::pair<std::int64_t, std::int64_t> at : {std::pair<std::int64_t, std::int64_t>{30, 7}, {12, 12}})
      for (const double bad : {double(NAN), double(INFINITY)}) {
        SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e3, 3), 40);
        p.a[at.first + at.second * p.lda] = bad;
        const std::string expected =
            "A(" + std::to_string(at.first) + ", " + std::to_string(at.second) + ") is NaN or Inf";
        try {
          run(p, Precision::Fp16x3, structure);
          ADD_FAILURE() << "no error, structure " << to_string(structure);
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
        }
        ++cases;
      }
  EXPECT_EQ(cases, 12);
}

TEST(Cholesky, FactorizationReusesTheCholeskyFactors) {
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e4, 3), 70, 2);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.structure = Structure::Spd;
  o.factorization = Precision::Fp16x3;
  o.block_size = 16;
  Factorization f(ctx, p.A(), o);
  const SolveReport first = f.solve(p.B(), p.X());
  expect_as_accurate_as_fp64_cholesky(p, first);
  EXPECT_GT(first.attempts.front().factorization_seconds, 0);
  std::fill(p.x.begin(), p.x.end(), NAN);
  const SolveReport second = f.solve(p.B(), p.X());
  expect_as_accurate_as_fp64_cholesky(p, second);
  ASSERT_EQ(second.attempts.size(), 1u);
  EXPECT_EQ(second.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(second.attempts[0].factorization_seconds, 0) << "the factors were reused";
  EXPECT_EQ(f.precision(), Precision::Fp16x3);
}

// mixsolve::Cholesky and mixsolve::Lu are Factorization with the structure fixed, whatever the
// options say: the same attempts and, bit for bit, the same X.
TEST(Cholesky, FactorOnceClassesFixTheStructure) {
  SpdProblem p = SpdProblem::test_matrix(poev(Spectrum::Geo, 1e4, 13), 60, 2);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::Fp16x3;
  o.structure = Structure::General;  // overridden by Cholesky
  Cholesky chol(ctx, p.A(), o);
  EXPECT_EQ(chol.precision(), Precision::Auto);
  const SolveReport r = chol.solve(p.B(), p.X());
  const std::vector<double> x_cholesky = p.x;
  EXPECT_EQ(chol.precision(), Precision::Fp16x3);
  for (const Attempt& a : r.attempts) EXPECT_EQ(a.factor, FactorKind::Cholesky);
  o.structure = Structure::Spd;
  Factorization f(ctx, p.A(), o);
  f.solve(p.B(), p.X());
  EXPECT_EQ(p.x, x_cholesky);
  o.structure = Structure::Auto;  // overridden by Lu
  Lu lu(ctx, p.A(), o);
  const SolveReport l = lu.solve(p.B(), p.X());
  for (const Attempt& a : l.attempts) EXPECT_EQ(a.factor, FactorKind::Lu);
  expect_as_accurate_as_fp64_cholesky(p, l);
}

TEST(Cholesky, StructureNames) {
  for (Structure s : {Structure::General, Structure::Spd, Structure::Auto}) EXPECT_EQ(parse_structure(to_string(s)), s);
  EXPECT_THROW(parse_structure("SPD"), InvalidArgument);
  EXPECT_EQ(to_string(FactorKind::Cholesky), "Cholesky");
  EXPECT_EQ(to_string(FactorKind::Lu), "LU");
}

}  // namespace
