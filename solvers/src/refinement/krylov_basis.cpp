// SPDX-License-Identifier: BSD-3-Clause
#include "refinement/krylov_basis.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::solvers_detail {

StoredKrylovBasis::StoredKrylovBasis(RefinementSpace& space, std::int64_t columns, slfp::Format format)
    : space_(space),
      n_(space.n()),
      columns_(columns),
      values_(format, space.n() * columns, space.memory()),
      projections_(slfp::Format::Fp64, 2 * columns, space.memory()) {
  if (!slfp::fp64_based(format))
    throw InvalidArgument(std::string("krylov_basis_format: ") + slfp::to_string(format) +
                          " is FP32-based; the basis needs FP64's exponent range (an fp64 or slfp64 format)");
}

slfp::Matrix StoredKrylovBasis::leading(std::int64_t count) const {
  slfp::Vector v = values_.view();
  v.size = count * n_;
  return slfp::Matrix{v, n_, count, std::max<std::int64_t>(n_, 1)};
}

void StoredKrylovBasis::store(std::int64_t j, const double* w) {
  slfp::encode(space_.context(), w, slfp::subvector(values_.view(), j * n_, n_), slfp::Rounding::NearestEven);
}

void StoredKrylovBasis::load(std::int64_t j, double* out) {
  slfp::decode(space_.context(), slfp::subvector(values_.view(), j * n_, n_), out);
}

void StoredKrylovBasis::to_host(const double* from, double* host, std::int64_t count) {
  if (space_.memory() == Memory::Host) {
    std::copy(from, from + count, host);
    return;
  }
  Context& ctx = space_.context();
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(host, from, count * sizeof(double), cudaMemcpyDeviceToHost, ctx.stream()));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
}

double StoredKrylovBasis::orthogonalize(std::int64_t count, double* w, double* h) {
  Context& ctx = space_.context();
  const slfp::Matrix v = leading(count);
  double* pass[2] = {projections_.view().f64, projections_.view().f64 + columns_};
  for (double* p : pass) {
    slfp::gemv(ctx, slfp::Transpose::Yes, 1.0, v, w, 0.0, p);
    slfp::gemv(ctx, slfp::Transpose::No, -1.0, v, p, 1.0, w);
  }
  std::vector<double> both(columns_ + count);  // pass 0's count values, then pass 1's from columns_ on
  to_host(pass[0], both.data(), columns_ + count);
  for (std::int64_t i = 0; i < count; ++i) h[i] = both[i] + both[columns_ + i];
  return std::sqrt(space_.dot(w, w));
}

void StoredKrylovBasis::add_combination(std::int64_t count, const double* y, double* d) {
  if (count == 0) return;
  double* coefficients = projections_.view().f64;
  if (space_.memory() == Memory::Host) {
    std::copy(y, y + count, coefficients);
  } else {
    Context& ctx = space_.context();
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(coefficients, y, count * sizeof(double), cudaMemcpyHostToDevice, ctx.stream()));
  }
  slfp::gemv(space_.context(), slfp::Transpose::No, 1.0, leading(count), coefficients, 1.0, d);
}

}  // namespace mixsolve::solvers_detail
