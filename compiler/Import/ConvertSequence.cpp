//===- ConvertSequence.cpp - Sequence and optional ops --------------------===//
//
// ONNX sequences and optionals are resolved at import time, like control
// flow: a sequence is a list of tensor values whose length is known when
// the model is compiled (its graph inputs are bound with
// `--input-shape x=sequence(N)`), an optional holds a value or not, known
// likewise (`--input-shape x=none` for one that holds none). The ops below
// rearrange those lists (see Aggregate in ImporterImpl.h); what reaches a
// graph output becomes tensor results. Positions, lengths and presence are
// therefore compile-time values, and an out-of-range position is an error
// at the node rather than at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace cgc::import {
namespace {

/// The most tensors a sequence op produces: each is a value of its own in
/// the IR (SplitToSequence of a long axis, SequenceMap over a long
/// sequence), so the bound keeps a hostile model from building millions.
constexpr int64_t kMaxSequenceLength = 4096;

/// The tensors of a new sequence must share an element type.
LogicalResult checkElementTypes(NodeContext &ctx, ArrayRef<Value> items) {
  for (Value item : items)
    if (kindOf(item) != kindOf(items.front()))
      return ctx.fail("the sequence's tensors have different element types (" +
                      stringifyElementKind(kindOf(items.front())).str() + " and " +
                      stringifyElementKind(kindOf(item)).str() + ")");
  return success();
}

/// Input `i` as a position into a sequence of `length` tensors, in
/// [-length, length + extra) (extra is 1 where a position may name the end).
FailureOr<int64_t> readPosition(NodeContext &ctx, unsigned i, int64_t length,
                                int64_t extra) {
  FailureOr<double> read = ctx.requireScalarInput(i);
  if (failed(read))
    return failure();
  auto position = static_cast<int64_t>(*read);
  if (position < -length || position >= length + extra) {
    (void)ctx.fail("position " + Twine(position) + " is out of range for a sequence of " +
                   Twine(length) + " tensors");
    return failure();
  }
  return position < 0 ? position + length : position;
}

LogicalResult convertSequenceConstruct(NodeContext &ctx) {
  SmallVector<Value> items;
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i) {
    if (!ctx.hasInput(i))
      return ctx.fail("input #" + Twine(i) + " is empty");
    items.push_back(ctx.input(i));
  }
  if (failed(checkElementTypes(ctx, items)))
    return failure();
  return ctx.setAggregateOutput(0, {Aggregate::Kind::Sequence, items});
}

LogicalResult convertSequenceEmpty(NodeContext &ctx) {
  return ctx.setAggregateOutput(0, {Aggregate::Kind::Sequence, {}});
}

LogicalResult convertSequenceAt(NodeContext &ctx) {
  FailureOr<SmallVector<Value>> items = ctx.sequenceInput(0);
  if (failed(items))
    return failure();
  FailureOr<int64_t> position = readPosition(ctx, 1, items->size(), 0);
  if (failed(position))
    return failure();
  return ctx.setOutput((*items)[*position]);
}

LogicalResult convertSequenceInsert(NodeContext &ctx) {
  FailureOr<SmallVector<Value>> items = ctx.sequenceInput(0);
  if (failed(items))
    return failure();
  if (!ctx.hasInput(1) || getAggregate(ctx.input(1)))
    return ctx.fail("SequenceInsert inserts a tensor");
  int64_t position = items->size();
  if (ctx.hasInput(2)) {
    FailureOr<int64_t> read = readPosition(ctx, 2, items->size(), 1);
    if (failed(read))
      return failure();
    position = *read;
  }
  if (static_cast<int64_t>(items->size()) >= kMaxSequenceLength)
    return ctx.fail("the sequence would hold more than " + Twine(kMaxSequenceLength) +
                    " tensors");
  items->insert(items->begin() + position, ctx.input(1));
  if (failed(checkElementTypes(ctx, *items)))
    return failure();
  return ctx.setAggregateOutput(0, {Aggregate::Kind::Sequence, *items});
}

LogicalResult convertSequenceErase(NodeContext &ctx) {
  FailureOr<SmallVector<Value>> items = ctx.sequenceInput(0);
  if (failed(items))
    return failure();
  if (items->empty())
    return ctx.fail("SequenceErase of an empty sequence");
  int64_t position = items->size() - 1;
  if (ctx.hasInput(1)) {
    FailureOr<int64_t> read = readPosition(ctx, 1, items->size(), 0);
    if (failed(read))
      return failure();
    position = *read;
  }
  items->erase(items->begin() + position);
  return ctx.setAggregateOutput(0, {Aggregate::Kind::Sequence, *items});
}

LogicalResult convertSequenceLength(NodeContext &ctx) {
  Value count;
  FailureOr<SmallVector<Value>> items = ctx.sequenceInput(0, &count);
  if (failed(items))
    return failure();
  return ctx.setOutput(count ? count : ctx.scalar(ElementKind::Int64, items->size()));
}

LogicalResult convertConcatFromSequence(NodeContext &ctx) {
  Value count;
  FailureOr<SmallVector<Value>> items = ctx.sequenceInput(0, &count);
  if (failed(items))
    return failure();
  if (items->empty())
    return ctx.fail("ConcatFromSequence of an empty sequence");
  if (!ctx.hasAttr("axis"))
    return ctx.fail("ConcatFromSequence needs an axis");
  bool newAxis = ctx.getInt("new_axis", 0) != 0;
  int64_t rank = rankOf(items->front());
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", 0), rank + newAxis);
  if (failed(axis))
    return failure();
  SmallVector<Value> pieces;
  for (Value item : *items) {
    if (rankOf(item) != rank)
      return ctx.fail("the sequence's tensors have different ranks (" + Twine(rank) +
                      " and " + Twine(rankOf(item)) + ")");
    if (!newAxis) {
      pieces.push_back(item);
      continue;
    }
    SmallVector<int64_t> shape(shapeOf(item));
    shape.insert(shape.begin() + *axis, 1);
    pieces.push_back(ctx.reshape(item, shape));
    if (!pieces.back())
      return failure();
  }
  Value joined = pieces.size() == 1
                     ? pieces.front()
                     : ctx.create<op::ConcatOp>(pieces, {ctx.named("axis", ctx.i64(*axis))});
  if (!count || !joined)
    return ctx.setOutput(joined);
  // A sequence of run-time length (a Loop's appends): joined along axis 0,
  // its first count x (rows per tensor) rows are the value.
  if (*axis != 0)
    return ctx.fail("ConcatFromSequence of a sequence whose length is decided at run time "
                    "joins along axis 0 only (this one along axis " + Twine(*axis) + ")");
  const int64_t rowsEach = shapeOf(pieces.front())[0];
  for (Value piece : pieces)
    if (shapeOf(piece)[0] != rowsEach)
      return ctx.fail("ConcatFromSequence of a sequence whose length is decided at run time "
                      "needs tensors of one extent along axis 0");
  Value rows = rowsEach == 1 ? count : ctx.mul(count, ctx.scalar(ElementKind::Int64, rowsEach));
  if (!rows)
    return failure();
  ctx.importer.addDataDependentRows(joined, rows,
                                    "the sequence ConcatFromSequence '" + nodeLabel(ctx.node) +
                                        "' joins");
  return ctx.setOutput(joined);
}

LogicalResult convertSplitToSequence(NodeContext &ctx) {
  Value input = ctx.input(0);
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.getInt("axis", 0), rankOf(input));
  if (failed(axis))
    return failure();
  int64_t length = shapeOf(input)[*axis];
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.hasInput(1)) {
    squeeze = ctx.getInt("keepdims", 1) == 0;
    if (length > kMaxSequenceLength)
      return ctx.fail("splitting " + Twine(length) + " entries into a sequence of as many "
                      "tensors (at most " + Twine(kMaxSequenceLength) + ")");
    sizes.assign(length, 1);
  } else {
    FailureOr<const HostTensor *> split = ctx.requireConstantInput(1);
    if (failed(split))
      return failure();
    SmallVector<int64_t> values = (*split)->getInts();
    if ((*split)->getRank() == 0) {
      int64_t chunk = values.front();
      if (chunk <= 0)
        return ctx.fail("split must be positive, not " + Twine(chunk));
      if (length / chunk >= kMaxSequenceLength)
        return ctx.fail("splitting " + Twine(length) + " entries in chunks of " +
                        Twine(chunk) + " makes more than " + Twine(kMaxSequenceLength) +
                        " tensors");
      for (int64_t start = 0; start < length; start += chunk)
        sizes.push_back(std::min(chunk, length - start));
    } else {
      if ((*split)->getRank() != 1 ||
          static_cast<int64_t>(values.size()) > kMaxSequenceLength)
        return ctx.fail("split must be a scalar or 1-D with at most " +
                        Twine(kMaxSequenceLength) + " sizes");
      int64_t total = 0;
      for (int64_t size : values) {
        if (size < 0 || size > length)
          return ctx.fail("split size " + Twine(size) + " is out of range for axis length " +
                          Twine(length));
        total += size;
      }
      if (total != length)
        return ctx.fail("the split sizes add up to " + Twine(total) + ", not the axis length " +
                        Twine(length));
      sizes = values;
    }
  }
  SmallVector<Value> items;
  int64_t start = 0;
  for (int64_t size : sizes) {
    Value piece = ctx.slice(input, *axis, start, start + size);
    start += size;
    if (piece && squeeze) {
      SmallVector<int64_t> shape(shapeOf(piece));
      shape.erase(shape.begin() + *axis);
      piece = ctx.reshape(piece, shape);
    }
    if (!piece)
      return failure();
    items.push_back(piece);
  }
  return ctx.setAggregateOutput(0, {Aggregate::Kind::Sequence, items});
}

/// SequenceMap runs its body once per position of its sequence inputs
/// (tensor inputs are passed whole to every run) and gathers each body
/// output into a sequence.
LogicalResult convertSequenceMap(NodeContext &ctx) {
  const onnx::GraphProto *body = ctx.getGraph("body");
  if (!body)
    return ctx.fail("SequenceMap has no body");
  if (body->input_size() != static_cast<int>(ctx.getNumInputs()) ||
      body->output_size() != static_cast<int>(ctx.getNumOutputs()))
    return ctx.fail("the SequenceMap body's inputs and outputs do not match the node's");
  FailureOr<SmallVector<Value>> first = ctx.sequenceInput(0);
  if (failed(first))
    return failure();
  const size_t length = first->size();
  SmallVector<std::optional<SmallVector<Value>>> sequences;
  for (unsigned i = 0; i < ctx.getNumInputs(); ++i) {
    if (!ctx.hasInput(i))
      return ctx.fail("input #" + Twine(i) + " is empty");
    std::optional<Aggregate> aggregate = getAggregate(ctx.input(i));
    if (aggregate && aggregate->kind != Aggregate::Kind::Sequence)
      return ctx.fail("input #" + Twine(i) + " is " + describeValueKind(ctx.input(i)));
    if (aggregate && aggregate->count)
      return ctx.fail("input #" + Twine(i) + " is a sequence whose length is decided at run "
                      "time, which SequenceMap cannot read");
    if (aggregate && aggregate->items.size() != length)
      return ctx.fail("the sequences have different lengths (" + Twine(length) + " and " +
                      Twine(aggregate->items.size()) + ")");
    sequences.push_back(aggregate ? std::optional(aggregate->items) : std::nullopt);
  }
  SmallVector<SmallVector<Value>> results(ctx.getNumOutputs());
  for (size_t position = 0; position < length; ++position) {
    SmallVector<Value> inputs;
    for (unsigned i = 0; i < ctx.getNumInputs(); ++i)
      inputs.push_back(sequences[i] ? (*sequences[i])[position] : ctx.input(i));
    FailureOr<SmallVector<Value>> outputs = ctx.importer.inlineSubgraph(
        *body, ctx.scope, inputs, ctx.opsets, ctx.locOverride,
        nodeLabel(ctx.node) + "/position" + std::to_string(position));
    if (failed(outputs))
      return failure();
    for (auto [i, output] : llvm::enumerate(*outputs)) {
      if (getAggregate(output))
        return ctx.fail("output #" + Twine(i) + " of the SequenceMap body is " +
                        describeValueKind(output) + "; it must be a tensor");
      results[i].push_back(output);
    }
  }
  for (auto [i, items] : llvm::enumerate(results))
    if (failed(ctx.setAggregateOutput(i, {Aggregate::Kind::Sequence, items})))
      return failure();
  return success();
}

LogicalResult convertOptional(NodeContext &ctx) {
  if (!ctx.hasInput(0)) {
    if (!ctx.getAttr("type"))
      return ctx.fail("an Optional without an input needs its type attribute");
    return ctx.setAggregateOutput(0, {Aggregate::Kind::Optional, {}});
  }
  if (std::optional<Aggregate> aggregate = getAggregate(ctx.input(0));
      aggregate && aggregate->kind == Aggregate::Kind::Optional)
    return ctx.fail("an Optional of an optional");
  return ctx.setAggregateOutput(0, {Aggregate::Kind::Optional, {ctx.input(0)}});
}

LogicalResult convertOptionalHasElement(NodeContext &ctx) {
  bool present = false;
  if (ctx.hasInput(0)) {
    std::optional<Aggregate> aggregate = getAggregate(ctx.input(0));
    present = !aggregate || aggregate->kind == Aggregate::Kind::Sequence ||
              !aggregate->items.empty();
  }
  return ctx.setOutput(ctx.scalar(ElementKind::Bool, present));
}

LogicalResult convertOptionalGetElement(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.fail("OptionalGetElement needs an input");
  std::optional<Aggregate> aggregate = getAggregate(ctx.input(0));
  if (!aggregate || aggregate->kind == Aggregate::Kind::Sequence)
    return ctx.setOutput(ctx.input(0)); // opset 18: a tensor or sequence is itself
  if (aggregate->items.empty())
    return ctx.fail("OptionalGetElement of an optional that holds no value");
  return ctx.setOutput(aggregate->items.front());
}

} // namespace

bool takesAggregates(StringRef opType) {
  static const llvm::StringSet<> ops = {
      "Identity",          "If",           "Loop",
      "SequenceAt",        "SequenceInsert", "SequenceErase",
      "SequenceLength",    "ConcatFromSequence", "SequenceMap",
      "Optional",          "OptionalHasElement", "OptionalGetElement"};
  return ops.contains(opType);
}

void registerSequenceConverters(ConverterRegistry &r) {
  r.add("SequenceConstruct", convertSequenceConstruct);
  r.add("SequenceEmpty", convertSequenceEmpty);
  r.add("SequenceAt", convertSequenceAt);
  r.add("SequenceInsert", convertSequenceInsert);
  r.add("SequenceErase", convertSequenceErase);
  r.add("SequenceLength", convertSequenceLength);
  r.add("ConcatFromSequence", convertConcatFromSequence);
  r.add("SplitToSequence", convertSplitToSequence);
  r.add("SequenceMap", convertSequenceMap);
  r.add("Optional", convertOptional);
  r.add("OptionalHasElement", convertOptionalHasElement);
  r.add("OptionalGetElement", convertOptionalGetElement);
}

} // namespace cgc::import
