// SPDX-License-Identifier: BSD-3-Clause
// slfp::gemm (include/mixsolve/slfp/blas.hpp): C := alpha op(A) op(B) + beta C on SLFP-stored
// operands, widened a panel of the inner dimension at a time into the base type and multiplied by
// cuBLAS in that type (§4.3 of Mukunoki & Imamura 2016 widens tiles in its own GEMM kernel; at n = 8192 a GEMM is
// bound by the arithmetic, so widening each value once per product and leaving the arithmetic to
// cuBLAS's tensor-core DGEMM / SGEMM keeps its speed, and the panel bounds the wide copy).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common.hpp"
#include "mixsolve/core/cublas_math_mode.hpp"
#include "mixsolve/core/cuda_check.hpp"
#include "mixsolve/core/error.hpp"
#include "mixsolve/slfp/blas.hpp"

namespace mixsolve::slfp {

using namespace detail;

namespace {

constexpr std::size_t kPlaneAlignment = 256;
constexpr std::size_t aligned(std::size_t bytes) {
  return (bytes + kPlaneAlignment - 1) / kPlaneAlignment * kPlaneAlignment;
}

constexpr std::int64_t kCublasSizeLimit = 2147483647;  // cuBLAS's int sizes
constexpr std::int64_t kMaxPanel = 1024, kMinPanel = 128;
constexpr std::size_t kPanelWorkspaceTarget = std::size_t(128) << 20;

// out(i, j) := a(r0 + i, c0 + j) widened, for the rows x cols block; out has leading dimension ldo.
template <class A, class T>
__global__ void widen_block_kernel(A a, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t rows,
                                   std::int64_t cols, T* out, std::int64_t ldo) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t j = blockIdx.y; j < cols; j += gridDim.y)
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride)
      out[i + j * ldo] = a.load((r0 + i) + (c0 + j) * ld);
}

template <class A, class T>
void widen_block(Context& ctx, const A& a, std::int64_t ld, std::int64_t r0, std::int64_t c0, std::int64_t rows,
                 std::int64_t cols, T* out, std::int64_t ldo) {
  constexpr int kThreads = 256;
  const dim3 grid(unsigned(std::min<std::int64_t>((rows + kThreads - 1) / kThreads, 64)),
                  unsigned(std::min<std::int64_t>(cols, 65535)));
  widen_block_kernel<<<grid, kThreads, 0, ctx.stream()>>>(a, ld, r0, c0, rows, cols, out, ldo);
  MIXSOLVE_CUDA_CHECK_LAUNCH();
}

// Whether the format is an SLFP one (else FP64 or FP32 itself).
bool slfp_format(Format f) { return f != Format::Fp64 && f != Format::Fp32; }

cublasOperation_t to_cublas(Transpose op) { return op == Transpose::No ? CUBLAS_OP_N : CUBLAS_OP_T; }

// C := alpha A B + beta C in T's arithmetic: cublasDgemm, or cublasSgemm without TF32.
void base_gemm(Context& ctx, Transpose op_a, Transpose op_b, std::int64_t m, std::int64_t n, std::int64_t k,
               double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
               double* c, std::int64_t ldc) {
  MIXSOLVE_CUBLAS_CHECK(cublasDgemm(ctx.cublas(), to_cublas(op_a), to_cublas(op_b), int(m), int(n), int(k), &alpha, a,
                                    int(lda), b, int(ldb), &beta, c, int(ldc)));
}
void base_gemm(Context& ctx, Transpose op_a, Transpose op_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
               std::int64_t ldc) {
  MathModeScope mode(ctx.cublas(), CUBLAS_PEDANTIC_MATH);
  MIXSOLVE_CUBLAS_CHECK(cublasSgemm(ctx.cublas(), to_cublas(op_a), to_cublas(op_b), int(m), int(n), int(k), &alpha, a,
                                    int(lda), b, int(ldb), &beta, c, int(ldc)));
}

std::string size_text(std::int64_t rows, std::int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

template <class T>
void gemm_any(Context& ctx, Transpose op_a, Transpose op_b, T alpha, const Matrix& a, const Matrix& b, T beta, T* c,
              std::int64_t ldc, void* workspace) {
  const std::string name = "slfp::gemm";
  check_matrix(ctx, a, name + ": a");
  check_matrix(ctx, b, name + ": b");
  if (a.values.format != b.values.format)
    throw InvalidArgument(name + ": a is " + to_string(a.values.format) + " and b " + to_string(b.values.format) +
                          "; both must have one format");
  constexpr bool kDouble = std::is_same_v<T, double>;
  if (fp64_based(a.values.format) != kDouble)
    throw InvalidArgument(name + ": a and b are " + to_string(a.values.format) + ", not " +
                          (kDouble ? "FP64" : "FP32") + "-based like c");
  const std::int64_t m = op_a == Transpose::No ? a.rows : a.cols, k = op_a == Transpose::No ? a.cols : a.rows;
  const std::int64_t k_b = op_b == Transpose::No ? b.rows : b.cols, n = op_b == Transpose::No ? b.cols : b.rows;
  if (k != k_b)
    throw InvalidArgument(name + ": op(a) is " + size_text(m, k) + " and op(b) " + size_text(k_b, n) +
                          "; their inner sizes differ");
  if (ldc < std::max<std::int64_t>(1, m))
    throw InvalidArgument(name + ": ldc (" + std::to_string(ldc) + ") is below max(1, m = " + std::to_string(m) + ")");
  if (m == 0 || n == 0) return;
  if (a.values.memory != Memory::Device || b.values.memory != Memory::Device)
    throw NotSupported(name + ": runs on the device; a or b is in host memory");
  check_pointer(ctx, c, sizeof(T), Memory::Device, name + ": c");
  for (const auto& [what, size] :
       {std::pair<const char*, std::int64_t>{"m", m}, {"n", n}, {"k", k}, {"a.ld", a.ld}, {"b.ld", b.ld}, {"ldc", ldc}})
    if (size > kCublasSizeLimit)
      throw NotSupported(name + ": " + what + " (" + std::to_string(size) + ") exceeds cuBLAS's limit " +
                         std::to_string(kCublasSizeLimit));
  if (k == 0 || alpha == T(0)) {  // C := beta C through cuBLAS with k = 0 (beta = 0: C is not read)
    base_gemm(ctx, Transpose::No, Transpose::No, m, n, 0, alpha, c, std::max<std::int64_t>(1, m), c, 1, beta, c, ldc);
    return;
  }
  if (!slfp_format(a.values.format)) {  // FP64 / FP32 data is the base type already: no widening
    const T* a_values = reinterpret_cast<const T*>(kDouble ? static_cast<const void*>(a.values.f64) : a.values.f32);
    const T* b_values = reinterpret_cast<const T*>(kDouble ? static_cast<const void*>(b.values.f64) : b.values.f32);
    base_gemm(ctx, op_a, op_b, m, n, k, alpha, a_values, a.ld, b_values, b.ld, beta, c, ldc);
    return;
  }
  if (workspace == nullptr || reinterpret_cast<std::uintptr_t>(workspace) % kPlaneAlignment != 0)
    throw InvalidArgument(name + ": the workspace is null or not 256-byte aligned");
  const std::int64_t kb = gemm_panel(m, n, k);
  T* a_panel = static_cast<T*>(workspace);
  T* b_panel = reinterpret_cast<T*>(static_cast<char*>(workspace) + aligned(std::size_t(m * kb) * sizeof(T)));
  dispatch(a.values.format, [&](auto tag) {
    using Tag = decltype(tag);
    if constexpr (std::is_same_v<value_of<Tag>, T>) {
      const auto acc_a = accessor(a.values, tag), acc_b = accessor(b.values, tag);
      for (std::int64_t k0 = 0; k0 < k; k0 += kb) {
        const std::int64_t w = std::min(kb, k - k0);
        // op(A)'s columns k0 .. k0 + w: A's columns (N) or rows (T), in A's orientation, and
        // likewise op(B)'s rows, so that cuBLAS applies the same ops to the panels.
        if (op_a == Transpose::No)
          widen_block(ctx, acc_a, a.ld, 0, k0, m, w, a_panel, m);
        else
          widen_block(ctx, acc_a, a.ld, k0, 0, w, m, a_panel, w);
        if (op_b == Transpose::No)
          widen_block(ctx, acc_b, b.ld, k0, 0, w, n, b_panel, w);
        else
          widen_block(ctx, acc_b, b.ld, 0, k0, n, w, b_panel, n);
        base_gemm(ctx, op_a, op_b, m, n, w, alpha, a_panel, op_a == Transpose::No ? m : w, b_panel,
                  op_b == Transpose::No ? w : n, k0 == 0 ? beta : T(1), c, ldc);
      }
    }
  });
}

template <class T>
void gemm_in_context_workspace(Context& ctx, Transpose op_a, Transpose op_b, T alpha, const Matrix& a, const Matrix& b,
                               T beta, T* c, std::int64_t ldc) {
  const std::int64_t m = op_a == Transpose::No ? a.rows : a.cols, k = op_a == Transpose::No ? a.cols : a.rows;
  const std::int64_t n = op_b == Transpose::No ? b.cols : b.rows;
  void* workspace = nullptr;
  const std::size_t bytes = gemm_workspace_bytes(a.values.format, m, n, k);
  if (bytes > 0 && a.values.memory == Memory::Device && ctx.has_device()) workspace = ctx.workspace(bytes);
  gemm_any(ctx, op_a, op_b, alpha, a, b, beta, c, ldc, workspace);
}

}  // namespace

std::int64_t gemm_panel(std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t fit = std::int64_t(kPanelWorkspaceTarget / (std::size_t(std::max<std::int64_t>(1, m + n)) * 8));
  const std::int64_t panel = std::clamp(fit / kMinPanel * kMinPanel, kMinPanel, kMaxPanel);
  return std::max<std::int64_t>(1, std::min(panel, k));
}

std::size_t gemm_workspace_bytes(Format format, std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0 || !slfp_format(format)) return 0;
  const std::size_t word = fp64_based(format) ? 8 : 4, kb = std::size_t(gemm_panel(m, n, k));
  return aligned(std::size_t(m) * kb * word) + aligned(std::size_t(n) * kb * word);
}

void gemm(Context& ctx, Transpose op_a, Transpose op_b, double alpha, const Matrix& a, const Matrix& b, double beta,
          double* c, std::int64_t ldc) {
  gemm_in_context_workspace(ctx, op_a, op_b, alpha, a, b, beta, c, ldc);
}
void gemm(Context& ctx, Transpose op_a, Transpose op_b, float alpha, const Matrix& a, const Matrix& b, float beta,
          float* c, std::int64_t ldc) {
  gemm_in_context_workspace(ctx, op_a, op_b, alpha, a, b, beta, c, ldc);
}
void gemm(Context& ctx, Transpose op_a, Transpose op_b, double alpha, const Matrix& a, const Matrix& b, double beta,
          double* c, std::int64_t ldc, void* workspace) {
  gemm_any(ctx, op_a, op_b, alpha, a, b, beta, c, ldc, workspace);
}
void gemm(Context& ctx, Transpose op_a, Transpose op_b, float alpha, const Matrix& a, const Matrix& b, float beta,
          float* c, std::int64_t ldc, void* workspace) {
  gemm_any(ctx, op_a, op_b, alpha, a, b, beta, c, ldc, workspace);
}

std::size_t placed_bytes(Format format, std::int64_t size) {
  if (size < 0) throw InvalidArgument("slfp::placed_bytes: size (" + std::to_string(size) + ") is negative");
  std::size_t bytes = 0;
  for (const auto& [bits, word] : {std::pair<int, std::size_t>{64, 8}, {-32, 4}, {32, 4}, {16, 2}, {8, 1}})
    if (has_plane(format, bits)) bytes += aligned(std::size_t(size) * word);
  return bytes;
}

Vector place(Format format, std::int64_t size, Memory memory, void* buffer) {
  if (size < 0) throw InvalidArgument("slfp::place: size (" + std::to_string(size) + ") is negative");
  if (buffer == nullptr && size > 0) throw InvalidArgument("slfp::place: buffer is null");
  if (reinterpret_cast<std::uintptr_t>(buffer) % kPlaneAlignment != 0)
    throw InvalidArgument("slfp::place: buffer (" + std::to_string(reinterpret_cast<std::uintptr_t>(buffer)) +
                          ") is not 256-byte aligned");
  Vector v;
  v.format = format;
  v.size = size;
  v.memory = memory;
  char* next = static_cast<char*>(buffer);
  const auto take = [&](std::size_t word) {
    void* p = next;
    next += aligned(std::size_t(size) * word);
    return p;
  };
  if (has_plane(format, 64)) v.f64 = static_cast<double*>(take(8));
  if (has_plane(format, -32)) v.f32 = static_cast<float*>(take(4));
  if (has_plane(format, 32)) v.w32 = static_cast<std::uint32_t*>(take(4));
  if (has_plane(format, 16)) v.w16 = static_cast<std::uint16_t*>(take(2));
  if (has_plane(format, 8)) v.w8 = static_cast<std::uint8_t*>(take(1));
  return v;
}

}  // namespace mixsolve::slfp
