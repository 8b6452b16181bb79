// SPDX-License-Identifier: BSD-3-Clause
// SLFP encodings (formats/slfp.hpp) give the same bits on the device as on the host, for every
// format and both roundings, on random bit patterns of the base format (every exponent,
// subnormals, Inf, NaN) and on the word planes of SlfpVector.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/formats/slfp.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::formats;

// out[3 i] = encode RN, out[3 i + 1] = encode RZ, out[3 i + 2] = the bits of the RN value decoded
// from the word planes of a SlfpVector written on the device.
template <class F>
__global__ void encode_kernel(const typename F::value_type* in, typename F::Bits* out, SlfpVector<F> planes,
                              int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const typename F::value_type v = in[i];
  out[3 * i] = F::template encode<Rounding::NearestEven>(v);
  out[3 * i + 1] = F::template encode<Rounding::TowardZero>(v);
  planes.template store<Rounding::NearestEven>(i, v);
  out[3 * i + 2] = slfp_detail::Ieee<typename F::value_type>::to_bits(planes.load(i));
}

template <class F>
void expect_device_matches_host(const char* name) {
  using V = typename F::value_type;
  using Bits = typename F::Bits;
  using IeeeBits = typename slfp_detail::Ieee<V>::Bits;
  constexpr int kCount = 1 << 20;
  std::mt19937_64 rng(std::hash<std::string>{}(name));
  std::vector<V> values(kCount);
  for (V& v : values) v = slfp_detail::Ieee<V>::from_bits(static_cast<IeeeBits>(rng()));
  DeviceBuffer<V> din(values.size());
  din.copy_from_host(values);
  DeviceBuffer<Bits> dout(3 * values.size());
  DeviceBuffer<std::uint32_t> d32(kCount);
  DeviceBuffer<std::uint16_t> d16(kCount);
  DeviceBuffer<std::uint8_t> d8(kCount);
  const SlfpVector<F> planes{F::kHas32 ? d32.data() : nullptr, F::kHas16 ? d16.data() : nullptr,
                             F::kHas8 ? d8.data() : nullptr};
  encode_kernel<F><<<(kCount + 255) / 256, 256>>>(din.data(), dout.data(), planes, kCount);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<Bits> out = dout.to_host();
  int mismatches = 0;
  for (int i = 0; i < kCount && mismatches < 10; ++i) {
    const V v = values[i];
    const Bits rn = F::template encode<Rounding::NearestEven>(v), rz = F::template encode<Rounding::TowardZero>(v);
    const IeeeBits widened = slfp_detail::Ieee<V>::to_bits(F::decode(rn));
    if (out[3 * i] != rn || out[3 * i + 1] != rz || out[3 * i + 2] != widened) {
      ++mismatches;
      ADD_FAILURE() << name << " input bits " << std::hex << slfp_detail::Ieee<V>::to_bits(v) << ": device RN "
                    << out[3 * i] << " RZ " << out[3 * i + 1] << " widened " << out[3 * i + 2] << ", host " << rn << " "
                    << rz << " " << widened;
    }
  }
  EXPECT_EQ(mismatches, 0) << name;
}

TEST(GpuSlfp, DeviceEncodingsMatchTheHostBitForBit) {
  MIXSOLVE_REQUIRE_GPU();
  expect_device_matches_host<Slfp64in56>("slfp64in56b");
  expect_device_matches_host<Slfp64in48>("slfp64in48b");
  expect_device_matches_host<Slfp64in40>("slfp64in40b");
  expect_device_matches_host<Slfp64in32>("slfp64in32b");
  expect_device_matches_host<Slfp64in24>("slfp64in24b");
  expect_device_matches_host<Slfp64in16>("slfp64in16b");
  expect_device_matches_host<Slfp32in24>("slfp32in24b");
  expect_device_matches_host<Slfp32in16>("slfp32in16b");
}

}  // namespace

namespace {

using namespace mixsolve;
using mixsolve::formats::Rounding;
using mixsolve::slfp::Format;
using mixsolve::slfp::Storage;

// The device kernels (slfp/blas.hpp) give the host kernels' bits: encode, AXPY and decode for
// every format and both roundings, through the 8-value block path (16-byte aligned planes) and the
// value-by-value path (every plane one element further on); DOT within its FP64 error bound.
template <class T>
void expect_device_kernels_match_host(Format f) {
  Context host = Context::host_only();
  Context ctx;
  const std::int64_t n = (1 << 20) + 5;
  std::mt19937_64 rng(int(f) + 1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> x0(n), y0(n);
  for (std::int64_t i = 0; i < n; ++i) {
    x0[i] = static_cast<T>(std::ldexp(u(rng), int(rng() % 60) - 30));
    y0[i] = static_cast<T>(u(rng));
  }
  DeviceBuffer<T> dx0(n), dy0(n), dout(n);
  dx0.copy_from_host(x0);
  dy0.copy_from_host(y0);
  for (const Rounding r : {Rounding::NearestEven, Rounding::TowardZero})
    for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{1}}) {
      const auto shifted = [&](const mixsolve::slfp::Vector& v) {
        return mixsolve::slfp::subvector(v, offset, v.size - offset);
      };
      const std::int64_t m = n - offset;
      Storage hx(f, n, Memory::Host), hy(f, n, Memory::Host), dxs(f, n, Memory::Device), dys(f, n, Memory::Device);
      const auto hxv = shifted(hx.view()), hyv = shifted(hy.view()), dxv = shifted(dxs.view()),
                 dyv = shifted(dys.view());
      slfp::encode(host, x0.data() + offset, hxv, r);
      slfp::encode(host, y0.data() + offset, hyv, r);
      slfp::encode(ctx, dx0.data() + offset, dxv, r);
      slfp::encode(ctx, dy0.data() + offset, dyv, r);
      slfp::axpy(host, 0.3, hxv, hyv, r);
      slfp::axpy(ctx, 0.3, dxv, dyv, r);
      std::vector<T> expected(m), got(m);
      slfp::decode(host, hyv, expected.data());
      slfp::decode(ctx, dyv, dout.data());
      ctx.synchronize();
      dout.copy_to_host(got.data(), m);
      int mismatches = 0;
      for (std::int64_t i = 0; i < m && mismatches < 5; ++i)
        if (std::memcmp(&got[i], &expected[i], sizeof(T)) != 0) {
          ++mismatches;
          ADD_FAILURE() << slfp::to_string(f) << " offset " << offset << " element " << i << ": device " << got[i]
                        << ", host " << expected[i];
        }
      const double host_dot = slfp::dot(host, hxv, hyv), device_dot = slfp::dot(ctx, dxv, dyv);
      double magnitude = 0;
      std::vector<T> xs(m);
      slfp::decode(host, hxv, xs.data());
      for (std::int64_t i = 0; i < m; ++i) magnitude += std::fabs(double(xs[i]) * double(expected[i]));
      EXPECT_LE(std::fabs(host_dot - device_dot), 2 * double(m) * 0x1p-53 * magnitude) << slfp::to_string(f);
    }
}

// GEMV on the device against the host's, every format, both transposes: tall matrices through the
// tile path (ld a multiple of 8) and value by value, a wide one, and no rows: within the FP64 dot
// bound.
void expect_device_gemv_matches_host(Format f, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  Context host = Context::host_only();
  Context ctx;
  const std::int64_t size = (cols - 1) * ld + rows;
  Storage hv(f, size, Memory::Host), dv(f, size, Memory::Device);
  std::mt19937_64 rng(70 + int(f));
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a64(size);
  for (double& v : a64) v = u(rng);
  DeviceBuffer<double> da64(size);
  da64.copy_from_host(a64);
  if (slfp::fp64_based(f)) {
    slfp::encode(host, a64.data(), hv.view(), Rounding::NearestEven);
    slfp::encode(ctx, da64.data(), dv.view(), Rounding::NearestEven);
  } else {
    std::vector<float> a32(a64.begin(), a64.end());
    DeviceBuffer<float> da32(size);
    da32.copy_from_host(a32);
    slfp::encode(host, a32.data(), hv.view(), Rounding::NearestEven);
    slfp::encode(ctx, da32.data(), dv.view(), Rounding::NearestEven);
    ctx.synchronize();
  }
  for (const slfp::Transpose op : {slfp::Transpose::No, slfp::Transpose::Yes}) {
    const std::int64_t nx = op == slfp::Transpose::No ? cols : rows, ny = op == slfp::Transpose::No ? rows : cols;
    std::vector<double> x(nx), y0(ny);
    for (double& v : x) v = u(rng);
    for (double& v : y0) v = u(rng);
    DeviceBuffer<double> dx(nx), dy(ny);
    dx.copy_from_host(x);
    dy.copy_from_host(y0);
    std::vector<double> expected = y0, got(ny);
    slfp::gemv(host, op, 0.75, slfp::Matrix{hv.view(), rows, cols, ld}, x.data(), 2.0, expected.data());
    slfp::gemv(ctx, op, 0.75, slfp::Matrix{dv.view(), rows, cols, ld}, dx.data(), 2.0, dy.data());
    ctx.synchronize();
    dy.copy_to_host(got.data(), ny);
    for (std::int64_t r = 0; r < ny; ++r)
      ASSERT_LE(std::fabs(got[r] - expected[r]), 2 * double(nx + 2) * 0x1p-53 * (0.75 * double(nx) + 2.0))
          << slfp::to_string(f) << (op == slfp::Transpose::No ? " N " : " T ") << rows << " x " << cols << " row " << r;
  }
}

TEST(GpuSlfp, DeviceGemvMatchesTheHost) {
  MIXSOLVE_REQUIRE_GPU();
  for (const Format f : slfp::all_formats()) {
    expect_device_gemv_matches_host(f, 200003, 7, 200006);  // value by value (ld not a multiple of 8)
    expect_device_gemv_matches_host(f, 200003, 7, 200008);  // tiles, and a rest of 67 rows
    expect_device_gemv_matches_host(f, 33, 1000, 40);       // wide, one tile-less chunk
    expect_device_gemv_matches_host(f, 0, 5, 1);            // y := beta y
  }
}

// Unit roundoff of RN into format f: 2^-(stored mantissa bits + 1).
double format_unit_roundoff(Format f) {
  const int exponent_bits = slfp::fp64_based(f) ? 11 : 8;
  return std::ldexp(1.0, -(slfp::container_bits(f) - exponent_bits));
}

// slfp::gemm against a long double product of the stored values (decoded), every format and
// transpose: C = alpha op(A) op(B) + beta C0 within (k + 2) u |alpha| |A||B| + 2 u |beta C0|, u the
// base type's unit roundoff; k past one panel; beta = 0 over NaN; rows between m and ldc kept.
template <class T>
void expect_gemm_is_the_product_of_the_stored_values(Format f, slfp::Transpose op_a, slfp::Transpose op_b,
                                                     std::int64_t m, std::int64_t n, std::int64_t k, double beta) {
  Context ctx;
  const bool ta = op_a == slfp::Transpose::Yes, tb = op_b == slfp::Transpose::Yes;
  const std::int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  const std::int64_t lda = a_rows + 3, ldb = b_rows + 1, ldc = m + 2;
  const std::int64_t a_size = (a_cols - 1) * lda + a_rows, b_size = (b_cols - 1) * ldb + b_rows;
  std::mt19937_64 rng(900 + int(f) + 7 * m + k);
  std::uniform_real_distribution<double> u(-1, 1);
  const auto random = [&](std::int64_t size) {
    std::vector<T> v(size);
    for (T& x : v) x = static_cast<T>(u(rng));
    return v;
  };
  const std::vector<T> a = random(a_size), b = random(b_size);
  std::vector<T> c0 = random(ldc * n);
  if (beta == 0)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) c0[i + j * ldc] = NAN;  // must not be read
  DeviceBuffer<T> da(a_size), db(b_size), dc(ldc * n), decoded_a(a_size), decoded_b(b_size);
  da.copy_from_host(a);
  db.copy_from_host(b);
  dc.copy_from_host(c0);
  Storage sa(f, a_size, Memory::Device), sb(f, b_size, Memory::Device);
  slfp::encode(ctx, da.data(), sa.view(), Rounding::NearestEven);
  slfp::encode(ctx, db.data(), sb.view(), Rounding::NearestEven);
  slfp::decode(ctx, sa.view(), decoded_a.data());
  slfp::decode(ctx, sb.view(), decoded_b.data());
  const T alpha = T(-1.5);
  slfp::gemm(ctx, op_a, op_b, alpha, slfp::Matrix{sa.view(), a_rows, a_cols, lda},
             slfp::Matrix{sb.view(), b_rows, b_cols, ldb}, T(beta), dc.data(), ldc);
  ctx.synchronize();
  const std::vector<T> as = decoded_a.to_host(), bs = decoded_b.to_host(), c = dc.to_host();
  const double unit = std::is_same_v<T, double> ? 0x1p-53 : 0x1p-24;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < ldc; ++i) {
      if (i >= m) {
        ASSERT_EQ(std::memcmp(&c[i + j * ldc], &c0[i + j * ldc], sizeof(T)), 0) << "row " << i << " past m changed";
        continue;
      }
      long double sum = 0, magnitude = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const long double x = as[ta ? l + i * lda : i + l * lda], y = bs[tb ? j + l * ldb : l + j * ldb];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const double c_old = beta == 0 ? 0.0 : double(c0[i + j * ldc]);
      const double expected = double(alpha * sum + beta * c_old);
      const double bound = double(k + 2) * unit * std::fabs(double(alpha)) * double(magnitude) +
                           2 * unit * std::fabs(beta * c_old) + 1e-300;
      ASSERT_LE(std::fabs(double(c[i + j * ldc]) - expected), bound)
          << slfp::to_string(f) << (ta ? " T" : " N") << (tb ? "T " : "N ") << m << " x " << n << " x " << k << " at ("
          << i << ", " << j << ")";
    }
}

TEST(GpuSlfp, GemmIsTheProductOfTheStoredValues) {
  MIXSOLVE_REQUIRE_GPU();
  struct Shape {
    std::int64_t m, n, k;
  };
  for (const Format f : slfp::all_formats())
    for (const auto op_a : {slfp::Transpose::No, slfp::Transpose::Yes})
      for (const auto op_b : {slfp::Transpose::No, slfp::Transpose::Yes})
        for (const Shape s : {Shape{37, 29, 1500}, Shape{1, 1, 1}, Shape{130, 3, 2049}})
          for (const double beta : {0.0, 0.5}) {
            if (slfp::fp64_based(f))
              expect_gemm_is_the_product_of_the_stored_values<double>(f, op_a, op_b, s.m, s.n, s.k, beta);
            else
              expect_gemm_is_the_product_of_the_stored_values<float>(f, op_a, op_b, s.m, s.n, s.k, beta);
          }
}

TEST(GpuSlfp, GemmRejectsBadArgumentsByName) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  Storage a(Format::Slfp64in32, 100, Memory::Device), b(Format::Slfp64in48, 100, Memory::Device);
  Storage host(Format::Slfp64in32, 100, Memory::Host);
  DeviceBuffer<double> c(100);
  const auto message = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const auto no = slfp::Transpose::No;
  EXPECT_NE(message([&] {
              slfp::gemm(ctx, no, no, 1.0, {a.view(), 10, 10, 10}, {b.view(), 10, 10, 10}, 0.0, c.data(), 10);
            }).find("slfp64in32b and b slfp64in48b"),
            std::string::npos);
  EXPECT_NE(message([&] {
              slfp::gemm(ctx, no, no, 1.0, {a.view(), 10, 10, 10}, {a.view(), 9, 10, 10}, 0.0, c.data(), 10);
            }).find("inner sizes differ"),
            std::string::npos);
  EXPECT_NE(message([&] {
              slfp::gemm(ctx, no, no, 1.0, {a.view(), 10, 10, 10}, {a.view(), 10, 10, 10}, 0.0, c.data(), 9);
            }).find("ldc (9)"),
            std::string::npos);
  EXPECT_NE(message([&] {
              slfp::gemm(ctx, no, no, 1.0f, {a.view(), 10, 10, 10}, {a.view(), 10, 10, 10}, 0.0f,
                         reinterpret_cast<float*>(c.data()), 10);
            }).find("not FP32-based"),
            std::string::npos);
  try {
    slfp::gemm(ctx, no, no, 1.0, {host.view(), 10, 10, 10}, {host.view(), 10, 10, 10}, 0.0, c.data(), 10);
    ADD_FAILURE() << "host operands accepted";
  } catch (const NotSupported& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
}

// The registry's slfp-64in<bits>b backends on FP64 data: the rounding of A and B (u of the format)
// and FP64 arithmetic, against a long double product of the unrounded data.
TEST(GpuSlfp, Fp64SlfpBackendsMatchTheLongDoubleProductWithinTheFormatsRounding) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  int tested = 0;
  for (const Format f : slfp::all_formats()) {
    if (!slfp::fp64_based(f) || f == Format::Fp64) continue;
    const std::string name = "slfp-" + std::string(slfp::to_string(f)).substr(4);
    const gemm::Backend& backend = gemm::find_backend(name);
    const double u = format_unit_roundoff(f);
    for (const gemm::Op oa : {gemm::Op::N, gemm::Op::T})
      for (const gemm::Op ob : {gemm::Op::N, gemm::Op::T}) {
        const std::int64_t m = 45, n = 31, k = 1100;
        const std::int64_t lda = (oa == gemm::Op::N ? m : k) + 1, ldb = (ob == gemm::Op::N ? k : n) + 2;
        std::vector<double> a(lda * (oa == gemm::Op::N ? k : m)), b(ldb * (ob == gemm::Op::N ? n : k)), c(m * n, NAN);
        std::mt19937_64 rng(3 * int(f) + int(oa) + 2 * int(ob));
        std::uniform_real_distribution<double> dist(-1, 1);
        for (double& v : a) v = std::ldexp(dist(rng), int(rng() % 40) - 20);
        for (double& v : b) v = dist(rng);
        DeviceBuffer<double> da(a.size()), db(b.size()), dc(c.size());
        da.copy_from_host(a);
        db.copy_from_host(b);
        dc.copy_from_host(c);
        backend.run(ctx,
                    gemm::GemmArgs<double>{oa, ob, m, n, k, 1.0, da.data(), lda, db.data(), ldb, 0.0, dc.data(), m});
        c = dc.to_host(ctx.stream());
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < m; ++i) {
            long double sum = 0, magnitude = 0;
            for (std::int64_t l = 0; l < k; ++l) {
              const long double x = a[oa == gemm::Op::N ? i + l * lda : l + i * lda];
              const long double y = b[ob == gemm::Op::N ? l + j * ldb : j + l * ldb];
              sum += x * y;
              magnitude += std::fabs(x * y);
            }
            const double bound = (2 * u + u * u + double(k + 2) * 0x1p-53) * double(magnitude);  // gamma_k analysis
            ASSERT_LE(std::fabs(c[i + j * m] - double(sum)), bound) << name << " (" << i << ", " << j << ")";
          }
      }
    ++tested;
  }
  EXPECT_EQ(tested, 6);
}

TEST(GpuSlfp, DeviceKernelsMatchTheHostKernels) {
  MIXSOLVE_REQUIRE_GPU();
  for (const Format f : slfp::all_formats()) {
    if (slfp::fp64_based(f))
      expect_device_kernels_match_host<double>(f);
    else
      expect_device_kernels_match_host<float>(f);
  }
}

}  // namespace
