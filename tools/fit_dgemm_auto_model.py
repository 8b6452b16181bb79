#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fits dgemm-auto's cost model of ozaki2-int8 (gemm/src/cuda/dgemm_auto.cpp) to dgemm_benchmark
JSON files of one GPU:

    time = N (2 m n k / int8_ops + per_entry_modulus m n + per_operand_modulus (m + n) k)
           + per_entry m n

with N the moduli of each row (its `moduli=` parameter, or the fewest that keep its `bits`, 53 by
default). The model is linear in (1 / int8_ops, per_entry_modulus, per_operand_modulus,
per_entry); it is fitted by least squares on the relative error (each row divided by its measured
time). Prints the constants, DGEMM's best measured rate, and per row the predicted and measured
speed-ups over DGEMM of the same shape.

    tools/fit_dgemm_auto_model.py sweep.json [more.json ...]
"""
import json
import math
import sys

import numpy as np

MODULI = [256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191, 181, 179, 173]


def operand_room(count, k):
    product = math.prod(MODULI[:count])
    return product.bit_length() - 1 - 1 - math.ceil(math.log2(k)) if k > 1 else product.bit_length() - 2


def moduli_for_bits(bits, k):
    for count in range(2, 20):
        if operand_room(count, k) >= 2 * bits:
            return count
    return 20


def moduli_of(backend, k):
    params = dict(p.split("=") for p in backend.split(":", 1)[1].split(",")) if ":" in backend else {}
    if int(params.get("moduli", 0)):  # 0: chosen from bits, as the backend does
        return int(params["moduli"])
    return moduli_for_bits(int(params.get("bits", 53)) or 53, k)


def main(paths):
    rows = []
    for path in paths:
        rows += json.load(open(path))["rows"]
    dgemm = {}
    for r in rows:
        if r["backend"] == "cublas-dgemm" and r["m"] > 1:
            key = (r["m"], r["n"], r["k"])
            dgemm[key] = min(dgemm.get(key, math.inf), r["median_seconds"])
    samples = [r for r in rows if r["backend"].split(":")[0] == "ozaki2-int8" and r["m"] > 1 and
               "panel" not in r["backend"]]
    a, y = [], []
    for r in samples:
        m, n, k = r["m"], r["n"], r["k"]
        count = moduli_of(r["backend"], k)
        t = r["median_seconds"]
        a.append([count * 2 * m * n * k / t, count * m * n / t, count * (m + n) * k / t, m * n / t])
        y.append(1.0)
    x, *_ = np.linalg.lstsq(np.array(a), np.array(y), rcond=None)
    inv_int8, per_entry_modulus, per_operand_modulus, per_entry = x
    best_dgemm = max(2 * m * n * k / t for (m, n, k), t in dgemm.items())
    print(f"int8_ops {1 / inv_int8:.4g}, per_entry_modulus {per_entry_modulus:.3g}, "
          f"per_operand_modulus {per_operand_modulus:.3g}, per_entry {per_entry:.3g}, "
          f"dgemm_flops (best measured) {best_dgemm:.4g}")
    worst = 0
    for r, row in zip(samples, a):
        key = (r["m"], r["n"], r["k"])
        predicted_time = float(np.dot(row, x)) * r["median_seconds"]
        if key not in dgemm:
            continue
        flops = 2 * r["m"] * r["n"] * r["k"]
        predicted = flops / best_dgemm / predicted_time  # as dgemm_auto_choice predicts it
        measured = dgemm[key] / r["median_seconds"]
        worst = max(worst, abs(predicted / measured - 1))
        print(f"  {r['backend']:<24} {r['m']}x{r['n']}x{r['k']:<6} phi {r['phi']:<4} predicted {predicted:5.2f}x "
              f"measured {measured:5.2f}x")
    print(f"largest relative deviation of a predicted speed-up from the measured one: {worst:.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
