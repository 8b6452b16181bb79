// SPDX-License-Identifier: BSD-3-Clause
// The argument and input fuzz test on host memory (tests/fuzz/): thousands of random
// calls of solve(), Factorization, least_squares(), the host GEMM backends and the SLFP kernels,
// each ending in a result checked against a machine-independent reference or in the documented
// named error, with inputs unmodified. MIXSOLVE_FUZZ_SEED / MIXSOLVE_FUZZ_CASES replay or resize a
// run; each test prints its master seed and a summary line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/gemm_cases.hpp"
#include "fuzz/least_squares_cases.hpp"
#include "fuzz/rng.hpp"
#include "fuzz/settings_and_outcomes.hpp"
#include "fuzz/slfp_cases.hpp"
#include "fuzz/solve_cases.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/solvers/least_squares.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::fuzz;

TEST(Fuzz, SolveArgumentsAndInputs) {
  FuzzRun run("Fuzz.SolveArgumentsAndInputs", 4000);
  Context ctx = Context::host_only();
  for (std::int64_t i = 0; i < run.cases(); ++i) run_solve_case(run, ctx, false, false, i);
  run.finish({"result", "InvalidArgument", "SingularMatrix"}, 20);
}

TEST(Fuzz, FactorizationSolvesSeveralRightHandSides) {
  FuzzRun run("Fuzz.FactorizationSolvesSeveralRightHandSides", 1500);
  Context ctx = Context::host_only();
  for (std::int64_t i = 0; i < run.cases(); ++i) run_solve_case(run, ctx, false, true, i);
  run.finish({"result", "InvalidArgument", "SingularMatrix"}, 10);
}

TEST(Fuzz, LeastSquares) {
  FuzzRun run("Fuzz.LeastSquares", 3000);
  Context ctx = Context::host_only();
  for (std::int64_t i = 0; i < run.cases(); ++i) run_ls_case(run, ctx, false, i);
  run.finish({"result", "InvalidArgument", "RankDeficientMatrix"}, 10);
}

TEST(Fuzz, GemmBackends) {
  FuzzRun run("Fuzz.GemmBackends", 6000);
  Context ctx = Context::host_only();
  for (std::int64_t i = 0; i < run.cases(); ++i) run_gemm_case(run, ctx, false, i);
  run.finish({"result", "InvalidArgument", "NotSupported", "RangeError"}, 20);
}

TEST(Fuzz, SlfpKernels) {
  FuzzRun run("Fuzz.SlfpKernels", 6000);
  Context ctx = Context::host_only();
  for (std::int64_t i = 0; i < run.cases(); ++i) run_slfp_case(run, ctx, false, i);
  run.finish({"result", "InvalidArgument", "NotSupported"}, 20);
}

}  // namespace

// Bugs the fuzz found, each as a small deterministic case.
namespace regressions {

using namespace mixsolve;
using namespace mixsolve::fuzz;

// m x n with pseudo-random entries in [-1, 1) times 2^scale, and b = A (1, ..., 1): a consistent
// system whose least-squares solution is x = 1.
struct Consistent {
  std::int64_t m, n;
  std::vector<double> a, b;
  Consistent(std::int64_t m_, std::int64_t n_, int scale, std::uint64_t seed, int row_spread = 0, bool random_b = false)
      : m(m_), n(n_), a(std::size_t(m_ * n_)), b(std::size_t(m_), 0.0) {
    Rng rng(seed);
    std::vector<int> row(static_cast<std::size_t>(m));
    for (int& e : row) e = int(rng.range(-row_spread, row_spread));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i)
        a[std::size_t(i + j * m)] = std::ldexp(rng.uniform(-1, 1), scale + row[std::size_t(i)]);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) b[std::size_t(i)] += a[std::size_t(i + j * m)];
    if (random_b)
      for (double& v : b) v = rng.uniform(-1, 1);
  }
};

// An exactly zero column under RankDeficiency::FullRank: numerically rank deficient, whatever
// the precision path (the host's inverse iteration divided by the zero |r_jj| and returned NaN as
// "not converged").
TEST(FuzzRegressions, ZeroColumnIsRankDeficientForLeastSquares) {
  Consistent p(6, 3, 0, 1);
  for (std::int64_t i = 0; i < p.m; ++i) p.a[std::size_t(i + 1 * p.m)] = 0;
  Context ctx = Context::host_only();
  for (Precision precision : {Precision::FP64, Precision::FP32}) {
    LeastSquaresOptions o;
    o.factorization = precision;
    o.rank_deficient = LeastSquaresOptions::RankDeficiency::FullRank;
    std::vector<double> x(std::size_t(p.n), -7.0);
    try {
      least_squares(ctx, host_view<const double>(p.a.data(), p.m, p.n, p.m),
                    host_view<const double>(p.b.data(), p.m, 1, p.m), host_view(x.data(), p.n, 1, p.n), o);
      ADD_FAILURE() << to_string(precision) << ": no RankDeficientMatrix";
    } catch (const RankDeficientMatrix& e) {
      EXPECT_EQ(e.column(), 1) << e.what();
    }
  }
}

// GMRES-LS on A and b scaled by 2^-600 or 2^600 (exact scalings: x does not change): its residual's
// squares underflowed (a zero residual, read as converged with FP32 accuracy) or overflowed.
TEST(FuzzRegressions, GmresLeastSquaresIsScaleInvariant) {
  Context ctx = Context::host_only();
  for (int scale : {0, -600, 600}) {
    const Consistent p(5, 4, scale, 2);
    LeastSquaresOptions o;
    o.refinement = LeastSquaresOptions::Refinement::Gmres;
    std::vector<double> x(4);
    const LeastSquaresReport r =
        least_squares(ctx, host_view<const double>(p.a.data(), 5, 4, 5), host_view<const double>(p.b.data(), 5, 1, 5),
                      host_view(x.data(), 4, 1, 4), o);
    EXPECT_TRUE(r.converged) << "2^" << scale << ": " << r.path();
    EXPECT_EQ(r.attempts.size(), 1u) << "2^" << scale << ": " << r.path();  // GMRES-LS itself converges
    // kappa(A) < 100 here: the FP64-accurate x is within 100 (n + 1) u of 1 (Higham, Thm. 20.3).
    for (double v : x) EXPECT_LE(std::fabs(v - 1), 100 * 5 * kU64) << "2^" << scale << ": " << r.path();
  }
}

// Square systems with rows scaled by 2^+-12 (kappa up to ~1e8) and FP64 factors: refinement with
// the FP64 QR was reported diverged where a later iterate's residual exceeded the first one's by
// FP64's rounding noise, u ||A|| ||x||, far above u ||b||, while X was accurate.
TEST(FuzzRegressions, Fp64LeastSquaresOfBadlyScaledSquareSystemsConverges) {
  Context ctx = Context::host_only();
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const Consistent p(31, 31, 0, 100 + seed, 12, true);  // square: consistent for any b
    LeastSquaresOptions o;
    o.factorization = Precision::FP64;
    o.refinement = LeastSquaresOptions::Refinement::Augmented;
    std::vector<double> x(31);
    const LeastSquaresReport r =
        least_squares(ctx, host_view<const double>(p.a.data(), 31, 31, 31),
                      host_view<const double>(p.b.data(), 31, 1, 31), host_view(x.data(), 31, 1, 31), o);
    EXPECT_TRUE(r.converged) << "seed " << seed << ": " << r.path();
  }
}

// ozaki2-int8's parameter values inside their specs' ranges that run() refuses: can_implement
// says so too (it answered Ok).
TEST(FuzzRegressions, CanImplementReportsTheOzaki2ParameterRefusals) {
  Context ctx = Context::host_only();
  std::vector<double> a(16, 1.0), b(16, 1.0), c(16, 0.0);
  const gemm::Problem p{4,
                        4,
                        4,
                        1,
                        0,
                        gemm::Operand::dense(gemm::Format::F64, gemm::Op::N, a.data(), 4),
                        gemm::Operand::dense(gemm::Format::F64, gemm::Op::N, b.data(), 4),
                        gemm::Output{gemm::Format::F64, c.data(), 4}};
  const gemm::Backend& host = gemm::find_backend("host-ozaki2-int8");
  for (const gemm::Parameters& refused :
       {gemm::Parameters{{"moduli", 1}}, gemm::Parameters{{"moduli", 5}, {"bits", 20}}}) {
    const gemm::Support s = host.can_implement(ctx, p, refused);
    EXPECT_EQ(s.status, gemm::Support::Status::InvalidArgument) << s.reason;
    try {
      host.run(ctx, p, refused);
      ADD_FAILURE() << "run() accepted what can_implement refused";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(s.reason), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(host.can_implement(ctx, p, {{"moduli", 5}}));
}

}  // namespace regressions
