#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Markdown tables of an A/B/A run (tools/device_before_after.sh): for each row, the time or rate
of the before build (A, A2) and the after build (B), and whether the results are identical.
    python3 tools/before_after_table.py DIR
DIR holds lawn_{A,B,A2}.json and gemm_{A,B,A2}.json, and the suite's "mixsolve auto" rows as text
(suite_rows.txt: sections "## A", "## B", "## A2" of solve_benchmark's table lines).
"""
import json
import os
import sys


def load(directory, name):
    path = os.path.join(directory, name)
    return json.load(open(path)) if os.path.exists(path) else None


def solve_table(directory, stem):
    runs = [load(directory, f"{stem}_{p}.json") for p in ("A", "B", "A2")]
    if None in runs:
        return
    print(f"\n{stem}: {runs[0]['gpu']}, {runs[0]['date']}; median of {runs[0]['reps']}; "
          "x = dgetrf+getrs time / time, in the same pass\n")
    print("| n | matrix | A s (x) | B s (x) | A2 s (x) | B / mean(A, A2) | results B = A |")
    print("|---|---|---|---|---|---|---|")
    key = lambda r: (r["n"], r.get("matrix", r.get("spectrum")), r.get("cond"), r["method"])
    rows = [{key(r): r for r in run["rows"]} for run in runs]
    for k, a in rows[0].items():
        if a["method"] != "mixsolve auto":
            continue
        b, a2 = rows[1][k], rows[2][k]
        same = all(a[f] == b[f] for f in ("backward_error", "forward_error", "iterations", "path"))
        name = a.get("matrix") or f"{a['spectrum']} cond {a['cond']:.0e}"
        cells = [f"{r['median_seconds']:.4f} ({r['speedup_vs_dgetrf']:.2f})" for r in (a, b, a2)]
        ratio = b["median_seconds"] / ((a["median_seconds"] + a2["median_seconds"]) / 2)
        print(f"| {a['n']} | {name} | " + " | ".join(cells) + f" | {ratio:.3f} | {'yes' if same else 'NO'} |")


def suite_table(directory):
    path = os.path.join(directory, "suite_rows.txt")
    if not os.path.exists(path):
        return
    passes, current = {}, None
    for line in open(path):
        if line.startswith("## "):
            current = line.split()[1]
            passes[current] = {}
        elif current and "mixsolve auto" in line:
            head, tail = line.split("mixsolve auto")
            n, matrix = head.split()[0], head.split()[1]
            fields = tail.split()  # seconds, x, iterations, berr, berr/ref, cberr/ref, ferr, ...
            passes[current][(n, matrix)] = fields
    print("\nsuite (solve_benchmark --suite, auto): seconds (x dgetrf+getrs in the same pass)\n")
    print("| n | matrix | A s (x) | B s (x) | A2 s (x) | B / mean(A, A2) | results B = A |")
    print("|---|---|---|---|---|---|---|")
    for key, a in passes["A"].items():
        b, a2 = passes["B"][key], passes["A2"][key]
        ratio = float(b[0]) / ((float(a[0]) + float(a2[0])) / 2)
        same = a[2:] == b[2:]  # iterations and the error columns, as printed
        cells = [f"{r[0]} ({r[1]})" for r in (a, b, a2)]
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + f" | {ratio:.3f} | {'yes' if same else 'NO'} |")


def gemm_table(directory):
    runs = [load(directory, f"gemm_{p}.json") for p in ("A", "B", "A2")]
    if None in runs:
        return
    print(f"\ngemm_benchmark: {runs[0]['gpu']}, {runs[0]['date']}; TFLOP/s, median of 5\n")
    print("| backend | m x n x k | input | A | B | A2 | B / mean(A, A2) | rel. error B = A (12 digits) |")
    print("|---|---|---|---|---|---|---|---|")
    for section in ("square", "k_sweep"):
        key = lambda r: (r["backend"], r["m"], r["n"], r["k"], r.get("input_class", ""))
        rows = [{key(r): r for r in run.get(section, [])} for run in runs]
        for k, a in rows[0].items():
            b, a2 = rows[1][k], rows[2][k]
            ratio = b["tflops"] / ((a["tflops"] + a2["tflops"]) / 2)
            # The benchmark sums the error in an order that varies from run to run (A and A2 differ
            # in the last digits too): equal to 12 digits counts as the same result.
            same = abs(a["relative_error"] - b["relative_error"]) <= 1e-12 * abs(a["relative_error"])
            print(f"| {k[0]} | {k[1]}x{k[2]}x{k[3]} | {k[4]} | {a['tflops']:.1f} | {b['tflops']:.1f} | {a2['tflops']:.1f} | "
                  f"{ratio:.3f} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    directory = sys.argv[1]
    suite_table(directory)
    solve_table(directory, "lawn")
    gemm_table(directory)
