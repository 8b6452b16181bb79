// SPDX-License-Identifier: BSD-3-Clause
// What the documented-guarantee tests of host and device memory share
// (tests/host/test_documented_guarantees.cpp, tests/gpu/test_gpu_documented_guarantees.cpp):
// named errors, bit-for-bit comparisons, matrices stored with a leading dimension beyond the rows
// and their padding, the test problems, work on several threads at once, and the GEMM contract's
// cases (backend.hpp), which run through an adapter that hands the backend copies of the operands
// in its own memory and brings them back.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "mixsolve/core/error.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/gemm/backend.hpp"
#include "mixsolve/matgen/test_matrices.hpp"
#include "mixsolve/solvers/least_squares.hpp"

namespace mixsolve::documented_guarantees {

// Expects `call` to throw E whose message contains every text of `parts`.
template <class E = InvalidArgument, class F>
void expect_error(F call, std::initializer_list<std::string> parts) {
  try {
    call();
    ADD_FAILURE() << "expected an error mentioning \"" << *parts.begin() << "\"";
  } catch (const E& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

// The same bytes: compares NaN payloads too, so a padding of NaN that was rewritten shows.
template <class T>
bool same_bytes(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

// A rows x cols matrix stored with leading dimension ld: `packed` (ld = rows) copied in, every
// entry between the rows and ld set to `padding`.
inline std::vector<double> with_ld(const std::vector<double>& packed, std::int64_t rows, std::int64_t cols,
                                   std::int64_t ld, double padding) {
  std::vector<double> out(std::size_t(ld * cols), padding);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) out[i + j * ld] = packed[i + j * rows];
  return out;
}
// The rows x cols matrix of `stored` (leading dimension ld), packed.
inline std::vector<double> packed_of(const std::vector<double>& stored, std::int64_t rows, std::int64_t cols,
                                     std::int64_t ld) {
  std::vector<double> out(std::size_t(rows * cols));
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) out[i + j * rows] = stored[i + j * ld];
  return out;
}
// Every entry between the rows and ld still holds `padding` (bit for bit).
inline bool padding_untouched(const std::vector<double>& stored, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                              double padding) {
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = rows; i < ld; ++i)
      if (std::memcmp(&stored[i + j * ld], &padding, sizeof padding) != 0) return false;
  return true;
}

// A padding that no computation produces: a NaN with a payload (a rewritten NaN would be caught
// by same_bytes / padding_untouched, which compare bits).
inline double poison() {
  const std::uint64_t bits = 0x7ff8dead0000beefull;
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// An n x n matrix of condition number `cond` (geometric singular values), on the host.
inline std::vector<double> test_matrix(std::int64_t n, double cond, std::uint64_t seed) {
  TestMatrixSpec spec;
  spec.spectrum = Spectrum::Geo;
  spec.cond = cond;
  spec.seed = seed;
  std::vector<double> a(std::size_t(n * n));
  generate_test_matrix(spec, host_view(a.data(), n, n, n));
  return a;
}
// A rows x cols matrix of entries uniform in [-1, 1], on the host.
inline std::vector<double> uniform(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<double> v(std::size_t(rows * cols));
  if (!v.empty()) fill_random(host_view(v.data(), rows, cols, rows), RandomSpec::uniform(-1, 1, seed));
  return v;
}

// The report of a least-squares problem without columns (n = 0) and with the m x k B
// (least_squares.hpp): converged, no attempt, and the residual norms ||b_j||_2. A sum of m squares
// and a square root in FP64 (the host's loop or cuBLAS's DNRM2) lie within (m + 2) u of the exact
// norm, taken in long double.
inline void expect_report_without_columns(const LeastSquaresReport& r, const std::vector<double>& b, std::int64_t m,
                                          std::int64_t k) {
  EXPECT_TRUE(r.converged);
  EXPECT_TRUE(r.attempts.empty());
  ASSERT_EQ(r.residual_norms.size(), std::size_t(k));
  for (std::int64_t j = 0; j < k; ++j) {
    long double sum = 0;
    for (std::int64_t i = 0; i < m; ++i) sum += (long double)b[i + j * m] * b[i + j * m];
    const double exact = double(std::sqrt(sum));
    EXPECT_NEAR(r.residual_norms[j], exact, (m + 2) * 0x1p-53 * exact) << "column " << j;
  }
}

// A vector of `size` zeros with `a` copied to its start and `b` to b_at: A, B and room for X in
// one storage, for the overlap tests.
inline std::vector<double> side_by_side(const std::vector<double>& a, const std::vector<double>& b, std::int64_t b_at,
                                        std::int64_t size) {
  std::vector<double> out(std::size_t(size), 0.0);
  std::copy(a.begin(), a.end(), out.begin());
  std::copy(b.begin(), b.end(), out.begin() + b_at);
  return out;
}

// Runs work(0), ..., work(count - 1) on `count` threads at once; returns each one's exception
// message ("" where it threw none).
inline std::vector<std::string> run_on_threads(int count, const std::function<void(int)>& work) {
  std::vector<std::string> errors(count);
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back([&, t] {
      try {
        work(t);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (std::thread& thread : threads) thread.join();
  return errors;
}

// --- The GEMM contract (backend.hpp) ----------------------------------------------------------

// Operands of one GEMM, stored on the host with leading dimensions 3 beyond the rows, the padding
// -777; the adapter of check_gemm_contract hands copies of them to the backend.
template <class T>
struct GemmOperands {
  gemm::Op op_a, op_b;
  std::int64_t m, n, k, lda, ldb, ldc;
  std::vector<T> a, b, c;
  GemmOperands(gemm::Op oa, gemm::Op ob, std::int64_t m_, std::int64_t n_, std::int64_t k_, std::uint64_t seed)
      : op_a(oa), op_b(ob), m(m_), n(n_), k(k_) {
    const std::int64_t a_rows = oa == gemm::Op::N ? m : k, a_cols = oa == gemm::Op::N ? k : m;
    const std::int64_t b_rows = ob == gemm::Op::N ? k : n, b_cols = ob == gemm::Op::N ? n : k;
    lda = a_rows + 3;
    ldb = b_rows + 3;
    ldc = m + 3;
    a = filled(a_rows, a_cols, lda, -1, 1, seed);
    b = filled(b_rows, b_cols, ldb, -1, 1, seed + 1);
    c = filled(m, n, ldc, -4, 4, seed + 2);  // |beta C| comparable to |A B|: a lost beta C shows
  }
  static std::vector<T> filled(std::int64_t rows, std::int64_t cols, std::int64_t ld, double lo, double hi,
                               std::uint64_t seed) {
    std::vector<T> v(std::size_t(ld * std::max<std::int64_t>(cols, 1)), T(-777));  // padding
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i)
        v[i + j * ld] = T(random_double(RandomSpec::uniform(lo, hi, seed), i + j * rows));
    return v;
  }
  T a_at(std::int64_t i, std::int64_t p) const { return op_a == gemm::Op::N ? a[i + p * lda] : a[p + i * lda]; }
  T b_at(std::int64_t p, std::int64_t j) const { return op_b == gemm::Op::N ? b[p + j * ldb] : b[j + p * ldb]; }
  // The arguments without pointers: the adapter sets them.
  gemm::GemmArgs<T> args(T alpha, T beta) const {
    return {op_a, op_b, m, n, k, alpha, nullptr, lda, nullptr, ldb, beta, nullptr, ldc};
  }
};

// What an adapter returns: C, and A and B (empty where none was given) as they are after the call.
template <class T>
struct GemmOutcome {
  std::vector<T> a, b, c;
};

// The product's entries against long double: within 2^-5 of |alpha| |A||B| + |beta| |C0|, loose
// enough for every backend (the crudest, BF16 inputs at k = 6 on the device: 2 * 2^-8 + 8 * 2^-23;
// FP16 on the host) and tight enough to see a lost or doubled beta C0 or a NaN. Accuracy itself is
// the backends' tests' task. C's rows between m and ldc must be C0's.
template <class T>
void expect_product(const GemmOperands<T>& p, T alpha, T beta, const std::vector<T>& c0, const std::vector<T>& c,
                    const std::string& what) {
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.m; ++i) {
      long double exact = 0, scale = 0;
      for (std::int64_t l = 0; l < p.k; ++l) {
        exact += (long double)p.a_at(i, l) * p.b_at(l, j);
        scale += std::fabs((long double)p.a_at(i, l) * p.b_at(l, j));
      }
      exact *= alpha;
      scale *= std::fabs(alpha);
      if (beta != T(0)) {
        exact += (long double)beta * c0[i + j * p.ldc];
        scale += std::fabs((long double)beta * c0[i + j * p.ldc]);
      }
      const double got = double(c[i + j * p.ldc]);
      ASSERT_TRUE(std::isfinite(got)) << what << ": C(" << i << ", " << j << ")";
      ASSERT_LE(std::fabs(got - double(exact)), 0x1p-5 * double(scale)) << what << ": C(" << i << ", " << j << ")";
    }
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = p.m; i < p.ldc; ++i)
      ASSERT_EQ(c[i + j * p.ldc], c0[i + j * p.ldc]) << what << ": C's row " << i << " between m and ldc was written";
}

// The rules of backend.hpp / README on the backend `name` of data type T; returns the cases run.
// run(g, a, b, c) runs g, its pointers set to copies of *a, *b (null where a or b is null) and c in
// the backend's memory, and returns the copies after the call (GemmOutcome). Seeds from `seed`;
// the backends whose names start with `finite_only`, emulations that represent finite values
// only, throw RangeError for NaN / Inf in A or B where the others propagate them.
template <class T, class Run>
int check_gemm_contract_of(const std::string& name, const Run& run, std::uint64_t seed,
                           const std::string& finite_only) {
  using gemm::Op;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T>* const unread = nullptr;
  int cases = 0;
  // Every transpose pair, alpha and beta general, then beta = 0 over a NaN C: A and B (with their
  // padding) never modified, C's padding never written.
  for (const Op oa : {Op::N, Op::T})
    for (const Op ob : {Op::N, Op::T}) {
      const GemmOperands<T> p(oa, ob, 7, 5, 6, seed += 3);
      const std::string what = name + " op " + gemm::to_string(oa) + gemm::to_string(ob);
      const GemmOutcome<T> general = run(p.args(T(-1.5), T(0.5)), &p.a, &p.b, p.c);
      expect_product(p, T(-1.5), T(0.5), p.c, general.c, what);
      EXPECT_TRUE(same_bytes(general.a, p.a) && same_bytes(general.b, p.b)) << what << ": A or B modified";
      std::vector<T> poisoned = p.c;
      for (std::int64_t j = 0; j < p.n; ++j)
        for (std::int64_t i = 0; i < p.m; ++i) poisoned[i + j * p.ldc] = nan;
      const GemmOutcome<T> no_c = run(p.args(T(1), T(0)), &p.a, &p.b, poisoned);
      expect_product(p, T(1), T(0), poisoned, no_c.c, what + ", beta 0 over NaN C");
      EXPECT_TRUE(same_bytes(no_c.a, p.a) && same_bytes(no_c.b, p.b)) << what << ": A or B modified (beta 0)";
      ++cases;
    }
  const GemmOperands<T> p(Op::N, Op::N, 7, 5, 6, seed += 3);
  std::vector<T> nan_c = p.c;
  for (std::int64_t j = 0; j < p.n; ++j)
    for (std::int64_t i = 0; i < p.m; ++i) nan_c[i + j * p.ldc] = nan;
  // beta C, exactly: the scalings by 0.5 and -2 are exact, and 0 is 0 even over NaN; C's padding kept.
  const auto expect_scaled = [&](const std::vector<T>& c, const std::vector<T>& before, T beta,
                                 const std::string& what) {
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.ldc; ++i) {
        const T want = i < p.m ? (beta == T(0) ? T(0) : beta * before[i + j * p.ldc]) : before[i + j * p.ldc];
        ASSERT_EQ(c[i + j * p.ldc], want) << name << ", " << what << ": C(" << i << ", " << j << ")";
      }
  };
  for (const T beta : {T(0.5), T(1), T(0)}) {  // k = 0: C = beta C, A and B unread (null)
    const std::vector<T>& before = beta == T(0) ? nan_c : p.c;
    gemm::GemmArgs<T> g = p.args(T(1), beta);
    g.k = 0;
    expect_scaled(run(g, unread, unread, before).c, before, beta, "k = 0, beta " + std::to_string(double(beta)));
    ++cases;
  }
  const std::vector<T> nan_a(p.a.size(), nan), nan_b(p.b.size(), nan);
  for (const T beta : {T(-2), T(0)}) {  // alpha = 0: C = beta C, and A and B, all NaN, are not read
    const std::vector<T>& before = beta == T(0) ? nan_c : p.c;
    expect_scaled(run(p.args(T(0), beta), &nan_a, &nan_b, before).c, before, beta,
                  "alpha = 0 over NaN A and B, beta " + std::to_string(double(beta)));
    ++cases;
  }
  for (const bool rows : {true, false}) {  // m = 0 or n = 0: nothing happens (null where nothing is read)
    gemm::GemmArgs<T> g = p.args(T(1), T(0));
    (rows ? g.m : g.n) = 0;
    const GemmOutcome<T> out = run(g, rows ? unread : &p.a, rows ? &p.b : unread, p.c);
    EXPECT_TRUE(same_bytes(out.c, p.c)) << name << (rows ? ": m = 0" : ": n = 0") << " changed C";
    ++cases;
  }
  // NaN in A and Inf in B reach the entries they contribute to (and only those), or RangeError.
  std::vector<T> a_bad = p.a, b_bad = p.b;
  a_bad[2 + 4 * p.lda] = nan;                                 // A(2, 4): row 2 of C
  b_bad[1 + 3 * p.ldb] = std::numeric_limits<T>::infinity();  // B(1, 3): column 3 of C
  if (name.rfind(finite_only, 0) == 0) {
    expect_error<RangeError>([&] { run(p.args(T(1), T(0)), &a_bad, &b_bad, p.c); }, {name});
  } else {
    const GemmOutcome<T> out = run(p.args(T(1), T(0)), &a_bad, &b_bad, p.c);
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i)
        EXPECT_EQ(std::isfinite(double(out.c[i + j * p.ldc])), !(i == 2 || j == 3))
            << name << ": C(" << i << ", " << j << ")";
  }
  ++cases;
  return cases;
}

// check_gemm_contract_of for `be`'s data type (FP32 or FP64).
template <class Run>
int check_gemm_contract(const gemm::Backend& be, const Run& run, std::uint64_t seed, const std::string& finite_only) {
  return be.data_type() == gemm::DataType::F32 ? check_gemm_contract_of<float>(be.name(), run, seed, finite_only)
                                               : check_gemm_contract_of<double>(be.name(), run, seed, finite_only);
}

}  // namespace mixsolve::documented_guarantees
