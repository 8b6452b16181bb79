// SPDX-License-Identifier: BSD-3-Clause
// Internal: the ranges of SolveOptions' and LeastSquaresOptions' fields, checked by
// Factorization's constructor and least_squares(), and by the options tables (driver/options.cpp).
#pragma once

#include "mixsolve/solvers/least_squares.hpp"
#include "mixsolve/solvers/solve.hpp"

namespace mixsolve::solvers_detail {

// Throws InvalidArgument, "<where>: <field> (<value>) ...", for the first field of `options`
// outside its documented range (solve_options.hpp).
void check_solve_options(const char* where, const SolveOptions& options);
// The same for LeastSquaresOptions (least_squares.hpp); a backend name must be an FP32 backend of
// the registry, and of A's memory where a_memory is given (least_squares() gives it).
void check_least_squares_options(const char* where, const LeastSquaresOptions& options,
                                 const Memory* a_memory = nullptr);

}  // namespace mixsolve::solvers_detail
