#!/usr/bin/env python3
"""Writes models whose control flow is steered at run time (Loop, If), and
inputs that take different numbers of iterations or different branches,
with the outputs each should give.

  recurrent.onnx  PyTorch, scripted: `for i in range(int(steps))` over a
                  tanh cell reading the loop index (the trip count is the
                  graph input `steps`). x [4, 16] float, steps int64 scalar
                  -> h [4, 16]. Reference: the scripted module run by
                  PyTorch.
  halve.onnx      PyTorch, scripted: a projection, then `while (h * h).sum()
                  > 1: h = h * 0.5` (a condition the body computes at run
                  time, no trip count). x [4, 16] -> h [4, 16].
  branch.onnx     PyTorch, scripted: `if bool(x.mean() > 0)` picks a ReLU
                  projection, else a tanh of another; a softmax after.
                  x [4, 16] -> y [4, 16]; inputs take then, else, then,
                  else.
  collect.onnx    PyTorch, scripted: `outs.append(h)` in a
                  `for i in range(int(steps))` loop, then torch.stack(outs):
                  a sequence the loop appends to, returned stacked with as
                  many rows as the run iterates. x [2, 8], steps -> ys
                  [steps, 2, 8], h [2, 8].
  states.onnx     ONNX, written here: Loop(steps) whose body steps a tanh
                  cell and emits every state as a scan output, so `states`
                  [steps, 4, 16] has as many rows as the run iterates, and
                  the final state `h` [4, 16]. Reference: numpy in float64.

Weights are random normal scaled by 1/sqrt(fan-in), so states stay of order
one and every iteration changes them. For each model NAME, inputs
NAME_in{k}/ (one .npy per graph input) and expected outputs NAME_out{k}/
(one .npy per graph output); NAME.iterations lists each input set's
iterations.

Usage: make_runtime_loop.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
import torch
from cases import write_case
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
torch.manual_seed(11)
RNG = np.random.default_rng(11)


def scaled_linear(n_in, n_out):
    layer = torch.nn.Linear(n_in, n_out)
    with torch.no_grad():
        layer.weight.normal_(0.0, 1.0 / np.sqrt(n_in))
        layer.bias.normal_(0.0, 0.1)
    return layer


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = scaled_linear(16, 16)
        self.inp = scaled_linear(16, 16)

    def forward(self, x, steps):
        h = torch.zeros_like(x)
        u = self.inp(x)
        for i in range(int(steps)):
            h = torch.tanh(self.cell(h) + u * (1.0 + 0.25 * i))
        return h


class Halve(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = scaled_linear(16, 16)

    def forward(self, x):
        h = self.proj(x)
        while bool((h * h).sum() > 1.0):
            h = h * 0.5
        return h


class Branch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = scaled_linear(16, 16)
        self.b = scaled_linear(16, 16)

    def forward(self, x):
        if bool(x.mean() > 0):
            y = torch.relu(self.a(x))
        else:
            y = torch.tanh(self.b(x))
        return torch.softmax(y * 3.0, dim=-1)


def export_scripted(module, args, names, outputs, path):
    scripted = torch.jit.script(module)
    torch.onnx.export(scripted, args, path, opset_version=17, input_names=names,
                      output_names=outputs)
    model = onnx.load(path)
    assert any(n.op_type in ("Loop", "If") for n in model.graph.node), "no control flow in " + path
    return scripted


def recurrent():
    module = Recurrent().eval()
    x = torch.randn(4, 16)
    scripted = export_scripted(module, (x, torch.tensor(3)), ["x", "steps"], ["h"],
                               os.path.join(OUT, "recurrent.onnx"))
    counts = [0, 1, 5, 12]
    for k, steps in enumerate(counts):
        x = torch.randn(4, 16)
        with torch.no_grad():
            h = scripted(x, torch.tensor(steps))
        write_case(OUT, "recurrent", k, {"x": x.numpy(), "steps": np.array(steps, np.int64)},
                   {"h": h.detach().numpy()})
    return counts


def halve():
    module = Halve().eval()
    x = torch.randn(4, 16)
    scripted = export_scripted(module, (x,), ["x"], ["h"], os.path.join(OUT, "halve.onnx"))
    counts = []
    for k, scale in enumerate([0.05, 1.0, 30.0, 4000.0]):
        x = torch.randn(4, 16) * scale
        with torch.no_grad():
            h = scripted(x)
            first = module.proj(x)
        counts.append(int(round(np.log2(float(first.norm()) / float(h.norm())))))
        write_case(OUT, "halve", k, {"x": x.numpy()}, {"h": h.detach().numpy()})
    return counts


def branch():
    module = Branch().eval()
    scripted = export_scripted(module, (torch.randn(4, 16),), ["x"], ["y"],
                               os.path.join(OUT, "branch.onnx"))
    taken = []
    for k, shift in enumerate([0.5, -0.5, 0.3, -0.2]):
        x = torch.randn(4, 16) * 0.5 + shift
        with torch.no_grad():
            y = scripted(x)
        write_case(OUT, "branch", k, {"x": x.numpy()}, {"y": y.detach().numpy()})
        taken.append("then" if float(x.mean()) > 0 else "else")
    return taken


class Collect(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = scaled_linear(8, 8)

    def forward(self, x, steps):
        h = x
        outs = []
        for i in range(int(steps)):
            h = torch.tanh(self.cell(h) + x)
            outs.append(h)
        return torch.stack(outs), h


def collect():
    module = Collect().eval()
    scripted = export_scripted(module, (torch.randn(2, 8), torch.tensor(3)), ["x", "steps"],
                               ["ys", "h"], os.path.join(OUT, "collect.onnx"))
    counts = [1, 3, 7]
    for k, steps in enumerate(counts):
        x = torch.randn(2, 8)
        with torch.no_grad():
            ys, h = scripted(x, torch.tensor(steps))
        write_case(OUT, "collect", k, {"x": x.numpy(), "steps": np.array(steps, np.int64)},
                   {"ys": ys.detach().numpy(), "h": h.detach().numpy()})
    return counts


def states():
    w = RNG.standard_normal((16, 16)) / 4
    b = RNG.standard_normal(16) * 0.1
    F = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
         helper.make_node("Add", ["hw", "x"], ["hx"]),
         helper.make_node("Add", ["hx", "b"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["h_out"], ["state"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", F, [4, 16])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", F, [4, 16]),
         helper.make_tensor_value_info("state", F, [4, 16])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["steps", "", "h0"], ["h", "states"], body=body)],
        "states",
        [helper.make_tensor_value_info("x", F, [4, 16]),
         helper.make_tensor_value_info("steps", TensorProto.INT64, []),
         helper.make_tensor_value_info("h0", F, [4, 16])],
        [helper.make_tensor_value_info("h", F, [4, 16]),
         helper.make_tensor_value_info("states", F, ["n", 4, 16])],
        [numpy_helper.from_array(w.astype(np.float32), "w"),
         numpy_helper.from_array(b.astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, "states.onnx"))
    counts = [1, 4, 9]
    for k, steps in enumerate(counts):
        x = RNG.standard_normal((4, 16)).astype(np.float32)
        h0 = RNG.standard_normal((4, 16)).astype(np.float32)
        h = h0.astype(np.float64)
        seen = []
        for _ in range(steps):
            h = np.tanh(h @ w.astype(np.float32).astype(np.float64) + x + b.astype(np.float32))
            seen.append(h)
        write_case(OUT, "states", k, {"x": x, "steps": np.array(steps, np.int64), "h0": h0},
                   {"h": h.astype(np.float32), "states": np.stack(seen).astype(np.float32)})
    return counts


os.makedirs(OUT, exist_ok=True)
for name, make in (("recurrent", recurrent), ("halve", halve), ("branch", branch),
                   ("collect", collect), ("states", states)):
    counts = make()
    with open(os.path.join(OUT, name + ".iterations"), "w") as f:
        f.write(" ".join(map(str, counts)) + "\n")
    print(name, "branches" if name == "branch" else "iterations", *counts)
