// SPDX-License-Identifier: BSD-3-Clause
// Host engine: blocked LU with partial pivoting whose trailing updates go through a host GEMM
// backend (Eigen, the tensor-core model of gemm/ for FP16 / BF16 / TF32 / halfhalf / tf32tf32
// rounding, or the INT8 emulation's model for Ozaki), triangular solves in the working precision,
// residuals in double-double or FP64 (HostSpace).
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "cholesky/host_cholesky.hpp"
#include "engine.hpp"
#include "lu/lu_rules.hpp"
#include "refinement/host_space.hpp"
#include "tuning.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail {

namespace {

// Right-looking blocked LU with partial pivoting of the n x n matrix a (leading dimension n),
// trailing updates A22 -= L21 U12 through `update` with its `parameters`. Returns the first zero
// pivot's column or -1.
// With largest_multiplier (SolveOptions::reuse_pivot_order, FactorRequest::diagonal_blocks): in
// the blocks that start before column in_order_columns pivots are searched only inside the
// diagonal block (the rows already stand in a chosen order), L21 = A21 U11^-1 is one product on
// `update` with U11^-1 computed in FP64 and stored as T (as the device LU does), and
// *largest_multiplier gets max |l_ij| below those diagonal blocks (NaN if one is NaN); later
// blocks pivot partially.
// With collapsed_at (collapse_below > 0): after each block, whether the pivots so far collapsed
// (kCollapseMinPivots); if so *collapsed_at gets the block's end and the LU stops there.
// L21 = A21 U11^-1 for the block [j0, j0 + jb) of the n x n factors a whose diagonal block is
// factored, U11^-1 computed in FP64 and stored as T, the product on `update`; *largest = max(
// *largest, max |l_ij|) (NaN if one is NaN).
template <class T>
void multipliers_in_order(std::vector<T>& a, std::int64_t n, std::int64_t j0, std::int64_t jb,
                          const gemm::Backend& update, const gemm::Parameters& parameters, Context& ctx,
                          double* largest) {
  auto at = [&](std::int64_t i, std::int64_t j) -> T& { return a[i + j * n]; };
  std::vector<double> inverse(jb * jb, 0.0);  // column-major U11^-1, by back substitution per column
  for (std::int64_t c = 0; c < jb; ++c) {
    inverse[c + c * jb] = 1.0 / double(at(j0 + c, j0 + c));
    for (std::int64_t i = c - 1; i >= 0; --i) {
      double sum = 0;
      for (std::int64_t k = i + 1; k <= c; ++k) sum += double(at(j0 + i, j0 + k)) * inverse[k + c * jb];
      inverse[i + c * jb] = -sum / double(at(j0 + i, j0 + i));
    }
  }
  const std::vector<T> u11_inverse(inverse.begin(), inverse.end());
  const std::int64_t rows = n - j0 - jb;
  std::vector<T> a21(rows * jb);
  for (std::int64_t j = 0; j < jb; ++j)
    for (std::int64_t i = 0; i < rows; ++i) a21[i + j * rows] = at(j0 + jb + i, j0 + j);
  update.run(ctx,
             gemm::to_problem(gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::N, rows, jb, jb, T(1), a21.data(), rows,
                                                u11_inverse.data(), jb, T(0), &at(j0 + jb, j0), n}),
             parameters, gemm::Execution{false});
  for (std::int64_t j = j0; j < j0 + jb; ++j)
    for (std::int64_t i = j0 + jb; i < n; ++i) {
      const double l = std::abs(double(at(i, j)));
      if (std::isnan(l) || l > *largest) *largest = l;  // a NaN stays
    }
}

template <class T>
std::int64_t lu_factor(std::vector<T>& a, std::int64_t n, std::vector<std::int64_t>& pivots, int nb,
                       const gemm::Backend& update, const gemm::Parameters& parameters, Context& ctx,
                       double* largest_multiplier = nullptr, std::int64_t in_order_columns = 0,
                       double collapse_below = 0, std::int64_t* collapsed_at = nullptr) {
  auto at = [&](std::int64_t i, std::int64_t j) -> T& { return a[i + j * n]; };
  pivots.assign(n, 0);
  if (largest_multiplier) *largest_multiplier = 0;
  PivotWatch watch;
  for (std::int64_t j0 = 0; j0 < n; j0 += nb) {
    const std::int64_t jb = std::min<std::int64_t>(nb, n - j0);
    const bool in_order = largest_multiplier && j0 < in_order_columns;
    const std::int64_t panel_end = in_order ? j0 + jb : n;  // the rows searched and factored here
    for (std::int64_t j = j0; j < j0 + jb; ++j) {  // unblocked panel, working precision
      std::int64_t p = j;
      for (std::int64_t i = j + 1; i < panel_end; ++i)
        if (std::abs(at(i, j)) > std::abs(at(p, j))) p = i;
      pivots[j] = p;
      if (at(p, j) == T(0)) return j;
      if (p != j)
        for (std::int64_t c = 0; c < n; ++c) std::swap(at(j, c), at(p, c));
      const T inv = T(1) / at(j, j);
      for (std::int64_t i = j + 1; i < panel_end; ++i) at(i, j) *= inv;
      for (std::int64_t c = j + 1; c < j0 + jb; ++c)
        for (std::int64_t i = j + 1; i < panel_end; ++i) at(i, c) -= at(i, j) * at(j, c);
    }
    if (in_order && j0 + jb < n) {
      const bool accurate = std::is_same_v<T, float> && tuning().fp32_accurate_l21;  // Tuning::fp32_accurate_l21
      multipliers_in_order(a, n, j0, jb, accurate ? host_update_backend(Precision::Fp16x3) : update,
                           accurate ? gemm::Parameters{} : parameters, ctx, largest_multiplier);
    }
    if (collapse_below > 0 && collapsed_at) {
      for (std::int64_t j = j0; j < j0 + jb; ++j) watch_pivot(watch, std::abs(double(at(j, j))), collapse_below);
      if (pivots_collapsed(watch.small, j0 + jb)) {
        *collapsed_at = j0 + jb;
        return -1;
      }
    }
    const std::int64_t rest = n - j0 - jb;
    if (rest == 0) continue;
    for (std::int64_t c = j0 + jb; c < n; ++c)  // U12 = L11^-1 A12 (unit lower)
      for (std::int64_t j = j0; j < j0 + jb; ++j)
        for (std::int64_t i = j + 1; i < j0 + jb; ++i) at(i, c) -= at(i, j) * at(j, c);
    gemm::GemmArgs<T> g{gemm::Op::N, gemm::Op::N, rest, rest, jb, T(-1), &at(j0 + jb, j0), n,
                        &at(j0, j0 + jb), n, T(1), &at(j0 + jb, j0 + jb), n};
    // A22 -= L21 U12 in the backend's arithmetic
    update.run(ctx, gemm::to_problem(g), parameters, gemm::Execution{g.check_range});
  }
  return -1;
}

// y := U^-1 L^-1 P y for factors of type F in the arithmetic of W, column by column.
// With row_order (not empty): the factors are of A's rows in that order (row i of them is row
// row_order[i] of A).
template <class W, class F>
void lu_solve(const std::vector<F>& lu, std::int64_t n, const std::vector<std::int64_t>& pivots,
              const std::vector<std::int64_t>& row_order, const MatrixView<double>& y) {
  std::vector<W> w(n);
  for (std::int64_t c = 0; c < y.cols; ++c) {
    for (std::int64_t i = 0; i < n; ++i) w[i] = static_cast<W>(y(row_order.empty() ? i : row_order[i], c));
    for (std::int64_t i = 0; i < n; ++i) std::swap(w[i], w[pivots[i]]);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = j + 1; i < n; ++i) w[i] -= lu[i + j * n] * w[j];
    for (std::int64_t j = n - 1; j >= 0; --j) {
      w[j] /= lu[j + j * n];
      for (std::int64_t i = 0; i < j; ++i) w[i] -= lu[i + j * n] * w[j];
    }
    for (std::int64_t i = 0; i < n; ++i) y(i, c) = static_cast<double>(w[i]);
  }
}

// The transpose of lu_solve's operator, U^-1 L^-1 P G (G gathers by row_order, P the
// sequential interchanges), applied to the vector y in FP64 arithmetic:
// y := G^T P^T L^-T U^-T y.
template <class F>
void lu_solve_transposed(const std::vector<F>& lu, std::int64_t n, const std::vector<std::int64_t>& pivots,
                         const std::vector<std::int64_t>& row_order, double* y) {
  std::vector<double> w(y, y + n);
  for (std::int64_t j = 0; j < n; ++j) {  // U^T w = y: forward, U^T lower
    double s = w[j];
    for (std::int64_t i = 0; i < j; ++i) s -= lu[i + j * n] * w[i];
    w[j] = s / lu[j + j * n];
  }
  for (std::int64_t j = n - 1; j >= 0; --j)  // L^T w = w: backward, unit diagonal
    for (std::int64_t i = j + 1; i < n; ++i) w[j] -= lu[i + j * n] * w[i];
  for (std::int64_t i = n - 1; i >= 0; --i) std::swap(w[i], w[pivots[i]]);
  for (std::int64_t i = 0; i < n; ++i) y[row_order.empty() ? i : row_order[i]] = w[i];
}

template <class T>
bool all_finite(const std::vector<T>& v) {
  return std::all_of(v.begin(), v.end(), [](T x) { return std::isfinite(x); });
}

class HostEngine final : public HostSpace {
 public:
  HostEngine(Context& ctx, const MatrixView<const double>& a, int block_size) : HostSpace(ctx, a) {
    nb_ = block_size > 0 ? block_size : 32;
  }

  std::int64_t default_auto_min_n(FactorKind) const override { return 0; }

  double norm_inf() override {
    double best = 0;
    for (std::int64_t i = 0; i < n_; ++i) {
      double s = 0;
      for (std::int64_t j = 0; j < n_; ++j) s += std::fabs(a_[i + j * n_]);
      best = std::max(best, s);
    }
    return best;
  }

  std::pair<std::int64_t, std::int64_t> find_nonfinite(const MatrixView<const double>& m) override {
    for (std::int64_t j = 0; j < m.cols; ++j)
      for (std::int64_t i = 0; i < m.rows; ++i)
        if (!std::isfinite(m(i, j))) return {i, j};
    return {-1, -1};
  }

  std::pair<std::int64_t, std::int64_t> find_asymmetry() override {
    for (std::int64_t j = 0; j < n_; ++j)
      for (std::int64_t i = j + 1; i < n_; ++i)
        if (a_[i + j * n_] != a_[j + i * n_]) return {i, j};
    return {-1, -1};
  }

  FactorResult factor(const FactorRequest& request) override {
    if (request.kind == FactorKind::Cholesky) return factor_cholesky(request);
    const Precision p = request.precision;
    const double collapse_below = request.collapse_below;
    const gemm::Backend& update = host_update_backend(p);
    FactorResult result;
    // The row order of the previous factorization, where an LU completed (engine.hpp).
    std::vector<std::int64_t> order;
    std::int64_t order_columns = 0;
    if (request.reuse_pivot_order && p == Precision::FP64 && factors_complete_ && kind_ == FactorKind::Lu &&
        row_scale_.empty()) {
      order = current_row_order();
      // whole blocks, as the device LU's panels
      order_columns = trusted_order_columns(pivot_magnitudes(), unit_roundoff(precision_, ozaki_bits_)) / nb_ * nb_;
    }
    start_factorization(FactorKind::Lu, p);
    if (request.range_scaling && !fp64_factors(p)) compute_range_scaling();
    const gemm::Parameters parameters = update_parameters(p);
    if (fp64_factors(p)) {
      if (order_columns > 0 && factor_in_order(order, order_columns, update, parameters, result)) {
        factors_complete_ = true;
        return result;
      }
      double_factors_ = a_;
      result.zero_pivot_column = lu_factor(double_factors_, n_, pivots_, nb_, update, parameters, ctx_);
      if (result.zero_pivot_column < 0 && !all_finite(double_factors_)) result.status = StopReason::Overflow;
    } else {
      const auto convert_a = [&] {  // mu R A S: products of powers of two, exact in FP64 before the one rounding
        float_factors_.resize(a_.size());
        for (std::int64_t j = 0; j < n_; ++j)
          for (std::int64_t i = 0; i < n_; ++i)
            float_factors_[i + j * n_] = static_cast<float>(a_[i + j * n_] * mu_ * row_scale(i) * column_scale(j));
      };
      convert_a();
      if (!all_finite(float_factors_)) {
        result.status = StopReason::Overflow;  // beyond FP32's range
        return result;
      }
      bool factored = false;
      if (request.diagonal_blocks) {  // A's own order, pivoting inside the diagonal blocks
        double largest = 0;
        const std::int64_t zero = lu_factor(float_factors_, n_, pivots_, nb_, update, parameters, ctx_, &largest, n_);
        result.largest_multiplier = largest;
        factored = zero < 0 && largest <= kReusedOrderMaxMultiplier && all_finite(float_factors_);
        result.pivot_order = factored ? PivotOrder::DiagonalBlocks : PivotOrder::DiagonalBlocksRejected;
        if (!factored) convert_a();  // then partial pivoting
      }
      if (!factored) {
        result.zero_pivot_column = lu_factor(float_factors_, n_, pivots_, nb_, update, parameters, ctx_, nullptr, 0,
                                             collapse_below, &result.collapsed_at_column);
        if (result.zero_pivot_column < 0 && result.collapsed_at_column >= 0) {
          result.status = StopReason::CollapsedPivots;
          return result;
        }
        if (result.zero_pivot_column < 0 && !all_finite(float_factors_)) result.status = StopReason::Overflow;
      }
      if (factor_storage_ != slfp::Format::Fp32) store_factors_rounded();
    }
    if (result.zero_pivot_column >= 0) result.status = StopReason::ZeroPivot;
    if (p == Precision::Ozaki) result.emulated_bits = ozaki_bits_;
    factors_complete_ = result.status == StopReason::Converged;
    peak_ = std::max(peak_, factors_bytes() + scratch_bytes());
    return result;
  }

  // The Cholesky of A's lower triangle (of mu S A S where range-scaled), stored as LU factors
  // (engine.hpp, cholesky/host_cholesky.hpp).
  FactorResult factor_cholesky(const FactorRequest& request) {
    const Precision p = request.precision;
    const gemm::Backend& update = host_update_backend(p);
    const gemm::Parameters parameters = update_parameters(p);
    const std::int64_t chunk = tuning().cholesky_inner_chunk > 0
                                   ? tuning().cholesky_inner_chunk
                                   : update_inner_chunk(precision_info(p).truncating_long_products, nb_);
    FactorResult result;
    start_factorization(FactorKind::Cholesky, p);
    if (request.range_scaling && !fp64_factors(p)) compute_symmetric_scaling();
    pivots_.resize(n_);
    std::iota(pivots_.begin(), pivots_.end(), std::int64_t(0));
    CholeskyBreakdown breakdown;
    if (fp64_factors(p)) {
      double_factors_ = a_;
      breakdown = cholesky_factor(double_factors_, n_, nb_, chunk, update, parameters, ctx_);
      if (breakdown.column < 0) cholesky_to_lu_form(double_factors_, n_);
      if (breakdown.column < 0 && !all_finite(double_factors_)) result.status = StopReason::Overflow;
    } else {
      float_factors_.resize(a_.size());
      for (std::int64_t j = 0; j < n_; ++j)  // mu S A S, exact in FP64 before the one rounding
        for (std::int64_t i = j; i < n_; ++i)
          float_factors_[i + j * n_] = static_cast<float>(a_[i + j * n_] * mu_ * row_scale(i) * column_scale(j));
      if (!all_finite(float_factors_)) {
        result.status = StopReason::Overflow;  // beyond FP32's range
        return result;
      }
      breakdown = cholesky_factor(float_factors_, n_, nb_, chunk, update, parameters, ctx_);
      if (breakdown.column < 0) cholesky_to_lu_form(float_factors_, n_);
      if (breakdown.column < 0 && !all_finite(float_factors_)) result.status = StopReason::Overflow;
      if (breakdown.column < 0 && factor_storage_ != slfp::Format::Fp32) store_factors_rounded();
    }
    if (breakdown.column >= 0) {
      // A is finite: a pivot that is NaN or -Inf comes from an overflow of the factors (an entry
      // beyond the arithmetic's range), not from A.
      const bool overflow = !std::isfinite(breakdown.pivot);
      result.status = overflow ? StopReason::Overflow : StopReason::NotPositiveDefinite;
      if (!overflow) {
        result.zero_pivot_column = breakdown.column;
        result.breakdown_pivot = breakdown.pivot;
      }
    }
    result.largest_diagonal = largest_scaled_diagonal();
    if (p == Precision::Ozaki) result.emulated_bits = ozaki_bits_;
    factors_complete_ = result.status == StopReason::Converged;
    peak_ = std::max(peak_, factors_bytes() + scratch_bytes());
    return result;
  }

  // Forgets the current factors, before a factorization of `kind` in precision p.
  void start_factorization(FactorKind kind, Precision p) {
    factors_complete_ = false;
    kind_ = kind;
    precision_ = p;
    row_order_.clear();
    double_factors_.clear();
    float_factors_.clear();
    row_scale_.clear();
    column_scale_.clear();
    mu_ = 1.0;
  }

  // Ozaki's updates keep ozaki_bits_ bits of each operand.
  gemm::Parameters update_parameters(Precision p) const {
    return p == Precision::Ozaki ? gemm::Parameters{{"bits", ozaki_bits_}} : gemm::Parameters{};
  }

  // max a_ii of the matrix factored (mu S A S where scaled): the scale of a Cholesky's pivots.
  double largest_scaled_diagonal() const {
    double largest = 0;
    for (std::int64_t i = 0; i < n_; ++i)
      largest = std::max(largest, std::fabs(a_[i + i * n_]) * mu_ * row_scale(i) * column_scale(i));
    return largest;
  }

  // The FP64 LU of A's rows in `order`, pivoting inside the diagonal blocks; true where its check
  // passed (kReusedOrderMaxMultiplier), else the caller factors with partial pivoting.
  bool factor_in_order(const std::vector<std::int64_t>& order, std::int64_t order_columns, const gemm::Backend& update,
                       const gemm::Parameters& parameters, FactorResult& result) {
    double_factors_.resize(a_.size());
    for (std::int64_t j = 0; j < n_; ++j)
      for (std::int64_t i = 0; i < n_; ++i) double_factors_[i + j * n_] = a_[order[i] + j * n_];
    double largest = 0;
    const std::int64_t zero =
        lu_factor(double_factors_, n_, pivots_, nb_, update, parameters, ctx_, &largest, order_columns);
    result.largest_multiplier = largest;
    if (zero < 0 && largest <= kReusedOrderMaxMultiplier && all_finite(double_factors_)) {
      result.pivot_order = PivotOrder::Reused;
      result.reused_columns = std::min(order_columns, n_);
      row_order_ = order;
      return true;
    }
    result.pivot_order = PivotOrder::Rejected;
    return false;
  }

  double pivot_ratio() override {
    double smallest = INFINITY, largest = 0;
    for (std::int64_t k = 0; k < n_; ++k) {
      const double u = pivot_magnitude(k);
      smallest = std::min(smallest, u);
      largest = std::max(largest, u);
    }
    return largest > 0 ? smallest / largest : 0.0;
  }

  // |u_kk| of the current factors, in column order.
  std::vector<double> pivot_magnitudes() const {
    std::vector<double> magnitudes(n_);
    for (std::int64_t k = 0; k < n_; ++k) magnitudes[k] = pivot_magnitude(k);
    return magnitudes;
  }

  // |u_kk| of the current factors.
  double pivot_magnitude(std::int64_t k) const {
    return std::fabs(double_factors_.empty() ? double(float_factors_[k + k * n_]) : double_factors_[k + k * n_]);
  }

  // The gather list of the current factors: row i of P A is row current_row_order()[i] of A.
  std::vector<std::int64_t> current_row_order() const {
    std::vector<std::int64_t> order = row_order_;
    if (order.empty()) {
      order.resize(n_);
      std::iota(order.begin(), order.end(), std::int64_t(0));
    }
    for (std::int64_t i = 0; i < n_; ++i) std::swap(order[i], order[pivots_[i]]);
    return order;
  }

  void apply_inverse(const MatrixView<double>& y) override {
    if (!double_factors_.empty()) {
      lu_solve<double>(double_factors_, n_, pivots_, row_order_, y);
      return;
    }
    // A^-1 = mu S M^-1 R for the factors M of mu R A S (R = S = I, mu = 1 unscaled). As on the
    // device (engine.hpp), up to kFp64ApplyMaxColumns columns the FP32 factors are applied in
    // FP64 arithmetic.
    if (y.cols <= kFp64ApplyMaxColumns) {
      for (std::int64_t c = 0; c < y.cols; ++c)
        for (std::int64_t i = 0; i < n_; ++i) y(i, c) *= row_scale(i);
      lu_solve<double>(float_factors_, n_, pivots_, row_order_, y);
      for (std::int64_t c = 0; c < y.cols; ++c)
        for (std::int64_t i = 0; i < n_; ++i) y(i, c) *= mu_ * column_scale(i);
      return;
    }
    // More columns are solved in FP32. Each column then gets a power of two sigma that brings
    // max |R y| to [1/2, 1) before it is rounded to FP32: a residual's size follows A's scale and
    // may lie outside FP32's range.
    for (std::int64_t c = 0; c < y.cols; ++c) {
      double largest = 0;
      for (std::int64_t i = 0; i < n_; ++i) largest = std::max(largest, std::fabs(y(i, c)) * row_scale(i));
      const double sigma = equilibrating_power_of_two(largest);
      for (std::int64_t i = 0; i < n_; ++i) y(i, c) *= row_scale(i) * sigma;
      lu_solve<float>(float_factors_, n_, pivots_, row_order_, y.block(0, c, n_, 1));
      for (std::int64_t i = 0; i < n_; ++i) y(i, c) *= mu_ * column_scale(i) / sigma;
    }
  }

  // apply_inverse's operator mu S M^-1 R (FP32 factors; R = S = I, mu = 1 unscaled) transposed:
  // mu R M^-T S.
  void apply_inverse_transpose(double* y) override {
    if (!double_factors_.empty()) {
      lu_solve_transposed(double_factors_, n_, pivots_, row_order_, y);
      return;
    }
    for (std::int64_t i = 0; i < n_; ++i) y[i] *= mu_ * column_scale(i);
    lu_solve_transposed(float_factors_, n_, pivots_, row_order_, y);
    for (std::int64_t i = 0; i < n_; ++i) y[i] *= row_scale(i);
  }

  bool badly_scaled() override {
    std::vector<double> row_largest, column_largest;
    largest_per_row_and_column(row_largest, column_largest);
    return choose_range_scaling(row_largest, column_largest).two_sided;
  }

  std::size_t peak_workspace_bytes() const override { return peak_; }

 private:
  // The largest |a_ij| of each row and of each column.
  void largest_per_row_and_column(std::vector<double>& row_largest, std::vector<double>& column_largest) const {
    row_largest.assign(n_, 0.0);
    column_largest.assign(n_, 0.0);
    for (std::int64_t j = 0; j < n_; ++j)
      for (std::int64_t i = 0; i < n_; ++i) {
        const double v = std::fabs(a_[i + j * n_]);
        row_largest[i] = std::max(row_largest[i], v);
        column_largest[j] = std::max(column_largest[j], v);
      }
  }

  // R, S and mu of SolveOptions::range_scaling (engine.hpp): R from the rows, S from the
  // columns of R A; both only where the rows' or columns' maxima spread widely.
  void compute_range_scaling() {
    std::vector<double> row_largest, column_largest;
    largest_per_row_and_column(row_largest, column_largest);
    const RangeScaling choice = choose_range_scaling(row_largest, column_largest);
    mu_ = choice.mu;
    row_scale_.clear();
    column_scale_.clear();
    if (!choice.two_sided) return;
    row_scale_.resize(n_);
    column_scale_.resize(n_);
    for (std::int64_t i = 0; i < n_; ++i) row_scale_[i] = equilibrating_power_of_two(row_largest[i]);
    for (std::int64_t j = 0; j < n_; ++j) {
      double largest = 0;
      for (std::int64_t i = 0; i < n_; ++i) largest = std::max(largest, std::fabs(a_[i + j * n_]) * row_scale_[i]);
      column_scale_[j] = equilibrating_power_of_two(largest);
    }
  }

  // The Cholesky's R = S and mu (lu_rules.hpp, symmetric_equilibrating_power_of_two): S only
  // where the rows' largest entries spread widely, as for the LU.
  void compute_symmetric_scaling() {
    std::vector<double> row_largest, column_largest;
    largest_per_row_and_column(row_largest, column_largest);
    const RangeScaling choice = choose_range_scaling(row_largest, column_largest);
    mu_ = choice.mu;
    if (!choice.two_sided) return;
    row_scale_.resize(n_);
    for (std::int64_t i = 0; i < n_; ++i) row_scale_[i] = symmetric_equilibrating_power_of_two(a_[i + i * n_]);
    column_scale_ = row_scale_;
  }

  void track_peak() override { peak_ = std::max(peak_, factors_bytes() + scratch_bytes()); }
  std::size_t factors_bytes() const {
    return double_factors_.size() * sizeof(double) + float_factors_.size() * sizeof(float) +
           (pivots_.size() + row_order_.size()) * sizeof(std::int64_t) +
           (row_scale_.size() + column_scale_.size()) * sizeof(double);
  }
  std::vector<double> double_factors_;
  std::vector<float> float_factors_;

  // SolveOptions::factor_storage: the FP32 factors rounded in place (RN) to the values the
  // device engine's packed copy holds.
  void store_factors_rounded() {
    const std::int64_t count = std::int64_t(float_factors_.size());
    slfp::Storage stored(factor_storage_, count, Memory::Host);
    if (slfp::fp64_based(factor_storage_)) {
      std::vector<double> wide(float_factors_.begin(), float_factors_.end());
      slfp::encode(ctx_, wide.data(), stored.view(), slfp::Rounding::NearestEven);
      slfp::decode(ctx_, stored.view(), wide.data());
      std::copy(wide.begin(), wide.end(), float_factors_.begin());  // exact (fewer bits) but past FP32's largest
    } else {
      slfp::encode(ctx_, float_factors_.data(), stored.view(), slfp::Rounding::NearestEven);
      slfp::decode(ctx_, stored.view(), float_factors_.data());
    }
  }
  std::vector<std::int64_t> pivots_;
  std::vector<std::int64_t> row_order_;  // the factors are of A's rows in this order; empty: A's own
  bool factors_complete_ = false;        // the current factors are a completed factorization of A
  FactorKind kind_ = FactorKind::Lu;     // of the current factors
  std::vector<double> row_scale_, column_scale_;  // R and S; empty: identities
  double mu_ = 1.0;
  double row_scale(std::int64_t i) const { return row_scale_.empty() ? 1.0 : row_scale_[i]; }
  double column_scale(std::int64_t j) const { return column_scale_.empty() ? 1.0 : column_scale_[j]; }
  Precision precision_ = Precision::FP64;  // of the current factors
  int nb_ = 32;
  std::size_t peak_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_host_engine(Context& ctx, const MatrixView<const double>& a, int block_size) {
  return std::make_unique<HostEngine>(ctx, a, block_size);
}

}  // namespace mixsolve::solvers_detail
