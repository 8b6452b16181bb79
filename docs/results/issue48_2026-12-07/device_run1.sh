#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 1 of issue 48, planned (repository root on the device machine; carry the pack of the
# commit to test as PACK, e.g. build-pack-n6 made by
#   PACK=build-pack-n6 bash tools/gpu_carry.sh build-gpu carry-a benchmarks/lstsq_benchmark; rm -rf carry-a):
# the GPU tests of the least-squares changes (the device rank-revealing attempt, ridge, the
# device-vs-host comparisons), the GPU fuzz, then lstsq_benchmark on 65536 x 2048 with the
# rank-deficient families and the uniform A (the full-rank path's time for the 1.5x target).
# Then, in a second call: BUILD=carry-a CASES=gtest-least-squares TOOLS="memcheck initcheck
# racecheck synccheck" OUT=$OUT bash tools/sanitize.sh. Logs in $OUT/r1.tgz.
set -u
PACK=${PACK:-build-pack-n6}
tar xJf "$PACK/carry.tar.xz"
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
T=carry-a/tests/mixsolve_gpu_tests B=carry-a/benchmarks/lstsq_benchmark
R=/tmp/r1; mkdir -p $R
snap() { tar czf "$OUT/r1.tgz" -C /tmp r1; }
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $R/gpu.txt
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 200 $T --gtest_filter='GpuLeastSquares.*:GpuFuzz.LeastSquares:GpuQr.*:GpuDocumentedGuarantees.*' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|Failure|two equal|device .* host" $R/tests.txt | head -30; snap
timeout 300 $B --shapes ${SHAPES:-65536x2048} --rank-deficient duplicate,dummy,chebyshev --conds none --irs none \
  --refinements cgls --panels tsqr --backends cublas-sgemm --reps ${REPS:-2} --json $R/lstsq.json > $R/lstsq.txt 2>&1
echo "lstsq rc=$?"; grep -vE "^ {20,}" $R/lstsq.txt | tail -30; grep -E "x_svd" $R/lstsq.txt | head; snap
