// SPDX-License-Identifier: BSD-3-Clause
// Warp-wide reductions of pivot candidates (the LU's search for the largest |value|).
#pragma once

#include <climits>

namespace mixsolve::primitives {

// Combines two (|value|, row) candidates: the larger value, the lower row on ties. NaN never wins.
template <class T>
__device__ inline void take_better(T& value, int& row, T other_value, int other_row) {
  if (other_value > value || (other_value == value && other_row < row)) {
    value = other_value;
    row = other_row;
  }
}

// The warp's best (|value|, row) candidate, in every lane: the largest value, the lowest row on
// ties (as isamax); a lane without a candidate holds value < 0 and row INT_MAX. Two redux.sync
// (non-negative floats order as their bits) instead of five shuffle rounds of take_better: the
// pivot search runs three such reductions per column on the LU's critical path.
__device__ inline void warp_best(float& value, int& row) {
  const unsigned key = value >= 0.0f ? __float_as_uint(value) + 1u : 0u;
  const unsigned best_key = __reduce_max_sync(0xffffffffu, key);
  row = __reduce_min_sync(0xffffffffu, key == best_key ? row : INT_MAX);
  value = best_key == 0u ? -1.0f : __uint_as_float(best_key - 1u);
}
// FP64: redux.sync takes 32-bit keys, so the high halves first, then the low halves of the lanes
// that hold the largest high half.
__device__ inline void warp_best(double& value, int& row) {
  const auto bits = static_cast<unsigned long long>(__double_as_longlong(value));
  const unsigned high = value >= 0.0 ? static_cast<unsigned>(bits >> 32) + 1u : 0u;
  const unsigned best_high = __reduce_max_sync(0xffffffffu, high);
  const unsigned low = high == best_high ? static_cast<unsigned>(bits) : 0u;
  const unsigned best_low = __reduce_max_sync(0xffffffffu, low);
  row = __reduce_min_sync(0xffffffffu, high == best_high && low == best_low ? row : INT_MAX);
  value = best_high == 0u ? -1.0
                          : __longlong_as_double(static_cast<long long>(
                                static_cast<unsigned long long>(best_high - 1u) << 32 | best_low));
}

}  // namespace mixsolve::primitives
