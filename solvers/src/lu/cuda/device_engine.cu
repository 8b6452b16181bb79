// SPDX-License-Identifier: BSD-3-Clause
// Device engine: blocked right-looking LU with partial pivoting and look-ahead on the GPU, FP32 or
// FP64 storage, row-major while it is factored (design: docs/solver.md). Each panel is factored by
// one launch of the cooperative kernel of panel_factorization.cu on its own stream while the trailing
// update A22 -= L21 U12 runs on the chosen gemm/ backend (DGEMM for FP64 factors); U12 = L11^-1
// A12 by a GEMM with L11's inverse. cuSOLVER's dgetrf remains for small FP64 factorizations and
// where the panel kernel does not fit (Tuning::fp64_route forces a route). Solves
// gather the pivot permutation and use the bandwidth-bound triangular solver; residuals are FP64
// (cuBLAS) on the user's matrix.
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

#include "engine.hpp"
#include "lu/lu_rules.hpp"
#include "tuning.hpp"
#include "lu/cuda/engine_kernels.cuh"
#include "lu/cuda/engine_support.hpp"
#include "lu/cuda/lu_kernels.hpp"
#include "triangular/triangular_solver.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/gemm/problem.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::solvers_detail {

namespace {

using namespace device_lu;

// FP64 factorizations of fewer rows go to cuSOLVER's dgetrf: the blocked LU's streams, events and
// per-panel launches cost more than they save there (on an H100 the engine's route overtakes
// cuSOLVER's between n = 4096 and 6144; docs/history/solver-log.md).
constexpr std::int64_t kFp64EngineMinN = 6144;

// Multiprocessors the panel kernel runs on by default (measured: docs/history/solver-log.md).
constexpr int kDefaultPanelBlocks = 32;
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
// A reused row order (SolveOptions::reuse_pivot_order) is judged while the FP64 LU runs: after
// each panel the largest multiplier so far goes to the host, which reads panel p's before it
// enqueues panel p + kOrderVerdictLag's work; an order that fails ends the LU there, not after
// its last panel (factor_blocked). The lag keeps that many panels queued on the chain, so the
// host's wait does not leave the GPU idle.
constexpr std::int64_t kOrderVerdictLag = 3;

// The factors' order is n rounded up to this (DeviceEngine::nf_): cuBLAS's tensor-core GEMMs and
// the triangular solver's 16-byte copies need aligned leading dimensions, and off that grid the
// LU's products run ~3.8x slower (n = 32761 against 32768 on an H100).
constexpr std::int64_t kFactorAlignment = 32;
constexpr int kDefaultUpdateGroup32 = 3;
constexpr std::int64_t kLargeFp32 = 24576;
constexpr int kDefaultUpdateGroup64 = 4;
constexpr std::int64_t kLargeFp64 = 16384;
// Groups whose packed L21 (factor_blocked) exist at once: the chain packs group g + 2 while the
// bulk stream may still read group g + 1 (and it waits for group g's readers, which precede).
constexpr int kPackedGroupSlots = 3;

class DeviceEngine final : public Engine {
 public:
  DeviceEngine(Context& ctx, const MatrixView<const double>& a, int block_size) : ctx_(ctx), a_(a) {
    n_ = a.rows;
    nf_ = (n_ + kFactorAlignment - 1) / kFactorAlignment * kFactorAlignment;
    nb_ = std::min<std::int64_t>(block_size > 0 ? block_size : 256, kPanelMaxWidth);
    pivots_ = DeviceBuffer<int>(ctx_, std::max<std::int64_t>(nf_, 1));
    permutation_ = DeviceBuffer<int>(ctx_, std::max<std::int64_t>(n_, 1));
    first_zero_pivot_ = DeviceBuffer<int>(ctx_, 1);
    info_ = DeviceBuffer<int>(ctx_, 1);
    flag_ = DeviceBuffer<unsigned long long>(ctx_, 1);
    column_max_ = DeviceBuffer<double>(ctx_, 64);
    // Blocks (= multiprocessors) of the cooperative panel kernel; Tuning::panel_blocks (solvers/src/tuning.hpp).
    panel_blocks_ = tuning().panel_blocks > 0 ? tuning().panel_blocks : kDefaultPanelBlocks;
  }
  ~DeviceEngine() override {
    for (cudaStream_t stream : {swap_stream_, side_streams_[0], side_streams_[1]})
      if (stream) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
      }
    if (solver_) cusolverDnDestroy(solver_);
    if (panel_verdicts_) cudaFreeHost(panel_verdicts_);
  }

  Memory memory() const override { return Memory::Device; }
  std::int64_t default_auto_min_n() const override { return 12288; }  // SolveOptions::auto_min_n

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

  FactorResult factor(Precision p, bool range_scaling, bool reuse_pivot_order, double collapse_below) override {
    // The previous factorization's row order, where one completed (engine.hpp), and how many of
    // its leading columns to follow (trusted_order_columns).
    std::vector<int> order;
    std::int64_t order_columns = 0;
    if (reuse_pivot_order && p == Precision::FP64 && factors_complete_ && !two_sided_) {
      order = permutation_.to_host(stream());
      order_columns = trusted_order_columns(pivot_magnitudes(), precision_);
    }
    collapse_below_ = p == Precision::FP64 ? 0.0 : collapse_below;
    FactorResult result = factor_unchecked(p, range_scaling, order, order_columns);
    factors_complete_ = result.status == StopReason::Converged;
    return result;
  }

  double pivot_ratio() override {
    if (pivot_range_.size() == 0) pivot_range_ = DeviceBuffer<unsigned long long>(ctx_, 2);
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(pivot_range_.data(), 0xff, sizeof(unsigned long long), stream()));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(pivot_range_.data() + 1, 0, sizeof(unsigned long long), stream()));
    const unsigned blocks = std::min(blocks_for(n_), 64u);
    if (precision_ == Precision::FP64)
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
    return precision_ == Precision::FP64 ? diagonal_magnitudes(factors64_.data()) : diagonal_magnitudes(factors32_.data());
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
  FactorResult factor_unchecked(Precision p, bool range_scaling, const std::vector<int>& order,
                                std::int64_t order_columns) {
    triangular32_.reset();  // they refer to the factors being replaced
    triangular64_.reset();
    row_order_.clear();
    precision_ = p;
    two_sided_ = false;
    mu_ = 1.0;
    if (p == Precision::FP64) {
      prepared_copy_ = false;
      // The FP32 factors go first: the FP64 ones never sit beside them (peak 8 n^2, not 12 n^2).
      factors32_ = DeviceBuffer<float>();
      solve_buffer_ = DeviceBuffer<float>();
      block_rows32_ = BlockRowBuffers<float>();
      packed_l21_ = DeviceBuffer<unsigned char>();
      allocate_factors(factors64_);
      // The blocked LU below (DGEMM updates, FP64 panels) from n = kFp64EngineMinN on, where the
      // rows fit the panel kernel; else cusolverDnDgetrf. Tuning::fp64_route forces either (the
      // engine only where it fits).
      const Tuning::Fp64Route route = tuning().fp64_route;
      const bool engine = route == Tuning::Fp64Route::Engine ||
                          (route == Tuning::Fp64Route::BySize && n_ >= kFp64EngineMinN);
      if (!engine || !panel_workspace<double>().supported()) return factor_with_cusolver();
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
    block_rows64_ = BlockRowBuffers<double>();
    // The scan's copy (scan_a), once, where it is what the conversion would make (up to mu).
    const bool prepared = std::exchange(prepared_copy_, false) && prepared_copy_usable(p, range_scaling);
    if (prepared) return factor_blocked_lu(factors32_.data(), device_update_backend(p), false, {}, true);
    allocate_factors(factors32_);
    return factor_blocked_lu(factors32_.data(), device_update_backend(p), range_scaling);
  }

  FactorResult factor_with_cusolver() {
    FactorResult result;
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(factors64_.data(), nf_ * sizeof(double), a_.data, a_.ld * sizeof(double),
                                          n_ * sizeof(double), n_, cudaMemcpyDeviceToDevice, stream()));
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

  // The blocked LU (factor_blocked) of A, or of mu R A S with range scaling, into f (column-major
  // when it returns): T = float for the FP32-stored factorizations, double for FP64. f holds the
  // nf x nf matrix [A 0; 0 I] (kFactorAlignment), whose LU is A's with an identity beside it.
  // With a row order (row-major layout only): the LU of A's rows in that order, pivoting inside
  // the diagonal blocks (factor_panel_in_order); its result is Reused where every check passed,
  // else Rejected (the caller then factors with partial pivoting).
  template <class T>
  FactorResult factor_blocked_lu(T* f, const gemm::Backend& update, bool range_scaling,
                                 const std::vector<int>& order = {}, bool copy_ready = false) {
    FactorResult result;
    order_rejected_early_ = false;
    collapsed_at_column_ = -1;
    if (range_scaling) compute_range_scaling();
    reset_first_nonfinite();
    row_major_ = row_major_layout();
    in_order_ = !order.empty() && row_major_;
    DeviceBuffer<int> destination_row;
    if (in_order_) {
      std::vector<int> position(n_);
      for (std::int64_t i = 0; i < n_; ++i) position[order[i]] = int(i);
      destination_row = DeviceBuffer<int>(ctx_, n_);
      destination_row.copy_from_host(position, stream());
      track_peak(destination_row.bytes());
      MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(largest_multiplier_.data(), 0, sizeof(unsigned long long), stream()));
    }
    // A's copy in f, unless the scan made it (copy_ready: row-major and finite, prepared_copy_usable).
    if (!copy_ready) {
      if (row_major_) {
        const dim3 tiles(unsigned((n_ + 31) / 32), unsigned((n_ + 31) / 32));
        convert_transposed_kernel<T><<<tiles, dim3(32, 8), 0, stream()>>>(
            a_.data, a_.ld, f, nf_, n_, row_factor(), column_factor(), mu_, flag_.data(), destination_row.data());
      } else {
        convert_kernel<<<stripe_grid(n_, n_), 256, 0, stream()>>>(a_.data, a_.ld, f, nf_, n_, n_, row_factor(),
                                                                  column_factor(), mu_, flag_.data());
      }
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      if (read_first_nonfinite(n_).first >= 0) {
        result.status = StopReason::Overflow;  // beyond the factors' range
        return result;
      }
    }
    if (nf_ > n_) {
      identity_border_kernel<<<blocks_for(nf_ * (nf_ - n_)), 256, 0, stream()>>>(f, nf_, n_);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    if (!panel_workspace<T>().supported())
      throw NotSupported("device LU: n = " + std::to_string(n_) +
                         " rows do not fit the cooperative panel kernel's shared memory on this GPU");
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
    if (in_order_ && block_rows.l21_copy.size() == 0) {
      block_rows.u11_inverse = DeviceBuffer<T>(ctx_, nb_ * nb_);
      block_rows.l21_copy = DeviceBuffer<T>(ctx_, nb_ * nf_);
    }
    // The first zero pivot's column, read once at the end: no synchronisation inside the loop.
    // After a zero pivot the remaining panels compute with Inf/NaN; those factors are discarded.
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(first_zero_pivot_.data(), 0x7f, sizeof(int), stream()));
    factor_blocked(f, update);
    if (collapsed_at_column_ >= 0) {  // the pivots collapsed part way (kCollapseMinPivots)
      row_major_ = false;
      // An exact zero pivot (the NaNs after it count as small) says more; it may lie in the up to
      // kOrderVerdictLag panels factored after the judged one (the host LU stops at the first).
      int first_zero = 0;
      first_zero_pivot_.copy_to_host(&first_zero, 1, stream());
      result.status = first_zero < n_ ? StopReason::ZeroPivot : StopReason::CollapsedPivots;
      result.zero_pivot_column = first_zero < n_ ? first_zero : -1;
      result.collapsed_at_column = collapsed_at_column_;
      return result;
    }
    if (order_rejected_early_) {  // the order failed its check part way (kOrderVerdictLag)
      in_order_ = false;
      row_major_ = false;
      result.largest_multiplier = read_largest_multiplier();
      result.pivot_order = PivotOrder::Rejected;
      return result;
    }
    const bool checked = row_major_;  // the transpose checks for NaN/Inf on its way
    if (row_major_) {  // the solves read column-major factors
      const dim3 tiles(unsigned((n_ + 31) / 32), unsigned((n_ + 31) / 32));
      reset_first_nonfinite();
      transpose_in_place_kernel<<<tiles, dim3(32, 8), 0, stream()>>>(f, nf_, n_, flag_.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      row_major_ = false;
    }
    int first_zero = 0;
    first_zero_pivot_.copy_to_host(&first_zero, 1, stream());
    if (in_order_) {  // the order's checks: a zero pivot inside a diagonal block, a large multiplier, NaN/Inf
      in_order_ = false;
      result.largest_multiplier = read_largest_multiplier();
      const bool finite = read_first_nonfinite(n_).first < 0;
      if (first_zero < n_ || !finite || !(result.largest_multiplier <= kReusedOrderMaxMultiplier)) {
        result.pivot_order = PivotOrder::Rejected;
        return result;
      }
      result.pivot_order = PivotOrder::Reused;
      result.reused_columns = std::min(order_panels_ * nb_, n_);
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
    pivots_to_permutation(pivots_.data(), n_, permutation_.data(), stream(), row_order_);
    if constexpr (std::is_same_v<T, float>) {
      triangular32_ = std::make_unique<TriangularSolver<float, double>>(f, n_, nf_, stream(), &ctx_);
    } else {
      choose_fp64_solves(f);
    }
    track_peak();
    return result;
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
    if (precision_ == Precision::FP64 || k <= kFp64ApplyMaxColumns) {
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
    if (precision_ == Precision::FP64) {
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

  void residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                const MatrixView<double>& r) override {
    profile_.start(Profile::Residual, stream());
    copy(b, r);
    const double minus_one = -1.0, one = 1.0;
    if (x.cols == 1)  // DGEMM with one column is not a GEMV in every cuBLAS
      MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(n_), int(n_), &minus_one, a_.data, int(a_.ld),
                                        x.data, 1, &one, r.data, 1));
    else
      MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(n_), int(x.cols), int(n_), &minus_one,
                                        a_.data, int(a_.ld), x.data, int(x.ld), &one, r.data, int(r.ld)));
    profile_.stop(Profile::Residual, stream());
  }

  bool badly_scaled() override { return choose_range_scaling(scan_a().row_max, scan_a().column_max).two_sided; }

  double componentwise_backward_error(const double* x, const double* b, const double* r) override {
    profile_.start(Profile::Residual, stream());
    if (componentwise_workspace_.size() < std::size_t(2 * n_ + 1))
      componentwise_workspace_ = DeviceBuffer<double>(ctx_, 2 * n_ + 1);
    const double e = mixsolve::componentwise_backward_error(a_, x, b, stream(), componentwise_workspace_.data(), r);
    profile_.stop(Profile::Residual, stream());
    return e;
  }

  void multiply(const double* x, double* y) override {
    profile_.start(Profile::Multiply, stream());
    const double one = 1.0, zero = 0.0;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx_.cublas(), CUBLAS_OP_N, int(n_), int(n_), &one, a_.data, int(a_.ld), x, 1,
                                      &zero, y, 1));
    profile_.stop(Profile::Multiply, stream());
  }

  void column_norms_inf(const MatrixView<const double>& m, double* out) override {
    if (column_max_.size() < std::size_t(m.cols)) column_max_ = DeviceBuffer<double>(ctx_, m.cols);
    column_abs_max_kernel<<<unsigned(m.cols), 256, 0, stream()>>>(m.data, m.ld, m.rows, column_max_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    column_max_.copy_to_host(out, m.cols, stream());
  }

  MatrixView<double> scratch(int slot, std::int64_t cols) override {
    if (slot >= int(scratch_.size())) scratch_.resize(slot + 1);
    if (scratch_[slot].size() < std::size_t(n_ * cols)) scratch_[slot] = DeviceBuffer<double>(ctx_, n_ * cols);
    track_peak();
    return device_view(scratch_[slot].data(), n_, cols, std::max<std::int64_t>(n_, 1));
  }

  void copy(const MatrixView<const double>& src, const MatrixView<double>& dst) override {
    MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(dst.data, dst.ld * sizeof(double), src.data, src.ld * sizeof(double),
                                          src.rows * sizeof(double), src.cols, cudaMemcpyDeviceToDevice, stream()));
  }
  void upload(const double* host, double* y) override {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(y, host, n_ * sizeof(double), cudaMemcpyHostToDevice, stream()));
  }
  void download(const double* y, double* host) override {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(host, y, n_ * sizeof(double), cudaMemcpyDeviceToHost, stream()));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }
  void fill_random(const MatrixView<double>& m, const RandomSpec& spec) override {
    mixsolve::fill_random(m, spec, stream());
  }
  void axpy(double alpha, const double* x, double* y) override {
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(ctx_.cublas(), int(n_), &alpha, x, 1, y, 1));
  }
  void scal(double alpha, double* x) override { MIXSOLVE_CUBLAS_CHECK(cublasDscal(ctx_.cublas(), int(n_), &alpha, x, 1)); }
  void zero(double* x) override { MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(x, 0, n_ * sizeof(double), stream())); }
  double dot(const double* x, const double* y) override {
    double r = 0;  // host pointer mode: cuBLAS returns after the result is written (a synchronisation)
    MIXSOLVE_CUBLAS_CHECK(cublasDdot(ctx_.cublas(), int(n_), x, 1, y, 1, &r));
    return r;
  }
  void gram(const MatrixView<const double>& x, const MatrixView<const double>& y, double* out) override {
    const std::size_t entries = std::size_t(x.cols * y.cols);
    if (gram_.size() < entries) gram_ = DeviceBuffer<double>(ctx_, entries);
    const double one = 1.0, zero = 0.0;
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(x.cols), int(y.cols), int(n_), &one,
                                      x.data, int(x.ld), y.data, int(y.ld), &zero, gram_.data(), int(x.cols)));
    gram_.copy_to_host(out, entries, stream());
  }
  double orthogonalize(const MatrixView<const double>& v, std::int64_t count, double* w, double* h) override {
    if (projection_.size() < std::size_t(2 * count)) projection_ = DeviceBuffer<double>(ctx_, 2 * count);
    double *sum = projection_.data(), *pass = sum + count;
    const double one = 1.0, minus_one = -1.0, zero = 0.0;
    cublasHandle_t handle = ctx_.cublas();
    for (int p = 0; p < 2; ++p) {
      double* target = p == 0 ? sum : pass;
      MIXSOLVE_CUBLAS_CHECK(cublasDgemv(handle, CUBLAS_OP_T, int(n_), int(count), &one, v.data, int(v.ld), w, 1, &zero,
                                        target, 1));
      MIXSOLVE_CUBLAS_CHECK(cublasDgemv(handle, CUBLAS_OP_N, int(n_), int(count), &minus_one, v.data, int(v.ld), target,
                                        1, &one, w, 1));
    }
    MIXSOLVE_CUBLAS_CHECK(cublasDaxpy(handle, int(count), &one, pass, 1, sum, 1));
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(h, sum, count * sizeof(double), cudaMemcpyDeviceToHost, stream()));
    double norm = 0;  // host pointer mode: returns once written, after the copy above (same stream)
    MIXSOLVE_CUBLAS_CHECK(cublasDnrm2(handle, int(n_), w, 1, &norm));
    return norm;
  }
  void add(const MatrixView<const double>& x, const MatrixView<double>& y) override {
    for (std::int64_t j = 0; j < x.cols; ++j) axpy(1.0, x.data + j * x.ld, y.data + j * y.ld);
  }
  void synchronize() override { ctx_.synchronize(); }
  std::size_t peak_workspace_bytes() const override { return peak_; }

 private:
  cudaStream_t stream() const { return ctx_.stream(); }

  // Right-looking blocked LU of factors32_ with look-ahead, on three streams besides the user's:
  //  * chain (high priority, the panel's context): per panel p, its interchanges as moves, the
  //    update of panel p + 1's columns (interchanges, U12 = L11^-1 A12, A22 -= L21 U12), then
  //    panel p + 1 (the cooperative kernel). This is the LU's critical path;
  //  * bulk (the user's context): the update of the columns beyond the next panel, with a
  //    multiprocessor limit that leaves panel_blocks_ multiprocessors to the panel kernel;
  //  * left: the interchanges on the finished L columns to the left, which nothing reads again.
  // Delayed updates: the bulk columns receive the updates of `group` panels at once,
  // A22 -= [L21 ...] [U12; ...] with k = group x 256. At k = 256 the trailing update is bound by
  // reading and writing A22 (FP32), not by the tensor cores, so grouping two panels halves that
  // traffic. A bulk update does the next `group` panels' columns first, one event each, so the
  // chain waits only for the columns it needs next, not for the whole bulk update.
  // Tuning::look_ahead off runs everything on the user's stream; Tuning::update_group sets the
  // group (1: a bulk update after every panel).
  template <class T>
  void factor_blocked(T* f, const gemm::Backend& update) {
    const bool look_ahead = tuning().look_ahead;
    const int large_group = std::is_same_v<T, double> ? kDefaultUpdateGroup64 : kDefaultUpdateGroup32;
    const int default_group = nf_ >= (std::is_same_v<T, double> ? kLargeFp64 : kLargeFp32) ? large_group
                                                                                          : kDefaultUpdateGroup;
    const std::int64_t group = tuning().update_group > 0 ? tuning().update_group : default_group;
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
    const std::int64_t packed_panel_bytes = update.packed_b_column_bytes(nb_, nb_);
    constexpr bool kFp32 = std::is_same_v<T, float>;
    const bool packed = kFp32 && row_major_ && packed_ld > 0 && packed_panel_bytes % 4 == 0 &&
                        tuning().packed_l21;
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
        } else if (row_major_)  // cuBLAS sees the transposes: A22^T -= U12^T L21^T
          update.run(c, gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::N, c1 - c0, r1 - r0, k1 - k0, T(-1), at(k0, c0), nf_,
                                          at(r0, k0), nf_, T(1), at(r0, c0), nf_, false});
        else
          update.run(c, gemm::GemmArgs<T>{gemm::Op::N, gemm::Op::N, r1 - r0, c1 - c0, k1 - k0, T(-1), at(r0, k0), nf_,
                                          at(k0, c0), nf_, T(1), at(r0, c0), nf_, false});
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
    order_rejected_early_ = false;
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
        order_rejected_early_ = true;
        break;
      }
      if (watch && p >= kOrderVerdictLag && first_column(p - kOrderVerdictLag) < n_ &&
          collapsed_at(p - kOrderVerdictLag)) {
        collapsed_at_column_ = std::min(first_column(p - kOrderVerdictLag + 1), n_);
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
      // A bulk update once `group` panels are pending: the next panels' columns one by one (the
      // chain waits for each), then the rest.
      if (after_next < nf_ && p + 1 - pending >= group) {
        moves_ready.wait_in(bulk);
        std::int64_t q = p + 2;
        for (; q < std::min(panels, p + 2 + group); ++q) {
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
    if ((order_rejected_early_ || collapsed_at_column_ >= 0) && side) {
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
  void factor_panel(Context& ctx, T* f, std::int64_t j0, std::int64_t jb, const cudaStream_t* side = nullptr) {
    T* diagonal = f + j0 + j0 * nf_;
    bool in_order = false;
    if constexpr (std::is_same_v<T, double>) {
      in_order = in_order_ && j0 / nb_ < order_panels_;
      if (in_order) {  // in a given row order (FP64 only) only the diagonal block's rows are searched
        profile_.start(Profile::DiagonalBlock, ctx.stream());
        factor_diagonal_block(diagonal, nf_, int(jb), pivots_.data() + j0, j0, first_zero_pivot_.data(), j0,
                              block_row_buffers<T>().l21_copy.data(), ctx.stream());
        profile_.stop(Profile::DiagonalBlock, ctx.stream());
        factor_panel_in_order(ctx, f, j0, jb);
      }
    }
    if (!in_order)
      panel_workspace<T>().factor(diagonal, nf_, nf_ - j0, int(jb), pivots_.data() + j0, j0, first_zero_pivot_.data(),
                                  j0, ctx.stream(), row_major_);
    if (side) {
      side_fork_.record(ctx.stream());
      side_fork_.wait_in(side[0]);
      if (!in_order) side_fork_.wait_in(side[1]);
    }
    cudaStream_t s = side ? side[0] : ctx.stream();
    const auto [to, from, moves] = panel_moves(j0 / nb_);
    profile_.start(Profile::RightSwaps, s);
    interchanges_to_moves(pivots_.data(), j0, int(jb), to, from, moves, s);
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
  std::tuple<int*, int*, int*> panel_moves(std::int64_t q) {
    return {move_to_.data() + q * 2 * kPanelMaxWidth, move_from_.data() + q * 2 * kPanelMaxWidth,
            move_count_.data() + q};
  }

  // The rest of a panel whose rows stand in a given order (SolveOptions::reuse_pivot_order), row-
  // major, after factor_diagonal_block has factored its diagonal block with pivoting among its
  // own rows (factor_panel): L11^-1 and U11^-1 in one launch, L21 = A21 U11^-1 as a GEMM with
  // the latter, and max |L21| into largest_multiplier_ for the check at the end. No search over
  // the column and no interchange beyond the block.
  template <class T>
  void factor_panel_in_order(Context& ctx, T* f, std::int64_t j0, std::int64_t jb) {
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
    exact_product(ctx, gemm::Op::N, jb, below, jb, buffers.u11_inverse.data(), jb, buffers.l21_copy.data(), jb, l21,
                  nf_);
    abs_max_row_major_kernel<<<unsigned(std::min<std::int64_t>(1024, (below * jb + 255) / 256)), 256, 0,
                               ctx.stream()>>>(l21, nf_, below, int(jb), largest_multiplier_.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

  // The cooperative panel kernel's workspace for T (created on first use).
  template <class T>
  PanelWorkspace<T>& panel_workspace() {
    auto& workspace = [&]() -> std::unique_ptr<PanelWorkspace<T>>& {
      if constexpr (std::is_same_v<T, float>) return panel32_;
      else return panel64_;
    }();
    if (!workspace) workspace = std::make_unique<PanelWorkspace<T>>(nf_, panel_blocks_, &ctx_);
    return *workspace;
  }
  template <class T>
  BlockRowBuffers<T>& block_row_buffers() {
    if constexpr (std::is_same_v<T, float>) return block_rows32_;
    else return block_rows64_;
  }

  // w := U^-1 L^-1 w for an n x k FP64 block with the current factors, in FP64 arithmetic. One to
  // four vectors (refinement, GMRES, the probe) go through the bandwidth-bound solver in one pass
  // over the factors (FP32 factors only reach here that way); blocks of many through cuBLAS trsm.
  void solve_triangles_in_fp64(double* w, std::int64_t k) {
    static_assert(kFp64ApplyMaxColumns <= kTriangularSolveMaxColumns, "one solve takes every column");
    if (k <= kFp64ApplyMaxColumns && !(precision_ == Precision::FP64 && substitution_solves_)) {
      if (precision_ == Precision::FP64) triangular64_->solve(w, n_, int(k), stream());
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

  // max |l_ij| of the panels that followed a given order (abs_max_row_major_kernel's bits).
  double read_largest_multiplier() {
    unsigned long long bits = 0;
    largest_multiplier_.copy_to_host(&bits, 1, stream());
    double largest = 0;
    std::memcpy(&largest, &bits, sizeof bits);
    return largest;
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
    prepared_copy_ = expected_precision_ != Precision::Auto && expected_precision_ != Precision::FP64 &&
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

  // `transient`: a workspace that lives only during the current step.
  void track_peak(std::size_t transient = 0) {
    std::size_t bytes = transient + factors32_.bytes() + factors64_.bytes() + 2 * pivots_.bytes() + move_to_.bytes() +
                        move_from_.bytes() + move_count_.bytes() + block_rows32_.bytes() + block_rows64_.bytes() +
                        packed_l21_.bytes() + solve_buffer_.bytes() +
                        solve64_.bytes() + row_factor_.bytes() + column_factor_.bytes() + vector_scale_.bytes() +
                        projection_.bytes() +
                        (triangular32_ ? triangular32_->bytes() : 0) +
                        (triangular64_ ? triangular64_->bytes() : 0) +
                        ctx_.workspace_capacity() + (panel_ctx_ ? panel_ctx_->workspace_capacity() : 0);
    for (const auto& s : scratch_) bytes += s.bytes();
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

  Context& ctx_;
  MatrixView<const double> a_;  // the user's matrix, read only
  cusolverDnHandle_t solver_ = nullptr;
  Precision precision_ = Precision::FP64;
  DeviceBuffer<float> factors32_, solve_buffer_;
  Precision expected_precision_ = Precision::Auto;  // expect_factorization's hint
  bool prepared_copy_ = false;  // factors32_ holds the scan's FP32 copy of A, row-major (scan_a)
  DeviceBuffer<double> factors64_, solve64_, column_max_;
  // Range scaling of the current FP32 factors: they are of mu R A S (R = S = I unless two_sided_).
  DeviceBuffer<double> row_factor_, column_factor_;
  bool two_sided_ = false;
  // The FP32 factors are row-major while factor_blocked runs (Tuning::row_major_factors, on by
  // default): a row interchange then moves contiguous runs instead of one 32-byte sector per
  // 4-byte value, and transposed to column-major afterwards.
  bool row_major_ = false;
  static bool row_major_layout() { return tuning().row_major_factors; }
  // SolveOptions::reuse_pivot_order: the current factors are of A's rows in row_order_ (empty: A's
  // own order); in_order_ while factor_blocked_lu follows one; factors_complete_: the current
  // factors are a completed LU of A (permutation_ is then a row order to reuse).
  std::vector<int> row_order_;
  bool in_order_ = false, factors_complete_ = false;
  bool substitution_solves_ = false;  // FP64 factors solved by trsm (choose_fp64_solves)
  // The panels' verdicts (factor_blocked): pinned host slots; whether a reused order failed; where
  // a cheaper LU's pivots collapsed (-1: they did not), below what (0: not watched), and the
  // running PivotWatch.
  unsigned long long* panel_verdicts_ = nullptr;
  bool order_rejected_early_ = false;
  std::int64_t collapsed_at_column_ = -1;
  double collapse_below_ = 0;
  DeviceBuffer<PivotWatch> pivot_watch_{ctx_, 1};
  std::int64_t order_panels_ = 0;  // the leading panels that follow a reused order (factor_unchecked)
  DeviceBuffer<unsigned long long> largest_multiplier_{ctx_, 1};  // max |L21| in order, as double bits
  double mu_ = 1.0;
  DeviceBuffer<double> gram_;          // Engine::gram's k x k result
  DeviceBuffer<double> componentwise_workspace_;  // componentwise_backward_error's
  DeviceBuffer<double> vector_scale_;  // apply_inverse: each column's sigma and 1 / sigma
  DeviceBuffer<double> projection_;    // orthogonalize: the projections of the two passes
  DeviceBuffer<int> pivots_, permutation_, info_, first_zero_pivot_;
  DeviceBuffer<unsigned long long> pivot_range_;  // pivot_ratio(): min and max |u_kk|
  DeviceBuffer<int> move_to_, move_from_, move_count_;  // each panel's interchanges as row moves
  BlockRowBuffers<float> block_rows32_;     // for FP32 factors
  BlockRowBuffers<double> block_rows64_;    // for FP64 factors
  DeviceBuffer<unsigned char> packed_l21_;  // each group's L21 packed once (factor_blocked)
  std::unique_ptr<PanelWorkspace<float>> panel32_;
  std::unique_ptr<PanelWorkspace<double>> panel64_;
  Profile profile_;
  std::unique_ptr<Context> panel_ctx_;  // the look-ahead panel's stream and cuBLAS handle
  cudaStream_t swap_stream_ = nullptr;  // the left-hand row interchanges
  cudaStream_t side_streams_[2] = {};  // each panel's moves and its L11^-1 beside the chain (factor_panel)
  StreamEvent side_fork_, moves_done_, inverse_done_;
  int panel_blocks_ = 32;
  std::unique_ptr<TriangularSolver<float, double>> triangular32_;  // for the current factors, FP64 arithmetic
  std::unique_ptr<TriangularSolver<double>> triangular64_;
  DeviceBuffer<unsigned long long> flag_;
  std::unique_ptr<MatrixScan> scan_;  // of A, once (scan_a)
  std::vector<DeviceBuffer<double>> scratch_;
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
