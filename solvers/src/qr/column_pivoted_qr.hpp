// SPDX-License-Identifier: BSD-3-Clause
// Internal: Householder QR with column pivoting in FP64 on the host, A P = Q R (LAPACK geqp2's
// rule: at step j the remaining column of largest norm moves to position j; Businger & Golub,
// "Linear least squares solutions by Householder transformations", Numer. Math. 7, 1965). The
// column norms are downdated after each step and recomputed where the downdate cancels (the
// criterion of Drmac & Bujanovic, "On the failure of rank-revealing QR factorization software --
// a case study", ACM TOMS 35(2), 2008, which LAPACK 3.2 adopted).
//
// The rank-revealing least-squares path (qr/minimum_norm.hpp) factors small square matrices with
// it: the R of an unpivoted QR of a tall matrix (A P = Q R' with R P = Q' R': the pivots are the
// tall matrix's own, since the choice depends only on the columns' inner products, which R keeps).
// Q is not formed: that path needs P and R only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mixsolve/core/matrix.hpp"

namespace mixsolve::solvers_detail {

class ColumnPivotedQr {
 public:
  // Factors `a` (m x n, host memory, column major; any m, n >= 0) in place: R on and above the
  // diagonal (min(m, n) x n, upper trapezoidal), the reflectors below it, columns in the pivoted
  // order. @throws InvalidArgument for a view not in host memory.
  explicit ColumnPivotedQr(const MatrixView<double>& a);

  // Column j of A P is column pivots()[j] of A.
  const std::vector<std::int64_t>& pivots() const { return pivots_; }
  // r_ij for i <= j (i < min(m, n)); 0 below the diagonal.
  double r(std::int64_t i, std::int64_t j) const { return i <= j ? a_(i, j) : 0.0; }
  // |r_jj|, non-increasing in j (up to the downdates' rounding), for j < min(m, n).
  double diagonal(std::int64_t j) const;
  std::int64_t steps() const { return std::min(a_.rows, a_.cols); }

 private:
  MatrixView<double> a_;
  std::vector<std::int64_t> pivots_;
};

// The leading part of a column pivoting R P = Q [R11 R12; 0 R22] that stopped after `rank` steps,
// where the next |r_jj| fell to a threshold relative to sigma_max(R).
struct LeadingPivots {
  std::int64_t rank = 0;             // k: the steps taken (every |r_jj| above the threshold)
  std::vector<std::int64_t> pivots;  // n: column j of R P is column pivots[j] of R
  std::vector<double> r;             // k x n, column major: [R11 R12]
  double sigma_max = 0;              // the estimate of sigma_max(R) the threshold was relative to
};

}  // namespace mixsolve::solvers_detail
