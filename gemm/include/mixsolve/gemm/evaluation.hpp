// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Accuracy and speed of GEMM backends on the input classes of Ootomo & Yokota (2021) §4.1, against an FP64
/// reference of the same FP32 inputs (cuBLAS DGEMM on the GPU, Eigen on the host). Used by the
/// example compare_gemm_backends and the GEMM benchmark; useful to anyone comparing backends.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

/// One input class: the distributions of A and B.
struct InputClass {
  /// The class's name in tables, e.g. "exp_rand(-35,-15) x exp_rand(-15,15)".
  std::string name;
  /// The distributions (and seeds) A and B are drawn from.
  RandomSpec a, b;
};

/// uniform(-1,1); exp_rand(-15,15); exp_rand(-35,-15) x exp_rand(-15,15);
/// exp_rand(-45,-35) x exp_rand(-15,15) (Ootomo & Yokota 2021, Fig. 8 and the issue), seeds derived from `seed`.
/// @param seed base seed; every RandomSpec's seed is derived from it.
/// @return the four classes, in that order.
std::vector<InputClass> ootomo_yokota_input_classes(std::uint64_t seed);

/// The median time of `repetitions` runs of `run`: CUDA events on ctx's stream for device work,
/// the host's steady clock otherwise. No warm-up: the caller runs once first.
/// @param ctx         the context whose stream `run` enqueues on (Memory::Device).
/// @param memory      where `run` works.
/// @param repetitions timed runs, >= 1.
/// @param run         the work to time.
/// @param prepare     work before each timed run, not timed (e.g. a fresh copy of what `run`
///                    overwrites); may be empty.
/// @return seconds.
double median_seconds(Context& ctx, Memory memory, int repetitions, const std::function<void()>& run,
                      const std::function<void()>& prepare = {});

/// The accuracy and speed of one backend on one problem (GemmEvaluator::evaluate()).
struct Evaluation {
  /// The backend's name and the input class's name.
  std::string backend, input_class;
  /// The problem size: C = A B with A m x k, B k x n.
  std::int64_t m = 0, n = 0, k = 0;
  /// Ootomo & Yokota (2021) eq. (6): ||C_ref - C||_F / ||C_ref||_F (ErrorStats::relative_error).
  double relative_error = 0;
  /// Nanai & Fujimoto (2021) eq. (21), against the FP64 reference (ErrorStats::max_relative_error).
  double max_relative_error = 0;
  /// Entries of C that are NaN or Inf.
  std::int64_t nonfinite = 0;
  /// Median of the timed repetitions, in seconds (CUDA events on the GPU, a steady clock on the
  /// host); 0 without repetitions.
  double median_seconds = 0;
  /// 2 m n k / median_seconds, in TFLOP/s; 0 without repetitions.
  double tflops = 0;
  /// Non-empty if the backend refused (e.g. a RangeError) or works on the other memory space;
  /// the other fields but the names and sizes are then 0.
  std::string error;
};

/// Holds A, B, C and the FP64 reference for one m x n x k problem in host or device memory.
class GemmEvaluator {
 public:
  /// Allocates FP32 and FP64 copies of A (m x k), B (k x n) and C (m x n) and the FP64
  /// reference, in `memory` (device buffers from cudaMalloc).
  /// @param ctx    the context the backends run in; it must outlive the evaluator, and have a GPU
  ///               for Memory::Device.
  /// @param memory where the matrices live; only backends of this memory space are evaluated.
  /// @param m      rows of A and C, > 0.
  /// @param n      columns of B and C, > 0.
  /// @param k      the inner dimension, > 0.
  /// @throws InvalidArgument if m, n or k is not positive.
  /// @throws DeviceError     if a device allocation fails.
  GemmEvaluator(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, std::int64_t k);
  /// Frees the matrices.
  ~GemmEvaluator();
  GemmEvaluator(const GemmEvaluator&) = delete;
  GemmEvaluator& operator=(const GemmEvaluator&) = delete;

  /// Draws A and B from `input` and computes the FP64 reference C = A B.
  /// The reference is cublas-dgemm on the device, host-fp64 (Eigen) on the host, of the FP64
  /// copies of the FP32 inputs; the call waits for it.
  /// @param input the input class.
  /// @throws NotSupported if the matrices are on the device and ctx is host-only.
  /// @throws DeviceError  if a CUDA or cuBLAS call fails.
  void set_inputs(const InputClass& input);
  /// Runs `backend` (once to warm up, then `repetitions` timed runs) on C = A B and compares the
  /// result with the reference. FP64 backends run on the FP64 copies of the inputs.
  /// An Error thrown by the warm-up run (a refusal) is caught and returned in Evaluation::error.
  /// Call set_inputs() first.
  /// @param backend     the backend to evaluate (alpha = 1, beta = 0, no transposes).
  /// @param repetitions number of timed runs (0: none; median_seconds and tflops stay 0).
  /// @return the errors and timing, or the refusal in Evaluation::error.
  /// @throws DeviceError (or another Error) if a timed run, the timing or the comparison fails.
  Evaluation evaluate(const Backend& backend, int repetitions);

 private:
  struct Buffers;
  Context& ctx_;
  Memory memory_;
  std::int64_t m_, n_, k_;
  std::string input_name_;
  std::unique_ptr<Buffers> buffers_;
};

/// For each input class and each k: every backend on m = n = `n`, against the FP64 reference, with
/// cublas-sgemm (device) or host-fp32 (host) as the baseline each error is compared with. The
/// baseline's own rows are included.
struct SweepResult {
  /// The baseline backend's name.
  std::string baseline;
  /// class-major, then k, then backend order (the baseline first, where `backends` lacks it).
  std::vector<Evaluation> rows;
};
/// Evaluates every backend for each input class and each k (a GemmEvaluator per class and k), on
/// m = n = `n`; see SweepResult.
/// @param ctx         the context the backends run in.
/// @param memory      where the matrices live; backends of the other space get an error row.
/// @param backends    the backends to evaluate, in table order.
/// @param n           m = n of every problem, > 0.
/// @param ks          the inner dimensions, each > 0.
/// @param classes     the input classes (e.g. ootomo_yokota_input_classes()).
/// @param repetitions timed runs per evaluation.
/// @return the baseline's name and one row per class, k and backend.
/// @throws InvalidArgument if n or a k is not positive.
/// @throws DeviceError     if a device allocation or call fails.
SweepResult run_k_sweep(Context& ctx, Memory memory, const std::vector<const Backend*>& backends, std::int64_t n,
                        const std::vector<std::int64_t>& ks, const std::vector<InputClass>& classes, int repetitions);

/// One table per input class: relative error per backend and k; "<=" marks an error no larger
/// than the baseline's at that k; "refused" a backend that refused. The last column is TFLOP/s at
/// the last k of the sweep (in the order of `ks`) where the backend ran.
/// @param sweep a run_k_sweep() result.
/// @return the tables as text.
std::string format_k_sweep(const SweepResult& sweep);

}  // namespace mixsolve::gemm
