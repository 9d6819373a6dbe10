//===- ConvertControlFlow.cpp - If, Loop and Scan -------------------------===//
//
// Input IR is one static dataflow graph, so control flow is resolved at
// import time: If takes the branch its (constant) condition picks, and on a
// condition computed at run time runs both and selects; Loop is
// unrolled while its trip count and condition are known at import time,
// and predicated up to a bound from the first iteration steered at run time;
// Scan is unrolled over its static sequence length (before opset 9, once
// per batch entry). Each copy of a body is
// converted again in a scope nested in the node's, so bodies see outer
// values, and constant work inside them folds.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

/// Iterations beyond which a loop is not unrolled.
constexpr int64_t kMaxUnrolledIterations = 4096;

/// Imports If's `branchName` (then_branch or else_branch) once more in the
/// node's scope; its outputs, as many as the If's.
FailureOr<SmallVector<Value>> importBranch(NodeContext &ctx, StringRef branchName) {
  const onnx::GraphProto *branch = ctx.getGraph(branchName);
  if (!branch) {
    (void)ctx.fail("If has no " + branchName);
    return failure();
  }
  FailureOr<SmallVector<Value>> outputs = ctx.importer.inlineSubgraph(
      *branch, ctx.scope, {}, ctx.opsets, ctx.locOverride,
      nodeLabel(ctx.node) + "/" + branchName.str());
  if (failed(outputs))
    return failure();
  if (static_cast<int>(outputs->size()) != ctx.getNumOutputs()) {
    (void)ctx.fail(branchName + " has " + Twine(outputs->size()) + " outputs but If has " +
                   Twine(ctx.getNumOutputs()));
    return failure();
  }
  return outputs;
}

/// An If whose condition is computed at run time: both branches are
/// imported and each output is where(condition, then, else). ONNX branches
/// have no side effects, so running both and selecting gives If's result;
/// the select needs the branches' outputs to agree in element type and
/// shape (a tensor cannot be either of two shapes), and sequence or
/// optional outputs, resolved at import time, cannot depend on a run-time
/// value. Both branches' work is done on every run.
LogicalResult predicateIf(NodeContext &ctx) {
  Value condition = ctx.input(0);
  auto type = cast<TensorType>(condition.getType());
  if (type.getNumElements() != 1)
    return ctx.fail("the If condition must hold one value, it holds " +
                    Twine(type.getNumElements()));
  condition = ctx.cast(ctx.reshape(condition, {}), ElementKind::Bool);
  if (!condition)
    return failure();
  SmallVector<SmallVector<Value>> branches;
  for (StringRef branchName : {"then_branch", "else_branch"}) {
    FailureOr<SmallVector<Value>> outputs = importBranch(ctx, branchName);
    if (failed(outputs))
      return failure();
    branches.push_back(std::move(*outputs));
  }
  // Where the branches cannot be selected between, the way out is to bind
  // the graph inputs the condition is computed from, which imports one
  // branch: the error says which (as requireConstantInput's does).
  auto freezeHint = [&] {
    std::string hint;
    for (const std::string &name : ctx.importer.getGraphInputsFeeding(ctx.input(0)))
      hint += " --freeze-input " + name + "=FILE.pb";
    return hint.empty() ? std::string("; the condition is computed by ops the importer "
                                      "cannot evaluate")
                        : "; to import one branch, bind the condition with" + hint;
  };
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  for (int i = 0; i < ctx.getNumOutputs(); ++i) {
    Value then = branches[0][i], otherwise = branches[1][i];
    if (then == otherwise) {
      ctx.outputs[i] = then;
      continue;
    }
    if (getAggregate(then) || getAggregate(otherwise))
      return ctx.fail("output #" + Twine(i) + " of an If on a run-time condition is " +
                      describeValueKind(getAggregate(then) ? then : otherwise) +
                      ": sequences and optionals are resolved at compile time, so their "
                      "branch must be too" + freezeHint());
    auto thenType = cast<TensorType>(then.getType()).withConstant(false);
    auto elseType = cast<TensorType>(otherwise.getType()).withConstant(false);
    if (thenType != elseType) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "output #" << i << " of an If on a run-time condition is " << Type(thenType)
         << " in then_branch but " << Type(elseType)
         << " in else_branch: cgc runs both branches and selects, which needs one type"
         << freezeHint();
      return ctx.fail(os.str());
    }
    ctx.outputs[i] = ctx.create<op::WhereOp>({condition, then, otherwise});
    if (!ctx.outputs[i])
      return failure();
  }
  return success();
}

LogicalResult convertIf(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.fail("If has no condition");
  if (!ctx.constantInput(0) && !ctx.importer.isConstant(ctx.input(0)))
    return predicateIf(ctx);
  FailureOr<double> condition = ctx.requireScalarInput(0);
  if (failed(condition))
    return failure();
  FailureOr<SmallVector<Value>> outputs =
      importBranch(ctx, *condition != 0 ? "then_branch" : "else_branch");
  if (failed(outputs))
    return failure();
  ctx.outputs = std::move(*outputs);
  return success();
}

/// Stacks per-iteration values along a new leading axis.
Value stack(NodeContext &ctx, ArrayRef<Value> values) {
  SmallVector<Value> pieces;
  for (Value value : values) {
    SmallVector<int64_t> shape{1};
    llvm::append_range(shape, shapeOf(value));
    pieces.push_back(ctx.reshape(value, shape));
  }
  if (pieces.size() == 1)
    return pieces.front();
  return ctx.create<op::ConcatOp>(pieces, {ctx.named("axis", ctx.i64(0))});
}

/// The value of a one-element bool known at import time, if it is.
std::optional<bool> knownBool(NodeContext &ctx, Value value) {
  const HostTensor *host = ctx.importer.getConstantValue(value);
  if (!host || host->getNumElements() != 1)
    return std::nullopt;
  return host->getInt(0) != 0;
}

/// a && b as a rank-0 bool, folded where either is known.
Value both(NodeContext &ctx, Value a, Value b) {
  if (std::optional<bool> known = knownBool(ctx, a))
    return *known ? b : a;
  if (std::optional<bool> known = knownBool(ctx, b))
    return *known ? a : b;
  return ctx.create<op::AndOp>({a, b});
}

/// A one-element input as a rank-0 tensor of `kind`.
Value scalarOf(NodeContext &ctx, Value value, ElementKind kind) {
  return ctx.cast(ctx.reshape(value, {}), kind);
}

/// Loop (docs/importer.md, "Loop"). The body is imported once per
/// iteration, with the iteration number a constant. While the trip count
/// and the condition are known at import time the loop is unrolled exactly.
/// From the first iteration whose running is decided at run time (a trip
/// count or condition computed from the inputs, or a condition the body
/// computes from them) it is predicated: up to
/// ImportOptions::maxLoopIterations iterations are imported, each one's
/// loop-carried values are where(active, body's values, previous values),
/// and scan outputs stack every imported iteration, returned with the run's
/// count of active iterations as data-dependent rows. A run that would go
/// on past the bound fails (cgc_op.check) instead of returning the bound's
/// values. Every imported iteration's work is done on every run.
LogicalResult convertLoop(NodeContext &ctx) {
  const onnx::GraphProto *body = ctx.getGraph("body");
  if (!body)
    return ctx.fail("Loop has no body");
  const std::string label = nodeLabel(ctx.node);
  std::optional<int64_t> tripCount;
  Value runtimeTrip;
  if (ctx.hasInput(0)) {
    if (cast<TensorType>(ctx.input(0).getType()).getNumElements() != 1)
      return ctx.fail("the Loop trip count must hold one value");
    if (ctx.constantInput(0) || ctx.importer.isConstant(ctx.input(0))) {
      FailureOr<double> value = ctx.requireScalarInput(0);
      if (failed(value))
        return failure();
      tripCount = *value >= 9.2e18 ? std::numeric_limits<int64_t>::max()
                                   : static_cast<int64_t>(*value);
    } else {
      runtimeTrip = scalarOf(ctx, ctx.input(0), ElementKind::Int64);
    }
  }
  const bool hasCondition = ctx.hasInput(1);
  if (hasCondition && cast<TensorType>(ctx.input(1).getType()).getNumElements() != 1)
    return ctx.fail("the Loop condition must hold one value");
  if (!tripCount && !runtimeTrip && !hasCondition)
    return ctx.fail("Loop has neither a trip count nor a condition; it "
                    "would not end");
  // What the body sees as its condition, and whether the next iteration
  // runs: a constant while that is known at import time.
  Value condition = hasCondition ? scalarOf(ctx, ctx.input(1), ElementKind::Bool)
                                 : ctx.scalar(ElementKind::Bool, 1);
  Value zero = ctx.scalar(ElementKind::Int64, 0);
  Value active = condition;
  if (runtimeTrip)
    active = both(ctx, active, ctx.create<op::LessOp>({zero, runtimeTrip}));
  if (!condition || !active)
    return failure();

  SmallVector<Value> carried;
  for (unsigned i = 2; i < ctx.getNumInputs(); ++i) {
    if (!ctx.hasInput(i))
      return ctx.unsupported("an absent (optional) loop-carried value");
    carried.push_back(ctx.input(i));
  }
  int64_t numCarried = carried.size();
  int64_t numScan = body->output_size() - 1 - numCarried;
  if (numScan < 0 || body->input_size() != 2 + numCarried)
    return ctx.fail("the Loop body's inputs and outputs do not match its " +
                    Twine(numCarried) + " loop-carried values");
  const int64_t bound = ctx.importer.getOptions().maxLoopIterations;
  auto freezeHint = [&] {
    std::string hint;
    for (unsigned input : {0u, 1u})
      if (ctx.hasInput(input))
        for (const std::string &name : ctx.importer.getGraphInputsFeeding(ctx.input(input)))
          if (hint.find(" " + name + "=") == std::string::npos)
            hint += " --freeze-input " + name + "=FILE.pb";
    return hint.empty() ? std::string()
                        : "; to unroll it exactly, bind what steers it with" + hint;
  };

  SmallVector<SmallVector<Value>> scans(numScan);
  Value count = zero;        // iterations run (int64), computed at run time once predicated
  bool predicated = false;   // some iteration runs or not depending on the values
  Value overrun;             // the loop would go on past the bound (run-time bool)
  for (int64_t iteration = 0;; ++iteration) {
    std::optional<bool> known = knownBool(ctx, active);
    if (known && !*known)
      break;
    if (tripCount && iteration >= *tripCount)
      break;
    if (known && iteration >= kMaxUnrolledIterations)
      return ctx.fail("Loop runs more than " + Twine(kMaxUnrolledIterations) +
                      " iterations; it is not unrolled");
    if (!known && iteration >= bound) {
      overrun = active;
      break;
    }
    predicated = predicated || !known;
    SmallVector<Value> inputs;
    inputs.push_back(ctx.constant(
        HostTensor::fromInts(ElementKind::Int64, {}, {iteration})));
    inputs.push_back(condition);
    // A sequence of run-time length goes in with every item: an iteration
    // that runs had every iteration before it run.
    for (Value value : carried) {
      std::optional<Aggregate> aggregate = getAggregate(value);
      inputs.push_back(aggregate && aggregate->count
                           ? ctx.importer.createAggregate({aggregate->kind, aggregate->items},
                                                          ctx.loc)
                           : value);
    }
    FailureOr<SmallVector<Value>> outputs = ctx.importer.inlineSubgraph(
        *body, ctx.scope, inputs, ctx.opsets, ctx.locOverride,
        label + "/iteration" + std::to_string(iteration));
    if (failed(outputs))
      return failure();
    for (int64_t i = 0; i < numCarried; ++i) {
      Value next = (*outputs)[1 + i];
      if (known || next == inputs[2 + i]) {
        carried[i] = next == inputs[2 + i] ? carried[i] : next;
        continue;
      }
      std::optional<Aggregate> given = getAggregate(inputs[2 + i]), back = getAggregate(next);
      if (given && back && given->kind == Aggregate::Kind::Sequence &&
          back->kind == Aggregate::Kind::Sequence &&
          back->items.size() == given->items.size() + 1 &&
          std::equal(given->items.begin(), given->items.end(), back->items.begin())) {
        // Appended to (PyTorch's `outs.append(h)`): the run's length counts
        // the iterations that ran.
        std::optional<Aggregate> previous = getAggregate(carried[i]);
        Value length = previous->count ? previous->count
                                       : ctx.scalar(ElementKind::Int64,
                                                    double(previous->items.size()));
        Value grown = ctx.add(length, ctx.cast(active, ElementKind::Int64));
        if (!grown)
          return failure();
        carried[i] = ctx.importer.createAggregate(
            {Aggregate::Kind::Sequence, back->items, grown}, ctx.loc);
        continue;
      }
      if (given || back)
        return ctx.fail("loop-carried value #" + Twine(i) + " is " +
                        describeValueKind(back ? next : inputs[2 + i]) +
                        ": sequences and optionals are resolved at compile time; a Loop "
                        "steered at run time may only append to a sequence" + freezeHint());
      auto before = cast<TensorType>(carried[i].getType()).withConstant(false);
      auto after = cast<TensorType>(next.getType()).withConstant(false);
      if (before != after) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "loop-carried value #" << i << " is " << Type(before) << " before iteration "
           << iteration << " and " << Type(after)
           << " after it; a Loop steered at run time keeps each carried value's type "
              "(cgc runs its iterations up to a bound and keeps the last active one's "
              "values)"
           << freezeHint();
        return ctx.fail(os.str());
      }
      carried[i] = ctx.create<op::WhereOp>({active, next, carried[i]});
      if (!carried[i])
        return failure();
    }
    for (int64_t i = 0; i < numScan; ++i) {
      Value scan = (*outputs)[1 + numCarried + i];
      if (getAggregate(scan))
        return ctx.fail("scan output " + Twine(i) + " of the Loop body is " +
                        describeValueKind(scan) + "; scan outputs are tensors");
      scans[i].push_back(scan);
    }
    count = known ? ctx.add(count, ctx.scalar(ElementKind::Int64, 1))
                  : ctx.add(count, ctx.cast(active, ElementKind::Int64));
    Value next = active;
    if (hasCondition) {
      condition = scalarOf(ctx, (*outputs)[0], ElementKind::Bool);
      next = both(ctx, next, condition);
    }
    if (runtimeTrip)
      next = both(ctx, next,
                  ctx.create<op::LessOp>(
                      {ctx.scalar(ElementKind::Int64, double(iteration + 1)), runtimeTrip}));
    if (!count || !next)
      return failure();
    active = next;
  }

  // Past the bound: each result goes through a check that the run ended
  // within it.
  std::function<Value(Value)> checked = [&](Value value) -> Value {
    if (!overrun || !value)
      return value;
    if (std::optional<Aggregate> aggregate = getAggregate(value)) {
      // A sequence appended to: its length passes the check; one the loop
      // does not change has no iteration to check.
      if (!aggregate->count)
        return value;
      Value length = checked(aggregate->count);
      return length ? ctx.importer.createAggregate(
                          {aggregate->kind, aggregate->items, length}, ctx.loc)
                    : Value();
    }
    Value within = ctx.create<op::NotOp>(overrun);
    std::string message = "Loop '" + label + "' needs more than " + std::to_string(bound) +
                          " iterations on this run: a Loop whose trip count or condition "
                          "is computed at run time is compiled for at most " +
                          std::to_string(bound) + " (raise it with --max-loop-iterations)";
    return ctx.create<op::CheckOp>({within, value},
                                   {ctx.named("message", ctx.str(message))});
  };
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  for (int64_t i = 0; i < numCarried && i < ctx.getNumOutputs(); ++i)
    if (ctx.hasOutput(i) && !(ctx.outputs[i] = checked(carried[i])))
      return failure();
  Value rows; // the scan outputs' count of rows, checked once
  for (int64_t i = 0; i < numScan; ++i) {
    if (!ctx.hasOutput(numCarried + i))
      continue;
    if (scans[i].empty())
      return ctx.unsupported("a Loop that runs no iteration and has scan "
                             "outputs");
    Value stacked = stack(ctx, scans[i]);
    if (!stacked)
      return failure();
    if (predicated) {
      if (!ctx.importer.getOptions().dataDependentRows)
        return ctx.fail(
            "scan output " + Twine(i) + " of a Loop steered at run time has as many rows "
            "as the run's iterations, and this compilation does not allow outputs with "
            "data-dependent rows (cgc-compile and cgc-run do; through the runtime API set "
            "cgc_compile_options_t::data_dependent_rows)" + freezeHint());
      if (!rows && !(rows = checked(count)))
        return failure();
      ctx.importer.addDataDependentRows(stacked, rows,
                                        "scan output " + std::to_string(i) + " of Loop '" +
                                            label + "'");
    }
    ctx.outputs[numCarried + i] = stacked;
  }
  return success();
}

/// Runs a Scan body `length` times (opset 9 semantics): scan input i is
/// read along inputAxes[i], backwards when inputDirections[i]; `states`
/// become the final states; scans[k] holds scan output k of every
/// iteration, in iteration order.
LogicalResult unrollScan(NodeContext &ctx, const onnx::GraphProto &body,
                         SmallVector<Value> &states, ArrayRef<Value> scanInputs,
                         ArrayRef<int64_t> inputAxes,
                         ArrayRef<int64_t> inputDirections, int64_t length,
                         int64_t numScanOutputs, const std::string &prefix,
                         SmallVector<SmallVector<Value>> &scans) {
  const int64_t numStates = states.size(), numScanInputs = scanInputs.size();
  scans.assign(numScanOutputs, {});
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> inputs(states);
    for (int64_t i = 0; i < numScanInputs; ++i) {
      Value input = scanInputs[i];
      int64_t axis = inputAxes[i];
      int64_t index = inputDirections[i] ? length - 1 - t : t;
      SmallVector<int64_t> shape(shapeOf(input));
      shape.erase(shape.begin() + axis);
      inputs.push_back(ctx.reshape(ctx.slice(input, axis, index, index + 1),
                                   shape));
      if (!inputs.back())
        return failure();
    }
    FailureOr<SmallVector<Value>> outputs = ctx.importer.inlineSubgraph(
        body, ctx.scope, inputs, ctx.opsets, ctx.locOverride,
        prefix + "/iteration" + std::to_string(t));
    if (failed(outputs))
      return failure();
    for (int64_t i = 0; i < numStates; ++i)
      states[i] = (*outputs)[i];
    for (int64_t i = 0; i < numScanOutputs; ++i)
      scans[i].push_back((*outputs)[numStates + i]);
  }
  return success();
}

/// Scan before opset 9: every state and scan input has a batch axis first
/// (scan inputs are read along axis 1), an optional sequence_lens input
/// comes first, and scan outputs are [batch, steps, ...]. Unrolled per batch
/// entry; sequence_lens, when given, must be the full length (shorter
/// sequences would need per-entry masking).
LogicalResult convertScanWithBatch(NodeContext &ctx, const onnx::GraphProto &body) {
  int64_t numScanInputs = ctx.getInt("num_scan_inputs", 0);
  int64_t numStates = static_cast<int64_t>(ctx.getNumInputs()) - 1 - numScanInputs;
  int64_t numScanOutputs = body.output_size() - numStates;
  if (numScanInputs < 1 || numStates < 0 || numScanOutputs < 0 ||
      body.input_size() != numStates + numScanInputs)
    return ctx.fail("the Scan body does not match its inputs");
  SmallVector<int64_t> directions = ctx.getInts("directions");
  directions.resize(numScanInputs, 0);
  SmallVector<Value> inputs;
  for (int64_t i = 1; i < static_cast<int64_t>(ctx.getNumInputs()); ++i) {
    if (!ctx.hasInput(i) || rankOf(ctx.input(i)) < 1)
      return ctx.fail("Scan input " + Twine(i) + " needs a batch axis");
    inputs.push_back(ctx.input(i));
  }
  const int64_t batch = shapeOf(inputs.front())[0];
  int64_t length = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(inputs.size()); ++i) {
    if (shapeOf(inputs[i])[0] != batch)
      return ctx.fail("Scan inputs have different batch sizes");
    if (i < numStates)
      continue;
    if (rankOf(inputs[i]) < 2)
      return ctx.fail("a scan input needs [batch, steps, ...]");
    if (length >= 0 && shapeOf(inputs[i])[1] != length)
      return ctx.fail("Scan inputs have different sequence lengths");
    length = shapeOf(inputs[i])[1];
  }
  if (length > kMaxUnrolledIterations || batch * length > kMaxUnrolledIterations)
    return ctx.fail("Scan runs " + Twine(batch) + " x " + Twine(length) +
                    " iterations; it is not unrolled");
  if (length == 0 && numScanOutputs > 0)
    return ctx.unsupported("a Scan over an empty sequence with scan outputs");
  if (ctx.hasInput(0)) {
    FailureOr<const HostTensor *> lengths = ctx.requireConstantInput(0);
    if (failed(lengths))
      return failure();
    for (int64_t i = 0; i < (*lengths)->getNumElements(); ++i)
      if ((*lengths)->getInt(i) != length)
        return ctx.unsupported("Scan with a sequence_lens entry (" +
                               Twine((*lengths)->getInt(i)) +
                               ") shorter than the sequence (" + Twine(length) + ")");
  }
  auto entry = [&](Value value, int64_t b) {
    SmallVector<int64_t> shape(shapeOf(value).drop_front());
    return ctx.reshape(ctx.slice(value, 0, b, b + 1), shape);
  };
  SmallVector<SmallVector<Value>> finalStates(numStates), scanOutputs(numScanOutputs);
  SmallVector<int64_t> axes(numScanInputs, 0);
  for (int64_t b = 0; b < batch; ++b) {
    SmallVector<Value> states, scanInputs;
    for (int64_t i = 0; i < numStates; ++i)
      states.push_back(entry(inputs[i], b));
    for (int64_t i = 0; i < numScanInputs; ++i)
      scanInputs.push_back(entry(inputs[numStates + i], b));
    if (llvm::any_of(states, [](Value v) { return !v; }) ||
        llvm::any_of(scanInputs, [](Value v) { return !v; }))
      return failure();
    SmallVector<SmallVector<Value>> scans;
    if (failed(unrollScan(ctx, body, states, scanInputs, axes, directions, length,
                          numScanOutputs,
                          nodeLabel(ctx.node) + "/batch" + std::to_string(b), scans)))
      return failure();
    for (int64_t i = 0; i < numStates; ++i)
      finalStates[i].push_back(states[i]);
    for (int64_t i = 0; i < numScanOutputs; ++i)
      scanOutputs[i].push_back(stack(ctx, scans[i]));
  }
  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  for (int64_t i = 0; i < numStates; ++i)
    ctx.outputs[i] = stack(ctx, finalStates[i]);
  for (int64_t i = 0; i < numScanOutputs; ++i)
    if (ctx.hasOutput(numStates + i))
      ctx.outputs[numStates + i] = stack(ctx, scanOutputs[i]);
  for (int64_t i = 0; i < static_cast<int64_t>(ctx.outputs.size()); ++i)
    if (ctx.hasOutput(i) && !ctx.outputs[i])
      return failure();
  return success();
}

LogicalResult convertScan(NodeContext &ctx) {
  const onnx::GraphProto *body = ctx.getGraph("body");
  if (!body)
    return ctx.fail("Scan has no body");
  if (ctx.opset < 9)
    return convertScanWithBatch(ctx, *body);
  int64_t numScanInputs = ctx.getInt("num_scan_inputs", 0);
  int64_t numStates = static_cast<int64_t>(ctx.getNumInputs()) - numScanInputs;
  int64_t numScanOutputs = body->output_size() - numStates;
  if (numStates < 0 || numScanOutputs < 0 ||
      body->input_size() != ctx.getNumInputs())
    return ctx.fail("the Scan body does not match its inputs");
  SmallVector<int64_t> inputAxes = ctx.getInts("scan_input_axes");
  SmallVector<int64_t> inputDirections = ctx.getInts("scan_input_directions");
  SmallVector<int64_t> outputAxes = ctx.getInts("scan_output_axes");
  SmallVector<int64_t> outputDirections = ctx.getInts("scan_output_directions");
  inputAxes.resize(numScanInputs, 0);
  inputDirections.resize(numScanInputs, 0);
  outputAxes.resize(numScanOutputs, 0);
  outputDirections.resize(numScanOutputs, 0);

  SmallVector<Value> states, scanInputs;
  for (int64_t i = 0; i < numStates; ++i)
    states.push_back(ctx.input(i));
  int64_t length = -1;
  for (int64_t i = 0; i < numScanInputs; ++i) {
    Value input = ctx.input(numStates + i);
    FailureOr<int64_t> axis = ctx.normalizeAxis(inputAxes[i], rankOf(input));
    if (failed(axis))
      return failure();
    inputAxes[i] = *axis;
    int64_t dim = shapeOf(input)[*axis];
    if (length >= 0 && dim != length)
      return ctx.fail("Scan inputs have different sequence lengths (" +
                      Twine(length) + " and " + Twine(dim) + ")");
    length = dim;
    scanInputs.push_back(input);
  }
  if (length < 0)
    return ctx.fail("Scan has no scan input");
  if (length > kMaxUnrolledIterations)
    return ctx.fail("Scan runs " + Twine(length) +
                    " iterations; it is not unrolled");
  if (length == 0 && numScanOutputs > 0)
    return ctx.unsupported("a Scan over an empty sequence with scan outputs");

  SmallVector<SmallVector<Value>> scans;
  if (failed(unrollScan(ctx, *body, states, scanInputs, inputAxes,
                        inputDirections, length, numScanOutputs,
                        nodeLabel(ctx.node), scans)))
    return failure();

  ctx.outputs.assign(ctx.getNumOutputs(), Value());
  for (int64_t i = 0; i < numStates; ++i)
    ctx.outputs[i] = states[i];
  for (int64_t i = 0; i < numScanOutputs; ++i) {
    if (!ctx.hasOutput(numStates + i))
      continue;
    SmallVector<Value> steps(scans[i]);
    if (outputDirections[i])
      std::reverse(steps.begin(), steps.end());
    Value stacked = stack(ctx, steps); // [length, ...]
    if (!stacked)
      return failure();
    int64_t rank = rankOf(stacked);
    FailureOr<int64_t> axis = ctx.normalizeAxis(outputAxes[i], rank);
    if (failed(axis))
      return failure();
    if (*axis != 0) {
      SmallVector<int64_t> perm;
      for (int64_t d = 1; d <= *axis; ++d)
        perm.push_back(d);
      perm.push_back(0);
      for (int64_t d = *axis + 1; d < rank; ++d)
        perm.push_back(d);
      stacked = ctx.transpose(stacked, perm);
    }
    ctx.outputs[numStates + i] = stacked;
  }
  return success();
}

} // namespace

void registerControlFlowConverters(ConverterRegistry &r) {
  r.add("If", convertIf);
  r.add("Loop", convertLoop);
  r.add("Scan", convertScan);
}

} // namespace cgc::import
