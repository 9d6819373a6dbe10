//===- temporaries.cpp - A driver's per-run temporaries -------------------===//

#include "planning/temporaries.h"

#include "planning/packing.h"

#include <algorithm>

namespace cgc::planning {

namespace {

uint64_t alignUpTo(uint64_t value, uint64_t alignment) {
  return alignment > 1 ? (value + alignment - 1) / alignment * alignment : value;
}

bool takesRoom(const TemporaryBlock &b) { return b.bytes > 0 && b.first <= b.last; }

uint64_t alignmentOf(const TemporaryBlock &b) { return std::max<uint64_t>(b.alignment, 1); }

} // namespace

TemporaryPlan planTemporaries(const std::vector<TemporaryBlock> &blocks,
                              uint64_t searchBudget) {
  TemporaryPlan plan;
  const size_t n = blocks.size();
  plan.offsets.assign(n, 0);
  uint64_t alignment = 1;
  std::vector<PackItem> items(n), raw(n);
  for (size_t i = 0; i < n; ++i) {
    const TemporaryBlock &b = blocks[i];
    if (!takesRoom(b))
      continue;
    plan.unplannedBytes = alignUpTo(plan.unplannedBytes, alignmentOf(b)) + b.bytes;
    alignment = std::max(alignment, alignmentOf(b));
    raw[i] = {int32_t(b.first), int32_t(b.last), b.bytes};
  }
  plan.lowerBound = packLowerBound(raw);
  if (plan.unplannedBytes == 0) {
    plan.strategy = "empty";
    return plan;
  }
  // Sizes rounded to the largest alignment: the packer's offsets are sums of
  // sizes, so every offset is a multiple of it.
  for (size_t i = 0; i < n; ++i)
    if (takesRoom(blocks[i]))
      items[i] = {raw[i].first, raw[i].last, alignUpTo(raw[i].size, alignment)};
  PackOptions options;
  options.searchBudget = searchBudget;
  PackResult packed = packIntervals(items, options);
  plan.strategy = packed.strategy;
  plan.bytes = packed.footprint;
  for (size_t i = 0; i < n; ++i)
    if (takesRoom(blocks[i]))
      plan.offsets[i] = packed.offsets[i];
  // The last aligned item may end past the bytes anyone touches.
  uint64_t end = 0;
  for (size_t i = 0; i < n; ++i)
    if (takesRoom(blocks[i]))
      end = std::max(end, plan.offsets[i] + blocks[i].bytes);
  plan.bytes = end;
  if (plan.bytes > plan.unplannedBytes) {
    // Alignment rounding lost to the sequential layout: keep that one.
    uint64_t at = 0;
    for (size_t i = 0; i < n; ++i)
      if (takesRoom(blocks[i])) {
        at = alignUpTo(at, alignmentOf(blocks[i]));
        plan.offsets[i] = at;
        at += blocks[i].bytes;
      }
    plan.bytes = plan.unplannedBytes;
    plan.strategy = "sequential";
  }
  return plan;
}

bool verifyTemporaryPlan(const std::vector<TemporaryBlock> &blocks, const TemporaryPlan &plan,
                         std::string &error) {
  if (plan.offsets.size() != blocks.size()) {
    error = std::to_string(plan.offsets.size()) + " offsets for " +
            std::to_string(blocks.size()) + " blocks";
    return false;
  }
  std::vector<PackItem> items(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!takesRoom(blocks[i]))
      continue;
    if (plan.offsets[i] % alignmentOf(blocks[i]) != 0) {
      error = "block " + std::to_string(i) + " at offset " + std::to_string(plan.offsets[i]) +
              " is not aligned to " + std::to_string(blocks[i].alignment);
      return false;
    }
    items[i] = {int32_t(blocks[i].first), int32_t(blocks[i].last), blocks[i].bytes};
  }
  return verifyPacking(items, plan.offsets, plan.bytes, error);
}

} // namespace cgc::planning
