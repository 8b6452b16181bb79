// SPDX-License-Identifier: BSD-3-Clause
// Internal: GMRES's Krylov basis stored in an SLFP format (SolveOptions::krylov_basis_format), in
// the refinement space's memory: n x columns values, each column rounded (RN) when it is stored and
// widened to FP64 when it is read, every product in FP64 (slfp::gemv).
//
// Why GMRES still works with the rounded basis V~ = V + E, |E| <= u |V| (u: the format's unit
// roundoff). The Gram-Schmidt projections and subtractions both use V~, so each new direction is
// orthogonalized against the vectors GMRES actually keeps; the Arnoldi relation then holds for V~
// up to u-sized terms, and GMRES minimizes the residual over span(V~), which is a Krylov space of
// a nearby operator. What is lost: the Givens estimate follows the true residual only down to
// about u times the first residual, so an inner solve asked for more than that stops at the
// u-level (the outer refinement then takes one more step). A basis format with u below the inner
// tolerance keeps the iteration counts (Aliaga, Anzt, Gruetzmacher, Quintana-Orti, Tomas,
// "Compressed basis GMRES on high-performance graphics processing units", IJHPCA 2022: the
// same observation for Ginkgo's CB-GMRES).
#pragma once

#include <cstdint>
#include <vector>

#include "engine.hpp"
#include "mixsolve/core/context.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::solvers_detail {

class StoredKrylovBasis {
 public:
  // `columns` columns of the space's n values in `format` (an FP64-based one: the products are
  // FP64), in the space's memory.
  StoredKrylovBasis(RefinementSpace& space, std::int64_t columns, slfp::Format format);

  std::int64_t columns() const { return columns_; }
  // The format's unit roundoff (RN).
  double unit_roundoff() const { return slfp::unit_roundoff(values_.view().format); }
  // v_j := w rounded to the format.
  void store(std::int64_t j, const double* w);
  // out := v_j widened (out: n values in the space's memory).
  void load(std::int64_t j, double* out);
  // GMRES's Arnoldi step against the first `count` columns: w -= V (V^T w), twice (CGS2, as
  // RefinementSpace::orthogonalize); writes the sum of the two projections to h[0 .. count) (host
  // memory) and returns ||w||_2.
  double orthogonalize(std::int64_t count, double* w, double* h);
  // d += V y for the first `count` columns, y in host memory.
  void add_combination(std::int64_t count, const double* y, double* d);

 private:
  slfp::Matrix leading(std::int64_t count) const;
  void to_host(const double* from, double* host, std::int64_t count);

  RefinementSpace& space_;
  std::int64_t n_ = 0, columns_ = 0;
  slfp::Storage values_;       // n x columns, ld = n
  slfp::Storage projections_;  // FP64: two passes' projections, then y
};

}  // namespace mixsolve::solvers_detail
