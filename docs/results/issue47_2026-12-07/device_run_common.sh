#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the planned device runs of issue 47 (device_run6.sh on): unpacks PACK's carry,
# names the solve benchmark and the GPU tests (B, T), a log folder R under /tmp that snap copies
# to $OUT/NAME.tgz, `show FILE N` for a benchmark's last N rows, and the GPU's line.
#   PACK=build-pack-n4 NAME=r6; source docs/results/issue47_2026-12-07/device_run_common.sh
tar xJf "$PACK/carry.tar.xz"
export LD_LIBRARY_PATH=$PWD/carry-a/gpu-libs
B=carry-a/benchmarks/solve_benchmark T=carry-a/tests/mixsolve_gpu_tests
R=/tmp/$NAME; mkdir -p "$R"
snap() { tar czf "$OUT/$NAME.tgz" -C /tmp "$NAME"; }
show() { grep -vE "^#|phase|^  " "$1" | tail -"$2"; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$R/gpu.txt"
