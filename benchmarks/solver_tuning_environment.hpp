// SPDX-License-Identifier: BSD-3-Clause
// For measurements: MIXSOLVE_* environment variables set the solver's tuning knobs
// (solvers/src/tuning.hpp; the library itself never reads the environment). An unset or empty
// variable keeps the default; a switch is off at "0" and on at any other value; a count must be
// a positive integer (anything else is an error naming the variable).
//   MIXSOLVE_FP64_LU=engine|cusolver   the FP64 LU's route
//   MIXSOLVE_LU_LOOKAHEAD=0            no look-ahead: every phase on one stream
//   MIXSOLVE_LU_GROUP=g                panels per bulk update
//   MIXSOLVE_PANEL_BLOCKS=b            blocks of the cooperative panel kernel
//   MIXSOLVE_LU_CHAIN_SMS=m            multiprocessors left to the chain in a reused row order
//   MIXSOLVE_DIAGONAL_BLOCKS=never|always  which LUs pivot inside their diagonal blocks only
//                                      (default: the FP16 LU of the near-diagonal screen)
//   MIXSOLVE_L21_FP16X3=1              such LUs' L21 = A21 U11^-1 on fp16x3
//   MIXSOLVE_LU_PACKED_L=0             the fp16x3 backend splits L21 itself
//   MIXSOLVE_SCAN_COPY=0               the scan of A writes no FP32 copy
//   MIXSOLVE_LU_ROW_MAJOR=0            column-major FP32 factors
//   MIXSOLVE_CHOLESKY_CHUNK=k          the Cholesky's update products cut to inner dimension k
//   MIXSOLVE_CHOLESKY_TENSOR_K=k       the Cholesky's products shorter than k on cuBLAS (1: none)
//   MIXSOLVE_PANEL_NARROW=1            FP64 panels always in 16-column sub-panels
//   MIXSOLVE_OZAKI_BLOCK=c             columns of the Ozaki LU's outer blocks
//   MIXSOLVE_LU_PROFILE=1              LU, Cholesky and solve phase times (and the least-squares
//                                      rank-revealing attempt's stages) to stderr
//   MIXSOLVE_LU_TIMELINE=file          with the profile: every phase per stream, CSV
//   MIXSOLVE_GMRES_TRACE=1             each GMRES budget judgement to stderr
#pragma once

#include <cstdlib>
#include <string>

#include "mixsolve/core/error.hpp"
#include "tuning.hpp"

namespace mixsolve::bench {

inline void apply_solver_tuning_environment() {
  using solvers_detail::Tuning;
  Tuning& t = solvers_detail::tuning();
  const auto text = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  const auto integer = [&](const char* name, int& knob) {
    const std::string v = text(name);
    if (v.empty()) return;
    const int value = std::atoi(v.c_str());
    if (value <= 0 || std::to_string(value) != v)
      throw InvalidArgument(std::string(name) + "=\"" + v + "\" is not a positive integer");
    knob = value;
  };
  const auto flag = [&](const char* name, bool& knob) {
    if (const std::string v = text(name); !v.empty()) knob = v != "0";
  };
  if (const std::string route = text("MIXSOLVE_FP64_LU"); route == "engine") t.fp64_route = Tuning::Fp64Route::Engine;
  else if (route == "cusolver") t.fp64_route = Tuning::Fp64Route::Cusolver;
  else if (!route.empty())
    throw InvalidArgument("MIXSOLVE_FP64_LU=\"" + route + "\" is not engine or cusolver");
  if (const std::string v = text("MIXSOLVE_DIAGONAL_BLOCKS"); v == "never")
    t.diagonal_block_pivoting = Tuning::DiagonalBlockPivoting::Never;
  else if (v == "always")
    t.diagonal_block_pivoting = Tuning::DiagonalBlockPivoting::Always;
  else if (!v.empty())
    throw InvalidArgument("MIXSOLVE_DIAGONAL_BLOCKS=\"" + v + "\" is not never or always");
  flag("MIXSOLVE_L21_FP16X3", t.fp32_accurate_l21);
  flag("MIXSOLVE_LU_LOOKAHEAD", t.look_ahead);
  integer("MIXSOLVE_LU_GROUP", t.update_group);
  integer("MIXSOLVE_PANEL_BLOCKS", t.panel_blocks);
  integer("MIXSOLVE_OZAKI_BLOCK", t.emulated_lu_block);
  integer("MIXSOLVE_LU_CHAIN_SMS", t.in_order_chain_multiprocessors);
  flag("MIXSOLVE_LU_PACKED_L", t.packed_l21);
  flag("MIXSOLVE_SCAN_COPY", t.scan_copy);
  flag("MIXSOLVE_LU_ROW_MAJOR", t.row_major_factors);
  integer("MIXSOLVE_CHOLESKY_CHUNK", t.cholesky_inner_chunk);
  integer("MIXSOLVE_CHOLESKY_TENSOR_K", t.cholesky_tensor_min_inner);
  flag("MIXSOLVE_PANEL_NARROW", t.narrow_panels_only);
  flag("MIXSOLVE_LU_PROFILE", t.profile);
  t.timeline_path = text("MIXSOLVE_LU_TIMELINE");
  flag("MIXSOLVE_GMRES_TRACE", t.gmres_trace);
}

}  // namespace mixsolve::bench
