// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Typed exceptions of the public API. Every message names the function, the argument and the
/// value, e.g. "gemm(cublas-sgemm): lda (3) < rows of A (5)".
#pragma once

#include <stdexcept>
#include <string>

namespace mixsolve {

/// Base of every exception mixsolve throws; catch it to handle all of them. what() gives the
/// message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A caller passed a bad argument (size, leading dimension, null pointer, wrong memory space).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// The operation is valid but this backend / build / device cannot do it (e.g. a GPU operation
/// on a host-only Context, or a size beyond a backend's limit).
class NotSupported : public Error {
 public:
  using Error::Error;
};

/// Input values lie outside the range a number format can hold (e.g. |a| > 65504 for FP16).
class RangeError : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime, cuBLAS or cuSOLVER call failed; the message names the call and the code.
/// Also thrown where no GPU is available for an operation that needs one, and when the device
/// is out of memory.
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace mixsolve
