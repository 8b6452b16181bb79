// SPDX-License-Identifier: BSD-3-Clause
// Internal: the recursion both engines' Cholesky follow (host_cholesky.hpp, cuda/device_cholesky),
// so that the host model factors in the device's blocks:
//   factor(A) : A11 = L11 L11^T (factor), L21 = A21 L11^-T (solve_right), A22 -= L21 L21^T
//               (update_lower), factor(A22),
// down to leaves of `leaf` columns. The triangular solve L21 = A21 L11^-T recurses the same way
// down to `leaf` columns (there the device multiplies by the leaf's inverse, the host substitutes),
// and the symmetric update down to diagonal blocks of 8 `leaf` rows, each one product (its upper
// half computed too: the strict upper triangle is scratch), or whole where the backend skips the
// tiles above the diagonal (Fill::Lower). Only the lower triangle of A is read;
// nearly all the arithmetic is in the products.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mixsolve::solvers_detail {

// Columns of a leaf on the device (an FP64 leaf of 128 x 129 values takes 132 KB of shared
// memory); the host takes its block size, so that small matrices recurse too.
constexpr std::int64_t kCholeskyDeviceLeaf = 128;
// The inner dimension of one update product at most: a longer one is cut into chunks, each
// accumulated into c, so that a backend's workspace (fp16x3's split operands, (m + n) k 4 bytes)
// stays near (m + n) 4096 x 4 bytes instead of growing with n^2 (the top update's k is n / 2).
constexpr std::int64_t kMaxUpdateInner = 4096;

// The inner dimension of one update product at most for a precision whose products lose accuracy
// with their length (PrecisionInfo::truncating_long_products: fp16x3), given the LU's block
// width: chunks of that width, each rounded into c, make the Cholesky's factors as accurate as
// the LU's (host model, poev geo cond 1e6, n = 640: the first solve's backward error 9.3e-8 with
// products of k up to 320, 1.3e-8 in chunks of 32 as the LU's, then 6 classic steps instead of 9).
// Others: kMaxUpdateInner.
inline std::int64_t update_inner_chunk(bool truncating_long_products, std::int64_t lu_block) {
  return truncating_long_products ? std::max<std::int64_t>(lu_block, 1) : kMaxUpdateInner;
}

// Ops, for factors of type T (column-major, leading dimension ld throughout):
//   bool factor_leaf(T* a, std::int64_t m, std::int64_t column0): A = L L^T of the m x m leaf
//     (m <= leaf) in place; false where it met a pivot that is not positive (the recursion then
//     stops; column0 is the leaf's first column in the whole matrix);
//   bool stopped(): an earlier leaf broke down (the recursion ends);
//   void solve_leaf(const T* l, std::int64_t columns, T* b, std::int64_t rows): b := b l^-T for the
//     rows x columns b and the lower columns x columns l (columns <= leaf);
//   void subtract_product(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
//                         bool lower = false):
//     c -= a b^T, a m x k, b n x k; with `lower` (m == n) only c's lower triangle is needed (the
//     rest is scratch);
//   std::int64_t whole_update_rows(): the largest symmetric update taken as one product.
template <class T, class Ops>
class RecursiveCholesky {
 public:
  RecursiveCholesky(Ops& ops, std::int64_t ld, std::int64_t leaf) : ops_(ops), ld_(ld), leaf_(leaf) {}

  // Factors the m x m matrix at a (its first column column0 of the whole).
  void factor(T* a, std::int64_t m, std::int64_t column0 = 0) {
    if (m == 0 || ops_.stopped()) return;
    if (m <= leaf_) {
      ops_.factor_leaf(a, m, column0);
      return;
    }
    const std::int64_t m1 = half(m), m2 = m - m1;
    factor(a, m1, column0);
    if (ops_.stopped()) return;
    T* a21 = a + m1;
    solve_right(a, m1, a21, m2);
    update_lower(a21 + m1 * ld_, m2, a21, m1);
    factor(a21 + m1 * ld_, m2, column0 + m1);
  }

 private:
  // A whole number of leaves in the first half, and less than m: every block stays aligned.
  std::int64_t half(std::int64_t m) const { return std::min(m - 1, (m / 2 + leaf_ - 1) / leaf_ * leaf_); }

  // b := b l^-T. With l = [l11 0; l21 l22]: x1 = b1 l11^-T, b2 -= x1 l21^T, x2 = b2 l22^-T.
  void solve_right(const T* l, std::int64_t columns, T* b, std::int64_t rows) {
    if (rows == 0) return;
    if (columns <= leaf_) {
      ops_.solve_leaf(l, columns, b, rows);
      return;
    }
    const std::int64_t h = half(columns);
    solve_right(l, h, b, rows);
    ops_.subtract_product(rows, columns - h, h, b, l + h, b + h * ld_);
    solve_right(l + h + h * ld_, columns - h, b + h * ld_, rows);
  }

  // The lower triangle of the m x m c -= a a^T (a m x k): one product where m <=
  // ops.whole_update_rows() (a backend that skips the tiles above the diagonal takes it whole),
  // else diagonal blocks of up to 8 leaves as one product each, the blocks below them as products
  // of their own.
  void update_lower(T* c, std::int64_t m, const T* a, std::int64_t k) {
    if (m == 0 || k == 0) return;
    if (m <= std::max(8 * leaf_, ops_.whole_update_rows())) {
      ops_.subtract_product(m, m, k, a, a, c, true);
      return;
    }
    const std::int64_t h = half(m);
    update_lower(c, h, a, k);
    ops_.subtract_product(m - h, h, k, a + h, a, c + h);  // c21 -= a2 a1^T
    update_lower(c + h + h * ld_, m - h, a + h, k);
  }

  Ops& ops_;
  const std::int64_t ld_, leaf_;
};

}  // namespace mixsolve::solvers_detail
