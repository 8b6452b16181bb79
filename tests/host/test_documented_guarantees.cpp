// SPDX-License-Identifier: BSD-3-Clause
// What README.md and the public headers promise, on host memory, where no other test checks it:
// leading dimensions beyond the rows (the same answer as packed storage, bit for bit, and the rows
// between a view's rows and its ld never written), empty problems (n = 0, no right-hand sides),
// X overlapping A or B, several Contexts on separate threads, the GEMM contract's degenerate cases
// (m, n or k = 0, alpha = 0, beta = 0) and unmodified inputs on every host backend, and the named
// errors of the solvers' options. The device side: tests/gpu/test_gpu_documented_guarantees.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "documented_guarantees_support.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::documented_guarantees;

// --- Leading dimensions beyond the rows ----------------------------------------------------------

// solve() and Factorization on host matrices: A with lda = n + 5, B with ldb = n + 3, X with
// ldx = n + 7 (odd, so columns start off the vector registers' alignment), the padding of A and B
// NaN (read, it would be an error or reach X) and X's a marked NaN, give X bit for bit as packed
// storage does; X's padding, and all of A and B, are left as they were. Precision paths: FP32 with
// classic IR; FP16, classic IR then GMRES-IR (cond 1e6); auto at cond 1e14: fp16x3, classic IR,
// GMRES-IR too slow, FP64 in fp16x3's row order; FP64.
TEST(DocumentedGuarantees, SolveAndFactorizationGiveTheSameAnswerForLeadingDimensionsBeyondN) {
  Context ctx = Context::host_only();
  const std::int64_t n = 40, k = 3, lda = n + 5, ldb = n + 3, ldx = n + 7;
  struct Case {
    Precision precision;
    double cond;
    std::size_t attempts;  // the path's attempts: where X is written from several refinements
  };
  const Case cases[] = {
      {Precision::FP32, 1e4, 1}, {Precision::FP16, 1e6, 2}, {Precision::Auto, 1e14, 3}, {Precision::FP64, 1e6, 1}};
  int ran = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(to_string(c.precision));
    SolveOptions o;
    o.factorization = c.precision;
    o.block_size = 16;           // several blocks: the GEMM updates run
    o.escalate_by_cost = false;  // the path must not depend on timing: the two runs are compared
    const std::vector<double> a = test_matrix(n, c.cond, 12), b = uniform(n, k, 21);
    std::vector<double> x(n * k, NAN);
    const SolveReport packed = solve(ctx, host_view<const double>(a.data(), n, n, n),
                                     host_view<const double>(b.data(), n, k, n), host_view(x.data(), n, k, n), o);
    ASSERT_TRUE(packed.converged) << packed.summary();
    EXPECT_EQ(packed.attempts.size(), c.attempts) << packed.summary();

    const std::vector<double> a_ld = with_ld(a, n, n, lda, NAN), b_ld = with_ld(b, n, k, ldb, NAN);
    const std::vector<double> a_ld0 = a_ld, b_ld0 = b_ld;
    std::vector<double> x_ld(ldx * k, poison());
    const SolveReport padded =
        solve(ctx, host_view<const double>(a_ld.data(), n, n, lda), host_view<const double>(b_ld.data(), n, k, ldb),
              host_view(x_ld.data(), n, k, ldx), o);
    EXPECT_TRUE(padded.converged) << padded.summary();
    EXPECT_TRUE(same_bytes(packed_of(x_ld, n, k, ldx), x)) << "X differs from the packed solve's";
    EXPECT_TRUE(padding_untouched(x_ld, n, k, ldx, poison())) << "X's rows between n and ldx were written";
    EXPECT_TRUE(same_bytes(a_ld, a_ld0) && same_bytes(b_ld, b_ld0)) << "A or B (or their padding) changed";
    EXPECT_EQ(padded.attempts.size(), packed.attempts.size());
    EXPECT_EQ(padded.backward_error, packed.backward_error);

    // Factorization: two solves each with the factors of the padded and of the packed A.
    Factorization f(ctx, host_view<const double>(a_ld.data(), n, n, lda), o);
    Factorization g(ctx, host_view<const double>(a.data(), n, n, n), o);
    for (int round = 0; round < 2; ++round) {
      const std::vector<double> b2 = uniform(n, k, 31 + 2 * ran + round), b2_ld = with_ld(b2, n, k, ldb, NAN);
      std::vector<double> x2(n * k, NAN), x2_ld(ldx * k, poison());
      g.solve(host_view<const double>(b2.data(), n, k, n), host_view(x2.data(), n, k, n));
      f.solve(host_view<const double>(b2_ld.data(), n, k, ldb), host_view(x2_ld.data(), n, k, ldx));
      EXPECT_TRUE(same_bytes(packed_of(x2_ld, n, k, ldx), x2)) << "Factorization::solve, round " << round;
      EXPECT_TRUE(padding_untouched(x2_ld, n, k, ldx, poison())) << "round " << round;
    }
    EXPECT_TRUE(same_bytes(a_ld, a_ld0)) << "the Factorization wrote A";
    ++ran;
  }
  EXPECT_EQ(ran, 4);
}

// least_squares() on host matrices: lda = m + 3, ldb = m + 5, ldx = n + 7, padding as above; the
// default (FP32 QR + CGLS), the augmented system, FP64 factors, and an ill-conditioned A whose FP32
// attempt fails (the Cholesky QR / FP64 fallback).
TEST(DocumentedGuarantees, LeastSquaresGivesTheSameAnswerForLeadingDimensionsBeyondTheRows) {
  Context ctx = Context::host_only();
  const std::int64_t m = 60, n = 20, k = 2, lda = m + 3, ldb = m + 5, ldx = n + 7;
  struct Case {
    Precision precision;
    LeastSquaresOptions::Refinement refinement;
    double cond;
  };
  using R = LeastSquaresOptions::Refinement;
  const Case cases[] = {{Precision::FP32, R::Cgls, 1e2},
                        {Precision::FP32, R::Augmented, 1e2},
                        {Precision::FP64, R::Cgls, 1e2},
                        {Precision::FP32, R::Cgls, 1e9}};
  int ran = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(ran);
    LeastSquaresOptions o;
    o.factorization = c.precision;
    o.refinement = c.refinement;
    o.block_size = 8;
    // Columns scaled geometrically from 1 down to 1 / cond: kappa(A) of the order of cond.
    std::vector<double> a = uniform(m, n, 41 + ran);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) a[i + j * m] *= std::pow(c.cond, -double(j) / double(n - 1));
    const std::vector<double> b = uniform(m, k, 51 + ran);
    std::vector<double> x(n * k, NAN);
    const LeastSquaresReport packed =
        least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                      host_view(x.data(), n, k, n), o);
    ASSERT_TRUE(packed.converged) << packed.path();
    EXPECT_EQ(packed.fell_back, c.cond > 1e6) << packed.path();  // the last case: FP64 factors take over
    const std::vector<double> a_ld = with_ld(a, m, n, lda, NAN), b_ld = with_ld(b, m, k, ldb, NAN);
    const std::vector<double> a_ld0 = a_ld, b_ld0 = b_ld;
    std::vector<double> x_ld(ldx * k, poison());
    const LeastSquaresReport padded =
        least_squares(ctx, host_view<const double>(a_ld.data(), m, n, lda),
                      host_view<const double>(b_ld.data(), m, k, ldb), host_view(x_ld.data(), n, k, ldx), o);
    EXPECT_EQ(padded.path(), packed.path());
    EXPECT_TRUE(same_bytes(packed_of(x_ld, n, k, ldx), x)) << "X differs from the packed solve's";
    EXPECT_TRUE(padding_untouched(x_ld, n, k, ldx, poison())) << "X's rows between n and ldx were written";
    EXPECT_TRUE(same_bytes(a_ld, a_ld0) && same_bytes(b_ld, b_ld0)) << "A or B (or their padding) changed";
    EXPECT_EQ(padded.residual_norms, packed.residual_norms);
    ++ran;
  }
  EXPECT_EQ(ran, 4);
}

// --- Empty problems ------------------------------------------------------------------------------

// n = 0, or no right-hand sides: nothing to solve, no error, converged (every right-hand side of a
// B with no rows counts as converged: SolveReport::converged_rhs), no attempt; null pointers are
// allowed for views without elements. A is still checked where it has entries.
TEST(DocumentedGuarantees, SolveAndFactorizationOfEmptyProblemsReturnConvergedAtOnce) {
  Context ctx = Context::host_only();
  std::vector<double> none(4, 5.0);
  for (const double* data : {static_cast<const double*>(nullptr), static_cast<const double*>(none.data())}) {
    SCOPED_TRACE(data ? "pointers" : "null pointers");
    double* out = data ? none.data() + 2 : nullptr;
    const SolveReport r = solve(ctx, host_view<const double>(data, 0, 0, 1), host_view<const double>(data, 0, 3, 1),
                                host_view(out, 0, 3, 1));
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(r.converged_rhs, std::vector<bool>(3, true));
    EXPECT_TRUE(r.attempts.empty());
    EXPECT_EQ(r.iterations, 0);
    Factorization f(ctx, host_view<const double>(data, 0, 0, 1));
    const SolveReport s = f.solve(host_view<const double>(data, 0, 2, 1), host_view(out, 0, 2, 1));
    EXPECT_TRUE(s.converged);
    EXPECT_EQ(s.converged_rhs, std::vector<bool>(2, true));
    EXPECT_EQ(f.precision(), Precision::Auto) << "nothing was factored";
  }
  EXPECT_EQ(none, std::vector<double>(4, 5.0));

  // n = 6, no right-hand sides.
  const std::int64_t n = 6;
  std::vector<double> a = test_matrix(n, 10, 3);
  const std::vector<double> b = uniform(n, 1, 4);
  const SolveReport r =
      solve(ctx, host_view<const double>(a.data(), n, n, n), host_view<const double>(b.data(), n, 0, n),
            host_view(static_cast<double*>(nullptr), n, 0, n));
  EXPECT_TRUE(r.converged);
  EXPECT_TRUE(r.converged_rhs.empty());
  EXPECT_TRUE(r.attempts.empty());
  Factorization f(ctx, host_view<const double>(a.data(), n, n, n));
  EXPECT_TRUE(
      f.solve(host_view<const double>(b.data(), n, 0, n), host_view(static_cast<double*>(nullptr), n, 0, n)).converged);
  EXPECT_EQ(f.precision(), Precision::Auto) << "no right-hand side: nothing factored";
  std::vector<double> x(n, NAN);
  const SolveReport later = f.solve(host_view<const double>(b.data(), n, 1, n), host_view(x.data(), n, 1, n));
  EXPECT_TRUE(later.converged) << later.summary();
  EXPECT_NE(f.precision(), Precision::Auto);
  // A's entries are checked even where there is nothing to solve.
  a[2 + 3 * n] = INFINITY;
  expect_error(
      [&] {
        solve(ctx, host_view<const double>(a.data(), n, n, n), host_view<const double>(b.data(), n, 0, n),
              host_view(x.data(), n, 0, n));
      },
      {"A(2, 3) is NaN or Inf"});
}

// least_squares with n = 0 (X has no rows), m = n = 0, or k = 0: converged, no attempt,
// residual_norms ||b_j||_2 (least_squares.hpp); X, empty, is not written.
TEST(DocumentedGuarantees, LeastSquaresOfEmptyProblemsReturnConvergedAtOnce) {
  Context ctx = Context::host_only();
  const std::int64_t m = 6, k = 2;
  const std::vector<double> b = uniform(m, k, 61);
  std::vector<double> a(m * 3, 0.5), guard(8, 3.0);
  const LeastSquaresReport no_columns =
      least_squares(ctx, host_view<const double>(a.data(), m, 0, m), host_view<const double>(b.data(), m, k, m),
                    host_view(guard.data(), 0, k, 1));
  ASSERT_NO_FATAL_FAILURE(expect_report_without_columns(no_columns, b, m, k));
  const LeastSquaresReport nothing =
      least_squares(ctx, host_view<const double>(nullptr, 0, 0, 1), host_view<const double>(nullptr, 0, k, 1),
                    host_view(static_cast<double*>(nullptr), 0, k, 1));
  EXPECT_TRUE(nothing.converged);
  EXPECT_EQ(nothing.residual_norms, std::vector<double>(k, 0.0));
  const LeastSquaresReport no_rhs =
      least_squares(ctx, host_view<const double>(a.data(), m, 3, m), host_view<const double>(b.data(), m, 0, m),
                    host_view(guard.data(), 3, 0, 3));
  EXPECT_TRUE(no_rhs.converged);
  EXPECT_TRUE(no_rhs.attempts.empty());
  EXPECT_TRUE(no_rhs.residual_norms.empty());
  EXPECT_EQ(guard, std::vector<double>(8, 3.0));
}

// --- X overlapping A or B ------------------------------------------------------------------------

// The storage range of a view [data, data + (cols - 1) ld + rows) decides: X that shares a byte of
// it with A or B is an InvalidArgument naming both (exact aliasing, X inside A's storage, X's last
// column on B's first entry, X interleaved in A's padding), while X right after A's or B's storage
// is accepted and gives the answer of separate storage.
TEST(DocumentedGuarantees, SolveRefusesXOverlappingAOrBAndAcceptsAdjacentStorage) {
  Context ctx = Context::host_only();
  const std::int64_t n = 8, k = 2;
  const std::vector<double> a = test_matrix(n, 100, 5), b = uniform(n, k, 6);
  std::vector<double> expected(n * k);
  solve(ctx, host_view<const double>(a.data(), n, n, n), host_view<const double>(b.data(), n, k, n),
        host_view(expected.data(), n, k, n));

  // One buffer holds A, B and X at chosen offsets.
  std::vector<double> buffer(std::size_t(4 * n * n), 0.0);
  const auto place = [&](std::int64_t a_at, std::int64_t b_at, std::int64_t x_at, std::int64_t lda, std::int64_t ldx) {
    std::fill(buffer.begin(), buffer.end(), 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) buffer[a_at + i + j * lda] = a[i + j * n];
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < n; ++i) buffer[b_at + i + j * n] = b[i + j * n];
    return [&, a_at, b_at, x_at, lda, ldx] {
      return solve(ctx, host_view<const double>(buffer.data() + a_at, n, n, lda),
                   host_view<const double>(buffer.data() + b_at, n, k, n), host_view(buffer.data() + x_at, n, k, ldx));
    };
  };
  const std::int64_t after_a = n * n, b_at = after_a + n * k + 3;
  int refused = 0;
  const auto refuses = [&](std::int64_t a_at, std::int64_t bb, std::int64_t x_at, std::int64_t lda, std::int64_t ldx,
                           const char* other) {
    const auto call = place(a_at, bb, x_at, lda, ldx);
    expect_error(call, {"solve: X [", std::string("overlaps ") + other + " [", std::string("must not alias ") + other});
    ++refused;
  };
  refuses(0, b_at, 0, n, n, "A");                           // X == A
  refuses(0, b_at, b_at, n, n, "B");                        // X == B
  refuses(0, b_at, 2 * n + 1, n, n, "A");                   // X inside A's storage
  refuses(0, b_at, b_at - (k - 1) * n - n + 1, n, n, "B");  // X's last entry is B's first
  refuses(n, b_at + 2 * n * n, 0, 2 * n, 2 * n, "A");       // X in A's padding rows: the ranges overlap
  EXPECT_EQ(refused, 5);

  // Adjacent: X right after A's last entry; right before B's first; right after B's last.
  int accepted = 0;
  for (const auto& [x_at, bb] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {after_a, after_a + n * k}, {after_a, after_a + n * k + 5}, {after_a + n * k, after_a}}) {
    const auto call = place(0, bb, x_at, n, n);
    const SolveReport r = call();
    EXPECT_TRUE(r.converged) << r.summary();
    const std::vector<double> x(buffer.begin() + x_at, buffer.begin() + x_at + n * k);
    EXPECT_TRUE(same_bytes(x, expected)) << "X at " << x_at;
    ++accepted;
  }
  EXPECT_EQ(accepted, 3);

  // Factorization::solve: X on B is refused; a host A was copied by the constructor, so X may then
  // lie in A's old storage (which the caller owns again) and the answer is the same.
  std::vector<double> a_copy = a, b_copy = b;
  Factorization f(ctx, host_view<const double>(a_copy.data(), n, n, n));
  expect_error([&] { f.solve(host_view<const double>(b_copy.data(), n, 1, n), host_view(b_copy.data() + 1, n, 1, n)); },
               {"solve: X [", "overlaps B [", "must not alias B"});
  const SolveReport in_a = f.solve(host_view<const double>(b_copy.data(), n, k, n), host_view(a_copy.data(), n, k, n));
  EXPECT_TRUE(in_a.converged) << in_a.summary();
  EXPECT_TRUE(same_bytes(std::vector<double>(a_copy.begin(), a_copy.begin() + n * k), expected));
}

TEST(DocumentedGuarantees, LeastSquaresRefusesXOverlappingAOrBAndAcceptsAdjacentStorage) {
  Context ctx = Context::host_only();
  const std::int64_t m = 12, n = 4, k = 2;
  std::vector<double> buffer(std::size_t(m * n + m * k + n * k + 64), 0.0);
  const std::vector<double> a = uniform(m, n, 71), b = uniform(m, k, 72);
  std::vector<double> expected(n * k);
  least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, k, m),
                host_view(expected.data(), n, k, n));
  const auto run = [&](std::int64_t b_at, std::int64_t x_at) {
    buffer = side_by_side(a, b, b_at, std::int64_t(buffer.size()));
    return least_squares(ctx, host_view<const double>(buffer.data(), m, n, m),
                         host_view<const double>(buffer.data() + b_at, m, k, m),
                         host_view(buffer.data() + x_at, n, k, n));
  };
  const std::int64_t b_at = m * n + 16;
  int refused = 0;
  for (const auto& [x_at, other] : std::vector<std::pair<std::int64_t, const char*>>{
           {0, "A"}, {b_at, "B"}, {m + 1, "A"}, {b_at - (k - 1) * n - n + 1, "B"}, {b_at + (k - 1) * m + m - 1, "B"}}) {
    expect_error([&, x_at = x_at] { run(b_at, x_at); },
                 {"least_squares: X [", std::string("overlaps ") + other, std::string("must not alias ") + other});
    ++refused;
  }
  EXPECT_EQ(refused, 5);
  int accepted = 0;
  for (const std::int64_t x_at : {m * n, b_at - n * k, b_at + m * k}) {  // after A, before B, after B
    const LeastSquaresReport r = run(b_at, x_at);
    EXPECT_TRUE(r.converged) << r.path();
    EXPECT_TRUE(same_bytes(std::vector<double>(buffer.begin() + x_at, buffer.begin() + x_at + n * k), expected))
        << "X at " << x_at;
    ++accepted;
  }
  EXPECT_EQ(accepted, 3);
}

// The overlap test itself (core/matrix.hpp): byte ranges, so element types may differ; empty views
// and views in different memory spaces never overlap; a range that would pass the end of the
// address space saturates instead of wrapping.
TEST(DocumentedGuarantees, StorageOverlapIsDecidedOnByteRanges) {
  std::vector<double> d(64);
  const auto v = [&](std::int64_t at, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    return host_view(d.data() + at, rows, cols, ld);
  };
  EXPECT_TRUE(detail::storage_overlaps(v(0, 4, 2, 8), v(11, 1, 1, 1)));   // last entry of column 1
  EXPECT_FALSE(detail::storage_overlaps(v(0, 4, 2, 8), v(12, 1, 1, 1)));  // one past it
  EXPECT_TRUE(detail::storage_overlaps(v(0, 4, 2, 8), v(5, 2, 1, 2)));    // between the columns
  EXPECT_FALSE(detail::storage_overlaps(v(0, 4, 0, 8), v(0, 4, 2, 8)));   // empty
  EXPECT_FALSE(detail::storage_overlaps(v(0, 4, 2, 8), device_view(d.data(), 4, 2, 8)));
  const MatrixView<float> f{reinterpret_cast<float*>(d.data() + 3), 1, 1, 1, Memory::Host};
  EXPECT_TRUE(detail::storage_overlaps(v(0, 4, 1, 4), f));                           // float inside double 3
  EXPECT_FALSE(detail::storage_overlaps(v(0, 3, 1, 4), f));                          // ends where it starts
  EXPECT_TRUE(detail::storage_overlaps(v(0, 1, 2, INT64_MAX / 2), v(63, 1, 1, 1)));  // saturated end
  expect_error([&] { detail::check_no_overlap("f", "out", v(1, 2, 1, 2), "in", v(0, 2, 2, 2)); },
               {"f: out [", "overlaps in [", "must not alias in"});
  detail::check_no_overlap("f", "out", v(4, 2, 1, 2), "in", v(0, 2, 2, 2));
}

// --- Several Contexts on separate threads --------------------------------------------------------

// One Context per thread of work (context.hpp): four threads, each with its own host-only Context,
// solve four problems (four precision paths) at once; each X is the serial solve's bit for bit.
// escalate_by_cost off: with it, a GMRES attempt's end may depend on the time it took.
TEST(DocumentedGuarantees, SolvesOnSeparateThreadsWithTheirOwnContextsMatchSerialSolves) {
  const std::int64_t n = 64, k = 2;
  const Precision paths[] = {Precision::Auto, Precision::FP32, Precision::FP16, Precision::FP64};
  constexpr int kThreads = 4;
  std::vector<std::vector<double>> a(kThreads), b(kThreads), serial(kThreads), parallel(kThreads);
  const auto options = [&](int t) {
    SolveOptions o;
    o.factorization = paths[t];
    o.escalate_by_cost = false;
    o.block_size = 16;
    return o;
  };
  for (int t = 0; t < kThreads; ++t) {
    a[t] = test_matrix(n, t == 0 ? 1e8 : 1e4, 80 + t);
    b[t] = uniform(n, k, 90 + t);
    serial[t].assign(n * k, NAN);
    parallel[t].assign(n * k, NAN);
    Context ctx = Context::host_only();
    ASSERT_TRUE(solve(ctx, host_view<const double>(a[t].data(), n, n, n), host_view<const double>(b[t].data(), n, k, n),
                      host_view(serial[t].data(), n, k, n), options(t))
                    .converged);
  }
  const std::vector<std::string> errors = run_on_threads(kThreads, [&](int t) {
    Context ctx = Context::host_only();
    for (int round = 0; round < 3; ++round)  // longer than thread start-up: the solves overlap
      solve(ctx, host_view<const double>(a[t].data(), n, n, n), host_view<const double>(b[t].data(), n, k, n),
            host_view(parallel[t].data(), n, k, n), options(t));
  });
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(same_bytes(parallel[t], serial[t])) << "thread " << t << " (" << to_string(paths[t]) << ")";
  }
}

// A host-only Context has no workspace: workspace() is NotSupported, its capacity stays 0.
TEST(DocumentedGuarantees, HostOnlyContextHasNoWorkspace) {
  Context ctx = Context::host_only();
  EXPECT_FALSE(ctx.has_device());
  EXPECT_EQ(ctx.device(), -1);
  expect_error<NotSupported>([&] { ctx.workspace(16); }, {"Context::workspace", "host-only"});
  EXPECT_EQ(ctx.workspace_capacity(), 0u);
  ctx.release_workspace();  // nothing to free: no error
}

// --- The GEMM contract on every host backend ---------------------------------------------------

// check_gemm_contract's adapter on the host: `be` runs g on copies of *a, *b (null where null) and c.
template <class T>
GemmOutcome<T> run_on_host(Context& ctx, const gemm::Backend& be, gemm::GemmArgs<T> g, const std::vector<T>* a,
                           const std::vector<T>* b, const std::vector<T>& c) {
  GemmOutcome<T> out{a ? *a : std::vector<T>(), b ? *b : std::vector<T>(), c};
  g.a = a ? out.a.data() : nullptr;
  g.b = b ? out.b.data() : nullptr;
  g.c = out.c.data();
  be.run(ctx, g);
  return out;
}

// backend.hpp's shared semantics, on every host backend (FP32 and FP64): inputs never modified,
// the rows of C between m and ldc untouched, m = 0 / n = 0 do nothing, k = 0 and alpha = 0 give
// beta C without reading A or B, beta = 0 never reads C, NaN / Inf in A or B propagate.
TEST(DocumentedGuarantees, EveryHostGemmBackendKeepsTheContractsRules) {
  Context ctx = Context::host_only();
  int f32 = 0, f64 = 0, total = 0;
  for (const gemm::Backend* be : gemm::available_backends(ctx)) {
    ASSERT_EQ(be->memory(), Memory::Host) << be->name();
    SCOPED_TRACE(be->name());
    const auto on_host = [&](auto g, const auto* a, const auto* b, const auto& c) {
      return run_on_host(ctx, *be, g, a, b, c);
    };
    const int cases = check_gemm_contract(*be, on_host, 500, "host-ozaki");  // the host Ozaki emulations
    if (HasFatalFailure()) return;
    EXPECT_EQ(cases, 4 + 3 + 2 + 2 + 1) << be->name();
    (be->data_type() == gemm::DataType::F32 ? f32 : f64) += 1;
    total += cases;
  }
  std::size_t host_backends = 0;
  for (const gemm::Backend* be : gemm::all_backends()) host_backends += be->memory() == Memory::Host;
  EXPECT_EQ(std::size_t(f32 + f64), host_backends) << "every host backend of the registry ran";
  EXPECT_GE(f32, 15);  // host-fp32 and the model-<scheme>-rz|rn family (7 schemes)
  EXPECT_GE(f64, 5);   // host-fp64 and the host Ozaki emulations
  EXPECT_EQ(total, (f32 + f64) * 12);
}

// --- Options: named errors -----------------------------------------------------------------------

// SolveOptions that were accepted unchecked: block_size < 0 (silently 32 before), gmres_max_inner
// < 1, probe_pivot_ratio NaN or negative, tolerance_factor infinite; checked by Factorization's
// constructor, so by solve() too. 0, a positive ratio and INFINITY are valid probe_pivot_ratios.
TEST(DocumentedGuarantees, SolveOptionsOutOfRangeAreNamedErrors) {
  Context ctx = Context::host_only();
  const std::int64_t n = 24;
  const std::vector<double> a = test_matrix(n, 100, 7), b = uniform(n, 1, 8);
  std::vector<double> x(n);
  const auto A = host_view<const double>(a.data(), n, n, n);
  const auto B = host_view<const double>(b.data(), n, 1, n);
  const auto X = host_view(x.data(), n, 1, n);
  struct Bad {
    SolveOptions options;
    std::string message;
  };
  std::vector<Bad> bad;
  const auto add = [&](auto set, std::string message) {
    SolveOptions o;
    set(o);
    bad.push_back({o, std::move(message)});
  };
  add([](SolveOptions& o) { o.block_size = -3; }, "solve: block_size (-3) < 0");
  add([](SolveOptions& o) { o.block_size = -1; }, "solve: block_size (-1) < 0");
  add([](SolveOptions& o) { o.gmres_max_inner = 0; }, "solve: gmres_max_inner (0) < 1");
  add([](SolveOptions& o) { o.gmres_max_inner = -5; }, "solve: gmres_max_inner (-5) < 1");
  add([](SolveOptions& o) { o.probe_pivot_ratio = NAN; }, "solve: probe_pivot_ratio (nan) is NaN");
  add([](SolveOptions& o) { o.probe_pivot_ratio = -1e-4; }, "solve: probe_pivot_ratio (-0.0001) < 0");
  add([](SolveOptions& o) { o.probe_pivot_ratio = -INFINITY; }, "solve: probe_pivot_ratio (-inf) < 0");
  add([](SolveOptions& o) { o.tolerance_factor = INFINITY; }, "solve: tolerance_factor (inf) is not finite");
  add([](SolveOptions& o) { o.tolerance_factor = NAN; }, "solve: tolerance_factor");
  int checked = 0;
  for (const Bad& c : bad) {
    expect_error([&] { solve(ctx, A, B, X, c.options); }, {c.message});
    expect_error([&] { Factorization f(ctx, A, c.options); }, {c.message});
    ++checked;
  }
  EXPECT_EQ(checked, 9);
  int accepted = 0;
  for (const double ratio : {0.0, 1e-4, 1.0, double(INFINITY)}) {
    SolveOptions o;
    o.probe_pivot_ratio = ratio;
    o.block_size = 0;
    EXPECT_TRUE(solve(ctx, A, B, X, o).converged) << "probe_pivot_ratio " << ratio;
    ++accepted;
  }
  EXPECT_EQ(accepted, 4);
}

// LeastSquaresOptions: every option is checked by name, the refinement method against its enum's
// values too.
TEST(DocumentedGuarantees, LeastSquaresOptionsOutOfRangeAreNamedErrors) {
  Context ctx = Context::host_only();
  const std::int64_t m = 10, n = 4;
  const std::vector<double> a = uniform(m, n, 9), b = uniform(m, 1, 10);
  std::vector<double> x(n);
  const auto call = [&](const LeastSquaresOptions& o) {
    least_squares(ctx, host_view<const double>(a.data(), m, n, m), host_view<const double>(b.data(), m, 1, m),
                  host_view(x.data(), n, 1, n), o);
  };
  int checked = 0;
  const auto refuses = [&](auto set, const char* message) {
    LeastSquaresOptions o;
    set(o);
    expect_error([&] { call(o); }, {message});
    ++checked;
  };
  refuses([](LeastSquaresOptions& o) { o.block_size = -2; }, "least_squares: block_size (-2) < 0");
  refuses([](LeastSquaresOptions& o) { o.max_iterations = 0; }, "least_squares: max_iterations (0) < 1");
  refuses([](LeastSquaresOptions& o) { o.factorization = Precision::FP16; }, "least_squares: factorization fp16");
  refuses([](LeastSquaresOptions& o) { o.refinement = static_cast<LeastSquaresOptions::Refinement>(7); },
          "least_squares: refinement (7) is not");
  refuses([](LeastSquaresOptions& o) { o.fp32_update = "host-fp64"; }, "least_squares: fp32_update \"host-fp64\"");
  refuses([](LeastSquaresOptions& o) { o.fp32_update = "no-such-backend"; }, "fp32_update \"no-such-backend\"");
  EXPECT_EQ(checked, 6);
  for (const auto method :
       {LeastSquaresOptions::Refinement::Augmented, LeastSquaresOptions::Refinement::Gmres,
        LeastSquaresOptions::Refinement::AugmentedThenGmres, LeastSquaresOptions::Refinement::Cgls}) {
    LeastSquaresOptions o;
    o.refinement = method;
    EXPECT_NO_THROW(call(o)) << static_cast<int>(method);
  }
}

}  // namespace
