//===- CGCOpShapes.cpp - Shared shape functions of cgc_op -----------------===//

#include "cgc_op/IR/CGCOpShapes.h"
#include "cgc/IR/CGCTypes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace cgc::op {

SmallVector<int64_t> cgc::op::getI64Array(ArrayAttr attr) {
  SmallVector<int64_t> values;
  if (!attr)
    return values;
  for (Attribute element : attr)
    values.push_back(cast<IntegerAttr>(element).getInt());
  return values;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

LogicalResult cgc::op::broadcastShapes(Loc location, ArrayRef<int64_t> a,
                                       ArrayRef<int64_t> b,
                                       SmallVectorImpl<int64_t> &result) {
  size_t rank = std::max(a.size(), b.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return emitOptionalError(location, "shapes ", shapeString(a), " and ",
                               shapeString(b),
                               " are not broadcast-compatible (dimension ", i,
                               " of the result: ", da, " vs ", db, ")");
    result[i] = da == 1 ? db : da;
  }
  return success();
}

LogicalResult cgc::op::inferUnaryElementwise(Loc location, Type input,
                                             bool boolResult,
                                             SmallVectorImpl<Type> &inferred) {
  auto tensor = cast<TensorType>(input);
  Type element = boolResult ? BoolType::get(input.getContext())
                            : tensor.getElementType();
  inferred.push_back(TensorType::get(tensor.getShape(), element));
  return success();
}

LogicalResult cgc::op::inferBinaryElementwise(Loc location, Type lhs, Type rhs,
                                              bool boolResult,
                                              SmallVectorImpl<Type> &inferred) {
  auto a = cast<TensorType>(lhs), b = cast<TensorType>(rhs);
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(location, "operands must have the same element "
                                       "type, got ",
                             a.getElementType(), " and ", b.getElementType());
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(location, a.getShape(), b.getShape(), shape)))
    return failure();
  Type element =
      boolResult ? BoolType::get(lhs.getContext()) : a.getElementType();
  inferred.push_back(TensorType::get(shape, element));
  return success();
}

/// Checks that `axis` is in [0, rank).
static LogicalResult checkAxis(Loc location, int64_t axis, int64_t rank,
                               StringRef what = "axis") {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(location, what, " ", axis,
                             " is out of range for rank ", rank,
                             " (expected [0, ", rank, "))");
  return success();
}

LogicalResult cgc::op::inferReduction(Loc location, Type input, ArrayAttr axes,
                                      bool keepdims,
                                      SmallVectorImpl<Type> &inferred) {
  auto tensor = cast<TensorType>(input);
  int64_t rank = tensor.getRank();
  SmallVector<bool> reduced(rank, false);
  SmallVector<int64_t> axisList = getI64Array(axes);
  if (axisList.empty())
    reduced.assign(rank, true);
  for (int64_t axis : axisList) {
    if (failed(checkAxis(location, axis, rank)))
      return failure();
    if (reduced[axis])
      return emitOptionalError(location, "axis ", axis, " is repeated");
    reduced[axis] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      shape.push_back(tensor.getShape()[i]);
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(TensorType::get(shape, tensor.getElementType()));
  return success();
}

LogicalResult cgc::op::inferArgReduction(Loc location, Type input, int64_t axis,
                                         bool keepdims,
                                         SmallVectorImpl<Type> &inferred) {
  auto tensor = cast<TensorType>(input);
  if (failed(checkAxis(location, axis, tensor.getRank())))
    return failure();
  SmallVector<int64_t> shape(tensor.getShape());
  if (keepdims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(
      TensorType::get(shape, Int64Type::get(input.getContext())));
  return success();
}

LogicalResult cgc::op::inferAxisPreserving(Loc location, Type input,
                                           int64_t axis,
                                           SmallVectorImpl<Type> &inferred) {
  auto tensor = cast<TensorType>(input);
  if (failed(checkAxis(location, axis, tensor.getRank())))
    return failure();
  inferred.push_back(tensor.withConstant(false));
  return success();
}

LogicalResult cgc::op::inferGlobalPool(Loc location, Type input,
                                       SmallVectorImpl<Type> &inferred) {
  auto tensor = cast<TensorType>(input);
  if (tensor.getRank() < 3)
    return emitOptionalError(location, "input must be N x C x D1 x ... "
                                       "(rank >= 3), got rank ",
                             tensor.getRank());
  SmallVector<int64_t> shape(tensor.getShape());
  for (int64_t i = 2, e = shape.size(); i < e; ++i)
    shape[i] = 1;
  inferred.push_back(TensorType::get(shape, tensor.getElementType()));
  return success();
}
} // namespace cgc::op

