// SPDX-License-Identifier: BSD-3-Clause
// The device LU's panel kernel (solvers/src/lu/cuda/panel_factorization.cu) on its own, FP32 and FP64: P A =
// L U to the working precision's accuracy, the partial-pivoting bound |L| <= 1, LAPACK's pivot and
// zero-pivot conventions, for panels that take one sub-panel, several, and a short last one, on
// one or many blocks; and the triangular solver of the refinement and the unit-lower inverse of
// the block-row solves against FP64 substitution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "lu/cuda/lu_kernels.hpp"
#include "triangular/triangular_solver.hpp"
#include "gpu_test_support.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace {

using mixsolve::DeviceBuffer;
using mixsolve::testing::small_gpu_tests;
using mixsolve::solvers_detail::kPanelMaxWidth;
using mixsolve::solvers_detail::PanelWorkspace;

template <class T>
constexpr double kUnitRoundoff = std::numeric_limits<T>::epsilon() / 2;

template <class T>
struct PanelResult {
  std::vector<T> lu;
  std::vector<int> pivots;
  int first_zero = 0;
};

// Factors the m x w column-major panel `a` (leading dimension lda >= m) on the device by
// factor(device panel, its leading dimension, pivots, first_zero); with row_major, stored
// row-major on the device (leading dimension w + 5, the padding checked to be untouched) and
// returned column-major.
template <class T, class Factor>
PanelResult<T> factor_stored(const std::vector<T>& a, std::int64_t m, int w, std::int64_t lda, bool row_major,
                             Factor factor) {
  const std::int64_t ldr = w + 5;
  std::vector<T> stored = a;
  if (row_major) {
    stored.assign(ldr * m, T(-7));
    for (std::int64_t i = 0; i < m; ++i)
      for (int j = 0; j < w; ++j) stored[j + i * ldr] = a[i + j * lda];
  }
  DeviceBuffer<T> da(stored.size());
  da.copy_from_host(stored);
  DeviceBuffer<int> pivots(w), first_zero(1);
  const int none = 1 << 30;
  first_zero.copy_from_host(std::vector<int>{none});
  factor(da.data(), row_major ? ldr : lda, pivots.data(), first_zero.data());
  PanelResult<T> r{da.to_host(), pivots.to_host(), 0};
  if (row_major) {
    const std::vector<T> result = r.lu;
    r.lu = a;
    for (std::int64_t i = 0; i < m; ++i) {
      for (int j = 0; j < w; ++j) r.lu[i + j * lda] = result[j + i * ldr];
      for (std::int64_t j = w; j < ldr; ++j) EXPECT_EQ(result[j + i * ldr], T(-7)) << "row padding, row " << i;
    }
  }
  r.first_zero = first_zero.to_host()[0];
  if (r.first_zero == none) r.first_zero = -1;
  return r;
}

// The cooperative panel kernel (column offset 7 for the zero pivot).
template <class T>
PanelResult<T> factor_on_device(PanelWorkspace<T>& workspace, const std::vector<T>& a, std::int64_t m, int w,
                                std::int64_t lda, std::int64_t row_offset, bool row_major = false) {
  return factor_stored(a, m, w, lda, row_major, [&](T* da, std::int64_t ld, int* pivots, int* first_zero) {
    workspace.factor(da, ld, m, w, pivots, row_offset, first_zero, 7, nullptr, row_major);
  });
}

// max_ij |(P A - L U)_ij| / (|L| |U|)_ij in units of w u (T's unit roundoff; the products
// accumulated in long double, whose own error is negligible beside that), and max |L_ij|.
struct Check {
  double residual_ratio = 0, largest_multiplier = 0;
};
template <class T>
Check check_factors(const std::vector<T>& a, const PanelResult<T>& r, std::int64_t m, int w, std::int64_t lda,
                    std::int64_t row_offset) {
  std::vector<std::int64_t> row(m);  // (P A)(i, :) = A(row[i], :)
  std::iota(row.begin(), row.end(), 0);
  for (int j = 0; j < w; ++j) std::swap(row[j], row[r.pivots[j] - row_offset]);
  Check c;
  for (std::int64_t i = 0; i < m; ++i)
    for (int j = 0; j < w; ++j) {
      long double lu = 0, abs_lu = 0;
      for (int k = 0; k <= std::min<std::int64_t>(i, j); ++k) {
        const long double l = k == i ? 1.0L : (long double)r.lu[i + k * lda], u = r.lu[k + j * lda];
        lu += l * u;
        abs_lu += std::fabs(l * u);
      }
      const double diff = double(std::fabs((long double)a[row[i] + j * lda] - lu));
      c.residual_ratio = std::max(c.residual_ratio, diff / ((double(abs_lu) + 1e-300) * w * kUnitRoundoff<T>));
    }
  for (std::int64_t i = 0; i < m; ++i)
    for (int j = 0; j < std::min<std::int64_t>(i, w); ++j) c.largest_multiplier = std::max(c.largest_multiplier, double(std::fabs(r.lu[i + j * lda])));
  return c;
}

template <class T>
class GpuPanel : public ::testing::Test {};
using PanelTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GpuPanel, PanelTypes);

TYPED_TEST(GpuPanel, FactorsToWorkingAccuracyWithPartialPivoting) {
  using T = TypeParam;
  MIXSOLVE_REQUIRE_GPU();
  PanelWorkspace<T> workspace(33000, 32);  // one workspace for every case: the tags carry over launches
  ASSERT_TRUE(workspace.supported());
  std::mt19937_64 rng(42);
  std::normal_distribution<T> normal;
  struct Case {
    std::int64_t m;
    int w;
  };
  for (bool row_major : {false, true})
  for (const Case& t : {Case{1, 1}, Case{40, 31}, Case{300, 32}, Case{300, 33}, Case{1000, 100}, Case{256, 256},
                        Case{5000, 256}, Case{20000, 96}, Case{32768, 64}}) {
    // FP64: 32768 rows on 32 blocks do not fit 32-column sub-panels; that case takes 16-column ones.
    SCOPED_TRACE(row_major ? "row-major" : "column-major");
    const std::int64_t lda = t.m + 3, row_offset = 11;
    std::vector<T> a(lda * t.w);
    for (T& v : a) v = normal(rng);
    const PanelResult<T> r = factor_on_device(workspace, a, t.m, t.w, lda, row_offset, row_major);
    for (int j = 0; j < t.w; ++j) {
      ASSERT_GE(r.pivots[j], row_offset + j) << "m " << t.m << " w " << t.w << " column " << j;
      ASSERT_LT(r.pivots[j], row_offset + t.m);
    }
    EXPECT_EQ(r.first_zero, -1);
    const Check c = check_factors(a, r, t.m, t.w, lda, row_offset);
    EXPECT_LE(c.residual_ratio, 2.0) << "m " << t.m << " w " << t.w;
    EXPECT_LE(c.largest_multiplier, 1.0) << "m " << t.m << " w " << t.w;
    // Rows past m (the leading-dimension padding) are not touched.
    for (int j = 0; j < t.w; ++j)
      for (std::int64_t i = t.m; i < lda; ++i) ASSERT_EQ(r.lu[i + j * lda], a[i + j * lda]);
  }
}

TYPED_TEST(GpuPanel, TiesPickTheLowestRowAndAZeroColumnIsReported) {
  using T = TypeParam;
  MIXSOLVE_REQUIRE_GPU();
  PanelWorkspace<T> workspace(4096, 32);
  const std::int64_t m = 4096;
  const int w = 64;
  // Column 0: |a| = 1 everywhere (a tie over all rows, as isamax: the first row wins). Column 40
  // is zero: after the first 40 eliminations it still is, a zero pivot at panel column 40.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<T> uniform(-1, 1);
  std::vector<T> a(m * w);
  for (std::int64_t i = 0; i < m; ++i) {
    a[i] = (i % 3 == 0) ? T(-1) : T(1);
    for (int j = 1; j < w; ++j) a[i + j * m] = j == 40 ? T(0) : uniform(rng);
  }
  for (bool row_major : {false, true}) {
  SCOPED_TRACE(row_major ? "row-major" : "column-major");
  const PanelResult<T> r = factor_on_device(workspace, a, m, w, m, 0, row_major);
  EXPECT_EQ(r.pivots[0], 0);
  EXPECT_EQ(r.first_zero, 7 + 40);  // column_offset 7
  EXPECT_EQ(r.pivots[40], 40);      // an all-zero column: no interchange, as getf2
  for (std::int64_t i = 41; i < m; ++i) ASSERT_EQ(r.lu[i + 40 * m], T(0)) << "row " << i << ": unscaled";
  // With the zero pivot left in U, P A = L U still holds for the whole panel.
  const Check c = check_factors(a, r, m, w, m, 0);
  EXPECT_LE(c.residual_ratio, 2.0);
  EXPECT_LE(c.largest_multiplier, 1.0);
  }
}

// factor_diagonal_block (one thread block, FP64 arithmetic, pivots among the block's own rows)
// on the w x w column-major `a` of T, stored row-major (column offset 7 for the zero pivot).
template <class T>
PanelResult<T> factor_block_on_device(const std::vector<T>& a, int w, std::int64_t lda, std::int64_t row_offset) {
  DeviceBuffer<T> scratch(std::size_t(w) * w);
  return factor_stored(a, w, w, lda, true, [&](T* da, std::int64_t ld, int* pivots, int* first_zero) {
    mixsolve::solvers_detail::factor_diagonal_block(da, ld, w, pivots, row_offset, first_zero, 7, scratch.data(),
                                                    nullptr);
  });
}

// LAPACK's getf2 pivots (0-based, the lowest row on ties) of the w x w column-major `a`, by
// FP64 elimination on the host.
std::vector<int> host_partial_pivots(std::vector<double> a, int w, std::int64_t lda) {
  std::vector<int> pivots(w);
  for (int k = 0; k < w; ++k) {
    int p = k;
    for (int i = k + 1; i < w; ++i)
      if (std::fabs(a[i + k * lda]) > std::fabs(a[p + k * lda])) p = i;
    pivots[k] = p;
    for (int j = 0; j < w; ++j) std::swap(a[k + j * lda], a[p + j * lda]);
    if (a[k + k * lda] == 0) continue;
    for (int i = k + 1; i < w; ++i) {
      const double l = a[i + k * lda] / a[k + k * lda];
      a[i + k * lda] = l;
      for (int j = k + 1; j < w; ++j) a[i + j * lda] -= l * a[k + j * lda];
    }
  }
  return pivots;
}

// FP64 blocks (the FP64 LU in a reused order) and FP32 ones (a cheap LU in A's own order, FP32
// values rounded once per 32-column sub-panel): P A = L U to the storage's rounding.
template <class T>
void expect_block_factors_as_partial_pivoting() {
  std::mt19937_64 rng(43);
  std::normal_distribution<double> normal;
  // Widths below, at and between the 32-column sub-panels, up to the widest block.
  for (const int w : {1, 31, 32, 33, 77, 200, kPanelMaxWidth}) {
    const std::int64_t lda = w + 9, row_offset = 5;
    std::vector<T> a(lda * w);
    for (T& v : a) v = T(normal(rng));
    const PanelResult<T> r = factor_block_on_device(a, w, lda, row_offset);
    // The same choices as partial pivoting on the host: a Gaussian matrix's candidates differ by
    // far more than the rounding of the two eliminations' different summation orders.
    const std::vector<int> expected = host_partial_pivots(std::vector<double>(a.begin(), a.end()), w, lda);
    for (int j = 0; j < w; ++j) ASSERT_EQ(r.pivots[j], row_offset + expected[j]) << "w " << w << " column " << j;
    EXPECT_EQ(r.first_zero, -1);
    const Check c = check_factors(a, r, w, w, lda, row_offset);
    EXPECT_LE(c.residual_ratio, 2.0) << "w " << w;
    EXPECT_LE(c.largest_multiplier, 1.0) << "w " << w;
  }
}

TEST(GpuDiagonalBlock, FactorsToWorkingAccuracyWithThePivotsOfPartialPivoting) {
  MIXSOLVE_REQUIRE_GPU();
  {
    SCOPED_TRACE("FP64");
    expect_block_factors_as_partial_pivoting<double>();
  }
  SCOPED_TRACE("FP32");
  expect_block_factors_as_partial_pivoting<float>();
}

TEST(GpuDiagonalBlock, TiesPickTheLowestRowAndAZeroColumnIsReported) {
  MIXSOLVE_REQUIRE_GPU();
  std::mt19937_64 rng(44);
  std::normal_distribution<double> normal;
  // Column 0 is +-1 in every row (a tie: the first row wins, as idamax); column 40 is zero: after
  // the first 40 eliminations it still is, a zero pivot at column 40 (offset 7), left unscaled
  // with no interchange. P A = L U still holds.
  const int w = 64;
  std::vector<double> a(std::size_t(w) * w);
  for (int i = 0; i < w; ++i) {
    a[i] = i % 3 == 0 ? -1.0 : 1.0;
    for (int j = 1; j < w; ++j) a[i + j * w] = j == 40 ? 0.0 : normal(rng);
  }
  const PanelResult<double> r = factor_block_on_device(a, w, w, 0);
  EXPECT_EQ(r.pivots[0], 0);
  EXPECT_EQ(r.first_zero, 7 + 40);
  EXPECT_EQ(r.pivots[40], 40);
  for (int i = 41; i < w; ++i) ASSERT_EQ(r.lu[i + 40 * w], 0.0) << "row " << i << ": unscaled";
  const Check c = check_factors(a, r, w, w, w, 0);
  EXPECT_LE(c.residual_ratio, 2.0);
  EXPECT_LE(c.largest_multiplier, 1.0);
}

TYPED_TEST(GpuPanel, InterchangesAppliedAsMovesMatchSequentialSwaps) {
  using T = TypeParam;
  // A panel's interchanges (rows first .. first+count-1 swapped in order with rows at or below
  // them: inside the panel, below it, some rows hit twice) applied to the other columns through
  // interchanges_to_moves + apply_row_moves, against LAPACK's laswp order on the host.
  MIXSOLVE_REQUIRE_GPU();
  const std::int64_t n = 1500, lda = 1503, first = 512;
  std::mt19937_64 rng(11);
  for (bool row_major : {false, true})
  for (int count : {1, 37, kPanelMaxWidth}) {
    // element (r, c) of the n x n matrix (leading dimension lda) in the layout under test
    const auto at = [&](std::int64_t r, std::int64_t c) { return row_major ? c + r * lda : r + c * lda; };
    std::vector<int> pivots(n, 0);
    std::uniform_int_distribution<std::int64_t> below(first + count, n - 1);
    for (int i = 0; i < count; ++i) {
      const std::int64_t row = first + i;
      switch (rng() % 4) {
        case 0: pivots[row] = int(row); break;                                                  // none
        case 1: pivots[row] = int(row + rng() % std::uint64_t(first + count - row)); break;     // inside
        case 2: pivots[row] = int(below(rng)); break;                                           // below
        default: pivots[row] = int(first + count + (rng() % 3)); break;                         // repeated rows
      }
    }
    std::vector<T> a(lda * n);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = T(i);
    std::vector<T> expected = a;
    const std::int64_t skip0 = first, skip1 = first + count;
    for (std::int64_t c = 0; c < n; ++c) {
      if (c >= skip0 && c < skip1) continue;
      for (int i = 0; i < count; ++i) std::swap(expected[at(first + i, c)], expected[at(pivots[first + i], c)]);
    }
    DeviceBuffer<T> da(a.size());
    da.copy_from_host(a);
    DeviceBuffer<int> dp(n), to(2 * kPanelMaxWidth), from(2 * kPanelMaxWidth), moves(1);
    dp.copy_from_host(pivots);
    mixsolve::solvers_detail::interchanges_to_moves(dp.data(), first, count, to.data(), from.data(), moves.data(), nullptr);
    mixsolve::solvers_detail::apply_row_moves(da.data(), lda, to.data(), from.data(), moves.data(), 0, n, skip0, skip1,
                                              nullptr, row_major);
    const std::vector<T> got = da.to_host();
    EXPECT_LE(moves.to_host()[0], 2 * count);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], expected[i]) << (row_major ? "row-major" : "column-major") << " count " << count << " index " << i;
  }
}

TYPED_TEST(GpuPanel, RejectsPanelsWiderThanSupported) {
  using T = TypeParam;
  MIXSOLVE_REQUIRE_GPU();
  PanelWorkspace<T> workspace(1024, 8);
  DeviceBuffer<T> a(1024 * (kPanelMaxWidth + 1));
  DeviceBuffer<int> pivots(kPanelMaxWidth + 1), zero(1);
  EXPECT_THROW(workspace.factor(a.data(), 1024, 1024, kPanelMaxWidth + 1, pivots.data(), 0, zero.data(), 0, nullptr),
               mixsolve::InvalidArgument);
  EXPECT_THROW(workspace.factor(a.data(), 1024, 10, 11, pivots.data(), 0, zero.data(), 0, nullptr), mixsolve::InvalidArgument);
}

// invert_unit_lower (upper false) and invert_upper (upper true) against the inverse of the same
// triangle (T = FP32 or FP64 values) by FP64 substitution on the host. L and U come from partial
// pivoting on a Gaussian matrix (|L| <= 1, as in the LU), so their inverses are moderate. FP64
// substitution is accurate to |X^ - X| <= c w u64 |X| |M| |X| (Higham, Accuracy and Stability,
// 2nd ed., section 14.2), and the result is rounded once to T. The other triangle holds the
// other factor, which must be ignored (the LU stores both in one block).
template <class T>
void check_triangle_inverse(int w, std::int64_t ld, bool row_major, bool upper) {
  std::mt19937_64 rng(std::uint64_t(w * 7 + ld));
  std::normal_distribution<double> normal;
  std::vector<double> g(std::size_t(w) * w);  // column-major, eliminated in place
  for (auto& v : g) v = normal(rng);
  for (int k = 0; k < w; ++k) {
    int p = k;
    for (int i = k + 1; i < w; ++i)
      if (std::fabs(g[i + k * w]) > std::fabs(g[p + k * w])) p = i;
    for (int j = 0; j < w; ++j) std::swap(g[k + j * w], g[p + j * w]);
    for (int i = k + 1; i < w; ++i) {
      g[i + k * w] /= g[k + k * w];
      for (int j = k + 1; j < w; ++j) g[i + j * w] -= g[i + k * w] * g[k + j * w];
    }
  }
  std::vector<double> m(std::size_t(w) * w, 0.0);  // the triangle M (unit lower L or upper U) as T values
  std::vector<T> stored(std::size_t(ld) * w, T(99));
  for (int i = 0; i < w; ++i)
    for (int k = 0; k < w; ++k) {
      const T v = T(g[i + k * w]);
      stored[row_major ? k + i * ld : i + k * ld] = v;
      if (upper ? k >= i : k < i) m[i + k * w] = v;
    }
  if (!upper)
    for (int i = 0; i < w; ++i) m[i + i * w] = 1;
  std::vector<double> x(std::size_t(w) * w, 0.0);  // M^-1, column by column
  for (int c = 0; c < w; ++c) {
    if (upper) {
      for (int i = c; i >= 0; --i) {
        double s = i == c ? 1.0 : 0.0;
        for (int k = i + 1; k <= c; ++k) s -= m[i + k * w] * x[k + c * w];
        x[i + c * w] = s / m[i + i * w];
      }
    } else {
      x[c + c * w] = 1;
      for (int i = c + 1; i < w; ++i) {
        double s = 0;
        for (int k = c; k < i; ++k) s -= m[i + k * w] * x[k + c * w];
        x[i + c * w] = s;
      }
    }
  }
  std::vector<double> xm(std::size_t(w) * w, 0.0), bound(std::size_t(w) * w, 0.0);  // |X| |M|, |X| |M| |X|
  for (int j = 0; j < w; ++j)
    for (int k = 0; k < w; ++k)
      for (int i = 0; i < w; ++i) xm[i + j * w] += std::fabs(x[i + k * w]) * std::fabs(m[k + j * w]);
  for (int j = 0; j < w; ++j)
    for (int k = 0; k < w; ++k)
      for (int i = 0; i < w; ++i) bound[i + j * w] += xm[i + k * w] * std::fabs(x[k + j * w]);
  DeviceBuffer<T> da(stored.size()), inverse(std::size_t(w) * w);
  da.copy_from_host(stored);
  if (upper) mixsolve::solvers_detail::invert_upper(da.data(), ld, w, inverse.data(), nullptr, row_major);
  else mixsolve::solvers_detail::invert_unit_lower(da.data(), ld, w, inverse.data(), nullptr, row_major);
  const std::vector<T> got = inverse.to_host();  // row-major w x w
  EXPECT_EQ(da.to_host(), stored) << "the input is read only";
  int bad = 0;
  for (int i = 0; i < w; ++i)
    for (int c = 0; c < w; ++c) {
      const double want = x[i + c * w];
      const double tolerance = kUnitRoundoff<T> * std::fabs(want) + 4.0 * w * 0x1p-53 * bound[i + c * w];
      if (!(std::fabs(double(got[std::size_t(i) * w + c]) - want) <= tolerance) && bad++ < 5)
        ADD_FAILURE() << (upper ? "upper" : "unit lower") << " w " << w << " ld " << ld
                      << (row_major ? " row-major" : " column-major") << ": (" << i << ", " << c
                      << ") = " << got[std::size_t(i) * w + c] << ", want " << want;
    }
}

TEST(GpuTriangleInverse, MatchesFp64SubstitutionInBothLayoutsAndTypes) {
  MIXSOLVE_REQUIRE_GPU();
  for (bool upper : {false, true})
    for (bool row_major : {false, true}) {
      check_triangle_inverse<float>(kPanelMaxWidth, 300, row_major, upper);
      check_triangle_inverse<float>(200, 203, row_major, upper);  // a short last panel, columns not a multiple of 8
      check_triangle_inverse<float>(1, 1, row_major, upper);
      check_triangle_inverse<double>(kPanelMaxWidth, 257, row_major, upper);
      check_triangle_inverse<double>(77, 80, row_major, upper);
    }
  DeviceBuffer<float> a(1), inverse(1);
  EXPECT_THROW(mixsolve::solvers_detail::invert_unit_lower(a.data(), 1000, kPanelMaxWidth + 1, inverse.data(), nullptr),
               mixsolve::InvalidArgument);
  EXPECT_THROW(mixsolve::solvers_detail::invert_upper(a.data(), 1000, kPanelMaxWidth + 1, inverse.data(), nullptr),
               mixsolve::InvalidArgument);
}

// TriangularSolver (X := U^-1 L^-1 X, factors F, arithmetic V) against an FP64 substitution on
// the host with the same factors, for triangles that are well conditioned (off-diagonal entries
// below 1/n, diag(U) in [1, 2]), so the forward error is a few n u of V. Several solves with one
// solver (the launch tags advance), one to four vectors per solve (the vectors must not mix),
// short last blocks, and leading dimensions that do and do not allow 16-byte copies.
template <class F, class V>
void check_triangular_solver(std::int64_t n, std::int64_t ld, int solves) {
  std::mt19937_64 rng(std::uint64_t(n * 31 + ld));
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<F> lu(ld * n, F(0));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) lu[i + j * ld] = F(i == j ? 1.5 + 0.5 * u(rng) : u(rng) / double(n));
  DeviceBuffer<F> factors(lu.size());
  factors.copy_from_host(lu);
  mixsolve::solvers_detail::TriangularSolver<F, V> solver(factors.data(), n, ld, nullptr);
  const double unit_roundoff = sizeof(V) == 4 ? 0x1p-24 : 0x1p-53;
  for (int k = 0; k < solves; ++k) {
    const int columns = 1 + (k + int(n)) % mixsolve::solvers_detail::kTriangularSolveMaxColumns;
    const std::int64_t ldx = n + 3;  // padding between the vectors, which must stay untouched
    std::vector<V> b(ldx * columns);
    for (auto& v : b) v = V(u(rng));
    DeviceBuffer<V> dx(b.size());
    dx.copy_from_host(b);
    solver.solve(dx.data(), ldx, columns, nullptr);
    const std::vector<V> got = dx.to_host();
    for (int c = 0; c < columns; ++c) {
      std::vector<double> x(b.begin() + c * ldx, b.begin() + c * ldx + n);
      for (std::int64_t i = 0; i < n; ++i)  // L (unit diagonal)
        for (std::int64_t j = 0; j < i; ++j) x[i] -= double(lu[i + j * ld]) * x[j];
      for (std::int64_t i = n - 1; i >= 0; --i) {  // U
        for (std::int64_t j = i + 1; j < n; ++j) x[i] -= double(lu[i + j * ld]) * x[j];
        x[i] /= double(lu[i + i * ld]);
      }
      double error = 0, norm = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        error = std::max(error, std::fabs(double(got[c * ldx + i]) - x[i]));
        norm = std::max(norm, std::fabs(x[i]));
      }
      EXPECT_LE(error, 4.0 * double(n) * unit_roundoff * norm)
          << "n " << n << " ld " << ld << " solve " << k << " vector " << c << " of " << columns;
      for (std::int64_t i = n; i < ldx && c + 1 < columns; ++i)
        EXPECT_EQ(got[c * ldx + i], b[c * ldx + i]) << "padding row " << i << " of vector " << c;
    }
  }
}

TEST(GpuTriangularSolver, MatchesSubstitutionInFp64ForFp32FactorsAndFp64Vectors) {
  MIXSOLVE_REQUIRE_GPU();
  check_triangular_solver<float, double>(1, 1, 4);
  check_triangular_solver<float, double>(127, 130, 4);
  check_triangular_solver<float, double>(1000, 1003, 4);  // element copies (ld not a multiple of 4)
  check_triangular_solver<float, double>(1500, 1504, 4);  // 16-byte copies, short last block
  check_triangular_solver<float, double>(2048, 2048, 4);
  // More row blocks (266) than an H100 or H200 keeps resident at once: blocks that start after
  // others have ended.
  if (!small_gpu_tests()) check_triangular_solver<float, double>(17000, 17000, 1);
}

TEST(GpuTriangularSolver, MatchesSubstitutionInFp64ForFp64Factors) {
  MIXSOLVE_REQUIRE_GPU();
  check_triangular_solver<double, double>(63, 63, 4);
  check_triangular_solver<double, double>(700, 701, 4);   // element copies
  check_triangular_solver<double, double>(1000, 1002, 4); // 16-byte copies, short last block
  check_triangular_solver<double, double>(1024, 1024, 4);
}

// PackedFactors (SolveOptions::factor_storage): the FP32 factors packed in each format solve
// exactly as the FP32 solver does on the same factors rounded to that format on the host (the
// same arithmetic on the same values, bit for bit), one and four vectors, short last blocks.
TEST(GpuTriangularSolver, PackedFactorsSolveAsTheFp32SolverOnTheRoundedFactors) {
  MIXSOLVE_REQUIRE_GPU();
  using mixsolve::slfp::Format;
  mixsolve::Context host = mixsolve::Context::host_only();
  const std::vector<std::int64_t> orders =
      small_gpu_tests() ? std::vector<std::int64_t>{1, 200} : std::vector<std::int64_t>{1, 200, 1500};
  for (const Format f : {Format::Slfp32in24, Format::Slfp32in16, Format::Slfp64in32, Format::Slfp64in24,
                         Format::Slfp64in16})
    for (const std::int64_t n : orders) {
      const std::int64_t ld = (n + 31) / 32 * 32;  // 16-byte columns for every entry width, as the engine's
      std::mt19937_64 rng(std::uint64_t(n) + 17 * int(f));
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<float> lu(ld * n, 0.0f);
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < n; ++i) lu[i + j * ld] = float(i == j ? 1.5 + 0.5 * u(rng) : u(rng) / double(n));
      // The rounded factors, through the host's encode and decode.
      std::vector<float> rounded(lu.size());
      mixsolve::slfp::Storage stored(f, std::int64_t(lu.size()), mixsolve::Memory::Host);
      if (mixsolve::slfp::fp64_based(f)) {
        std::vector<double> wide(lu.begin(), lu.end());
        mixsolve::slfp::encode(host, wide.data(), stored.view(), mixsolve::formats::Rounding::NearestEven);
        mixsolve::slfp::decode(host, stored.view(), wide.data());
        rounded.assign(wide.begin(), wide.end());
      } else {
        mixsolve::slfp::encode(host, lu.data(), stored.view(), mixsolve::formats::Rounding::NearestEven);
        mixsolve::slfp::decode(host, stored.view(), rounded.data());
      }
      DeviceBuffer<float> d_lu(lu.size()), d_rounded(lu.size());
      d_lu.copy_from_host(lu);
      d_rounded.copy_from_host(rounded);
      mixsolve::solvers_detail::PackedFactors packed(f, d_lu.data(), n, ld, nullptr);
      mixsolve::solvers_detail::TriangularSolver<float, double> reference(d_rounded.data(), n, ld, nullptr);
      for (int columns = 1; columns <= mixsolve::solvers_detail::kTriangularSolveMaxColumns; columns += 3) {
        std::vector<double> b(n * columns);
        for (double& v : b) v = u(rng);
        DeviceBuffer<double> x1(b.size()), x2(b.size());
        x1.copy_from_host(b);
        x2.copy_from_host(b);
        packed.solve(x1.data(), n, columns, nullptr);
        // packed factors take one vector a launch: the reference too, for the same sums
        for (int c = 0; c < columns; ++c) reference.solve(x2.data() + c * n, n, 1, nullptr);
        const std::vector<double> got = x1.to_host(), expected = x2.to_host();
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], expected[i]) << mixsolve::slfp::to_string(f) << " n " << n << " columns " << columns
                                         << " entry " << i;
      }
      EXPECT_GE(packed.bytes(), std::size_t(ld * n * mixsolve::slfp::container_bits(f) / 8));
    }
  DeviceBuffer<float> factors(64 * 64);
  EXPECT_THROW(mixsolve::solvers_detail::PackedFactors(Format::Slfp64in48, factors.data(), 64, 64, nullptr),
               mixsolve::InvalidArgument);
}

TEST(GpuTriangularSolver, RejectsAColumnCountOutsideOneToFourAndAShortLeadingDimension) {
  MIXSOLVE_REQUIRE_GPU();
  // The solver inverts its diagonal blocks when it is built: identity factors, so that it reads
  // initialized memory (compute-sanitizer initcheck).
  std::vector<float> identity(64 * 64, 0.0f);
  for (int i = 0; i < 64; ++i) identity[i + 64 * i] = 1.0f;
  DeviceBuffer<float> factors(identity.size());
  factors.copy_from_host(identity);
  DeviceBuffer<double> x(64 * 5);
  x.set_zero();
  mixsolve::solvers_detail::TriangularSolver<float, double> solver(factors.data(), 64, 64, nullptr);
  EXPECT_THROW(solver.solve(x.data(), 64, 0, nullptr), mixsolve::InvalidArgument);
  EXPECT_THROW(solver.solve(x.data(), 64, 5, nullptr), mixsolve::InvalidArgument);
  EXPECT_THROW(solver.solve(x.data(), 63, 2, nullptr), mixsolve::InvalidArgument);
}

}  // namespace
