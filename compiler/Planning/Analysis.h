//===- Analysis.h - Lifetimes and in-place decisions (internal) -*- C++ -*-===//
//
// Shared by planMemory, orderNodes and verifyMemoryPlan: the liveness of
// every tensor over an order, the in-place pairs the planner takes, and the
// resulting placement items.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PLANNING_ANALYSIS_H
#define CGC_COMPILER_PLANNING_ANALYSIS_H

#include "planning/packing.h"
#include "planning/sort.h"
#include "compiler/Planning/Planning.h"

#include <algorithm>

namespace cgc::planning::detail {

using planning::sortIndices;

struct Liveness {
  std::vector<int32_t> firstStep, lastStep; // per tensor, -1 if untouched
  std::vector<int32_t> prevReadStep;        // last read step before lastStep
  std::vector<int32_t> inPlaceOf;           // per tensor, -1
  std::vector<int32_t> root;                // per tensor: its in-place root
  std::vector<int32_t> stepGroup;           // per step
};

/// Lifetimes over `order` and the legal in-place pairs (see Node::inPlaceOf)
/// for `alignment`, `allowInPlace` and `mode`.
Liveness analyze(const Graph &graph, const std::vector<int32_t> &order,
                 uint64_t alignment, bool allowInPlace, ScheduleMode mode);

/// One placement item per in-place root (intermediates only), in group
/// coordinates; `itemOf[t]` is the item of tensor t or -1.
std::vector<PackItem> placementItems(const Graph &graph, const Liveness &live,
                                     uint64_t alignment,
                                     std::vector<int32_t> &itemOf);

} // namespace cgc::planning::detail

#endif // CGC_COMPILER_PLANNING_ANALYSIS_H
