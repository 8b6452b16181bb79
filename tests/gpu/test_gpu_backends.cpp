// SPDX-License-Identifier: BSD-3-Clause
// Every device backend against the host FP64 reference: all transposes, odd sizes, alpha/beta,
// leading dimensions > rows, fresh seeds, poisoned outputs; range handling; NaN/Inf propagation.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/corrected/skinny_route.hpp"
#include "cuda/corrected/split_k.hpp"
#include "gemm_test_support.hpp"
#include "gpu_test_support.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/norms.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/dgemm_auto.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace {

using namespace mixsolve;
using mixsolve::testing::small_gpu_tests;
using namespace mixsolve::gemm;
using mixsolve::testing::HostMatrix;

// (input representation, accumulation) unit roundoffs of each device backend; see
// inner_product_bound. Tensor cores accumulate with RZ, so 2^-23.
std::pair<double, double> unit_roundoffs(const std::string& name) {
  if (name == "cublas-sgemm") return {0, 0x1p-24};
  if (name == "cublas-tf32" || name == "cublas-fp16") return {0x1p-11, 0x1p-23};
  if (name == "cublas-bf16") return {0x1p-8, 0x1p-23};
  // hi + lo keeps 22 bits (lo rounded; the operands are scaled so that lo stays normal), and the
  // omitted lo x lo product is below 2^-22 |a||b|.
  if (name == "cublas-fp16x3") return {0x1p-22, 0x1p-23};
  // SLFP storage, RN: 16 and 8 significant bits; FP32 arithmetic rounded to nearest.
  if (name == "slfp-32in24b") return {0x1p-16, 0x1p-24};
  if (name == "slfp-32in16b") return {0x1p-8, 0x1p-24};
  return {0x1p-23, 0x1p-23};  // halfhalf, tf32tf32, markidis: one bit of 24 lost by the split
}

struct DeviceProblem {
  HostMatrix<float> a, b, c0;
  DeviceBuffer<float> da, db, dc;
  DeviceProblem(Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t pad,
                const RandomSpec& sa, const RandomSpec& sb, bool random_c)
      : a(op_a == Op::N ? m : k, op_a == Op::N ? k : m, (op_a == Op::N ? m : k) + pad),
        b(op_b == Op::N ? k : n, op_b == Op::N ? n : k, (op_b == Op::N ? k : n) + pad),
        c0(m, n, m + pad),
        da(a.data.size()),
        db(b.data.size()),
        dc(c0.data.size()) {
    fill_random(a.view(), sa);
    fill_random(b.view(), sb);
    if (random_c)
      fill_random(c0.view(), RandomSpec::uniform(-1, 1, sa.seed + 77));
    else
      fill_constant(c0.view(), NAN);  // poison: every entry must be written
    da.copy_from_host(a.data);
    db.copy_from_host(b.data);
    dc.copy_from_host(c0.data);
  }
  HostMatrix<float> run(Context& ctx, const Backend& be, Op op_a, Op op_b, std::int64_t m, std::int64_t n,
                        std::int64_t k, float alpha, float beta) {
    GemmArgs<float> g{op_a, op_b, m, n, k, alpha, da.data(), a.ld, db.data(), b.ld, beta, dc.data(), c0.ld};
    be.run(ctx, g);
    ctx.synchronize();
    HostMatrix<float> c = c0;
    dc.copy_to_host(c.data.data(), c.data.size());
    return c;
  }
};

// The reference of alpha P + beta C0 from that of a product P alone (alpha 1, beta 0).
mixsolve::testing::Reference scaled_update(mixsolve::testing::Reference r, double alpha, double beta,
                                           const HostMatrix<float>& c0) {
  r.value *= alpha;
  r.magnitude *= std::fabs(alpha);
  for (Eigen::Index j = 0; j < r.value.cols(); ++j)
    for (Eigen::Index i = 0; i < r.value.rows(); ++i) {
      r.value(i, j) += beta * c0(i, j);
      r.magnitude(i, j) += std::fabs(beta * c0(i, j));
    }
  return r;
}

// The device FP32 backends, each checked to run here (mixsolve::testing::backends_of); at least
// cuBLAS's five, the corrected ones and the SLFP-stored ones.
std::vector<const Backend*> device_f32_backends(const Context& ctx) {
  std::vector<const Backend*> out = mixsolve::testing::backends_of(ctx, Memory::Device, DataType::F32);
  EXPECT_GE(out.size(), 8u) << "device FP32 backends that run here";
  return out;
}

TEST(GpuBackends, EveryFp32BackendMatchesFp64ReferenceOnAllTransposesAndOddSizes) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  struct Shape {
    std::int64_t m, n, k;
  };
  // Small (small_gpu_tests): k over several tiles, m and n off the tiles, without the long shapes.
  const std::vector<Shape> shapes =
      !small_gpu_tests() ? std::vector<Shape>{{1, 1, 1}, {17, 33, 65}, {1000, 17, 300}, {129, 257, 4097}, {4097, 31, 40}, {128, 128, 128}}
                          : std::vector<Shape>{{1, 1, 1}, {17, 33, 65}, {130, 67, 300}, {128, 128, 128}};
  std::uint64_t seed = 1000;
  const std::vector<const Backend*> backends = device_f32_backends(ctx);
  std::size_t cases = 0;
  for (const Backend* be : backends)
    for (Op oa : {Op::N, Op::T})
      for (Op ob : {Op::N, Op::T})
        for (const Shape& s : shapes)
          for (bool with_beta : {false, true}) {
            seed += 3;
            ++cases;
            const float alpha = with_beta ? -1.25f : 1.0f, beta = with_beta ? 0.5f : 0.0f;
            DeviceProblem p(oa, ob, s.m, s.n, s.k, 3, RandomSpec::uniform(-1, 1, seed),
                            RandomSpec::uniform(-1, 1, seed + 1), with_beta);
            const HostMatrix<float> c = p.run(ctx, *be, oa, ob, s.m, s.n, s.k, alpha, beta);
            const auto ref = mixsolve::testing::reference_gemm(oa, ob, s.m, s.n, s.k, alpha, p.a, p.b, beta, p.c0);
            const auto [u_in, u_acc] = unit_roundoffs(be->name());
            const double bound = mixsolve::testing::inner_product_bound(s.k, u_in, u_acc) + 2 * 0x1p-24;
            const double err = mixsolve::testing::componentwise_error(c, ref);
            EXPECT_LE(err, bound) << be->name() << " op " << to_string(oa) << to_string(ob) << " m=" << s.m
                                  << " n=" << s.n << " k=" << s.k << " beta=" << beta;
            for (std::int64_t j = 0; j < s.n; ++j)  // rows between m and ldc untouched
              for (std::int64_t i = s.m; i < c.ld; ++i)
                if (with_beta) ASSERT_EQ(c(i, j), p.c0(i, j)) << be->name();
          }
  EXPECT_EQ(cases, backends.size() * 2 * 2 * shapes.size() * 2);
}

// Fill::Lower: every backend computes the lower triangle (i >= j) to its bound; one that skips
// the tiles above the diagonal (skips_upper_fill: the corrected kernels on Hopper) leaves the
// 128 x 128 tiles wholly above it as they were, also where split-K takes the product (k = 4500
// over 15 lower tiles: 71 halfhalf slices); a product that is not square is computed whole.
TEST(GpuBackends, LowerFillComputesTheLowerTriangleAndMaySkipTheTilesAboveIt) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  struct Shape {
    std::int64_t m, n, k;
  };
  const std::vector<Shape> shapes = {{1, 1, 1}, {129, 129, 77}, {520, 520, 300}, {640, 640, 4500}, {300, 200, 100}};
  const std::vector<const Backend*> backends = device_f32_backends(ctx);
  std::uint64_t seed = 7000;
  int cases = 0, skipped_tiles_checked = 0;
  for (const Shape& s : shapes) {
    seed += 2;
    DeviceProblem p(Op::N, Op::T, s.m, s.n, s.k, 3, RandomSpec::uniform(-1, 1, seed),
                    RandomSpec::uniform(-1, 1, seed + 1), true);
    const auto ref = mixsolve::testing::reference_gemm(Op::N, Op::T, s.m, s.n, s.k, -1.0, p.a, p.b, 1.0, p.c0);
    const bool square = s.m == s.n;
    for (const Backend* be : backends) {
      p.dc.copy_from_host(p.c0.data);
      GemmArgs<float> g{Op::N, Op::T, s.m, s.n, s.k, -1.0f, p.da.data(), p.a.ld, p.db.data(), p.b.ld, 1.0f,
                        p.dc.data(), p.c0.ld, true, Fill::Lower};
      be->run(ctx, g);
      ctx.synchronize();
      HostMatrix<float> c = p.c0;
      p.dc.copy_to_host(c.data.data(), c.data.size());
      HostMatrix<float> lower = c;  // the entries above the diagonal replaced by the reference's
      for (std::int64_t j = 0; j < s.n; ++j)
        for (std::int64_t i = 0; i < std::min(j, s.m); ++i)
          if (square) lower(i, j) = float(ref.value(i, j));
      const auto [u_in, u_acc] = unit_roundoffs(be->name());
      const double bound = mixsolve::testing::inner_product_bound(s.k, u_in, u_acc) + 2 * 0x1p-24;
      EXPECT_LE(mixsolve::testing::componentwise_error(lower, ref), bound)
          << be->name() << " m=" << s.m << " n=" << s.n << " k=" << s.k;
      if (square && be->skips_upper_fill(ctx))
        for (std::int64_t j = 0; j < s.n; ++j)
          for (std::int64_t i = 0; i < j / 128 * 128; ++i) {
            ASSERT_EQ(c(i, j), p.c0(i, j)) << be->name() << " (" << i << ", " << j << ") above the diagonal tiles";
            ++skipped_tiles_checked;
          }
      ++cases;
    }
  }
  EXPECT_EQ(cases, int(backends.size() * shapes.size()));
  EXPECT_GT(skipped_tiles_checked, 0) << "halfhalf and tf32tf32 skip the tiles above the diagonal";
}

// The size limits a backend states through can_implement, which never touches the operands
// (dummy pointers): cuBLAS's 32-bit sizes, fp16x3's inner dimension 3k, the corrected kernels'
// 2^30; and run() refuses the same call with NotSupported carrying the same reason.
TEST(GpuBackends, CanImplementStatesEachBackendsSizeLimits) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  float dummy = 0.0f;
  const auto args = [&](std::int64_t m, std::int64_t k) {
    GemmArgs<float> g;
    g.m = m;
    g.n = 8;
    g.k = k;
    g.a = &dummy;
    g.lda = m;
    g.b = &dummy;
    g.ldb = k;
    g.c = &dummy;
    g.ldc = m;
    return g;
  };
  const Support sgemm = find_backend("cublas-sgemm").can_implement(ctx, args(std::int64_t{1} << 31, 8));
  EXPECT_EQ(sgemm.status, Support::Status::OverSizeLimit);
  EXPECT_NE(sgemm.reason.find("m (2147483648)"), std::string::npos) << sgemm.reason;
  const Support fp16x3 = find_backend("cublas-fp16x3").can_implement(ctx, args(8, std::int64_t{1} << 30));
  EXPECT_EQ(fp16x3.status, Support::Status::OverSizeLimit);
  EXPECT_NE(fp16x3.reason.find("k (1073741824)"), std::string::npos) << fp16x3.reason;
  const Backend& halfhalf = find_backend("halfhalf");
  if (halfhalf.unavailable_reason(ctx).empty()) {
    const Support corrected = halfhalf.can_implement(ctx, args((std::int64_t{1} << 30) + 1, 8));
    EXPECT_EQ(corrected.status, Support::Status::OverSizeLimit) << corrected.reason;
  }
  EXPECT_TRUE(find_backend("cublas-sgemm").can_implement(ctx, args(8, 8)));
  Context& c = ctx;
  try {
    find_backend("cublas-sgemm").run(c, args(std::int64_t{1} << 31, 8));
    ADD_FAILURE() << "expected NotSupported";
  } catch (const NotSupported& e) {
    EXPECT_NE(std::string(e.what()).find(sgemm.reason), std::string::npos) << e.what();
  }
}

TEST(GpuBackends, DgemmMatchesLongDoubleReference) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t m = 97, n = 45, k = 513;
  std::vector<double> a(m * k), b(k * n), c(m * n, NAN);
  fill_random(host_view(a.data(), m, k, m), RandomSpec::uniform(-1, 1, 41));
  fill_random(host_view(b.data(), k, n, k), RandomSpec::uniform(-1, 1, 42));
  DeviceBuffer<double> da(a.size()), db(b.size()), dc(c.size());
  da.copy_from_host(a);
  db.copy_from_host(b);
  dc.copy_from_host(c);
  GemmArgs<double> g{Op::N, Op::N, m, n, k, 1.0, da.data(), m, db.data(), k, 0.0, dc.data(), m};
  find_backend("cublas-dgemm").run(ctx, g);
  c = dc.to_host(ctx.stream());
  mixsolve::testing::expect_fp64_product_accurate(a, b, c, m, n, k);
}

// Relative error (Ootomo & Yokota 2021, eq. 6) of backend `name` on an m x n x k product of the given classes.
double device_relative_error(Context& ctx, const std::string& name, std::int64_t n, std::int64_t k,
                             const RandomSpec& sa, const RandomSpec& sb) {
  DeviceProblem p(Op::N, Op::N, n, n, k, 0, sa, sb, false);
  const HostMatrix<float> c = p.run(ctx, find_backend(name), Op::N, Op::N, n, n, k, 1.0f, 0.0f);
  const auto ref = mixsolve::testing::reference_gemm(Op::N, Op::N, n, n, k, 1.0, p.a, p.b, 0.0, p.c0);
  std::vector<double> r(ref.value.data(), ref.value.data() + n * n);
  return compare_to_reference(host_view<const float>(c.data.data(), n, n, c.ld),
                              host_view<const double>(r.data(), n, n, n))
      .relative_error;
}

TEST(GpuBackends, HalfhalfScalesValuesBeyondFp16RangeInsteadOfOverflowing) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  // |a| up to 2^40 and down to 2^-45: far outside FP16 on both sides.
  const auto big = RandomSpec::exp_rand(20, 40, 5), tiny = RandomSpec::exp_rand(-45, -35, 6);
  for (const auto& [sa, sb] :
       {std::pair{big, RandomSpec::uniform(-1, 1, 7)}, std::pair{tiny, RandomSpec::exp_rand(-15, 15, 8)}}) {
    const std::int64_t k = 512;
    const double hh = device_relative_error(ctx, "halfhalf", 64, k, sa, sb);
    EXPECT_LE(hh, mixsolve::testing::inner_product_bound(k, 0x1p-23, 0x1p-23)) << sa.name();
  }
}

TEST(GpuBackends, Fp16x3ScalesEachOperandSoAnyMagnitudeKeepsItsAccuracy) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  // An LU's U12 blocks shrink with the Schur complements: 2^-30 would be below FP16's subnormals.
  const std::int64_t n = 64, k = 512;
  const double bound = mixsolve::testing::inner_product_bound(k, 0x1p-22, 0x1p-23);
  const RandomSpec unit = RandomSpec::uniform(-1, 1, 81);
  for (const RandomSpec& other : {RandomSpec::uniform(-0x1p-30, 0x1p-30, 82), RandomSpec::uniform(-0x1p40, 0x1p40, 83),
                                  RandomSpec::exp_rand(-45, -35, 84), RandomSpec::uniform(-1, 1, 85)}) {
    EXPECT_LE(device_relative_error(ctx, "cublas-fp16x3", n, k, unit, other), bound) << other.name();
    EXPECT_LE(device_relative_error(ctx, "cublas-fp16x3", n, k, other, unit), bound) << other.name();
  }
  // Scaling A by a power of two scales the product by it, bit for bit.
  DeviceProblem p(Op::N, Op::T, 33, 17, 300, 2, unit, RandomSpec::uniform(-1, 1, 86), true);
  const HostMatrix<float> c = p.run(ctx, find_backend("cublas-fp16x3"), Op::N, Op::T, 33, 17, 300, -1.0f, 0.5f);
  std::vector<float> a = p.a.data;
  for (float& v : a) v *= 0x1p-50f;
  p.da.copy_from_host(a);
  p.dc.copy_from_host(p.c0.data);
  const HostMatrix<float> c_scaled =
      p.run(ctx, find_backend("cublas-fp16x3"), Op::N, Op::T, 33, 17, 300, -0x1p50f, 0.5f);
  for (std::size_t i = 0; i < c.data.size(); ++i) ASSERT_EQ(c_scaled.data[i], c.data[i]) << "entry " << i;
}

// A prepacked B (Backend::pack_b) as an LU uses it: B with |B| <= 1 packed once, block by block,
// by cublas-fp16x3, then products over all blocks and over a later block range, with A of any
// magnitude, through cuBLAS's choice of kernel and through an unclustered cuBLASLt one. Same
// bound as cublas-fp16x3 itself.
TEST(GpuBackends, Fp16x3WithPackedBMatchesFp64ReferenceOverAnyBlockRange) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const Backend& fp16x3 = find_backend("cublas-fp16x3");
  const std::int64_t m = 70, n = 45, k = 300, block = 128, pad = 3;  // blocks of 128, 128, 44 rows
  const std::int64_t ld_bytes = fp16x3.packed_b_column_bytes(k, block) + 16;
  ASSERT_GT(fp16x3.packed_b_column_bytes(k, block), 0);
  EXPECT_EQ(find_backend("cublas-sgemm").packed_b_column_bytes(k, block), 0) << "cublas-sgemm does not pack";
  const RandomSpec unit_b = RandomSpec::uniform(-1, 1, 91);
  DeviceBuffer<unsigned char> storage(ld_bytes * n);
  const PackedB packed{&fp16x3, storage.data(), ld_bytes, block, 0, 1.0};
  std::uint64_t seed = 92;
  for (const RandomSpec& spec_a :
       {RandomSpec::uniform(-1, 1, 0), RandomSpec::uniform(-0x1p-30, 0x1p-30, 0), RandomSpec::exp_rand(30, 40, 0)}) {
    RandomSpec sa = spec_a;
    sa.seed = seed++;
    DeviceProblem p(Op::N, Op::N, m, n, k, pad, sa, unit_b, true);
    for (std::int64_t b = 0; b * block < k; ++b)  // the caller packs block by block
      fp16x3.pack_b(ctx, std::min(block, k - b * block), n,
                    Operand::dense(Format::F32, Op::N, p.db.data() + b * block, p.b.ld), packed.blocks_from(b));
    for (const std::int64_t first_block : {0, 1}) {  // all of k, then the blocks from the second on
      for (const KernelPlacement placement : {KernelPlacement::Anywhere, KernelPlacement::Unclustered}) {
        const std::int64_t k0 = first_block * block, kk = k - k0;
        p.dc.copy_from_host(p.c0.data);
        fp16x3.run(
            ctx,
            Problem{m, n, kk, -1.25, 0.5, Operand::dense(Format::F32, Op::N, p.da.data() + k0 * p.a.ld, p.a.ld),
                    Operand::prepacked(packed.blocks_from(first_block)), Output{Format::F32, p.dc.data(), p.c0.ld}},
            {}, Execution{true, placement});
        ctx.synchronize();
        HostMatrix<float> c = p.c0;
        p.dc.copy_to_host(c.data.data(), c.data.size());
        HostMatrix<float> a_part(m, kk, p.a.ld), b_part(kk, n, p.b.ld);
        for (std::int64_t q = 0; q < kk; ++q)
          for (std::int64_t i = 0; i < m; ++i) a_part(i, q) = p.a(i, k0 + q);
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t q = 0; q < kk; ++q) b_part(q, j) = p.b(k0 + q, j);
        const auto ref = mixsolve::testing::reference_gemm(Op::N, Op::N, m, n, kk, -1.25, a_part, b_part, 0.5, p.c0);
        const double bound = mixsolve::testing::inner_product_bound(kk, 0x1p-22, 0x1p-23) + 2 * 0x1p-24;
        EXPECT_LE(mixsolve::testing::componentwise_error(c, ref), bound)
            << sa.name() << " k0 = " << k0 << (placement == KernelPlacement::Unclustered ? ", unclustered" : "");
        for (std::int64_t j = 0; j < n; ++j)  // rows between m and ldc untouched
          for (std::int64_t i = m; i < c.ld; ++i) ASSERT_EQ(c(i, j), p.c0(i, j));
      }
    }
  }
  // Refusals name the argument: through can_implement (a query) and run (which throws).
  DeviceBuffer<float> a(m * k), c(m * n);
  const auto problem = [&](std::int64_t lda, const PackedB& b) {
    return Problem{m,
                   n,
                   k,
                   1,
                   0,
                   Operand::dense(Format::F32, Op::N, a.data(), lda),
                   Operand::prepacked(b),
                   Output{Format::F32, c.data(), m}};
  };
  const auto expect_refused = [&](const Backend& backend, const Problem& pr, Support::Status status,
                                  const std::string& part) {
    const Support s = backend.can_implement(ctx, pr);
    EXPECT_EQ(s.status, status) << part << ": " << s.reason;
    EXPECT_NE(s.reason.find(part), std::string::npos) << s.reason;
    EXPECT_ANY_THROW(backend.run(ctx, pr)) << part;
  };
  PackedB short_ld = packed, no_block = packed;
  short_ld.ld_bytes = fp16x3.packed_b_column_bytes(k, block) - 2;
  no_block.block = 0;
  expect_refused(fp16x3, problem(m - 1, packed), Support::Status::InvalidArgument, "lda (69) < rows of A");
  expect_refused(fp16x3, problem(m, short_ld), Support::Status::InvalidArgument, "ld_bytes (1798)");
  expect_refused(fp16x3, problem(m, no_block), Support::Status::InvalidArgument, "block (0)");
  expect_refused(find_backend("cublas-sgemm"), problem(m, packed), Support::Status::UnsupportedFormat, "B is packed");
  expect_refused(find_backend("halfhalf"), problem(m, packed), Support::Status::UnsupportedFormat, "B is packed");
  PackedB bad_bound = packed;
  bad_bound.abs_bound = 0;
  EXPECT_THROW(fp16x3.pack_b(ctx, k, n, Operand::dense(Format::F32, Op::N, a.data(), k), bad_bound), InvalidArgument);
  EXPECT_THROW(fp16x3.pack_b(ctx, k, n, Operand::dense(Format::F32, Op::N, a.data(), k), short_ld), InvalidArgument);
  EXPECT_THROW(find_backend("cublas-sgemm").pack_b(ctx, k, n, Operand::dense(Format::F32, Op::N, a.data(), k), packed),
               NotSupported);
}

TEST(GpuBackends, UnscaledFp16BackendsReportOverflowInsteadOfReturningGarbage) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  for (const char* name : {"halfhalf-unscaled", "markidis", "cublas-fp16"}) {
    DeviceProblem p(Op::N, Op::T, 32, 16, 8, 0, RandomSpec::uniform(-1, 1, 3), RandomSpec::uniform(-1, 1, 4), true);
    std::vector<float> a = p.a.data;
    a[5] = 70000.0f;  // beyond FP16's 65504
    p.da.copy_from_host(a);
    try {
      p.run(ctx, find_backend(name), Op::N, Op::T, 32, 16, 8, 1.0f, 0.0f);
      ADD_FAILURE() << name << " accepted a value beyond FP16 range";
    } catch (const RangeError& e) {
      EXPECT_NE(std::string(e.what()).find("1 entries of A"), std::string::npos) << e.what();
    }
  }
}

TEST(GpuBackends, SizesBeyondABackendsIndexRangeAreNotSupported) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  DeviceBuffer<float> tiny(16);
  const std::int64_t huge = std::int64_t{1} << 31;  // ld and m only: nothing is read or written
  for (const Backend* be : device_f32_backends(ctx)) {
    GemmArgs<float> g{Op::N, Op::N, huge, 1, 1, 1.0f, tiny.data(), huge, tiny.data(), 1, 0.0f, tiny.data(), huge};
    try {
      be->run(ctx, g);
      ADD_FAILURE() << be->name() << " accepted m = 2^31";
    } catch (const NotSupported& e) {
      EXPECT_NE(std::string(e.what()).find("m (2147483648)"), std::string::npos) << e.what();
    }
  }
}

TEST(GpuBackends, NanAndInfPropagateToTouchedEntriesOnly) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  for (const Backend* be : device_f32_backends(ctx)) {
    DeviceProblem p(Op::N, Op::N, 40, 30, 50, 0, RandomSpec::uniform(-1, 1, 61), RandomSpec::uniform(-1, 1, 62), false);
    std::vector<float> a = p.a.data, b = p.b.data;
    a[7 + 40 * 3] = NAN;         // A(7, 3)  -> row 7
    b[11 + 50 * 20] = INFINITY;  // B(11, 20) -> column 20
    p.da.copy_from_host(a);
    p.db.copy_from_host(b);
    const HostMatrix<float> c = p.run(ctx, *be, Op::N, Op::N, 40, 30, 50, 1.0f, 0.0f);
    for (int j = 0; j < 30; ++j)
      for (int i = 0; i < 40; ++i)
        EXPECT_EQ(std::isfinite(c(i, j)), !(i == 7 || j == 20)) << be->name() << " (" << i << "," << j << ")";
  }
}

// Every backend of `names` has a relative error no larger than cuBLAS SGEMM's on one problem.
void expect_at_least_as_accurate_as_sgemm(Context& ctx, std::initializer_list<const char*> names, std::int64_t n,
                                          std::int64_t k, const RandomSpec& sa, const RandomSpec& sb) {
  const double sgemm = device_relative_error(ctx, "cublas-sgemm", n, k, sa, sb);
  for (const char* name : names) {
    const double err = device_relative_error(ctx, name, n, k, sa, sb);
    std::printf("n=%lld k=%lld %s relative error %s %.3g, cublas-sgemm %.3g\n", static_cast<long long>(n),
                static_cast<long long>(k), sa.name().c_str(), name, err, sgemm);
    EXPECT_LE(err, sgemm) << name;
  }
}

TEST(GpuBackends, CorrectedBackendsAreAsAccurateAsSgemmOnExpRandAtSmallK) {
  // Same-signed inputs over 30 binades at k = 256: where tensor-core truncation bias shows most.
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  expect_at_least_as_accurate_as_sgemm(ctx, {"halfhalf", "tf32tf32", "halfhalf-mma-sync", "tf32tf32-mma-sync"}, 1024,
                                       256, RandomSpec::exp_rand(-15, 15, 401), RandomSpec::exp_rand(-15, 15, 402));
}

TEST(GpuBackends, CorrectedBackendsAreAsAccurateAsSgemmOnUniformInputs) {
  // Ootomo & Yokota (2021) Fig. 1 / the accuracy target at a size where cuBLAS picks split-K SGEMM.
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  expect_at_least_as_accurate_as_sgemm(ctx, {"halfhalf", "tf32tf32"}, 256, 8192, RandomSpec::uniform(-1, 1, 301),
                                       RandomSpec::uniform(-1, 1, 302));
}

// Split-K of the corrected wgmma kernel (gemm/src/cuda/corrected/split_k.hpp) on the V^T C of a
// blocked QR's trailing update: op(A) = T, m = 256, a few column tiles (n = 200: a partial one), k
// long and not a multiple of the chunk; C = -op(A) op(B) + C (C scaled so that a lost beta C would
// show) and C = -op(A) op(B) over a NaN-poisoned C. The kernel rounds a few times per slice in the
// tensor core, 8 times per `part`, k/512 (FP16) or k/256 (TF32) times into acc and once per split,
// so the bound allows k/32 + 64 roundings of 2^-23 |A||B| (linear in k like inner_product_bound(k),
// well below it): a lost or repeated k-chunk (about 1e-3 of |A||B| here) exceeds it. Split runs
// repeat bit for bit (no atomics); the same product with the multiprocessors limited to one per
// tile runs unsplit and meets the same bound, and so does a k too short to split.
TEST(GpuBackends, CorrectedSplitKMatchesFp64ReferenceOnLongSkinnyProducts) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  int multiprocessors = 0;
  MIXSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, ctx.device()));
  struct Shape {
    std::int64_t m, n, k;
  };
  std::uint64_t seed = 5000;
  int products = 0, split = 0;
  for (const Shape& s : {Shape{256, 384, 65536}, Shape{256, 200, 40000}, Shape{256, 384, 1000}}) {
    seed += 10;
    DeviceProblem p(Op::T, Op::N, s.m, s.n, s.k, 3, RandomSpec::uniform(-1, 1, seed),
                    RandomSpec::uniform(-1, 1, seed + 1), true);
    for (float& v : p.c0.data) v *= 256.0f;
    const std::vector<float> poison(p.c0.data.size(), NAN);
    const auto product = mixsolve::testing::reference_gemm(Op::T, Op::N, s.m, s.n, s.k, -1.0, p.a, p.b, 0.0, p.c0);
    const auto updated = scaled_update(product, 1, 1, p.c0);
    const double bound = mixsolve::testing::inner_product_bound(s.k / 32 + 64, 0x1p-23, 0x1p-23) + 2 * 0x1p-24;
    const std::int64_t tiles = (s.m + 127) / 128 * ((s.n + 127) / 128);
    for (const char* name : {"halfhalf", "tf32tf32-packed"}) {  // the general kernel's split-K
      const Backend& be = find_backend(name);
      if (!mixsolve::testing::backend_runs_here(be, ctx)) continue;
      ++products;
      const std::int64_t slice = std::string(name) == "halfhalf" ? 64 : 32;  // values of k per 128-byte slice
      const std::int64_t k_tiles = (s.k + slice - 1) / slice;
      const int splits = corrected::corrected_split_count(tiles, k_tiles, multiprocessors);
      const auto where = [&] {
        return ::testing::Message() << name << " m=" << s.m << " n=" << s.n << " k=" << s.k << " splits=" << splits;
      };
      if (s.k >= 40000)
        EXPECT_GT(splits, 1) << where();
      else
        EXPECT_EQ(splits, 1) << where();
      const auto run = [&](float beta) {
        p.dc.copy_from_host(beta == 0.0f ? poison : p.c0.data);
        return p.run(ctx, be, Op::T, Op::N, s.m, s.n, s.k, -1.0f, beta);
      };
      for (float beta : {1.0f, 0.0f}) {
        const HostMatrix<float> c = run(beta);
        const double err = mixsolve::testing::componentwise_error(c, beta == 0.0f ? product : updated);
        std::printf("%s m=%lld n=%lld k=%lld splits=%d beta=%g: error %.3g |A||B| (bound %.3g)\n", name,
                    static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k), splits,
                    double(beta), err, bound);
        EXPECT_LE(err, bound) << where() << " beta=" << beta;
        for (std::int64_t j = 0; j < s.n; ++j)  // rows between m and ldc untouched
          for (std::int64_t i = s.m; i < c.ld; ++i)
            ASSERT_TRUE(beta == 0.0f ? std::isnan(c(i, j)) : c(i, j) == p.c0(i, j)) << where() << " row " << i;
        if (splits > 1 && beta == 1.0f) {
          const HostMatrix<float> again = run(beta);
          EXPECT_EQ(std::memcmp(again.data.data(), c.data.data(), c.data.size() * sizeof(float)), 0) << where();
        }
      }
      if (splits > 1) {
        ++split;
        ctx.set_multiprocessor_limit(static_cast<int>(tiles));
        EXPECT_EQ(corrected::corrected_split_count(tiles, k_tiles, static_cast<int>(tiles)), 1);
        const HostMatrix<float> c = run(1.0f);
        ctx.set_multiprocessor_limit(0);
        const double err = mixsolve::testing::componentwise_error(c, updated);
        std::printf("%s m=%lld n=%lld k=%lld unsplit (multiprocessor limit %lld): error %.3g |A||B|\n", name,
                    static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                    static_cast<long long>(tiles), err);
        EXPECT_LE(err, bound) << where() << " unsplit";
      }
    }
  }
  // Three shapes for each backend that runs here, the two with k >= 40000 split.
  EXPECT_EQ(split * 3, products * 2);
  if (mixsolve::testing::gpu_tests_required()) EXPECT_EQ(products, 6);
}

// tf32tf32 sends products with m <= 256 whose op(B) TMA can read in place (op(B) = N, ldb a
// multiple of 4, a 16-byte aligned base) to the skinny kernel (op(B) split in registers, the
// output computed transposed); tf32tf32-packed packs op(B) as always. Both against the FP64
// product and each other: odd m, n and k (TMA's zero fill), op(A) either way, split-K, several
// work items per CTA (a multiprocessor limit), three (alpha, beta) with beta 0 over NaN, repeat
// runs bit-identical. The routing is checked by corrected::skinny_kernel_takes, and the products
// must differ from the packed kernel's somewhere (another summation order) where k is long.
TEST(GpuBackends, Tf32SkinnyKernelMatchesFp64ReferenceAndThePackedKernel) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const Backend& skinny = find_backend("tf32tf32");
  const Backend& packed = find_backend("tf32tf32-packed");
  if (!skinny.unavailable_reason(ctx).empty()) MIXSOLVE_SKIP_GPU_TEST(skinny.unavailable_reason(ctx));
  struct Shape {
    std::int64_t m, n, k;
    Op op_a;
    int multiprocessors;  // the Context's limit, 0: none
  };
  std::uint64_t seed = 7000;
  for (const Shape& s : {Shape{256, 384, 65536, Op::T, 0}, Shape{256, 2000, 16384, Op::T, 0},
                         Shape{200, 1000, 3001, Op::T, 0}, Shape{129, 65, 40001, Op::N, 0}, Shape{1, 70, 33, Op::T, 0},
                         Shape{256, 1, 5000, Op::N, 0}, Shape{256, 384, 3000, Op::T, 2}}) {
    seed += 10;
    const std::int64_t pad = 4 + (4 - s.k % 4) % 4;  // ldb = k + pad, a multiple of 4
    DeviceProblem p(s.op_a, Op::N, s.m, s.n, s.k, pad, RandomSpec::uniform(-1, 1, seed),
                    RandomSpec::uniform(-1, 1, seed + 1), true);
    const auto where = [&] {
      return ::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k << " op(A)=" << to_string(s.op_a)
                                  << " multiprocessors=" << s.multiprocessors;
    };
    const GemmArgs<float> args{s.op_a, Op::N,       s.m,    s.n,  s.k,         1.0f,   p.da.data(),
                               p.a.ld, p.db.data(), p.b.ld, 0.0f, p.dc.data(), p.c0.ld};
    ASSERT_TRUE(corrected::skinny_kernel_takes(args)) << where();
    ctx.set_multiprocessor_limit(s.multiprocessors);
    const std::vector<float> poison(p.c0.data.size(), NAN);
    const auto product = mixsolve::testing::reference_gemm(s.op_a, Op::N, s.m, s.n, s.k, 1.0, p.a, p.b, 0.0, p.c0);
    const double bound = mixsolve::testing::inner_product_bound(s.k / 32 + 64, 0x1p-23, 0x1p-23) + 2 * 0x1p-24;
    bool first = true;
    for (const auto [alpha, beta] : {std::pair{-1.0f, 1.0f}, std::pair{0.75f, 0.0f}, std::pair{1.5f, -0.5f}}) {
      const auto expected = scaled_update(product, alpha, beta, p.c0);
      HostMatrix<float> c[2] = {p.c0, p.c0};
      double errors[2];
      for (int which = 0; which < 2; ++which) {
        const Backend& be = which == 0 ? skinny : packed;
        p.dc.copy_from_host(beta == 0.0f ? poison : p.c0.data);
        c[which] = p.run(ctx, be, s.op_a, Op::N, s.m, s.n, s.k, alpha, beta);
        errors[which] = mixsolve::testing::componentwise_error(c[which], expected);
        EXPECT_LE(errors[which], bound) << be.name() << " " << where() << " beta=" << beta;
        for (std::int64_t j = 0; j < s.n; ++j)  // rows between m and ldc untouched
          for (std::int64_t i = s.m; i < c[which].ld; ++i)
            ASSERT_TRUE(beta == 0.0f ? std::isnan(c[which](i, j)) : c[which](i, j) == p.c0(i, j))
                << be.name() << " " << where();
      }
      // Within a few times the packed kernel's error (the bound above allows far more at large k).
      EXPECT_LE(errors[0], 4 * errors[1] + 0x1p-26) << where() << " beta=" << beta;
      if (s.k >= 3001)
        EXPECT_NE(std::memcmp(c[0].data.data(), c[1].data.data(), c[0].data.size() * sizeof(float)), 0) << where();
      if (first) {
        p.dc.copy_from_host(beta == 0.0f ? poison : p.c0.data);
        const HostMatrix<float> again = p.run(ctx, skinny, s.op_a, Op::N, s.m, s.n, s.k, alpha, beta);
        EXPECT_EQ(std::memcmp(again.data.data(), c[0].data.data(), c[0].data.size() * sizeof(float)), 0) << where();
        first = false;
      }
      std::printf(
          "tf32tf32 m=%lld n=%lld k=%lld (limit %d) alpha=%g beta=%g: skinny %.3g, packed %.3g |A||B| (bound %.3g)\n",
          static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k), s.multiprocessors,
          double(alpha), double(beta), errors[0], errors[1], bound);
    }
    ctx.set_multiprocessor_limit(0);
  }

  // op(B) readable in place but for its base address (4 bytes past a 16-byte boundary): the
  // packed kernel takes it, and the product is right.
  {
    const std::int64_t m = 256, n = 100, k = 2000, ldb = 2004;
    DeviceProblem p(Op::T, Op::N, m, n, k, 4, RandomSpec::uniform(-1, 1, 7200), RandomSpec::uniform(-1, 1, 7201), true);
    DeviceBuffer<float> shifted(p.b.data.size() + 1);
    MIXSOLVE_CUDA_CHECK(
        cudaMemcpy(shifted.data() + 1, p.b.data.data(), p.b.data.size() * sizeof(float), cudaMemcpyHostToDevice));
    ASSERT_EQ(p.b.ld, ldb);
    const GemmArgs<float> g{Op::T, Op::N, m,           n,      k, 1.0f, p.da.data(), p.a.ld, shifted.data() + 1,
                            ldb,   0.0f,  p.dc.data(), p.c0.ld};
    ASSERT_FALSE(corrected::skinny_kernel_takes(g));
    skinny.run(ctx, g);
    ctx.synchronize();
    HostMatrix<float> c = p.c0;
    p.dc.copy_to_host(c.data.data(), c.data.size());
    const auto product = mixsolve::testing::reference_gemm(Op::T, Op::N, m, n, k, 1.0, p.a, p.b, 0.0, p.c0);
    EXPECT_LE(mixsolve::testing::componentwise_error(c, product),
              mixsolve::testing::inner_product_bound(k / 32 + 64, 0x1p-23, 0x1p-23) + 2 * 0x1p-24);
  }

  // A NaN in column 3 and an Inf in column 5 of op(B), a NaN in row 7 of op(A): those output
  // columns and that row are not finite, every other entry is finite and correct.
  const std::int64_t m = 256, n = 200, k = 3000;
  DeviceProblem p(Op::T, Op::N, m, n, k, 4, RandomSpec::uniform(-1, 1, 7100), RandomSpec::uniform(-1, 1, 7101), true);
  const auto product = mixsolve::testing::reference_gemm(Op::T, Op::N, m, n, k, 1.0, p.a, p.b, 0.0, p.c0);
  p.b(17, 3) = NAN;
  p.b(2999, 5) = INFINITY;
  p.a(1234, 7) = NAN;  // op(A) = A^T: row 7 of op(A), k index 1234
  p.db.copy_from_host(p.b.data);
  p.da.copy_from_host(p.a.data);
  const GemmArgs<float> g{Op::T,  Op::N,       m,      n,    k,           1.0f,   p.da.data(),
                          p.a.ld, p.db.data(), p.b.ld, 0.0f, p.dc.data(), p.c0.ld};
  ASSERT_TRUE(corrected::skinny_kernel_takes(g));
  const HostMatrix<float> c = p.run(ctx, skinny, Op::T, Op::N, m, n, k, 1.0f, 0.0f);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      if (j == 3 || j == 5 || i == 7) {
        ASSERT_FALSE(std::isfinite(c(i, j))) << "row " << i << " column " << j;
        continue;
      }
      ASSERT_TRUE(std::isfinite(c(i, j))) << "row " << i << " column " << j;
      ASSERT_LE(std::fabs(c(i, j) - product.value(i, j)), 1e-5 * product.magnitude(i, j) + 1e-30)
          << "row " << i << " column " << j;
    }
}

}  // namespace

namespace {

// One product on both ozaki2 backends, compared bit for bit: op(A) m x k and op(B) k x n with
// phi inputs (leading dimensions `pad` beyond the stored rows), C = alpha op(A) op(B) + beta C
// from a random C; the device backend with `panel` (0: its default).
struct Ozaki2Case {
  std::int64_t m, n, k;
  Op op_a, op_b;
  int moduli;
  std::int64_t panel;
  double phi = 1;
  std::int64_t pad = 0;
};

void expect_device_matches_host(Context& ctx, const Ozaki2Case& t, std::uint64_t seed) {
  Context host = Context::host_only();
  const std::int64_t lda = (t.op_a == Op::N ? t.m : t.k) + t.pad, ldb = (t.op_b == Op::N ? t.k : t.n) + t.pad,
                     ldc = t.m + t.pad;
  std::vector<double> a(lda * (t.op_a == Op::N ? t.k : t.m)), b(ldb * (t.op_b == Op::N ? t.n : t.k)), c(ldc * t.n);
  fill_random(host_view(a.data(), lda, std::int64_t(a.size()) / lda, lda), RandomSpec::phi_spread(t.phi, seed));
  fill_random(host_view(b.data(), ldb, std::int64_t(b.size()) / ldb, ldb), RandomSpec::phi_spread(t.phi, seed + 1));
  fill_random(host_view(c.data(), ldc, t.n, ldc), RandomSpec::uniform(-1, 1, seed + 2));
  DeviceBuffer<double> da(a.size()), db(b.size()), dc(c.size());
  da.copy_from_host(a);
  db.copy_from_host(b);
  dc.copy_from_host(c);
  std::vector<double> expected = c;
  const auto problem = [&](const double* pa, const double* pb, double* pc) {
    return Problem{t.m,
                   t.n,
                   t.k,
                   -1.5,
                   0.25,
                   Operand::dense(Format::F64, t.op_a, pa, lda),
                   Operand::dense(Format::F64, t.op_b, pb, ldb),
                   Output{Format::F64, pc, ldc}};
  };
  find_backend("host-ozaki2-int8").run(host, problem(a.data(), b.data(), expected.data()), {{"moduli", t.moduli}});
  find_backend("ozaki2-int8")
      .run(ctx, problem(da.data(), db.data(), dc.data()), {{"moduli", t.moduli}, {"panel", t.panel}});
  ctx.synchronize();
  std::vector<double> got(c.size());
  dc.copy_to_host(got.data(), got.size());
  for (std::size_t x = 0; x < got.size(); ++x)
    ASSERT_EQ(got[x], expected[x]) << t.m << " x " << t.n << " x " << t.k << ", phi " << t.phi << ", op "
                                   << to_string(t.op_a) << to_string(t.op_b) << ", moduli " << t.moduli << ", panel "
                                   << t.panel << ", at " << x;
}

// ozaki2-int8 computes host-ozaki2-int8's bits (the same residues, exact INT32 products, the same
// CRT limbs and double-double sum): all transposes, odd sizes, leading dimensions beyond the rows,
// alpha and beta, phi 0.1 to 2, the automatic and fixed numbers of moduli; 8 moduli with C in
// panels of 16 columns (16, 16, 13).
TEST(GpuOzaki2Int8, MatchesTheHostReferenceBitForBit) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  std::uint64_t seed = 40;
  for (const double phi : {0.1, 1.0, 2.0})
    for (const Op op_a : {Op::N, Op::T})
      for (const Op op_b : {Op::N, Op::T})
        for (const int moduli : {0, 8, 20}) {
          expect_device_matches_host(ctx, {70, 45, 300, op_a, op_b, moduli, moduli == 8 ? 16 : 0, phi, 3}, seed);
          if (HasFatalFailure()) return;
          seed += 3;
        }
}

// Small, skinny and wide shapes (sizes off the 16-padding, k = 1, one row, several default panels
// of 4096 columns, a panel width that is not a multiple of 16) match the host reference bit for
// bit.
TEST(GpuOzaki2Int8, SmallSkinnyAndWideShapesMatchTheHostReference) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const Ozaki2Case cases[] = {{1, 1, 1, Op::N, Op::N, 0, 0},       {3, 5, 1, Op::T, Op::T, 20, 0},
                              {17, 15, 2, Op::N, Op::T, 2, 0},     {1, 40, 17, Op::N, Op::N, 0, 16},
                              {130, 4200, 64, Op::T, Op::N, 0, 0}, {5, 4200, 70, Op::N, Op::N, 12, 1000}};
  std::uint64_t seed = 140;
  for (const Ozaki2Case& t : cases) {
    expect_device_matches_host(ctx, t, seed);
    if (HasFatalFailure()) return;
    seed += 3;
  }
}

// Rows far above and below FP32's range, zero rows and columns and subnormal entries: the same
// bits as the host reference.
TEST(GpuOzaki2Int8, WideExponentsAndZerosMatchTheHostReference) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  Context host = Context::host_only();
  const std::int64_t m = 40, n = 36, k = 128;
  std::vector<double> a(m * k), b(k * n), expected(m * n), got(m * n);
  fill_random(host_view(a.data(), m, k, m), RandomSpec::phi_spread(1.0, 61));
  fill_random(host_view(b.data(), k, n, k), RandomSpec::phi_spread(1.0, 62));
  for (std::int64_t l = 0; l < k; ++l) {
    a[0 + l * m] *= 0x1p+600;
    a[1 + l * m] *= 0x1p-1000;  // a row of subnormal and tiny entries
    a[2 + l * m] = 0;
    b[l + 0 * k] *= 0x1p-300;
    b[l + 1 * k] = 0;
  }
  DeviceBuffer<double> da(a.size()), db(b.size()), dc(m * n);
  da.copy_from_host(a);
  db.copy_from_host(b);
  const auto problem = [&](const double* pa, const double* pb, double* pc) {
    return Problem{m,
                   n,
                   k,
                   1.0,
                   0.0,
                   Operand::dense(Format::F64, Op::N, pa, m),
                   Operand::dense(Format::F64, Op::N, pb, k),
                   Output{Format::F64, pc, m}};
  };
  find_backend("host-ozaki2-int8").run(host, problem(a.data(), b.data(), expected.data()));
  find_backend("ozaki2-int8").run(ctx, problem(da.data(), db.data(), dc.data()));
  ctx.synchronize();
  dc.copy_to_host(got.data(), got.size());
  EXPECT_EQ(got, expected);
  for (std::int64_t j = 0; j < n; ++j) EXPECT_EQ(got[2 + j * m], 0.0);
}

}  // namespace

namespace {

// cuBLAS's own FP64 emulation, the Ozaki backends' baseline: with cuBLAS choosing the bits it
// agrees with DGEMM on uniform data to 1e-13 (normwise), and its handle settings do not leak into
// the next call.
TEST(GpuDgemmEmulated, AgreesWithDgemmAndRestoresTheHandle) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const Backend& emulated = find_backend("cublas-dgemm-emulated");
  if (!emulated.unavailable_reason(ctx).empty()) MIXSOLVE_SKIP_GPU_TEST(emulated.unavailable_reason(ctx));
  const std::int64_t m = 96, n = 80, k = 200;
  std::vector<double> a(m * k), b(k * n);
  fill_random(host_view(a.data(), m, k, m), RandomSpec::uniform(-1, 1, 81));
  fill_random(host_view(b.data(), k, n, k), RandomSpec::uniform(-1, 1, 82));
  DeviceBuffer<double> da(a.size()), db(b.size()), dc(m * n), dd(m * n);
  da.copy_from_host(a);
  db.copy_from_host(b);
  const auto problem = [&](double* c) {
    return Problem{m,
                   n,
                   k,
                   1.0,
                   0.0,
                   Operand::dense(Format::F64, Op::N, da.data(), m),
                   Operand::dense(Format::F64, Op::N, db.data(), k),
                   Output{Format::F64, c, m}};
  };
  emulated.run(ctx, problem(dc.data()));
  find_backend("cublas-dgemm").run(ctx, problem(dd.data()));
  ctx.synchronize();
  std::vector<double> c(m * n), d(m * n);
  dc.copy_to_host(c.data(), c.size());
  dd.copy_to_host(d.data(), d.size());
  double difference = 0, norm = 0;
  for (std::size_t x = 0; x < c.size(); ++x) {
    difference += (c[x] - d[x]) * (c[x] - d[x]);
    norm += d[x] * d[x];
  }
  EXPECT_LT(std::sqrt(difference / norm), 1e-13);
  cublasEmulationStrategy_t strategy{};
  ASSERT_EQ(cublasGetEmulationStrategy(ctx.cublas(), &strategy), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(strategy, CUBLAS_EMULATION_STRATEGY_DEFAULT) << "the handle's strategy is restored";
}

}  // namespace
