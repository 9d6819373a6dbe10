#!/usr/bin/env python3
"""Writes models with an If whose condition is computed from the input at
run time, as PyTorch's scripting exports a data-dependent branch
(`if x.mean() > 0: ... else: ...`): the branches read the outer graph's
input and weights. Inputs that take each branch, and the outputs numpy
computes for them.

  gated_mlp.onnx   x [4, 16] -> y [4, 8]: mean(x) > 0 picks a ReLU MLP, else
                   tanh of another projection; a softmax after the If.
                   gated_mlp_x{0,1,2}.npy (branches then, else, then) and
                   gated_mlp_y{0,1,2}.npy.
  nested_if.onnx   x [6] -> y [6]: an If inside the then branch of another,
                   on conditions from x; nested_if_x{0,1,2}.npy take the
                   three paths, nested_if_y{0,1,2}.npy.
  if_shapes.onnx   branches of different shapes: refused (cgc selects between
                   the branches' results, which needs one shape).

Weights are random normal scaled by 1/sqrt(fan-in), so the logits are of
order 1 and the two branches' outputs differ everywhere.

Usage: make_runtime_if.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
RNG = np.random.default_rng(3)
F = TensorProto.FLOAT


def init(name, array):
    return numpy_helper.from_array(array.astype(np.float32), name)


def save(name, graph, opset=17, check=True):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def gated_mlp():
    w1 = RNG.standard_normal((16, 32)) / 4
    b1 = RNG.standard_normal(32) * 0.1
    w2 = RNG.standard_normal((32, 8)) / np.sqrt(32)
    w3 = RNG.standard_normal((16, 8)) / 4
    then_graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h0"]),
         helper.make_node("Add", ["h0", "b1"], ["h1"]),
         helper.make_node("Relu", ["h1"], ["h2"]),
         helper.make_node("MatMul", ["h2", "w2"], ["then_y"])],
        "then", [], [helper.make_tensor_value_info("then_y", F, [4, 8])])
    else_graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w3"], ["g0"]),
         helper.make_node("Tanh", ["g0"], ["g1"]),
         helper.make_node("Mul", ["g1", "half"], ["else_y"])],
        "else", [], [helper.make_tensor_value_info("else_y", F, [4, 8])])
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], keepdims=0),
        helper.make_node("Greater", ["mean", "zero"], ["cond"]),
        helper.make_node("If", ["cond"], ["branch"], then_branch=then_graph,
                         else_branch=else_graph),
        helper.make_node("Softmax", ["branch"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "gated_mlp", [helper.make_tensor_value_info("x", F, [4, 16])],
        [helper.make_tensor_value_info("y", F, [4, 8])],
        [init("w1", w1), init("b1", b1), init("w2", w2), init("w3", w3),
         init("zero", np.array(0.0)), init("half", np.array(0.5))])
    save("gated_mlp", graph)
    for i, shift in enumerate((0.3, -0.3, 1.0)):
        x = (RNG.standard_normal((4, 16)) + shift).astype(np.float32)
        if x.mean() > 0:
            branch = np.maximum(x @ w1 + b1, 0) @ w2
        else:
            branch = np.tanh(x @ w3) * 0.5
        np.save(os.path.join(OUT, "gated_mlp_x%d.npy" % i), x)
        np.save(os.path.join(OUT, "gated_mlp_y%d.npy" % i), softmax(branch).astype(np.float32))
        print("gated_mlp_x%d takes the %s branch" % (i, "then" if x.mean() > 0 else "else"))


def nested_if():
    inner_then = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["it"])], "inner_then", [],
        [helper.make_tensor_value_info("it", F, [6])])
    inner_else = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["ie"])], "inner_else", [],
        [helper.make_tensor_value_info("ie", F, [6])])
    outer_then = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
         helper.make_node("Greater", ["mx", "two"], ["c2"]),
         helper.make_node("If", ["c2"], ["ot"], then_branch=inner_then, else_branch=inner_else)],
        "outer_then", [], [helper.make_tensor_value_info("ot", F, [6])])
    outer_else = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["oe"])], "outer_else", [],
        [helper.make_tensor_value_info("oe", F, [6])])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c1"]),
         helper.make_node("If", ["c1"], ["y"], then_branch=outer_then, else_branch=outer_else)],
        "nested_if", [helper.make_tensor_value_info("x", F, [6])],
        [helper.make_tensor_value_info("y", F, [6])],
        [init("zero", np.array(0.0)), init("two", np.array(2.0))])
    save("nested_if", graph)
    cases = [np.array([3.0, 1, 1, 1, 1, 1]),      # sum > 0, max > 2: 2x
             np.array([1.0, 1, 1, 1, 1, -0.5]),   # sum > 0, max <= 2: -x
             np.array([-3.0, 1, -1, 1, -1, 0.5])]  # sum <= 0: |x|
    for i, x in enumerate(cases):
        x = x.astype(np.float32)
        y = (2 * x if x.max() > 2 else -x) if x.sum() > 0 else np.abs(x)
        np.save(os.path.join(OUT, "nested_if_x%d.npy" % i), x)
        np.save(os.path.join(OUT, "nested_if_y%d.npy" % i), y.astype(np.float32))


def if_shapes():
    then_graph = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "t", [],
                                   [helper.make_tensor_value_info("t", F, [4])])
    else_graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["e"], axis=0)], "e", [],
        [helper.make_tensor_value_info("e", F, [8])])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)],
        "if_shapes", [helper.make_tensor_value_info("x", F, [4])],
        [helper.make_tensor_value_info("y", F, None)], [init("zero", np.array(0.0))])
    save("if_shapes", graph, check=False)


gated_mlp()
nested_if()
if_shapes()
