#!/usr/bin/python3
"""Writes the hostile-input set of the importer tests into a directory.

Each file claims sizes, offsets, paths or nesting meant to make a careless
reader overflow, allocate terabytes, escape its folder or recurse without
end; hostile-sizes.test imports each and checks its message. Usage:
make_hostile.py OUTDIR
"""

import os
import sys

import numpy as np
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def path(name):
    return os.path.join(out, name)


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def save(m, name):
    with open(path(name), "wb") as f:
        f.write(m.SerializeToString())


def tensor(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


X = tensor("x", [2, 3])
Y = tensor("y", [2, 3])


def with_initializer(t, name):
    save(model([helper.make_node("Add", ["x", t.name], ["y"], name="add")], [X], [Y], [t]), name)


# Initializers whose dims claim more than any memory, with no data.
t = TensorProto(name="huge", data_type=TensorProto.FLOAT, dims=[2**31, 2**31])
with_initializer(t, "huge-dims.onnx")
t = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[2**20, 2**20])
with_initializer(t, "big-dims-no-data.onnx")
t = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[2**20, 2**20])
t.float_data.extend([1.0, 2.0])
with_initializer(t, "big-dims-float-data.onnx")
# (2^62 + 1) x 4 floats: the byte size wraps to 16 in 64 bits.
t = TensorProto(name="wraps", data_type=TensorProto.FLOAT, dims=[2**62 + 1, 4])
t.raw_data = np.zeros(4, np.float32).tobytes()
with_initializer(t, "wrapping-dims.onnx")

# Graph inputs with static dims that overflow.
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
           [tensor("x", [2**40, 2**40])], [tensor("y", [2**40, 2**40])]), "huge-input.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
           [tensor("x", [2**62 + 1, 4])], [tensor("y", [2**62 + 1, 4])]), "wrapping-input.onnx")
# A symbolic input for --input-shape, and a negative static dimension.
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
           [tensor("x", ["a", "b"])], [tensor("y", ["a", "b"])]), "symbolic-input.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
           [tensor("x", [-3, 2])], [tensor("y", [3, 2])]), "negative-input.onnx")


def external(name, location, offset="0", length=None):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    t.external_data.add(key="offset", value=offset)
    if length is not None:
        t.external_data.add(key="length", value=length)
    with_initializer(t, name)


with open(path("weights.bin"), "wb") as f:
    f.write(np.arange(8, dtype=np.float32).tobytes())
external("negative-offset-external.onnx", "weights.bin", offset="-4")
external("negative-length-external.onnx", "weights.bin", length="-12")
external("huge-offset-external.onnx", "weights.bin", offset=str(2**64 - 4))
# A symbolic link inside the model's folder that leads out of it: to a file,
# and through a folder.
outside = os.path.join(out, "outside")
os.makedirs(outside, exist_ok=True)
with open(os.path.join(outside, "secret.bin"), "wb") as f:
    f.write(np.arange(3, dtype=np.float32).tobytes())
inside = os.path.join(out, "model")
os.makedirs(inside, exist_ok=True)
for link, target in (("link.bin", os.path.join(outside, "secret.bin")), ("linkdir", outside)):
    if os.path.lexists(os.path.join(inside, link)):
        os.remove(os.path.join(inside, link))
    os.symlink(target, os.path.join(inside, link))
out, saved = inside, out
external("symlink-external.onnx", "link.bin")
external("symlink-dir-external.onnx", "linkdir/secret.bin")
# A link that stays inside the folder is fine.
with open(path("real.bin"), "wb") as f:
    f.write(np.arange(3, dtype=np.float32).tobytes())
if os.path.lexists(path("inner.bin")):
    os.remove(path("inner.bin"))
os.symlink("real.bin", path("inner.bin"))
external("symlink-inside-external.onnx", "inner.bin")
out = saved


# If nodes nested deeper than the importer walks (each branch holds the next).
def nested_if(depth):
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["r0"])], "leaf", [],
                               [tensor("r0", [2, 3])])
    for level in range(depth):
        cond = helper.make_tensor("c%d" % level, TensorProto.BOOL, [], [True])
        leaf = helper.make_graph([helper.make_node("Neg", ["x"], ["e%d" % level])], "else", [],
                                 [tensor("e%d" % level, [2, 3])])
        node = helper.make_node("If", ["c%d" % level], ["r%d" % (level + 1)],
                                then_branch=branch, else_branch=leaf, name="if%d" % level)
        branch = helper.make_graph([node], "level%d" % level, [],
                                   [tensor("r%d" % (level + 1), [2, 3])], [cond])
    top = helper.make_node("Identity", ["r%d" % depth], ["y"], name="top")
    nodes = list(branch.node) + [top]
    return model(nodes, [X], [Y], list(branch.initializer))


save(nested_if(3), "nested-if-3.onnx")
save(nested_if(20), "nested-if-20.onnx")
with open(path("nested-if-20.pbtxt"), "w") as f:
    f.write(text_format.MessageToString(nested_if(20)))
save(nested_if(200), "nested-if-200.onnx")
# In ONNX text syntax, whose parser has no recursion limit of its own:
# 20000 levels of If (it overflowed the stack) and a type nested as deep.
branch = "".join(
    ["b%d () => (float[2] r) { c = Constant<value = bool {1}>() r = If(c) <then_branch = " % level
     for level in range(20000)]
    + ["leaf () => (float[2] r) { r = Identity(x) }"]
    + [", else_branch = e () => (float[2] s) { s = Neg(x) }> }"] * 20000)
with open(path("nested-if-20000.onnxtxt"), "w") as f:
    f.write('<ir_version: 8, opset_import: ["" : 17]>\n'
            "main (float[2] x) => (float[2] y) {\n c = Constant<value = bool {1}>()\n"
            " y = If(c) <then_branch = %s, else_branch = e () => (float[2] s) { s = Neg(x) }>\n"
            "}\n" % branch)
with open(path("nested-type.onnxtxt"), "w") as f:
    f.write('<ir_version: 8, opset_import: ["" : 17]>\n'
            "main (%sfloat[2]%s x) => (float[2] y) {\n y = Identity(x)\n}\n"
            % ("seq(" * 100000, ")" * 100000))

# Index operands that are constants outside their dimension.
data = tensor("x", [2, 3])


def constant_index(name, op, indices, extra_inputs=(), out_shape=None, **attrs):
    idx = helper.make_tensor("idx", TensorProto.INT64, list(np.shape(indices)),
                             np.array(indices, np.int64).flatten().tolist())
    node = helper.make_node(op, ["x", "idx"] + list(extra_inputs), ["y"], name="bad_" + op.lower(),
                            **attrs)
    save(model([node], [data], [tensor("y", out_shape)], [idx]), name)


constant_index("gather-constant-index.onnx", "Gather", [0, 5], out_shape=[2, 3], axis=0)
constant_index("gather-negative-index.onnx", "Gather", [[1, -4]], out_shape=[2, 1, 2], axis=1)
constant_index("gather-elements-constant-index.onnx", "GatherElements", [[0, 1, 2], [2, 0, 7]],
               out_shape=[2, 3], axis=1)
constant_index("gather-nd-constant-index.onnx", "GatherND", [[1, 0], [0, 3]], out_shape=[2])
upd = tensor("u", [2, 3])
save(model([helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], name="bad_scatter",
                             axis=0)],
           [data, upd], [Y],
           [helper.make_tensor("idx", TensorProto.INT64, [2, 3], [0, 1, 0, 1, 2, 0])]),
     "scatter-elements-constant-index.onnx")
save(model([helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], name="bad_scatter_nd")],
           [data, tensor("u", [1])], [Y],
           [helper.make_tensor("idx", TensorProto.INT64, [1, 2], [-3, 0])]),
     "scatter-nd-constant-index.onnx")

# OneHot with a depth whose result no memory holds.
save(model([helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="hot")],
           [tensor("i", [4], TensorProto.INT64)], [tensor("y", None)],
           [helper.make_tensor("depth", TensorProto.INT64, [], [2**50]),
            helper.make_tensor("values", TensorProto.FLOAT, [2], [0.0, 1.0])]),
     "onehot-huge-depth.onnx")

# Each intermediate within the limit (2^46 bytes), three of them live
# together at the Where: the scratch buffer the plan needs is over 2^47.
N = 1 << 22
save(model([helper.make_node("Relu", ["x"], ["a"], name="relu"),
            helper.make_node("Neg", ["x"], ["b"], name="neg"),
            helper.make_node("Greater", ["x", "zero"], ["c"], name="positive"),
            helper.make_node("Where", ["c", "a", "b"], ["y"], name="pick")],
           [tensor("x", [N, N])], [tensor("y", [N, N])],
           [numpy_helper.from_array(np.array(0, np.float32), "zero")]),
     "huge-scratch.onnx")
