// SPDX-License-Identifier: BSD-3-Clause
// Internal: what the SLFP kernels (blas.cu, gemm.cu) share: the dispatch from the runtime Format to
// the accessor types of formats/slfp.hpp, the argument checks, and the launch size.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::slfp::detail {

using formats::IeeeVector;
using formats::SlfpVector;

// Calls fn(tag) with the compile-time tag of `format`: a formats::Slfp<..> type, or double / float.
template <class Fn>
decltype(auto) dispatch(Format format, Fn&& fn) {
  switch (format) {
    case Format::Fp64: return fn(double{});
    case Format::Slfp64in56: return fn(formats::Slfp64in56{});
    case Format::Slfp64in48: return fn(formats::Slfp64in48{});
    case Format::Slfp64in40: return fn(formats::Slfp64in40{});
    case Format::Slfp64in32: return fn(formats::Slfp64in32{});
    case Format::Slfp64in24: return fn(formats::Slfp64in24{});
    case Format::Slfp64in16: return fn(formats::Slfp64in16{});
    case Format::Fp32: return fn(float{});
    case Format::Slfp32in24: return fn(formats::Slfp32in24{});
    case Format::Slfp32in16: return fn(formats::Slfp32in16{});
  }
  throw InvalidArgument("slfp: format value " + std::to_string(int(format)) + " is not a Format");
}

// The bits a value of tag `Tag` takes in memory.
template <class Tag>
constexpr int container_bits_of() {
  if constexpr (std::is_floating_point_v<Tag>)
    return int(8 * sizeof(Tag));
  else
    return Tag::kContainerBits;
}

// The accessor of a Vector of compile-time format F (formats/slfp.hpp's SlfpVector or IeeeVector).
template <class F>
SlfpVector<F> accessor(const Vector& v, F) {
  return {v.w32, v.w16, v.w8};
}
inline IeeeVector<double> accessor(const Vector& v, double) { return {v.f64}; }
inline IeeeVector<float> accessor(const Vector& v, float) { return {v.f32}; }

// ---- argument checks -----------------------------------------------------------------------

// Whether a Vector of format f uses plane `bits`: 32, 16, 8 (SLFP word planes, the format's own
// rule), 64 (f64) or -32 (f32, told apart from the 32-bit word plane).
inline bool has_plane(Format f, int bits) {
  return dispatch(f, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (std::is_same_v<Tag, double>)
      return bits == 64;
    else if constexpr (std::is_same_v<Tag, float>)
      return bits == -32;
    else
      return (bits == 32 && Tag::kHas32) || (bits == 16 && Tag::kHas16) || (bits == 8 && Tag::kHas8);
  });
}

// Checks the plane or array argument `what`: not null, aligned to its words, in `memory`.
inline void check_pointer(const Context& ctx, const void* p, std::size_t word, Memory memory, const std::string& what) {
  if (p == nullptr) throw InvalidArgument(what + " is null");
  if (reinterpret_cast<std::uintptr_t>(p) % word != 0)
    throw InvalidArgument(what + " (" + std::to_string(reinterpret_cast<std::uintptr_t>(p)) +
                          ") is not aligned to its " + std::to_string(word) + "-byte words");
  if (memory == Memory::Device && !ctx.has_device())
    throw InvalidArgument(what + " is in device memory, but the Context has no GPU");
  if (ctx.has_device() && memory_of(p) != memory)
    throw InvalidArgument(what + " is not in " + to_string(memory) + " memory, where the vector says it is");
}

inline void check_vector(const Context& ctx, const Vector& v, const std::string& what) {
  if (v.size < 0) throw InvalidArgument(what + ".size (" + std::to_string(v.size) + ") is negative");
  const std::string name = std::string(" of ") + to_string(v.format);
  const struct {
    const void* p;
    int bits;
    std::size_t word;
    const char* field;
  } planes[] = {
      {v.w32, 32, 4, "w32"}, {v.w16, 16, 2, "w16"}, {v.w8, 8, 1, "w8"}, {v.f64, 64, 8, "f64"}, {v.f32, -32, 4, "f32"}};
  for (const auto& plane : planes) {
    if (!has_plane(v.format, plane.bits)) continue;
    if (v.size > 0) check_pointer(ctx, plane.p, plane.word, v.memory, what + "." + plane.field + name);
  }
}

// The checks of a Matrix argument `what`: sizes, ld, its values' planes and their length.
inline void check_matrix(const Context& ctx, const Matrix& a, const std::string& what) {
  if (a.rows < 0 || a.cols < 0)
    throw InvalidArgument(what + " is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          "; sizes must not be negative");
  if (a.ld < std::max<std::int64_t>(1, a.rows))
    throw InvalidArgument(what + ".ld (" + std::to_string(a.ld) + ") is below max(1, " + what +
                          ".rows = " + std::to_string(a.rows) + ")");
  check_vector(ctx, a.values, what + ".values");
  const std::int64_t needed = a.rows == 0 || a.cols == 0 ? 0 : (a.cols - 1) * a.ld + a.rows;
  if (a.values.size < needed)
    throw InvalidArgument(what + ".values.size (" + std::to_string(a.values.size) +
                          ") is below (cols - 1) * ld + rows = " + std::to_string(needed));
}

// Thread blocks for `items` work items: all of them (one item per thread, the streaming kernels),
// or at most 16 per multiprocessor (DOT, whose blocks each leave a partial sum).
inline unsigned grid_for(const Context& ctx, std::int64_t items, int threads, bool capped = false) {
  int sms = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device()));
  const std::int64_t blocks = (items + threads - 1) / threads;
  const std::int64_t cap = capped ? std::int64_t(sms) * 16 : std::int64_t(INT32_MAX);
  return unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, cap)));
}

// The value type of a dispatch tag: the tag itself for FP64 / FP32, else the format's base type.
template <class Tag, class = void>
struct ValueOf {
  using type = Tag;
};
template <class Tag>
struct ValueOf<Tag, std::void_t<typename Tag::value_type>> {
  using type = typename Tag::value_type;
};
template <class Tag>
using value_of = typename ValueOf<Tag>::type;

}  // namespace mixsolve::slfp::detail
