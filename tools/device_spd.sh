#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run for the Cholesky work (issue 46; from the repository root on the device machine,
# BUILD a folder made by tools/gpu_carry.sh with benchmarks/solve_benchmark; logs and JSON into
# $OUT). Each step has its own time limit, so that one slow step leaves the others their time:
#  1. the Cholesky phase profile at n = 32768, poev geo cond 1e6 (MIXSOLVE_LU_PROFILE), of the
#     halfhalf and fp16x3 Cholesky (SPD_PROFILE_PRECISIONS; auto-spd is dpotrf below 65536 rows);
#  2. the LAWN-41 SPD table: poev geo and arith, cond 1e2 and 1e6, n on and off the alignment grid
#     and near the default path's cholesky_auto_min_n (SPD_SIZES), against dpotrf + dpotrs: both
#     cheap Cholesky rungs, the default path, the LU path (auto) beside;
#  3. SPD_LARGE alone (n = 65536 by default: its A alone takes 32 GiB);
#  4. the suite's SPD families (SPD_SUITE_SIZES).
#   BUILD=build-carry SPD_STEPS="1 2 3 4" bash tools/device_spd.sh
set -u
build=${BUILD:-build-gpu}
out=${OUT:-/tmp}
export LD_LIBRARY_PATH=$PWD/$build/gpu-libs
bench=$build/benchmarks/solve_benchmark
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
for step in ${SPD_STEPS:-1 2 3 4}; do
  case $step in
    1)
      echo "== 1: profile"
      MIXSOLVE_LU_PROFILE=1 timeout "${SPD_STEP_TIMEOUT:-150}" "$bench" --family poev --sizes 32768 --spectra geo \
        --conds 1e6 --precisions "${SPD_PROFILE_PRECISIONS:-halfhalf-spd,fp16x3-spd}" --irs "" --dgetrf false --warmup 1 --reps 1 2>&1 | tee "$out/profile.txt" |
        grep -E "profile|mixsolve|cusolver"
      ;;
    2)
      echo "== 2: poev"
      timeout "${SPD_STEP_TIMEOUT:-300}" "$bench" --family poev --sizes "${SPD_SIZES:-16384,16391,28672,32768,32761}" \
        --spectra geo,arith --conds 1e2,1e6 --precisions halfhalf-spd,fp16x3-spd,auto-spd,auto --irs "" --dgetrf false \
        --json "$out/poev.json" 2>&1 | tee "$out/poev.txt" | grep -v "^#"
      ;;
    3)
      echo "== 3: large"
      timeout "${SPD_STEP_TIMEOUT:-300}" "$bench" --family poev --sizes "${SPD_LARGE:-65536}" --spectra geo \
        --conds 1e6 --precisions halfhalf-spd,fp16x3-spd,auto-spd --irs "" --dgetrf false --reps 1 --json "$out/large.json" 2>&1 |
        tee "$out/large.txt" | grep -v "^#"
      ;;
    4)
      echo "== 4: suite"
      timeout "${SPD_STEP_TIMEOUT:-300}" "$bench" --suite --sizes "${SPD_SUITE_SIZES:-16384,32761}" \
        --suite-families cov_se,cov_matern32,cov_matern52,toeplitz_ar1,elasticity,poev_geo:cond=1e6 \
        --precisions halfhalf-spd,auto-spd,auto --irs "" --json "$out/suite.json" 2>&1 | tee "$out/suite.txt" | grep -v "^#"
      ;;
  esac
done
