// SPDX-License-Identifier: BSD-3-Clause
// MIXSOLVE_HD marks functions that compile for both host and device.
#pragma once

#if defined(__CUDACC__)
#define MIXSOLVE_HD __host__ __device__
#define MIXSOLVE_DEVICE_CODE_AVAILABLE 1
#else
#define MIXSOLVE_HD
#endif
