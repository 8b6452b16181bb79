// SPDX-License-Identifier: BSD-3-Clause
// Experiment (not part of the library): host time of cuBLAS calls on shapes seen for the first
// time against the same shapes again, and of cublasLt heuristic queries.
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
  cublasHandle_t h; cublasCreate(&h);
  cudaStream_t s; cudaStreamCreate(&s); cublasSetStream(h, s);
  const int N = 16384, K = 768;
  float *a, *b, *c; __half *ha, *hb;
  cudaMalloc(&a, sizeof(float) * N * 256); cudaMalloc(&b, sizeof(float) * 256 * N); cudaMalloc(&c, sizeof(float) * size_t(N) * N);
  cudaMalloc(&ha, sizeof(__half) * size_t(N) * K); cudaMalloc(&hb, sizeof(__half) * size_t(N) * K);
  const float one = 1, minus = -1;
  std::vector<int> widths; for (int w = N - 256; w > 256; w -= 256) widths.push_back(w);
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = pass == 1 ? 32 : pass == 3 ? 64 : 0;  // passes 1 and 3: shapes never seen
    double sg = 0, sgmax = 0, hg = 0, hgmax = 0, gpu0 = 0;
    for (int w0 : widths) {
      const int w = w0 - shift;
      double t0 = now();
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, w, 256, 256, &one, b, w, a, 256, &one, c, w);
      double t1 = now(); sg += t1 - t0; if (t1 - t0 > sgmax) sgmax = t1 - t0;
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, w, w, K, &minus, ha, CUDA_R_16F, w, hb, CUDA_R_16F, K, &one, c, CUDA_R_32F, w, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      double t2 = now(); hg += t2 - t1; if (t2 - t1 > hgmax) hgmax = t2 - t1;
    }
    double t0 = now(); cudaStreamSynchronize(s); gpu0 = now() - t0;
    printf("pass %d (shift %d): %zu shapes: sgemm host %.2f ms (max %.3f), fp16 gemmex host %.2f ms (max %.3f), then sync %.2f ms\n",
           pass, shift, widths.size(), 1e3 * sg, 1e3 * sgmax, 1e3 * hg, 1e3 * hgmax, 1e3 * gpu0);
  }
  // Lt heuristic queries on new shapes
  cublasLtHandle_t lt; cublasLtCreate(&lt);
  cublasLtMatmulDesc_t op; cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  for (int pass = 0; pass < 2; ++pass) {
    double t = 0; int n = 0;
    for (int w : widths) {
      int m = w + 7 * pass * 0;  // same shapes in pass 1
      cublasLtMatrixLayout_t la, lb, lc;
      cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, m + 32, K, m + 32);
      cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, K, 256, K);
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m + 32, 256, m + 32);
      cublasLtMatmulHeuristicResult_t r[16]; int found = 0;
      double t0 = now();
      cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, r, &found);
      t += now() - t0; ++n;
      cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
    }
    printf("lt heuristic pass %d: %d queries %.2f ms\n", pass, n, 1e3 * t);
  }
  return 0;
}
