// SPDX-License-Identifier: BSD-3-Clause
#include "refinement/host_space.hpp"

#include <algorithm>
#include <cmath>

#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/primitives/error_free.hpp"

namespace mixsolve::solvers_detail {

HostSpace::HostSpace(Context& ctx, const MatrixView<const double>& a) : ctx_(ctx), a_(a.rows * a.rows) {
  n_ = a.rows;
  for (std::int64_t j = 0; j < n_; ++j)
    for (std::int64_t i = 0; i < n_; ++i) a_[i + j * n_] = a(i, j);
}

std::size_t HostSpace::scratch_bytes() const {
  std::size_t b = 0;
  for (const auto& s : scratch_) b += s.size() * sizeof(double);
  return b;
}

void HostSpace::residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                         const MatrixView<double>& r, ResidualPrecision precision) {
  if (precision == ResidualPrecision::DoubleDouble) {
    std::vector<error_free::Dot2> sums(static_cast<std::size_t>(n_));
    for (std::int64_t c = 0; c < x.cols; ++c) {
      for (std::int64_t i = 0; i < n_; ++i) sums[std::size_t(i)] = {b(i, c), 0.0};
      for (std::int64_t j = 0; j < n_; ++j) {
        const double minus_xj = -x(j, c);
        for (std::int64_t i = 0; i < n_; ++i) sums[std::size_t(i)].add_product(a_[i + j * n_], minus_xj);
      }
      for (std::int64_t i = 0; i < n_; ++i) r(i, c) = sums[std::size_t(i)].value();
    }
    return;
  }
  for (std::int64_t c = 0; c < x.cols; ++c) {
    for (std::int64_t i = 0; i < n_; ++i) r(i, c) = b(i, c);
    for (std::int64_t j = 0; j < n_; ++j) {
      const double xj = x(j, c);
      for (std::int64_t i = 0; i < n_; ++i) r(i, c) -= a_[i + j * n_] * xj;
    }
  }
}

void HostSpace::multiply(const double* x, double* y) {
  std::fill(y, y + n_, 0.0);
  for (std::int64_t j = 0; j < n_; ++j)
    for (std::int64_t i = 0; i < n_; ++i) y[i] += a_[i + j * n_] * x[j];
}

void HostSpace::multiply_transpose(const double* x, double* y) {
  for (std::int64_t j = 0; j < n_; ++j) {
    double s = 0;
    for (std::int64_t i = 0; i < n_; ++i) s += a_[i + j * n_] * x[i];
    y[j] = s;
  }
}

void HostSpace::diagonal(double* host) {
  for (std::int64_t i = 0; i < n_; ++i) host[i] = a_[i + i * n_];
}

void HostSpace::column(std::int64_t j, double* host) { std::copy(a_.data() + j * n_, a_.data() + (j + 1) * n_, host); }

double HostSpace::componentwise_backward_error(const double* x, const double* b, const double* r) {
  return mixsolve::componentwise_backward_error(host_view<const double>(a_.data(), n_, n_, n_), x, b, nullptr,
                                                nullptr, r);
}

void HostSpace::column_norms_inf(const MatrixView<const double>& m, double* out) {
  for (std::int64_t c = 0; c < m.cols; ++c) {
    double v = 0;
    for (std::int64_t i = 0; i < m.rows; ++i) v = std::max(v, std::fabs(m(i, c)));
    out[c] = v;
  }
}

MatrixView<double> HostSpace::scratch(int slot, std::int64_t cols) {
  if (slot >= int(scratch_.size())) scratch_.resize(slot + 1);
  auto& s = scratch_[slot];
  if (s.size() < std::size_t(n_ * cols)) s.resize(n_ * cols);
  track_peak();
  return host_view(s.data(), n_, cols, std::max<std::int64_t>(n_, 1));
}

void HostSpace::copy(const MatrixView<const double>& src, const MatrixView<double>& dst) {
  for (std::int64_t j = 0; j < src.cols; ++j)
    for (std::int64_t i = 0; i < src.rows; ++i) dst(i, j) = src(i, j);
}
void HostSpace::upload(const double* host, double* y) { std::copy(host, host + n_, y); }
void HostSpace::download(const double* y, double* host) { std::copy(y, y + n_, host); }
void HostSpace::fill_random(const MatrixView<double>& m, const RandomSpec& spec) { mixsolve::fill_random(m, spec); }
void HostSpace::axpy(double alpha, const double* x, double* y) {
  for (std::int64_t i = 0; i < n_; ++i) y[i] += alpha * x[i];
}
void HostSpace::scal(double alpha, double* x) {
  for (std::int64_t i = 0; i < n_; ++i) x[i] *= alpha;
}
void HostSpace::zero(double* x) { std::fill(x, x + n_, 0.0); }
double HostSpace::dot(const double* x, const double* y) {
  double s = 0;
  for (std::int64_t i = 0; i < n_; ++i) s += x[i] * y[i];
  return s;
}
void HostSpace::gram(const MatrixView<const double>& x, const MatrixView<const double>& y, double* out) {
  for (std::int64_t j = 0; j < y.cols; ++j)
    for (std::int64_t i = 0; i < x.cols; ++i) out[i + j * x.cols] = dot(&x(0, i), &y(0, j));
}
double HostSpace::orthogonalize(const MatrixView<const double>& v, std::int64_t count, double* w, double* h) {
  std::fill(h, h + count, 0.0);
  std::vector<double> projection(count);
  for (int pass = 0; pass < 2; ++pass) {
    for (std::int64_t c = 0; c < count; ++c) {
      double s = 0;
      for (std::int64_t i = 0; i < n_; ++i) s += v(i, c) * w[i];
      projection[c] = s;
    }
    for (std::int64_t c = 0; c < count; ++c) {
      for (std::int64_t i = 0; i < n_; ++i) w[i] -= projection[c] * v(i, c);
      h[c] += projection[c];
    }
  }
  return std::sqrt(dot(w, w));
}
void HostSpace::add(const MatrixView<const double>& x, const MatrixView<double>& y) {
  for (std::int64_t j = 0; j < x.cols; ++j)
    for (std::int64_t i = 0; i < x.rows; ++i) y(i, j) += x(i, j);
}
void HostSpace::synchronize() {}

}  // namespace mixsolve::solvers_detail
