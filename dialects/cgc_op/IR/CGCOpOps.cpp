//===- CGCOpOps.cpp - Shape functions of the cgc_op ops -------------------===//
//
// Each op's `inferReturnTypes` validates its operands and attributes and
// computes its result types. Ops built from a class in CGCOpBase.td get theirs
// from the class; the rest are here, in the order of CGCOpOps.td.
//
//===----------------------------------------------------------------------===//

#include "cgc_op/IR/CGCOpOps.h"
#include "cgc_op/IR/CGCOpShapes.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace cgc::op {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static TensorType tensorOf(Value value) { return cast<TensorType>(value.getType()); }

static Type tensorType(ArrayRef<int64_t> shape, Type element) {
  return TensorType::get(shape, element);
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

static LogicalResult checkSameElement(Loc location, TensorType a, TensorType b,
                                      StringRef aName, StringRef bName) {
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(location, aName, " and ", bName,
                             " must have the same element type, got ",
                             a.getElementType(), " and ", b.getElementType());
  return success();
}

static LogicalResult checkLength(Loc location, StringRef name,
                                 ArrayRef<int64_t> values, size_t expected,
                                 StringRef why) {
  if (values.size() != expected)
    return emitOptionalError(location, "'", name, "' must have ", expected,
                             " entries (", why, "), got ", values.size());
  return success();
}

static LogicalResult checkAllAtLeast(Loc location, StringRef name,
                                     ArrayRef<int64_t> values, int64_t min) {
  for (int64_t value : values)
    if (value < min)
      return emitOptionalError(location, "'", name, "' entries must be >= ",
                               min, ", got ", shapeString(values));
  return success();
}

/// True if `shape` broadcasts to `target` without changing it.
static bool broadcastsTo(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  if (shape.size() > target.size())
    return false;
  size_t offset = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && shape[i] != target[offset + i])
      return false;
  return true;
}

/// Validates the spatial attributes shared by convolutions and pools against
/// `spatialRank` and computes one spatial output size per dimension.
struct WindowAttrs {
  SmallVector<int64_t> kernel, strides, dilations, start, end;
};

static LogicalResult checkWindowAttrs(Loc location, const WindowAttrs &w,
                                      size_t spatialRank) {
  StringRef why = "one per spatial dimension";
  if (failed(checkLength(location, "kernel_shape", w.kernel, spatialRank, why)) ||
      failed(checkLength(location, "strides", w.strides, spatialRank, why)) ||
      failed(checkLength(location, "dilations", w.dilations, spatialRank, why)) ||
      failed(checkLength(location, "start_padding", w.start, spatialRank, why)) ||
      failed(checkLength(location, "end_padding", w.end, spatialRank, why)) ||
      failed(checkAllAtLeast(location, "kernel_shape", w.kernel, 1)) ||
      failed(checkAllAtLeast(location, "strides", w.strides, 1)) ||
      failed(checkAllAtLeast(location, "dilations", w.dilations, 1)) ||
      failed(checkAllAtLeast(location, "start_padding", w.start, 0)) ||
      failed(checkAllAtLeast(location, "end_padding", w.end, 0)))
    return failure();
  return success();
}

static LogicalResult windowOutputSizes(Loc location, ArrayRef<int64_t> spatial,
                                       const WindowAttrs &w, bool ceilMode,
                                       SmallVectorImpl<int64_t> &out) {
  for (size_t i = 0; i < spatial.size(); ++i) {
    int64_t padded = spatial[i] + w.start[i] + w.end[i];
    int64_t extent = w.dilations[i] * (w.kernel[i] - 1) + 1;
    if (extent > padded)
      return emitOptionalError(location, "window of extent ", extent,
                               " is larger than the padded input (", padded,
                               ") in spatial dimension ", i);
    int64_t numerator = padded - extent;
    int64_t size = (ceilMode ? (numerator + w.strides[i] - 1) / w.strides[i]
                             : numerator / w.strides[i]) +
                   1;
    // A window must start inside the data or the start padding.
    if (ceilMode && (size - 1) * w.strides[i] >= spatial[i] + w.start[i])
      --size;
    out.push_back(size);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::inferReturnTypes(MLIRContext *, Loc location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  return inferUnaryElementwise(location, adaptor.getInput().getType(), false,
                               inferred);
}

LogicalResult IsInfOp::inferReturnTypes(MLIRContext *, Loc location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferUnaryElementwise(location, adaptor.getInput().getType(), true,
                               inferred);
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, Loc location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  Type to = adaptor.getTo();
  if (!isElementType(to))
    return emitOptionalError(location, "'to' must be a cgc element type, got ",
                             to);
  inferred.push_back(tensorType(tensorOf(adaptor.getInput()).getShape(), to));
  return success();
}

LogicalResult ModOp::inferReturnTypes(MLIRContext *, Loc location,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (!adaptor.getFmod() && hasFloatElements(adaptor.getLhs().getType()))
    return emitOptionalError(location, "floating-point mod requires fmod = "
                                       "true");
  return inferBinaryElementwise(location, adaptor.getLhs().getType(),
                                adaptor.getRhs().getType(), false, inferred);
}

LogicalResult PowOp::inferReturnTypes(MLIRContext *, Loc location,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  TensorType base = tensorOf(adaptor.getBase());
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(location, base.getShape(),
                             tensorOf(adaptor.getExponent()).getShape(), shape)))
    return failure();
  inferred.push_back(tensorType(shape, base.getElementType()));
  return success();
}

LogicalResult BitShiftOp::inferReturnTypes(MLIRContext *, Loc location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  if (isSignedIntegerKind(getElementKind(adaptor.getLhs().getType())))
    return emitOptionalError(location, "bit_shift requires unsigned integers");
  return inferBinaryElementwise(location, adaptor.getLhs().getType(),
                                adaptor.getRhs().getType(), false, inferred);
}

LogicalResult PReluOp::inferReturnTypes(MLIRContext *, Loc location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  TensorType slope = tensorOf(adaptor.getSlope());
  if (failed(checkSameElement(location, input, slope, "input", "slope")))
    return failure();
  if (!broadcastsTo(slope.getShape(), input.getShape()))
    return emitOptionalError(location, "slope shape ",
                             shapeString(slope.getShape()),
                             " does not broadcast to the input shape ",
                             shapeString(input.getShape()));
  inferred.push_back(input.withConstant(false));
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, Loc location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  TensorType x = tensorOf(adaptor.getX()), y = tensorOf(adaptor.getY());
  if (failed(checkSameElement(location, x, y, "x", "y")))
    return failure();
  SmallVector<int64_t> xy, shape;
  if (failed(broadcastShapes(location, x.getShape(), y.getShape(), xy)) ||
      failed(broadcastShapes(location, tensorOf(adaptor.getCondition()).getShape(),
                             xy, shape)))
    return failure();
  inferred.push_back(tensorType(shape, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and matrix multiplication
//===----------------------------------------------------------------------===//

LogicalResult ConvolutionOp::inferReturnTypes(MLIRContext *, Loc location,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  TensorType weight = tensorOf(adaptor.getWeight());
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(location, "input must be N x C x D1 x ... "
                                       "(rank >= 3), got rank ",
                             rank);
  if (weight.getRank() != rank)
    return emitOptionalError(location, "weight rank ", weight.getRank(),
                             " must equal input rank ", rank);
  if (failed(checkSameElement(location, input, weight, "input", "weight")))
    return failure();
  int64_t groups = static_cast<int64_t>(adaptor.getGroups());
  int64_t channels = input.getShape()[1], filters = weight.getShape()[0];
  if (groups < 1)
    return emitOptionalError(location, "groups must be >= 1, got ", groups);
  if (channels % groups != 0 || filters % groups != 0)
    return emitOptionalError(location, "input channels (", channels,
                             ") and filters (", filters,
                             ") must be divisible by groups (", groups, ")");
  if (weight.getShape()[1] * groups != channels)
    return emitOptionalError(location, "weight has ", weight.getShape()[1],
                             " input channels per group but the input has ",
                             channels, " channels in ", groups, " group(s)");
  if (Value bias = adaptor.getBias()) {
    TensorType biasType = tensorOf(bias);
    if (failed(checkSameElement(location, input, biasType, "input", "bias")))
      return failure();
    if (biasType.getShape() != ArrayRef<int64_t>{filters})
      return emitOptionalError(location, "bias must have shape [", filters,
                               "], got ", shapeString(biasType.getShape()));
  }
  WindowAttrs w{SmallVector<int64_t>(weight.getShape().drop_front(2)),
                getI64Array(adaptor.getStrides()),
                getI64Array(adaptor.getDilations()),
                getI64Array(adaptor.getStartPadding()),
                getI64Array(adaptor.getEndPadding())};
  if (failed(checkWindowAttrs(location, w, rank - 2)))
    return failure();
  SmallVector<int64_t> shape = {input.getShape()[0], filters};
  if (failed(windowOutputSizes(location, input.getShape().drop_front(2), w,
                               /*ceilMode=*/false, shape)))
    return failure();
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *, Loc location,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  TensorType weight = tensorOf(adaptor.getWeight());
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(location, "input must be N x C x D1 x ... "
                                       "(rank >= 3), got rank ",
                             rank);
  if (weight.getRank() != rank)
    return emitOptionalError(location, "weight rank ", weight.getRank(),
                             " must equal input rank ", rank);
  if (failed(checkSameElement(location, input, weight, "input", "weight")))
    return failure();
  int64_t groups = static_cast<int64_t>(adaptor.getGroups());
  if (groups < 1 || input.getShape()[1] % groups != 0)
    return emitOptionalError(location, "input channels (", input.getShape()[1],
                             ") must be divisible by groups (", groups, ")");
  if (weight.getShape()[0] != input.getShape()[1])
    return emitOptionalError(location, "weight dimension 0 (",
                             weight.getShape()[0],
                             ") must equal the input channels (",
                             input.getShape()[1], ")");
  int64_t filters = weight.getShape()[1] * groups;
  if (Value bias = adaptor.getBias())
    if (tensorOf(bias).getShape() != ArrayRef<int64_t>{filters})
      return emitOptionalError(location, "bias must have shape [", filters,
                               "], got ", shapeString(tensorOf(bias).getShape()));
  size_t spatialRank = rank - 2;
  SmallVector<int64_t> strides = getI64Array(adaptor.getStrides());
  SmallVector<int64_t> dilations = getI64Array(adaptor.getDilations());
  SmallVector<int64_t> start = getI64Array(adaptor.getStartPadding());
  SmallVector<int64_t> end = getI64Array(adaptor.getEndPadding());
  SmallVector<int64_t> outputPadding = getI64Array(adaptor.getOutputPadding());
  StringRef why = "one per spatial dimension";
  if (failed(checkLength(location, "strides", strides, spatialRank, why)) ||
      failed(checkLength(location, "dilations", dilations, spatialRank, why)) ||
      failed(checkLength(location, "start_padding", start, spatialRank, why)) ||
      failed(checkLength(location, "end_padding", end, spatialRank, why)) ||
      failed(checkLength(location, "output_padding", outputPadding, spatialRank, why)) ||
      failed(checkAllAtLeast(location, "strides", strides, 1)) ||
      failed(checkAllAtLeast(location, "dilations", dilations, 1)) ||
      failed(checkAllAtLeast(location, "output_padding", outputPadding, 0)))
    return failure();
  SmallVector<int64_t> shape = {input.getShape()[0], filters};
  for (size_t i = 0; i < spatialRank; ++i) {
    int64_t kernel = weight.getShape()[2 + i];
    int64_t size = strides[i] * (input.getShape()[2 + i] - 1) +
                   outputPadding[i] + dilations[i] * (kernel - 1) + 1 -
                   start[i] - end[i];
    if (size < 0)
      return emitOptionalError(location, "output spatial dimension ", i,
                               " would be negative (", size, ")");
    shape.push_back(size);
  }
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, Loc location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  TensorType a = tensorOf(adaptor.getA()), b = tensorOf(adaptor.getB());
  if (failed(checkSameElement(location, a, b, "a", "b")))
    return failure();
  if (a.getRank() < 1 || b.getRank() < 1)
    return emitOptionalError(location, "matmul operands must have rank >= 1");
  SmallVector<int64_t> aShape(a.getShape()), bShape(b.getShape());
  bool aVector = aShape.size() == 1, bVector = bShape.size() == 1;
  if (aVector)
    aShape.insert(aShape.begin(), 1);
  else if (adaptor.getTransposeA())
    std::swap(aShape[aShape.size() - 1], aShape[aShape.size() - 2]);
  if (bVector)
    bShape.push_back(1);
  else if (adaptor.getTransposeB())
    std::swap(bShape[bShape.size() - 1], bShape[bShape.size() - 2]);
  int64_t m = aShape[aShape.size() - 2], k = aShape.back();
  int64_t kb = bShape[bShape.size() - 2], n = bShape.back();
  if (k != kb)
    return emitOptionalError(location, "contraction dimensions differ: ", k,
                             " (a) vs ", kb, " (b)");
  SmallVector<int64_t> batch;
  if (failed(broadcastShapes(location, ArrayRef(aShape).drop_back(2),
                             ArrayRef(bShape).drop_back(2), batch)))
    return failure();
  SmallVector<int64_t> shape(batch);
  if (!aVector)
    shape.push_back(m);
  if (!bVector)
    shape.push_back(n);
  inferred.push_back(tensorType(shape, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, Loc location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  TensorType a = tensorOf(adaptor.getA()), b = tensorOf(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(location, "gemm operands a and b must be 2-D");
  if (failed(checkSameElement(location, a, b, "a", "b")))
    return failure();
  int64_t m = a.getShape()[adaptor.getTransposeA() ? 1 : 0];
  int64_t k = a.getShape()[adaptor.getTransposeA() ? 0 : 1];
  int64_t kb = b.getShape()[adaptor.getTransposeB() ? 1 : 0];
  int64_t n = b.getShape()[adaptor.getTransposeB() ? 0 : 1];
  if (k != kb)
    return emitOptionalError(location, "contraction dimensions differ: ", k,
                             " (a) vs ", kb, " (b)");
  if (Value c = adaptor.getC()) {
    if (failed(checkSameElement(location, a, tensorOf(c), "a", "c")))
      return failure();
    if (!broadcastsTo(tensorOf(c).getShape(), {m, n}))
      return emitOptionalError(location, "c shape ",
                               shapeString(tensorOf(c).getShape()),
                               " does not broadcast to [", m, ", ", n, "]");
  }
  inferred.push_back(tensorType({m, n}, a.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Checks that each of `params` is a 1-D tensor of `channels` elements of the
/// input's element type.
static LogicalResult checkPerChannel(Loc location, TensorType input,
                                     int64_t channels,
                                     ArrayRef<std::pair<StringRef, Value>> params) {
  for (auto [name, value] : params) {
    TensorType type = tensorOf(value);
    if (failed(checkSameElement(location, input, type, "input", name)))
      return failure();
    if (type.getShape() != ArrayRef<int64_t>{channels})
      return emitOptionalError(location, "'", name, "' must have shape [",
                               channels, "] (one per channel), got ",
                               shapeString(type.getShape()));
  }
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, Loc location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  if (input.getRank() < 2)
    return emitOptionalError(location, "input must have rank >= 2");
  if (failed(checkPerChannel(location, input, input.getShape()[1],
                             {{"scale", adaptor.getScale()},
                              {"bias", adaptor.getBias()},
                              {"mean", adaptor.getMean()},
                              {"variance", adaptor.getVariance()}})))
    return failure();
  inferred.push_back(input.withConstant(false));
  return success();
}

LogicalResult InstanceNormOp::inferReturnTypes(MLIRContext *, Loc location,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  if (input.getRank() < 3)
    return emitOptionalError(location, "input must have rank >= 3");
  if (failed(checkPerChannel(location, input, input.getShape()[1],
                             {{"scale", adaptor.getScale()},
                              {"bias", adaptor.getBias()}})))
    return failure();
  inferred.push_back(input.withConstant(false));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, Loc location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", input.getRank());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (auto [name, value] : {std::pair<StringRef, Value>{"scale", adaptor.getScale()},
                             std::pair<StringRef, Value>{"bias", adaptor.getBias()}}) {
    if (!value)
      continue;
    TensorType type = tensorOf(value);
    if (failed(checkSameElement(location, input, type, "input", name)))
      return failure();
    if (!broadcastsTo(type.getShape(), normalized))
      return emitOptionalError(location, "'", name, "' shape ",
                               shapeString(type.getShape()),
                               " does not broadcast to the normalized shape ",
                               shapeString(normalized));
  }
  inferred.push_back(input.withConstant(false));
  return success();
}

LogicalResult LRNOp::inferReturnTypes(MLIRContext *, Loc location,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  if (input.getRank() < 3)
    return emitOptionalError(location, "input must have rank >= 3");
  if (static_cast<int64_t>(adaptor.getSize()) < 1)
    return emitOptionalError(location, "size must be >= 1");
  inferred.push_back(input.withConstant(false));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

template <typename AdaptorT>
static LogicalResult inferPool(Loc location, AdaptorT adaptor,
                               SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  if (input.getRank() < 3)
    return emitOptionalError(location, "input must be N x C x D1 x ... "
                                       "(rank >= 3), got rank ",
                             input.getRank());
  WindowAttrs w{getI64Array(adaptor.getKernelShape()),
                getI64Array(adaptor.getStrides()),
                getI64Array(adaptor.getDilations()),
                getI64Array(adaptor.getStartPadding()),
                getI64Array(adaptor.getEndPadding())};
  if (failed(checkWindowAttrs(location, w, input.getRank() - 2)))
    return failure();
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  if (failed(windowOutputSizes(location, input.getShape().drop_front(2), w,
                               adaptor.getCeilMode(), shape)))
    return failure();
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *, Loc location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool(location, adaptor, inferred);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *, Loc location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool(location, adaptor, inferred);
}

LogicalResult LpPoolOp::inferReturnTypes(MLIRContext *, Loc location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferPool(location, adaptor, inferred);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *, Loc location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  SmallVector<int64_t> shape = getI64Array(adaptor.getShape());
  if (failed(checkAllAtLeast(location, "shape", shape, 0)))
    return failure();
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  if (count != input.getNumElements())
    return emitOptionalError(location, "cannot reshape ",
                             shapeString(input.getShape()), " (",
                             input.getNumElements(), " elements) to ",
                             shapeString(shape), " (", count, " elements)");
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, Loc location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  SmallVector<int64_t> perm = getI64Array(adaptor.getPerm());
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid)
    return emitOptionalError(location, "perm ", shapeString(perm),
                             " is not a permutation of [0, ", rank, ")");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getShape()[p]);
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, Loc location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(location, "concat needs at least one input");
  TensorType first = tensorOf(inputs.front());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (auto [index, value] : llvm::enumerate(inputs)) {
    TensorType type = tensorOf(value);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return emitOptionalError(location, "input #", index, " (", Type(type),
                               ") does not match the rank and element type "
                               "of input #0 (",
                               Type(first), ")");
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != axis && type.getShape()[d] != first.getShape()[d])
        return emitOptionalError(location, "input #", index,
                                 " differs from input #0 in dimension ", d,
                                 " (", type.getShape()[d], " vs ",
                                 first.getShape()[d], ")");
    shape[axis] += type.getShape()[axis];
  }
  inferred.push_back(tensorType(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, Loc location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", input.getRank());
  SmallVector<int64_t> sizes = getI64Array(adaptor.getSizes());
  if (sizes.empty() || failed(checkAllAtLeast(location, "sizes", sizes, 0)))
    return emitOptionalError(location, "'sizes' must be non-empty and >= 0");
  int64_t total = 0;
  for (int64_t size : sizes)
    total += size;
  if (total != input.getShape()[axis])
    return emitOptionalError(location, "sizes ", shapeString(sizes), " sum to ",
                             total, " but dimension ", axis, " is ",
                             input.getShape()[axis]);
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(input.getShape());
    shape[axis] = size;
    inferred.push_back(tensorType(shape, input.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, Loc location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  size_t rank = input.getRank();
  SmallVector<int64_t> starts = getI64Array(adaptor.getStarts());
  SmallVector<int64_t> ends = getI64Array(adaptor.getEnds());
  SmallVector<int64_t> steps = getI64Array(adaptor.getSteps());
  StringRef why = "one per dimension";
  if (failed(checkLength(location, "starts", starts, rank, why)) ||
      failed(checkLength(location, "ends", ends, rank, why)) ||
      failed(checkLength(location, "steps", steps, rank, why)))
    return failure();
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = input.getShape()[d], start = starts[d], end = ends[d],
            step = steps[d];
    if (step == 0)
      return emitOptionalError(location, "step of dimension ", d,
                               " must not be 0");
    int64_t count;
    if (step > 0) {
      if (start < 0 || start > dim || end < 0 || end > dim)
        return emitOptionalError(location, "slice [", start, ", ", end,
                                 ") of dimension ", d, " (size ", dim,
                                 ") is not normalized to [0, ", dim, "]");
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      if (start < -1 || start > dim - 1 || end < -1 || end > dim - 1)
        return emitOptionalError(location, "reverse slice from ", start,
                                 " to ", end, " of dimension ", d, " (size ",
                                 dim, ") is not normalized to [-1, ", dim - 1,
                                 "]");
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    shape.push_back(count);
  }
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, Loc location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  TensorType data = tensorOf(adaptor.getData());
  TensorType indices = tensorOf(adaptor.getIndices());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(tensorType(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, Loc location,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  TensorType data = tensorOf(adaptor.getData());
  TensorType indices = tensorOf(adaptor.getIndices());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (indices.getRank() != data.getRank())
    return emitOptionalError(location, "indices rank ", indices.getRank(),
                             " must equal data rank ", data.getRank());
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", data.getRank());
  inferred.push_back(tensorType(indices.getShape(), data.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, Loc location,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  int64_t rank = input.getRank();
  SmallVector<int64_t> pads = getI64Array(adaptor.getPads());
  if (failed(checkLength(location, "pads", pads, 2 * rank,
                         "begin values then end values, one per dimension")))
    return failure();
  bool reflect = adaptor.getMode() == "reflect";
  bool edge = adaptor.getMode() == "edge";
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getShape()[d];
    int64_t size = dim + pads[d] + pads[rank + d];
    if (size < 0)
      return emitOptionalError(location, "padding makes dimension ", d,
                               " negative (", size, ")");
    int64_t grow = std::max(pads[d], pads[rank + d]);
    if (reflect && grow > 0 && grow >= dim)
      return emitOptionalError(location, "reflect padding of ", grow,
                               " needs dimension ", d,
                               " to be larger than the padding, got ", dim);
    if (edge && grow > 0 && dim == 0)
      return emitOptionalError(location, "edge padding needs dimension ", d,
                               " to be non-empty");
    shape.push_back(size);
  }
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *, Loc location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  SmallVector<int64_t> target = getI64Array(adaptor.getShape()), shape;
  if (failed(checkAllAtLeast(location, "shape", target, 0)) ||
      failed(broadcastShapes(location, input.getShape(), target, shape)))
    return failure();
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *, Loc location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  SmallVector<int64_t> repeats = getI64Array(adaptor.getRepeats());
  if (failed(checkLength(location, "repeats", repeats, input.getRank(),
                         "one per dimension")) ||
      failed(checkAllAtLeast(location, "repeats", repeats, 0)))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [dim, repeat] : llvm::zip(input.getShape(), repeats))
    shape.push_back(dim * repeat);
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *, Loc location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  size_t rank = input.getRank();
  SmallVector<int64_t> sizes = getI64Array(adaptor.getSizes());
  if (failed(checkLength(location, "sizes", sizes, rank, "one per dimension")) ||
      failed(checkAllAtLeast(location, "sizes", sizes, 0)))
    return failure();
  if (adaptor.getScales().size() != rank)
    return emitOptionalError(location, "'scales' must have ", rank,
                             " entries (one per dimension), got ",
                             adaptor.getScales().size());
  if (ArrayAttr roi = adaptor.getRoiAttr(); roi && roi.size() != 2 * rank)
    return emitOptionalError(location, "'roi' must have ", 2 * rank,
                             " entries (starts then ends), got ", roi.size());
  inferred.push_back(tensorType(sizes, input.getElementType()));
  return success();
}

LogicalResult UpsampleOp::inferReturnTypes(MLIRContext *, Loc location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  SmallVector<int64_t> scales = getI64Array(adaptor.getScaleSize());
  if (scales.empty() || static_cast<int64_t>(scales.size()) > input.getRank())
    return emitOptionalError(location, "'scale_size' must have between 1 and ",
                             input.getRank(), " entries, got ", scales.size());
  if (failed(checkAllAtLeast(location, "scale_size", scales, 1)))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  size_t offset = shape.size() - scales.size();
  for (size_t i = 0; i < scales.size(); ++i)
    shape[offset + i] *= scales[i];
  inferred.push_back(tensorType(shape, input.getElementType()));
  return success();
}

LogicalResult DepthToSpaceOp::inferReturnTypes(MLIRContext *, Loc location,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  int64_t b = static_cast<int64_t>(adaptor.getBlocksize());
  if (input.getRank() != 4)
    return emitOptionalError(location, "input must be N x C x H x W");
  if (b < 1 || input.getShape()[1] % (b * b) != 0)
    return emitOptionalError(location, "channels (", input.getShape()[1],
                             ") must be divisible by blocksize^2 (", b * b,
                             ")");
  ArrayRef<int64_t> s = input.getShape();
  inferred.push_back(
      tensorType({s[0], s[1] / (b * b), s[2] * b, s[3] * b}, input.getElementType()));
  return success();
}

LogicalResult SpaceToDepthOp::inferReturnTypes(MLIRContext *, Loc location,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  int64_t b = static_cast<int64_t>(adaptor.getBlocksize());
  if (input.getRank() != 4)
    return emitOptionalError(location, "input must be N x C x H x W");
  ArrayRef<int64_t> s = input.getShape();
  if (b < 1 || s[2] % b != 0 || s[3] % b != 0)
    return emitOptionalError(location, "height and width (", s[2], ", ", s[3],
                             ") must be divisible by blocksize (", b, ")");
  inferred.push_back(
      tensorType({s[0], s[1] * b * b, s[2] / b, s[3] / b}, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Scans, scatters, selection and sampling
//===----------------------------------------------------------------------===//

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, Loc location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  TensorType data = tensorOf(adaptor.getData());
  TensorType indices = tensorOf(adaptor.getIndices());
  TensorType updates = tensorOf(adaptor.getUpdates());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (failed(checkSameElement(location, data, updates, "data", "updates")))
    return failure();
  if (indices.getRank() != data.getRank())
    return emitOptionalError(location, "indices rank ", indices.getRank(),
                             " must equal data rank ", data.getRank());
  if (indices.getShape() != updates.getShape())
    return emitOptionalError(location, "indices shape ",
                             shapeString(indices.getShape()),
                             " must equal updates shape ",
                             shapeString(updates.getShape()));
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", data.getRank());
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && indices.getShape()[d] > data.getShape()[d])
      return emitOptionalError(location, "indices dimension ", d, " (",
                               indices.getShape()[d],
                               ") exceeds the data dimension (",
                               data.getShape()[d], ")");
  inferred.push_back(data.withConstant(false));
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, Loc location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TensorType data = tensorOf(adaptor.getData());
  TensorType indices = tensorOf(adaptor.getIndices());
  TensorType updates = tensorOf(adaptor.getUpdates());
  if (failed(checkSameElement(location, data, updates, "data", "updates")))
    return failure();
  if (indices.getRank() < 1)
    return emitOptionalError(location, "indices must have rank >= 1");
  int64_t k = indices.getShape().back();
  if (k > data.getRank())
    return emitOptionalError(location, "index tuples of length ", k,
                             " exceed the data rank ", data.getRank());
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(k));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(location, "updates shape ",
                             shapeString(updates.getShape()), " must be ",
                             shapeString(expected));
  inferred.push_back(data.withConstant(false));
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context, Loc location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  int64_t k = static_cast<int64_t>(adaptor.getK());
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(location, "axis ", axis,
                             " is out of range for rank ", input.getRank());
  if (k < 0 || k > input.getShape()[axis])
    return emitOptionalError(location, "k = ", k, " must be in [0, ",
                             input.getShape()[axis], "] (dimension ", axis,
                             ")");
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = k;
  inferred.push_back(tensorType(shape, input.getElementType()));
  inferred.push_back(tensorType(shape, Int64Type::get(context)));
  return success();
}

LogicalResult CheckOp::inferReturnTypes(MLIRContext *, Loc location, Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  if (tensorOf(adaptor.getCondition()).getNumElements() != 1)
    return emitOptionalError(location, "the condition must have one element");
  TensorType input = tensorOf(adaptor.getInput());
  inferred.push_back(tensorType(input.getShape(), input.getElementType()));
  return success();
}

LogicalResult NonMaxSuppressionOp::inferReturnTypes(
    MLIRContext *context, Loc location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  TensorType boxes = tensorOf(adaptor.getBoxes());
  TensorType scores = tensorOf(adaptor.getScores());
  if (boxes.getRank() != 3 || boxes.getShape()[2] != 4)
    return emitOptionalError(location, "boxes must be [batch, boxes, 4], not ",
                             shapeString(boxes.getShape()));
  if (scores.getRank() != 3 || scores.getShape()[0] != boxes.getShape()[0] ||
      scores.getShape()[2] != boxes.getShape()[1])
    return emitOptionalError(location, "scores must be [batch, classes, boxes] = [",
                             boxes.getShape()[0], ", C, ", boxes.getShape()[1],
                             "], not ", shapeString(scores.getShape()));
  for (Value threshold : {adaptor.getIouThreshold(), adaptor.getScoreThreshold()})
    if (tensorOf(threshold).getNumElements() != 1)
      return emitOptionalError(location, "the thresholds must have one element");
  int64_t perClass = static_cast<int64_t>(adaptor.getMaxOutputBoxesPerClass());
  if (perClass < 0)
    return emitOptionalError(location, "max_output_boxes_per_class must not be "
                                       "negative, not ", perClass);
  const int64_t batch = boxes.getShape()[0], classes = scores.getShape()[1];
  const int64_t rows = std::min(perClass, boxes.getShape()[1]);
  if (batch > (int64_t(1) << 20) || classes > (int64_t(1) << 20) ||
      batch * classes * rows > (int64_t(1) << 31))
    return emitOptionalError(location, "selects up to ", batch, " x ", classes,
                             " x ", rows, " boxes (at most 2^31)");
  inferred.push_back(tensorType({batch * classes * rows, 3}, Int64Type::get(context)));
  inferred.push_back(tensorType({}, Int64Type::get(context)));
  return success();
}

LogicalResult GridSampleOp::inferReturnTypes(MLIRContext *, Loc location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  TensorType input = tensorOf(adaptor.getInput());
  TensorType grid = tensorOf(adaptor.getGrid());
  if (input.getRank() != 4)
    return emitOptionalError(location, "input must be N x C x H x W");
  if (grid.getRank() != 4 || grid.getShape()[3] != 2)
    return emitOptionalError(location, "grid must be N x Ho x Wo x 2, got ",
                             shapeString(grid.getShape()));
  if (grid.getShape()[0] != input.getShape()[0])
    return emitOptionalError(location, "grid batch ", grid.getShape()[0],
                             " differs from input batch ",
                             input.getShape()[0]);
  if (failed(checkSameElement(location, input, grid, "input", "grid")))
    return failure();
  ArrayRef<int64_t> s = input.getShape(), g = grid.getShape();
  inferred.push_back(tensorType({s[0], s[1], g[1], g[2]}, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Folders (cgc-opt --canonicalize): structural ones. Constants are named
// references whose bytes are not in the IR, so values are folded by the
// importer (compiler/Import/Folder.cpp), not here.
//===----------------------------------------------------------------------===//

/// `input` when it already has the result's type (shape, element type and
/// constness), else null.
static OpFoldResult sameTypeInput(Value input, Value result) {
  return input.getType() == result.getType() ? OpFoldResult(input) : OpFoldResult();
}

OpFoldResult IdentityOp::fold(FoldAdaptor) {
  return sameTypeInput(getInput(), getOutput());
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  // The same type: the same element type, so nothing converts.
  return sameTypeInput(getInput(), getOutput());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (OpFoldResult same = sameTypeInput(getInput(), getOutput()))
    return same;
  // reshape(reshape(x)) is reshape(x): the row-major order is unchanged.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getOutput();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  SmallVector<int64_t> perm = getI64Array(getPerm());
  if (isIdentityPermutation(perm))
    return sameTypeInput(getInput(), getOutput());
  // transpose(transpose(x, inner), perm): output dimension i is the inner
  // result's dimension perm[i], which is x's dimension inner[perm[i]].
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  SmallVector<int64_t> composed =
      applyPermutation(ArrayRef<int64_t>(getI64Array(inner.getPerm())), perm);
  if (isIdentityPermutation(composed))
    return sameTypeInput(inner.getInput(), getOutput());
  getInputMutable().assign(inner.getInput());
  setPermAttr(Builder(getContext()).getI64ArrayAttr(composed));
  return getOutput();
}

} // namespace cgc::op

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "cgc_op/IR/CGCOpOps.cpp.inc"

void cgc::op::CGCOpDialect::registerOps() {
  addOperations<
#define GET_OP_LIST
#include "cgc_op/IR/CGCOpOps.cpp.inc"
      >();
}
