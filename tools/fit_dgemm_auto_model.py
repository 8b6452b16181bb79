#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fits dgemm-auto's cost model of ozaki2-int8 (gemm/src/cuda/dgemm_auto.cpp) to dgemm_benchmark
JSON files of one GPU:

    time = N (2 m n k / int8_ops + per_entry_modulus m n + per_operand_modulus (m + n) k)
           + per_entry m n

with N the moduli of each row (its `moduli=` parameter, or the fewest that keep its `bits` under
the scaling the run used, --scaling). The model is linear in (1 / int8_ops, per_entry_modulus,
per_operand_modulus, per_entry); it is fitted by least squares on the relative error (each row
divided by its measured time). Prints the constants, DGEMM's best measured rate, per row the
predicted and measured speed-ups over DGEMM of the same shape, and the model as an entry of
dgemm_auto_measured_models() (keyed on the GPU's properties: compute capability, multiprocessors,
peak SM and memory clocks in kHz, bus width in bits) and as a DgemmAutoModel for
register_dgemm_auto_model. The JSON gives the compute capability and multiprocessors; the clocks
and bus width come from the options below (mixsolve_gpu_tests --gtest_filter='GpuDgemmAuto.*'
prints them for its GPU), or from the JSON's sm_clock_khz, memory_clock_khz and memory_bus_width
where it has them.

    tools/fit_dgemm_auto_model.py [--scaling norm|largest-entry] [--sm-clock-khz N]
        [--memory-clock-khz N] [--memory-bus-width N] sweep.json [more.json ...]

--scaling: norm (default) for ozaki2-int8 since its 2-norm scaling (default 56 bits);
largest-entry for runs before it (default 53 bits), such as the 2026-11-25 (H100) and 2026-11-26
(H200) sweeps the two measured models were fitted to.
"""
import json
import math
import sys

import numpy as np

MODULI = [256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191, 181, 179, 173]


def operand_room(count, k):
    product = math.prod(MODULI[:count])
    return product.bit_length() - 1 - 1 - math.ceil(math.log2(k)) if k > 1 else product.bit_length() - 2


def norm_operand_bits(count, k):
    """ozaki2_operand_bits (gemm/src/host/ozaki_int8.cpp) in the same double arithmetic; None where
    count moduli are too few for k."""
    top = math.prod(MODULI[:count]).bit_length() - 1  # 2^top <= M
    r = 0.5 * math.sqrt(k) * (1 + 2.0 ** -50)
    limit = math.ldexp(1 - 2.0 ** -50, top - 1)
    a, b = (top - 1) // 2, (top - 2) // 2
    while b >= 1 and (math.ldexp(1, a) + r) * (math.ldexp(1, b) + r) > limit:
        if a > b:
            a -= 1
        else:
            b -= 1
    return None if b < 1 else b - 1


def moduli_for_bits(bits, k, scaling):
    for count in range(2, 20):
        if scaling == "largest-entry" and operand_room(count, k) >= 2 * bits:
            return count
        if scaling == "norm" and (norm_operand_bits(count, k) or -1) >= bits:
            return count
    return 20


DEFAULT_BITS = {"norm": 56, "largest-entry": 53}  # kOzaki2DefaultBits then and now


def moduli_of(backend, k, scaling):
    params = dict(p.split("=") for p in backend.split(":", 1)[1].split(",")) if ":" in backend else {}
    if int(params.get("moduli", 0)):  # 0: chosen from bits, as the backend does
        return int(params["moduli"])
    return moduli_for_bits(int(params.get("bits", 0)) or DEFAULT_BITS[scaling], k, scaling)


def parse(argv):
    options = {"scaling": "norm", "sm-clock-khz": None, "memory-clock-khz": None, "memory-bus-width": None}
    paths = []
    i = 0
    while i < len(argv):
        name = argv[i][2:] if argv[i].startswith("--") else None
        if name is None:
            paths.append(argv[i])
        elif name in options and i + 1 < len(argv):
            options[name] = argv[i + 1]
            i += 1
        else:
            sys.exit(f"unknown or incomplete option {argv[i]!r}")
        i += 1
    if options["scaling"] not in DEFAULT_BITS:
        sys.exit(f"--scaling {options['scaling']!r}: norm or largest-entry")
    if not paths:
        sys.exit(__doc__)
    return options, paths


def main(argv):
    options, paths = parse(argv)
    scaling = options["scaling"]
    rows, header = [], {}
    for path in paths:
        data = json.load(open(path))
        rows += data["rows"]
        header = header or data
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
        count = moduli_of(r["backend"], k, scaling)
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

    # The model keyed on the GPU's properties (DgemmAutoDevice): from the JSON, else the options.
    def prop(key, option):
        value = options[option] if options[option] is not None else header.get(key)
        return str(int(value)) if value is not None else f"/* {key}: --{option} */ 0"

    name = header.get("gpu", "?")
    device = (f'{{"{name}", {header.get("compute_capability", 0)}, {header.get("multiprocessors", 0)}, '
              f'{prop("sm_clock_khz", "sm-clock-khz")}, {prop("memory_clock_khz", "memory-clock-khz")}, '
              f'{prop("memory_bus_width", "memory-bus-width")}}}')
    source = (f'{name.replace("NVIDIA ", "")}, CUDA driver {header.get("cuda_driver", "?")}, '
              f'cuBLAS {header.get("cublas", "?")}, {header.get("date", "?")[:10]}')
    model = (f'{{{best_dgemm:.4g}, {1 / inv_int8:.4g}, {per_entry_modulus:.3g}, {per_operand_modulus:.3g}, '
             f'{per_entry:.3g},\n        "{source}"}}')
    print("\nentry of dgemm_auto_measured_models() (gemm/src/cuda/dgemm_auto.cpp; the properties "
          "must be the GPU's own, as dgemm_auto_device reads them):")
    print(f"      {{{device},\n       {model}}},")
    print("or for one process: mixsolve::gemm::register_dgemm_auto_model(device, mixsolve::gemm::DgemmAutoModel"
          f"{model.replace(chr(10) + '        ', ' ')});")


if __name__ == "__main__":
    main(sys.argv[1:])
