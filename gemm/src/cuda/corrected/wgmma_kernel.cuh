// Fused error-corrected SGEMM on Hopper tensor cores with wgmma (sm_90a).
//
// Same packed hi/lo operands, 128 x 128 CTA tile and 128-byte-swizzled shared-memory stages as the
// mma.sync kernel (the swizzle is wgmma's 128B K-major layout). Two warpgroups each compute a
// 64 x 128 half of the tile with wgmma.m64n128k16 (FP16) or m64n128k8 (TF32), operands read from
// shared memory through matrix descriptors. cp.async loads run one slice ahead.
//
// Accumulation, seed 000 eq. (20) and §3.2, per 128-byte k-slice (64 FP16 / 32 TF32 values of k):
//   x    = A_lo B_hi + A_hi B_lo      inside the TC, from zero (corrections, scaled by 2^11)
//   x   *= 2^-11                      exact
//   x   += A_hi B_hi                  inside the TC (the main product of this slice)
//   part += x                         FP32 add, round to nearest, outside the TC
// and every 8 slices acc += part: RZ truncation only touches one slice's partial sum, and the
// sequential FP32 additions grow like k/512 + 8, not k/64. (Measured alternative, git history:
// corrections in a third accumulator kept in the TC over all of k and one-level sums were 3-9%
// faster on the H100 but about twice the error, and lost to split-K SGEMM at n = 256, k = 8192.)
#pragma once

#include <cstdint>

#include "mma_sync_kernel.cuh"
#include "pack.cuh"
#include "scheme.hpp"

namespace mixsolve::gemm::corrected {

struct WgmmaConfig {
  static constexpr int kTileM = 128, kTileN = 128;
  static constexpr int kRowBytes = 128;  // bytes of k per stage and row (the 128B swizzle width)
  static constexpr int kChunksPerRow = kRowBytes / 16;
  static constexpr int kKSteps = kRowBytes / 32;  // wgmma k-steps (32 bytes of k each) per slice
  static constexpr int kStages = 3;
  static constexpr int kSlicesPerPart = 8;  // slices summed in `part` before it goes into acc
  static constexpr int kThreads = 256;      // two warpgroups
  static constexpr int kOperandBytes = kTileM * kRowBytes;  // 16 KiB
  static constexpr int kStageBytes = 4 * kOperandBytes;      // 64 KiB
  static constexpr int kSharedBytes = kStages * kStageBytes + 1024;  // + alignment slack
};

struct WgmmaParams {
  const void* a_hi;
  std::int64_t a_lo_offset;  // bytes from a_hi to a_lo
  const void* b_hi;
  std::int64_t b_lo_offset;
  std::int64_t padded_depth_bytes;
  int k_tiles;
  std::int64_t m, n;
  float alpha, beta;
  float* c;
  std::int64_t ldc;
  const unsigned int* row_max_a;
  const unsigned int* row_max_b;
};

namespace wgmma_detail {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MIXSOLVE_HAS_WGMMA 1
#else
#define MIXSOLVE_HAS_WGMMA 0
#endif

// Shared-memory matrix descriptor of a K-major operand in the 128-byte swizzle layout: rows of
// 128 bytes, 8-row groups 1024 bytes apart (SBO), leading byte offset unused for this layout.
__device__ __forceinline__ std::uint64_t make_descriptor(unsigned smem_address) {
  std::uint64_t desc = 0;
  desc |= static_cast<std::uint64_t>((smem_address & 0x3FFFF) >> 4);
  desc |= static_cast<std::uint64_t>(1) << 16;
  desc |= static_cast<std::uint64_t>(1024 >> 4) << 32;
  desc |= static_cast<std::uint64_t>(1) << 62;  // 128B swizzle
  return desc;
}

#if MIXSOLVE_HAS_WGMMA
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void wgmma_m64n128k16_f16(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_m64n128k8_tf32(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#endif

template <Element E>
__device__ __forceinline__ void wgmma(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b, int accumulate) {
#if MIXSOLVE_HAS_WGMMA
  if constexpr (E == Element::Fp16) wgmma_m64n128k16_f16(d, desc_a, desc_b, accumulate);
  else wgmma_m64n128k8_tf32(d, desc_a, desc_b, accumulate);
#endif
}

// Keeps the compiler from moving accesses to the accumulator registers across wgmma fences.
__device__ __forceinline__ void fence_registers(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace wgmma_detail

// Writes 1 to *out when the wgmma path was compiled (sm_90a), so the host can choose it.
__global__ void wgmma_probe_kernel(int* out) { *out = MIXSOLVE_HAS_WGMMA; }

template <Element E>
__global__ void __launch_bounds__(WgmmaConfig::kThreads, 1) corrected_sgemm_wgmma_kernel(WgmmaParams p) {
#if MIXSOLVE_HAS_WGMMA
  using Cfg = WgmmaConfig;
  using namespace wgmma_detail;
  using mma_detail::cp_async_16;
  using mma_detail::cp_async_commit;
  using mma_detail::cp_async_wait;
  extern __shared__ unsigned char shared_raw[];
  // wgmma's swizzle pattern repeats every 1024 bytes: align the stages to it.
  const unsigned shared_base = (mma_detail::smem_address(shared_raw) + 1023u) & ~1023u;

  const int tid = threadIdx.x, warpgroup = tid / 128, lane_in_group = tid % 128;
  const std::int64_t tile_m0 = std::int64_t(blockIdx.x) * Cfg::kTileM;
  const std::int64_t tile_n0 = std::int64_t(blockIdx.y) * Cfg::kTileN;
  const char* a_source = static_cast<const char*>(p.a_hi) + tile_m0 * p.padded_depth_bytes;
  const char* b_source = static_cast<const char*>(p.b_hi) + tile_n0 * p.padded_depth_bytes;

  auto load_stage = [&](int stage, int k_tile) {
    const unsigned stage_base = shared_base + stage * Cfg::kStageBytes;
#pragma unroll
    for (int operand = 0; operand < 4; ++operand)
#pragma unroll
      for (int i = 0; i < Cfg::kTileM * Cfg::kChunksPerRow / Cfg::kThreads; ++i) {
        const int chunk_id = tid + i * Cfg::kThreads;
        const int row = chunk_id / Cfg::kChunksPerRow, chunk = chunk_id % Cfg::kChunksPerRow;
        const char* src = (operand < 2 ? a_source + (operand & 1) * p.a_lo_offset : b_source + (operand & 1) * p.b_lo_offset) +
                          row * p.padded_depth_bytes + std::int64_t(k_tile) * Cfg::kRowBytes + chunk * 16;
        cp_async_16(stage_base + operand * Cfg::kOperandBytes + mma_detail::swizzled_offset(row, chunk), src);
      }
  };

  float acc[64], x[64], part[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = x[i] = part[i] = 0.0f;

  // Prologue: slices 0 and 1 in flight. Each iteration waits for its own wgmmas, so the stage of
  // slice k_tile - 1 is free once every thread has passed the next barrier.
  load_stage(0, 0);
  cp_async_commit();
  if (p.k_tiles > 1) load_stage(1, 1);
  cp_async_commit();

  for (int k_tile = 0; k_tile < p.k_tiles; ++k_tile) {
    cp_async_wait<1>();  // slice k_tile has landed (the next one may still be in flight)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async writes -> wgmma reads
    __syncthreads();
    // Every wgmma of slice k_tile - 1 completed before the barrier, so its stage is free: fetch
    // slice k_tile + 2 into it.
    if (k_tile + 2 < p.k_tiles) load_stage((k_tile + 2) % Cfg::kStages, k_tile + 2);
    cp_async_commit();

    const unsigned stage_base = shared_base + (k_tile % Cfg::kStages) * Cfg::kStageBytes;
    const unsigned a_hi = stage_base + 0 * Cfg::kOperandBytes + warpgroup * 64 * Cfg::kRowBytes;
    const unsigned a_lo = stage_base + 1 * Cfg::kOperandBytes + warpgroup * 64 * Cfg::kRowBytes;
    const unsigned b_hi = stage_base + 2 * Cfg::kOperandBytes;
    const unsigned b_lo = stage_base + 3 * Cfg::kOperandBytes;

    fence_registers(x);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < Cfg::kKSteps; ++s) {
      wgmma<E>(x, make_descriptor(a_lo + 32 * s), make_descriptor(b_hi + 32 * s), s > 0);
      wgmma<E>(x, make_descriptor(a_hi + 32 * s), make_descriptor(b_lo + 32 * s), 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(x);
#pragma unroll
    for (int i = 0; i < 64; ++i) x[i] *= 0x1p-11f;  // seed 000 eq. (20): / 2^11
    fence_registers(x);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < Cfg::kKSteps; ++s)
      wgmma<E>(x, make_descriptor(a_hi + 32 * s), make_descriptor(b_hi + 32 * s), 1);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(x);
#pragma unroll
    for (int i = 0; i < 64; ++i) part[i] += x[i];  // outside the TC: RN (§3.2)
    if ((k_tile + 1) % Cfg::kSlicesPerPart == 0 || k_tile + 1 == p.k_tiles) {
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        acc[i] += part[i];
        part[i] = 0.0f;
      }
    }
  }
  cp_async_wait<0>();

  // Epilogue. Register 4*nb + r of the m64n128 accumulator holds row 16*warp + lane/4 + 8*(r/2),
  // column 8*nb + 2*(lane%4) + r%2 of the warpgroup's 64 x 128 tile.
  const int warp = lane_in_group / 32, lane = lane_in_group % 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::int64_t row = tile_m0 + warpgroup * 64 + warp * 16 + lane / 4 + half * 8;
    if (row >= p.m) continue;
    const int row_shift = p.row_max_a ? row_scale_exponent(p.row_max_a[row]) : 0;
#pragma unroll
    for (int nb = 0; nb < 16; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const std::int64_t col = tile_n0 + nb * 8 + (lane % 4) * 2 + e;
        if (col >= p.n) continue;
        const int r = nb * 4 + half * 2 + e;
        float v = acc[r];
        if (p.row_max_a) v = scalbnf(v, -(row_shift + row_scale_exponent(p.row_max_b[col])));
        float* out = p.c + row + col * p.ldc;
        *out = p.beta == 0.0f ? p.alpha * v : fmaf(p.alpha, v, p.beta * *out);
      }
  }
#endif
}

}  // namespace mixsolve::gemm::corrected
