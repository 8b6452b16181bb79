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

/// A backend with its parameters, as a command line names them.
struct BackendCall {
  /// The backend; it lives until the program ends.
  const Backend* backend = nullptr;
  /// Its parameters, checked against the backend's ParameterSpecs.
  Parameters parameters;
  /// The text it was parsed from, e.g. "ozaki2-int8:moduli=14", for reports.
  std::string text;
};

/// Parses "name" or "name:key=value,key=value" (integer values).
/// @param text the backend's registry name, then optionally ':' and its parameters.
/// @return the backend and its parameters.
/// @throws InvalidArgument naming the part at fault: an unknown backend (with the known names),
///                         a parameter without '=', a value that is not an integer, a name the
///                         backend does not declare, or a value outside its range.
BackendCall find_backend_call(const std::string& text);

}  // namespace mixsolve::gemm
