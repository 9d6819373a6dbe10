#!/usr/bin/python3
"""Float32 rounding of Winograd F(4x4,3x3) for a choice of interpolation points.

Builds B^T, G and A^T (Toom-Cook, exact rationals) for five finite points and
infinity, checks them against a direct correlation, then simulates the CPU
driver's arithmetic on random 6x6 patches over C channels -- G g G^T in double
rounded once to float32, B^T d B, the per-point products summed over the
channels and A^T M A in float32 -- and prints the largest error against the
direct convolution in double, relative to the largest output
(docs/cpu-kernels.md, "Accuracy").

    bench/kernels/winograd_error.py [--channels 64 512]
"""
import argparse
from fractions import Fraction as F

import numpy as np


def polymul(a, b):
    out = [F(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def matrices(points, m=4, r=3):
    """A^T (m x a), G (a x r), B^T (a x a) for the finite `points` and infinity."""
    AT = [[p ** i for p in points] + [F(1) if i == m - 1 else F(0)] for i in range(m)]
    G = []
    for j, p in enumerate(points):
        n = F(1)
        for l, q in enumerate(points):
            if l != j:
                n *= p - q
        G.append([p ** k / n for k in range(r)])
    G.append([F(1) if k == r - 1 else F(0) for k in range(r)])
    M = [F(1)]
    for p in points:
        M = polymul(M, [-p, F(1)])
    BT = []
    for j in range(len(points)):
        row = [F(1)]
        for l, q in enumerate(points):
            if l != j:
                row = polymul(row, [-q, F(1)])
        BT.append(row + [F(0)])
    BT.append(M)
    return [np.array([[float(x) for x in r] for r in mat]) for mat in (AT, G, BT)]


def error(points, channels, relu, rng):
    AT, G, BT = matrices(points)
    worst, scale = 0.0, 0.0
    for _ in range(10):
        d = rng.standard_normal((20, channels, 6, 6)).astype(np.float32)
        if relu:
            d = np.maximum(d, 0)
        g = (rng.standard_normal((channels, 3, 3)) / np.sqrt(9 * channels)).astype(np.float32)
        U = np.einsum("ak,ckl,bl->cab", G, g.astype(np.float64), G).astype(np.float32)
        BTf, ATf = BT.astype(np.float32), AT.astype(np.float32)
        V = np.einsum("ai,ncij,bj->ncab", BTf, d, BTf, dtype=np.float32)
        M = np.einsum("ncab,cab->nab", V, U, dtype=np.float32)
        Y = np.einsum("ia,nab,jb->nij", ATf, M, ATf, dtype=np.float32)
        ref = np.zeros((20, 4, 4))
        for i in range(4):
            for j in range(4):
                ref[:, i, j] = np.einsum("ncxy,cxy->n", d[:, :, i:i + 3, j:j + 3].astype(np.float64),
                                         g.astype(np.float64))
        worst = max(worst, float(np.abs(Y - ref).max()))
        scale = max(scale, float(np.abs(ref).max()))
    return worst / scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--channels", nargs="+", type=int, default=[64, 512])
    args = parser.parse_args()
    choices = {"0 +-1 +-2 (Lavin & Gray)": [0, 1, -1, 2, -2],
               "0 -1 1 1/2 -2 (the driver's)": [0, -1, 1, F(1, 2), -2],
               "0 +-1 +-1/2": [0, 1, -1, F(1, 2), F(-1, 2)]}
    for name, points in choices.items():
        AT, G, BT = matrices([F(p) for p in points])
        rng = np.random.default_rng(1)
        d, g = rng.standard_normal(6), rng.standard_normal(3)
        direct = np.array([sum(d[i + k] * g[k] for k in range(3)) for i in range(4)])
        assert np.abs(AT @ ((G @ g) * (BT @ d)) - direct).max() < 1e-12, name
        for channels in args.channels:
            for relu in (False, True):
                e = error([F(p) for p in points], channels, relu, np.random.default_rng(3))
                print("%-30s C=%-4d %-9s %.2e" % (name, channels, "relu(x)" if relu else "x", e))


if __name__ == "__main__":
    main()
