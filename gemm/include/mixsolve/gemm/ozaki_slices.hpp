// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// DGEMM emulated with BF16 or FP16 slices whose products accumulate in FP32 without rounding
/// error: the Ozaki scheme as Niimi (2025) describes it (its eqs. (1)-(5), (9)-(11); fast mode `d`).
///
/// Each row of op(A) and column of op(B) (a vector of length k) is cut into slices: with
/// c = ceil(log2 max|x^(p)|) over the vector's current remainder x^(p) (eq. (1)),
/// sigma = 0.75 2^(rho + c) (eq. (2)), v = fl64((x^(p) + sigma) - sigma) (eq. (3)),
/// x^(p+1) = x^(p) - v (eq. (4)) and the slice 2^-c v in the slice format (eq. (5)). rho =
/// max(ceil(53 - (24 - log2 k) / 2), 53 - t) for a format of t significand bits: every slice
/// then fits its format and a product of two slices summed over k terms fits FP32's 24 bits, so
/// each of the s_A s_B slice products is exact in FP32 (eq. (11)). C = sum over slice pairs of
/// 2^(c_p + c_q) times that product, summed in FP64 (eq. (10)). Fast mode keeps only the pairs
/// with p + q < d (0-based): the pairs of small slices carry the least.
///
/// Niimi (2025) takes c over the whole matrix; here it is per vector, as in the Ozaki scheme's own
/// papers, so that a row of small entries keeps its bits.
///
/// The fused split (parameter fused = 1; Niimi's (2025) "fused split kernel"): c is taken once per
/// vector, from x itself, and slice p (0-based) takes c_p = c - p (b + 1), b = 53 - rho the bits
/// per slice, so that every slice comes from one pass over x (no reduction between slices). Slice
/// p leaves a remainder of at most half its grid, 2^(c_p - b - 1) = 2^(c_{p+1}), so each slice
/// fits its format and uses all its bits; where a remainder is much smaller than that bound, eq.
/// (1) per slice keeps more of its bits. The device backends ozaki-bf16 and ozaki-fp16 split this
/// way.
#pragma once

#include <cstdint>

namespace mixsolve::gemm {

/// The most slices an operand is cut into.
constexpr int kOzakiMaxSlices = 20;

/// Niimi's (2025) rho for a slice format of `significand_bits` bits (BF16 8, FP16 11) and inner
/// dimension k: max(ceil(53 - (24 - ceil(log2 k)) / 2), 53 - significand_bits).
/// @param significand_bits the slice format's significand, hidden bit included.
/// @param k                the inner dimension, >= 1 (at most 2^24 / 4^... see slice_bits).
/// @return rho.
int ozaki_slices_rho(int significand_bits, std::int64_t k);

/// The bits each slice keeps: 53 - rho (8 for BF16 at k <= 128; fewer as k grows).
/// @throws InvalidArgument if no bit fits (k too large for exact FP32 accumulation).
int ozaki_slice_bits(int significand_bits, std::int64_t k);

}  // namespace mixsolve::gemm
