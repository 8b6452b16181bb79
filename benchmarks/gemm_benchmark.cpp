// SPDX-License-Identifier: BSD-3-Clause
// GEMM benchmark: throughput and accuracy of each backend against cuBLAS SGEMM measured in the
// same run, on square problems (n in --sizes) and over a k-sweep for the four input classes of
// Ootomo & Yokota (2021) §4.1. Prints tables and writes JSON (--json FILE).
//
//   gemm_benchmark [--sizes 4096,8192,16384] [--shapes 16384x16384x256,...] [--sweep-n 2048]
//                  [--sweep-k 256,1024,4096,16384] [--backends a,b,...] [--reps 5] [--json out.json]
//
// --shapes adds rectangular m x n x k problems (e.g. the trailing updates of a blocked LU).
#include <cstdio>
#include <cstdint>
#include <fstream>

#include "bench_common.hpp"
#include "mixsolve/gemm/registry.hpp"

using namespace mixsolve;
using namespace mixsolve::gemm;

int main(int argc, char** argv) try {
  const bench::Options opt(argc, argv);
  if (!gpu_available()) {
    std::printf("gemm_benchmark: no CUDA GPU present; nothing to measure (see examples/compare_gemm_backends for host backends)\n");
    return 0;
  }
  const auto sweep_n = opt.sizes("sweep-n", "2048").front();
  const auto sweep_k = opt.sizes("sweep-k", "256,1024,4096,16384");
  const auto names = opt.list("backends", "cublas-sgemm,cublas-tf32,cublas-fp16,cublas-bf16,cublas-fp16x3,halfhalf,tf32tf32,halfhalf-mma-sync,tf32tf32-mma-sync,markidis,cublas-dgemm");
  const int reps = std::stoi(opt.get("reps", "5"));
  Context ctx;
  std::vector<const Backend*> backends;
  for (const auto& name : names) backends.push_back(&find_backend(name));

  nlohmann::json out = bench::device_json();
  std::printf("GPU: %s, CUDA driver %s, runtime %s, cuBLAS %s; %s\n", out["gpu"].get<std::string>().c_str(),
              out.value("cuda_driver", "").c_str(), out.value("cuda_runtime", "").c_str(), out.value("cublas", "").c_str(),
              out["date"].get<std::string>().c_str());

  // Square (--sizes) and rectangular (--shapes) problems, uniform(-1,1): TFLOP/s and relative
  // error against cublas-sgemm of this run.
  const std::vector<bench::Shape> shapes = bench::shapes(opt, "sizes", "4096,8192,16384");
  const InputClass uniform = ootomo_yokota_input_classes(2026)[0];
  std::printf("\nC = A B, uniform(-1,1), median of %d runs; ratios against cublas-sgemm in this run\n", reps);
  std::printf("%-18s %18s %10s %9s %12s %12s\n", "backend", "m x n x k", "TFLOP/s", "x sgemm", "rel. error", "err/sgemm");
  for (const bench::Shape& sh : shapes) {
    GemmEvaluator eval(ctx, Memory::Device, sh.m, sh.n, sh.k);
    eval.set_inputs(uniform);
    const Evaluation sgemm = eval.evaluate(find_backend("cublas-sgemm"), reps);
    char dims[64];
    std::snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k);
    for (const Backend* b : backends) {
      const Evaluation e = b->name() == "cublas-sgemm" ? sgemm : eval.evaluate(*b, reps);
      nlohmann::json row = bench::to_json(e);
      row["speedup_vs_sgemm"] = e.tflops / sgemm.tflops;
      row["error_vs_sgemm"] = e.relative_error / sgemm.relative_error;
      out[sh.m == sh.n && sh.n == sh.k ? "square" : "rectangular"].push_back(row);
      if (!e.error.empty()) {
        std::printf("%-18s %18s  %s\n", e.backend.c_str(), dims, e.error.c_str());
        continue;
      }
      std::printf("%-18s %18s %10.1f %9.2f %12.3e %12.2f\n", e.backend.c_str(), dims, e.tflops, e.tflops / sgemm.tflops,
                  e.relative_error, e.relative_error / sgemm.relative_error);
    }
  }

  // k-sweep: relative error per input class (Ootomo & Yokota 2021, Fig. 8 / Fig. 1).
  std::printf("\nk-sweep, m = n = %lld\n", (long long)sweep_n);
  const SweepResult sweep = run_k_sweep(ctx, Memory::Device, backends, sweep_n, sweep_k, ootomo_yokota_input_classes(7), 3);
  std::printf("%s", format_k_sweep(sweep).c_str());
  for (const Evaluation& e : sweep.rows) out["k_sweep"].push_back(bench::to_json(e));
  bench::write_json(opt, out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gemm_benchmark: %s\n", e.what());
  return 1;
}
