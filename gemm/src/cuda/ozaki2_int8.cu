// SPDX-License-Identifier: BSD-3-Clause
// ozaki2-int8: DGEMM emulated on the INT8 tensor cores by the Ozaki scheme II (ozaki_int8.hpp),
// computing what host-ozaki2-int8 computes, bit for bit:
//  1. the largest |value| of each row of op(A) and column of op(B), one atomicMax per vector and
//     tile (non-negative doubles order as their bits), then the integer bound of its 2-norm, one
//     atomicAdd per vector and tile, hence the shifts;
//  2. one pass over each operand writes its INT8 residues for every modulus (Niimi's (2025) fused
//     split): plane t holds round(x 2^shift) mod m_t, balanced, as a k16 x m16 (or k16 x n16)
//     column-major INT8 matrix, zero-padded, so that each product is cuBLAS's INT8 "TN" GEMM;
//  3. per modulus, C32_t = A_t^T B_t (INT32, exact for k <= 2^17), all kept for step 4;
//  4. per entry, the residues of the N products and the CRT (ozaki2_crt.hpp), the shifts undone,
//     alpha and beta applied.
// Both operands are read through 64 x 64 tiles in shared memory, so that reads follow the
// stored matrix and writes follow the planes, whatever the transposes. C is taken in panels of
// kOzaki2PanelColumns columns (cuBLAS's INT8 GEMM is faster on them than on a whole large C),
// fewer when the workspace would not fit in the device's memory.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "../ozaki2_crt.hpp"
#include "device_common.hpp"
#include "vector_tiles.cuh"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"

namespace mixsolve::gemm {

namespace {

using detail::grid_for;
using detail::kGroup;
using detail::kThreads;
using detail::kTile;
using detail::load_tile;
using detail::round_up;
using detail::tiles;
using detail::Vectors;

// units[v] += the norm units (ozaki2_crt.hpp) of vector v's elements in this tile, given the
// vector's largest |value| (largest_per_vector_kernel). Integer sums: the same in any order.
// Grid: (tiles along the vectors, tiles along k).
__global__ void __launch_bounds__(kThreads)
    norm_units_kernel(Vectors x, const unsigned long long* largest_bits, unsigned long long* units) {
  __shared__ double tile[kTile][kTile + 1];
  const std::int64_t v0 = std::int64_t(blockIdx.x) * kTile, l0 = std::int64_t(blockIdx.y) * kTile;
  load_tile(x, v0, l0, tile, [](double value, std::int64_t) { return value; });
  const int dv = threadIdx.x / 4, part = threadIdx.x % 4;  // 4 threads per vector, 16 elements each
  const std::int64_t v = v0 + dv;
  const double largest = v < x.vectors ? __longlong_as_double(static_cast<long long>(largest_bits[v])) : 0.0;
  unsigned long long sum = 0;
  if (largest > 0) {
    const int c = formats::ceil_log2(largest);
    for (int dl = part * kGroup; dl < (part + 1) * kGroup; ++dl) sum += detail::norm_units(tile[dv][dl], c);
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  if (part == 0 && sum > 0) atomicAdd(&units[v], sum);
}

// shift[v] = norm_bits - e_v, e_v the bound of vector v's 2-norm (0 for a zero vector), as
// host-ozaki2-int8 computes it.
__global__ void shifts_kernel(const unsigned long long* largest_bits, const unsigned long long* units,
                              std::int64_t vectors, int norm_bits, int* shift) {
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < vectors;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const double largest = __longlong_as_double(static_cast<long long>(largest_bits[v]));
    shift[v] = largest > 0 ? norm_bits - detail::norm_exponent(units[v], formats::ceil_log2(largest)) : 0;
  }
}

// Plane t of `planes` (k16 x padded_vectors, column-major, INT8): the balanced residue of
// round(x(v, l) 2^shift[v]) mod m_t at [l + v k16], zero in the padding. Grid: (tiles along
// padded_vectors, tiles along k16).
__global__ void __launch_bounds__(kThreads)
    residues_kernel(Vectors x, const int* shift, detail::CrtTable table, std::int8_t* planes, std::int64_t k16,
                    std::int64_t padded_vectors) {
  __shared__ double tile[kTile][kTile + 1];
  __shared__ std::int32_t modulus[detail::kOzaki2MaxModuliAll];
  __shared__ double reciprocal[detail::kOzaki2MaxModuliAll];
  if (threadIdx.x < table.count) {
    modulus[threadIdx.x] = table.modulus[threadIdx.x];
    reciprocal[threadIdx.x] = table.reciprocal[threadIdx.x];
  }
  const std::int64_t v0 = std::int64_t(blockIdx.x) * kTile, l0 = std::int64_t(blockIdx.y) * kTile;
  load_tile(x, v0, l0, tile, [&](double value, std::int64_t v) { return rint(ldexp(value, shift[v])); });
  const int dv = threadIdx.x / 4, dl = threadIdx.x % 4 * kGroup;
  const std::int64_t v = v0 + dv, l = l0 + dl;
  if (v >= padded_vectors || l >= k16) return;  // k16 is a multiple of kGroup: whole groups
  const std::int64_t plane_elements = k16 * padded_vectors;
  for (int t = 0; t < table.count; ++t) {
    alignas(16) std::int8_t group[kGroup];
    for (int e = 0; e < kGroup; ++e)
      group[e] = detail::int8_residue_of_rounded(tile[dv][dl + e], modulus[t], reciprocal[t]);
    *reinterpret_cast<int4*>(planes + t * plane_elements + v * k16 + l) = *reinterpret_cast<const int4*>(group);
  }
}

// C = alpha 2^-(s_i + t_j) CRT(products mod m_t) + beta C, as the host reference rounds it. The
// INT32 products of modulus t are an m16 x n matrix at products + t plane; four rows per thread.
__global__ void reconstruct_kernel(const std::int32_t* products, std::int64_t plane, std::int64_t m16,
                                   detail::CrtTable table, const int* a_shift, const int* b_shift, std::int64_t m,
                                   std::int64_t n, double alpha, double beta, double* c, std::int64_t ldc) {
  __shared__ detail::CrtTable shared_table;
  for (int w = threadIdx.x; w < int(sizeof(detail::CrtTable) / sizeof(int)); w += blockDim.x)
    reinterpret_cast<int*>(&shared_table)[w] = reinterpret_cast<const int*>(&table)[w];
  __syncthreads();
  for (std::int64_t quad = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; quad < m16 / 4 * n;
       quad += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i0 = quad % (m16 / 4) * 4, j = quad / (m16 / 4);
    if (i0 >= m) continue;
    double limbs[4][detail::kCrtLimbs] = {};
    for (int t = 0; t < shared_table.count; ++t) {
      const int4 p = *reinterpret_cast<const int4*>(products + t * plane + i0 + j * m16);
      const std::int32_t modulus = shared_table.modulus[t];
      const double reciprocal = shared_table.reciprocal[t];
      detail::crt_add(shared_table, t, detail::residue_of_product(p.x, modulus, reciprocal), limbs[0]);
      detail::crt_add(shared_table, t, detail::residue_of_product(p.y, modulus, reciprocal), limbs[1]);
      detail::crt_add(shared_table, t, detail::residue_of_product(p.z, modulus, reciprocal), limbs[2]);
      detail::crt_add(shared_table, t, detail::residue_of_product(p.w, modulus, reciprocal), limbs[3]);
    }
    for (int e = 0; e < 4 && i0 + e < m; ++e) {
      const double ab = ldexp(detail::crt_value(shared_table, limbs[e]), -(a_shift[i0 + e] + b_shift[j]));
      double& cij = c[i0 + e + j * ldc];
      cij = detail::alpha_ab_plus_beta_c(alpha, ab, beta, cij);
    }
  }
}

// The pieces of ozaki2-int8's workspace for C in panels of `columns` columns (a multiple of 16).
struct WorkspaceParts {
  unsigned long long *largest, *units;
  unsigned int* nonfinite;
  int *a_shift, *b_shift;
  std::int8_t *a_planes, *b_planes;
  std::int32_t* products;
};

WorkspaceParts carve_workspace(detail::WorkspaceCarver& w, std::int64_t m, std::int64_t n, std::int64_t k, int moduli,
                               std::int64_t columns) {
  const std::int64_t k16 = round_up(k, kGroup), m16 = round_up(m, kGroup);
  WorkspaceParts parts;
  parts.largest = w.take<unsigned long long>(m + n);  // then B's
  parts.units = w.take<unsigned long long>(m + n);
  parts.nonfinite = w.take<unsigned int>(1);
  parts.a_shift = w.take<int>(m + n);  // then B's
  parts.b_shift = parts.a_shift ? parts.a_shift + m : nullptr;
  parts.a_planes = w.take<std::int8_t>(moduli * k16 * m16);
  parts.b_planes = w.take<std::int8_t>(moduli * k16 * columns);
  parts.products = w.take<std::int32_t>(moduli * m16 * columns);
  return parts;
}


class Ozaki2Int8 final : public Backend {
 public:
  std::string name() const override { return "ozaki2-int8"; }
  std::string description() const override {
    return "DGEMM emulated with cuBLAS INT8 GEMMs modulo N coprime moduli and the CRT (Ozaki scheme II), "
           "parameters moduli or bits; the same bits as host-ozaki2-int8";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 75); }
  std::vector<ParameterSpec> parameters() const override {
    std::vector<ParameterSpec> specs = detail::ozaki2_parameters();
    specs.push_back({"panel",
                     "columns of C per pass, rounded up to 16; 0: kOzaki2PanelColumns (4096); either is "
                     "halved while the workspace would not fit in the free device memory",
                     0, std::int64_t{1} << 31, 0});
    return specs;
  }

  // With the default parameters (kOzaki2DefaultBits, panels of kOzaki2PanelColumns); other moduli
  // and panels: detail::ozaki2_int8_workspace_bytes.
  std::size_t workspace_bytes(const GemmShape& s) const override {
    if (s.k < 1 || s.k > kOzaki2MaxK) return 0;
    return detail::ozaki2_int8_workspace_bytes(s.m, s.n, s.k, ozaki2_moduli_for_bits(kOzaki2DefaultBits, s.k),
                                               round_up(std::min(kOzaki2PanelColumns, s.n), kGroup));
  }

 protected:
  std::int64_t size_limit() const override { return 2147483647 - 16; }  // cuBLAS's int sizes, after padding
  std::int64_t inner_size_limit() const override { return kOzaki2MaxK; }
  Support check_parameter_values(const Parameters& parameters, const Problem& p) const override {
    const std::string refusal = detail::ozaki2_moduli_refusal(parameters, p.k);
    if (refusal.empty()) return {};
    return {Support::Status::InvalidArgument, refusal};
  }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const int moduli = detail::ozaki2_resolve_moduli(parameters, k, name());
    const detail::Ozaki2Scale scale = detail::ozaki2_scale(moduli, k);
    const detail::CrtTable table = detail::crt_table(moduli);
    // cuBLAS's INT8 GEMM wants leading dimensions and sizes in multiples of 4, and the residue
    // kernels write 16 bytes at a time: the planes are zero-padded to k16 rows and m16 / n16
    // columns.
    const std::int64_t k16 = round_up(k, kGroup), m16 = round_up(m, kGroup);
    const Vectors a = detail::rows_of_op_a(p), b = detail::columns_of_op_b(p);
    const std::int64_t asked_panel = parameter_value(parameters, "panel");
    const std::int64_t panel = panel_columns(
        ctx, round_up(std::min(asked_panel > 0 ? asked_panel : kOzaki2PanelColumns, n), kGroup),
        [&](std::int64_t columns) { return detail::ozaki2_int8_workspace_bytes(m, n, k, moduli, columns); });
    detail::WorkspaceCarver ws(ctx.workspace(detail::ozaki2_int8_workspace_bytes(m, n, k, moduli, panel)));
    const WorkspaceParts parts = carve_workspace(ws, m, n, k, moduli, panel);
    cudaStream_t stream = ctx.stream();

    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.largest, 0, (m + n) * sizeof(unsigned long long), stream));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.units, 0, (m + n) * sizeof(unsigned long long), stream));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.nonfinite, 0, sizeof(unsigned int), stream));
    detail::largest_per_vector_kernel<<<tiles(m, k), kThreads, 0, stream>>>(a, parts.largest, parts.nonfinite);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    detail::largest_per_vector_kernel<<<tiles(n, k), kThreads, 0, stream>>>(b, parts.largest + m, parts.nonfinite);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    unsigned int nonfinite = 0;  // NaN or Inf: refused, as the host reference does (one synchronisation)
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&nonfinite, parts.nonfinite, sizeof nonfinite, cudaMemcpyDeviceToHost, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (nonfinite)
      throw RangeError("gemm(" + name() + "): A or B holds " + std::to_string(nonfinite) +
                       " NaN or Inf; the scheme represents finite values only: use cublas-dgemm");
    norm_units_kernel<<<tiles(m, k), kThreads, 0, stream>>>(a, parts.largest, parts.units);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    norm_units_kernel<<<tiles(n, k), kThreads, 0, stream>>>(b, parts.largest + m, parts.units + m);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    shifts_kernel<<<grid_for(m), 256, 0, stream>>>(parts.largest, parts.units, m, scale.a, parts.a_shift);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    shifts_kernel<<<grid_for(n), 256, 0, stream>>>(parts.largest + m, parts.units + m, n, scale.b, parts.b_shift);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    residues_kernel<<<tiles(m16, k16), kThreads, 0, stream>>>(a, parts.a_shift, table, parts.a_planes, k16, m16);
    MIXSOLVE_CUDA_CHECK_LAUNCH();

    for (std::int64_t j0 = 0; j0 < n; j0 += panel) {
      const std::int64_t columns = std::min(panel, n - j0), columns16 = round_up(columns, kGroup);
      const Vectors b_panel{b.data + j0 * b.vector_stride, columns, k, b.vector_stride, b.element_stride};
      residues_kernel<<<tiles(columns16, k16), kThreads, 0, stream>>>(b_panel, parts.b_shift + j0, table,
                                                                      parts.b_planes, k16, columns16);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
      // One GEMM per modulus: cuBLAS's strided-batched INT8 GEMM ran slower than these.
      const std::int32_t one = 1, zero = 0;
      for (int t = 0; t < moduli; ++t)
        MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(m16), int(columns16), int(k16),
                                           &one, parts.a_planes + t * k16 * m16, CUDA_R_8I, int(k16),
                                           parts.b_planes + t * k16 * columns16, CUDA_R_8I, int(k16), &zero,
                                           parts.products + t * m16 * columns16, CUDA_R_32I, int(m16),
                                           CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
      reconstruct_kernel<<<grid_for(m16 / 4 * columns), 256, 0, stream>>>(
          parts.products, m16 * columns16, m16, table, parts.a_shift, parts.b_shift + j0, m, columns, p.alpha, p.beta,
          static_cast<double*>(p.c.data) + j0 * p.c.ld, p.c.ld);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

 private:
  // The widest panel of C's columns (a multiple of 16, halved from `columns16`) whose workspace
  // fits in 90% of the memory the device has free beside the current workspace; at least 1024
  // columns (or `columns16`), whatever the memory says.
  template <class Bytes>
  static std::int64_t panel_columns(const Context& ctx, std::int64_t columns16, Bytes bytes) {
    std::size_t free = 0, total = 0;
    MIXSOLVE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    const double budget = 0.9 * double(free + ctx.workspace_capacity());
    std::int64_t panel = columns16;
    while (panel > 1024 && double(bytes(panel)) > budget) panel = round_up(panel / 2, kGroup);
    return panel;
  }
};

}  // namespace

namespace detail {

std::size_t ozaki2_int8_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, int moduli,
                                        std::int64_t panel) {
  WorkspaceCarver plan(nullptr);
  carve_workspace(plan, m, n, k, moduli, panel);
  return plan.bytes();
}

}  // namespace detail

void add_ozaki2_device_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<Ozaki2Int8>());
}

}  // namespace mixsolve::gemm
