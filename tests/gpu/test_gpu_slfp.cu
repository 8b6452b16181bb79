// SPDX-License-Identifier: BSD-3-Clause
// SLFP encodings (formats/slfp.hpp) give the same bits on the device as on the host, for every
// format and both roundings, on random bit patterns of the base format (every exponent,
// subnormals, Inf, NaN) and on the word planes of SlfpVector.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/formats/slfp.hpp"

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
