#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 7 of issue 47 (repository root on the device machine, carrying build-pack-n4, the
# binaries of 31b12b6): Nsight Compute on the kernels that bound the stalled targets (the
# near-diagonal LU's diagonal block, the partial-pivoting panel, the triangular solve of FP32
# factors), each at n = 32768, then the application suite at n = 65536 (item 7, the n = 65536
# target row), one repetition, as far as the time allows. Logs in $OUT/r7.tgz.
set -u
PACK=build-pack-n4 NAME=r7
source docs/results/issue47_2026-12-07/device_run_common.sh
one() { OUT=$R KERNELS="$1" SKIP=$2 timeout 100 bash tools/ncu_stalls.sh $B --sizes 32768 --reps 1 --warmup 1 --irs "" "${@:3}" > $R/ncu_$1.txt 2>&1; echo "== ncu $1 rc=$?"; cat $R/ncu_$1.txt; snap; }
one factor_diagonal_block_kernel 60 --suite --suite-families hpl_mxp --precisions auto --dgetrf false
one panel_lu_kernel 60 --spectra geo --conds 1e2 --precisions fp16 --dgetrf false
one triangular_solve_kernel 6 --spectra geo --conds 1e2 --precisions fp16x3 --dgetrf false
timeout ${SUITE_SECONDS:-300} stdbuf -oL $B --suite --sizes 65536 --precisions auto --irs "" --reps 1 --json $R/suite65536.json > $R/suite65536.txt 2>&1
echo "== suite 65536 rc=$?"; show $R/suite65536.txt 40; snap
