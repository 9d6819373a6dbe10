#!/usr/bin/python3
"""Writes the models of constants.test and freeze-input.test into OUTDIR."""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(model, name):
    model.ir_version = 8
    onnx.save_model(model, os.path.join(out, name))


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
w = np.arange(6, dtype=np.float32).reshape(2, 3)
b = np.array([0.5, -1.5, 2.5], np.float32)
nodes = [helper.make_node("Mul", ["x", "w"], ["t"], name="scale"),
         helper.make_node("Add", ["t", "b"], ["y"], name="shift")]
unused = numpy_helper.from_array(np.ones((5,), np.float32), "unused")


def weights_model():
    graph = helper.make_graph(nodes, "g", [x], [y],
                              [numpy_helper.from_array(w, "w"),
                               numpy_helper.from_array(b, "b"), unused])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


# The same weights inline and in an external file (with an offset).
save(weights_model(), "inline.onnx")
external = weights_model()
with open(os.path.join(out, "weights.bin"), "wb") as f:
    f.write(b"\0" * 16)
    for tensor in external.graph.initializer:
        if tensor.name == "unused":
            continue
        offset = f.tell()
        data = tensor.raw_data
        f.write(data)
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        tensor.external_data.add(key="location", value="weights.bin")
        tensor.external_data.add(key="offset", value=str(offset))
        tensor.external_data.add(key="length", value=str(len(data)))
save(external, "external.onnx")

# IR 3: initializers are also listed as graph inputs; they stay constants.
ir3 = weights_model()
ir3.graph.input.extend([helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3]),
                        helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])])
ir3.ir_version = 3
onnx.save_model(ir3, os.path.join(out, "ir3.onnx"))

# Weights in typed fields (float_data) rather than raw bytes.
typed = weights_model()
typed.graph.initializer[0].ClearField("raw_data")
typed.graph.initializer[0].float_data.extend(w.flatten().tolist())
save(typed, "typed.onnx")

# Reshape whose shape is a graph input, and tensors to freeze it with.
shape_in = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
reshape = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape")],
                            "g", [x, shape_in],
                            [helper.make_tensor_value_info("r", TensorProto.FLOAT, [3, 2])])
save(helper.make_model(reshape, opset_imports=[helper.make_opsetid("", 13)]), "reshape.onnx")
onnx.save_tensor(numpy_helper.from_array(np.array([3, 2], np.int64)), os.path.join(out, "shape.pb"))
onnx.save_tensor(numpy_helper.from_array(np.array([3.0, 2.0], np.float32)),
                 os.path.join(out, "float-shape.pb"))
onnx.save_tensor(numpy_helper.from_array(np.array([3, 2, 1], np.int64)),
                 os.path.join(out, "long-shape.pb"))
with open(os.path.join(out, "garbage.pb"), "wb") as f:
    f.write(b"\xff\xff\xff\xff not a tensor")
