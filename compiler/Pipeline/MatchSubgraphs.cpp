//===- MatchSubgraphs.cpp - cgc-match-subgraphs ---------------------------===//

#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/SubgraphMatcher.h"

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_MATCHSUBGRAPHS
#include "compiler/Pipeline/Passes.h.inc"

/// The entry point of an Input IR module, or an error.
FailureOr<EntryPointOp> getEntryPointFor(ModuleOp module, StringRef pass) {
  EntryPointOp entry = module.getEntryPoint();
  if (!entry)
    return module.emitOpError("has no cgc.entry_point; ")
           << pass << " works on Input IR";
  return entry;
}

namespace {
struct MatchSubgraphsPass
    : public impl::MatchSubgraphsBase<MatchSubgraphsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<EntryPointOp> entry =
        getEntryPointFor(module, getArgument());
    if (failed(entry))
      return signalPassFailure();
    SubgraphMatcher matcher;
    std::string error;
    std::vector<std::string> specs(targets.begin(), targets.end());
    if (failed(matcher.initialize(&getContext(), specs, error))) {
      module.emitError(error);
      return signalPassFailure();
    }
    prepareEntryPoint(*entry);
    if (failed(matcher.matchAndOutline(module, *entry)))
      return signalPassFailure();
    dedupAndRenameSubgraphs(module, *entry);
  }
};
} // namespace

} // namespace cgc
