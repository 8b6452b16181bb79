#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Makes a small folder to carry to the GPU machine from a build folder: the GPU test binary with
# its ctest files (paths rewritten to the new folder, so `ctest --test-dir CARRY -L gpu` and
# tools/device_tests.sh work there), the solve example, the benchmarks named, stripped, and in
# CARRY/gpu-libs the shared libraries they need that the GPU machine lacks (everything but the C
# and C++ runtimes and CUDA's own libraries; run with LD_LIBRARY_PATH=CARRY/gpu-libs), and the
# sanitizer reproducers of tools/sanitizer_repros/ (CARRY/cublas_trsm, CARRY/cublas_gemm_ex).
#   tools/gpu_carry.sh build-gpu build-carry [benchmarks/lstsq_benchmark ...]
# With PACK=DIR (an ignored folder, e.g. build-pack) it also writes DIR/carry.tar.xz, for when
# the folder and the working tree pass the device tool's 64 MiB: carry DIR instead and unpack it
# there first (tar xJf DIR/carry.tar.xz).
set -euo pipefail
build=${1:?usage: gpu_carry.sh BUILD CARRY [BINARY...]}
carry=${2:?usage: gpu_carry.sh BUILD CARRY [BINARY...]}
shift 2
root=$(pwd)
rm -rf "$carry"
mkdir -p "$carry/tests" "$carry/examples"
for binary in tests/mixsolve_gpu_tests examples/solve "$@"; do
  mkdir -p "$carry/$(dirname "$binary")"
  cp "$build/$binary" "$carry/$binary"
  strip "$carry/$binary"
done
sed "s|$root/$build|$root/$carry|g" "$build/CTestTestfile.cmake" | grep -v "^subdirs(" > "$carry/CTestTestfile.cmake"
echo 'subdirs("tests")' >> "$carry/CTestTestfile.cmake"
# The host tests stay behind: their include line goes.
sed "s|$root/$build|$root/$carry|g" "$build/tests/CTestTestfile.cmake" | grep -v "mixsolve_host_tests" \
  > "$carry/tests/CTestTestfile.cmake"
for f in "$build"/tests/mixsolve_gpu_tests*.cmake; do
  sed "s|$root/$build|$root/$carry|g" "$f" > "$carry/tests/$(basename "$f")"
done
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcusolver|libcusparse|libcurand|libcufft|libnvJitLink|libnvrtc|libnccl)'
mkdir -p "$carry/gpu-libs"
for binary in tests/mixsolve_gpu_tests examples/solve "$@"; do
  ldd "$build/$binary" | while read -r name _ path _; do
    if [[ -n ${path:-} && -f $path && ! $name =~ $skip ]]; then cp -L "$path" "$carry/gpu-libs/$name"; fi
  done
done
# The vendor-only reproducers of tools/sanitize.sh, for the build's first CUDA architecture.
arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=\([0-9a-z]*\).*/\1/p' "$build/CMakeCache.txt")
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for repro in tools/sanitizer_repros/*.cu; do
  "$nvcc" -std=c++17 -O2 -arch="sm_${arch:-90a}" -o "$carry/$(basename "$repro" .cu)" "$repro" -lcublas
done
du -sh "$carry"
if [ -n "${PACK:-}" ]; then
  mkdir -p "$PACK"
  tar cJf "$PACK/carry.tar.xz" "$carry"
  du -sh "$PACK/carry.tar.xz"
fi
