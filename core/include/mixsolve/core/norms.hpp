// Accuracy measures of design.md §4, against an FP64 reference.
#pragma once

#include <cstdint>

#include "mixsolve/core/matrix.hpp"

struct CUstream_st;

namespace mixsolve {

struct ErrorStats {
  // seed 000 eq. (6): ||C_ref - C||_F / ||C_ref||_F
  double relative_error = 0;
  // seed 004 eq. (21): max_ij |c*_ij - c_ij| / |c*_ij| over the entries with c*_ij != 0
  double max_relative_error = 0;
  // entries of C that are NaN or Inf
  std::int64_t nonfinite = 0;
};

// Compares `c` with the reference `ref` (same shape; both on the host or both on the device).
// Device comparisons run on `stream` and synchronise it to return the numbers.
ErrorStats compare_to_reference(const MatrixView<const float>& c, const MatrixView<const double>& ref,
                                CUstream_st* stream = nullptr);
ErrorStats compare_to_reference(const MatrixView<const double>& c, const MatrixView<const double>& ref,
                                CUstream_st* stream = nullptr);

}  // namespace mixsolve
