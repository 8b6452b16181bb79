#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot the CSV of compare_gemm_backends (--csv FILE): relative error against k, one panel per
input class, one line per backend (the layout of Ootomo & Yokota (2021) Fig. 8). Needs matplotlib.

    plot_gemm_accuracy.py results.csv accuracy.png
"""
import csv
import sys
from collections import defaultdict

from plot_support import pyplot_for


def main() -> int:
    plt = pyplot_for("plot_gemm_accuracy", __doc__)
    if plt is None:
        return 1
    series = defaultdict(lambda: defaultdict(list))  # class -> backend -> [(k, error)]
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            if row["error"]:
                continue  # the backend refused this input (e.g. a range error)
            series[row["input_class"]][row["backend"]].append((int(row["k"]), float(row["relative_error"])))
    classes = list(series)
    fig, axes = plt.subplots(1, len(classes), figsize=(5 * len(classes), 4), squeeze=False)
    for ax, name in zip(axes[0], classes):
        for backend, points in sorted(series[name].items()):
            points.sort()
            ax.loglog([k for k, _ in points], [max(e, 1e-17) for _, e in points], marker="o", label=backend)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("k")
        ax.set_ylabel("relative error")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
