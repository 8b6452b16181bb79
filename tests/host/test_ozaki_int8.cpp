// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme II with INT8 moduli on the host (gemm/ozaki_int8.hpp): the CRT gives integer
// products exactly, the error against MPFR falls as moduli are added and reaches FP64's level, and
// bad input is refused by name.
#include <gmp.h>
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "ozaki2_crt.hpp"
#include "ozaki_test_support.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve::testing::phi_matrix;
namespace crt = mixsolve::gemm::detail;

Problem product(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b, double* c) {
  return Problem{m,
                 n,
                 k,
                 1.0,
                 0.0,
                 Operand::dense(Format::F64, Op::N, a, m),
                 Operand::dense(Format::F64, Op::N, b, k),
                 Output{Format::F64, c, m}};
}

TEST(Ozaki2Int8, ModuliAreCoprimeInt8AndBitsFollowTheirProduct) {
  const std::vector<int>& moduli = ozaki2_moduli();
  for (std::size_t i = 0; i < moduli.size(); ++i) {
    EXPECT_LE(moduli[i], 256);
    for (std::size_t j = 0; j < i; ++j) EXPECT_EQ(std::gcd(moduli[i], moduli[j]), 1) << moduli[i] << " " << moduli[j];
  }
  // bits = K_B - 1, K_A + K_B = floor(log2 M) - 2, independent of k while k's rounding terms
  // sqrt(k) / 2 stay small beside 2^K.
  EXPECT_EQ(ozaki2_operand_bits(2, 1), 5);        // M = 65280: floor(log2 M) = 15; K = 7, 6
  EXPECT_EQ(ozaki2_operand_bits(2, 1 << 14), 4);  // (2^6 + 64)^2 = 2^14 is refused: K = 6, 5
  EXPECT_EQ(ozaki2_operand_bits(2, 60000), 1);    // (2^3 + 122.5)(2^2 + 122.5) > 2^14 >= (2^2 + 122.5)^2: K = 2, 2
  EXPECT_THROW(ozaki2_operand_bits(2, 70000), InvalidArgument);  // (2 + 132.3)^2 > 2^14
  EXPECT_EQ(ozaki2_operand_bits(12, 4096), 45);                  // floor(log2 M) = 94: K = 46, 46
  EXPECT_EQ(ozaki2_operand_bits(14, 256), 53);                   // floor(log2 M) = 110: K = 54, 54
  EXPECT_EQ(ozaki2_operand_bits(15, 256), 56);                   // floor(log2 M) = 117: K = 58, 57
  EXPECT_EQ(ozaki2_operand_bits(15, kOzaki2MaxK), 56);
  EXPECT_EQ(ozaki2_operand_bits(20, 256), 75);  // floor(log2 M) = 155: K = 77, 76
  EXPECT_THROW(ozaki2_operand_bits(21, 256), InvalidArgument);
  EXPECT_EQ(ozaki2_moduli_for_bits(53, 256), 14);
  EXPECT_EQ(ozaki2_moduli_for_bits(53, 32768), 14);
  EXPECT_EQ(ozaki2_moduli_for_bits(kOzaki2DefaultBits, 16384), 15);
  EXPECT_EQ(ozaki2_moduli_for_bits(40, 256), 11);        // 10 keep 37
  EXPECT_EQ(ozaki2_moduli_for_bits(1, kOzaki2MaxK), 3);  // 2 are too few at this k
  EXPECT_THROW(ozaki2_operand_bits(8, kOzaki2MaxK + 1), InvalidArgument);
}

// The accuracy knob: bits asks for the fewest moduli that keep that many bits of each operand at
// the call's k, which is the same computation as naming that count; both at once are refused.
TEST(Ozaki2Int8, BitsChooseTheFewestModuliThatKeepThem) {
  const std::int64_t n = 64;
  const std::vector<double> a = phi_matrix(n, n, 1.0, 31), b = phi_matrix(n, n, 1.0, 32);
  std::vector<double> by_bits(n * n), by_moduli(n * n);
  Context ctx = Context::host_only();
  const Backend& ozaki = find_backend("host-ozaki2-int8");
  for (const int bits : {20, 40, 53}) {
    const int moduli = ozaki2_moduli_for_bits(bits, n);
    ASSERT_GE(ozaki2_operand_bits(moduli, n), bits);
    ASSERT_LT(ozaki2_operand_bits(moduli - 1, n), bits);
    ozaki.run(ctx, product(n, n, n, a.data(), b.data(), by_bits.data()), {{"bits", bits}});
    ozaki.run(ctx, product(n, n, n, a.data(), b.data(), by_moduli.data()), {{"moduli", moduli}});
    EXPECT_EQ(by_bits, by_moduli) << bits << " bits, " << moduli << " moduli";
  }
  try {
    ozaki.run(ctx, product(n, n, n, a.data(), b.data(), by_bits.data()), {{"bits", 40}, {"moduli", 12}});
    ADD_FAILURE() << "bits and moduli together were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("moduli (12) and bits (40) both set; set one"), std::string::npos) << e.what();
  }
}

// round(y) mod m from two FMA reductions equals the residue computed by integer division, for
// every modulus and y up to 2^79 in magnitude, ties to even included.
TEST(Ozaki2Int8, ResiduesByFmaReductionAreExact) {
  const crt::CrtTable table = crt::crt_table(kOzaki2MaxModuli);
  // round(y) mod m by integer arithmetic: below 2^53 directly, above as f 2^e, f an integer.
  const auto reference = [](double y, std::int64_t m) {
    const double rounded = std::nearbyint(y);
    if (std::fabs(rounded) < 0x1p53) return (std::int64_t(rounded) % m + m) % m;
    int e = 0;
    const std::int64_t mantissa = std::int64_t(std::ldexp(std::frexp(rounded, &e), 53));
    std::int64_t r = (mantissa % m + m) % m;
    for (int i = 53; i < e; ++i) r = 2 * r % m;
    return r;
  };
  for (std::uint64_t x = 0; x < 20000; ++x) {
    const int e = int(random_bits(7, x) % 80);
    const double sign = random_bits(8, x) & 1 ? -1.0 : 1.0;
    double y = sign * std::ldexp(double(random_bits(9, x) >> 11), e - 53);   // 53 random bits at scale 2^e
    if (x % 7 == 0) y = sign * (std::floor(std::ldexp(1.0, e % 52)) + 0.5);  // ties
    for (int t = 0; t < table.count; ++t) {
      const std::int32_t m = table.modulus[t];
      const std::int8_t r = crt::int8_residue_of_rounded(y, m, table.reciprocal[t]);
      ASSERT_EQ((r + m) % m, reference(y, m)) << "y = " << y << ", m = " << m;
      ASSERT_LE(std::abs(int(r)), m / 2) << "y = " << y << ", m = " << m;
    }
  }
  for (std::int32_t x : {0, 1, -1, 2147483647, -2147483647 - 1, 123456789, -987654321})
    for (int t = 0; t < table.count; ++t)
      ASSERT_EQ(crt::residue_of_product(x, table.modulus[t], table.reciprocal[t]),
                ((std::int64_t(x) % table.modulus[t]) + table.modulus[t]) % table.modulus[t]);
}

// The CRT gives back any integer x with |x| <= 2^room, room = floor(log2 M) - 1 (the products'
// bound, ozaki2_scale), from its residues, for every count of moduli (x up to 2^154 for 20): the nearest double to x
// below 2^104 (the double-double sum is exact there), within one unit in the last place above. GMP integers; MPFR
// rounds the reference.
TEST(Ozaki2Int8, CrtRecoversIntegersFromTheirResidues) {
  mpz_t x;
  mpfr_t rounded;
  mpz_init(x);
  mpfr_init2(rounded, 53);
  for (int count = 2; count <= kOzaki2MaxModuli; ++count) {
    const crt::CrtTable table = crt::crt_table(count);
    const crt::Ozaki2Scale scale = crt::ozaki2_scale(count, 1);
    const int room = scale.a + scale.b + 1;  // K_A + K_B = floor(log2 M) - 2
    for (std::uint64_t s = 0; s < 1000; ++s) {
      const int bits = int(random_bits(10, s) % std::uint64_t(room + 1));
      mpz_set_ui(x, 0);
      for (int limb = 0; limb < 3; ++limb) {  // 192 random bits, cut to `bits`
        mpz_mul_2exp(x, x, 64);
        mpz_add_ui(x, x, static_cast<unsigned long>(random_bits(11 + limb, s)));
      }
      mpz_fdiv_r_2exp(x, x, static_cast<unsigned long>(bits));
      if (s % 5 == 0) {  // near the bound: 2^room - (s mod 3)
        mpz_set_ui(x, 1);
        mpz_mul_2exp(x, x, static_cast<unsigned long>(room));
        mpz_sub_ui(x, x, static_cast<unsigned long>(s % 3));
      }
      if (random_bits(14, s) & 1) mpz_neg(x, x);
      double limbs[crt::kCrtLimbs] = {};
      for (int t = 0; t < count; ++t)
        crt::crt_add(table, t, std::int32_t(mpz_fdiv_ui(x, static_cast<unsigned long>(table.modulus[t]))), limbs);
      const double got = crt::crt_value(table, limbs);
      mpfr_set_z(rounded, x, MPFR_RNDN);
      const double expected = mpfr_get_d(rounded, MPFR_RNDN);
      if (mpz_sizeinbase(x, 2) <= 104)
        ASSERT_EQ(got, expected) << count << " moduli, " << bits << " bits, s = " << s;
      else
        ASSERT_LE(std::fabs(got - expected), std::ldexp(1.0, std::ilogb(expected) - 52))
            << count << " moduli, " << bits << " bits, s = " << s;
    }
  }
  mpfr_clear(rounded);
  mpz_clear(x);
}

// Integer matrices whose vectors' grids 2^(e - K) are at most 1 are scaled by powers of two only,
// so the result is the exact integer product: every residue and the CRT are checked bit for bit.
TEST(Ozaki2Int8, IntegerProductsAreReconstructedExactly) {
  const std::int64_t m = 23, n = 19, k = 77;
  std::vector<double> a(m * k), b(k * n), c(m * n);
  for (std::size_t x = 0; x < a.size(); ++x) a[x] = double(std::int64_t(random_bits(3, x) % 2001) - 1000);
  for (std::size_t x = 0; x < b.size(); ++x) b[x] = double(std::int64_t(random_bits(4, x) % 4001) - 2000);
  Context ctx = Context::host_only();
  const Backend& ozaki = find_backend("host-ozaki2-int8");
  for (const int moduli : {6, 9, 15, 20}) {  // K_B = 22, 34, 57, 76 >= e = 15 (||b_j|| < 2^15): exact
    ozaki.run(ctx, product(m, n, k, a.data(), b.data(), c.data()), {{"moduli", moduli}});
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        std::int64_t exact = 0;
        for (std::int64_t l = 0; l < k; ++l) exact += std::int64_t(a[i + l * m]) * std::int64_t(b[l + j * k]);
        ASSERT_EQ(c[i + j * m], double(exact)) << "moduli " << moduli << " at (" << i << ", " << j << ")";
      }
  }
}

// ozaki2_scale's K_A, K_B: (2^K_A + sqrt(k)/2)(2^K_B + sqrt(k)/2) within the CRT's margin
// 2^(floor(log2 M) - 1), and no larger K_B fits (the room is used), for every count and several k.
TEST(Ozaki2Int8, ScalesUseTheCrtMarginAndNoMore) {
  const std::vector<int>& moduli = ozaki2_moduli();
  for (int count = kOzaki2MinModuli; count <= kOzaki2MaxModuli; ++count) {
    long double log2_m = 0;
    for (int t = 0; t < count; ++t) log2_m += std::log2(static_cast<long double>(moduli[t]));
    const int top = int(std::floor(log2_m));  // M is never within 2^-30 of a power of 2 (crt_table)
    for (const std::int64_t k : {std::int64_t{1}, std::int64_t{256}, std::int64_t{4096}, kOzaki2MaxK}) {
      crt::Ozaki2Scale scale;
      try {
        scale = crt::ozaki2_scale(count, k);
      } catch (const InvalidArgument&) {
        EXPECT_EQ(count, 2) << "k = " << k;  // only 2 moduli are too few, at the largest k
        continue;
      }
      const long double r = std::sqrt(static_cast<long double>(k)) / 2, margin = std::ldexp(1.0L, top - 1);
      EXPECT_GE(scale.a, scale.b);
      EXPECT_LE((std::ldexp(1.0L, scale.a) + r) * (std::ldexp(1.0L, scale.b) + r), margin)
          << count << " moduli, k = " << k;
      // One more bit of B would reach the margin (>=: the product rounds to 2^(top - 1) at large K).
      EXPECT_GE((std::ldexp(1.0L, scale.a) + r) * (std::ldexp(1.0L, scale.b + 1) + r), margin)
          << count << " moduli, k = " << k;
    }
  }
}

// Cauchy-Schwarz is attained by equal vectors of equal entries: a'_i . b'_j = ||a'_i|| ||b'_j||,
// here 3/4 of 2^(K_A + K_B) at k = 3 (||x|| = sqrt(3), bounded by 2^2). Those products, and their
// sign changes, come back exactly for every count of moduli and several k.
TEST(Ozaki2Int8, ProductsAtTheCauchySchwarzBoundAreExact) {
  Context ctx = Context::host_only();
  const Backend& ozaki = find_backend("host-ozaki2-int8");
  for (const std::int64_t k : {3, 48, 4095}) {
    // Rows of A: all ones, alternating signs; columns of B: the same.
    std::vector<double> a(2 * k), b(k * 2), c(4);
    for (std::int64_t l = 0; l < k; ++l) {
      a[0 + l * 2] = b[l] = 1.0;
      a[1 + l * 2] = b[l + k] = l % 2 ? -1.0 : 1.0;
    }
    const double exact[4] = {double(k), double(k % 2), double(k % 2), double(k)};
    for (int count = kOzaki2MinModuli; count <= kOzaki2MaxModuli; ++count) {
      ozaki.run(ctx, product(2, 2, k, a.data(), b.data(), c.data()), {{"moduli", count}});
      for (int e = 0; e < 4; ++e) ASSERT_EQ(c[e], exact[e]) << count << " moduli, k = " << k << ", entry " << e;
    }
  }
}

// The maximum relative error (Nanai & Fujimoto 2021, eq. (21)) against MPFR at n = 256 falls with the number of
// moduli, and with all 20 it is no worse than FP64 GEMM's (here the result is the exact product
// rounded once). phi = 2 needs about two more moduli than phi <= 1 for the same error: a fixed
// point per row keeps fewer bits of a row's small entries.
TEST(Ozaki2Int8, MaxRelativeErrorFallsWithTheNumberOfModuli) {
  const std::int64_t n = 256;
  Context ctx = Context::host_only();
  const Backend& ozaki = find_backend("host-ozaki2-int8");
  const Backend& dgemm = find_backend("host-fp64");
  const std::vector<int> counts = {6, 8, 10, 12, 14, 16, 18, 20};
  std::printf("host-ozaki2-int8 at n = %lld: max relative error\n  phi   ", (long long)n);
  for (int t : counts) std::printf(" %2d moduli ", t);
  std::printf("     FP64\n");
  for (const double phi : {0.1, 1.0, 2.0}) {
    const std::vector<double> a = phi_matrix(n, n, phi, 21), b = phi_matrix(n, n, phi, 22);
    const std::vector<double> reference = mixsolve::testing::mpfr_gemm(n, n, n, a.data(), n, b.data(), n);
    std::vector<double> c(n * n), error;
    for (int t : counts) {
      ozaki.run(ctx, product(n, n, n, a.data(), b.data(), c.data()), {{"moduli", t}});
      error.push_back(mixsolve::testing::max_relative_error(n, n, c.data(), n, reference));
    }
    dgemm.run(ctx, product(n, n, n, a.data(), b.data(), c.data()));
    const double fp64 = mixsolve::testing::max_relative_error(n, n, c.data(), n, reference);
    std::printf("  %-4g", phi);
    for (double e : error) std::printf("  %9.2e", e);
    std::printf("  %9.2e\n", fp64);
    for (std::size_t t = 1; t < error.size(); ++t)
      EXPECT_LE(error[t], error[t - 1]) << "phi " << phi << ": " << counts[t] << " moduli";
    if (phi <= 1) EXPECT_LT(error.front(), 1.0) << "phi " << phi;
    EXPECT_LE(error.back(), fp64) << "phi " << phi;
  }
}

// Any finite input is scaled to integers row by row and column by column; NaN, Inf and a k whose
// INT32 accumulation could overflow are refused.
TEST(Ozaki2Int8, WideExponentsZerosAndNonFiniteInputs) {
  const Backend& ozaki = find_backend("host-ozaki2-int8");
  mixsolve::testing::expect_any_finite_input_and_refusals(ozaki, {}, 1e-12, kOzaki2MaxK);
  Context ctx = Context::host_only();
  std::vector<double> x(4);
  const Problem p{2,
                  2,
                  2,
                  1.0,
                  0.0,
                  Operand::dense(Format::F64, Op::N, x.data(), 2),
                  Operand::dense(Format::F64, Op::N, x.data(), 2),
                  Output{Format::F64, x.data(), 2}};
  EXPECT_EQ(ozaki.can_implement(ctx, p, {{"moduli", 21}}).status, Support::Status::InvalidArgument);
}

}  // namespace
