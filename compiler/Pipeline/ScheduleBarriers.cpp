//===- ScheduleBarriers.cpp - cgc-schedule-barriers -----------------------===//

#include "compiler/Pipeline/DispatchGraph.h"
#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/SubgraphMatcher.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace cgc {
#define GEN_PASS_DEF_SCHEDULEBARRIERS
#include "compiler/Pipeline/Passes.h.inc"

FailureOr<EntryPointOp> getEntryPointFor(ModuleOp module, StringRef pass);

namespace {
struct ScheduleBarriersPass
    : public impl::ScheduleBarriersBase<ScheduleBarriersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<EntryPointOp> entryOr = getEntryPointFor(module, getArgument());
    if (failed(entryOr))
      return signalPassFailure();
    EntryPointOp entry = *entryOr;
    if (!entry->hasAttr(kMemoryAttr)) {
      entry.emitOpError("has no memory plan; run cgc-plan-memory first");
      return signalPassFailure();
    }
    FailureOr<DispatchGraph> dispatch = buildDispatchGraph(entry, false);
    if (failed(dispatch))
      return signalPassFailure();
    const planning::Graph &graph = dispatch->graph;

    // Planned offsets of the intermediates.
    std::vector<uint64_t> offsets(graph.tensors.size(), 0);
    for (auto &calls : dispatch->calls)
      for (CallOp call : calls) {
        auto planned = call->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
        if (!planned ||
            planned.size() != static_cast<int64_t>(call->getNumResults())) {
          call.emitOpError("has no planned offsets; run cgc-plan-memory first");
          return signalPassFailure();
        }
        for (auto [value, offset] : llvm::zip(call->getResults(),
                                              planned.asArrayRef()))
          offsets[dispatch->tensorOf.lookup(value)] = offset;
      }

    // Byte ranges each dispatch reads and writes, in block (dispatch) order.
    auto rangeOf = [&](int32_t id) {
      const planning::Tensor &tensor = graph.tensors[id];
      planning::Range range;
      range.buffer = tensor.kind;
      range.index = tensor.kind == planning::BufferKind::Scratch ? 0 : tensor.index;
      range.offset =
          tensor.kind == planning::BufferKind::Scratch ? offsets[id] : 0;
      range.bytes = tensor.bytes;
      return range;
    };
    std::vector<planning::DispatchAccesses> accesses(graph.nodes.size());
    for (auto [index, node] : llvm::enumerate(graph.nodes)) {
      for (int32_t input : node.inputs)
        if (graph.tensors[input].bytes)
          accesses[index].accesses.push_back({rangeOf(input), false});
      for (int32_t output : node.outputs)
        if (graph.tensors[output].bytes)
          accesses[index].accesses.push_back({rangeOf(output), true});
    }
    planning::BarrierSchedule schedule = planning::scheduleBarriers(accesses);
    std::string error;
    if (verify && !planning::verifyBarriers(accesses, schedule, error)) {
      entry.emitOpError("internal error: the barrier schedule is invalid: ")
          << error;
      return signalPassFailure();
    }

    Builder builder(&getContext());
    for (auto [index, ranges] : llvm::enumerate(schedule.barrierBefore)) {
      CallOp first = dispatch->calls[index].front();
      if (ranges.empty()) {
        first->removeAttr(kBarrierAttr);
        continue;
      }
      SmallVector<Attribute> list;
      for (const planning::Range &range : ranges)
        list.push_back(builder.getDictionaryAttr({
            builder.getNamedAttr(
                "buffer",
                builder.getStringAttr(planning::bufferKindName(range.buffer))),
            builder.getNamedAttr("index", builder.getI64IntegerAttr(range.index)),
            builder.getNamedAttr("offset",
                                 builder.getI64IntegerAttr(range.offset)),
            builder.getNamedAttr("bytes", builder.getI64IntegerAttr(range.bytes)),
        }));
      first->setAttr(kBarrierAttr, builder.getArrayAttr(list));
    }
    entry->setAttr(kScheduleAttr,
                   builder.getDictionaryAttr({
                       builder.getNamedAttr(
                           "dispatches",
                           builder.getI64IntegerAttr(graph.nodes.size())),
                       builder.getNamedAttr(
                           "barriers",
                           builder.getI64IntegerAttr(schedule.barrierCount)),
                   }));
  }
};
} // namespace

} // namespace cgc
