// SPDX-License-Identifier: BSD-3-Clause
// The device backends of the Ozaki scheme with FP32 splits (ozaki-fp32, -halfhalf, -tf32tf32) and
// with BF16 / FP16 slices (ozaki-bf16, ozaki-fp16): the splits against the host's bit for bit,
// the FP32 splits' products against a long double reference beside host-ozaki-fp32's, and the
// slices' products (exact in FP32) against host-ozaki-bf16 / -fp16 bit for bit; the refusals of
// every emulated DGEMM (ozaki2-int8 too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/ozaki_fp32.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/ozaki_slices.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;

// A rows x cols phi(phi) matrix (Nanai & Fujimoto 2021, §5.1), column-major.
std::vector<double> phi_matrix(std::int64_t rows, std::int64_t cols, double phi, std::uint64_t seed) {
  std::vector<double> x(rows * cols);
  fill_random(host_view(x.data(), rows, cols, rows), RandomSpec::phi_spread(phi, seed));
  return x;
}

// max_ij |c_ij - ref_ij| / |ref_ij| over the nonzero entries of the reference.
double max_relative_error(const std::vector<double>& c, const std::vector<long double>& reference) {
  double worst = 0;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (reference[i] != 0) worst = std::max(worst, double(std::fabs((c[i] - reference[i]) / reference[i])));
  return worst;
}

// The split of the rows of A (strided: vectors along the leading dimension) and of its columns
// (contiguous), with rows and columns far outside FP32's range, a zero row and column and a
// subnormal entry: the device's planes and exponents equal the host's bit for bit, 2 to 6 splits.
TEST(GpuOzakiFp32, SplitMatchesTheHostBitForBit) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t rows = 37, cols = 300, ld = 41;
  std::vector<double> a(ld * cols, 0.0);
  const std::vector<double> values = phi_matrix(rows, cols, 1.0, 17);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) a[i + j * ld] = values[i + j * rows];
  for (std::int64_t j = 0; j < cols; ++j) {
    a[0 + j * ld] *= 0x1p+600;
    a[1 + j * ld] *= 0x1p-700;
    a[2 + j * ld] = 0;
  }
  for (std::int64_t i = 0; i < rows; ++i) a[i + 7 * ld] = 0;
  a[3 + 5 * ld] = 0x1p-1070;
  DeviceBuffer<double> da(a.size());
  da.copy_from_host(a);
  struct Layout {
    const char* name;
    std::int64_t vectors, k, vector_stride, element_stride;
  };
  for (const Layout& layout : {Layout{"rows", rows, cols, 1, ld}, Layout{"columns", cols, rows, ld, 1}})
    for (int splits = kOzakiFp32MinSplits; splits <= kOzakiFp32MaxSplits; ++splits) {
      SCOPED_TRACE(std::string(layout.name) + ", " + std::to_string(splits) + " splits");
      const OzakiFp32Operand host =
          ozaki_fp32_split(layout.vectors, layout.k, a.data(), layout.vector_stride, layout.element_stride, splits);
      const OzakiFp32Operand device = ozaki_fp32_split_on_device(ctx, layout.vectors, layout.k, da.data(),
                                                                 layout.vector_stride, layout.element_stride, splits);
      ASSERT_EQ(device.exponent, host.exponent);
      ASSERT_EQ(device.high.size(), host.high.size());
      ASSERT_EQ(device.remainder.size(), host.remainder.size());
      for (std::size_t p = 0; p < host.high.size(); ++p)
        for (std::size_t e = 0; e < host.high[p].size(); ++e)
          ASSERT_EQ(device.high[p][e], host.high[p][e]) << "high part " << p + 1 << ", element " << e;
      for (std::size_t p = 0; p < host.remainder.size(); ++p)
        for (std::size_t e = 0; e < host.remainder[p].size(); ++e)
          ASSERT_EQ(device.remainder[p][e], host.remainder[p][e]) << "remainder " << p + 1 << ", element " << e;
    }
}

// The trend of Nanai & Fujimoto (2021) Table 2 on the GPU (n = 256, op(A) = A^T, alpha and beta): for phi 0.1 and 1
// the maximum relative error against a long double reference falls with every split, for each
// FP32 product backend, and stays within 8x of host-ozaki-fp32's at the same number of splits
// (the summation orders of the inexact products differ).
TEST(GpuOzakiFp32, ErrorsFallWithTheSplitsAsOnTheHost) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  Context host = Context::host_only();
  const std::int64_t n = 256;
  int covered = 0;  // (phi, backend) pairs
  for (const double phi : {0.1, 1.0}) {
    const std::vector<double> a = phi_matrix(n, n, phi, 21), b = phi_matrix(n, n, phi, 22);
    const std::vector<double> c0 = phi_matrix(n, n, 0.1, 23);
    const double alpha = 0.75, beta = -0.5;
    std::vector<long double> reference(n * n);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        long double sum = 0;
        for (std::int64_t l = 0; l < n; ++l) sum += static_cast<long double>(a[l + i * n]) * b[l + j * n];
        reference[i + j * n] = alpha * sum + static_cast<long double>(beta) * c0[i + j * n];
      }
    DeviceBuffer<double> da(a.size()), db(b.size()), dc(c0.size());
    da.copy_from_host(a);
    db.copy_from_host(b);
    const auto problem = [&](const double* pa, const double* pb, double* pc) {
      return Problem{n,
                     n,
                     n,
                     alpha,
                     beta,
                     Operand::dense(Format::F64, Op::T, pa, n),
                     Operand::dense(Format::F64, Op::N, pb, n),
                     Output{Format::F64, pc, n}};
    };
    std::vector<double> host_error(kOzakiFp32MaxSplits + 1);
    for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) {
      std::vector<double> c = c0;
      find_backend("host-ozaki-fp32").run(host, problem(a.data(), b.data(), c.data()), {{"splits", s}});
      host_error[s] = max_relative_error(c, reference);
    }
    std::printf("phi %g, max relative error for s = 2 .. 6\n  %-22s", phi, "host-ozaki-fp32");
    for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) std::printf(" %9.2e", host_error[s]);
    std::printf("\n");
    for (const char* name : {"ozaki-fp32", "ozaki-fp32-halfhalf", "ozaki-fp32-tf32tf32"}) {
      const Backend& backend = find_backend(name);
      if (!mixsolve::testing::backend_runs_here(backend, ctx)) continue;
      ++covered;
      std::printf("  %-22s", name);
      double previous = INFINITY;
      for (int s = kOzakiFp32MinSplits; s <= kOzakiFp32MaxSplits; ++s) {
        dc.copy_from_host(c0);
        backend.run(ctx, problem(da.data(), db.data(), dc.data()), {{"splits", s}});
        const double error = max_relative_error(dc.to_host(ctx.stream()), reference);
        std::printf(" %9.2e", error);
        EXPECT_LT(error, previous) << name << ", phi " << phi << ": " << s << " splits no better than " << s - 1;
        EXPECT_LT(error, 8 * host_error[s]) << name << ", phi " << phi << ", " << s << " splits";
        previous = error;
      }
      std::printf("\n");
    }
  }
  // The plain FP32 backend runs wherever there is a GPU; the corrected ones from sm_80.
  EXPECT_GE(covered, 2);
  if (mixsolve::testing::gpu_tests_required()) EXPECT_EQ(covered, 6);
}

// The slices' products are exact in FP32 (Niimi 2025, eq. (11)) and summed in the host's order, so
// ozaki-bf16 / -fp16 compute host-ozaki-bf16 / -fp16's bits with the fused split: all transposes,
// odd sizes, a leading dimension beyond the rows, alpha and beta, phi 1 and rows near the top and
// the bottom of FP64's range, zero rows and columns; the default slices and 4, every pair and fast
// mode d = 5.
TEST(GpuOzakiSlices, MatchTheFusedHostSplitBitForBit) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  Context host = Context::host_only();
  const std::int64_t m = 37, n = 29, k = 300, pad = 3;
  for (const char* format : {"bf16", "fp16"})
    for (const Op op_a : {Op::N, Op::T})
      for (const Op op_b : {Op::N, Op::T}) {
        const std::int64_t lda = (op_a == Op::N ? m : k) + pad, ldb = (op_b == Op::N ? k : n) + pad, ldc = m + pad;
        std::vector<double> a = phi_matrix(lda, op_a == Op::N ? k : m, 1.0, 31);
        std::vector<double> b = phi_matrix(ldb, op_b == Op::N ? n : k, 1.0, 32);
        const auto a_at = [&](std::int64_t i, std::int64_t l) -> double& {
          return op_a == Op::N ? a[i + l * lda] : a[l + i * lda];
        };
        const auto b_at = [&](std::int64_t l, std::int64_t j) -> double& {
          return op_b == Op::N ? b[l + j * ldb] : b[j + l * ldb];
        };
        for (std::int64_t l = 0; l < k; ++l) {
          a_at(0, l) *= 0x1p+1000;  // sigma would overflow without the per-vector scaling
          a_at(1, l) *= 0x1p-1000;
          a_at(2, l) = 0;
          b_at(l, 3) = 0;
        }
        const std::vector<double> c0 = phi_matrix(ldc, n, 0.1, 33);
        DeviceBuffer<double> da(a.size()), db(b.size()), dc(c0.size());
        da.copy_from_host(a);
        db.copy_from_host(b);
        const auto problem = [&](const double* pa, const double* pb, double* pc) {
          return Problem{m,
                         n,
                         k,
                         -1.5,
                         0.25,
                         Operand::dense(Format::F64, op_a, pa, lda),
                         Operand::dense(Format::F64, op_b, pb, ldb),
                         Output{Format::F64, pc, ldc}};
        };
        for (const std::int64_t slices : {0, 4})
          for (const std::int64_t d : {0, 5}) {
            SCOPED_TRACE(std::string(format) + " op " + to_string(op_a) + to_string(op_b) + ", slices " +
                         std::to_string(slices) + ", d " + std::to_string(d));
            std::vector<double> expected = c0;
            find_backend(std::string("host-ozaki-") + format)
                .run(host, problem(a.data(), b.data(), expected.data()), {{"slices", slices}, {"d", d}, {"fused", 1}});
            dc.copy_from_host(c0);
            find_backend(std::string("ozaki-") + format)
                .run(ctx, problem(da.data(), db.data(), dc.data()), {{"slices", slices}, {"d", d}});
            const std::vector<double> got = dc.to_host(ctx.stream());
            for (std::size_t x = 0; x < got.size(); ++x) ASSERT_EQ(got[x], expected[x]) << "at " << x;
          }
      }
}

// Every emulated DGEMM on the GPU refuses NaN and Inf in A or in B by name (with a count) before
// anything is computed, and the first k beyond its reach in can_implement: the INT32 accumulation
// of ozaki2-int8 (kOzaki2MaxK), the split's grid of 65535 tiles of 64 for the others.
TEST(GpuOzakiSchemes, RefuseNonFiniteInputsAndDeepProducts) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = 16, n = 16, k = 16;
  struct Case {
    const char* name;
    std::int64_t first_refused_k;
  };
  const std::int64_t tiled = std::int64_t{65535} * 64 + 1;
  int covered = 0;
  for (const Case& c :
       {Case{"ozaki2-int8", kOzaki2MaxK + 1}, Case{"ozaki-fp32", tiled}, Case{"ozaki-fp32-halfhalf", tiled},
        Case{"ozaki-fp32-tf32tf32", tiled}, Case{"ozaki-bf16", tiled}, Case{"ozaki-fp16", tiled}}) {
    const Backend& backend = find_backend(c.name);
    if (!mixsolve::testing::backend_runs_here(backend, ctx)) continue;
    ++covered;
    for (const bool in_a : {true, false}) {
      std::vector<double> a(m * k, 1.0), b(k * n, 1.0);
      (in_a ? a[3] : b[7]) = in_a ? std::nan("") : INFINITY;
      DeviceBuffer<double> da(a.size()), db(b.size()), dc(m * n);
      da.copy_from_host(a);
      db.copy_from_host(b);
      const Problem p{m,
                      n,
                      k,
                      1.0,
                      0.0,
                      Operand::dense(Format::F64, Op::N, da.data(), m),
                      Operand::dense(Format::F64, Op::N, db.data(), k),
                      Output{Format::F64, dc.data(), m}};
      try {
        backend.run(ctx, p);
        ADD_FAILURE() << c.name << " accepted " << (in_a ? "NaN in A" : "Inf in B");
      } catch (const RangeError& e) {
        EXPECT_NE(std::string(e.what()).find("holds 1 NaN or Inf"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
      }
    }
    std::vector<double> tiny(1);
    for (const std::int64_t depth : {c.first_refused_k - 1, c.first_refused_k}) {
      const Problem deep{1,
                         1,
                         depth,
                         1.0,
                         0.0,
                         Operand::dense(Format::F64, Op::N, tiny.data(), 1),
                         Operand::dense(Format::F64, Op::N, tiny.data(), depth),
                         Output{Format::F64, tiny.data(), 1}};
      const Support::Status status = backend.can_implement(ctx, deep).status;
      if (depth < c.first_refused_k)
        EXPECT_NE(status, Support::Status::OverSizeLimit) << c.name << ", k " << depth;
      else
        EXPECT_EQ(status, Support::Status::OverSizeLimit) << c.name << ", k " << depth;
    }
  }
  EXPECT_GE(covered, 2);  // ozaki2-int8 and ozaki-fp32 run on any GPU of sm_75 on
  if (mixsolve::testing::gpu_tests_required()) EXPECT_EQ(covered, 6);
}

}  // namespace
