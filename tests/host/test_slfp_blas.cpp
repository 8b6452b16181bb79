// SPDX-License-Identifier: BSD-3-Clause
// SLFP kernels on host vectors (slfp/blas.hpp): conversions and AXPY bit for bit against the
// formats' own rounding, DOT against a long double sum within its error bound, for every format
// and both roundings; bad arguments named in the error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mixsolve/core/error.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::slfp;

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
  return v;
}

// The format's rounding of v, through the tag types of formats/slfp.hpp.
template <class T>
T reference_round(Format f, T v, Rounding r) {
  const bool rn = r == Rounding::NearestEven;
  const auto round = [&](auto format) -> T {
    using F = decltype(format);
    return rn ? T(F::template round<Rounding::NearestEven>(v)) : T(F::template round<Rounding::TowardZero>(v));
  };
  switch (f) {
    case Format::Slfp64in56: return round(formats::Slfp64in56{});
    case Format::Slfp64in48: return round(formats::Slfp64in48{});
    case Format::Slfp64in40: return round(formats::Slfp64in40{});
    case Format::Slfp64in32: return round(formats::Slfp64in32{});
    case Format::Slfp64in24: return round(formats::Slfp64in24{});
    case Format::Slfp64in16: return round(formats::Slfp64in16{});
    case Format::Slfp32in24: return round(formats::Slfp32in24{});
    case Format::Slfp32in16: return round(formats::Slfp32in16{});
    case Format::Fp64:
    case Format::Fp32: return v;
  }
  return v;
}

template <class T>
void expect_kernels_match(Format f) {
  Context ctx = Context::host_only();
  const std::int64_t n = 1001;
  const std::vector<T> x0 = random_values<T>(n, 1 + int(f)), y0 = random_values<T>(n, 100 + int(f));
  for (const Rounding r : {Rounding::NearestEven, Rounding::TowardZero}) {
    const char* rname = r == Rounding::NearestEven ? "RN" : "RZ";
    Storage xs(f, n, Memory::Host), ys(f, n, Memory::Host);
    encode(ctx, x0.data(), xs.view(), r);
    encode(ctx, y0.data(), ys.view(), r);
    std::vector<T> x(n), y(n);
    decode(ctx, xs.view(), x.data());
    decode(ctx, ys.view(), y.data());
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(x[i], reference_round(f, x0[i], r)) << to_string(f) << " " << rname << " encode/decode " << i;
      ASSERT_EQ(y[i], reference_round(f, y0[i], r)) << to_string(f) << " " << rname;
    }
    const double alpha = -0.7;
    axpy(ctx, alpha, xs.view(), ys.view(), r);
    std::vector<T> got(n);
    decode(ctx, ys.view(), got.data());
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], reference_round(f, T(std::fma(T(alpha), x[i], y[i])), r))
          << to_string(f) << " " << rname << " axpy " << i;
    // DOT sums in FP64: within n u sum |x_i y_i| of the exact sum (long double as the reference,
    // 11 bits more than FP64).
    long double exact = 0, magnitude = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      exact += static_cast<long double>(x[i]) * static_cast<long double>(got[i]);
      magnitude += std::fabs(static_cast<long double>(x[i]) * static_cast<long double>(got[i]));
    }
    const double d = dot(ctx, xs.view(), ys.view());
    EXPECT_LE(std::fabs(static_cast<long double>(d) - exact), double(n) * 0x1p-53 * magnitude) << to_string(f);
  }
}

TEST(SlfpBlas, HostKernelsMatchTheFormatsRoundingForEveryFormat) {
  for (const Format f : all_formats()) {
    if (fp64_based(f))
      expect_kernels_match<double>(f);
    else
      expect_kernels_match<float>(f);
  }
}

TEST(SlfpBlas, FormatsHaveTheirNamesAndSizes) {
  for (const Format f : all_formats()) EXPECT_EQ(parse_format(to_string(f)), f);
  EXPECT_EQ(container_bits(Format::Slfp64in48), 48);
  EXPECT_TRUE(single_word(Format::Slfp64in32));
  EXPECT_FALSE(single_word(Format::Slfp64in56));
  EXPECT_EQ(unit_roundoff(Format::Fp64), 0x1p-53);
  EXPECT_EQ(unit_roundoff(Format::Slfp64in32), 0x1p-21);
  EXPECT_EQ(unit_roundoff(Format::Slfp64in16), 0x1p-5);
  EXPECT_EQ(unit_roundoff(Format::Fp32), 0x1p-24);
  EXPECT_EQ(unit_roundoff(Format::Slfp32in24), 0x1p-16);
  try {
    parse_format("slfp64in12b");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("slfp64in12b"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("slfp32in16b"), std::string::npos);
  }
  Storage s(Format::Slfp64in40, 10, Memory::Host);
  EXPECT_EQ(s.bytes(), 50);
  EXPECT_NE(s.view().w32, nullptr);
  EXPECT_EQ(s.view().w16, nullptr);
  EXPECT_NE(s.view().w8, nullptr);
  const Vector tail = subvector(s.view(), 3, 7);
  EXPECT_EQ(tail.size, 7);
  EXPECT_EQ(tail.w32, s.view().w32 + 3);
  EXPECT_EQ(tail.w8, s.view().w8 + 3);
  EXPECT_EQ(tail.w16, nullptr);
  EXPECT_THROW(subvector(s.view(), 4, 7), InvalidArgument);
  EXPECT_THROW(subvector(s.view(), -1, 2), InvalidArgument);
}

// GEMV with A in every format, both transposes, ld > rows, beta 0 over NaN (y not read) and
// beta != 0: against a long double product of the widened A, within the FP64 dot bound.
TEST(SlfpBlas, HostGemvMatchesALongDoubleProduct) {
  Context ctx = Context::host_only();
  const std::int64_t rows = 301, cols = 17, ld = 305;
  for (const Format f : all_formats()) {
    Storage values(f, (cols - 1) * ld + rows, Memory::Host);
    std::vector<double> a64(values.view().size);
    std::mt19937_64 rng(40 + int(f));
    std::uniform_real_distribution<double> u(-1, 1);
    for (double& v : a64) v = u(rng);
    std::vector<double> widened(a64.size());
    if (fp64_based(f)) {
      encode(ctx, a64.data(), values.view(), Rounding::NearestEven);
      decode(ctx, values.view(), widened.data());
    } else {
      std::vector<float> a32(a64.begin(), a64.end()), w32(a64.size());
      encode(ctx, a32.data(), values.view(), Rounding::NearestEven);
      decode(ctx, values.view(), w32.data());
      widened.assign(w32.begin(), w32.end());
    }
    const Matrix a{values.view(), rows, cols, ld};
    for (const Transpose op : {Transpose::No, Transpose::Yes}) {
      const std::int64_t nx = op == Transpose::No ? cols : rows, ny = op == Transpose::No ? rows : cols;
      std::vector<double> x(nx), y0(ny);
      for (double& v : x) v = u(rng);
      for (double& v : y0) v = u(rng);
      for (const double beta : {0.0, -0.5}) {
        std::vector<double> y = beta == 0.0 ? std::vector<double>(ny, NAN) : y0;
        gemv(ctx, op, 1.5, a, x.data(), beta, y.data());
        for (std::int64_t r = 0; r < ny; ++r) {
          long double exact = 0, magnitude = 0;
          for (std::int64_t q = 0; q < nx; ++q) {
            const long double aq = op == Transpose::No ? widened[r + q * ld] : widened[q + r * ld];
            exact += aq * x[q];
            magnitude += std::fabs(aq * x[q]);
          }
          exact = 1.5L * exact + beta * y0[r];
          magnitude = 1.5L * magnitude + std::fabs(beta * y0[r]);
          ASSERT_LE(std::fabs(y[r] - exact), double(nx + 2) * 0x1p-53 * magnitude)
              << to_string(f) << (op == Transpose::No ? " N" : " T") << " beta " << beta << " row " << r;
        }
      }
    }
  }
  // Bad arguments are named.
  Storage s(Format::Slfp64in32, 100, Memory::Host);
  std::vector<double> x(100), y(100);
  const auto message = [&](const Matrix& m) {
    try {
      gemv(ctx, Transpose::No, 1, m, x.data(), 0, y.data());
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(Matrix{s.view(), 10, 10, 9}).find("a.ld (9)"), std::string::npos);
  EXPECT_NE(message(Matrix{s.view(), 20, 10, 20}).find("a.values.size (100)"), std::string::npos);
  EXPECT_NE(message(Matrix{s.view(), -1, 10, 20}).find("-1 x 10"), std::string::npos);
}

// Each bad argument gives InvalidArgument whose message names it (and its value where it has one).
TEST(SlfpBlas, BadArgumentsAreNamed) {
  Context ctx = Context::host_only();
  Storage a(Format::Slfp64in48, 16, Memory::Host), b(Format::Slfp64in48, 16, Memory::Host);
  const auto expect_error = [](auto&& call, const std::string& needle) {
    try {
      call();
      ADD_FAILURE() << "expected InvalidArgument mentioning " << needle;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Vector negative = a.view();
  negative.size = -3;
  expect_error([&] { axpy(ctx, 1.0, negative, b.view(), Rounding::NearestEven); }, "x.size (-3)");
  Vector null_plane = a.view();
  null_plane.w16 = nullptr;
  expect_error([&] { axpy(ctx, 1.0, null_plane, b.view(), Rounding::NearestEven); }, "x.w16 of slfp64in48b is null");
  Vector misaligned = b.view();
  misaligned.w32 = reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(misaligned.w32) + 2);
  expect_error([&] { dot(ctx, a.view(), misaligned); }, "y.w32 of slfp64in48b");
  expect_error([&] { dot(ctx, a.view(), misaligned); }, "4-byte words");
  Storage other(Format::Slfp64in32, 16, Memory::Host);
  expect_error([&] { dot(ctx, a.view(), other.view()); }, "slfp64in32b");
  Storage shorter(Format::Slfp64in48, 15, Memory::Host);
  expect_error([&] { dot(ctx, a.view(), shorter.view()); }, "x.size (16) differs from y.size (15)");
  const std::vector<float> floats(16);
  expect_error([&] { encode(ctx, floats.data(), a.view(), Rounding::NearestEven); }, "FP32");
  expect_error([&] { encode(ctx, static_cast<const double*>(nullptr), a.view(), Rounding::NearestEven); }, "x is null");
  Vector on_device = a.view();
  on_device.memory = Memory::Device;
  expect_error([&] { decode(ctx, on_device, static_cast<double*>(nullptr)); }, "the Context has no GPU");
  expect_error([&] { Storage bad(Format::Fp64, -1, Memory::Host); }, "size (-1)");
  // Inputs stay as they were: a failed call writes nothing.
  const std::vector<double> values(16, 1.5);
  encode(ctx, values.data(), b.view(), Rounding::NearestEven);
  expect_error([&] { axpy(ctx, 2.0, negative, b.view(), Rounding::NearestEven); }, "negative");
  std::vector<double> after(16);
  decode(ctx, b.view(), after.data());
  EXPECT_EQ(after, values);
}

}  // namespace
