// SPDX-License-Identifier: BSD-3-Clause
// Device conversions and splits agree bit for bit with the host implementations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/formats/split.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::formats;

struct DeviceResults {
  std::uint32_t half_bits, tf32_bits, hh_hi, hh_lo, mk_hi, mk_lo, t_hi, t_lo;
};

__global__ void convert_kernel(const float* in, DeviceResults* out, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float v = in[i];
  const HalfSplit hh = split_halfhalf(v), mk = split_markidis(v);
  const Tf32Split t = split_tf32tf32(v);
  out[i] = {float_to_half_bits_rn(v), float_to_tf32_bits_rna(v), hh.hi, hh.lo, mk.hi, mk.lo, t.hi, t.lo};
}

bool is_nan16(std::uint32_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
bool is_nan32(std::uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu); }
// Inf results must match bit for bit; NaN results only need to be NaN on both sides.

void expect_same16(std::uint32_t device, std::uint32_t host, float v, const char* what) {
  if (is_nan16(device) || is_nan16(host)) EXPECT_TRUE(is_nan16(device) && is_nan16(host)) << what << " of " << v;
  else EXPECT_EQ(device, host) << what << " of " << v;
}
void expect_same32(std::uint32_t device, std::uint32_t host, float v, const char* what) {
  if (is_nan32(device) || is_nan32(host))
    EXPECT_TRUE(is_nan32(device) && is_nan32(host)) << what << " of " << v << std::hex << " (input bits "
                                                    << formats::float_bits(v) << " device " << device << " host "
                                                    << host << ")";
  else EXPECT_EQ(device, host) << what << " of " << v << " (device " << std::hex << device << " host " << host << ")";
}

TEST(GpuFormats, DeviceConversionsAndSplitsMatchHostBitForBit) {
  MIXSOLVE_REQUIRE_GPU();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e30f,
                               std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                               std::numeric_limits<float>::denorm_min(), 0x1p-14f, 0x1p-24f, 0x1p-25f,
                               0x1.000002p-25f, 0x1.8p-25f, 0x1.ffep-15f, 0x1.001p0f, 0x1.003p0f,
                               0x1.0018p0f, 0x1.ffefp127f, 0x1.7ffp-130f, 0x1.001p-140f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()};
  std::mt19937 gen(99);
  for (int i = 0; i < (1 << 20); ++i) {
    std::uint32_t u = gen();
    float f;
    std::memcpy(&f, &u, 4);
    values.push_back(f);
  }
  for (int e = -30; e <= 17; ++e)  // dense around the FP16 range
    for (int i = 0; i < 2000; ++i)
      values.push_back(std::ldexp(1.0f + float(gen() & 0x7FFFFF) * 0x1p-23f, e) * (i & 1 ? -1.0f : 1.0f));
  const int count = int(values.size());
  DeviceBuffer<float> in(count);
  DeviceBuffer<DeviceResults> out(count);
  in.copy_from_host(values);
  convert_kernel<<<(count + 255) / 256, 256>>>(in.data(), out.data(), count);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<DeviceResults> got = out.to_host();
  int failures = 0;
  for (int i = 0; i < count && failures < 20; ++i) {
    const float v = values[i];
    const HalfSplit hh = split_halfhalf(v), mk = split_markidis(v);
    const Tf32Split t = split_tf32tf32(v);
    const DeviceResults& d = got[i];
    const int before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    expect_same16(d.half_bits, float_to_half_bits_rn(v), v, "fp16");
    expect_same32(d.tf32_bits, float_to_tf32_bits_rna(v), v, "tf32");
    expect_same16(d.hh_hi, hh.hi, v, "halfhalf hi");
    expect_same16(d.hh_lo, hh.lo, v, "halfhalf lo");
    expect_same16(d.mk_hi, mk.hi, v, "markidis hi");
    expect_same16(d.mk_lo, mk.lo, v, "markidis lo");
    expect_same32(d.t_hi, t.hi, v, "tf32tf32 hi");
    expect_same32(d.t_lo, t.lo, v, "tf32tf32 lo");
    if (::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() != before) ++failures;
  }
}

}  // namespace
