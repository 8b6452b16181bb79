#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs on the device machine (docs/development.md): compute-sanitizer's memcheck (with leak check),
# initcheck, racecheck and synccheck on the solver, least squares, the GEMM backends, the Ozaki
# backends and the SLFP kernels, at sizes small enough for the sanitizers. Prints one line per
# (tool, case): the sanitizer's error count (racecheck: its errors and warnings), leaked bytes and
# seconds; then a total. Exit status 1
# when any case reports an error or a leak, or did not finish (a sanitizer that did not print its
# summary counts as a failure).
#
#   BUILD=build-gpu TOOLS="memcheck initcheck racecheck synccheck" CASES=regex CASE_TIMEOUT=300 \
#     JOBS=1 bash tools/sanitize.sh
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
# (cheap LU -> FP64) and a solve that does not converge without fallback, the Cholesky rungs,
# then the GPU tests of Factorization reuse, the device Cholesky, least squares, the GEMM
# backends, Ozaki and SLFP at small sizes. Sizes stay small: under initcheck cuSOLVER's geqrf
# (the example's test-matrix generation) took over 9 minutes at n = 2000 on an H200, against
# 1.5 s for the whole example unchecked.
# name|arguments of the solve example|n|n under racecheck (see below)
solve_cases=(
  "auto-nrhs3|--nrhs 3|301|131"
  "fp16x3|--precision fp16x3|300|130"
  "fp16x3-cond1e9-escalates|--precision fp16x3 --cond 1e9 --nrhs 2|601|133"
  "fp16-gmres-nrhs2|--precision fp16 --refinement gmres --nrhs 2|337|137"
  "bf16|--precision bf16 --cond 1e2|277|129"
  "fp32-nrhs4|--precision fp32 --nrhs 4|299|139"
  "tf32|--precision tf32 --cond 1e2|263|135"
  "halfhalf|--precision halfhalf|265|141"
  "tf32tf32|--precision tf32tf32|267|143"
  "ozaki|--precision ozaki|325|145"
  "fp64|--precision fp64 --cond 1e4|503|147"
  "fp16-no-fallback-unconverged|--precision fp16 --cond 1e12 --no-fallback|301|131"
  "spd-fp16x3-nrhs2|--matrix poev_geo --structure spd --precision fp16x3 --nrhs 2|389|149"
  "spd-fp16-breakdown-escalates|--matrix poev_geo --cond 1e10 --structure spd --precision fp16|301|151"
  "spd-fp64|--matrix poev_arith --structure spd --precision fp64|263|133"
  "auto-structure-indefinite|--matrix heev_geo --structure auto --precision fp16x3|277|135"
)
lstsq_args="--backends cublas-sgemm,halfhalf --panels tsqr --conds 1e2,1e9 --refinements cgls,gmres --irs none --factorizations fp32,fp64 --reps 1"
gtest_cases=(
  "gtest-solver-kernels|$T --gtest_filter=GpuDiagonalBlock.*:GpuTriangleInverse.*:GpuTriangularSolver.*:GpuSolve.ResidualsAreWithin*:GpuSolve.NearDiagonal*:GpuSolve.DiagonalBlockPivoting*"
  "gtest-fuzz-and-guarantees|$T --gtest_filter=GpuFuzz*.*:GpuDocumentedGuarantees*.*"
  "gtest-cholesky|$T --gtest_filter=GpuCholesky.*"
  "gtest-least-squares|$T --gtest_filter=GpuQr.TsqrPanel*:GpuQr.GramPivoting*:GpuLeastSquares.DeviceSolverMatchesTheHostSolver:GpuLeastSquares.FactorOnce*:GpuLeastSquares.RidgeRegression*"
  "gtest-gemm-backends|$T --gtest_filter=GpuBackends.EveryFp32Backend*:GpuBackends.NanAndInf*:GpuBackends.DgemmMatches*:GpuBackends.Fp16x3*:GpuBackends.Halfhalf*:GpuBackends.Unscaled*"
  "gtest-gemm-lower-fill|$T --gtest_filter=GpuBackends.LowerFill*"
  "gtest-ozaki|$T --gtest_filter=GpuOzaki*.*:GpuDgemmEmulated.*"
  "gtest-slfp-formats|$T --gtest_filter=GpuSlfp.*:GpuFormats.*"
  "gtest-matgen|$T --gtest_filter=GpuApplicationMatrices.*:GpuTestMatrices*.*"
)
# racecheck instruments every shared-memory access and runs 10-100x slower than the other tools
# (no case at the sizes above finished within 22 s on an H200): it takes the same paths at
# smaller sizes, still above the LU's block size (so the blocked LU, its panels and the
# tensor-core updates run), with fewer fuzz cases. RACE_CASES_SCALE=full gives it the others'.
cases_at() {  # field 3 (n) or 4 (racecheck's n) of solve_cases, then least squares and the tests
  local entry name args n
  for entry in "${solve_cases[@]}"; do
    IFS='|' read -r name args n <<< "$(echo "$entry" | cut -d'|' -f1,2,"$1")"
    echo "solve-$name-n$n|$S --device gpu $args --n $n"
  done
  if [ "$1" = 3 ]; then
    echo "lstsq-2001x300-5000x64|$L --shapes 2001x300,5000x64 $lstsq_args"
    printf '%s\n' "${gtest_cases[@]}"
    return
  fi
  # racecheck: one case per least-squares problem, and one per test (below), so that JOBS of them
  # share the GPU; the tests at their small sizes (MIXSOLVE_GPU_TESTS_SMALL, set below). Each
  # group whole at the sizes above ran past 400 s on an H200 (2026-12-02), ten at a time.
  # (Per shape and backend alone, the four cases each ran past 420 s, H200, 2026-12-02; one per
  # condition number and refinement at 601x130 and 1200x64 as well, past 330 s sixteen at a time,
  # 2026-12-03.) So under racecheck: smaller shapes (RACE_LSTSQ_SHAPES; a TSQR tree of several
  # panels still), one factorization per case, and reps 1 (with the benchmark's one warm-up).
  # These take 37-93 s each three at a time (H200, 2026-12-03); they share the GPU's time, so
  # twelve at once finished none in 170 s: give them JOBS=3 or so and ~90 s per case.
  local shape backend cond refinement factorization args
  for shape in ${RACE_LSTSQ_SHAPES:-301x65 1000x33}; do
    for backend in cublas-sgemm halfhalf; do
      for cond in 1e2 1e9; do
        for refinement in cgls gmres; do
          for factorization in fp32 fp64; do
            args=${lstsq_args/cublas-sgemm,halfhalf/$backend}
            args=${args/1e2,1e9/$cond}
            args=${args/fp32,fp64/$factorization}
            echo "lstsq-$shape-$backend-$cond-$refinement-$factorization|$L --shapes $shape ${args/cgls,gmres/$refinement}"
          done
        done
      done
    done
  done
  # Under racecheck some of cuBLAS's kernels, uninstrumented, end the process in "The Sanitizer
  # failed to handle a hardware exception" and an illegal address: the emulated DGEMM and
  # cublasGemmEx with FP16 inputs (k = 1536 for m = n = 64, and in the Cholesky tests' products),
  # reproduced with nothing of mixsolve by tools/sanitizer_repros/cublas_gemm_ex.cu (H200, CUDA
  # 13.0, driver 580, 2026-12-02; the case vendor-repro-cublas_gemm_ex below). The tests that
  # reach them stay out of racecheck's list; their mixsolve kernels run under racecheck in the
  # other cases (the solve cases, among them the Cholesky's, and GpuBackends.EveryFp32Backend*).
  # The near-diagonal FP16 LU's tests (GpuSolve.NearDiagonal*, GpuSolve.DiagonalBlockPivoting*)
  # end the same way (the fault surfaces after an L21 product, cublas-fp16 on cuBLASLt); with
  # CUDA_LAUNCH_BLOCKING=1 racecheck completes there and all of its 11 reports lie in cuBLAS's
  # nvjet_sm90_hss kernels (H100, 2026-12-07); their own kernel, factor_diagonal_block on FP32
  # values, runs under racecheck in GpuDiagonalBlock.*. The reproducer has their shapes
  # (256 x rows x 256), not yet run with them.
  local filter suite test
  for entry in "${gtest_cases[@]}"; do
    name=${entry%%|*}
    filter=$(echo "${entry#*--gtest_filter=}" | sed 's/:GpuDgemmEmulated\.\*//')
    "$T" --gtest_list_tests --gtest_filter="$filter" 2>/dev/null | while IFS= read -r line; do
      if [[ $line =~ ^([A-Za-z0-9_/]+)\.$ ]]; then suite=${BASH_REMATCH[1]}
      elif [[ $line =~ ^\ \ ([A-Za-z0-9_/]+) ]]; then
        test=${BASH_REMATCH[1]}
        [[ $suite.$test =~ $race_crashing_tests ]] || echo "$name-$test|$T --gtest_filter=$suite.$test"
      fi
    done
  done
}
race_crashing_tests='^(GpuBackends\.Fp16x3ScalesEachOperand|GpuSolve\.(NearDiagonal|DiagonalBlockPivoting)|GpuDocumentedGuarantees\.(ContextWorkspaceOnlyGrows|EveryDeviceGemmBackendKeepsTheContractsRules|SolvesOnSeparateThreads)|GpuCholesky\.(EveryPrecision|OddOrders|ApplicationMatrices|BreakdownEscalates|Fp16x3Factors))'

mapfile -t cases < <(cases_at 3)
mapfile -t race_cases < <(cases_at 4)

# Findings inside vendor kernels that a vendor-only program reproduces (tools/sanitizer_repros/,
# nothing of mixsolve linked) are left out of the tool that reports them, by kernel name, so
# that the counts above are of everything else; the case "vendor-repro-*" runs the reproducer
# under that tool without the exclusion and prints what it still finds (informational: it does
# not fail the run). Today: cuBLAS's trsm_ln_up_kernel (cublasDtrsm, left upper, no transpose)
# reports "Barrier error detected. Divergent thread(s) in block" under synccheck (CUDA 13.0,
# driver 580, H200), from cublasDtrsm calls on fully initialized data with correct results.
declare -A vendor_excluded=([synccheck]=trsm_ln_up_kernel)
# The reproducer each tool runs as its informational vendor case (built by tools/gpu_carry.sh).
declare -A vendor_repro=([synccheck]=cublas_trsm [racecheck]=cublas_gemm_ex)
# The help text whole, not piped into grep -q: grep's early exit would fail the pipe (pipefail).
sanitizer_help=$("$SANITIZER" --help 2>/dev/null)
exclude_flag=--kernel-name-exclude
[[ $sanitizer_help == *--kernel-name-exclude* ]] || exclude_flag=--kernel-regex-exclude
include_flag=--kernel-name
[[ $sanitizer_help == *"--kernel-name "* ]] || include_flag=--kernel-regex

total_errors=0
failed=0
printf '%-10s %-42s %8s %12s %8s %s\n' tool case errors leaked_B seconds status
for tool in $TOOLS; do
  flags=(--tool "$tool" --print-limit 100)
  case $tool in
    memcheck) flags+=(--leak-check full) ;;
    racecheck) flags+=(--racecheck-report analysis) ;;
  esac
  # synccheck and racecheck track each block's cuda::barrier objects in a table of fixed size;
  # cuBLAS's emulated-DGEMM kernels overflow the default one and one of 64 ("Detected overflow of
  # tracked cuda::barrier structures", then a launch failure: H200, CUDA 13.0, 2026-12-02); 256
  # holds them.
  case $tool in synccheck | racecheck) flags+=(--num-cuda-barriers "${CUDA_BARRIERS:-256}") ;; esac
  [ -n "${vendor_excluded[$tool]:-}" ] && flags+=("$exclude_flag" "kns=${vendor_excluded[$tool]}")
  # racecheck instruments mixsolve's own kernels only (every one lies in namespace mixsolve, so
  # "mixsolve" is in its name); cuBLAS's and cuSOLVER's run uninstrumented. Instrumented, the
  # vendor GEMMs of the least-squares case and the test groups took each past 55 s on an H200,
  # and racecheck reports hazards inside cuBLASLt's emulated DGEMM
  # (cublasLt_fused_imma_dgemm_kernel_sm90, gtest-ozaki, 2026-12-02) that are not ours to fix.
  # RACE_ALL_KERNELS=1 instruments everything.
  [ "$tool" = racecheck ] && [ "${RACE_ALL_KERNELS:-0}" != 1 ] && flags+=("$include_flag" "kns=mixsolve")
  list=("${cases[@]}")
  fuzz_cases=$MIXSOLVE_FUZZ_CASES
  small_tests=0
  if [ "$tool" = racecheck ] && [ "${RACE_CASES_SCALE:-small}" != full ]; then
    list=("${race_cases[@]}")
    fuzz_cases=${RACE_FUZZ_CASES:-8}
    small_tests=1
  fi
  # One case: its log, then "<errors> <failed 0|1>" and its table line in $LOGS/<tool>-<case>.result.
  run_case() {
    local name=$1 command=$2 log="$LOGS/$tool-$1.log" start rc tenths summary counts errors leaked status note bad=0
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    MIXSOLVE_FUZZ_CASES=$fuzz_cases MIXSOLVE_GPU_TESTS_SMALL=$small_tests timeout "$CASE_TIMEOUT" "$SANITIZER" "${flags[@]}" $command > "$log" 2>&1
    rc=$?
    tenths=$((($(date +%s%N) - start) / 100000000))
    if [ "$tool" = racecheck ]; then
      # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)": both count.
      summary=$(grep -E "RACECHECK SUMMARY: [0-9]+ hazard" "$log" | tail -1)
      counts=($(echo "$summary" | grep -oE "\([0-9]+ errors?, [0-9]+ warnings?\)" | grep -oE "[0-9]+"))
      errors=${counts[0]:+$((counts[0] + counts[1]))}
    else
      summary=$(grep -E "ERROR SUMMARY: [0-9]+ error" "$log" | tail -1)
      errors=$(echo "$summary" | grep -oE "[0-9]+ error" | grep -oE "[0-9]+")
    fi
    leaked=$(grep -E "LEAK SUMMARY: [0-9]+ bytes leaked" "$log" | tail -1 | grep -oE "[0-9]+ bytes" | grep -oE "[0-9]+")
    [ "$tool" = memcheck ] || leaked=-
    status=ok
    note=
    grep -q "Detected overflow of tracked cuda::barrier" "$log" && note=" (barrier table overflow: raise CUDA_BARRIERS)"
    if [ -z "$errors" ]; then
      status="no summary (rc $rc)"; errors=-; bad=1
    elif [ "$errors" != 0 ] || [ -n "$note" ] || { [ "$tool" = memcheck ] && [ "${leaked:-0}" != 0 ]; }; then
      status="FAILED$note"; bad=1
    fi
    [ "$tool" = memcheck ] && [ -z "$leaked" ] && leaked=0
    {
      echo "$errors $bad"
      printf '%-10s %-42s %8s %12s %6d.%d %s\n' "$tool" "$name" "$errors" "$leaked" $((tenths / 10)) $((tenths % 10)) "$status"
    } > "$LOGS/$tool-$name.result"
  }
  # JOBS cases at a time (default 1): racecheck's slow cases can share the GPU.
  names=()
  for entry in "${list[@]}"; do
    name=${entry%%|*}
    [[ $name =~ $CASES ]] || continue
    names+=("$name")
    run_case "$name" "${entry#*|}" &
    while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-1}" ]; do wait -n; done
  done
  wait
  for name in "${names[@]}"; do
    read -r errors bad < "$LOGS/$tool-$name.result"
    tail -n +2 "$LOGS/$tool-$name.result"
    [ "$bad" = 1 ] && failed=1
    [ "$bad" = 1 ] && [ "$errors" != - ] && total_errors=$((total_errors + errors))
  done
done
for tool in $TOOLS; do
  [ -n "${vendor_repro[$tool]:-}" ] || continue
  repro=${vendor_repro[$tool]}
  R=$B/$repro
  log="$LOGS/$tool-vendor-repro-$repro.log"
  if [ ! -x "$R" ]; then
    printf '%-10s %-42s %8s %12s %8s %s\n' "$tool" "vendor-repro-$repro" - - - "not built ($R)"
    continue
  fi
  flags=(--tool "$tool" --print-limit 100)
  [ "$tool" = racecheck ] && flags+=(--racecheck-report analysis --num-cuda-barriers "${CUDA_BARRIERS:-256}")
  timeout "$CASE_TIMEOUT" "$SANITIZER" "${flags[@]}" "$R" > "$log" 2>&1
  errors=$(grep -E "(ERROR|RACECHECK) SUMMARY: [0-9]+ (error|hazard)" "$log" | tail -1 | grep -oE "[0-9]+ (error|hazard)" | head -1 | grep -oE "[0-9]+")
  if [ -n "${vendor_excluded[$tool]:-}" ]; then
    found="$(grep -A1 -E "^=+ +[A-Z]" "$log" | grep -c "${vendor_excluded[$tool]}") of the printed reports in ${vendor_excluded[$tool]}"
  else
    found="sanitizer crashes: $(grep -c "failed to handle a hardware exception" "$log")"
  fi
  printf '%-10s %-42s %8s %12s %8s %s\n' "$tool" "vendor-repro-$repro" "${errors:--}" - - \
    "vendor, informational: $found; $(tail -1 "$log" | tr -d '=')"
done
echo "sanitize: $total_errors errors in all; $([ $failed = 0 ] && echo 'every case clean' || echo 'SOME CASES FAILED (logs in '"$LOGS"')')"
exit $failed
