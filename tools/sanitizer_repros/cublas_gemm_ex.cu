// SPDX-License-Identifier: BSD-3-Clause
// A cuBLAS-only program for compute-sanitizer findings that sit inside cuBLAS's GEMM kernels: it
// calls cublasGemmEx with FP16 and BF16 inputs and FP32 output (CUBLAS_COMPUTE_32F, as the
// cublas-fp16, cublas-bf16 and cublas-fp16x3 backends do) and the emulated DGEMM
// (CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, as the cublas-dgemm-emulated and dgemm-auto backends
// do) on fully initialized operands, for skinny and square shapes and both transposes of B, with
// nothing of mixsolve linked. A finding that appears here belongs to cuBLAS or to the sanitizer,
// whatever mixsolve passes them.
//
//   nvcc -std=c++17 -arch=sm_90a -o cublas_gemm_ex cublas_gemm_ex.cu -lcublas
//   compute-sanitizer --tool racecheck ./cublas_gemm_ex
// Prints one line per call; exit status 1 when a result is wrong (against a host product in
// double of the same rounded inputs), 2 when a call fails.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void require(bool ok, const char* call, const std::string& why) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", call, why.c_str());
  std::exit(2);
}
void check(cudaError_t e, const char* call) { require(e == cudaSuccess, call, cudaGetErrorString(e)); }
void check(cublasStatus_t s, const char* call) {
  require(s == CUBLAS_STATUS_SUCCESS, call, "cuBLAS status " + std::to_string(int(s)));
}

struct Shape {
  int m, n, k;
  bool b_transposed;
};

// Small integers times powers of two: exact in FP16, BF16 and FP64, so every product is exact in
// FP32 accumulation up to k 2^-8 of rounding; the check allows k u_32 of the magnitude.
double entry(int i, int j, int salt) { return double((i * 7 + j * 13 + salt) % 17 - 8) / 8.0; }

template <class T>
T to(double v);
template <>
__half to<__half>(double v) { return __float2half(float(v)); }
template <>
__nv_bfloat16 to<__nv_bfloat16>(double v) { return __float2bfloat16(float(v)); }
template <>
double to<double>(double v) { return v; }

template <class In, class Out>
bool run(cublasHandle_t h, const Shape& s, cudaDataType_t in_type, cudaDataType_t out_type, cublasComputeType_t compute,
         const char* name) {
  const int b_rows = s.b_transposed ? s.n : s.k, b_cols = s.b_transposed ? s.k : s.n;
  std::vector<In> a(std::size_t(s.m) * s.k), b(std::size_t(b_rows) * b_cols);
  for (int j = 0; j < s.k; ++j)
    for (int i = 0; i < s.m; ++i) a[i + std::size_t(j) * s.m] = to<In>(entry(i, j, 1));
  for (int j = 0; j < b_cols; ++j)
    for (int i = 0; i < b_rows; ++i) b[i + std::size_t(j) * b_rows] = to<In>(entry(i, j, 2));
  In *da = nullptr, *db = nullptr;
  Out* dc = nullptr;
  check(cudaMalloc(&da, a.size() * sizeof(In)), "cudaMalloc");
  check(cudaMalloc(&db, b.size() * sizeof(In)), "cudaMalloc");
  check(cudaMalloc(&dc, std::size_t(s.m) * s.n * sizeof(Out)), "cudaMalloc");
  check(cudaMemcpy(da, a.data(), a.size() * sizeof(In), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(db, b.data(), b.size() * sizeof(In), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemset(dc, 0, std::size_t(s.m) * s.n * sizeof(Out)), "cudaMemset");
  const Out alpha = 1, beta = 0;
  check(cublasGemmEx(h, CUBLAS_OP_N, s.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, s.m, s.n, s.k, &alpha, da, in_type,
                     s.m, db, in_type, b_rows, &beta, dc, out_type, s.m, compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
  std::vector<Out> c(std::size_t(s.m) * s.n);
  check(cudaMemcpy(c.data(), dc, c.size() * sizeof(Out), cudaMemcpyDeviceToHost), "cudaMemcpy (after the GEMM)");
  double worst = 0;
  for (int j = 0; j < s.n; ++j)
    for (int i = 0; i < s.m; ++i) {
      double ref = 0;
      for (int p = 0; p < s.k; ++p)
        ref += entry(i, p, 1) * (s.b_transposed ? entry(j, p, 2) : entry(p, j, 2));
      worst = std::max(worst, std::fabs(double(c[i + std::size_t(j) * s.m]) - ref));
    }
  const bool ok = worst <= s.k * 0x1p-23;
  std::printf("%-26s m %5d n %5d k %5d op(B) %c: max error %.3g %s\n", name, s.m, s.n, s.k, s.b_transposed ? 'T' : 'N',
              worst, ok ? "ok" : "WRONG");
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return ok;
}

}  // namespace

int main() {
  cublasHandle_t h;
  check(cublasCreate(&h), "cublasCreate");
  bool ok = true;
  // Skinny k (the fp16x3 products of three splits, k = 3 x 512), square, the Cholesky's
  // off-diagonal update shapes, and the near-diagonal FP16 LU's L21 = A21 U11^-1 (row-major, seen
  // as 256 x rows x 256).
  const Shape shapes[] = {{64, 64, 1536, true},   {64, 64, 1536, false}, {33, 17, 900, true},
                          {300, 300, 128, true},  {172, 128, 128, true}, {1024, 1024, 512, true},
                          {256, 774, 256, false}, {256, 518, 256, false}};
  for (const Shape& s : shapes) {
    ok &= run<__half, float>(h, s, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, "fp16 -> fp32");
    ok &= run<__nv_bfloat16, float>(h, s, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, "bf16 -> fp32");
  }
#if CUBLAS_VER_MAJOR >= 13
  check(cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_EAGER), "cublasSetEmulationStrategy");
  for (const Shape& s : shapes)
    ok &= run<double, double>(h, s, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT, "emulated dgemm");
#endif
  cublasDestroy(h);
  return ok ? 0 : 1;
}
