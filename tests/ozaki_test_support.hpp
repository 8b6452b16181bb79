// SPDX-License-Identifier: BSD-3-Clause
// What the tests of the emulated DGEMMs (the Ozaki backends) share: Nanai & Fujimoto's (2021) phi matrices, and
// the check that a backend handles any finite input and refuses NaN, Inf and a too deep k.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mpfr_reference.hpp"

namespace mixsolve::testing {

// A rows x cols phi(phi) matrix (Nanai & Fujimoto 2021, §5.1), column-major.
inline std::vector<double> phi_matrix(std::int64_t rows, std::int64_t cols, double phi, std::uint64_t seed) {
  std::vector<double> x(rows * cols);
  fill_random(host_view(x.data(), rows, cols, rows), RandomSpec::phi_spread(phi, seed));
  return x;
}

// Rows far above and below FP32's range, a zero row and column, and a subnormal entry: the
// product against MPFR within `tolerance` (maximum relative error) and exact zeros; a NaN named
// by its place; k = max_k + 1 refused by can_implement. `parameters` go to every call.
inline void expect_any_finite_input_and_refusals(const gemm::Backend& backend, const gemm::Parameters& parameters,
                                                 double tolerance, std::int64_t max_k) {
  using namespace gemm;
  const std::int64_t m = 20, n = 18, k = 64;
  Context ctx = Context::host_only();
  std::vector<double> a = phi_matrix(m, k, 0.5, 5), b = phi_matrix(k, n, 0.5, 6);
  for (std::int64_t l = 0; l < k; ++l) {
    a[0 + l * m] *= 0x1p+600;  // a row beyond FP32's range
    a[1 + l * m] *= 0x1p-700;  // and one below it
    a[2 + l * m] = 0;          // a zero row
    b[l + 0 * k] *= 0x1p-300;
    b[l + 1 * k] = 0;          // a zero column
  }
  a[3 + 5 * m] = 0x1p-1070;  // a subnormal entry
  const std::vector<double> reference = mpfr_gemm(m, n, k, a.data(), m, b.data(), k);
  std::vector<double> c(m * n, 7.0);
  const Problem problem{m, n, k, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data(), m),
                        Operand::dense(Format::F64, Op::N, b.data(), k), Output{Format::F64, c.data(), m}};
  backend.run(ctx, problem, parameters);
  EXPECT_LT(max_relative_error(m, n, c.data(), m, reference), tolerance) << backend.name();
  for (std::int64_t j = 0; j < n; ++j) EXPECT_EQ(c[2 + j * m], 0.0) << backend.name() << ": the zero row";
  for (std::int64_t i = 0; i < m; ++i) EXPECT_EQ(c[i + 1 * m], 0.0) << backend.name() << ": the zero column";
  a[4 + 9 * m] = std::numeric_limits<double>::quiet_NaN();
  try {
    backend.run(ctx, problem, parameters);
    ADD_FAILURE() << backend.name() << " accepted NaN";
  } catch (const RangeError& e) {
    EXPECT_NE(std::string(e.what()).find("element 9 of row 4"), std::string::npos) << e.what();
  }
  std::vector<double> tiny(1);
  const Problem too_deep{1, 1, max_k + 1, 1.0, 0.0, Operand::dense(Format::F64, Op::N, tiny.data(), 1),
                         Operand::dense(Format::F64, Op::N, tiny.data(), max_k + 1), Output{Format::F64, tiny.data(), 1}};
  const Support s = backend.can_implement(ctx, too_deep, parameters);
  EXPECT_EQ(s.status, Support::Status::OverSizeLimit) << s.reason;
  EXPECT_NE(s.reason.find("k (" + std::to_string(max_k + 1) + ")"), std::string::npos) << s.reason;
}

}  // namespace mixsolve::testing
