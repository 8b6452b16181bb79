#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A = HEAD, B = HEAD + next_rolled_diagonal_block.diff, each packed by tools/gpu_carry.sh (PACK=build-pack-a / -b,
# CARRY carry-a / carry-b, benchmarks/solve_benchmark): the GpuCholesky tests and profiles of both,
# the fail path and the default path, nsys of the whole solve, then the GPU suite on B.
set -u
tar xJf build-pack-a/carry.tar.xz; tar xJf build-pack-b/carry.tar.xz
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
R=/tmp/r; mkdir -p $R
snap() { tar czf $OUT/r.tgz -C /tmp r; }
export LD_LIBRARY_PATH=$PWD/carry-b/gpu-libs
MIXSOLVE_GPU_TESTS_REQUIRED=1 timeout 120 carry-b/tests/mixsolve_gpu_tests --gtest_filter='*Cholesky*:*Spd*' > $R/tests_b.txt 2>&1; echo "tests b rc=$?"; tail -3 $R/tests_b.txt
snap
for v in b a; do
  export LD_LIBRARY_PATH=$PWD/carry-$v/gpu-libs
  MIXSOLVE_LU_PROFILE=1 MIXSOLVE_LU_TIMELINE=$R/tl32768_$v.csv timeout 90 carry-$v/benchmarks/solve_benchmark --family poev --sizes 32768 --spectra geo --conds 1e6 --precisions halfhalf-spd --irs "" --dgetrf false --reps 1 > $R/prof32768_$v.txt 2>&1
  echo "== prof $v"; grep -E "halfhalf|potrf|Cholesky|solve prof" $R/prof32768_$v.txt | head -20
  snap
done
export LD_LIBRARY_PATH=$PWD/carry-b/gpu-libs
echo "== explore (B)"
timeout 90 carry-b/benchmarks/solve_benchmark --family poev --sizes 32768 --spectra geo --conds 1e2,1e6,1e10 --precisions fp16-spd,auto-spd --irs "" --dgetrf false --reps 1 2>&1 | tee $R/explore_b.txt | grep -E "potrf|mixsolve|rror"
snap
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "== nsys: $NSYS"
if [ -n "$NSYS" ]; then
  timeout 100 $NSYS profile -o /tmp/nsys_b --force-overwrite true carry-b/benchmarks/solve_benchmark --family poev --sizes 32768 --spectra geo --conds 1e6 --precisions halfhalf-spd --irs "" --dgetrf false --reps 1 > $R/nsys_run.txt 2>&1
  timeout 60 $NSYS stats --report cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_api_sum --format csv -o $R/nsys_b /tmp/nsys_b.nsys-rep > $R/nsys_stats.txt 2>&1
fi
snap
echo "== suite (B)"
mkdir -p $R/t
BUILD=carry-b OUT=$R/t timeout 380 bash tools/device_tests.sh
snap
