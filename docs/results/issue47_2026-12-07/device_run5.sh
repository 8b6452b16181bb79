#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 5 of issue 47 (repository root on the device machine; carry build-pack-n2): the
# near-diagonal FP16 LU pivoting inside its diagonal blocks (FactorRequest::diagonal_blocks).
# The new GPU tests first, then solve_benchmark on hpl_mxp: auto (diagonal blocks) against
# MIXSOLVE_DIAGONAL_BLOCKS=never (the screen's FP16 LU with partial pivoting, run 4's code path)
# and fp16 (partial pivoting) at 32768, the chain's multiprocessors at 8 (default) and 16, one
# profiled LU; 65536 both ways; geo 1e2 at 32768 (the screen rejects it: nothing may change).
# Logs in $OUT/r5.tgz.
set -u
tar xJf build-pack-n2/carry.tar.xz
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
B=carry-a/benchmarks/solve_benchmark T=carry-a/tests/mixsolve_gpu_tests
R=/tmp/r5; mkdir -p $R
snap() { tar czf $OUT/r5.tgz -C /tmp r5; }
show() { grep -vE "^#|phase|^  " "$1" | tail -"$2"; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 120 $T --gtest_filter='GpuSolve.DiagonalBlock*:GpuSolve.NearDiagonal*:GpuDiagonalBlock.*' > $R/tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $R/tests.txt | head; snap
timeout 120 $B --suite --suite-families hpl_mxp --sizes 32768 --precisions "auto,fp16" --irs "" --reps 3 --json $R/hpl32768.json > $R/hpl32768.txt 2>&1
echo "== hpl 32768 rc=$?"; show $R/hpl32768.txt 3; snap
MIXSOLVE_DIAGONAL_BLOCKS=never timeout 100 $B --suite --suite-families hpl_mxp --sizes 32768 --precisions auto --irs "" --reps 3 --json $R/hpl32768_never.json > $R/hpl32768_never.txt 2>&1
echo "== hpl 32768 never rc=$?"; show $R/hpl32768_never.txt 2; snap
MIXSOLVE_LU_CHAIN_SMS=16 timeout 100 $B --suite --suite-families hpl_mxp --sizes 32768 --precisions auto --irs "" --reps 3 --json $R/hpl32768_sms16.json > $R/hpl32768_sms16.txt 2>&1
echo "== hpl 32768 chain 16 rc=$?"; show $R/hpl32768_sms16.txt 2; snap
MIXSOLVE_LU_PROFILE=1 timeout 100 $B --suite --suite-families hpl_mxp --sizes 32768 --precisions auto --irs "" --reps 1 > $R/hpl32768_profile.txt 2>&1
echo "== profile rc=$?"; grep -iE "panel|diagonal|update|chain|bulk|total" $R/hpl32768_profile.txt | head -20; snap
timeout 150 $B --suite --suite-families hpl_mxp --sizes 65536 --precisions auto --irs "" --reps 1 --json $R/hpl65536.json > $R/hpl65536.txt 2>&1
echo "== hpl 65536 rc=$?"; show $R/hpl65536.txt 2; snap
MIXSOLVE_DIAGONAL_BLOCKS=never timeout 150 $B --suite --suite-families hpl_mxp --sizes 65536 --precisions auto --irs "" --reps 1 --json $R/hpl65536_never.json > $R/hpl65536_never.txt 2>&1
echo "== hpl 65536 never rc=$?"; show $R/hpl65536_never.txt 2; snap
timeout 90 $B --sizes 32768 --spectra geo --conds 1e2 --precisions auto --irs "" --reps 2 --json $R/geo.json > $R/geo.txt 2>&1
echo "== geo 32768 rc=$?"; show $R/geo.txt 2; snap
