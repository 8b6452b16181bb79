// SPDX-License-Identifier: BSD-3-Clause
// Internal: the device engine's Cholesky A = L L^T (lu/cuda/device_engine.cu) by the recursion of
// cholesky/recursive_cholesky.hpp, which the host engine follows too: leaves of
// kCholeskyDeviceLeaf columns factored by one thread block in shared memory, each leaf's L11^-1
// (the LU's triangle inverse, in FP64 arithmetic) so that its triangular solves b L11^-T are
// GEMMs in T's own arithmetic, the products on the precision's GEMM backend. Also the rewrite
// into LU form and the symmetry check of A.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include "cholesky/recursive_cholesky.hpp"
#include "device_profile.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::solvers_detail::device_cholesky {

// Leaves the host may run ahead of the GPU: it reads each leaf's verdict that many leaves later,
// so a Cholesky that breaks down stops soon after, while the GPU's queue never runs dry.
constexpr std::size_t kVerdictLag = 2;

// The shortest inner dimension of an update product on the precision's backend, for precisions
// whose products are at least as accurate as the factors' own arithmetic (halfhalf, tf32tf32,
// fp16x3 on FP32 factors; Ozaki on FP64 ones): shorter ones take cuBLAS's GEMM in that arithmetic,
// which computes them as accurately (Tuning::cholesky_tensor_min_inner overrides it). halfhalf's
// products cost at least ~41 us each on an H200 (its packing launches), 3-36 TFLOP/s below
// k = 1024 at the recursion's shapes (docs/solver.md). FP16, BF16 and TF32 keep every product on
// their backend: SGEMM would make their factors more accurate than the rung says. The host model
// keeps every product on the precision's model.
constexpr std::int64_t kCholeskyTensorMinInner = 1024;

// Where a Cholesky stopped (column -1: it did not), and the pivot that was not positive, where
// known (cuSOLVER's dpotrf reports the column only).
struct Breakdown {
  std::int64_t column = -1;
  double pivot = 0;
  bool pivot_known = true;
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
  // profile: the engine's phase profile (Tuning::profile), which gets the leaves, the leaves'
  // solves and the products.
  DeviceCholesky(Context& ctx, Profile& profile);
  ~DeviceCholesky();
  DeviceCholesky(const DeviceCholesky&) = delete;
  DeviceCholesky& operator=(const DeviceCholesky&) = delete;

  // Factors the n x n column-major f (leading dimension ld, 16-byte aligned columns) in place on
  // ctx's stream, L in the lower triangle; the trailing updates on `update` (FP32 data for
  // T = float, FP64 for double) with `parameters`, their inner dimension cut into chunks of at
  // most `inner_chunk` (update_inner_chunk); products shorter than `tensor_min_inner` on cuBLAS's
  // GEMM in T (0: none; kCholeskyTensorMinInner). Stops at the first pivot that is not positive
  // (NaN included) and returns where; synchronises once at the end.
  template <class T>
  Breakdown run(T* f, std::int64_t n, std::int64_t ld, std::int64_t inner_chunk, const gemm::Backend& update,
                const gemm::Parameters& parameters, std::int64_t tensor_min_inner);

  // Rewrites the factor L in f as the LU factors (L D^-1)(D L^T), D = diag(L) (engine.hpp).
  template <class T>
  void to_lu_form(T* f, std::int64_t n, std::int64_t ld);

  std::size_t bytes() const { return verdict_.bytes() + pivot_.bytes(); }
  // The buffers the last run() held while it ran and gave back at its end (the leaves' inverses,
  // the solves' scratch), for the engine's peak.
  std::size_t transient_bytes() const { return transient_bytes_; }

 private:
  template <class T>
  friend struct DeviceCholeskyOps;  // the recursion's operations (device_cholesky.cu)
  void watch_verdicts();

  Context& ctx_;
  Profile& profile_;
  const gemm::Backend* update_ = nullptr;
  gemm::Parameters parameters_;
  std::int64_t inner_chunk_ = kMaxUpdateInner;
  std::int64_t tensor_min_inner_ = kCholeskyTensorMinInner;
  bool stopped_ = false;
  DeviceBuffer<long long> verdict_;  // the first column whose pivot was not positive, or -1
  DeviceBuffer<double> pivot_;       // that pivot
  // Each leaf's L11^-1 (kCholeskyDeviceLeaf^2 entries of T a leaf), and the product b L11^-T before
  // it goes back into b (rows x leaf entries of T): as doubles, room for either type.
  DeviceBuffer<double> inverses_, solve_scratch_;
  std::size_t transient_bytes_ = 0;
  const void* factors_ = nullptr;  // run()'s f: a leaf's index from its diagonal block's address
  long long* pinned_verdicts_ = nullptr;  // a ring of kVerdictLag + 1 copies of verdict_
  std::deque<std::pair<cudaEvent_t, long long*>> pending_;
  cudaEvent_t events_[kVerdictLag + 1] = {};
  std::size_t leaf_count_ = 0;
};

}  // namespace mixsolve::solvers_detail::device_cholesky
