//===- detection.cpp - non_max_suppression ---------------------------------===//
//
// Greedy non-maximum suppression per batch entry and class, as ONNX Runtime
// does it: candidates above the score threshold in order of decreasing
// score (equal scores: the lower box index first); a candidate is kept
// unless its intersection over union with a kept box exceeds the IoU
// threshold. The selected rows are written first; the rest of the
// upper-bound output holds (0, 0, 0), a valid index triple (ops computing
// row by row after the selection gather with them), and the count output
// the number of valid rows.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cgc::cpu {
namespace {

struct Box {
  double yMin, xMin, yMax, xMax;
  double area() const { return (yMax - yMin) * (xMax - xMin); }
};

template <class T> class NonMaxSuppressionKernel final : public KernelBase {
public:
  NonMaxSuppressionKernel(int64_t batch, int64_t classes, int64_t boxes, int64_t perClass,
                          bool centerPointBox)
      : batch_(batch), classes_(classes), boxes_(boxes), perClass_(perClass),
        centerPointBox_(centerPointBox) {
    description_ = cat("non_max_suppression ", batch, "x", classes, " classes x ", boxes,
                       " boxes, at most ", perClass, " per class");
  }

  void run(const KernelArgs &args, ThreadPool &) const override {
    const T *boxes = static_cast<const T *>(args.inputs[0]);
    const T *scores = static_cast<const T *>(args.inputs[1]);
    const double iouThreshold = double(load(*static_cast<const T *>(args.inputs[2])));
    const double scoreThreshold = double(load(*static_cast<const T *>(args.inputs[3])));
    // -inf: no score threshold (ONNX's absent input).
    const bool filter = scoreThreshold != -std::numeric_limits<double>::infinity();
    int64_t *selected = static_cast<int64_t *>(args.outputs[0]);
    int64_t *count = static_cast<int64_t *>(args.outputs[1]);
    const int64_t capacity = batch_ * classes_ * perClass_;
    std::fill(selected, selected + capacity * 3, int64_t(0));
    int64_t rows = 0;
    std::vector<Box> corners(static_cast<size_t>(boxes_));
    std::vector<int64_t> order;
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t i = 0; i < boxes_; ++i)
        corners[size_t(i)] = corner(boxes + (b * boxes_ + i) * 4);
      for (int64_t c = 0; c < classes_ && perClass_ > 0; ++c) {
        const T *classScores = scores + (b * classes_ + c) * boxes_;
        order.clear();
        // A NaN score is never a candidate (it has no place in the order).
        for (int64_t i = 0; i < boxes_; ++i) {
          const double score = double(load(classScores[i]));
          if (score == score && (!filter || score > scoreThreshold))
            order.push_back(i);
        }
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return double(load(classScores[x])) > double(load(classScores[y]));
        });
        kept.clear();
        for (int64_t candidate : order) {
          if (int64_t(kept.size()) == perClass_)
            break;
          bool suppressed = false;
          for (int64_t k : kept)
            if (overlaps(corners[size_t(candidate)], corners[size_t(k)], iouThreshold)) {
              suppressed = true;
              break;
            }
          if (suppressed)
            continue;
          kept.push_back(candidate);
          selected[rows * 3 + 0] = b;
          selected[rows * 3 + 1] = c;
          selected[rows * 3 + 2] = candidate;
          ++rows;
        }
      }
    }
    *count = rows;
  }

private:
  Box corner(const T *box) const {
    double v[4];
    for (int i = 0; i < 4; ++i)
      v[i] = double(load(box[i]));
    if (centerPointBox_) // [x_center, y_center, width, height]
      return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
    // [y1, x1, y2, x2], either corner first.
    return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]),
            std::max(v[1], v[3])};
  }

  static bool overlaps(const Box &a, const Box &b, double threshold) {
    const double height = std::min(a.yMax, b.yMax) - std::max(a.yMin, b.yMin);
    const double width = std::min(a.xMax, b.xMax) - std::max(a.xMin, b.xMin);
    if (height <= 0 || width <= 0)
      return false;
    const double intersection = height * width;
    const double areaA = a.area(), areaB = b.area();
    const double unionArea = areaA + areaB - intersection;
    if (areaA <= 0 || areaB <= 0 || unionArea <= 0)
      return false;
    return intersection / unionArea > threshold;
  }

  int64_t batch_, classes_, boxes_, perClass_;
  bool centerPointBox_;
};

std::unique_ptr<Kernel> makeNonMaxSuppression(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(4, 4);
  r.expectOutputs(2, 2);
  const KernelOperand &boxes = r.input(0, "boxes");
  const KernelOperand &scores = r.input(1, "scores");
  r.expectDType(boxes, "boxes", DTypeClass::Float);
  r.expectSameDType(boxes, "boxes", scores, "scores");
  for (size_t i = 2; i < 4; ++i) {
    const KernelOperand &threshold = r.input(i, i == 2 ? "iou_threshold" : "score_threshold");
    r.expectSameDType(boxes, "boxes", threshold, "a threshold");
    if (threshold.numElements() != 1)
      r.error("the thresholds must have one element");
  }
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4)
    r.error("boxes must be [batch, boxes, 4]");
  const int64_t batch = boxes.shape[0], n = boxes.shape[1];
  if (scores.shape.size() != 3 || scores.shape[0] != batch || scores.shape[2] != n)
    r.error("scores must be [batch, classes, boxes]");
  const int64_t classes = scores.shape[1];
  const int64_t perClass = r.getInt("max_output_boxes_per_class");
  if (perClass < 0 || perClass > n)
    r.error(cat("max_output_boxes_per_class ", perClass, " must be in [0, ", n, "]"));
  if (r.output(0).dtype != CGC_DTYPE_INT64 || r.output(1).dtype != CGC_DTYPE_INT64)
    r.error("selected and count must be int64");
  r.expectShape(r.output(0), "selected", {batch * classes * perClass, 3});
  if (r.output(1).numElements() != 1)
    r.error("count must have one element");
  const bool centerPointBox = r.getBool("center_point_box", false);
  std::unique_ptr<Kernel> kernel;
  visitDType(boxes.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                  std::is_same_v<T, BFloat16>)
      kernel = std::make_unique<NonMaxSuppressionKernel<T>>(batch, classes, n, perClass,
                                                            centerPointBox);
  });
  return kernel;
}

} // namespace

void registerDetectionOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::NonMaxSuppression, makeNonMaxSuppression, false});
}

} // namespace cgc::cpu
