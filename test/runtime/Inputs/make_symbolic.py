#!/usr/bin/env python3
"""Writes a model with symbolic dimensions: x[batch, 16], m[batch, seq]
-> y = Relu(x @ W) [batch, 8], s = ReduceSum(m, axis 1) [batch], and
inputs of batch 3 / sequence 5 with numpy's expected outputs.

Usage: make_symbolic.py OUT_DIR  (model.onnx, x.npy, m.npy, y.npy, s.npy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((16, 8)) / 4).astype(np.float32)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    m = rng.standard_normal((3, 5)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Relu", ["h"], ["y"]),
             helper.make_node("ReduceSum", ["m", "axes"], ["s"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "symbolic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch"])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1], np.int64), "axes")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "m.npy"), m)
    np.save(os.path.join(out, "y.npy"), np.maximum(x.astype(np.float64) @ w, 0).astype(np.float32))
    np.save(os.path.join(out, "s.npy"), m.astype(np.float64).sum(axis=1).astype(np.float32))


if __name__ == "__main__":
    main()
