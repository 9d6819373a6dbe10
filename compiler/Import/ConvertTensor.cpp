//===- ConvertTensor.cpp - Shape and data-movement ONNX ops ---------------===//
//
// Constants, shape computations (Shape, Size, ConstantOfShape, Range,
// EyeLike: constants at import time), reshapes (Reshape, Flatten, Squeeze,
// Unsqueeze), Transpose, Concat, Split, Slice, Gather*, Pad, Expand, Tile,
// Trilu, OneHot, Compress, DepthToSpace/SpaceToDepth, Dropout (inference).
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"
#include "cgc/checked.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;

namespace cgc::import {
namespace {

/// Normalizes a list of (possibly negative) axes against `rank`; rejects
/// repeats.
FailureOr<SmallVector<int64_t>> normalizeAxes(NodeContext &ctx,
                                              ArrayRef<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    FailureOr<int64_t> normalized = ctx.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    if (llvm::is_contained(result, *normalized)) {
      (void)ctx.fail("axis " + Twine(axis) + " is repeated");
      return failure();
    }
    result.push_back(*normalized);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Constants and shape computations
//===----------------------------------------------------------------------===//

LogicalResult convertConstant(NodeContext &ctx) {
  if (const onnx::TensorProto *tensor = ctx.getTensor("value")) {
    if (tensor->data_location() == onnx::TensorProto::EXTERNAL)
      return ctx.unsupported("a Constant with external data inside a "
                             "subgraph or function body");
    HostTensor value;
    std::string error = decodeTensorProto(*tensor, value);
    if (!error.empty())
      return ctx.fail(error);
    return ctx.setOutput(ctx.constant(std::move(value)));
  }
  if (ctx.hasAttr("value_float"))
    return ctx.setOutput(
        ctx.scalar(ElementKind::Float32, ctx.getFloat("value_float", 0)));
  if (ctx.hasAttr("value_int"))
    return ctx.setOutput(
        ctx.constant(HostTensor::fromInts(ElementKind::Int64, {},
                                          {ctx.getInt("value_int", 0)})));
  if (ctx.hasAttr("value_floats")) {
    SmallVector<float> values = ctx.getFloats("value_floats");
    return ctx.setOutput(ctx.constant(HostTensor::fromFloats(
        ElementKind::Float32, {static_cast<int64_t>(values.size())},
        SmallVector<double>(values.begin(), values.end()))));
  }
  if (ctx.hasAttr("value_ints")) {
    SmallVector<int64_t> values = ctx.getInts("value_ints");
    return ctx.setOutput(ctx.constant(HostTensor::fromInts(
        ElementKind::Int64, {static_cast<int64_t>(values.size())}, values)));
  }
  if (ctx.hasAttr("sparse_value"))
    return ctx.unsupported("a sparse Constant");
  if (ctx.hasAttr("value_string") || ctx.hasAttr("value_strings"))
    return ctx.unsupported("a string Constant");
  return ctx.fail("Constant has no value attribute");
}

LogicalResult convertShape(NodeContext &ctx) {
  ArrayRef<int64_t> shape = shapeOf(ctx.input(0));
  int64_t rank = shape.size();
  int64_t start = ctx.getInt("start", 0), end = ctx.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  SmallVector<int64_t> values;
  for (int64_t i = start; i < end; ++i)
    values.push_back(shape[i]);
  return ctx.setOutput(ctx.constant(HostTensor::fromInts(
      ElementKind::Int64, {static_cast<int64_t>(values.size())}, values)));
}

LogicalResult convertSize(NodeContext &ctx) {
  return ctx.setOutput(ctx.constant(HostTensor::fromInts(
      ElementKind::Int64, {}, {product(shapeOf(ctx.input(0)))})));
}

LogicalResult convertConstantOfShape(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> shape = ctx.requireIntsInput(0);
  if (failed(shape))
    return failure();
  for (int64_t dim : *shape)
    if (dim < 0)
      return ctx.fail("ConstantOfShape dimensions must be >= 0");
  HostTensor element(ElementKind::Float32, {1});
  if (const onnx::TensorProto *tensor = ctx.getTensor("value")) {
    std::string error = decodeTensorProto(*tensor, element);
    if (!error.empty())
      return ctx.fail(error);
    if (element.getNumElements() != 1)
      return ctx.fail("ConstantOfShape value must hold one element");
  }
  int64_t count = product(*shape);
  if (count <= ctx.importer.getFoldLimit()) {
    HostTensor value(element.getKind(), *shape);
    for (int64_t i = 0; i < count; ++i)
      value.copyElement(i, element, 0);
    return ctx.setOutput(ctx.constant(std::move(value)));
  }
  // A large splat: broadcast one element.
  Value scalar = ctx.constant(element.withShape({}));
  return ctx.setOutput(
      ctx.create<op::ExpandOp>(scalar, {ctx.named("shape", ctx.i64s(*shape))}));
}

LogicalResult convertRange(NodeContext &ctx) {
  FailureOr<const HostTensor *> start = ctx.requireConstantInput(0);
  if (failed(start))
    return failure();
  FailureOr<const HostTensor *> limit = ctx.requireConstantInput(1);
  if (failed(limit))
    return failure();
  FailureOr<const HostTensor *> delta = ctx.requireConstantInput(2);
  if (failed(delta))
    return failure();
  ElementKind kind = (*start)->getKind();
  if ((*start)->getNumElements() != 1 || (*limit)->getNumElements() != 1 ||
      (*delta)->getNumElements() != 1)
    return ctx.fail("Range inputs must be scalars");
  int64_t count;
  if (isFloatKind(kind)) {
    double s = (*start)->getFloat(0), l = (*limit)->getFloat(0),
           d = (*delta)->getFloat(0);
    if (d == 0)
      return ctx.fail("Range delta must not be 0");
    count = std::max<int64_t>(static_cast<int64_t>(std::ceil((l - s) / d)), 0);
    HostTensor value(kind, {count});
    for (int64_t i = 0; i < count; ++i)
      value.setFloat(i, s + i * d);
    return ctx.setOutput(ctx.constant(std::move(value)));
  }
  int64_t s = (*start)->getInt(0), l = (*limit)->getInt(0),
          d = (*delta)->getInt(0);
  if (d == 0)
    return ctx.fail("Range delta must not be 0");
  count = std::max<int64_t>(
      static_cast<int64_t>(std::ceil(static_cast<double>(l - s) / d)), 0);
  if (count > (int64_t(1) << 31))
    return ctx.fail("Range of " + Twine(count) + " elements is too large");
  HostTensor value(kind, {count});
  for (int64_t i = 0; i < count; ++i)
    value.setInt(i, s + i * d);
  return ctx.setOutput(ctx.constant(std::move(value)));
}

LogicalResult convertEyeLike(NodeContext &ctx) {
  ArrayRef<int64_t> shape = shapeOf(ctx.input(0));
  if (shape.size() != 2)
    return ctx.fail("EyeLike input must be 2-D");
  ElementKind kind = kindOf(ctx.input(0));
  if (ctx.hasAttr("dtype")) {
    int dtype = static_cast<int>(ctx.getInt("dtype", 1));
    if (!getElementTypeForONNX(ctx.getContext(), dtype))
      return ctx.unsupported("EyeLike of " + getONNXDataTypeName(dtype));
    kind = static_cast<ElementKind>(dtype);
  }
  int64_t k = ctx.getInt("k", 0);
  HostTensor value(kind, shape);
  for (int64_t i = 0; i < shape[0]; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < shape[1])
      value.setInt(i * shape[1] + j, 1);
  }
  return ctx.setOutput(ctx.constant(std::move(value)));
}

//===----------------------------------------------------------------------===//
// Reshapes
//===----------------------------------------------------------------------===//

LogicalResult convertReshape(NodeContext &ctx) {
  SmallVector<int64_t> requested;
  if (ctx.opset < 5) {
    requested = ctx.getInts("shape");
  } else {
    FailureOr<SmallVector<int64_t>> shape = ctx.requireIntsInput(1);
    if (failed(shape))
      return failure();
    requested = *shape;
  }
  ArrayRef<int64_t> input = shapeOf(ctx.input(0));
  bool allowZero = ctx.getInt("allowzero", 0);
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, dim] : llvm::enumerate(requested)) {
    if (dim == 0 && !allowZero) {
      if (i >= input.size())
        return ctx.fail("Reshape copies dimension " + Twine(i) +
                        " (a 0 in the shape) but the input has rank " +
                        Twine(input.size()));
      dim = input[i];
    } else if (dim == -1) {
      if (inferred >= 0)
        return ctx.fail("Reshape shape has more than one -1");
      inferred = i;
      shape.push_back(1);
      continue;
    } else if (dim < -1) {
      return ctx.fail("Reshape shape has invalid dimension " + Twine(dim));
    }
    shape.push_back(dim);
    if (__builtin_mul_overflow(known, dim, &known))
      return ctx.fail("Reshape shape has more than 2^63 elements");
  }
  int64_t total = product(input);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return ctx.fail("cannot reshape " + Twine(total) +
                      " elements with the -1 in the shape");
    shape[inferred] = total / known;
  }
  return ctx.setOutput(
      ctx.create<op::ReshapeOp>(ctx.input(0), {ctx.named("shape", ctx.i64s(shape))}));
}

LogicalResult convertFlatten(NodeContext &ctx) {
  ArrayRef<int64_t> input = shapeOf(ctx.input(0));
  int64_t rank = input.size();
  int64_t axis = ctx.getInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.fail("Flatten axis is out of range for rank " + Twine(rank));
  return ctx.setOutput(
      ctx.reshape(ctx.input(0), {product(input.take_front(axis)),
                                 product(input.drop_front(axis))}));
}

LogicalResult convertSqueeze(NodeContext &ctx) {
  ArrayRef<int64_t> input = shapeOf(ctx.input(0));
  SmallVector<int64_t> axes;
  if (ctx.opset < 13) {
    axes = ctx.getInts("axes");
  } else if (ctx.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
    if (failed(values))
      return failure();
    axes = *values;
  }
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeAxes(ctx, axes, input.size());
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(input)) {
    bool squeezed = axes.empty() ? dim == 1
                                 : llvm::is_contained(*normalized, (int64_t)i);
    if (squeezed && dim != 1)
      return ctx.fail("cannot squeeze dimension " + Twine(i) + " of size " +
                      Twine(dim));
    if (!squeezed)
      shape.push_back(dim);
  }
  return ctx.setOutput(ctx.create<op::ReshapeOp>(
      ctx.input(0), {ctx.named("shape", ctx.i64s(shape))}));
}

LogicalResult convertUnsqueeze(NodeContext &ctx) {
  ArrayRef<int64_t> input = shapeOf(ctx.input(0));
  SmallVector<int64_t> axes;
  if (ctx.opset < 13) {
    axes = ctx.getInts("axes");
  } else {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
    if (failed(values))
      return failure();
    axes = *values;
  }
  int64_t rank = input.size() + axes.size();
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ctx, axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(llvm::is_contained(*normalized, i) ? 1 : input[next++]);
  return ctx.setOutput(ctx.create<op::ReshapeOp>(
      ctx.input(0), {ctx.named("shape", ctx.i64s(shape))}));
}

LogicalResult convertTranspose(NodeContext &ctx) {
  SmallVector<int64_t> perm = ctx.getInts("perm");
  if (!ctx.hasAttr("perm"))
    for (int64_t i = rankOf(ctx.input(0)) - 1; i >= 0; --i)
      perm.push_back(i);
  return ctx.setOutput(ctx.transpose(ctx.input(0), perm));
}

//===----------------------------------------------------------------------===//
// Concat, Split, Slice
//===----------------------------------------------------------------------===//

LogicalResult convertConcat(NodeContext &ctx) {
  SmallVector<Value> inputs;
  for (Value input : ctx.inputs)
    if (input)
      inputs.push_back(input);
  if (inputs.empty())
    return ctx.fail("Concat needs at least one input");
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", ctx.opset < 4 ? 1 : 0),
                        rankOf(inputs.front()));
  if (failed(axis))
    return failure();
  // One input is the input itself (DenseNet's first dense layer): no copy.
  if (inputs.size() == 1)
    return ctx.setOutput(inputs.front());
  return ctx.setOutput(
      ctx.create<op::ConcatOp>(inputs, {ctx.named("axis", ctx.i64(*axis))}));
}

LogicalResult convertSplit(NodeContext &ctx) {
  Value input = ctx.input(0);
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(input));
  if (failed(axis))
    return failure();
  int64_t dim = shapeOf(input)[*axis];
  SmallVector<int64_t> sizes;
  if (ctx.opset < 13 && ctx.hasAttr("split")) {
    sizes = ctx.getInts("split");
  } else if (ctx.opset >= 13 && ctx.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
    if (failed(values))
      return failure();
    sizes = *values;
  } else if (ctx.opset < 13 && ctx.getNumInputs() > 1 && ctx.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
    if (failed(values))
      return failure();
    sizes = *values;
  } else {
    int64_t parts = ctx.getInt("num_outputs", ctx.getNumOutputs());
    if (parts <= 0)
      return ctx.fail("Split needs at least one output");
    int64_t chunk = (dim + parts - 1) / parts;
    if (ctx.opset < 18 && dim % parts != 0)
      return ctx.fail("cannot split dimension " + Twine(dim) + " into " +
                      Twine(parts) + " equal parts");
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(std::min(chunk, dim - i * chunk), 0));
  }
  if (static_cast<int64_t>(sizes.size()) != ctx.getNumOutputs())
    return ctx.fail("Split has " + Twine(ctx.getNumOutputs()) +
                    " outputs but " + Twine(sizes.size()) + " split sizes");
  FailureOr<SmallVector<Value>> results = ctx.createN<op::SplitOp>(
      input,
      {ctx.named("axis", ctx.i64(*axis)), ctx.named("sizes", ctx.i64s(sizes))},
      sizes.size());
  if (failed(results))
    return failure();
  ctx.outputs = std::move(*results);
  return success();
}

/// Clamps ONNX Slice bounds to the normalized form of cgc_op.slice.
void normalizeSlice(int64_t dim, int64_t step, int64_t &start, int64_t &end) {
  if (start < 0)
    start = start + dim;
  if (end < 0)
    end = end < std::numeric_limits<int64_t>::min() + dim
              ? std::numeric_limits<int64_t>::min()
              : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    if (dim == 0)
      start = -1;
  }
}

LogicalResult convertSlice(NodeContext &ctx) {
  Value input = ctx.input(0);
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t rank = shape.size();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.getInts("starts");
    ends = ctx.getInts("ends");
    axes = ctx.getInts("axes");
  } else {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
    if (failed(values))
      return failure();
    starts = *values;
    values = ctx.requireIntsInput(2);
    if (failed(values))
      return failure();
    ends = *values;
    if (ctx.hasInput(3)) {
      values = ctx.requireIntsInput(3);
      if (failed(values))
        return failure();
      axes = *values;
    }
    if (ctx.hasInput(4)) {
      values = ctx.requireIntsInput(4);
      if (failed(values))
        return failure();
      steps = *values;
    }
  }
  if (starts.size() != ends.size())
    return ctx.fail("Slice starts and ends differ in length");
  if (axes.empty())
    for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return ctx.fail("Slice starts, ends, axes and steps differ in length");
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ctx, axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> allStarts(rank, 0), allEnds(shape), allSteps(rank, 1);
  for (auto [i, axis] : llvm::enumerate(*normalized)) {
    int64_t start = starts[i], end = ends[i], step = steps[i];
    if (step == 0)
      return ctx.fail("Slice step must not be 0");
    normalizeSlice(shape[axis], step, start, end);
    allStarts[axis] = start;
    allEnds[axis] = end;
    allSteps[axis] = step;
  }
  return ctx.setOutput(ctx.create<op::SliceOp>(
      input, {ctx.named("starts", ctx.i64s(allStarts)),
              ctx.named("ends", ctx.i64s(allEnds)),
              ctx.named("steps", ctx.i64s(allSteps))}));
}

//===----------------------------------------------------------------------===//
// Gather and friends
//===----------------------------------------------------------------------===//

/// "[0, 2]": where flat position `position` lies in `shape`.
std::string positionText(int64_t position, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t dim = std::max<int64_t>(shape[d], 1);
    at[d] = position % dim;
    position /= dim;
  }
  std::string text = "[";
  for (size_t d = 0; d < at.size(); ++d)
    text += (d ? ", " : "") + std::to_string(at[d]);
  return text + "]";
}

/// A constant index operand (input `input`) must index inside the data:
/// the index at flat position p must lie in [-size, size) of dimension
/// dimOf(p). At run time the driver fails the run for such an index
/// (docs/runtime.md); a constant one is an error of the model, reported here
/// at the node.
LogicalResult checkConstantIndices(NodeContext &ctx, unsigned input,
                                   function_ref<int64_t(int64_t)> dimOf) {
  const HostTensor *indices = ctx.constantInput(input);
  if (!indices)
    return success();
  ArrayRef<int64_t> dataShape = shapeOf(ctx.input(0));
  for (int64_t p = 0, n = indices->getNumElements(); p < n; ++p) {
    int64_t index = indices->getInt(p);
    int64_t dim = dimOf(p);
    int64_t size = dataShape[dim];
    if (index < -size || index >= size)
      return ctx.fail(ctx.node.op_type() + ": index " + Twine(index) +
                      " at " + ctx.getInputName(input) +
                      positionText(p, indices->getShape()) +
                      " is out of range for dimension " + Twine(dim) +
                      " of size " + Twine(size) + " (valid: " + Twine(-size) +
                      " to " + Twine(size - 1) + ")");
  }
  return success();
}

LogicalResult convertGather(NodeContext &ctx) {
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(ctx.input(0)));
  if (failed(axis))
    return failure();
  if (failed(checkConstantIndices(ctx, 1, [&](int64_t) { return *axis; })))
    return failure();
  return ctx.setOutput(ctx.create<op::GatherOp>(
      {ctx.input(0), ctx.input(1)}, {ctx.named("axis", ctx.i64(*axis))}));
}

LogicalResult convertGatherElements(NodeContext &ctx) {
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(ctx.input(0)));
  if (failed(axis))
    return failure();
  if (failed(checkConstantIndices(ctx, 1, [&](int64_t) { return *axis; })))
    return failure();
  return ctx.setOutput(ctx.create<op::GatherElementsOp>(
      {ctx.input(0), ctx.input(1)}, {ctx.named("axis", ctx.i64(*axis))}));
}

/// GatherND as a Gather over the flattened indexed dimensions: the index
/// tuples become linear offsets (negative components wrap first).
LogicalResult convertGatherND(NodeContext &ctx) {
  Value data = ctx.input(0), indices = ctx.input(1);
  ArrayRef<int64_t> dataShape = shapeOf(data), indexShape = shapeOf(indices);
  int64_t b = ctx.getInt("batch_dims", 0);
  int64_t q = indexShape.size(), r = dataShape.size();
  if (q < 1 || b < 0 || b >= std::min(q, r))
    return ctx.fail("GatherND batch_dims " + Twine(b) +
                    " does not fit the ranks of data and indices");
  int64_t k = indexShape.back();
  if (b + k > r)
    return ctx.fail("GatherND index tuples of length " + Twine(k) +
                    " exceed the data rank");
  for (int64_t i = 0; i < b; ++i)
    if (dataShape[i] != indexShape[i])
      return ctx.fail("GatherND batch dimensions of data and indices differ");
  ArrayRef<int64_t> batch = dataShape.take_front(b);
  ArrayRef<int64_t> indexed = dataShape.slice(b, k);
  ArrayRef<int64_t> rest = dataShape.drop_front(b + k);
  int64_t batchCount = product(batch), indexedCount = product(indexed);

  if (k > 0 && failed(checkConstantIndices(
                   ctx, 1, [&](int64_t p) { return b + p % k; })))
    return failure();

  // Per component: wrap negatives, scale by the row-major stride. A
  // component outside its dimension becomes the number of gathered rows, so
  // that the linear offset is out of range and the gather fails the run
  // (instead of landing on another row).
  HostTensor dims(ElementKind::Int64, {k}), strides(ElementKind::Int64, {k});
  SmallVector<int64_t> indexedStrides = rowMajorStrides(indexed);
  for (int64_t j = 0; j < k; ++j) {
    dims.setInt(j, indexed[j]);
    strides.setInt(j, indexedStrides[j]);
  }
  Value idx = ctx.cast(indices, ElementKind::Int64);
  Value zero = ctx.scalar(ElementKind::Int64, 0);
  Value dimsValue = ctx.constant(dims);
  Value negative = ctx.create<op::LessOp>({idx, zero});
  Value wrapped = ctx.create<op::WhereOp>(
      {negative, ctx.create<op::AddOp>({idx, dimsValue}), idx});
  Value inside = ctx.create<op::AndOp>(
      {ctx.create<op::GreaterOrEqualOp>({wrapped, zero}),
       ctx.create<op::LessOp>({wrapped, dimsValue})});
  Value scaled = ctx.create<op::WhereOp>(
      {inside, ctx.create<op::MulOp>({wrapped, ctx.constant(strides)}),
       ctx.scalar(ElementKind::Int64, batchCount * indexedCount)});
  Value linear = ctx.create<op::ReduceSumOp>(
      scaled,
      {ctx.named("axes", ctx.i64s({q - 1})),
       ctx.named("keepdims", ctx.boolean(false))});
  if (!linear)
    return failure();
  // Batch offsets: batch index * indexedCount.
  if (b > 0) {
    SmallVector<int64_t> offsetShape(indexShape.take_front(b));
    offsetShape.append(q - 1 - b, 1);
    HostTensor offsets(ElementKind::Int64, offsetShape);
    for (int64_t i = 0; i < batchCount; ++i)
      offsets.setInt(i, i * indexedCount);
    linear = ctx.create<op::AddOp>({linear, ctx.constant(offsets)});
  }
  SmallVector<int64_t> flatShape{batchCount * indexedCount};
  flatShape.append(rest.begin(), rest.end());
  Value flat = ctx.reshape(data, flatShape);
  Value gathered = ctx.create<op::GatherOp>({flat, linear},
                                            {ctx.named("axis", ctx.i64(0))});
  return ctx.setOutput(gathered);
}

/// "; to compute it at compile time, bind ... with --freeze-input NAME=FILE.pb"
/// for the graph inputs `value` is computed from (empty when none).
std::string freezeHint(NodeContext &ctx, Value value) {
  std::string inputs;
  for (const std::string &name : ctx.importer.getGraphInputsFeeding(value))
    inputs += " --freeze-input " + name + "=FILE.pb";
  return inputs.empty() ? std::string()
                        : "; to compute it at compile time, bind its inputs with" + inputs;
}

/// int64 zeros [n], and 0, 1, ..., n-1: a broadcast and a running sum, which
/// the importer folds into constants when small and leaves to the run when
/// not (a NonZero over 16M elements would otherwise carry 256 MB of them).
Value int64Zeros(NodeContext &ctx, int64_t n) {
  return ctx.create<op::ExpandOp>(ctx.scalar(ElementKind::Int64, 0),
                                  {ctx.named("shape", ctx.i64s({n}))});
}
Value int64Iota(NodeContext &ctx, int64_t n) {
  Value ones = ctx.create<op::ExpandOp>(ctx.scalar(ElementKind::Int64, 1),
                                        {ctx.named("shape", ctx.i64s({n}))});
  return ctx.create<op::CumSumOp>(ones, {ctx.named("axis", ctx.i64(0)),
                                         ctx.named("exclusive", ctx.boolean(true))});
}

/// Where a bool mask [n] known only at run time holds true: `positions`
/// [n] lists them first, in order (the rest hold 0, a valid index), and
/// `count` (int64, rank 0) is how many. Each true position p goes to slot
/// cumsum(mask)[p] - 1, the false ones to a spare slot n, by one scatter.
struct Selection {
  Value positions, count;
};
FailureOr<Selection> selectTrue(NodeContext &ctx, Value mask) {
  const int64_t n = shapeOf(mask)[0];
  if (n == 0)
    return Selection{ctx.constant(HostTensor::fromInts(ElementKind::Int64, {0}, {})),
                     ctx.scalar(ElementKind::Int64, 0)};
  Value running = ctx.create<op::CumSumOp>(ctx.cast(mask, ElementKind::Int64),
                                           {ctx.named("axis", ctx.i64(0))});
  Value count = ctx.reshape(ctx.slice(running, 0, n - 1, n), {});
  Value slots = ctx.create<op::WhereOp>(
      {mask, ctx.sub(running, ctx.scalar(ElementKind::Int64, 1)),
       ctx.scalar(ElementKind::Int64, double(n))});
  Value order = int64Iota(ctx, n);
  Value spare = int64Zeros(ctx, n + 1);
  Value scattered = ctx.create<op::ScatterElementsOp>({spare, slots, order},
                                                      {ctx.named("axis", ctx.i64(0))});
  Value positions = ctx.slice(scattered, 0, 0, n);
  if (!count || !positions)
    return failure();
  return Selection{positions, count};
}

/// The message for a data-dependent result in a compilation that does not
/// allow outputs with data-dependent rows.
LogicalResult refuseDataDependent(NodeContext &ctx, const Twine &what, Value steering) {
  return ctx.fail(what + " depends on the values, and this compilation does not allow "
                  "outputs with data-dependent rows (cgc-compile and cgc-run do; through "
                  "the runtime API set cgc_compile_options_t::data_dependent_rows)" +
                  freezeHint(ctx, steering));
}

/// Compress on a condition known only at run time: a gather of the
/// selected positions, whose extent along the axis is the run's count of
/// true entries (data-dependent rows on that dimension).
LogicalResult compressAtRunTime(NodeContext &ctx) {
  Value input = ctx.input(0), condition = ctx.input(1);
  if (!ctx.importer.getOptions().dataDependentRows)
    return refuseDataDependent(ctx, "the number of entries Compress selects", condition);
  int64_t axis = 0;
  if (ctx.hasAttr("axis")) {
    FailureOr<int64_t> normalized = ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(input));
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    input = ctx.reshape(input, {product(shapeOf(input))});
  }
  if (rankOf(condition) != 1)
    return ctx.fail("the Compress condition must be 1-D");
  const int64_t dim = shapeOf(input)[axis];
  Value mask = ctx.cast(condition, ElementKind::Bool);
  if (shapeOf(mask)[0] > dim)
    mask = ctx.slice(mask, 0, 0, dim);
  FailureOr<Selection> selection = selectTrue(ctx, mask);
  if (failed(selection))
    return failure();
  Value selected = ctx.create<op::GatherOp>({input, selection->positions},
                                            {ctx.named("axis", ctx.i64(axis))});
  if (!selected)
    return failure();
  ctx.importer.addDataDependentRows(selected, selection->count,
                                    "the selection of Compress '" + nodeLabel(ctx.node) + "'",
                                    axis, freezeHint(ctx, condition));
  return ctx.setOutput(selected);
}

LogicalResult convertCompress(NodeContext &ctx) {
  Value input = ctx.input(0);
  if (!ctx.constantInput(1) && !ctx.importer.isConstant(ctx.input(1)))
    return compressAtRunTime(ctx);
  FailureOr<const HostTensor *> condition = ctx.requireConstantInput(1);
  if (failed(condition))
    return failure();
  std::optional<int64_t> axis;
  if (ctx.hasAttr("axis")) {
    FailureOr<int64_t> normalized =
        ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(input));
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    input = ctx.reshape(input, {product(shapeOf(input))});
    axis = 0;
  }
  int64_t dim = shapeOf(input)[*axis];
  SmallVector<int64_t> selected;
  for (int64_t i = 0; i < (*condition)->getNumElements() && i < dim; ++i)
    if ((*condition)->getInt(i))
      selected.push_back(i);
  Value indices = ctx.constant(HostTensor::fromInts(
      ElementKind::Int64, {static_cast<int64_t>(selected.size())}, selected));
  return ctx.setOutput(ctx.create<op::GatherOp>(
      {input, indices}, {ctx.named("axis", ctx.i64(*axis))}));
}

//===----------------------------------------------------------------------===//
// Pad, Expand, Tile
//===----------------------------------------------------------------------===//

LogicalResult convertPad(NodeContext &ctx) {
  Value input = ctx.input(0);
  int64_t rank = rankOf(input);
  SmallVector<int64_t> pads;
  double value = 0.0;
  // A constant_value computed at run time is data, not shape.
  Value runtimeValue;
  if (ctx.opset < 11) {
    pads = ctx.getInts(ctx.opset < 2 ? "paddings" : "pads");
    value = ctx.getFloat("value", 0.0f);
  } else {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
    if (failed(values))
      return failure();
    pads = *values;
    if (ctx.hasInput(2) && !ctx.constantInput(2)) {
      if (llvm::cast<TensorType>(ctx.input(2).getType()).getNumElements() != 1)
        return ctx.fail("Pad's constant_value must be a scalar (one element)");
      runtimeValue = ctx.input(2);
    } else if (ctx.hasInput(2)) {
      FailureOr<double> constant = ctx.requireScalarInput(2);
      if (failed(constant))
        return failure();
      value = *constant;
    }
    if (ctx.hasInput(3)) {
      FailureOr<SmallVector<int64_t>> axesValues = ctx.requireIntsInput(3);
      if (failed(axesValues))
        return failure();
      FailureOr<SmallVector<int64_t>> axes =
          normalizeAxes(ctx, *axesValues, rank);
      if (failed(axes))
        return failure();
      if (pads.size() != 2 * axes->size())
        return ctx.fail("Pad needs two pads per axis");
      SmallVector<int64_t> full(2 * rank, 0);
      for (auto [i, axis] : llvm::enumerate(*axes)) {
        full[axis] = pads[i];
        full[rank + axis] = pads[axes->size() + i];
      }
      pads = full;
    }
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return ctx.fail("Pad needs " + Twine(2 * rank) + " pads, got " +
                    Twine(pads.size()));
  std::string mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.unsupported("Pad mode '" + mode + "'");
  // No padding in any mode is the input itself (torchvision's DenseNet
  // exports one before each transition's average pool): no copy.
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return ctx.setOutput(input);
  auto pad = [&](Value v, double with) {
    return ctx.create<op::PadOp>(v, {ctx.named("pads", ctx.i64s(pads)),
                                     ctx.named("mode", ctx.str(mode)),
                                     ctx.named("value", ctx.f64(with))});
  };
  if (!runtimeValue || mode != "constant")
    return ctx.setOutput(pad(input, value));
  // where(inside, pad(x, 0), value): `inside` pads an all-true mask of x's
  // shape with false.
  Value inside = ctx.create<op::ExpandOp>(
      ctx.scalar(ElementKind::Bool, 1.0), {ctx.named("shape", ctx.i64s(shapeOf(input)))});
  inside = inside ? pad(inside, 0.0) : Value();
  Value padded = pad(input, 0.0);
  Value fill = ctx.cast(ctx.reshape(runtimeValue, {}), kindOf(input));
  if (!inside || !padded || !fill)
    return failure();
  return ctx.setOutput(ctx.create<op::WhereOp>({inside, padded, fill}));
}

LogicalResult convertExpand(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> shape = ctx.requireIntsInput(1);
  if (failed(shape))
    return failure();
  return ctx.setOutput(ctx.create<op::ExpandOp>(
      ctx.input(0), {ctx.named("shape", ctx.i64s(*shape))}));
}

LogicalResult convertTile(NodeContext &ctx) {
  FailureOr<SmallVector<int64_t>> repeats = ctx.requireIntsInput(1);
  if (failed(repeats))
    return failure();
  return ctx.setOutput(ctx.create<op::TileOp>(
      ctx.input(0), {ctx.named("repeats", ctx.i64s(*repeats))}));
}

//===----------------------------------------------------------------------===//
// Masks and one-hot
//===----------------------------------------------------------------------===//

/// Trilu: keeps the upper (or lower) triangle from diagonal k and zeroes the
/// rest, as where(mask, x, 0): the mask is a constant for a constant k, and
/// compares constant diagonal offsets with k when k is a run-time value.
LogicalResult convertTrilu(NodeContext &ctx) {
  Value input = ctx.input(0);
  ArrayRef<int64_t> shape = shapeOf(input);
  if (shape.size() < 2)
    return ctx.fail("Trilu input must have rank >= 2");
  bool upper = ctx.getInt("upper", 1);
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  Value zero = ctx.scalarLike(input, 0);
  if (ctx.hasInput(1) && !ctx.constantInput(1)) {
    // k computed at run time: the mask compares the constant diagonal
    // offsets j - i with it.
    if (llvm::cast<TensorType>(ctx.input(1).getType()).getNumElements() != 1)
      return ctx.fail("Trilu's k must be a scalar (one element)");
    HostTensor offsets(ElementKind::Int64, {rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        offsets.setInt(i * cols + j, j - i);
    Value k = ctx.cast(ctx.reshape(ctx.input(1), {}), ElementKind::Int64);
    if (!k)
      return failure();
    Value diagonal = ctx.constant(std::move(offsets));
    Value mask = upper ? ctx.create<op::GreaterOrEqualOp>({diagonal, k})
                       : ctx.create<op::LessOrEqualOp>({diagonal, k});
    if (!mask)
      return failure();
    return ctx.setOutput(ctx.create<op::WhereOp>({mask, input, zero}));
  }
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    FailureOr<double> value = ctx.requireScalarInput(1);
    if (failed(value))
      return failure();
    k = static_cast<int64_t>(*value);
  }
  HostTensor mask(ElementKind::Bool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.setInt(i * cols + j, upper ? j - i >= k : j - i <= k);
  return ctx.setOutput(
      ctx.create<op::WhereOp>({ctx.constant(std::move(mask)), input, zero}));
}

/// OneHot: where(indices == range(depth), on, off) along `axis`, indices
/// wrapped when negative.
LogicalResult convertOneHot(NodeContext &ctx) {
  FailureOr<double> depthValue = ctx.requireScalarInput(1);
  if (failed(depthValue))
    return failure();
  int64_t depth = static_cast<int64_t>(*depthValue);
  if (depth <= 0)
    return ctx.fail("OneHot depth must be positive");
  SmallVector<int64_t> resultShape(shapeOf(ctx.input(0)));
  resultShape.push_back(depth);
  if (!tensorBytes(resultShape, sizeof(int64_t)))
    return ctx.fail("OneHot depth " + Twine(depth) +
                    " makes the result too large: " +
                    tensorSizeError(resultShape, sizeof(int64_t)));
  Value values = ctx.input(2);
  if (shapeOf(values) != ArrayRef<int64_t>{2})
    return ctx.fail("OneHot values must hold [off, on]");
  Value indices = ctx.cast(ctx.input(0), ElementKind::Int64);
  int64_t rank = rankOf(indices) + 1;
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  Value depthConstant = ctx.scalar(ElementKind::Int64, depth);
  Value negative =
      ctx.create<op::LessOp>({indices, ctx.scalar(ElementKind::Int64, 0)});
  indices = ctx.create<op::WhereOp>(
      {negative, ctx.create<op::AddOp>({indices, depthConstant}), indices});
  SmallVector<int64_t> expanded(shapeOf(ctx.input(0)));
  expanded.insert(expanded.begin() + *axis, 1);
  indices = ctx.reshape(indices, expanded);
  SmallVector<int64_t> rangeShape(rank, 1);
  rangeShape[*axis] = depth;
  HostTensor range(ElementKind::Int64, rangeShape);
  for (int64_t i = 0; i < depth; ++i)
    range.setInt(i, i);
  Value hot = ctx.create<op::EqualOp>({indices, ctx.constant(std::move(range))});
  Value off = ctx.reshape(ctx.slice(values, 0, 0, 1), {});
  Value on = ctx.reshape(ctx.slice(values, 0, 1, 2), {});
  return ctx.setOutput(ctx.create<op::WhereOp>({hot, on, off}));
}

//===----------------------------------------------------------------------===//
// Block rearrangement and Dropout
//===----------------------------------------------------------------------===//

LogicalResult convertDepthToSpace(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::DepthToSpaceOp>(
      ctx.input(0),
      {ctx.named("blocksize", ctx.i64(ctx.getInt("blocksize", 0))),
       ctx.named("mode", ctx.str(ctx.getString("mode", "DCR")))}));
}

LogicalResult convertSpaceToDepth(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::SpaceToDepthOp>(
      ctx.input(0),
      {ctx.named("blocksize", ctx.i64(ctx.getInt("blocksize", 0)))}));
}

/// Dropout at inference is the identity (and an all-true mask).
LogicalResult convertDropout(NodeContext &ctx) {
  bool training = false;
  double ratio = ctx.opset < 12 ? ctx.getFloat("ratio", 0.5f) : 0.5;
  if (ctx.opset < 7)
    training = !ctx.getInt("is_test", 0);
  if (ctx.opset >= 12) {
    if (ctx.hasInput(1)) {
      FailureOr<double> value = ctx.requireScalarInput(1);
      if (failed(value))
        return failure();
      ratio = *value;
    }
    if (ctx.hasInput(2)) {
      FailureOr<double> value = ctx.requireScalarInput(2);
      if (failed(value))
        return failure();
      training = *value != 0;
    }
  }
  if (training && ratio != 0)
    return ctx.unsupported("training-mode Dropout (random masking)");
  Value input = ctx.input(0);
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  ctx.outputs[0] = input;
  if (ctx.hasOutput(1)) {
    Value one = ctx.scalar(ElementKind::Bool, 1);
    ctx.outputs[1] = ctx.create<op::ExpandOp>(
        one, {ctx.named("shape", ctx.i64s(shapeOf(input)))});
    if (!ctx.outputs[1])
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Scans, scatters and selection
//===----------------------------------------------------------------------===//

LogicalResult convertCumSum(NodeContext &ctx) {
  FailureOr<double> axisValue = ctx.requireScalarInput(1);
  if (failed(axisValue))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(
      static_cast<int64_t>(*axisValue), rankOf(ctx.input(0)));
  if (failed(axis))
    return failure();
  return ctx.setOutput(ctx.create<op::CumSumOp>(
      ctx.input(0),
      {ctx.named("axis", ctx.i64(*axis)),
       ctx.named("exclusive", ctx.boolean(ctx.getInt("exclusive", 0))),
       ctx.named("reverse", ctx.boolean(ctx.getInt("reverse", 0)))}));
}

LogicalResult convertScatterElements(NodeContext &ctx) {
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(ctx.input(0)));
  if (failed(axis))
    return failure();
  if (failed(checkConstantIndices(ctx, 1, [&](int64_t) { return *axis; })))
    return failure();
  return ctx.setOutput(ctx.create<op::ScatterElementsOp>(
      {ctx.input(0), ctx.input(1), ctx.input(2)},
      {ctx.named("axis", ctx.i64(*axis)),
       ctx.named("reduction", ctx.str(ctx.getString("reduction", "none")))}));
}

LogicalResult convertScatterND(NodeContext &ctx) {
  ArrayRef<int64_t> indexShape = shapeOf(ctx.input(1));
  int64_t k = indexShape.empty() ? 0 : indexShape.back();
  if (k > 0 && k <= rankOf(ctx.input(0)) &&
      failed(checkConstantIndices(ctx, 1, [&](int64_t p) { return p % k; })))
    return failure();
  return ctx.setOutput(ctx.create<op::ScatterNDOp>(
      {ctx.input(0), ctx.input(1), ctx.input(2)},
      {ctx.named("reduction", ctx.str(ctx.getString("reduction", "none")))}));
}

/// TopK with a k known only at run time: every entry along the axis in
/// order, the first k of them the run's values (data-dependent rows on the
/// axis); a k outside [0, extent] fails the run.
LogicalResult topKAtRunTime(NodeContext &ctx) {
  Value input = ctx.input(0), k = ctx.input(1);
  if (!ctx.importer.getOptions().dataDependentRows)
    return refuseDataDependent(ctx, "the number of values TopK returns", k);
  if (cast<TensorType>(k.getType()).getNumElements() != 1)
    return ctx.fail("TopK's k must hold one value");
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", -1), rankOf(input));
  if (failed(axis))
    return failure();
  const int64_t extent = shapeOf(input)[*axis];
  Value count = ctx.cast(ctx.reshape(k, {}), ElementKind::Int64);
  Value below = ctx.create<op::LessOp>({count, ctx.scalar(ElementKind::Int64, 0)});
  Value above =
      ctx.create<op::GreaterOp>({count, ctx.scalar(ElementKind::Int64, double(extent))});
  Value outside = below && above ? ctx.create<op::OrOp>({below, above}) : Value();
  Value within = outside ? ctx.create<op::NotOp>(outside) : Value();
  const std::string label = nodeLabel(ctx.node);
  if (within)
    count = ctx.create<op::CheckOp>(
        {within, count},
        {ctx.named("message", ctx.str("TopK '" + label + "' got a k outside [0, " +
                                      std::to_string(extent) + "] on this run"))});
  if (!count)
    return failure();
  FailureOr<SmallVector<Value>> results = ctx.createN<op::TopKOp>(
      input,
      {ctx.named("k", ctx.i64(extent)), ctx.named("axis", ctx.i64(*axis)),
       ctx.named("largest", ctx.boolean(ctx.getInt("largest", 1)))},
      2);
  if (failed(results))
    return failure();
  for (auto [i, result] : llvm::enumerate(*results))
    ctx.importer.addDataDependentRows(
        result, count,
        std::string(i == 0 ? "the values" : "the indices") + " of TopK '" + label + "'",
        *axis, freezeHint(ctx, k));
  ctx.outputs = std::move(*results);
  return success();
}

LogicalResult convertTopK(NodeContext &ctx) {
  int64_t k;
  if (ctx.opset < 10) {
    k = ctx.getInt("k", 0);
  } else if (ctx.hasInput(1) && !ctx.constantInput(1) &&
             !ctx.importer.isConstant(ctx.input(1))) {
    return topKAtRunTime(ctx);
  } else {
    FailureOr<double> value = ctx.requireScalarInput(1);
    if (failed(value))
      return failure();
    k = static_cast<int64_t>(*value);
  }
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.getInt("axis", -1), rankOf(ctx.input(0)));
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<Value>> results = ctx.createN<op::TopKOp>(
      ctx.input(0),
      {ctx.named("k", ctx.i64(k)), ctx.named("axis", ctx.i64(*axis)),
       ctx.named("largest", ctx.boolean(ctx.getInt("largest", 1)))},
      2);
  if (failed(results))
    return failure();
  ctx.outputs = std::move(*results);
  return success();
}

//===----------------------------------------------------------------------===//
// Data-dependent shapes: computed at import time from constant inputs, or
// (NonZero) returned with the run's extent
//===----------------------------------------------------------------------===//

/// NonZero of values known only at run time: the selected flat positions
/// split into one row of coordinates per dimension, [rank, bound] with the
/// run's count on dimension 1 (a transpose, as torch.nonzero exports, brings
/// it to dimension 0).
LogicalResult nonZeroAtRunTime(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!ctx.importer.getOptions().dataDependentRows)
    return refuseDataDependent(ctx, "the number of indices NonZero returns", x);
  ArrayRef<int64_t> shape = shapeOf(x);
  const int64_t rank = shape.size();
  if (rank == 0)
    return ctx.unsupported("NonZero of a scalar computed at run time");
  const int64_t n = product(shape);
  FailureOr<Selection> selection =
      selectTrue(ctx, ctx.cast(ctx.reshape(x, {n}), ElementKind::Bool));
  if (failed(selection))
    return failure();
  SmallVector<int64_t> strides = rowMajorStrides(shape);
  SmallVector<Value> rows;
  for (int64_t d = 0; d < rank; ++d) {
    Value coordinate = selection->positions;
    if (strides[d] != 1)
      coordinate = ctx.div(coordinate, ctx.scalar(ElementKind::Int64, double(strides[d])));
    if (d > 0) // the remainder by this dimension's extent
      coordinate = ctx.sub(coordinate,
                           ctx.mul(ctx.div(coordinate, ctx.scalar(ElementKind::Int64,
                                                                  double(shape[d]))),
                                   ctx.scalar(ElementKind::Int64, double(shape[d]))));
    rows.push_back(ctx.reshape(coordinate, {1, n}));
    if (!rows.back())
      return failure();
  }
  Value indices = rows.size() == 1
                      ? rows.front()
                      : ctx.create<op::ConcatOp>(rows, {ctx.named("axis", ctx.i64(0))});
  if (!indices)
    return failure();
  ctx.importer.addDataDependentRows(indices, selection->count,
                                    "the selection of NonZero '" + nodeLabel(ctx.node) + "'",
                                    1, freezeHint(ctx, x));
  return ctx.setOutput(indices);
}

/// NonZero: computed at import time from a constant input, else at run time.
LogicalResult convertNonZero(NodeContext &ctx) {
  if (!ctx.constantInput(0) && !ctx.importer.isConstant(ctx.input(0)))
    return nonZeroAtRunTime(ctx);
  FailureOr<const HostTensor *> input = ctx.requireConstantInput(0);
  if (failed(input))
    return failure();
  const HostTensor &x = **input;
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < x.getNumElements(); ++i)
    if (x.isFloat() ? x.getFloat(i) != 0 : x.getInt(i) != 0)
      positions.push_back(i);
  int64_t rank = x.getRank(), count = positions.size();
  SmallVector<int64_t> strides = rowMajorStrides(x.getShape());
  HostTensor result(ElementKind::Int64, {rank, count});
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = positions[k];
    for (int64_t d = 0; d < rank; ++d) {
      result.setInt(d * count + k, rest / strides[d]);
      rest %= strides[d];
    }
  }
  return ctx.setOutput(ctx.constant(std::move(result)));
}

/// Unique's result shape depends on the values: the input must be known.
/// Unique of a tensor known only at run time, flattened (no axis): a stable
/// ascending sort, the starts of its runs of equal values selected (as
/// Compress selects), each run's value, first index and length gathered at
/// them. With sorted = 0 the runs are then ordered by first index. Y,
/// indices and counts have the run's count of distinct values as
/// data-dependent rows; inverse_indices has one entry per element.
LogicalResult uniqueAtRunTime(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!ctx.importer.getOptions().dataDependentRows)
    return refuseDataDependent(ctx, "the number of values Unique returns", x);
  if (ctx.hasAttr("axis"))
    return ctx.unsupported("Unique along an axis of values computed at run time (the "
                           "flattened input, without axis, is supported)" +
                           freezeHint(ctx, x));
  const int64_t n = product(shapeOf(x));
  if (n == 0)
    return ctx.unsupported("Unique of an empty tensor computed at run time");
  auto i64 = [&](double v) { return ctx.scalar(ElementKind::Int64, v); };
  auto gather = [&](Value data, Value indices) {
    return ctx.create<op::GatherOp>({data, indices}, {ctx.named("axis", ctx.i64(0))});
  };
  auto ascending = [&](Value values) {
    return ctx.createN<op::TopKOp>(values,
                                   {ctx.named("k", ctx.i64(n)), ctx.named("axis", ctx.i64(0)),
                                    ctx.named("largest", ctx.boolean(false))},
                                   2);
  };
  FailureOr<SmallVector<Value>> sortedPair = ascending(ctx.reshape(x, {n}));
  if (failed(sortedPair))
    return failure();
  Value values = (*sortedPair)[0], from = (*sortedPair)[1];
  // A run starts at 0 and wherever a value differs from the one before.
  Value starts = ctx.scalar(ElementKind::Bool, 1);
  starts = ctx.reshape(starts, {1});
  if (n > 1) {
    Value differs = ctx.create<op::NotOp>(ctx.create<op::EqualOp>(
        {ctx.slice(values, 0, 1, n), ctx.slice(values, 0, 0, n - 1)}));
    starts = ctx.create<op::ConcatOp>({starts, differs}, {ctx.named("axis", ctx.i64(0))});
  }
  FailureOr<Selection> runs = selectTrue(ctx, starts);
  if (failed(runs))
    return failure();
  Value order = int64Iota(ctx, n);
  // Run of each sorted element, and of each element in input order.
  Value runOf = ctx.sub(ctx.create<op::CumSumOp>(ctx.cast(starts, ElementKind::Int64),
                                                 {ctx.named("axis", ctx.i64(0))}),
                        i64(1));
  Value inverse = ctx.create<op::ScatterElementsOp>(
      {int64Zeros(ctx, n),
       from, runOf},
      {ctx.named("axis", ctx.i64(0))});
  Value unique = gather(values, runs->positions);
  Value first = gather(from, runs->positions);
  // A run ends where the next starts, the last one at n.
  Value next = ctx.create<op::MinOp>({ctx.add(order, i64(1)), i64(double(n - 1))});
  Value end = ctx.create<op::WhereOp>(
      {ctx.create<op::LessOp>({ctx.add(order, i64(1)), runs->count}),
       gather(runs->positions, next), i64(double(n))});
  Value counts = ctx.sub(end, runs->positions);
  if (!ctx.getInt("sorted", 1)) {
    // Runs by first index; the padding past the count sorts last.
    FailureOr<SmallVector<Value>> byFirst = ascending(ctx.create<op::WhereOp>(
        {ctx.create<op::LessOp>({order, runs->count}), first, i64(double(n))}));
    if (failed(byFirst))
      return failure();
    Value rank = (*byFirst)[1];
    unique = gather(unique, rank);
    first = gather(first, rank);
    counts = gather(counts, rank);
    Value position = ctx.create<op::ScatterElementsOp>(
        {int64Zeros(ctx, n),
         rank, order},
        {ctx.named("axis", ctx.i64(0))});
    inverse = gather(position, inverse);
  }
  if (!unique || !first || !counts || !inverse)
    return failure();
  const std::string label = nodeLabel(ctx.node);
  ctx.outputs = {unique, first, inverse, counts};
  const char *names[] = {"the values", "the first indices", nullptr, "the counts"};
  for (int i : {0, 1, 3})
    ctx.importer.addDataDependentRows(ctx.outputs[i], runs->count,
                                      std::string(names[i]) + " of Unique '" + label + "'",
                                      0, freezeHint(ctx, x));
  ctx.outputs.resize(ctx.getNumOutputs());
  return success();
}

LogicalResult convertUnique(NodeContext &ctx) {
  if (!ctx.constantInput(0) && !ctx.importer.isConstant(ctx.input(0)))
    return uniqueAtRunTime(ctx);
  FailureOr<const HostTensor *> input = ctx.requireConstantInput(0);
  if (failed(input))
    return failure();
  const HostTensor *x = *input;
  HostTensor flat;
  int64_t axis = 0;
  if (ctx.hasAttr("axis")) {
    FailureOr<int64_t> normalized =
        ctx.normalizeAxis(ctx.getInt("axis", 0), x->getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    flat = x->withShape({x->getNumElements()});
    x = &flat;
  }
  bool sorted = ctx.getInt("sorted", 1);
  ArrayRef<int64_t> shape = x->getShape();
  int64_t outer = 1, inner = 1, count = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < x->getRank(); ++d)
    inner *= shape[d];
  // Slice k along the axis, as a list of its elements.
  auto element = [&](int64_t k, int64_t j) {
    int64_t o = j / inner, i = j % inner;
    return (o * count + k) * inner + i;
  };
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < outer * inner; ++j) {
      int64_t ea = element(a, j), eb = element(b, j);
      if (x->isFloat()) {
        double va = x->getFloat(ea), vb = x->getFloat(eb);
        if (va != vb)
          return va < vb ? -1 : 1;
      } else if (x->getInt(ea) != x->getInt(eb)) {
        return x->getInt(ea) < x->getInt(eb) ? -1 : 1;
      }
    }
    return 0;
  };
  SmallVector<int64_t> firsts; // first occurrence of each distinct slice
  SmallVector<int64_t> inverse(count), counts;
  for (int64_t k = 0; k < count; ++k) {
    auto it = llvm::find_if(firsts, [&](int64_t f) { return compare(f, k) == 0; });
    if (it == firsts.end()) {
      inverse[k] = firsts.size();
      firsts.push_back(k);
      counts.push_back(1);
    } else {
      inverse[k] = it - firsts.begin();
      ++counts[inverse[k]];
    }
  }
  SmallVector<int64_t> order(firsts.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  if (sorted)
    // Equal values keep their order of first appearance (the index breaks
    // ties: std::sort, as std::stable_sort would).
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const int c = compare(firsts[a], firsts[b]);
      return c != 0 ? c < 0 : a < b;
    });
  SmallVector<int64_t> rank(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    rank[order[i]] = i;
  int64_t unique = order.size();
  SmallVector<int64_t> yShape(shape);
  yShape[axis] = unique;
  HostTensor y(x->getKind(), yShape), indices(ElementKind::Int64, {unique}),
      inverseIndices(ElementKind::Int64, {count}),
      countValues(ElementKind::Int64, {unique});
  for (int64_t u = 0; u < unique; ++u) {
    int64_t source = firsts[order[u]];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        y.copyElement((o * unique + u) * inner + i, *x,
                      (o * count + source) * inner + i);
    indices.setInt(u, source);
    countValues.setInt(u, counts[order[u]]);
  }
  for (int64_t k = 0; k < count; ++k)
    inverseIndices.setInt(k, rank[inverse[k]]);
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  HostTensor *values[] = {&y, &indices, &inverseIndices, &countValues};
  for (unsigned i = 0; i < ctx.getNumOutputs() && i < 4; ++i)
    if (ctx.hasOutput(i))
      ctx.outputs[i] = ctx.constant(std::move(*values[i]));
  return success();
}

/// ReverseSequence: along the time axis, the first sequence_lens[b] steps of
/// each batch entry b are reversed and the rest kept. Written as
/// GatherElements with index t < len ? len - 1 - t : t, computed at run time
/// from the lengths (a length past the time axis is an index error there).
LogicalResult convertReverseSequence(NodeContext &ctx) {
  Value x = ctx.input(0), lengths = ctx.input(1);
  const int64_t rank = rankOf(x);
  if (rank < 2)
    return ctx.fail("ReverseSequence needs an input of rank 2 or more");
  const int64_t batchAxis = ctx.getInt("batch_axis", 1);
  const int64_t timeAxis = ctx.getInt("time_axis", 0);
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return ctx.fail("batch_axis and time_axis must be 0 and 1 (in either order)");
  const int64_t steps = shapeOf(x)[timeAxis], batch = shapeOf(x)[batchAxis];
  if (rankOf(lengths) != 1 || shapeOf(lengths)[0] != batch)
    return ctx.fail("sequence_lens must hold one length per batch entry (" +
                    Twine(batch) + ")");
  SmallVector<int64_t> timeShape(rank, 1), batchShape(rank, 1);
  timeShape[timeAxis] = steps;
  batchShape[batchAxis] = batch;
  HostTensor iota(ElementKind::Int64, {steps});
  for (int64_t t = 0; t < steps; ++t)
    iota.setInt(t, t);
  Value time = ctx.constant(iota.withShape(timeShape));
  Value length = ctx.reshape(ctx.cast(lengths, ElementKind::Int64), batchShape);
  if (!time || !length)
    return failure();
  Value reversed = ctx.sub(ctx.sub(length, ctx.scalar(ElementKind::Int64, 1)), time);
  Value inside = ctx.create<op::LessOp>({time, length});
  if (!reversed || !inside)
    return failure();
  Value index = ctx.create<op::WhereOp>({inside, reversed, time});
  if (!index)
    return failure();
  index = ctx.create<op::ExpandOp>(index, {ctx.named("shape", ctx.i64s(shapeOf(x)))});
  if (!index)
    return failure();
  return ctx.setOutput(ctx.create<op::GatherElementsOp>(
      {x, index}, {ctx.named("axis", ctx.i64(timeAxis))}));
}

} // namespace

void registerTensorConverters(ConverterRegistry &r) {
  r.add("NonZero", convertNonZero);
  r.add("Unique", convertUnique);
  r.add("CumSum", convertCumSum);
  r.add("ScatterElements", convertScatterElements);
  r.add("Scatter", convertScatterElements);
  r.add("ScatterND", convertScatterND);
  r.add("TopK", convertTopK);
  r.add("Constant", convertConstant);
  r.add("Shape", convertShape);
  r.add("Size", convertSize);
  r.add("ConstantOfShape", convertConstantOfShape);
  r.add("Range", convertRange);
  r.add("EyeLike", convertEyeLike);
  r.add("Reshape", convertReshape);
  r.add("Flatten", convertFlatten);
  r.add("Squeeze", convertSqueeze);
  r.add("Unsqueeze", convertUnsqueeze);
  r.add("Transpose", convertTranspose);
  r.add("Concat", convertConcat);
  r.add("Split", convertSplit);
  r.add("Slice", convertSlice);
  r.add("Gather", convertGather);
  r.add("GatherElements", convertGatherElements);
  r.add("ReverseSequence", convertReverseSequence);
  r.add("GatherND", convertGatherND);
  r.add("Compress", convertCompress);
  r.add("Pad", convertPad);
  r.add("Expand", convertExpand);
  r.add("Tile", convertTile);
  r.add("Trilu", convertTrilu);
  r.add("OneHot", convertOneHot);
  r.add("DepthToSpace", convertDepthToSpace);
  r.add("SpaceToDepth", convertSpaceToDepth);
  r.add("Dropout", convertDropout);
}

} // namespace cgc::import
