// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Memory-bound kernels on SLFP-stored vectors (Mukunoki & Imamura 2016, formats/slfp.hpp): conversions from and
/// to FP64 / FP32, AXPY and DOT, on the host (OpenMP) and on the GPU. A value is widened to its
/// base format in registers and computed on in full precision (DOT's sums in FP64 for every
/// format); results are stored back rounded as asked (RZ or RN). FP64 and FP32 themselves are
/// formats here too (one plane of doubles or floats), so every kernel runs the baselines as well.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/formats/slfp.hpp"

namespace mixsolve::slfp {

using formats::Rounding;

/// The storage formats: IEEE FP64 / FP32, and the SLFP formats of formats/slfp.hpp.
enum class Format {
  Fp64,
  Slfp64in56,
  Slfp64in48,
  Slfp64in40,
  Slfp64in32,
  Slfp64in24,
  Slfp64in16,
  Fp32,
  Slfp32in24,
  Slfp32in16,
};

/// Every format, FP64-based first.
const std::vector<Format>& all_formats();
/// "fp64", "slfp64in56b", ..., "fp32", "slfp32in24b", "slfp32in16b".
const char* to_string(Format f);
/// The format named `name` (to_string's names).
/// @throws InvalidArgument naming `name` and the known names.
Format parse_format(const std::string& name);
/// Bits a value takes in memory: 64, 56, ..., 16.
int container_bits(Format f);
/// Whether values widen to FP64 (else FP32).
bool fp64_based(Format f);
/// The unit roundoff of rounding to nearest into the format: 2^-(significant bits), 2^-53 for FP64,
/// 2^-21 for slfp64in32b, 2^-16 for slfp32in24b.
double unit_roundoff(Format f);
/// Whether the format is a word plane of its own (16/32/64 bits) or several (24/40/48/56).
bool single_word(Format f);

/// A vector of `size` values of `format`, non-owning. SLFP formats keep their word planes in
/// w32 / w16 / w8 (the ones the format has, formats/slfp.hpp; the others null); FP64 and FP32
/// keep their values in f64 / f32. Planes are naturally aligned arrays of `size` words.
struct Vector {
  Format format = Format::Fp64;
  std::int64_t size = 0;
  Memory memory = Memory::Host;
  std::uint32_t* w32 = nullptr;
  std::uint16_t* w16 = nullptr;
  std::uint8_t* w8 = nullptr;
  double* f64 = nullptr;
  float* f32 = nullptr;
};

/// Values offset .. offset + size - 1 of `v` as a Vector (every plane advanced by offset): a
/// column of a column-major matrix, for example.
/// @throws InvalidArgument if offset < 0, size < 0 or offset + size > v.size.
Vector subvector(const Vector& v, std::int64_t offset, std::int64_t size);

/// Owning storage for a Vector: host memory (std::vector) or device memory (cudaMalloc through the
/// Context's pool is not used: plain cudaMalloc, freed on destruction).
class Storage {
 public:
  /// @throws InvalidArgument if size < 0; DeviceError if device memory cannot be had.
  Storage(Format format, std::int64_t size, Memory memory);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Storage(Storage&& other) noexcept;
  Storage& operator=(Storage&& other) noexcept;
  /// The view of the whole storage.
  const Vector& view() const { return view_; }
  /// Bytes the values take (sum of the planes).
  std::int64_t bytes() const;

 private:
  void release();
  Vector view_;
  std::vector<void*> blocks_;  // one allocation per plane
};

/// y := x rounded to y.format, for FP64 input (y FP64-based) ...
/// @throws InvalidArgument for a size < 0, sizes that differ, null or misaligned planes, a base
///         format that is not x's, or memory other than y.memory for the pointer's side.
void encode(Context& ctx, const double* x, const Vector& y, Rounding rounding);
/// ... and for FP32 input (y FP32-based).
void encode(Context& ctx, const float* x, const Vector& y, Rounding rounding);
/// y := x widened (exact), FP64-based x.
void decode(Context& ctx, const Vector& x, double* y);
/// y := x widened (exact), FP32-based x.
void decode(Context& ctx, const Vector& x, float* y);

/// y := alpha x + y, x and y of one format, computed in the base format with one rounding (an FMA,
/// the same on the host and the device), y rounded as asked (Mukunoki & Imamura 2016, §4.1). alpha is rounded to
/// the base format first. On the device it is ordered on ctx.stream() and does not wait.
void axpy(Context& ctx, double alpha, const Vector& x, const Vector& y, Rounding rounding);

/// sum x_i y_i, x and y of one format, widened and summed in FP64. On the device it waits for the
/// result.
double dot(Context& ctx, const Vector& x, const Vector& y);

/// A column-major rows x cols matrix of `values.format` values: element (i, j) is element
/// i + j * ld of `values` (whose size must cover (cols - 1) * ld + rows).
struct Matrix {
  Vector values;
  std::int64_t rows = 0, cols = 0, ld = 1;
};

/// Bytes a Vector of `size` values of `format` takes when its planes are laid out one after another
/// in one buffer by place(), each plane's start 256-byte aligned.
std::size_t placed_bytes(Format format, std::int64_t size);
/// A Vector of `size` values of `format` whose planes lie in `buffer` (placed_bytes(format, size)
/// bytes in `memory`, 256-byte aligned): storage carved out of a workspace.
/// @throws InvalidArgument for a negative size or a null or misaligned buffer.
Vector place(Format format, std::int64_t size, Memory memory, void* buffer);

/// Whether gemv multiplies by the matrix or its transpose.
enum class Transpose { No, Yes };

/// y := alpha op(A) x + beta y with A stored in any format and x, y plain FP64 arrays (op(A) = A:
/// y has A.rows entries and x A.cols; op(A) = A^T: the reverse). A's values are widened and every
/// sum is FP64; beta = 0 does not read y: the product a refinement needs of a matrix or a Krylov
/// basis stored short. On the device it is ordered on ctx.stream() and does not wait.
/// @throws InvalidArgument naming the argument for negative sizes, ld < max(1, rows), a value
///         plane too short for (cols - 1) * ld + rows, null or misaligned planes or arrays.
void gemv(Context& ctx, Transpose op, double alpha, const Matrix& a, const double* x, double beta, double* y);

/// C := alpha op(A) op(B) + beta C with A and B stored in one format (device memory), arithmetic in
/// the format's base type: FP64-based formats with FP64 C (cublasDgemm's arithmetic), FP32-based
/// ones with FP32 C (cublasSgemm's). op(A) is m x k, op(B) k x n, C m x n with leading dimension
/// ldc. FP64 and FP32 operands go to cuBLAS as they are. SLFP ones are widened a panel at a time:
/// kb columns of op(A) and kb rows of op(B) are decoded into a workspace of the base type
/// (gemm_workspace_bytes) and multiplied by cuBLAS, so a product costs the widening of each
/// operand once, and the operands never exist whole in the wide format. The product is that of the stored (rounded) values. beta = 0 does not read C.
/// Ordered on ctx.stream(); it does not wait.
/// @throws InvalidArgument naming the argument for negative or mismatched sizes, a leading
///         dimension below its rows, short, null or misaligned planes or C, formats that differ,
///         C of the other base type.
/// @throws NotSupported for operands in host memory (the GEMM runs on the device) or sizes beyond
///         cuBLAS's 32-bit ones.
void gemm(Context& ctx, Transpose op_a, Transpose op_b, double alpha, const Matrix& a, const Matrix& b, double beta,
          double* c, std::int64_t ldc);
/// @overload FP32-based formats.
void gemm(Context& ctx, Transpose op_a, Transpose op_b, float alpha, const Matrix& a, const Matrix& b, float beta,
          float* c, std::int64_t ldc);
/// The same with the caller's device workspace (`workspace`: gemm_workspace_bytes of this product,
/// 256-byte aligned) in place of ctx.workspace(): for callers that keep other data in the Context's
/// workspace (the registry's slfp-<format> backends keep the encoded operands there).
void gemm(Context& ctx, Transpose op_a, Transpose op_b, double alpha, const Matrix& a, const Matrix& b, double beta,
          double* c, std::int64_t ldc, void* workspace);
/// @overload
void gemm(Context& ctx, Transpose op_a, Transpose op_b, float alpha, const Matrix& a, const Matrix& b, float beta,
          float* c, std::int64_t ldc, void* workspace);
/// Device workspace gemm takes for an m x n x k product of `format`: one panel of op(A) and one of
/// op(B) in the base type (none for FP64 and FP32).
std::size_t gemm_workspace_bytes(Format format, std::int64_t m, std::int64_t n, std::int64_t k);
/// The inner panel gemm widens at a time for an m x n x k product: up to 1024 values of k, fewer
/// where m + n is large, so that the workspace stays near 128 MiB (but at least 128).
std::int64_t gemm_panel(std::int64_t m, std::int64_t n, std::int64_t k);

}  // namespace mixsolve::slfp
