// SPDX-License-Identifier: BSD-3-Clause
// Least squares refined to FP64 accuracy from an FP32 Householder QR on the augmented system
// (solvers/src/qr/least_squares_refinement.hpp), by the plain steps and by GMRES-LS: on full-rank
// A with kappa 1e2 .. 1e6 and consistent or inconsistent right-hand sides, x and r end within 10x
// of the FP64 QR solution's errors (against a long double QR); past kappa u_32 ~ 1 the refinement
// does not claim success with an inaccurate x.
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

namespace {

using namespace mixsolve;
using solvers_detail::HouseholderQr;
using solvers_detail::LsStop;
using MatrixD = Eigen::MatrixXd;
using VectorD = Eigen::VectorXd;
using MatrixL = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
using VectorL = Eigen::Matrix<long double, Eigen::Dynamic, 1>;

MatrixD random_matrix(std::int64_t m, std::int64_t n, std::uint64_t seed) {
  MatrixD a(m, n);
  fill_random(host_view(a.data(), m, n, m), RandomSpec::uniform(-1, 1, seed));
  return a;
}

// A = U diag(sigma) V^T with geometric singular values 1 .. 1/kappa, and b = A x + rho z_perp
// with z_perp orthogonal to the range of U (||z_perp|| = ||A x||).
struct Problem {
  MatrixD a;
  VectorD b;
};
Problem make_problem(std::int64_t m, std::int64_t n, double kappa, double rho, std::uint64_t seed) {
  const MatrixD u = random_matrix(m, n, seed).householderQr().householderQ() * MatrixD::Identity(m, n);
  const MatrixD v = random_matrix(n, n, seed + 1).householderQr().householderQ() * MatrixD::Identity(n, n);
  VectorD sigma(n);
  for (std::int64_t i = 0; i < n; ++i) sigma[i] = std::pow(kappa, -double(i) / double(n - 1));
  Problem p;
  p.a = u * sigma.asDiagonal() * v.transpose();
  const VectorD x = random_matrix(n, 1, seed + 2);
  const VectorD ax = p.a * x;
  VectorD z = random_matrix(m, 1, seed + 3);
  z -= u * (u.transpose() * z);
  p.b = ax + rho * (ax.norm() / z.norm()) * z;
  return p;
}

// Both methods (the plain steps and GMRES-LS) to kappa 1e6; beyond, success is claimed only with
// FP64's accuracy.
TEST(LeastSquaresRefinement, Fp32QrRefinesToFp64AccuracyWithAnyResidual) {
  Context ctx = Context::host_only();
  const std::int64_t m = 300, n = 80;
  for (const solvers_detail::LsMethod method : {solvers_detail::LsMethod::Augmented, solvers_detail::LsMethod::Gmres})
    for (const double kappa : {1e2, 1e4, 1e6, 1e7, 1e8})
      for (const double rho : {0.0, 1e-6, 1e-1, 1.0}) {
        const bool gmres = method == solvers_detail::LsMethod::Gmres;
        const Problem p = make_problem(m, n, kappa, rho, std::uint64_t(kappa) % 1000 + std::uint64_t(rho * 100) + 11);
        // The reference: a long double QR of the same (FP64) A and b.
        const VectorL x_ref = p.a.cast<long double>().householderQr().solve(p.b.cast<long double>());
        const VectorL r_ref = p.b.cast<long double>() - p.a.cast<long double>() * x_ref;
        const double norm_b = double(p.b.norm());
        // FP64 QR's errors, the bar.
        const VectorD x64 = p.a.householderQr().solve(p.b);
        const VectorD r64 = p.b - p.a * x64;
        const double x64_error = double((x64.cast<long double>() - x_ref).norm() / x_ref.norm());
        const double r64_error = double((r64.cast<long double>() - r_ref).norm()) / norm_b;
        // FP32 QR of A rounded to FP32, then the refinement.
        Eigen::MatrixXf a32 = p.a.cast<float>();
        const HouseholderQr<float> qr(ctx, host_view(a32.data(), m, n, m), 16, gemm::find_backend("host-fp32"));
        VectorD x(n), r(m);
        const solvers_detail::LsRefinementResult result = solvers_detail::refine_least_squares(
            host_view<const double>(p.a.data(), m, n, m), p.b.data(), qr, 1.0, 30, x.data(), r.data(), method,
            solvers_detail::LsFactorScales{
                double(a32.diagonal().cwiseAbs().minCoeff()), 0,
                double(a32.diagonal().cwiseAbs().minCoeff() / a32.diagonal().cwiseAbs().maxCoeff())});
        const double x_error = double((x.cast<long double>() - x_ref).norm() / x_ref.norm());
        const double r_error = double((r.cast<long double>() - r_ref).norm()) / norm_b;
        const char* stop = result.stop == LsStop::Converged   ? "converged"
                           : result.stop == LsStop::Stagnated ? "stagnated"
                           : result.stop == LsStop::Diverged  ? "diverged"
                                                              : "max iterations";
        std::printf("%s kappa %.0e rho %.0e: %s after %d, x error %.2e (FP64 QR %.2e), r error %.2e (FP64 QR %.2e)\n",
                    gmres ? "gmres" : "plain", kappa, rho, stop, result.iterations, x_error, x64_error, r_error,
                    r64_error);
        const std::string label =
            std::string(gmres ? "gmres" : "plain") + " kappa " + std::to_string(kappa) + ", rho " + std::to_string(rho);
        const bool claims = result.stop == LsStop::Converged || result.stop == LsStop::Stagnated;
        if (kappa <= 1e6) {
          EXPECT_TRUE(claims) << label << ": " << stop;
          EXPECT_LE(x_error, 10 * x64_error + 0x1p-50) << label;
          EXPECT_LE(r_error, 10 * r64_error + 0x1p-50) << label;
        } else if (claims) {  // kappa u_32 > 1: success only with FP64's accuracy
          EXPECT_LE(x_error, 10 * x64_error + 0x1p-50) << label << ": " << stop;
        }
      }
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
  EXPECT_TRUE(result.stop == LsStop::Converged || result.stop == LsStop::Stagnated) << int(result.stop);
  const VectorL x_ref = p.a.cast<long double>().householderQr().solve(p.b.cast<long double>());
  const VectorD x64 = p.a.householderQr().solve(p.b);
  EXPECT_LE(double((x.cast<long double>() - x_ref).norm()), 10 * double((x64.cast<long double>() - x_ref).norm()));
  const VectorD zero = VectorD::Zero(m);
  const auto at_zero = solvers_detail::refine_least_squares(host_view<const double>(p.a.data(), m, n, m), zero.data(),
                                                            qr, 1.0, 30, x.data(), r.data());
  EXPECT_EQ(at_zero.stop, LsStop::Converged);
  EXPECT_EQ(at_zero.iterations, 1);
  EXPECT_EQ(x.norm(), 0.0);
  EXPECT_EQ(r.norm(), 0.0);
}

}  // namespace
