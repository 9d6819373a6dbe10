#!/usr/bin/python3
"""Writes mlp.onnx: x[2,64] -> MatMul -> Add -> Relu -> MatMul -> Add -> y[2,10],
weights drawn with a fixed seed (scaled so the outputs are of order 1)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
w1 = (rng.standard_normal((64, 128)) / 8).astype(np.float32)
b1 = rng.standard_normal(128).astype(np.float32) * 0.1
w2 = (rng.standard_normal((128, 10)) / 11).astype(np.float32)
b2 = rng.standard_normal(10).astype(np.float32) * 0.1
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h0"]),
    helper.make_node("Add", ["h0", "b1"], ["h1"]),
    helper.make_node("Relu", ["h1"], ["h"]),
    helper.make_node("MatMul", ["h", "w2"], ["y0"]),
    helper.make_node("Add", ["y0", "b2"], ["y"]),
]
graph = helper.make_graph(
    nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])],
    [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
