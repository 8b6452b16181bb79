// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Bit-exact FP32 -> FP16 (round to nearest even) and FP32 -> TF32 (round to nearest, ties away)
/// conversions that give the same bits on host and device. On the device they are the hardware
/// conversions (cvt.rn.f16.f32 through __float2half_rn, and cvt.rna.tf32.f32); on the host they are
/// integer re-implementations of the same rounding, tested bit for bit against the GPU.
/// A host-only model of FP32 -> BF16 (round to nearest even) is here too.
#pragma once

#include <cstdint>
#include <cstring>

#include "mixsolve/core/hd.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace mixsolve::formats {

/// The IEEE binary32 bit pattern of `f` (host and device).
/// @param f any float, NaN included.
/// @return its 32 bits.
MIXSOLVE_HD inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

/// The float whose IEEE binary32 bit pattern is `u` (host and device); inverse of float_bits().
/// @param u 32 bits.
/// @return the float they encode.
MIXSOLVE_HD inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// The IEEE binary64 bit pattern of `d` (host and device).
/// @param d any double, NaN included.
/// @return its 64 bits.
MIXSOLVE_HD inline std::uint64_t double_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(d));
#else
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
#endif
}

/// The double whose IEEE binary64 bit pattern is `u` (host and device); inverse of double_bits().
/// @param u 64 bits.
/// @return the double they encode.
MIXSOLVE_HD inline double bits_double(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}

/// The FP16 NaN that the GPU's FP32 -> FP16 conversion returns for every NaN input.
constexpr std::uint16_t kHalfCanonicalNaN = 0x7FFF;
/// The largest finite FP16 value.
constexpr float kHalfMax = 65504.0f;

/// Host model of cvt.rn.f16.f32: IEEE binary16, round to nearest, ties to even, with subnormals.
/// |f| >= 65520 gives +-Inf; NaN gives kHalfCanonicalNaN, as the GPU does.
/// @param f the value to round.
/// @return the FP16 bit pattern.
inline std::uint16_t float_to_half_bits_rn_host(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return kHalfCanonicalNaN;                               // NaN (the GPU returns 0x7FFF)
  if (ax >= 0x477FF000u) return sign | 0x7C00u;                                 // >= 65520 rounds to Inf
  if (ax >= 0x38800000u) {                                                      // normal binary16 (>= 2^-14)
    const std::uint32_t rounded = ax + 0xFFFu + ((ax >> 13) & 1u);              // RNE at bit 13
    return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));  // rebias 127 -> 15
  }
  if (ax <= 0x33000000u) return sign;  // <= 2^-25: ties to even give 0
  // Subnormal binary16: k * 2^-24 with k = m * 2^(e - 126).
  const std::uint32_t e = ax >> 23;
  const std::uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - e;  // 14 .. 24
  std::uint32_t k = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (k & 1u))) ++k;
  return static_cast<std::uint16_t>(sign | k);
}

/// Host conversion of an FP16 bit pattern to float (exact: every FP16 value, subnormals, Inf and
/// NaN included, is a float).
/// @param h FP16 bits.
/// @return the value.
inline float half_bits_to_float_host(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return bits_float(sign | 0x7F800000u | (m << 13));  // Inf / NaN
  if (e != 0) return bits_float(sign | ((e + 112u) << 23) | (m << 13));
  // zero or subnormal: m * 2^-24, exact in float
  const float v = static_cast<float>(m) * 0x1p-24f;
  return sign ? -v : v;
}

/// FP32 -> FP16 bits, round to nearest even: __float2half_rn on the device,
/// float_to_half_bits_rn_host() on the host (the same bits).
/// @param f the value to round.
/// @return the FP16 bit pattern.
MIXSOLVE_HD inline std::uint16_t float_to_half_bits_rn(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  return float_to_half_bits_rn_host(f);
#endif
}

/// FP16 bits -> float, exact: __half2float on the device, half_bits_to_float_host() on the host.
/// @param h FP16 bits.
/// @return the value.
MIXSOLVE_HD inline float half_bits_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return half_bits_to_float_host(h);
#endif
}

/// Host model of cvt.rna.tf32.f32: keep 10 explicit mantissa bits, round half away from zero by
/// adding half an ulp of TF32 to the bit pattern and truncating (a carry into the exponent gives
/// the next binade or Inf). NaN bit patterns are truncated without rounding, as the instruction
/// does on the H100 (GpuFormats test): a NaN whose payload lies below bit 13 comes back as Inf, so
/// callers that must keep NaN (split_tf32tf32) test for it first.
/// @param f the value to round.
/// @return the TF32 value as FP32 bits, the low 13 bits zero.
inline std::uint32_t float_to_tf32_bits_rna_host(float f) {
  const std::uint32_t x = float_bits(f);
  const bool nan = (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0;
  return nan ? (x & 0xFFFFE000u) : ((x + 0x1000u) & 0xFFFFE000u);
}

/// FP32 -> TF32, round to nearest with ties away from zero: cvt.rna.tf32.f32 on the device,
/// float_to_tf32_bits_rna_host() on the host (the same bits, NaN handling included).
/// @param f the value to round.
/// @return the TF32 value as FP32 bits, the low 13 bits zero.
MIXSOLVE_HD inline std::uint32_t float_to_tf32_bits_rna(float f) {
#if defined(__CUDA_ARCH__)
  std::uint32_t out;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(f));
  return out;
#else
  return float_to_tf32_bits_rna_host(f);
#endif
}

/// Host model of cvt.rn.bf16.f32: keep the upper 16 bits of the FP32 pattern, round to nearest
/// even (NaN stays NaN, made quiet).
/// @param f the value to round.
/// @return the BF16 bit pattern.
inline std::uint16_t float_to_bf16_bits_rn_host(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
/// `f` rounded to BF16 (float_to_bf16_bits_rn_host()), as a float. Host only.
/// @param f the value to round.
/// @return the BF16 value.
inline float to_bf16_rn_host(float f) { return bits_float(std::uint32_t(float_to_bf16_bits_rn_host(f)) << 16); }

/// `f` rounded to TF32 (float_to_tf32_bits_rna()), as a float. TF32 values are FP32 bit patterns
/// with the low 13 mantissa bits zero.
/// @param f the value to round.
/// @return the TF32 value.
MIXSOLVE_HD inline float to_tf32_rna(float f) { return bits_float(float_to_tf32_bits_rna(f)); }
/// `f` rounded to FP16 (float_to_half_bits_rn()), as a float.
/// @param f the value to round.
/// @return the FP16 value (+-Inf for |f| >= 65520).
MIXSOLVE_HD inline float to_f16_rn(float f) { return half_bits_to_float(float_to_half_bits_rn(f)); }

}  // namespace mixsolve::formats
