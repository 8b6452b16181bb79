// SPDX-License-Identifier: BSD-3-Clause
// The solve driver on host matrices: refinement paths, escalation, fallback, the stop test,
// argument errors. Low-precision factorizations use the host tensor-core model (gemm/).
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/application_matrices.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "driver/near_diagonal.hpp"  // solvers_detail::near_diagonal_estimate
#include "engine.hpp"  // solvers_detail::probe_factors, make_host_engine
#include "lu/lu_rules.hpp"  // range scaling, the trusted row order, the collapse watch
#include "reference_solvers.hpp"
#include "residual_accuracy.hpp"
#include "solve_test_problems.hpp"

namespace {

using namespace mixsolve;
using test_problems::ScopedTuning;

struct Problem {
  std::int64_t n, k;
  std::vector<double> a, b, x;
  Problem(const TestMatrixSpec& spec, std::int64_t n_, std::int64_t k_ = 1) : n(n_), k(k_), a(n_ * n_), b(n_ * k_), x(n_ * k_, NAN) {
    generate_test_matrix(spec, host_view(a.data(), n, n, n));
    fill_random(host_view(b.data(), n, k, n), RandomSpec::uniform(-1, 1, spec.seed + 100));
  }
  MatrixView<const double> A() const { return host_view<const double>(a.data(), n, n, n); }
  MatrixView<const double> B() const { return host_view<const double>(b.data(), n, k, n); }
  MatrixView<double> X() { return host_view(x.data(), n, k, n); }
};

TestMatrixSpec geo(double cond, std::uint64_t seed = 3) {
  TestMatrixSpec s;
  s.spectrum = Spectrum::Geo;
  s.cond = cond;
  s.seed = seed;
  return s;
}

// The stop test, recomputed independently: ||b - A x||_inf < sqrt(n) ||x||_inf ||A||_inf 2^-53.
bool meets_stop_test(const Problem& p, std::int64_t column) {
  const Eigen::Map<const Eigen::MatrixXd> a(p.a.data(), p.n, p.n);
  const Eigen::Map<const Eigen::VectorXd> b(p.b.data() + column * p.n, p.n), x(p.x.data() + column * p.n, p.n);
  const double r = (b - a * x).cwiseAbs().maxCoeff();
  const double norm_a = a.cwiseAbs().rowwise().sum().maxCoeff();
  return r < std::sqrt(double(p.n)) * x.cwiseAbs().maxCoeff() * norm_a * 0x1p-53;
}

// The FP64 comparator: partial-pivoting LU and its solve, unblocked (dgetf2 + dgetrs,
// tests/reference_solvers.hpp), whose rounding is the same on every machine.
Eigen::MatrixXd fp64_lu_solution(const Problem& p, std::int64_t k) {
  const Eigen::MatrixXd a = Eigen::Map<const Eigen::MatrixXd>(p.a.data(), p.n, p.n);
  return mixsolve::testing::lu_solve(a, Eigen::MatrixXd(Eigen::Map<const Eigen::MatrixXd>(p.b.data(), p.n, k)));
}

// Backward error of the FP64 LU (fp64_lu_solution) on the same problem, for comparison. The
// tests' rule "within 10x of the FP64 LU's error (floored at u)": a refined x and the FP64 LU's
// both carry u times constants set by the algorithm (growth, the residual's rounding) and by where
// the rounding errors fall; over this file's comparisons the solver's backward error was at most
// 2.3x, its forward error 3.0x the FP64 LU's, under five cache blockings of Eigen's products (the
// library's host GEMMs). 10 allows for that and rejects an x an order of magnitude worse.
double fp64_backward_error(const Problem& p) {
  const Eigen::Map<const Eigen::MatrixXd> a(p.a.data(), p.n, p.n);
  const Eigen::Map<const Eigen::MatrixXd> b(p.b.data(), p.n, p.k);
  const Eigen::MatrixXd x = fp64_lu_solution(p, p.k);
  const double norm_a = a.cwiseAbs().rowwise().sum().maxCoeff();
  double worst = 0;
  for (std::int64_t j = 0; j < p.k; ++j)
    worst = std::max(worst, (b.col(j) - a * x.col(j)).cwiseAbs().maxCoeff() /
                                (norm_a * x.col(j).cwiseAbs().maxCoeff() + b.col(j).cwiseAbs().maxCoeff()));
  return worst;
}

SolveReport run(Problem& p, Precision prec, Refinement ref, bool fallback = true, bool range_scaling = true,
                StopTest stop_test = StopTest::Attainable) {
  Context ctx = Context::host_only();
  SolveOptions o;
  o.stop_test = stop_test;
  o.factorization = prec;
  o.refinement = ref;
  o.fallback = fallback;
  o.range_scaling = range_scaling;
  o.block_size = 16;  // several blocks even at small n, so the GEMM backend does real work
  return solve(ctx, p.A(), p.B(), p.X(), o);
}

void expect_converged_and_accurate(const Problem& p, const SolveReport& r) {
  ASSERT_TRUE(r.converged) << r.summary();
  for (std::int64_t j = 0; j < p.k; ++j) EXPECT_TRUE(meets_stop_test(p, j)) << "column " << j;
  EXPECT_LE(r.backward_error, 10 * std::max(fp64_backward_error(p), 0x1p-53)) << r.summary();
}

TEST(Solve, Fp64FactorizationMeetsTheStopTestWithoutEscalation) {
  Problem p(geo(1e8), 96);
  const SolveReport r = run(p, Precision::FP64, Refinement::Classic);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].precision, Precision::FP64);
  EXPECT_FALSE(r.fell_back);
  EXPECT_LE(r.iterations, 2);
}

TEST(Solve, Fp32ClassicRefinementReachesFp64Accuracy) {
  Problem p(geo(1e4), 96, 3);
  const SolveReport r = run(p, Precision::FP32, Refinement::Classic);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].precision, Precision::FP32);
  EXPECT_GE(r.iterations, 1) << "an FP32 solve alone is not FP64-accurate";
  EXPECT_EQ(r.converged_rhs.size(), 3u);
}

TEST(Solve, CorrectedFactorizationsConvergeLikeFp32) {
  for (Precision prec : {Precision::Halfhalf, Precision::Tf32tf32, Precision::Fp16x3}) {
    Problem p(geo(1e5, 11), 80);
    const SolveReport r = run(p, prec, Refinement::Auto);
    SCOPED_TRACE(to_string(prec));
    expect_converged_and_accurate(p, r);
    EXPECT_EQ(r.attempts.back().precision, prec);
    EXPECT_EQ(r.attempts.back().refinement, Refinement::Classic);
  }
}

// The Ozaki LU: FP64-stored factors whose trailing updates keep ozaki_bits bits of each operand
// (the host model of ozaki2-int8). At 40 bits, cond 1e10 gives a contraction near 1e10 2^-40 ~
// 1e-2: a few classic steps, no fallback.
TEST(Solve, OzakiFactorizationRefinesIllConditionedMatricesInFewSteps) {
  Problem p(geo(1e10, 5), 120, 2);
  const SolveReport r = run(p, Precision::Ozaki, Refinement::Classic);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::Ozaki);
  EXPECT_FALSE(r.fell_back);
  EXPECT_LE(r.iterations, 5) << r.summary();
}

// The bits are the accuracy knob: the first solve's backward error follows 2^-bits.
TEST(Solve, OzakiBitsSetTheFactorsAccuracy) {
  std::vector<double> first_error;
  for (int bits : {20, 32, 44}) {
    Problem p(geo(1e4, 6), 100);
    Context ctx = Context::host_only();
    SolveOptions o;
    o.factorization = Precision::Ozaki;
    o.ozaki_bits = bits;
    o.refinement = Refinement::None;
    o.fallback = false;
    o.block_size = 16;
    const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
    ASSERT_FALSE(r.backward_error_history.empty());
    first_error.push_back(r.backward_error_history[0]);
  }
  // 12 bits more: at least 2^8 smaller (the LU's growth and the backward error's slack aside).
  EXPECT_GT(first_error[0], 0x1p8 * first_error[1]) << first_error[0] << " " << first_error[1];
  EXPECT_GT(first_error[1], 0x1p8 * first_error[2]) << first_error[1] << " " << first_error[2];
}

// As a rung of auto between fp16x3 and FP64: where fp16x3's classic refinement fails, the Ozaki
// LU converges and FP64 is never factored.
TEST(Solve, OzakiRungTakesOverFromFp16x3BeforeFp64) {
  Problem p(geo(1e10, 7), 128);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.auto_path = {Precision::Fp16x3, Precision::Ozaki};
  o.refinement = Refinement::Classic;
  o.block_size = 16;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::Fp16x3);
  EXPECT_NE(r.attempts[0].stop, StopReason::Converged);
  EXPECT_EQ(r.attempts[1].precision, Precision::Ozaki);
  EXPECT_FALSE(r.fell_back);
}

TEST(Solve, Fp16NeedsGmresWhereClassicRefinementFails) {
  // With FP16 trailing updates (FP32 panels), classic IR stops contracting from cond ~1e5 while
  // GMRES-IR converges up to ~1e7 (host model, n = 96): cond 1e6 separates them.
  Problem p(geo(1e6, 5), 96);
  const SolveReport classic = run(p, Precision::FP16, Refinement::Classic, false);
  EXPECT_FALSE(classic.converged) << classic.summary();
  ASSERT_EQ(classic.attempts.size(), 1u);
  EXPECT_TRUE(classic.attempts[0].stop == StopReason::Diverged || classic.attempts[0].stop == StopReason::Stagnated)
      << classic.summary();
  Problem q(geo(1e6, 5), 96);
  const SolveReport gmres = run(q, Precision::FP16, Refinement::Gmres, false);
  expect_converged_and_accurate(q, gmres);
  EXPECT_GT(gmres.attempts[0].inner_iterations, 0);
}

// GMRES-IR with its Krylov basis stored short (SolveOptions::krylov_basis_format), on the FP16
// factors and matrix above. Formats whose unit roundoff is below the inner tolerance (56 .. 40
// bits) take the FP64 basis' outer steps and about its GMRES iterations; 32 bits (u = 2^-21) stops
// its inner solves near 4u and converges with more of both; 24 and 16 bits (u = 2^-13, 2^-5) are
// too coarse for this preconditioned operator at cond 1e6: their attempt is reported as failed,
// never returned as converged.
TEST(Solve, GmresWithAKrylovBasisStoredShortConvergesToTheSameAccuracy) {
  int fp64_steps = 0, fp64_inner = 0, compared = 0;
  for (const slfp::Format f : slfp::all_formats()) {
    if (!slfp::fp64_based(f)) continue;
    Problem p(geo(1e6, 5), 96);
    Context ctx = Context::host_only();
    SolveOptions o;
    o.factorization = Precision::FP16;
    o.refinement = Refinement::Gmres;
    o.fallback = false;
    o.block_size = 16;
    o.krylov_basis_format = f;
    const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
    SCOPED_TRACE(slfp::to_string(f));
    ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
    const int bits = slfp::container_bits(f);
    if (bits < 32) {
      if (!r.converged) {
        EXPECT_NE(r.attempts[0].stop, StopReason::Converged) << r.summary();
        continue;
      }
    }
    expect_converged_and_accurate(p, r);
    if (f == slfp::Format::Fp64) {
      fp64_steps = r.iterations;
      fp64_inner = r.attempts[0].inner_iterations;
    } else if (bits >= 40) {
      EXPECT_EQ(r.iterations, fp64_steps) << r.summary();
      EXPECT_LE(r.attempts[0].inner_iterations, fp64_inner + fp64_inner / 10) << r.summary();
      ++compared;
    }
  }
  EXPECT_GT(fp64_steps, 0) << "the FP64 basis (the formats' yardstick) ran first";
  EXPECT_GE(compared, 2) << "formats of 40 bits and more compared with the FP64 basis";
  // An FP32-based basis format lacks FP64's range: refused by name.
  Problem p(geo(1e6, 5), 16);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.krylov_basis_format = slfp::Format::Slfp32in24;
  try {
    solve(ctx, p.A(), p.B(), p.X(), o);
    ADD_FAILURE() << "an FP32-based basis format was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("krylov_basis_format (slfp32in24b)"), std::string::npos) << e.what();
  }
}

// The factors the refinement reads stored short (SolveOptions::factor_storage): FP16 factors
// (11 significant bits) lose nothing stored in 16 (slfp32in24b) or 21 (slfp64in32b) bits: about
// the same iterations, the same accuracy; stored in 13 (slfp64in24b) they still converge to the same accuracy;
// FP32 factors stored in 8 bits (slfp32in16b) at cond 1e6 either converge to the same accuracy
// with more iterations or report the failure. A wider format is refused by name.
TEST(Solve, FactorsStoredShortKeepTheAccuracyAndCostIterationsOnlyBelowTheFactorizationsBits) {
  const auto run_stored = [](Precision p, slfp::Format storage, Problem& problem) {
    Context ctx = Context::host_only();
    SolveOptions o;
    o.factorization = p;
    o.refinement = Refinement::Gmres;
    o.fallback = false;
    o.block_size = 16;
    o.factor_storage = storage;
    return solve(ctx, problem.A(), problem.B(), problem.X(), o);
  };
  Problem reference_problem(geo(1e6, 5), 96);
  const SolveReport reference = run_stored(Precision::FP16, slfp::Format::Fp32, reference_problem);
  expect_converged_and_accurate(reference_problem, reference);
  for (const slfp::Format f : {slfp::Format::Slfp32in24, slfp::Format::Slfp64in32, slfp::Format::Slfp64in24}) {
    SCOPED_TRACE(slfp::to_string(f));
    Problem p(geo(1e6, 5), 96);
    const SolveReport r = run_stored(Precision::FP16, f, p);
    expect_converged_and_accurate(p, r);
    if (f != slfp::Format::Slfp64in24) {
      EXPECT_LE(r.iterations, reference.iterations + 1) << r.summary();
      EXPECT_LE(r.attempts[0].inner_iterations, reference.attempts[0].inner_iterations * 11 / 10 + 2) << r.summary();
    }
  }
  Problem p(geo(1e6, 5), 96);
  const SolveReport coarse = run_stored(Precision::FP32, slfp::Format::Slfp32in16, p);
  if (coarse.converged)
    expect_converged_and_accurate(p, coarse);
  else
    EXPECT_NE(coarse.attempts.back().stop, StopReason::Converged) << coarse.summary();
  Problem q(geo(1e6, 5), 16);
  try {
    run_stored(Precision::FP16, slfp::Format::Slfp64in48, q);
    ADD_FAILURE() << "a 48-bit factor storage was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("factor_storage (slfp64in48b)"), std::string::npos) << e.what();
  }
}

// The same problem (spec, n = 64) solved by GMRES-IR with `prec` factors, without and with
// range scaling (no fallback). The scaled solve must converge with those factors alone.
struct RangeScalingRuns {
  SolveReport unscaled, scaled;
};
RangeScalingRuns solve_unscaled_and_scaled(const TestMatrixSpec& spec, Precision prec) {
  Problem p(spec, 64), q(spec, 64);
  RangeScalingRuns r{run(p, prec, Refinement::Gmres, false, false), run(q, prec, Refinement::Gmres, false, true)};
  expect_converged_and_accurate(q, r.scaled);
  EXPECT_EQ(r.scaled.attempts.size(), 1u) << r.scaled.summary();
  EXPECT_TRUE(!r.scaled.attempts.empty() && r.scaled.attempts[0].range_scaled) << r.scaled.summary();
  return r;
}

// The unscaled LU of r met entries beyond its format's range and stopped there.
void expect_unscaled_overflowed(const RangeScalingRuns& r) {
  ASSERT_FALSE(r.unscaled.attempts.empty());
  EXPECT_EQ(r.unscaled.attempts[0].stop, StopReason::Overflow) << r.unscaled.summary();
}

TEST(Solve, RangeScalingLetsFp16FactorEntriesBeyondItsRange) {
  // Entries near 2^40 overflow FP16 (65504) in the trailing updates' inputs: unscaled, the FP16
  // LU overflows and escalates; range-scaled (mu A with entries in [-1, 1]) it converges
  // with the FP16 factors.
  TestMatrixSpec spec = geo(1e3, 7);
  spec.scale = 0x1p40;
  const RangeScalingRuns r = solve_unscaled_and_scaled(spec, Precision::FP16);
  expect_unscaled_overflowed(r);
  EXPECT_TRUE(!r.unscaled.attempts.empty() && !r.unscaled.attempts[0].range_scaled);
  EXPECT_NE(r.scaled.summary().find("fp16 (range-scaled) LU"), std::string::npos) << r.scaled.summary();
}

TEST(Solve, RangeScalingKeepsTinyEntriesAboveFp16Underflow) {
  // Entries near 2^-30 are zero or subnormal in FP16 (normal from 2^-14): unscaled, the FP16
  // updates lose them and refinement cannot recover; range-scaled it converges.
  TestMatrixSpec spec = geo(1e3, 8);
  spec.scale = 0x1p-30;
  const RangeScalingRuns r = solve_unscaled_and_scaled(spec, Precision::FP16);
  EXPECT_FALSE(r.unscaled.converged) << r.unscaled.summary();
}

TEST(Solve, RangeScalingEquilibratesBadlyScaledColumns) {
  // Columns scaled by 2^0 .. 2^-30 (powers of two): the column maxima spread far beyond 2^12, so
  // the FP16 LU factors mu R A S with S undoing the scaling. Unscaled, the small columns' entries
  // of U fall below FP16's range in the trailing updates' inputs and their updates are lost: the
  // preconditioner is poor, and GMRES (which converges in at most n iterations here) needs
  // several times more iterations.
  const std::int64_t n = 64;
  Problem p(geo(1e2, 10), n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) p.a[i + j * n] *= std::ldexp(1.0, -int(30 * j / (n - 1)));
  Problem q = p;
  const SolveReport unscaled = run(p, Precision::FP16, Refinement::Gmres, false, false);
  const SolveReport scaled = run(q, Precision::FP16, Refinement::Gmres, false, true);
  expect_converged_and_accurate(q, scaled);
  ASSERT_EQ(scaled.attempts.size(), 1u) << scaled.summary();
  EXPECT_TRUE(scaled.attempts[0].range_scaled);
  EXPECT_LT(4 * scaled.attempts[0].inner_iterations, unscaled.attempts[0].inner_iterations)
      << scaled.summary() << unscaled.summary();
}

TEST(Solve, RangeScalingLetsBf16FactorEntriesBeyondFp32Range) {
  // A is rounded through FP32 for every cheaper factorization; entries near 2^200 overflow it.
  // Range scaling happens in FP64 first, so the BF16 LU sees entries in [-1, 1].
  TestMatrixSpec spec = geo(1e2, 9);
  spec.scale = 0x1p200;
  const RangeScalingRuns r = solve_unscaled_and_scaled(spec, Precision::BF16);
  expect_unscaled_overflowed(r);
}

// GMRES-IR alone on the factors of `precision`, without the FP64 fallback, on a problem where it
// cannot converge: one attempt that ends stagnated, diverged or too slow.
SolveReport failing_gmres_attempt(Problem& p, Precision precision, SolveOptions o = {}) {
  Context ctx = Context::host_only();
  o.factorization = precision;
  o.refinement = Refinement::Gmres;
  o.fallback = false;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  EXPECT_FALSE(r.converged) << r.summary();
  EXPECT_EQ(r.attempts.size(), 1u) << r.summary();
  const StopReason stop = r.attempts.at(0).stop;
  EXPECT_TRUE(stop == StopReason::Stagnated || stop == StopReason::Diverged || stop == StopReason::TooSlow)
      << r.summary();
  return r;
}

TEST(Solve, FailingGmresRefinementDoesNotExhaustTheInnerBudget) {
  // FP16 factors at cond 1e9 (n = 96, host model): GMRES-IR cannot converge. Restart cycles that
  // do not halve the preconditioned residual end the inner solve, so each outer step costs about
  // one restart cycle instead of gmres_max_inner iterations.
  Problem p(geo(1e9, 5), 96);
  const SolveOptions o;
  const SolveReport r = failing_gmres_attempt(p, Precision::FP16, o);
  ASSERT_EQ(r.attempts.size(), 1u);
  const Attempt& a = r.attempts[0];
  EXPECT_LE(a.inner_iterations, (a.iterations + 1) * 2 * o.gmres_restart) << r.summary();
  EXPECT_LT(a.inner_iterations, a.iterations * o.gmres_max_inner) << r.summary();
}

TEST(Solve, GmresThatWouldOverrunItsBudgetEndsTheAttemptEarly) {
  // FP16 factors at cond 1e6 (n = 96, host model) converge with GMRES-IR (restart 25) within
  // the default budget. With a budget of 30 inner iterations, the rate of the first step's first
  // 16 iterations (~39 iterations predicted in all) says it would overrun: the attempt ends there,
  // inside the first restart cycle (its correction applied), and the FP64 fallback finishes.
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP16;
  o.refinement = Refinement::Gmres;
  o.gmres_restart = 25;
  Problem probe(geo(1e6, 5), 96);
  o.fallback = false;
  const SolveReport unlimited = solve(ctx, probe.A(), probe.B(), probe.X(), o);
  expect_converged_and_accurate(probe, unlimited);

  Problem p(geo(1e6, 5), 96);
  o.fallback = true;
  o.gmres_max_inner = 30;
  o.probe_pivot_ratio = 0;  // n > gmres_max_inner: the probe would end the attempt before GMRES
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].stop, StopReason::TooSlow) << r.summary();
  EXPECT_EQ(r.attempts[0].iterations, 1) << r.summary();
  EXPECT_EQ(r.attempts[0].inner_iterations, 16 * int(p.k)) << r.summary();  // judged after 16 iterations
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.attempts[1].precision, Precision::FP64);
  EXPECT_NE(r.summary().find("too slow"), std::string::npos) << r.summary();
}

TEST(Solve, Bf16AndTf32FactorizationsConvergeWithGmresAndUnderAuto) {
  for (Precision prec : {Precision::BF16, Precision::TF32}) {
    SCOPED_TRACE(to_string(prec));
    Problem p(geo(1e2, 17), 64, 2);
    const SolveReport r = run(p, prec, Refinement::Gmres, false);
    expect_converged_and_accurate(p, r);
    ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
    EXPECT_EQ(r.attempts[0].refinement, Refinement::Gmres);
    Problem q(geo(1e2, 17), 64, 2);
    const SolveReport a = run(q, prec, Refinement::Auto, false);
    expect_converged_and_accurate(q, a);
    EXPECT_EQ(a.attempts[0].refinement, Refinement::Classic) << "Auto starts with classic IR";
    for (const Attempt& t : a.attempts) EXPECT_EQ(t.precision, prec) << a.summary();
  }
}

// Two attempts: classic IR that did not converge, then GMRES-IR at `precision` with the same
// factors (no second factorization).
void expect_classic_then_gmres_on_the_same_factors(const SolveReport& r, Precision precision) {
  ASSERT_EQ(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].refinement, Refinement::Classic);
  EXPECT_NE(r.attempts[0].stop, StopReason::Converged);
  EXPECT_EQ(r.attempts[1].precision, precision);
  EXPECT_EQ(r.attempts[1].refinement, Refinement::Gmres);
  EXPECT_EQ(r.attempts[1].factorization_seconds, 0.0) << "the factors are reused";
}

TEST(Solve, AutoRefinementOfFp16FactorsIsClassicUntilItStallsThenGmres) {
  // Cond 1e2: classic IR converges with the FP16 factors. Cond 1e6 (n = 96, host model): classic
  // IR stalls, and GMRES-IR with the same factors converges (Fp16NeedsGmresWhereClassicRefinementFails).
  Problem easy(geo(1e2, 5), 96);
  const SolveReport e = run(easy, Precision::FP16, Refinement::Auto, false);
  expect_converged_and_accurate(easy, e);
  ASSERT_EQ(e.attempts.size(), 1u) << e.summary();
  EXPECT_EQ(e.attempts[0].refinement, Refinement::Classic);

  Problem hard(geo(1e6, 5), 96);
  const SolveReport h = run(hard, Precision::FP16, Refinement::Auto, false);
  expect_converged_and_accurate(hard, h);
  expect_classic_then_gmres_on_the_same_factors(h, Precision::FP16);
}

TEST(Solve, AutoRefinementLeavesASlowlyContractingClassicRefinementForGmres) {
  // FP16 factors at cond 4e4 (n = 96, host model): classic IR contracts, but slowly, and no step
  // is bad (each one halves the backward error). Asked for classic, it runs into the iteration
  // limit (30 steps); under Refinement::Auto its rate over steps 3-5 predicts more than 15
  // further steps, and GMRES-IR with the same factors converges.
  Problem slow(geo(4e4, 3), 96);
  const SolveReport classic = run(slow, Precision::FP16, Refinement::Classic, false);
  EXPECT_FALSE(classic.converged) << classic.summary();
  ASSERT_EQ(classic.attempts.size(), 1u) << classic.summary();
  EXPECT_EQ(classic.attempts[0].stop, StopReason::MaxIterations) << classic.summary();

  // The LAPACK test, so that the count below is that of reaching it (StopTest::Attainable adds
  // the steps that polish a converged x).
  Problem same(geo(4e4, 3), 96);
  const SolveReport a = run(same, Precision::FP16, Refinement::Auto, false, true, StopTest::Lapack);
  expect_converged_and_accurate(same, a);
  expect_classic_then_gmres_on_the_same_factors(a, Precision::FP16);
  EXPECT_EQ(a.attempts[0].stop, StopReason::TooSlow) << a.summary();
  EXPECT_EQ(a.attempts[0].iterations, 5) << a.summary();
  EXPECT_LT(a.attempts[0].iterations + a.attempts[1].iterations + a.attempts[1].inner_iterations, 30) << a.summary();
}


TEST(Solve, AutoRefinementTriesGmresWithTheSameFactorsWhenClassicStalls) {
  // FP32 LU at cond 1e9: cond * u_32 > 1, so classic IR cannot contract, while GMRES-IR
  // preconditioned by the same LU converges. No refactorization happens in between.
  Problem p(geo(1e9, 4), 96);
  const SolveReport r = run(p, Precision::FP32, Refinement::Auto, false);
  expect_classic_then_gmres_on_the_same_factors(r, Precision::FP32);
  expect_converged_and_accurate(p, r);
}

TEST(Solve, GmresStepWithARelaxedTargetThatFailsNearTheStopTestIsRetriedWithTheTightTarget) {
  // FP32 LU, arith cond 1e10: classic IR stalls, the first GMRES-IR step comes close to the stop
  // test, and the next asks its inner solve only for the little reduction still needed. That
  // relaxed target bounds the preconditioned residual, not the backward error (cond(LU) apart),
  // and the step may miss; it must not end the attempt (which cost an FP64 LU before).
  TestMatrixSpec spec = geo(1e10, 1);
  spec.spectrum = Spectrum::Arith;
  Problem p(spec, 256);
  const SolveReport r = run(p, Precision::FP32, Refinement::Auto, true);
  expect_classic_then_gmres_on_the_same_factors(r, Precision::FP32);
  EXPECT_EQ(r.attempts[1].stop, StopReason::Converged) << r.summary();
  EXPECT_FALSE(r.fell_back) << r.summary();
  expect_converged_and_accurate(p, r);
}

TEST(Solve, GmresAttemptEndsAtAStepWhoseInnerSolveStagnated) {
  // fp16x3 LU, geo cond 1e10 (n = 512): restarted GMRES stagnates in every inner solve, and a step
  // cuts the backward error by a few times at most. Such a step ends the attempt (before, the
  // relaxed-target retry ran two more stagnating inner solves, 100 more GMRES iterations).
  Problem p(geo(1e10, 1), 512);
  SolveOptions o;
  o.block_size = 64;
  const SolveReport r = failing_gmres_attempt(p, Precision::Fp16x3, o);
  ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
  const Attempt& a = r.attempts[0];
  EXPECT_EQ(a.iterations, 1) << r.summary();
  EXPECT_LE(a.inner_iterations, o.gmres_restart + 16) << r.summary();
}

// The precisions of r's attempts in order, a GMRES retry with the same factors counted once.
std::vector<Precision> rungs_of(const SolveReport& r) {
  std::vector<Precision> rungs;
  for (const Attempt& a : r.attempts)
    if (rungs.empty() || rungs.back() != a.precision) rungs.push_back(a.precision);
  return rungs;
}

TEST(Solve, AutoEscalatesOneRungAtATimeAndReportsThePath) {
  Problem p(geo(1e12, 9), 96);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.auto_path = {Precision::FP16, Precision::FP32};
  o.block_size = 16;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(rungs_of(r), (std::vector<Precision>{Precision::FP16, Precision::FP32, Precision::FP64}))
      << "escalation goes up one step at a time: " << r.summary();
  EXPECT_EQ(r.attempts[1].precision, Precision::FP32)
      << "with FP32 left on the path, FP16's stalled classic IR escalates without a GMRES retry";
  EXPECT_TRUE(r.fell_back);
  EXPECT_GT(r.fallback_seconds, 0.0);
  for (std::size_t i = 0; i + 1 < r.attempts.size(); ++i) EXPECT_NE(r.attempts[i].stop, StopReason::Converged);
}

TEST(Solve, DefaultAutoTriesFp16x3WithGmresBeforeFallingBackToFp64) {
  Problem p(geo(1e12, 9), 96);
  const SolveReport r = run(p, Precision::Auto, Refinement::Auto);
  expect_converged_and_accurate(p, r);
  EXPECT_EQ(rungs_of(r), (std::vector<Precision>{Precision::Fp16x3, Precision::FP64})) << r.summary();
  ASSERT_EQ(r.attempts.size(), 3u) << r.summary();
  EXPECT_EQ(r.attempts[0].refinement, Refinement::Classic);
  EXPECT_EQ(r.attempts[1].refinement, Refinement::Gmres) << "FP64 is next: the same factors get GMRES first";
  EXPECT_TRUE(r.fell_back);
}

// SolveOptions::reuse_pivot_order: the FP64 fallback follows fp16x3's row order, pivoting only
// inside the diagonal blocks; its multipliers stay within the bound and it meets the stop test.
// With the option off it pivots fully.
TEST(Solve, Fp64FallbackReusesTheCheapRowOrderWhereItsMultipliersStaySmall) {
  for (const bool reuse : {true, false}) {
    Problem p(geo(1e12, 9), 96);
    Context ctx = Context::host_only();
    SolveOptions o;
    o.block_size = 16;
    o.reuse_pivot_order = reuse;
    const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
    SCOPED_TRACE(reuse ? "reuse" : "no reuse");
    expect_converged_and_accurate(p, r);
    ASSERT_GE(r.attempts.size(), 2u) << r.summary();
    ASSERT_EQ(r.attempts.back().precision, Precision::FP64) << r.summary();
    EXPECT_EQ(r.attempts.back().pivot_order, reuse ? PivotOrder::Reused : PivotOrder::Partial) << r.summary();
    if (reuse) {
      EXPECT_GT(r.attempts.back().largest_multiplier, 0.0) << "measured for the reused order";
      EXPECT_LE(r.attempts.back().largest_multiplier, kReusedOrderMaxMultiplier);
    }
    for (std::size_t i = 0; i + 1 < r.attempts.size(); ++i)
      EXPECT_EQ(r.attempts[i].pivot_order, PivotOrder::Partial) << "only FP64 reuses an order";
  }
}

// A row order the FP16 LU chose by rounding error (test_problems::misleading_order_matrix) would give
// FP64 multipliers near 1e10. Its pivots after the first block lie below the FP16 LU's rounding
// error (trusted_order_columns), so the FP64 LU follows the order for that block only, pivots
// partially after it, and converges with no multiplier above 1.
TEST(Solve, Fp64FallbackFollowsACheapRowOrderOnlyWhileItsPivotsStandAboveItsRoundingError) {
  const std::int64_t b = 32, n = 3 * b;
  Problem p(geo(1e2), n);
  p.a = test_problems::misleading_order_matrix(b, 5);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP16;
  o.block_size = int(b);
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts.front().precision, Precision::FP16);
  EXPECT_EQ(r.attempts.back().precision, Precision::FP64);
  EXPECT_EQ(r.attempts.back().pivot_order, PivotOrder::Reused) << r.summary();
  EXPECT_EQ(r.attempts.back().reused_columns, b) << r.summary();
  EXPECT_LE(r.attempts.back().largest_multiplier, 1.0) << r.summary();
}

// The probe (SolveOptions::probe_pivot_ratio): FP16 factors of a geo cond 1e8 matrix (cond x u =
// 5e4) are far off in many directions, and with n above gmres_max_inner the attempt ends before
// any refinement; FP64 finishes. With the probe off, the same attempt refines first.
TEST(Solve, WeakCheapFactorsEndTheAttemptBeforeRefinement) {
  Problem p(geo(1e8, 9), 256);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP16;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 2u) << r.summary();
  const Attempt& cheap = r.attempts[0];
  EXPECT_EQ(cheap.stop, StopReason::WeakFactors) << r.summary();
  EXPECT_GE(cheap.probe_estimate, kWeakFactorsProbe) << r.summary();
  EXPECT_GT(cheap.pivot_ratio, 0.0);
  EXPECT_EQ(cheap.iterations, 0);
  EXPECT_EQ(cheap.inner_iterations, 0);
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.attempts[1].precision, Precision::FP64);
  EXPECT_LT(r.attempts[1].probe_estimate, 0.0);  // FP64 factors are never probed
  EXPECT_NE(r.summary().find("probe"), std::string::npos) << r.summary();

  Problem q(geo(1e8, 9), 256);
  o.probe_pivot_ratio = 0;
  const SolveReport unprobed = solve(ctx, q.A(), q.B(), q.X(), o);
  expect_converged_and_accurate(q, unprobed);
  ASSERT_FALSE(unprobed.attempts.empty());
  EXPECT_LT(unprobed.attempts[0].probe_estimate, 0.0);
  EXPECT_NE(unprobed.attempts[0].stop, StopReason::WeakFactors);
  EXPECT_GT(unprobed.attempts[0].iterations, 0) << unprobed.summary();
}

// One tiny singular value (cluster1, cond 1e10) puts one far-off direction into FP32 factors:
// the probe, asked to run (probe_pivot_ratio INFINITY), stays small and refinement converges with
// the FP32 factors (classic IR stalls on that direction; GMRES-IR resolves it).
TEST(Solve, OneOutlyingDirectionDoesNotFailTheProbe) {
  TestMatrixSpec spec = geo(1e10, 4);
  spec.spectrum = Spectrum::Cluster1;
  Problem p(spec, 256);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP32;
  o.probe_pivot_ratio = INFINITY;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  for (const Attempt& a : r.attempts) EXPECT_EQ(a.precision, Precision::FP32) << r.summary();
  EXPECT_GE(r.attempts[0].probe_estimate, 0.0) << r.summary();
  EXPECT_LT(r.attempts[0].probe_estimate, 0.01 * kWeakFactorsProbe) << r.summary();
  EXPECT_FALSE(r.fell_back);
}

// The probe's estimate against (LU)^-1 A - I formed column by column (the factors applied as
// refinement applies them) and its SVD: a lower bound on the 4th singular value, near it where
// many singular values are large, far below the largest where one direction stands out.
TEST(Solve, ProbeIsALowerBoundOnTheFourthSingularValueOfTheFactorsError) {
  struct Case {
    const char* name;
    Spectrum spectrum;
    double cond;
    Precision precision;
  };
  for (const Case& c : {Case{"fp16 geo 1e6", Spectrum::Geo, 1e6, Precision::FP16},
                        Case{"fp32 cluster1 1e10", Spectrum::Cluster1, 1e10, Precision::FP32}}) {
    SCOPED_TRACE(c.name);
    TestMatrixSpec spec = geo(c.cond, 4);
    spec.spectrum = c.spectrum;
    const std::int64_t n = 128, k = solvers_detail::kProbeColumns;
    Problem p(spec, n);
    Context ctx = Context::host_only();
    const auto engine = solvers_detail::make_host_engine(ctx, p.A(), 0);
    const auto factored = engine->factor({FactorKind::Lu, c.precision, c.precision == Precision::FP16, false, 0.0});
    ASSERT_EQ(factored.status, StopReason::Converged) << "zero pivot in column " << factored.zero_pivot_column;
    Eigen::MatrixXd e = Eigen::Map<const Eigen::MatrixXd>(p.a.data(), n, n);
    for (std::int64_t j = 0; j < n; j += k)
      engine->apply_inverse(host_view(e.data() + j * n, n, std::min(k, n - j), n));
    e -= Eigen::MatrixXd::Identity(n, n);
    const Eigen::VectorXd sv = Eigen::JacobiSVD<Eigen::MatrixXd>(e).singularValues();
    const double probe = solvers_detail::probe_factors(*engine);
    EXPECT_LE(probe, sv(k - 1) * (1 + 1e-10)) << "sigma_1 " << sv(0) << ", sigma_4 " << sv(k - 1);
    if (c.spectrum == Spectrum::Geo) {
      EXPECT_GE(sv(3 * k), 1.0) << "many large singular values";
      EXPECT_GE(probe, 0.1 * sv(k - 1)) << "sigma_4 " << sv(k - 1);
    } else {
      EXPECT_GE(sv(0), 10.0) << "one outlying direction";
      EXPECT_LT(probe, 1e-3) << "sigma_1 " << sv(0) << ", sigma_4 " << sv(k - 1);
    }
  }
}

TEST(Solve, AutoStaysCheapWhenTheMatrixIsWellConditioned) {
  Problem p(geo(1e2, 21), 96);
  const SolveReport r = run(p, Precision::Auto, Refinement::Auto);
  expect_converged_and_accurate(p, r);
  ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::Fp16x3);
  EXPECT_FALSE(r.fell_back);
}

TEST(Solve, AutoFactorsMatricesBelowAutoMinNInFp64AtOnce) {
  Problem p(geo(1e2, 21), 96);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.auto_min_n = 97;
  const SolveReport small = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, small);
  ASSERT_EQ(small.attempts.size(), 1u) << small.summary();
  EXPECT_EQ(small.attempts[0].precision, Precision::FP64);
  EXPECT_FALSE(small.fell_back);
  o.auto_min_n = 96;  // n >= auto_min_n: the cheap path
  const SolveReport large = solve(ctx, p.A(), p.B(), p.X(), o);
  EXPECT_EQ(large.attempts.at(0).precision, o.auto_path.front()) << large.summary();
  o.factorization = Precision::FP32;  // an explicit precision is not affected
  o.auto_min_n = 1000;
  const SolveReport explicit_precision = solve(ctx, p.A(), p.B(), p.X(), o);
  EXPECT_EQ(explicit_precision.attempts.at(0).precision, Precision::FP32) << explicit_precision.summary();
}

TEST(Solve, AutoFollowsTheConfiguredPath) {
  Problem p(geo(1e12, 9), 96);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.auto_path = {Precision::FP32};
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  expect_converged_and_accurate(p, r);
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts.front().precision, Precision::FP32);
  EXPECT_EQ(r.attempts.back().precision, Precision::FP64);
  for (const Attempt& a : r.attempts) EXPECT_NE(a.precision, Precision::FP16) << r.summary();

  Problem q(geo(1e2, 21), 96);
  o.auto_path = {Precision::Tf32tf32, Precision::FP32};
  const SolveReport cheap = solve(ctx, q.A(), q.B(), q.X(), o);
  expect_converged_and_accurate(q, cheap);
  ASSERT_EQ(cheap.attempts.size(), 1u) << cheap.summary();
  EXPECT_EQ(cheap.attempts[0].precision, Precision::Tf32tf32);
}

TEST(Solve, FailureIsReportedWhenFallbackIsOff) {
  Problem p(geo(1e12, 4), 96);
  const SolveReport r = run(p, Precision::FP32, Refinement::Classic, false);
  EXPECT_FALSE(r.converged);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_NE(r.attempts[0].stop, StopReason::Converged);
  EXPECT_FALSE(r.fell_back);
  EXPECT_LE(r.iterations, 5) << "failure is detected early, not after the iteration limit: " << r.summary();
}

// The normwise backward error of column j of x for p.
double backward_error_of(const Problem& p, const std::vector<double>& x, std::int64_t j = 0) {
  const Eigen::Map<const Eigen::MatrixXd> a(p.a.data(), p.n, p.n);
  const Eigen::Map<const Eigen::VectorXd> b(p.b.data() + j * p.n, p.n), xj(x.data() + j * p.n, p.n);
  const double norm_a = a.cwiseAbs().rowwise().sum().maxCoeff();
  return (b - a * xj).cwiseAbs().maxCoeff() / (norm_a * xj.cwiseAbs().maxCoeff() + b.cwiseAbs().maxCoeff());
}

// The true solution of p's stored system (column 0): reference_solve, a long double LU refined
// with exact residuals, the exact solution to ~2^-62 wherever cond(A) u_longdouble << 1. (A right
// hand side b = fl(A x_true) is not solved by x_true itself: that differs by up to cond(A) u.)
std::vector<long double> true_solution(const Problem& p) {
  const mixsolve::testing::ReferenceSolution ref = mixsolve::testing::reference_solve(
      Eigen::Map<const Eigen::MatrixXd>(p.a.data(), p.n, p.n), Eigen::Map<const Eigen::MatrixXd>(p.b.data(), p.n, 1));
  EXPECT_TRUE(ref.converged) << "the reference refinement did not converge in " << ref.steps << " steps";
  return std::vector<long double>(ref.x.data(), ref.x.data() + p.n);
}

// ||x - x_star||_inf / ||x_star||_inf.
double forward_error_of(const std::vector<double>& x, const std::vector<long double>& x_star) {
  long double d = 0, t = 0;
  for (std::size_t i = 0; i < x_star.size(); ++i) {
    d = std::max(d, std::fabs(x[i] - x_star[i]));
    t = std::max(t, std::fabs(x_star[i]));
  }
  return double(d / t);
}

// The host engine's residuals (RefinementSpace::residual) within their precision's error bound
// (tests/residual_accuracy.hpp) on residuals that are all cancellation, A well and badly scaled;
// the FP64 residual misses the double-double bound there (the check can tell the two apart).
TEST(Solve, ResidualsAreWithinTheErrorBoundOfTheirPrecision) {
  using DD = ResidualPrecision;
  Context ctx = Context::host_only();
  const std::int64_t n = 203, k = 3;
  for (bool scaled_rows : {false, true}) {
    SCOPED_TRACE(scaled_rows ? "scaled rows" : "uniform");
    const Eigen::MatrixXd a = mixsolve::testing::residual_test_matrix(n, scaled_rows, 11);
    Eigen::MatrixXd x(n, k);
    fill_random(host_view(x.data(), n, k, n), RandomSpec::uniform(-1, 1, 12));
    const auto engine = solvers_detail::make_host_engine(ctx, host_view<const double>(a.data(), n, n, n), 0);
    EXPECT_LE(mixsolve::testing::residual_error_ratio(*engine, a, x, DD::DoubleDouble, DD::DoubleDouble), 1.0);
    EXPECT_LE(mixsolve::testing::residual_error_ratio(*engine, a, x, DD::Fp64, DD::Fp64), 1.0);
    EXPECT_GT(mixsolve::testing::residual_error_ratio(*engine, a, x, DD::Fp64, DD::DoubleDouble), 10.0);
  }
}

// ResidualPrecision::Auto takes double-double residuals for up to kDoubleDoubleResidualMaxColumns
// right-hand sides and FP64 ones beyond, and the report says which; an explicit choice holds for
// any number of columns. Every column converges either way.
TEST(Solve, AutoResidualPrecisionFollowsTheRightHandSidesAndTheReportSaysWhich) {
  Context ctx = Context::host_only();
  const std::int64_t many = kDoubleDoubleResidualMaxColumns + 1;
  for (std::int64_t k : {std::int64_t(1), kDoubleDoubleResidualMaxColumns, many})
    for (ResidualPrecision asked : {ResidualPrecision::Auto, ResidualPrecision::DoubleDouble, ResidualPrecision::Fp64}) {
      SCOPED_TRACE(std::to_string(k) + " columns, " + to_string(asked));
      Problem p(geo(1e6, 8), 64, k);
      SolveOptions o;
      o.residual_precision = asked;
      o.block_size = 16;
      const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
      EXPECT_TRUE(r.converged) << r.summary();
      const ResidualPrecision expected =
          asked != ResidualPrecision::Auto ? asked
          : k <= kDoubleDoubleResidualMaxColumns ? ResidualPrecision::DoubleDouble
                                                 : ResidualPrecision::Fp64;
      EXPECT_EQ(r.residual_precision, expected) << r.summary();
    }
}

// StopTest::Attainable (the default) against the FP64 partial-pivoting LU (fp64_lu_solution) on
// the same problem, b = A x_true: backward and forward errors (against the stored system's true
// solution) within 10x of the FP64 LU's (floored at the unit roundoff, where the FP64 LU's error
// is rounding noise below it), under auto (the fp16x3 model, escalating where it must).
// StopTest::Lapack converges too, in no more steps.
TEST(Solve, DefaultStopTestIsAsAccurateAsTheFp64Lu) {
  const double u = 0x1p-53;
  for (MatrixFamily f : {MatrixFamily::Svd, MatrixFamily::Poev, MatrixFamily::Heev})
    for (double cond : {1e2, 1e6, 1e10}) {
      TestMatrixSpec spec = geo(cond, 21);
      spec.family = f;
      Problem p(spec, 151);
      std::vector<double> x_true(p.n);
      fill_random(host_view(x_true.data(), p.n, 1, p.n), RandomSpec::uniform(-1, 1, 77));
      const Eigen::Map<const Eigen::MatrixXd> a(p.a.data(), p.n, p.n);
      Eigen::Map<Eigen::VectorXd>(p.b.data(), p.n) = a * Eigen::Map<const Eigen::VectorXd>(x_true.data(), p.n);
      const Eigen::MatrixXd lu_x = fp64_lu_solution(p, 1);
      const std::vector<double> lu_x_v(lu_x.data(), lu_x.data() + p.n);
      const std::vector<long double> x_star = true_solution(p);
      const double lu_berr = backward_error_of(p, lu_x_v), lu_ferr = forward_error_of(lu_x_v, x_star);
      SCOPED_TRACE(spec.name());
      Context ctx = Context::host_only();
      SolveOptions o;
      o.block_size = 16;
      const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
      ASSERT_TRUE(r.converged) << r.summary();
      EXPECT_LE(backward_error_of(p, p.x), 10 * std::max(lu_berr, u)) << r.summary();
      EXPECT_LE(forward_error_of(p.x, x_star), 10 * std::max(lu_ferr, u)) << r.summary();
      o.stop_test = StopTest::Lapack;
      const SolveReport lapack = solve(ctx, p.A(), p.B(), p.X(), o);
      EXPECT_TRUE(lapack.converged) << lapack.summary();
      EXPECT_TRUE(meets_stop_test(p, 0));
      EXPECT_LE(lapack.iterations, r.iterations) << lapack.summary() << r.summary();
    }
}

// The same on every application family (matgen/application_matrices.hpp) at n = 151 and 302,
// under auto with its fallback: the normwise backward error within 10x of the FP64 LU's, and
// the forward error within 10x where the solution is determined (not
// for Hilbert, numerically singular, nor `rankdef`, whose consistent system has many solutions).
// The badly scaled families (rows and columns of `scaled` by 10^+-12, the columns of `graded`)
// are judged componentwise (SolveReport::componentwise_backward_error): for `scaled` the
// componentwise backward error and the residual's norm are compared instead of the normwise
// measure, as the FP64 LU's normwise one owes its size to an x whose norm is 10^3 - 10^5 times
// too large.
TEST(Solve, DefaultStopTestIsAsAccurateAsTheFp64LuOnEveryApplicationFamily) {
  const double u = 0x1p-53;
  for (std::int64_t n : {151, 302}) {
    for (ApplicationFamily family : application_families()) {
      const std::string name = to_string(family);
      Problem p(geo(1e2, 1), n);
      ApplicationSpec spec;
      spec.family = family;
      generate_application_matrix(spec, host_view(p.a.data(), n, n, n));
      std::vector<double> x_true(n);
      fill_random(host_view(x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, 78));
      const Eigen::Map<const Eigen::MatrixXd> a(p.a.data(), n, n);
      Eigen::Map<Eigen::VectorXd>(p.b.data(), n) = a * Eigen::Map<const Eigen::VectorXd>(x_true.data(), n);
      const Eigen::MatrixXd lu_x = fp64_lu_solution(p, 1);
      const std::vector<double> lu_x_v(lu_x.data(), lu_x.data() + n);
      SCOPED_TRACE(name + ", n = " + std::to_string(n));
      Context ctx = Context::host_only();
      SolveOptions o;
      o.block_size = 16;
      const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
      for (double v : p.x) ASSERT_TRUE(std::isfinite(v)) << r.summary();
      if (name != "hilbert" && name != "rankdef") {
        const std::vector<long double> x_star = true_solution(p);
        EXPECT_LE(forward_error_of(p.x, x_star), 10 * std::max(forward_error_of(lu_x_v, x_star), u)) << r.summary();
      }
      const bool badly_scaled = name == "scaled" || name == "graded";
      EXPECT_EQ(r.componentwise_backward_error > 0, badly_scaled) << r.summary();
      if (name != "scaled") {
        EXPECT_LE(backward_error_of(p, p.x), 10 * std::max(backward_error_of(p, lu_x_v), u)) << r.summary();
        continue;
      }
      const auto componentwise = [&](const std::vector<double>& x) {
        return componentwise_backward_error(host_view<const double>(p.a.data(), n, n, n), x.data(), p.b.data());
      };
      const auto residual_norm = [&](const std::vector<double>& x) {
        return (Eigen::Map<const Eigen::VectorXd>(p.b.data(), n) - a * Eigen::Map<const Eigen::VectorXd>(x.data(), n))
            .cwiseAbs()
            .maxCoeff();
      };
      EXPECT_LE(componentwise(p.x), 10 * std::max(componentwise(lu_x_v), u)) << r.summary();
      // The report's value reads the engine's residual, this one its own: at the floor, where the
      // residual is its own rounding, they agree to a small factor.
      EXPECT_LE(r.componentwise_backward_error, 4 * std::max(componentwise(p.x), u)) << r.summary();
      EXPECT_GE(4 * r.componentwise_backward_error, std::min(componentwise(p.x), u)) << r.summary();
      EXPECT_LE(residual_norm(p.x), 10 * residual_norm(lu_x_v)) << r.summary();
      // The scaled matrix's cheap LU equilibrated rows and columns: its row order is not A's
      // (trusted_order_columns), and an FP64 LU that follows pivots partially.
      if (r.attempts.back().precision == Precision::FP64)
        EXPECT_EQ(r.attempts.back().pivot_order, PivotOrder::Partial) << r.summary();
    }
  }
}

// Matrices for the near-diagonal screen (SolveOptions::fp16_when_near_diagonal), n x n
// column-major: an HPL-MxP matrix (random, dominant diagonal: theta ~ 2.3 / sqrt(n)); a
// diagonally dominant one whose off-diagonal part is the constant -1/2 (every column's
// ||B e_j|| ~ 1 / sqrt(n) small, yet theta ~ 1: the power iteration must find its one large
// singular value); a geo matrix (no dominant diagonal). The tests take n = 640, where the HPL-MxP
// matrix's theta (~0.09) lies below the screen's bound (1/8).
std::vector<double> hpl_mxp_matrix(std::int64_t n) {
  std::vector<double> a(n * n);
  ApplicationSpec spec;
  spec.family = ApplicationFamily::HplMxp;
  generate_application_matrix(spec, host_view(a.data(), n, n, n));
  return a;
}
std::vector<double> constant_off_diagonal_matrix(std::int64_t n) {
  std::vector<double> a(n * n, -0.5);
  for (std::int64_t j = 0; j < n; ++j) a[j + j * n] = 0.5 * double(n - 1) + 0.5;
  return a;
}
// ||D^-1 (A - D)||_2 by Eigen's SVD.
double exact_near_diagonal_norm(const std::vector<double>& a, std::int64_t n) {
  Eigen::MatrixXd b = Eigen::Map<const Eigen::MatrixXd>(a.data(), n, n);
  const Eigen::VectorXd d = b.diagonal();
  b.diagonal().setZero();
  b = d.cwiseInverse().asDiagonal() * b;
  const Eigen::MatrixXd gram = b.transpose() * b;
  return std::sqrt(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff());
}

// The screen's estimate is a lower bound on theta = ||D^-1 (A - D)||_2; where the matrix is near
// its diagonal it is within 2x of theta; it stops above the bound it is given once a lower bound
// passes that (the geo matrix after one column), and a zero diagonal gives infinity.
TEST(Solve, NearDiagonalScreenIsALowerBoundOnTheScaledOffDiagonalNorm) {
  const std::int64_t n = 640;
  Context ctx = Context::host_only();
  const auto estimate_of = [&](const std::vector<double>& a, double reject_above) {
    const auto engine = solvers_detail::make_host_engine(ctx, host_view<const double>(a.data(), n, n, n), 0);
    return solvers_detail::near_diagonal_estimate(*engine, reject_above);
  };
  const std::vector<double> hpl = hpl_mxp_matrix(n), constant = constant_off_diagonal_matrix(n);
  Problem g(geo(1e2, 5), n);
  for (const auto& [name, a] : {std::pair<const char*, const std::vector<double>&>{"hpl_mxp", hpl},
                                {"constant", constant}, {"geo", g.a}}) {
    SCOPED_TRACE(name);
    const double theta = exact_near_diagonal_norm(a, n);
    const double full = estimate_of(a, INFINITY);  // no early stop: the whole power iteration
    EXPECT_LE(full, theta * (1 + 1e-12));
    EXPECT_GE(full, 0.5 * theta);
    const double screened = estimate_of(a, solvers_detail::kNearDiagonalMax);
    EXPECT_LE(screened, theta * (1 + 1e-12));
    EXPECT_EQ(screened <= solvers_detail::kNearDiagonalMax, theta <= solvers_detail::kNearDiagonalMax)
        << "theta " << theta << ", estimate " << screened;
  }
  EXPECT_LT(exact_near_diagonal_norm(hpl, n), solvers_detail::kNearDiagonalMax);
  EXPECT_GT(exact_near_diagonal_norm(constant, n), 0.9);
  std::vector<double> zero_pivot = hpl;
  zero_pivot[7 + 7 * n] = 0;
  EXPECT_EQ(estimate_of(zero_pivot, INFINITY), INFINITY);
}

// Under Auto an LU whose matrix is near its diagonal tries FP16 before fp16x3 and converges there
// with FP64 accuracy; the report carries the screen's estimate. Where the screen rejects A (a
// dominant diagonal with a large off-diagonal singular value), with the option off, or where the
// path starts at FP16 already, the path is the configured one.
// The n x n problem A x = b with the given A and b = A x for x uniform in [-1, 1].
Problem problem_with_matrix(const std::vector<double>& a, std::int64_t n) {
  Problem p(geo(1e2, 1), n);
  p.a = a;
  std::vector<double> x_true(n);
  fill_random(host_view(x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, 91));
  Eigen::Map<Eigen::VectorXd>(p.b.data(), n) =
      Eigen::Map<const Eigen::MatrixXd>(p.a.data(), n, n) * Eigen::Map<const Eigen::VectorXd>(x_true.data(), n);
  return p;
}

TEST(Solve, AutoTriesFp16FirstWhereTheMatrixIsNearItsDiagonal) {
  const std::int64_t n = 640;
  const auto problem_of = [&](const std::vector<double>& a) { return problem_with_matrix(a, n); };
  Context ctx = Context::host_only();
  SolveOptions o;
  o.block_size = 16;
  Problem hpl = problem_of(hpl_mxp_matrix(n));
  const SolveReport r = solve(ctx, hpl.A(), hpl.B(), hpl.X(), o);
  expect_converged_and_accurate(hpl, r);
  ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::FP16) << r.summary();
  // In A's own order, pivoting inside the diagonal blocks: a column-dominant A keeps |l| < 1.
  EXPECT_EQ(r.attempts[0].pivot_order, PivotOrder::DiagonalBlocks) << r.summary();
  EXPECT_GT(r.attempts[0].largest_multiplier, 0.0);
  EXPECT_LT(r.attempts[0].largest_multiplier, 1.0);
  EXPECT_NE(r.summary().find("pivoting inside the diagonal blocks"), std::string::npos) << r.summary();
  EXPECT_GT(r.near_diagonal_estimate, 0.0);
  EXPECT_LE(r.near_diagonal_estimate, solvers_detail::kNearDiagonalMax);
  EXPECT_NE(r.summary().find("near-diagonal screen"), std::string::npos) << r.summary();
  const Eigen::MatrixXd lu_x = fp64_lu_solution(hpl, 1);
  EXPECT_LE(backward_error_of(hpl, hpl.x), 10 * std::max(backward_error_of(hpl, std::vector<double>(lu_x.data(), lu_x.data() + n)), 0x1p-53));

  Problem constant = problem_of(constant_off_diagonal_matrix(n));
  const SolveReport rejected = solve(ctx, constant.A(), constant.B(), constant.X(), o);
  expect_converged_and_accurate(constant, rejected);
  EXPECT_EQ(rejected.attempts.at(0).precision, Precision::Fp16x3) << rejected.summary();
  EXPECT_GT(rejected.near_diagonal_estimate, solvers_detail::kNearDiagonalMax);

  SolveOptions off = o;
  off.fp16_when_near_diagonal = false;
  const SolveReport unscreened = solve(ctx, hpl.A(), hpl.B(), hpl.X(), off);
  expect_converged_and_accurate(hpl, unscreened);
  EXPECT_EQ(unscreened.attempts.at(0).precision, Precision::Fp16x3) << unscreened.summary();
  EXPECT_EQ(unscreened.near_diagonal_estimate, -1.0);

  SolveOptions from_fp16 = o;
  from_fp16.auto_path = {Precision::FP16, Precision::FP32};
  const SolveReport configured = solve(ctx, hpl.A(), hpl.B(), hpl.X(), from_fp16);
  EXPECT_EQ(rungs_of(configured).front(), Precision::FP16) << configured.summary();
  EXPECT_EQ(configured.near_diagonal_estimate, -1.0) << "a path that starts at FP16 needs no screen";
  SolveOptions explicit_precision = o;
  explicit_precision.factorization = Precision::Fp16x3;
  const SolveReport chosen = solve(ctx, hpl.A(), hpl.B(), hpl.X(), explicit_precision);
  EXPECT_EQ(chosen.attempts.at(0).precision, Precision::Fp16x3);
  EXPECT_EQ(chosen.attempts.at(0).pivot_order, PivotOrder::Partial) << "only the screen's FP16 LU";
}

// Pivoting inside the diagonal blocks (FactorRequest::diagonal_blocks, here forced on every cheap
// LU) is checked: on a matrix whose leading block is tiny beside the rows below
// (test_problems::exchanged_halves_matrix) its multipliers exceed kReusedOrderMaxMultiplier, and
// the LU starts over with partial pivoting, FP64-accurate, both in the report. Where the check
// passes the factors need no interchange beyond the blocks: the LU of a dominant-diagonal matrix
// whose blocks have their rows reversed converges in A's own order in at most one step more than
// with partial pivoting. Tuning never: the screen's FP16 LU pivots partially.
TEST(Solve, DiagonalBlockPivotingFallsBackToPartialPivotingWhereItsCheckFails) {
  const ScopedTuning restore_tuning;
  using DiagonalBlockPivoting = solvers_detail::Tuning::DiagonalBlockPivoting;
  solvers_detail::tuning().diagonal_block_pivoting = DiagonalBlockPivoting::Always;
  const std::int64_t n = 98;  // 7 blocks of 16, the last one short
  Context ctx = Context::host_only();
  SolveOptions o;
  o.block_size = 16;
  o.fallback = false;
  for (const Precision p : {Precision::FP16, Precision::Fp16x3}) {
    o.factorization = p;
    Problem exchanged = problem_with_matrix(test_problems::exchanged_halves_matrix(n, 95), n);
    const SolveReport r = solve(ctx, exchanged.A(), exchanged.B(), exchanged.X(), o);
    expect_converged_and_accurate(exchanged, r);
    ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
    EXPECT_EQ(r.attempts[0].pivot_order, PivotOrder::DiagonalBlocksRejected) << r.summary();
    EXPECT_FALSE(r.attempts[0].largest_multiplier <= kReusedOrderMaxMultiplier) << r.summary();
    EXPECT_NE(r.summary().find("rejected, then partial pivoting"), std::string::npos) << r.summary();

    // A column-dominant matrix with every block's rows reversed: each block column needs its
    // interchanges, all inside the diagonal block, and the factors must precondition nearly as
    // partial pivoting's do: at most one refinement step more (L21 through the FP16 product
    // carries u_16 |L21| where partial pivoting's FP32 L21 leaves u_16 |L21| |U12| in the Schur
    // complements: FP16's first backward error here 9.7e-6 against 1.1e-6; wrong multipliers
    // would cost many steps more).
    Problem reversed = problem_with_matrix(test_problems::rows_reversed_within_blocks(hpl_mxp_matrix(n), n, 16), n);
    const SolveReport in_order = solve(ctx, reversed.A(), reversed.B(), reversed.X(), o);
    expect_converged_and_accurate(reversed, in_order);
    ASSERT_EQ(in_order.attempts.size(), 1u) << in_order.summary();
    EXPECT_EQ(in_order.attempts[0].pivot_order, PivotOrder::DiagonalBlocks) << in_order.summary();
    EXPECT_LT(in_order.attempts[0].largest_multiplier, 1.0) << in_order.summary();
    solvers_detail::tuning().diagonal_block_pivoting = DiagonalBlockPivoting::Never;
    const SolveReport partial = solve(ctx, reversed.A(), reversed.B(), reversed.X(), o);
    solvers_detail::tuning().diagonal_block_pivoting = DiagonalBlockPivoting::Always;
    EXPECT_EQ(partial.attempts.at(0).pivot_order, PivotOrder::Partial) << partial.summary();
    EXPECT_LE(in_order.attempts[0].iterations, partial.attempts.at(0).iterations + 1)
        << in_order.summary() << partial.summary();
    // With L21 on fp16x3 (Tuning::fp32_accurate_l21) the factors precondition as partial
    // pivoting's: no step more.
    solvers_detail::tuning().fp32_accurate_l21 = true;
    const SolveReport accurate = solve(ctx, reversed.A(), reversed.B(), reversed.X(), o);
    solvers_detail::tuning().fp32_accurate_l21 = false;
    expect_converged_and_accurate(reversed, accurate);
    EXPECT_EQ(accurate.attempts.at(0).pivot_order, PivotOrder::DiagonalBlocks) << accurate.summary();
    EXPECT_LE(accurate.attempts.at(0).iterations, partial.attempts.at(0).iterations)
        << accurate.summary() << partial.summary();
  }
  solvers_detail::tuning().diagonal_block_pivoting = DiagonalBlockPivoting::Never;
  const std::int64_t screened_n = 640;  // where the screen passes hpl_mxp (0.16 at n = 98)
  Problem hpl = problem_with_matrix(hpl_mxp_matrix(screened_n), screened_n);
  SolveOptions screened;
  screened.block_size = 16;
  const SolveReport partial = solve(ctx, hpl.A(), hpl.B(), hpl.X(), screened);
  ASSERT_FALSE(partial.attempts.empty());
  EXPECT_EQ(partial.attempts[0].precision, Precision::FP16) << partial.summary();
  EXPECT_EQ(partial.attempts[0].pivot_order, PivotOrder::Partial) << partial.summary();
}

// Several right-hand sides, each with its own best iterate: with FP16 factors of an
// ill-conditioned matrix and classic IR alone (no fallback) every returned column is at least as
// good as that column's first solve (Refinement::None on the same factors); under auto on a
// well-conditioned matrix every column meets the test and stays within 10x of the FP64 LU's
// backward error, after the polishing steps of StopTest::Attainable.
TEST(Solve, EachRightHandSideGetsItsOwnBestIterate) {
  const std::int64_t k = 3;
  Problem p(geo(1e10, 6), 96, k);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP16;
  o.fallback = false;
  o.block_size = 16;
  o.refinement = Refinement::None;
  const SolveReport first = solve(ctx, p.A(), p.B(), p.X(), o);
  ASSERT_EQ(first.iterations, 0) << first.summary();
  const std::vector<double> x0 = p.x;
  o.refinement = Refinement::Classic;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  double worst = 0;
  for (std::int64_t j = 0; j < k; ++j) {
    EXPECT_LE(backward_error_of(p, p.x, j), backward_error_of(p, x0, j)) << "column " << j << "\n" << r.summary();
    worst = std::max(worst, backward_error_of(p, p.x, j));
  }
  EXPECT_NEAR(r.backward_error, worst, 1e-3 * worst) << r.summary();

  Problem q(geo(1e3, 7), 120, k);
  const SolveReport a = solve(ctx, q.A(), q.B(), q.X());
  ASSERT_TRUE(a.converged) << a.summary();
  for (std::int64_t j = 0; j < k; ++j) {
    EXPECT_TRUE(meets_stop_test(q, j)) << "column " << j;
    EXPECT_LE(backward_error_of(q, q.x, j), 10 * std::max(fp64_backward_error(q), 0x1p-53)) << a.summary();
  }
}

// Cheap factors that are exact for A (a diagonal matrix of 3s, whose 1/3 FP32 cannot hold, and
// the identity): the first solve is already at FP64's rounding level, so no step may halve its
// backward error; a zero residual, or a step that leaves x unchanged, proves the factors, and the
// cheap attempt converges without an FP64 LU, for one and several right-hand sides.
TEST(Solve, ExactCheapFactorsConvergeWithoutTheFp64Fallback) {
  for (double diagonal : {3.0, 1.0})
    for (std::int64_t k : {1, 3}) {
      const std::int64_t n = 64;
      Problem p(geo(1e2, 2), n, k);
      std::fill(p.a.begin(), p.a.end(), 0.0);
      for (std::int64_t i = 0; i < n; ++i) p.a[i + i * n] = diagonal;
      Context ctx = Context::host_only();
      SolveOptions o;
      o.auto_min_n = 0;
      const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
      SCOPED_TRACE("diagonal " + std::to_string(diagonal) + ", k = " + std::to_string(k));
      EXPECT_TRUE(r.converged) << r.summary();
      ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
      EXPECT_EQ(r.attempts[0].stop, StopReason::Converged) << r.summary();
      EXPECT_FALSE(r.fell_back);
      for (std::int64_t j = 0; j < k; ++j) EXPECT_TRUE(meets_stop_test(p, j));
    }
}

// A refinement that makes its iterate worse (classic IR with FP16 factors of an ill-conditioned
// matrix, no fallback) returns the best iterate it saw, says so, and reports its backward error.
TEST(Solve, ReturnsTheBestIterateWhereRefinementMadeItWorse) {
  Problem p(geo(1e10, 5), 96);
  const SolveReport r = run(p, Precision::FP16, Refinement::Classic, false);
  ASSERT_FALSE(r.converged) << r.summary();
  const double best = *std::min_element(r.backward_error_history.begin(), r.backward_error_history.end());
  EXPECT_EQ(r.backward_error, best) << r.summary();
  EXPECT_EQ(r.returned_earlier_iterate, best < r.backward_error_history.back()) << r.summary();
  EXPECT_NEAR(backward_error_of(p, p.x), best, 1e-3 * best) << "the returned x is that iterate";
  EXPECT_GT(r.stop_test_backward_error, 0);
  EXPECT_NE(r.summary().find("does NOT meet"), std::string::npos) << r.summary();
}

// A numerically singular matrix (Hilbert, cond ~1e70 at n = 48): whatever the refinement does,
// the returned x is never worse than the FP64 LU's (backward error within 10x), and the report
// says whether it met the LAPACK test and how close it got.
TEST(Solve, NumericallySingularMatrixIsNeverWorseThanTheFp64Lu) {
  const std::int64_t n = 48;
  Problem p(geo(1e2, 1), n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) p.a[i + j * n] = 1.0 / double(i + j + 1);
  const double lu_berr = fp64_backward_error(p);
  for (Precision prec : {Precision::Auto, Precision::FP32, Precision::FP64}) {
    SCOPED_TRACE(to_string(prec));
    const SolveReport r = run(p, prec, Refinement::Auto);
    for (double v : p.x) ASSERT_TRUE(std::isfinite(v)) << r.summary();
    EXPECT_LE(backward_error_of(p, p.x), 10 * std::max(lu_berr, 0x1p-53)) << r.summary();
    EXPECT_LE(r.backward_error, 10 * std::max(lu_berr, 0x1p-53)) << r.summary();
    EXPECT_EQ(r.converged, meets_stop_test(p, 0)) << r.summary();
  }
}

// core/norms.hpp's componentwise backward error: max_i |r_i| / (|A| |x| + |b|)_i on 2 x 2 cases
// worked by hand, unchanged when a row of A and b is scaled by 2^40.
TEST(Solve, ComponentwiseBackwardErrorIsTheOettliPragerRatioAndIgnoresRowScaling) {
  // A = [1 2; 3 4] (column-major), x = (1, 1), b = (3, 8): r = (0, 1), |A||x| + |b| = (6, 15).
  std::vector<double> a = {1, 3, 2, 4}, x = {1, 1}, b = {3, 8};
  EXPECT_DOUBLE_EQ(componentwise_backward_error(host_view<const double>(a.data(), 2, 2, 2), x.data(), b.data()),
                   1.0 / 15);
  a[1] *= 0x1p40;
  a[3] *= 0x1p40;
  b[1] *= 0x1p40;
  EXPECT_DOUBLE_EQ(componentwise_backward_error(host_view<const double>(a.data(), 2, 2, 2), x.data(), b.data()),
                   1.0 / 15);
  // A = [0 1; 0 0]: row 2 of |A| |x| + |b| is 0, and so is its residual (counted as 0).
  const std::vector<double> upper = {0, 0, 1, 0}, rhs = {1, 0}, exact = {1, 1}, off = {0, 2};
  EXPECT_EQ(componentwise_backward_error(host_view<const double>(upper.data(), 2, 2, 2), exact.data(), rhs.data()),
            0.0);
  EXPECT_DOUBLE_EQ(componentwise_backward_error(host_view<const double>(upper.data(), 2, 2, 2), off.data(), rhs.data()),
                   1.0 / 3);
}

// kCollapseMinPivots: the rule on its own (at least 256 small pivots, more than half of those so
// far; NaN counts as small), then a Hilbert matrix under auto: its fp16x3 LU stops part way
// (StopReason::CollapsedPivots, named in the summary), the FP64 LU follows, and the answer is as
// good as the FP64 LU's (fp64_lu_solution). A well-conditioned matrix of the same size is not stopped.
TEST(Solve, CheapLuWhosePivotsCollapseStopsPartWay) {
  solvers_detail::PivotWatch w;
  for (int k = 0; k < 255; ++k) solvers_detail::watch_pivot(w, k == 0 ? 1.0 : 1e-6, 1e-4);
  EXPECT_EQ(w.small, 254);
  solvers_detail::watch_pivot(w, NAN, 1e-4);
  solvers_detail::watch_pivot(w, 2.0, 1e-4);
  EXPECT_EQ(w.largest, 2.0);
  EXPECT_FALSE(solvers_detail::pivots_collapsed(w.small, 257)) << "255 small pivots";
  solvers_detail::watch_pivot(w, 1e-4, 1e-4);  // 1e-4 < 1e-4 x 2
  EXPECT_TRUE(solvers_detail::pivots_collapsed(w.small, 258));
  EXPECT_FALSE(solvers_detail::pivots_collapsed(256, 512)) << "half is not more than half";

  const std::int64_t n = 640;
  Problem p(geo(1e2, 1), n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) p.a[i + j * n] = 1.0 / double(i + j + 1);
  const double lu_berr = fp64_backward_error(p);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.block_size = 32;
  const SolveReport r = solve(ctx, p.A(), p.B(), p.X(), o);
  ASSERT_EQ(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::Fp16x3);
  EXPECT_EQ(r.attempts[0].stop, StopReason::CollapsedPivots) << r.summary();
  EXPECT_GE(r.attempts[0].collapsed_at_column, solvers_detail::kCollapseMinPivots);
  EXPECT_LT(r.attempts[0].collapsed_at_column, n / 2) << r.summary();
  EXPECT_NE(r.summary().find("LU stopped after"), std::string::npos) << r.summary();
  EXPECT_EQ(r.attempts[1].precision, Precision::FP64);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LE(r.backward_error, 10 * std::max(lu_berr, 0x1p-53)) << r.summary();

  Problem q(geo(1e4, 2), n);
  const SolveReport well = solve(ctx, q.A(), q.B(), q.X(), o);
  EXPECT_EQ(well.attempts.size(), 1u) << well.summary();
  EXPECT_TRUE(well.converged) << well.summary();
}

// Z = the operator that `precision`'s factors of p's A apply (A^-1 to their accuracy), on the
// identity: solves without refinement or fallback on a Factorization with the same options, at
// most kFp64ApplyMaxColumns columns at a time, so that FP32 factors are applied in FP64
// arithmetic as the condition estimator applies them.
Eigen::MatrixXd factors_inverse(const Problem& p, Precision precision) {
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = precision;
  o.refinement = Refinement::None;
  o.fallback = false;
  o.probe_pivot_ratio = 0;
  o.condition_estimate = ConditionEstimate::Never;
  Factorization f(ctx, p.A(), o);
  const std::int64_t n = p.n, step = solvers_detail::kFp64ApplyMaxColumns;
  Eigen::MatrixXd z(n, n);
  for (std::int64_t j = 0; j < n; j += step) {
    const std::int64_t cols = std::min(step, n - j);
    const Eigen::MatrixXd e = Eigen::MatrixXd::Identity(n, n).middleCols(j, cols);
    const SolveReport r =
        f.solve(host_view<const double>(e.data(), n, cols, n), host_view(z.data() + j * n, n, cols, n));
    EXPECT_EQ(r.attempts.size(), 1u) << r.summary();
    EXPECT_EQ(r.attempts.at(0).precision, precision) << r.summary();
  }
  return z;
}

// SolveReport::condition_estimate against the exact cond_inf(A) = ||A||_inf ||A^-1||_inf (A^-1 by
// reference_inverse), from FP64 factors and from cheap ones that refinement made converge. The
// estimate is Higham's estimator on the operator Z ~ A^-1 that the factors apply
// (condition_estimate.hpp): never above ||Z||_inf beyond its rounding ((3n + 2) u), and on these
// matrices (as on those of test_condition_estimate.cpp) not below a third of it. Z is A^-1 to the
// factors' backward error eta = ||I - A Z||_inf (measured here, exact residuals): Z - A^-1 =
// A^-1 (A Z - I), so (1 - eta) ||A^-1|| <= ||Z|| <= (1 + eta) ||A^-1||, and
//   exact (1 - eta) / 3 <= estimate <= exact (1 + eta) (1 + (4n + 2) u)
// (n u more for ||A||_inf's own rounding). FP64 factors: eta 1e-13 .. 3e-10; FP32 and fp16x3
// factors: 4e-5 at cond 1e2, 0.11 at cond 1e6, where the old bound (1 - cond n u_32) / 3 was
// negative. eta < 1/2 is asserted, so the lower bound is a real one. The forward error bound
// holds for the returned x (against the stored system's true solution). A second solve with the
// same factors reuses the estimate.
TEST(Solve, ReportsTheConditionEstimateAndABoundOnTheForwardError) {
  const double u = 0x1p-53;
  for (Precision prec : {Precision::FP64, Precision::FP32, Precision::Fp16x3})
    for (double cond : {1e2, 1e6}) {
      Problem p(geo(cond, 31), 120);
      const std::int64_t n = p.n;
      std::vector<double> x_true(n);
      fill_random(host_view(x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, 5));
      const Eigen::Map<const Eigen::MatrixXd> a(p.a.data(), n, n);
      Eigen::Map<Eigen::VectorXd>(p.b.data(), n) = a * Eigen::Map<const Eigen::VectorXd>(x_true.data(), n);
      const mixsolve::testing::ReferenceSolution inverse = mixsolve::testing::reference_inverse(a);
      ASSERT_TRUE(inverse.converged);
      const double exact =
          a.cwiseAbs().rowwise().sum().maxCoeff() * double(inverse.x.cwiseAbs().rowwise().sum().maxCoeff());
      SCOPED_TRACE(to_string(prec) + " cond " + std::to_string(cond));
      Context ctx = Context::host_only();
      SolveOptions o;
      o.factorization = prec;
      o.condition_estimate = ConditionEstimate::Always;
      Factorization f(ctx, p.A(), o);
      const SolveReport r = f.solve(p.B(), p.X());
      ASSERT_TRUE(r.converged) << r.summary();
      // The factors' backward error, for the factors the estimate used (the last ones tried).
      const Eigen::MatrixXd z = factors_inverse(p, r.attempts.back().precision);
      const mixsolve::testing::SplitMatrix split_a{Eigen::MatrixXd(a)};
      Eigen::MatrixXd residual(n, n);
      for (std::int64_t j = 0; j < n; ++j) {
        const Eigen::VectorXd e = Eigen::VectorXd::Unit(n, j);
        const std::vector<long double> zj(z.data() + j * n, z.data() + (j + 1) * n);
        const std::vector<long double> rj = mixsolve::testing::accurate_residual(split_a, e.data(), nullptr, zj.data());
        for (std::int64_t i = 0; i < n; ++i) residual(i, j) = double(rj[std::size_t(i)]);
      }
      const double eta = residual.cwiseAbs().rowwise().sum().maxCoeff();
      std::printf("%s cond %.0e: estimate / exact %.3f, factors' backward error %.2e\n", to_string(prec).c_str(), cond,
                  r.condition_estimate / exact, eta);
      ASSERT_LT(eta, 0.5) << "factors too far from A for their inverse's norm to be A^-1's";
      EXPECT_LE(r.condition_estimate, exact * (1 + eta) * (1 + (4 * n + 2) * u)) << r.summary();
      EXPECT_GE(r.condition_estimate, exact * (1 - eta) / 3) << r.summary();
      // ||x - x_star||_inf / ||x||_inf, the quantity the bound is stated for.
      const std::vector<long double> x_star = true_solution(p);
      long double d = 0, t = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        d = std::max(d, std::fabs(p.x[i] - x_star[i]));
        t = std::max<long double>(t, std::fabs(p.x[i]));
      }
      EXPECT_GE(r.forward_error_bound, double(d / t)) << r.summary();
      EXPECT_NE(r.summary().find("condition estimate"), std::string::npos) << r.summary();
      const SolveReport again = f.solve(p.B(), p.X());
      EXPECT_EQ(again.condition_estimate, r.condition_estimate);
    }
  Problem p(geo(1e2, 31), 40);
  Context ctx = Context::host_only();
  const SolveReport by_default = solve(ctx, p.A(), p.B(), p.X());
  ASSERT_TRUE(by_default.converged);
  EXPECT_EQ(by_default.condition_estimate, 0.0) << "WhenNotConverged: not for a converged solve";
  EXPECT_EQ(by_default.forward_error_bound, 0.0);
  Problem q(geo(1e10, 4), 96);  // FP32 factors, classic refinement, no fallback: it fails
  SolveOptions o;
  o.factorization = Precision::FP32;
  o.refinement = Refinement::Classic;
  o.fallback = false;
  const SolveReport failed = solve(ctx, q.A(), q.B(), q.X(), o);
  ASSERT_FALSE(failed.converged) << failed.summary();
  EXPECT_GT(failed.condition_estimate, 1e8) << failed.summary();
  o.condition_estimate = ConditionEstimate::Never;
  EXPECT_EQ(solve(ctx, q.A(), q.B(), q.X(), o).condition_estimate, 0.0);
}

TEST(Solve, NoRefinementSolvesOnceAndSaysWhetherThatSufficed) {
  Problem p(geo(1e3, 8), 64);
  const SolveReport r = run(p, Precision::FP32, Refinement::None, false);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_EQ(r.backward_error_history.size(), 1u);
  EXPECT_FALSE(r.converged) << "an FP32 LU alone does not meet the FP64 stop test";
  EXPECT_EQ(r.attempts[0].stop, StopReason::NoRefinement);
}

TEST(Solve, ZeroPivotOnlyInLowPrecisionEscalates) {
  // 1 + 2^-30 rounds to 1 in FP32: singular there, not in FP64.
  std::vector<double> a = {1.0, 1.0, 1.0, 1.0 + 0x1p-30}, b = {1.0, 2.0}, x(2);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP32;
  const SolveReport r = solve(ctx, host_view<const double>(a.data(), 2, 2, 2), host_view<const double>(b.data(), 2, 1, 2),
                              host_view(x.data(), 2, 1, 2), o);
  ASSERT_TRUE(r.converged) << r.summary();
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].stop, StopReason::ZeroPivot);
  EXPECT_EQ(r.attempts[0].zero_pivot_column, 1);
  EXPECT_EQ(r.attempts[1].precision, Precision::FP64);
  EXPECT_NEAR(x[1], 0x1p30, 1e-6 * 0x1p30);
}

TEST(Solve, ExactlySingularMatrixIsAnErrorNamingTheColumn) {
  std::vector<double> a = {1, 2, 3, 2, 4, 6, 0, 1, 1}, b = {1, 1, 1}, x(3);  // column 1 = 2 * column 0
  Context ctx = Context::host_only();
  try {
    solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 3, 1, 3),
          host_view(x.data(), 3, 1, 3));
    FAIL() << "expected SingularMatrix";
  } catch (const SingularMatrix& e) {
    EXPECT_EQ(e.column(), 1);
    EXPECT_NE(std::string(e.what()).find("column 1"), std::string::npos) << e.what();
  }
}

TEST(Solve, BadArgumentsNameTheArgumentAndValue) {
  Context ctx = Context::host_only();
  std::vector<double> a(12, 1.0), b(6, 1.0), x(6);
  auto expect_error = [&](auto call, const char* text) {
    try {
      call();
      ADD_FAILURE() << "expected an error mentioning " << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 4, 3), host_view<const double>(b.data(), 3, 2, 3), host_view(x.data(), 3, 2, 3)); },
               "not square");
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 2, 2, 2), host_view(x.data(), 2, 2, 2)); },
               "B has 2 rows");
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 3, 2, 3), host_view(x.data(), 3, 1, 3)); },
               "X is 3 x 1");
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 3, 2), host_view<const double>(b.data(), 3, 2, 3), host_view(x.data(), 3, 2, 3)); },
               "ld (2) < rows (3)");
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 3, 2, 3), host_view(b.data(), 3, 2, 3)); },
               "alias");
  a[4] = NAN;
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 3, 2, 3), host_view(x.data(), 3, 2, 3)); },
               "A(1, 1) is NaN or Inf");
  a[4] = 5;
  b[5] = INFINITY;
  expect_error([&] { solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 3, 2, 3), host_view(x.data(), 3, 2, 3)); },
               "B(2, 1) is NaN or Inf");
  b[5] = 1;
  // The 3 x 3 system above under options that are out of range.
  const auto solve_3x3 = [&](const SolveOptions& options) {
    solve(ctx, host_view<const double>(a.data(), 3, 3, 3), host_view<const double>(b.data(), 3, 2, 3),
          host_view(x.data(), 3, 2, 3), options);
  };
  SolveOptions bad_path;
  bad_path.auto_path = {};
  expect_error([&] { solve_3x3(bad_path); }, "auto_path is empty");
  bad_path.auto_path = {Precision::FP32, Precision::Auto};
  expect_error([&] { solve_3x3(bad_path); }, "auto_path[1] is auto");
  SolveOptions bad_min;
  bad_min.auto_min_n = -2;
  expect_error([&] { solve_3x3(bad_min); }, "auto_min_n (-2) < -1");
  SolveOptions bad_cholesky_path;
  bad_cholesky_path.cholesky_auto_path = {};
  expect_error([&] { solve_3x3(bad_cholesky_path); }, "cholesky_auto_path is empty");
  bad_cholesky_path.cholesky_auto_path = {Precision::Auto};
  expect_error([&] { solve_3x3(bad_cholesky_path); }, "cholesky_auto_path[0] is auto");
  SolveOptions bad_cholesky_min;
  bad_cholesky_min.cholesky_auto_min_n = -3;
  expect_error([&] { solve_3x3(bad_cholesky_min); }, "cholesky_auto_min_n (-3) < -1");
  for (int bits : {15, 54}) {
    SolveOptions bad_bits;
    bad_bits.ozaki_bits = bits;
    expect_error([&] { solve_3x3(bad_bits); }, ("ozaki_bits (" + std::to_string(bits) + ") outside [16, 53]").c_str());
  }
  EXPECT_THROW(parse_precision("fp8"), InvalidArgument);
  EXPECT_EQ(parse_precision("halfhalf"), Precision::Halfhalf);
  EXPECT_EQ(parse_precision("fp16x3"), Precision::Fp16x3);
}

// The precision table (solvers/src/precisions.cpp) has one row per factorization precision: the
// names round-trip through to_string and parse_precision, both update backends are registered,
// and the unit roundoffs order the precisions as their arithmetic does.
TEST(Solve, EveryFactorizationPrecisionHasOneCompleteRow) {
  using solvers_detail::factorization_precisions;
  using solvers_detail::precision_info;
  const std::vector<Precision> all = {Precision::FP64, Precision::FP32,     Precision::TF32,     Precision::FP16,
                                      Precision::BF16, Precision::Halfhalf, Precision::Tf32tf32, Precision::Fp16x3,
                                      Precision::Ozaki};
  ASSERT_EQ(factorization_precisions().size(), all.size());
  for (Precision p : all) {
    SCOPED_TRACE(to_string(p));
    EXPECT_EQ(precision_info(p).precision, p);
    EXPECT_EQ(parse_precision(to_string(p)), p);
    EXPECT_NO_THROW(solvers_detail::host_update_backend(p));
    EXPECT_NO_THROW(solvers_detail::device_update_backend(p));
  }
  EXPECT_EQ(parse_precision("auto"), Precision::Auto);
  EXPECT_THROW(precision_info(Precision::Auto), InvalidArgument);
  const auto u = [](Precision p) { return solvers_detail::unit_roundoff(p, 40); };
  EXPECT_EQ(u(Precision::FP64), 0x1p-53);
  EXPECT_LT(u(Precision::FP32), u(Precision::FP16));
  EXPECT_LT(u(Precision::FP16), u(Precision::BF16));
  EXPECT_EQ(u(Precision::Fp16x3), u(Precision::FP32));
  EXPECT_EQ(u(Precision::Ozaki), 0x1p-40);
  EXPECT_EQ(solvers_detail::unit_roundoff(Precision::Ozaki, 48), 0x1p-48);
  EXPECT_TRUE(solvers_detail::fp64_factors(Precision::Ozaki));
  EXPECT_TRUE(solvers_detail::fp64_factors(Precision::FP64));
  EXPECT_FALSE(solvers_detail::fp64_factors(Precision::Fp16x3));
}

TEST(Solve, InputsAreNotModified) {
  Problem p(geo(1e6, 2), 64, 2);
  const std::vector<double> a0 = p.a, b0 = p.b;
  run(p, Precision::Auto, Refinement::Auto);
  EXPECT_EQ(p.a, a0);
  EXPECT_EQ(p.b, b0);
}

TEST(Solve, FactorizationIsReusedForLaterRightHandSides) {
  Problem p(geo(1e3, 12), 64);
  Context ctx = Context::host_only();
  SolveOptions o;
  o.factorization = Precision::FP32;
  Factorization f(ctx, p.A(), o);
  EXPECT_EQ(f.precision(), Precision::Auto) << "nothing factored before the first solve";
  const SolveReport first = f.solve(p.B(), p.X());
  expect_converged_and_accurate(p, first);
  EXPECT_EQ(f.precision(), Precision::FP32);
  fill_random(host_view(p.b.data(), p.n, 1, p.n), RandomSpec::uniform(-1, 1, 999));
  const SolveReport second = f.solve(p.B(), p.X());
  expect_converged_and_accurate(p, second);
  ASSERT_EQ(second.attempts.size(), 1u);
  EXPECT_EQ(second.attempts[0].factorization_seconds, 0.0) << "no refactorization";
}

TEST(Solve, EveryFamilyAndSpectrumSolvesUnderAuto) {
  for (MatrixFamily f : {MatrixFamily::Svd, MatrixFamily::Poev, MatrixFamily::Heev})
    for (Spectrum s : {Spectrum::Arith, Spectrum::Geo, Spectrum::Cluster0, Spectrum::Cluster1, Spectrum::Logrand}) {
      TestMatrixSpec spec;
      spec.family = f;
      spec.spectrum = s;
      spec.cond = 1e6;
      spec.seed = 31;
      SCOPED_TRACE(spec.name());
      Problem p(spec, 48);
      expect_converged_and_accurate(p, run(p, Precision::Auto, Refinement::Auto));
    }
}

}  // namespace
