// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Internal helper for code that calls cuBLAS on a shared handle.
#pragma once

#include <cublas_v2.h>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve {

/// Sets a cuBLAS handle's math mode for one call and restores the default afterwards, so that
/// callers sharing a Context's handle do not leak settings into each other.
class MathModeScope {
 public:
  MathModeScope(cublasHandle_t h, cublasMath_t mode) : h_(h) { MIXSOLVE_CUBLAS_CHECK(cublasSetMathMode(h_, mode)); }
  ~MathModeScope() { cublasSetMathMode(h_, CUBLAS_DEFAULT_MATH); }
  MathModeScope(const MathModeScope&) = delete;
  MathModeScope& operator=(const MathModeScope&) = delete;

 private:
  cublasHandle_t h_;
};

}  // namespace mixsolve
