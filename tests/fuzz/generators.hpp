// SPDX-License-Identifier: BSD-3-Clause
// The fuzz tests' random arguments shared by the case runners: leading dimensions, sizes, memory
// labels, the layout of views in their arenas, NaN/Inf placements, aliasing, and their faults.
//
// The tests (tests/host/test_fuzz.cpp on host memory, tests/gpu/test_gpu_fuzz.cpp on device
// memory) make reproducible random calls of the public API (shapes, leading dimensions, options,
// NaN/Inf placements, aliasing, memory spaces), know what the documentation says each call must
// do, and check what it did.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/arena.hpp"
#include "fuzz/rng.hpp"
#include "fuzz/settings_and_outcomes.hpp"
#include "mixsolve/core/matrix.hpp"

namespace mixsolve::fuzz {

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

}  // namespace mixsolve::fuzz
