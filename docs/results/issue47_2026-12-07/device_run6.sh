#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 6 of issue 47, planned (repository root on the device machine; carry a pack of the
# commit to test as build-pack-n4): the GPU side of the review follow-ups (the NaN-keeping
# multiplier kernel, GpuSolve.DiagonalBlockPivoting* with block rows reversed and L21 on fp16x3),
# the racecheck reproducer with the L21 shapes, then hpl_mxp at 32768 and 65536 with L21 on the
# FP16 backend (default) against fp16x3 (MIXSOLVE_L21_FP16X3=1): time and refinement steps. The
# full GPU suite (tools/device_tests.sh, ~430 s) goes in a second call. Logs in $OUT/r6.tgz.
set -u
PACK=build-pack-n4 NAME=r6
source docs/results/issue47_2026-12-07/device_run_common.sh
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 120 $T --gtest_filter='GpuSolve.DiagonalBlock*:GpuSolve.NearDiagonal*:GpuDiagonalBlock.*' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $R/tests.txt | head; snap
timeout 150 compute-sanitizer --tool racecheck carry-a/cublas_gemm_ex > $R/repro_racecheck.txt 2>&1
echo "repro racecheck rc=$?"; grep -E "m +256|SUMMARY|Internal" $R/repro_racecheck.txt | head; snap
for l21 in 0 1; do
  MIXSOLVE_L21_FP16X3=$l21 timeout 100 $B --suite --suite-families hpl_mxp --sizes 32768 --precisions auto --irs "" --reps 3 --json $R/hpl32768_l21_$l21.json > $R/hpl32768_l21_$l21.txt 2>&1
  echo "== hpl 32768 L21 fp16x3=$l21 rc=$?"; show $R/hpl32768_l21_$l21.txt 2; snap
  MIXSOLVE_L21_FP16X3=$l21 timeout 150 $B --suite --suite-families hpl_mxp --sizes 65536 --precisions auto --irs "" --reps 1 --json $R/hpl65536_l21_$l21.json > $R/hpl65536_l21_$l21.txt 2>&1
  echo "== hpl 65536 L21 fp16x3=$l21 rc=$?"; show $R/hpl65536_l21_$l21.txt 2; snap
done
