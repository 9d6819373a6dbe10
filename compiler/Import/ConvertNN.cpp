//===- ConvertNN.cpp - Neural-network layers ------------------------------===//
//
// Conv, ConvTranspose, MatMul, Gemm, the normalizations, Softmax and its
// siblings, pooling, Resize and Upsample. ONNX's auto_pad is resolved into
// explicit start/end padding from the static shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace cgc::import {
namespace {

/// The window attributes of a convolution or pool, with auto_pad resolved.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, start, end;
};

FailureOr<Window> resolveWindow(NodeContext &ctx, ArrayRef<int64_t> spatial,
                                ArrayRef<int64_t> kernel, bool isPool) {
  size_t n = spatial.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = ctx.getInts("strides");
  if (w.strides.empty())
    w.strides.assign(n, 1);
  w.dilations = ctx.getInts("dilations");
  if (w.dilations.empty())
    w.dilations.assign(n, 1);
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n) {
    (void)ctx.fail("kernel_shape, strides and dilations need one entry per "
                   "spatial dimension (" + Twine(n) + ")");
    return failure();
  }
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    SmallVector<int64_t> pads = ctx.getInts("pads");
    if (pads.empty())
      pads.assign(2 * n, 0);
    if (pads.size() != 2 * n) {
      (void)ctx.fail("pads need " + Twine(2 * n) + " entries, got " +
                     Twine(pads.size()));
      return failure();
    }
    w.start.assign(pads.begin(), pads.begin() + n);
    w.end.assign(pads.begin() + n, pads.end());
    return w;
  }
  if (autoPad == "VALID") {
    w.start.assign(n, 0);
    w.end.assign(n, 0);
    return w;
  }
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    (void)ctx.fail("unknown auto_pad '" + autoPad + "'");
    return failure();
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total =
        std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - spatial[i]);
    int64_t small = total / 2, large = total - small;
    w.start.push_back(autoPad == "SAME_UPPER" ? small : large);
    w.end.push_back(autoPad == "SAME_UPPER" ? large : small);
  }
  (void)isPool;
  return w;
}

SmallVector<NamedAttribute> windowAttrs(NodeContext &ctx, const Window &w,
                                        bool withKernel) {
  SmallVector<NamedAttribute> attrs;
  if (withKernel)
    attrs.push_back(ctx.named("kernel_shape", ctx.i64s(w.kernel)));
  attrs.push_back(ctx.named("strides", ctx.i64s(w.strides)));
  attrs.push_back(ctx.named("dilations", ctx.i64s(w.dilations)));
  attrs.push_back(ctx.named("start_padding", ctx.i64s(w.start)));
  attrs.push_back(ctx.named("end_padding", ctx.i64s(w.end)));
  return attrs;
}

//===----------------------------------------------------------------------===//
// Convolution and matrix products
//===----------------------------------------------------------------------===//

LogicalResult convertConv(NodeContext &ctx) {
  Value x = ctx.input(0), w = ctx.input(1);
  if (rankOf(x) < 3 || rankOf(w) != rankOf(x))
    return ctx.fail("Conv needs N x C x D1... input and weight of equal rank");
  ArrayRef<int64_t> kernel = shapeOf(w).drop_front(2);
  SmallVector<int64_t> declared = ctx.getInts("kernel_shape");
  if (!declared.empty() && ArrayRef<int64_t>(declared) != kernel)
    return ctx.fail("kernel_shape does not match the weight's spatial shape");
  FailureOr<Window> window =
      resolveWindow(ctx, shapeOf(x).drop_front(2), kernel, false);
  if (failed(window))
    return failure();
  SmallVector<NamedAttribute> attrs = windowAttrs(ctx, *window, false);
  attrs.push_back(ctx.named("groups", ctx.i64(ctx.getInt("group", 1))));
  SmallVector<Value> operands{x, w};
  if (ctx.hasInput(2))
    operands.push_back(ctx.input(2));
  return ctx.setOutput(ctx.create<op::ConvolutionOp>(operands, attrs));
}

LogicalResult convertConvTranspose(NodeContext &ctx) {
  Value x = ctx.input(0), w = ctx.input(1);
  if (rankOf(x) < 3 || rankOf(w) != rankOf(x))
    return ctx.fail(
        "ConvTranspose needs N x C x D1... input and weight of equal rank");
  ArrayRef<int64_t> spatial = shapeOf(x).drop_front(2);
  ArrayRef<int64_t> kernel = shapeOf(w).drop_front(2);
  size_t n = spatial.size();
  SmallVector<int64_t> strides = ctx.getInts("strides");
  if (strides.empty())
    strides.assign(n, 1);
  SmallVector<int64_t> dilations = ctx.getInts("dilations");
  if (dilations.empty())
    dilations.assign(n, 1);
  SmallVector<int64_t> outputPadding = ctx.getInts("output_padding");
  if (outputPadding.empty())
    outputPadding.assign(n, 0);
  if (strides.size() != n || dilations.size() != n || outputPadding.size() != n)
    return ctx.fail("strides, dilations and output_padding need one entry "
                    "per spatial dimension");
  SmallVector<int64_t> start(n, 0), end(n, 0);
  SmallVector<int64_t> outputShape = ctx.getInts("output_shape");
  std::string autoPad = ctx.getString("auto_pad", "NOTSET");
  if (!outputShape.empty() || autoPad == "SAME_UPPER" ||
      autoPad == "SAME_LOWER") {
    if (outputShape.size() == n + 2)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    if (outputShape.empty())
      for (size_t i = 0; i < n; ++i)
        outputShape.push_back(spatial[i] * strides[i]);
    if (outputShape.size() != n)
      return ctx.fail("output_shape needs one entry per spatial dimension");
    for (size_t i = 0; i < n; ++i) {
      int64_t total = strides[i] * (spatial[i] - 1) + outputPadding[i] +
                      (kernel[i] - 1) * dilations[i] + 1 - outputShape[i];
      if (total < 0) {
        // A larger output than the transposed convolution covers: the
        // extra positions come after it (as output padding).
        outputPadding[i] -= total;
        total = 0;
      }
      int64_t half = total / 2;
      if (autoPad == "SAME_UPPER") {
        start[i] = half;
        end[i] = total - half;
      } else {
        start[i] = total - half;
        end[i] = half;
      }
    }
  } else if (autoPad == "NOTSET") {
    SmallVector<int64_t> pads = ctx.getInts("pads");
    if (!pads.empty()) {
      if (pads.size() != 2 * n)
        return ctx.fail("pads need " + Twine(2 * n) + " entries");
      start.assign(pads.begin(), pads.begin() + n);
      end.assign(pads.begin() + n, pads.end());
    }
  } else if (autoPad != "VALID") {
    return ctx.fail("unknown auto_pad '" + autoPad + "'");
  }
  SmallVector<NamedAttribute> attrs{
      ctx.named("strides", ctx.i64s(strides)),
      ctx.named("dilations", ctx.i64s(dilations)),
      ctx.named("start_padding", ctx.i64s(start)),
      ctx.named("end_padding", ctx.i64s(end)),
      ctx.named("output_padding", ctx.i64s(outputPadding)),
      ctx.named("groups", ctx.i64(ctx.getInt("group", 1)))};
  SmallVector<Value> operands{x, w};
  if (ctx.hasInput(2))
    operands.push_back(ctx.input(2));
  return ctx.setOutput(ctx.create<op::ConvTransposeOp>(operands, attrs));
}

LogicalResult convertMatMul(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::MatMulOp>({ctx.input(0), ctx.input(1)}));
}

LogicalResult convertGemm(NodeContext &ctx) {
  SmallVector<Value> operands{ctx.input(0), ctx.input(1)};
  if (ctx.hasInput(2))
    operands.push_back(ctx.input(2));
  return ctx.setOutput(ctx.create<op::GemmOp>(
      operands,
      {ctx.named("alpha", ctx.f32(ctx.getFloat("alpha", 1.0f))),
       ctx.named("beta", ctx.f32(ctx.getFloat("beta", 1.0f))),
       ctx.named("transpose_a", ctx.boolean(ctx.getInt("transA", 0))),
       ctx.named("transpose_b", ctx.boolean(ctx.getInt("transB", 0)))}));
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Training mode (opset 14+): normalizes with the batch's own mean and
/// (population) variance over every axis but the channels (1), and updates
/// the running statistics: running = input * momentum + batch * (1 -
/// momentum).
LogicalResult convertBatchNormTraining(NodeContext &ctx) {
  Value x = ctx.input(0);
  const int64_t rank = rankOf(x);
  if (rank < 2)
    return ctx.fail("BatchNormalization needs an N x C x ... input");
  if (!isFloatKind(kindOf(x)))
    return ctx.fail("BatchNormalization needs a floating-point input");
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  const int64_t channels = shapeOf(x)[1];
  SmallVector<int64_t> perChannel(rank, 1);
  perChannel[1] = channels;
  auto reduceMean = [&](Value v) {
    return ctx.create<op::ReduceMeanOp>(
        v, {ctx.named("axes", ctx.i64s(axes)),
            ctx.named("keepdims", ctx.boolean(true))});
  };
  Value mean = reduceMean(x);
  if (!mean)
    return failure();
  Value centered = ctx.sub(x, mean);
  if (!centered)
    return failure();
  Value variance = reduceMean(ctx.mul(centered, centered));
  if (!variance)
    return failure();
  const float epsilon = ctx.getFloat("epsilon", 1e-5f);
  Value deviation = ctx.create<op::SqrtOp>(ctx.add(variance, ctx.scalarLike(x, epsilon)));
  if (!deviation)
    return failure();
  Value y = ctx.add(ctx.mul(ctx.div(centered, deviation),
                            ctx.reshape(ctx.input(1), perChannel)),
                    ctx.reshape(ctx.input(2), perChannel));
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  ctx.outputs[0] = y;
  if (!y)
    return failure();
  const float momentum = ctx.getFloat("momentum", 0.9f);
  for (unsigned i = 1; i < 3 && i < ctx.getNumOutputs(); ++i) {
    if (!ctx.hasOutput(i))
      continue;
    Value running = ctx.input(2 + i);
    Value batch = ctx.reshape(i == 1 ? mean : variance, shapeOf(running));
    ctx.outputs[i] =
        ctx.add(ctx.mul(running, ctx.scalarLike(running, momentum)),
                ctx.mul(ctx.cast(batch, kindOf(running)),
                        ctx.scalarLike(running, 1.0 - momentum)));
    if (!ctx.outputs[i])
      return failure();
  }
  return success();
}

LogicalResult convertBatchNorm(NodeContext &ctx) {
  bool training = ctx.opset >= 14 ? ctx.getInt("training_mode", 0) != 0
                  : ctx.opset < 7  ? ctx.getInt("is_test", 0) == 0
                                   : false;
  if (training && ctx.opset >= 14)
    return convertBatchNormTraining(ctx);
  for (unsigned i = 1; i < ctx.getNumOutputs(); ++i)
    training = training || ctx.hasOutput(i);
  if (training)
    return ctx.unsupported("training-mode BatchNormalization before opset 14 "
                           "(saved mean and variance outputs)");
  if (ctx.opset < 9 && !ctx.getInt("spatial", 1))
    return ctx.unsupported("BatchNormalization with spatial = 0");
  return ctx.setOutput(ctx.create<op::BatchNormOp>(
      {ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4)},
      {ctx.named("epsilon", ctx.f32(ctx.getFloat("epsilon", 1e-5f)))}));
}

LogicalResult convertInstanceNorm(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::InstanceNormOp>(
      {ctx.input(0), ctx.input(1), ctx.input(2)},
      {ctx.named("epsilon", ctx.f32(ctx.getFloat("epsilon", 1e-5f)))}));
}

LogicalResult convertLayerNorm(NodeContext &ctx) {
  // The mean and inverse standard deviation outputs come from the body.
  if (ctx.hasOutput(1) || ctx.hasOutput(2))
    return ctx.expandFunctionBody();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", -1), rankOf(ctx.input(0)));
  if (failed(axis))
    return failure();
  SmallVector<Value> operands{ctx.input(0), ctx.input(1)};
  if (ctx.hasInput(2))
    operands.push_back(ctx.input(2));
  return ctx.setOutput(ctx.create<op::LayerNormOp>(
      operands, {ctx.named("axis", ctx.i64(*axis)),
                 ctx.named("epsilon", ctx.f32(ctx.getFloat("epsilon", 1e-5f)))}));
}

LogicalResult convertLRN(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::LRNOp>(
      ctx.input(0), {ctx.named("size", ctx.i64(ctx.getInt("size", 1))),
                     ctx.named("alpha", ctx.f32(ctx.getFloat("alpha", 1e-4f))),
                     ctx.named("beta", ctx.f32(ctx.getFloat("beta", 0.75f))),
                     ctx.named("bias", ctx.f32(ctx.getFloat("bias", 1.0f)))}));
}

/// Softmax, LogSoftmax and Hardmax: before opset 13 the input is coerced to
/// 2-D at `axis` (default 1); from 13 they work along one axis (default -1).
template <typename OpTy>
LogicalResult convertSoftmaxLike(NodeContext &ctx) {
  Value x = ctx.input(0);
  int64_t rank = rankOf(x);
  if (ctx.opset >= 13) {
    FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", -1), rank);
    if (failed(axis))
      return failure();
    return ctx.setOutput(
        ctx.create<OpTy>(x, {ctx.named("axis", ctx.i64(*axis))}));
  }
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", 1), rank);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (*axis == rank - 1)
    return ctx.setOutput(
        ctx.create<OpTy>(x, {ctx.named("axis", ctx.i64(*axis))}));
  Value flat = ctx.reshape(x, {product(shape.take_front(*axis)),
                               product(shape.drop_front(*axis))});
  Value result = ctx.create<OpTy>(flat, {ctx.named("axis", ctx.i64(1))});
  return ctx.setOutput(ctx.reshape(result, shape));
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// MaxPool's Indices output: for every output element, the flat index into
/// the input (N, C and the spatial axes, row-major; with storage_order 1 the
/// spatial axes column-major) of the first element of its window, in the
/// window's row-major order, that equals the maximum. Built from the pool's
/// output `y`: one strided slice of the input (padded with the lowest value)
/// per kernel offset, compared with `y`; the index of each offset is a
/// broadcast sum of small constants.
Value maxPoolIndices(NodeContext &ctx, Value x, Value y, const Window &w,
                     bool columnMajor) {
  ArrayRef<int64_t> inShape = shapeOf(x), outShape = shapeOf(y);
  const int64_t rank = inShape.size(), spatial = rank - 2;
  ArrayRef<int64_t> dims = inShape.drop_front(2);
  // Multiplier of each spatial coordinate in the flat index.
  SmallVector<int64_t> mult(spatial, 1);
  for (int64_t i = 0; i < spatial; ++i)
    for (int64_t j = 0; j < spatial; ++j)
      if (columnMajor ? j < i : j > i)
        mult[i] *= dims[j];
  const int64_t plane = product(dims);
  // Pad so that every offset's strided slice fits, with a value no element
  // exceeds and no maximum equals (a window always holds an input element).
  SmallVector<int64_t> pads(2 * rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t need = (outShape[2 + i] - 1) * w.strides[i] +
                   (w.kernel[i] - 1) * w.dilations[i] + 1;
    pads[2 + i] = w.start[i];
    pads[rank + 2 + i] = std::max<int64_t>(need - w.start[i] - dims[i], 0);
  }
  const double lowest = isFloatKind(kindOf(x))
                            ? -std::numeric_limits<double>::infinity()
                            : -std::numeric_limits<double>::max();
  Value padded = llvm::all_of(pads, [](int64_t p) { return p == 0; })
                     ? x
                     : ctx.create<op::PadOp>(x, {ctx.named("pads", ctx.i64s(pads)),
                                                 ctx.named("mode", ctx.str("constant")),
                                                 ctx.named("value", ctx.f64(lowest))});
  if (!padded)
    return {};
  // base[n, c, o...] = (n * C + c) * plane + sum_i (o_i * s_i - pad_i) * mult_i
  HostTensor channels(ElementKind::Int64, {inShape[0], inShape[1]});
  for (int64_t i = 0; i < inShape[0] * inShape[1]; ++i)
    channels.setInt(i, i * plane);
  SmallVector<int64_t> channelShape{inShape[0], inShape[1]};
  channelShape.append(spatial, 1);
  Value base = ctx.constant(channels.withShape(channelShape));
  for (int64_t i = 0; i < spatial; ++i) {
    HostTensor coordinate(ElementKind::Int64, {outShape[2 + i]});
    for (int64_t o = 0; o < outShape[2 + i]; ++o)
      coordinate.setInt(o, (o * w.strides[i] - w.start[i]) * mult[i]);
    SmallVector<int64_t> shape(rank, 1);
    shape[2 + i] = outShape[2 + i];
    base = ctx.add(base, ctx.constant(coordinate.withShape(shape)));
  }
  // Offsets from the last to the first, so that the first match wins.
  const int64_t offsets = product(w.kernel);
  Value indices;
  for (int64_t k = offsets - 1; k >= 0; --k) {
    SmallVector<int64_t> tap(spatial);
    for (int64_t i = spatial - 1, rest = k; i >= 0; --i) {
      tap[i] = rest % w.kernel[i];
      rest /= w.kernel[i];
    }
    Value window = padded;
    int64_t offset = 0;
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t begin = tap[i] * w.dilations[i];
      window = ctx.slice(window, 2 + i, begin,
                         begin + (outShape[2 + i] - 1) * w.strides[i] + 1,
                         w.strides[i]);
      offset += begin * mult[i];
    }
    Value at = ctx.add(base, ctx.scalar(ElementKind::Int64, offset));
    if (!indices) {
      indices = at;
      continue;
    }
    Value equal = window ? ctx.create<op::EqualOp>({window, y}) : Value();
    if (!equal || !at || !indices)
      return {};
    indices = ctx.create<op::WhereOp>({equal, at, indices});
  }
  return indices;
}

template <typename OpTy>
LogicalResult convertPool(NodeContext &ctx) {
  if (ctx.hasOutput(1) && !std::is_same_v<OpTy, op::MaxPoolOp>)
    return ctx.unsupported("a second output of " + ctx.getOpType());
  Value x = ctx.input(0);
  if (rankOf(x) < 3)
    return ctx.fail("pooling needs an N x C x D1... input");
  SmallVector<int64_t> kernel = ctx.getInts("kernel_shape");
  FailureOr<Window> window =
      resolveWindow(ctx, shapeOf(x).drop_front(2), kernel, true);
  if (failed(window))
    return failure();
  bool countIncludePad = ctx.getInt("count_include_pad", 0);
  if constexpr (std::is_same_v<OpTy, op::AvgPoolOp>) {
    // A zero Pad of the spatial dimensions (torchvision's Inception-v3 pads
    // before each 3x3 average pool) is the pool's own padding counted in
    // the divisor: the pool reads the input unpadded, and the Pad, when
    // nothing else reads it, is dropped with the other dead ops.
    auto pad = x.getDefiningOp<op::PadOp>();
    if (pad && pad.getMode() == "constant" &&
        pad.getValue().convertToDouble() == 0.0 && !ctx.getInt("ceil_mode", 0) &&
        (countIncludePad || llvm::all_of(window->start, [](int64_t v) { return v == 0; })) &&
        (countIncludePad || llvm::all_of(window->end, [](int64_t v) { return v == 0; }))) {
      SmallVector<int64_t> pads = op::getI64Array(pad.getPads());
      const size_t rank = pads.size() / 2, spatial = window->start.size();
      bool spatialOnly = rank == spatial + 2;
      for (size_t d = 0; d < rank && spatialOnly; ++d)
        spatialOnly = pads[d] >= 0 && pads[rank + d] >= 0 &&
                      (d >= 2 || (pads[d] == 0 && pads[rank + d] == 0));
      if (spatialOnly) {
        for (size_t i = 0; i < spatial; ++i) {
          window->start[i] += pads[2 + i];
          window->end[i] += pads[rank + 2 + i];
        }
        x = pad.getInput();
        countIncludePad = true;
      }
    }
  }
  SmallVector<NamedAttribute> attrs = windowAttrs(ctx, *window, true);
  attrs.push_back(ctx.named("ceil_mode", ctx.boolean(ctx.getInt("ceil_mode", 0))));
  if constexpr (std::is_same_v<OpTy, op::AvgPoolOp>)
    attrs.push_back(ctx.named("count_include_pad", ctx.boolean(countIncludePad)));
  if constexpr (std::is_same_v<OpTy, op::LpPoolOp>) {
    const onnx::AttributeProto *p = ctx.getAttr("p");
    int64_t value = p && p->has_f() ? static_cast<int64_t>(p->f())
                                    : ctx.getInt("p", 2);
    attrs.push_back(ctx.named("p", ctx.i64(value)));
  }
  Value y = ctx.create<OpTy>(x, attrs);
  if (!y || !ctx.hasOutput(1))
    return ctx.setOutput(y);
  // Four ops per kernel offset.
  if (product(window->kernel) > 1024)
    return ctx.unsupported("MaxPool's Indices for a window of " +
                           Twine(product(window->kernel)) + " elements (at most 1024)");
  int64_t storageOrder = ctx.getInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1)
    return ctx.fail("storage_order must be 0 or 1, not " + Twine(storageOrder));
  Value indices = maxPoolIndices(ctx, x, y, *window, storageOrder == 1);
  if (!indices)
    return failure();
  ctx.outputs = {y, indices};
  return success();
}

/// MaxUnpool: the output (of output_shape, or the pool's input shape the
/// attributes imply) is zero except where I points: each element of X goes
/// to the flat index I holds for it (the convention of MaxPool's Indices,
/// ONNX Runtime and PyTorch).
LogicalResult convertMaxUnpool(NodeContext &ctx) {
  Value x = ctx.input(0), indices = ctx.input(1);
  if (rankOf(x) < 3)
    return ctx.fail("MaxUnpool needs an N x C x D1... input");
  if (shapeOf(indices) != shapeOf(x))
    return ctx.fail("I must have the shape of X");
  const int64_t spatial = rankOf(x) - 2;
  SmallVector<int64_t> outShape;
  if (ctx.hasInput(2)) {
    FailureOr<SmallVector<int64_t>> value = ctx.requireIntsInput(2);
    if (failed(value))
      return failure();
    outShape = *value;
    if (static_cast<int64_t>(outShape.size()) != rankOf(x) ||
        outShape[0] != shapeOf(x)[0] || outShape[1] != shapeOf(x)[1])
      return ctx.fail("output_shape must keep X's rank, batch and channels");
  } else {
    // The pool's window (MaxUnpool has no auto_pad or dilations).
    FailureOr<Window> w = resolveWindow(ctx, shapeOf(x).drop_front(2),
                                        ctx.getInts("kernel_shape"), true);
    if (failed(w))
      return failure();
    outShape.assign(shapeOf(x).begin(), shapeOf(x).begin() + 2);
    for (int64_t i = 0; i < spatial; ++i) {
      if (w->kernel[i] < 1 || w->strides[i] < 1 || w->start[i] < 0 || w->end[i] < 0)
        return ctx.fail("kernel_shape and strides must be positive, pads not negative");
      outShape.push_back((shapeOf(x)[2 + i] - 1) * w->strides[i] + w->kernel[i] -
                         w->start[i] - w->end[i]);
    }
  }
  for (int64_t d : outShape)
    if (d < 1 || d > (int64_t(1) << 31))
      return ctx.fail("output dimension " + Twine(d) + " is out of range");
  const int64_t total = product(outShape), count = product(shapeOf(x));
  if (total > (int64_t(1) << 40))
    return ctx.fail("the output's " + Twine(total) + " elements are too many");
  Value zeros = ctx.create<op::ExpandOp>(ctx.scalarLike(x, 0.0),
                                         {ctx.named("shape", ctx.i64s({total}))});
  Value scattered = ctx.create<op::ScatterElementsOp>(
      {zeros, ctx.reshape(ctx.cast(indices, ElementKind::Int64), {count}),
       ctx.reshape(x, {count})},
      {ctx.named("axis", ctx.i64(0))});
  return ctx.setOutput(ctx.reshape(scattered, outShape));
}

LogicalResult convertGlobalLpPool(NodeContext &ctx) {
  const onnx::AttributeProto *p = ctx.getAttr("p");
  int64_t value =
      p && p->has_f() ? static_cast<int64_t>(p->f()) : ctx.getInt("p", 2);
  return ctx.setOutput(ctx.create<op::GlobalLpPoolOp>(
      ctx.input(0), {ctx.named("p", ctx.i64(value))}));
}

//===----------------------------------------------------------------------===//
// Resize and Upsample
//===----------------------------------------------------------------------===//

LogicalResult buildResize(NodeContext &ctx, Value x, SmallVector<int64_t> sizes,
                          SmallVector<float> scales, StringRef mode,
                          StringRef transform, StringRef nearestMode,
                          std::optional<SmallVector<float>> roi) {
  SmallVector<NamedAttribute> attrs{
      ctx.named("sizes", ctx.i64s(sizes)), ctx.named("scales", ctx.f32s(scales)),
      ctx.named("mode", ctx.str(mode)),
      ctx.named("coordinate_transformation_mode", ctx.str(transform)),
      ctx.named("nearest_mode", ctx.str(nearestMode)),
      ctx.named("cubic_coeff_a", ctx.f32(ctx.getFloat("cubic_coeff_a", -0.75f))),
      ctx.named("exclude_outside",
                ctx.boolean(ctx.getInt("exclude_outside", 0))),
      ctx.named("extrapolation_value",
                ctx.f32(ctx.getFloat("extrapolation_value", 0.0f)))};
  if (roi)
    attrs.push_back(ctx.named("roi", ctx.f32s(*roi)));
  return ctx.setOutput(ctx.create<op::ResizeOp>(x, attrs));
}

LogicalResult convertResize(NodeContext &ctx) {
  Value x = ctx.input(0);
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = shape.size();
  std::string mode = ctx.getString("mode", "nearest");
  std::string transform = ctx.opset < 11
                              ? "asymmetric"
                              : ctx.getString("coordinate_transformation_mode",
                                              "half_pixel");
  std::string nearestMode =
      ctx.opset < 11 ? "floor" : ctx.getString("nearest_mode",
                                               "round_prefer_floor");
  if (ctx.getInt("antialias", 0))
    return ctx.unsupported("Resize with antialias");
  if (ctx.hasAttr("axes"))
    return ctx.unsupported("Resize with axes");
  if (ctx.getString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.unsupported("Resize keep_aspect_ratio_policy other than stretch");

  unsigned scalesIndex = ctx.opset < 11 ? 1 : 2, sizesIndex = 3;
  SmallVector<float> scales;
  SmallVector<int64_t> sizes;
  if (ctx.hasInput(scalesIndex)) {
    FailureOr<const HostTensor *> value = ctx.requireConstantInput(scalesIndex);
    if (failed(value))
      return failure();
    for (double scale : (*value)->getFloats())
      scales.push_back(static_cast<float>(scale));
  }
  if (ctx.opset >= 11 && ctx.hasInput(sizesIndex)) {
    FailureOr<SmallVector<int64_t>> value = ctx.requireIntsInput(sizesIndex);
    if (failed(value))
      return failure();
    sizes = *value;
  }
  std::optional<SmallVector<float>> roi;
  if (transform == "tf_crop_and_resize") {
    if (!ctx.hasInput(1))
      return ctx.fail("tf_crop_and_resize needs the roi input");
    FailureOr<const HostTensor *> value = ctx.requireConstantInput(1);
    if (failed(value))
      return failure();
    roi.emplace();
    for (double v : (*value)->getFloats())
      roi->push_back(static_cast<float>(v));
  }
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != rank)
      return ctx.fail("Resize sizes need one entry per dimension");
    scales.clear();
    for (int64_t d = 0; d < rank; ++d)
      scales.push_back(static_cast<float>(sizes[d]) /
                       static_cast<float>(shape[d]));
  } else {
    if (static_cast<int64_t>(scales.size()) != rank)
      return ctx.fail("Resize needs scales (one per dimension) or sizes");
    for (int64_t d = 0; d < rank; ++d) {
      double extent = roi ? (*roi)[rank + d] - (*roi)[d] : 1.0;
      sizes.push_back(static_cast<int64_t>(
          std::floor(static_cast<double>(shape[d]) * extent * scales[d])));
    }
  }
  return buildResize(ctx, x, sizes, scales, mode, transform, nearestMode, roi);
}

LogicalResult convertUpsample(NodeContext &ctx) {
  Value x = ctx.input(0);
  ArrayRef<int64_t> shape = shapeOf(x);
  SmallVector<float> scales;
  if (ctx.opset < 9) {
    scales = ctx.getFloats("scales");
    if (scales.empty() && ctx.hasAttr("height_scale")) {
      scales.assign(shape.size(), 1.0f);
      scales[shape.size() - 2] = ctx.getFloat("height_scale", 1.0f);
      scales.back() = ctx.getFloat("width_scale", 1.0f);
    }
  } else {
    FailureOr<const HostTensor *> value = ctx.requireConstantInput(1);
    if (failed(value))
      return failure();
    for (double scale : (*value)->getFloats())
      scales.push_back(static_cast<float>(scale));
  }
  if (scales.size() != shape.size())
    return ctx.fail("Upsample needs one scale per dimension");
  SmallVector<int64_t> sizes;
  for (size_t d = 0; d < shape.size(); ++d)
    sizes.push_back(static_cast<int64_t>(std::floor(shape[d] * scales[d])));
  std::string mode = ctx.getString("mode", "nearest");
  if (mode == "bilinear")
    mode = "linear";
  return buildResize(ctx, x, sizes, scales, mode, "asymmetric", "floor",
                     std::nullopt);
}

LogicalResult convertGridSample(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::GridSampleOp>(
      {ctx.input(0), ctx.input(1)},
      {ctx.named("mode", ctx.str(ctx.getString("mode", "bilinear"))),
       ctx.named("padding_mode", ctx.str(ctx.getString("padding_mode", "zeros"))),
       ctx.named("align_corners", ctx.boolean(ctx.getInt("align_corners", 0)))}));
}

/// The DFT of `length` points along the last axis of real (+ i imag; imag
/// may be null) whose last axis holds `n` samples (zero-padded or truncated
/// to `length`): two matmuls with constant cosine and sine matrices per
/// component. Returns (real, imaginary) with `length` (or, onesided,
/// length / 2 + 1) values along the last axis; nulls after a diagnostic.
std::pair<Value, Value> dftOfLastAxis(NodeContext &ctx, Value real, Value imag,
                                      int64_t n, int64_t length, bool onesided,
                                      bool inverse) {
  ElementKind kind = kindOf(real);
  int64_t outputs = onesided ? length / 2 + 1 : length;
  // Rows past the signal (zero padding) are left out; rows past `length`
  // (truncation) too.
  int64_t rows = std::min(n, length);
  if (rows < n) {
    real = ctx.slice(real, rankOf(real) - 1, 0, rows);
    if (imag)
      imag = ctx.slice(imag, rankOf(imag) - 1, 0, rows);
  }
  if (!real)
    return {};
  HostTensor cosine(kind, {rows, outputs}), sine(kind, {rows, outputs});
  double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t k = 0; k < outputs; ++k) {
      double angle = 2.0 * M_PI * static_cast<double>((t * k) % length) /
                     static_cast<double>(length);
      cosine.setFloat(t * outputs + k, std::cos(angle) * scale);
      sine.setFloat(t * outputs + k,
                    (inverse ? std::sin(angle) : -std::sin(angle)) * scale);
    }
  Value c = ctx.constant(std::move(cosine)), s = ctx.constant(std::move(sine));
  // (a + ib)(C + iS) = (aC - bS) + i(aS + bC)
  Value outReal = ctx.create<op::MatMulOp>({real, c});
  Value outImag = ctx.create<op::MatMulOp>({real, s});
  if (imag && outReal && outImag) {
    outReal = ctx.sub(outReal, ctx.create<op::MatMulOp>({imag, s}));
    outImag = ctx.add(outImag, ctx.create<op::MatMulOp>({imag, c}));
  }
  return {outReal, outImag};
}

/// DFT as two matmuls with constant cosine and sine matrices along `axis`
/// (moved last): X = x (C - i S) forward, x (C + i S) / n inverse.
LogicalResult convertDFT(NodeContext &ctx) {
  Value input = ctx.input(0);
  int64_t rank = rankOf(input);
  if (rank < 3 || (shapeOf(input).back() != 1 && shapeOf(input).back() != 2))
    return ctx.fail("DFT input must be [batch, signal..., 1 or 2]");
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", 1), rank - 1);
  if (failed(axis))
    return failure();
  if (*axis == 0)
    return ctx.fail("DFT axis must not be the batch axis");
  bool inverse = ctx.getInt("inverse", 0), onesided = ctx.getInt("onesided", 0);
  int64_t n = shapeOf(input)[*axis];
  int64_t length = n;
  if (ctx.hasInput(1)) {
    FailureOr<double> value = ctx.requireScalarInput(1);
    if (failed(value))
      return failure();
    length = static_cast<int64_t>(*value);
    if (length <= 0)
      return ctx.fail("dft_length must be positive");
  }
  bool complex = shapeOf(input).back() == 2;
  // Signal axis last: [..., n] per component.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != *axis)
      perm.push_back(d);
  perm.push_back(*axis);
  auto component = [&](int64_t c) {
    Value part = ctx.slice(input, rank - 1, c, c + 1);
    SmallVector<int64_t> shape(shapeOf(input).drop_back());
    part = ctx.reshape(part, shape);
    return ctx.transpose(part, perm);
  };
  Value real = component(0);
  Value imag = complex ? component(1) : Value();
  auto [outReal, outImag] =
      dftOfLastAxis(ctx, real, imag, n, length, onesided, inverse);
  if (!outReal || !outImag)
    return failure();
  // Back to the input's layout, with a trailing component axis.
  SmallVector<int64_t> back(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    back[perm[i]] = i;
  auto restore = [&](Value v) {
    v = ctx.transpose(v, back);
    if (!v)
      return v;
    SmallVector<int64_t> shape(shapeOf(v));
    shape.push_back(1);
    return ctx.reshape(v, shape);
  };
  return ctx.setOutput(ctx.create<op::ConcatOp>(
      {restore(outReal), restore(outImag)},
      {ctx.named("axis", ctx.i64(rank - 1))}));
}


/// STFT: frames of the signal gathered with constant indices (frame f reads
/// samples f * frame_step ... + frame_length - 1), multiplied by the window,
/// then a DFT of each frame. frame_step and frame_length determine the
/// output's shape; the window is a run-time operand.
LogicalResult convertSTFT(NodeContext &ctx) {
  Value signal = ctx.input(0);
  if (rankOf(signal) != 3 || (shapeOf(signal)[2] != 1 && shapeOf(signal)[2] != 2))
    return ctx.fail("STFT signal must be [batch, length, 1 or 2]");
  FailureOr<double> stepValue = ctx.requireScalarInput(1);
  if (failed(stepValue))
    return failure();
  if (*stepValue < 1 || *stepValue > static_cast<double>(shapeOf(signal)[1]))
    return ctx.fail("frame_step " + Twine(static_cast<int64_t>(*stepValue)) +
                    " is not in [1, the signal's length " +
                    Twine(shapeOf(signal)[1]) + "]");
  const int64_t step = static_cast<int64_t>(*stepValue);
  Value window = ctx.hasInput(2) ? ctx.input(2) : Value();
  int64_t frameLength = -1;
  if (window) {
    if (rankOf(window) != 1)
      return ctx.fail("STFT window must be a 1-D tensor");
    frameLength = shapeOf(window)[0];
  }
  if (ctx.hasInput(3)) {
    FailureOr<double> value = ctx.requireScalarInput(3);
    if (failed(value))
      return failure();
    if (frameLength >= 0 && static_cast<double>(frameLength) != *value)
      return ctx.fail("frame_length " + Twine(static_cast<int64_t>(*value)) +
                      " differs from the window's length " + Twine(frameLength));
    if (*value < 1 || *value > static_cast<double>(shapeOf(signal)[1]))
      return ctx.fail("frame_length " + Twine(static_cast<int64_t>(*value)) +
                      " is not in [1, the signal's length " +
                      Twine(shapeOf(signal)[1]) + "]");
    frameLength = static_cast<int64_t>(*value);
  }
  if (frameLength < 1)
    return ctx.fail("STFT needs a window or a frame_length");
  const int64_t batch = shapeOf(signal)[0], length = shapeOf(signal)[1];
  if (frameLength > length)
    return ctx.fail("the window (" + Twine(frameLength) +
                    " samples) is longer than the signal (" + Twine(length) + ")");
  const int64_t frames = 1 + (length - frameLength) / step;
  // The frame indices are a constant built here.
  if (frames * frameLength > (int64_t(1) << 26))
    return ctx.unsupported("STFT of " + Twine(frames) + " frames of " + Twine(frameLength) +
                           " samples (at most 2^26 samples in all)");
  HostTensor indices(ElementKind::Int64, {frames, frameLength});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t w = 0; w < frameLength; ++w)
      indices.setInt(f * frameLength + w, f * step + w);
  Value frameIndices = ctx.constant(std::move(indices));
  auto framesOf = [&](int64_t c) -> Value {
    Value part = ctx.reshape(ctx.slice(signal, 2, c, c + 1), {batch, length});
    if (!part)
      return {};
    part = ctx.create<op::GatherOp>({part, frameIndices},
                                    {ctx.named("axis", ctx.i64(1))});
    if (window)
      part = ctx.mul(part, ctx.cast(window, kindOf(signal)));
    return part;
  };
  Value real = framesOf(0);
  Value imag = shapeOf(signal)[2] == 2 ? framesOf(1) : Value();
  if (!real || (shapeOf(signal)[2] == 2 && !imag))
    return failure();
  auto [outReal, outImag] = dftOfLastAxis(ctx, real, imag, frameLength, frameLength,
                                          ctx.getInt("onesided", 1) != 0, false);
  if (!outReal || !outImag)
    return failure();
  SmallVector<int64_t> shape(shapeOf(outReal));
  shape.push_back(1);
  return ctx.setOutput(ctx.create<op::ConcatOp>(
      {ctx.reshape(outReal, shape), ctx.reshape(outImag, shape)},
      {ctx.named("axis", ctx.i64(3))}));
}

std::string formatNumber(double value) {
  return llvm::formatv("{0}", value).str();
}

/// MelWeightMatrix: a constant [dft_length / 2 + 1, num_mel_bins] of
/// triangular filters, computed here from its (compile-time) scalar inputs
/// as ONNX's reference does: num_mel_bins + 2 points spaced evenly in mel
/// between the edges, snapped to DFT bins.
LogicalResult convertMelWeightMatrix(NodeContext &ctx) {
  double values[5];
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<double> value = ctx.requireScalarInput(i);
    if (failed(value))
      return failure();
    values[i] = *value;
  }
  const double melBins = values[0], dftLength = values[1], sampleRate = values[2];
  const double lower = values[3], upper = values[4];
  if (melBins < 1 || melBins > (1 << 16) || dftLength < 1 ||
      dftLength > (1 << 24) || sampleRate <= 0)
    return ctx.fail("num_mel_bins (" + Twine(formatNumber(melBins)) + ") must be in [1, 65536], "
                    "dft_length (" + Twine(formatNumber(dftLength)) + ") in [1, 2^24] and "
                    "sample_rate (" + Twine(formatNumber(sampleRate)) + ") positive");
  if (!(lower >= 0 && lower < upper && upper <= sampleRate / 2))
    return ctx.fail("the edges must satisfy 0 <= lower_edge_hertz (" +
                    Twine(formatNumber(lower)) + ") < upper_edge_hertz (" + Twine(formatNumber(upper)) +
                    ") <= sample_rate / 2");
  const int64_t mels = static_cast<int64_t>(melBins);
  const int64_t length = static_cast<int64_t>(dftLength);
  const int64_t sampleRateInt = static_cast<int64_t>(sampleRate);
  const int64_t bins = length / 2 + 1;
  if (bins * mels > (int64_t(1) << 26))
    return ctx.fail("a MelWeightMatrix of " + Twine(bins) + " x " + Twine(mels) +
                    " values (at most 2^26)");
  auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double lowMel = toMel(lower), highMel = toMel(upper);
  const double melStep = (highMel - lowMel) / static_cast<double>(mels + 2);
  SmallVector<int64_t> points(mels + 2);
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700.0 * (std::pow(10.0, (i * melStep + lowMel) / 2595.0) - 1.0);
    points[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(length + 1) * hz / sampleRateInt));
    points[i] = std::clamp<int64_t>(points[i], 0, bins - 1);
  }
  int64_t typeCode = ctx.getInt("output_datatype", 1);
  Type type = getElementTypeForONNX(ctx.getContext(), typeCode);
  if (!type || !isFloatKind(getElementKind(type)))
    return ctx.fail("output_datatype " + Twine(typeCode) +
                    " is not a floating-point type cgc supports");
  HostTensor result(getElementKind(type), {bins, mels});
  for (int64_t m = 0; m < mels; ++m) {
    const int64_t left = points[m], center = points[m + 1], right = points[m + 2];
    if (center == left) {
      result.setFloat(center * mels + m, 1.0);
    } else {
      for (int64_t j = left; j <= center; ++j)
        result.setFloat(j * mels + m, static_cast<double>(j - left) /
                                          static_cast<double>(center - left));
    }
    for (int64_t j = center; j < right; ++j)
      result.setFloat(j * mels + m, static_cast<double>(right - j) /
                                        static_cast<double>(right - center));
  }
  return ctx.setOutput(ctx.constant(std::move(result)));
}

} // namespace

void registerNNConverters(ConverterRegistry &r) {
  r.add("DFT", convertDFT);
  r.add("MaxUnpool", convertMaxUnpool);
  r.add("STFT", convertSTFT);
  r.add("MelWeightMatrix", convertMelWeightMatrix);
  r.add("GridSample", convertGridSample);
  r.add("Conv", convertConv);
  r.add("ConvTranspose", convertConvTranspose);
  r.add("MatMul", convertMatMul);
  r.add("Gemm", convertGemm);
  r.add("BatchNormalization", convertBatchNorm);
  r.add("InstanceNormalization", convertInstanceNorm);
  r.add("LayerNormalization", convertLayerNorm);
  r.add("LRN", convertLRN);
  r.add("Softmax", convertSoftmaxLike<op::SoftmaxOp>);
  r.add("LogSoftmax", convertSoftmaxLike<op::LogSoftmaxOp>);
  r.add("Hardmax", convertSoftmaxLike<op::HardmaxOp>);
  r.add("MaxPool", convertPool<op::MaxPoolOp>);
  r.add("AveragePool", convertPool<op::AvgPoolOp>);
  r.add("LpPool", convertPool<op::LpPoolOp>);
  r.add("GlobalAveragePool", [](NodeContext &ctx) {
    return ctx.setOutput(ctx.create<op::GlobalAvgPoolOp>(ctx.input(0)));
  });
  r.add("GlobalMaxPool", [](NodeContext &ctx) {
    return ctx.setOutput(ctx.create<op::GlobalMaxPoolOp>(ctx.input(0)));
  });
  r.add("GlobalLpPool", convertGlobalLpPool);
  r.add("Resize", convertResize);
  r.add("Upsample", convertUpsample);
}

} // namespace cgc::import
