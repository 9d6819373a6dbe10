//===- ConvertDetection.cpp - RoiAlign and NonMaxSuppression ---------------===//
//
// NonMaxSuppression is `cgc_op.non_max_suppression`: its selected indices
// have as many rows as there can be (batch x classes x the per-class
// maximum) and a count of the valid ones, which the importer returns beside
// them (ImportOptions::dataDependentRows; the rows may only reach graph
// outputs). The per-class maximum determines that shape and must be known at
// compile time; the thresholds are run-time operands.
//
// RoiAlign written out as gathers: the feature map is viewed as rows of
// channels ([N * H * W, C]); for every region, output bin and sample point
// the four bilinear neighbours are gathered by flat row index (computed at
// run time from the regions), weighted, and pooled over each bin's samples
// (average or ONNX Runtime's max of weighted corners). Regions and batch
// indices are run-time operands; the samples per bin (sampling_ratio) must
// be fixed, since an adaptive count (0) depends on each region's size.
// Sampling follows ONNX Runtime: a point farther than one pixel outside the
// map contributes 0; coordinates below 0 clamp to 0; a point in the last
// row or column reads it alone.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include <limits>

using namespace mlir;

namespace cgc::import {
namespace {

/// The largest gathered intermediate ([regions, samples, samples, C]) the
/// decomposition builds.
constexpr int64_t kMaxRoiAlignElements = int64_t(1) << 28;

/// Per-axis bilinear sampling of `points` ([R, S] coordinates) on an axis
/// of `size`: the low and high neighbour (int64) and their weights (zero
/// for a point outside [-1, size]).
struct AxisSamples {
  Value low, high, lowWeight, highWeight;
};

FailureOr<AxisSamples> sampleAxis(NodeContext &ctx, Value points, int64_t size) {
  Value minusOne = ctx.scalarLike(points, -1.0);
  Value inside = ctx.create<op::AndOp>(
      {ctx.create<op::GreaterOrEqualOp>({points, minusOne}),
       ctx.create<op::LessOrEqualOp>({points, ctx.scalarLike(points, size)})});
  Value clamped = ctx.create<op::MaxOp>({points, ctx.scalarLike(points, 0.0)});
  Value floor = clamped ? ctx.create<op::FloorOp>(clamped) : Value();
  if (!inside || !floor)
    return failure();
  Value last = ctx.scalarLike(points, size - 1);
  Value atEnd = ctx.create<op::GreaterOrEqualOp>({floor, last});
  if (!atEnd)
    return failure();
  AxisSamples s;
  Value low = ctx.create<op::WhereOp>({atEnd, last, floor});
  Value high = ctx.create<op::WhereOp>({atEnd, last, ctx.add(floor, ctx.scalarLike(points, 1.0))});
  Value fraction = ctx.create<op::WhereOp>(
      {atEnd, ctx.scalarLike(points, 0.0), ctx.sub(clamped, floor)});
  Value valid = ctx.cast(inside, kindOf(points));
  if (!low || !high || !fraction || !valid)
    return failure();
  s.low = ctx.cast(low, ElementKind::Int64);
  s.high = ctx.cast(high, ElementKind::Int64);
  s.highWeight = ctx.mul(fraction, valid);
  s.lowWeight = ctx.mul(ctx.sub(ctx.scalarLike(points, 1.0), fraction), valid);
  if (!s.low || !s.high || !s.lowWeight || !s.highWeight)
    return failure();
  return s;
}

LogicalResult convertRoiAlign(NodeContext &ctx) {
  Value x = ctx.input(0), rois = ctx.input(1), batchIndices = ctx.input(2);
  if (rankOf(x) != 4 || !isFloatKind(kindOf(x)))
    return ctx.fail("RoiAlign needs a floating-point N x C x H x W input");
  if (rankOf(rois) != 2 || shapeOf(rois)[1] != 4)
    return ctx.fail("rois must be [num_rois, 4]");
  const int64_t regions = shapeOf(rois)[0];
  if (rankOf(batchIndices) != 1 || shapeOf(batchIndices)[0] != regions)
    return ctx.fail("batch_indices must hold one index per region (" +
                    Twine(regions) + ")");
  const int64_t n = shapeOf(x)[0], channels = shapeOf(x)[1];
  const int64_t height = shapeOf(x)[2], width = shapeOf(x)[3];
  const int64_t outH = ctx.getInt("output_height", 1), outW = ctx.getInt("output_width", 1);
  const int64_t ratio = ctx.getInt("sampling_ratio", 0);
  const float scale = ctx.getFloat("spatial_scale", 1.0f);
  const std::string mode = ctx.getString("mode", "avg");
  const std::string transform =
      ctx.opset >= 16 ? ctx.getString("coordinate_transformation_mode", "half_pixel")
                      : "output_half_pixel";
  if (outH < 1 || outW < 1 || outH > 4096 || outW > 4096)
    return ctx.fail("output_height and output_width must be in [1, 4096]");
  if (mode != "avg" && mode != "max")
    return ctx.fail("mode must be 'avg' or 'max', not '" + mode + "'");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return ctx.fail("coordinate_transformation_mode must be 'half_pixel' or "
                    "'output_half_pixel', not '" + transform + "'");
  if (ratio == 0)
    return ctx.unsupported("RoiAlign with an adaptive sampling_ratio (0): the "
                           "samples per bin depend on each region's size");
  if (ratio < 0 || ratio > 64)
    return ctx.fail("sampling_ratio must be in [0, 64], not " + Twine(ratio));
  const int64_t rows = outH * ratio, cols = outW * ratio;
  if (regions * rows * cols * channels > kMaxRoiAlignElements)
    return ctx.unsupported("RoiAlign gathering " + Twine(regions) + " x " +
                           Twine(rows) + " x " + Twine(cols) + " x " +
                           Twine(channels) + " values (at most 2^28)");

  // Region corners in feature-map coordinates: [R, 1] each.
  ElementKind kind = kindOf(x);
  Value boxes = ctx.cast(rois, kind);
  const double offset = transform == "half_pixel" ? 0.5 : 0.0;
  auto corner = [&](int64_t i) {
    return ctx.sub(ctx.mul(ctx.slice(boxes, 1, i, i + 1), ctx.scalar(kind, scale)),
                   ctx.scalar(kind, offset));
  };
  Value x1 = corner(0), y1 = corner(1), x2 = corner(2), y2 = corner(3);
  Value roiW = ctx.sub(x2, x1), roiH = ctx.sub(y2, y1);
  if (!roiW || !roiH)
    return failure();
  if (transform == "output_half_pixel") {
    roiW = ctx.create<op::MaxOp>({roiW, ctx.scalar(kind, 1.0)});
    roiH = ctx.create<op::MaxOp>({roiH, ctx.scalar(kind, 1.0)});
  }
  // Sample p of bin b sits at start + bin * (b + (p + 0.5) / ratio).
  auto points = [&](Value start, Value extent, int64_t bins) -> Value {
    HostTensor steps(kind, {1, bins * ratio});
    for (int64_t b = 0; b < bins; ++b)
      for (int64_t p = 0; p < ratio; ++p)
        steps.setFloat(b * ratio + p, b + (p + 0.5) / ratio);
    Value bin = ctx.div(extent, ctx.scalar(kind, bins));
    return ctx.add(start, ctx.mul(bin, ctx.constant(std::move(steps))));
  };
  Value ys = points(y1, roiH, outH), xs = points(x1, roiW, outW);
  if (!ys || !xs)
    return failure();
  FailureOr<AxisSamples> sy = sampleAxis(ctx, ys, height);
  FailureOr<AxisSamples> sx = sampleAxis(ctx, xs, width);
  if (failed(sy) || failed(sx))
    return failure();

  // Feature rows [N * H * W, C]; flat row (b * H + y) * W + x.
  Value table = ctx.reshape(ctx.transpose(x, {0, 2, 3, 1}), {n * height * width, channels});
  Value batchBase = ctx.reshape(
      ctx.mul(ctx.cast(batchIndices, ElementKind::Int64),
              ctx.scalar(ElementKind::Int64, height * width)),
      {regions, 1, 1});
  if (!table || !batchBase)
    return failure();
  auto gather = [&](Value yIndex, Value yWeight, Value xIndex, Value xWeight) -> Value {
    Value row = ctx.add(ctx.add(batchBase,
                                ctx.reshape(ctx.mul(yIndex, ctx.scalar(ElementKind::Int64, width)),
                                            {regions, rows, 1})),
                        ctx.reshape(xIndex, {regions, 1, cols}));
    Value values = row ? ctx.create<op::GatherOp>({table, row},
                                                  {ctx.named("axis", ctx.i64(0))})
                       : Value();
    Value weight = ctx.mul(ctx.reshape(yWeight, {regions, rows, 1, 1}),
                           ctx.reshape(xWeight, {regions, 1, cols, 1}));
    return ctx.mul(values, weight); // [R, rows, cols, C]
  };
  Value corners[4] = {gather(sy->low, sy->lowWeight, sx->low, sx->lowWeight),
                      gather(sy->low, sy->lowWeight, sx->high, sx->highWeight),
                      gather(sy->high, sy->highWeight, sx->low, sx->lowWeight),
                      gather(sy->high, sy->highWeight, sx->high, sx->highWeight)};
  Value samples;
  for (Value c : corners) {
    if (!c)
      return failure();
    samples = !samples ? c
              : mode == "avg" ? ctx.add(samples, c)
                              : ctx.create<op::MaxOp>({samples, c});
    if (!samples)
      return failure();
  }
  // Pool each bin's ratio x ratio samples: [R, outH, ratio, outW, ratio, C].
  Value binned = ctx.reshape(samples, {regions, outH, ratio, outW, ratio, channels});
  SmallVector<NamedAttribute> axes{ctx.named("axes", ctx.i64s({2, 4})),
                                   ctx.named("keepdims", ctx.boolean(false))};
  Value pooled = !binned ? Value()
                 : mode == "avg" ? ctx.create<op::ReduceMeanOp>(binned, axes)
                                 : ctx.create<op::ReduceMaxOp>(binned, axes);
  return ctx.setOutput(ctx.transpose(pooled, {0, 3, 1, 2}));
}

LogicalResult convertNonMaxSuppression(NodeContext &ctx) {
  if (!ctx.importer.getOptions().dataDependentRows)
    return ctx.fail(
        "the number of boxes NonMaxSuppression selects depends on the values, "
        "and this compilation does not allow outputs with data-dependent rows "
        "(cgc-compile and cgc-run do; through the runtime API set "
        "cgc_compile_options_t::data_dependent_rows and read each run's rows "
        "with cgc_context_output_rows)");
  Value boxes = ctx.input(0), scores = ctx.input(1);
  if (!isFloatKind(kindOf(boxes)) || kindOf(scores) != kindOf(boxes))
    return ctx.fail("boxes and scores must have one floating-point type");
  int64_t perClass = 0;
  if (ctx.hasInput(2)) {
    FailureOr<double> value = ctx.requireScalarInput(2);
    if (failed(value))
      return failure();
    if (*value < 0)
      return ctx.fail("max_output_boxes_per_class must not be negative");
    perClass = static_cast<int64_t>(std::min(*value, 1e15));
  }
  // Without a per-class maximum nothing is selected (ONNX's default 0).
  if (rankOf(boxes) == 3)
    perClass = std::min(perClass, shapeOf(boxes)[1]);
  auto threshold = [&](unsigned index, double absent) -> Value {
    if (!ctx.hasInput(index))
      return ctx.scalarLike(boxes, absent);
    if (llvm::cast<TensorType>(ctx.input(index).getType()).getNumElements() != 1)
      return {};
    return ctx.cast(ctx.input(index), kindOf(boxes));
  };
  Value iou = threshold(3, 0.0);
  Value score = threshold(4, -std::numeric_limits<double>::infinity());
  if (!iou || !score)
    return ctx.fail("iou_threshold and score_threshold must be scalars");
  int64_t centerPointBox = ctx.getInt("center_point_box", 0);
  if (centerPointBox != 0 && centerPointBox != 1)
    return ctx.fail("center_point_box must be 0 or 1");
  FailureOr<SmallVector<Value>> results = ctx.createN<op::NonMaxSuppressionOp>(
      {boxes, scores, iou, score},
      {ctx.named("max_output_boxes_per_class", ctx.i64(perClass)),
       ctx.named("center_point_box", ctx.boolean(centerPointBox == 1))},
      2);
  if (failed(results))
    return failure();
  ctx.importer.addDataDependentRows((*results)[0], (*results)[1],
                                    "NonMaxSuppression's selected_indices");
  return ctx.setOutput((*results)[0]);
}

} // namespace

void registerDetectionConverters(ConverterRegistry &r) {
  r.add("RoiAlign", convertRoiAlign);
  r.add("NonMaxSuppression", convertNonMaxSuppression);
}

} // namespace cgc::import
