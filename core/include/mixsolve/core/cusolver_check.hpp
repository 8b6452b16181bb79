// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Checked cuSOLVER calls: a failing status becomes a DeviceError naming the call.
#pragma once

#include <cusolverDn.h>

#include <string>

#include "mixsolve/core/error.hpp"

/// Evaluates a cuSOLVER call once; unless it returns CUSOLVER_STATUS_SUCCESS, throws DeviceError
/// naming the call and the numeric cusolverStatus_t.
#define MIXSOLVE_CUSOLVER_CHECK(call)                                                                      \
  do {                                                                                                     \
    cusolverStatus_t mixsolve_status_ = (call);                                                            \
    if (mixsolve_status_ != CUSOLVER_STATUS_SUCCESS)                                                       \
      throw ::mixsolve::DeviceError(std::string(#call) + " failed with cusolverStatus " +                  \
                                    std::to_string(static_cast<int>(mixsolve_status_)));                   \
  } while (0)
