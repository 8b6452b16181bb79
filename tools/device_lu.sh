#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run for the LU work (from the repository root on the device machine; logs into $OUT):
#  1. the GPU tests;
#  2. the LU phase profile at n = $TUNE_N for look-ahead off/on and several panel block counts
#     (MIXSOLVE_LU_LOOKAHEAD, MIXSOLVE_PANEL_BLOCKS: benchmarks/solver_tuning_environment.hpp);
#  3. solve_benchmark with $BENCH_ARGS, JSON into $OUT/solve.json.
set -u
export MIXSOLVE_GPU_TESTS_REQUIRED=1  # GPU tests fail, not skip (tests/gpu/gpu_test_support.hpp)
build=${BUILD:-build-gpu}
out=${OUT:-/tmp}
export LD_LIBRARY_PATH=$PWD/$build/gpu-libs
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv | tee "$out/gpu.txt"
ctest --test-dir "$build" -L gpu --no-tests=error --output-on-failure > "$out/gpu_tests.txt" 2>&1
grep -E "tests passed|Failed|\*\*\*" "$out/gpu_tests.txt"
tune() {
  "$build"/benchmarks/solve_benchmark --sizes "${TUNE_N:-16384}" --spectra geo --conds "${TUNE_COND:-1e6}" --irs "" \
    --precisions "${TUNE_PRECISIONS:-halfhalf,fp16}" --warmup 1 --reps 1 2>&1 | grep -v "^#"
}
if [ -n "${TUNE_BLOCKS:-}" ]; then
  echo "== look-ahead off"; MIXSOLVE_LU_PROFILE=1 MIXSOLVE_LU_LOOKAHEAD=0 tune
  for b in $TUNE_BLOCKS; do echo "== look-ahead on, panel blocks $b"; MIXSOLVE_LU_PROFILE=1 MIXSOLVE_PANEL_BLOCKS=$b tune; done
fi
if [ -n "${BENCH_ARGS:-}" ]; then
  "$build"/benchmarks/solve_benchmark $BENCH_ARGS --json "$out/solve.json" 2>&1 | tee "$out/solve.txt"
fi
