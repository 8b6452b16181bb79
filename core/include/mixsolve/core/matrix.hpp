// SPDX-License-Identifier: BSD-3-Clause
// Column-major matrix views with a leading dimension, on the host or the device.
// A view does not own memory; element (i, j) lives at data[i + j * ld].
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "mixsolve/core/error.hpp"

namespace mixsolve {

enum class Memory { Host, Device };

inline const char* to_string(Memory m) { return m == Memory::Host ? "host" : "device"; }

template <class T>
struct MatrixView {
  T* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  Memory memory = Memory::Host;

  T& operator()(std::int64_t i, std::int64_t j) const { return data[i + j * ld]; }
  bool empty() const { return rows == 0 || cols == 0; }
  // A read-only view of the same matrix.
  template <class U = T, class = std::enable_if_t<!std::is_const_v<U>>>
  operator MatrixView<const U>() const {
    return {data, rows, cols, ld, memory};
  }
  // The block of `r` rows and `c` columns starting at (i, j).
  MatrixView block(std::int64_t i, std::int64_t j, std::int64_t r, std::int64_t c) const {
    return {data + i + j * ld, r, c, ld, memory};
  }
};

template <class T>
MatrixView<T> host_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return {data, rows, cols, ld, Memory::Host};
}
template <class T>
MatrixView<T> device_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return {data, rows, cols, ld, Memory::Device};
}

namespace detail {
// Throws InvalidArgument unless `v` is a well-formed view: sizes >= 0, ld >= max(1, rows), and a
// non-null pointer whenever the view has elements. `where` names the function, `name` the argument.
template <class T>
void check_view(const char* where, const char* name, const MatrixView<T>& v) {
  auto fail = [&](const std::string& what) {
    throw InvalidArgument(std::string(where) + ": " + name + ": " + what);
  };
  if (v.rows < 0) fail("rows (" + std::to_string(v.rows) + ") < 0");
  if (v.cols < 0) fail("cols (" + std::to_string(v.cols) + ") < 0");
  if (v.ld < (v.rows > 1 ? v.rows : 1))
    fail("ld (" + std::to_string(v.ld) + ") < rows (" + std::to_string(v.rows) + ")");
  if (v.data == nullptr && v.rows > 0 && v.cols > 0) fail("null data pointer with " +
      std::to_string(v.rows) + " x " + std::to_string(v.cols) + " elements");
}
}  // namespace detail

}  // namespace mixsolve
