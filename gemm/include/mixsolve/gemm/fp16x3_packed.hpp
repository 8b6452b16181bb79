// SPDX-License-Identifier: BSD-3-Clause
// cublas-fp16x3's product with its B operand split once and reused by several products.
//
// cublas-fp16x3 (backend.hpp, registry) splits both operands into FP16 hi/lo (Markidis, seed 000
// eqs. 1-4) on every call, after a pass that finds each operand's largest |value| for its
// power-of-two scale. An LU's L21 enters several products (the trailing updates of its panel on
// the look-ahead stream and on the bulk stream), and GEPP's multipliers satisfy |L| <= 1, so its
// scale is known in advance: fp16x3_pack splits it once at a given scale, and
// fp16x3_gemm_packed_b multiplies with the packed copy, splitting only A.
#pragma once

#include <cstdint>

#include "mixsolve/core/context.hpp"

namespace mixsolve::gemm {

// The scale 2^shift for an operand with |b| <= 1 (GEPP's L): 2^15 |b| <= 32768, within FP16's
// largest finite value 65504; the same shift as fp16x3's own choice for a largest |b| in [1/2, 1).
constexpr int kFp16x3UnitBoundShift = 15;

// The packed layout. B is k x n (column-major, the inner dimension along columns). Its inner
// dimension is cut into blocks of `block` rows (the last may be shorter, kb rows); column j of
// the packed copy holds, per block in order, [hi(kb) lo(kb) hi(kb)] of 2^shift B(block rows, j)
// as FP16 bits: 3 k halves per column, `ld` halves apart. Blocks let products over a range of
// blocks (an LU's group of panels, or one panel of it) use the same copy.
struct Fp16x3PackedB {
  const std::uint16_t* data = nullptr;  // FP16 bits of the first block row used
  std::int64_t ld = 0;                  // halves between consecutive columns, >= 3 k
  std::int64_t block = 0;               // rows per block of the inner dimension
  int shift = 0;                        // B was scaled by 2^shift
};

// Where a product's kernel may run. Anywhere: cuBLAS's choice, which on Hopper launches its FP16
// GEMMs with thread block clusters. A cluster needs several free multiprocessors of one GPC at
// once: beside a long kernel that holds most multiprocessors it can wait for the whole of that
// kernel (the device LU's look-ahead updates beside its bulk update: up to 5.7 ms each, 60 ms of
// a 241 ms LU at n = 32768 on an H100). Unclustered: a kernel whose blocks start on any free
// multiprocessor.
enum class KernelPlacement { Anywhere, Unclustered };

// Writes one block of the packed copy: for j < n, packed[j ld_packed + (0, k, 2k) + i] =
// (hi, lo, hi) of 2^shift b(i, j), i < k (b column-major, leading dimension ldb; a device
// pointer). The caller guarantees |b| 2^shift < 65520 (else hi is Inf, which the product
// carries into C). On ctx's stream. Throws InvalidArgument naming a bad size, leading
// dimension, shift (outside [-63, 63]) or null pointer.
void fp16x3_pack(Context& ctx, std::int64_t k, std::int64_t n, const float* b, std::int64_t ldb, int shift,
                 std::uint16_t* packed, std::int64_t ld_packed);

// C = alpha A B + beta C (A m x k, C m x n, column-major; device pointers) as cublas-fp16x3
// computes it: A is scaled by its own power of two (found on the device) and split, and
// [A_hi A_hi A_lo] [B_hi; B_lo; B_hi] is one cuBLAS FP16 GEMM with FP32 accumulation, per block
// of B's packing (the product's k rows start at a block boundary of the packing). As in the
// backend with check_range off, an entry of A whose scaled hi part overflows (only beyond 2^78)
// becomes Inf in C, unreported. On ctx's stream, with ctx's workspace; no synchronisation.
// Throws InvalidArgument naming a bad size, leading dimension, block, shift or null pointer.
// `placement` Unclustered: the GEMM goes through cuBLASLt with a kernel launched without thread
// block clusters (else, where no algorithm allows that, as for Anywhere; see KernelPlacement).
void fp16x3_gemm_packed_b(Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                          std::int64_t lda, const Fp16x3PackedB& b, float beta, float* c, std::int64_t ldc,
                          KernelPlacement placement = KernelPlacement::Anywhere);

}  // namespace mixsolve::gemm
