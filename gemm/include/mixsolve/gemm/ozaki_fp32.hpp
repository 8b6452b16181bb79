// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// DGEMM emulated with FP32 splits and FP32 products: the Ozaki scheme as Nanai & Fujimoto
/// (2021) apply it, generalised from 2 to s splits.
///
/// Each row of op(A) and each column of op(B) (a "vector" of length k) is first scaled by a power
/// of two, 2^-e with e = ceil(log2 max |x|), so that any finite FP64 input has FP32 splits and no
/// product overflows (Nanai & Fujimoto (2021) assume their inputs within FP32's exponent range; the scaling
/// changes no bit of the splits, which follow the vector's own grid). It is then cut s - 1 times
/// (formats/ozaki_split.hpp): x = x_1 + ... + x_{s-1} + r_s, where x_p is the high part of the
/// remainder r_p (r_1 = x) on its own grid, and r_{p+1} = r_p - x_p in FP64. The product is the
/// sum of s (s + 1) / 2 FP32 products (Nanai & Fujimoto 2021, eq. (16) generalised):
///     A B = sum_{p + q <= s} A_p B_q  +  sum_{p < s} A_p R^B_{s-p+1}  +  R^A_s B
/// where the high-by-high products are exact (eq. (5)) and the others carry FP32 rounding; the
/// terms are summed in FP64. The remainders are rounded to FP32 (Nanai & Fujimoto 2021, Algorithm 2 line 10),
/// so the result is an approximation whose error falls with s (Nanai & Fujimoto 2021, Table 2). Entry (i, j) of
/// the sum is multiplied by 2^(e_i + e_j) in FP64 at the end.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"

namespace mixsolve::gemm {

/// The number of splits the scheme takes: 2 to 6, as in Nanai & Fujimoto (2021).
constexpr int kOzakiFp32MinSplits = 2, kOzakiFp32MaxSplits = 6;
/// The largest inner dimension: eq. (5) needs 2 alpha + ceil(log2 k) <= 24 for a high part of
/// alpha >= 1 bits.
constexpr std::int64_t kOzakiFp32MaxK = std::int64_t{1} << 22;

/// One operand, split. Vector v's element l of plane p lies at [p][v * k + l].
struct OzakiFp32Operand {
  int splits = 0;
  std::int64_t vectors = 0, k = 0;
  /// The high parts x_1 .. x_{s-1}: splits - 1 planes.
  std::vector<std::vector<float>> high;
  /// The remainders r_1 (= x rounded to FP32) .. r_s, rounded to FP32: splits planes.
  std::vector<std::vector<float>> remainder;
  /// Vector v was scaled by 2^-exponent[v] before it was split (0 for a zero vector).
  std::vector<int> exponent;
};

/// Splits `vectors` vectors of length k (element l of vector v at x[v * vector_stride + l *
/// element_stride], FP64, finite) into `splits` parts, on the host. The device backend's split
/// matches it bit for bit.
/// @param vectors        rows of op(A) or columns of op(B), >= 0.
/// @param k              the inner dimension, >= 1.
/// @param x              the operand (host memory).
/// @param vector_stride  distance between consecutive vectors' first elements.
/// @param element_stride distance between consecutive elements of a vector.
/// @param splits         in [kOzakiFp32MinSplits, kOzakiFp32MaxSplits].
/// @return the high parts and remainders.
/// @throws InvalidArgument for a splits value out of range, k < 1 or k > kOzakiFp32MaxK.
OzakiFp32Operand ozaki_fp32_split(std::int64_t vectors, std::int64_t k, const double* x, std::int64_t vector_stride,
                                  std::int64_t element_stride, int splits);

/// The same split on ctx's GPU, as the device backends ozaki-fp32* make it, copied back to the
/// host (for tests and studies: it equals ozaki_fp32_split's bit for bit).
/// @param ctx            a context with a GPU.
/// @param vectors        as ozaki_fp32_split.
/// @param k              as ozaki_fp32_split.
/// @param x              the operand, in device memory.
/// @param vector_stride  as ozaki_fp32_split.
/// @param element_stride as ozaki_fp32_split.
/// @param splits         as ozaki_fp32_split.
/// @return the high parts and remainders, in host memory.
/// @throws InvalidArgument as ozaki_fp32_split; RangeError where x holds NaN or Inf.
OzakiFp32Operand ozaki_fp32_split_on_device(Context& ctx, std::int64_t vectors, std::int64_t k, const double* x,
                                            std::int64_t vector_stride, std::int64_t element_stride, int splits);

/// One FP32 product of the scheme: which part of A times which part of B.
struct OzakiFp32Product {
  /// true: A's high part `a_index` (1-based p); false: A's remainder r_{a_index}.
  bool a_high;
  int a_index;
  /// Likewise for B.
  bool b_high;
  int b_index;
};

/// The s (s + 1) / 2 products for `splits`, in the order the backends sum them (high-by-high
/// first, by p then q; then A_p R^B_{s-p+1}; then R^A_s B).
/// @param splits in [kOzakiFp32MinSplits, kOzakiFp32MaxSplits].
/// @return the list of products.
std::vector<OzakiFp32Product> ozaki_fp32_products(int splits);

}  // namespace mixsolve::gemm
