// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Whether a usable CUDA GPU is present, and what it is (for reports and benchmark headers).
#pragma once

#include <string>

#include "mixsolve/core/matrix.hpp"

namespace mixsolve {

/// True when the CUDA runtime finds at least one device it can use. Never throws: on a machine
/// without a GPU or driver it returns false (and clears the runtime's error state).
/// @return whether at least one CUDA device is usable.
bool gpu_available();

/// Where `p` points, as the CUDA runtime sees it: Memory::Device for device and managed memory
/// (both usable by kernels), Memory::Host for anything else, host memory CUDA does not know
/// included. Never throws; on a machine without a GPU every pointer is host memory.
/// @param p any pointer.
/// @return Memory::Device or Memory::Host.
Memory memory_of(const void* p);

/// A description of one GPU and of the CUDA and cuBLAS versions in use (device_info()).
struct DeviceInfo {
  /// The device's name, e.g. "NVIDIA H200".
  std::string name;
  /// 10 major + minor: 90 for Hopper.
  int compute_capability = 0;
  /// Number of streaming multiprocessors.
  int multiprocessors = 0;
  /// CUDA version the driver supports, "major.minor", e.g. "13.0".
  std::string driver_version;
  /// CUDA runtime the library was built with, "major.minor".
  std::string runtime_version;
  /// cuBLAS version, "major.minor.patch".
  std::string cublas_version;
  /// Total device memory in GiB (2^30 bytes).
  double memory_gib = 0;
  /// Peak SM clock in kHz (cudaDevAttrClockRate).
  int sm_clock_khz = 0;
  /// Peak memory clock in kHz (cudaDevAttrMemoryClockRate).
  int memory_clock_khz = 0;
  /// Memory bus width in bits (cudaDevAttrGlobalMemoryBusWidth).
  int memory_bus_width = 0;
};

/// Describes device `device`; throws DeviceError if there is none.
/// @param device CUDA device index.
/// @return its name, compute capability, multiprocessors, memory, clocks, bus width and the
///         software versions.
/// @throws DeviceError if no CUDA GPU is available or `device` is not a valid index.
DeviceInfo device_info(int device = 0);

namespace detail {
/// The checks of device_info(device), for functions that describe a device: throws DeviceError
/// "<who>: no CUDA GPU is available" or "<who>: device (<device>) is not a valid index (<count>
/// devices)".
/// @param who    the function named in the message.
/// @param device a CUDA device index.
/// @throws DeviceError as above.
void check_device_index(const std::string& who, int device);
}  // namespace detail

}  // namespace mixsolve
