// SPDX-License-Identifier: BSD-3-Clause
// slfp_benchmark: Mukunoki & Imamura (2016) Table 3 on our GPU for the memory-bound kernels of slfp/blas.hpp. For
// every format (fp64, slfp64in56b .. slfp64in16b, fp32, slfp32in24b, slfp32in16b), AXPY and DOT on
// n values on the device: time (median of --reps after a warm-up), GFLOP/s (2n), the bytes they
// move (AXPY reads x and y and writes y, DOT reads x and y) per second, that over the device copy
// bandwidth measured in the same run (cudaMemcpy device to device of n doubles: 16n bytes moved),
// the speedup over cublasDaxpy / cublasDdot (FP64-based formats) or cublasSaxpy / cublasSdot
// (FP32-based) in the same run, and the board's power from NVML's energy counter while the kernel
// repeats for --power-seconds (GFLOP/s per W). Prints a table and writes JSON (--json FILE).
//
//   slfp_benchmark [--n 268435456] [--formats all|fp64,slfp64in32b,...] [--rounding rn|rz]
//                  [--reps 10] [--power-seconds 1] [--gemv-shape 16777216x16] [--gemm-n 8192]
//                  [--host-n 67108864] [--json out.json]
//
// --gemv-shape: GEMV with A stored in each format against cublasDgemv (0x0: none); --gemm-n: the
// n x n x n GEMM with A and B stored in each format (slfp::gemm) against cublasDgemm / cublasSgemm
// (0: none); --host-n: the host (OpenMP) kernels on that many values as well (0: none).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/slfp/blas.hpp"

using namespace mixsolve;

namespace {

// NVML through dlopen (the driver's libnvidia-ml.so.1; no NVML headers at build time): the total
// energy counter of device 0 in mJ (Volta and later). Absent NVML: no power column.
class EnergyCounter {
 public:
  EnergyCounter() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!handle_) return;
    using Init = int (*)();
    using GetHandle = int (*)(unsigned, void**);
    const auto init = reinterpret_cast<Init>(dlsym(handle_, "nvmlInit_v2"));
    const auto get = reinterpret_cast<GetHandle>(dlsym(handle_, "nvmlDeviceGetHandleByIndex_v2"));
    energy_ = reinterpret_cast<Energy>(dlsym(handle_, "nvmlDeviceGetTotalEnergyConsumption"));
    int device = 0;
    cudaGetDevice(&device);
    if (!init || !get || !energy_ || init() != 0 || get(unsigned(device), &device_) != 0) energy_ = nullptr;
  }
  bool available() const { return energy_ != nullptr; }
  // Millijoules since the driver loaded.
  unsigned long long millijoules() const {
    unsigned long long mj = 0;
    if (energy_) energy_(device_, &mj);
    return mj;
  }

 private:
  using Energy = int (*)(void*, unsigned long long*);
  void* handle_ = nullptr;
  void* device_ = nullptr;
  Energy energy_ = nullptr;
};

// Median seconds of `run` over `reps` runs after one warm-up (gemm::median_seconds: CUDA events
// on ctx's stream for device work, the steady clock for host work).
double timed(Context& ctx, Memory memory, int reps, const std::function<void()>& run) {
  run();
  return gemm::median_seconds(ctx, memory, reps, run);
}

// Average board power (W) while `run` repeats for at least `seconds`; 0 without NVML.
double average_watts(const EnergyCounter& energy, cudaStream_t stream, double seconds,
                     const std::function<void()>& run) {
  if (!energy.available() || seconds <= 0) return 0;
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned long long e0 = energy.millijoules();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 10; ++i) run();
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return double(energy.millijoules() - e0) * 1e-3 / elapsed;
}

__global__ void fill_kernel(std::int64_t n, std::uint64_t seed, double* d, float* f) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t h = (std::uint64_t(i) + seed) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const double v = double(h >> 11) * 0x1p-53 * 2 - 1;  // uniform in [-1, 1)
    d[i] = v;
    f[i] = float(v);
  }
}

// Threads an OpenMP parallel region gets.
int omp_threads() { return omp_get_max_threads(); }

}  // namespace

int main(int argc, char** argv) try {
  const bench::Options opt(argc, argv);
  if (!gpu_available()) {
    std::printf("slfp_benchmark: no CUDA GPU present; nothing to measure\n");
    return 0;
  }
  const std::int64_t n = opt.sizes("n", "268435456").front();
  const int reps = std::stoi(opt.get("reps", "10"));
  const double power_seconds = std::stod(opt.get("power-seconds", "1"));
  const std::string rounding_name = opt.get("rounding", "rn");
  if (rounding_name != "rn" && rounding_name != "rz")
    throw InvalidArgument("--rounding: \"" + rounding_name + "\" is neither rn nor rz");
  const formats::Rounding rounding =
      rounding_name == "rn" ? formats::Rounding::NearestEven : formats::Rounding::TowardZero;
  std::vector<slfp::Format> formats;
  const std::vector<std::string> names = opt.list("formats", "all");
  if (names.size() == 1 && names[0] == "all")
    formats = slfp::all_formats();
  else
    for (const std::string& s : names) formats.push_back(slfp::parse_format(s));

  Context ctx;
  cudaStream_t stream = ctx.stream();
  cublasHandle_t h = ctx.cublas();
  const EnergyCounter energy;
  nlohmann::json out = bench::device_json();
  out["n"] = n;
  out["rounding"] = rounding_name;
  std::printf("GPU: %s, CUDA driver %s, cuBLAS %s; %s\n", out["gpu"].get<std::string>().c_str(),
              out.value("cuda_driver", "").c_str(), out.value("cublas", "").c_str(),
              out["date"].get<std::string>().c_str());

  DeviceBuffer<double> src64(n), x64(n), y64(n);
  DeviceBuffer<float> src32(n), x32(n), y32(n);
  fill_kernel<<<4096, 256, 0, stream>>>(n, 1, src64.data(), src32.data());
  fill_kernel<<<4096, 256, 0, stream>>>(n, 2, x64.data(), x32.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();

  // The device's copy bandwidth: n doubles copied, 16 n bytes moved.
  const double copy_s = timed(ctx, Memory::Device, reps, [&] {
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(y64.data(), x64.data(), n * sizeof(double), cudaMemcpyDeviceToDevice, stream));
  });
  const double copy_gbs = 16.0 * double(n) / copy_s * 1e-9;
  std::printf("\ndevice copy (cudaMemcpy, %lld doubles): %.1f GB/s read + write\n", (long long)n, copy_gbs);
  out["copy_gb_per_s"] = copy_gbs;

  // cuBLAS baselines.
  const double alpha64 = 0.5;
  const float alpha32 = 0.5f;
  struct Baseline {
    double axpy_s, dot_s, axpy_w, dot_w;
  };
  Baseline base64{}, base32{};
  double sink = 0;
  float sink32 = 0;
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(y64.data(), src64.data(), n * sizeof(double), cudaMemcpyDeviceToDevice, stream));
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(y32.data(), src32.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  const auto daxpy = [&] { cublasDaxpy(h, int(n), &alpha64, x64.data(), 1, y64.data(), 1); };
  const auto saxpy = [&] { cublasSaxpy(h, int(n), &alpha32, x32.data(), 1, y32.data(), 1); };
  const auto ddot = [&] { cublasDdot(h, int(n), x64.data(), 1, y64.data(), 1, &sink); };
  const auto sdot = [&] { cublasSdot(h, int(n), x32.data(), 1, y32.data(), 1, &sink32); };
  if (n > INT32_MAX) throw InvalidArgument("--n: cuBLAS's int interface takes at most 2^31 - 1 values");
  base64 = {timed(ctx, Memory::Device, reps, daxpy), timed(ctx, Memory::Device, reps, ddot),
            average_watts(energy, stream, power_seconds, daxpy), average_watts(energy, stream, power_seconds, ddot)};
  base32 = {timed(ctx, Memory::Device, reps, saxpy), timed(ctx, Memory::Device, reps, sdot),
            average_watts(energy, stream, power_seconds, saxpy), average_watts(energy, stream, power_seconds, sdot)};

  std::printf(
      "\nAXPY and DOT on %lld values, median of %d; GB/s = bytes moved / time, %% of the copy bandwidth; "
      "x blas = cuBLAS time / time (D for FP64-based, S for FP32-based); W = board power (NVML energy)\n",
      (long long)n, reps);
  std::printf("%-16s %5s | %8s %8s %7s %7s %6s %9s | %8s %8s %7s %7s %6s\n", "format", "bits", "AXPY GF/s", "GB/s",
              "% copy", "x blas", "W", "GF/s/W", "DOT GF/s", "GB/s", "% copy", "x blas", "W");
  const auto row = [&](const std::string& name, int bits, double axpy_s, double dot_s, double axpy_w, double dot_w,
                       const Baseline& base) {
    const double bytes = double(bits) / 8 * double(n);
    const double axpy_gf = 2.0 * double(n) / axpy_s * 1e-9, dot_gf = 2.0 * double(n) / dot_s * 1e-9;
    const double axpy_gbs = 3 * bytes / axpy_s * 1e-9, dot_gbs = 2 * bytes / dot_s * 1e-9;
    std::printf("%-16s %5d | %8.1f %8.1f %6.1f%% %7.2f %6.0f %9.2f | %8.1f %8.1f %6.1f%% %7.2f %6.0f\n", name.c_str(),
                bits, axpy_gf, axpy_gbs, 100 * axpy_gbs / copy_gbs, base.axpy_s / axpy_s, axpy_w,
                axpy_w > 0 ? axpy_gf / axpy_w : 0.0, dot_gf, dot_gbs, 100 * dot_gbs / copy_gbs, base.dot_s / dot_s,
                dot_w);
    out["rows"].push_back({{"format", name},
                           {"bits", bits},
                           {"axpy_seconds", axpy_s},
                           {"axpy_gflops", axpy_gf},
                           {"axpy_gb_per_s", axpy_gbs},
                           {"axpy_fraction_of_copy", axpy_gbs / copy_gbs},
                           {"axpy_speedup_vs_cublas", base.axpy_s / axpy_s},
                           {"axpy_watts", axpy_w},
                           {"dot_seconds", dot_s},
                           {"dot_gflops", dot_gf},
                           {"dot_gb_per_s", dot_gbs},
                           {"dot_fraction_of_copy", dot_gbs / copy_gbs},
                           {"dot_speedup_vs_cublas", base.dot_s / dot_s},
                           {"dot_watts", dot_w}});
  };
  row("cublas-d", 64, base64.axpy_s, base64.dot_s, base64.axpy_w, base64.dot_w, base64);
  row("cublas-s", 32, base32.axpy_s, base32.dot_s, base32.axpy_w, base32.dot_w, base32);
  for (const slfp::Format f : formats) {
    slfp::Storage xs(f, n, Memory::Device), ys(f, n, Memory::Device);
    if (slfp::fp64_based(f)) {
      slfp::encode(ctx, x64.data(), xs.view(), rounding);
      slfp::encode(ctx, src64.data(), ys.view(), rounding);
    } else {
      slfp::encode(ctx, x32.data(), xs.view(), rounding);
      slfp::encode(ctx, src32.data(), ys.view(), rounding);
    }
    // y grows by 0.5 x per run: over the runs |y| stays within a few units, far from any overflow.
    const auto axpy = [&] { slfp::axpy(ctx, 0.5, xs.view(), ys.view(), rounding); };
    const auto dot = [&] { sink = slfp::dot(ctx, xs.view(), ys.view()); };
    const double axpy_s = timed(ctx, Memory::Device, reps, axpy), dot_s = timed(ctx, Memory::Device, reps, dot);
    const double axpy_w = average_watts(energy, stream, power_seconds, axpy);
    const double dot_w = average_watts(energy, stream, power_seconds, dot);
    row(slfp::to_string(f), slfp::container_bits(f), axpy_s, dot_s, axpy_w, dot_w,
        slfp::fp64_based(f) ? base64 : base32);
  }
  // GEMV with A stored in each format (x, y FP64), both transposes, against cublasDgemv (every
  // format: the refinement's products are FP64), on a tall --gemv-shape rows x cols A (a Krylov
  // basis' shape): bytes moved = A's.
  const std::vector<std::string> gemv_shape = opt.list("gemv-shape", "16777216x16");
  std::int64_t gemv_rows = 0, gemv_cols = 0;
  if (gemv_shape.size() != 1 || std::sscanf(gemv_shape[0].c_str(), "%ldx%ld", &gemv_rows, &gemv_cols) != 2 ||
      gemv_rows < 0 || gemv_cols < 0)
    throw InvalidArgument("--gemv-shape: \"" + opt.get("gemv-shape", "") + "\" is not ROWSxCOLS");
  if (gemv_rows > 0 && gemv_cols > 0) {
    const std::int64_t elements = gemv_rows * gemv_cols;
    DeviceBuffer<double> a64(elements), gx(std::max(gemv_rows, gemv_cols)), gy(std::max(gemv_rows, gemv_cols));
    fill_kernel<<<4096, 256, 0, stream>>>(elements, 3, a64.data(), x32.data());
    fill_kernel<<<4096, 256, 0, stream>>>(std::max(gemv_rows, gemv_cols), 4, gx.data(), y32.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const double one = 1, zero = 0;
    const double dgemv_n = timed(ctx, Memory::Device, reps, [&] {
      cublasDgemv(h, CUBLAS_OP_N, int(gemv_rows), int(gemv_cols), &one, a64.data(), int(gemv_rows), gx.data(), 1, &zero,
                  gy.data(), 1);
    });
    const double dgemv_t = timed(ctx, Memory::Device, reps, [&] {
      cublasDgemv(h, CUBLAS_OP_T, int(gemv_rows), int(gemv_cols), &one, a64.data(), int(gemv_rows), gx.data(), 1, &zero,
                  gy.data(), 1);
    });
    std::printf(
        "\nGEMV, A %lld x %lld stored in each format, x and y FP64, median of %d; GB/s = A's bytes / time, x "
        "dgemv = cublasDgemv's time (A in FP64) / time\n",
        (long long)gemv_rows, (long long)gemv_cols, reps);
    std::printf("%-16s %5s | %8s %7s %7s | %8s %7s %7s\n", "format", "bits", "N GB/s", "% copy", "x dgemv", "T GB/s",
                "% copy", "x dgemv");
    const auto gemv_row = [&](const std::string& name, int bits, double n_s, double t_s) {
      const double bytes = double(bits) / 8 * double(elements);
      std::printf("%-16s %5d | %8.1f %6.1f%% %7.2f | %8.1f %6.1f%% %7.2f\n", name.c_str(), bits, bytes / n_s * 1e-9,
                  100 * bytes / n_s * 1e-9 / copy_gbs, dgemv_n / n_s, bytes / t_s * 1e-9,
                  100 * bytes / t_s * 1e-9 / copy_gbs, dgemv_t / t_s);
      out["gemv_rows"].push_back({{"format", name},
                                  {"bits", bits},
                                  {"n_seconds", n_s},
                                  {"t_seconds", t_s},
                                  {"n_speedup_vs_dgemv", dgemv_n / n_s},
                                  {"t_speedup_vs_dgemv", dgemv_t / t_s}});
    };
    gemv_row("cublas-dgemv", 64, dgemv_n, dgemv_t);
    for (const slfp::Format f : formats) {
      slfp::Storage as(f, elements, Memory::Device);
      if (slfp::fp64_based(f)) {
        slfp::encode(ctx, a64.data(), as.view(), rounding);
      } else {
        DeviceBuffer<float> a32(elements);
        fill_kernel<<<4096, 256, 0, stream>>>(elements, 3, a64.data(), a32.data());
        slfp::encode(ctx, a32.data(), as.view(), rounding);
        MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      const slfp::Matrix a{as.view(), gemv_rows, gemv_cols, gemv_rows};
      const double n_s = timed(ctx, Memory::Device, reps,
                               [&] { slfp::gemv(ctx, slfp::Transpose::No, 1.0, a, gx.data(), 0.0, gy.data()); });
      const double t_s = timed(ctx, Memory::Device, reps,
                               [&] { slfp::gemv(ctx, slfp::Transpose::Yes, 1.0, a, gx.data(), 0.0, gy.data()); });
      gemv_row(slfp::to_string(f), slfp::container_bits(f), n_s, t_s);
    }
  }

  // GEMM (Mukunoki & Imamura 2016, Table 3, its GEMM columns): C := A B, n x n x n, A and B stored in each format
  // (slfp::gemm: widened a panel at a time, FP64 or FP32 arithmetic), C in the base type, against
  // cublasDgemm (FP64-based formats) or cublasSgemm without TF32 (FP32-based) on the base type's
  // A and B.
  const std::int64_t gemm_n = std::stoll(opt.get("gemm-n", "8192"));
  if (gemm_n > 0) {
    const std::int64_t elements = gemm_n * gemm_n;
    const double flops = 2.0 * double(gemm_n) * double(gemm_n) * double(gemm_n);
    DeviceBuffer<double> a64(elements), b64(elements), c64(elements);
    DeviceBuffer<float> a32(elements), b32(elements), c32(elements);
    fill_kernel<<<4096, 256, 0, stream>>>(elements, 5, a64.data(), a32.data());
    fill_kernel<<<4096, 256, 0, stream>>>(elements, 6, b64.data(), b32.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const double one = 1, zero = 0;
    const float one32 = 1, zero32 = 0;
    const int nn = int(gemm_n);
    const auto dgemm = [&] {
      cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, nn, nn, nn, &one, a64.data(), nn, b64.data(), nn, &zero, c64.data(), nn);
    };
    const auto sgemm = [&] {
      cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, nn, nn, nn, &one32, a32.data(), nn, b32.data(), nn, &zero32, c32.data(),
                  nn);
      cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    };
    const int gemm_reps = std::max(3, reps / 2);
    const double dgemm_s = timed(ctx, Memory::Device, gemm_reps, dgemm);
    const double dgemm_w = average_watts(energy, stream, power_seconds, dgemm);
    const double sgemm_s = timed(ctx, Memory::Device, gemm_reps, sgemm);
    const double sgemm_w = average_watts(energy, stream, power_seconds, sgemm);
    std::printf(
        "\nGEMM %lld x %lld x %lld, A and B stored in each format, C in the base type, median of %d; x blas = "
        "cublasDgemm's (FP64-based) or cublasSgemm's (FP32-based, no TF32) time / time; W = board power\n",
        (long long)gemm_n, (long long)gemm_n, (long long)gemm_n, gemm_reps);
    std::printf("%-16s %5s | %9s %7s %6s %9s\n", "format", "bits", "GFLOP/s", "x blas", "W", "GF/s/W");
    const auto gemm_row = [&](const std::string& name, int bits, double sec, double watts, double base_s) {
      const double gf = flops / sec * 1e-9;
      std::printf("%-16s %5d | %9.1f %7.2f %6.0f %9.2f\n", name.c_str(), bits, gf, base_s / sec, watts,
                  watts > 0 ? gf / watts : 0.0);
      out["gemm_rows"].push_back({{"format", name},
                                  {"bits", bits},
                                  {"seconds", sec},
                                  {"gflops", gf},
                                  {"speedup_vs_cublas", base_s / sec},
                                  {"watts", watts}});
    };
    gemm_row("cublas-dgemm", 64, dgemm_s, dgemm_w, dgemm_s);
    gemm_row("cublas-sgemm", 32, sgemm_s, sgemm_w, sgemm_s);
    for (const slfp::Format f : formats) {
      slfp::Storage as(f, elements, Memory::Device), bs(f, elements, Memory::Device);
      const bool wide = slfp::fp64_based(f);
      if (wide) {
        slfp::encode(ctx, a64.data(), as.view(), rounding);
        slfp::encode(ctx, b64.data(), bs.view(), rounding);
      } else {
        slfp::encode(ctx, a32.data(), as.view(), rounding);
        slfp::encode(ctx, b32.data(), bs.view(), rounding);
      }
      const slfp::Matrix a{as.view(), gemm_n, gemm_n, gemm_n}, b{bs.view(), gemm_n, gemm_n, gemm_n};
      const auto product = [&] {
        if (wide)
          slfp::gemm(ctx, slfp::Transpose::No, slfp::Transpose::No, 1.0, a, b, 0.0, c64.data(), gemm_n);
        else
          slfp::gemm(ctx, slfp::Transpose::No, slfp::Transpose::No, 1.0f, a, b, 0.0f, c32.data(), gemm_n);
      };
      const double sec = timed(ctx, Memory::Device, gemm_reps, product);
      gemm_row(slfp::to_string(f), slfp::container_bits(f), sec, average_watts(energy, stream, power_seconds, product),
               wide ? dgemm_s : sgemm_s);
    }
    out["gemm_n"] = gemm_n;
  }

  // The host kernels (OpenMP), Mukunoki & Imamura (2016) Table 3 (a): the same per-format AXPY and DOT on
  // --host-n values in host memory, against the fp64 format's own loop (no CPU BLAS here).
  const std::int64_t host_n = std::stoll(opt.get("host-n", "67108864"));
  if (host_n > 0) {
    Context host = Context::host_only();
    std::vector<double> h64(host_n);
    std::vector<float> h32(host_n);
    for (std::int64_t i = 0; i < host_n; ++i) h32[i] = float(h64[i] = double((i * 7919) % 2001 - 1000) * 1e-3);
    const auto host_seconds = [&](const std::function<void()>& run) { return timed(host, Memory::Host, reps, run); };
    std::printf(
        "\nhost (OpenMP, %d threads) AXPY and DOT on %lld values, median of %d; x fp64 = the fp64 format's "
        "time / time\n",
        omp_threads(), (long long)host_n, reps);
    std::printf("%-16s %5s | %8s %8s %7s | %8s %8s %7s\n", "format", "bits", "AXPY GF/s", "GB/s", "x fp64", "DOT GF/s",
                "GB/s", "x fp64");
    double axpy64 = 0, dot64 = 0, axpy32 = 0, dot32 = 0;
    for (const slfp::Format f : formats) {
      slfp::Storage xs(f, host_n, Memory::Host), ys(f, host_n, Memory::Host);
      if (slfp::fp64_based(f)) {
        slfp::encode(host, h64.data(), xs.view(), rounding);
        slfp::encode(host, h64.data(), ys.view(), rounding);
      } else {
        slfp::encode(host, h32.data(), xs.view(), rounding);
        slfp::encode(host, h32.data(), ys.view(), rounding);
      }
      const double axpy_s = host_seconds([&] { slfp::axpy(host, 0.5, xs.view(), ys.view(), rounding); });
      const double dot_s = host_seconds([&] { sink = slfp::dot(host, xs.view(), ys.view()); });
      if (f == slfp::Format::Fp64) axpy64 = axpy_s, dot64 = dot_s;
      if (f == slfp::Format::Fp32) axpy32 = axpy_s, dot32 = dot_s;
      const double base_axpy = slfp::fp64_based(f) ? axpy64 : axpy32, base_dot = slfp::fp64_based(f) ? dot64 : dot32;
      const double bytes = double(slfp::container_bits(f)) / 8 * double(host_n);
      std::printf("%-16s %5d | %8.2f %8.1f %7.2f | %8.2f %8.1f %7.2f\n", slfp::to_string(f), slfp::container_bits(f),
                  2.0 * double(host_n) / axpy_s * 1e-9, 3 * bytes / axpy_s * 1e-9,
                  base_axpy > 0 ? base_axpy / axpy_s : 0.0, 2.0 * double(host_n) / dot_s * 1e-9,
                  2 * bytes / dot_s * 1e-9, base_dot > 0 ? base_dot / dot_s : 0.0);
      out["host_rows"].push_back({{"format", slfp::to_string(f)},
                                  {"axpy_seconds", axpy_s},
                                  {"dot_seconds", dot_s},
                                  {"axpy_gb_per_s", 3 * bytes / axpy_s * 1e-9},
                                  {"dot_gb_per_s", 2 * bytes / dot_s * 1e-9}});
    }
    out["host_n"] = host_n;
    out["host_threads"] = omp_threads();
  }
  bench::write_json(opt, out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "slfp_benchmark: %s\n", e.what());
  return 1;
}
