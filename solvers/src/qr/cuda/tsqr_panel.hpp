// SPDX-License-Identifier: BSD-3-Clause
// Internal: Householder QR of a tall panel of at most 32 columns in device memory, FP32 or FP64,
// by a TSQR tree with the Householder vectors reconstructed from its explicit Q.
//
// TSQR (Demmel, Grigori, Hoemmen & Langou, SIAM J. Sci. Comput. 34, 2012): the rows are cut into
// leaf blocks of at most kTsqrBlockRows<T> (and at least half that, so every block has >= cols
// rows); each block is factorized by Householder in shared memory and registers by one thread
// block; the blocks' R factors, stacked, form the next level's input (blocks of the same or twice
// the rows there, whichever makes fewer latency-bound levels), until one block remains. The explicit Q (rows x
// cols, orthonormal columns) comes back down the tree: each block applies its reflectors to
// [its slice of the parent's Q; 0].
//
// Reconstruction (Ballard, Demmel, Grigori, Jacquelin, Nguyen & Solomonik, IPDPS 2014, Alg. 6):
// with S = diag(+-1) chosen during an unpivoted LU, Q - [S; 0] = V U (V unit lower trapezoidal);
// then Q S = [I; 0] - V T V_1^T gives the compact WY form I - V T V^T of LAPACK's geqrf with
// T = -U S V_1^-T, and R_householder = S R. The LU of the top cols x cols block is done by one
// thread block; V below it is Q U^-1, a row per thread. Each sign s_i = -sign(pivot) makes |pivot| >= 1,
// so the LU needs no pivoting.
//
// The arithmetic is the working precision's on the CUDA cores: a 32-column panel is bound by
// memory and synchronization, not by multiplication (docs/least_squares.md).
#pragma once

#include <cstdint>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"

namespace mixsolve::solvers_detail {

inline constexpr int kTsqrMaxCols = 32;
// Rows per leaf block: one 32-column tile of them fills ~33 KB of shared memory.
template <class T>
inline constexpr int kTsqrBlockRows = sizeof(T) == 4 ? 256 : 128;

template <class T>
class TsqrPanel {
 public:
  // Workspace for panels of up to max_rows rows.
  TsqrPanel(Context& ctx, std::int64_t max_rows);

  // Factors the panel a (rows x cols, cols <= rows <= max_rows, 1 <= cols <= 32, device memory,
  // leading dimension lda) in place into geqrf's form: R on and above the diagonal, the
  // reflectors below it. Also writes V (rows x cols, leading dimension ldv: the reflectors with
  // their unit diagonal and zeros above it), T (cols x cols, leading dimension ldt, upper
  // triangular, Q = I - V T V^T; below its diagonal untouched) and tau (cols entries, T's
  // diagonal). Asynchronous on ctx's stream.
  // @throws InvalidArgument for rows or cols out of range.
  void factor(T* a, std::int64_t lda, std::int64_t rows, int cols, T* v, std::int64_t ldv, T* t, std::int64_t ldt,
              T* tau);

  // The tree's levels for a panel of rows x cols: rows and blocks of each, leaves first.
  struct Level {
    std::int64_t rows, blocks;
    int warps;  // of each block: 8 (kTsqrBlockRows<T> rows) or 16 (twice as many)
  };
  static std::vector<Level> levels(std::int64_t rows, int cols);

 private:
  Context& ctx_;
  std::int64_t max_rows_;
  DeviceBuffer<T> stack_;  // levels >= 1: the stacked R factors, factorized in place
  DeviceBuffer<T> q_up_;   // levels >= 1: their explicit Q, same layout as stack_
  DeviceBuffer<T> q_;      // level 0's explicit Q, max_rows x 32
  DeviceBuffer<T> tau_;    // every block's tau, level after level
  DeviceBuffer<T> r_;      // the root's R, 32 x 32
  DeviceBuffer<T> u_;      // the reconstruction's U^-1, 32 x 32
};

extern template class TsqrPanel<float>;
extern template class TsqrPanel<double>;

}  // namespace mixsolve::solvers_detail
