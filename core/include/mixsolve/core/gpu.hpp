// SPDX-License-Identifier: BSD-3-Clause
// Whether a usable CUDA GPU is present, and what it is (for reports and benchmark headers).
#pragma once

#include <string>

namespace mixsolve {

// True when the CUDA runtime finds at least one device it can use. Never throws: on a machine
// without a GPU or driver it returns false.
bool gpu_available();

struct DeviceInfo {
  std::string name;          // e.g. "NVIDIA H200"
  int compute_capability = 0;  // 90 for Hopper
  int multiprocessors = 0;
  std::string driver_version;   // e.g. "13.0" (CUDA version the driver supports)
  std::string runtime_version;  // CUDA runtime the library was built with
  std::string cublas_version;
  double memory_gib = 0;
};

// Describes device `device`; throws DeviceError if there is none.
DeviceInfo device_info(int device = 0);

}  // namespace mixsolve
