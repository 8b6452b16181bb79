// SPDX-License-Identifier: BSD-3-Clause
#include "device_common.hpp"

#include <cuda_runtime.h>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve::gemm::detail {

std::string require_device(const Context& ctx, int min_cc) {
  if (!ctx.has_device()) return "needs a GPU; this is a host-only context";
  int major = 0, minor = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx.device()));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ctx.device()));
  const int cc = major * 10 + minor;
  if (cc < min_cc)
    return "needs compute capability >= " + std::to_string(min_cc / 10) + "." + std::to_string(min_cc % 10) +
           "; device has " + std::to_string(major) + "." + std::to_string(minor);
  return {};
}

void throw_if_operands_overflowed(const unsigned int* overflow, cudaStream_t stream, const std::string& backend,
                                  const std::string& format, const std::string& advice) {
  unsigned int counts[2] = {0, 0};
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(counts, overflow, sizeof counts, cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < 2; ++i)
    if (counts[i] > 0)
      throw RangeError("gemm(" + backend + "): " + std::to_string(counts[i]) + " entries of " + (i ? "B" : "A") +
                       " are finite but overflow " + format + "; " + advice);
}

}  // namespace mixsolve::gemm::detail
