// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Two-term splits of an FP32 value v into tensor-core inputs, as in Ootomo & Yokota (2021):
///
///   Markidis (eqs. 1-4):   hi = toF16(v),  lo = toF16(v - toF32(hi))
///   halfhalf (eqs. 15-18): hi = toF16(v),  lo = toF16((v - toF32(hi)) * 2^11)
///   tf32tf32 (§3.3):       the same as halfhalf with TF32 (cvt.rna.tf32.f32) in place of FP16
///
/// halfhalf scales the residual by 2^11 = 2^(l_F16 + 1) (eq. 14) so that it stays a normal FP16
/// number for |v| down to about 2^-14; the product then divides the correction terms by 2^11
/// again (eq. 20). v = hi + lo * 2^-11 keeps 22.75 of the 23 mantissa bits on average (§3.1).
///
/// All splits are exact functions of v with one rounding per term, so host and device agree bit
/// for bit. Non-finite input, or a hi part that overflows FP16 (|v| >= 65520), gives lo = 0: the
/// hi part carries the Inf/NaN and lo adds no second NaN source.
#pragma once

#include <cstdint>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/formats/conversions.hpp"

namespace mixsolve::formats {

/// 2^11: the residual scale of Ootomo & Yokota (2021) eqs. (14), (16), (18).
constexpr float kResidualScale = 2048.0f;
/// 2^-11, the inverse of kResidualScale.
constexpr float kInverseResidualScale = 1.0f / 2048.0f;

/// An FP16 hi/lo split of one FP32 value (split_halfhalf(), split_markidis()).
struct HalfSplit {
  /// FP16 bits of hi = toF16(v).
  std::uint16_t hi;
  /// FP16 bits of lo (scaled by 2^11 for halfhalf, unscaled for Markidis); 0 where hi is not
  /// finite.
  std::uint16_t lo;
};

/// A TF32 hi/lo split of one FP32 value (split_tf32tf32(), split_tf32tf32_unscaled()).
struct Tf32Split {
  /// TF32 value as FP32 bits (low 13 bits zero); 0x7FFFFFFF for a NaN input.
  std::uint32_t hi;
  /// TF32 value as FP32 bits: scaled by 2^11 (split_tf32tf32), unscaled
  /// (split_tf32tf32_unscaled); 0 where hi is not finite.
  std::uint32_t lo;
};

/// Whether FP16 bits `h` encode a finite value (not Inf or NaN).
/// @param h FP16 bits.
/// @return false when the exponent field is all ones.
MIXSOLVE_HD inline bool is_finite_bits16(std::uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }

/// The halfhalf split, Ootomo & Yokota (2021) eqs. (15)-(16): hi = toF16(v), lo = toF16((v - hi) * 2^11).
/// @param v the FP32 value.
/// @return hi and the scaled lo as FP16 bits; lo = 0 where hi is Inf or NaN.
MIXSOLVE_HD inline HalfSplit split_halfhalf(float v) {
  const std::uint16_t hi = float_to_half_bits_rn(v);
  if (!is_finite_bits16(hi)) return {hi, 0};
  const float residual = (v - half_bits_to_float(hi)) * kResidualScale;  // exact in FP32
  return {hi, float_to_half_bits_rn(residual)};
}

/// The Markidis split, Ootomo & Yokota (2021) eqs. (1)-(2): hi = toF16(v), lo = toF16(v - hi). No residual
/// scaling, so the residual underflows FP16 for small |v|.
/// @param v the FP32 value.
/// @return hi and lo as FP16 bits; lo = 0 where hi is Inf or NaN.
MIXSOLVE_HD inline HalfSplit split_markidis(float v) {
  const std::uint16_t hi = float_to_half_bits_rn(v);
  if (!is_finite_bits16(hi)) return {hi, 0};
  return {hi, float_to_half_bits_rn(v - half_bits_to_float(hi))};
}

/// The operand scaling of the fp16x3 GEMM (cublas-fp16x3 and its host model): each operand is
/// multiplied by 2^shift, the power of two that puts its largest finite |value| in [2^14, 2^15),
/// before the Markidis split, and the product by 2^-(shift_A + shift_B) afterwards (exact). Then
/// hi is below FP16's 65504 and lo = toF16(v - hi) stays a normal FP16 number (>= 2^-14) for
/// |v| down to 2^-15 of the largest entry, so values keep ~22 bits over 15 binades below the
/// largest and an absolute error below 2^-40 of it under that. Unscaled, lo is subnormal for
/// |v| < 2^-3 and hi for |v| < 2^-14: in an LU the trailing Schur complements shrink towards
/// the smallest singular values, and their updates lost most of their bits.
/// max_abs is the largest finite |value| (0 for an operand without one: shift 0). The shift is
/// clamped to [-63, 63] so that 2^-(shift_A + shift_B) is a normal FP32 number.
///
/// kFp16x3ScaledTopExponent: the largest |value| lands in [2^14, 2^15).
constexpr int kFp16x3ScaledTopExponent = 15;
/// The clamp of fp16x3_operand_shift(): shifts lie in [-kFp16x3MaxShift, kFp16x3MaxShift].
constexpr int kFp16x3MaxShift = 63;

/// The fp16x3 operand shift (see kFp16x3ScaledTopExponent above): the power of two that puts
/// `max_abs` in [2^14, 2^15), clamped to [-63, 63]. Subnormal max_abs is handled exactly.
/// @param max_abs the operand's largest finite |value|; 0, NaN or Inf give shift 0.
/// @return the shift, in [-63, 63].
MIXSOLVE_HD inline int fp16x3_operand_shift(float max_abs) {
  if (!(max_abs > 0.0f) || !(max_abs <= 3.402823466e38f)) return 0;  // zero, NaN or Inf
  int bias_shift = 0;
  if (max_abs < 1.17549435e-38f) {  // subnormal: scale into the normal range (exact)
    max_abs *= 18446744073709551616.0f;  // 2^64
    bias_shift = 64;
  }
  // max_abs in [2^(exponent - 1), 2^exponent), as frexp gives it
  const int exponent = int((float_bits(max_abs) >> 23) & 0xFFu) - 126 - bias_shift;
  const int shift = kFp16x3ScaledTopExponent - exponent;
  return shift < -kFp16x3MaxShift ? -kFp16x3MaxShift : shift > kFp16x3MaxShift ? kFp16x3MaxShift : shift;
}

/// The tf32tf32 split, Ootomo & Yokota (2021) §3.3: eqs. (15)-(16) with cvt.rna.tf32.f32 in place of toF16:
/// hi = toTF32(v), lo = toTF32((v - hi) * 2^11). NaN is kept as NaN (the conversion alone would
/// turn it into Inf).
/// @param v the FP32 value.
/// @return hi and the scaled lo as FP32 bits; {0x7FFFFFFF, 0} for NaN, lo = 0 where hi is Inf.
MIXSOLVE_HD inline Tf32Split split_tf32tf32(float v) {
  if (v != v) return {0x7FFFFFFFu, 0};
  const std::uint32_t hi = float_to_tf32_bits_rna(v);
  if ((hi & 0x7F800000u) == 0x7F800000u) return {hi, 0};
  const float residual = (v - bits_float(hi)) * kResidualScale;  // exact in FP32
  return {hi, float_to_tf32_bits_rna(residual)};
}

/// tf32tf32 without the 2^11 residual scaling: hi = toTF32(v), lo = toTF32(v - hi). TF32 has
/// FP32's 8-bit exponent, so the residual only leaves the normal range for |v| below about
/// 2^-115; in exchange the correction products need no rescaling and share the main product's
/// accumulator (one tensor-core chain, no extra wait).
/// @param v the FP32 value.
/// @return hi and the unscaled lo as FP32 bits; {0x7FFFFFFF, 0} for NaN, lo = 0 where hi is Inf.
MIXSOLVE_HD inline Tf32Split split_tf32tf32_unscaled(float v) {
  if (v != v) return {0x7FFFFFFFu, 0};
  const std::uint32_t hi = float_to_tf32_bits_rna(v);
  if ((hi & 0x7F800000u) == 0x7F800000u) return {hi, 0};
  return {hi, float_to_tf32_bits_rna(v - bits_float(hi))};
}

/// The value a split represents, evaluated in double (exact: both parts have <= 11 bits).
/// Host only, like the join_* functions below.
/// @param s a split_halfhalf() result.
/// @return hi + lo * 2^-11.
inline double join_halfhalf(HalfSplit s) {
  return double(half_bits_to_float_host(s.hi)) + double(half_bits_to_float_host(s.lo)) / 2048.0;
}
/// The value a split_markidis() result represents, exactly, in double.
/// @param s a split_markidis() result.
/// @return hi + lo.
inline double join_markidis(HalfSplit s) {
  return double(half_bits_to_float_host(s.hi)) + double(half_bits_to_float_host(s.lo));
}
/// The value a split_tf32tf32() result represents, exactly, in double.
/// @param s a split_tf32tf32() result.
/// @return hi + lo * 2^-11.
inline double join_tf32tf32(Tf32Split s) {
  return double(bits_float(s.hi)) + double(bits_float(s.lo)) / 2048.0;
}
/// The value a split_tf32tf32_unscaled() result represents, exactly, in double.
/// @param s a split_tf32tf32_unscaled() result.
/// @return hi + lo.
inline double join_tf32tf32_unscaled(Tf32Split s) { return double(bits_float(s.hi)) + double(bits_float(s.lo)); }

/// Mantissa bits of v (of 23) that a split reproduces, as counted in Ootomo & Yokota (2021) Table 1:
/// 23 when hi + lo == v exactly, else 23 minus the number of trailing mantissa bits lost.
/// An error of one ulp of v (in FP32) loses one bit, of 2 to 3 ulps two bits, and so on.
/// @param v           the FP32 value that was split.
/// @param represented the value the split represents (a join_* result).
/// @return the retained bits (23 at most; smaller, possibly negative, as the error grows).
int retained_mantissa_bits(float v, double represented);

}  // namespace mixsolve::formats
