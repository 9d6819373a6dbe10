//===- SpecializeSubgraphs.cpp - cgc-specialize-subgraphs -----------------===//

#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/SubgraphMatcher.h"
#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Fallback/FallbackTarget.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_SPECIALIZESUBGRAPHS
#include "compiler/Pipeline/Passes.h.inc"

FailureOr<EntryPointOp> getEntryPointFor(ModuleOp module, StringRef pass);

namespace {
struct SpecializeSubgraphsPass
    : public impl::SpecializeSubgraphsBase<SpecializeSubgraphsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<EntryPointOp> entryOr = getEntryPointFor(module, getArgument());
    if (failed(entryOr))
      return signalPassFailure();
    EntryPointOp entry = *entryOr;
    SubgraphMatcher matcher;
    std::string error;
    std::vector<std::string> specs(targets.begin(), targets.end());
    if (failed(matcher.initialize(&getContext(), specs, error))) {
      module.emitError(error);
      return signalPassFailure();
    }

    llvm::DenseSet<Operation *> accepted;
    while (true) {
      // The subgraphs not yet asked about, grouped by target.
      llvm::MapVector<StringRef, SmallVector<SubgraphOp>> pending;
      for (SubgraphOp subgraph : module.getBody()->getOps<SubgraphOp>())
        if (!accepted.contains(subgraph))
          pending[subgraph.getOrigin()].push_back(subgraph);
      if (pending.empty())
        break;

      llvm::DenseSet<Operation *> rejected;
      llvm::DenseMap<Operation *, std::string> reasons;
      for (auto &[origin, subgraphs] : pending) {
        const TargetHandle *target = matcher.findTarget(origin);
        if (!target) {
          subgraphs.front().emitOpError("has origin '")
              << origin << "', which is none of the pipeline's targets";
          return signalPassFailure();
        }
        // One request per target with all its new subgraphs.
        OpBuilder builder(&getContext());
        OwningOpRef<ModuleOp> request =
            ModuleOp::create(builder, module.getLoc());
        builder.setInsertionPointToEnd(request->getBody());
        for (SubgraphOp subgraph : subgraphs)
          builder.clone(*subgraph);
        llvm::StringMap<SpecializationVerdict> verdicts;
        if (!requestSpecialization(*target, *request, verdicts, error)) {
          module.emitError(error);
          return signalPassFailure();
        }
        for (SubgraphOp subgraph : subgraphs) {
          const SpecializationVerdict &verdict =
              verdicts[subgraph.getSymName()];
          if (verdict.accepted) {
            accepted.insert(subgraph);
            continue;
          }
          if (origin == kFallbackTargetName) {
            Operation *layer =
                &subgraph.getFunctionalDefinition().getBody().front().front();
            layer->emitOpError("cannot be implemented by any target; the "
                               "fallback target rejected it: ")
                << verdict.reason;
            return signalPassFailure();
          }
          rejected.insert(subgraph);
          reasons[subgraph] = verdict.reason;
        }
      }
      if (rejected.empty())
        continue;

      // Put rejected subgraphs back and record the rejection on the root
      // layer, then match those layers again.
      SmallVector<CallOp> calls(entry.getBody().front().getOps<CallOp>());
      for (CallOp call : calls) {
        SubgraphOp subgraph = call.getSubgraph();
        if (!rejected.contains(subgraph))
          continue;
        std::string key = SubgraphMatcher::rejectionKey(
            subgraph.getOrigin(),
            subgraph->getAttrOfType<StringAttr>(kPatternAttr).getValue());
        Location loc = call.getLoc();
        int64_t root = 0;
        if (auto index = subgraph->getAttrOfType<IntegerAttr>(kRootAttr))
          root = index.getInt();
        SmallVector<Operation *> layers = inlineCall(call);
        // A candidate is keyed by its pattern and its root layer.
        if (root >= 0 && root < static_cast<int64_t>(layers.size())) {
          Operation *layer = layers[root];
          SmallVector<Attribute> keys;
          if (auto existing = layer->getAttrOfType<ArrayAttr>(kRejectedAttr))
            keys.append(existing.begin(), existing.end());
          keys.push_back(StringAttr::get(&getContext(), key));
          layer->setAttr(kRejectedAttr, ArrayAttr::get(&getContext(), keys));
        }
        emitRemark(loc) << "target '" << subgraph.getOrigin()
                        << "' rejected subgraph '" << subgraph.getSymName()
                        << "' (pattern '"
                        << subgraph->getAttrOfType<StringAttr>(kPatternAttr)
                               .getValue()
                        << "'): " << reasons[subgraph];
      }
      for (Operation *subgraph : rejected)
        subgraph->erase();
      if (failed(matcher.matchAndOutline(module, entry)))
        return signalPassFailure();
      dedupAndRenameSubgraphs(module, entry);
    }

    // Rejection marks have done their work.
    module.walk([](Operation *op) {
      op->removeAttr(kRejectedAttr);
      if (isa<SubgraphOp>(op))
        op->removeAttr(kRootAttr);
    });
    dedupAndRenameSubgraphs(module, entry);
  }
};
} // namespace

} // namespace cgc
