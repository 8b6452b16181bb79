// SPDX-License-Identifier: BSD-3-Clause
// RAII device memory. Allocation and copies are checked; copies are ordered on the given stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) MIXSOLVE_CUDA_CHECK(cudaMalloc(&data_, count_ * sizeof(T)));
  }
  // From ctx's pool, ordered on ctx.stream() (Context::allocate), and given back there: work on
  // other streams must be ordered after the allocation and before the destruction. ctx must
  // outlive the buffer.
  DeviceBuffer(Context& ctx, std::size_t count) : count_(count), ctx_(&ctx) {
    if (count_ > 0) data_ = static_cast<T*>(ctx.allocate(count_ * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer() {
    if (!data_) return;
    if (ctx_) ctx_->deallocate(data_);
    else cudaFree(data_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void copy_from_host(const T* host, std::size_t count, cudaStream_t stream = nullptr) {
    check_count(count);
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void copy_from_host(const std::vector<T>& host, cudaStream_t stream = nullptr) {
    copy_from_host(host.data(), host.size(), stream);
  }
  void copy_to_host(T* host, std::size_t count, cudaStream_t stream = nullptr) const {
    check_count(count);
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  std::vector<T> to_host(cudaStream_t stream = nullptr) const {
    std::vector<T> out(count_);
    copy_to_host(out.data(), count_, stream);
    return out;
  }

 private:
  void check_count(std::size_t count) const {
    if (count > count_)
      throw InvalidArgument("DeviceBuffer copy: count (" + std::to_string(count) +
                            ") > buffer size (" + std::to_string(count_) + ")");
  }
  void swap(DeviceBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    std::swap(ctx_, o.ctx_);
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
  Context* ctx_ = nullptr;  // pooled (Context::allocate), else cudaMalloc
};

}  // namespace mixsolve
