// SPDX-License-Identifier: BSD-3-Clause
// ozaki2-int8: DGEMM emulated on the INT8 tensor cores by the Ozaki scheme II (ozaki_int8.hpp),
// computing what host-ozaki2-int8 computes, bit for bit:
//  1. the largest |value| of each row of op(A) and column of op(B) (non-negative doubles order as
//     their bits: one atomicMax per element, as seed 004's FP32 version), hence the shifts;
//  2. one pass over each operand writes its INT8 residues for every modulus (seed 001's fused
//     split): plane t holds round(x 2^shift) mod m_t, balanced, as a k4 x m16 (or k4 x n16)
//     column-major INT8 matrix, zero-padded, so that each product is cuBLAS's INT8 "TN" GEMM;
//  3. per modulus, C32 = A_t^T B_t (INT32, exact for k <= 2^17), reduced mod m_t to a byte;
//  4. per entry, Garner's digits and a double-double Horner sum (ozaki2_crt.hpp), the shifts
//     undone, alpha and beta applied.
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
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/ozaki_int8.hpp"

namespace mixsolve::gemm {

namespace {

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

unsigned grid_for(std::int64_t total) {
  return unsigned(std::clamp<std::int64_t>((total + 255) / 256, 1, 8192));
}

// One operand seen as `vectors` vectors of length k: element l of vector v at
// data[v * vector_stride + l * element_stride].
struct Vectors {
  const double* data;
  std::int64_t vectors, k, vector_stride, element_stride;
  __device__ double at(std::int64_t v, std::int64_t l) const { return data[v * vector_stride + l * element_stride]; }
};

// largest_bits[v] = max over l of |x(v, l)| as the bits of a non-negative double (start: 0);
// nonfinite[0] counts NaN and Inf.
__global__ void largest_per_vector_kernel(Vectors x, unsigned long long* largest_bits, unsigned int* nonfinite) {
  const std::int64_t total = x.vectors * x.k;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    // Consecutive threads take consecutive elements of the stored matrix.
    const std::int64_t v = x.element_stride == 1 ? idx / x.k : idx % x.vectors;
    const std::int64_t l = x.element_stride == 1 ? idx % x.k : idx / x.vectors;
    const double a = fabs(x.at(v, l));
    if (!(a <= 1.7976931348623157e308)) {
      atomicAdd(nonfinite, 1u);
      continue;
    }
    if (a > 0) atomicMax(&largest_bits[v], static_cast<unsigned long long>(__double_as_longlong(a)));
  }
}

// shift[v] = bits - ceil(log2 largest_v) (0 for a zero vector), as host-ozaki2-int8 computes it.
__global__ void shifts_kernel(const unsigned long long* largest_bits, std::int64_t vectors, int bits, int* shift) {
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < vectors;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const double largest = __longlong_as_double(static_cast<long long>(largest_bits[v]));
    shift[v] = largest > 0 ? bits - formats::ceil_log2(largest) : 0;
  }
}

// Plane t of `planes` (k4 x padded_vectors, column-major, INT8): the balanced residue of
// round(x(v, l) 2^shift[v]) mod m_t at [l + v k4]; the padding was zeroed beforehand.
__global__ void residues_kernel(Vectors x, const int* shift, detail::GarnerTable table, std::int8_t* planes,
                                std::int64_t k4, std::int64_t plane_elements) {
  const std::int64_t total = x.vectors * x.k;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t v = x.element_stride == 1 ? idx / x.k : idx % x.vectors;
    const std::int64_t l = x.element_stride == 1 ? idx % x.k : idx / x.vectors;
    const double y = ldexp(x.at(v, l), shift[v]);
    for (int t = 0; t < table.count; ++t)
      planes[t * plane_elements + l + v * k4] =
          detail::int8_residue(detail::residue_of_rounded(y, table.modulus[t]), table.modulus[t]);
  }
}

// residue[t][i + j m] = product(i, j) mod m_t (product: m16 x n16 INT32, leading dimension m16).
__global__ void reduce_product_kernel(const std::int32_t* product, std::int64_t m, std::int64_t n, std::int64_t ld,
                                      std::int32_t modulus, std::uint8_t* residue) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < m * n;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % m, j = idx / m;
    residue[idx] = std::uint8_t(detail::positive_residue(product[i + j * ld], modulus));
  }
}

// C = alpha 2^-(s_i + t_j) CRT(residues) + beta C, as the host reference rounds it.
__global__ void reconstruct_kernel(const std::uint8_t* residues, std::int64_t plane, detail::GarnerTable table,
                                   const int* a_shift, const int* b_shift, std::int64_t m, std::int64_t n,
                                   double alpha, double beta, double* c, std::int64_t ldc) {
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < m * n;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % m, j = idx / m;
    std::int32_t r[detail::kOzaki2MaxModuliAll];
    for (int t = 0; t < table.count; ++t) r[t] = residues[t * plane + idx];
    const double ab = ldexp(detail::crt_to_double(table, r), -(a_shift[i] + b_shift[j]));
    double& cij = c[i + j * ldc];
    cij = beta == 0 ? __dmul_rn(alpha, ab) : __dadd_rn(__dmul_rn(alpha, ab), __dmul_rn(beta, cij));
  }
}

class Ozaki2Int8 final : public Backend {
 public:
  std::string name() const override { return "ozaki2-int8"; }
  std::string description() const override {
    return "DGEMM emulated with cuBLAS INT8 GEMMs modulo N coprime moduli and the CRT (Ozaki scheme II), "
           "parameter moduli; the same bits as host-ozaki2-int8";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 75); }
  std::vector<ParameterSpec> parameters() const override { return {detail::ozaki2_moduli_parameter()}; }

 protected:
  std::int64_t size_limit() const override { return 2147483647 - 16; }  // cuBLAS's int sizes, after padding
  std::int64_t inner_size_limit() const override { return kOzaki2MaxK; }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const int moduli = detail::ozaki2_resolve_moduli(parameter_value(parameters, "moduli"), k, name());
    const int bits = ozaki2_operand_bits(moduli, k);
    const detail::GarnerTable table = detail::garner_table(moduli);
    // cuBLAS's INT8 GEMM wants leading dimensions and sizes in multiples of 4: the planes are
    // zero-padded to k4 rows and m16 / n16 columns.
    const std::int64_t k4 = round_up(k, 16), m16 = round_up(m, 16), n16 = round_up(n, 16);
    const Vectors a{static_cast<const double*>(p.a.data), m, k, p.a.op == Op::N ? 1 : p.a.ld,
                    p.a.op == Op::N ? p.a.ld : 1};
    const Vectors b{static_cast<const double*>(p.b.data), n, k, p.b.op == Op::N ? p.b.ld : 1,
                    p.b.op == Op::N ? 1 : p.b.ld};
    detail::WorkspaceCarver plan(nullptr);
    const auto carve = [&](detail::WorkspaceCarver& w) {
      struct Parts {
        unsigned long long* largest;
        unsigned int* nonfinite;
        int *a_shift, *b_shift;
        std::int8_t *a_planes, *b_planes;
        std::int32_t* product;
        std::uint8_t* residues;
      } parts;
      parts.largest = w.take<unsigned long long>(m + n);
      parts.nonfinite = w.take<unsigned int>(1);
      parts.a_shift = w.take<int>(m);
      parts.b_shift = w.take<int>(n);
      parts.a_planes = w.take<std::int8_t>(moduli * k4 * m16);
      parts.b_planes = w.take<std::int8_t>(moduli * k4 * n16);
      parts.product = w.take<std::int32_t>(m16 * n16);
      parts.residues = w.take<std::uint8_t>(moduli * m * n);
      return parts;
    };
    carve(plan);
    detail::WorkspaceCarver ws(ctx.workspace(plan.bytes()));
    const auto parts = carve(ws);
    cudaStream_t stream = ctx.stream();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.largest, 0, (m + n) * sizeof(unsigned long long), stream));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.nonfinite, 0, sizeof(unsigned int), stream));
    largest_per_vector_kernel<<<grid_for(m * k), 256, 0, stream>>>(a, parts.largest, parts.nonfinite);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    largest_per_vector_kernel<<<grid_for(n * k), 256, 0, stream>>>(b, parts.largest + m, parts.nonfinite);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    unsigned int nonfinite = 0;  // NaN or Inf: refused, as the host reference does (one synchronisation)
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(&nonfinite, parts.nonfinite, sizeof nonfinite, cudaMemcpyDeviceToHost, stream));
    MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (nonfinite)
      throw RangeError("gemm(" + name() + "): A or B holds " + std::to_string(nonfinite) +
                       " NaN or Inf; the scheme represents finite values only: use cublas-dgemm");
    shifts_kernel<<<grid_for(m), 256, 0, stream>>>(parts.largest, m, bits, parts.a_shift);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    shifts_kernel<<<grid_for(n), 256, 0, stream>>>(parts.largest + m, n, bits, parts.b_shift);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.a_planes, 0, moduli * k4 * m16, stream));
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(parts.b_planes, 0, moduli * k4 * n16, stream));
    residues_kernel<<<grid_for(m * k), 256, 0, stream>>>(a, parts.a_shift, table, parts.a_planes, k4, k4 * m16);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    residues_kernel<<<grid_for(n * k), 256, 0, stream>>>(b, parts.b_shift, table, parts.b_planes, k4, k4 * n16);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const std::int32_t one = 1, zero = 0;
    for (int t = 0; t < moduli; ++t) {
      MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(m16), int(n16), int(k4), &one,
                                         parts.a_planes + t * k4 * m16, CUDA_R_8I, int(k4),
                                         parts.b_planes + t * k4 * n16, CUDA_R_8I, int(k4), &zero, parts.product,
                                         CUDA_R_32I, int(m16), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
      reduce_product_kernel<<<grid_for(m * n), 256, 0, stream>>>(parts.product, m, n, m16, table.modulus[t],
                                                                 parts.residues + t * m * n);
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    reconstruct_kernel<<<grid_for(m * n), 256, 0, stream>>>(parts.residues, m * n, table, parts.a_shift, parts.b_shift,
                                                            m, n, p.alpha, p.beta, static_cast<double*>(p.c.data),
                                                            p.c.ld);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
};

}  // namespace

void add_ozaki2_device_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<Ozaki2Int8>());
}

}  // namespace mixsolve::gemm
