// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/core/context.hpp"

#include <cstdint>
#include <string>
#include <utility>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/gpu.hpp"

namespace mixsolve {

Context::Context(int device, StreamPriority priority) {
  if (!gpu_available()) throw DeviceError("Context: no CUDA GPU is available (use Context::host_only())");
  int count = 0;
  MIXSOLVE_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw InvalidArgument("Context: device (" + std::to_string(device) + ") not in [0, " +
                          std::to_string(count) + ")");
  device_ = device;
  MIXSOLVE_CUDA_CHECK(cudaSetDevice(device_));
  int least = 0, greatest = 0;  // numerically: greatest priority is the lowest number
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  MIXSOLVE_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking,
                                                   priority == StreamPriority::High ? greatest : least));
  cublasStatus_t st = cublasCreate(&cublas_);
  if (st != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(stream_);
    MIXSOLVE_CUBLAS_CHECK(st);
  }
  MIXSOLVE_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  has_device_ = true;
}

Context Context::host_only() { return Context(HostOnlyTag{}); }

Context::Context(Context&& other) noexcept { *this = std::move(other); }

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    release();
    has_device_ = std::exchange(other.has_device_, false);
    device_ = std::exchange(other.device_, -1);
    stream_ = std::exchange(other.stream_, nullptr);
    cublas_ = std::exchange(other.cublas_, nullptr);
    cusolver_ = std::exchange(other.cusolver_, nullptr);
    workspace_ = std::exchange(other.workspace_, nullptr);
    workspace_bytes_ = std::exchange(other.workspace_bytes_, 0);
    multiprocessor_limit_ = std::exchange(other.multiprocessor_limit_, 0);
    pool_ = std::exchange(other.pool_, nullptr);
  }
  return *this;
}

Context::~Context() { release(); }

void Context::release() noexcept {
  if (!has_device_) return;
  cudaSetDevice(device_);
  if (workspace_) cudaFreeAsync(workspace_, stream_);
  cudaStreamSynchronize(stream_);
  if (pool_) cudaMemPoolDestroy(pool_);  // released once its last block is given back
  pool_ = nullptr;
  if (cusolver_) cusolverDnDestroy(cusolver_);
  cusolver_ = nullptr;
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  has_device_ = false;
}

cudaStream_t Context::stream() const {
  if (!has_device_) throw NotSupported("Context::stream: this is a host-only context");
  return stream_;
}

cublasHandle_t Context::cublas() const {
  if (!has_device_) throw NotSupported("Context::cublas: this is a host-only context");
  return cublas_;
}

cusolverDnHandle_t Context::cusolver() const {
  if (!has_device_) throw NotSupported("Context::cusolver: this is a host-only context");
  if (!cusolver_) {
    MIXSOLVE_CUDA_CHECK(cudaSetDevice(device_));  // cuSOLVER creates its handle on the current device
    cusolverDnHandle_t handle = nullptr;
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&handle));
    const cusolverStatus_t st = cusolverDnSetStream(handle, stream_);
    if (st != CUSOLVER_STATUS_SUCCESS) {
      cusolverDnDestroy(handle);
      MIXSOLVE_CUSOLVER_CHECK(st);
    }
    cusolver_ = handle;
  }
  return cusolver_;
}

void* Context::workspace(std::size_t bytes) {
  if (!has_device_) throw NotSupported("Context::workspace: this is a host-only context");
  if (bytes <= workspace_bytes_) return workspace_;
  MIXSOLVE_CUDA_CHECK(cudaSetDevice(device_));
  if (workspace_) MIXSOLVE_CUDA_CHECK(cudaFreeAsync(workspace_, stream_));
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  // Round up to 1 MiB so that a slowly growing sequence of sizes does not reallocate each time.
  const std::size_t rounded = (bytes + (std::size_t{1} << 20) - 1) & ~((std::size_t{1} << 20) - 1);
  MIXSOLVE_CUDA_CHECK(cudaMallocAsync(&workspace_, rounded, stream_));
  workspace_bytes_ = rounded;
  return workspace_;
}

void Context::release_workspace() {
  if (!has_device_ || !workspace_) return;
  MIXSOLVE_CUDA_CHECK(cudaSetDevice(device_));
  MIXSOLVE_CUDA_CHECK(cudaFreeAsync(workspace_, stream_));
  workspace_ = nullptr;
  workspace_bytes_ = 0;
}

void* Context::allocate(std::size_t bytes) {
  if (!has_device_) throw NotSupported("Context::allocate: this is a host-only context");
  if (bytes == 0) return nullptr;
  MIXSOLVE_CUDA_CHECK(cudaSetDevice(device_));
  if (!pool_) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device_;
    MIXSOLVE_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    // Freed blocks are never trimmed at synchronisations: only release_retained_memory() trims.
    std::uint64_t keep = UINT64_MAX;
    MIXSOLVE_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  void* p = nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, stream_);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw DeviceError("Context::allocate: out of device memory for " + std::to_string(bytes) + " bytes (" +
                      std::to_string(reserved_memory_bytes()) + " reserved by this context's pool)");
  }
  MIXSOLVE_CUDA_CHECK(e);
  return p;
}

void Context::deallocate(void* p) noexcept {
  if (p && has_device_) cudaFreeAsync(p, stream_);
}

void Context::release_retained_memory() {
  if (!has_device_ || !pool_) return;
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  MIXSOLVE_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
}

void Context::make_room_for(std::size_t bytes) {
  if (pool_ && reserved_memory_bytes() - used_memory_bytes() < bytes) release_retained_memory();
}

namespace {
std::size_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  if (!pool) return 0;
  std::uint64_t bytes = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemPoolGetAttribute(pool, attribute, &bytes));
  return std::size_t(bytes);
}
}  // namespace

std::size_t Context::reserved_memory_bytes() const { return pool_attribute(pool_, cudaMemPoolAttrReservedMemCurrent); }
std::size_t Context::used_memory_bytes() const { return pool_attribute(pool_, cudaMemPoolAttrUsedMemCurrent); }

void Context::set_multiprocessor_limit(int count) {
  if (count < 0)
    throw InvalidArgument("Context::set_multiprocessor_limit: count (" + std::to_string(count) + ") < 0");
  if (!has_device_) throw NotSupported("Context::set_multiprocessor_limit: this is a host-only context");
  MIXSOLVE_CUBLAS_CHECK(cublasSetSmCountTarget(cublas_, count));
  multiprocessor_limit_ = count;
}

void Context::synchronize() const {
  if (has_device_) MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace mixsolve
