// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Checked CUDA / cuBLAS calls: every return code is turned into a DeviceError naming the call.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "mixsolve/core/error.hpp"

namespace mixsolve::detail {

/// Throws DeviceError naming `call`, the CUDA error's name and description, `file` and `line`.
/// @param code the failing status.
/// @param call the call's source text.
/// @param file source file of the check.
/// @param line source line of the check.
/// @throws DeviceError always.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
/// Throws DeviceError naming `call`, the cuBLAS status (cublas_status_name) and its number,
/// `file` and `line`.
/// @param code the failing status.
/// @param call the call's source text.
/// @param file source file of the check.
/// @param line source line of the check.
/// @throws DeviceError always.
[[noreturn]] void throw_cublas_error(cublasStatus_t code, const char* call, const char* file, int line);
/// The name of a cuBLAS status, for messages.
/// @param code a cuBLAS status.
/// @return its enumerator's name, e.g. "CUBLAS_STATUS_NOT_SUPPORTED" ("unknown cuBLAS status"
///         for a value not listed).
const char* cublas_status_name(cublasStatus_t code);

}  // namespace mixsolve::detail

/// Evaluates a CUDA runtime call once; unless it returns cudaSuccess, throws DeviceError naming
/// the call, the error, the file and the line.
#define MIXSOLVE_CUDA_CHECK(call)                                                   \
  do {                                                                              \
    cudaError_t mixsolve_status_ = (call);                                          \
    if (mixsolve_status_ != cudaSuccess)                                            \
      ::mixsolve::detail::throw_cuda_error(mixsolve_status_, #call, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: catches bad launch configurations at once (no synchronisation).
/// Throws DeviceError for the error cudaGetLastError() reports.
#define MIXSOLVE_CUDA_CHECK_LAUNCH() MIXSOLVE_CUDA_CHECK(cudaGetLastError())

/// Evaluates a cuBLAS call once; unless it returns CUBLAS_STATUS_SUCCESS, throws DeviceError
/// naming the call, the status, the file and the line.
#define MIXSOLVE_CUBLAS_CHECK(call)                                                   \
  do {                                                                                \
    cublasStatus_t mixsolve_status_ = (call);                                         \
    if (mixsolve_status_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::mixsolve::detail::throw_cublas_error(mixsolve_status_, #call, __FILE__, __LINE__); \
  } while (0)
