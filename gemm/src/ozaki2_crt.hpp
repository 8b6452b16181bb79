// SPDX-License-Identifier: BSD-3-Clause
// Internal: the modular arithmetic of the Ozaki scheme II, host and device alike (the device
// backend reproduces the host reference bit for bit).
//
// Residues. round(y) mod m for a double y comes from two exact FMA reductions
// y - m rint(y / m): each result is an integer small enough to be a double, whatever the
// rounding of the quotient.
//
// The CRT. An entry's residues r_t (mod m_t, M = m_1 ... m_N) determine the integer
//     x = S - q M,   S = sum_t r_t w_t,   w_t = (M / m_t) ((M / m_t)^-1 mod m_t),   q = round(S / M),
// the representative in (-M/2, M/2). Each w_t and M is held as four 40-bit limbs, so every
// limb of S (a sum of at most 20 products of an 8-bit residue and a 40-bit limb) and of S - q M
// (q < 2^13) is an integer below 2^53, computed exactly by FMAs. Only q comes from a rounded
// division, and it is right because x stays away from +-M/2 (crt_table checks the margin). The
// limbs are then carried into [-2^39, 2^39] and summed in double-double: exactly for |x| below
// about 2^104, so the result is x correctly rounded there; above, x with a relative error near
// 2^-104 before its final rounding (host and device alike). N FMAs per limb, against Garner's
// N(N - 1)/2 modular products.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/gemm/problem.hpp"
#include "mixsolve/primitives/error_free.hpp"

namespace mixsolve::gemm::detail {

constexpr int kOzaki2MaxModuliAll = 20;
constexpr int kCrtLimbs = 4;  // 4 x 40 bits > log2 M for 20 moduli (155.4)
constexpr double kCrtLimbRadix = 0x1p40;

// The constants of the CRT for N moduli.
struct CrtTable {
  int count = 0;
  std::int32_t modulus[kOzaki2MaxModuliAll] = {};
  double reciprocal[kOzaki2MaxModuliAll] = {};         // 1 / m_t, rounded
  double weight[kOzaki2MaxModuliAll][kCrtLimbs] = {};  // w_t's limbs, least significant first
  double product[kCrtLimbs] = {};                      // M's limbs
  double inverse_product = 0;                          // 1 / M, rounded
};

// Products and sums rounded one by one, never fused into an FMA: the device and the host round
// alike.
using error_free::add_rn;
using error_free::mul_rn;

// The CRT constants of the first `moduli` of ozaki2_moduli() (host code, ozaki_int8.cpp).
CrtTable crt_table(int moduli);
// The parameters both ozaki2 backends declare, moduli and bits, and the count of moduli a call
// asks for: `moduli` if set, else the fewest that keep `bits` bits of each operand at inner
// dimension k (kOzaki2DefaultBits when neither is set). Setting both, or 1 modulus, is refused,
// naming `backend`.
std::vector<ParameterSpec> ozaki2_parameters();
int ozaki2_resolve_moduli(const Parameters& asked, std::int64_t k, const std::string& backend);
// Why a call with `asked` at inner dimension k is refused ("" if it is not): one modulus, moduli
// and bits both set, or moduli too few for k. The backends' Backend::check_parameter_values, so
// that can_implement reports what run() refuses.
std::string ozaki2_moduli_refusal(const Parameters& asked, std::int64_t k);

// The scaling (ozaki_int8.hpp). Vector v, a row of op(A) or a column of op(B), is multiplied by
// 2^(K - e_v), where 2^e_v bounds its 2-norm, and rounded to integers x'. Then ||x'|| <= 2^K +
// sqrt(k) / 2, and by Cauchy-Schwarz |a'_i . b'_j| <= (2^K_A + sqrt(k)/2) (2^K_B + sqrt(k)/2),
// which ozaki2_scale keeps within 2^(floor(log2 M) - 1), the CRT's margin.
struct Ozaki2Scale {
  int a = 0, b = 0;  // K_A >= K_B
};
// K_A and K_B for `moduli` moduli at inner dimension k (host code, ozaki_int8.cpp). Throws
// InvalidArgument when M is too small for k.
Ozaki2Scale ozaki2_scale(int moduli, std::int64_t k);

// The norm bound e_v comes from an integer: with c = ceil(log2 max_l |x_l|) and y_l = |x_l| 2^-c
// <= 1, each nonzero element adds floor(y_l^2 2^40) + 2 units of 2^-40, more than y_l^2 2^40
// whatever the rounding of y_l^2, and the sum (below k 2^41 <= 2^58) is the same in any order of
// addition: the device's atomic sums equal the host's. It overestimates ||x||^2 by at most
// 2k 2^(2c - 40), and ||x||^2 >= max^2 > 2^(2c - 2): a relative k 2^-37 <= 2^-20 at k = 2^17, so
// the norm by a factor below 1 + 2^-21.
constexpr int kNormUnitBits = 40;
MIXSOLVE_HD inline std::uint64_t norm_units(double x, int c) {
  if (x == 0) return 0;
  const double y = ldexp(fabs(x), -c);
  return std::uint64_t(mul_rn(y, y) * 0x1p40) + 2;
}
// The smallest e with 2^(2e) >= units 2^(2c - 40), so that ||x|| <= 2^e, for a vector's
// units > 0 (at least 2^38: its largest element has y > 1/2).
MIXSOLVE_HD inline int norm_exponent(std::uint64_t units, int c) {
  int log2_units = 0;  // ceil(log2 units)
  while ((std::uint64_t{1} << log2_units) < units) ++log2_units;
  const int excess = log2_units - kNormUnitBits;  // >= -2
  return c + (excess >= 0 ? (excess + 1) / 2 : -(-excess / 2));
}

// x - m rint(x / m) for an integer-valued x with |x| < 2^80, exactly: the quotient's rounding
// errs by at most |x| 2^-52 / m + 1/2, so the exact difference is an integer below 2^29 (below
// m / 2 + 1 once |x| < 2^40), which the FMA returns unrounded.
MIXSOLVE_HD inline double reduced(double x, double m, double reciprocal) { return fma(-rint(x * reciprocal), m, x); }

// round(y) mod m (round half to even), balanced as an INT8 operand: in [-128, 127] for m = 256,
// [-(m - 1) / 2, (m - 1) / 2] for odd m. |y| < 2^80.
MIXSOLVE_HD inline std::int8_t int8_residue_of_rounded(double y, std::int32_t m, double reciprocal) {
  const int r = int(reduced(reduced(rint(y), m, reciprocal), m, reciprocal));  // |r| <= m / 2
  return static_cast<std::int8_t>(r == 128 ? -128 : r);
}

// x mod m in [0, m) for |x| < 2^31 (an INT32 product).
MIXSOLVE_HD inline std::int32_t residue_of_product(std::int32_t x, std::int32_t m, double reciprocal) {
  const int r = int(reduced(double(x), m, reciprocal));  // |r| <= m / 2
  return r < 0 ? r + m : r;
}

// The CRT in two steps: crt_add for each modulus t in turn (limbs start at 0), then crt_value.
MIXSOLVE_HD inline void crt_add(const CrtTable& table, int t, std::int32_t residue, double (&limbs)[kCrtLimbs]) {
  for (int j = 0; j < kCrtLimbs; ++j) limbs[j] = fma(double(residue), table.weight[t][j], limbs[j]);  // exact
}

// x in (-M/2, M/2) from the limbs of S, as a double (see the header comment for its rounding).
MIXSOLVE_HD inline double crt_value(const CrtTable& table, double (&limbs)[kCrtLimbs]) {
  double s = limbs[kCrtLimbs - 1];
  for (int j = kCrtLimbs - 2; j >= 0; --j) s = add_rn(mul_rn(s, kCrtLimbRadix), limbs[j]);
  const double q = rint(mul_rn(s, table.inverse_product));                             // round(S / M), below 2^13
  for (int j = 0; j < kCrtLimbs; ++j) limbs[j] = fma(-q, table.product[j], limbs[j]);  // exact
  for (int j = 0; j + 1 < kCrtLimbs; ++j) {  // carries: limbs below the top into [-2^39, 2^39]
    const double carry = rint(limbs[j] * (1 / kCrtLimbRadix));
    limbs[j] = fma(-carry, kCrtLimbRadix, limbs[j]);
    limbs[j + 1] += carry;  // exact: below 2^53
  }
  // Double-double sum from the top limb down; a lower limb is at most half a unit of the limb
  // above, so there is no cancellation beyond one bit.
  double hi = ldexp(limbs[kCrtLimbs - 1], 40 * (kCrtLimbs - 1)), lo = 0;
  for (int j = kCrtLimbs - 2; j >= 0; --j) {
    const double term = ldexp(limbs[j], 40 * j);
    double s1, error;
    error_free::two_sum(hi, term, s1, error);
    lo = add_rn(lo, error);
    error_free::fast_two_sum(s1, lo, hi, lo);  // |s1| >= |lo|
  }
  return hi;
}

}  // namespace mixsolve::gemm::detail
