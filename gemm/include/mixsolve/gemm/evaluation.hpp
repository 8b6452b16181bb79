// SPDX-License-Identifier: BSD-3-Clause
// Accuracy and speed of GEMM backends on the input classes of seed 000 §4.1, against an FP64
// reference of the same FP32 inputs (cuBLAS DGEMM on the GPU, Eigen on the host). Used by the
// example compare_gemm_backends and the GEMM benchmark; useful to anyone comparing backends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

struct InputClass {
  std::string name;  // e.g. "exp_rand(-35,-15) x exp_rand(-15,15)"
  RandomSpec a, b;
};

// uniform(-1,1); exp_rand(-15,15); exp_rand(-35,-15) x exp_rand(-15,15);
// exp_rand(-45,-35) x exp_rand(-15,15) (seed 000 Fig. 8 and the issue), seeds derived from `seed`.
std::vector<InputClass> seed000_input_classes(std::uint64_t seed);

struct Evaluation {
  std::string backend, input_class;
  std::int64_t m = 0, n = 0, k = 0;
  double relative_error = 0;      // seed 000 eq. (6)
  double max_relative_error = 0;  // seed 004 eq. (21), against the FP64 reference
  std::int64_t nonfinite = 0;
  double median_seconds = 0;      // of the timed repetitions (CUDA events on the GPU)
  double tflops = 0;              // 2 m n k / median_seconds
  std::string error;              // non-empty if the backend refused (e.g. a RangeError)
};

// Holds A, B, C and the FP64 reference for one m x n x k problem in host or device memory.
class GemmEvaluator {
 public:
  GemmEvaluator(Context& ctx, Memory memory, std::int64_t m, std::int64_t n, std::int64_t k);
  ~GemmEvaluator();
  GemmEvaluator(const GemmEvaluator&) = delete;
  GemmEvaluator& operator=(const GemmEvaluator&) = delete;

  // Draws A and B from `input` and computes the FP64 reference C = A B.
  void set_inputs(const InputClass& input);
  // Runs `backend` (once to warm up, then `repetitions` timed runs) on C = A B and compares the
  // result with the reference. FP64 backends run on the FP64 copies of the inputs.
  Evaluation evaluate(const Backend& backend, int repetitions);

 private:
  struct Buffers;
  Context& ctx_;
  Memory memory_;
  std::int64_t m_, n_, k_;
  std::string input_name_;
  std::unique_ptr<Buffers> buffers_;
};

// For each input class and each k: every backend on m = n = `n`, against the FP64 reference, with
// cublas-sgemm (device) or host-fp32 (host) as the baseline each error is compared with. The
// baseline's own rows are included.
struct SweepResult {
  std::string baseline;
  std::vector<Evaluation> rows;  // class-major, then k, then backend order
};
SweepResult run_k_sweep(Context& ctx, Memory memory, const std::vector<const Backend*>& backends, std::int64_t n,
                        const std::vector<std::int64_t>& ks, const std::vector<InputClass>& classes, int repetitions);

// One table per input class: relative error per backend and k; "<=" marks an error no larger
// than the baseline's at that k; the last column is TFLOP/s at the largest k.
std::string format_k_sweep(const SweepResult& sweep);

}  // namespace mixsolve::gemm
