#!/usr/bin/env python3
"""Writes models whose non-shape operands are graph inputs (run-time data),
with inputs and numpy's expected outputs for two values of each:

  pad.onnx:    y = Pad(x, pads (constant), constant_value = v)
  trilu.onnx:  y = Trilu(x, k), upper; trilu_lower.onnx: lower

Usage: make_runtime_operands.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, path):
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    pads = np.array([0, 1, 2, 1, 0, 3], np.int64)
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads", "v"], ["y"])], "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 9])],
        [numpy_helper.from_array(pads, "pads")])
    save(graph, os.path.join(out, "pad.onnx"))
    for name, v in (("a", -7.5), ("b", np.inf)):
        np.save(os.path.join(out, "v_%s.npy" % name), np.array(v, np.float32))
        np.save(os.path.join(out, "pad_%s.npy" % name),
                np.pad(x, [(0, 1), (1, 0), (2, 3)], constant_values=v))

    for upper, model in ((1, "trilu"), (0, "trilu_lower")):
        graph = helper.make_graph(
            [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], model,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
             helper.make_tensor_value_info("k", TensorProto.INT64, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])])
        save(graph, os.path.join(out, model + ".onnx"))
        for k in (-1, 2):
            np.save(os.path.join(out, "k%d.npy" % k), np.array(k, np.int64))
            want = np.triu(x, k) if upper else np.tril(x, k)
            np.save(os.path.join(out, "%s_k%d.npy" % (model, k)), want)


if __name__ == "__main__":
    main()
