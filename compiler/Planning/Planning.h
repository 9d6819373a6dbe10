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
  /// the input's size.
  std::vector<int32_t> inPlaceOf;
};

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Node> nodes; // in a valid topological order
};

//===----------------------------------------------------------------------===//
// Execution order
//===----------------------------------------------------------------------===//

/// The knob between minimum memory and maximum concurrency.
enum class ScheduleMode {
  MinMemory,      // order to reduce peak live bytes; reuse memory freely
  MaxConcurrency, // order by dependency level; never reuse memory in a way
                  // that adds a dependency between nodes of the same level
};

/// A topological order of `graph.nodes` (node indices) chosen for `mode`.
std::vector<int32_t> orderNodes(const Graph &graph, ScheduleMode mode);

//===----------------------------------------------------------------------===//
// Memory planning
//===----------------------------------------------------------------------===//

struct MemoryPlanOptions {
  uint64_t alignment = 64; // every scratch offset is a multiple of this
  bool allowInPlace = true;
  ScheduleMode mode = ScheduleMode::MinMemory;
};

struct MemoryPlan {
  /// Per tensor id: the scratch offset of an intermediate, or UINT64_MAX for
  /// tensors in other buffers.
  std::vector<uint64_t> offsets;
  /// Per tensor id: the step (position in `order`) that produces it and the
  /// last step that reads it (inclusive); model outputs live to the end.
  std::vector<int32_t> firstStep, lastStep;
  /// Per tensor id: the tensor whose memory it reuses in place, or -1.
  std::vector<int32_t> inPlaceOf;
  uint64_t footprint = 0;  // scratch bytes needed (max offset + size)
  uint64_t lowerBound = 0; // max over steps of live intermediate bytes
                           // (aligned sizes; in-place pairs count once)
  uint64_t naiveSum = 0;   // sum of aligned intermediate sizes
};

/// Places every intermediate in scratch for the node order `order`.
MemoryPlan planMemory(const Graph &graph, const std::vector<int32_t> &order,
                      const MemoryPlanOptions &options);

/// Checks a plan: offsets aligned, no two intermediates whose lifetimes
/// overlap share a byte (in-place pairs excepted), footprint covers every
/// tensor, footprint >= lowerBound. False with a message naming the tensors.
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

struct BarrierSchedule {
  /// For each dispatch, the ranges a barrier before it must cover (empty: no
  /// barrier). Dispatches between two barriers may run concurrently.
  std::vector<std::vector<Range>> barrierBefore;
  uint32_t barrierCount = 0;
};

/// Inserts a barrier before a dispatch only when it reads or writes a range
/// that overlaps a write (or, for its writes, a read) of a dispatch after the
/// last barrier, covering exactly the conflicting ranges.
BarrierSchedule scheduleBarriers(const std::vector<DispatchAccesses> &dispatches);

/// Checks that every read-after-write, write-after-read and write-after-write
/// pair of overlapping accesses is separated by a barrier covering it.
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

} // namespace cgc::planning

#endif // CGC_COMPILER_PLANNING_PLANNING_H
