#include "mixsolve/core/context.hpp"

#include <string>
#include <utility>

#include "mixsolve/core/cuda_check.hpp"
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
    workspace_ = std::exchange(other.workspace_, nullptr);
    workspace_bytes_ = std::exchange(other.workspace_bytes_, 0);
    multiprocessor_limit_ = std::exchange(other.multiprocessor_limit_, 0);
  }
  return *this;
}

Context::~Context() { release(); }

void Context::release() noexcept {
  if (!has_device_) return;
  cudaSetDevice(device_);
  if (workspace_) cudaFreeAsync(workspace_, stream_);
  cudaStreamSynchronize(stream_);
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
