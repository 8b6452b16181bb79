// SPDX-License-Identifier: BSD-3-Clause
// A cuBLAS-only program for compute-sanitizer findings that sit inside cuBLAS kernels: it calls
// cublasDtrsm / cublasStrsm (left side, both triangles, no transpose, unit and non-unit
// diagonals) on fully initialized, well-conditioned triangles for a range of n, right-hand-side
// counts and leading dimensions, with nothing of mixsolve linked. A finding that appears here
// belongs to cuBLAS, whatever mixsolve passes it.
//
//   nvcc -std=c++17 -arch=sm_90a -o cublas_trsm cublas_trsm.cu -lcublas
//   compute-sanitizer --tool synccheck ./cublas_trsm        (also initcheck, memcheck)
// Prints one line per call; exit status 1 when a result is wrong (checked against a host
// substitution in long double).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// Exits with status 2, naming the call, where a CUDA or cuBLAS call failed.
void require(bool ok, const char* call, const char* why) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", call, why);
  std::exit(2);
}
void check(cudaError_t e, const char* call) { require(e == cudaSuccess, call, cudaGetErrorString(e)); }
void check(cublasStatus_t s, const char* call) {
  require(s == CUBLAS_STATUS_SUCCESS, call, ("cuBLAS status " + std::to_string(int(s))).c_str());
}
#define CHECK_CUDA(x) check((x), #x)
#define CHECK_CUBLAS(x) check((x), #x)

template <class T>
cublasStatus_t trsm(cublasHandle_t h, cublasFillMode_t fill, cublasDiagType_t diag, int n, int k, const T* a, int lda,
                    T* b, int ldb) {
  const T one = 1;
  if constexpr (sizeof(T) == 8)
    return cublasDtrsm(h, CUBLAS_SIDE_LEFT, fill, CUBLAS_OP_N, diag, n, k, &one, a, lda, b, ldb);
  else
    return cublasStrsm(h, CUBLAS_SIDE_LEFT, fill, CUBLAS_OP_N, diag, n, k, &one, a, lda, b, ldb);
}

// Solves op(A) X = B on the device and on the host; returns false when they differ by more than
// a bound from unit roundoff and n.
template <class T>
bool run_case(cublasHandle_t h, cublasFillMode_t fill, cublasDiagType_t diag, int n, int k, int lda) {
  std::vector<T> a(std::size_t(lda) * n), b(std::size_t(n) * k);
  unsigned state = 12345u + unsigned(n * 131 + k * 7 + lda);
  auto uniform = [&] { state = state * 1664525u + 1013904223u; return T(state >> 8) / T(1 << 24) - T(0.5); };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < lda; ++i) a[i + std::size_t(j) * lda] = (i == j) ? T(2) + uniform() : uniform() / T(n);
  for (auto& v : b) v = uniform();
  T *da = nullptr, *db = nullptr;
  CHECK_CUDA(cudaMalloc(&da, a.size() * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&db, b.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(T), cudaMemcpyHostToDevice));
  const bool lower = fill == CUBLAS_FILL_MODE_LOWER, unit = diag == CUBLAS_DIAG_UNIT;
  std::printf("%s %s %s n=%d k=%d lda=%d\n", sizeof(T) == 8 ? "dtrsm" : "strsm", lower ? "lower" : "upper",
              unit ? "unit" : "non-unit", n, k, lda);
  CHECK_CUBLAS(trsm(h, fill, diag, n, k, da, lda, db, n));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<T> x(b.size());
  CHECK_CUDA(cudaMemcpy(x.data(), db, x.size() * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  double worst = 0;
  for (int c = 0; c < k; ++c) {
    std::vector<long double> y(n);
    for (int step = 0; step < n; ++step) {
      const int i = lower ? step : n - 1 - step;
      long double s = b[i + std::size_t(c) * n];
      for (int j = 0; j < n; ++j)
        if (lower ? j < i : j > i) s -= (long double)a[i + std::size_t(j) * lda] * y[j];
      y[i] = unit ? s : s / a[i + std::size_t(i) * lda];
    }
    for (int i = 0; i < n; ++i)
      worst = std::fmax(worst, double(std::fabs(y[i] - x[i + std::size_t(c) * n]) / (std::fabs(y[i]) + 1)));
  }
  const double bound = 10.0 * n * (sizeof(T) == 8 ? 0x1p-53 : 0x1p-24);
  std::printf("  max relative error %.2e (bound %.2e)\n", worst, bound);
  return worst <= bound;
}

int main() {
  // Unbuffered, so that each call's line comes out before the sanitizer's reports on it.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  bool ok = true;
  const int sizes[] = {1, 2, 7, 31, 64, 65, 127, 300};
  const int columns[] = {1, 5, 8, 17, 64};
  for (int n : sizes)
    for (int k : columns)
      for (int pad : {0, 3}) {
        ok &= run_case<double>(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT, n, k, n + pad);
        ok &= run_case<double>(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n, k, n + pad);
        ok &= run_case<float>(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT, n, k, n + pad);
        ok &= run_case<float>(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n, k, n + pad);
      }
  CHECK_CUBLAS(cublasDestroy(h));
  std::printf("%s\n", ok ? "all results correct" : "WRONG RESULTS");
  return ok ? 0 : 1;
}
