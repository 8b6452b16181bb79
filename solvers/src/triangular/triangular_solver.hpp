// SPDX-License-Identifier: BSD-3-Clause
// Internal: the bandwidth-bound triangular solver on the GPU (triangular_solve.cu), for any
// factors stored as a unit lower L and an upper U in one n x n array (the LU's; QR's R alone later).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/hd.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::solvers_detail {

// X := U^-1 L^-1 X for up to kTriangularSolveMaxColumns vectors, with the unit lower L and upper
// U stored in the n x n `lu` (type F), in the arithmetic of V (X's type): F = float, V = double
// applies FP32 factors in FP64. Bandwidth-bound: blocks of rows proceed as soon as the blocks
// they depend on have published their part of X (tagged words), so the factor is read once for
// all the vectors. Construction inverts the diagonal blocks in V (2 n x 64 values); `lu` must
// stay unchanged while the solver is used, and one solver runs one solve at a time.
constexpr int kTriangularSolveMaxColumns = 4;

// A factor entry stored in the SLFP format F (formats/slfp.hpp) as its container's bytes, least
// significant first, the entries packed one after another (array of structures): a column of the
// factor is then one contiguous stretch, which the solver copies in 16-byte pieces, whatever the
// container's width (Mukunoki & Imamura's (2016) word planes serve kernels that load values into registers; here
// the bytes go to shared memory whole).
template <class F>
struct PackedSlfp {
  using Format = F;
  unsigned char bytes[F::kContainerBits / 8];
};

// The value of a factor entry in V: a plain float or double converted, a packed one decoded.
template <class V, class T>
MIXSOLVE_HD V widen(T x) {
  return V(x);
}
template <class V, class F>
MIXSOLVE_HD V widen(PackedSlfp<F> x) {
  typename F::Bits stored = 0;
  for (int i = 0; i < int(sizeof x.bytes); ++i) stored |= typename F::Bits(x.bytes[i]) << (8 * i);
  return V(F::decode(stored));
}

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

// The FP32 factors of an LU stored again in an SLFP format of at most 32 bits (PackedSlfp, rounded
// to nearest), with a TriangularSolver that reads them in FP64 arithmetic: the refinement's
// preconditioner then reads 3 (2) bytes per entry instead of 4 (SolveOptions::factor_storage).
// One vector per launch: several go one after another.
class PackedFactors {
 public:
  // Formats: slfp32in24b, slfp32in16b, slfp64in32b, slfp64in24b, slfp64in16b; `lu` column-major
  // with ld * bytes a multiple of 16 and 16-byte aligned (InvalidArgument otherwise).
  PackedFactors(slfp::Format format, const float* lu, std::int64_t n, std::int64_t ld, cudaStream_t stream,
                Context* memory = nullptr);
  ~PackedFactors();
  PackedFactors(const PackedFactors&) = delete;
  PackedFactors& operator=(const PackedFactors&) = delete;
  // X := U^-1 L^-1 X as TriangularSolver::solve, for 1 .. kTriangularSolveMaxColumns vectors.
  void solve(double* x, std::int64_t ldx, int columns, cudaStream_t stream);
  std::size_t bytes() const;
  slfp::Format format() const { return format_; }

  class Solver;  // the TriangularSolver of the format (triangular_solve.cu)

 private:
  slfp::Format format_;
  std::int64_t n_ = 0;
  DeviceBuffer<unsigned char> packed_;
  std::unique_ptr<Solver> solver_;
};

}  // namespace mixsolve::solvers_detail
