// SPDX-License-Identifier: BSD-3-Clause
// Fused error-corrected SGEMM on tensor cores with mma.sync (sm_80 and later).
//
// Inputs are the packed hi/lo operands of pack.cuh (k contiguous, padded): one CTA computes a
// 128 x 128 tile of C from a multi-stage cp.async pipeline of 128 x 128-byte slices of A_hi, A_lo,
// B_hi, B_lo (64 FP16 or 32 TF32 values of k; 3 stages on Hopper, 2 where shared memory is
// smaller). 8 warps (2 x 4) each own a 64 x 32 sub-tile: 4 x 4 MMA tiles of m16n8. Fragments come
// from shared memory by ldmatrix; the 16-byte chunks of each 128-byte row are XOR-swizzled with
// the row index so that ldmatrix and cp.async are free of bank conflicts.
//
// Accumulation (scheme.hpp):
//   CorrectedRoundToNearest, per MMA k-step (k = 16 for FP16, 8 for TF32), Ootomo & Yokota (2021) eq. (20):
//       x  = mma(A_lo, B_hi, 0) ; x = mma(A_hi, B_lo, x)      corrections
//       x *= 2^-11                                            exact; only if the residual is
//                                                             scaled by 2^11 (halfhalf)
//       x  = mma(A_hi, B_hi, x)                               main product of this step
//       part += x                                             FP32 add, round to nearest (§3.2)
//     and every kChunkTiles = 8 slices (512 FP16 / 256 TF32 values of k) acc += part, part = 0: a
//     two-level sum, so the sequential FP32 additions grow like k/512 + 32 (FP16) rather than k/16.
//     The tensor core's RZ truncation only ever touches one k-step's partial sum.
//   MarkidisFourProducts, Ootomo & Yokota (2021) Listing 2: acc = mma(dA,dB,acc); mma(dA,B); mma(A,dB); mma(A,B).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "mixsolve/primitives/async_copy.cuh"
#include "mixsolve/primitives/mma.cuh"
#include "pack.cuh"
#include "scheme.hpp"

namespace mixsolve::gemm::corrected {

template <int Stages>
struct MmaSyncConfig {
  static constexpr int kTileM = 128, kTileN = 128;
  static constexpr int kRowBytes = 128;  // bytes of k per stage and row
  static constexpr int kChunksPerRow = kRowBytes / 16;
  static constexpr int kKSteps = kRowBytes / 32;  // MMA k-steps (32 bytes of k) per stage
  static constexpr int kStages = Stages;
  static constexpr int kChunkTiles = 8;  // slices summed in `part` before it goes into acc
  static constexpr int kThreads = 256;
  static constexpr int kWarpsM = 2, kWarpsN = 4;
  static constexpr int kWarpTileM = kTileM / kWarpsM;  // 64
  static constexpr int kWarpTileN = kTileN / kWarpsN;  // 32
  static constexpr int kMmaTilesM = kWarpTileM / 16;   // 4
  static constexpr int kMmaTilesN = kWarpTileN / 8;    // 4
  static constexpr int kOperandBytes = kTileM * kRowBytes;          // one of A_hi, A_lo, B_hi, B_lo
  static constexpr int kStageBytes = 4 * kOperandBytes;             // 64 KiB
  static constexpr int kSharedBytes = kStages * kStageBytes;
};

// k of the packed operands is padded to a multiple of this many bytes (one stage slice).
constexpr int kPackedDepthBytes = 128;

struct MmaSyncParams {
  const void* a_hi;
  std::int64_t a_lo_offset;  // bytes from a_hi to a_lo
  const void* b_hi;
  std::int64_t b_lo_offset;
  std::int64_t padded_depth_bytes;  // row pitch of the packed operands
  int k_tiles;                      // padded_depth_bytes / 128
  std::int64_t m, n;
  int tiles_m, tiles_n;  // output tiles (grid = tiles_m * tiles_n blocks, grouped rasterization)
  float alpha, beta;
  float* c;
  std::int64_t ldc;
  const unsigned int* row_max_a;  // non-null: undo the power-of-two row / column scaling
  const unsigned int* row_max_b;
};

namespace mma_detail {

using primitives::copy_async_commit;
using primitives::copy_async_wait;
using primitives::load_matrix_x4;
using primitives::shared_address;

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a 128-byte-row operand tile: the
// 8 rows one ldmatrix phase reads land in 8 different chunk columns, i.e. all 32 banks.
__device__ __forceinline__ int swizzled_offset(int row, int chunk) {
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}

// d = a * b + c on one m16n8 tile (k = 16 for FP16, 8 for TF32), FP32 accumulate.
template <Element E>
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], const float (&c)[4]) {
  if constexpr (E == Element::Fp16) primitives::mma_16x8x16_fp16(d, a, b, c);
  else primitives::mma_16x8x8_tf32(d, a, b, c);
}

}  // namespace mma_detail

template <Element E, Accumulation Acc, int Stages, bool ScaledResidual>
__global__ void __launch_bounds__(256, 1) corrected_sgemm_mma_sync_kernel(MmaSyncParams p) {
  using Cfg = MmaSyncConfig<Stages>;
  using namespace mma_detail;
  extern __shared__ __align__(128) unsigned char shared[];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / Cfg::kWarpsN, warp_n = warp % Cfg::kWarpsN;
  const TileCoordinates tile = grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n);
  const std::int64_t tile_m0 = std::int64_t(tile.m) * Cfg::kTileM;
  const std::int64_t tile_n0 = std::int64_t(tile.n) * Cfg::kTileN;

  // Global sources of this CTA's rows: operand 0/1 = A hi/lo, 2/3 = B hi/lo; each lo array lies
  // a fixed distance after its hi array.
  const char* a_source = static_cast<const char*>(p.a_hi) + tile_m0 * p.padded_depth_bytes;
  const char* b_source = static_cast<const char*>(p.b_hi) + tile_n0 * p.padded_depth_bytes;
  const unsigned shared_base = shared_address(shared);

  // Each thread copies 4 chunks of 16 bytes of each operand per stage (128 rows x 8 chunks).
  auto load_stage = [&](int stage, int k_tile) {
    const unsigned stage_base = shared_base + stage * Cfg::kStageBytes;
#pragma unroll
    for (int operand = 0; operand < 4; ++operand) {
#pragma unroll
      for (int i = 0; i < Cfg::kTileM * Cfg::kChunksPerRow / Cfg::kThreads; ++i) {
        const int chunk_id = tid + i * Cfg::kThreads;
        const int row = chunk_id / Cfg::kChunksPerRow, chunk = chunk_id % Cfg::kChunksPerRow;
        const char* src = (operand < 2 ? a_source + (operand & 1) * p.a_lo_offset : b_source + (operand & 1) * p.b_lo_offset) +
                          row * p.padded_depth_bytes + std::int64_t(k_tile) * Cfg::kRowBytes + chunk * 16;
        primitives::copy_async_16(stage_base + operand * Cfg::kOperandBytes + swizzled_offset(row, chunk), src);
      }
    }
  };

  constexpr bool kCorrected = Acc == Accumulation::CorrectedRoundToNearest;
  float acc[Cfg::kMmaTilesM][Cfg::kMmaTilesN][4];
  float part[Cfg::kMmaTilesM][Cfg::kMmaTilesN][4];  // the chunk sum (corrected schemes only)
#pragma unroll
  for (int i = 0; i < Cfg::kMmaTilesM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::kMmaTilesN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = part[i][j][r] = 0.0f;

#pragma unroll
  for (int s = 0; s < Cfg::kStages - 1; ++s) {
    if (s < p.k_tiles) load_stage(s, s);
    copy_async_commit();
  }

  // ldmatrix row / chunk of this lane (see the fragment layouts of mma.m16n8k16 / m16n8k8).
  const int a_row = warp_m * Cfg::kWarpTileM + (lane & 15);
  const int a_chunk = lane >> 4;
  const int b_row = warp_n * Cfg::kWarpTileN + (lane & 7) + ((lane >> 4) << 3);
  const int b_chunk = (lane >> 3) & 1;
  const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};

  for (int k_tile = 0; k_tile < p.k_tiles; ++k_tile) {
    copy_async_wait<Cfg::kStages - 2>();
    __syncthreads();
    const int next = k_tile + Cfg::kStages - 1;
    if (next < p.k_tiles) load_stage(next % Cfg::kStages, next);
    copy_async_commit();

    const unsigned stage_base = shared_base + (k_tile % Cfg::kStages) * Cfg::kStageBytes;
#pragma unroll
    for (int k_step = 0; k_step < Cfg::kKSteps; ++k_step) {  // MMA k-steps of 32 bytes
      // B fragments of the whole warp tile; A fragments one m-tile at a time (fewer live registers).
      unsigned b_hi[Cfg::kMmaTilesN][2], b_lo[Cfg::kMmaTilesN][2];
#pragma unroll
      for (int j = 0; j < Cfg::kMmaTilesN; j += 2) {
        const int offset = swizzled_offset(b_row + j * 8, k_step * 2 + b_chunk);
        unsigned r[4];
        load_matrix_x4(r, stage_base + 2 * Cfg::kOperandBytes + offset);
        b_hi[j][0] = r[0]; b_hi[j][1] = r[1]; b_hi[j + 1][0] = r[2]; b_hi[j + 1][1] = r[3];
        load_matrix_x4(r, stage_base + 3 * Cfg::kOperandBytes + offset);
        b_lo[j][0] = r[0]; b_lo[j][1] = r[1]; b_lo[j + 1][0] = r[2]; b_lo[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < Cfg::kMmaTilesM; ++i) {
        unsigned a_hi[4], a_lo[4];
        const int offset = swizzled_offset(a_row + i * 16, k_step * 2 + a_chunk);
        load_matrix_x4(a_hi, stage_base + 0 * Cfg::kOperandBytes + offset);
        load_matrix_x4(a_lo, stage_base + 1 * Cfg::kOperandBytes + offset);
#pragma unroll
        for (int j = 0; j < Cfg::kMmaTilesN; ++j) {
          if constexpr (kCorrected) {
            float x[4];
            mma<E>(x, a_lo, b_hi[j], zero);
            mma<E>(x, a_hi, b_lo[j], x);
            if constexpr (ScaledResidual) {
#pragma unroll
              for (int r = 0; r < 4; ++r) x[r] *= 0x1p-11f;  // Ootomo & Yokota (2021) eq. (20): / 2^11
            }
            mma<E>(x, a_hi, b_hi[j], x);
#pragma unroll
            for (int r = 0; r < 4; ++r) part[i][j][r] += x[r];  // outside the TC: RN (§3.2)
          } else {
            mma<E>(acc[i][j], a_lo, b_lo[j], acc[i][j]);
            mma<E>(acc[i][j], a_lo, b_hi[j], acc[i][j]);
            mma<E>(acc[i][j], a_hi, b_lo[j], acc[i][j]);
            mma<E>(acc[i][j], a_hi, b_hi[j], acc[i][j]);
          }
        }
      }
    }
    if constexpr (kCorrected) {
      if ((k_tile + 1) % Cfg::kChunkTiles == 0 || k_tile + 1 == p.k_tiles) {
#pragma unroll
        for (int i = 0; i < Cfg::kMmaTilesM; ++i)
#pragma unroll
          for (int j = 0; j < Cfg::kMmaTilesN; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              acc[i][j][r] += part[i][j][r];
              part[i][j][r] = 0.0f;
            }
      }
    }
  }
  copy_async_wait<0>();

  // Epilogue: C = alpha * 2^-(s_i + s_j) * acc + beta * C (the scaling undone exactly).
  const int group = lane >> 2, quad = lane & 3;
  const bool scaled = p.row_max_a != nullptr;
  int row_shift[Cfg::kMmaTilesM][2];
#pragma unroll
  for (int i = 0; i < Cfg::kMmaTilesM; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const std::int64_t row = tile_m0 + warp_m * Cfg::kWarpTileM + i * 16 + group + half * 8;
      row_shift[i][half] = scaled && row < p.m ? row_scale_exponent(p.row_max_a[row]) : 0;
    }
#pragma unroll
  for (int j = 0; j < Cfg::kMmaTilesN; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const std::int64_t col = tile_n0 + warp_n * Cfg::kWarpTileN + j * 8 + quad * 2 + e;
      if (col >= p.n) continue;
      const int col_shift = scaled ? row_scale_exponent(p.row_max_b[col]) : 0;
#pragma unroll
      for (int i = 0; i < Cfg::kMmaTilesM; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const std::int64_t row = tile_m0 + warp_m * Cfg::kWarpTileM + i * 16 + group + half * 8;
          if (row >= p.m) continue;
          float v = acc[i][j][half * 2 + e];
          if (scaled) v = unscale(v, row_shift[i][half] + col_shift);
          float* out = p.c + row + col * p.ldc;
          *out = p.beta == 0.0f ? p.alpha * v : fmaf(p.alpha, v, p.beta * *out);
        }
    }
}

}  // namespace mixsolve::gemm::corrected
