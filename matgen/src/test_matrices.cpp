// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/matgen/test_matrices.hpp"

#include <Eigen/Dense>

#include <cmath>
#include <algorithm>
#include <functional>
#include <sstream>

#include "mixsolve/core/error.hpp"
#include "mixsolve/core/random.hpp"

namespace mixsolve {

namespace {

const char* family_name(MatrixFamily f) {
  switch (f) {
    case MatrixFamily::Svd: return "svd";
    case MatrixFamily::Poev: return "poev";
    case MatrixFamily::Heev: return "heev";
  }
  return "?";
}

const char* spectrum_name(Spectrum s) {
  switch (s) {
    case Spectrum::Arith: return "arith";
    case Spectrum::Geo: return "geo";
    case Spectrum::Cluster0: return "cluster0";
    case Spectrum::Cluster1: return "cluster1";
    case Spectrum::Logrand: return "logrand";
  }
  return "?";
}

// Standard normal draw number `index` of stream `seed` (Box-Muller on two counter-based uniforms).
double gaussian(std::uint64_t seed, std::uint64_t index) {
  const double u1 = (double(random_bits(seed, 2 * index) >> 11) + 0.5) * 0x1p-53;
  const double u2 = double(random_bits(seed, 2 * index + 1) >> 11) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Haar-random orthogonal matrix: Q of the QR factorization of a Gaussian matrix, with the signs
// of R's diagonal folded in (Mezzadri's correction).
Eigen::MatrixXd random_orthogonal(std::int64_t n, std::uint64_t seed) {
  Eigen::MatrixXd g(n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) g(i, j) = gaussian(seed, std::uint64_t(i + j * n));
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(g);
  Eigen::MatrixXd q = qr.householderQ();
  const Eigen::MatrixXd& r = qr.matrixQR();
  for (std::int64_t j = 0; j < n; ++j)
    if (r(j, j) < 0) q.col(j) *= -1.0;
  return q;
}

}  // namespace

std::string TestMatrixSpec::name() const {
  std::ostringstream s;
  s << family_name(family) << "_" << spectrum_name(spectrum) << (dominant ? "_dominant" : "") << " cond=" << cond;
  if (scale != 1.0) s << " scale=" << scale;
  return s.str();
}

TestMatrixSpec TestMatrixSpec::parse(const std::string& text) {
  TestMatrixSpec spec;
  std::string rest = text;
  auto take = [&rest]() {
    const auto pos = rest.find('_');
    std::string head = rest.substr(0, pos);
    rest = pos == std::string::npos ? "" : rest.substr(pos + 1);
    return head;
  };
  const std::string family = take(), spectrum = take(), extra = take();
  if (family == "svd") spec.family = MatrixFamily::Svd;
  else if (family == "poev") spec.family = MatrixFamily::Poev;
  else if (family == "heev") spec.family = MatrixFamily::Heev;
  else throw InvalidArgument("test matrix \"" + text + "\": family \"" + family + "\" is not svd, poev or heev");
  if (spectrum == "arith") spec.spectrum = Spectrum::Arith;
  else if (spectrum == "geo") spec.spectrum = Spectrum::Geo;
  else if (spectrum == "cluster0") spec.spectrum = Spectrum::Cluster0;
  else if (spectrum == "cluster1") spec.spectrum = Spectrum::Cluster1;
  else if (spectrum == "logrand") spec.spectrum = Spectrum::Logrand;
  else
    throw InvalidArgument("test matrix \"" + text + "\": spectrum \"" + spectrum +
                          "\" is not arith, geo, cluster0, cluster1 or logrand");
  if (extra == "dominant") spec.dominant = true;
  else if (!extra.empty() || !rest.empty())
    throw InvalidArgument("test matrix \"" + text + "\": unknown suffix \"" + extra + "\" (only _dominant)");
  return spec;
}

std::vector<double> spectrum_values(const TestMatrixSpec& spec, std::int64_t n) {
  if (n < 1) throw InvalidArgument("spectrum_values: n (" + std::to_string(n) + ") < 1");
  if (!(spec.cond >= 1.0) || !std::isfinite(spec.cond))
    throw InvalidArgument("spectrum_values: cond (" + std::to_string(spec.cond) + ") must be finite and >= 1");
  std::vector<double> s(n, 1.0);
  if (n == 1) return s;
  const double inv = 1.0 / spec.cond;
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = double(i) / double(n - 1);
    switch (spec.spectrum) {
      case Spectrum::Arith: s[i] = 1.0 - t * (1.0 - inv); break;
      case Spectrum::Geo: s[i] = std::pow(spec.cond, -t); break;
      case Spectrum::Cluster0: s[i] = i == 0 ? 1.0 : inv; break;
      case Spectrum::Cluster1: s[i] = i == n - 1 ? inv : 1.0; break;
      case Spectrum::Logrand: {
        const double u = double(random_bits(spec.seed ^ 0x5eedull, std::uint64_t(i)) >> 11) * 0x1p-53;
        s[i] = i == 0 ? 1.0 : i == n - 1 ? inv : std::exp(std::log(inv) * u);
        break;
      }
    }
  }
  std::sort(s.begin(), s.end(), std::greater<double>());
  return s;
}

void generate_test_matrix(const TestMatrixSpec& spec, const MatrixView<double>& a) {
  detail::check_view("generate_test_matrix", "a", a);
  if (a.memory != Memory::Host) throw NotSupported("generate_test_matrix: host generation needs a host matrix");
  if (a.rows != a.cols)
    throw InvalidArgument("generate_test_matrix: a is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ", not square");
  const std::int64_t n = a.rows;
  if (n == 0) return;
  const std::vector<double> s = spectrum_values(spec, n);
  Eigen::VectorXd d(n);
  for (std::int64_t i = 0; i < n; ++i) d(i) = s[i];
  if (spec.family == MatrixFamily::Heev)
    for (std::int64_t i = 0; i < n; ++i)
      if (random_bits(spec.seed ^ 0x51611ull, std::uint64_t(i)) & 1) d(i) = -d(i);
  const Eigen::MatrixXd u = random_orthogonal(n, spec.seed);
  Eigen::MatrixXd result;
  if (spec.family == MatrixFamily::Svd) {
    const Eigen::MatrixXd v = random_orthogonal(n, spec.seed + 0x9e3779b9ull);
    result = u * d.asDiagonal() * v.transpose();
  } else {
    result = u * d.asDiagonal() * u.transpose();
    result = 0.5 * (result + result.transpose()).eval();  // exactly symmetric
  }
  if (spec.dominant)
    for (std::int64_t i = 0; i < n; ++i) {
      const double row_sum = result.row(i).cwiseAbs().sum();
      result(i, i) += result(i, i) >= 0 ? row_sum : -row_sum;
    }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) a(i, j) = spec.scale * result(i, j);
}

}  // namespace mixsolve
