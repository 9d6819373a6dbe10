//===- ConvertEinsum.cpp - Einsum as transposes, sums and matmuls ---------===//
//
// An Einsum equation is decomposed exactly: repeated labels within an operand
// take the diagonal (transpose, reshape, strided slice), labels no one else
// needs are summed out, operands are contracted pairwise as batched matmuls
// (batch labels, then the free labels of each side, then the contracted
// ones), and the result is transposed to the output's label order. Ellipsis
// dimensions are right-aligned and broadcast as in numpy.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include <map>
#include <set>

using namespace mlir;

namespace cgc::import {
namespace {

/// Labels are letters; ellipsis dimensions get labels from kEllipsis on.
constexpr int kEllipsis = 1000;

struct Operand {
  Value value;
  SmallVector<int> labels;
};

class EinsumLowering {
public:
  explicit EinsumLowering(NodeContext &ctx) : ctx(ctx) {}
  LogicalResult run();

private:
  FailureOr<SmallVector<int>> parseTerm(StringRef term, int64_t rank,
                                        int64_t ellipsisRank);
  LogicalResult takeDiagonals(Operand &operand);
  LogicalResult sumOut(Operand &operand, const std::set<int> &keep);
  Value permute(Operand &operand, ArrayRef<int> order);
  LogicalResult contract(Operand &a, Operand &b, const std::set<int> &keep,
                         Operand &result);

  NodeContext &ctx;
  std::map<int, int64_t> sizes;
};

FailureOr<SmallVector<int>> EinsumLowering::parseTerm(StringRef term,
                                                      int64_t rank,
                                                      int64_t ellipsisRank) {
  SmallVector<int> labels;
  size_t ellipsis = term.find("...");
  int64_t letters = 0;
  for (char c : term)
    letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
  if (ellipsis == StringRef::npos && letters != rank && rank >= 0) {
    (void)ctx.fail("Einsum term '" + term + "' has " + Twine(letters) +
                   " labels for an operand of rank " + Twine(rank));
    return failure();
  }
  int64_t own = rank >= 0 ? rank - letters : ellipsisRank;
  if (own < 0) {
    (void)ctx.fail("Einsum term '" + term + "' has more labels than dimensions");
    return failure();
  }
  for (size_t i = 0; i < term.size();) {
    if (term.substr(i).starts_with("...")) {
      for (int64_t k = ellipsisRank - own; k < ellipsisRank; ++k)
        labels.push_back(kEllipsis + static_cast<int>(k));
      i += 3;
      continue;
    }
    char c = term[i++];
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      (void)ctx.fail("invalid character '" + Twine(c) + "' in Einsum equation");
      return failure();
    }
    labels.push_back(c);
  }
  return labels;
}

Value EinsumLowering::permute(Operand &operand, ArrayRef<int> order) {
  SmallVector<int64_t> perm;
  bool identity = true;
  for (int label : order) {
    int64_t position = llvm::find(operand.labels, label) - operand.labels.begin();
    identity = identity && position == static_cast<int64_t>(perm.size());
    perm.push_back(position);
  }
  operand.labels.assign(order.begin(), order.end());
  if (identity)
    return operand.value;
  operand.value = ctx.transpose(operand.value, perm);
  return operand.value;
}

LogicalResult EinsumLowering::takeDiagonals(Operand &operand) {
  while (true) {
    std::optional<int> repeated;
    for (size_t i = 0; i < operand.labels.size() && !repeated; ++i)
      for (size_t j = i + 1; j < operand.labels.size(); ++j)
        if (operand.labels[i] == operand.labels[j]) {
          repeated = operand.labels[i];
          break;
        }
    if (!repeated)
      return success();
    // Move two copies of the label last, then keep the diagonal.
    SmallVector<int> order;
    int copies = 0;
    for (int label : operand.labels)
      if (label != *repeated)
        order.push_back(label);
      else
        ++copies;
    SmallVector<int64_t> perm, shape;
    SmallVector<int64_t> positions;
    for (auto [index, label] : llvm::enumerate(operand.labels))
      if (label == *repeated)
        positions.push_back(index);
    for (int label : order)
      perm.push_back(llvm::find(operand.labels, label) - operand.labels.begin());
    perm.push_back(positions[0]);
    perm.push_back(positions[1]);
    for (size_t k = 2; k < positions.size(); ++k)
      perm.push_back(positions[k]);
    Value value = ctx.transpose(operand.value, perm);
    SmallVector<int> labels(order);
    labels.push_back(*repeated);
    labels.push_back(*repeated);
    for (int k = 2; k < copies; ++k)
      labels.push_back(*repeated);
    // Merge the two copies right after `order`.
    int64_t n = sizes[*repeated];
    SmallVector<int64_t> valueShape(shapeOf(value));
    size_t at = order.size();
    shape.assign(valueShape.begin(), valueShape.begin() + at);
    shape.push_back(n * n);
    shape.append(valueShape.begin() + at + 2, valueShape.end());
    value = ctx.reshape(value, shape);
    value = ctx.slice(value, at, 0, n * n, n + 1);
    labels.erase(labels.begin() + at + 1);
    operand.value = value;
    operand.labels = labels;
    if (!value)
      return failure();
  }
}

LogicalResult EinsumLowering::sumOut(Operand &operand,
                                     const std::set<int> &keep) {
  SmallVector<int64_t> axes;
  SmallVector<int> remaining;
  for (auto [index, label] : llvm::enumerate(operand.labels)) {
    if (keep.count(label))
      remaining.push_back(label);
    else
      axes.push_back(index);
  }
  if (axes.empty())
    return success();
  operand.value = ctx.create<op::ReduceSumOp>(
      operand.value, {ctx.named("axes", ctx.i64s(axes)),
                      ctx.named("keepdims", ctx.boolean(false))});
  operand.labels = remaining;
  return success(operand.value != nullptr);
}

LogicalResult EinsumLowering::contract(Operand &a, Operand &b,
                                       const std::set<int> &keep,
                                       Operand &result) {
  std::set<int> inA(a.labels.begin(), a.labels.end());
  std::set<int> inB(b.labels.begin(), b.labels.end());
  // Labels only one side has and nobody needs afterwards are summed first.
  std::set<int> keepA(keep), keepB(keep);
  keepA.insert(inB.begin(), inB.end());
  keepB.insert(inA.begin(), inA.end());
  if (failed(sumOut(a, keepA)) || failed(sumOut(b, keepB)))
    return failure();
  SmallVector<int> batch, left, right, contracted;
  for (int label : a.labels) {
    bool shared = llvm::is_contained(b.labels, label);
    if (shared && keep.count(label))
      batch.push_back(label);
    else if (shared)
      contracted.push_back(label);
    else
      left.push_back(label);
  }
  for (int label : b.labels)
    if (!llvm::is_contained(a.labels, label))
      right.push_back(label);
  auto sizeOf = [&](ArrayRef<int> labels) {
    int64_t n = 1;
    for (int label : labels)
      n *= sizes[label];
    return n;
  };
  SmallVector<int> orderA(batch), orderB(batch);
  orderA.append(left.begin(), left.end());
  orderA.append(contracted.begin(), contracted.end());
  orderB.append(contracted.begin(), contracted.end());
  orderB.append(right.begin(), right.end());
  Value lhs = ctx.reshape(permute(a, orderA),
                          {sizeOf(batch), sizeOf(left), sizeOf(contracted)});
  Value rhs = ctx.reshape(permute(b, orderB),
                          {sizeOf(batch), sizeOf(contracted), sizeOf(right)});
  Value product = ctx.create<op::MatMulOp>({lhs, rhs});
  SmallVector<int64_t> shape;
  SmallVector<int> labels(batch);
  labels.append(left.begin(), left.end());
  labels.append(right.begin(), right.end());
  for (int label : labels)
    shape.push_back(sizes[label]);
  result.value = ctx.reshape(product, shape);
  result.labels = labels;
  return success(result.value != nullptr);
}

LogicalResult EinsumLowering::run() {
  std::string equation;
  for (char c : ctx.getString("equation"))
    if (!std::isspace(static_cast<unsigned char>(c)))
      equation.push_back(c);
  StringRef text(equation);
  auto [lhs, rhs] = text.split("->");
  bool explicitOutput = text.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ctx.getNumInputs())
    return ctx.fail("Einsum equation '" + equation + "' has " +
                    Twine(terms.size()) + " terms for " +
                    Twine(ctx.getNumInputs()) + " inputs");

  // The ellipsis covers as many dimensions as the longest one.
  int64_t ellipsisRank = 0;
  for (auto [index, term] : llvm::enumerate(terms)) {
    if (!term.contains("..."))
      continue;
    int64_t letters = 0;
    for (char c : term)
      letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    ellipsisRank = std::max(ellipsisRank, rankOf(ctx.input(index)) - letters);
  }

  SmallVector<Operand> operands;
  std::map<int, int> counts;
  for (auto [index, term] : llvm::enumerate(terms)) {
    Value value = ctx.input(index);
    FailureOr<SmallVector<int>> labels =
        parseTerm(term, rankOf(value), ellipsisRank);
    if (failed(labels))
      return failure();
    for (auto [d, label] : llvm::enumerate(*labels)) {
      int64_t size = shapeOf(value)[d];
      auto [it, inserted] = sizes.try_emplace(label, size);
      if (!inserted && it->second != size) {
        if (it->second == 1)
          it->second = size;
        else if (size != 1)
          return ctx.fail("Einsum label sizes disagree (" + Twine(it->second) +
                          " and " + Twine(size) + ")");
      }
      ++counts[label];
    }
    operands.push_back({value, *labels});
  }
  // Broadcast size-1 dimensions against the other operands.
  for (Operand &operand : operands) {
    SmallVector<int64_t> target;
    bool broadcast = false;
    for (auto [d, label] : llvm::enumerate(operand.labels)) {
      target.push_back(sizes[label]);
      broadcast = broadcast || shapeOf(operand.value)[d] != sizes[label];
    }
    if (broadcast)
      operand.value = ctx.create<op::ExpandOp>(
          operand.value, {ctx.named("shape", ctx.i64s(target))});
  }

  SmallVector<int> output;
  if (explicitOutput) {
    FailureOr<SmallVector<int>> labels = parseTerm(rhs, -1, ellipsisRank);
    if (failed(labels))
      return failure();
    output = *labels;
    for (int label : output)
      if (!sizes.count(label))
        return ctx.fail("Einsum output label '" + Twine(char(label)) +
                        "' is not in any input");
  } else {
    for (int k = 0; k < ellipsisRank; ++k)
      output.push_back(kEllipsis + k);
    for (auto [label, count] : counts)
      if (label < kEllipsis && count == 1)
        output.push_back(label);
  }
  std::set<int> outputSet(output.begin(), output.end());
  if (outputSet.size() != output.size())
    return ctx.fail("Einsum output repeats a label");

  for (Operand &operand : operands)
    if (failed(takeDiagonals(operand)))
      return failure();
  Operand result = operands.front();
  for (size_t i = 1; i < operands.size(); ++i) {
    std::set<int> keep(outputSet);
    for (size_t j = i + 1; j < operands.size(); ++j)
      keep.insert(operands[j].labels.begin(), operands[j].labels.end());
    Operand combined;
    if (failed(contract(result, operands[i], keep, combined)))
      return failure();
    result = combined;
  }
  if (failed(sumOut(result, outputSet)))
    return failure();
  Value value = permute(result, output);
  if (value == ctx.input(0))
    value = ctx.create<op::IdentityOp>(value);
  return ctx.setOutput(value);
}

} // namespace

void registerEinsumConverter(ConverterRegistry &r) {
  r.add("Einsum", [](NodeContext &ctx) { return EinsumLowering(ctx).run(); });
}

} // namespace cgc::import
