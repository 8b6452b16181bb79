// SPDX-License-Identifier: BSD-3-Clause
// Internal: least squares min ||b - A x||_2 (A m x n, m >= n, full rank) refined to FP64 accuracy
// from a QR of A in a cheaper precision, on the host (the model of the device solver).
//
// The refinement works on the augmented system (Bjorck 1967; Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., section 20.5)
//     [ I   A ] [ r ]   [ b ]
//     [ A^T 0 ] [ x ] = [ 0 ],
// whose solution is the least-squares x with its residual r = b - A x. Each step computes the
// residuals of both equations in FP64,
//     f = b - r - A x,   g = -A^T r,
// and solves the system for the corrections with the cheap factors A = Q R (Q = [Q1 Q2]):
//     h = R^-T g,   d = Q^T f,   dx = R^-1 (d1 - h),   dr = Q [h; d2],
// then x += dx, r += dr. Refining x alone against b - A x would not do: with a nonzero residual
// its limit is the solution of a perturbed problem, whose error grows with kappa^2 ||r||; the
// augmented form refines r as well and reaches FP64's accuracy where kappa(A) u_QR < 1.
//
// CGLS on the semi-normal equations: outer steps x += d with d the least-squares solution of
// A d ~ b - A x (FP64 residual), each d from CGLS right-preconditioned by the cheap factors' R in
// FP64 (no Q). With R from a QR of A in precision u_T, A R^-1 = Q (I + E), ||E|| ~ u_T kappa(A):
// its singular values cluster at 1 with a few outliers where u_T / sigma_i is large, which CG
// removes one by one; the plain step's stationary iteration contracts only by ||E||.
//
// GMRES-LS (Carson, Higham & Pranesh, SIAM J. Sci. Comput. 42, 2020): the same outer steps, each
// correction from GMRES on the augmented system left-preconditioned by that cheap solve,
// M^-1 K z = M^-1 [f; g], K = [I A; A^T 0] applied in FP64. Where the plain step diverges
// (kappa(A) u_QR near 1 or beyond: the preconditioned K is I + E with ||E|| >~ 1) GMRES still
// converges, in more inner steps as kappa grows.
#pragma once

#include <cstdint>
#include <vector>

#include "mixsolve/core/matrix.hpp"
#include "mixsolve/solvers/least_squares.hpp"
#include "qr/householder_qr.hpp"

namespace mixsolve::solvers_detail {

// How the refinement ends: LeastSquaresStop's Converged, Stagnated, Diverged or MaxIterations
// (their meaning in least_squares.hpp; Diverged also where the corrections overflowed: x and r are
// then not to be trusted). The driver adds the stops that come before any refinement.
struct LsRefinementResult {
  LeastSquaresStop stop = LeastSquaresStop::MaxIterations;
  int iterations = 0;
  int inner_iterations = 0;        // CGLS's iterations over all outer steps (LsMethod::Cgls)
  std::vector<double> dx_history;  // ||dx||_2 / ||x||_2 after each step
  std::vector<double> dr_history;  // ||dr||_2 / ||b||_2 (0 where b = 0)
};

// Whether a refinement's x is taken: it converged or stagnated at FP64's attainable accuracy.
inline bool accepted(LeastSquaresStop stop) {
  return stop == LeastSquaresStop::Converged || stop == LeastSquaresStop::Stagnated;
}

// e with 2^e > largest >= 2^(e - 1), clamped to [-1020, 1020], or 0 for a zero or non-finite
// largest: scaling by 2^-e brings a right-hand side into the factors' range (exactly, and with a
// finite scale), for the host's steps and the device's.
int rhs_scale_exponent(double largest);

// One right-hand side's refinement in some memory space: its b, x and r, A and the factors.
class LsSteps {
 public:
  struct Norms {
    double x, dx, dr;  // ||x||_2 after the step, ||dx||_2, ||dr||_2
  };
  struct Start {
    double b, r;  // ||b||_2, ||r||_2 = ||b - A x||_2 of the first x
  };
  virtual ~LsSteps() = default;
  // x := the factors' solution, r := b - A x in FP64.
  virtual Start start() = 0;
  // One step: f = b - r - A x and g = -A^T r in FP64, the corrections from the factors (the
  // right-hand sides scaled by a power of two into the factors' range), x += dx, r += dr.
  virtual Norms step() = 0;
  // One step of refining x alone: f = b - A x in FP64, x += a_scale R^-1 (Q^T f)(1:n) from the
  // factors (dr reported 0; r is not kept). Steps without a Q (the semi-normal ones) do not
  // refine x alone, nor take GMRES-LS's operations below: std::logic_error.
  virtual Norms x_step();
  virtual std::int64_t rows() const = 0;  // m
  // ||b - A x||_2 in FP64 for the current x.
  virtual double residual_norm() = 0;

  // GMRES-LS's operations, on augmented vectors [u (m); y (n)] in FP64 held in numbered slots, in
  // the variables of the factors' matrix A' = a_scale A and the scaled augmented system
  // K = [alpha I, A'; A'^T, 0] (Carson, Higham & Pranesh, Sec. 3: alpha near sigma_min keeps the
  // preconditioned K well conditioned; alpha a power of two), correction [dr / alpha; dx / a_scale].
  // Makes room for `slots` vectors.
  virtual void reserve(int slots);
  // slot `to` := [b - r - A x; -A'^T r / alpha].
  virtual void residual(int to, double alpha);
  // slot `to` := the factors' solution of K z = slot `from`.
  virtual void precondition(int from, int to, double alpha);
  // slot `to` := K slot `from`.
  virtual void augmented_product(int from, int to, double alpha);
  virtual double dot(int a, int b);
  // slot `to` += factor slot `from`; slot := factor slot.
  virtual void axpy(double factor, int from, int to);
  virtual void scale(int slot, double factor);
  // z = sum_i coefficients[i] slot i; r += alpha z_u, x += a_scale z_y.
  virtual Norms add_correction(const std::vector<double>& coefficients, double alpha);

  // CGLS's operations (LsMethod::Cgls; the semi-normal steps have them), in FP64 on the steps' own
  // vectors: the correction problem min ||A' d - f|| for f = (b - A x) 2^-e (e from max |b - A x|,
  // so that A'^T f cannot overflow), in d's variables with the normal equations preconditioned by
  // (R^T R)^-1 (the iterates of CGLS right-preconditioned by R, with one solve by R^T R each).
  // r := f, g := A'^T r, z := (R^T R)^-1 g, p := z, d := 0 and the kept d := 0; returns g^T z
  // (= ||R^-T A'^T r||^2, CGLS's ||s||^2).
  virtual double cg_begin();
  // q := A' p; returns ||q||^2.
  virtual double cg_product();
  // d += alpha p, r -= alpha q, g := A'^T r, z := (R^T R)^-1 g; returns g^T z.
  virtual double cg_update(double alpha);
  // p := z + beta p.
  virtual void cg_direction(double beta);
  // The kept d := d.
  virtual void cg_keep();
  // x += a_scale (kept d) 2^e; returns ||x||, ||dx|| and the change of ||b - A x|| it makes.
  virtual Norms cg_finish();
};

// How each outer step corrects x and r. The corrections can shrink relative to an x that has
// grown away from the solution (GMRES-LS at svd_geo 1e8), so an x is accepted only if its
// residual norm ||b - A x|| is no larger than the cheap factors' first x's (up to 2^-20 of it and
// 2^-40 ||b||): the least-squares solution minimises it. Its residual -A'^T r / alpha is formed unscaled: where b
// lies within a factor m / alpha of FP64's largest value it can overflow (reported diverged),
// which the plain steps avoid by scaling r first.
//
// XOnly refines x alone, x += R^-1 Q^T (b - A x): where the system is consistent its limit is
// FP64-accurate (the perturbed problem it solves differs by kappa^2 ||r|| u, and r = 0), so an x
// is accepted only if ||b - A x|| <= 8 sqrt(m) 2^-53 (||b|| + ||A|| ||x||), FP64's rounding level,
// ||A|| estimated from below by max |r_jj| / a_scale.
//
// Cgls takes each outer step's correction from CGLS (Bjorck, Numerical Methods for Least Squares
// Problems, 1996, section 7.4; r recurred, A^T r recomputed) on min ||A' d - f||, right-preconditioned by R:
// until ||s|| = ||R^-T A'^T r|| falls to 2^-26 of its start or fails to halve in an iteration
// (FP64's noise, or a plateau the next outer step restarts from); d is taken where ||s|| was
// smallest.
enum class LsMethod { Augmented, Gmres, XOnly, Cgls };

// What the refinement takes from the factors' R (A' = a_scale A = Q R).
struct LsFactorScales {
  double smallest_r = 1;      // min_j |r_jj|: GMRES-LS's estimate of sigma_min(A') (from above)
  double norm_a = 0;          // max_j |r_jj| / a_scale: XOnly's estimate of ||A|| (from below)
  double diagonal_ratio = 1;  // min_j |r_jj| / max_j |r_jj| >= 1 / kappa(A)
};

// The factors behind a refinement, for its stop rule: where the corrections stop halving, cheap
// factors' x is accepted (Stagnated) only after two halvings down to 2^-16 (or at 2^-40; with
// LsMethod::Cgls only at FP64's attainable accuracy instead), an FP64 QR's at once (its first
// solution is the FP64 QR's), the semi-normal steps' after one halving (their first solution, the
// semi-normal equations', carries an error of order u kappa^2).
enum class LsFactorKind { Cheap, Fp64Qr, SemiNormal };

// The refinement loop and its stop rule (LsRefinementResult::stop) over any memory space's steps.
LsRefinementResult refine(LsSteps& steps, LsFactorKind factors, int max_iterations,
                          LsMethod method = LsMethod::Augmented, const LsFactorScales& scales = {});

// Several right-hand sides t_j of one A refined together: CGLS on the semi-normal equations
// (LsMethod::Cgls of the semi-normal steps, refine_semi_normal), each column with its own
// scalars, iterations and stop, the products of all columns as one matrix product (one pass over
// A for them all, where column by column each iteration reads A twice per column). A is used as
// given (no a_scale); R (k x k, FP64, an R of A or close to one) preconditions. Each call acts on
// the columns a mask selects (nonzero), the others untouched.
class LsBlockSteps {
 public:
  virtual ~LsBlockSteps() = default;
  virtual std::int64_t rows() const = 0;     // m
  virtual std::int64_t columns() const = 0;  // the right-hand sides
  // Y := the semi-normal solutions (R^T R)^-1 A^T T where not started from a given Y; F := T - A Y
  // in FP64. Each column's ||t_j|| and ||t_j - A y_j||.
  virtual std::vector<LsSteps::Start> start() = 0;
  // ||t_j - A y_j||_2 in FP64 for the current Y, every column.
  virtual std::vector<double> residual_norms() = 0;
  // LsSteps::cg_begin for each selected column (its own scale 2^-e_j of f_j); returns gamma_j
  // (0 for the others).
  virtual std::vector<double> cg_begin(const std::vector<char>& selected) = 0;
  // q_j := A p_j for the selected columns; returns ||q_j||^2.
  virtual std::vector<double> cg_product(const std::vector<char>& selected) = 0;
  // LsSteps::cg_update for the columns with alpha_j != 0; returns their new gamma_j.
  virtual std::vector<double> cg_update(const std::vector<double>& alpha) = 0;
  // p_j := z_j + beta_j p_j for the columns with beta_j != 0.
  virtual void cg_direction(const std::vector<double>& beta) = 0;
  // The kept d_j := d_j for the selected columns.
  virtual void cg_keep(const std::vector<char>& selected) = 0;
  // LsSteps::cg_finish for the selected columns (y_j += kept d_j 2^e_j, f_j := t_j - A y_j); their
  // norms (NaN for the others).
  virtual std::vector<LsSteps::Norms> cg_finish(const std::vector<char>& selected) = 0;
};

// The block refinement: for each column the iterations and the stop refine(steps, Cheap,
// max_iterations, LsMethod::Cgls, scales) gives that column's own steps (the same rules).
std::vector<LsRefinementResult> refine_block(LsBlockSteps& steps, int max_iterations, const LsFactorScales& scales);

// x (n) and r (m): the least-squares solution of A x ~ b and its residual, from `qr` (a QR of
// a_scale A rounded to T, in precision T; a_scale a power of two that brings A into T's range),
// refined in FP64 for at most max_iterations steps. A is read in FP64 (host memory). The first x
// is the cheap factors' solution. Every right-hand side passed to the factors is scaled by a power
// of two into T's range first, so tiny residuals do not underflow there.
template <class T>
LsRefinementResult refine_least_squares(const MatrixView<const double>& a, const double* b, const HouseholderQr<T>& qr,
                                        double a_scale, int max_iterations, double* x, double* r,
                                        LsMethod method = LsMethod::Augmented, const LsFactorScales& scales = {});

// x (n): the least-squares solution of A x ~ b from an R of A' = a_scale A alone (r: n x n,
// upper triangular, FP64, host memory), by the corrected semi-normal equations iterated (Bjorck,
// BIT 27, 1987): x_0 = a_scale (R^T R)^-1 A'^T b, then x += a_scale (R^T R)^-1 A'^T (b - A x), the
// residuals in FP64. With Q_1 = A' R^-1 the augmented step above is exactly this step (d_1 - h =
// R^-T A'^T (f + r) = R^-T A'^T (b - A x), dr = f - A' dx'), so it needs no Q. Each step's dr is
// the change of b - A x it makes. An R from Cholesky QR preconditioned by the FP32 R (the driver's
// CholeskyQr attempt) converges in 2-4 steps to the FP64 QR's accuracy up to kappa ~ 1e10; the
// stop rule takes it as FP64 factors (factors SemiNormal). method Cgls takes each correction from
// CGLS instead, as for a cheap QR's R (in FP64; factors Cheap).
// start_from_x: x holds the first solution already (for CGLS, the cheap factors' own: a_scale
// R^-1 (Q^T b)(1:n), off by about u_T kappa where the semi-normal equations' is off by u_T kappa^2).
LsRefinementResult refine_semi_normal(const MatrixView<const double>& a, const double* b,
                                      const MatrixView<const double>& r, double a_scale, int max_iterations, double* x,
                                      const LsFactorScales& scales = {},
                                      LsFactorKind factors = LsFactorKind::SemiNormal,
                                      LsMethod method = LsMethod::Augmented, bool start_from_x = false);

// refine_semi_normal with LsMethod::Cgls (factors Cheap, a_scale 1) for every column of T
// (m x c, host) at once: Y (k x c, host) the least-squares solutions of A Y ~ T, refine_block's
// results, from Y as given where start_from_y.
std::vector<LsRefinementResult> refine_semi_normal_block(const MatrixView<const double>& a,
                                                         const MatrixView<const double>& t,
                                                         const MatrixView<const double>& r, int max_iterations,
                                                         const MatrixView<double>& y, const LsFactorScales& scales,
                                                         bool start_from_y);

// x (n) := the factors' solution a_scale R^-1 (Q^T b)(1:n) of `qr` (a QR of a_scale A in T), b
// scaled by a power of two into T's range first.
template <class T>
void factors_solution(const MatrixView<const double>& a, const double* b, const HouseholderQr<T>& qr, double a_scale,
                      double* x);

}  // namespace mixsolve::solvers_detail
