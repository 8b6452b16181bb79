#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Simulation behind SolveOptions::probe_pivot_ratio (docs/solver.md, the probe).

For svd-family matrices A = U diag(s) V^T (Haar U, V; `geo` or `arith` spectra, largest entry 1),
an FP32 blocked LU with partial pivoting stands in for the device's FP32-accurate factorizations.
With E = (LU)^-1 P A - I (the factors applied in FP64, as GMRES-IR applies them) it prints how many
singular values of E exceed 1, the iterations unrestarted GMRES needs on (LU)^-1 A to 1e-13, and
the probe's statistic sigma_k(E Omega) / ||Omega||_2 for random Omega with k = 4 and 8.

    tools/probe_simulation.py [n] [cond,cond,...]      (numpy; n = 1024 takes about a minute)
"""
import sys

import numpy as np

rng = np.random.default_rng(1)


def haar(n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def lu_fp32(a, block=64):
    """Right-looking blocked LU with partial pivoting, every operation in FP32."""
    a = a.astype(np.float32).copy()
    n = a.shape[0]
    perm = np.arange(n)
    for k0 in range(0, n, block):
        k1 = min(n, k0 + block)
        for k in range(k0, k1):
            p = k + np.argmax(np.abs(a[k:, k]))
            if p != k:
                a[[k, p]] = a[[p, k]]
                perm[[k, p]] = perm[[p, k]]
            a[k + 1:, k] /= a[k, k]
            a[k + 1:, k + 1:k1] -= np.outer(a[k + 1:, k], a[k, k + 1:k1])
        if k1 < n:
            l11 = np.tril(a[k0:k1, k0:k1], -1).astype(np.float64) + np.eye(k1 - k0)
            a[k0:k1, k1:] = np.linalg.solve(l11, a[k0:k1, k1:].astype(np.float64)).astype(np.float32)
            a[k1:, k1:] -= a[k1:, k0:k1] @ a[k0:k1, k1:]
    return a, perm


def gmres_iterations(apply, b, tol=1e-13, limit=400):
    r = apply(b)
    beta = np.linalg.norm(r)
    basis = [r / beta]
    h = np.zeros((limit + 1, limit))
    for it in range(1, limit + 1):
        w = apply(basis[-1])
        for _ in range(2):  # CGS2
            for j, q in enumerate(basis):
                c = q @ w
                h[j, it - 1] += c
                w -= c * q
        h[it, it - 1] = np.linalg.norm(w)
        basis.append(w / h[it, it - 1])
        e1 = np.zeros(it + 1)
        e1[0] = beta
        y = np.linalg.lstsq(h[:it + 1, :it], e1, rcond=None)[0]
        if np.linalg.norm(h[:it + 1, :it] @ y - e1) < tol * beta:
            return it
    return limit


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    conds = [float(c) for c in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1e6, 1e7, 1e8, 1e10]
    u, v = haar(n), haar(n)
    for spectrum in ("geo", "arith"):
        for cond in conds:
            i = np.arange(n)
            s = cond ** (-i / (n - 1)) if spectrum == "geo" else 1 - i / (n - 1) * (1 - 1 / cond)
            a = (u * s) @ v.T
            a /= np.abs(a).max()
            f, perm = lu_fp32(a)
            lower = np.tril(f, -1).astype(np.float64) + np.eye(n)
            upper = np.triu(f).astype(np.float64)

            def precondition(y):
                return np.linalg.solve(upper, np.linalg.solve(lower, y[perm]))

            e = precondition(a) - np.eye(n)
            large = int(np.sum(np.linalg.svd(e, compute_uv=False) > 1))
            probes = []
            for k in (4, 8):
                omega = rng.uniform(-1, 1, (n, k))
                probes.append(np.linalg.svd(e @ omega, compute_uv=False)[-1] / np.linalg.norm(omega, 2))
            its = gmres_iterations(lambda y: precondition(a @ y), a @ rng.standard_normal(n))
            print(f"{spectrum:5s} cond {cond:7.0e} n {n}: sigma_i(E) > 1: {large:4d}, GMRES {its:4d}, "
                  f"probe k=4 {probes[0]:.2e}, k=8 {probes[1]:.2e}", flush=True)


if __name__ == "__main__":
    main()
