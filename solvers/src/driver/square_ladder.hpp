// SPDX-License-Identifier: BSD-3-Clause
// Internal: the rungs a square solve climbs (Factorization::solve, driver/solve.cpp): which
// factorization comes next, and the rules that change the order on the way: the LU path that
// takes over from the Cholesky rungs where A turns out indefinite (Structure::Auto), and the
// FP64 LU redone with partial pivoting where a reused row order failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "precisions.hpp"

namespace mixsolve::solvers_detail {

// One step of the escalation: a kind of factorization in a precision.
struct Rung {
  FactorKind kind = FactorKind::Lu;
  Precision precision = Precision::FP64;
};

// The factorizations of `kind` SolveOptions asks for, in order: the kind's auto path (auto_path
// or cholesky_auto_path; FP64 alone below its auto_min_n, whose -1 means the engine's default
// for the kind) or the one precision, then FP64 with fallback.
inline std::vector<Rung> rung_path(const SolveOptions& o, FactorKind kind, std::int64_t n, const Engine& engine) {
  const bool cholesky = kind == FactorKind::Cholesky;
  const std::int64_t asked = cholesky ? o.cholesky_auto_min_n : o.auto_min_n;
  const std::int64_t auto_min_n = asked >= 0 ? asked : engine.default_auto_min_n(kind);
  std::vector<Precision> path;
  if (o.factorization == Precision::Auto)
    path = n >= auto_min_n ? (cholesky ? o.cholesky_auto_path : o.auto_path) : std::vector<Precision>{Precision::FP64};
  else path = {o.factorization};
  if (o.fallback && path.back() != Precision::FP64) path.push_back(Precision::FP64);
  std::vector<Rung> rungs;
  for (Precision p : path) rungs.push_back({kind, p});
  return rungs;
}

// A cheaper Cholesky's pivot that is negative beyond its arithmetic's rounding of the matrix
// (n u max a_ii, the size of the rounding errors its Schur complements accumulate): A itself is
// not positive definite, and under Structure::Auto the LU path follows at once instead of an
// FP64 Cholesky that would break down as well.
inline bool clearly_indefinite(const FactorResult& f, std::int64_t n, double unit_roundoff) {
  return f.breakdown_pivot_known && f.breakdown_pivot < -double(n) * unit_roundoff * f.largest_diagonal;
}

class SquareLadder {
 public:
  // The path of `kind`; with lu_after_cholesky (Structure::Auto on a symmetric A) the LU path
  // waits behind the Cholesky rungs.
  SquareLadder(const SolveOptions& o, FactorKind kind, bool lu_after_cholesky, std::int64_t n, const Engine& engine)
      : path_(rung_path(o, kind, n, engine)), lu_after_cholesky_(lu_after_cholesky) {
    if (lu_after_cholesky_) lu_path_ = rung_path(o, FactorKind::Lu, n, engine);
  }

  // Every rung tried.
  bool exhausted() const { return next_ >= path_.size(); }
  // The next rung, taken off the path.
  Rung take() { return path_[next_++]; }
  // A rung remains above the one just taken.
  bool higher_remains() const { return next_ < path_.size(); }
  // The next rung is one short of FP64.
  bool cheaper_remains() const { return next_ < path_.size() && path_[next_].precision != Precision::FP64; }
  // An FP64 LU may follow the cheaper LU's row order (SolveOptions::reuse_pivot_order), unless
  // one in a reused order has failed already.
  bool order_reuse_allowed() const { return !reused_order_failed_; }

  // What follows a factorization of `attempt` that broke down with `f`.
  enum class AfterBreakdown {
    NextRung,            // the next rung takes over
    LuPathTakesOver,     // A is not positive definite: the LU path replaces the rest (Auto)
    NotPositiveDefinite  // the FP64 Cholesky of an SPD-declared A broke down: the caller throws
  };
  AfterBreakdown after_breakdown(const Attempt& attempt, const FactorResult& f, std::int64_t n, double unit_roundoff) {
    const bool fp64 = fp64_factorization(attempt);
    const bool not_spd = f.status == StopReason::NotPositiveDefinite && (fp64 || clearly_indefinite(f, n, unit_roundoff));
    if (!not_spd) return AfterBreakdown::NextRung;
    if (!lu_after_cholesky_) return fp64 ? AfterBreakdown::NotPositiveDefinite : AfterBreakdown::NextRung;
    path_.resize(next_);
    path_.insert(path_.end(), lu_path_.begin(), lu_path_.end());
    lu_after_cholesky_ = false;
    return AfterBreakdown::LuPathTakesOver;
  }

  // `precision` goes first, before any rung is taken (fp16_when_near_diagonal), unless the path
  // starts with it already.
  void put_first(Precision precision) {
    if (next_ != 0 || (!path_.empty() && path_.front().precision == precision)) return;
    path_.insert(path_.begin(), Rung{path_.empty() ? FactorKind::Lu : path_.front().kind, precision});
  }
  // The first rung of the path (FP64 where it is empty).
  Precision first_precision() const { return path_.empty() ? Precision::FP64 : path_.front().precision; }

  // The FP64 LU in a reused row order failed its refinement: once more with partial pivoting,
  // next (the order's growth may be what stopped it).
  void redo_fp64_lu_with_partial_pivoting() {
    reused_order_failed_ = true;
    path_.insert(path_.begin() + std::ptrdiff_t(next_), Rung{FactorKind::Lu, Precision::FP64});
  }

 private:
  std::vector<Rung> path_, lu_path_;
  std::size_t next_ = 0;  // index in path_ of the next rung
  bool lu_after_cholesky_ = false;
  bool reused_order_failed_ = false;
};

}  // namespace mixsolve::solvers_detail
