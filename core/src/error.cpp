// SPDX-License-Identifier: BSD-3-Clause
#include <string>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::detail {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw DeviceError(std::string(call) + " failed: " + cudaGetErrorName(code) + " (" +
                    cudaGetErrorString(code) + ") at " + file + ":" + std::to_string(line));
}

const char* cublas_status_name(cublasStatus_t code) {
  switch (code) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

void throw_cublas_error(cublasStatus_t code, const char* call, const char* file, int line) {
  throw DeviceError(std::string(call) + " failed: " + cublas_status_name(code) + " (" +
                    std::to_string(static_cast<int>(code)) + ") at " + file + ":" +
                    std::to_string(line));
}

}  // namespace mixsolve::detail
