// SPDX-License-Identifier: BSD-3-Clause
// WMMA fragment helpers (Ootomo & Yokota 2020): with the map of which lane holds which
// element of a fragment (wmma_fragment_maps.cuh, read on sm_90 by Ootomo & Yokota's (2020) method, section 3),
// fragments are built and read element by element in registers instead of through a matrix in
// memory:
//   foreach_ij(frag, f)             f(e, i, j) for every x[e] and its (row, col): one map
//                                   computation for any number of fragments (Ootomo & Yokota 2020, section 4.4);
//   foreach(frag, ldm, layout, f)   f(e, memory index) for a matrix with leading dimension ldm;
//   load_matrix_with_op_sync(frag, ptr, ldm, layout, op)
//                                   x[e] = op(e, ptr[index]) (Ootomo & Yokota 2020, section 4.3: e.g. the
//                                   correction term dA while loading, without a copy in memory);
//   load_vector_sync(frag, v)       v as column 0 of a matrix_a fragment, row 0 of a matrix_b one,
//                                   zero elsewhere, without a zero-filled matrix (section 4.1): two
//                                   such fragments give an outer product v w^T;
//   store_vector_sync(v, frag, layout)
//                                   column 0 (mem_col_major) or row 0 (mem_row_major) of an
//                                   accumulator;
//   make_identity(frag, alpha)      alpha I (section 4.2); add_eye(frag, alpha): frag += alpha I.
// Each is called by all 32 lanes of a warp, like the WMMA functions; a lane that holds an
// element twice (FP16 operand fragments keep each element in two x[e]) writes both copies.
//
// The maps hold on sm_90, where they were read and where the GPU test checks every fragment
// against load_matrix_sync; on any other architecture the helpers trap (__trap) at run time.
// sm_80 to sm_89 compile WMMA to the same mma.sync shapes, but their maps were not read here, and
// older GPUs use other layouts (Table 2 of Ootomo & Yokota 2020 is sm_70's): tools/wmma_fragments reads them for
// another GPU. On Hopper the fast path is the warpgroup MMA (wgmma), whose
// operands come from shared memory descriptors or, for A, from registers in the m64nNk16 layout:
// the same bit-weight description covers that register layout, so a register-A wgmma can reuse
// foreach_ij with its own weights.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "mixsolve/primitives/wmma_fragment_maps.cuh"

// Device code for another architecture still compiles (a build for several GPUs), but every
// helper traps there: the maps were not read for it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 900
#define MIXSOLVE_WMMA_MAPS_UNREAD 1
#endif

namespace mixsolve::primitives::wmma {

namespace detail {

template <class Fragment>
struct FragmentTraits;

template <class Use, int M, int N, int K, class T, class Layout>
struct FragmentTraits<nvcuda::wmma::fragment<Use, M, N, K, T, Layout>> {
  using UseTag = Use;
  static constexpr wmma_maps::BitWeights kWeights = wmma_maps::Weights<Use, M, N, K, T>::kValue;
  static constexpr int kRows = std::is_same_v<Use, nvcuda::wmma::matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, nvcuda::wmma::matrix_a> ? K : N;
};

__device__ __forceinline__ int lane_part(const int (&weights)[5], unsigned lane) {
  int sum = 0;
#pragma unroll
  for (int b = 0; b < 5; ++b) sum += (lane >> b & 1u) ? weights[b] : 0;
  return sum;
}

__host__ __device__ constexpr int element_part(const int (&weights)[4], int e) {
  int sum = 0;
  for (int b = 0; b < 4; ++b) sum += (e >> b & 1) ? weights[b] : 0;
  return sum;
}

__device__ __forceinline__ unsigned lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// The type add_eye adds in: double for double elements, int for integers, float otherwise.
template <class Element>
using Wide = std::conditional_t<std::is_same_v<Element, double>, double,
                                std::conditional_t<std::is_integral_v<Element>, int, float>>;

// A value of any arithmetic type, or half / bfloat16, as the fragment's element type.
template <class Element, class Value>
__device__ __forceinline__ Element to_element(Value v) {
  if constexpr (std::is_same_v<Element, Value>)
    return v;
  else if constexpr (std::is_same_v<Value, half>)
    return Element(__half2float(v));
  else if constexpr (std::is_same_v<Value, __nv_bfloat16>)
    return Element(__bfloat162float(v));
  else if constexpr (std::is_same_v<Element, half>)
    return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<Element, __nv_bfloat16>)
    return __float2bfloat16_rn(float(v));
  else
    return Element(v);
}

}  // namespace detail

// The matrix row and column of x[e] in lane `lane` of a fragment of type Fragment.
template <class Fragment>
__device__ __forceinline__ int row_of(unsigned lane, int e) {
#ifdef MIXSOLVE_WMMA_MAPS_UNREAD
  __trap();
#endif
  constexpr wmma_maps::BitWeights w = detail::FragmentTraits<Fragment>::kWeights;
  return detail::lane_part(w.lane_row, lane) + detail::element_part(w.element_row, e);
}
template <class Fragment>
__device__ __forceinline__ int col_of(unsigned lane, int e) {
#ifdef MIXSOLVE_WMMA_MAPS_UNREAD
  __trap();
#endif
  constexpr wmma_maps::BitWeights w = detail::FragmentTraits<Fragment>::kWeights;
  return detail::lane_part(w.lane_col, lane) + detail::element_part(w.element_col, e);
}

// f(e, i, j) for each x[e] of this lane, (i, j) its row and column; the lane's part of the map is
// computed once, the element's part is a constant of the unrolled loop.
template <class Fragment, class Function>
__device__ __forceinline__ void foreach_ij(const Fragment&, Function f) {
  constexpr wmma_maps::BitWeights w = detail::FragmentTraits<Fragment>::kWeights;
  static_assert(w.elements == Fragment::num_elements, "the map was read for another element count");
#ifdef MIXSOLVE_WMMA_MAPS_UNREAD
  __trap();
#endif
  const unsigned lane = detail::lane_id();
  const int i0 = detail::lane_part(w.lane_row, lane), j0 = detail::lane_part(w.lane_col, lane);
#pragma unroll
  for (int e = 0; e < Fragment::num_elements; ++e)
    f(e, i0 + detail::element_part(w.element_row, e), j0 + detail::element_part(w.element_col, e));
}

// f(e, index) with index the position of x[e]'s element in a matrix with leading dimension ldm,
// stored by rows (mem_row_major) or columns (mem_col_major).
template <class Fragment, class Function>
__device__ __forceinline__ void foreach (const Fragment& frag, unsigned ldm, nvcuda::wmma::layout_t layout,
                                         Function f) {
  foreach_ij(frag,
             [&](int e, int i, int j) { f(e, layout == nvcuda::wmma::mem_row_major ? i * ldm + j : i + j * ldm); });
}

// x[e] = op(e, ptr[index of x[e]'s element]); any pointer type that op accepts, no alignment or
// ldm constraints beyond those of ordinary loads.
template <class Fragment, class Pointer, class Op>
__device__ __forceinline__ void load_matrix_with_op_sync(Fragment& frag, const Pointer* ptr, unsigned ldm,
                                                         nvcuda::wmma::layout_t layout, Op op) {
  foreach (frag, ldm, layout, [&](int e, unsigned index) { frag.x[e] = op(e, ptr[index]); })
    ;
}

// A matrix_a fragment whose column 0 is v[0 .. M) and the rest zero, or a matrix_b fragment whose
// row 0 is v[0 .. N) and the rest zero; v is read once per element held, no zero-filled matrix.
template <class Fragment, class Value>
__device__ __forceinline__ void load_vector_sync(Fragment& frag, const Value* v) {
  using Use = typename detail::FragmentTraits<Fragment>::UseTag;
  static_assert(!std::is_same_v<Use, nvcuda::wmma::accumulator>, "load_vector_sync takes matrix_a or matrix_b");
  using Element = std::remove_reference_t<decltype(frag.x[0])>;
  foreach_ij(frag, [&](int e, int i, int j) {
    if constexpr (std::is_same_v<Use, nvcuda::wmma::matrix_a>)
      frag.x[e] = j == 0 ? detail::to_element<Element>(v[i]) : detail::to_element<Element>(0.0f);
    else
      frag.x[e] = i == 0 ? detail::to_element<Element>(v[j]) : detail::to_element<Element>(0.0f);
  });
}

// v[0 .. M) = column 0 (mem_col_major) or v[0 .. N) = row 0 (mem_row_major) of an accumulator.
template <class Value, class Fragment>
__device__ __forceinline__ void store_vector_sync(Value* v, const Fragment& frag, nvcuda::wmma::layout_t layout) {
  foreach_ij(frag, [&](int e, int i, int j) {
    if (layout == nvcuda::wmma::mem_col_major && j == 0) v[i] = detail::to_element<Value>(frag.x[e]);
    if (layout == nvcuda::wmma::mem_row_major && i == 0) v[j] = detail::to_element<Value>(frag.x[e]);
  });
}

// frag = alpha I (square fragments).
template <class Fragment, class Value>
__device__ __forceinline__ void make_identity(Fragment& frag, Value alpha) {
  static_assert(detail::FragmentTraits<Fragment>::kRows == detail::FragmentTraits<Fragment>::kCols,
                "make_identity takes a square fragment");
  using Element = std::remove_reference_t<decltype(frag.x[0])>;
  foreach_ij(frag, [&](int e, int i, int j) {
    frag.x[e] = i == j ? detail::to_element<Element>(alpha) : detail::to_element<Element>(0.0f);
  });
}

// frag += alpha I (square fragments); each diagonal element rounded once, in the element type.
template <class Fragment, class Value>
__device__ __forceinline__ void add_eye(Fragment& frag, Value alpha) {
  static_assert(detail::FragmentTraits<Fragment>::kRows == detail::FragmentTraits<Fragment>::kCols,
                "add_eye takes a square fragment");
  using Element = std::remove_reference_t<decltype(frag.x[0])>;
  foreach_ij(frag, [&](int e, int i, int j) {
    using Wide = detail::Wide<Element>;
    if (i == j) frag.x[e] = detail::to_element<Element>(detail::to_element<Wide>(frag.x[e]) + Wide(alpha));
  });
}

}  // namespace mixsolve::primitives::wmma
