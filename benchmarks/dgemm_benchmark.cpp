// SPDX-License-Identifier: BSD-3-Clause
// DGEMM and its emulations on the GPU: every backend against cuBLAS DGEMM in the same
// run, on square sizes and on rectangular shapes (an LU's trailing updates: m = n large, k = 256),
// for Nanai & Fujimoto's (2021) phi inputs. Accuracy on sampled entries against MPFR (256 bits): the maximum
// relative error (Nanai & Fujimoto 2021, eq. (21)) and the normwise relative error over the samples.
//
//   dgemm_benchmark [--sizes 4096,8192,16384] [--shapes 32768x32768x256,...] [--phis 0.1,1,2]
//                   [--backends cublas-dgemm,ozaki2-int8,ozaki2-int8:moduli=12] [--reps 5]
//                   [--samples 16] [--json out.json]
//
// A backend's parameters follow its name (gemm::find_backend_call); --samples s takes an s x s
// grid of entries. After each shape, one cuBLAS INT8 product of that shape, in ozaki2-int8's
// panels: the ceiling of an emulation by cuBLAS INT8 GEMMs on this GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/evaluation.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mpfr_reference.hpp"

using namespace mixsolve;
using namespace mixsolve::gemm;

namespace {

// --backends: items split at commas, where an item holding '=' but no ':' continues the previous
// backend's parameters ("ozaki2-int8:moduli=12,x=1").
std::vector<BackendCall> parse_backends(const std::vector<std::string>& items) {
  std::vector<std::string> texts;
  for (const std::string& item : items) {
    if (!texts.empty() && item.find('=') != std::string::npos && item.find(':') == std::string::npos)
      texts.back() += "," + item;
    else
      texts.push_back(item);
  }
  std::vector<BackendCall> calls;
  for (const std::string& t : texts) calls.push_back(find_backend_call(t));
  return calls;
}

// The ceiling of an emulation by INT8 GEMMs: cuBLAS INT8 GEMMs ("TN", INT32 out, random bytes)
// of the shape, padded to multiples of 16 and taken in panels of kOzaki2PanelColumns columns of C
// as ozaki2-int8 takes them. Its "x dgemm" column is DGEMM's time over this product's: the number
// of INT8 products that take as long as one DGEMM.
void int8_ceiling(Context& ctx, const bench::Shape& sh, int reps, double dgemm_seconds, nlohmann::json& out) {
  const auto round16 = [](std::int64_t x) { return (x + 15) / 16 * 16; };
  const std::int64_t m = round16(sh.m), n = round16(sh.n), k = round16(sh.k);
  const std::int64_t panel = std::min(n, kOzaki2PanelColumns);
  DeviceBuffer<double> a(ctx, (m * k + 7) / 8), b(ctx, (k * n + 7) / 8);  // random doubles, read as bytes
  DeviceBuffer<std::int32_t> c(ctx, m * panel);
  fill_random(device_view(a.data(), (m * k + 7) / 8, 1, (m * k + 7) / 8), RandomSpec{}, ctx.stream());
  fill_random(device_view(b.data(), (k * n + 7) / 8, 1, (k * n + 7) / 8), RandomSpec{}, ctx.stream());
  const std::int32_t one = 1, zero = 0;
  const auto gemm = [&] {
    for (std::int64_t j0 = 0; j0 < n; j0 += panel)
      if (cublasGemmEx(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(std::min(panel, n - j0)), int(k), &one,
                       a.data(), CUDA_R_8I, int(k), reinterpret_cast<const std::int8_t*>(b.data()) + j0 * k, CUDA_R_8I,
                       int(k), &zero, c.data(), CUDA_R_32I, int(m), CUBLAS_COMPUTE_32I,
                       CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error("cublasGemmEx (INT8) failed");
  };
  gemm();
  const double t = median_seconds(ctx, Memory::Device, reps, gemm);
  char dims[64];
  std::snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k);
  std::printf("%-28s %20s %5s %10.1f %9.2f   (TOP/s; x dgemm: INT8 GEMMs per DGEMM)\n", "cublas int8 gemm (ceiling)",
              dims, "-", 2.0 * m * n * k / t * 1e-12, dgemm_seconds / t);
  out["int8_ceiling"].push_back({{"m", sh.m}, {"n", sh.n}, {"k", sh.k}, {"median_seconds", t},
                                 {"tops", 2.0 * m * n * k / t * 1e-12}, {"int8_gemms_per_dgemm", dgemm_seconds / t}});
}

}  // namespace

int main(int argc, char** argv) try {
  const bench::Options opt(argc, argv);
  if (!gpu_available()) {
    std::printf("dgemm_benchmark: no CUDA GPU present; nothing to measure\n");
    return 0;
  }
  const std::vector<bench::Shape> shapes = bench::shapes(opt, "sizes", "4096,8192,16384");
  std::vector<double> phis;
  for (const std::string& s : opt.list("phis", "0.1,1,2")) phis.push_back(std::stod(s));
  std::vector<BackendCall> backends = parse_backends(opt.list("backends", "cublas-dgemm,ozaki2-int8"));
  if (backends.front().backend->name() != "cublas-dgemm") backends.insert(backends.begin(), find_backend_call("cublas-dgemm"));
  const int reps = std::stoi(opt.get("reps", "5"));
  const std::int64_t samples = opt.sizes("samples", "16").front();
  Context ctx;
  nlohmann::json out = bench::device_json();
  std::printf("GPU: %s, CUDA driver %s, cuBLAS %s; %s\n", out["gpu"].get<std::string>().c_str(),
              out.value("cuda_driver", "").c_str(), out.value("cublas", "").c_str(), out["date"].get<std::string>().c_str());
  std::printf(
      "C = A B, phi inputs (Nanai & Fujimoto 2021, §5.1), median of %d runs; errors on %lld x %lld sampled entries "
      "vs MPFR\n",
      reps, (long long)samples, (long long)samples);
  std::printf("%-28s %20s %5s %10s %9s %12s %12s %10s\n", "backend", "m x n x k", "phi", "TFLOP/s", "x dgemm",
              "max rel err", "rel err", "err/dgemm");
  for (const bench::Shape& sh : shapes)
    for (const double phi : phis) {
      DeviceBuffer<double> a(ctx, sh.m * sh.k), b(ctx, sh.k * sh.n), c(ctx, sh.m * sh.n);
      fill_random(device_view(a.data(), sh.m, sh.k, sh.m), RandomSpec::phi_spread(phi, 1), ctx.stream());
      fill_random(device_view(b.data(), sh.k, sh.n, sh.k), RandomSpec::phi_spread(phi, 2), ctx.stream());
      // The sampled rows of A and columns of B, on the host, and their MPFR products.
      const std::int64_t rows = std::min(samples, sh.m), cols = std::min(samples, sh.n);
      std::vector<std::int64_t> row_index(rows), col_index(cols);
      for (std::int64_t s = 0; s < rows; ++s) row_index[s] = s * sh.m / rows;
      for (std::int64_t s = 0; s < cols; ++s) col_index[s] = s * sh.n / cols;
      std::vector<double> a_rows(rows * sh.k), b_cols(sh.k * cols);
      for (std::int64_t s = 0; s < rows; ++s)
        MIXSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(a_rows.data() + s, rows * sizeof(double), a.data() + row_index[s],
                                              sh.m * sizeof(double), sizeof(double), sh.k, cudaMemcpyDeviceToHost,
                                              ctx.stream()));
      for (std::int64_t s = 0; s < cols; ++s)
        MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(b_cols.data() + s * sh.k, b.data() + col_index[s] * sh.k,
                                            sh.k * sizeof(double), cudaMemcpyDeviceToHost, ctx.stream()));
      ctx.synchronize();
      const std::vector<double> reference =
          mixsolve::testing::mpfr_gemm(rows, cols, sh.k, a_rows.data(), rows, b_cols.data(), sh.k);
      double dgemm_seconds = 0, dgemm_error = 0;
      for (const BackendCall& call : backends) {
        const Problem problem{sh.m, sh.n, sh.k, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data(), sh.m),
                              Operand::dense(Format::F64, Op::N, b.data(), sh.k),
                              Output{Format::F64, c.data(), sh.m}};
        char dims[64];
        std::snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k);
        nlohmann::json row = {{"backend", call.text}, {"m", sh.m}, {"n", sh.n}, {"k", sh.k}, {"phi", phi}};
        try {
          const auto run = [&] { call.backend->run(ctx, problem, call.parameters); };
          run();  // warm-up
          const double t = median_seconds(ctx, Memory::Device, reps, run);
          std::vector<double> sampled(rows * cols);
          for (std::int64_t t = 0; t < cols; ++t)
            for (std::int64_t s = 0; s < rows; ++s)
              MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&sampled[s + t * rows], c.data() + row_index[s] + col_index[t] * sh.m,
                                                  sizeof(double), cudaMemcpyDeviceToHost, ctx.stream()));
          ctx.synchronize();
          double difference = 0, norm = 0;
          for (std::size_t x = 0; x < sampled.size(); ++x) {
            difference += (sampled[x] - reference[x]) * (sampled[x] - reference[x]);
            norm += reference[x] * reference[x];
          }
          const double tflops = 2.0 * sh.m * sh.n * sh.k / t * 1e-12;
          const double max_error = mixsolve::testing::max_relative_error(rows, cols, sampled.data(), rows, reference);
          const double error = std::sqrt(difference / norm);
          if (call.backend->name() == "cublas-dgemm" && call.parameters.empty()) {
            dgemm_seconds = t;
            dgemm_error = max_error;
          }
          std::printf("%-28s %20s %5g %10.1f %9.2f %12.3e %12.3e %10.2f\n", call.text.c_str(), dims, phi, tflops,
                      dgemm_seconds / t, max_error, error, dgemm_error > 0 ? max_error / dgemm_error : 0.0);
          row["median_seconds"] = t;
          row["tflops"] = tflops;
          row["speedup_vs_dgemm"] = dgemm_seconds / t;
          row["max_relative_error"] = max_error;
          row["relative_error"] = error;
        } catch (const std::exception& e) {
          std::printf("%-28s %20s %5g  %s\n", call.text.c_str(), dims, phi, e.what());
          row["error"] = e.what();
        }
        out["rows"].push_back(row);
      }
      if (phi == phis.front() && dgemm_seconds > 0) int8_ceiling(ctx, sh, reps, dgemm_seconds, out);
    }
  bench::write_json(opt, out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dgemm_benchmark: %s\n", e.what());
  return 1;
}
