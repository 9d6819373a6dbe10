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
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv(x, w, b, pad):
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + h, j:j + wd]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


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
        r = conv(ref_in, w.astype(np.float64), b.astype(np.float64), k // 2)
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
    graph = helper.make_graph(
        nodes, "residual_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, yref.shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "input.npy"), x)
    np.save(os.path.join(out, "expected.npy"), yref.astype(np.float32))


if __name__ == "__main__":
    main()
