// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Column-major matrix views with a leading dimension, on the host or the device.
/// A view does not own memory; element (i, j) lives at data[i + j * ld].
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "mixsolve/core/error.hpp"

namespace mixsolve {

/// The memory space a pointer lives in: Host (CPU memory) or Device (GPU memory).
enum class Memory { Host, Device };

/// The name of a memory space, for messages.
/// @param m a memory space.
/// @return "host" or "device".
inline const char* to_string(Memory m) { return m == Memory::Host ? "host" : "device"; }

/// A non-owning column-major view of a rows x cols matrix of T with leading dimension `ld`, in
/// host or device memory. Element (i, j) lives at data[i + j * ld]. Functions that take a view
/// check it (detail::check_view) and throw InvalidArgument for a malformed one.
/// @tparam T the element type; const T for a read-only view.
template <class T>
struct MatrixView {
  /// Pointer to element (0, 0), in the memory space `memory`; may be null for an empty view.
  T* data = nullptr;
  /// Number of rows, >= 0.
  std::int64_t rows = 0;
  /// Number of columns, >= 0.
  std::int64_t cols = 0;
  /// Leading dimension: elements between the starts of consecutive columns, >= max(1, rows).
  std::int64_t ld = 0;
  /// Where `data` points: host or device memory.
  Memory memory = Memory::Host;

  /// Element (i, j), unchecked; dereferences `data`, so only for host views.
  /// @param i row index in [0, rows).
  /// @param j column index in [0, cols).
  /// @return a reference to data[i + j * ld].
  T& operator()(std::int64_t i, std::int64_t j) const { return data[i + j * ld]; }
  /// @return true when the view has no elements (rows == 0 or cols == 0).
  bool empty() const { return rows == 0 || cols == 0; }
  /// A read-only view of the same matrix.
  template <class U = T, class = std::enable_if_t<!std::is_const_v<U>>>
  operator MatrixView<const U>() const {
    return {data, rows, cols, ld, memory};
  }
  /// The block of `r` rows and `c` columns starting at (i, j): a view of the same memory with the
  /// same leading dimension. Not checked against the view's bounds.
  /// @param i first row of the block.
  /// @param j first column of the block.
  /// @param r rows of the block.
  /// @param c columns of the block.
  /// @return the sub-view.
  MatrixView block(std::int64_t i, std::int64_t j, std::int64_t r, std::int64_t c) const {
    return {data + i + j * ld, r, c, ld, memory};
  }
};

/// A view of a host matrix.
/// @param data pointer to element (0, 0) in host memory.
/// @param rows number of rows.
/// @param cols number of columns.
/// @param ld   leading dimension.
/// @return {data, rows, cols, ld, Memory::Host} (not checked here).
template <class T>
MatrixView<T> host_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return {data, rows, cols, ld, Memory::Host};
}
/// A view of a device matrix.
/// @param data pointer to element (0, 0) in device memory.
/// @param rows number of rows.
/// @param cols number of columns.
/// @param ld   leading dimension.
/// @return {data, rows, cols, ld, Memory::Device} (not checked here).
template <class T>
MatrixView<T> device_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return {data, rows, cols, ld, Memory::Device};
}

namespace detail {
/// Throws InvalidArgument unless `v` is a well-formed view: sizes >= 0, ld >= max(1, rows), and a
/// non-null pointer whenever the view has elements. `where` names the function, `name` the argument.
/// @param where the calling function's name, for the message.
/// @param name  the argument's name, for the message.
/// @param v     the view to check (its memory is not read).
/// @throws InvalidArgument naming `where`, `name` and the offending size or pointer.
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
