// SPDX-License-Identifier: BSD-3-Clause
// Internal: host-side helpers of the device engine (device_engine.cu includes this once): the
// phase profile, stream ordering, the multiprocessor limit, the block-row solves' buffers, plain
// cuBLAS products.
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
#include "tuning.hpp"

namespace mixsolve::solvers_detail::device_lu {

// Where the device engine spends its time, for tuning: with Tuning::profile every phase is
// bracketed by CUDA events on its stream. The LU's phases go to stderr after each factorization (with look-ahead the panel overlaps the others, so they add up to
// more than the total); the solve phases (triangular solves, residuals, mat-vecs) when the engine
// ends. Off by default (events cost a little).
class Profile {
 public:
  enum Phase {
    Panel, RightSwaps, LeftSwaps, RowBlock, Update, PackL21, DiagonalBlock, PanelInverse, kLuPhases,
    Solve = kLuPhases, Residual, Multiply, kPhases
  };
  Profile() : enabled_(tuning().profile) {
    if (enabled_) timeline_path_ = tuning().timeline_path;
  }
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  ~Profile() {
    try {
      if (enabled_ && count_[Solve] + count_[Residual] + count_[Multiply] > 0) {
        collect();
        std::fprintf(stderr, "solve profile: %d solves %.2f ms, %d residuals %.2f ms, %d mat-vecs %.2f ms\n",
                     count_[Solve], ms_[Solve], count_[Residual], ms_[Residual], count_[Multiply], ms_[Multiply]);
      }
    } catch (...) {  // a profile never ends the program
    }
    for (auto& r : records_) destroy(r);
    if (origin_) cudaEventDestroy(origin_);
  }
  bool enabled() const { return enabled_; }
  // With Tuning::timeline_path as well, each LU phase's start and end (ms since this call,
  // which marks the factorization's start on `stream`) are appended to the file as CSV lines
  // "factorization,phase,stream,start_ms,stop_ms", the streams named as given here; factorization
  // counts the process's factorizations (each solve has its own engine and profile).
  void begin_factorization(cudaStream_t stream, std::vector<std::pair<cudaStream_t, std::string>> stream_names) {
    if (!enabled_) return;
    if (!origin_) MIXSOLVE_CUDA_CHECK(cudaEventCreate(&origin_));
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(origin_, stream));
    stream_names_ = std::move(stream_names);
  }
  void start(Phase phase, cudaStream_t stream) {
    if (!enabled_) return;
    Record r{phase, stream, nullptr, nullptr};
    MIXSOLVE_CUDA_CHECK(cudaEventCreate(&r.start));
    MIXSOLVE_CUDA_CHECK(cudaEventCreate(&r.stop));
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(r.start, stream));
    open_[phase] = records_.size();
    records_.push_back(r);
    ++count_[phase];
  }
  void stop(Phase phase, cudaStream_t stream) {
    if (enabled_) MIXSOLVE_CUDA_CHECK(cudaEventRecord(records_[open_[phase]].stop, stream));
  }
  void report_factorization(double total_seconds) {
    if (!enabled_) return;
    write_timeline();
    collect();
    std::fprintf(stderr,
                 "LU profile: total %.2f ms; panel %.2f, right swaps %.2f, left swaps %.2f, U12 %.2f, "
                 "trailing update %.2f, L21 packing %.2f ms\n",
                 1e3 * total_seconds, ms_[Panel], ms_[RightSwaps], ms_[LeftSwaps], ms_[RowBlock], ms_[Update],
                 ms_[PackL21]);
    if (count_[DiagonalBlock] > 0)  // a reused row order: the panels' one-block diagonal kernels
      std::fprintf(stderr, "LU profile: of the panels, %d diagonal blocks %.2f ms\n", count_[DiagonalBlock],
                   ms_[DiagonalBlock]);
    if (count_[PanelInverse] > 0)  // partial pivoting: L11^-1 after each panel kernel
      std::fprintf(stderr, "LU profile: of the panels, %d inverses of L11 %.2f ms\n", count_[PanelInverse],
                   ms_[PanelInverse]);
    for (int p = 0; p < kLuPhases; ++p) ms_[p] = count_[p] = 0;
  }

 private:
  struct Record {
    Phase phase;
    cudaStream_t stream;
    cudaEvent_t start, stop;
  };
  static void destroy(Record& r) {
    cudaEventDestroy(r.start);
    cudaEventDestroy(r.stop);
  }
  void write_timeline() {
    if (timeline_path_.empty() || !origin_) return;
    static const char* const names[kPhases] = {"panel",          "right swaps",   "left swaps", "U12",
                                               "update",         "pack L21",      "diagonal block",
                                               "panel inverse",  "solve",         "residual",   "mat-vec"};
    MIXSOLVE_CUDA_CHECK(cudaDeviceSynchronize());
    static std::atomic<int> factorizations{0};
    const int factorization = factorizations++;
    std::FILE* out = std::fopen(timeline_path_.c_str(), "a");
    if (!out) return;
    for (const Record& r : records_) {
      std::string stream = "other";
      for (const auto& [handle, name] : stream_names_)
        if (handle == r.stream) stream = name;
      float begin = 0, end = 0;
      MIXSOLVE_CUDA_CHECK(cudaEventElapsedTime(&begin, origin_, r.start));
      MIXSOLVE_CUDA_CHECK(cudaEventElapsedTime(&end, origin_, r.stop));
      std::fprintf(out, "%d,%s,%s,%.4f,%.4f\n", factorization, names[r.phase], stream.c_str(), begin, end);
    }
    std::fclose(out);
  }
  // Adds the finished records' times to ms_ and drops them.
  void collect() {
    MIXSOLVE_CUDA_CHECK(cudaDeviceSynchronize());
    for (auto& r : records_) {
      float t = 0;
      MIXSOLVE_CUDA_CHECK(cudaEventElapsedTime(&t, r.start, r.stop));
      ms_[r.phase] += t;
      destroy(r);
    }
    records_.clear();
  }
  bool enabled_;
  std::string timeline_path_;
  cudaEvent_t origin_ = nullptr;
  std::vector<std::pair<cudaStream_t, std::string>> stream_names_;
  std::vector<Record> records_;
  std::size_t open_[kPhases] = {};
  double ms_[kPhases] = {};
  int count_[kPhases] = {};
};

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
