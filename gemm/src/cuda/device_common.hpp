// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the device backends: availability checks and workspace carving.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm::detail {

// Empty if ctx has a GPU of compute capability >= min_cc (e.g. 80), else the reason.
std::string require_device(const Context& ctx, int min_cc);

// Reads the two device counts overflow[0] (A) and overflow[1] (B) of finite entries that a
// conversion found beyond `format` (one synchronisation of `stream`) and throws RangeError naming
// the backend, the operand, the count and `format`, followed by `advice`.
void throw_if_operands_overflowed(const unsigned int* overflow, cudaStream_t stream, const std::string& backend,
                                  const std::string& format, const std::string& advice);

// Hands out consecutive 256-byte aligned pieces of one workspace allocation.
class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(void* base) : base_(static_cast<char*>(base)) {}
  template <class T>
  T* take(std::size_t count) {
    T* p = reinterpret_cast<T*>(base_ ? base_ + offset_ : nullptr);
    offset_ += align(count * sizeof(T));
    return p;
  }
  std::size_t bytes() const { return offset_; }
  static std::size_t align(std::size_t bytes) { return (bytes + 255) & ~std::size_t{255}; }

 private:
  char* base_;
  std::size_t offset_ = 0;
};

}  // namespace mixsolve::gemm::detail
