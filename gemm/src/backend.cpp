// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/gemm/backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "mixsolve/core/error.hpp"
#include "mixsolve/core/gpu.hpp"
#include "scale.hpp"

namespace mixsolve::gemm {

namespace {

std::string where(const Backend& b) { return "gemm(" + b.name() + ")"; }

// Throws unless `p` is usable in memory space `mem` (device backends reject host pointers).
void check_pointer_space(const Backend& b, const char* name, const void* p, Memory mem) {
  if (mem != Memory::Device || p == nullptr) return;
  if (memory_of(p) != Memory::Device)
    throw InvalidArgument(where(b) + ": " + name +
                          " must point to device memory (this backend runs on the GPU); got a host pointer");
}

}  // namespace

const char* to_string(Format f) {
  switch (f) {
    case Format::F64: return "FP64";
    case Format::F32: return "FP32";
    case Format::F16: return "FP16";
    case Format::BF16: return "BF16";
    case Format::Packed: return "packed";
  }
  return "?";
}

Support Backend::check_formats(const Problem& problem, const Execution&) const {
  const Format own = data_type() == DataType::F32 ? Format::F32 : Format::F64;
  const Format other = own == Format::F32 ? Format::F64 : Format::F32;
  if (problem.a.format == own && problem.b.format == own && problem.c.format == own) return {};
  if (problem.a.format == other && problem.b.format == other && problem.c.format == other)
    return {Support::Status::WrongDataType, own == Format::F32 ? "takes FP32 data; FP64 arguments were given"
                                                               : "takes FP64 data; FP32 arguments were given"};
  const auto refused = [&](const char* operand, Format f) {
    return Support{Support::Status::UnsupportedFormat, std::string(operand) + " is " + to_string(f) +
                                                           "; this backend takes A, B and C in " + to_string(own)};
  };
  if (problem.a.format != own) return refused("A", problem.a.format);
  if (problem.b.format != own) return refused("B", problem.b.format);
  return refused("C", problem.c.format);
}

Support Backend::check_parameters(const Parameters& parameters) const {
  if (parameters.empty()) return {};
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  const std::vector<ParameterSpec> specs = this->parameters();
  for (const auto& [name, value] : parameters) {
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParameterSpec& x) { return x.name == name; });
    if (spec == specs.end()) {
      std::string known;
      for (const ParameterSpec& x : specs) known += (known.empty() ? "" : ", ") + x.name;
      return {Support::Status::UnsupportedParameter,
              "parameter '" + name + "' is not one of this backend's (" + (known.empty() ? "none" : known) + ")"};
    }
    if (value < spec->min || value > spec->max)
      return {Support::Status::InvalidArgument,
              "parameter " + name + " (" + s(value) + ") outside [" + s(spec->min) + ", " + s(spec->max) + "]"};
  }
  return {};
}

Support Backend::check(const Context& ctx, const Problem& p, const Parameters& parameters,
                       const Execution& execution) const {
  using Status = Support::Status;
  const auto invalid = [](std::string reason) { return Support{Status::InvalidArgument, std::move(reason)}; };
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  if (Support formats = check_formats(p, execution); !formats) return formats;
  if (Support given = check_parameters(parameters); !given) return given;
  if (p.m < 0) return invalid("m (" + s(p.m) + ") < 0");
  if (p.n < 0) return invalid("n (" + s(p.n) + ") < 0");
  if (p.k < 0) return invalid("k (" + s(p.k) + ") < 0");
  const std::int64_t a_rows = p.a.op == Op::N ? p.m : p.k;
  const std::int64_t b_rows = p.b.op == Op::N ? p.k : p.n;
  const auto at_least_one = [](std::int64_t v) { return v > 1 ? v : std::int64_t{1}; };
  const bool packed_b = p.b.format == Format::Packed;
  if (p.a.format == Format::Packed) return {Status::UnsupportedFormat, "A is packed; only B operands are packed"};
  if (p.a.ld < at_least_one(a_rows))
    return invalid("lda (" + s(p.a.ld) + ") < rows of A as stored (" + s(a_rows) + ", op_a = " + to_string(p.a.op) +
                   ")");
  if (!packed_b && p.b.ld < at_least_one(b_rows))
    return invalid("ldb (" + s(p.b.ld) + ") < rows of B as stored (" + s(b_rows) + ", op_b = " + to_string(p.b.op) +
                   ")");
  if (p.c.ld < at_least_one(p.m)) return invalid("ldc (" + s(p.c.ld) + ") < m (" + s(p.m) + ")");
  if (std::string unavailable = unavailable_reason(ctx); !unavailable.empty())
    return {Status::Unavailable, std::move(unavailable)};
  if (p.m == 0 || p.n == 0) return {};
  if (p.c.data == nullptr) return invalid("C is null with m = " + s(p.m) + ", n = " + s(p.n));
  if (p.k == 0 || p.alpha == 0) return {};
  if (p.a.data == nullptr) return invalid("A is null with m = " + s(p.m) + ", k = " + s(p.k));
  if (packed_b) {
    const PackedB& b = p.b.packed;
    if (b.packer != this)
      return {Status::UnsupportedFormat, "B was packed by " + (b.packer ? b.packer->name() : std::string("no backend")) +
                                             "; only the backend that packs an operand reads it"};
    if (b.data == nullptr) return invalid("B's packed data is null with k = " + s(p.k) + ", n = " + s(p.n));
    if (!(b.abs_bound > 0) || !std::isfinite(b.abs_bound))
      return invalid("B's packed abs_bound (" + std::to_string(b.abs_bound) + ") must be finite and > 0");
    if (b.block <= 0 || b.first_block < 0)
      return invalid("B's packed block (" + s(b.block) + ") must be > 0 and its first block (" + s(b.first_block) +
                     ") >= 0");
    const std::int64_t least = packed_b_column_bytes(b.first_block * b.block + p.k, b.block);
    if (b.ld_bytes < least)
      return invalid("B's packed ld_bytes (" + s(b.ld_bytes) + ") < the " + s(least) +
                     " bytes a column of inner rows up to " + s(b.first_block * b.block + p.k) + " takes");
  } else if (p.b.data == nullptr) {
    return invalid("B is null with k = " + s(p.k) + ", n = " + s(p.n));
  }
  const std::int64_t limit = size_limit(), inner_limit = inner_size_limit();
  const std::tuple<const char*, std::int64_t, std::int64_t> sizes[] = {
      {"m", p.m, limit},      {"n", p.n, limit},
      {"k", p.k, inner_limit}, {"lda", p.a.ld, limit},
      {"ldb", packed_b ? 1 : p.b.ld, limit}, {"ldc", p.c.ld, limit}};
  for (const auto& [name, value, most] : sizes)
    if (value > most)
      return {Status::OverSizeLimit,
              std::string(name) + " (" + s(value) + ") exceeds this backend's limit (" + s(most) + ")"};
  return check_parameter_values(parameters, p);
}

Support Backend::can_implement(const Context& ctx, const GemmArgs<float>& args) const {
  return check(ctx, to_problem(args), {}, Execution{args.check_range});
}
Support Backend::can_implement(const Context& ctx, const GemmArgs<double>& args) const {
  return check(ctx, to_problem(args), {}, Execution{args.check_range});
}
Support Backend::can_implement(const Context& ctx, const Problem& problem, const Parameters& parameters,
                               const Execution& execution) const {
  return check(ctx, problem, parameters, execution);
}

void Backend::run(Context& ctx, const Problem& p, const Parameters& parameters, const Execution& execution) const {
  if (const Support support = check(ctx, p, parameters, execution); !support) {
    if (support.status == Support::Status::InvalidArgument) throw InvalidArgument(where(*this) + ": " + support.reason);
    throw NotSupported(where(*this) + ": " + support.reason);
  }
  if (p.m == 0 || p.n == 0) return;
  check_pointer_space(*this, "C", p.c.data, memory());
  if (p.k == 0 || p.alpha == 0) {
    if (p.c.format == Format::F64)
      detail::scale_matrix(ctx, memory(), p.m, p.n, p.beta, static_cast<double*>(p.c.data), p.c.ld);
    else
      detail::scale_matrix(ctx, memory(), p.m, p.n, float(p.beta), static_cast<float*>(p.c.data), p.c.ld);
    return;
  }
  check_pointer_space(*this, "A", p.a.data, memory());
  check_pointer_space(*this, "B", p.b.format == Format::Packed ? p.b.packed.data : p.b.data, memory());
  run_problem(ctx, p, parameters, execution);
}

void Backend::run(Context& ctx, const GemmArgs<float>& args) const {
  run(ctx, to_problem(args), {}, Execution{args.check_range});
}

void Backend::run(Context& ctx, const GemmArgs<double>& args) const {
  run(ctx, to_problem(args), {}, Execution{args.check_range});
}

std::int64_t Backend::parameter_value(const Parameters& parameters, const std::string& name) const {
  if (const auto given = parameters.find(name); given != parameters.end()) return given->second;
  for (const ParameterSpec& spec : this->parameters())
    if (spec.name == name) return spec.default_value;
  throw InvalidArgument(where(*this) + ": no parameter '" + name + "'");
}

void Backend::run_problem(Context& ctx, const Problem& problem, const Parameters&, const Execution& execution) const {
  if (problem.c.format == Format::F32) run_f32(ctx, to_args<float>(problem, execution));
  else run_f64(ctx, to_args<double>(problem, execution));
}

void Backend::pack_b(Context& ctx, std::int64_t k, std::int64_t n, const Operand& b, const PackedB& into) const {
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  const auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw InvalidArgument(where(*this) + ": pack_b: " + what);
  };
  if (packed_b_column_bytes(1, 1) == 0) throw NotSupported(where(*this) + ": pack_b: this backend does not pack operands");
  require(k >= 0 && n >= 0, "k (" + s(k) + ") and n (" + s(n) + ") must be >= 0");
  require(into.packer == this, "the storage is for " + (into.packer ? into.packer->name() : std::string("no backend")));
  require(into.block > 0 && into.first_block >= 0,
          "block (" + s(into.block) + ") must be > 0 and first_block (" + s(into.first_block) + ") >= 0");
  require(into.abs_bound > 0 && std::isfinite(into.abs_bound),
          "abs_bound (" + std::to_string(into.abs_bound) + ") must be finite and > 0");
  if (k == 0 || n == 0) return;
  require(b.format != Format::Packed && b.op == Op::N, "b must be a dense operand with op N");
  require(b.ld >= k, "ldb (" + s(b.ld) + ") < k (" + s(k) + ")");
  require(b.data != nullptr, "b is null with k = " + s(k) + ", n = " + s(n));
  require(into.data != nullptr, "the storage is null with k = " + s(k) + ", n = " + s(n));
  const std::int64_t least = packed_b_column_bytes(into.first_block * into.block + k, into.block);
  require(into.ld_bytes >= least, "ld_bytes (" + s(into.ld_bytes) + ") < the " + s(least) +
                                      " bytes a column of inner rows up to " +
                                      s(into.first_block * into.block + k) + " takes");
  if (const std::string unavailable = unavailable_reason(ctx); !unavailable.empty())
    throw NotSupported(where(*this) + ": " + unavailable);
  check_pointer_space(*this, "b", b.data, memory());
  check_pointer_space(*this, "the packed storage", into.data, memory());
  pack_b_checked(ctx, k, n, b, into);
}

void Backend::pack_b_checked(Context&, std::int64_t, std::int64_t, const Operand&, const PackedB&) const {
  throw NotSupported(where(*this) + ": pack_b: this backend does not pack operands");
}

void Backend::run_f32(Context&, const GemmArgs<float>&) const {
  throw NotSupported(where(*this) + ": FP32 data not supported");
}
void Backend::run_f64(Context&, const GemmArgs<double>&) const {
  throw NotSupported(where(*this) + ": FP64 data not supported");
}

}  // namespace mixsolve::gemm
