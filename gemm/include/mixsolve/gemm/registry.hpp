// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Backends by name. Every backend compiled into this build is registered; which ones can run
/// depends on the Context (a GPU, its compute capability).
#pragma once

#include <string>
#include <vector>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm {

/// Every backend of this build, in a stable order (device backends first, then host ones).
/// @return the registry's list; the backends live until the program ends.
const std::vector<const Backend*>& all_backends();

/// The backends that can run in `ctx` (those whose unavailable_reason(ctx) is empty), in the
/// order of all_backends().
/// @param ctx the context to run in; a host-only one gets the host backends.
/// @return the available backends.
/// @throws DeviceError if querying the device's compute capability fails.
std::vector<const Backend*> available_backends(const Context& ctx);

/// The backend called `name`; throws InvalidArgument listing the known names if there is none.
/// @param name a registry name, e.g. "cublas-sgemm" (exact match).
/// @return the backend; it lives until the program ends.
/// @throws InvalidArgument if no backend has that name; the message lists the known names.
const Backend& find_backend(const std::string& name);

}  // namespace mixsolve::gemm
