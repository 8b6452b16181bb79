// SPDX-License-Identifier: BSD-3-Clause
// Internal: 1-norm estimation for the solve report (condition number and forward error bound),
// engine-agnostic. The operators are callbacks on host vectors, so the driver can hand in any
// engine's A^-1 (a device engine copies the vector to the device and back).
//
// References:
//   [H88]  N. J. Higham, "FORTRAN codes for estimating the one-norm of a real or complex matrix,
//          with applications to condition estimation", ACM TOMS 14(4), 381-396, 1988: Alg. 4.1
//          (Hager's method with Higham's refinements; LAPACK's DLACN2).
//   [ASNA] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM 2002:
//          §15.3 (the LAPACK 1-norm estimator, the same algorithm), §7.7 "practical error
//          bounds" (the forward error bound from A^-1 and the residual, with the residual's own
//          rounding error, as LAPACK's DGERFS estimates it componentwise).
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

// The normwise form of the forward error bound of [ASNA] §7.7 (DGERFS's FERR with
// ||A^-1||_inf ||w||_inf for || |A^-1| w ||_inf): x - x_true = A^-1 r for the exact residual r,
// and the computed residual r^ differs from r by at most gamma_{n+1} (|b| + |A||x|), so
//   ||x - x_true||_inf / ||x||_inf
//     <= ||A^-1||_inf (||r^||_inf + (n + 1) u (||A||_inf ||x||_inf + ||b||_inf)) / ||x||_inf,
// u = 2^-53. With inverse_norm_inf an estimate (estimate_inverse_norm_inf: a lower bound on
// ||A^-1||_inf) this is an estimate of the bound, as DGERFS's is. The rounding term makes it
// about (n + 1) u cond_inf(A) for a converged x: pessimistic for an FP64-accurate solution, and
// a warning where cond_inf(A) u is large. NaN where an input is NaN; INFINITY for x = 0 with a
// nonzero numerator.
double normwise_forward_error_bound(std::int64_t n, double inverse_norm_inf, double norm_a_inf, double norm_r_inf,
                                    double norm_x_inf, double norm_b_inf);

}  // namespace mixsolve::solvers_detail
