// SPDX-License-Identifier: BSD-3-Clause
// Internal: host-side helpers the solvers' CUDA files share (device buffers, launch sizes).
#pragma once

#include <algorithm>
#include <cstdint>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/device_buffer.hpp"

namespace mixsolve::solvers_detail {

// From memory's pool where given (Context::allocate), else from cudaMalloc.
template <class U>
inline DeviceBuffer<U> device_buffer(Context* memory, std::size_t count) {
  return memory ? DeviceBuffer<U>(*memory, count) : DeviceBuffer<U>(count);
}

inline unsigned blocks_for(std::int64_t total, int threads = 256) {
  const std::int64_t b = (total + threads - 1) / threads;
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(b, 1), 65535));
}

}  // namespace mixsolve::solvers_detail
