// SPDX-License-Identifier: BSD-3-Clause
// The GPU suite's main. Under MIXSOLVE_GPU_TESTS_REQUIRED (gpu_test_support.hpp) a run cannot pass
// with nothing run: it fails on a machine without a usable GPU, when a filter selects no test, and
// when any test skips, whatever macro made it skip: the skip becomes a failure of that test before
// GoogleTest prints its result (end events reach the listeners in reverse order), so no
// "[  SKIPPED ]" line appears for ctest's skip pattern to match.
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu_test_support.hpp"

namespace {

class SkipsFail final : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (test.result()->Skipped())
      ADD_FAILURE() << "MIXSOLVE_GPU_TESTS_REQUIRED is set, and " << test.test_suite_name() << "." << test.name()
                    << " skipped";
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (ctest's discovery at build time) needs no GPU.
  const bool required = mixsolve::testing::gpu_tests_required() && !::testing::GTEST_FLAG(list_tests);
  if (required) {
    if (!mixsolve::gpu_available()) {
      std::fprintf(stderr, "MIXSOLVE_GPU_TESTS_REQUIRED is set, and no usable CUDA GPU is visible\n");
      return 1;
    }
    ::testing::UnitTest::GetInstance()->listeners().Append(new SkipsFail);  // the list owns it
  }
  const int status = RUN_ALL_TESTS();
  if (required && ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "MIXSOLVE_GPU_TESTS_REQUIRED is set, and no test ran\n");
    return 1;
  }
  return status;
}
