// Context: the device, the stream every operation is ordered on, the cuBLAS handle and a reusable
// workspace. One Context per thread of work; it is not thread-safe.
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
};

}  // namespace mixsolve
