#!/usr/bin/python3
"""compare_outputs.py GOT_DIR EXPECTED_DIR [--tol T]: every NAME.npy of
EXPECTED_DIR against GOT_DIR's, per element (|got - expected| <= T * (|expected|
+ max|expected|)) and normwise (||got - expected|| / ||expected|| <= T).
Prints one line per output; exit 1 on a mismatch or a missing output."""
import argparse
import os
import sys

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("got")
parser.add_argument("expected")
parser.add_argument("--tol", type=float, default=1e-5)
args = parser.parse_args()
bad = 0
names = sorted(f for f in os.listdir(args.expected) if f.endswith(".npy"))
if not names:
    print("no outputs in", args.expected)
    sys.exit(1)
for f in names:
    e = np.load(os.path.join(args.expected, f)).astype(np.float64)
    path = os.path.join(args.got, f)
    if not os.path.exists(path):
        print("%s: missing" % f[:-4])
        bad += 1
        continue
    g = np.load(path).astype(np.float64)
    if g.shape != e.shape:
        print("%s: shape %s, expected %s" % (f[:-4], g.shape, e.shape))
        bad += 1
        continue
    scale = float(np.max(np.abs(e))) if e.size else 0.0
    norm = float(np.linalg.norm(e))
    normwise = float(np.linalg.norm(g - e)) / norm if norm else float(np.linalg.norm(g - e))
    elementwise = bool(np.all(np.abs(g - e) <= args.tol * (np.abs(e) + scale)))
    ok = elementwise and normwise <= args.tol and bool(np.all(np.isfinite(g)))
    print("%s: %s, normwise relative error %.2e, output scale %.3g" % (
        f[:-4], "match" if ok else "MISMATCH", normwise, scale))
    bad += not ok
sys.exit(1 if bad else 0)
