#!/usr/bin/python3
"""Writes models whose index operands are graph inputs, and index files.

index-errors.test runs each model with indices in range (the right answer,
checked with NumPy's) and out of range (a run error naming the op and the
index). Usage: make_index_models.py OUTDIR
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save_model(name, node, inputs, output_shape):
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


F, I = TensorProto.FLOAT, TensorProto.INT64
save_model("gather", helper.make_node("Gather", ["x", "i"], ["y"], name="g", axis=0),
           [("x", F, [2, 3]), ("i", I, [2])], [2, 3])
save_model("gather_elements",
           helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge", axis=1),
           [("x", F, [2, 3]), ("i", I, [2, 2])], [2, 2])
save_model("gather_nd", helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd"),
           [("x", F, [2, 3]), ("i", I, [2, 2])], [2])
save_model("scatter_elements",
           helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="se", axis=0),
           [("x", F, [2, 3]), ("i", I, [1, 3]), ("u", F, [1, 3])], [2, 3])
save_model("scatter_nd", helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="snd"),
           [("x", F, [2, 3]), ("i", I, [1, 2]), ("u", F, [1])], [2, 3])

x = np.arange(6, dtype=np.float32).reshape(2, 3)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "u3.npy"), np.full((1, 3), 9, np.float32))
np.save(os.path.join(out, "u1.npy"), np.full((1,), 9, np.float32))


def index(name, values):
    np.save(os.path.join(out, name + ".npy"), np.array(values, np.int64))


# In range (negatives wrap) with NumPy's answers; out of range.
index("gather_ok", [1, -2])
np.save(os.path.join(out, "gather_ok.out.npy"), x[[1, -2]])
index("gather_big", [0, 1000000])
index("gather_small", [-1000000, 1])
index("gather_elements_ok", [[2, -1], [0, 1]])
np.save(os.path.join(out, "gather_elements_ok.out.npy"),
        np.take_along_axis(x, np.array([[2, 2], [0, 1]]), axis=1))
index("gather_elements_big", [[0, 1], [3, 0]])
index("gather_nd_ok", [[1, 2], [-2, -1]])
np.save(os.path.join(out, "gather_nd_ok.out.npy"), np.array([x[1, 2], x[0, 2]], np.float32))
# Row 0, column 3: a linear offset of 3 is a valid element ([1, 0]) of the
# flattened data, but the index is out of its dimension.
index("gather_nd_big", [[1, 0], [0, 3]])
index("scatter_elements_ok", [[1, 0, -1]])
y = x.copy()
y[1, 0] = y[0, 1] = y[1, 2] = 9
np.save(os.path.join(out, "scatter_elements_ok.out.npy"), y)
index("scatter_elements_big", [[0, 2, 1]])
index("scatter_nd_ok", [[-1, 1]])
y = x.copy()
y[1, 1] = 9
np.save(os.path.join(out, "scatter_nd_ok.out.npy"), y)
index("scatter_nd_big", [[0, -4]])
