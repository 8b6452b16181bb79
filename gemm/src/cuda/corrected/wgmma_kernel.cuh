// SPDX-License-Identifier: BSD-3-Clause
// Fused error-corrected SGEMM on Hopper tensor cores with wgmma (sm_90a), warp-specialized.
//
// Same packed hi/lo operands and 128 x 128 CTA tile as the mma.sync kernel. One thread of warpgroup
// 0 loads 128-byte k-slices of A_hi, A_lo, B_hi, B_lo with TMA (bulk tensor copies, 128-byte
// swizzle: the layout wgmma reads) into a 3-stage ring, completion counted in bytes on a "full"
// mbarrier per stage. Warpgroups 1 and 2 each compute a 64 x 128 half of the tile with
// wgmma.m64n128k16 (FP16) or m64n128k8 (TF32), operands read from shared memory through matrix
// descriptors, and arrive on the stage's "empty" mbarrier when done. There is no CTA-wide barrier
// in the main loop, so the two consumers drift apart and one's waits overlap the other's tensor
// core work. setmaxnreg moves registers to the consumers (producer 40, consumers 232). The grid is
// persistent (one CTA per multiprocessor walking the tiles in grouped order): the CTAs in flight
// work on neighbouring tiles and share their A and B slices in L2, which a 128 x 128 tile of
// four operand arrays (~96 flop per byte) needs at large n, and the producer loads the next tile
// while the consumers store the last.
//
// Split-K (split_k.hpp): where the tiles are fewer than the multiprocessors and k is long, a work
// item is a (tile, k-chunk) pair; it stores alpha times its unscaled partial tile into an FP32
// slab, and split_k_reduce_kernel sums the slabs in split order and adds beta * C. With one split
// a work item is a whole tile stored into C, as without split-K.
//
// Accumulation, Ootomo & Yokota (2021) eq. (20) and §3.2, per 128-byte k-slice (64 FP16 / 32 TF32 values of k):
//   x    = A_lo B_hi + A_hi B_lo      inside the TC, from zero (corrections)
//   x   *= 2^-11                      exact; only when the residual is scaled by 2^11 (halfhalf:
//                                     the FP16 residual needs it; the TF32 one does not)
//   x   += A_hi B_hi                  inside the TC (the main product of this slice), in chains of
//                                     kMainChain k-steps (4, or 2 for halfhalf at small k), each
//   part += x                         FP32 add, round to nearest, outside the TC
// and every 8 slices acc += part: RZ truncation only touches one slice's partial sum, and the
// sequential FP32 additions grow like k/512 + 8, not k/64.
//
// Measured alternatives (H100, notes in docs/kernels.md; code in git history): corrections in a
// third accumulator kept in the TC over all of k with one-level sums was 3-9% faster but about
// twice the error, and lost to split-K SGEMM at n = 256, k = 8192; a cooperative kernel (all 256
// threads load with cp.async, one barrier per slice) was 15% slower; a warp-specialized kernel
// whose producer used cp.async instead of TMA was 25% slower.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "mixsolve/primitives/async_copy.cuh"
#include "mma_sync_kernel.cuh"
#include "pack.cuh"
#include "scheme.hpp"
#include "split_k.hpp"

namespace mixsolve::gemm::corrected {

struct WgmmaConfig {
  static constexpr int kTileM = 128, kTileN = 128;
  static constexpr int kRowBytes = 128;           // bytes of k per stage and row (the 128B swizzle width)
  static constexpr int kKSteps = kRowBytes / 32;  // wgmma k-steps (32 bytes of k each) per slice
  static constexpr int kStages = 3;
  static constexpr int kSlicesPerPart = 8;                  // slices summed in `part` before it goes into acc
  static constexpr int kThreads = 384;                      // producer warpgroup + two consumer warpgroups
  static constexpr int kOperandBytes = kTileM * kRowBytes;  // 16 KiB
  static constexpr int kStageBytes = 4 * kOperandBytes;     // 64 KiB
  static constexpr int kBarrierBytes = 2 * kStages * 8;
  static constexpr int kSharedBytes = kStages * kStageBytes + 1024 + kBarrierBytes;  // + 1024-byte alignment slack
};
static_assert(kSplitSlicesPerPart == WgmmaConfig::kSlicesPerPart, "split-K chunks are whole parts");

// Split-K's partial tiles: slab s holds alpha times the unscaled partial sums of chunk s, element
// (i, j) at partials[s * slab + i + j * ldw].
struct SplitKSlabs {
  float* partials;
  std::int64_t slab, ldw;
};

struct WgmmaParams {
  const void* a_hi;
  std::int64_t a_lo_offset;  // bytes from a_hi to a_lo
  const void* b_hi;
  std::int64_t b_lo_offset;
  std::int64_t padded_depth_bytes;
  int k_tiles;
  std::int64_t m, n;
  int tiles_m, tiles_n;  // output tiles (grid = tiles_m * tiles_n blocks, grouped rasterization)
  float alpha, beta;
  float* c;
  std::int64_t ldc;
  const unsigned int* row_max_a;
  const unsigned int* row_max_b;
  int splits;         // k-chunks per tile (split_k.hpp); 1: work items are whole tiles, stored into C
  int chunk_slices;   // slices per k-chunk, a multiple of kSlicesPerPart; k_tiles when splits == 1
  SplitKSlabs slabs;  // splits > 1: [splits][tiles_n * kTileN][tiles_m * kTileM]
  int lower;          // 1: only the tiles on and below the diagonal (Fill::Lower; tiles_m == tiles_n)
};

// The output tiles a product computes: all, or with `lower` those with tile.n <= tile.m.
__host__ __device__ inline std::int64_t output_tiles(int tiles_m, int tiles_n, bool lower) {
  return lower ? std::int64_t(tiles_m) * (tiles_m + 1) / 2 : std::int64_t(tiles_m) * tiles_n;
}

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
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// The 64 FP32 accumulator registers of an m64n128 wgmma in its PTX operand list (%0 .. %63) and
// their inline-asm operands.
#define MIXSOLVE_WGMMA_D64                                                                                           \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%" \
  "30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%" \
  "58,%59,%60,%61,%62,%63}"
#define MIXSOLVE_WGMMA_D64_OPERANDS(d)                                                                        \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),  \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), \
      "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), \
      "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
      "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

__device__ __forceinline__ void wgmma_m64n128k16_f16(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                     int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " MIXSOLVE_WGMMA_D64 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
      : MIXSOLVE_WGMMA_D64_OPERANDS(d)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_m64n128k8_tf32(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                     int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " MIXSOLVE_WGMMA_D64 ", %64, %65, p, 1, 1;\n}\n"
      : MIXSOLVE_WGMMA_D64_OPERANDS(d)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// mbarrier helpers (shared::cta addresses).
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives on `bar` once every cp.async this thread issued so far has landed.
__device__ __forceinline__ void cp_async_arrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Bulk tensor copy (TMA) of the box at (x, y) of `map` into shared memory at `dst`; completion is
// counted in bytes on mbarrier `bar`.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap& map, int x, int y, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
template <int N>
__device__ __forceinline__ void set_max_registers_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void set_max_registers_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
#endif  // MIXSOLVE_HAS_WGMMA

template <Element E>
__device__ __forceinline__ void wgmma(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b, int accumulate) {
#if MIXSOLVE_HAS_WGMMA
  if constexpr (E == Element::Fp16)
    wgmma_m64n128k16_f16(d, desc_a, desc_b, accumulate);
  else
    wgmma_m64n128k8_tf32(d, desc_a, desc_b, accumulate);
#endif
}

// Keeps the compiler from moving accesses to the accumulator registers across wgmma fences.
__device__ __forceinline__ void fence_registers(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The two-level sum's outer step (Ootomo & Yokota 2021, §3.2): acc += part (FP32, RN), part := 0.
__device__ __forceinline__ void fold_part(float (&acc)[64], float (&part)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    acc[i] += part[i];
    part[i] = 0.0f;
  }
}

}  // namespace wgmma_detail

// out = alpha * 2^-(s_i + s_j) * acc + beta * out for one warpgroup's 64 x 128 tile at (row0, col0)
// of C (out = c, ld = ldc) or of a split-K slab (beta = 0). Register 4*nb + r of the m64n128
// accumulator holds row 16*warp + lane/4 + 8*(r/2), column 8*nb + 2*(lane%4) + r%2 of the tile.
__device__ __forceinline__ void store_wgmma_tile(const WgmmaParams& p, const float (&acc)[64], std::int64_t row0,
                                                 std::int64_t col0, int lane_in_group, float* c, std::int64_t ld,
                                                 float beta) {
  const int warp = lane_in_group / 32, lane = lane_in_group % 32;
  const bool scaled = p.row_max_a != nullptr;
  const std::int64_t rows[2] = {row0 + warp * 16 + lane / 4, row0 + warp * 16 + lane / 4 + 8};
  int row_shift[2] = {0, 0};
#pragma unroll
  for (int half = 0; half < 2; ++half)
    if (scaled && rows[half] < p.m) row_shift[half] = row_scale_exponent(p.row_max_a[rows[half]]);
#pragma unroll
  for (int nb = 0; nb < 16; ++nb)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const std::int64_t col = col0 + nb * 8 + (lane % 4) * 2 + e;
      if (col >= p.n) continue;
      const int col_shift = scaled ? row_scale_exponent(p.row_max_b[col]) : 0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        if (rows[half] >= p.m) continue;
        float v = acc[nb * 4 + half * 2 + e];
        if (scaled) v = unscale(v, row_shift[half] + col_shift);
        float* out = c + rows[half] + col * ld;
        *out = beta == 0.0f ? p.alpha * v : fmaf(p.alpha, v, beta * *out);
      }
    }
}

// One work item of the persistent grid: output tile `tile`, slices [k_begin, k_end) of k. Items go
// chunk by chunk (every tile of chunk 0, then of chunk 1, ...): where they outnumber the CTAs, the
// CTAs in flight work on one chunk of neighbouring tiles and share its A and B slices in L2.
struct WorkItem {
  TileCoordinates tile;
  int split, k_begin, k_end;
};
// Tile t of the lower triangle in row order: (0,0), (1,0), (1,1), (2,0), ...
__device__ __forceinline__ TileCoordinates lower_tile(int t) {
  int m = int((sqrtf(8.0f * float(t) + 1.0f) - 1.0f) * 0.5f);
  while (m * (m + 1) / 2 > t) --m;  // the float root may land one off either way
  while ((m + 1) * (m + 2) / 2 <= t) ++m;
  return {m, t - m * (m + 1) / 2};
}
__device__ __forceinline__ WorkItem work_item(const WgmmaParams& p, int item) {
  const int tiles = int(output_tiles(p.tiles_m, p.tiles_n, p.lower));
  const int split = item / tiles;
  const int k_begin = split * p.chunk_slices;
  const int tile = item - split * tiles;
  return {p.lower ? lower_tile(tile) : grouped_tile(tile, p.tiles_m, p.tiles_n), split, k_begin,
          min(k_begin + p.chunk_slices, p.k_tiles)};
}

// Split-K's second pass: C = (sum of the slabs in split order) + beta * C, FP32 with round to
// nearest like the kernels' acc += part (Ootomo & Yokota 2021, §3.2); a fixed order and no atomics, so the
// result is the same every run. beta == 0: C is not read.
struct SplitKReduction {
  SplitKSlabs slabs;
  int splits;
  std::int64_t m, n;
  float* c;
  std::int64_t ldc;
  float beta;
  bool lower;  // the kernel's tiles above the diagonal were not computed: they stay as they are
};
__global__ void split_k_reduce_kernel(SplitKReduction r) {
  const std::int64_t count = r.m * r.n;
  for (std::int64_t e = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t j = e / r.m, i = e - j * r.m;
    if (r.lower && j / WgmmaConfig::kTileN > i / WgmmaConfig::kTileM) continue;
    const float* w = r.slabs.partials + i + j * r.slabs.ldw;
    float sum = w[0];
    for (int s = 1; s < r.splits; ++s) sum += w[s * r.slabs.slab];
    float* out = r.c + i + j * r.ldc;
    *out = r.beta == 0.0f ? sum : fmaf(r.beta, *out, sum);
  }
}

// Writes 1 to *out when the wgmma path was compiled (sm_90a), so the host can choose it.
__global__ void wgmma_probe_kernel(int* out) { *out = MIXSOLVE_HAS_WGMMA; }

template <Element E, bool ScaledResidual, int kMainChain>
__global__ void __launch_bounds__(WgmmaConfig::kThreads, 1)
    corrected_sgemm_wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_a,
                                    const __grid_constant__ CUtensorMap map_b, WgmmaParams p) {
#if MIXSOLVE_HAS_WGMMA
  using Cfg = WgmmaConfig;
  using namespace wgmma_detail;
  extern __shared__ unsigned char shared_raw[];
  const unsigned shared_base = (primitives::shared_address(shared_raw) + 1023u) & ~1023u;
  const unsigned full_barriers = shared_base + Cfg::kStages * Cfg::kStageBytes;  // [kStages] x 8 bytes
  const unsigned empty_barriers = full_barriers + Cfg::kStages * 8;
  const int tid = threadIdx.x, warpgroup = tid / 128, lane_in_group = tid % 128;
  const int items = int(output_tiles(p.tiles_m, p.tiles_n, p.lower)) * p.splits;

  if (tid == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbarrier_init(full_barriers + 8 * s, 1);     // the producer's arrival + the TMA bytes
      mbarrier_init(empty_barriers + 8 * s, 256);  // one arrival per consumer thread
    }
  }
  __syncthreads();

  // Persistent: each CTA walks the work items blockIdx.x, blockIdx.x + gridDim.x, ... (tiles in
  // grouped order), so the CTAs resident at one time work on neighbouring tiles and share A and B
  // slices in L2. Producer and consumers walk the same items; the stage ring continues across
  // them: `slice` counts every slice this CTA has handled.
  if (warpgroup == 0) {  // producer
    set_max_registers_dec<40>();
    if (lane_in_group == 0) {
      const int rows_a = static_cast<int>(p.a_lo_offset / p.padded_depth_bytes);
      const int rows_b = static_cast<int>(p.b_lo_offset / p.padded_depth_bytes);
      const int elements_per_slice = Cfg::kRowBytes / (E == Element::Fp16 ? 2 : 4);
      int slice = 0;
      for (int item = blockIdx.x; item < items; item += gridDim.x) {
        const WorkItem w = work_item(p, item);
        const int row_a = w.tile.m * Cfg::kTileM, row_b = w.tile.n * Cfg::kTileN;
        for (int k_tile = w.k_begin; k_tile < w.k_end; ++k_tile, ++slice) {
          const int stage = slice % Cfg::kStages, round = slice / Cfg::kStages;
          if (round > 0) mbarrier_wait(empty_barriers + 8 * stage, (round - 1) & 1);
          const unsigned full = full_barriers + 8 * stage;
          const unsigned stage_base = shared_base + stage * Cfg::kStageBytes;
          const int x = k_tile * elements_per_slice;
          mbarrier_arrive_expect_bytes(full, Cfg::kStageBytes);
          tma_load_2d(stage_base + 0 * Cfg::kOperandBytes, map_a, x, row_a, full);
          tma_load_2d(stage_base + 1 * Cfg::kOperandBytes, map_a, x, rows_a + row_a, full);
          tma_load_2d(stage_base + 2 * Cfg::kOperandBytes, map_b, x, row_b, full);
          tma_load_2d(stage_base + 3 * Cfg::kOperandBytes, map_b, x, rows_b + row_b, full);
        }
      }
    }
  } else {  // consumers
    set_max_registers_inc<232>();
    const int consumer = warpgroup - 1;  // rows consumer*64 .. +63 of the tile
    int slice = 0;
    for (int item = blockIdx.x; item < items; item += gridDim.x) {
      const WorkItem w = work_item(p, item);
      float acc[64], x[64], part[64];
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = x[i] = part[i] = 0.0f;

      for (int k_tile = w.k_begin; k_tile < w.k_end; ++k_tile, ++slice) {
        const int stage = slice % Cfg::kStages, round = slice / Cfg::kStages;
        mbarrier_wait(full_barriers + 8 * stage, round & 1);  // TMA writes and wgmma reads: both async proxy
        const unsigned stage_base = shared_base + stage * Cfg::kStageBytes;
        const unsigned a_hi = stage_base + 0 * Cfg::kOperandBytes + consumer * 64 * Cfg::kRowBytes;
        const unsigned a_lo = stage_base + 1 * Cfg::kOperandBytes + consumer * 64 * Cfg::kRowBytes;
        const unsigned b_hi = stage_base + 2 * Cfg::kOperandBytes;
        const unsigned b_lo = stage_base + 3 * Cfg::kOperandBytes;

        fence_registers(x);
        wgmma_fence();
#pragma unroll
        for (int s = 0; s < Cfg::kKSteps; ++s) {
          wgmma<E>(x, make_descriptor(a_lo + 32 * s), make_descriptor(b_hi + 32 * s), s > 0);
          wgmma<E>(x, make_descriptor(a_hi + 32 * s), make_descriptor(b_lo + 32 * s), 1);
        }
        if constexpr (ScaledResidual) {  // bring the corrections back to scale before the main product
          wgmma_commit();
          wgmma_wait<0>();
          fence_registers(x);
#pragma unroll
          for (int i = 0; i < 64; ++i) x[i] *= 0x1p-11f;  // Ootomo & Yokota (2021) eq. (20): / 2^11
          fence_registers(x);
          wgmma_fence();
        }
        // The main product in chains of kMainChain k-steps, each added outside the TC with RN.
#pragma unroll
        for (int chain = 0; chain < Cfg::kKSteps / kMainChain; ++chain) {
          if (chain > 0) {
            fence_registers(x);
            wgmma_fence();
          }
#pragma unroll
          for (int s = chain * kMainChain; s < (chain + 1) * kMainChain; ++s)  // chains after the first start from 0
            wgmma<E>(x, make_descriptor(a_hi + 32 * s), make_descriptor(b_hi + 32 * s),
                     chain == 0 || s > chain * kMainChain);
          wgmma_commit();
          wgmma_wait<0>();
          fence_registers(x);
          if (chain + 1 == Cfg::kKSteps / kMainChain)
            mbarrier_arrive(empty_barriers + 8 * stage);  // operands no longer read
#pragma unroll
          for (int i = 0; i < 64; ++i) part[i] += x[i];  // outside the TC: RN (§3.2)
        }
        // k_begin is a multiple of kSlicesPerPart: a chunk's parts are the unsplit kernel's.
        if ((k_tile + 1) % Cfg::kSlicesPerPart == 0 || k_tile + 1 == w.k_end) fold_part(acc, part);
      }
      // The producer is already loading the next item's first slices while this one is stored.
      const bool split = p.splits > 1;
      store_wgmma_tile(p, acc, std::int64_t(w.tile.m) * Cfg::kTileM + consumer * 64,
                       std::int64_t(w.tile.n) * Cfg::kTileN, lane_in_group,
                       split ? p.slabs.partials + w.split * p.slabs.slab : p.c, split ? p.slabs.ldw : p.ldc,
                       split ? 0.0f : p.beta);
    }
  }
#endif
}

}  // namespace mixsolve::gemm::corrected
