#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine (docs/development.md): the GPU suite (ctest label gpu) under
# MIXSOLVE_GPU_TESTS_REQUIRED, so that it fails when no GPU is visible, when any GPU test skips
# (a backend that cannot run, an older architecture or cuBLAS) and when no test was found. Logs
# and ctest's measured times (for tools/update_test_timeouts.py) go to $OUT.
#   BUILD=build-gpu CTEST_ARGS="-R GpuSolve" bash tools/device_tests.sh
set -uo pipefail
B=${BUILD:-build-gpu}
out=${OUT:-.}
export LD_LIBRARY_PATH=$PWD/$B/gpu-libs:${LD_LIBRARY_PATH:-}
export MIXSOLVE_GPU_TESTS_REQUIRED=1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
# shellcheck disable=SC2086
ctest --test-dir "$B" -L gpu --no-tests=error --output-on-failure ${CTEST_ARGS:-} > "$out/ctest_gpu.txt" 2>&1
rc=$?
cp "$B/Testing/Temporary/CTestCostData.txt" "$out/ctest_gpu_costs.txt" 2>/dev/null
grep -E "tests passed|tests failed|Total Test time|\*\*\*Failed|\*\*\*Timeout|Not Run|Skipped" "$out/ctest_gpu.txt" | tail -25
exit $rc
