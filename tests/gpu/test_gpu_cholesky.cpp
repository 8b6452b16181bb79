// SPDX-License-Identifier: BSD-3-Clause
// The Cholesky rungs of solve() on device matrices (SolveOptions::structure; the recursive device
// Cholesky of solvers/src/cholesky/cuda): every precision, odd orders and leading dimensions,
// breakdown and escalation, the auto structure, bad input; accuracy checked on the host with a
// long-double residual (the stop test) and against the FP64 Cholesky of tests/reference_solvers.hpp.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/application_matrices.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "reference_solvers.hpp"
#include "solve_test_problems.hpp"
#include "tuning.hpp"  // solvers_detail::tuning(): the FP64 Cholesky's two routes

namespace {

using namespace mixsolve;
using mixsolve::testing::full_or_small;
using mixsolve::testing::small_gpu_tests;
namespace reference = mixsolve::testing;

// A X = B with A n x n in an lda x n device array whose gaps hold -7 (untouched by the solve).
struct DeviceSpdProblem {
  std::int64_t n, k, lda;
  std::vector<double> a, b, x;  // a: n x n, dense
  DeviceBuffer<double> da, db, dx;
  DeviceSpdProblem(std::vector<double> a_, std::int64_t n_, std::int64_t k_, std::int64_t lda_)
      : n(n_), k(k_), lda(lda_), a(std::move(a_)), b(n_ * k_), x(n_ * k_, NAN), da(lda_ * n_), db(n_ * k_), dx(n_ * k_) {
    fill_random(host_view(b.data(), n, k, n), RandomSpec::uniform(-1, 1, 31));
    da.copy_from_host(padded());
    db.copy_from_host(b);
  }
  std::vector<double> padded() const {
    std::vector<double> p(lda * n, -7.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) p[i + j * lda] = a[i + j * n];
    return p;
  }
  SolveReport solve_on_device(Context& ctx, const SolveOptions& o) {
    dx.copy_from_host(std::vector<double>(n * k, NAN));
    const SolveReport r = solve(ctx, device_view<const double>(da.data(), n, n, lda),
                                device_view<const double>(db.data(), n, k, n), device_view(dx.data(), n, k, n), o);
    ctx.synchronize();
    x = dx.to_host();
    return r;
  }
  // The stop test's ratio (test_problems::stop_test_ratio): < 1 meets it.
  double stop_test_ratio() const { return test_problems::stop_test_ratio(a, b, x, n, k); }
};

std::vector<double> test_matrix(MatrixFamily family, Spectrum spectrum, double cond, std::uint64_t seed,
                                std::int64_t n) {
  TestMatrixSpec s;
  s.family = family;
  s.spectrum = spectrum;
  s.cond = cond;
  s.seed = seed;
  std::vector<double> a(n * n);
  generate_test_matrix(s, host_view(a.data(), n, n, n));
  return a;
}

// Sets the FP64 factorizations' route (Tuning::fp64_route) for a scope, and restores it.
struct FixedFp64Route {
  solvers_detail::Tuning::Fp64Route saved = solvers_detail::tuning().fp64_route;
  explicit FixedFp64Route(solvers_detail::Tuning::Fp64Route route) { solvers_detail::tuning().fp64_route = route; }
  FixedFp64Route(const FixedFp64Route&) = delete;
  FixedFp64Route& operator=(const FixedFp64Route&) = delete;
  ~FixedFp64Route() { solvers_detail::tuning().fp64_route = saved; }
};

SolveOptions spd_options(Precision p, bool fallback = false, Structure structure = Structure::Spd) {
  SolveOptions o;
  o.factorization = p;
  o.structure = structure;
  o.fallback = fallback;
  return o;
}

// n = 1024: eight leaves, three levels of the recursion (small: three leaves, two levels); every
// precision meets the stop test without escalating, and the FP64 Cholesky's first solve is as
// accurate as the host's dpotf2.
TEST(GpuCholesky, EveryPrecisionMeetsTheStopTestOnSpdMatrices) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = full_or_small(1024, 300);
  DeviceSpdProblem prob(test_matrix(MatrixFamily::Poev, Spectrum::Geo, 1e3, 61, n), n, 2, n);
  int cases = 0;
  for (Precision p : {Precision::FP64, Precision::FP32, Precision::Halfhalf, Precision::Tf32tf32, Precision::TF32,
                      Precision::FP16, Precision::BF16, Precision::Fp16x3, Precision::Ozaki}) {
    SCOPED_TRACE(to_string(p));
    const SolveReport r = prob.solve_on_device(ctx, spd_options(p));
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    for (const Attempt& a : r.attempts) {
      EXPECT_EQ(a.factor, FactorKind::Cholesky) << r.summary();
      EXPECT_EQ(a.precision, p) << r.summary();
    }
    if (p == Precision::FP64) {
      const Eigen::Map<const Eigen::MatrixXd> a(prob.a.data(), n, n), b(prob.b.data(), n, 2);
      const Eigen::MatrixXd x64 = reference::cholesky_solve(reference::cholesky_factor(Eigen::MatrixXd(a)), Eigen::MatrixXd(b));
      const double norm_a = a.cwiseAbs().rowwise().sum().maxCoeff();
      double host_error = 0;
      for (int j = 0; j < 2; ++j)
        host_error = std::max(host_error, (b.col(j) - a * x64.col(j)).cwiseAbs().maxCoeff() /
                                              (norm_a * x64.col(j).cwiseAbs().maxCoeff() + b.col(j).cwiseAbs().maxCoeff()));
      ASSERT_FALSE(r.backward_error_history.empty());
      EXPECT_LE(r.backward_error_history.front(), 10 * std::max(host_error, 0x1p-53)) << r.summary();
    }
    std::printf("%-9s %s", to_string(p).c_str(), r.summary().c_str());
    ++cases;
  }
  EXPECT_EQ(cases, 9);
}

// Under Auto a device Cholesky below the engine's cholesky_auto_min_n (65536) is the FP64 one at
// once, and from it on cholesky_auto_path's first precision (here from an order set lower).
TEST(GpuCholesky, AutoTakesTheFp64CholeskyBelowItsMinimumOrderAndItsPathFromIt) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = full_or_small(1024, 300);
  DeviceSpdProblem prob(test_matrix(MatrixFamily::Poev, Spectrum::Geo, 1e3, 67, n), n, 1, n);
  SolveOptions o = spd_options(Precision::Auto, true);
  const SolveReport below = prob.solve_on_device(ctx, o);
  EXPECT_TRUE(below.converged) << below.summary();
  ASSERT_EQ(below.attempts.size(), 1u) << below.summary();
  EXPECT_EQ(below.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(below.attempts[0].precision, Precision::FP64) << below.summary();
  o.cholesky_auto_min_n = n;
  o.cholesky_auto_path = {Precision::Halfhalf};
  const SolveReport from = prob.solve_on_device(ctx, o);
  EXPECT_TRUE(from.converged) << from.summary();
  EXPECT_LT(prob.stop_test_ratio(), 1.0) << from.summary();
  ASSERT_FALSE(from.attempts.empty());
  EXPECT_EQ(from.attempts[0].factor, FactorKind::Cholesky);
  EXPECT_EQ(from.attempts[0].precision, Precision::Halfhalf) << from.summary();
}

// fp16x3's products lose accuracy with their length (tensor-core accumulation): the Cholesky cuts
// them to the LU's block width, and the device leaves solve with their inverses, so its factors
// should be as good a preconditioner as the LU's: the first solve's backward error within 3x of
// the LU's on the same matrix, and classic refinement taking at most one step more.
TEST(GpuCholesky, Fp16x3FactorsAreAsAccurateAsTheLus) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = full_or_small(2048, 300);
  DeviceSpdProblem prob(test_matrix(MatrixFamily::Poev, Spectrum::Geo, 1e6, 65, n), n, 1, n);
  SolveReport first[2];
  int i = 0;
  for (const Structure structure : {Structure::General, Structure::Spd}) {
    SolveOptions o = spd_options(Precision::Fp16x3, false, structure);
    o.refinement = Refinement::Classic;
    first[i] = prob.solve_on_device(ctx, o);
    EXPECT_TRUE(first[i].converged) << first[i].summary();
    ASSERT_FALSE(first[i].backward_error_history.empty());
    ++i;
  }
  const SolveReport &lu = first[0], &cholesky = first[1];
  EXPECT_EQ(cholesky.attempts.back().factor, FactorKind::Cholesky);
  EXPECT_LE(cholesky.backward_error_history.front(), 3 * lu.backward_error_history.front())
      << "LU: " << lu.summary() << "Cholesky: " << cholesky.summary();
  EXPECT_LE(cholesky.iterations, lu.iterations + 1) << "LU: " << lu.summary() << "Cholesky: " << cholesky.summary();
}

// Orders off every grid (the factors' alignment of 32, the leaves of 128, the symmetric update's
// blocks of 1024), leading dimensions beyond n; A and the gaps between its columns untouched.
TEST(GpuCholesky, OddOrdersAndLeadingDimensions) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  int cases = 0;
  const std::vector<std::int64_t> orders =
      !small_gpu_tests() ? std::vector<std::int64_t>{1, 37, 129, 1001, 2111, 4099} : std::vector<std::int64_t>{1, 37, 129, 301};
  for (std::int64_t n : orders) {
    DeviceSpdProblem prob(test_matrix(MatrixFamily::Poev, Spectrum::Arith, 1e4, 70 + n, n), n, 1, n + 3);
    for (const char* route : {"", "engine"})  // the FP64 Cholesky by cuSOLVER's dpotrf, or the recursion
      for (Precision p : {Precision::Fp16x3, Precision::FP32, Precision::FP64}) {
        if (*route && p != Precision::FP64) continue;
        SCOPED_TRACE(to_string(p) + (*route ? " (engine)" : "") + ", n " + std::to_string(n));
        const FixedFp64Route scope(*route ? solvers_detail::Tuning::Fp64Route::Engine
                                          : solvers_detail::tuning().fp64_route);
        const SolveReport r = prob.solve_on_device(ctx, spd_options(p));
        EXPECT_TRUE(r.converged) << r.summary();
        EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
        ASSERT_FALSE(r.attempts.empty());
        EXPECT_EQ(r.attempts.front().factor, FactorKind::Cholesky);
        ++cases;
      }
    EXPECT_EQ(prob.da.to_host(), prob.padded()) << "A and the gaps between its columns untouched";
  }
  EXPECT_EQ(cases, 4 * std::int64_t(orders.size()));
}

// Covariance and Toeplitz matrices of applications, with the default precision path.
TEST(GpuCholesky, ApplicationMatricesConvergeOnTheDefaultPath) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  int cases = 0;
  for (const char* name : {"cov_se length=0.1 nugget=1e-6 seed=2", "cov_matern52 length=0.2 nugget=1e-6 seed=2",
                           "toeplitz_ar1 rho=0.99"}) {
    const std::int64_t n = full_or_small(2048, 300);
    std::vector<double> a(n * n);
    generate_application_matrix(ApplicationSpec::parse(name), host_view(a.data(), n, n, n));
    DeviceSpdProblem prob(a, n, 1, n);
    SolveOptions o;
    o.structure = Structure::Spd;
    o.cholesky_auto_min_n = 0;  // the cheap rung at this size too
    SCOPED_TRACE(name);
    const SolveReport r = prob.solve_on_device(ctx, o);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    for (const Attempt& at : r.attempts) EXPECT_EQ(at.factor, FactorKind::Cholesky) << r.summary();
    std::printf("%s: %s", name, r.summary().c_str());
    ++cases;
  }
  EXPECT_EQ(cases, 3);
}

// cond 1e10 lies beyond FP16's reach: its Cholesky breaks down and the FP64 Cholesky follows; an
// indefinite A declared SPD is a named error; under Structure::Auto it goes to the LU path.
TEST(GpuCholesky, BreakdownEscalatesAndIndefiniteMatricesAreReported) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = full_or_small(1024, 300);
  DeviceSpdProblem ill(test_matrix(MatrixFamily::Poev, Spectrum::Geo, 1e10, 62, n), n, 1, n);
  const SolveReport r = ill.solve_on_device(ctx, spd_options(Precision::FP16, true));
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts.front().stop, StopReason::NotPositiveDefinite) << r.summary();
  EXPECT_GE(r.attempts.front().zero_pivot_column, 0);
  EXPECT_EQ(r.attempts.back().precision, Precision::FP64);
  EXPECT_EQ(r.attempts.back().factor, FactorKind::Cholesky);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LT(ill.stop_test_ratio(), 1.0) << r.summary();

  DeviceSpdProblem indefinite(test_matrix(MatrixFamily::Heev, Spectrum::Geo, 1e3, 63, n), n, 1, n);
  EXPECT_THROW(indefinite.solve_on_device(ctx, spd_options(Precision::Fp16x3, true)), NotPositiveDefinite);
  const SolveReport lu = indefinite.solve_on_device(ctx, spd_options(Precision::Fp16x3, true, Structure::Auto));
  EXPECT_TRUE(lu.converged) << lu.summary();
  EXPECT_LT(indefinite.stop_test_ratio(), 1.0) << lu.summary();
  ASSERT_GE(lu.attempts.size(), 2u);
  EXPECT_EQ(lu.attempts.front().factor, FactorKind::Cholesky);
  EXPECT_EQ(lu.attempts.front().stop, StopReason::NotPositiveDefinite);
  EXPECT_EQ(lu.attempts[1].factor, FactorKind::Lu) << "a clearly indefinite A skips the FP64 Cholesky";
}

// A breakdown names the first column whose pivot is not positive, wherever it falls in the device's
// blocks: in a leaf's first, second or last panel, on a leaf's edge, in the last leaf (77 columns,
// padded to whole panels). A is an SPD matrix whose a_jj is lowered by 1.5 d_j, d_j its pivot in
// the FP64 Cholesky, so that column j's pivot is -0.5 d_j and the columns before it are untouched;
// under Structure::Auto that pivot is clearly negative, so the LU path follows at once and solves
// it. Every product on the precision's backend (at this order all are shorter than
// kCholeskyTensorMinInner), halfhalf's symmetric updates whole (Fill::Lower).
TEST(GpuCholesky, BreakdownNamesTheFirstColumnWhosePivotIsNotPositive) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const int saved_min_inner = solvers_detail::tuning().cholesky_tensor_min_inner;
  solvers_detail::tuning().cholesky_tensor_min_inner = 0;
  struct Restore {
    int value;
    ~Restore() { solvers_detail::tuning().cholesky_tensor_min_inner = value; }
  } restore{saved_min_inner};
  const std::int64_t n = 333;
  const std::vector<double> spd = test_matrix(MatrixFamily::Poev, Spectrum::Geo, 1e2, 64, n);
  const auto l = reference::cholesky_factor(Eigen::Map<const Eigen::MatrixXd>(spd.data(), n, n).eval());
  ASSERT_LT(l.not_positive, 0);
  int cases = 0;
  for (std::int64_t j : {0, 31, 32, 77, 127, 128, 161, 300, 332}) {
    std::vector<double> a = spd;
    a[j + j * n] -= 1.5 * l.l(j, j) * l.l(j, j);
    DeviceSpdProblem prob(a, n, 1, n);
    for (const char* route : {"", "engine"})  // FP32 leaves, and FP64 ones (the FP64 recursion)
      for (Precision p : {Precision::FP32, Precision::Halfhalf, Precision::FP64}) {
        if (*route && p != Precision::FP64) continue;
        if (!*route && p == Precision::FP64) continue;  // cuSOLVER's dpotrf: not the device's leaves
        SCOPED_TRACE(to_string(p) + (*route ? " (engine)" : "") + ", column " + std::to_string(j));
        const FixedFp64Route scope(*route ? solvers_detail::Tuning::Fp64Route::Engine
                                          : solvers_detail::tuning().fp64_route);
        const SolveReport r = prob.solve_on_device(ctx, spd_options(p, true, Structure::Auto));
        ASSERT_FALSE(r.attempts.empty());
        EXPECT_EQ(r.attempts.front().factor, FactorKind::Cholesky) << r.summary();
        EXPECT_EQ(r.attempts.front().stop, StopReason::NotPositiveDefinite) << r.summary();
        EXPECT_EQ(r.attempts.front().zero_pivot_column, j) << r.summary();
        ASSERT_GE(r.attempts.size(), 2u) << r.summary();
        EXPECT_EQ(r.attempts[1].factor, FactorKind::Lu) << "a clearly negative pivot goes to the LU at once\n"
                                                        << r.summary();
        EXPECT_TRUE(r.converged) << r.summary();
        EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
        ++cases;
      }
  }
  EXPECT_EQ(cases, 9 * 3);
}

// A nonsymmetric A: a named error where declared SPD (the message names the pair); under Auto the
// LU path.
TEST(GpuCholesky, NonsymmetricMatrixIsANamedErrorUnderSpdAndAnLuUnderAuto) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 515;
  std::vector<double> a = test_matrix(MatrixFamily::Poev, Spectrum::Geo, 1e3, 64, n);
  a[400 + 300 * n] += 1e-3;  // one asymmetric pair, A(400, 300) != A(300, 400)
  DeviceSpdProblem prob(a, n, 1, n + 1);
  try {
    prob.solve_on_device(ctx, spd_options(Precision::Fp16x3));
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not symmetric: A(400, 300) != A(300, 400)"), std::string::npos) << e.what();
  }
  const SolveReport r = prob.solve_on_device(ctx, spd_options(Precision::Fp16x3, true, Structure::Auto));
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
  for (const Attempt& at : r.attempts) EXPECT_EQ(at.factor, FactorKind::Lu) << r.summary();
}

}  // namespace
