// SPDX-License-Identifier: BSD-3-Clause
// Internal: the solver's tuning knobs with their measured defaults (docs/solver.md), in one
// process-wide struct. The library never reads the environment: tests set these to exercise
// each variant, and solve_benchmark maps MIXSOLVE_* variables onto them
// (benchmarks/solver_tuning_environment.hpp) for measurements.
#pragma once

#include <string>

namespace mixsolve::solvers_detail {

struct Tuning {
  // The FP64 LU's route: BySize takes the device engine's blocked LU from kFp64EngineMinN rows on
  // and cuSOLVER's dgetrf below; Engine forces the engine where its panel kernel fits. The FP64
  // Cholesky takes cuSOLVER's dpotrf but under Engine, which runs the engine's recursion.
  enum class Fp64Route { BySize, Engine, Cusolver };
  Fp64Route fp64_route = Fp64Route::BySize;
  // Panel factorization on its own stream ahead of the trailing updates; off: all on one stream.
  bool look_ahead = true;
  // Panels whose trailing updates a bulk update applies at once; 0 (or less): the default for the
  // size.
  int update_group = 0;
  // Blocks (one per multiprocessor) of the cooperative panel kernel; 0 (or less): kDefaultPanelBlocks.
  int panel_blocks = 0;
  // Multiprocessors left to the panel chain while an LU follows a reused row order; 0 (or less):
  // kInOrderChainMultiprocessors.
  int in_order_chain_multiprocessors = 0;
  // Which LUs pivot inside their diagonal blocks only (FactorRequest::diagonal_blocks): the FP16 LU
  // that the near-diagonal screen put first (Screened), none (Never: partial pivoting there too),
  // or every FP32-stored LU (Always, for tests of the check and its fallback).
  enum class DiagonalBlockPivoting { Screened, Never, Always };
  DiagonalBlockPivoting diagonal_block_pivoting = DiagonalBlockPivoting::Screened;
  // Such an FP32-stored LU computes L21 = A21 U11^-1 on the fp16x3 backend (FP32-accurate, three
  // FP16 products) instead of its update backend (one FP16 product for the FP16 LU), keeping its
  // factors as accurate as partial pivoting's (docs/solver.md); off until measured on the GPU.
  bool fp32_accurate_l21 = false;
  // fp16x3 updates take L21 split and packed by the LU as its rows move; off: the backend splits it.
  bool packed_l21 = true;
  // The scan of A also writes the FP32 copy that an expected cheap LU factors.
  bool scan_copy = true;
  // The FP32 factors are row-major while the LU runs (row interchanges move contiguous runs).
  bool row_major_factors = true;
  // Columns of the Ozaki LU's wide bulk updates; 0 (or less): kEmulatedLuBlock.
  int emulated_lu_block = 0;
  // The Ozaki LU's update backend instead of dgemm-auto (e.g. "ozaki2-int8", for tests at sizes
  // where dgemm-auto takes DGEMM); it gets the parameter bits, and every bulk update is wide.
  std::string ozaki_lu_update;
  // The Cholesky's longest update product (its inner dimension) for every precision; 0 (or less):
  // update_inner_chunk's choice (cholesky/recursive_cholesky.hpp).
  int cholesky_inner_chunk = 0;
  // The Cholesky's shortest update product on the precision's backend (shorter ones take cuBLAS's
  // GEMM in the factors' arithmetic), for every precision; -1: kCholeskyTensorMinInner for the
  // precisions at least as accurate as the factors' arithmetic, none for the others; 0: every
  // product on the backend.
  int cholesky_tensor_min_inner = -1;
  // FP64 panels always take 16-column sub-panels (for measurements).
  bool narrow_panels_only = false;
  // Phase times of each LU, of the solves and of the rank-revealing least squares' stages to
  // stderr; with timeline_path, every phase's start and end per stream appended to that CSV file.
  bool profile = false;
  std::string timeline_path;
  // Each GMRES budget judgement to stderr.
  bool gmres_trace = false;
};

// The knobs in force; a test that changes them restores them when it ends (ScopedTuning in
// tests/gpu/test_gpu_solve.cpp).
Tuning& tuning();

}  // namespace mixsolve::solvers_detail
