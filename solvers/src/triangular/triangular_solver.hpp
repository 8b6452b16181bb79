// SPDX-License-Identifier: BSD-3-Clause
// Internal: the bandwidth-bound triangular solver on the GPU (triangular_solve.cu), for any
// factors stored as a unit lower L and an upper U in one n x n array (the LU's; QR's R alone later).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"

namespace mixsolve::solvers_detail {

// X := U^-1 L^-1 X for up to kTriangularSolveMaxColumns vectors, with the unit lower L and upper
// U stored in the n x n `lu` (type F), in the arithmetic of V (X's type): F = float, V = double
// applies FP32 factors in FP64. Bandwidth-bound: blocks of rows proceed as soon as the blocks
// they depend on have published their part of X (tagged words), so the factor is read once for
// all the vectors. Construction inverts the diagonal blocks in V (2 n x 64 values); `lu` must
// stay unchanged while the solver is used, and one solver runs one solve at a time.
constexpr int kTriangularSolveMaxColumns = 4;
template <class F, class V = F>
class TriangularSolver {
 public:
  // With `memory`, the solver's buffers come from its pool (Context::allocate; `stream` must be
  // memory's).
  TriangularSolver(const F* lu, std::int64_t n, std::int64_t ld, cudaStream_t stream, Context* memory = nullptr);
  // x: n x columns, leading dimension ldx (ignored for one column).
  void solve(V* x, std::int64_t ldx, int columns, cudaStream_t stream);
  std::size_t bytes() const { return inverses_.bytes() + published_.bytes(); }

 private:
  template <int K>
  void launch(V* x, std::int64_t ldx, int columns, cudaStream_t stream);

  const F* lu_ = nullptr;
  std::int64_t n_ = 0, ld_ = 0;
  bool vector_copies_ = false;  // 16-byte copies of the factor's columns (aligned columns)
  unsigned tag_ = 0;            // the last launch's tag
  DeviceBuffer<V> inverses_;
  DeviceBuffer<unsigned long long> published_;  // X as published, with the launch's tag
  DeviceBuffer<unsigned> ticket_;
};

}  // namespace mixsolve::solvers_detail
