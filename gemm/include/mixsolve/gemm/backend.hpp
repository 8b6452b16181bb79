// SPDX-License-Identifier: BSD-3-Clause
// The GEMM backend interface:  C = alpha * op(A) * op(B) + beta * C, column-major.
//
// A backend computes on FP32 data (SGEMM class) or FP64 data (DGEMM class) in host or device
// memory, as data_type() and memory() say. Device backends are ordered on ctx.stream(), take
// their scratch memory from ctx.workspace() and synchronise nothing unless their description
// says so. Modelled on CUTLASS's can_implement / workspace / run.
//
// Semantics shared by every backend (enforced by Backend::run before a backend sees the call):
//  * m, n, k >= 0; lda >= max(1, rows of A as stored) (m if op_a == N, else k); likewise ldb, ldc.
//  * Null pointers are errors only where elements would be read or written.
//  * m == 0 or n == 0: nothing happens. k == 0 or alpha == 0: C = beta * C, A and B unread.
//  * beta == 0: C is not read, so NaN in C does not propagate (the BLAS convention).
//  * NaN/Inf in A or B propagate (as Inf or NaN) to the entries of C they contribute to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::gemm {

enum class Op { N, T };
enum class DataType { F32, F64 };

inline const char* to_string(Op op) { return op == Op::N ? "N" : "T"; }
inline const char* to_string(DataType t) { return t == DataType::F32 ? "FP32" : "FP64"; }

template <class T>
struct GemmArgs {
  Op op_a = Op::N;
  Op op_b = Op::N;
  std::int64_t m = 0, n = 0, k = 0;
  T alpha = T(1);
  const T* a = nullptr;
  std::int64_t lda = 1;
  const T* b = nullptr;
  std::int64_t ldb = 1;
  T beta = T(0);
  T* c = nullptr;
  std::int64_t ldc = 1;
  // Backends that round A and B into a narrower range without scaling (cublas-fp16, cublas-bf16,
  // halfhalf-unscaled) count the entries that overflow and throw RangeError, at the cost of one
  // synchronisation. false: no check; an overflow becomes Inf in C (a caller that checks C for
  // non-finite entries itself, like the LU, skips the synchronisation).
  bool check_range = true;
};

struct GemmShape {
  Op op_a = Op::N, op_b = Op::N;
  std::int64_t m = 0, n = 0, k = 0;
};

template <class T>
GemmShape shape_of(const GemmArgs<T>& args) {
  return {args.op_a, args.op_b, args.m, args.n, args.k};
}

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // One line: what it computes and how (products, rounding, what it needs).
  virtual std::string description() const = 0;
  virtual DataType data_type() const = 0;
  virtual Memory memory() const = 0;

  // Empty if this backend can run in `ctx` (GPU present, compute capability high enough),
  // else the reason it cannot.
  virtual std::string unavailable_reason(const Context& ctx) const { return {}; }
  // Device workspace one call of this shape takes from the Context (0 for host backends).
  virtual std::size_t workspace_bytes(const GemmShape& shape) const { return 0; }

  // Validates the arguments (throwing InvalidArgument naming the argument and value), handles
  // the empty cases, then computes. Throws NotSupported for the other data type.
  void run(Context& ctx, const GemmArgs<float>& args) const;
  void run(Context& ctx, const GemmArgs<double>& args) const;

 protected:
  // Called with validated arguments, m, n > 0, k > 0 and alpha != 0.
  virtual void run_f32(Context& ctx, const GemmArgs<float>& args) const;
  virtual void run_f64(Context& ctx, const GemmArgs<double>& args) const;

 private:
  template <class T>
  void run_checked(Context& ctx, const GemmArgs<T>& args) const;
};

}  // namespace mixsolve::gemm
