// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Short-length floating-point (SLFP) storage formats, Mukunoki & Imamura (2016): an FP64 or
/// FP32 value with its mantissa cut in 8-bit steps, kept in a 16-56-bit container. The sign and
/// the exponent field stay those of the IEEE base format (so the exponent range is FP64's or
/// FP32's), only low mantissa bits go; a value is widened back to its base format in registers and
/// computed on in full precision.
///
/// | format        | base | container (word planes) | exponent bits | mantissa bits (stored) | decimal digits |
/// |---------------|------|-------------------------|---------------|------------------------|----------------|
/// | slfp64in56b   | FP64 | 56 (32 + 16 + 8)        | 11            | 44                     | 13.55          |
/// | slfp64in48b   | FP64 | 48 (32 + 16)            | 11            | 36                     | 11.14          |
/// | slfp64in40b   | FP64 | 40 (32 + 8)             | 11            | 28                     | 8.73           |
/// | slfp64in32b   | FP64 | 32                      | 11            | 20                     | 6.32           |
/// | slfp64in24b   | FP64 | 24 (16 + 8)             | 11            | 12                     | 3.91           |
/// | slfp64in16b   | FP64 | 16                      | 11            | 4                      | 1.51           |
/// | slfp32in24b   | FP32 | 24 (16 + 8)             | 8             | 15                     | 4.82           |
/// | slfp32in16b   | FP32 | 16                      | 8             | 7                      | 2.41           |
///
/// (Mukunoki & Imamura 2016, Table 1). The stored bits of a value are the top `Bits` bits of its IEEE pattern: bit
/// Bits - 1 the sign, then the exponent field, then the kept mantissa. A concatenated format keeps
/// them in word planes (structure of arrays, Mukunoki & Imamura (2016) §3.3), the most significant word in the widest
/// plane: slfp64in56b's element i is (w32[i] << 24) | (w16[i] << 8) | w8[i].
///
/// Encoding rounds toward zero (RZ: Mukunoki & Imamura's (2016) truncation) or to nearest with ties to even (RN,
/// the paper's open item): a carry out of the mantissa goes into the exponent, and a finite value
/// that rounds beyond the largest finite one becomes Inf, as IEEE rounding does. Both keep signed
/// zeros, subnormals (to the kept precision: a subnormal below the format's smallest step goes to
/// zero under RZ, to zero or the smallest step under RN), Inf, and NaN (made quiet, its sign and
/// kept payload bits kept: a NaN whose payload lies only in the dropped bits would otherwise come
/// back as Inf). Decoding is exact.
#pragma once

#include <cstdint>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/formats/conversions.hpp"

namespace mixsolve::formats {

/// How a value is rounded to a shorter format.
enum class Rounding {
  TowardZero,   ///< truncation of the dropped mantissa bits (RZ; Mukunoki & Imamura 2016, §3.2)
  NearestEven,  ///< round to nearest, ties to even (RN; IEEE 754's default)
};

namespace slfp_detail {
template <class Value>
struct Ieee;
template <>
struct Ieee<double> {
  using Bits = std::uint64_t;
  static constexpr int kBits = 64, kExponentBits = 11;
  MIXSOLVE_HD static Bits to_bits(double v) { return double_bits(v); }
  MIXSOLVE_HD static double from_bits(Bits b) { return bits_double(b); }
};
template <>
struct Ieee<float> {
  using Bits = std::uint32_t;
  static constexpr int kBits = 32, kExponentBits = 8;
  MIXSOLVE_HD static Bits to_bits(float v) { return float_bits(v); }
  MIXSOLVE_HD static float from_bits(Bits b) { return bits_float(b); }
};
}  // namespace slfp_detail

/// An SLFP format: the top `ContainerBits` bits of a `Value` (double or float). Stateless; all
/// members static.
template <class Value, int ContainerBits>
struct Slfp {
  using value_type = Value;
  using Bits =
      typename slfp_detail::Ieee<Value>::Bits;  ///< the base format's bit pattern, and the stored bits right-aligned
  static constexpr int kContainerBits = ContainerBits;
  static constexpr int kValueBits = slfp_detail::Ieee<Value>::kBits;
  static constexpr int kExponentBits = slfp_detail::Ieee<Value>::kExponentBits;
  static constexpr int kDroppedBits = kValueBits - ContainerBits;
  static constexpr int kMantissaBits = ContainerBits - 1 - kExponentBits;  ///< stored (explicit) mantissa bits
  static_assert(ContainerBits % 8 == 0 && ContainerBits >= 16 && ContainerBits < kValueBits,
                "an SLFP container is 16 .. (base bits - 8) bits in steps of 8");
  static_assert(kMantissaBits >= 2, "the quiet-NaN bit must stay");
  /// Word planes, widest (most significant) first: 32, 16 and 8 bits, each at most once.
  static constexpr bool kHas32 = ContainerBits >= 32;
  static constexpr bool kHas16 = (ContainerBits % 32) >= 16;
  static constexpr bool kHas8 = (ContainerBits % 16) == 8;
  static constexpr int kWords = int(kHas32) + int(kHas16) + int(kHas8);
  static_assert(32 * kHas32 + 16 * kHas16 + 8 * kHas8 == ContainerBits, "words cover the container");

  /// The stored bits of `v` (right-aligned), rounded as `R` says.
  template <Rounding R>
  MIXSOLVE_HD static Bits encode(Value v) {
    constexpr Bits kSign = Bits(1) << (kValueBits - 1);
    constexpr Bits kInf = ((Bits(1) << kExponentBits) - 1) << (kValueBits - 1 - kExponentBits);
    constexpr Bits kQuiet = Bits(1) << (kValueBits - 2 - kExponentBits);  // the top mantissa bit
    const Bits x = slfp_detail::Ieee<Value>::to_bits(v);
    const Bits magnitude = x & ~kSign;
    if (magnitude > kInf) return (x | kQuiet) >> kDroppedBits;  // NaN stays NaN
    if constexpr (R == Rounding::TowardZero) {
      return x >> kDroppedBits;
    } else {
      // Add just under half a kept ulp, plus one where the kept part is odd (ties to even); a
      // carry runs into the exponent (the next binade, or Inf past the largest finite value).
      const Bits odd = (magnitude >> kDroppedBits) & 1u;
      const Bits rounded = (magnitude + ((Bits(1) << (kDroppedBits - 1)) - 1u) + odd) >> kDroppedBits;
      return ((x & kSign) >> kDroppedBits) | rounded;
    }
  }

  /// The value of stored bits `s` (exact).
  MIXSOLVE_HD static Value decode(Bits s) { return slfp_detail::Ieee<Value>::from_bits(Bits(s << kDroppedBits)); }

  /// `v` rounded to this format as a `Value` (encode, then decode).
  template <Rounding R>
  MIXSOLVE_HD static Value round(Value v) {
    return decode(encode<R>(v));
  }
};

using Slfp64in56 = Slfp<double, 56>;
using Slfp64in48 = Slfp<double, 48>;
using Slfp64in40 = Slfp<double, 40>;
using Slfp64in32 = Slfp<double, 32>;
using Slfp64in24 = Slfp<double, 24>;
using Slfp64in16 = Slfp<double, 16>;
using Slfp32in24 = Slfp<float, 24>;
using Slfp32in16 = Slfp<float, 16>;

/// A vector of `Format` values in word planes (Mukunoki & Imamura 2016, §3.3): element i's stored bits are
/// w32[i], w16[i] and w8[i], most significant first, for the planes the format has (the others
/// are unused, null). A non-owning view; load() and store() are the accessor every SLFP kernel is
/// written against (IeeeVector below has the same interface for plain FP64 / FP32 arrays).
template <class Format>
struct SlfpVector {
  using format = Format;
  using value_type = typename Format::value_type;
  using Bits = typename Format::Bits;
  std::uint32_t* w32 = nullptr;
  std::uint16_t* w16 = nullptr;
  std::uint8_t* w8 = nullptr;

  /// The stored bits of element i.
  MIXSOLVE_HD Bits bits(std::int64_t i) const {
    Bits s = 0;
    int shift = Format::kContainerBits;
    if constexpr (Format::kHas32) {
      shift -= 32;
      s |= Bits(w32[i]) << shift;
    }
    if constexpr (Format::kHas16) {
      shift -= 16;
      s |= Bits(w16[i]) << shift;
    }
    if constexpr (Format::kHas8) s |= Bits(w8[i]);
    return s;
  }
  /// Writes stored bits `s` as element i.
  MIXSOLVE_HD void set_bits(std::int64_t i, Bits s) const {
    int shift = Format::kContainerBits;
    if constexpr (Format::kHas32) {
      shift -= 32;
      w32[i] = static_cast<std::uint32_t>(s >> shift);
    }
    if constexpr (Format::kHas16) {
      shift -= 16;
      w16[i] = static_cast<std::uint16_t>(s >> shift);
    }
    if constexpr (Format::kHas8) w8[i] = static_cast<std::uint8_t>(s);
  }
  /// Element i widened to the base format (exact).
  MIXSOLVE_HD value_type load(std::int64_t i) const { return Format::decode(bits(i)); }
  /// Element i := v rounded as `R` says.
  template <Rounding R>
  MIXSOLVE_HD void store(std::int64_t i, value_type v) const {
    set_bits(i, Format::template encode<R>(v));
  }
};

/// A plain IEEE array behind the same interface as SlfpVector: FP64 and FP32 storage (the
/// baselines), and `Stored` narrower than `Value` for Mukunoki & Imamura's (2016) FP64inFP32 (FP32 storage, FP64
/// arithmetic; the store rounds by the C++ conversion: to nearest, ties to even, whatever R says).
template <class Stored, class Value = Stored>
struct IeeeVector {
  using value_type = Value;
  Stored* data = nullptr;
  MIXSOLVE_HD value_type load(std::int64_t i) const { return static_cast<Value>(data[i]); }
  template <Rounding R>
  MIXSOLVE_HD void store(std::int64_t i, value_type v) const {
    data[i] = static_cast<Stored>(v);
  }
};

}  // namespace mixsolve::formats
