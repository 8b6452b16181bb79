// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// A GEMM described operand by operand: each of A, B and C has its own storage format, an operand
/// may be prepacked by the backend that will read it, a backend may take parameters, and the
/// caller states how the call may execute. Backend::run(ctx, Problem, Parameters, Execution)
/// takes it; GemmArgs<T> (backend.hpp) is the common case of one element type for all three.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace mixsolve::gemm {

class Backend;

/// op(X) of a GEMM operand: N (X as stored) or T (its transpose).
enum class Op { N, T };
/// The element type a backend computes on: F32 (float) or F64 (double).
enum class DataType { F32, F64 };

/// @param op an operation.
/// @return "N" or "T".
inline const char* to_string(Op op) { return op == Op::N ? "N" : "T"; }
/// @param t a data type.
/// @return "FP32" or "FP64".
inline const char* to_string(DataType t) { return t == DataType::F32 ? "FP32" : "FP64"; }

/// How the elements of an operand are stored.
enum class Format {
  F64,     ///< double
  F32,     ///< float
  F16,     ///< IEEE binary16 bits (std::uint16_t)
  BF16,    ///< bfloat16 bits (std::uint16_t)
  Packed,  ///< a B operand in the layout of the backend that packed it (PackedB)
};

/// @param f a format.
/// @return "FP64", "FP32", "FP16", "BF16" or "packed".
const char* to_string(Format f);

/// A B operand (k x n, op N) that one backend has converted once (Backend::pack_b) so that many
/// of its products can read it without converting it again: an LU's L21, read by every update of
/// its panel group. Only the backend that packed it reads it (`packer`).
///
/// Layout rules every packing backend keeps, so that a caller can manage the storage:
///  * column j of B lies at `data + j ld_bytes` and depends on column j of B alone: permuting
///    whole packed columns permutes B's columns;
///  * the inner dimension is packed in blocks of `block` rows, so a product over inner rows
///    [b block, k) reads the view blocks_from(b), and a block can be packed on its own; block b
///    starts Backend::packed_b_column_bytes(b block, block) bytes into its column;
///  * every block holds `block` rows but the storage's last, which may be shorter: a pack_b call
///    and a product cover whole blocks, or end where the packed rows end (the backend cannot
///    check the latter);
///  * the values were scaled for |B| <= abs_bound, which the caller promised when packing; a
///    product must give the same abs_bound as the pack_b calls that wrote the storage.
struct PackedB {
  /// The backend whose layout this is.
  const Backend* packer = nullptr;
  /// Device memory of column 0 of this view (written by pack_b, read by products).
  void* data = nullptr;
  /// Bytes between consecutive columns, >= Backend::packed_b_column_bytes(k, block).
  std::int64_t ld_bytes = 0;
  /// Inner rows per block, > 0.
  std::int64_t block = 0;
  /// The view's inner row 0 is the first row of block `first_block` of the storage.
  std::int64_t first_block = 0;
  /// |B| <= abs_bound, finite and > 0: fixes the packer's scale, so no pass over B finds it.
  double abs_bound = 0;

  /// @param j a column, >= 0.
  /// @return the view whose column 0 is this view's column j.
  PackedB columns_from(std::int64_t j) const {
    PackedB v = *this;
    v.data = static_cast<char*>(data) + j * ld_bytes;
    return v;
  }
  /// @param b a block, >= 0.
  /// @return the view whose inner row 0 is the first row of this view's block b.
  PackedB blocks_from(std::int64_t b) const {
    PackedB v = *this;
    v.first_block += b;
    return v;
  }
};

/// An operand the product reads.
struct Operand {
  /// The element format; Packed: `packed` describes it and op, data and ld are unused.
  Format format = Format::F32;
  /// N: stored as op(X); T: stored transposed.
  Op op = Op::N;
  /// The elements (memory of the backend's Memory space); may be null where nothing is read.
  const void* data = nullptr;
  /// Leading dimension in elements, >= max(1, rows as stored).
  std::int64_t ld = 1;
  /// The packed operand (format Packed only).
  PackedB packed{};

  /// @return a dense operand of `format`.
  static Operand dense(Format format, Op op, const void* data, std::int64_t ld) { return {format, op, data, ld, {}}; }
  /// @return the packed operand `p` (op N).
  static Operand prepacked(const PackedB& p) { return {Format::Packed, Op::N, nullptr, 0, p}; }
};

/// Which entries of C a product must write.
enum class Fill {
  Full,   ///< every entry
  Lower,  ///< those on and below the diagonal (i >= j); the ones above may get any value or none
          ///< (a symmetric rank-k update's other half). A backend that skips them says so
          ///< (Backend::skips_upper_fill); the others compute C whole.
};
/// The operand the product writes: C, read unless beta == 0.
struct Output {
  /// The element format.
  Format format = Format::F32;
  /// The elements; may be null where m == 0 or n == 0.
  void* data = nullptr;
  /// Leading dimension in elements, >= max(1, m).
  std::int64_t ld = 1;
  /// The entries required.
  Fill fill = Fill::Full;
};

/// C = alpha op(A) op(B) + beta C, column-major; op(A) is m x k, op(B) k x n, C m x n.
/// The semantics of backend.hpp hold (empty cases, beta == 0, NaN propagation). alpha and beta
/// are given in double; a backend whose C is FP32 rounds them to float, exactly where they came
/// from float.
struct Problem {
  /// Sizes, >= 0.
  std::int64_t m = 0, n = 0, k = 0;
  /// Scales of the product and of C's old value.
  double alpha = 1, beta = 0;
  /// The operands read.
  Operand a, b;
  /// The operand written.
  Output c;
};

/// Where a product's kernel may run. Anywhere: the backend's (cuBLAS's) choice, which on Hopper
/// launches its FP16 GEMMs with thread block clusters. A cluster needs several free
/// multiprocessors of one GPC at once: beside a long kernel that holds most multiprocessors it
/// can wait for the whole of that kernel (an LU's look-ahead updates beside its bulk update).
/// Unclustered: a kernel whose blocks start on any free multiprocessor.
enum class KernelPlacement { Anywhere, Unclustered };

/// How a call may execute: hints and checks that do not change what is computed.
struct Execution {
  /// Backends that round A and B into a narrower range count the finite entries that overflow
  /// and throw RangeError, at the cost of one synchronisation (GemmArgs::check_range). false:
  /// no check; an overflow becomes Inf in C.
  bool check_range = true;
  /// A hint: a backend that cannot honour Unclustered runs as Anywhere.
  KernelPlacement placement = KernelPlacement::Anywhere;
};

/// A backend's parameters by name: integers (switches as 0 and 1). A name the backend does not
/// declare (Backend::parameters) is refused; one left out takes its default
/// (Backend::parameter_value).
using Parameters = std::map<std::string, std::int64_t>;

/// One parameter a backend declares.
struct ParameterSpec {
  /// The name, e.g. "moduli".
  std::string name;
  /// What it sets, one line.
  std::string description;
  /// The accepted range, inclusive, and the value when left out.
  std::int64_t min = 0, max = 0, default_value = 0;
};

}  // namespace mixsolve::gemm
