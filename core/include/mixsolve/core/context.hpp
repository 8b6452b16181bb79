// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Context: the device, the stream every operation is ordered on, the cuBLAS handle, a reusable
/// workspace and a pool of device memory that keeps what is freed for the next allocation. One
/// Context per thread of work; it is not thread-safe.
#pragma once

#include <cublas_v2.h>
#include <cusolverDn.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace mixsolve {

/// Priority of a Context's stream: work on a High stream is scheduled first when multiprocessors
/// free up (the LU's look-ahead panel runs on one, beside the trailing update).
/// Normal: the device's lowest (default) stream priority; High: its greatest.
enum class StreamPriority { Normal, High };

/// Where and how mixsolve's work runs: a GPU with its own non-blocking stream, cuBLAS handle,
/// workspace and memory pool, or (host_only()) no GPU at all, for the host backends.
///
/// Move-only; a moved-from Context behaves as a host-only one. Not thread-safe: use one Context
/// per thread of work.
///
/// The stream is non-blocking: it does not wait for the legacy default stream. Device inputs
/// written by other streams must be complete (or ordered before stream() with an event) when a
/// call starts; note that cudaMemcpy from pageable host memory may return before its copy has
/// landed, so synchronize (cudaDeviceSynchronize, or cudaStreamSynchronize(0)) after it.
class Context {
 public:
  /// A context on GPU `device` with its own stream (created non-blocking) and cuBLAS handle,
  /// which the constructor makes the current CUDA device.
  /// @param device   CUDA device index, in [0, number of devices).
  /// @param priority priority of the context's stream (StreamPriority).
  /// @throws DeviceError     if no CUDA GPU is available (use host_only() then), or if creating
  ///                         the stream or the cuBLAS handle fails.
  /// @throws InvalidArgument if `device` is not in [0, number of devices).
  explicit Context(int device = 0, StreamPriority priority = StreamPriority::Normal);
  /// A context for host backends only: no GPU is touched.
  /// @return a Context with has_device() false and device() -1.
  static Context host_only();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// Takes over `other`'s stream, handle, workspace and pool; `other` is left host-only.
  Context(Context&& other) noexcept;
  /// Releases this context's resources (as the destructor does), then takes over `other`'s;
  /// `other` is left host-only.
  Context& operator=(Context&& other) noexcept;
  /// Frees the workspace, waits for the stream, then destroys the pool (its memory is released
  /// once the last block is given back), the cuBLAS handle and the stream. Errors are ignored.
  ~Context();

  /// @return true for a context on a GPU, false for a host-only one.
  bool has_device() const { return has_device_; }
  /// @return the CUDA device index, or -1 for a host-only context.
  int device() const { return device_; }
  /// The stream every operation of this context is ordered on.
  /// @throws NotSupported on a host-only context.
  cudaStream_t stream() const;
  /// The context's cuBLAS handle, bound to stream().
  /// @throws NotSupported on a host-only context.
  cublasHandle_t cublas() const;
  /// The context's cuSOLVER dense handle, bound to stream(), created on the first call (its
  /// creation costs about a millisecond, as much as a small factorization). Like the rest of a
  /// Context, not for concurrent use from several threads.
  /// @throws NotSupported on a host-only context.
  /// @throws DeviceError  if cuSOLVER cannot create it.
  cusolverDnHandle_t cusolver() const;

  /// Device workspace of at least `bytes` bytes, ordered on stream(). It grows (stream-ordered
  /// free + allocation) only when a larger size is asked for, so hot paths allocate nothing after
  /// the first call of a given size. Contents are not preserved across calls.
  /// @param bytes the size needed; a new allocation is rounded up to a multiple of 1 MiB.
  /// @return device pointer to the workspace, valid until the next call that grows it (or the
  ///         context's destruction); null if nothing was ever allocated and `bytes` is 0.
  /// @throws NotSupported on a host-only context.
  /// @throws DeviceError  if the allocation fails.
  void* workspace(std::size_t bytes);
  /// @return the bytes the current workspace holds (0 before the first workspace() call).
  std::size_t workspace_capacity() const { return workspace_bytes_; }
  /// Frees the workspace, ordered on stream() (work queued before may still use it); the next
  /// workspace() call allocates anew. For callers that needed an unusually large one once (the
  /// Ozaki LU's emulated updates). Does nothing on a host-only context or without a workspace.
  /// @throws DeviceError if the free fails.
  void release_workspace();

  /// Waits until all work queued on stream() has completed; does nothing on a host-only context.
  /// @throws DeviceError if the stream reports an error.
  void synchronize() const;

  /// Device memory ordered on stream(), from a pool this context owns: a library's large
  /// temporaries (an LU's factors). A block given back with deallocate() stays in the pool for the
  /// next allocation instead of going back to the driver, so repeated solves of similar sizes map
  /// no memory: cudaFree of a 4.25 GiB buffer took 1.9-7.7 ms on an H100 (cudaMalloc 0.3 ms), and
  /// a solve at n = 32768 ~260 ms. The memory stays reserved until release_retained_memory() or
  /// the context's destruction. The pool is created on the first call.
  /// @param bytes the size of the block.
  /// @return device pointer, usable by work ordered after this call on stream(); null for
  ///         `bytes` == 0.
  /// @throws NotSupported on a host-only context.
  /// @throws DeviceError  when the device is out of memory, or a CUDA call fails.
  void* allocate(std::size_t bytes);
  /// Gives a block from allocate() back to the pool, ordered on stream(): work queued before it
  /// may still use p. Null, or a host-only context, does nothing.
  /// @param p a pointer returned by this context's allocate(), or null.
  void deallocate(void* p) noexcept;
  /// Waits for stream(), then hands every unused block of the pool back to the driver. Does
  /// nothing on a host-only context or before the first allocate().
  /// @throws DeviceError if a CUDA call fails.
  void release_retained_memory();
  /// release_retained_memory() where the pool's unused reserve is smaller than `bytes`: blocks
  /// that cannot serve a large allocation do not stay mapped beside it. Does nothing before the
  /// first allocate().
  /// @param bytes the size of the allocation about to be made.
  /// @throws DeviceError if a CUDA call fails.
  void make_room_for(std::size_t bytes);
  /// @return the device memory the pool holds now, in use or not (0 before the first allocate()).
  /// @throws DeviceError if the query fails.
  std::size_t reserved_memory_bytes() const;
  /// @return the part of reserved_memory_bytes() in use (0 before the first allocate()).
  /// @throws DeviceError if the query fails.
  std::size_t used_memory_bytes() const;

  /// Multiprocessors the work launched through this context should occupy (0, the default: all).
  /// The persistent corrected-SGEMM kernels size their grids by it and cuBLAS gets it as its SM
  /// count target, so that work on another stream (a look-ahead panel) finds room to run.
  /// @param count number of multiprocessors, >= 0; 0 means all.
  /// @throws InvalidArgument if `count` < 0.
  /// @throws NotSupported    on a host-only context.
  /// @throws DeviceError     if cuBLAS rejects the SM count target.
  void set_multiprocessor_limit(int count);
  /// @return the limit set by set_multiprocessor_limit() (0: all multiprocessors).
  int multiprocessor_limit() const { return multiprocessor_limit_; }

 private:
  struct HostOnlyTag {};
  explicit Context(HostOnlyTag) {}
  void release() noexcept;

  bool has_device_ = false;
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  mutable cusolverDnHandle_t cusolver_ = nullptr;  // created by cusolver()
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  int multiprocessor_limit_ = 0;
  cudaMemPool_t pool_ = nullptr;  // allocate(): created on first use, keeps what is freed
};

}  // namespace mixsolve
