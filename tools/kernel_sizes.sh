#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The SASS size of each kernel of one CUDA source, as compiled in a build folder (its own compile
# command, made to emit a cubin): bytes of `.text` per kernel, largest first (16 bytes an
# instruction on Hopper). Runs here, without a GPU. A kernel that runs as one block on the
# critical path and is far larger than the instruction caches may wait on instruction fetch.
#   tools/kernel_sizes.sh build-gpu solvers/src/cholesky/cuda/device_cholesky.cu [count]
set -euo pipefail
build=${1:?usage: kernel_sizes.sh BUILD SOURCE [COUNT]}
source=${2:?usage: kernel_sizes.sh BUILD SOURCE [COUNT]}
count=${3:-10}
object=$(cd "$build" && ninja -t targets all | sed -n "s|^\(.*/${source#*/}\.o\): .*|\1|p" | head -1)
[ -n "$object" ] || { echo "kernel_sizes: no object for $source in $build" >&2; exit 1; }
command=$(cd "$build" && ninja -t commands "$object" | tail -1)
# The same compile, for the build's one real architecture, into a cubin.
command=$(echo "$command" | sed -E 's/ -c / /; s/ -o [^ ]+/ /; s/ -MD -MT [^ ]+ -MF [^ ]+/ /;
  s/--generate-code=arch=compute_([0-9a-z]+),code=\[[^]]*\]/-arch=sm_\1/g')
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
(cd "$build" && eval "$command -cubin -o $cubin")
readelf -SW "$cubin" 2>/dev/null | awk '$2 ~ /^\.text\./ {print $2, $6}' | while read -r name size; do
  printf '%8d %s\n' "$((16#$size))" "$(echo "${name#.text.}" | c++filt | sed -E 's/\(anonymous namespace\):://g; s/\(.*//' | cut -c1-120)"
done | sort -rn | head -"$count"
