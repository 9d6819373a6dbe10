//===- KernelLowering.cpp - Partition IR to kernel programs ---------------===//

#include "compiler/Targets/Common/KernelLowering.h"

#include "cgc/IR/CGCTypes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace cgc {

//===----------------------------------------------------------------------===//
// Operand layouts (generated from ODS)
//===----------------------------------------------------------------------===//

std::optional<StringRef> getOperandLayout(StringRef opName) {
  static const llvm::StringMap<StringRef> layouts = [] {
    llvm::StringMap<StringRef> map;
#define CGC_OP_OPERANDS(name, kinds) map[name] = kinds;
#include "compiler/Targets/Common/CGCOpOperandInfo.inc"
#undef CGC_OP_OPERANDS
    return map;
  }();
  auto it = layouts.find(opName);
  if (it == layouts.end())
    return std::nullopt;
  return it->second;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

std::optional<AttrValue> convertKernelAttribute(Attribute attr) {
  if (auto b = dyn_cast<BoolAttr>(attr))
    return AttrValue::ofBool(b.getValue());
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    if (i.getType().isUnsignedInteger())
      return AttrValue::ofInt(static_cast<int64_t>(i.getValue().getZExtValue()));
    return AttrValue::ofInt(i.getValue().getSExtValue());
  }
  if (auto f = dyn_cast<FloatAttr>(attr))
    return AttrValue::ofFloat(f.getValueAsDouble());
  if (auto s = dyn_cast<StringAttr>(attr))
    return AttrValue::ofString(s.getValue().str());
  if (isa<UnitAttr>(attr))
    return AttrValue::ofBool(true);
  if (auto t = dyn_cast<TypeAttr>(attr)) {
    if (!isElementType(t.getValue()))
      return std::nullopt;
    return AttrValue::ofDType(
        static_cast<cgc_dtype_t>(getElementKind(t.getValue())));
  }
  if (auto a = dyn_cast<DenseI64ArrayAttr>(attr))
    return AttrValue::ofInts(std::vector<int64_t>(a.asArrayRef().begin(),
                                                  a.asArrayRef().end()));
  if (auto a = dyn_cast<DenseI32ArrayAttr>(attr))
    return AttrValue::ofInts(std::vector<int64_t>(a.asArrayRef().begin(),
                                                  a.asArrayRef().end()));
  if (auto a = dyn_cast<DenseF64ArrayAttr>(attr))
    return AttrValue::ofFloats(std::vector<double>(a.asArrayRef().begin(),
                                                   a.asArrayRef().end()));
  if (auto a = dyn_cast<DenseF32ArrayAttr>(attr))
    return AttrValue::ofFloats(std::vector<double>(a.asArrayRef().begin(),
                                                   a.asArrayRef().end()));
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    if (array.empty())
      return AttrValue::ofInts({});
    if (llvm::all_of(array, [](Attribute e) {
          return isa<IntegerAttr>(e) && !isa<BoolAttr>(e);
        })) {
      std::vector<int64_t> values;
      for (Attribute e : array)
        values.push_back(cast<IntegerAttr>(e).getValue().getSExtValue());
      return AttrValue::ofInts(std::move(values));
    }
    if (llvm::all_of(array, [](Attribute e) { return isa<FloatAttr>(e); })) {
      std::vector<double> values;
      for (Attribute e : array)
        values.push_back(cast<FloatAttr>(e).getValueAsDouble());
      return AttrValue::ofFloats(std::move(values));
    }
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

namespace {

std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// A contiguous operand descriptor for a value of `type` at `storage`.
KernelOperand operandFor(TensorLikeType type, KernelOperand::Storage storage,
                         uint32_t index, uint64_t offset,
                         ArrayRef<int64_t> strides = {}) {
  KernelOperand operand;
  operand.dtype = static_cast<cgc_dtype_t>(type.getElementKind());
  operand.shape.assign(type.getShape().begin(), type.getShape().end());
  operand.strides.assign(strides.begin(), strides.end());
  operand.storage = storage;
  operand.index = index;
  operand.offset = offset;
  return operand;
}

class KernelProgramBuilder {
public:
  KernelProgram program;

  /// Adds a binding for a memref bind point.
  KernelOperand addBinding(std::string name, MemRefType type) {
    uint32_t index = program.bindings.size();
    program.bindings.push_back({std::move(name),
                                static_cast<uint64_t>(type.getByteSpan()),
                                type.getIsConstant(), /*internal=*/false,
                                static_cast<cgc_dtype_t>(type.getElementKind())});
    return operandFor(type, KernelOperand::Storage::Binding, index, 0,
                      type.getStrides());
  }

  /// Lowers one subgraph invocation whose inputs and outputs are at the
  /// given locations.
  LogicalResult lowerSubgraph(SubgraphOp subgraph, Operation *site,
                              ArrayRef<KernelOperand> inputs,
                              ArrayRef<KernelOperand> outputs) {
    FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
    if (!definition)
      return subgraph.emitOpError("has no functional definition to lower");
    Block &body = definition.getBody().front();
    if (inputs.size() != body.getNumArguments() ||
        outputs.size() != definition.getResultTypes().size())
      return site->emitOpError("passes ")
             << inputs.size() + outputs.size() << " operand(s) to subgraph '"
             << subgraph.getSymName() << "', which takes "
             << body.getNumArguments() << " input(s) and "
             << definition.getResultTypes().size() << " output(s)";

    DenseMap<Value, KernelOperand> where;
    for (auto [argument, operand] : llvm::zip(body.getArguments(), inputs))
      where[argument] = operand;

    // A value returned from the subgraph is written straight into the first
    // output slot that returns it.
    auto returnOp = cast<ReturnOp>(body.getTerminator());
    DenseMap<Value, unsigned> firstSlot;
    for (auto [slot, value] : llvm::enumerate(returnOp.getOperands()))
      firstSlot.try_emplace(value, slot);

    for (Operation &op : body) {
      if (isa<ReturnOp>(op))
        break;
      if (isa<ConstantOp>(op))
        return op.emitOpError("cannot be lowered to a kernel program: a "
                              "constant inside a functional definition has "
                              "no binding; pass it as a parameter");
      if (!op.getDialect() || op.getDialect()->getNamespace() != "cgc_op")
        return op.emitOpError("cannot be lowered to a kernel program: only "
                              "cgc_op layers can");
      for (Value result : op.getResults()) {
        auto type = cast<TensorLikeType>(result.getType());
        auto slot = firstSlot.find(result);
        if (slot != firstSlot.end()) {
          where[result] = outputs[slot->second];
          continue;
        }
        uint32_t index = program.temporaries.size();
        program.temporaries.push_back(
            {static_cast<uint64_t>(getContiguousByteSize(type)), 64});
        where[result] = operandFor(type, KernelOperand::Storage::Temporary,
                                   index, 0);
      }
      if (failed(lowerLayer(&op, where)))
        return failure();
    }

    // Outputs not written in place: a returned input or a value returned in
    // more than one slot is copied.
    for (auto [slot, value] : llvm::enumerate(returnOp.getOperands())) {
      auto first = firstSlot.find(value);
      bool written = value.getDefiningOp() && first->second == slot;
      if (written)
        continue;
      KernelDesc copy;
      copy.op = opName(OpKind::Identity);
      copy.inputs.push_back(where.lookup(value));
      copy.outputs.push_back(outputs[slot]);
      program.kernels.push_back(std::move(copy));
    }
    return success();
  }

private:
  LogicalResult lowerLayer(Operation *op,
                           const DenseMap<Value, KernelOperand> &where) {
    StringRef name = op->getName().getStringRef();
    std::optional<StringRef> layout = getOperandLayout(name);
    if (!layout)
      return op->emitOpError("cannot be lowered to a kernel program: no ODS "
                             "operand layout is known for '")
             << name << "'";

    KernelDesc kernel;
    kernel.op = name.str();

    // The op's own (ODS) attributes, with omitted defaults made explicit;
    // discardable attributes are not part of the layer's meaning.
    std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
    if (!info)
      return op->emitOpError("cannot be lowered to a kernel program: it is "
                             "not a registered op");
    NamedAttrList attrs(op->getAttrDictionary());
    info->populateDefaultAttrs(attrs);
    ArrayRef<StringAttr> inherent = info->getAttributeNames();
    for (NamedAttribute attr : attrs) {
      StringRef attrName = attr.getName().getValue();
      if (attrName == "operandSegmentSizes" || attrName == "resultSegmentSizes" ||
          !llvm::is_contained(inherent, attr.getName()))
        continue;
      std::optional<AttrValue> value = convertKernelAttribute(attr.getValue());
      if (!value)
        return op->emitOpError("cannot be lowered to a kernel program: "
                               "attribute '")
               << attrName << "' = " << printed(attr.getValue())
               << " has no kernel form (integers, floats, bools, strings, "
               << "their arrays and element types do)";
      kernel.setAttr(attrName.str(), std::move(*value));
    }

    // Operands in ODS order.
    SmallVector<unsigned> groupSizes;
    if (auto segments =
            op->getAttrOfType<DenseI32ArrayAttr>("operandSegmentSizes")) {
      groupSizes.assign(segments.asArrayRef().begin(),
                        segments.asArrayRef().end());
    } else {
      unsigned fixed = llvm::count(*layout, 'r');
      unsigned variable = llvm::count(*layout, 'o') + llvm::count(*layout, 'v');
      if (op->getNumOperands() < fixed || variable > 1)
        return op->emitOpError("cannot be lowered to a kernel program: its ")
               << op->getNumOperands()
               << " operand(s) do not fit the ODS operand layout '" << *layout
               << "'";
      unsigned rest = op->getNumOperands() - fixed;
      for (char kind : *layout)
        groupSizes.push_back(kind == 'r' ? 1 : rest);
    }
    if (groupSizes.size() != layout->size())
      return op->emitOpError("cannot be lowered to a kernel program: operand "
                             "segments do not match the ODS layout");
    unsigned next = 0;
    for (auto [kind, size] : llvm::zip(*layout, groupSizes)) {
      if (kind == 'o' && size == 0) {
        kernel.inputs.push_back(std::nullopt);
        continue;
      }
      for (unsigned i = 0; i < size; ++i) {
        if (next >= op->getNumOperands())
          return op->emitOpError("cannot be lowered to a kernel program: "
                                 "operand segments exceed its operands");
        Value operand = op->getOperand(next++);
        auto it = where.find(operand);
        if (it == where.end())
          return op->emitOpError("cannot be lowered to a kernel program: "
                                 "operand #")
                 << next - 1 << " is not defined inside the subgraph";
        kernel.inputs.push_back(it->second);
      }
    }
    for (Value result : op->getResults())
      kernel.outputs.push_back(where.lookup(result));
    program.kernels.push_back(std::move(kernel));
    return success();
  }
};

std::string bindPointName(PartitionOp partition, unsigned index) {
  if (auto name = partition.getArgAttrOfType<StringAttr>(index, "cgc.name"))
    return name.getValue().str();
  return "bp" + std::to_string(index);
}

LogicalResult finish(Operation *anchor, KernelProgram &program) {
  std::string error;
  if (!program.validate(error))
    return anchor->emitOpError("lowered to an invalid kernel program: ")
           << error;
  return success();
}

} // namespace

FailureOr<KernelProgram> lowerPartitionToKernelProgram(PartitionOp partition) {
  KernelProgramBuilder builder;
  Block &body = partition.getBody().front();
  DenseMap<Value, KernelOperand> where;
  for (BlockArgument argument : body.getArguments()) {
    where[argument] = builder.addBinding(
        bindPointName(partition, argument.getArgNumber()),
        cast<MemRefType>(argument.getType()));
    builder.program.bindings.back().internal =
        partition.getArgAttr(argument.getArgNumber(), "cgc.internal") != nullptr;
  }

  for (Operation &op : body) {
    if (auto view = dyn_cast<ViewMemRefOp>(op)) {
      auto source = where.find(view.getSource());
      if (source == where.end())
        return view.emitOpError("cannot be lowered to a kernel program: its "
                                "source is not a bind point");
      MemRefType type = view.getResult().getType();
      where[view.getResult()] = operandFor(
          type, source->second.storage, source->second.index,
          source->second.offset + static_cast<uint64_t>(view.getOffset()),
          type.getStrides());
      continue;
    }
    if (auto invoke = dyn_cast<InvokeOp>(op)) {
      auto subgraph = SymbolTable::lookupNearestSymbolFrom<SubgraphOp>(
          invoke, invoke.getCalleeAttr());
      if (!subgraph)
        return invoke.emitOpError("cannot be lowered to a kernel program: '")
               << invoke.getCallee() << "' is not a cgc.subgraph";
      SmallVector<KernelOperand> inputs, outputs;
      unsigned numInputs =
          subgraph.getFunctionalDefinition()
              ? subgraph.getFunctionalDefinition().getArgumentTypes().size()
              : 0;
      for (auto [index, operand] : llvm::enumerate(invoke.getOperands())) {
        auto it = where.find(operand);
        if (it == where.end())
          return invoke.emitOpError("cannot be lowered to a kernel program: "
                                    "operand #")
                 << index << " is neither a bind point nor a view of one";
        (index < numInputs ? inputs : outputs).push_back(it->second);
      }
      if (failed(builder.lowerSubgraph(subgraph, invoke, inputs, outputs)))
        return failure();
      continue;
    }
    if (isa<ReturnOp>(op))
      break;
    return op.emitOpError("cannot be lowered to a kernel program: a "
                          "partition may hold cgc.invoke and cgc.view_memref "
                          "only");
  }
  if (failed(finish(partition, builder.program)))
    return failure();
  return std::move(builder.program);
}

FailureOr<KernelProgram> lowerSubgraphToKernelProgram(SubgraphOp subgraph) {
  FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
  if (!definition)
    return subgraph.emitOpError("has no functional definition to lower");
  KernelProgramBuilder builder;
  SmallVector<KernelOperand> inputs, outputs;
  for (auto [index, type] : llvm::enumerate(subgraph.getInvokeTypes())) {
    bool isInput = index < definition.getArgumentTypes().size();
    unsigned number =
        isInput ? index : index - definition.getArgumentTypes().size();
    (isInput ? inputs : outputs)
        .push_back(builder.addBinding(
            (isInput ? "in" : "out") + std::to_string(number),
            cast<MemRefType>(type)));
  }
  if (failed(builder.lowerSubgraph(subgraph, subgraph, inputs, outputs)) ||
      failed(finish(subgraph, builder.program)))
    return failure();
  return std::move(builder.program);
}

bool lowerPartitionModuleToKernelProgram(ModuleOp module, KernelProgram &program,
                                         std::string &error) {
  std::string firstError;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      os << diag.getLocation() << ": " << diag;
    }
    return success();
  });
  auto partitions = module.getBody()->getOps<PartitionOp>();
  if (partitions.empty() || std::next(partitions.begin()) != partitions.end()) {
    error = "a Partition IR module must hold exactly one cgc.partition, found " +
            std::to_string(llvm::range_size(partitions));
    return false;
  }
  FailureOr<KernelProgram> lowered =
      lowerPartitionToKernelProgram(*partitions.begin());
  if (failed(lowered)) {
    error = firstError.empty() ? "kernel lowering failed" : firstError;
    return false;
  }
  program = std::move(*lowered);
  return true;
}

} // namespace cgc
