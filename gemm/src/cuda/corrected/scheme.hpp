// SPDX-License-Identifier: BSD-3-Clause
// The corrected-SGEMM variants: how operands are split and how the products are accumulated.
#pragma once

#include <cstdint>

namespace mixsolve::gemm::corrected {

enum class Element { Fp16, Tf32 };

enum class Accumulation {
  // Ootomo & Yokota (2021) eqs. (1)-(5): all four products accumulate inside the tensor core (RZ).
  MarkidisFourProducts,
  // Ootomo & Yokota (2021) eq. (20) with §3.2: per MMA k-step, the two correction products (scaled by 2^11)
  // accumulate from zero inside the tensor core, are scaled by 2^-11, the main product is added
  // to them in the tensor core, and that step's sum is added to the FP32 accumulator outside the
  // tensor core with round-to-nearest. The long-running sum is never truncated (RZ) by the TC.
  CorrectedRoundToNearest,
};

// Which kernel runs the products.
enum class KernelPath {
  Auto,     // wgmma where the build and the device support it (sm_90a on Hopper), else mma.sync
  MmaSync,  // mma.sync + ldmatrix + cp.async (sm_80 and later)
};

struct Scheme {
  Element element;
  Accumulation accumulation;
  bool scaled_residual;  // lo = split((v - hi) * 2^11) (halfhalf, tf32tf32) or unscaled (Markidis)
  bool row_scaling;      // power-of-two scaling of rows of op(A) / columns of op(B) into FP16 range
  bool check_range;      // count finite values whose hi part overflows, and throw RangeError
  KernelPath path = KernelPath::Auto;
  // tf32tf32 on the wgmma path: products with at most 256 rows whose op(B) TMA can read in place
  // go to the skinny kernel, which splits op(B) in registers instead of packing it
  // (skinny_wgmma_kernel.cuh). False: always pack (the backend "tf32tf32-packed").
  bool skinny_raw_b = false;
};

}  // namespace mixsolve::gemm::corrected
