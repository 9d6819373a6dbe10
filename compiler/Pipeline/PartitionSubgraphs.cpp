//===- PartitionSubgraphs.cpp - cgc-partition -----------------------------===//

#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/SubgraphMatcher.h"
#include "compiler/Targets/Fallback/FallbackTarget.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_PARTITIONSUBGRAPHS
#include "compiler/Pipeline/Passes.h.inc"

FailureOr<EntryPointOp> getEntryPointFor(ModuleOp module, StringRef pass);

namespace {
struct PartitionSubgraphsPass
    : public impl::PartitionSubgraphsBase<PartitionSubgraphsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<EntryPointOp> entry = getEntryPointFor(module, getArgument());
    if (failed(entry))
      return signalPassFailure();
    bool perSubgraph = granularity == "subgraph";
    if (!perSubgraph && granularity != "target") {
      module.emitError("unknown partition granularity '")
          << granularity << "'; use 'subgraph' or 'target'";
      return signalPassFailure();
    }
    Block &block = entry->getBody().front();
    for (Operation &op : block)
      if (op.getDialect() && op.getDialect()->getNamespace() == "cgc_op") {
        op.emitOpError("is not in a subgraph; run cgc-match-subgraphs first");
        return signalPassFailure();
      }

    // Calls are in a topological order, so a call joining a partition can
    // only close a cycle through the partitions of its operands: it may join
    // P unless P is an ancestor of one of those (other than P itself).
    struct Partition {
      StringRef origin;
      unsigned size = 0;
      llvm::BitVector ancestors;
    };
    std::vector<Partition> partitions;
    DenseMap<Operation *, unsigned> partitionOf;
    Builder builder(&getContext());
    for (CallOp call : block.getOps<CallOp>()) {
      SubgraphOp subgraph = call.getSubgraph();
      StringRef origin = subgraph.getOrigin();
      SmallVector<unsigned> preds;
      for (Value operand : call.getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (auto it = partitionOf.find(def); it != partitionOf.end())
            if (!llvm::is_contained(preds, it->second))
              preds.push_back(it->second);

      int chosen = -1;
      if (!perSubgraph && origin != kFallbackTargetName) {
        auto legal = [&](unsigned p) {
          if (partitions[p].origin != origin)
            return false;
          if (maxSubgraphs && partitions[p].size >= maxSubgraphs)
            return false;
          for (unsigned q : preds)
            if (q != p && partitions[q].ancestors.test(p))
              return false;
          return true;
        };
        // Prefer growing a partition this call consumes from, then the most
        // recent one of the same target.
        for (unsigned q : llvm::reverse(preds))
          if (legal(q)) {
            chosen = q;
            break;
          }
        if (chosen < 0)
          for (int p = static_cast<int>(partitions.size()) - 1; p >= 0; --p)
            if (legal(p)) {
              chosen = p;
              break;
            }
      }
      if (chosen < 0) {
        chosen = partitions.size();
        partitions.push_back({origin, 0, llvm::BitVector()});
        for (Partition &p : partitions)
          p.ancestors.resize(partitions.size());
      }
      Partition &target = partitions[chosen];
      ++target.size;
      llvm::BitVector added(partitions.size());
      for (unsigned q : preds)
        if (q != static_cast<unsigned>(chosen)) {
          added.set(q);
          added |= partitions[q].ancestors;
        }
      target.ancestors |= added;
      for (Partition &p : partitions)
        if (p.ancestors.test(chosen))
          p.ancestors |= added;
      partitionOf[call] = chosen;
      call->setAttr(kPartitionAttr, builder.getI64IntegerAttr(chosen));
    }
  }
};
} // namespace

} // namespace cgc
