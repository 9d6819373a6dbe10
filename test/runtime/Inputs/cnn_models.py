"""Shared by the generators of small CNNs (make_residual_cnn.py,
make_convnext_block.py): numpy's float64 convolution, the oracle the cgc
results are compared with, and the files a generator writes."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


def conv(x, w, b, stride=1, pad=0, groups=1):
    """ONNX Conv on float64 arrays: x [N, C, H, W], w [O, C / groups, K, K],
    b [O], the same stride and padding on both axes."""
    n, _, h, wd = x.shape
    o, cg, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(k):
            for j in range(k):
                patch = xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def save(out, name, nodes, inits, x, expected, opset):
    """OUT/model.onnx (input 'x', output 'y'), OUT/input.npy and
    OUT/expected.npy (float32)."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, expected.shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
              os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "input.npy"), x)
    np.save(os.path.join(out, "expected.npy"), expected.astype(np.float32))
