// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// Column-major matrix views with a leading dimension, on the host or the device.
/// A view does not own memory; element (i, j) lives at data[i + j * ld].
#pragma once

#include <cstdint>
#include <cstdio>
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

/// The bytes [first, last) a well-formed view's storage spans: its elements lie in
/// [data, data + (cols - 1) ld + rows) (detail::check_view). Both 0 for an empty view.
struct StorageRange {
  std::uintptr_t first = 0, last = 0;
};
/// @param v a view already checked by check_view (its memory is not read).
/// @return the byte range of its storage; `last` saturates at the largest address.
template <class T>
StorageRange storage_range(const MatrixView<T>& v) {
  if (v.empty()) return {};
  const auto first = reinterpret_cast<std::uintptr_t>(v.data);
  // (cols - 1) ld + rows elements, in unsigned arithmetic that saturates instead of wrapping.
  constexpr std::uintmax_t most = UINTPTR_MAX;
  const std::uintmax_t cols = std::uintmax_t(v.cols - 1), ld = std::uintmax_t(v.ld), rows = std::uintmax_t(v.rows);
  const std::uintmax_t size = sizeof(T);
  std::uintmax_t elements = most;
  if (cols == 0 || ld <= (most - rows) / cols) elements = cols * ld + rows;
  const std::uintmax_t bytes = elements <= most / size ? elements * size : most;
  return {first, bytes <= most - first ? std::uintptr_t(first + bytes) : std::uintptr_t(most)};
}

/// Whether the storage ranges of two views (storage_range) share a byte. Empty views, and views in
/// different memory spaces, never overlap. The test is on the ranges, not the elements: a view that
/// lies in the rows between another's rows and its ld counts as overlapping it.
/// @param p a view already checked by check_view.
/// @param q another one.
/// @return true when [p's first, p's last) and [q's first, q's last) intersect.
template <class T, class U>
bool storage_overlaps(const MatrixView<T>& p, const MatrixView<U>& q) {
  if (p.empty() || q.empty() || p.memory != q.memory) return false;
  const StorageRange a = storage_range(p), b = storage_range(q);
  return a.first < b.last && b.first < a.last;
}

/// Throws InvalidArgument where a view that is written (`name`) overlaps one that is read
/// (`other`): storage_overlaps. The message names both arguments and their byte ranges, e.g.
/// "solve: X [0x7f10, 0x7f50) overlaps A [0x7f00, 0x7f80): X must not alias A".
/// @param where the calling function's name, for the message.
/// @param name  the written argument's name.
/// @param v     the written view (checked by check_view).
/// @param other_name the read argument's name.
/// @param other the read view (checked by check_view).
/// @throws InvalidArgument naming `where`, both arguments and their storage ranges.
template <class T, class U>
void check_no_overlap(const char* where, const char* name, const MatrixView<T>& v, const char* other_name,
                      const MatrixView<U>& other) {
  if (!storage_overlaps(v, other)) return;
  const auto range = [](const StorageRange& r) {
    char text[64];
    std::snprintf(text, sizeof text, "[%#jx, %#jx)", std::uintmax_t(r.first), std::uintmax_t(r.last));
    return std::string(text);
  };
  throw InvalidArgument(std::string(where) + ": " + name + " " + range(storage_range(v)) + " overlaps " + other_name +
                        " " + range(storage_range(other)) + ": " + name + " must not alias " + other_name);
}
}  // namespace detail

}  // namespace mixsolve
