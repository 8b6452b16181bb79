#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine (docs/development.md): compute-sanitizer's memcheck (with leak check),
# initcheck, racecheck and synccheck on the solver, least squares, the GEMM backends, the Ozaki
# backends and the SLFP kernels, at sizes small enough for the sanitizers. Prints one line per
# (tool, case): the sanitizer's error count, leaked bytes and seconds; then a total. Exit status 1
# when any case reports an error or a leak, or did not finish (a sanitizer that did not print its
# summary counts as a failure).
#
#   BUILD=build-gpu TOOLS="memcheck initcheck racecheck synccheck" CASES=regex CASE_TIMEOUT=300 \
#     bash tools/sanitize.sh
# Logs of every run go to $SANITIZE_LOGS (default /tmp/sanitize-logs), and as an archive to
# $OUT/sanitize-logs.tgz where $OUT is set.
set -uo pipefail
B=${BUILD:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$B/gpu-libs:${LD_LIBRARY_PATH:-}
export MIXSOLVE_GPU_TESTS_REQUIRED=1  # a GPU test that would skip fails instead
export MIXSOLVE_FUZZ_CASES=${MIXSOLVE_FUZZ_CASES:-40}
TOOLS=${TOOLS:-memcheck initcheck racecheck synccheck}
CASES=${CASES:-.}
CASE_TIMEOUT=${CASE_TIMEOUT:-300}
LOGS=${SANITIZE_LOGS:-/tmp/sanitize-logs}
mkdir -p "$LOGS"
# The device tool brings back a few files from $OUT: the logs travel as one archive.
trap 'exit 143' TERM INT
[ -n "${OUT:-}" ] && trap 'tar czf "$OUT/sanitize-logs.tgz" -C "$(dirname "$LOGS")" "$(basename "$LOGS")"' EXIT
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

S=$B/examples/solve
T=$B/tests/mixsolve_gpu_tests
L=$B/benchmarks/lstsq_benchmark
# name|command: every factorization precision, odd n, several right-hand sides, the escalation
# (cheap LU -> FP64) and a solve that does not converge without fallback, then the GPU tests of
# Factorization reuse, least squares, the GEMM backends, Ozaki and SLFP at small sizes. Sizes stay
# small: under initcheck cuSOLVER's geqrf (the example's test-matrix generation) took over 9
# minutes at n = 2000 on an H200, against 1.5 s for the whole example unchecked.
cases=(
  "solve-auto-n301-nrhs3|$S --device gpu --n 301 --nrhs 3"
  "solve-fp16x3-n300|$S --device gpu --precision fp16x3 --n 300"
  "solve-fp16x3-n601-cond1e9-escalates|$S --device gpu --precision fp16x3 --n 601 --cond 1e9 --nrhs 2"
  "solve-fp16-gmres-n337-nrhs2|$S --device gpu --precision fp16 --refinement gmres --n 337 --nrhs 2"
  "solve-bf16-n277|$S --device gpu --precision bf16 --n 277 --cond 1e2"
  "solve-fp32-n299-nrhs4|$S --device gpu --precision fp32 --n 299 --nrhs 4"
  "solve-tf32-n263|$S --device gpu --precision tf32 --n 263 --cond 1e2"
  "solve-halfhalf-n265|$S --device gpu --precision halfhalf --n 265"
  "solve-tf32tf32-n267|$S --device gpu --precision tf32tf32 --n 267"
  "solve-ozaki-n325|$S --device gpu --precision ozaki --n 325"
  "solve-fp64-n503|$S --device gpu --precision fp64 --n 503 --cond 1e4"
  "solve-fp16-no-fallback-unconverged|$S --device gpu --precision fp16 --n 301 --cond 1e12 --no-fallback"
  "lstsq-2001x300-5000x64|$L --shapes 2001x300,5000x64 --backends cublas-sgemm,halfhalf --panels tsqr --conds 1e2,1e9 --refinements cgls,gmres --irs none --factorizations fp32,fp64 --reps 1"
  "gtest-solver-kernels|$T --gtest_filter=GpuDiagonalBlock.*:GpuTriangleInverse.*:GpuTriangularSolver.*"
  "gtest-fuzz-and-guarantees|$T --gtest_filter=GpuFuzz*.*:GpuDocumentedGuarantees*.*"
  "gtest-least-squares|$T --gtest_filter=GpuQr.TsqrPanel*:GpuLeastSquares.DeviceSolverMatchesTheHostSolver"
  "gtest-gemm-backends|$T --gtest_filter=GpuBackends.EveryFp32Backend*:GpuBackends.NanAndInf*:GpuBackends.DgemmMatches*:GpuBackends.Fp16x3*:GpuBackends.Halfhalf*:GpuBackends.Unscaled*"
  "gtest-ozaki|$T --gtest_filter=GpuOzaki*.*:GpuDgemmEmulated.*"
  "gtest-slfp-formats|$T --gtest_filter=GpuSlfp.*:GpuFormats.*"
)

total_errors=0
failed=0
printf '%-10s %-42s %8s %12s %8s %s\n' tool case errors leaked_B seconds status
for tool in $TOOLS; do
  flags=(--tool "$tool" --print-limit 100)
  case $tool in
    memcheck) flags+=(--leak-check full) ;;
    racecheck) flags+=(--racecheck-report analysis) ;;
  esac
  for entry in "${cases[@]}"; do
    name=${entry%%|*}
    command=${entry#*|}
    [[ $name =~ $CASES ]] || continue
    log="$LOGS/$tool-$name.log"
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    timeout "$CASE_TIMEOUT" "$SANITIZER" "${flags[@]}" $command > "$log" 2>&1
    rc=$?
    tenths=$((($(date +%s%N) - start) / 100000000))
    summary=$(grep -E "ERROR SUMMARY: [0-9]+ error" "$log" | tail -1)
    errors=$(echo "$summary" | grep -oE "[0-9]+ error" | grep -oE "[0-9]+")
    leaked=$(grep -E "LEAK SUMMARY: [0-9]+ bytes leaked" "$log" | tail -1 | grep -oE "[0-9]+ bytes" | grep -oE "[0-9]+")
    [ "$tool" = memcheck ] || leaked=-
    status=ok
    if [ -z "$errors" ]; then
      status="no summary (rc $rc)"; errors=-; failed=1
    elif [ "$errors" != 0 ] || { [ "$tool" = memcheck ] && [ "${leaked:-0}" != 0 ]; }; then
      status="FAILED"; failed=1; total_errors=$((total_errors + errors))
    fi
    [ "$tool" = memcheck ] && [ -z "$leaked" ] && leaked=0
    printf '%-10s %-42s %8s %12s %6d.%d %s\n' "$tool" "$name" "$errors" "$leaked" $((tenths / 10)) $((tenths % 10)) "$status"
  done
done
echo "sanitize: $total_errors errors in all; $([ $failed = 0 ] && echo 'every case clean' || echo 'SOME CASES FAILED (logs in '"$LOGS"')')"
exit $failed
