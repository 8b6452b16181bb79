#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 1 of issue 47 (from the repository root on the device machine). Three builds, each a
# tools/gpu_carry.sh pack (PACK=build-pack-V2, CARRY carry-V; solve, triangular and lstsq
# benchmarks): A = the triangular solver before (HEAD 32756dc), B = the chained solver with every
# warp polling the last part, C = B with warp 0 polling it and a block barrier. The triangular-
# solver tests on B and C, triangular_benchmark A, B, C, solve_benchmark at n = 32768 on A and the
# faster of B and C, the hpl_mxp suite row (n = 32768) on A (HPL=1; the A pack of matgen's
# hpl_mxp commit), the factorization rates on A (RATE=1), then (SUITE=1) the GPU suite on the
# faster of B and C.
# Logs in $OUT/r.tgz.
set -u
for v in a b c; do tar xJf build-pack-${v}2/carry.tar.xz; done
R=/tmp/r; mkdir -p $R
snap() { tar czf $OUT/r.tgz -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
for v in b c; do
  export LD_LIBRARY_PATH=$PWD/carry-$v/gpu-libs
  MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 100 carry-$v/tests/mixsolve_gpu_tests --gtest_filter='*Triangular*:*Packed*' > $R/tests_$v.txt 2>&1
  echo "tests $v rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED" $R/tests_$v.txt | head
done
snap
for v in a b c; do
  export LD_LIBRARY_PATH=$PWD/carry-$v/gpu-libs
  echo "== triangular $v"; timeout 100 carry-$v/benchmarks/triangular_benchmark --sizes ${TRI_SIZES:-16384,32768} --reps ${TRI_REPS:-10} --json $R/tri_$v.json 2>&1 | tee $R/tri_$v.txt
  snap
done
# The faster of B and C (the 1-vector FP32 pair at the largest n) goes on: solves, then the GPU suite.
w=$(python3 -c "
import json
t = {v: [r['pair_seconds'] for r in json.load(open('$R/tri_%s.json' % v))['rows'] if r['solver'] == 'mixsolve fp32 factors, 1 vector'][-1] for v in 'bc'}
print(min(t, key=t.get))" 2>/dev/null || echo b)
echo "== winner $w"
for v in a $w; do
  export LD_LIBRARY_PATH=$PWD/carry-$v/gpu-libs
  echo "== solve $v"
  MIXSOLVE_LU_PROFILE=1 timeout 150 carry-$v/benchmarks/solve_benchmark --sizes 32768 --spectra geo --conds ${SOLVE_CONDS:-1e6} --precisions auto --irs "" --reps 1 --json $R/solve_$v.json > $R/solve_$v.txt 2>&1
  grep -vE "^#|phase|^  " $R/solve_$v.txt | tail -12; grep "first mixsolve" $R/solve_$v.txt
  snap
done
if [ -n "${HPL:-}" ]; then
  export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
  echo "== hpl_mxp a"
  MIXSOLVE_LU_PROFILE=1 timeout 150 carry-a/benchmarks/solve_benchmark --suite --suite-families hpl_mxp --sizes 32768 --precisions auto,fp16 --irs "" --reps 1 --json $R/hpl_a.json > $R/hpl_a.txt 2>&1
  grep -vE "^#|phase|^  " $R/hpl_a.txt | tail -8
  snap
fi
if [ -n "${RATE:-}" ]; then  # the factorization-rate table: attempts' factorization_tflops in the JSON
  export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
  echo "== rate a"
  timeout 200 carry-a/benchmarks/solve_benchmark --sizes ${RATE_SIZES:-16384,32768} --spectra geo --conds 1e2 --precisions fp16,fp16x3,fp64 --irs "" --reps 1 --json $R/rate_a.json > $R/rate_a.txt 2>&1
  python3 -c "
import json
for r in json.load(open('$R/rate_a.json'))['rows']:
    for a in r.get('attempts', []): print(r['n'], r['method'], a['precision'], round(a['factorization_seconds'], 4), 's', round(a['factorization_tflops'], 1), 'TF/s')"
  snap
fi
if [ -n "${SUITE:-}" ]; then
  echo "== suite $w"
  mkdir -p $R/t
  BUILD=carry-$w OUT=$R/t timeout 330 bash tools/device_tests.sh
  snap
fi
