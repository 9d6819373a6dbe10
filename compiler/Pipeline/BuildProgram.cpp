//===- BuildProgram.cpp - cgc-build-program -------------------------------===//

#include "compiler/Pipeline/DispatchGraph.h"
#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/SubgraphMatcher.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_BUILDPROGRAM
#include "compiler/Pipeline/Passes.h.inc"

FailureOr<EntryPointOp> getEntryPointFor(ModuleOp module, StringRef pass);

static MemRefType memrefFor(Type type) {
  auto tensor = cast<TensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType(),
                         tensor.getIsConstant());
}

namespace {
struct BuildProgramPass : public impl::BuildProgramBase<BuildProgramPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<EntryPointOp> entryOr = getEntryPointFor(module, getArgument());
    if (failed(entryOr))
      return signalPassFailure();
    EntryPointOp entry = *entryOr;
    auto memory = entry->getAttrOfType<DictionaryAttr>(kMemoryAttr);
    auto schedule = entry->getAttrOfType<DictionaryAttr>(kScheduleAttr);
    if (!memory || !schedule) {
      entry.emitOpError("has no ")
          << (memory ? "barrier schedule; run cgc-schedule-barriers"
                     : "memory plan; run cgc-plan-memory")
          << " first";
      return signalPassFailure();
    }
    FailureOr<DispatchGraph> dispatchOr = buildDispatchGraph(entry, false);
    if (failed(dispatchOr))
      return signalPassFailure();
    DispatchGraph &dispatch = *dispatchOr;
    const planning::Graph &graph = dispatch.graph;
    int64_t footprint = cast<IntegerAttr>(memory.get("footprint")).getInt();
    Block &entryBlock = entry.getBody().front();
    auto returnOp = cast<ReturnOp>(entryBlock.getTerminator());
    bool hasScratch = llvm::any_of(graph.tensors, [](const planning::Tensor &t) {
      return t.kind == planning::BufferKind::Scratch;
    });

    // The program's signature: inputs, outputs, scratch.
    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    builder.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> argumentTypes;
    for (Type type : entry.getArgumentTypes())
      argumentTypes.push_back(memrefFor(type));
    for (Type type : entry.getResultTypes())
      argumentTypes.push_back(memrefFor(type));
    if (hasScratch)
      argumentTypes.push_back(MemRefType::get(
          {footprint}, getElementType(context, ElementKind::Int8)));

    // Partitions first (they precede the program), then the program.
    unsigned numInputs = entry.getNumArguments();
    unsigned numOutputs = entry.getNumResults();
    DenseMap<Value, unsigned> outputIndex;
    for (auto [index, value] : llvm::enumerate(returnOp.getOperands()))
      outputIndex[value] = index;

    struct PartitionInfo {
      PartitionOp op;
      SmallVector<Value> bindPoints; // tensor-level values, in order
    };
    SmallVector<PartitionInfo> partitions;
    for (auto [node, calls] : llvm::enumerate(dispatch.calls)) {
      llvm::SmallPtrSet<Operation *, 8> mine;
      for (CallOp call : calls)
        mine.insert(call);
      llvm::SetVector<Value> inputs, outputs, internals;
      for (CallOp call : calls)
        for (Value operand : call.getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (!def || !mine.contains(def))
            inputs.insert(operand);
        }
      for (CallOp call : calls)
        for (Value result : call->getResults()) {
          bool escapes = outputIndex.count(result) ||
                         llvm::any_of(result.getUsers(), [&](Operation *user) {
                           return !mine.contains(user);
                         });
          (escapes ? outputs : internals).insert(result);
        }
      PartitionInfo info;
      info.bindPoints.append(inputs.begin(), inputs.end());
      info.bindPoints.append(outputs.begin(), outputs.end());
      info.bindPoints.append(internals.begin(), internals.end());

      SmallVector<Type> types;
      for (Value value : info.bindPoints)
        types.push_back(memrefFor(value.getType()));
      Location loc = calls.front().getLoc();
      auto partition = PartitionOp::create(builder, 
          loc, ("partition" + Twine(node)).str(),
          builder.getFunctionType(types, {}));
      Block &body = partition.addEntryBlock(loc);
      DenseMap<Value, Value> bound;
      for (auto [index, value] : llvm::enumerate(info.bindPoints)) {
        bound[value] = body.getArgument(index);
        partition.setArgAttr(index, kNameAttr,
                             builder.getStringAttr(bindPointName(value, dispatch)));
        // Only this partition reads or writes an internal intermediate's
        // bytes, so a driver may store it in any layout of the same size.
        if (index >= inputs.size() + outputs.size())
          partition.setArgAttr(index, kInternalAttr, builder.getUnitAttr());
      }
      OpBuilder inside = OpBuilder::atBlockEnd(&body);
      for (CallOp call : calls) {
        SmallVector<Value> operands;
        for (Value operand : call.getOperands())
          operands.push_back(bound.lookup(operand));
        for (Value result : call->getResults())
          operands.push_back(bound.lookup(result));
        InvokeOp::create(inside, call.getLoc(), call.getCalleeAttr(), operands);
      }
      ReturnOp::create(inside, loc);
      info.op = partition;
      partitions.push_back(std::move(info));
    }

    auto program = ProgramOp::create(builder, 
        entry.getLoc(), entry.getSymName(),
        builder.getFunctionType(argumentTypes, {}));
    Block &body = program.addEntryBlock(entry.getLoc());
    for (unsigned i = 0; i < numInputs; ++i)
      if (auto name = entry.getArgAttrOfType<StringAttr>(i, kNameAttr))
        program.setArgAttr(i, kNameAttr, name);
    for (unsigned i = 0; i < numOutputs; ++i) {
      if (auto name = entry.getResultAttrOfType<StringAttr>(i, kNameAttr))
        program.setArgAttr(numInputs + i, kNameAttr, name);
      // An output with data-dependent rows names the output holding them.
      if (auto rows = entry.getResultAttrOfType<StringAttr>(i, kRowsFromAttr))
        program.setArgAttr(numInputs + i, kRowsFromAttr, rows);
    }
    Value scratch;
    if (hasScratch) {
      scratch = body.getArgument(numInputs + numOutputs);
      program.setArgAttr(numInputs + numOutputs, kNameAttr,
                         builder.getStringAttr("scratch"));
    }
    program->setAttr(kMemoryAttr, memory);
    program->setAttr(kScheduleAttr, schedule);

    // Every tensor-level value as a memref of the program.
    DenseMap<Value, Value> memrefOf;
    OpBuilder inside = OpBuilder::atBlockEnd(&body);
    for (BlockArgument argument : entryBlock.getArguments())
      memrefOf[argument] = body.getArgument(argument.getArgNumber());
    for (auto constant : entryBlock.getOps<ConstantOp>())
      memrefOf[constant] = ConstantOp::create(inside, 
          constant.getLoc(), memrefFor(constant.getType()),
          constant.getNameAttr());
    for (auto &calls : dispatch.calls)
      for (CallOp call : calls) {
        auto offsets = call->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
        for (auto [index, result] : llvm::enumerate(call->getResults())) {
          if (auto it = outputIndex.find(result); it != outputIndex.end()) {
            memrefOf[result] = body.getArgument(numInputs + it->second);
            continue;
          }
          int64_t offset = offsets && index < static_cast<size_t>(offsets.size())
                               ? offsets[index]
                               : -1;
          if (offset < 0) {
            call.emitOpError("result #")
                << index << " has no planned scratch offset";
            return signalPassFailure();
          }
          memrefOf[result] = ViewMemRefOp::create(inside, 
              call.getLoc(), memrefFor(result.getType()), scratch,
              inside.getI64IntegerAttr(offset));
        }
      }

    // Dispatches in order, with the planned barriers.
    for (auto [node, info] : llvm::enumerate(partitions)) {
      CallOp first = dispatch.calls[node].front();
      if (auto barrier = first->getAttrOfType<ArrayAttr>(kBarrierAttr)) {
        SmallVector<Value> buffers;
        SmallVector<int64_t> offsets, sizes;
        for (auto range : barrier.getAsRange<DictionaryAttr>()) {
          StringRef kind = cast<StringAttr>(range.get("buffer")).getValue();
          int64_t index = cast<IntegerAttr>(range.get("index")).getInt();
          Value buffer;
          if (kind == "scratch")
            buffer = scratch;
          else if (kind == "input" && index < numInputs)
            buffer = body.getArgument(index);
          else if (kind == "output" && index < numOutputs)
            buffer = body.getArgument(numInputs + index);
          if (!buffer) {
            first.emitOpError("has a barrier on an unknown buffer '")
                << kind << "' #" << index;
            return signalPassFailure();
          }
          buffers.push_back(buffer);
          offsets.push_back(cast<IntegerAttr>(range.get("offset")).getInt());
          sizes.push_back(cast<IntegerAttr>(range.get("bytes")).getInt());
        }
        BarrierOp::create(inside, first.getLoc(), buffers,
                                 inside.getDenseI64ArrayAttr(offsets),
                                 inside.getDenseI64ArrayAttr(sizes));
      }
      SmallVector<Value> operands;
      for (Value value : info.bindPoints)
        operands.push_back(memrefOf.lookup(value));
      InvokeOp::create(inside, first.getLoc(),
                              FlatSymbolRefAttr::get(info.op.getSymNameAttr()),
                              operands);
    }
    ReturnOp::create(inside, entry.getLoc());
    entry.erase();
  }

  /// The name of a bind point: the constant, input or output name, or the
  /// intermediate's name in the dispatch graph.
  static std::string bindPointName(Value value, const DispatchGraph &dispatch) {
    if (auto constant = value.getDefiningOp<ConstantOp>())
      return constant.getName().str();
    auto it = dispatch.tensorOf.find(value);
    if (it != dispatch.tensorOf.end())
      return dispatch.graph.tensors[it->second].name;
    return "value";
  }
};
} // namespace

} // namespace cgc
