// SPDX-License-Identifier: BSD-3-Clause
// The solve() and Factorization cases: matrix families, random SolveOptions, the documented
// precision path, and the checks of SolveReport and X against long double residuals.
#include "fuzz/solve_cases.hpp"

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
#include "mixsolve/slfp/blas.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace mixsolve::fuzz {
namespace {

const std::vector<Precision>& factorization_precisions() {
  static const std::vector<Precision> p = {Precision::FP64,     Precision::FP32,   Precision::TF32,
                                           Precision::FP16,     Precision::BF16,   Precision::Halfhalf,
                                           Precision::Tf32tf32, Precision::Fp16x3, Precision::Ozaki};
  return p;
}

// The precision path SolveOptions documents for a factorization of `kind`: auto_path, or
// cholesky_auto_path for a Cholesky (FP64 alone below auto_min_n or cholesky_auto_min_n, whose -1
// means 12288, or 65536 for a Cholesky, for device matrices and 0 for host ones), or the one
// precision asked for, then FP64 where fallback is on.
// near_diagonal: the report's SolveReport::near_diagonal_estimate (SolveOptions::
// fp16_when_near_diagonal: at most 1/8 puts FP16 before an Auto LU path that starts above it).
std::vector<Precision> documented_path(const SolveOptions& o, std::int64_t n, bool device_engine, FactorKind kind,
                                       double near_diagonal) {
  const bool cholesky = kind == FactorKind::Cholesky;
  const std::int64_t asked = cholesky ? o.cholesky_auto_min_n : o.auto_min_n;
  const std::int64_t auto_min_n = asked >= 0 ? asked : !device_engine ? 0 : cholesky ? 65536 : 12288;
  std::vector<Precision> path;
  if (o.factorization == Precision::Auto)
    path = n >= auto_min_n ? (cholesky ? o.cholesky_auto_path : o.auto_path) : std::vector<Precision>{Precision::FP64};
  else
    path = {o.factorization};
  if (o.fallback && !path.empty() && path.back() != Precision::FP64) path.push_back(Precision::FP64);
  const bool above_fp16 = !path.empty() && path.front() != Precision::FP16 && path.front() != Precision::BF16 &&
                          path.front() != Precision::FP64;
  if (!cholesky && o.factorization == Precision::Auto && o.fp16_when_near_diagonal && above_fp16 &&
      near_diagonal >= 0 && near_diagonal <= 0.125)
    path.insert(path.begin(), Precision::FP16);
  return path;
}

// Measures of column j of X as a solution of A x = b, in long double from the host image.
struct ColumnCheck {
  long double residual = 0;  // ||b - A x||_inf
  long double scale = 0;     // max_i (|A||x| + |b|)_i
  long double norm_x = 0, norm_b = 0;
  long double normwise = 0;       // residual / (||A||_inf ||x||_inf + ||b||_inf)
  long double componentwise = 0;  // max_i |b - A x|_i / (|A||x| + |b|)_i (Oettli and Prager)
  bool finite = true;
  bool zero_b = true;
};

template <class Image>
long double norm_inf_rows(const Image& img, const ViewPlan& a) {
  long double largest = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) {
    long double row = 0;
    for (std::int64_t j = 0; j < a.cols; ++j) row += std::fabs((long double)img.at(a.offset + i + j * a.ld));
    largest = std::max(largest, row);
  }
  return largest;
}

// A and B are read from `in` (the inputs as given), X from `out` (what the call left).
template <class In, class Out>
ColumnCheck check_column(const In& in, const Out& out, const ViewPlan& a, const ViewPlan& b, const ViewPlan& x,
                         std::int64_t j, long double norm_a) {
  ColumnCheck c;
  const std::int64_t m = a.rows, n = a.cols;
  for (std::int64_t l = 0; l < n; ++l) {
    const double v = out.at(x.offset + l + j * x.ld);
    if (!std::isfinite(v)) c.finite = false;
    c.norm_x = std::max(c.norm_x, std::fabs((long double)v));
  }
  for (std::int64_t i = 0; i < m; ++i) {
    const long double bi = in.at(b.offset + i + j * b.ld);
    if (bi != 0) c.zero_b = false;
    long double r = bi, s = std::fabs(bi);
    for (std::int64_t l = 0; l < n; ++l) {
      const long double aij = in.at(a.offset + i + l * a.ld), xl = out.at(x.offset + l + j * x.ld);
      r -= aij * xl;
      s += std::fabs(aij * xl);
    }
    c.residual = std::max(c.residual, std::fabs(r));
    c.scale = std::max(c.scale, s);
    c.norm_b = std::max(c.norm_b, std::fabs(bi));
    const long double cw = s > 0 ? std::fabs(r) / s : (r == 0 ? 0.0L : (long double)INFINITY);
    c.componentwise = std::max(c.componentwise, cw);
  }
  const long double den = norm_a * c.norm_x + c.norm_b;
  c.normwise = den > 0 ? c.residual / den : (c.residual == 0 ? 0.0L : (long double)INFINITY);
  return c;
}

// Entries of the matrix families (host image, rows x cols at `v`).
enum class SolveFamily {
  Uniform,
  Dominant,
  Graded,
  Scaled,
  Huge,
  Tiny,
  NearlySingular,
  Permutation,
  ZeroColumn,
  ZeroRow,
  Spd,
  SymmetricIndefinite
};

const char* to_string(SolveFamily f) {
  switch (f) {
    case SolveFamily::Uniform: return "uniform";
    case SolveFamily::Dominant: return "diagonally dominant";
    case SolveFamily::Graded: return "graded columns 1..1e-8";
    case SolveFamily::Scaled: return "rows and columns scaled by 2^+-20";
    case SolveFamily::Huge: return "uniform x 2^500";
    case SolveFamily::Tiny: return "uniform x 2^-500";
    case SolveFamily::NearlySingular: return "nearly singular (cond ~1e10)";
    case SolveFamily::Permutation: return "scaled permutation";
    case SolveFamily::ZeroColumn: return "zero column";
    case SolveFamily::ZeroRow: return "zero row";
    case SolveFamily::Spd: return "symmetric positive definite (G G^T / n + I)";
    case SolveFamily::SymmetricIndefinite: return "symmetric, uniform";
  }
  return "?";
}

// Fills the view's elements with family f; *zero gets the zero row's or column's index.
void fill_family(Rng& rng, Arena<double>& img, const ViewPlan& v, SolveFamily f, std::int64_t* zero) {
  const std::int64_t r = v.rows, c = v.cols;
  if (r <= 0 || c <= 0 || v.ld < r) return;
  std::vector<int> row_exp(std::size_t(r), 0), col_exp(std::size_t(c), 0);
  std::vector<std::int64_t> perm(std::size_t(std::max(r, c)));
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = std::int64_t(i);
  for (std::size_t i = perm.size(); i > 1; --i)
    std::swap(perm[i - 1], perm[std::size_t(rng.range(0, std::int64_t(i) - 1))]);
  if (f == SolveFamily::Scaled) {
    for (int& e : row_exp) e = int(rng.range(-20, 20));
    for (int& e : col_exp) e = int(rng.range(-20, 20));
  }
  const std::int64_t z = f == SolveFamily::ZeroColumn ? rng.range(0, c - 1)
                         : f == SolveFamily::ZeroRow  ? rng.range(0, r - 1)
                                                      : -1;
  if (zero) *zero = z;
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < r; ++i) {
      double value = rng.uniform(-1, 1);
      switch (f) {
        case SolveFamily::Dominant:
          if (i == j) value += double(c) * (value < 0 ? -1 : 1);
          break;
        case SolveFamily::Graded:
          value *= std::pow(10.0, -8.0 * double(j) / double(std::max<std::int64_t>(1, c - 1)));
          break;
        case SolveFamily::Scaled: value = std::ldexp(value, row_exp[std::size_t(i)] + col_exp[std::size_t(j)]); break;
        case SolveFamily::Huge: value = std::ldexp(value, 500); break;
        case SolveFamily::Tiny: value = std::ldexp(value, -500); break;
        case SolveFamily::Permutation:
          value = perm[std::size_t(j)] == i ? std::ldexp(1.0 + double(j % 3), int(j % 7) - 3) : 0.0;
          break;
        case SolveFamily::ZeroColumn:
          if (j == z) value = 0;
          break;
        case SolveFamily::ZeroRow:
          if (i == z) value = 0;
          break;
        default: break;
      }
      img.at(v.offset + std::size_t(i + j * v.ld)) = value;
    }
  if ((f == SolveFamily::Spd || f == SolveFamily::SymmetricIndefinite) && r == c) {
    // Spd: G G^T / n + I for the uniform G just drawn (eigenvalues in [1, ~n / 3 + 1]); else the
    // lower triangle mirrored.
    std::vector<double> g(std::size_t(r * c));
    for (std::int64_t j = 0; j < c; ++j)
      for (std::int64_t i = 0; i < r; ++i) g[std::size_t(i + j * r)] = img.at(v.offset + std::size_t(i + j * v.ld));
    for (std::int64_t j = 0; j < c; ++j)
      for (std::int64_t i = j; i < r; ++i) {
        double value = g[std::size_t(i + j * r)];
        if (f == SolveFamily::Spd) {
          value = i == j ? 1.0 : 0.0;
          for (std::int64_t p = 0; p < c; ++p) value += g[std::size_t(i + p * r)] * g[std::size_t(j + p * r)] / double(c);
        }
        img.at(v.offset + std::size_t(i + j * v.ld)) = value;
        img.at(v.offset + std::size_t(j + i * v.ld)) = value;
      }
  }
  if (f == SolveFamily::NearlySingular && c >= 2)  // the last column: the first plus 1e-10 noise
    for (std::int64_t i = 0; i < r; ++i)
      img.at(v.offset + std::size_t(i + (c - 1) * v.ld)) =
          img.at(v.offset + std::size_t(i)) + 1e-10 * rng.uniform(-1, 1);
}

// Whether the view holds a square matrix equal to its transpose, entry for entry (NaN unequal):
// what SolveOptions::structure checks.
template <class Image>
bool symmetric_image(const Image& img, const ViewPlan& a) {
  if (a.rows != a.cols || a.rows <= 0 || a.null || a.ld < a.rows) return false;
  for (std::int64_t j = 0; j < a.cols; ++j)
    for (std::int64_t i = j + 1; i < a.rows; ++i)
      if (!(img.at(a.offset + std::size_t(i + j * a.ld)) == img.at(a.offset + std::size_t(j + i * a.ld)))) return false;
  return true;
}

// The badly-scaled test SolveReport::componentwise_backward_error documents: the largest entries
// of A's rows, or of its columns, spread over more than 2^12.
template <class Image>
bool badly_scaled(const Image& img, const ViewPlan& a) {
  const auto spread = [&](bool rows) {
    double lo = INFINITY, hi = 0;
    for (std::int64_t p = 0; p < (rows ? a.rows : a.cols); ++p) {
      double largest = 0;
      for (std::int64_t q = 0; q < (rows ? a.cols : a.rows); ++q)
        largest = std::max(largest, std::fabs(img.at(a.offset + std::size_t(rows ? p + q * a.ld : q + p * a.ld))));
      lo = std::min(lo, largest);
      hi = std::max(hi, largest);
    }
    return lo > 0 ? hi / lo : INFINITY;
  };
  return a.rows > 0 && (spread(true) > 0x1p12 || spread(false) > 0x1p12);
}

// One right-hand side of a case: B, X, how X is placed, NaN/Inf in B, and the solve's expectation.
struct SolveRhs {
  ViewPlan b, x;
  std::string alias = "none";
  bool zero_column_of_b = false;
  Expected expected;
};

struct SolveCase {
  SolveFamily family = SolveFamily::Uniform;
  std::int64_t n = 0;
  ViewPlan a;
  SolveOptions options;
  std::string options_text;
  bool progress = false;
  bool factorization = false;  // Factorization with several solves, else solve()
  bool move = false;           // the Factorization is moved between solves
  std::int64_t zero = -1;      // ZeroColumn / ZeroRow: its index
  bool a_faulty = false;       // a documented error of A or the options applies
  Expected construct;          // the faults of A and the options
  std::vector<SolveRhs> rhs;
  std::string text() const {
    std::string s = std::string(factorization ? "Factorization" : "solve") + ", " + to_string(family) + ", n " +
                    std::to_string(n) + ", " + a.text("A") + ", options {" + options_text + "}";
    if (move) s += ", moved between solves";
    for (const SolveRhs& r : rhs) s += "; " + r.b.text("B") + ", " + r.x.text("X") + ", alias " + r.alias;
    return s;
  }
};

// Random valid options; with `invalid` one field out of its documented range, which the
// constructor must name (added to e.must).
SolveOptions random_solve_options(Rng& rng, bool device_engine, bool invalid, Expected& e, std::string& text) {
  SolveOptions o;
  std::ostringstream t;
  const auto& ps = factorization_precisions();
  if (rng.chance(0.55)) {
    o.factorization = Precision::Auto;
    if (rng.chance(0.5)) {
      o.auto_path.clear();
      const int len = int(rng.range(1, 3));
      for (int i = 0; i < len; ++i) o.auto_path.push_back(rng.pick(ps));
    }
    if (rng.chance(0.5)) {
      o.cholesky_auto_path.clear();
      const int len = int(rng.range(1, 3));
      for (int i = 0; i < len; ++i) o.cholesky_auto_path.push_back(rng.pick(ps));
    }
  } else {
    o.factorization = rng.pick(ps);
    if (rng.chance(0.1)) o.auto_path.clear();  // ignored where factorization is not Auto
    if (rng.chance(0.1)) o.cholesky_auto_path.clear();
  }
  // Mostly general; SPD-declared and auto structures on every family (SolveFamily::Spd most
  // often, make_solve_case).
  const double structure = rng.uniform();
  o.structure = structure < 0.7 ? Structure::General : structure < 0.85 ? Structure::Spd : Structure::Auto;
  t << "structure " << to_string(o.structure) << ", ";
  t << "factorization " << to_string(o.factorization) << " path";
  for (Precision p : o.auto_path) t << " " << to_string(p);
  t << " cholesky path";
  for (Precision p : o.cholesky_auto_path) t << " " << to_string(p);
  if (device_engine ? rng.chance(0.7) : rng.chance(0.3)) o.auto_min_n = rng.pick<std::int64_t>({0, 0, 1, 8, 40});
  if (device_engine ? rng.chance(0.7) : rng.chance(0.3))
    o.cholesky_auto_min_n = rng.pick<std::int64_t>({0, 0, 1, 8, 40});
  o.refinement =
      rng.pick({Refinement::Auto, Refinement::Auto, Refinement::Classic, Refinement::Gmres, Refinement::None});
  o.stop_test = rng.chance(0.7) ? StopTest::Attainable : StopTest::Lapack;
  if (rng.chance(0.4)) o.residual_precision = rng.pick({ResidualPrecision::Fp64, ResidualPrecision::DoubleDouble});
  if (rng.chance(0.25)) o.tolerance_factor = rng.pick({1e-3, 0.5, 4.0, 100.0, 1e6});
  if (rng.chance(0.3)) o.max_iterations = rng.pick({0, 1, 2, 3, 6, 100});
  if (rng.chance(0.25)) o.gmres_restart = rng.pick({1, 2, 3, 7, 20, 200});
  if (rng.chance(0.25)) o.gmres_max_inner = rng.pick({1, 2, 5, 16, 40, 1000});
  if (rng.chance(0.15))
    o.krylov_basis_format = rng.pick({slfp::Format::Slfp64in56, slfp::Format::Slfp64in48, slfp::Format::Slfp64in40,
                                      slfp::Format::Slfp64in32, slfp::Format::Slfp64in24, slfp::Format::Slfp64in16});
  if (rng.chance(0.15))
    o.factor_storage = rng.pick({slfp::Format::Slfp32in24, slfp::Format::Slfp32in16, slfp::Format::Slfp64in32,
                                 slfp::Format::Slfp64in24, slfp::Format::Slfp64in16});
  o.escalate_by_cost = rng.chance(0.7);
  o.fallback = rng.chance(0.75);
  o.reuse_pivot_order = rng.chance(0.7);
  if (rng.chance(0.3)) o.probe_pivot_ratio = rng.pick({0.0, 1e-8, 1.0, double(INFINITY)});
  o.range_scaling = rng.chance(0.8);
  o.condition_estimate =
      rng.pick({ConditionEstimate::WhenNotConverged, ConditionEstimate::Never, ConditionEstimate::Always});
  if (rng.chance(0.3)) o.block_size = rng.pick({1, 2, 3, 7, 16, 33, 64, 300});
  if (rng.chance(0.2)) o.ozaki_bits = int(rng.pick<std::int64_t>({kOzakiMinBits, 20, 32, kOzakiMaxBits}));
  if (invalid) {
    const auto s = [](auto v) { return std::to_string(v); };
    switch (int(rng.range(0, 12))) {
      case 9:
        o.gmres_max_inner = -int(rng.range(0, 5));
        e.must.push_back({Kind::InvalidArgument, {"gmres_max_inner (" + s(o.gmres_max_inner) + ")"}});
        break;
      case 10:
        o.block_size = -int(rng.range(1, 40));
        e.must.push_back({Kind::InvalidArgument, {"block_size (" + s(o.block_size) + ")"}});
        break;
      case 11:
        o.probe_pivot_ratio = rng.pick({-1.0, -1e-4, double(NAN), -double(INFINITY)});
        e.must.push_back({Kind::InvalidArgument, {"probe_pivot_ratio"}});
        break;
      case 12:
        o.tolerance_factor = INFINITY;
        e.must.push_back({Kind::InvalidArgument, {"tolerance_factor"}});
        break;
      case 0:
        o.max_iterations = -int(rng.range(1, 5));
        e.must.push_back({Kind::InvalidArgument, {"max_iterations (" + s(o.max_iterations) + ")"}});
        break;
      case 1:
        if (rng.chance(0.5)) {
          o.auto_min_n = -rng.range(2, 100);
          e.must.push_back({Kind::InvalidArgument, {"auto_min_n (" + s(o.auto_min_n) + ")"}});
        } else {
          o.cholesky_auto_min_n = -rng.range(2, 100);
          e.must.push_back({Kind::InvalidArgument, {"cholesky_auto_min_n (" + s(o.cholesky_auto_min_n) + ")"}});
        }
        break;
      case 2:
        o.gmres_restart = -int(rng.range(0, 3));
        e.must.push_back({Kind::InvalidArgument, {"gmres_restart (" + s(o.gmres_restart) + ")"}});
        break;
      case 3:
        o.tolerance_factor = rng.pick({0.0, -1.0, double(NAN), -double(INFINITY)});
        e.must.push_back({Kind::InvalidArgument, {"tolerance_factor"}});
        break;
      case 4:
        o.ozaki_bits = rng.pick({kOzakiMinBits - 1, kOzakiMaxBits + 1, 0, -3, 64});
        e.must.push_back({Kind::InvalidArgument, {"ozaki_bits (" + s(o.ozaki_bits) + ")"}});
        break;
      case 5: {
        o.factorization = Precision::Auto;
        const bool cholesky = rng.chance(0.5);
        if (cholesky && o.auto_path.empty()) o.auto_path = {Precision::Fp16x3};  // checked first
        (cholesky ? o.cholesky_auto_path : o.auto_path).clear();
        e.must.push_back({Kind::InvalidArgument, {cholesky ? "cholesky_auto_path is empty" : "auto_path is empty"}});
        break;
      }
      case 6: {
        o.factorization = Precision::Auto;
        const bool cholesky = rng.chance(0.5);
        if (cholesky && o.auto_path.empty()) o.auto_path = {Precision::Fp16x3};  // checked first
        std::vector<Precision>& path = cholesky ? o.cholesky_auto_path : o.auto_path;
        path = {Precision::FP32, Precision::Auto};
        if (rng.chance(0.5)) std::swap(path[0], path[1]);
        const int at = path[0] == Precision::Auto ? 0 : 1;
        e.must.push_back({Kind::InvalidArgument, {(cholesky ? "cholesky_auto_path[" : "auto_path[") + s(at) + "]"}});
        break;
      }
      case 7:
        o.factor_storage = rng.pick(
            {slfp::Format::Fp64, slfp::Format::Slfp64in56, slfp::Format::Slfp64in48, slfp::Format::Slfp64in40});
        e.must.push_back({Kind::InvalidArgument, {"factor_storage"}});
        break;
      default:
        o.krylov_basis_format = rng.pick({slfp::Format::Fp32, slfp::Format::Slfp32in24, slfp::Format::Slfp32in16});
        e.must.push_back({Kind::InvalidArgument, {"krylov_basis_format"}});
        break;
    }
  }
  t << ", min_n " << o.auto_min_n << ", cholesky min_n " << o.cholesky_auto_min_n << ", refinement " << to_string(o.refinement) << ", stop " << to_string(o.stop_test)
    << ", residual " << to_string(o.residual_precision)
    << ", tol " << o.tolerance_factor << ", iters " << o.max_iterations << ", restart " << o.gmres_restart << ", inner "
    << o.gmres_max_inner << ", basis " << slfp::to_string(o.krylov_basis_format) << ", storage "
    << slfp::to_string(o.factor_storage) << ", by cost " << o.escalate_by_cost << ", fallback " << o.fallback
    << ", reuse " << o.reuse_pivot_order << ", probe " << o.probe_pivot_ratio << ", scaling " << o.range_scaling
    << ", cond " << to_string(o.condition_estimate) << ", block " << o.block_size << ", bits " << o.ozaki_bits;
  text = t.str();
  return o;
}

SolveFamily pick_solve_family(Rng& rng) {
  const double u = rng.uniform();
  if (u < 0.40) return SolveFamily::Uniform;
  if (u < 0.48) return SolveFamily::Dominant;
  if (u < 0.55) return SolveFamily::Graded;
  if (u < 0.62) return SolveFamily::Scaled;
  if (u < 0.66) return SolveFamily::Huge;
  if (u < 0.70) return SolveFamily::Tiny;
  if (u < 0.76) return SolveFamily::NearlySingular;
  if (u < 0.80) return SolveFamily::Permutation;
  if (u < 0.88) return SolveFamily::ZeroColumn;
  if (u < 0.92) return SolveFamily::ZeroRow;
  if (u < 0.97) return SolveFamily::Spd;
  return SolveFamily::SymmetricIndefinite;
}

SolveCase make_solve_case(Rng& rng, bool device_run, bool factorization_api, Layout& layout) {
  SolveCase c;
  c.factorization = factorization_api;
  c.move = factorization_api && rng.chance(0.2);
  c.n = pick_order(rng, device_run ? 200 : 160);
  c.family = pick_solve_family(rng);
  const Labels labels = pick_labels(rng, device_run);
  c.a.rows = c.a.cols = c.n;
  c.a.label = labels.a;
  if (rng.chance(0.02)) c.a.cols = c.n + rng.range(1, 3);  // not square
  if (rng.chance(0.01)) (rng.chance(0.5) ? c.a.rows : c.a.cols) = -rng.range(1, 4);
  bool bad = false;
  c.a.ld = pick_ld(rng, c.a.rows, 0.025, bad);
  const bool beside_possible = c.n > 0 && rng.chance(0.05);
  if (beside_possible && !bad) c.a.ld = std::max<std::int64_t>(c.a.ld, 2 * c.n + rng.range(0, 3));
  c.a.null = rng.chance(c.n == 0 ? 0.3 : 0.01);
  const bool device_engine = device_run && c.a.label == Memory::Device;
  c.options = random_solve_options(rng, device_engine, rng.chance(0.07), c.construct, c.options_text);
  c.progress = rng.chance(0.3);
  view_faults(c.a, "A", c.construct.must);
  if (c.a.rows != c.a.cols) c.construct.must.push_back({Kind::InvalidArgument, {"A", "square"}});
  if (!device_run && c.a.label == Memory::Device) c.construct.must.push_back({Kind::InvalidArgument, {"A", "device"}});
  layout.place(rng, c.a);
  const int solves = factorization_api ? int(rng.range(1, 4)) : 1;
  for (int s = 0; s < solves; ++s) {
    SolveRhs r;
    const std::int64_t k = pick_rhs(rng);
    r.b.rows = c.n;
    if (rng.chance(0.02)) r.b.rows = std::max<std::int64_t>(0, c.n + rng.pick<std::int64_t>({-1, 1, 2}));
    if (rng.chance(0.01)) r.b.rows = -1;
    r.b.cols = k;
    r.x.rows = r.b.rows, r.x.cols = k;
    if (rng.chance(0.02)) (rng.chance(0.5) ? r.x.rows : r.x.cols) += 1;
    if (rng.chance(0.005)) r.x.cols = -2;
    r.b.label = labels.b, r.x.label = labels.x;
    r.b.ld = pick_ld(rng, r.b.rows, 0.02, bad);
    r.x.ld = pick_ld(rng, r.x.rows, 0.02, bad);
    r.b.null = rng.chance(0.007);
    r.x.null = rng.chance(0.007);
    layout.place(rng, r.b);
    layout.place(rng, r.x);
    if (rng.chance(0.07) && c.n > 0) {
      r.alias = alias_x(rng, c.a, r.b, r.x, beside_possible && !c.a.null && r.b.rows == c.n);
      layout.cover(r.x);
    }
    r.zero_column_of_b = rng.chance(0.05);
    std::vector<Fault>& must = r.expected.must;
    view_faults(r.b, "B", must);
    view_faults(r.x, "X", must);
    if (r.b.rows != c.a.rows && r.b.rows >= 0) must.push_back({Kind::InvalidArgument, {"B", std::to_string(r.b.rows)}});
    if (r.x.rows != r.b.rows || r.x.cols != r.b.cols) must.push_back({Kind::InvalidArgument, {"X"}});
    if (r.b.label != c.a.label || r.x.label != c.a.label) must.push_back({Kind::InvalidArgument, {"memory"}});
    c.rhs.push_back(std::move(r));
  }
  return c;
}

// Checks one solve's report and X against A and B (the host image) and against what the options
// and SolveReport document.
void check_solve_report(FuzzRun& run, const SolveCase& c, const SolveRhs& r, const SolveReport& rep,
                        const Snapshot<double>& in, const Arena<double>& out, bool device_engine,
                        Precision factors_before, const std::vector<std::string>& phases) {
  const SolveOptions& o = c.options;
  const std::int64_t n = c.n, k = r.b.cols;
  const auto text = [](double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.3g", v);
    return std::string(s);
  };
  run.expect(std::int64_t(rep.converged_rhs.size()) == k,
             "converged_rhs has " + std::to_string(rep.converged_rhs.size()) + " entries for " + std::to_string(k) +
                 " right-hand sides");
  if (n == 0 || k == 0) {  // "a B with no columns or rows returns at once, converged"
    run.expect(rep.converged && rep.attempts.empty(), "an empty B did not return at once, converged");
    for (bool v : rep.converged_rhs) run.expect(v, "converged_rhs false for a B with no rows");
    return;
  }
  const auto in_path = [&](FactorKind kind, Precision p) {
    const std::vector<Precision> path = documented_path(o, n, device_engine, kind, rep.near_diagonal_estimate);
    return std::find(path.begin(), path.end(), p) != path.end();
  };
  int iterations = 0;
  bool cheaper_seen = false, fp64_after_cheaper = false, fp64_solved = false, lu_seen = false;
  const bool symmetric = symmetric_image(in, c.a);
  for (std::size_t i = 0; i < rep.attempts.size(); ++i) {
    const Attempt& t = rep.attempts[i];
    const std::string at =
        "attempt " + std::to_string(i) + " (" + to_string(t.precision) + ", " + to_string(t.stop) + ")";
    iterations += t.iterations;
    run.expect(in_path(t.factor, t.precision), at + ": precision not on the documented path of its factorization");
    run.expect(t.iterations <= o.max_iterations,
               at + ": " + std::to_string(t.iterations) + " iterations > max_iterations");
    if (o.refinement == Refinement::None) run.expect(t.iterations == 0, at + ": refined under Refinement::None");
    if (o.refinement == Refinement::Auto)
      run.expect(t.refinement == Refinement::Classic || t.refinement == Refinement::Gmres, at + ": refinement auto");
    else
      run.expect(t.refinement == o.refinement,
                 at + ": refinement " + to_string(t.refinement) + " not the one asked for");
    const bool scalable =
        t.precision == Precision::FP16 || t.precision == Precision::BF16 || t.precision == Precision::Fp16x3;
    if (t.range_scaled) run.expect(o.range_scaling && scalable, at + ": range scaled where the options forbid it");
    if (t.precision != Precision::Ozaki)
      run.expect(t.emulated_bits == 0, at + ": emulated_bits for a non-Ozaki LU");
    else
      run.expect(t.emulated_bits == 0 || t.emulated_bits == o.ozaki_bits, at + ": emulated_bits not ozaki_bits");
    if (t.pivot_order == PivotOrder::Reused || t.pivot_order == PivotOrder::Rejected)
      run.expect(o.reuse_pivot_order && t.precision == Precision::FP64 && t.factor == FactorKind::Lu,
                 at + ": reused a row order");
    // Only the FP16 LU that the near-diagonal screen put first pivots inside its diagonal blocks.
    if (t.pivot_order == PivotOrder::DiagonalBlocks || t.pivot_order == PivotOrder::DiagonalBlocksRejected)
      run.expect(i == 0 && t.precision == Precision::FP16 && t.factor == FactorKind::Lu &&
                     o.factorization == Precision::Auto && rep.near_diagonal_estimate >= 0 &&
                     rep.near_diagonal_estimate <= 0.125,
                 at + ": pivoting inside the diagonal blocks without the near-diagonal screen");
    run.expect((t.zero_pivot_column >= 0) == (t.stop == StopReason::ZeroPivot || t.stop == StopReason::NotPositiveDefinite),
               at + ": zero_pivot_column");
    // The kind: LU for a general A, Cholesky where declared SPD; under auto Cholesky for a
    // symmetric A until the LU path takes over for good.
    if (o.structure == Structure::General || (o.structure == Structure::Auto && !symmetric))
      run.expect(t.factor == FactorKind::Lu, at + ": a Cholesky where the structure asks for an LU");
    if (o.structure == Structure::Spd) run.expect(t.factor == FactorKind::Cholesky, at + ": an LU of an SPD-declared A");
    if (t.factor == FactorKind::Lu) lu_seen = true;
    if (lu_seen) run.expect(t.factor == FactorKind::Lu, at + ": a Cholesky after the LU path took over");
    if (t.stop == StopReason::NotPositiveDefinite)
      run.expect(t.factor == FactorKind::Cholesky, at + ": NotPositiveDefinite from an LU");
    run.expect((t.collapsed_at_column >= 0) == (t.stop == StopReason::CollapsedPivots), at + ": collapsed_at_column");
    if (t.probe_estimate >= 0) run.expect(o.probe_pivot_ratio != 0, at + ": probed with probe_pivot_ratio 0");
    if (t.stop == StopReason::WeakFactors)
      run.expect(!(t.probe_estimate < kWeakFactorsProbe), at + ": WeakFactors below kWeakFactorsProbe");
    const bool fp64 = t.precision == Precision::FP64 || (t.precision == Precision::Ozaki && t.emulated_bits == 0);
    if (!fp64) cheaper_seen = true;
    const bool reached_refinement = t.stop != StopReason::ZeroPivot && t.stop != StopReason::Overflow &&
                                    t.stop != StopReason::WeakFactors && t.stop != StopReason::CollapsedPivots &&
                                    t.stop != StopReason::NotPositiveDefinite;
    if (t.precision == Precision::FP64 && cheaper_seen && reached_refinement) fp64_after_cheaper = true;
    if (fp64 && t.pivot_order != PivotOrder::Reused && reached_refinement) fp64_solved = true;
  }
  run.expect(rep.iterations == iterations, "report.iterations " + std::to_string(rep.iterations) +
                                               " is not the attempts' sum " + std::to_string(iterations));
  if (factors_before == Precision::Auto && fp64_after_cheaper)
    run.expect(rep.fell_back, "an FP64 attempt followed a cheaper one but fell_back is false");
  if (rep.fell_back) run.expect(cheaper_seen, "fell_back without a cheaper attempt");
  if (factors_before != Precision::Auto && !rep.attempts.empty()) {  // Factorization: the factors reused
    run.expect(rep.attempts[0].precision == factors_before, "a later solve did not start from the factors in use");
    run.expect(rep.attempts[0].factorization_seconds == 0, "a later solve's reused factors took factorization time");
  }
  for (const std::string& p : phases) {
    bool known = false;
    for (const char* prefix :
         {"factorization ", "fallback: factorization ", "probe of the ", "refinement ", "condition estimate"})
      known = known || p.rfind(prefix, 0) == 0;
    run.expect(known, "progress phase \"" + p + "\" is none of the documented ones");
  }
  if (rep.backward_error_history.empty()) {  // every factorization failed before a solve
    run.expect(
        rep.backward_error == INFINITY && !rep.converged,
        "no iterate, yet backward_error " + text(rep.backward_error) + " / converged " + std::to_string(rep.converged));
    for (const Attempt& t : rep.attempts)
      run.expect(t.stop != StopReason::Converged, "no iterate, yet an attempt converged");
    return;
  }
  run.expect(!rep.attempts.empty(), "iterates without an attempt");
  const long double norm_a = norm_inf_rows(in, c.a);
  const bool scaled = badly_scaled(in, c.a);
  long double worst = 0, worst_cw = 0, slack = 0, slack_cw = 0;
  bool all_converged = true;
  for (std::int64_t j = 0; j < k; ++j) {
    const ColumnCheck cc = check_column(in, out, c.a, r.b, r.x, j, norm_a);
    const std::string col = "column " + std::to_string(j);
    if (!cc.finite) {
      run.fail(col + " of X is not finite after a solve with iterates (not every element written?)");
      return;
    }
    if (cc.zero_b) {
      run.expect(cc.norm_x == 0, col + ": B's column is zero but X's is not");
      all_converged = all_converged && rep.converged_rhs[std::size_t(j)];
      continue;
    }
    // The LAPACK test on the true residual, up to an FP64 residual's rounding error: 4 sqrt(n + 1)
    // u (|A||x| + |b|) holds with overwhelming probability (Higham & Mary, "A new approach to
    // probabilistic rounding error analysis", 2019); gamma_{n+1} = (n + 2) u for the converse.
    const long double test = (long double)o.tolerance_factor * std::sqrt((long double)n) * cc.norm_x * norm_a * kU64;
    const long double probable = 4 * std::sqrt((long double)(n + 1)) * kU64 * cc.scale;
    const long double rigorous = (long double)(n + 2) * kU64 * cc.scale;
    if (rep.converged_rhs[std::size_t(j)] && test + probable > 0)
      run.observe("LAPACK test", double(cc.residual / (test + probable)));
    if (rep.converged_rhs[std::size_t(j)])
      run.expect(cc.residual <= test + probable, col + " reported converged, but ||r|| " + text(double(cc.residual)) +
                                                     " > the LAPACK test's " + text(double(test)));
    else
      run.expect(cc.residual >= 0.95L * test - rigorous, col + " reported not converged, but ||r|| " +
                                                             text(double(cc.residual)) + " meets the LAPACK test's " +
                                                             text(double(test)));
    all_converged = all_converged && rep.converged_rhs[std::size_t(j)];
    worst = std::max(worst, cc.normwise);
    worst_cw = std::max(worst_cw, cc.componentwise);
    const long double den = norm_a * cc.norm_x + cc.norm_b;
    if (den > 0) slack = std::max(slack, rigorous / den);
    slack_cw = (long double)(n + 2) * kU64;
  }
  run.expect(rep.converged == all_converged, "converged is not the and of converged_rhs");
  run.expect(std::fabs((long double)rep.backward_error - worst) <= 1e-3L * worst + slack + 1e-300L,
             "backward_error " + text(rep.backward_error) + " but X's is " + text(double(worst)));
  if (scaled)
    run.expect(std::fabs((long double)rep.componentwise_backward_error - worst_cw) <= 1e-3L * worst_cw + slack_cw,
               "componentwise_backward_error " + text(rep.componentwise_backward_error) + " but X's is " +
                   text(double(worst_cw)));
  else
    run.expect(rep.componentwise_backward_error == 0, "componentwise_backward_error computed for a well-scaled A");
  // An FP64 LU with partial pivoting that solved: X, the best iterate, is at least as good as its
  // first solve, whose backward error is at most gamma_{3n} || |L||U| || / ||A|| (Higham,
  // "Accuracy and Stability of Numerical Algorithms", Thm. 9.4); || |L||U| || / ||A|| stays below
  // ~20 for these families (partial pivoting's growth; Trefethen & Schreiber, "Average-case
  // stability of Gaussian elimination", 1990).
  if (fp64_solved && !scaled) run.observe("FP64 LU backward error", double(worst / (64.0L * (n + 1) * kU64)));
  if (fp64_solved && !scaled)
    run.expect(worst <= 64.0L * (n + 1) * kU64, "an FP64 LU solved, yet X's backward error is " + text(double(worst)));
  if (fp64_solved && scaled)  // judged componentwise: that one is at most the normwise one's bound after FP64 steps
    run.expect(std::min(worst, worst_cw) <= 64.0L * (n + 1) * kU64 || o.max_iterations == 0 ||
                   o.refinement == Refinement::None,
               "an FP64 LU solved a badly scaled A, yet X's backward errors are " + text(double(worst)) + " / " +
                   text(double(worst_cw)));
  // The condition estimate: never, always, or for a solve that did not converge; 0 where not
  // computed (or where the last factorization did not complete).
  const bool asked = o.condition_estimate == ConditionEstimate::Always ||
                     (o.condition_estimate == ConditionEstimate::WhenNotConverged && !rep.converged);
  if (!asked)
    run.expect(rep.condition_estimate == 0 && rep.forward_error_bound == 0, "a condition estimate nobody asked for");
  const StopReason last = rep.attempts.back().stop;
  const bool completed = last != StopReason::ZeroPivot && last != StopReason::Overflow &&
                         last != StopReason::CollapsedPivots && last != StopReason::NotPositiveDefinite;
  if (asked && completed)
    run.expect(rep.condition_estimate > 0 && std::isfinite(rep.condition_estimate) && rep.forward_error_bound >= 0,
               "condition estimate " + text(rep.condition_estimate) + " / bound " + text(rep.forward_error_bound) +
                   " where one was asked for");
  run.expect(rep.stop_test_backward_error > 0 || !(o.tolerance_factor > 0), "stop_test_backward_error not set");
}

}  // namespace

void run_solve_case(FuzzRun& run, Context& ctx, bool device_run, bool factorization_api, std::int64_t index) {
  Rng rng(run.seed(index));
  Layout layout;
  layout.device_run = device_run;
  SolveCase c = make_solve_case(rng, device_run, factorization_api, layout);
  Arena<double> host(Memory::Host, layout.next[0] + 8);
  std::unique_ptr<Arena<double>> device;
  if (device_run) device = std::make_unique<Arena<double>>(Memory::Device, layout.next[1] + 8);
  const auto arena = [&](const ViewPlan& v) -> Arena<double>& { return layout.arena_of(v) ? *device : host; };
  // Values: A by its family, NaN / Inf where placed, B uniform (a zero column now and then); X
  // stays poisoned, so that an element the solve did not write shows.
  fill_family(rng, arena(c.a), c.a, c.family, &c.zero);
  const Positions a_bad = pick_positions(rng, c.a, 0.05);
  for (const auto& [i, j] : a_bad) arena(c.a).at(c.a.offset + std::size_t(i + j * c.a.ld)) = nonfinite(rng);
  nonfinite_faults(a_bad, "A", c.construct.must);
  for (SolveRhs& r : c.rhs) {
    if (r.b.has_elements() && !r.b.null)
      r.b.for_each([&](std::int64_t, std::int64_t j, std::size_t o) {
        arena(r.b).at(o) = r.zero_column_of_b && j == 0 ? 0.0 : rng.uniform(-1, 1);
      });
    const Positions b_bad = pick_positions(rng, r.b, 0.04);
    for (const auto& [i, j] : b_bad) arena(r.b).at(r.b.offset + std::size_t(i + j * r.b.ld)) = nonfinite(rng);
    nonfinite_faults(b_bad, "B", r.expected.must);
    // Factorization copies a host A: X may then lie in A's storage (solve() still refuses it).
    const bool a_read_in_place = !c.factorization || (device_run && c.a.label == Memory::Device);
    alias_faults(c.a, r.b, r.x, layout.arena_of(c.a) == layout.arena_of(r.x),
                 layout.arena_of(r.b) == layout.arena_of(r.x), a_read_in_place, r.expected);
  }
  // SolveOptions::structure Spd: a nonsymmetric A is refused by the constructor (a NaN among its
  // entries is named first); a symmetric one that is not positive definite may be refused by the
  // FP64 Cholesky of the first solve that factors (NotPositiveDefinite).
  const bool symmetric = symmetric_image(arena(c.a), c.a);
  const bool square = c.a.rows == c.a.cols && c.a.rows > 0 && !c.a.null && c.a.ld >= c.a.rows;
  const bool spd_declared = c.options.structure == Structure::Spd;
  if (spd_declared && square && !symmetric)
    c.construct.must.push_back({Kind::InvalidArgument, {"structure is spd", "not symmetric"}});
  const Fault not_spd_fault{Kind::NotPositiveDefinite, {"not positive definite", "column"}};
  if (spd_declared && symmetric && c.family != SolveFamily::Spd)
    for (SolveRhs& r : c.rhs) r.expected.may.push_back(not_spd_fault);
  // A singular A is refused by the FP64 LU (SingularMatrix naming the zero column), by the first
  // solve that factors; cheaper LUs' zero pivots escalate.
  const bool device_engine = device_run && c.a.label == Memory::Device;
  const bool singular = (c.family == SolveFamily::ZeroColumn || c.family == SolveFamily::ZeroRow) && c.n > 0;
  // FP64 on the path of every factorization that may meet the zero column: the Cholesky's where
  // SPD is declared or assumed of a symmetric A, and under Auto the LU path that may follow it.
  const bool cholesky_first = spd_declared || (c.options.structure == Structure::Auto && symmetric);
  const auto fp64_on = [&](FactorKind kind) {
    const std::vector<Precision> path = documented_path(c.options, c.n, device_engine, kind, -1);  // FP16 first changes no FP64
    return std::find(path.begin(), path.end(), Precision::FP64) != path.end();
  };
  const bool fp64_path = cholesky_first ? fp64_on(FactorKind::Cholesky) && (spd_declared || fp64_on(FactorKind::Lu))
                                        : fp64_on(FactorKind::Lu);
  const Fault singular_fault{Kind::SingularMatrix, {"column"}, c.family == SolveFamily::ZeroColumn ? c.zero : -1};
  bool factoring_seen = false;
  for (SolveRhs& r : c.rhs) {
    if (!singular || !c.construct.must.empty() || !r.expected.must.empty() || r.b.cols <= 0) continue;
    std::vector<Fault>& list = !factoring_seen && fp64_path ? r.expected.must : r.expected.may;
    list.push_back(singular_fault);  // may: Ozaki (an FP64 LU where nothing is emulated), or after
    if (spd_declared && symmetric) list.push_back(not_spd_fault);  // a zero 1 x 1 A
    factoring_seen = true;
  }
  const Uploaded uploaded(host, device.get());
  run.begin(index, c.text());
  const auto before_of = [&](const ViewPlan& v) -> const Snapshot<double>& {
    return uploaded.before(layout.arena_of(v));
  };

  std::vector<std::string> phases;
  SolveOptions options = c.options;
  if (c.progress) options.progress = [&phases](const std::string& p) { phases.push_back(p); };
  const auto view = [&](const ViewPlan& v) {
    return MatrixView<double>{v.null ? nullptr : arena(v).pointer(v.offset), v.rows, v.cols, v.ld, v.label};
  };
  const auto refresh = [&] {
    if (device) device->download();
  };
  std::string outcome;
  const auto note = [&](const Outcome& o) {  // the case's outcome: its first error, else a result
    if (o.kind != Kind::Result && (outcome.empty() || outcome == "result")) outcome = to_string(o.kind);
    if (outcome.empty()) outcome = "result";
  };
  if (!c.factorization) {
    SolveRhs& r = c.rhs[0];
    Expected e = c.construct;
    e.must.insert(e.must.end(), r.expected.must.begin(), r.expected.must.end());
    e.may.insert(e.may.end(), r.expected.may.begin(), r.expected.may.end());
    SolveReport rep;
    const Outcome o = capture([&] { rep = solve(ctx, view(c.a), view(r.b), view(r.x), options); });
    refresh();
    note(o);
    if (const std::string why = judge(o, e); !why.empty())
      run.fail(why);
    else if (o.kind == Kind::Result)
      check_solve_report(run, c, r, rep, before_of(c.a), arena(c.a), device_engine, Precision::Auto, phases);
  } else {
    std::unique_ptr<Factorization> f;
    const Outcome oc = capture([&] { f = std::make_unique<Factorization>(ctx, view(c.a), options); });
    note(oc);
    if (const std::string why = judge(oc, c.construct); !why.empty()) run.fail("constructor " + why);
    if (f) {
      run.expect(f->precision() == Precision::Auto, "precision() before the first solve is not auto");
      for (std::size_t s = 0; s < c.rhs.size(); ++s) {
        SolveRhs& r = c.rhs[s];
        const Precision before = f->precision();
        phases.clear();
        SolveReport rep;
        const Outcome o = capture([&] { rep = f->solve(view(r.b), view(r.x)); });
        refresh();
        note(o);
        if (const std::string why = judge(o, r.expected); !why.empty())
          run.fail("solve " + std::to_string(s) + " " + why);
        else if (o.kind == Kind::Result) {
          check_solve_report(run, c, r, rep, before_of(c.a), arena(c.a), device_engine, before, phases);
          const Precision now = f->precision();
          if (now != Precision::Auto) {
            bool tried = now == before;
            for (const Attempt& t : rep.attempts) tried = tried || t.precision == now;
            run.expect(tried, "precision() names factors no attempt made");
          }
        }
        if (c.move) {  // the factors and state move with the object
          auto moved = std::make_unique<Factorization>(std::move(*f));
          f = std::move(moved);
        }
      }
    }
  }
  // Inputs never modified: A and B hashed before and after; nothing outside X's elements written.
  for (Arena<double>* img : {&host, device.get()}) {
    if (img == nullptr) continue;
    const Snapshot<double>& before = uploaded.before(img == &host ? 0 : 1);
    const int which = img == &host ? 0 : 1;
    Mask writable(img->size());
    for (const SolveRhs& r : c.rhs)
      if (layout.arena_of(r.x) == which) writable.add(r.x);
    const auto name_of = [&](std::size_t o) {
      const auto inside = [&](const ViewPlan& v) { return o >= v.offset && o < v.offset + v.storage(); };
      if (layout.arena_of(c.a) == which && inside(c.a))
        return std::string("in A's storage at ") + std::to_string(o - c.a.offset);
      for (const SolveRhs& r : c.rhs)
        if (layout.arena_of(r.b) == which && inside(r.b))
          return std::string("in B's storage at ") + std::to_string(o - r.b.offset);
      return "at arena offset " + std::to_string(o);
    };
    const std::string changed = before.changes(*img, writable, name_of);
    if (!changed.empty()) run.fail(changed);
    bool a_may_hold_x = false;  // Factorization copied a host A: X may lie in its storage
    for (const SolveRhs& r : c.rhs)
      a_may_hold_x = a_may_hold_x || (c.factorization && c.a.label == Memory::Host && layout.arena_of(r.x) == which &&
                                      ranges_overlap(r.x, c.a));
    if (layout.arena_of(c.a) == which && !a_may_hold_x &&
        before.hash_before(c.a) != Snapshot<double>::hash_now(*img, c.a))
      run.fail("A was modified (hash of its elements changed)");
    for (std::size_t s = 0; s < c.rhs.size(); ++s) {
      const SolveRhs& r = c.rhs[s];
      bool reused = false;  // a later solve's X may lie in an earlier solve's B
      for (std::size_t t = s + 1; t < c.rhs.size(); ++t)
        reused = reused || (layout.arena_of(c.rhs[t].x) == which && ranges_overlap(c.rhs[t].x, r.b));
      if (layout.arena_of(r.b) == which && !reused && before.hash_before(r.b) != Snapshot<double>::hash_now(*img, r.b))
        run.fail("B of solve " + std::to_string(s) + " was modified (hash of its elements changed)");
    }
  }
  run.end(outcome);
}

}  // namespace mixsolve::fuzz
