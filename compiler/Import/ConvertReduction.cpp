//===- ConvertReduction.cpp - Reductions and arg-reductions ---------------===//
//
// ReduceSum (axes an input from opset 13) and the other Reduce* ops (axes an
// attribute through opset 17, an input from 18), with keepdims and
// noop_with_empty_axes; ArgMax and ArgMin.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

template <typename OpTy>
LogicalResult convertReduce(NodeContext &ctx, int axesInputSince) {
  Value x = ctx.input(0);
  int64_t rank = rankOf(x);
  SmallVector<int64_t> axes;
  if (ctx.opset >= axesInputSince) {
    if (ctx.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(1);
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else {
    axes = ctx.getInts("axes");
  }
  bool keepdims = ctx.getInt("keepdims", 1);
  if (axes.empty() && ctx.getInt("noop_with_empty_axes", 0))
    return ctx.setOutput(ctx.create<op::IdentityOp>(x));
  SmallVector<int64_t> normalized;
  for (int64_t axis : axes) {
    FailureOr<int64_t> value = ctx.normalizeAxis(axis, rank);
    if (failed(value))
      return failure();
    if (llvm::is_contained(normalized, *value))
      return ctx.fail("axis " + Twine(axis) + " is repeated");
    normalized.push_back(*value);
  }
  llvm::sort(normalized);
  if (rank == 0)
    return ctx.setOutput(ctx.create<op::IdentityOp>(x));
  return ctx.setOutput(ctx.create<OpTy>(
      x, {ctx.named("axes", ctx.i64s(normalized)),
          ctx.named("keepdims", ctx.boolean(keepdims))}));
}

template <typename OpTy>
LogicalResult convertArg(NodeContext &ctx) {
  Value x = ctx.input(0);
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(x));
  if (failed(axis))
    return failure();
  return ctx.setOutput(ctx.create<OpTy>(
      x, {ctx.named("axis", ctx.i64(*axis)),
          ctx.named("keepdims", ctx.boolean(ctx.getInt("keepdims", 1))),
          ctx.named("select_last_index",
                    ctx.boolean(ctx.getInt("select_last_index", 0)))}));
}

} // namespace

void registerReductionConverters(ConverterRegistry &r) {
  r.add("ReduceSum", [](NodeContext &ctx) {
    return convertReduce<op::ReduceSumOp>(ctx, 13);
  });
  r.add("ReduceMean", [](NodeContext &ctx) {
    return convertReduce<op::ReduceMeanOp>(ctx, 18);
  });
  r.add("ReduceMax", [](NodeContext &ctx) {
    return convertReduce<op::ReduceMaxOp>(ctx, 18);
  });
  r.add("ReduceMin", [](NodeContext &ctx) {
    return convertReduce<op::ReduceMinOp>(ctx, 18);
  });
  r.add("ReduceProd", [](NodeContext &ctx) {
    return convertReduce<op::ReduceProdOp>(ctx, 18);
  });
  r.add("ReduceL1", [](NodeContext &ctx) {
    return convertReduce<op::ReduceL1Op>(ctx, 18);
  });
  r.add("ReduceL2", [](NodeContext &ctx) {
    return convertReduce<op::ReduceL2Op>(ctx, 18);
  });
  r.add("ReduceLogSum", [](NodeContext &ctx) {
    return convertReduce<op::ReduceLogSumOp>(ctx, 18);
  });
  r.add("ReduceLogSumExp", [](NodeContext &ctx) {
    return convertReduce<op::ReduceLogSumExpOp>(ctx, 18);
  });
  r.add("ReduceSumSquare", [](NodeContext &ctx) {
    return convertReduce<op::ReduceSumSquareOp>(ctx, 18);
  });
  r.add("ArgMax", convertArg<op::ArgMaxOp>);
  r.add("ArgMin", convertArg<op::ArgMinOp>);
}

} // namespace cgc::import
