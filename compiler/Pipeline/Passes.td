//===- Passes.td - The lowering pipeline's passes ----------*- tablegen -*-===//
//
// Input IR -> Output IR. Each pass has a lit test named after its flag in
// test/compiler/Pipeline/. The pipeline `cgc-lower-to-output-ir` chains them
// (Pipeline.h); docs/pipeline.md describes the IR between them.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PIPELINE_PASSES_TD
#define CGC_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def MatchSubgraphs : Pass<"cgc-match-subgraphs", "::cgc::ModuleOp"> {
  let summary = "Outline the subgraphs that the targets' patterns match";
  let description = [{
    Asks every target for its patterns (CGC_SUBGRAPH_DECLARATION_REQUEST
    through its exchange function), finds every candidate match in the entry
    point, and keeps a deterministic set of non-overlapping matches: higher
    priority first, then more layers, then the target listed first, then the
    pattern declared first, then the match that starts earlier. The fallback
    target (always last) claims every remaining layer. Each kept match is
    outlined into a `cgc.subgraph` (origin: its target; `pattern`: the pattern
    that matched) called from the entry point with `cgc.call`; identical
    subgraphs are shared. Matches are convex, so the subgraphs and the
    partitions built from them stay acyclic.

    Before matching, unused layers are removed and a returned value that is
    an input, a constant or returned twice gets a `cgc_op.identity`, so that
    every model output is written by a layer.
  }];
  let options = [
    ListOption<"targets", "targets", "std::string",
               "Targets in priority order: fallback, patterns:FILE.mlir, or "
               "a registered kind; the fallback target is appended">,
  ];
  let dependentDialects = ["::cgc::CGCDialect", "::cgc::op::CGCOpDialect",
                           "::cgc::pattern::CGCPatternDialect"];
}

def SpecializeSubgraphs : Pass<"cgc-specialize-subgraphs", "::cgc::ModuleOp"> {
  let summary = "Ask each target to accept or reject its concrete subgraphs";
  let description = [{
    Sends each target one CGC_SUBGRAPH_SPECIALIZATION_REQUEST holding its
    subgraphs with their concrete shapes. A rejected subgraph is put back into
    the entry point and its layers are matched again without the rejected
    candidate, so they fall to the next candidate or, at last, to the
    fallback target; the new subgraphs are asked in turn, until every
    subgraph is accepted. A layer the fallback target rejects is an error
    that names the layer and the reason.
  }];
  let options = [
    ListOption<"targets", "targets", "std::string",
               "Targets in priority order, as for cgc-match-subgraphs">,
  ];
  let dependentDialects = ["::cgc::CGCDialect", "::cgc::op::CGCOpDialect",
                           "::cgc::pattern::CGCPatternDialect"];
}

def PartitionSubgraphs : Pass<"cgc-partition", "::cgc::ModuleOp"> {
  let summary = "Group subgraph calls into partitions";
  let description = [{
    Assigns every `cgc.call` a partition (`cgc.partition` attribute). Each
    fallback subgraph is its own partition (it is dispatched as one kernel
    program). Other calls are grouped by target according to `granularity`:

    - `subgraph`: one partition per call (many small units; the client
      compiles them in parallel);
    - `target`: the largest partitions per target, growing each partition
      with calls of its target as long as the graph of partitions stays
      acyclic; `max-subgraphs` bounds the calls per partition (0: no bound).
  }];
  let options = [
    Option<"granularity", "granularity", "std::string", "\"target\"",
           "Partition granularity: subgraph or target">,
    Option<"maxSubgraphs", "max-subgraphs", "unsigned", "0",
           "With granularity=target, the most subgraph calls in one "
           "partition (0: no bound)">,
  ];
}

def PlanMemory : Pass<"cgc-plan-memory", "::cgc::ModuleOp"> {
  let summary = "Order the dispatches and place every intermediate in scratch";
  let description = [{
    Builds the dispatch graph (a dispatch is one partition; model inputs,
    outputs and constants live in their own buffers, every other tensor is an
    intermediate) and calls the planner of compiler/Planning: it chooses an
    execution order and an offset in the one scratch buffer for each
    intermediate, reusing memory of dead tensors and writing the output of an
    all-elementwise dispatch over a same-shaped input that dies there
    (`in-place`). The entry point's calls are put in dispatch order,
    partitions are renumbered in that order, every call gets `cgc.offsets`
    (a scratch offset per result, -1 for model outputs) and the entry point
    `cgc.memory` with the footprint, the lower bound (the most bytes live at
    once) and the naive sum.

    `schedule` is the knob between memory and concurrency: `min-memory`
    reuses memory freely; `max-concurrency` orders by dependency level and
    never reuses memory in a way that would serialize independent dispatches.
  }];
  let options = [
    Option<"alignment", "alignment", "uint64_t", "64",
           "Byte alignment of every scratch offset (raised to what the "
           "subgraphs' patterns require)">,
    Option<"inPlace", "in-place", "bool", "true",
           "Let all-elementwise dispatches write over a dying input">,
    Option<"schedule", "schedule", "std::string", "\"min-memory\"",
           "min-memory or max-concurrency">,
    ListOption<"report", "report", "std::string",
               "Also write the plan as a report to these files: a table "
               "(.txt, or - for stdout), an SVG timeline (.svg) or both "
               "(.html)">,
  ];
}

def ScheduleBarriers : Pass<"cgc-schedule-barriers", "::cgc::ModuleOp"> {
  let summary = "Place barriers where dispatches' byte ranges overlap";
  let description = [{
    For the planned dispatch order, lists the byte ranges each dispatch reads
    and writes (model inputs and outputs by index, intermediates by their
    scratch range) and asks the scheduler of compiler/Planning for barriers:
    one before a dispatch only when it touches a range that a dispatch since
    the previous barrier wrote (or, for its writes, read), covering exactly
    the conflicting ranges. Dispatches between two barriers may run
    concurrently. The first call of each dispatch that needs one gets
    `cgc.barrier_before`; the entry point gets `cgc.schedule` with the counts.
    With `verify`, the schedule is checked against every pair of accesses
    (quadratic: for tests and debugging).
  }];
  let options = [
    Option<"verify", "verify", "bool", "false",
           "Check every hazard is covered (brute force, for tests)">,
  ];
}

def BuildProgram : Pass<"cgc-build-program", "::cgc::ModuleOp"> {
  let summary = "Build the partitions and the program of Output IR";
  let description = [{
    Turns the planned entry point into Output IR as the spec prints it: one
    `cgc.partition` per partition whose bind points are its external inputs
    (in order of first use), then the values it produces for others, then
    its internal intermediates; and a `cgc.program` taking the model inputs,
    outputs and the scratch buffer, binding constants by name, carving a
    `cgc.view_memref` into scratch for each intermediate at its planned
    offset and invoking the partitions in order with `cgc.barrier`s between
    them. The entry point is removed.
  }];
}

def IsolatePartition : Pass<"cgc-isolate-partition", "::cgc::ModuleOp"> {
  let summary = "Keep one partition and the symbols it reaches";
  let description = [{
    Replaces the Output IR module with the Partition IR of one partition (the
    spec's "isolated snippet"): the partition and the subgraphs it invokes,
    nothing else. This is what the compiled model stores, as bytecode, for
    each partition and what a driver compiles.
  }];
  let options = [
    Option<"partition", "partition", "std::string", "\"\"",
           "The partition's symbol name, or its index in module order">,
  ];
}

#endif // CGC_PIPELINE_PASSES_TD
