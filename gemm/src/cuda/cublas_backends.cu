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

// FP32 data on the tensor cores of sm_80 and later: what the TF32 and 16-bit cuBLAS backends
// share.
class TensorCoreF32Backend : public Backend {
 public:
  DataType data_type() const override { return DataType::F32; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 80); }
};

class CublasTf32 final : public TensorCoreF32Backend {
 public:
  std::string name() const override { return "cublas-tf32"; }
  std::string description() const override { return "cublasGemmEx, FP32 data on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)"; }

 protected:
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n), int(a.k),
                                       &a.alpha, a.a, CUDA_R_32F, int(a.lda), a.b, CUDA_R_32F, int(a.ldb), &a.beta,
                                       a.c, CUDA_R_32F, int(a.ldc), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  }
};

// The stored shapes of A and B (op(A) is m x k, op(B) is k x n).
struct StoredShapes {
  std::int64_t a_rows, a_cols, b_rows, b_cols;
};
StoredShapes stored_shapes(const GemmArgs<float>& a) {
  return {a.op_a == Op::N ? a.m : a.k, a.op_a == Op::N ? a.k : a.m, a.op_b == Op::N ? a.k : a.n,
          a.op_b == Op::N ? a.n : a.k};
}

// Grid of the element-wise conversion kernels (grid-stride loops).
unsigned conversion_blocks(std::int64_t total) {
  return unsigned((total + 255) / 256 < 8192 ? (total + 255) / 256 : 8192);
}

// With check_range, reads the conversion kernels' overflow counts of A and B (one
// synchronisation) and throws RangeError naming the operand, the count and `format`.
void report_overflows(const GemmArgs<float>& a, const unsigned int* overflow, cudaStream_t stream,
                      const std::string& backend, const std::string& format) {
  if (!a.check_range) return;
  unsigned int counts[2] = {0, 0};
  MIXSOLVE_CUDA_CHECK(cudaMemcpyAsync(counts, overflow, sizeof counts, cudaMemcpyDeviceToHost, stream));
  MIXSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < 2; ++i)
    if (counts[i] > 0)
      throw RangeError("gemm(" + backend + "): " + std::to_string(counts[i]) + " entries of " + (i ? "B" : "A") +
                       " are finite but overflow " + format + "; use a scaled backend (halfhalf) or tf32tf32");
}

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
class CublasHalfPrecision final : public TensorCoreF32Backend {
  static constexpr bool kFp16 = std::is_same_v<Half, __half>;

 public:
  std::string name() const override { return kFp16 ? "cublas-fp16" : "cublas-bf16"; }
  std::string description() const override {
    return std::string("cublasGemmEx on ") + (kFp16 ? "FP16" : "BF16") +
           " tensor cores, FP32 accumulate; A and B rounded in the workspace; synchronises once to "
           "report values beyond the format's range (unless check_range is false)";
  }
  std::size_t workspace_bytes(const GemmShape& s) const override { return plan(nullptr, s).bytes(); }

 protected:
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    const GemmShape s = shape_of(a);
    detail::WorkspaceCarver ws(ctx.workspace(workspace_bytes(s)));
    unsigned int* overflow = ws.take<unsigned int>(2);
    const auto [a_rows, a_cols, b_rows, b_cols] = stored_shapes(a);
    Half* a16 = ws.take<Half>(a_rows * a_cols);
    Half* b16 = ws.take<Half>(b_rows * b_cols);
    cudaStream_t stream = ctx.stream();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(overflow, 0, 2 * sizeof(unsigned int), stream));
    round_to_16bit_kernel<<<conversion_blocks(a_rows * a_cols), 256, 0, stream>>>(a.a, a_rows, a_cols, a.lda, a16,
                                                                                   overflow);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    round_to_16bit_kernel<<<conversion_blocks(b_rows * b_cols), 256, 0, stream>>>(a.b, b_rows, b_cols, a.ldb, b16,
                                                                                   overflow + 1);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    report_overflows(a, overflow, stream, name(), kFp16 ? "FP16 (|x| >= 65520)" : "BF16");
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

// Splits a rows x cols FP32 matrix (leading dimension ld) into FP16 hi = toF16(v) and
// lo = toF16(v - hi) (seed 000 eqs. (1)-(4), Markidis et al.'s split: v - hi is exact in FP32)
// and writes three packed copies side by side along the inner dimension of the product, in the
// order `pattern` gives (0 = hi, 1 = lo): along columns where the inner dimension is the stored
// matrix's columns (op(A) = A, op(B) = B^T), else along rows. Counts finite entries whose hi part
// overflows FP16.
__global__ void split_three_fp16_kernel(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                        bool inner_along_columns, int pattern0, int pattern1, int pattern2, __half* dst,
                                        unsigned int* overflow_count) {
  unsigned int overflows = 0;
  const std::int64_t total = rows * cols;
  const int pattern[3] = {pattern0, pattern1, pattern2};
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    const float v = src[i + j * ld];
    const __half hi = __float2half_rn(v);
    const __half lo = __float2half_rn(v - __half2float(hi));
    overflows += (isfinite(v) && !isfinite(__half2float(hi))) ? 1u : 0u;
    for (int copy = 0; copy < 3; ++copy) {
      const __half h = pattern[copy] == 0 ? hi : lo;
      // Copy `copy` is the stored matrix shifted by copy x cols (along columns) or placed in
      // rows [copy x rows, (copy + 1) x rows) of a 3 rows x cols matrix (along rows).
      if (inner_along_columns) dst[idx + copy * total] = h;
      else dst[i + copy * rows + j * 3 * rows] = h;
    }
  }
  if (overflows) atomicAdd(overflow_count, overflows);
}

// Three of the four products of Markidis et al.'s corrected product (seed 000 eq. (5), without
// the lo x lo term, which is below 2^-22 of |A||B|) as ONE cuBLAS FP16 GEMM over an inner
// dimension of 3k:  [A_hi A_hi A_lo] [B_hi; B_lo; B_hi] = A_hi B_hi + A_hi B_lo + A_lo B_hi.
// C is read and written once, as in a single FP16 GEMM, which is what an LU's trailing update
// at k = 256 is bound by; the corrections ride on that traffic. Unlike the corrected kernels
// (halfhalf), everything accumulates inside the tensor cores (truncation, seed 000 §3.2) and
// lo is not scaled by 2^11 (seed 000 §3.3): it is subnormal in FP16 for |v| < 2^-3, so values
// keep ~22 bits relative to |v| >= 2^-3 and an absolute 2^-25 below. Suited to data scaled to
// O(1), as the LU's range scaling does.
class CublasFp16x3 final : public TensorCoreF32Backend {
 public:
  std::string name() const override { return "cublas-fp16x3"; }
  std::string description() const override {
    return "FP16 hi/lo split (Markidis); hi*hi + hi*lo + lo*hi as one cublasGemmEx of inner dimension 3k, FP32 "
           "accumulate in the tensor cores; synchronises once to report values beyond FP16's range (unless "
           "check_range is false)";
  }
  std::size_t workspace_bytes(const GemmShape& s) const override { return plan(nullptr, s).bytes(); }

 protected:
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    detail::require_sizes_at_most(name(), a, kCublasSizeLimit);
    if (3 * a.k > kCublasSizeLimit)  // the inner dimension of the one GEMM (and a leading dimension)
      throw NotSupported("gemm(" + name() + "): k (" + std::to_string(a.k) + ") exceeds this backend's limit (" +
                         std::to_string(kCublasSizeLimit / 3) + ")");
    const GemmShape s = shape_of(a);
    detail::WorkspaceCarver ws(ctx.workspace(workspace_bytes(s)));
    unsigned int* overflow = ws.take<unsigned int>(2);
    const auto [a_rows, a_cols, b_rows, b_cols] = stored_shapes(a);
    __half* a3 = ws.take<__half>(3 * a_rows * a_cols);
    __half* b3 = ws.take<__half>(3 * b_rows * b_cols);
    cudaStream_t stream = ctx.stream();
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(overflow, 0, 2 * sizeof(unsigned int), stream));
    split_three_fp16_kernel<<<conversion_blocks(a_rows * a_cols), 256, 0, stream>>>(
        a.a, a_rows, a_cols, a.lda, a.op_a == Op::N, 0, 0, 1, a3, overflow);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    split_three_fp16_kernel<<<conversion_blocks(b_rows * b_cols), 256, 0, stream>>>(
        a.b, b_rows, b_cols, a.ldb, a.op_b == Op::T, 0, 1, 0, b3, overflow + 1);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    report_overflows(a, overflow, stream, name(), "FP16 (|x| >= 65520)");
    // The packed copies: op(A) = A is m x 3k (ld m), A^T is stored 3k x m (ld 3k); likewise B.
    const std::int64_t lda3 = a.op_a == Op::N ? a_rows : 3 * a_rows, ldb3 = a.op_b == Op::N ? 3 * b_rows : b_rows;
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n),
                                       int(3 * a.k), &a.alpha, a3, CUDA_R_16F, int(lda3), b3, CUDA_R_16F, int(ldb3),
                                       &a.beta, a.c, CUDA_R_32F, int(a.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

 private:
  static detail::WorkspaceCarver plan(void* base, const GemmShape& s) {
    detail::WorkspaceCarver ws(base);
    ws.take<unsigned int>(2);
    ws.take<__half>(3 * s.m * s.k);
    ws.take<__half>(3 * s.k * s.n);
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
  out.push_back(std::make_unique<CublasFp16x3>());
}

}  // namespace mixsolve::gemm
