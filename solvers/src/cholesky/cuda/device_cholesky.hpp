// SPDX-License-Identifier: BSD-3-Clause
// Internal: the device engine's Cholesky A = L L^T (lu/cuda/device_engine.cu), recursive so that
// nearly all of its arithmetic runs as large GEMMs on the precision's update backend:
//   factor(A) : A11 = L11 L11^T (factor), L21 = A21 L11^-T (solve_right), A22 -= L21 L21^T
//               (update_lower), factor(A22),
// with leaves of kLeafColumns columns factored by one thread block in shared memory. The
// triangular solve L21 = A21 L11^-T recurses the same way down to cuBLAS trsm on kLeafColumns
// columns, and the symmetric update down to diagonal blocks of kUpdateLeafRows rows, each one
// GEMM (its upper half computed too: the strict upper triangle is the factors' scratch, written
// over by the LU form). Only the lower triangle of A is read.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::solvers_detail::device_cholesky {

// Columns of a leaf: an FP64 leaf of 128 x 129 values takes 132 KB of shared memory.
constexpr std::int64_t kLeafColumns = 128;
// Diagonal blocks of the symmetric update computed as one GEMM: the upper halves computed in
// vain cost kUpdateLeafRows / (2 m) of an m x m update.
constexpr std::int64_t kUpdateLeafRows = 1024;
// The inner dimension of one update product at most: a longer one is cut into chunks, each
// accumulated into C, so that a backend's workspace (fp16x3's split operands, (m + n) k 4 bytes)
// stays near (m + n) 4096 x 4 bytes instead of growing with n^2 (the top update's k is n / 2).
constexpr std::int64_t kMaxUpdateInner = 4096;
// Leaves the host may run ahead of the GPU: it reads each leaf's verdict that many leaves later,
// so a Cholesky that breaks down stops soon after, while the GPU's queue never runs dry.
constexpr std::size_t kVerdictLag = 2;

// Where a Cholesky stopped (column -1: it did not), and the pivot that was not positive.
struct Breakdown {
  std::int64_t column = -1;
  double pivot = 0;
};

// The first pair (i, j), i > j, in column-major order with a(i, j) != a(j, i) for the n x n
// column-major a (leading dimension lda), or {-1, -1}: one pass in 32 x 32 tile pairs on `stream`,
// which it synchronises. first: one device word of scratch.
std::pair<std::int64_t, std::int64_t> first_asymmetric_pair(const double* a, std::int64_t lda, std::int64_t n,
                                                            unsigned long long* first, cudaStream_t stream);

// pivots[k] = k for k < n: the row interchanges of factors without any (a Cholesky's LU form).
void identity_pivots(int* pivots, std::int64_t n, cudaStream_t stream);

class DeviceCholesky {
 public:
  explicit DeviceCholesky(Context& ctx);
  ~DeviceCholesky();
  DeviceCholesky(const DeviceCholesky&) = delete;
  DeviceCholesky& operator=(const DeviceCholesky&) = delete;

  // Factors the n x n column-major f (leading dimension ld, 16-byte aligned columns) in place on
  // ctx's stream, L in the lower triangle; the trailing updates on `update` (FP32 data for
  // T = float, FP64 for double) with `parameters`. Stops at the first pivot that is not positive
  // (NaN included) and returns where; synchronises once at the end.
  template <class T>
  Breakdown run(T* f, std::int64_t n, std::int64_t ld, const gemm::Backend& update, const gemm::Parameters& parameters);

  // Rewrites the factor L in f as the LU factors (L D^-1)(D L^T), D = diag(L) (engine.hpp).
  template <class T>
  void to_lu_form(T* f, std::int64_t n, std::int64_t ld);

  std::size_t bytes() const { return verdict_.bytes() + pivot_.bytes(); }

 private:
  template <class T>
  void factor(T* a, std::int64_t m, std::int64_t ld, std::int64_t column0);
  template <class T>
  void solve_right(const T* l, std::int64_t columns, T* b, std::int64_t rows, std::int64_t ld);
  template <class T>
  void update_lower(T* c, std::int64_t m, const T* a, std::int64_t k, std::int64_t ld);
  template <class T>
  void gemm(gemm::Op op_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
            std::int64_t ld);
  void watch_verdicts();

  Context& ctx_;
  const gemm::Backend* update_ = nullptr;
  gemm::Parameters parameters_;
  bool stopped_ = false;
  DeviceBuffer<long long> verdict_;  // the first column whose pivot was not positive, or -1
  DeviceBuffer<double> pivot_;       // that pivot
  long long* pinned_verdicts_ = nullptr;  // a ring of kVerdictLag + 1 copies of verdict_
  std::deque<std::pair<cudaEvent_t, long long*>> pending_;
  cudaEvent_t events_[kVerdictLag + 1] = {};
  std::size_t leaf_count_ = 0;
};

}  // namespace mixsolve::solvers_detail::device_cholesky
