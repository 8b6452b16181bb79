// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme with BF16 or FP16 slices (ozaki_slices.hpp, Niimi 2025) on the host:
// host-ozaki-bf16 and host-ozaki-fp16, parameters slices and d (fast mode).
#include "mixsolve/gemm/ozaki_slices.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "finite_vectors.hpp"
#include "../ozaki_slice_split.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"

namespace mixsolve::gemm {

int ozaki_slices_rho(int significand_bits, std::int64_t k) {
  int log2_k = 0;
  while ((std::int64_t{1} << log2_k) < k) ++log2_k;
  // gamma = ceil(53 - (24 - log2 k) / 2) = 53 - floor((24 - log2 k) / 2).
  const int room = 24 - log2_k;
  const int gamma = 53 - (room >= 0 ? room / 2 : -((-room + 1) / 2));
  return std::max(gamma, 53 - significand_bits);
}

int ozaki_slice_bits(int significand_bits, std::int64_t k) {
  const int bits = 53 - ozaki_slices_rho(significand_bits, k);
  if (bits < 1)
    throw InvalidArgument("ozaki slices: k (" + std::to_string(k) +
                          ") leaves no bit per slice for exact FP32 accumulation (2 bits + log2 k <= 24)");
  return bits;
}

namespace {

// One operand's slices: slice p of vector v, element l, at value[p][v k + l] (a multiple of
// 2^-bits in [-1, 1], exact in the slice format), scaled by 2^exponent[p][v].
struct Slices {
  std::vector<std::vector<double>> value;
  std::vector<std::vector<int>> exponent;
};

// fused: every slice's exponent from the vector's largest |value| (ozaki_slices.hpp), else each
// slice's own (Niimi 2025, eq. (1)). Each vector is first scaled by 2^-c_0, c_0 = ceil(log2 max |x|),
// so that sigma stays in range for any finite input (2^(rho + c) would overflow from |x| ~ 2^978)
// and the slices' grids stay normal for tiny ones; a power of two changes no bit of a slice, and
// what underflows in the scaling lies far below the last slice's grid.
Slices slice(const double* x, std::int64_t vectors, std::int64_t k, std::int64_t vector_stride,
             std::int64_t element_stride, int count, int rho, bool fused) {
  Slices out;
  out.value.assign(count, std::vector<double>(vectors * k, 0.0));
  out.exponent.assign(count, std::vector<int>(vectors, 0));
  std::vector<double> r(k);
  for (std::int64_t v = 0; v < vectors; ++v) {
    double largest = 0;
    for (std::int64_t l = 0; l < k; ++l) largest = std::fmax(largest, std::fabs(x[v * vector_stride + l * element_stride]));
    if (largest == 0) continue;  // a zero vector: its slices stay 0
    const int first = formats::ceil_log2(largest);
    for (std::int64_t l = 0; l < k; ++l) r[l] = std::ldexp(x[v * vector_stride + l * element_stride], -first);
    for (int p = 0; p < count; ++p) {
      int c = -p * (54 - rho);  // fused: c_0 - p (b + 1), relative to c_0
      if (!fused) {
        double mu = 0;
        for (std::int64_t l = 0; l < k; ++l) mu = std::fmax(mu, std::fabs(r[l]));
        if (mu == 0) break;  // the rest of the slices stay 0
        c = formats::ceil_log2(mu);  // Niimi (2025) eq. (1)
      }
      out.exponent[p][v] = first + c;
      for (std::int64_t l = 0; l < k; ++l) out.value[p][v * k + l] = detail::take_ozaki_slice(r[l], rho, c);
    }
  }
  return out;
}

class HostOzakiSlices final : public Backend {
 public:
  HostOzakiSlices(const char* format, int significand_bits) : format_(format), significand_bits_(significand_bits) {}
  std::string name() const override { return std::string("host-ozaki-") + format_; }
  std::string description() const override {
    return std::string("host DGEMM emulated with ") + format_ +
           " slices whose products are exact in FP32 (Ozaki scheme, Niimi 2025), parameters slices and d (fast mode)";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }
  std::vector<ParameterSpec> parameters() const override {
    return {{"slices", "slices of each operand; 0: one more than 53 bits need", 0, kOzakiMaxSlices, 0},
            {"d", "fast mode: only slice pairs p + q < d (0-based); 0: every pair", 0, 2 * kOzakiMaxSlices, 0},
            {"fused", "1: the fused split, every slice's exponent from the vector's largest |value| (as the "
                      "device backends); 0: each slice's own",
             0, 1, 0}};
  }

 protected:
  std::int64_t inner_size_limit() const override { return std::int64_t{1} << 22; }
  void run_problem(Context&, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const int bits = ozaki_slice_bits(significand_bits_, k), rho = 53 - bits;
    const std::int64_t asked = parameter_value(parameters, "slices"), d = parameter_value(parameters, "d");
    const int count = asked > 0 ? int(asked) : std::min(kOzakiMaxSlices, (53 + bits - 1) / bits + 1);
    const double* a = static_cast<const double*>(p.a.data);
    const double* b = static_cast<const double*>(p.b.data);
    detail::require_finite_vectors(name(), a, m, k, p.a.op == Op::N ? 1 : p.a.ld, p.a.op == Op::N ? p.a.ld : 1, "A");
    detail::require_finite_vectors(name(), b, n, k, p.b.op == Op::N ? p.b.ld : 1, p.b.op == Op::N ? 1 : p.b.ld, "B");
    const bool fused = parameter_value(parameters, "fused") != 0;
    const Slices sa = slice(a, m, k, p.a.op == Op::N ? 1 : p.a.ld, p.a.op == Op::N ? p.a.ld : 1, count, rho, fused);
    const Slices sb = slice(b, n, k, p.b.op == Op::N ? p.b.ld : 1, p.b.op == Op::N ? 1 : p.b.ld, count, rho, fused);
    std::vector<double> sum(m * n, 0.0);
    for (int pa = 0; pa < count; ++pa)
      for (int pb = 0; pb < count; ++pb) {
        if (d > 0 && pa + pb >= d) continue;  // fast mode
        const std::vector<double>& x = sa.value[pa];
        const std::vector<double>& y = sb.value[pb];
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < m; ++i) {
            double dot = 0;  // exact: what FP32 accumulates without error (eq. (11))
            for (std::int64_t l = 0; l < k; ++l) dot += x[i * k + l] * y[j * k + l];
            sum[i + j * m] += std::ldexp(dot, sa.exponent[pa][i] + sb.exponent[pb][j]);  // eq. (10)
          }
      }
    double* c = static_cast<double*>(p.c.data);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        double& cij = c[i + j * p.c.ld];
        // Rounded operation by operation, as the device backends round them (no contraction).
        const double scaled = detail::mul_rn(p.alpha, sum[i + j * m]);
        cij = p.beta == 0 ? scaled : detail::add_rn(scaled, detail::mul_rn(p.beta, cij));
      }
  }

 private:
  const char* format_;
  int significand_bits_;
};

}  // namespace

void add_host_ozaki_slice_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<HostOzakiSlices>("bf16", 8));
  out.push_back(std::make_unique<HostOzakiSlices>("fp16", 11));
}

}  // namespace mixsolve::gemm
