// SPDX-License-Identifier: BSD-3-Clause
// wmma_benchmark: the WMMA fragment helpers (primitives/wmma_helpers.cuh) against the plain WMMA
// API doing the same work through shared memory, as in Ootomo & Yokota's (2020) Figs. 3, 5 and 9. Each pair
// of kernels differs only in how the fragments are built; the ratio is the API kernel's time over
// the helpers' (median of --reps, same run).
//   outer     batched outer products v v^T of FP16 vectors of 16 (one per warp, FP32 results):
//             load_vector_sync against a zero-filled 16 x 16 tile in shared memory (Fig. 3);
//   identity  the same plus alpha I: make_identity against alpha I built in shared memory (Fig. 5);
//   corrected C = AB of FP32 m x m matrices with halfhalf-corrected products (32 x 32 tiles of C
//             per block, 4 warps): hi and lo fragments split on load from the FP32 tile
//             (load_split_sync) against hi and lo tiles written to shared memory first (Fig. 9).
//
//   wmma_benchmark [--batches 16384,...,1048576] [--sizes 1024,2048,4096,8192] [--reps 20]
//                  [--json out.json]
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/split.hpp"
#include "mixsolve/primitives/wmma_corrected.cuh"
#include "mixsolve/primitives/wmma_helpers.cuh"

using namespace nvcuda;
namespace mw = mixsolve::primitives::wmma;

namespace {

constexpr int kWarpsPerBlock = 4;

using VectorA = wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major>;
using VectorB = wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major>;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Fig. 3 / Fig. 5, API: v goes into column 0 of a zero-filled column-major tile, which is also
// row 0 of the same tile read row-major; alpha I (kIdentity) is built in a second tile.
template <bool kIdentity>
__global__ void outer_api(const half* v, float* out, int batches, float alpha) {
  __shared__ half tiles[kWarpsPerBlock][16 * 16];
  __shared__ float identity[kWarpsPerBlock][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int batch = blockIdx.x * kWarpsPerBlock + warp;
  if (batch >= batches) return;
  half* tile = tiles[warp];
  for (int e = lane; e < 256; e += 32) tile[e] = __float2half(0.0f);
  if (kIdentity)
    for (int e = lane; e < 256; e += 32) identity[warp][e] = e % 17 == 0 ? alpha : 0.0f;
  __syncwarp();
  if (lane < 16) tile[lane] = v[batch * 16 + lane];
  __syncwarp();
  VectorA a;
  VectorB b;
  Accumulator c;
  wmma::load_matrix_sync(a, tile, 16);
  wmma::load_matrix_sync(b, tile, 16);
  if (kIdentity)
    wmma::load_matrix_sync(c, identity[warp], 16, wmma::mem_col_major);
  else
    wmma::fill_fragment(c, 0.0f);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(out + std::size_t(batch) * 256, c, 16, wmma::mem_col_major);
}

// Fig. 3 / Fig. 5, helpers: the fragments from v itself, alpha I in registers.
template <bool kIdentity>
__global__ void outer_helpers(const half* v, float* out, int batches, float alpha) {
  const int warp = threadIdx.x / 32;
  const int batch = blockIdx.x * kWarpsPerBlock + warp;
  if (batch >= batches) return;
  VectorA a;
  VectorB b;
  Accumulator c;
  mw::load_vector_sync(a, v + batch * 16);
  mw::load_vector_sync(b, v + batch * 16);
  if (kIdentity)
    mw::make_identity(c, alpha);
  else
    wmma::fill_fragment(c, 0.0f);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(out + std::size_t(batch) * 256, c, 16, wmma::mem_col_major);
}

// Fig. 9: C (m x m, column major) = A B, A and B column major FP32. A block computes a 32 x 32
// tile of C; warp w its 16 x 16 quadrant (w % 2, w / 2). kOnLoad: fragments split from the FP32
// tiles in registers; else the hi and lo tiles are written to shared memory first and loaded with
// load_matrix_sync.
template <bool kOnLoad>
__global__ void corrected_gemm(const float* a, const float* b, float* c, int m) {
  __shared__ float a_tile[32 * 32], b_tile[32 * 32];  // column major, ld 32
  __shared__ half a_hi[32 * 32], a_lo[32 * 32], b_hi[32 * 32], b_lo[32 * 32];
  const int warp = threadIdx.x / 32, i0 = blockIdx.x * 32, j0 = blockIdx.y * 32;
  const int wi = warp % 2 * 16, wj = warp / 2 * 16;
  Accumulator acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int l0 = 0; l0 < m; l0 += 32) {
    for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
      const int r = e % 32, q = e / 32;
      a_tile[e] = a[(i0 + r) + std::size_t(l0 + q) * m];
      b_tile[e] = b[(l0 + r) + std::size_t(j0 + q) * m];
    }
    __syncthreads();
    if (!kOnLoad) {
      for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
        const mixsolve::formats::HalfSplit sa = mixsolve::formats::split_halfhalf(a_tile[e]);
        const mixsolve::formats::HalfSplit sb = mixsolve::formats::split_halfhalf(b_tile[e]);
        a_hi[e] = __ushort_as_half(sa.hi);
        a_lo[e] = __ushort_as_half(sa.lo);
        b_hi[e] = __ushort_as_half(sb.hi);
        b_lo[e] = __ushort_as_half(sb.lo);
      }
      __syncthreads();
    }
    for (int kk = 0; kk < 32; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> ah, al;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> bh, bl;
      if (kOnLoad) {
        mw::load_split_sync(ah, al, a_tile + wi + kk * 32, 32, wmma::mem_col_major);
        mw::load_split_sync(bh, bl, b_tile + kk + wj * 32, 32, wmma::mem_col_major);
      } else {
        wmma::load_matrix_sync(ah, a_hi + wi + kk * 32, 32);
        wmma::load_matrix_sync(al, a_lo + wi + kk * 32, 32);
        wmma::load_matrix_sync(bh, b_hi + kk + wj * 32, 32);
        wmma::load_matrix_sync(bl, b_lo + kk + wj * 32, 32);
      }
      mw::mma_corrected_sync(acc, ah, al, bh, bl, acc);
    }
    __syncthreads();
  }
  wmma::store_matrix_sync(c + (i0 + wi) + std::size_t(j0 + wj) * m, acc, m, wmma::mem_col_major);
}

template <class Launch>
double median_ms(int reps, Launch launch) {
  cudaEvent_t start, stop;
  MIXSOLVE_CUDA_CHECK(cudaEventCreate(&start));
  MIXSOLVE_CUDA_CHECK(cudaEventCreate(&stop));
  launch();  // warm-up
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(start));
    launch();
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(stop));
    MIXSOLVE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MIXSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  MIXSOLVE_CUDA_CHECK(cudaGetLastError());
  MIXSOLVE_CUDA_CHECK(cudaEventDestroy(start));
  MIXSOLVE_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// count values uniform in (-1, 1) (a fixed sequence), on the device.
template <class T>
T* device_random(std::size_t count, std::uint64_t seed) {
  std::vector<T> host(count);
  std::uint64_t state = seed;
  for (T& x : host) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = T(float(double(state >> 11) * 0x1p-53 * 2 - 1));
  }
  T* d = nullptr;
  MIXSOLVE_CUDA_CHECK(cudaMalloc(&d, sizeof(T) * count));
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(d, host.data(), sizeof(T) * count, cudaMemcpyHostToDevice));
  return d;
}

// Whether two device arrays of count floats hold the same bits.
bool same_bits(const float* x, const float* y, std::size_t count) {
  std::vector<float> hx(count), hy(count);
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(hx.data(), x, sizeof(float) * count, cudaMemcpyDeviceToHost));
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(hy.data(), y, sizeof(float) * count, cudaMemcpyDeviceToHost));
  return std::memcmp(hx.data(), hy.data(), sizeof(float) * count) == 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const mixsolve::bench::Options opt(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("wmma_benchmark: no CUDA GPU present; nothing to measure\n");
    return 0;
  }
  const int reps = std::stoi(opt.get("reps", "20"));
  nlohmann::json out = mixsolve::bench::device_json();
  std::printf("GPU: %s; %s; median of %d runs; ratio = API kernel time / helpers kernel time\n",
              out["gpu"].get<std::string>().c_str(), out["date"].get<std::string>().c_str(), reps);
  std::printf("%-10s %10s %14s %14s %8s  %s\n", "benchmark", "size", "api ms", "helpers ms", "ratio", "same C");
  const auto row = [&](const char* name, long long size, double api, double helpers, bool same) {
    std::printf("%-10s %10lld %14.4f %14.4f %8.3f  %s\n", name, size, api, helpers, api / helpers, same ? "yes" : "NO");
    out["rows"].push_back({{"benchmark", name},
                           {"size", size},
                           {"api_ms", api},
                           {"helpers_ms", helpers},
                           {"ratio", api / helpers},
                           {"same_result", same}});
  };
  for (const std::int64_t batches : opt.sizes("batches", "16384,65536,262144,1048576")) {
    const std::size_t outputs = std::size_t(batches) * 256;
    half* v = device_random<half>(std::size_t(batches) * 16, 1);
    float *d_api = device_random<float>(outputs, 2), *d_helpers = device_random<float>(outputs, 3);
    const unsigned blocks = unsigned((batches + kWarpsPerBlock - 1) / kWarpsPerBlock);
    const int n = int(batches);
    for (const bool identity : {false, true}) {
      const double api = median_ms(reps, [&] {
        if (identity)
          outer_api<true><<<blocks, 32 * kWarpsPerBlock>>>(v, d_api, n, 2.0f);
        else
          outer_api<false><<<blocks, 32 * kWarpsPerBlock>>>(v, d_api, n, 2.0f);
      });
      const double helpers = median_ms(reps, [&] {
        if (identity)
          outer_helpers<true><<<blocks, 32 * kWarpsPerBlock>>>(v, d_helpers, n, 2.0f);
        else
          outer_helpers<false><<<blocks, 32 * kWarpsPerBlock>>>(v, d_helpers, n, 2.0f);
      });
      row(identity ? "identity" : "outer", batches, api, helpers, same_bits(d_api, d_helpers, outputs));
    }
    MIXSOLVE_CUDA_CHECK(cudaFree(v));
    MIXSOLVE_CUDA_CHECK(cudaFree(d_api));
    MIXSOLVE_CUDA_CHECK(cudaFree(d_helpers));
  }
  for (const std::int64_t m : opt.sizes("sizes", "1024,2048,4096,8192")) {
    if (m % 32 != 0) throw mixsolve::InvalidArgument("--sizes: " + std::to_string(m) + " is not a multiple of 32");
    const std::size_t entries = std::size_t(m) * m;
    float *a = device_random<float>(entries, 4), *b = device_random<float>(entries, 5);
    float *c_api = device_random<float>(entries, 6), *c_helpers = device_random<float>(entries, 7);
    const dim3 grid(unsigned(m / 32), unsigned(m / 32));
    const double api =
        median_ms(reps, [&] { corrected_gemm<false><<<grid, 32 * kWarpsPerBlock>>>(a, b, c_api, int(m)); });
    const double helpers =
        median_ms(reps, [&] { corrected_gemm<true><<<grid, 32 * kWarpsPerBlock>>>(a, b, c_helpers, int(m)); });
    row("corrected", m, api, helpers, same_bits(c_api, c_helpers, entries));
    for (float* p : {a, b, c_api, c_helpers}) MIXSOLVE_CUDA_CHECK(cudaFree(p));
  }
  mixsolve::bench::write_json(opt, out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "wmma_benchmark: %s\n", e.what());
  return 1;
}
