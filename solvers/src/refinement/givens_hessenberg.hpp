// SPDX-License-Identifier: BSD-3-Clause
// Internal: GMRES's small least-squares problem, shared by GMRES-IR (refinement.cpp) and
// GMRES-LS (qr/least_squares_refinement.cpp).
#pragma once
#include <cmath>
#include <vector>

namespace mixsolve::solvers_detail {

// The (m + 1) x m upper Hessenberg H of the Arnoldi process, reduced to upper triangular by
// Givens rotations as its columns arrive, and g = Q^T (beta e_1), so that |g_(k+1)| is the
// residual norm of the k-th iterate (Saad and Schultz, 1986). The caller fills column k
// (h(0..k+1, k), from the orthogonalization) and calls rotate(k); solve(k) gives the y of
// the first k columns.
class GivensHessenberg {
 public:
  GivensHessenberg(int m, double beta) : m_(m), h_((m + 1) * m, 0.0), cs_(m), sn_(m), g_(m + 1, 0.0) { g_[0] = beta; }

  double& at(int i, int k) { return h_[i + k * (m_ + 1)]; }
  // Column k of H, m + 1 contiguous entries.
  double* column(int k) { return &h_[k * (m_ + 1)]; }

  // Applies the earlier rotations to column k, then the one that zeroes h(k+1, k), to H and g.
  // Returns |g_(k+1)|, the residual norm after k + 1 steps.
  double rotate(int k) {
    for (int i = 0; i < k; ++i) {
      const double a = at(i, k), b = at(i + 1, k);
      at(i, k) = cs_[i] * a + sn_[i] * b;
      at(i + 1, k) = -sn_[i] * a + cs_[i] * b;
    }
    const double a = at(k, k), b = at(k + 1, k);
    const double rho = std::hypot(a, b);
    cs_[k] = rho > 0 ? a / rho : 1.0;
    sn_[k] = rho > 0 ? b / rho : 0.0;
    at(k, k) = rho;
    at(k + 1, k) = 0;
    g_[k + 1] = -sn_[k] * g_[k];
    g_[k] = cs_[k] * g_[k];
    return std::fabs(g_[k + 1]);
  }

  // y with H(0:k, 0:k) y = g(0:k), by back substitution; a zero diagonal entry gives y_i = 0.
  std::vector<double> solve(int k) {
    std::vector<double> y(k, 0.0);
    for (int i = k - 1; i >= 0; --i) {
      double s = g_[i];
      for (int c = i + 1; c < k; ++c) s -= at(i, c) * y[c];
      y[i] = at(i, i) != 0 ? s / at(i, i) : 0.0;
    }
    return y;
  }

 private:
  int m_;
  std::vector<double> h_, cs_, sn_, g_;
};

}  // namespace mixsolve::solvers_detail
