// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/gemm/backend.hpp"

#include <cuda_runtime.h>

#include <string>
#include <tuple>
#include <utility>

#include "mixsolve/core/error.hpp"
#include "scale.hpp"

namespace mixsolve::gemm {

namespace {

std::string where(const Backend& b) { return "gemm(" + b.name() + ")"; }

// Throws unless `p` is usable in memory space `mem` (device backends reject host pointers).
void check_pointer_space(const Backend& b, const char* name, const void* p, Memory mem) {
  if (mem != Memory::Device || p == nullptr) return;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    throw InvalidArgument(where(b) + ": " + name + " is not a pointer the CUDA runtime knows");
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw InvalidArgument(where(b) + ": " + name +
                          " must point to device memory (this backend runs on the GPU); got a host pointer");
}

}  // namespace

template <class T>
Support Backend::check(const Context& ctx, const GemmArgs<T>& args) const {
  using Status = Support::Status;
  const auto invalid = [](std::string reason) { return Support{Status::InvalidArgument, std::move(reason)}; };
  if ((sizeof(T) == 4) != (data_type() == DataType::F32))
    return {Status::WrongDataType, sizeof(T) == 4 ? "takes FP64 data; FP32 arguments were given"
                                                  : "takes FP32 data; FP64 arguments were given"};
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  if (args.m < 0) return invalid("m (" + s(args.m) + ") < 0");
  if (args.n < 0) return invalid("n (" + s(args.n) + ") < 0");
  if (args.k < 0) return invalid("k (" + s(args.k) + ") < 0");
  const std::int64_t a_rows = args.op_a == Op::N ? args.m : args.k;
  const std::int64_t b_rows = args.op_b == Op::N ? args.k : args.n;
  const auto at_least_one = [](std::int64_t v) { return v > 1 ? v : std::int64_t{1}; };
  if (args.lda < at_least_one(a_rows))
    return invalid("lda (" + s(args.lda) + ") < rows of A as stored (" + s(a_rows) + ", op_a = " +
                   to_string(args.op_a) + ")");
  if (args.ldb < at_least_one(b_rows))
    return invalid("ldb (" + s(args.ldb) + ") < rows of B as stored (" + s(b_rows) + ", op_b = " +
                   to_string(args.op_b) + ")");
  if (args.ldc < at_least_one(args.m)) return invalid("ldc (" + s(args.ldc) + ") < m (" + s(args.m) + ")");
  if (std::string unavailable = unavailable_reason(ctx); !unavailable.empty())
    return {Status::Unavailable, std::move(unavailable)};
  if (args.m == 0 || args.n == 0) return {};
  if (args.c == nullptr) return invalid("C is null with m = " + s(args.m) + ", n = " + s(args.n));
  if (args.k == 0 || args.alpha == T(0)) return {};
  if (args.a == nullptr) return invalid("A is null with m = " + s(args.m) + ", k = " + s(args.k));
  if (args.b == nullptr) return invalid("B is null with k = " + s(args.k) + ", n = " + s(args.n));
  const std::int64_t limit = size_limit(), inner_limit = inner_size_limit();
  const std::tuple<const char*, std::int64_t, std::int64_t> sizes[] = {
      {"m", args.m, limit},     {"n", args.n, limit},     {"k", args.k, inner_limit},
      {"lda", args.lda, limit}, {"ldb", args.ldb, limit}, {"ldc", args.ldc, limit}};
  for (const auto& [name, value, most] : sizes)
    if (value > most)
      return {Status::OverSizeLimit,
              std::string(name) + " (" + s(value) + ") exceeds this backend's limit (" + s(most) + ")"};
  return {};
}

Support Backend::can_implement(const Context& ctx, const GemmArgs<float>& args) const { return check(ctx, args); }
Support Backend::can_implement(const Context& ctx, const GemmArgs<double>& args) const { return check(ctx, args); }

template <class T>
void Backend::run_checked(Context& ctx, const GemmArgs<T>& args) const {
  if (const Support support = check(ctx, args); !support) {
    if (support.status == Support::Status::InvalidArgument) throw InvalidArgument(where(*this) + ": " + support.reason);
    throw NotSupported(where(*this) + ": " + support.reason);
  }
  if (args.m == 0 || args.n == 0) return;
  check_pointer_space(*this, "C", args.c, memory());
  if (args.k == 0 || args.alpha == T(0)) {
    detail::scale_matrix(ctx, memory(), args.m, args.n, args.beta, args.c, args.ldc);
    return;
  }
  check_pointer_space(*this, "A", args.a, memory());
  check_pointer_space(*this, "B", args.b, memory());
  if constexpr (sizeof(T) == 4) run_f32(ctx, args);
  else run_f64(ctx, args);
}

void Backend::run(Context& ctx, const GemmArgs<float>& args) const { run_checked(ctx, args); }

void Backend::run(Context& ctx, const GemmArgs<double>& args) const { run_checked(ctx, args); }

void Backend::run_f32(Context&, const GemmArgs<float>&) const {
  throw NotSupported(where(*this) + ": FP32 data not supported");
}
void Backend::run_f64(Context&, const GemmArgs<double>&) const {
  throw NotSupported(where(*this) + ": FP64 data not supported");
}

}  // namespace mixsolve::gemm
