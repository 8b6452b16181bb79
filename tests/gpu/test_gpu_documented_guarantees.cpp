// SPDX-License-Identifier: BSD-3-Clause
// What README.md and the public headers promise for device memory, where no other test checks it:
// NaN / Inf in device A or B is the named error, leading dimensions beyond the rows (the rows
// between a view's rows and its ld never written), empty problems (n = 0, no right-hand sides)
// with no kernel launched on an empty grid, X overlapping A or B, several Contexts on separate
// threads, Context::workspace() that only grows, and the GEMM contract's degenerate cases and
// unmodified inputs on every device backend. The host side: tests/host/test_documented_guarantees.cpp.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "documented_guarantees_support.hpp"
#include "gpu_test_support.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "solve_test_problems.hpp"

namespace {

using namespace mixsolve;
using mixsolve::testing::full_or_small;
using mixsolve::testing::small_gpu_tests;
using namespace mixsolve::documented_guarantees;

template <class T>
DeviceBuffer<T> on_device(const std::vector<T>& host) {
  DeviceBuffer<T> d(std::max<std::size_t>(host.size(), 1));
  if (!host.empty()) d.copy_from_host(host);
  return d;
}

// No CUDA error is pending after ctx's work: a kernel launched on an empty grid (0 blocks) fails
// with cudaErrorInvalidConfiguration, which cudaGetLastError reports even where the launch was
// not checked.
void expect_no_pending_error(Context& ctx, const std::string& what) {
  ctx.synchronize();
  const cudaError_t e = cudaGetLastError();
  EXPECT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

using test_problems::stop_test_ratio;  // below 1: the LAPACK test a converged solve meets

// Writes one double into device memory (the single entry a case poisons or restores).
void set_entry(double* device, std::int64_t at, double value) {
  MIXSOLVE_CUDA_CHECK(cudaMemcpy(device + at, &value, sizeof value, cudaMemcpyHostToDevice));
}

// --- NaN / Inf in device matrices ----------------------------------------------------------------

// README: NaN/Inf in A or B are errors, for device matrices as for host ones (their scans run on
// the GPU): solve(), Factorization (A in the constructor, B in solve) and least_squares() name
// the first entry, "A(i, j) is NaN or Inf". NaN in the padding between the rows and ld is not
// part of the matrix: with it alone the solves succeed. A and B are not modified.
TEST(GpuDocumentedGuarantees, NanOrInfInDeviceAOrBIsANamedError) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 70, k = 2, lda = n + 3, ldb = n + 5;
  const std::vector<double> a = with_ld(test_matrix(n, 1e3, 3), n, n, lda, NAN);
  const std::vector<double> b = with_ld(uniform(n, k, 4), n, k, ldb, NAN);
  DeviceBuffer<double> da = on_device(a), db = on_device(b), dx(n * k);
  const auto A = device_view<const double>(da.data(), n, n, lda);
  const auto B = device_view<const double>(db.data(), n, k, ldb);
  const auto X = device_view(dx.data(), n, k, n);
  struct Entry {
    std::int64_t i, j;
    double value;
  };
  const Entry entries[] = {{0, 0, NAN}, {n - 1, n - 1, INFINITY}, {17, 5, -INFINITY}, {n - 1, 0, NAN}};
  int cases = 0;
  for (const Entry& e : entries) {
    const std::string message = "A(" + std::to_string(e.i) + ", " + std::to_string(e.j) + ") is NaN or Inf";
    set_entry(da.data(), e.i + e.j * lda, e.value);
    expect_error([&] { solve(ctx, A, B, X); }, {"solve: " + message});
    expect_error([&] { Factorization f(ctx, A); }, {"solve: " + message});
    set_entry(da.data(), e.i + e.j * lda, a[e.i + e.j * lda]);
    ++cases;
  }
  const Entry b_entries[] = {{0, 0, NAN}, {n - 1, k - 1, INFINITY}, {33, 1, -INFINITY}};
  Factorization f(ctx, A);
  for (const Entry& e : b_entries) {
    const std::string message = "B(" + std::to_string(e.i) + ", " + std::to_string(e.j) + ") is NaN or Inf";
    set_entry(db.data(), e.i + e.j * ldb, e.value);
    expect_error([&] { solve(ctx, A, B, X); }, {"solve: " + message});
    expect_error([&] { f.solve(B, X); }, {"solve: " + message});
    set_entry(db.data(), e.i + e.j * ldb, b[e.i + e.j * ldb]);
    ++cases;
  }
  EXPECT_EQ(cases, 7);
  // Only the padding holds NaN now: no error, and the solves converge.
  EXPECT_TRUE(solve(ctx, A, B, X).converged);
  EXPECT_TRUE(f.solve(B, X).converged);
  ctx.synchronize();
  EXPECT_TRUE(same_bytes(da.to_host(), a) && same_bytes(db.to_host(), b)) << "A or B (or their padding) changed";

  // least_squares on the device: A m x r (lda = m + 3), B m x k.
  const std::int64_t m = 90, r = 30;
  const std::vector<double> la = with_ld(uniform(m, r, 5), m, r, m + 3, NAN),
                            lb = with_ld(uniform(m, k, 6), m, k, m, 0);
  DeviceBuffer<double> dla = on_device(la), dlb = on_device(lb), dlx(r * k);
  const auto LA = device_view<const double>(dla.data(), m, r, m + 3);
  const auto LB = device_view<const double>(dlb.data(), m, k, m);
  const auto LX = device_view(dlx.data(), r, k, r);
  int ls_cases = 0;
  for (const Entry& e : {Entry{m - 1, r - 1, NAN}, Entry{0, 7, INFINITY}}) {
    set_entry(dla.data(), e.i + e.j * (m + 3), e.value);
    expect_error([&] { least_squares(ctx, LA, LB, LX); },
                 {"least_squares: A(" + std::to_string(e.i) + ", " + std::to_string(e.j) + ") is NaN or Inf"});
    set_entry(dla.data(), e.i + e.j * (m + 3), la[e.i + e.j * (m + 3)]);
    ++ls_cases;
  }
  set_entry(dlb.data(), 44 + 1 * m, -INFINITY);
  expect_error([&] { least_squares(ctx, LA, LB, LX); }, {"least_squares: B(44, 1) is NaN or Inf"});
  set_entry(dlb.data(), 44 + 1 * m, lb[44 + m]);
  ++ls_cases;
  EXPECT_EQ(ls_cases, 3);
  EXPECT_TRUE(least_squares(ctx, LA, LB, LX).converged);
}

// --- Leading dimensions beyond the rows ----------------------------------------------------------

// Device solve(), Factorization::solve and least_squares() with ldb and ldx beyond the rows (odd
// and even excesses): X meets the LAPACK test (least squares: it matches the packed solve's X to
// the FP64 refinement's accuracy), the rows of X between its rows and ldx are not written, and A
// and B, padding included, are unchanged.
TEST(GpuDocumentedGuarantees, LeadingDimensionsBeyondTheRowsLeaveThePaddingAlone) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 300, k = 3;
  const std::vector<double> a = test_matrix(n, 1e4, 7), b = uniform(n, k, 8);
  int cases = 0;
  // Small (small_gpu_tests): the odd padding only.
  const std::vector<std::int64_t> pads =
      small_gpu_tests() ? std::vector<std::int64_t>{1} : std::vector<std::int64_t>{1, 32};
  for (const Precision p : {Precision::Fp16x3, Precision::FP64})
    for (const std::int64_t pad : pads) {
      SCOPED_TRACE(to_string(p) + ", padding " + std::to_string(pad));
      const std::int64_t lda = n + pad + 2, ldb = n + pad, ldx = n + pad + 5;
      const std::vector<double> a_ld = with_ld(a, n, n, lda, NAN), b_ld = with_ld(b, n, k, ldb, NAN);
      DeviceBuffer<double> da = on_device(a_ld), db = on_device(b_ld),
                           dx = on_device(std::vector<double>(ldx * k, poison()));
      SolveOptions o;
      o.factorization = p;
      const SolveReport r =
          solve(ctx, device_view<const double>(da.data(), n, n, lda), device_view<const double>(db.data(), n, k, ldb),
                device_view(dx.data(), n, k, ldx), o);
      ctx.synchronize();
      std::vector<double> x_ld = dx.to_host();
      EXPECT_TRUE(r.converged) << r.summary();
      EXPECT_LT(stop_test_ratio(a, b, packed_of(x_ld, n, k, ldx), n, k), 1.0) << r.summary();
      EXPECT_TRUE(padding_untouched(x_ld, n, k, ldx, poison())) << "solve wrote X's rows between n and ldx";
      // Factorization: a second solve into X of a fresh poison.
      Factorization f(ctx, device_view<const double>(da.data(), n, n, lda), o);
      dx.copy_from_host(std::vector<double>(ldx * k, poison()));
      const SolveReport again =
          f.solve(device_view<const double>(db.data(), n, k, ldb), device_view(dx.data(), n, k, ldx));
      ctx.synchronize();
      x_ld = dx.to_host();
      EXPECT_LT(stop_test_ratio(a, b, packed_of(x_ld, n, k, ldx), n, k), 1.0) << again.summary();
      EXPECT_TRUE(padding_untouched(x_ld, n, k, ldx, poison())) << "Factorization::solve wrote X's padding";
      EXPECT_TRUE(same_bytes(da.to_host(), a_ld) && same_bytes(db.to_host(), b_ld))
          << "A or B (or their padding) changed";
      ++cases;
    }
  EXPECT_EQ(cases, 2 * std::int64_t(pads.size()));

  // least_squares: m x r, lda = m + 3, ldb = m + 1, ldx = r + 7, against the packed solve.
  const std::int64_t m = 400, r = 120, lda = m + 3, ldb = m + 1, ldx = r + 7;
  const std::vector<double> la = uniform(m, r, 9), lb = uniform(m, k, 10);
  DeviceBuffer<double> pa = on_device(la), pb = on_device(lb), px(r * k);
  const LeastSquaresReport packed =
      least_squares(ctx, device_view<const double>(pa.data(), m, r, m), device_view<const double>(pb.data(), m, k, m),
                    device_view(px.data(), r, k, r));
  ctx.synchronize();
  ASSERT_TRUE(packed.converged) << packed.path();
  const std::vector<double> x_packed = px.to_host();
  const std::vector<double> la_ld = with_ld(la, m, r, lda, NAN), lb_ld = with_ld(lb, m, k, ldb, NAN);
  DeviceBuffer<double> qa = on_device(la_ld), qb = on_device(lb_ld),
                       qx = on_device(std::vector<double>(ldx * k, poison()));
  const LeastSquaresReport padded =
      least_squares(ctx, device_view<const double>(qa.data(), m, r, lda),
                    device_view<const double>(qb.data(), m, k, ldb), device_view(qx.data(), r, k, ldx));
  ctx.synchronize();
  EXPECT_TRUE(padded.converged) << padded.path();
  const std::vector<double> x_ld = qx.to_host();
  EXPECT_TRUE(padding_untouched(x_ld, r, k, ldx, poison())) << "least_squares wrote X's padding";
  // Each X lies within FP64's attainable accuracy of the solution, 64 u (kappa + kappa^2 ||r|| /
  // (||A|| ||x||)) ||x||_2 (LeastSquaresStop::Stagnated), so the two within twice that of each
  // other (kappa from Eigen's SVD of A, r in long double).
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(Eigen::Map<const Eigen::MatrixXd>(la.data(), m, r));
  const double sigma_max = svd.singularValues()(0), kappa = sigma_max / svd.singularValues()(r - 1);
  const std::vector<double> x_unpadded = packed_of(x_ld, r, k, ldx);
  for (std::int64_t c = 0; c < k; ++c) {
    long double residual = 0, norm_x = 0, diff = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      long double ri = lb[i + c * m];
      for (std::int64_t j = 0; j < r; ++j) ri -= (long double)la[i + j * m] * x_packed[j + c * r];
      residual += ri * ri;
    }
    for (std::int64_t j = 0; j < r; ++j) {
      norm_x += (long double)x_packed[j + c * r] * x_packed[j + c * r];
      const long double d = (long double)x_packed[j + c * r] - x_unpadded[j + c * r];
      diff += d * d;
    }
    const double nx = double(std::sqrt(norm_x)), nr = double(std::sqrt(residual));
    const double attainable = 64 * 0x1p-53 * (kappa + kappa * kappa * nr / (sigma_max * nx)) * nx;
    EXPECT_LE(double(std::sqrt(diff)), 2 * attainable) << "column " << c << ", kappa " << kappa;
  }
  EXPECT_TRUE(same_bytes(qa.to_host(), la_ld) && same_bytes(qb.to_host(), lb_ld))
      << "A or B (or their padding) changed";
}

// --- Empty problems ------------------------------------------------------------------------------

// n = 0 and no right-hand sides on the device: no error, the documented result (converged, no
// attempt; least squares: residual norms ||b_j||_2), and no kernel launched on an empty grid.
TEST(GpuDocumentedGuarantees, EmptyDeviceProblemsReturnAtOnceWithoutLaunchingEmptyGrids) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  cudaGetLastError();  // start from a clear error state
  DeviceBuffer<double> some(16);
  for (double* data : {static_cast<double*>(nullptr), some.data()}) {
    SCOPED_TRACE(data ? "pointers" : "null pointers");
    const SolveReport r = solve(ctx, device_view<const double>(data, 0, 0, 1), device_view<const double>(data, 0, 3, 1),
                                device_view(data ? data + 4 : nullptr, 0, 3, 1));
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(r.converged_rhs, std::vector<bool>(3, true));
    EXPECT_TRUE(r.attempts.empty());
    Factorization f(ctx, device_view<const double>(data, 0, 0, 1));
    EXPECT_TRUE(
        f.solve(device_view<const double>(data, 0, 2, 1), device_view(data ? data + 4 : nullptr, 0, 2, 1)).converged);
    EXPECT_EQ(f.precision(), Precision::Auto);
    expect_no_pending_error(ctx, "n = 0");
    const LeastSquaresReport ls =
        least_squares(ctx, device_view<const double>(data, 0, 0, 1), device_view<const double>(data, 0, 2, 1),
                      device_view(data ? data + 4 : nullptr, 0, 2, 1));
    EXPECT_TRUE(ls.converged);
    EXPECT_EQ(ls.residual_norms, std::vector<double>(2, 0.0));
    expect_no_pending_error(ctx, "least squares, m = n = 0");
  }
  // n = 50 with no right-hand sides; then one.
  const std::int64_t n = 50;
  const std::vector<double> a = test_matrix(n, 10, 11), b = uniform(n, 1, 12);
  DeviceBuffer<double> da = on_device(a), db = on_device(b), dx(n);
  const auto A = device_view<const double>(da.data(), n, n, n);
  const SolveReport none =
      solve(ctx, A, device_view<const double>(db.data(), n, 0, n), device_view(dx.data(), n, 0, n));
  EXPECT_TRUE(none.converged);
  EXPECT_TRUE(none.converged_rhs.empty());
  EXPECT_TRUE(none.attempts.empty());
  Factorization f(ctx, A);
  EXPECT_TRUE(f.solve(device_view<const double>(db.data(), n, 0, n), device_view(dx.data(), n, 0, n)).converged);
  EXPECT_EQ(f.precision(), Precision::Auto);
  expect_no_pending_error(ctx, "no right-hand sides");
  EXPECT_TRUE(f.solve(device_view<const double>(db.data(), n, 1, n), device_view(dx.data(), n, 1, n)).converged);

  // least_squares: n = 0 (residual norms ||b_j||), and no right-hand sides.
  const std::int64_t m = 40, k = 2;
  const std::vector<double> lb = uniform(m, k, 13);
  DeviceBuffer<double> dlb = on_device(lb);
  const LeastSquaresReport no_columns =
      least_squares(ctx, device_view<const double>(da.data(), m, 0, m), device_view<const double>(dlb.data(), m, k, m),
                    device_view(dx.data(), 0, k, 1));
  ASSERT_NO_FATAL_FAILURE(expect_report_without_columns(no_columns, lb, m, k));
  const LeastSquaresReport no_rhs =
      least_squares(ctx, device_view<const double>(da.data(), n, 10, n), device_view<const double>(dlb.data(), n, 0, n),
                    device_view(dx.data(), 10, 0, 10));
  EXPECT_TRUE(no_rhs.converged);
  EXPECT_TRUE(no_rhs.residual_norms.empty());
  expect_no_pending_error(ctx, "least squares without columns or right-hand sides");
}

// --- X overlapping A or B ------------------------------------------------------------------------

// As on the host: a device X whose storage range shares a byte with A's or B's is refused, naming
// both; X right next to them is accepted. A device A is read in place by every solve of a
// Factorization, so Factorization::solve refuses an X in A's storage too.
TEST(GpuDocumentedGuarantees, DeviceXOverlappingAOrBIsRefusedAndAdjacentStorageAccepted) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  const std::int64_t n = 40, k = 2;
  const std::vector<double> a = test_matrix(n, 100, 14), b = uniform(n, k, 15);
  // One buffer: A at 0, B at b_at, X wherever a case puts it.
  const std::int64_t b_at = n * n + n * k + 4;
  DeviceBuffer<double> d = on_device(side_by_side(a, b, b_at, b_at + 3 * n * k));
  const auto A = device_view<const double>(d.data(), n, n, n);
  const auto B = device_view<const double>(d.data() + b_at, n, k, n);
  const auto X = [&](std::int64_t at) { return device_view(d.data() + at, n, k, n); };
  int refused = 0;
  for (const auto& [x_at, other] :
       std::vector<std::pair<std::int64_t, const char*>>{{0, "A"},
                                                         {b_at, "B"},
                                                         {3 * n + 2, "A"},
                                                         {b_at - (k - 1) * n - n + 1, "B"},
                                                         {b_at + (k - 1) * n + n - 1, "B"}}) {
    expect_error([&, at = x_at] { solve(ctx, A, B, X(at)); },
                 {"solve: X [", std::string("overlaps ") + other + " [", std::string("must not alias ") + other});
    ++refused;
  }
  EXPECT_EQ(refused, 5);
  Factorization f(ctx, A);
  expect_error([&] { f.solve(B, X(5)); }, {"solve: X [", "overlaps A [", "must not alias A"});
  expect_error([&] { f.solve(B, X(b_at + 1)); }, {"overlaps B [", "must not alias B"});
  int accepted = 0;
  for (const std::int64_t x_at : {n * n, b_at - n * k, b_at + n * k}) {  // after A, before B, after B
    EXPECT_TRUE(solve(ctx, A, B, X(x_at)).converged) << "X at " << x_at;
    ++accepted;
  }
  EXPECT_EQ(accepted, 3);
  ctx.synchronize();
  const std::vector<double> after = d.to_host();
  EXPECT_TRUE(same_bytes(std::vector<double>(after.begin(), after.begin() + n * n), a)) << "A changed";
  EXPECT_TRUE(same_bytes(std::vector<double>(after.begin() + b_at, after.begin() + b_at + n * k), b)) << "B changed";

  // least_squares: X on A, on B, X's last entry on B's first; next to them accepted.
  const std::int64_t m = 60, r = 10;
  const std::int64_t lb_at = m * r + 2 * r * k;
  const std::vector<double> la = uniform(m, r, 16), lb = uniform(m, k, 17);
  DeviceBuffer<double> ld = on_device(side_by_side(la, lb, lb_at, lb_at + m * k + 2 * r * k));
  const auto LA = device_view<const double>(ld.data(), m, r, m);
  const auto LB = device_view<const double>(ld.data() + lb_at, m, k, m);
  const auto LX = [&](std::int64_t at) { return device_view(ld.data() + at, r, k, r); };
  int ls_refused = 0;
  for (const auto& [x_at, other] : std::vector<std::pair<std::int64_t, const char*>>{
           {0, "A"}, {m * r - 1, "A"}, {lb_at, "B"}, {lb_at - (k - 1) * r - r + 1, "B"}}) {
    expect_error([&, at = x_at] { least_squares(ctx, LA, LB, LX(at)); },
                 {"least_squares: X [", std::string("overlaps ") + other, std::string("must not alias ") + other});
    ++ls_refused;
  }
  EXPECT_EQ(ls_refused, 4);
  EXPECT_TRUE(least_squares(ctx, LA, LB, LX(m * r)).converged);
  EXPECT_TRUE(least_squares(ctx, LA, LB, LX(lb_at + m * k)).converged);
}

// --- Several Contexts on separate threads --------------------------------------------------------

// One Context per thread of work (context.hpp): four threads on GPU 0, each with its own Context
// (stream, cuBLAS handle, workspace, pool), solve four problems on four precision paths at once,
// three times each; every X equals the serial solve's bit for bit. Two serial runs are compared
// first, so that a solve that does not reproduce itself is told apart from interference between
// the threads. escalate_by_cost off: with it, a GMRES attempt's end may depend on timing.
TEST(GpuDocumentedGuarantees, SolvesOnSeparateThreadsWithTheirOwnContextsMatchSerialSolves) {
  MIXSOLVE_REQUIRE_GPU();
  constexpr int kThreads = 4;
  const std::int64_t n = full_or_small(640, 300), k = 2;
  const Precision paths[kThreads] = {Precision::Fp16x3, Precision::FP32, Precision::Auto, Precision::FP16};
  std::vector<DeviceBuffer<double>> da, db;
  for (int t = 0; t < kThreads; ++t) {
    da.push_back(on_device(test_matrix(n, t == 3 ? 1e5 : 1e3, 20 + t)));
    db.push_back(on_device(uniform(n, k, 30 + t)));
  }
  const auto options = [&](int t) {
    SolveOptions o;
    o.factorization = paths[t];
    o.escalate_by_cost = false;
    return o;
  };
  // One solve in its own Context; X downloaded.
  const auto run = [&](int t, std::vector<double>& x, int rounds) {
    Context ctx;
    DeviceBuffer<double> dx(ctx, n * k);
    for (int round = 0; round < rounds; ++round)
      solve(ctx, device_view<const double>(da[t].data(), n, n, n), device_view<const double>(db[t].data(), n, k, n),
            device_view(dx.data(), n, k, n), options(t));
    ctx.synchronize();
    x = dx.to_host(ctx.stream());
  };
  std::vector<std::vector<double>> serial(kThreads), serial_again(kThreads), parallel(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    run(t, serial[t], 1);
    run(t, serial_again[t], 1);
    ASSERT_TRUE(same_bytes(serial[t], serial_again[t]))
        << "thread " << t << " (" << to_string(paths[t]) << "): two serial solves differ; the device solve does not "
        << "reproduce itself, so the threaded comparison below cannot be bit for bit";
  }
  const std::vector<std::string> errors = run_on_threads(kThreads, [&](int t) { run(t, parallel[t], 3); });
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(same_bytes(parallel[t], serial[t])) << "thread " << t << " (" << to_string(paths[t]) << ")";
  }
}

// --- Context::workspace() only grows --------------------------------------------------------------

// context.hpp: the workspace grows only when a larger size is asked for (a new allocation rounded
// up to a multiple of 1 MiB), so a smaller or equal request returns the same pointer and keeps
// the capacity; a fresh Context returns null for 0 bytes. README: repeated GEMM calls of one shape
// allocate nothing, on every device backend (neither workspace nor pool grows).
TEST(GpuDocumentedGuarantees, ContextWorkspaceOnlyGrows) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  EXPECT_EQ(ctx.workspace_capacity(), 0u);
  EXPECT_EQ(ctx.workspace(0), nullptr) << "nothing allocated yet";
  void* const first = ctx.workspace(1000);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(ctx.workspace_capacity(), kMiB);
  for (const std::size_t smaller : {std::size_t{0}, std::size_t{10}, std::size_t{1000}, kMiB}) {
    EXPECT_EQ(ctx.workspace(smaller), first) << smaller << " bytes";
    EXPECT_EQ(ctx.workspace_capacity(), kMiB) << smaller << " bytes";
  }
  void* const second = ctx.workspace(kMiB + 1);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(ctx.workspace_capacity(), 2 * kMiB);
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(second, 0, 2 * kMiB, ctx.stream()));  // all of it is usable
  EXPECT_EQ(ctx.workspace(1000), second);
  EXPECT_EQ(ctx.workspace_capacity(), 2 * kMiB) << "a smaller request does not shrink it";
  ctx.synchronize();
  ctx.release_workspace();
  EXPECT_EQ(ctx.workspace_capacity(), 0u);

  // Each device GEMM backend, called twice with one shape and then with a smaller one: the
  // workspace (pointer and capacity) after the first call is the one after the others.
  Context fresh;
  const std::int64_t m = 96, n = 80, kk = 130;
  std::vector<float> af(m * kk), bf(kk * n);
  std::vector<double> ad(m * kk), bd(kk * n);
  fill_random(host_view(af.data(), m, kk, m), RandomSpec::uniform(-1, 1, 40));
  fill_random(host_view(bf.data(), kk, n, kk), RandomSpec::uniform(-1, 1, 41));
  fill_random(host_view(ad.data(), m, kk, m), RandomSpec::uniform(-1, 1, 42));
  fill_random(host_view(bd.data(), kk, n, kk), RandomSpec::uniform(-1, 1, 43));
  DeviceBuffer<float> daf = on_device(af), dbf = on_device(bf), dcf(m * n);
  DeviceBuffer<double> dad = on_device(ad), dbd = on_device(bd), dcd(m * n);
  int backends = 0;
  for (const gemm::Backend* be : gemm::available_backends(fresh)) {
    if (be->memory() != Memory::Device) continue;
    SCOPED_TRACE(be->name());
    const auto call = [&](std::int64_t rows) {
      if (be->data_type() == gemm::DataType::F32)
        be->run(fresh, gemm::GemmArgs<float>{gemm::Op::N, gemm::Op::N, rows, n, kk, 1.0f, daf.data(), m, dbf.data(), kk,
                                             0.0f, dcf.data(), m});
      else
        be->run(fresh, gemm::GemmArgs<double>{gemm::Op::N, gemm::Op::N, rows, n, kk, 1.0, dad.data(), m, dbd.data(), kk,
                                              0.0, dcd.data(), m});
    };
    call(m);
    fresh.synchronize();
    const std::size_t capacity = fresh.workspace_capacity(), reserved = fresh.reserved_memory_bytes();
    void* const pointer = fresh.workspace(0);
    call(m);
    call(m / 2);
    fresh.synchronize();
    EXPECT_EQ(fresh.workspace_capacity(), capacity) << "the repeated call grew the workspace";
    EXPECT_EQ(fresh.workspace(0), pointer) << "the repeated call reallocated the workspace";
    // Backends that take scratch from the Context's pool (Context::allocate) get it back from
    // there: the pool maps no more memory for the repeated calls.
    EXPECT_EQ(fresh.reserved_memory_bytes(), reserved) << "the repeated call grew the Context's pool";
    ++backends;
  }
  fresh.synchronize();
  std::size_t device_backends = 0;
  for (const gemm::Backend* be : gemm::available_backends(fresh)) device_backends += be->memory() == Memory::Device;
  EXPECT_EQ(std::size_t(backends), device_backends);
  EXPECT_GE(backends, 10);
}

// --- The GEMM contract on every device backend -------------------------------------------------

// check_gemm_contract's adapter on the device: `be` runs g on device copies of *a, *b (null: a
// null pointer) and c; returns C, and A and B as they are after the call.
template <class T>
GemmOutcome<T> run_on_device(Context& ctx, const gemm::Backend& be, gemm::GemmArgs<T> g, const std::vector<T>* a,
                             const std::vector<T>* b, const std::vector<T>& c) {
  DeviceBuffer<T> da = a ? on_device(*a) : DeviceBuffer<T>(), db = b ? on_device(*b) : DeviceBuffer<T>(),
                  dc = on_device(c);
  g.a = a ? da.data() : nullptr;
  g.b = b ? db.data() : nullptr;
  g.c = dc.data();
  be.run(ctx, g);
  ctx.synchronize();
  const auto download = [](const DeviceBuffer<T>& d, std::size_t count) {
    std::vector<T> v(count);
    if (count > 0) d.copy_to_host(v.data(), count);
    return v;
  };
  GemmOutcome<T> out;
  if (a) out.a = download(da, a->size());
  if (b) out.b = download(db, b->size());
  out.c = download(dc, c.size());
  return out;
}

// backend.hpp's shared semantics on every device backend that runs here (FP32 and FP64): inputs
// never modified, the rows of C between m and ldc untouched, m = 0 / n = 0 do nothing, k = 0 and
// alpha = 0 give beta C without reading A or B, beta = 0 never reads C, NaN / Inf propagate
// (RangeError from the ozaki* emulations).
TEST(GpuDocumentedGuarantees, EveryDeviceGemmBackendKeepsTheContractsRules) {
  MIXSOLVE_REQUIRE_GPU();
  Context ctx;
  int f32 = 0, f64 = 0;
  std::size_t device_backends = 0;
  for (const gemm::Backend* be : gemm::available_backends(ctx)) {
    if (be->memory() != Memory::Device) continue;
    ++device_backends;
    SCOPED_TRACE(be->name());
    const auto on_gpu = [&](auto g, const auto* a, const auto* b, const auto& c) {
      return run_on_device(ctx, *be, g, a, b, c);
    };
    const int cases = check_gemm_contract(*be, on_gpu, 700, "ozaki");  // the emulated DGEMMs (README)
    if (HasFatalFailure()) return;
    EXPECT_EQ(cases, 4 + 3 + 2 + 2 + 1) << be->name();
    (be->data_type() == gemm::DataType::F32 ? f32 : f64) += 1;
  }
  EXPECT_EQ(std::size_t(f32 + f64), device_backends) << "every device backend that runs here was checked";
  // 14 FP32 and 15 FP64 device backends are registered; cublas-dgemm-emulated needs cuBLAS 13, and
  // the others run on every GPU of sm_80 and later.
  EXPECT_GE(f32, 14);
  EXPECT_GE(f64, 14);
}

}  // namespace
