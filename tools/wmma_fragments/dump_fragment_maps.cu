// SPDX-License-Identifier: BSD-3-Clause
// The element map of every WMMA fragment, by Ootomo & Yokota's (2020) method (section 3.1): a matrix whose
// entries are their own row index, then one whose entries are their column index, each loaded
// with load_matrix_sync; each thread then reads, for every x[e] of its fragment, the row and
// the column of the element it holds. One JSON object per line on stdout:
//   {"use":"matrix_a","m":16,"n":16,"k":16,"type":"half","layout":"row","elements":8,
//    "row":[[lane 0's rows by e], ...], "col":[...]}
// tools/wmma_fragments/fit_fragment_maps.py turns these into primitives/wmma_fragment_map.cuh.
//   nvcc -std=c++17 -arch=sm_90a -o dump_fragment_maps dump_fragment_maps.cu && ./dump_fragment_maps
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace nvcuda;

namespace {

template <class Storage>
__device__ Storage encode(int v) {
  if constexpr (std::is_same_v<Storage, half>)
    return __int2half_rn(v);
  else if constexpr (std::is_same_v<Storage, __nv_bfloat16>)
    return __int2bfloat16_rn(v);
  else
    return Storage(v);
}

template <class Element>
__device__ int decode(Element v) {
  if constexpr (std::is_same_v<Element, half>)
    return __half2int_rn(v);
  else if constexpr (std::is_same_v<Element, __nv_bfloat16>)
    return __bfloat162int_rn(v);
  else
    return int(v);
}

// rows x cols matrix with leading dimension ld (row major: ld >= cols, column major: ld >=
// rows); entry (i, j) = i (which == 0) or j (which == 1).
template <class Storage>
__global__ void fill(Storage* m, int rows, int cols, int ld, bool row_major, int which) {
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m[row_major ? i * ld + j : i + j * ld] = encode<Storage>(which == 0 ? i : j);
}

template <class Fragment, class Storage, bool kAccumulator>
__global__ void read_map(const Storage* m, int ld, bool row_major, int* out) {
  Fragment f;
  if constexpr (kAccumulator)
    wmma::load_matrix_sync(f, m, ld, row_major ? wmma::mem_row_major : wmma::mem_col_major);
  else
    wmma::load_matrix_sync(f, m, ld);
  for (int e = 0; e < f.num_elements; ++e) out[threadIdx.x * f.num_elements + e] = decode(f.x[e]);
}

template <class Fragment, class Storage, bool kAccumulator>
void dump(const char* use, int m, int n, int k, const char* type, bool row_major) {
  const int rows = std::string(use) == "matrix_b" ? k : m;
  const int cols = std::string(use) == "matrix_a" ? k : n;
  const int ld = ((row_major ? cols : rows) + 15) / 16 * 16;
  Storage* matrix = nullptr;
  int* map = nullptr;
  const int elements = Fragment::num_elements;
  cudaMalloc(&matrix, sizeof(Storage) * ld * 32);
  cudaMalloc(&map, sizeof(int) * 32 * elements);
  std::vector<int> found[2];
  for (int which = 0; which < 2; ++which) {
    fill<<<1, 1>>>(matrix, rows, cols, ld, row_major, which);
    read_map<Fragment, Storage, kAccumulator><<<1, 32>>>(matrix, ld, row_major, map);
    found[which].resize(32 * elements);
    cudaMemcpy(found[which].data(), map, sizeof(int) * found[which].size(), cudaMemcpyDeviceToHost);
  }
  std::printf("{\"use\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"type\":\"%s\",\"layout\":\"%s\",\"elements\":%d", use, m, n,
              k, type, row_major ? "row" : "col", elements);
  for (int which = 0; which < 2; ++which) {
    std::printf(",\"%s\":[", which == 0 ? "row" : "col");
    for (int lane = 0; lane < 32; ++lane) {
      std::printf("%s[", lane ? "," : "");
      for (int e = 0; e < elements; ++e) std::printf("%s%d", e ? "," : "", found[which][lane * elements + e]);
      std::printf("]");
    }
    std::printf("]");
  }
  std::printf("}\n");
  cudaFree(matrix);
  cudaFree(map);
}

template <int M, int N, int K, class T, class Storage>
void dump_operands(const char* type) {
  dump<wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::row_major>, Storage, false>("matrix_a", M, N, K, type, true);
  dump<wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::col_major>, Storage, false>("matrix_a", M, N, K, type, false);
  dump<wmma::fragment<wmma::matrix_b, M, N, K, T, wmma::row_major>, Storage, false>("matrix_b", M, N, K, type, true);
  dump<wmma::fragment<wmma::matrix_b, M, N, K, T, wmma::col_major>, Storage, false>("matrix_b", M, N, K, type, false);
}

template <int M, int N, int K, class T>
void dump_accumulator(const char* type) {
  dump<wmma::fragment<wmma::accumulator, M, N, K, T>, T, true>("accumulator", M, N, K, type, true);
  dump<wmma::fragment<wmma::accumulator, M, N, K, T>, T, true>("accumulator", M, N, K, type, false);
}

template <int M, int N, int K>
void dump_shape() {
  dump_operands<M, N, K, half, half>("half");
  dump_operands<M, N, K, __nv_bfloat16, __nv_bfloat16>("bf16");
  dump_operands<M, N, K, signed char, signed char>("s8");
  dump_operands<M, N, K, unsigned char, unsigned char>("u8");
  dump_accumulator<M, N, K, half>("half");
  dump_accumulator<M, N, K, float>("float");
  dump_accumulator<M, N, K, int>("int");
}

}  // namespace

int main() {
  dump_shape<16, 16, 16>();
  dump_shape<32, 8, 16>();
  dump_shape<8, 32, 16>();
  dump_operands<16, 16, 8, wmma::precision::tf32, float>("tf32");
  dump_accumulator<16, 16, 8, float>("float");
  dump_operands<8, 8, 4, double, double>("double");
  dump_accumulator<8, 8, 4, double>("double");
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
