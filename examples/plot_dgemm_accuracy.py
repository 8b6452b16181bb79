#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot the CSV of compare_dgemm_backends (--csv FILE): maximum relative error against the number
of lower-precision products, one line per scheme (FP32 splits, BF16 slices, INT8 moduli) and
one panel per phi, with FP64 GEMM's error as a horizontal line. Needs matplotlib.

    plot_dgemm_accuracy.py results.csv accuracy.png
"""
import csv
import sys
from collections import defaultdict

from plot_support import pyplot_for


def main() -> int:
    plt = pyplot_for("plot_dgemm_accuracy", __doc__)
    if plt is None:
        return 1
    # phi -> (table, backend without parameters) -> [(products, error)]: one line per backend, so
    # that the FP32 splits' product backends (SGEMM, halfhalf, tf32tf32 on a GPU) stay apart
    series = defaultdict(lambda: defaultdict(list))
    fp64 = {}
    n = ""
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            n = row["n"]
            phi, products, error = float(row["phi"]), float(row["products"]), float(row["max_relative_error"])
            if row["table"] == "FP64":
                if row["backend"] in ("cublas-dgemm", "host-fp64"):
                    fp64[phi] = error
                continue
            series[phi][(row["table"], row["backend"].split(":")[0])].append((products, max(error, 1e-17)))
    phis = sorted(series)
    fig, axes = plt.subplots(1, len(phis), figsize=(5 * len(phis), 4), squeeze=False)
    for ax, phi in zip(axes[0], phis):
        for (table, backend), points in series[phi].items():
            points.sort()
            ax.plot([p for p, _ in points], [e for _, e in points], marker="o", label=f"{table}: {backend}")
        if phi in fp64:
            ax.axhline(max(fp64[phi], 1e-17), color="black", linestyle="--", label="FP64 GEMM")
        ax.set_yscale("log")
        ax.set_xlabel("lower-precision GEMMs")
        ax.set_ylabel("max relative error")
        ax.set_title(f"phi = {phi:g}, n = {n}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
