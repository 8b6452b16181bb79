// SPDX-License-Identifier: BSD-3-Clause
// ozaki-bf16, ozaki-fp16: DGEMM emulated with BF16 / FP16 slices on the tensor cores (Niimi 2025,
// ozaki_slices.hpp), computing what host-ozaki-bf16 / -fp16 compute with fused = 1, bit for bit:
//  1. c = ceil(log2 max |x_v|) per vector (row of op(A), column of op(B)); NaN/Inf refused;
//  2. the fused split: one pass over each operand writes every slice (slice p's exponent
//     c - p (b + 1), b = 53 - rho bits per slice), as k x vectors planes in the slice format;
//  3. per slice pair (p, q) kept by fast mode (p + q < d), one cuBLAS GEMM with FP32 accumulation,
//     exact by the choice of rho (Niimi 2025, eq. (11)), added into an FP64 sum scaled by
//     2^(c_i + c_j - (p + q) (b + 1)) in the host's order (eq. (10));
//  4. C = alpha sum + beta C.
// Buffers come from the Context's pool.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "../ozaki_slice_split.hpp"
#include "device_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/ozaki_slices.hpp"
#include "vector_tiles.cuh"

namespace mixsolve::gemm {

namespace {

using detail::grid_for;
using detail::kThreads;
using detail::kTile;
using detail::load_tile;
using detail::tiles;
using detail::Vectors;

// The exponent that marks a zero vector: its slices are 0 and its products add nothing.
constexpr int kZeroVector = -2147483647 - 1;

template <class Slice>
__device__ Slice to_slice(double v);
template <>
__device__ __nv_bfloat16 to_slice(double v) {
  return __double2bfloat16(v);  // exact: v is a multiple of 2^-b with at most b + 1 significant bits
}
template <>
__device__ __half to_slice(double v) {
  return __double2half(v);
}

// Every slice of every element in one pass (the fused split): plane p (k x vectors, vector v
// contiguous) holds 2^-(c_v - p (b + 1)) v_p. Grid: tiles(vectors, k).
template <class Slice>
__global__ void __launch_bounds__(kThreads)
    fused_split_kernel(Vectors x, const int* exponent, int count, int rho, Slice* planes) {
  __shared__ double tile[kTile][kTile + 1];
  const std::int64_t v0 = std::int64_t(blockIdx.x) * kTile, l0 = std::int64_t(blockIdx.y) * kTile;
  load_tile(x, v0, l0, tile, [](double value, std::int64_t) { return value; });
  const std::int64_t plane = x.vectors * x.k;
  const int step = 54 - rho;  // the bits per slice and one: slice p's grid is c - p step
  for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {  // consecutive threads along l
    const int dl = e % kTile, dv = e / kTile;
    const std::int64_t v = v0 + dv, l = l0 + dl;
    if (v >= x.vectors || l >= x.k) continue;
    const int c = exponent[v];
    double r = c == kZeroVector ? 0.0 : ldexp(tile[dv][dl], -c);  // scaled as the host scales it
    for (int p = 0; p < count; ++p)
      planes[p * plane + v * x.k + l] =
          to_slice<Slice>(c == kZeroVector ? 0.0 : detail::take_ozaki_slice(r, rho, -p * step));
  }
}

// sum += 2^(a_exponent_i + b_exponent_j - shift) product, in FP64 (Niimi 2025, eq. (10)); pairs of a
// zero vector add nothing.
__global__ void add_scaled_product_kernel(const float* product, std::int64_t m, std::int64_t n, const int* a_exponent,
                                          const int* b_exponent, int shift, double* sum) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < m * n;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const int ea = a_exponent[e % m], eb = b_exponent[e / m];
    if (ea == kZeroVector || eb == kZeroVector) continue;
    sum[e] = __dadd_rn(sum[e], ldexp(double(product[e]), ea + eb - shift));
  }
}

template <class Slice>
struct DeviceSlices {
  DeviceBuffer<Slice> planes;  // count planes of vectors x k
  DeviceBuffer<int> exponent;  // c per vector (kZeroVector for a zero vector)
  std::int64_t plane = 0;
};

template <class Slice>
DeviceSlices<Slice> slice_on_device(Context& ctx, const Vectors& x, int count, int rho, const std::string& backend,
                                    const char* operand) {
  cudaStream_t stream = ctx.stream();
  DeviceSlices<Slice> out;
  out.plane = x.vectors * x.k;
  out.planes = DeviceBuffer<Slice>(ctx, std::max<std::int64_t>(count * out.plane, 1));
  out.exponent = DeviceBuffer<int>(ctx, std::max<std::int64_t>(x.vectors, 1));
  if (x.vectors == 0) return out;
  detail::vector_exponents(ctx, x, kZeroVector, out.exponent.data(), backend, operand);
  fused_split_kernel<Slice>
      <<<tiles(x.vectors, x.k), kThreads, 0, stream>>>(x, out.exponent.data(), count, rho, out.planes.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  return out;
}

template <class Slice>
class OzakiSlices final : public Backend {
 public:
  OzakiSlices(const char* format, int significand_bits, cudaDataType_t type)
      : format_(format), significand_bits_(significand_bits), type_(type) {}
  std::string name() const override { return std::string("ozaki-") + format_; }
  std::string description() const override {
    return std::string("DGEMM emulated with ") + format_ +
           " slices on the tensor cores, products exact in FP32 (Ozaki scheme, Niimi 2025) and the fused split, "
           "parameters slices and d (fast mode); host-ozaki-" +
           format_ + " with fused=1 bit for bit";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 80); }
  std::vector<ParameterSpec> parameters() const override {
    return {{"slices", "slices of each operand; 0: one more than 53 bits need", 0, kOzakiMaxSlices, 0},
            {"d", "fast mode: only slice pairs p + q < d (0-based); 0: every pair", 0, 2 * kOzakiMaxSlices, 0}};
  }

 protected:
  std::int64_t size_limit() const override { return 2147483647; }  // cuBLAS's int sizes
  // The host's 2^22, within the split's grid (detail::kMaxTiledDepth).
  std::int64_t inner_size_limit() const override {
    return std::min<std::int64_t>(std::int64_t{1} << 22, detail::kMaxTiledDepth);
  }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const int bits = ozaki_slice_bits(significand_bits_, k), rho = 53 - bits;
    const std::int64_t asked = parameter_value(parameters, "slices"), d = parameter_value(parameters, "d");
    const int count = asked > 0 ? int(asked) : std::min(kOzakiMaxSlices, (53 + bits - 1) / bits + 1);
    const DeviceSlices<Slice> a = slice_on_device<Slice>(ctx, detail::rows_of_op_a(p), count, rho, name(), "A");
    const DeviceSlices<Slice> b = slice_on_device<Slice>(ctx, detail::columns_of_op_b(p), count, rho, name(), "B");
    DeviceBuffer<double> sum(ctx, m * n);
    DeviceBuffer<float> product(ctx, m * n);
    cudaStream_t stream = ctx.stream();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, m * n * sizeof(double), stream));
    const float one = 1, zero = 0;
    for (int pa = 0; pa < count; ++pa)
      for (int pb = 0; pb < count; ++pb) {
        if (d > 0 && pa + pb >= d) continue;  // fast mode
        // The slices' planes hold rows of op(A) and columns of op(B): op(A) = plane^T.
        MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(n), int(k), &one,
                                           a.planes.data() + pa * a.plane, type_, int(k),
                                           b.planes.data() + pb * b.plane, type_, int(k), &zero, product.data(),
                                           CUDA_R_32F, int(m), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        add_scaled_product_kernel<<<grid_for(m * n), 256, 0, stream>>>(
            product.data(), m, n, a.exponent.data(), b.exponent.data(), (pa + pb) * (bits + 1), sum.data());
        MIXSOLVE_CUDA_CHECK_LAUNCH();
      }
    detail::scaled_sum_to_c_kernel<<<grid_for(m * n), 256, 0, stream>>>(sum.data(), m, n, nullptr, nullptr, p.alpha,
                                                                        p.beta, static_cast<double*>(p.c.data), p.c.ld);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

 private:
  const char* format_;
  int significand_bits_;
  cudaDataType_t type_;
};

}  // namespace

void add_ozaki_slice_device_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<OzakiSlices<__nv_bfloat16>>("bf16", 8, CUDA_R_16BF));
  out.push_back(std::make_unique<OzakiSlices<__half>>("fp16", 11, CUDA_R_16F));
}

}  // namespace mixsolve::gemm
