// solve_benchmark: mixsolve::solve against cuSOLVER on the same GPU, in the same run.
//
// For each n, spectrum (svd family, design.md §4) and condition number: B = A x_true with a
// random x_true, then
//   * cusolverDnDgetrf + getrs (the FP64 baseline every ratio refers to),
//   * cusolverDnIRSXgesv with each lowest precision of --irs (GMRES or classical refinement),
//   * mixsolve::solve with each factorization precision of --precisions ("auto:fp32" or
//     "auto:fp16+halfhalf": auto with that SolveOptions::auto_path; a "-unscaled" suffix, e.g.
//     "fp16-unscaled", turns SolveOptions::range_scaling off; "-no-reuse", e.g. "auto-no-reuse",
//     SolveOptions::reuse_pivot_order; "-probe-all" probes every cheap attempt, "-no-probe" none:
//     SolveOptions::probe_pivot_ratio).
// --block sets SolveOptions::block_size (the LU panel width; 0: the library's choice).
// Each method runs --warmup times untimed, then --reps times; the median time is reported, with
// the iterations, the normwise backward error ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf)
// computed here for every method alike, the forward error, and the device memory the method
// needs beyond the user's A, B and X (cuSOLVER: the copy of A its in-place factorization
// overwrites, plus its workspace; mixsolve: its reported peak workspace).
//
//   solve_benchmark --sizes 8192,16384 --spectra geo,arith --conds 1e2,1e6 \
//                   --precisions fp64,fp32,fp16,halfhalf,auto --irs 32F,16F --json out.json
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/solve.hpp"

using namespace mixsolve;

namespace {

struct Problem {
  std::int64_t n = 0;
  DeviceBuffer<double> a, b, x_true;
  double norm_a = 0;  // ||A||_inf
  std::vector<double> x_true_host;
};

struct Outcome {
  std::string method;
  std::vector<double> seconds;
  int iterations = 0;
  std::string path;
  bool converged = true;
  double backward_error = 0, forward_error = 0;
  std::size_t extra_bytes = 0;
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
}

Problem make_problem(Context& ctx, std::int64_t n, const std::string& spectrum, double cond, std::uint64_t seed) {
  Problem p;
  p.n = n;
  p.a = DeviceBuffer<double>(n * n);
  p.b = DeviceBuffer<double>(n);
  p.x_true = DeviceBuffer<double>(n);
  TestMatrixSpec spec = TestMatrixSpec::parse("svd_" + spectrum);
  spec.cond = cond;
  spec.seed = seed;
  generate_test_matrix_on_device(spec, device_view(p.a.data(), n, n, n), ctx.stream());
  fill_random(device_view(p.x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, seed + 7), ctx.stream());
  const double one = 1, zero = 0;
  MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(n), int(n), &one, p.a.data(), int(n),
                                    p.x_true.data(), 1, &zero, p.b.data(), 1));
  p.x_true_host = p.x_true.to_host(ctx.stream());
  p.norm_a = norm_inf(ctx, p.a.data(), n);
  return p;
}

// cusolverDnDgetrf + getrs on a copy of A (the copy is not timed).
Outcome run_dgetrf(Context& ctx, cusolverDnHandle_t solver, const Problem& p, int warmup, int reps) {
  const std::int64_t n = p.n;
  Outcome out;
  out.method = "cusolver dgetrf+getrs";
  out.path = "fp64";
  DeviceBuffer<double> lu(n * n), x(n);
  DeviceBuffer<int> pivots(n), info(1);
  int lwork = 0;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(solver, int(n), int(n), lu.data(), int(n), &lwork));
  DeviceBuffer<double> work(std::max(lwork, 1));
  out.extra_bytes = lu.bytes() + work.bytes() + pivots.bytes();
  for (int rep = 0; rep < warmup + reps; ++rep) {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(lu.data(), p.a.data(), lu.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(x.data(), p.b.data(), x.bytes(), cudaMemcpyDeviceToDevice, ctx.stream()));
    ctx.synchronize();
    const double t0 = now_seconds();
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrf(solver, int(n), int(n), lu.data(), int(n), work.data(), pivots.data(), info.data()));
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgetrs(solver, CUBLAS_OP_N, int(n), 1, lu.data(), int(n), pivots.data(), x.data(),
                                             int(n), info.data()));
    ctx.synchronize();
    if (rep >= warmup) out.seconds.push_back(now_seconds() - t0);
  }
  measure_errors(ctx, p, x.data(), out);
  return out;
}

cusolverPrecType_t irs_precision(const std::string& name) {
  if (name == "32F") return CUSOLVER_R_32F;
  if (name == "TF32") return CUSOLVER_R_TF32;
  if (name == "16F") return CUSOLVER_R_16F;
  if (name == "16BF") return CUSOLVER_R_16BF;
  throw InvalidArgument("--irs: \"" + name + "\" is not one of 32F, TF32, 16F, 16BF");
}

// cusolverDnIRSXgesv (FP64 main precision, fallback enabled) on a copy of A.
Outcome run_irs(Context& ctx, cusolverDnHandle_t solver, const Problem& p, const std::string& lowest, bool gmres,
                int warmup, int reps) {
  const std::int64_t n = p.n;
  Outcome out;
  out.method = "cusolver IRS " + lowest + (gmres ? " gmres" : " classical");
  cusolverDnIRSParams_t params = nullptr;
  cusolverDnIRSInfos_t infos = nullptr;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsCreate(&params));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_64F, irs_precision(lowest)));
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
  measure_errors(ctx, p, x.data(), out);
  cusolverDnIRSInfosDestroy(infos);
  cusolverDnIRSParamsDestroy(params);
  return out;
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
  const auto strip_suffix = [&](const std::string& suffix) {
    const bool found = name.size() > suffix.size() &&
                       name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (found) name.resize(name.size() - suffix.size());
    return found;
  };
  if (strip_suffix("-probe-all")) options.probe_pivot_ratio = INFINITY;
  if (strip_suffix("-no-probe")) options.probe_pivot_ratio = 0;
  if (strip_suffix("-no-reuse")) options.reuse_pivot_order = false;
  if (strip_suffix("-unscaled")) options.range_scaling = false;
  const std::size_t colon = name.find(':');
  options.factorization = parse_precision(name.substr(0, colon));
  if (colon != std::string::npos) {
    options.auto_path.clear();
    std::stringstream list(name.substr(colon + 1));
    for (std::string name; std::getline(list, name, '+');) options.auto_path.push_back(parse_precision(name));
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
    out.attempts.push_back({{"precision", to_string(a.precision)}, {"refinement", to_string(a.refinement)},
                            {"stop", to_string(a.stop)}, {"iterations", a.iterations},
                            {"inner_iterations", a.inner_iterations}, {"pivot_ratio", a.pivot_ratio},
                            {"probe_estimate", a.probe_estimate}, {"factorization_seconds", a.factorization_seconds},
                            {"refinement_seconds", a.refinement_seconds}});
    if (!out.path.empty()) out.path += " -> ";
    if (a.stop == StopReason::Overflow || a.stop == StopReason::ZeroPivot) {  // the LU itself failed
      out.path += to_string(a.precision) + (a.stop == StopReason::Overflow ? " overflow" : " zero pivot");
      continue;
    }
    out.path += to_string(a.precision);
    if (a.pivot_order != PivotOrder::Partial) {  // SolveOptions::reuse_pivot_order, with max |l_ij|
      char multiplier[32];
      std::snprintf(multiplier, sizeof multiplier, "%.3g", a.largest_multiplier);
      out.path += std::string(a.pivot_order == PivotOrder::Reused ? "[order reused, |l| " : "[order rejected, |l| ") +
                  multiplier + "]";
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

}  // namespace

int main(int argc, char** argv) try {
  const bench::Options opt(argc, argv);
  if (!gpu_available()) {
    std::cout << "solve_benchmark: no GPU; nothing to measure (the baselines are cuSOLVER)\n";
    return 0;
  }
  const auto sizes = opt.sizes("sizes", "8192,16384");
  const auto spectra = opt.list("spectra", "geo,arith");
  const auto conds = opt.list("conds", "1e2,1e4,1e6,1e8,1e10");
  const auto precisions = opt.list("precisions", "fp64,fp32,tf32,fp16,bf16,halfhalf,tf32tf32,fp16x3,auto");
  const auto irs = opt.list("irs", "32F,TF32,16F,16BF");
  const bool gmres = opt.get("irs-refinement", "gmres") == "gmres";
  const int warmup = int(opt.sizes("warmup", "1")[0]), reps = int(opt.sizes("reps", "3")[0]);
  const int block_size = std::stoi(opt.get("block", "0"));  // SolveOptions::block_size (0: the library's choice)
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
  std::printf("%6s %-5s %6s  %-26s %9s %8s %6s %10s %10s %5s  %s\n", "n", "spec", "cond", "method", "time s",
              "speedup", "iters", "berr", "ferr", "mem", "path");
  std::uint64_t seed = 1;
  for (std::int64_t n : sizes)
    for (const std::string& spectrum : spectra)
      for (const std::string& cond_text : conds) {
        const double cond = std::stod(cond_text);
        const Problem p = make_problem(ctx, n, spectrum, cond, seed++);
        std::vector<Outcome> outcomes;
        outcomes.push_back(run_dgetrf(ctx, solver, p, warmup, reps));
        for (const std::string& lowest : irs) outcomes.push_back(run_irs(ctx, solver, p, lowest, gmres, warmup, reps));
        for (const std::string& precision : precisions) outcomes.push_back(run_mixsolve(ctx, p, precision, block_size, warmup, reps));
        const double baseline = median(outcomes.front().seconds);
        for (const Outcome& o : outcomes) {
          const double t = median(o.seconds);
          std::printf("%6lld %-5s %6.0e  %-26s %9.4f %8.2f %6d %10.2e %10.2e %5.1f  %s%s\n", (long long)n,
                      spectrum.c_str(), cond, o.method.c_str(), t, baseline / t, o.iterations, o.backward_error,
                      o.forward_error, double(o.extra_bytes) / double(n * n), o.path.c_str(),
                      o.converged ? "" : " [not converged]");
          doc["rows"].push_back({{"n", n}, {"spectrum", spectrum}, {"cond", cond}, {"method", o.method},
                                 {"seconds", o.seconds}, {"median_seconds", t}, {"speedup_vs_dgetrf", baseline / t},
                                 {"iterations", o.iterations}, {"path", o.path}, {"converged", o.converged},
                                 {"backward_error", o.backward_error}, {"forward_error", o.forward_error},
                                 {"extra_device_bytes", o.extra_bytes}, {"attempts", o.attempts},
                                 {"phase_seconds", {{"factorization", o.factorization_seconds},
                                                    {"refinement", o.refinement_seconds},
                                                    {"fallback", o.fallback_seconds},
                                                    {"other", o.other_seconds}}}});
        }
        std::fflush(stdout);
      }
  cusolverDnDestroy(solver);
  if (!json_path.empty()) std::ofstream(json_path) << doc.dump(1) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "solve_benchmark: " << e.what() << "\n";
  return 1;
}
