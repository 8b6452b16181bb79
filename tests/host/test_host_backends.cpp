// SPDX-License-Identifier: BSD-3-Clause
// Host backends against an FP64 reference: every transpose combination, odd sizes, alpha/beta,
// leading dimensions larger than the rows. Bounds derive from unit roundoff and k.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <set>
#include <tuple>

#include "gemm_test_support.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;
using mixsolve::testing::HostMatrix;

struct Case {
  Op op_a, op_b;
  std::int64_t m, n, k;
  float alpha, beta;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Op oa : {Op::N, Op::T})
    for (Op ob : {Op::N, Op::T}) {
      out.push_back({oa, ob, 1, 1, 1, 1.0f, 0.0f});
      out.push_back({oa, ob, 17, 33, 65, 1.5f, -0.75f});
      out.push_back({oa, ob, 40, 7, 129, -2.0f, 0.5f});
    }
  return out;
}

// Per-backend unit roundoffs: (input representation, accumulation).
std::pair<double, double> unit_roundoffs(const std::string& name) {
  if (name == "host-fp32") return {0, 0x1p-24};
  if (name == "model-fp16-rz" || name == "model-fp16-rn") return {0x1p-11, 0x1p-23};
  if (name == "model-tf32-rz" || name == "model-tf32-rn") return {0x1p-11, 0x1p-23};
  if (name == "model-bf16-rz" || name == "model-bf16-rn") return {0x1p-8, 0x1p-23};
  return {0x1p-23, 0x1p-23};  // corrected schemes: the split loses at most one bit of 24
}

void run_case(const Backend& backend, const Case& cs, std::uint64_t seed) {
  const std::int64_t a_rows = cs.op_a == Op::N ? cs.m : cs.k, a_cols = cs.op_a == Op::N ? cs.k : cs.m;
  const std::int64_t b_rows = cs.op_b == Op::N ? cs.k : cs.n, b_cols = cs.op_b == Op::N ? cs.n : cs.k;
  HostMatrix<float> a(a_rows, a_cols, a_rows + 3), b(b_rows, b_cols, b_rows + 5), c(cs.m, cs.n, cs.m + 2);
  fill_random(a.view(), RandomSpec::uniform(-1, 1, seed));
  fill_random(b.view(), RandomSpec::uniform(-1, 1, seed + 1));
  if (cs.beta != 0) fill_random(c.view(), RandomSpec::uniform(-1, 1, seed + 2));
  else fill_constant(c.view(), NAN);  // poison: beta == 0 must not read C
  const HostMatrix<float> c0 = c;
  Context ctx = Context::host_only();
  GemmArgs<float> args{cs.op_a, cs.op_b, cs.m, cs.n, cs.k, cs.alpha, a.data.data(), a.ld, b.data.data(), b.ld,
                       cs.beta, c.data.data(), c.ld};
  backend.run(ctx, args);
  const auto ref = mixsolve::testing::reference_gemm(cs.op_a, cs.op_b, cs.m, cs.n, cs.k, cs.alpha, a, b, cs.beta, c0);
  const auto [u_in, u_acc] = unit_roundoffs(backend.name());
  // + one rounding for alpha * acc + beta * c
  const double bound = mixsolve::testing::inner_product_bound(cs.k, u_in, u_acc) + 2 * 0x1p-24;
  EXPECT_LE(mixsolve::testing::componentwise_error(c, ref), bound)
      << backend.name() << " op " << to_string(cs.op_a) << to_string(cs.op_b) << " m=" << cs.m << " n=" << cs.n
      << " k=" << cs.k;
  // Padding between ld and rows is untouched.
  for (std::int64_t j = 0; j < cs.n; ++j)
    for (std::int64_t i = cs.m; i < c.ld; ++i)
      if (cs.beta != 0) ASSERT_EQ(c(i, j), c0(i, j));
}

TEST(HostBackends, Fp32BackendsMatchFp64ReferenceForAllTransposesAndOddSizes) {
  Context ctx = Context::host_only();
  int tested = 0;
  for (const Backend* b : available_backends(ctx)) {
    if (b->data_type() != DataType::F32) continue;
    std::uint64_t seed = 100;
    for (const Case& cs : cases()) run_case(*b, cs, seed += 10);
    ++tested;
  }
  EXPECT_GE(tested, 13) << "host-fp32 and the twelve tensor-core models";
}

TEST(HostBackends, Fp64BackendMatchesLongDoubleReference) {
  const std::int64_t m = 23, n = 19, k = 301;
  std::vector<double> a(m * k), b(k * n), c(m * n);
  fill_random(host_view(a.data(), m, k, m), RandomSpec::uniform(-1, 1, 5));
  fill_random(host_view(b.data(), k, n, k), RandomSpec::uniform(-1, 1, 6));
  Context ctx = Context::host_only();
  GemmArgs<double> args{Op::N, Op::N, m, n, k, 1.0, a.data(), m, b.data(), k, 0.0, c.data(), m};
  find_backend("host-fp64").run(ctx, args);
  mixsolve::testing::expect_fp64_product_accurate(a, b, c, m, n, k);
}

TEST(Registry, ListsEveryBackendOnceAndFindsThemByName) {
  const auto& all = all_backends();
  std::set<std::string> names;
  for (const Backend* b : all) {
    EXPECT_TRUE(names.insert(b->name()).second) << "duplicate " << b->name();
    EXPECT_EQ(&find_backend(b->name()), b);
    EXPECT_FALSE(b->description().empty());
  }
  for (const char* required : {"cublas-dgemm", "cublas-sgemm", "cublas-tf32", "cublas-fp16", "cublas-bf16", "cublas-fp16x3", "halfhalf",
                               "tf32tf32", "markidis", "host-fp64", "host-fp32", "model-halfhalf-rz",
                               "model-halfhalf-rn"})
    EXPECT_TRUE(names.count(required)) << required;
}

TEST(Registry, HostOnlyContextOffersExactlyTheHostBackends) {
  Context ctx = Context::host_only();
  for (const Backend* b : all_backends()) {
    const bool available = b->unavailable_reason(ctx).empty();
    EXPECT_EQ(available, b->memory() == Memory::Host) << b->name();
  }
}

TEST(Registry, UnknownNameIsAnErrorListingTheKnownNames) {
  try {
    find_backend("halfhalf2");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("halfhalf2"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tf32tf32"), std::string::npos);
  }
}

}  // namespace
