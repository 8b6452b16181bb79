// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' SLFP kernel cases: encode, decode, axpy, dot, gemv, gemm, place, subvector and
// Storage on planes in a byte arena (tests/fuzz/slfp_cases.cpp).
#pragma once

#include <cstdint>

#include "fuzz/settings_and_outcomes.hpp"
#include "mixsolve/core/context.hpp"

namespace mixsolve::fuzz {

// One SLFP case: an operation, a format, sizes, planes placed in a byte arena (in device memory
// on GPU runs), values, and faults (a negative size, a null or misaligned plane, formats or sizes
// that differ, a base type that is not the array's, a vector labelled device on a host-only
// Context, host operands for gemm, an invalid Format value).
void run_slfp_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index);

}  // namespace mixsolve::fuzz
