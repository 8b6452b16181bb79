// SPDX-License-Identifier: BSD-3-Clause
/// @file
/// The errors the solvers throw about the matrix itself: each names the column where the
/// factorization found it.
#pragma once
#include <cstdint>
#include <string>

#include "mixsolve/core/error.hpp"

namespace mixsolve {

/// A property of A, found by a factorization, that keeps the solver from an answer; column()
/// says where the factorization found it.
class ColumnError : public Error {
 public:
  /// @param message the text what() returns.
  /// @param column  the column (0-based) where the factorization found it.
  ColumnError(const std::string& message, std::int64_t column) : Error(message), column_(column) {}
  /// @return the column (0-based) where the factorization found it.
  std::int64_t column() const { return column_; }

 private:
  std::int64_t column_;
};

/// Exactly singular A: a zero pivot in the FP64 LU; column() is the pivot's column. Thrown by
/// solve() and Factorization::solve().
class SingularMatrix : public ColumnError {
 public:
  using ColumnError::ColumnError;
};

/// A that is not positive definite although declared so (SolveOptions::structure Spd): the FP64
/// Cholesky met a pivot that is not positive; column() is its column. Thrown by solve() and
/// Factorization::solve().
class NotPositiveDefinite : public ColumnError {
 public:
  using ColumnError::ColumnError;
};

/// A numerically rank-deficient A in least squares: ||A v||_2 <= max(m, n) 2^-53 ||A||_F for a
/// unit vector v (R's estimate of the smallest singular vector, by inverse iteration; checked
/// where R's diagonal spans more than 2^10); column() is the column of the smallest |r_jj|,
/// where the estimate started. Thrown by least_squares().
class RankDeficientMatrix : public ColumnError {
 public:
  using ColumnError::ColumnError;
};

}  // namespace mixsolve
