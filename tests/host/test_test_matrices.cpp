// SPDX-License-Identifier: BSD-3-Clause
// The LAWN-41 test-matrix families: spectra checked by Eigen's SVD / eigensolvers on small n.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <vector>

#include "mixsolve/core/error.hpp"
#include "mixsolve/matgen/test_matrices.hpp"

namespace {

using namespace mixsolve;

Eigen::MatrixXd generate(const TestMatrixSpec& spec, std::int64_t n) {
  Eigen::MatrixXd a(n, n);
  generate_test_matrix(spec, host_view(a.data(), n, n, n));
  return a;
}

TEST(TestMatrices, SingularValuesFollowTheSpectrumForEveryFamily) {
  const std::int64_t n = 40;
  // Backward-stable SVD / eigensolver of an exactly-known product: absolute error ~ n eps ||A||.
  const double tolerance = 50 * n * 0x1p-53;
  for (MatrixFamily f : {MatrixFamily::Svd, MatrixFamily::Poev, MatrixFamily::Heev})
    for (Spectrum s : {Spectrum::Arith, Spectrum::Geo, Spectrum::Cluster0, Spectrum::Cluster1, Spectrum::Logrand})
      for (double cond : {1e2, 1e8}) {
        TestMatrixSpec spec;
        spec.family = f;
        spec.spectrum = s;
        spec.cond = cond;
        spec.seed = 7;
        SCOPED_TRACE(spec.name());
        const Eigen::MatrixXd a = generate(spec, n);
        const std::vector<double> expected = spectrum_values(spec, n);
        EXPECT_DOUBLE_EQ(expected.front(), 1.0);
        EXPECT_NEAR(expected.back(), 1.0 / cond, 1e-15);
        Eigen::VectorXd got;
        if (f == MatrixFamily::Svd) {
          got = Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues();
        } else {
          EXPECT_EQ((a - a.transpose()).norm(), 0.0) << "symmetric";
          Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a);
          got = eig.eigenvalues().cwiseAbs();
          std::sort(got.data(), got.data() + n, std::greater<double>());
          if (f == MatrixFamily::Poev) EXPECT_GT(eig.eigenvalues().minCoeff(), 0.0) << "positive definite";
          if (f == MatrixFamily::Heev) EXPECT_LT(eig.eigenvalues().minCoeff(), 0.0) << "indefinite";
        }
        for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(got(i), expected[i], tolerance) << "singular value " << i;
      }
}

TEST(TestMatrices, GeoSpectrumIsGeometricAndArithIsArithmetic) {
  TestMatrixSpec spec;
  spec.cond = 1e6;
  spec.spectrum = Spectrum::Geo;
  const auto geo = spectrum_values(spec, 7);
  for (int i = 1; i < 7; ++i) EXPECT_NEAR(geo[i] / geo[i - 1], 0.1, 1e-14);
  spec.spectrum = Spectrum::Arith;
  const auto arith = spectrum_values(spec, 5);
  for (int i = 1; i < 5; ++i) EXPECT_NEAR(arith[i - 1] - arith[i], (1 - 1e-6) / 4, 1e-15);
}

TEST(TestMatrices, DominantAndScaledVariants) {
  TestMatrixSpec spec = TestMatrixSpec::parse("svd_geo_dominant");
  spec.cond = 1e10;
  spec.scale = 0x1p100;
  const std::int64_t n = 30;
  const Eigen::MatrixXd a = generate(spec, n);
  for (std::int64_t i = 0; i < n; ++i) {
    const double off = a.row(i).cwiseAbs().sum() - std::fabs(a(i, i));
    EXPECT_GE(std::fabs(a(i, i)), off) << "row " << i << " is diagonally dominant";
  }
  EXPECT_GT(a.cwiseAbs().maxCoeff(), 0x1p90) << "scaled";
}

TEST(TestMatrices, NamesParseAndBadNamesAreErrors) {
  const TestMatrixSpec s = TestMatrixSpec::parse("heev_cluster1");
  EXPECT_EQ(s.family, MatrixFamily::Heev);
  EXPECT_EQ(s.spectrum, Spectrum::Cluster1);
  EXPECT_FALSE(s.dominant);
  EXPECT_THROW(TestMatrixSpec::parse("svd_lin"), InvalidArgument);
  EXPECT_THROW(TestMatrixSpec::parse("gen_geo"), InvalidArgument);
  EXPECT_THROW(TestMatrixSpec::parse("svd_geo_sparse"), InvalidArgument);
  TestMatrixSpec bad;
  bad.cond = 0.5;
  EXPECT_THROW(spectrum_values(bad, 4), InvalidArgument);
}

}  // namespace
