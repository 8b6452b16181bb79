// SPDX-License-Identifier: BSD-3-Clause
// References for the host tests whose rounding does not depend on the machine that runs them.
//
// Eigen's blocked products, QR and LU size their blocks from the CPU's caches, so their rounding
// (and an FP64 comparator's error that rides on it) changes from machine to machine. The kernels
// here are unblocked and written as the reference LAPACK / BLAS write them (dgeqr2 + dlarfg +
// dlarf, dorm2r, dorg2r, dgetf2, dgetrs, dtrsv, dgemv, dnrm2's scaled sum of squares), with a
// fixed order of operations and FP contraction off (below), so every result depends only on IEEE
// arithmetic in T. Two kinds of use:
//   - FP64 comparators: "the FP64 solver's error on the same matrix" (householder_qr, lu_factor,
//     cholesky_factor and their solves in double);
//   - true solutions of a stored problem (FP64 A and b): reference_least_squares and
//     reference_solve refine in long double with residuals that are exact up to 2^-100 or so
//     (compensated sums of error-free products), so their answers are the exact solutions to about
//     2^-60 relative, whatever kappa^2 u_longdouble would be. Each reports whether it converged.
//
// References: Ogita, Rump and Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26(6),
// 2005 (TwoSum, Dekker's TwoProduct, Sum2); Bjorck, "Iterative refinement of linear least squares
// solutions I", BIT 7, 1967 (refinement on the augmented system with the QR factors); Higham,
// "Accuracy and Stability of Numerical Algorithms", 2nd ed., 2002 (§12 refinement, §20.5).
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mixsolve/core/random.hpp"

// FP contraction (a * b + c fused into one rounding) would change the rounding with compiler
// flags (-march with FMA under GCC's default -ffp-contract=fast): off for every function below.
// Checked: GCC -O3 -march=native -ffp-contract=fast and clang -O3 -march=native (its default
// -ffp-contract=on) give bit for bit the results of a plain -O2 build. (clang's
// -ffp-contract=fast disregards pragmas by design; -ffast-math's reassociation would break the
// error-free transformations below, and is refused.)
#if defined(__FAST_MATH__)
#error "tests/reference_solvers.hpp needs IEEE arithmetic: compile without -ffast-math"
#endif
#if defined(__clang__)
#define MIXSOLVE_NO_FP_CONTRACT _Pragma("clang fp contract(off)")
#else
#define MIXSOLVE_NO_FP_CONTRACT
#if defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#endif

namespace mixsolve::testing {

template <class T>
using RefMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
using MatrixLd = RefMatrix<long double>;

// The references below count on long double carrying more bits than double (x87: 64).
static_assert(std::numeric_limits<long double>::digits >= 64, "long double must be wider than double");

// ---- products and norms in a fixed order ----

// C = A B: c_ij = sum_p a_ip b_pj, the terms added in increasing p (j, p, i loops as dgemm's).
template <class T>
RefMatrix<T> ordered_product(const RefMatrix<T>& a, const RefMatrix<T>& b) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t m = a.rows(), k = a.cols(), n = b.cols();
  RefMatrix<T> c = RefMatrix<T>::Zero(m, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = 0; p < k; ++p) {
      const T t = b(p, j);
      const T* ap = a.data() + p * m;
      T* cj = c.data() + j * m;
      for (std::int64_t i = 0; i < m; ++i) cj[i] += ap[i] * t;
    }
  return c;
}

// C = A^T B: c_ij = sum_p a_pi b_pj, in increasing p (dgemm's 'T', 'N' loops).
template <class T>
RefMatrix<T> ordered_product_tn(const RefMatrix<T>& a, const RefMatrix<T>& b) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t k = a.rows(), m = a.cols(), n = b.cols();
  RefMatrix<T> c(m, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      const T* ai = a.data() + i * k;
      const T* bj = b.data() + j * k;
      T s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += ai[p] * bj[p];
      c(i, j) = s;
    }
  return c;
}

// ||x||_2 as dnrm2 (LAPACK 3.9): a scaled sum of squares, no overflow or harmful underflow.
template <class T>
T ordered_norm2(const T* x, std::int64_t n) {
  MIXSOLVE_NO_FP_CONTRACT
  T scale = 0, ssq = 1;
  for (std::int64_t i = 0; i < n; ++i) {
    if (x[i] == 0) continue;
    const T absxi = std::fabs(x[i]);
    if (scale < absxi) {
      const T q = scale / absxi;
      ssq = 1 + ssq * (q * q);
      scale = absxi;
    } else {
      const T q = absxi / scale;
      ssq += q * q;
    }
  }
  return scale * std::sqrt(ssq);
}

// ---- Householder QR (dgeqr2) and what is done with it ----

// A = Q R with Q = H_0 H_1 ... H_(n-1), H_k = I - tau_k v_k v_k^T (v_k(k) = 1 implicit, below
// the diagonal of qr's column k); R in qr's upper triangle (m >= n).
template <class T>
struct HouseholderFactors {
  RefMatrix<T> qr;
  std::vector<T> tau;
};

// y(0 .. len) := H y(0 .. len) for H = I - tau v v^T, v = (1, v_tail): dlarf on one column
// (w = v^T y as dgemv, y -= tau w v as dger).
template <class T>
void apply_reflector(const T* v_tail, T tau, std::int64_t len, T* y) {
  MIXSOLVE_NO_FP_CONTRACT
  if (tau == 0) return;
  T w = y[0];
  for (std::int64_t i = 1; i < len; ++i) w += v_tail[i - 1] * y[i];
  const T t = -tau * w;
  y[0] += t;
  for (std::int64_t i = 1; i < len; ++i) y[i] += v_tail[i - 1] * t;
}

template <class T>
HouseholderFactors<T> householder_qr(const RefMatrix<T>& a) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t m = a.rows(), n = a.cols();
  HouseholderFactors<T> f{a, std::vector<T>(std::size_t(n), T(0))};
  T* q = f.qr.data();
  for (std::int64_t k = 0; k < n; ++k) {
    T* col = q + k * m;
    // dlarfg: beta = -sign(alpha) ||(alpha, x)||, tau = (beta - alpha) / beta, v = x / (alpha - beta).
    const T alpha = col[k];
    const T xnorm = ordered_norm2(col + k + 1, m - k - 1);
    T tau = 0;
    if (xnorm != 0) {
      const T big = std::max(std::fabs(alpha), xnorm), small = std::min(std::fabs(alpha), xnorm);
      const T ratio = small / big;
      const T norm = big * std::sqrt(1 + ratio * ratio);  // dlapy2
      const T beta = alpha >= 0 ? -norm : norm;
      tau = (beta - alpha) / beta;
      const T scale = 1 / (alpha - beta);
      for (std::int64_t i = k + 1; i < m; ++i) col[i] *= scale;
      col[k] = beta;
    }
    f.tau[std::size_t(k)] = tau;
    for (std::int64_t j = k + 1; j < n; ++j) apply_reflector(col + k + 1, tau, m - k, q + j * m + k);
  }
  return f;
}

// B := Q^T B (dorm2r, 'L', 'T').
template <class T>
void apply_qt(const HouseholderFactors<T>& f, RefMatrix<T>& b) {
  const std::int64_t m = f.qr.rows(), n = f.qr.cols();
  for (std::int64_t j = 0; j < b.cols(); ++j)
    for (std::int64_t k = 0; k < n; ++k)
      apply_reflector(f.qr.data() + k * m + k + 1, f.tau[std::size_t(k)], m - k, b.data() + j * m + k);
}

// B := Q B (dorm2r, 'L', 'N').
template <class T>
void apply_q(const HouseholderFactors<T>& f, RefMatrix<T>& b) {
  const std::int64_t m = f.qr.rows(), n = f.qr.cols();
  for (std::int64_t j = 0; j < b.cols(); ++j)
    for (std::int64_t k = n - 1; k >= 0; --k)
      apply_reflector(f.qr.data() + k * m + k + 1, f.tau[std::size_t(k)], m - k, b.data() + j * m + k);
}

// The first `cols` columns of Q (dorg2r's result for cols = n).
template <class T>
RefMatrix<T> thin_q(const HouseholderFactors<T>& f, std::int64_t cols) {
  RefMatrix<T> q = RefMatrix<T>::Identity(f.qr.rows(), cols);
  apply_q(f, q);
  return q;
}

// X(0 .. n, :) := R^-1 X(0 .. n, :) (dtrsv 'U', 'N', column oriented); rows below n untouched.
template <class T>
void solve_upper(const RefMatrix<T>& r, RefMatrix<T>& x) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = r.cols(), ldr = r.rows(), ldx = x.rows();
  for (std::int64_t c = 0; c < x.cols(); ++c) {
    T* xc = x.data() + c * ldx;
    for (std::int64_t j = n - 1; j >= 0; --j) {
      if (xc[j] == 0) continue;
      xc[j] /= r.data()[j + j * ldr];
      const T t = xc[j];
      for (std::int64_t i = j - 1; i >= 0; --i) xc[i] -= t * r.data()[i + j * ldr];
    }
  }
}

// X := R^-T X for the n x n upper triangle of r (dtrsv 'U', 'T', dot-product form).
template <class T>
void solve_upper_transpose(const RefMatrix<T>& r, RefMatrix<T>& x) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = r.cols(), ldr = r.rows(), ldx = x.rows();
  for (std::int64_t c = 0; c < x.cols(); ++c) {
    T* xc = x.data() + c * ldx;
    for (std::int64_t j = 0; j < n; ++j) {
      T t = xc[j];
      for (std::int64_t i = 0; i < j; ++i) t -= r.data()[i + j * ldr] * xc[i];
      xc[j] = t / r.data()[j + j * ldr];
    }
  }
}

// min ||B - A X|| by the QR factors: X = R^-1 (Q^T B)(0 .. n).
template <class T>
RefMatrix<T> qr_least_squares(const HouseholderFactors<T>& f, const RefMatrix<T>& b) {
  RefMatrix<T> c = b;
  apply_qt(f, c);
  solve_upper(f.qr, c);
  return c.topRows(f.qr.cols());
}

// The FP64 comparator of the least-squares tests: dgeqr2 + dorm2r + dtrsv in T.
template <class T>
RefMatrix<T> householder_least_squares(const RefMatrix<T>& a, const RefMatrix<T>& b) {
  return qr_least_squares(householder_qr(a), b);
}

// ---- LU with partial pivoting (dgetf2, the multipliers divided by the pivot) ----

template <class T>
struct LuFactors {
  RefMatrix<T> lu;                   // L (unit, strictly below the diagonal) and U
  std::vector<std::int64_t> pivots;  // row k was swapped with row pivots[k]
  std::int64_t zero_pivot = -1;      // first column with an exactly zero pivot, -1 if none
};

template <class T>
LuFactors<T> lu_factor(const RefMatrix<T>& a) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = a.rows();
  LuFactors<T> f{a, std::vector<std::int64_t>(std::size_t(n)), -1};
  T* lu = f.lu.data();
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t p = j;  // idamax: the first largest |a_ij|
    for (std::int64_t i = j + 1; i < n; ++i)
      if (std::fabs(lu[i + j * n]) > std::fabs(lu[p + j * n])) p = i;
    f.pivots[std::size_t(j)] = p;
    if (p != j)
      for (std::int64_t c = 0; c < n; ++c) std::swap(lu[j + c * n], lu[p + c * n]);
    const T pivot = lu[j + j * n];
    if (pivot == 0) {
      if (f.zero_pivot < 0) f.zero_pivot = j;
      continue;
    }
    for (std::int64_t i = j + 1; i < n; ++i) lu[i + j * n] /= pivot;
    for (std::int64_t c = j + 1; c < n; ++c) {
      const T t = -lu[j + c * n];
      if (t == 0) continue;
      for (std::int64_t i = j + 1; i < n; ++i) lu[i + c * n] += lu[i + j * n] * t;
    }
  }
  return f;
}

// B := A^-1 B (dgetrs 'N': the row swaps, then dtrsv with L and with U).
template <class T>
void lu_solve_in_place(const LuFactors<T>& f, RefMatrix<T>& b) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = f.lu.rows();
  const T* lu = f.lu.data();
  for (std::int64_t c = 0; c < b.cols(); ++c) {
    T* x = b.data() + c * n;
    for (std::int64_t k = 0; k < n; ++k) std::swap(x[k], x[f.pivots[std::size_t(k)]]);
    for (std::int64_t j = 0; j < n; ++j) {
      const T t = x[j];
      if (t == 0) continue;
      for (std::int64_t i = j + 1; i < n; ++i) x[i] -= t * lu[i + j * n];
    }
    for (std::int64_t j = n - 1; j >= 0; --j) {
      if (x[j] == 0) continue;
      x[j] /= lu[j + j * n];
      const T t = x[j];
      for (std::int64_t i = 0; i < j; ++i) x[i] -= t * lu[i + j * n];
    }
  }
}

// B := A^-T B (dgetrs 'T': dtrsv with U^T, then L^T, then the row swaps in reverse).
template <class T>
void lu_solve_transpose_in_place(const LuFactors<T>& f, RefMatrix<T>& b) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = f.lu.rows();
  const T* lu = f.lu.data();
  for (std::int64_t c = 0; c < b.cols(); ++c) {
    T* x = b.data() + c * n;
    for (std::int64_t j = 0; j < n; ++j) {
      T t = x[j];
      for (std::int64_t i = 0; i < j; ++i) t -= lu[i + j * n] * x[i];
      x[j] = t / lu[j + j * n];
    }
    for (std::int64_t j = n - 1; j >= 0; --j) {
      T t = x[j];
      for (std::int64_t i = j + 1; i < n; ++i) t -= lu[i + j * n] * x[i];
      x[j] = t;
    }
    for (std::int64_t k = n - 1; k >= 0; --k) std::swap(x[k], x[f.pivots[std::size_t(k)]]);
  }
}

template <class T>
RefMatrix<T> lu_solve(const LuFactors<T>& f, const RefMatrix<T>& b) {
  RefMatrix<T> x = b;
  lu_solve_in_place(f, x);
  return x;
}

// The FP64 comparator of the linear-system tests: dgetf2 + dgetrs in T.
template <class T>
RefMatrix<T> lu_solve(const RefMatrix<T>& a, const RefMatrix<T>& b) {
  return lu_solve(lu_factor(a), b);
}

// ---- Cholesky (dpotf2, lower) and its solve (dpotrs) ----

// A = L L^T of the lower triangle of the symmetric positive definite a (the upper is not read);
// L in the lower triangle of the result. not_positive: the first column whose pivot is not
// positive (the factorization stops there), -1 if none.
template <class T>
struct CholeskyFactors {
  RefMatrix<T> l;
  std::int64_t not_positive = -1;
};

template <class T>
CholeskyFactors<T> cholesky_factor(const RefMatrix<T>& a) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = a.rows();
  CholeskyFactors<T> f{a, -1};
  T* l = f.l.data();
  for (std::int64_t j = 0; j < n; ++j) {
    T d = l[j + j * n];  // a_jj - sum_k l_jk^2, in increasing k (ddot)
    for (std::int64_t k = 0; k < j; ++k) d -= l[j + k * n] * l[j + k * n];
    if (!(d > 0)) {
      f.not_positive = j;
      return f;
    }
    const T ljj = std::sqrt(d);
    l[j + j * n] = ljj;
    for (std::int64_t i = j + 1; i < n; ++i) {  // (a_ij - sum_k l_ik l_jk) / l_jj (dgemv, then dscal)
      T t = l[i + j * n];
      for (std::int64_t k = 0; k < j; ++k) t -= l[i + k * n] * l[j + k * n];
      l[i + j * n] = t / ljj;
    }
  }
  return f;
}

// X = A^-1 B with the Cholesky factors (dpotrs: L y = b, then L^T x = y).
template <class T>
RefMatrix<T> cholesky_solve(const CholeskyFactors<T>& f, const RefMatrix<T>& b) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t n = f.l.rows();
  const T* l = f.l.data();
  RefMatrix<T> out = b;
  for (std::int64_t c = 0; c < out.cols(); ++c) {
    T* x = out.data() + c * n;
    for (std::int64_t j = 0; j < n; ++j) {
      x[j] /= l[j + j * n];
      const T t = x[j];
      for (std::int64_t i = j + 1; i < n; ++i) x[i] -= t * l[i + j * n];
    }
    for (std::int64_t j = n - 1; j >= 0; --j) {
      T t = x[j];
      for (std::int64_t i = j + 1; i < n; ++i) t -= l[i + j * n] * x[i];
      x[j] = t / l[j + j * n];
    }
  }
  return out;
}

// A^-1 by the LU solves of the identity's columns.
template <class T>
RefMatrix<T> lu_inverse(const RefMatrix<T>& a) {
  return lu_solve(lu_factor(a), RefMatrix<T>(RefMatrix<T>::Identity(a.rows(), a.cols())));
}

// ---- residuals exact to far below long double's rounding ----

// s + e = a + b exactly (TwoSum, no branch).
inline void two_sum(long double a, long double b, long double& s, long double& e) {
  MIXSOLVE_NO_FP_CONTRACT
  s = a + b;
  const long double z = s - a;
  e = (a - (s - z)) + (b - z);
}

// a = hi + lo with hi holding the upper half of long double's significand (Veltkamp).
inline void split(long double a, long double& hi, long double& lo) {
  MIXSOLVE_NO_FP_CONTRACT
  constexpr int half = (std::numeric_limits<long double>::digits + 1) / 2;
  const long double factor = std::ldexp(1.0L, half) + 1;
  const long double c = factor * a;
  hi = c - (c - a);
  lo = a - hi;
}

// A long double number with its Veltkamp halves, for products that are exact in two parts.
struct SplitValue {
  long double value, hi, lo;
  explicit SplitValue(long double v = 0) : value(v) { split(v, hi, lo); }
};

// p + e = a b exactly (Dekker's TwoProduct).
inline void two_product(const SplitValue& a, const SplitValue& b, long double& p, long double& e) {
  MIXSOLVE_NO_FP_CONTRACT
  p = a.value * b.value;
  e = ((a.hi * b.hi - p) + a.hi * b.lo + a.lo * b.hi) + a.lo * b.lo;
}

// Sum2 (Ogita, Rump, Oishi): as accurate as a sum in twice long double's precision, rounded once.
class CompensatedSum {
 public:
  void add(long double v) {
    MIXSOLVE_NO_FP_CONTRACT
    long double e;
    two_sum(s_, v, s_, e);
    c_ += e;
  }
  void add_product(const SplitValue& a, const SplitValue& b) {
    long double p, e;
    two_product(a, b, p, e);
    add(p);
    add(e);
  }
  long double value() const { return s_ + c_; }

 private:
  long double s_ = 0, c_ = 0;
};

inline std::vector<SplitValue> split_values(const long double* v, std::int64_t n) {
  std::vector<SplitValue> out;
  out.reserve(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i) out.emplace_back(v[i]);
  return out;
}

// A's entries split once, for the many exact products of a refinement.
struct SplitMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<SplitValue> entries;
  explicit SplitMatrix(const Eigen::MatrixXd& a) : rows(a.rows()), cols(a.cols()) {
    entries.reserve(std::size_t(rows * cols));
    for (std::int64_t k = 0; k < rows * cols; ++k) entries.emplace_back(a.data()[k]);
  }
  const SplitValue& operator()(std::int64_t i, std::int64_t j) const { return entries[std::size_t(i + j * rows)]; }
};

// b - r - A x (r may be null: b - A x), each entry to a relative accuracy of ~2^-100 of
// |b| + |r| + |A| |x|, rounded to long double.
inline std::vector<long double> accurate_residual(const SplitMatrix& a, const double* b, const long double* r,
                                                  const long double* x) {
  const std::vector<SplitValue> xs = split_values(x, a.cols);
  std::vector<CompensatedSum> sums(std::size_t(a.rows));
  for (std::int64_t i = 0; i < a.rows; ++i) {
    sums[std::size_t(i)].add(b[i]);
    if (r) sums[std::size_t(i)].add(-r[i]);
  }
  for (std::int64_t j = 0; j < a.cols; ++j) {
    const SplitValue minus_x(-x[j]);
    for (std::int64_t i = 0; i < a.rows; ++i) sums[std::size_t(i)].add_product(a(i, j), minus_x);
  }
  std::vector<long double> out(std::size_t(a.rows));
  for (std::int64_t i = 0; i < a.rows; ++i) out[std::size_t(i)] = sums[std::size_t(i)].value();
  return out;
}

// A^T r, accurate as above.
inline std::vector<long double> accurate_transpose_product(const SplitMatrix& a, const long double* r) {
  const std::vector<SplitValue> rs = split_values(r, a.rows);
  std::vector<long double> out(std::size_t(a.cols));
  for (std::int64_t j = 0; j < a.cols; ++j) {
    CompensatedSum s;
    for (std::int64_t i = 0; i < a.rows; ++i) s.add_product(a(i, j), rs[std::size_t(i)]);
    out[std::size_t(j)] = s.value();
  }
  return out;
}

// ||b - A x||_inf for double x, accurate as above (the residual itself, not its FP64 rounding).
inline double accurate_residual_norm_inf(const Eigen::MatrixXd& a, const double* b, const double* x) {
  const SplitMatrix s(a);
  std::vector<long double> xl(x, x + a.cols());
  const std::vector<long double> r = accurate_residual(s, b, nullptr, xl.data());
  long double worst = 0;
  for (long double v : r) worst = std::max(worst, std::fabs(v));
  return double(worst);
}

// ---- true solutions of stored FP64 problems ----

inline long double max_abs(const long double* v, std::int64_t n) {
  long double m = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

struct ReferenceSolution {
  MatrixLd x;             // n x k
  MatrixLd r;             // least squares: the residual B - A X (m x k); empty otherwise
  bool converged = true;  // every column's last correction below 2^-62 of its x
  int steps = 0;          // refinement steps, largest over the columns
};

// The solution of min ||b - A x||_2 for the stored FP64 A (m x n, full rank, m >= n) and B
// (m x k): long double QR, then refinement on the augmented system [I A; A^T 0] [r; x] = [b; 0]
// (Bjorck 1967), each step's residuals (b - r - A x, -A^T r) exact to ~2^-100 and its
// corrections solved with the long double factors. The stored r and x carry long double's
// rounding only; the exact residuals see that rounding and the next correction removes it, so
// no kappa^2 u_longdouble term stays in x: the fixed point is the exact solution to ~2^-62.
// A step contracts the error by about c kappa u_longdouble (kappa = 1e12: ~1e-7).
inline ReferenceSolution reference_least_squares(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                                 int max_steps = 12) {
  const std::int64_t m = a.rows(), n = a.cols(), k = b.cols();
  const HouseholderFactors<long double> f = householder_qr(MatrixLd(a.cast<long double>()));
  const SplitMatrix as(a);
  ReferenceSolution out;
  out.x = qr_least_squares(f, MatrixLd(b.cast<long double>()));
  out.r.resize(m, k);
  for (std::int64_t c = 0; c < k; ++c) {
    std::vector<long double> x(out.x.data() + c * n, out.x.data() + (c + 1) * n);
    std::vector<long double> r = accurate_residual(as, b.data() + c * m, nullptr, x.data());
    bool done = false;
    for (int step = 1; step <= max_steps && !done; ++step) {
      const std::vector<long double> fres = accurate_residual(as, b.data() + c * m, r.data(), x.data());
      std::vector<long double> g = accurate_transpose_product(as, r.data());
      // [I A; A^T 0] [dr; dx] = [f; -A^T r]: Q^T f = (d1, d2), R^T e1 = g, dx = R^-1 (d1 - e1),
      // dr = Q (e1, d2).
      MatrixLd d = Eigen::Map<const MatrixLd>(fres.data(), m, 1);
      apply_qt(f, d);
      MatrixLd e1(n, 1);
      for (std::int64_t j = 0; j < n; ++j) e1(j, 0) = -g[std::size_t(j)];
      solve_upper_transpose(f.qr, e1);
      MatrixLd dx = d.topRows(n) - e1;
      solve_upper(f.qr, dx);
      MatrixLd dr = d;
      dr.topRows(n) = e1;
      apply_q(f, dr);
      for (std::int64_t j = 0; j < n; ++j) x[std::size_t(j)] += dx(j, 0);
      for (std::int64_t i = 0; i < m; ++i) r[std::size_t(i)] += dr(i, 0);
      out.steps = std::max(out.steps, step);
      done = max_abs(dx.data(), n) <= std::ldexp(max_abs(x.data(), n), -62);
    }
    out.converged = out.converged && done;
    for (std::int64_t j = 0; j < n; ++j) out.x(j, c) = x[std::size_t(j)];
    for (std::int64_t i = 0; i < m; ++i) out.r(i, c) = r[std::size_t(i)];
  }
  return out;
}

// The solution of A X = B for the stored FP64 A (n x n, nonsingular) and B: long double LU, then
// refinement with residuals exact to ~2^-100 (Higham §12.1 with the residual in extra
// precision): a step contracts by about cond(A) u_longdouble, and the fixed point is the exact
// solution to ~2^-62 relative wherever cond(A) u_longdouble is well below 1.
inline ReferenceSolution reference_solve(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, int max_steps = 12) {
  const std::int64_t n = a.rows(), k = b.cols();
  const LuFactors<long double> f = lu_factor(MatrixLd(a.cast<long double>()));
  const SplitMatrix as(a);
  ReferenceSolution out;
  out.x = lu_solve(f, MatrixLd(b.cast<long double>()));
  out.converged = f.zero_pivot < 0;
  for (std::int64_t c = 0; c < k && out.converged; ++c) {
    std::vector<long double> x(out.x.data() + c * n, out.x.data() + (c + 1) * n);
    bool done = false;
    for (int step = 1; step <= max_steps && !done; ++step) {
      const std::vector<long double> r = accurate_residual(as, b.data() + c * n, nullptr, x.data());
      MatrixLd d = Eigen::Map<const MatrixLd>(r.data(), n, 1);
      lu_solve_in_place(f, d);
      for (std::int64_t j = 0; j < n; ++j) x[std::size_t(j)] += d(j, 0);
      out.steps = std::max(out.steps, step);
      done = max_abs(d.data(), n) <= std::ldexp(max_abs(x.data(), n), -62);
    }
    out.converged = out.converged && done;
    for (std::int64_t j = 0; j < n; ++j) out.x(j, c) = x[std::size_t(j)];
  }
  return out;
}

// A^-1 of the stored FP64 A, each column refined as reference_solve refines.
inline ReferenceSolution reference_inverse(const Eigen::MatrixXd& a) {
  return reference_solve(a, Eigen::MatrixXd::Identity(a.rows(), a.cols()));
}

// ---- the FP64 QR's error on a least-squares problem ----

// ||x - ref||_2 / ||ref||_2 in long double.
inline double relative_error(const double* x, const long double* ref, std::int64_t n) {
  long double d = 0, t = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const long double e = x[i] - ref[i];
    d += e * e;
    t += ref[i] * ref[i];
  }
  return double(std::sqrt(d / t));
}

// Row order `which` of an m-row problem: 0 the identity, others a Fisher-Yates shuffle drawn with
// the project's counter-based generator (the same on every machine).
inline std::vector<std::int64_t> row_order(std::int64_t m, int which) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) order[std::size_t(i)] = i;
  if (which > 0)
    for (std::int64_t i = m - 1; i > 0; --i)
      std::swap(
          order[std::size_t(i)],
          order[std::size_t(random_bits(0x0dd5ull + std::uint64_t(which), std::uint64_t(i)) % std::uint64_t(i + 1))]);
  return order;
}

// The FP64 comparator on the rows of (A, B) taken in `order`: the same problem, the same solution
// in exact arithmetic, and another placement of the rounding errors.
inline Eigen::MatrixXd householder_least_squares_in_row_order(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                                              const std::vector<std::int64_t>& order) {
  Eigen::MatrixXd pa(a.rows(), a.cols()), pb(b.rows(), b.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    pa.row(i) = a.row(order[std::size_t(i)]);
    pb.row(i) = b.row(order[std::size_t(i)]);
  }
  return householder_least_squares(pa, pb);
}

// The FP64 Householder QR's errors on min ||B - A X|| against the reference, max over the columns:
// x as ||x - x_ref|| / ||x_ref||, the FP64 residual b - A x (ordered products) as
// ||r - r_ref|| / ||b||. Each is the median over `orders` row orders of the problem. Where one
// singular value lies far below the others, the QR's error is almost all along its singular
// vector: one scalar that the rounding errors set, whose size is a draw with a long lower tail.
// Over 9 row orders of the same 300 x 70 problem with one small singular value the errors
// spanned 20-230x (geometric spectra: 2-7x), and Eigen's blocked QR moved over such a range with
// its cache blocking. The median is what the FP64 QR attains on the problem; a single order is
// where one placement of its roundings happened to fall.
struct Fp64QrErrors {
  double x = 0, r = 0;
};
// The same for any FP64 comparator: solve(pa, pb) gives its X on the rows of (A, B) taken in an
// order; the errors against the reference solution ref_x and residual ref_r, the median over the
// orders, max over the columns.
template <class Solve>
Fp64QrErrors comparator_errors(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const MatrixLd& ref_x,
                               const MatrixLd& ref_r, Solve solve, int orders) {
  const std::int64_t m = a.rows(), n = a.cols(), k = b.cols();
  std::vector<std::vector<double>> x_errors(static_cast<std::size_t>(k)), r_errors(static_cast<std::size_t>(k));
  for (int q = 0; q < orders; ++q) {
    const std::vector<std::int64_t> order = row_order(m, q);
    Eigen::MatrixXd pa(m, n), pb(m, k);
    for (std::int64_t i = 0; i < m; ++i) {
      pa.row(i) = a.row(order[std::size_t(i)]);
      pb.row(i) = b.row(order[std::size_t(i)]);
    }
    const Eigen::MatrixXd x = solve(pa, pb);
    const Eigen::MatrixXd r = b - ordered_product(a, x);
    for (std::int64_t c = 0; c < k; ++c) {
      x_errors[std::size_t(c)].push_back(relative_error(x.data() + c * n, ref_x.data() + c * n, n));
      long double d = 0;
      for (std::int64_t i = 0; i < m; ++i) {
        const long double e = r(i, c) - ref_r(i, c);
        d += e * e;
      }
      r_errors[std::size_t(c)].push_back(double(std::sqrt(d)) / ordered_norm2(b.data() + c * m, m));
    }
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Fp64QrErrors e;
  for (std::int64_t c = 0; c < k; ++c) {
    e.x = std::max(e.x, median(x_errors[std::size_t(c)]));
    e.r = std::max(e.r, median(r_errors[std::size_t(c)]));
  }
  return e;
}
inline Fp64QrErrors fp64_qr_errors(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, const ReferenceSolution& ref,
                                   int orders = 5) {
  return comparator_errors(
      a, b, ref.x, ref.r,
      [](const Eigen::MatrixXd& pa, const Eigen::MatrixXd& pb) { return householder_least_squares(pa, pb); }, orders);
}

// ---- the singular value decomposition and the minimum-norm solution ----

// A = U diag(sigma) V^T (A m x n, m >= n; U m x n with orthonormal columns, V n x n orthogonal,
// sigma non-increasing) by one-sided Jacobi (Hestenes 1958; Demmel & Veselic, "Jacobi's method
// is more accurate than QR", SIAM J. Matrix Anal. Appl. 13(4), 1992): cyclic sweeps of rotations
// that make each pair of columns orthogonal, until every pair is orthogonal to T's precision.
// Unblocked, in a fixed order: the same bits on every machine.
template <class T>
struct SvdFactors {
  RefMatrix<T> u, v;
  std::vector<T> sigma;
};
template <class T>
SvdFactors<T> jacobi_svd(const RefMatrix<T>& a) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t m = a.rows(), n = a.cols();
  RefMatrix<T> u = a, v = RefMatrix<T>::Identity(n, n);
  const T eps = std::numeric_limits<T>::epsilon();
  for (int sweep = 0; sweep < 60; ++sweep) {
    bool rotated = false;
    for (std::int64_t p = 0; p + 1 < n; ++p)
      for (std::int64_t q = p + 1; q < n; ++q) {
        T alpha = 0, beta = 0, gamma = 0;
        for (std::int64_t i = 0; i < m; ++i) {
          alpha += u(i, p) * u(i, p);
          beta += u(i, q) * u(i, q);
          gamma += u(i, p) * u(i, q);
        }
        if (!(std::fabs(gamma) > eps * std::sqrt(alpha * beta))) continue;
        rotated = true;
        const T zeta = (beta - alpha) / (2 * gamma);
        const T t = (zeta >= 0 ? T(1) : T(-1)) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        const T c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (std::int64_t i = 0; i < m; ++i) {
          const T up = u(i, p), uq = u(i, q);
          u(i, p) = c * up - s * uq;
          u(i, q) = s * up + c * uq;
        }
        for (std::int64_t i = 0; i < n; ++i) {
          const T vp = v(i, p), vq = v(i, q);
          v(i, p) = c * vp - s * vq;
          v(i, q) = s * vp + c * vq;
        }
      }
    if (!rotated) break;
  }
  std::vector<T> norms(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) norms[std::size_t(j)] = ordered_norm2(&u(0, j), m);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) order[std::size_t(j)] = j;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t x, std::int64_t y) { return norms[std::size_t(x)] > norms[std::size_t(y)]; });
  SvdFactors<T> f{RefMatrix<T>(m, n), RefMatrix<T>(n, n), std::vector<T>(static_cast<std::size_t>(n))};
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t from = order[std::size_t(j)];
    const T sigma = norms[std::size_t(from)];
    f.sigma[std::size_t(j)] = sigma;
    f.u.col(j) = sigma > 0 ? RefMatrix<T>(u.col(from) / sigma) : RefMatrix<T>(u.col(from));
    f.v.col(j) = v.col(from);
  }
  return f;
}

// The minimum-norm solution of min ||B - A X|| with A truncated to its leading `rank` singular
// triplets: X = V_k diag(1 / sigma_k) U_k^T B, in T.
template <class T>
RefMatrix<T> svd_minimum_norm(const SvdFactors<T>& f, const RefMatrix<T>& b, std::int64_t rank) {
  MIXSOLVE_NO_FP_CONTRACT
  const std::int64_t m = f.u.rows(), n = f.v.rows();
  RefMatrix<T> x = RefMatrix<T>::Zero(n, b.cols());
  for (std::int64_t c = 0; c < b.cols(); ++c)
    for (std::int64_t j = 0; j < rank; ++j) {
      T coefficient = 0;
      for (std::int64_t i = 0; i < m; ++i) coefficient += f.u(i, j) * b(i, c);
      coefficient /= f.sigma[std::size_t(j)];
      for (std::int64_t i = 0; i < n; ++i) x(i, c) += coefficient * f.v(i, j);
    }
  return x;
}

// The truncated-SVD minimum-norm solution of the stored FP64 problem in long double (the
// reference), and the same computed in FP64 on `orders` row orders of the problem (the
// comparator "an FP64 SVD-based solve"): its error against the reference, the median over the
// orders, max over the columns, for x (relative to ||x_ref||) and for the residual (relative to
// ||b||).
struct MinimumNormReference {
  MatrixLd x, r;  // the reference solution and its residual B - A X
  std::vector<long double> sigma;
  double fp64_svd_x = 0, fp64_svd_r = 0;
};
inline MinimumNormReference minimum_norm_reference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                                   std::int64_t rank, int orders = 5) {
  MinimumNormReference ref;
  const SvdFactors<long double> f = jacobi_svd<long double>(a.cast<long double>());
  ref.sigma = f.sigma;
  ref.x = svd_minimum_norm(f, MatrixLd(b.cast<long double>()), rank);
  ref.r = b.cast<long double>() - ordered_product(MatrixLd(a.cast<long double>()), ref.x);
  const Fp64QrErrors e = comparator_errors(
      a, b, ref.x, ref.r,
      [rank](const Eigen::MatrixXd& pa, const Eigen::MatrixXd& pb) {
        return Eigen::MatrixXd(svd_minimum_norm(jacobi_svd<double>(pa), pb, rank));
      },
      orders);
  ref.fp64_svd_x = e.x;
  ref.fp64_svd_r = e.r;
  return ref;
}

}  // namespace mixsolve::testing

#if !defined(__clang__) && defined(__GNUC__)
#pragma GCC pop_options
#endif
#undef MIXSOLVE_NO_FP_CONTRACT
