// SPDX-License-Identifier: BSD-3-Clause
// lstsq_benchmark: the device Householder QR (solvers/src/qr/cuda/device_qr.hpp) against
// cusolverDnDgeqrf on the same GPU, in the same run: for each m x n shape, cuSOLVER's FP64 QR
// (the baseline every ratio refers to), its FP32 QR, cuSOLVER sgeqrf of each m x block panel
// alone, and ours in FP32 with each trailing-update backend of --backends and in FP64 on
// cublas-dgemm, with each panel factorization of --panels (tsqr: qr/cuda/tsqr_panel.hpp;
// cusolver: geqrf). Time is the median of --reps after one warm-up, each run on a fresh copy of
// A (the copy not timed); TFLOP/s counts 2 m n^2 - 2 n^3 / 3.
// Then least squares with one right-hand side, inconsistent (uniform) and consistent (A x), on the
// uniform A and on svd_geo matrices of each --conds: cuSOLVER's dgeqrf + dormqr + dtrsm (the
// ratio's reference for these rows) against cusolverDnIRSXgels with each lowest precision of --irs
// ("none": no such rows) and least_squares() on the device with each refinement of
// --refinements, the difference of their solutions from dgeqrf's and the residual norms.
//
//   lstsq_benchmark [--shapes 65536x4096,262144x256,16384x16384] [--backends cublas-sgemm,tf32tf32,halfhalf]
//                   [--panels tsqr,cusolver] [--block 128] [--conds 1e2,1e6,1e8] [--refinements augmented,gmres,cgls]
//                   [--irs 32F] [--lstsq yes|no] [--cholesky-parts no] [--cgls-parts no]
//                   [--fp32-updates auto,cublas-sgemm] [--ls-blocks auto,512] [--vt-c-backends same,cublas-sgemm]
//                   [--factorizations auto,fp32,fp64] [--options "max-iterations=10;fallback=false"]
//                   [--rank-deficient duplicate,dummy,chebyshev] [--reps 3] [--json out.json]
//
// --rank-deficient: least squares on rank-deficient A of each shape (duplicate: svd_geo cond 1e2
// with its last column a copy of its first; dummy: an intercept, one-hot columns of n / 2 groups
// that sum to it, and uniform columns; chebyshev: T_0 .. T_{n-1} at m uniform random points, far
// more degrees than the points resolve, no gap in the spectrum), against cuSOLVER's SVD-based
// minimum-norm solve (cusolverDnDgesvd, x = V S_k^+ U_k^T b, k = #{sigma_i > max(m, n) u sigma_1})
// and the FP64 QR solve, least_squares() (defaults: the minimum-norm solution) compared with the
// SVD's x and residual.
// MIXSOLVE_LU_PROFILE=1 (solver_tuning_environment.hpp): the rank-revealing attempt's stage times
// to stderr.
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "cusolver_irs.hpp"
#include "solver_tuning_environment.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/cusolver_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/evaluation.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/options.hpp"
#include "qr/cuda/device_qr.hpp"

using namespace mixsolve;

namespace {

// Median seconds of `run` over reps runs after one warm-up, each after `prepare` (not timed).
double median_seconds(Context& ctx, int reps, const std::function<void()>& prepare, const std::function<void()>& run) {
  prepare();
  run();
  return gemm::median_seconds(ctx, Memory::Device, reps, run, prepare);
}

constexpr double kOne = 1, kZero = 0;

// a_jj := 1 (a n x n, leading dimension n).
__global__ void set_unit_diagonal(double* a, std::int64_t n) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j < n) a[j + j * n] = 1;
}

__global__ void to_float(const double* x, std::int64_t count, float* y) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = float(x[i]);
}

}  // namespace

namespace {

// "; attempts: fp32 QR 0.0301 s + refinement 0.0072 s; ..." for a report's attempts.
std::string attempt_times(const LeastSquaresReport& report) {
  std::string out = "; attempts:";
  for (const LeastSquaresAttempt& t : report.attempts) {
    char text[112];
    std::snprintf(text, sizeof text, " %s %.4f s + refinement %.4f s;",
                  t.rank_revealing ? "rank-revealing"
                                   : (to_string(t.precision) + (t.cholesky_qr ? " Cholesky QR" : " QR")).c_str(),
                  t.factor_seconds, t.refine_seconds);
    out += text;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  const mixsolve::bench::Options opt(argc, argv);
  mixsolve::bench::apply_solver_tuning_environment();
  if (!gpu_available()) {
    std::printf("lstsq_benchmark: no CUDA GPU present; nothing to measure\n");
    return 0;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  for (const std::string& text : opt.list("shapes", "65536x4096,262144x256,16384x16384")) {
    const std::size_t x = text.find('x');
    if (x == std::string::npos) throw InvalidArgument("--shapes: \"" + text + "\" is not MxN");
    shapes.push_back({std::stoll(text.substr(0, x)), std::stoll(text.substr(x + 1))});
    if (shapes.back().first < shapes.back().second || shapes.back().second < 1)
      throw InvalidArgument("--shapes: \"" + text + "\" needs m >= n >= 1");
  }
  const std::vector<std::string> backends = opt.list("backends", "cublas-sgemm,tf32tf32,halfhalf");
  const std::vector<std::string> panels = opt.list("panels", "tsqr,cusolver");
  for (const std::string& panel : panels)
    if (panel != "tsqr" && panel != "cusolver")
      throw InvalidArgument("--panels: \"" + panel + "\" is neither tsqr nor cusolver");
  const std::int64_t block = opt.sizes("block", "128").front();
  // --vt-c-backends same,cublas-sgemm: the FP32 QR rows with each backend for the trailing
  // updates' V^T C (DeviceQr's vt_c_update; same: the --backends one for both products).
  const std::vector<std::string> vt_c_backends = opt.list("vt-c-backends", "same");
  const std::vector<std::string> refinements = opt.list("refinements", "augmented,gmres");
  // --options: least-squares options the sweeps below start from (mixsolve/solvers/options.hpp,
  // ';' between fields), e.g. "max-iterations=10;fallback=false".
  std::string base_text = opt.get("options", "");
  std::replace(base_text.begin(), base_text.end(), ';', ',');
  const LeastSquaresOptions base_options = parse_least_squares_options(base_text);
  // --cholesky-qr yes,no: with and without the Cholesky QR attempt (LeastSquaresOptions::cholesky_qr).
  const std::vector<std::string> cholesky_qr = opt.list("cholesky-qr", "yes");
  for (const std::string& c : cholesky_qr)
    if (c != "yes" && c != "no") throw InvalidArgument("--cholesky-qr: \"" + c + "\" is neither yes nor no");
  std::vector<std::string> irs = opt.list("irs", "32F");
  if (irs.size() == 1 && irs[0] == "none") irs.clear();
  for (const std::string& lowest : irs) bench::irs_precision(lowest);  // names checked before any run
  for (const std::string& r : refinements)
    parse_least_squares_refinement(r);  // a name it does not know is an InvalidArgument naming it
  // --conds none: least squares on the uniform A only; --lstsq no: the QR rows alone.
  std::vector<double> conds;
  for (const std::string& text : opt.list("conds", "1e2,1e6,1e8"))
    if (text != "none") conds.push_back(std::stod(text));
  const bool lstsq = opt.get("lstsq", "yes") != "no";
  // --cholesky-parts yes: rows for the Cholesky QR attempt's DTRSM and DSYRK alone.
  const bool cholesky_parts = opt.get("cholesky-parts", "no") == "yes";
  // --cgls-parts yes: rows for the operations of one CGLS iteration (DGEMV with A and A^T, DTRSV
  // with R and R^T) and for an explicit R^-1 (cusolverDnXtrtri once, DGEMV with it per solve).
  const bool cgls_parts = opt.get("cgls-parts", "no") == "yes";
  // --fp32-updates auto,cublas-sgemm,auto/tf32tf32: least squares with each backend for the FP32
  // QR's trailing updates (LeastSquaresOptions::fp32_update; auto: the solver's choice); after a
  // slash, the one for V^T C alone (fp32_vt_c_update).
  const std::vector<std::string> fp32_updates = opt.list("fp32-updates", "auto");
  // --factorizations auto,fp32,fp64: least squares with each LeastSquaresOptions::factorization
  // (auto, the default: the FP64 QR solve alone below auto_min_work, else FP32).
  const std::vector<std::string> factorizations = opt.list("factorizations", "auto");
  for (const std::string& f : factorizations)
    if (f != "auto" && f != "fp32" && f != "fp64")
      throw InvalidArgument("--factorizations: \"" + f + "\" is none of auto, fp32, fp64");
  // --ls-blocks auto,512: least squares with each LeastSquaresOptions::block_size (auto: the
  // solver's choice).
  std::vector<std::int64_t> ls_blocks;
  for (const std::string& text : opt.list("ls-blocks", "auto")) {
    ls_blocks.push_back(text == "auto" ? 0 : std::stoll(text));
    if (ls_blocks.back() < 0) throw InvalidArgument("--ls-blocks: \"" + text + "\" is neither auto nor a block size");
  }
  const std::vector<std::string> rank_deficient = opt.list("rank-deficient", "none");
  for (const std::string& f : rank_deficient)
    if (f != "none" && f != "duplicate" && f != "dummy" && f != "chebyshev")
      throw InvalidArgument("--rank-deficient: \"" + f + "\" is none of duplicate, dummy, chebyshev");
  const int reps = std::stoi(opt.get("reps", "3"));
  Context ctx;
  nlohmann::json out = mixsolve::bench::device_json();
  std::printf("GPU: %s; %s; QR of uniform(-1, 1) A, median of %d; ratio = cusolverDnDgeqrf time / time\n",
              out["gpu"].get<std::string>().c_str(), out["date"].get<std::string>().c_str(), reps);
  std::printf("%-34s %18s %10s %10s %8s\n", "method", "m x n", "time s", "TFLOP/s", "ratio");
  cusolverDnHandle_t solver;
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver));
  MIXSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver, ctx.stream()));
  for (const auto& shape : shapes) {
    const std::int64_t m = shape.first, n = shape.second;
    const double flops = 2.0 * m * n * n - 2.0 * n * n * n / 3;
    DeviceBuffer<double> a(ctx, m * n), work64(ctx, m * n);
    DeviceBuffer<float> work32(ctx, m * n);
    fill_random(device_view(a.data(), m, n, m), RandomSpec::uniform(-1, 1, 5), ctx.stream());
    // cuSOLVER's geqrf reads words of tau and of its workspace before writing them (compute-
    // sanitizer initcheck): the baselines' buffers start zeroed, so that initcheck reports only
    // what is wrong.
    const auto zero_solver_buffers = [&](auto&... buffers) { (buffers.set_zero(ctx.stream()), ...); };
    const auto copy64 = [&] {
      MIXSOLVE_CUDA_CHECK(
          cudaMemcpyAsync(work64.data(), a.data(), sizeof(double) * m * n, cudaMemcpyDeviceToDevice, ctx.stream()));
    };
    const auto copy32 = [&] {
      to_float<<<4096, 256, 0, ctx.stream()>>>(a.data(), m * n, work32.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    };
    char dims[48];
    std::snprintf(dims, sizeof dims, "%lldx%lld", (long long)m, (long long)n);
    double baseline = 0;
    // ratio: against `reference` where given (the least-squares rows: dgeqrf + dormqr + dtrsm),
    // else against cusolverDnDgeqrf (the first row).
    const auto row = [&](const std::string& name, double seconds, double reference = 0) {
      if (baseline == 0) baseline = seconds;
      const double ratio = (reference > 0 ? reference : baseline) / seconds;
      std::printf("%-34s %18s %10.4f %10.2f %8.2f\n", name.c_str(), dims, seconds, flops / seconds * 1e-12, ratio);
      out["rows"].push_back({{"method", name},
                             {"m", m},
                             {"n", n},
                             {"seconds", seconds},
                             {"tflops", flops / seconds * 1e-12},
                             {"speedup", ratio}});
    };
    {  // cuSOLVER FP64 and FP32
      int lwork64 = 0, lwork32 = 0;
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf_bufferSize(solver, int(m), int(n), work64.data(), int(m), &lwork64));
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgeqrf_bufferSize(solver, int(m), int(n), work32.data(), int(m), &lwork32));
      DeviceBuffer<double> tau64(ctx, n), lw64(ctx, std::max(lwork64, 1));
      DeviceBuffer<float> tau32(ctx, n), lw32(ctx, std::max(lwork32, 1));
      zero_solver_buffers(tau64, lw64, tau32, lw32);
      DeviceBuffer<int> info(ctx, 1);
      row("cusolverDnDgeqrf", median_seconds(ctx, reps, copy64, [&] {
            MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf(solver, int(m), int(n), work64.data(), int(m), tau64.data(),
                                                     lw64.data(), lwork64, info.data()));
          }));
      row("cusolverDnSgeqrf", median_seconds(ctx, reps, copy32, [&] {
            MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgeqrf(solver, int(m), int(n), work32.data(), int(m), tau32.data(),
                                                     lw32.data(), lwork32, info.data()));
          }));
    }
    // An upper triangle with a unit diagonal and small entries above: a well-conditioned R (n x n).
    const auto well_conditioned_triangle = [&](DeviceBuffer<double>& triangle) {
      fill_random(device_view(triangle.data(), n, n, n), RandomSpec::uniform(-1.0 / n, 1.0 / n, 9), ctx.stream());
      set_unit_diagonal<<<int((n + 255) / 256), 256, 0, ctx.stream()>>>(triangle.data(), n);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    };
    // The median time of `body`, nothing to prepare before each run.
    const auto timed = [&](const std::function<void()>& body) {
      return median_seconds(
          ctx, reps, [] {}, body);
    };
    if (cholesky_parts) {  // the Cholesky QR attempt's two large FP64 products, and DGEMM for A^T A
      DeviceBuffer<double> triangle(ctx, n * n), gram(ctx, n * n);
      well_conditioned_triangle(triangle);
      row("  Cholesky QR's DTRSM (Y := A R^-1)", median_seconds(ctx, reps, copy64, [&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx.cublas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                              CUBLAS_DIAG_NON_UNIT, int(m), int(n), &kOne, triangle.data(), int(n),
                                              work64.data(), int(m)));
          }));
      // The same solve transposed, Y^T := R^-T A^T, on A^T (n x m) formed by DGEAM.
      row("  DGEAM A^T, DTRSM left (R^-T A^T)", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDgeam(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), &kOne, a.data(),
                                              int(m), &kZero, work64.data(), int(n), work64.data(), int(n)));
            MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                                              CUBLAS_DIAG_NON_UNIT, int(n), int(m), &kOne, triangle.data(), int(n),
                                              work64.data(), int(n)));
          }));
      row("  Cholesky QR's DSYRK (Y^T Y)", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDsyrk(ctx.cublas(), CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, int(n), int(m), &kOne,
                                              a.data(), int(m), &kZero, gram.data(), int(n)));
          }));
      row("  DGEMM A^T A", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(n), int(m), &kOne,
                                              a.data(), int(m), a.data(), int(m), &kZero, gram.data(), int(n)));
          }));
    }
    if (cgls_parts) {
      DeviceBuffer<double> triangle(ctx, n * n), inverse(ctx, n * n), v(ctx, n), w(ctx, m);
      well_conditioned_triangle(triangle);
      fill_random(device_view(v.data(), n, 1, n), RandomSpec::uniform(-1, 1, 10), ctx.stream());
      fill_random(device_view(w.data(), m, 1, m), RandomSpec::uniform(-1, 1, 11), ctx.stream());
      row("  CGLS: DGEMV A v", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(m), int(n), &kOne, a.data(), int(m),
                                              v.data(), 1, &kZero, work64.data(), 1));
          }));
      row("  CGLS: DGEMV A^T w", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_T, int(m), int(n), &kOne, a.data(), int(m),
                                              w.data(), 1, &kZero, work64.data(), 1));
          }));
      for (const cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T})
        row(op == CUBLAS_OP_N ? "  CGLS: DTRSV R^-1 v" : "  CGLS: DTRSV R^-T v", timed([&] {
              MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(ctx.cublas(), CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, int(n),
                                                triangle.data(), int(n), v.data(), 1));
            }));
      std::size_t device_bytes = 0, host_bytes = 0;
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnXtrtri_bufferSize(solver, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n,
                                                          CUDA_R_64F, inverse.data(), n, &device_bytes, &host_bytes));
      DeviceBuffer<char> device_work(ctx, std::max<std::size_t>(device_bytes, 1));
      std::vector<char> host_work(std::max<std::size_t>(host_bytes, 1));
      DeviceBuffer<int> info(ctx, 1);
      row("  CGLS: cusolverDnXtrtri (R^-1, once)",
          median_seconds(
              ctx, reps,
              [&] {
                MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(inverse.data(), triangle.data(), sizeof(double) * n * n,
                                                    cudaMemcpyDeviceToDevice, ctx.stream()));
              },
              [&] {
                MIXSOLVE_CUSOLVER_CHECK(cusolverDnXtrtri(solver, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n,
                                                         CUDA_R_64F, inverse.data(), n, device_work.data(),
                                                         device_bytes, host_work.data(), host_bytes, info.data()));
              }));
      row("  CGLS: DGEMV R^-1 v (n x n)", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(n), int(n), &kOne, inverse.data(), int(n),
                                              v.data(), 1, &kZero, work64.data(), 1));
          }));
      row("  CGLS: DTRMV R^-1 v", timed([&] {
            MIXSOLVE_CUBLAS_CHECK(cublasDtrmv(ctx.cublas(), CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                                              int(n), inverse.data(), int(n), v.data(), 1));
          }));
    }
    {  // The panels alone: cuSOLVER sgeqrf of each (m - j0) x block panel, as the FP32 QR runs them.
      int lwork = 0;
      MIXSOLVE_CUSOLVER_CHECK(
          cusolverDnSgeqrf_bufferSize(solver, int(m), int(std::min(block, n)), work32.data(), int(m), &lwork));
      DeviceBuffer<float> tau(ctx, n), lw(ctx, std::max(lwork, 1));
      DeviceBuffer<int> info(ctx, 1);
      zero_solver_buffers(tau, lw);
      row("  its panels alone (sgeqrf, block " + std::to_string(block) + ")", median_seconds(ctx, reps, copy32, [&] {
            for (std::int64_t j0 = 0; j0 < n; j0 += block)
              MIXSOLVE_CUSOLVER_CHECK(cusolverDnSgeqrf(solver, int(m - j0), int(std::min(block, n - j0)),
                                                       work32.data() + j0 + j0 * m, int(m), tau.data() + j0, lw.data(),
                                                       lwork, info.data()));
          }));
    }
    // Least squares with one right-hand side: dgeqrf + dormqr + dtrsm against least_squares(), on
    // the uniform A and on svd_geo matrices of each --conds; b inconsistent (uniform) and
    // consistent (A x, x uniform). x and ||b - A x|| compared with the FP64 QR's.
    DeviceBuffer<double> b(ctx, m), c(ctx, m), x(ctx, n), x_true(ctx, n), residual(ctx, m);
    int lwork = 0, lwork_q = 0;
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgeqrf_bufferSize(solver, int(m), int(n), work64.data(), int(m), &lwork));
    DeviceBuffer<double> tau(ctx, n);
    DeviceBuffer<int> info(ctx, 1);
    MIXSOLVE_CUSOLVER_CHECK(cusolverDnDormqr_bufferSize(solver, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, int(m), 1, int(n),
                                                        work64.data(), int(m), tau.data(), c.data(), int(m), &lwork_q));
    DeviceBuffer<double> lw(ctx, std::max({lwork, lwork_q, 1}));
    zero_solver_buffers(tau, lw);
    const double one = 1, minus_one = -1, zero = 0;
    // ||b - A y||_2 for a device vector y.
    const auto residual_norm = [&](const DeviceBuffer<double>& matrix, const double* y) {
      MIXSOLVE_CUDA_CHECK(
          cudaMemcpyAsync(residual.data(), b.data(), sizeof(double) * m, cudaMemcpyDeviceToDevice, ctx.stream()));
      MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(m), int(n), &minus_one, matrix.data(), int(m), y,
                                        1, &one, residual.data(), 1));
      double norm = 0;
      MIXSOLVE_CUBLAS_CHECK(cublasDnrm2(ctx.cublas(), int(m), residual.data(), 1, &norm));
      ctx.synchronize();
      return norm;
    };
    // cuSOLVER's FP64 QR solve of work64 x = c in place (x in c's first n rows).
    const auto fp64_qr_solve = [&] {
      MIXSOLVE_CUSOLVER_CHECK(
          cusolverDnDgeqrf(solver, int(m), int(n), work64.data(), int(m), tau.data(), lw.data(), lwork, info.data()));
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnDormqr(solver, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, int(m), 1, int(n), work64.data(),
                                               int(m), tau.data(), c.data(), int(m), lw.data(), int(lw.size()),
                                               info.data()));
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx.cublas(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                        CUBLAS_DIAG_NON_UNIT, int(n), 1, &one, work64.data(), int(m), c.data(),
                                        int(m)));
    };
    const auto lstsq_rows = [&](const DeviceBuffer<double>& matrix, const std::string& label) {
      for (const bool consistent : {false, true}) {
        if (consistent) {
          fill_random(device_view(x_true.data(), n, 1, n), RandomSpec::uniform(-1, 1, 7), ctx.stream());
          MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_N, int(m), int(n), &one, matrix.data(), int(m),
                                            x_true.data(), 1, &zero, b.data(), 1));
        } else {
          fill_random(device_view(b.data(), m, 1, m), RandomSpec::uniform(-1, 1, 6), ctx.stream());
        }
        const std::string name = "lstsq " + label + (consistent ? " consistent" : " inconsistent");
        const auto copies = [&] {
          MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(work64.data(), matrix.data(), sizeof(double) * m * n,
                                              cudaMemcpyDeviceToDevice, ctx.stream()));
          MIXSOLVE_CUDA_CHECK(
              cudaMemcpyAsync(c.data(), b.data(), sizeof(double) * m, cudaMemcpyDeviceToDevice, ctx.stream()));
        };
        const double fp64_lstsq = median_seconds(ctx, reps, copies, fp64_qr_solve);
        row(name + ": dgeqrf + dormqr + dtrsm", fp64_lstsq, fp64_lstsq);
        // The FP64 QR's x and residual norm, the references of the rows below.
        std::vector<double> x_fp64(n);
        MIXSOLVE_CUDA_CHECK(
            cudaMemcpyAsync(x_fp64.data(), c.data(), sizeof(double) * n, cudaMemcpyDeviceToHost, ctx.stream()));
        const double residual_fp64 = residual_norm(matrix, c.data());
        // ||y - x_dgeqrf|| / ||x_dgeqrf|| and ||b - A y|| for a device y, printed and in the JSON row.
        const auto compare = [&](const double* y, const std::string& extra) {
          std::vector<double> y_host(n);
          MIXSOLVE_CUDA_CHECK(
              cudaMemcpyAsync(y_host.data(), y, sizeof(double) * n, cudaMemcpyDeviceToHost, ctx.stream()));
          const double residual = residual_norm(matrix, y);
          double difference = 0, norm = 0;
          for (std::int64_t i = 0; i < n; ++i) {
            difference += (y_host[i] - x_fp64[i]) * (y_host[i] - x_fp64[i]);
            norm += x_fp64[i] * x_fp64[i];
          }
          std::printf("%-34s %18s ||x - x_dgeqrf|| / ||x_dgeqrf|| = %.2e, ||r|| %.6e (dgeqrf's %.6e)%s\n", "", dims,
                      std::sqrt(difference / norm), residual, residual_fp64, extra.c_str());
          out["rows"].back()["x_difference_to_dgeqrf"] = std::sqrt(difference / norm);
          out["rows"].back()["residual_norm"] = residual;
          out["rows"].back()["residual_norm_dgeqrf"] = residual_fp64;
        };
        for (const std::string& lowest : irs) {  // cusolverDnIRSXgels: FP64 main precision, fallback on
          bench::IrsObjects objects;
          MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsCreate(&objects.params));
          MIXSOLVE_CUSOLVER_CHECK(
              cusolverDnIRSParamsSetSolverPrecisions(objects.params, CUSOLVER_R_64F, bench::irs_precision(lowest)));
          MIXSOLVE_CUSOLVER_CHECK(
              cusolverDnIRSParamsSetRefinementSolver(objects.params, CUSOLVER_IRS_REFINE_CLASSICAL));
          MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSParamsEnableFallback(objects.params));
          MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSInfosCreate(&objects.infos));
          std::size_t lwork_bytes = 0;
          MIXSOLVE_CUSOLVER_CHECK(
              cusolverDnIRSXgels_bufferSize(solver, objects.params, int(m), int(n), 1, &lwork_bytes));
          DeviceBuffer<char> irs_work(ctx, std::max<std::size_t>(lwork_bytes, 1));
          int niters = 0;
          const double seconds = median_seconds(ctx, reps, copies, [&] {
            MIXSOLVE_CUSOLVER_CHECK(cusolverDnIRSXgels(solver, objects.params, objects.infos, int(m), int(n), 1,
                                                       work64.data(), int(m), c.data(), int(m), x.data(), int(n),
                                                       irs_work.data(), lwork_bytes, &niters, info.data()));
          });
          // niters < 0: the refinement failed and cuSOLVER solved in FP64 (its fallback).
          row(name + ": cusolverDnIRSXgels " + lowest + (niters < 0 ? " -> fp64" : ""), seconds, fp64_lstsq);
          out["rows"].back()["irs_iterations"] = niters;
          compare(x.data(), "; niters " + std::to_string(niters));
        }
        for (const std::string& refinement : refinements)
          for (const std::string& cholesky : cholesky_qr)
            for (const std::string& update : fp32_updates)
              for (const std::int64_t ls_block : ls_blocks)
                for (const std::string& factorization : factorizations) {
                  LeastSquaresOptions options = base_options;
                  options.factorization = factorization == "fp64"   ? Precision::FP64
                                          : factorization == "fp32" ? Precision::FP32
                                                                    : Precision::Auto;
                  const std::size_t slash = update.find('/');
                  const std::string both = update.substr(0, slash);
                  if (both != "auto") options.fp32_update = both;
                  if (slash != std::string::npos) options.fp32_vt_c_update = update.substr(slash + 1);
                  options.block_size = int(ls_block);
                  options.refinement = parse_least_squares_refinement(refinement);
                  options.cholesky_qr = cholesky == "yes";
                  LeastSquaresReport report;
                  const double ours = median_seconds(
                      ctx, reps, [] {},
                      [&] {
                        // In an NVTX range named after the row (for ncu --nvtx-include "lstsq .../").
                        nvtxRangePushA((name + " " + refinement).c_str());
                        report = least_squares(ctx, device_view<const double>(matrix.data(), m, n, m),
                                               device_view<const double>(b.data(), m, 1, m),
                                               device_view(x.data(), n, 1, n), options);
                        nvtxRangePop();
                      });
                  std::string label = update == "auto" ? "" : update;
                  if (ls_block > 0)
                    label += (label.empty() ? "" : ", ") + std::string("block ") + std::to_string(ls_block);
                  row(name + ": mixsolve " + (label.empty() ? "" : "[" + label + "] ") + report.path(), ours,
                      fp64_lstsq);
                  compare(x.data(), attempt_times(report));
                }
      }
    };
    if (lstsq) lstsq_rows(a, "uniform");
    // Rank-deficient A: cuSOLVER's SVD-based minimum-norm solve, the FP64 QR solve and
    // least_squares(), on one inconsistent uniform b.
    for (const std::string& family : rank_deficient) {
      if (family == "none") continue;
      DeviceBuffer<double> deficient(ctx, m * n);
      if (family == "duplicate") {
        TestMatrixSpec spec = TestMatrixSpec::parse("svd_geo");
        spec.seed = 12;
        generate_test_matrix_on_device(spec, device_view(deficient.data(), m, n, m), ctx.stream());
        if (n > 1)
          MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(deficient.data() + (n - 1) * m, deficient.data(), sizeof(double) * m,
                                              cudaMemcpyDeviceToDevice, ctx.stream()));
      } else {
        std::vector<double> host(static_cast<std::size_t>(m * n)), draws(static_cast<std::size_t>(m));
        fill_random(host_view(draws.data(), m, 1, m), RandomSpec::uniform(-1, 1, 13));
        if (family == "dummy") {
          const std::int64_t groups = std::max<std::int64_t>(1, (n - 1) / 2);
          fill_random(host_view(host.data(), m, n, m), RandomSpec::uniform(-1, 1, 14));
          for (std::int64_t i = 0; i < m; ++i) {
            host[std::size_t(i)] = 1;  // the intercept
            const std::int64_t g = std::min(groups - 1, std::int64_t((draws[std::size_t(i)] + 1) / 2 * double(groups)));
            for (std::int64_t q = 0; q < groups && 1 + q < n; ++q) host[std::size_t(i + (1 + q) * m)] = q == g ? 1 : 0;
          }
        } else {  // chebyshev
          for (std::int64_t i = 0; i < m; ++i) {
            const double t = draws[std::size_t(i)];
            host[std::size_t(i)] = 1;
            if (n > 1) host[std::size_t(i + m)] = t;
            for (std::int64_t j = 2; j < n; ++j)
              host[std::size_t(i + j * m)] =
                  2 * t * host[std::size_t(i + (j - 1) * m)] - host[std::size_t(i + (j - 2) * m)];
          }
        }
        deficient.copy_from_host(host.data(), host.size(), ctx.stream());
      }
      fill_random(device_view(b.data(), m, 1, m), RandomSpec::uniform(-1, 1, 15), ctx.stream());
      const std::string name = "rank-deficient " + family;
      // cuSOLVER's SVD-based minimum-norm solve (timed whole: the SVD and V S_k^+ U_k^T b).
      DeviceBuffer<double> u(ctx, m * n), vt(ctx, n * n), sigma(ctx, n), t(ctx, n), x_svd(ctx, n);
      int lwork_svd = 0;
      MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgesvd_bufferSize(solver, int(m), int(n), &lwork_svd));
      DeviceBuffer<double> work_svd(ctx, std::max(lwork_svd, 1)), rwork(ctx, std::max<std::int64_t>(n, 1));
      std::int64_t svd_rank = 0;
      const auto copy_a = [&] {
        MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(work64.data(), deficient.data(), sizeof(double) * m * n,
                                            cudaMemcpyDeviceToDevice, ctx.stream()));
      };
      const double svd_seconds = median_seconds(ctx, reps, copy_a, [&] {
        signed char job = 'S';
        MIXSOLVE_CUSOLVER_CHECK(cusolverDnDgesvd(solver, job, job, int(m), int(n), work64.data(), int(m), sigma.data(),
                                                 u.data(), int(m), vt.data(), int(n), work_svd.data(), lwork_svd,
                                                 rwork.data(), info.data()));
        MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_T, int(m), int(n), &one, u.data(), int(m), b.data(),
                                          1, &zero, t.data(), 1));
        std::vector<double> s_host(static_cast<std::size_t>(n)), t_host(static_cast<std::size_t>(n));
        sigma.copy_to_host(s_host.data(), std::size_t(n), ctx.stream());
        t.copy_to_host(t_host.data(), std::size_t(n), ctx.stream());
        const double cut = double(std::max(m, n)) * 0x1p-53 * s_host[0];
        svd_rank = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const bool kept = s_host[std::size_t(i)] > cut;
          svd_rank += kept;
          t_host[std::size_t(i)] = kept ? t_host[std::size_t(i)] / s_host[std::size_t(i)] : 0.0;
        }
        t.copy_from_host(t_host.data(), std::size_t(n), ctx.stream());
        MIXSOLVE_CUBLAS_CHECK(cublasDgemv(ctx.cublas(), CUBLAS_OP_T, int(n), int(n), &one, vt.data(), int(n), t.data(),
                                          1, &zero, x_svd.data(), 1));
      });
      row(name + ": cusolverDnDgesvd + V S_k^+ U_k^T b (rank " + std::to_string(svd_rank) + ")", svd_seconds,
          svd_seconds);
      std::vector<double> x_reference(static_cast<std::size_t>(n));
      x_svd.copy_to_host(x_reference.data(), std::size_t(n), ctx.stream());
      const double residual_svd = residual_norm(deficient, x_svd.data());
      // x and ||b - A x|| of a device y against the SVD's, printed and in the JSON row.
      const auto against_svd = [&](const double* y, const std::string& extra) {
        std::vector<double> y_host(static_cast<std::size_t>(n));
        MIXSOLVE_CUDA_CHECK(
            cudaMemcpyAsync(y_host.data(), y, sizeof(double) * n, cudaMemcpyDeviceToHost, ctx.stream()));
        const double residual = residual_norm(deficient, y);
        double difference = 0, norm = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          difference += (y_host[std::size_t(i)] - x_reference[std::size_t(i)]) *
                        (y_host[std::size_t(i)] - x_reference[std::size_t(i)]);
          norm += x_reference[std::size_t(i)] * x_reference[std::size_t(i)];
        }
        std::printf("%-34s %18s ||x - x_svd|| / ||x_svd|| = %.2e, ||r|| %.10e (the SVD's %.10e)%s\n", "", dims,
                    std::sqrt(difference / norm), residual, residual_svd, extra.c_str());
        out["rows"].back()["x_difference_to_svd"] = std::sqrt(difference / norm);
        out["rows"].back()["residual_norm"] = residual;
        out["rows"].back()["residual_norm_svd"] = residual_svd;
      };
      // The FP64 QR solve (not a minimum-norm solution where A is rank deficient).
      const auto copies = [&] {
        copy_a();
        MIXSOLVE_CUDA_CHECK(
            cudaMemcpyAsync(c.data(), b.data(), sizeof(double) * m, cudaMemcpyDeviceToDevice, ctx.stream()));
      };
      const double qr_seconds = median_seconds(ctx, reps, copies, fp64_qr_solve);
      row(name + ": dgeqrf + dormqr + dtrsm", qr_seconds, svd_seconds);
      against_svd(c.data(), "");
      LeastSquaresReport report;
      const double ours = median_seconds(
          ctx, reps, [] {},
          [&] {
            nvtxRangePushA((name + " mixsolve").c_str());
            report = least_squares(ctx, device_view<const double>(deficient.data(), m, n, m),
                                   device_view<const double>(b.data(), m, 1, m), device_view(x.data(), n, 1, n),
                                   base_options);
            nvtxRangePop();
          });
      row(name + ": mixsolve " + report.path(), ours, svd_seconds);
      out["rows"].back()["rank"] = report.rank;
      out["rows"].back()["converged"] = report.converged;
      against_svd(x.data(), "; rank " + std::to_string(report.rank) + ", ratio to the FP64 QR solve " +
                                std::to_string(qr_seconds / ours) + attempt_times(report));
    }
    for (const double cond : lstsq ? conds : std::vector<double>{}) {
      DeviceBuffer<double> svd(ctx, m * n);
      TestMatrixSpec spec = TestMatrixSpec::parse("svd_geo");
      spec.cond = cond;
      spec.seed = 11;
      generate_test_matrix_on_device(spec, device_view(svd.data(), m, n, m), ctx.stream());
      char label[32];
      std::snprintf(label, sizeof label, "svd_geo %.0e", cond);
      lstsq_rows(svd, label);
    }
    for (const std::string& panel_name : panels) {
      const solvers_detail::QrPanel panel =
          panel_name == "tsqr" ? solvers_detail::QrPanel::Tsqr : solvers_detail::QrPanel::Cusolver;
      const std::string suffix = panel_name == "tsqr" ? "" : ", geqrf panels";
      // Each factorization in an NVTX range named after its row (for ncu --nvtx-include).
      const std::string fp64_name = "mixsolve fp64 (cublas-dgemm" + suffix + ")";
      row(fp64_name, median_seconds(ctx, reps, copy64, [&] {
            nvtxRangePushA(fp64_name.c_str());
            solvers_detail::DeviceQr<double> qr(ctx, device_view(work64.data(), m, n, m), block,
                                                gemm::find_backend("cublas-dgemm"), panel);
            nvtxRangePop();
          }));
      for (const std::string& backend : backends)
        for (const std::string& vt_c : vt_c_backends) {
          const gemm::Backend* vt_c_update = vt_c == "same" ? nullptr : &gemm::find_backend(vt_c);
          const std::string fp32_name =
              "mixsolve fp32 (" + backend + (vt_c_update ? ", V^T C " + vt_c : std::string()) + suffix + ")";
          row(fp32_name, median_seconds(ctx, reps, copy32, [&] {
                nvtxRangePushA(fp32_name.c_str());
                solvers_detail::DeviceQr<float> qr(ctx, device_view(work32.data(), m, n, m), block,
                                                   gemm::find_backend(backend), panel, vt_c_update);
                nvtxRangePop();
              }));
        }
    }
  }
  cusolverDnDestroy(solver);
  mixsolve::bench::write_json(opt, out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lstsq_benchmark: %s\n", e.what());
  return 1;
}
