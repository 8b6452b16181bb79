// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme with FP32 splits (ozaki_fp32.hpp): the host split that the device matches bit
// for bit, the list of products, and the host backend host-ozaki-fp32.
#include "mixsolve/gemm/ozaki_fp32.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "finite_vectors.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace mixsolve::gemm {

namespace {

void require_splits(int splits) {
  if (splits < kOzakiFp32MinSplits || splits > kOzakiFp32MaxSplits)
    throw InvalidArgument("ozaki-fp32: splits (" + std::to_string(splits) + ") outside [" +
                          std::to_string(kOzakiFp32MinSplits) + ", " + std::to_string(kOzakiFp32MaxSplits) + "]");
}

}  // namespace

OzakiFp32Operand ozaki_fp32_split(std::int64_t vectors, std::int64_t k, const double* x, std::int64_t vector_stride,
                                  std::int64_t element_stride, int splits) {
  require_splits(splits);
  if (k < 1) throw InvalidArgument("ozaki_fp32_split: k (" + std::to_string(k) + ") must be >= 1");
  if (k > kOzakiFp32MaxK)
    throw InvalidArgument("ozaki_fp32_split: k (" + std::to_string(k) + ") exceeds " + std::to_string(kOzakiFp32MaxK) +
                          " (eq. (5) needs 2 alpha + log2 k <= 24 with alpha >= 1)");
  OzakiFp32Operand out;
  out.splits = splits;
  out.vectors = vectors;
  out.k = k;
  out.high.assign(splits - 1, std::vector<float>(vectors * k));
  out.remainder.assign(splits, std::vector<float>(vectors * k));
  out.exponent.assign(vectors, 0);
  const int beta = formats::ozaki_fp32_beta(k);
  std::vector<double> r(k);
  for (std::int64_t v = 0; v < vectors; ++v) {
    double largest = 0;
    for (std::int64_t l = 0; l < k; ++l) largest = std::fmax(largest, std::fabs(x[v * vector_stride + l * element_stride]));
    const int e = largest > 0 ? formats::ceil_log2(largest) : 0;
    out.exponent[v] = e;
    for (std::int64_t l = 0; l < k; ++l) {
      r[l] = std::ldexp(x[v * vector_stride + l * element_stride], -e);
      out.remainder[0][v * k + l] = static_cast<float>(r[l]);
    }
    for (int p = 0; p + 1 < splits; ++p) {
      double mu = 0;  // Nanai & Fujimoto (2021) Algorithm 2 lines 2-3, on the current remainder
      for (std::int64_t l = 0; l < k; ++l) mu = std::fmax(mu, std::fabs(r[l]));
      // mu == 0: every later part is 0 (the vectors' entries already assigned are exact).
      const float sigma = mu > 0 ? std::ldexp(1.0f, formats::ceil_log2(mu) + beta) : 0.0f;
      for (std::int64_t l = 0; l < k; ++l) {
        const float high = mu > 0 ? formats::ozaki_high_part(r[l], sigma) : 0.0f;
        out.high[p][v * k + l] = high;
        r[l] -= static_cast<double>(high);  // exact: r and high share sigma's grid above 2^-alpha mu
        out.remainder[p + 1][v * k + l] = static_cast<float>(r[l]);
      }
    }
  }
  return out;
}

std::vector<OzakiFp32Product> ozaki_fp32_products(int splits) {
  require_splits(splits);
  std::vector<OzakiFp32Product> products;
  for (int p = 1; p < splits; ++p)
    for (int q = 1; p + q <= splits; ++q) products.push_back({true, p, true, q});
  for (int p = 1; p < splits; ++p) products.push_back({true, p, false, splits - p + 1});
  products.push_back({false, splits, false, 1});
  return products;
}

namespace {

// host-ozaki-fp32: FP64 data on the host, the split above and host SGEMM (Eigen) products.
class HostOzakiFp32 final : public Backend {
 public:
  std::string name() const override { return "host-ozaki-fp32"; }
  std::string description() const override {
    return "host DGEMM emulated with FP32 splits and SGEMM products (Ozaki scheme, Nanai & Fujimoto 2021), "
           "parameter splits";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }
  std::vector<ParameterSpec> parameters() const override {
    return {{"splits", "FP32 parts of each operand (s (s + 1) / 2 SGEMMs)", kOzakiFp32MinSplits, kOzakiFp32MaxSplits,
             kOzakiFp32MaxSplits}};
  }

 protected:
  std::int64_t inner_size_limit() const override { return kOzakiFp32MaxK; }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const int splits = int(parameter_value(parameters, "splits"));
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const double* a = static_cast<const double*>(p.a.data);
    const double* b = static_cast<const double*>(p.b.data);
    detail::require_finite_vectors(name(), a, m, k, p.a.op == Op::N ? 1 : p.a.ld, p.a.op == Op::N ? p.a.ld : 1, "A");
    detail::require_finite_vectors(name(), b, n, k, p.b.op == Op::N ? p.b.ld : 1, p.b.op == Op::N ? 1 : p.b.ld, "B");
    // Rows of op(A) and columns of op(B) as vectors of length k.
    const OzakiFp32Operand sa = ozaki_fp32_split(m, k, a, p.a.op == Op::N ? 1 : p.a.ld, p.a.op == Op::N ? p.a.ld : 1,
                                                 splits);
    const OzakiFp32Operand sb = ozaki_fp32_split(n, k, b, p.b.op == Op::N ? p.b.ld : 1, p.b.op == Op::N ? 1 : p.b.ld,
                                                 splits);
    const Backend& sgemm = find_backend("host-fp32");
    std::vector<double> sum(m * n, 0.0);
    std::vector<float> product(m * n);
    for (const OzakiFp32Product& term : ozaki_fp32_products(splits)) {
      const std::vector<float>& pa = term.a_high ? sa.high[term.a_index - 1] : sa.remainder[term.a_index - 1];
      const std::vector<float>& pb = term.b_high ? sb.high[term.b_index - 1] : sb.remainder[term.b_index - 1];
      // A's planes hold rows of op(A): op(A) = plane^T.
      sgemm.run(ctx, GemmArgs<float>{Op::T, Op::N, m, n, k, 1.0f, pa.data(), k, pb.data(), k, 0.0f, product.data(), m});
      for (std::int64_t i = 0; i < m * n; ++i) sum[i] += product[i];
    }
    double* c = static_cast<double*>(p.c.data);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        double& cij = c[i + j * p.c.ld];
        const double ab = std::ldexp(sum[i + j * m], sa.exponent[i] + sb.exponent[j]);  // undoes the scaling
        cij = p.beta == 0 ? p.alpha * ab : p.alpha * ab + p.beta * cij;
      }
  }
};

}  // namespace

void add_host_ozaki_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<HostOzakiFp32>());
}

}  // namespace mixsolve::gemm
