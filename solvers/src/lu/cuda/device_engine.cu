// SPDX-License-Identifier: BSD-3-Clause
// Device engine: the LU of A on the GPU, FP32- or FP64-stored, and its solves (design:
// docs/solver.md). It scans A once (norms, non-finite entries, range scaling, and the FP32 copy
// the blocked LU starts from), writes A's copy into the factors' storage, runs the blocked LU
// (blocked_lu.hpp) or, for small FP64 factorizations and where the panel kernel does not fit,
// cuSOLVER's dgetrf (Tuning::fp64_route forces a route), checks the result, and applies the
// factors: the pivot permutation, then the bandwidth-bound triangular solver or cuBLAS trsm. The
// vectors and the operator A come from DeviceSpace (refinement/cuda/device_space.hpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <string>
#include <vector>

#include "cholesky/cuda/device_cholesky.hpp"
#include "engine.hpp"
#include "lu/lu_rules.hpp"
#include "tuning.hpp"
#include "lu/cuda/blocked_lu.hpp"
#include "lu/cuda/engine_kernels.cuh"
#include "lu/cuda/engine_support.hpp"
#include "lu/cuda/lu_kernels.hpp"
#include "refinement/cuda/device_space.hpp"
#include "triangular/triangular_solver.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/gemm/dgemm_auto.hpp"
#include "mixsolve/gemm/problem.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail {

namespace {

using namespace device_lu;

// FP64 factorizations of fewer rows go to cuSOLVER's dgetrf: the blocked LU's streams, events and
// per-panel launches cost more than they save there (on an H100 the engine's route overtakes
// cuSOLVER's between n = 4096 and 6144; docs/history/solver-log.md).
constexpr std::int64_t kFp64EngineMinN = 6144;

// SolveOptions::cholesky_auto_min_n's default: below it cuSOLVER's dpotrf + dpotrs beat the
// default path's halfhalf Cholesky with its refinement; on an H200 the halfhalf path overtakes the
// FP64 path between 20480 and 24576 rows, the first order measured where it is ahead
// (docs/solver.md "The Cholesky's path").
constexpr std::int64_t kCholeskyAutoMinN = 24576;

// The columns of the Ozaki LU's wide bulk updates (DeviceEngine::ozaki_job), their inner dimension:
// ozaki2-int8 at 40 bits ran 1.03-1.10x DGEMM at k = 2048 and 1.4-1.5x at k = 4096 (H100,
// docs/ozaki.md); in the LU at n = 32768, groups of 8192 columns were slower than of 4096.
constexpr std::int64_t kEmulatedLuBlock = 4096;
// The predicted speed-up over DGEMM (gemm::dgemm_auto_choice) from which a bulk update takes the
// wide group: the wide groups' narrower products beside the bulk update (each panel's columns,
// the group's block rows) cost more than a smaller gain saves. H100, n = 16384, 40 bits: wide
// groups wherever dgemm-auto emulated made the LU ~10% slower than the FP64 LU.
constexpr double kOzakiWideGroupMinSpeedup = 1.3;

// Multiprocessors the panel kernel runs on by default (measured: docs/history/solver-log.md).
constexpr int kDefaultPanelBlocks = 32;
// The factors' order is n rounded up to this (DeviceEngine::nf_): cuBLAS's tensor-core GEMMs and
// the triangular solver's 16-byte copies need aligned leading dimensions, and off that grid the
// LU's products run ~3.8x slower (n = 32761 against 32768 on an H100).
constexpr std::int64_t kFactorAlignment = 32;
class DeviceEngine final : public DeviceSpace {
 public:
  DeviceEngine(Context& ctx, const MatrixView<const double>& a, int block_size) : DeviceSpace(ctx, a) {
    nf_ = (n_ + kFactorAlignment - 1) / kFactorAlignment * kFactorAlignment;
    nb_ = std::min<std::int64_t>(block_size > 0 ? block_size : 256, kPanelMaxWidth);
    pivots_ = DeviceBuffer<int>(ctx_, std::max<std::int64_t>(nf_, 1));
    permutation_ = DeviceBuffer<int>(ctx_, std::max<std::int64_t>(n_, 1));
    first_zero_pivot_ = DeviceBuffer<int>(ctx_, 1);
    info_ = DeviceBuffer<int>(ctx_, 1);
    flag_ = DeviceBuffer<unsigned long long>(ctx_, 1);
    // Blocks (= multiprocessors) of the cooperative panel kernel; Tuning::panel_blocks (solvers/src/tuning.hpp).
    const int panel_blocks = tuning().panel_blocks > 0 ? tuning().panel_blocks : kDefaultPanelBlocks;
    blocked_ = std::make_unique<BlockedLu>(ctx_, n_, nf_, nb_, panel_blocks, profile_, pivots_.data(),
                                           first_zero_pivot_.data());
  }
  ~DeviceEngine() override {
    if (solver_) cusolverDnDestroy(solver_);
  }

  // SolveOptions::auto_min_n and cholesky_auto_min_n: the orders from which the cheaper
  // factorizations were measured faster than cuSOLVER's FP64 solve (docs/solver.md).
  std::int64_t default_auto_min_n(FactorKind kind) const override {
    return kind == FactorKind::Cholesky ? kCholeskyAutoMinN : 12288;
  }

  void expect_factorization(Precision p) override { expected_precision_ = p; }
  double norm_inf() override { return scan_a().norm_inf; }

  std::pair<std::int64_t, std::int64_t> find_nonfinite(const MatrixView<const double>& m) override {
    if (m.data == a_.data && m.ld == a_.ld && m.rows == n_ && m.cols == n_) {
      const std::int64_t first = scan_a().first_nonfinite;
      return first < 0 ? std::pair<std::int64_t, std::int64_t>{-1, -1}
                       : std::pair<std::int64_t, std::int64_t>{first % n_, first / n_};
    }
    return find_nonfinite_in(m.data, m.ld, m.rows, m.cols);
  }

  std::pair<std::int64_t, std::int64_t> find_asymmetry() override {
    return device_cholesky::first_asymmetric_pair(a_.data, a_.ld, n_, flag_.data(), stream());
  }

  FactorResult factor(const FactorRequest& request) override {
    const Precision p = request.precision;
    if (request.kind == FactorKind::Cholesky) {
      FactorResult result = factor_cholesky(p, request.range_scaling);
      factors_complete_ = result.status == StopReason::Converged;
      return result;
    }
    // The previous factorization's row order, where an LU completed (engine.hpp), and how many
    // of its leading columns to follow (trusted_order_columns).
    std::vector<int> order;
    std::int64_t order_columns = 0;
    if (request.reuse_pivot_order && p == Precision::FP64 && factors_complete_ && kind_ == FactorKind::Lu &&
        !two_sided_) {
      order = permutation_.to_host(stream());
      order_columns = trusted_order_columns(pivot_magnitudes(), unit_roundoff(precision_, ozaki_bits_));
    }
    kind_ = FactorKind::Lu;
    collapse_below_ = fp64_factors(p) ? 0.0 : request.collapse_below;
    FactorResult result = factor_unchecked(p, request.range_scaling, order, order_columns, request.diagonal_blocks);
    factors_complete_ = result.status == StopReason::Converged;
    return result;
  }

  double pivot_ratio() override {
    if (pivot_range_.size() == 0) pivot_range_ = DeviceBuffer<unsigned long long>(ctx_, 2);
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(pivot_range_.data(), 0xff, sizeof(unsigned long long), stream()));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(pivot_range_.data() + 1, 0, sizeof(unsigned long long), stream()));
    const unsigned blocks = std::min(blocks_for(n_), 64u);
    if (fp64_factors(precision_))
      diagonal_abs_range_kernel<<<blocks, 256, 0, stream()>>>(factors64_.data(), nf_, n_, pivot_range_.data());
    else
      diagonal_abs_range_kernel<<<blocks, 256, 0, stream()>>>(factors32_.data(), nf_, n_, pivot_range_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    unsigned long long bits[2] = {0, 0};
    pivot_range_.copy_to_host(bits, 2, stream());
    double range[2];
    std::memcpy(range, bits, sizeof range);
    return range[1] > 0 ? range[0] / range[1] : 0.0;
  }

  // |u_kk| of the current factors, on the host.
  std::vector<double> pivot_magnitudes() {
    return fp64_factors(precision_) ? diagonal_magnitudes(factors64_.data()) : diagonal_magnitudes(factors32_.data());
  }
  template <class T>
  std::vector<double> diagonal_magnitudes(const T* f) {
    std::vector<T> diagonal(n_);
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(diagonal.data(), sizeof(T), f, (nf_ + 1) * sizeof(T), sizeof(T), n_,
                                          cudaMemcpyDeviceToHost, stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    std::vector<double> magnitudes(n_);
    for (std::int64_t k = 0; k < n_; ++k) magnitudes[k] = std::fabs(double(diagonal[k]));
    return magnitudes;
  }

  // order_columns: how many leading columns follow `order` (the rest pivot partially).
  // diagonal_blocks (FP32-stored factors, FactorRequest::diagonal_blocks): A's own order first.
  FactorResult factor_unchecked(Precision p, bool range_scaling, const std::vector<int>& order,
                                std::int64_t order_columns, bool diagonal_blocks) {
    triangular32_.reset();  // they refer to the factors being replaced
    triangular64_.reset();
    packed_factors_.reset();
    row_order_.clear();
    precision_ = p;
    two_sided_ = false;
    mu_ = 1.0;
    if (fp64_factors(p)) {
      prepared_copy_ = false;
      // The FP32 factors go first: the FP64 ones never sit beside them (peak 8 n^2, not 12 n^2).
      factors32_ = DeviceBuffer<float>();
      solve_buffer_ = DeviceBuffer<float>();
      blocked_->release<float>();
      allocate_factors(factors64_);
      // The blocked LU below (DGEMM updates, FP64 panels) from n = kFp64EngineMinN on, where the
      // rows fit the panel kernel; else cusolverDnDgetrf. Tuning::fp64_route forces either (the
      // engine only where it fits).
      const Tuning::Fp64Route route = tuning().fp64_route;
      const bool engine = route == Tuning::Fp64Route::Engine ||
                          (route == Tuning::Fp64Route::BySize && n_ >= kFp64EngineMinN);
      if (!engine || !blocked_->fits<double>()) return factor_with_cusolver();
      order_panels_ = order_columns / nb_;
      if (order.empty() || order_panels_ == 0 || !row_major_layout())
        return factor_blocked_lu(factors64_.data(), device_update_backend(p), false);
      const FactorResult in_order = factor_blocked_lu(factors64_.data(), device_update_backend(p), false, order);
      if (in_order.pivot_order == PivotOrder::Reused) return in_order;
      FactorResult again = factor_blocked_lu(factors64_.data(), device_update_backend(p), false);  // partial pivoting
      again.pivot_order = PivotOrder::Rejected;
      again.largest_multiplier = in_order.largest_multiplier;
      return again;
    }
    factors64_ = DeviceBuffer<double>();
    blocked_->release<double>();
    // The scan's copy (scan_a), once, where it is what the conversion would make (up to mu).
    const bool prepared = std::exchange(prepared_copy_, false) && prepared_copy_usable(p, range_scaling);
    if (!prepared) allocate_factors(factors32_);
    const bool scaling = range_scaling && !prepared;  // the scan's copy is factored unscaled
    const gemm::Backend& update = device_update_backend(p);
    order_panels_ = 0;
    if (!diagonal_blocks || !row_major_layout())
      return factor_blocked_lu(factors32_.data(), update, scaling, {}, prepared);
    order_panels_ = (nf_ + nb_ - 1) / nb_;  // every panel in A's own order
    const FactorResult own = factor_blocked_lu(factors32_.data(), update, scaling, {}, prepared, true);
    order_panels_ = 0;
    if (own.pivot_order != PivotOrder::DiagonalBlocksRejected) return own;
    FactorResult again = factor_blocked_lu(factors32_.data(), update, scaling);  // partial pivoting
    again.pivot_order = PivotOrder::DiagonalBlocksRejected;
    again.largest_multiplier = own.largest_multiplier;
    return again;
  }

  FactorResult factor_with_cusolver() {
    FactorResult result;
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(factors64_.data(), nf_ * sizeof(double), a_.data, a_.ld * sizeof(double),
                                          n_ * sizeof(double), n_, cudaMemcpyDeviceToDevice, stream()));
    // The storage beyond the n x n factors is zeroed: the triangular solves (ours and cuBLAS's)
    // load whole tiles, rows n .. nf - 1 included, and must not read uninitialized memory there
    // (compute-sanitizer initcheck; its synccheck saw cuBLAS's trsm diverge at a barrier on it).
    if (nf_ > n_) {
      MIXSOLVE_CUDA_CHECK(cudaMemset2DAsync(factors64_.data() + n_, nf_ * sizeof(double), 0,
                                            (nf_ - n_) * sizeof(double), n_, stream()));
      MIXSOLVE_CUDA_CHECK(
          cudaMemsetAsync(factors64_.data() + n_ * nf_, 0, (nf_ - n_) * nf_ * sizeof(double), stream()));
    }
    if (!solver_) {  // created on first use: most solves never factor with cuSOLVER
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver_));
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver_, stream()));
    }
    int lwork = 0;
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(solver_, int(n_), int(n_), factors64_.data(), int(nf_), &lwork));
    DeviceBuffer<double> work(ctx_, std::max(lwork, 1));
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf(solver_, int(n_), int(n_), factors64_.data(), int(nf_), work.data(),
                                             pivots_.data(), info_.data()));
    track_peak(work.bytes());
    const int info = read_info();
    if (info > 0) {
      result.status = StopReason::ZeroPivot;
      result.zero_pivot_column = info - 1;
      return result;
    }
    // cuSOLVER's pivots are 1-based and sequential; keep them as global 0-based rows.
    add_panel_pivots_kernel<<<blocks_for(n_), 256, 0, stream()>>>(pivots_.data(), int(n_), 0, pivots_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    if (find_nonfinite_in(factors64_.data(), nf_, n_, n_).first >= 0) {
      result.status = StopReason::Overflow;
      return result;
    }
    pivots_to_permutation(pivots_.data(), n_, permutation_.data(), stream());
    choose_fp64_solves(factors64_.data());
    track_peak();
    return result;
  }

  // The Ozaki LU is the FP64 blocked LU with its trailing updates on dgemm-auto (or
  // Tuning::ozaki_lu_update) keeping ozaki_bits_ bits of each operand. Its bulk updates take
  // emulated_block_columns() panels' columns at once (k = 4096: the emulation pays only for
  // inner dimensions in the thousands) while dgemm-auto would emulate such a product, and the
  // FP64 LU's group after that, where the trailing matrix has become too small; where it would
  // emulate none (no cost model for this GPU, small n) the Ozaki LU is the FP64 LU.
  const gemm::Backend& ozaki_update_backend() const {
    return gemm::find_backend(tuning().ozaki_lu_update.empty() ? precision_info(Precision::Ozaki).device_update
                                                                : tuning().ozaki_lu_update);
  }
  BlockedLuJob<double> ozaki_job(double* f, bool row_major) const {
    BlockedLuJob<double> job{f, row_major, &ozaki_update_backend()};
    job.update_parameters = {{"bits", ozaki_bits_}};
    const std::int64_t group = std::max<std::int64_t>(1, emulated_block_columns() / nb_), width = group * nb_;
    if (!tuning().ozaki_lu_update.empty()) {  // forced: every bulk update wide
      job.update_group = group;
      return job;
    }
    // The fewest rows (from a group's first panel on) at which dgemm-auto emulates the bulk
    // product (the rows below the group times about the columns beyond the next group's, k =
    // width) at a predicted kOzakiWideGroupMinSpeedup or more. A plan: dgemm-auto may still run
    // DGEMM at run time (memory, NaN), which costs speed only.
    std::int64_t min_rows = -1;
    for (std::int64_t rows = nf_; rows > 2 * width; rows -= nb_) {
      const gemm::DgemmAutoChoice choice =
          gemm::dgemm_auto_choice(ctx_, rows - 2 * width, rows - width, width, ozaki_bits_);
      if (choice.backend != "ozaki2-int8" || choice.predicted_speedup < kOzakiWideGroupMinSpeedup) break;
      min_rows = rows;
    }
    if (min_rows <= 0) return BlockedLuJob<double>{f, row_major, &device_update_backend(Precision::FP64)};
    job.update_group = group;
    job.update_group_min_rows = min_rows;
    return job;
  }

  // The Ozaki LU's wide bulk-update group, in columns (Tuning::emulated_lu_block overrides it).
  static std::int64_t emulated_block_columns() {
    return tuning().emulated_lu_block > 0 ? tuning().emulated_lu_block : kEmulatedLuBlock;
  }

  // The bandwidth-bound triangular solver applies explicit inverses of its diagonal blocks, whose
  // error grows with their condition; substitution (cuBLAS trsm, as getrs) is backward stable
  // whatever it is. FP64 factors whose pivots span more than 1 / u (min |u_kk| < u max |u_kk|:
  // A is numerically singular) take substitution: with the block inverses, a Hilbert matrix's
  // first solve (n = 16384) has a backward error 6.7e6x dgetrf+getrs's, which refinement cannot
  // recover. The block-inverse solver is built only where it is used.
  void choose_fp64_solves(const double* f) {
    substitution_solves_ = pivot_ratio() < 0x1p-53;
    if (!substitution_solves_) triangular64_ = std::make_unique<TriangularSolver<double>>(f, n_, nf_, stream(), &ctx_);
  }

  // The blocked LU (BlockedLu) of A, or of mu R A S with range scaling, into f (column-major
  // when it returns): T = float for the FP32-stored factorizations, double for FP64. f holds the
  // nf x nf matrix [A 0; 0 I] (kFactorAlignment), whose LU is A's with an identity beside it.
  // With a row order (row-major layout only): the LU of A's rows in that order, pivoting inside
  // the diagonal blocks of its first order_panels_ panels (factor_panel_in_order); its result is
  // Reused where every check passed, else Rejected (the caller then factors with partial
  // pivoting). own_order: the same in A's own row order (DiagonalBlocks, DiagonalBlocksRejected).
  template <class T>
  FactorResult factor_blocked_lu(T* f, const gemm::Backend& update, bool range_scaling,
                                 const std::vector<int>& order = {}, bool copy_ready = false, bool own_order = false) {
    FactorResult result;
    if (range_scaling) compute_range_scaling();
    bool row_major = row_major_layout();  // until the transpose at the end
    const bool in_order = (own_order || !order.empty()) && row_major;
    const PivotOrder followed = own_order ? PivotOrder::DiagonalBlocks : PivotOrder::Reused;
    const PivotOrder rejected = own_order ? PivotOrder::DiagonalBlocksRejected : PivotOrder::Rejected;
    DeviceBuffer<int> destination_row;
    if (!order.empty() && row_major) {
      std::vector<int> position(n_);
      for (std::int64_t i = 0; i < n_; ++i) position[order[i]] = int(i);
      destination_row = DeviceBuffer<int>(ctx_, n_);
      destination_row.copy_from_host(position, stream());
      track_peak(destination_row.bytes());
    }
    // A's copy in f, unless the scan made it (copy_ready: row-major and finite, prepared_copy_usable).
    if (!copy_a_into(f, row_major, destination_row.data(), copy_ready)) {
      result.status = StopReason::Overflow;  // beyond the factors' range
      return result;
    }
    BlockedLuJob<T> job{f, row_major, &update};
    if constexpr (std::is_same_v<T, double>)
      if (precision_ == Precision::Ozaki) job = ozaki_job(f, row_major);
    job.order_panels = in_order ? order_panels_ : 0;
    job.collapse_below = collapse_below_;
    const BlockedLuOutcome outcome = blocked_->run(job);
    if (precision_ == Precision::Ozaki && job.update_group > 0) {
      // The emulation's workspace (~6 GB at n = 32768) is counted in the peak, then given back:
      // nothing after the LU needs it.
      result.emulated_bits = ozaki_bits_;
      track_peak();
      ctx_.release_workspace();
    }
    if (outcome.collapsed_at_column >= 0) {  // the pivots collapsed part way (kCollapseMinPivots)
      // An exact zero pivot (the NaNs after it count as small) says more; it may lie in the up to
      // kOrderVerdictLag panels factored after the judged one (the host LU stops at the first).
      int first_zero = 0;
      first_zero_pivot_.copy_to_host(&first_zero, 1, stream());
      result.status = first_zero < n_ ? StopReason::ZeroPivot : StopReason::CollapsedPivots;
      result.zero_pivot_column = first_zero < n_ ? first_zero : -1;
      result.collapsed_at_column = outcome.collapsed_at_column;
      return result;
    }
    if (outcome.order_rejected_early) {  // the order failed its check part way (kOrderVerdictLag)
      result.largest_multiplier = blocked_->largest_multiplier();
      result.pivot_order = rejected;
      return result;
    }
    const bool checked = row_major;  // the transpose checks for NaN/Inf on its way
    if (row_major) {  // the solves read column-major factors
      const dim3 tiles(unsigned((n_ + 31) / 32), unsigned((n_ + 31) / 32));
      reset_first_nonfinite();
      transpose_in_place_kernel<<<tiles, dim3(32, 8), 0, stream()>>>(f, nf_, n_, flag_.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      row_major = false;
    }
    int first_zero = 0;
    first_zero_pivot_.copy_to_host(&first_zero, 1, stream());
    if (in_order) {  // the order's checks: a zero pivot inside a diagonal block, a large multiplier, NaN/Inf
      result.largest_multiplier = blocked_->largest_multiplier();
      const bool finite = read_first_nonfinite(n_).first < 0;
      if (first_zero < n_ || !finite || !(result.largest_multiplier <= kReusedOrderMaxMultiplier)) {
        result.pivot_order = rejected;
        return result;
      }
      result.pivot_order = followed;
      if (!own_order) result.reused_columns = std::min(order_panels_ * nb_, n_);
      row_order_ = order;
    }
    if (first_zero < n_) {
      result.status = StopReason::ZeroPivot;
      result.zero_pivot_column = first_zero;
      return result;
    }
    if ((checked ? read_first_nonfinite(n_) : find_nonfinite_in(f, nf_, n_, n_)).first >= 0) {
      result.status = StopReason::Overflow;
      return result;
    }
    prepare_solves(f);
    return result;
  }

  // [A 0; 0 I] into the nf x nf factors f (kFactorAlignment): A converted to T, times mu R .. S
  // (row_factor, column_factor), row-major where row_major, its rows moved to destination_row
  // where that is not null; the identity beside it. copy_ready: A's part is there already (the
  // scan's copy). False where an entry of A fell outside T's range (the border then unwritten).
  template <class T>
  bool copy_a_into(T* f, bool row_major, const int* destination_row, bool copy_ready) {
    if (!copy_ready) {
      reset_first_nonfinite();
      if (row_major) {
        const dim3 tiles(unsigned((n_ + 31) / 32), unsigned((n_ + 31) / 32));
        convert_transposed_kernel<T><<<tiles, dim3(32, 8), 0, stream()>>>(
            a_.data, a_.ld, f, nf_, n_, row_factor(), column_factor(), mu_, flag_.data(), destination_row);
      } else {
        convert_kernel<<<stripe_grid(n_, n_), 256, 0, stream()>>>(a_.data, a_.ld, f, nf_, n_, n_, row_factor(),
                                                                  column_factor(), mu_, flag_.data());
      }
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      if (read_first_nonfinite(n_).first >= 0) return false;
    }
    if (nf_ > n_) {
      identity_border_kernel<<<blocks_for(nf_ * (nf_ - n_)), 256, 0, stream()>>>(f, nf_, n_);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    return true;
  }

  // The row order and triangular solvers of the factors just made in f (column-major LU form).
  template <class T>
  void prepare_solves(T* f) {
    pivots_to_permutation(pivots_.data(), n_, permutation_.data(), stream(), row_order_);
    if constexpr (std::is_same_v<T, float>) {
      triangular32_ = std::make_unique<TriangularSolver<float, double>>(f, n_, nf_, stream(), &ctx_);
      packed_factors_.reset();
      if (factor_storage_ != slfp::Format::Fp32)
        packed_factors_ = std::make_unique<PackedFactors>(factor_storage_, f, n_, nf_, stream(), &ctx_);
    } else {
      choose_fp64_solves(f);
    }
    track_peak();
  }

  // The Cholesky of A's lower triangle (of mu S A S where range-scaled), stored as LU factors with
  // the identity as row order (engine.hpp; cholesky/cuda/device_cholesky.hpp): FP64-stored for
  // FP64 and Ozaki, FP32-stored otherwise, the updates on the precision's backend (Ozaki's on
  // dgemm-auto, which emulates the products its cost model predicts faster).
  FactorResult factor_cholesky(Precision p, bool range_scaling) {
    triangular32_.reset();  // they refer to the factors being replaced
    triangular64_.reset();
    packed_factors_.reset();
    row_order_.clear();
    precision_ = p;
    kind_ = FactorKind::Cholesky;
    two_sided_ = false;
    mu_ = 1.0;
    scan_a();                // before prepared_copy_ is dropped: a first scan would set it again
    prepared_copy_ = false;  // the scan's copy is an LU's (row-major, unscaled)
    if (!cholesky_) cholesky_ = std::make_unique<device_cholesky::DeviceCholesky>(ctx_, profile_);
    blocked_->release<float>();  // the LU's panel buffers: not used by a Cholesky
    blocked_->release<double>();
    if (fp64_factors(p)) {
      factors32_ = DeviceBuffer<float>();
      solve_buffer_ = DeviceBuffer<float>();
      allocate_factors(factors64_);
      return run_cholesky(factors64_.data(), p, false);
    }
    factors64_ = DeviceBuffer<double>();
    allocate_factors(factors32_);
    return run_cholesky(factors32_.data(), p, range_scaling);
  }

  template <class T>
  FactorResult run_cholesky(T* f, Precision p, bool range_scaling) {
    FactorResult result;
    if (range_scaling) compute_symmetric_scaling();
    // [A 0; 0 I], column-major: its Cholesky is [L 0; 0 I], aligned for the products.
    if (!copy_a_into(f, false, nullptr, false)) {
      result.status = StopReason::Overflow;  // beyond the factors' range
      return result;
    }
    gemm::Parameters parameters;
    if (p == Precision::Ozaki) parameters = {{"bits", ozaki_bits_}};
    const gemm::Backend& update = p == Precision::Ozaki ? ozaki_update_backend() : device_update_backend(p);
    const std::int64_t chunk = tuning().cholesky_inner_chunk > 0
                                   ? tuning().cholesky_inner_chunk
                                   : update_inner_chunk(precision_info(p).truncating_long_products, nb_);
    profile_.begin_factorization(stream(), {{stream(), "main"}});
    const auto t0 = std::chrono::steady_clock::now();
    // The FP64 Cholesky: cuSOLVER's dpotrf (the baseline's own speed, as the fallback must not be
    // slower than it), or the recursion under Tuning::fp64_route Engine.
    const bool by_cusolver = p == Precision::FP64 && tuning().fp64_route != Tuning::Fp64Route::Engine;
    device_cholesky::Breakdown breakdown;
    if constexpr (std::is_same_v<T, double>) {
      if (by_cusolver) breakdown = potrf_with_cusolver(f);  // its workspace counted there
    }
    // Short products on cuBLAS only where the rung's products are at least as accurate as T's
    // arithmetic (device_cholesky.hpp).
    const bool exact_short_products = fp64_factors(p) || unit_roundoff(p, ozaki_bits_) <= 0x1p-24;
    std::int64_t tensor_min_inner = exact_short_products ? device_cholesky::kCholeskyTensorMinInner : 0;
    if (tuning().cholesky_tensor_min_inner >= 0) tensor_min_inner = tuning().cholesky_tensor_min_inner;
    if (!by_cusolver) breakdown = cholesky_->run(f, nf_, nf_, chunk, update, parameters, tensor_min_inner);
    profile_.report_cholesky(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    track_peak(by_cusolver ? 0 : cholesky_->transient_bytes());
    if (p == Precision::Ozaki) {
      // dgemm-auto decides each product; the plan for the largest update (k capped at
      // kMaxUpdateInner) says whether any was emulated. Its workspace is counted, then given back.
      const std::int64_t half = nf_ / 2;
      if (gemm::dgemm_auto_choice(ctx_, half, half, std::min(half, kMaxUpdateInner), ozaki_bits_)
              .backend == "ozaki2-int8")
        result.emulated_bits = ozaki_bits_;
      ctx_.release_workspace();
    }
    result.largest_diagonal = largest_scaled_diagonal();
    if (breakdown.column >= 0) {
      // A is finite: a pivot that is NaN or -Inf comes from an overflow of the factors (an entry
      // beyond the arithmetic's range), not from A. The border's columns (n and on) cannot break
      // down but through such an overflow.
      const bool overflow = !std::isfinite(breakdown.pivot) || breakdown.column >= n_;
      result.status = overflow ? StopReason::Overflow : StopReason::NotPositiveDefinite;
      if (!overflow) {
        result.zero_pivot_column = breakdown.column;
        result.breakdown_pivot = breakdown.pivot;
        result.breakdown_pivot_known = breakdown.pivot_known;
      }
      return result;
    }
    cholesky_->to_lu_form(f, nf_, nf_);
    if (find_nonfinite_in(f, nf_, n_, n_).first >= 0) {
      result.status = StopReason::Overflow;
      return result;
    }
    device_cholesky::identity_pivots(pivots_.data(), n_, stream());
    prepare_solves(f);
    return result;
  }

  // cusolverDnDpotrf of the leading n x n block of f (lower; the border stays the identity). Its
  // breakdown's column from info; the pivot's value is not reported (0: not positive).
  device_cholesky::Breakdown potrf_with_cusolver(double* f) {
    if (!solver_) {
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver_));
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver_, stream()));
    }
    int lwork = 0;
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf_bufferSize(solver_, CUBLAS_FILL_MODE_LOWER, int(n_), f, int(nf_), &lwork));
    DeviceBuffer<double> work(ctx_, std::max(lwork, 1));
    MIXSOLVE_CUSOLVER_CHECK(
        cusolverDnDpotrf(solver_, CUBLAS_FILL_MODE_LOWER, int(n_), f, int(nf_), work.data(), lwork, info_.data()));
    track_peak(work.bytes());
    const int info = read_info();  // > 0: the leading minor of that order is not positive definite
    device_cholesky::Breakdown b;
    if (info > 0) b.column = info - 1;
    b.pivot_known = false;
    return b;
  }

  // max a_ii of the matrix a Cholesky factors (mu S A S where scaled): the scale of its pivots.
  double largest_scaled_diagonal() {
    std::vector<double> diagonal(n_);
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(diagonal.data(), sizeof(double), a_.data, (a_.ld + 1) * sizeof(double),
                                          sizeof(double), n_, cudaMemcpyDeviceToHost, stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    double largest = 0;
    for (std::int64_t i = 0; i < n_; ++i) {
      const double s = two_sided_ ? symmetric_scale_[i] : 1.0;
      largest = std::max(largest, std::fabs(diagonal[i]) * mu_ * s * s);
    }
    return largest;
  }

  // The Cholesky's R = S and mu (lu_rules.hpp, symmetric_equilibrating_power_of_two): S only
  // where the rows' largest entries spread widely, as for the LU.
  void compute_symmetric_scaling() {
    const RangeScaling choice = choose_range_scaling(scan_a().row_max, scan_a().column_max);
    mu_ = choice.mu;
    two_sided_ = choice.two_sided;
    if (!two_sided_) return;
    std::vector<double> diagonal(n_);
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(diagonal.data(), sizeof(double), a_.data, (a_.ld + 1) * sizeof(double),
                                          sizeof(double), n_, cudaMemcpyDeviceToHost, stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    symmetric_scale_.resize(n_);
    for (std::int64_t i = 0; i < n_; ++i) symmetric_scale_[i] = symmetric_equilibrating_power_of_two(diagonal[i]);
    row_factor_ = DeviceBuffer<double>(ctx_, n_);
    column_factor_ = DeviceBuffer<double>(ctx_, n_);
    row_factor_.copy_from_host(symmetric_scale_, stream());
    column_factor_.copy_from_host(symmetric_scale_, stream());
  }

  void apply_inverse(const MatrixView<double>& y) override {
    profile_.start(Profile::Solve, stream());
    apply_inverse_unprofiled(y);
    profile_.stop(Profile::Solve, stream());
  }

  void apply_inverse_unprofiled(const MatrixView<double>& y) {
    const std::int64_t k = y.cols;
    // A^-1 = mu S M^-1 R for the factors M of mu R A S (R = S = I, mu = 1 unscaled, and for FP64
    // factors). In FP64 arithmetic for FP64 factors, and for FP32 factors up to
    // kFp64ApplyMaxColumns columns (engine.hpp): y = P R y through a copy, the two triangles,
    // then mu S.
    if (fp64_factors(precision_) || k <= kFp64ApplyMaxColumns) {
      if (solve64_.size() < std::size_t(n_ * k)) solve64_ = DeviceBuffer<double>(ctx_, n_ * k);
      double* w = solve64_.data();
      gather_rows(y.data, y.ld, permutation_.data(), n_, k, w, n_, stream(), row_factor());
      solve_triangles_in_fp64(w, k);
      convert_kernel<<<stripe_grid(n_, k), 256, 0, stream()>>>(w, n_, y.data, y.ld, n_, k, column_factor(), nullptr,
                                                               mu_);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    if (solve_buffer_.size() < std::size_t(n_ * k)) solve_buffer_ = DeviceBuffer<float>(ctx_, n_ * k);
    float* w = solve_buffer_.data();
    // More columns (classic IR; GMRES applies one at a time) go through cublasStrsm in FP32. Each
    // column then gets a power of two sigma that brings max |R y| to [1/2, 1) before it is
    // rounded to FP32: a residual's size follows A's scale and may lie outside FP32's range.
    if (vector_scale_.size() < std::size_t(2 * k)) vector_scale_ = DeviceBuffer<double>(ctx_, 2 * k);
    double *sigma = vector_scale_.data(), *inverse_sigma = sigma + k;
    column_factors_kernel<<<unsigned(k), 256, 0, stream()>>>(y.data, y.ld, n_, row_factor(), sigma, inverse_sigma);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    gather_rows(y.data, y.ld, permutation_.data(), n_, k, w, n_, stream(), row_factor(), sigma);
    solve_triangles_with_cublas(factors32_.data(), w, k);
    convert_kernel<<<stripe_grid(n_, k), 256, 0, stream()>>>(w, n_, y.data, y.ld, n_, k, column_factor(),
                                                             inverse_sigma, mu_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  // apply_inverse's operator mu S M^-1 R P (M = LU of the scaled rows in pivot order) transposed:
  // y := P^T R M^-T mu S y, by cuBLAS trsv in the factors' precision. FP32 factors take y scaled
  // by a power of two sigma that brings max |S y| into [1/2, 1) (FP32's range), undone after.
  void apply_inverse_transpose(double* y) override {
    if (vector_scale_.size() < 2) vector_scale_ = DeviceBuffer<double>(ctx_, 2);
    if (fp64_factors(precision_)) {
      if (solve64_.size() < std::size_t(n_)) solve64_ = DeviceBuffer<double>(ctx_, n_);
      double* w = solve64_.data();
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(w, y, n_ * sizeof(double), cudaMemcpyDeviceToDevice, stream()));
      solve_transposed_triangles(factors64_.data(), w);
      scatter_rows_kernel<<<blocks_for(n_), 256, 0, stream()>>>(w, permutation_.data(), n_, nullptr, nullptr, 1.0, y);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    if (solve_buffer_.size() < std::size_t(n_)) solve_buffer_ = DeviceBuffer<float>(ctx_, n_);
    float* w = solve_buffer_.data();
    double *sigma = vector_scale_.data(), *inverse_sigma = sigma + 1;
    column_factors_kernel<<<1, 256, 0, stream()>>>(y, n_, n_, column_factor(), sigma, inverse_sigma);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    convert_kernel<<<stripe_grid(n_, 1), 256, 0, stream()>>>(y, n_, w, n_, n_, 1, column_factor(), sigma);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    solve_transposed_triangles(factors32_.data(), w);
    scatter_rows_kernel<<<blocks_for(n_), 256, 0, stream()>>>(w, permutation_.data(), n_, row_factor(), inverse_sigma,
                                                              mu_, y);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  bool badly_scaled() override { return choose_range_scaling(scan_a().row_max, scan_a().column_max).two_sided; }

  std::size_t peak_workspace_bytes() const override { return peak_; }

 private:

  // w := U^-1 L^-1 w for an n x k FP64 block with the current factors, in FP64 arithmetic. One to
  // four vectors (refinement, GMRES, the probe) go through the bandwidth-bound solver in one pass
  // over the factors (FP32 factors only reach here that way); blocks of many through cuBLAS trsm.
  void solve_triangles_in_fp64(double* w, std::int64_t k) {
    static_assert(kFp64ApplyMaxColumns <= kTriangularSolveMaxColumns, "one solve takes every column");
    if (k <= kFp64ApplyMaxColumns && !(fp64_factors(precision_) && substitution_solves_)) {
      if (fp64_factors(precision_)) triangular64_->solve(w, n_, int(k), stream());
      else if (packed_factors_) packed_factors_->solve(w, n_, int(k), stream());
      else triangular32_->solve(w, n_, int(k), stream());
      return;
    }
    solve_triangles_with_cublas(factors64_.data(), w, k);
  }

  // w := L^-T U^-T w for one vector by cuBLAS trsv, in the factors' precision.
  template <class T>
  void solve_transposed_triangles(const T* lu, T* w) {
    const auto trsv = [&](cublasFillMode_t fill, cublasDiagType_t diag) {
      if constexpr (std::is_same_v<T, float>)
        MIXSOLVE_CUBLAS_CHECK(cublasStrsv(ctx_.cublas(), fill, CUBLAS_OP_T, diag, int(n_), lu, int(nf_), w, 1));
      else
        MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(ctx_.cublas(), fill, CUBLAS_OP_T, diag, int(n_), lu, int(nf_), w, 1));
    };
    trsv(CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT);
    trsv(CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT);
  }

  // w := U^-1 L^-1 w for an n x k block by cuBLAS trsm, in the factors' precision.
  template <class T>
  void solve_triangles_with_cublas(const T* lu, T* w, std::int64_t k) {
    const auto trsm = [&](cublasFillMode_t fill, cublasDiagType_t diag) {
      const T one = 1;
      if constexpr (std::is_same_v<T, float>)
        MIXSOLVE_CUBLAS_CHECK(cublasStrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, fill, CUBLAS_OP_N, diag, int(n_), int(k), &one,
                                          lu, int(nf_), w, int(n_)));
      else
        MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx_.cublas(), CUBLAS_SIDE_LEFT, fill, CUBLAS_OP_N, diag, int(n_), int(k), &one,
                                          lu, int(nf_), w, int(n_)));
    };
    trsm(CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT);
    trsm(CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT);
  }

  int read_info() {
    int info = 0;
    info_.copy_to_host(&info, 1, stream());
    return info;
  }

  template <class T>
  std::pair<std::int64_t, std::int64_t> find_nonfinite_in(const T* data, std::int64_t ld, std::int64_t rows,
                                                          std::int64_t cols) {
    if (rows == 0 || cols == 0) return {-1, -1};
    reset_first_nonfinite();
    count_nonfinite_kernel<<<stripe_grid(rows, cols), 256, 0, stream()>>>(data, ld, rows, cols, flag_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    return read_first_nonfinite(rows);
  }

  // flag_ holds the smallest linear index (i + j rows) of a NaN or Inf a kernel met.
  void reset_first_nonfinite() {
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(flag_.data(), 0xff, sizeof(unsigned long long), stream()));
  }
  std::pair<std::int64_t, std::int64_t> read_first_nonfinite(std::int64_t rows) {
    unsigned long long first = 0;
    flag_.copy_to_host(&first, 1, stream());
    if (first == ~0ull) return {-1, -1};
    return {std::int64_t(first % rows), std::int64_t(first / rows)};
  }

  // What the driver and the range scaling read of A, from one pass (scan_matrix_kernel), once.
  struct MatrixScan {
    std::int64_t first_nonfinite = -1;  // i + j n of the first NaN/Inf in column-major order
    double norm_inf = 0;
    double largest = 0, smallest_nonzero = INFINITY;  // of the finite |a_ij|
    std::vector<double> row_max, column_max;  // of |a_ij|
  };
  const MatrixScan& scan_a() {
    if (scan_) return *scan_;
    scan_ = std::make_unique<MatrixScan>();
    if (n_ == 0) return *scan_;
    // The FP32 copy of an LU in the same pass where one is expected (expect_factorization), A
    // rounded as is: factor_unchecked takes it where prepared_copy_usable. A second read of A
    // costs ~0.65 ms at n = 16384 on an H100. Tuning::scan_copy off: never.
    prepared_copy_ = expected_precision_ != Precision::Auto && !fp64_factors(expected_precision_) &&
                     row_major_layout() && tuning().scan_copy;
    if (prepared_copy_) allocate_factors(factors32_);
    const std::int64_t stripes = (n_ + kScanColumns - 1) / kScanColumns;
    DeviceBuffer<double> partial_sums(ctx_, n_ * stripes);
    // row sums, row maxima, column maxima (doubles as bits), then the first non-finite index and
    // the smallest nonzero |a_ij|
    DeviceBuffer<unsigned long long> results(ctx_, 3 * n_ + 2);
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(results.data(), 0, 3 * n_ * sizeof(unsigned long long), stream()));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(results.data() + 3 * n_, 0xff, 2 * sizeof(unsigned long long), stream()));
    const dim3 grid(unsigned((n_ + kScanRows - 1) / kScanRows), unsigned(stripes));
    scan_matrix_kernel<<<grid, kScanRows, 0, stream()>>>(
        a_.data, a_.ld, n_, partial_sums.data(), results.data() + n_, results.data() + 2 * n_,
        results.data() + 3 * n_, results.data() + 3 * n_ + 1, prepared_copy_ ? factors32_.data() : nullptr, nf_);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    sum_row_partials_kernel<<<blocks_for(n_), 256, 0, stream()>>>(partial_sums.data(), n_, stripes, results.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    track_peak(partial_sums.bytes() + results.bytes());
    const std::vector<unsigned long long> bits = results.to_host(stream());
    const auto value = [&](std::int64_t k) {
      double d;
      std::memcpy(&d, &bits[k], sizeof d);
      return d;
    };
    for (std::int64_t i = 0; i < n_; ++i) scan_->norm_inf = std::max(scan_->norm_inf, value(i));
    scan_->row_max.resize(n_);
    scan_->column_max.resize(n_);
    for (std::int64_t i = 0; i < n_; ++i) {
      scan_->row_max[i] = value(n_ + i);
      scan_->column_max[i] = value(2 * n_ + i);
      scan_->largest = std::max(scan_->largest, scan_->row_max[i]);
    }
    if (bits[3 * n_] != ~0ull) scan_->first_nonfinite = std::int64_t(bits[3 * n_]);
    if (bits[3 * n_ + 1] != ~0ull) scan_->smallest_nonzero = value(3 * n_ + 1);
    return *scan_;
  }

  // Whether factor_unchecked may factor the scan's FP32 copy of A (A rounded as is: mu = 1,
  // R = S = I) for an FP32-stored LU with or without range scaling. Without, the conversion would
  // write the same copy. With it (fp16x3: FP16 and BF16 round their copy into their own range),
  // where no rows or columns need equilibrating and A's largest entry lies within 2^+-20 of 1, the
  // power of two mu changes only exponents: with every nonzero entry normal in FP32 both as is and
  // times mu, FP32(mu a) = mu FP32(a), and every rounding of the LU scales with mu (the FP32 panel,
  // the fp16x3 products, which scale each operand by its own power of two), so the factors of A
  // are those of mu A but for U's exponents, with 2^100 of room above and below for the growth.
  bool prepared_copy_usable(Precision p, bool range_scaling) {
    const MatrixScan& scan = scan_a();
    if (!(scan.largest <= FLT_MAX)) return false;  // Inf in the copy: the conversion reports it
    if (!range_scaling) return true;
    if (p != Precision::Fp16x3) return false;
    const RangeScaling choice = choose_range_scaling(scan.row_max, scan.column_max);
    return !choice.two_sided && scan.largest >= 0x1p-20 && scan.largest <= 0x1p20 &&
           scan.smallest_nonzero >= 0x1p-126 && scan.smallest_nonzero * choice.mu >= 0x1p-126;
  }

  // nf x nf factors in `f` (the old ones freed first). The pool keeps what is freed
  // (Context::allocate): where its unused blocks cannot hold the new factors (FP64 ones after FP32
  // ones) they go back to the driver first, so that the memory the context holds stays at the
  // reported peak.
  template <class U>
  void allocate_factors(DeviceBuffer<U>& f) {
    f = DeviceBuffer<U>();
    ctx_.make_room_for(nf_ * nf_ * sizeof(U));
    f = DeviceBuffer<U>(ctx_, nf_ * nf_);
  }

  void track_peak(std::size_t transient = 0) override {
    std::size_t bytes = transient + factors32_.bytes() + factors64_.bytes() + 2 * pivots_.bytes() + blocked_->bytes() +
                        solve_buffer_.bytes() +
                        solve64_.bytes() + row_factor_.bytes() + column_factor_.bytes() + vector_scale_.bytes() +
                        space_bytes() + (triangular32_ ? triangular32_->bytes() : 0) +
                        (packed_factors_ ? packed_factors_->bytes() : 0) +
                        (triangular64_ ? triangular64_->bytes() : 0) + (cholesky_ ? cholesky_->bytes() : 0) +
                        ctx_.workspace_capacity();
    peak_ = std::max(peak_, bytes);
  }

  // R and S of the current range scaling, or null for identities.
  const double* row_factor() const { return two_sided_ ? row_factor_.data() : nullptr; }
  const double* column_factor() const { return two_sided_ ? column_factor_.data() : nullptr; }

  // R, S and mu of SolveOptions::range_scaling (engine.hpp): the rows' and columns' maxima on
  // the device, the choice on the host, then R from the rows and S from the columns of R A.
  void compute_range_scaling() {
    const std::vector<double>& rows = scan_a().row_max;
    const std::vector<double>& columns = scan_a().column_max;
    const RangeScaling choice = choose_range_scaling(rows, columns);
    mu_ = choice.mu;
    two_sided_ = choice.two_sided;
    if (!two_sided_) return;
    std::vector<double> r(n_);
    for (std::int64_t i = 0; i < n_; ++i) r[i] = equilibrating_power_of_two(rows[i]);
    row_factor_ = DeviceBuffer<double>(ctx_, n_);
    column_factor_ = DeviceBuffer<double>(ctx_, n_);
    row_factor_.copy_from_host(r, stream());
    column_factors_kernel<<<unsigned(n_), 256, 0, stream()>>>(a_.data, a_.ld, n_, row_factor_.data(),
                                                              column_factor_.data(), nullptr);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  cusolverDnHandle_t solver_ = nullptr;
  Precision precision_ = Precision::FP64;
  DeviceBuffer<float> factors32_, solve_buffer_;
  Precision expected_precision_ = Precision::Auto;  // expect_factorization's hint
  bool prepared_copy_ = false;  // factors32_ holds the scan's FP32 copy of A, row-major (scan_a)
  DeviceBuffer<double> factors64_, solve64_;
  // Range scaling of the current FP32 factors: they are of mu R A S (R = S = I unless two_sided_).
  DeviceBuffer<double> row_factor_, column_factor_;
  bool two_sided_ = false;
  // The FP32 factors are row-major while the blocked LU runs (Tuning::row_major_factors, on by
  // default): a row interchange then moves contiguous runs instead of one 32-byte sector per
  // 4-byte value, and transposed to column-major afterwards.
  static bool row_major_layout() { return tuning().row_major_factors; }
  // SolveOptions::reuse_pivot_order: the current factors are of A's rows in row_order_ (empty: A's
  // own order); factors_complete_: the current factors are a completed LU of A (permutation_ is
  // then a row order to reuse); order_panels_: the leading panels that follow a reused order
  // (factor_unchecked).
  std::vector<int> row_order_;
  bool factors_complete_ = false;
  FactorKind kind_ = FactorKind::Lu;  // of the current factors
  std::unique_ptr<device_cholesky::DeviceCholesky> cholesky_;  // created on the first Cholesky
  std::vector<double> symmetric_scale_;  // a range-scaled Cholesky's S, on the host
  std::int64_t order_panels_ = 0;
  bool substitution_solves_ = false;  // FP64 factors solved by trsm (choose_fp64_solves)
  double collapse_below_ = 0;  // watch a cheaper LU's pivots below this (0: not watched)
  double mu_ = 1.0;
  DeviceBuffer<double> vector_scale_;  // apply_inverse: each column's sigma and 1 / sigma
  DeviceBuffer<int> pivots_, permutation_, info_, first_zero_pivot_;
  DeviceBuffer<unsigned long long> pivot_range_;  // pivot_ratio(): min and max |u_kk|
  std::unique_ptr<BlockedLu> blocked_;  // the blocked LU's streams and buffers
  std::unique_ptr<TriangularSolver<float, double>> triangular32_;  // for the current factors, FP64 arithmetic
  std::unique_ptr<PackedFactors> packed_factors_;  // SolveOptions::factor_storage: the copy apply_inverse reads
  std::unique_ptr<TriangularSolver<double>> triangular64_;
  DeviceBuffer<unsigned long long> flag_;
  std::unique_ptr<MatrixScan> scan_;  // of A, once (scan_a)
  // The order of the factors: n rounded up to kFactorAlignment. f holds the LU of [A 0; 0 I]
  // (factor_blocked_lu), whose leading n x n block is A's LU and whose border stays the identity,
  // so every product, copy and row of the LU keeps the alignment the tensor cores want whatever
  // n is; the solves read the leading n x n block with leading dimension nf.
  std::int64_t nf_ = 0;
  std::int64_t nb_ = 256;
  std::size_t peak_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_device_engine(Context& ctx, const MatrixView<const double>& a, int block_size) {
  return std::make_unique<DeviceEngine>(ctx, a, block_size);
}

}  // namespace mixsolve::solvers_detail
