#!/usr/bin/env python3
"""Writes a small MLP as ONNX with one test data set in ONNX's layout.

  x[4,16] -> MatMul W1 -> Add b1 -> Relu -> MatMul W2 -> Add b2 -> Tanh
          -> Softmax(axis=-1) -> y[4,8]

The expected output is computed here with numpy (float64, then rounded), an
oracle independent of cgc. Weights are random with a scale that keeps the
logits of order one, so a wrong kernel cannot hide in tiny values.

With --vector the input is one vector x[16] (a 1-D MatMul operand) and the
model stops after the first Relu: y[32].

Usage: make_mlp.py OUT_DIR [--vector]  (writes OUT_DIR/model.onnx and
OUT_DIR/test_data_set_0/{input_0,output_0}.pb)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    vector = "--vector" in sys.argv[2:]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16,) if vector else (4, 16)).astype(np.float32)
    w1 = (rng.standard_normal((16, 32)) / 4).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    w2 = (rng.standard_normal((32, 8)) / 4).astype(np.float32)
    b2 = rng.standard_normal(8).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
        helper.make_node("Add", ["h3", "b2"], ["h4"], name="bias2"),
        helper.make_node("Tanh", ["h4"], ["h5"], name="tanh2"),
        helper.make_node("Softmax", ["h5"], ["y"], name="softmax", axis=-1),
    ]
    if vector:
        nodes = nodes[:2] + [helper.make_node("Relu", ["h1"], ["y"], name="relu1")]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32] if vector else [4, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))

    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    z = np.tanh(h @ w2 + b2)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    y = (h if vector else e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    for name, array in (("input_0", x), ("output_0", y)):
        with open(os.path.join(out, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())


if __name__ == "__main__":
    main()
