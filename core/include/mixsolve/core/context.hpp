// SPDX-License-Identifier: BSD-3-Clause
// Context: the device, the stream every operation is ordered on, the cuBLAS handle, a reusable
// workspace and a pool of device memory that keeps what is freed for the next allocation. One
// Context per thread of work; it is not thread-safe.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace mixsolve {

// Priority of a Context's stream: work on a High stream is scheduled first when multiprocessors
// free up (the LU's look-ahead panel runs on one, beside the trailing update).
enum class StreamPriority { Normal, High };

class Context {
 public:
  // A context on GPU `device` with its own stream. Throws DeviceError if there is no such GPU.
  explicit Context(int device = 0, StreamPriority priority = StreamPriority::Normal);
  // A context for host backends only: no GPU is touched.
  static Context host_only();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  ~Context();

  bool has_device() const { return has_device_; }
  int device() const { return device_; }
  cudaStream_t stream() const;  // throws NotSupported on a host-only context
  cublasHandle_t cublas() const;

  // Device workspace of at least `bytes` bytes, ordered on stream(). It grows (stream-ordered
  // free + allocation) only when a larger size is asked for, so hot paths allocate nothing after
  // the first call of a given size. Contents are not preserved across calls.
  void* workspace(std::size_t bytes);
  std::size_t workspace_capacity() const { return workspace_bytes_; }

  void synchronize() const;

  // Device memory ordered on stream(), from a pool this context owns: a library's large
  // temporaries (an LU's factors). A block given back with deallocate() stays in the pool for the
  // next allocation instead of going back to the driver, so repeated solves of similar sizes map
  // no memory: cudaFree of a 4.25 GiB buffer took 1.9-7.7 ms on an H100 (cudaMalloc 0.3 ms), and
  // a solve at n = 32768 ~260 ms. The memory stays reserved until release_retained_memory() or
  // the context's destruction. Throws NotSupported on a host-only context, DeviceError when the
  // device is out of memory.
  void* allocate(std::size_t bytes);
  void deallocate(void* p) noexcept;  // ordered on stream(): work queued before it may still use p
  // Waits for stream(), then hands every unused block of the pool back to the driver.
  void release_retained_memory();
  // release_retained_memory() where the pool's unused reserve is smaller than `bytes`: blocks
  // that cannot serve a large allocation do not stay mapped beside it.
  void make_room_for(std::size_t bytes);
  // Device memory the pool holds now, in use or not; of it, in use.
  std::size_t reserved_memory_bytes() const;
  std::size_t used_memory_bytes() const;

  // Multiprocessors the work launched through this context should occupy (0, the default: all).
  // The persistent corrected-SGEMM kernels size their grids by it and cuBLAS gets it as its SM
  // count target, so that work on another stream (a look-ahead panel) finds room to run.
  void set_multiprocessor_limit(int count);
  int multiprocessor_limit() const { return multiprocessor_limit_; }

 private:
  struct HostOnlyTag {};
  explicit Context(HostOnlyTag) {}
  void release() noexcept;

  bool has_device_ = false;
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  int multiprocessor_limit_ = 0;
  cudaMemPool_t pool_ = nullptr;  // allocate(): created on first use, keeps what is freed
};

}  // namespace mixsolve
