#!/usr/bin/env python3
"""Writes models with sequence and optional values at the graph boundary and
inside, with inputs and expected outputs computed by numpy, on cases the
ONNX node tests leave out: tensors of different shapes in one sequence,
insert and erase at negative positions, SplitToSequence with uneven sizes,
ConcatFromSequence with a new axis, SequenceMap over a sequence and a tensor
with two body outputs, an optional holding a sequence.

Usage: make_sequences.py OUT_DIR
Writes OUT_DIR/<name>.onnx, inputs and expected outputs as .pb (sequences:
onnx.SequenceProto, optionals: onnx.OptionalProto) and .npy (tensors).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
RNG = np.random.default_rng(5)
F = TensorProto.FLOAT


def seq_type(elem=F, shape=None):
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, shape))


def opt_type(inner):
    return helper.make_optional_type_proto(inner)


def save_model(name, nodes, inputs, outputs, opset=17, check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def save_sequence(path, name, arrays):
    seq = onnx.SequenceProto()
    seq.name = name
    seq.elem_type = onnx.SequenceProto.TENSOR
    for a in arrays:
        seq.tensor_values.append(numpy_helper.from_array(a))
    with open(os.path.join(OUT, path), "wb") as f:
        f.write(seq.SerializeToString())


def save_optional(path, name, value):
    """value: None, an array, or a list of arrays (a sequence)."""
    opt = onnx.OptionalProto()
    opt.name = name
    if isinstance(value, list):
        opt.elem_type = onnx.OptionalProto.SEQUENCE
        opt.sequence_value.elem_type = onnx.SequenceProto.TENSOR
        for a in value:
            opt.sequence_value.tensor_values.append(numpy_helper.from_array(a))
    elif value is not None:
        opt.elem_type = onnx.OptionalProto.TENSOR
        opt.tensor_value.CopyFrom(numpy_helper.from_array(value))
    else:
        opt.elem_type = onnx.OptionalProto.TENSOR
    with open(os.path.join(OUT, path), "wb") as f:
        f.write(opt.SerializeToString())


def sequence_ops():
    """seq (3 tensors of different lengths), t: insert t at -1, erase at 0,
    map (Relu(x) * w, ReduceSum(x)) over the result, take the length and
    element 1, split t unevenly and concatenate it back on a new axis."""
    seq = [RNG.standard_normal(n).astype(np.float32) for n in (4, 7, 2)]
    seq[2][0] = abs(seq[2][0]) + 0.5  # Relu keeps something of every tensor
    t = RNG.standard_normal(6).astype(np.float32)
    w = np.float32(1.5)
    body = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Mul", ["r", "w_in"], ["y0"]),
         helper.make_node("ReduceSum", ["x"], ["y1"], keepdims=1)],
        "body",
        [helper.make_tensor_value_info("x", F, ["n"]), helper.make_tensor_value_info("w_in", F, [])],
        [helper.make_tensor_value_info("y0", F, ["n"]), helper.make_tensor_value_info("y1", F, [1])])
    nodes = [
        helper.make_node("Constant", [], ["minus1"], value=numpy_helper.from_array(np.array(-1, np.int64))),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))),
        helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(np.array(w))),
        helper.make_node("Constant", [], ["split"], value=numpy_helper.from_array(np.array([2, 2, 2], np.int64))),
        helper.make_node("SequenceInsert", ["seq", "t", "minus1"], ["s1"]),
        helper.make_node("SequenceErase", ["s1", "zero"], ["s2"]),
        helper.make_node("SequenceMap", ["s2", "w"], ["mapped", "sums"], body=body),
        helper.make_node("SequenceLength", ["s2"], ["length"]),
        helper.make_node("SequenceAt", ["s2", "one"], ["at1"]),
        helper.make_node("SplitToSequence", ["t", "split"], ["pieces"], axis=0),
        helper.make_node("ConcatFromSequence", ["pieces"], ["stacked"], axis=0, new_axis=1),
    ]
    save_model("sequence_ops", nodes,
               [helper.make_value_info("seq", seq_type(F, ["n"])),
                helper.make_tensor_value_info("t", F, [6])],
               [helper.make_value_info("mapped", seq_type(F, ["n"])),
                helper.make_value_info("sums", seq_type(F, [1])),
                helper.make_tensor_value_info("length", TensorProto.INT64, []),
                helper.make_tensor_value_info("at1", F, ["m"]),
                helper.make_tensor_value_info("stacked", F, [3, 2])])
    s1 = seq[:2] + [t] + seq[2:]          # insert before the last
    s2 = s1[1:]
    save_sequence("sequence_ops_seq.pb", "seq", seq)
    np.save(os.path.join(OUT, "sequence_ops_t.npy"), t)
    save_sequence("sequence_ops_mapped.pb", "mapped", [np.maximum(x, 0) * w for x in s2])
    save_sequence("sequence_ops_sums.pb", "sums", [np.array([x.sum()], np.float32) for x in s2])
    np.save(os.path.join(OUT, "sequence_ops_length.npy"), np.array(len(s2), np.int64))
    np.save(os.path.join(OUT, "sequence_ops_at1.npy"), s2[1])
    np.save(os.path.join(OUT, "sequence_ops_stacked.npy"), t.reshape(3, 2))
    # The same sequence one tensor short: the comparison must notice.
    save_sequence("sequence_ops_mapped_short.pb", "mapped", [np.maximum(x, 0) * w for x in s2[:-1]])


def optionals():
    """opt (an optional tensor): has-element, get-element + 1; optseq (an
    optional sequence): ConcatFromSequence of its tensors."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    parts = [RNG.standard_normal((1, 3)).astype(np.float32) for _ in range(3)]
    nodes = [
        helper.make_node("OptionalHasElement", ["opt"], ["has"]),
        helper.make_node("OptionalGetElement", ["opt"], ["value"]),
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.float32(1))),
        helper.make_node("Add", ["value", "c"], ["plus"]),
        helper.make_node("OptionalGetElement", ["optseq"], ["inner"]),
        helper.make_node("ConcatFromSequence", ["inner"], ["joined"], axis=0),
    ]
    save_model("optionals", nodes,
               [helper.make_value_info("opt", opt_type(helper.make_tensor_type_proto(F, [2, 3]))),
                helper.make_value_info("optseq", opt_type(seq_type(F, [1, 3])))],
               [helper.make_tensor_value_info("has", TensorProto.BOOL, []),
                helper.make_tensor_value_info("plus", F, [2, 3]),
                helper.make_tensor_value_info("joined", F, [3, 3])])
    save_optional("optionals_opt.pb", "opt", x)
    save_optional("optionals_optseq.pb", "optseq", parts)
    np.save(os.path.join(OUT, "optionals_has.npy"), np.array(True))
    np.save(os.path.join(OUT, "optionals_plus.npy"), x + 1)
    np.save(os.path.join(OUT, "optionals_joined.npy"), np.concatenate(parts))
    # An optional holding nothing: OptionalHasElement is false, and reading
    # its value is an error at the node.
    save_model("optional_empty",
               [helper.make_node("OptionalHasElement", ["opt"], ["has"])],
               [helper.make_value_info("opt", opt_type(helper.make_tensor_type_proto(F, [2])))],
               [helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    save_optional("optional_empty_opt.pb", "opt", None)
    np.save(os.path.join(OUT, "optional_empty_has.npy"), np.array(False))
    save_model("optional_get_empty",
               [helper.make_node("OptionalGetElement", ["opt"], ["value"])],
               [helper.make_value_info("opt", opt_type(helper.make_tensor_type_proto(F, [2])))],
               [helper.make_tensor_value_info("value", F, [2])])


def misuse():
    """A sequence fed to a tensor op; a position out of range."""
    save_model("sequence_to_add",
               [helper.make_node("Add", ["seq", "seq"], ["y"])],
               [helper.make_value_info("seq", seq_type(F, [2]))],
               [helper.make_tensor_value_info("y", F, [2])], check=False)
    save_model("sequence_at_range",
               [helper.make_node("Constant", [], ["p"], value=numpy_helper.from_array(np.array(-3, np.int64))),
                helper.make_node("SequenceAt", ["seq", "p"], ["y"])],
               [helper.make_value_info("seq", seq_type(F, [2]))],
               [helper.make_tensor_value_info("y", F, [2])])


sequence_ops()
optionals()
misuse()
