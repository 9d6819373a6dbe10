#!/usr/bin/env python3
"""Writes a small residual CNN as ONNX, with an input and the expected
output computed here by numpy (float64): an oracle independent of cgc.

  x[1,16,12,12] -> Conv 3x3 -> Relu = h0
  three blocks:  h = Relu(Conv 3x3 (Relu (Conv 3x3 h)) + h)
  -> Conv 1x1 (16 -> 24) -> y[1,24,12,12]

One partition of many subgraph invocations whose intermediates are internal
bind points: the compiler plans them by invocation order (one reuses the
bytes of another), and the blocks' residual sums accumulate in place in
the CPU driver.

Usage: make_residual_cnn.py OUT_DIR  (writes OUT_DIR/model.onnx,
OUT_DIR/input.npy and OUT_DIR/expected.npy)
"""
import os
import sys

import numpy as np
from onnx import helper, numpy_helper

import cnn_models


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 16, 12, 12)).astype(np.float32)
    inits, nodes = [], []
    ref = x.astype(np.float64)

    def add_conv(src, ref_in, name, cin, cout, k, relu):
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")])
        nodes.append(helper.make_node("Conv", [src, name + "_w", name + "_b"], [name],
                                      pads=[k // 2] * 4))
        r = cnn_models.conv(ref_in, w.astype(np.float64), b.astype(np.float64), pad=k // 2)
        if relu:
            nodes.append(helper.make_node("Relu", [name], [name + "_r"]))
            return name + "_r", np.maximum(r, 0)
        return name, r

    h, href = add_conv("x", ref, "stem", 16, 16, 3, True)
    for block in range(3):
        a, aref = add_conv(h, href, "b%d_a" % block, 16, 16, 3, True)
        c, cref = add_conv(a, aref, "b%d_c" % block, 16, 16, 3, False)
        nodes.append(helper.make_node("Add", [c, h], ["b%d_sum" % block]))
        nodes.append(helper.make_node("Relu", ["b%d_sum" % block], ["b%d_out" % block]))
        h, href = "b%d_out" % block, np.maximum(cref + href, 0)
    y, yref = add_conv(h, href, "head", 16, 24, 1, False)
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    cnn_models.save(out, "residual_cnn", nodes, inits, x, yref, 13)


if __name__ == "__main__":
    main()
