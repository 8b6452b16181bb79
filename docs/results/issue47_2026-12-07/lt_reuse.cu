// SPDX-License-Identifier: BSD-3-Clause
// Experiment (not part of the library): cuBLASLt FP16 GEMMs over the shapes of an LU's trailing
// updates, the heuristic's first algorithm against "a loaded kernel among the first R".
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
using Config = std::array<unsigned long long, 10>;
static Config config_of(const cublasLtMatmulAlgo_t& a) {
  Config c{};
  const cublasLtMatmulAlgoConfigAttributes_t at[] = {CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_STAGES_ID,
    CUBLASLT_ALGO_CONFIG_SPLITK_NUM, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
    CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID};
  for (int i = 0; i < 9; ++i) { size_t w = 0; unsigned long long v = 0; cublasLtMatmulAlgoConfigGetAttribute(&a, at[i], &v, sizeof(v) > 8 ? 8 : 4, &w); c[i] = v; }
  return c;
}
int main(int argc, char** argv) {
  const int reuse_rank = argc > 1 ? atoi(argv[1]) : 1;
  const int N = 16384, K = 768;
  __half *ha, *hb; float* c;
  cudaMalloc(&ha, sizeof(__half) * size_t(N) * K); cudaMalloc(&hb, sizeof(__half) * size_t(N) * K);
  cudaMalloc(&c, sizeof(float) * size_t(N) * N);
  cudaMemset(ha, 0, sizeof(__half) * size_t(N) * K); cudaMemset(hb, 0, sizeof(__half) * size_t(N) * K);
  cudaStream_t s; cudaStreamCreate(&s);
  cublasLtHandle_t lt; cublasLtCreate(&lt);
  cublasLtMatmulDesc_t op; cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  size_t ws = 0; cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  std::set<Config> loaded;
  std::vector<int> widths; for (int w = N - 256; w > 256; w -= 256) widths.push_back(w);
  const float one = 1, minus = -1;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = pass == 1 ? 32 : 0;
    double host = 0, hmax = 0; int reused = 0, fresh = 0;
    cudaEventRecord(e0, s);
    for (int w0 : widths) {
      const int w = w0 - shift;
      cublasLtMatrixLayout_t la, lb, lc;
      cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, w, K, w);
      cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, K, w, K);
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, w, w, w);
      double t0 = now();
      cublasLtMatmulHeuristicResult_t r[8]; int found = 0;
      cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, r, &found);
      int pick = 0;
      for (int i = 0; i < found && i < reuse_rank; ++i) if (loaded.count(config_of(r[i].algo))) { pick = i; break; }
      if (loaded.insert(config_of(r[pick].algo)).second) ++fresh; else ++reused;
      cublasLtMatmul(lt, op, &minus, ha, la, hb, lb, &one, c, lc, c, lc, &r[pick].algo, nullptr, 0, s);
      double t1 = now(); host += t1 - t0; if (t1 - t0 > hmax) hmax = t1 - t0;
      cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
    }
    cudaEventRecord(e1, s); cudaEventSynchronize(e1); float gpu = 0; cudaEventElapsedTime(&gpu, e0, e1);
    printf("rank %d pass %d (shift %d): host %.2f ms (max %.2f), new kernels %d, reused %d, loaded in all %zu, stream time %.2f ms\n",
           reuse_rank, pass, shift, 1e3 * host, 1e3 * hmax, fresh, reused, loaded.size(), gpu);
  }
  return 0;
}
