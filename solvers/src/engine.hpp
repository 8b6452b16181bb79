// SPDX-License-Identifier: BSD-3-Clause
// Internal: the interface between the solver's folders. The driver (driver/solve.cpp) and
// refinement (refinement/) are shared; an engine (lu/) holds the matrix and its factors in host or
// device memory and does the arithmetic there. The rules both LU engines follow: lu/lu_rules.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "mixsolve/core/context.hpp"
#include "mixsolve/core/hd.hpp"
#include "mixsolve/core/matrix.hpp"
#include "mixsolve/core/random.hpp"
#include "mixsolve/solvers/solve.hpp"
#include "precisions.hpp"

namespace mixsolve::solvers_detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What Engine::factor is asked for: a kind of factorization in a precision.
// range_scaling: factor mu R A S (SolveOptions::range_scaling; only asked for FP16, BF16 and
// fp16x3); a Cholesky scales symmetrically (R = S, symmetric_scaling in lu_rules.hpp), keeping
// mu S A S symmetric. apply_inverse then applies A^-1 ~ mu S M^-1 R.
// reuse_pivot_order (FP64 LU only): where an earlier LU of this engine completed, follow its row
// order with pivoting inside the diagonal blocks, checked against kReusedOrderMaxMultiplier,
// else partial pivoting (SolveOptions::reuse_pivot_order).
// collapse_below (FP32-stored LU factors; 0: never): stop with StopReason::CollapsedPivots where
// the pivots collapse (kCollapseMinPivots). FP64 and Ozaki LUs and every Cholesky run to the end
// or their first pivot that is not positive.
// diagonal_blocks (FP32-stored LU factors): A's rows in their own order, pivoting inside the
// diagonal blocks only, L21 = A21 U11^-1 on the update backend; checked against
// kReusedOrderMaxMultiplier, else partial pivoting (PivotOrder::DiagonalBlocks / ..Rejected).
// For a matrix close to its diagonal (SolveOptions::fp16_when_near_diagonal), where partial
// pivoting would search every column for nothing.
struct FactorRequest {
  FactorKind kind = FactorKind::Lu;
  Precision precision = Precision::FP64;
  bool range_scaling = false;
  bool reuse_pivot_order = false;
  double collapse_below = 0;
  bool diagonal_blocks = false;
};

// What Engine::factor reports.
struct FactorResult {
  // Converged (factors usable), ZeroPivot, Overflow, CollapsedPivots (LU), NotPositiveDefinite
  // (Cholesky)
  StopReason status = StopReason::Converged;
  std::int64_t zero_pivot_column = -1;  // ZeroPivot, NotPositiveDefinite: the pivot's column
  // NotPositiveDefinite: the pivot that was not positive (the Schur complement's diagonal entry,
  // of mu S A S where range-scaled), where known (not from cuSOLVER's dpotrf, which names the
  // column only); a Cholesky's largest_diagonal: max a_ii of that matrix.
  double breakdown_pivot = 0, largest_diagonal = 0;
  bool breakdown_pivot_known = true;
  PivotOrder pivot_order = PivotOrder::Partial;
  double largest_multiplier = 0;  // max |l_ij| of a reused order (also when it was rejected)
  std::int64_t reused_columns = 0;  // Reused: the leading columns that followed the order
  std::int64_t collapsed_at_column = -1;  // CollapsedPivots: the column up to which they had collapsed
  int emulated_bits = 0;  // Ozaki: the bits its emulated updates kept; 0 where none ran emulated
};

// What refinement (refinement.hpp) needs from a memory space, and all it may use: FP64 vectors
// and blocks of n rows there, the operator A, and the preconditioner M ~ A^-1 of the current
// factors. An LU engine provides it (Engine); QR or Cholesky factors would provide the same.
class RefinementSpace {
 public:
  virtual ~RefinementSpace() = default;
  virtual Memory memory() const = 0;
  // The context whose stream (device spaces) orders the space's work.
  virtual Context& context() = 0;
  std::int64_t n() const { return n_; }

  // The operator A, in FP64.
  // r := b - A x, each entry summed in `precision` (FP64, or Dot2: primitives/error_free.hpp), in
  // an order that does not change from call to call.
  virtual void residual(const MatrixView<const double>& x, const MatrixView<const double>& b,
                        const MatrixView<double>& r, ResidualPrecision precision) = 0;
  // y := A x in FP64 for vectors of length n.
  virtual void multiply(const double* x, double* y) = 0;
  // The componentwise backward error of x for b (core/norms.hpp), vectors of length n, with r =
  // b - A x from residual() as its numerator (deterministic where the engine's residual is): one
  // pass over A.
  virtual double componentwise_backward_error(const double* x, const double* b, const double* r) = 0;
  // ||column j||_inf for every column of m, into host memory.
  virtual void column_norms_inf(const MatrixView<const double>& m, double* out) = 0;

  // The preconditioner M ~ A^-1: y := (LU)^-1 P y for an n x k FP64 block, in FP64 arithmetic
  // for FP64 factors, and for FP32-stored factors up to kFp64ApplyMaxColumns columns (every GMRES
  // application); more columns with FP32 factors in FP32.
  virtual void apply_inverse(const MatrixView<double>& y) = 0;

  // FP64 vectors and blocks in the engine's memory.
  // An n x cols FP64 block of scratch memory owned by the engine, valid until scratch() is next
  // asked for the same slot with more columns (BestIterate keeps slot 4 across a whole solve).
  virtual MatrixView<double> scratch(int slot, std::int64_t cols) = 0;
  virtual void copy(const MatrixView<const double>& src, const MatrixView<double>& dst) = 0;
  // y += alpha x, x *= alpha, x . y, ||x||_2 on vectors of length n.
  virtual void axpy(double alpha, const double* x, double* y) = 0;
  virtual void scal(double alpha, double* x) = 0;
  virtual void zero(double* x) = 0;
  virtual double dot(const double* x, const double* y) = 0;
  // GMRES's Arnoldi step: w -= V (V^T w), twice (classical Gram-Schmidt with one
  // reorthogonalization, CGS2: as stable as modified Gram-Schmidt, in two mat-vecs per pass
  // instead of a synchronising dot per column), for the first `count` columns V of v. Writes the
  // sum of the two passes' projections to h[0 .. count) and returns ||w||_2.
  virtual double orthogonalize(const MatrixView<const double>& v, std::int64_t count, double* w, double* h) = 0;

 protected:
  std::int64_t n_ = 0;
};

// The rest of what the driver needs from a memory space: the checks and norms of A, the
// factorizations, and moving data between host and engine.
class Engine : public RefinementSpace {
 public:
  // SolveOptions::auto_min_n's default for this engine (cholesky_auto_min_n's for a Cholesky).
  virtual std::int64_t default_auto_min_n(FactorKind kind) const = 0;
  // SolveOptions::ozaki_bits: the bits a Precision::Ozaki LU's updates keep.
  void set_ozaki_bits(int bits) { ozaki_bits_ = bits; }
  // SolveOptions::factor_storage: the format apply_inverse reads FP32-stored factors in.
  void set_factor_storage(slfp::Format format) { factor_storage_ = format; }

  // The first factorization the driver will ask for, told before anything reads A: an engine may
  // prepare its copy of A in the same pass as the checks (the device engine's FP32 copy rides on
  // its scan of A). A hint only: factor() decides.
  virtual void expect_factorization(Precision p) {}
  // ||A||_inf of the FP64 matrix.
  virtual double norm_inf() = 0;
  // y := A^T x in FP64 for vectors of length n (engine memory).
  virtual void multiply_transpose(const double* x, double* y) = 0;
  // A's diagonal, and A's column j, into host memory (n values each).
  virtual void diagonal(double* host) = 0;
  virtual void column(std::int64_t j, double* host) = 0;
  // Position of a NaN or Inf in `m` (same memory space), or {-1, -1}.
  virtual std::pair<std::int64_t, std::int64_t> find_nonfinite(const MatrixView<const double>& m) = 0;
  // The first pair (i, j), i > j, in column-major order with A(i, j) != A(j, i), or {-1, -1}
  // for a symmetric A: one pass over A (the host's stops at that pair; the device's reads all of
  // A, so that the pair it names does not depend on the order its blocks run in).
  virtual std::pair<std::int64_t, std::int64_t> find_asymmetry() = 0;
  // Factorizes A as `request` asks (FactorRequest), replacing earlier factors. A Cholesky
  // A = L L^T reads A's lower triangle and is stored as the LU factors (L D^-1)(D L^T), D =
  // diag(L), with the identity as row order, so that every operation below serves both kinds.
  virtual FactorResult factor(const FactorRequest& request) = 0;
  // min |u_kk| / max |u_kk| over the current factors' diagonal (of mu R A S where range-scaled),
  // after a factorization that completed: the probe's screen (SolveOptions::probe_pivot_ratio).
  virtual double pivot_ratio() = 0;
  // y := Z^T y for one vector y of length n, where Z is apply_inverse's operator (Z ~ A^-1): the
  // condition estimate's A^-T (condition_estimate.hpp). The device engine applies FP32-stored
  // factors in FP32 arithmetic (the estimate needs a digit or two, not FP64 accuracy), the host
  // engine in FP64.
  virtual void apply_inverse_transpose(double* y) = 0;
  // Whether A's rows' or columns' largest entries spread over more than kEquilibrationSpread
  // (the two-sided range scaling's criterion): refinement then judges iterates by their
  // componentwise backward error (SolveReport::componentwise_backward_error).
  virtual bool badly_scaled() = 0;

  // n values between host memory and the engine's (download returns once they are on the host).
  virtual void upload(const double* host, double* y) = 0;
  virtual void download(const double* y, double* host) = 0;
  // m := random entries drawn from spec (core/random.hpp: the same values on host and device).
  virtual void fill_random(const MatrixView<double>& m, const RandomSpec& spec) = 0;
  // out := X^T Y for n x k blocks X and Y, into host memory (k x k, column-major): one
  // synchronisation for the k^2 inner products (the probe's Gram matrices).
  virtual void gram(const MatrixView<const double>& x, const MatrixView<const double>& y, double* out) = 0;
  // Y += X for n x k blocks.
  virtual void add(const MatrixView<const double>& x, const MatrixView<double>& y) = 0;

  virtual void synchronize() = 0;
  virtual std::size_t peak_workspace_bytes() const = 0;

 protected:
  int ozaki_bits_ = 40;
  slfp::Format factor_storage_ = slfp::Format::Fp32;
};

// The probe of the current factors (SolveOptions::probe_pivot_ratio): W = (LU)^-1 A Omega - Omega
// for a random n x kProbeColumns Omega, the factors applied as refinement applies them
// (apply_inverse); returns sigma_k(W) / ||Omega||_2, a lower bound on sigma_k((LU)^-1 A - I)
// because sigma_k(E Omega) <= sigma_k(E) ||Omega||_2, and for a random Omega about the root mean
// square of E's singular values beyond its k - 1 largest. NaN where the solve overflowed. Uses
// the engine's scratch slots 0-2. (solve.cpp)
constexpr int kProbeColumns = 4;
double probe_factors(Engine& e);

std::unique_ptr<Engine> make_host_engine(Context& ctx, const MatrixView<const double>& a, int block_size);
// A is read in place (it must outlive the engine and stay unchanged).
std::unique_ptr<Engine> make_device_engine(Context& ctx, const MatrixView<const double>& a, int block_size);

}  // namespace mixsolve::solvers_detail
