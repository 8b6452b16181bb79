// SPDX-License-Identifier: BSD-3-Clause
// Internal: ridge regression's stacked problem for least_squares() (LeastSquaresOptions::ridge):
// min ||b - A x||^2 + lambda ||x||^2 is the least-squares problem of [A; sqrt(lambda) I] and
// [b; 0], full rank for lambda > 0 whatever A's rank and shape (Golub & Van Loan, Matrix
// Computations, 4th ed., section 6.1.4). The stacked matrices live in A's memory: [A; s I] is
// built once, [B; 0] for each solve. s = fl(sqrt(lambda)): the problem solved has s^2, within two
// roundings of lambda.
#pragma once

#include <cstdint>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::solvers_detail {

class RidgeStack {
 public:
  // [A; sqrt(lambda) I], (m + n) x n, in A's memory (device: ordered on ctx.stream()).
  RidgeStack(Context& ctx, const MatrixView<const double>& a, double lambda);
  MatrixView<const double> a() const { return a_; }
  // [B; 0], (m + n) x k, in A's memory: rebuilt by each call, valid until the next.
  MatrixView<const double> b(const MatrixView<const double>& b);

 private:
  Context& ctx_;
  std::int64_t m_, n_;
  Memory memory_;
  std::vector<double> host_a_, host_b_;
  DeviceBuffer<double> device_a_, device_b_;
  std::vector<double> diagonal_;  // sqrt(lambda), n times: the source of the device diagonal's copy
  MatrixView<const double> a_;
};

}  // namespace mixsolve::solvers_detail
