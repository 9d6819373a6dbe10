//===- IsolatePartition.cpp - cgc-isolate-partition -----------------------===//

#include "compiler/Pipeline/Isolation.h"
#include "compiler/Pipeline/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_ISOLATEPARTITION
#include "compiler/Pipeline/Passes.h.inc"

OwningOpRef<ModuleOp> isolatePartition(ModuleOp module, PartitionOp partition) {
  // The symbols the partition reaches: the subgraphs it invokes (a subgraph
  // references nothing else).
  llvm::SetVector<Operation *> reached;
  partition.walk([&](InvokeOp invoke) {
    if (Operation *callee =
            SymbolTable::lookupSymbolIn(module, invoke.getCalleeAttr()))
      reached.insert(callee);
  });
  OpBuilder builder(module.getContext());
  OwningOpRef<ModuleOp> isolated = ModuleOp::create(builder, module.getLoc());
  builder.setInsertionPointToEnd(isolated->getBody());
  // Module order, so the snippet reads like the Output IR it came from.
  for (Operation &op : *module.getBody())
    if (reached.contains(&op))
      builder.clone(op);
  builder.clone(*partition);
  return isolated;
}

PartitionOp findPartition(ModuleOp module, StringRef nameOrIndex) {
  SmallVector<PartitionOp> partitions(module.getBody()->getOps<PartitionOp>());
  unsigned index;
  if (!nameOrIndex.getAsInteger(10, index))
    return index < partitions.size() ? partitions[index] : PartitionOp();
  for (PartitionOp partition : partitions)
    if (partition.getSymName() == nameOrIndex)
      return partition;
  return PartitionOp();
}

namespace {
struct IsolatePartitionPass
    : public impl::IsolatePartitionBase<IsolatePartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PartitionOp partition = findPartition(module, this->partition);
    if (!partition) {
      module.emitError("no partition '")
          << this->partition << "' (give a partition's name or its index; "
          << "the module has "
          << llvm::range_size(module.getBody()->getOps<PartitionOp>())
          << " partition(s))";
      return signalPassFailure();
    }
    OwningOpRef<ModuleOp> isolated = isolatePartition(module, partition);
    module.getBody()->clear();
    Block *from = isolated->getBody();
    module.getBody()->getOperations().splice(module.getBody()->end(),
                                             from->getOperations());
  }
};
} // namespace

} // namespace cgc
