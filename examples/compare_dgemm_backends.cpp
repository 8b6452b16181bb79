// SPDX-License-Identifier: BSD-3-Clause
// Compare the FP64 GEMM emulations on Nanai & Fujimoto's (2021) phi inputs: the maximum relative error (Nanai &
// Fujimoto 2021, eq. (21)) and the time of each setting, against the product computed in twice the working precision
// (compensated dot products, Ogita, Rump and Oishi's Dot2). Three tables:
//   - Nanai & Fujimoto (2021) Table 2: FP32 splits s = 2..6 (s(s+1)/2 FP32 products: on a GPU ozaki-fp32 with
//     cuBLAS SGEMM, halfhalf and tf32tf32 products, host-ozaki-fp32 without one);
//   - Niimi's (2025) d table: BF16 slices with fast mode d (the slice pairs p + q < d: on a GPU
//     ozaki-bf16 with its default slices, host-ozaki-bf16 with 8 slices without one);
//   - INT8 moduli (ozaki2-int8 on a GPU, host-ozaki2-int8 without one), with cuBLAS DGEMM,
//     cuBLAS's own emulation and dgemm-auto on a GPU.
// With --csv FILE the rows go to a CSV for plot_dgemm_accuracy.py.
//
//   compare_dgemm_backends [--n 256] [--phis 0.1,1,2] [--reps 1] [--csv results.csv]
//
// Defaults: n = 256 on the host, 4096 on a GPU (without a GPU, FP32 splits and BF16 slices run at
// n <= 512 only).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "example_options.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/gpu.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/evaluation.hpp"
#include "mixsolve/gemm/ozaki_slices.hpp"
#include "mixsolve/gemm/registry.hpp"

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve_examples::option;
using mixsolve_examples::split_list;

namespace {

// sum_l a[l] b[l] in twice the working precision (Dot2): error-free products (FMA) and sums.
double dot2(const double* a, std::int64_t a_stride, const double* b, std::int64_t k) {
  double s = 0, c = 0;
  for (std::int64_t l = 0; l < k; ++l) {
    const double p = a[l * a_stride] * b[l];
    const double p_error = std::fma(a[l * a_stride], b[l], -p);
    const double t = s + p;
    const double z = t - s;
    c += ((s - (t - z)) + (p - z)) + p_error;
    s = t;
  }
  return s + c;
}

struct Row {
  std::string table, backend;
  double phi, products, seconds, max_relative_error;
};

}  // namespace

int main(int argc, char** argv) try {
  const bool gpu = gpu_available();
  Context host = Context::host_only();
  Context device = gpu ? Context() : Context::host_only();
  const std::int64_t n = std::stoll(option(argc, argv, "n", gpu ? "4096" : "256"));
  const int reps = std::stoi(option(argc, argv, "reps", "1"));
  std::vector<double> phis;
  for (const std::string& p : split_list(option(argc, argv, "phis", "0.1,1,2"))) phis.push_back(std::stod(p));
  const bool host_schemes = n <= 512;
  std::printf(
      "compare_dgemm_backends on %s: C = A B, n = %lld, Nanai & Fujimoto's (2021) phi inputs; max relative error "
      "against Dot2 (twice FP64)\n",
      gpu ? device_info().name.c_str() : "the host (no GPU)", static_cast<long long>(n));

  // table, backend call, GEMMs of the scheme (its cost in lower-precision products)
  struct Setting {
    std::string table, call;
    double products;
  };
  std::vector<Setting> settings;
  const std::vector<std::string> fp32_splits =
      gpu ? std::vector<std::string>{"ozaki-fp32", "ozaki-fp32-halfhalf", "ozaki-fp32-tf32tf32"}
          : std::vector<std::string>{"host-ozaki-fp32"};
  if (gpu || host_schemes)
    for (const std::string& backend : fp32_splits)
      for (int s = 2; s <= 6; ++s)
        settings.push_back({"FP32 splits (Nanai & Fujimoto 2021, Table 2)", backend + ":splits=" + std::to_string(s),
                            s * (s + 1) / 2.0});
  if (gpu) {  // the slices' default count at k = n (53 bits and one slice more), pairs p + q < d
    const int bits = ozaki_slice_bits(8, n), slices = std::min(kOzakiMaxSlices, (53 + bits - 1) / bits + 1);
    for (int d = 5; d <= slices + 1; ++d) {
      int pairs = 0;
      for (int p = 0; p < slices; ++p)
        for (int q = 0; q < slices; ++q) pairs += p + q < d;
      settings.push_back({"BF16 slices, fast mode d (Niimi 2025)", "ozaki-bf16:d=" + std::to_string(d), double(pairs)});
    }
  } else if (host_schemes) {
    for (int d = 4; d <= 8; ++d)  // pairs (i, j) of 8 slices with i + j <= d + 1
      settings.push_back({"BF16 slices, fast mode d (Niimi 2025)", "host-ozaki-bf16:slices=8,d=" + std::to_string(d),
                          d * (d + 1) / 2.0});
  }
  const std::string int8 = gpu ? "ozaki2-int8" : "host-ozaki2-int8";
  for (const int moduli : {8, 10, 12, 14, 15, 16, 18, 20})
    settings.push_back({"INT8 moduli (Ozaki scheme II)", int8 + ":moduli=" + std::to_string(moduli), double(moduli)});
  settings.push_back({"FP64", gpu ? "cublas-dgemm" : "host-fp64", 1});
  if (gpu) {
    settings.push_back({"FP64", "cublas-dgemm-emulated", 0});
    settings.push_back({"FP64", "dgemm-auto", 0});
  }

  std::vector<Row> rows;
  for (const double phi : phis) {
    std::vector<double> a(n * n), b(n * n), c(n * n), reference(n * n);
    fill_random(host_view(a.data(), n, n, n), RandomSpec::phi_spread(phi, 1));
    fill_random(host_view(b.data(), n, n, n), RandomSpec::phi_spread(phi, 2));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) reference[i + j * n] = dot2(a.data() + i, n, b.data() + j * n, n);
    DeviceBuffer<double> da, db, dc;
    if (gpu) {
      da = DeviceBuffer<double>(a.size());
      db = DeviceBuffer<double>(b.size());
      dc = DeviceBuffer<double>(c.size());
      da.copy_from_host(a);
      db.copy_from_host(b);
    }
    for (const Setting& setting : settings) {
      const BackendCall call = find_backend_call(setting.call);
      const bool on_device = call.backend->memory() == Memory::Device;
      Context& ctx = on_device ? device : host;
      const Problem problem{n,
                            n,
                            n,
                            1.0,
                            0.0,
                            Operand::dense(Format::F64, Op::N, on_device ? da.data() : a.data(), n),
                            Operand::dense(Format::F64, Op::N, on_device ? db.data() : b.data(), n),
                            Output{Format::F64, on_device ? dc.data() : c.data(), n}};
      const auto run = [&] { call.backend->run(ctx, problem, call.parameters); };
      run();  // warm-up
      ctx.synchronize();
      const double seconds = median_seconds(ctx, call.backend->memory(), reps, [&] {
        run();
        ctx.synchronize();
      });
      if (on_device) dc.copy_to_host(c.data(), c.size());
      double worst = 0;
      for (std::size_t e = 0; e < c.size(); ++e)
        if (reference[e] != 0) worst = std::max(worst, std::fabs(c[e] - reference[e]) / std::fabs(reference[e]));
      rows.push_back({setting.table, setting.call, phi, setting.products, seconds, worst});
    }
  }

  std::string table;
  for (const Row& row : rows) {
    if (row.table != table) {
      table = row.table;
      std::printf("\n%s\n  %-34s %5s %9s %11s %14s\n", table.c_str(), "backend", "phi", "products", "seconds",
                  "max rel err");
    }
    char products[16] = "-";
    if (row.products > 0) std::snprintf(products, sizeof products, "%g", row.products);
    std::printf("  %-34s %5g %9s %11.3e %14.3e\n", row.backend.c_str(), row.phi, products, row.seconds,
                row.max_relative_error);
  }
  const std::string csv = option(argc, argv, "csv", "");
  if (!csv.empty()) {
    std::ofstream out(csv);
    out << "table,backend,n,phi,products,seconds,max_relative_error\n";
    for (const Row& row : rows)
      out << '"' << row.table << "\",\"" << row.backend << "\"," << n << ',' << row.phi << ',' << row.products << ','
          << row.seconds << ',' << row.max_relative_error << '\n';
    std::printf("\nwrote %s (plot with examples/plot_dgemm_accuracy.py %s out.png)\n", csv.c_str(), csv.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "compare_dgemm_backends: %s\n", e.what());
  return 1;
}
