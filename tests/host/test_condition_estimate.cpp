// SPDX-License-Identifier: BSD-3-Clause
// The 1-norm estimator ([H88] Alg. 4.1, LAPACK's DLACN2), the inverse-norm and reciprocal
// condition helpers (DGECON) and the normwise forward error bound of
// solvers/src/refinement/condition_estimate.hpp, against exact norms computed from explicit matrices.
//
// Measured with these generators (300 seeds per family and size, n = 2, 7, 100, 301), estimate /
// exact ||B||_1: uniform(-1, 1) min 0.50, median 0.90-1.0, exact (to rounding) in 0-90% of the
// cases, fewer at large n, where all columns have similar norms and Hager's local maximum is a
// column within ~15% of the largest; wide-range entries min 0.47, median 0.80-1.0; inverses of
// uniform(-1, 1) matrices min 0.41, median 1.0, exact in 84-92%; nonnegative matrices always
// exact. Products 4 to 9 (11 in 1 of 2000 seeds of n = 8 inverses), most often 5. Against the
// reference LAPACK's dlacn2 (5400 cases, n = 1 .. 100): the same estimates to 2.2e-16 relative and
// the same product counts.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "refinement/condition_estimate.hpp"
#include "reference_solvers.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/test_matrices.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::solvers_detail;
using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr double kU = std::numeric_limits<double>::epsilon() / 2;  // unit roundoff 2^-53

// Rounding slack of an estimate against the exact norm of an explicit matrix: the estimate is
// ||fl(B v)||_1 / ||v||_1 for v = e/n, e_j or the alternating vector; the product B v carries
// gamma_n relative error per entry in |B||v| (exact for v = e_j), its sum gamma_(n-1), the
// alternating entries 1 + (i-1)/(n-1) two roundings, and the exact column sums gamma_(n-1):
// together at most (3n + 2) u to first order.
double rounding_slack(std::int64_t n) { return double(3 * n + 2) * kU; }

double norm1(const MatrixXd& b) { return b.cwiseAbs().colwise().sum().maxCoeff(); }
double norm_inf(const MatrixXd& b) { return b.cwiseAbs().rowwise().sum().maxCoeff(); }

LinearOperator product_with(const MatrixXd& b) {
  return [&b](std::vector<double>& x) {
    Eigen::Map<VectorXd> v(x.data(), Eigen::Index(x.size()));
    const VectorXd y = b * v;
    v = y;
  };
}
LinearOperator product_with_transpose(const MatrixXd& b) {
  return [&b](std::vector<double>& x) {
    Eigen::Map<VectorXd> v(x.data(), Eigen::Index(x.size()));
    const VectorXd y = b.transpose() * v;
    v = y;
  };
}

double estimate_of(const MatrixXd& b, int* products = nullptr) {
  return estimate_norm1(b.rows(), product_with(b), product_with_transpose(b), products);
}

// A^-1 and A^-T through an LU factorization with partial pivoting, as the engines apply them
// (the unblocked dgetf2 + dgetrs of reference_solvers.hpp, the same rounding on every machine).
template <typename Scalar>
struct LuInverse {
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  mixsolve::testing::LuFactors<Scalar> lu;
  explicit LuInverse(const MatrixXd& a) : lu(mixsolve::testing::lu_factor(Matrix(a.cast<Scalar>()))) {}
  LinearOperator inverse() const {
    return [this](std::vector<double>& x) { solve(x, false); };
  }
  LinearOperator inverse_transpose() const {
    return [this](std::vector<double>& x) { solve(x, true); };
  }
  void solve(std::vector<double>& x, bool transposed) const {
    Matrix v = Eigen::Map<const VectorXd>(x.data(), Eigen::Index(x.size())).cast<Scalar>();
    if (transposed)
      mixsolve::testing::lu_solve_transpose_in_place(lu, v);
    else
      mixsolve::testing::lu_solve_in_place(lu, v);
    Eigen::Map<VectorXd>(x.data(), Eigen::Index(x.size())) = v.template cast<double>();
  }
};

// A^-1 of the stored A to ~2^-62 relative (testing::reference_inverse: long double LU refined with
// exact residuals), the reference for ||A^-1|| up to cond ~1e15.
MatrixXd reference_inverse(const MatrixXd& a) {
  const mixsolve::testing::ReferenceSolution inv = mixsolve::testing::reference_inverse(a);
  EXPECT_TRUE(inv.converged) << "the reference inverse did not converge in " << inv.steps << " steps";
  return inv.x.cast<double>();
}

// B^-1 in FP64 by the unblocked LU: a matrix whose rounding is the same on every machine.
MatrixXd fp64_inverse(const MatrixXd& b) { return mixsolve::testing::lu_inverse(b); }

// Uniform(lo, hi) entries from the project's counter-based generator (core/random.hpp).
MatrixXd uniform_matrix(std::int64_t n, double lo, double hi, std::uint64_t seed) {
  MatrixXd a(n, n);
  const RandomSpec spec = RandomSpec::uniform(lo, hi, seed);
  for (std::int64_t k = 0; k < n * n; ++k) a.data()[k] = random_double(spec, std::uint64_t(k));
  return a;
}

// exp_rand(-10, 10) magnitudes with random signs: entries spread over 2^20, so column norms differ
// widely (as in Nanai & Fujimoto's (2021) phi matrices).
MatrixXd wide_range_matrix(std::int64_t n, std::uint64_t seed) {
  MatrixXd a(n, n);
  const RandomSpec spec = RandomSpec::exp_rand(-10, 10, seed);
  for (std::int64_t k = 0; k < n * n; ++k) {
    const double sign = random_bits(seed ^ 0x5165ull, std::uint64_t(k)) & 1 ? -1 : 1;
    a.data()[k] = sign * random_double(spec, std::uint64_t(k));
  }
  return a;
}

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0e", v);
  return buf;
}

MatrixXd svd_geo(std::int64_t n, double cond, std::uint64_t seed) {
  TestMatrixSpec spec;
  spec.spectrum = Spectrum::Geo;
  spec.cond = cond;
  spec.seed = seed;
  MatrixXd a(n, n);
  generate_test_matrix(spec, host_view(a.data(), n, n, n));
  return a;
}

MatrixXd hilbert(std::int64_t n) {
  MatrixXd a(n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) a(i, j) = 1.0 / double(i + j + 1);
  return a;
}

// The exact inverse of the n x n Hilbert matrix (integers; exact in int64 for n <= 10):
// (H^-1)_ij = (-1)^(i+j) (i+j-1) C(n+i-1, n-j) C(n+j-1, n-i) C(i+j-2, i-1)^2, 1-based.
MatrixXd hilbert_inverse(std::int64_t n) {
  const auto binomial = [](std::int64_t m, std::int64_t k) {
    std::int64_t c = 1;
    for (std::int64_t t = 1; t <= k; ++t) c = c * (m - k + t) / t;  // exact: c stays C(m - k + t, t)
    return c;
  };
  MatrixXd inv(n, n);
  for (std::int64_t i = 1; i <= n; ++i)
    for (std::int64_t j = 1; j <= n; ++j) {
      const std::int64_t c = binomial(i + j - 2, i - 1);
      const std::int64_t v = (i + j - 1) * binomial(n + i - 1, n - j) * binomial(n + j - 1, n - i) * c * c;
      inv(i - 1, j - 1) = double((i + j) % 2 == 0 ? v : -v);
    }
  return inv;
}

const std::int64_t kSizes[] = {1, 2, 7, 100, 301};
// Fewer seeds at n = 301 keep the test within about a second; the smaller sizes vary most.
int seeds_for(std::int64_t n) { return n > 100 ? 20 : 100; }

// Every estimate is ||B v||_1 / ||v||_1 for some v: never above ||B||_1 beyond rounding.
// Below, the brief's floor exact / 10 and the measured one: the smallest ratio was 0.41 with these
// generators (above) and 0.26 over 300 seeds of std::mt19937_64 inverses at n = 7, so exact / 5
// holds with room; "within 3x" does not hold for every matrix.
constexpr double kMeasuredFloor = 0.2;

void expect_lower_bound_within_floor(const MatrixXd& b, const std::string& what) {
  int products = 0;
  const double est = estimate_of(b, &products);
  const double exact = norm1(b);
  const std::int64_t n = b.rows();
  EXPECT_LE(est, exact * (1 + rounding_slack(n))) << what;
  EXPECT_GE(est, exact / 10) << what;
  EXPECT_GE(est, exact * kMeasuredFloor) << what;
  EXPECT_LE(products, kNorm1EstimateMaxProducts) << what;
  // n = 1 quits after B x; n >= 2 takes B x, B^T xi, one B e_j and the alternating vector at least.
  EXPECT_GE(products, n == 1 ? 1 : 4) << what;
}

// The checks above for each size of kSizes and its seeds; make(n, seed) draws the matrix.
void expect_lower_bounds_over_seeds(const std::string& family,
                                    const std::function<MatrixXd(std::int64_t n, int seed)>& make) {
  for (std::int64_t n : kSizes)
    for (int seed = 1; seed <= seeds_for(n); ++seed)
      expect_lower_bound_within_floor(make(n, seed),
                                      family + " n = " + std::to_string(n) + " seed " + std::to_string(seed));
}

TEST(EstimateNorm1, IsALowerBoundWithinAFactorOf5OnRandomUniformMatrices) {
  expect_lower_bounds_over_seeds("uniform", [](std::int64_t n, int seed) {
    return uniform_matrix(n, -1, 1, 1000 * std::uint64_t(n) + seed);
  });
}

TEST(EstimateNorm1, IsALowerBoundWithinAFactorOf5OnWideRangeMatrices) {
  expect_lower_bounds_over_seeds("wide range", [](std::int64_t n, int seed) {
    return wide_range_matrix(n, 2000 * std::uint64_t(n) + seed);
  });
}

// Inverses are the estimator's real use (DGECON) and its hardest inputs here.
TEST(EstimateNorm1, IsALowerBoundWithinAFactorOf5OnInverses) {
  expect_lower_bounds_over_seeds("inverse", [](std::int64_t n, int seed) {
    return fp64_inverse(uniform_matrix(n, -1, 1, 3000 * std::uint64_t(n) + seed));
  });
}

// The loop ends after ITMAX - 1 = 4 unit vectors when neither stop test fires: an operator (not a
// linear one: the callbacks only play the algorithm's moves) whose every B e_j has a new sign
// vector and a larger 1-norm (j + 1), and whose B^T xi always peaks at a new index. The estimate is
// the last column tried, ||B e_4||_1 = 5, after 2 ITMAX + 1 = 11 products.
TEST(EstimateNorm1, StopsAfterItmaxIterationsWith2ItmaxPlus1Products) {
  const std::int64_t n = 8;
  int transposes = 0;
  const LinearOperator apply = [&](std::vector<double>& x) {
    const auto one = std::find(x.begin(), x.end(), 1.0);
    if (std::count(x.begin(), x.end(), 0.0) != n - 1 || one == x.end()) return;  // e/n or alternating: B x = x
    const std::int64_t j = one - x.begin();
    for (std::int64_t i = 0; i < n; ++i) x[i] = (i == j ? -1.0 : 1.0) * double(j + 1) / double(n);
  };
  const LinearOperator apply_transpose = [&](std::vector<double>& x) {
    ++transposes;
    std::fill(x.begin(), x.end(), 0.0);
    x[transposes] = 10;
  };
  int products = 0;
  EXPECT_EQ(estimate_norm1(n, apply, apply_transpose, &products), 5.0);
  EXPECT_EQ(products, kNorm1EstimateMaxProducts);
  EXPECT_EQ(transposes, kNorm1EstimateMaxIterations);
}

// A real matrix that reaches the limit: the inverse of a uniform(-1, 1) matrix, n = 8, seed 725 (the
// first of 2000 seeds at n = 8 to take 11 products; LAPACK's dlacn2 takes 11 on it too).
TEST(EstimateNorm1, InverseThatReachesItmaxStaysALowerBound) {
  const MatrixXd b = fp64_inverse(uniform_matrix(8, -1, 1, 725));
  int products = 0;
  const double est = estimate_of(b, &products);
  EXPECT_EQ(products, kNorm1EstimateMaxProducts);
  EXPECT_LE(est, norm1(b) * (1 + rounding_slack(8)));
  EXPECT_GE(est, norm1(b) * kMeasuredFloor);
}

// sign(B e/n) = e, so z = B^T e holds the column sums and its largest entry names the
// norm-attaining column at once (Hager's method is exact for nonnegative B).
TEST(EstimateNorm1, IsExactForNonnegativeMatrices) {
  for (std::int64_t n : kSizes) {
    const MatrixXd b = uniform_matrix(n, 0, 1, 4000 + n);
    int products = 0;
    const double est = estimate_of(b, &products);
    EXPECT_NEAR(est, norm1(b), norm1(b) * rounding_slack(n)) << "n = " << n;
    EXPECT_EQ(products, n == 1 ? 1 : 4) << "n = " << n;
  }
}

// z = D^T sign(D e/n) = |d|: the first step picks the largest |d_j| and ||D e_j||_1 = |d_j| is the
// norm, exactly (no rounding: one nonzero per column).
TEST(EstimateNorm1, IsExactForDiagonalMatrices) {
  for (std::int64_t n : kSizes) {
    const VectorXd d = uniform_matrix(n, -1, 1, 5000 + n).col(0);
    const MatrixXd b = d.asDiagonal();
    EXPECT_EQ(estimate_of(b), d.cwiseAbs().maxCoeff()) << "n = " << n;
  }
}

// A column scaled by 10 dominates B e/n's signs and z's largest entry, so the first e_j is it.
TEST(EstimateNorm1, IsExactWhenOneColumnDominates) {
  for (std::int64_t n : kSizes)
    for (std::int64_t column : {std::int64_t(0), n / 2, n - 1}) {
      MatrixXd b = uniform_matrix(n, -1, 1, 6000 + n);
      b.col(column) *= 10;
      EXPECT_NEAR(estimate_of(b), norm1(b), norm1(b) * rounding_slack(n)) << "n = " << n << " column " << column;
    }
}

TEST(EstimateNorm1, IdentityAndZeroTakeFourProducts) {
  for (std::int64_t n : {2, 7, 100}) {
    int products = 0;
    EXPECT_EQ(estimate_of(MatrixXd::Identity(n, n), &products), 1.0);
    EXPECT_EQ(products, 4);  // B e/n, B^T xi, B e_1 (sign vector repeats), the alternating vector
    EXPECT_EQ(estimate_of(MatrixXd::Zero(n, n), &products), 0.0);
    EXPECT_EQ(products, 4);
  }
}

TEST(EstimateNorm1, SizeZeroIsZeroWithoutProductsAndSizeOneIsTheScalar) {
  int calls = 0;
  const LinearOperator counting = [&](std::vector<double>&) { ++calls; };
  int products = -1;
  EXPECT_EQ(estimate_norm1(0, counting, counting, &products), 0.0);
  EXPECT_EQ(products, 0);
  EXPECT_EQ(calls, 0);
  const MatrixXd b = MatrixXd::Constant(1, 1, -3.25);
  EXPECT_EQ(estimate_of(b, &products), 3.25);
  EXPECT_EQ(products, 1);
}

TEST(EstimateNorm1, NanEntryGivesNan) {
  for (std::int64_t n : {1, 2, 7}) {
    MatrixXd b = uniform_matrix(n, -1, 1, 7000 + n);
    b(n - 1, 0) = NAN;
    EXPECT_TRUE(std::isnan(estimate_of(b))) << "n = " << n;
  }
}

TEST(EstimateNorm1, InfiniteEntryOrOverflowingNormGivesInfinity) {
  for (std::int64_t n : {1, 2, 7}) {
    MatrixXd b = uniform_matrix(n, -1, 1, 8000 + n);
    b(0, n - 1) = -INFINITY;
    int products = 0;
    EXPECT_EQ(estimate_of(b, &products), INFINITY) << "n = " << n;
    EXPECT_EQ(products, 1) << "the first product already holds the Inf";
  }
  // Finite entries whose column sum exceeds the largest double: ||B||_1 rounds to Inf.
  MatrixXd b = MatrixXd::Constant(4, 4, 1.0);
  b.col(2).setConstant(std::numeric_limits<double>::max() / 2);
  EXPECT_EQ(estimate_of(b), INFINITY);
}

// A near overflow whose sum ||B x||_1 over the alternating vector (||x||_1 = 3n/2) would overflow
// while the estimate 2 ||B x||_1 / (3n) does not: the estimate stays finite.
TEST(EstimateNorm1, AlternatingStepDoesNotOverflowBelowTheLargestDouble) {
  const std::int64_t n = 7;
  MatrixXd b(n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) b(i, j) = (i + j) % 2 == 0 ? 1.0 : -1.0;
  // ||B||_1 = max / 2 in every column; B x for the alternating x has |entries| 3n/2 max / (2n),
  // so ||B x||_1 = 3n max / 4 overflows, while 2 ||B x||_1 / (3n) = max / 2 = ||B||_1.
  b *= std::numeric_limits<double>::max() / double(2 * n);
  const double est = estimate_of(b);
  EXPECT_TRUE(std::isfinite(est));
  EXPECT_NEAR(est, norm1(b), norm1(b) * rounding_slack(n));
}

TEST(EstimateNorm1, RejectsBadArgumentsNamingThem) {
  const MatrixXd b = MatrixXd::Identity(3, 3);
  const LinearOperator ok = product_with(b);
  try {
    estimate_norm1(-2, ok, ok);
    FAIL() << "n < 0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("n (-2) < 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(estimate_norm1(3, LinearOperator(), ok), InvalidArgument);
  EXPECT_THROW(estimate_norm1(3, ok, LinearOperator()), InvalidArgument);
  const LinearOperator shrinking = [](std::vector<double>& x) { x.pop_back(); };
  try {
    estimate_norm1(3, ok, shrinking);
    FAIL() << "a callback that changed the length was accepted";
  } catch (const InvalidArgument& e) {
    const std::string expected = "apply_transpose changed the vector's length from 3 to 2";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// ||A^-1|| through LU solves (DGECON's use): A^-1 applied as (LU)^-1 P in FP64, against the exact
// inverse. The LU-applied operator differs from A^-1 by about cond(A) * gamma_3n relative (a
// backward stable solve's forward error, [ASNA] §9.4 with growth ~1), which widens the upper side.
struct InverseCase {
  std::string name;
  MatrixXd a, inverse;
};

std::vector<InverseCase> ill_conditioned_cases() {
  std::vector<InverseCase> cases;
  cases.push_back({"hilbert 8", hilbert(8), hilbert_inverse(8)});  // cond_1 ~3.4e10
  for (double cond : {1e4, 1e8, 1e12})
    for (std::int64_t n : {7, 100}) {
      const MatrixXd a = svd_geo(n, cond, 11);
      cases.push_back({"svd_geo n = " + std::to_string(n) + " cond " + scientific(cond), a, reference_inverse(a)});
    }
  return cases;
}

TEST(EstimateInverseNorm1, WithinAFactorOf3OfTheExactNormOnIllConditionedMatrices) {
  for (const InverseCase& c : ill_conditioned_cases()) {
    const std::int64_t n = c.a.rows();
    const LuInverse<double> lu(c.a);
    int products = 0;
    const double est = estimate_inverse_norm1(n, lu.inverse(), lu.inverse_transpose(), &products);
    const double exact = norm1(c.inverse);
    const double solve_error = 3 * double(n) * norm1(c.a) * exact * kU;
    EXPECT_LE(est, exact * (1 + solve_error + rounding_slack(n))) << c.name;
    EXPECT_GE(est, exact / 3) << c.name;
    EXPECT_LE(products, kNorm1EstimateMaxProducts) << c.name;

    // rcond = (1 / est) / ||A||_1 (DGECON): at least 1 / cond_1(A), at most 3x that.
    const double rcond = reciprocal_condition(n, norm1(c.a), est);
    const double true_rcond = 1 / (norm1(c.a) * exact);
    EXPECT_GE(rcond, true_rcond * (1 - solve_error - rounding_slack(n))) << c.name;
    EXPECT_LE(rcond, 3 * true_rcond) << c.name;
  }
}

// The inf-norm variant runs the estimator on A^-T: ||A^-1||_inf = ||A^-T||_1.
TEST(EstimateInverseNormInf, WithinAFactorOf3OfTheExactNormOnIllConditionedMatrices) {
  for (const InverseCase& c : ill_conditioned_cases()) {
    const std::int64_t n = c.a.rows();
    const LuInverse<double> lu(c.a);
    const double est = estimate_inverse_norm_inf(n, lu.inverse(), lu.inverse_transpose());
    const double exact = norm_inf(c.inverse);
    const double solve_error = 3 * double(n) * norm_inf(c.a) * exact * kU;
    EXPECT_LE(est, exact * (1 + solve_error + rounding_slack(n))) << c.name;
    EXPECT_GE(est, exact / 3) << c.name;
  }
}

// A singular LU (a zero pivot) makes A^-1 x overflow or become NaN: rcond is 0 or NaN, never a
// finite positive number that would call the matrix well-conditioned.
TEST(EstimateInverseNorm1, SingularMatrixGivesZeroOrNanRcond) {
  MatrixXd a = uniform_matrix(7, -1, 1, 9000);
  a.row(3) = a.row(1);
  a.col(5).setZero();
  const LuInverse<double> lu(a);
  const double est = estimate_inverse_norm1(7, lu.inverse(), lu.inverse_transpose());
  EXPECT_TRUE(std::isnan(est) || est == INFINITY) << est;
  const double rcond = reciprocal_condition(7, norm1(a), est);
  EXPECT_TRUE(std::isnan(rcond) || rcond == 0) << rcond;
}

TEST(ReciprocalCondition, FollowsDgeconForSpecialValues) {
  EXPECT_EQ(reciprocal_condition(0, 5, 2), 1.0);
  EXPECT_EQ(reciprocal_condition(3, 0, 2), 0.0);
  EXPECT_EQ(reciprocal_condition(3, 5, 0), 0.0);
  EXPECT_EQ(reciprocal_condition(3, 5, INFINITY), 0.0);
  EXPECT_TRUE(std::isnan(reciprocal_condition(3, NAN, 2)));
  EXPECT_TRUE(std::isnan(reciprocal_condition(3, 5, NAN)));
  EXPECT_EQ(reciprocal_condition(3, 4, 2), 0.125);
  // (1 / est) / norm_a underflows gracefully where the product norm_a * est would overflow.
  EXPECT_EQ(reciprocal_condition(3, 1e200, 1e200), 0.0);
  EXPECT_THROW(reciprocal_condition(-1, 1, 1), InvalidArgument);
  EXPECT_THROW(reciprocal_condition(3, -1, 1), InvalidArgument);
  EXPECT_THROW(reciprocal_condition(3, 1, -1), InvalidArgument);
}

// The normwise forward error bound with the exact ||A^-1||_inf bounds the true forward error
// ||x - x_star||_inf / ||x||_inf (x_star the stored system's solution, testing::reference_solve) of
// solutions from an FP32 LU (errors well above rounding) and an FP64 LU (errors at the rounding
// level): with the exact inverse norm it is a bound, never an underestimate. Every FP64 solution is
// checked, and the FP32 ones that keep a digit (cond 1e4: both sizes).
TEST(NormwiseForwardErrorBound, BoundsTheTrueErrorOfFp32AndFp64Solutions) {
  const std::vector<InverseCase> cases = ill_conditioned_cases();
  int checked = 0;
  for (const InverseCase& c : cases) {
    const std::int64_t n = c.a.rows();
    const VectorXd x_true = VectorXd::LinSpaced(n, -1, 1);
    const VectorXd b = c.a * x_true;
    const mixsolve::testing::ReferenceSolution ref = mixsolve::testing::reference_solve(c.a, b);
    ASSERT_TRUE(ref.converged) << c.name;
    const Eigen::MatrixXf a32 = c.a.cast<float>();
    const VectorXd x32 = mixsolve::testing::lu_solve(a32, Eigen::MatrixXf(b.cast<float>())).cast<double>();
    const VectorXd x64 = mixsolve::testing::lu_solve(c.a, MatrixXd(b));
    for (const VectorXd* x : {&x32, &x64}) {
      const double error =
          double((x->cast<long double>() - ref.x.col(0)).cwiseAbs().maxCoeff()) / x->cwiseAbs().maxCoeff();
      const double bound =
          normwise_forward_error_bound(n, norm_inf(c.inverse), norm_inf(c.a), (b - c.a * *x).cwiseAbs().maxCoeff(),
                                       x->cwiseAbs().maxCoeff(), b.cwiseAbs().maxCoeff());
      SCOPED_TRACE(c.name + (x == &x32 ? " (FP32 LU)" : " (FP64 LU)"));
      if (!(error < 1)) {  // the FP32 LU of a matrix beyond 1 / u_32: no digit to bound
        EXPECT_EQ(x, &x32);
        continue;
      }
      EXPECT_GE(bound, error);
      ++checked;
    }
  }
  EXPECT_GE(checked, int(cases.size()) + 2);
}

TEST(NormwiseForwardErrorBound, SpecialValues) {
  EXPECT_EQ(normwise_forward_error_bound(3, 2, 1, 0, 0, 0), 0.0);
  EXPECT_EQ(normwise_forward_error_bound(3, 2, 1, 1e-3, 0, 0), INFINITY);
  EXPECT_TRUE(std::isnan(normwise_forward_error_bound(3, NAN, 1, 1e-3, 1, 1)));
  // x = 1, ||A^-1|| = 1, a zero residual: only the residual's rounding term, (n + 1) u (1 + 0).
  EXPECT_DOUBLE_EQ(normwise_forward_error_bound(3, 1, 1, 0, 1, 0), 4 * 0x1p-53);
}

}  // namespace
