// SPDX-License-Identifier: BSD-3-Clause
// Internal: host-side helpers of the device LU (device_engine.cu, blocked_lu.cu): stream
// ordering, the multiprocessor limit, the block-row solves' buffers, products in the factors' own
// arithmetic.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/gemm/backend.hpp"
#include "precisions.hpp"
#include "device_profile.hpp"
#include "tuning.hpp"

namespace mixsolve::solvers_detail::device_lu {

// An event that orders work between the LU's streams (no timing).
class StreamEvent {
 public:
  StreamEvent() { MIXSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  ~StreamEvent() { cudaEventDestroy(event_); }
  // `waiter` runs what is enqueued next only after what `signaller` has enqueued so far.
  void order(cudaStream_t signaller, cudaStream_t waiter) {
    record(signaller);
    wait_in(waiter);
  }
  // The same in two parts: record marks what `signaller` has enqueued so far; wait_in makes
  // `waiter` wait for the latest record.
  void record(cudaStream_t signaller) { MIXSOLVE_CUDA_CHECK(cudaEventRecord(event_, signaller)); }
  void wait_in(cudaStream_t waiter) { MIXSOLVE_CUDA_CHECK(cudaStreamWaitEvent(waiter, event_, 0)); }
  // The host waits for the latest record.
  void wait_on_host() { MIXSOLVE_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// Restores a Context's multiprocessor limit when the factorization ends, however it ends.
class MultiprocessorLimitScope {
 public:
  MultiprocessorLimitScope(Context& ctx, int limit) : ctx_(ctx), saved_(ctx.multiprocessor_limit()) {
    ctx.set_multiprocessor_limit(limit);
  }
  ~MultiprocessorLimitScope() {
    try {
      ctx_.set_multiprocessor_limit(saved_);
    } catch (...) {
    }
  }

 private:
  Context& ctx_;
  int saved_;
};

// What the block-row solves U12 = L11^-1 A12 of factor_blocked use, for factors of type T.
template <class T>
struct BlockRowBuffers {
  DeviceBuffer<T> l11_inverses;                   // each panel's L11^-1 (factor_panel)
  DeviceBuffer<T> u12_copy_chain, u12_copy_bulk;  // A12 before U12 = L11^-1 A12 overwrites it
  // Panels in a given row order (factor_panel_in_order): U11^-1, and A21 before L21 = A21 U11^-1
  // overwrites it.
  DeviceBuffer<T> u11_inverse, l21_copy;
  std::size_t bytes() const {
    return l11_inverses.bytes() + u12_copy_chain.bytes() + u12_copy_bulk.bytes() + u11_inverse.bytes() +
           l21_copy.bytes();
  }
};

// c = op_a(a) b (alpha 1, beta 0) in T's own arithmetic: the FP32 or FP64 precision's update
// backend (cublas-sgemm, cublas-dgemm), on ctx's stream.
template <class T>
void exact_product(Context& ctx, gemm::Op op_a, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                   std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  static const gemm::Backend& backend = device_update_backend(std::is_same_v<T, float> ? Precision::FP32 : Precision::FP64);
  backend.run(ctx, gemm::GemmArgs<T>{op_a, gemm::Op::N, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc, false});
}

}  // namespace mixsolve::solvers_detail::device_lu
