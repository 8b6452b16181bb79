// SPDX-License-Identifier: BSD-3-Clause
// SolveOptions and LeastSquaresOptions as text (mixsolve/solvers/options.hpp): every field read
// and written back, the named errors for unknown fields, malformed values and values out of range.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/options.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace {

using namespace mixsolve;

// Whether the text of every field is the same (progress aside): to_string covers every field.
void expect_same_fields(const SolveOptions& a, const SolveOptions& b) { EXPECT_EQ(to_string(a), to_string(b)); }

TEST(SolveOptionsText, EveryFieldReadsBackWhatToStringWrites) {
  SolveOptions o;
  o.factorization = Precision::Fp16x3;
  o.structure = Structure::Spd;
  o.auto_path = {Precision::FP16, Precision::FP32, Precision::Ozaki};
  o.auto_min_n = 40;
  o.cholesky_auto_path = {Precision::Tf32tf32, Precision::FP32};
  o.cholesky_auto_min_n = 77;
  o.refinement = Refinement::Gmres;
  o.stop_test = StopTest::Lapack;
  o.residual_precision = ResidualPrecision::Fp64;
  o.tolerance_factor = 0.1;  // no short binary form: the text must carry every digit it needs
  o.max_iterations = 7;
  o.gmres_restart = 9;
  o.gmres_max_inner = 33;
  o.krylov_basis_format = slfp::Format::Slfp64in32;
  o.factor_storage = slfp::Format::Slfp32in24;
  o.escalate_by_cost = false;
  o.fallback = false;
  o.reuse_pivot_order = false;
  o.probe_pivot_ratio = INFINITY;
  o.range_scaling = false;
  o.condition_estimate = ConditionEstimate::Always;
  o.block_size = 48;
  o.ozaki_bits = 44;
  const SolveOptions back = parse_solve_options(to_string(o));
  expect_same_fields(back, o);
  EXPECT_EQ(back.factorization, Precision::Fp16x3);
  EXPECT_EQ(back.structure, Structure::Spd);
  EXPECT_EQ(back.auto_path, o.auto_path);
  EXPECT_EQ(back.auto_min_n, 40);
  EXPECT_EQ(back.cholesky_auto_path, o.cholesky_auto_path);
  EXPECT_EQ(back.cholesky_auto_min_n, 77);
  EXPECT_EQ(back.tolerance_factor, 0.1);
  EXPECT_EQ(back.residual_precision, ResidualPrecision::Fp64);
  EXPECT_EQ(back.probe_pivot_ratio, INFINITY);
  EXPECT_FALSE(back.fallback);
  EXPECT_EQ(back.ozaki_bits, 44);
  // The defaults read back as the defaults, and every field of the table is in the text.
  expect_same_fields(parse_solve_options(to_string(SolveOptions{})), SolveOptions{});
  const std::string text = to_string(SolveOptions{});
  for (const OptionField& f : solve_option_fields())
    EXPECT_NE(text.find(f.name + "="), std::string::npos) << f.name;
  EXPECT_EQ(solve_option_fields().size(), 24u);
}

TEST(SolveOptionsText, SetsOnlyTheFieldsNamedOverTheBase) {
  SolveOptions base;
  base.max_iterations = 3;
  const SolveOptions o = parse_solve_options("precision=fp16,refinement=gmres,,", base);
  EXPECT_EQ(o.factorization, Precision::FP16);
  EXPECT_EQ(o.refinement, Refinement::Gmres);
  EXPECT_EQ(o.max_iterations, 3);
  EXPECT_EQ(o.structure, Structure::General);
  expect_same_fields(parse_solve_options(""), SolveOptions{});
}

// The message of an InvalidArgument thrown by f, "" where none was.
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(SolveOptionsText, ErrorsNameTheFieldAndTheValue) {
  SolveOptions o;
  const auto expect_message = [&](const std::string& text, std::initializer_list<const char*> parts) {
    const std::string m = message_of([&] { parse_solve_options(text); });
    ASSERT_FALSE(m.empty()) << text << ": no error";
    for (const char* part : parts) EXPECT_NE(m.find(part), std::string::npos) << text << ": " << m;
  };
  expect_message("precison=fp16", {"\"precison\" is not a field", "precision"});
  expect_message("precision=fp8", {"precision", "fp8"});
  expect_message("structure=SPD", {"structure", "SPD"});
  expect_message("max-iterations=-1", {"max-iterations", "-1", "< 0"});
  expect_message("max-iterations=3.5", {"max-iterations", "3.5", "not an integer"});
  expect_message("max-iterations=99999999999", {"max-iterations", "not an integer"});
  expect_message("tolerance-factor=0", {"tolerance-factor", "<= 0"});
  expect_message("tolerance-factor=inf", {"tolerance-factor", "not finite"});
  expect_message("probe-pivot-ratio=nan", {"probe-pivot-ratio", "NaN"});
  expect_message("probe-pivot-ratio=-1", {"probe-pivot-ratio", "< 0"});
  expect_message("ozaki-bits=60", {"ozaki-bits", "60", "outside"});
  expect_message("fallback=yes", {"fallback", "yes", "true or false"});
  expect_message("factor-storage=fp64", {"factor-storage", "fp64"});
  expect_message("krylov-basis-format=fp32", {"krylov-basis-format", "FP32-based"});
  expect_message("auto-path=fp16+auto", {"auto-path", "auto"});
  expect_message("precision", {"\"precision\" is not name=value"});
  // A refused value leaves the options as they were.
  o.max_iterations = 5;
  EXPECT_THROW(set_solve_option(o, "max-iterations", "-2"), InvalidArgument);
  EXPECT_EQ(o.max_iterations, 5);
}

TEST(SolveOptionsText, AnEnumeratorOutsideItsEnumerationIsRefusedBySolve) {
  SolveOptions o;
  o.structure = static_cast<Structure>(7);
  std::vector<double> a = {2, 0, 0, 2}, b = {1, 1}, x(2);
  Context ctx = Context::host_only();
  const std::string m = message_of([&] {
    solve(ctx, host_view<const double>(a.data(), 2, 2, 2), host_view<const double>(b.data(), 2, 1, 2),
          host_view(x.data(), 2, 1, 2), o);
  });
  EXPECT_NE(m.find("structure (7)"), std::string::npos) << m;
}

TEST(LeastSquaresOptionsText, EveryFieldReadsBackAndErrorsNameTheField) {
  LeastSquaresOptions o;
  o.factorization = Precision::FP64;
  o.max_iterations = 4;
  o.fallback = false;
  o.block_size = 64;
  o.fp32_update = "host-fp32";
  o.refinement = LeastSquaresOptions::Refinement::AugmentedThenGmres;
  o.cholesky_qr = false;
  o.rank_deficient = LeastSquaresOptions::RankDeficiency::FullRank;
  o.rcond = 1e-9;
  o.ridge = 0.25;
  const LeastSquaresOptions back = parse_least_squares_options(to_string(o));
  EXPECT_EQ(to_string(back), to_string(o));
  EXPECT_EQ(back.factorization, Precision::FP64);
  EXPECT_EQ(back.refinement, LeastSquaresOptions::Refinement::AugmentedThenGmres);
  EXPECT_EQ(back.fp32_update, "host-fp32");
  EXPECT_EQ(back.fp32_vt_c_update, "");
  EXPECT_EQ(back.rank_deficient, LeastSquaresOptions::RankDeficiency::FullRank);
  EXPECT_EQ(back.rcond, 1e-9);
  EXPECT_EQ(back.ridge, 0.25);
  EXPECT_EQ(to_string(parse_least_squares_options(to_string(LeastSquaresOptions{}))), to_string(LeastSquaresOptions{}));
  const std::string text = to_string(LeastSquaresOptions{});
  for (const OptionField& f : least_squares_option_fields()) EXPECT_NE(text.find(f.name + "="), std::string::npos);
  EXPECT_EQ(least_squares_option_fields().size(), 12u);
  for (auto r : {LeastSquaresOptions::RankDeficiency::MinimumNorm, LeastSquaresOptions::RankDeficiency::FullRank})
    EXPECT_EQ(parse_rank_deficiency(to_string(r)), r);
  for (LeastSquaresOptions::Refinement r :
       {LeastSquaresOptions::Refinement::Augmented, LeastSquaresOptions::Refinement::Gmres,
        LeastSquaresOptions::Refinement::AugmentedThenGmres, LeastSquaresOptions::Refinement::Cgls})
    EXPECT_EQ(parse_least_squares_refinement(to_string(r)), r);
  const auto message = [](const std::string& text) {
    return message_of([&] { parse_least_squares_options(text); });
  };
  EXPECT_NE(message("precision=fp16").find("fp16 is not supported"), std::string::npos) << message("precision=fp16");
  EXPECT_NE(message("max-iterations=0").find("max_iterations (0) < 1"), std::string::npos);
  EXPECT_NE(message("auto-min-work=-2").find("auto_min_work (-2) < -1"), std::string::npos)
      << message("auto-min-work=-2");
  EXPECT_NE(message("refinement=cg").find("refinement = \"cg\""), std::string::npos) << message("refinement=cg");
  EXPECT_NE(message("fp32-update=cublas-dgemm").find("not an FP32 GEMM backend"), std::string::npos);
  EXPECT_NE(message("qr=fp32").find("\"qr\" is not a field"), std::string::npos);
  EXPECT_NE(message("rcond=1").find("rcond (1) must be below 1"), std::string::npos) << message("rcond=1");
  EXPECT_NE(message("ridge=-1").find("ridge (-1) must be finite and >= 0"), std::string::npos) << message("ridge=-1");
  EXPECT_NE(message("rank-deficient=svd").find("rank-deficient = \"svd\""), std::string::npos)
      << message("rank-deficient=svd");
}

}  // namespace
