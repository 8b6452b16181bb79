// SPDX-License-Identifier: BSD-3-Clause
// Compare GEMM backends: relative error (Ootomo & Yokota 2021, eq. 6) per input class over a sweep of k, and
// TFLOP/s -- the table of Ootomo & Yokota (2021) Fig. 8 / Fig. 1 -- as text and, with --csv FILE, as CSV for
// plot_gemm_accuracy.py. Without a GPU it runs the host backends (Eigen and the tensor-core model).
//
//   compare_gemm_backends [--backends halfhalf,tf32tf32,...] [--n 1024] [--k 64,256,1024,4096,16384]
//                         [--reps 3] [--csv results.csv]
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "example_options.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/gemm/evaluation.hpp"
#include "mixsolve/gemm/registry.hpp"

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve_examples::option;
using mixsolve_examples::split_list;

int main(int argc, char** argv) try {
  const bool gpu = gpu_available();
  Context ctx = gpu ? Context() : Context::host_only();
  const Memory memory = gpu ? Memory::Device : Memory::Host;
  std::vector<const Backend*> backends;
  const std::string chosen = option(argc, argv, "backends", "");
  if (chosen.empty()) {
    for (const Backend* b : available_backends(ctx))
      if (b->memory() == memory && b->data_type() == DataType::F32 &&
          (gpu || b->name() == "host-fp32" || b->name().find("-rn") == std::string::npos ||
           b->name() == "model-halfhalf-rn" || b->name() == "model-tf32tf32-rn"))
        backends.push_back(b);
  } else {
    for (const std::string& name : split_list(chosen)) backends.push_back(&find_backend(name));
  }
  const std::int64_t n = std::stoll(option(argc, argv, "n", gpu ? "1024" : "32"));
  std::vector<std::int64_t> ks;
  for (const std::string& k : split_list(option(argc, argv, "k", gpu ? "64,256,1024,4096,16384" : "16,256,4096")))
    ks.push_back(std::stoll(k));
  const int reps = std::stoi(option(argc, argv, "reps", gpu ? "3" : "1"));

  std::printf("compare_gemm_backends on %s: m = n = %lld, C = A B\n",
              gpu ? device_info().name.c_str() : "the host (no GPU: host backends)", static_cast<long long>(n));
  for (const Backend* b : backends) std::printf("  %-20s %s\n", b->name().c_str(), b->description().c_str());
  const SweepResult sweep = run_k_sweep(ctx, memory, backends, n, ks, ootomo_yokota_input_classes(1), reps);
  std::printf("%s", format_k_sweep(sweep).c_str());

  const std::string csv = option(argc, argv, "csv", "");
  if (!csv.empty()) {
    std::ofstream out(csv);
    out << "backend,input_class,m,n,k,relative_error,max_relative_error,tflops,error\n";
    for (const Evaluation& e : sweep.rows)
      out << e.backend << ",\"" << e.input_class << "\"," << e.m << "," << e.n << "," << e.k << ","
          << e.relative_error << "," << e.max_relative_error << "," << e.tflops << ",\"" << e.error << "\"\n";
    std::printf("\nwrote %s (plot with examples/plot_gemm_accuracy.py %s out.png)\n", csv.c_str(), csv.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "compare_gemm_backends: %s\n", e.what());
  return 1;
}
