// SPDX-License-Identifier: BSD-3-Clause
// The refinement's triangular solves (solvers/src/triangular/triangular_solver.hpp) against cuBLAS's
// trsv and the device's copy bandwidth: X := U^-1 L^-1 X with the unit lower L and upper U of one
// n x n array, as GMRES-IR and classic IR apply the LU's factors.
//   triangular_benchmark [--sizes 16384,32768] [--reps 20] [--json file]
// Rows: mixsolve with FP32 factors applied in FP64 to 1 and 4 vectors (the refinement's case),
// with FP64 factors to 1 vector; cublasStrsv on the same FP32 factors (FP32 vector), cublasDtrsv
// on the FP64 factors. Times are medians of --reps pairs (L then U); "per triangle" is half a pair.
// The copy row copies one triangle's bytes of the FP32 factors (n^2 / 2 entries) device to device;
// its bandwidth counts the bytes read and written. A solve's bandwidth counts the factor bytes it
// must read (n^2 / 2 entries per triangle), its fraction is of the copy's. The error column: the
// largest difference from cublasDtrsv on the same factors in FP64, relative to the largest |x|.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/gpu.hpp"
#include "triangular/triangular_solver.hpp"

using namespace mixsolve;

namespace {

// A value in [-1, 1) from (i, j, seed): the same on every device.
__host__ __device__ double hashed_unit(std::uint64_t i, std::uint64_t j, std::uint64_t seed) {
  std::uint64_t z = i * 0x9e3779b97f4a7c15ull ^ (j + seed) * 0xbf58476d1ce4e5b9ull;
  z ^= z >> 31;
  z *= 0x94d049bb133111ebull;
  z ^= z >> 29;
  return double(z >> 11) * 0x1p-52 - 1.0;
}

// Well-conditioned triangles (as the refinement's factors of a well-conditioned A): off-diagonal
// entries below 1/n, diag(U) in [1, 2]; FP32 and FP64 copies of the same values.
__global__ void fill_factors(float* lu32, double* lu64, std::int64_t n) {
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n * n;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % n, j = idx / n;
    const double h = hashed_unit(std::uint64_t(i), std::uint64_t(j), 7);
    const float v = float(i == j ? 1.5 + 0.5 * h : h / double(n));
    lu32[idx] = v;
    if (lu64) lu64[idx] = double(v);
  }
}

__global__ void fill_vectors(double* x64, float* x32, std::int64_t count) {
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < count;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    x64[idx] = hashed_unit(std::uint64_t(idx), 1, 11);
    if (x32) x32[idx] = float(x64[idx]);
  }
}

// The median time in seconds of `reps` calls of `run` after `setup` (untimed) each.
double median_seconds(int reps, cudaStream_t stream, const std::function<void()>& setup, const std::function<void()>& run) {
  cudaEvent_t start, stop;
  MIXSOLVE_CUDA_CHECK(cudaEventCreate(&start));
  MIXSOLVE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int r = 0; r < reps + 1; ++r) {  // the first call warms up
    setup();
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(start, stream));
    run();
    MIXSOLVE_CUDA_CHECK(cudaEventRecord(stop, stream));
    MIXSOLVE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MIXSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0) times.push_back(ms * 1e-3);
  }
  MIXSOLVE_CUDA_CHECK(cudaEventDestroy(start));
  MIXSOLVE_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

}  // namespace

int main(int argc, char** argv) try {
  const bench::Options opt(argc, argv);
  if (!gpu_available()) {
    std::printf("triangular_benchmark: no CUDA GPU present; nothing to measure\n");
    return 0;
  }
  const std::vector<std::int64_t> sizes = opt.sizes("sizes", "16384,32768");
  const int reps = std::stoi(opt.get("reps", "20"));
  if (reps < 1) throw InvalidArgument("--reps " + std::to_string(reps) + " is not positive");
  nlohmann::json out = bench::device_json();
  std::printf("GPU: %s, CUDA driver %s, cuBLAS %s; %s\n", out["gpu"].get<std::string>().c_str(),
              out.value("cuda_driver", "").c_str(), out.value("cublas", "").c_str(), out["date"].get<std::string>().c_str());
  std::printf("X := U^-1 L^-1 X, median of %d pairs; GB/s: factor bytes of one triangle / time per triangle\n", reps);
  std::printf("%7s %-34s %11s %13s %9s %9s %10s\n", "n", "solver", "pair ms", "triangle ms", "GB/s", "of copy",
              "error");
  cudaStream_t stream;
  MIXSOLVE_CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t cublas;
  MIXSOLVE_CUBLAS_CHECK(cublasCreate(&cublas));
  MIXSOLVE_CUBLAS_CHECK(cublasSetStream(cublas, stream));
  nlohmann::json rows = nlohmann::json::array();
  for (const std::int64_t n : sizes) {
    const int kColumns = solvers_detail::kTriangularSolveMaxColumns;
    DeviceBuffer<float> lu32{std::size_t(n * n)};
    DeviceBuffer<double> lu64{std::size_t(n * n)};
    fill_factors<<<1024, 256, 0, stream>>>(lu32.data(), lu64.data(), n);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    DeviceBuffer<double> b{std::size_t(n * kColumns)}, x{std::size_t(n * kColumns)};
    DeviceBuffer<float> b32{std::size_t(n)}, x32{std::size_t(n)};
    fill_vectors<<<256, 256, 0, stream>>>(b.data(), nullptr, n * kColumns);
    fill_vectors<<<256, 256, 0, stream>>>(b.data(), b32.data(), n);  // the first vector in FP32 too
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const double triangle_bytes = double(n) * double(n) / 2 * sizeof(float);
    const auto copy_b = [&](int columns) {
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(x.data(), b.data(), std::size_t(n * columns) * sizeof(double),
                                          cudaMemcpyDeviceToDevice, stream));
    };
    const auto to_host = [&](const double* d, std::int64_t count) {
      std::vector<double> h(std::size_t(count), 0);
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(h.data(), d, std::size_t(count) * sizeof(double), cudaMemcpyDeviceToHost, stream));
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      return h;
    };
    const auto dtrsv_pair = [&](double* v) {
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(cublas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, int(n),
                                        lu64.data(), int(n), v, 1));
      MIXSOLVE_CUBLAS_CHECK(cublasDtrsv(cublas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, int(n),
                                        lu64.data(), int(n), v, 1));
    };
    // The reference: cublasDtrsv on the FP64 factors, every vector.
    copy_b(kColumns);
    for (int c = 0; c < kColumns; ++c) dtrsv_pair(x.data() + c * n);
    const std::vector<double> reference = to_host(x.data(), n * kColumns);
    const double scale = max_abs(reference);
    const auto error_of = [&](int columns) {
      const std::vector<double> got = to_host(x.data(), n * columns);
      double e = 0;
      for (std::size_t i = 0; i < got.size(); ++i) e = std::max(e, std::fabs(got[i] - reference[i]));
      return e / scale;
    };
    const double copy_s = median_seconds(reps, stream, [] {}, [&] {
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(lu64.data(), lu32.data(), std::size_t(triangle_bytes), cudaMemcpyDeviceToDevice,
                                          stream));
    });
    const double copy_bandwidth = 2 * triangle_bytes / copy_s;
    // lu64 now holds a copy of FP32 bytes in its first half: refill it.
    fill_factors<<<1024, 256, 0, stream>>>(lu32.data(), lu64.data(), n);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    std::printf("%7lld %-34s %11s %13.4f %9.0f %9s %10s\n", (long long)n, "device copy (read + write)", "",
                copy_s * 1e3, copy_bandwidth * 1e-9, "", "");
    rows.push_back({{"n", n}, {"solver", "copy"}, {"seconds", copy_s}, {"bandwidth", copy_bandwidth}});
    const auto row = [&](const std::string& name, double pair_s, double factor_bytes, double error, double setup_s) {
      const double triangle_s = pair_s / 2, bandwidth = factor_bytes / triangle_s;
      std::printf("%7lld %-34s %11.4f %13.4f %9.0f %8.0f%% %10.2e\n", (long long)n, name.c_str(), pair_s * 1e3,
                  triangle_s * 1e3, bandwidth * 1e-9, 100 * bandwidth / copy_bandwidth, error);
      nlohmann::json j{{"n", n},           {"solver", name},       {"pair_seconds", pair_s},
                       {"bandwidth", bandwidth}, {"of_copy", bandwidth / copy_bandwidth}, {"error", error}};
      if (setup_s >= 0) j["setup_seconds"] = setup_s;
      rows.push_back(j);
    };
    {  // mixsolve, FP32 factors in FP64 arithmetic
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto t0 = std::chrono::steady_clock::now();
      solvers_detail::TriangularSolver<float, double> solver(lu32.data(), n, n, stream);
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (const int columns : {1, kColumns}) {
        const double s = median_seconds(reps, stream, [&] { copy_b(columns); }, [&] { solver.solve(x.data(), n, columns, stream); });
        row("mixsolve fp32 factors, " + std::to_string(columns) + " vector" + (columns > 1 ? "s" : ""), s, triangle_bytes,
            error_of(columns), setup_s);
      }
    }
    {  // mixsolve, FP64 factors
      solvers_detail::TriangularSolver<double> solver(lu64.data(), n, n, stream);
      const double s = median_seconds(reps, stream, [&] { copy_b(1); }, [&] { solver.solve(x.data(), n, 1, stream); });
      row("mixsolve fp64 factors, 1 vector", s, 2 * triangle_bytes, error_of(1), -1);
    }
    {  // cublasStrsv: FP32 factors and vector
      const double s = median_seconds(
          reps, stream,
          [&] {
            MIXSOLVE_CUDA_CHECK(
                cudaMemcpyAsync(x32.data(), b32.data(), std::size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
          },
          [&] {
            MIXSOLVE_CUBLAS_CHECK(cublasStrsv(cublas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, int(n),
                                              lu32.data(), int(n), x32.data(), 1));
            MIXSOLVE_CUBLAS_CHECK(cublasStrsv(cublas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, int(n),
                                              lu32.data(), int(n), x32.data(), 1));
          });
      std::vector<float> got(std::size_t(n), 0);
      MIXSOLVE_CUDA_CHECK(cudaMemcpy(got.data(), x32.data(), std::size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
      double e = 0;
      for (std::int64_t i = 0; i < n; ++i) e = std::max(e, std::fabs(double(got[i]) - reference[i]));
      row("cublasStrsv (fp32 vector)", s, triangle_bytes, e / scale, -1);
    }
    {  // cublasDtrsv: FP64 factors
      const double s = median_seconds(reps, stream, [&] { copy_b(1); }, [&] { dtrsv_pair(x.data()); });
      row("cublasDtrsv", s, 2 * triangle_bytes, error_of(1), -1);
    }
  }
  out["rows"] = rows;
  bench::write_json(opt, out);
  MIXSOLVE_CUBLAS_CHECK(cublasDestroy(cublas));
  MIXSOLVE_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "triangular_benchmark: %s\n", e.what());
  return 1;
}
