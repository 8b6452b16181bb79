// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' solve() and Factorization cases: a random system, options and views, the call,
// and the checks of its report, X and untouched inputs (tests/fuzz/solve_cases.cpp).
#pragma once

#include <cstdint>

#include "fuzz/settings_and_outcomes.hpp"
#include "mixsolve/core/context.hpp"

namespace mixsolve::fuzz {

// One random case of solve() (factorization_api false) or of a Factorization solving several
// right-hand sides, on host memory or (device_run) mostly device memory; case `index` of `run`.
void run_solve_case(FuzzRun& run, Context& ctx, bool device_run, bool factorization_api, std::int64_t index);

}  // namespace mixsolve::fuzz
