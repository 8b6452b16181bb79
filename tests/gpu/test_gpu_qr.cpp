// SPDX-License-Identifier: BSD-3-Clause
// The device blocked Householder QR (solvers/src/qr/cuda/device_qr.hpp) and least_squares() on
// device matrices. The QR: A = QR with Q orthogonal
// to the working precision's level in FP64 and in FP32 with the trailing updates on cuBLAS SGEMM
// and on the corrected tensor-core GEMMs, |diag R| as Eigen's, Q^T applied to Q giving I, and the
// R and R^T solves with backward errors at the working precision's level.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <string>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "qr/cuda/device_qr.hpp"
#include "qr/cuda/pivoted_cholesky.hpp"
#include "qr/minimum_norm.hpp"
#include "qr/householder_qr.hpp"
#include "mixsolve/solvers/least_squares.hpp"

namespace {

using namespace mixsolve;
using mixsolve::testing::full_or_small;
using solvers_detail::DeviceQr;

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

template <class T>
void expect_device_qr(const char* backend, std::int64_t m, std::int64_t n, std::int64_t block, double units,
                      solvers_detail::QrPanel panel = solvers_detail::QrPanel::Tsqr, const char* vt_c_backend = nullptr,
                      std::int64_t ld = 0) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  if (ld == 0) ld = m;
  Matrix<double> a64(m, n);
  fill_random(host_view(a64.data(), m, n, m), RandomSpec::uniform(-1, 1, 100 + m + n));
  const Matrix<T> a = a64.template cast<T>();
  // A in ld x n storage whose rows beyond m hold NaN: the factorization must not read them.
  Matrix<T> stored = Matrix<T>::Constant(ld, n, std::numeric_limits<T>::quiet_NaN());
  stored.topRows(m) = a;
  DeviceBuffer<T> da(ctx, ld * n), dq(ctx, m * n);
  da.copy_from_host(stored.data(), ld * n);
  DeviceQr<T> qr(ctx, device_view(da.data(), m, n, ld), block, gemm::find_backend(backend), panel,
                 vt_c_backend ? &gemm::find_backend(vt_c_backend) : nullptr);
  Matrix<T> q = Matrix<T>::Identity(m, n);
  dq.copy_from_host(q.data(), m * n);
  qr.apply_q(device_view(dq.data(), m, n, m));
  ctx.synchronize();
  dq.copy_to_host(q.data(), m * n);
  da.copy_to_host(stored.data(), ld * n);
  const Matrix<T> f = stored.topRows(m);
  const Matrix<double> r = f.template cast<double>().topRows(n).template triangularView<Eigen::Upper>();
  const Matrix<double> qd = q.template cast<double>(), ad = a.template cast<double>();
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const std::string label = std::string(backend) + (vt_c_backend ? std::string(" (V^T C: ") + vt_c_backend + ")" : "") +
                            " " + std::to_string(m) + " x " + std::to_string(n) + ", ld " + std::to_string(ld) +
                            ", block " + std::to_string(block) +
                            (panel == solvers_detail::QrPanel::Tsqr ? ", TSQR panels" : ", cuSOLVER panels");
  const double factorization = (ad - qd * r).norm() / ad.norm();
  const double orthogonality = (qd.transpose() * qd - Matrix<double>::Identity(n, n)).norm();
  std::printf("%s: ||A - QR|| / ||A|| %.2e, ||Q^T Q - I|| %.2e (u n = %.2e)\n", label.c_str(), factorization,
              orthogonality, u * n);
  EXPECT_LT(factorization, units * u * n) << label;
  EXPECT_LT(orthogonality, units * u * n) << label;
  const std::vector<double> diag = qr.diagonal();
  const Matrix<double> r_ref = ad.householderQr().matrixQR().topRows(n).template triangularView<Eigen::Upper>();
  for (std::int64_t j = 0; j < n; ++j)
    ASSERT_NEAR(diag[j], std::fabs(r_ref(j, j)), units * u * n * ad.norm()) << label << " r(" << j << ", " << j << ")";
  // Q^T Q = I through apply_qt on the formed Q; solve_r and solve_rt have small backward errors:
  // ||R x - y|| / (||R|| ||x||) for x = R^-1 y, and the same for R^T.
  dq.copy_from_host(q.data(), m * n);
  qr.apply_qt(device_view(dq.data(), m, n, m));
  Matrix<T> qtq(m, n);
  ctx.synchronize();
  dq.copy_to_host(qtq.data(), m * n);
  EXPECT_LT((qtq.template cast<double>() - Matrix<double>::Identity(m, n)).norm(), units * u * n) << label << " Q^T Q";
  for (const bool transposed : {false, true}) {
    Matrix<double> y64(m, 1);
    fill_random(host_view(y64.data(), m, 1, m), RandomSpec::uniform(-1, 1, 7));
    Matrix<T> x = y64.template cast<T>();
    DeviceBuffer<T> dx(ctx, m);
    dx.copy_from_host(x.data(), m);
    if (transposed)
      qr.solve_rt(device_view(dx.data(), m, 1, m));
    else
      qr.solve_r(device_view(dx.data(), m, 1, m));
    ctx.synchronize();
    dx.copy_to_host(x.data(), m);
    const Matrix<double> rr = transposed ? Matrix<double>(r.transpose()) : r;
    const Matrix<double> xd = x.template cast<double>().topRows(n);
    const Matrix<double> y = y64.template cast<T>().template cast<double>().topRows(n);  // the solve's input
    const double backward = (rr * xd - y).norm() / (rr.norm() * xd.norm());
    EXPECT_LT(backward, units * u * n) << label << (transposed ? " solve_rt" : " solve_r");
  }
}

TEST(GpuQr, FactorsToTheWorkingPrecisionOnEveryUpdateBackend) {
  expect_device_qr<double>("cublas-dgemm", 1000, 300, 64, 4);
  expect_device_qr<double>("cublas-dgemm", 513, 513, 32, 4);
  expect_device_qr<double>("cublas-dgemm", 77, 5, 32, 4);
  expect_device_qr<float>("cublas-sgemm", 2000, 256, 64, 4);
  expect_device_qr<float>("tf32tf32", 2000, 256, 64, 8);
  expect_device_qr<float>("halfhalf", 2000, 256, 64, 8);
  // least_squares()'s choice for wide device matrices (V^T C on tf32tf32 splits k there), and the
  // one before it.
  expect_device_qr<float>("cublas-fp16x3", 6000, 1100, 256, 8, solvers_detail::QrPanel::Tsqr, "tf32tf32");
  expect_device_qr<float>("cublas-fp16x3", 6000, 1100, 256, 8, solvers_detail::QrPanel::Tsqr, "cublas-sgemm");
  // An odd m in storage padded to 128-byte columns, as least_squares() keeps its FP32 factors: V^T C
  // reads the trailing matrix in place (the skinny tf32tf32 kernel), and NaN in the padding rows
  // must not reach the factors.
  expect_device_qr<float>("cublas-fp16x3", 6001, 1100, 256, 8, solvers_detail::QrPanel::Tsqr, "tf32tf32", 6016);
  expect_device_qr<float>("cublas-sgemm", 1001, 333, 128, 4);
  expect_device_qr<float>("cublas-sgemm", 70001, 100, 128, 4);
  expect_device_qr<double>("cublas-dgemm", 40000, 70, 128, 4);
  expect_device_qr<double>("cublas-dgemm", 1000, 300, 64, 4, solvers_detail::QrPanel::Cusolver);
  expect_device_qr<float>("cublas-sgemm", 1001, 333, 128, 4, solvers_detail::QrPanel::Cusolver);
}

// One TSQR panel (qr/cuda/tsqr_panel.hpp) on shapes with one to six tree levels, ragged blocks,
// fewer than 32 columns, a zero column, two equal ones, (FP64) a subnormal one, and (FP32) one
// whose squares overflow or one of subnormals. The zero, subnormal and overflowing columns leave
// the one-reduction path's range (at the column itself or through the multipliers of an earlier
// one), so those blocks take the robust path; square blocks (32 x 32) end on the fast path's H = I:
// Q = I - V T V^T orthogonal and A = Q(:, 0:cols) R to the working precision; the geqrf form in A
// (R above, V below), tau = diag T, |diag R| as Eigen's.
template <class T>
void expect_tsqr_panel(std::int64_t rows, int cols, int defect) {
  Context ctx;
  Matrix<double> a64(rows, cols);
  fill_random(host_view(a64.data(), rows, cols, rows), RandomSpec::uniform(-1, 1, 300 + rows + cols));
  if (defect == 1) a64.col(cols / 2).setZero();
  if (defect == 2) a64.col(cols - 1) = a64.col(0);
  if (defect == 3) a64.col(cols - 1) *= std::ldexp(1.0, -1060);  // subnormal in FP64
  if (defect == 4) a64.col(cols / 2) *= std::ldexp(1.0, 70);     // squares beyond FP32's range
  if (defect == 5) a64.col(cols / 2) *= std::ldexp(1.0, -140);   // subnormal in FP32
  const Matrix<T> a = a64.template cast<T>();
  DeviceBuffer<T> da(ctx, rows * cols), dv(ctx, rows * cols), dt(ctx, cols * cols), dtau(ctx, cols);
  da.copy_from_host(a.data(), rows * cols);
  const std::vector<T> zeros(cols * cols, T(0));  // factor() writes T's upper triangle
  dt.copy_from_host(zeros.data(), cols * cols);
  solvers_detail::TsqrPanel<T> tsqr(ctx, rows + 5);
  tsqr.factor(da.data(), rows, rows, cols, dv.data(), rows, dt.data(), cols, dtau.data());
  Matrix<T> f(rows, cols), v(rows, cols), t(cols, cols);
  std::vector<T> tau(cols);
  ctx.synchronize();
  da.copy_to_host(f.data(), rows * cols);
  dv.copy_to_host(v.data(), rows * cols);
  dt.copy_to_host(t.data(), cols * cols);
  dtau.copy_to_host(tau.data(), cols);
  const std::string label = std::to_string(rows) + " x " + std::to_string(cols) + ", " +
                            std::to_string(solvers_detail::TsqrPanel<T>::levels(rows, cols).size()) +
                            " levels, defect " + std::to_string(defect);
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const Matrix<double> vd = v.template cast<double>(), td = t.template cast<double>();
  const Matrix<double> r = f.template cast<double>().topRows(cols).template triangularView<Eigen::Upper>();
  // Q(:, 0:cols) = E - V T V_1^T; the whole Q's orthogonality through Q^T Q = I - V (T + T^T - T^T V^T V T) V^T.
  const Matrix<double> q = Matrix<double>::Identity(rows, cols) - vd * td * vd.topRows(cols).transpose();
  // ||V X V^T||_F^2 = trace(X^T G X G), G = V^T V.
  const Matrix<double> g = vd.transpose() * vd, x = td + td.transpose() - td.transpose() * g * td;
  const double orthogonality = std::sqrt(std::fabs((x.transpose() * g * x * g).trace()));
  const double factorization = (a.template cast<double>() - q * r).norm() / a.template cast<double>().norm();
  std::printf("TSQR panel %s: ||A - QR|| / ||A|| %.2e, ||Q^T Q - I|| <= %.2e (u = %.2e)\n", label.c_str(),
              factorization, orthogonality, u);
  const double tolerance = 8 * u * (cols + std::sqrt(double(rows)));
  EXPECT_LT(factorization, tolerance) << label;
  EXPECT_LT(orthogonality, tolerance) << label;
  const Matrix<double> r_ref =
      a.template cast<double>().householderQr().matrixQR().topRows(cols).template triangularView<Eigen::Upper>();
  // Past a zero column R is not unique (the column's Q vector is any unit vector): |r_jj| is
  // compared up to it.
  for (int j = 0; j < cols; ++j) {
    if (defect != 1 || j <= cols / 2)
      EXPECT_NEAR(std::fabs(r(j, j)), std::fabs(r_ref(j, j)), tolerance * a64.norm())
          << label << " r(" << j << ", " << j << ")";
    EXPECT_EQ(tau[j], t(j, j)) << label;
    EXPECT_EQ(v(j, j), T(1)) << label;
    for (std::int64_t i = 0; i < rows; ++i)
      ASSERT_EQ(v(i, j), i < j ? T(0) : i == j ? T(1) : f(i, j)) << label << " v(" << i << ", " << j << ")";
  }
  if (defect == 3) {  // the subnormal column's r_jj: that of the column scaled up, scaled back
    Matrix<double> up = a64;
    up.col(cols - 1) *= std::ldexp(1.0, 530);  // 2^1060 in two exact steps (it overflows at once)
    up.col(cols - 1) *= std::ldexp(1.0, 530);
    const double expected = std::fabs(up.householderQr().matrixQR()(cols - 1, cols - 1)) * std::ldexp(1.0, -1060);
    EXPECT_NEAR(std::fabs(r(cols - 1, cols - 1)), expected, 1e-3 * expected)  // subnormals keep ~14 bits
        << label;
  }
}

TEST(GpuQr, TsqrPanelIsHouseholderQrOnEveryTreeShape) {
  MIXSOLVE_REQUIRE_GPU();
  for (const std::int64_t rows : {32, 33, 129, 256, 257, 1000, 70001})
    for (const int cols : {1, 7, 32}) {
      if (rows < cols) continue;
      expect_tsqr_panel<float>(rows, cols, 0);
      expect_tsqr_panel<double>(rows, cols, 0);
    }
  for (const int defect : {1, 2}) {
    expect_tsqr_panel<float>(3000, 32, defect);
    expect_tsqr_panel<double>(3000, 32, defect);
    expect_tsqr_panel<double>(300, 10, defect);
  }
  expect_tsqr_panel<double>(3000, 32, 3);
  expect_tsqr_panel<double>(300, 10, 3);
  for (const int defect : {4, 5}) {
    expect_tsqr_panel<float>(3000, 32, defect);
    expect_tsqr_panel<float>(300, 10, defect);
  }
  Context ctx;
  solvers_detail::TsqrPanel<float> tsqr(ctx, 100);
  DeviceBuffer<float> buffer(ctx, 101 * 33);
  EXPECT_THROW(tsqr.factor(buffer.data(), 101, 101, 1, buffer.data(), 101, buffer.data(), 1, buffer.data()),
               InvalidArgument);
  EXPECT_THROW(tsqr.factor(buffer.data(), 100, 100, 33, buffer.data(), 100, buffer.data(), 33, buffer.data()),
               InvalidArgument);
  EXPECT_THROW(tsqr.factor(buffer.data(), 100, 20, 21, buffer.data(), 100, buffer.data(), 33, buffer.data()),
               InvalidArgument);
}

// The device's pivoting by a Cholesky factorization of R^T R (qr/cuda/pivoted_cholesky.hpp)
// against the host's FP64 QR with column pivoting on the same matrix: the same rank at a
// threshold inside a gap of the spectrum, the same pivots and |r_jj| (no near ties in random
// data; the Gram matrix's rounding moves r_jj by about n u kappa^2 relative), and the leading
// rows [R11 R12] reproducing P^T R^T R P's leading rows. Shapes: panel multiples, odd sizes,
// wide (rank = p), a zero matrix (rank 0).
TEST(GpuQr, GramPivotingChoosesTheColumnsOfColumnPivotedQr) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  struct Shape {
    std::int64_t p, n, rank;  // rank: the numerical rank planted (min(p, n): none planted)
  };
  for (const Shape shape : {Shape{300, 200, 150}, Shape{64, 64, 40}, Shape{97, 97, 97}, Shape{20, 37, 20},
                            Shape{1100, 1030, 700}, Shape{50, 40, 0}}) {
    const std::int64_t p = shape.p, n = shape.n, k = shape.rank;
    // R = U diag(sigma) V^T + 1e-9 E, U and V with orthonormal columns, sigma graded from 1 to
    // 0.1 over k values: rank k up to a perturbation far below the threshold (2^-12 sigma_max).
    Matrix<double> u0(p, p), v0(n, n), e(p, n);
    fill_random(host_view(u0.data(), p, p, p), RandomSpec::uniform(-1, 1, 7 + p));
    fill_random(host_view(v0.data(), n, n, n), RandomSpec::uniform(-1, 1, 8 + n));
    fill_random(host_view(e.data(), p, n, p), RandomSpec::uniform(-1, 1, 9 + k));
    const Matrix<double> uq = Eigen::HouseholderQR<Matrix<double>>(u0).householderQ();
    const Matrix<double> vq = Eigen::HouseholderQR<Matrix<double>>(v0).householderQ();
    Matrix<double> r = k > 0 ? Matrix<double>(1e-9 * e) : Matrix<double>::Zero(p, n);  // k = 0: R = 0
    for (std::int64_t l = 0; l < k; ++l)
      r += std::pow(10.0, -double(l) / double(k)) * uq.col(l) * vq.col(l).transpose();
    SCOPED_TRACE(::testing::Message() << p << " x " << n << ", rank " << k);
    const double threshold = 0x1p-12;
    const solvers_detail::LeadingPivots host =
        solvers_detail::leading_pivots_on_host(host_view<const double>(r.data(), p, n, p), threshold);
    DeviceBuffer<double> rd(ctx, std::size_t(p * n));
    rd.copy_from_host(r.data(), std::size_t(p * n), ctx.stream());
    const solvers_detail::LeadingPivots device =
        solvers_detail::pivot_by_gram_cholesky(ctx, rd.data(), p, n, p, threshold);
    EXPECT_EQ(host.rank, k);
    ASSERT_EQ(device.rank, host.rank);
    EXPECT_NEAR(device.sigma_max, host.sigma_max, 1e-3 * host.sigma_max);
    if (k == 0) continue;
    const Matrix<double> gram = r.transpose() * r;
    double worst_diagonal = 0, worst_gram = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(device.pivots[std::size_t(j)], host.pivots[std::size_t(j)]) << "step " << j;
      const double rd_jj = std::fabs(device.r[std::size_t(j + j * k)]),
                   rh_jj = std::fabs(host.r[std::size_t(j + j * k)]);
      worst_diagonal = std::max(worst_diagonal, std::fabs(rd_jj - rh_jj) / rh_jj);
    }
    // (R P)^T (R P)'s rows 0 .. k-1 against [R11 R12]^T [R11 R12]'s, relative to sigma_max^2.
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = i; j < n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l <= std::min(i, k - 1); ++l)
          sum += device.r[std::size_t(l + i * k)] * device.r[std::size_t(l + j * k)];
        const double exact = gram(device.pivots[std::size_t(i)], device.pivots[std::size_t(j)]);
        worst_gram = std::max(worst_gram, std::fabs(sum - exact) / (host.sigma_max * host.sigma_max));
      }
    const double u = std::numeric_limits<double>::epsilon() / 2;
    // kappa(R11) <= 2^12: |r_jj| of the Gram factorization within n u 2^24 relative.
    EXPECT_LE(worst_diagonal, double(n) * u * 0x1p24);
    EXPECT_LE(worst_gram, 8 * double(n) * u);
  }
}

// The options of the mixed-precision path: these tests are about the FP32 QR and its refinement,
// which Auto (the default) leaves to the unrefined FP64 QR solve on device problems this small
// (LeastSquaresOptions::auto_min_work).
LeastSquaresOptions fp32_path() {
  LeastSquaresOptions options;
  options.factorization = Precision::FP32;
  return options;
}

// least_squares() on a wide device matrix (n >= 1024): the FP32 QR's updates on cublas-fp16x3
// (V^T C on tf32tf32) where A's columns are scaled alike, on cublas-sgemm where one column is
// 2^-13 of the others; either way x agrees with the FP64 QR's (Eigen's, on the host) to FP64's
// attainable accuracy, u (kappa + kappa^2 ||r|| / (||A|| ||x||)).
TEST(GpuLeastSquares, WideMatricesTakeTheFp16x3UpdatesWhereColumnsAreScaledAlike) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = 4096, n = 1024;
  for (const double kappa : {1e1, 1e5})
    for (const bool scaled_column : {false, true}) {
      if (scaled_column && kappa > 10) continue;  // beyond, the FP32 R could not tell its rank
      Matrix<double> u(m, n), v(n, n), z(m, 1), x_true(n, 1);
      fill_random(host_view(u.data(), m, n, m), RandomSpec::uniform(-1, 1, 71));
      fill_random(host_view(v.data(), n, n, n), RandomSpec::uniform(-1, 1, 72));
      fill_random(host_view(z.data(), m, 1, m), RandomSpec::uniform(-1, 1, 73));
      fill_random(host_view(x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, 74));
      u = u.householderQr().householderQ() * Matrix<double>::Identity(m, n);
      v = v.householderQr().householderQ() * Matrix<double>::Identity(n, n);
      Eigen::VectorXd sigma(n);
      for (std::int64_t i = 0; i < n; ++i) sigma[i] = std::pow(kappa, -double(i) / double(n - 1));
      Matrix<double> a = u * sigma.asDiagonal() * v.transpose();
      if (scaled_column) a.col(17) *= 0x1p-13;
      z -= u * (u.transpose() * z);
      const Matrix<double> b = a * x_true + 0.1 * z;
      DeviceBuffer<double> da(ctx, m * n), db(ctx, m), dx(ctx, n);
      da.copy_from_host(a.data(), m * n);
      db.copy_from_host(b.data(), m);
      const LeastSquaresReport r =
          least_squares(ctx, device_view<const double>(da.data(), m, n, m),
                        device_view<const double>(db.data(), m, 1, m), device_view(dx.data(), n, 1, n), fp32_path());
      Matrix<double> x(n, 1);
      ctx.synchronize();
      dx.copy_to_host(x.data(), n);
      const Matrix<double> x64 = a.householderQr().solve(b);
      const double difference = (x - x64).norm() / x64.norm();
      const double k = kappa * (scaled_column ? 0x1p13 : 1.0);  // at most
      const double bound = 64 * 0x1p-53 * (k + k * k * (b - a * x64).norm() / (a.norm() * x64.norm()));
      std::printf("kappa %.0e%s: %s, updates %s, ||x - x_fp64qr|| / ||x_fp64qr|| %.2e (bound %.2e)\n", kappa,
                  scaled_column ? ", one column 2^-13" : "", r.path().c_str(), r.attempts[0].update_backend.c_str(),
                  difference, bound);
      EXPECT_TRUE(r.converged) << r.path();
      EXPECT_EQ(r.path().rfind("fp32/cgls(", 0), 0u) << r.path();
      EXPECT_EQ(r.attempts[0].update_backend, scaled_column ? "cublas-sgemm" : "cublas-fp16x3 (V^T C: tf32tf32)");
      EXPECT_LE(difference, bound) << r.path();
    }
}

// least_squares() on device matrices: the FP32 QR refined to the FP64 QR's accuracy (against a
// long double QR) and to the host solver's x; an ill-conditioned A (kappa 1e9) solved by the
// Cholesky QR preconditioned with the FP32 R, one beyond it (1e12) by the FP64 Householder QR,
// each on the host's path; a rank-deficient one reported; B, A untouched.
// A = U diag(sigma) V^T, m x n, with random orthonormal U and V (seeds seed, seed + 1) and
// singular values sigma_i = kappa^(-i / (n - 1)); U kept for residuals orthogonal to A's range.
struct SingularValueMatrix {
  Matrix<double> a, u;
};
SingularValueMatrix singular_value_matrix(std::int64_t m, std::int64_t n, double kappa, std::uint64_t seed) {
  Matrix<double> u(m, n), v(n, n);
  fill_random(host_view(u.data(), m, n, m), RandomSpec::uniform(-1, 1, seed));
  fill_random(host_view(v.data(), n, n, n), RandomSpec::uniform(-1, 1, seed + 1));
  u = u.householderQr().householderQ() * Matrix<double>::Identity(m, n);
  v = v.householderQr().householderQ() * Matrix<double>::Identity(n, n);
  Eigen::VectorXd sigma(n);
  for (std::int64_t i = 0; i < n; ++i) sigma[i] = std::pow(kappa, -double(i) / double(n - 1));
  return {u * sigma.asDiagonal() * v.transpose(), u};
}

// LeastSquares on device matrices: a later solve of other right-hand sides refines with the
// factors that worked (one attempt, factor_seconds 0) and gives least_squares()'s X for them,
// with cheap factors (kappa 1e3) and with the FP64 ones the path reached (kappa 1e9).
TEST(GpuLeastSquares, FactorOnceSolvesLaterRightHandSidesWithTheFactorsThatWorked) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = full_or_small(1500, 500), n = full_or_small(150, 90);
  for (const double kappa : {1e3, 1e9}) {
    SCOPED_TRACE("kappa " + std::to_string(kappa));
    const Matrix<double> a = singular_value_matrix(m, n, kappa, 71).a;
    DeviceBuffer<double> da(ctx, m * n);
    da.copy_from_host(a.data(), m * n);
    LeastSquares ls(ctx, device_view<const double>(da.data(), m, n, m), fp32_path());
    for (const std::int64_t k : {2, 3}) {
      Matrix<double> b(m, k);
      fill_random(host_view(b.data(), m, k, m), RandomSpec::uniform(-1, 1, 73 + k));
      DeviceBuffer<double> db(ctx, m * k), dx(ctx, n * k), dx_alone(ctx, n * k);
      db.copy_from_host(b.data(), m * k);
      const LeastSquaresReport r = ls.solve(device_view<const double>(db.data(), m, k, m), device_view(dx.data(), n, k, n));
      const LeastSquaresReport alone = least_squares(ctx, device_view<const double>(da.data(), m, n, m),
                                                     device_view<const double>(db.data(), m, k, m),
                                                     device_view(dx_alone.data(), n, k, n), fp32_path());
      Matrix<double> x(n, k), x_alone(n, k);
      ctx.synchronize();
      dx.copy_to_host(x.data(), n * k);
      dx_alone.copy_to_host(x_alone.data(), n * k);
      EXPECT_TRUE(r.converged) << r.path();
      // Within the solution's FP64 accuracy (cuBLAS may order a product's sums differently from
      // one call to the next).
      EXPECT_LE((x - x_alone).norm(), 64 * kappa * 0x1p-53 * x_alone.norm()) << r.path() << " against " << alone.path();
      EXPECT_EQ(ls.precision(), kappa < 1e6 ? Precision::FP32 : Precision::FP64) << r.path();
      if (k == 3) {
        ASSERT_EQ(r.attempts.size(), 1u) << r.path();
        EXPECT_EQ(r.attempts[0].factor_seconds, 0.0);
      }
    }
  }
}

// least_squares() on device copies of A and B: the report and X on the host, A and B checked
// untouched.
struct DeviceSolved {
  LeastSquaresReport report;
  Matrix<double> x;
};
DeviceSolved solve_on_device(Context& ctx, const Matrix<double>& a, const Matrix<double>& b,
                             const LeastSquaresOptions& options = fp32_path()) {
  const std::int64_t m = a.rows(), n = a.cols(), k = b.cols();
  DeviceBuffer<double> da(ctx, m * n), db(ctx, m * k), dx(ctx, n * k);
  da.copy_from_host(a.data(), m * n);
  db.copy_from_host(b.data(), m * k);
  DeviceSolved out{
      least_squares(ctx, device_view<const double>(da.data(), m, n, m), device_view<const double>(db.data(), m, k, m),
                    device_view(dx.data(), n, k, n), options),
      Matrix<double>(n, k)};
  Matrix<double> a_after(m, n), b_after(m, k);
  ctx.synchronize();
  dx.copy_to_host(out.x.data(), n * k);
  da.copy_to_host(a_after.data(), m * n);
  db.copy_to_host(b_after.data(), m * k);
  EXPECT_EQ(a_after, a);
  EXPECT_EQ(b_after, b);
  return out;
}

TEST(GpuLeastSquares, DeviceSolverMatchesTheHostSolver) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = full_or_small(2000, 600), n = full_or_small(200, 140), k = 2;
  for (const double kappa : {1e4, 1e9, 1e12}) {
    Matrix<double> z(m, k), x_true(n, k);
    fill_random(host_view(z.data(), m, k, m), RandomSpec::uniform(-1, 1, 63));
    fill_random(host_view(x_true.data(), n, k, n), RandomSpec::uniform(-1, 1, 64));
    const SingularValueMatrix made = singular_value_matrix(m, n, kappa, 61);
    const Matrix<double>& a = made.a;
    const Matrix<double>& u = made.u;
    z -= u * (u.transpose() * z);
    const Matrix<double> b = a * x_true + 0.3 * z;
    const DeviceSolved solved = solve_on_device(ctx, a, b);
    const LeastSquaresReport& device = solved.report;
    Matrix<double> x = solved.x, x_host(n, k);
    const LeastSquaresReport host =
        least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                      host_view(x_host.data(), n, k, n));
    std::printf("kappa %.0e: device %s, host %s\n", kappa, device.path().c_str(), host.path().c_str());
    EXPECT_TRUE(device.converged) << device.path();
    ASSERT_EQ(device.attempts.size(), host.attempts.size()) << device.path() << " / " << host.path();
    for (std::size_t i = 0; i < host.attempts.size(); ++i) {
      EXPECT_EQ(device.attempts[i].cholesky_qr, host.attempts[i].cholesky_qr) << device.path() << " / " << host.path();
      EXPECT_EQ(device.attempts[i].cgls, host.attempts[i].cgls) << device.path() << " / " << host.path();
    }
    EXPECT_EQ(device.fell_back, kappa > 1e6) << device.path();
    if (kappa == 1e9) EXPECT_TRUE(device.attempts.back().cholesky_qr) << device.path();
    const Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic> x_ref =
        a.cast<long double>().householderQr().solve(b.cast<long double>());
    const Matrix<double> x64 = a.householderQr().solve(b);
    for (std::int64_t j = 0; j < k; ++j) {
      const long double norm = x_ref.col(j).norm();
      const double error = double((x.col(j).cast<long double>() - x_ref.col(j)).norm() / norm);
      const double fp64_error = double((x64.col(j).cast<long double>() - x_ref.col(j)).norm() / norm);
      EXPECT_LE(error, 10 * fp64_error + 0x1p-50) << "kappa " << kappa << ", column " << j;
      EXPECT_LE((x.col(j) - x_host.col(j)).norm() / x_host.col(j).norm(), 20 * fp64_error + 0x1p-50)
          << "kappa " << kappa << ", column " << j << ": device and host solutions";
      // Two FP64 evaluations of b - A x differ by rounding of order u |A| |x| (||x|| ~ 1e11 at
      // kappa 1e12).
      EXPECT_NEAR(device.residual_norms[j], (b.col(j) - a * x.col(j)).norm(),
                  1e-12 * (b.col(j).norm() + a.norm() * x.col(j).norm()));
    }
    if (kappa > 1e6) continue;
    // GMRES-LS alone and the plain steps (the default is CGLS) on the device: the same accuracy as
    // on the host, the plain steps on the same path.
    for (const auto refinement : {LeastSquaresOptions::Refinement::Gmres, LeastSquaresOptions::Refinement::Augmented}) {
      const bool gmres = refinement == LeastSquaresOptions::Refinement::Gmres;
      LeastSquaresOptions options = fp32_path();
      options.refinement = refinement;
      const DeviceSolved again = solve_on_device(ctx, a, b, options);
      const LeastSquaresReport& on_device = again.report;
      x = again.x;
      const LeastSquaresReport on_host =
          least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                        host_view(x_host.data(), n, k, n), options);
      std::printf("kappa %.0e, %s: device %s, host %s\n", kappa, gmres ? "GMRES-LS" : "plain steps",
                  on_device.path().c_str(), on_host.path().c_str());
      EXPECT_EQ(on_device.path().rfind(gmres ? "fp32/gmres(" : "fp32/augmented(", 0), 0u) << on_device.path();
      if (!gmres) EXPECT_EQ(on_device.path(), on_host.path());
      for (std::int64_t j = 0; j < k; ++j) {
        const long double norm = x_ref.col(j).norm();
        const double error = double((x.col(j).cast<long double>() - x_ref.col(j)).norm() / norm);
        const double fp64_error = double((x64.col(j).cast<long double>() - x_ref.col(j)).norm() / norm);
        EXPECT_LE(error, 10 * fp64_error + 0x1p-50)
            << (gmres ? "GMRES-LS" : "plain steps") << ", kappa " << kappa << ", column " << j;
      }
    }
  }
  // Two equal columns: rank deficient, reported by the FP64 QR on the device too.
  Matrix<double> a(300, 10), b(300, 1), x(10, 1);
  fill_random(host_view(a.data(), 300, 10, 300), RandomSpec::uniform(-1, 1, 65));
  fill_random(host_view(b.data(), 300, 1, 300), RandomSpec::uniform(-1, 1, 66));
  a.col(7) = a.col(1);
  DeviceBuffer<double> da(ctx, 3000), db(ctx, 300), dx(ctx, 10);
  da.copy_from_host(a.data(), 3000);
  db.copy_from_host(b.data(), 300);
  // A scaled by 2^560 and B by 2^520: A^T r would overflow but for the scaled residual; the
  // solution is the unscaled one times 2^-40.
  {
    Matrix<double> a2(300, 10), b2(300, 1), x2(10, 1), x2_scaled(10, 1);
    fill_random(host_view(a2.data(), 300, 10, 300), RandomSpec::uniform(-1, 1, 67));
    fill_random(host_view(b2.data(), 300, 1, 300), RandomSpec::uniform(-1, 1, 68));
    const Matrix<double> a2s = a2 * std::ldexp(1.0, 560), b2s = b2 * std::ldexp(1.0, 520);
    DeviceBuffer<double> da2(ctx, 3000), db2(ctx, 300), dx2(ctx, 10);
    da2.copy_from_host(a2s.data(), 3000);
    db2.copy_from_host(b2s.data(), 300);
    const LeastSquaresReport scaled = least_squares(ctx, device_view<const double>(da2.data(), 300, 10, 300),
                                                    device_view<const double>(db2.data(), 300, 1, 300),
                                                    device_view(dx2.data(), 10, 1, 10), fp32_path());
    ctx.synchronize();
    dx2.copy_to_host(x2_scaled.data(), 10);
    x2 = a2.householderQr().solve(b2);
    EXPECT_TRUE(scaled.converged) << scaled.path();
    EXPECT_LE((x2_scaled * std::ldexp(1.0, 40) - x2).norm() / x2.norm(), 1e-13) << scaled.path();
  }
  // Rank deficient: under FullRank the FP64 QR reports it; by default the rank-revealing attempt
  // gives the host's minimum-norm solution.
  LeastSquaresOptions full_rank = fp32_path();
  full_rank.rank_deficient = LeastSquaresOptions::RankDeficiency::FullRank;
  EXPECT_THROW(
      least_squares(ctx, device_view<const double>(da.data(), 300, 10, 300),
                    device_view<const double>(db.data(), 300, 1, 300), device_view(dx.data(), 10, 1, 10), full_rank),
      RankDeficientMatrix);
  const LeastSquaresReport on_device =
      least_squares(ctx, device_view<const double>(da.data(), 300, 10, 300),
                    device_view<const double>(db.data(), 300, 1, 300), device_view(dx.data(), 10, 1, 10), fp32_path());
  const LeastSquaresReport on_host =
      least_squares(ctx, host_view<const double>(a.data(), 300, 10, 300),
                    host_view<const double>(b.data(), 300, 1, 300), host_view(x.data(), 10, 1, 10));
  Matrix<double> x_device(10, 1);
  ctx.synchronize();
  dx.copy_to_host(x_device.data(), 10);
  std::printf("two equal columns: device %s, host %s\n", on_device.path().c_str(), on_host.path().c_str());
  EXPECT_TRUE(on_device.converged) << on_device.path();
  EXPECT_EQ(on_device.rank, 9) << on_device.path();
  // The same path up to the refinement's iteration counts (the device's FP32 R rounds otherwise).
  const auto attempts_of = [](const std::string& path) { return path.substr(0, path.find("/cgls(")); };
  EXPECT_EQ(attempts_of(on_device.path()), attempts_of(on_host.path()));
  EXPECT_EQ(on_device.rank, on_host.rank);
  // Both within FP64's attainable accuracy 64 u (kappa + kappa^2 ||r|| / (||A|| ||x||)) of the
  // solution (kappa of the kept columns from the host's estimates; ||r|| / (||A|| ||x||) <= 1 here).
  const double kappa = on_host.sigma_max_estimate / on_host.sigma_kept_estimate;
  EXPECT_LE((x_device - x).norm(), 128 * 0x1p-53 * (kappa + kappa * kappa) * x.norm()) << on_device.path();

  // The dummy-variable trap with 30 groups of about 10 rows (an intercept, every group's indicator
  // and 30 continuous columns, 300 x 61): FP32 factors may put the dependent column's |r_jj| above
  // their undecided level; the minimum-norm solution either way, x orthogonal to the null vector
  // z = e_0 - sum of the indicators' e_q.
  const std::int64_t groups = 30, n3 = 1 + 2 * groups;
  Matrix<double> a3(300, n3), draws(300, groups + 1), b3(300, 1), x3(n3, 1), x3_device(n3, 1), z(n3, 1);
  fill_random(host_view(draws.data(), 300, groups + 1, 300), RandomSpec::uniform(-1, 1, 31));
  fill_random(host_view(b3.data(), 300, 1, 300), RandomSpec::uniform(-1, 1, 34));
  a3.setZero();
  for (std::int64_t i = 0; i < 300; ++i) {
    a3(i, 0) = 1;
    a3(i, 1 + std::int64_t(std::floor((draws(i, groups) + 1) / 2 * double(groups))) % groups) = 1;
    for (std::int64_t q = 0; q < groups; ++q) a3(i, 1 + groups + q) = draws(i, q);
  }
  z.setZero();
  z(0) = 1;
  for (std::int64_t q = 0; q < groups; ++q) z(1 + q) = -1;
  DeviceBuffer<double> da3(ctx, 300 * n3), db3(ctx, 300), dx3(ctx, n3);
  da3.copy_from_host(a3.data(), std::size_t(300 * n3));
  db3.copy_from_host(b3.data(), 300);
  const LeastSquaresReport trap_device = least_squares(ctx, device_view<const double>(da3.data(), 300, n3, 300),
                                                       device_view<const double>(db3.data(), 300, 1, 300),
                                                       device_view(dx3.data(), n3, 1, n3), fp32_path());
  const LeastSquaresReport trap_host =
      least_squares(ctx, host_view<const double>(a3.data(), 300, n3, 300),
                    host_view<const double>(b3.data(), 300, 1, 300), host_view(x3.data(), n3, 1, n3));
  ctx.synchronize();
  dx3.copy_to_host(x3_device.data(), std::size_t(n3));
  std::printf("dummy-variable trap, 30 groups: device %s, host %s\n", trap_device.path().c_str(),
              trap_host.path().c_str());
  EXPECT_TRUE(trap_device.converged) << trap_device.path();
  EXPECT_TRUE(trap_host.converged) << trap_host.path();
  // The FP32 attempt itself must not settle on a solution (its FP64 dependence test, or its
  // undecided rank, hands over).
  EXPECT_TRUE(trap_device.path().rfind("fp32[rank deficient]", 0) == 0 ||
              trap_device.path().rfind("fp32[rank undecided]", 0) == 0)
      << trap_device.path();
  EXPECT_EQ(trap_device.rank, n3 - 1) << trap_device.path();
  EXPECT_EQ(trap_host.rank, n3 - 1) << trap_host.path();
  EXPECT_LE(std::fabs(z.col(0).dot(x3_device.col(0))), 1e-12 * z.norm() * x3_device.norm()) << trap_device.path();
  EXPECT_LE((x3_device - x3).norm(), 1e-12 * x3.norm()) << trap_device.path();
}

// Many dependent columns and several right-hand sides (the block refinements of the
// rank-revealing attempt: W for every dropped column at once, the solutions of all of B): 40
// independent columns and 16 combinations of them, interleaved, a zero right-hand side among
// three. The device finds the host's rank and minimum-norm solutions, x orthogonal to A's null
// space, and x = 0 for b = 0.
TEST(GpuLeastSquares, ManyDependentColumnsAndRightHandSidesMatchTheHost) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = 500, kept = 40, dependent = 16, n = kept + dependent, k = 3;
  const Matrix<double> basis = singular_value_matrix(m, kept, 1e3, 91).a;
  Matrix<double> mix(kept, dependent), a(m, n), b(m, k), x(n, k), x_device(n, k), null(n, dependent);
  fill_random(host_view(mix.data(), kept, dependent, kept), RandomSpec::uniform(-1, 1, 92));
  fill_random(host_view(b.data(), m, k, m), RandomSpec::uniform(-1, 1, 93));
  b.col(1).setZero();
  // Column 3 q + 3 of A is dependent (q < 16), the others are the basis in order.
  std::vector<std::int64_t> place_of_basis, place_of_dependent;
  for (std::int64_t j = 0; j < n; ++j)
    (j % 3 == 2 && std::int64_t(place_of_dependent.size()) < dependent ? place_of_dependent : place_of_basis)
        .push_back(j);
  ASSERT_EQ(std::int64_t(place_of_basis.size()), kept);
  const Matrix<double> combinations = basis * mix;
  null.setZero();
  for (std::int64_t q = 0; q < kept; ++q) a.col(place_of_basis[std::size_t(q)]) = basis.col(q);
  for (std::int64_t q = 0; q < dependent; ++q) {
    a.col(place_of_dependent[std::size_t(q)]) = combinations.col(q);
    // A null vector: the combination minus its recipe.
    null(place_of_dependent[std::size_t(q)], q) = 1;
    for (std::int64_t l = 0; l < kept; ++l) null(place_of_basis[std::size_t(l)], q) = -mix(l, q);
  }
  DeviceBuffer<double> da(ctx, std::size_t(m * n)), db(ctx, std::size_t(m * k)), dx(ctx, std::size_t(n * k));
  da.copy_from_host(a.data(), std::size_t(m * n));
  db.copy_from_host(b.data(), std::size_t(m * k));
  const LeastSquaresReport on_device =
      least_squares(ctx, device_view<const double>(da.data(), m, n, m), device_view<const double>(db.data(), m, k, m),
                    device_view(dx.data(), n, k, n));
  const LeastSquaresReport on_host =
      least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                    host_view(x.data(), n, k, n));
  ctx.synchronize();
  dx.copy_to_host(x_device.data(), std::size_t(n * k));
  std::printf("%lld dependent columns, %lld right-hand sides: device %s, host %s\n", static_cast<long long>(dependent),
              static_cast<long long>(k), on_device.path().c_str(), on_host.path().c_str());
  EXPECT_TRUE(on_device.converged) << on_device.path();
  EXPECT_TRUE(on_host.converged) << on_host.path();
  EXPECT_EQ(on_device.rank, kept) << on_device.path();
  EXPECT_EQ(on_host.rank, kept) << on_host.path();
  for (std::int64_t j = 0; j < k; ++j) {
    const std::string label = on_device.path() + ", column " + std::to_string(j);
    EXPECT_LE((null.transpose() * x_device.col(j)).norm(), 1e-12 * null.norm() * x_device.col(j).norm()) << label;
    EXPECT_LE((x_device.col(j) - x.col(j)).norm(), 1e-12 * x.col(j).norm()) << label;
  }
  EXPECT_EQ(x_device.col(1).norm(), 0.0) << on_device.path();
}

// Auto (the default) on device problems below auto_min_work: one FP64 QR solve by cuSOLVER,
// unrefined ("fp64/unrefined"), at the FP64 QR's accuracy, a zero right-hand side giving x = 0;
// a later solve reuses the factors; auto_min_work 0 takes the FP32 path instead; a duplicated
// column is found by the FP64 factors and goes to the rank-revealing attempt.
TEST(GpuLeastSquares, SmallProblemsTakeTheUnrefinedFp64QrSolve) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = 700, n = 60, k = 3;
  const double kappa = 1e6;
  const SingularValueMatrix made = singular_value_matrix(m, n, kappa, 95);
  const Matrix<double>& a = made.a;
  Matrix<double> b(m, k);
  fill_random(host_view(b.data(), m, k, m), RandomSpec::uniform(-1, 1, 96));
  b.col(2).setZero();
  const Matrix<double> x64 = a.householderQr().solve(b);
  DeviceBuffer<double> da(ctx, std::size_t(m * n)), db(ctx, std::size_t(m * k)), dx(ctx, std::size_t(n * k));
  da.copy_from_host(a.data(), std::size_t(m * n));
  db.copy_from_host(b.data(), std::size_t(m * k));
  LeastSquares ls(ctx, device_view<const double>(da.data(), m, n, m));
  Matrix<double> x(n, k);
  for (int solve = 0; solve < 2; ++solve) {
    const LeastSquaresReport r =
        ls.solve(device_view<const double>(db.data(), m, k, m), device_view(dx.data(), n, k, n));
    ctx.synchronize();
    dx.copy_to_host(x.data(), std::size_t(n * k));
    std::printf("%lld x %lld, kappa %.0e, solve %d: %s\n", static_cast<long long>(m), static_cast<long long>(n), kappa,
                solve, r.path().c_str());
    EXPECT_TRUE(r.converged) << r.path();
    EXPECT_EQ(r.path(), "fp64/unrefined");
    ASSERT_EQ(r.attempts.size(), 1u);
    EXPECT_TRUE(r.attempts[0].unrefined);
    EXPECT_EQ(r.attempts[0].update_backend, "cusolver-dgeqrf");
    if (solve == 1) EXPECT_EQ(r.attempts[0].factor_seconds, 0.0);
    for (std::int64_t j = 0; j < 2; ++j) {
      const double residual = (b.col(j) - a * x64.col(j)).norm() / (a.norm() * x64.col(j).norm());
      const double bound = 64 * 0x1p-53 * (kappa + kappa * kappa * residual);
      EXPECT_LE((x.col(j) - x64.col(j)).norm(), bound * x64.col(j).norm()) << "column " << j;
      EXPECT_NEAR(r.residual_norms[std::size_t(j)], (b.col(j) - a * x.col(j)).norm(),
                  1e-12 * (b.col(j).norm() + a.norm() * x.col(j).norm()));
    }
    EXPECT_EQ(x.col(2).norm(), 0.0);
  }
  EXPECT_EQ(ls.precision(), Precision::FP64);
  // auto_min_work 0: the mixed-precision path at any size.
  LeastSquaresOptions always_cheap;
  always_cheap.auto_min_work = 0;
  const LeastSquaresReport cheap =
      least_squares(ctx, device_view<const double>(da.data(), m, n, m), device_view<const double>(db.data(), m, k, m),
                    device_view(dx.data(), n, k, n), always_cheap);
  EXPECT_EQ(cheap.path().rfind("fp32", 0), 0u) << cheap.path();
  // A duplicated column: rank n - 1 from the rank-revealing attempt after the FP64 factors.
  Matrix<double> deficient = a;
  deficient.col(n - 1) = deficient.col(3);
  da.copy_from_host(deficient.data(), std::size_t(m * n));
  const LeastSquaresReport found =
      least_squares(ctx, device_view<const double>(da.data(), m, n, m), device_view<const double>(db.data(), m, k, m),
                    device_view(dx.data(), n, k, n));
  std::printf("a duplicated column: %s\n", found.path().c_str());
  EXPECT_TRUE(found.converged) << found.path();
  EXPECT_EQ(found.rank, n - 1) << found.path();
  EXPECT_EQ(found.path().rfind("fp64[rank deficient] -> rrqr[rank " + std::to_string(n - 1) + "]", 0), 0u)
      << found.path();
}

// Ridge regression on device matrices (LeastSquaresOptions::ridge: the stacked problem
// [A; sqrt(lambda) I] built by copies in device memory): the host's solution, for a tall and a
// wide A (the stacked problem is tall for either), inputs untouched.
TEST(GpuLeastSquares, RidgeRegressionMatchesTheHost) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  for (const bool wide : {false, true}) {
    const std::int64_t rows = full_or_small(900, 400), cols = full_or_small(150, 90);
    const Matrix<double> made = singular_value_matrix(rows, cols, 1e6, 81).a;
    const Matrix<double> a = wide ? Matrix<double>(made.transpose()) : made;
    const std::int64_t m = a.rows(), n = a.cols(), k = 2;
    Matrix<double> b(m, k);
    fill_random(host_view(b.data(), m, k, m), RandomSpec::uniform(-1, 1, 82));
    LeastSquaresOptions options = fp32_path();
    options.ridge = 1e-6;
    const DeviceSolved solved = solve_on_device(ctx, a, b, options);
    const LeastSquaresReport& device = solved.report;
    const Matrix<double>& x = solved.x;
    Matrix<double> x_host(n, k);
    const LeastSquaresReport host =
        least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                      host_view(x_host.data(), n, k, n), options);
    std::printf("%s: device %s, host %s\n", wide ? "wide" : "tall", device.path().c_str(), host.path().c_str());
    EXPECT_TRUE(device.converged) << device.path();
    EXPECT_TRUE(host.converged) << host.path();
    // Both at the stacked problem's FP64 accuracy: kappa([A; sqrt(lambda) I]) <= 1 / sqrt(lambda)
    // = 1e3, its square bounding the residual's share.
    const double tolerance = 64 * 1e6 * 0x1p-53;
    for (std::int64_t j = 0; j < k; ++j) {
      EXPECT_LE((x.col(j) - x_host.col(j)).norm(), tolerance * x_host.col(j).norm()) << (wide ? "wide" : "tall");
      EXPECT_NEAR(device.residual_norms[std::size_t(j)], (b.col(j) - a * x.col(j)).norm(),
                  1e-12 * (b.col(j).norm() + a.norm() * x.col(j).norm()));
    }
  }
}

}  // namespace
