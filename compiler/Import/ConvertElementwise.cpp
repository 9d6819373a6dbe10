//===- ConvertElementwise.cpp - Elementwise ONNX ops ----------------------===//
//
// Unary and binary math, comparisons, logic, Clip, Cast/CastLike, Where, and
// the variadic Sum/Mean/Max/Min (chains of binary ops). Before opset 7 binary
// ops broadcast only with `broadcast = 1`, aligning the second operand at
// `axis`; that is rewritten into numpy broadcasting with a reshape.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

template <typename OpTy>
LogicalResult convertUnary(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<OpTy>(ctx.input(0)));
}

/// Before opset 7, `B` broadcasts to `A` only with broadcast = 1, its
/// dimensions aligned at `axis` (default: trailing). Returns `B` reshaped for
/// numpy broadcasting.
Value legacyBroadcast(NodeContext &ctx, Value a, Value b) {
  if (ctx.opset >= 7 || !ctx.getInt("broadcast", 0))
    return b;
  int64_t rankA = rankOf(a), rankB = rankOf(b);
  if (!ctx.hasAttr("axis"))
    return b; // trailing alignment is numpy's
  int64_t axis = ctx.getInt("axis", 0);
  if (axis < 0)
    axis += rankA;
  if (axis < 0 || axis + rankB > rankA) {
    (void)ctx.fail("legacy broadcast axis " + Twine(axis) +
                   " does not fit operand ranks " + Twine(rankA) + " and " +
                   Twine(rankB));
    return {};
  }
  SmallVector<int64_t> shape(shapeOf(b));
  shape.append(rankA - axis - rankB, 1);
  return ctx.reshape(b, shape);
}

template <typename OpTy>
LogicalResult convertBinary(NodeContext &ctx) {
  Value a = ctx.input(0);
  Value b = legacyBroadcast(ctx, a, ctx.input(1));
  return ctx.setOutput(ctx.create<OpTy>({a, b}));
}

/// Sum, Max, Min: a left-to-right chain; Mean divides the sum.
template <typename OpTy>
LogicalResult convertVariadic(NodeContext &ctx) {
  Value result = ctx.input(0);
  for (unsigned i = 1; i < ctx.getNumInputs() && result; ++i)
    result = ctx.create<OpTy>({result, legacyBroadcast(ctx, result, ctx.input(i))});
  if (result && ctx.getNumInputs() == 1)
    result = ctx.create<op::IdentityOp>(result);
  return ctx.setOutput(result);
}

LogicalResult convertMean(NodeContext &ctx) {
  Value sum = ctx.input(0);
  for (unsigned i = 1; i < ctx.getNumInputs() && sum; ++i)
    sum = ctx.create<op::AddOp>({sum, ctx.input(i)});
  if (!sum)
    return failure();
  Value count = ctx.scalarLike(sum, ctx.getNumInputs());
  return ctx.setOutput(ctx.create<op::DivOp>({sum, count}));
}

template <typename OpTy>
LogicalResult convertAlpha(NodeContext &ctx, float alpha) {
  return ctx.setOutput(ctx.create<OpTy>(
      ctx.input(0), {ctx.named("alpha", ctx.f32(ctx.getFloat("alpha", alpha)))}));
}

LogicalResult convertSelu(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::SeluOp>(
      ctx.input(0),
      {ctx.named("alpha", ctx.f32(ctx.getFloat("alpha", 1.67326319217681884765625f))),
       ctx.named("gamma", ctx.f32(ctx.getFloat("gamma", 1.05070102214813232421875f)))}));
}

LogicalResult convertHardSigmoid(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::HardSigmoidOp>(
      ctx.input(0), {ctx.named("alpha", ctx.f32(ctx.getFloat("alpha", 0.2f))),
                     ctx.named("beta", ctx.f32(ctx.getFloat("beta", 0.5f)))}));
}

LogicalResult convertShrink(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::ShrinkOp>(
      ctx.input(0), {ctx.named("bias", ctx.f32(ctx.getFloat("bias", 0.0f))),
                     ctx.named("lambd", ctx.f32(ctx.getFloat("lambd", 0.5f)))}));
}

LogicalResult convertIsInf(NodeContext &ctx) {
  return ctx.setOutput(ctx.create<op::IsInfOp>(
      ctx.input(0),
      {ctx.named("detect_positive", ctx.boolean(ctx.getInt("detect_positive", 1))),
       ctx.named("detect_negative", ctx.boolean(ctx.getInt("detect_negative", 1)))}));
}

LogicalResult convertClip(NodeContext &ctx) {
  SmallVector<NamedAttribute> attrs;
  if (ctx.opset < 11) {
    if (ctx.hasAttr("min"))
      attrs.push_back(ctx.named("min", ctx.f64(ctx.getFloat("min", 0))));
    if (ctx.hasAttr("max"))
      attrs.push_back(ctx.named("max", ctx.f64(ctx.getFloat("max", 0))));
  } else {
    // A bound known at compile time is an attribute; one computed at run
    // time (an audio front end's max(x) - 80) is data: max(x, min) then
    // min(., max), as ONNX defines Clip.
    SmallVector<std::pair<unsigned, Value>> runtime;
    for (auto [index, name] : {std::pair<unsigned, StringRef>{1, "min"},
                               std::pair<unsigned, StringRef>{2, "max"}}) {
      if (!ctx.hasInput(index))
        continue;
      if (!ctx.constantInput(index)) {
        Value bound = ctx.input(index);
        auto type = llvm::dyn_cast<TensorType>(bound.getType());
        if (!type || type.getNumElements() != 1)
          return ctx.fail("input '" + name.str() + "' of Clip must be a scalar (one element)");
        runtime.push_back({index, bound});
        continue;
      }
      FailureOr<double> bound = ctx.requireScalarInput(index);
      if (failed(bound))
        return failure();
      attrs.push_back(ctx.named(name, ctx.f64(*bound)));
    }
    if (!runtime.empty()) {
      Value result = attrs.empty() ? ctx.input(0)
                                   : ctx.create<op::ClipOp>(ctx.input(0), attrs);
      for (auto [index, bound] : runtime) {
        if (!result)
          return failure();
        result = index == 1 ? ctx.create<op::MaxOp>({result, bound})
                            : ctx.create<op::MinOp>({result, bound});
      }
      return ctx.setOutput(result);
    }
  }
  return ctx.setOutput(ctx.create<op::ClipOp>(ctx.input(0), attrs));
}

/// Cast before opset 6 names the type ("FLOAT"); after, it is a number.
LogicalResult convertCast(NodeContext &ctx) {
  int dataType;
  const onnx::AttributeProto *to = ctx.getAttr("to");
  if (!to)
    return ctx.fail("Cast needs the 'to' attribute");
  if (to->has_s()) {
    onnx::TensorProto::DataType parsed;
    if (!onnx::TensorProto::DataType_Parse(to->s(), &parsed))
      return ctx.fail("unknown Cast target type '" + to->s() + "'");
    dataType = parsed;
  } else {
    dataType = static_cast<int>(to->i());
  }
  if (!getElementTypeForONNX(ctx.getContext(), dataType))
    return ctx.unsupported("Cast to " + getONNXDataTypeName(dataType));
  return ctx.setOutput(
      ctx.cast(ctx.input(0), static_cast<ElementKind>(dataType)));
}

LogicalResult convertCastLike(NodeContext &ctx) {
  Value result = ctx.cast(ctx.input(0), kindOf(ctx.input(1)));
  if (result == ctx.input(0))
    result = ctx.create<op::IdentityOp>(result);
  return ctx.setOutput(result);
}

LogicalResult convertIdentity(NodeContext &ctx) {
  return ctx.setOutput(ctx.input(0));
}

LogicalResult convertMod(NodeContext &ctx) {
  bool fmod = ctx.getInt("fmod", 0);
  if (!fmod && isFloatKind(kindOf(ctx.input(0))))
    return ctx.fail("Mod of floating-point values needs fmod = 1");
  return ctx.setOutput(ctx.create<op::ModOp>(
      {ctx.input(0), ctx.input(1)}, {ctx.named("fmod", ctx.boolean(fmod))}));
}

LogicalResult convertBitShift(NodeContext &ctx) {
  std::string direction = ctx.getString("direction");
  std::string lowered = StringRef(direction).lower();
  if (lowered != "left" && lowered != "right")
    return ctx.fail("BitShift direction must be LEFT or RIGHT, got '" +
                    direction + "'");
  return ctx.setOutput(ctx.create<op::BitShiftOp>(
      {ctx.input(0), ctx.input(1)}, {ctx.named("direction", ctx.str(lowered))}));
}

LogicalResult convertPRelu(NodeContext &ctx) {
  Value x = ctx.input(0), slope = ctx.input(1);
  // Before opset 7, a 1-D slope of C values applies per channel.
  if (ctx.opset < 7 && rankOf(slope) == 1 && rankOf(x) >= 2 &&
      shapeOf(slope)[0] == shapeOf(x)[1] && shapeOf(x)[1] != 1) {
    SmallVector<int64_t> shape{shapeOf(slope)[0]};
    shape.append(rankOf(x) - 2, 1);
    slope = ctx.reshape(slope, shape);
  }
  return ctx.setOutput(ctx.create<op::PReluOp>({x, slope}));
}

LogicalResult convertWhere(NodeContext &ctx) {
  return ctx.setOutput(
      ctx.create<op::WhereOp>({ctx.input(0), ctx.input(1), ctx.input(2)}));
}

} // namespace

void registerElementwiseConverters(ConverterRegistry &r) {
  r.add("Relu", convertUnary<op::ReluOp>);
  r.add("Sigmoid", convertUnary<op::SigmoidOp>);
  r.add("Tanh", convertUnary<op::TanhOp>);
  r.add("Erf", convertUnary<op::ErfOp>);
  r.add("Exp", convertUnary<op::ExpOp>);
  r.add("Log", convertUnary<op::LogOp>);
  r.add("Sqrt", convertUnary<op::SqrtOp>);
  r.add("Reciprocal", convertUnary<op::ReciprocalOp>);
  r.add("Neg", convertUnary<op::NegOp>);
  r.add("Abs", convertUnary<op::AbsOp>);
  r.add("Sign", convertUnary<op::SignOp>);
  r.add("Floor", convertUnary<op::FloorOp>);
  r.add("Ceil", convertUnary<op::CeilOp>);
  r.add("Round", convertUnary<op::RoundOp>);
  r.add("Sin", convertUnary<op::SinOp>);
  r.add("Cos", convertUnary<op::CosOp>);
  r.add("Tan", convertUnary<op::TanOp>);
  r.add("Asin", convertUnary<op::AsinOp>);
  r.add("Acos", convertUnary<op::AcosOp>);
  r.add("Atan", convertUnary<op::AtanOp>);
  r.add("Sinh", convertUnary<op::SinhOp>);
  r.add("Cosh", convertUnary<op::CoshOp>);
  r.add("Asinh", convertUnary<op::AsinhOp>);
  r.add("Acosh", convertUnary<op::AcoshOp>);
  r.add("Atanh", convertUnary<op::AtanhOp>);
  r.add("Softplus", convertUnary<op::SoftplusOp>);
  r.add("Softsign", convertUnary<op::SoftsignOp>);
  r.add("HardSwish", convertUnary<op::HardSwishOp>);
  r.add("Mish", convertUnary<op::MishOp>);
  r.add("IsNaN", convertUnary<op::IsNaNOp>);
  r.add("Not", convertUnary<op::NotOp>);
  r.add("Identity", convertIdentity);
  r.add("IsInf", convertIsInf);
  r.add("LeakyRelu", [](NodeContext &ctx) {
    return convertAlpha<op::LeakyReluOp>(ctx, 0.01f);
  });
  r.add("Elu", [](NodeContext &ctx) { return convertAlpha<op::EluOp>(ctx, 1.0f); });
  r.add("Celu", [](NodeContext &ctx) { return convertAlpha<op::CeluOp>(ctx, 1.0f); });
  r.add("ThresholdedRelu", [](NodeContext &ctx) {
    return convertAlpha<op::ThresholdedReluOp>(ctx, 1.0f);
  });
  r.add("Selu", convertSelu);
  r.add("HardSigmoid", convertHardSigmoid);
  r.add("Shrink", convertShrink);
  r.add("Clip", convertClip);
  r.add("Cast", convertCast);
  r.add("CastLike", convertCastLike);

  r.add("Add", convertBinary<op::AddOp>);
  r.add("Sub", convertBinary<op::SubOp>);
  r.add("Mul", convertBinary<op::MulOp>);
  r.add("Div", convertBinary<op::DivOp>);
  r.add("Equal", convertBinary<op::EqualOp>);
  r.add("Less", convertBinary<op::LessOp>);
  r.add("LessOrEqual", convertBinary<op::LessOrEqualOp>);
  r.add("Greater", convertBinary<op::GreaterOp>);
  r.add("GreaterOrEqual", convertBinary<op::GreaterOrEqualOp>);
  r.add("And", convertBinary<op::AndOp>);
  r.add("Or", convertBinary<op::OrOp>);
  r.add("Xor", convertBinary<op::XorOp>);
  r.add("Pow", convertBinary<op::PowOp>);
  r.add("Mod", convertMod);
  r.add("BitShift", convertBitShift);
  r.add("PRelu", convertPRelu);
  r.add("Where", convertWhere);

  r.add("Sum", convertVariadic<op::AddOp>);
  r.add("Max", convertVariadic<op::MaxOp>);
  r.add("Min", convertVariadic<op::MinOp>);
  r.add("Mean", convertMean);
}

} // namespace cgc::import
