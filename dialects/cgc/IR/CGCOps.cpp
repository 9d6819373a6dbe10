//===- CGCOps.cpp - Structural ops of the cgc dialect ---------------------===//

#include "cgc/IR/CGCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace cgc {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// True if `a` and `b` have the same shape and element type (constness and
/// strides aside).
static bool sameShapeAndElement(TensorLikeType a, TensorLikeType b) {
  return a.getShape() == b.getShape() &&
         a.getElementType() == b.getElementType();
}

//===----------------------------------------------------------------------===//
// ModuleOp
//===----------------------------------------------------------------------===//

void ModuleOp::build(OpBuilder &builder, OperationState &state) {
  Region *region = state.addRegion();
  region->push_back(new Block());
}

EntryPointOp ModuleOp::getEntryPoint() {
  auto range = getBody()->getOps<EntryPointOp>();
  return range.empty() ? EntryPointOp() : *range.begin();
}

ProgramOp ModuleOp::getProgram() {
  auto range = getBody()->getOps<ProgramOp>();
  return range.empty() ? ProgramOp() : *range.begin();
}

LogicalResult ModuleOp::verify() {
  Operation *firstEntry = nullptr, *firstProgram = nullptr;
  for (Operation &op : *getBody()) {
    if (isa<EntryPointOp>(op)) {
      if (firstEntry)
        return op.emitOpError("is a second entry point; a cgc.module has at "
                              "most one")
                   .attachNote(firstEntry->getLoc())
               << "first entry point here";
      firstEntry = &op;
    } else if (isa<ProgramOp>(op)) {
      if (firstProgram)
        return op.emitOpError("is a second program; a cgc.module has at most "
                              "one")
                   .attachNote(firstProgram->getLoc())
               << "first program here";
      firstProgram = &op;
    }
  }

  // Every use of a named constant agrees on shape and element type. Nested
  // ops are verified after this one: a constant missing its name or its
  // tensor result (read from untrusted bytecode) is left to its own
  // verifier, which reports it (the bytecode fuzzer's SEGV reading the name
  // of a constant that had none).
  llvm::StringMap<ConstantOp> byName;
  WalkResult result = getOperation()->walk([&](ConstantOp constant) {
    auto name = constant->getAttrOfType<StringAttr>(constant.getNameAttrName());
    if (!name || constant->getNumResults() != 1 ||
        !isa<TensorLikeType>(constant->getResult(0).getType()))
      return WalkResult::advance();
    auto [it, inserted] = byName.try_emplace(name.getValue(), constant);
    if (inserted)
      return WalkResult::advance();
    auto first = cast<TensorLikeType>(it->second.getType());
    auto current = cast<TensorLikeType>(constant.getType());
    if (sameShapeAndElement(first, current))
      return WalkResult::advance();
    InFlightDiagnostic diag = constant.emitOpError("constant \"");
    diag << name.getValue() << "\" has type " << constant.getType()
         << " but another use of the same name has type "
         << it->second.getType();
    diag.attachNote(it->second.getLoc()) << "other use here";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Function-like ops
//===----------------------------------------------------------------------===//

template <typename OpTy>
static ParseResult parseFunctionLike(OpAsmParser &parser,
                                     OperationState &result) {
  auto buildFuncType = [](Builder &builder, ArrayRef<Type> argTypes,
                          ArrayRef<Type> results,
                          function_interface_impl::VariadicFlag,
                          std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      OpTy::getFunctionTypeAttrName(result.name), buildFuncType,
      OpTy::getArgAttrsAttrName(result.name),
      OpTy::getResAttrsAttrName(result.name));
}

template <typename OpTy>
static void printFunctionLike(OpTy op, OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(
      printer, op, /*isVariadic=*/false, op.getFunctionTypeAttrName(),
      op.getArgAttrsAttrName(), op.getResAttrsAttrName());
}

template <typename OpTy>
static void buildFunctionLike(OpBuilder &builder, OperationState &state,
                              StringRef name, FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(OpTy::getFunctionTypeAttrName(state.name),
                     TypeAttr::get(type));
  state.addRegion();
}

template <typename OpTy>
static Block &addEntryBlockTo(OpTy op, Location loc) {
  Block *block = new Block();
  op.getBody().push_back(block);
  for (Type type : op.getFunctionType().getInputs())
    block->addArgument(type, loc);
  return *block;
}

/// Checks that argument (or result) `index` of `op` is a tensor, or a
/// non-constant tensor when `allowConstant` is false.
static LogicalResult verifyTensorSignature(FunctionOpInterface op,
                                           bool allowConstantArgs) {
  for (auto [index, type] : llvm::enumerate(op.getArgumentTypes())) {
    auto tensor = dyn_cast<TensorType>(type);
    if (!tensor)
      return op.emitOpError("argument #")
             << index << " must be a !cgc.tensor, got " << type;
    if (tensor.getIsConstant() && !allowConstantArgs)
      return op.emitOpError("argument #")
             << index
             << " must not be qualified 'constant'; constants are bound by "
                "name with cgc.constant";
  }
  for (auto [index, type] : llvm::enumerate(op.getResultTypes())) {
    auto tensor = dyn_cast<TensorType>(type);
    if (!tensor)
      return op.emitOpError("result #")
             << index << " must be a !cgc.tensor, got " << type;
    if (tensor.getIsConstant())
      return op.emitOpError("result #")
             << index << " must not be qualified 'constant'";
  }
  return success();
}

/// Checks that every argument of a partition or program is a memref and that
/// it returns nothing.
static LogicalResult verifyMemRefSignature(FunctionOpInterface op,
                                           StringRef what) {
  for (auto [index, type] : llvm::enumerate(op.getArgumentTypes()))
    if (!isa<MemRefType>(type))
      return op.emitOpError() << what << " argument #" << index
                              << " must be a !cgc.memref (a bind point), got "
                              << type;
  if (!op.getResultTypes().empty())
    return op.emitOpError() << "a " << what
                            << " has no results; outputs are written through "
                               "memref arguments";
  return success();
}

#define CGC_FUNCTION_LIKE_BOILERPLATE(OpTy)                                    \
  ParseResult OpTy::parse(OpAsmParser &parser, OperationState &result) {       \
    return parseFunctionLike<OpTy>(parser, result);                            \
  }                                                                            \
  void OpTy::print(OpAsmPrinter &printer) {                                    \
    printFunctionLike(*this, printer);                                         \
  }                                                                            \
  void OpTy::build(OpBuilder &builder, OperationState &state, StringRef name, \
                   FunctionType type) {                                        \
    buildFunctionLike<OpTy>(builder, state, name, type);                       \
  }                                                                            \
  Block &OpTy::addEntryBlock(Location loc) { return addEntryBlockTo(*this, loc); }

CGC_FUNCTION_LIKE_BOILERPLATE(EntryPointOp)
CGC_FUNCTION_LIKE_BOILERPLATE(FunctionalDefinitionOp)
CGC_FUNCTION_LIKE_BOILERPLATE(PartitionOp)
CGC_FUNCTION_LIKE_BOILERPLATE(ProgramOp)

#undef CGC_FUNCTION_LIKE_BOILERPLATE

LogicalResult EntryPointOp::verify() {
  return verifyTensorSignature(*this, /*allowConstantArgs=*/false);
}

LogicalResult FunctionalDefinitionOp::verify() {
  return verifyTensorSignature(*this, /*allowConstantArgs=*/true);
}

LogicalResult PartitionOp::verify() {
  return verifyMemRefSignature(*this, "partition");
}

LogicalResult ProgramOp::verify() {
  return verifyMemRefSignature(*this, "program");
}

//===----------------------------------------------------------------------===//
// SubgraphOp
//===----------------------------------------------------------------------===//

FunctionalDefinitionOp SubgraphOp::getFunctionalDefinition() {
  auto range = getBody()->getOps<FunctionalDefinitionOp>();
  return range.empty() ? FunctionalDefinitionOp() : *range.begin();
}

SmallVector<Type> SubgraphOp::getInvokeTypes() {
  SmallVector<Type> types;
  FunctionalDefinitionOp definition = getFunctionalDefinition();
  for (Type type : definition.getArgumentTypes()) {
    auto tensor = cast<TensorType>(type);
    types.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType(),
                                    tensor.getIsConstant()));
  }
  for (Type type : definition.getResultTypes()) {
    auto tensor = cast<TensorType>(type);
    types.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType(),
                                    /*isConstant=*/false));
  }
  return types;
}

LogicalResult SubgraphOp::verify() {
  if (getOrigin().empty())
    return emitOpError("must name its origin: the target that implements "
                       "it (origin = \"...\")");
  unsigned definitions = 0;
  for (Operation &op : *getBody()) {
    if (isa<FunctionalDefinitionOp>(op)) {
      ++definitions;
      continue;
    }
    return op.emitOpError("is not allowed in a cgc.subgraph; a subgraph "
                          "holds exactly one cgc.functional_definition");
  }
  if (definitions != 1)
    return emitOpError("must contain exactly one cgc.functional_definition, "
                       "found ")
           << definitions;
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

void ConstantOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  // Print `%w1 = cgc.constant("w1")`: the SSA name follows the constant.
  setNameFn(getResult(), getName());
}

LogicalResult ConstantOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  auto type = cast<TensorLikeType>(getType());
  if (!type.getIsConstant())
    return emitOpError("result must be qualified 'constant', got ")
           << getType();
  Operation *parent = (*this)->getParentOp();
  if (isa<PartitionOp>(parent))
    return emitOpError("is not allowed in a partition; constants reach a "
                       "partition through its memref arguments");
  if (isa<ProgramOp>(parent) && !isa<MemRefType>(getType()))
    return emitOpError("in a program must produce a !cgc.memref, got ")
           << getType();
  if (isa<EntryPointOp, FunctionalDefinitionOp>(parent) &&
      !isa<TensorType>(getType()))
    return emitOpError("in an entry point or functional definition must "
                       "produce a !cgc.tensor, got ")
           << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

LogicalResult ReturnOp::verify() {
  auto function = cast<FunctionOpInterface>((*this)->getParentOp());
  ArrayRef<Type> expected = function.getResultTypes();
  if (getOperands().size() != expected.size())
    return emitOpError("returns ")
           << getOperands().size() << " value(s) but the enclosing '"
           << function->getName() << "' has " << expected.size()
           << " result(s)";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getOperands().getTypes(), expected))) {
    auto [actual, wanted] = pair;
    if (actual != wanted)
      return emitOpError("operand #")
             << index << " has type " << actual
             << " but the enclosing function returns " << wanted;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// InvokeOp
//===----------------------------------------------------------------------===//

LogicalResult InvokeOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *callee =
      symbolTable.lookupNearestSymbolFrom(*this, getCalleeAttr());
  if (!callee)
    return emitOpError("callee '")
           << getCallee() << "' does not resolve to a symbol";
  Operation *parent = (*this)->getParentOp();
  auto types = getOperands().getTypes();

  if (isa<ProgramOp>(parent)) {
    auto partition = dyn_cast<PartitionOp>(callee);
    if (!partition)
      return emitOpError("in a program must invoke a cgc.partition, but '")
             << getCallee() << "' is a '" << callee->getName() << "'";
    ArrayRef<Type> expected = partition.getArgumentTypes();
    if (types.size() != expected.size())
      return emitOpError("passes ")
             << types.size() << " operand(s) but partition '" << getCallee()
             << "' has " << expected.size() << " bind point(s)";
    for (auto [index, pair] : llvm::enumerate(llvm::zip(types, expected))) {
      auto [actual, wanted] = pair;
      if (actual != wanted)
        return emitOpError("operand #")
               << index << " has type " << actual << " but bind point #"
               << index << " of partition '" << getCallee() << "' is "
               << wanted;
    }
    return success();
  }

  auto subgraph = dyn_cast<SubgraphOp>(callee);
  if (!subgraph)
    return emitOpError("in a partition must invoke a cgc.subgraph, but '")
           << getCallee() << "' is a '" << callee->getName() << "'";
  FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
  if (!definition)
    return emitOpError("callee '") << getCallee()
                                   << "' has no functional definition";
  ArrayRef<Type> params = definition.getArgumentTypes();
  ArrayRef<Type> results = definition.getResultTypes();
  if (types.size() != params.size() + results.size())
    return emitOpError("passes ")
           << types.size() << " operand(s) but subgraph '" << getCallee()
           << "' takes " << params.size() << " input(s) and "
           << results.size() << " output(s)";
  for (auto [index, type] : llvm::enumerate(types)) {
    auto memref = cast<MemRefType>(type);
    bool isOutput = index >= params.size();
    auto wanted = cast<TensorType>(isOutput ? results[index - params.size()]
                                            : params[index]);
    if (!sameShapeAndElement(memref, wanted))
      return emitOpError("operand #")
             << index << " has type " << type << " but "
             << (isOutput ? "output" : "input") << " #"
             << (isOutput ? index - params.size() : index) << " of subgraph '"
             << getCallee() << "' is " << Type(wanted);
    if (isOutput && memref.getIsConstant())
      return emitOpError("operand #")
             << index << " receives output #" << index - params.size()
             << " of subgraph '" << getCallee()
             << "' and must not be qualified 'constant'";
    if (!isOutput && wanted.getIsConstant() && !memref.getIsConstant())
      return emitOpError("operand #")
             << index << " feeds 'constant' input #" << index
             << " of subgraph '" << getCallee()
             << "' and must be a 'constant' memref";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ViewMemRefOp
//===----------------------------------------------------------------------===//

LogicalResult ViewMemRefOp::verify() {
  MemRefType source = getSource().getType();
  MemRefType result = getResult().getType();
  int64_t offset = getOffset();
  if (!source.isContiguous())
    return emitOpError("source must be a contiguous buffer, got ")
           << Type(source);
  if (source.getIsConstant() != result.getIsConstant())
    return emitOpError("result must keep the source's 'constant' qualifier");
  if (offset < 0)
    return emitOpError("offset must be non-negative, got ") << offset;
  int64_t elementBytes = getByteSize(result.getElementKind());
  if (offset % elementBytes != 0)
    return emitOpError("offset ")
           << offset << " is not a multiple of the " << elementBytes
           << "-byte element size of the view";
  int64_t end = offset + result.getByteSpan();
  if (end > source.getByteSpan())
    return emitOpError("view of ")
           << result.getByteSpan() << " bytes at offset " << offset
           << " ends at byte " << end << ", past the " << source.getByteSpan()
           << "-byte source";
  return success();
}

//===----------------------------------------------------------------------===//
// CallOp
//===----------------------------------------------------------------------===//

SubgraphOp CallOp::getSubgraph() {
  return SymbolTable::lookupNearestSymbolFrom<SubgraphOp>(*this,
                                                          getCalleeAttr());
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *callee =
      symbolTable.lookupNearestSymbolFrom(*this, getCalleeAttr());
  if (!callee)
    return emitOpError("callee '")
           << getCallee() << "' does not resolve to a symbol";
  auto subgraph = dyn_cast<SubgraphOp>(callee);
  if (!subgraph)
    return emitOpError("must call a cgc.subgraph, but '")
           << getCallee() << "' is a '" << callee->getName() << "'";
  FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
  if (!definition)
    return emitOpError("callee '") << getCallee()
                                   << "' has no functional definition";
  ArrayRef<Type> params = definition.getArgumentTypes();
  ArrayRef<Type> results = definition.getResultTypes();
  if (getOperands().size() != params.size())
    return emitOpError("passes ")
           << getOperands().size() << " operand(s) but subgraph '"
           << getCallee() << "' takes " << params.size() << " input(s)";
  if (getResults().size() != results.size())
    return emitOpError("has ")
           << getResults().size() << " result(s) but subgraph '"
           << getCallee() << "' produces " << results.size();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getOperands().getTypes(), params))) {
    auto [actual, wanted] = pair;
    if (actual != wanted)
      return emitOpError("operand #")
             << index << " has type " << actual << " but input #" << index
             << " of subgraph '" << getCallee() << "' is " << wanted;
  }
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getResults().getTypes(), results))) {
    auto [actual, wanted] = pair;
    if (actual != wanted)
      return emitOpError("result #")
             << index << " has type " << actual << " but output #" << index
             << " of subgraph '" << getCallee() << "' is " << wanted;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// BarrierOp
//===----------------------------------------------------------------------===//

/// `%buffer[offset, bytes], ...`
static ParseResult
parseBarrierRanges(OpAsmParser &parser,
                   SmallVectorImpl<OpAsmParser::UnresolvedOperand> &buffers,
                   DenseI64ArrayAttr &offsets, DenseI64ArrayAttr &sizes) {
  SmallVector<int64_t> offsetValues, sizeValues;
  auto parseOne = [&]() -> ParseResult {
    OpAsmParser::UnresolvedOperand buffer;
    int64_t offset = 0, size = 0;
    if (parser.parseOperand(buffer) || parser.parseLSquare() ||
        parser.parseInteger(offset) || parser.parseComma() ||
        parser.parseInteger(size) || parser.parseRSquare())
      return failure();
    buffers.push_back(buffer);
    offsetValues.push_back(offset);
    sizeValues.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(parseOne))
    return failure();
  offsets = parser.getBuilder().getDenseI64ArrayAttr(offsetValues);
  sizes = parser.getBuilder().getDenseI64ArrayAttr(sizeValues);
  return success();
}

static void printBarrierRanges(OpAsmPrinter &printer, Operation *,
                               OperandRange buffers, DenseI64ArrayAttr offsets,
                               DenseI64ArrayAttr sizes) {
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    if (index)
      printer << ", ";
    printer << buffer << "[";
    if (index < static_cast<size_t>(offsets.size()) &&
        index < static_cast<size_t>(sizes.size()))
      printer << offsets[index] << ", " << sizes[index];
    printer << "]";
  }
}

LogicalResult BarrierOp::verify() {
  size_t count = getBuffers().size();
  if (count == 0)
    return emitOpError("must list at least one range");
  if (static_cast<size_t>(getOffsets().size()) != count ||
      static_cast<size_t>(getSizes().size()) != count)
    return emitOpError("has ")
           << count << " buffer(s) but " << getOffsets().size()
           << " offset(s) and " << getSizes().size() << " size(s)";
  for (auto [index, buffer] : llvm::enumerate(getBuffers())) {
    auto argument = dyn_cast<BlockArgument>(buffer);
    if (!argument || argument.getOwner()->getParentOp() != (*this)->getParentOp())
      return emitOpError("range #")
             << index << " must be on an argument of the program (a whole "
             << "buffer), not on a view";
    int64_t offset = getOffsets()[index], size = getSizes()[index];
    auto type = cast<MemRefType>(buffer.getType());
    if (offset < 0 || size <= 0)
      return emitOpError("range #")
             << index << " [" << offset << ", " << size
             << "] must have a non-negative offset and a positive size";
    if (offset + size > type.getByteSpan())
      return emitOpError("range #")
             << index << " [" << offset << ", " << size << "] ends at byte "
             << offset + size << ", past the " << type.getByteSpan()
             << "-byte buffer";
  }
  return success();
}

} // namespace cgc

#define GET_OP_CLASSES
#include "cgc/IR/CGCOps.cpp.inc"
