#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 2 of issue 48 (repository root on the device machine; carry PACK, made by
#   PACK=build-pack-n8 bash tools/gpu_carry.sh build-gpu carry-a benchmarks/lstsq_benchmark; rm -rf carry-a):
# the least-squares GPU tests (the FP32 attempt's FP64 dependence test, the device's pivoted
# Cholesky of R^T R for stage 1), lstsq_benchmark --rank-deficient at 65536 x 2048 with the
# attempts' times, then memcheck and initcheck on the device-vs-host test. Logs in $OUT/r2.tgz.
set -u
PACK=${PACK:-build-pack-n8}
tar xJf "$PACK/carry.tar.xz"
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
T=carry-a/tests/mixsolve_gpu_tests B=carry-a/benchmarks/lstsq_benchmark
R=/tmp/r2; mkdir -p $R
snap() { tar czf "$OUT/r2.tgz" -C /tmp r2; }
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $R/gpu.txt
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 120 $T --gtest_filter='GpuLeastSquares.*:GpuFuzz.LeastSquares:GpuQr.Gram*' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|Failure|trap|two equal" $R/tests.txt | head -20; snap
timeout 150 $B --shapes ${SHAPES:-65536x2048} --rank-deficient duplicate,dummy,chebyshev --conds none --irs none \
  --refinements cgls --panels tsqr --backends cublas-sgemm --reps ${REPS:-1} --json $R/lstsq.json > $R/lstsq.txt 2>&1
echo "lstsq rc=$?"; grep -E "rank-deficient|ratio to the FP64" $R/lstsq.txt | cut -c1-400; snap
for tool in memcheck initcheck; do
  timeout 60 compute-sanitizer --tool $tool $([ $tool = memcheck ] && echo --leak-check full) --error-exitcode 1 \
    $T --gtest_filter='GpuLeastSquares.DeviceSolverMatchesTheHostSolver:GpuQr.Gram*' > $R/$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|LEAK SUMMARY|PASSED|FAILED" $R/$tool.txt | head -3
done
snap
