// SPDX-License-Identifier: BSD-3-Clause
// Internal: the device LU's blocked right-looking factorization with look-ahead (design:
// docs/solver.md): the streams, events, per-panel buffers and verdicts of one factorization at a
// time. The device engine prepares the factors (A's copy, the identity border) and reads the
// pivots and verdicts afterwards; this class runs the panels and updates in between.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <tuple>

#include "lu/cuda/engine_support.hpp"
#include "lu/cuda/lu_kernels.hpp"
#include "lu/lu_rules.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::solvers_detail::device_lu {

// A reused row order (SolveOptions::reuse_pivot_order) is judged while the FP64 LU runs: after
// each panel the largest multiplier so far goes to the host, which reads panel p's before it
// enqueues panel p + kOrderVerdictLag's work; an order that fails ends the LU there, not after
// its last panel. A cheaper LU's count of collapsed pivots is read with the same lag. The lag
// keeps that many panels queued on the chain, so the host's wait does not leave the GPU idle.
constexpr std::int64_t kOrderVerdictLag = 3;

// One factorization: what BlockedLu::run is asked to do.
template <class T>
struct BlockedLuJob {
  // The nf x nf matrix [A 0; 0 I] (its copy of A in place), factored in place; row-major when
  // row_major, column-major otherwise (and when run returns with row_major false).
  T* factors = nullptr;
  bool row_major = true;
  // The trailing updates' backend (a packing one has each panel's L21 packed once) and its
  // parameters (non-packing backends).
  const gemm::Backend* update = nullptr;
  gemm::Parameters update_parameters;
  // Panels whose updates a bulk update applies at once (its inner dimension: update_group x nb)
  // while the rows from the group's first panel on number at least update_group_min_rows; later
  // bulk updates, and all where update_group is 0, take the default for the size
  // (Tuning::update_group overrides both).
  std::int64_t update_group = 0;
  std::int64_t update_group_min_rows = 0;
  // The leading panels whose rows stand in a given order (pivoting inside their diagonal blocks
  // only, row-major only; FP32 factors: every panel or none); 0: partial pivoting throughout.
  std::int64_t order_panels = 0;
  // Watch for collapsing pivots below this magnitude (FP32 factors; 0: not watched).
  double collapse_below = 0;
};

// How a factorization ended early, if it did.
struct BlockedLuOutcome {
  // The given row order failed its check part way (a multiplier beyond kReusedOrderMaxMultiplier).
  bool order_rejected_early = false;
  // The pivots collapsed (pivots_collapsed): the column up to which the LU was judged; -1: not.
  std::int64_t collapsed_at_column = -1;
};

class BlockedLu {
 public:
  // n: A's order; nf: the factors' (n aligned up); nb: the panel width; panel_blocks: the
  // multiprocessors of the cooperative panel kernel. pivots (nf) and first_zero_pivot (1) are the
  // engine's device buffers, written by run.
  BlockedLu(Context& ctx, std::int64_t n, std::int64_t nf, std::int64_t nb, int panel_blocks, Profile& profile,
            int* pivots, int* first_zero_pivot);
  ~BlockedLu();
  BlockedLu(const BlockedLu&) = delete;
  BlockedLu& operator=(const BlockedLu&) = delete;

  // Whether nf rows of T fit the cooperative panel kernel's shared memory on this GPU.
  template <class T>
  bool fits();
  // Runs the panels and updates of `job` on the engine's context and streams of its own; the
  // user's stream follows all of it when run returns. pivots[k] is the row swapped with row k
  // (global, 0-based); first_zero_pivot is lowered to the first exact zero pivot's column.
  template <class T>
  BlockedLuOutcome run(const BlockedLuJob<T>& job);

  // Zeroes the largest multiplier of the panels that follow a given order (on the user's stream).
  void reset_largest_multiplier();
  // max |l_ij| of the panels that followed a given order in the last run (synchronises).
  double largest_multiplier();
  // Frees the buffers kept for factors of type T (the engine switches between FP32 and FP64).
  template <class T>
  void release();
  // Device memory this object holds.
  std::size_t bytes() const;

 private:
  template <class T>
  void factor_blocked(const BlockedLuJob<T>& job, BlockedLuOutcome& outcome);
  template <class T>
  void factor_panel(Context& ctx, T* f, std::int64_t j0, std::int64_t jb, const cudaStream_t* side);
  template <class T>
  void factor_panel_in_order(Context& ctx, T* f, std::int64_t j0, std::int64_t jb);
  std::tuple<int*, int*, int*> panel_moves(std::int64_t q);
  template <class T>
  PanelWorkspace<T>& panel_workspace();
  template <class T>
  BlockRowBuffers<T>& block_row_buffers();
  template <class T>
  void prepare(bool in_order);

  Context& ctx_;
  const std::int64_t n_, nf_, nb_;
  const int panel_blocks_;
  Profile& profile_;
  int* const pivots_;
  int* const first_zero_pivot_;
  // The current run's layout and row order (BlockedLuJob).
  bool row_major_ = true, in_order_ = false;
  const gemm::Backend* update_ = nullptr;  // the run's trailing-update backend and its parameters
  gemm::Parameters update_parameters_;
  std::int64_t order_panels_ = 0;
  double collapse_below_ = 0;
  // The panels' verdicts: pinned host slots, the running PivotWatch, max |L21| in order (bits).
  unsigned long long* panel_verdicts_ = nullptr;
  DeviceBuffer<PivotWatch> pivot_watch_;
  DeviceBuffer<unsigned long long> largest_multiplier_;
  DeviceBuffer<int> move_to_, move_from_, move_count_;  // each panel's interchanges as row moves
  BlockRowBuffers<float> block_rows32_;
  BlockRowBuffers<double> block_rows64_;
  DeviceBuffer<unsigned char> packed_l21_;  // each group's L21 packed once (factor_blocked)
  std::unique_ptr<PanelWorkspace<float>> panel32_;
  std::unique_ptr<PanelWorkspace<double>> panel64_;
  std::unique_ptr<Context> panel_ctx_;  // the look-ahead panel's stream and cuBLAS handle
  cudaStream_t swap_stream_ = nullptr;  // the left-hand row interchanges
  cudaStream_t side_streams_[2] = {};   // each panel's moves and its L11^-1 beside the chain
  StreamEvent side_fork_, moves_done_, inverse_done_;
};

}  // namespace mixsolve::solvers_detail::device_lu
