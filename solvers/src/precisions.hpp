// SPDX-License-Identifier: BSD-3-Clause
// Internal: one row per factorization precision, read by the driver and both engines. Adding a
// precision is an enumerator in solve_options.hpp and a row in precisions.cpp.
#pragma once

#include <vector>

#include "mixsolve/gemm/backend.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace mixsolve::solvers_detail {

struct PrecisionInfo {
  Precision precision;
  const char* name;  // to_string / parse_precision
  // The unit roundoff of the factorization's arithmetic: what the probe, the collapse watch and
  // the reused-order test compare pivots with.
  double unit_roundoff;
  // SolveOptions::range_scaling applies (the precision's exponent range, or its GEMM's, is
  // narrower than FP32's, or the factors are FP32 ones that scaling keeps within range).
  bool range_limited;
  const char* device_update;  // gemm backend of the trailing updates on the GPU
  const char* host_update;    // gemm backend that gives the host LU the device's rounding
  bool fp64_factors;          // the factors are stored (and applied) in FP64, else in FP32
  // Its GEMM sums split terms of FP32-accurate inputs inside the tensor core, whose accumulation
  // truncates: an error that grows with the inner dimension and dominates the product's. The
  // Cholesky then cuts its products to the LU's block width (update_inner_chunk).
  bool truncating_long_products;
};

// Every factorization precision, in the order parse_precision lists them (not Auto).
const std::vector<PrecisionInfo>& factorization_precisions();

// The row of p; InvalidArgument for Precision::Auto.
const PrecisionInfo& precision_info(Precision p);

// The unit roundoff of p's factorization; Ozaki's follows the bits its updates keep
// (SolveOptions::ozaki_bits): 2^-bits.
double unit_roundoff(Precision p, int ozaki_bits);

inline bool fp64_factors(Precision p) { return precision_info(p).fp64_factors; }

// The attempt's factors are an FP64 factorization's (LU or Cholesky): FP64, or an Ozaki one that
// emulated no update (Attempt::emulated_bits). Refinement and escalation treat them alike: the
// top rung of their path.
inline bool fp64_factorization(const Attempt& a) {
  return a.precision == Precision::FP64 || (a.precision == Precision::Ozaki && a.emulated_bits == 0);
}

// The GEMM backends of p's trailing updates on the GPU and on the host.
const gemm::Backend& device_update_backend(Precision p);
const gemm::Backend& host_update_backend(Precision p);

}  // namespace mixsolve::solvers_detail
