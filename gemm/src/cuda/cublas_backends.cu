// cuBLAS backends: FP64 and FP32 (pedantic) GEMM, TF32 tensor cores, and FP16 / BF16 tensor
// cores on FP32 data converted in the workspace. These are the baselines: no error correction.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <memory>
#include <string>
#include <vector>

#include "../backends.hpp"
#include "device_common.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"

namespace mixsolve::gemm {

namespace {

cublasOperation_t to_cublas(Op op) { return op == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T; }

constexpr std::int64_t kCublasSizeLimit = 2147483647;  // cuBLAS's int sizes

// Sets the math mode for one call and restores the default afterwards, so that backends sharing
// the Context's handle do not leak settings into each other.
class MathModeScope {
 public:
  MathModeScope(cublasHandle_t h, cublasMath_t mode) : h_(h) { MIXSOLVE_CUBLAS_CHECK(cublasSetMathMode(h_, mode)); }
  ~MathModeScope() { cublasSetMathMode(h_, CUBLAS_DEFAULT_MATH); }

 private:
  cublasHandle_t h_;
};

class CublasDgemm final : public Backend {
 public:
  std::string name() const override { return "cublas-dgemm"; }
  std::string description() const override { return "cublasDgemm, FP64 data (FP64 tensor cores on sm_80+)"; }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 0); }

 protected:
  void run_f64(Context& ctx, const GemmArgs<double>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n), int(a.k),
                                      &a.alpha, a.a, int(a.lda), a.b, int(a.ldb), &a.beta, a.c, int(a.ldc)));
  }
};

// FP32 data with FP32 arithmetic (pedantic: no TF32 or other reduced-precision shortcuts).
class CublasSgemm final : public Backend {
 public:
  std::string name() const override { return "cublas-sgemm"; }
  std::string description() const override { return "cublasSgemm, FP32 SIMT arithmetic (CUBLAS_PEDANTIC_MATH)"; }
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 0); }

 protected:
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    MathModeScope mode(ctx.cublas(), CUBLAS_PEDANTIC_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasSgemm(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n), int(a.k),
                                      &a.alpha, a.a, int(a.lda), a.b, int(a.ldb), &a.beta, a.c, int(a.ldc)));
  }
};

class CublasTf32 final : public Backend {
 public:
  std::string name() const override { return "cublas-tf32"; }
  std::string description() const override { return "cublasGemmEx, FP32 data on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)"; }
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 80); }

 protected:
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n), int(a.k),
                                       &a.alpha, a.a, CUDA_R_32F, int(a.lda), a.b, CUDA_R_32F, int(a.ldb), &a.beta,
                                       a.c, CUDA_R_32F, int(a.ldc), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  }
};

// Rounds a rows x cols FP32 matrix (leading dimension ld) to a packed 16-bit copy and counts
// finite entries that overflow the 16-bit format (they would silently become Inf).
template <class Half>
__global__ void round_to_16bit_kernel(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                      Half* dst, unsigned int* overflow_count) {
  unsigned int overflows = 0;
  const std::int64_t total = rows * cols;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = src[idx % rows + (idx / rows) * ld];
    Half h;
    if constexpr (std::is_same_v<Half, __half>) h = __float2half_rn(v);
    else h = __float2bfloat16_rn(v);
    overflows += (isfinite(v) && !isfinite(float(h))) ? 1u : 0u;
    dst[idx] = h;
  }
  if (overflows) atomicAdd(overflow_count, overflows);
}

template <class Half>
class CublasHalfPrecision final : public Backend {
  static constexpr bool kFp16 = std::is_same_v<Half, __half>;

 public:
  std::string name() const override { return kFp16 ? "cublas-fp16" : "cublas-bf16"; }
  std::string description() const override {
    return std::string("cublasGemmEx on ") + (kFp16 ? "FP16" : "BF16") +
           " tensor cores, FP32 accumulate; A and B rounded in the workspace; synchronises once to "
           "report values beyond the format's range (unless check_range is false)";
  }
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 80); }
  std::size_t workspace_bytes(const GemmShape& s) const override { return plan(nullptr, s).bytes(); }

 protected:
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    const GemmShape s = shape_of(a);
    detail::WorkspaceCarver ws(ctx.workspace(workspace_bytes(s)));
    unsigned int* overflow = ws.take<unsigned int>(2);
    const std::int64_t a_rows = a.op_a == Op::N ? a.m : a.k, a_cols = a.op_a == Op::N ? a.k : a.m;
    const std::int64_t b_rows = a.op_b == Op::N ? a.k : a.n, b_cols = a.op_b == Op::N ? a.n : a.k;
    Half* a16 = ws.take<Half>(a_rows * a_cols);
    Half* b16 = ws.take<Half>(b_rows * b_cols);
    cudaStream_t stream = ctx.stream();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(overflow, 0, 2 * sizeof(unsigned int), stream));
    auto blocks = [](std::int64_t total) { return unsigned((total + 255) / 256 < 8192 ? (total + 255) / 256 : 8192); };
    round_to_16bit_kernel<<<blocks(a_rows * a_cols), 256, 0, stream>>>(a.a, a_rows, a_cols, a.lda, a16, overflow);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    round_to_16bit_kernel<<<blocks(b_rows * b_cols), 256, 0, stream>>>(a.b, b_rows, b_cols, a.ldb, b16, overflow + 1);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    if (a.check_range) {
      unsigned int counts[2] = {0, 0};
      MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(counts, overflow, sizeof counts, cudaMemcpyDeviceToHost, stream));
      MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (int i = 0; i < 2; ++i)
        if (counts[i] > 0)
          throw RangeError("gemm(" + name() + "): " + std::to_string(counts[i]) + " entries of " + (i ? "B" : "A") +
                           " are finite but overflow " + (kFp16 ? "FP16 (|x| >= 65520)" : "BF16") +
                           "; use a scaled backend (halfhalf) or tf32tf32");
    }
    const cudaDataType_t t = kFp16 ? CUDA_R_16F : CUDA_R_16BF;
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n), int(a.k),
                                       &a.alpha, a16, t, int(a_rows > 1 ? a_rows : 1), b16, t,
                                       int(b_rows > 1 ? b_rows : 1), &a.beta, a.c, CUDA_R_32F, int(a.ldc),
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

 private:
  static detail::WorkspaceCarver plan(void* base, const GemmShape& s) {
    detail::WorkspaceCarver ws(base);
    ws.take<unsigned int>(2);
    ws.take<Half>(s.m * s.k);
    ws.take<Half>(s.k * s.n);
    return ws;
  }
};

}  // namespace

void add_cublas_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<CublasDgemm>());
  out.push_back(std::make_unique<CublasSgemm>());
  out.push_back(std::make_unique<CublasTf32>());
  out.push_back(std::make_unique<CublasHalfPrecision<__half>>());
  out.push_back(std::make_unique<CublasHalfPrecision<__nv_bfloat16>>());
}

}  // namespace mixsolve::gemm
