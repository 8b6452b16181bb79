// SPDX-License-Identifier: BSD-3-Clause
// cuBLAS backends: FP64 and FP32 (pedantic) GEMM, TF32 tensor cores, and FP16 / BF16 tensor
// cores on FP32 data converted in the workspace. These are the baselines: no error correction.
// Besides them, cublas-fp16x3: an FP16 hi/lo split with three products in one cuBLAS GEMM.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../backends.hpp"
#include "device_common.hpp"
#include "mixsolve/core/cublas_math_mode.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/core/internal/launch.hpp"
#include "mixsolve/formats/split.hpp"

namespace mixsolve::gemm {

namespace {

cublasOperation_t to_cublas(Op op) { return op == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T; }

constexpr std::int64_t kCublasSizeLimit = 2147483647;  // cuBLAS's int sizes

class CublasDgemm final : public Backend {
 public:
  std::string name() const override { return "cublas-dgemm"; }
  std::string description() const override { return "cublasDgemm, FP64 data (FP64 tensor cores on sm_80+)"; }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override { return detail::require_device(ctx, 0); }

 protected:
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  void run_f64(Context& ctx, const GemmArgs<double>& a) const override {
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n), int(a.k),
                                      &a.alpha, a.a, int(a.lda), a.b, int(a.ldb), &a.beta, a.c, int(a.ldc)));
  }
};

// cuBLAS 13's own FP64 emulation (CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: inputs converted to
// fixed point, products on integer tensor cores): the baseline of the Ozaki backends. Its
// handle-level settings are set for the call and restored after it.
class CublasDgemmEmulated final : public Backend {
 public:
  std::string name() const override { return "cublas-dgemm-emulated"; }
  std::string description() const override {
    return "cublasGemmEx with CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT (cuBLAS 13), FP64 data; parameters "
           "mantissa_bits (0: cuBLAS chooses per call) and eager (1: always emulate)";
  }
  DataType data_type() const override { return DataType::F64; }
  Memory memory() const override { return Memory::Device; }
  std::string unavailable_reason(const Context& ctx) const override {
#if CUBLAS_VER_MAJOR >= 13
    return detail::require_device(ctx, 0);
#else
    return "needs cuBLAS 13's FP64 emulation; this build has cuBLAS " + std::to_string(CUBLAS_VER_MAJOR);
#endif
  }
  std::vector<ParameterSpec> parameters() const override {
    return {{"mantissa_bits", "0: cuBLAS chooses the bits per call (dynamic); else that many, fixed", 0, 1024, 0},
            {"eager", "1: emulate always; 0: only where cuBLAS expects emulation to be faster", 0, 1, 1}};
  }

 protected:
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters, const Execution&) const override {
#if CUBLAS_VER_MAJOR >= 13
    const std::int64_t bits = parameter_value(parameters, "mantissa_bits");
    const bool eager = parameter_value(parameters, "eager") != 0;
    cublasHandle_t h = ctx.cublas();
    cublasEmulationStrategy_t saved_strategy{};
    cudaEmulationMantissaControl saved_control{};
    int saved_bits = 0;
    MIXSOLVE_CUBLAS_CHECK(cublasGetEmulationStrategy(h, &saved_strategy));
    MIXSOLVE_CUBLAS_CHECK(cublasGetFixedPointEmulationMantissaControl(h, &saved_control));
    MIXSOLVE_CUBLAS_CHECK(cublasGetFixedPointEmulationMaxMantissaBitCount(h, &saved_bits));
    struct Restore {
      cublasHandle_t h;
      cublasEmulationStrategy_t strategy;
      cudaEmulationMantissaControl control;
      int bits;
      ~Restore() {
        cublasSetEmulationStrategy(h, strategy);
        cublasSetFixedPointEmulationMantissaControl(h, control);
        cublasSetFixedPointEmulationMaxMantissaBitCount(h, bits);
      }
    } restore{h, saved_strategy, saved_control, saved_bits};
    MIXSOLVE_CUBLAS_CHECK(
        cublasSetEmulationStrategy(h, eager ? CUBLAS_EMULATION_STRATEGY_EAGER : CUBLAS_EMULATION_STRATEGY_PERFORMANT));
    MIXSOLVE_CUBLAS_CHECK(cublasSetFixedPointEmulationMantissaControl(
        h, bits == 0 ? CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC : CUDA_EMULATION_MANTISSA_CONTROL_FIXED));
    if (bits > 0) MIXSOLVE_CUBLAS_CHECK(cublasSetFixedPointEmulationMaxMantissaBitCount(h, int(bits)));
    MathModeScope mode(h, CUBLAS_DEFAULT_MATH);
    const double alpha = p.alpha, beta = p.beta;
    MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(h, to_cublas(p.a.op), to_cublas(p.b.op), int(p.m), int(p.n), int(p.k), &alpha,
                                       p.a.data, CUDA_R_64F, int(p.a.ld), p.b.data, CUDA_R_64F, int(p.b.ld), &beta,
                                       p.c.data, CUDA_R_64F, int(p.c.ld), CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT,
                                       CUBLAS_GEMM_DEFAULT));
#else
    throw NotSupported("gemm(" + name() + "): " + unavailable_reason(ctx));
#endif
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
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
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
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
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
unsigned conversion_blocks(std::int64_t total) { return mixsolve::detail::blocks_for(total, 8192); }

// With check_range, the conversion kernels' overflow counts of A and B become a RangeError.
void report_overflows(const GemmArgs<float>& a, const unsigned int* overflow, cudaStream_t stream,
                      const std::string& backend, const std::string& format) {
  if (a.check_range)
    detail::throw_if_operands_overflowed(overflow, stream, backend, format,
                                         "use a scaled backend (halfhalf) or tf32tf32");
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
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
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

// One operand of an fp16x3 product as stored: rows x cols, leading dimension ld.
struct StoredOperand {
  const float* data;
  std::int64_t rows, cols, ld;
};

// The largest finite |value| of each operand (blockIdx.y: 0 = A, 1 = B) as FP32 bits in
// max_bits[operand], which starts at 0: non-negative floats order as their bits.
__global__ void max_abs_finite_kernel(StoredOperand a, StoredOperand b, unsigned int* max_bits) {
  const StoredOperand op = blockIdx.y == 0 ? a : b;
  const std::int64_t total = op.rows * op.cols;
  float local = 0;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = fabsf(op.data[idx % op.rows + (idx / op.rows) * op.ld]);
    if (v <= 3.402823466e38f && v > local) local = v;  // NaN and Inf fail the first test
  }
  for (int offset = 16; offset > 0; offset /= 2) local = fmaxf(local, __shfl_xor_sync(0xFFFFFFFFu, local, offset));
  if ((threadIdx.x & 31) == 0 && local > 0) atomicMax(&max_bits[blockIdx.y], __float_as_uint(local));
}

// Where split_three_fp16_kernel puts its three copies, and which copy is hi (0) or lo (1).
// Along columns (the inner dimension is the stored matrix's columns: op(A) = A, op(B) = B^T) the
// columns are cut into blocks of `block` (the last may be shorter, kb columns), and block b's
// copies are the columns [3 block b + copy kb, ...) of a rows x 3 cols matrix (one block of
// cols: the copies side by side). Along rows, copy `copy` is rows [copy rows, (copy + 1) rows)
// of a 3 rows x cols matrix.
struct SplitPlacement {
  bool inner_along_columns;
  std::int64_t block;
  int pattern[3];
};

// The operand's scale: 2^shift with formats::fp16x3_operand_shift of its largest finite |value|
// (max_bits[operand]), or a shift fixed by the caller (operand < 0).
struct OperandShift {
  int operand;
  int fixed;
  __device__ int get(const unsigned int* max_bits) const {
    return operand < 0 ? fixed : formats::fp16x3_operand_shift(__uint_as_float(max_bits[operand]));
  }
};

// Scales a stored operand by 2^shift, splits it into FP16 hi = toF16(v) and lo = toF16(v - hi)
// (Ootomo & Yokota 2021, eqs. (1)-(4), Markidis et al.'s split: v - hi is exact in FP32) and writes three
// packed copies as `place` says. Counts finite entries whose hi part overflows FP16 (only
// beyond 2^78, where the shift's clamp binds). With `scalars` (one launch per product), thread 0
// also writes cuBLAS's alpha * 2^-(shift + the other operand's shift) and beta there.
__global__ void split_three_fp16_kernel(StoredOperand op, OperandShift own, OperandShift other,
                                        const unsigned int* max_bits, SplitPlacement place, __half* dst,
                                        unsigned int* overflow_count, float alpha, float beta, float* scalars) {
  const int shift = own.get(max_bits);
  const float scale = ldexpf(1.0f, shift);
  if (scalars && blockIdx.x == 0 && threadIdx.x == 0) {
    scalars[0] = alpha * ldexpf(1.0f, -(shift + other.get(max_bits)));
    scalars[1] = beta;
  }
  unsigned int overflows = 0;
  const std::int64_t rows = op.rows, cols = op.cols, total = op.rows * op.cols;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = idx % rows, j = idx / rows;
    const float v = op.data[i + j * op.ld];
    const formats::HalfSplit split = formats::split_markidis(v * scale);
    const __half hi = __ushort_as_half(split.hi), lo = __ushort_as_half(split.lo);
    overflows += (isfinite(v) && !formats::is_finite_bits16(split.hi)) ? 1u : 0u;
    if (place.inner_along_columns) {
      const std::int64_t first = (j / place.block) * place.block, kb = min(place.block, cols - first);
      for (int copy = 0; copy < 3; ++copy)
        dst[i + (3 * first + copy * kb + (j - first)) * rows] = place.pattern[copy] == 0 ? hi : lo;
    } else {
      for (int copy = 0; copy < 3; ++copy) dst[i + copy * rows + j * 3 * rows] = place.pattern[copy] == 0 ? hi : lo;
    }
  }
  if (overflows) atomicAdd(overflow_count, overflows);
}

// Sets cuBLAS's pointer mode for one call and restores host mode afterwards.
class DevicePointerModeScope {
 public:
  explicit DevicePointerModeScope(cublasHandle_t h) : h_(h) {
    MIXSOLVE_CUBLAS_CHECK(cublasSetPointerMode(h_, CUBLAS_POINTER_MODE_DEVICE));
  }
  ~DevicePointerModeScope() { cublasSetPointerMode(h_, CUBLAS_POINTER_MODE_HOST); }

 private:
  cublasHandle_t h_;
};

// Three of the four products of Markidis et al.'s corrected product (Ootomo & Yokota 2021, eq. (5), without
// the lo x lo term, which is below 2^-22 of |A||B|) as ONE cuBLAS FP16 GEMM over an inner
// dimension of 3k:  [A_hi A_hi A_lo] [B_hi; B_lo; B_hi] = A_hi B_hi + A_hi B_lo + A_lo B_hi.
// C is read and written once, as in a single FP16 GEMM, which is what an LU's trailing update
// at k = 256 is bound by; the corrections ride on that traffic. Unlike the corrected kernels
// (halfhalf), everything accumulates inside the tensor cores (truncation, Ootomo & Yokota 2021, §3.2), and
// lo is not scaled by 2^11 (Ootomo & Yokota 2021, §3.3): each operand is scaled by a power of two instead
// (formats::fp16x3_operand_shift: its largest |value| to [2^14, 2^15)), found on the device and
// undone in alpha (cuBLAS's device pointer mode), so nothing synchronises and the product is
// ~22-bit accurate whatever the operands' magnitudes.
class CublasFp16x3 final : public TensorCoreF32Backend {
 public:
  std::string name() const override { return "cublas-fp16x3"; }
  std::string description() const override {
    return "FP16 hi/lo split (Markidis) of operands scaled by powers of two; hi*hi + hi*lo + lo*hi as one "
           "cublasGemmEx of inner dimension 3k, FP32 accumulate in the tensor cores";
  }
  std::size_t workspace_bytes(const GemmShape& s) const override { return plan(nullptr, s).bytes(); }
  // A packed B column holds, per block of the inner dimension (kb rows, the last block possibly
  // shorter), [hi(kb) lo(kb) hi(kb)] as FP16: 3 halves per inner row, block b at 3 block b.
  std::int64_t packed_b_column_bytes(std::int64_t k, std::int64_t) const override {
    return 3 * k * std::int64_t(sizeof(__half));
  }

 protected:
  std::int64_t size_limit() const override { return kCublasSizeLimit; }
  // 3k is the inner dimension of the one GEMM (and a leading dimension of the split operands).
  std::int64_t inner_size_limit() const override { return kCublasSizeLimit / 3; }
  Support check_formats(const Problem& p, const Execution& e) const override {
    if (p.b.format != Format::Packed) return Backend::check_formats(p, e);
    if (p.a.format != Format::F32 || p.c.format != Format::F32)
      return {Support::Status::UnsupportedFormat, "with a packed B, A and C must be FP32"};
    if (p.a.op != Op::N) return {Support::Status::UnsupportedFormat, "with a packed B, op_a must be N"};
    if (p.b.packed.ld_bytes % std::int64_t(sizeof(__half)) != 0)
      return {Support::Status::InvalidArgument,
              "B's packed ld_bytes (" + std::to_string(p.b.packed.ld_bytes) + ") is not a whole number of halves"};
    if (p.b.packed.ld_bytes / std::int64_t(sizeof(__half)) > kCublasSizeLimit)
      return {Support::Status::OverSizeLimit, "B's packed leading dimension (" +
                                                  std::to_string(p.b.packed.ld_bytes / 2) +
                                                  " halves) exceeds cuBLAS's limit"};
    return {};
  }
  void run_problem(Context& ctx, const Problem& p, const Parameters& parameters,
                   const Execution& execution) const override {
    if (p.b.format == Format::Packed) run_packed_b(ctx, p, execution);
    else Backend::run_problem(ctx, p, parameters, execution);
  }
  void pack_b_checked(Context& ctx, std::int64_t k, std::int64_t n, const Operand& b,
                      const PackedB& into) const override;
  void run_f32(Context& ctx, const GemmArgs<float>& a) const override {
    const GemmShape s = shape_of(a);
    detail::WorkspaceCarver ws(ctx.workspace(workspace_bytes(s)));
    unsigned int* counters = ws.take<unsigned int>(4);  // max_bits of A and B, overflows of A and B
    float* scalars = ws.take<float>(2);                    // alpha * 2^-(shift_A + shift_B), beta
    const auto [a_rows, a_cols, b_rows, b_cols] = stored_shapes(a);
    __half* a3 = ws.take<__half>(3 * a_rows * a_cols);
    __half* b3 = ws.take<__half>(3 * b_rows * b_cols);
    cudaStream_t stream = ctx.stream();
    const StoredOperand op_a{a.a, a_rows, a_cols, a.lda}, op_b{a.b, b_rows, b_cols, a.ldb};
    MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(counters, 0, 4 * sizeof(unsigned int), stream));
    const unsigned reduce_blocks = std::min(conversion_blocks(std::max(a_rows * a_cols, b_rows * b_cols)), 1024u);
    max_abs_finite_kernel<<<dim3(reduce_blocks, 2), 256, 0, stream>>>(op_a, op_b, counters);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    const OperandShift shift_a{0, 0}, shift_b{1, 0};
    split_three_fp16_kernel<<<conversion_blocks(a_rows * a_cols), 256, 0, stream>>>(
        op_a, shift_a, shift_b, counters, SplitPlacement{a.op_a == Op::N, a.k, {0, 0, 1}}, a3, counters + 2, 0.0f,
        0.0f, nullptr);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    split_three_fp16_kernel<<<conversion_blocks(b_rows * b_cols), 256, 0, stream>>>(
        op_b, shift_b, shift_a, counters, SplitPlacement{a.op_b == Op::T, a.k, {0, 1, 0}}, b3, counters + 3, a.alpha,
        a.beta, scalars);
    MIXSOLVE_CUDA_CHECK_LAUNCH();
    report_overflows(a, counters + 2, stream, name(), "FP16 after scaling by 2^-63 (|x| >= 2^78)");
    // The packed copies: op(A) = A is m x 3k (ld m), A^T is stored 3k x m (ld 3k); likewise B.
    const std::int64_t lda3 = a.op_a == Op::N ? a_rows : 3 * a_rows, ldb3 = a.op_b == Op::N ? 3 * b_rows : b_rows;
    MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
    DevicePointerModeScope pointers(ctx.cublas());
    MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), to_cublas(a.op_a), to_cublas(a.op_b), int(a.m), int(a.n),
                                       int(3 * a.k), scalars, a3, CUDA_R_16F, int(lda3), b3, CUDA_R_16F, int(ldb3),
                                       scalars + 1, a.c, CUDA_R_32F, int(a.ldc), CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
  }

 private:
  void run_packed_b(Context& ctx, const Problem& p, const Execution& execution) const;
  static detail::WorkspaceCarver plan(void* base, const GemmShape& s) {
    detail::WorkspaceCarver ws(base);
    ws.take<unsigned int>(4);
    ws.take<float>(2);
    ws.take<__half>(3 * s.m * s.k);
    ws.take<__half>(3 * s.k * s.n);
    return ws;
  }
};

// One block of a packed B (CublasFp16x3::pack_b_checked): thread (x, y) splits b(i, j) for i = x + blockDim.x blockIdx.x (+ grid strides)
// and j = blockIdx.y (+ strides); a warp's stores are 64 contiguous bytes per copy.
__global__ void pack_fp16x3_kernel(std::int64_t k, std::int64_t n, const float* b, std::int64_t ldb, float scale,
                                   __half* packed, std::int64_t ld_packed) {
  for (std::int64_t j = blockIdx.y; j < n; j += gridDim.y)
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < k;
         i += std::int64_t(gridDim.x) * blockDim.x) {
      const formats::HalfSplit split = formats::split_markidis(b[i + j * ldb] * scale);
      __half* column = packed + j * ld_packed;
      column[i] = __ushort_as_half(split.hi);
      column[k + i] = __ushort_as_half(split.lo);
      column[2 * k + i] = __ushort_as_half(split.hi);
    }
}

// C = alpha A B + beta C (FP16 A, B; FP32 C, column-major, no transposes; alpha and beta on the
// device) through cuBLASLt with an algorithm whose kernel is launched without thread block
// clusters and without split-K (no partial tiles that wait for each other): each thread block
// starts on any free multiprocessor. The first algorithm in the heuristic's order that allows
// it is taken (a clustered one with its cluster shape set to 1 x 1 x 1, if cublasLtMatmulAlgoCheck
// accepts that) and kept per shape and device with the shape's descriptors: the LU's look-ahead
// calls this once or twice per panel, each panel a new shape.
class UnclusteredFp16Gemm {
 public:
  ~UnclusteredFp16Gemm() {
    clear_plans();
    if (op_) cublasLtMatmulDescDestroy(op_);
    if (handle_) cublasLtDestroy(handle_);
  }

  // Returns false, with nothing launched, where no algorithm qualifies. On `stream`; no workspace.
  bool run(cudaStream_t stream, int m, int n, int k, const float* alpha, const __half* a, int lda, const __half* b,
           int ldb, const float* beta, float* c, int ldc) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!handle_) {
      MIXSOLVE_CUBLAS_CHECK(cublasLtCreate(&handle_));
      MIXSOLVE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasLtPointerMode_t device_scalars = CUBLASLT_POINTER_MODE_DEVICE;
      MIXSOLVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_POINTER_MODE, &device_scalars,
                                                           sizeof(device_scalars)));
    }
    int device = 0;
    MIXSOLVE_CUDA_CHECK(cudaGetDevice(&device));
    const Key key{device, m, n, k, lda, ldb, ldc};
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      // One LU at order n makes about 2 n / 256 shapes (256 at n = 32768); a process that solves
      // many sizes starts the cache over rather than let it grow without bound.
      if (plans_.size() >= kMaxPlans) clear_plans();
      it = plans_.emplace(key, make_plan(m, n, k, lda, ldb, ldc)).first;
    }
    const Plan& plan = it->second;
    if (!plan.algo) return false;
    MIXSOLVE_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, alpha, a, plan.a, b, plan.b, beta, c, plan.c, c, plan.c,
                                         &*plan.algo, nullptr, 0, stream));
    return true;
  }

 private:
  struct Plan {
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    std::optional<cublasLtMatmulAlgo_t> algo;
  };
  using Key = std::tuple<int, int, int, int, int, int, int>;  // device, m, n, k, lda, ldb, ldc
  static constexpr std::size_t kMaxPlans = 4096;

  Plan make_plan(int m, int n, int k, int lda, int ldb, int ldc) {
    Plan plan;
    struct DestroyUnlessKept {  // the layouts made so far, where a later call throws
      Plan& plan;
      bool keep = false;
      ~DestroyUnlessKept() {
        if (!keep) destroy_layouts(plan);
      }
    } guard{plan};
    MIXSOLVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_16F, m, k, lda));
    MIXSOLVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, CUDA_R_16F, k, n, ldb));
    MIXSOLVE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_32F, m, n, ldc));
    cublasLtMatmulPreference_t preference = nullptr;
    MIXSOLVE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const std::size_t no_workspace = 0;
    const cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &no_workspace, sizeof(no_workspace));
    constexpr int kCandidates = 16;
    cublasLtMatmulHeuristicResult_t results[kCandidates];
    int found = 0;
    const cublasStatus_t status =
        set == CUBLAS_STATUS_SUCCESS ? cublasLtMatmulAlgoGetHeuristic(handle_, op_, plan.a, plan.b, plan.c, plan.c,
                                                                      preference, kCandidates, results, &found)
                                     : set;
    MIXSOLVE_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(preference));
    // An algorithm whose split-K or cluster shape cannot be read or set does not qualify.
    for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < found && !plan.algo; ++i) {
      cublasLtMatmulAlgo_t algo = results[i].algo;
      std::int32_t split_k = 0;
      std::size_t written = 0;
      const std::uint16_t one_block = CUBLASLT_CLUSTER_SHAPE_1x1x1;
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof(split_k),
                                               &written) == CUBLAS_STATUS_SUCCESS &&
          split_k <= 1 &&
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &one_block,
                                               sizeof(one_block)) == CUBLAS_STATUS_SUCCESS &&
          cublasLtMatmulAlgoCheck(handle_, op_, plan.a, plan.b, plan.c, plan.c, &algo, &check) ==
              CUBLAS_STATUS_SUCCESS &&
          check.workspaceSize == 0)
        plan.algo = algo;
    }
    guard.keep = true;
    return plan;
  }

  static void destroy_layouts(Plan& plan) {
    for (cublasLtMatrixLayout_t layout : {plan.a, plan.b, plan.c})
      if (layout) cublasLtMatrixLayoutDestroy(layout);
    plan.a = plan.b = plan.c = nullptr;
  }

  void clear_plans() {
    for (auto& [key, plan] : plans_) destroy_layouts(plan);
    plans_.clear();
  }

  std::mutex mutex_;
  cublasLtHandle_t handle_ = nullptr;  // not tied to a CUDA context, unlike a cuBLAS handle
  cublasLtMatmulDesc_t op_ = nullptr;  // FP32 compute and scalars, scalars on the device
  std::map<Key, Plan> plans_;
};

bool unclustered_fp16_gemm(cudaStream_t stream, int m, int n, int k, const float* alpha, const __half* a, int lda,
                           const __half* b, int ldb, const float* beta, float* c, int ldc) {
  static UnclusteredFp16Gemm gemm;  // destroyed at exit with its cuBLASLt objects
  return gemm.run(stream, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The scale 2^shift of a packed B with |B| <= bound: the largest shift with bound 2^shift <= 2^15
// (FP16's largest finite value is 65504), within [-63, 63]. bound 1 (GEPP's L) gives 15, the
// shift cublas-fp16x3's own pass picks for a largest |b| in [1/2, 1).
int packed_shift(double bound) {
  int e = 0;
  const double f = std::frexp(bound, &e);  // bound = f 2^e, f in [1/2, 1)
  const int shift = (f == 0.5 ? 16 : 15) - e;
  return std::clamp(shift, -formats::kFp16x3MaxShift, formats::kFp16x3MaxShift);
}

void CublasFp16x3::pack_b_checked(Context& ctx, std::int64_t k, std::int64_t n, const Operand& b,
                                  const PackedB& into) const {
  if (b.format != Format::F32) throw NotSupported("gemm(" + name() + "): pack_b takes FP32 operands, not " +
                                                  to_string(b.format));
  const float scale = std::ldexp(1.0f, packed_shift(into.abs_bound));
  const float* src = static_cast<const float*>(b.data);
  __half* storage = static_cast<__half*>(into.data);
  const unsigned threads = 128;
  for (std::int64_t r = 0; r < k; r += into.block) {  // block by block: [hi lo hi] of its rows each
    const std::int64_t rows = std::min(into.block, k - r);
    const unsigned x_blocks = unsigned(std::min<std::int64_t>((rows + threads - 1) / threads, 64));
    const dim3 grid(x_blocks, unsigned(std::min<std::int64_t>(n, 65535)));
    pack_fp16x3_kernel<<<grid, threads, 0, ctx.stream()>>>(rows, n, src + r, b.ld, scale,
                                                            storage + 3 * (into.first_block * into.block + r),
                                                            into.ld_bytes / std::int64_t(sizeof(__half)));
    MIXSOLVE_CUDA_CHECK_LAUNCH();
  }
}

// A product with a packed B: only A is scaled (by its own power of two, found on the device) and
// split, per block of B's packing, [A_hi A_hi A_lo] against [B_hi; B_lo; B_hi].
void CublasFp16x3::run_packed_b(Context& ctx, const Problem& p, const Execution& execution) const {
  const std::int64_t m = p.m, n = p.n, k = p.k, lda = p.a.ld, ldc = p.c.ld;
  const PackedB& b = p.b.packed;
  const std::int64_t ld_packed = b.ld_bytes / std::int64_t(sizeof(__half));
  detail::WorkspaceCarver plan(nullptr);
  plan.take<unsigned int>(3);
  plan.take<float>(2);
  plan.take<__half>(3 * m * k);
  detail::WorkspaceCarver ws(ctx.workspace(plan.bytes()));
  unsigned int* counters = ws.take<unsigned int>(3);  // max_bits of A, overflows of A, (none of B)
  float* scalars = ws.take<float>(2);                 // alpha * 2^-(shift_A + shift_B), beta
  __half* a3 = ws.take<__half>(3 * m * k);
  cudaStream_t stream = ctx.stream();
  const StoredOperand op_a{static_cast<const float*>(p.a.data), m, k, lda};
  MIXSOLVE_CUDA_CHECK(cudaMemsetAsync(counters, 0, 3 * sizeof(unsigned int), stream));
  max_abs_finite_kernel<<<dim3(std::min(conversion_blocks(m * k), 1024u), 1), 256, 0, stream>>>(op_a, op_a, counters);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  split_three_fp16_kernel<<<conversion_blocks(m * k), 256, 0, stream>>>(
      op_a, OperandShift{0, 0}, OperandShift{-1, packed_shift(b.abs_bound)}, counters,
      SplitPlacement{true, b.block, {0, 0, 1}}, a3, counters + 1, float(p.alpha), float(p.beta), scalars);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
  if (execution.check_range)
    detail::throw_if_operands_overflowed(counters + 1, stream, name(), "FP16 after scaling by 2^-63 (|x| >= 2^78)",
                                         "use a scaled backend (halfhalf) or tf32tf32");
  const __half* b_data = static_cast<const __half*>(b.data) + 3 * b.first_block * b.block;
  if (execution.placement == KernelPlacement::Unclustered &&
      unclustered_fp16_gemm(stream, int(m), int(n), int(3 * k), scalars, a3, int(m), b_data, int(ld_packed),
                            scalars + 1, static_cast<float*>(p.c.data), int(ldc)))
    return;
  MathModeScope mode(ctx.cublas(), CUBLAS_DEFAULT_MATH);
  DevicePointerModeScope pointers(ctx.cublas());
  MIXSOLVE_CUBLAS_CHECK(cublasGemmEx(ctx.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(n), int(3 * k), scalars, a3,
                                     CUDA_R_16F, int(m), b_data, CUDA_R_16F, int(ld_packed), scalars + 1, p.c.data,
                                     CUDA_R_32F, int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void add_cublas_backends(std::vector<std::unique_ptr<Backend>>& out) {
  out.push_back(std::make_unique<CublasDgemm>());
  out.push_back(std::make_unique<CublasDgemmEmulated>());
  out.push_back(std::make_unique<CublasSgemm>());
  out.push_back(std::make_unique<CublasTf32>());
  out.push_back(std::make_unique<CublasHalfPrecision<__half>>());
  out.push_back(std::make_unique<CublasHalfPrecision<__nv_bfloat16>>());
  out.push_back(std::make_unique<CublasFp16x3>());
}

}  // namespace mixsolve::gemm
