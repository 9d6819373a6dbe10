#!/usr/bin/env python3
"""Writes a detector head that ends in NonMaxSuppression, with inputs that
select different numbers of boxes and numpy's expected selections:

  nms.onnx:         selected = NonMaxSuppression(boxes, Sigmoid(logits),
                    max 5 per class, iou_threshold (a graph input),
                    score_threshold 0.3)
  nms_gather.onnx:  the selection read by a Gather (refused: its rows are
                    data-dependent)

Usage: make_nms.py OUT_DIR
Writes boxes_<k>.npy, logits_<k>.npy, iou_<k>.npy, selected_<k>.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH, CLASSES, BOXES, PER_CLASS, SCORE = 2, 3, 40, 5, 0.3


def iou(a, b):
    ya0, xa0, ya1, xa1 = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    yb0, xb0, yb1, xb1 = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    h, w = min(ya1, yb1) - max(ya0, yb0), min(xa1, xb1) - max(xa0, xb0)
    if h <= 0 or w <= 0:
        return 0.0
    inter = h * w
    union = (ya1 - ya0) * (xa1 - xa0) + (yb1 - yb0) * (xb1 - xb0) - inter
    return inter / union if union > 0 else 0.0


def nms(boxes, scores, per_class, iou_threshold, score_threshold):
    rows = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            order = [i for i in np.argsort(-s, kind="stable") if s[i] > score_threshold]
            kept = []
            for i in order:
                if len(kept) == per_class:
                    break
                if all(iou(boxes[b, i].astype(np.float64), boxes[b, k].astype(np.float64))
                       <= iou_threshold for k in kept):
                    kept.append(i)
                    rows.append((b, c, i))
    return np.array(rows, np.int64).reshape(-1, 3)


def graph(name, nodes, outputs):
    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [BATCH, BOXES, 4]),
              helper.make_tensor_value_info("logits", TensorProto.FLOAT, [BATCH, CLASSES, BOXES]),
              helper.make_tensor_value_info("iou", TensorProto.FLOAT, [1])]
    inits = [numpy_helper.from_array(np.array([PER_CLASS], np.int64), "per_class"),
             numpy_helper.from_array(np.array([SCORE], np.float32), "score")]
    return helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits),
                             opset_imports=[helper.make_opsetid("", 13)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    head = [helper.make_node("Sigmoid", ["logits"], ["scores"]),
            helper.make_node("NonMaxSuppression", ["boxes", "scores", "per_class", "iou", "score"],
                             ["selected"])]
    selected = helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3])
    onnx.save(graph("nms", head, [selected]), os.path.join(out, "nms.onnx"))
    gathered = head + [helper.make_node("Gather", ["selected", "zero"], ["first"], axis=1)]
    model = graph("nms_gather", gathered,
                  [helper.make_tensor_value_info("first", TensorProto.INT64, ["n"])])
    model.graph.initializer.append(numpy_helper.from_array(np.array(2, np.int64), "zero"))
    onnx.save(model, os.path.join(out, "nms_gather.onnx"))

    rng = np.random.default_rng(7)
    # Few boxes above the score threshold, many overlapping ones, a mix.
    for k, (spread, threshold, mean) in enumerate(((8.0, 0.5, -3.0), (80.0, 0.0, 1.0),
                                                   (4.0, 0.6, -2.6))):
        corners = rng.uniform(0, 20, (BATCH, BOXES, 2))
        sizes = rng.uniform(0.5, spread, (BATCH, BOXES, 2))
        boxes = np.concatenate([corners, corners + sizes], axis=2).astype(np.float32)
        boxes[:, ::4] = boxes[:, ::4][..., [2, 3, 0, 1]]  # some corners flipped
        logits = rng.normal(mean, 1.5, (BATCH, CLASSES, BOXES)).astype(np.float32)
        scores = (1 / (1 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
        np.save(os.path.join(out, "boxes_%d.npy" % k), boxes)
        np.save(os.path.join(out, "logits_%d.npy" % k), logits)
        np.save(os.path.join(out, "iou_%d.npy" % k), np.array([threshold], np.float32))
        want = nms(boxes, scores, PER_CLASS, threshold, SCORE)
        np.save(os.path.join(out, "selected_%d.npy" % k), want)
        print("input set %d: %d boxes selected" % (k, len(want)))


if __name__ == "__main__":
    main()
