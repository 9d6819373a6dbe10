#!/usr/bin/env python3
"""Writes emb.onnx: y = Gather(table, ids) with a 64 MiB float32 table
[65536, 256] (an embedding, read at two rows per run), ids.npy and the rows
numpy gathers (y.npy).

Usage: make_embedding.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
table = np.random.default_rng(1).standard_normal((65536, 256)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)], "embedding",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 256])],
    [numpy_helper.from_array(table, "table")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "emb.onnx"))
ids = np.array([5, 60000], np.int64)
np.save(os.path.join(out, "ids.npy"), ids)
np.save(os.path.join(out, "y.npy"), table[ids])
