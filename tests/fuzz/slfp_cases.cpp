// SPDX-License-Identifier: BSD-3-Clause
// The SLFP kernels' cases: the formats' planes and stored bits, a reference rounding computed on
// values (ldexp, nearbyint), and the checks of each kernel's result and untouched bytes.
#include "fuzz/slfp_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include <cstring>
#include <limits>

#include "fuzz/arena.hpp"
#include "fuzz/generators.hpp"
#include "fuzz/rng.hpp"
#include "fuzz/settings_and_outcomes.hpp"

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::fuzz {
namespace {

// The planes of a format as formats/slfp.hpp lays them out: FP64 / FP32 one array of doubles /
// floats; an SLFP format of c container bits a 32-bit plane where c >= 32, a 16-bit one where
// c mod 32 >= 16, an 8-bit one where c mod 16 == 8, the widest holding the most significant bits.
struct Planes {
  bool f64 = false, f32 = false, w32 = false, w16 = false, w8 = false;
};
Planes planes_of(slfp::Format f) {
  Planes p;
  if (int(f) < 0 || int(f) > int(slfp::Format::Slfp32in16)) return p;  // not a Format: no planes
  if (f == slfp::Format::Fp64)
    p.f64 = true;
  else if (f == slfp::Format::Fp32)
    p.f32 = true;
  else {
    const int c = slfp::container_bits(f);
    p.w32 = c >= 32, p.w16 = c % 32 >= 16, p.w8 = c % 16 == 8;
  }
  return p;
}

// The stored bits of the formats as documented: the top container_bits bits of the IEEE pattern of
// the base type.
struct FormatLayout {
  slfp::Format format = slfp::Format::Fp64;
  bool fp64 = true;
  int container = 64, value_bits = 64, exponent_bits = 11;
  explicit FormatLayout(slfp::Format f)
      : format(f),
        fp64(slfp::fp64_based(f)),
        container(slfp::container_bits(f)),
        value_bits(fp64 ? 64 : 32),
        exponent_bits(fp64 ? 11 : 8) {}
  int dropped() const { return value_bits - container; }
};

std::uint64_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}
std::uint64_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
template <class V>
V value_of(std::uint64_t bits) {
  V v;
  if constexpr (sizeof(V) == 8) {
    std::memcpy(&v, &bits, 8);
  } else {
    const std::uint32_t b = std::uint32_t(bits);
    std::memcpy(&v, &b, 4);
  }
  return v;
}

// v rounded to a format with the base type's exponent range and `container` bits (sign, exponent,
// container - 1 - exponent mantissa bits): to the nearest (ties to even) or toward zero, computed
// on the value with long double arithmetic (x / 2^e, nearbyint or trunc, times 2^e), not on its
// bit pattern; beyond the largest finite value RN gives Inf. NaN, Inf and zeros are returned as
// they are (NaN's stored bits: reference_bits).
template <class V>
V reference_round(V v, int container, bool nearest) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  constexpr bool kDouble = sizeof(V) == 8;
  const int exponent_bits = kDouble ? 11 : 8, emin = kDouble ? -1022 : -126;
  const int precision = container - exponent_bits;  // significant bits, the implicit one included
  const int e = std::max(std::ilogb(v), emin);
  const long double quantum = std::ldexp(1.0L, e - (precision - 1));
  long double t = (long double)v / quantum;  // exact: a power-of-two scaling
  t = nearest ? std::nearbyint(t) : std::trunc(t);
  return V(t * quantum);  // exact, or Inf past the largest finite value
}

// The stored (right-aligned) bits of v encoded with the rounding (formats/slfp.hpp): those of
// reference_round's value, and for NaN the pattern made quiet with its sign and kept payload.
template <class V>
std::uint64_t reference_bits(V v, const FormatLayout& l, bool nearest) {
  if (std::isnan(v)) {
    const std::uint64_t quiet = std::uint64_t(1) << (l.value_bits - 2 - l.exponent_bits);
    return (bits_of(v) | quiet) >> l.dropped();
  }
  return bits_of(reference_round(v, l.container, nearest)) >> l.dropped();
}

// A vector of one format in a byte arena: where each plane lies.
struct VectorPlan {
  slfp::Format format = slfp::Format::Fp64;
  std::int64_t size = 0;
  Memory label = Memory::Host;
  // Byte offsets of the planes in the arena; -1: null.
  std::int64_t f64 = -1, f32 = -1, w32 = -1, w16 = -1, w8 = -1;
};

struct ByteLayout {
  std::size_t next = 0;
  std::size_t take(std::size_t bytes) {
    next = (next + 15) / 16 * 16 + 16 * std::size_t(next % 3 == 0);  // 16-byte aligned, gaps
    const std::size_t at = next;
    next += std::max<std::size_t>(bytes, 1);
    return at;
  }
};

VectorPlan plan_vector(ByteLayout& layout, slfp::Format f, std::int64_t size, std::int64_t storage_size) {
  VectorPlan v;
  v.format = f, v.size = size;
  const Planes p = planes_of(f);
  const std::size_t n = std::size_t(std::max<std::int64_t>(storage_size, 0));
  if (p.f64) v.f64 = std::int64_t(layout.take(8 * n));
  if (p.f32) v.f32 = std::int64_t(layout.take(4 * n));
  if (p.w32) v.w32 = std::int64_t(layout.take(4 * n));
  if (p.w16) v.w16 = std::int64_t(layout.take(2 * n));
  if (p.w8) v.w8 = std::int64_t(layout.take(n));
  return v;
}

slfp::Vector make_vector(Arena<std::uint8_t>& arena, const VectorPlan& v) {
  slfp::Vector out;
  out.format = v.format, out.size = v.size, out.memory = v.label;
  const auto at = [&](std::int64_t o) -> void* { return o < 0 ? nullptr : arena.pointer(std::size_t(o)); };
  out.f64 = static_cast<double*>(at(v.f64));
  out.f32 = static_cast<float*>(at(v.f32));
  out.w32 = static_cast<std::uint32_t*>(at(v.w32));
  out.w16 = static_cast<std::uint16_t*>(at(v.w16));
  out.w8 = static_cast<std::uint8_t*>(at(v.w8));
  return out;
}

// Element i's stored bits (right-aligned) in the host image.
std::uint64_t stored_bits(const Arena<std::uint8_t>& img, const VectorPlan& v, std::int64_t i) {
  const auto word = [&](std::int64_t plane, int bytes) {
    std::uint64_t w = 0;
    for (int b = 0; b < bytes; ++b) w |= std::uint64_t(img.at(std::size_t(plane + i * bytes + b))) << (8 * b);
    return w;  // little-endian words (x86-64, the GPUs)
  };
  if (v.f64 >= 0) return word(v.f64, 8);
  if (v.f32 >= 0) return word(v.f32, 4);
  const int c = slfp::container_bits(v.format);
  int shift = c;
  std::uint64_t s = 0;
  if (v.w32 >= 0) shift -= 32, s |= word(v.w32, 4) << shift;
  if (v.w16 >= 0) shift -= 16, s |= word(v.w16, 2) << shift;
  if (v.w8 >= 0) s |= word(v.w8, 1);
  return s;
}
void set_stored_bits(Arena<std::uint8_t>& img, const VectorPlan& v, std::int64_t i, std::uint64_t s) {
  const auto put = [&](std::int64_t plane, int bytes, std::uint64_t w) {
    for (int b = 0; b < bytes; ++b) img.at(std::size_t(plane + i * bytes + b)) = std::uint8_t(w >> (8 * b));
  };
  if (v.f64 >= 0) return put(v.f64, 8, s);
  if (v.f32 >= 0) return put(v.f32, 4, s);
  const int c = slfp::container_bits(v.format);
  int shift = c;
  if (v.w32 >= 0) shift -= 32, put(v.w32, 4, s >> shift);
  if (v.w16 >= 0) shift -= 16, put(v.w16, 2, s >> shift);
  if (v.w8 >= 0) put(v.w8, 1, s);
}
// The value of stored bits s (decoding is exact: the bits are the top of the base pattern).
template <class V>
V decoded(std::uint64_t s, const FormatLayout& l) {
  return value_of<V>(s << l.dropped());
}

void mask_vector(Mask& m, const VectorPlan& v, std::int64_t count) {
  const Planes p = planes_of(v.format);
  const auto add = [&](std::int64_t plane, int bytes) {
    if (plane < 0) return;
    ViewPlan bytes_view{count * bytes, 1, std::max<std::int64_t>(1, count * bytes), std::size_t(plane)};
    m.add(bytes_view);
  };
  if (p.f64) add(v.f64, 8);
  if (p.f32) add(v.f32, 4);
  if (p.w32) add(v.w32, 4);
  if (p.w16) add(v.w16, 2);
  if (p.w8) add(v.w8, 1);
}

// Values that exercise a format's rounding: random exponents, ties, the largest finite values,
// subnormals, zeros of both signs, Inf and NaN with payloads.
template <class V>
V slfp_value(Rng& rng, const FormatLayout& l, bool specials) {
  constexpr bool kDouble = sizeof(V) == 8;
  const double u = rng.uniform();
  if (specials && u < 0.03)
    return value_of<V>(kDouble ? 0x7ff0000000000000ull | (rng.next() >> 13) | 1
                               : 0x7f800000ull | ((rng.next() >> 42) & 0x7fffff) | 1) *
           V(rng.chance(0.5) ? 1 : -1);
  if (specials && u < 0.05) return rng.chance(0.5) ? V(INFINITY) : V(-INFINITY);
  if (specials && u < 0.07) return rng.chance(0.5) ? V(0) : -V(0);
  if (specials && u < 0.1) return std::numeric_limits<V>::max() * V(rng.chance(0.5) ? 1 : -1);
  if (specials && u < 0.14) {  // a subnormal
    const std::uint64_t m = rng.next() >> (kDouble ? 12 : 41);
    return value_of<V>(m | (rng.chance(0.5) ? (kDouble ? 0x8000000000000000ull : 0x80000000ull) : 0));
  }
  if (specials && u < 0.24) {  // a tie: the dropped bits 100...0 (or next to it)
    std::uint64_t b = bits_of(V(std::ldexp(rng.uniform(1, 2), int(rng.range(-30, 30)))));
    const int d = l.dropped();
    if (d > 0)
      b = (b >> d << d) | (std::uint64_t(1) << (d - 1)) | std::uint64_t(rng.range(0, 1) == 0 ? 0 : rng.range(0, 1));
    return value_of<V>(b) * V(rng.chance(0.5) ? 1 : -1);
  }
  return V(std::ldexp(rng.uniform(-1, 1), int(rng.range(-40, 40))));
}

enum class SlfpOp { Encode, Decode, Axpy, Dot, Gemv, Gemm, Place, Subvector, Storage };

const char* to_string(SlfpOp o) {
  switch (o) {
    case SlfpOp::Encode: return "encode";
    case SlfpOp::Decode: return "decode";
    case SlfpOp::Axpy: return "axpy";
    case SlfpOp::Dot: return "dot";
    case SlfpOp::Gemv: return "gemv";
    case SlfpOp::Gemm: return "gemm";
    case SlfpOp::Place: return "place";
    case SlfpOp::Subvector: return "subvector";
    case SlfpOp::Storage: return "Storage";
  }
  return "?";
}

}  // namespace

void run_slfp_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index) {
  Rng rng(run.seed(index));
  const std::vector<slfp::Format>& formats = slfp::all_formats();
  const SlfpOp op =
      rng.pick({SlfpOp::Encode, SlfpOp::Encode, SlfpOp::Decode, SlfpOp::Axpy, SlfpOp::Axpy, SlfpOp::Dot, SlfpOp::Gemv,
                SlfpOp::Gemv, SlfpOp::Gemm, SlfpOp::Place, SlfpOp::Subvector, SlfpOp::Storage});
  slfp::Format format = rng.pick(formats);
  const FormatLayout l(format);
  const bool rn = rng.chance(0.5);
  const slfp::Rounding rounding = rn ? slfp::Rounding::NearestEven : slfp::Rounding::TowardZero;
  const Memory memory = device_run && rng.chance(0.85) ? Memory::Device : Memory::Host;
  Expected e;
  std::vector<Fault>& must = e.must;
  std::ostringstream t;
  t << to_string(op) << " " << slfp::to_string(format) << (rn ? " RN" : " RZ")
    << (memory == Memory::Device ? " device" : " host");
  const auto size_of = [&]() -> std::int64_t {
    const double u = rng.uniform();
    if (u < 0.06) return 0;
    if (u < 0.14) return 1;
    if (u < 0.8) return rng.range(2, 300);
    return rng.range(301, 3000);
  };
  ByteLayout bl;
  const bool bad_format = rng.chance(0.015);
  const slfp::Format invalid_format = static_cast<slfp::Format>(int(rng.range(10, 15)));
  if (op == SlfpOp::Storage || op == SlfpOp::Place || op == SlfpOp::Subvector) {
    // The allocation and placement helpers: sizes and alignment checked by name.
    const std::int64_t size = rng.chance(0.1) ? -rng.range(1, 5) : size_of();
    t << " size " << size;
    run.begin(index, t.str());
    Outcome o;
    if (op == SlfpOp::Storage) {
      if (size < 0) must.push_back({Kind::InvalidArgument, {"size (" + std::to_string(size) + ")"}});
      o = capture([&] {
        slfp::Storage st(format, size, memory);
        const slfp::Vector& v = st.view();
        const Planes p = planes_of(format);
        run.expect(v.format == format && v.size == size && v.memory == memory, "Storage's view is not what was asked");
        run.expect((v.f64 != nullptr) == p.f64 && (v.f32 != nullptr) == p.f32 && (v.w32 != nullptr) == p.w32 &&
                       (v.w16 != nullptr) == p.w16 && (v.w8 != nullptr) == p.w8,
                   "Storage's planes are not the format's");
        run.expect(st.bytes() == size * slfp::container_bits(format) / 8, "Storage::bytes()");
        slfp::Storage moved(std::move(st));
        run.expect(moved.view().size == size && st.view().size == 0, "a moved Storage");
      });
    } else if (op == SlfpOp::Place) {
      const std::size_t bytes = size >= 0 ? slfp::placed_bytes(format, size) : 0;
      const int shift = rng.chance(0.1) ? int(rng.range(1, 255)) : 0;
      const bool null = rng.chance(0.05) && size > 0;
      if (size < 0) must.push_back({Kind::InvalidArgument, {"size (" + std::to_string(size) + ")"}});
      if (null)
        must.push_back({Kind::InvalidArgument, {"null"}});
      else if (shift != 0)
        must.push_back({Kind::InvalidArgument, {"256-byte aligned"}});
      std::vector<unsigned char> buffer(bytes + 512);
      unsigned char* aligned =
          reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(buffer.data()) + 255) / 256 * 256);
      o = capture([&] {
        const slfp::Vector v = slfp::place(format, size, memory, null ? nullptr : aligned + shift);
        const Planes p = planes_of(format);
        std::vector<std::pair<std::uintptr_t, std::size_t>> spans;
        const auto plane = [&](const void* q, bool has, std::size_t word) {
          run.expect((q != nullptr) == has, "place: a plane the format does not have, or one missing");
          if (!q) return;
          const auto at = reinterpret_cast<std::uintptr_t>(q);
          run.expect(at % 256 == 0, "place: a plane not 256-byte aligned");
          run.expect(at >= reinterpret_cast<std::uintptr_t>(aligned) &&
                         at + std::size_t(size) * word <= reinterpret_cast<std::uintptr_t>(aligned) + bytes,
                     "place: a plane outside the placed_bytes of the buffer");
          for (const auto& [b, w] : spans)
            run.expect(at >= b + w || at + std::size_t(size) * word <= b, "place: planes overlap");
          spans.push_back({at, std::size_t(size) * word});
        };
        plane(v.f64, p.f64, 8), plane(v.f32, p.f32, 4), plane(v.w32, p.w32, 4), plane(v.w16, p.w16, 2),
            plane(v.w8, p.w8, 1);
      });
    } else {
      const std::int64_t whole = std::max<std::int64_t>(size, 0) + rng.range(0, 10);
      const std::int64_t offset = rng.range(-2, whole + 2), length = rng.range(-2, whole + 2);
      if (offset < 0 || length < 0 || offset + length > whole) must.push_back({Kind::InvalidArgument, {"subvector"}});
      std::vector<unsigned char> buffer(slfp::placed_bytes(format, whole) + 512);
      unsigned char* aligned =
          reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(buffer.data()) + 255) / 256 * 256);
      o = capture([&] {
        const slfp::Vector v = slfp::place(format, whole, Memory::Host, aligned);
        const slfp::Vector s = slfp::subvector(v, offset, length);
        run.expect(s.size == length && s.format == v.format, "subvector's size or format");
        const auto moved = [&](const void* a, const void* b, std::size_t word) {
          return (a == nullptr && b == nullptr) || (a && b &&
                                                    static_cast<const char*>(b) - static_cast<const char*>(a) ==
                                                        std::ptrdiff_t(offset * std::int64_t(word)));
        };
        run.expect(moved(v.f64, s.f64, 8) && moved(v.f32, s.f32, 4) && moved(v.w32, s.w32, 4) &&
                       moved(v.w16, s.w16, 2) && moved(v.w8, s.w8, 1),
                   "subvector's planes are not advanced by the offset");
      });
    }
    if (const std::string why = judge(o, e); !why.empty()) run.fail(why);
    run.end(to_string(o.kind));
    return;
  }

  // The kernels. Sizes, and the vectors' planes in one byte arena.
  std::int64_t n = size_of();
  const bool negative = rng.chance(0.02);
  VectorPlan x, y, am, bm;
  std::int64_t rows = 0, cols = 0, ld = 1, values = 0, b_rows = 0, b_cols = 0, b_ld = 1, b_values = 0, ldc = 1;
  slfp::Transpose op_a = slfp::Transpose::No, op_b = slfp::Transpose::No;
  std::int64_t x_offset = -1, y_offset = -1, c_offset = -1;  // FP64 / FP32 arrays of encode, decode, gemv, gemm
  std::int64_t gemm_n = 0;
  double alpha = rng.pick<double>({1, -1, 0.5, rng.uniform(-3, 3), 0, 0x1p-20});
  double beta = rng.chance(0.4) ? 0.0 : rng.pick<double>({1, -0.5, rng.uniform(-2, 2)});
  const std::size_t word = l.fp64 ? 8 : 4;
  bool alias = false;
  if (op == SlfpOp::Encode || op == SlfpOp::Decode || op == SlfpOp::Axpy || op == SlfpOp::Dot) {
    x = plan_vector(bl, format, negative ? -rng.range(1, 4) : n, n);
    y = plan_vector(bl, format, x.size, n);
    if (op == SlfpOp::Encode || op == SlfpOp::Decode)
      x_offset = std::int64_t(bl.take(8 * std::size_t(n)));  // either base type
    alias = (op == SlfpOp::Axpy || op == SlfpOp::Dot) && rng.chance(0.05);
    if (alias) y = x;
    if (negative) must.push_back({Kind::InvalidArgument, {"size (" + std::to_string(x.size) + ")"}});
    t << " n " << x.size << (alias ? " y = x" : "");
  } else {
    // gemv / gemm: A (and B) as Matrix of values, column-major with ld.
    rows = rng.chance(0.1) ? rng.range(0, 2) : rng.range(1, 120);
    cols = rng.chance(0.1) ? rng.range(0, 2) : rng.range(1, 120);
    bool bad = false;
    ld = pick_ld(rng, rows, 0.04, bad);
    if (negative) (rng.chance(0.5) ? rows : cols) = -rng.range(1, 3);
    values = rows > 0 && cols > 0 && ld >= rows ? (cols - 1) * ld + rows : 0;
    const bool short_values = values > 0 && rng.chance(0.04);
    am = plan_vector(bl, format,
                     short_values ? values - rng.range(1, std::min<std::int64_t>(values, 5)) : values + rng.range(0, 3),
                     values + 3);
    if (rows < 0 || cols < 0)
      must.push_back({Kind::InvalidArgument, {"must not be negative"}});
    else if (ld < std::max<std::int64_t>(1, rows))
      must.push_back({Kind::InvalidArgument, {".ld (" + std::to_string(ld) + ")"}});
    else if (short_values)
      must.push_back({Kind::InvalidArgument, {"values.size"}});
    t << " A " << rows << "x" << cols << " ld " << ld << " values " << am.size;
    if (op == SlfpOp::Gemv) {
      op_a = rng.chance(0.5) ? slfp::Transpose::No : slfp::Transpose::Yes;
      const std::int64_t xs = std::max<std::int64_t>(op_a == slfp::Transpose::No ? cols : rows, 0);
      const std::int64_t ys = std::max<std::int64_t>(op_a == slfp::Transpose::No ? rows : cols, 0);
      x_offset = std::int64_t(bl.take(8 * std::size_t(xs)));
      y_offset = std::int64_t(bl.take(8 * std::size_t(ys)));
      t << (op_a == slfp::Transpose::No ? " N" : " T");
    } else {
      op_a = rng.chance(0.5) ? slfp::Transpose::No : slfp::Transpose::Yes;
      op_b = rng.chance(0.5) ? slfp::Transpose::No : slfp::Transpose::Yes;
      const std::int64_t m = op_a == slfp::Transpose::No ? rows : cols, k = op_a == slfp::Transpose::No ? cols : rows;
      std::int64_t nn = rng.chance(0.1) ? 0 : rng.range(1, 120);
      gemm_n = nn;
      b_rows = op_b == slfp::Transpose::No ? k : nn, b_cols = op_b == slfp::Transpose::No ? nn : k;
      if (rng.chance(0.03)) b_rows += 1;  // inner sizes differ
      b_ld = pick_ld(rng, b_rows, 0.03, bad);
      b_values = b_rows > 0 && b_cols > 0 && b_ld >= b_rows ? (b_cols - 1) * b_ld + b_rows : 0;
      bm = plan_vector(bl, format, b_values, b_values);
      ldc = pick_ld(rng, m, 0.03, bad);
      c_offset =
          std::int64_t(bl.take(word * std::size_t(std::max<std::int64_t>(ldc, 1) * std::max<std::int64_t>(nn, 1))));
      const std::int64_t kb = op_b == slfp::Transpose::No ? b_rows : b_cols,
                         n_b = op_b == slfp::Transpose::No ? b_cols : b_rows;
      if (b_ld < std::max<std::int64_t>(1, b_rows)) must.push_back({Kind::InvalidArgument, {"b.ld ("}});
      if (kb != k && rows >= 0 && cols >= 0) must.push_back({Kind::InvalidArgument, {"inner sizes differ"}});
      if (ldc < std::max<std::int64_t>(1, m))
        must.push_back({Kind::InvalidArgument, {"ldc (" + std::to_string(ldc) + ")"}});
      t << " B " << b_rows << "x" << b_cols << " ld " << b_ld << " ldc " << ldc
        << (op_a == slfp::Transpose::No ? " N" : " T") << (op_b == slfp::Transpose::No ? "N" : "T");
      (void)n_b;
      if (must.empty() && m > 0 && n_b > 0 && memory == Memory::Host) must.push_back({Kind::NotSupported, {"device"}});
    }
  }
  // Faults in the planes: null, misaligned, a vector labelled device on a host-only Context.
  VectorPlan* faulty = op == SlfpOp::Gemv || op == SlfpOp::Gemm           ? &am
                       : op == SlfpOp::Encode                             ? &y
                       : op == SlfpOp::Decode || alias || rng.chance(0.5) ? &x
                                                                          : &y;
  const int fault = rng.chance(0.1) ? int(rng.range(0, 4)) : -1;
  const std::int64_t fsize = faulty->size;
  const Planes fp = planes_of(faulty->format);
  std::int64_t* plane = fp.f64   ? &faulty->f64
                        : fp.f32 ? &faulty->f32
                        : fp.w32 ? &faulty->w32
                        : fp.w16 ? &faulty->w16
                                 : &faulty->w8;
  const int plane_word = fp.f64 ? 8 : fp.f32 || fp.w32 ? 4 : fp.w16 ? 2 : 1;
  bool device_label = false;
  if (fault == 0 && fsize > 0) {
    *plane = -1;
    must.push_back({Kind::InvalidArgument, {"null"}});
  } else if (fault == 1 && fsize > 0 && plane_word > 1) {
    *plane += 1;
    must.push_back({Kind::InvalidArgument, {"aligned"}});
  } else if (fault == 2 && fsize > 0) {
    // A label that is not the pointer's: device on a host-only Context, or (GPU) the other space.
    device_label = true;
    must.push_back({Kind::InvalidArgument, {"memory"}});
  } else if (fault == 3 && (op == SlfpOp::Axpy || op == SlfpOp::Dot) && !alias) {
    slfp::Format other = rng.pick(formats);
    if (other != format) {
      y = plan_vector(bl, other, y.size, std::max<std::int64_t>(n, 0));
      must.push_back({Kind::InvalidArgument, {"one format"}});
    }
  } else if (fault == 4 && (op == SlfpOp::Axpy || op == SlfpOp::Dot) && !alias && x.size > 0) {
    y.size = x.size - 1;
    must.push_back({Kind::InvalidArgument, {"differs"}});
  }
  if (alias) y = x;
  // Encode / decode with an array of the other base type.
  const bool other_base = (op == SlfpOp::Encode || op == SlfpOp::Decode) && rng.chance(0.04);
  if (other_base) must.push_back({Kind::InvalidArgument, {"-based"}});
  if (bad_format) {
    (op == SlfpOp::Gemv || op == SlfpOp::Gemm ? am : x).format = invalid_format;
    if (op == SlfpOp::Gemm) bm.format = invalid_format;
    if (op != SlfpOp::Gemv && op != SlfpOp::Gemm) y.format = invalid_format;
    must.push_back({Kind::InvalidArgument, {"format"}});
  }
  const Memory other = memory == Memory::Device ? Memory::Host : Memory::Device;
  for (VectorPlan* v : {&x, &y, &am, &bm}) v->label = device_label && v == faulty ? other : memory;
  if (alias) y.label = x.label;
  // A device GEMM refuses host operands; on a GPU a host-labelled vector is host memory.
  Arena<std::uint8_t> arena(memory, bl.next + 64);
  // Values: x / y / A / B from the format's own values (their stored bits), arrays of the base type.
  const auto fill_vector = [&](const VectorPlan& v, std::int64_t count, bool specials) {
    if (count <= 0 || v.format != format) {
      if (count > 0 && int(v.format) < 10) {  // another valid format: its own values
        const FormatLayout lo(v.format);
        for (std::int64_t i = 0; i < count; ++i)
          set_stored_bits(arena, v, i,
                          lo.fp64 ? reference_bits(slfp_value<double>(rng, lo, false), lo, true)
                                  : reference_bits(slfp_value<float>(rng, lo, false), lo, true));
      }
      return;
    }
    for (std::int64_t i = 0; i < count; ++i)
      set_stored_bits(arena, v, i,
                      l.fp64 ? reference_bits(slfp_value<double>(rng, l, specials), l, true)
                             : reference_bits(slfp_value<float>(rng, l, specials), l, true));
  };
  const auto fill_array = [&](std::int64_t offset, std::int64_t count, bool as_double, bool specials) {
    for (std::int64_t i = 0; offset >= 0 && i < count; ++i) {
      const std::uint64_t b =
          as_double ? bits_of(slfp_value<double>(rng, l, specials)) : bits_of(slfp_value<float>(rng, l, specials));
      for (std::size_t q = 0; q < (as_double ? 8u : 4u); ++q)
        arena.at(std::size_t(offset) + std::size_t(i) * (as_double ? 8 : 4) + q) = std::uint8_t(b >> (8 * q));
    }
  };
  const std::int64_t count = std::max<std::int64_t>(n, 0);
  const bool array_double = l.fp64 != other_base;
  switch (op) {
    case SlfpOp::Encode: fill_array(x_offset, count, array_double, true); break;
    case SlfpOp::Decode:
      for (std::int64_t i = 0; i < count && x.format == format; ++i)  // raw bit patterns
        set_stored_bits(arena, x, i, rng.next() >> (64 - l.container));
      break;
    case SlfpOp::Axpy:
    case SlfpOp::Dot:
      fill_vector(x, count, op == SlfpOp::Axpy);
      if (!alias) fill_vector(y, count, op == SlfpOp::Axpy);
      break;
    case SlfpOp::Gemv: {
      fill_vector(am, am.size, false);
      const std::int64_t xs = std::max<std::int64_t>(op_a == slfp::Transpose::No ? cols : rows, 0);
      const std::int64_t ys = std::max<std::int64_t>(op_a == slfp::Transpose::No ? rows : cols, 0);
      fill_array(x_offset, xs, true, false);
      if (beta != 0) fill_array(y_offset, ys, true, false);  // beta == 0: y stays poisoned, unread
      break;
    }
    default:
      fill_vector(am, am.size, false);
      fill_vector(bm, bm.size, false);
      if (beta != 0)
        fill_array(c_offset, std::max<std::int64_t>(ldc, 1) * std::max<std::int64_t>(gemm_n, 1), l.fp64, false);
      break;
  }
  arena.upload();
  const Snapshot<std::uint8_t> before(arena);
  run.begin(index, t.str());
  slfp::Vector xv = make_vector(arena, x), yv = make_vector(arena, y);
  const auto array = [&](std::int64_t o) -> void* { return o < 0 ? nullptr : arena.pointer(std::size_t(o)); };
  double dot_result = 0;
  Mask writable(arena.size());
  const Outcome o = capture([&] {
    switch (op) {
      case SlfpOp::Encode:
        if (array_double)
          slfp::encode(ctx, static_cast<const double*>(array(x_offset)), yv, rounding);
        else
          slfp::encode(ctx, static_cast<const float*>(array(x_offset)), yv, rounding);
        break;
      case SlfpOp::Decode:
        if (array_double)
          slfp::decode(ctx, xv, static_cast<double*>(array(x_offset)));
        else
          slfp::decode(ctx, xv, static_cast<float*>(array(x_offset)));
        break;
      case SlfpOp::Axpy: slfp::axpy(ctx, alpha, xv, yv, rounding); break;
      case SlfpOp::Dot: dot_result = slfp::dot(ctx, xv, yv); break;
      case SlfpOp::Gemv:
        slfp::gemv(ctx, op_a, alpha, slfp::Matrix{make_vector(arena, am), rows, cols, ld},
                   static_cast<const double*>(array(x_offset)), beta, static_cast<double*>(array(y_offset)));
        break;
      default: {
        const slfp::Matrix a{make_vector(arena, am), rows, cols, ld}, b{make_vector(arena, bm), b_rows, b_cols, b_ld};
        if (l.fp64)
          slfp::gemm(ctx, op_a, op_b, alpha, a, b, beta, static_cast<double*>(array(c_offset)), ldc);
        else
          slfp::gemm(ctx, op_a, op_b, float(alpha), a, b, float(beta), static_cast<float*>(array(c_offset)), ldc);
      }
    }
    if (ctx.has_device()) ctx.synchronize();
  });
  arena.download();
  if (const std::string why = judge(o, e); !why.empty()) run.fail(why);
  const auto array_value = [&](const auto& img, std::int64_t offset, std::int64_t i, bool as_double) -> double {
    std::uint64_t b = 0;
    for (std::size_t q = 0; q < (as_double ? 8u : 4u); ++q)
      b |= std::uint64_t(img.at(std::size_t(offset) + std::size_t(i) * (as_double ? 8 : 4) + q)) << (8 * q);
    return as_double ? value_of<double>(b) : double(value_of<float>(b));
  };
  // Reading the inputs as given: the snapshot's bytes.
  const auto before_bits = [&](const VectorPlan& v, std::int64_t i) {
    std::uint64_t s = 0;
    const auto word = [&](std::int64_t p, int bytes) {
      std::uint64_t w = 0;
      for (int q = 0; q < bytes; ++q) w |= std::uint64_t(before.at(std::size_t(p + i * bytes + q))) << (8 * q);
      return w;
    };
    if (v.f64 >= 0) return word(v.f64, 8);
    if (v.f32 >= 0) return word(v.f32, 4);
    int shift = l.container;
    if (v.w32 >= 0) shift -= 32, s |= word(v.w32, 4) << shift;
    if (v.w16 >= 0) shift -= 16, s |= word(v.w16, 2) << shift;
    if (v.w8 >= 0) s |= word(v.w8, 1);
    return s;
  };
  const auto value_in = [&](const VectorPlan& v, std::int64_t i) -> long double {
    return l.fp64 ? (long double)decoded<double>(before_bits(v, i), l)
                  : (long double)decoded<float>(before_bits(v, i), l);
  };
  std::string wrong;
  if (o.kind == Kind::Result) {
    const std::int64_t size = x.size;
    switch (op) {
      case SlfpOp::Encode:  // y's stored bits: the reference rounding of x, bit for bit
        mask_vector(writable, y, size);
        for (std::int64_t i = 0; i < size && wrong.empty(); ++i) {
          const double v = array_value(before, x_offset, i, l.fp64);
          const std::uint64_t expected = l.fp64 ? reference_bits(v, l, rn) : reference_bits(float(v), l, rn);
          const std::uint64_t got = stored_bits(arena, y, i);
          // FP64 / FP32 storage is a copy (a NaN stays NaN; whether a signalling one is quieted is
          // the copy's business).
          const bool ieee = format == slfp::Format::Fp64 || format == slfp::Format::Fp32;
          if (ieee && std::isnan(v) &&
              (l.fp64 ? std::isnan(decoded<double>(got, l)) : std::isnan(decoded<float>(got, l))))
            continue;
          if (got != expected)
            wrong = "element " + std::to_string(i) + " of " + std::to_string(v) + " encoded as bits " +
                    std::to_string(got) + ", expected " + std::to_string(expected);
        }
        break;
      case SlfpOp::Decode:  // exact
        writable.add(ViewPlan{std::int64_t(word) * size, 1, std::max<std::int64_t>(1, std::int64_t(word) * size),
                              std::size_t(x_offset)});
        for (std::int64_t i = 0; i < size && wrong.empty(); ++i) {
          const double got = array_value(arena, x_offset, i, l.fp64);
          const std::uint64_t s = before_bits(x, i);
          const bool same = l.fp64 ? bits_of(got) == bits_of(decoded<double>(s, l))
                                   : bits_of(float(got)) == bits_of(decoded<float>(s, l));
          if (!same && !(std::isnan(got))) wrong = "element " + std::to_string(i) + " decoded inexactly";
        }
        break;
      case SlfpOp::Axpy:  // y := round(fma(alpha, x, y)) in the base type, bit for bit
        mask_vector(writable, y, size);
        for (std::int64_t i = 0; i < size && wrong.empty(); ++i) {
          std::uint64_t expected;
          if (l.fp64) {
            const double r = std::fma(alpha, double(value_in(x, i)), double(value_in(y, i)));
            expected = reference_bits(r, l, rn);
          } else {
            const float r = std::fma(float(alpha), float(value_in(x, i)), float(value_in(y, i)));
            expected = reference_bits(r, l, rn);
          }
          const std::uint64_t got = stored_bits(arena, y, i);
          const bool nan_both =
              (l.fp64 ? std::isnan(decoded<double>(got, l)) && std::isnan(decoded<double>(expected, l))
                      : std::isnan(decoded<float>(got, l)) && std::isnan(decoded<float>(expected, l)));
          if (got != expected && !nan_both)
            wrong = "axpy element " + std::to_string(i) + ": bits " + std::to_string(got) + ", expected " +
                    std::to_string(expected);
        }
        break;
      case SlfpOp::Dot: {  // an FP64 sum of exact products: within gamma_n of the exact dot
        long double exact = 0, magnitude = 0;
        bool finite = true;
        for (std::int64_t i = 0; i < size; ++i) {
          const long double p = value_in(x, i) * value_in(y, i);
          finite = finite && std::isfinite(p);
          exact += p, magnitude += std::fabs(p);
        }
        if (!finite) {
          if (std::isfinite(dot_result)) wrong = "dot of non-finite values is finite";
        } else if (!(std::fabs(dot_result - exact) <= (size + 1) * kU64 * magnitude + 1e-300L)) {
          wrong = "dot " + std::to_string(dot_result) + " differs from the exact " + std::to_string(double(exact)) +
                  " beyond gamma_n";
        }
        break;
      }
      case SlfpOp::Gemv: {  // FP64 sums of widened values: within gamma_{cols+2}
        const bool no = op_a == slfp::Transpose::No;
        const std::int64_t ys = no ? rows : cols, xs = no ? cols : rows;
        writable.add(
            ViewPlan{8 * ys, 1, std::max<std::int64_t>(1, 8 * ys), std::size_t(std::max<std::int64_t>(y_offset, 0))});
        for (std::int64_t i = 0; i < ys && wrong.empty(); ++i) {
          long double ref = 0, mag = 0;
          for (std::int64_t j = 0; j < xs; ++j) {
            const std::int64_t idx = no ? i + j * ld : j + i * ld;
            const long double p = value_in(am, idx) * array_value(before, x_offset, j, true);
            ref += p, mag += std::fabs(p);
          }
          ref *= alpha, mag *= std::fabs(alpha);
          if (beta != 0) {
            const long double y0 = array_value(before, y_offset, i, true);
            ref += beta * y0, mag += std::fabs(beta * y0);
          }
          const double got = array_value(arena, y_offset, i, true);
          if (!(std::fabs(got - ref) <= (xs + 3) * kU64 * mag + 1e-300L))
            wrong = "gemv y[" + std::to_string(i) + "] = " + std::to_string(got) + ", reference " +
                    std::to_string(double(ref));
        }
        break;
      }
      case SlfpOp::Gemm: {  // the base type's GEMM of the stored values
        const std::int64_t m = op_a == slfp::Transpose::No ? rows : cols, k = op_a == slfp::Transpose::No ? cols : rows;
        const std::int64_t nn = op_b == slfp::Transpose::No ? b_cols : b_rows;
        const double u = l.fp64 ? kU64 : 0x1p-24;
        if (m > 0 && nn > 0)
          writable.add(ViewPlan{std::int64_t(word) * m, nn, std::int64_t(word) * ldc, std::size_t(c_offset)});
        for (std::int64_t j = 0; j < nn && wrong.empty(); ++j)
          for (std::int64_t i = 0; i < m && wrong.empty(); ++i) {
            long double ref = 0, mag = 0;
            for (std::int64_t p = 0; p < k; ++p) {
              const long double av = value_in(am, op_a == slfp::Transpose::No ? i + p * ld : p + i * ld);
              const long double bv = value_in(bm, op_b == slfp::Transpose::No ? p + j * b_ld : j + p * b_ld);
              ref += av * bv, mag += std::fabs(av * bv);
            }
            const long double a_t = l.fp64 ? alpha : float(alpha), b_t = l.fp64 ? beta : float(beta);
            ref *= a_t, mag *= std::fabs(a_t);
            if (beta != 0) {
              const long double c0 = array_value(before, c_offset, i + j * ldc, l.fp64);
              ref += b_t * c0, mag += std::fabs(b_t * c0);
            }
            const double got = array_value(arena, c_offset, i + j * ldc, l.fp64);
            if (!(std::fabs(got - ref) <= (k + 4) * u * mag + 1e-300L))
              wrong = "gemm C(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(got) +
                      ", reference " + std::to_string(double(ref));
          }
        break;
      }
      default: break;
    }
  }
  if (!wrong.empty()) run.fail(wrong);
  if (o.kind != Kind::Result) {  // an error writes nothing the call could have written? it may: allow the outputs
    mask_vector(writable, y, std::max<std::int64_t>(x.size, 0));
  }
  const std::string changed =
      before.changes(arena, writable, [&](std::size_t q) { return "byte " + std::to_string(q); });
  if (!changed.empty()) run.fail(changed);
  run.end(to_string(o.kind));
}

}  // namespace mixsolve::fuzz
