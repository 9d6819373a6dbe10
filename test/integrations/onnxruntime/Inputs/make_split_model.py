#!/usr/bin/python3
"""Writes split.onnx: a float pipeline with one node cgc does not compile.

    x[1,8,4] -> Mul(2) -> Abs -> r -> NonMaxSuppression(r, scores) -> Cast
                                       -> Add(0.25) -> Exp -> y[n,3]
                                    Cast -> ReduceSum(axis 0) -> total[1,3]
                           r -> ReduceMean(axis 2) -> Transpose -> scores
                           r -> Sigmoid -> s[1,8,4]

NonMaxSuppression's number of rows depends on the values; cgc returns such
rows and computes row by row on them, but a sum over the rows (ReduceSum
along axis 0) would read past the run's count, so cgc does not compile
NonMaxSuppression in this graph: through ONNX Runtime with the cgc EP, cgc
runs {Mul, Abs, Sigmoid, ReduceMean, Transpose} and {Cast, Add, Exp,
ReduceSum} (on the run's number of rows) and ONNX Runtime's CPU EP runs
NonMaxSuppression between them.
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
    helper.make_node("ReduceMean", ["r"], ["mean"], axes=[2], keepdims=1, name="mean"),
    helper.make_node("Transpose", ["mean"], ["scores"], perm=[0, 2, 1], name="transpose"),
    helper.make_node("NonMaxSuppression", ["r", "scores", "three", "half"], ["selected"],
                     name="nms"),
    helper.make_node("Cast", ["selected"], ["rows"], to=TensorProto.FLOAT, name="cast"),
    helper.make_node("Add", ["rows", "one"], ["shifted"], name="shift"),
    helper.make_node("Exp", ["shifted"], ["y"], name="exp"),
    helper.make_node("ReduceSum", ["rows", "axis0"], ["total"], keepdims=1, name="total"),
]
graph = helper.make_graph(
    nodes, "split",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 8, 4]),
     helper.make_tensor_value_info("total", TensorProto.FLOAT, [1, 3])],
    [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
     numpy_helper.from_array(np.array(0.25, np.float32), "one"),
     numpy_helper.from_array(np.array([3], np.int64), "three"),
     numpy_helper.from_array(np.array([0.5], np.float32), "half"),
     numpy_helper.from_array(np.array([0], np.int64), "axis0")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, out)
