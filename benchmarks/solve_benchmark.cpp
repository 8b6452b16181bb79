// SPDX-License-Identifier: BSD-3-Clause
// solve_benchmark: mixsolve::solve against cuSOLVER on the same GPU, in the same run.
//
// For each n, spectrum (of the svd family, or --family poev / heev: matgen/test_matrices.hpp) and
// condition number: B = A x_true with a random x_true, then
//   * cusolverDnDgetrf + getrs (the FP64 baseline the "speedup" column refers to),
//   * for SPD matrices (poev, and the suite's spd families) cusolverDnDpotrf + potrs, the
//     baseline of the "vs potrf" column (what a user with an SPD matrix calls),
//   * cusolverDnIRSXgesv with each lowest precision of --irs (GMRES or classical refinement),
//   * mixsolve::solve with each factorization precision of --precisions ("auto:fp32" or
//     "auto:fp16+halfhalf": auto with that SolveOptions::auto_path; a "-unscaled" suffix, e.g.
//     "fp16-unscaled", turns SolveOptions::range_scaling off; "-no-reuse", e.g. "auto-no-reuse",
//     SolveOptions::reuse_pivot_order; "-lapack-stop" takes StopTest::Lapack instead of the
//     default StopTest::Attainable; "-probe-all" probes every cheap attempt, "-no-probe" none:
//     SolveOptions::probe_pivot_ratio; "-bits44" sets SolveOptions::ozaki_bits, e.g. "ozaki-bits44"
//     or "auto:fp16x3+ozaki-bits36"); "@<format>" last stores GMRES's Krylov basis in that slfp
//     format (SolveOptions::krylov_basis_format), e.g. "auto@slfp64in32b"; "-store:<format>" before
//     it reads the FP32-stored factors in that slfp format (SolveOptions::factor_storage), e.g.
//     "fp16-store:slfp32in24b"; "-spd" sets SolveOptions::structure to Spd (the Cholesky rungs),
//     "-structure-auto" to Auto, e.g. "auto-spd", "fp16x3-spd". A method with '=' is read by
//     the options table instead (mixsolve/solvers/options.hpp), its fields joined by ';' (',' joins
//     the methods): "precision=fp16x3;structure=spd;max-iterations=10".
// --block sets SolveOptions::block_size (the LU panel width; 0: the library's choice).
// --dgetrf false leaves dgetrf+getrs out of the LAWN-41 tables (its "speedup" column is then nan):
// for SPD runs at large n, where dpotrf+potrs is the baseline that counts.
// Each method runs --warmup times untimed, then --reps times; the median time is reported, with
// the iterations, the normwise backward error ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf)
// computed here for every method alike, the forward error, and the device memory the method
// needs beyond the user's A, B and X (cuSOLVER: the copy of A its in-place factorization
// overwrites, plus its workspace; mixsolve: its reported peak workspace). The first mixsolve
// solve in the process (warm-up or not) is timed too and compared with its warm median (a line
// after its table row, "first_solve_in_process" in the JSON): what a program solving once pays.
//
//   solve_benchmark --sizes 8192,16384 --spectra geo,arith --conds 1e2,1e6 \
//                   --precisions fp64,fp32,fp16,halfhalf,auto --irs 32F,16F --json out.json
//
// --suite runs the same methods on the application families of matgen/application_matrices.hpp
// (each at its default parameters) and, for reference, the LAWN-41 svd_geo at cond 1e6, at every
// size of --sizes (--spectra and --conds are not used). --suite-families picks a subset, with
// parameters after ':' ("cov_se:length=0.05,toeplitz_ar1:rho=0.999,svd_geo:cond=1e2:seed=3").
// Each table and JSON row names the matrix with its parameters; a method that throws (e.g. on a
// singular matrix) gets a row with its error and the run goes on. As x_true is random and
// B = A x_true, the forward error of an ill-conditioned A says little on its own: ferr/ref is the
// ratio to the dgetrf+getrs forward error on the same problem. cberr/ref compares the
// componentwise backward error (core/norms.hpp), which row scaling does not change.
//
//   solve_benchmark --suite --sizes 16384,16391,32761 --precisions auto --irs 16F --json suite.json
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "cusolver_irs.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/application_matrices.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/options.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "solver_tuning_environment.hpp"

using namespace mixsolve;

namespace {

struct Problem {
  std::int64_t n = 0;
  DeviceBuffer<double> a, b, x_true;
  double norm_a = 0;  // ||A||_inf
  std::vector<double> x_true_host;
  bool componentwise = false;  // measure_errors also takes the componentwise backward error (--suite)
};

struct Outcome {
  std::string method;
  std::vector<double> seconds;
  double first_seconds = 0;  // mixsolve: the first call's time (a warm-up one where --warmup > 0)
  int iterations = 0;
  std::string path;
  bool converged = true;
  double backward_error = 0, forward_error = 0;
  double componentwise_backward_error = 0;  // --suite only
  std::size_t extra_bytes = 0;
  std::string error;  // --suite: what the method threw (no times then)
  // mixsolve: the phases of the last repetition as its report gives them (SolveReport), and the
  // rest of the call's wall time (checks and scan of A, allocation, freeing): 0 for cuSOLVER.
  double factorization_seconds = 0, refinement_seconds = 0, fallback_seconds = 0, other_seconds = 0;
  nlohmann::json attempts = nlohmann::json::array();  // mixsolve: each attempt of the last repetition
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// ||A||_inf as the largest row sum of |a_ij| (cuBLAS asum along each row).
double norm_inf(Context& ctx, const double* a, std::int64_t n) {
  double best = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasSetPointerMode(ctx.cublas(), CUBLAS_POINTER_MODE_HOST));
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0;
    MIXSOLVE_CUBLAS_CHECK(cublasDasum(ctx.cublas(), int(n), a + i, int(n), &s));
    best = std::max(best, s);
  }
  return best;
}

// Backward and forward error of x (device) for problem p.
void measure_errors(Context& ctx, const Problem& p, const double* x, Outcome& out) {
  const std::int64_t n = p.n;
  DeviceBuffer<double> r(n);
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(r.data(), p.b.data(), n * sizeof(double), cudaMemcpyDeviceToDevice, ctx.stream()));
  const double minus_one = -1, one = 1;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(n), int(n), &minus_one, p.a.data(), int(n), x, 1, &one,
                                    r.data(), 1));
  std::vector<double> rh = r.to_host(ctx.stream()), xh(n), bh = p.b.to_host(ctx.stream());
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(xh.data(), x, n * sizeof(double), cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.synchronize();
  double rn = 0, xn = 0, bn = 0, dn = 0, tn = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    rn = std::max(rn, std::fabs(rh[i]));
    xn = std::max(xn, std::fabs(xh[i]));
    bn = std::max(bn, std::fabs(bh[i]));
    dn = std::max(dn, std::fabs(xh[i] - p.x_true_host[i]));
    tn = std::max(tn, std::fabs(p.x_true_host[i]));
  }
  out.backward_error = rn / (p.norm_a * xn + bn);
  out.forward_error = dn / tn;
  // The componentwise measure, which row scaling leaves unchanged: where A's rows span many
  // orders of magnitude the normwise one says more about ||x||_inf than about the residual
  // (docs/robustness.md). Its numerator is the residual above, the same for every method.
  if (p.componentwise)
    out.componentwise_backward_error = componentwise_backward_error(
        device_view<const double>(p.a.data(), n, n, n), x, p.b.data(), ctx.stream(), nullptr, r.data());
}

// B = A x_true for a random x_true (seed), and ||A||_inf, for a problem whose A is in place.
void complete_problem(Context& ctx, Problem& p, std::uint64_t seed) {
  const std::int64_t n = p.n;
  fill_random(device_view(p.x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, seed + 7), ctx.stream());
  const double one = 1, zero = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(n), int(n), &one, p.a.data(), int(n),
                                    p.x_true.data(), 1, &zero, p.b.data(), 1));
  p.x_true_host = p.x_true.to_host(ctx.stream());
  p.norm_a = norm_inf(ctx, p.a.data(), n);
}

Problem allocate_problem(std::int64_t n) {
  Problem p;
  p.n = n;
  p.a = DeviceBuffer<double>(n * n);
  p.b = DeviceBuffer<double>(n);
  p.x_true = DeviceBuffer<double>(n);
  return p;
}

Problem make_problem(Context& ctx, std::int64_t n, const std::string& family, const std::string& spectrum, double cond,
                     std::uint64_t seed) {
  Problem p = allocate_problem(n);
  TestMatrixSpec spec = TestMatrixSpec::parse(family + "_" + spectrum);
  spec.cond = cond;
  spec.seed = seed;
  generate_test_matrix_on_device(spec, device_view(p.a.data(), n, n, n), ctx.stream());
  complete_problem(ctx, p, seed);
  return p;
}

// Runs `call` warmup + reps times, each on fresh copies of A and b in a_copy and x (the copies
// not timed), and keeps the last reps' times in out.seconds.
template <class Call>
void time_on_copies(Context& ctx, const Problem& p, DeviceBuffer<double>& a_copy, DeviceBuffer<double>& x, int warmup,
                    int reps, Outcome& out, Call call) {
  for (int rep = 0; rep < warmup + reps; ++rep) {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(a_copy.data(), p.a.data(), a_copy.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(x.data(), p.b.data(), x.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    ctx.synchronize();
    const double t0 = now_seconds();
    call();
    ctx.synchronize();
    if (rep >= warmup) out.seconds.push_back(now_seconds() - t0);
  }
}

// cusolverDnDgetrf + getrs on a copy of A (the copy is not timed).
Outcome run_dgetrf(Context& ctx, cusolverDnHandle_t solver, const Problem& p, int warmup, int reps) {
  const std::int64_t n = p.n;
  Outcome out;
  out.method = "cusolver dgetrf+getrs";
  out.path = "fp64";
  DeviceBuffer<double> lu(n * n), x(n);
  DeviceBuffer<int> pivots(n), info(1), getrs_info(1);
  int lwork = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(solver, int(n), int(n), lu.data(), int(n), &lwork));
  DeviceBuffer<double> work(std::max(lwork, 1));
  out.extra_bytes = lu.bytes() + work.bytes() + pivots.bytes();
  time_on_copies(ctx, p, lu, x, warmup, reps, out, [&] {
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf(solver, int(n), int(n), lu.data(), int(n), work.data(), pivots.data(), info.data()));
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrs(solver, CUBLAS_OP_N, int(n), 1, lu.data(), int(n), pivots.data(), x.data(),
                                             int(n), getrs_info.data()));
  });
  const int singular_column = info.to_host(ctx.stream())[0];  // > 0: U(k, k) = 0, k from 1
  if (singular_column > 0) out.path += " (zero pivot " + std::to_string(singular_column) + ")";
  measure_errors(ctx, p, x.data(), out);
  return out;
}

// cusolverDnDpotrf + potrs (lower triangle) on a copy of A (the copy is not timed): the FP64
// baseline of a symmetric positive definite A, what its users call instead of dgetrf.
Outcome run_dpotrf(Context& ctx, cusolverDnHandle_t solver, const Problem& p, int warmup, int reps) {
  const std::int64_t n = p.n;
  Outcome out;
  out.method = "cusolver dpotrf+potrs";
  out.path = "fp64 cholesky";
  DeviceBuffer<double> l(n * n), x(n);
  DeviceBuffer<int> info(1), potrs_info(1);
  int lwork = 0;
  MIXSOLVE_CUSOLVER_CHECK(
      cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, int(n), l.data(), int(n), &lwork));
  DeviceBuffer<double> work(std::max(lwork, 1));
  out.extra_bytes = l.bytes() + work.bytes();
  time_on_copies(ctx, p, l, x, warmup, reps, out, [&] {
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, int(n), l.data(), int(n), work.data(),
                                             lwork, info.data()));
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_LOWER, int(n), 1, l.data(), int(n), x.data(),
                                             int(n), potrs_info.data()));
  });
  const int not_positive = info.to_host(ctx.stream())[0];  // > 0: the leading minor of that order
  if (not_positive > 0) {
    out.path += " (not positive definite at " + std::to_string(not_positive) + ")";
    out.converged = false;
  }
  measure_errors(ctx, p, x.data(), out);
  return out;
}

// cusolverDnIRSXgesv (FP64 main precision, fallback enabled) on a copy of A.
Outcome run_irs(Context& ctx, cusolverDnHandle_t solver, const Problem& p, const std::string& lowest, bool gmres,
                int warmup, int reps) {
  const std::int64_t n = p.n;
  Outcome out;
  out.method = "cusolver IRS " + lowest + (gmres ? " gmres" : " classical");
  bench::IrsObjects irs;
  cusolverDnIRSParams_t& params = irs.params;
  cusolverDnIRSInfos_t& infos = irs.infos;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsCreate(&params));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_64F, bench::irs_precision(lowest)));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsSetRefinementSolver(
      params, gmres ? CUSOLVER_IRS_REFINE_GMRES : CUSOLVER_IRS_REFINE_CLASSICAL));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsEnableFallback(params));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSInfosCreate(&infos));
  DeviceBuffer<double> a(n * n), b(n), x(n);
  DeviceBuffer<int> info(1);
  std::size_t lwork = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSXgesv_bufferSize(solver, params, int(n), 1, &lwork));
  DeviceBuffer<char> work(std::max<std::size_t>(lwork, 1));
  out.extra_bytes = a.bytes() + work.bytes();
  int niters = 0;
  for (int rep = 0; rep < warmup + reps; ++rep) {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(a.data(), p.a.data(), a.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(b.data(), p.b.data(), b.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    ctx.synchronize();
    const double t0 = now_seconds();
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSXgesv(solver, params, infos, int(n), 1, a.data(), int(n), b.data(), int(n),
                                               x.data(), int(n), work.data(), lwork, &niters, info.data()));
    ctx.synchronize();
    if (rep >= warmup) out.seconds.push_back(now_seconds() - t0);
  }
  // niters < 0: the refinement failed and cuSOLVER refactored in FP64 (the fallback).
  out.iterations = niters;
  out.converged = niters >= 0;
  out.path = niters >= 0 ? lowest : lowest + " -> fp64 (fallback)";
  const int singular_column = info.to_host(ctx.stream())[0];  // > 0: U(k, k) = 0, k from 1
  if (singular_column > 0) out.path += " (zero pivot " + std::to_string(singular_column) + ")";
  measure_errors(ctx, p, x.data(), out);
  return out;
}

// An attempt's factorization rate in TF/s, counting the flops of the textbook factorization
// (2/3 n^3 for LU, 1/3 n^3 for Cholesky) whatever the arithmetic did: the HPL-MxP convention.
double factorization_tflops(const Attempt& a, std::int64_t n) {
  if (!(a.factorization_seconds > 0)) return 0.0;
  const double flops = (a.factor == FactorKind::Cholesky ? 1.0 / 3.0 : 2.0 / 3.0) * double(n) * double(n) * double(n);
  return flops / a.factorization_seconds / 1e12;
}

Outcome run_mixsolve(Context& ctx, const Problem& p, const std::string& precision, int block_size, int warmup,
                     int reps) {
  const std::int64_t n = p.n;
  Outcome out;
  out.method = "mixsolve " + precision;
  SolveOptions options;
  options.block_size = block_size;
  // "auto:fp32" or "auto:fp16+halfhalf" runs auto with that auto_path; "fp16-unscaled" turns
  // SolveOptions::range_scaling off, "auto-no-reuse" SolveOptions::reuse_pivot_order; "-probe-all"
  // probes every cheap attempt, "-no-probe" none (SolveOptions::probe_pivot_ratio).
  std::string name = precision;
  if (name.find('=') != std::string::npos) {  // "precision=fp16x3;structure=spd": the options table
    options = parse_solve_options(std::regex_replace(name, std::regex(";"), ","), options);
    name.clear();
  }
  const auto strip_suffix = [&](const std::string& suffix) {
    const bool found = name.size() > suffix.size() &&
                       name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (found) name.resize(name.size() - suffix.size());
    return found;
  };
  if (const std::size_t at = name.find('@'); at != std::string::npos) {
    options.krylov_basis_format = slfp::parse_format(name.substr(at + 1));
    name.resize(at);
  }
  if (const std::size_t store = name.rfind("-store:"); store != std::string::npos) {
    options.factor_storage = slfp::parse_format(name.substr(store + 7));
    name.resize(store);
  }
  if (strip_suffix("-spd")) options.structure = Structure::Spd;
  if (strip_suffix("-structure-auto")) options.structure = Structure::Auto;
  if (strip_suffix("-probe-all")) options.probe_pivot_ratio = INFINITY;
  if (strip_suffix("-no-probe")) options.probe_pivot_ratio = 0;
  if (strip_suffix("-lapack-stop")) options.stop_test = StopTest::Lapack;
  if (strip_suffix("-no-reuse")) options.reuse_pivot_order = false;
  if (strip_suffix("-unscaled")) options.range_scaling = false;
  // "-bits<b>": SolveOptions::ozaki_bits (ozaki and auto paths through it).
  if (const std::size_t bits = name.rfind("-bits"); bits != std::string::npos) {
    options.ozaki_bits = std::stoi(name.substr(bits + 5));
    name.resize(bits);
  }
  const std::size_t colon = name.find(':');
  if (!name.empty()) options.factorization = parse_precision(name.substr(0, colon));
  if (!name.empty() && colon != std::string::npos) {  // "auto:<path>": the path of either kind
    options.auto_path.clear();
    std::stringstream list(name.substr(colon + 1));
    for (std::string name; std::getline(list, name, '+');) options.auto_path.push_back(parse_precision(name));
    options.cholesky_auto_path = options.auto_path;
  }
  DeviceBuffer<double> x(n);
  SolveReport report;
  // MIXSOLVE_BENCH_PROGRESS in the environment: each phase's start, in ms since the call began,
  // to stderr (where a repetition's time goes outside the report's phases).
  const bool progress = std::getenv("MIXSOLVE_BENCH_PROGRESS") != nullptr;
  double t0 = 0;
  if (progress)
    options.progress = [&](const std::string& phase) {
      std::fprintf(stderr, "  %8.2f ms  %s\n", 1e3 * (now_seconds() - t0), phase.c_str());
    };
  for (int rep = 0; rep < warmup + reps; ++rep) {
    ctx.synchronize();
    t0 = now_seconds();
    report = solve(ctx, device_view<const double>(p.a.data(), n, n, n), device_view<const double>(p.b.data(), n, 1, n),
                   device_view(x.data(), n, 1, n), options);
    ctx.synchronize();
    if (progress) std::fprintf(stderr, "  %8.2f ms  returned (%s)\n", 1e3 * (now_seconds() - t0), name.c_str());
    if (rep == 0) out.first_seconds = now_seconds() - t0;
    if (rep >= warmup) out.seconds.push_back(now_seconds() - t0);
  }
  out.factorization_seconds = report.factorization_seconds;
  out.refinement_seconds = report.refinement_seconds;
  out.fallback_seconds = report.fallback_seconds;
  out.other_seconds = out.seconds.back() - report.factorization_seconds - report.refinement_seconds - report.fallback_seconds;
  out.iterations = report.iterations;
  out.converged = report.converged;
  out.path.clear();
  for (const Attempt& a : report.attempts) {
    out.attempts.push_back({{"factor", to_string(a.factor)}, {"precision", to_string(a.precision)},
                            {"refinement", to_string(a.refinement)},
                            {"stop", to_string(a.stop)}, {"iterations", a.iterations},
                            {"inner_iterations", a.inner_iterations}, {"pivot_ratio", a.pivot_ratio},
                            {"probe_estimate", a.probe_estimate}, {"collapsed_at_column", a.collapsed_at_column},
                            {"factorization_seconds", a.factorization_seconds},
                            {"factorization_tflops", factorization_tflops(a, n)},
                            {"refinement_seconds", a.refinement_seconds}});
    if (!out.path.empty()) out.path += " -> ";
    if (a.factor == FactorKind::Cholesky) out.path += "chol-";
    if (a.stop == StopReason::NotPositiveDefinite) {  // the Cholesky met a pivot that is not positive
      out.path += to_string(a.precision) + "[not SPD at " + std::to_string(a.zero_pivot_column) + "]";
      continue;
    }
    if (a.stop == StopReason::Overflow || a.stop == StopReason::ZeroPivot) {  // the LU itself failed
      out.path += to_string(a.precision) + (a.stop == StopReason::Overflow ? " overflow" : " zero pivot");
      continue;
    }
    if (a.stop == StopReason::CollapsedPivots) {  // stopped part way (SolveOptions::probe_pivot_ratio)
      out.path += to_string(a.precision) + "[collapsed at " + std::to_string(a.collapsed_at_column) + "]";
      continue;
    }
    out.path += to_string(a.precision);
    // SolveOptions::fp16_when_near_diagonal put FP16 first: the screen's estimate
    if (&a == &report.attempts.front() && a.precision == Precision::FP16 && report.near_diagonal_estimate >= 0 &&
        report.near_diagonal_estimate <= 0.125) {
      char screen[48];
      std::snprintf(screen, sizeof screen, "[near-diagonal %.2g]", report.near_diagonal_estimate);
      out.path += screen;
    }
    if (a.precision == Precision::Ozaki)  // the bits its emulated updates kept, or "fp64" for none
      out.path += a.emulated_bits > 0 ? std::to_string(a.emulated_bits) : std::string("[fp64]");
    if (a.pivot_order != PivotOrder::Partial) {  // a reused order, or diagonal-block pivoting, with max |l_ij|
      const char* order = a.pivot_order == PivotOrder::Reused           ? "order reused"
                          : a.pivot_order == PivotOrder::Rejected       ? "order rejected"
                          : a.pivot_order == PivotOrder::DiagonalBlocks ? "diagonal blocks"
                                                                        : "diagonal blocks rejected";
      char multiplier[64];
      std::snprintf(multiplier, sizeof multiplier, "[%s, |l| %.3g]", order, a.largest_multiplier);
      out.path += multiplier;
    }
    if (a.probe_estimate >= 0) {  // SolveOptions::probe_pivot_ratio
      char probe[48];
      std::snprintf(probe, sizeof probe, "[probe %.2g%s]", a.probe_estimate,
                    a.stop == StopReason::WeakFactors ? ": weak" : "");
      out.path += probe;
      if (a.stop == StopReason::WeakFactors) continue;
    }
    out.path += "/" + to_string(a.refinement) + "(" + std::to_string(a.iterations);
    if (a.inner_iterations > 0) out.path += "," + std::to_string(a.inner_iterations) + " inner";
    out.path += ")";
  }
  out.extra_bytes = report.peak_workspace_bytes;
  measure_errors(ctx, p, x.data(), out);
  return out;
}

struct Methods {
  std::vector<std::string> irs, precisions;
  bool gmres = true;
  bool dpotrf = false;  // the matrices are symmetric positive definite: dpotrf+potrs runs second
  bool dgetrf = true;   // --dgetrf false leaves dgetrf+getrs out (LAWN-41 tables only)
  int warmup = 1, reps = 3, block_size = 0;
};

// dgetrf+getrs first (every ratio refers to it), then IRS, then mixsolve. With keep_going, a
// method that throws gets an Outcome naming the error instead of ending the run.
std::vector<Outcome> run_methods(Context& ctx, cusolverDnHandle_t solver, const Problem& p, const Methods& m,
                                 bool keep_going) {
  std::vector<Outcome> outcomes;
  const auto run = [&](const std::string& method, const std::function<Outcome()>& call) {
    if (!keep_going) {
      outcomes.push_back(call());
      return;
    }
    try {
      outcomes.push_back(call());
    } catch (const Error& e) {
      Outcome failed;
      failed.method = method;
      failed.converged = false;
      failed.error = e.what();
      outcomes.push_back(failed);
      ctx.synchronize();
    }
  };
  if (m.dgetrf) run("cusolver dgetrf+getrs", [&] { return run_dgetrf(ctx, solver, p, m.warmup, m.reps); });
  if (m.dpotrf) run("cusolver dpotrf+potrs", [&] { return run_dpotrf(ctx, solver, p, m.warmup, m.reps); });
  for (const std::string& lowest : m.irs)
    run("cusolver IRS " + lowest + (m.gmres ? " gmres" : " classical"), [&] { return run_irs(ctx, solver, p, lowest, m.gmres, m.warmup, m.reps); });
  for (const std::string& precision : m.precisions)
    run("mixsolve " + precision, [&] { return run_mixsolve(ctx, p, precision, m.block_size, m.warmup, m.reps); });
  return outcomes;
}

// A matrix of the suite: an application family, or a LAWN-41 one for reference.
struct SuiteMatrix {
  std::string family, name, structure;
  nlohmann::json parameters;
  std::function<void(const MatrixView<double>&, cudaStream_t)> generate;
};

// "cov_se:length=0.05" (ApplicationSpec::parse), or "svd_geo:cond=1e6:seed=2" (LAWN-41: the
// family_spectrum[_dominant] name, then cond, seed and scale).
SuiteMatrix suite_matrix(const std::string& text) {
  SuiteMatrix m;
  const std::string head = text.substr(0, text.find(':'));
  const bool lawn41 = head.rfind("svd_", 0) == 0 || head.rfind("poev_", 0) == 0 || head.rfind("heev_", 0) == 0;
  if (!lawn41) {
    const ApplicationSpec spec = ApplicationSpec::parse(text);
    m.family = to_string(spec.family);
    m.name = spec.name();
    m.structure = to_string(spec.structure());
    for (const auto& [key, value] : spec.parameters()) m.parameters[key] = value;
    if (spec.uses_seed()) m.parameters["seed"] = spec.seed;
    m.generate = [spec](const MatrixView<double>& a, cudaStream_t stream) {
      generate_application_matrix_on_device(spec, a, stream);
    };
    return m;
  }
  TestMatrixSpec spec = TestMatrixSpec::parse(head);
  spec.cond = 1e6;
  std::stringstream rest(text.size() > head.size() ? text.substr(head.size() + 1) : "");
  for (std::string item; std::getline(rest, item, ':');) {
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    try {
      std::size_t used = 0;
      if (key == "cond") spec.cond = std::stod(value, &used);
      else if (key == "scale") spec.scale = std::stod(value, &used);
      else if (key == "seed") spec.seed = std::stoull(value, &used);
      else
        throw InvalidArgument("--suite-families: \"" + text + "\": " + head + " takes cond, seed and scale, not \"" + key +
                              "\"");
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::logic_error&) {
      throw InvalidArgument("--suite-families: \"" + text + "\": " + key + " = \"" + value + "\" is not a number");
    }
  }
  m.family = head;
  m.name = spec.name() + " seed=" + std::to_string(spec.seed);
  m.structure = spec.family == MatrixFamily::Svd ? "nonsymmetric" : spec.family == MatrixFamily::Poev ? "spd" : "symmetric";
  m.parameters = {{"cond", spec.cond}, {"seed", spec.seed}};
  if (spec.scale != 1.0) m.parameters["scale"] = spec.scale;
  m.generate = [spec](const MatrixView<double>& a, cudaStream_t stream) { generate_test_matrix_on_device(spec, a, stream); };
  return m;
}

std::string default_suite_families() {
  std::string list;
  for (ApplicationFamily f : application_families()) list += std::string(to_string(f)) + ",";
  return list + "svd_geo:cond=1e6";
}

// The process's first mixsolve solve (module loading, handles, first allocations) against the warm
// median of the same method on the same matrix: recorded once, from the first mixsolve outcome
// with times, into doc["first_solve_in_process"], and printed.
void note_first_solve(const Outcome& o, std::int64_t n, nlohmann::json& doc) {
  if (doc.contains("first_solve_in_process") || o.method.rfind("mixsolve", 0) != 0 || o.seconds.empty()) return;
  const double warm = median(o.seconds);
  doc["first_solve_in_process"] = {{"method", o.method}, {"n", n}, {"seconds", o.first_seconds},
                                   {"warm_median_seconds", warm}, {"ratio", o.first_seconds / warm}};
  std::printf("# first mixsolve solve in this process (%s, n = %lld): %.4f s, %.2fx the warm median %.4f s\n",
              o.method.c_str(), static_cast<long long>(n), o.first_seconds, o.first_seconds / warm, warm);
}

nlohmann::json outcome_json(const Outcome& o, double baseline_seconds, double baseline_forward_error,
                            double baseline_backward_error, double baseline_componentwise = -1) {
  const double t = median(o.seconds);
  nlohmann::json row = {{"method", o.method}, {"seconds", o.seconds}, {"median_seconds", t},
                        {"first_call_seconds", o.first_seconds},
                        {"speedup_vs_dgetrf", baseline_seconds / t}, {"iterations", o.iterations}, {"path", o.path},
                        {"converged", o.converged}, {"backward_error", o.backward_error},
                        {"forward_error", o.forward_error}, {"extra_device_bytes", o.extra_bytes},
                        {"attempts", o.attempts},
                        {"phase_seconds", {{"factorization", o.factorization_seconds},
                                           {"refinement", o.refinement_seconds},
                                           {"fallback", o.fallback_seconds},
                                           {"other", o.other_seconds}}}};
  if (baseline_forward_error >= 0) row["forward_error_vs_dgetrf"] = o.forward_error / baseline_forward_error;
  if (baseline_backward_error >= 0) row["backward_error_vs_dgetrf"] = o.backward_error / baseline_backward_error;
  if (baseline_componentwise >= 0) {
    row["componentwise_backward_error"] = o.componentwise_backward_error;
    row["componentwise_backward_error_vs_dgetrf"] = o.componentwise_backward_error / baseline_componentwise;
  }
  if (!o.error.empty()) row["error"] = o.error;
  return row;
}

// The median time of the cuSOLVER method named among the outcomes, or NaN where it did not run
// or failed.
double baseline_seconds(const std::vector<Outcome>& outcomes, const std::string& method) {
  for (const Outcome& o : outcomes)
    if (o.method == method && o.error.empty() && o.converged) return median(o.seconds);
  return NAN;
}
double dpotrf_seconds(const std::vector<Outcome>& outcomes) {
  return baseline_seconds(outcomes, "cusolver dpotrf+potrs");
}

// --suite: every matrix at every size, all methods on each.
void run_suite(Context& ctx, cusolverDnHandle_t solver, const std::vector<SuiteMatrix>& matrices,
               const std::vector<std::int64_t>& sizes, const Methods& methods, nlohmann::json& doc) {
  doc["suite"] = true;
  std::printf("%6s %-44s %-26s %9s %8s %8s %6s %10s %9s %9s %10s %9s %5s  %s\n", "n", "matrix", "method", "time s",
              "speedup", "vs potrf", "iters", "berr", "berr/ref", "cberr/ref", "ferr", "ferr/ref", "mem", "path");
  std::uint64_t seed = 1;
  for (std::int64_t n : sizes)
    for (const SuiteMatrix& m : matrices) {
      Problem p = allocate_problem(n);
      ctx.synchronize();
      const double t0 = now_seconds();
      m.generate(device_view(p.a.data(), n, n, n), ctx.stream());
      ctx.synchronize();
      const double generation_seconds = now_seconds() - t0;
      complete_problem(ctx, p, seed++);
      p.componentwise = true;
      std::printf("# %s, n = %lld: %s, generated on the GPU in %.3f s\n", m.name.c_str(), (long long)n,
                  m.structure.c_str(), generation_seconds);
      Methods for_matrix = methods;
      for_matrix.dpotrf = m.structure == "spd";
      const std::vector<Outcome> outcomes = run_methods(ctx, solver, p, for_matrix, true);
      const Outcome& reference = outcomes.front();
      const bool have_reference = reference.error.empty();
      const double baseline = have_reference ? median(reference.seconds) : NAN;
      const double potrf = dpotrf_seconds(outcomes);
      for (const Outcome& o : outcomes) {
        nlohmann::json row = {{"n", n}, {"family", m.family}, {"matrix", m.name}, {"parameters", m.parameters},
                              {"structure", m.structure}, {"generation_seconds", generation_seconds}};
        row.update(outcome_json(o, baseline, have_reference ? reference.forward_error : -1.0,
                                have_reference ? reference.backward_error : -1.0,
                                have_reference ? reference.componentwise_backward_error : -1.0));
        if (std::isfinite(potrf) && o.error.empty()) row["speedup_vs_dpotrf"] = potrf / median(o.seconds);
        doc["rows"].push_back(row);
        if (!o.error.empty()) {
          std::printf("%6lld %-44s %-26s  error: %s\n", (long long)n, m.name.c_str(), o.method.c_str(), o.error.c_str());
          continue;
        }
        const double t = median(o.seconds);
        std::printf("%6lld %-44s %-26s %9.4f %8.2f %8.2f %6d %10.2e %9.2g %9.2g %10.2e %9.2g %5.1f  %s%s\n",
                    (long long)n, m.name.c_str(), o.method.c_str(), t, baseline / t, potrf / t, o.iterations,
                    o.backward_error,
                    o.backward_error / reference.backward_error,
                    o.componentwise_backward_error / reference.componentwise_backward_error, o.forward_error,
                    o.forward_error / reference.forward_error, double(o.extra_bytes) / double(n * n), o.path.c_str(),
                    o.converged ? "" : " [not converged]");
      }
      for (const Outcome& o : outcomes) note_first_solve(o, n, doc);
      std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) try {
  bench::apply_solver_tuning_environment();
  const bench::Options opt(argc, argv);
  const bool suite = opt.get("suite", "") == "true";
  std::vector<SuiteMatrix> suite_matrices;  // parsed first: a bad name is an error with or without a GPU
  if (suite)
    for (const std::string& text : opt.list("suite-families", default_suite_families()))
      suite_matrices.push_back(suite_matrix(text));
  if (!gpu_available()) {
    std::cout << "solve_benchmark: no GPU; nothing to measure (the baselines are cuSOLVER)\n";
    return 0;
  }
  const auto sizes = opt.sizes("sizes", "8192,16384");
  Methods methods;
  methods.precisions = opt.list("precisions", "fp64,fp32,tf32,fp16,bf16,halfhalf,tf32tf32,fp16x3,auto");
  methods.irs = opt.list("irs", "32F,TF32,16F,16BF");
  methods.gmres = opt.get("irs-refinement", "gmres") == "gmres";
  methods.warmup = int(opt.sizes("warmup", "1")[0]);
  methods.reps = int(opt.sizes("reps", "3")[0]);
  methods.block_size = std::stoi(opt.get("block", "0"));  // SolveOptions::block_size (0: the library's choice)
  const int warmup = methods.warmup, reps = methods.reps;
  const std::string json_path = opt.get("json", "");

  Context ctx;
  cusolverDnHandle_t solver = nullptr;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver, ctx.stream()));
  nlohmann::json doc = bench::device_json();
  doc["benchmark"] = "solve";
  doc["warmup"] = warmup;
  doc["reps"] = reps;
  doc["rows"] = nlohmann::json::array();
  std::cout << "# " << doc["gpu"].get<std::string>() << ", " << doc["date"].get<std::string>() << "; median of " << reps
            << " after " << warmup << " warm-up; speedup = dgetrf+getrs time / time; mem = extra bytes / n^2\n";
  if (suite) {
    run_suite(ctx, solver, suite_matrices, sizes, methods, doc);
  } else {
    // --family svd (default) or poev: the LAWN-41 family; poev's matrices are SPD and get the
    // dpotrf+potrs baseline (the "vs potrf" column).
    const std::string family = opt.get("family", "svd");
    if (family != "svd" && family != "poev" && family != "heev")
      throw InvalidArgument("--family \"" + family + "\" is not one of svd, poev, heev");
    methods.dpotrf = family == "poev";
    methods.dgetrf = opt.get("dgetrf", "true") != "false";
    const auto spectra = opt.list("spectra", "geo,arith");
    const auto conds = opt.list("conds", "1e2,1e4,1e6,1e8,1e10");
    std::printf("%6s %-5s %6s  %-26s %9s %8s %8s %6s %10s %10s %5s  %s\n", "n", "spec", "cond", "method", "time s",
                "speedup", "vs potrf", "iters", "berr", "ferr", "mem", "path");
    std::uint64_t seed = 1;
    for (std::int64_t n : sizes)
      for (const std::string& spectrum : spectra)
        for (const std::string& cond_text : conds) {
          const double cond = std::stod(cond_text);
          const Problem p = make_problem(ctx, n, family, spectrum, cond, seed++);
          const std::vector<Outcome> outcomes = run_methods(ctx, solver, p, methods, false);
          const double baseline = baseline_seconds(outcomes, "cusolver dgetrf+getrs");
          const double potrf = dpotrf_seconds(outcomes);
          for (const Outcome& o : outcomes) {
            const double t = median(o.seconds);
            std::printf("%6lld %-5s %6.0e  %-26s %9.4f %8.2f %8.2f %6d %10.2e %10.2e %5.1f  %s%s\n", (long long)n,
                        spectrum.c_str(), cond, o.method.c_str(), t, baseline / t, potrf / t, o.iterations,
                        o.backward_error, o.forward_error, double(o.extra_bytes) / double(n * n), o.path.c_str(),
                        o.converged ? "" : " [not converged]");
            nlohmann::json row = {{"n", n}, {"family", family}, {"spectrum", spectrum}, {"cond", cond}};
            row.update(outcome_json(o, baseline, -1.0, -1.0));
            if (std::isfinite(potrf)) row["speedup_vs_dpotrf"] = potrf / t;
            doc["rows"].push_back(row);
          }
          for (const Outcome& o : outcomes) note_first_solve(o, n, doc);
          std::fflush(stdout);
        }
  }
  cusolverDnDestroy(solver);
  if (!json_path.empty()) std::ofstream(json_path) << doc.dump(1) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "solve_benchmark: " << e.what() << "\n";
  return 1;
}
