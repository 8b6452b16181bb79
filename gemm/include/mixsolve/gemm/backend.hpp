// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// The GEMM backend interface:  C = alpha * op(A) * op(B) + beta * C, column-major.
///
/// A backend computes on FP32 data (SGEMM class) or FP64 data (DGEMM class) in host or device
/// memory, as data_type() and memory() say; some also take other operand formats, a B operand
/// they packed, or parameters (problem.hpp, the Problem form of run). Device backends are ordered
/// on ctx.stream(), take their scratch memory from ctx.workspace() and synchronise nothing unless
/// their description says so. Modelled on CUTLASS's can_implement / workspace / run.
///
/// Semantics shared by every backend (enforced by Backend::run before a backend sees the call):
///  * m, n, k >= 0; lda >= max(1, rows of A as stored) (m if op_a == N, else k); likewise ldb, ldc.
///  * Null pointers are errors only where elements would be read or written.
///  * m == 0 or n == 0: nothing happens. k == 0 or alpha == 0: C = beta * C, A and B unread.
///  * beta == 0: C is not read, so NaN in C does not propagate (the BLAS convention).
///  * NaN/Inf in A or B propagate (as Inf or NaN) to the entries of C they contribute to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/gemm/problem.hpp"

namespace mixsolve::gemm {

/// The arguments of one GEMM, C = alpha * op(A) * op(B) + beta * C, column-major; op(A) is m x k,
/// op(B) k x n, C m x n. The pointers lie in the backend's memory space (Backend::memory()).
/// @tparam T float for FP32 backends, double for FP64 ones.
template <class T>
struct GemmArgs {
  /// op(A): N, A is m x k as stored; T, A is stored k x m.
  Op op_a = Op::N;
  /// op(B): N, B is k x n as stored; T, B is stored n x k.
  Op op_b = Op::N;
  /// Rows of op(A) and C (m), columns of op(B) and C (n), the inner dimension (k); all >= 0.
  std::int64_t m = 0, n = 0, k = 0;
  /// Scale of the product.
  T alpha = T(1);
  /// A, read; may be null where k == 0, alpha == 0 or C is empty.
  const T* a = nullptr;
  /// Leading dimension of A, >= max(1, rows of A as stored).
  std::int64_t lda = 1;
  /// B, read; may be null where k == 0, alpha == 0 or C is empty.
  const T* b = nullptr;
  /// Leading dimension of B, >= max(1, rows of B as stored).
  std::int64_t ldb = 1;
  /// Scale of C's old value; 0: C is not read.
  T beta = T(0);
  /// C, read (unless beta == 0) and written; may be null where m == 0 or n == 0.
  T* c = nullptr;
  /// Leading dimension of C, >= max(1, m).
  std::int64_t ldc = 1;
  /// Backends that round A and B into a narrower range without scaling (cublas-fp16, cublas-bf16,
  /// halfhalf-unscaled, markidis) count the entries that overflow and throw RangeError, at the
  /// cost of one synchronisation; so does cublas-fp16x3, whose scaling leaves only entries beyond
  /// 2^78 to overflow. false: no check; an overflow becomes Inf in C (a caller that checks C for
  /// non-finite entries itself, like the LU, skips the synchronisation).
  bool check_range = true;
  /// The entries of C required (Fill::Lower: on and below the diagonal).
  Fill fill = Fill::Full;
};

/// The shape of a GEMM, without its data: what Backend::workspace_bytes() depends on.
struct GemmShape {
  /// op(A) and op(B), as in GemmArgs.
  Op op_a = Op::N, op_b = Op::N;
  /// op(A) is m x k, op(B) k x n.
  std::int64_t m = 0, n = 0, k = 0;
};

/// The shape of a GEMM call.
/// @param args the call's arguments (only the operations and sizes are read).
/// @return {op_a, op_b, m, n, k} of `args`.
template <class T>
GemmShape shape_of(const GemmArgs<T>& args) {
  return {args.op_a, args.op_b, args.m, args.n, args.k};
}

/// One GEMM implementation (cuBLAS, a corrected tensor-core SGEMM, a host model, ...), found by
/// name in the registry (registry.hpp), which holds one shared instance of each, used with any
/// Context.
/// Whether a backend can run a GEMM, and if not, why (CUTLASS's can_implement status).
struct Support {
  enum class Status {
    Ok,
    InvalidArgument,    ///< the arguments are wrong for any backend (Backend::run throws InvalidArgument)
    WrongDataType,      ///< FP32 arguments for an FP64 backend or the reverse
    Unavailable,        ///< the backend cannot run in this Context (Backend::unavailable_reason)
    OverSizeLimit,      ///< a size or leading dimension beyond what the backend can index
    UnsupportedFormat,  ///< an operand's format (or packing) the backend does not take
    UnsupportedParameter,  ///< a parameter the backend does not declare
  };
  Status status = Status::Ok;
  /// Empty when Ok; else what is wrong, naming the argument and its value.
  std::string reason;
  explicit operator bool() const { return status == Status::Ok; }
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// @return the registry name, e.g. "cublas-sgemm", "halfhalf", "model-fp16-rz".
  virtual std::string name() const = 0;
  /// One line: what it computes and how (products, rounding, what it needs).
  virtual std::string description() const = 0;
  /// @return the element type the backend takes (F32: GemmArgs<float>, F64: GemmArgs<double>).
  virtual DataType data_type() const = 0;
  /// @return where A, B and C must lie (Device backends reject host pointers).
  virtual Memory memory() const = 0;

  /// Empty if this backend can run in `ctx` (GPU present, compute capability high enough),
  /// else the reason it cannot.
  /// @param ctx the context the backend would run in.
  /// @return "" or the reason, e.g. "needs a GPU; this is a host-only context".
  virtual std::string unavailable_reason(const Context& ctx) const { return {}; }
  /// Device workspace one call of this shape takes from the Context (0 for host backends).
  /// @param shape the call's shape.
  /// @return bytes of Context::workspace() the call uses.
  virtual std::size_t workspace_bytes(const GemmShape& shape) const { return 0; }
  /// Whether a square product with Fill::Lower skips C's tiles above the diagonal (about half the
  /// work) in `ctx`; false: it computes C whole, as Fill::Lower allows.
  /// @param ctx the context the backend would run in (its device decides the kernel).
  virtual bool skips_upper_fill(const Context& /*ctx*/) const { return false; }

  /// Whether run() would accept `args` in `ctx`: the arguments' validity, the data type, the
  /// Context and the backend's size limits, in the order run() checks them. A query: it launches
  /// nothing and synchronises nothing; it reports a refused call instead of throwing (only a
  /// failing CUDA query of the device throws DeviceError). run() also checks that device pointers
  /// point to device memory.
  /// @param ctx  the context the backend would run in.
  /// @param args the GEMM.
  /// @return Support::Status::Ok, or the first reason run() would refuse the call.
  Support can_implement(const Context& ctx, const GemmArgs<float>& args) const;
  /// @overload
  Support can_implement(const Context& ctx, const GemmArgs<double>& args) const;

  /// The parameters this backend takes (Problem-form run); none by default.
  /// @return one spec per parameter: name, description, range and default.
  virtual std::vector<ParameterSpec> parameters() const { return {}; }

  /// Whether `parameters` are this backend's: every name declared by parameters(), every value
  /// in its spec's range (an empty map always is).
  /// @param parameters the parameters to check.
  /// @return Ok, UnsupportedParameter naming an undeclared name and the declared ones, or
  ///         InvalidArgument naming a value and its range.
  Support check_parameters(const Parameters& parameters) const;

  /// Whether run() would accept `problem`: can_implement of the typed form, plus each operand's
  /// format (Support::Status::UnsupportedFormat names the operand), a packed B's packer and
  /// storage, and the parameters (UnsupportedParameter for an undeclared name, InvalidArgument
  /// for a value outside its range or values that do not go together: check_parameter_values).
  /// @param ctx        the context the backend would run in.
  /// @param problem    the GEMM.
  /// @param parameters the backend's parameters; those left out take their defaults.
  /// @param execution  how the call may execute.
  /// @return Support::Status::Ok, or the first reason run() would refuse the call.
  Support can_implement(const Context& ctx, const Problem& problem, const Parameters& parameters = {},
                        const Execution& execution = {}) const;

  /// Computes `problem` as run(ctx, GemmArgs) does, after can_implement(ctx, problem, ...) (a
  /// refusal throws InvalidArgument for wrong arguments, NotSupported for the rest, naming the
  /// argument and value). GemmArgs calls come here with Execution{args.check_range}.
  /// @param ctx        the context: stream, cuBLAS handle and workspace of a device backend.
  /// @param problem    the GEMM; C is written.
  /// @param parameters the backend's parameters.
  /// @param execution  check_range and placement (Execution).
  /// @throws InvalidArgument, NotSupported, RangeError, DeviceError as run(ctx, GemmArgs).
  void run(Context& ctx, const Problem& problem, const Parameters& parameters = {},
           const Execution& execution = {}) const;

  /// Bytes one column of a B packed by this backend takes when it holds inner rows [0, k) in
  /// blocks of `block` rows; 0 if this backend does not pack (the default).
  /// @param k     inner rows the storage holds, >= 0.
  /// @param block inner rows per block, > 0.
  /// @return the least PackedB::ld_bytes for such storage, or 0.
  virtual std::int64_t packed_b_column_bytes(std::int64_t k, std::int64_t block) const { return 0; }

  /// Packs the k x n operand `b` (op N) into `into`: its inner rows [0, k), starting at the
  /// first row of block into.first_block (several calls can pack a storage block by block). On
  /// ctx's stream, without synchronisation; the packed copy does not refer to `b` afterwards.
  /// The caller guarantees |b| <= into.abs_bound (a larger entry may become Inf in products).
  /// @param ctx  a context this backend can run in.
  /// @param k    inner rows of b, >= 0.
  /// @param n    columns of b, >= 0.
  /// @param b    the dense operand (a format this backend packs, op N).
  /// @param into the storage: packer this backend, ld_bytes >= packed_b_column_bytes(
  ///             into.first_block * into.block + k, into.block).
  /// @throws NotSupported    if this backend does not pack, or not b's format.
  /// @throws InvalidArgument naming a negative size, a small ldb or ld_bytes, a null pointer, a
  ///                         bad block or bound, or storage packed for another backend.
  void pack_b(Context& ctx, std::int64_t k, std::int64_t n, const Operand& b, const PackedB& into) const;

  /// Validates the arguments (throwing InvalidArgument naming the argument and value), handles
  /// the empty cases, then computes. Throws NotSupported for the other data type.
  /// Device backends are ordered on ctx.stream() and return without waiting unless their
  /// description() says they synchronise.
  /// @param ctx  the context: stream, cuBLAS handle and workspace of a device backend.
  /// @param args the GEMM; C is written.
  /// @throws NotSupported    if the backend takes FP64 data, if it cannot run in `ctx`
  ///                         (unavailable_reason()), or if a size or leading dimension exceeds
  ///                         its limit (cuBLAS's 32-bit sizes).
  /// @throws InvalidArgument naming the argument: a negative size, a leading dimension below
  ///                         max(1, rows as stored), a null pointer where elements are read or
  ///                         written, or a host pointer given to a device backend.
  /// @throws RangeError      with args.check_range, where a backend that checks finds finite
  ///                         entries of A or B beyond its format's range (GemmArgs::check_range).
  /// @throws DeviceError     if a CUDA or cuBLAS call fails.
  void run(Context& ctx, const GemmArgs<float>& args) const;
  /// @overload
  /// The FP64 form: throws NotSupported if the backend takes FP32 data.
  void run(Context& ctx, const GemmArgs<double>& args) const;

 protected:
  /// The largest m, n, lda, ldb and ldc the backend can index (cuBLAS: 32-bit sizes); beyond it
  /// can_implement reports Support::Status::OverSizeLimit. The default accepts every size.
  virtual std::int64_t size_limit() const { return INT64_MAX; }
  /// The largest k; the default is size_limit().
  virtual std::int64_t inner_size_limit() const { return size_limit(); }
  /// Whether this backend takes the operands' formats; the default: A, B and C all of
  /// data_type() (else WrongDataType when they share the other type, UnsupportedFormat naming
  /// the operand otherwise). A backend that takes other formats (a packed B, 16-bit A and B)
  /// overrides it and run_problem.
  /// @param problem   the GEMM (sizes not yet checked).
  /// @param execution how the call may execute.
  virtual Support check_formats(const Problem& problem, const Execution& execution) const;
  /// Whether parameter values that each lie in their spec's range go together for this product
  /// (ozaki2-int8: one modulus keeps no bits; moduli and bits both set). can_implement and run()
  /// ask it for a product with elements to compute (m, n, k > 0, alpha != 0). The default accepts
  /// every combination.
  /// @param parameters the call's parameters (names and ranges already checked).
  /// @param problem    the GEMM.
  /// @return Ok, or InvalidArgument naming the parameters and their values.
  virtual Support check_parameter_values(const Parameters& parameters, const Problem& problem) const { return {}; }
  /// A parameter's value: the one given, else its spec's default.
  /// @param parameters the call's parameters (already checked against parameters()).
  /// @param name       a declared parameter's name; InvalidArgument for any other.
  std::int64_t parameter_value(const Parameters& parameters, const std::string& name) const;
  /// Called with a problem can_implement accepted, m, n > 0, k > 0 and alpha != 0. The default
  /// runs run_f32 or run_f64 on the typed arguments (formats all of data_type()); a backend that
  /// declares parameters overrides it and reads them through parameter_value.
  virtual void run_problem(Context& ctx, const Problem& problem, const Parameters& parameters,
                           const Execution& execution) const;
  /// pack_b after its checks, with k, n > 0. The default throws NotSupported.
  virtual void pack_b_checked(Context& ctx, std::int64_t k, std::int64_t n, const Operand& b,
                              const PackedB& into) const;
  /// Called with validated arguments, m, n > 0, k > 0 and alpha != 0. The default throws
  /// NotSupported.
  virtual void run_f32(Context& ctx, const GemmArgs<float>& args) const;
  /// Called with validated arguments, m, n > 0, k > 0 and alpha != 0. The default throws
  /// NotSupported.
  virtual void run_f64(Context& ctx, const GemmArgs<double>& args) const;

 private:
  Support check(const Context& ctx, const Problem& problem, const Parameters& parameters,
                const Execution& execution) const;
};

/// The Problem form of typed arguments: A, B and C of T's format.
/// @param args the GEMM.
/// @return the same GEMM as a Problem; Execution{args.check_range} completes it.
template <class T>
Problem to_problem(const GemmArgs<T>& args) {
  constexpr Format f = sizeof(T) == 4 ? Format::F32 : Format::F64;
  return {args.m, args.n, args.k, double(args.alpha), double(args.beta), Operand::dense(f, args.op_a, args.a, args.lda),
          Operand::dense(f, args.op_b, args.b, args.ldb), Output{f, args.c, args.ldc, args.fill}};
}

/// The typed form of a problem whose operands are all dense of T's format.
/// @param problem   the GEMM.
/// @param execution supplies check_range.
/// @return the same GEMM as GemmArgs<T> (alpha and beta rounded to T).
template <class T>
GemmArgs<T> to_args(const Problem& problem, const Execution& execution) {
  return {problem.a.op, problem.b.op, problem.m, problem.n, problem.k, T(problem.alpha),
          static_cast<const T*>(problem.a.data), problem.a.ld, static_cast<const T*>(problem.b.data), problem.b.ld,
          T(problem.beta), static_cast<T*>(problem.c.data), problem.c.ld, execution.check_range, problem.c.fill};
}

}  // namespace mixsolve::gemm
