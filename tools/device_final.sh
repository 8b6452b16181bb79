#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine: GPU tests (ctest, label gpu), the full GEMM benchmark (JSON), the
# example (CSV), with the GPU's clocks and power logged during the benchmark. Results in $OUT.
export LD_LIBRARY_PATH=$PWD/build-gpu/gpu-libs:$LD_LIBRARY_PATH
export MIXSOLVE_GPU_TESTS_REQUIRED=1  # GPU tests fail, not skip (tests/gpu/gpu_test_support.hpp)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv | tee $OUT/gpu.txt
ctest --test-dir build-gpu -L gpu --no-tests=error 2>&1 | tee $OUT/ctest_gpu.txt | tail -6
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 250 > $OUT/smi.csv &
smi=$!
build-gpu/benchmarks/gemm_benchmark --json $OUT/gemm_benchmark.json > $OUT/gemm_benchmark.txt 2>&1
kill $smi
build-gpu/examples/compare_gemm_backends --csv $OUT/compare_gemm_backends.csv > $OUT/compare_gemm_backends.txt 2>&1
cat $OUT/gemm_benchmark.txt
