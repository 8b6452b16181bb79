// SPDX-License-Identifier: BSD-3-Clause
// SLFP formats (formats/slfp.hpp, Mukunoki & Imamura 2016): layouts against its Table 1, both roundings against
// MPFR's correctly rounded result in the format's precision and exponent range (random values over
// the whole range and edge values), exact round trips of stored values, every stored value and
// every rounding boundary of slfp32in16b, and the word planes of SlfpVector.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "mixsolve/formats/slfp.hpp"

namespace {

using namespace mixsolve::formats;

template <class V>
typename slfp_detail::Ieee<V>::Bits to_bits(V v) {
  return slfp_detail::Ieee<V>::to_bits(v);
}

float float_of(std::uint32_t b) { return slfp_detail::Ieee<float>::from_bits(b); }

// v correctly rounded (MPFR) to `mantissa_bits` stored mantissa bits with the exponent range of
// V's IEEE format, subnormals included: RN ties to even, or RZ (a finite value past the largest
// finite one gives Inf under RN and the largest finite under RZ, as IEEE rounding does).
template <class V>
V mpfr_reference(V v, int mantissa_bits, Rounding r) {
  const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
  constexpr int kEmaxIeee = std::numeric_limits<V>::max_exponent;    // 1024 / 128: MPFR's m in [1/2, 1)
  constexpr int kEminNormal = std::numeric_limits<V>::min_exponent;  // -1021 / -125, same convention
  // The smallest subnormal is 2^(kEminNormal - 1 - mantissa_bits) = 1/2 * 2^emin.
  mpfr_set_emin(kEminNormal - mantissa_bits);
  mpfr_set_emax(kEmaxIeee);
  const mpfr_rnd_t rnd = r == Rounding::NearestEven ? MPFR_RNDN : MPFR_RNDZ;
  mpfr_t x;
  mpfr_init2(x, mantissa_bits + 1);
  int t = std::is_same_v<V, double> ? mpfr_set_d(x, double(v), rnd) : mpfr_set_flt(x, float(v), rnd);
  t = mpfr_check_range(x, t, rnd);
  mpfr_subnormalize(x, t, rnd);
  const V out = std::is_same_v<V, double> ? V(mpfr_get_d(x, MPFR_RNDN)) : V(mpfr_get_flt(x, MPFR_RNDN));
  mpfr_clear(x);
  mpfr_set_emin(old_emin);
  mpfr_set_emax(old_emax);
  return out;
}

// Random values over the whole range: random bit patterns (every exponent, subnormals, Inf and
// NaN), and the edge values.
template <class V>
std::vector<V> test_values(std::uint64_t seed, int count) {
  using Bits = typename slfp_detail::Ieee<V>::Bits;
  std::mt19937_64 rng(seed);
  std::vector<V> out;
  for (int i = 0; i < count; ++i) out.push_back(slfp_detail::Ieee<V>::from_bits(static_cast<Bits>(rng())));
  const V edges[] = {V(0),
                     -V(0),
                     std::numeric_limits<V>::denorm_min(),
                     -std::numeric_limits<V>::denorm_min(),
                     std::numeric_limits<V>::min(),
                     std::numeric_limits<V>::min() * V(0.75),
                     std::numeric_limits<V>::max(),
                     -std::numeric_limits<V>::max(),
                     std::numeric_limits<V>::infinity(),
                     -std::numeric_limits<V>::infinity(),
                     V(1),
                     V(-1),
                     V(1) / V(3),
                     std::nextafter(V(1), V(2)),
                     std::nextafter(V(1), V(0)),
                     std::nextafter(V(2), V(0))};
  for (V e : edges) out.push_back(e);
  return out;
}

template <class F>
void expect_rounding_matches_mpfr(const char* name, std::uint64_t seed) {
  using V = typename F::value_type;
  using Bits = typename F::Bits;
  std::vector<V> values = test_values<V>(seed, 20000);
  // Ties, one base ulp around them, and values just below the overflow threshold: the midpoints of
  // random stored values and of the largest finite stored value and Inf.
  std::mt19937_64 rng(seed + 1);
  constexpr Bits kMaxFinite = (((Bits(1) << F::kExponentBits) - 1) << F::kMantissaBits) - 1;
  for (int i = 0; i < 4000; ++i) {
    const Bits s = i == 0 ? kMaxFinite : static_cast<Bits>(rng() % (kMaxFinite + 1));
    const Bits mid = (Bits(s) << F::kDroppedBits) | (Bits(1) << (F::kDroppedBits - 1));
    for (const Bits b : {mid, Bits(mid - 1), Bits(mid + 1)})
      for (const Bits sign : {Bits(0), Bits(Bits(1) << (F::kValueBits - 1))})
        values.push_back(slfp_detail::Ieee<V>::from_bits(b | sign));
  }
  for (const Rounding r : {Rounding::NearestEven, Rounding::TowardZero}) {
    const char* rname = r == Rounding::NearestEven ? "RN" : "RZ";
    int checked = 0;
    for (const V v : values) {
      const V got = r == Rounding::NearestEven ? F::template round<Rounding::NearestEven>(v)
                                               : F::template round<Rounding::TowardZero>(v);
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(got)) << name << " " << rname;
        ASSERT_EQ(std::signbit(got), std::signbit(v)) << name << " " << rname << " NaN sign";
        continue;
      }
      V expected = mpfr_reference(v, F::kMantissaBits, r);
      // IEEE RZ keeps an overflowing finite value at the largest finite one; truncation never
      // overflows, so the two agree on every finite input.
      ASSERT_EQ(to_bits(got), to_bits(expected)) << name << " " << rname << " of " << v << " (bits " << std::hex
                                                 << to_bits(v) << "): got " << got << ", MPFR " << expected;
      ++checked;
    }
    EXPECT_GT(checked, 20000) << name;
  }
}

TEST(Slfp, LayoutsAreMukunokiImamuraTable1) {
  struct Row {
    int container, exponent, mantissa, words;
    double digits;
  };
  const auto check = [](auto format, Row row, const char* name) {
    using F = decltype(format);
    EXPECT_EQ(F::kContainerBits, row.container) << name;
    EXPECT_EQ(F::kExponentBits, row.exponent) << name;
    EXPECT_EQ(F::kMantissaBits, row.mantissa) << name;
    EXPECT_EQ(F::kWords, row.words) << name;
    // Decimal digits of the normalized numbers, Mukunoki & Imamura (2016) Table 1: (mantissa + 1) log10 2.
    EXPECT_NEAR((F::kMantissaBits + 1) * std::log10(2.0), row.digits, 0.005) << name;
  };
  check(Slfp64in56{}, {56, 11, 44, 3, 13.55}, "slfp64in56b");
  check(Slfp64in48{}, {48, 11, 36, 2, 11.14}, "slfp64in48b");
  check(Slfp64in40{}, {40, 11, 28, 2, 8.73}, "slfp64in40b");
  check(Slfp64in32{}, {32, 11, 20, 1, 6.32}, "slfp64in32b");
  check(Slfp64in24{}, {24, 11, 12, 2, 3.91}, "slfp64in24b");
  check(Slfp64in16{}, {16, 11, 4, 1, 1.51}, "slfp64in16b");
  check(Slfp32in24{}, {24, 8, 15, 2, 4.82}, "slfp32in24b");
  check(Slfp32in16{}, {16, 8, 7, 1, 2.41}, "slfp32in16b");
}

// Calls fn(format, name, index) for every format of Mukunoki & Imamura (2016) Table 1 (index: 1, 2, ...).
template <class Fn>
void for_each_format(Fn&& fn) {
  fn(Slfp64in56{}, "slfp64in56b", 1);
  fn(Slfp64in48{}, "slfp64in48b", 2);
  fn(Slfp64in40{}, "slfp64in40b", 3);
  fn(Slfp64in32{}, "slfp64in32b", 4);
  fn(Slfp64in24{}, "slfp64in24b", 5);
  fn(Slfp64in16{}, "slfp64in16b", 6);
  fn(Slfp32in24{}, "slfp32in24b", 7);
  fn(Slfp32in16{}, "slfp32in16b", 8);
}

TEST(Slfp, BothRoundingsMatchMpfrOnRandomAndEdgeValues) {
  for_each_format([](auto format, const char* name, int index) {
    expect_rounding_matches_mpfr<decltype(format)>(name, std::uint64_t(index));
  });
}

// Special values, stated: signed zeros, Inf, NaN made quiet with its sign and kept payload (a NaN
// whose payload lies only in the dropped bits must not become Inf), overflow to Inf under RN only.
TEST(Slfp, SpecialValuesArePreserved) {
  using F = Slfp64in32;
  for (const auto r : {0, 1}) {
    const auto round = [&](double v) {
      return r == 0 ? F::round<Rounding::NearestEven>(v) : F::round<Rounding::TowardZero>(v);
    };
    EXPECT_EQ(double_bits(round(0.0)), double_bits(0.0));
    EXPECT_EQ(double_bits(round(-0.0)), double_bits(-0.0));
    EXPECT_EQ(round(INFINITY), INFINITY);
    EXPECT_EQ(round(-INFINITY), -INFINITY);
    const double low_payload_nan = bits_double(0xFFF0000000000001ull);  // signalling, payload in dropped bits only
    ASSERT_TRUE(std::isnan(low_payload_nan));
    const double got = round(low_payload_nan);
    EXPECT_TRUE(std::isnan(got));
    EXPECT_TRUE(std::signbit(got));
    EXPECT_NE(double_bits(got) & (std::uint64_t{1} << 51), 0u) << "quiet";
    const double payload_nan = bits_double(0x7FF4000000000000ull);  // signalling, payload kept
    EXPECT_EQ(double_bits(round(payload_nan)), 0x7FFC000000000000ull);
  }
  // The largest finite double rounds to Inf (RN: past the largest finite slfp64in32b value by more
  // than half its ulp) and to the largest finite stored value (RZ).
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(F::round<Rounding::NearestEven>(big), INFINITY);
  EXPECT_EQ(F::round<Rounding::TowardZero>(big), F::decode(0x7FEFFFFFu));
  // A carry into the exponent: 2 - 2^-30 rounds up to 2.
  EXPECT_EQ(F::round<Rounding::NearestEven>(2.0 - 0x1p-30), 2.0);
  EXPECT_EQ(F::round<Rounding::TowardZero>(2.0 - 0x1p-30), 2.0 - 0x1p-20);
}

template <class F>
void expect_round_trips(const char* name, std::uint64_t seed) {
  using Bits = typename F::Bits;
  std::mt19937_64 rng(seed);
  constexpr Bits kMask = F::kContainerBits == 64 ? ~Bits(0) : (Bits(1) << F::kContainerBits) - 1;
  for (int i = 0; i < 100000; ++i) {
    const Bits s = static_cast<Bits>(rng()) & kMask;
    const auto v = F::decode(s);
    if (std::isnan(v)) continue;  // the NaN cases are SpecialValuesArePreserved's
    ASSERT_EQ(F::template encode<Rounding::NearestEven>(v), s) << name << " RN " << std::hex << s;
    ASSERT_EQ(F::template encode<Rounding::TowardZero>(v), s) << name << " RZ " << std::hex << s;
  }
}

// (slfp32in16b's round trips are part of its exhaustive test below.)
TEST(Slfp, RoundTripsOfStoredValuesAreExact) {
  for_each_format([](auto format, const char* name, int index) {
    if constexpr (!std::is_same_v<decltype(format), Slfp32in16>)
      expect_round_trips<decltype(format)>(name, std::uint64_t(10 + index));
  });
}

// slfp32in16b exhaustively: every one of its 2^16 stored values round-trips (NaNs stay NaN and
// quiet ones keep their bits), and between every two neighbouring finite values of one sign, the
// tie and the floats one ulp either side of it round as RN (ties to even) and RZ must.
TEST(Slfp, Slfp32in16EveryStoredValueAndEveryBoundary) {
  using F = Slfp32in16;
  int ties = 0;
  for (std::uint32_t s = 0; s < 0x10000u; ++s) {
    const float v = F::decode(s);
    if (std::isnan(v)) {
      const std::uint32_t quiet = s | (1u << 6);  // the top stored mantissa bit
      EXPECT_EQ(F::encode<Rounding::NearestEven>(v), quiet);
      EXPECT_EQ(F::encode<Rounding::TowardZero>(v), quiet);
      continue;
    }
    ASSERT_EQ(F::encode<Rounding::NearestEven>(v), s) << std::hex << s;
    ASSERT_EQ(F::encode<Rounding::TowardZero>(v), s) << std::hex << s;
    const std::uint32_t magnitude = s & 0x7FFFu, sign = s & 0x8000u;
    if (magnitude >= 0x7F80u) continue;  // Inf: no upper neighbour
    // Between s and its upper neighbour (in magnitude): s + 1, which is Inf past the largest finite.
    const std::uint32_t tie_bits = (s << 16) | 0x8000u;
    const std::uint32_t even = (magnitude & 1u) ? s + 1 : s;  // ties go to the even stored value
    EXPECT_EQ(F::encode<Rounding::NearestEven>(float_of(tie_bits)), even) << std::hex << s;
    EXPECT_EQ(F::encode<Rounding::NearestEven>(float_of(tie_bits - 1)), s) << std::hex << s;
    EXPECT_EQ(F::encode<Rounding::NearestEven>(float_of(tie_bits + 1)), s + 1) << std::hex << s;
    for (const std::uint32_t b : {tie_bits - 1, tie_bits, tie_bits + 1, (s << 16) | 0xFFFFu})
      EXPECT_EQ(F::encode<Rounding::TowardZero>(float_of(b)), s) << std::hex << s;
    (void)sign;
    ++ties;
  }
  EXPECT_EQ(ties, 2 * 0x7F80);  // every finite magnitude, both signs
}

TEST(Slfp, VectorsKeepTheDocumentedWordPlanes) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  constexpr int n = 257;
  std::vector<std::uint32_t> w32(n);
  std::vector<std::uint16_t> w16(n);
  std::vector<std::uint8_t> w8(n);
  SlfpVector<Slfp64in56> v56{w32.data(), w16.data(), w8.data()};
  SlfpVector<Slfp64in40> v40{w32.data(), nullptr, w8.data()};
  SlfpVector<Slfp32in24> v24{nullptr, w16.data(), w8.data()};
  for (int i = 0; i < n; ++i) {
    const double x = u(rng);
    v56.store<Rounding::NearestEven>(i, x);
    const std::uint64_t s = Slfp64in56::encode<Rounding::NearestEven>(x);
    EXPECT_EQ((std::uint64_t(w32[i]) << 24) | (std::uint64_t(w16[i]) << 8) | w8[i], s);
    EXPECT_EQ(v56.load(i), Slfp64in56::decode(s));
    v40.store<Rounding::TowardZero>(i, x);
    EXPECT_EQ((std::uint64_t(w32[i]) << 8) | w8[i], Slfp64in40::encode<Rounding::TowardZero>(x));
    EXPECT_EQ(v40.load(i), Slfp64in40::round<Rounding::TowardZero>(x));
    v24.store<Rounding::NearestEven>(i, float(x));
    EXPECT_EQ((std::uint32_t(w16[i]) << 8) | w8[i], Slfp32in24::encode<Rounding::NearestEven>(float(x)));
  }
}

}  // namespace
