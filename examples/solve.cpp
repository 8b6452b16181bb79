// SPDX-License-Identifier: BSD-3-Clause
// Solve A X = B with mixsolve and print the report.
//
//   solve [--matrix svd_geo] [--n 256] [--cond 1e6] [--seed 1] [--scale 1] [--nrhs 1]
//         [--mtx FILE.mtx] [--device host|gpu] [solver options]
//
// The solver options are SolveOptions' fields by their names in mixsolve/solvers/options.hpp
// (solve --help lists them): --precision fp16x3 --structure spd --max-iterations 10, or
// --options "precision=fp16x3,structure=spd"; --no-fallback, --no-range-scaling and
// --no-reuse-pivot-order set those switches off.
//
// On the host (the default device) the cheap precisions' products run through gemm/'s bit-exact
// models of the tensor cores, slow beyond a few hundred rows; --device gpu for large n.
// A is a generated LAWN-41 test matrix (matgen/test_matrices.hpp: svd|poev|heev _ arith|geo|
// cluster0|cluster1|logrand [_dominant]) or a Matrix Market file read through CHOLMOD and expanded
// to a dense matrix (symmetric storage mirrored). For generated problems B = A X_true with a
// random X_true, so the forward error is printed too. With --device gpu the matrices live on the
// GPU (generated there for large n) and the GPU engine solves.
#include <cholmod.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/solvers/options.hpp"
#include "mixsolve/solvers/solve.hpp"

using namespace mixsolve;

namespace {

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return argv[i + 1];
  return fallback;
}
bool flag(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i)
    if (argv[i] == "--" + name) return true;
  return false;
}

// Reads a real Matrix Market matrix into a dense column-major n x n array.
std::vector<double> read_matrix_market(const std::string& path, std::int64_t& n) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) throw InvalidArgument("solve: cannot open --mtx file \"" + path + "\"");
  cholmod_common common;
  cholmod_start(&common);
  cholmod_sparse* s = cholmod_read_sparse(f, &common);
  std::fclose(f);
  if (!s) {
    cholmod_finish(&common);
    throw InvalidArgument("solve: \"" + path + "\" is not a real Matrix Market matrix CHOLMOD can read");
  }
  if (s->nrow != s->ncol || s->xtype != CHOLMOD_REAL) {
    const std::string shape = std::to_string(s->nrow) + " x " + std::to_string(s->ncol);
    cholmod_free_sparse(&s, &common);
    cholmod_finish(&common);
    throw InvalidArgument("solve: the matrix in \"" + path + "\" is " + shape + " (or complex); a square real one is needed");
  }
  n = static_cast<std::int64_t>(s->nrow);
  std::vector<double> dense(n * n, 0.0);
  const auto* p = static_cast<const SuiteSparse_long*>(s->p);
  const auto* rows = static_cast<const SuiteSparse_long*>(s->i);
  const auto* values = static_cast<const double*>(s->x);
  const bool packed_int = s->itype == CHOLMOD_INT;
  for (std::int64_t j = 0; j < n; ++j) {
    const std::int64_t begin = packed_int ? static_cast<const int*>(s->p)[j] : p[j];
    const std::int64_t end = packed_int ? static_cast<const int*>(s->p)[j + 1] : p[j + 1];
    for (std::int64_t q = begin; q < end; ++q) {
      const std::int64_t i = packed_int ? static_cast<const int*>(s->i)[q] : rows[q];
      dense[i + j * n] += values[q];
      if (s->stype != 0 && i != j) dense[j + i * n] += values[q];  // symmetric storage: mirror
    }
  }
  cholmod_free_sparse(&s, &common);
  cholmod_finish(&common);
  return dense;
}

constexpr const char* kUsage =
    "solve [--matrix svd_geo] [--n 256] [--cond 1e6] [--seed 1] [--scale 1] [--nrhs 1]\n"
    "      [--mtx FILE.mtx] [--device host|gpu] [--allow-slow-generation]\n"
    "      solver options: --<field> <value> for any field below, or --options \"field=value,...\";\n"
    "      --auto-path also takes precisions joined by ','; --block is --block-size;\n"
    "      --no-fallback, --no-range-scaling, --no-reuse-pivot-order set those fields to false.\n";

// The example's own arguments that take a value, and its switches.
const std::vector<std::string> kOwnWithValue = {"matrix", "n", "cond", "seed", "scale", "nrhs", "mtx", "device"};
const std::vector<std::string> kSwitches = {"no-fallback", "no-range-scaling", "no-reuse-pivot-order",
                                            "allow-slow-generation"};

// The solver's options from the command line (mixsolve/solvers/options.hpp: one table of fields).
// Throws InvalidArgument naming an argument that is neither the example's nor a field, an option
// without its value, or a value the field does not take: a mistyped option must not be ignored.
SolveOptions solver_options(int argc, char** argv) {
  SolveOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw InvalidArgument("solve: unknown argument \"" + arg + "\"; usage:\n" + kUsage);
    const std::string name = arg.substr(2);
    if (std::find(kSwitches.begin(), kSwitches.end(), name) != kSwitches.end()) {
      if (name != "allow-slow-generation") set_solve_option(options, name.substr(3), "false");  // "no-..."
      continue;
    }
    const bool own = std::find(kOwnWithValue.begin(), kOwnWithValue.end(), name) != kOwnWithValue.end();
    bool field = name == "options" || name == "block";
    for (const OptionField& f : solve_option_fields()) field = field || f.name == name;
    if (!own && !field) throw InvalidArgument("solve: unknown argument \"" + arg + "\"; usage:\n" + kUsage);
    if (i + 1 >= argc) throw InvalidArgument("solve: " + arg + " needs a value");
    std::string value = argv[++i];
    if (own) continue;
    if (name == "options") options = parse_solve_options(value, options);
    else if (name == "auto-path") set_solve_option(options, name, std::regex_replace(value, std::regex(","), "+"));
    else set_solve_option(options, name == "block" ? "block-size" : name, value);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) try {
  if (flag(argc, argv, "help")) {
    std::printf("%s", kUsage);
    for (const OptionField& f : solve_option_fields())
      std::printf("  --%-22s %s: %s\n", f.name.c_str(), f.values.c_str(), f.description.c_str());
    return 0;
  }
  SolveOptions options = solver_options(argc, argv);
  const auto t_start = std::chrono::steady_clock::now();
  options.progress = [&](const std::string& phase) {
    std::printf("[%8.3f s] %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(),
                phase.c_str());
    std::fflush(stdout);
  };
  const std::int64_t nrhs = std::stoll(option(argc, argv, "nrhs", "1"));

  const bool on_gpu = option(argc, argv, "device", "host") == "gpu";
  if (on_gpu && !gpu_available()) throw NotSupported("--device gpu, but no CUDA GPU is present");
  Context ctx = on_gpu ? Context() : Context::host_only();
  const Memory memory = on_gpu ? Memory::Device : Memory::Host;

  // A (n x n), X_true (n x nrhs) and B = A X_true, in host or device memory.
  std::int64_t n = 0;
  std::vector<double> host_a;
  std::string description;
  const std::string mtx = option(argc, argv, "mtx", "");
  TestMatrixSpec spec;
  if (!mtx.empty()) {
    host_a = read_matrix_market(mtx, n);
    std::int64_t nonzeros = 0;
    for (double v : host_a) nonzeros += v != 0.0;
    description = mtx + " (dense: " + std::to_string(nonzeros) + " nonzeros)";
  } else {
    spec = TestMatrixSpec::parse(option(argc, argv, "matrix", "svd_geo"));
    spec.cond = std::stod(option(argc, argv, "cond", "1e6"));
    spec.seed = std::stoull(option(argc, argv, "seed", "1"));
    spec.scale = std::stod(option(argc, argv, "scale", "1"));
    n = std::stoll(option(argc, argv, "n", "256"));
    if (!on_gpu && n > 4096 && !flag(argc, argv, "allow-slow-generation"))
      throw InvalidArgument("--n " + std::to_string(n) + ": host generation is O(n^3) on one core (minutes beyond "
                            "n = 4096); use --device gpu, --allow-slow-generation, or --mtx");
    description = spec.name();
  }
  std::vector<double> host_storage;  // host matrices live here
  DeviceBuffer<double> device_storage;
  double* storage = nullptr;
  const std::size_t a_size = n * n, rhs_size = n * nrhs;
  if (on_gpu) {
    device_storage = DeviceBuffer<double>(a_size + 3 * rhs_size);
    storage = device_storage.data();
  } else {
    host_storage.resize(a_size + 3 * rhs_size);
    storage = host_storage.data();
  }
  const MatrixView<double> a{storage, n, n, n, memory};
  const MatrixView<double> x_true{storage + a_size, n, nrhs, n, memory};
  const MatrixView<double> b{storage + a_size + rhs_size, n, nrhs, n, memory};
  const MatrixView<double> x{storage + a_size + 2 * rhs_size, n, nrhs, n, memory};
  if (!mtx.empty()) {
    if (on_gpu) device_storage.copy_from_host(host_a.data(), a_size);
    else std::copy(host_a.begin(), host_a.end(), host_storage.begin());
  } else if (on_gpu) {
    generate_test_matrix_on_device(spec, a, ctx.stream());
  } else {
    generate_test_matrix(spec, a);
  }
  fill_random(x_true, RandomSpec::uniform(-1, 1, 42), on_gpu ? ctx.stream() : nullptr);
  const gemm::Backend& fp64 = gemm::find_backend(on_gpu ? "cublas-dgemm" : "host-fp64");
  fp64.run(ctx, gemm::GemmArgs<double>{gemm::Op::N, gemm::Op::N, n, nrhs, n, 1.0, a.data, n, x_true.data, n, 0.0, b.data, n});

  std::printf("solve: %s, n = %lld, %lld right-hand side(s), factorization %s, refinement %s%s, on the %s\n",
              description.c_str(), static_cast<long long>(n), static_cast<long long>(nrhs),
              to_string(options.factorization).c_str(), to_string(options.refinement).c_str(),
              options.fallback ? "" : ", no fallback", on_gpu ? "GPU" : "host");
  const SolveReport report = solve(ctx, a, b, x, options);
  std::vector<double> xs(rhs_size), xt(rhs_size);
  if (on_gpu) {
    ctx.synchronize();
    MIXSOLVE_CUDA_CHECK(cudaMemcpy(xs.data(), x.data, rhs_size * sizeof(double), cudaMemcpyDeviceToHost));
    MIXSOLVE_CUDA_CHECK(cudaMemcpy(xt.data(), x_true.data, rhs_size * sizeof(double), cudaMemcpyDeviceToHost));
  } else {
    std::copy(x.data, x.data + rhs_size, xs.begin());
    std::copy(x_true.data, x_true.data + rhs_size, xt.begin());
  }
  std::printf("%s", report.summary().c_str());
  double forward = 0, scale = 0;
  for (std::size_t i = 0; i < rhs_size; ++i) {
    forward = std::fmax(forward, std::fabs(xs[i] - xt[i]));
    scale = std::fmax(scale, std::fabs(xt[i]));
  }
  std::printf("  forward error ||x - x_true||_inf / ||x_true||_inf = %.3g\n", forward / scale);
  std::printf("  peak workspace %.1f MiB\n", double(report.peak_workspace_bytes) / (1 << 20));
  return report.converged ? 0 : 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
