// SPDX-License-Identifier: BSD-3-Clause
// SLFP kernels (include/mixsolve/slfp/blas.hpp): argument checks, the dispatch from the runtime
// Format to the accessor types of formats/slfp.hpp, and each kernel written once over an accessor:
// an OpenMP loop on the host and a grid-stride kernel on the device. On the device a warp moves
// tiles of 256 consecutive values with streaming vector accesses laid out so that each instruction
// of each plane covers one contiguous stretch across the warp (Group, below): the narrow planes of
// the concatenated formats move whole sectors too (§5.4 of Mukunoki & Imamura 2016 found their scalar accesses
// costly). A rest of fewer than 256 values, or planes not 16-byte aligned, go value by value.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "common.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::slfp {

using namespace detail;

const std::vector<Format>& all_formats() {
  static const std::vector<Format> formats = {
      Format::Fp64,       Format::Slfp64in56, Format::Slfp64in48, Format::Slfp64in40, Format::Slfp64in32,
      Format::Slfp64in24, Format::Slfp64in16, Format::Fp32,       Format::Slfp32in24, Format::Slfp32in16};
  return formats;
}

const char* to_string(Format f) {
  switch (f) {
    case Format::Fp64: return "fp64";
    case Format::Slfp64in56: return "slfp64in56b";
    case Format::Slfp64in48: return "slfp64in48b";
    case Format::Slfp64in40: return "slfp64in40b";
    case Format::Slfp64in32: return "slfp64in32b";
    case Format::Slfp64in24: return "slfp64in24b";
    case Format::Slfp64in16: return "slfp64in16b";
    case Format::Fp32: return "fp32";
    case Format::Slfp32in24: return "slfp32in24b";
    case Format::Slfp32in16: return "slfp32in16b";
  }
  return "?";
}

Format parse_format(const std::string& name) {
  std::string known;
  for (const Format f : all_formats()) {
    if (name == to_string(f)) return f;
    known += std::string(known.empty() ? "" : ", ") + to_string(f);
  }
  throw InvalidArgument("slfp: unknown format \"" + name + "\" (known: " + known + ")");
}

int container_bits(Format f) {
  return dispatch(f, [](auto tag) { return container_bits_of<decltype(tag)>(); });
}

bool fp64_based(Format f) { return int(f) < int(Format::Fp32); }
Vector subvector(const Vector& v, std::int64_t offset, std::int64_t size) {
  if (offset < 0 || size < 0 || offset + size > v.size)
    throw InvalidArgument("slfp::subvector: values " + std::to_string(offset) + " .. " + std::to_string(offset + size) +
                          " do not lie in the vector's " + std::to_string(v.size));
  Vector s = v;
  s.size = size;
  if (s.w32) s.w32 += offset;
  if (s.w16) s.w16 += offset;
  if (s.w8) s.w8 += offset;
  if (s.f64) s.f64 += offset;
  if (s.f32) s.f32 += offset;
  return s;
}

double unit_roundoff(Format f) {
  const int exponent_bits = fp64_based(f) ? 11 : 8;
  return std::ldexp(1.0, -(container_bits(f) - exponent_bits));  // the sign bit stands for the implicit one
}
bool single_word(Format f) { return container_bits(f) == 16 || container_bits(f) == 32 || container_bits(f) == 64; }

namespace {

void check_pair(const Context& ctx, const Vector& x, const Vector& y, const char* op) {
  check_vector(ctx, x, std::string(op) + ": x");
  check_vector(ctx, y, std::string(op) + ": y");
  if (x.format != y.format)
    throw InvalidArgument(std::string(op) + ": x is " + to_string(x.format) + " and y " + to_string(y.format) +
                          "; both must have one format");
  if (x.size != y.size)
    throw InvalidArgument(std::string(op) + ": x.size (" + std::to_string(x.size) + ") differs from y.size (" +
                          std::to_string(y.size) + ")");
  if (x.memory != y.memory) throw InvalidArgument(std::string(op) + ": x and y are in different memories");
}

// a x + y with one rounding, the same on the host and the device (nvcc would otherwise contract
// a * x + y into an FMA on the device only).
template <class T>
MIXSOLVE_HD T fused(T a, T x, T y) {
#if defined(__CUDA_ARCH__)
  return fma(a, x, y);
#else
  return std::fma(a, x, y);
#endif
}

// ---- block access for the device kernels ---------------------------------------------------

// A warp moves a tile of 256 consecutive values, 8 per thread, in groups of G = 16 bytes of the
// accessor's widest plane (G = 2 for FP64, 4 for a 32-bit plane, 8 for a 16-bit one): lane l holds
// values tile0 + g * 32 G + l G + j (g < 8 / G, j < G), so that every load and store instruction
// of every plane covers one contiguous stretch of memory across the warp (16, 8, 4 or 2 bytes a
// lane), whatever the plane's width.
constexpr int kBlock = 8;  // values per thread and tile
constexpr int kTile = 32 * kBlock;

template <class A>
struct Group;
template <class F>
struct Group<SlfpVector<F>> {
  static constexpr int kSize = F::kHas32 ? 4 : 8;
};
template <class T>
struct Group<IeeeVector<T>> {
  static constexpr int kSize = int(16 / sizeof(T));
};

template <int Bytes>
struct Chunk;
template <>
struct Chunk<16> {
  using type = uint4;
};
template <>
struct Chunk<8> {
  using type = uint2;
};
template <>
struct Chunk<4> {
  using type = unsigned int;
};
template <>
struct Chunk<2> {
  using type = unsigned short;
};

// The 8 words of plane `plane` this lane holds in the tile at tile0, with streaming (evict-first)
// accesses: every byte is used once.
template <int G, class W>
__device__ __forceinline__ void load_words(const W* plane, std::int64_t tile0, int lane, W (&w)[kBlock]) {
  using C = typename Chunk<G* int(sizeof(W))>::type;
#pragma unroll
  for (int g = 0; g < kBlock / G; ++g) {
    const C c = __ldcs(reinterpret_cast<const C*>(plane + tile0 + g * 32 * G + lane * G));
    std::memcpy(w + g * G, &c, sizeof c);
  }
}

template <int G, class W>
__device__ __forceinline__ void store_words(W* plane, std::int64_t tile0, int lane, const W (&w)[kBlock]) {
  using C = typename Chunk<G* int(sizeof(W))>::type;
#pragma unroll
  for (int g = 0; g < kBlock / G; ++g) {
    C c;
    std::memcpy(&c, w + g * G, sizeof c);
    __stcs(reinterpret_cast<C*>(plane + tile0 + g * 32 * G + lane * G), c);
  }
}

// s[k] |= word k of this lane's part of `plane`, shifted into place; and the reverse.
template <int G, class W, class Bits>
__device__ __forceinline__ void gather_plane(const W* plane, std::int64_t tile0, int lane, int shift,
                                             Bits (&s)[kBlock]) {
  W w[kBlock];
  load_words<G>(plane, tile0, lane, w);
#pragma unroll
  for (int k = 0; k < kBlock; ++k) s[k] |= Bits(w[k]) << shift;
}
template <int G, class W, class Bits>
__device__ __forceinline__ void scatter_plane(W* plane, std::int64_t tile0, int lane, int shift,
                                              const Bits (&s)[kBlock]) {
  W w[kBlock];
#pragma unroll
  for (int k = 0; k < kBlock; ++k) w[k] = static_cast<W>(s[k] >> shift);
  store_words<G>(plane, tile0, lane, w);
}

// This lane's 8 values of the tile at tile0 (a multiple of 256; 16-byte aligned planes), widened.
// The planes hold the stored bits most significant first (formats/slfp.hpp).
template <class F>
__device__ __forceinline__ void load_tile(const SlfpVector<F>& a, std::int64_t tile0, int lane,
                                          typename F::value_type (&v)[kBlock]) {
  constexpr int G = Group<SlfpVector<F>>::kSize;
  typename F::Bits s[kBlock] = {};
  int shift = F::kContainerBits;
  if constexpr (F::kHas32) gather_plane<G>(a.w32, tile0, lane, shift -= 32, s);
  if constexpr (F::kHas16) gather_plane<G>(a.w16, tile0, lane, shift -= 16, s);
  if constexpr (F::kHas8) gather_plane<G>(a.w8, tile0, lane, 0, s);
#pragma unroll
  for (int k = 0; k < kBlock; ++k) v[k] = F::decode(s[k]);
}

template <Rounding R, class F>
__device__ __forceinline__ void store_tile(const SlfpVector<F>& a, std::int64_t tile0, int lane,
                                           const typename F::value_type (&v)[kBlock]) {
  constexpr int G = Group<SlfpVector<F>>::kSize;
  typename F::Bits s[kBlock];
#pragma unroll
  for (int k = 0; k < kBlock; ++k) s[k] = F::template encode<R>(v[k]);
  int shift = F::kContainerBits;
  if constexpr (F::kHas32) scatter_plane<G>(a.w32, tile0, lane, shift -= 32, s);
  if constexpr (F::kHas16) scatter_plane<G>(a.w16, tile0, lane, shift -= 16, s);
  if constexpr (F::kHas8) scatter_plane<G>(a.w8, tile0, lane, 0, s);
}

template <class T>
__device__ __forceinline__ void load_tile(const IeeeVector<T>& a, std::int64_t tile0, int lane, T (&v)[kBlock]) {
  load_words<Group<IeeeVector<T>>::kSize>(a.data, tile0, lane, v);
}
template <Rounding R, class T>
__device__ __forceinline__ void store_tile(const IeeeVector<T>& a, std::int64_t tile0, int lane, const T (&v)[kBlock]) {
  store_words<Group<IeeeVector<T>>::kSize>(a.data, tile0, lane, v);
}

// Whether every plane of v is 16-byte aligned (the tile path's vector accesses).
bool block_aligned(const Vector& v) {
  for (const void* p :
       {static_cast<const void*>(v.w32), static_cast<const void*>(v.w16), static_cast<const void*>(v.w8),
        static_cast<const void*>(v.f64), static_cast<const void*>(v.f32)})
    if (p != nullptr && reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// ---- the kernels, once per accessor --------------------------------------------------------

// This thread's share of x and y: on_tile(tile0, lane, xv, yv) with its 8 values of each whole
// tile of 256 its warp takes (where `tiles`), then on_value(i) for each value of the rest.
template <class A, class OnTile, class OnValue>
__device__ __forceinline__ void walk(std::int64_t n, const A& x, const A& y, bool tiles, OnTile&& on_tile,
                                     OnValue&& on_value) {
  using T = typename A::value_type;
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = std::int64_t(gridDim.x) * blockDim.x;
  const int lane = threadIdx.x % 32;
  std::int64_t done = 0;
  if (tiles) {
    const std::int64_t n_tiles = n / kTile;
    for (std::int64_t t = thread / 32; t < n_tiles; t += threads / 32) {
      T xv[kBlock], yv[kBlock];
      load_tile(x, t * kTile, lane, xv);
      load_tile(y, t * kTile, lane, yv);
      on_tile(t * kTile, lane, xv, yv);
    }
    done = n_tiles * kTile;
  }
  for (std::int64_t i = done + thread; i < n; i += threads) on_value(i);
}

// y = alpha x + y (Mukunoki & Imamura 2016, §4.1).
template <Rounding R, class A>
__global__ void axpy_kernel(std::int64_t n, typename A::value_type alpha, A x, A y, bool tiles) {
  using T = typename A::value_type;
  walk(
      n, x, y, tiles,
      [&](std::int64_t tile0, int lane, const T(&xv)[kBlock], T(&yv)[kBlock]) {
#pragma unroll
        for (int k = 0; k < kBlock; ++k) yv[k] = fused(alpha, xv[k], yv[k]);
        store_tile<R>(y, tile0, lane, yv);
      },
      [&](std::int64_t i) { y.template store<R>(i, fused(alpha, x.load(i), y.load(i))); });
}

// Partial sums of x_i y_i in FP64, one per thread block, into partial[blockIdx.x].
template <class A>
__global__ void dot_kernel(std::int64_t n, A x, A y, bool tiles, double* partial) {
  using T = typename A::value_type;
  double sum = 0;
  walk(
      n, x, y, tiles,
      [&](std::int64_t, int, const T(&xv)[kBlock], const T(&yv)[kBlock]) {
#pragma unroll
        for (int k = 0; k < kBlock; ++k) sum = fma(double(xv[k]), double(yv[k]), sum);
      },
      [&](std::int64_t i) { sum = fma(double(x.load(i)), double(y.load(i)), sum); });
  const int lane = threadIdx.x % 32;
  __shared__ double warp_sums[32];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
  }
}

template <Rounding R, class In, class A>
__global__ void encode_kernel(std::int64_t n, const In* x, A y) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y.template store<R>(i, x[i]);
}

template <class Out, class A>
__global__ void decode_kernel(std::int64_t n, A x, Out* y) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x.load(i);
}

constexpr int kThreads = 256;
// Host loops shorter than this run on the calling thread: an OpenMP region costs microseconds, and
// on a loaded machine a wait for a descheduled thread (the host GMRES's basis vectors at small n:
// a 2 x 2 solve took 1.7 s with 2 threads, 0.07 s with one).
[[maybe_unused]] constexpr std::int64_t kHostParallelMin = 1 << 15;

// The checks encode and decode share: the vector `v` (called `vector_name`), its base type against
// the plain array's `T`, and the plain array `array` (`array_name`) in v's memory. False: nothing
// to do (size 0).
template <class T>
bool check_conversion(const Context& ctx, const Vector& v, const void* array, const std::string& op,
                      const char* vector_name, const char* array_name) {
  check_vector(ctx, v, op + ": " + vector_name);
  if (fp64_based(v.format) != std::is_same_v<T, double>)
    throw InvalidArgument(op + ": " + vector_name + " is " + to_string(v.format) + ", not " +
                          (std::is_same_v<T, double> ? "FP64" : "FP32") + "-based like " + array_name);
  if (v.size == 0) return false;
  check_pointer(ctx, array, sizeof(T), v.memory, op + ": " + array_name);
  return true;
}

template <class In>
void encode_any(Context& ctx, const In* x, const Vector& y, Rounding rounding, const char* op) {
  if (!check_conversion<In>(ctx, y, x, op, "y", "x")) return;
  dispatch(y.format, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (std::is_same_v<value_of<Tag>, In>) {
      const auto a = accessor(y, tag);
      const std::int64_t n = y.size;
      if (y.memory == Memory::Host) {
        if (rounding == Rounding::NearestEven) {
#pragma omp parallel for schedule(static) if (n >= kHostParallelMin)
          for (std::int64_t i = 0; i < n; ++i) a.template store<Rounding::NearestEven>(i, x[i]);
        } else {
#pragma omp parallel for schedule(static) if (n >= kHostParallelMin)
          for (std::int64_t i = 0; i < n; ++i) a.template store<Rounding::TowardZero>(i, x[i]);
        }
        return;
      }
      const unsigned grid = grid_for(ctx, n, kThreads);
      if (rounding == Rounding::NearestEven)
        encode_kernel<Rounding::NearestEven><<<grid, kThreads, 0, ctx.stream()>>>(n, x, a);
      else
        encode_kernel<Rounding::TowardZero><<<grid, kThreads, 0, ctx.stream()>>>(n, x, a);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
  });
}

template <class Out>
void decode_any(Context& ctx, const Vector& x, Out* y, const char* op) {
  if (!check_conversion<Out>(ctx, x, y, op, "x", "y")) return;
  dispatch(x.format, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (std::is_same_v<value_of<Tag>, Out>) {
      const auto a = accessor(x, tag);
      const std::int64_t n = x.size;
      if (x.memory == Memory::Host) {
#pragma omp parallel for schedule(static) if (n >= kHostParallelMin)
        for (std::int64_t i = 0; i < n; ++i) y[i] = a.load(i);
        return;
      }
      decode_kernel<<<grid_for(ctx, n, kThreads), kThreads, 0, ctx.stream()>>>(n, a, y);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace

void encode(Context& ctx, const double* x, const Vector& y, Rounding rounding) {
  encode_any(ctx, x, y, rounding, "slfp::encode");
}
void encode(Context& ctx, const float* x, const Vector& y, Rounding rounding) {
  encode_any(ctx, x, y, rounding, "slfp::encode");
}
void decode(Context& ctx, const Vector& x, double* y) { decode_any(ctx, x, y, "slfp::decode"); }
void decode(Context& ctx, const Vector& x, float* y) { decode_any(ctx, x, y, "slfp::decode"); }

void axpy(Context& ctx, double alpha, const Vector& x, const Vector& y, Rounding rounding) {
  check_pair(ctx, x, y, "slfp::axpy");
  if (x.size == 0) return;
  dispatch(x.format, [&](auto tag) {
    using T = value_of<decltype(tag)>;
    const auto xa = accessor(x, tag), ya = accessor(y, tag);
    const T a = static_cast<T>(alpha);
    const std::int64_t n = x.size;
    if (x.memory == Memory::Host) {
      if (rounding == Rounding::NearestEven) {
#pragma omp parallel for schedule(static) if (n >= kHostParallelMin)
        for (std::int64_t i = 0; i < n; ++i)
          ya.template store<Rounding::NearestEven>(i, fused(a, xa.load(i), ya.load(i)));
      } else {
#pragma omp parallel for schedule(static) if (n >= kHostParallelMin)
        for (std::int64_t i = 0; i < n; ++i)
          ya.template store<Rounding::TowardZero>(i, fused(a, xa.load(i), ya.load(i)));
      }
      return;
    }
    const bool tiles = block_aligned(x) && block_aligned(y);
    const unsigned grid = grid_for(ctx, tiles ? n / kBlock + 1 : n, kThreads);
    if (rounding == Rounding::NearestEven)
      axpy_kernel<Rounding::NearestEven><<<grid, kThreads, 0, ctx.stream()>>>(n, a, xa, ya, tiles);
    else
      axpy_kernel<Rounding::TowardZero><<<grid, kThreads, 0, ctx.stream()>>>(n, a, xa, ya, tiles);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  });
}

double dot(Context& ctx, const Vector& x, const Vector& y) {
  check_pair(ctx, x, y, "slfp::dot");
  if (x.size == 0) return 0.0;
  return dispatch(x.format, [&](auto tag) -> double {
    const auto xa = accessor(x, tag), ya = accessor(y, tag);
    const std::int64_t n = x.size;
    if (x.memory == Memory::Host) {
      double sum = 0;
#pragma omp parallel for schedule(static) if (n >= kHostParallelMin) reduction(+ : sum)
      for (std::int64_t i = 0; i < n; ++i) sum = std::fma(double(xa.load(i)), double(ya.load(i)), sum);
      return sum;
    }
    const bool tiles = block_aligned(x) && block_aligned(y);
    const unsigned grid = grid_for(ctx, tiles ? n / kBlock + 1 : n, kThreads, true);
    double* partial = static_cast<double*>(ctx.workspace(grid * sizeof(double)));
    dot_kernel<<<grid, kThreads, 0, ctx.stream()>>>(n, xa, ya, tiles, partial);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    std::vector<double> sums(grid);
    MIXSOLVE_CUDA_CHECK(
        cudaMemcpyAsync(sums.data(), partial, grid * sizeof(double), cudaMemcpyDeviceToHost, ctx.stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
    double sum = 0;
    for (const double s : sums) sum += s;
    return sum;
  });
}

// ---- GEMV ---------------------------------------------------------------------------------

// Row (offset in the tile) of this lane's value k in a tile of Group<A>::kSize-value groups.
template <class A>
__device__ __forceinline__ int tile_offset(int k, int lane) {
  constexpr int G = Group<A>::kSize;
  return (k / G) * 32 * G + lane * G + k % G;
}

// y_i = alpha sum_j a(i, j) x_j + beta y_i. Where `tiles` (16-byte aligned planes, ld a multiple
// of 8), a warp takes 256 rows and walks the columns, a lane's 8 rows of each column by the tile
// loads; the rows past the last whole tile go one per thread.
template <class A>
__global__ void gemv_n_kernel(std::int64_t rows, std::int64_t cols, std::int64_t ld, double alpha, A a, const double* x,
                              double beta, double* y, bool tiles) {
  using T = typename A::value_type;
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = std::int64_t(gridDim.x) * blockDim.x;
  const int lane = threadIdx.x % 32;
  const auto finish = [&](std::int64_t i, double sum) {
    y[i] = beta == 0.0 ? alpha * sum : fma(alpha, sum, beta * y[i]);
  };
  std::int64_t done = 0;
  if (tiles) {
    const std::int64_t n_tiles = rows / kTile;
    for (std::int64_t t = thread / 32; t < n_tiles; t += threads / 32) {
      double sum[kBlock] = {};
      for (std::int64_t j = 0; j < cols; ++j) {
        T v[kBlock];
        load_tile(a, j * ld + t * kTile, lane, v);
        const double xj = x[j];
#pragma unroll
        for (int k = 0; k < kBlock; ++k) sum[k] = fma(double(v[k]), xj, sum[k]);
      }
#pragma unroll
      for (int k = 0; k < kBlock; ++k) finish(t * kTile + tile_offset<A>(k, lane), sum[k]);
    }
    done = n_tiles * kTile;
  }
  for (std::int64_t i = done + thread; i < rows; i += threads) {
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum = fma(double(a.load(i + j * ld)), x[j], sum);
    finish(i, sum);
  }
}

// Columns per group in the transposed GEMV: a group's columns share each x value loaded.
constexpr int kGemvColumns = 8;

// Partial sums of column j's dot with x over row chunk blockIdx.x (rows [blockIdx.x * chunk, +
// chunk), chunk a multiple of 256): partial[j * gridDim.x + blockIdx.x]. A block takes groups of
// kGemvColumns columns (grid = (chunks, up to 65535 groups at a time)) and loads each x value once
// for the group, so that x's FP64 bytes do not outweigh a short A's. Where `tiles`, the warps take
// the chunk's whole tiles of 256 rows by the tile loads, the rest one row per thread.
template <class A>
__global__ void gemv_t_partial_kernel(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t chunk, A a,
                                      const double* x, double* partial, bool tiles) {
  using T = typename A::value_type;
  const std::int64_t begin = std::int64_t(blockIdx.x) * chunk, end = begin + chunk < rows ? begin + chunk : rows;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const std::int64_t tiled_end = tiles ? begin + (end - begin) / kTile * kTile : begin;
  __shared__ double warp_sums[kGemvColumns][32];
  for (std::int64_t j0 = std::int64_t(blockIdx.y) * kGemvColumns; j0 < cols;
       j0 += std::int64_t(gridDim.y) * kGemvColumns) {
    const int group = cols - j0 < kGemvColumns ? int(cols - j0) : kGemvColumns;
    double sum[kGemvColumns] = {};
    for (std::int64_t t = begin + std::int64_t(warp) * kTile; t < tiled_end; t += std::int64_t(warps) * kTile) {
      double xv[kBlock];
#pragma unroll
      for (int k = 0; k < kBlock; ++k) xv[k] = x[t + tile_offset<A>(k, lane)];
#pragma unroll
      for (int c = 0; c < kGemvColumns; ++c) {
        if (c >= group) break;
        T v[kBlock];
        load_tile(a, (j0 + c) * ld + t, lane, v);
#pragma unroll
        for (int k = 0; k < kBlock; ++k) sum[c] = fma(double(v[k]), xv[k], sum[c]);
      }
    }
    for (std::int64_t i = tiled_end + threadIdx.x; i < end; i += blockDim.x) {
      const double xi = x[i];
#pragma unroll
      for (int c = 0; c < kGemvColumns; ++c)
        if (c < group) sum[c] = fma(double(a.load(i + (j0 + c) * ld)), xi, sum[c]);
    }
#pragma unroll
    for (int c = 0; c < kGemvColumns; ++c) {
      for (int offset = 16; offset > 0; offset /= 2) sum[c] += __shfl_down_sync(0xffffffffu, sum[c], offset);
      if (lane == 0) warp_sums[c][warp] = sum[c];
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      for (int c = 0; c < group; ++c) {
        double s = threadIdx.x < warps ? warp_sums[c][threadIdx.x] : 0.0;
        for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
        if (threadIdx.x == 0) partial[(j0 + c) * gridDim.x + blockIdx.x] = s;
      }
    }
    __syncthreads();  // warp_sums is read before the next group writes it
  }
}

// y_j = alpha (sum of column j's partials, in chunk order) + beta y_j.
__global__ void gemv_t_finish_kernel(std::int64_t cols, int chunks, double alpha, const double* partial, double beta,
                                     double* y) {
  const std::int64_t j = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  double sum = 0;
  for (int c = 0; c < chunks; ++c) sum += partial[j * chunks + c];
  y[j] = beta == 0.0 ? alpha * sum : fma(alpha, sum, beta * y[j]);
}

void gemv(Context& ctx, Transpose op, double alpha, const Matrix& a, const double* x, double beta, double* y) {
  const std::string name = "slfp::gemv";
  check_matrix(ctx, a, name + ": a");
  const std::int64_t x_size = op == Transpose::No ? a.cols : a.rows, y_size = op == Transpose::No ? a.rows : a.cols;
  if (y_size == 0) return;
  check_pointer(ctx, y, sizeof(double), a.values.memory, name + ": y");
  if (x_size > 0) check_pointer(ctx, x, sizeof(double), a.values.memory, name + ": x");
  dispatch(a.values.format, [&](auto tag) {
    const auto acc = accessor(a.values, tag);
    if (a.values.memory == Memory::Host) {
      if (op == Transpose::No) {
#pragma omp parallel for schedule(static) if (a.rows * a.cols >= kHostParallelMin)
        for (std::int64_t i = 0; i < a.rows; ++i) {
          double sum = 0;
          for (std::int64_t j = 0; j < a.cols; ++j) sum = std::fma(double(acc.load(i + j * a.ld)), x[j], sum);
          y[i] = beta == 0.0 ? alpha * sum : std::fma(alpha, sum, beta * y[i]);
        }
      } else {
#pragma omp parallel for schedule(static) if (a.rows * a.cols >= kHostParallelMin)
        for (std::int64_t j = 0; j < a.cols; ++j) {
          double sum = 0;
          for (std::int64_t i = 0; i < a.rows; ++i) sum = std::fma(double(acc.load(i + j * a.ld)), x[i], sum);
          y[j] = beta == 0.0 ? alpha * sum : std::fma(alpha, sum, beta * y[j]);
        }
      }
      return;
    }
    const bool tiles = block_aligned(a.values) && a.ld % kBlock == 0;
    if (op == Transpose::No) {
      gemv_n_kernel<<<grid_for(ctx, tiles ? a.rows / kBlock + 1 : a.rows, kThreads), kThreads, 0, ctx.stream()>>>(
          a.rows, a.cols, a.ld, alpha, acc, x, beta, y, tiles);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    if (a.rows == 0) {  // y := beta y (no partial sums)
      gemv_t_finish_kernel<<<unsigned((a.cols + kThreads - 1) / kThreads), kThreads, 0, ctx.stream()>>>(
          a.cols, 0, alpha, nullptr, beta, y);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    // Row chunks of whole tiles, enough for about 4 blocks per multiprocessor over all column groups.
    int sms = 0;
    MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device()));
    const std::int64_t groups = (a.cols + kGemvColumns - 1) / kGemvColumns;
    const std::int64_t tiles_in_rows = (a.rows + kTile - 1) / kTile;
    const std::int64_t wanted = std::max<std::int64_t>(
        1, std::min<std::int64_t>({tiles_in_rows, (4 * std::int64_t(sms) + groups - 1) / groups, 65535}));
    const std::int64_t chunk = (tiles_in_rows + wanted - 1) / wanted * kTile;
    const int chunks = int((a.rows + chunk - 1) / chunk);
    double* partial = static_cast<double*>(ctx.workspace(std::size_t(chunks) * std::size_t(a.cols) * sizeof(double)));
    const unsigned group_blocks = unsigned(std::min<std::int64_t>(groups, 65535));
    gemv_t_partial_kernel<<<dim3(unsigned(chunks), group_blocks), kThreads, 0, ctx.stream()>>>(
        a.rows, a.cols, a.ld, chunk, acc, x, partial, tiles);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    gemv_t_finish_kernel<<<unsigned((a.cols + kThreads - 1) / kThreads), kThreads, 0, ctx.stream()>>>(
        a.cols, chunks, alpha, partial, beta, y);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  });
}

// ---- Storage ---------------------------------------------------------------------------------

Storage::Storage(Format format, std::int64_t size, Memory memory) {
  if (size < 0) throw InvalidArgument("slfp::Storage: size (" + std::to_string(size) + ") is negative");
  view_.format = format;
  view_.size = size;
  view_.memory = memory;
  const auto allocate = [&](std::size_t word) -> void* {
    const std::size_t bytes = std::max<std::size_t>(1, std::size_t(size) * word);
    void* p = nullptr;
    if (memory == Memory::Device) {
      MIXSOLVE_CUDA_CHECK(cudaMalloc(&p, bytes));
    } else {
      p = ::operator new(bytes, std::align_val_t(64));
    }
    blocks_.push_back(p);
    return p;
  };
  if (has_plane(format, 64)) view_.f64 = static_cast<double*>(allocate(8));
  if (has_plane(format, -32)) view_.f32 = static_cast<float*>(allocate(4));
  if (has_plane(format, 32)) view_.w32 = static_cast<std::uint32_t*>(allocate(4));
  if (has_plane(format, 16)) view_.w16 = static_cast<std::uint16_t*>(allocate(2));
  if (has_plane(format, 8)) view_.w8 = static_cast<std::uint8_t*>(allocate(1));
}

void Storage::release() {
  for (void* p : blocks_) {
    if (view_.memory == Memory::Device)
      cudaFree(p);
    else
      ::operator delete(p, std::align_val_t(64));
  }
  blocks_.clear();
}

Storage::~Storage() { release(); }
Storage::Storage(Storage&& other) noexcept : view_(other.view_), blocks_(std::move(other.blocks_)) {
  other.blocks_.clear();
  other.view_ = Vector{};
}
Storage& Storage::operator=(Storage&& other) noexcept {
  if (this != &other) {
    release();
    view_ = other.view_;
    blocks_ = std::move(other.blocks_);
    other.blocks_.clear();
    other.view_ = Vector{};
  }
  return *this;
}

std::int64_t Storage::bytes() const { return view_.size * container_bits(view_.format) / 8; }

}  // namespace mixsolve::slfp
