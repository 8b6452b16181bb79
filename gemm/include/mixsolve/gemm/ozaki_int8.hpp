// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// DGEMM emulated with INT8 products and the Chinese remainder theorem: the Ozaki scheme II
/// (Uchino, Ozaki, Imamura; GEMMul8 implements it for NVIDIA GPUs), as a host reference that the
/// device backend must reproduce.
///
/// Row i of op(A) is scaled by 2^s_i and rounded to integers, A' = round(diag(2^s) A), column j
/// of op(B) likewise, B' = round(B diag(2^t)). The shifts come from each vector's 2-norm:
/// s_i = K_A - e_i with ||a_i||_2 <= 2^e_i < 2 ||a_i||_2 (1 + 2^-21), so that by Cauchy-Schwarz
/// |a'_i . b'_j| <= ||a'_i|| ||b'_j|| <= (2^K_A + sqrt(k)/2) (2^K_B + sqrt(k)/2) <= M / 2, with
/// M = m_1 ... m_N the product of N pairwise coprime moduli <= 256: the integer product is
/// determined by its residues. (Scaling by the largest |entry| instead needs the bound k 2^(2b):
/// for the same M, each vector's grid is up to sqrt(k) max|x| / ||x|| coarser.) For each
/// modulus, A' mod m and B' mod m (balanced, in [-128, 127]) are INT8 matrices whose product
/// accumulates exactly in INT32 (k <= 2^17); the N residues of each entry determine A'B', which
/// the CRT (exact limb sums, then a double-double sum) turns into a double (relative error near
/// 2^-104 before the final rounding), and C = diag(2^-s) A'B' diag(2^-t).
///
/// The only error is the rounding of A and B to their grids, 2^-s_i and 2^-t_j: with `bits`
/// (ozaki2_operand_bits) each grid is at most 2^-bits of its vector's 2-norm (to a factor
/// 1 + 2^-21), so |C_ij - (AB)_ij| <= 1.5 2^-bits sqrt(k) ||a_i|| ||b_j|| (to first order), and about
/// 2^-bits ||a_i|| ||b_j|| / sqrt(6) for rounding errors of random sign. More moduli, more bits.
#pragma once

#include <cstdint>
#include <vector>

namespace mixsolve::gemm {

/// The moduli, in the order they are taken: pairwise coprime, at most 256, each residue an INT8.
const std::vector<int>& ozaki2_moduli();

/// The columns of C that ozaki2-int8 takes per pass unless its parameter panel says otherwise:
/// cuBLAS's INT8 GEMM ran 1.6-1.7x faster on 16384 x 4096 panels than on a whole 16384 x 16384 C
/// (H100, dgemm_benchmark).
constexpr std::int64_t kOzaki2PanelColumns = 4096;

/// The number of moduli: 2 to 20 (M up to 2^155).
constexpr int kOzaki2MinModuli = 2, kOzaki2MaxModuli = 20;
/// The largest inner dimension: k 128^2 < 2^31 keeps the INT32 accumulation exact (a balanced
/// residue modulo 256 may be -128).
constexpr std::int64_t kOzaki2MaxK = (std::int64_t{1} << 31) / (128 * 128) - 1;

/// The bits of each operand for `moduli` moduli at inner dimension k: every row of op(A) and
/// column of op(B) is rounded on a grid of at most 2^-bits of its 2-norm.
/// @param moduli in [kOzaki2MinModuli, kOzaki2MaxModuli].
/// @param k      the inner dimension, in [1, kOzaki2MaxK].
/// @return K_B - 1, where K_A + K_B = floor(log2 M) - 2 and K_B = floor((floor(log2 M) - 2) / 2)
///         unless k's rounding terms need less.
/// @throws InvalidArgument if moduli or k is out of range, or M is too small for k (2 moduli
///                         with k > 63503; they keep 0 bits from k ~ 62500).
int ozaki2_operand_bits(int moduli, std::int64_t k);

/// The fewest moduli that keep `bits` bits of each operand (ozaki2_operand_bits) at inner
/// dimension k.
/// @param bits the operand bits asked for, >= 1.
/// @param k    the inner dimension, in [1, kOzaki2MaxK].
/// @return the count, at most kOzaki2MaxModuli (20 moduli keep 75 bits at any k).
int ozaki2_moduli_for_bits(int bits, std::int64_t k);

/// The bits ozaki2-int8 keeps unless asked otherwise: DGEMM's accuracy. cuBLAS DGEMM's error on
/// Nanai & Fujimoto's (2021) phi inputs (phi <= 2, n = 4096-32768) was about 0.3 u ||a_i|| ||b_j|| (its
/// rounding errors partly cancel); FP64's 53 bits in this scheme's measure give about twice
/// that, so the default keeps more (docs/ozaki.md, measured on an H100).
constexpr int kOzaki2DefaultBits = 56;

}  // namespace mixsolve::gemm
