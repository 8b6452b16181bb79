#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Device run 3 of issue 47 (repository root on the device machine; carry build-pack-a2 and
# build-exp): the rows of the issue's targets that earlier runs left unmeasured, on a1ab3e2's
# binaries: the hpl_mxp matrix at n = 65536 (fp16 and auto against dgetrf+getrs; the FP16 LU's
# rate), n = 32761 against 32768 (geo cond 1e2, auto: off the alignment grid), geo cond 1e10 at
# 32768 (auto), and the cuBLASLt kernel-loading experiment (build-exp/lt_reuse: host time of
# GEMMs on shapes never seen, the heuristic's first algorithm against a loaded one among its
# first 8). Logs in $OUT/r3.tgz.
set -u
tar xJf build-pack-a2/carry.tar.xz
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
B=carry-a/benchmarks/solve_benchmark
R=/tmp/r3; mkdir -p $R
snap() { tar czf $OUT/r3.tgz -C /tmp r3; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
(cd build-exp && ./first_call && ./lt_reuse 1 && ./lt_reuse 8) > $R/cublas_loading.txt 2>&1; cat $R/cublas_loading.txt
MIXSOLVE_LU_PROFILE=1 timeout 150 $B --sizes 32761,32768 --spectra geo --conds 1e2 --precisions auto --irs "" --reps 3 --json $R/grid.json > $R/grid.txt 2>&1
echo "== grid rc=$?"; grep -vE "^#|phase|^  |profile" $R/grid.txt | tail -4; snap
timeout 100 $B --sizes 32768 --spectra geo --conds 1e10 --precisions auto --irs "" --reps 1 --json $R/c1e10.json > $R/c1e10.txt 2>&1
echo "== 1e10 rc=$?"; grep -vE "^#|phase|^  |profile" $R/c1e10.txt | tail -2; snap
MIXSOLVE_LU_PROFILE=1 timeout 240 $B --suite --suite-families hpl_mxp --sizes 65536 --precisions fp16,auto --irs "" --reps 1 --json $R/hpl65536.json > $R/hpl65536.txt 2>&1
rc=$?; echo "== hpl 65536 rc=$rc"; grep -vE "^#|phase|^  " $R/hpl65536.txt | tail -8; snap
if [ $rc -ne 0 ]; then
  MIXSOLVE_LU_PROFILE=1 timeout 200 $B --suite --suite-families hpl_mxp --sizes 65536 --precisions fp16 --dgetrf false --irs "" --reps 1 --json $R/hpl65536b.json > $R/hpl65536b.txt 2>&1
  echo "== hpl 65536 without dgetrf rc=$?"; grep -vE "^#|phase|^  " $R/hpl65536b.txt | tail -6; snap
fi
python3 -c "
import json, glob
for f in sorted(glob.glob('$R/*.json')):
    for r in json.load(open(f)).get('rows', []):
        for a in r.get('attempts', []): print(f.split('/')[-1], r['n'], r['method'], a['precision'], round(a['factorization_seconds'], 4), 's', round(a['factorization_tflops'], 1), 'TF/s')"
