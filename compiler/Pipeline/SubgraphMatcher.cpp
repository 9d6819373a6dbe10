//===- SubgraphMatcher.cpp - Target patterns against Input IR -------------===//

#include "compiler/Pipeline/SubgraphMatcher.h"

#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Registry.h"
#include "cgc_op/IR/CGCOpOps.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace mlir;

namespace cgc {

//===----------------------------------------------------------------------===//
// Loading patterns
//===----------------------------------------------------------------------===//

std::string SubgraphMatcher::rejectionKey(StringRef target, StringRef pattern) {
  return (target + "/" + pattern).str();
}

LogicalResult SubgraphMatcher::initialize(MLIRContext *context,
                                          ArrayRef<std::string> targetSpecs,
                                          std::string &error) {
  if (!resolveTargets(targetSpecs, targets, error))
    return failure();
  for (auto [index, target] : llvm::enumerate(targets)) {
    OwningOpRef<ModuleOp> declaration =
        requestDeclaration(context, target, error);
    if (!declaration)
      return failure();
    for (auto op : declaration->getBody()->getOps<pattern::PatternOp>()) {
      Pattern p;
      p.target = index;
      p.op = op;
      p.key = rejectionKey(target.name, op.getSymName());
      p.priority = op.getPriorityAttr().getInt();
      p.nameByOps = op.getNaming() == "ops";
      op.walk([&](Operation *inner) {
        p.alignment =
            std::max(p.alignment, pattern::getRequiredAlignment(inner));
      });
      patterns.push_back(p);
    }
    declarations.push_back(std::move(declaration));
  }
  return success();
}

const TargetHandle *SubgraphMatcher::findTarget(StringRef name) const {
  for (const TargetHandle &target : targets)
    if (target.name == name)
      return &target;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Matching one pattern at one root
//===----------------------------------------------------------------------===//

struct SubgraphMatcher::Candidate {
  unsigned pattern = 0;
  SmallVector<Operation *> ops; // in block order
  unsigned rootPosition = 0;
  Operation *root = nullptr;
};

namespace {
/// Bindings of pattern values to concrete IR during one match attempt.
struct Bindings {
  DenseMap<Operation *, Operation *> ops;  // pattern op -> layer
  llvm::SmallPtrSet<Operation *, 8> used;  // layers bound
  DenseMap<Value, Value> inputs;           // pattern input -> value (null: absent)
};
} // namespace

/// The search over one entry point block.
class SubgraphMatcher::Search {
public:
  Search(EntryPointOp entry) : entry(entry) {
    Block &block = entry.getBody().front();
    unsigned index = 0;
    for (Operation &op : block)
      position[&op] = index++;
    returnOp = cast<ReturnOp>(block.getTerminator());
  }

  bool isFree(Operation *op) {
    return op->getBlock() == &entry.getBody().front() &&
           op->getDialect() &&
           op->getDialect()->getNamespace() == "cgc_op";
  }

  unsigned pos(Operation *op) const { return position.lookup(op); }

  /// Tries `p` rooted at `root`; fills `ops` on success.
  bool match(const Pattern &constPattern, Operation *root,
             SmallVector<Operation *> &ops) {
    Pattern p = constPattern;
    pattern::MatchOp rootPattern = p.op.getRoot();
    Bindings b;
    if (!matchOp(rootPattern, root, b))
      return false;
    // Every pattern op is reachable from the root (verified), so every
    // pattern op is bound now.
    llvm::SmallPtrSet<Operation *, 8> inSet;
    for (auto &[patternOp, layer] : b.ops)
      inSet.insert(layer);

    // The chain, as long as possible.
    Value chainEnd;
    if (pattern::ChainOp chain = p.op.getChain()) {
      Value current = root->getResult(0);
      int64_t maxLength = chain.getMaxLengthAttr().getInt();
      int64_t length = 0;
      ArrayRef<int64_t> sourceShape =
          cast<TensorType>(current.getType()).getShape();
      while (maxLength < 0 || length < maxLength) {
        Operation *user = singleUser(current);
        if (!user || !isFree(user) || inSet.contains(user) ||
            user->getNumResults() != 1 ||
            !pattern::matchesNames(chain.getNames(), user))
          break;
        if (chain.getKeepShape() &&
            cast<TensorType>(user->getResult(0).getType()).getShape() !=
                sourceShape)
          break;
        inSet.insert(user);
        current = user->getResult(0);
        ++length;
      }
      if (length < chain.getMinLengthAttr().getInt())
        return false;
      std::string why;
      if (!pattern::satisfiesValueConstraints(
              chain, cast<TensorLikeType>(current.getType()), -1, why))
        return false;
      chainEnd = current;
    }

    // Inputs must come from outside the match.
    for (auto &[patternValue, value] : b.inputs)
      if (value && value.getDefiningOp() && inSet.contains(value.getDefiningOp()))
        return false;

    // Only yielded values may be used outside the match.
    DenseSet<Value> mayEscape;
    for (Value yielded : p.op.getYield().getValues()) {
      if (auto patternOp = yielded.getDefiningOp<pattern::MatchOp>()) {
        for (Value result : b.ops.lookup(patternOp)->getResults())
          mayEscape.insert(result);
      } else {
        mayEscape.insert(chainEnd);
      }
    }
    for (Operation *op : inSet)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!inSet.contains(user) && !mayEscape.contains(result))
            return false;

    if (!isConvex(inSet))
      return false;
    ops.assign(inSet.begin(), inSet.end());
    llvm::sort(ops, [&](Operation *a, Operation *b) { return pos(a) < pos(b); });
    return true;
  }

private:
  /// The one op using `value` (possibly several times), if the value is not
  /// also returned and has no other user.
  Operation *singleUser(Value value) const {
    Operation *user = nullptr;
    for (Operation *u : value.getUsers()) {
      if (user && u != user)
        return nullptr;
      user = u;
    }
    if (user == returnOp)
      return nullptr;
    return user;
  }

  bool matchOp(pattern::MatchOp p, Operation *layer, Bindings &b) {
    if (Operation *bound = b.ops.lookup(p))
      return bound == layer;
    if (!isFree(layer) || b.used.contains(layer) ||
        !pattern::matchesNames(p.getNames(), layer) ||
        layer->getNumResults() == 0)
      return false;
    std::string why;
    if (!pattern::satisfiesValueConstraints(
            p, cast<TensorLikeType>(layer->getResult(0).getType()), -1, why))
      return false;
    if (!matchAttributes(p, layer))
      return false;

    // Operands.
    OperandRange patternOperands = p.getOperands();
    unsigned numPattern = patternOperands.size();
    unsigned numLayer = layer->getNumOperands();
    if (!p.getOpen() && numLayer > numPattern)
      return false;
    for (unsigned i = numLayer; i < numPattern; ++i) {
      auto input = patternOperands[i].getDefiningOp<pattern::InputOp>();
      if (!input || !input.getOptional())
        return false;
    }
    b.ops[p] = layer;
    b.used.insert(layer);
    auto matchInOrder = [&](ArrayRef<unsigned> order, Bindings &state) {
      for (unsigned i = 0; i < numPattern; ++i) {
        Value patternValue = patternOperands[i];
        unsigned layerIndex = order.empty() ? i : order[i];
        Value value =
            layerIndex < numLayer ? layer->getOperand(layerIndex) : Value();
        if (!matchValue(patternValue, value, state))
          return false;
      }
      return true;
    };
    if (p.getCommutative() && numLayer >= 2) {
      Bindings saved = b;
      if (matchInOrder({0, 1}, b))
        return true;
      b = std::move(saved);
      return matchInOrder({1, 0}, b);
    }
    return matchInOrder({}, b);
  }

  bool matchValue(Value patternValue, Value value, Bindings &b) {
    if (auto input = patternValue.getDefiningOp<pattern::InputOp>()) {
      auto bound = b.inputs.find(patternValue);
      if (bound != b.inputs.end())
        return bound->second == value;
      if (!value) {
        if (!input.getOptional())
          return false;
        b.inputs[patternValue] = Value();
        return true;
      }
      auto type = cast<TensorLikeType>(value.getType());
      if (BoolAttr constant = input.getConstantAttr())
        if (constant.getValue() != type.getIsConstant())
          return false;
      std::string why;
      if (!pattern::satisfiesValueConstraints(input, type, -1, why))
        return false;
      b.inputs[patternValue] = value;
      return true;
    }
    auto patternOp = patternValue.getDefiningOp<pattern::MatchOp>();
    if (!patternOp || !value)
      return false;
    auto result = dyn_cast<OpResult>(value);
    if (!result || result.getResultNumber() != 0)
      return false;
    return matchOp(patternOp, result.getOwner(), b);
  }

  static bool matchAttributes(pattern::MatchOp p, Operation *layer) {
    DictionaryAttr required = p.getAttrsAttr();
    DictionaryAttr oneOf = p.getAttrsOneOfAttr();
    if (!required && !oneOf)
      return true;
    DictionaryAttr actual = pattern::getEffectiveAttributes(layer);
    if (required)
      for (NamedAttribute attr : required)
        if (actual.get(attr.getName()) != attr.getValue())
          return false;
    if (oneOf)
      for (NamedAttribute attr : oneOf) {
        Attribute value = actual.get(attr.getName());
        if (!value ||
            !llvm::is_contained(cast<ArrayAttr>(attr.getValue()), value))
          return false;
      }
    return true;
  }

  /// No path leaves the set and comes back: outlining it cannot create a
  /// cycle, and neither can outlining any other convex set beside it.
  bool isConvex(const llvm::SmallPtrSetImpl<Operation *> &inSet) const {
    if (inSet.size() <= 1)
      return true;
    unsigned low = ~0u;
    for (Operation *op : inSet)
      low = std::min(low, pos(op));
    SmallVector<Operation *> stack;
    llvm::SmallPtrSet<Operation *, 32> visited;
    for (Operation *op : inSet)
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (!inSet.contains(def) && pos(def) > low)
            stack.push_back(def);
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      if (!visited.insert(op).second)
        continue;
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || pos(def) < low)
          continue;
        if (inSet.contains(def))
          return false;
        stack.push_back(def);
      }
    }
    return true;
  }

  EntryPointOp entry;
  ReturnOp returnOp;
  DenseMap<Operation *, unsigned> position;
};

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

/// "max_pool" -> "maxPool"; joined as "convolutionReluAdd".
static std::string nameFromOps(ArrayRef<Operation *> ops) {
  std::string name;
  for (Operation *op : ops) {
    StringRef mnemonic = op->getName().stripDialect();
    bool upper = !name.empty();
    for (char c : mnemonic) {
      if (c == '_') {
        upper = true;
        continue;
      }
      name += upper ? static_cast<char>(toupper(c)) : c;
      upper = false;
    }
    if (name.size() > 48)
      break;
  }
  return name;
}

static void outline(ModuleOp module, EntryPointOp entry, StringRef origin,
                    StringRef patternName, int64_t alignment,
                    StringRef baseName, ArrayRef<Operation *> ops,
                    Operation *root, unsigned serial) {
  MLIRContext *context = module.getContext();
  llvm::SmallPtrSet<Operation *, 16> inSet(ops.begin(), ops.end());
  ReturnOp returnOp =
      cast<ReturnOp>(entry.getBody().front().getTerminator());

  SmallVector<Value> inputs, outputs;
  DenseSet<Value> seen;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if ((!def || !inSet.contains(def)) && seen.insert(operand).second)
        inputs.push_back(operand);
    }
  for (Operation *op : ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inSet.contains(user) || user == returnOp;
          }))
        outputs.push_back(result);

  OpBuilder builder(context);
  builder.setInsertionPoint(entry);
  Location loc = ops.front()->getLoc();
  if (ops.size() > 1) {
    SmallVector<Location> locs;
    for (Operation *op : ops)
      locs.push_back(op->getLoc());
    loc = builder.getFusedLoc(locs);
  }
  std::string name = ("sg." + Twine(serial)).str();
  auto subgraph = SubgraphOp::create(builder, 
      loc, builder.getStringAttr(name), builder.getStringAttr(origin));
  subgraph->setAttr(kPatternAttr, builder.getStringAttr(patternName));
  if (alignment > 1)
    subgraph->setAttr(kAlignmentAttr, builder.getI64IntegerAttr(alignment));
  subgraph->setAttr(kBaseNameAttr, builder.getStringAttr(baseName));
  subgraph->setAttr(kRootAttr,
                    builder.getI64IntegerAttr(llvm::find(ops, root) -
                                              ops.begin()));
  subgraph.getBodyRegion().push_back(new Block());
  builder.setInsertionPointToStart(&subgraph.getBodyRegion().front());
  auto functionType = builder.getFunctionType(
      llvm::to_vector(llvm::map_range(inputs, [](Value v) { return v.getType(); })),
      llvm::to_vector(llvm::map_range(outputs, [](Value v) { return v.getType(); })));
  auto definition = FunctionalDefinitionOp::create(builder, 
      loc, name + "Functional", functionType);
  definition.setPrivate();
  Block &body = definition.addEntryBlock(loc);
  IRMapping mapping;
  for (auto [input, argument] : llvm::zip(inputs, body.getArguments()))
    mapping.map(input, argument);
  builder.setInsertionPointToStart(&body);
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  ReturnOp::create(builder, 
      loc, llvm::to_vector(llvm::map_range(
               outputs, [&](Value v) { return mapping.lookup(v); })));

  // The call replaces the layers (the block is sorted afterwards).
  builder.setInsertionPoint(ops.back());
  auto call = CallOp::create(builder, 
      loc, TypeRange(ValueRange(outputs)),
      FlatSymbolRefAttr::get(context, name), inputs);
  for (auto [output, result] : llvm::zip(outputs, call.getResults()))
    output.replaceAllUsesWith(result);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

LogicalResult SubgraphMatcher::matchAndOutline(ModuleOp module,
                                               EntryPointOp entry) {
  Block &block = entry.getBody().front();
  Search search(entry);

  // Every candidate of every pattern at every root.
  std::vector<Candidate> candidates;
  for (auto [index, p] : llvm::enumerate(patterns)) {
    pattern::MatchOp root = p.op.getRoot();
    for (Operation &op : block) {
      if (!search.isFree(&op) || !pattern::matchesNames(root.getNames(), &op))
        continue;
      if (auto rejected = op.getAttrOfType<ArrayAttr>(kRejectedAttr))
        if (llvm::is_contained(rejected,
                               StringAttr::get(module.getContext(), p.key)))
          continue;
      Candidate candidate;
      candidate.pattern = index;
      candidate.rootPosition = search.pos(&op);
      candidate.root = &op;
      if (search.match(p, &op, candidate.ops))
        candidates.push_back(std::move(candidate));
    }
  }

  // Priority, then size, then target order, then declaration order, then
  // position: a total order (one candidate per pattern and root), so the
  // selection is deterministic.
  llvm::sort(candidates, [&](const Candidate &a, const Candidate &b) {
    const Pattern &pa = patterns[a.pattern], &pb = patterns[b.pattern];
    if (pa.priority != pb.priority)
      return pa.priority > pb.priority;
    if (a.ops.size() != b.ops.size())
      return a.ops.size() > b.ops.size();
    if (pa.target != pb.target)
      return pa.target < pb.target;
    if (a.pattern != b.pattern)
      return a.pattern < b.pattern;
    return a.rootPosition < b.rootPosition;
  });
  llvm::SmallPtrSet<Operation *, 32> claimed;
  std::vector<const Candidate *> selected;
  for (const Candidate &candidate : candidates) {
    if (llvm::any_of(candidate.ops,
                     [&](Operation *op) { return claimed.contains(op); }))
      continue;
    claimed.insert(candidate.ops.begin(), candidate.ops.end());
    selected.push_back(&candidate);
  }
  for (Operation &op : block)
    if (search.isFree(&op) && !claimed.contains(&op))
      return op.emitOpError("is claimed by no target: no pattern of ")
             << targets.size() << " target(s) matches it"
             << (op.hasAttr(kRejectedAttr)
                     ? " except ones whose target rejected it"
                     : "");

  // Outline in block order of the matches' first layer.
  llvm::sort(selected, [&](const Candidate *a, const Candidate *b) {
    return search.pos(a->ops.front()) < search.pos(b->ops.front());
  });
  unsigned serial = 0;
  for (SubgraphOp existing : module.getBody()->getOps<SubgraphOp>())
    (void)existing, ++serial;
  for (const Candidate *candidate : selected) {
    Pattern p = patterns[candidate->pattern];
    std::string baseName = p.nameByOps ? nameFromOps(candidate->ops)
                                       : p.op.getSymName().str();
    outline(module, entry, targets[p.target].name, p.op.getSymName(),
            p.alignment, baseName, candidate->ops, candidate->root, serial++);
  }
  if (!sortTopologically(&block))
    return entry.emitOpError("internal error: outlining created a cycle");
  return success();
}

//===----------------------------------------------------------------------===//
// Entry point preparation, inlining, sharing and naming
//===----------------------------------------------------------------------===//

void prepareEntryPoint(EntryPointOp entry) {
  Block &block = entry.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
    bool removable = isa<ConstantOp>(op) ||
                     (op.getDialect() &&
                      op.getDialect()->getNamespace() == "cgc_op");
    if (removable && op.use_empty())
      op.erase();
  }
  auto returnOp = cast<ReturnOp>(block.getTerminator());
  OpBuilder builder(returnOp);
  DenseSet<Value> returned;
  for (OpOperand &operand : returnOp->getOpOperands()) {
    Value value = operand.get();
    bool needsCopy = isa<BlockArgument>(value) ||
                     value.getDefiningOp<ConstantOp>() ||
                     !returned.insert(value).second;
    if (!needsCopy)
      continue;
    auto copy = op::IdentityOp::create(builder, returnOp.getLoc(), value);
    operand.set(copy.getResult());
  }
}

SmallVector<Operation *> inlineCall(CallOp call) {
  SubgraphOp subgraph = call.getSubgraph();
  Block &body = subgraph.getFunctionalDefinition().getBody().front();
  IRMapping mapping;
  for (auto [argument, operand] :
       llvm::zip(body.getArguments(), call.getOperands()))
    mapping.map(argument, operand);
  OpBuilder builder(call);
  SmallVector<Operation *> created;
  for (Operation &op : body.without_terminator())
    created.push_back(builder.clone(op, mapping));
  auto returnOp = cast<ReturnOp>(body.getTerminator());
  for (auto [result, value] : llvm::zip(call.getResults(), returnOp.getOperands()))
    result.replaceAllUsesWith(mapping.lookup(value));
  call.erase();
  return created;
}

void dedupAndRenameSubgraphs(ModuleOp module, EntryPointOp entry) {
  SmallVector<CallOp> calls(entry.getBody().front().getOps<CallOp>());

  // Share identical subgraphs.
  SmallVector<SubgraphOp> representatives;
  DenseMap<SubgraphOp, SubgraphOp> replacement;
  auto sameOutside = [](SubgraphOp a, SubgraphOp b) {
    return a.getOrigin() == b.getOrigin() &&
           a->getAttr(kPatternAttr) == b->getAttr(kPatternAttr) &&
           a->getAttr(kAlignmentAttr) == b->getAttr(kAlignmentAttr) &&
           a->getAttr(kRootAttr) == b->getAttr(kRootAttr) &&
           a.getFunctionalDefinition().getFunctionType() ==
               b.getFunctionalDefinition().getFunctionType();
  };
  for (CallOp call : calls) {
    SubgraphOp subgraph = call.getSubgraph();
    if (replacement.count(subgraph))
      continue;
    SubgraphOp found;
    for (SubgraphOp rep : representatives)
      if (sameOutside(rep, subgraph) &&
          OperationEquivalence::isRegionEquivalentTo(
              &rep.getFunctionalDefinition().getBody(),
              &subgraph.getFunctionalDefinition().getBody(),
              OperationEquivalence::IgnoreLocations)) {
        found = rep;
        break;
      }
    if (!found) {
      representatives.push_back(subgraph);
      found = subgraph;
    }
    replacement[subgraph] = found;
  }
  for (CallOp call : calls)
    call.setCalleeAttr(FlatSymbolRefAttr::get(
        replacement.lookup(call.getSubgraph()).getSymNameAttr()));
  llvm::DenseSet<SubgraphOp> used(representatives.begin(),
                                  representatives.end());
  for (SubgraphOp subgraph :
       llvm::make_early_inc_range(module.getBody()->getOps<SubgraphOp>()))
    if (!used.contains(subgraph))
      subgraph.erase();

  // Names: keep the names of subgraphs already named; name new ones after
  // their base name, in order of first call.
  llvm::StringSet<> taken;
  for (Operation &op : *module.getBody())
    if (auto symbol = op.getAttrOfType<StringAttr>(
            SymbolTable::getSymbolAttrName()))
      if (!op.hasAttr(kBaseNameAttr))
        taken.insert(symbol.getValue());
  MLIRContext *context = module.getContext();
  for (SubgraphOp subgraph : representatives) {
    auto base = subgraph->getAttrOfType<StringAttr>(kBaseNameAttr);
    if (!base)
      continue;
    std::string name = base.getValue().str();
    for (unsigned n = 1; taken.contains(name); ++n)
      name = (base.getValue() + "_" + Twine(n)).str();
    taken.insert(name);
    auto nameAttr = StringAttr::get(context, name);
    for (CallOp call : calls)
      if (call.getCallee() == subgraph.getSymName())
        call.setCalleeAttr(FlatSymbolRefAttr::get(nameAttr));
    subgraph.setSymName(name);
    subgraph.getFunctionalDefinition().setSymName(name + "Functional");
    subgraph->removeAttr(kBaseNameAttr);
  }
}

} // namespace cgc
