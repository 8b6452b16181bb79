// SPDX-License-Identifier: BSD-3-Clause
// tf32tf32 for a short output (m <= 256 rows) and a long, unpacked op(B), on Hopper (sm_90a).
//
// The products this serves are the V^T C of a blocked Householder QR: 256 x n outputs, k in the
// tens of thousands, op(B) = C a k x n column-major FP32 matrix. The general kernel
// (wgmma_kernel.cuh) packs op(B) into hi and lo planes first (read 4 bytes, write 8) and reads them
// once per 128-row output tile (8 bytes, twice for 256 rows): 28 bytes per element of op(B) where
// the product needs 4, and at 256 output rows the passes over op(B) take as long as the products.
//
// Here the CTA computes the transposed tile: out^T (64 columns of op(B) x 256 rows of op(A)) =
// op(B)^T op(A)^T. op(B)^T is wgmma's A operand, which may come from registers: TMA brings 64
// columns x 32 values of k of op(B) straight from user memory (column-major op(B) is K-major for
// this product), and each consumer thread loads its fragment from shared memory and splits it
// into TF32 hi and lo (Ootomo & Yokota 2021, §3.3, cvt.rna) in registers, so op(B) is read from memory once
// and never written. op(A) (at most 256 x k) is packed into hi / lo planes as in the general
// kernel; it is small, and the CTAs working on one k-chunk share it in L2.
//
// Warp-specialized as the general kernel: warpgroup 0's first thread loads each 128-byte k-slice
// (op(A) hi and lo: 256 rows each, op(B): 64 rows) into a 3-stage ring; warpgroups 1 and 2 each
// take 128 of the 256 op(A) rows with wgmma.m64n128k8 (A from registers, B from a shared-memory
// descriptor). Accumulation is the general kernel's (Ootomo & Yokota 2021, eq. (20) and §3.2; TF32 needs no
// residual scaling): per slice the three products of each 8-wide k-step go into one tensor-core
// chain x from zero, part += x outside the tensor core (round to nearest), and acc += part every 8
// slices. The k-steps alternate between two fragment register sets so that the loads and splits
// of one step overlap the products of the previous one. Later k-steps' corrections thus meet an x
// that already holds main products (the general kernel adds all corrections first): the error is
// 1.3-2x the general kernel's, 0.20-0.33 of SGEMM's (docs/kernels.md, with the two-chain variant
// that matched the general kernel's error at 13% less speed).
//
// Split-K as in the general kernel (split_k.hpp): work items are (tile, k-chunk) pairs where the
// tiles leave multiprocessors idle; partial tiles go to FP32 slabs that split_k_reduce_kernel sums
// in split order.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "mixsolve/formats/conversions.hpp"
#include "mixsolve/primitives/async_copy.cuh"
#include "skinny_route.hpp"
#include "wgmma_kernel.cuh"

namespace mixsolve::gemm::corrected {

struct SkinnyWgmmaConfig {
  static constexpr int kTileM = 256;              // rows of op(A) (output rows) per CTA: wgmma N, 128 per consumer
  static constexpr int kTileN = 64;               // columns of op(B) (output columns) per CTA: wgmma M
  static constexpr int kRowBytes = 128;           // bytes of k per stage and row: 32 TF32 values
  static constexpr int kKSteps = kRowBytes / 32;  // wgmma k-steps (8 values) per slice
  static constexpr int kStages = 3;
  static constexpr int kSlicesPerPart = 8;
  static constexpr int kThreads = 384;                    // producer warpgroup + two consumer warpgroups
  static constexpr int kPlaneBytes = kTileM * kRowBytes;  // 32 KiB: one of op(A)'s hi / lo
  static constexpr int kRawBytes = kTileN * kRowBytes;    // 8 KiB of op(B)
  static constexpr int kStageBytes = 2 * kPlaneBytes + kRawBytes;
  static constexpr int kSharedBytes = kStages * kStageBytes + 1024 + 2 * kStages * 8;  // + alignment slack, barriers
};
static_assert(kSplitSlicesPerPart == SkinnyWgmmaConfig::kSlicesPerPart, "split-K chunks are whole parts");
static_assert(kSkinnyMaxRows == SkinnyWgmmaConfig::kTileM, "the routing (skinny_route.hpp) matches the tile");
static_assert(SkinnyWgmmaConfig::kStages >= 2, "a consumer waits for the next stage while it holds this one");
static_assert(SkinnyWgmmaConfig::kStageBytes % 1024 == 0, "stages keep the 128-byte swizzle's 1024-byte alignment");

struct SkinnyWgmmaParams {
  const void* a_hi;     // packed op(A): tiles_m * kTileM rows of padded_depth_bytes, hi rows then lo rows
  std::int64_t a_rows;  // tiles_m * kTileM: the lo rows start there
  std::int64_t m, n;
  int k_tiles;  // 128-byte slices of k
  int tiles_m, tiles_n;
  float alpha, beta;
  float* c;
  std::int64_t ldc;
  int splits, chunk_slices;  // as WgmmaParams
  SplitKSlabs slabs;         // splits > 1: [splits][tiles_n * kTileN][tiles_m * kTileM]
};

namespace wgmma_detail {
#if MIXSOLVE_HAS_WGMMA
// wgmma.m64n128k8 TF32 with A from registers: thread t of the warpgroup holds A's rows
// 16 (t / 32) + (t % 32) / 4 (+ 8 in a[1], a[3]) and columns t % 4 (+ 4 in a[2], a[3]) (PTX ISA,
// register fragment of A for 32-bit types).
__device__ __forceinline__ void wgmma_m64n128k8_tf32_rs(float (&d)[64], const std::uint32_t (&a)[4],
                                                        std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " MIXSOLVE_WGMMA_D64
      ", {%64,%65,%66,%67}, %68, p, 1, 1;\n}\n"
      : MIXSOLVE_WGMMA_D64_OPERANDS(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
#endif

// The tf32tf32 split (Ootomo & Yokota 2021, §3.3, unscaled residual): hi = cvt.rna(v), lo = cvt.rna(v - hi).
// Without formats::split_tf32tf32_unscaled's NaN and Inf cases: a non-finite v gives a NaN lo
// (Inf - Inf), so its output column is NaN where the packed operands may give Inf; non-finite
// either way (the products hi x lo can make NaN of an Inf there too).
__device__ __forceinline__ void split_tf32(float v, std::uint32_t& hi, std::uint32_t& lo) {
  hi = formats::float_to_tf32_bits_rna(v);
  lo = formats::float_to_tf32_bits_rna(v - __uint_as_float(hi));
}

// Keeps fragment registers allocated (and unchanged) up to this point: a wgmma still in flight
// may read them.
__device__ __forceinline__ void fence_fragment(std::uint32_t (&a)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[i])::"memory");
}
}  // namespace wgmma_detail

// Work item `item` of the skinny kernel: tiles in plain order within a chunk (tiles_m is 1 for
// m <= 256, so the CTAs in flight walk neighbouring columns of op(B) and share op(A)'s chunk).
__device__ __forceinline__ WorkItem skinny_work_item(const SkinnyWgmmaParams& p, int item) {
  const int tiles = p.tiles_m * p.tiles_n;
  const int split = item / tiles, tile = item - split * tiles;
  const int k_begin = split * p.chunk_slices;
  return {{tile % p.tiles_m, tile / p.tiles_m}, split, k_begin, min(k_begin + p.chunk_slices, p.k_tiles)};
}

// out[i + j * ld] = alpha * acc (+ beta * out) for one consumer's transposed 64 x 128 tile:
// register 4 * nb + r holds column j = col0 + 16 * warp + lane / 4 + 8 * (r / 2) of op(B) and row
// i = row0 + 8 * nb + 2 * (lane % 4) + r % 2 of op(A).
__device__ __forceinline__ void store_skinny_tile(const SkinnyWgmmaParams& p, const float (&acc)[64], std::int64_t row0,
                                                  std::int64_t col0, int lane_in_group, float* out, std::int64_t ld,
                                                  float beta) {
  const int warp = lane_in_group / 32, lane = lane_in_group % 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::int64_t j = col0 + warp * 16 + lane / 4 + 8 * half;
    if (j >= p.n) continue;
#pragma unroll
    for (int nb = 0; nb < 16; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const std::int64_t i = row0 + nb * 8 + (lane % 4) * 2 + e;
        if (i >= p.m) continue;
        float* o = out + i + j * ld;
        const float v = acc[nb * 4 + half * 2 + e];
        *o = beta == 0.0f ? p.alpha * v : fmaf(p.alpha, v, beta * *o);
      }
  }
}

// map_a: packed op(A), boxes of kTileM rows x 128 bytes; map_b: op(B) in user memory, k
// innermost, boxes of kTileN columns x 32 values (both in the 128-byte swizzle, zero fill beyond
// the matrix).
__global__ void __launch_bounds__(SkinnyWgmmaConfig::kThreads, 1)
    tf32tf32_skinny_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                                 SkinnyWgmmaParams p) {
#if MIXSOLVE_HAS_WGMMA
  using Cfg = SkinnyWgmmaConfig;
  using namespace wgmma_detail;
  extern __shared__ unsigned char shared_raw[];
  const unsigned shared_origin = primitives::shared_address(shared_raw);
  const unsigned shared_base = (shared_origin + 1023u) & ~1023u;
  const unsigned full_barriers = shared_base + Cfg::kStages * Cfg::kStageBytes;
  const unsigned empty_barriers = full_barriers + Cfg::kStages * 8;
  const int tid = threadIdx.x, warpgroup = tid / 128, lane_in_group = tid % 128;
  const int items = p.tiles_m * p.tiles_n * p.splits;

  if (tid == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbarrier_init(full_barriers + 8 * s, 1);
      mbarrier_init(empty_barriers + 8 * s, 256);
    }
  }
  __syncthreads();

  if (warpgroup == 0) {  // producer
    set_max_registers_dec<40>();
    if (lane_in_group == 0) {
      int slice = 0;
      for (int item = blockIdx.x; item < items; item += gridDim.x) {
        const WorkItem w = skinny_work_item(p, item);
        const int row_a = w.tile.m * Cfg::kTileM, col_b = w.tile.n * Cfg::kTileN;
        for (int k_tile = w.k_begin; k_tile < w.k_end; ++k_tile, ++slice) {
          const int stage = slice % Cfg::kStages, round = slice / Cfg::kStages;
          if (round > 0) mbarrier_wait(empty_barriers + 8 * stage, (round - 1) & 1);
          const unsigned full = full_barriers + 8 * stage;
          const unsigned stage_base = shared_base + stage * Cfg::kStageBytes;
          const int x = k_tile * (Cfg::kRowBytes / 4);
          mbarrier_arrive_expect_bytes(full, Cfg::kStageBytes);  // out-of-bounds boxes count in full
          tma_load_2d(stage_base, map_a, x, row_a, full);
          tma_load_2d(stage_base + Cfg::kPlaneBytes, map_a, x, int(p.a_rows) + row_a, full);
          tma_load_2d(stage_base + 2 * Cfg::kPlaneBytes, map_b, x, col_b, full);
        }
      }
    }
  } else {  // consumers
    set_max_registers_inc<232>();
    const int consumer = warpgroup - 1;  // rows consumer * 128 .. +127 of op(A)'s tile
    const int warp = lane_in_group / 32, lane = lane_in_group % 32;
    // This thread's fragment rows of the op(B) tile (= wgmma rows) and its column within a k-step.
    const int frag_row = warp * 16 + lane / 4, frag_col = lane % 4;
    // Stage `stage`'s op(B) tile, and this thread's four values of k-step s in it: the 128-byte rows
    // are swizzled, element (row, col) in 16-byte chunk (col / 4) XOR (row % 8). Plain loads, so
    // that the compiler can schedule them.
    const auto raw_tile = [&](int stage) {
      return shared_raw + (shared_base - shared_origin) + stage * Cfg::kStageBytes + 2 * Cfg::kPlaneBytes;
    };
    const auto load_raw_step = [&](const unsigned char* tile, int s, float(&out)[4]) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int row = frag_row + 8 * (r & 1), col = 8 * s + frag_col + 4 * (r >> 1);
        out[r] = *reinterpret_cast<const float*>(tile + row * Cfg::kRowBytes +
                                                 ((((col >> 2) ^ (row & 7)) << 4) | ((col & 3) << 2)));
      }
    };
    int slice = 0;
    for (int item = blockIdx.x; item < items; item += gridDim.x) {
      const WorkItem w = skinny_work_item(p, item);
      float acc[64], x[64], part[64];
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = x[i] = part[i] = 0.0f;
      // This thread's fragment of a k-step (PTX register layout of A): raw values one step ahead
      // of their split (the next slice's first step during this slice's last), splits in two
      // register sets alternating between the steps.
      float raw[2][4];
      std::uint32_t hi[2][4], lo[2][4];

      for (int k_tile = w.k_begin; k_tile < w.k_end; ++k_tile, ++slice) {
        const int stage = slice % Cfg::kStages, round = slice / Cfg::kStages;
        mbarrier_wait(full_barriers + 8 * stage, round & 1);
        const unsigned stage_base = shared_base + stage * Cfg::kStageBytes;
        const unsigned a_hi = stage_base + consumer * 128 * Cfg::kRowBytes;
        const unsigned a_lo = a_hi + Cfg::kPlaneBytes;
        if (k_tile == w.k_begin) load_raw_step(raw_tile(stage), 0, raw[0]);
        fence_registers(x);
#pragma unroll
        for (int s = 0; s < Cfg::kKSteps; ++s) {
          const int buf = s & 1;
          if (s >= 2) {  // the products of step s - 2, which read this register set, are done
            wgmma_wait<1>();
            fence_fragment(hi[buf]);
            fence_fragment(lo[buf]);
          }
#pragma unroll
          for (int r = 0; r < 4; ++r) split_tf32(raw[buf][r], hi[buf][r], lo[buf][r]);
          if (s + 1 < Cfg::kKSteps) {
            load_raw_step(raw_tile(stage), s + 1, raw[buf ^ 1]);
          } else if (k_tile + 1 < w.k_end) {
            // Before this step's products are issued: after them was no faster (docs/kernels.md).
            const int next = slice + 1;
            mbarrier_wait(full_barriers + 8 * (next % Cfg::kStages), (next / Cfg::kStages) & 1);
            load_raw_step(raw_tile(next % Cfg::kStages), 0, raw[buf ^ 1]);
          }
          wgmma_fence();
          wgmma_m64n128k8_tf32_rs(x, lo[buf], make_descriptor(a_hi + 32 * s), s > 0);  // corrections,
          wgmma_m64n128k8_tf32_rs(x, hi[buf], make_descriptor(a_lo + 32 * s), 1);
          wgmma_m64n128k8_tf32_rs(x, hi[buf], make_descriptor(a_hi + 32 * s), 1);  // then the main product
          wgmma_commit();
        }
        wgmma_wait<0>();
        fence_registers(x);
        fence_fragment(hi[0]);
        fence_fragment(lo[0]);
        fence_fragment(hi[1]);
        fence_fragment(lo[1]);
        mbarrier_arrive(empty_barriers + 8 * stage);  // operands no longer read
#pragma unroll
        for (int i = 0; i < 64; ++i) part[i] += x[i];  // outside the TC: RN (§3.2)
        if ((k_tile + 1) % Cfg::kSlicesPerPart == 0 || k_tile + 1 == w.k_end) fold_part(acc, part);
      }
      const bool split = p.splits > 1;
      const std::int64_t row0 = std::int64_t(w.tile.m) * Cfg::kTileM + consumer * 128;
      const std::int64_t col0 = std::int64_t(w.tile.n) * Cfg::kTileN;
      store_skinny_tile(p, acc, row0, col0, lane_in_group, split ? p.slabs.partials + w.split * p.slabs.slab : p.c,
                        split ? p.slabs.ldw : p.ldc, split ? 0.0f : p.beta);
    }
  }
#endif
}

}  // namespace mixsolve::gemm::corrected
