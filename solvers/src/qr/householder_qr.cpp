// SPDX-License-Identifier: BSD-3-Clause
#include "qr/householder_qr.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "mixsolve/core/error.hpp"
#include "scaled_norm.hpp"

namespace mixsolve::solvers_detail {

namespace {

// ||x||_2 of n values with stride 1, in FP64 (scaled_norm2), rounded to T.
template <class T>
T scaled_norm(const T* x, std::int64_t n) { return T(scaled_norm2(x, n)); }

}  // namespace

template <class T>
HouseholderQr<T>::HouseholderQr(Context& ctx, const MatrixView<T>& a, std::int64_t block, const gemm::Backend& update)
    : ctx_(ctx), a_(a), m_(a.rows), n_(a.cols), update_(update) {
  if (m_ < n_)
    throw InvalidArgument("HouseholderQr: a has fewer rows (" + std::to_string(m_) + ") than columns (" +
                          std::to_string(n_) + ")");
  if (block < 1) throw InvalidArgument("HouseholderQr: block (" + std::to_string(block) + ") must be >= 1");
  if (a.memory != Memory::Host) throw InvalidArgument("HouseholderQr: a must be in host memory");
  constexpr gemm::DataType kType = std::is_same_v<T, float> ? gemm::DataType::F32 : gemm::DataType::F64;
  if (update.data_type() != kType || update.memory() != Memory::Host)
    throw InvalidArgument("HouseholderQr: update backend " + update.name() + " is not a host backend for " +
                          (std::is_same_v<T, float> ? "FP32" : "FP64") + " data");
  tau_.assign(n_, T(0));
  MatrixView<T> at = a_;
  for (std::int64_t j0 = 0; j0 < n_; j0 += block) {
    const std::int64_t nb = std::min(block, n_ - j0), rows = m_ - j0;
    // The panel, column by column (LAPACK geqr2): the reflector of column j (larfg), then H_j
    // applied to the panel's later columns.
    for (std::int64_t j = j0; j < j0 + nb; ++j) {
      const T alpha = at(j, j);
      const T below = scaled_norm(&at(j + 1, j), m_ - j - 1);
      if (below == T(0)) continue;  // tau = 0: H_j = I
      const T beta = -std::copysign(std::hypot(alpha, below), alpha);
      tau_[j] = (beta - alpha) / beta;
      const T scale = T(1) / (alpha - beta);
      for (std::int64_t i = j + 1; i < m_; ++i) at(i, j) *= scale;
      at(j, j) = beta;
      for (std::int64_t c = j + 1; c < j0 + nb; ++c) {
        T w = at(j, c);
        for (std::int64_t i = j + 1; i < m_; ++i) w += at(i, j) * at(i, c);
        w *= tau_[j];
        at(j, c) -= w;
        for (std::int64_t i = j + 1; i < m_; ++i) at(i, c) -= w * at(i, j);
      }
    }
    Block b{j0, nb, std::vector<T>(rows * nb, T(0)), std::vector<T>(nb * nb, T(0))};
    for (std::int64_t q = 0; q < nb; ++q) {
      b.v[q + q * rows] = T(1);
      for (std::int64_t i = q + 1; i < rows; ++i) b.v[i + q * rows] = at(j0 + i, j0 + q);
    }
    // T (LAPACK larft, forward, columnwise): T(q, q) = tau_q, T(0:q, q) = -tau_q T(0:q, 0:q) V(:, 0:q)^T v_q.
    for (std::int64_t q = 0; q < nb; ++q) {
      const T tq = tau_[j0 + q];
      b.t[q + q * nb] = tq;
      std::vector<T> z(q, T(0));
      for (std::int64_t p = 0; p < q; ++p) {
        T s = 0;
        for (std::int64_t i = q; i < rows; ++i) s += b.v[i + p * rows] * b.v[i + q * rows];
        z[p] = -tq * s;
      }
      for (std::int64_t p = 0; p < q; ++p) {
        T s = 0;
        for (std::int64_t r = p; r < q; ++r) s += b.t[p + r * nb] * z[r];
        b.t[p + q * nb] = s;
      }
    }
    blocks_.push_back(std::move(b));
    const std::int64_t rest = n_ - j0 - nb;
    if (rest > 0) apply_block(blocks_.back(), at.block(0, j0 + nb, m_, rest), true);
  }
}

template <class T>
void HouseholderQr<T>::apply_block(const Block& b, const MatrixView<T>& c, bool transposed) const {
  const std::int64_t rows = m_ - b.j0, nb = b.nb, k = c.cols;
  if (k == 0) return;
  T* c0 = c.data + b.j0;
  // W = V^T C (nb x k) on the backend.
  std::vector<T> w(nb * k);
  const gemm::GemmArgs<T> vt_c{gemm::Op::T, gemm::Op::N, nb,   k,    rows,     T(1), b.v.data(),
                               rows,        c0,          c.ld, T(0), w.data(), nb};
  update_.run(ctx_, gemm::to_problem(vt_c));
  // W := T^T W (transposed) or T W, on the host: nb x nb by nb x k.
  std::vector<T> tw(nb * k, T(0));
  for (std::int64_t col = 0; col < k; ++col)
    for (std::int64_t p = 0; p < nb; ++p) {
      T s = 0;
      if (transposed)
        for (std::int64_t r = 0; r <= p; ++r) s += b.t[r + p * nb] * w[r + col * nb];
      else
        for (std::int64_t r = p; r < nb; ++r) s += b.t[p + r * nb] * w[r + col * nb];
      tw[p + col * nb] = s;
    }
  // C -= V W on the backend.
  const gemm::GemmArgs<T> c_minus{gemm::Op::N, gemm::Op::N, rows, k,    nb, T(-1), b.v.data(),
                                  rows,        tw.data(),   nb,   T(1), c0, c.ld};
  update_.run(ctx_, gemm::to_problem(c_minus));
}

template <class T>
void HouseholderQr<T>::apply_qt(const MatrixView<T>& c) const {
  if (c.rows != m_)
    throw InvalidArgument("HouseholderQr::apply_qt: c has " + std::to_string(c.rows) + " rows, not " +
                          std::to_string(m_));
  for (const Block& b : blocks_) apply_block(b, c, true);
}

template <class T>
void HouseholderQr<T>::apply_q(const MatrixView<T>& c) const {
  if (c.rows != m_)
    throw InvalidArgument("HouseholderQr::apply_q: c has " + std::to_string(c.rows) + " rows, not " +
                          std::to_string(m_));
  for (auto b = blocks_.rbegin(); b != blocks_.rend(); ++b) apply_block(*b, c, false);
}

template <class T>
void HouseholderQr<T>::solve_r(const MatrixView<T>& x) const {
  if (x.rows < n_)
    throw InvalidArgument("HouseholderQr::solve_r: x has " + std::to_string(x.rows) +
                          " rows, fewer than n = " + std::to_string(n_));
  for (std::int64_t col = 0; col < x.cols; ++col)
    for (std::int64_t i = n_ - 1; i >= 0; --i) {
      T s = x(i, col);
      for (std::int64_t j = i + 1; j < n_; ++j) s -= a_(i, j) * x(j, col);
      x(i, col) = s / a_(i, i);
    }
}

template <class T>
void HouseholderQr<T>::solve_rt(const MatrixView<T>& x) const {
  if (x.rows < n_)
    throw InvalidArgument("HouseholderQr::solve_rt: x has " + std::to_string(x.rows) +
                          " rows, fewer than n = " + std::to_string(n_));
  for (std::int64_t col = 0; col < x.cols; ++col)
    for (std::int64_t i = 0; i < n_; ++i) {
      T s = x(i, col);
      for (std::int64_t j = 0; j < i; ++j) s -= a_(j, i) * x(j, col);
      x(i, col) = s / a_(i, i);
    }
}

template class HouseholderQr<float>;
template class HouseholderQr<double>;

}  // namespace mixsolve::solvers_detail
