#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine: the emulated DGEMMs' GPU tests, then dgemm_benchmark against cuBLAS
# DGEMM and cuBLAS's own FP64 emulation in the same run. BIN is a folder holding the
# stripped mixsolve_gpu_tests and dgemm_benchmark, LIBS the bundled libraries
# (../shared/tools/gpu-bundle). Logs and JSON into $OUT.
#   BIN=build-carry LIBS=build-carry/gpu-libs bash tools/device_ozaki.sh
set -u
export MIXSOLVE_GPU_TESTS_REQUIRED=1  # GPU tests fail, not skip (tests/gpu/gpu_test_support.hpp)
export LD_LIBRARY_PATH=$PWD/${LIBS:?LIBS}
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
timeout 200 "${BIN:?BIN}/mixsolve_gpu_tests" --gtest_filter='GpuOzaki2Int8.*:GpuDgemmEmulated.*' > "$out/gpu_tests.txt" 2>&1
grep -E "tests ran|PASSED|FAILED|Failure" "$out/gpu_tests.txt" | head -20
timeout "${BENCH_SECONDS:-300}" "$BIN/dgemm_benchmark" --sizes "${SIZES:-4096,8192,16384}" \
  --shapes "${SHAPES:-16384x16384x256,32768x32768x256}" --phis "${PHIS:-0.1,1,2}" \
  --backends "${BACKENDS:-cublas-dgemm,cublas-dgemm-emulated,ozaki2-int8,ozaki2-int8:moduli=12}" \
  --json "$out/dgemm.json" 2>&1 | tee "$out/dgemm.txt"
