// SPDX-License-Identifier: BSD-3-Clause
// A two-kernel program for racecheck's reports in factor_diagonal_block_kernel
// (solvers/src/lu/cuda/diagonal_block_lu.cu) while its row-owning warps synchronised among
// themselves with a named barrier (bar.sync 1, N, N < the block's threads) and the others waited
// at __syncthreads: racecheck reported a write of shared memory before a later __syncthreads and a
// read after it as a race (H200, CUDA 13.0, 2026-12-02). Here racecheck reports nothing in either
// kernel (H200, 2026-12-02), so the pattern alone is not what it misread; the LU kernel now takes
// __syncthreads in every thread per column and racecheck reports nothing in it (2026-12-03), the
// cause of the earlier report unexplained. Both kernels here write and read shared
// memory on either side of one __syncthreads, after rounds of exchanges among the first warps:
// `named` synchronises those rounds with bar.sync 1, N as the LU kernel does, `control` with
// __syncthreads. A race reported in `named` alone is racecheck's reading of named barriers.
//
//   nvcc -std=c++17 -arch=sm_90a -o named_barrier named_barrier.cu
//   compute-sanitizer --tool racecheck --racecheck-report analysis ./named_barrier
// Exit status 1 when a kernel's output is wrong, 2 when a call fails.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace {

constexpr int kThreads = 256;

__device__ inline void first_threads_barrier(int threads) { asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory"); }

// Rounds with 256, 128 and 64 taking part (the LU's sub-panels, fewer rows each time); in each,
// four exchanges through `posted` by column parity. Then every third thread appends its index to
// `moved` (atomic slot), __syncthreads, and every thread copies `moved` out.
template <bool kNamed>
__global__ void exchange_then_publish(int* out, int* total_out) {
  __shared__ int posted[2][kThreads / 32];
  __shared__ int moved[kThreads];
  __shared__ int moved_count;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid == 0) moved_count = 0;
  __syncthreads();
  int sum = 0;
  for (int round = 0; round < 3; ++round) {
    const int taking_part = kThreads >> round;
    if (tid < taking_part || !kNamed) {
      for (int j = 0; j < 4; ++j) {
        if (lane == 0 && tid < taking_part) posted[j & 1][warp] = j + warp;
        if (kNamed) first_threads_barrier(taking_part);
        else __syncthreads();
        if (tid < taking_part) sum += posted[j & 1][(warp + 1) % (taking_part / 32)];
        if (!kNamed) __syncthreads();
      }
    }
    __syncthreads();
  }
  if (sum < 0) out[kThreads - 1] = sum;  // never: keeps the exchanges' reads
  if (tid % 3 == 0) moved[atomicAdd(&moved_count, 1)] = tid;
  __syncthreads();
  const int total = moved_count;
  for (int i = tid; i < total; i += kThreads) out[i] = moved[i];
  if (tid == 0) *total_out = total;
}

template <bool kNamed>
bool run(const char* name) {
  int *out = nullptr, *total = nullptr;
  if (cudaMalloc(&out, kThreads * sizeof(int)) != cudaSuccess || cudaMalloc(&total, sizeof(int)) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    std::exit(2);
  }
  exchange_then_publish<kNamed><<<1, kThreads>>>(out, total);
  std::vector<int> h(kThreads);
  int count = 0;
  if (cudaMemcpy(h.data(), out, sizeof(int) * kThreads, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(&count, total, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", name, cudaGetErrorString(cudaGetLastError()));
    std::exit(2);
  }
  std::vector<int> seen(kThreads, 0);
  bool ok = count == (kThreads + 2) / 3;
  for (int i = 0; i < count && ok; ++i) ok = h[i] >= 0 && h[i] < kThreads && h[i] % 3 == 0 && !seen[h[i]]++;
  std::printf("%-8s %d indices published: %s\n", name, count, ok ? "ok" : "WRONG");
  cudaFree(out);
  cudaFree(total);
  return ok;
}

}  // namespace

int main() {
  const bool ok = run<true>("named") & run<false>("control");
  return ok ? 0 : 1;
}
