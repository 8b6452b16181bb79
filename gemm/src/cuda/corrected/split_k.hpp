// SPDX-License-Identifier: BSD-3-Clause
// Split-K of the wgmma kernel: how many k-chunks each output tile is cut into. Host-only C++ so
// that the host tests check the choice.
//
// A skinny C with a long k (the V^T C of a blocked Householder QR's trailing update: 256 x n with
// k in the tens of thousands) has fewer 128 x 128 tiles than the device has multiprocessors, and
// each tile walks all of k. Cutting k into chunks gives tiles * splits work items for the
// persistent grid; each item's partial tile goes to a workspace slab and a reduction kernel sums
// the slabs in split order (deterministic).
#pragma once

#include <cstdint>

namespace mixsolve::gemm::corrected {

// Chunks are whole `part`s of WgmmaConfig::kSlicesPerPart slices (static_assert in
// wgmma_kernel.cuh), so a chunk accumulates exactly as the unsplit kernel does over the same
// slices (Ootomo & Yokota 2021, §3.2: part over 8 slices, then acc += part).
constexpr int kSplitSlicesPerPart = 8;
// A chunk is at least this many 128-byte slices (2048 FP16 / 1024 TF32 values of k): the
// tile's pipeline fill, its 64 KiB partial store and its share of the reduction stay small next
// to the chunk's products.
constexpr int kSplitMinChunkSlices = 32;
// Multiprocessors the choice counts at most. Bounding it bounds the slabs for any device, so
// that Backend::workspace_bytes (which knows no device) covers every choice.
constexpr int kSplitMultiprocessorBound = 256;

struct SplitK {
  int splits;        // k-chunks per tile; 1: no split-K, every work item is a whole tile
  int chunk_slices;  // slices per chunk (the last chunk may be shorter); k_tiles when splits == 1
};

// Split only where the tiles leave multiprocessors idle and k is long enough for chunks of at
// least kSplitMinChunkSlices: splits = min(multiprocessors / tiles, k_tiles / kSplitMinChunkSlices),
// then chunks rounded up to whole parts (which can lower splits; every chunk is non-empty). The
// result never grows when multiprocessors shrink, so the bound's choice covers every device's.
constexpr SplitK corrected_split_k(std::int64_t tiles, std::int64_t k_tiles, int multiprocessors) {
  const std::int64_t sms = multiprocessors < kSplitMultiprocessorBound ? multiprocessors : kSplitMultiprocessorBound;
  const std::int64_t by_sms = tiles > 0 ? sms / tiles : 0;
  const std::int64_t by_k = k_tiles / kSplitMinChunkSlices;
  const std::int64_t want = by_sms < by_k ? by_sms : by_k;
  if (want < 2) return {1, static_cast<int>(k_tiles)};
  const std::int64_t chunk =
      ((k_tiles + want - 1) / want + kSplitSlicesPerPart - 1) / kSplitSlicesPerPart * kSplitSlicesPerPart;
  return {static_cast<int>((k_tiles + chunk - 1) / chunk), static_cast<int>(chunk)};
}

constexpr int corrected_split_count(std::int64_t tiles, std::int64_t k_tiles, int multiprocessors) {
  return corrected_split_k(tiles, k_tiles, multiprocessors).splits;
}

}  // namespace mixsolve::gemm::corrected
