#!/usr/bin/python3
"""Writes split.onnx: a float pipeline with one node cgc cannot compile.

    x[4,3,3] -> Mul(2) -> Abs -> Det -> Add(1) -> Exp -> y[4]
                           \\-> Sigmoid -> s[4,3,3]

Det has no cgc lowering (test/onnx/expected-failures.txt): through ONNX
Runtime with the cgc EP, cgc runs {Mul, Abs, Sigmoid} and {Add, Exp} and
ONNX Runtime's CPU EP runs Det between them. (If cgc learns Det, pick another
op it lacks for this test.)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
nodes = [
    helper.make_node("Mul", ["x", "two"], ["scaled"], name="scale"),
    helper.make_node("Abs", ["scaled"], ["r"], name="abs"),
    helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
    helper.make_node("Det", ["r"], ["d"], name="det"),
    helper.make_node("Add", ["d", "one"], ["d1"], name="shift"),
    helper.make_node("Exp", ["d1"], ["y"], name="exp"),
]
graph = helper.make_graph(
    nodes, "split",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 3, 3])],
    [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
     numpy_helper.from_array(np.array(0.25, np.float32), "one")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, out)
