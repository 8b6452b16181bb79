// SPDX-License-Identifier: BSD-3-Clause
// Backends by name. Every backend compiled into this build is registered; which ones can run
// depends on the Context (a GPU, its compute capability).
#pragma once

#include <string>
#include <vector>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

// Every backend of this build, in a stable order (device backends first, then host ones).
const std::vector<const Backend*>& all_backends();

// The backends that can run in `ctx`.
std::vector<const Backend*> available_backends(const Context& ctx);

// The backend called `name`; throws InvalidArgument listing the known names if there is none.
const Backend& find_backend(const std::string& name);

}  // namespace mixsolve::gemm
