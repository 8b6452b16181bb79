// SPDX-License-Identifier: BSD-3-Clause
#include "mixsolve/matgen/application_matrices.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "application_elements.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/random.hpp"

namespace mixsolve {

namespace {

constexpr double kPi = 3.14159265358979323846;

struct FamilyEntry {
  ApplicationFamily family;
  const char* name;
  std::vector<const char*> keys;  // the parameters the family reads, in name() order
  bool random;                    // takes a seed
};

const std::vector<FamilyEntry>& family_table() {
  static const std::vector<FamilyEntry> table = {
      {ApplicationFamily::CovarianceSquaredExponential, "cov_se", {"length", "nugget"}, true},
      {ApplicationFamily::CovarianceMatern32, "cov_matern32", {"length", "nugget"}, true},
      {ApplicationFamily::CovarianceMatern52, "cov_matern52", {"length", "nugget"}, true},
      {ApplicationFamily::ConvectionDiffusion, "convdiff", {"peclet"}, false},
      {ApplicationFamily::Elasticity, "elasticity", {"poisson"}, false},
      {ApplicationFamily::SingleLayer, "bie_single", {"b", "c"}, false},
      {ApplicationFamily::DoubleLayer, "bie_double", {"b", "c"}, false},
      {ApplicationFamily::ToeplitzAr1, "toeplitz_ar1", {"rho"}, false},
      {ApplicationFamily::BadlyScaled, "scaled", {"exponent_range"}, true},
      {ApplicationFamily::GradedColumns, "graded", {"grading"}, true},
      {ApplicationFamily::Hilbert, "hilbert", {}, false},
      {ApplicationFamily::RankDeficient, "rankdef", {"rank_ratio", "perturbation"}, true},
      {ApplicationFamily::SparseLowRank, "sparse_lowrank", {"nnz_per_row", "rank"}, true},
      {ApplicationFamily::HplMxp, "hpl_mxp", {}, true},
  };
  return table;
}

const FamilyEntry& entry_of(ApplicationFamily family) {
  for (const FamilyEntry& e : family_table())
    if (e.family == family) return e;
  throw InvalidArgument("application matrix: unknown family (" + std::to_string(int(family)) + ")");
}

// Parameter access by key: the double members, then the int members (null for other keys).
using RealMember = double ApplicationSpec::*;
using IntegerMember = int ApplicationSpec::*;

RealMember real_member(const std::string& key) {
  if (key == "length") return &ApplicationSpec::length;
  if (key == "nugget") return &ApplicationSpec::nugget;
  if (key == "peclet") return &ApplicationSpec::peclet;
  if (key == "poisson") return &ApplicationSpec::poisson;
  if (key == "b") return &ApplicationSpec::b;
  if (key == "c") return &ApplicationSpec::c;
  if (key == "rho") return &ApplicationSpec::rho;
  if (key == "grading") return &ApplicationSpec::grading;
  if (key == "rank_ratio") return &ApplicationSpec::rank_ratio;
  if (key == "perturbation") return &ApplicationSpec::perturbation;
  return nullptr;
}
IntegerMember integer_member(const std::string& key) {
  if (key == "exponent_range") return &ApplicationSpec::exponent_range;
  if (key == "nnz_per_row") return &ApplicationSpec::nnz_per_row;
  if (key == "rank") return &ApplicationSpec::rank;
  return nullptr;
}

// The shortest decimal that reads back as v, so that parse(name()) gives the spec back.
std::string format_number(double v) {
  for (int digits = 1; digits < 17; ++digits) {
    std::ostringstream s;
    s << std::setprecision(digits) << v;
    if (std::stod(s.str()) == v) return s.str();
  }
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

// A seed for each array a family draws, so that no two arrays share a stream.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  return mix64(seed ^ (stream * 0x9E3779B97F4A7C15ull));
}

// Smallest nx with nx^2 >= nodes.
std::int64_t grid_width(std::int64_t nodes) {
  std::int64_t nx = std::max<std::int64_t>(1, std::int64_t(std::sqrt(double(nodes))));
  while (nx * nx < nodes) ++nx;
  while (nx > 1 && (nx - 1) * (nx - 1) >= nodes) --nx;
  return nx;
}

void check_square(const char* where, const MatrixView<double>& a) {
  detail::check_view(where, "a", a);
  if (a.rows != a.cols)
    throw InvalidArgument(std::string(where) + ": a is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                          ", not square");
}

}  // namespace

const char* to_string(ApplicationFamily family) { return entry_of(family).name; }

const char* to_string(MatrixStructure structure) {
  switch (structure) {
    case MatrixStructure::Spd: return "spd";
    case MatrixStructure::Symmetric: return "symmetric";
    case MatrixStructure::Nonsymmetric: return "nonsymmetric";
  }
  return "?";
}

std::vector<ApplicationFamily> application_families() {
  std::vector<ApplicationFamily> out;
  for (const FamilyEntry& e : family_table()) out.push_back(e.family);
  return out;
}

std::vector<std::pair<std::string, double>> ApplicationSpec::parameters() const {
  std::vector<std::pair<std::string, double>> out;
  for (const char* key : entry_of(family).keys) {
    if (auto real = real_member(key)) out.push_back({key, this->*real});
    else out.push_back({key, double(this->*integer_member(key))});
  }
  return out;
}

bool ApplicationSpec::uses_seed() const { return entry_of(family).random; }

std::string ApplicationSpec::name() const {
  std::string s = to_string(family);
  for (const auto& [key, value] : parameters()) s += " " + key + "=" + format_number(value);
  if (uses_seed()) s += " seed=" + std::to_string(seed);
  return s;
}

MatrixStructure ApplicationSpec::structure() const {
  switch (family) {
    case ApplicationFamily::CovarianceSquaredExponential:
    case ApplicationFamily::CovarianceMatern32:
    case ApplicationFamily::CovarianceMatern52:
    case ApplicationFamily::Elasticity:
    case ApplicationFamily::ToeplitzAr1: return MatrixStructure::Spd;
    case ApplicationFamily::ConvectionDiffusion: return peclet == 0 ? MatrixStructure::Spd : MatrixStructure::Nonsymmetric;
    case ApplicationFamily::Hilbert: return MatrixStructure::Symmetric;
    case ApplicationFamily::SingleLayer:  // symmetric on the sphere only up to rounding
    case ApplicationFamily::DoubleLayer:
    case ApplicationFamily::BadlyScaled:
    case ApplicationFamily::GradedColumns:
    case ApplicationFamily::RankDeficient:
    case ApplicationFamily::SparseLowRank:
    case ApplicationFamily::HplMxp: return MatrixStructure::Nonsymmetric;
  }
  return MatrixStructure::Nonsymmetric;
}

ApplicationSpec ApplicationSpec::parse(const std::string& text) {
  const std::string where = "application matrix \"" + text + "\"";
  std::vector<std::string> tokens;
  std::string token;
  for (char ch : text + " ") {
    if (ch == ' ' || ch == ':') {
      if (!token.empty()) tokens.push_back(token);
      token.clear();
    } else {
      token += ch;
    }
  }
  if (tokens.empty()) throw InvalidArgument(where + ": no family name");
  ApplicationSpec spec;
  const FamilyEntry* entry = nullptr;
  for (const FamilyEntry& e : family_table())
    if (tokens[0] == e.name) entry = &e;
  if (!entry) {
    std::string names;
    for (const FamilyEntry& e : family_table()) names += std::string(names.empty() ? "" : ", ") + e.name;
    throw InvalidArgument(where + ": family \"" + tokens[0] + "\" is not one of " + names);
  }
  spec.family = entry->family;
  for (std::size_t t = 1; t < tokens.size(); ++t) {
    const std::size_t eq = tokens[t].find('=');
    if (eq == std::string::npos) throw InvalidArgument(where + ": \"" + tokens[t] + "\" is not key=value");
    const std::string key = tokens[t].substr(0, eq), value = tokens[t].substr(eq + 1);
    bool taken = key == "seed" && entry->random;
    for (const char* k : entry->keys) taken = taken || key == k;
    if (!taken) {
      std::string keys;
      for (const char* k : entry->keys) keys += std::string(keys.empty() ? "" : ", ") + k;
      if (entry->random) keys += std::string(keys.empty() ? "" : ", ") + "seed";
      throw InvalidArgument(where + ": " + entry->name + " takes no parameter \"" + key + "\" (its parameters: " +
                            (keys.empty() ? "none" : keys) + ")");
    }
    const auto bad_value = [&](const char* expected) {
      return InvalidArgument(where + ": " + key + " = \"" + value + "\" is not " + expected);
    };
    std::size_t used = 0;
    try {
      if (key == "seed") {
        if (value.empty() || value[0] == '-') throw bad_value("a non-negative integer");
        spec.seed = std::stoull(value, &used);
      } else if (auto real = real_member(key)) {
        spec.*real = std::stod(value, &used);
      } else {
        const long long v = std::stoll(value, &used);
        if (v < -2147483647LL || v > 2147483647LL) throw bad_value("an int");
        spec.*integer_member(key) = int(v);
      }
    } catch (const std::logic_error&) {  // stod / stoll: no number, or out of range
      throw bad_value(key == "seed" || !real_member(key) ? "an integer" : "a number");
    }
    if (used != value.size()) throw bad_value(key == "seed" || !real_member(key) ? "an integer" : "a number");
  }
  spec.validate(where.c_str());
  return spec;
}

void ApplicationSpec::validate(const char* where) const {
  const auto fail = [&](const char* key, const std::string& value, const char* range) {
    throw InvalidArgument(std::string(where) + ": " + to_string(family) + " " + key + " (" + value + ") " + range);
  };
  const auto real = [&](const char* key, double v, double lo, double hi, bool lo_open, bool hi_open) {
    const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (!ok) {
      std::string range = std::string("must lie in ") + (lo_open ? "(" : "[") + format_number(lo) + ", " +
                          format_number(hi) + (hi_open ? ")" : "]");
      if (std::isinf(hi)) range = std::string("must be finite and ") + (lo_open ? "> " : ">= ") + format_number(lo);
      fail(key, format_number(v), range.c_str());
    }
  };
  const double inf = INFINITY;
  switch (family) {
    case ApplicationFamily::CovarianceSquaredExponential:
    case ApplicationFamily::CovarianceMatern32:
    case ApplicationFamily::CovarianceMatern52:
      real("length", length, 0, inf, true, false);
      real("nugget", nugget, 0, inf, false, false);
      break;
    case ApplicationFamily::ConvectionDiffusion: real("peclet", peclet, 0, inf, false, false); break;
    case ApplicationFamily::Elasticity: real("poisson", poisson, -1, 0.5, true, true); break;
    case ApplicationFamily::SingleLayer:
    case ApplicationFamily::DoubleLayer:
      real("b", b, 0, inf, true, false);
      real("c", c, 0, inf, true, false);
      break;
    case ApplicationFamily::ToeplitzAr1: real("rho", rho, -1, 1, true, true); break;
    case ApplicationFamily::BadlyScaled:
      // 10^(2 * 150) times the base's entries stays inside FP64's normal range.
      if (exponent_range < 0 || exponent_range > 150)
        fail("exponent_range", std::to_string(exponent_range), "must lie in [0, 150]");
      break;
    case ApplicationFamily::GradedColumns: real("grading", grading, 0, 300, false, false); break;
    case ApplicationFamily::Hilbert: break;
    case ApplicationFamily::RankDeficient:
      real("rank_ratio", rank_ratio, 0, 1, false, true);
      real("perturbation", perturbation, 0, inf, false, false);
      break;
    case ApplicationFamily::SparseLowRank:
      if (nnz_per_row < 0) fail("nnz_per_row", std::to_string(nnz_per_row), "must be >= 0");
      if (rank < 0) fail("rank", std::to_string(rank), "must be >= 0");
      break;
    case ApplicationFamily::HplMxp: break;
  }
}

namespace matgen_detail {

RandomSpec rankdef_factor(const ApplicationSpec& spec, int which) {
  return RandomSpec::uniform(-1, 1, stream_seed(spec.seed, 10 + which));
}

std::int64_t rankdef_rank(const ApplicationSpec& spec, std::int64_t n) {
  return std::int64_t(std::floor(spec.rank_ratio * double(n)));
}

PreparedElements prepare_elements(const ApplicationSpec& spec, std::int64_t n, const char* where) {
  spec.validate(where);
  PreparedElements p;
  ElementData& d = p.data;
  d.family = spec.family;
  d.n = n;
  auto& arrays = p.arrays;
  switch (spec.family) {
    case ApplicationFamily::CovarianceSquaredExponential:
    case ApplicationFamily::CovarianceMatern32:
    case ApplicationFamily::CovarianceMatern52: {
      const RandomSpec cube = RandomSpec::uniform(0, 1, stream_seed(spec.seed, 1));
      arrays[kPoints].resize(3 * n);
      for (std::int64_t k = 0; k < 3 * n; ++k) arrays[kPoints][k] = random_double(cube, std::uint64_t(k));
      if (spec.family == ApplicationFamily::CovarianceSquaredExponential)
        d.length_factor = 1.0 / (2.0 * spec.length * spec.length);
      else
        d.length_factor = std::sqrt(spec.family == ApplicationFamily::CovarianceMatern32 ? 3.0 : 5.0) / spec.length;
      d.nugget = spec.nugget;
      break;
    }
    case ApplicationFamily::ConvectionDiffusion: {
      d.nx = grid_width(n);
      const double h = 1.0 / double(d.nx + 1);
      const double wx = 0.8 * spec.peclet, wy = 0.6 * spec.peclet;
      // First-order upwind: the convection term takes its difference from the upwind side.
      d.center = 4.0 + h * (std::fabs(wx) + std::fabs(wy));
      d.west = -1.0 - h * std::max(wx, 0.0);
      d.east = -1.0 - h * std::max(-wx, 0.0);
      d.south = -1.0 - h * std::max(wy, 0.0);
      d.north = -1.0 - h * std::max(-wy, 0.0);
      break;
    }
    case ApplicationFamily::Elasticity: {
      d.nx = grid_width((n + 1) / 2);
      const double mu = 1.0, lambda = 2.0 * spec.poisson / (1.0 - 2.0 * spec.poisson);
      d.lame_axial = lambda + 2.0 * mu;
      d.lame_shear = mu;
      d.lame_mixed = (lambda + mu) / 4.0;
      break;
    }
    case ApplicationFamily::SingleLayer:
    case ApplicationFamily::DoubleLayer: {
      const double golden_turn = (3.0 - std::sqrt(5.0)) / 2.0;  // golden angle / (2 pi)
      arrays[kPoints].resize(3 * n);
      const bool single = spec.family == ApplicationFamily::SingleLayer;
      arrays[single ? kWeights : kNormals].resize(single ? n : 3 * n);
      if (single) arrays[kDiagonal].resize(n);
      for (std::int64_t j = 0; j < n; ++j) {
        const double z = 1.0 - double(2 * j + 1) / double(n);
        const double radius = std::sqrt((1.0 - z) * (1.0 + z));
        const double turn = double(j) * golden_turn - std::floor(double(j) * golden_turn);
        const double u[3] = {radius * std::cos(2.0 * kPi * turn), radius * std::sin(2.0 * kPi * turn), z};
        // The node: u projected radially onto the ellipsoid, x = rho u with rho = 1 / |M^-1 u|,
        // M = diag(1, b, c). Its normal lies along M^-2 x, and the area element of the radial
        // graph is dS = rho^2 / (u . normal) dOmega = rho^3 |M^-2 x| dOmega. (A linear stretch
        // M u instead of the projection would make the double-layer matrix symmetric.)
        const double v[3] = {u[0], u[1] / spec.b, u[2] / spec.c};
        const double rho = 1.0 / std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        double* x = &arrays[kPoints][3 * j];
        for (int k = 0; k < 3; ++k) x[k] = rho * u[k];
        const double m[3] = {x[0], x[1] / (spec.b * spec.b), x[2] / (spec.c * spec.c)};
        const double m_norm = std::sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
        const double w_over_4pi = rho * rho * rho * m_norm / double(n);  // w_j = (4 pi / n) rho^3 |M^-2 x|
        if (single) {
          arrays[kWeights][j] = w_over_4pi;
          // (1 / (4 pi)) * integral of 1/r over a flat disc of area w around the node: sqrt(w / pi) / 2
          arrays[kDiagonal][j] = std::sqrt(4.0 * w_over_4pi) / 2.0;
        } else {
          for (int k = 0; k < 3; ++k) arrays[kNormals][3 * j + k] = m[k] / m_norm * w_over_4pi;
        }
      }
      break;
    }
    case ApplicationFamily::ToeplitzAr1:
      arrays[kPowers].resize(n);
      for (std::int64_t k = 0; k < n; ++k) arrays[kPowers][k] = std::pow(spec.rho, double(k));
      break;
    case ApplicationFamily::BadlyScaled:
    case ApplicationFamily::GradedColumns: {
      d.random_seed = stream_seed(spec.seed, 2);
      d.base_shift = 2.0 * std::sqrt(double(n));
      arrays[kColumnScale].resize(n);
      if (spec.family == ApplicationFamily::BadlyScaled) {
        arrays[kRowScale].resize(n);
        const std::uint64_t values = 2 * std::uint64_t(spec.exponent_range) + 1;
        for (std::int64_t k = 0; k < n; ++k) {
          const int e = int(random_bits(stream_seed(spec.seed, 3), std::uint64_t(k)) % values) - spec.exponent_range;
          const int f = int(random_bits(stream_seed(spec.seed, 4), std::uint64_t(k)) % values) - spec.exponent_range;
          arrays[kRowScale][k] = std::pow(10.0, double(e));
          arrays[kColumnScale][k] = std::pow(10.0, double(f));
        }
      } else {
        for (std::int64_t j = 0; j < n; ++j)
          arrays[kColumnScale][j] = n == 1 ? 1.0 : std::pow(10.0, -spec.grading * double(j) / double(n - 1));
      }
      break;
    }
    case ApplicationFamily::Hilbert: break;
    case ApplicationFamily::RankDeficient:
      d.random_seed = stream_seed(spec.seed, 5);
      d.perturbation = spec.perturbation;
      break;
    case ApplicationFamily::SparseLowRank: {
      // One row has no off-diagonal column to pick when n = 1.
      d.nnz_per_row = n > 1 ? spec.nnz_per_row : 0;
      d.rank = spec.rank;
      d.sparse_diagonal = double(spec.nnz_per_row) + 1.0;
      const std::int64_t entries = n * d.nnz_per_row;
      p.sparse_columns.resize(entries);
      arrays[kSparseValues].resize(entries);
      const RandomSpec values = RandomSpec::uniform(-1, 1, stream_seed(spec.seed, 7));
      for (std::int64_t k = 0; k < entries; ++k) {
        const std::int64_t row = k / d.nnz_per_row;
        // A column other than the row's own: drawn from the n - 1 others.
        const std::uint64_t bits = random_bits(stream_seed(spec.seed, 6), std::uint64_t(k));
        const std::int64_t col = std::int64_t(bits % std::uint64_t(n - 1));
        p.sparse_columns[k] = col < row ? col : col + 1;
        arrays[kSparseValues][k] = random_double(values, std::uint64_t(k));
      }
      const RandomSpec u = RandomSpec::uniform(-1, 1, stream_seed(spec.seed, 8));
      const RandomSpec v = RandomSpec::uniform(-1, 1, stream_seed(spec.seed, 9));
      arrays[kFactorU].resize(n * d.rank);
      arrays[kFactorV].resize(n * d.rank);
      for (std::int64_t k = 0; k < n * d.rank; ++k) {
        arrays[kFactorU][k] = random_double(u, std::uint64_t(k));
        arrays[kFactorV][k] = random_double(v, std::uint64_t(k));
      }
      break;
    }
    case ApplicationFamily::HplMxp: d.random_seed = stream_seed(spec.seed, 11); break;
  }
  for (int k = 0; k < kArrayCount; ++k) d.arrays[k] = arrays[k].empty() ? nullptr : arrays[k].data();
  d.sparse_columns = p.sparse_columns.empty() ? nullptr : p.sparse_columns.data();
  return p;
}

}  // namespace matgen_detail

void generate_application_matrix(const ApplicationSpec& spec, const MatrixView<double>& a) {
  const char* where = "generate_application_matrix";
  check_square(where, a);
  if (a.memory != Memory::Host)
    throw InvalidArgument(std::string(where) + ": a is a device matrix (generate_application_matrix_on_device)");
  const std::int64_t n = a.rows;
  const matgen_detail::PreparedElements p = matgen_detail::prepare_elements(spec, n, where);
  if (n == 0) return;
  if (spec.family == ApplicationFamily::RankDeficient) {
    const std::int64_t r = matgen_detail::rankdef_rank(spec, n);
    Eigen::MatrixXd x(n, r), y(n, r);
    fill_random(host_view(x.data(), n, r, n), matgen_detail::rankdef_factor(spec, 0));
    fill_random(host_view(y.data(), n, r, n), matgen_detail::rankdef_factor(spec, 1));
    Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> out(a.data, n, n, Eigen::OuterStride<>(a.ld));
    out.noalias() = x * y.transpose();
    if (spec.perturbation == 0) return;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) a(i, j) += matgen_detail::application_element(p.data, i, j);
    return;
  }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) a(i, j) = matgen_detail::application_element(p.data, i, j);
}

}  // namespace mixsolve
