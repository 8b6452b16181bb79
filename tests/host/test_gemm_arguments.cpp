// SPDX-License-Identifier: BSD-3-Clause
// Argument checking and the empty / degenerate cases shared by every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mixsolve/gemm/registry.hpp"

namespace {

using namespace mixsolve;
using namespace mixsolve::gemm;

// Expects `f` to throw E whose message contains every string of `parts`.
template <class E, class F>
void expect_error(F f, std::initializer_list<const char*> parts) {
  try {
    f();
    FAIL() << "expected an exception mentioning " << *parts.begin();
  } catch (const E& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

struct Fixture {
  std::vector<float> a = std::vector<float>(64, 1.0f), b = std::vector<float>(64, 1.0f), c = std::vector<float>(64, 2.0f);
  GemmArgs<float> args() {
    GemmArgs<float> g;
    g.m = 4; g.n = 4; g.k = 4;
    g.a = a.data(); g.lda = 4;
    g.b = b.data(); g.ldb = 4;
    g.c = c.data(); g.ldc = 4;
    return g;
  }
};

// can_implement answers, without throwing, what run() would do: Ok for a valid call, else the
// status and the same reason run()'s exception carries; a device backend in a host-only
// context, and the size limits of the cuBLAS and corrected backends, are reported likewise.
TEST(GemmArguments, CanImplementReportsWhatRunWouldRefuseWithoutThrowing) {
  Fixture f;
  Context ctx = Context::host_only();
  const Backend& host = find_backend("host-fp32");
  EXPECT_TRUE(host.can_implement(ctx, f.args()));
  auto g = f.args();
  g.lda = 3;
  const Support bad_lda = host.can_implement(ctx, g);
  EXPECT_EQ(bad_lda.status, Support::Status::InvalidArgument);
  EXPECT_NE(bad_lda.reason.find("lda (3)"), std::string::npos) << bad_lda.reason;
  expect_error<InvalidArgument>([&] { host.run(ctx, g); }, {"host-fp32", bad_lda.reason.c_str()});
  g = f.args();
  g.b = nullptr;
  EXPECT_EQ(host.can_implement(ctx, g).status, Support::Status::InvalidArgument);
  g.k = 0;  // an empty product reads no B: C = beta C
  EXPECT_TRUE(host.can_implement(ctx, g));
  GemmArgs<double> g64;
  g64.m = g64.n = g64.k = 4;
  g64.lda = g64.ldb = g64.ldc = 4;
  EXPECT_EQ(host.can_implement(ctx, g64).status, Support::Status::WrongDataType);
  const Backend& sgemm = find_backend("cublas-sgemm");
  const Support no_gpu = sgemm.can_implement(ctx, f.args());
  EXPECT_EQ(no_gpu.status, Support::Status::Unavailable);
  EXPECT_EQ(no_gpu.reason, sgemm.unavailable_reason(ctx));
}

TEST(GemmArguments, NegativeSizesNameTheArgumentAndValue) {
  Fixture f;
  Context ctx = Context::host_only();
  const Backend& be = find_backend("host-fp32");
  auto g = f.args();
  g.m = -1;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"host-fp32", "m (-1) < 0"});
  g = f.args(); g.n = -2;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"n (-2) < 0"});
  g = f.args(); g.k = -3;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"k (-3) < 0"});
}

TEST(GemmArguments, LeadingDimensionsSmallerThanRowsAreRejected) {
  Fixture f;
  Context ctx = Context::host_only();
  const Backend& be = find_backend("host-fp32");
  auto g = f.args();
  g.lda = 3;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"lda (3)", "(4"});
  g = f.args(); g.op_b = Op::T; g.n = 5; g.ldb = 4;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"ldb (4)", "(5", "op_b = T"});
  g = f.args(); g.ldc = 2;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"ldc (2) < m (4)"});
  g = f.args(); g.m = 0; g.lda = 0;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"lda (0)"});
}

TEST(GemmArguments, NullPointersWithElementsAreRejected) {
  Fixture f;
  Context ctx = Context::host_only();
  const Backend& be = find_backend("host-fp32");
  auto g = f.args();
  g.a = nullptr;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"A is null"});
  g = f.args(); g.b = nullptr;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"B is null"});
  g = f.args(); g.c = nullptr;
  expect_error<InvalidArgument>([&] { be.run(ctx, g); }, {"C is null"});
}

// A host-only Context has no device memory to hand out (Context::allocate, the solvers' pool).
TEST(GemmArguments, HostOnlyContextHasNoDevicePool) {
  Context ctx = Context::host_only();
  expect_error<NotSupported>([&] { ctx.allocate(16); }, {"Context::allocate", "host-only"});
  EXPECT_EQ(ctx.reserved_memory_bytes(), 0u);
  ctx.release_retained_memory();  // nothing to release: no error
}

TEST(GemmArguments, WrongDataTypeIsNotSupported) {
  Context ctx = Context::host_only();
  std::vector<double> d(16, 1.0);
  GemmArgs<double> g{Op::N, Op::N, 4, 4, 4, 1.0, d.data(), 4, d.data(), 4, 0.0, d.data(), 4};
  expect_error<NotSupported>([&] { find_backend("host-fp32").run(ctx, g); }, {"host-fp32", "FP64"});
}

TEST(GemmArguments, DeviceBackendOnHostOnlyContextSaysItNeedsAGpu) {
  Fixture f;
  Context ctx = Context::host_only();
  auto g = f.args();
  expect_error<NotSupported>([&] { find_backend("halfhalf").run(ctx, g); }, {"halfhalf", "needs a GPU"});
}

TEST(GemmArguments, EmptyProblemsAreNoOps) {
  Fixture f;
  Context ctx = Context::host_only();
  for (const Backend* be : available_backends(ctx)) {
    if (be->data_type() != DataType::F32) continue;
    auto g = f.args();
    g.m = 0;
    g.a = nullptr;
    g.c = nullptr;
    be->run(ctx, g);
    g = f.args();
    g.n = 0;
    g.b = nullptr;
    be->run(ctx, g);
    for (float v : f.c) ASSERT_EQ(v, 2.0f);
  }
}

TEST(GemmArguments, ZeroDepthOrZeroAlphaScalesCByBeta) {
  Context ctx = Context::host_only();
  for (const Backend* be : available_backends(ctx)) {
    if (be->data_type() != DataType::F32) continue;
    Fixture f;
    auto g = f.args();
    g.k = 0;
    g.a = nullptr;
    g.b = nullptr;
    g.beta = 0.5f;
    be->run(ctx, g);
    for (int i = 0; i < 16; ++i) ASSERT_EQ(f.c[i], 1.0f) << be->name();
    for (int i = 16; i < 64; ++i) ASSERT_EQ(f.c[i], 2.0f) << be->name() << ": outside C";
    g = f.args();
    g.alpha = 0.0f;
    g.beta = 3.0f;
    be->run(ctx, g);  // A and B not read
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) ASSERT_EQ(f.c[i + 4 * j], 3.0f) << be->name();
  }
}

TEST(GemmArguments, BetaZeroDoesNotPropagateNanFromC) {
  Context ctx = Context::host_only();
  for (const Backend* be : available_backends(ctx)) {
    if (be->data_type() != DataType::F32) continue;
    Fixture f;
    std::fill(f.c.begin(), f.c.end(), NAN);
    auto g = f.args();
    be->run(ctx, g);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) ASSERT_EQ(f.c[i + 4 * j], 4.0f) << be->name();
  }
}

TEST(GemmArguments, NanAndInfInInputsPropagateToTheEntriesTheyTouch) {
  Context ctx = Context::host_only();
  for (const Backend* be : available_backends(ctx)) {
    if (be->data_type() != DataType::F32) continue;
    Fixture f;
    f.a[1] = NAN;           // A(1, 0): row 1 of C
    f.b[2 + 4 * 3] = INFINITY;  // B(2, 3): column 3 of C
    auto g = f.args();
    be->run(ctx, g);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        const float v = f.c[i + 4 * j];
        if (i == 1 || j == 3) EXPECT_FALSE(std::isfinite(v)) << be->name() << " (" << i << "," << j << ")";
        else EXPECT_EQ(v, 4.0f) << be->name() << " (" << i << "," << j << ")";
      }
  }
}

}  // namespace

// The Problem form computes what the typed form does, operand by operand.
TEST(GemmProblem, ProblemFormMatchesTypedArgumentsBitForBit) {
  Context ctx = Context::host_only();
  std::vector<double> a(6 * 5), b(5 * 4), c_typed(7 * 4, 0.5), c_problem(7 * 4, 0.5);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(double(i) + 1);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(double(i) * 0.7);
  const Backend& host = find_backend("host-fp64");
  // op(A) = A^T: 5 x 6 stored, m = 6, k = 5; C 6 x 4 with ldc 7.
  host.run(ctx, GemmArgs<double>{Op::T, Op::N, 6, 4, 5, 1.5, a.data(), 5, b.data(), 5, -0.25, c_typed.data(), 7});
  host.run(ctx, Problem{6, 4, 5, 1.5, -0.25, Operand::dense(Format::F64, Op::T, a.data(), 5),
                        Operand::dense(Format::F64, Op::N, b.data(), 5), Output{Format::F64, c_problem.data(), 7}});
  EXPECT_EQ(c_typed, c_problem);
}

// Operands in a format a backend does not take are refused by name: mixed formats, 16-bit
// operands, a packed B for a backend that reads none (or one packed by another backend).
TEST(GemmProblem, FormatsABackendDoesNotTakeAreNamed) {
  Context ctx = Context::host_only();
  std::vector<float> a(16, 1.0f), b(16, 1.0f), c(16, 0.0f);
  const Backend& host = find_backend("host-fp32");
  const auto problem = [&](Format fa, Format fb, Format fc) {
    return Problem{4, 4, 4, 1, 0, Operand::dense(fa, Op::N, a.data(), 4), Operand::dense(fb, Op::N, b.data(), 4),
                   Output{fc, c.data(), 4}};
  };
  EXPECT_TRUE(host.can_implement(ctx, problem(Format::F32, Format::F32, Format::F32)));
  const Support f16 = host.can_implement(ctx, problem(Format::F16, Format::F32, Format::F32));
  EXPECT_EQ(f16.status, Support::Status::UnsupportedFormat);
  EXPECT_NE(f16.reason.find("A is FP16"), std::string::npos) << f16.reason;
  const Support c64 = host.can_implement(ctx, problem(Format::F32, Format::F32, Format::F64));
  EXPECT_EQ(c64.status, Support::Status::UnsupportedFormat);
  EXPECT_NE(c64.reason.find("C is FP64"), std::string::npos) << c64.reason;
  EXPECT_EQ(host.can_implement(ctx, problem(Format::F64, Format::F64, Format::F64)).status,
            Support::Status::WrongDataType);
  expect_error<NotSupported>([&] { host.run(ctx, problem(Format::BF16, Format::BF16, Format::F32)); },
                             {"host-fp32", "A is BF16"});
  Problem packed = problem(Format::F32, Format::F32, Format::F32);
  packed.b = Operand::prepacked(PackedB{&host, b.data(), 64, 4, 0, 1.0});
  const Support s = host.can_implement(ctx, packed);
  EXPECT_EQ(s.status, Support::Status::UnsupportedFormat);
  EXPECT_NE(s.reason.find("B is packed"), std::string::npos) << s.reason;
  EXPECT_EQ(host.packed_b_column_bytes(4, 4), 0);
  expect_error<NotSupported>(
      [&] { host.pack_b(ctx, 4, 4, Operand::dense(Format::F32, Op::N, b.data(), 4), packed.b.packed); },
      {"host-fp32", "does not pack"});
}

// A backend's parameters are checked against the specs it declares: an undeclared name is
// refused with the names it takes, a value outside its range names the range, and run() throws
// what can_implement reports.
class BackendWithParameters final : public Backend {
 public:
  std::string name() const override { return "test-with-parameters"; }
  std::string description() const override { return "host FP64 GEMM that declares two parameters"; }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }
  std::vector<ParameterSpec> parameters() const override {
    return {{"slices", "number of slices", 2, 20, 7}, {"fast", "a switch", 0, 1, 0}};
  }
  // The value of "slices" the last run saw (given or default).
  mutable std::int64_t slices_seen = 0;

 protected:
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters,
                   const Execution& execution) const override {
    slices_seen = parameter_value(parameters, "slices");
    find_backend("host-fp64").run(ctx, to_args<double>(p, execution));
  }
};

TEST(GemmProblem, ParametersAreCheckedAgainstTheBackendsSpecs) {
  Context ctx = Context::host_only();
  std::vector<double> a(4, 1.0), b(4, 2.0), c(4, 0.0);
  const Problem p{2, 2, 2, 1, 0, Operand::dense(Format::F64, Op::N, a.data(), 2),
                  Operand::dense(Format::F64, Op::N, b.data(), 2), Output{Format::F64, c.data(), 2}};
  const BackendWithParameters backend;
  EXPECT_TRUE(backend.can_implement(ctx, p, {{"slices", 20}, {"fast", 1}}));
  const Support unknown = backend.can_implement(ctx, p, {{"moduli", 14}});
  EXPECT_EQ(unknown.status, Support::Status::UnsupportedParameter);
  EXPECT_NE(unknown.reason.find("'moduli' is not one of this backend's (slices, fast)"), std::string::npos)
      << unknown.reason;
  const Support out_of_range = backend.can_implement(ctx, p, {{"slices", 21}});
  EXPECT_EQ(out_of_range.status, Support::Status::InvalidArgument);
  EXPECT_NE(out_of_range.reason.find("slices (21) outside [2, 20]"), std::string::npos) << out_of_range.reason;
  expect_error<InvalidArgument>([&] { backend.run(ctx, p, {{"slices", 1}}); }, {"slices (1) outside [2, 20]"});
  backend.run(ctx, p, {{"slices", 3}});
  EXPECT_EQ(c, std::vector<double>(4, 4.0));
  EXPECT_EQ(backend.slices_seen, 3);
  backend.run(ctx, p);  // left out: the spec's default
  EXPECT_EQ(backend.slices_seen, 7);
  for (const Backend* registered : all_backends()) {  // none of them takes "no-such-parameter"
    const Support s = registered->can_implement(ctx, p, {{"no-such-parameter", 3}});
    EXPECT_FALSE(s) << registered->name();
  }
}

// A host backend that packs B (as a plain FP64 copy per column) stands for cublas-fp16x3 here:
// the contract's checks of a packed B (its packer, bound, block and storage size) and of pack_b's
// arguments run without a GPU, and a product with the packed copy equals the dense one.
class PackingHostBackend final : public Backend {
 public:
  std::string name() const override { return "test-packing"; }
  std::string description() const override { return "host FP64 GEMM whose B may be a packed copy"; }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Host; }
  std::int64_t packed_b_column_bytes(std::int64_t k, std::int64_t) const override {
    return k * std::int64_t(sizeof(double));
  }

 protected:
  Support check_formats(const Problem& p, const Execution& e) const override {
    if (p.b.format != Format::Packed) return Backend::check_formats(p, e);
    return {};
  }
  void pack_b_checked(Context&, std::int64_t k, std::int64_t n, const Operand& b, const PackedB& into) const override {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < k; ++i)
        static_cast<double*>(into.columns_from(j).data)[into.first_block * into.block + i] =
            static_cast<const double*>(b.data)[i + j * b.ld];
  }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters,
                   const Execution& execution) const override {
    if (p.b.format != Format::Packed) return Backend::run_problem(ctx, p, parameters, execution);
    const PackedB& b = p.b.packed;
    Problem dense = p;
    dense.b = Operand::dense(Format::F64, Op::N, static_cast<const double*>(b.data) + b.first_block * b.block,
                             b.ld_bytes / std::int64_t(sizeof(double)));
    find_backend("host-fp64").run(ctx, dense, {}, execution);
  }
};

TEST(GemmProblem, PackedOperandsAreCheckedAndReadByTheirPackerOnly) {
  Context ctx = Context::host_only();
  const PackingHostBackend packer;
  const std::int64_t m = 3, n = 4, k = 5, block = 2;
  std::vector<double> a(m * k), b(k * n), c_dense(m * n, 0.0), c_packed(m * n, 0.0), storage(k * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.25 * double(i) - 1;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::sin(double(i));
  const PackedB packed{&packer, storage.data(), k * std::int64_t(sizeof(double)), block, 0, 1.0};
  for (std::int64_t first = 0; first * block < k; ++first)  // block by block, the last one short
    packer.pack_b(ctx, std::min(block, k - first * block), n,
                  Operand::dense(Format::F64, Op::N, b.data() + first * block, k), packed.blocks_from(first));
  const auto problem = [&](std::int64_t kk, std::int64_t first, const PackedB& view, std::vector<double>& c) {
    return Problem{m, n, kk, 1.0, 0.0, Operand::dense(Format::F64, Op::N, a.data() + first * block * m, m),
                   Operand::prepacked(view.blocks_from(first)), Output{Format::F64, c.data(), m}};
  };
  // From the second block on: the product of A's last 3 columns and B's last 3 rows.
  packer.run(ctx, problem(k - block, 1, packed, c_packed));
  find_backend("host-fp64").run(ctx, GemmArgs<double>{Op::N, Op::N, m, n, k - block, 1.0, a.data() + block * m, m,
                                                      b.data() + block, k, 0.0, c_dense.data(), m});
  EXPECT_EQ(c_packed, c_dense);

  const auto expect_refused = [&](const Backend& backend, const Problem& p, Support::Status status,
                                  const std::string& part) {
    const Support s = backend.can_implement(ctx, p);
    EXPECT_EQ(s.status, status) << s.reason;
    EXPECT_NE(s.reason.find(part), std::string::npos) << s.reason;
  };
  PackedB no_bound = packed, nan_bound = packed, short_ld = packed, no_block = packed;
  no_bound.abs_bound = 0;
  nan_bound.abs_bound = std::nan("");
  short_ld.ld_bytes = (k - 1) * std::int64_t(sizeof(double));
  no_block.block = 0;
  expect_refused(packer, problem(k, 0, no_bound, c_packed), Support::Status::InvalidArgument, "abs_bound");
  expect_refused(packer, problem(k, 0, nan_bound, c_packed), Support::Status::InvalidArgument, "abs_bound");
  expect_refused(packer, problem(k, 0, short_ld, c_packed), Support::Status::InvalidArgument, "ld_bytes (32)");
  expect_refused(packer, problem(k, 0, no_block, c_packed), Support::Status::InvalidArgument, "block (0)");
  const BackendWithParameters other;  // another backend never reads this packer's storage
  Problem foreign = problem(k, 0, packed, c_packed);
  expect_refused(other, foreign, Support::Status::UnsupportedFormat, "B is packed");
  PackedB relabelled = packed;
  relabelled.packer = &other;
  expect_refused(packer, problem(k, 0, relabelled, c_packed), Support::Status::UnsupportedFormat,
                 "packed by test-with-parameters");
  expect_error<InvalidArgument>(
      [&] { packer.pack_b(ctx, k, n, Operand::dense(Format::F64, Op::N, b.data(), k), no_bound); }, {"abs_bound"});
  expect_error<InvalidArgument>(
      [&] { packer.pack_b(ctx, k, n, Operand::dense(Format::F64, Op::N, b.data(), k - 1), packed); },
      {"ldb (4) < k (5)"});
  expect_error<InvalidArgument>(
      [&] { packer.pack_b(ctx, k, n, Operand::dense(Format::F64, Op::N, b.data(), k), relabelled); },
      {"the storage is for test-with-parameters"});
}

// "name:key=value,..." names a backend and its parameters; every fault is named.
TEST(GemmProblem, BackendCallsParseNamesAndParameters) {
  const BackendCall plain = find_backend_call("host-fp64");
  EXPECT_EQ(plain.backend->name(), "host-fp64");
  EXPECT_TRUE(plain.parameters.empty());
  const BackendCall ozaki = find_backend_call("host-ozaki2-int8:moduli=14");
  EXPECT_EQ(ozaki.backend->name(), "host-ozaki2-int8");
  EXPECT_EQ(ozaki.parameters.at("moduli"), 14);
  EXPECT_EQ(ozaki.text, "host-ozaki2-int8:moduli=14");
  expect_error<InvalidArgument>([] { find_backend_call("no-such-backend:x=1"); }, {"no-such-backend"});
  expect_error<InvalidArgument>([] { find_backend_call("host-ozaki2-int8:moduli"); }, {"\"moduli\" is not key=value"});
  expect_error<InvalidArgument>([] { find_backend_call("host-ozaki2-int8:moduli=1x"); }, {"\"1x\" is not an integer"});
  expect_error<InvalidArgument>([] { find_backend_call("host-ozaki2-int8:slices=3"); },
                                {"'slices' is not one of this backend's (moduli, bits)"});
  expect_error<InvalidArgument>([] { find_backend_call("host-ozaki2-int8:moduli=21"); }, {"moduli (21) outside [0, 20]"});
  expect_error<InvalidArgument>([] { find_backend_call("host-fp64:x=1"); }, {"'x' is not one of this backend's (none)"});
}
