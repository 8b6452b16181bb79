#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 4 of issue 47 (repository root on the device machine; carry build-pack-n1, the pack
# of d386844: Auto's FP16-first screen for matrices near their diagonal). GpuSolve tests, the
# compute-sanitizer tools on the new GPU test, then solve_benchmark: hpl_mxp at 32768 and 65536
# (auto with the screen, auto without it, fp16), and geo cond 1e2 / 1e6 at 32768 (auto with and
# without: what the screen costs where it rejects A). Logs in $OUT/r4.tgz.
set -u
tar xJf build-pack-n1/carry.tar.xz
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
B=carry-a/benchmarks/solve_benchmark T=carry-a/tests/mixsolve_gpu_tests
R=/tmp/r4; mkdir -p $R
snap() { tar czf $OUT/r4.tgz -C /tmp r4; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 200 $T --gtest_filter='GpuSolve.*' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran" $R/tests.txt | head
snap
for tool in memcheck initcheck racecheck synccheck; do
  extra=""; [ $tool = memcheck ] && extra="--leak-check full"
  timeout 120 compute-sanitizer --tool $tool $extra --error-exitcode 9 $T --gtest_filter='GpuSolve.NearDiagonal*' > $R/san_$tool.txt 2>&1
  echo "sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' $R/san_$tool.txt | tr '\n' ' ')"
done
snap
off='precision=auto;fp16-when-near-diagonal=false'
timeout 150 $B --suite --suite-families hpl_mxp --sizes 32768 --precisions "auto,$off,fp16" --irs "" --reps 3 --json $R/hpl32768.json > $R/hpl32768.txt 2>&1
echo "== hpl 32768 rc=$?"; grep -vE "^#|phase|^  " $R/hpl32768.txt | tail -4; snap
timeout 150 $B --sizes 32768 --spectra geo --conds 1e2,1e6 --precisions "auto,$off" --irs "" --reps 3 --json $R/geo.json > $R/geo.txt 2>&1
echo "== geo 32768 rc=$?"; grep -vE "^#|phase|^  " $R/geo.txt | tail -6; snap
timeout 200 $B --suite --suite-families hpl_mxp --sizes 65536 --precisions "auto,$off" --irs "" --reps 1 --json $R/hpl65536.json > $R/hpl65536.txt 2>&1
echo "== hpl 65536 rc=$?"; grep -vE "^#|phase|^  " $R/hpl65536.txt | tail -4; snap
