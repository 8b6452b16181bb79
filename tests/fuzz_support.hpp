// SPDX-License-Identifier: BSD-3-Clause
// The argument and input fuzz tests' shared part (tests/host/test_fuzz.cpp on host memory,
// tests/gpu/test_gpu_fuzz.cpp on device memory): a reproducible generator of random calls of the
// public API (shapes, leading dimensions, options, NaN/Inf placements, aliasing, memory spaces),
// what the documentation says each call must do, and the checks of what it did.
//
// Every case ends in a result checked against a reference that does not depend on the machine
// (long double residuals and products, the formats' rounding computed with ldexp/nearbyint), or in
// the named error the headers document, whose message must name the argument. Each call's memory
// is laid out in an arena with guard words and poisoned padding; after the call every byte outside
// what the documentation lets it write must be as before (inputs hashed and compared).
//
// Settings: MIXSOLVE_FUZZ_SEED (the master seed, printed by every test; a failure names its case),
// MIXSOLVE_FUZZ_CASES (cases per test) and MIXSOLVE_FUZZ_TRACE=1 (print each case before it runs,
// for a crash). Read by the tests only: the library reads no environment variable.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "mixsolve/slfp/blas.hpp"
#include "mixsolve/gemm/ozaki_fp32.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/ozaki_slices.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::fuzz {

// FP64's unit roundoff.
constexpr double kU64 = 0x1p-53;
// "mixsolve" in ASCII: the master seed unless MIXSOLVE_FUZZ_SEED says otherwise.
constexpr std::uint64_t kDefaultSeed = 0x6d6978736f6c7665ull;

// ---- reproducible random numbers ----------------------------------------------------------------

// xoshiro256** seeded by splitmix64 (Blackman & Vigna, "Scrambled linear pseudorandom number
// generators", 2021), with its own integer and real distributions: std::uniform_int_distribution
// differs between standard libraries, and a seed must give the same cases everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (std::uint64_t& w : s_) w = splitmix(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // An integer in [lo, hi] (the modulo's bias is below 2^-40 for the ranges used here).
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + std::int64_t(next() % std::uint64_t(hi - lo + 1));
  }
  // A real in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return values.begin()[range(0, std::int64_t(values.size()) - 1)];
  }
  template <class T>
  const T& pick(const std::vector<T>& values) {
    return values[std::size_t(range(0, std::int64_t(values.size()) - 1))];
  }

  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// ---- settings -----------------------------------------------------------------------------------

struct Settings {
  std::uint64_t seed = kDefaultSeed;
  std::int64_t cases = 0;
};

// The master seed and the case count of test `test`: MIXSOLVE_FUZZ_SEED and MIXSOLVE_FUZZ_CASES
// where set (decimal or 0x hex), else kDefaultSeed and `default_cases`. Printed, so that a run can
// be replayed.
inline Settings settings(const char* test, std::int64_t default_cases) {
  Settings s;
  s.cases = default_cases;
  if (const char* v = std::getenv("MIXSOLVE_FUZZ_SEED"); v != nullptr && *v != '\0')
    s.seed = std::strtoull(v, nullptr, 0);
  if (const char* v = std::getenv("MIXSOLVE_FUZZ_CASES"); v != nullptr && *v != '\0')
    s.cases = std::max<std::int64_t>(0, std::strtoll(v, nullptr, 0));
  std::printf("[ fuzz     ] %s: master seed 0x%016" PRIx64 ", %" PRId64
              " cases (MIXSOLVE_FUZZ_SEED, MIXSOLVE_FUZZ_CASES)\n",
              test, s.seed, s.cases);
  return s;
}

// The seed of case `index` of test `test`: each case can be regenerated from the master seed alone.
inline std::uint64_t case_seed(std::uint64_t master, const char* test, std::int64_t index) {
  std::uint64_t h = master;
  for (const char* c = test; *c; ++c) h = (h ^ std::uint64_t(static_cast<unsigned char>(*c))) * 0x100000001b3ull;
  h ^= std::uint64_t(index) * 0x9e3779b97f4a7c15ull;
  return Rng::splitmix(h);
}

// ---- outcomes -----------------------------------------------------------------------------------

// How a call ended: a result, or the exception it threw.
enum class Kind {
  Result,
  InvalidArgument,
  NotSupported,
  RangeError,
  DeviceError,
  SingularMatrix,
  RankDeficientMatrix,
  OtherMixsolveError,  // mixsolve::Error of no documented class
  ForeignException,    // not a mixsolve::Error: never acceptable
};

inline const char* to_string(Kind k) {
  switch (k) {
    case Kind::Result: return "result";
    case Kind::InvalidArgument: return "InvalidArgument";
    case Kind::NotSupported: return "NotSupported";
    case Kind::RangeError: return "RangeError";
    case Kind::DeviceError: return "DeviceError";
    case Kind::SingularMatrix: return "SingularMatrix";
    case Kind::RankDeficientMatrix: return "RankDeficientMatrix";
    case Kind::OtherMixsolveError: return "mixsolve::Error";
    case Kind::ForeignException: return "foreign exception";
  }
  return "?";
}

struct Outcome {
  Kind kind = Kind::Result;
  std::string message;
  std::int64_t column = -1;  // SingularMatrix / RankDeficientMatrix::column()
};

// Runs f and tells how it ended; nothing escapes.
template <class F>
Outcome capture(F&& f) {
  try {
    f();
    return {};
  } catch (const SingularMatrix& e) {
    return {Kind::SingularMatrix, e.what(), e.column()};
  } catch (const RankDeficientMatrix& e) {
    return {Kind::RankDeficientMatrix, e.what(), e.column()};
  } catch (const InvalidArgument& e) {
    return {Kind::InvalidArgument, e.what()};
  } catch (const NotSupported& e) {
    return {Kind::NotSupported, e.what()};
  } catch (const RangeError& e) {
    return {Kind::RangeError, e.what()};
  } catch (const DeviceError& e) {
    return {Kind::DeviceError, e.what()};
  } catch (const Error& e) {
    return {Kind::OtherMixsolveError, e.what()};
  } catch (const std::exception& e) {
    return {Kind::ForeignException, std::string("std::exception: ") + e.what()};
  } catch (...) {
    return {Kind::ForeignException, "an exception of unknown type"};
  }
}

// A documented error: its class and the texts its message must contain (the argument and value).
struct Fault {
  Kind kind = Kind::InvalidArgument;
  std::vector<std::string> names;
  std::int64_t column = -1;  // SingularMatrix: the column it must name (-1: any)
};

inline std::string describe(const Fault& f) {
  std::string s = to_string(f.kind);
  for (const std::string& n : f.names) s += " \"" + n + "\"";
  if (f.column >= 0) s += " column " + std::to_string(f.column);
  return s;
}

// What a call may end in: one of `must` where it is not empty (a result is then wrong), else a
// result or one of `may` (behaviour the documentation leaves open, e.g. the aliasing of an empty X).
struct Expected {
  std::vector<Fault> must, may;
};

inline bool matches(const Outcome& o, const Fault& f) {
  if (o.kind != f.kind) return false;
  for (const std::string& n : f.names)
    if (o.message.find(n) == std::string::npos) return false;
  return f.column < 0 || o.column == f.column;
}

// "" where the outcome is one the expectation allows, else what is wrong.
inline std::string judge(const Outcome& o, const Expected& e) {
  std::string listed;
  for (const Fault& f : e.must) listed += "\n    must: " + describe(f);
  for (const Fault& f : e.may) listed += "\n    may: " + describe(f);
  if (o.kind == Kind::Result) return e.must.empty() ? "" : "returned a result; expected an error:" + listed;
  for (const std::vector<Fault>* list : {&e.must, &e.may})
    for (const Fault& f : *list)
      if (matches(o, f)) return "";
  return std::string("threw ") + to_string(o.kind) + " (" + o.message + ") column " + std::to_string(o.column) +
         "; expected " + (e.must.empty() ? "a result" : "one of") + listed;
}

// Counts of how the cases of one test ended, for the summary line and the assertions that every
// kind of ending the test is meant to exercise occurred.
class Tally {
 public:
  void count(const std::string& outcome) { ++counts_[outcome]; }
  std::int64_t operator[](const std::string& outcome) const {
    const auto it = counts_.find(outcome);
    return it == counts_.end() ? 0 : it->second;
  }
  std::int64_t total() const {
    std::int64_t t = 0;
    for (const auto& [k, v] : counts_) t += v;
    return t;
  }
  std::string summary() const {
    std::string s;
    for (const auto& [k, v] : counts_) s += (s.empty() ? "" : ", ") + k + " " + std::to_string(v);
    return s;
  }

 private:
  std::map<std::string, std::int64_t> counts_;
};

// One test's bookkeeping: failures are reported with the case's replay information; after 20
// the rest are counted only (the test fails either way).
class FuzzRun {
 public:
  FuzzRun(const char* test, std::int64_t default_cases) : test_(test), settings_(settings(test, default_cases)) {
    const char* trace = std::getenv("MIXSOLVE_FUZZ_TRACE");  // print each case before it runs (a crash's replay)
    trace_ = trace != nullptr && *trace != '\0' && std::strcmp(trace, "0") != 0;
  }
  std::int64_t cases() const { return settings_.cases; }
  std::uint64_t seed(std::int64_t index) const { return case_seed(settings_.seed, test_, index); }
  void begin(std::int64_t index, std::string description) {
    index_ = index;
    description_ = std::move(description);
    if (trace_)
      std::printf("[ fuzz     ] %s case %" PRId64 ": %s\n", test_, index, description_.c_str()), std::fflush(stdout);
    start_ = std::chrono::steady_clock::now();
  }
  void fail(const std::string& what) {
    ++failures_;
    if (failures_ <= 20)
      ADD_FAILURE() << test_ << " case " << index_ << " (master seed 0x" << std::hex << settings_.seed << std::dec
                    << "): " << what << "\n  case: " << description_;
  }
  void expect(bool ok, const std::string& what) {
    if (!ok) fail(what);
  }
  // Ends a case: its outcome is counted, its time kept for the summary.
  void end(const std::string& outcome) {
    tally_.count(outcome);
    ++ran_;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (s > slowest_) slowest_ = s, slowest_case_ = index_;
  }
  // The largest error / bound ratio of a kind of check, printed with the summary: how close the
  // cases come to the bounds they are held to.
  void observe(const std::string& check, double ratio) {
    double& worst = ratios_[check];
    if (ratio > worst) worst = ratio;
  }
  const Tally& tally() const { return tally_; }
  std::int64_t ran() const { return ran_; }
  std::int64_t failures() const { return failures_; }
  // The one-line summary, and the assertions every fuzz test makes: every case ran and ended in
  // a counted outcome, none failed, and (with enough cases to make it certain for any seed) each
  // outcome in `required` occurred at least `at_least` times.
  void finish(const std::vector<std::string>& required, std::int64_t at_least = 1) {
    std::string ratios;
    for (const auto& [check, worst] : ratios_) {
      char text[96];
      std::snprintf(text, sizeof text, "%s%s %.2g", ratios.empty() ? "; largest error/bound: " : ", ", check.c_str(),
                    worst);
      ratios += text;
    }
    std::printf("[ fuzz     ] %s: %" PRId64 " cases, %" PRId64 " failed: %s; slowest case %" PRId64 " (%.3f s)%s\n",
                test_, ran_, failures_, tally_.summary().c_str(), slowest_case_, slowest_, ratios.c_str());
    EXPECT_EQ(ran_, settings_.cases);
    EXPECT_EQ(tally_.total(), settings_.cases);
    EXPECT_EQ(failures_, 0);
    // `at_least` of each from 1000 cases on, one from 100 on; below (a sanitizer's few dozen) a
    // rare outcome may not occur for every seed.
    if (settings_.cases >= 100)
      for (const std::string& r : required)
        EXPECT_GE(tally_[r], settings_.cases >= 1000 ? at_least : 1)
            << test_ << ": too few cases ended in " << r << " (" << tally_.summary() << ")";
    if (settings_.cases >= 20)
      EXPECT_GT(tally_["result"], 0) << test_ << ": no case ended in a result (" << tally_.summary() << ")";
    if (settings_.cases >= 20)
      EXPECT_LT(tally_["result"], settings_.cases)
          << test_ << ": no case ended in an error (" << tally_.summary() << ")";
  }

 private:
  const char* test_;
  Settings settings_;
  Tally tally_;
  std::int64_t index_ = -1, ran_ = 0, failures_ = 0, slowest_case_ = -1;
  std::string description_;
  std::chrono::steady_clock::time_point start_;
  double slowest_ = 0;
  bool trace_ = false;
  std::map<std::string, double> ratios_;
};

// ---- memory: arenas with guards -----------------------------------------------------------------

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

// ---- value generation ---------------------------------------------------------------------------

inline double nonfinite(Rng& rng) {
  return rng.pick<double>({std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY});
}

// The leading dimension of a rows-row matrix: the least, a larger one, or (bad) one too small.
// `bad` tells the caller which it got.
inline std::int64_t pick_ld(Rng& rng, std::int64_t rows, double bad_chance, bool& bad) {
  const std::int64_t least = std::max<std::int64_t>(1, rows);
  bad = false;
  if (rng.chance(bad_chance)) {
    bad = true;
    const int kind = int(rng.range(0, 2));
    if (kind == 0) return rng.range(-5, 0);  // zero or negative
    if (kind == 1 && least > 1) return least - rng.range(1, least - 1);
    if (least > 1) return least - 1;
    return rng.range(-3, 0);
  }
  if (rng.chance(0.45)) return least;
  if (rng.chance(0.8)) return least + rng.range(1, 9);
  return least + rng.range(10, 80);
}

// ---- solve() and Factorization --------------------------------------------------------------------

inline const std::vector<Precision>& factorization_precisions() {
  static const std::vector<Precision> p = {Precision::FP64,     Precision::FP32,   Precision::TF32,
                                           Precision::FP16,     Precision::BF16,   Precision::Halfhalf,
                                           Precision::Tf32tf32, Precision::Fp16x3, Precision::Ozaki};
  return p;
}

// The precision path SolveOptions documents: auto_path (FP64 alone below auto_min_n, whose -1 means
// 12288 for device matrices and 0 for host ones) or the one precision asked for, then FP64 where
// fallback is on.
inline std::vector<Precision> documented_path(const SolveOptions& o, std::int64_t n, bool device_engine) {
  const std::int64_t auto_min_n = o.auto_min_n >= 0 ? o.auto_min_n : (device_engine ? 12288 : 0);
  std::vector<Precision> path;
  if (o.factorization == Precision::Auto)
    path = n >= auto_min_n ? o.auto_path : std::vector<Precision>{Precision::FP64};
  else
    path = {o.factorization};
  if (o.fallback && !path.empty() && path.back() != Precision::FP64) path.push_back(Precision::FP64);
  return path;
}

// Measures of column j of X as a solution of A x = b, in long double from the host image.
struct ColumnCheck {
  long double residual = 0;  // ||b - A x||_inf
  long double scale = 0;     // max_i (|A||x| + |b|)_i
  long double norm_x = 0, norm_b = 0;
  long double normwise = 0;       // residual / (||A||_inf ||x||_inf + ||b||_inf)
  long double componentwise = 0;  // max_i |b - A x|_i / (|A||x| + |b|)_i (Oettli and Prager)
  bool finite = true;
  bool zero_b = true;
};

template <class Image>
long double norm_inf_rows(const Image& img, const ViewPlan& a) {
  long double largest = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) {
    long double row = 0;
    for (std::int64_t j = 0; j < a.cols; ++j) row += std::fabs((long double)img.at(a.offset + i + j * a.ld));
    largest = std::max(largest, row);
  }
  return largest;
}

// A and B are read from `in` (the inputs as given), X from `out` (what the call left).
template <class In, class Out>
ColumnCheck check_column(const In& in, const Out& out, const ViewPlan& a, const ViewPlan& b, const ViewPlan& x,
                         std::int64_t j, long double norm_a) {
  ColumnCheck c;
  const std::int64_t m = a.rows, n = a.cols;
  for (std::int64_t l = 0; l < n; ++l) {
    const double v = out.at(x.offset + l + j * x.ld);
    if (!std::isfinite(v)) c.finite = false;
    c.norm_x = std::max(c.norm_x, std::fabs((long double)v));
  }
  for (std::int64_t i = 0; i < m; ++i) {
    const long double bi = in.at(b.offset + i + j * b.ld);
    if (bi != 0) c.zero_b = false;
    long double r = bi, s = std::fabs(bi);
    for (std::int64_t l = 0; l < n; ++l) {
      const long double aij = in.at(a.offset + i + l * a.ld), xl = out.at(x.offset + l + j * x.ld);
      r -= aij * xl;
      s += std::fabs(aij * xl);
    }
    c.residual = std::max(c.residual, std::fabs(r));
    c.scale = std::max(c.scale, s);
    c.norm_b = std::max(c.norm_b, std::fabs(bi));
    const long double cw = s > 0 ? std::fabs(r) / s : (r == 0 ? 0.0L : (long double)INFINITY);
    c.componentwise = std::max(c.componentwise, cw);
  }
  const long double den = norm_a * c.norm_x + c.norm_b;
  c.normwise = den > 0 ? c.residual / den : (c.residual == 0 ? 0.0L : (long double)INFINITY);
  return c;
}

// Entries of the matrix families (host image, rows x cols at `v`).
enum class SolveFamily {
  Uniform,
  Dominant,
  Graded,
  Scaled,
  Huge,
  Tiny,
  NearlySingular,
  Permutation,
  ZeroColumn,
  ZeroRow
};

inline const char* to_string(SolveFamily f) {
  switch (f) {
    case SolveFamily::Uniform: return "uniform";
    case SolveFamily::Dominant: return "diagonally dominant";
    case SolveFamily::Graded: return "graded columns 1..1e-8";
    case SolveFamily::Scaled: return "rows and columns scaled by 2^+-20";
    case SolveFamily::Huge: return "uniform x 2^500";
    case SolveFamily::Tiny: return "uniform x 2^-500";
    case SolveFamily::NearlySingular: return "nearly singular (cond ~1e10)";
    case SolveFamily::Permutation: return "scaled permutation";
    case SolveFamily::ZeroColumn: return "zero column";
    case SolveFamily::ZeroRow: return "zero row";
  }
  return "?";
}

// Fills the view's elements with family f; *zero gets the zero row's or column's index.
inline void fill_family(Rng& rng, Arena<double>& img, const ViewPlan& v, SolveFamily f, std::int64_t* zero) {
  const std::int64_t r = v.rows, c = v.cols;
  if (r <= 0 || c <= 0 || v.ld < r) return;
  std::vector<int> row_exp(std::size_t(r), 0), col_exp(std::size_t(c), 0);
  std::vector<std::int64_t> perm(std::size_t(std::max(r, c)));
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = std::int64_t(i);
  for (std::size_t i = perm.size(); i > 1; --i)
    std::swap(perm[i - 1], perm[std::size_t(rng.range(0, std::int64_t(i) - 1))]);
  if (f == SolveFamily::Scaled) {
    for (int& e : row_exp) e = int(rng.range(-20, 20));
    for (int& e : col_exp) e = int(rng.range(-20, 20));
  }
  const std::int64_t z = f == SolveFamily::ZeroColumn ? rng.range(0, c - 1)
                         : f == SolveFamily::ZeroRow  ? rng.range(0, r - 1)
                                                      : -1;
  if (zero) *zero = z;
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < r; ++i) {
      double value = rng.uniform(-1, 1);
      switch (f) {
        case SolveFamily::Dominant:
          if (i == j) value += double(c) * (value < 0 ? -1 : 1);
          break;
        case SolveFamily::Graded:
          value *= std::pow(10.0, -8.0 * double(j) / double(std::max<std::int64_t>(1, c - 1)));
          break;
        case SolveFamily::Scaled: value = std::ldexp(value, row_exp[std::size_t(i)] + col_exp[std::size_t(j)]); break;
        case SolveFamily::Huge: value = std::ldexp(value, 500); break;
        case SolveFamily::Tiny: value = std::ldexp(value, -500); break;
        case SolveFamily::Permutation:
          value = perm[std::size_t(j)] == i ? std::ldexp(1.0 + double(j % 3), int(j % 7) - 3) : 0.0;
          break;
        case SolveFamily::ZeroColumn:
          if (j == z) value = 0;
          break;
        case SolveFamily::ZeroRow:
          if (i == z) value = 0;
          break;
        default: break;
      }
      img.at(v.offset + std::size_t(i + j * v.ld)) = value;
    }
  if (f == SolveFamily::NearlySingular && c >= 2)  // the last column: the first plus 1e-10 noise
    for (std::int64_t i = 0; i < r; ++i)
      img.at(v.offset + std::size_t(i + (c - 1) * v.ld)) =
          img.at(v.offset + std::size_t(i)) + 1e-10 * rng.uniform(-1, 1);
}

// The badly-scaled test SolveReport::componentwise_backward_error documents: the largest entries
// of A's rows, or of its columns, spread over more than 2^12.
template <class Image>
bool badly_scaled(const Image& img, const ViewPlan& a) {
  const auto spread = [&](bool rows) {
    double lo = INFINITY, hi = 0;
    for (std::int64_t p = 0; p < (rows ? a.rows : a.cols); ++p) {
      double largest = 0;
      for (std::int64_t q = 0; q < (rows ? a.cols : a.rows); ++q)
        largest = std::max(largest, std::fabs(img.at(a.offset + std::size_t(rows ? p + q * a.ld : q + p * a.ld))));
      lo = std::min(lo, largest);
      hi = std::max(hi, largest);
    }
    return lo > 0 ? hi / lo : INFINITY;
  };
  return a.rows > 0 && (spread(true) > 0x1p12 || spread(false) > 0x1p12);
}

// One right-hand side of a case: B, X, how X is placed, NaN/Inf in B, and the solve's expectation.
struct SolveRhs {
  ViewPlan b, x;
  std::string alias = "none";
  bool zero_column_of_b = false;
  Expected expected;
};

struct SolveCase {
  SolveFamily family = SolveFamily::Uniform;
  std::int64_t n = 0;
  ViewPlan a;
  SolveOptions options;
  std::string options_text;
  bool progress = false;
  bool factorization = false;  // Factorization with several solves, else solve()
  bool move = false;           // the Factorization is moved between solves
  std::int64_t zero = -1;      // ZeroColumn / ZeroRow: its index
  bool a_faulty = false;       // a documented error of A or the options applies
  Expected construct;          // the faults of A and the options
  std::vector<SolveRhs> rhs;
  std::string text() const {
    std::string s = std::string(factorization ? "Factorization" : "solve") + ", " + to_string(family) + ", n " +
                    std::to_string(n) + ", " + a.text("A") + ", options {" + options_text + "}";
    if (move) s += ", moved between solves";
    for (const SolveRhs& r : rhs) s += "; " + r.b.text("B") + ", " + r.x.text("X") + ", alias " + r.alias;
    return s;
  }
};

// Random valid options; with `invalid` one field out of its documented range, which the
// constructor must name (added to e.must).
inline SolveOptions random_solve_options(Rng& rng, bool device_engine, bool invalid, Expected& e, std::string& text) {
  SolveOptions o;
  std::ostringstream t;
  const auto& ps = factorization_precisions();
  if (rng.chance(0.55)) {
    o.factorization = Precision::Auto;
    if (rng.chance(0.5)) {
      o.auto_path.clear();
      const int len = int(rng.range(1, 3));
      for (int i = 0; i < len; ++i) o.auto_path.push_back(rng.pick(ps));
    }
  } else {
    o.factorization = rng.pick(ps);
    if (rng.chance(0.1)) o.auto_path.clear();  // ignored where factorization is not Auto
  }
  t << "factorization " << to_string(o.factorization) << " path";
  for (Precision p : o.auto_path) t << " " << to_string(p);
  if (device_engine ? rng.chance(0.7) : rng.chance(0.3)) o.auto_min_n = rng.pick<std::int64_t>({0, 0, 1, 8, 40});
  o.refinement =
      rng.pick({Refinement::Auto, Refinement::Auto, Refinement::Classic, Refinement::Gmres, Refinement::None});
  o.stop_test = rng.chance(0.7) ? StopTest::Attainable : StopTest::Lapack;
  if (rng.chance(0.25)) o.tolerance_factor = rng.pick({1e-3, 0.5, 4.0, 100.0, 1e6});
  if (rng.chance(0.3)) o.max_iterations = rng.pick({0, 1, 2, 3, 6, 100});
  if (rng.chance(0.25)) o.gmres_restart = rng.pick({1, 2, 3, 7, 20, 200});
  if (rng.chance(0.25)) o.gmres_max_inner = rng.pick({1, 2, 5, 16, 40, 1000});
  if (rng.chance(0.15))
    o.krylov_basis_format = rng.pick({slfp::Format::Slfp64in56, slfp::Format::Slfp64in48, slfp::Format::Slfp64in40,
                                      slfp::Format::Slfp64in32, slfp::Format::Slfp64in24, slfp::Format::Slfp64in16});
  if (rng.chance(0.15))
    o.factor_storage = rng.pick({slfp::Format::Slfp32in24, slfp::Format::Slfp32in16, slfp::Format::Slfp64in32,
                                 slfp::Format::Slfp64in24, slfp::Format::Slfp64in16});
  o.escalate_by_cost = rng.chance(0.7);
  o.fallback = rng.chance(0.75);
  o.reuse_pivot_order = rng.chance(0.7);
  if (rng.chance(0.3)) o.probe_pivot_ratio = rng.pick({0.0, 1e-8, 1.0, double(INFINITY)});
  o.range_scaling = rng.chance(0.8);
  o.condition_estimate =
      rng.pick({ConditionEstimate::WhenNotConverged, ConditionEstimate::Never, ConditionEstimate::Always});
  if (rng.chance(0.3)) o.block_size = rng.pick({1, 2, 3, 7, 16, 33, 64, 300});
  if (rng.chance(0.2)) o.ozaki_bits = int(rng.pick<std::int64_t>({kOzakiMinBits, 20, 32, kOzakiMaxBits}));
  if (invalid) {
    const auto s = [](auto v) { return std::to_string(v); };
    switch (int(rng.range(0, 12))) {
      case 9:
        o.gmres_max_inner = -int(rng.range(0, 5));
        e.must.push_back({Kind::InvalidArgument, {"gmres_max_inner (" + s(o.gmres_max_inner) + ")"}});
        break;
      case 10:
        o.block_size = -int(rng.range(1, 40));
        e.must.push_back({Kind::InvalidArgument, {"block_size (" + s(o.block_size) + ")"}});
        break;
      case 11:
        o.probe_pivot_ratio = rng.pick({-1.0, -1e-4, double(NAN), -double(INFINITY)});
        e.must.push_back({Kind::InvalidArgument, {"probe_pivot_ratio"}});
        break;
      case 12:
        o.tolerance_factor = INFINITY;
        e.must.push_back({Kind::InvalidArgument, {"tolerance_factor"}});
        break;
      case 0:
        o.max_iterations = -int(rng.range(1, 5));
        e.must.push_back({Kind::InvalidArgument, {"max_iterations (" + s(o.max_iterations) + ")"}});
        break;
      case 1:
        o.auto_min_n = -rng.range(2, 100);
        e.must.push_back({Kind::InvalidArgument, {"auto_min_n (" + s(o.auto_min_n) + ")"}});
        break;
      case 2:
        o.gmres_restart = -int(rng.range(0, 3));
        e.must.push_back({Kind::InvalidArgument, {"gmres_restart (" + s(o.gmres_restart) + ")"}});
        break;
      case 3:
        o.tolerance_factor = rng.pick({0.0, -1.0, double(NAN), -double(INFINITY)});
        e.must.push_back({Kind::InvalidArgument, {"tolerance_factor"}});
        break;
      case 4:
        o.ozaki_bits = rng.pick({kOzakiMinBits - 1, kOzakiMaxBits + 1, 0, -3, 64});
        e.must.push_back({Kind::InvalidArgument, {"ozaki_bits (" + s(o.ozaki_bits) + ")"}});
        break;
      case 5:
        o.factorization = Precision::Auto;
        o.auto_path.clear();
        e.must.push_back({Kind::InvalidArgument, {"auto_path"}});
        break;
      case 6: {
        o.factorization = Precision::Auto;
        o.auto_path = {Precision::FP32, Precision::Auto};
        if (rng.chance(0.5)) std::swap(o.auto_path[0], o.auto_path[1]);
        const int at = o.auto_path[0] == Precision::Auto ? 0 : 1;
        e.must.push_back({Kind::InvalidArgument, {"auto_path[" + s(at) + "]"}});
        break;
      }
      case 7:
        o.factor_storage = rng.pick(
            {slfp::Format::Fp64, slfp::Format::Slfp64in56, slfp::Format::Slfp64in48, slfp::Format::Slfp64in40});
        e.must.push_back({Kind::InvalidArgument, {"factor_storage"}});
        break;
      default:
        o.krylov_basis_format = rng.pick({slfp::Format::Fp32, slfp::Format::Slfp32in24, slfp::Format::Slfp32in16});
        e.must.push_back({Kind::InvalidArgument, {"krylov_basis_format"}});
        break;
    }
  }
  t << ", min_n " << o.auto_min_n << ", refinement " << to_string(o.refinement) << ", stop " << to_string(o.stop_test)
    << ", tol " << o.tolerance_factor << ", iters " << o.max_iterations << ", restart " << o.gmres_restart << ", inner "
    << o.gmres_max_inner << ", basis " << slfp::to_string(o.krylov_basis_format) << ", storage "
    << slfp::to_string(o.factor_storage) << ", by cost " << o.escalate_by_cost << ", fallback " << o.fallback
    << ", reuse " << o.reuse_pivot_order << ", probe " << o.probe_pivot_ratio << ", scaling " << o.range_scaling
    << ", cond " << to_string(o.condition_estimate) << ", block " << o.block_size << ", bits " << o.ozaki_bits;
  text = t.str();
  return o;
}

// The faults of a matrix argument's view (detail::check_view's rules, as matrix.hpp documents
// them), named by the argument.
inline void view_faults(const ViewPlan& v, const char* name, std::vector<Fault>& out) {
  const auto s = [](std::int64_t x) { return std::to_string(x); };
  if (v.rows < 0) out.push_back({Kind::InvalidArgument, {name, "rows (" + s(v.rows) + ")"}});
  if (v.cols < 0) out.push_back({Kind::InvalidArgument, {name, "cols (" + s(v.cols) + ")"}});
  if (v.ld < std::max<std::int64_t>(1, v.rows)) out.push_back({Kind::InvalidArgument, {name, "ld (" + s(v.ld) + ")"}});
  if (v.null && v.rows > 0 && v.cols > 0) out.push_back({Kind::InvalidArgument, {name, "null"}});
}

// Sizes: 0, 1, small odd and even ones, a few larger.
inline std::int64_t pick_order(Rng& rng, std::int64_t large) {
  const double u = rng.uniform();
  if (u < 0.05) return 0;
  if (u < 0.13) return 1;
  if (u < 0.25) return rng.range(2, 4);
  if (u < 0.8) return rng.range(5, 40);
  return rng.range(41, large);
}

inline std::int64_t pick_rhs(Rng& rng) {
  const double u = rng.uniform();
  if (u < 0.05) return 0;
  if (u < 0.6) return 1;
  return rng.range(2, 5);
}

// Memory labels of a case: `device_run` cases mostly put A, B and X on the device, some all on
// the host (the host engine with a GPU Context) and some mixed (refused); host runs keep all on
// the host but now and then label a view Device (refused: a host-only Context, or mixed spaces).
struct Labels {
  Memory a = Memory::Host;
  Memory b = Memory::Host, x = Memory::Host;
};
inline Labels pick_labels(Rng& rng, bool device_run) {
  Labels l;
  if (device_run) {
    const double u = rng.uniform();
    const Memory main = u < 0.85 ? Memory::Device : Memory::Host;
    l.a = l.b = l.x = main;
    if (u >= 0.85 && u < 0.9) l.a = Memory::Device;  // mixed
    if (rng.chance(0.06)) l.b = main == Memory::Device ? Memory::Host : Memory::Device;
    if (rng.chance(0.06)) l.x = main == Memory::Device ? Memory::Host : Memory::Device;
  } else {
    if (rng.chance(0.02)) l.a = Memory::Device;
    if (rng.chance(0.015)) l.b = Memory::Device;
    if (rng.chance(0.015)) l.x = Memory::Device;
  }
  return l;
}

// Offsets of the views in their arenas (0: host, 1: device).
struct Layout {
  std::size_t next[2] = {0, 0};
  bool device_run = false;
  int arena_of(const ViewPlan& v) const { return device_run && v.label == Memory::Device ? 1 : 0; }
  void place(Rng& rng, ViewPlan& v) {
    std::size_t& n = next[arena_of(v)];
    n += std::size_t(rng.range(0, 3));
    v.offset = n;
    n += v.storage();
  }
  void cover(const ViewPlan& v) {  // a view placed by hand (aliasing) must lie inside its arena
    std::size_t& n = next[arena_of(v)];
    n = std::max(n, v.offset + v.storage());
  }
};

inline SolveFamily pick_solve_family(Rng& rng) {
  const double u = rng.uniform();
  if (u < 0.40) return SolveFamily::Uniform;
  if (u < 0.48) return SolveFamily::Dominant;
  if (u < 0.55) return SolveFamily::Graded;
  if (u < 0.62) return SolveFamily::Scaled;
  if (u < 0.66) return SolveFamily::Huge;
  if (u < 0.70) return SolveFamily::Tiny;
  if (u < 0.76) return SolveFamily::NearlySingular;
  if (u < 0.80) return SolveFamily::Permutation;
  if (u < 0.92) return SolveFamily::ZeroColumn;
  return SolveFamily::ZeroRow;
}

// Positions (i, j) inside a view where NaN or Inf go.
using Positions = std::vector<std::pair<std::int64_t, std::int64_t>>;
inline Positions pick_positions(Rng& rng, const ViewPlan& v, double chance) {
  Positions p;
  if (!v.has_elements() || v.null || !rng.chance(chance)) return p;
  const int count = int(rng.range(1, 2));
  for (int i = 0; i < count; ++i) p.push_back({rng.range(0, v.rows - 1), rng.range(0, v.cols - 1)});
  return p;
}

inline void nonfinite_faults(const Positions& p, const char* name, std::vector<Fault>& out) {
  for (const auto& [i, j] : p)
    out.push_back({Kind::InvalidArgument,
                   {std::string(name) + "(" + std::to_string(i) + ", " + std::to_string(j) + ")", "NaN or Inf"}});
}

// Where X goes relative to A and B: its own place, or on top of (part of) A or B.
inline std::string alias_x(Rng& rng, const ViewPlan& a, const ViewPlan& b, ViewPlan& x, bool beside_possible) {
  const int mode = int(rng.range(0, beside_possible ? 4 : 3));
  const auto extent = [](const ViewPlan& v) {
    return v.has_elements() ? std::size_t((v.cols - 1) * v.ld + v.rows) : std::size_t(1);
  };
  switch (mode) {
    case 0: x.label = b.label, x.offset = b.offset, x.ld = b.ld; return "X == B";
    case 1:
      x.label = a.label, x.offset = a.offset, x.ld = std::max<std::int64_t>(a.ld, x.rows);
      return "X == A's pointer";
    case 2:
      x.label = a.label,
      x.offset = a.offset + std::size_t(rng.range(1, std::int64_t(std::max<std::size_t>(1, extent(a) - 1))));
      return "X inside A";
    case 3:
      x.label = b.label,
      x.offset = b.offset + std::size_t(rng.range(1, std::int64_t(std::max<std::size_t>(1, extent(b) - 1))));
      return "X inside B";
    default:  // X's elements in the rows between A's rows and lda (A.ld >= 2 n)
      x.label = a.label, x.offset = a.offset + std::size_t(a.rows), x.ld = a.ld;
      return "X in A's padding";
  }
}

// The aliasing rule solve() and least_squares() document: X's storage range [x.data, x.data +
// (k - 1) ldx + n) must not share a byte with A's or B's (detail::check_no_overlap), even where
// X's elements only interleave theirs; empty views overlap nothing. `check_a` false: A may hold X
// (a host A that Factorization copied).
inline void alias_faults(const ViewPlan& a, const ViewPlan& b, const ViewPlan& x, bool same_arena_a, bool same_arena_b,
                         bool check_a, Expected& e) {
  if (check_a && same_arena_a && ranges_overlap(x, a))
    e.must.push_back({Kind::InvalidArgument, {"X", "overlaps", "A"}});
  if (same_arena_b && ranges_overlap(x, b)) e.must.push_back({Kind::InvalidArgument, {"X", "overlaps", "B"}});
}

inline SolveCase make_solve_case(Rng& rng, bool device_run, bool factorization_api, Layout& layout) {
  SolveCase c;
  c.factorization = factorization_api;
  c.move = factorization_api && rng.chance(0.2);
  c.n = pick_order(rng, device_run ? 200 : 160);
  c.family = pick_solve_family(rng);
  const Labels labels = pick_labels(rng, device_run);
  c.a.rows = c.a.cols = c.n;
  c.a.label = labels.a;
  if (rng.chance(0.02)) c.a.cols = c.n + rng.range(1, 3);  // not square
  if (rng.chance(0.01)) (rng.chance(0.5) ? c.a.rows : c.a.cols) = -rng.range(1, 4);
  bool bad = false;
  c.a.ld = pick_ld(rng, c.a.rows, 0.025, bad);
  const bool beside_possible = c.n > 0 && rng.chance(0.05);
  if (beside_possible && !bad) c.a.ld = std::max<std::int64_t>(c.a.ld, 2 * c.n + rng.range(0, 3));
  c.a.null = rng.chance(c.n == 0 ? 0.3 : 0.01);
  const bool device_engine = device_run && c.a.label == Memory::Device;
  c.options = random_solve_options(rng, device_engine, rng.chance(0.07), c.construct, c.options_text);
  c.progress = rng.chance(0.3);
  view_faults(c.a, "A", c.construct.must);
  if (c.a.rows != c.a.cols) c.construct.must.push_back({Kind::InvalidArgument, {"A", "square"}});
  if (!device_run && c.a.label == Memory::Device) c.construct.must.push_back({Kind::InvalidArgument, {"A", "device"}});
  layout.place(rng, c.a);
  const int solves = factorization_api ? int(rng.range(1, 4)) : 1;
  for (int s = 0; s < solves; ++s) {
    SolveRhs r;
    const std::int64_t k = pick_rhs(rng);
    r.b.rows = c.n;
    if (rng.chance(0.02)) r.b.rows = std::max<std::int64_t>(0, c.n + rng.pick<std::int64_t>({-1, 1, 2}));
    if (rng.chance(0.01)) r.b.rows = -1;
    r.b.cols = k;
    r.x.rows = r.b.rows, r.x.cols = k;
    if (rng.chance(0.02)) (rng.chance(0.5) ? r.x.rows : r.x.cols) += 1;
    if (rng.chance(0.005)) r.x.cols = -2;
    r.b.label = labels.b, r.x.label = labels.x;
    r.b.ld = pick_ld(rng, r.b.rows, 0.02, bad);
    r.x.ld = pick_ld(rng, r.x.rows, 0.02, bad);
    r.b.null = rng.chance(0.007);
    r.x.null = rng.chance(0.007);
    layout.place(rng, r.b);
    layout.place(rng, r.x);
    if (rng.chance(0.07) && c.n > 0) {
      r.alias = alias_x(rng, c.a, r.b, r.x, beside_possible && !c.a.null && r.b.rows == c.n);
      layout.cover(r.x);
    }
    r.zero_column_of_b = rng.chance(0.05);
    std::vector<Fault>& must = r.expected.must;
    view_faults(r.b, "B", must);
    view_faults(r.x, "X", must);
    if (r.b.rows != c.a.rows && r.b.rows >= 0) must.push_back({Kind::InvalidArgument, {"B", std::to_string(r.b.rows)}});
    if (r.x.rows != r.b.rows || r.x.cols != r.b.cols) must.push_back({Kind::InvalidArgument, {"X"}});
    if (r.b.label != c.a.label || r.x.label != c.a.label) must.push_back({Kind::InvalidArgument, {"memory"}});
    c.rhs.push_back(std::move(r));
  }
  return c;
}

// Checks one solve's report and X against A and B (the host image) and against what the options
// and SolveReport document.
inline void check_solve_report(FuzzRun& run, const SolveCase& c, const SolveRhs& r, const SolveReport& rep,
                               const Snapshot<double>& in, const Arena<double>& out, bool device_engine,
                               Precision factors_before, const std::vector<std::string>& phases) {
  const SolveOptions& o = c.options;
  const std::int64_t n = c.n, k = r.b.cols;
  const auto text = [](double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.3g", v);
    return std::string(s);
  };
  run.expect(std::int64_t(rep.converged_rhs.size()) == k,
             "converged_rhs has " + std::to_string(rep.converged_rhs.size()) + " entries for " + std::to_string(k) +
                 " right-hand sides");
  if (n == 0 || k == 0) {  // "a B with no columns or rows returns at once, converged"
    run.expect(rep.converged && rep.attempts.empty(), "an empty B did not return at once, converged");
    for (bool v : rep.converged_rhs) run.expect(v, "converged_rhs false for a B with no rows");
    return;
  }
  const std::vector<Precision> path = documented_path(o, n, device_engine);
  const auto in_path = [&](Precision p) { return std::find(path.begin(), path.end(), p) != path.end(); };
  int iterations = 0;
  bool cheaper_seen = false, fp64_after_cheaper = false, fp64_solved = false;
  for (std::size_t i = 0; i < rep.attempts.size(); ++i) {
    const Attempt& t = rep.attempts[i];
    const std::string at =
        "attempt " + std::to_string(i) + " (" + to_string(t.precision) + ", " + to_string(t.stop) + ")";
    iterations += t.iterations;
    run.expect(in_path(t.precision), at + ": precision not on the documented path");
    run.expect(t.iterations <= o.max_iterations,
               at + ": " + std::to_string(t.iterations) + " iterations > max_iterations");
    if (o.refinement == Refinement::None) run.expect(t.iterations == 0, at + ": refined under Refinement::None");
    if (o.refinement == Refinement::Auto)
      run.expect(t.refinement == Refinement::Classic || t.refinement == Refinement::Gmres, at + ": refinement auto");
    else
      run.expect(t.refinement == o.refinement,
                 at + ": refinement " + to_string(t.refinement) + " not the one asked for");
    const bool scalable =
        t.precision == Precision::FP16 || t.precision == Precision::BF16 || t.precision == Precision::Fp16x3;
    if (t.range_scaled) run.expect(o.range_scaling && scalable, at + ": range scaled where the options forbid it");
    if (t.precision != Precision::Ozaki)
      run.expect(t.emulated_bits == 0, at + ": emulated_bits for a non-Ozaki LU");
    else
      run.expect(t.emulated_bits == 0 || t.emulated_bits == o.ozaki_bits, at + ": emulated_bits not ozaki_bits");
    if (t.pivot_order != PivotOrder::Partial)
      run.expect(o.reuse_pivot_order && t.precision == Precision::FP64, at + ": reused a row order");
    run.expect((t.zero_pivot_column >= 0) == (t.stop == StopReason::ZeroPivot), at + ": zero_pivot_column");
    run.expect((t.collapsed_at_column >= 0) == (t.stop == StopReason::CollapsedPivots), at + ": collapsed_at_column");
    if (t.probe_estimate >= 0) run.expect(o.probe_pivot_ratio != 0, at + ": probed with probe_pivot_ratio 0");
    if (t.stop == StopReason::WeakFactors)
      run.expect(!(t.probe_estimate < kWeakFactorsProbe), at + ": WeakFactors below kWeakFactorsProbe");
    const bool fp64 = t.precision == Precision::FP64 || (t.precision == Precision::Ozaki && t.emulated_bits == 0);
    if (!fp64) cheaper_seen = true;
    const bool reached_refinement = t.stop != StopReason::ZeroPivot && t.stop != StopReason::Overflow &&
                                    t.stop != StopReason::WeakFactors && t.stop != StopReason::CollapsedPivots;
    if (t.precision == Precision::FP64 && cheaper_seen && reached_refinement) fp64_after_cheaper = true;
    if (fp64 && t.pivot_order != PivotOrder::Reused && reached_refinement) fp64_solved = true;
  }
  run.expect(rep.iterations == iterations, "report.iterations " + std::to_string(rep.iterations) +
                                               " is not the attempts' sum " + std::to_string(iterations));
  if (factors_before == Precision::Auto && fp64_after_cheaper)
    run.expect(rep.fell_back, "an FP64 attempt followed a cheaper one but fell_back is false");
  if (rep.fell_back) run.expect(cheaper_seen, "fell_back without a cheaper attempt");
  if (factors_before != Precision::Auto && !rep.attempts.empty()) {  // Factorization: the factors reused
    run.expect(rep.attempts[0].precision == factors_before, "a later solve did not start from the factors in use");
    run.expect(rep.attempts[0].factorization_seconds == 0, "a later solve's reused factors took factorization time");
  }
  for (const std::string& p : phases) {
    bool known = false;
    for (const char* prefix :
         {"factorization ", "fallback: factorization ", "probe of the ", "refinement ", "condition estimate"})
      known = known || p.rfind(prefix, 0) == 0;
    run.expect(known, "progress phase \"" + p + "\" is none of the documented ones");
  }
  if (rep.backward_error_history.empty()) {  // every factorization failed before a solve
    run.expect(
        rep.backward_error == INFINITY && !rep.converged,
        "no iterate, yet backward_error " + text(rep.backward_error) + " / converged " + std::to_string(rep.converged));
    for (const Attempt& t : rep.attempts)
      run.expect(t.stop != StopReason::Converged, "no iterate, yet an attempt converged");
    return;
  }
  run.expect(!rep.attempts.empty(), "iterates without an attempt");
  const long double norm_a = norm_inf_rows(in, c.a);
  const bool scaled = badly_scaled(in, c.a);
  long double worst = 0, worst_cw = 0, slack = 0, slack_cw = 0;
  bool all_converged = true;
  for (std::int64_t j = 0; j < k; ++j) {
    const ColumnCheck cc = check_column(in, out, c.a, r.b, r.x, j, norm_a);
    const std::string col = "column " + std::to_string(j);
    if (!cc.finite) {
      run.fail(col + " of X is not finite after a solve with iterates (not every element written?)");
      return;
    }
    if (cc.zero_b) {
      run.expect(cc.norm_x == 0, col + ": B's column is zero but X's is not");
      all_converged = all_converged && rep.converged_rhs[std::size_t(j)];
      continue;
    }
    // The LAPACK test on the true residual, up to an FP64 residual's rounding error: 4 sqrt(n + 1)
    // u (|A||x| + |b|) holds with overwhelming probability (Higham & Mary, "A new approach to
    // probabilistic rounding error analysis", 2019); gamma_{n+1} = (n + 2) u for the converse.
    const long double test = (long double)o.tolerance_factor * std::sqrt((long double)n) * cc.norm_x * norm_a * kU64;
    const long double probable = 4 * std::sqrt((long double)(n + 1)) * kU64 * cc.scale;
    const long double rigorous = (long double)(n + 2) * kU64 * cc.scale;
    if (rep.converged_rhs[std::size_t(j)] && test + probable > 0)
      run.observe("LAPACK test", double(cc.residual / (test + probable)));
    if (rep.converged_rhs[std::size_t(j)])
      run.expect(cc.residual <= test + probable, col + " reported converged, but ||r|| " + text(double(cc.residual)) +
                                                     " > the LAPACK test's " + text(double(test)));
    else
      run.expect(cc.residual >= 0.95L * test - rigorous, col + " reported not converged, but ||r|| " +
                                                             text(double(cc.residual)) + " meets the LAPACK test's " +
                                                             text(double(test)));
    all_converged = all_converged && rep.converged_rhs[std::size_t(j)];
    worst = std::max(worst, cc.normwise);
    worst_cw = std::max(worst_cw, cc.componentwise);
    const long double den = norm_a * cc.norm_x + cc.norm_b;
    if (den > 0) slack = std::max(slack, rigorous / den);
    slack_cw = (long double)(n + 2) * kU64;
  }
  run.expect(rep.converged == all_converged, "converged is not the and of converged_rhs");
  run.expect(std::fabs((long double)rep.backward_error - worst) <= 1e-3L * worst + slack + 1e-300L,
             "backward_error " + text(rep.backward_error) + " but X's is " + text(double(worst)));
  if (scaled)
    run.expect(std::fabs((long double)rep.componentwise_backward_error - worst_cw) <= 1e-3L * worst_cw + slack_cw,
               "componentwise_backward_error " + text(rep.componentwise_backward_error) + " but X's is " +
                   text(double(worst_cw)));
  else
    run.expect(rep.componentwise_backward_error == 0, "componentwise_backward_error computed for a well-scaled A");
  // An FP64 LU with partial pivoting that solved: X, the best iterate, is at least as good as its
  // first solve, whose backward error is at most gamma_{3n} || |L||U| || / ||A|| (Higham,
  // "Accuracy and Stability of Numerical Algorithms", Thm. 9.4); || |L||U| || / ||A|| stays below
  // ~20 for these families (partial pivoting's growth; Trefethen & Schreiber, "Average-case
  // stability of Gaussian elimination", 1990).
  if (fp64_solved && !scaled) run.observe("FP64 LU backward error", double(worst / (64.0L * (n + 1) * kU64)));
  if (fp64_solved && !scaled)
    run.expect(worst <= 64.0L * (n + 1) * kU64, "an FP64 LU solved, yet X's backward error is " + text(double(worst)));
  if (fp64_solved && scaled)  // judged componentwise: that one is at most the normwise one's bound after FP64 steps
    run.expect(std::min(worst, worst_cw) <= 64.0L * (n + 1) * kU64 || o.max_iterations == 0 ||
                   o.refinement == Refinement::None,
               "an FP64 LU solved a badly scaled A, yet X's backward errors are " + text(double(worst)) + " / " +
                   text(double(worst_cw)));
  // The condition estimate: never, always, or for a solve that did not converge; 0 where not
  // computed (or where the last factorization did not complete).
  const bool asked = o.condition_estimate == ConditionEstimate::Always ||
                     (o.condition_estimate == ConditionEstimate::WhenNotConverged && !rep.converged);
  if (!asked)
    run.expect(rep.condition_estimate == 0 && rep.forward_error_bound == 0, "a condition estimate nobody asked for");
  const StopReason last = rep.attempts.back().stop;
  const bool completed =
      last != StopReason::ZeroPivot && last != StopReason::Overflow && last != StopReason::CollapsedPivots;
  if (asked && completed)
    run.expect(rep.condition_estimate > 0 && std::isfinite(rep.condition_estimate) && rep.forward_error_bound >= 0,
               "condition estimate " + text(rep.condition_estimate) + " / bound " + text(rep.forward_error_bound) +
                   " where one was asked for");
  run.expect(rep.stop_test_backward_error > 0 || !(o.tolerance_factor > 0), "stop_test_backward_error not set");
}

inline void run_solve_case(FuzzRun& run, Context& ctx, bool device_run, bool factorization_api, std::int64_t index) {
  Rng rng(run.seed(index));
  Layout layout;
  layout.device_run = device_run;
  SolveCase c = make_solve_case(rng, device_run, factorization_api, layout);
  Arena<double> host(Memory::Host, layout.next[0] + 8);
  std::unique_ptr<Arena<double>> device;
  if (device_run) device = std::make_unique<Arena<double>>(Memory::Device, layout.next[1] + 8);
  const auto arena = [&](const ViewPlan& v) -> Arena<double>& { return layout.arena_of(v) ? *device : host; };
  // Values: A by its family, NaN / Inf where placed, B uniform (a zero column now and then); X
  // stays poisoned, so that an element the solve did not write shows.
  fill_family(rng, arena(c.a), c.a, c.family, &c.zero);
  const Positions a_bad = pick_positions(rng, c.a, 0.05);
  for (const auto& [i, j] : a_bad) arena(c.a).at(c.a.offset + std::size_t(i + j * c.a.ld)) = nonfinite(rng);
  nonfinite_faults(a_bad, "A", c.construct.must);
  for (SolveRhs& r : c.rhs) {
    if (r.b.has_elements() && !r.b.null)
      r.b.for_each([&](std::int64_t, std::int64_t j, std::size_t o) {
        arena(r.b).at(o) = r.zero_column_of_b && j == 0 ? 0.0 : rng.uniform(-1, 1);
      });
    const Positions b_bad = pick_positions(rng, r.b, 0.04);
    for (const auto& [i, j] : b_bad) arena(r.b).at(r.b.offset + std::size_t(i + j * r.b.ld)) = nonfinite(rng);
    nonfinite_faults(b_bad, "B", r.expected.must);
    // Factorization copies a host A: X may then lie in A's storage (solve() still refuses it).
    const bool a_read_in_place = !c.factorization || (device_run && c.a.label == Memory::Device);
    alias_faults(c.a, r.b, r.x, layout.arena_of(c.a) == layout.arena_of(r.x),
                 layout.arena_of(r.b) == layout.arena_of(r.x), a_read_in_place, r.expected);
  }
  // A singular A is refused by the FP64 LU (SingularMatrix naming the zero column), by the first
  // solve that factors; cheaper LUs' zero pivots escalate.
  const bool device_engine = device_run && c.a.label == Memory::Device;
  const bool singular = (c.family == SolveFamily::ZeroColumn || c.family == SolveFamily::ZeroRow) && c.n > 0;
  const std::vector<Precision> path = documented_path(c.options, c.n, device_engine);
  const bool fp64_path = std::find(path.begin(), path.end(), Precision::FP64) != path.end();
  const bool ozaki_path = std::find(path.begin(), path.end(), Precision::Ozaki) != path.end();
  const Fault singular_fault{Kind::SingularMatrix, {"column"}, c.family == SolveFamily::ZeroColumn ? c.zero : -1};
  bool factoring_seen = false;
  for (SolveRhs& r : c.rhs) {
    if (!singular || !c.construct.must.empty() || !r.expected.must.empty() || r.b.cols <= 0) continue;
    if (!factoring_seen && fp64_path)
      r.expected.must.push_back(singular_fault);
    else
      r.expected.may.push_back(singular_fault);  // Ozaki (an FP64 LU where nothing is emulated), or after
    factoring_seen = true;
  }
  host.upload();
  if (device) device->upload();
  const Snapshot<double> host_before(host);
  std::unique_ptr<Snapshot<double>> device_before;
  if (device) device_before = std::make_unique<Snapshot<double>>(*device);
  run.begin(index, c.text());
  const auto before_of = [&](const ViewPlan& v) -> const Snapshot<double>& {
    return layout.arena_of(v) ? *device_before : host_before;
  };

  std::vector<std::string> phases;
  SolveOptions options = c.options;
  if (c.progress) options.progress = [&phases](const std::string& p) { phases.push_back(p); };
  const auto view = [&](const ViewPlan& v) {
    return MatrixView<double>{v.null ? nullptr : arena(v).pointer(v.offset), v.rows, v.cols, v.ld, v.label};
  };
  const auto refresh = [&] {
    if (device) device->download();
  };
  std::string outcome;
  const auto note = [&](const Outcome& o) {  // the case's outcome: its first error, else a result
    if (o.kind != Kind::Result && (outcome.empty() || outcome == "result")) outcome = to_string(o.kind);
    if (outcome.empty()) outcome = "result";
  };
  if (!c.factorization) {
    SolveRhs& r = c.rhs[0];
    Expected e = c.construct;
    e.must.insert(e.must.end(), r.expected.must.begin(), r.expected.must.end());
    e.may.insert(e.may.end(), r.expected.may.begin(), r.expected.may.end());
    SolveReport rep;
    const Outcome o = capture([&] { rep = solve(ctx, view(c.a), view(r.b), view(r.x), options); });
    refresh();
    note(o);
    if (const std::string why = judge(o, e); !why.empty())
      run.fail(why);
    else if (o.kind == Kind::Result)
      check_solve_report(run, c, r, rep, before_of(c.a), arena(c.a), device_engine, Precision::Auto, phases);
  } else {
    std::unique_ptr<Factorization> f;
    const Outcome oc = capture([&] { f = std::make_unique<Factorization>(ctx, view(c.a), options); });
    note(oc);
    if (const std::string why = judge(oc, c.construct); !why.empty()) run.fail("constructor " + why);
    if (f) {
      run.expect(f->precision() == Precision::Auto, "precision() before the first solve is not auto");
      for (std::size_t s = 0; s < c.rhs.size(); ++s) {
        SolveRhs& r = c.rhs[s];
        const Precision before = f->precision();
        phases.clear();
        SolveReport rep;
        const Outcome o = capture([&] { rep = f->solve(view(r.b), view(r.x)); });
        refresh();
        note(o);
        if (const std::string why = judge(o, r.expected); !why.empty())
          run.fail("solve " + std::to_string(s) + " " + why);
        else if (o.kind == Kind::Result) {
          check_solve_report(run, c, r, rep, before_of(c.a), arena(c.a), device_engine, before, phases);
          const Precision now = f->precision();
          if (now != Precision::Auto) {
            bool tried = now == before;
            for (const Attempt& t : rep.attempts) tried = tried || t.precision == now;
            run.expect(tried, "precision() names factors no attempt made");
          }
        }
        if (c.move) {  // the factors and state move with the object
          auto moved = std::make_unique<Factorization>(std::move(*f));
          f = std::move(moved);
        }
      }
    }
  }
  // Inputs never modified: A and B hashed before and after; nothing outside X's elements written.
  for (Arena<double>* img : {&host, device.get()}) {
    if (img == nullptr) continue;
    const Snapshot<double>& before = img == &host ? host_before : *device_before;
    const int which = img == &host ? 0 : 1;
    Mask writable(img->size());
    for (const SolveRhs& r : c.rhs)
      if (layout.arena_of(r.x) == which) writable.add(r.x);
    const auto name_of = [&](std::size_t o) {
      const auto inside = [&](const ViewPlan& v) { return o >= v.offset && o < v.offset + v.storage(); };
      if (layout.arena_of(c.a) == which && inside(c.a))
        return std::string("in A's storage at ") + std::to_string(o - c.a.offset);
      for (const SolveRhs& r : c.rhs)
        if (layout.arena_of(r.b) == which && inside(r.b))
          return std::string("in B's storage at ") + std::to_string(o - r.b.offset);
      return "at arena offset " + std::to_string(o);
    };
    const std::string changed = before.changes(*img, writable, name_of);
    if (!changed.empty()) run.fail(changed);
    bool a_may_hold_x = false;  // Factorization copied a host A: X may lie in its storage
    for (const SolveRhs& r : c.rhs)
      a_may_hold_x = a_may_hold_x || (c.factorization && c.a.label == Memory::Host && layout.arena_of(r.x) == which &&
                                      ranges_overlap(r.x, c.a));
    if (layout.arena_of(c.a) == which && !a_may_hold_x &&
        before.hash_before(c.a) != Snapshot<double>::hash_now(*img, c.a))
      run.fail("A was modified (hash of its elements changed)");
    for (std::size_t s = 0; s < c.rhs.size(); ++s) {
      const SolveRhs& r = c.rhs[s];
      bool reused = false;  // a later solve's X may lie in an earlier solve's B
      for (std::size_t t = s + 1; t < c.rhs.size(); ++t)
        reused = reused || (layout.arena_of(c.rhs[t].x) == which && ranges_overlap(c.rhs[t].x, r.b));
      if (layout.arena_of(r.b) == which && !reused && before.hash_before(r.b) != Snapshot<double>::hash_now(*img, r.b))
        run.fail("B of solve " + std::to_string(s) + " was modified (hash of its elements changed)");
    }
  }
  run.end(outcome);
}

// ---- least_squares() ----------------------------------------------------------------------------

enum class LsFamily { Uniform, Graded, ScaledRows, Huge, Tiny, ZeroColumn, DuplicateColumn, NearlyDependent };

inline const char* to_string(LsFamily f) {
  switch (f) {
    case LsFamily::Uniform: return "uniform";
    case LsFamily::Graded: return "graded columns (cond 1e2..1e8)";
    case LsFamily::ScaledRows: return "rows scaled by 2^+-12";
    case LsFamily::Huge: return "uniform x 2^600";
    case LsFamily::Tiny: return "uniform x 2^-600";
    case LsFamily::ZeroColumn: return "zero column";
    case LsFamily::DuplicateColumn: return "duplicate column";
    case LsFamily::NearlyDependent: return "nearly dependent columns (1e-13)";
  }
  return "?";
}

struct LsCase {
  LsFamily family = LsFamily::Uniform;
  std::int64_t m = 0, n = 0, k = 0;
  double grading = 0;  // Graded: log10 of the condition number
  bool consistent = false;
  ViewPlan a, b, x;
  std::string alias = "none";
  LeastSquaresOptions options;
  Expected expected;
  std::string text() const {
    std::ostringstream t;
    t << "least_squares, " << to_string(family)
      << (family == LsFamily::Graded ? " 1e" + std::to_string(int(grading)) : "") << ", m " << m << " n " << n << " k "
      << k << (consistent ? " consistent" : "") << ", " << a.text("A") << ", " << b.text("B") << ", " << x.text("X")
      << ", alias " << alias << ", options {" << to_string(options.factorization) << ", iters "
      << options.max_iterations << ", fallback " << options.fallback << ", block " << options.block_size
      << ", update \"" << options.fp32_update << "\", vt_c \"" << options.fp32_vt_c_update << "\", refinement "
      << int(options.refinement) << ", cholesky_qr " << options.cholesky_qr << "}";
    return t.str();
  }
};

inline LsCase make_ls_case(Rng& rng, bool device_run, Layout& layout) {
  LsCase c;
  c.n = pick_order(rng, 80);
  c.m = c.n + rng.pick<std::int64_t>({0, 1, rng.range(2, 20), rng.range(2, 20), rng.range(21, device_run ? 300 : 160)});
  const bool underdetermined = c.n > 0 && rng.chance(0.02);
  if (underdetermined) c.m = c.n - rng.range(1, c.n);
  c.k = pick_rhs(rng);
  const double u = rng.uniform();
  c.family = u < 0.45   ? LsFamily::Uniform
             : u < 0.6  ? LsFamily::Graded
             : u < 0.67 ? LsFamily::ScaledRows
             : u < 0.71 ? LsFamily::Huge
             : u < 0.75 ? LsFamily::Tiny
             : u < 0.85 ? LsFamily::ZeroColumn
             : u < 0.94 ? LsFamily::DuplicateColumn
                        : LsFamily::NearlyDependent;
  if ((c.family == LsFamily::DuplicateColumn || c.family == LsFamily::NearlyDependent) && c.n < 2)
    c.family = LsFamily::Uniform;
  c.grading = double(rng.range(2, 8));
  c.consistent = rng.chance(0.3);
  const Labels labels = pick_labels(rng, device_run);
  bool bad = false;
  c.a = {c.m, c.n, pick_ld(rng, c.m, 0.02, bad), 0, rng.chance(c.m * c.n == 0 ? 0.3 : 0.007), labels.a};
  c.b = {c.m, c.k, 1, 0, rng.chance(0.007), labels.b};
  if (rng.chance(0.02)) c.b.rows = std::max<std::int64_t>(0, c.m + rng.pick<std::int64_t>({-1, 1}));
  c.b.ld = pick_ld(rng, c.b.rows, 0.015, bad);
  c.x = {c.n, c.k, 1, 0, rng.chance(0.007), labels.x};
  if (rng.chance(0.02)) (rng.chance(0.5) ? c.x.rows : c.x.cols) += 1;
  c.x.ld = pick_ld(rng, c.x.rows, 0.015, bad);
  layout.place(rng, c.a);
  layout.place(rng, c.b);
  layout.place(rng, c.x);
  if (c.n > 0 && c.m > 0 && rng.chance(0.05)) {
    c.alias = alias_x(rng, c.a, c.b, c.x, false);
    layout.cover(c.x);
  }
  // Options: valid ones, and now and then one out of its documented range.
  LeastSquaresOptions& o = c.options;
  o.factorization = rng.chance(0.7) ? Precision::FP32 : Precision::FP64;
  if (rng.chance(0.25)) o.max_iterations = rng.pick({1, 2, 5, 10, 100});
  o.fallback = rng.chance(0.75);
  if (rng.chance(0.3)) o.block_size = rng.pick({1, 2, 3, 8, 17, 64});
  o.refinement = rng.pick({LeastSquaresOptions::Refinement::Cgls, LeastSquaresOptions::Refinement::Cgls,
                           LeastSquaresOptions::Refinement::Augmented, LeastSquaresOptions::Refinement::Gmres,
                           LeastSquaresOptions::Refinement::AugmentedThenGmres});
  o.cholesky_qr = rng.chance(0.8);
  const bool device_a = device_run && c.a.label == Memory::Device;
  if (rng.chance(0.15))
    o.fp32_update =
        device_a ? rng.pick<std::string>({"cublas-sgemm", "tf32tf32", "halfhalf", "cublas-fp16x3"})
                 : rng.pick<std::string>({"host-fp32", "model-tf32tf32-rn", "model-halfhalf-rz", "model-fp16x3-rn"});
  if (rng.chance(0.1))  // ignored for host matrices, but it must name an FP32 backend (a device one for device A)
    o.fp32_vt_c_update = device_a ? rng.pick<std::string>({"cublas-sgemm", "tf32tf32"})
                                  : rng.pick<std::string>({"cublas-sgemm", "tf32tf32", "host-fp32"});
  std::vector<Fault>& must = c.expected.must;
  if (rng.chance(0.08)) {
    const auto s = [](auto v) { return std::to_string(v); };
    switch (int(rng.range(0, 5))) {
      case 0:
        o.factorization =
            rng.pick({Precision::FP16, Precision::TF32, Precision::Fp16x3, Precision::Auto, Precision::Ozaki});
        must.push_back({Kind::InvalidArgument, {"factorization"}});
        break;
      case 1:
        o.max_iterations = -int(rng.range(0, 3));
        must.push_back({Kind::InvalidArgument, {"max_iterations (" + s(o.max_iterations) + ")"}});
        break;
      case 2:
        o.block_size = -int(rng.range(1, 9));
        must.push_back({Kind::InvalidArgument, {"block_size (" + s(o.block_size) + ")"}});
        break;
      case 3:
        o.refinement = static_cast<LeastSquaresOptions::Refinement>(rng.pick({4, 7, -1}));
        must.push_back({Kind::InvalidArgument, {"refinement"}});
        break;
      case 4:
        o.fp32_update =
            rng.pick<std::string>({"host-fp64", "no-such-backend", device_a ? "host-fp32" : "cublas-sgemm"});
        must.push_back({Kind::InvalidArgument, {"fp32_update"}});
        break;
      default:
        o.fp32_vt_c_update = rng.pick<std::string>({"host-fp64", "no-such-backend", "cublas-dgemm"});
        must.push_back({Kind::InvalidArgument, {"fp32_vt_c_update"}});
        break;
    }
  }
  view_faults(c.a, "A", must);
  view_faults(c.b, "B", must);
  view_faults(c.x, "X", must);
  if (!device_run && (c.a.label == Memory::Device || c.b.label == Memory::Device || c.x.label == Memory::Device)) {
    if (c.a.label == Memory::Device && c.b.label == Memory::Device && c.x.label == Memory::Device)
      must.push_back({Kind::InvalidArgument, {"device"}});
  }
  if (c.b.label != c.a.label || c.x.label != c.a.label) must.push_back({Kind::InvalidArgument, {"memory"}});
  if (c.a.rows < c.a.cols && c.a.rows >= 0) must.push_back({Kind::InvalidArgument, {"A", "rows"}});
  if (c.b.rows != c.a.rows && c.b.rows >= 0) must.push_back({Kind::InvalidArgument, {"B", std::to_string(c.b.rows)}});
  if (c.x.rows != c.a.cols || c.x.cols != c.b.cols) must.push_back({Kind::InvalidArgument, {"X"}});
  return c;
}

// 2-norms in long double of the host image.
template <class Image>
long double frobenius(const Image& img, const ViewPlan& v) {
  long double s = 0;
  v.for_each([&](std::int64_t, std::int64_t, std::size_t o) { s += (long double)img.at(o) * img.at(o); });
  return std::sqrt(s);
}

inline void check_ls_report(FuzzRun& run, const LsCase& c, const LeastSquaresReport& rep, const Snapshot<double>& in,
                            const Arena<double>& out) {
  const LeastSquaresOptions& o = c.options;
  const std::int64_t m = c.m, n = c.n, k = c.k;
  const auto text = [](long double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.3Lg", v);
    return std::string(s);
  };
  run.expect(std::int64_t(rep.residual_norms.size()) == k,
             "residual_norms has " + std::to_string(rep.residual_norms.size()) + " entries for " + std::to_string(k));
  if (n == 0 || k == 0) {  // nothing to solve: converged, no attempts, residual_norms ||b_j||_2
    run.expect(rep.converged && rep.attempts.empty(), "an empty problem was not converged at once");
    for (std::int64_t j = 0; j < k && j < std::int64_t(rep.residual_norms.size()); ++j) {
      long double bb = 0;
      for (std::int64_t i = 0; i < m; ++i)
        bb += (long double)in.at(c.b.offset + i + j * c.b.ld) * in.at(c.b.offset + i + j * c.b.ld);
      const long double expected = std::sqrt(bb);
      run.expect(std::fabs(rep.residual_norms[std::size_t(j)] - expected) <= 1e-12L * expected,
                 "residual_norms[" + std::to_string(j) + "] is not ||b||_2 for an empty X");
    }
    return;
  }
  run.expect(!rep.attempts.empty(), "no attempt for a problem with unknowns");
  if (rep.attempts.empty()) return;
  for (std::size_t i = 0; i < rep.attempts.size(); ++i) {
    const LeastSquaresAttempt& t = rep.attempts[i];
    const std::string at =
        "attempt " + std::to_string(i) + " (" + to_string(t.precision) + ", " + to_string(t.stop) + ")";
    run.expect(t.precision == Precision::FP32 || t.precision == Precision::FP64, at + ": precision");
    if (o.factorization == Precision::FP64)
      run.expect(t.precision == Precision::FP64, at + ": FP32 factors where FP64 asked");
    if (!o.fallback) run.expect(t.precision == o.factorization, at + ": another precision without fallback");
    run.expect(t.iterations <= o.max_iterations, at + ": more steps than max_iterations");
    if (t.cholesky_qr)
      run.expect(o.cholesky_qr && t.precision == Precision::FP64 && t.update_backend.empty(), at + ": cholesky_qr");
    if (t.cgls)
      run.expect(o.refinement == LeastSquaresOptions::Refinement::Cgls && t.precision == Precision::FP32,
                 at + ": cgls");
    if (t.gmres)
      run.expect(o.refinement == LeastSquaresOptions::Refinement::Gmres ||
                     o.refinement == LeastSquaresOptions::Refinement::AugmentedThenGmres,
                 at + ": gmres");
    if (t.precision == Precision::FP32 && !t.gmres && !t.x_only && !c.options.fp32_update.empty() &&
        !(c.a.label == Memory::Device))
      run.expect(t.update_backend == o.fp32_update, at + ": update backend " + t.update_backend + " not fp32_update");
  }
  if (rep.fell_back)
    run.expect(rep.attempts.front().precision == Precision::FP32 && rep.attempts.back().precision == Precision::FP64,
               "fell_back, but FP64 factors did not follow FP32 ones");
  run.expect(!rep.path().empty(), "empty path()");
  const bool undecided = rep.attempts.back().stop == LeastSquaresStop::RankUndecided;
  if (undecided) {  // no solution to return: NaN
    run.expect(!rep.converged, "converged although the rank was undecided");
    bool all_nan = true;
    c.x.for_each([&](std::int64_t, std::int64_t, std::size_t q) { all_nan = all_nan && std::isnan(out.at(q)); });
    run.expect(all_nan, "X is not NaN after RankUndecided");
    return;
  }
  const long double norm_a = frobenius(in, c.a);
  bool finite = true;
  c.x.for_each([&](std::int64_t, std::int64_t, std::size_t q) { finite = finite && std::isfinite(out.at(q)); });
  if (rep.converged) run.expect(finite, "converged, but X is not finite");
  if (!finite) return;
  for (std::int64_t j = 0; j < k; ++j) {
    std::vector<long double> r(static_cast<std::size_t>(m));
    long double rr = 0, scale = 0, xx = 0, bb = 0;
    for (std::int64_t l = 0; l < n; ++l)
      xx += (long double)out.at(c.x.offset + l + j * c.x.ld) * out.at(c.x.offset + l + j * c.x.ld);
    for (std::int64_t i = 0; i < m; ++i) {
      const long double bi = in.at(c.b.offset + i + j * c.b.ld);
      long double ri = bi, si = std::fabs(bi);
      for (std::int64_t l = 0; l < n; ++l) {
        const long double p = (long double)in.at(c.a.offset + i + l * c.a.ld) * out.at(c.x.offset + l + j * c.x.ld);
        ri -= p;
        si += std::fabs(p);
      }
      r[std::size_t(i)] = ri;
      rr += ri * ri;
      scale += si * si;
      bb += bi * bi;
    }
    const long double norm_r = std::sqrt(rr), norm_x = std::sqrt(xx), norm_b = std::sqrt(bb);
    // residual_norms: ||b - A x||_2 of the returned x, computed in FP64: within gamma_{n+1} of
    // || |A||x| + |b| ||_2 of the true one.
    const long double reported = rep.residual_norms[std::size_t(j)];
    run.expect(std::fabs(reported - norm_r) <= 1e-12L * norm_r + (n + 2) * kU64 * std::sqrt(scale),
               "residual_norms[" + std::to_string(j) + "] " + text(reported) + " but ||b - A x|| is " + text(norm_r));
    if (!rep.converged) continue;
    // A least-squares solution: A^T r = 0. A backward stable one (Householder QR: Higham,
    // "Accuracy and Stability of Numerical Algorithms", Thm. 20.3) solves a problem within
    // gamma_{mn} of this one, so ||A^T r|| <= c (m + n) u ||A|| (||A|| ||x|| + ||r|| + ||b||) with
    // the rounding errors' random-sign growth (Higham & Mary 2019) in place of the worst case mn.
    long double atr = 0;
    for (std::int64_t l = 0; l < n; ++l) {
      long double s = 0;
      for (std::int64_t i = 0; i < m; ++i) s += (long double)in.at(c.a.offset + i + l * c.a.ld) * r[std::size_t(i)];
      atr += s * s;
    }
    atr = std::sqrt(atr);
    const long double bound = 16.0L * (m + n) * kU64 * norm_a * (norm_a * norm_x + norm_r + norm_b);
    if (bound > 0) run.observe("||A^T r||", double(atr / bound));
    run.expect(atr <= bound, "column " + std::to_string(j) + " reported converged, but ||A^T r|| " + text(atr) + " > " +
                                 text(bound) + " (not a least-squares solution)");
  }
}

inline void run_ls_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index) {
  Rng rng(run.seed(index));
  Layout layout;
  layout.device_run = device_run;
  LsCase c = make_ls_case(rng, device_run, layout);
  Arena<double> host(Memory::Host, layout.next[0] + 8);
  std::unique_ptr<Arena<double>> device;
  if (device_run) device = std::make_unique<Arena<double>>(Memory::Device, layout.next[1] + 8);
  const auto arena = [&](const ViewPlan& v) -> Arena<double>& { return layout.arena_of(v) ? *device : host; };
  // A by its family; B consistent (A x_true) or not.
  if (c.a.has_elements() && !c.a.null) {
    Arena<double>& img = arena(c.a);
    const std::int64_t zero = rng.range(0, c.n - 1), copy_to = rng.range(0, c.n - 1);
    std::int64_t copy_from = rng.range(0, c.n - 1);
    if (copy_from == copy_to) copy_from = (copy_to + 1) % std::max<std::int64_t>(1, c.n);
    std::vector<int> row_exp(static_cast<std::size_t>(c.m));
    for (int& e : row_exp) e = int(rng.range(-12, 12));
    for (std::int64_t j = 0; j < c.n; ++j)
      for (std::int64_t i = 0; i < c.m; ++i) {
        double v = rng.uniform(-1, 1);
        if (c.family == LsFamily::Graded)
          v *= std::pow(10.0, -c.grading * double(j) / double(std::max<std::int64_t>(1, c.n - 1)));
        if (c.family == LsFamily::ScaledRows) v = std::ldexp(v, row_exp[std::size_t(i)]);
        if (c.family == LsFamily::Huge) v = std::ldexp(v, 600);
        if (c.family == LsFamily::Tiny) v = std::ldexp(v, -600);
        if (c.family == LsFamily::ZeroColumn && j == zero) v = 0;
        img.at(c.a.offset + std::size_t(i + j * c.a.ld)) = v;
      }
    if (c.family == LsFamily::DuplicateColumn || c.family == LsFamily::NearlyDependent)
      for (std::int64_t i = 0; i < c.m; ++i)
        img.at(c.a.offset + std::size_t(i + copy_to * c.a.ld)) =
            img.at(c.a.offset + std::size_t(i + copy_from * c.a.ld)) *
            (c.family == LsFamily::NearlyDependent ? 1 + 1e-13 * rng.uniform(-1, 1) : 1.0);
  }
  if (c.b.has_elements() && !c.b.null) {
    Arena<double>& img = arena(c.b);
    const bool from_a = c.consistent && c.a.has_elements() && !c.a.null && c.b.rows == c.a.rows &&
                        layout.arena_of(c.a) == layout.arena_of(c.b);
    for (std::int64_t j = 0; j < c.k; ++j) {
      std::vector<double> xt(std::size_t(std::max<std::int64_t>(c.n, 0)));
      for (double& v : xt) v = rng.uniform(-1, 1);
      for (std::int64_t i = 0; i < c.b.rows; ++i) {
        double v = rng.uniform(-1, 1);
        if (from_a) {
          v = 0;
          for (std::int64_t l = 0; l < c.n; ++l)
            v += img.at(c.a.offset + std::size_t(i + l * c.a.ld)) * xt[std::size_t(l)];
        }
        img.at(c.b.offset + std::size_t(i + j * c.b.ld)) = v;
      }
    }
  }
  const Positions a_bad = pick_positions(rng, c.a, 0.035), b_bad = pick_positions(rng, c.b, 0.035);
  for (const auto& [i, j] : a_bad) arena(c.a).at(c.a.offset + std::size_t(i + j * c.a.ld)) = nonfinite(rng);
  for (const auto& [i, j] : b_bad) arena(c.b).at(c.b.offset + std::size_t(i + j * c.b.ld)) = nonfinite(rng);
  nonfinite_faults(a_bad, "A", c.expected.must);
  nonfinite_faults(b_bad, "B", c.expected.must);
  alias_faults(c.a, c.b, c.x, layout.arena_of(c.a) == layout.arena_of(c.x),
               layout.arena_of(c.b) == layout.arena_of(c.x), true, c.expected);
  // Exactly dependent columns: FP64 factors refuse the problem (RankDeficientMatrix); FP32 ones
  // alone leave it undecided (converged false, X NaN). Nearly dependent ones may be refused.
  const bool deficient = c.family == LsFamily::ZeroColumn || c.family == LsFamily::DuplicateColumn;
  const bool reaches_fp64 = c.options.fallback || c.options.factorization == Precision::FP64;
  if (c.expected.must.empty() && c.n > 0 && c.k > 0) {
    if (deficient && reaches_fp64) c.expected.must.push_back({Kind::RankDeficientMatrix, {"rank deficient"}});
    if (c.family == LsFamily::NearlyDependent)
      c.expected.may.push_back({Kind::RankDeficientMatrix, {"rank deficient"}});
  }
  host.upload();
  if (device) device->upload();
  const Snapshot<double> host_before(host);
  std::unique_ptr<Snapshot<double>> device_before;
  if (device) device_before = std::make_unique<Snapshot<double>>(*device);
  run.begin(index, c.text());
  const auto view = [&](const ViewPlan& v) {
    return MatrixView<double>{v.null ? nullptr : arena(v).pointer(v.offset), v.rows, v.cols, v.ld, v.label};
  };
  LeastSquaresReport rep;
  const Outcome o = capture([&] { rep = least_squares(ctx, view(c.a), view(c.b), view(c.x), c.options); });
  if (device) device->download();
  if (const std::string why = judge(o, c.expected); !why.empty()) {
    run.fail(why);
  } else if (o.kind == Kind::Result) {
    check_ls_report(run, c, rep, layout.arena_of(c.a) ? *device_before : host_before, arena(c.a));
    // Must converge: full rank, kappa <= 1e8, with FP64 factors to fall back on and steps enough.
    const bool well_posed = c.family != LsFamily::NearlyDependent && !deficient;
    if (well_posed && reaches_fp64 && c.options.max_iterations >= 10)
      run.expect(rep.converged, "a full-rank problem (kappa <= 1e8) with FP64 factors did not converge: " + rep.path());
  }
  for (Arena<double>* img : {&host, device.get()}) {
    if (img == nullptr) continue;
    const int which = img == &host ? 0 : 1;
    const Snapshot<double>& before = which == 0 ? host_before : *device_before;
    Mask writable(img->size());
    if (layout.arena_of(c.x) == which) writable.add(c.x);
    const std::string changed = before.changes(*img, writable, [&](std::size_t q) {
      return "at arena offset " + std::to_string(q) + " (A @" + std::to_string(c.a.offset) + ", B @" +
             std::to_string(c.b.offset) + ", X @" + std::to_string(c.x.offset) + ")";
    });
    if (!changed.empty()) run.fail(changed);
    if (layout.arena_of(c.a) == which && before.hash_before(c.a) != Snapshot<double>::hash_now(*img, c.a))
      run.fail("A was modified (hash of its elements changed)");
    if (layout.arena_of(c.b) == which && before.hash_before(c.b) != Snapshot<double>::hash_now(*img, c.b))
      run.fail("B was modified (hash of its elements changed)");
  }
  run.end(to_string(o.kind));
}

// ---- the GEMM backends --------------------------------------------------------------------------

// The emulated FP64 GEMMs, which refuse NaN and Inf (README: "the emulated DGEMMs (ozaki*)").
inline bool refuses_nonfinite(const std::string& name) {
  return name.rfind("ozaki", 0) == 0 || name.rfind("host-ozaki", 0) == 0;
}

// FP32 backends whose formats have a narrower range than FP32, which count the entries beyond it
// under check_range and throw RangeError (backend.hpp, GemmArgs::check_range), and the magnitude
// that overflows them.
inline double range_limit(const std::string& name) {
  if (name == "cublas-fp16" || name == "markidis" || name == "halfhalf-unscaled") return 1e6;
  if (name == "cublas-fp16x3") return 0x1p80;
  return 0;
}

// FP32 backends whose operands keep FP32's exponent range (FP32, TF32 and BF16 roundings) or are
// scaled by powers of two row by row and column by column (README: halfhalf, tf32tf32): rows and
// columns scaled by 2^+-40 keep their relative accuracy.
inline bool takes_any_fp32_scale(const std::string& name) {
  for (const char* n : {"host-fp32", "cublas-sgemm", "cublas-tf32", "cublas-bf16", "halfhalf", "tf32tf32",
                        "tf32tf32-packed", "halfhalf-mma-sync", "tf32tf32-mma-sync"})
    if (name == n) return true;
  return name.rfind("model-tf32", 0) == 0 || name.rfind("model-bf16-", 0) == 0;
}

// (input representation, accumulation) unit roundoffs of an FP32 backend; the bound of an inner
// product of length k is then 2 u_in + u_in^2 + (k + 2) u_acc (gemm_test_support.hpp's
// inner_product_bound). Host: test_host_backends.cpp's table; device: test_gpu_backends.cpp's
// (tensor cores accumulate with RZ: 2^-23).
inline std::pair<double, double> fp32_roundoffs(const std::string& name) {
  if (name == "host-fp32" || name == "cublas-sgemm") return {0, 0x1p-24};
  if (name.rfind("model-fp16-", 0) == 0 || name.rfind("model-tf32-", 0) == 0) return {0x1p-11, 0x1p-23};
  if (name == "cublas-tf32" || name == "cublas-fp16") return {0x1p-11, 0x1p-23};
  if (name.rfind("model-bf16-", 0) == 0 || name == "cublas-bf16") return {0x1p-8, 0x1p-23};
  // hi + lo keeps 22 bits (README: "~22 bits").
  if (name == "cublas-fp16x3" || name.rfind("model-fp16x3-", 0) == 0) return {0x1p-22, 0x1p-23};
  if (name == "slfp-32in24b") return {0x1p-16, 0x1p-24};
  if (name == "slfp-32in16b") return {0x1p-8, 0x1p-24};
  return {0x1p-23, 0x1p-23};  // halfhalf, tf32tf32, markidis: one bit of 24 lost by the split
}

// The error bound of entry (i, j) of an FP64 backend's product, from the quantities of its row of
// op(A) and column of op(B): mag = |alpha| sum |a||b| + |beta c|, the 2-norms and largest |entries|.
struct EntryScale {
  long double mag = 0, norm_a = 0, norm_b = 0, max_a = 0, max_b = 0, alpha = 0;
  long double sum_a = 0, sum_b = 0;  // sum_l |a_il|, sum_l |b_lj|
};

inline long double fp64_bound(const std::string& name, const gemm::Parameters& params, std::int64_t k,
                              const EntryScale& e) {
  const auto param = [&](const char* key, std::int64_t fallback) {
    const auto it = params.find(key);
    return it == params.end() ? fallback : it->second;
  };
  const long double u = kU64, kk = (long double)k;
  const long double dgemm = (kk + 4) * u * e.mag;  // (k + 2) u, and the roundings of alpha and beta
  // Ozaki scheme II: each row and column on a grid of 2^-bits of its 2-norm, so |error| <= 1.5
  // 2^-bits sqrt(k) ||a_i|| ||b_j|| (ozaki_int8.hpp), plus the CRT's and alpha/beta's roundings.
  const auto ozaki2 = [&](std::int64_t bits_param, std::int64_t moduli_param) {
    const int moduli =
        moduli_param > 0 ? int(moduli_param)
                         : gemm::ozaki2_moduli_for_bits(int(bits_param > 0 ? bits_param : gemm::kOzaki2DefaultBits), k);
    const int bits = gemm::ozaki2_operand_bits(moduli, k);
    return 2.0L * std::ldexp(1.0L, -bits) * std::sqrt(kk) * e.alpha * e.norm_a * e.norm_b + 4 * u * e.mag;
  };
  if (name == "host-fp64" || name == "cublas-dgemm") return dgemm;
  if (name.rfind("slfp-64in", 0) == 0) {  // operands rounded (RN) to the format first
    const int container = std::stoi(name.substr(9));
    const long double u_in = std::ldexp(1.0L, -(container - 11));
    return (2 * u_in + u_in * u_in) * e.mag + dgemm;
  }
  if (name == "host-ozaki2-int8" || name == "ozaki2-int8") return ozaki2(param("bits", 0), param("moduli", 0));
  if (name == "dgemm-auto") return std::max(dgemm, ozaki2(param("bits", 0), 0));
  if (name.find("ozaki-fp32") != std::string::npos) {
    // s splits of alpha = floor((24 - ceil(log2 k)) / 2) bits each leave a remainder below
    // 2^-((s - 1) alpha) of the vector's largest |entry| (ozaki_fp32.hpp); the products that carry
    // it are FP32 GEMMs with (k + 2) 2^-24 relative rounding, s + 1 of them.
    const int s = int(param("splits", gemm::kOzakiFp32MaxSplits));
    const int alpha_bits = (24 - int(std::ceil(std::log2(std::max(2.0L, kk))))) / 2;
    const long double split =
        (s + 1) * (kk + 2) * kk * std::ldexp(1.0L, -(24 + (s - 1) * alpha_bits)) * e.alpha * e.max_a * e.max_b +
        4 * dgemm;
    if (name == "ozaki-fp32") return split;
    // The corrected products (halfhalf, tf32tf32) are held to their own FP32 bound, each of the
    // s + 1 of them: on the GPU fuzz's inputs (k = 1, entries over many binades) they missed the
    // bound above, which assumes error-free slice products (H200, 2026-12-01; docs/ozaki.md), and
    // halfhalf keeps each slice in FP16, which loses entries far below its operand's largest.
    return split + (s + 1) * ((kk + 2) * 0x1p-23L * e.mag + kk * 0x1p-38L * e.alpha * e.max_a * e.max_b);
  }
  if (name.find("ozaki-bf16") != std::string::npos || name.find("ozaki-fp16") != std::string::npos) {
    // Slices of b bits each (ozaki_slices.hpp): after `count` of them the remainder is below
    // 2^(1 - count b) of the vector's largest |entry|; fast mode drops the pairs p + q >= d, whose
    // products are below k 2^(2 - d b) max|a| max|b| each, count + 1 of them at most per level.
    const int sig = name.find("bf16") != std::string::npos ? 8 : 11;
    const int bits = gemm::ozaki_slice_bits(sig, k);
    const std::int64_t asked = param("slices", 0), d = param("d", 0);
    const int count = asked > 0 ? int(asked) : std::min(gemm::kOzakiMaxSlices, (53 + bits - 1) / bits + 1);
    long double tail = 4 * std::ldexp(1.0L, 1 - count * bits);
    if (d > 0) tail += 4 * (count + 1) * std::ldexp(1.0L, int(2 - d * bits));
    return tail * kk * e.alpha * e.max_a * e.max_b + (count * count + 4) * dgemm;
  }
  if (name == "cublas-dgemm-emulated") {  // cuBLAS's own emulation: a grid of 2^-bits of the largest |entries|
    const std::int64_t bits = param("mantissa_bits", 0);
    const long double grid = std::ldexp(1.0L, -int(bits > 0 ? std::min<std::int64_t>(bits, 53) : 40));
    return 4 * kk * grid * e.alpha * e.max_a * e.max_b + 4 * dgemm;
  }
  return INFINITY;  // unknown backend: caught by the test's expectation on known names
}

template <class T>
struct GemmCase {
  const gemm::Backend* backend = nullptr;
  bool wrong_type = false;
  gemm::Op op_a = gemm::Op::N, op_b = gemm::Op::N;
  std::int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
  T alpha = 1, beta = 0;
  bool null_a = false, null_b = false, null_c = false, problem_form = false, check_range = true;
  bool host_pointers = false;  // a device backend given host memory (GPU runs)
  gemm::Parameters params;
  std::size_t a_offset = 0, b_offset = 0, c_offset = 0;
  std::int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;
  Expected expected;
  std::string text() const {
    std::ostringstream t;
    t << "gemm " << backend->name() << (wrong_type ? " (other data type)" : "") << " " << gemm::to_string(op_a)
      << gemm::to_string(op_b) << " m " << m << " n " << n << " k " << k << " lda " << lda << " ldb " << ldb << " ldc "
      << ldc << " alpha " << double(alpha) << " beta " << double(beta) << (null_a ? " A null" : "")
      << (null_b ? " B null" : "") << (null_c ? " C null" : "") << (problem_form ? " Problem form" : " GemmArgs")
      << (check_range ? "" : " no range check") << (host_pointers ? " host pointers" : "");
    for (const auto& [key, v] : params) t << " " << key << "=" << v;
    return t.str();
  }
};

inline std::int64_t pick_gemm_size(Rng& rng) {
  const double u = rng.uniform();
  if (u < 0.07) return 0;
  if (u < 0.17) return 1;
  if (u < 0.3) return rng.range(2, 4);
  if (u < 0.92) return rng.range(5, 40);
  if (u < 0.985) return rng.range(41, 130);
  return -rng.range(1, 3);
}

// Random parameters from the backend's specs: defaults, values in range, out of range, or a name
// it does not declare; the faults they make go to e.must.
inline gemm::Parameters random_parameters(Rng& rng, const gemm::Backend& b, Expected& e) {
  // (The ozaki2 backends' refusals of values inside the specs' ranges: ozaki2_refusals.)
  gemm::Parameters p;
  const std::vector<gemm::ParameterSpec> specs = b.parameters();
  const double u = rng.uniform();
  if (specs.empty() || u > 0.93) {
    if (rng.chance(specs.empty() ? 0.04 : 1.0)) {
      p["no-such-parameter"] = 1;
      e.must.push_back({Kind::NotSupported, {"'no-such-parameter'"}});
    }
    return p;
  }
  if (u < 0.45) return p;
  const gemm::ParameterSpec& spec = rng.pick(specs);
  if (u < 0.83) {
    // In range; the ozaki2 backends' moduli refuses 1 (one modulus keeps no bits).
    std::int64_t v = rng.range(spec.min, std::min(spec.max, spec.min + 24));
    if (spec.name == "panel") v = rng.pick<std::int64_t>({0, 16, 32, 48});
    if (spec.name == "mantissa_bits") v = rng.pick<std::int64_t>({0, 30, 53, 64});
    p[spec.name] = v;
    if ((b.name() == "ozaki2-int8" || b.name() == "host-ozaki2-int8") && rng.chance(0.1))
      p["moduli"] = rng.range(2, 20), p["bits"] = rng.range(1, 64);
    return p;
  }
  const std::int64_t v = rng.chance(0.5) ? spec.max + rng.range(1, 3) : spec.min - rng.range(1, 3);
  p[spec.name] = v;
  e.must.push_back({Kind::InvalidArgument, {spec.name + " (" + std::to_string(v) + ") outside"}});
  return p;
}

// ozaki2-int8's parameters that lie in their specs' ranges but are refused where a product is
// computed (README: refused by name): one modulus keeps no bits; moduli and bits both set.
inline void ozaki2_refusals(const std::string& name, const gemm::Parameters& p, Expected& e) {
  if (name != "ozaki2-int8" && name != "host-ozaki2-int8") return;
  const auto moduli = p.find("moduli"), bits = p.find("bits");
  if (moduli != p.end() && moduli->second == 1) e.must.push_back({Kind::InvalidArgument, {"moduli (1)"}});
  if (moduli != p.end() && bits != p.end() && moduli->second != 0 && bits->second != 0)
    e.must.push_back({Kind::InvalidArgument, {"both set"}});
}

// Entries of A and B: +-[1/64, 1] (inside every format's normal range), rows and columns scaled by
// 2^+-30 for FP64 backends (the emulations scale each vector) and 2^+-40 for the FP32 ones that
// take any FP32 exponent (takes_any_fp32_scale); a few exact zeros.
template <class T>
T gemm_value(Rng& rng, int exponent) {
  if (rng.chance(0.04)) return T(0);
  const double v = (rng.chance(0.5) ? -1 : 1) * rng.uniform(1.0 / 64, 1.0);
  return T(std::ldexp(v, exponent));
}

template <class T>
void run_gemm_case_typed(FuzzRun& run, Context& ctx, bool device_run, const gemm::Backend& backend, bool wrong_type,
                         Rng& rng, std::int64_t index) {
  using gemm::Op;
  GemmCase<T> c;
  c.backend = &backend;
  c.wrong_type = wrong_type;
  const std::string name = backend.name();
  const bool device_backend = backend.memory() == Memory::Device;
  c.op_a = rng.chance(0.5) ? Op::N : Op::T;
  c.op_b = rng.chance(0.5) ? Op::N : Op::T;
  c.m = pick_gemm_size(rng), c.n = pick_gemm_size(rng), c.k = pick_gemm_size(rng);
  c.alpha = T(rng.pick<double>({1, 1, -1, 0.5, -1.5, 0.0, rng.uniform(-2, 2), 0x1p-10}));
  c.beta = T(rng.chance(0.4) ? 0.0 : rng.pick<double>({1, -0.75, 0.5, rng.uniform(-2, 2)}));
  c.a_rows = c.op_a == Op::N ? c.m : c.k, c.a_cols = c.op_a == Op::N ? c.k : c.m;
  c.b_rows = c.op_b == Op::N ? c.k : c.n, c.b_cols = c.op_b == Op::N ? c.n : c.k;
  bool bad_a = false, bad_b = false, bad_c = false;
  c.lda = pick_ld(rng, c.a_rows, 0.03, bad_a);
  c.ldb = pick_ld(rng, c.b_rows, 0.03, bad_b);
  c.ldc = pick_ld(rng, c.m, 0.03, bad_c);
  c.null_a = rng.chance(0.03), c.null_b = rng.chance(0.03), c.null_c = rng.chance(0.02);
  c.problem_form = rng.chance(0.5);
  c.check_range = rng.chance(0.85);
  c.host_pointers = device_run && device_backend && rng.chance(0.05);
  if (c.problem_form) c.params = random_parameters(rng, backend, c.expected);
  // The documented refusals (backend.hpp's shared semantics, in any order).
  std::vector<Fault>& must = c.expected.must;
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  if (wrong_type) must.push_back({Kind::NotSupported, {name, "data"}});
  if (c.m < 0) must.push_back({Kind::InvalidArgument, {"m (" + s(c.m) + ") < 0"}});
  if (c.n < 0) must.push_back({Kind::InvalidArgument, {"n (" + s(c.n) + ") < 0"}});
  if (c.k < 0) must.push_back({Kind::InvalidArgument, {"k (" + s(c.k) + ") < 0"}});
  if (c.lda < std::max<std::int64_t>(1, c.a_rows)) must.push_back({Kind::InvalidArgument, {"lda (" + s(c.lda) + ")"}});
  if (c.ldb < std::max<std::int64_t>(1, c.b_rows)) must.push_back({Kind::InvalidArgument, {"ldb (" + s(c.ldb) + ")"}});
  if (c.ldc < std::max<std::int64_t>(1, c.m)) must.push_back({Kind::InvalidArgument, {"ldc (" + s(c.ldc) + ")"}});
  const std::string unavailable = backend.unavailable_reason(ctx);
  if (!unavailable.empty()) must.push_back({Kind::NotSupported, {unavailable}});
  const bool nonempty = c.m > 0 && c.n > 0;
  const bool reads = nonempty && c.k > 0 && c.alpha != T(0);
  if (nonempty && c.null_c) must.push_back({Kind::InvalidArgument, {"C is null"}});
  if (reads && c.null_a) must.push_back({Kind::InvalidArgument, {"A is null"}});
  if (reads && c.null_b) must.push_back({Kind::InvalidArgument, {"B is null"}});
  const bool well_formed = must.empty();  // parameters aside
  if (c.host_pointers && nonempty) must.push_back({Kind::InvalidArgument, {"device memory"}});

  // Layout: A, B, C in one arena of T, in device memory for device backends on a GPU.
  const auto storage = [](std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    return std::size_t(std::max<std::int64_t>({ld, rows, 1}) * std::max<std::int64_t>(cols, 1));
  };
  c.a_offset = std::size_t(rng.range(0, 3));
  c.b_offset = c.a_offset + storage(c.a_rows, c.a_cols, c.lda) + std::size_t(rng.range(0, 3));
  c.c_offset = c.b_offset + storage(c.b_rows, c.b_cols, c.ldb) + std::size_t(rng.range(0, 3));
  const std::size_t size = c.c_offset + storage(c.m, c.n, c.ldc) + 4;
  const Memory memory = device_run && device_backend && !c.host_pointers ? Memory::Device : Memory::Host;
  Arena<T> arena(memory, size);
  // Values. The rows of op(A) and columns of op(B) get their own binary scale for FP64 backends.
  const bool fp64 = std::is_same_v<T, double>;
  std::vector<int> a_exp(std::size_t(std::max<std::int64_t>(c.m, 0)) + 1, 0),
      b_exp(std::size_t(std::max<std::int64_t>(c.n, 0)) + 1, 0);
  if ((fp64 || takes_any_fp32_scale(name)) && rng.chance(0.5)) {
    const int spread = fp64 ? 30 : 40;
    for (int& e : a_exp) e = int(rng.range(-spread, spread));
    for (int& e : b_exp) e = int(rng.range(-spread, spread));
  }
  const ViewPlan av{c.a_rows, c.a_cols, c.lda, c.a_offset}, bv{c.b_rows, c.b_cols, c.ldb, c.b_offset},
      cv{c.m, c.n, c.ldc, c.c_offset};
  av.for_each([&](std::int64_t i, std::int64_t j, std::size_t o) {
    arena.at(o) = gemm_value<T>(rng, a_exp[std::size_t(c.op_a == Op::N ? i : j)]);
  });
  bv.for_each([&](std::int64_t i, std::int64_t j, std::size_t o) {
    arena.at(o) = gemm_value<T>(rng, b_exp[std::size_t(c.op_b == Op::N ? j : i)]);
  });
  // beta == 0: C stays poisoned (NaN), which must not reach the result.
  if (c.beta != T(0))
    cv.for_each([&](std::int64_t, std::int64_t, std::size_t o) { arena.at(o) = T(rng.uniform(-1, 1)); });
  // NaN / Inf in A or B (rows of op(A) / columns of op(B) they poison), and entries beyond a
  // narrow format's range.
  std::vector<char> bad_row(std::size_t(std::max<std::int64_t>(c.m, 0)) + 1, 0),
      bad_col(std::size_t(std::max<std::int64_t>(c.n, 0)) + 1, 0);
  bool any_nonfinite = false, any_huge = false;
  for (const auto& [v, is_a] : {std::pair<const ViewPlan*, bool>{&av, true}, {&bv, false}}) {
    for (const auto& [i, j] : pick_positions(rng, *v, refuses_nonfinite(name) ? 0.15 : 0.05)) {
      arena.at(v->offset + std::size_t(i + j * v->ld)) = T(nonfinite(rng));
      any_nonfinite = true;
      if (is_a)
        bad_row[std::size_t(c.op_a == Op::N ? i : j)] = 1;
      else
        bad_col[std::size_t(c.op_b == Op::N ? j : i)] = 1;
    }
    const double limit = range_limit(name);
    if (limit > 0 && v->has_elements() && rng.chance(0.08)) {
      const std::int64_t i = rng.range(0, v->rows - 1), j = rng.range(0, v->cols - 1);
      arena.at(v->offset + std::size_t(i + j * v->ld)) = T(2 * limit);
      any_huge = true;
      if (is_a)
        bad_row[std::size_t(c.op_a == Op::N ? i : j)] = 1;
      else
        bad_col[std::size_t(c.op_b == Op::N ? j : i)] = 1;
    }
  }
  if (well_formed && reads && !wrong_type) {
    ozaki2_refusals(name, c.params, c.expected);
    if (any_nonfinite && refuses_nonfinite(name)) must.push_back({Kind::RangeError, {"NaN or Inf"}});
    if (any_huge && c.check_range) must.push_back({Kind::RangeError, {"overflow"}});
  }
  arena.upload();
  const Snapshot<T> before(arena);
  run.begin(index, c.text());

  // The call, in the typed or the Problem form; can_implement first (it reads no data).
  const auto ptr = [&](bool null, std::size_t offset) { return null ? nullptr : arena.pointer(offset); };
  gemm::GemmArgs<T> args{c.op_a,
                         c.op_b,
                         c.m,
                         c.n,
                         c.k,
                         c.alpha,
                         ptr(c.null_a, c.a_offset),
                         c.lda,
                         ptr(c.null_b, c.b_offset),
                         c.ldb,
                         c.beta,
                         ptr(c.null_c, c.c_offset),
                         c.ldc,
                         c.check_range};
  const gemm::Problem problem = gemm::to_problem(args);
  const gemm::Execution execution{c.check_range};
  gemm::Support support;
  const Outcome asked = capture([&] {
    support =
        c.problem_form ? backend.can_implement(ctx, problem, c.params, execution) : backend.can_implement(ctx, args);
  });
  const std::size_t capacity_before = ctx.has_device() ? ctx.workspace_capacity() : 0;
  const Outcome o = capture([&] {
    if (c.problem_form)
      backend.run(ctx, problem, c.params, execution);
    else
      backend.run(ctx, args);
    if (ctx.has_device()) ctx.synchronize();
  });
  arena.download();
  if (asked.kind != Kind::Result)
    run.fail("can_implement threw " + std::string(to_string(asked.kind)) + ": " + asked.message);
  if (const std::string why = judge(o, c.expected); !why.empty()) run.fail(why);
  // can_implement answers what run() does: Ok where it accepts (a RangeError comes from the data,
  // and device backends' host pointers are checked by run() alone), else the same refusal.
  if (!support) {
    const Kind kind =
        support.status == gemm::Support::Status::InvalidArgument ? Kind::InvalidArgument : Kind::NotSupported;
    run.expect(
        o.kind == kind && o.message.find(support.reason) != std::string::npos,
        "can_implement refused (" + support.reason + ") but run() ended in " + to_string(o.kind) + ": " + o.message);
  } else if (!(c.host_pointers && nonempty)) {
    run.expect(o.kind == Kind::Result || o.kind == Kind::RangeError,
               "can_implement said Ok but run() threw " + std::string(to_string(o.kind)) + ": " + o.message);
  }
  if (!device_backend)
    run.expect(backend.workspace_bytes(gemm::GemmShape{c.op_a, c.op_b, c.m, c.n, c.k}) == 0,
               "a host backend states a device workspace");
  if (device_backend && ctx.has_device() && o.kind == Kind::Result && nonempty && c.k >= 0 && c.params.empty()) {
    // Scratch memory comes from ctx.workspace(), which grows (in 1 MiB steps) only to what the
    // call states it takes.
    const std::size_t stated = backend.workspace_bytes(gemm::GemmShape{c.op_a, c.op_b, c.m, c.n, c.k});
    const std::size_t mib = std::size_t(1) << 20, rounded = (stated + mib - 1) / mib * mib;
    run.expect(ctx.workspace_capacity() <= std::max(capacity_before, rounded),
               "the workspace grew to " + std::to_string(ctx.workspace_capacity()) + " bytes, beyond the " +
                   std::to_string(stated) + " workspace_bytes states");
  }
  // What was written: C's elements only, and only where m, n > 0.
  Mask writable(arena.size());
  if (o.kind == Kind::Result && nonempty) writable.add(cv);
  if (o.kind != Kind::Result) writable.add(cv);  // an error may leave C partly written (RangeError)
  const std::string changed = before.changes(arena, writable, [&](std::size_t q) {
    return std::string(q >= c.c_offset   ? "in C's storage (outside its m x n elements)"
                       : q >= c.b_offset ? "in B"
                                         : "in A") +
           " at offset " + std::to_string(q);
  });
  if (!changed.empty()) run.fail(changed);
  if (o.kind == Kind::Result && nonempty && !c.null_c) {
    // Check C against a long double evaluation of the product.
    const auto a_op = [&](std::int64_t i, std::int64_t l) -> long double {
      return before.at(c.a_offset + std::size_t(c.op_a == Op::N ? i + l * c.lda : l + i * c.lda));
    };
    const auto b_op = [&](std::int64_t l, std::int64_t j) -> long double {
      return before.at(c.b_offset + std::size_t(c.op_b == Op::N ? l + j * c.ldb : j + l * c.ldb));
    };
    std::string problem_text;
    for (std::int64_t j = 0; j < c.n && problem_text.empty(); ++j)
      for (std::int64_t i = 0; i < c.m && problem_text.empty(); ++i) {
        const T got = arena.at(c.c_offset + std::size_t(i + j * c.ldc));
        const T c0 = before.at(c.c_offset + std::size_t(i + j * c.ldc));
        const std::string at =
            "C(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(double(got));
        if (!reads) {  // k == 0 or alpha == 0: C = beta C, A and B unread
          const T expected = c.beta == T(0) ? T(0) : T(c.beta * c0);
          if (!(got == expected)) problem_text = at + ", not beta C = " + std::to_string(double(expected));
          continue;
        }
        if (bad_row[std::size_t(i)] || bad_col[std::size_t(j)]) {  // NaN / Inf reach the entries they touch
          if (std::isfinite(got)) problem_text = at + " is finite, but its row of op(A) or column of op(B) is not";
          continue;
        }
        EntryScale e;
        long double ref = 0;
        e.alpha = std::fabs((long double)c.alpha);
        for (std::int64_t l = 0; l < c.k; ++l) {
          const long double x = a_op(i, l), y = b_op(l, j);
          ref += x * y;
          e.mag += std::fabs(x * y);
          e.norm_a += x * x, e.norm_b += y * y;
          e.max_a = std::max(e.max_a, std::fabs(x)), e.max_b = std::max(e.max_b, std::fabs(y));
          e.sum_a += std::fabs(x), e.sum_b += std::fabs(y);
        }
        e.norm_a = std::sqrt(e.norm_a), e.norm_b = std::sqrt(e.norm_b);
        ref *= (long double)c.alpha;
        e.mag *= e.alpha;
        if (c.beta != T(0)) ref += (long double)c.beta * c0, e.mag += std::fabs((long double)c.beta * c0);
        long double bound;
        if (std::is_same_v<T, float>) {
          const auto [u_in, u_acc] = fp32_roundoffs(name);
          bound = (2 * u_in + u_in * u_in + (c.k + 2) * u_acc + 2 * 0x1p-24) * e.mag;
          // Markidis's split leaves lo unscaled: below 2^-3 it keeps an absolute 2^-25 only (README,
          // cublas-fp16x3), so |a - hi - lo| <= 2^-25 for these entries of magnitude <= 1.
          if (name.find("markidis") != std::string::npos || name.find("fp16x3") != std::string::npos)
            bound += 0x1p-24L * e.alpha * (e.sum_a + e.sum_b);
        } else {
          bound = fp64_bound(name, c.params, c.k, e);
        }
        if (!std::isfinite(got)) {
          problem_text = at + " is not finite (reference " + std::to_string(double(ref)) + ")";
          continue;
        }
        const long double err = std::fabs((long double)got - ref);
        if (err > bound)
          problem_text = at + ": error " + std::to_string(double(err)) + " > bound " + std::to_string(double(bound)) +
                         " (reference " + std::to_string(double(ref)) + ")";
        if (bound > 0)
          run.observe(std::is_same_v<T, float>                          ? "FP32 GEMM"
                      : refuses_nonfinite(name) || name == "dgemm-auto" ? "emulated FP64 GEMM"
                                                                        : "FP64 GEMM",
                      double(err / bound));
      }
    if (!problem_text.empty()) run.fail(problem_text);
  }
  run.end(to_string(o.kind));
}

// Backend::pack_b: a backend that packs no operands refuses by name; cublas-fp16x3 names each bad
// argument (backend.hpp) and, where it runs, packs without touching B.
inline void run_pack_case(FuzzRun& run, Context& ctx, bool device_run, const gemm::Backend& backend, Rng& rng,
                          std::int64_t index) {
  const std::int64_t k = pick_gemm_size(rng), n = pick_gemm_size(rng);
  bool bad = false;
  const std::int64_t ldb = pick_ld(rng, k, 0.05, bad);
  gemm::PackedB into;
  into.packer = rng.chance(0.92) ? &backend : &gemm::find_backend("host-fp64");
  into.block = rng.chance(0.05) ? rng.range(-1, 0) : rng.range(1, 64);
  into.first_block = rng.chance(0.05) ? -1 : rng.range(0, 2);
  into.abs_bound = rng.chance(0.06) ? rng.pick<double>({0.0, -1.0, double(NAN), double(INFINITY)}) : 1.0;
  const bool packs = backend.packed_b_column_bytes(1, 1) > 0;
  const std::int64_t least = packs && into.block > 0 && into.first_block >= 0 && k >= 0
                                 ? backend.packed_b_column_bytes(into.first_block * into.block + k, into.block)
                                 : 0;
  into.ld_bytes = rng.chance(0.05) && least > 0 ? least - 2 : least + 2 * rng.range(0, 8);
  const bool null_b = rng.chance(0.03), null_storage = rng.chance(0.03);
  Expected e;
  std::vector<Fault>& must = e.must;
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  if (!packs) {
    must.push_back({Kind::NotSupported, {"does not pack"}});
  } else {
    if (k < 0 || n < 0) must.push_back({Kind::InvalidArgument, {"must be >= 0"}});
    if (into.packer != &backend) must.push_back({Kind::InvalidArgument, {"the storage is for"}});
    if (into.block <= 0 || into.first_block < 0) must.push_back({Kind::InvalidArgument, {"block ("}});
    if (!(into.abs_bound > 0) || !std::isfinite(into.abs_bound)) must.push_back({Kind::InvalidArgument, {"abs_bound"}});
    if (k > 0 && n > 0) {
      if (ldb < k) must.push_back({Kind::InvalidArgument, {"ldb (" + s(ldb) + ")"}});
      if (null_b) must.push_back({Kind::InvalidArgument, {"b is null"}});
      if (null_storage) must.push_back({Kind::InvalidArgument, {"storage is null"}});
      if (into.ld_bytes < least) must.push_back({Kind::InvalidArgument, {"ld_bytes (" + s(into.ld_bytes) + ")"}});
      if (const std::string why = backend.unavailable_reason(ctx); !why.empty())
        must.push_back({Kind::NotSupported, {why}});
    }
  }
  const Memory memory = device_run && backend.memory() == Memory::Device ? Memory::Device : Memory::Host;
  const ViewPlan bv{k, n, ldb, 0};
  Arena<float> source(memory, bv.storage() + 4);
  bv.for_each([&](std::int64_t, std::int64_t, std::size_t o) { source.at(o) = gemm_value<float>(rng, 0); });
  Arena<std::uint8_t> storage(memory,
                              std::size_t(std::max<std::int64_t>(n, 1) * std::max<std::int64_t>(into.ld_bytes, 1)) +
                                  std::size_t(std::max<std::int64_t>(into.first_block, 0) + 1) * 256);
  into.data = null_storage ? nullptr : storage.pointer(0);
  source.upload();
  storage.upload();
  const Snapshot<float> before(source);
  std::ostringstream t;
  t << "pack_b " << backend.name() << " k " << k << " n " << n << " ldb " << ldb << " block " << into.block
    << " first_block " << into.first_block << " abs_bound " << into.abs_bound << " ld_bytes " << into.ld_bytes
    << (into.packer != &backend ? " other packer" : "") << (null_b ? " b null" : "")
    << (null_storage ? " storage null" : "");
  run.begin(index, t.str());
  const Outcome o = capture([&] {
    backend.pack_b(ctx, k, n,
                   gemm::Operand::dense(gemm::Format::F32, gemm::Op::N, null_b ? nullptr : source.pointer(0), ldb),
                   into);
    if (ctx.has_device()) ctx.synchronize();
  });
  source.download();
  if (const std::string why = judge(o, e); !why.empty()) run.fail(why);
  const std::string changed =
      before.changes(source, Mask(source.size()), [](std::size_t q) { return "B, at " + std::to_string(q); });
  if (!changed.empty()) run.fail("pack_b modified its operand: " + changed);
  run.end(to_string(o.kind));
}

// One GEMM case: a backend of the registry (mostly one that runs here), its data type or
// (rarely) the other one.
inline void run_gemm_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index) {
  Rng rng(run.seed(index));
  const std::vector<const gemm::Backend*>& all = gemm::all_backends();
  std::vector<const gemm::Backend*> here, elsewhere;
  for (const gemm::Backend* b : all) (b->unavailable_reason(ctx).empty() ? here : elsewhere).push_back(b);
  // GPU runs favour the device backends, host runs the host ones (the device ones are refused).
  std::vector<const gemm::Backend*> preferred;
  for (const gemm::Backend* b : here)
    if (!device_run || b->memory() == Memory::Device) preferred.push_back(b);
  const double u = rng.uniform();
  const gemm::Backend* backend =
      u < 0.85 || elsewhere.empty()
          ? (u < 0.7 || here.size() == preferred.size() ? rng.pick(preferred) : rng.pick(here))
          : rng.pick(elsewhere);
  if (rng.chance(0.04)) {  // pack_b: mostly the backend that packs
    const gemm::Backend* packer = nullptr;
    for (const gemm::Backend* b : all)
      if (b->packed_b_column_bytes(1, 1) > 0) packer = b;
    return run_pack_case(run, ctx, device_run, packer && rng.chance(0.7) ? *packer : *backend, rng, index);
  }
  const bool wrong_type = rng.chance(0.03);
  const bool fp64 = (backend->data_type() == gemm::DataType::F64) != wrong_type;
  if (fp64)
    run_gemm_case_typed<double>(run, ctx, device_run, *backend, wrong_type, rng, index);
  else
    run_gemm_case_typed<float>(run, ctx, device_run, *backend, wrong_type, rng, index);
}

// ---- the SLFP kernels ---------------------------------------------------------------------------

// The planes of a format as formats/slfp.hpp lays them out: FP64 / FP32 one array of doubles /
// floats; an SLFP format of c container bits a 32-bit plane where c >= 32, a 16-bit one where
// c mod 32 >= 16, an 8-bit one where c mod 16 == 8, the widest holding the most significant bits.
struct Planes {
  bool f64 = false, f32 = false, w32 = false, w16 = false, w8 = false;
};
inline Planes planes_of(slfp::Format f) {
  Planes p;
  if (int(f) < 0 || int(f) > int(slfp::Format::Slfp32in16)) return p;  // not a Format: no planes
  if (f == slfp::Format::Fp64)
    p.f64 = true;
  else if (f == slfp::Format::Fp32)
    p.f32 = true;
  else {
    const int c = slfp::container_bits(f);
    p.w32 = c >= 32, p.w16 = c % 32 >= 16, p.w8 = c % 16 == 8;
  }
  return p;
}

// The stored bits of the formats as documented: the top container_bits bits of the IEEE pattern of
// the base type.
struct FormatLayout {
  slfp::Format format = slfp::Format::Fp64;
  bool fp64 = true;
  int container = 64, value_bits = 64, exponent_bits = 11;
  explicit FormatLayout(slfp::Format f)
      : format(f),
        fp64(slfp::fp64_based(f)),
        container(slfp::container_bits(f)),
        value_bits(fp64 ? 64 : 32),
        exponent_bits(fp64 ? 11 : 8) {}
  int dropped() const { return value_bits - container; }
};

inline std::uint64_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}
inline std::uint64_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
template <class V>
V value_of(std::uint64_t bits) {
  V v;
  if constexpr (sizeof(V) == 8) {
    std::memcpy(&v, &bits, 8);
  } else {
    const std::uint32_t b = std::uint32_t(bits);
    std::memcpy(&v, &b, 4);
  }
  return v;
}

// v rounded to a format with the base type's exponent range and `container` bits (sign, exponent,
// container - 1 - exponent mantissa bits): to the nearest (ties to even) or toward zero, computed
// on the value with long double arithmetic (x / 2^e, nearbyint or trunc, times 2^e), not on its
// bit pattern; beyond the largest finite value RN gives Inf. NaN, Inf and zeros are returned as
// they are (NaN's stored bits: reference_bits).
template <class V>
V reference_round(V v, int container, bool nearest) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  constexpr bool kDouble = sizeof(V) == 8;
  const int exponent_bits = kDouble ? 11 : 8, emin = kDouble ? -1022 : -126;
  const int precision = container - exponent_bits;  // significant bits, the implicit one included
  const int e = std::max(std::ilogb(v), emin);
  const long double quantum = std::ldexp(1.0L, e - (precision - 1));
  long double t = (long double)v / quantum;  // exact: a power-of-two scaling
  t = nearest ? std::nearbyint(t) : std::trunc(t);
  return V(t * quantum);  // exact, or Inf past the largest finite value
}

// The stored (right-aligned) bits of v encoded with the rounding (formats/slfp.hpp): those of
// reference_round's value, and for NaN the pattern made quiet with its sign and kept payload.
template <class V>
std::uint64_t reference_bits(V v, const FormatLayout& l, bool nearest) {
  if (std::isnan(v)) {
    const std::uint64_t quiet = std::uint64_t(1) << (l.value_bits - 2 - l.exponent_bits);
    return (bits_of(v) | quiet) >> l.dropped();
  }
  return bits_of(reference_round(v, l.container, nearest)) >> l.dropped();
}

// A vector of one format in a byte arena: where each plane lies.
struct VectorPlan {
  slfp::Format format = slfp::Format::Fp64;
  std::int64_t size = 0;
  Memory label = Memory::Host;
  // Byte offsets of the planes in the arena; -1: null.
  std::int64_t f64 = -1, f32 = -1, w32 = -1, w16 = -1, w8 = -1;
};

struct ByteLayout {
  std::size_t next = 0;
  std::size_t take(std::size_t bytes) {
    next = (next + 15) / 16 * 16 + 16 * std::size_t(next % 3 == 0);  // 16-byte aligned, gaps
    const std::size_t at = next;
    next += std::max<std::size_t>(bytes, 1);
    return at;
  }
};

inline VectorPlan plan_vector(ByteLayout& layout, slfp::Format f, std::int64_t size, std::int64_t storage_size) {
  VectorPlan v;
  v.format = f, v.size = size;
  const Planes p = planes_of(f);
  const std::size_t n = std::size_t(std::max<std::int64_t>(storage_size, 0));
  if (p.f64) v.f64 = std::int64_t(layout.take(8 * n));
  if (p.f32) v.f32 = std::int64_t(layout.take(4 * n));
  if (p.w32) v.w32 = std::int64_t(layout.take(4 * n));
  if (p.w16) v.w16 = std::int64_t(layout.take(2 * n));
  if (p.w8) v.w8 = std::int64_t(layout.take(n));
  return v;
}

inline slfp::Vector make_vector(Arena<std::uint8_t>& arena, const VectorPlan& v) {
  slfp::Vector out;
  out.format = v.format, out.size = v.size, out.memory = v.label;
  const auto at = [&](std::int64_t o) -> void* { return o < 0 ? nullptr : arena.pointer(std::size_t(o)); };
  out.f64 = static_cast<double*>(at(v.f64));
  out.f32 = static_cast<float*>(at(v.f32));
  out.w32 = static_cast<std::uint32_t*>(at(v.w32));
  out.w16 = static_cast<std::uint16_t*>(at(v.w16));
  out.w8 = static_cast<std::uint8_t*>(at(v.w8));
  return out;
}

// Element i's stored bits (right-aligned) in the host image.
inline std::uint64_t stored_bits(const Arena<std::uint8_t>& img, const VectorPlan& v, std::int64_t i) {
  const auto word = [&](std::int64_t plane, int bytes) {
    std::uint64_t w = 0;
    for (int b = 0; b < bytes; ++b) w |= std::uint64_t(img.at(std::size_t(plane + i * bytes + b))) << (8 * b);
    return w;  // little-endian words (x86-64, the GPUs)
  };
  if (v.f64 >= 0) return word(v.f64, 8);
  if (v.f32 >= 0) return word(v.f32, 4);
  const int c = slfp::container_bits(v.format);
  int shift = c;
  std::uint64_t s = 0;
  if (v.w32 >= 0) shift -= 32, s |= word(v.w32, 4) << shift;
  if (v.w16 >= 0) shift -= 16, s |= word(v.w16, 2) << shift;
  if (v.w8 >= 0) s |= word(v.w8, 1);
  return s;
}
inline void set_stored_bits(Arena<std::uint8_t>& img, const VectorPlan& v, std::int64_t i, std::uint64_t s) {
  const auto put = [&](std::int64_t plane, int bytes, std::uint64_t w) {
    for (int b = 0; b < bytes; ++b) img.at(std::size_t(plane + i * bytes + b)) = std::uint8_t(w >> (8 * b));
  };
  if (v.f64 >= 0) return put(v.f64, 8, s);
  if (v.f32 >= 0) return put(v.f32, 4, s);
  const int c = slfp::container_bits(v.format);
  int shift = c;
  if (v.w32 >= 0) shift -= 32, put(v.w32, 4, s >> shift);
  if (v.w16 >= 0) shift -= 16, put(v.w16, 2, s >> shift);
  if (v.w8 >= 0) put(v.w8, 1, s);
}
// The value of stored bits s (decoding is exact: the bits are the top of the base pattern).
template <class V>
V decoded(std::uint64_t s, const FormatLayout& l) {
  return value_of<V>(s << l.dropped());
}

inline void mask_vector(Mask& m, const VectorPlan& v, std::int64_t count) {
  const Planes p = planes_of(v.format);
  const auto add = [&](std::int64_t plane, int bytes) {
    if (plane < 0) return;
    ViewPlan bytes_view{count * bytes, 1, std::max<std::int64_t>(1, count * bytes), std::size_t(plane)};
    m.add(bytes_view);
  };
  if (p.f64) add(v.f64, 8);
  if (p.f32) add(v.f32, 4);
  if (p.w32) add(v.w32, 4);
  if (p.w16) add(v.w16, 2);
  if (p.w8) add(v.w8, 1);
}

// Values that exercise a format's rounding: random exponents, ties, the largest finite values,
// subnormals, zeros of both signs, Inf and NaN with payloads.
template <class V>
V slfp_value(Rng& rng, const FormatLayout& l, bool specials) {
  constexpr bool kDouble = sizeof(V) == 8;
  const double u = rng.uniform();
  if (specials && u < 0.03)
    return value_of<V>(kDouble ? 0x7ff0000000000000ull | (rng.next() >> 13) | 1
                               : 0x7f800000ull | ((rng.next() >> 42) & 0x7fffff) | 1) *
           V(rng.chance(0.5) ? 1 : -1);
  if (specials && u < 0.05) return rng.chance(0.5) ? V(INFINITY) : V(-INFINITY);
  if (specials && u < 0.07) return rng.chance(0.5) ? V(0) : -V(0);
  if (specials && u < 0.1) return std::numeric_limits<V>::max() * V(rng.chance(0.5) ? 1 : -1);
  if (specials && u < 0.14) {  // a subnormal
    const std::uint64_t m = rng.next() >> (kDouble ? 12 : 41);
    return value_of<V>(m | (rng.chance(0.5) ? (kDouble ? 0x8000000000000000ull : 0x80000000ull) : 0));
  }
  if (specials && u < 0.24) {  // a tie: the dropped bits 100...0 (or next to it)
    std::uint64_t b = bits_of(V(std::ldexp(rng.uniform(1, 2), int(rng.range(-30, 30)))));
    const int d = l.dropped();
    if (d > 0)
      b = (b >> d << d) | (std::uint64_t(1) << (d - 1)) | std::uint64_t(rng.range(0, 1) == 0 ? 0 : rng.range(0, 1));
    return value_of<V>(b) * V(rng.chance(0.5) ? 1 : -1);
  }
  return V(std::ldexp(rng.uniform(-1, 1), int(rng.range(-40, 40))));
}

enum class SlfpOp { Encode, Decode, Axpy, Dot, Gemv, Gemm, Place, Subvector, Storage };

inline const char* to_string(SlfpOp o) {
  switch (o) {
    case SlfpOp::Encode: return "encode";
    case SlfpOp::Decode: return "decode";
    case SlfpOp::Axpy: return "axpy";
    case SlfpOp::Dot: return "dot";
    case SlfpOp::Gemv: return "gemv";
    case SlfpOp::Gemm: return "gemm";
    case SlfpOp::Place: return "place";
    case SlfpOp::Subvector: return "subvector";
    case SlfpOp::Storage: return "Storage";
  }
  return "?";
}

// One SLFP case: an operation, a format, sizes, planes placed in a byte arena (in device memory
// on GPU runs), values, and faults (a negative size, a null or misaligned plane, formats or sizes
// that differ, a base type that is not the array's, a vector labelled device on a host-only
// Context, host operands for gemm, an invalid Format value).
inline void run_slfp_case(FuzzRun& run, Context& ctx, bool device_run, std::int64_t index) {
  Rng rng(run.seed(index));
  const std::vector<slfp::Format>& formats = slfp::all_formats();
  const SlfpOp op =
      rng.pick({SlfpOp::Encode, SlfpOp::Encode, SlfpOp::Decode, SlfpOp::Axpy, SlfpOp::Axpy, SlfpOp::Dot, SlfpOp::Gemv,
                SlfpOp::Gemv, SlfpOp::Gemm, SlfpOp::Place, SlfpOp::Subvector, SlfpOp::Storage});
  slfp::Format format = rng.pick(formats);
  const FormatLayout l(format);
  const bool rn = rng.chance(0.5);
  const slfp::Rounding rounding = rn ? slfp::Rounding::NearestEven : slfp::Rounding::TowardZero;
  const Memory memory = device_run && rng.chance(0.85) ? Memory::Device : Memory::Host;
  Expected e;
  std::vector<Fault>& must = e.must;
  std::ostringstream t;
  t << to_string(op) << " " << slfp::to_string(format) << (rn ? " RN" : " RZ")
    << (memory == Memory::Device ? " device" : " host");
  const auto size_of = [&]() -> std::int64_t {
    const double u = rng.uniform();
    if (u < 0.06) return 0;
    if (u < 0.14) return 1;
    if (u < 0.8) return rng.range(2, 300);
    return rng.range(301, 3000);
  };
  ByteLayout bl;
  const bool bad_format = rng.chance(0.015);
  const slfp::Format invalid_format = static_cast<slfp::Format>(int(rng.range(10, 15)));
  if (op == SlfpOp::Storage || op == SlfpOp::Place || op == SlfpOp::Subvector) {
    // The allocation and placement helpers: sizes and alignment checked by name.
    const std::int64_t size = rng.chance(0.1) ? -rng.range(1, 5) : size_of();
    t << " size " << size;
    run.begin(index, t.str());
    Outcome o;
    if (op == SlfpOp::Storage) {
      if (size < 0) must.push_back({Kind::InvalidArgument, {"size (" + std::to_string(size) + ")"}});
      o = capture([&] {
        slfp::Storage st(format, size, memory);
        const slfp::Vector& v = st.view();
        const Planes p = planes_of(format);
        run.expect(v.format == format && v.size == size && v.memory == memory, "Storage's view is not what was asked");
        run.expect((v.f64 != nullptr) == p.f64 && (v.f32 != nullptr) == p.f32 && (v.w32 != nullptr) == p.w32 &&
                       (v.w16 != nullptr) == p.w16 && (v.w8 != nullptr) == p.w8,
                   "Storage's planes are not the format's");
        run.expect(st.bytes() == size * slfp::container_bits(format) / 8, "Storage::bytes()");
        slfp::Storage moved(std::move(st));
        run.expect(moved.view().size == size && st.view().size == 0, "a moved Storage");
      });
    } else if (op == SlfpOp::Place) {
      const std::size_t bytes = size >= 0 ? slfp::placed_bytes(format, size) : 0;
      const int shift = rng.chance(0.1) ? int(rng.range(1, 255)) : 0;
      const bool null = rng.chance(0.05) && size > 0;
      if (size < 0) must.push_back({Kind::InvalidArgument, {"size (" + std::to_string(size) + ")"}});
      if (null)
        must.push_back({Kind::InvalidArgument, {"null"}});
      else if (shift != 0)
        must.push_back({Kind::InvalidArgument, {"256-byte aligned"}});
      std::vector<unsigned char> buffer(bytes + 512);
      unsigned char* aligned =
          reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(buffer.data()) + 255) / 256 * 256);
      o = capture([&] {
        const slfp::Vector v = slfp::place(format, size, memory, null ? nullptr : aligned + shift);
        const Planes p = planes_of(format);
        std::vector<std::pair<std::uintptr_t, std::size_t>> spans;
        const auto plane = [&](const void* q, bool has, std::size_t word) {
          run.expect((q != nullptr) == has, "place: a plane the format does not have, or one missing");
          if (!q) return;
          const auto at = reinterpret_cast<std::uintptr_t>(q);
          run.expect(at % 256 == 0, "place: a plane not 256-byte aligned");
          run.expect(at >= reinterpret_cast<std::uintptr_t>(aligned) &&
                         at + std::size_t(size) * word <= reinterpret_cast<std::uintptr_t>(aligned) + bytes,
                     "place: a plane outside the placed_bytes of the buffer");
          for (const auto& [b, w] : spans)
            run.expect(at >= b + w || at + std::size_t(size) * word <= b, "place: planes overlap");
          spans.push_back({at, std::size_t(size) * word});
        };
        plane(v.f64, p.f64, 8), plane(v.f32, p.f32, 4), plane(v.w32, p.w32, 4), plane(v.w16, p.w16, 2),
            plane(v.w8, p.w8, 1);
      });
    } else {
      const std::int64_t whole = std::max<std::int64_t>(size, 0) + rng.range(0, 10);
      const std::int64_t offset = rng.range(-2, whole + 2), length = rng.range(-2, whole + 2);
      if (offset < 0 || length < 0 || offset + length > whole) must.push_back({Kind::InvalidArgument, {"subvector"}});
      std::vector<unsigned char> buffer(slfp::placed_bytes(format, whole) + 512);
      unsigned char* aligned =
          reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(buffer.data()) + 255) / 256 * 256);
      o = capture([&] {
        const slfp::Vector v = slfp::place(format, whole, Memory::Host, aligned);
        const slfp::Vector s = slfp::subvector(v, offset, length);
        run.expect(s.size == length && s.format == v.format, "subvector's size or format");
        const auto moved = [&](const void* a, const void* b, std::size_t word) {
          return (a == nullptr && b == nullptr) || (a && b &&
                                                    static_cast<const char*>(b) - static_cast<const char*>(a) ==
                                                        std::ptrdiff_t(offset * std::int64_t(word)));
        };
        run.expect(moved(v.f64, s.f64, 8) && moved(v.f32, s.f32, 4) && moved(v.w32, s.w32, 4) &&
                       moved(v.w16, s.w16, 2) && moved(v.w8, s.w8, 1),
                   "subvector's planes are not advanced by the offset");
      });
    }
    if (const std::string why = judge(o, e); !why.empty()) run.fail(why);
    run.end(to_string(o.kind));
    return;
  }

  // The kernels. Sizes, and the vectors' planes in one byte arena.
  std::int64_t n = size_of();
  const bool negative = rng.chance(0.02);
  VectorPlan x, y, am, bm;
  std::int64_t rows = 0, cols = 0, ld = 1, values = 0, b_rows = 0, b_cols = 0, b_ld = 1, b_values = 0, ldc = 1;
  slfp::Transpose op_a = slfp::Transpose::No, op_b = slfp::Transpose::No;
  std::int64_t x_offset = -1, y_offset = -1, c_offset = -1;  // FP64 / FP32 arrays of encode, decode, gemv, gemm
  std::int64_t gemm_n = 0;
  double alpha = rng.pick<double>({1, -1, 0.5, rng.uniform(-3, 3), 0, 0x1p-20});
  double beta = rng.chance(0.4) ? 0.0 : rng.pick<double>({1, -0.5, rng.uniform(-2, 2)});
  const std::size_t word = l.fp64 ? 8 : 4;
  bool alias = false;
  if (op == SlfpOp::Encode || op == SlfpOp::Decode || op == SlfpOp::Axpy || op == SlfpOp::Dot) {
    x = plan_vector(bl, format, negative ? -rng.range(1, 4) : n, n);
    y = plan_vector(bl, format, x.size, n);
    if (op == SlfpOp::Encode || op == SlfpOp::Decode)
      x_offset = std::int64_t(bl.take(8 * std::size_t(n)));  // either base type
    alias = (op == SlfpOp::Axpy || op == SlfpOp::Dot) && rng.chance(0.05);
    if (alias) y = x;
    if (negative) must.push_back({Kind::InvalidArgument, {"size (" + std::to_string(x.size) + ")"}});
    t << " n " << x.size << (alias ? " y = x" : "");
  } else {
    // gemv / gemm: A (and B) as Matrix of values, column-major with ld.
    rows = rng.chance(0.1) ? rng.range(0, 2) : rng.range(1, 120);
    cols = rng.chance(0.1) ? rng.range(0, 2) : rng.range(1, 120);
    bool bad = false;
    ld = pick_ld(rng, rows, 0.04, bad);
    if (negative) (rng.chance(0.5) ? rows : cols) = -rng.range(1, 3);
    values = rows > 0 && cols > 0 && ld >= rows ? (cols - 1) * ld + rows : 0;
    const bool short_values = values > 0 && rng.chance(0.04);
    am = plan_vector(bl, format,
                     short_values ? values - rng.range(1, std::min<std::int64_t>(values, 5)) : values + rng.range(0, 3),
                     values + 3);
    if (rows < 0 || cols < 0)
      must.push_back({Kind::InvalidArgument, {"must not be negative"}});
    else if (ld < std::max<std::int64_t>(1, rows))
      must.push_back({Kind::InvalidArgument, {".ld (" + std::to_string(ld) + ")"}});
    else if (short_values)
      must.push_back({Kind::InvalidArgument, {"values.size"}});
    t << " A " << rows << "x" << cols << " ld " << ld << " values " << am.size;
    if (op == SlfpOp::Gemv) {
      op_a = rng.chance(0.5) ? slfp::Transpose::No : slfp::Transpose::Yes;
      const std::int64_t xs = std::max<std::int64_t>(op_a == slfp::Transpose::No ? cols : rows, 0);
      const std::int64_t ys = std::max<std::int64_t>(op_a == slfp::Transpose::No ? rows : cols, 0);
      x_offset = std::int64_t(bl.take(8 * std::size_t(xs)));
      y_offset = std::int64_t(bl.take(8 * std::size_t(ys)));
      t << (op_a == slfp::Transpose::No ? " N" : " T");
    } else {
      op_a = rng.chance(0.5) ? slfp::Transpose::No : slfp::Transpose::Yes;
      op_b = rng.chance(0.5) ? slfp::Transpose::No : slfp::Transpose::Yes;
      const std::int64_t m = op_a == slfp::Transpose::No ? rows : cols, k = op_a == slfp::Transpose::No ? cols : rows;
      std::int64_t nn = rng.chance(0.1) ? 0 : rng.range(1, 120);
      gemm_n = nn;
      b_rows = op_b == slfp::Transpose::No ? k : nn, b_cols = op_b == slfp::Transpose::No ? nn : k;
      if (rng.chance(0.03)) b_rows += 1;  // inner sizes differ
      b_ld = pick_ld(rng, b_rows, 0.03, bad);
      b_values = b_rows > 0 && b_cols > 0 && b_ld >= b_rows ? (b_cols - 1) * b_ld + b_rows : 0;
      bm = plan_vector(bl, format, b_values, b_values);
      ldc = pick_ld(rng, m, 0.03, bad);
      c_offset =
          std::int64_t(bl.take(word * std::size_t(std::max<std::int64_t>(ldc, 1) * std::max<std::int64_t>(nn, 1))));
      const std::int64_t kb = op_b == slfp::Transpose::No ? b_rows : b_cols,
                         n_b = op_b == slfp::Transpose::No ? b_cols : b_rows;
      if (b_ld < std::max<std::int64_t>(1, b_rows)) must.push_back({Kind::InvalidArgument, {"b.ld ("}});
      if (kb != k && rows >= 0 && cols >= 0) must.push_back({Kind::InvalidArgument, {"inner sizes differ"}});
      if (ldc < std::max<std::int64_t>(1, m))
        must.push_back({Kind::InvalidArgument, {"ldc (" + std::to_string(ldc) + ")"}});
      t << " B " << b_rows << "x" << b_cols << " ld " << b_ld << " ldc " << ldc
        << (op_a == slfp::Transpose::No ? " N" : " T") << (op_b == slfp::Transpose::No ? "N" : "T");
      (void)n_b;
      if (must.empty() && m > 0 && n_b > 0 && memory == Memory::Host) must.push_back({Kind::NotSupported, {"device"}});
    }
  }
  // Faults in the planes: null, misaligned, a vector labelled device on a host-only Context.
  VectorPlan* faulty = op == SlfpOp::Gemv || op == SlfpOp::Gemm           ? &am
                       : op == SlfpOp::Encode                             ? &y
                       : op == SlfpOp::Decode || alias || rng.chance(0.5) ? &x
                                                                          : &y;
  const int fault = rng.chance(0.1) ? int(rng.range(0, 4)) : -1;
  const std::int64_t fsize = faulty->size;
  const Planes fp = planes_of(faulty->format);
  std::int64_t* plane = fp.f64   ? &faulty->f64
                        : fp.f32 ? &faulty->f32
                        : fp.w32 ? &faulty->w32
                        : fp.w16 ? &faulty->w16
                                 : &faulty->w8;
  const int plane_word = fp.f64 ? 8 : fp.f32 || fp.w32 ? 4 : fp.w16 ? 2 : 1;
  bool device_label = false;
  if (fault == 0 && fsize > 0) {
    *plane = -1;
    must.push_back({Kind::InvalidArgument, {"null"}});
  } else if (fault == 1 && fsize > 0 && plane_word > 1) {
    *plane += 1;
    must.push_back({Kind::InvalidArgument, {"aligned"}});
  } else if (fault == 2 && fsize > 0) {
    // A label that is not the pointer's: device on a host-only Context, or (GPU) the other space.
    device_label = true;
    must.push_back({Kind::InvalidArgument, {"memory"}});
  } else if (fault == 3 && (op == SlfpOp::Axpy || op == SlfpOp::Dot) && !alias) {
    slfp::Format other = rng.pick(formats);
    if (other != format) {
      y = plan_vector(bl, other, y.size, std::max<std::int64_t>(n, 0));
      must.push_back({Kind::InvalidArgument, {"one format"}});
    }
  } else if (fault == 4 && (op == SlfpOp::Axpy || op == SlfpOp::Dot) && !alias && x.size > 0) {
    y.size = x.size - 1;
    must.push_back({Kind::InvalidArgument, {"differs"}});
  }
  if (alias) y = x;
  // Encode / decode with an array of the other base type.
  const bool other_base = (op == SlfpOp::Encode || op == SlfpOp::Decode) && rng.chance(0.04);
  if (other_base) must.push_back({Kind::InvalidArgument, {"-based"}});
  if (bad_format) {
    (op == SlfpOp::Gemv || op == SlfpOp::Gemm ? am : x).format = invalid_format;
    if (op == SlfpOp::Gemm) bm.format = invalid_format;
    if (op != SlfpOp::Gemv && op != SlfpOp::Gemm) y.format = invalid_format;
    must.push_back({Kind::InvalidArgument, {"format"}});
  }
  const Memory other = memory == Memory::Device ? Memory::Host : Memory::Device;
  for (VectorPlan* v : {&x, &y, &am, &bm}) v->label = device_label && v == faulty ? other : memory;
  if (alias) y.label = x.label;
  // A device GEMM refuses host operands; on a GPU a host-labelled vector is host memory.
  Arena<std::uint8_t> arena(memory, bl.next + 64);
  // Values: x / y / A / B from the format's own values (their stored bits), arrays of the base type.
  const auto fill_vector = [&](const VectorPlan& v, std::int64_t count, bool specials) {
    if (count <= 0 || v.format != format) {
      if (count > 0 && int(v.format) < 10) {  // another valid format: its own values
        const FormatLayout lo(v.format);
        for (std::int64_t i = 0; i < count; ++i)
          set_stored_bits(arena, v, i,
                          lo.fp64 ? reference_bits(slfp_value<double>(rng, lo, false), lo, true)
                                  : reference_bits(slfp_value<float>(rng, lo, false), lo, true));
      }
      return;
    }
    for (std::int64_t i = 0; i < count; ++i)
      set_stored_bits(arena, v, i,
                      l.fp64 ? reference_bits(slfp_value<double>(rng, l, specials), l, true)
                             : reference_bits(slfp_value<float>(rng, l, specials), l, true));
  };
  const auto fill_array = [&](std::int64_t offset, std::int64_t count, bool as_double, bool specials) {
    for (std::int64_t i = 0; offset >= 0 && i < count; ++i) {
      const std::uint64_t b =
          as_double ? bits_of(slfp_value<double>(rng, l, specials)) : bits_of(slfp_value<float>(rng, l, specials));
      for (std::size_t q = 0; q < (as_double ? 8u : 4u); ++q)
        arena.at(std::size_t(offset) + std::size_t(i) * (as_double ? 8 : 4) + q) = std::uint8_t(b >> (8 * q));
    }
  };
  const std::int64_t count = std::max<std::int64_t>(n, 0);
  const bool array_double = l.fp64 != other_base;
  switch (op) {
    case SlfpOp::Encode: fill_array(x_offset, count, array_double, true); break;
    case SlfpOp::Decode:
      for (std::int64_t i = 0; i < count && x.format == format; ++i)  // raw bit patterns
        set_stored_bits(arena, x, i, rng.next() >> (64 - l.container));
      break;
    case SlfpOp::Axpy:
    case SlfpOp::Dot:
      fill_vector(x, count, op == SlfpOp::Axpy);
      if (!alias) fill_vector(y, count, op == SlfpOp::Axpy);
      break;
    case SlfpOp::Gemv: {
      fill_vector(am, am.size, false);
      const std::int64_t xs = std::max<std::int64_t>(op_a == slfp::Transpose::No ? cols : rows, 0);
      const std::int64_t ys = std::max<std::int64_t>(op_a == slfp::Transpose::No ? rows : cols, 0);
      fill_array(x_offset, xs, true, false);
      if (beta != 0) fill_array(y_offset, ys, true, false);  // beta == 0: y stays poisoned, unread
      break;
    }
    default:
      fill_vector(am, am.size, false);
      fill_vector(bm, bm.size, false);
      if (beta != 0)
        fill_array(c_offset, std::max<std::int64_t>(ldc, 1) * std::max<std::int64_t>(gemm_n, 1), l.fp64, false);
      break;
  }
  arena.upload();
  const Snapshot<std::uint8_t> before(arena);
  run.begin(index, t.str());
  slfp::Vector xv = make_vector(arena, x), yv = make_vector(arena, y);
  const auto array = [&](std::int64_t o) -> void* { return o < 0 ? nullptr : arena.pointer(std::size_t(o)); };
  double dot_result = 0;
  Mask writable(arena.size());
  const Outcome o = capture([&] {
    switch (op) {
      case SlfpOp::Encode:
        if (array_double)
          slfp::encode(ctx, static_cast<const double*>(array(x_offset)), yv, rounding);
        else
          slfp::encode(ctx, static_cast<const float*>(array(x_offset)), yv, rounding);
        break;
      case SlfpOp::Decode:
        if (array_double)
          slfp::decode(ctx, xv, static_cast<double*>(array(x_offset)));
        else
          slfp::decode(ctx, xv, static_cast<float*>(array(x_offset)));
        break;
      case SlfpOp::Axpy: slfp::axpy(ctx, alpha, xv, yv, rounding); break;
      case SlfpOp::Dot: dot_result = slfp::dot(ctx, xv, yv); break;
      case SlfpOp::Gemv:
        slfp::gemv(ctx, op_a, alpha, slfp::Matrix{make_vector(arena, am), rows, cols, ld},
                   static_cast<const double*>(array(x_offset)), beta, static_cast<double*>(array(y_offset)));
        break;
      default: {
        const slfp::Matrix a{make_vector(arena, am), rows, cols, ld}, b{make_vector(arena, bm), b_rows, b_cols, b_ld};
        if (l.fp64)
          slfp::gemm(ctx, op_a, op_b, alpha, a, b, beta, static_cast<double*>(array(c_offset)), ldc);
        else
          slfp::gemm(ctx, op_a, op_b, float(alpha), a, b, float(beta), static_cast<float*>(array(c_offset)), ldc);
      }
    }
    if (ctx.has_device()) ctx.synchronize();
  });
  arena.download();
  if (const std::string why = judge(o, e); !why.empty()) run.fail(why);
  const auto array_value = [&](const auto& img, std::int64_t offset, std::int64_t i, bool as_double) -> double {
    std::uint64_t b = 0;
    for (std::size_t q = 0; q < (as_double ? 8u : 4u); ++q)
      b |= std::uint64_t(img.at(std::size_t(offset) + std::size_t(i) * (as_double ? 8 : 4) + q)) << (8 * q);
    return as_double ? value_of<double>(b) : double(value_of<float>(b));
  };
  // Reading the inputs as given: the snapshot's bytes.
  const auto before_bits = [&](const VectorPlan& v, std::int64_t i) {
    std::uint64_t s = 0;
    const auto word = [&](std::int64_t p, int bytes) {
      std::uint64_t w = 0;
      for (int q = 0; q < bytes; ++q) w |= std::uint64_t(before.at(std::size_t(p + i * bytes + q))) << (8 * q);
      return w;
    };
    if (v.f64 >= 0) return word(v.f64, 8);
    if (v.f32 >= 0) return word(v.f32, 4);
    int shift = l.container;
    if (v.w32 >= 0) shift -= 32, s |= word(v.w32, 4) << shift;
    if (v.w16 >= 0) shift -= 16, s |= word(v.w16, 2) << shift;
    if (v.w8 >= 0) s |= word(v.w8, 1);
    return s;
  };
  const auto value_in = [&](const VectorPlan& v, std::int64_t i) -> long double {
    return l.fp64 ? (long double)decoded<double>(before_bits(v, i), l)
                  : (long double)decoded<float>(before_bits(v, i), l);
  };
  std::string wrong;
  if (o.kind == Kind::Result) {
    const std::int64_t size = x.size;
    switch (op) {
      case SlfpOp::Encode:  // y's stored bits: the reference rounding of x, bit for bit
        mask_vector(writable, y, size);
        for (std::int64_t i = 0; i < size && wrong.empty(); ++i) {
          const double v = array_value(before, x_offset, i, l.fp64);
          const std::uint64_t expected = l.fp64 ? reference_bits(v, l, rn) : reference_bits(float(v), l, rn);
          const std::uint64_t got = stored_bits(arena, y, i);
          // FP64 / FP32 storage is a copy (a NaN stays NaN; whether a signalling one is quieted is
          // the copy's business).
          const bool ieee = format == slfp::Format::Fp64 || format == slfp::Format::Fp32;
          if (ieee && std::isnan(v) &&
              (l.fp64 ? std::isnan(decoded<double>(got, l)) : std::isnan(decoded<float>(got, l))))
            continue;
          if (got != expected)
            wrong = "element " + std::to_string(i) + " of " + std::to_string(v) + " encoded as bits " +
                    std::to_string(got) + ", expected " + std::to_string(expected);
        }
        break;
      case SlfpOp::Decode:  // exact
        writable.add(ViewPlan{std::int64_t(word) * size, 1, std::max<std::int64_t>(1, std::int64_t(word) * size),
                              std::size_t(x_offset)});
        for (std::int64_t i = 0; i < size && wrong.empty(); ++i) {
          const double got = array_value(arena, x_offset, i, l.fp64);
          const std::uint64_t s = before_bits(x, i);
          const bool same = l.fp64 ? bits_of(got) == bits_of(decoded<double>(s, l))
                                   : bits_of(float(got)) == bits_of(decoded<float>(s, l));
          if (!same && !(std::isnan(got))) wrong = "element " + std::to_string(i) + " decoded inexactly";
        }
        break;
      case SlfpOp::Axpy:  // y := round(fma(alpha, x, y)) in the base type, bit for bit
        mask_vector(writable, y, size);
        for (std::int64_t i = 0; i < size && wrong.empty(); ++i) {
          std::uint64_t expected;
          if (l.fp64) {
            const double r = std::fma(alpha, double(value_in(x, i)), double(value_in(y, i)));
            expected = reference_bits(r, l, rn);
          } else {
            const float r = std::fma(float(alpha), float(value_in(x, i)), float(value_in(y, i)));
            expected = reference_bits(r, l, rn);
          }
          const std::uint64_t got = stored_bits(arena, y, i);
          const bool nan_both =
              (l.fp64 ? std::isnan(decoded<double>(got, l)) && std::isnan(decoded<double>(expected, l))
                      : std::isnan(decoded<float>(got, l)) && std::isnan(decoded<float>(expected, l)));
          if (got != expected && !nan_both)
            wrong = "axpy element " + std::to_string(i) + ": bits " + std::to_string(got) + ", expected " +
                    std::to_string(expected);
        }
        break;
      case SlfpOp::Dot: {  // an FP64 sum of exact products: within gamma_n of the exact dot
        long double exact = 0, magnitude = 0;
        bool finite = true;
        for (std::int64_t i = 0; i < size; ++i) {
          const long double p = value_in(x, i) * value_in(y, i);
          finite = finite && std::isfinite(p);
          exact += p, magnitude += std::fabs(p);
        }
        if (!finite) {
          if (std::isfinite(dot_result)) wrong = "dot of non-finite values is finite";
        } else if (!(std::fabs(dot_result - exact) <= (size + 1) * kU64 * magnitude + 1e-300L)) {
          wrong = "dot " + std::to_string(dot_result) + " differs from the exact " + std::to_string(double(exact)) +
                  " beyond gamma_n";
        }
        break;
      }
      case SlfpOp::Gemv: {  // FP64 sums of widened values: within gamma_{cols+2}
        const bool no = op_a == slfp::Transpose::No;
        const std::int64_t ys = no ? rows : cols, xs = no ? cols : rows;
        writable.add(
            ViewPlan{8 * ys, 1, std::max<std::int64_t>(1, 8 * ys), std::size_t(std::max<std::int64_t>(y_offset, 0))});
        for (std::int64_t i = 0; i < ys && wrong.empty(); ++i) {
          long double ref = 0, mag = 0;
          for (std::int64_t j = 0; j < xs; ++j) {
            const std::int64_t idx = no ? i + j * ld : j + i * ld;
            const long double p = value_in(am, idx) * array_value(before, x_offset, j, true);
            ref += p, mag += std::fabs(p);
          }
          ref *= alpha, mag *= std::fabs(alpha);
          if (beta != 0) {
            const long double y0 = array_value(before, y_offset, i, true);
            ref += beta * y0, mag += std::fabs(beta * y0);
          }
          const double got = array_value(arena, y_offset, i, true);
          if (!(std::fabs(got - ref) <= (xs + 3) * kU64 * mag + 1e-300L))
            wrong = "gemv y[" + std::to_string(i) + "] = " + std::to_string(got) + ", reference " +
                    std::to_string(double(ref));
        }
        break;
      }
      case SlfpOp::Gemm: {  // the base type's GEMM of the stored values
        const std::int64_t m = op_a == slfp::Transpose::No ? rows : cols, k = op_a == slfp::Transpose::No ? cols : rows;
        const std::int64_t nn = op_b == slfp::Transpose::No ? b_cols : b_rows;
        const double u = l.fp64 ? kU64 : 0x1p-24;
        if (m > 0 && nn > 0)
          writable.add(ViewPlan{std::int64_t(word) * m, nn, std::int64_t(word) * ldc, std::size_t(c_offset)});
        for (std::int64_t j = 0; j < nn && wrong.empty(); ++j)
          for (std::int64_t i = 0; i < m && wrong.empty(); ++i) {
            long double ref = 0, mag = 0;
            for (std::int64_t p = 0; p < k; ++p) {
              const long double av = value_in(am, op_a == slfp::Transpose::No ? i + p * ld : p + i * ld);
              const long double bv = value_in(bm, op_b == slfp::Transpose::No ? p + j * b_ld : j + p * b_ld);
              ref += av * bv, mag += std::fabs(av * bv);
            }
            const long double a_t = l.fp64 ? alpha : float(alpha), b_t = l.fp64 ? beta : float(beta);
            ref *= a_t, mag *= std::fabs(a_t);
            if (beta != 0) {
              const long double c0 = array_value(before, c_offset, i + j * ldc, l.fp64);
              ref += b_t * c0, mag += std::fabs(b_t * c0);
            }
            const double got = array_value(arena, c_offset, i + j * ldc, l.fp64);
            if (!(std::fabs(got - ref) <= (k + 4) * u * mag + 1e-300L))
              wrong = "gemm C(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(got) +
                      ", reference " + std::to_string(double(ref));
          }
        break;
      }
      default: break;
    }
  }
  if (!wrong.empty()) run.fail(wrong);
  if (o.kind != Kind::Result) {  // an error writes nothing the call could have written? it may: allow the outputs
    mask_vector(writable, y, std::max<std::int64_t>(x.size, 0));
  }
  const std::string changed =
      before.changes(arena, writable, [&](std::size_t q) { return "byte " + std::to_string(q); });
  if (!changed.empty()) run.fail(changed);
  run.end(to_string(o.kind));
}

}  // namespace mixsolve::fuzz
