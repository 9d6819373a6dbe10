#!/usr/bin/env python3
"""Writes models whose output sizes depend on the input values (NonZero and
Compress on values computed at run time), inputs selecting different
numbers of entries, and the outputs each should give.

  select.onnx    PyTorch, exported: a score filter as detection heads write
                 it. boxes [64, 4], scores [64] -> kept [n, 4] (the boxes
                 whose score exceeds 0.5, scaled: NonZero -> Transpose ->
                 GatherND), idx [n] (torch.nonzero(keep).squeeze(1)), and
                 cells [m, 2] (torch.nonzero of a [8, 8] map > 0.8, its
                 coordinates). Reference: PyTorch.
  compress.onnx  ONNX, written here: Compress(x [6, 8], keep [6], axis 0)
                 -> Relu -> y [n, 8], and Compress with no axis (the
                 flattened x) -> z [k]. Reference: numpy.
  topk.onnx      ONNX: TopK(scores [20], k) with k a graph input -> values,
                 indices [k]; k = 0, 5, 20 (and 21, which fails the run).
                 Reference: numpy's stable argsort.
  unique.onnx    ONNX: Unique(x [12] float), sorted and by first occurrence
                 -> values, first indices, inverse indices, counts each;
                 1 to 12 distinct values. Reference: numpy.unique.
  nonzero_raw.onnx  NonZero(x [3, 4]) as the graph output ([2, n]: the
                 extent on dimension 1) and nonzero_sum.onnx (a ReduceSum
                 across the selection): refused.

For each model NAME, inputs NAME_in{k}/ (one .npy per graph input) and
expected outputs NAME_out{k}/ (one .npy per output, at its run's size); the
sizes are printed.

Usage: make_runtime_selection.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
import torch
from cases import write_case
from onnx import TensorProto, helper

OUT = sys.argv[1]
torch.manual_seed(5)
RNG = np.random.default_rng(5)


class Select(torch.nn.Module):
    def forward(self, boxes, scores, heat):
        keep = scores > 0.5
        kept = boxes[keep] * 2.0 + 1.0
        idx = torch.nonzero(keep).squeeze(1)
        cells = torch.nonzero(heat > 0.8)
        return kept, idx, cells


def select():
    args = (torch.randn(64, 4), torch.rand(64), torch.rand(8, 8))
    path = os.path.join(OUT, "select.onnx")
    torch.onnx.export(Select(), args, path, opset_version=17,
                      input_names=["boxes", "scores", "heat"],
                      output_names=["kept", "idx", "cells"],
                      dynamic_axes={"kept": {0: "n"}, "idx": {0: "n"}, "cells": {0: "m"}})
    assert any(n.op_type == "NonZero" for n in onnx.load(path).graph.node)
    sizes = []
    for k, (low, high) in enumerate([(0.0, 1.0), (0.0, 0.4), (0.3, 1.0), (0.55, 1.0)]):
        boxes = torch.randn(64, 4)
        scores = low + (high - low) * torch.rand(64)
        heat = torch.rand(8, 8) * (high + 0.2)
        kept, idx, cells = Select()(boxes, scores, heat)
        write_case(OUT, "select", k, {"boxes": boxes.numpy(), "scores": scores.numpy(),
                                      "heat": heat.numpy()},
                   {"kept": kept.numpy(), "idx": idx.numpy(), "cells": cells.numpy()})
        sizes.append("%d/%d" % (kept.shape[0], cells.shape[0]))
    return sizes


def compress():
    F = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Compress", ["x", "keep"], ["rows"], axis=0),
         helper.make_node("Relu", ["rows"], ["y"]),
         helper.make_node("Greater", ["x", "zero"], ["positive"]),
         helper.make_node("Reshape", ["positive", "flat"], ["mask"]),
         helper.make_node("Compress", ["x", "mask"], ["z"])],
        "compress",
        [helper.make_tensor_value_info("x", F, [6, 8]),
         helper.make_tensor_value_info("keep", TensorProto.BOOL, [6])],
        [helper.make_tensor_value_info("y", F, ["n", 8]),
         helper.make_tensor_value_info("z", F, ["k"])],
        [helper.make_tensor("zero", F, [], [0.0]),
         helper.make_tensor("flat", TensorProto.INT64, [1], [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, "compress.onnx"))
    sizes = []
    for k, keep in enumerate([[1, 0, 1, 1, 0, 1], [0] * 6, [1] * 6, [0, 0, 0, 0, 0, 1]]):
        x = RNG.standard_normal((6, 8)).astype(np.float32) + (k - 1.5) * 0.5
        keep = np.array(keep, bool)
        y = np.maximum(x[keep], 0)
        z = x.reshape(-1)[x.reshape(-1) > 0]
        write_case(OUT, "compress", k, {"x": x, "keep": keep}, {"y": y, "z": z})
        sizes.append("%d/%d" % (y.shape[0], z.shape[0]))
    return sizes


def topk():
    graph = helper.make_graph(
        [helper.make_node("TopK", ["scores", "k"], ["values", "indices"])],
        "topk",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [20]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["k"]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, ["k"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, "topk.onnx"))
    sizes = []
    for n, k in enumerate([0, 5, 20, 21]):
        scores = RNG.standard_normal(20).astype(np.float32)
        scores[3] = scores[11]  # a tie: the lower index first
        order = np.argsort(-scores, kind="stable")[:k]
        write_case(OUT, "topk", n, {"scores": scores, "k": np.array([k], np.int64)},
                   {"values": scores[order], "indices": order.astype(np.int64)})
        sizes.append(str(k))
    return sizes


def unique():
    F, I = TensorProto.FLOAT, TensorProto.INT64
    outs = []
    nodes = []
    for tag, sort in (("s", 1), ("u", 0)):
        names = [n + "_" + tag for n in ("y", "first", "inverse", "counts")]
        nodes.append(helper.make_node("Unique", ["x"], names, sorted=sort))
        outs += [helper.make_tensor_value_info(names[0], F, ["n"]),
                 helper.make_tensor_value_info(names[1], I, ["n"]),
                 helper.make_tensor_value_info(names[2], I, [12]),
                 helper.make_tensor_value_info(names[3], I, ["n"])]
    graph = helper.make_graph(nodes, "unique",
                              [helper.make_tensor_value_info("x", F, [12])], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, "unique.onnx"))
    sizes = []
    for k, pool in enumerate([[2.5], [-1.0, 3.0, 0.5, 7.0], None]):
        x = (RNG.standard_normal(12) if pool is None else RNG.choice(pool, 12)).astype(np.float32)
        y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                              return_counts=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        expected = {"y_s": y, "first_s": first, "inverse_s": inverse, "counts_s": counts,
                    "y_u": y[order], "first_u": first[order], "inverse_u": rank[inverse],
                    "counts_u": counts[order]}
        write_case(OUT, "unique", k, {"x": x},
                   {key: (v.astype(np.int64) if key[0] != "y" else v)
                    for key, v in expected.items()})
        sizes.append(str(len(y)))
    return sizes


def refused():
    F = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", F, [3, 4])
    raw = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "raw", [x],
                            [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])])
    summed = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["nz"]),
         helper.make_node("ReduceSum", ["nz"], ["y"], keepdims=0)],
        "summed", [x], [helper.make_tensor_value_info("y", TensorProto.INT64, [])])
    for name, graph in (("nonzero_raw", raw), ("nonzero_sum", summed)):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(OUT, name + ".onnx"))


os.makedirs(OUT, exist_ok=True)
refused()
for name, make in (("select", select), ("compress", compress), ("topk", topk),
                   ("unique", unique)):
    print(name, "sizes", *make())
