// SPDX-License-Identifier: BSD-3-Clause
// Internal: the ranges of SolveOptions' fields, checked by Factorization's constructor and by
// set_solve_option (driver/options.cpp), one place for both.
#pragma once

#include "mixsolve/solvers/solve.hpp"

namespace mixsolve::solvers_detail {

// Throws InvalidArgument, "<where>: <field> (<value>) ...", for the first field of `options`
// outside its documented range (solve.hpp).
void check_solve_options(const char* where, const SolveOptions& options);

}  // namespace mixsolve::solvers_detail
