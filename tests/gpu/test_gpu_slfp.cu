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
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/formats/slfp.hpp"
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
        mixsolve::slfp::Vector s = v;
        s.size -= offset;
        if (s.w32) s.w32 += offset;
        if (s.w16) s.w16 += offset;
        if (s.w8) s.w8 += offset;
        if (s.f64) s.f64 += offset;
        if (s.f32) s.f32 += offset;
        return s;
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
