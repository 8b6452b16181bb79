// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// dgemm-auto: C = alpha op(A) op(B) + beta C in FP64 on the GPU, by cuBLAS DGEMM or by its
/// emulation ozaki2-int8, whichever a cost model measured on this GPU predicts to be faster at
/// the requested accuracy (parameter bits, default kOzaki2DefaultBits). The emulation is taken only where the
/// model predicts at least kDgemmAutoMargin times DGEMM's speed, so that model error (within 15%
/// of the measured times) cannot make dgemm-auto slower than DGEMM. GPUs without a measured
/// model, products whose emulation would not fit in the free device memory, and inputs holding
/// NaN or Inf run cuBLAS DGEMM. The model was fitted for m, n >= 4096 and 256 <= k <= 32768;
/// beyond that range its margin is not measured.
#pragma once

#include <cstdint>
#include <string>

#include "mixsolve/core/context.hpp"

namespace mixsolve::gemm {

/// The predicted speed-up over DGEMM that dgemm-auto asks of the emulation.
constexpr double kDgemmAutoMargin = 1.15;

/// What dgemm-auto runs for one product, and why.
struct DgemmAutoChoice {
  /// "cublas-dgemm" or "ozaki2-int8".
  std::string backend;
  /// The moduli ozaki2-int8 would take (0 when the sizes are outside the emulation's).
  int moduli = 0;
  /// DGEMM's time over the emulation's, as the model predicts it (0 without a model).
  double predicted_speedup = 0;
  /// One line: the model's verdict, or why there is none.
  std::string reason;
};

/// dgemm-auto's choice for an m x n x k product keeping `bits` bits of each operand (1 to 64) on
/// ctx's GPU. NaN or Inf in A or B sends a call to cuBLAS DGEMM whatever this says.
/// @throws InvalidArgument for negative sizes or bits outside [1, 64].
DgemmAutoChoice dgemm_auto_choice(const Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, int bits);

}  // namespace mixsolve::gemm
