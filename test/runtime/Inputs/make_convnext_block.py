#!/usr/bin/env python3
"""Writes a small ConvNeXt-style network as ONNX, with an input and the
expected output computed here by numpy (float64): an oracle independent of
cgc.

  x[1,3,64,64] -> Conv 4x4 s4 (3 -> 16) -> LayerNorm over channels
  (Transpose to NHWC, LayerNormalization, Transpose back)
  two blocks:  t = Transpose(DepthwiseConv 7x7 (h)) to NHWC
               t = MatMul(GELU(MatMul(LayerNorm(t), w1) + b1), w2) + b2
               h = gamma * Transpose(t) to NCHW + h
  -> LayerNorm over channels (as above) -> Conv 2x2 s2 (16 -> 32) = y

The permutes sit between convolutions that the CPU driver runs
channels-last, so in one partition they copy bytes in the order they have
(docs/cpu-target.md, foldLayoutTransposes).

Usage: make_convnext_block.py OUT_DIR  (writes OUT_DIR/model.onnx,
OUT_DIR/input.npy and OUT_DIR/expected.npy)
"""
import math
import os
import sys

import numpy as np
from onnx import helper, numpy_helper

import cnn_models

C = 16


def layer_norm(x, scale, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-6) * scale + bias


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(29)
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    inits, nodes = [], []
    counter = [0]

    def const(array, name):
        array = np.asarray(array, dtype=np.float32)
        inits.append(numpy_helper.from_array(array, name))
        return name, array.astype(np.float64)

    def fresh(stem):
        counter[0] += 1
        return "%s%d" % (stem, counter[0])

    def add_conv(src, ref, cin, cout, k, stride, pad, groups):
        w_name, w = const(rng.standard_normal((cout, cin // groups, k, k)) /
                          math.sqrt(cin // groups * k * k), fresh("w"))
        b_name, b = const(rng.standard_normal(cout) * 0.1, fresh("b"))
        name = fresh("conv")
        nodes.append(helper.make_node("Conv", [src, w_name, b_name], [name], strides=[stride] * 2,
                                      pads=[pad] * 4, group=groups, kernel_shape=[k, k]))
        return name, cnn_models.conv(ref, w, b, stride, pad, groups)

    def transpose(src, ref, perm):
        name = fresh("t")
        nodes.append(helper.make_node("Transpose", [src], [name], perm=perm))
        return name, ref.transpose(perm)

    def add_layer_norm(src, ref, width):
        s_name, s = const(1 + rng.standard_normal(width) * 0.1, fresh("ln_s"))
        b_name, b = const(rng.standard_normal(width) * 0.1, fresh("ln_b"))
        name = fresh("ln")
        nodes.append(helper.make_node("LayerNormalization", [src, s_name, b_name], [name],
                                      axis=-1, epsilon=1e-6))
        return name, layer_norm(ref, s, b)

    def add_linear(src, ref, cin, cout):
        w_name, w = const(rng.standard_normal((cin, cout)) / math.sqrt(cin), fresh("lw"))
        b_name, b = const(rng.standard_normal(cout) * 0.1, fresh("lb"))
        m, a = fresh("mm"), fresh("bias")
        nodes.append(helper.make_node("MatMul", [src, w_name], [m]))
        nodes.append(helper.make_node("Add", [m, b_name], [a]))
        return a, ref @ w + b

    def add_gelu(src, ref):
        k1, _ = const(math.sqrt(2.0), fresh("k"))
        one, _ = const(1.0, fresh("k"))
        half, _ = const(0.5, fresh("k"))
        d, e, p, q, y = (fresh(s) for s in ("div", "erf", "add", "mul", "gelu"))
        nodes.append(helper.make_node("Div", [src, k1], [d]))
        nodes.append(helper.make_node("Erf", [d], [e]))
        nodes.append(helper.make_node("Add", [e, one], [p]))
        nodes.append(helper.make_node("Mul", [src, p], [q]))
        nodes.append(helper.make_node("Mul", [q, half], [y]))
        erf = np.vectorize(math.erf)
        return y, ref * 0.5 * (1 + erf(ref / math.sqrt(2.0)))

    def channel_norm(src, ref):
        t, tref = transpose(src, ref, [0, 2, 3, 1])
        n, nref = add_layer_norm(t, tref, C)
        return transpose(n, nref, [0, 3, 1, 2])

    h, href = add_conv("x", x.astype(np.float64), 3, C, 4, 4, 0, 1)
    h, href = channel_norm(h, href)
    for _ in range(2):
        d, dref = add_conv(h, href, C, C, 7, 1, 3, C)
        t, tref = transpose(d, dref, [0, 2, 3, 1])
        t, tref = add_layer_norm(t, tref, C)
        t, tref = add_linear(t, tref, C, 4 * C)
        t, tref = add_gelu(t, tref)
        t, tref = add_linear(t, tref, 4 * C, C)
        t, tref = transpose(t, tref, [0, 3, 1, 2])
        g_name, g = const((rng.standard_normal((C, 1, 1)) * 0.5), fresh("gamma"))
        m, s = fresh("scaled"), fresh("block")
        nodes.append(helper.make_node("Mul", [g_name, t], [m]))
        nodes.append(helper.make_node("Add", [m, h], [s]))
        h, href = s, g * tref + href
    h, href = channel_norm(h, href)
    y, yref = add_conv(h, href, C, 2 * C, 2, 2, 0, 1)
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    cnn_models.save(out, "convnext_block", nodes, inits, x, yref, 17)


if __name__ == "__main__":
    main()
