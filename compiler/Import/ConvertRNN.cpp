//===- ConvertRNN.cpp - RNN, GRU and LSTM unrolled ------------------------===//
//
// The recurrent layers are unrolled over their static sequence length into
// matmul / add / activation ops, following the equations of the ONNX
// operator documentation (gate order iofc for LSTM, zrh for GRU). The input
// projection of all time steps is one matmul; each step adds the recurrent
// matmul of the previous hidden state. Per-batch sequence lengths (a
// constant `sequence_lens`) freeze the state of finished sequences and zero
// their outputs, as ONNX specifies.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

enum class Cell { RNN, GRU, LSTM };

struct Activation {
  std::string name;
  std::optional<float> alpha, beta;
};

/// Applies one of the activation functions ONNX's recurrent ops accept.
Value activate(NodeContext &ctx, const Activation &activation, Value x) {
  StringRef name = activation.name;
  auto alpha = [&](float fallback) {
    return ctx.f32(activation.alpha.value_or(fallback));
  };
  auto beta = [&](float fallback) {
    return ctx.f32(activation.beta.value_or(fallback));
  };
  if (name.equals_insensitive("Sigmoid"))
    return ctx.create<op::SigmoidOp>(x);
  if (name.equals_insensitive("Tanh"))
    return ctx.create<op::TanhOp>(x);
  if (name.equals_insensitive("Relu"))
    return ctx.create<op::ReluOp>(x);
  if (name.equals_insensitive("Softsign"))
    return ctx.create<op::SoftsignOp>(x);
  if (name.equals_insensitive("Softplus"))
    return ctx.create<op::SoftplusOp>(x);
  if (name.equals_insensitive("LeakyRelu"))
    return ctx.create<op::LeakyReluOp>(x, {ctx.named("alpha", alpha(0.01f))});
  if (name.equals_insensitive("ThresholdedRelu"))
    return ctx.create<op::ThresholdedReluOp>(x, {ctx.named("alpha", alpha(1.0f))});
  if (name.equals_insensitive("Elu"))
    return ctx.create<op::EluOp>(x, {ctx.named("alpha", alpha(1.0f))});
  if (name.equals_insensitive("HardSigmoid"))
    return ctx.create<op::HardSigmoidOp>(
        x, {ctx.named("alpha", alpha(0.2f)), ctx.named("beta", beta(0.5f))});
  if (name.equals_insensitive("Affine")) {
    Value scaled = ctx.create<op::MulOp>(
        {x, ctx.scalarLike(x, activation.alpha.value_or(1.0f))});
    return ctx.create<op::AddOp>(
        {scaled, ctx.scalarLike(x, activation.beta.value_or(0.0f))});
  }
  if (name.equals_insensitive("ScaledTanh")) {
    Value inner = ctx.create<op::MulOp>(
        {x, ctx.scalarLike(x, activation.beta.value_or(1.0f))});
    return ctx.create<op::MulOp>(
        {ctx.create<op::TanhOp>(inner),
         ctx.scalarLike(x, activation.alpha.value_or(1.0f))});
  }
  (void)ctx.unsupported("recurrent activation '" + name + "'");
  return {};
}

class RecurrentLowering {
public:
  RecurrentLowering(NodeContext &ctx, Cell cell) : ctx(ctx), cell(cell) {}

  LogicalResult run();

private:
  unsigned gates() const {
    return cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  }
  /// Rows [gate * hidden, (gate + count) * hidden) of a [G*H, K] matrix.
  Value gateRows(Value matrix, unsigned gate, unsigned count = 1) {
    return ctx.slice(matrix, 0, gate * hidden, (gate + count) * hidden);
  }
  /// Columns [gate * hidden, (gate + 1) * hidden) of a [B, G*H] tensor.
  Value gateColumns(Value value, unsigned gate) {
    return ctx.slice(value, rankOf(value) - 1, gate * hidden,
                     (gate + 1) * hidden);
  }
  Value clip(Value value) {
    if (!clipThreshold)
      return value;
    return ctx.create<op::ClipOp>(
        value, {ctx.named("min", ctx.f64(-*clipThreshold)),
                ctx.named("max", ctx.f64(*clipThreshold))});
  }
  Value add(Value a, Value b) { return ctx.create<op::AddOp>({a, b}); }
  Value mul(Value a, Value b) { return ctx.create<op::MulOp>({a, b}); }
  Value matmulT(Value a, Value b) {
    return ctx.create<op::MatMulOp>(
        {a, b}, {ctx.named("transpose_b", ctx.boolean(true))});
  }
  /// Slice `d` of a [dirs, ...] tensor, without the leading dimension.
  Value direction(Value value, int64_t d) {
    SmallVector<int64_t> shape(shapeOf(value).drop_front());
    return ctx.reshape(ctx.slice(value, 0, d, d + 1), shape);
  }

  LogicalResult runDirection(int64_t d, bool reverse,
                             SmallVectorImpl<Value> &outputs, Value &lastH,
                             Value &lastC);

  NodeContext &ctx;
  Cell cell;
  int64_t hidden = 0, seqLength = 0, batch = 0, inputSize = 0;
  std::optional<double> clipThreshold;
  SmallVector<Activation> activations;
  bool linearBeforeReset = false;
  Value x; // [S, B, I]
  std::optional<SmallVector<int64_t>> lengths;
};

LogicalResult RecurrentLowering::runDirection(int64_t d, bool reverse,
                                              SmallVectorImpl<Value> &outputs,
                                              Value &lastH, Value &lastC) {
  unsigned g = gates();
  Value w = direction(ctx.input(1), d); // [G*H, I]
  Value r = direction(ctx.input(2), d); // [G*H, H]
  Value bias;                           // [G*H]: Wb + Rb
  Value recurrentBias;                  // GRU with linear_before_reset: Rbh
  if (ctx.hasInput(3)) {
    Value b = direction(ctx.input(3), d); // [2*G*H]
    Value wb = ctx.slice(b, 0, 0, g * hidden);
    Value rb = ctx.slice(b, 0, g * hidden, 2 * g * hidden);
    if (cell == Cell::GRU) {
      // The h gate's recurrent bias sits inside the reset product.
      Value wbzr = ctx.slice(wb, 0, 0, 2 * hidden);
      Value rbzr = ctx.slice(rb, 0, 0, 2 * hidden);
      Value wbh = ctx.slice(wb, 0, 2 * hidden, 3 * hidden);
      recurrentBias = ctx.slice(rb, 0, 2 * hidden, 3 * hidden);
      bias = ctx.create<op::ConcatOp>({add(wbzr, rbzr), wbh},
                                      {ctx.named("axis", ctx.i64(0))});
    } else {
      bias = add(wb, rb);
    }
  }
  auto zeros = [&]() {
    return ctx.create<op::ExpandOp>(
        ctx.scalarLike(x, 0), {ctx.named("shape", ctx.i64s({batch, hidden}))});
  };
  Value h = ctx.hasInput(5) ? direction(ctx.input(5), d) : zeros();
  Value c;
  Value pi, po, pf;
  if (cell == Cell::LSTM) {
    c = ctx.hasInput(6) ? direction(ctx.input(6), d) : zeros();
    if (ctx.hasInput(7)) {
      Value p = direction(ctx.input(7), d); // [3*H]: i, o, f
      pi = ctx.slice(p, 0, 0, hidden);
      po = ctx.slice(p, 0, hidden, 2 * hidden);
      pf = ctx.slice(p, 0, 2 * hidden, 3 * hidden);
    }
  }
  if (!w || !r || !h || (cell == Cell::LSTM && !c))
    return failure();

  // The input projection of every step at once: [S*B, I] x [I, G*H].
  Value projected = matmulT(ctx.reshape(x, {seqLength * batch, inputSize}), w);
  if (bias)
    projected = add(projected, bias);
  projected = ctx.reshape(projected, {seqLength, batch, g * hidden});

  unsigned base = d * (cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1);
  const Activation &f = activations[base];
  const Activation *gAct = g > 1 ? &activations[base + 1] : nullptr;
  const Activation *hAct = cell == Cell::LSTM ? &activations[base + 2] : nullptr;

  Value rzr = cell == Cell::GRU ? gateRows(r, 0, 2) : Value();
  Value rh = cell == Cell::GRU ? gateRows(r, 2) : Value();
  Value zero = ctx.scalarLike(x, 0);
  outputs.assign(seqLength, Value());
  for (int64_t step = 0; step < seqLength; ++step) {
    int64_t t = reverse ? seqLength - 1 - step : step;
    Value xt = ctx.reshape(ctx.slice(projected, 0, t, t + 1),
                           {batch, g * hidden});
    Value newH, newC;
    if (cell == Cell::RNN) {
      newH = activate(ctx, f, clip(add(xt, matmulT(h, r))));
    } else if (cell == Cell::GRU) {
      Value zr = add(ctx.slice(xt, 1, 0, 2 * hidden), matmulT(h, rzr));
      Value z = activate(ctx, f, clip(gateColumns(zr, 0)));
      Value rt = activate(ctx, f, clip(gateColumns(zr, 1)));
      Value xh = gateColumns(xt, 2);
      Value recurrent;
      if (linearBeforeReset) {
        recurrent = matmulT(h, rh);
        if (recurrentBias)
          recurrent = add(recurrent, recurrentBias);
        recurrent = mul(rt, recurrent);
      } else {
        recurrent = matmulT(mul(rt, h), rh);
        if (recurrentBias)
          recurrent = add(recurrent, recurrentBias);
      }
      Value candidate = activate(ctx, *gAct, clip(add(xh, recurrent)));
      // (1 - z) * candidate + z * h
      Value keep = ctx.create<op::SubOp>({ctx.scalarLike(x, 1), z});
      newH = add(mul(keep, candidate), mul(z, h));
    } else {
      Value all = add(xt, matmulT(h, r));
      Value i = gateColumns(all, 0), o = gateColumns(all, 1),
            fg = gateColumns(all, 2), cc = gateColumns(all, 3);
      if (pi)
        i = add(i, mul(pi, c));
      if (pf)
        fg = add(fg, mul(pf, c));
      Value it = activate(ctx, f, clip(i));
      Value ft = activate(ctx, f, clip(fg));
      Value ct = activate(ctx, *gAct, clip(cc));
      newC = add(mul(ft, c), mul(it, ct));
      if (po)
        o = add(o, mul(po, newC));
      Value ot = activate(ctx, f, clip(o));
      newH = mul(ot, activate(ctx, *hAct, newC));
    }
    if (!newH || (cell == Cell::LSTM && !newC))
      return failure();
    Value output = newH;
    if (lengths) {
      // Sequences that ended keep their state and output zeros.
      HostTensor active(ElementKind::Bool, {batch, 1});
      bool allActive = true;
      for (int64_t b = 0; b < batch; ++b) {
        active.setInt(b, t < (*lengths)[b]);
        allActive = allActive && t < (*lengths)[b];
      }
      if (!allActive) {
        Value mask = ctx.constant(std::move(active));
        output = ctx.create<op::WhereOp>({mask, newH, zero});
        newH = ctx.create<op::WhereOp>({mask, newH, h});
        if (cell == Cell::LSTM)
          newC = ctx.create<op::WhereOp>({mask, newC, c});
      }
    }
    outputs[t] = output;
    h = newH;
    c = newC;
  }
  lastH = h;
  lastC = c;
  return success();
}

LogicalResult RecurrentLowering::run() {
  Value input = ctx.input(0);
  if (rankOf(input) != 3)
    return ctx.fail("the input of a recurrent layer must be 3-D");
  int64_t layout = ctx.getInt("layout", 0);
  x = layout ? ctx.transpose(input, {1, 0, 2}) : input;
  if (!x)
    return failure();
  seqLength = shapeOf(x)[0];
  batch = shapeOf(x)[1];
  inputSize = shapeOf(x)[2];
  hidden = ctx.getInt("hidden_size", shapeOf(ctx.input(2)).back());
  std::string directionName = ctx.getString("direction", "forward");
  if (directionName != "forward" && directionName != "reverse" &&
      directionName != "bidirectional")
    return ctx.fail("unknown direction '" + directionName + "'");
  int64_t directions = directionName == "bidirectional" ? 2 : 1;
  if (shapeOf(ctx.input(1))[0] != directions)
    return ctx.fail("W has " + Twine(shapeOf(ctx.input(1))[0]) +
                    " directions, the layer " + Twine(directions));
  if (ctx.hasAttr("clip"))
    clipThreshold = ctx.getFloat("clip", 0);
  if (cell == Cell::LSTM && ctx.getInt("input_forget", 0))
    return ctx.unsupported("LSTM with input_forget");
  linearBeforeReset = ctx.getInt("linear_before_reset", 0);

  // Activations: given per direction, or the defaults.
  std::vector<std::string> names = ctx.getStrings("activations");
  SmallVector<float> alphas = ctx.getFloats("activation_alpha");
  SmallVector<float> betas = ctx.getFloats("activation_beta");
  unsigned perDirection = cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1;
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d) {
      if (cell == Cell::RNN)
        names.push_back("Tanh");
      else
        names.push_back("Sigmoid");
      for (unsigned k = 1; k < perDirection; ++k)
        names.push_back("Tanh");
    }
  }
  // RNN's schema default is [Tanh, Tanh] whatever the direction, and ONNX
  // Runtime writes defaults into its nodes: one direction reads the first.
  if (cell == Cell::RNN && directions == 1 && names.size() == 2 && names[0] == "Tanh" &&
      names[1] == "Tanh" && alphas.empty() && betas.empty())
    names.resize(1);
  if (names.size() != perDirection * directions)
    return ctx.fail("expected " + Twine(perDirection * directions) +
                    " activations, got " + Twine(names.size()));
  static constexpr StringRef known[] = {
      "Sigmoid", "Tanh", "Relu", "Softsign", "Softplus", "LeakyRelu",
      "ThresholdedRelu", "Elu", "HardSigmoid", "Affine", "ScaledTanh"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (llvm::none_of(known, [&](StringRef k) {
          return k.equals_insensitive(names[i]);
        }))
      return ctx.unsupported("recurrent activation '" + names[i] + "'");
    Activation activation{names[i], std::nullopt, std::nullopt};
    if (i < alphas.size())
      activation.alpha = alphas[i];
    if (i < betas.size())
      activation.beta = betas[i];
    activations.push_back(activation);
  }

  if (ctx.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> values = ctx.requireIntsInput(4);
    if (failed(values))
      return failure();
    if (static_cast<int64_t>(values->size()) != batch)
      return ctx.fail("sequence_lens needs one length per batch entry");
    bool full = llvm::all_of(*values, [&](int64_t n) { return n == seqLength; });
    for (int64_t n : *values)
      if (n < 0 || n > seqLength)
        return ctx.fail("sequence length " + Twine(n) + " is out of range");
    if (!full) {
      if (directionName != "forward")
        return ctx.unsupported("per-batch sequence lengths with a reverse "
                               "direction");
      lengths = *values;
    }
  }

  SmallVector<Value> yParts, hParts, cParts;
  for (int64_t d = 0; d < directions; ++d) {
    bool reverse = directionName == "reverse" || d == 1;
    SmallVector<Value> outputs;
    Value lastH, lastC;
    if (failed(runDirection(d, reverse, outputs, lastH, lastC)))
      return failure();
    SmallVector<Value> steps;
    for (Value output : outputs)
      steps.push_back(ctx.reshape(output, {1, 1, batch, hidden}));
    yParts.push_back(steps.size() == 1
                         ? steps.front()
                         : ctx.create<op::ConcatOp>(
                               steps, {ctx.named("axis", ctx.i64(0))}));
    // With sequence lengths the state stays frozen after a sequence ends,
    // so the last state is the one at its end.
    hParts.push_back(ctx.reshape(lastH, {1, batch, hidden}));
    if (cell == Cell::LSTM)
      cParts.push_back(ctx.reshape(lastC, {1, batch, hidden}));
  }
  auto join = [&](SmallVector<Value> &parts, int64_t axis) -> Value {
    if (parts.size() == 1)
      return parts.front();
    return ctx.create<op::ConcatOp>(parts, {ctx.named("axis", ctx.i64(axis))});
  };
  Value y = join(yParts, 1);       // [S, dirs, B, H]
  Value yh = join(hParts, 0);      // [dirs, B, H]
  Value yc = cell == Cell::LSTM ? join(cParts, 0) : Value();
  if (layout) {
    y = ctx.transpose(y, {2, 0, 1, 3});
    yh = ctx.transpose(yh, {1, 0, 2});
    if (yc)
      yc = ctx.transpose(yc, {1, 0, 2});
  }
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  if (ctx.hasOutput(0))
    ctx.outputs[0] = y;
  if (ctx.hasOutput(1))
    ctx.outputs[1] = yh;
  if (ctx.hasOutput(2))
    ctx.outputs[2] = yc;
  for (unsigned i = 0; i < ctx.getNumOutputs(); ++i)
    if (ctx.hasOutput(i) && !ctx.outputs[i])
      return failure();
  return success();
}

} // namespace

void registerRNNConverters(ConverterRegistry &r) {
  r.add("RNN", [](NodeContext &ctx) {
    return RecurrentLowering(ctx, Cell::RNN).run();
  });
  r.add("GRU", [](NodeContext &ctx) {
    return RecurrentLowering(ctx, Cell::GRU).run();
  });
  r.add("LSTM", [](NodeContext &ctx) {
    return RecurrentLowering(ctx, Cell::LSTM).run();
  });
}

} // namespace cgc::import
