// SPDX-License-Identifier: BSD-3-Clause
// Error-corrected WMMA products of FP32 data (Ootomo & Yokota's (2021) halfhalf and tf32tf32, Ootomo & Yokota 2020,
// sections 2.3 and 4.3-4.4) on the fragment helpers:
//   load_split_sync(hi, lo, ptr, ldm, layout)   one pass over the FP32 matrix (one map
//       computation for both fragments) writes hi = round(v) and lo = round((v - hi) 2^11)
//       (formats/split.hpp: split_halfhalf for FP16 fragments, split_tf32tf32 for TF32 ones),
//       without the error matrix in memory that load_matrix_sync would need;
//   mma_corrected_sync(d, a_hi, a_lo, b_hi, b_lo, c)
//       d = c + a_hi b_hi + 2^-11 (a_lo b_hi + a_hi b_lo): the main product and the two correction
//       products go to fresh accumulators and are added to c in FP32 with round to nearest,
//       outside the tensor core, whose accumulation truncates (Ootomo & Yokota 2021, section 3.2).
#pragma once

#include <mma.h>

#include <type_traits>

#include "mixsolve/formats/split.hpp"
#include "mixsolve/primitives/wmma_helpers.cuh"

namespace mixsolve::primitives::wmma {

// hi and lo fragments (matrix_a or matrix_b; half or precision::tf32) of an FP32 matrix with
// leading dimension ldm in the given layout.
template <class Fragment>
__device__ __forceinline__ void load_split_sync(Fragment& hi, Fragment& lo, const float* ptr, unsigned ldm,
                                                nvcuda::wmma::layout_t layout) {
  using Element = std::remove_reference_t<decltype(hi.x[0])>;
  foreach (hi, ldm, layout, [&](int e, unsigned index) {
    const float v = ptr[index];
    if constexpr (std::is_same_v<Element, half>) {
      const formats::HalfSplit s = formats::split_halfhalf(v);
      hi.x[e] = __ushort_as_half(s.hi);
      lo.x[e] = __ushort_as_half(s.lo);
    } else {
      static_assert(std::is_same_v<Element, float>, "load_split_sync takes FP16 or TF32 fragments");
      const formats::Tf32Split s = formats::split_tf32tf32(v);
      hi.x[e] = __uint_as_float(s.hi);
      lo.x[e] = __uint_as_float(s.lo);
    }
  })
    ;
}

// d = c + a_hi b_hi + 2^-11 (a_lo b_hi + a_hi b_lo), the sums in FP32 round to nearest; d may be c.
template <class Accumulator, class FragmentA, class FragmentB>
__device__ __forceinline__ void mma_corrected_sync(Accumulator& d, const FragmentA& a_hi, const FragmentA& a_lo,
                                                   const FragmentB& b_hi, const FragmentB& b_lo, const Accumulator& c) {
  Accumulator main, correction;
  nvcuda::wmma::fill_fragment(main, 0.0f);
  nvcuda::wmma::fill_fragment(correction, 0.0f);
  nvcuda::wmma::mma_sync(main, a_hi, b_hi, main);
  nvcuda::wmma::mma_sync(correction, a_lo, b_hi, correction);
  nvcuda::wmma::mma_sync(correction, a_hi, b_lo, correction);
#pragma unroll
  for (int e = 0; e < Accumulator::num_elements; ++e)
    d.x[e] = __fadd_rn(c.x[e], __fadd_rn(main.x[e], correction.x[e] * formats::kInverseResidualScale));
}

}  // namespace mixsolve::primitives::wmma
