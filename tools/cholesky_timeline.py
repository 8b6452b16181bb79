#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Where a device Cholesky's time goes, from the phase timeline (MIXSOLVE_LU_PROFILE=1
MIXSOLVE_LU_TIMELINE=file): per phase, the products grouped by shape class with their rate
(2 m n k flops), and the idle time between phases (launch gaps, host waits).

  python3 tools/cholesky_timeline.py timeline.csv[.gz] [--factorization N]
"""
import argparse
import collections
import csv
import gzip


def shape_class(m, n, k):
    # Diagonal blocks of the symmetric update are square (m == n); the rest by their inner size.
    kind = "diagonal" if m == n else "rect"
    kb = 1 << max(0, (k - 1).bit_length())  # k rounded up to a power of two
    return f"{kind:8s} k<={kb:5d}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("timeline")
    ap.add_argument("--factorization", type=int, default=None, help="default: the last Cholesky in the file")
    args = ap.parse_args()
    rows = collections.defaultdict(list)
    opener = gzip.open if args.timeline.endswith(".gz") else open
    with opener(args.timeline, "rt") as f:
        for rec in csv.reader(f):
            if len(rec) < 5:
                continue
            rows[int(rec[0])].append(rec)
    chol = [f for f, rs in rows.items() if any(r[1].startswith("cholesky") for r in rs)]
    if not chol:
        raise SystemExit("no Cholesky phases in the timeline")
    fact = args.factorization if args.factorization is not None else max(chol)
    recs = sorted(rows[fact], key=lambda r: float(r[3]))
    phases = collections.defaultdict(lambda: [0, 0.0])
    classes = collections.defaultdict(lambda: [0, 0.0, 0.0])
    busy_end, idle, first, last = None, 0.0, None, 0.0
    for r in recs:
        start, stop = float(r[3]), float(r[4])
        first = start if first is None else first
        if busy_end is not None and start > busy_end:
            idle += start - busy_end
        busy_end = stop if busy_end is None else max(busy_end, stop)
        last = max(last, stop)
        phases[r[1]][0] += 1
        phases[r[1]][1] += stop - start
        if r[1] == "cholesky product" and len(r) >= 8 and r[5]:
            m, n, k = int(r[5]), int(r[6]), int(r[7])
            c = classes[shape_class(m, n, k)]
            c[0] += 1
            c[1] += stop - start
            c[2] += 2.0 * m * n * k
    print(f"factorization {fact}: {last - first:.2f} ms from the first phase to the last, {idle:.2f} ms idle between phases")
    for name, (count, ms) in sorted(phases.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:22s} {count:6d} {ms:9.2f} ms")
    if classes:
        print("  products by class      count        ms    TFLOP/s")
        for name, (count, ms, flops) in sorted(classes.items()):
            print(f"  {name:22s} {count:6d} {ms:9.2f} {flops / (ms * 1e9) if ms > 0 else 0:10.1f}")


if __name__ == "__main__":
    main()
