// SPDX-License-Identifier: BSD-3-Clause
// The GEMM backends' cases: their documented refusals, can_implement against run(), and each
// backend's error bound (FP32 roundoffs, the FP64 emulations' bounds) on C.
#include "fuzz/gemm_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include <type_traits>

#include "fuzz/arena.hpp"
#include "fuzz/generators.hpp"
#include "fuzz/rng.hpp"
#include "fuzz/settings_and_outcomes.hpp"

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/gemm/ozaki_fp32.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/ozaki_slices.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::fuzz {
namespace {

// The emulated FP64 GEMMs, which refuse NaN and Inf (README: "the emulated DGEMMs (ozaki*)").
bool refuses_nonfinite(const std::string& name) {
  return name.rfind("ozaki", 0) == 0 || name.rfind("host-ozaki", 0) == 0;
}

// FP32 backends whose formats have a narrower range than FP32, which count the entries beyond it
// under check_range and throw RangeError (backend.hpp, GemmArgs::check_range), and the magnitude
// that overflows them.
double range_limit(const std::string& name) {
  if (name == "cublas-fp16" || name == "markidis" || name == "halfhalf-unscaled") return 1e6;
  if (name == "cublas-fp16x3") return 0x1p80;
  return 0;
}

// FP32 backends whose operands keep FP32's exponent range (FP32, TF32 and BF16 roundings) or are
// scaled by powers of two row by row and column by column (README: halfhalf, tf32tf32): rows and
// columns scaled by 2^+-40 keep their relative accuracy.
bool takes_any_fp32_scale(const std::string& name) {
  for (const char* n : {"host-fp32", "cublas-sgemm", "cublas-tf32", "cublas-bf16", "halfhalf", "tf32tf32",
                        "tf32tf32-packed", "halfhalf-mma-sync", "tf32tf32-mma-sync"})
    if (name == n) return true;
  return name.rfind("model-tf32", 0) == 0 || name.rfind("model-bf16-", 0) == 0;
}

// (input representation, accumulation) unit roundoffs of an FP32 backend; the bound of an inner
// product of length k is then 2 u_in + u_in^2 + (k + 2) u_acc (gemm_test_support.hpp's
// inner_product_bound). Host: test_host_backends.cpp's table; device: test_gpu_backends.cpp's
// (tensor cores accumulate with RZ: 2^-23).
std::pair<double, double> fp32_roundoffs(const std::string& name) {
  if (name == "host-fp32" || name == "cublas-sgemm") return {0, 0x1p-24};
  if (name.rfind("model-fp16-", 0) == 0 || name.rfind("model-tf32-", 0) == 0) return {0x1p-11, 0x1p-23};
  if (name == "cublas-tf32" || name == "cublas-fp16") return {0x1p-11, 0x1p-23};
  if (name.rfind("model-bf16-", 0) == 0 || name == "cublas-bf16") return {0x1p-8, 0x1p-23};
  // hi + lo keeps 22 bits (README: "~22 bits").
  if (name == "cublas-fp16x3" || name.rfind("model-fp16x3-", 0) == 0) return {0x1p-22, 0x1p-23};
  if (name == "slfp-32in24b") return {0x1p-16, 0x1p-24};
  if (name == "slfp-32in16b") return {0x1p-8, 0x1p-24};
  return {0x1p-23, 0x1p-23};  // halfhalf, tf32tf32, markidis: one bit of 24 lost by the split
}

// The error bound of entry (i, j) of an FP64 backend's product, from the quantities of its row of
// op(A) and column of op(B): mag = |alpha| sum |a||b| + |beta c|, the 2-norms and largest |entries|.
struct EntryScale {
  long double mag = 0, norm_a = 0, norm_b = 0, max_a = 0, max_b = 0, alpha = 0;
  long double sum_a = 0, sum_b = 0;  // sum_l |a_il|, sum_l |b_lj|
};

long double fp64_bound(const std::string& name, const gemm::Parameters& params, std::int64_t k, const EntryScale& e) {
  const auto param = [&](const char* key, std::int64_t fallback) {
    const auto it = params.find(key);
    return it == params.end() ? fallback : it->second;
  };
  const long double u = kU64, kk = (long double)k;
  const long double dgemm = (kk + 4) * u * e.mag;  // (k + 2) u, and the roundings of alpha and beta
  // Ozaki scheme II: each row and column on a grid of 2^-bits of its 2-norm, so |error| <= 1.5
  // 2^-bits sqrt(k) ||a_i|| ||b_j|| (ozaki_int8.hpp), plus the CRT's and alpha/beta's roundings.
  const auto ozaki2 = [&](std::int64_t bits_param, std::int64_t moduli_param) {
    const int moduli =
        moduli_param > 0 ? int(moduli_param)
                         : gemm::ozaki2_moduli_for_bits(int(bits_param > 0 ? bits_param : gemm::kOzaki2DefaultBits), k);
    const int bits = gemm::ozaki2_operand_bits(moduli, k);
    return 2.0L * std::ldexp(1.0L, -bits) * std::sqrt(kk) * e.alpha * e.norm_a * e.norm_b + 4 * u * e.mag;
  };
  if (name == "host-fp64" || name == "cublas-dgemm") return dgemm;
  if (name.rfind("slfp-64in", 0) == 0) {  // operands rounded (RN) to the format first
    const int container = std::stoi(name.substr(9));
    const long double u_in = std::ldexp(1.0L, -(container - 11));
    return (2 * u_in + u_in * u_in) * e.mag + dgemm;
  }
  if (name == "host-ozaki2-int8" || name == "ozaki2-int8") return ozaki2(param("bits", 0), param("moduli", 0));
  if (name == "dgemm-auto") return std::max(dgemm, ozaki2(param("bits", 0), 0));
  if (name.find("ozaki-fp32") != std::string::npos) {
    // s splits of alpha = floor((24 - ceil(log2 k)) / 2) bits each leave a remainder below
    // 2^-((s - 1) alpha) of the vector's largest |entry| (ozaki_fp32.hpp); the products that carry
    // it are FP32 GEMMs with (k + 2) 2^-24 relative rounding, s + 1 of them.
    const int s = int(param("splits", gemm::kOzakiFp32MaxSplits));
    const int alpha_bits = (24 - int(std::ceil(std::log2(std::max(2.0L, kk))))) / 2;
    const long double split =
        (s + 1) * (kk + 2) * kk * std::ldexp(1.0L, -(24 + (s - 1) * alpha_bits)) * e.alpha * e.max_a * e.max_b +
        4 * dgemm;
    if (name == "ozaki-fp32") return split;
    // The corrected products (halfhalf, tf32tf32) are held to their own FP32 bound, each of the
    // s + 1 of them: on the GPU fuzz's inputs (k = 1, entries over many binades) they missed the
    // bound above, which assumes error-free slice products (H200, 2026-12-01; docs/ozaki.md), and
    // halfhalf keeps each slice in FP16, which loses entries far below its operand's largest.
    return split + (s + 1) * ((kk + 2) * 0x1p-23L * e.mag + kk * 0x1p-38L * e.alpha * e.max_a * e.max_b);
  }
  if (name.find("ozaki-bf16") != std::string::npos || name.find("ozaki-fp16") != std::string::npos) {
    // Slices of b bits each (ozaki_slices.hpp): after `count` of them the remainder is below
    // 2^(1 - count b) of the vector's largest |entry|; fast mode drops the pairs p + q >= d, whose
    // products are below k 2^(2 - d b) max|a| max|b| each, count + 1 of them at most per level.
    const int sig = name.find("bf16") != std::string::npos ? 8 : 11;
    const int bits = gemm::ozaki_slice_bits(sig, k);
    const std::int64_t asked = param("slices", 0), d = param("d", 0);
    const int count = asked > 0 ? int(asked) : std::min(gemm::kOzakiMaxSlices, (53 + bits - 1) / bits + 1);
    long double tail = 4 * std::ldexp(1.0L, 1 - count * bits);
    if (d > 0) tail += 4 * (count + 1) * std::ldexp(1.0L, int(2 - d * bits));
    return tail * kk * e.alpha * e.max_a * e.max_b + (count * count + 4) * dgemm;
  }
  if (name == "cublas-dgemm-emulated") {  // cuBLAS's own emulation: a grid of 2^-bits of the largest |entries|
    const std::int64_t bits = param("mantissa_bits", 0);
    const long double grid = std::ldexp(1.0L, -int(bits > 0 ? std::min<std::int64_t>(bits, 53) : 40));
    return 4 * kk * grid * e.alpha * e.max_a * e.max_b + 4 * dgemm;
  }
  return INFINITY;  // unknown backend: caught by the test's expectation on known names
}

template <class T>
struct GemmCase {
  const gemm::Backend* backend = nullptr;
  bool wrong_type = false;
  gemm::Op op_a = gemm::Op::N, op_b = gemm::Op::N;
  std::int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
  T alpha = 1, beta = 0;
  bool null_a = false, null_b = false, null_c = false, problem_form = false, check_range = true;
  bool host_pointers = false;  // a device backend given host memory (GPU runs)
  gemm::Parameters params;
  std::size_t a_offset = 0, b_offset = 0, c_offset = 0;
  std::int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;
  Expected expected;
  std::string text() const {
    std::ostringstream t;
    t << "gemm " << backend->name() << (wrong_type ? " (other data type)" : "") << " " << gemm::to_string(op_a)
      << gemm::to_string(op_b) << " m " << m << " n " << n << " k " << k << " lda " << lda << " ldb " << ldb << " ldc "
      << ldc << " alpha " << double(alpha) << " beta " << double(beta) << (null_a ? " A null" : "")
      << (null_b ? " B null" : "") << (null_c ? " C null" : "") << (problem_form ? " Problem form" : " GemmArgs")
      << (check_range ? "" : " no range check") << (host_pointers ? " host pointers" : "");
    for (const auto& [key, v] : params) t << " " << key << "=" << v;
    return t.str();
  }
};

std::int64_t pick_gemm_size(Rng& rng) {
  const double u = rng.uniform();
  if (u < 0.07) return 0;
  if (u < 0.17) return 1;
  if (u < 0.3) return rng.range(2, 4);
  if (u < 0.92) return rng.range(5, 40);
  if (u < 0.985) return rng.range(41, 130);
  return -rng.range(1, 3);
}

// Random parameters from the backend's specs: defaults, values in range, out of range, or a name
// it does not declare; the faults they make go to e.must.
gemm::Parameters random_parameters(Rng& rng, const gemm::Backend& b, Expected& e) {
  // (The ozaki2 backends' refusals of values inside the specs' ranges: ozaki2_refusals.)
  gemm::Parameters p;
  const std::vector<gemm::ParameterSpec> specs = b.parameters();
  const double u = rng.uniform();
  if (specs.empty() || u > 0.93) {
    if (rng.chance(specs.empty() ? 0.04 : 1.0)) {
      p["no-such-parameter"] = 1;
      e.must.push_back({Kind::NotSupported, {"'no-such-parameter'"}});
    }
    return p;
  }
  if (u < 0.45) return p;
  const gemm::ParameterSpec& spec = rng.pick(specs);
  if (u < 0.83) {
    // In range; the ozaki2 backends' moduli refuses 1 (one modulus keeps no bits).
    std::int64_t v = rng.range(spec.min, std::min(spec.max, spec.min + 24));
    if (spec.name == "panel") v = rng.pick<std::int64_t>({0, 16, 32, 48});
    if (spec.name == "mantissa_bits") v = rng.pick<std::int64_t>({0, 30, 53, 64});
    p[spec.name] = v;
    if ((b.name() == "ozaki2-int8" || b.name() == "host-ozaki2-int8") && rng.chance(0.1))
      p["moduli"] = rng.range(2, 20), p["bits"] = rng.range(1, 64);
    return p;
  }
  const std::int64_t v = rng.chance(0.5) ? spec.max + rng.range(1, 3) : spec.min - rng.range(1, 3);
  p[spec.name] = v;
  e.must.push_back({Kind::InvalidArgument, {spec.name + " (" + std::to_string(v) + ") outside"}});
  return p;
}

// ozaki2-int8's parameters that lie in their specs' ranges but are refused where a product is
// computed (README: refused by name): one modulus keeps no bits; moduli and bits both set.
void ozaki2_refusals(const std::string& name, const gemm::Parameters& p, Expected& e) {
  if (name != "ozaki2-int8" && name != "host-ozaki2-int8") return;
  const auto moduli = p.find("moduli"), bits = p.find("bits");
  if (moduli != p.end() && moduli->second == 1) e.must.push_back({Kind::InvalidArgument, {"moduli (1)"}});
  if (moduli != p.end() && bits != p.end() && moduli->second != 0 && bits->second != 0)
    e.must.push_back({Kind::InvalidArgument, {"both set"}});
}

// Entries of A and B: +-[1/64, 1] (inside every format's normal range), rows and columns scaled by
// 2^+-30 for FP64 backends (the emulations scale each vector) and 2^+-40 for the FP32 ones that
// take any FP32 exponent (takes_any_fp32_scale); a few exact zeros.
template <class T>
T gemm_value(Rng& rng, int exponent) {
  if (rng.chance(0.04)) return T(0);
  const double v = (rng.chance(0.5) ? -1 : 1) * rng.uniform(1.0 / 64, 1.0);
  return T(std::ldexp(v, exponent));
}

template <class T>
void run_gemm_case_typed(FuzzRun& run, Context& ctx, bool device_run, const gemm::Backend& backend, bool wrong_type,
                         Rng& rng, std::int64_t index) {
  using gemm::Op;
  GemmCase<T> c;
  c.backend = &backend;
  c.wrong_type = wrong_type;
  const std::string name = backend.name();
  const bool device_backend = backend.memory() == Memory::Device;
  c.op_a = rng.chance(0.5) ? Op::N : Op::T;
  c.op_b = rng.chance(0.5) ? Op::N : Op::T;
  c.m = pick_gemm_size(rng), c.n = pick_gemm_size(rng), c.k = pick_gemm_size(rng);
  c.alpha = T(rng.pick<double>({1, 1, -1, 0.5, -1.5, 0.0, rng.uniform(-2, 2), 0x1p-10}));
  c.beta = T(rng.chance(0.4) ? 0.0 : rng.pick<double>({1, -0.75, 0.5, rng.uniform(-2, 2)}));
  c.a_rows = c.op_a == Op::N ? c.m : c.k, c.a_cols = c.op_a == Op::N ? c.k : c.m;
  c.b_rows = c.op_b == Op::N ? c.k : c.n, c.b_cols = c.op_b == Op::N ? c.n : c.k;
  bool bad_a = false, bad_b = false, bad_c = false;
  c.lda = pick_ld(rng, c.a_rows, 0.03, bad_a);
  c.ldb = pick_ld(rng, c.b_rows, 0.03, bad_b);
  c.ldc = pick_ld(rng, c.m, 0.03, bad_c);
  c.null_a = rng.chance(0.03), c.null_b = rng.chance(0.03), c.null_c = rng.chance(0.02);
  c.problem_form = rng.chance(0.5);
  c.check_range = rng.chance(0.85);
  c.host_pointers = device_run && device_backend && rng.chance(0.05);
  if (c.problem_form) c.params = random_parameters(rng, backend, c.expected);
  // The documented refusals (backend.hpp's shared semantics, in any order).
  std::vector<Fault>& must = c.expected.must;
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  if (wrong_type) must.push_back({Kind::NotSupported, {name, "data"}});
  if (c.m < 0) must.push_back({Kind::InvalidArgument, {"m (" + s(c.m) + ") < 0"}});
  if (c.n < 0) must.push_back({Kind::InvalidArgument, {"n (" + s(c.n) + ") < 0"}});
  if (c.k < 0) must.push_back({Kind::InvalidArgument, {"k (" + s(c.k) + ") < 0"}});
  if (c.lda < std::max<std::int64_t>(1, c.a_rows)) must.push_back({Kind::InvalidArgument, {"lda (" + s(c.lda) + ")"}});
  if (c.ldb < std::max<std::int64_t>(1, c.b_rows)) must.push_back({Kind::InvalidArgument, {"ldb (" + s(c.ldb) + ")"}});
  if (c.ldc < std::max<std::int64_t>(1, c.m)) must.push_back({Kind::InvalidArgument, {"ldc (" + s(c.ldc) + ")"}});
  const std::string unavailable = backend.unavailable_reason(ctx);
  if (!unavailable.empty()) must.push_back({Kind::NotSupported, {unavailable}});
  const bool nonempty = c.m > 0 && c.n > 0;
  const bool reads = nonempty && c.k > 0 && c.alpha != T(0);
  if (nonempty && c.null_c) must.push_back({Kind::InvalidArgument, {"C is null"}});
  if (reads && c.null_a) must.push_back({Kind::InvalidArgument, {"A is null"}});
  if (reads && c.null_b) must.push_back({Kind::InvalidArgument, {"B is null"}});
  const bool well_formed = must.empty();  // parameters aside
  if (c.host_pointers && nonempty) must.push_back({Kind::InvalidArgument, {"device memory"}});

  // Layout: A, B, C in one arena of T, in device memory for device backends on a GPU.
  const auto storage = [](std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    return std::size_t(std::max<std::int64_t>({ld, rows, 1}) * std::max<std::int64_t>(cols, 1));
  };
  c.a_offset = std::size_t(rng.range(0, 3));
  c.b_offset = c.a_offset + storage(c.a_rows, c.a_cols, c.lda) + std::size_t(rng.range(0, 3));
  c.c_offset = c.b_offset + storage(c.b_rows, c.b_cols, c.ldb) + std::size_t(rng.range(0, 3));
  const std::size_t size = c.c_offset + storage(c.m, c.n, c.ldc) + 4;
  const Memory memory = device_run && device_backend && !c.host_pointers ? Memory::Device : Memory::Host;
  Arena<T> arena(memory, size);
  // Values. The rows of op(A) and columns of op(B) get their own binary scale for FP64 backends.
  const bool fp64 = std::is_same_v<T, double>;
  std::vector<int> a_exp(std::size_t(std::max<std::int64_t>(c.m, 0)) + 1, 0),
      b_exp(std::size_t(std::max<std::int64_t>(c.n, 0)) + 1, 0);
  if ((fp64 || takes_any_fp32_scale(name)) && rng.chance(0.5)) {
    const int spread = fp64 ? 30 : 40;
    for (int& e : a_exp) e = int(rng.range(-spread, spread));
    for (int& e : b_exp) e = int(rng.range(-spread, spread));
  }
  const ViewPlan av{c.a_rows, c.a_cols, c.lda, c.a_offset}, bv{c.b_rows, c.b_cols, c.ldb, c.b_offset},
      cv{c.m, c.n, c.ldc, c.c_offset};
  av.for_each([&](std::int64_t i, std::int64_t j, std::size_t o) {
    arena.at(o) = gemm_value<T>(rng, a_exp[std::size_t(c.op_a == Op::N ? i : j)]);
  });
  bv.for_each([&](std::int64_t i, std::int64_t j, std::size_t o) {
    arena.at(o) = gemm_value<T>(rng, b_exp[std::size_t(c.op_b == Op::N ? j : i)]);
  });
  // beta == 0: C stays poisoned (NaN), which must not reach the result.
  if (c.beta != T(0))
    cv.for_each([&](std::int64_t, std::int64_t, std::size_t o) { arena.at(o) = T(rng.uniform(-1, 1)); });
  // NaN / Inf in A or B (rows of op(A) / columns of op(B) they poison), and entries beyond a
  // narrow format's range.
  std::vector<char> bad_row(std::size_t(std::max<std::int64_t>(c.m, 0)) + 1, 0),
      bad_col(std::size_t(std::max<std::int64_t>(c.n, 0)) + 1, 0);
  bool any_nonfinite = false, any_huge = false;
  for (const auto& [v, is_a] : {std::pair<const ViewPlan*, bool>{&av, true}, {&bv, false}}) {
    for (const auto& [i, j] : pick_positions(rng, *v, refuses_nonfinite(name) ? 0.15 : 0.05)) {
      arena.at(v->offset + std::size_t(i + j * v->ld)) = T(nonfinite(rng));
      any_nonfinite = true;
      if (is_a)
        bad_row[std::size_t(c.op_a == Op::N ? i : j)] = 1;
      else
        bad_col[std::size_t(c.op_b == Op::N ? j : i)] = 1;
    }
    const double limit = range_limit(name);
    if (limit > 0 && v->has_elements() && rng.chance(0.08)) {
      const std::int64_t i = rng.range(0, v->rows - 1), j = rng.range(0, v->cols - 1);
      arena.at(v->offset + std::size_t(i + j * v->ld)) = T(2 * limit);
      any_huge = true;
      if (is_a)
        bad_row[std::size_t(c.op_a == Op::N ? i : j)] = 1;
      else
        bad_col[std::size_t(c.op_b == Op::N ? j : i)] = 1;
    }
  }
  if (well_formed && reads && !wrong_type) {
    ozaki2_refusals(name, c.params, c.expected);
    if (any_nonfinite && refuses_nonfinite(name)) must.push_back({Kind::RangeError, {"NaN or Inf"}});
    if (any_huge && c.check_range) must.push_back({Kind::RangeError, {"overflow"}});
  }
  arena.upload();
  const Snapshot<T> before(arena);
  run.begin(index, c.text());

  // The call, in the typed or the Problem form; can_implement first (it reads no data).
  const auto ptr = [&](bool null, std::size_t offset) { return null ? nullptr : arena.pointer(offset); };
  gemm::GemmArgs<T> args{c.op_a,
                         c.op_b,
                         c.m,
                         c.n,
                         c.k,
                         c.alpha,
                         ptr(c.null_a, c.a_offset),
                         c.lda,
                         ptr(c.null_b, c.b_offset),
                         c.ldb,
                         c.beta,
                         ptr(c.null_c, c.c_offset),
                         c.ldc,
                         c.check_range};
  const gemm::Problem problem = gemm::to_problem(args);
  const gemm::Execution execution{c.check_range};
  gemm::Support support;
  const Outcome asked = capture([&] {
    support =
        c.problem_form ? backend.can_implement(ctx, problem, c.params, execution) : backend.can_implement(ctx, args);
  });
  const std::size_t capacity_before = ctx.has_device() ? ctx.workspace_capacity() : 0;
  const Outcome o = capture([&] {
    if (c.problem_form)
      backend.run(ctx, problem, c.params, execution);
    else
      backend.run(ctx, args);
    if (ctx.has_device()) ctx.synchronize();
  });
  arena.download();
  if (asked.kind != Kind::Result)
    run.fail("can_implement threw " + std::string(to_string(asked.kind)) + ": " + asked.message);
  if (const std::string why = judge(o, c.expected); !why.empty()) run.fail(why);
  // can_implement answers what run() does: Ok where it accepts (a RangeError comes from the data,
  // and device backends' host pointers are checked by run() alone), else the same refusal.
  if (!support) {
    const Kind kind =
        support.status == gemm::Support::Status::InvalidArgument ? Kind::InvalidArgument : Kind::NotSupported;
    run.expect(
        o.kind == kind && o.message.find(support.reason) != std::string::npos,
        "can_implement refused (" + support.reason + ") but run() ended in " + to_string(o.kind) + ": " + o.message);
  } else if (!(c.host_pointers && nonempty)) {
    run.expect(o.kind == Kind::Result || o.kind == Kind::RangeError,
               "can_implement said Ok but run() threw " + std::string(to_string(o.kind)) + ": " + o.message);
  }
  if (!device_backend)
    run.expect(backend.workspace_bytes(gemm::GemmShape{c.op_a, c.op_b, c.m, c.n, c.k}) == 0,
               "a host backend states a device workspace");
  if (device_backend && ctx.has_device() && o.kind == Kind::Result && nonempty && c.k >= 0 && c.params.empty()) {
    // Scratch memory comes from ctx.workspace(), which grows (in 1 MiB steps) only to what the
    // call states it takes.
    const std::size_t stated = backend.workspace_bytes(gemm::GemmShape{c.op_a, c.op_b, c.m, c.n, c.k});
    const std::size_t mib = std::size_t(1) << 20, rounded = (stated + mib - 1) / mib * mib;
    run.expect(ctx.workspace_capacity() <= std::max(capacity_before, rounded),
               "the workspace grew to " + std::to_string(ctx.workspace_capacity()) + " bytes, beyond the " +
                   std::to_string(stated) + " workspace_bytes states");
  }
  // What was written: C's elements only, and only where m, n > 0.
  Mask writable(arena.size());
  if (o.kind == Kind::Result && nonempty) writable.add(cv);
  if (o.kind != Kind::Result) writable.add(cv);  // an error may leave C partly written (RangeError)
  const std::string changed = before.changes(arena, writable, [&](std::size_t q) {
    return std::string(q >= c.c_offset   ? "in C's storage (outside its m x n elements)"
                       : q >= c.b_offset ? "in B"
                                         : "in A") +
           " at offset " + std::to_string(q);
  });
  if (!changed.empty()) run.fail(changed);
  if (o.kind == Kind::Result && nonempty && !c.null_c) {
    // Check C against a long double evaluation of the product.
    const auto a_op = [&](std::int64_t i, std::int64_t l) -> long double {
      return before.at(c.a_offset + std::size_t(c.op_a == Op::N ? i + l * c.lda : l + i * c.lda));
    };
    const auto b_op = [&](std::int64_t l, std::int64_t j) -> long double {
      return before.at(c.b_offset + std::size_t(c.op_b == Op::N ? l + j * c.ldb : j + l * c.ldb));
    };
    std::string problem_text;
    for (std::int64_t j = 0; j < c.n && problem_text.empty(); ++j)
      for (std::int64_t i = 0; i < c.m && problem_text.empty(); ++i) {
        const T got = arena.at(c.c_offset + std::size_t(i + j * c.ldc));
        const T c0 = before.at(c.c_offset + std::size_t(i + j * c.ldc));
        const std::string at =
            "C(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(double(got));
        if (!reads) {  // k == 0 or alpha == 0: C = beta C, A and B unread
          const T expected = c.beta == T(0) ? T(0) : T(c.beta * c0);
          if (!(got == expected)) problem_text = at + ", not beta C = " + std::to_string(double(expected));
          continue;
        }
        if (bad_row[std::size_t(i)] || bad_col[std::size_t(j)]) {  // NaN / Inf reach the entries they touch
          if (std::isfinite(got)) problem_text = at + " is finite, but its row of op(A) or column of op(B) is not";
          continue;
        }
        EntryScale e;
        long double ref = 0;
        e.alpha = std::fabs((long double)c.alpha);
        for (std::int64_t l = 0; l < c.k; ++l) {
          const long double x = a_op(i, l), y = b_op(l, j);
          ref += x * y;
          e.mag += std::fabs(x * y);
          e.norm_a += x * x, e.norm_b += y * y;
          e.max_a = std::max(e.max_a, std::fabs(x)), e.max_b = std::max(e.max_b, std::fabs(y));
          e.sum_a += std::fabs(x), e.sum_b += std::fabs(y);
        }
        e.norm_a = std::sqrt(e.norm_a), e.norm_b = std::sqrt(e.norm_b);
        ref *= (long double)c.alpha;
        e.mag *= e.alpha;
        if (c.beta != T(0)) ref += (long double)c.beta * c0, e.mag += std::fabs((long double)c.beta * c0);
        long double bound;
        if (std::is_same_v<T, float>) {
          const auto [u_in, u_acc] = fp32_roundoffs(name);
          bound = (2 * u_in + u_in * u_in + (c.k + 2) * u_acc + 2 * 0x1p-24) * e.mag;
          // Markidis's split leaves lo unscaled: below 2^-3 it keeps an absolute 2^-25 only (README,
          // cublas-fp16x3), so |a - hi - lo| <= 2^-25 for these entries of magnitude <= 1.
          if (name.find("markidis") != std::string::npos || name.find("fp16x3") != std::string::npos)
            bound += 0x1p-24L * e.alpha * (e.sum_a + e.sum_b);
        } else {
          bound = fp64_bound(name, c.params, c.k, e);
        }
        if (!std::isfinite(got)) {
          problem_text = at + " is not finite (reference " + std::to_string(double(ref)) + ")";
          continue;
        }
        const long double err = std::fabs((long double)got - ref);
        if (err > bound)
          problem_text = at + ": error " + std::to_string(double(err)) + " > bound " + std::to_string(double(bound)) +
                         " (reference " + std::to_string(double(ref)) + ")";
        if (bound > 0)
          run.observe(std::is_same_v<T, float>                          ? "FP32 GEMM"
                      : refuses_nonfinite(name) || name == "dgemm-auto" ? "emulated FP64 GEMM"
                                                                        : "FP64 GEMM",
                      double(err / bound));
      }
    if (!problem_text.empty()) run.fail(problem_text);
  }
  run.end(to_string(o.kind));
}

// Backend::pack_b: a backend that packs no operands refuses by name; cublas-fp16x3 names each bad
// argument (backend.hpp) and, where it runs, packs without touching B.
void run_pack_case(FuzzRun& run, Context& ctx, bool device_run, const gemm::Backend& backend, Rng& rng,
                   std::int64_t index) {
  const std::int64_t k = pick_gemm_size(rng), n = pick_gemm_size(rng);
  bool bad = false;
  const std::int64_t ldb = pick_ld(rng, k, 0.05, bad);
  gemm::PackedB into;
  into.packer = rng.chance(0.92) ? &backend : &gemm::find_backend("host-fp64");
  into.block = rng.chance(0.05) ? rng.range(-1, 0) : rng.range(1, 64);
  into.first_block = rng.chance(0.05) ? -1 : rng.range(0, 2);
  into.abs_bound = rng.chance(0.06) ? rng.pick<double>({0.0, -1.0, double(NAN), double(INFINITY)}) : 1.0;
  const bool packs = backend.packed_b_column_bytes(1, 1) > 0;
  const std::int64_t least = packs && into.block > 0 && into.first_block >= 0 && k >= 0
                                 ? backend.packed_b_column_bytes(into.first_block * into.block + k, into.block)
                                 : 0;
  into.ld_bytes = rng.chance(0.05) && least > 0 ? least - 2 : least + 2 * rng.range(0, 8);
  const bool null_b = rng.chance(0.03), null_storage = rng.chance(0.03);
  Expected e;
  std::vector<Fault>& must = e.must;
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  if (!packs) {
    must.push_back({Kind::NotSupported, {"does not pack"}});
  } else {
    if (k < 0 || n < 0) must.push_back({Kind::InvalidArgument, {"must be >= 0"}});
    if (into.packer != &backend) must.push_back({Kind::InvalidArgument, {"the storage is for"}});
    if (into.block <= 0 || into.first_block < 0) must.push_back({Kind::InvalidArgument, {"block ("}});
    if (!(into.abs_bound > 0) || !std::isfinite(into.abs_bound)) must.push_back({Kind::InvalidArgument, {"abs_bound"}});
    if (k > 0 && n > 0) {
      if (ldb < k) must.push_back({Kind::InvalidArgument, {"ldb (" + s(ldb) + ")"}});
      if (null_b) must.push_back({Kind::InvalidArgument, {"b is null"}});
      if (null_storage) must.push_back({Kind::InvalidArgument, {"storage is null"}});
      if (into.ld_bytes < least) must.push_back({Kind::InvalidArgument, {"ld_bytes (" + s(into.ld_bytes) + ")"}});
      if (const std::string why = backend.unavailable_reason(ctx); !why.empty())
        must.push_back({Kind::NotSupported, {why}});
    }
  }
  const Memory memory = device_run && backend.memory() == Memory::Device ? Memory::Device : Memory::Host;
  const ViewPlan bv{k, n, ldb, 0};
  Arena<float> source(memory, bv.storage() + 4);
  bv.for_each([&](std::int64_t, std::int64_t, std::size_t o) { source.at(o) = gemm_value<float>(rng, 0); });
  Arena<std::uint8_t> storage(memory,
                              std::size_t(std::max<std::int64_t>(n, 1) * std::max<std::int64_t>(into.ld_bytes, 1)) +
                                  std::size_t(std::max<std::int64_t>(into.first_block, 0) + 1) * 256);
  into.data = null_storage ? nullptr : storage.pointer(0);
  source.upload();
  storage.upload();
  const Snapshot<float> before(source);
  std::ostringstream t;
  t << "pack_b " << backend.name() << " k " << k << " n " << n << " ldb " << ldb << " block " << into.block
    << " first_block " << into.first_block << " abs_bound " << into.abs_bound << " ld_bytes " << into.ld_bytes
    << (into.packer != &backend ? " other packer" : "") << (null_b ? " b null" : "")
    << (null_storage ? " storage null" : "");
  run.begin(index, t.str());
  const Outcome o = capture([&] {
    backend.pack_b(ctx, k, n,
                   gemm::Operand::dense(gemm::Format::F32, gemm::Op::N, null_b ? nullptr : source.pointer(0), ldb),
                   into);
    if (ctx.has_device()) ctx.synchronize();
  });
  source.download();
  if (const std::string why = judge(o, e); !why.empty()) run.fail(why);
  const std::string changed =
      before.changes(source, Mask(source.size()), [](std::size_t q) { return "B, at " + std::to_string(q); });
  if (!changed.empty()) run.fail("pack_b modified its operand: " + changed);
  run.end(to_string(o.kind));
}

}  // namespace

void run_gemm_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index) {
  Rng rng(run.seed(index));
  const std::vector<const gemm::Backend*>& all = gemm::all_backends();
  std::vector<const gemm::Backend*> here, elsewhere;
  for (const gemm::Backend* b : all) (b->unavailable_reason(ctx).empty() ? here : elsewhere).push_back(b);
  // GPU runs favour the device backends, host runs the host ones (the device ones are refused).
  std::vector<const gemm::Backend*> preferred;
  for (const gemm::Backend* b : here)
    if (!device_run || b->memory() == Memory::Device) preferred.push_back(b);
  const double u = rng.uniform();
  const gemm::Backend* backend =
      u < 0.85 || elsewhere.empty()
          ? (u < 0.7 || here.size() == preferred.size() ? rng.pick(preferred) : rng.pick(here))
          : rng.pick(elsewhere);
  if (rng.chance(0.04)) {  // pack_b: mostly the backend that packs
    const gemm::Backend* packer = nullptr;
    for (const gemm::Backend* b : all)
      if (b->packed_b_column_bytes(1, 1) > 0) packer = b;
    return run_pack_case(run, ctx, device_run, packer && rng.chance(0.7) ? *packer : *backend, rng, index);
  }
  const bool wrong_type = rng.chance(0.03);
  const bool fp64 = (backend->data_type() == gemm::DataType::F64) != wrong_type;
  if (fp64)
    run_gemm_case_typed<double>(run, ctx, device_run, *backend, wrong_type, rng, index);
  else
    run_gemm_case_typed<float>(run, ctx, device_run, *backend, wrong_type, rng, index);
}

}  // namespace mixsolve::fuzz
