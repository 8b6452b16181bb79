// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// DGEMM emulated with INT8 products and the Chinese remainder theorem: the Ozaki scheme II
/// (Uchino, Ozaki, Imamura; GEMMul8 implements it for NVIDIA GPUs), as a host reference that the
/// device backend must reproduce.
///
/// Row i of op(A) is scaled by 2^s_i and rounded to integers, A' = round(diag(2^s) A), column j
/// of op(B) likewise, B' = round(B diag(2^t)), with s_i, t_j chosen so that every |A'| and |B'|
/// is at most 2^b, b = floor((log2(M / 2) - log2 k) / 2), M = m_1 ... m_N the product of N
/// pairwise coprime moduli <= 256: then |A'B'| <= k 2^(2b) <= M / 2 and the integer product is
/// determined by its residues. For each modulus, A' mod m and B' mod m (symmetric, in
/// [-128, 127]) are INT8 matrices whose product accumulates exactly in INT32 (k <= 2^17); the N
/// residues of each entry determine A'B', which the CRT (exact limb sums, then a double-double
/// sum) turns into a double (relative error near 2^-104 before the final rounding), and
/// C = diag(2^-s) A'B' diag(2^-t). The only error is the rounding of A and B to b-bit integers
/// relative to their row's and column's largest entry: more moduli, more bits.
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

/// b for `moduli` moduli and inner dimension k: the bits each operand keeps.
/// @param moduli in [kOzaki2MinModuli, kOzaki2MaxModuli].
/// @param k      the inner dimension, in [1, kOzaki2MaxK].
/// @return floor((floor(log2 M) - 1 - ceil(log2 k)) / 2).
/// @throws InvalidArgument if moduli or k is out of range, or M is too small for k (2 moduli
///                         with k > 2^14).
int ozaki2_operand_bits(int moduli, std::int64_t k);

/// The fewest moduli that keep `bits` bits of each operand at inner dimension k (a moduli
/// parameter of 0 asks for 53: FP64's significand).
/// @param bits the operand bits asked for, >= 1.
/// @param k    the inner dimension, in [1, kOzaki2MaxK].
/// @return the count, at most kOzaki2MaxModuli (20 moduli keep at least 68 bits at any k).
int ozaki2_moduli_for_bits(int bits, std::int64_t k);

}  // namespace mixsolve::gemm
