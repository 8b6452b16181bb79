// SPDX-License-Identifier: BSD-3-Clause
// A multiple-precision GEMM reference (MPFR) for FP64 results: what Nanai & Fujimoto's (2021) maximum relative
// error (eq. (21)) is measured against. Every entry is accumulated with mpfr_fma at kPrecisionBits
// from the exact FP64 inputs, then rounded to the nearest double.
#pragma once

#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace mixsolve::testing {

// 256 bits: a product of two doubles is exact in 106, and a sum of k <= 2^20 such products whose
// exponents span up to 2^140 loses nothing the measures below can see (the project asks for 256+ bits).
constexpr mpfr_prec_t kPrecisionBits = 256;

// C = A B for column-major A (m x k, leading dimension lda) and B (k x n, ldb): m x n, column-major.
inline std::vector<double> mpfr_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, std::int64_t lda,
                                     const double* b, std::int64_t ldb) {
  std::vector<double> c(m * n);
  mpfr_t sum, x, y;
  mpfr_inits2(kPrecisionBits, sum, x, y, static_cast<mpfr_ptr>(nullptr));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      mpfr_set_zero(sum, 1);
      for (std::int64_t l = 0; l < k; ++l) {
        mpfr_set_d(x, a[i + l * lda], MPFR_RNDN);  // exact: a double has 53 bits
        mpfr_set_d(y, b[l + j * ldb], MPFR_RNDN);
        mpfr_fma(sum, x, y, sum, MPFR_RNDN);
      }
      c[i + j * m] = mpfr_get_d(sum, MPFR_RNDN);
    }
  mpfr_clears(sum, x, y, static_cast<mpfr_ptr>(nullptr));
  return c;
}

// Nanai & Fujimoto (2021) eq. (21): max_ij |c*_ij - c_ij| / |c*_ij| over the entries with c*_ij != 0 (c: m x n,
// leading dimension ldc; reference: m x n, packed).
inline double max_relative_error(std::int64_t m, std::int64_t n, const double* c, std::int64_t ldc,
                                 const std::vector<double>& reference) {
  double worst = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      const double ref = reference[i + j * m];
      if (ref != 0) worst = std::fmax(worst, std::fabs(c[i + j * ldc] - ref) / std::fabs(ref));
    }
  return worst;
}

}  // namespace mixsolve::testing
