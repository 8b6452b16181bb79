// SPDX-License-Identifier: BSD-3-Clause
// Launch shapes shared by the libraries' element-wise CUDA kernels. Internal: built against, not
// installed.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mixsolve::detail {

/// Thread blocks of `threads` for a grid-stride kernel over `total` items: one item a thread,
/// at least one block, at most `max_blocks`. Callers whose kernels reduce per block keep their
/// cap: the cap fixes the order of the sums, and with it the bits of the result.
inline unsigned blocks_for(std::int64_t total, std::int64_t max_blocks = 65535, int threads = 256) {
  return unsigned(std::clamp<std::int64_t>((total + threads - 1) / threads, 1, max_blocks));
}

}  // namespace mixsolve::detail
