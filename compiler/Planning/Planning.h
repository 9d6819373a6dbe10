//===- Planning.h - Memory planning and barrier scheduling ------*- C++ -*-===//
//
// The algorithms behind the cgc-plan-memory and cgc-schedule passes, on plain
// data (no MLIR), so they can be tested on random graphs by the thousand.
//
// A graph is a DAG of dispatches (units of work: a partition dispatched with
// DispatchGraph, or one fallback subgraph dispatched as a compute shader)
// over tensors. Model inputs, outputs and constants live in their own
// buffers; every other tensor is an intermediate placed in the one scratch
// buffer.
//
// The flow a pass follows:
//
//   validateGraph(graph)                      // reject malformed input
//   order = orderNodes(graph, mode, options)  // a topological order
//   plan  = planMemory(graph, order, options) // offsets in scratch
//   accesses = dispatchAccesses(graph, plan)  // byte ranges per dispatch
//   barriers = scheduleBarriers(accesses)     // where to synchronize
//
// docs/memory-planning.md describes the algorithms and their measured
// quality.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PLANNING_PLANNING_H
#define CGC_COMPILER_PLANNING_PLANNING_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cgc::planning {

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

enum class BufferKind { Input, Output, Constant, Scratch };

/// "input", "output", "constant" or "scratch".
const char *bufferKindName(BufferKind kind);

struct Tensor {
  std::string name;
  uint64_t bytes = 0;
  BufferKind kind = BufferKind::Scratch; // Scratch: an intermediate to place
  int32_t index = 0; // input/output/constant number for those kinds
};

struct Node {
  std::string name;
  std::vector<int32_t> inputs;  // tensor ids read
  std::vector<int32_t> outputs; // tensor ids written
  /// For each output, the input whose memory it may reuse (in-place) when
  /// that input dies here, or -1. Set for elementwise ops whose output has
  /// the input's size. May be left empty (no candidates). The planner takes
  /// a candidate only when it is legal: both tensors are intermediates with
  /// the same aligned size, this node is the input's last reader, and (in
  /// MaxConcurrency mode) every other reader of the input runs in an earlier
  /// concurrency group.
  std::vector<int32_t> inPlaceOf;
};

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Node> nodes; // in a valid topological order
};

/// Checks what the planner relies on: tensor ids in range; every tensor
/// written by at most one node and never by the node that reads it; inputs
/// and constants never written; every intermediate read only after it is
/// written in `graph.nodes` order (the node list is topological); inPlaceOf
/// empty or one entry per output, each -1 or one of the node's inputs.
/// False with a message naming the node and tensor.
bool validateGraph(const Graph &graph, std::string &error);

/// Checks that `order` is a permutation of the node indices in which every
/// tensor is written before it is read.
bool validateOrder(const Graph &graph, const std::vector<int32_t> &order,
                   std::string &error);

//===----------------------------------------------------------------------===//
// Execution order
//===----------------------------------------------------------------------===//

/// The knob between minimum memory and maximum concurrency.
///
/// MinMemory: the order is chosen to lower the peak of live intermediate
/// bytes, and the memory plan reuses a byte as soon as the tensor in it is
/// dead. Reuse adds write-after-read dependencies (the next tenant's writer
/// waits for the last reader of the previous one), so fewer dispatches can
/// overlap: memory is the goal.
///
/// MaxConcurrency: the order sorts the nodes by dependency level (the
/// longest path from a source: ASAP, or to a sink: ALAP, whichever needs less
/// memory), and the plan splits that order into concurrency groups, maximal
/// runs of consecutive nodes with no dependency between them (never more
/// groups than levels). Memory is reused only across groups: a byte is handed to a new
/// tensor only if every access to its previous tenant is in an earlier group,
/// so no dependency between nodes of one group is ever added and a barrier
/// is needed only at group boundaries: concurrency is the goal.
enum class ScheduleMode {
  MinMemory,      // order to reduce peak live bytes; reuse memory freely
  MaxConcurrency, // order by dependency level; never reuse memory in a way
                  // that adds a dependency between nodes of the same level
};

/// "min-memory" or "max-concurrency".
const char *scheduleModeName(ScheduleMode mode);

struct MemoryPlanOptions {
  uint64_t alignment = 64; // every scratch offset is a multiple of this
  bool allowInPlace = true;
  ScheduleMode mode = ScheduleMode::MinMemory;
  /// Work limit of the exact offset search that runs when no heuristic
  /// reaches the lower bound: search nodes, and at most 256 item visits per
  /// node over the whole search, so large graphs cost no more time than
  /// small ones (about 20-30 ms at the default on this machine's cores);
  /// 0 disables the search. The result is deterministic for a given limit.
  uint64_t searchBudget = 20000;
  /// Work limit of orderNodes' local improvement (order evaluations).
  uint64_t orderBudget = 2000;
};

/// A topological order of `graph.nodes` (node indices) chosen for `mode`,
/// evaluated with default MemoryPlanOptions.
std::vector<int32_t> orderNodes(const Graph &graph, ScheduleMode mode);
/// The same with the alignment, in-place and work limits of `options`
/// (`options.mode` is ignored in favour of `mode`).
std::vector<int32_t> orderNodes(const Graph &graph, ScheduleMode mode,
                                const MemoryPlanOptions &options);

/// For each node index, its dependency level: 0 for nodes that read no
/// tensor written by another node, else 1 + the highest level among the
/// nodes it depends on (the longest path from a source).
std::vector<int32_t> dependencyLevels(const Graph &graph);

/// Splits `order` into concurrency groups: maximal runs of consecutive nodes
/// with no dependency (a tensor of nonzero size that one writes and another
/// reads) between any two of them. Returns the group of each step. Every
/// group after the first starts with a node that reads bytes written in the
/// group before, so the barrier schedule of a MaxConcurrency plan puts its
/// barriers exactly at group starts.
std::vector<int32_t> concurrencyGroups(const Graph &graph,
                                       const std::vector<int32_t> &order);

//===----------------------------------------------------------------------===//
// Memory planning
//===----------------------------------------------------------------------===//

struct MemoryPlan {
  /// Per tensor id: the scratch offset of an intermediate, or UINT64_MAX for
  /// tensors in other buffers and for intermediates no node touches.
  std::vector<uint64_t> offsets;
  /// Per tensor id: the step (position in `order`) that produces it and the
  /// last step that reads it (inclusive); model outputs live to the end. An
  /// intermediate nobody reads lives in its producing step only; tensors no
  /// node touches have -1.
  std::vector<int32_t> firstStep, lastStep;
  /// Per tensor id: the tensor whose memory it reuses in place, or -1.
  std::vector<int32_t> inPlaceOf;
  uint64_t footprint = 0;  // scratch bytes needed (max offset + aligned size)
  uint64_t lowerBound = 0; // max over steps of live intermediate bytes
                           // (aligned sizes; in-place pairs count once)
  uint64_t naiveSum = 0;   // sum of aligned intermediate sizes
  /// Set by cgc-plan-memory when it plans at call granularity: the
  /// footprint of the plan in which every intermediate of a partition lives
  /// for its whole dispatch (0: not computed). Reports print it beside.
  uint64_t partitionViewFootprint = 0;

  /// The node order the plan is for and the options it was made with.
  std::vector<int32_t> order;
  uint64_t alignment = 1;
  ScheduleMode mode = ScheduleMode::MinMemory;
  /// Per step: the group of steps within which memory is never reused.
  /// MinMemory: every step is its own group (stepGroup[s] == s).
  /// MaxConcurrency: concurrencyGroups(graph, order). Two intermediates may
  /// share bytes only if the group of the last step of one is below the
  /// group of the first step of the other (or they are an in-place pair).
  std::vector<int32_t> stepGroup;
  /// Which placement strategy produced the offsets ("greedy-size/best-fit",
  /// "exact-search", ...), and the exact-search nodes spent.
  std::string strategy;
  uint64_t searchNodes = 0;
  /// True when no placement of these lifetimes (this order, these in-place
  /// pairs) has a smaller footprint: it equals the lower bound, or the exact
  /// search proved every smaller one infeasible.
  bool provenOptimal = false;
};

/// Aligned size of `bytes` (a multiple of `alignment`; alignment 0 means 1).
uint64_t alignUp(uint64_t bytes, uint64_t alignment);

/// Places every intermediate in scratch for the node order `order` (a valid
/// order, see validateOrder).
MemoryPlan planMemory(const Graph &graph, const std::vector<int32_t> &order,
                      const MemoryPlanOptions &options);

/// Checks a plan: lifetimes and groups match the graph and `plan.order`,
/// in-place pairs are legal, offsets aligned, no two intermediates whose
/// lifetimes overlap share a byte (in-place pairs excepted; in
/// MaxConcurrency mode lifetimes are widened to whole concurrency groups),
/// footprint covers every tensor, lowerBound is the live-bytes maximum and
/// footprint >= lowerBound. False with a message naming the tensors.
bool verifyMemoryPlan(const Graph &graph, const MemoryPlan &plan,
                      std::string &error);

//===----------------------------------------------------------------------===//
// Barriers
//===----------------------------------------------------------------------===//

struct Range {
  BufferKind buffer = BufferKind::Scratch;
  int32_t index = 0; // input/output number; 0 for scratch and constants
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct Access {
  Range range;
  bool write = false;
};

/// One dispatch in execution order with the byte ranges it reads and writes.
struct DispatchAccesses {
  std::vector<Access> accesses;
};

/// The accesses of each step of `plan.order`: reads of the node's inputs and
/// writes of its outputs. Intermediates are ranges of scratch at their
/// planned offsets ([offset, offset + bytes)); inputs, outputs and constants
/// are whole ranges [0, bytes) of their buffer `index` (constants are read
/// only, so they never need a barrier).
std::vector<DispatchAccesses> dispatchAccesses(const Graph &graph,
                                               const MemoryPlan &plan);

struct BarrierSchedule {
  /// For each dispatch, the ranges a barrier before it must cover (empty: no
  /// barrier). Dispatches between two barriers may run concurrently.
  std::vector<std::vector<Range>> barrierBefore;
  uint32_t barrierCount = 0;
};

/// A barrier before dispatch p covering range R orders every access to a
/// byte of R by a dispatch before p before every access to it by p or a
/// later dispatch. A hazard is a pair of accesses to a common byte by
/// dispatches i < j, at least one a write (read-after-write,
/// write-after-read, write-after-write); it needs a barrier at some p in
/// (i, j] covering the common bytes.
///
/// The schedule places the fewest barriers that cover every hazard (greedy
/// interval stabbing: a barrier goes before the first dispatch that has an
/// uncovered hazard) and each barrier lists exactly the bytes of the hazards
/// it resolves (merged, sorted by buffer and offset): those of that dispatch
/// and of later dispatches against accesses before it. Dispatches with no
/// hazard between them get no barrier and may run concurrently.
BarrierSchedule scheduleBarriers(const std::vector<DispatchAccesses> &dispatches);

/// Checks that every read-after-write, write-after-read and write-after-write
/// pair of overlapping accesses is separated by a barrier covering it, that
/// barrierCount counts the dispatches with a barrier, and that every byte a
/// barrier lists belongs to a hazard it resolves.
bool verifyBarriers(const std::vector<DispatchAccesses> &dispatches,
                    const BarrierSchedule &schedule, std::string &error);

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

/// A text table of the plan: every intermediate with size, offset and
/// lifetime, then footprint, lower bound, naive sum and their ratios.
std::string renderMemoryReportText(const Graph &graph, const MemoryPlan &plan);
/// A standalone SVG timeline: x is the step, y the scratch offset, each
/// intermediate a box over its lifetime, with its name on hover.
std::string renderMemoryReportSVG(const Graph &graph, const MemoryPlan &plan);
/// A standalone HTML page: the summary, the SVG timeline and the table.
std::string renderMemoryReportHTML(const Graph &graph, const MemoryPlan &plan,
                                   const std::string &title);

} // namespace cgc::planning

#endif // CGC_COMPILER_PLANNING_PLANNING_H
