// SPDX-License-Identifier: BSD-3-Clause
// Which tf32tf32 products the skinny kernel takes (skinny_wgmma_kernel.cuh) where the wgmma path
// runs. Host-only C++, so that the tests check the routing of the shapes they use.
#pragma once

#include <cstdint>

#include "mixsolve/gemm/backend.hpp"

namespace mixsolve::gemm::corrected {

// Rows of op(A) the skinny kernel's CTA tile covers (SkinnyWgmmaConfig::kTileM).
constexpr std::int64_t kSkinnyMaxRows = 256;

// Whether TMA can read op(B) in place: K-major (op(B) = N), the base 16-byte aligned, the column
// stride ldb * 4 bytes a multiple of 16 and below 2^40 (cuTensorMapEncodeTiled's limits).
inline bool op_b_readable_in_place(const GemmArgs<float>& a) {
  return a.op_b == Op::N && reinterpret_cast<std::uintptr_t>(a.b) % 16 == 0 && a.ldb % 4 == 0 &&
         a.ldb < (std::int64_t{1} << 38);
}

// m <= 256 and op(B) readable in place: the skinny kernel (on sm_90a), else the general one.
inline bool skinny_kernel_takes(const GemmArgs<float>& a) { return a.m <= kSkinnyMaxRows && op_b_readable_in_place(a); }

}  // namespace mixsolve::gemm::corrected
