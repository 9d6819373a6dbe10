#!/usr/bin/python3
"""Writes the malformed-input set of the importer tests into a directory.

Each file is broken in one way; malformed.test imports each and checks its
own error message. Usage: make_malformed.py OUTDIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def path(name):
    return os.path.join(out, name)


def model(nodes, inputs, outputs, initializers=(), opset=17, **kwargs):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)
    m.ir_version = 8
    return m


def save(m, name):
    with open(path(name), "wb") as f:
        f.write(m.SerializeToString())


def tensor(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


X = tensor("x", [2, 3])
Y = tensor("y", [2, 3])
relu = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [X], [Y])

# The file itself.
open(path("empty.onnx"), "wb").close()
with open(path("text.onnx"), "w") as f:
    f.write("this is not a protobuf\n")
whole = relu.SerializeToString()
with open(path("truncated.onnx"), "wb") as f:
    f.write(whole[: len(whole) // 2])

# The model header.
save(onnx.ModelProto(ir_version=8), "no-graph.onnx")
m = onnx.ModelProto()
m.CopyFrom(relu)
m.ir_version = 0
save(m, "no-ir-version.onnx")
m.ir_version = 99
save(m, "future-ir-version.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y], opset=99), "unknown-opset.onnx")
m = onnx.ModelProto()
m.CopyFrom(relu)
m.opset_import.add(domain="ai.onnx", version=13)
save(m, "duplicate-opset.onnx")

# The graph's structure.
save(model([helper.make_node("Add", ["x", "nope"], ["y"], name="add")], [X], [Y]),
     "dangling-input.onnx")
save(model([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
            helper.make_node("Relu", ["a"], ["b"], name="second"),
            helper.make_node("Relu", ["a"], ["y"], name="third")], [X], [Y]),
     "cycle.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"], name="one"),
            helper.make_node("Sigmoid", ["x"], ["y"], name="two")], [X], [Y]),
     "two-producers.onnx")
save(model([helper.make_node("Relu", ["y"], ["x"], name="back")], [X, Y], [Y]),
     "redefines-input.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y, tensor("z", [2, 3])]),
     "undefined-output.onnx")
w = numpy_helper.from_array(np.ones((3,), np.float32), "w")
save(model([helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], [w, w]),
     "duplicate-initializer.onnx")

# Ops.
save(model([helper.make_node("RandomUniformLike", ["x"], ["a"], name="rand1"),
            helper.make_node("Relu", ["x"], ["b"], name="ok"),
            helper.make_node("Multinomial", ["b"], ["c"], name="draw"),
            helper.make_node("RandomUniformLike", ["x"], ["d"], name="rand2"),
            helper.make_node("Add", ["x", "x"], ["y"])], [X], [Y]),
     "unsupported-ops.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=1.0)], [X], [Y]),
     "unknown-attribute.onnx")
save(model([helper.make_node("Add", ["x"], ["y"], name="add")], [X], [Y]),
     "missing-operand.onnx")
save(model([helper.make_node("Add", ["x", "i"], ["y"], name="add")],
           [X, tensor("i", [2, 3], TensorProto.INT64)], [Y]),
     "type-mismatch.onnx")
save(model([helper.make_node("Add", ["x", "z"], ["y"], name="add")],
           [X, tensor("z", [4, 3])], [Y]),
     "shape-mismatch.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [X],
           [tensor("y", [3, 2])]),
     "wrong-output-shape.onnx")
m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [X], [Y])
m.graph.node[0].domain = "com.example"
m.graph.node[0].op_type = "FancyRelu"
save(m, "unknown-domain.onnx")

# Constants.
bad = numpy_helper.from_array(np.ones((4,), np.float32), "w")
bad.raw_data = bad.raw_data[:8]
save(model([helper.make_node("Mul", ["x", "w"], ["y"])], [X], [Y], [bad]), "short-raw-data.onnx")
strings = helper.make_tensor("s", TensorProto.STRING, [1], [b"a"])
save(model([helper.make_node("Identity", ["x"], ["y"])], [X], [Y], [strings]),
     "string-initializer.onnx")
negative = helper.make_tensor("n", TensorProto.FLOAT, [1], [1.0])
negative.dims[0] = -1
save(model([helper.make_node("Identity", ["x"], ["y"])], [X], [Y], [negative]),
     "negative-dimension.onnx")


def external(name, location, offset=0, length=None):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    t.external_data.add(key="offset", value=str(offset))
    if length is not None:
        t.external_data.add(key="length", value=str(length))
    save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], [t]), name)


external("missing-external.onnx", "missing.bin")
with open(path("short.bin"), "wb") as f:
    f.write(np.ones((2,), np.float32).tobytes())
external("short-external.onnx", "short.bin")
external("absolute-external.onnx", "/etc/passwd")
external("escaping-external.onnx", "../outside.bin")
with open(path("weights.bin"), "wb") as f:
    f.write(np.arange(8, dtype=np.float32).tobytes())
external("wrong-length-external.onnx", "weights.bin", length=8)

# Inputs and outputs.
sequence = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2, 3])
save(model([helper.make_node("Identity", ["x"], ["y"])], [sequence],
           [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, [2, 3])]),
     "sequence-input.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", ["batch", 3])], [Y]),
     "symbolic-input.onnx")
untyped = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
save(model([helper.make_node("Relu", ["x"], ["y"])], [untyped], [Y]), "unshaped-input.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", [2, 3], TensorProto.STRING)],
           [tensor("y", [2, 3], TensorProto.STRING)]),
     "string-input.onnx")
