// SPDX-License-Identifier: BSD-3-Clause
// The least_squares() cases: matrix families, random LeastSquaresOptions, and the checks of
// LeastSquaresReport and X (residual norms, A^T r in long double).
#include "fuzz/least_squares_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/arena.hpp"
#include "fuzz/generators.hpp"
#include "fuzz/rng.hpp"
#include "fuzz/settings_and_outcomes.hpp"

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/least_squares.hpp"

namespace mixsolve::fuzz {
namespace {

enum class LsFamily { Uniform, Graded, ScaledRows, Huge, Tiny, ZeroColumn, DuplicateColumn, NearlyDependent };

const char* to_string(LsFamily f) {
  switch (f) {
    case LsFamily::Uniform: return "uniform";
    case LsFamily::Graded: return "graded columns (cond 1e2..1e8)";
    case LsFamily::ScaledRows: return "rows scaled by 2^+-12";
    case LsFamily::Huge: return "uniform x 2^600";
    case LsFamily::Tiny: return "uniform x 2^-600";
    case LsFamily::ZeroColumn: return "zero column";
    case LsFamily::DuplicateColumn: return "duplicate column";
    case LsFamily::NearlyDependent: return "nearly dependent columns (1e-13)";
  }
  return "?";
}

struct LsCase {
  LsFamily family = LsFamily::Uniform;
  std::int64_t m = 0, n = 0, k = 0;
  double grading = 0;  // Graded: log10 of the condition number
  bool consistent = false;
  ViewPlan a, b, x;
  std::string alias = "none";
  LeastSquaresOptions options;
  Expected expected;
  std::string text() const {
    std::ostringstream t;
    t << "least_squares, " << to_string(family)
      << (family == LsFamily::Graded ? " 1e" + std::to_string(int(grading)) : "") << ", m " << m << " n " << n << " k "
      << k << (consistent ? " consistent" : "") << ", " << a.text("A") << ", " << b.text("B") << ", " << x.text("X")
      << ", alias " << alias << ", options {" << to_string(options.factorization) << ", iters "
      << options.max_iterations << ", fallback " << options.fallback << ", block " << options.block_size
      << ", update \"" << options.fp32_update << "\", vt_c \"" << options.fp32_vt_c_update << "\", refinement "
      << int(options.refinement) << ", cholesky_qr " << options.cholesky_qr << ", rank_deficient "
      << int(options.rank_deficient) << ", rcond " << options.rcond << ", ridge " << options.ridge << "}";
    return t.str();
  }
};

// The first attempt's precision the options ask for; Auto: LeastSquaresOptions::auto_min_work's
// rule on the solved matrix (with ridge the stacked one, m + n rows).
Precision first_precision(const LeastSquaresOptions& o, std::int64_t m, std::int64_t n, Memory memory) {
  if (o.factorization != Precision::Auto) return o.factorization;
  const std::int64_t min_work = o.auto_min_work >= 0       ? o.auto_min_work
                                : memory == Memory::Device ? std::int64_t(1) << 32
                                                           : 0;
  const double rows = o.ridge > 0 ? double(m + n) : double(m);
  return rows * double(n) * double(n) < double(min_work) ? Precision::FP64 : Precision::FP32;
}

LsCase make_ls_case(Rng& rng, bool device_run, Layout& layout) {
  LsCase c;
  c.n = pick_order(rng, 80);
  c.m = c.n + rng.pick<std::int64_t>({0, 1, rng.range(2, 20), rng.range(2, 20), rng.range(21, device_run ? 300 : 160)});
  const bool underdetermined = c.n > 0 && rng.chance(0.02);
  if (underdetermined) c.m = c.n - rng.range(1, c.n);
  c.k = pick_rhs(rng);
  const double u = rng.uniform();
  c.family = u < 0.45   ? LsFamily::Uniform
             : u < 0.6  ? LsFamily::Graded
             : u < 0.67 ? LsFamily::ScaledRows
             : u < 0.71 ? LsFamily::Huge
             : u < 0.75 ? LsFamily::Tiny
             : u < 0.85 ? LsFamily::ZeroColumn
             : u < 0.94 ? LsFamily::DuplicateColumn
                        : LsFamily::NearlyDependent;
  if ((c.family == LsFamily::DuplicateColumn || c.family == LsFamily::NearlyDependent) && c.n < 2)
    c.family = LsFamily::Uniform;
  c.grading = double(rng.range(2, 8));
  c.consistent = rng.chance(0.3);
  const Labels labels = pick_labels(rng, device_run);
  bool bad = false;
  c.a = {c.m, c.n, pick_ld(rng, c.m, 0.02, bad), 0, rng.chance(c.m * c.n == 0 ? 0.3 : 0.007), labels.a};
  c.b = {c.m, c.k, 1, 0, rng.chance(0.007), labels.b};
  if (rng.chance(0.02)) c.b.rows = std::max<std::int64_t>(0, c.m + rng.pick<std::int64_t>({-1, 1}));
  c.b.ld = pick_ld(rng, c.b.rows, 0.015, bad);
  c.x = {c.n, c.k, 1, 0, rng.chance(0.007), labels.x};
  if (rng.chance(0.02)) (rng.chance(0.5) ? c.x.rows : c.x.cols) += 1;
  c.x.ld = pick_ld(rng, c.x.rows, 0.015, bad);
  layout.place(rng, c.a);
  layout.place(rng, c.b);
  layout.place(rng, c.x);
  if (c.n > 0 && c.m > 0 && rng.chance(0.05)) {
    c.alias = alias_x(rng, c.a, c.b, c.x, false);
    layout.cover(c.x);
  }
  // Options: valid ones, and now and then one out of its documented range.
  LeastSquaresOptions& o = c.options;
  o.factorization = rng.pick({Precision::FP32, Precision::FP32, Precision::FP64, Precision::Auto});
  // Auto's crossover around the problem's m n^2 (the host's default, 0, takes the FP32 path).
  if (o.factorization == Precision::Auto && rng.chance(0.5))
    o.auto_min_work = rng.pick<std::int64_t>({0, 1000, 100000, std::int64_t(1) << 32});
  if (rng.chance(0.25)) o.max_iterations = rng.pick({1, 2, 5, 10, 100});
  o.fallback = rng.chance(0.75);
  if (rng.chance(0.3)) o.block_size = rng.pick({1, 2, 3, 8, 17, 64});
  o.refinement = rng.pick({LeastSquaresOptions::Refinement::Cgls, LeastSquaresOptions::Refinement::Cgls,
                           LeastSquaresOptions::Refinement::Augmented, LeastSquaresOptions::Refinement::Gmres,
                           LeastSquaresOptions::Refinement::AugmentedThenGmres});
  o.cholesky_qr = rng.chance(0.8);
  if (rng.chance(0.2)) o.rank_deficient = LeastSquaresOptions::RankDeficiency::FullRank;
  if (rng.chance(0.2)) o.rcond = rng.pick({-1.0, 0.0, 1e-12, 1e-6});
  if (rng.chance(0.1)) o.ridge = rng.pick({1e-10, 1e-3, 1.0});
  const bool device_a = device_run && c.a.label == Memory::Device;
  if (rng.chance(0.15))
    o.fp32_update =
        device_a ? rng.pick<std::string>({"cublas-sgemm", "tf32tf32", "halfhalf", "cublas-fp16x3"})
                 : rng.pick<std::string>({"host-fp32", "model-tf32tf32-rn", "model-halfhalf-rz", "model-fp16x3-rn"});
  if (rng.chance(0.1))  // ignored for host matrices, but it must name an FP32 backend (a device one for device A)
    o.fp32_vt_c_update = device_a ? rng.pick<std::string>({"cublas-sgemm", "tf32tf32"})
                                  : rng.pick<std::string>({"cublas-sgemm", "tf32tf32", "host-fp32"});
  std::vector<Fault>& must = c.expected.must;
  if (rng.chance(0.08)) {
    const auto s = [](auto v) { return std::to_string(v); };
    switch (int(rng.range(0, 8))) {
      case 0:
        if (rng.chance(0.8)) {
          o.factorization = rng.pick({Precision::FP16, Precision::TF32, Precision::Fp16x3, Precision::Ozaki});
          must.push_back({Kind::InvalidArgument, {"factorization"}});
        } else {
          o.factorization = Precision::Auto;
          o.auto_min_work = -int(rng.range(2, 5));
          must.push_back({Kind::InvalidArgument, {"auto_min_work (" + s(o.auto_min_work) + ") < -1"}});
        }
        break;
      case 1:
        o.max_iterations = -int(rng.range(0, 3));
        must.push_back({Kind::InvalidArgument, {"max_iterations (" + s(o.max_iterations) + ")"}});
        break;
      case 2:
        o.block_size = -int(rng.range(1, 9));
        must.push_back({Kind::InvalidArgument, {"block_size (" + s(o.block_size) + ")"}});
        break;
      case 3:
        o.refinement = static_cast<LeastSquaresOptions::Refinement>(rng.pick({4, 7, -1}));
        must.push_back({Kind::InvalidArgument, {"refinement"}});
        break;
      case 4:
        o.fp32_update =
            rng.pick<std::string>({"host-fp64", "no-such-backend", device_a ? "host-fp32" : "cublas-sgemm"});
        must.push_back({Kind::InvalidArgument, {"fp32_update"}});
        break;
      case 5:
        o.fp32_vt_c_update = rng.pick<std::string>({"host-fp64", "no-such-backend", "cublas-dgemm"});
        must.push_back({Kind::InvalidArgument, {"fp32_vt_c_update"}});
        break;
      case 6:
        o.rcond = rng.pick({1.0, 3.0, double(NAN), double(INFINITY)});
        must.push_back({Kind::InvalidArgument, {"rcond"}});
        break;
      case 7:
        o.ridge = rng.pick({-1.0, -1e-300, double(NAN), double(INFINITY)});
        must.push_back({Kind::InvalidArgument, {"ridge"}});
        break;
      default:
        o.rank_deficient = static_cast<LeastSquaresOptions::RankDeficiency>(rng.pick({2, 9, -1}));
        must.push_back({Kind::InvalidArgument, {"rank_deficient"}});
        break;
    }
  }
  view_faults(c.a, "A", must);
  view_faults(c.b, "B", must);
  view_faults(c.x, "X", must);
  if (!device_run && (c.a.label == Memory::Device || c.b.label == Memory::Device || c.x.label == Memory::Device)) {
    if (c.a.label == Memory::Device && c.b.label == Memory::Device && c.x.label == Memory::Device)
      must.push_back({Kind::InvalidArgument, {"device"}});
  }
  if (c.b.label != c.a.label || c.x.label != c.a.label) must.push_back({Kind::InvalidArgument, {"memory"}});
  // Underdetermined: solved for host matrices under MinimumNorm (the rank-revealing attempt).
  const bool wide_solved = o.ridge > 0 || (c.a.label == Memory::Host &&
                                           o.rank_deficient == LeastSquaresOptions::RankDeficiency::MinimumNorm);
  if (c.a.rows < c.a.cols && c.a.rows >= 0 && !wide_solved) must.push_back({Kind::InvalidArgument, {"A", "rows"}});
  if (c.b.rows != c.a.rows && c.b.rows >= 0) must.push_back({Kind::InvalidArgument, {"B", std::to_string(c.b.rows)}});
  if (c.x.rows != c.a.cols || c.x.cols != c.b.cols) must.push_back({Kind::InvalidArgument, {"X"}});
  return c;
}

// 2-norms in long double of the host image.
template <class Image>
long double frobenius(const Image& img, const ViewPlan& v) {
  long double s = 0;
  v.for_each([&](std::int64_t, std::int64_t, std::size_t o) { s += (long double)img.at(o) * img.at(o); });
  return std::sqrt(s);
}

void check_ls_report(FuzzRun& run, const LsCase& c, const LeastSquaresReport& rep, const Snapshot<double>& in,
                     const Arena<double>& out) {
  const LeastSquaresOptions& o = c.options;
  const std::int64_t m = c.m, n = c.n, k = c.k;
  const auto text = [](long double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.3Lg", v);
    return std::string(s);
  };
  run.expect(std::int64_t(rep.residual_norms.size()) == k,
             "residual_norms has " + std::to_string(rep.residual_norms.size()) + " entries for " + std::to_string(k));
  if (n == 0 || k == 0) {  // nothing to solve: converged, no attempts, residual_norms ||b_j||_2
    run.expect(rep.converged && rep.attempts.empty(), "an empty problem was not converged at once");
    for (std::int64_t j = 0; j < k && j < std::int64_t(rep.residual_norms.size()); ++j) {
      long double bb = 0;
      for (std::int64_t i = 0; i < m; ++i)
        bb += (long double)in.at(c.b.offset + i + j * c.b.ld) * in.at(c.b.offset + i + j * c.b.ld);
      const long double expected = std::sqrt(bb);
      run.expect(std::fabs(rep.residual_norms[std::size_t(j)] - expected) <= 1e-12L * expected,
                 "residual_norms[" + std::to_string(j) + "] is not ||b||_2 for an empty X");
    }
    return;
  }
  run.expect(!rep.attempts.empty(), "no attempt for a problem with unknowns");
  if (rep.attempts.empty()) return;
  for (std::size_t i = 0; i < rep.attempts.size(); ++i) {
    const LeastSquaresAttempt& t = rep.attempts[i];
    const std::string at =
        "attempt " + std::to_string(i) + " (" + to_string(t.precision) + ", " + to_string(t.stop) + ")";
    run.expect(t.precision == Precision::FP32 || t.precision == Precision::FP64, at + ": precision");
    const Precision first = first_precision(o, m, n, c.a.label);
    if (first == Precision::FP64) run.expect(t.precision == Precision::FP64, at + ": FP32 factors where FP64 asked");
    // (An underdetermined A takes the rank-revealing attempt, FP64, whatever the options say.)
    if (!o.fallback && m >= n) run.expect(t.precision == first, at + ": another precision without fallback");
    if (t.unrefined)
      run.expect(i == 0 && o.factorization == Precision::Auto && first == Precision::FP64 && t.iterations == 0 &&
                     (t.stop == LeastSquaresStop::Converged || t.stop == LeastSquaresStop::RankDeficient),
                 at + ": unrefined");
    else if (i == 0 && m >= n && o.factorization == Precision::Auto && first == Precision::FP64)
      run.expect(false, at + ": Auto below auto_min_work did not take the unrefined FP64 QR solve");
    run.expect(t.iterations <= o.max_iterations, at + ": more steps than max_iterations");
    if (t.cholesky_qr)
      run.expect(o.cholesky_qr && t.precision == Precision::FP64 && t.update_backend.empty(), at + ": cholesky_qr");
    // The rank-revealing attempt ends the path, unless it kept every column of a tall A and its
    // refinement failed: then the FP64 QR follows, last (tall: the stacked [A; sqrt(ridge) I] is).
    const bool fp64_follows = i + 2 == rep.attempts.size() && t.rank == n && (o.ridge > 0 ? m + n : m) >= n &&
                              t.stop != LeastSquaresStop::Converged && t.stop != LeastSquaresStop::Stagnated &&
                              rep.attempts.back().precision == Precision::FP64 && !rep.attempts.back().rank_revealing;
    if (t.rank_revealing)
      run.expect(o.rank_deficient == LeastSquaresOptions::RankDeficiency::MinimumNorm &&
                     t.precision == Precision::FP64 && t.rank >= 0 && t.rank <= n &&
                     (i + 1 == rep.attempts.size() || fp64_follows),
                 at + ": rank_revealing");
    if (t.cgls && !t.rank_revealing)
      run.expect(o.refinement == LeastSquaresOptions::Refinement::Cgls && t.precision == Precision::FP32,
                 at + ": cgls");
    if (t.gmres)
      run.expect(o.refinement == LeastSquaresOptions::Refinement::Gmres ||
                     o.refinement == LeastSquaresOptions::Refinement::AugmentedThenGmres,
                 at + ": gmres");
    if (t.precision == Precision::FP32 && !t.gmres && !t.x_only && !c.options.fp32_update.empty() &&
        !(c.a.label == Memory::Device))
      run.expect(t.update_backend == o.fp32_update, at + ": update backend " + t.update_backend + " not fp32_update");
  }
  if (rep.fell_back)
    run.expect(rep.attempts.front().precision == Precision::FP32 && rep.attempts.back().precision == Precision::FP64,
               "fell_back, but FP64 factors did not follow FP32 ones");
  run.expect(!rep.path().empty(), "empty path()");
  const bool undecided = rep.attempts.back().stop == LeastSquaresStop::RankUndecided;
  if (undecided) {  // no solution to return: NaN
    run.expect(!rep.converged, "converged although the rank was undecided");
    bool all_nan = true;
    c.x.for_each([&](std::int64_t, std::int64_t, std::size_t q) { all_nan = all_nan && std::isnan(out.at(q)); });
    run.expect(all_nan, "X is not NaN after RankUndecided");
    return;
  }
  const long double norm_a = frobenius(in, c.a);
  bool finite = true;
  c.x.for_each([&](std::int64_t, std::int64_t, std::size_t q) { finite = finite && std::isfinite(out.at(q)); });
  if (rep.converged) run.expect(finite, "converged, but X is not finite");
  if (!finite) return;
  for (std::int64_t j = 0; j < k; ++j) {
    std::vector<long double> r(static_cast<std::size_t>(m));
    long double rr = 0, scale = 0, xx = 0, bb = 0;
    for (std::int64_t l = 0; l < n; ++l)
      xx += (long double)out.at(c.x.offset + l + j * c.x.ld) * out.at(c.x.offset + l + j * c.x.ld);
    for (std::int64_t i = 0; i < m; ++i) {
      const long double bi = in.at(c.b.offset + i + j * c.b.ld);
      long double ri = bi, si = std::fabs(bi);
      for (std::int64_t l = 0; l < n; ++l) {
        const long double p = (long double)in.at(c.a.offset + i + l * c.a.ld) * out.at(c.x.offset + l + j * c.x.ld);
        ri -= p;
        si += std::fabs(p);
      }
      r[std::size_t(i)] = ri;
      rr += ri * ri;
      scale += si * si;
      bb += bi * bi;
    }
    const long double norm_r = std::sqrt(rr), norm_x = std::sqrt(xx), norm_b = std::sqrt(bb);
    // residual_norms: ||b - A x||_2 of the returned x, computed in FP64: within gamma_{n+1} of
    // || |A||x| + |b| ||_2 of the true one.
    const long double reported = rep.residual_norms[std::size_t(j)];
    run.expect(std::fabs(reported - norm_r) <= 1e-12L * norm_r + (n + 2) * kU64 * std::sqrt(scale),
               "residual_norms[" + std::to_string(j) + "] " + text(reported) + " but ||b - A x|| is " + text(norm_r));
    if (!rep.converged) continue;
    // A least-squares solution: A^T r = 0. A backward stable one (Householder QR: Higham,
    // "Accuracy and Stability of Numerical Algorithms", Thm. 20.3) solves a problem within
    // gamma_{mn} of this one, so ||A^T r|| <= c (m + n) u ||A|| (||A|| ||x|| + ||r|| + ||b||) with
    // the rounding errors' random-sign growth (Higham & Mary 2019) in place of the worst case mn.
    // With ridge the condition is A^T r = lambda x (the stacked problem's normal equations).
    const long double lambda = o.ridge;
    long double atr = 0;
    for (std::int64_t l = 0; l < n; ++l) {
      long double s = 0;
      for (std::int64_t i = 0; i < m; ++i) s += (long double)in.at(c.a.offset + i + l * c.a.ld) * r[std::size_t(i)];
      s -= lambda * out.at(c.x.offset + l + j * c.x.ld);
      atr += s * s;
    }
    atr = std::sqrt(atr);
    // A minimum-norm solution (the rank-revealing attempt) leaves A^T r at the dropped columns'
    // part, at most ||R22|| ||r|| <= (n - rank) tau ||r|| (a pivoted QR: |r_ij| <= |r_ii| there).
    const bool minimum_norm = rep.attempts.back().rank_revealing;
    const long double dropped = minimum_norm ? 2.0L * (n - rep.rank) * rep.rank_threshold * norm_r : 0.0L;
    // The stacked problem's ||[A; sqrt(lambda) I]||_F and residual [b - A x; -sqrt(lambda) x].
    const long double stacked_a = std::sqrt(norm_a * norm_a + lambda * n);
    const long double stacked_r = std::sqrt(norm_r * norm_r + lambda * norm_x * norm_x);
    long double bound = 16.0L * (m + n) * kU64 * stacked_a * (stacked_a * norm_x + stacked_r + norm_b) + dropped;
    // A refinement accepted as Stagnated promises FP64's attainable accuracy in x,
    // 64 u (kappa + kappa^2 ||r|| / (||A|| ||x||)) ||x|| (least_squares.hpp), not a backward stable
    // x: A^T r = A^T A dx is then up to 64 u kappa ||A|| (||A|| ||x|| + kappa ||r||), kappa
    // estimated by 1 / the attempt's diagonal ratio.
    const LeastSquaresAttempt& last = rep.attempts.back();
    if (last.stop == LeastSquaresStop::Stagnated && last.diagonal_ratio > 0) {
      const long double kappa = 1.0L / last.diagonal_ratio;
      bound = std::max(bound, 64.0L * kU64 * kappa * stacked_a * (stacked_a * norm_x + kappa * stacked_r));
    }
    if (bound > 0) run.observe("||A^T r||", double(atr / bound));
    run.expect(atr <= bound, "column " + std::to_string(j) + " reported converged, but ||A^T r|| " + text(atr) + " > " +
                                 text(bound) + " (not a least-squares solution): " + rep.path() + ", " +
                                 to_string(rep.attempts.back().stop) + ", diagonal ratio " +
                                 text(rep.attempts.back().diagonal_ratio));
  }
}

}  // namespace

void run_ls_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index) {
  Rng rng(run.seed(index));
  Layout layout;
  layout.device_run = device_run;
  LsCase c = make_ls_case(rng, device_run, layout);
  Arena<double> host(Memory::Host, layout.next[0] + 8);
  std::unique_ptr<Arena<double>> device;
  if (device_run) device = std::make_unique<Arena<double>>(Memory::Device, layout.next[1] + 8);
  const auto arena = [&](const ViewPlan& v) -> Arena<double>& { return layout.arena_of(v) ? *device : host; };
  // A by its family; B consistent (A x_true) or not.
  if (c.a.has_elements() && !c.a.null) {
    Arena<double>& img = arena(c.a);
    const std::int64_t zero = rng.range(0, c.n - 1), copy_to = rng.range(0, c.n - 1);
    std::int64_t copy_from = rng.range(0, c.n - 1);
    if (copy_from == copy_to) copy_from = (copy_to + 1) % std::max<std::int64_t>(1, c.n);
    std::vector<int> row_exp(static_cast<std::size_t>(c.m));
    for (int& e : row_exp) e = int(rng.range(-12, 12));
    for (std::int64_t j = 0; j < c.n; ++j)
      for (std::int64_t i = 0; i < c.m; ++i) {
        double v = rng.uniform(-1, 1);
        if (c.family == LsFamily::Graded)
          v *= std::pow(10.0, -c.grading * double(j) / double(std::max<std::int64_t>(1, c.n - 1)));
        if (c.family == LsFamily::ScaledRows) v = std::ldexp(v, row_exp[std::size_t(i)]);
        if (c.family == LsFamily::Huge) v = std::ldexp(v, 600);
        if (c.family == LsFamily::Tiny) v = std::ldexp(v, -600);
        if (c.family == LsFamily::ZeroColumn && j == zero) v = 0;
        img.at(c.a.offset + std::size_t(i + j * c.a.ld)) = v;
      }
    if (c.family == LsFamily::DuplicateColumn || c.family == LsFamily::NearlyDependent)
      for (std::int64_t i = 0; i < c.m; ++i)
        img.at(c.a.offset + std::size_t(i + copy_to * c.a.ld)) =
            img.at(c.a.offset + std::size_t(i + copy_from * c.a.ld)) *
            (c.family == LsFamily::NearlyDependent ? 1 + 1e-13 * rng.uniform(-1, 1) : 1.0);
  }
  if (c.b.has_elements() && !c.b.null) {
    Arena<double>& img = arena(c.b);
    const bool from_a = c.consistent && c.a.has_elements() && !c.a.null && c.b.rows == c.a.rows &&
                        layout.arena_of(c.a) == layout.arena_of(c.b);
    for (std::int64_t j = 0; j < c.k; ++j) {
      std::vector<double> xt(std::size_t(std::max<std::int64_t>(c.n, 0)));
      for (double& v : xt) v = rng.uniform(-1, 1);
      for (std::int64_t i = 0; i < c.b.rows; ++i) {
        double v = rng.uniform(-1, 1);
        if (from_a) {
          v = 0;
          for (std::int64_t l = 0; l < c.n; ++l)
            v += img.at(c.a.offset + std::size_t(i + l * c.a.ld)) * xt[std::size_t(l)];
        }
        img.at(c.b.offset + std::size_t(i + j * c.b.ld)) = v;
      }
    }
  }
  const Positions a_bad = pick_positions(rng, c.a, 0.035), b_bad = pick_positions(rng, c.b, 0.035);
  for (const auto& [i, j] : a_bad) arena(c.a).at(c.a.offset + std::size_t(i + j * c.a.ld)) = nonfinite(rng);
  for (const auto& [i, j] : b_bad) arena(c.b).at(c.b.offset + std::size_t(i + j * c.b.ld)) = nonfinite(rng);
  nonfinite_faults(a_bad, "A", c.expected.must);
  nonfinite_faults(b_bad, "B", c.expected.must);
  alias_faults(c.a, c.b, c.x, layout.arena_of(c.a) == layout.arena_of(c.x),
               layout.arena_of(c.b) == layout.arena_of(c.x), true, c.expected);
  // Exactly dependent columns: FP64 factors refuse the problem (RankDeficientMatrix) under
  // RankDeficiency::FullRank, and otherwise the rank-revealing attempt
  // solves it (rank < n); FP32 ones alone leave it undecided (converged false, X NaN). Nearly
  // dependent ones may be refused where exactly dependent ones are.
  const bool deficient = c.family == LsFamily::ZeroColumn || c.family == LsFamily::DuplicateColumn;
  const bool reaches_fp64 = c.options.fallback || first_precision(c.options, c.m, c.n, c.a.label) == Precision::FP64;
  const bool minimum_norm = c.options.rank_deficient == LeastSquaresOptions::RankDeficiency::MinimumNorm;
  // (Ridge regression's stacked matrix has full rank: nothing to refuse.)
  if (c.expected.must.empty() && c.n > 0 && c.k > 0 && !minimum_norm && !(c.options.ridge > 0)) {
    if (deficient && reaches_fp64) c.expected.must.push_back({Kind::RankDeficientMatrix, {"rank deficient"}});
    if (c.family == LsFamily::NearlyDependent)
      c.expected.may.push_back({Kind::RankDeficientMatrix, {"rank deficient"}});
  }
  const Uploaded uploaded(host, device.get());
  run.begin(index, c.text());
  const auto view = [&](const ViewPlan& v) {
    return MatrixView<double>{v.null ? nullptr : arena(v).pointer(v.offset), v.rows, v.cols, v.ld, v.label};
  };
  LeastSquaresReport rep;
  const Outcome o = capture([&] { rep = least_squares(ctx, view(c.a), view(c.b), view(c.x), c.options); });
  if (device) device->download();
  if (const std::string why = judge(o, c.expected); !why.empty()) {
    run.fail(why);
  } else if (o.kind == Kind::Result) {
    check_ls_report(run, c, rep, uploaded.before(layout.arena_of(c.a)), arena(c.a));
    // Must converge: full rank, kappa <= 1e8, with FP64 factors to fall back on and steps enough.
    const bool well_posed = c.family != LsFamily::NearlyDependent && !deficient;
    if (well_posed && reaches_fp64 && c.options.max_iterations >= 10)
      run.expect(rep.converged, "a full-rank problem (kappa <= 1e8) with FP64 factors did not converge: " + rep.path());
    // Dependent columns are solved; their rank is not promised: an exact duplicate's remainder is
    // FP64 rounding, of the order of the default threshold max(m, n) u sigma_max itself (a 3 x 2
    // duplicate measured 1.5x above it), and rcond = 0 keeps every nonzero remainder.
    if (deficient && reaches_fp64 && minimum_norm && c.n > 0 && c.k > 0 && c.options.max_iterations >= 10)
      run.expect(rep.converged, "a rank-deficient problem's minimum-norm solve did not converge: " + rep.path());
  }
  for (Arena<double>* img : {&host, device.get()}) {
    if (img == nullptr) continue;
    const int which = img == &host ? 0 : 1;
    const Snapshot<double>& before = uploaded.before(which);
    Mask writable(img->size());
    if (layout.arena_of(c.x) == which) writable.add(c.x);
    const std::string changed = before.changes(*img, writable, [&](std::size_t q) {
      return "at arena offset " + std::to_string(q) + " (A @" + std::to_string(c.a.offset) + ", B @" +
             std::to_string(c.b.offset) + ", X @" + std::to_string(c.x.offset) + ")";
    });
    if (!changed.empty()) run.fail(changed);
    if (layout.arena_of(c.a) == which && before.hash_before(c.a) != Snapshot<double>::hash_now(*img, c.a))
      run.fail("A was modified (hash of its elements changed)");
    if (layout.arena_of(c.b) == which && before.hash_before(c.b) != Snapshot<double>::hash_now(*img, c.b))
      run.fail("B was modified (hash of its elements changed)");
  }
  run.end(to_string(o.kind));
}

}  // namespace mixsolve::fuzz
