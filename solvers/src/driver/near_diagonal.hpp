// SPDX-License-Identifier: BSD-3-Clause
// Internal: the screen that lets Auto try an FP16 LU first on a matrix close to its diagonal
// (SolveOptions::fp16_when_near_diagonal; driver/solve.cpp).
//
// With D = diag(A) and B = D^-1 (A - D), theta = ||B||_2 < 1 makes A = D (I + B) invertible with
// cond_2(I + B) <= (1 + theta) / (1 - theta). An LU of such a matrix updates each trailing entry
// by products of multipliers and off-diagonal entries of size ~theta relative to the diagonal, so
// the rounding of FP16 products costs ~u_16 theta^2 of the diagonal where that of fp16x3 costs
// ~u_32: for small theta the one-product FP16 LU is as good a preconditioner as three products
// (an HPL-MxP matrix, theta ~ 2.3 / sqrt(n), converges in 2 classic steps from FP16 factors,
// docs/solver.md). The screen is an estimate, not a proof: where FP16 refinement fails anyway,
// the ladder goes on to the next rung.
#pragma once

#include "engine.hpp"

namespace mixsolve::solvers_detail {

// Under Auto the FP16 LU goes first where near_diagonal_estimate() is at most this.
constexpr double kNearDiagonalMax = 0.125;
// The screen's cost: the columns it reads first, then the power-iteration steps (two mat-vecs
// each) for the matrices those columns do not rule out.
constexpr int kNearDiagonalColumns = 4;
constexpr int kNearDiagonalPowerSteps = 3;

// An estimate of theta = ||D^-1 (A - D)||_2 (see the file comment), returning early with a value
// above `reject_above` once a lower bound passes it:
//  1. D, and ||B e_j||_2 for kNearDiagonalColumns columns j spread over A (exact lower bounds on
//     theta from n values each: most matrices end here, at the cost of reading 5 n values);
//  2. kNearDiagonalPowerSteps steps of the power iteration on B^T B from a fixed random vector
//     (B x = D^-1 A x - x, B^T y = A^T D^-1 y - y), each ||B x|| / ||x|| and ||B^T y|| / ||y|| a
//     lower bound on theta; the largest is returned.
// INFINITY where a diagonal entry is 0 (B does not exist). Uses the engine's scratch slots 0-1.
double near_diagonal_estimate(Engine& e, double reject_above);

}  // namespace mixsolve::solvers_detail
