// SPDX-License-Identifier: BSD-3-Clause
// Internal: the device engine's phase profile (Tuning::profile), shared by the LU (lu/cuda/), the
// Cholesky (cholesky/cuda/) and the refinement's device operations (refinement/cuda/).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "mixsolve/core/cuda_check.hpp"
#include "tuning.hpp"

namespace mixsolve::solvers_detail {

// Where the device engine spends its time, for tuning: with Tuning::profile every phase is
// bracketed by CUDA events on its stream. The LU's phases go to stderr after each factorization
// (with look-ahead the panel overlaps the others, so they add up to more than the total); the
// solve phases (triangular solves, residuals, mat-vecs) when the engine ends. Off by default
// (events cost a little).
// A product's m x n x k in the timeline (-1: a phase that is not a product).
struct ProfileShape {
  long long m = -1, n = -1, k = -1;
};

class Profile {
 public:
  using Shape = ProfileShape;
  enum Phase {
    // the LU's
    Panel, RightSwaps, LeftSwaps, RowBlock, Update, PackL21, DiagonalBlock, PanelInverse,
    // the Cholesky's (cholesky/cuda/device_cholesky.cu)
    CholeskyLeaf, CholeskyLeafInverse, CholeskyLeafSolve, CholeskyProduct, kLuPhases,
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
  // "factorization,phase,stream,start_ms,stop_ms,m,n,k", the streams named as given here, m x n x k
  // a product's shape (start's `shape`; empty for other phases); factorization counts the process's
  // factorizations (each solve has its own engine and profile).
  void begin_factorization(cudaStream_t stream, std::vector<std::pair<cudaStream_t, std::string>> stream_names) {
    if (!enabled_) return;
    if (!origin_) MIXSOLVE_CUDA_CHECK(cudaEventCreate(&origin_));
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(origin_, stream));
    stream_names_ = std::move(stream_names);
  }
  void start(Phase phase, cudaStream_t stream, Shape shape = {}) {
    if (!enabled_) return;
    Record r{phase, stream, nullptr, nullptr, shape};
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
  void report_cholesky(double total_seconds) {
    if (!enabled_) return;
    write_timeline();
    collect();
    std::fprintf(stderr,
                 "Cholesky profile: total %.2f ms; %d leaves %.2f, their inverses %.2f, %d leaf solves %.2f, %d products "
                 "%.2f ms\n",
                 1e3 * total_seconds, count_[CholeskyLeaf], ms_[CholeskyLeaf], ms_[CholeskyLeafInverse], count_[CholeskyLeafSolve],
                 ms_[CholeskyLeafSolve], count_[CholeskyProduct], ms_[CholeskyProduct]);
    for (int p = 0; p < kLuPhases; ++p) ms_[p] = count_[p] = 0;
  }

 private:
  struct Record {
    Phase phase;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    Shape shape;
  };
  static void destroy(Record& r) {
    cudaEventDestroy(r.start);
    cudaEventDestroy(r.stop);
  }
  void write_timeline() {
    if (timeline_path_.empty() || !origin_) return;
    static const char* const names[kPhases] = {"panel",          "right swaps",   "left swaps", "U12",
                                               "update",         "pack L21",      "diagonal block",
                                               "panel inverse",  "cholesky leaf", "cholesky leaf inverse", "cholesky leaf solve",
                                               "cholesky product", "solve",       "residual",   "mat-vec"};
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
      std::fprintf(out, "%d,%s,%s,%.4f,%.4f,", factorization, names[r.phase], stream.c_str(), begin, end);
      if (r.shape.m >= 0)
        std::fprintf(out, "%lld,%lld,%lld\n", r.shape.m, r.shape.n, r.shape.k);
      else
        std::fprintf(out, ",,\n");
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

}  // namespace mixsolve::solvers_detail
