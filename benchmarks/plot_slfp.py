#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot the JSON of slfp_benchmark (--json FILE): per format, AXPY and DOT bandwidth as a share of
the device copy bandwidth, their speedup over cuBLAS (D for FP64-based formats, S for FP32-based)
next to the byte ratio 64 / bits (32 / bits), AXPY's GFLOP/s per W (Mukunoki & Imamura 2016, Table 3 and Fig. 7),
and where the run had --gemm-n, GEMM's speed over cublasDgemm / Sgemm with its GFLOP/s per W.
Needs matplotlib.

    plot_slfp.py slfp.json slfp.png
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from plot_support import pyplot_for  # noqa: E402


def main() -> int:
    plt = pyplot_for("plot_slfp", __doc__)
    if plt is None:
        return 1
    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows = [r for r in data["rows"] if not r["format"].startswith("cublas")]
    names = [r["format"] for r in rows]
    x = range(len(rows))
    gemm = [r for r in data.get("gemm_rows", []) if not r["format"].startswith("cublas")]
    fig, axes = plt.subplots(1, 4 if gemm else 3, figsize=(24 if gemm else 18, 4.5))

    ax = axes[0]
    ax.bar([i - 0.2 for i in x], [100 * r["axpy_fraction_of_copy"] for r in rows], 0.4, label="AXPY")
    ax.bar([i + 0.2 for i in x], [100 * r["dot_fraction_of_copy"] for r in rows], 0.4, label="DOT")
    ax.axhline(100, color="gray", linewidth=0.8)
    ax.set_ylabel("% of the device copy bandwidth")
    ax.set_title("bandwidth (copy: %.0f GB/s)" % data["copy_gb_per_s"])

    ax = axes[1]
    base = [64 if r["format"].startswith(("fp64", "slfp64")) else 32 for r in rows]
    ax.bar([i - 0.2 for i in x], [r["axpy_speedup_vs_cublas"] for r in rows], 0.4, label="AXPY / cuBLAS")
    ax.bar([i + 0.2 for i in x], [r["dot_speedup_vs_cublas"] for r in rows], 0.4, label="DOT / cuBLAS")
    ax.plot(list(x), [b / r["bits"] for b, r in zip(base, rows)], "k_", markersize=18, label="byte ratio")
    ax.set_ylabel("speedup over cuBLAS (D or S)")
    ax.set_title("speedup")

    ax = axes[2]
    ax.bar(list(x), [r["axpy_gflops"] / r["axpy_watts"] if r["axpy_watts"] > 0 else 0 for r in rows])
    ax.set_ylabel("AXPY GFLOP/s per W (board)")
    ax.set_title("energy")

    for ax in axes[:3]:
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=60, ha="right")
    if gemm:
        ax = axes[3]
        gx = range(len(gemm))
        ax.bar([i - 0.2 for i in gx], [r["speedup_vs_cublas"] for r in gemm], 0.4, label="x cuBLAS (D or S)")
        cublas = {r["format"]: r for r in data["gemm_rows"] if r["format"].startswith("cublas")}
        per_watt = [r["gflops"] / r["watts"] if r["watts"] > 0 else 0 for r in gemm]
        ref = [cublas["cublas-dgemm" if r["format"].startswith(("fp64", "slfp64")) else "cublas-sgemm"] for r in gemm]
        ax.bar([i + 0.2 for i in gx], [w / (c["gflops"] / c["watts"]) if c["watts"] > 0 else 0
                                       for w, c in zip(per_watt, ref)], 0.4, label="GFLOP/s per W / cuBLAS's")
        ax.axhline(0.8, color="gray", linewidth=0.8, linestyle="--")
        ax.set_xticks(list(gx))
        ax.set_xticklabels([r["format"] for r in gemm], rotation=60, ha="right")
        ax.set_title("GEMM, n = %d" % data.get("gemm_n", 0))
        ax.legend()
    axes[0].legend()
    axes[1].legend()
    fig.suptitle("%s, n = %d, %s" % (data.get("gpu", ""), data["n"], data.get("date", "")))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
