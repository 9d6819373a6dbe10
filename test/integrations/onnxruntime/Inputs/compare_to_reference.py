#!/usr/bin/python3
"""compare_to_reference.py CGC.npy ORT.npy REFERENCE.npy [--tol T]: where ONNX
Runtime's own error against an exact reference (numpy in float64) is larger
than the tolerance cgc is held to, cgc is compared with the reference, and
with ONNX Runtime within ONNX Runtime's own distance from the reference.
Prints the three normwise relative errors; exit 1 when cgc is further than
T from the reference or further from ONNX Runtime than ONNX Runtime is from
the reference (plus T)."""
import argparse
import sys

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("cgc")
parser.add_argument("ort")
parser.add_argument("reference")
parser.add_argument("--tol", type=float, default=1e-5)
args = parser.parse_args()
cgc, ort, ref = (np.load(p).astype(np.float64) for p in (args.cgc, args.ort, args.reference))
if cgc.shape != ref.shape or ort.shape != ref.shape:
    print("shapes differ: cgc %s, ONNX Runtime %s, reference %s" % (cgc.shape, ort.shape, ref.shape))
    sys.exit(1)


def normwise(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


cgc_ref, ort_ref, cgc_ort = normwise(cgc, ref), normwise(ort, ref), normwise(cgc, ort)
ok = cgc_ref <= args.tol and cgc_ort <= ort_ref + args.tol and bool(np.all(np.isfinite(cgc)))
print("%s: cgc vs reference %.2e, ONNX Runtime vs reference %.2e, cgc vs ONNX Runtime %.2e"
      % ("match" if ok else "MISMATCH", cgc_ref, ort_ref, cgc_ort))
sys.exit(0 if ok else 1)
