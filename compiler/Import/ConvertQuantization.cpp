//===- ConvertQuantization.cpp - Quantized ONNX ops, decomposed -----------===//
//
// QuantizeLinear, DequantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul
// and QLinearConv in terms of cast / sub / mul / round / clip and integer
// matmuls. Integer convolutions run on exactly converted float64 values
// (every int32 accumulation is exact there). DynamicQuantizeLinear expands
// its ONNX function body.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include <limits>

using namespace mlir;

namespace cgc::import {
namespace {

/// Reshapes a per-axis parameter (1-D, one value per slice of `axis`) so it
/// broadcasts against a tensor of `rank`; scalars stay as they are.
Value alignToAxis(NodeContext &ctx, Value parameter, int64_t axis,
                  int64_t rank) {
  if (!parameter || rankOf(parameter) == 0)
    return parameter;
  if (rankOf(parameter) != 1) {
    (void)ctx.fail("a per-axis scale or zero point must be 1-D");
    return {};
  }
  if (shapeOf(parameter)[0] == 1)
    return ctx.reshape(parameter, {});
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = shapeOf(parameter)[0];
  return ctx.reshape(parameter, shape);
}

/// The `axis` of per-axis scales; only checked when the scale is per axis.
FailureOr<int64_t> quantizationAxis(NodeContext &ctx, int64_t rank) {
  Value scale = ctx.input(1);
  if (rankOf(scale) == 0 || shapeOf(scale)[0] == 1)
    return 0;
  return ctx.normalizeAxis(ctx.getInt("axis", 1), rank);
}

std::pair<double, double> integerRange(ElementKind kind) {
  switch (kind) {
  case ElementKind::UInt8:
    return {0, 255};
  case ElementKind::Int8:
    return {-128, 127};
  case ElementKind::UInt16:
    return {0, 65535};
  case ElementKind::Int16:
    return {-32768, 32767};
  case ElementKind::Int32:
    return {std::numeric_limits<int32_t>::min(),
            std::numeric_limits<int32_t>::max()};
  default:
    return {0, 0};
  }
}

/// saturate(round(x / scale) + zero_point), cast to the zero point's type.
Value quantize(NodeContext &ctx, Value x, Value scale, Value zeroPoint,
               ElementKind kind) {
  Value scaled = ctx.create<op::RoundOp>(ctx.create<op::DivOp>({x, scale}));
  if (zeroPoint)
    scaled = ctx.create<op::AddOp>({scaled, ctx.cast(zeroPoint, kindOf(x))});
  auto [low, high] = integerRange(kind);
  Value clipped = ctx.create<op::ClipOp>(
      scaled, {ctx.named("min", ctx.f64(low)), ctx.named("max", ctx.f64(high))});
  return ctx.cast(clipped, kind);
}

/// x - zero_point in int32.
Value centered(NodeContext &ctx, Value x, Value zeroPoint) {
  Value wide = ctx.cast(x, ElementKind::Int32);
  if (!zeroPoint)
    return wide;
  return ctx.create<op::SubOp>({wide, ctx.cast(zeroPoint, ElementKind::Int32)});
}

LogicalResult convertQuantizeLinear(NodeContext &ctx) {
  Value x = ctx.input(0);
  int64_t rank = rankOf(x);
  FailureOr<int64_t> axis = quantizationAxis(ctx, rank);
  if (failed(axis))
    return failure();
  Value scale = alignToAxis(ctx, ctx.input(1), *axis, rank);
  Value zeroPoint = ctx.hasInput(2)
                        ? alignToAxis(ctx, ctx.input(2), *axis, rank)
                        : Value();
  ElementKind kind = zeroPoint ? kindOf(zeroPoint) : ElementKind::UInt8;
  if (integerRange(kind).second == 0)
    return ctx.unsupported("QuantizeLinear to " +
                           stringifyElementKind(kind).str());
  if (!scale || (ctx.hasInput(2) && !zeroPoint))
    return failure();
  return ctx.setOutput(quantize(ctx, x, scale, zeroPoint, kind));
}

LogicalResult convertDequantizeLinear(NodeContext &ctx) {
  Value x = ctx.input(0);
  int64_t rank = rankOf(x);
  FailureOr<int64_t> axis = quantizationAxis(ctx, rank);
  if (failed(axis))
    return failure();
  Value scale = alignToAxis(ctx, ctx.input(1), *axis, rank);
  Value zeroPoint = ctx.hasInput(2)
                        ? alignToAxis(ctx, ctx.input(2), *axis, rank)
                        : Value();
  if (!scale || (ctx.hasInput(2) && !zeroPoint))
    return failure();
  Value difference = ctx.cast(centered(ctx, x, zeroPoint), kindOf(scale));
  return ctx.setOutput(ctx.create<op::MulOp>({difference, scale}));
}

/// A zero point of A (per row, shape [M]) broadcasting against [..., M, K].
Value rowZeroPoint(NodeContext &ctx, Value zeroPoint) {
  if (!zeroPoint || rankOf(zeroPoint) == 0)
    return zeroPoint;
  return ctx.reshape(zeroPoint, {shapeOf(zeroPoint)[0], 1});
}

LogicalResult convertMatMulInteger(NodeContext &ctx) {
  Value a = centered(ctx, ctx.input(0), rowZeroPoint(ctx, ctx.input(2)));
  Value b = centered(ctx, ctx.input(1), ctx.input(3));
  return ctx.setOutput(ctx.create<op::MatMulOp>({a, b}));
}

/// Convolution attributes shared by ConvInteger and QLinearConv, resolved as
/// for Conv (auto_pad included) through the Conv converter's rules.
FailureOr<SmallVector<NamedAttribute>> convAttrs(NodeContext &ctx, Value x,
                                                 Value w) {
  size_t n = rankOf(x) - 2;
  SmallVector<int64_t> strides = ctx.getInts("strides");
  SmallVector<int64_t> dilations = ctx.getInts("dilations");
  SmallVector<int64_t> pads = ctx.getInts("pads");
  if (strides.empty())
    strides.assign(n, 1);
  if (dilations.empty())
    dilations.assign(n, 1);
  if (pads.empty())
    pads.assign(2 * n, 0);
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    pads.assign(2 * n, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t in = shapeOf(x)[2 + i], k = shapeOf(w)[2 + i];
      int64_t out = (in + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * strides[i] + (k - 1) * dilations[i] + 1 - in);
      int64_t small = total / 2, large = total - small;
      pads[i] = autoPad == "SAME_UPPER" ? small : large;
      pads[n + i] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    (void)ctx.fail("unknown auto_pad '" + autoPad + "'");
    return failure();
  }
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n) {
    (void)ctx.fail("strides, dilations and pads do not match the spatial rank");
    return failure();
  }
  return SmallVector<NamedAttribute>{
      ctx.named("strides", ctx.i64s(strides)),
      ctx.named("dilations", ctx.i64s(dilations)),
      ctx.named("start_padding", ctx.i64s(ArrayRef(pads).take_front(n))),
      ctx.named("end_padding", ctx.i64s(ArrayRef(pads).drop_front(n))),
      ctx.named("groups", ctx.i64(ctx.getInt("group", 1)))};
}

/// The integer convolution of (x - x_zero_point) and (w - w_zero_point) as
/// int32, computed exactly in float64.
Value integerConv(NodeContext &ctx, Value x, Value xZero, Value w,
                  Value wZero) {
  Value wAligned = wZero;
  if (wZero && rankOf(wZero) == 1 && shapeOf(wZero)[0] != 1) {
    SmallVector<int64_t> shape(rankOf(w), 1);
    shape[0] = shapeOf(wZero)[0];
    wAligned = ctx.reshape(wZero, shape);
  }
  Value xf = ctx.cast(centered(ctx, x, xZero), ElementKind::Float64);
  Value wf = ctx.cast(centered(ctx, w, wAligned), ElementKind::Float64);
  FailureOr<SmallVector<NamedAttribute>> attrs = convAttrs(ctx, x, w);
  if (failed(attrs))
    return {};
  return ctx.create<op::ConvolutionOp>({xf, wf}, *attrs);
}

LogicalResult convertConvInteger(NodeContext &ctx) {
  Value result = integerConv(ctx, ctx.input(0), ctx.input(2), ctx.input(1),
                             ctx.input(3));
  return ctx.setOutput(ctx.cast(result, ElementKind::Int32));
}

/// Requantizes an int32 (or exact float64) accumulator:
/// saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point).
Value requantize(NodeContext &ctx, Value accumulator, Value aScale,
                 Value bScale, Value yScale, Value yZero) {
  Value scale = ctx.create<op::DivOp>(
      {ctx.create<op::MulOp>({aScale, bScale}), yScale});
  if (!scale)
    return {};
  Value acc = ctx.cast(accumulator, kindOf(scale));
  return quantize(ctx, ctx.create<op::MulOp>({acc, scale}),
                  ctx.scalarLike(scale, 1.0), yZero, kindOf(yZero));
}

LogicalResult convertQLinearMatMul(NodeContext &ctx) {
  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
  Value a = centered(ctx, ctx.input(0), rowZeroPoint(ctx, ctx.input(2)));
  Value b = centered(ctx, ctx.input(3), ctx.input(5));
  Value bScale = ctx.input(4);
  Value aScale = rowZeroPoint(ctx, ctx.input(1));
  Value product = ctx.create<op::MatMulOp>({a, b});
  return ctx.setOutput(
      requantize(ctx, product, aScale, bScale, ctx.input(6), ctx.input(7)));
}

LogicalResult convertQLinearConv(NodeContext &ctx) {
  // x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
  // y_zero_point, B (int32)
  Value x = ctx.input(0), w = ctx.input(3);
  Value accumulator = integerConv(ctx, x, ctx.input(2), w, ctx.input(5));
  if (!accumulator)
    return failure();
  if (ctx.hasInput(8)) {
    Value bias = ctx.cast(ctx.input(8), ElementKind::Float64);
    SmallVector<int64_t> shape(rankOf(accumulator) - 1, 1);
    shape[0] = shapeOf(bias)[0];
    accumulator = ctx.create<op::AddOp>({accumulator, ctx.reshape(bias, shape)});
  }
  Value wScale = ctx.input(4);
  if (rankOf(wScale) == 1 && shapeOf(wScale)[0] != 1) {
    SmallVector<int64_t> shape(rankOf(accumulator) - 1, 1);
    shape[0] = shapeOf(wScale)[0];
    wScale = ctx.reshape(wScale, shape);
  }
  return ctx.setOutput(requantize(ctx, accumulator, ctx.input(1), wScale,
                                  ctx.input(6), ctx.input(7)));
}

} // namespace

void registerQuantizationConverters(ConverterRegistry &r) {
  r.add("QuantizeLinear", convertQuantizeLinear);
  r.add("DequantizeLinear", convertDequantizeLinear);
  r.add("MatMulInteger", convertMatMulInteger);
  r.add("ConvInteger", convertConvInteger);
  r.add("QLinearMatMul", convertQLinearMatMul);
  r.add("QLinearConv", convertQLinearConv);
}

} // namespace cgc::import
