//===- temporaries.h - A driver's per-run temporaries ------------*- C++ -*-===//
//
// Part of cgc's planning library (planning/). A driver's temporaries (the
// values of a program that live in its own per-run memory) placed by
// lifetime over the program's steps, with the same interval packer that
// places the compiler's intermediates in scratch (packing.h).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PLANNING_TEMPORARIES_H
#define CGC_PLANNING_TEMPORARIES_H

#include <cstdint>
#include <string>
#include <vector>

namespace cgc::planning {

/// A block of per-run memory: `bytes` at a multiple of `alignment` (a power
/// of two), live over the inclusive step interval [first, last]. A block
/// with no bytes, or that no step touches (first > last), takes no room.
struct TemporaryBlock {
  uint64_t bytes = 0;
  uint64_t alignment = 64;
  int64_t first = 0, last = -1;
};

struct TemporaryPlan {
  std::vector<uint64_t> offsets; // per block
  uint64_t bytes = 0;            // the footprint: max over blocks of offset + bytes
  /// Max over steps of the bytes live there: no plan can be smaller.
  uint64_t lowerBound = 0;
  /// Every block one after another, each aligned (no reuse).
  uint64_t unplannedBytes = 0;
  std::string strategy; // how the offsets were found (packIntervals' strategy)
};

/// Offsets such that two blocks with intersecting intervals never share a
/// byte, every offset a multiple of its block's alignment, and the footprint
/// small: packIntervals with `searchBudget` nodes of exact search (sizes
/// rounded up to the largest alignment). Never above unplannedBytes.
/// Deterministic.
TemporaryPlan planTemporaries(const std::vector<TemporaryBlock> &blocks,
                              uint64_t searchBudget = 2000);

/// True when `plan` keeps every block aligned, inside `plan.bytes`, and apart
/// from every block live at the same time; else false with a message.
bool verifyTemporaryPlan(const std::vector<TemporaryBlock> &blocks, const TemporaryPlan &plan,
                         std::string &error);

} // namespace cgc::planning

#endif // CGC_PLANNING_TEMPORARIES_H
