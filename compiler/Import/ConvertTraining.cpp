//===- ConvertTraining.cpp - The optimizers of ai.onnx.preview.training ----===//
//
// Adagrad, Adam and Momentum (standard and Nesterov) update tensors
// elementwise from a learning rate R and an update count T: one update of n
// tensors takes inputs R, T, then n of each per-tensor group (X, G, and the
// accumulators), and gives n of each output group. Each is written out as
// elementwise ops in the element type of the tensors it updates; R and T
// are run-time scalars, so the bias corrections that depend on T > 0 are
// selected at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

/// The optimizer's inputs split into groups: R, T and `groups` lists of n
/// tensors each; checks that the counts add up.
struct OptimizerInputs {
  Value rate, count;
  int64_t n = 0;
  /// group(k, i): the i-th tensor of group k (X = 0, G = 1, ...).
  SmallVector<Value> tensors;
  Value group(int64_t k, int64_t i) const { return tensors[k * n + i]; }
};

FailureOr<OptimizerInputs> splitInputs(NodeContext &ctx, int64_t groups) {
  OptimizerInputs in;
  const int64_t count = ctx.getNumInputs();
  if (count < 2 + groups || (count - 2) % groups != 0 ||
      static_cast<int64_t>(ctx.getNumOutputs()) !=
          (count - 2) / groups * (groups - 1)) {
    (void)ctx.fail("expects R, T and " + Twine(groups) +
                   " groups of tensors with one output per tensor it updates; "
                   "got " + Twine(count) + " inputs and " +
                   Twine(ctx.getNumOutputs()) + " outputs");
    return failure();
  }
  for (int64_t i = 0; i < count; ++i)
    if (!ctx.hasInput(i)) {
      (void)ctx.fail("input " + Twine(i) + " is missing");
      return failure();
    }
  in.n = (count - 2) / groups;
  ElementKind kind = kindOf(ctx.input(2));
  if (!isFloatKind(kind)) {
    (void)ctx.fail("updates floating-point tensors only");
    return failure();
  }
  for (int64_t i = 2; i < count; ++i) {
    if (kindOf(ctx.input(i)) != kind) {
      (void)ctx.fail("input " + Twine(i) + " has another element type than X");
      return failure();
    }
    in.tensors.push_back(ctx.input(i));
  }
  if (product(shapeOf(ctx.input(0))) != 1 || product(shapeOf(ctx.input(1))) != 1) {
    (void)ctx.fail("R and T must be scalars");
    return failure();
  }
  in.rate = ctx.cast(ctx.reshape(ctx.input(0), {}), kind);
  in.count = ctx.reshape(ctx.input(1), {});
  return in;
}

/// norm_coefficient * X + G.
Value regularized(NodeContext &ctx, Value x, Value g, float norm) {
  if (norm == 0.0f)
    return g;
  return ctx.add(ctx.mul(ctx.scalarLike(x, norm), x), g);
}

/// T > 0 as a boolean scalar.
Value positive(NodeContext &ctx, Value count) {
  return ctx.create<op::GreaterOp>({count, ctx.scalarLike(count, 0)});
}

LogicalResult convertAdagrad(NodeContext &ctx) {
  FailureOr<OptimizerInputs> in = splitInputs(ctx, 3);
  if (failed(in))
    return failure();
  const float decay = ctx.getFloat("decay_factor", 0.0f);
  const float epsilon = ctx.getFloat("epsilon", 0.0f);
  const float norm = ctx.getFloat("norm_coefficient", 0.0f);
  Value x0 = in->group(0, 0);
  // r / (1 + t * decay_factor)
  Value rate = ctx.div(
      in->rate, ctx.add(ctx.scalarLike(x0, 1.0),
                        ctx.mul(ctx.cast(in->count, kindOf(x0)),
                                ctx.scalarLike(x0, decay))));
  ctx.outputs.assign(2 * in->n, Value());
  for (int64_t i = 0; i < in->n; ++i) {
    Value x = in->group(0, i), h = in->group(2, i);
    Value g = regularized(ctx, x, in->group(1, i), norm);
    Value hNew = ctx.add(h, ctx.mul(g, g));
    if (!hNew)
      return failure();
    Value root = ctx.add(ctx.create<op::SqrtOp>(hNew), ctx.scalarLike(x, epsilon));
    ctx.outputs[i] = ctx.sub(x, ctx.div(ctx.mul(rate, g), root));
    ctx.outputs[in->n + i] = hNew;
    if (!ctx.outputs[i] || !hNew)
      return failure();
  }
  return success();
}

LogicalResult convertMomentum(NodeContext &ctx) {
  FailureOr<OptimizerInputs> in = splitInputs(ctx, 3);
  if (failed(in))
    return failure();
  const float alpha = ctx.getFloat("alpha", 0.0f);
  const float beta = ctx.getFloat("beta", 0.0f);
  const float norm = ctx.getFloat("norm_coefficient", 0.0f);
  std::string mode = ctx.getString("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return ctx.fail("mode '" + mode + "' is neither 'standard' nor 'nesterov'");
  Value x0 = in->group(0, 0);
  // The gradient's coefficient is 1 on the first update (T = 0).
  Value betaAdjusted =
      ctx.create<op::WhereOp>({positive(ctx, in->count), ctx.scalarLike(x0, beta),
                               ctx.scalarLike(x0, 1.0)});
  ctx.outputs.assign(2 * in->n, Value());
  for (int64_t i = 0; i < in->n; ++i) {
    Value x = in->group(0, i), v = in->group(2, i);
    Value g = regularized(ctx, x, in->group(1, i), norm);
    Value vNew = ctx.add(ctx.mul(ctx.scalarLike(x, alpha), v), ctx.mul(betaAdjusted, g));
    Value step = mode == "standard"
                     ? vNew
                     : ctx.add(g, ctx.mul(ctx.scalarLike(x, alpha), vNew));
    ctx.outputs[i] = ctx.sub(x, ctx.mul(in->rate, step));
    ctx.outputs[in->n + i] = vNew;
    if (!ctx.outputs[i] || !vNew)
      return failure();
  }
  return success();
}

LogicalResult convertAdam(NodeContext &ctx) {
  FailureOr<OptimizerInputs> in = splitInputs(ctx, 4);
  if (failed(in))
    return failure();
  const float alpha = ctx.getFloat("alpha", 0.9f);
  const float beta = ctx.getFloat("beta", 0.999f);
  const float epsilon = ctx.getFloat("epsilon", 1e-6f);
  const float norm = ctx.getFloat("norm_coefficient", 0.0f);
  const float normPost = ctx.getFloat("norm_coefficient_post", 0.0f);
  Value x0 = in->group(0, 0);
  Value one = ctx.scalarLike(x0, 1.0);
  // With T > 0 the rate is corrected for the moments' bias:
  // R * sqrt(1 - beta^T) / (1 - alpha^T).
  Value t = ctx.cast(in->count, kindOf(x0));
  if (!t)
    return failure();
  Value betaPower = ctx.create<op::PowOp>({ctx.scalarLike(x0, beta), t});
  Value alphaPower = ctx.create<op::PowOp>({ctx.scalarLike(x0, alpha), t});
  Value corrected = ctx.div(
      ctx.mul(in->rate, ctx.create<op::SqrtOp>(ctx.sub(one, betaPower))),
      ctx.sub(one, alphaPower));
  if (!corrected)
    return failure();
  Value rate = ctx.create<op::WhereOp>({positive(ctx, in->count), corrected, in->rate});
  ctx.outputs.assign(3 * in->n, Value());
  for (int64_t i = 0; i < in->n; ++i) {
    Value x = in->group(0, i), v = in->group(2, i), h = in->group(3, i);
    Value g = regularized(ctx, x, in->group(1, i), norm);
    Value vNew = ctx.add(ctx.mul(ctx.scalarLike(x, alpha), v),
                         ctx.mul(ctx.scalarLike(x, 1.0 - alpha), g));
    Value hNew = ctx.add(ctx.mul(ctx.scalarLike(x, beta), h),
                         ctx.mul(ctx.scalarLike(x, 1.0 - beta), ctx.mul(g, g)));
    if (!hNew)
      return failure();
    Value root = ctx.add(ctx.create<op::SqrtOp>(hNew), ctx.scalarLike(x, epsilon));
    Value xNew = ctx.sub(x, ctx.mul(rate, ctx.div(vNew, root)));
    if (normPost != 0.0f)
      xNew = ctx.mul(ctx.scalarLike(x, 1.0 - normPost), xNew);
    ctx.outputs[i] = xNew;
    ctx.outputs[in->n + i] = vNew;
    ctx.outputs[2 * in->n + i] = hNew;
    if (!xNew || !vNew || !hNew)
      return failure();
  }
  return success();
}

} // namespace

void registerTrainingConverters(ConverterRegistry &r) {
  constexpr StringLiteral training = "ai.onnx.preview.training";
  r.add("Adagrad", convertAdagrad, training);
  r.add("Adam", convertAdam, training);
  r.add("Momentum", convertMomentum, training);
}

} // namespace cgc::import
