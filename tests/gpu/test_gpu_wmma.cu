// SPDX-License-Identifier: BSD-3-Clause
// The WMMA fragment maps and helpers (primitives/wmma_helpers.cuh) against the WMMA API itself:
// for every fragment the maps cover, in both layouts, the element each x[e] holds is the one
// load_matrix_sync puts there; load_matrix_with_op_sync with the identity, load_vector_sync,
// make_identity, add_eye and store_vector_sync give what load_matrix_sync / store_matrix_sync
// give on the equivalent matrices in memory, bit for bit; an outer product of two vector
// fragments is v w^T.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>
#include <mma.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/primitives/wmma_corrected.cuh"
#include "mixsolve/primitives/wmma_helpers.cuh"

namespace {

using namespace nvcuda;
namespace mw = mixsolve::primitives::wmma;

template <class T>
__host__ __device__ T from_int(int v) {
  if constexpr (std::is_same_v<T, half>)
    return __int2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __int2bfloat16_rn(v);
  else
    return T(v);
}

template <class Fragment>
struct Shape {
  static constexpr int kRows = mw::detail::FragmentTraits<Fragment>::kRows;
  static constexpr int kCols = mw::detail::FragmentTraits<Fragment>::kCols;
};

// Loads `m` (rows x cols, leading dimension ld, the layout given) into a fragment with the WMMA
// API; accumulators take the layout as an argument, operands from their type.
template <class Fragment, class Storage>
__device__ void api_load(Fragment& f, const Storage* m, unsigned ld, wmma::layout_t layout) {
  if constexpr (std::is_same_v<typename mw::detail::FragmentTraits<Fragment>::UseTag, wmma::accumulator>)
    wmma::load_matrix_sync(f, m, ld, layout);
  else
    wmma::load_matrix_sync(f, m, ld);
}

// Counts the x[e] whose element (from matrices holding their row and column indices) differs
// from row_of / col_of.
template <class Fragment, class Storage>
__global__ void check_map(const Storage* rows, const Storage* cols, unsigned ld, wmma::layout_t layout, int* wrong) {
  Fragment r, c;
  api_load(r, rows, ld, layout);
  api_load(c, cols, ld, layout);
  const unsigned lane = threadIdx.x;
  for (int e = 0; e < Fragment::num_elements; ++e) {
    const int i = mw::detail::to_element<int>(r.x[e]), j = mw::detail::to_element<int>(c.x[e]);
    if (i != mw::row_of<Fragment>(lane, e) || j != mw::col_of<Fragment>(lane, e)) atomicAdd(wrong, 1);
  }
}

// The bits of a fragment element (1 to 8 bytes).
template <class T>
__device__ unsigned long long bits_of(const T& v) {
  unsigned long long bits = 0;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&v);
  for (unsigned b = 0; b < sizeof(T); ++b) bits |= static_cast<unsigned long long>(bytes[b]) << (8 * b);
  return bits;
}

// Counts the x[e] where two fragments differ bit for bit.
template <class Fragment>
__device__ void compare(const Fragment& a, const Fragment& b, int* wrong) {
  for (int e = 0; e < Fragment::num_elements; ++e)
    if (bits_of(a.x[e]) != bits_of(b.x[e])) atomicAdd(wrong, 1);
}

// load_matrix_with_op_sync with the identity against load_matrix_sync.
template <class Fragment, class Storage>
__global__ void check_load_with_op(const Storage* m, unsigned ld, wmma::layout_t layout, int* wrong) {
  Fragment a, b;
  api_load(a, m, ld, layout);
  using Element = std::remove_reference_t<decltype(b.x[0])>;
  mw::load_matrix_with_op_sync(b, m, ld, layout, [](int, Storage v) { return mw::detail::to_element<Element>(v); });
  compare(a, b, wrong);
}

// load_vector_sync(v) against load_matrix_sync of `padded`, the zero matrix with v as column 0
// (matrix_a) or row 0 (matrix_b).
template <class Fragment, class Storage>
__global__ void check_load_vector(const Storage* v, const Storage* padded, unsigned ld, wmma::layout_t layout,
                                  int* wrong) {
  Fragment a, b;
  api_load(a, padded, ld, layout);
  mw::load_vector_sync(b, v);
  compare(a, b, wrong);
}

// make_identity(alpha) against load_matrix_sync of alpha I, and add_eye(alpha) on `m` against
// load_matrix_sync of m + alpha I (both in `identity` and `shifted`).
template <class Fragment, class Storage>
__global__ void check_identity(const Storage* identity, const Storage* m, const Storage* shifted, unsigned ld,
                               wmma::layout_t layout, int alpha, int* wrong) {
  Fragment a, b;
  api_load(a, identity, ld, layout);
  mw::make_identity(b, alpha);
  compare(a, b, wrong);
  api_load(a, shifted, ld, layout);
  api_load(b, m, ld, layout);
  mw::add_eye(b, alpha);
  compare(a, b, wrong);
}

// store_vector_sync of an accumulator loaded from m: column 0 and row 0.
template <class Fragment, class Storage>
__global__ void store_vectors(const Storage* m, unsigned ld, wmma::layout_t layout, Storage* column, Storage* row) {
  Fragment a;
  wmma::load_matrix_sync(a, m, ld, layout);
  mw::store_vector_sync(column, a, wmma::mem_col_major);
  mw::store_vector_sync(row, a, wmma::mem_row_major);
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  MIXSOLVE_CUDA_CHECK(cudaMalloc(&d, sizeof(T) * std::max<std::size_t>(host.size(), 1)));
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(d, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice));
  return d;
}

int* zero_counter() {
  int* d = nullptr;
  MIXSOLVE_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  MIXSOLVE_CUDA_CHECK(cudaMemset(d, 0, sizeof(int)));
  return d;
}

int read_counter(int* d) {
  int h = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
  MIXSOLVE_CUDA_CHECK(cudaFree(d));
  return h;
}

// One fragment type in one layout: every check above; failures name the case.
template <class Fragment, class Storage>
void check_fragment(const std::string& name, bool row_major) {
  using Use = typename mw::detail::FragmentTraits<Fragment>::UseTag;
  constexpr bool kAccumulator = std::is_same_v<Use, wmma::accumulator>;
  constexpr int rows = Shape<Fragment>::kRows, cols = Shape<Fragment>::kCols;
  const unsigned ld = unsigned(((row_major ? cols : rows) + 15) / 16 * 16);
  const wmma::layout_t layout = row_major ? wmma::mem_row_major : wmma::mem_col_major;
  const std::size_t size = std::size_t(ld) * 32;
  const auto at = [&](int i, int j) { return row_major ? std::size_t(i) * ld + j : i + std::size_t(j) * ld; };
  const std::string label = name + (row_major ? " row-major" : " col-major");

  std::vector<Storage> row_index(size, from_int<Storage>(0)), col_index(size, from_int<Storage>(0)),
      values(size, from_int<Storage>(0));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      row_index[at(i, j)] = from_int<Storage>(i);
      col_index[at(i, j)] = from_int<Storage>(j);
      values[at(i, j)] = from_int<Storage>((i * 7 + j * 3) % 13 - 6);  // small integers: exact in every type
    }
  Storage *d_rows = device_copy(row_index), *d_cols = device_copy(col_index), *d_values = device_copy(values);

  int* wrong = zero_counter();
  check_map<Fragment, Storage><<<1, 32>>>(d_rows, d_cols, ld, layout, wrong);
  EXPECT_EQ(read_counter(wrong), 0) << label << ": elements not where the map says";

  wrong = zero_counter();
  check_load_with_op<Fragment, Storage><<<1, 32>>>(d_values, ld, layout, wrong);
  EXPECT_EQ(read_counter(wrong), 0) << label << ": load_matrix_with_op_sync";

  if constexpr (!kAccumulator) {
    constexpr int length = std::is_same_v<Use, wmma::matrix_a> ? rows : cols;
    std::vector<Storage> v(length), padded(size, from_int<Storage>(0));
    for (int x = 0; x < length; ++x) {
      v[x] = from_int<Storage>(x % 11 - 5);
      padded[std::is_same_v<Use, wmma::matrix_a> ? at(x, 0) : at(0, x)] = v[x];
    }
    Storage *d_v = device_copy(v), *d_padded = device_copy(padded);
    wrong = zero_counter();
    check_load_vector<Fragment, Storage><<<1, 32>>>(d_v, d_padded, ld, layout, wrong);
    EXPECT_EQ(read_counter(wrong), 0) << label << ": load_vector_sync";
    MIXSOLVE_CUDA_CHECK(cudaFree(d_v));
    MIXSOLVE_CUDA_CHECK(cudaFree(d_padded));
  } else {
    std::vector<Storage> column(rows), row(cols);
    Storage *d_column = device_copy(column), *d_row = device_copy(row);
    store_vectors<Fragment, Storage><<<1, 32>>>(d_values, ld, layout, d_column, d_row);
    MIXSOLVE_CUDA_CHECK(cudaMemcpy(column.data(), d_column, sizeof(Storage) * rows, cudaMemcpyDeviceToHost));
    MIXSOLVE_CUDA_CHECK(cudaMemcpy(row.data(), d_row, sizeof(Storage) * cols, cudaMemcpyDeviceToHost));
    for (int i = 0; i < rows; ++i)
      EXPECT_EQ(std::memcmp(&column[i], &values[at(i, 0)], sizeof(Storage)), 0) << label << ": column " << i;
    for (int j = 0; j < cols; ++j)
      EXPECT_EQ(std::memcmp(&row[j], &values[at(0, j)], sizeof(Storage)), 0) << label << ": row " << j;
    MIXSOLVE_CUDA_CHECK(cudaFree(d_column));
    MIXSOLVE_CUDA_CHECK(cudaFree(d_row));
  }

  if constexpr (rows == cols) {
    const int alpha = 3;
    std::vector<Storage> identity(size, from_int<Storage>(0)), shifted = values;
    for (int i = 0; i < rows; ++i) {
      identity[at(i, i)] = from_int<Storage>(alpha);
      shifted[at(i, i)] = from_int<Storage>((i * 7 + i * 3) % 13 - 6 + alpha);
    }
    Storage *d_identity = device_copy(identity), *d_shifted = device_copy(shifted);
    wrong = zero_counter();
    check_identity<Fragment, Storage><<<1, 32>>>(d_identity, d_values, d_shifted, ld, layout, alpha, wrong);
    EXPECT_EQ(read_counter(wrong), 0) << label << ": make_identity / add_eye";
    MIXSOLVE_CUDA_CHECK(cudaFree(d_identity));
    MIXSOLVE_CUDA_CHECK(cudaFree(d_shifted));
  }
  MIXSOLVE_CUDA_CHECK(cudaGetLastError());
  MIXSOLVE_CUDA_CHECK(cudaFree(d_rows));
  MIXSOLVE_CUDA_CHECK(cudaFree(d_cols));
  MIXSOLVE_CUDA_CHECK(cudaFree(d_values));
}

template <int M, int N, int K, class T, class Storage>
void check_operands(const std::string& type) {
  const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " + type;
  check_fragment<wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::row_major>, Storage>("matrix_a " + shape, true);
  check_fragment<wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::col_major>, Storage>("matrix_a " + shape, false);
  check_fragment<wmma::fragment<wmma::matrix_b, M, N, K, T, wmma::row_major>, Storage>("matrix_b " + shape, true);
  check_fragment<wmma::fragment<wmma::matrix_b, M, N, K, T, wmma::col_major>, Storage>("matrix_b " + shape, false);
}

// An accumulator takes its memory layout as an argument: both.
template <int M, int N, int K, class T>
void check_accumulator(const std::string& type) {
  const std::string name =
      "accumulator " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " + type;
  check_fragment<wmma::fragment<wmma::accumulator, M, N, K, T>, T>(name, true);
  check_fragment<wmma::fragment<wmma::accumulator, M, N, K, T>, T>(name, false);
}

template <int M, int N, int K>
void check_shape() {
  check_operands<M, N, K, half, half>("half");
  check_operands<M, N, K, __nv_bfloat16, __nv_bfloat16>("bf16");
  check_operands<M, N, K, signed char, signed char>("s8");
  check_operands<M, N, K, unsigned char, unsigned char>("u8");
  check_accumulator<M, N, K, half>("half");
  check_accumulator<M, N, K, float>("float");
  check_accumulator<M, N, K, int>("int");
}

TEST(GpuWmma, FragmentMapsAndHelpersAgreeWithTheWmmaApiForEveryFragment) {
  MIXSOLVE_REQUIRE_GPU();
  int major = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) MIXSOLVE_SKIP_GPU_TEST("the fragment maps were read on sm_90");
  check_shape<16, 16, 16>();
  check_shape<32, 8, 16>();
  check_shape<8, 32, 16>();
  check_operands<16, 16, 8, wmma::precision::tf32, float>("tf32");
  check_accumulator<16, 16, 8, float>("float");
  check_operands<8, 8, 4, double, double>("double");
  check_accumulator<8, 8, 4, double>("double");
}

// D = v w^T from two vector fragments and one mma_sync: the outer product, exactly (small
// integers), for FP16 (m16n16k16) and FP64 (m8n8k4) fragments.
template <int M, int N, int K, class T, class Accumulator>
__global__ void outer_product(const T* v, const T* w, Accumulator* d) {
  wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::col_major> a;
  wmma::fragment<wmma::matrix_b, M, N, K, T, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, M, N, K, Accumulator> c;
  mw::load_vector_sync(a, v);
  mw::load_vector_sync(b, w);
  wmma::fill_fragment(c, Accumulator(0));
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(d, c, M, wmma::mem_col_major);
}

template <int M, int N, int K, class T, class Accumulator>
void check_outer_product(const char* name) {
  std::vector<T> v(M), w(N);
  for (int i = 0; i < M; ++i) v[i] = from_int<T>(i - 5);
  for (int j = 0; j < N; ++j) w[j] = from_int<T>(2 * j - 7);
  T *d_v = device_copy(v), *d_w = device_copy(w);
  std::vector<Accumulator> d(M * N);
  Accumulator* d_d = device_copy(d);
  outer_product<M, N, K, T, Accumulator><<<1, 32>>>(d_v, d_w, d_d);
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(d.data(), d_d, sizeof(Accumulator) * d.size(), cudaMemcpyDeviceToHost));
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i)
      EXPECT_EQ(double(d[i + j * M]), double((i - 5) * (2 * j - 7))) << name << " " << i << "," << j;
  MIXSOLVE_CUDA_CHECK(cudaFree(d_v));
  MIXSOLVE_CUDA_CHECK(cudaFree(d_w));
  MIXSOLVE_CUDA_CHECK(cudaFree(d_d));
}

TEST(GpuWmma, VectorFragmentsGiveTheOuterProduct) {
  MIXSOLVE_REQUIRE_GPU();
  int major = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) MIXSOLVE_SKIP_GPU_TEST("the fragment maps were read on sm_90");
  check_outer_product<16, 16, 16, half, float>("half m16n16k16");
  check_outer_product<8, 8, 4, double, double>("double m8n8k4");
}

// C (16 x 16) = A (16 x k, row major) B (k x 16, column major) of FP32 data by one warp, with the
// split on load and the corrected product (kCorrected) or the plain product of the rounded
// operands.
template <class T, int K, bool kCorrected>
__global__ void corrected_product(const float* a, const float* b, int k, float* c) {
  using A = wmma::fragment<wmma::matrix_a, 16, 16, K, T, wmma::row_major>;
  using B = wmma::fragment<wmma::matrix_b, 16, 16, K, T, wmma::col_major>;
  wmma::fragment<wmma::accumulator, 16, 16, K, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int l = 0; l < k; l += K) {
    A a_hi, a_lo;
    B b_hi, b_lo;
    mw::load_split_sync(a_hi, a_lo, a + l, k, wmma::mem_row_major);
    mw::load_split_sync(b_hi, b_lo, b + l, k, wmma::mem_col_major);
    if constexpr (kCorrected) {
      mw::mma_corrected_sync(acc, a_hi, a_lo, b_hi, b_lo, acc);
    } else {
      wmma::mma_sync(acc, a_hi, b_hi, acc);
    }
  }
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_col_major);
}

// max_ij |C_ij - (AB)_ij| / (|A||B|)_ij against an FP64 product.
template <class T, int K, bool kCorrected>
double product_error(const std::vector<float>& a, const std::vector<float>& b, int k) {
  float *d_a = device_copy(a), *d_b = device_copy(b);
  std::vector<float> c(256);
  float* d_c = device_copy(c);
  corrected_product<T, K, kCorrected><<<1, 32>>>(d_a, d_b, k, d_c);
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(c.data(), d_c, sizeof(float) * 256, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int j = 0; j < 16; ++j)
    for (int i = 0; i < 16; ++i) {
      double exact = 0, magnitude = 0;
      for (int l = 0; l < k; ++l) {
        exact += double(a[i * k + l]) * double(b[l + j * k]);
        magnitude += std::fabs(double(a[i * k + l]) * double(b[l + j * k]));
      }
      worst = std::max(worst, std::fabs(double(c[i + j * 16]) - exact) / magnitude);
    }
  MIXSOLVE_CUDA_CHECK(cudaFree(d_a));
  MIXSOLVE_CUDA_CHECK(cudaFree(d_b));
  MIXSOLVE_CUDA_CHECK(cudaFree(d_c));
  return worst;
}

// The corrected fragment products keep FP32's accuracy: at k = 512 on uniform(-1, 1) data within
// 2^-20 of |A||B| (an FP32 dot product's own rounding is of order 2^-24 sqrt(k)), where the
// products of the rounded operands alone err by more than 16 times as much.
TEST(GpuWmma, CorrectedFragmentProductsKeepFp32Accuracy) {
  MIXSOLVE_REQUIRE_GPU();
  int major = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) MIXSOLVE_SKIP_GPU_TEST("the fragment maps were read on sm_90");
  const int k = 512;
  std::vector<float> a(16 * k), b(k * 16);
  std::uint64_t state = 12345;
  const auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return float(double(state >> 11) * 0x1p-53 * 2 - 1);
  };
  for (float& x : a) x = uniform();
  for (float& x : b) x = uniform();
  const double halfhalf = product_error<half, 16, true>(a, b, k), fp16 = product_error<half, 16, false>(a, b, k);
  const double tf32tf32 = product_error<wmma::precision::tf32, 8, true>(a, b, k),
               tf32 = product_error<wmma::precision::tf32, 8, false>(a, b, k);
  std::printf("k = %d, max |error| / (|A||B|): halfhalf %.3g (FP16 %.3g), tf32tf32 %.3g (TF32 %.3g)\n", k, halfhalf,
              fp16, tf32tf32, tf32);
  EXPECT_LT(halfhalf, 0x1p-20);
  EXPECT_LT(tf32tf32, 0x1p-20);
  EXPECT_GT(fp16, 16 * halfhalf);
  EXPECT_GT(tf32, 16 * tf32tf32);
}

}  // namespace
