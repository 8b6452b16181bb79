#!/usr/bin/env bash
# Device-side helper for runs during kernel work: GPU tests, then the GEMM benchmark (logs in $OUT).
export LD_LIBRARY_PATH=build-gpu/gpu-libs:$LD_LIBRARY_PATH
B=build-gpu
$B/tests/mixsolve_gpu_tests --gtest_brief=1 > $OUT/gpu_tests.txt 2>&1; tail -12 $OUT/gpu_tests.txt
for v in split fold; do
  echo "=== wgmma variant: $v"
  [ $v = fold ] && export MIXSOLVE_WGMMA_FOLD=1
  $B/tests/mixsolve_gpu_tests --gtest_brief=1 --gtest_filter='*AsAccurateAsSgemm*:*EveryFp32*' 2>&1 | grep -E 'relative error|PASSED|FAILED'
  $B/benchmarks/gemm_benchmark --sizes 8192,16384 --sweep-n 2048 --sweep-k 1024,16384 --reps 3 --backends cublas-sgemm,cublas-fp16,cublas-tf32,halfhalf,tf32tf32 2>&1 | grep -v '^$' | head -26
done
