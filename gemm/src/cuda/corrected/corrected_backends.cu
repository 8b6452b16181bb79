// SPDX-License-Identifier: BSD-3-Clause
// Error-corrected SGEMM backends on tensor cores (Ootomo & Yokota 2021): halfhalf, tf32tf32, and the
// Markidis baseline. Each call packs op(A) and op(B) into hi/lo tensor-core operands in the
// Context's workspace (one memory pass) and runs one fused kernel for all products (on the wgmma
// path with split-K, then a reduction of the k-chunks' partial tiles). tf32tf32 products with at
// most 256 rows leave op(B) unpacked where TMA can read it in place (skinny_wgmma_kernel.cuh).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../../backends.hpp"
#include "../device_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mma_sync_kernel.cuh"
#include "pack.cuh"
#include "skinny_route.hpp"
#include "skinny_wgmma_kernel.cuh"
#include "split_k.hpp"
#include "wgmma_kernel.cuh"

namespace mixsolve::gemm {

namespace {

using corrected::Accumulation;
using corrected::Element;
using Tile = corrected::MmaSyncConfig<2>;  // 128 x 128, the same for every stage count and for wgmma
static_assert(Tile::kTileM == corrected::WgmmaConfig::kTileM && Tile::kTileN == corrected::WgmmaConfig::kTileN,
              "both kernels read the packed operands with the same tile padding");
using corrected::PackSource;
using corrected::Scheme;

std::int64_t round_up(std::int64_t v, std::int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }

struct PackedLayout {
  std::int64_t rows_a, rows_b, depth;  // padded
  std::size_t element_bytes;
  std::int64_t tiles() const { return rows_a / Tile::kTileM * (rows_b / Tile::kTileN); }
  std::int64_t k_tiles() const { return depth * std::int64_t(element_bytes) / corrected::kPackedDepthBytes; }
};

PackedLayout layout_for(const Scheme& s, const GemmShape& shape) {
  const std::size_t element_bytes = s.element == Element::Fp16 ? 2u : 4u;
  return {round_up(shape.m, Tile::kTileM), round_up(shape.n, Tile::kTileN),
          round_up(shape.k, corrected::kPackedDepthBytes / element_bytes), element_bytes};
}

struct Workspace {
  unsigned int* overflow = nullptr;  // [2]: A, B
  unsigned int* row_max_a = nullptr;
  unsigned int* row_max_b = nullptr;
  void* a_hi = nullptr;
  void* a_lo = nullptr;
  void* b_hi = nullptr;
  void* b_lo = nullptr;
  float* partials = nullptr;  // split-K slabs: [splits][rows_b][rows_a]
  std::size_t bytes = 0;
};

Workspace carve(void* base, const PackedLayout& l, int splits) {
  detail::WorkspaceCarver ws(base);
  Workspace w;
  w.overflow = ws.take<unsigned int>(2);
  w.row_max_a = ws.take<unsigned int>(l.rows_a);
  w.row_max_b = ws.take<unsigned int>(l.rows_b);
  w.a_hi = ws.take<char>(l.rows_a * l.depth * l.element_bytes);
  w.a_lo = ws.take<char>(l.rows_a * l.depth * l.element_bytes);
  w.b_hi = ws.take<char>(l.rows_b * l.depth * l.element_bytes);
  w.b_lo = ws.take<char>(l.rows_b * l.depth * l.element_bytes);
  if (splits > 1) w.partials = ws.take<float>(splits * l.rows_a * l.rows_b);
  w.bytes = ws.bytes();
  return w;
}

// The skinny kernel's operands: op(A) packed with rows padded to its 256-row tile, op(B) in place
// (its columns counted in 64-column tiles), k padded to whole 128-byte slices.
struct SkinnyLayout {
  std::int64_t rows_a, cols_b, depth;
  int tiles_m() const { return int(rows_a / corrected::SkinnyWgmmaConfig::kTileM); }
  int tiles_n() const { return int(cols_b / corrected::SkinnyWgmmaConfig::kTileN); }
  std::int64_t tiles() const { return std::int64_t(tiles_m()) * tiles_n(); }
  std::int64_t k_tiles() const { return depth * 4 / corrected::kPackedDepthBytes; }
};

SkinnyLayout skinny_layout_for(const GemmShape& shape) {
  using Cfg = corrected::SkinnyWgmmaConfig;
  return {round_up(shape.m, Cfg::kTileM), round_up(shape.n, Cfg::kTileN),
          round_up(shape.k, corrected::kPackedDepthBytes / 4)};
}

struct SkinnyWorkspace {
  void* a_hi = nullptr;
  void* a_lo = nullptr;
  float* partials = nullptr;  // split-K slabs: [splits][cols_b][rows_a]
  std::size_t bytes = 0;
};

SkinnyWorkspace carve_skinny(void* base, const SkinnyLayout& l, int splits) {
  detail::WorkspaceCarver ws(base);
  SkinnyWorkspace w;
  w.a_hi = ws.take<std::uint32_t>(l.rows_a * l.depth);
  w.a_lo = ws.take<std::uint32_t>(l.rows_a * l.depth);
  if (splits > 1) w.partials = ws.take<float>(splits * l.rows_a * l.cols_b);
  w.bytes = ws.bytes();
  return w;
}

template <Element E, bool kScaled, bool kRowScaling, bool kCheck>
void launch_pack(const PackSource& src, std::int64_t padded_rows, std::int64_t padded_depth,
                 const unsigned int* row_max, void* hi, void* lo, unsigned int* overflow, cudaStream_t stream) {
  using T = typename corrected::PackedType<E>::type;
  const dim3 grid(unsigned(padded_depth / corrected::kPackTile), unsigned(padded_rows / corrected::kPackTile));
  corrected::pack_split_kernel<E, kScaled, kRowScaling, kCheck><<<grid, dim3(32, 8), 0, stream>>>(
      src, padded_depth, row_max, static_cast<T*>(hi), static_cast<T*>(lo), overflow);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

template <Element E, Accumulation A, int Stages, bool Scaled>
void launch_gemm_stages(const corrected::MmaSyncParams& params, cudaStream_t stream) {
  using Cfg = corrected::MmaSyncConfig<Stages>;
  auto kernel = corrected::corrected_sgemm_mma_sync_kernel<E, A, Stages, Scaled>;
  static const cudaError_t attribute_status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSharedBytes);
  MIXSOLVE_CUDA_CHECK(attribute_status);
  kernel<<<unsigned(params.tiles_m) * unsigned(params.tiles_n), Cfg::kThreads, Cfg::kSharedBytes, stream>>>(params);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

// True when this build has the wgmma kernel for `device` (compiled for sm_90a, device is sm_90).
// The first call per device launches a probe kernel and waits for it (once per process).
bool wgmma_available(int device) {
  static std::mutex mutex;
  static int cached[64];  // 0 unknown, 1 yes, 2 no
  if (device < 0 || device >= 64) return false;
  const std::lock_guard<std::mutex> lock(mutex);
  if (cached[device] == 0) {
    int major = 0;
    MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    int found = 0;
    if (major == 9) {
      int* flag = nullptr;
      MIXSOLVE_CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
      corrected::wgmma_probe_kernel<<<1, 1>>>(flag);
      const cudaError_t launch = cudaGetLastError();
      if (launch == cudaSuccess) MIXSOLVE_CUDA_CHECK(cudaMemcpy(&found, flag, sizeof(int), cudaMemcpyDeviceToHost));
      cudaFree(flag);
    }
    cached[device] = found ? 1 : 2;
  }
  return cached[device] == 1;
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link against libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status{};
    MIXSOLVE_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &status));
    if (status != cudaDriverEntryPointSuccess || fn == nullptr)
      throw DeviceError("cuTensorMapEncodeTiled is not available from the installed driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// A 2-D tensor map over `2 * rows` packed rows (hi rows, then lo rows) of `depth_bytes` bytes,
// boxes of `box_rows` rows x 128 bytes in wgmma's 128-byte swizzle.
CUtensorMap packed_operand_map(const void* hi, std::int64_t rows, std::int64_t depth_bytes, Element e,
                               unsigned box_rows = 128) {
  CUtensorMap map{};
  const std::size_t element = e == Element::Fp16 ? 2 : 4;
  const cuuint64_t dims[2] = {cuuint64_t(depth_bytes / element), cuuint64_t(2 * rows)};
  const cuuint64_t strides[1] = {cuuint64_t(depth_bytes)};
  const cuuint32_t box[2] = {cuuint32_t(128 / element), box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(
      &map, e == Element::Fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT32, 2,
      const_cast<void*>(hi), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw DeviceError("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return map;
}

// A 2-D tensor map over op(B) = B as it lies in user memory (column-major k x n, K-major for the
// product): k innermost, n rows ldb * 4 bytes apart, boxes of 32 values x `box_rows` rows in the
// 128-byte swizzle. TMA zero-fills k and n beyond B, as the packing pads.
CUtensorMap raw_operand_map(const float* b, std::int64_t rows, std::int64_t depth, std::int64_t ld, unsigned box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(depth), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * sizeof(float)};
  const cuuint32_t box[2] = {32, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(b), dims, strides, box,
                           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw DeviceError("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
  return map;
}

void launch_split_k_reduce(const corrected::SplitKReduction& r, int multiprocessors, cudaStream_t stream) {
  const std::int64_t blocks = (r.m * r.n + 255) / 256;
  corrected::
      split_k_reduce_kernel<<<unsigned(blocks < 8 * multiprocessors ? blocks : 8 * multiprocessors), 256, 0, stream>>>(
          r);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

// The multiprocessors the wgmma kernel's persistent grid may take in `ctx`.
int wgmma_multiprocessors(const Context& ctx) {
  int multiprocessors = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, ctx.device()));
  if (ctx.multiprocessor_limit() > 0 && ctx.multiprocessor_limit() < multiprocessors)
    multiprocessors = ctx.multiprocessor_limit();
  return multiprocessors;
}

template <Element E, bool Scaled, int MainChain>
void launch_wgmma(const Context& ctx, const corrected::WgmmaParams& params, int multiprocessors) {
  using Cfg = corrected::WgmmaConfig;
  // Persistent grid: one CTA per multiprocessor (the kernel takes the whole shared memory of one).
  const std::int64_t items = corrected::output_tiles(params.tiles_m, params.tiles_n, params.lower) * params.splits;
  const unsigned grid = unsigned(items < multiprocessors ? items : multiprocessors);
  // The tensor maps cover hi rows followed by lo rows: the workspace must lay them out so.
  if (params.a_lo_offset != std::int64_t(params.tiles_m) * Cfg::kTileM * params.padded_depth_bytes ||
      params.b_lo_offset != std::int64_t(params.tiles_n) * Cfg::kTileN * params.padded_depth_bytes)
    throw Error("corrected SGEMM: packed lo operands do not follow their hi operands (workspace layout bug)");
  const CUtensorMap map_a =
      packed_operand_map(params.a_hi, std::int64_t(params.tiles_m) * Cfg::kTileM, params.padded_depth_bytes, E);
  const CUtensorMap map_b =
      packed_operand_map(params.b_hi, std::int64_t(params.tiles_n) * Cfg::kTileN, params.padded_depth_bytes, E);
  auto kernel = corrected::corrected_sgemm_wgmma_ws_kernel<E, Scaled, MainChain>;
  static const cudaError_t attribute_status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSharedBytes);
  MIXSOLVE_CUDA_CHECK(attribute_status);
  kernel<<<grid, Cfg::kThreads, Cfg::kSharedBytes, ctx.stream()>>>(map_a, map_b, params);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  if (params.splits > 1)
    launch_split_k_reduce(
        {params.slabs, params.splits, params.m, params.n, params.c, params.ldc, params.beta, params.lower != 0},
        multiprocessors, ctx.stream());
}

// 3 stages (192 KiB) where the device allows it (sm_90: 227 KiB), else 2 (sm_80: 163 KiB).
template <Element E, Accumulation A, bool Scaled>
void launch_gemm(const Context& ctx, const corrected::MmaSyncParams& params) {
  int max_shared = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.device()));
  if (max_shared >= corrected::MmaSyncConfig<3>::kSharedBytes)
    launch_gemm_stages<E, A, 3, Scaled>(params, ctx.stream());
  else
    launch_gemm_stages<E, A, 2, Scaled>(params, ctx.stream());
}

// halfhalf on wgmma adds the main product to the FP32 sum every 4 k-steps (a 64-wide slice). On
// same-signed inputs the tensor core's truncation within such a chain leaves a relative error of
// ~2.5e-7 whatever k is, while SGEMM's grows like 1.5e-8 sqrt(k): they cross near k = 290
// (H100/H200, exp_rand(-15,15), docs/kernels.md). Below k = 512 chains of 2 k-steps (error
// ~1.5e-7) keep halfhalf at least as accurate as SGEMM; they cost 3-4% there and 8-15% at large k.
constexpr std::int64_t kShortChainBelowK = 512;

class CorrectedSgemm final : public Backend {
 public:
  CorrectedSgemm(std::string name, std::string description, Scheme scheme)
      : name_(std::move(name)), description_(std::move(description)), scheme_(scheme) {}

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 80); }
  // The wgmma path (Hopper, sm_90a) skips the tiles above the diagonal; the mma.sync path (other
  // GPUs) and the skinny kernel (tf32tf32, m <= 256, op(B) read in place) compute C whole.
  bool skips_upper_fill(const Context& ctx) const override {
    return scheme_.accumulation == Accumulation::CorrectedRoundToNearest &&
           scheme_.path == corrected::KernelPath::Auto && wgmma_available(ctx.device());
  }
  // The slabs for the most splits any device can get (split_k.hpp bounds the multiprocessors).
  // A skinny product may take either kernel (its op(B) pointer and ldb decide), so it gets the
  // larger of the two workspaces.
  std::size_t workspace_bytes(const GemmShape& s) const override {
    const PackedLayout l = layout_for(scheme_, s);
    // A square product may be a Fill::Lower one, whose fewer tiles can take more splits.
    const std::int64_t tiles = s.m == s.n ? corrected::output_tiles(int(l.rows_a / Tile::kTileM),
                                                                     int(l.rows_b / Tile::kTileN), true)
                                          : l.tiles();
    const std::size_t general =
        carve(nullptr, l, corrected::corrected_split_count(tiles, l.k_tiles(), corrected::kSplitMultiprocessorBound))
            .bytes;
    if (!scheme_.skinny_raw_b || s.m > corrected::kSkinnyMaxRows) return general;
    const SkinnyLayout skinny = skinny_layout_for(s);
    return std::max(general, carve_skinny(nullptr, skinny,
                                          corrected::corrected_split_count(skinny.tiles(), skinny.k_tiles(),
                                                                           corrected::kSplitMultiprocessorBound))
                                 .bytes);
  }

 protected:
  std::int64_t size_limit() const override { return std::int64_t{1} << 30; }  // 32-bit tile and TMA coordinates
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    const GemmShape shape = shape_of(a);
    const PackedLayout l = layout_for(scheme_, shape);
    const bool use_wgmma = scheme_.accumulation == Accumulation::CorrectedRoundToNearest &&
                           scheme_.path == corrected::KernelPath::Auto && wgmma_available(ctx.device());
    // Split-K on the wgmma path only (split_k.hpp); the mma.sync kernel walks all of k per tile.
    const int multiprocessors = use_wgmma ? wgmma_multiprocessors(ctx) : 0;
    if (use_wgmma && scheme_.skinny_raw_b && corrected::skinny_kernel_takes(a)) {
      run_skinny(ctx, a, multiprocessors);
      return;
    }
    // Fill::Lower on the wgmma path: the tiles on and below the diagonal only.
    const bool lower = use_wgmma && a.fill == Fill::Lower && a.m == a.n;
    const std::int64_t tiles =
        corrected::output_tiles(int(l.rows_a / Tile::kTileM), int(l.rows_b / Tile::kTileN), lower);
    const corrected::SplitK split =
        use_wgmma ? corrected::corrected_split_k(tiles, l.k_tiles(), multiprocessors) : corrected::SplitK{1, 0};
    const Workspace w = carve(ctx.workspace(carve(nullptr, l, split.splits).bytes), l, split.splits);
    cudaStream_t stream = ctx.stream();

    // op(A) as m rows of depth k; op(B) as n rows (its columns) of depth k.
    const PackSource src_a{a.a, a.lda, a.op_a == Op::T, a.m, a.k};
    const PackSource src_b{a.b, a.ldb, a.op_b == Op::N, a.n, a.k};

    const bool check_range = scheme_.check_range && a.check_range;
    if (check_range) MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(w.overflow, 0, 2 * sizeof(unsigned int), stream));
    if (scheme_.row_scaling) {
      MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(w.row_max_a, 0, l.rows_a * sizeof(unsigned int), stream));
      MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(w.row_max_b, 0, l.rows_b * sizeof(unsigned int), stream));
      launch_row_max(src_a, w.row_max_a, stream);
      launch_row_max(src_b, w.row_max_b, stream);
    }
    pack(src_a, l.rows_a, l.depth, w.row_max_a, w.a_hi, w.a_lo, w.overflow, stream);
    pack(src_b, l.rows_b, l.depth, w.row_max_b, w.b_hi, w.b_lo, w.overflow + 1, stream);
    if (check_range) report_overflow(w.overflow, stream);

    corrected::MmaSyncParams p{};
    p.a_hi = w.a_hi;
    p.a_lo_offset = static_cast<const char*>(w.a_lo) - static_cast<const char*>(w.a_hi);
    p.b_hi = w.b_hi;
    p.b_lo_offset = static_cast<const char*>(w.b_lo) - static_cast<const char*>(w.b_hi);
    p.padded_depth_bytes = l.depth * std::int64_t(l.element_bytes);
    p.k_tiles = int(p.padded_depth_bytes / corrected::kPackedDepthBytes);
    p.m = a.m;
    p.n = a.n;
    p.tiles_m = int(l.rows_a / Tile::kTileM);
    p.tiles_n = int(l.rows_b / Tile::kTileN);
    p.alpha = a.alpha;
    p.beta = a.beta;
    p.c = a.c;
    p.ldc = a.ldc;
    p.row_max_a = scheme_.row_scaling ? w.row_max_a : nullptr;
    p.row_max_b = scheme_.row_scaling ? w.row_max_b : nullptr;
    if (use_wgmma) {
      corrected::WgmmaParams params{p.a_hi,     p.a_lo_offset, p.b_hi, p.b_lo_offset, p.padded_depth_bytes,
                                    p.k_tiles,  p.m,           p.n,    p.tiles_m,     p.tiles_n,
                                    p.alpha,    p.beta,        p.c,    p.ldc,         p.row_max_a,
                                    p.row_max_b};
      params.splits = split.splits;
      params.chunk_slices = split.chunk_slices;
      params.slabs = {w.partials, l.rows_a * l.rows_b, l.rows_a};
      params.lower = lower ? 1 : 0;
      if (scheme_.element == Element::Fp16 && a.k < kShortChainBelowK)
        launch_wgmma<Element::Fp16, true, 2>(ctx, params, multiprocessors);
      else if (scheme_.element == Element::Fp16)
        launch_wgmma<Element::Fp16, true, 4>(ctx, params, multiprocessors);
      else
        launch_wgmma<Element::Tf32, false, 4>(ctx, params, multiprocessors);
      return;
    }
    if (scheme_.element == Element::Fp16) {
      if (scheme_.accumulation == Accumulation::CorrectedRoundToNearest)
        launch_gemm<Element::Fp16, Accumulation::CorrectedRoundToNearest, true>(ctx, p);
      else
        launch_gemm<Element::Fp16, Accumulation::MarkidisFourProducts, false>(ctx, p);
    } else {
      launch_gemm<Element::Tf32, Accumulation::CorrectedRoundToNearest, false>(ctx, p);
    }
  }

 private:
  // tf32tf32 with op(B) split in registers (skinny_wgmma_kernel.cuh); only op(A) is packed.
  static void run_skinny(Context& ctx, const GemmArgs<float>& a, int multiprocessors) {
    using Cfg = corrected::SkinnyWgmmaConfig;
    const SkinnyLayout l = skinny_layout_for(shape_of(a));
    const corrected::SplitK split = corrected::corrected_split_k(l.tiles(), l.k_tiles(), multiprocessors);
    const SkinnyWorkspace w =
        carve_skinny(ctx.workspace(carve_skinny(nullptr, l, split.splits).bytes), l, split.splits);
    const std::int64_t plane_bytes = l.rows_a * l.depth * 4;
    if (static_cast<const char*>(w.a_lo) - static_cast<const char*>(w.a_hi) != plane_bytes)
      throw Error("corrected SGEMM: packed lo operand does not follow its hi operand (workspace layout bug)");
    cudaStream_t stream = ctx.stream();
    launch_pack<Element::Tf32, false, false, false>(PackSource{a.a, a.lda, a.op_a == Op::T, a.m, a.k}, l.rows_a,
                                                    l.depth, nullptr, w.a_hi, w.a_lo, nullptr, stream);

    corrected::SkinnyWgmmaParams p{};
    p.a_hi = w.a_hi;
    p.a_rows = l.rows_a;
    p.m = a.m;
    p.n = a.n;
    p.k_tiles = int(l.k_tiles());
    p.tiles_m = l.tiles_m();
    p.tiles_n = l.tiles_n();
    p.alpha = a.alpha;
    p.beta = a.beta;
    p.c = a.c;
    p.ldc = a.ldc;
    p.splits = split.splits;
    p.chunk_slices = split.chunk_slices;
    p.slabs = {w.partials, l.rows_a * l.cols_b, l.rows_a};
    const CUtensorMap map_a = packed_operand_map(w.a_hi, l.rows_a, l.depth * 4, Element::Tf32, Cfg::kTileM);
    const CUtensorMap map_b = raw_operand_map(a.b, a.n, a.k, a.ldb, Cfg::kTileN);
    const std::int64_t items = l.tiles() * split.splits;
    const unsigned grid = unsigned(items < multiprocessors ? items : multiprocessors);
    static const cudaError_t attribute_status = cudaFuncSetAttribute(
        corrected::tf32tf32_skinny_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSharedBytes);
    MIXSOLVE_CUDA_CHECK(attribute_status);
    corrected::tf32tf32_skinny_wgmma_kernel<<<grid, Cfg::kThreads, Cfg::kSharedBytes, stream>>>(map_a, map_b, p);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    if (split.splits > 1)
      launch_split_k_reduce({p.slabs, p.splits, p.m, p.n, p.c, p.ldc, p.beta}, multiprocessors, stream);
  }

  static void launch_row_max(const PackSource& src, unsigned int* row_max, cudaStream_t stream) {
    const std::int64_t strips = (src.depth + corrected::kPackTile - 1) / corrected::kPackTile;
    const dim3 grid(unsigned(strips < 16 ? strips : 16),
                    unsigned((src.rows + corrected::kPackTile - 1) / corrected::kPackTile));
    corrected::row_max_kernel<<<grid, dim3(32, 8), 0, stream>>>(src, row_max);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  void pack(const PackSource& src, std::int64_t rows, std::int64_t depth, const unsigned int* row_max, void* hi,
            void* lo, unsigned int* overflow, cudaStream_t stream) const {
    const Scheme& s = scheme_;
    if (s.element == Element::Tf32)
      launch_pack<Element::Tf32, false, false, false>(src, rows, depth, row_max, hi, lo, overflow, stream);
    else if (s.row_scaling)
      launch_pack<Element::Fp16, true, true, false>(src, rows, depth, row_max, hi, lo, overflow, stream);
    else if (s.scaled_residual)
      launch_pack<Element::Fp16, true, false, true>(src, rows, depth, row_max, hi, lo, overflow, stream);
    else
      launch_pack<Element::Fp16, false, false, true>(src, rows, depth, row_max, hi, lo, overflow, stream);
  }

  void report_overflow(const unsigned int* overflow, cudaStream_t stream) const {
    detail::throw_if_operands_overflowed(overflow, stream, name_, "FP16 (|x| >= 65520)",
                                         "the backend \"halfhalf\" scales rows and columns into range");
  }

  std::string name_, description_;
  Scheme scheme_;
};

}  // namespace

void add_corrected_sgemm_backends(std::vector<std::unique_ptr<Backend>>& out) {
  const Scheme halfhalf{Element::Fp16, Accumulation::CorrectedRoundToNearest, true, true, false};
  // TF32 keeps FP32's exponent range, so the residual needs no 2^11 scaling (eq. 14 of Ootomo & Yokota 2021 is
  // about FP16 underflow): unscaled, the corrections share the main product's tensor-core chain.
  Scheme tf32tf32{Element::Tf32, Accumulation::CorrectedRoundToNearest, false, false, false};
  const Scheme tf32tf32_packed = tf32tf32;
  tf32tf32.skinny_raw_b = true;
  Scheme halfhalf_mma_sync = halfhalf, tf32tf32_mma_sync = tf32tf32;
  halfhalf_mma_sync.path = tf32tf32_mma_sync.path = corrected::KernelPath::MmaSync;
  out.push_back(std::make_unique<CorrectedSgemm>(
      "halfhalf",
      "FP16 tensor cores, Ootomo & Yokota's (2021) halfhalf split (eqs. 15-18) with power-of-two row/column scaling "
      "into FP16 range, 3 products (eq. 20), slice sums added outside the TC with RN (wgmma on sm_90a, else mma.sync)",
      halfhalf));
  out.push_back(std::make_unique<CorrectedSgemm>(
      "halfhalf-unscaled",
      "halfhalf exactly as in Ootomo & Yokota (2021) (no exponent shift: small values underflow FP16); synchronises "
      "once to report values beyond FP16 range",
      Scheme{Element::Fp16, Accumulation::CorrectedRoundToNearest, true, false, true}));
  out.push_back(std::make_unique<CorrectedSgemm>(
      "tf32tf32",
      "TF32 tensor cores, Ootomo & Yokota's (2021) tf32tf32 split (cvt.rna; residual unscaled: TF32 has FP32's "
      "exponent range), 3 products (eq. 20), slice sums added outside the TC with RN (wgmma on sm_90a, else mma.sync)",
      tf32tf32));
  out.push_back(std::make_unique<CorrectedSgemm>(
      "tf32tf32-packed",
      "tf32tf32 with op(B) always packed into hi / lo planes first (the general wgmma kernel also where "
      "tf32tf32 splits a skinny product's op(B) in registers)",
      tf32tf32_packed));
  out.push_back(std::make_unique<CorrectedSgemm>(
      "halfhalf-mma-sync", "halfhalf on the mma.sync kernel (the sm_80 path), selectable on any GPU",
      halfhalf_mma_sync));
  out.push_back(std::make_unique<CorrectedSgemm>(
      "tf32tf32-mma-sync", "tf32tf32 on the mma.sync kernel (the sm_80 path), selectable on any GPU",
      tf32tf32_mma_sync));
  out.push_back(std::make_unique<CorrectedSgemm>(
      "markidis",
      "FP16 tensor cores, Markidis et al. (Ootomo & Yokota 2021, eqs. 1-5): 4 products accumulated inside the TC (RZ); "
      "synchronises once to report values beyond FP16 range",
      Scheme{Element::Fp16, Accumulation::MarkidisFourProducts, false, false, true}));
}

}  // namespace mixsolve::gemm
