// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// RAII device memory. Allocation and copies are checked; copies are ordered on the given stream.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"

namespace mixsolve {

/// An owned array of `count` elements of T in device memory, from cudaMalloc or from a Context's
/// pool (Context::allocate); freed when the buffer is destroyed. Move-only.
/// @tparam T a trivially copyable element type.
template <class T>
class DeviceBuffer {
 public:
  /// An empty buffer: data() null, size() 0.
  DeviceBuffer() = default;
  /// `count` uninitialised elements from cudaMalloc (nothing allocated for 0).
  /// @param count number of elements.
  /// @throws DeviceError if the allocation fails.
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) MIXSOLVE_CUDA_CHECK(cudaMalloc(&data_, count_ * sizeof(T)));
  }
  /// `count` uninitialised elements from ctx's pool, ordered on ctx.stream() (Context::allocate),
  /// and given back there: work on other streams must be ordered after the allocation and before
  /// the destruction. ctx must outlive the buffer.
  /// @param ctx   a Context with a GPU; it must outlive the buffer.
  /// @param count number of elements (nothing allocated for 0).
  /// @throws NotSupported if ctx is host-only (and count > 0).
  /// @throws DeviceError  if the device is out of memory.
  DeviceBuffer(Context& ctx, std::size_t count) : count_(count), ctx_(&ctx) {
    if (count_ > 0) data_ = static_cast<T*>(ctx.allocate(count_ * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Takes over `other`'s memory; `other` is left empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  /// Frees this buffer's memory and takes over `other`'s; `other` is left empty.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  /// Gives pooled memory back to its Context (ordered on its stream) or frees cudaMalloc memory
  /// with cudaFree; errors are ignored.
  ~DeviceBuffer() {
    if (!data_) return;
    if (ctx_) ctx_->deallocate(data_);
    else cudaFree(data_);
  }

  /// @return the device pointer to the first element (null for an empty buffer).
  T* data() { return data_; }
  /// @return the device pointer to the first element (null for an empty buffer).
  const T* data() const { return data_; }
  /// @return the number of elements.
  std::size_t size() const { return count_; }
  /// @return size() * sizeof(T).
  std::size_t bytes() const { return count_ * sizeof(T); }

  /// Sets every byte of the buffer to zero, ordered on `stream`; returns without waiting.
  /// @param stream CUDA stream of the memset (null: the default stream).
  /// @throws DeviceError if the memset cannot be queued.
  void set_zero(cudaStream_t stream = nullptr) {
    if (count_ > 0) MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(data_, 0, bytes(), stream));
  }

  /// Copies `count` elements from host memory to the start of the buffer, ordered on `stream`,
  /// and waits for `stream` before returning.
  /// @param host   host pointer to `count` elements; read.
  /// @param count  number of elements, at most size().
  /// @param stream CUDA stream of the copy (null: the default stream).
  /// @throws InvalidArgument if count > size().
  /// @throws DeviceError     if the copy or the synchronisation fails.
  void copy_from_host(const T* host, std::size_t count, cudaStream_t stream = nullptr) {
    check_count(count);
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  /// Copies all of `host` to the start of the buffer, as copy_from_host(host.data(),
  /// host.size(), stream).
  /// @param host   the elements to copy; host.size() at most size().
  /// @param stream CUDA stream of the copy (null: the default stream).
  /// @throws InvalidArgument if host.size() > size().
  /// @throws DeviceError     if the copy or the synchronisation fails.
  void copy_from_host(const std::vector<T>& host, cudaStream_t stream = nullptr) {
    copy_from_host(host.data(), host.size(), stream);
  }
  /// Copies the first `count` elements of the buffer to host memory, ordered on `stream`, and
  /// waits for `stream` before returning.
  /// @param host   host pointer to room for `count` elements; written.
  /// @param count  number of elements, at most size().
  /// @param stream CUDA stream of the copy (null: the default stream).
  /// @throws InvalidArgument if count > size().
  /// @throws DeviceError     if the copy or the synchronisation fails.
  void copy_to_host(T* host, std::size_t count, cudaStream_t stream = nullptr) const {
    check_count(count);
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  /// Copies the whole buffer to a new host vector (copy_to_host, which waits for `stream`).
  /// @param stream CUDA stream of the copy (null: the default stream).
  /// @return a vector of size() elements.
  /// @throws DeviceError if the copy or the synchronisation fails.
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
