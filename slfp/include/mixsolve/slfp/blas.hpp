// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Memory-bound kernels on SLFP-stored vectors (seed 003, formats/slfp.hpp): conversions from and
/// to FP64 / FP32, AXPY and DOT, on the host (OpenMP) and on the GPU. A value is widened to its
/// base format in registers and computed on in full precision (DOT's sums in FP64 for every
/// format); results are stored back rounded as asked (RZ or RN). FP64 and FP32 themselves are
/// formats here too (one plane of doubles or floats), so every kernel runs the baselines as well.
#pragma once

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
/// the same on the host and the device), y rounded as asked (seed 003 §4.1). alpha is rounded to
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

/// Whether gemv multiplies by the matrix or its transpose.
enum class Transpose { No, Yes };

/// y := alpha op(A) x + beta y with A stored in any format and x, y plain FP64 arrays (op(A) = A:
/// y has A.rows entries and x A.cols; op(A) = A^T: the reverse). A's values are widened and every
/// sum is FP64; beta = 0 does not read y: the product a refinement needs of a matrix or a Krylov
/// basis stored short. On the device it is ordered on ctx.stream() and does not wait.
/// @throws InvalidArgument naming the argument for negative sizes, ld < max(1, rows), a value
///         plane too short for (cols - 1) * ld + rows, null or misaligned planes or arrays.
void gemv(Context& ctx, Transpose op, double alpha, const Matrix& a, const double* x, double beta, double* y);

}  // namespace mixsolve::slfp
