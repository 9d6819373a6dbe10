#!/usr/bin/env python3
"""Writes a detector head that ends in NonMaxSuppression, with inputs that
select different numbers of boxes and numpy's expected selections:

  nms.onnx:         selected = NonMaxSuppression(boxes, Sigmoid(logits),
                    max 5 per class, iou_threshold (a graph input),
                    score_threshold 0.3)
  nms_post.onnx:    post-processing as torchvision exports it, row by row
                    on the selection: each selected box and its score
                    gathered (Gather by the box column, GatherND by the
                    (batch, class, box) triple), the class cast to float,
                    concatenated into detections [rows, 6] = (box, score,
                    class); the rows stay data-dependent
  nms_gather.onnx:  the selection's row 2 read by a Gather along the rows
                    (refused: past the count it is not a selected box)

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
    gathered = head + [helper.make_node("Gather", ["selected", "two"], ["row"], axis=0)]
    model = graph("nms_gather", gathered,
                  [helper.make_tensor_value_info("row", TensorProto.INT64, [3])])
    model.graph.initializer.append(numpy_helper.from_array(np.array(2, np.int64), "two"))
    onnx.save(model, os.path.join(out, "nms_gather.onnx"))
    post = head + [
        helper.make_node("Gather", ["selected", "col_box"], ["box_index"], axis=1),
        helper.make_node("Gather", ["selected", "col_batch"], ["batch_index"], axis=1),
        helper.make_node("Gather", ["selected", "col_class"], ["class_index"], axis=1),
        helper.make_node("Reshape", ["boxes", "flat_boxes_shape"], ["flat_boxes"]),
        helper.make_node("Mul", ["batch_index", "boxes_per_image"], ["image_offset"]),
        helper.make_node("Add", ["image_offset", "box_index"], ["flat_index"]),
        helper.make_node("Gather", ["flat_boxes", "flat_index"], ["picked_boxes"], axis=0),
        helper.make_node("GatherND", ["scores", "selected"], ["picked_scores"]),
        helper.make_node("Unsqueeze", ["picked_scores", "axis1"], ["score_column"]),
        helper.make_node("Cast", ["class_index"], ["class_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["class_float", "axis1"], ["class_column"]),
        helper.make_node("Concat", ["picked_boxes", "score_column", "class_column"],
                         ["detections"], axis=1),
    ]
    model = graph("nms_post", post,
                  [helper.make_tensor_value_info("detections", TensorProto.FLOAT, ["n", 6])])
    for name, value in (("col_box", np.array(2, np.int64)), ("col_batch", np.array(0, np.int64)),
                        ("col_class", np.array(1, np.int64)),
                        ("flat_boxes_shape", np.array([BATCH * BOXES, 4], np.int64)),
                        ("boxes_per_image", np.array(BOXES, np.int64)),
                        ("axis1", np.array([1], np.int64))):
        model.graph.initializer.append(numpy_helper.from_array(value, name))
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, "nms_post.onnx"))

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
        detections = np.concatenate(
            [boxes[want[:, 0], want[:, 2]], scores[want[:, 0], want[:, 1], want[:, 2]][:, None],
             want[:, 1:2].astype(np.float32)], axis=1).astype(np.float32)
        np.save(os.path.join(out, "detections_%d.npy" % k), detections)
        print("input set %d: %d boxes selected" % (k, len(want)))


if __name__ == "__main__":
    main()
