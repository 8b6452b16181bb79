// Internal: 1-norm estimation for the solve report (condition number and forward error bound),
// engine-agnostic. The operators are callbacks on host vectors, so the driver can hand in any
// engine's A^-1 (a device engine copies the vector to the device and back).
//
// References:
//   [H88]  N. J. Higham, "FORTRAN codes for estimating the one-norm of a real or complex matrix,
//          with applications to condition estimation", ACM TOMS 14(4), 381-396, 1988: Alg. 4.1
//          (Hager's method with Higham's refinements; LAPACK's DLACN2).
//   [ASNA] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002:
//          §15.3 (the LAPACK 1-norm estimator, the same algorithm), §15.1 (|| |A^-1| g ||_inf
//          through the estimator), §7.7 "practical error bounds" (the forward error bound that
//          LAPACK's DGERFS estimates, with the residual's rounding error).
//   [LUG]  E. Anderson et al., "LAPACK Users' Guide", 3rd ed., SIAM 1999: §4.4 (condition
//          estimates and error bounds for linear systems: DGECON's RCOND, DGERFS's FERR).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace mixsolve::solvers_detail {

// x := B x (or x := B^T x) for a vector of length n; the callback must not change x's length.
using LinearOperator = std::function<void(std::vector<double>& x)>;

// [H88] Alg. 4.1: at most this many "x := e_j" steps (k > 5 ends the loop), as DLACN2's ITMAX.
constexpr int kNorm1EstimateMaxIterations = 5;
// Operator applications estimate_norm1 makes at most (n >= 2): B x and B^T xi at the start, a
// B x and a B^T xi in each of the ITMAX - 1 = 4 loop passes, and B x on the alternating vector:
// 2 + 2 (ITMAX - 1) + 1 = 2 ITMAX + 1 = 11, DLACN2's count (it returns with KASE = 1 or 2 as many
// times). n = 1 takes 1 product, n = 0 none.
constexpr int kNorm1EstimateMaxProducts = 2 * kNorm1EstimateMaxIterations + 1;

// An estimate of ||B||_1 for an n x n operator B known only through B x (`apply`) and B^T x
// (`apply_transpose`), by [H88] Alg. 4.1 as LAPACK's DLACN2 carries it out:
//   x = e/n; y = B x; est = ||y||_1; xi = sign(y) (sign(0) = +1); z = B^T xi;
//   repeat: j = first index of max_i |z_i|; y = B e_j; est_old = est; est = ||y||_1;
//           stop if sign(y) = xi (repeated sign vector) or est <= est_old (cycling);
//           xi = sign(y); z = B^T xi;
//   until z_j = ||z||_inf for the j just used (Hager's local maximum) or ITMAX passes;
//   then x_i = (-1)^(i+1) (1 + (i-1)/(n-1)) (i = 1..n) and est = max(est, 2 ||B x||_1 / (3n)).
// Every value it can return is ||B v||_1 / ||v||_1 for some v, so it is a lower bound on ||B||_1
// (up to rounding). Measured (tests/host/test_condition_estimate.cpp): on random matrices and
// their inverses, n = 2 .. 301, the median estimate is 0.8-1.0 of the norm, the smallest 0.26;
// often exact; the same estimates and product counts as the reference LAPACK's dlacn2.
//
// Special values:
//   n = 0: returns 0 (the norm of the empty operator) without calling the operators;
//   n = 1: one product, returns |B * 1| exactly (B is the scalar);
//   a product containing NaN (B holds a NaN, or Inf - Inf arose inside it): returns NaN at once;
//   a product B x with an infinite entry or an overflowing 1-norm, and no NaN: returns INFINITY
//   at once (||B x||_1 / ||x||_1 exceeds the largest double for that finite x; a singular LU's
//   A^-1 typically gives this or NaN).
// `products`, if not null, receives the number of operator applications (both kinds), at most
// kNorm1EstimateMaxProducts. Throws InvalidArgument for n < 0, an empty callback, or a callback
// that changes the vector's length.
double estimate_norm1(std::int64_t n, const LinearOperator& apply, const LinearOperator& apply_transpose,
                      int* products = nullptr);

// ||A^-1||_1 by estimate_norm1 on B = A^-1 (apply_inverse: x := A^-1 x; apply_inverse_transpose:
// x := A^-T x), as DGECON does with the LU factors (NORM = '1': KASE = 1 solves with A, KASE = 2
// with A^T). With the engines, A^-1 is the factors' (LU)^-1 P (times the range scaling), so the
// estimate is that of the factors' inverse: close to ||A^-1||_1 where (LU)^-1 A is close to I
// (always for FP64 factors; for low-precision factors only to their accuracy).
double estimate_inverse_norm1(std::int64_t n, const LinearOperator& apply_inverse,
                              const LinearOperator& apply_inverse_transpose, int* products = nullptr);

// ||A^-1||_inf = ||A^-T||_1: estimate_norm1 on B = A^-T, whose transpose is A^-1 (DGECON's
// NORM = 'I': KASE = 1 solves with A^T, KASE = 2 with A). Pairs with Engine::norm_inf.
double estimate_inverse_norm_inf(std::int64_t n, const LinearOperator& apply_inverse,
                                 const LinearOperator& apply_inverse_transpose, int* products = nullptr);

// Reciprocal condition number rcond = 1 / (||A|| * est), est an estimate of ||A^-1|| in the same
// norm (1-norm: estimate_inverse_norm1 with ||A||_1; inf-norm: estimate_inverse_norm_inf with
// ||A||_inf), formed as DGECON forms it ([LUG] §4.4, RCOND): (1 / est) / norm_a, which
// underflows to 0 rather than overflowing in the product. As DGECON: n = 0 gives 1; norm_a = 0
// (A = 0, singular) gives 0; est = 0 gives 0 (DGECON leaves RCOND = 0: no finite estimate).
// est = INFINITY (a singular LU's inverse overflowed) gives 0; NaN in either gives NaN (the
// estimate is unavailable: A or its factors hold NaN). Since est <= ||A^-1|| (a lower bound),
// rcond >= 1 / cond(A) up to rounding: rcond overestimates the reciprocal condition number.
// Throws InvalidArgument for n < 0 or a negative norm_a or est.
double reciprocal_condition(std::int64_t n, double norm_a, double inverse_norm_estimate);

// DGERFS's weights ([ASNA] §7.7, [LUG] §4.4):
//   w_i = |r_i| + nz eps (|A| |x| + |b|)_i,
// r = b - A x the residual computed in FP64, abs_ax_plus_b_i = (|A| |x| + |b|)_i, nz the most
// nonzeros in a row of A plus 1 (n + 1 for a dense A), eps = 2^-53 (the unit roundoff: nz eps
// (|A||x| + |b|) bounds the rounding error of the computed r, as gamma_{n+1} does in [ASNA]
// §7.7). Where (|A||x| + |b|)_i is at most nz * safmin / eps, DGERFS also adds nz * safmin
// (safmin the smallest normal double): the relative bound does not cover underflow, whose
// absolute error per operation reaches safmin. Throws InvalidArgument if the lengths differ or
// nz < 1.
std::vector<double> forward_error_weights(const std::vector<double>& residual,
                                          const std::vector<double>& abs_ax_plus_b, std::int64_t nz);

// DGERFS's FERR for one right-hand side ([LUG] §4.4; [ASNA] §7.7 and §15.1):
//   ||x - x_true||_inf / ||x||_inf  <=  || |A^-1| w ||_inf / ||x||_inf,
// w = forward_error_weights(...) >= 0 and x the computed solution (norm_x_inf = ||x||_inf).
// Because w >= 0, || |A^-1| w ||_inf = || A^-1 diag(w) ||_inf = ||M||_inf for M = A^-1 diag(w),
// and ||M||_inf = ||M^T||_1, so estimate_norm1 runs on
//   B   = M^T = diag(w) A^-T:  x := A^-T x, then x_i *= w_i   (DGERFS KASE = 1),
//   B^T = M   = A^-1 diag(w):  x_i *= w_i,  then x := A^-1 x  (DGERFS KASE = 2).
// The estimate is a lower bound on || |A^-1| w ||_inf, so FERR is an estimate of a bound, not a
// guaranteed one; in practice it is rarely below the true error ([LUG] §4.4). With
// low-precision factors A^-1 is applied only to their accuracy, and so is the bound: FP32 factors
// gave the FP64 factors' bound to 0.3% up to cond_inf(A) 8e6, but 1/60 of it, below the true
// error, on Hilbert 8 (cond_inf 3.4e10 > 1 / u_32). Use FP64 factors, or factors whose
// (LU)^-1 A is close to I.
//
// Special values: ||x||_inf = 0 gives 0 where the estimate is 0 and INFINITY otherwise (no
// relative bound; DGERFS returns the unscaled estimate there); any w_i or ||x||_inf NaN, or
// ||x||_inf infinite, gives NaN; an infinite w_i gives INFINITY; otherwise estimate_norm1's
// NaN / INFINITY rules. `products` counts the apply_inverse(_transpose) calls.
// Throws InvalidArgument for n < 0, w of length other than n, a negative w_i or ||x||_inf.
double forward_error_bound(std::int64_t n, const std::vector<double>& w, double norm_x_inf,
                           const LinearOperator& apply_inverse, const LinearOperator& apply_inverse_transpose,
                           int* products = nullptr);

}  // namespace mixsolve::solvers_detail
