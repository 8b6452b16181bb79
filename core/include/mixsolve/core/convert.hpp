// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Element-wise copy with type conversion between matrices of the same shape (host or device).
#pragma once

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

/// dst = double(src), exact. Both on the host or both on the device (ordered on `stream`).
/// A device conversion is launched on `stream` and not waited for; a host one runs at once.
/// @param src    FP32 matrix to read (host or device memory, by src.memory).
/// @param dst    FP64 matrix of the same shape, in the same memory space; written.
/// @param stream CUDA stream of a device conversion (null: the default stream); unused on the
///               host.
/// @throws InvalidArgument if a view is malformed (detail::check_view), the shapes differ, or
///                         src and dst lie in different memory spaces.
/// @throws DeviceError     if the kernel launch fails.
void convert(const MatrixView<const float>& src, const MatrixView<double>& dst, CUstream_st* stream = nullptr);

}  // namespace mixsolve
