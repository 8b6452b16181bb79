// SPDX-License-Identifier: BSD-3-Clause
// The host blocked Householder QR (solvers/src/qr/householder_qr.hpp): A = QR with Q orthogonal
// to the working precision's level, in FP64 and FP32, blocked or not, on tall, square and
// off-grid shapes; |R| as an unblocked FP64 Householder QR gives it; the least-squares
// solution through Q^T and R^-1 to FP64 accuracy against the true solution; zero columns and bad
// arguments. References and checks: tests/reference_solvers.hpp (the same rounding on every
// machine).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "mixsolve/core/error.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "qr/householder_qr.hpp"
#include "reference_solvers.hpp"

namespace {

using namespace mixsolve;
using solvers_detail::HouseholderQr;

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

template <class T>
Matrix<T> random_matrix(std::int64_t m, std::int64_t n, std::uint64_t seed) {
  Matrix<double> a(m, n);
  fill_random(host_view(a.data(), m, n, m), RandomSpec::uniform(-1, 1, seed));
  return a.template cast<T>();
}

template <class T>
const char* backend_for() {
  return std::is_same_v<T, float> ? "host-fp32" : "host-fp64";
}

// ||A - QR||_F / ||A||_F and ||Q^T Q - I||_F (Q the m x n thin factor, formed by applying Q to
// the first n columns of I), formed with ordered products in a precision W wider than T (long
// double for FP64 factors, double for FP32 ones), so that the check's own rounding stays far
// below the factorization's.
template <class T>
void expect_qr_accuracy(std::int64_t m, std::int64_t n, std::int64_t block, double tolerance_units) {
  using W = std::conditional_t<std::is_same_v<T, float>, double, long double>;
  using MatrixW = Matrix<W>;
  Context ctx = Context::host_only();
  const Matrix<T> a = random_matrix<T>(m, n, 7 + m + n);
  Matrix<T> f = a;
  const HouseholderQr<T> qr(ctx, host_view(f.data(), m, n, m), block, gemm::find_backend(backend_for<T>()));
  Matrix<T> q = Matrix<T>::Identity(m, n);
  qr.apply_q(host_view(q.data(), m, n, m));
  const MatrixW aw = a.template cast<W>();
  const MatrixW r = f.template cast<W>().topRows(n).template triangularView<Eigen::Upper>();
  const MatrixW qw = q.template cast<W>();
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double norm_a = double(aw.norm());
  const double factorization = double((aw - mixsolve::testing::ordered_product(qw, r)).norm()) / norm_a;
  const double orthogonality = double((mixsolve::testing::ordered_product_tn(qw, qw) - MatrixW::Identity(n, n)).norm());
  const std::string label = std::to_string(m) + " x " + std::to_string(n) + ", block " + std::to_string(block);
  EXPECT_LT(factorization, tolerance_units * u * n) << label;
  EXPECT_LT(orthogonality, tolerance_units * u * n) << label;
  // |diag R| is unique (R's rows are determined up to sign): against an unblocked FP64 QR of the
  // same A (its own error ~ n 2^-53 ||A||, within the tolerance's 4 n u ||A||).
  const Matrix<double> reference = mixsolve::testing::householder_qr(Matrix<double>(a.template cast<double>())).qr;
  for (std::int64_t j = 0; j < n; ++j)
    EXPECT_NEAR(double(std::fabs(r(j, j))), std::fabs(reference(j, j)), tolerance_units * u * n * norm_a)
        << label << ", r(" << j << ", " << j << ")";
}

TEST(HouseholderQr, FactorsToTheWorkingPrecisionBlockedOrNot) {
  for (const std::int64_t block : {1, 16, 32}) {
    expect_qr_accuracy<double>(300, 200, block, 4);
    expect_qr_accuracy<double>(257, 257, block, 4);
    expect_qr_accuracy<double>(1000, 37, block, 4);
    expect_qr_accuracy<float>(300, 200, block, 4);
    expect_qr_accuracy<float>(513, 64, block, 4);
  }
  expect_qr_accuracy<double>(1, 1, 8, 4);
  expect_qr_accuracy<double>(5, 3, 8, 4);
}

// x = R^-1 (Q^T b)(0 .. n) minimises ||b - A x||: the true solution (reference_least_squares) to
// FP64 accuracy (cond ~ 4 here, b far from A's range: u (kappa + kappa^2) ~ 4e-15), and Q^T
// applied then Q gives b back.
TEST(HouseholderQr, SolvesLeastSquaresAsEigenDoes) {
  Context ctx = Context::host_only();
  const std::int64_t m = 400, n = 120, k = 3;
  const Matrix<double> a = random_matrix<double>(m, n, 3), b = random_matrix<double>(m, k, 4);
  Matrix<double> f = a, c = b;
  const HouseholderQr<double> qr(ctx, host_view(f.data(), m, n, m), 32, gemm::find_backend("host-fp64"));
  qr.apply_qt(host_view(c.data(), m, k, m));
  Matrix<double> x = c.topRows(n);
  qr.solve_r(host_view(x.data(), n, k, n));
  const mixsolve::testing::ReferenceSolution ref = mixsolve::testing::reference_least_squares(a, b);
  ASSERT_TRUE(ref.converged);
  EXPECT_LT(double((x.cast<long double>() - ref.x).norm() / ref.x.norm()), 1e-13);
  qr.apply_q(host_view(c.data(), m, k, m));
  EXPECT_LT((c - b).norm() / b.norm(), 1e-14);
}

// A zero column gets tau = 0 and a zero diagonal in R, no NaN; the columns after it factor as usual.
TEST(HouseholderQr, ZeroColumnsGiveIdentityReflectors) {
  Context ctx = Context::host_only();
  const std::int64_t m = 50, n = 10;
  Matrix<double> a = random_matrix<double>(m, n, 5);
  a.col(3).setZero();
  Matrix<double> f = a;
  const HouseholderQr<double> qr(ctx, host_view(f.data(), m, n, m), 4, gemm::find_backend("host-fp64"));
  EXPECT_EQ(qr.tau()[3], 0.0);
  EXPECT_EQ(f(3, 3), 0.0);
  EXPECT_TRUE(f.allFinite());
  Matrix<double> q = Matrix<double>::Identity(m, n);
  qr.apply_q(host_view(q.data(), m, n, m));
  const Matrix<double> r = f.topRows(n).triangularView<Eigen::Upper>();
  EXPECT_LT((a - mixsolve::testing::ordered_product(q, r)).norm() / a.norm(), 1e-14);
}

TEST(HouseholderQr, RefusesBadArgumentsByName) {
  Context ctx = Context::host_only();
  Matrix<double> a(3, 5);
  const auto expect_message = [](auto&& call, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_message([&] { HouseholderQr<double>(ctx, host_view(a.data(), 3, 5, 3), 4, gemm::find_backend("host-fp64")); },
                 "fewer rows (3) than columns (5)");
  expect_message([&] { HouseholderQr<double>(ctx, host_view(a.data(), 5, 3, 5), 0, gemm::find_backend("host-fp64")); },
                 "block (0) must be >= 1");
  expect_message([&] { HouseholderQr<double>(ctx, host_view(a.data(), 5, 3, 5), 4, gemm::find_backend("host-fp32")); },
                 "is not a host backend for FP64 data");
}

}  // namespace
