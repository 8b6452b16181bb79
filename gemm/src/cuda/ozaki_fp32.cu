// SPDX-License-Identifier: BSD-3-Clause
// ozaki-fp32, ozaki-fp32-halfhalf, ozaki-fp32-tf32tf32: DGEMM emulated with FP32 splits (Nanai &
// Fujimoto 2021, ozaki_fp32.hpp) on the GPU, the s (s + 1) / 2 products through an FP32 backend of this
// library (cuBLAS SGEMM, or the corrected tensor-core SGEMMs halfhalf and tf32tf32 of Ootomo & Yokota 2021).
// The split is host-ozaki-fp32's bit for bit (formats/ozaki_split.hpp):
//  1. e_v = ceil(log2 max |x_v|) per vector (row of op(A), column of op(B)); NaN/Inf refused
//     (vector_tiles.cuh);
//  2. r_1 = x 2^-e in FP64, in a plane of k x vectors (vector v contiguous), and its FP32 rounding;
//  3. per split p: mu_p = max |r_p| per vector, sigma_p = 2^(ceil(log2 mu_p) + beta), the high
//     part x_p = fl32(fl32(r_p) + sigma_p) - sigma_p, r_{p+1} = r_p - x_p (exact) and its rounding;
//  4. per product, an FP32 GEMM of two planes (op(A) = plane^T), added into an FP64 sum;
//  5. C = alpha 2^(e_i + e_j) sum + beta C.
// The products' summation orders are cuBLAS's (or the corrected backend's), so C matches the host
// backend to the FP32 rounding of the inexact products, not bit for bit; the high-by-high products
// are exact on both (eq. (5)). Buffers come from the Context's pool, not its workspace, which the
// FP32 backend may take.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "device_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/device_buffer.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/formats/ozaki_split.hpp"
#include "mixsolve/gemm/ozaki_fp32.hpp"
#include "mixsolve/gemm/registry.hpp"
#include "vector_tiles.cuh"

namespace mixsolve::gemm {

namespace {

using detail::grid_for;
using detail::kThreads;
using detail::kTile;
using detail::load_tile;
using detail::tiles;
using detail::Vectors;

// r[v k + l] = x(v, l) 2^-exponent[v] (FP64), remainder[v k + l] = fl32(r). Grid: tiles(vectors, k).
__global__ void __launch_bounds__(kThreads)
    scaled_copy_kernel(Vectors x, const int* exponent, double* r, float* remainder) {
  __shared__ double tile[kTile][kTile + 1];
  const std::int64_t v0 = std::int64_t(blockIdx.x) * kTile, l0 = std::int64_t(blockIdx.y) * kTile;
  load_tile(x, v0, l0, tile, [&](double value, std::int64_t v) { return ldexp(value, -exponent[v]); });
  for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {  // consecutive threads along l
    const int dl = e % kTile, dv = e / kTile;
    const std::int64_t v = v0 + dv, l = l0 + dl;
    if (v >= x.vectors || l >= x.k) continue;
    r[v * x.k + l] = tile[dv][dl];
    remainder[v * x.k + l] = __double2float_rn(tile[dv][dl]);
  }
}

// One split of every vector of the k x vectors plane r (Nanai & Fujimoto 2021, Algorithm 2 lines 2-10): high =
// the high part of r on the grid of sigma = 2^(ceil(log2 mu_v) + beta) (0 where mu_v = 0), r -=
// high (exact), remainder = fl32(r).
__global__ void split_kernel(double* r, std::int64_t vectors, std::int64_t k, const unsigned long long* mu_bits,
                             int beta, float* high, float* remainder) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < vectors * k;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double mu = __longlong_as_double(static_cast<long long>(mu_bits[i / k]));
    const float h = mu > 0 ? formats::ozaki_high_part(r[i], ldexpf(1.0f, formats::ceil_log2(mu) + beta)) : 0.0f;
    const double rest = r[i] - double(h);
    r[i] = rest;
    high[i] = h;
    remainder[i] = __double2float_rn(rest);
  }
}

__global__ void add_product_kernel(const float* product, std::int64_t count, double* sum) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    sum[i] += double(product[i]);
}

// The split planes of one operand on the device (layout of OzakiFp32Operand).
struct DeviceSplit {
  DeviceBuffer<float> high, remainder;  // splits - 1 and splits planes of vectors x k
  DeviceBuffer<int> exponent;
  std::int64_t plane = 0;
  const float* high_plane(int p) const { return high.data() + (p - 1) * plane; }            // x_p, 1-based
  const float* remainder_plane(int p) const { return remainder.data() + (p - 1) * plane; }  // r_p, 1-based
};

// Splits the operand x into `splits` parts on ctx's stream. Throws RangeError (one
// synchronisation) where x holds NaN or Inf.
DeviceSplit split_on_device(Context& ctx, const Vectors& x, int splits, const std::string& backend,
                            const char* operand) {
  cudaStream_t stream = ctx.stream();
  const std::int64_t vectors = x.vectors, k = x.k;
  DeviceSplit out;
  out.plane = vectors * k;
  out.high = DeviceBuffer<float>(ctx, std::max<std::int64_t>((splits - 1) * out.plane, 1));
  out.remainder = DeviceBuffer<float>(ctx, std::max<std::int64_t>(splits * out.plane, 1));
  out.exponent = DeviceBuffer<int>(ctx, std::max<std::int64_t>(vectors, 1));
  if (vectors == 0) return out;
  detail::vector_exponents(ctx, x, 0, out.exponent.data(), backend, operand);
  DeviceBuffer<double> r(ctx, out.plane);
  DeviceBuffer<unsigned long long> largest(ctx, vectors);  // of each remainder
  DeviceBuffer<unsigned int> nonfinite(ctx, 1);            // none: the remainders are finite
  scaled_copy_kernel<<<tiles(vectors, k), kThreads, 0, stream>>>(x, out.exponent.data(), r.data(),
                                                                 out.remainder.data());
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  const int beta = formats::ozaki_fp32_beta(k);
  const Vectors remainder_vectors{r.data(), vectors, k, k, 1};
  for (int p = 1; p < splits; ++p) {
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(largest.data(), 0, vectors * sizeof(unsigned long long), stream));
    detail::largest_per_vector_kernel<<<tiles(vectors, k), kThreads, 0, stream>>>(remainder_vectors, largest.data(),
                                                                                  nonfinite.data());
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    split_kernel<<<grid_for(out.plane), 256, 0, stream>>>(r.data(), vectors, k, largest.data(), beta,
                                                          out.high.data() + (p - 1) * out.plane,
                                                          out.remainder.data() + p * out.plane);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
  return out;
}

class OzakiFp32 final : public Backend {
 public:
  // `products`: the FP32 backend of the products; `suffix`: the name's ("" for cuBLAS SGEMM).
  OzakiFp32(std::string products, std::string suffix) : products_(std::move(products)), suffix_(std::move(suffix)) {}
  std::string name() const override { return "ozaki-fp32" + suffix_; }
  std::string description() const override {
    return "DGEMM emulated with FP32 splits (Ozaki scheme, Nanai & Fujimoto 2021) and " + products_ +
           " products, parameter splits; the split is host-ozaki-fp32's";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override {
    return find_backend(products_).unavailable_reason(ctx);
  }
  std::vector<ParameterSpec> parameters() const override {
    return {{"splits", "FP32 parts of each operand (s (s + 1) / 2 FP32 products)", kOzakiFp32MinSplits,
             kOzakiFp32MaxSplits, kOzakiFp32MaxSplits}};
  }

 protected:
  std::int64_t size_limit() const override { return 2147483647; }  // the FP32 backends' int sizes
  // kOzakiFp32MaxK, within the split's grid (detail::kMaxTiledDepth).
  std::int64_t inner_size_limit() const override {
    return std::min<std::int64_t>(kOzakiFp32MaxK, detail::kMaxTiledDepth);
  }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters, const Execution&) const override {
    const int splits = int(parameter_value(parameters, "splits"));
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const DeviceSplit a = split_on_device(ctx, detail::rows_of_op_a(p), splits, name(), "A");
    const DeviceSplit b = split_on_device(ctx, detail::columns_of_op_b(p), splits, name(), "B");
    DeviceBuffer<double> sum(ctx, m * n);
    DeviceBuffer<float> product(ctx, m * n);
    cudaStream_t stream = ctx.stream();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(sum.data(), 0, m * n * sizeof(double), stream));
    const Backend& fp32 = find_backend(products_);
    for (const OzakiFp32Product& term : ozaki_fp32_products(splits)) {
      const float* pa = term.a_high ? a.high_plane(term.a_index) : a.remainder_plane(term.a_index);
      const float* pb = term.b_high ? b.high_plane(term.b_index) : b.remainder_plane(term.b_index);
      fp32.run(ctx, GemmArgs<float>{Op::T, Op::N, m, n, k, 1.0f, pa, k, pb, k, 0.0f, product.data(), m});
      add_product_kernel<<<grid_for(m * n), 256, 0, stream>>>(product.data(), m * n, sum.data());
      MIXSOLVE_CUDA_CHECK_LAUNCH();
    }
    detail::scaled_sum_to_c_kernel<<<grid_for(m * n), 256, 0, stream>>>(sum.data(), m, n, a.exponent.data(),
                                                                        b.exponent.data(), p.alpha, p.beta,
                                                                        static_cast<double*>(p.c.data), p.c.ld);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }

 private:
  std::string products_, suffix_;
};

}  // namespace

OzakiFp32Operand ozaki_fp32_split_on_device(Context& ctx, std::int64_t vectors, std::int64_t k, const double* x,
                                            std::int64_t vector_stride, std::int64_t element_stride, int splits) {
  if (splits < kOzakiFp32MinSplits || splits > kOzakiFp32MaxSplits || k < 1 || k > kOzakiFp32MaxK)
    return ozaki_fp32_split(vectors, k, nullptr, vector_stride, element_stride, splits);  // its error
  if (k > detail::kMaxTiledDepth)
    throw InvalidArgument("ozaki_fp32_split_on_device: k (" + std::to_string(k) + ") exceeds " +
                          std::to_string(detail::kMaxTiledDepth) + " (65535 tiles of 64 along k)");
  const DeviceSplit split =
      split_on_device(ctx, Vectors{x, vectors, k, vector_stride, element_stride}, splits, "ozaki-fp32", "x");
  OzakiFp32Operand out;
  out.splits = splits;
  out.vectors = vectors;
  out.k = k;
  for (int p = 1; p < splits; ++p) {
    out.high.emplace_back(split.plane);
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(out.high.back().data(), split.high_plane(p), split.plane * sizeof(float),
                                        cudaMemcpyDeviceToHost, ctx.stream()));
  }
  for (int p = 1; p <= splits; ++p) {
    out.remainder.emplace_back(split.plane);
    MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(out.remainder.back().data(), split.remainder_plane(p),
                                        split.plane * sizeof(float), cudaMemcpyDeviceToHost, ctx.stream()));
  }
  out.exponent.resize(vectors);
  if (vectors > 0) split.exponent.copy_to_host(out.exponent.data(), vectors, ctx.stream());
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  return out;
}

void add_ozaki_fp32_device_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<OzakiFp32>("cublas-sgemm", ""));
  out.push_back(std::make_unique<OzakiFp32>("halfhalf", "-halfhalf"));
  out.push_back(std::make_unique<OzakiFp32>("tf32tf32", "-tf32tf32"));
}

}  // namespace mixsolve::gemm
