// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme II with INT8 moduli (ozaki_int8.hpp) on the host: host-ozaki2-int8, exact
// integer arithmetic throughout (INT32 products, the CRT in 128-bit integers).
#include "mixsolve/gemm/ozaki_int8.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"

namespace mixsolve::gemm {

using Int128 = __int128;

const std::vector<int>& ozaki2_moduli() {
  static const std::vector<int> moduli = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                                          223, 217, 211, 199, 197, 193, 191, 181, 179, 173};
  return moduli;
}

namespace {

Int128 product_of_moduli(int count) {
  Int128 m = 1;
  for (int i = 0; i < count; ++i) m *= ozaki2_moduli()[i];
  return m;
}

int floor_log2(Int128 x) {
  int e = -1;
  while (x > 0) {
    x >>= 1;
    ++e;
  }
  return e;
}

// x mod m in [0, m) for any sign of x.
std::int64_t positive_mod(std::int64_t x, std::int64_t m) {
  const std::int64_t r = x % m;
  return r < 0 ? r + m : r;
}

// The inverse of a modulo m (a and m coprime), by the extended Euclidean algorithm.
std::int64_t inverse_mod(std::int64_t a, std::int64_t m) {
  std::int64_t t = 0, new_t = 1, r = m, new_r = positive_mod(a, m);
  while (new_r != 0) {
    const std::int64_t q = r / new_r;
    std::int64_t tmp = t - q * new_t;
    t = new_t;
    new_t = tmp;
    tmp = r - q * new_r;
    r = new_r;
    new_r = tmp;
  }
  return positive_mod(t, m);
}

}  // namespace

int ozaki2_operand_bits(int moduli, std::int64_t k) {
  if (moduli < kOzaki2MinModuli || moduli > kOzaki2MaxModuli)
    throw InvalidArgument("ozaki2: moduli (" + std::to_string(moduli) + ") outside [" +
                          std::to_string(kOzaki2MinModuli) + ", " + std::to_string(kOzaki2MaxModuli) + "]");
  if (k < 1 || k > kOzaki2MaxK)
    throw InvalidArgument("ozaki2: k (" + std::to_string(k) + ") outside [1, " + std::to_string(kOzaki2MaxK) + "]");
  int log2_k = 0;
  while ((std::int64_t{1} << log2_k) < k) ++log2_k;
  // floor(log2(M / 2)) = floor(log2 M) - 1; then k 2^(2b) <= 2^floor(log2(M / 2)) <= M / 2.
  const int bits = (floor_log2(product_of_moduli(moduli)) - 1 - log2_k) / 2;
  return bits > 0 ? bits : 0;
}

namespace {

// host-ozaki2-int8: FP64 data on the host; parameter moduli.
class HostOzaki2Int8 final : public Backend {
 public:
  std::string name() const override { return "host-ozaki2-int8"; }
  std::string description() const override {
    return "host DGEMM emulated with INT8 products modulo N coprime moduli and the CRT (Ozaki scheme II), "
           "parameter moduli";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }
  std::vector<ParameterSpec> parameters() const override {
    return {{"moduli", "coprime INT8 moduli: each keeps about 4 more bits of A and of B", kOzaki2MinModuli,
             kOzaki2MaxModuli, kOzaki2MaxModuli}};
  }

 protected:
  std::int64_t inner_size_limit() const override { return kOzaki2MaxK; }
  void run_problem(Context&, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const int moduli = int(parameter_value(parameters, "moduli"));
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const int bits = ozaki2_operand_bits(moduli, k);
    const double* a = static_cast<const double*>(p.a.data);
    const double* b = static_cast<const double*>(p.b.data);
    // Rows of op(A) and columns of op(B) as vectors of length k, rounded to b-bit integers.
    std::vector<int> a_shift, b_shift;
    const std::vector<std::int64_t> ai = to_integers(a, m, k, p.a.op == Op::N ? 1 : p.a.ld,
                                                     p.a.op == Op::N ? p.a.ld : 1, bits, a_shift, "A");
    const std::vector<std::int64_t> bi = to_integers(b, n, k, p.b.op == Op::N ? p.b.ld : 1,
                                                     p.b.op == Op::N ? 1 : p.b.ld, bits, b_shift, "B");
    const Int128 big_m = product_of_moduli(moduli);
    std::vector<Int128> sum(m * n, 0);  // sum_i residue_i w_i mod M, w_i = (M / m_i) ((M / m_i)^-1 mod m_i)
    std::vector<std::int8_t> ar(m * k), br(n * k);
    for (int t = 0; t < moduli; ++t) {
      const std::int64_t mod = ozaki2_moduli()[t];
      for (std::size_t x = 0; x < ai.size(); ++x) ar[x] = symmetric_residue(ai[x], mod);
      for (std::size_t x = 0; x < bi.size(); ++x) br[x] = symmetric_residue(bi[x], mod);
      const Int128 cofactor = big_m / mod;
      const Int128 weight = cofactor * inverse_mod(std::int64_t(cofactor % mod), mod);  // < M
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
          std::int32_t dot = 0;  // exact: k 128^2 < 2^31
          for (std::int64_t l = 0; l < k; ++l) dot += std::int32_t(ar[i * k + l]) * std::int32_t(br[j * k + l]);
          Int128& s = sum[i + j * m];
          s = (s + weight * positive_mod(dot, mod)) % big_m;  // weight * residue < 2^126
        }
    }
    double* c = static_cast<double*>(p.c.data);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        Int128 exact = sum[i + j * m];  // A'B' mod M in [0, M); A'B' itself lies in [-M/2, M/2]
        if (exact > big_m / 2) exact -= big_m;
        const double ab = std::ldexp(static_cast<double>(exact), -(a_shift[i] + b_shift[j]));
        double& cij = c[i + j * p.c.ld];
        cij = p.beta == 0 ? p.alpha * ab : p.alpha * ab + p.beta * cij;
      }
  }

 private:
  static std::int8_t symmetric_residue(std::int64_t x, std::int64_t mod) {
    std::int64_t r = positive_mod(x, mod);
    if (r >= (mod + 1) / 2) r -= mod;  // [-128, 127] for mod = 256, [-(m-1)/2, (m-1)/2] for odd m
    return static_cast<std::int8_t>(r);
  }

  // Vector v (element l at x[v vector_stride + l element_stride]) times 2^shift[v], rounded to
  // nearest integers of magnitude <= 2^bits: shift = bits - ceil(log2 max |x_v|). Vector-major.
  std::vector<std::int64_t> to_integers(const double* x, std::int64_t vectors, std::int64_t k,
                                        std::int64_t vector_stride, std::int64_t element_stride, int bits,
                                        std::vector<int>& shift, const char* operand) const {
    std::vector<std::int64_t> out(vectors * k);
    shift.assign(vectors, 0);
    for (std::int64_t v = 0; v < vectors; ++v) {
      double largest = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const double value = x[v * vector_stride + l * element_stride];
        if (!std::isfinite(value))
          throw RangeError("gemm(" + name() + "): " + operand + " holds NaN or Inf (element " + std::to_string(l) +
                           " of " + (operand[0] == 'A' ? "row " : "column ") + std::to_string(v) +
                           "); the scheme represents finite values only: use host-fp64");
        largest = std::fmax(largest, std::fabs(value));
      }
      shift[v] = largest > 0 ? bits - formats::ceil_log2(largest) : 0;
      for (std::int64_t l = 0; l < k; ++l)
        out[v * k + l] = std::llrint(std::ldexp(x[v * vector_stride + l * element_stride], shift[v]));
    }
    return out;
  }
};

}  // namespace

void add_host_ozaki2_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<HostOzaki2Int8>());
}

}  // namespace mixsolve::gemm
