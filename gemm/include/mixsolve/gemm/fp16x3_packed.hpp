// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// cublas-fp16x3's product with its B operand split once and reused by several products.
///
/// cublas-fp16x3 (backend.hpp, registry) splits both operands into FP16 hi/lo (Markidis, seed 000
/// eqs. 1-4) on every call, after a pass that finds each operand's largest |value| for its
/// power-of-two scale. An LU's L21 enters several products (the trailing updates of its panel on
/// the look-ahead stream and on the bulk stream), and GEPP's multipliers satisfy |L| <= 1, so its
/// scale is known in advance: fp16x3_pack splits it once at a given scale, and
/// fp16x3_gemm_packed_b multiplies with the packed copy, splitting only A.
#pragma once

#include <cstdint>

#include "mixsolve/core/context.hpp"

namespace mixsolve::gemm {

/// The scale 2^shift for an operand with |b| <= 1 (GEPP's L): 2^15 |b| <= 32768, within FP16's
/// largest finite value 65504; the same shift as fp16x3's own choice for a largest |b| in [1/2, 1).
constexpr int kFp16x3UnitBoundShift = 15;

/// The packed layout. B is k x n (column-major, the inner dimension along columns). Its inner
/// dimension is cut into blocks of `block` rows (the last may be shorter, kb rows); column j of
/// the packed copy holds, per block in order, [hi(kb) lo(kb) hi(kb)] of 2^shift B(block rows, j)
/// as FP16 bits: 3 k halves per column, `ld` halves apart. Blocks let products over a range of
/// blocks (an LU's group of panels, or one panel of it) use the same copy.
struct Fp16x3PackedB {
  /// FP16 bits of the first block row used (device memory).
  const std::uint16_t* data = nullptr;
  /// Halves between consecutive columns, >= 3 k.
  std::int64_t ld = 0;
  /// Rows per block of the inner dimension, > 0.
  std::int64_t block = 0;
  /// B was scaled by 2^shift; in [-63, 63].
  int shift = 0;
};

/// Where a product's kernel may run. Anywhere: cuBLAS's choice, which on Hopper launches its FP16
/// GEMMs with thread block clusters. A cluster needs several free multiprocessors of one GPC at
/// once: beside a long kernel that holds most multiprocessors it can wait for the whole of that
/// kernel (the device LU's look-ahead updates beside its bulk update: up to 5.7 ms each, 60 ms of
/// a 241 ms LU at n = 32768 on an H100). Unclustered: a kernel whose blocks start on any free
/// multiprocessor.
enum class KernelPlacement { Anywhere, Unclustered };

/// Writes one block of the packed copy: for j < n, packed[j ld_packed + (0, k, 2k) + i] =
/// (hi, lo, hi) of 2^shift b(i, j), i < k (b column-major, leading dimension ldb; a device
/// pointer). The caller guarantees |b| 2^shift < 65520 (else hi is Inf, which the product
/// carries into C). On ctx's stream. Throws InvalidArgument naming a bad size, leading
/// dimension, shift (outside [-63, 63]) or null pointer.
/// Launched without synchronisation; k == 0 or n == 0 does nothing.
/// @param ctx       a Context with a GPU; the kernel runs on ctx.stream().
/// @param k         rows of b (the inner dimension of this block), >= 0.
/// @param n         columns of b, >= 0.
/// @param b         device pointer to the k x n FP32 block; read.
/// @param ldb       leading dimension of b, >= k.
/// @param shift     the scale 2^shift (e.g. kFp16x3UnitBoundShift), in [-63, 63].
/// @param packed    device pointer to the block's place in the packed copy; written.
/// @param ld_packed halves between consecutive columns of the packed copy, >= 3 k.
/// @throws InvalidArgument for k or n < 0, a shift outside [-63, 63], and (k, n > 0) ldb < k,
///                         ld_packed < 3 k or a null b or packed.
/// @throws NotSupported    if ctx is host-only.
/// @throws DeviceError     if the kernel launch fails.
void fp16x3_pack(Context& ctx, std::int64_t k, std::int64_t n, const float* b, std::int64_t ldb, int shift,
                 std::uint16_t* packed, std::int64_t ld_packed);

/// C = alpha A B + beta C (A m x k, C m x n, column-major; device pointers) as cublas-fp16x3
/// computes it: A is scaled by its own power of two (found on the device) and split, and
/// [A_hi A_hi A_lo] [B_hi; B_lo; B_hi] is one cuBLAS FP16 GEMM with FP32 accumulation, per block
/// of B's packing (the product's k rows start at a block boundary of the packing). As in the
/// backend with check_range off, an entry of A whose scaled hi part overflows (only beyond 2^78)
/// becomes Inf in C, unreported. On ctx's stream, with ctx's workspace; no synchronisation.
/// Throws InvalidArgument naming a bad size, leading dimension, block, shift or null pointer.
/// `placement` Unclustered: the GEMM goes through cuBLASLt with a kernel launched without thread
/// block clusters (else, where no algorithm allows that, as for Anywhere; see KernelPlacement).
/// m == 0 or n == 0 does nothing.
/// @param ctx       a Context with a GPU: stream, cuBLAS handle and workspace.
/// @param m         rows of A and C, >= 0.
/// @param n         columns of C (and of the packed B), >= 0.
/// @param k         the inner dimension, > 0 where m, n > 0.
/// @param alpha     scale of the product (host value).
/// @param a         device pointer to A (m x k, FP32); read.
/// @param lda       leading dimension of A, >= m.
/// @param b         the packed B (fp16x3_pack()); its data, device memory, is read.
/// @param beta      scale of C's old value (host value).
/// @param c         device pointer to C (m x n, FP32); read and written.
/// @param ldc       leading dimension of C, >= m.
/// @param placement Anywhere (cuBLAS's choice) or Unclustered (see KernelPlacement).
/// @throws InvalidArgument for m, n or k < 0, and (m, n > 0) k == 0, b.block <= 0, b.shift
///                         outside [-63, 63], lda < m, b.ld < 3 k, ldc < m, or a null a,
///                         b.data or c.
/// @throws NotSupported    if m, n, 3 k, b.ld or ldc exceeds cuBLAS's 32-bit limit, or ctx is
///                         host-only.
/// @throws DeviceError     if a CUDA, cuBLAS or cuBLASLt call fails.
void fp16x3_gemm_packed_b(Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                          std::int64_t lda, const Fp16x3PackedB& b, float beta, float* c, std::int64_t ldc,
                          KernelPlacement placement = KernelPlacement::Anywhere);

}  // namespace mixsolve::gemm
