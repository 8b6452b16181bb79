// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <gtest/gtest.h>

#include "mixsolve/core/gpu.hpp"

// GPU tests skip with a message where no GPU is present (CI).
#define MIXSOLVE_REQUIRE_GPU()                                            \
  do {                                                                    \
    if (!::mixsolve::gpu_available()) GTEST_SKIP() << "no CUDA GPU present"; \
  } while (0)
