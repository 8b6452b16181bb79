// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::testing {

// The switch that makes the GPU suite fail instead of skipping: MIXSOLVE_GPU_TESTS_REQUIRED set to
// anything but "" or "0". Every run on a GPU machine sets it (tools/device_tests.sh), so that a
// suite in which nothing ran, or some test skipped, cannot pass (gpu_test_main.cpp).
inline bool gpu_tests_required() {
  const char* value = std::getenv("MIXSOLVE_GPU_TESTS_REQUIRED");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

// MIXSOLVE_GPU_TESTS_SMALL set to anything but "" or "0" (tools/sanitize.sh sets it for
// racecheck, which instruments every shared-memory access and runs 10-100x slower): the tests
// with the largest problems take smaller ones that still take the same code paths (several
// blocks, leaves or tiles, sizes off the grids).
inline bool small_gpu_tests() {
  const char* value = std::getenv("MIXSOLVE_GPU_TESTS_SMALL");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}
inline std::int64_t full_or_small(std::int64_t full, std::int64_t small) { return small_gpu_tests() ? small : full; }

// Whether `backend` can run in ctx. Where it cannot, the reason is printed, and under
// MIXSOLVE_GPU_TESTS_REQUIRED the test fails: a loop over backends covers every one it names.
inline bool backend_runs_here(const gemm::Backend& backend, const Context& ctx) {
  const std::string reason = backend.unavailable_reason(ctx);
  if (reason.empty()) return true;
  if (gpu_tests_required())
    ADD_FAILURE() << "MIXSOLVE_GPU_TESTS_REQUIRED is set, and " << backend.name() << " cannot run here: " << reason;
  else
    std::printf("not run here: %s: %s\n", backend.name().c_str(), reason.c_str());
  return false;
}

// The registry's backends of one memory space and data type that can run in ctx; those that
// cannot are named (backend_runs_here). Never empty on a GPU: cuBLAS's backends run everywhere.
inline std::vector<const gemm::Backend*> backends_of(const Context& ctx, Memory memory, gemm::DataType type) {
  std::vector<const gemm::Backend*> out;
  for (const gemm::Backend* b : gemm::all_backends())
    if (b->memory() == memory && b->data_type() == type && backend_runs_here(*b, ctx)) out.push_back(b);
  return out;
}

}  // namespace mixsolve::testing

// A GPU test that cannot run here: skipped with the reason, or failed under
// MIXSOLVE_GPU_TESTS_REQUIRED.
#define MIXSOLVE_SKIP_GPU_TEST(reason)                                                              \
  do {                                                                                              \
    if (::mixsolve::testing::gpu_tests_required())                                                  \
      GTEST_FAIL() << "MIXSOLVE_GPU_TESTS_REQUIRED is set, and this test would skip: " << (reason); \
    GTEST_SKIP() << (reason);                                                                       \
  } while (0)

// GPU tests skip with a message where no GPU is present (CI), and fail there under
// MIXSOLVE_GPU_TESTS_REQUIRED.
#define MIXSOLVE_REQUIRE_GPU()                                                       \
  do {                                                                               \
    if (!::mixsolve::gpu_available()) MIXSOLVE_SKIP_GPU_TEST("no CUDA GPU present"); \
  } while (0)
