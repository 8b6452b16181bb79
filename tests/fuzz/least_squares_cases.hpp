// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' least_squares() cases: a random problem, options and views, the call, and the
// checks of its report, X and untouched inputs (tests/fuzz/least_squares_cases.cpp).
#pragma once

#include <cstdint>

#include "fuzz/settings_and_outcomes.hpp"
#include "mixsolve/core/context.hpp"

namespace mixsolve::fuzz {

// One random case of least_squares(), on host memory or (device_run) mostly device memory; case
// `index` of `run`.
void run_ls_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index);

}  // namespace mixsolve::fuzz
