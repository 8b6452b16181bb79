// SPDX-License-Identifier: BSD-3-Clause
// The device LU's blocked factorization (blocked_lu.hpp): panels by the cooperative kernel of
// panel_factorization.cu on a high-priority chain stream, trailing updates A22 -= L21 U12 on the
// job's gemm/ backend, U12 = L11^-1 A12 by a GEMM with L11's inverse, look-ahead and delayed
// (grouped) updates, row interchanges as moves, and the running verdicts that end a failing LU
// early. Design and measurements: docs/solver.md.
#include "lu/cuda/blocked_lu.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/gemm/problem.hpp"
#include "tuning.hpp"

namespace mixsolve::solvers_detail::device_lu {

namespace {

// *largest = max(*largest, max |a_ij|) over a rows x cols row-major block (element (i, j) at
// a[j + i lda]), as the bits of a non-negative double (ordered as unsigned integers; NaN above
// every number, so a NaN multiplier fails the check that reads it).
template <class T>
__global__ void abs_max_row_major_kernel(const T* a, std::int64_t lda, std::int64_t rows, int cols,
                                         unsigned long long* largest) {
  double v = 0;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < rows * cols;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const double x = fabs(double(a[idx % cols + (idx / cols) * lda]));
    if (isnan(x) || x > v) v = x;  // a NaN stays: nothing compares above it
  }
  for (int o = 16; o > 0; o /= 2) {
    const double other = __shfl_down_sync(0xffffffffu, v, o);
    if (isnan(other) || other > v) v = other;
  }
  if ((threadIdx.x & 31) == 0 && v != 0) atomicMax(largest, static_cast<unsigned long long>(__double_as_longlong(v)));
}

// kCollapseMinPivots (engine.hpp): the pivots of columns [j0, j0 + jb) of the factors f (its
// diagonal, the same in either layout) into the running PivotWatch, in column order. One block
// of kPanelMaxWidth threads.
template <class T>
__global__ void watch_pivots_kernel(const T* f, std::int64_t ld, std::int64_t j0, int jb, double below,
                                    PivotWatch* watch) {
  __shared__ double magnitudes[kPanelMaxWidth];
  if (threadIdx.x < jb) magnitudes[threadIdx.x] = fabs(double(f[(j0 + threadIdx.x) * (ld + 1)]));
  __syncthreads();
  if (threadIdx.x != 0) return;
  PivotWatch w = *watch;
  for (int k = 0; k < jb; ++k) watch_pivot(w, magnitudes[k], below);
  *watch = w;
}

// Multiprocessors left to the chain when the panels follow a given row order
// (factor_panel_in_order: a diagonal block on a few blocks, then short GEMMs).
constexpr int kInOrderChainMultiprocessors = 8;
// Panels whose updates the columns beyond the look-ahead receive at once (factor_blocked). FP64
// factors from n = kLargeFp64 on take kDefaultUpdateGroup64: a DGEMM with k = 4 x 256 runs
// nearer its peak, and the FP64 LU at n = 32768 is bound by the bulk stream's DGEMMs (~5% off
// that LU on an H100; at n = 8192 group 4 is slower, so smaller matrices keep 2).
// FP32 factors from n = kLargeFp32 on take kDefaultUpdateGroup32: with the look-ahead's products
// unclustered (gemm::KernelPlacement) the fp16x3 LU at n = 32768 is bound by the bulk stream for
// its first two thirds, and k = 3 x 256 cuts the bulk's A22 traffic by a third more (~3% off that
// LU); at n = 16384 the LU is bound by the chain and group 3 is slower, so it keeps 2.
// Measurements: docs/history/solver-log.md.
constexpr int kDefaultUpdateGroup = 2;
constexpr int kDefaultUpdateGroup32 = 3;
constexpr std::int64_t kLargeFp32 = 24576;
constexpr int kDefaultUpdateGroup64 = 4;
constexpr std::int64_t kLargeFp64 = 16384;
// Groups whose packed L21 (factor_blocked) exist at once: the chain packs group g + 2 while the
// bulk stream may still read group g + 1 (and it waits for group g's readers, which precede).
constexpr int kPackedGroupSlots = 3;

}  // namespace

BlockedLu::BlockedLu(Context& ctx, std::int64_t n, std::int64_t nf, std::int64_t nb, int panel_blocks,
                     Profile& profile, int* pivots, int* first_zero_pivot)
    : ctx_(ctx), n_(n), nf_(nf), nb_(nb), panel_blocks_(panel_blocks), profile_(profile), pivots_(pivots),
      first_zero_pivot_(first_zero_pivot), pivot_watch_(ctx, 1), largest_multiplier_(ctx, 1) {}

BlockedLu::~BlockedLu() {
  for (cudaStream_t stream : {swap_stream_, side_streams_[0], side_streams_[1]})
    if (stream) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  if (panel_verdicts_) cudaFreeHost(panel_verdicts_);
}

void BlockedLu::reset_largest_multiplier() {
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(largest_multiplier_.data(), 0, sizeof(unsigned long long), ctx_.stream()));
}

double BlockedLu::largest_multiplier() {
  unsigned long long bits = 0;  // abs_max_row_major_kernel's: a non-negative double's bits
  largest_multiplier_.copy_to_host(&bits, 1, ctx_.stream());
  double largest = 0;
  std::memcpy(&largest, &bits, sizeof bits);
  return largest;
}

template <class T>
void BlockedLu::release() {
  block_row_buffers<T>() = BlockRowBuffers<T>();
  if constexpr (std::is_same_v<T, float>) packed_l21_ = DeviceBuffer<unsigned char>();
}

std::size_t BlockedLu::bytes() const {
  return move_to_.bytes() + move_from_.bytes() + move_count_.bytes() + block_rows32_.bytes() + block_rows64_.bytes() +
         packed_l21_.bytes() + (panel_ctx_ ? panel_ctx_->workspace_capacity() : 0);
}

// The streams and per-panel buffers, made on first use and kept for the next factorization.
template <class T>
void BlockedLu::prepare(bool in_order) {
  if (!panel_ctx_) {
    const std::int64_t panels = (nf_ + nb_ - 1) / nb_;
    move_to_ = DeviceBuffer<int>(ctx_, panels * 2 * kPanelMaxWidth);
    move_from_ = DeviceBuffer<int>(ctx_, panels * 2 * kPanelMaxWidth);
    move_count_ = DeviceBuffer<int>(ctx_, panels);
    panel_ctx_ = std::make_unique<Context>(ctx_.device(), StreamPriority::High);
    MIXSOLVE_CUDA_CHECK(cudaStreamCreateWithFlags(&swap_stream_, cudaStreamNonBlocking));
    int least = 0, greatest = 0;
    MIXSOLVE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    for (cudaStream_t& stream : side_streams_)
      MIXSOLVE_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  }
  BlockRowBuffers<T>& block_rows = block_row_buffers<T>();
  if (block_rows.l11_inverses.size() == 0) {
    block_rows.l11_inverses = DeviceBuffer<T>(ctx_, ((nf_ + nb_ - 1) / nb_) * nb_ * nb_);
    block_rows.u12_copy_chain = DeviceBuffer<T>(ctx_, nb_ * nb_);
    block_rows.u12_copy_bulk = DeviceBuffer<T>(ctx_, nb_ * nf_);
  }
  if (in_order && block_rows.l21_copy.size() == 0) {
    block_rows.u11_inverse = DeviceBuffer<T>(ctx_, nb_ * nb_);
    block_rows.l21_copy = DeviceBuffer<T>(ctx_, nb_ * nf_);
  }
}

template <class T>
bool BlockedLu::fits() {
  return panel_workspace<T>().supported();
}

template <class T>
BlockedLuOutcome BlockedLu::run(const BlockedLuJob<T>& job) {
  if (!fits<T>())
    throw NotSupported("device LU: n = " + std::to_string(n_) +
                       " rows do not fit the cooperative panel kernel's shared memory on this GPU");
  row_major_ = job.row_major;
  update_ = job.update;
  update_parameters_ = job.update_parameters;
  in_order_ = job.order_panels > 0 && job.row_major;
  order_panels_ = in_order_ ? job.order_panels : 0;
  collapse_below_ = job.collapse_below;
  prepare<T>(in_order_);
  if (in_order_) reset_largest_multiplier();
  // The first zero pivot's column, read once at the end: no synchronisation inside the loop.
  // After a zero pivot the remaining panels compute with Inf/NaN; those factors are discarded.
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(first_zero_pivot_, 0x7f, sizeof(int), ctx_.stream()));
  BlockedLuOutcome outcome;
  factor_blocked(job, outcome);
  return outcome;
}

// Right-looking blocked LU of job.factors with look-ahead, on three streams besides the user's:
//  * chain (high priority, the panel's context): per panel p, its interchanges as moves, the
//    update of panel p + 1's columns (interchanges, U12 = L11^-1 A12, A22 -= L21 U12), then
//    panel p + 1 (the cooperative kernel). This is the LU's critical path;
//  * bulk (the user's context): the update of the columns beyond the next panel, with a
//    multiprocessor limit that leaves panel_blocks_ multiprocessors to the panel kernel;
//  * left: the interchanges on the finished L columns to the left, which nothing reads again.
// Delayed updates: the bulk columns receive the updates of a group of panels at once,
// A22 -= [L21 ...] [U12; ...] with k = group x 256 (the group may differ from one bulk update to
// the next: BlockedLuJob::update_group). At k = 256 the trailing update is bound by
// reading and writing A22 (FP32), not by the tensor cores, so grouping two panels halves that
// traffic. A bulk update does the next `group` panels' columns first, one event each, so the
// chain waits only for the columns it needs next, not for the whole bulk update.
// Tuning::look_ahead off runs everything on the user's stream; Tuning::update_group sets the
// group (1: a bulk update after every panel).
template <class T>
void BlockedLu::factor_blocked(const BlockedLuJob<T>& job, BlockedLuOutcome& outcome) {
  T* const f = job.factors;
  const gemm::Backend& update = *job.update;
  const bool look_ahead = tuning().look_ahead;
  const int large_group = std::is_same_v<T, double> ? kDefaultUpdateGroup64 : kDefaultUpdateGroup32;
  const int default_group = nf_ >= (std::is_same_v<T, double> ? kLargeFp64 : kLargeFp32) ? large_group
                                                                                        : kDefaultUpdateGroup;
  // The group of the bulk update whose first panel is q (BlockedLuJob::update_group); packed
  // L21 storage is laid out for one group size, so packing LUs keep theirs.
  const auto group_from = [&](std::int64_t q) -> std::int64_t {
    if (tuning().update_group > 0) return tuning().update_group;
    if (job.update_group > 0 && nf_ - std::min(q * nb_, nf_) >= job.update_group_min_rows) return job.update_group;
    return default_group;
  };
  const std::int64_t group = group_from(0);
  Context& bulk_ctx = ctx_;
  Context& chain_ctx = look_ahead ? *panel_ctx_ : ctx_;
  cudaStream_t bulk = bulk_ctx.stream(), chain = chain_ctx.stream();
  cudaStream_t left = look_ahead ? swap_stream_ : bulk;
  int multiprocessors = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, ctx_.device()));
  // Panels in a given row order take a few blocks for their diagonal block and short GEMMs
  // (factor_panel_in_order): kInOrderChainMultiprocessors are left to the chain then.
  const int in_order_chain = tuning().in_order_chain_multiprocessors > 0 ? tuning().in_order_chain_multiprocessors
                                                                         : kInOrderChainMultiprocessors;
  const int chain_multiprocessors = in_order_ ? in_order_chain : panel_workspace<T>().blocks();
  // A given row order is followed for the first in_order_panels panels (order_panels_), and the
  // rest pivot partially: from there the chain's panel kernel takes its multiprocessors back.
  const std::int64_t in_order_panels = in_order_ ? std::min<std::int64_t>(order_panels_, (nf_ + nb_ - 1) / nb_) : 0;
  MultiprocessorLimitScope limit(bulk_ctx, look_ahead ? std::max(1, multiprocessors - chain_multiprocessors) : 0);
  Profile& profile = profile_;
  const auto started = std::chrono::steady_clock::now();
  // Each panel's moves and its L11^-1 on streams of their own beside the chain (factor_panel),
  // joined before the chain's or the bulk stream's first use of them.
  cudaStream_t* side = look_ahead ? side_streams_ : nullptr;
  std::vector<std::pair<cudaStream_t, std::string>> stream_names{{chain, "chain"}, {bulk, "bulk"}, {left, "left"}};
  if (side) {
    stream_names.emplace_back(side[0], "moves");
    stream_names.emplace_back(side[1], "inverse");
  }
  profile.begin_factorization(bulk, std::move(stream_names));
  const std::int64_t panels = (nf_ + nb_ - 1) / nb_;
  // to_chain: the FP32 copy, then each bulk update's start; moves_ready: a panel's moves and the
  // pending L columns' interchanges, for the bulk stream; left_may_start: the same and the next
  // panel's columns, for the left stream; bulk_done: the L columns a
  // bulk update read, for the left stream; column_ready[q]: panel q's columns are up to date
  // but for the panels the chain applies itself.
  StreamEvent to_chain, moves_ready, left_may_start, bulk_done, from_left, from_chain;
  std::vector<std::unique_ptr<StreamEvent>> column_ready(panels);
  const auto first_column = [&](std::int64_t q) { return std::min(q * nb_, nf_); };  // of panel q
  // Element (row, column) of the factors; row-major while factoring (row_major_).
  const auto at = [&](std::int64_t row, std::int64_t column) {
    return row_major_ ? f + column + row * nf_ : f + row + column * nf_;
  };
  // An update backend that packs operands (gemm::Backend::pack_b; cublas-fp16x3 splits them
  // into FP16 hi/lo), row-major: each panel's L21 is packed once, right after the panel, with
  // the bound |L| <= 1 of partial pivoting fixing its scale, and every update of its group reads
  // that copy, where the backend would convert L21 again in every product (the chain's and
  // three per bulk update), each time after a pass for its largest |value|. A group's panels
  // are the blocks of one packed operand (kPackedGroupSlots slots of nf packed columns, indexed
  // by the factors' row), and a later panel's interchanges move the group's packed columns as
  // they move its L columns (a packed column depends on its own column of L alone).
  // Tuning::packed_l21 off: the backend's own conversion in every product.
  const std::int64_t packed_ld = update.packed_b_column_bytes(group * nb_, nb_);  // bytes per packed column
  // A panel's block is packed_panel_bytes of a packed column, and block b starts b of them in
  // (gemm::PackedB's layout rules): where that is a multiple of 4 bytes, the interchanges move
  // packed columns as 4-byte words.
  const std::int64_t packed_panel_bytes = update.packed_b_column_bytes(nb_, nb_);
  constexpr bool kFp32 = std::is_same_v<T, float>;
  // Not in a given row order: there |L| <= 1 does not hold.
  const bool packed =
      kFp32 && row_major_ && !in_order_ && packed_ld > 0 && packed_panel_bytes % 4 == 0 && tuning().packed_l21;
  if (packed && packed_l21_.size() != std::size_t(kPackedGroupSlots * packed_ld * nf_))
    packed_l21_ = DeviceBuffer<unsigned char>(ctx_, kPackedGroupSlots * packed_ld * nf_);
  std::vector<StreamEvent> slot_read(kPackedGroupSlots);  // the last bulk update that read a slot
  const auto slot_of = [&](std::int64_t q) { return (q / group) % kPackedGroupSlots; };
  // Panel q's group as a packed operand, from panel q's block on.
  const auto packed_l21 = [&](std::int64_t q) {
    const gemm::PackedB group_storage{&update, packed_l21_.data() + slot_of(q) * packed_ld * nf_, packed_ld, nb_, 0,
                                      1.0};
    return group_storage.blocks_from(q % group);
  };
  const auto pack_l21 = [&](std::int64_t q) {
    const std::int64_t j0 = first_column(q), below = first_column(q + 1);
    if (!packed || below >= nf_) return;  // the last panel's L21 updates nothing
    if (q % group == 0) slot_read[slot_of(q)].wait_in(chain);
    profile.start(Profile::PackL21, chain);
    update.pack_b(chain_ctx, below - j0, nf_ - below, gemm::Operand::dense(gemm::Format::F32, gemm::Op::N,
                                                                            at(below, j0), nf_),
                  packed_l21(q).columns_from(below));
    profile.stop(Profile::PackL21, chain);
  };
  // U12 = L11^-1 A12 for panel q's block row on the columns [c0, c1): a copy of A12, then a
  // GEMM (FP32 or FP64, T's) with the inverse computed after the panel (factor_panel).
  // cublasStrsm with 256 rows runs ~40x slower than its traffic needs (at n = 32768 on an H100
  // 64 ms of the bulk stream, where the GEMM takes 20); an in-place kernel (16 columns per block
  // staged in shared memory, a thread per row of the product) is slower than the copy and the
  // GEMM as well (docs/history/solver-log.md).
  const auto solve_block_row = [&](Context& c, std::int64_t q, std::int64_t c0, std::int64_t c1) {
    const std::int64_t j0 = first_column(q), jb = first_column(q + 1) - j0, width = c1 - c0;
    BlockRowBuffers<T>& block_rows = block_row_buffers<T>();
    // The chain and the bulk stream run at once: one copy buffer each.
    T* copy = (&c == &chain_ctx && look_ahead ? block_rows.u12_copy_chain : block_rows.u12_copy_bulk).data();
    const T* inverse = block_rows.l11_inverses.data() + q * nb_ * nb_;  // row-major jb x jb
    if (row_major_) {  // A12 is jb runs of `width` values: U12^T = A12^T (L11^-1)^T
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(copy, width * sizeof(T), at(j0, c0), nf_ * sizeof(T), width * sizeof(T),
                                            jb, cudaMemcpyDeviceToDevice, c.stream()));
      exact_product(c, gemm::Op::N, width, jb, jb, copy, width, inverse, jb, at(j0, c0), nf_);
    } else {  // A12 is `width` columns of jb values; the inverse seen column-major is its transpose
      MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(copy, jb * sizeof(T), at(j0, c0), nf_ * sizeof(T), jb * sizeof(T), width,
                                            cudaMemcpyDeviceToDevice, c.stream()));
      exact_product(c, gemm::Op::T, jb, width, jb, inverse, jb, copy, jb, at(j0, c0), nf_);
    }
  };
  // The updates of panels [p0, p1] on the columns [c0, c1), on c's stream: their interchanges
  // in order, then per panel U12 = L11^-1 A12 and the update of the group's later block rows,
  // then one update of every row below the group with k = the group's width.
  // after_swaps: run between the interchanges and the first block-row solve (the chain's wait for
  // the newest L11^-1).
  const auto apply_panels = [&](Context& c, std::int64_t p0, std::int64_t p1, std::int64_t c0, std::int64_t c1,
                                const std::function<void()>& after_swaps = {}) {
    cudaStream_t s = c.stream();
    // The chain's products run beside the bulk stream's long GEMMs: without clusters, so that
    // they start on the multiprocessors the bulk update leaves (gemm::KernelPlacement).
    const gemm::KernelPlacement placement = look_ahead && &c == &chain_ctx ? gemm::KernelPlacement::Unclustered
                                                                           : gemm::KernelPlacement::Anywhere;
    const auto multiply_subtract = [&](std::int64_t r0, std::int64_t r1, std::int64_t k0, std::int64_t k1) {
      profile.start(Profile::Update, s);
      if (packed) {  // the panels of [k0, k1) are one group's (apply_panels' callers), packed together
        const std::int64_t q = k0 / nb_;
        if (slot_of(q) != slot_of((k1 - 1) / nb_) || q % group + (k1 - k0 + nb_ - 1) / nb_ > group)
          throw Error("device LU: an update spans panels of two packed groups (a bug)");
        update.run(c,
                   gemm::Problem{c1 - c0, r1 - r0, k1 - k0, -1.0, 1.0,
                                 gemm::Operand::dense(gemm::Format::F32, gemm::Op::N, at(k0, c0), nf_),
                                 gemm::Operand::prepacked(packed_l21(q).columns_from(r0)),
                                 gemm::Output{gemm::Format::F32, at(r0, c0), nf_}},
                   {}, gemm::Execution{false, placement});
      } else if (row_major_) {  // cuBLAS sees the transposes: A22^T -= U12^T L21^T
        update.run(c,
                   gemm::to_problem(gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::N, c1 - c0, r1 - r0, k1 - k0, T(-1),
                                                      at(k0, c0), nf_, at(r0, k0), nf_, T(1), at(r0, c0), nf_}),
                   job.update_parameters, gemm::Execution{false});
      } else {
        update.run(c,
                   gemm::to_problem(gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::N, r1 - r0, c1 - c0, k1 - k0, T(-1),
                                                      at(r0, k0), nf_, at(k0, c0), nf_, T(1), at(r0, c0), nf_}),
                   job.update_parameters, gemm::Execution{false});
      }
      profile.stop(Profile::Update, s);
    };
    profile.start(Profile::RightSwaps, s);
    for (std::int64_t q = p0; q <= p1; ++q) {
      const auto [to, from, moves] = panel_moves(q);
      apply_row_moves(f, nf_, to, from, moves, c0, c1, c1, c1, s, row_major_);
    }
    profile.stop(Profile::RightSwaps, s);
    if (after_swaps) after_swaps();
    const std::int64_t below = first_column(p1 + 1);
    for (std::int64_t q = p0; q <= p1; ++q) {
      const std::int64_t j0 = first_column(q), jb = first_column(q + 1) - j0;
      profile.start(Profile::RowBlock, s);
      solve_block_row(c, q, c0, c1);
      profile.stop(Profile::RowBlock, s);
      if (q < p1) multiply_subtract(j0 + jb, below, j0, j0 + jb);
    }
    if (below < nf_) multiply_subtract(below, nf_, first_column(p0), below);
  };

  // Running verdicts (kOrderVerdictLag), after each panel q into a pinned host slot with an
  // event: a reused row order's largest multiplier so far (its panels), or a cheaper LU's count
  // of small pivots (kCollapseMinPivots; on the inverse's side stream after panel q's L11^-1,
  // where its few microseconds delay only the next panel's L11^-1). The watch is reset on the
  // bulk stream, which the previous LU's side streams joined and the chain follows (to_chain).
  outcome.order_rejected_early = false;
  const bool watch = kFp32 && collapse_below_ > 0;
  constexpr std::int64_t kVerdictSlots = kOrderVerdictLag + 1;
  std::vector<StreamEvent> verdict_ready(in_order_ || watch ? kVerdictSlots : 0);
  if ((in_order_ || watch) && !panel_verdicts_)
    MIXSOLVE_CUDA_CHECK(cudaMallocHost(&panel_verdicts_, kVerdictSlots * sizeof(unsigned long long)));
  if (watch) MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(pivot_watch_.data(), 0, sizeof(PivotWatch), bulk));
  cudaStream_t watch_stream = side ? side[1] : chain;
  const auto post_verdict = [&](std::int64_t q) {
    unsigned long long* slot = panel_verdicts_ + q % kVerdictSlots;
    if (q < in_order_panels) {
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(slot, largest_multiplier_.data(), sizeof(unsigned long long),
                                          cudaMemcpyDeviceToHost, chain));
      verdict_ready[q % kVerdictSlots].record(chain);
    } else if (watch) {
      const std::int64_t j0 = first_column(q), jb = std::min(first_column(q + 1), n_) - j0;
      if (jb <= 0) return;
      watch_pivots_kernel<<<1, kPanelMaxWidth, 0, watch_stream>>>(f, nf_, j0, int(jb), collapse_below_,
                                                                   pivot_watch_.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(slot, &pivot_watch_.data()->small, sizeof(long long),
                                          cudaMemcpyDeviceToHost, watch_stream));
      verdict_ready[q % kVerdictSlots].record(watch_stream);
    }
  };
  const auto verdict = [&](std::int64_t q, auto value) {  // panel q's slot, on the host, as a `value`
    verdict_ready[q % kVerdictSlots].wait_on_host();
    std::memcpy(&value, panel_verdicts_ + q % kVerdictSlots, sizeof value);
    return value;
  };
  const auto order_failed_at = [&](std::int64_t q) { return !(verdict(q, 0.0) <= kReusedOrderMaxMultiplier); };
  const auto collapsed_at = [&](std::int64_t q) {
    return pivots_collapsed(verdict(q, 0LL), std::min(first_column(q + 1), n_));
  };
  to_chain.order(bulk, chain);
  profile.start(Profile::Panel, chain);
  factor_panel(chain_ctx, f, 0, std::min<std::int64_t>(nb_, nf_), side);
  profile.stop(Profile::Panel, chain);
  post_verdict(0);
  pack_l21(0);
  std::int64_t pending = 0;  // the first panel whose update the bulk columns lack
  for (std::int64_t p = 0; p < panels; ++p) {
    if (p >= kOrderVerdictLag && p - kOrderVerdictLag < in_order_panels && order_failed_at(p - kOrderVerdictLag)) {
      outcome.order_rejected_early = true;
      break;
    }
    if (watch && p >= kOrderVerdictLag && p - kOrderVerdictLag >= in_order_panels &&
        first_column(p - kOrderVerdictLag) < n_ && collapsed_at(p - kOrderVerdictLag)) {
      outcome.collapsed_at_column = std::min(first_column(p - kOrderVerdictLag + 1), n_);
      break;
    }
    const std::int64_t j0 = first_column(p);
    const auto [to, from, moves] = panel_moves(p);
    if (side) moves_done_.wait_in(chain);  // panel p's moves (factor_panel)
    // The interchanges on the L columns to the left: the pending panels' on the chain (the
    // pending updates read them next), the older ones on the left-hand stream once the last
    // bulk update has read them.
    const std::int64_t pending_column = first_column(pending);
    if (pending_column < j0) {
      profile.start(Profile::LeftSwaps, chain);
      apply_row_moves(f, nf_, to, from, moves, pending_column, j0, j0, j0, chain, row_major_);
      if (packed)  // the pending panels' packed columns, moved as 4-byte words
        apply_row_moves(static_cast<float*>(packed_l21(pending).data) +
                            update.packed_b_column_bytes((pending % group) * nb_, nb_) / 4,
                        packed_ld / 4, to, from, moves, 0, (p - pending) * packed_panel_bytes / 4, 0, 0, chain,
                        true);
      profile.stop(Profile::LeftSwaps, chain);
    }
    // Panel p's L11^-1, for the U12 of both streams: the chain waits for it after its
    // interchanges on the next panel's columns, which run beside it, and the bulk stream's next
    // update after the chain (moves_ready).
    const auto inverse_ready = [&] {
      if (side) inverse_done_.wait_in(chain);
      moves_ready.record(chain);
    };
    // The older L columns' interchanges start once the chain has updated the next panel's
    // columns: they saturate the memory bandwidth (one 32-byte sector per 4-byte value), and
    // beside the chain's short kernels they double those kernels' time; beside the panel
    // kernel, which works in L2, they cost little.
    const auto swap_left_columns = [&, to = to, from = from, moves = moves] {
      if (pending_column == 0) return;
      left_may_start.order(chain, left);
      bulk_done.wait_in(left);
      profile.start(Profile::LeftSwaps, left);
      apply_row_moves(f, nf_, to, from, moves, 0, pending_column, pending_column, pending_column, left, row_major_);
      profile.stop(Profile::LeftSwaps, left);
    };
    if (p + 1 == panels) {
      inverse_ready();
      swap_left_columns();
      break;
    }
    // The next panel's columns, then the next panel, on the chain.
    const std::int64_t next = first_column(p + 1), after_next = first_column(p + 2);
    if (column_ready[p + 1]) column_ready[p + 1]->wait_in(chain);
    apply_panels(chain_ctx, pending, p, next, after_next, inverse_ready);
    swap_left_columns();
    if (look_ahead && in_order_ && p + 1 == in_order_panels)
      bulk_ctx.set_multiprocessor_limit(std::max(1, multiprocessors - panel_workspace<T>().blocks()));
    profile.start(Profile::Panel, chain);
    factor_panel(chain_ctx, f, next, after_next - next, side);
    profile.stop(Profile::Panel, chain);
    post_verdict(p + 1);
    pack_l21(p + 1);
    // A bulk update once a group of panels is pending (group_from(pending)): the columns of the
    // panels the chain factors before the next bulk update (group_from(p + 1) of them) one by one,
    // the chain waiting for each, then the rest.
    if (after_next < nf_ && p + 1 - pending >= (packed ? group : group_from(pending))) {
      moves_ready.wait_in(bulk);
      const std::int64_t next_group = packed ? group : group_from(p + 1);  // the chain's panels until the next one
      std::int64_t q = p + 2;
      for (; q < std::min(panels, p + 2 + next_group); ++q) {
        apply_panels(bulk_ctx, pending, p, first_column(q), first_column(q + 1));
        if (!column_ready[q]) column_ready[q] = std::make_unique<StreamEvent>();
        column_ready[q]->record(bulk);
      }
      if (q < panels) apply_panels(bulk_ctx, pending, p, first_column(q), nf_);
      bulk_done.record(bulk);
      slot_read[slot_of(pending)].record(bulk);
      pending = p + 1;
    }
  }
  // The side streams' last work, which no later panel joined.
  if ((outcome.order_rejected_early || outcome.collapsed_at_column >= 0) && side) {
    moves_done_.wait_in(bulk);
    inverse_done_.wait_in(bulk);
  }
  // All of side[1]'s watch work, also after an early stop (beyond inverse_done_ above). A
  // collapse that shows only in the last kOrderVerdictLag panels is not read here: the LU
  // completes and the probe judges it.
  if (watch && side) {
    StreamEvent watched;
    watched.order(side[1], bulk);
  }
  from_left.order(left, bulk);
  from_chain.order(chain, bulk);
  if (profile.enabled()) {
    ctx_.synchronize();
    profile.report_factorization(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
}

// The panel [j0, j0 + jb) of the factors f, rows j0 .. nf-1, in one cooperative launch
// (panel_factorization.cu: FP32 arithmetic inside an FP32 panel, so the pivot search sees FP32-accurate
// columns whatever the trailing update's arithmetic; FP64 inside an FP64 one). Then its
// interchanges as moves (panel_moves) and L11^-1 for the block-row solves (factor_blocked), in
// panel j0 / nb_'s slots. With `side` streams those two run there at once, beside what the
// chain does next (the L21 packing), and moves_done_ and inverse_done_ mark their ends: the
// chain waits for both, so they run side by side rather than one after the other on one side
// stream (docs/history/solver-log.md).
template <class T>
void BlockedLu::factor_panel(Context& ctx, T* f, std::int64_t j0, std::int64_t jb, const cudaStream_t* side) {
  T* diagonal = f + j0 + j0 * nf_;
  const bool in_order = in_order_ && j0 / nb_ < order_panels_;
  if (in_order) {  // in a given row order only the diagonal block's rows are searched
    profile_.start(Profile::DiagonalBlock, ctx.stream());
    factor_diagonal_block(diagonal, nf_, int(jb), pivots_ + j0, j0, first_zero_pivot_, j0,
                          block_row_buffers<T>().l21_copy.data(), ctx.stream());
    profile_.stop(Profile::DiagonalBlock, ctx.stream());
    factor_panel_in_order(ctx, f, j0, jb);
  }
  if (!in_order)
    panel_workspace<T>().factor(diagonal, nf_, nf_ - j0, int(jb), pivots_ + j0, j0, first_zero_pivot_,
                                j0, ctx.stream(), row_major_);
  if (side) {
    side_fork_.record(ctx.stream());
    side_fork_.wait_in(side[0]);
    if (!in_order) side_fork_.wait_in(side[1]);
  }
  cudaStream_t s = side ? side[0] : ctx.stream();
  const auto [to, from, moves] = panel_moves(j0 / nb_);
  profile_.start(Profile::RightSwaps, s);
  interchanges_to_moves(pivots_, j0, int(jb), to, from, moves, s);
  profile_.stop(Profile::RightSwaps, s);
  if (side) moves_done_.record(s);
  if (in_order) return;  // factor_panel_in_order inverted the diagonal block
  s = side ? side[1] : ctx.stream();
  profile_.start(Profile::PanelInverse, s);
  invert_unit_lower(diagonal, nf_, int(jb), block_row_buffers<T>().l11_inverses.data() + (j0 / nb_) * nb_ * nb_, s,
                    row_major_);
  profile_.stop(Profile::PanelInverse, s);
  if (side) inverse_done_.record(s);
}

// Panel q's interchanges as moves (one slot per panel: the left-hand stream reads them later).
std::tuple<int*, int*, int*> BlockedLu::panel_moves(std::int64_t q) {
  return {move_to_.data() + q * 2 * kPanelMaxWidth, move_from_.data() + q * 2 * kPanelMaxWidth,
          move_count_.data() + q};
}

// The rest of a panel whose rows stand in a given order (SolveOptions::reuse_pivot_order,
// FactorRequest::diagonal_blocks), row-major, after factor_diagonal_block has factored its
// diagonal block with pivoting among its own rows (factor_panel): L11^-1 and U11^-1 in one
// launch, L21 = A21 U11^-1 as one product with the latter on the trailing updates' backend
// (DGEMM for the FP64 LU; FP16 tensor cores for an FP16 LU; fp16x3 for FP32 factors under
// Tuning::fp32_accurate_l21), and max |L21| into largest_multiplier_ for the check at the end. No search over the
// column and no interchange beyond the block.
template <class T>
void BlockedLu::factor_panel_in_order(Context& ctx, T* f, std::int64_t j0, std::int64_t jb) {
  BlockRowBuffers<T>& buffers = block_row_buffers<T>();
  const T* diagonal = f + j0 + j0 * nf_;
  T* l11_inverse = buffers.l11_inverses.data() + (j0 / nb_) * nb_ * nb_;
  const std::int64_t below = nf_ - j0 - jb;
  if (below == 0) {
    invert_unit_lower(diagonal, nf_, int(jb), l11_inverse, ctx.stream(), true);
    return;
  }
  T* l21 = f + j0 + (j0 + jb) * nf_;  // rows j0 + jb .., columns j0 .. j0 + jb
  invert_both_triangles(diagonal, nf_, int(jb), l11_inverse, buffers.u11_inverse.data(), ctx.stream(), true);
  MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(buffers.l21_copy.data(), jb * sizeof(T), l21, nf_ * sizeof(T), jb * sizeof(T),
                                        below, cudaMemcpyDeviceToDevice, ctx.stream()));
  // Row-major L21 seen column-major is L21^T = U11^-T A21^T; the row-major inverse seen
  // column-major is U11^-T.
  const gemm::KernelPlacement placement = tuning().look_ahead ? gemm::KernelPlacement::Unclustered  // the chain's
                                                              : gemm::KernelPlacement::Anywhere;
  const bool accurate = std::is_same_v<T, float> && tuning().fp32_accurate_l21;  // Tuning::fp32_accurate_l21
  const gemm::Backend& l21_backend = accurate ? device_update_backend(Precision::Fp16x3) : *update_;
  l21_backend.run(
      ctx,
      gemm::to_problem(gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::N, jb, below, jb, T(1), buffers.u11_inverse.data(), jb,
                                         buffers.l21_copy.data(), jb, T(0), l21, nf_}),
      accurate ? gemm::Parameters{} : update_parameters_, gemm::Execution{false, placement});
  abs_max_row_major_kernel<<<unsigned(std::min<std::int64_t>(1024, (below * jb + 255) / 256)), 256, 0,
                             ctx.stream()>>>(l21, nf_, below, int(jb), largest_multiplier_.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

// The cooperative panel kernel's workspace for T (created on first use).
template <class T>
PanelWorkspace<T>& BlockedLu::panel_workspace() {
  auto& workspace = [&]() -> std::unique_ptr<PanelWorkspace<T>>& {
    if constexpr (std::is_same_v<T, float>) return panel32_;
    else return panel64_;
  }();
  if (!workspace) workspace = std::make_unique<PanelWorkspace<T>>(nf_, panel_blocks_, &ctx_);
  return *workspace;
}
template <class T>
BlockRowBuffers<T>& BlockedLu::block_row_buffers() {
  if constexpr (std::is_same_v<T, float>) return block_rows32_;
  else return block_rows64_;
}

template BlockedLuOutcome BlockedLu::run(const BlockedLuJob<float>&);
template BlockedLuOutcome BlockedLu::run(const BlockedLuJob<double>&);
template void BlockedLu::release<float>();
template void BlockedLu::release<double>();
template bool BlockedLu::fits<float>();
template bool BlockedLu::fits<double>();

}  // namespace mixsolve::solvers_detail::device_lu
