// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' GEMM cases: a backend of the registry in the typed or the Problem form, or its
// pack_b, with the checks of C against a long double product (tests/fuzz/gemm_cases.cpp).
#pragma once

#include <cstdint>

#include "fuzz/settings_and_outcomes.hpp"
#include "mixsolve/core/context.hpp"

namespace mixsolve::fuzz {

// One GEMM case: a backend of the registry (mostly one that runs here), its data type or
// (rarely) the other one.
void run_gemm_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index);

}  // namespace mixsolve::fuzz
