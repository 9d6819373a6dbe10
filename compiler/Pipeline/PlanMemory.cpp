//===- PlanMemory.cpp - cgc-plan-memory -----------------------------------===//

#include "compiler/Pipeline/DispatchGraph.h"
#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/SubgraphMatcher.h"

#include "cgc/checked.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_PLANMEMORY
#include "compiler/Pipeline/Passes.h.inc"

FailureOr<EntryPointOp> getEntryPointFor(ModuleOp module, StringRef pass);

namespace {
/// The file names --memory-report writes: a table, a timeline, both.
bool isReportPath(StringRef path) {
  return path == "-" || path.ends_with(".txt") || path.ends_with(".svg") ||
         path.ends_with(".html") || path.ends_with(".htm");
}

struct PlanMemoryPass : public impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<EntryPointOp> entryOr = getEntryPointFor(module, getArgument());
    if (failed(entryOr))
      return signalPassFailure();
    EntryPointOp entry = *entryOr;
    FailureOr<planning::ScheduleMode> mode = parseScheduleMode(schedule);
    if (failed(mode)) {
      module.emitError("unknown schedule '")
          << schedule << "'; use 'min-memory' or 'max-concurrency'";
      return signalPassFailure();
    }
    uint64_t requested = alignment;
    if (requested == 0 || (requested & (requested - 1)) ||
        requested > kMaxAlignment) {
      module.emitError("alignment must be a power of two of at most ")
          << kMaxAlignment << ", got " << requested;
      return signalPassFailure();
    }
    for (const std::string &path : report)
      if (!isReportPath(path)) {
        module.emitError("memory report '")
            << path << "': unknown format '"
            << llvm::sys::path::extension(path)
            << "'; name it .txt (a table), .svg (a timeline), .html (both) "
               "or '-' (the table on stdout)";
        return signalPassFailure();
      }
    FailureOr<DispatchGraph> dispatch = buildDispatchGraph(entry, inPlace);
    if (failed(dispatch))
      return signalPassFailure();

    // The subgraphs' patterns may require more alignment than asked for.
    planning::MemoryPlanOptions options;
    options.alignment = requested;
    for (SubgraphOp subgraph : module.getBody()->getOps<SubgraphOp>())
      if (auto required = subgraph->getAttrOfType<IntegerAttr>(kAlignmentAttr)) {
        uint64_t value = required.getValue().getZExtValue();
        if (value == 0 || (value & (value - 1)) || value > kMaxAlignment) {
          subgraph.emitError("required alignment must be a power of two of "
                             "at most ")
              << kMaxAlignment << ", got " << required;
          return signalPassFailure();
        }
        options.alignment = std::max<uint64_t>(options.alignment, value);
      }
    options.allowInPlace = inPlace;
    options.mode = *mode;

    const planning::Graph &graph = dispatch->graph;
    // Every size the planner adds up fits: the aligned sizes of all
    // intermediates together (the naive plan) bound every offset it picks.
    std::optional<uint64_t> naive = 0;
    for (const planning::Tensor &tensor : graph.tensors) {
      if (tensor.kind != planning::BufferKind::Scratch)
        continue;
      std::optional<uint64_t> aligned =
          checkedAlignUp(tensor.bytes, options.alignment);
      naive = aligned && naive ? checkedAdd(*naive, *aligned) : std::nullopt;
      if (!naive || *naive > uint64_t(INT64_MAX)) {
        entry.emitOpError("the intermediates need more bytes than 2^63 in "
                          "total (at '")
            << tensor.name << "', " << tensor.bytes << " bytes)";
        return signalPassFailure();
      }
    }
    // The dispatch order is chosen at partition granularity.
    std::vector<int32_t> order = planning::orderNodes(graph, *mode, options);
    planning::MemoryPlan partitionView =
        planning::planMemory(graph, order, options);
    // In min-memory mode the intermediates are placed at the granularity of
    // subgraph invocations, so a partition reuses memory inside its
    // dispatch (buildCallGraph). In max-concurrency mode a partition's
    // intermediates stay apart for its whole dispatch, as the dispatches do.
    const planning::Graph *planned = &graph;
    planning::MemoryPlan plan = partitionView;
    std::optional<CallGraph> calls;
    if (*mode == planning::ScheduleMode::MinMemory) {
      // Every value lives exactly from its call to its last reader, the
      // values that cross a partition's boundary too: the driver orders its
      // accesses to bind points that share bytes (the spec leaves the
      // synchronization inside an MLIR program to it).
      calls = buildCallGraph(*dispatch, order);
      plan = planning::planMemory(calls->graph, calls->order, options);
      planned = &calls->graph;
    }
    if (plan.footprint > kMaxTensorBytes) {
      entry.emitOpError("the scratch buffer would need ")
          << plan.footprint << " bytes, more than cgc's limit of "
          << maxTensorBytesText();
      return signalPassFailure();
    }
    std::string error;
    if (!planning::verifyMemoryPlan(*planned, plan, error)) {
      entry.emitOpError("internal error: the memory plan is invalid: ")
          << error;
      return signalPassFailure();
    }
    // What the tools print beside the plan (whose lower bound is the
    // op-level one): the plan as it was when every intermediate of a
    // partition lived for its whole dispatch.
    if (calls)
      plan.partitionViewFootprint = partitionView.footprint;

    // Dispatch order, partitions renumbered in it, offsets per result.
    Builder builder(&getContext());
    Operation *returnOp = entry.getBody().front().getTerminator();
    for (auto [step, node] : llvm::enumerate(order))
      for (CallOp call : dispatch->calls[node]) {
        call->moveBefore(returnOp);
        call->setAttr(kPartitionAttr, builder.getI64IntegerAttr(step));
        SmallVector<int64_t> offsets;
        for (Value result : call->getResults()) {
          int32_t id = dispatch->tensorOf.lookup(result);
          offsets.push_back(graph.tensors[id].kind ==
                                    planning::BufferKind::Scratch
                                ? static_cast<int64_t>(plan.offsets[id])
                                : -1);
        }
        call->setAttr(kOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
      }
    entry->setAttr(
        kMemoryAttr,
        builder.getDictionaryAttr({
            builder.getNamedAttr("alignment",
                                 builder.getI64IntegerAttr(options.alignment)),
            builder.getNamedAttr("footprint",
                                 builder.getI64IntegerAttr(plan.footprint)),
            builder.getNamedAttr("lower_bound",
                                 builder.getI64IntegerAttr(plan.lowerBound)),
            builder.getNamedAttr("naive",
                                 builder.getI64IntegerAttr(plan.naiveSum)),
            builder.getNamedAttr(
                "schedule",
                builder.getStringAttr(planning::scheduleModeName(*mode))),
        }));

    for (const std::string &path : report)
      if (failed(writeReport(path, *planned, plan)))
        return signalPassFailure();
  }

  LogicalResult writeReport(StringRef path, const planning::Graph &graph,
                            const planning::MemoryPlan &plan) {
    std::string text;
    if (path.ends_with(".svg"))
      text = planning::renderMemoryReportSVG(graph, plan);
    else if (path.ends_with(".html") || path.ends_with(".htm"))
      text = planning::renderMemoryReportHTML(graph, plan, "cgc memory plan");
    else
      text = planning::renderMemoryReportText(graph, plan);
    if (path == "-") {
      llvm::outs() << text;
      return success();
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return getOperation().emitError("cannot write the memory report '")
             << path << "': " << ec.message();
    os << text;
    return success();
  }
};
} // namespace

} // namespace cgc
