//===- ConvertLinearAlgebra.cpp - Det --------------------------------------===//
//
// Det of [..., n, n] matrices as Gaussian elimination with partial pivoting,
// unrolled over the n columns (n is static) and batched over the leading
// dimensions: each step picks the row with the largest magnitude in the
// column (ArgMax), swaps it into place (GatherElements with a run-time row
// permutation), flips the sign when it moved, and eliminates below it. The
// determinant is the product of the pivots times the sign. A zero column
// (a singular matrix) gives a zero pivot and a zero determinant.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

/// Det is unrolled into about 15 ops per column.
constexpr int64_t kMaxDetOrder = 128;

LogicalResult convertDet(NodeContext &ctx) {
  Value a = ctx.input(0);
  const int64_t rank = rankOf(a);
  if (rank < 2 || shapeOf(a)[rank - 1] != shapeOf(a)[rank - 2])
    return ctx.fail("Det needs [..., n, n] square matrices");
  if (!isFloatKind(kindOf(a)))
    return ctx.fail("Det needs a floating-point input");
  const int64_t n = shapeOf(a)[rank - 1];
  if (n > kMaxDetOrder)
    return ctx.unsupported("Det of " + Twine(n) + " x " + Twine(n) +
                           " matrices (at most " + Twine(kMaxDetOrder) + ")");
  SmallVector<int64_t> batch(shapeOf(a).drop_back(2));
  SmallVector<int64_t> columnShape(rank, 1);
  columnShape[rank - 2] = n;
  HostTensor rowIota(ElementKind::Int64, {n});
  for (int64_t r = 0; r < n; ++r)
    rowIota.setInt(r, r);
  Value rows = ctx.constant(rowIota.withShape(columnShape));
  Value sign = ctx.scalarLike(a, 1.0), det;
  for (int64_t k = 0; k < n && a; ++k) {
    Value kIndex = ctx.scalar(ElementKind::Int64, k);
    // Pivot row: the largest |a[r, k]| for r >= k.
    Value column = ctx.slice(ctx.slice(a, rank - 1, k, k + 1), rank - 2, k, n);
    if (!column)
      return failure();
    Value argmax = ctx.create<op::ArgMaxOp>(
        ctx.create<op::AbsOp>(column),
        {ctx.named("axis", ctx.i64(rank - 2)),
         ctx.named("keepdims", ctx.boolean(true)),
         ctx.named("select_last_index", ctx.boolean(false))});
    Value pivotRow = ctx.add(argmax, kIndex);
    if (!pivotRow)
      return failure();
    if (k + 1 < n) {
      // Rows k and pivotRow trade places.
      Value isK = ctx.create<op::EqualOp>({rows, kIndex});
      Value isPivot = ctx.create<op::EqualOp>({rows, pivotRow});
      if (!isK || !isPivot)
        return failure();
      Value swapped = ctx.create<op::WhereOp>({isPivot, kIndex, rows});
      Value permutation = swapped ? ctx.create<op::WhereOp>({isK, pivotRow, swapped}) : Value();
      if (!permutation)
        return failure();
      permutation = ctx.create<op::ExpandOp>(
          permutation, {ctx.named("shape", ctx.i64s(shapeOf(a)))});
      a = permutation ? ctx.create<op::GatherElementsOp>(
                            {a, permutation}, {ctx.named("axis", ctx.i64(rank - 2))})
                      : Value();
      Value moved = ctx.create<op::EqualOp>({pivotRow, kIndex});
      Value flip = moved ? ctx.create<op::WhereOp>(
                               {moved, ctx.scalarLike(sign, 1.0), ctx.scalarLike(sign, -1.0)})
                         : Value();
      sign = ctx.mul(sign, flip);
      if (!a || !sign)
        return failure();
    }
    Value pivot = ctx.slice(ctx.slice(a, rank - 1, k, k + 1), rank - 2, k, k + 1);
    if (!pivot)
      return failure();
    det = det ? ctx.mul(det, pivot) : pivot;
    if (k + 1 == n)
      break;
    // Eliminate below the pivot; a zero pivot (a zero column) eliminates
    // nothing.
    Value zero = ctx.create<op::EqualOp>({pivot, ctx.scalarLike(pivot, 0.0)});
    Value safePivot = zero ? ctx.create<op::WhereOp>({zero, ctx.scalarLike(pivot, 1.0), pivot}) : Value();
    HostTensor below(kindOf(a), {n});
    for (int64_t r = 0; r < n; ++r)
      below.setFloat(r, r > k ? 1.0 : 0.0);
    Value factors = ctx.mul(ctx.div(ctx.slice(a, rank - 1, k, k + 1), safePivot),
                            ctx.constant(below.withShape(columnShape)));
    a = ctx.sub(a, ctx.mul(factors, ctx.slice(a, rank - 2, k, k + 1)));
  }
  if (!a || !det)
    return failure();
  return ctx.setOutput(ctx.reshape(ctx.mul(det, sign), batch));
}

} // namespace

void registerLinearAlgebraConverters(ConverterRegistry &r) {
  r.add("Det", convertDet);
}

} // namespace cgc::import
