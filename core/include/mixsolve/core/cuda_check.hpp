// SPDX-License-Identifier: BSD-3-Clause
// Checked CUDA / cuBLAS calls: every return code is turned into a DeviceError naming the call.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "mixsolve/core/error.hpp"

namespace mixsolve::detail {

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t code, const char* call, const char* file, int line);
const char* cublas_status_name(cublasStatus_t code);

}  // namespace mixsolve::detail

#define MIXSOLVE_CUDA_CHECK(call)                                                   \
  do {                                                                              \
    cudaError_t mixsolve_status_ = (call);                                          \
    if (mixsolve_status_ != cudaSuccess)                                            \
      ::mixsolve::detail::throw_cuda_error(mixsolve_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: catches bad launch configurations at once (no synchronisation).
#define MIXSOLVE_CUDA_CHECK_LAUNCH() MIXSOLVE_CUDA_CHECK(cudaGetLastError())

#define MIXSOLVE_CUBLAS_CHECK(call)                                                   \
  do {                                                                                \
    cublasStatus_t mixsolve_status_ = (call);                                         \
    if (mixsolve_status_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::mixsolve::detail::throw_cublas_error(mixsolve_status_, #call, __FILE__, __LINE__); \
  } while (0)
