// SPDX-License-Identifier: BSD-3-Clause
// Least squares refined to FP64 accuracy from an FP32 Householder QR on the augmented system
// (solvers/src/qr/least_squares_refinement.hpp), by the plain steps and by GMRES-LS: on full-rank
// A with consistent or inconsistent right-hand sides, x and r end within 10x of the FP64 QR
// solution's errors (against the true solution, tests/reference_solvers.hpp), by GMRES-LS up to
// kappa 1e6 and by the plain steps up to 1e4; beyond, neither claims success with an inaccurate x.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "qr/householder_qr.hpp"
#include "qr/least_squares_refinement.hpp"
#include "reference_solvers.hpp"

namespace {

using namespace mixsolve;
using solvers_detail::HouseholderQr;
using MatrixD = Eigen::MatrixXd;
using VectorD = Eigen::VectorXd;
using mixsolve::testing::ordered_norm2;
using mixsolve::testing::ordered_product;
using mixsolve::testing::ordered_product_tn;
using mixsolve::testing::ReferenceSolution;

MatrixD random_matrix(std::int64_t m, std::int64_t n, std::uint64_t seed) {
  MatrixD a(m, n);
  fill_random(host_view(a.data(), m, n, m), RandomSpec::uniform(-1, 1, seed));
  return a;
}

// A = U diag(sigma) V^T with geometric singular values 1 .. 1/kappa, and b = A x + rho z_perp
// with z_perp orthogonal to the range of U (||z_perp|| = ||A x||). Built with the unblocked kernels
// of reference_solvers.hpp, so that A and b are the same bits on every machine.
struct Problem {
  MatrixD a;
  VectorD b;
};
Problem make_problem(std::int64_t m, std::int64_t n, double kappa, double rho, std::uint64_t seed) {
  using mixsolve::testing::householder_qr;
  using mixsolve::testing::thin_q;
  const MatrixD u = thin_q(householder_qr(random_matrix(m, n, seed)), n);
  MatrixD sigma_vt = thin_q(householder_qr(random_matrix(n, n, seed + 1)), n).transpose();
  for (std::int64_t i = 0; i < n; ++i) sigma_vt.row(i) *= std::pow(kappa, -double(i) / double(n - 1));
  Problem p;
  p.a = ordered_product(u, sigma_vt);
  const MatrixD ax = ordered_product(p.a, random_matrix(n, 1, seed + 2));
  MatrixD z = random_matrix(m, 1, seed + 3);
  z -= ordered_product(u, ordered_product_tn(u, z));
  p.b = ax + rho * (ordered_norm2(ax.data(), m) / ordered_norm2(z.data(), m)) * z;
  return p;
}

// The true solution and residual of the stored problem (reference_least_squares).
ReferenceSolution reference_of(const Problem& p) {
  const ReferenceSolution ref = mixsolve::testing::reference_least_squares(p.a, p.b);
  EXPECT_TRUE(ref.converged) << "the reference refinement did not converge in " << ref.steps << " steps";
  return ref;
}

double x_error(const VectorD& x, const ReferenceSolution& ref) {
  return mixsolve::testing::relative_error(x.data(), ref.x.data(), x.size());
}

double r_error(const VectorD& r, const ReferenceSolution& ref, const VectorD& b) {
  long double d = 0;
  for (std::int64_t i = 0; i < r.size(); ++i) d += (r[i] - ref.r(i, 0)) * (r[i] - ref.r(i, 0));
  return double(std::sqrt(d)) / ordered_norm2(b.data(), b.size());
}

// Both methods (the plain steps and GMRES-LS) to kappa 1e4, GMRES-LS to 1e6; the plain steps at
// kappa 1e6 (kappa u_32 = 0.06, where their contraction c kappa u_32 nears 1) and both methods
// beyond claim success only with FP64's accuracy: on 2 of the 4 problems at 1e6 (rho 1e-6 and 1)
// the plain steps diverge and say so. "Within 10x of the FP64 QR's errors" (testing::
// fp64_qr_errors, the median over row orders): the solver's and the QR's errors are the same
// u (kappa + kappa^2 ||r|| / (||A|| ||x||)) up to constants set by the algorithm and by where the
// rounding errors fall; 10 allows for those and rejects an x or r an order of magnitude worse.
// Each (kappa, rho) has its own problem (seed), shared by the two methods.
TEST(LeastSquaresRefinement, Fp32QrRefinesToFp64AccuracyWithAnyResidual) {
  Context ctx = Context::host_only();
  const std::int64_t m = 300, n = 80;
  const double kappas[] = {1e2, 1e4, 1e6, 1e7, 1e8}, rhos[] = {0.0, 1e-6, 1e-1, 1.0};
  int cases = 0, claimed = 0, declined = 0;
  for (std::size_t ik = 0; ik < std::size(kappas); ++ik)
    for (std::size_t ir = 0; ir < std::size(rhos); ++ir) {
      const double kappa = kappas[ik], rho = rhos[ir];
      const Problem p = make_problem(m, n, kappa, rho, 11 + 100 * ik + 10 * ir);
      const ReferenceSolution ref = reference_of(p);
      const mixsolve::testing::Fp64QrErrors fp64 = mixsolve::testing::fp64_qr_errors(p.a, p.b, ref);
      for (const solvers_detail::LsMethod method :
           {solvers_detail::LsMethod::Augmented, solvers_detail::LsMethod::Gmres}) {
        const bool gmres = method == solvers_detail::LsMethod::Gmres;
        // FP32 QR of A rounded to FP32, then the refinement.
        Eigen::MatrixXf a32 = p.a.cast<float>();
        const HouseholderQr<float> qr(ctx, host_view(a32.data(), m, n, m), 16, gemm::find_backend("host-fp32"));
        VectorD x(n), r(m);
        const solvers_detail::LsRefinementResult result = solvers_detail::refine_least_squares(
            host_view<const double>(p.a.data(), m, n, m), p.b.data(), qr, 1.0, 30, x.data(), r.data(), method,
            solvers_detail::LsFactorScales{
                double(a32.diagonal().cwiseAbs().minCoeff()), 0,
                double(a32.diagonal().cwiseAbs().minCoeff() / a32.diagonal().cwiseAbs().maxCoeff())});
        const double xe = x_error(x, ref), re = r_error(r, ref, p.b);
        const std::string stop = to_string(result.stop);
        std::printf("%s kappa %.0e rho %.0e: %s after %d, x error %.2e (FP64 QR %.2e), r error %.2e (FP64 QR %.2e)\n",
                    gmres ? "gmres" : "plain", kappa, rho, stop.c_str(), result.iterations, xe, fp64.x, re, fp64.r);
        const std::string label =
            std::string(gmres ? "gmres" : "plain") + " kappa " + std::to_string(kappa) + ", rho " + std::to_string(rho);
        const bool claims = result.stop == LeastSquaresStop::Converged || result.stop == LeastSquaresStop::Stagnated;
        ++cases;
        const bool must_converge = kappa <= 1e4 || (gmres && kappa <= 1e6);
        if (must_converge) EXPECT_TRUE(claims) << label << ": " << stop;
        if (claims) {  // success only with FP64's accuracy, in x and in r
          ++claimed;
          EXPECT_LE(xe, 10 * fp64.x + 0x1p-50) << label << ": " << stop;
          EXPECT_LE(re, 10 * fp64.r + 0x1p-50) << label << ": " << stop;
        } else {
          ++declined;
        }
      }
    }
  EXPECT_EQ(cases, 2 * 5 * 4);
  std::printf("%d attempts claimed FP64 accuracy, %d declined\n", claimed, declined);
}

// FP64 factors: the refinement polishes the FP64 QR's solution and accepts it (kappa 1e8, large
// residual); a zero right-hand side gives x = 0 and r = 0 at once.
TEST(LeastSquaresRefinement, Fp64FactorsAndZeroRightHandSide) {
  Context ctx = Context::host_only();
  const std::int64_t m = 200, n = 50;
  const Problem p = make_problem(m, n, 1e8, 0.1, 99);
  MatrixD f = p.a;
  const HouseholderQr<double> qr(ctx, host_view(f.data(), m, n, m), 16, gemm::find_backend("host-fp64"));
  VectorD x(n), r(m);
  const auto result = solvers_detail::refine_least_squares(host_view<const double>(p.a.data(), m, n, m), p.b.data(), qr,
                                                           1.0, 30, x.data(), r.data());
  EXPECT_TRUE(result.stop == LeastSquaresStop::Converged || result.stop == LeastSquaresStop::Stagnated) << int(result.stop);
  const ReferenceSolution ref = reference_of(p);
  EXPECT_LE(x_error(x, ref), 10 * mixsolve::testing::fp64_qr_errors(p.a, p.b, ref).x + 0x1p-50);
  const VectorD zero = VectorD::Zero(m);
  const auto at_zero = solvers_detail::refine_least_squares(host_view<const double>(p.a.data(), m, n, m), zero.data(),
                                                            qr, 1.0, 30, x.data(), r.data());
  EXPECT_EQ(at_zero.stop, LeastSquaresStop::Converged);
  EXPECT_EQ(at_zero.iterations, 1);
  EXPECT_EQ(x.norm(), 0.0);
  EXPECT_EQ(r.norm(), 0.0);
}

}  // namespace

// The block refinement (refine_block: all right-hand sides at once, as the rank-revealing attempt
// refines its columns) gives every column the steps, the stop and the bits of refining it alone
// by CGLS on the semi-normal equations, whatever its scale: a consistent and an inconsistent b,
// the latter scaled by 2^400 and by 2^-400, and a zero b (y = 0 at once); the inconsistent
// column's y is as accurate as the FP64 QR's solution.
TEST(LeastSquaresRefinement, BlockRefinementTakesEachColumnsOwnSteps) {
  Context ctx = Context::host_only();
  const std::int64_t m = 300, n = 40;
  const Problem consistent = make_problem(m, n, 1e4, 0.0, 71), inconsistent = make_problem(m, n, 1e4, 1e-1, 71);
  const ReferenceSolution ref = reference_of(inconsistent);
  const mixsolve::testing::Fp64QrErrors fp64 = mixsolve::testing::fp64_qr_errors(inconsistent.a, inconsistent.b, ref);
  ASSERT_EQ(consistent.a, inconsistent.a);  // the same A (seed), two right-hand sides
  MatrixD t(m, 5);
  t.col(0) = consistent.b;
  t.col(1) = inconsistent.b;
  t.col(2) = std::ldexp(1.0, 400) * inconsistent.b;
  t.col(3) = std::ldexp(1.0, -400) * inconsistent.b;
  t.col(4).setZero();
  // R from an FP32 QR of A.
  Eigen::MatrixXf a32 = inconsistent.a.cast<float>();
  const HouseholderQr<float> qr(ctx, host_view(a32.data(), m, n, m), 16, gemm::find_backend("host-fp32"));
  const MatrixD r = a32.topRows(n).cast<double>().triangularView<Eigen::Upper>();
  const double smallest = r.diagonal().cwiseAbs().minCoeff(), largest = r.diagonal().cwiseAbs().maxCoeff();
  const solvers_detail::LsFactorScales scales{smallest, largest, smallest / largest};
  const auto a = host_view<const double>(inconsistent.a.data(), m, n, m);
  const auto rv = host_view<const double>(r.data(), n, n, n);
  MatrixD block(n, 5);
  const std::vector<solvers_detail::LsRefinementResult> together = solvers_detail::refine_semi_normal_block(
      a, host_view<const double>(t.data(), m, 5, m), rv, 30, host_view(block.data(), n, 5, n), scales, false);
  ASSERT_EQ(together.size(), 5u);
  for (std::int64_t j = 0; j < 5; ++j) {
    VectorD alone(n);
    const solvers_detail::LsRefinementResult single =
        solvers_detail::refine_semi_normal(a, &t(0, j), rv, 1.0, 30, alone.data(), scales,
                                           solvers_detail::LsFactorKind::Cheap, solvers_detail::LsMethod::Cgls);
    const std::string label = "column " + std::to_string(j);
    EXPECT_EQ(together[std::size_t(j)].stop, single.stop) << label;
    EXPECT_EQ(together[std::size_t(j)].iterations, single.iterations) << label;
    EXPECT_EQ(together[std::size_t(j)].inner_iterations, single.inner_iterations) << label;
    EXPECT_EQ(VectorD(block.col(j)), alone) << label;
    EXPECT_EQ(single.stop == LeastSquaresStop::Converged || single.stop == LeastSquaresStop::Stagnated, true)
        << label << ": " << to_string(single.stop);
  }
  EXPECT_EQ(block.col(4), VectorD::Zero(n));
  const double error = x_error(block.col(1), ref);
  std::printf("block refinement: x error %.2e (FP64 QR %.2e), %d steps, %d inner\n", error, fp64.x,
              together[1].iterations, together[1].inner_iterations);
  EXPECT_LE(error, 10 * fp64.x + 0x1p-50);
  // The scales are exact powers of two: the same iterates, scaled.
  EXPECT_EQ(VectorD(std::ldexp(1.0, -400) * block.col(2)), VectorD(block.col(1)));
  EXPECT_EQ(VectorD(std::ldexp(1.0, 400) * block.col(3)), VectorD(block.col(1)));
}
