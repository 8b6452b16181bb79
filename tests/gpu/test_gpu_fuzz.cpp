// SPDX-License-Identifier: BSD-3-Clause
// The argument and input fuzz test on the GPU (tests/fuzz/, shared with the host's
// tests/host/test_fuzz.cpp): random calls of solve(), Factorization, least_squares(), every GEMM
// backend of the registry and the SLFP kernels on device matrices, with host and mixed ones among
// them, each ending in a checked result or the documented named error, inputs unmodified. Small
// sizes (n <= 200, GEMMs <= 130) and a few hundred cases per test by default, so that it runs under
// compute-sanitizer with MIXSOLVE_FUZZ_CASES set to a few dozen.
#include <gtest/gtest.h>

#include "fuzz/gemm_cases.hpp"
#include "fuzz/least_squares_cases.hpp"
#include "fuzz/settings_and_outcomes.hpp"
#include "fuzz/slfp_cases.hpp"
#include "fuzz/solve_cases.hpp"
#include "gpu_test_support.hpp"
#include "mixsolve/core/context.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::fuzz;

TEST(GpuFuzz, SolveArgumentsAndInputs) {
  MIXSOLVE_REQUIRE_GPU();
  FuzzRun run("GpuFuzz.SolveArgumentsAndInputs", 300);
  Context ctx;
  for (std::int64_t i = 0; i < run.cases(); ++i) run_solve_case(run, ctx, true, false, i);
  run.finish({"result", "InvalidArgument", "SingularMatrix"});
}

TEST(GpuFuzz, FactorizationSolvesSeveralRightHandSides) {
  MIXSOLVE_REQUIRE_GPU();
  FuzzRun run("GpuFuzz.FactorizationSolvesSeveralRightHandSides", 200);
  Context ctx;
  for (std::int64_t i = 0; i < run.cases(); ++i) run_solve_case(run, ctx, true, true, i);
  run.finish({"result", "InvalidArgument", "SingularMatrix"});
}

TEST(GpuFuzz, LeastSquares) {
  MIXSOLVE_REQUIRE_GPU();
  FuzzRun run("GpuFuzz.LeastSquares", 300);
  Context ctx;
  for (std::int64_t i = 0; i < run.cases(); ++i) run_ls_case(run, ctx, true, i);
  run.finish({"result", "InvalidArgument", "RankDeficientMatrix"});
}

TEST(GpuFuzz, GemmBackends) {
  MIXSOLVE_REQUIRE_GPU();
  FuzzRun run("GpuFuzz.GemmBackends", 800);
  Context ctx;
  for (std::int64_t i = 0; i < run.cases(); ++i) run_gemm_case(run, ctx, true, i);
  run.finish({"result", "InvalidArgument", "NotSupported", "RangeError"});
}

TEST(GpuFuzz, SlfpKernels) {
  MIXSOLVE_REQUIRE_GPU();
  FuzzRun run("GpuFuzz.SlfpKernels", 600);
  Context ctx;
  for (std::int64_t i = 0; i < run.cases(); ++i) run_slfp_case(run, ctx, true, i);
  run.finish({"result", "InvalidArgument"});
}

}  // namespace
