// SPDX-License-Identifier: BSD-3-Clause
// The solve driver on device matrices (the GPU engine): every factorization precision, escalation,
// the families, singular input; accuracy checked on the host against an FP64 LU.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/dgemm_auto.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/matgen/application_matrices.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "driver/near_diagonal.hpp"  // solvers_detail::near_diagonal_estimate
#include "engine.hpp"       // solvers_detail::make_device_engine: the reused order's rejection path
#include "lu/lu_rules.hpp"  // the trusted row order, the collapse watch
#include "tuning.hpp"       // solvers_detail::tuning(): the variants of the device LU
#include "mixsolve/solvers/solve.hpp"
#include "residual_accuracy.hpp"
#include "solve_test_problems.hpp"

namespace {

using namespace mixsolve;
using test_problems::ScopedTuning;

// The FP64 LU's route by name, as the tests loop over them: "engine", "cusolver", or by size.
solvers_detail::Tuning::Fp64Route fp64_route(const std::string& name) {
  using Route = solvers_detail::Tuning::Fp64Route;
  return name == "engine" ? Route::Engine : name == "cusolver" ? Route::Cusolver : Route::BySize;
}

struct DeviceProblem {
  std::int64_t n, k;
  std::vector<double> a, b, x;
  DeviceBuffer<double> da, db, dx;
  DeviceProblem(const TestMatrixSpec& spec, std::int64_t n_, std::int64_t k_)
      : n(n_), k(k_), a(n_ * n_), b(n_ * k_), x(n_ * k_, NAN), da(n_ * n_), db(n_ * k_), dx(n_ * k_) {
    generate_test_matrix(spec, host_view(a.data(), n, n, n));
    upload(spec.seed + 7);
  }
  // A with entries uniform in [-1, 1] (the families' host generator is O(n^3): for large n).
  DeviceProblem(std::uint64_t seed, std::int64_t n_, std::int64_t k_)
      : n(n_), k(k_), a(n_ * n_), b(n_ * k_), x(n_ * k_, NAN), da(n_ * n_), db(n_ * k_), dx(n_ * k_) {
    fill_random(host_view(a.data(), n, n, n), RandomSpec::uniform(-1, 1, seed));
    upload(seed + 7);
  }
  void upload(std::uint64_t b_seed) {
    fill_random(host_view(b.data(), n, k, n), RandomSpec::uniform(-1, 1, b_seed));
    da.copy_from_host(a);
    db.copy_from_host(b);
    dx.copy_from_host(x);  // poison
  }
  SolveReport solve_on_device(Context& ctx, const SolveOptions& o) {
    const SolveReport r = solve(ctx, device_view<const double>(da.data(), n, n, n),
                                device_view<const double>(db.data(), n, k, n), device_view(dx.data(), n, k, n), o);
    ctx.synchronize();
    x = dx.to_host();
    return r;
  }
  // The stop test's ratio (test_problems::stop_test_ratio): < 1 meets it.
  double stop_test_ratio(std::int64_t column_step = 1) const {
    return test_problems::stop_test_ratio(a, b, x, n, k, column_step);
  }
};

TestMatrixSpec spec_of(MatrixFamily f, Spectrum s, double cond, std::uint64_t seed) {
  TestMatrixSpec t;
  t.family = f;
  t.spectrum = s;
  t.cond = cond;
  t.seed = seed;
  return t;
}

// The device engine's residuals within their precision's error bound (tests/residual_accuracy.hpp)
// on residuals that are all cancellation: an order of several column chunks and a ragged last
// one, A with ld > n and NaN in its padding, seven right-hand sides (the double-double kernel's
// passes of four, two and one), A well and badly scaled. The FP64 residual misses the
// double-double bound there.
TEST(GpuSolve, ResidualsAreWithinTheErrorBoundOfTheirPrecision) {
  MIXSOLVE_REQUIRE_GPU();
  using RP = ResidualPrecision;
  const std::int64_t n = 1283, ld = n + 5, k = 7;
  for (bool scaled_rows : {false, true}) {
    SCOPED_TRACE(scaled_rows ? "scaled rows" : "uniform");
    const Eigen::MatrixXd a = mixsolve::testing::residual_test_matrix(n, scaled_rows, 21);
    Eigen::MatrixXd x(n, k);
    fill_random(host_view(x.data(), n, k, n), RandomSpec::uniform(-1, 1, 22));
    std::vector<double> padded(std::size_t(ld * n), NAN);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) padded[std::size_t(i + j * ld)] = a(i, j);
    Context ctx;
    DeviceBuffer<double> da(ld * n);
    da.copy_from_host(padded);
    auto engine = solvers_detail::make_device_engine(ctx, device_view<const double>(da.data(), n, n, ld), 0);
    EXPECT_LE(mixsolve::testing::residual_error_ratio(*engine, a, x, RP::DoubleDouble, RP::DoubleDouble), 1.0);
    EXPECT_LE(mixsolve::testing::residual_error_ratio(*engine, a, x, RP::Fp64, RP::Fp64), 1.0);
    EXPECT_GT(mixsolve::testing::residual_error_ratio(*engine, a, x, RP::Fp64, RP::DoubleDouble), 10.0);
  }
}

// The near-diagonal screen (SolveOptions::fp16_when_near_diagonal) on the device engine (A read
// in place with a padded leading dimension: the diagonal's stride is ld + 1) gives the host
// engine's estimate; under Auto a device HPL-MxP matrix takes FP16 first and meets the stop test.
TEST(GpuSolve, NearDiagonalScreenMatchesTheHostAndPutsFp16First) {
  MIXSOLVE_REQUIRE_GPU();
  const std::int64_t n = 641, ld = n + 5;
  std::vector<double> a(std::size_t(n * n));
  ApplicationSpec spec;
  spec.family = ApplicationFamily::HplMxp;
  generate_application_matrix(spec, host_view(a.data(), n, n, n));
  std::vector<double> padded(std::size_t(ld * n), NAN);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) padded[std::size_t(i + j * ld)] = a[std::size_t(i + j * n)];
  Context ctx;
  DeviceBuffer<double> da(ld * n);
  da.copy_from_host(padded);
  Context host = Context::host_only();
  const auto host_engine = solvers_detail::make_host_engine(host, host_view<const double>(a.data(), n, n, n), 0);
  const auto device_engine = solvers_detail::make_device_engine(ctx, device_view<const double>(da.data(), n, n, ld), 0);
  for (const double bound : {double(INFINITY), solvers_detail::kNearDiagonalMax, 1e-3}) {
    const double on_host = solvers_detail::near_diagonal_estimate(*host_engine, bound);
    const double on_device = solvers_detail::near_diagonal_estimate(*device_engine, bound);
    EXPECT_NEAR(on_device, on_host, 1e-10 * on_host) << "bound " << bound;
  }
  std::vector<double> b(static_cast<std::size_t>(n), 0.0), x_true(static_cast<std::size_t>(n), 0.0);
  fill_random(host_view(x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, 92));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) b[std::size_t(i)] += a[std::size_t(i + j * n)] * x_true[std::size_t(j)];
  DeviceBuffer<double> db(n), dx(n);
  db.copy_from_host(b);
  SolveOptions o;
  o.auto_min_n = 0;
  const SolveReport r = solve(ctx, device_view<const double>(da.data(), n, n, ld), device_view<const double>(db.data(), n, 1, n),
                              device_view(dx.data(), n, 1, n), o);
  EXPECT_TRUE(r.converged) << r.summary();
  ASSERT_FALSE(r.attempts.empty());
  EXPECT_EQ(r.attempts.front().precision, Precision::FP16) << r.summary();
  EXPECT_EQ(r.attempts.front().pivot_order, PivotOrder::DiagonalBlocks) << r.summary();
  EXPECT_LT(r.attempts.front().largest_multiplier, 1.0) << r.summary();  // column-dominant
  EXPECT_GT(r.near_diagonal_estimate, 0.0);
  EXPECT_LE(r.near_diagonal_estimate, solvers_detail::kNearDiagonalMax);
}

// The device LU pivoting inside its diagonal blocks (FactorRequest::diagonal_blocks, forced on
// every cheap LU), n = 1030 (five panels, the last one 32 wide in the aligned factors), FP16 and
// fp16x3: on test_problems::exchanged_halves_matrix the multipliers fail the check, the LU starts
// over with partial pivoting and meets the stop test; on a dominant-diagonal matrix with each
// block's rows reversed (interchanges in every panel, all inside its diagonal block) the LU keeps
// A's order (|l| < 1) and meets it in at most one step more than partial pivoting.
TEST(GpuSolve, DiagonalBlockPivotingFallsBackToPartialPivotingWhereItsCheckFails) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  solvers_detail::tuning().diagonal_block_pivoting = solvers_detail::Tuning::DiagonalBlockPivoting::Always;
  const std::int64_t n = 1030;
  Context ctx;
  DeviceProblem exchanged(96, n, 1), dominant(97, n, 1);
  exchanged.a = test_problems::exchanged_halves_matrix(n, 95);
  exchanged.upload(98);
  ApplicationSpec spec;
  spec.family = ApplicationFamily::HplMxp;
  generate_application_matrix(spec, host_view(dominant.a.data(), n, n, n));
  // Every 256-row block's rows reversed: each panel's interchanges, all inside its diagonal block.
  dominant.a = test_problems::rows_reversed_within_blocks(dominant.a, n, 256);
  dominant.upload(99);
  for (const Precision p : {Precision::FP16, Precision::Fp16x3}) {
    SCOPED_TRACE(to_string(p));
    SolveOptions o;
    o.factorization = p;
    o.fallback = false;
    const SolveReport r = exchanged.solve_on_device(ctx, o);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(exchanged.stop_test_ratio(), 1.0) << r.summary();
    ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
    EXPECT_EQ(r.attempts[0].pivot_order, PivotOrder::DiagonalBlocksRejected) << r.summary();
    EXPECT_FALSE(r.attempts[0].largest_multiplier <= kReusedOrderMaxMultiplier) << r.summary();
    const SolveReport in_order = dominant.solve_on_device(ctx, o);
    EXPECT_TRUE(in_order.converged) << in_order.summary();
    EXPECT_LT(dominant.stop_test_ratio(), 1.0) << in_order.summary();
    EXPECT_EQ(in_order.attempts.at(0).pivot_order, PivotOrder::DiagonalBlocks) << in_order.summary();
    EXPECT_LT(in_order.attempts.at(0).largest_multiplier, 1.0) << in_order.summary();
    // Nearly as good a preconditioner as partial pivoting's factors: at most one step more (the
    // host test says why).
    solvers_detail::tuning().diagonal_block_pivoting = solvers_detail::Tuning::DiagonalBlockPivoting::Never;
    const SolveReport partial = dominant.solve_on_device(ctx, o);
    solvers_detail::tuning().diagonal_block_pivoting = solvers_detail::Tuning::DiagonalBlockPivoting::Always;
    EXPECT_EQ(partial.attempts.at(0).pivot_order, PivotOrder::Partial) << partial.summary();
    EXPECT_LE(in_order.attempts.at(0).iterations, partial.attempts.at(0).iterations + 1)
        << in_order.summary() << partial.summary();
    solvers_detail::tuning().fp32_accurate_l21 = true;  // L21 on fp16x3: no step more
    const SolveReport accurate = dominant.solve_on_device(ctx, o);
    solvers_detail::tuning().fp32_accurate_l21 = false;
    EXPECT_TRUE(accurate.converged) << accurate.summary();
    EXPECT_LT(dominant.stop_test_ratio(), 1.0) << accurate.summary();
    EXPECT_EQ(accurate.attempts.at(0).pivot_order, PivotOrder::DiagonalBlocks) << accurate.summary();
    EXPECT_LE(accurate.attempts.at(0).iterations, partial.attempts.at(0).iterations)
        << accurate.summary() << partial.summary();
  }
}

TEST(GpuSolve, EveryFactorizationPrecisionMeetsTheStopTest) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  for (Precision p : {Precision::FP64, Precision::FP32, Precision::Halfhalf, Precision::Tf32tf32, Precision::TF32,
                      Precision::FP16, Precision::BF16, Precision::Fp16x3, Precision::Ozaki}) {
    DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e3, 50), 1024, 2);
    SolveOptions o;
    o.factorization = p;
    o.fallback = false;
    const SolveReport r = prob.solve_on_device(ctx, o);
    SCOPED_TRACE(to_string(p));
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    for (const Attempt& a : r.attempts)  // no escalation (Auto refinement may retry with GMRES)
      EXPECT_EQ(a.precision, p) << r.summary();
    EXPECT_LE(r.attempts.size(), 2u) << r.summary();
    EXPECT_GT(r.peak_workspace_bytes, 0u);
    std::printf("%-9s %s", to_string(p).c_str(), r.summary().c_str());
  }
}

// The FP64 LU runs on the blocked engine (FP64 panels, DGEMM updates) from n = 6144 on and on
// cuSOLVER's dgetrf below; Tuning::fp64_route forces either. Both routes must
// meet the stop test with at most one classic step, also at cond 1e12 and at n = 20480, where
// the first panels' rows per block no longer fit 32-column FP64 sub-panels and the panel kernel
// takes 16-column ones.
TEST(GpuSolve, Fp64FactorsFromTheEngineAndFromCusolverMeetTheStopTest) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  struct Case {
    std::int64_t n;
    double cond;
  };
  for (const Case& c : {Case{1000, 1e12}, Case{2100, 1e3}, Case{20480, 0}}) {
    DeviceProblem prob = c.cond > 0 ? DeviceProblem(spec_of(MatrixFamily::Svd, Spectrum::Geo, c.cond, 90), c.n, 2)
                                    : DeviceProblem(91, c.n, 2);  // cond 0: uniform random entries
    // The LAPACK test after at most one step. StopTest::Attainable with double-double residuals
    // goes on until x settles: each step shrinks the forward error by about cond u, so from the
    // first solve's cond u to u takes log(u) / log(cond u) corrections (4 at cond 1e12), and at
    // least the one step that no longer halves the backward error (2).
    const double u = 0x1p-53, rate = std::max(c.cond, 1.0) * u;
    const int attainable_steps = std::max(2, int(std::ceil(std::log(u) / std::log(rate))));
    for (const char* route : {"engine", "cusolver"})
      for (StopTest stop : {StopTest::Lapack, StopTest::Attainable}) {
        solvers_detail::tuning().fp64_route = fp64_route(route);
        SolveOptions o;
        o.factorization = Precision::FP64;
        o.stop_test = stop;
        const SolveReport r = prob.solve_on_device(ctx, o);
        solvers_detail::tuning().fp64_route = solvers_detail::Tuning::Fp64Route::BySize;
        SCOPED_TRACE(std::string(route) + " n " + std::to_string(c.n) + " " + to_string(stop));
        EXPECT_TRUE(r.converged) << r.summary();
        EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
        ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
        EXPECT_LE(r.attempts[0].iterations, stop == StopTest::Lapack ? 1 : attainable_steps) << r.summary();
      }
  }
}

// A dgemm-auto cost model under which the emulation pays for every product of the tests below on
// any GPU (DGEMM at 1 TFLOP/s, the H200's magnitudes otherwise: the LU's narrowest planned bulk
// product, 64 x 576 x 512 at 44 bits, is predicted at ~7x DGEMM), so that the emulated path runs
// wherever they run, whatever model the GPU's properties find.
gemm::DgemmAutoModel emulating_model() {
  return gemm::DgemmAutoModel{1e12, 1.5e15, 2e-12, 1e-12, 6e-12, "test model: DGEMM at 1 TFLOP/s"};
}

// The Ozaki LU: the engine's FP64 LU with wide bulk updates on the INT8 emulation. Forced here
// (engine route, ozaki2-int8 for every bulk update, 512-column groups) at n = 2100, off the
// block grid: the first solve's backward error follows SolveOptions::ozaki_bits, so the updates
// did run emulated at that accuracy, and cond 1e10 refines in a few classic steps at 40 bits.
// The same through dgemm-auto with emulating_model() registered: its plan takes the wide groups
// (Attempt::emulated_bits) and the backward error follows the bits. At n = 8192 with dgemm-auto
// and the model the GPU's properties find (which may take DGEMM for every update) it solves too.
TEST(GpuSolve, OzakiLuKeepsTheAskedBitsAndRefinesIllConditionedMatrices) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  solvers_detail::tuning().fp64_route = fp64_route("engine");
  solvers_detail::tuning().ozaki_lu_update = "ozaki2-int8";
  solvers_detail::tuning().emulated_lu_block = 512;
  // One solve at 20 bits and one at 44, without refinement or fallback: the attempt ran the asked
  // bits, and 24 bits more make the first backward error at least 2^12 smaller (the LU's growth
  // and the backward error's slack aside). `updates` names the bulk updates' backend (dgemm-auto:
  // other emulated bits mean its plan took no wide group).
  const auto follows_the_bits = [&](const std::string& updates) {
    std::vector<double> first_error;
    for (int bits : {20, 44}) {
      DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e4, 93), 2100, 1);
      SolveOptions o;
      o.factorization = Precision::Ozaki;
      o.ozaki_bits = bits;
      o.refinement = Refinement::None;
      o.fallback = false;
      const SolveReport r = prob.solve_on_device(ctx, o);
      ASSERT_FALSE(r.backward_error_history.empty()) << updates << ": " << r.summary();
      ASSERT_FALSE(r.attempts.empty()) << updates << ": " << r.summary();
      EXPECT_EQ(r.attempts[0].emulated_bits, bits) << updates << ": " << r.summary();
      first_error.push_back(r.backward_error_history[0]);
    }
    EXPECT_GT(first_error[0], 0x1p12 * first_error[1]) << updates << ": " << first_error[0] << " " << first_error[1];
  };
  ASSERT_NO_FATAL_FAILURE(follows_the_bits("ozaki2-int8"));
  {
    DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e10, 94), 2100, 2);
    SolveOptions o;
    o.factorization = Precision::Ozaki;
    o.refinement = Refinement::Classic;
    const SolveReport r = prob.solve_on_device(ctx, o);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
    EXPECT_EQ(r.attempts[0].precision, Precision::Ozaki);
    EXPECT_LE(r.attempts[0].iterations, 5) << r.summary();
  }
  {
    // dgemm-auto (Tuning::ozaki_lu_update empty) with the emulating model registered for this GPU.
    solvers_detail::tuning().ozaki_lu_update.clear();
    const gemm::ScopedDgemmAutoModel registered(ctx.device(), emulating_model());
    ASSERT_NO_FATAL_FAILURE(follows_the_bits("dgemm-auto with emulating_model()"));
  }
  solvers_detail::tuning() = restore_tuning.saved;
  DeviceProblem prob(95, 8192, 1);
  SolveOptions o;
  o.factorization = Precision::Ozaki;
  const SolveReport r = prob.solve_on_device(ctx, o);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
  ASSERT_GE(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].precision, Precision::Ozaki);
  EXPECT_FALSE(r.fell_back) << r.summary();
}

// Many right-hand sides make the refinement's residual a GEMM that dgemm-auto emulates at DGEMM's
// accuracy where its model predicts a gain (n = 16384, 8192 columns: on the H100 and H200 with
// their measured models; here on any GPU, with emulating_model() registered): the solve still
// meets the stop test (checked on every 1024th column).
TEST(GpuSolve, ResidualsOfManyRightHandSidesOnTheEmulatedDgemmMeetTheStopTest) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const gemm::ScopedDgemmAutoModel registered(ctx.device(), emulating_model());
  const std::int64_t n = 16384, columns = 8192;
  const gemm::DgemmAutoChoice choice = gemm::dgemm_auto_choice(ctx, n, columns, n, gemm::kOzaki2DefaultBits);
  std::printf("residual of %lld columns at n = %lld: %s (%s)\n", (long long)columns, (long long)n,
              choice.backend.c_str(), choice.reason.c_str());
  ASSERT_EQ(choice.backend, "ozaki2-int8") << choice.reason;
  DeviceProblem prob(96, n, columns);
  SolveOptions o;
  o.factorization = Precision::FP64;
  o.refinement = Refinement::Classic;
  o.residual_precision = ResidualPrecision::Fp64;  // as Auto's for so many columns: one GEMM
  const SolveReport r = prob.solve_on_device(ctx, o);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_FALSE(r.fell_back) << r.summary();
  EXPECT_GE(r.attempts.at(0).iterations, 1) << r.summary();  // at least one residual was computed
  EXPECT_LT(prob.stop_test_ratio(1024), 1.0) << r.summary();
}

// SolveOptions::reuse_pivot_order on the engine's FP64 LU (forced at these n): the fallback after
// fp16x3 follows its row order where the multipliers stay within the bound and meets the stop
// test (n = 2100: a last panel narrower than the block); a row order the FP16 LU chose by
// rounding error (test_problems::misleading_order_matrix) is rejected and the FP64 LU pivots
// fully. Each case also without reuse, which must pivot fully.
TEST(GpuSolve, Fp64FallbackReusesTheCheapRowOrderWhileItsPivotsStandAboveItsRoundingError) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  solvers_detail::tuning().fp64_route = fp64_route("engine");
  struct Case {
    bool misleading;
    std::int64_t n;
  };
  for (const Case& c : {Case{false, 2100}, Case{true, 768}}) {
    const auto make_problem = [&] {
      if (!c.misleading) return DeviceProblem(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e12, 92), c.n, 1);
      DeviceProblem p(93, c.n, 1);
      p.a = test_problems::misleading_order_matrix(c.n / 3, 94);
      p.upload(95);
      return p;
    };
    DeviceProblem prob = make_problem();
    for (const bool reuse : {true, false}) {
      SCOPED_TRACE(std::string(c.misleading ? "misleading order" : "geo 1e12") + (reuse ? ", reuse" : ", no reuse"));
      SolveOptions o;
      o.factorization = c.misleading ? Precision::FP16 : Precision::Auto;
      o.auto_min_n = 0;
      o.reuse_pivot_order = reuse;
      const SolveReport r = prob.solve_on_device(ctx, o);
      EXPECT_TRUE(r.converged) << r.summary();
      EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
      ASSERT_GE(r.attempts.size(), 2u) << r.summary();
      const Attempt& last = r.attempts.back();
      ASSERT_EQ(last.precision, Precision::FP64) << r.summary();
      // The misleading order's pivots after its first block lie below the FP16 LU's rounding
      // error (trusted_order_columns): the FP64 LU follows it for that block only.
      EXPECT_EQ(last.pivot_order, reuse ? PivotOrder::Reused : PivotOrder::Partial) << r.summary();
      if (reuse) EXPECT_LE(last.largest_multiplier, kReusedOrderMaxMultiplier);
      if (reuse && c.misleading) EXPECT_EQ(last.reused_columns, c.n / 3) << r.summary();
      std::printf("%s", r.summary().c_str());
    }
  }
  solvers_detail::tuning().fp64_route = solvers_detail::Tuning::Fp64Route::BySize;
}

// The engine's buffers come from the Context's pool (Context::allocate), which keeps them for the
// next solve: a second solve of the same size maps no memory. FP64 factors after FP32 ones hand
// the pool's unused reserve back first (Context::make_room_for), so that the memory the context
// holds stays near the reported peak instead of FP32 + FP64 factors side by side.
TEST(GpuSolve, RepeatedSolvesReuseTheContextsPoolWhoseReserveStaysNearThePeak) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 4096;
  const std::size_t n2 = std::size_t(n) * std::size_t(n);
  DeviceProblem prob(111, n, 1);
  SolveOptions o;
  o.factorization = Precision::Fp16x3;
  std::size_t reserved = 0;
  for (int round = 0; round < 2; ++round) {
    const SolveReport r = prob.solve_on_device(ctx, o);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    EXPECT_EQ(ctx.used_memory_bytes(), 0u) << "every buffer given back when the solve returns";
    if (round == 0) {
      reserved = ctx.reserved_memory_bytes();
      EXPECT_GE(reserved, 4 * n2) << "the FP32 factors stay in the pool";
    } else {
      EXPECT_EQ(ctx.reserved_memory_bytes(), reserved) << "the second solve reused the pool";
    }
  }
  o.factorization = Precision::FP64;
  const SolveReport r = prob.solve_on_device(ctx, o);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_GE(ctx.reserved_memory_bytes(), 8 * n2);
  EXPECT_LE(ctx.reserved_memory_bytes(), r.peak_workspace_bytes + 2 * n2)
      << "the FP32 factors' block went back before the FP64 factors were mapped";
  ctx.release_retained_memory();
  EXPECT_EQ(ctx.reserved_memory_bytes(), 0u);
}

// SolveOptions::probe_pivot_ratio on the device engine (its pivot ratio, the random block, a
// 4-column product and solve): fp16x3 factors of a geo cond 1e12 matrix are far off in many
// directions, so auto ends that attempt before refinement (the default screen lets the probe
// run) and FP64 finishes; those of a cluster1 cond 1e10 matrix (one tiny singular value) pass a
// forced probe and converge without FP64.
TEST(GpuSolve, ProbeEndsWeakCheapAttemptsAndPassesOneOutlyingDirection) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 2100;
  DeviceProblem weak(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e12, 96), n, 1);
  SolveOptions o;
  o.auto_min_n = 0;
  const SolveReport r = weak.solve_on_device(ctx, o);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LT(weak.stop_test_ratio(), 1.0) << r.summary();
  ASSERT_EQ(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::Fp16x3);
  EXPECT_EQ(r.attempts[0].stop, StopReason::WeakFactors) << r.summary();
  EXPECT_GE(r.attempts[0].probe_estimate, kWeakFactorsProbe) << r.summary();
  EXPECT_GT(r.attempts[0].pivot_ratio, 0.0);
  EXPECT_LT(r.attempts[0].pivot_ratio, o.probe_pivot_ratio) << r.summary();
  EXPECT_EQ(r.attempts[1].precision, Precision::FP64);
  EXPECT_EQ(r.attempts[1].pivot_ratio, 0.0);  // FP64 factors are neither screened nor probed
  std::printf("%s", r.summary().c_str());

  DeviceProblem good(spec_of(MatrixFamily::Svd, Spectrum::Cluster1, 1e10, 97), n, 1);
  o.factorization = Precision::Fp16x3;
  o.probe_pivot_ratio = INFINITY;
  const SolveReport g = good.solve_on_device(ctx, o);
  EXPECT_TRUE(g.converged) << g.summary();
  EXPECT_LT(good.stop_test_ratio(), 1.0) << g.summary();
  for (const Attempt& a : g.attempts) EXPECT_EQ(a.precision, Precision::Fp16x3) << g.summary();
  EXPECT_GE(g.attempts.at(0).probe_estimate, 0.0) << g.summary();
  EXPECT_LT(g.attempts.at(0).probe_estimate, 0.01 * kWeakFactorsProbe) << g.summary();
  std::printf("%s", g.summary().c_str());
}

TEST(GpuSolve, Fp16x3FactorsRefineLikeFp32AndFasterThanFp16) {
  // Classic IR contracts by about kappa u per step, u the LU's effective unit roundoff: fp16x3
  // (22 bits) should need about FP32's steps and, at cond 1e3, clearly fewer than FP16 (11 bits).
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  int steps[3] = {};
  const Precision precisions[3] = {Precision::FP32, Precision::Fp16x3, Precision::FP16};
  DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e3, 51), 2048, 1);  // generated once (host SVD)
  for (int i = 0; i < 3; ++i) {
    SolveOptions o;
    o.factorization = precisions[i];
    o.refinement = Refinement::Classic;
    o.fallback = false;
    const SolveReport r = prob.solve_on_device(ctx, o);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    steps[i] = r.iterations;
    std::printf("%-7s %d classic steps\n", to_string(precisions[i]).c_str(), r.iterations);
  }
  EXPECT_LE(steps[1], steps[0] + 1);
  EXPECT_LT(steps[1], steps[2]);
}

// The device LU's delayed updates (Tuning::update_group: panels per bulk update, 2 by default and 3
// from n = 24576 on for FP32 factors) at a size a test can afford: every group gives fp16x3
// factors that refine to the stop test in about the same classic steps (a last panel narrower
// than the block, and a last group with fewer panels than the others).
TEST(GpuSolve, Fp16x3LuRefinesAlikeWithEveryUpdateGroup) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e3, 52), 2100, 1);
  for (const char* group : {"1", "2", "3", "4"}) {
    solvers_detail::tuning().update_group = std::atoi(group);
    SolveOptions o;
    o.factorization = Precision::Fp16x3;
    o.refinement = Refinement::Classic;
    o.fallback = false;
    const SolveReport r = prob.solve_on_device(ctx, o);
    solvers_detail::tuning().update_group = 0;
    SCOPED_TRACE(std::string("group ") + group);
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    EXPECT_LE(r.iterations, 5) << r.summary();
  }
}

// Every variant of the device LU that solvers_detail::Tuning can select solves alike: without
// look-ahead, column-major factors, L21 split by the fp16x3 backend instead of packed by the LU
// (fp16x3 only), and FP64 panels in 16-column sub-panels only (FP64 only: FP32 panels take 32
// columns either way). Each meets the stop test from fp16x3 factors in about the default's
// classic steps, and from FP64 factors (the blocked engine, forced at this n) with at most two.
TEST(GpuSolve, EveryTunableVariantOfTheDeviceLuSolvesAlike) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e3, 57), 2100, 1);
  struct Variant {
    const char* name;
    void (*set)(solvers_detail::Tuning&);
    bool fp16x3, fp64;  // the precisions whose LU it changes
  };
  const Variant variants[] = {
      {"default", [](solvers_detail::Tuning&) {}, true, true},
      {"no look-ahead", [](solvers_detail::Tuning& t) { t.look_ahead = false; }, true, true},
      {"column-major factors", [](solvers_detail::Tuning& t) { t.row_major_factors = false; }, true, true},
      {"L21 split by the backend", [](solvers_detail::Tuning& t) { t.packed_l21 = false; }, true, false},
      {"narrow FP64 panels", [](solvers_detail::Tuning& t) { t.narrow_panels_only = true; }, false, true},
  };
  const solvers_detail::Tuning saved = solvers_detail::tuning();
  int default_steps = -1;
  for (const Variant& v : variants)
    for (Precision p : {Precision::Fp16x3, Precision::FP64}) {
      if (!(p == Precision::FP64 ? v.fp64 : v.fp16x3)) continue;
      solvers_detail::tuning() = saved;
      solvers_detail::tuning().fp64_route = solvers_detail::Tuning::Fp64Route::Engine;
      v.set(solvers_detail::tuning());
      SolveOptions o;
      o.factorization = p;
      o.refinement = Refinement::Classic;
      o.fallback = false;
      const SolveReport r = prob.solve_on_device(ctx, o);
      solvers_detail::tuning() = saved;
      SCOPED_TRACE(std::string(v.name) + ", " + to_string(p));
      EXPECT_TRUE(r.converged) << r.summary();
      EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
      if (p == Precision::FP64) {
        EXPECT_LE(r.iterations, 2) << r.summary();
      } else if (default_steps < 0) {
        default_steps = r.iterations;
      } else {
        EXPECT_LE(r.iterations, default_steps + 1) << r.summary();
      }
    }
}

// The FP32 copy made in the scan of A (DeviceEngine::prepared_copy_usable: A rounded as is, where
// range scaling by a power of two mu would change only exponents) gives the same solution, bit for
// bit, as the copy of mu A the conversion makes (Tuning::scan_copy off): every rounding of the LU
// and of the solves scales with mu. A's largest entry ~37 (mu = 2^-6); and one beyond 2^20, where
// the scan's copy is not taken, converges too.
TEST(GpuSolve, Fp16x3FactorsOfTheScansCopyMatchThoseOfTheScaledCopyBitForBit) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  const std::int64_t n = 2100;
  for (const double scale : {37.0, 0x1p30}) {
    DeviceProblem prob(121, n, 2);
    for (double& v : prob.a) v *= scale;
    prob.upload(122);
    std::vector<std::vector<double>> solutions;
    std::vector<int> iterations;
    for (const char* copy : {"1", "0"}) {
      solvers_detail::tuning().scan_copy = std::atoi(copy) != 0;
      SolveOptions o;
      o.factorization = Precision::Fp16x3;
      o.fallback = false;
      const SolveReport r = prob.solve_on_device(ctx, o);
      solvers_detail::tuning().scan_copy = true;
      SCOPED_TRACE(std::string("scale ") + std::to_string(scale) + ", scan copy " + copy);
      EXPECT_TRUE(r.converged) << r.summary();
      EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
      solutions.push_back(prob.x);
      iterations.push_back(r.iterations);
    }
    EXPECT_EQ(iterations[0], iterations[1]);
    if (scale < 0x1p20) {
      for (std::size_t i = 0; i < solutions[0].size(); ++i)
        ASSERT_EQ(solutions[0][i], solutions[1][i]) << "entry " << i;
    }
  }
}

TEST(GpuSolve, RangeScalingLetsFp16AndBf16FactorBadlyScaledMatrices) {
  // The device engine's range scaling (SolveOptions::range_scaling) on the cases of the host
  // tests, at n = 1000 with two right-hand sides: entries near 2^40 (beyond FP16), near 2^-30
  // (below its normal range), near 2^200 (beyond FP32, for BF16), and columns scaled by 2^0 ..
  // 2^-30 (the two-sided equilibration). Unscaled, the first overflows.
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 1000;
  struct Case {
    Precision precision;
    double scale;
    bool spread_columns;
  };
  for (const Case c : {Case{Precision::FP16, 0x1p40, false}, Case{Precision::FP16, 0x1p-30, false},
                       Case{Precision::BF16, 0x1p200, false}, Case{Precision::FP16, 1.0, true}}) {
    TestMatrixSpec spec = spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e2, 60);
    spec.scale = c.scale;
    DeviceProblem prob(spec, n, 2);
    if (c.spread_columns) {
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < n; ++i) prob.a[i + j * n] *= std::ldexp(1.0, -int(30 * j / (n - 1)));
      prob.da.copy_from_host(prob.a);
    }
    SolveOptions o;
    o.factorization = c.precision;
    o.refinement = Refinement::Gmres;
    o.fallback = false;
    const SolveReport r = prob.solve_on_device(ctx, o);
    SCOPED_TRACE(to_string(c.precision) + " scale " + std::to_string(c.scale) +
                 (c.spread_columns ? " spread columns" : ""));
    EXPECT_TRUE(r.converged) << r.summary();
    EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
    ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
    EXPECT_TRUE(r.attempts[0].range_scaled);
    std::printf("%s", r.summary().c_str());
    if (c.scale == 0x1p40) {
      o.range_scaling = false;
      const SolveReport unscaled = prob.solve_on_device(ctx, o);
      ASSERT_FALSE(unscaled.attempts.empty());
      EXPECT_EQ(unscaled.attempts[0].stop, StopReason::Overflow) << unscaled.summary();
    }
  }
}

TEST(GpuSolve, SizesOffTheBlockGridAndManyRightHandSides) {
  // Sizes that are not multiples of the panel (256), its 32-column sub-panels or the triangular
  // solver's row blocks (128 / 64), one vector (bandwidth-bound solves) and six (cuBLAS trsm).
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  for (std::int64_t n : {33, 333, 1531})
    for (std::int64_t k : {1, 6})
      for (Precision p : {Precision::FP32, Precision::FP64}) {
        DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e4, 70 + n), n, k);
        SolveOptions o;
        o.factorization = p;
        o.fallback = false;
        const SolveReport r = prob.solve_on_device(ctx, o);
        SCOPED_TRACE(to_string(p) + " n = " + std::to_string(n) + " k = " + std::to_string(k));
        EXPECT_TRUE(r.converged) << r.summary();
        EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
        ASSERT_FALSE(r.backward_error_history.empty());
        // The first solve with FP32 factors alone is accurate to a few FP32 units (cond 1e4).
        if (p == Precision::FP32) EXPECT_LT(r.backward_error_history.front(), 1e-5) << r.summary();
      }
}

// The device LU factors [A 0; 0 I] of an order rounded up to the alignment the tensor cores want
// (kFactorAlignment = 32): sizes just off that grid, and a leading dimension of A that is odd,
// for the FP32-stored LUs and both FP64 routes (the blocked engine, forced here at small n, and
// cuSOLVER). Each must meet the stop test, and A's whole buffer, the gaps between its columns
// included, must be unchanged.
TEST(GpuSolve, SizesOffTheAlignmentGridAndOddLeadingDimensions) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  const solvers_detail::Tuning saved = solvers_detail::tuning();
  for (std::int64_t n : {1001, 2049, 2111}) {
    const std::int64_t lda = n + 3;
    DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e4, 90 + n), n, 1);
    std::vector<double> padded(lda * n, -7.0);  // the gaps hold a value the solver must not touch
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) padded[i + j * lda] = prob.a[i + j * n];
    DeviceBuffer<double> da(lda * n);
    da.copy_from_host(padded);
    for (const char* route : {"", "engine", "cusolver"})
      for (Precision p : {Precision::Fp16x3, Precision::FP32, Precision::FP64}) {
        if (*route && p != Precision::FP64) continue;
        if (*route) solvers_detail::tuning().fp64_route = fp64_route(route);
        SolveOptions o;
        o.factorization = p;
        o.fallback = false;
        prob.dx.copy_from_host(std::vector<double>(n, NAN));
        const SolveReport r =
            solve(ctx, device_view<const double>(da.data(), n, n, lda),
                  device_view<const double>(prob.db.data(), n, 1, n), device_view(prob.dx.data(), n, 1, n), o);
        ctx.synchronize();
        solvers_detail::tuning() = saved;
        prob.x = prob.dx.to_host();
        SCOPED_TRACE(to_string(p) + (*route ? std::string(" (") + route + ")" : "") + " n = " + std::to_string(n));
        EXPECT_TRUE(r.converged) << r.summary();
        EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
      }
    EXPECT_EQ(da.to_host(), padded) << "A and the gaps between its columns untouched";
  }
}

// SolveReport::condition_estimate from the device factors (A^-T by cuBLAS trsv, the permutation
// and the range scaling transposed) against the exact cond_inf(A) on the host: FP64 and FP32
// factors, and FP16 factors of a matrix whose rows and columns span 2^16 (two-sided range
// scaling, so R and S must sit on the right sides of the transpose). Higham's estimator is a
// lower bound rarely below a third of the norm; the factors' own error widens both sides.
TEST(GpuSolve, ConditionEstimateFromTheDeviceFactorsMatchesTheExactConditionNumber) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 700;
  for (Precision p : {Precision::FP64, Precision::FP32, Precision::FP16}) {
    DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e2, 17), n, 1);
    if (p == Precision::FP16) {  // rows scaled by 2^[-7, 7], columns by 2^[0, 2]
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < n; ++i)
          prob.a[i + j * n] = std::ldexp(prob.a[i + j * n], int(i % 15) - 7 + int(j % 3));
      prob.da.copy_from_host(prob.a);
    }
    const Eigen::Map<const Eigen::MatrixXd> a(prob.a.data(), n, n);
    const double exact = a.cwiseAbs().rowwise().sum().maxCoeff() * a.inverse().cwiseAbs().rowwise().sum().maxCoeff();
    SolveOptions o;
    o.factorization = p;
    o.fallback = false;
    o.condition_estimate = ConditionEstimate::Always;
    const SolveReport r = prob.solve_on_device(ctx, o);
    SCOPED_TRACE(to_string(p));
    ASSERT_TRUE(r.converged) << r.summary();
    if (p == Precision::FP16) EXPECT_TRUE(r.attempts.front().range_scaled) << r.summary();
    // The factors' inverse is that of A to about cond * u relative (FP16: 1e2 * 2^-11 ~ 0.05).
    const double factor_error = p == Precision::FP64 ? 1e-6 : p == Precision::FP32 ? 1e-3 : 0.2;
    EXPECT_LE(r.condition_estimate, exact * (1 + factor_error)) << r.summary();
    EXPECT_GE(r.condition_estimate, exact / 3 * (1 - factor_error)) << r.summary();
    EXPECT_GT(r.forward_error_bound, 0) << r.summary();
  }
}

// A numerically singular matrix (Hilbert, n = 2000): the FP64 factors' pivots span more than
// 1 / u, so their solves go by substitution, and the returned x's backward error is within 10x of
// the host's FP64 LU's (Eigen, partial pivoting), under auto and FP64. Under auto the fp16x3 LU's
// pivots collapse and it stops part way (kCollapseMinPivots: judged after its second panel, read
// kOrderVerdictLag panels later).
TEST(GpuSolve, NumericallySingularMatrixIsNeverWorseThanTheFp64Lu) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 2000;
  DeviceProblem prob(std::uint64_t(5), n, 1);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) prob.a[i + j * n] = 1.0 / double(i + j + 1);
  prob.da.copy_from_host(prob.a);
  const Eigen::Map<const Eigen::MatrixXd> a(prob.a.data(), n, n);
  const Eigen::Map<const Eigen::VectorXd> b(prob.b.data(), n);
  const double norm_a = a.cwiseAbs().rowwise().sum().maxCoeff();
  const auto backward_error = [&](const Eigen::VectorXd& x) {
    return (b - a * x).cwiseAbs().maxCoeff() / (norm_a * x.cwiseAbs().maxCoeff() + b.cwiseAbs().maxCoeff());
  };
  const double lu_berr = backward_error(a.partialPivLu().solve(b));
  for (Precision p : {Precision::Auto, Precision::FP64}) {
    SolveOptions o;
    o.factorization = p;
    o.auto_min_n = 0;
    const SolveReport r = prob.solve_on_device(ctx, o);
    SCOPED_TRACE(to_string(p));
    const double berr = backward_error(Eigen::Map<const Eigen::VectorXd>(prob.x.data(), n));
    EXPECT_LE(berr, 10 * std::max(lu_berr, 0x1p-53)) << r.summary();
    EXPECT_EQ(r.attempts.back().precision, Precision::FP64) << r.summary();
    if (p == Precision::Auto) {
      EXPECT_EQ(r.attempts.front().stop, StopReason::CollapsedPivots) << r.summary();
      EXPECT_EQ(r.attempts.front().collapsed_at_column, 512) << r.summary();
    }
  }
}

// core/norms.hpp's componentwise backward error on the device matches the host's for the FP64
// solution of a random system with a relative perturbation of 1e-6 in every entry: the residual
// (~1e-7 of the sums) is summed in another order on the device (chunks of columns, atomics).
TEST(GpuSolve, ComponentwiseBackwardErrorOnTheDeviceMatchesTheHost) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 301;
  DeviceProblem prob(std::uint64_t(9), n, 1);
  const Eigen::Map<const Eigen::MatrixXd> a(prob.a.data(), n, n);
  Eigen::VectorXd x = a.partialPivLu().solve(Eigen::Map<const Eigen::VectorXd>(prob.b.data(), n));
  for (std::int64_t i = 0; i < n; ++i) x[i] *= 1 + (i % 2 ? 1e-6 : -1e-6);
  DeviceBuffer<double> dx(n);
  dx.copy_from_host(std::vector<double>(x.data(), x.data() + n));
  const double host =
      componentwise_backward_error(host_view<const double>(prob.a.data(), n, n, n), x.data(), prob.b.data());
  const double device = componentwise_backward_error(device_view<const double>(prob.da.data(), n, n, n), dx.data(),
                                                     prob.db.data(), ctx.stream());
  EXPECT_GT(host, 1e-9);
  EXPECT_LT(host, 1e-5);
  EXPECT_NEAR(device, host, 1e-6 * host);
  // With the caller's residual as the numerator both sides divide the same numbers up to the
  // denominators' summation order.
  const Eigen::VectorXd r = Eigen::Map<const Eigen::VectorXd>(prob.b.data(), n) - a * x;
  DeviceBuffer<double> dr(n);
  dr.copy_from_host(std::vector<double>(r.data(), r.data() + n));
  const double host_r = componentwise_backward_error(host_view<const double>(prob.a.data(), n, n, n), x.data(),
                                                     prob.b.data(), nullptr, nullptr, r.data());
  const double device_r = componentwise_backward_error(device_view<const double>(prob.da.data(), n, n, n), dx.data(),
                                                       prob.db.data(), ctx.stream(), nullptr, dr.data());
  EXPECT_NEAR(device_r, host_r, 1e-12 * host_r);
}

// A reused row order that fails its multiplier check in the first panel ends the FP64 LU a few
// panels later (kOrderVerdictLag) and partial pivoting starts over, with and without the
// look-ahead's streams. The driver never meets such an order any more (trusted_order_columns), so
// the engine is driven directly: an FP64 LU of M1 (a diagonally dominant M with its rows in a
// random order, whose partial pivoting undoes the shuffle), then A's buffer becomes M itself and
// the FP64 LU follows M1's order: its diagonal blocks hold M's 1e-8 off-diagonal entries.
TEST(GpuSolve, ReusedRowOrderThatFailsItsCheckEndsTheFp64LuEarly) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  const std::int64_t n = 2048;  // 8 panels: the verdict on panel 0 is read before panel 3
  std::vector<double> m(n * n), shuffled(n * n);
  fill_random(host_view(m.data(), n, n, n), RandomSpec::uniform(-1e-8, 1e-8, 41));
  for (std::int64_t i = 0; i < n; ++i) m[i + i * n] = 1.0;
  std::vector<std::int64_t> rows(n);
  for (std::int64_t i = 0; i < n; ++i) rows[i] = i;
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(rows[i], rows[random_bits(43, std::uint64_t(i)) % std::uint64_t(i + 1)]);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) shuffled[i + j * n] = m[rows[i] + j * n];
  std::vector<double> b(n);
  fill_random(host_view(b.data(), n, 1, n), RandomSpec::uniform(-1, 1, 44));
  solvers_detail::tuning().fp64_route = fp64_route("engine");
  for (const char* look_ahead : {"1", "0"}) {
    solvers_detail::tuning().look_ahead = std::atoi(look_ahead) != 0;
    SCOPED_TRACE(std::string("look-ahead ") + look_ahead);
    Context ctx;
    DeviceBuffer<double> da(n * n), dy(n);
    da.copy_from_host(shuffled);
    auto engine = solvers_detail::make_device_engine(ctx, device_view<const double>(da.data(), n, n, n), 0);
    const solvers_detail::FactorResult first = engine->factor({FactorKind::Lu, Precision::FP64, false, false, 0.0});
    ASSERT_EQ(first.status, StopReason::Converged);
    da.copy_from_host(m);
    const solvers_detail::FactorResult second = engine->factor({FactorKind::Lu, Precision::FP64, false, true, 0.0});
    EXPECT_EQ(second.status, StopReason::Converged);
    EXPECT_EQ(second.pivot_order, PivotOrder::Rejected);
    // U11^-1 of such a block may overflow: NaN and Inf fail the check as a large value does.
    EXPECT_FALSE(second.largest_multiplier <= kReusedOrderMaxMultiplier) << second.largest_multiplier;
    // The factors are M's, with partial pivoting: one solve gives x with M x ~ b.
    dy.copy_from_host(b);
    engine->apply_inverse(device_view(dy.data(), n, 1, n));
    engine->synchronize();
    const std::vector<double> x = dy.to_host();
    double residual = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double s = -b[i];
      for (std::int64_t j = 0; j < n; ++j) s += m[i + j * n] * x[j];
      residual = std::max(residual, std::fabs(s));
    }
    EXPECT_LT(residual, 1e-12) << "M x = b to about n u";
  }
  solvers_detail::tuning().look_ahead = true;
  solvers_detail::tuning().fp64_route = solvers_detail::Tuning::Fp64Route::BySize;
}

TEST(GpuSolve, AutoEscalatesOnIllConditionedMatricesAndConverges) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e12, 51), 1024, 1);
  const std::vector<double> a0 = prob.a, b0 = prob.b;
  SolveOptions o;
  o.auto_min_n = 0;  // the cheap rung at this small n too
  const SolveReport r = prob.solve_on_device(ctx, o);
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LT(prob.stop_test_ratio(), 1.0);
  ASSERT_GE(r.attempts.size(), 2u) << r.summary();
  EXPECT_EQ(r.attempts.front().precision, SolveOptions{}.auto_path.front());
  EXPECT_EQ(r.attempts.back().precision, Precision::FP64);
  EXPECT_EQ(prob.da.to_host(), a0) << "A untouched";
  EXPECT_EQ(prob.db.to_host(), b0) << "B untouched";
  std::printf("%s", r.summary().c_str());
}

TEST(GpuSolve, FamiliesConvergeUnderAuto) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  for (MatrixFamily f : {MatrixFamily::Svd, MatrixFamily::Poev, MatrixFamily::Heev})
    for (Spectrum s : {Spectrum::Arith, Spectrum::Geo, Spectrum::Cluster1})
      for (double cond : {1e2, 1e8}) {
        DeviceProblem prob(spec_of(f, s, cond, 60), 1024, 1);
        SolveOptions o;
        o.auto_min_n = 0;  // the cheap rung at this small n too
        const SolveReport r = prob.solve_on_device(ctx, o);
        SCOPED_TRACE(spec_of(f, s, cond, 60).name());
        EXPECT_TRUE(r.converged) << r.summary();
        EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
      }
}

TEST(GpuSolve, DefaultAutoFactorsSmallDeviceMatricesInFp64AtOnce) {
  // Below SolveOptions::auto_min_n (12288 for device matrices by default) the cheap LU does not
  // beat cuSOLVER's dgetrf, so Auto goes straight to FP64.
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  DeviceProblem prob(spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e2, 61), 1024, 1);
  const SolveReport r = prob.solve_on_device(ctx, SolveOptions{});
  EXPECT_TRUE(r.converged) << r.summary();
  EXPECT_LT(prob.stop_test_ratio(), 1.0) << r.summary();
  ASSERT_EQ(r.attempts.size(), 1u) << r.summary();
  EXPECT_EQ(r.attempts[0].precision, Precision::FP64);
  EXPECT_FALSE(r.fell_back) << "not a fallback: no cheaper factorization was tried";
}

// A random n x n device matrix whose column `zero_column` is zero, and B = ones.
struct SingularDeviceProblem {
  std::int64_t n;
  DeviceBuffer<double> da, db, dx;
  SingularDeviceProblem(std::int64_t n_, std::int64_t zero_column, std::uint64_t seed)
      : n(n_), da(n_ * n_), db(n_), dx(n_) {
    std::vector<double> a(n * n), b(n, 1.0);
    fill_random(host_view(a.data(), n, n, n), RandomSpec::uniform(-1, 1, seed));
    for (std::int64_t i = 0; i < n; ++i) a[i + zero_column * n] = 0.0;
    da.copy_from_host(a);
    db.copy_from_host(b);
  }
  SolveReport run(Context& ctx, const SolveOptions& o) {
    return solve(ctx, device_view<const double>(da.data(), n, n, n), device_view<const double>(db.data(), n, 1, n),
                 device_view(dx.data(), n, 1, n), o);
  }
};

TEST(GpuSolve, ZeroPivotInAnFp32PanelIsReportedWithItsColumnAndEscalates) {
  // Column 700 is zero: every factorization meets a zero pivot there (panel 2 of 256 columns);
  // the FP32 attempt reports the column, the FP64 one turns it into SingularMatrix.
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  SingularDeviceProblem prob(1000, 700, 4);
  SolveOptions o;
  o.factorization = Precision::FP32;
  o.fallback = false;
  const SolveReport r = prob.run(ctx, o);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].stop, StopReason::ZeroPivot);
  EXPECT_EQ(r.attempts[0].zero_pivot_column, 700);
  EXPECT_FALSE(r.converged);
  o.fallback = true;
  EXPECT_THROW(prob.run(ctx, o), SingularMatrix);
}

TEST(GpuSolve, SingularDeviceMatrixIsAnErrorNamingTheColumn) {
  MIXSOLVE_REQUIRE_GPU();
  const ScopedTuning restore_tuning;
  Context ctx;
  SingularDeviceProblem prob(300, 200, 3);  // column 200 is zero
  SolveOptions o;
  o.factorization = Precision::FP64;
  for (const char* route : {"cusolver", "engine"}) {  // the FP64 LU's two routes (see above)
    solvers_detail::tuning().fp64_route = fp64_route(route);
    try {
      prob.run(ctx, o);
      ADD_FAILURE() << route << ": expected SingularMatrix";
    } catch (const SingularMatrix& e) {
      EXPECT_EQ(e.column(), 200) << route << ": " << e.what();
    }
    solvers_detail::tuning().fp64_route = solvers_detail::Tuning::Fp64Route::BySize;
  }
}

}  // namespace

namespace {

TEST(GpuTestMatrices, DeviceGeneratedSpectraMatchTheSpec) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 200;
  for (MatrixFamily f : {MatrixFamily::Svd, MatrixFamily::Poev, MatrixFamily::Heev}) {
    TestMatrixSpec spec = spec_of(f, Spectrum::Geo, 1e6, 70);
    SCOPED_TRACE(spec.name());
    DeviceBuffer<double> da(n * n);
    generate_test_matrix_on_device(spec, device_view(da.data(), n, n, n), ctx.stream());
    const std::vector<double> a = da.to_host(ctx.stream());
    const Eigen::Map<const Eigen::MatrixXd> m(a.data(), n, n);
    Eigen::VectorXd got =
        f == MatrixFamily::Svd
            ? Eigen::VectorXd(Eigen::JacobiSVD<Eigen::MatrixXd>(m).singularValues())
            : Eigen::VectorXd(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(m).eigenvalues().cwiseAbs());
    std::sort(got.data(), got.data() + n, std::greater<double>());
    const std::vector<double> expected = spectrum_values(spec, n);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(got(i), expected[i], 50 * n * 0x1p-53) << "value " << i;
    if (f != MatrixFamily::Svd) EXPECT_EQ((m - m.transpose()).norm(), 0.0);
  }
  // A tall svd matrix (U with orthonormal columns); taller shapes of other families are refused.
  const std::int64_t rows = 500, cols = 120;
  const TestMatrixSpec tall = spec_of(MatrixFamily::Svd, Spectrum::Geo, 1e6, 71);
  DeviceBuffer<double> da(rows * cols);
  generate_test_matrix_on_device(tall, device_view(da.data(), rows, cols, rows), ctx.stream());
  const std::vector<double> a = da.to_host(ctx.stream());
  const Eigen::VectorXd got =
      Eigen::JacobiSVD<Eigen::MatrixXd>(Eigen::Map<const Eigen::MatrixXd>(a.data(), rows, cols)).singularValues();
  const std::vector<double> expected = spectrum_values(tall, cols);
  for (std::int64_t i = 0; i < cols; ++i) ASSERT_NEAR(got(i), expected[i], 50 * rows * 0x1p-53) << "tall, value " << i;
  EXPECT_THROW(generate_test_matrix_on_device(spec_of(MatrixFamily::Poev, Spectrum::Geo, 1e6, 71),
                                              device_view(da.data(), rows, cols, rows), ctx.stream()),
               InvalidArgument);
  EXPECT_THROW(generate_test_matrix_on_device(tall, device_view(da.data(), cols, rows, cols), ctx.stream()),
               InvalidArgument);
}

}  // namespace
