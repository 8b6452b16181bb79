// SPDX-License-Identifier: BSD-3-Clause
#include "refinement/condition_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

namespace {

// A value for a message, in %g form (std::to_string prints 1e-20 as 0.000000).
std::string str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void check_size(const char* where, std::int64_t n) {
  if (n < 0) throw InvalidArgument(std::string(where) + ": n (" + std::to_string(n) + ") < 0");
}

void check_operator(const char* where, const char* name, const LinearOperator& op) {
  if (!op) throw InvalidArgument(std::string(where) + ": " + name + " is empty");
}

// The state of one estimate: counts products and turns a NaN or infinite result into the
// early return estimate_norm1 documents.
class Norm1Estimator {
 public:
  Norm1Estimator(std::int64_t n, const LinearOperator& apply, const LinearOperator& apply_transpose)
      : n_(n), apply_(apply), apply_transpose_(apply_transpose) {}

  int products() const { return products_; }

  // x := B x, then ||x||_1 (DASUM): NaN where x holds a NaN, INFINITY where it holds an Inf or the
  // sum overflows.
  double apply(std::vector<double>& x) {
    call(apply_, "apply", x);
    double sum = 0;
    for (double v : x) {
      if (std::isnan(v)) return NAN;
      sum += std::abs(v);
    }
    return sum;
  }
  // z := B^T xi; false where z holds a NaN (an Inf is a valid largest entry).
  bool apply_transpose(std::vector<double>& z) {
    call(apply_transpose_, "apply_transpose", z);
    for (double v : z)
      if (std::isnan(v)) return false;
    return true;
  }

 private:
  void call(const LinearOperator& op, const char* name, std::vector<double>& x) {
    op(x);
    ++products_;
    if (std::int64_t(x.size()) != n_)
      throw InvalidArgument(std::string("estimate_norm1: ") + name + " changed the vector's length from " +
                            std::to_string(n_) + " to " + std::to_string(x.size()));
  }

  std::int64_t n_;
  const LinearOperator& apply_;
  const LinearOperator& apply_transpose_;
  int products_ = 0;
};

// [H88] Alg. 4.1's sign(y): +1 for y >= 0 (zero included), -1 otherwise.
double sign_of(double y) { return y >= 0 ? 1.0 : -1.0; }

// The first index of the largest |z_i| (IDAMAX), the paper's j = min{i : |z_i| = ||z||_inf}.
std::int64_t first_largest_magnitude(const std::vector<double>& z) {
  std::int64_t j = 0;
  for (std::int64_t i = 1; i < std::int64_t(z.size()); ++i)
    if (std::abs(z[i]) > std::abs(z[j])) j = i;
  return j;
}

double estimate(std::int64_t n, Norm1Estimator& b) {
  if (n == 0) return 0;
  std::vector<double> x(n, 1.0 / double(n));
  double est = b.apply(x);
  // B is a scalar: |B * 1| is its norm exactly (the paper quits here with gamma = |v_1|).
  if (n == 1 || !std::isfinite(est)) return est;

  // xi = sign(B x); the products below reuse x's storage.
  std::vector<double> xi(n);
  for (std::int64_t i = 0; i < n; ++i) xi[i] = sign_of(x[i]);
  x = xi;
  if (!b.apply_transpose(x)) return NAN;
  std::int64_t j = first_largest_magnitude(x);

  // The loop of [H88] Alg. 4.1: k counts the vectors e_j tried, ITMAX the limit.
  for (int k = 2;; ++k) {
    std::fill(x.begin(), x.end(), 0.0);
    x[j] = 1.0;
    const double est_old = est;
    est = b.apply(x);  // ||B e_j||_1: a column's norm, a lower bound on ||B||_1
    if (!std::isfinite(est)) return est;
    // Converged: a repeated sign vector gives the same z = B^T xi, hence the same j. Cycling:
    // in exact arithmetic est >= |xi^T B e_j| = |z_j| = ||z||_inf >= xi^T B x_old = est_old
    // (xi = sign(B x_old), x_old the previous unit-norm x), so est <= est_old means no progress.
    bool repeated = true;
    for (std::int64_t i = 0; i < n && repeated; ++i) repeated = sign_of(x[i]) == xi[i];
    if (repeated || est <= est_old) break;
    for (std::int64_t i = 0; i < n; ++i) xi[i] = sign_of(x[i]);
    x = xi;
    if (!b.apply_transpose(x)) return NAN;
    const std::int64_t j_last = j;
    j = first_largest_magnitude(x);
    // Hager's test: z_j_last = ||z||_inf means e_j_last is a local maximum of ||B x||_1 over the
    // unit 1-norm ball (z_j_last <= ||z||_inf always, so equality is the stop).
    if (x[j_last] == std::abs(x[j]) || k >= kNorm1EstimateMaxIterations) break;
  }

  // The alternating vector x_i = (-1)^(i+1) (1 + (i-1)/(n-1)) (1-based i) catches operators
  // whose large columns Hager's local search misses ([H88] Alg. 4.1's last step); ||x||_1 = 3n/2, so
  // 2 ||B x||_1 / (3n) = ||B x||_1 / ||x||_1 is again a lower bound on ||B||_1.
  for (std::int64_t i = 0; i < n; ++i) x[i] = (i % 2 == 0 ? 1.0 : -1.0) * (1.0 + double(i) / double(n - 1));
  const double scale = 2.0 / (3.0 * double(n));
  double alternating = b.apply(x);
  if (std::isnan(alternating)) return NAN;
  // ||x||_1 = 3n/2 > 1: the sum may overflow where the estimate does not, so scale each term.
  if (std::isinf(alternating)) {
    alternating = 0;
    for (double v : x) alternating += std::abs(v) * scale;
    return std::max(est, alternating);
  }
  return std::max(est, alternating * scale);
}

}  // namespace

double estimate_norm1(std::int64_t n, const LinearOperator& apply, const LinearOperator& apply_transpose,
                      int* products) {
  check_size("estimate_norm1", n);
  check_operator("estimate_norm1", "apply", apply);
  check_operator("estimate_norm1", "apply_transpose", apply_transpose);
  Norm1Estimator b(n, apply, apply_transpose);
  const double est = estimate(n, b);
  if (products) *products = b.products();
  return est;
}

double estimate_inverse_norm1(std::int64_t n, const LinearOperator& apply_inverse,
                              const LinearOperator& apply_inverse_transpose, int* products) {
  return estimate_norm1(n, apply_inverse, apply_inverse_transpose, products);
}

double estimate_inverse_norm_inf(std::int64_t n, const LinearOperator& apply_inverse,
                                 const LinearOperator& apply_inverse_transpose, int* products) {
  return estimate_norm1(n, apply_inverse_transpose, apply_inverse, products);
}

double reciprocal_condition(std::int64_t n, double norm_a, double inverse_norm_estimate) {
  check_size("reciprocal_condition", n);
  if (norm_a < 0) throw InvalidArgument("reciprocal_condition: norm_a (" + str(norm_a) + ") < 0");
  if (inverse_norm_estimate < 0)
    throw InvalidArgument("reciprocal_condition: inverse_norm_estimate (" + str(inverse_norm_estimate) + ") < 0");
  if (n == 0) return 1;
  if (std::isnan(norm_a) || std::isnan(inverse_norm_estimate)) return NAN;
  if (norm_a == 0 || inverse_norm_estimate == 0) return 0;
  return (1.0 / inverse_norm_estimate) / norm_a;
}

double normwise_forward_error_bound(std::int64_t n, double inverse_norm_inf, double norm_a_inf, double norm_r_inf,
                                    double norm_x_inf, double norm_b_inf) {
  check_size("normwise_forward_error_bound", n);
  constexpr double u = std::numeric_limits<double>::epsilon() / 2;
  const double residual_bound = norm_r_inf + double(n + 1) * u * (norm_a_inf * norm_x_inf + norm_b_inf);
  const double numerator = inverse_norm_inf * residual_bound;
  if (std::isnan(numerator) || std::isnan(norm_x_inf)) return NAN;
  if (norm_x_inf == 0) return numerator == 0 ? 0.0 : INFINITY;
  return numerator / norm_x_inf;
}

}  // namespace mixsolve::solvers_detail
