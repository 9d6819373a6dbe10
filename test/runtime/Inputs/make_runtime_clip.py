#!/usr/bin/env python3
"""Writes models whose Clip bounds are computed at run time, with inputs
and numpy's expected outputs:

  floor.onnx:  y = Clip(x, min = ReduceMax(x) - 80)         (an audio
               front end's dynamic range: decibels within 80 of the peak)
  both.onnx:   y = Clip(x, min = lo, max = hi), lo and hi graph inputs

Usage: make_runtime_clip.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, path):
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(3)
    x = (rng.uniform(-150, 0, (2, 64))).astype(np.float32)

    nodes = [helper.make_node("ReduceMax", ["x"], ["peak"], keepdims=0),
             helper.make_node("Sub", ["peak", "range"], ["floor"]),
             helper.make_node("Clip", ["x", "floor"], ["y"])]
    graph = helper.make_graph(
        nodes, "floor", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])],
        [numpy_helper.from_array(np.array(80, np.float32), "range")])
    save(graph, os.path.join(out, "floor.onnx"))
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "floor_y.npy"), np.maximum(x, x.max() - 80))

    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
    graph = helper.make_graph(
        nodes, "both",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64]),
         helper.make_tensor_value_info("lo", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("hi", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])])
    save(graph, os.path.join(out, "both.onnx"))
    for name, lo, hi in (("a", -100, -20), ("b", -60, -50)):
        np.save(os.path.join(out, "lo_%s.npy" % name), np.array(lo, np.float32))
        np.save(os.path.join(out, "hi_%s.npy" % name), np.array(hi, np.float32))
        np.save(os.path.join(out, "both_%s.npy" % name), np.clip(x, lo, hi))


if __name__ == "__main__":
    main()
