#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine (docs/development.md): Nsight Compute's stall reasons for one launch
# of each kernel named, as the share of the active warps' cycles that each reason holds (the
# no-instruction share tells whether the instruction fetch bounds a kernel), with the kernel's
# duration, cycles, executed warp instructions, grid size, DRAM and SM throughput (% of peak) and
# achieved occupancy. One CSV line per kernel and metric on stdout;
# the raw CSV in $OUT/ncu_stalls_<name>.csv where $OUT is set.
#   KERNELS="leaf_cholesky_kernel invert_triangles_kernel panel_lu_kernel" SKIP=40 \
#     bash tools/ncu_stalls.sh build-carry/benchmarks/solve_benchmark --family poev --sizes 8192 ...
set -uo pipefail
NCU=${NCU:-/usr/local/cuda/bin/ncu}
KERNELS=${KERNELS:?KERNELS: kernel names (regular expressions), separated by spaces}
SKIP=${SKIP:-40}
reasons="no_instruction barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle \
branch_resolving dispatch_stall lg_throttle membar not_selected selected misc"
metrics="gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,launch__grid_size"
# how near the kernel runs to the memory system's and the multiprocessors' peaks, and its occupancy
metrics="$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed"
metrics="$metrics,sm__warps_active.avg.pct_of_peak_sustained_active"
for r in $reasons; do metrics="$metrics,smsp__warp_issue_stalled_${r}_per_warp_active.pct"; done
for kernel in $KERNELS; do
  csv=${OUT:-/tmp}/ncu_stalls_$(echo "$kernel" | tr -c 'A-Za-z0-9_\n' '_').csv
  "$NCU" --kernel-name "regex:$kernel" --launch-skip "$SKIP" --launch-count 1 --metrics "$metrics" --csv \
    --page raw "$@" > "$csv" 2> "$csv.log" || { echo "$kernel: ncu failed ($(tail -1 "$csv.log"))"; continue; }
  python3 - "$kernel" "$csv" <<'PY'
import csv, sys
kernel, path = sys.argv[1], sys.argv[2]
# The profiled program's own output comes first: the table starts at the row of metric names
# ("ID", ...), then a row of units, then a row per profiled kernel.
rows = list(csv.reader(open(path)))
start = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
if start is None or len(rows) < start + 3:
    print(f"{kernel}: no kernel profiled"); sys.exit()
head, values = rows[start], rows[start + 2]
for name, value in zip(head, values):
    if name.startswith(("gpu__", "sm__", "smsp__", "dram__", "launch__")):
        print(f"{kernel},{name.replace('smsp__warp_issue_stalled_', 'stall ').replace('_per_warp_active.pct', ' %')},{value}")
PY
done
