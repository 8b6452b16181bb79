#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine: the same benchmarks from two builds in one run, A/B/A, for a change
# that must not move speed or results. BEFORE and AFTER are folders holding stripped
# solve_benchmark and gemm_benchmark binaries (AFTER also mixsolve_gpu_tests), LIBS the bundled
# libraries (../shared/tools/gpu-bundle). Logs into $OUT.
#   BEFORE=carry/before AFTER=carry/after LIBS=carry/gpu-libs bash tools/device_before_after.sh
set -u
export MIXSOLVE_GPU_TESTS_REQUIRED=1  # GPU tests fail, not skip (tests/gpu/gpu_test_support.hpp)
export LD_LIBRARY_PATH=$PWD/${LIBS:?LIBS}
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 300 "${AFTER:?AFTER}/mixsolve_gpu_tests" > "$out/gpu_tests.txt" 2>&1
  grep -E "tests ran|PASSED|FAILED" "$out/gpu_tests.txt"
fi
suite=(--suite --suite-families "${FAMILIES:-elasticity,convdiff,cov_se,hilbert,rankdef,scaled}"
       --sizes "${SUITE_SIZES:-16384,32761}" --precisions auto --irs ,)
lawn=(--sizes "${LAWN_SIZES:-16384,32768}" --spectra geo --conds 1e2,1e6 --precisions auto --irs ,)
for pass in A B A2; do
  bin=$BEFORE; [ "$pass" = B ] && bin=$AFTER
  echo "## $pass ($bin)" | tee -a "$out/solve.txt" "$out/gemm.txt"
  "$bin/solve_benchmark" "${suite[@]}" --json "$out/suite_$pass.json" >> "$out/solve.txt" 2>&1
  "$bin/solve_benchmark" "${lawn[@]}" --json "$out/lawn_$pass.json" >> "$out/solve.txt" 2>&1
  "$bin/gemm_benchmark" --sizes "${GEMM_SIZES:-8192,16384}" --sweep-k 256,4096 --json "$out/gemm_$pass.json" \
    >> "$out/gemm.txt" 2>&1
done
grep -E "^##|mixsolve" "$out/solve.txt" | cut -c1-160
