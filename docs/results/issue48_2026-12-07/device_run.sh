#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 48's device runs (repository root on the device machine; carry the pack of the commit to
# test as PACK, made by
#   PACK=build-pack-nN bash tools/gpu_carry.sh build-gpu carry-a benchmarks/lstsq_benchmark; rm -rf carry-a).
# RUN=1 (ran 2026-12-07, code eef4e72, PACK=build-pack-n7, REPS=1: run1_h100/): the GPU tests of
#   the least-squares changes (GpuLeastSquares.*, GpuFuzz.LeastSquares, GpuQr.*,
#   GpuDocumentedGuarantees.*), then lstsq_benchmark --rank-deficient at 65536 x 2048; the
#   sanitizers followed in a second call (tools/sanitize.sh CASES=gtest-least-squares).
# RUN=2 (ran 2026-12-08 00:24, code 49d5fbd, PACK=build-pack-n10, PROFILE=1, SANITIZER_LIMIT=70:
#   docs/results/issue48_2026-12-08/run2_h100/): the least-squares GPU tests, the benchmark again
#   (with the attempts' and stages' times), then memcheck and initcheck on the tests of
#   SANITIZER_FILTER. Next: the same at HEAD (initcheck with SANITIZER_LIMIT=120 or fewer tests).
# RUN=3 (ran with RUN=2 above, REPS=1: run2_h100/run3/; next: at HEAD, REPS=3): the shapes of items 2 and 4: lstsq_benchmark on the uniform A and svd_geo cond
#   1e6 at 65536 x 4096 and at small shapes (1000 x 100 .. 16384 x 1024), Auto and FP32
#   factorization, 3 repetitions; no tests.
# PROFILE=1: the rank-revealing attempt's stage times in lstsq.txt (MIXSOLVE_LU_PROFILE).
# Logs in $OUT/r$RUN.tgz.
set -u
RUN=${RUN:-2}
PACK=${PACK:?PACK=build-pack-nN}
tar xJf "$PACK/carry.tar.xz"
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
T=carry-a/tests/mixsolve_gpu_tests B=carry-a/benchmarks/lstsq_benchmark
R=/tmp/r$RUN; mkdir -p $R
snap() { tar czf "$OUT/r$RUN.tgz" -C /tmp "r$RUN"; }
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $R/gpu.txt
if [ "$RUN" = 3 ]; then
  timeout ${FULL_LIMIT:-280} $B --shapes 65536x4096 --conds 1e6 --irs none --refinements cgls --panels tsqr --backends cublas-sgemm \
    --reps ${REPS:-3} --json $R/full_rank.json > $R/full_rank.txt 2>&1
  echo "full rank rc=$?"; grep -E "lstsq" $R/full_rank.txt | cut -c1-220; snap
  timeout ${SMALL_LIMIT:-280} $B --shapes 1000x100,2000x500,4097x1000,8192x512,16384x1024 --conds 1e6 --irs none --refinements cgls \
    --panels tsqr --backends cublas-sgemm --factorizations auto,fp32 --reps ${REPS:-3} --json $R/small.json > $R/small.txt 2>&1
  echo "small rc=$?"; grep -E "lstsq" $R/small.txt | cut -c1-220; snap
  exit 0
fi
if [ "$RUN" = 1 ]; then
  filter='GpuLeastSquares.*:GpuFuzz.LeastSquares:GpuQr.*:GpuDocumentedGuarantees.*' test_limit=200 bench_limit=300
else
  filter='GpuLeastSquares.*:GpuFuzz.LeastSquares:GpuQr.Gram*:GpuDocumentedGuarantees.*' test_limit=150 bench_limit=150
fi
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout $test_limit $T --gtest_filter="$filter" > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|Failure|trap|two equal|device .* host" $R/tests.txt | head -30; snap
MIXSOLVE_LU_PROFILE=${PROFILE:-0} timeout $bench_limit $B --shapes ${SHAPES:-65536x2048} --rank-deficient duplicate,dummy,chebyshev --conds none --irs none \
  --refinements cgls --panels tsqr --backends cublas-sgemm --reps ${REPS:-1} --json $R/lstsq.json > $R/lstsq.txt 2>&1
echo "lstsq rc=$?"; grep -E "rank-deficient|ratio to the FP64|x_svd|profile" $R/lstsq.txt | cut -c1-400; snap
if [ "$RUN" != 1 ]; then
  for tool in memcheck initcheck; do
    timeout ${SANITIZER_LIMIT:-60} compute-sanitizer --tool $tool $([ $tool = memcheck ] && echo --leak-check full) --error-exitcode 1 \
      $T --gtest_filter="${SANITIZER_FILTER:-GpuLeastSquares.DeviceSolverMatchesTheHostSolver:GpuLeastSquares.ManyDependent*:GpuLeastSquares.SmallProblems*:GpuQr.Gram*}" > $R/$tool.txt 2>&1
    echo "$tool rc=$?"; grep -E "ERROR SUMMARY|LEAK SUMMARY|PASSED|FAILED" $R/$tool.txt | head -3
  done
  snap
fi
