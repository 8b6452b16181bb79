// SPDX-License-Identifier: BSD-3-Clause
#include "qr/least_squares_refinement.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "refinement/givens_hessenberg.hpp"
#include "scaled_norm.hpp"

namespace mixsolve::solvers_detail {

int rhs_scale_exponent(double largest) {
  if (!(largest > 0) || !std::isfinite(largest)) return 0;
  int exponent = 0;
  std::frexp(largest, &exponent);  // largest < 2^exponent
  // 2^-1020 .. 2^1020 keep the scale finite; largest 2^1020 still lies within FP32's range for
  // any FP64 largest (down to 2^-54 for the smallest subnormal).
  return std::clamp(exponent, -1020, 1020);
}

namespace {
[[noreturn]] void no_q() { throw std::logic_error("LsSteps: these steps have no Q (x alone and GMRES-LS need one)"); }
}  // namespace

LsSteps::Norms LsSteps::x_step() { no_q(); }
void LsSteps::reserve(int) { no_q(); }
void LsSteps::residual(int, double) { no_q(); }
void LsSteps::precondition(int, int, double) { no_q(); }
void LsSteps::augmented_product(int, int, double) { no_q(); }
double LsSteps::dot(int, int) { no_q(); }
void LsSteps::axpy(double, int, int) { no_q(); }
void LsSteps::scale(int, double) { no_q(); }
LsSteps::Norms LsSteps::add_correction(const std::vector<double>&, double) { no_q(); }

namespace {
[[noreturn]] void no_cgls() {
  throw std::logic_error("LsSteps: these steps do not run CGLS (the semi-normal ones do)");
}
}  // namespace

double LsSteps::cg_begin() { no_cgls(); }
double LsSteps::cg_product() { no_cgls(); }
double LsSteps::cg_update(double) { no_cgls(); }
void LsSteps::cg_direction(double) { no_cgls(); }
void LsSteps::cg_keep() { no_cgls(); }
LsSteps::Norms LsSteps::cg_finish() { no_cgls(); }

namespace {

// NaN where any v_i is not finite, so that the refinement sees it.
double norm2(const double* v, std::int64_t count) { return scaled_norm2(v, count); }

// A sum of values and products as accurate as in twice FP64's precision, rounded once (Ogita,
// Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26(6), 2005, Algorithm
// Dot2: each product's error by FMA, each sum's by TwoSum, the errors summed apart). Needs
// -ffp-contract=off on this file (solvers/CMakeLists.txt): a fused s = sum + v would break
// TwoSum, as would value-unsafe optimizations.
#ifdef __FAST_MATH__
#error "least_squares_refinement.cpp: compensated sums need IEEE arithmetic (no -ffast-math)"
#endif
class CompensatedSum {
 public:
  explicit CompensatedSum(double start = 0) : sum_(start) {}
  void add(double v) {  // sum + v = s + (the error term), exactly
    const double s = sum_ + v, bv = s - sum_;
    error_ += (sum_ - (s - bv)) + (v - bv);
    sum_ = s;
  }
  void add_product(double a, double b) {
    const double p = a * b;
    error_ += product_error(a, b, p);
    add(p);
  }
  double value() const { return sum_ + error_; }

 private:
  // a b - p exactly for p = fl(a b): by FMA where the target has it, else by Dekker's product of
  // Veltkamp's halves (Ogita, Rump & Oishi, Algorithm 3.2; a library call to std::fma would cost
  // more than the 17 operations).
  static double product_error(double a, double b, double p) {
#if defined(__FMA__) || defined(__aarch64__)
    return std::fma(a, b, -p);
#else
    if (!(std::fabs(a) < 0x1p995 && std::fabs(b) < 0x1p995)) return std::fma(a, b, -p);  // the split would overflow
    const auto split = [](double v, double& high, double& low) {
      const double c = 134217729.0 * v;  // 2^27 + 1
      high = c - (c - v);
      low = v - high;
    };
    double a1, a2, b1, b2;
    split(a, a1, a2);
    split(b, b1, b2);
    return a2 * b2 - (((p - a1 * b1) - a2 * b1) - a1 * b2);
#endif
  }

  double sum_, error_ = 0;
};

// f := b - A x (r null) or b - r - A x, each entry a compensated sum: the refinement's fixed
// point is then not set by FP64 rounding of u |A| |x| (a consistent system's whole residual where
// kappa is large).
void subtract_product(const MatrixView<const double>& a, const double* b, const double* r, const double* x, double* f) {
  for (std::int64_t i = 0; i < a.rows; ++i) {
    CompensatedSum sum(b[i]);
    if (r) sum.add(-r[i]);
    for (std::int64_t j = 0; j < a.cols; ++j) sum.add_product(-a(i, j), x[j]);
    f[i] = sum.value();
  }
}

// 2^-e with 2^e > max |v_i| over both vectors (1 where both are zero): a scale that brings them
// into T's range before the cast, undone exactly afterwards.
double power_of_two_scale(const std::vector<double>& v, const std::vector<double>& w) {
  double largest = 0;
  for (double e : v) largest = std::max(largest, std::fabs(e));
  for (double e : w) largest = std::max(largest, std::fabs(e));
  return std::ldexp(1.0, -rhs_scale_exponent(largest));
}

// The corrections of the augmented system for residuals f (m) and g (n), given as
// ga = a_scale g = -(a_scale A)^T r (so that it cannot overflow where A^T r would), with the
// factors of A' = a_scale A in their precision T. [I A'; A'^T 0] [dr; z] = [s f; s a_scale g] gives
// dr = s dr_true and z = s dx_true / a_scale: h = R^-T (s a_scale g), d = Q^T (s f),
// z = R^-1 (d1 - h), dr = Q [h; d2]. s, a power of two, keeps both right-hand sides near 1 in T
// (residuals far below T's range would underflow to zero and stop the refinement early).
template <class T>
void augmented_correction(const HouseholderQr<T>& qr, double a_scale, const std::vector<double>& f,
                          const std::vector<double>& ga, std::vector<double>& dx, std::vector<double>& dr) {
  const std::int64_t m = qr.rows(), n = qr.cols();
  const double s = power_of_two_scale(f, ga);
  std::vector<T> h(n), d(m);
  for (std::int64_t j = 0; j < n; ++j) h[j] = T(s * ga[j]);
  for (std::int64_t i = 0; i < m; ++i) d[i] = T(s * f[i]);
  qr.solve_rt(host_view(h.data(), n, 1, n));
  qr.apply_qt(host_view(d.data(), m, 1, m));
  std::vector<T> z(n);
  for (std::int64_t i = 0; i < n; ++i) z[i] = d[i] - h[i];
  qr.solve_r(host_view(z.data(), n, 1, n));
  for (std::int64_t i = 0; i < n; ++i) d[i] = h[i];  // [h; d2]
  qr.apply_q(host_view(d.data(), m, 1, m));
  dx.resize(n);
  dr.resize(m);
  for (std::int64_t j = 0; j < n; ++j) dx[j] = double(z[j]) * a_scale / s;
  for (std::int64_t i = 0; i < m; ++i) dr[i] = double(d[i]) / s;
}

}  // namespace

// x = a_scale R^-1 (Q^T b s)(1:n) / s with b scaled by s, a power of two, into T's range.
template <class T>
void factors_solution(const MatrixView<const double>& a, const double* b, const HouseholderQr<T>& qr, double a_scale,
                      double* x) {
  const std::int64_t m = a.rows, n = a.cols;
  const std::vector<double> bv(b, b + m);
  const double s = power_of_two_scale(bv, {});
  std::vector<T> c(m);
  for (std::int64_t i = 0; i < m; ++i) c[i] = T(s * b[i]);
  qr.apply_qt(host_view(c.data(), m, 1, m));
  qr.solve_r(host_view(c.data(), n, 1, m));
  for (std::int64_t i = 0; i < n; ++i) x[i] = double(c[i]) * a_scale / s;
}
template void factors_solution<float>(const MatrixView<const double>&, const double*, const HouseholderQr<float>&,
                                      double, double*);
template void factors_solution<double>(const MatrixView<const double>&, const double*, const HouseholderQr<double>&,
                                       double, double*);

namespace {

// GMRES's inner steps per outer step, and the reduction of the preconditioned residual it stops
// at: the outer steps need corrections of a few correct digits, not more.
constexpr int kGmresSteps = 30;
constexpr double kGmresTolerance = 0x1p-20;

// One outer step of GMRES-LS: GMRES (modified Gram-Schmidt Arnoldi, Givens rotations) on
// M^-1 K' z = M^-1 [f; g'] from z = 0, in slots 0 .. kGmresSteps (the basis) and kGmresSteps + 1
// (work); then x and r take z. The residual is scaled by `sigma`, a power of two near 1 / ||b||,
// and the correction back: the residual's entries lie near u ||b||, whose squares in the dot
// products would underflow for a b near 2^-600 (a zero beta, read as converged) or overflow near
// 2^600.
LsSteps::Norms gmres_step(LsSteps& s, double alpha, double sigma) {
  constexpr int work = kGmresSteps + 1;
  s.residual(work, alpha);
  s.scale(work, sigma);
  s.precondition(work, 0, alpha);
  const double beta = std::sqrt(s.dot(0, 0));
  if (!(beta > 0) || !std::isfinite(beta)) return s.add_correction(std::vector<double>(beta == 0 ? 0 : 1, NAN), alpha);
  s.scale(0, 1 / beta);
  GivensHessenberg hessenberg(kGmresSteps, beta);
  int k = 0;
  while (k < kGmresSteps) {
    s.augmented_product(k, work, alpha);
    s.precondition(work, k + 1, alpha);
    for (int i = 0; i <= k; ++i) {  // modified Gram-Schmidt
      hessenberg.at(i, k) = s.dot(k + 1, i);
      s.axpy(-hessenberg.at(i, k), i, k + 1);
    }
    const double next = std::sqrt(s.dot(k + 1, k + 1));
    hessenberg.at(k + 1, k) = next;
    const double estimate = hessenberg.rotate(k);
    ++k;
    if (!(next > 0) || !std::isfinite(next) || estimate <= kGmresTolerance * beta) break;
    s.scale(k, 1 / next);
  }
  std::vector<double> y = hessenberg.solve(k);  // H(0:k, 0:k) y = g(0:k)
  for (double& e : y) e /= sigma;  // exact: a power of two
  return s.add_correction(y, alpha);
}

// CGLS's iterations per outer step at most, and the reduction of ||s|| it stops at: a few more
// outer steps cost less than iterating on an s near FP64's noise.
constexpr int kCgSteps = 100;
constexpr double kCgTolerance = 0x1p-26;

// One outer step of LsMethod::Cgls for one right-hand side: CGLS on the correction problem until
// ||s|| falls to kCgTolerance of its start or fails to halve. ||s|| (the preconditioned
// normal-equation residual) measures how far d is from the correction problem's solution in R's
// metric, which is what the outer step needs; near FP64's noise it no longer falls, and iterating
// on would only add noise (iterating while it fell at all wasted most of the iterations on
// well-conditioned systems: docs/least_squares.md). d is kept where ||s|| was smallest. A step
// that kept no iterate (a breakdown in the first one) reports NaN, read as diverged: its zero d
// would read as converged. A slow CG gives small corrections far from the solution, so the
// refinement accepts CGLS's x only at the semi-normal steps' noise level, never after halvings
// alone. The steps' calls stay with the caller (cgls_step, the block refinement's loop).
class CgColumn {
 public:
  // gamma: ||s||^2 of the first iterate (cg_begin).
  explicit CgColumn(double gamma) : gamma_(gamma), start_(gamma), broken_(!std::isfinite(gamma)) {}
  // Whether iteration `k` (from 0) is to run.
  bool iterates(int k) const {
    return !broken_ && !done_ && k < kCgSteps && gamma_ > kCgTolerance * kCgTolerance * start_;
  }
  // The step length for ||q||^2 = qq (cg_product), or 0 where CGLS stops there.
  double alpha(double qq) {
    const double alpha = gamma_ / qq;
    if (!(qq > 0) || !std::isfinite(qq) || alpha == 0) {  // alpha 0: gamma / qq underflowed
      done_ = true;
      return 0;
    }
    return alpha;
  }
  // After the update with that step: `next` the new ||s||^2 (cg_update). keep: whether this d is
  // the best so far (cg_keep); returns beta for cg_direction, or 0 where CGLS stops.
  double after_update(double next, bool& keep) {
    keep = false;
    if (!std::isfinite(next)) {
      done_ = true;
      return 0;
    }
    if (next < smallest_) {
      smallest_ = next;
      keep = kept_ = true;
    }
    if (!(next <= gamma_ / 4)) {
      done_ = true;
      return 0;
    }
    const double beta = next / gamma_;
    gamma_ = next;
    return beta;
  }
  // No iterate to take (cg_finish is not to be called): the step's norms are NaN.
  bool failed() const { return broken_ || (start_ > 0 && !kept_); }

 private:
  double gamma_, start_, smallest_ = INFINITY;
  bool broken_, done_ = false, kept_ = false;
};

constexpr LsSteps::Norms kFailedStep = {NAN, NAN, NAN};

// One outer step of LsMethod::Cgls (CgColumn). Adds its iterations to `inner`.
LsSteps::Norms cgls_step(LsSteps& s, int& inner) {
  CgColumn cg(s.cg_begin());
  for (int k = 0; cg.iterates(k); ++k) {
    const double alpha = cg.alpha(s.cg_product());
    if (alpha == 0) break;
    bool keep = false;
    const double beta = cg.after_update(s.cg_update(alpha), keep);
    ++inner;
    if (keep) s.cg_keep();
    if (beta == 0) break;
    s.cg_direction(beta);
  }
  if (cg.failed()) return kFailedStep;
  return s.cg_finish();
}

// refine()'s stop rule for one right-hand side, step by step.
class RefinementJudge {
 public:
  RefinementJudge(LsFactorKind factors, LsMethod method, const LsFactorScales& scales, const LsSteps::Start& first,
                  std::int64_t rows)
      : factors_(factors), method_(method), scales_(scales), first_(first), rows_(rows) {}

  // After one more step with `norms` (its number result.iterations + 1): the stop, or nothing to
  // go on. residual_norm() gives ||b - A x|| of the current x where the rule needs it.
  std::optional<LeastSquaresStop> after_step(const LsSteps::Norms& norms, const std::function<double()>& residual_norm,
                                             LsRefinementResult& result) {
    constexpr double kUnit = 0x1p-53;
    const double norm_b = first_.b, norm_a = scales_.norm_a;
    // An accepted x must not have a larger residual than the first x (beyond FP64's rounding
    // level, the whole residual of a consistent system, u ||A|| ||x|| >> u ||b|| where kappa is
    // large), an XOnly x one above FP64's rounding level (LsMethod).
    const auto checked = [&](LeastSquaresStop stop, double norm_x) {
      const double residual = residual_norm();
      const double noise = 8 * std::sqrt(double(rows_)) * kUnit * (norm_b + norm_a * norm_x);
      const double bound = method_ == LsMethod::XOnly ? noise : first_.r * (1 + 0x1p-20) + 0x1p-40 * norm_b + noise;
      return residual <= bound ? stop : LeastSquaresStop::Diverged;
    };
    // dr relative to ||b||, not ||r||: r may be (close to) zero, for a consistent system.
    const double rel_dx = norms.x > 0 ? norms.dx / norms.x : norms.dx, rel_dr = norm_b > 0 ? norms.dr / norm_b : 0.0;
    const int step = ++result.iterations;
    result.dx_history.push_back(rel_dx);
    result.dr_history.push_back(rel_dr);
    const double size = std::max(rel_dx, rel_dr);
    if (!std::isfinite(size)) return LeastSquaresStop::Diverged;
    if (size <= kUnit) return checked(LeastSquaresStop::Converged, norms.x);
    if (step >= 2) {
      if (size <= 0.5 * previous_) {
        ++contractions_;
        // Converging fast (each correction at most 2^-8 of the one before, this one already below
        // 2^-26): where at that rate the next correction of x would fall below 1/16 of FP64's
        // noise in it, u / diagonal_ratio <= u kappa(A) (what the rounding of b - A x alone makes
        // of x), and that of r below u, another step would only confirm x and r: they are
        // accepted now. (The margin of 16: the rate varies from step to step; in a numpy model
        // of 360 problems, 300 x 60 and 1000 x 100, one small singular value or geometric ones,
        // kappa 1 .. 3e5, the prediction without it accepted an x 8x the FP64 QR's error where
        // the full iteration's was 0.4x; with it, no x less accurate than the full iteration's.)
        const double rate = size / previous_;
        const double x_rate = rel_dx / previous_dx_, r_rate = rel_dr > 0 ? rel_dr / previous_dr_ : 0.0;
        const double x_noise = kUnit / std::min(1.0, std::max(scales_.diagonal_ratio, kUnit));
        if (rate <= 0x1p-8 && size <= 0x1p-26 && rel_dx * x_rate <= x_noise / 16 && rel_dr * r_rate <= kUnit)
          return checked(LeastSquaresStop::Converged, norms.x);
      } else {
        // No more progress. Where the corrections contracted at least twice down to 2^-16, or
        // came down to 2^-40, the iteration converged and x and r are as accurate as FP64
        // residuals make them; otherwise the cheap factors never brought them near the solution
        // (kappa u_T >~ 1: one lucky halving of a huge first correction is no convergence, nor
        // are two halvings that end at corrections of 0.57 x, seen at kappa 3e7). FP64 factors
        // start at the FP64 QR's solution: accepted either way. The semi-normal steps start at the
        // semi-normal equations' solution (error ~ u kappa^2): accepted after a halving, or where
        // the correction is already within 64 times FP64's attainable accuracy,
        // u (kappa + kappa^2 ||r|| / (||A|| ||x||)), kappa estimated by 1 / diagonal_ratio (large
        // for an ill-conditioned A with a large residual, where the FP64 QR's x is no better).
        // CGLS's outer steps have the semi-normal steps' fixed point: its x is accepted there, and
        // not after halvings alone (each outer step solves the correction problem, so the noise
        // comes in one or two of them, while a CG cut short by a weak preconditioner, kappa u_32 ~ 1,
        // gives corrections that halve far from the solution).
        const bool halvings = contractions_ >= 2 && size <= 0x1p-16 && method_ != LsMethod::Cgls;
        bool converging = factors_ == LsFactorKind::Fp64Qr || halvings || size <= 0x1p-40;
        if ((factors_ == LsFactorKind::SemiNormal || method_ == LsMethod::Cgls) && !converging) {
          const double kappa = 1 / std::max(scales_.diagonal_ratio, kUnit);
          const double residual = norm_a > 0 && norms.x > 0 ? residual_norm() / (norm_a * norms.x) : 0.0;
          converging = (factors_ == LsFactorKind::SemiNormal && contractions_ >= 1) ||
                       rel_dx <= 64 * kUnit * (kappa + kappa * kappa * residual);
        }
        return converging ? checked(LeastSquaresStop::Stagnated, norms.x) : LeastSquaresStop::Diverged;
      }
    }
    previous_ = size;
    previous_dx_ = rel_dx;
    previous_dr_ = rel_dr;
    return std::nullopt;
  }

 private:
  LsFactorKind factors_;
  LsMethod method_;
  LsFactorScales scales_;
  LsSteps::Start first_;
  std::int64_t rows_;
  double previous_ = INFINITY, previous_dx_ = INFINITY, previous_dr_ = INFINITY;
  int contractions_ = 0;  // corrections at most half the one before
};

}  // namespace

LsRefinementResult refine(LsSteps& steps, LsFactorKind factors, int max_iterations, LsMethod method,
                          const LsFactorScales& scales) {
  const double smallest_r = scales.smallest_r;
  const LsSteps::Start first = steps.start();
  RefinementJudge judge(factors, method, scales, first, steps.rows());
  if (method == LsMethod::Gmres) steps.reserve(kGmresSteps + 2);
  // alpha: the power of two in (min |r_jj| / 2, min |r_jj|]. min |r_jj| >= sigma_min(A'): an
  // estimate from above of the sigma_min / sqrt(2) Carson, Higham & Pranesh take.
  const double alpha = smallest_r > 0 && std::isfinite(smallest_r)
                           ? std::ldexp(1.0, std::clamp(std::ilogb(smallest_r), -1000, 1000))
                           : 1;
  // GMRES-LS's residual scale (gmres_step): a power of two near 1 / ||b||.
  const double residual_scale =
      first.b > 0 && std::isfinite(first.b) ? std::ldexp(1.0, std::clamp(-std::ilogb(first.b), -1000, 1000)) : 1;
  LsRefinementResult result;
  const std::function<double()> residual_norm = [&] { return steps.residual_norm(); };
  for (int step = 1; step <= max_iterations; ++step) {
    const LsSteps::Norms norms = method == LsMethod::Gmres   ? gmres_step(steps, alpha, residual_scale)
                                 : method == LsMethod::XOnly ? steps.x_step()
                                 : method == LsMethod::Cgls  ? cgls_step(steps, result.inner_iterations)
                                                             : steps.step();
    if (const std::optional<LeastSquaresStop> stop = judge.after_step(norms, residual_norm, result)) {
      result.stop = *stop;
      return result;
    }
  }
  result.stop = LeastSquaresStop::MaxIterations;
  return result;
}

std::vector<LsRefinementResult> refine_block(LsBlockSteps& steps, int max_iterations, const LsFactorScales& scales) {
  const std::size_t columns = static_cast<std::size_t>(steps.columns());
  const std::vector<LsSteps::Start> first = steps.start();
  std::vector<RefinementJudge> judges;
  for (std::size_t j = 0; j < columns; ++j)
    judges.emplace_back(LsFactorKind::Cheap, LsMethod::Cgls, scales, first[j], steps.rows());
  std::vector<LsRefinementResult> results(columns);
  std::vector<char> refining(columns, 1);  // no stop yet
  for (int step = 1; step <= max_iterations; ++step) {
    // One outer step for every column still refining: cgls_step column by column, the products
    // of all columns at once.
    const std::vector<double> gammas = steps.cg_begin(refining);
    std::vector<CgColumn> cg;
    for (std::size_t j = 0; j < columns; ++j) cg.emplace_back(refining[j] ? gammas[j] : 0.0);
    std::vector<double> alphas(columns), betas(columns);
    std::vector<char> iterating(columns), keep(columns);
    for (int k = 0;; ++k) {
      bool any = false;
      for (std::size_t j = 0; j < columns; ++j) {
        iterating[j] = refining[j] && cg[j].iterates(k);
        any = any || iterating[j];
      }
      if (!any) break;
      const std::vector<double> qq = steps.cg_product(iterating);
      for (std::size_t j = 0; j < columns; ++j) alphas[j] = iterating[j] ? cg[j].alpha(qq[j]) : 0.0;
      const std::vector<double> next = steps.cg_update(alphas);
      for (std::size_t j = 0; j < columns; ++j) {
        bool kept = false;
        betas[j] = alphas[j] != 0 ? cg[j].after_update(next[j], kept) : 0.0;
        keep[j] = kept;
        if (alphas[j] != 0) ++results[j].inner_iterations;
      }
      steps.cg_keep(keep);
      steps.cg_direction(betas);
    }
    std::vector<char> finishing(columns);
    for (std::size_t j = 0; j < columns; ++j) finishing[j] = refining[j] && !cg[j].failed();
    const std::vector<LsSteps::Norms> norms = steps.cg_finish(finishing);
    std::vector<double> residuals;  // ||t_j - A y_j|| of this step's Y, once a judge asks
    bool any = false;
    for (std::size_t j = 0; j < columns; ++j) {
      if (!refining[j]) continue;
      const std::function<double()> residual_norm = [&, j] {
        if (residuals.empty()) residuals = steps.residual_norms();
        return residuals[j];
      };
      if (const std::optional<LeastSquaresStop> stop =
              judges[j].after_step(finishing[j] ? norms[j] : kFailedStep, residual_norm, results[j])) {
        results[j].stop = *stop;
        refining[j] = 0;
      }
      any = any || refining[j];
    }
    if (!any) return results;
  }
  for (std::size_t j = 0; j < columns; ++j)
    if (refining[j]) results[j].stop = LeastSquaresStop::MaxIterations;
  return results;
}

namespace {

// The host's steps: A, b, x and r in host memory, the factors a HouseholderQr<T>.
template <class T>
class HostLsSteps final : public LsSteps {
 public:
  HostLsSteps(const MatrixView<const double>& a, const double* b, const HouseholderQr<T>& qr, double a_scale, double* x,
              double* r)
      : a_(a), b_(b), qr_(qr), a_scale_(a_scale), x_(x), r_(r), f_(a.rows), g_(a.cols) {}

  // The cheap factors' solution (factors_solution) and r = b - A x in FP64.
  Start start() override {
    const std::int64_t m = a_.rows;
    factors_solution(a_, b_, qr_, a_scale_, x_);
    b_minus_ax(r_);
    return {norm2(b_, m), norm2(r_, m)};
  }

  Norms step() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    augmented_residual(f_.data(), g_.data(), 1);
    augmented_correction(qr_, a_scale_, f_, g_, dx_, dr_);
    for (std::int64_t j = 0; j < n; ++j) x_[j] += dx_[j];
    for (std::int64_t i = 0; i < m; ++i) r_[i] += dr_[i];
    return {norm2(x_, n), norm2(dx_.data(), n), norm2(dr_.data(), m)};
  }

  Norms x_step() override {
    const std::int64_t n = a_.cols;
    b_minus_ax(f_.data());
    g_.assign(n, 0.0);
    augmented_correction(qr_, a_scale_, f_, g_, dx_, dr_);
    for (std::int64_t j = 0; j < n; ++j) x_[j] += dx_[j];
    return {norm2(x_, n), norm2(dx_.data(), n), 0.0};
  }
  std::int64_t rows() const override { return a_.rows; }
  double residual_norm() override {
    b_minus_ax(f_.data());
    return norm2(f_.data(), a_.rows);
  }
  void reserve(int slots) override { slots_.assign(slots, std::vector<double>(a_.rows + a_.cols)); }
  void residual(int to, double alpha) override {
    augmented_residual(slots_[to].data(), slots_[to].data() + a_.rows, 1 / alpha);
  }
  // With h = R^-T g and d = Q^T f: dx' = R^-1 (d1 - alpha h), du = Q [h; d2 / alpha]; the plain
  // correction of [f; alpha g] gives R^-1 (d1 - alpha h) and Q [alpha h; d2] = alpha du.
  void precondition(int from, int to, double alpha) override {
    const std::int64_t m = a_.rows;
    const std::vector<double>& v = slots_[from];
    f_.assign(v.begin(), v.begin() + m);
    g_.assign(v.begin() + m, v.end());
    for (double& e : g_) e *= alpha;
    augmented_correction(qr_, 1.0, f_, g_, dx_, dr_);  // a_scale 1: dx / a_scale, K's variable
    for (std::int64_t i = 0; i < m; ++i) slots_[to][i] = dr_[i] / alpha;
    std::copy(dx_.begin(), dx_.end(), slots_[to].begin() + m);
  }
  void augmented_product(int from, int to, double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols;
    const std::vector<double>& v = slots_[from];
    std::vector<double>& w = slots_[to];
    for (std::int64_t i = 0; i < m; ++i) {
      double sum = alpha * v[i];
      for (std::int64_t j = 0; j < n; ++j) sum += (a_scale_ * a_(i, j)) * v[m + j];
      w[i] = sum;
    }
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t i = 0; i < m; ++i) sum += (a_scale_ * a_(i, j)) * v[i];
      w[m + j] = sum;
    }
  }
  double dot(int a, int b) override {
    double sum = 0;
    for (std::size_t i = 0; i < slots_[a].size(); ++i) sum += slots_[a][i] * slots_[b][i];
    return sum;
  }
  void axpy(double alpha, int from, int to) override {
    for (std::size_t i = 0; i < slots_[to].size(); ++i) slots_[to][i] += alpha * slots_[from][i];
  }
  void scale(int slot, double factor) override {
    for (double& e : slots_[slot]) e *= factor;
  }
  Norms add_correction(const std::vector<double>& coefficients, double alpha) override {
    const std::int64_t m = a_.rows, n = a_.cols;
    dr_.assign(m, 0.0);
    dx_.assign(n, 0.0);
    for (std::size_t k = 0; k < coefficients.size(); ++k) {
      for (std::int64_t i = 0; i < m; ++i) dr_[i] += coefficients[k] * slots_[k][i] * alpha;
      for (std::int64_t j = 0; j < n; ++j) dx_[j] += coefficients[k] * slots_[k][m + j] * a_scale_;
    }
    for (std::int64_t j = 0; j < n; ++j) x_[j] += dx_[j];
    for (std::int64_t i = 0; i < m; ++i) r_[i] += dr_[i];
    return {norm2(x_, n), norm2(dx_.data(), n), norm2(dr_.data(), m)};
  }

 private:
  MatrixView<const double> a_;
  const double* b_;
  const HouseholderQr<T>& qr_;
  double a_scale_;
  double *x_, *r_;
  std::vector<double> f_, g_, dx_, dr_;
  std::vector<std::vector<double>> slots_;  // GMRES-LS's augmented vectors

  void b_minus_ax(double* f) const { subtract_product(a_, b_, nullptr, x_, f); }
  // f := b - r - A x and g := -(a_scale A)^T r g_scale, in FP64 (each entry one FP64 sum of
  // products; a_scale A is exact and near 1; g_scale, 1 or 1 / alpha, a power of two).
  void augmented_residual(double* f, double* g, double g_scale) const {
    const std::int64_t m = a_.rows, n = a_.cols;
    subtract_product(a_, b_, r_, x_, f);
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t i = 0; i < m; ++i) sum -= (a_scale_ * a_(i, j)) * r_[i];
      g[j] = sum * g_scale;
    }
  }
};

// The semi-normal steps on the host (refine_semi_normal): A, b and x in host memory, R (FP64,
// n x n upper triangular) of A' = a_scale A; f = b - A x of the current x.
class HostSemiNormalSteps final : public LsSteps {
 public:
  HostSemiNormalSteps(const MatrixView<const double>& a, const double* b, const MatrixView<const double>& r,
                      double a_scale, double* x, bool start_from_x)
      : start_from_x_(start_from_x),
        a_(a),
        b_(b),
        r_(r),
        a_scale_(a_scale),
        x_(x),
        f_(a.rows),
        next_f_(a.rows),
        scaled_(a.rows),
        z_(a.cols),
        g_(a.cols),
        cg_q_(a.rows) {}

  Start start() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    if (!start_from_x_) {
      std::fill(x_, x_ + n, 0.0);
      correction(b_);
      for (std::int64_t j = 0; j < n; ++j) x_[j] = z_[j];
    }
    b_minus_ax(f_.data());
    return {norm2(b_, m), norm2(f_.data(), m)};
  }
  Norms step() override {
    correction(f_.data());
    return take_correction();
  }
  std::int64_t rows() const override { return a_.rows; }
  double residual_norm() override { return norm2(f_.data(), a_.rows); }

  double cg_begin() override {
    const std::int64_t m = a_.rows, n = a_.cols;
    cg_exponent_ = rhs_scale_exponent(largest_abs(f_.data(), m));
    for (std::int64_t i = 0; i < m; ++i) scaled_[i] = std::ldexp(f_[i], -cg_exponent_);
    const double gamma = normal_solve();
    cg_g0_ = g_;
    cg_w_.assign(m, 0.0);
    cg_p_ = z_;
    cg_d_.assign(n, 0.0);
    cg_kept_.assign(n, 0.0);
    return gamma;
  }
  double cg_product() override {
    for (std::int64_t i = 0; i < a_.rows; ++i) {
      double sum = 0;
      for (std::int64_t j = 0; j < a_.cols; ++j) sum += (a_scale_ * a_(i, j)) * cg_p_[j];
      cg_q_[i] = sum;
    }
    return dot(cg_q_, cg_q_);
  }
  // g_ = A'^T (r - w), w = A' d (the sum of alpha q): g_0 - A'^T w, g_0 = A'^T r compensated at
  // the start, not A'^T of the updated r - w, whose FP64 rounding (of u ||r||) A'^T would carry
  // into g_ as u ||A|| ||r||: an inconsistent system's whole residual r* would set its noise. w
  // lies in A's range, and its rounding is of the correction's size.
  double cg_update(double alpha) override {
    for (std::int64_t j = 0; j < a_.cols; ++j) cg_d_[j] += alpha * cg_p_[j];
    for (std::int64_t i = 0; i < a_.rows; ++i) cg_w_[i] += alpha * cg_q_[i];
    for (std::int64_t j = 0; j < a_.cols; ++j) {
      CompensatedSum sum(cg_g0_[j]);
      for (std::int64_t i = 0; i < a_.rows; ++i) sum.add_product(-a_scale_ * a_(i, j), cg_w_[i]);
      g_[j] = sum.value();
    }
    return precondition_g();
  }
  void cg_direction(double beta) override {
    for (std::int64_t j = 0; j < a_.cols; ++j) cg_p_[j] = z_[j] + beta * cg_p_[j];
  }
  void cg_keep() override { cg_kept_ = cg_d_; }
  Norms cg_finish() override {
    const int exponent = cg_exponent_ + std::ilogb(a_scale_);  // a_scale: a power of two
    for (double& d : cg_kept_) d = std::ldexp(d, exponent);
    z_ = cg_kept_;
    return take_correction();
  }

 private:
  static double largest_abs(const double* v, std::int64_t count) {
    double largest = 0;
    for (std::int64_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(v[i]));
    return largest;
  }
  static double dot(const std::vector<double>& v, const std::vector<double>& w) {
    double sum = 0;
    for (std::size_t i = 0; i < v.size(); ++i) sum += v[i] * w[i];
    return sum;
  }
  // x += z_; f_ := b - A x, next_f_ the change; returns ||x||, ||z_|| and the change's norm.
  Norms take_correction() {
    const std::int64_t m = a_.rows, n = a_.cols;
    for (std::int64_t j = 0; j < n; ++j) x_[j] += z_[j];
    b_minus_ax(next_f_.data());
    for (std::int64_t i = 0; i < m; ++i) f_[i] = next_f_[i] - f_[i];  // the change of b - A x
    const double dr = norm2(f_.data(), m);
    f_.swap(next_f_);
    return {norm2(x_, n), norm2(z_.data(), n), dr};
  }
  // g_ := A'^T scaled_ (compensated sums: A'^T r* = 0 for the least-squares residual r*, which
  // FP64 sums would give as u ||A|| ||r*||, amplified by R^-T), then precondition_g(); returns
  // g_^T z_ (= ||R^-T g_||^2, CGLS's ||s||^2).
  double normal_solve() {
    for (std::int64_t j = 0; j < a_.cols; ++j) {
      CompensatedSum sum;
      for (std::int64_t i = 0; i < a_.rows; ++i) sum.add_product(a_scale_ * a_(i, j), scaled_[i]);
      g_[j] = sum.value();
    }
    return precondition_g();
  }
  // z_ := (R^T R)^-1 g_ (two substitutions); returns g_^T z_.
  double precondition_g() {
    z_ = g_;
    solve_rt(z_.data());
    solve_r(z_.data());
    return dot(g_, z_);
  }
  void solve_rt(double* z) const {  // z := R^-T z
    for (std::int64_t i = 0; i < a_.cols; ++i) {
      double sum = z[i];
      for (std::int64_t k = 0; k < i; ++k) sum -= r_(k, i) * z[k];
      z[i] = sum / r_(i, i);
    }
  }
  void solve_r(double* z) const {  // z := R^-1 z
    for (std::int64_t i = a_.cols - 1; i >= 0; --i) {
      double sum = z[i];
      for (std::int64_t k = i + 1; k < a_.cols; ++k) sum -= r_(i, k) * z[k];
      z[i] = sum / r_(i, i);
    }
  }
  // z_ := a_scale (R^T R)^-1 A'^T v in FP64, v scaled by a power of two first (A'^T v cannot
  // overflow) and the scale undone after.
  void correction(const double* v) {
    const std::int64_t m = a_.rows;
    const int e = rhs_scale_exponent(largest_abs(v, m));
    for (std::int64_t i = 0; i < m; ++i) scaled_[i] = std::ldexp(v[i], -e);
    normal_solve();
    const int exponent = e + std::ilogb(a_scale_);  // a_scale: a power of two
    for (double& z : z_) z = std::ldexp(z, exponent);
  }
  void b_minus_ax(double* f) const { subtract_product(a_, b_, nullptr, x_, f); }

  bool start_from_x_;
  MatrixView<const double> a_;
  const double* b_;
  MatrixView<const double> r_;
  double a_scale_;
  double* x_;
  std::vector<double> f_, next_f_, scaled_, z_;
  // CGLS in x's variables (the normal equations preconditioned by (R^T R)^-1): scaled_ holds the
  // outer step's r (in units of 2^cg_exponent_), cg_w_ A' d (CG's residual is scaled_ - cg_w_),
  // cg_g0_ A'^T scaled_, g_ A'^T (scaled_ - cg_w_), z_ (R^T R)^-1 g_, cg_p_ the direction.
  std::vector<double> g_, cg_p_, cg_q_, cg_d_, cg_kept_, cg_g0_, cg_w_;
  int cg_exponent_ = 0;
};

}  // namespace

// A block refinement's steps as one LsSteps per column (the host's: its products are column by
// column anyway), the same arithmetic as refining each column alone.
class ColumnByColumnSteps final : public LsBlockSteps {
 public:
  explicit ColumnByColumnSteps(std::vector<std::unique_ptr<LsSteps>> steps) : steps_(std::move(steps)) {}
  std::int64_t rows() const override { return steps_.empty() ? 0 : steps_.front()->rows(); }
  std::int64_t columns() const override { return std::int64_t(steps_.size()); }
  std::vector<LsSteps::Start> start() override {
    std::vector<LsSteps::Start> out;
    for (auto& s : steps_) out.push_back(s->start());
    return out;
  }
  std::vector<double> residual_norms() override {
    std::vector<double> out;
    for (auto& s : steps_) out.push_back(s->residual_norm());
    return out;
  }
  std::vector<double> cg_begin(const std::vector<char>& selected) override {
    return each(selected, [](LsSteps& s) { return s.cg_begin(); });
  }
  std::vector<double> cg_product(const std::vector<char>& selected) override {
    return each(selected, [](LsSteps& s) { return s.cg_product(); });
  }
  std::vector<double> cg_update(const std::vector<double>& alpha) override {
    std::vector<double> out(steps_.size(), 0.0);
    for (std::size_t j = 0; j < steps_.size(); ++j)
      if (alpha[j] != 0) out[j] = steps_[j]->cg_update(alpha[j]);
    return out;
  }
  void cg_direction(const std::vector<double>& beta) override {
    for (std::size_t j = 0; j < steps_.size(); ++j)
      if (beta[j] != 0) steps_[j]->cg_direction(beta[j]);
  }
  void cg_keep(const std::vector<char>& selected) override {
    for (std::size_t j = 0; j < steps_.size(); ++j)
      if (selected[j]) steps_[j]->cg_keep();
  }
  std::vector<LsSteps::Norms> cg_finish(const std::vector<char>& selected) override {
    std::vector<LsSteps::Norms> out(steps_.size(), kFailedStep);
    for (std::size_t j = 0; j < steps_.size(); ++j)
      if (selected[j]) out[j] = steps_[j]->cg_finish();
    return out;
  }

 private:
  template <class F>
  std::vector<double> each(const std::vector<char>& selected, F f) {
    std::vector<double> out(steps_.size(), 0.0);
    for (std::size_t j = 0; j < steps_.size(); ++j)
      if (selected[j]) out[j] = f(*steps_[j]);
    return out;
  }
  std::vector<std::unique_ptr<LsSteps>> steps_;
};

LsRefinementResult refine_semi_normal(const MatrixView<const double>& a, const double* b,
                                      const MatrixView<const double>& r, double a_scale, int max_iterations, double* x,
                                      const LsFactorScales& scales, LsFactorKind factors, LsMethod method,
                                      bool start_from_x) {
  if (method != LsMethod::Augmented && method != LsMethod::Cgls)
    throw std::logic_error("refine_semi_normal: the semi-normal steps are plain or CGLS");
  HostSemiNormalSteps steps(a, b, r, a_scale, x, start_from_x);
  return refine(steps, factors, max_iterations, method, scales);
}

std::vector<LsRefinementResult> refine_semi_normal_block(const MatrixView<const double>& a,
                                                         const MatrixView<const double>& t,
                                                         const MatrixView<const double>& r, int max_iterations,
                                                         const MatrixView<double>& y, const LsFactorScales& scales,
                                                         bool start_from_y) {
  // Columns in groups (the results do not depend on the grouping), so that their steps' work
  // vectors (4 m values a column) stay within 2^24 values.
  const std::int64_t group = std::max<std::int64_t>(1, (std::int64_t(1) << 22) / std::max<std::int64_t>(a.rows, 1));
  std::vector<LsRefinementResult> out;
  for (std::int64_t j0 = 0; j0 < t.cols; j0 += group) {
    std::vector<std::unique_ptr<LsSteps>> columns;
    for (std::int64_t j = j0; j < std::min(t.cols, j0 + group); ++j)
      columns.push_back(std::make_unique<HostSemiNormalSteps>(a, &t(0, j), r, 1.0, &y(0, j), start_from_y));
    ColumnByColumnSteps steps(std::move(columns));
    for (LsRefinementResult& result : refine_block(steps, max_iterations, scales)) out.push_back(std::move(result));
  }
  return out;
}

template <class T>
LsRefinementResult refine_least_squares(const MatrixView<const double>& a, const double* b, const HouseholderQr<T>& qr,
                                        double a_scale, int max_iterations, double* x, double* r, LsMethod method,
                                        const LsFactorScales& scales) {
  HostLsSteps<T> steps(a, b, qr, a_scale, x, r);
  return refine(steps, std::is_same_v<T, double> ? LsFactorKind::Fp64Qr : LsFactorKind::Cheap, max_iterations, method,
                scales);
}

template LsRefinementResult refine_least_squares<float>(const MatrixView<const double>&, const double*,
                                                        const HouseholderQr<float>&, double, int, double*, double*,
                                                        LsMethod, const LsFactorScales&);
template LsRefinementResult refine_least_squares<double>(const MatrixView<const double>&, const double*,
                                                         const HouseholderQr<double>&, double, int, double*, double*,
                                                         LsMethod, const LsFactorScales&);

}  // namespace mixsolve::solvers_detail
