// SPDX-License-Identifier: BSD-3-Clause
// The Ozaki scheme II with INT8 moduli (ozaki_int8.hpp) on the host: host-ozaki2-int8. INT32
// products, exact; the CRT by exact limb sums and a double-double sum (ozaki2_crt.hpp), as the
// device backend computes it.
#include "mixsolve/gemm/ozaki_int8.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "../ozaki2_crt.hpp"
#include "finite_vectors.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"

namespace mixsolve::gemm {

const std::vector<int>& ozaki2_moduli() {
  static const std::vector<int> moduli = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                                          223, 217, 211, 199, 197, 193, 191, 181, 179, 173};
  return moduli;
}

namespace {

// Natural numbers as little-endian base-2^32 limbs, for M and the CRT weights (up to 2^156).
using Natural = std::vector<std::uint32_t>;

Natural times(const Natural& x, std::uint32_t factor) {
  Natural out;
  std::uint64_t carry = 0;
  for (const std::uint32_t limb : x) {
    const std::uint64_t v = std::uint64_t(limb) * factor + carry;
    out.push_back(std::uint32_t(v));
    carry = v >> 32;
  }
  if (carry) out.push_back(std::uint32_t(carry));
  return out;
}

// x / divisor, exact (divisor divides x).
Natural divided(const Natural& x, std::uint32_t divisor) {
  Natural out(x.size());
  std::uint64_t remainder = 0;
  for (std::size_t i = x.size(); i-- > 0;) {
    const std::uint64_t v = (remainder << 32) | x[i];
    out[i] = std::uint32_t(v / divisor);
    remainder = v % divisor;
  }
  while (out.size() > 1 && out.back() == 0) out.pop_back();
  return out;
}

std::uint32_t remainder_of(const Natural& x, std::uint32_t divisor) {
  std::uint64_t remainder = 0;
  for (std::size_t i = x.size(); i-- > 0;) remainder = ((remainder << 32) | x[i]) % divisor;
  return std::uint32_t(remainder);
}

// Bits [from, from + count) of x, count <= 64.
std::uint64_t bits_of(const Natural& x, int from, int count) {
  std::uint64_t out = 0;
  for (int b = 0; b < count; ++b) {
    const std::size_t limb = std::size_t(from + b) / 32;
    if (limb < x.size() && (x[limb] >> ((from + b) % 32) & 1u)) out |= std::uint64_t{1} << b;
  }
  return out;
}

int floor_log2(const Natural& x) {
  int top = 31;
  while (!(x.back() >> top & 1u)) --top;
  return int(32 * (x.size() - 1)) + top;
}

// x / 2^floor_log2(x), in [1, 2), from its top 64 bits.
double mantissa(const Natural& x) {
  const int top = floor_log2(x);
  return std::ldexp(double(bits_of(x, std::max(0, top - 63), std::min(64, top + 1))), -std::min(63, top));
}

Natural product_of_moduli(int count) {
  Natural product = {1};
  for (int i = 0; i < count; ++i) product = times(product, std::uint32_t(ozaki2_moduli()[i]));
  return product;
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

void check_moduli_and_k(int moduli, std::int64_t k) {
  if (moduli < kOzaki2MinModuli || moduli > kOzaki2MaxModuli)
    throw InvalidArgument("ozaki2: moduli (" + std::to_string(moduli) + ") outside [" +
                          std::to_string(kOzaki2MinModuli) + ", " + std::to_string(kOzaki2MaxModuli) + "]");
  if (k < 1 || k > kOzaki2MaxK)
    throw InvalidArgument("ozaki2: k (" + std::to_string(k) + ") outside [1, " + std::to_string(kOzaki2MaxK) + "]");
}

}  // namespace

namespace detail {

Ozaki2Scale ozaki2_scale(int moduli, std::int64_t k) {
  check_moduli_and_k(moduli, k);
  const int top = floor_log2(product_of_moduli(moduli));  // 2^top <= M
  // (2^K_A + r)(2^K_B + r) <= 2^(top - 1), r = sqrt(k) / 2 (rounded up, and the product's
  // rounding covered by the factor 1 - 2^-50).
  const double r = 0.5 * std::sqrt(double(k)) * (1 + 0x1p-50), limit = std::ldexp(1 - 0x1p-50, top - 1);
  Ozaki2Scale scale{(top - 1) / 2, (top - 2) / 2};  // K_A + K_B = top - 2
  while (scale.b >= 1 && (std::ldexp(1, scale.a) + r) * (std::ldexp(1, scale.b) + r) > limit) {
    if (scale.a > scale.b)
      --scale.a;
    else
      --scale.b;
  }
  if (scale.b < 1)
    throw InvalidArgument("ozaki2: moduli (" + std::to_string(moduli) + ") too few for k (" + std::to_string(k) +
                          "): the rounding of the operands alone could carry the product beyond M / 2; take more "
                          "moduli");
  return scale;
}

}  // namespace detail

int ozaki2_operand_bits(int moduli, std::int64_t k) { return detail::ozaki2_scale(moduli, k).b - 1; }

int ozaki2_moduli_for_bits(int bits, std::int64_t k) {
  check_moduli_and_k(kOzaki2MinModuli, k);
  for (int count = kOzaki2MinModuli; count < kOzaki2MaxModuli; ++count) {
    try {
      if (ozaki2_operand_bits(count, k) >= bits) return count;
    } catch (const InvalidArgument&) {
      // too few for k: the next count
    }
  }
  return kOzaki2MaxModuli;
}

namespace detail {

CrtTable crt_table(int moduli) {
  CrtTable table;
  table.count = moduli;
  const Natural product = product_of_moduli(moduli);
  const int limb_bits = 40;
  if (floor_log2(product) >= kCrtLimbs * limb_bits) throw std::logic_error("crt_table: M exceeds the limbs");
  for (int j = 0; j < kCrtLimbs; ++j) table.product[j] = double(bits_of(product, limb_bits * j, limb_bits));
  table.inverse_product = 1 / std::ldexp(mantissa(product), floor_log2(product));
  for (int t = 0; t < moduli; ++t) {
    const std::uint32_t m = std::uint32_t(ozaki2_moduli()[t]);
    table.modulus[t] = std::int32_t(m);
    table.reciprocal[t] = 1.0 / m;
    const Natural cofactor = divided(product, m);  // M / m_t
    const Natural weight = times(cofactor, std::uint32_t(inverse_mod(remainder_of(cofactor, m), m)));
    for (int j = 0; j < kCrtLimbs; ++j) table.weight[t][j] = double(bits_of(weight, limb_bits * j, limb_bits));
  }
  // crt_value's q = round(S / M) is computed from doubles, S / M to about 2^-38; it is right when
  // x / M, at most 2^(floor(log2 M) - 1) / M (ozaki2_scale), stays 2^-30 from 1/2.
  if (0.5 * (1 - 1 / mantissa(product)) < 0x1p-30) throw std::logic_error("crt_table: M too close to a power of 2");
  return table;
}

std::vector<ParameterSpec> ozaki2_parameters() {
  return {{"moduli", "coprime INT8 moduli, each keeping about 4 more bits of A and of B; 0: chosen from bits", 0,
           kOzaki2MaxModuli, 0},
          {"bits",
           "the accuracy knob: each row of op(A) and column of op(B) is rounded on a grid of 2^-bits of its "
           "2-norm, with the fewest moduli that allow it at this k; 0: " + std::to_string(kOzaki2DefaultBits) +
               " (DGEMM's accuracy) unless moduli is set",
           0, 64, 0}};
}

std::string ozaki2_moduli_refusal(const Parameters& asked, std::int64_t k) {
  const auto value = [&](const char* key) {
    const auto it = asked.find(key);
    return it == asked.end() ? std::int64_t{0} : it->second;
  };
  const std::int64_t moduli = value("moduli"), bits = value("bits");
  if (moduli == 1) return "moduli (1): one modulus keeps no bits; 0 or 2-20";
  if (moduli != 0 && bits != 0)
    return "moduli (" + std::to_string(moduli) + ") and bits (" + std::to_string(bits) + ") both set; set one";
  if (moduli != 0) {  // too few for k (2 moduli beyond k = 63503)
    try {
      ozaki2_operand_bits(int(moduli), k);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
  }
  return "";
}

int ozaki2_resolve_moduli(const Parameters& asked, std::int64_t k, const std::string& backend) {
  if (const std::string refusal = ozaki2_moduli_refusal(asked, k); !refusal.empty())
    throw InvalidArgument("gemm(" + backend + "): " + refusal);
  const auto value = [&](const char* key) {
    const auto it = asked.find(key);
    return it == asked.end() ? std::int64_t{0} : it->second;
  };
  const std::int64_t moduli = value("moduli"), bits = value("bits");
  return moduli != 0 ? int(moduli) : ozaki2_moduli_for_bits(bits != 0 ? int(bits) : kOzaki2DefaultBits, k);
}

}  // namespace detail

namespace {

// host-ozaki2-int8: FP64 data on the host; parameters moduli or bits.
class HostOzaki2Int8 final : public Backend {
 public:
  std::string name() const override { return "host-ozaki2-int8"; }
  std::string description() const override {
    return "host DGEMM emulated with INT8 products modulo N coprime moduli and the CRT (Ozaki scheme II), "
           "parameters moduli or bits";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }
  std::vector<ParameterSpec> parameters() const override { return detail::ozaki2_parameters(); }

 protected:
  Support check_parameter_values(const Parameters& parameters, const Problem& p) const override {
    const std::string refusal = detail::ozaki2_moduli_refusal(parameters, p.k);
    if (refusal.empty()) return {};
    return {Support::Status::InvalidArgument, refusal};
  }
  std::int64_t inner_size_limit() const override { return kOzaki2MaxK; }
  void run_problem(Context&, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const int moduli = detail::ozaki2_resolve_moduli(parameters, k, name());
    const detail::Ozaki2Scale scale = detail::ozaki2_scale(moduli, k);
    const double* a = static_cast<const double*>(p.a.data);
    const double* b = static_cast<const double*>(p.b.data);
    // Rows of op(A) and columns of op(B) as vectors of length k, scaled to 2-norms of at most 2^K.
    std::vector<int> a_shift, b_shift;
    const std::vector<double> ai =
        scaled(a, m, k, p.a.op == Op::N ? 1 : p.a.ld, p.a.op == Op::N ? p.a.ld : 1, scale.a, a_shift, "A");
    const std::vector<double> bi =
        scaled(b, n, k, p.b.op == Op::N ? p.b.ld : 1, p.b.op == Op::N ? 1 : p.b.ld, scale.b, b_shift, "B");
    const detail::CrtTable table = detail::crt_table(moduli);
    std::vector<std::int32_t> residues(m * n * moduli);  // entry-major: the N residues of an entry together
    std::vector<std::int8_t> ar(m * k), br(n * k);
    for (int t = 0; t < moduli; ++t) {
      const std::int32_t mod = table.modulus[t];
      const double reciprocal = table.reciprocal[t];
      for (std::size_t x = 0; x < ai.size(); ++x) ar[x] = detail::int8_residue_of_rounded(ai[x], mod, reciprocal);
      for (std::size_t x = 0; x < bi.size(); ++x) br[x] = detail::int8_residue_of_rounded(bi[x], mod, reciprocal);
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
          std::int32_t dot = 0;  // exact: k 128^2 < 2^31
          for (std::int64_t l = 0; l < k; ++l) dot += std::int32_t(ar[i * k + l]) * std::int32_t(br[j * k + l]);
          residues[(i + j * m) * moduli + t] = detail::residue_of_product(dot, mod, reciprocal);
        }
    }
    double* c = static_cast<double*>(p.c.data);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        // A'B' lies in (-M/2, M/2): the value the residues determine, rounded to double.
        double limbs[detail::kCrtLimbs] = {};
        for (int t = 0; t < moduli; ++t) detail::crt_add(table, t, residues[(i + j * m) * moduli + t], limbs);
        const double exact = detail::crt_value(table, limbs);
        const double ab = std::ldexp(exact, -(a_shift[i] + b_shift[j]));
        double& cij = c[i + j * p.c.ld];
        // Unfused, as the device rounds it.
        cij = p.beta == 0 ? detail::mul_rn(p.alpha, ab)
                          : detail::add_rn(detail::mul_rn(p.alpha, ab), detail::mul_rn(p.beta, cij));
      }
  }

 private:
  // Vector v (element l at x[v vector_stride + l element_stride]) times 2^shift[v], shift = K -
  // e_v with 2^e_v the bound of its 2-norm (ozaki2_crt.hpp: norm_units, norm_exponent), so that
  // the rounded values (int8_residue_of_rounded rounds them) have a 2-norm of at most
  // 2^K + sqrt(k) / 2. Vector-major.
  std::vector<double> scaled(const double* x, std::int64_t vectors, std::int64_t k, std::int64_t vector_stride,
                             std::int64_t element_stride, int norm_bits, std::vector<int>& shift,
                             const char* operand) const {
    detail::require_finite_vectors(name(), x, vectors, k, vector_stride, element_stride, operand);
    std::vector<double> out(vectors * k);
    shift.assign(vectors, 0);
    for (std::int64_t v = 0; v < vectors; ++v) {
      const auto at = [&](std::int64_t l) { return x[v * vector_stride + l * element_stride]; };
      double largest = 0;
      for (std::int64_t l = 0; l < k; ++l) largest = std::fmax(largest, std::fabs(at(l)));
      if (largest > 0) {
        const int c = formats::ceil_log2(largest);
        std::uint64_t units = 0;
        for (std::int64_t l = 0; l < k; ++l) units += detail::norm_units(at(l), c);
        shift[v] = norm_bits - detail::norm_exponent(units, c);
      }
      for (std::int64_t l = 0; l < k; ++l) out[v * k + l] = std::ldexp(at(l), shift[v]);
    }
    return out;
  }
};

}  // namespace

void add_host_ozaki2_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<HostOzaki2Int8>());
}

}  // namespace mixsolve::gemm
