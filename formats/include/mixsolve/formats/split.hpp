// SPDX-License-Identifier: BSD-3-Clause
// Two-term splits of an FP32 value v into tensor-core inputs, as in seed 000:
//
//   Markidis (eqs. 1-4):   hi = toF16(v),  lo = toF16(v - toF32(hi))
//   halfhalf (eqs. 15-18): hi = toF16(v),  lo = toF16((v - toF32(hi)) * 2^11)
//   tf32tf32 (§3.3):       the same as halfhalf with TF32 (cvt.rna.tf32.f32) in place of FP16
//
// halfhalf scales the residual by 2^11 = 2^(l_F16 + 1) (eq. 14) so that it stays a normal FP16
// number for |v| down to about 2^-14; the product then divides the correction terms by 2^11
// again (eq. 20). v = hi + lo * 2^-11 keeps 22.75 of the 23 mantissa bits on average (§3.1).
//
// All splits are exact functions of v with one rounding per term, so host and device agree bit
// for bit. Non-finite input, or a hi part that overflows FP16 (|v| >= 65520), gives lo = 0: the
// hi part carries the Inf/NaN and lo adds no second NaN source.
#pragma once

#include <cstdint>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/formats/conversions.hpp"

namespace mixsolve::formats {

// 2^11: the residual scale of seed 000 eqs. (14), (16), (18).
constexpr float kResidualScale = 2048.0f;
constexpr float kInverseResidualScale = 1.0f / 2048.0f;

struct HalfSplit {
  std::uint16_t hi;  // FP16 bits
  std::uint16_t lo;  // FP16 bits (scaled by 2^11 for halfhalf, unscaled for Markidis)
};

struct Tf32Split {
  std::uint32_t hi;  // TF32 value as FP32 bits (low 13 bits zero)
  std::uint32_t lo;  // scaled by 2^11
};

MIXSOLVE_HD inline bool is_finite_bits16(std::uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }

// seed 000 eqs. (15)-(16)
MIXSOLVE_HD inline HalfSplit split_halfhalf(float v) {
  const std::uint16_t hi = float_to_half_bits_rn(v);
  if (!is_finite_bits16(hi)) return {hi, 0};
  const float residual = (v - half_bits_to_float(hi)) * kResidualScale;  // exact in FP32
  return {hi, float_to_half_bits_rn(residual)};
}

// seed 000 eqs. (1)-(2): no residual scaling, so the residual underflows FP16 for small |v|.
MIXSOLVE_HD inline HalfSplit split_markidis(float v) {
  const std::uint16_t hi = float_to_half_bits_rn(v);
  if (!is_finite_bits16(hi)) return {hi, 0};
  return {hi, float_to_half_bits_rn(v - half_bits_to_float(hi))};
}

// The operand scaling of the fp16x3 GEMM (cublas-fp16x3 and its host model): each operand is
// multiplied by 2^shift, the power of two that puts its largest finite |value| in [2^14, 2^15),
// before the Markidis split, and the product by 2^-(shift_A + shift_B) afterwards (exact). Then
// hi is below FP16's 65504 and lo = toF16(v - hi) stays a normal FP16 number (>= 2^-14) for
// |v| down to 2^-15 of the largest entry, so values keep ~22 bits over 15 binades below the
// largest and an absolute error below 2^-40 of it under that. Unscaled, lo is subnormal for
// |v| < 2^-3 and hi for |v| < 2^-14: in an LU the trailing Schur complements shrink towards
// the smallest singular values, and their updates lost most of their bits.
// max_abs is the largest finite |value| (0 for an operand without one: shift 0). The shift is
// clamped to [-63, 63] so that 2^-(shift_A + shift_B) is a normal FP32 number.
constexpr int kFp16x3ScaledTopExponent = 15;  // the largest |value| lands in [2^14, 2^15)
constexpr int kFp16x3MaxShift = 63;

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

// seed 000 §3.3: eqs. (15)-(16) with cvt.rna.tf32.f32 in place of toF16. NaN is kept as NaN
// (the conversion alone would turn it into Inf).
MIXSOLVE_HD inline Tf32Split split_tf32tf32(float v) {
  if (v != v) return {0x7FFFFFFFu, 0};
  const std::uint32_t hi = float_to_tf32_bits_rna(v);
  if ((hi & 0x7F800000u) == 0x7F800000u) return {hi, 0};
  const float residual = (v - bits_float(hi)) * kResidualScale;  // exact in FP32
  return {hi, float_to_tf32_bits_rna(residual)};
}

// tf32tf32 without the 2^11 residual scaling. TF32 has FP32's 8-bit exponent, so the residual
// only leaves the normal range for |v| below about 2^-115; in exchange the correction products
// need no rescaling and share the main product's accumulator (one tensor-core chain, no extra wait).
MIXSOLVE_HD inline Tf32Split split_tf32tf32_unscaled(float v) {
  if (v != v) return {0x7FFFFFFFu, 0};
  const std::uint32_t hi = float_to_tf32_bits_rna(v);
  if ((hi & 0x7F800000u) == 0x7F800000u) return {hi, 0};
  return {hi, float_to_tf32_bits_rna(v - bits_float(hi))};
}

// The value a split represents, evaluated in double (exact: both parts have <= 11 bits).
inline double join_halfhalf(HalfSplit s) {
  return double(half_bits_to_float_host(s.hi)) + double(half_bits_to_float_host(s.lo)) / 2048.0;
}
inline double join_markidis(HalfSplit s) {
  return double(half_bits_to_float_host(s.hi)) + double(half_bits_to_float_host(s.lo));
}
inline double join_tf32tf32(Tf32Split s) {
  return double(bits_float(s.hi)) + double(bits_float(s.lo)) / 2048.0;
}
inline double join_tf32tf32_unscaled(Tf32Split s) { return double(bits_float(s.hi)) + double(bits_float(s.lo)); }

// Mantissa bits of v (of 23) that a split reproduces, as counted in seed 000 Table 1:
// 23 when hi + lo == v exactly, else 23 minus the number of trailing mantissa bits lost.
int retained_mantissa_bits(float v, double represented);

}  // namespace mixsolve::formats
