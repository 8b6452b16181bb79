// SPDX-License-Identifier: BSD-3-Clause
// Element-wise copy with type conversion between matrices of the same shape (host or device).
#pragma once

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

// dst = double(src), exact. Both on the host or both on the device (ordered on `stream`).
void convert(const MatrixView<const float>& src, const MatrixView<double>& dst, CUstream_st* stream = nullptr);

}  // namespace mixsolve
