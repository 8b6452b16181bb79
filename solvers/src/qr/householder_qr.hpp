// SPDX-License-Identifier: BSD-3-Clause
// Internal: blocked Householder QR of an m x n matrix (m >= n) in host memory, in FP32 or FP64,
// with its trailing updates through a backend of the GEMM interface (host-fp64, host-fp32, or a
// host model of a tensor-core backend), as the host LU engine does; the reference and model that
// the device QR and the least-squares refinement build on.
//
// Q = H_1 H_2 ... H_n, H_j = I - tau_j v_j v_j^T with v_j(j) = 1 and v_j(i) = 0 for i < j (LAPACK
// geqr2 / larfg). A block of nb reflectors is I - V T V^T, T upper triangular (larft, the compact
// WY form of Schreiber & Van Loan); the trailing columns C are updated by
//   C := (I - V T V^T)^T C = C - V (T^T (V^T C)),
// whose two products V^T C and V W run on the GEMM backend, in its arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::solvers_detail {

template <class T>
class HouseholderQr {
 public:
  // Factors `a` (m x n, m >= n, host memory, column major) in place: R on and above the diagonal,
  // the v_j below it. `block`: reflectors per block (>= 1); `update`: the GEMM backend of the
  // trailing updates, for data of type T in host memory. A column that is zero below its diagonal
  // gets tau = 0 (H_j = I), as LAPACK's larfg does.
  // @throws InvalidArgument for m < n, block < 1, a view not in host memory or a backend of
  //                         another type or memory.
  HouseholderQr(Context& ctx, const MatrixView<T>& a, std::int64_t block, const gemm::Backend& update);

  std::int64_t rows() const { return m_; }
  std::int64_t cols() const { return n_; }
  const std::vector<T>& tau() const { return tau_; }
  // R (n x n, upper triangular) as a view into the factored matrix.
  MatrixView<const T> r() const { return {a_.data, n_, n_, a_.ld, Memory::Host}; }

  // c := Q^T c, c m x k in host memory.
  void apply_qt(const MatrixView<T>& c) const;
  // c := Q c, c m x k in host memory.
  void apply_q(const MatrixView<T>& c) const;
  // x := R^-1 x for the first n rows of x (n x k or taller); a zero diagonal entry gives Inf/NaN,
  // as a triangular solve does.
  void solve_r(const MatrixView<T>& x) const;
  // x := R^-T x for the first n rows of x.
  void solve_rt(const MatrixView<T>& x) const;

 private:
  // The V of block b (rows j0 .. m, nb columns, unit lower trapezoidal, zeros above) and its T.
  struct Block {
    std::int64_t j0, nb;
    std::vector<T> v;  // (m - j0) x nb, column major
    std::vector<T> t;  // nb x nb, column major, upper triangular
  };
  // c(j0 .. m, :) := (I - V T V^T)^op c(j0 .. m, :), op = T (transposed) or N.
  void apply_block(const Block& b, const MatrixView<T>& c, bool transposed) const;

  Context& ctx_;
  MatrixView<T> a_;
  std::int64_t m_, n_;
  const gemm::Backend& update_;
  std::vector<T> tau_;
  std::vector<Block> blocks_;
};

extern template class HouseholderQr<float>;
extern template class HouseholderQr<double>;

}  // namespace mixsolve::solvers_detail
