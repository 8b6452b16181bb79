// SPDX-License-Identifier: BSD-3-Clause
// least_squares(): the precision path (the cheap QR, then FP64 where its refinement fails), the
// checks of the arguments, and the report. The QR and the refinement: src/qr/.
#include "mixsolve/solvers/least_squares.hpp"

#include "driver/option_checks.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "driver/ridge_stack.hpp"
#include "engine.hpp"  // Clock, seconds_since
#include "mixsolve/gemm/registry.hpp"
#include "qr/column_pivoted_qr.hpp"
#include "qr/householder_qr.hpp"
#include "qr/least_squares_refinement.hpp"
#include "qr/least_squares_space.hpp"
#include "qr/minimum_norm.hpp"
#include "scaled_norm.hpp"

namespace mixsolve {

namespace {

// Householder reflectors per compact-WY block on the host unless LeastSquaresOptions::block_size
// says (the device space chooses its own: qr/cuda/device_least_squares.cu).
constexpr int kHostQrBlock = 32;
// Below this min |r_jj| / max |r_jj|, FP32 factors leave the rank to the FP64 QR.
constexpr double kCheapRankRatio = 16 * 0x1p-24;
// Above this ratio of the FP32 factors' smallest |r_jj| to ||A v|| for the unit v of that column's
// FP64 distance from the columns before it (LsSpace::column_distance), FP32 factors leave the
// solve to FP64 ones.
constexpr double kCheapPreconditionerLimit = 0x1p8;
// LeastSquaresOptions::auto_min_work's default for device matrices (docs/least_squares.md, "Small
// problems").
constexpr std::int64_t kDeviceAutoMinWork = std::int64_t(1) << 32;

// The order in which stops are worse: the attempt reports its worst column's.
int severity(LeastSquaresStop s) {
  switch (s) {
    case LeastSquaresStop::Converged: return 0;
    case LeastSquaresStop::Stagnated: return 1;
    case LeastSquaresStop::MaxIterations: return 2;
    case LeastSquaresStop::Diverged: return 3;
    case LeastSquaresStop::RankUndecided: return 4;
    case LeastSquaresStop::CholeskyBreakdown: return 4;
    case LeastSquaresStop::RankDeficient: return 4;
  }
  return 4;
}

double scaled_norm(const std::vector<double>& v) {
  return solvers_detail::scaled_norm2(v.data(), std::int64_t(v.size()));
}

// The host's space (qr/least_squares_space.hpp): HouseholderQr on host-fp32 / host-fp64.
// LsSpace::column_distance through the space's own factors_r and tall columns (the host's; the
// device keeps R and A where they are instead).
solvers_detail::LsSpace::ColumnDistance column_distance_through_tall_columns(solvers_detail::LsSpace& space,
                                                                             std::int64_t n, std::int64_t j,
                                                                             int max_iterations) {
  const std::vector<double> r = space.factors_r();
  if (r.size() != std::size_t(n * n)) return {};
  std::unique_ptr<solvers_detail::TallColumns> tall = space.tall_columns();
  std::vector<std::int64_t> order(static_cast<std::size_t>(j + 1));  // A_S = columns 0 .. j-1, A_N = a_j
  for (std::int64_t c = 0; c <= j; ++c) order[std::size_t(c)] = c;
  tall->choose(order, j);
  std::vector<double> y(static_cast<std::size_t>(j));
  bool converged = true;  // j = 0: v = e_0, no refinement
  if (j > 0) {  // from R(0:j, 0:j)^-1 R(0:j, j)
    const MatrixView<const double> r11 = host_view<const double>(r.data(), j, j, n);
    double smallest = INFINITY, largest = 0;
    for (std::int64_t i = j - 1; i >= 0; --i) {
      double sum = r[std::size_t(i + j * n)];
      for (std::int64_t l = i + 1; l < j; ++l) sum -= r11(i, l) * y[std::size_t(l)];
      y[std::size_t(i)] = sum / r11(i, i);
      smallest = std::min(smallest, std::fabs(r11(i, i)));
      largest = std::max(largest, std::fabs(r11(i, i)));
    }
    tall->precondition(r11);
    converged = solvers_detail::accepted(tall->refine(solvers_detail::TallColumns::Target::DroppedColumn, 0, 1,
                                                      {smallest, largest, smallest / largest}, max_iterations, true,
                                                      y.data())[0]
                                             .stop);
  }
  const double distance = tall->residual_norm(solvers_detail::TallColumns::Target::DroppedColumn, 0, y.data());
  return {distance / std::hypot(1.0, solvers_detail::scaled_norm2(y.data(), std::int64_t(y.size()))), converged};
}

class HostLsSpace final : public solvers_detail::LsSpace {
 public:
  HostLsSpace(Context& ctx, const MatrixView<const double>& a) : ctx_(ctx), a_(a), r_(a.rows) {}

  void bind(const MatrixView<const double>& b, const MatrixView<double>& x) override {
    b_ = b;
    x_ = x;
  }

  std::pair<std::int64_t, std::int64_t> find_nonfinite(int which) override {
    const MatrixView<const double>& m = which == 0 ? a_ : b_;
    for (std::int64_t j = 0; j < m.cols; ++j)
      for (std::int64_t i = 0; i < m.rows; ++i)
        if (!std::isfinite(m(i, j))) return {i, j};
    return {-1, -1};
  }
  double largest_abs_a() override {
    double largest = 0;
    for (std::int64_t j = 0; j < a_.cols; ++j)
      for (std::int64_t i = 0; i < a_.rows; ++i) largest = std::max(largest, std::fabs(a_(i, j)));
    return largest;
  }
  double norm_a_frobenius() override { return solvers_detail::scaled_norm2(a_.data, a_.rows, a_.cols, a_.ld); }
  std::vector<double> factor(bool fp64, double a_scale, std::int64_t block, const std::string& fp32_update,
                             const std::string& /*fp32_vt_c_update: one backend for both products here*/,
                             bool /*unrefined: the same FP64 QR here*/) override {
    a_scale_ = a_scale;
    r64_.clear();
    r32_in_fp64_.clear();
    if (block == 0) block = kHostQrBlock;
    update_ = fp64 ? "host-fp64" : fp32_update.empty() ? "host-fp32" : fp32_update;
    return fp64 ? factor_in(factors64_, qr64_, a_scale, block, update_.c_str())
                : factor_in(factors32_, qr32_, a_scale, block, update_.c_str());
  }
  std::string update_backend() const override { return update_; }
  CholeskyQrFactors factor_cholesky_qr() override;
  std::vector<double> smallest_singular_vector(std::int64_t start) override;
  ColumnDistance column_distance(std::int64_t j, int max_iterations) override {
    return column_distance_through_tall_columns(*this, a_.cols, j, max_iterations);
  }
  double norm_a_times(const std::vector<double>& v) override {
    std::vector<double> y(a_.rows, 0.0);
    for (std::int64_t j = 0; j < a_.cols; ++j)
      for (std::int64_t i = 0; i < a_.rows; ++i) y[i] += a_(i, j) * v[j];
    return scaled_norm(y);
  }
  solvers_detail::LsRefinementResult refine(std::int64_t j, int max_iterations, solvers_detail::LsMethod method,
                                            const solvers_detail::LsFactorScales& scales) override {
    if (method == solvers_detail::LsMethod::Cgls) {  // the FP32 R alone, in FP64
      if (!qr32_) throw std::logic_error("least_squares: CGLS refines the FP32 factors only");
      const std::int64_t n = a_.cols;
      if (r32_in_fp64_.empty()) {
        r32_in_fp64_.assign(n * n, 0.0);
        for (std::int64_t jj = 0; jj < n; ++jj)
          for (std::int64_t i = 0; i <= jj; ++i) r32_in_fp64_[i + jj * n] = qr32_->r()(i, jj);
      }
      solvers_detail::factors_solution(a_, &b_(0, j), *qr32_, a_scale_, &x_(0, j));
      return solvers_detail::refine_semi_normal(a_, &b_(0, j), host_view<const double>(r32_in_fp64_.data(), n, n, n),
                                                a_scale_, max_iterations, &x_(0, j), scales,
                                                solvers_detail::LsFactorKind::Cheap, method, true);
    }
    if (!r64_.empty()) {
      if (method != solvers_detail::LsMethod::Augmented)
        throw std::logic_error("least_squares: Cholesky QR factors take the semi-normal steps only");
      return solvers_detail::refine_semi_normal(a_, &b_(0, j),
                                                host_view<const double>(r64_.data(), a_.cols, a_.cols, a_.cols),
                                                a_scale_, max_iterations, &x_(0, j), scales);
    }
    return qr64_ ? solvers_detail::refine_least_squares(a_, &b_(0, j), *qr64_, a_scale_, max_iterations, &x_(0, j),
                                                        r_.data(), method, scales)
                 : solvers_detail::refine_least_squares(a_, &b_(0, j), *qr32_, a_scale_, max_iterations, &x_(0, j),
                                                        r_.data(), method, scales);
  }
  void solve_unrefined() override {
    if (!qr64_) throw std::logic_error("least_squares: an unrefined solve without FP64 factors");
    for (std::int64_t j = 0; j < b_.cols; ++j)
      solvers_detail::factors_solution(a_, &b_(0, j), *qr64_, a_scale_, &x_(0, j));
  }
  std::vector<double> residual_norms() override {
    std::vector<double> out;
    std::vector<double> r(b_.rows);
    for (std::int64_t j = 0; j < b_.cols; ++j) {
      for (std::int64_t i = 0; i < b_.rows; ++i) {
        double s = b_(i, j);
        for (std::int64_t l = 0; l < a_.cols; ++l) s -= a_(i, l) * x_(l, j);
        r[i] = s;
      }
      out.push_back(scaled_norm(r));
    }
    return out;
  }
  void fill_x_with_nan() override {
    for (std::int64_t j = 0; j < x_.cols; ++j)
      for (std::int64_t i = 0; i < x_.rows; ++i) x_(i, j) = NAN;
  }
  std::vector<double> factors_r() override;
  std::unique_ptr<solvers_detail::TallColumns> tall_columns() override;
  void write_x(const MatrixView<const double>& x) override {
    for (std::int64_t j = 0; j < x_.cols; ++j)
      for (std::int64_t i = 0; i < x_.rows; ++i) x_(i, j) = x(i, j);
  }

 private:
  template <class T>
  std::vector<double> factor_in(std::vector<T>& factors, std::unique_ptr<solvers_detail::HouseholderQr<T>>& qr,
                                double a_scale, std::int64_t block, const char* backend) {
    qr32_.reset();
    qr64_.reset();
    factors32_ = {};  // the other precision's factors go
    factors64_ = {};
    const std::int64_t m = a_.rows, n = a_.cols;
    factors.assign(m * n, T(0));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) factors[i + j * m] = T(a_scale * a_(i, j));
    qr = std::make_unique<solvers_detail::HouseholderQr<T>>(ctx_, host_view(factors.data(), m, n, m), block,
                                                            gemm::find_backend(backend));
    std::vector<double> diagonal(n);
    for (std::int64_t j = 0; j < n; ++j) diagonal[j] = std::fabs(double(factors[j + j * m]));
    return diagonal;
  }

  Context& ctx_;
  MatrixView<const double> a_, b_;
  MatrixView<double> x_;
  std::vector<double> r_;
  std::vector<float> factors32_;
  std::vector<double> factors64_;
  std::vector<double> r64_;          // n x n: the Cholesky QR's R, where it holds the factors
  std::vector<double> r32_in_fp64_;  // n x n: the FP32 R in FP64, for CGLS
  std::string update_;               // the Householder factors' update backend
  std::unique_ptr<solvers_detail::HouseholderQr<float>> qr32_;
  std::unique_ptr<solvers_detail::HouseholderQr<double>> qr64_;
  double a_scale_ = 1;
};

solvers_detail::LsSpace::CholeskyQrFactors HostLsSpace::factor_cholesky_qr() {
  const std::int64_t m = a_.rows, n = a_.cols;
  CholeskyQrFactors out;
  if (!qr32_) return out;
  const auto r32 = [&](std::int64_t i, std::int64_t j) { return double(factors32_[i + j * m]); };
  // Y := a_scale A R_32^-1, row by row (y_i R_32 = a_i).
  std::vector<double> y(m * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = a_scale_ * a_(i, j);
      for (std::int64_t k = 0; k < j; ++k) sum -= y[i + k * m] * r32(k, j);
      y[i + j * m] = sum / r32(j, j);
    }
  // R_2 := chol(Y^T Y), upper: G = R_2^T R_2, column by column.
  std::vector<double> r2(n * n, 0.0);
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i <= j; ++i) {
      double g = 0;
      for (std::int64_t l = 0; l < m; ++l) g += y[l + i * m] * y[l + j * m];
      for (std::int64_t k = 0; k < i; ++k) g -= r2[k + i * n] * r2[k + j * n];
      if (i < j) {
        r2[i + j * n] = g / r2[i + i * n];
      } else {
        if (!(g > 0) || !std::isfinite(g)) return out;  // not numerically positive definite
        r2[j + j * n] = std::sqrt(g);
      }
    }
  }
  // R := R_2 R_32.
  std::vector<double> r(n * n, 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i <= j; ++i) {
      double sum = 0;
      for (std::int64_t k = i; k <= j; ++k) sum += r2[i + k * n] * r32(k, j);
      r[i + j * n] = sum;
    }
  double largest2 = 0, smallest2 = INFINITY;
  out.diagonal.resize(n);
  for (std::int64_t j = 0; j < n; ++j) {
    largest2 = std::max(largest2, r2[j + j * n]);
    smallest2 = std::min(smallest2, r2[j + j * n]);
    out.diagonal[j] = std::fabs(r[j + j * n]);
    if (!(out.diagonal[j] > 0) || !std::isfinite(out.diagonal[j])) return {};
  }
  out.ok = true;
  out.y_diagonal_ratio = smallest2 / largest2;
  qr32_.reset();
  factors32_ = {};
  r32_in_fp64_.clear();
  r64_ = std::move(r);
  return out;
}

// With FP64 factors the vector is the smallest singular vector to about u_64 kappa, so ||A v||
// (>= sigma_min(A) for any unit v) shows a rank deficiency as a value near u_64 ||A||.
std::vector<double> HostLsSpace::smallest_singular_vector(std::int64_t start) {
  const std::int64_t m = a_.rows, n = a_.cols;
  const double* r = r64_.empty() ? factors64_.data() : r64_.data();  // R: Cholesky QR's or in geqrf form
  const std::int64_t ld = r64_.empty() ? m : n;
  const auto at = [&](std::int64_t i, std::int64_t j) { return r[i + j * ld]; };
  const auto normalize = [](std::vector<double>& v) {
    double s = 0;
    for (double e : v) s += e * e;
    s = std::sqrt(s);
    if (s > 0 && std::isfinite(s))
      for (double& e : v) e /= s;
  };
  const auto solve_r = [&](std::vector<double>& v) {  // v := R^-1 v
    for (std::int64_t i = n - 1; i >= 0; --i) {
      double s = v[i];
      for (std::int64_t j = i + 1; j < n; ++j) s -= at(i, j) * v[j];
      v[i] = at(i, i) != 0 ? s / at(i, i) : s;
    }
  };
  const auto solve_rt = [&](std::vector<double>& v) {  // v := R^-T v
    for (std::int64_t i = 0; i < n; ++i) {
      double s = v[i];
      for (std::int64_t j = 0; j < i; ++j) s -= at(j, i) * v[j];
      v[i] = at(i, i) != 0 ? s / at(i, i) : s;
    }
  };
  std::vector<double> v(n, 0.0);
  v[start] = 1;
  solve_r(v);
  normalize(v);
  // r_start,start = 0 (an exactly dependent column): R v = 0 already, A's null vector to rounding;
  // a step with R^-T would divide by that zero and lose it.
  if (at(start, start) == 0) return v;
  solve_rt(v);
  solve_r(v);
  normalize(v);
  return v;
}

std::vector<double> HostLsSpace::factors_r() {
  const std::int64_t m = a_.rows, n = a_.cols;
  if (m < n) {  // no factors for a wide A: R of an FP64 pivoted QR, its columns in A's order (m x n)
    std::vector<double> copy(std::size_t(m * n));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) copy[std::size_t(i + j * m)] = a_(i, j);
    const solvers_detail::ColumnPivotedQr qr(host_view(copy.data(), m, n, std::max<std::int64_t>(m, 1)));
    std::vector<double> r(std::size_t(m * n), 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) r[std::size_t(i + qr.pivots()[j] * m)] = qr.r(i, j);
    return r;
  }
  std::vector<double> r(n * n, 0.0);
  const auto fill = [&](auto at) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i <= j; ++i) r[i + j * n] = double(at(i, j)) / a_scale_;
  };
  if (!r64_.empty())
    fill([&](std::int64_t i, std::int64_t j) { return r64_[i + j * n]; });
  else if (qr32_)
    fill([&](std::int64_t i, std::int64_t j) { return factors32_[i + j * m]; });
  else if (qr64_)
    fill([&](std::int64_t i, std::int64_t j) { return factors64_[i + j * m]; });
  else
    r.clear();
  return r;
}

// The rank-revealing attempt's tall work on the host: A_S and A_N gathered into FP64 copies.
class HostTallColumns final : public solvers_detail::TallColumns {
 public:
  HostTallColumns(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b)
      : ctx_(ctx), a_(a), b_(b) {}
  void choose(const std::vector<std::int64_t>& order, std::int64_t kept) override {
    const std::int64_t m = a_.rows, n = std::int64_t(order.size());
    kept_ = kept;
    chosen_ = n;
    kept_columns_.assign(m * kept, 0.0);
    dropped_columns_.assign(m * (n - kept), 0.0);
    for (std::int64_t c = 0; c < n; ++c) {
      double* to = c < kept ? &kept_columns_[c * m] : &dropped_columns_[(c - kept) * m];
      for (std::int64_t i = 0; i < m; ++i) to[i] = a_(i, order[c]);
    }
  }
  void precondition(const MatrixView<const double>& r) override {
    r_.assign(std::size_t(r.rows * r.cols), 0.0);
    for (std::int64_t j = 0; j < r.cols; ++j)
      for (std::int64_t i = 0; i < r.rows; ++i) r_[std::size_t(i + j * r.rows)] = r(i, j);
    r_rows_ = r.rows;
  }
  std::vector<solvers_detail::LsRefinementResult> refine(Target target, std::int64_t first, std::int64_t count,
                                                         const solvers_detail::LsFactorScales& scales,
                                                         int max_iterations, bool start_from_y, double* y) override {
    const std::int64_t m = a_.rows;
    const MatrixView<const double> t =
        target == Target::RightHandSide
            ? host_view<const double>(&b_(0, first), m, count, b_.ld)
            : host_view<const double>(&dropped_columns_[first * m], m, count, std::max<std::int64_t>(m, 1));
    const MatrixView<const double> r =
        host_view<const double>(r_.data(), r_rows_, r_rows_, std::max<std::int64_t>(r_rows_, 1));
    return solvers_detail::refine_semi_normal_block(kept(), t, r, max_iterations,
                                                    host_view(y, kept_, count, std::max<std::int64_t>(kept_, 1)),
                                                    scales, start_from_y);
  }
  double residual_norm(Target target, std::int64_t j, const double* y) override {
    const std::int64_t m = a_.rows;
    const double* t = target == Target::RightHandSide ? &b_(0, j) : &dropped_columns_[j * m];
    std::vector<double> f(t, t + m);
    for (std::int64_t l = 0; l < kept_; ++l)
      for (std::int64_t i = 0; i < m; ++i) f[std::size_t(i)] -= kept_columns_[i + l * m] * y[l];
    return solvers_detail::scaled_norm2(f.data(), m);
  }
  PivotedR remainder_qr(const MatrixView<const double>& w) override {
    const std::int64_t m = a_.rows, nd = chosen_ - kept_;
    std::vector<double> c(dropped_columns_);  // C = A_N - A_S W
    for (std::int64_t q = 0; q < nd; ++q)
      for (std::int64_t l = 0; l < kept_; ++l) {
        const double f = w(l, q);
        if (f == 0) continue;
        for (std::int64_t i = 0; i < m; ++i) c[i + q * m] -= kept_columns_[i + l * m] * f;
      }
    if (m < nd) return solvers_detail::pivoted_r(host_view(c.data(), m, nd, std::max<std::int64_t>(m, 1)));
    // Tall C: its blocked QR first, then the pivots from its R (they depend only on C^T C).
    const solvers_detail::HouseholderQr<double> qr(ctx_, host_view(c.data(), m, nd, m), kHostQrBlock,
                                                   gemm::find_backend("host-fp64"));
    std::vector<double> r(std::size_t(nd * nd), 0.0);
    for (std::int64_t q = 0; q < nd; ++q)
      for (std::int64_t i = 0; i <= q; ++i) r[std::size_t(i + q * nd)] = c[std::size_t(i + q * m)];
    return solvers_detail::pivoted_r(host_view(r.data(), nd, nd, std::max<std::int64_t>(nd, 1)));
  }

 private:
  MatrixView<const double> kept() const {
    return host_view<const double>(kept_columns_.data(), a_.rows, kept_, std::max<std::int64_t>(a_.rows, 1));
  }
  Context& ctx_;
  MatrixView<const double> a_, b_;
  std::int64_t kept_ = 0, chosen_ = 0;                  // columns in A_S; in A_S and A_N
  std::vector<double> kept_columns_, dropped_columns_;  // m x kept and m x (n - kept), column major
  std::vector<double> r_;                               // the preconditioner, r_rows_ square
  std::int64_t r_rows_ = 0;
};

std::unique_ptr<solvers_detail::TallColumns> HostLsSpace::tall_columns() {
  return std::make_unique<HostTallColumns>(ctx_, a_, b_);
}

using FactorScales = solvers_detail::LsFactorScales;

void refine_columns(solvers_detail::LsSpace& space, std::int64_t columns, const LeastSquaresOptions& options,
                    const FactorScales& scales, LeastSquaresAttempt& result);
void solve_unrefined(solvers_detail::LsSpace& space, LeastSquaresAttempt& result);

// The factors of one attempt.
enum class Factors {
  Fp32,           // Householder QR of a_scale A rounded to FP32
  CholeskyQr,     // FP64 R by Cholesky QR preconditioned with the FP32 attempt's R (LsSpace)
  Fp64,           // Householder QR in FP64
  Fp64Unrefined,  // Householder QR in FP64 (on the device cuSOLVER's), its solution not refined
  RankRevealing,  // the held factors' R with column pivoting, then FP64 (qr/minimum_norm.hpp)
};

// What an attempt does where its factors find A numerically rank deficient.
enum class RankCheck {
  Throw,       // throws RankDeficientMatrix (full-rank semantics)
  EndAttempt,  // ends it (stop RankDeficient): the rank-revealing attempt follows
  Decided,     // no check: the rank-revealing attempt before it found every column independent
};

// One attempt: the factors of a_scale A (a_scale = 2^-exponent), then each column refined in
// FP64; in either memory space, by the method options.refinement names for FP32 factors (FP64
// factors: the plain or the semi-normal steps); scales := those of the factors.
// rank_check: what a rank-deficient A found by the factors does (RankCheck).
LeastSquaresAttempt attempt(solvers_detail::LsSpace& space, Factors factors, int exponent, std::int64_t m,
                            std::int64_t n, std::int64_t columns, std::int64_t block,
                            const LeastSquaresOptions& options, RankCheck rank_check, FactorScales& scales) {
  const bool rank_revealing_follows = rank_check == RankCheck::EndAttempt;
  LeastSquaresAttempt result;
  const bool fp64 = factors != Factors::Fp32;
  result.precision = fp64 ? Precision::FP64 : Precision::FP32;
  result.gmres = !fp64 && options.refinement == LeastSquaresOptions::Refinement::Gmres;
  result.cgls = !fp64 && options.refinement == LeastSquaresOptions::Refinement::Cgls;
  result.cholesky_qr = factors == Factors::CholeskyQr;
  result.unrefined = factors == Factors::Fp64Unrefined;
  const auto t0 = solvers_detail::Clock::now();
  std::vector<double> diagonal;
  if (factors == Factors::CholeskyQr) {
    solvers_detail::LsSpace::CholeskyQrFactors c = space.factor_cholesky_qr();
    // Where A R_32^-1 is far from orthogonal (R_2's diagonal spans more than 2^10, kappa(Y) then
    // ~1e4: the span underestimates it 10-40 times), the semi-normal steps contract by about
    // u_64 kappa(A) ||Y|| per step: too little beyond kappa ~ 1e11 (a 300 x 80 model: kappa(Y)
    // 170 at kappa 1e10 converged in 3 steps, 2e4 at 1e12 did not).
    if (!c.ok || !(c.y_diagonal_ratio > 0x1p-10)) {
      result.factor_seconds = solvers_detail::seconds_since(t0);
      result.stop = LeastSquaresStop::CholeskyBreakdown;
      return result;
    }
    diagonal = std::move(c.diagonal);
  } else {
    diagonal = space.factor(fp64, std::ldexp(1.0, -exponent), block, options.fp32_update, options.fp32_vt_c_update,
                            factors == Factors::Fp64Unrefined);
    result.update_backend = space.update_backend();
  }
  double largest = 0, smallest = INFINITY;
  std::int64_t smallest_column = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    largest = std::max(largest, diagonal[j]);
    if (diagonal[j] < smallest) smallest = diagonal[j], smallest_column = j;
  }
  result.diagonal_ratio = largest > 0 ? smallest / largest : 0;
  scales = {smallest, std::ldexp(largest, exponent), result.diagonal_ratio};  // a_scale = 2^-exponent
  result.factor_seconds = solvers_detail::seconds_since(t0);
  // FP32 factors carry rounding of order u_32 ||A||: where R's diagonal falls to 16 u_32 of its
  // largest entry they cannot tell an ill-conditioned A (kappa >~ 1e6) from a rank-deficient one,
  // and FP64 factors decide, unrefined here.
  if (!fp64 && !(result.diagonal_ratio > kCheapRankRatio)) {
    result.stop = LeastSquaresStop::RankUndecided;
    return result;
  }
  // Numerically rank deficient (sigma_min(A) <= max(m, n) 2^-53 ||A||_F): the least-squares
  // solution is not unique, and a refinement would settle on one of them. Checked where R's
  // diagonal spans more than 2^10: FP64 factors by inverse iteration; FP32 factors on the column
  // of smallest |r_jj|, which may be an exactly dependent one whose |r_jj| is FP32 rounding above
  // the undecided level (an intercept beside every group's indicator column), and on the last
  // column, where an unpivoted QR of mixed columns shows a dependence (its |r_jj| FP32 rounding
  // too, above an ill-conditioned independent column's).
  if (!(result.diagonal_ratio > 0x1p-10) && rank_check != RankCheck::Decided) {
    double bound = INFINITY;
    std::int64_t tested_column = smallest_column;
    bool weak_preconditioner = false;
    if (fp64) {
      bound = space.norm_a_times(space.smallest_singular_vector(smallest_column));
    } else if (m >= n) {
      std::vector<std::int64_t> tested{smallest_column};
      if (smallest_column != n - 1) tested.push_back(n - 1);
      for (std::int64_t j : tested) {
        const solvers_detail::LsSpace::ColumnDistance d = space.column_distance(j, options.max_iterations);
        if (std::isnan(d.norm_av)) continue;  // no estimate: the refinement decides
        // The FP32 R is too far from A's where CGLS with its leading block cannot find the
        // column's distance, or where its |r_jj| overstates that distance: FP32 rounding keeps
        // every |r_jj| above about u_32 ||A||, so past kappa ~ 1e7 one can exceed the FP64
        // distance by that factor, A R^-1 is then about as ill conditioned, and CGLS with this R
        // contracts slowly, or stops on corrections that look converged while x is wrong in the
        // direction of A's smallest singular vector (host models of 137 x 41 .. 1000 x 100 with
        // one small singular value: wrong x accepted above about 3e4, an x 16 times the FP64 QR's
        // error at 9e2, most attempts past 1e2 diverged). Where the distance test did not
        // converge its ||A v|| still bounds sigma_min(A) from above, and decides a rank deficiency.
        weak_preconditioner = weak_preconditioner || !d.converged ||
                              std::ldexp(diagonal[std::size_t(j)], exponent) > kCheapPreconditionerLimit * d.norm_av;
        if (d.norm_av < bound) bound = d.norm_av, tested_column = j;
      }
    }
    if (std::isnan(bound)) bound = INFINITY;  // no estimate: the refinement decides
    result.factor_seconds = solvers_detail::seconds_since(t0);
    const double tolerance = double(std::max(m, n)) * 0x1p-53 * space.norm_a_frobenius();
    if (!(bound > tolerance) && rank_revealing_follows) {
      result.stop = LeastSquaresStop::RankDeficient;
      return result;
    }
    // MinimumNorm without FP64 work to follow (fallback off, FP32 factorization): no solution,
    // as where the FP32 factors cannot decide the rank.
    if (!(bound > tolerance) && !fp64 && options.rank_deficient == LeastSquaresOptions::RankDeficiency::MinimumNorm) {
      result.stop = LeastSquaresStop::RankUndecided;
      return result;
    }
    if (!(bound > tolerance)) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "least_squares: A is numerically rank deficient: ||A v|| = %.3g for a unit v (at most max(m, n) "
                    "2^-53 ||A||_F = %.3g); %s at column %lld",
                    bound, tolerance, fp64 || tested_column == smallest_column ? "smallest |r_jj|" : "tested",
                    static_cast<long long>(tested_column));
      throw RankDeficientMatrix(text, tested_column);
    }
    // FP64 factors decide where the FP32 R cannot precondition A.
    if (weak_preconditioner) {
      result.stop = LeastSquaresStop::RankUndecided;
      return result;
    }
  }
  if (factors == Factors::Fp64Unrefined) {
    solve_unrefined(space, result);
    return result;
  }
  refine_columns(space, columns, options, scales, result);
  return result;
}

// X := the FP64 factors' own solutions (Factors::Fp64Unrefined): the FP64 QR solve, accepted as it
// is (stop Converged, no steps).
void solve_unrefined(solvers_detail::LsSpace& space, LeastSquaresAttempt& result) {
  const auto t0 = solvers_detail::Clock::now();
  space.solve_unrefined();
  result.stop = LeastSquaresStop::Converged;
  result.iterations = result.inner_iterations = 0;
  result.refine_seconds = solvers_detail::seconds_since(t0);
}

// Each column of X refined with the current factors by the attempt's method; its stop and
// iterations the worst over the columns.
void refine_columns(solvers_detail::LsSpace& space, std::int64_t columns, const LeastSquaresOptions& options,
                    const FactorScales& scales, LeastSquaresAttempt& result) {
  const auto t0 = solvers_detail::Clock::now();
  const solvers_detail::LsMethod method = result.gmres    ? solvers_detail::LsMethod::Gmres
                                          : result.x_only ? solvers_detail::LsMethod::XOnly
                                          : result.cgls   ? solvers_detail::LsMethod::Cgls
                                                          : solvers_detail::LsMethod::Augmented;
  result.stop = LeastSquaresStop::Converged;
  for (std::int64_t j = 0; j < columns; ++j) {
    const solvers_detail::LsRefinementResult refined = space.refine(j, options.max_iterations, method, scales);
    const LeastSquaresStop stop = refined.stop;
    if (severity(stop) > severity(result.stop)) result.stop = stop;
    result.iterations = std::max(result.iterations, refined.iterations);
    result.inner_iterations = std::max(result.inner_iterations, refined.inner_iterations);
  }
  result.refine_seconds = solvers_detail::seconds_since(t0);
}

// The rank-revealing attempt: the minimum-norm solutions from the held factors' R (FP32 factors
// made first where none are held), their rank and estimates into the report.
LeastSquaresAttempt rank_revealing_attempt(Context& ctx, solvers_detail::LsSpace& space, int exponent, std::int64_t m,
                                           std::int64_t n, std::int64_t columns, std::int64_t block,
                                           const LeastSquaresOptions& options, LeastSquaresReport& report) {
  LeastSquaresAttempt result;
  result.precision = Precision::FP64;
  result.rank_revealing = true;
  result.cgls = true;
  std::vector<double> r = space.factors_r();  // p x n, p = min(m, n)
  if (r.empty() && m >= n && n > 0) {
    space.factor(false, std::ldexp(1.0, -exponent), block, options.fp32_update, options.fp32_vt_c_update);
    r = space.factors_r();
  }
  const std::unique_ptr<solvers_detail::TallColumns> tall = space.tall_columns();
  const double rcond = options.rcond < 0 ? double(std::max(m, n)) * 0x1p-53 : options.rcond;
  std::vector<double> x(std::size_t(n * columns));
  const solvers_detail::MinimumNormResult found = solvers_detail::minimum_norm_solution(
      ctx, *tall, host_view<const double>(r.data(), std::min(m, n), n, std::max<std::int64_t>(std::min(m, n), 1)), rcond,
      options.max_iterations,
      host_view(x.data(), n, columns, std::max<std::int64_t>(n, 1)));
  space.write_x(host_view<const double>(x.data(), n, columns, std::max<std::int64_t>(n, 1)));
  result.stop = found.stop;
  result.iterations = found.iterations;
  result.inner_iterations = found.inner_iterations;
  result.rank = found.rank;
  result.diagonal_ratio = found.sigma_max > 0 ? found.sigma_kept / found.sigma_max : 0;
  result.factor_seconds = found.factor_seconds;
  result.refine_seconds = found.refine_seconds;
  report.rank = found.rank;
  report.sigma_max_estimate = found.sigma_max;
  report.rank_threshold = rcond * found.sigma_max;
  report.sigma_kept_estimate = found.sigma_kept;
  report.sigma_dropped_estimate = found.sigma_dropped;
  return result;
}

// The checks of A, B and X that need no pass over them, in the order least_squares()
// documents them.
// Underdetermined A (m < n): solved by the rank-revealing attempt, on host matrices under
// RankDeficiency::MinimumNorm only.
// (With ridge the stacked problem is tall whatever A's shape.)
bool solves_underdetermined(const MatrixView<const double>& a, const LeastSquaresOptions& options) {
  return options.ridge > 0 ||
         (a.memory == Memory::Host && options.rank_deficient == LeastSquaresOptions::RankDeficiency::MinimumNorm);
}

void check_arguments(const MatrixView<const double>& a, const MatrixView<const double>& b,
                     const MatrixView<double>& x, const LeastSquaresOptions& options) {
  const char* where = "least_squares";
  detail::check_view(where, "A", a);
  detail::check_view(where, "B", b);
  detail::check_view(where, "X", x);
  if (b.memory != a.memory || x.memory != a.memory)
    throw InvalidArgument(std::string("least_squares: B and X must be in ") + to_string(a.memory) + " memory, as A");
  if (a.rows < a.cols && !solves_underdetermined(a, options))
    throw InvalidArgument("least_squares: A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ": fewer rows than columns (underdetermined systems are solved for host matrices under "
                          "rank_deficient = MinimumNorm only)");
  if (b.rows != a.rows)
    throw InvalidArgument("least_squares: B has " + std::to_string(b.rows) + " rows, A " + std::to_string(a.rows));
  if (x.rows != a.cols || x.cols != b.cols)
    throw InvalidArgument("least_squares: X is " + std::to_string(x.rows) + " x " + std::to_string(x.cols) + ", not " +
                          std::to_string(a.cols) + " x " + std::to_string(b.cols));
  // A and B are read until the end, while X is written: no byte of X's storage range may lie in
  // theirs.
  detail::check_no_overlap(where, "X", x, "A", a);
  detail::check_no_overlap(where, "X", x, "B", b);
}

}  // namespace

std::string to_string(LeastSquaresStop s) {
  switch (s) {
    case LeastSquaresStop::Converged: return "converged";
    case LeastSquaresStop::Stagnated: return "stagnated";
    case LeastSquaresStop::Diverged: return "diverged";
    case LeastSquaresStop::MaxIterations: return "max iterations";
    case LeastSquaresStop::RankUndecided: return "rank undecided";
    case LeastSquaresStop::CholeskyBreakdown: return "cholesky breakdown";
    case LeastSquaresStop::RankDeficient: return "rank deficient";
  }
  return "unknown";
}

std::string LeastSquaresReport::path() const {
  std::string out;
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    const LeastSquaresAttempt& t = attempts[i];
    if (i) out += " -> ";
    if (t.rank_revealing) {
      out += "rrqr[rank " + std::to_string(t.rank) + "]";
      out += solvers_detail::accepted(t.stop)
                 ? "/cgls(" + std::to_string(t.iterations) + ", " + std::to_string(t.inner_iterations) + " inner)"
                 : "[" + to_string(t.stop) + " after " + std::to_string(t.iterations) + "]";
      continue;
    }
    out += to_string(t.precision) + (t.cholesky_qr ? "-cholqr" : "");
    if (t.unrefined && solvers_detail::accepted(t.stop))
      out += "/unrefined";
    else if (solvers_detail::accepted(t.stop))
      out += (t.gmres         ? "/gmres("
              : t.x_only      ? "/x-only("
              : t.cgls        ? "/cgls("
              : t.cholesky_qr ? "/semi-normal("
                              : "/augmented(") +
             std::to_string(t.iterations) +
             (t.cgls ? ", " + std::to_string(t.inner_iterations) + " inner)" : std::string(")"));
    else if (t.stop == LeastSquaresStop::RankUndecided || t.stop == LeastSquaresStop::CholeskyBreakdown ||
             t.stop == LeastSquaresStop::RankDeficient)
      out += "[" + to_string(t.stop) + "]";  // decided before any refinement
    else
      out += std::string(t.gmres    ? " gmres"
                         : t.x_only ? " x-only"
                         : t.cgls   ? " cgls"
                                    : "") +
             "[" + to_string(t.stop) + " after " + std::to_string(t.iterations) + "]";
  }
  return out;
}

// The state of a LeastSquares: A's memory space, the path of factors, and the factors held.
struct LeastSquares::State {
  Context* ctx = nullptr;
  MatrixView<const double> a;
  LeastSquaresOptions options;
  // With ridge: the stacked problem (driver/ridge_stack.hpp) is what the path solves, in `space`;
  // `plain` (A itself) gives the residual norms ||b - A x||.
  std::unique_ptr<solvers_detail::RidgeStack> ridge;
  std::unique_ptr<solvers_detail::LsSpace> space, plain;
  MatrixView<const double> solved;  // the matrix of the path: A, or [A; sqrt(ridge) I]
  // The factors to try in order: the cheap QR; where its refinement fails, FP64 factors from
  // Cholesky QR preconditioned with its R; where that Cholesky breaks down or its refinement
  // fails, the FP64 Householder QR, or under RankDeficiency::MinimumNorm the
  // rank-revealing attempt, which also follows the FP64 QR (without cholesky_qr, or where
  // factorization is FP64) where that finds A rank deficient or its refinement fails; after the
  // rank-revealing attempt the FP64 QR where it is not already on the path (run where that attempt
  // keeps every column of a tall A and fails).
  std::vector<Factors> path;
  bool minimum_norm = false;  // the path ends in the rank-revealing attempt
  // The factors hold a_scale A, a_scale = 2^-exponent, a power of two that brings A's largest
  // entry near 1: FP32's range would not hold every FP64 A (the refinement undoes the scale
  // exactly).
  int exponent = 0;
  // The factors of path[held_rung] whose refinement was accepted (held_attempt), and their scales;
  // held_rung < 0: none (before the first solve, or after one that none of the path solved).
  std::ptrdiff_t held_rung = -1;
  LeastSquaresAttempt held_attempt;
  FactorScales held_scales;
};

LeastSquares::LeastSquares(Context& ctx, const MatrixView<const double>& a, const LeastSquaresOptions& options)
    : state_(std::make_unique<State>()) {
  // A's checks: those of least_squares() with an empty B and X of A's shape.
  check_arguments(a, MatrixView<const double>{nullptr, a.rows, 0, std::max<std::int64_t>(a.rows, 1), a.memory},
                  MatrixView<double>{nullptr, a.cols, 0, std::max<std::int64_t>(a.cols, 1), a.memory}, options);
  solvers_detail::check_least_squares_options("least_squares", options, &a.memory);
  State& s = *state_;
  s.ctx = &ctx;
  s.a = a;
  s.options = options;
  const auto make_space = [&](const MatrixView<const double>& m) -> std::unique_ptr<solvers_detail::LsSpace> {
    if (m.memory == Memory::Device) return solvers_detail::make_device_ls_space(ctx, m);
    return std::make_unique<HostLsSpace>(ctx, m);
  };
  s.plain = make_space(a);
  const auto bad = s.plain->find_nonfinite(0);
  if (bad.first >= 0)
    throw InvalidArgument("least_squares: A(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) +
                          ") is NaN or Inf");
  s.solved = a;
  if (options.ridge > 0) {
    s.ridge = std::make_unique<solvers_detail::RidgeStack>(ctx, a, options.ridge);
    s.solved = s.ridge->a();
    s.space = make_space(s.solved);
  } else {
    s.space = std::move(s.plain);
  }
  const MatrixView<const double>& solved = s.solved;
  // Auto: below auto_min_work the FP64 QR solve alone (the cheap path's fixed costs do not pay).
  const std::int64_t min_work =
      options.auto_min_work >= 0 ? options.auto_min_work : (a.memory == Memory::Device ? kDeviceAutoMinWork : 0);
  const bool unrefined = options.factorization == Precision::Auto &&
                         double(solved.rows) * double(solved.cols) * double(solved.cols) < double(min_work);
  const bool fp64 = options.factorization == Precision::FP64 || unrefined;
  s.minimum_norm =
      options.rank_deficient == LeastSquaresOptions::RankDeficiency::MinimumNorm && (options.fallback || fp64);
  s.path = {unrefined ? Factors::Fp64Unrefined : fp64 ? Factors::Fp64 : Factors::Fp32};
  if (options.fallback && !fp64) {
    // Under MinimumNorm the Cholesky QR's breakdown (or failure) leads to the rank-revealing
    // attempt at once: it serves an ill-conditioned A as it serves a rank-deficient one, at the
    // cost of a QR of the columns it cannot decide in FP32, not of all of A.
    if (options.cholesky_qr) s.path.push_back(Factors::CholeskyQr);
    if (!s.minimum_norm || !options.cholesky_qr) s.path.push_back(Factors::Fp64);
  }
  if (s.minimum_norm) s.path.push_back(Factors::RankRevealing);
  // Where the rank-revealing attempt keeps every column of a tall A and its refinement fails
  // (kappa near the rank threshold, where its R preconditions CGLS too weakly), the FP64 QR and
  // its refinement follow (with fallback): that solution is never worse than the FP64 QR
  // solve's. Also after an FP64 QR earlier on the path, which ends at its own rank check
  // (max(m, n) u ||A||_F, which rcond sigma_max can contradict near the threshold) unrefined.
  if (s.minimum_norm && options.fallback) s.path.push_back(Factors::Fp64);
  if (solved.rows < solved.cols) {  // underdetermined: no QR of a wide A; the attempt starts from its own R
    s.path = {Factors::RankRevealing};
    s.minimum_norm = true;
  }
  const double largest_entry = s.space->largest_abs_a();
  if (largest_entry > 0) std::frexp(largest_entry, &s.exponent);
}

LeastSquares::~LeastSquares() = default;
LeastSquares::LeastSquares(LeastSquares&&) noexcept = default;
LeastSquares& LeastSquares::operator=(LeastSquares&&) noexcept = default;

Precision LeastSquares::precision() const {
  return state_->held_rung < 0 ? Precision::Auto : state_->held_attempt.precision;
}

LeastSquaresReport LeastSquares::solve(const MatrixView<const double>& b, const MatrixView<double>& x) {
  State& s = *state_;
  check_arguments(s.a, b, x, s.options);
  solvers_detail::LsSpace& space = *s.space;
  solvers_detail::LsSpace& plain = s.ridge ? *s.plain : space;  // the residual norms' A
  plain.bind(b, x);
  const auto bad = plain.find_nonfinite(1);
  if (bad.first >= 0)
    throw InvalidArgument("least_squares: B(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) +
                          ") is NaN or Inf");
  if (s.ridge) space.bind(s.ridge->b(b), x);
  const MatrixView<const double>& a = s.solved;  // from here on: the path's matrix

  LeastSquaresReport report;
  report.rank = a.cols;
  if (a.cols == 0 || b.cols == 0) {
    report.converged = true;
    report.residual_norms = plain.residual_norms();
    return report;
  }
  const LeastSquaresOptions& options = s.options;
  const std::int64_t block = options.block_size;  // 0: the memory space's choice
  // Factors held from an earlier solve: refined again for this B first (no factorization), and
  // where that fails the path goes on from the next factors.
  const std::ptrdiff_t reused = s.held_rung;
  s.held_rung = -1;
  for (std::size_t i = reused < 0 ? 0 : std::size_t(reused); i < s.path.size(); ++i) {
    // The rank-revealing attempt holds no factors of its own: it runs again from the held ones.
    const bool reuse = std::ptrdiff_t(i) == reused && s.path[i] != Factors::RankRevealing;
    // Cholesky QR needs the FP32 R invertible (a zero |r_jj|: an exactly dependent column).
    if (!reuse && s.path[i] == Factors::CholeskyQr && !(report.attempts.back().diagonal_ratio > 0)) continue;
    // A rank deficiency found goes straight to the rank-revealing attempt.
    if (!reuse && s.path[i] != Factors::RankRevealing && !report.attempts.empty() &&
        report.attempts.back().stop == LeastSquaresStop::RankDeficient)
      continue;
    // After the rank-revealing attempt only where it kept every column (full rank), and not
    // where FP64 QR factors were refined already (their refinement failed before it).
    if (!reuse && i > 0 && s.path[i - 1] == Factors::RankRevealing &&
        (report.rank < a.cols || std::any_of(report.attempts.begin(), report.attempts.end(), [](const auto& t) {
           return t.precision == Precision::FP64 && !t.cholesky_qr && !t.rank_revealing && !t.unrefined &&
                  t.stop != LeastSquaresStop::RankDeficient;
         })))
      continue;
    const RankCheck rank_check = i > 0 && s.path[i - 1] == Factors::RankRevealing ? RankCheck::Decided
                                 : s.minimum_norm                                 ? RankCheck::EndAttempt
                                                                                  : RankCheck::Throw;
    FactorScales scales;
    if (reuse) {
      LeastSquaresAttempt again = s.held_attempt;
      again.factor_seconds = 0;
      again.iterations = again.inner_iterations = 0;
      scales = s.held_scales;
      if (again.unrefined)
        solve_unrefined(space, again);
      else
        refine_columns(space, b.cols, options, scales, again);
      report.attempts.push_back(again);
    } else if (s.path[i] == Factors::RankRevealing) {
      report.attempts.push_back(
          rank_revealing_attempt(*s.ctx, space, s.exponent, a.rows, a.cols, b.cols, block, options, report));
    } else {
      report.attempts.push_back(
          attempt(space, s.path[i], s.exponent, a.rows, a.cols, b.cols, block, options, rank_check, scales));
    }
    report.fell_back = i > 0 && s.path.front() == Factors::Fp32;
    if (solvers_detail::accepted(report.attempts.back().stop)) {
      s.held_rung = std::ptrdiff_t(i);
      s.held_attempt = report.attempts.back();
      s.held_scales = scales;
      report.converged = true;
      break;
    }
    // The FP32 factors' plain steps did not converge. Refining x alone with the same factors
    // reaches FP64's accuracy where the system is consistent (accepted only there: LsMethod);
    // then GMRES-LS where asked. Each on every column again (one attempt, one stop).
    const LeastSquaresStop stop = report.attempts.back().stop;
    const auto rescue = [&](bool gmres) {  // another refinement with the same factors
      LeastSquaresAttempt again;
      again.precision = Precision::FP32;
      again.gmres = gmres;
      again.x_only = !gmres;
      again.diagonal_ratio = report.attempts.back().diagonal_ratio;
      refine_columns(space, b.cols, options, scales, again);
      report.attempts.push_back(again);
      if (!solvers_detail::accepted(again.stop)) return false;
      s.held_rung = std::ptrdiff_t(i);
      s.held_attempt = again;
      s.held_scales = scales;
      return true;
    };
    // CGLS takes no rescue: where it fails, the Cholesky QR follows. (The rescue, x alone, serves
    // the plain steps, which diverge on some consistent systems near kappa u_32 ~ 0.1; CGLS
    // converged on every consistent system of the tests and of a 1680-problem model.)
    const bool cheap_factors = s.path[i] == Factors::Fp32 && stop != LeastSquaresStop::RankUndecided &&
                               stop != LeastSquaresStop::RankDeficient &&
                               options.refinement != LeastSquaresOptions::Refinement::Cgls;
    if (cheap_factors && options.refinement != LeastSquaresOptions::Refinement::Gmres && rescue(false)) {
      report.converged = true;
      break;
    }
    if (cheap_factors && options.refinement == LeastSquaresOptions::Refinement::AugmentedThenGmres && rescue(true)) {
      report.converged = true;
      break;
    }
  }
  // Not refined: no solution (a Cholesky QR attempt is always followed by another: the FP64 QR or
  // the rank-revealing attempt).
  if (report.attempts.back().stop == LeastSquaresStop::RankUndecided) space.fill_x_with_nan();
  report.residual_norms = plain.residual_norms();
  return report;
}

LeastSquaresReport least_squares(Context& ctx, const MatrixView<const double>& a, const MatrixView<const double>& b,
                                 const MatrixView<double>& x, const LeastSquaresOptions& options) {
  // The checks that need no pass over A or B first, in the order of the documentation; then A's
  // scan (LeastSquares' constructor) and B's (its solve).
  check_arguments(a, b, x, options);
  solvers_detail::check_least_squares_options("least_squares", options, &a.memory);
  LeastSquares factored(ctx, a, options);
  return factored.solve(b, x);
}

}  // namespace mixsolve
