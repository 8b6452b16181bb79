// SPDX-License-Identifier: BSD-3-Clause
// The corrected SGEMM's split-K choice (gemm/src/cuda/corrected/split_k.hpp) and the workspace it
// takes; the GPU tests check the split products against FP64 references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/corrected/split_k.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace {

using namespace mixsolve::gemm;
using corrected::corrected_split_count;
using corrected::corrected_split_k;
using corrected::kSplitMinChunkSlices;
using corrected::kSplitMultiprocessorBound;
using corrected::kSplitSlicesPerPart;

// V^T C of a blocked QR's trailing update on 132 multiprocessors: m = 256 (2 tile rows), k = 65536
// (1024 FP16 slices), n from 256 to 3840.
TEST(GemmCorrectedSplitK, SplitsOnlyWhereTilesLeaveMultiprocessorsIdleAndKIsLong) {
  EXPECT_EQ(corrected_split_count(2 * 2, 1024, 132), 32);  // k-bound: 1024 / 32 slices
  EXPECT_EQ(corrected_split_count(2 * 3, 1024, 132), 22);  // 132 / 6; chunks of 48 slices
  EXPECT_EQ(corrected_split_k(2 * 3, 1024, 132).chunk_slices, 48);
  EXPECT_EQ(corrected_split_count(2 * 8, 1024, 132), 8);
  EXPECT_EQ(corrected_split_count(2 * 30, 1024, 132), 2);  // n = 3840
  EXPECT_EQ(corrected_split_count(66, 1024, 132), 2);
  EXPECT_EQ(corrected_split_count(67, 1024, 132), 1);   // two items per tile would not fit one wave
  EXPECT_EQ(corrected_split_count(4096, 128, 132), 1);  // 8192 x 8192 x 8192
  EXPECT_EQ(corrected_split_count(4, 63, 132), 1);      // k too short for two chunks
  EXPECT_EQ(corrected_split_count(4, 64, 132), 2);
  EXPECT_EQ(corrected_split_count(6, 1024, 6), 1);  // a multiprocessor limit of one per tile
  EXPECT_EQ(corrected_split_count(1, 100000, 1000), kSplitMultiprocessorBound);
  const corrected::SplitK none = corrected_split_k(4096, 128, 132);
  EXPECT_EQ(none.chunk_slices, 128);  // one chunk: the whole of k
}

// Every choice: chunks of whole parts and at least the minimum, covering k with no empty chunk, at
// most one work item per multiprocessor, and never more splits than the device-independent bound
// that workspace_bytes() provides for.
TEST(GemmCorrectedSplitK, ChunksAreWholePartsThatCoverKAndFitOneWave) {
  for (std::int64_t tiles : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 30, 33, 44, 60, 66, 67, 100, 131, 132, 200, 4096})
    for (std::int64_t k_tiles = 1; k_tiles <= 4200; k_tiles += k_tiles < 300 ? 1 : 37)
      for (int sms : {1, 2, 8, 66, 78, 108, 132, 148, 256, 1000}) {
        const corrected::SplitK s = corrected_split_k(tiles, k_tiles, sms);
        const auto where = [&] {
          return ::testing::Message() << "tiles " << tiles << ", k_tiles " << k_tiles << ", sms " << sms;
        };
        ASSERT_GE(s.splits, 1) << where();
        ASSERT_LE(s.splits, corrected_split_count(tiles, k_tiles, kSplitMultiprocessorBound)) << where();
        if (s.splits == 1) {
          ASSERT_EQ(s.chunk_slices, k_tiles) << where();
          continue;
        }
        ASSERT_EQ(s.chunk_slices % kSplitSlicesPerPart, 0) << where();
        ASSERT_GE(s.chunk_slices, kSplitMinChunkSlices) << where();
        ASSERT_LT(std::int64_t(s.splits - 1) * s.chunk_slices, k_tiles) << where();
        ASSERT_GE(std::int64_t(s.splits) * s.chunk_slices, k_tiles) << where();
        ASSERT_LE(tiles * s.splits, std::min(sms, kSplitMultiprocessorBound)) << where();
      }
}

// workspace_bytes() knows no device, so it counts the slabs of the most splits any device can get.
TEST(GemmCorrectedSplitK, WorkspaceBytesCoverTheSlabs) {
  const GemmShape v_t_c{Op::T, Op::N, 256, 384, 65536};
  for (const char* name : {"halfhalf", "tf32tf32"}) {
    const std::int64_t element = std::string(name) == "halfhalf" ? 2 : 4;
    const std::int64_t packed = 2 * (256 + 384) * 65536 * element;  // hi and lo of op(A) and op(B)
    const std::int64_t splits = corrected_split_count(2 * 3, 65536 * element / 128, kSplitMultiprocessorBound);
    EXPECT_GT(splits, 1) << name;
    const std::size_t bytes = find_backend(name).workspace_bytes(v_t_c);
    EXPECT_GE(bytes, std::size_t(packed + splits * 256 * 384 * 4)) << name;
    // No split, no slab: 8192^3 takes the packed operands and the row maxima only.
    const std::int64_t square = 4 * 8192 * std::int64_t{8192} * element;
    const std::size_t square_bytes = find_backend(name).workspace_bytes(GemmShape{Op::N, Op::N, 8192, 8192, 8192});
    EXPECT_GE(square_bytes, std::size_t(square)) << name;
    EXPECT_LT(square_bytes, std::size_t(square + (1 << 20))) << name;
  }
  // tf32tf32 may take the skinny kernel instead (m <= 256; skinny_wgmma_kernel.cuh): op(A) packed
  // in 256-row tiles, slabs of 256 x (n in 64-column tiles).
  const GemmShape short_rows{Op::T, Op::N, 100, 1000, 65536};
  const std::int64_t skinny_splits = corrected_split_count(1000 / 64 + 1, 65536 * 4 / 128, kSplitMultiprocessorBound);
  EXPECT_GT(skinny_splits, 1);
  EXPECT_GE(find_backend("tf32tf32").workspace_bytes(short_rows),
            std::size_t(2 * 256 * 65536 * 4 + skinny_splits * 256 * 1024 * 4));
}

}  // namespace
