// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the GEMM tests: FP64 references and error bounds derived from unit roundoff.
#pragma once

#include <Eigen/Core>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::testing {

// A column-major host matrix with a leading dimension that may exceed the rows.
template <class T>
struct HostMatrix {
  std::int64_t rows = 0, cols = 0, ld = 1;
  std::vector<T> data;
  HostMatrix(std::int64_t r, std::int64_t c, std::int64_t ld_) : rows(r), cols(c), ld(ld_ > 1 ? ld_ : 1),
      data(static_cast<std::size_t>((ld_ > 1 ? ld_ : 1) * (c > 0 ? c : 1)), T(0)) {}
  T& operator()(std::int64_t i, std::int64_t j) { return data[i + j * ld]; }
  T operator()(std::int64_t i, std::int64_t j) const { return data[i + j * ld]; }
  MatrixView<T> view() { return host_view(data.data(), rows, cols, ld); }
};

inline double op_element(const HostMatrix<float>& x, gemm::Op op, std::int64_t i, std::int64_t j) {
  return op == gemm::Op::N ? double(x(i, j)) : double(x(j, i));
}

// ref = alpha * op(A) op(B) + beta * C0 in FP64, and bound = |alpha| |op(A)| |op(B)| + |beta| |C0|
// (the scale against which rounding errors of an inner product are measured).
struct Reference {
  Eigen::MatrixXd value, magnitude;
};

inline Reference reference_gemm(gemm::Op op_a, gemm::Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                                double alpha, const HostMatrix<float>& a, const HostMatrix<float>& b, double beta,
                                const HostMatrix<float>& c0) {
  Eigen::MatrixXd A(m, k), B(k, n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) A(i, p) = op_element(a, op_a, i, p);
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j) B(p, j) = op_element(b, op_b, p, j);
  Eigen::MatrixXd C(m, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) C(i, j) = c0(i, j);
  Reference r;
  r.value = alpha * A * B;
  r.magnitude = std::fabs(alpha) * A.cwiseAbs() * B.cwiseAbs();
  if (beta != 0) {
    r.value += beta * C;
    r.magnitude += std::fabs(beta) * C.cwiseAbs();
  }
  return r;
}

// Largest componentwise error relative to the magnitude bound: max_ij |c - ref| / bound_ij.
// NaN or Inf in c counts as an infinite error.
inline double componentwise_error(const HostMatrix<float>& c, const Reference& ref) {
  double worst = 0;
  for (std::int64_t j = 0; j < ref.value.cols(); ++j)
    for (std::int64_t i = 0; i < ref.value.rows(); ++i) {
      const double v = c(i, j);
      if (!std::isfinite(v)) return INFINITY;
      const double bound = ref.magnitude(i, j);
      const double err = std::fabs(v - ref.value(i, j));
      if (bound == 0) {
        if (err != 0) return INFINITY;
        continue;
      }
      worst = std::fmax(worst, err / bound);
    }
  return worst;
}

// Error bound for an inner product of length k in a backend whose inputs are represented with
// relative error u_input (each operand) and whose partial sums are rounded with unit roundoff
// u_accumulate (2^-23 for FP32 with RZ, as tensor cores do): the classical gamma_k analysis,
// |c - c_hat| <= (2 u_input + u_input^2 + (k + 1) u_accumulate) (|A||B|) + O(u^2) terms.
inline double inner_product_bound(std::int64_t k, double u_input, double u_accumulate) {
  return 2 * u_input + u_input * u_input + double(k + 2) * u_accumulate;
}

// Checks an FP64 product c = a b (m x k times k x n, packed column-major) against a long-double
// evaluation: |c - exact| <= (k + 2) 2^-53 sum |a_ip b_pj| for every entry.
inline void expect_fp64_product_accurate(const std::vector<double>& a, const std::vector<double>& b,
                                         const std::vector<double>& c, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      long double exact = 0, magnitude = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        exact += (long double)a[i + p * m] * b[p + j * k];
        magnitude += std::fabs((long double)a[i + p * m] * b[p + j * k]);
      }
      ASSERT_LE(std::fabs((long double)c[i + j * m] - exact), (k + 2) * 0x1p-53 * magnitude) << "entry (" << i << ", " << j << ")";
    }
}

// C = A B (m x k times k x n) for FP32 inputs, against which a backend's rounding is measured: each
// product is exact in long double (24 + 24 significant bits) and the sums run in a fixed order with
// long double's rounding, so C is A B to ~k 2^-64 |A| |B| (then rounded to double) on every machine,
// whatever Eigen's cache blocking would make of an FP64 product.
inline std::vector<double> ordered_reference_product(const HostMatrix<float>& a, const HostMatrix<float>& b) {
  const std::int64_t m = a.rows, k = a.cols, n = b.cols;
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      long double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) sum += (long double)a(i, p) * (long double)b(p, j);
      c[static_cast<std::size_t>(i + j * m)] = double(sum);
    }
  return c;
}

// C = alpha A B + beta C on packed FP64 operands (no transposes; lda = m, ldb = k, ldc = m) in
// the memory the pointers are in, the product several FP64 backend tests run.
inline gemm::Problem packed_f64_problem(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, double beta,
                                        const double* a, const double* b, double* c) {
  using gemm::Format;
  gemm::Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.alpha = alpha;
  p.beta = beta;
  p.a = gemm::Operand::dense(Format::F64, gemm::Op::N, a, m);
  p.b = gemm::Operand::dense(Format::F64, gemm::Op::N, b, k);
  p.c = gemm::Output{Format::F64, c, m};
  return p;
}

}  // namespace mixsolve::testing
