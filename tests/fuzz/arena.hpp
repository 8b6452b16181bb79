// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' memory: arenas of host or device memory with guard words and poisoned padding,
// views planned in them (ViewPlan), element masks, and snapshots that find what a call wrote.
//
// Each call's memory is laid out in an arena with guard words and poisoned padding; after the call
// every byte outside what the documentation lets it write must be as before (inputs hashed and
// compared).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mixsolve/core/matrix.hpp"

namespace mixsolve::fuzz {

// FNV-1a over bytes.
inline std::uint64_t hash_bytes(const void* p, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ull) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

// A NaN with a payload no computation makes: the guards and the padding of inputs. A NaN, so that
// a read of padding into a computation shows.
template <class T>
T poison() {
  if constexpr (sizeof(T) == 1) {
    return T(0xa5);
  } else if constexpr (sizeof(T) == 8) {
    const std::uint64_t bits = 0x7ff8dead0000beefull;
    double v;
    std::memcpy(&v, &bits, 8);
    return T(v);
  } else {
    const std::uint32_t bits = 0x7fc0beefu;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// `count` elements of T in host or device memory, between guards of kGuard elements, with a host
// image: cases write the image, upload() copies it to the device, and download() brings back what
// the call left. Every element starts as poison<T>().
template <class T>
class Arena {
 public:
  static constexpr std::size_t kGuard = 16;
  Arena(Memory memory, std::size_t count) : memory_(memory), image_(count + 2 * kGuard, poison<T>()) {
    if (memory_ == Memory::Device && cudaMalloc(&device_, image_.size() * sizeof(T)) != cudaSuccess)
      throw std::runtime_error("fuzz: cudaMalloc of the arena failed");
  }
  ~Arena() {
    if (device_ != nullptr) cudaFree(device_);
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Memory memory() const { return memory_; }
  std::size_t size() const { return image_.size() - 2 * kGuard; }
  // Element `offset` of the host image.
  T& at(std::size_t offset) { return image_[kGuard + offset]; }
  T at(std::size_t offset) const { return image_[kGuard + offset]; }
  // The pointer a call gets for element `offset`: into the image (host) or the device copy.
  T* pointer(std::size_t offset) {
    return memory_ == Memory::Host ? image_.data() + kGuard + offset : device_ + kGuard + offset;
  }
  // The library's calls run on the Context's non-blocking stream, which does not wait for the
  // legacy stream's copy; from pageable memory cudaMemcpy may return before the copy lands.
  void upload() {
    if (memory_ == Memory::Device &&
        (cudaMemcpy(device_, image_.data(), image_.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess ||
         cudaDeviceSynchronize() != cudaSuccess))
      throw std::runtime_error("fuzz: upload failed");
  }
  void download() {
    if (memory_ == Memory::Device &&
        cudaMemcpy(image_.data(), device_, image_.size() * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("fuzz: download failed");
  }
  // The whole image, guards included.
  const std::vector<T>& image() const { return image_; }

 private:
  Memory memory_;
  std::vector<T> image_;
  T* device_ = nullptr;
};

// Where a matrix argument lies and how it is passed: rows, cols and ld as given (possibly
// malformed), the element offset in its arena, a null pointer instead, and the memory the view
// says it is in.
struct ViewPlan {
  std::int64_t rows = 0, cols = 0, ld = 1;
  std::size_t offset = 0;
  bool null = false;
  Memory label = Memory::Host;
  // Elements from the offset that the storage spans for any rows within ld.
  std::size_t storage() const {
    const std::int64_t r = std::max<std::int64_t>({ld, rows, 1}), c = std::max<std::int64_t>(cols, 1);
    return std::size_t(r * c);
  }
  bool has_elements() const { return rows > 0 && cols > 0 && ld >= rows; }
  // Offsets (within the arena) of the view's elements, for a well-formed non-empty view.
  template <class F>
  void for_each(F&& f) const {
    if (!has_elements() || null) return;
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) f(i, j, offset + std::size_t(i + j * ld));
  }
  std::string text(const char* name) const {
    return std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " ld " + std::to_string(ld) +
           (null ? " null" : "") + (label == Memory::Device ? " device" : " host") + " @" + std::to_string(offset);
  }
};

// An element mask over an arena: which offsets belong to a set of views.
class Mask {
 public:
  explicit Mask(std::size_t size) : bits_(size, 0) {}
  void add(const ViewPlan& v) {
    v.for_each([&](std::int64_t, std::int64_t, std::size_t o) {
      if (o < bits_.size()) bits_[o] = 1;
    });
  }
  bool operator[](std::size_t o) const { return o < bits_.size() && bits_[o]; }

 private:
  std::vector<unsigned char> bits_;
};

// Whether two views in one arena share an element.
inline bool elements_overlap(const ViewPlan& p, const ViewPlan& q, std::size_t arena_size) {
  if (p.label != q.label || p.null || q.null) return false;
  Mask m(arena_size);
  m.add(p);
  bool shared = false;
  q.for_each([&](std::int64_t, std::int64_t, std::size_t o) { shared = shared || m[o]; });
  return shared;
}

// Whether the address ranges [first element, last element] of two views intersect.
inline bool ranges_overlap(const ViewPlan& p, const ViewPlan& q) {
  if (p.label != q.label || p.null || q.null || !p.has_elements() || !q.has_elements()) return false;
  const std::size_t p1 = p.offset + std::size_t((p.cols - 1) * p.ld + p.rows);
  const std::size_t q1 = q.offset + std::size_t((q.cols - 1) * q.ld + q.rows);
  return p.offset < q1 && q.offset < p1;
}

// The host image of arenas before a call, and the check afterwards that nothing outside `writable`
// changed: inputs (A, B), the padding between rows and ld, the gaps and the guards.
template <class T>
class Snapshot {
 public:
  explicit Snapshot(const Arena<T>& a) : before_(a.image()) {}
  // "" or where the first change outside `writable` lies. `name_of` names an offset for the message.
  std::string changes(const Arena<T>& a, const Mask& writable,
                      const std::function<std::string(std::size_t)>& name_of) const {
    const std::vector<T>& after = a.image();
    const std::size_t g = Arena<T>::kGuard;
    std::size_t changed = 0;
    std::string first;
    for (std::size_t p = 0; p < after.size(); ++p) {
      const bool in_arena = p >= g && p < after.size() - g;
      if (in_arena && writable[p - g]) continue;
      if (!same_bits(after[p], before_[p])) {
        if (changed++ == 0) first = in_arena ? name_of(p - g) : std::string("a guard word");
      }
    }
    if (changed == 0) return "";
    return std::to_string(changed) + " element(s) changed that the call must not write, first " + first;
  }
  // Element `offset` as it was before the call: the inputs as given.
  T at(std::size_t offset) const { return before_[Arena<T>::kGuard + offset]; }
  // FNV-1a of the view's elements in the image before the call, and in `a` now.
  std::uint64_t hash_before(const ViewPlan& v) const { return hash_of(before_, v); }
  static std::uint64_t hash_now(const Arena<T>& a, const ViewPlan& v) { return hash_of(a.image(), v); }

 private:
  static std::uint64_t hash_of(const std::vector<T>& image, const ViewPlan& v) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    v.for_each(
        [&](std::int64_t, std::int64_t, std::size_t o) { h = hash_bytes(&image[Arena<T>::kGuard + o], sizeof(T), h); });
    return h;
  }
  std::vector<T> before_;
};

// A case's arenas uploaded, and their images before the call: the host arena's, and on a device
// run the device arena's (`which` 0 and 1, as Layout numbers them).
class Uploaded {
 public:
  Uploaded(Arena<double>& host, Arena<double>* device) {
    host.upload();
    if (device) device->upload();
    host_ = std::make_unique<Snapshot<double>>(host);
    if (device) device_ = std::make_unique<Snapshot<double>>(*device);
  }
  const Snapshot<double>& before(int which) const { return which == 0 ? *host_ : *device_; }

 private:
  std::unique_ptr<Snapshot<double>> host_, device_;
};

}  // namespace mixsolve::fuzz
