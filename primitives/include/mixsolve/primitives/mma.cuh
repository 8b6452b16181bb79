// SPDX-License-Identifier: BSD-3-Clause
// Warp-level tensor core instructions (PTX ldmatrix and mma.sync). Fragment layouts follow the
// PTX ISA's "Matrix Fragments for mma.m16n8k*" (g = lane / 4, t = lane % 4).
#pragma once

namespace mixsolve::primitives {

// Four 8 x 8 matrices of 16-bit elements from shared memory: lane l gives the address of row
// l % 8 of matrix l / 8; register i receives this lane's part of matrix i.
__device__ __forceinline__ void load_matrix_x4(unsigned (&r)[4], unsigned shared_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address));
}

// d = a b + c on one 16 x 8 tile with FP32 accumulation: k = 16 FP16 operands.
__device__ __forceinline__ void mma_16x8x16_fp16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                 const float (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
                 "f"(c[3]));
}

// d = a b + c on one 16 x 8 tile with FP32 accumulation: k = 8 TF32 operands.
__device__ __forceinline__ void mma_16x8x8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                const float (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
                 "f"(c[3]));
}

// c += a b on the FP64 tensor cores, one 16 x 8 tile, k = 8. A lane holds A(g, t), A(g + 8, t),
// A(g, t + 4), A(g + 8, t + 4) of the 16 x 8 A; B(t, g), B(t + 4, g) of the 8 x 8 B; and C(g, 2t),
// C(g, 2t + 1), C(g + 8, 2t), C(g + 8, 2t + 1) of the 16 x 8 C. Before sm_90 (m16n8k8 for f64
// needs it) it is four m8n8k4 products, whose fragments are these quarters.
__device__ __forceinline__ void mma_16x8x8_fp64(double (&c)[4], const double (&a)[4], const double (&b)[2]) {
#if __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
  for (int h = 0; h < 2; ++h)    // rows g, then g + 8
    for (int k = 0; k < 2; ++k)  // columns t of A and rows t of B, then t + 4
      asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
          : "+d"(c[2 * h]), "+d"(c[2 * h + 1])
          : "d"(a[h + 2 * k]), "d"(b[k]));
#endif
}

}  // namespace mixsolve::primitives
