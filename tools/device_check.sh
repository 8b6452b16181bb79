#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine (see docs/development.md): the GPU tests, then the GEMM benchmark with
# $BENCH_ARGS (default: a quick set). Logs go to $OUT.
export LD_LIBRARY_PATH=build-gpu/gpu-libs:$LD_LIBRARY_PATH
export MIXSOLVE_GPU_TESTS_REQUIRED=1  # GPU tests fail, not skip (tests/gpu/gpu_test_support.hpp)
B=build-gpu
$B/tests/mixsolve_gpu_tests --gtest_brief=1 > $OUT/gpu_tests.txt 2>&1; tail -8 $OUT/gpu_tests.txt
$B/benchmarks/gemm_benchmark ${BENCH_ARGS:---sizes 4096,8192,16384 --sweep-n 2048 --sweep-k 256,16384 --reps 5 --backends cublas-sgemm,cublas-fp16,cublas-tf32,halfhalf,tf32tf32,halfhalf-mma-sync,tf32tf32-mma-sync,markidis} 2>&1 | grep -v '^$'
