// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// MIXSOLVE_HD marks functions that compile for both host and device.
#pragma once

#if defined(__CUDACC__)
/// `__host__ __device__` when compiled by nvcc, else nothing: the function compiles for both.
#define MIXSOLVE_HD __host__ __device__
/// Defined (as 1) when compiled by nvcc, where device code can be built.
#define MIXSOLVE_DEVICE_CODE_AVAILABLE 1
#else
#define MIXSOLVE_HD
#endif
