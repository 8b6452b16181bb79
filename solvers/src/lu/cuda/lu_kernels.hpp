// SPDX-License-Identifier: BSD-3-Clause
// Internal: the GPU kernels of the device LU, behind host launchers: panel_factorization.cu,
// interchanges_and_inverses.cu, diagonal_block_lu.cu. The solves with its factors:
// triangular/triangular_solver.hpp. Matrices are column-major; row indices in pivot arrays are global and 0-based.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "mixsolve/core/device_buffer.hpp"

namespace mixsolve::solvers_detail {

// The cooperative panel kernel factors panels of up to kPanelMaxWidth columns in one launch, a
// sub-panel (32 columns, or 16 FP64 columns where a block's rows of 32 do not fit) at a time in
// shared memory.
constexpr int kPanelMaxWidth = 256;

// Scratch the cooperative panel kernel exchanges its per-block pivot candidates and interchanged
// rows through. T = float (FP32 factors, FP32 arithmetic) or double (FP64).
template <class T>
class PanelWorkspace {
 public:
  // Sized for panels of up to `max_rows` rows on the current device, on at most `max_blocks`
  // blocks (one per multiprocessor; fewer leave room for concurrent work; 0: all). More blocks
  // are taken where one block's share of the rows would not fit in shared memory;
  // `supported()` is false where even all multiprocessors are not enough.
  // With `memory`, the scratch comes from its pool (Context::allocate) and is cleared on its
  // stream; else from cudaMalloc.
  PanelWorkspace(std::int64_t max_rows, int max_blocks, Context* memory = nullptr);
  bool supported() const { return supported_; }
  int blocks() const { return grid_; }

  // Factors the m x w panel `a` (w <= kPanelMaxWidth, w <= m) in place with partial pivoting, as
  // LAPACK's getrf does (P a = L U, unit lower L below the diagonal, U on and above it, every
  // interchange applied to all w columns): pivots[j] = row_offset + (row of the pivot of column j
  // within the panel). A zero pivot lowers *first_zero_pivot (device int) to column_offset + j and
  // leaves that column unscaled. One launch, one grid-wide exchange per column, no host
  // synchronisation. Launches on one workspace must be ordered (one stream, or events).
  // row_major: element (i, j) is a[j + i lda] (else a[i + j lda]).
  void factor(T* a, std::int64_t lda, std::int64_t m, int w, int* pivots, std::int64_t row_offset,
              int* first_zero_pivot, std::int64_t column_offset, cudaStream_t stream, bool row_major = false);

 private:
  bool supported_ = false;
  int grid_ = 0;
  int max_dynamic_wide_ = 0;                   // shared memory a block may take, 32-column sub-panels
  unsigned next_tag_ = 1;                      // of the next launch's first column
  DeviceBuffer<unsigned long long> exchange_;  // tagged publications
  DeviceBuffer<T> moved_rows_;
};

// LU with partial pivoting of the w x w row-major block `a` (element (i, j) at a[j + i lda],
// w <= kPanelMaxWidth; T = double or float, FP64 arithmetic) among its own rows, in one thread
// block: P a = L U in place, pivots and first_zero_pivot as PanelWorkspace::factor with m = w.
// `scratch` holds w x w values. For the diagonal blocks of an LU whose rows already stand in a
// chosen order: an FP64 LU after a cheaper one (reuse_pivot_order), an FP32-stored LU in A's own
// order (FactorRequest::diagonal_blocks).
template <class T>
void factor_diagonal_block(T* a, std::int64_t lda, int w, int* pivots, std::int64_t row_offset, int* first_zero_pivot,
                           std::int64_t column_offset, T* scratch, cudaStream_t stream);

// The sequential row interchanges pivots[first .. first+count) (count <= kPanelMaxWidth, global
// rows, LAPACK's ipiv) as moves: row to[i] receives the old row from[i], for i < *moves <= 2 count
// (device arrays; one thread block on the device, no host synchronisation).
void interchanges_to_moves(const int* pivots, std::int64_t first, int count, int* to, int* from, int* moves,
                           cudaStream_t stream);

// Applies such moves to the columns [c0, c1) of a except those in [skip0, skip1); a is
// row-major (element (i, j) at a[j + i lda]) where row_major is set. T = float or double.
template <class T>
void apply_row_moves(T* a, std::int64_t lda, const int* to, const int* from, const int* moves, std::int64_t c0,
                     std::int64_t c1, std::int64_t skip0, std::int64_t skip1, cudaStream_t stream,
                     bool row_major = false);

// inverse (w x w, row-major, ld w) = L^-1 for the unit lower triangle of the w x w block `a`
// (w <= kPanelMaxWidth; a row-major where row_major is set), computed in FP64 arithmetic and
// stored as T (float or double, a's type). The LU applies L11^-1 to a panel's block row as a GEMM
// with it: cublasStrsm with 256 rows ran far below the memory bandwidth that product needs.
template <class T>
void invert_unit_lower(const T* a, std::int64_t lda, int w, T* inverse, cudaStream_t stream, bool row_major = false);
// The same for the upper triangle of the block, diagonal included (U11^-1: an FP64 LU that follows
// a given row order computes L21 = A21 U11^-1 as a GEMM with it). A zero on the diagonal gives
// Inf/NaN entries.
template <class T>
void invert_upper(const T* a, std::int64_t lda, int w, T* inverse, cudaStream_t stream, bool row_major = false);
// Both in one launch: lower_inverse = L^-1 (unit lower), upper_inverse = U^-1.
template <class T>
void invert_both_triangles(const T* a, std::int64_t lda, int w, T* lower_inverse, T* upper_inverse,
                           cudaStream_t stream, bool row_major = false);

// The row permutation of a factorization's sequential interchanges, as a gather list:
// (P y)[i] = y[permutation[i]]. Computed on the host from the device pivots (one copy).
// With row_order (host, n entries or empty): the factorization was of A's rows in that order
// (row i of it is row row_order[i] of A), and permutation refers to A's rows.
void pivots_to_permutation(const int* pivots, std::int64_t n, int* permutation, cudaStream_t stream,
                           const std::vector<int>& row_order = {});

// w(:, c) = T(y(permutation, c)) for an n x k block (T = float or double); with the factors,
// w(:, c) = T(column_factor_c (R y)(permutation, c)), R = diag(row_factor) (either may be null).
template <class T>
void gather_rows(const double* y, std::int64_t ldy, const int* permutation, std::int64_t n, std::int64_t k, T* w,
                 std::int64_t ldw, cudaStream_t stream, const double* row_factor = nullptr,
                 const double* column_factor = nullptr);

}  // namespace mixsolve::solvers_detail
