// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/core/gpu.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve {

Memory memory_of(const void* p) {
  cudaPointerAttributes attributes{};
  if (p == nullptr || cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // clear it: a pointer CUDA does not know is host memory
    return Memory::Host;
  }
  const bool kernels_reach_it = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  return kernels_reach_it ? Memory::Device : Memory::Host;
}

bool gpu_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error so later queries start clean
    return false;
  }
  return count > 0;
}

namespace {
std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

void detail::check_device_index(const std::string& who, int device) {
  if (!gpu_available()) throw DeviceError(who + ": no CUDA GPU is available");
  int count = 0;
  MIXSOLVE_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw DeviceError(who + ": device (" + std::to_string(device) + ") is not a valid index (" + std::to_string(count) +
                      " devices)");
}

DeviceInfo device_info(int device) {
  detail::check_device_index("device_info", device);
  cudaDeviceProp prop{};
  MIXSOLVE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.name = prop.name;
  info.compute_capability = prop.major * 10 + prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  info.memory_bus_width = prop.memoryBusWidth;
  // CUDA 13's cudaDeviceProp has no clocks: they are attributes.
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_clock_khz, cudaDevAttrClockRate, device));
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  int v = 0;
  MIXSOLVE_CUDA_CHECK(cudaDriverGetVersion(&v));
  info.driver_version = cuda_version_string(v);
  MIXSOLVE_CUDA_CHECK(cudaRuntimeGetVersion(&v));
  info.runtime_version = cuda_version_string(v);
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  info.cublas_version =
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  return info;
}

}  // namespace mixsolve
