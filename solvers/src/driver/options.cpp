// SPDX-License-Identifier: BSD-3-Clause
// SolveOptions as text (options.hpp): one table of fields, each with its name, what it reads, and
// how it reads and writes the field; the ranges of the fields (option_checks.hpp).
#include "mixsolve/solvers/options.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "driver/option_checks.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve {

namespace {

// A double for a message or for to_string: the shortest text that reads back as it ("inf" too).
std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream text;
  text.precision(17);
  text << v;
  for (int digits = 1; digits <= 17; ++digits) {  // the fewest digits that read back exactly
    std::ostringstream shorter;
    shorter.precision(digits);
    shorter << v;
    if (std::stod(shorter.str()) == v) return shorter.str();
  }
  return text.str();
}

}  // namespace

namespace solvers_detail {

void check_solve_options(const char* where, const SolveOptions& options) {
  if (options.structure != Structure::General && options.structure != Structure::Spd &&
      options.structure != Structure::Auto)
    throw InvalidArgument(std::string(where) + ": structure (" + std::to_string(int(options.structure)) +
                          ") is not general, spd or auto");
  if (options.residual_precision != ResidualPrecision::Auto && options.residual_precision != ResidualPrecision::Fp64 &&
      options.residual_precision != ResidualPrecision::DoubleDouble)
    throw InvalidArgument(std::string(where) + ": residual_precision (" +
                          std::to_string(int(options.residual_precision)) + ") is not auto, fp64 or double-double");
  if (options.max_iterations < 0)
    throw InvalidArgument(std::string(where) + ": max_iterations (" + std::to_string(options.max_iterations) + ") < 0");
  if (options.auto_min_n < -1)
    throw InvalidArgument(std::string(where) + ": auto_min_n (" + std::to_string(options.auto_min_n) +
                          ") < -1 (-1: the engine's choice)");
  if (options.cholesky_auto_min_n < -1)
    throw InvalidArgument(std::string(where) + ": cholesky_auto_min_n (" + std::to_string(options.cholesky_auto_min_n) +
                          ") < -1 (-1: the engine's choice)");
  if (options.gmres_restart < 1)
    throw InvalidArgument(std::string(where) + ": gmres_restart (" + std::to_string(options.gmres_restart) + ") < 1");
  if (options.gmres_max_inner < 1)
    throw InvalidArgument(std::string(where) + ": gmres_max_inner (" + std::to_string(options.gmres_max_inner) +
                          ") < 1");
  if (options.block_size < 0)
    throw InvalidArgument(std::string(where) + ": block_size (" + std::to_string(options.block_size) +
                          ") < 0 (0: the memory space's choice)");
  // 0 (never probe), a positive ratio, or INFINITY (probe every attempt that may be probed).
  if (std::isnan(options.probe_pivot_ratio))
    throw InvalidArgument(std::string(where) + ": probe_pivot_ratio (" + number(options.probe_pivot_ratio) +
                          ") is NaN (0: never probe, INFINITY: always)");
  if (options.probe_pivot_ratio < 0)
    throw InvalidArgument(std::string(where) + ": probe_pivot_ratio (" + number(options.probe_pivot_ratio) + ") < 0");
  // FP32 itself, or an SLFP format no wider than FP32.
  const slfp::Format storage = options.factor_storage;
  if (storage != slfp::Format::Fp32 && (storage == slfp::Format::Fp64 || slfp::container_bits(storage) > 32))
    throw InvalidArgument(std::string(where) + ": factor_storage (" + slfp::to_string(options.factor_storage) +
                          ") is not fp32, slfp32in24b, slfp32in16b, slfp64in32b, slfp64in24b or slfp64in16b");
  if (!slfp::fp64_based(options.krylov_basis_format))
    throw InvalidArgument(std::string(where) + ": krylov_basis_format (" + slfp::to_string(options.krylov_basis_format) +
                          ") is FP32-based; the basis needs an fp64 or slfp64 format");
  if (options.factorization == Precision::Auto) {
    const auto check_path = [&](const char* name, const std::vector<Precision>& path) {
      if (path.empty()) throw InvalidArgument(std::string(where) + ": " + name + " is empty");
      for (std::size_t i = 0; i < path.size(); ++i)
        if (path[i] == Precision::Auto)
          throw InvalidArgument(std::string(where) + ": " + name + "[" + std::to_string(i) + "] is auto");
    };
    check_path("auto_path", options.auto_path);
    check_path("cholesky_auto_path", options.cholesky_auto_path);
  }
  if (options.ozaki_bits < kOzakiMinBits || options.ozaki_bits > kOzakiMaxBits)
    throw InvalidArgument(std::string(where) + ": ozaki_bits (" + std::to_string(options.ozaki_bits) + ") outside [" +
                          std::to_string(kOzakiMinBits) + ", " + std::to_string(kOzakiMaxBits) + "]");
  if (!(options.tolerance_factor > 0))
    throw InvalidArgument(std::string(where) + ": tolerance_factor (" + std::to_string(options.tolerance_factor) + ") <= 0");
  if (!std::isfinite(options.tolerance_factor))  // an infinite one would call every iterate converged
    throw InvalidArgument(std::string(where) + ": tolerance_factor (" + number(options.tolerance_factor) +
                          ") is not finite");
}

void check_least_squares_options(const char* where, const LeastSquaresOptions& options, const Memory* a_memory) {
  if (options.factorization != Precision::FP32 && options.factorization != Precision::FP64 &&
      options.factorization != Precision::Auto)
    throw InvalidArgument(std::string(where) + ": factorization " + to_string(options.factorization) +
                          " is not supported (fp32, fp64 or auto)");
  if (options.auto_min_work < -1)
    throw InvalidArgument(std::string(where) + ": auto_min_work (" + std::to_string(options.auto_min_work) + ") < -1");
  if (options.max_iterations < 1)
    throw InvalidArgument(std::string(where) + ": max_iterations (" + std::to_string(options.max_iterations) + ") < 1");
  if (options.block_size < 0)
    throw InvalidArgument(std::string(where) + ": block_size (" + std::to_string(options.block_size) + ") < 0");
  using LsRefinement = LeastSquaresOptions::Refinement;
  const LsRefinement method = options.refinement;
  if (method != LsRefinement::Augmented && method != LsRefinement::Gmres &&
      method != LsRefinement::AugmentedThenGmres && method != LsRefinement::Cgls)
    throw InvalidArgument(std::string(where) + ": refinement (" + std::to_string(static_cast<int>(method)) +
                          ") is not Augmented, Gmres, AugmentedThenGmres or Cgls");
  using Rank = LeastSquaresOptions::RankDeficiency;
  if (options.rank_deficient != Rank::MinimumNorm && options.rank_deficient != Rank::FullRank)
    throw InvalidArgument(std::string(where) + ": rank_deficient (" +
                          std::to_string(static_cast<int>(options.rank_deficient)) +
                          ") is not MinimumNorm or FullRank");
  if (!(options.ridge >= 0) || std::isinf(options.ridge))
    throw InvalidArgument(std::string(where) + ": ridge (" + number(options.ridge) + ") must be finite and >= 0");
  if (!(options.rcond < 1))
    throw InvalidArgument(std::string(where) + ": rcond (" + number(options.rcond) +
                          ") must be below 1 (negative: the default)");
  // The FP32 updates' backends: FP32 GEMMs of the registry, in A's memory where it is known
  // (fp32_vt_c_update applies to device matrices only).
  for (const auto& [option, name] : {std::pair<const char*, const std::string&>{"fp32_update", options.fp32_update},
                                     {"fp32_vt_c_update", options.fp32_vt_c_update}}) {
    if (name.empty()) continue;
    const gemm::Backend* backend = nullptr;
    for (const gemm::Backend* candidate : gemm::all_backends())
      if (candidate->name() == name) backend = candidate;
    const bool ignored_here = a_memory && std::string(option) == "fp32_vt_c_update" && *a_memory == Memory::Host;
    if (!backend || backend->data_type() != gemm::DataType::F32 ||
        (a_memory && !ignored_here && backend->memory() != *a_memory))
      throw InvalidArgument(std::string(where) + ": " + option + " \"" + name + "\" is not an FP32 GEMM backend" +
                            (a_memory ? std::string(" for ") + (*a_memory == Memory::Device ? "device" : "host") +
                                            " matrices"
                                      : std::string()) +
                            " (gemm registry)");
  }
}

}  // namespace solvers_detail

namespace {

// One row of a table: the field's text form and how it reads and writes the field of Options.
template <class Options>
struct Field {
  OptionField text;
  std::function<std::string(const Options&)> get;
  std::function<void(Options&, const std::string&)> set;
};

// The value as the number type of a field; InvalidArgument naming the field for anything else.
template <class T>
T read_number(const std::string& name, const std::string& value) {
  try {
    std::size_t used = 0;
    T v;
    if constexpr (std::is_floating_point_v<T>) {
      v = (value == "inf" || value == "INFINITY") ? std::numeric_limits<T>::infinity() : T(std::stod(value, &used));
      if (value == "inf" || value == "INFINITY") used = value.size();
    } else {
      const long long wide = std::stoll(value, &used);
      if (wide < std::numeric_limits<T>::min() || wide > std::numeric_limits<T>::max()) throw std::out_of_range(value);
      v = T(wide);
    }
    if (used != value.size()) throw std::invalid_argument(value);
    return v;
  } catch (const std::logic_error&) {
    throw InvalidArgument("options: " + name + " = \"" + value + "\" is not " +
                          (std::is_floating_point_v<T> ? "a number" : "an integer"));
  }
}

bool read_switch(const std::string& name, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw InvalidArgument("options: " + name + " = \"" + value + "\" is not true or false");
}

// A path of precisions as text, "fp16+fp32", and back.
std::string join_precisions(const std::vector<Precision>& path) {
  std::string s;
  for (Precision p : path) s += (s.empty() ? "" : "+") + to_string(p);
  return s;
}

std::vector<Precision> split_precisions(const std::string& text) {
  std::vector<Precision> path;
  std::stringstream list(text);
  for (std::string name; std::getline(list, name, '+');) path.push_back(parse_precision(name));
  return path;
}

const std::vector<Field<SolveOptions>>& solve_fields() {
  // The names each enumeration reads come from its own to_string / parse_* (solve_options.hpp).
  static const std::vector<Field<SolveOptions>> table = {
      {{"precision", "auto, fp64, fp32, tf32, fp16, bf16, halfhalf, tf32tf32, fp16x3, ozaki",
        "SolveOptions::factorization: one precision, or auto (auto-path)"},
       [](const SolveOptions& o) { return to_string(o.factorization); },
       [](SolveOptions& o, const std::string& v) { o.factorization = parse_precision(v); }},
      {{"structure", "general, spd, auto", "LU, Cholesky (A symmetric), or Cholesky where A is symmetric"},
       [](const SolveOptions& o) { return to_string(o.structure); },
       [](SolveOptions& o, const std::string& v) { o.structure = parse_structure(v); }},
      {{"refinement", "none, classic, gmres, auto", "the refinement method"},
       [](const SolveOptions& o) { return to_string(o.refinement); },
       [](SolveOptions& o, const std::string& v) { o.refinement = parse_refinement(v); }},
      {{"stop-test", "attainable, lapack", "when refinement ends for a right-hand side"},
       [](const SolveOptions& o) { return to_string(o.stop_test); },
       [](SolveOptions& o, const std::string& v) { o.stop_test = parse_stop_test(v); }},
      {{"residual-precision", "auto, double-double, fp64", "the arithmetic of refinement's residuals b - A x"},
       [](const SolveOptions& o) { return to_string(o.residual_precision); },
       [](SolveOptions& o, const std::string& v) { o.residual_precision = parse_residual_precision(v); }},
      {{"tolerance-factor", "number > 0, finite", "scales the LAPACK test"},
       [](const SolveOptions& o) { return number(o.tolerance_factor); },
       [](SolveOptions& o, const std::string& v) { o.tolerance_factor = read_number<double>("tolerance-factor", v); }},
      {{"max-iterations", "integer >= 0", "refinement steps per attempt"},
       [](const SolveOptions& o) { return std::to_string(o.max_iterations); },
       [](SolveOptions& o, const std::string& v) { o.max_iterations = read_number<int>("max-iterations", v); }},
      {{"fallback", "true, false", "an FP64 factorization where the cheaper ones fail"},
       [](const SolveOptions& o) { return std::string(o.fallback ? "true" : "false"); },
       [](SolveOptions& o, const std::string& v) { o.fallback = read_switch("fallback", v); }},
      {{"condition-estimate", "never, when-not-converged, always", "when to estimate cond(A)"},
       [](const SolveOptions& o) { return to_string(o.condition_estimate); },
       [](SolveOptions& o, const std::string& v) { o.condition_estimate = parse_condition_estimate(v); }},
      {{"auto-path", "precisions joined by '+', e.g. fp16+fp32", "the cheap rungs auto tries, in order"},
       [](const SolveOptions& o) { return join_precisions(o.auto_path); },
       [](SolveOptions& o, const std::string& v) { o.auto_path = split_precisions(v); }},
      {{"auto-min-n", "integer >= -1", "auto factors smaller matrices in FP64 at once (-1: the engine's choice)"},
       [](const SolveOptions& o) { return std::to_string(o.auto_min_n); },
       [](SolveOptions& o, const std::string& v) { o.auto_min_n = read_number<std::int64_t>("auto-min-n", v); }},
      {{"fp16-when-near-diagonal", "true, false", "auto tries FP16 first where A is close to its diagonal"},
       [](const SolveOptions& o) { return std::string(o.fp16_when_near_diagonal ? "true" : "false"); },
       [](SolveOptions& o, const std::string& v) { o.fp16_when_near_diagonal = read_switch("fp16-when-near-diagonal", v); }},
      {{"cholesky-auto-path", "precisions joined by '+', e.g. halfhalf", "auto-path for a Cholesky"},
       [](const SolveOptions& o) { return join_precisions(o.cholesky_auto_path); },
       [](SolveOptions& o, const std::string& v) { o.cholesky_auto_path = split_precisions(v); }},
      {{"cholesky-auto-min-n", "integer >= -1", "auto-min-n for a Cholesky (-1: the engine's choice)"},
       [](const SolveOptions& o) { return std::to_string(o.cholesky_auto_min_n); },
       [](SolveOptions& o, const std::string& v) {
         o.cholesky_auto_min_n = read_number<std::int64_t>("cholesky-auto-min-n", v);
       }},
      {{"gmres-restart", "integer >= 1", "GMRES's restart length"},
       [](const SolveOptions& o) { return std::to_string(o.gmres_restart); },
       [](SolveOptions& o, const std::string& v) { o.gmres_restart = read_number<int>("gmres-restart", v); }},
      {{"gmres-max-inner", "integer >= 1", "GMRES iterations per outer step and right-hand side, and its budget"},
       [](const SolveOptions& o) { return std::to_string(o.gmres_max_inner); },
       [](SolveOptions& o, const std::string& v) { o.gmres_max_inner = read_number<int>("gmres-max-inner", v); }},
      {{"krylov-basis-format", "fp64, slfp64in56b .. slfp64in16b", "the format GMRES stores its basis in"},
       [](const SolveOptions& o) { return std::string(slfp::to_string(o.krylov_basis_format)); },
       [](SolveOptions& o, const std::string& v) { o.krylov_basis_format = slfp::parse_format(v); }},
      {{"factor-storage", "fp32, slfp32in24b, slfp32in16b, slfp64in32b, slfp64in24b, slfp64in16b",
        "the format refinement reads FP32-stored factors in"},
       [](const SolveOptions& o) { return std::string(slfp::to_string(o.factor_storage)); },
       [](SolveOptions& o, const std::string& v) { o.factor_storage = slfp::parse_format(v); }},
      {{"escalate-by-cost", "true, false", "GMRES gives way to the next rung when refactoring is predicted cheaper"},
       [](const SolveOptions& o) { return std::string(o.escalate_by_cost ? "true" : "false"); },
       [](SolveOptions& o, const std::string& v) { o.escalate_by_cost = read_switch("escalate-by-cost", v); }},
      {{"reuse-pivot-order", "true, false", "the FP64 LU follows the cheaper LU's trusted row order"},
       [](const SolveOptions& o) { return std::string(o.reuse_pivot_order ? "true" : "false"); },
       [](SolveOptions& o, const std::string& v) { o.reuse_pivot_order = read_switch("reuse-pivot-order", v); }},
      {{"probe-pivot-ratio", "0, a positive number, or inf", "the probe's screen (0: never probe, inf: always)"},
       [](const SolveOptions& o) { return number(o.probe_pivot_ratio); },
       [](SolveOptions& o, const std::string& v) { o.probe_pivot_ratio = read_number<double>("probe-pivot-ratio", v); }},
      {{"range-scaling", "true, false", "power-of-two scaling of the FP16, BF16 and fp16x3 factorizations"},
       [](const SolveOptions& o) { return std::string(o.range_scaling ? "true" : "false"); },
       [](SolveOptions& o, const std::string& v) { o.range_scaling = read_switch("range-scaling", v); }},
      {{"block-size", "integer >= 0", "the LU's block size (0: the memory space's choice)"},
       [](const SolveOptions& o) { return std::to_string(o.block_size); },
       [](SolveOptions& o, const std::string& v) { o.block_size = read_number<int>("block-size", v); }},
      {{"ozaki-bits", "integer in [16, 53]", "the bits an Ozaki factorization's emulated updates keep"},
       [](const SolveOptions& o) { return std::to_string(o.ozaki_bits); },
       [](SolveOptions& o, const std::string& v) { o.ozaki_bits = read_number<int>("ozaki-bits", v); }},
  };
  return table;
}

// The text forms of a table's fields.
template <class Options>
std::vector<OptionField> texts_of(const std::vector<Field<Options>>& table) {
  std::vector<OptionField> out;
  for (const Field<Options>& f : table) out.push_back(f.text);
  return out;
}

// Sets one field of `options` (a copy first: a refused value changes nothing), then checks the
// whole (check(where, options)); `kind` names the options in messages ("solve", "least-squares").
template <class Options, class Check>
void set_field(const std::vector<Field<Options>>& table, const char* kind, Options& options, const std::string& name,
               const std::string& value, Check check) {
  for (const Field<Options>& f : table) {
    if (f.text.name != name) continue;
    Options changed = options;
    const std::string where = std::string(kind) + " options: " + name + " = \"" + value + "\"";
    try {
      f.set(changed, value);
    } catch (const InvalidArgument& e) {  // say which options, field and value
      const std::string what = e.what();
      if (what.rfind("options: ", 0) == 0) throw InvalidArgument(std::string(kind) + " " + what);
      throw InvalidArgument(where + ": " + what);
    }
    check(where.c_str(), changed);
    options = changed;
    return;
  }
  std::string names;
  for (const Field<Options>& f : table) names += (names.empty() ? "" : ", ") + f.text.name;
  throw InvalidArgument(std::string(kind) + " options: \"" + name + "\" is not a field (" + names + ")");
}

// "name=value,..." over base, each item by set_one.
template <class Options, class SetOne>
Options parse_fields(const std::string& text, const char* kind, Options base, SetOne set_one) {
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw InvalidArgument(std::string(kind) + " options: \"" + item + "\" is not name=value");
    set_one(base, item.substr(0, eq), item.substr(eq + 1));
  }
  return base;
}

template <class Options>
std::string fields_to_string(const std::vector<Field<Options>>& table, const Options& options) {
  std::string s;
  for (const Field<Options>& f : table) s += (s.empty() ? "" : ",") + f.text.name + "=" + f.get(options);
  return s;
}

using LsRefinement = LeastSquaresOptions::Refinement;
constexpr LsRefinement kLsRefinements[] = {LsRefinement::Augmented, LsRefinement::Gmres, LsRefinement::AugmentedThenGmres,
                                           LsRefinement::Cgls};

const std::vector<Field<LeastSquaresOptions>>& least_squares_fields() {
  using O = LeastSquaresOptions;
  static const std::vector<Field<O>> table = {
      {{"precision", "fp32, fp64, auto", "LeastSquaresOptions::factorization: the QR's precision"},
       [](const O& o) { return to_string(o.factorization); },
       [](O& o, const std::string& v) { o.factorization = parse_precision(v); }},
      {{"auto-min-work", "integer >= -1", "under auto, m n^2 below which the FP64 QR solve alone runs (-1: default)"},
       [](const O& o) { return std::to_string(o.auto_min_work); },
       [](O& o, const std::string& v) { o.auto_min_work = read_number<std::int64_t>("auto-min-work", v); }},
      {{"max-iterations", "integer >= 1", "refinement steps per attempt"},
       [](const O& o) { return std::to_string(o.max_iterations); },
       [](O& o, const std::string& v) { o.max_iterations = read_number<int>("max-iterations", v); }},
      {{"fallback", "true, false", "FP64 factors where the cheaper ones' refinement does not converge"},
       [](const O& o) { return std::string(o.fallback ? "true" : "false"); },
       [](O& o, const std::string& v) { o.fallback = read_switch("fallback", v); }},
      {{"block-size", "integer >= 0", "Householder reflectors per compact-WY block (0: the memory space's choice)"},
       [](const O& o) { return std::to_string(o.block_size); },
       [](O& o, const std::string& v) { o.block_size = read_number<int>("block-size", v); }},
      {{"fp32-update", "a GEMM backend's name, or empty", "the FP32 QR's trailing updates (empty: the default)"},
       [](const O& o) { return o.fp32_update; },
       [](O& o, const std::string& v) { o.fp32_update = v; }},
      {{"fp32-vt-c-update", "a GEMM backend's name, or empty", "V^T C of the device QR's updates (empty: the default)"},
       [](const O& o) { return o.fp32_vt_c_update; },
       [](O& o, const std::string& v) { o.fp32_vt_c_update = v; }},
      {{"refinement", "augmented, gmres, augmented-then-gmres, cgls", "the refinement of the cheaper factors"},
       [](const O& o) { return to_string(o.refinement); },
       [](O& o, const std::string& v) { o.refinement = parse_least_squares_refinement(v); }},
      {{"cholesky-qr", "true, false", "FP64 factors by a Cholesky QR preconditioned with the FP32 R first"},
       [](const O& o) { return std::string(o.cholesky_qr ? "true" : "false"); },
       [](O& o, const std::string& v) { o.cholesky_qr = read_switch("cholesky-qr", v); }},
      {{"rank-deficient", "minimum-norm, full-rank", "a rank-deficient A: its minimum-norm solution, or an error"},
       [](const O& o) { return to_string(o.rank_deficient); },
       [](O& o, const std::string& v) { o.rank_deficient = parse_rank_deficiency(v); }},
      {{"rcond", "a number below 1 (negative: max(m, n) 2^-53)", "the rank threshold relative to sigma_max(A)"},
       [](const O& o) { return number(o.rcond); },
       [](O& o, const std::string& v) { o.rcond = read_number<double>("rcond", v); }},
      {{"ridge", "a number >= 0", "ridge regression's lambda: min ||b - A x||^2 + lambda ||x||^2 (0: none)"},
       [](const O& o) { return number(o.ridge); },
       [](O& o, const std::string& v) { o.ridge = read_number<double>("ridge", v); }},
  };
  return table;
}

}  // namespace

const std::vector<OptionField>& solve_option_fields() {
  static const std::vector<OptionField> text = texts_of(solve_fields());
  return text;
}

void set_solve_option(SolveOptions& options, const std::string& name, const std::string& value) {
  set_field(solve_fields(), "solve", options, name, value, solvers_detail::check_solve_options);
}

SolveOptions parse_solve_options(const std::string& text, SolveOptions base) {
  return parse_fields(text, "solve", std::move(base), set_solve_option);
}

std::string to_string(const SolveOptions& options) { return fields_to_string(solve_fields(), options); }

std::string to_string(LeastSquaresOptions::Refinement r) {
  switch (r) {
    case LsRefinement::Augmented: return "augmented";
    case LsRefinement::Gmres: return "gmres";
    case LsRefinement::AugmentedThenGmres: return "augmented-then-gmres";
    case LsRefinement::Cgls: return "cgls";
  }
  return "?";
}

LeastSquaresOptions::Refinement parse_least_squares_refinement(const std::string& text) {
  for (LsRefinement r : kLsRefinements)
    if (to_string(r) == text) return r;
  throw InvalidArgument("least-squares refinement \"" + text + "\" is not one of augmented, gmres, augmented-then-gmres, cgls");
}

std::string to_string(LeastSquaresOptions::RankDeficiency r) {
  return r == LeastSquaresOptions::RankDeficiency::FullRank ? "full-rank" : "minimum-norm";
}

LeastSquaresOptions::RankDeficiency parse_rank_deficiency(const std::string& text) {
  for (auto r : {LeastSquaresOptions::RankDeficiency::MinimumNorm, LeastSquaresOptions::RankDeficiency::FullRank})
    if (to_string(r) == text) return r;
  throw InvalidArgument("least-squares rank-deficient \"" + text + "\" is not one of minimum-norm, full-rank");
}

const std::vector<OptionField>& least_squares_option_fields() {
  static const std::vector<OptionField> text = texts_of(least_squares_fields());
  return text;
}

void set_least_squares_option(LeastSquaresOptions& options, const std::string& name, const std::string& value) {
  set_field(least_squares_fields(), "least-squares", options, name, value,
            [](const char* where, const LeastSquaresOptions& o) { solvers_detail::check_least_squares_options(where, o); });
}

LeastSquaresOptions parse_least_squares_options(const std::string& text, LeastSquaresOptions base) {
  return parse_fields(text, "least-squares", std::move(base), set_least_squares_option);
}

std::string to_string(const LeastSquaresOptions& options) { return fields_to_string(least_squares_fields(), options); }

}  // namespace mixsolve
