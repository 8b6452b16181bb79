// SPDX-License-Identifier: BSD-3-Clause
// Internal: the Chinese remainder step of the Ozaki scheme II, host and device alike (the device
// backend reproduces the host reference bit for bit). Garner's algorithm turns an entry's N
// residues into balanced mixed-radix digits with small-integer arithmetic only, and Horner's rule
// in double-double arithmetic (error-free FMA products and two-sums) evaluates
//     x = v_0 + m_0 (v_1 + m_1 (v_2 + ... + m_{N-2} v_{N-1}))
// with a relative error near 2^-104, whatever N (M up to 2^155 for 20 moduli).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "mixsolve/core/hd.hpp"
#include "mixsolve/gemm/problem.hpp"

namespace mixsolve::gemm::detail {

constexpr int kOzaki2MaxModuliAll = 20;

// The constants of Garner's algorithm for N moduli: inverse[j][i] = m_j^-1 mod m_i (j < i).
struct GarnerTable {
  int count = 0;
  std::int32_t modulus[kOzaki2MaxModuliAll] = {};
  std::int32_t inverse[kOzaki2MaxModuliAll][kOzaki2MaxModuliAll] = {};
};

// Products and sums rounded one by one, never fused into an FMA by the compiler: the device and
// the host (whatever its -ffp-contract and -march) then round alike.
MIXSOLVE_HD inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  volatile double r = a * b;
  return r;
#endif
}
MIXSOLVE_HD inline double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  volatile double r = a + b;
  return r;
#endif
}

// The Garner constants of the first `moduli` of ozaki2_moduli() (host code, ozaki_int8.cpp).
GarnerTable garner_table(int moduli);
// The parameter both ozaki2 backends declare, and the count a call's value asks for: 0, the
// fewest that keep 53 bits of each operand at inner dimension k; 1 is refused, naming `backend`.
ParameterSpec ozaki2_moduli_parameter();
int ozaki2_resolve_moduli(std::int64_t asked, std::int64_t k, const std::string& backend);

// x mod m in [0, m).
MIXSOLVE_HD inline std::int32_t positive_residue(std::int64_t x, std::int32_t m) {
  const std::int64_t r = x % m;
  return std::int32_t(r < 0 ? r + m : r);
}

// A residue as an INT8 operand: in [-128, 127] for m = 256, [-(m - 1) / 2, (m - 1) / 2] for odd m.
MIXSOLVE_HD inline std::int8_t int8_residue(std::int32_t r, std::int32_t m) {
  return static_cast<std::int8_t>(r >= (m + 1) / 2 ? r - m : r);
}

// The balanced digit of a residue: in [-(m - 1) / 2, m / 2].
MIXSOLVE_HD inline std::int32_t balanced(std::int32_t r, std::int32_t m) { return r > m / 2 ? r - m : r; }

// round(y) mod m in [0, m) for a finite y of any magnitude: below 2^62 through a 64-bit integer;
// above, y = mant 2^e with a 53-bit integer mant and e >= 10 is an integer, whose residue is
// (mant mod m) (2^e mod m).
MIXSOLVE_HD inline std::int32_t residue_of_rounded(double y, std::int32_t m) {
  if (fabs(y) < 0x1p62) return positive_residue(llrint(y), m);
  int e = 0;
  const double f = frexp(y, &e);  // y = f 2^e, |f| in [1/2, 1)
  std::int64_t r = positive_residue(std::int64_t(ldexp(f, 53)), m);
  for (int i = 0; i < e - 53; ++i) r = (2 * r) % m;
  return std::int32_t(r);
}

// The value x in [-M/2 + 1, M/2] with x = residue[i] mod m_i, in double: Garner's digits, then
// Horner's rule in double-double. residue[i] in [0, m_i).
MIXSOLVE_HD inline double crt_to_double(const GarnerTable& t, const std::int32_t* residue) {
  std::int32_t digit[kOzaki2MaxModuliAll] = {};
  for (int i = 0; i < t.count; ++i) {
    std::int64_t r = residue[i];
    for (int j = 0; j < i; ++j) r = positive_residue((r - digit[j]) * t.inverse[j][i], t.modulus[i]);
    digit[i] = balanced(std::int32_t(r), t.modulus[i]);
  }
  double hi = digit[t.count - 1], lo = 0;
  for (int i = t.count - 2; i >= 0; --i) {
    // (hi, lo) := m_i (hi, lo) + v_i: the product of hi is split exactly by an FMA (TwoProduct),
    // the digit added by TwoSum, and the pair renormalised (FastTwoSum, |hi| >= |lo|).
    const double m = t.modulus[i], d = digit[i];
    const double p = mul_rn(hi, m);
    const double p_error = fma(hi, m, -p);
    const double s = add_rn(p, d);
    const double bb = add_rn(s, -p);
    const double s_error = add_rn(add_rn(p, -add_rn(s, -bb)), add_rn(d, -bb));
    lo = add_rn(add_rn(mul_rn(lo, m), p_error), s_error);
    const double renormalised = add_rn(s, lo);
    lo = add_rn(lo, -add_rn(renormalised, -s));
    hi = renormalised;
  }
  return add_rn(hi, lo);
}

}  // namespace mixsolve::gemm::detail
