//===- packing.h - Offset assignment for intervals ---------------*- C++ -*-===//
//
// The placement problem under planMemory, free of graphs: items that each
// need `size` bytes over the inclusive step interval [first, last] get
// offsets so that two items whose intervals intersect never share a byte,
// and the footprint (max offset + size) is as small as possible. This is
// dynamic storage allocation (NP-hard); the lower bound is the maximum over
// steps of the bytes of the items live there.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PLANNING_PACKING_H
#define CGC_PLANNING_PACKING_H

#include <cstdint>
#include <string>
#include <vector>

namespace cgc::planning {

struct PackItem {
  int32_t first = 0, last = 0; // inclusive step interval, first <= last
  uint64_t size = 0;           // bytes; may be 0
};

struct PackOptions {
  /// Search nodes the exact search may spend when no heuristic reaches the
  /// lower bound (0: heuristics only); it also stops after 256 item and
  /// segment visits per node of this budget.
  uint64_t searchBudget = 20000;
  /// Randomised re-runs of the best greedy ordering (deterministic seeds).
  uint32_t randomRestarts = 16;
  /// False: skip the greedy portfolio and start the exact search from the
  /// trivial placement (every item stacked); for testing the search.
  bool heuristics = true;
};

struct PackResult {
  std::vector<uint64_t> offsets; // per item
  uint64_t footprint = 0;
  uint64_t lowerBound = 0;
  std::string strategy;     // the strategy whose offsets were kept
  uint64_t searchNodes = 0; // exact-search nodes spent
  /// True when the footprint is known to be the smallest possible: it equals
  /// the lower bound, or the exact search exhausted the smaller capacities.
  bool optimal = false;
};

/// Max over steps of the summed sizes of the items live at that step.
uint64_t packLowerBound(const std::vector<PackItem> &items);

/// Assigns offsets: a portfolio of greedy strategies (item orders by size,
/// lifetime, area, breadth of the busiest step they cross, chronology; each
/// with first-fit and best-fit, then gravity), randomised restarts, then, if
/// the best is above the lower bound, an exact branch-and-bound search over
/// bottom-left-justified placements: at the lower bound with restarts, then
/// bisecting between the bound and the best footprint, until it reaches the
/// bound or runs out of budget. Offsets are sums of item sizes, so they keep
/// any alignment the sizes share. Deterministic.
PackResult packIntervals(const std::vector<PackItem> &items,
                         const PackOptions &options);

/// True when no two items with intersecting intervals share a byte and
/// `footprint` covers every item; else false with a message.
bool verifyPacking(const std::vector<PackItem> &items,
                   const std::vector<uint64_t> &offsets, uint64_t footprint,
                   std::string &error);

} // namespace cgc::planning

#endif // CGC_PLANNING_PACKING_H
