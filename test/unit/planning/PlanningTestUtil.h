//===- PlanningTestUtil.h - Independent checks for planner tests -*- C++ -*-===//
//
// The tests recompute what they check from the graph and the order, with
// code that shares nothing with the library: lifetimes, concurrency runs,
// the live-bytes maximum, and hazards between dispatches.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_UNIT_PLANNING_PLANNINGTESTUTIL_H
#define CGC_TEST_UNIT_PLANNING_PLANNINGTESTUTIL_H

#include "compiler/Planning/Planning.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc::planning::testing {

inline uint64_t roundUp(uint64_t x, uint64_t a) {
  return a <= 1 ? x : (x + a - 1) / a * a;
}

struct Life {
  int32_t first = -1, last = -1; // steps
  std::vector<int32_t> readSteps;
  int32_t writeStep = -1;
};

/// Lifetimes of every tensor over `order`.
inline std::vector<Life> lifetimes(const Graph &g,
                                   const std::vector<int32_t> &order) {
  std::vector<Life> life(g.tensors.size());
  for (size_t s = 0; s < order.size(); ++s) {
    const Node &n = g.nodes[order[s]];
    for (int32_t t : n.inputs)
      if (life[t].readSteps.empty() || life[t].readSteps.back() != int32_t(s))
        life[t].readSteps.push_back(int32_t(s));
    for (int32_t t : n.outputs)
      life[t].writeStep = int32_t(s);
  }
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Life &l = life[t];
    if (l.writeStep < 0 && l.readSteps.empty())
      continue;
    l.first = l.writeStep >= 0 ? l.writeStep : l.readSteps.front();
    l.last = l.readSteps.empty() ? l.first
                                 : std::max(l.first, l.readSteps.back());
    if (g.tensors[t].kind == BufferKind::Output)
      l.last = int32_t(order.size()) - 1;
  }
  return life;
}

/// Maximal runs of consecutive steps in which no node reads a tensor (of
/// nonzero size: an empty tensor carries nothing to wait for) that another
/// node of the run writes. Returns the run of each step.
inline std::vector<int32_t> dependencyFreeRuns(const Graph &g,
                                               const std::vector<int32_t> &order) {
  std::vector<int32_t> run(order.size(), 0);
  std::vector<int32_t> writtenIn(g.tensors.size(), -1);
  int32_t current = 0;
  for (size_t s = 0; s < order.size(); ++s) {
    const Node &n = g.nodes[order[s]];
    bool dep = false;
    for (int32_t t : n.inputs)
      dep |= g.tensors[t].bytes > 0 && writtenIn[t] == current;
    if (dep)
      ++current;
    run[s] = current;
    for (int32_t t : n.outputs)
      writtenIn[t] = current;
  }
  return run;
}

/// Longest-path levels from the sources, computed by repeated relaxation.
inline std::vector<int32_t> asapLevels(const Graph &g) {
  std::vector<int32_t> writer(g.tensors.size(), -1), level(g.nodes.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int32_t t : g.nodes[n].outputs)
      writer[t] = int32_t(n);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int32_t t : g.nodes[n].inputs)
        if (writer[t] >= 0 && level[n] < level[writer[t]] + 1) {
          level[n] = level[writer[t]] + 1;
          changed = true;
        }
  }
  return level;
}

/// A hazard between two dispatches on common bytes.
struct TestHazard {
  int32_t before, after;
  Range common;
};

/// Every pair of overlapping accesses with a write, by brute force.
inline std::vector<TestHazard>
allHazards(const std::vector<DispatchAccesses> &ds) {
  std::vector<TestHazard> out;
  for (size_t j = 0; j < ds.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      for (const Access &x : ds[i].accesses)
        for (const Access &y : ds[j].accesses) {
          if (!x.write && !y.write)
            continue;
          if (x.range.buffer != y.range.buffer ||
              x.range.index != y.range.index)
            continue;
          uint64_t a = std::max(x.range.offset, y.range.offset);
          uint64_t b = std::min(x.range.offset + x.range.bytes,
                                y.range.offset + y.range.bytes);
          if (a >= b)
            continue;
          Range r = x.range;
          r.offset = a;
          r.bytes = b - a;
          out.push_back({int32_t(i), int32_t(j), r});
        }
  return out;
}

/// True when the union of `ranges` holds every byte of `r`.
inline bool coveredBy(const std::vector<Range> &ranges, const Range &r) {
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  for (const Range &c : ranges)
    if (c.buffer == r.buffer && c.index == r.index)
      pieces.push_back({c.offset, c.offset + c.bytes});
  std::sort(pieces.begin(), pieces.end());
  uint64_t at = r.offset, end = r.offset + r.bytes;
  for (auto &p : pieces)
    if (p.first <= at && p.second > at)
      at = p.second;
  return at >= end;
}

/// True when `r` shares a byte with one of `ranges`.
inline bool meets(const std::vector<Range> &ranges, const Range &r) {
  for (const Range &c : ranges)
    if (c.buffer == r.buffer && c.index == r.index &&
        c.offset < r.offset + r.bytes && r.offset < c.offset + c.bytes)
      return true;
  return false;
}

} // namespace cgc::planning::testing

#endif // CGC_TEST_UNIT_PLANNING_PLANNINGTESTUTIL_H
