// SPDX-License-Identifier: BSD-3-Clause
// Internal: host-side helpers the solvers' CUDA files share (device buffers; launch sizes from core).
#pragma once

#include <algorithm>
#include <cstdint>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/internal/launch.hpp"

namespace mixsolve::solvers_detail {

// From memory's pool where given (Context::allocate), else from cudaMalloc.
template <class U>
inline DeviceBuffer<U> device_buffer(Context* memory, std::size_t count) {
  return memory ? DeviceBuffer<U>(*memory, count) : DeviceBuffer<U>(count);
}

using mixsolve::detail::blocks_for;

}  // namespace mixsolve::solvers_detail
