// SPDX-License-Identifier: BSD-3-Clause
// Internal: the column pivoting of a small R (p x n, FP64, device memory) on the device, through
// the Cholesky factorization with diagonal pivoting of its Gram matrix G = R^T R (LAPACK pstrf's
// rule: at step j the remaining diagonal entry of the Schur complement that is largest moves to
// position j; Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 2002, sec. 10.3).
// In exact arithmetic that is QR with column pivoting of R (Businger & Golub's rule): the Schur
// complement's diagonal holds the squared norms of the columns' parts orthogonal to the columns
// chosen, and P^T G P = L L^T gives R P = Q L^T.
//
// Squaring costs accuracy: the Schur complement's diagonal carries rounding of about
// n u ||G|| = n u sigma_max^2, so only columns with |r_jj| well above sqrt(n u) sigma_max are
// told apart from dependent ones. The rank-revealing attempt's first stage asks for no more (it
// keeps columns above 2^-12 sigma_max, qr/minimum_norm.hpp); the FP64 second stage pivots a true
// QR.
//
// The factorization is blocked as pstrf: within a panel of kPivotPanel columns one thread block
// chooses each pivot, swaps, and computes the column from the panel's earlier columns
// (left-looking); after the panel one DGEMM updates the trailing Schur complement. It stops at the
// first step whose largest remaining diagonal entry is at most `threshold`^2.
#pragma once

#include <cstdint>

#include "mixsolve/core/context.hpp"
#include "qr/column_pivoted_qr.hpp"

namespace mixsolve::solvers_detail {

// Pivots R (p x n, leading dimension ld, device memory on ctx's stream) and factors its leading
// columns, stopping where |r_jj| <= relative_threshold * sigma_max(R), or after min(p, n) steps.
// sigma_max is estimated by power iteration on G (a lower bound, at least the largest column
// norm). Synchronizes ctx's stream.
LeadingPivots pivot_by_gram_cholesky(Context& ctx, const double* r, std::int64_t p, std::int64_t n, std::int64_t ld,
                                    double relative_threshold);

}  // namespace mixsolve::solvers_detail
