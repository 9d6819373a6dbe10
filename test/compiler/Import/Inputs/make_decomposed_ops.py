#!/usr/bin/env python3
"""Writes models for the ops the importer writes out as other ops (Det,
MaxPool's Indices, MaxUnpool, ReverseSequence, STFT, training-mode
BatchNormalization, Adam), with inputs and expected outputs computed by numpy
(np.linalg, np.fft, plain loops), on shapes and attributes the ONNX node
tests do not cover: larger and singular matrices, dilations and ceil_mode,
complex signals, T > 0.

Usage: make_decomposed_ops.py OUT_DIR
Writes OUT_DIR/<name>.onnx, <name>_<input>.npy and <name>_out<i>.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT = sys.argv[1]
RNG = np.random.default_rng(11)


def save(name, nodes, inputs, outputs, opset=17, extra_opsets=()):
    """inputs/outputs: lists of (name, array) pairs."""
    def info(n, a):
        return helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
    graph = helper.make_graph(nodes, name, [info(n, a) for n, a in inputs],
                              [info(n, a) for n, a in outputs])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    onnx.save(helper.make_model(graph, opset_imports=opsets), os.path.join(OUT, name + ".onnx"))
    for n, a in inputs:
        np.save(os.path.join(OUT, "%s_%s.npy" % (name, n)), a)
    for i, (_, a) in enumerate(outputs):
        np.save(os.path.join(OUT, "%s_out%d.npy" % (name, i)), a)


def det():
    a = RNG.standard_normal((4, 6, 6)).astype(np.float32)
    a[1, :, 2] = 0                      # singular: a zero column
    a[2] = np.eye(6)[[3, 1, 5, 0, 2, 4]] * 2  # a permutation: every step pivots
    a[3, 0, 0] = 0                      # a zero in the first pivot's place
    save("det", [helper.make_node("Det", ["a"], ["d"])], [("a", a)],
         [("d", np.linalg.det(a.astype(np.float64)).astype(np.float32))])


def pool_windows(x, kernel, strides, dilations, pads, ceil_mode):
    n, c, h, w = x.shape
    outs = []
    for d, size in enumerate((h, w)):
        span = (kernel[d] - 1) * dilations[d] + 1
        total = size + pads[d] + pads[2 + d] - span
        o = (-(-total // strides[d]) if ceil_mode else total // strides[d]) + 1
        # A window must start inside the input or the leading padding.
        if ceil_mode and (o - 1) * strides[d] >= size + pads[d]:
            o -= 1
        outs.append(o)
    y = np.zeros((n, c, outs[0], outs[1]), x.dtype)
    idx = np.zeros(y.shape, np.int64)
    for b in range(n):
        for ch in range(c):
            for oh in range(outs[0]):
                for ow in range(outs[1]):
                    best, where = -np.inf, -1
                    for kh in range(kernel[0]):
                        for kw in range(kernel[1]):
                            ih = oh * strides[0] - pads[0] + kh * dilations[0]
                            iw = ow * strides[1] - pads[1] + kw * dilations[1]
                            if 0 <= ih < h and 0 <= iw < w and x[b, ch, ih, iw] > best:
                                best = x[b, ch, ih, iw]
                                where = ((b * c + ch) * h + ih) * w + iw
                    y[b, ch, oh, ow], idx[b, ch, oh, ow] = best, where
    return y, idx


def maxpool_indices():
    x = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32)
    x[0, 0, :3, :3] = 1.0  # ties: the first in window order wins
    attrs = dict(kernel_shape=[3, 2], strides=[2, 2], dilations=[2, 1], pads=[1, 0, 2, 1], ceil_mode=1)
    y, idx = pool_windows(x, attrs["kernel_shape"], attrs["strides"], attrs["dilations"],
                          attrs["pads"], True)
    save("maxpool_indices", [helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)],
         [("x", x)], [("y", y), ("i", idx)])
    # Unpooling what a 2x2/2 pool found puts each maximum back in place.
    x = RNG.standard_normal((2, 4, 8, 6)).astype(np.float32)
    y, idx = pool_windows(x, [2, 2], [2, 2], [1, 1], [0, 0, 0, 0], False)
    back = np.zeros(x.size, np.float32)
    back[idx.ravel()] = y.ravel()
    save("unpool", [helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),
                    helper.make_node("MaxUnpool", ["y", "i"], ["z"], kernel_shape=[2, 2], strides=[2, 2])],
         [("x", x)], [("z", back.reshape(x.shape))])


def reverse_sequence():
    x = RNG.standard_normal((5, 7, 3)).astype(np.float32)  # [batch, time, features]
    lens = np.array([7, 1, 4, 0, 6], np.int64)
    y = x.copy()
    for b, n in enumerate(lens):
        y[b, :n] = x[b, :n][::-1]
    save("reverse_sequence", [helper.make_node("ReverseSequence", ["x", "lens"], ["y"],
                                               batch_axis=0, time_axis=1)],
         [("x", x), ("lens", lens)], [("y", y)])


def stft():
    signal = RNG.standard_normal((2, 100, 2)).astype(np.float32)  # complex
    window = np.hanning(20).astype(np.float32)
    step = 7
    frames = 1 + (100 - 20) // step
    z = signal[..., 0] + 1j * signal[..., 1]
    out = np.zeros((2, frames, 20, 2), np.float32)
    for b in range(2):
        for f in range(frames):
            spectrum = np.fft.fft(z[b, f * step:f * step + 20] * window)
            out[b, f, :, 0], out[b, f, :, 1] = spectrum.real, spectrum.imag
    from onnx import numpy_helper
    step_node = helper.make_node("Constant", [], ["step"],
                                 value=numpy_helper.from_array(np.array(step, np.int64)))
    save("stft", [step_node, helper.make_node("STFT", ["signal", "step", "window"], ["y"], onesided=0)],
         [("signal", signal), ("window", window)], [("y", out)])


def batchnorm_training():
    x = (RNG.standard_normal((3, 4, 5, 6)) * 3 + 2).astype(np.float32)
    scale, bias = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    mean, var = RNG.standard_normal(4).astype(np.float32), RNG.uniform(0.5, 2, 4).astype(np.float32)
    m = x.mean(axis=(0, 2, 3), dtype=np.float64)
    v = x.var(axis=(0, 2, 3), dtype=np.float64)
    shape = (1, 4, 1, 1)
    y = (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + 1e-3) * scale.reshape(shape) + bias.reshape(shape)
    save("batchnorm_training",
         [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                           training_mode=1, momentum=0.8, epsilon=1e-3)],
         [("x", x), ("s", scale), ("b", bias), ("m", mean), ("v", var)],
         [("y", y.astype(np.float32)), ("rm", (mean * 0.8 + m * 0.2).astype(np.float32)),
          ("rv", (var * 0.8 + v * 0.2).astype(np.float32))])


def adam():
    r, t = np.array(0.05, np.float32), np.array(3, np.int64)
    x, g = RNG.standard_normal(10).astype(np.float32), RNG.standard_normal(10).astype(np.float32)
    v, h = RNG.standard_normal(10).astype(np.float32), RNG.uniform(0, 1, 10).astype(np.float32)
    alpha, beta, eps, norm = 0.9, 0.99, 1e-3, 0.01
    gr = norm * x + g
    v_new = alpha * v + (1 - alpha) * gr
    h_new = beta * h + (1 - beta) * gr * gr
    rate = r * np.sqrt(1 - beta ** 3) / (1 - alpha ** 3)
    x_new = x - rate * v_new / (np.sqrt(h_new) + eps)
    save("adam", [helper.make_node("Adam", ["r", "t", "x", "g", "v", "h"], ["x2", "v2", "h2"],
                                   domain="ai.onnx.preview.training", alpha=alpha, beta=beta,
                                   epsilon=eps, norm_coefficient=norm)],
         [("r", r), ("t", t), ("x", x), ("g", g), ("v", v), ("h", h)],
         [("x2", x_new.astype(np.float32)), ("v2", v_new.astype(np.float32)),
          ("h2", h_new.astype(np.float32))],
         extra_opsets=[("ai.onnx.preview.training", 1)])


def roi_align_reference(x, rois, batch, out_h, out_w, ratio, scale, mode, half_pixel):
    """ONNX Runtime's RoiAlign, one sample at a time."""
    n, c, h, w = x.shape
    y = np.zeros((len(rois), c, out_h, out_w), np.float64)
    off = 0.5 if half_pixel else 0.0
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        x1, y1, x2, y2 = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bw, bh = rw / out_w, rh / out_h
        for ph in range(out_h):
            for pw in range(out_w):
                acc = np.zeros(c) if mode == "avg" else None
                for iy in range(ratio):
                    for ix in range(ratio):
                        yy = y1 + ph * bh + (iy + 0.5) * bh / ratio
                        xx = x1 + pw * bw + (ix + 0.5) * bw / ratio
                        if yy < -1 or yy > h or xx < -1 or xx > w:
                            vals = [np.zeros(c)] * 4
                        else:
                            yy, xx = max(yy, 0.0), max(xx, 0.0)
                            yl, xl = int(yy), int(xx)
                            if yl >= h - 1:
                                yl = yh = h - 1
                                yy = yl
                            else:
                                yh = yl + 1
                            if xl >= w - 1:
                                xl = xh = w - 1
                                xx = xl
                            else:
                                xh = xl + 1
                            ly, lx = yy - yl, xx - xl
                            f = x[batch[r]]
                            vals = [(1 - ly) * (1 - lx) * f[:, yl, xl], (1 - ly) * lx * f[:, yl, xh],
                                    ly * (1 - lx) * f[:, yh, xl], ly * lx * f[:, yh, xh]]
                        if mode == "avg":
                            acc += sum(vals)
                        else:
                            m = np.maximum(np.maximum(vals[0], vals[1]), np.maximum(vals[2], vals[3]))
                            acc = m if acc is None else np.maximum(acc, m)
                y[r, :, ph, pw] = acc / (ratio * ratio) if mode == "avg" else acc
    return y.astype(np.float32)


def roi_align():
    x = RNG.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.array([[0, 0, 9, 11], [2.5, 1.2, 6.1, 4.4], [-3, -2, 4, 5],
                     [7, 8, 14, 16], [4, 4, 4.2, 4.1]], np.float32) * 2
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    for mode, half in (("avg", True), ("max", False)):
        name = "roi_align_%s" % mode
        y = roi_align_reference(x, rois, batch, 3, 4, 2, 0.5, mode, half)
        save(name, [helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], output_height=3,
                                     output_width=4, sampling_ratio=2, spatial_scale=0.5, mode=mode,
                                     coordinate_transformation_mode="half_pixel" if half else "output_half_pixel")],
             [("x", x), ("rois", rois), ("b", batch)], [("y", y)], opset=16)


def tfidf():
    x = RNG.integers(0, 5, (3, 20)).astype(np.int64)
    grams = {1: [(0,), (1,), (2,)], 2: [(1, 2), (3, 3), (4, 0)], 3: [(1, 1, 1), (2, 0, 4)]}
    pool, counts, order = [], [], []
    for n in (1, 2, 3):
        counts.append(len(pool))
        for gram in grams[n]:
            pool.extend(gram)
            order.append(gram)
    weights = RNG.uniform(0.5, 2, len(order)).astype(np.float32)
    for mode in ("TFIDF", "IDF"):
        freq = np.zeros((3, len(order)), np.float32)
        for b in range(3):
            for n in (1, 2, 3):
                for skip in range(0, 3 if n > 1 else 1):
                    for i in range(20 - (n - 1) * (skip + 1)):
                        gram = tuple(x[b, i + j * (skip + 1)] for j in range(n))
                        if gram in order:
                            freq[b, order.index(gram)] += 1
        y = freq * weights if mode == "TFIDF" else np.minimum(freq, 1) * weights
        save("tfidf_" + mode.lower(),
             [helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode=mode, min_gram_length=1,
                               max_gram_length=3, max_skip_count=2, ngram_counts=counts,
                               ngram_indexes=list(range(len(order))), pool_int64s=pool,
                               weights=weights.tolist())],
             [("x", x)], [("y", y.astype(np.float32))], opset=9)


def hostile():
    """Sizes the decompositions refuse instead of building huge constants."""
    from onnx import numpy_helper
    step = numpy_helper.from_array(np.array(1, np.int64), "step")
    frame = numpy_helper.from_array(np.array(4096, np.int64), "frame")
    graph = helper.make_graph(
        [helper.make_node("STFT", ["signal", "step", "", "frame"], ["y"])], "g",
        [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [1, 1 << 24, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [step, frame])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(OUT, "stft_huge.onnx"))
    scalars = [numpy_helper.from_array(np.array(v, t), n) for n, v, t in
               (("bins", 65536, np.int64), ("dft", 1 << 24, np.int64), ("rate", 16000, np.int64),
                ("lo", 0, np.float32), ("hi", 8000, np.float32))]
    graph = helper.make_graph(
        [helper.make_node("MelWeightMatrix", ["bins", "dft", "rate", "lo", "hi"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], scalars)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(OUT, "mel_huge.onnx"))
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[64, 64])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)]),
              os.path.join(OUT, "maxpool_indices_huge.onnx"))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for make in (det, maxpool_indices, reverse_sequence, stft, batchnorm_training, adam, tfidf,
                 roi_align, hostile):
        make()
