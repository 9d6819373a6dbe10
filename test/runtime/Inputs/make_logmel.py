#!/usr/bin/env python3
"""Writes an audio front end computing a log-mel spectrogram with a
signal-dependent clip, as speech models' exported preprocessing does:

  logmel.onnx  signal [1, samples, 1] (samples symbolic) ->
               STFT (400-sample Hann frames every 160, one-sided)
               -> power |X|^2 -> MelWeightMatrix (80 bins, 16 kHz, 20-8000 Hz)
               -> 10 log10(max(p, 1e-10))
               -> Clip(min = ReduceMax(db) - 80)   (the peak's 80 dB range)
               -> y [1, frames, 80]

and three signals of different lengths and loudness (so the clip floor and
the number of frames differ per run): a voiced tone mix with noise, a quiet
chirp, a loud burst after silence. numpy computes the expected outputs
(rfft of the windowed frames, ONNX's mel matrix rule).

Usage: make_logmel.py OUT_DIR
Writes logmel.onnx, signal{0,1,2}.npy and y{0,1,2}.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
RNG = np.random.default_rng(17)
RATE, FRAME, STEP, BINS, LOW, HIGH = 16000, 400, 160, 80, 20.0, 8000.0


def scalar(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype), name)


def model():
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)).astype(np.float32)
    inits = [numpy_helper.from_array(window, "window"),
             scalar("step", STEP, np.int64), scalar("frame", FRAME, np.int64),
             scalar("bins", BINS, np.int64), scalar("rate", RATE, np.int64),
             scalar("low", LOW, np.float32), scalar("high", HIGH, np.float32),
             scalar("eps", 1e-10, np.float32), scalar("ten", 10.0, np.float32),
             scalar("ln10", np.log(10.0), np.float32), scalar("range", 80.0, np.float32)]
    nodes = [
        helper.make_node("STFT", ["signal", "step", "window", "frame"], ["spec"], onesided=1),
        helper.make_node("ReduceSumSquare", ["spec"], ["power"], axes=[3], keepdims=0),
        helper.make_node("MelWeightMatrix", ["bins", "frame", "rate", "low", "high"], ["mel"]),
        helper.make_node("MatMul", ["power", "mel"], ["melpower"]),
        helper.make_node("Max", ["melpower", "eps"], ["floored"]),
        helper.make_node("Log", ["floored"], ["ln"]),
        helper.make_node("Div", ["ln", "ln10"], ["log10"]),
        helper.make_node("Mul", ["log10", "ten"], ["db"]),
        helper.make_node("ReduceMax", ["db"], ["peak"], keepdims=0),
        helper.make_node("Sub", ["peak", "range"], ["floor"]),
        helper.make_node("Clip", ["db", "floor"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "logmel",
        [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [1, "samples", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "frames", BINS])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "logmel.onnx"))
    return window


def mel_matrix():
    """ONNX's MelWeightMatrix reference (onnx/reference/ops/op_mel_weight_matrix)."""
    lowest, highest = 0, FRAME // 2 + 1
    low_mel = 2595 * np.log10(1 + LOW / 700)
    high_mel = 2595 * np.log10(1 + HIGH / 700)
    mel_step = (high_mel - low_mel) / (BINS + 2)
    points = np.arange(BINS + 2) * mel_step + low_mel
    hz = 700 * (10 ** (points / 2595) - 1)
    bins = ((FRAME + 1) * hz / RATE).astype(np.int64)
    out = np.zeros((highest, BINS), np.float32)
    for i in range(BINS):
        lower, center, upper = bins[i], bins[i + 1], bins[i + 2]
        if center - lower == 0:
            out[center, i] = 1
        else:
            for j in range(lower, center + 1):
                out[j, i] = (j - lower) / (center - lower)
        if upper - center > 0:
            for j in range(center, upper):
                out[j, i] = (upper - j) / (upper - center)
    return out


def reference(signal, window, mel):
    x = signal[0, :, 0].astype(np.float64)
    frames = 1 + (len(x) - FRAME) // STEP
    spec = np.stack([np.fft.rfft(x[f * STEP:f * STEP + FRAME] * window) for f in range(frames)])
    power = np.abs(spec) ** 2
    db = 10 * np.log10(np.maximum(power @ mel.astype(np.float64), 1e-10))
    return np.maximum(db, db.max() - 80)[None].astype(np.float32)


def main():
    window = model()
    mel = mel_matrix()
    t = lambda n: np.arange(n) / RATE
    n0, n1, n2 = 8000, 5200, 12000
    signals = [
        0.3 * np.sin(2 * np.pi * 220 * t(n0)) + 0.2 * np.sin(2 * np.pi * 1375 * t(n0))
        + 0.01 * RNG.standard_normal(n0),
        0.002 * np.sin(2 * np.pi * (300 + 2000 * t(n1)) * t(n1)),
        np.concatenate([np.zeros(n2 // 2), 0.9 * RNG.standard_normal(n2 // 2)]),
    ]
    for i, s in enumerate(signals):
        signal = s.astype(np.float32)[None, :, None]
        np.save(os.path.join(OUT, "signal%d.npy" % i), signal)
        np.save(os.path.join(OUT, "y%d.npy" % i), reference(signal, window, mel))


main()
