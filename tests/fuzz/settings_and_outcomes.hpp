// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' settings (seeds, case counts), how a call ended (Outcome) against what the
// documentation allows (Expected), and one test's bookkeeping (Tally, FuzzRun).
//
// Every case ends in a result checked against a reference that does not depend on the machine
// (long double residuals and products, the formats' rounding computed with ldexp/nearbyint), or in
// the named error the headers document, whose message must name the argument.
//
// Settings: MIXSOLVE_FUZZ_SEED (the master seed, printed by every test; a failure names its case),
// MIXSOLVE_FUZZ_CASES (cases per test) and MIXSOLVE_FUZZ_TRACE=1 (print each case before it runs,
// for a crash). Read by the tests only: the library reads no environment variable.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/rng.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/solvers/least_squares.hpp"  // RankDeficientMatrix, which capture() tells apart
#include "mixsolve/solvers/solve.hpp"          // SingularMatrix

namespace mixsolve::fuzz {

// FP64's unit roundoff.
constexpr double kU64 = 0x1p-53;
// "mixsolve" in ASCII: the master seed unless MIXSOLVE_FUZZ_SEED says otherwise.
constexpr std::uint64_t kDefaultSeed = 0x6d6978736f6c7665ull;

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
  NotPositiveDefinite,
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
    case Kind::NotPositiveDefinite: return "NotPositiveDefinite";
    case Kind::OtherMixsolveError: return "mixsolve::Error";
    case Kind::ForeignException: return "foreign exception";
  }
  return "?";
}

struct Outcome {
  Kind kind = Kind::Result;
  std::string message;
  std::int64_t column = -1;  // ColumnError::column() (SingularMatrix, RankDeficientMatrix, NotPositiveDefinite)
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
  } catch (const NotPositiveDefinite& e) {
    return {Kind::NotPositiveDefinite, e.what(), e.column()};
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

}  // namespace mixsolve::fuzz
