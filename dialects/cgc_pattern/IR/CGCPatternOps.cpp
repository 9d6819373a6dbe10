//===- CGCPatternOps.cpp - Ops of the cgc_pattern dialect -----------------===//

#include "cgc_pattern/IR/CGCPatternOps.h"

#include "cgc_op/IR/CGCOpOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace cgc::pattern {

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

bool matchesNames(ArrayAttr names, Operation *op) {
  if (!op->getDialect() ||
      op->getDialect()->getNamespace() != op::CGCOpDialect::getDialectNamespace())
    return false;
  for (auto name : names.getAsValueRange<StringAttr>()) {
    if (name == kClassAny)
      return true;
    if (name == kClassElementwise) {
      if (op::isElementwise(op))
        return true;
      continue;
    }
    if (op->getName().getStringRef() == name)
      return true;
  }
  return false;
}

/// Checks each entry of a `names` list: a known class or a cgc_op layer.
static LogicalResult verifyNames(Operation *op, ArrayAttr names) {
  if (names.empty())
    return op->emitOpError("'names' must list at least one layer or class");
  for (auto name : names.getAsValueRange<StringAttr>()) {
    if (!name.contains('.')) {
      if (name != kClassAny && name != kClassElementwise)
        return op->emitOpError("unknown class '")
               << name << "'; the classes are '" << kClassElementwise
               << "' and '" << kClassAny << "'";
      continue;
    }
    if (!name.starts_with("cgc_op.") ||
        !RegisteredOperationName::lookup(name, op->getContext()))
      return op->emitOpError("'") << name << "' is not a cgc_op layer";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PatternOp
//===----------------------------------------------------------------------===//

YieldOp PatternOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

ChainOp PatternOp::getChain() {
  auto chains = getBody().front().getOps<ChainOp>();
  return chains.empty() ? ChainOp() : *chains.begin();
}

MatchOp PatternOp::getRoot() {
  if (ChainOp chain = getChain())
    return chain.getSource().getDefiningOp<MatchOp>();
  YieldOp yield = getYield();
  if (yield.getValues().empty())
    return MatchOp();
  return yield.getValues().front().getDefiningOp<MatchOp>();
}

unsigned PatternOp::getNumFixedOps() {
  return llvm::range_size(getBody().front().getOps<MatchOp>());
}

LogicalResult PatternOp::verifyRegions() {
  Block &block = getBody().front();
  ChainOp chain;
  for (Operation &op : block) {
    if (!isa<InputOp, MatchOp, ChainOp, YieldOp>(op))
      return op.emitOpError("is not allowed in a cgc_pattern.pattern; a "
                            "pattern holds cgc_pattern.input, op, chain and "
                            "yield");
    if (auto c = dyn_cast<ChainOp>(op)) {
      if (chain)
        return c.emitOpError("is a second chain; a pattern has at most one "
                             "cgc_pattern.chain");
      chain = c;
    }
  }
  if (chain) {
    for (Operation *user : chain.getResult().getUsers())
      if (!isa<YieldOp>(user))
        return chain.emitOpError("result may only be yielded; a chain ends "
                                 "the pattern");
    if (!chain.getSource().getDefiningOp<MatchOp>())
      return chain.emitOpError("source must be the result of a "
                               "cgc_pattern.op");
  }
  YieldOp yield = getYield();
  for (auto [index, value] : llvm::enumerate(yield.getValues()))
    if (!value.getDefiningOp<MatchOp>() && !value.getDefiningOp<ChainOp>())
      return yield.emitOpError("operand #")
             << index << " is a cgc_pattern.input; a pattern yields results "
             << "of matched layers";
  MatchOp root = getRoot();
  if (!root)
    return emitOpError("has no root layer to match from");

  // Everything must hang off the root: matching walks operands backwards.
  llvm::SmallPtrSet<Operation *, 16> reached;
  SmallVector<Operation *> worklist{root};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!reached.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
  }
  for (Operation &op : block)
    if (isa<InputOp, MatchOp>(op) && !reached.contains(&op))
      return op.emitOpError("is not reachable from the pattern's root (the ")
             << (chain ? "chain's source" : "first yielded value")
             << "); matching walks operands backwards from it";
  return success();
}

//===----------------------------------------------------------------------===//
// InputOp, MatchOp, ChainOp, YieldOp, RejectWhenOp
//===----------------------------------------------------------------------===//

LogicalResult InputOp::verify() { return verifyValueConstraints(*this); }

LogicalResult MatchOp::verify() {
  if (failed(verifyNames(*this, getNames())))
    return failure();
  if (getCommutative() && getOperands().size() != 2)
    return emitOpError("'commutative' needs exactly two operands, got ")
           << getOperands().size();
  if (DictionaryAttr oneOf = getAttrsOneOfAttr())
    for (NamedAttribute entry : oneOf) {
      auto values = dyn_cast<ArrayAttr>(entry.getValue());
      if (!values || values.empty())
        return emitOpError("'attrs_one_of' entry '")
               << entry.getName().getValue()
               << "' must be a non-empty list of allowed values";
    }
  bool sawOptional = false;
  for (auto [index, operand] : llvm::enumerate(getOperands())) {
    auto input = operand.getDefiningOp<InputOp>();
    bool optional = input && input.getOptional();
    if (sawOptional && !optional)
      return emitOpError("operand #")
             << index << " follows an optional input; optional inputs must "
             << "be the trailing operands";
    sawOptional |= optional;
  }
  return verifyValueConstraints(*this);
}

LogicalResult ChainOp::verify() {
  if (failed(verifyNames(*this, getNames())))
    return failure();
  int64_t minLength = getMinLengthAttr().getInt();
  int64_t maxLength = getMaxLengthAttr().getInt();
  if (minLength < 0)
    return emitOpError("'min_length' must be non-negative, got ") << minLength;
  if (maxLength < -1 || (maxLength != -1 && maxLength < minLength))
    return emitOpError("'max_length' must be -1 (no limit) or at least "
                       "'min_length', got ")
           << maxLength;
  return verifyValueConstraints(*this);
}

LogicalResult YieldOp::verify() {
  if (getValues().empty())
    return emitOpError("must yield at least one value");
  return success();
}

LogicalResult RejectWhenOp::verify() {
  if (getInput() && getOutput())
    return emitOpError("selects either an input or an output, not both");
  if ((getInputAttr() && getInputAttr().getInt() < 0) ||
      (getOutputAttr() && getOutputAttr().getInt() < 0))
    return emitOpError("input/output index must be non-negative");
  if (getReason().empty())
    return emitOpError("must give a reason");
  return verifyValueConstraints(*this);
}

LogicalResult
RejectWhenOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *target = symbolTable.lookupNearestSymbolFrom(*this, getPatternAttr());
  if (!target || !isa<PatternOp>(target))
    return emitOpError("'") << getPattern()
                            << "' does not name a cgc_pattern.pattern";
  return success();
}

} // namespace cgc::pattern

#define GET_OP_CLASSES
#include "cgc_pattern/IR/CGCPatternOps.cpp.inc"
