#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 2 of issue 47 (from the repository root on the device machine; carry build-pack-a2,
# the pack of a1ab3e2's binaries): where the first solve in a process loses its time (item 6).
# solve_benchmark's first-solve line under CUDA's default lazy module loading and under
# CUDA_MODULE_LOADING=EAGER (every module loaded when CUDA starts), at n = 32768 (auto, geo cond
# 1e4 / 1e6 / 1e8: also the rows of the issue's cond targets) and n = 16384 (fp16, cond 1e2).
# Logs in $OUT/r2.tgz.
set -u
tar xJf build-pack-a2/carry.tar.xz
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
B=carry-a/benchmarks/solve_benchmark
R=/tmp/r2; mkdir -p $R
snap() { tar czf $OUT/r2.tgz -C /tmp r2; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
for mode in LAZY EAGER; do
  conds=1e6; [ $mode = LAZY ] && conds=1e4,1e6,1e8
  t0=$(date +%s.%N)
  CUDA_MODULE_LOADING=$mode MIXSOLVE_LU_PROFILE=1 timeout 200 $B --sizes 32768 --spectra geo --conds $conds --precisions auto --irs "" --reps 1 --json $R/solve_${mode}.json > $R/solve_${mode}.txt 2>&1
  echo "== $mode 32768 rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  grep -vE "^#|phase|^  |profile" $R/solve_${mode}.txt | tail -5; grep -E "first mixsolve" $R/solve_${mode}.txt
  grep -E "LU profile: total" $R/solve_${mode}.txt | head -3
  snap
  t0=$(date +%s.%N)
  CUDA_MODULE_LOADING=$mode MIXSOLVE_LU_PROFILE=1 timeout 100 $B --sizes 16384 --spectra geo --conds 1e2 --precisions fp16 --irs "" --reps 3 --json $R/fp16_${mode}.json > $R/fp16_${mode}.txt 2>&1
  echo "== $mode 16384 rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  grep -vE "^#|phase|^  |profile" $R/fp16_${mode}.txt | tail -2; grep -E "first mixsolve" $R/fp16_${mode}.txt
  grep -E "LU profile: total" $R/fp16_${mode}.txt | head -3
  snap
done
