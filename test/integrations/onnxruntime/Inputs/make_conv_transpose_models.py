#!/usr/bin/python3
"""make_conv_transpose_models.py OUT: models whose ConvTranspose layers read
the result of a convolution inside one cpu-target partition, so that the
input may be stored channels-last (the CPU driver's layout after a
convolution) while the ConvTranspose writes NCHW:

  ct2d.onnx  Conv 4->40 3x3, Relu, ConvTranspose 40->24 2x2 s2 (taps that do
             not overlap, many outputs: the direct kernel), BatchNormalization,
             Relu, ConvTranspose 24->5 4x4 s2 p1 (overlapping: oneDNN),
             ConvTranspose 5->3 3x3 s3 (few outputs, 3-wide taps), Sigmoid
  ct1d.onnx  Conv1d 4->16, Relu, ConvTranspose1d 16->5 4 s2 p1
  ct3d.onnx  Conv3d 2->8, Relu, ConvTranspose3d 8->3 2 s2, Relu,
             ConvTranspose3d 3->2 3 s2 p1 output_padding 1

with random weights (BatchNormalization statistics that move its output)
and an input NAME_x.npy each."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

rng = np.random.default_rng(29)


def weight(name, shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def save(name, nodes, inits, x_shape, out, directory):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", T.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", T.FLOAT, out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(directory, name + ".onnx"))
    np.save(os.path.join(directory, name + "_x.npy"),
            rng.standard_normal(x_shape).astype(np.float32))


def main(directory):
    os.makedirs(directory, exist_ok=True)
    n = helper.make_node
    save("ct2d", [
        n("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        n("Relu", ["c0"], ["r0"]),
        n("ConvTranspose", ["r0", "w1", "b1"], ["t1"], strides=[2, 2]),
        n("BatchNormalization", ["t1", "s", "bias", "mean", "var"], ["n1"]),
        n("Relu", ["n1"], ["r1"]),
        n("ConvTranspose", ["r1", "w2"], ["t2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("ConvTranspose", ["t2", "w3", "b3"], ["t3"], strides=[3, 3]),
        n("Sigmoid", ["t3"], ["y"]),
    ], [weight("w0", (40, 4, 3, 3)), weight("b0", (40,)), weight("w1", (40, 24, 2, 2)),
        weight("b1", (24,)),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 24).astype(np.float32), "s"),
        weight("bias", (24,)), weight("mean", (24,)),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 24).astype(np.float32), "var"),
        weight("w2", (24, 5, 4, 4)), weight("w3", (5, 3, 3, 3)), weight("b3", (3,))],
        [1, 4, 13, 17], [1, 3, 156, 204], directory)
    save("ct1d", [
        n("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1]),
        n("Relu", ["c0"], ["r0"]),
        n("ConvTranspose", ["r0", "w1", "b1"], ["y"], strides=[2], pads=[1, 1]),
    ], [weight("w0", (16, 4, 3)), weight("b0", (16,)), weight("w1", (16, 5, 4)),
        weight("b1", (5,))], [2, 4, 33], [2, 5, 66], directory)
    save("ct3d", [
        n("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1, 1, 1]),
        n("Relu", ["c0"], ["r0"]),
        n("ConvTranspose", ["r0", "w1", "b1"], ["t1"], strides=[2, 2, 2]),
        n("Relu", ["t1"], ["r1"]),
        n("ConvTranspose", ["r1", "w2", "b2"], ["y"], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
          output_padding=[1, 1, 1]),
    ], [weight("w0", (8, 2, 3, 3, 3)), weight("b0", (8,)), weight("w1", (8, 3, 2, 2, 2)),
        weight("b1", (3,)), weight("w2", (3, 2, 3, 3, 3)), weight("b2", (2,))],
        [1, 2, 6, 7, 5], [1, 2, 24, 28, 20], directory)


if __name__ == "__main__":
    main(sys.argv[1])
