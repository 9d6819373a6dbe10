//===- Barriers.cpp - Barriers from byte-range hazards --------------------===//
//
// scheduleBarriers finds the hazards with a shadow map per buffer: for every
// byte segment, the last dispatch that wrote it and the dispatches that read
// it since. A read conflicts with the last writer (read-after-write); a
// write with the last writer (write-after-write) and with the readers since
// (write-after-read). Older accesses need no pair of their own: they are
// ordered before the last writer by the barrier that resolved that writer's
// own hazard, on the same bytes.
//
// Each hazard (i, j) is the interval (i, j] of positions where a barrier
// resolves it; the fewest barriers that stab every interval are found by the
// classic greedy: sweep the positions, and put a barrier at p when an open
// hazard ends there, resolving every hazard open at p (i < p <= j).
//
//===----------------------------------------------------------------------===//

#include "compiler/Planning/Planning.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace cgc::planning {
namespace {

/// A buffer: kind and index.
using BufferKey = std::pair<int, int32_t>;

BufferKey keyOf(const Range &r) { return {int(r.buffer), r.index}; }

struct Hazard {
  int32_t before, after; // dispatch indices, before < after
  Range range;           // the common bytes
};

struct Segment {
  uint64_t end;
  int32_t writer = -1;
  std::vector<int32_t> readers;
};

using ShadowMap = std::map<uint64_t, Segment>; // keyed by segment start

/// Makes [a, b) a union of whole segments (creating empty ones in gaps) and
/// returns the first of them.
ShadowMap::iterator cover(ShadowMap &map, uint64_t a, uint64_t b) {
  // Split the segment containing a.
  auto it = map.upper_bound(a);
  if (it != map.begin()) {
    auto prev = std::prev(it);
    if (prev->first < a && prev->second.end > a) {
      Segment tail = prev->second;
      prev->second.end = a;
      it = map.emplace_hint(it, a, std::move(tail));
    }
  }
  // Walk to b, filling gaps and splitting the segment containing b.
  uint64_t at = a;
  auto first = map.end();
  while (at < b) {
    it = map.lower_bound(at);
    if (it == map.end() || it->first > at) {
      uint64_t gapEnd = (it == map.end()) ? b : std::min(b, it->first);
      Segment gap;
      gap.end = gapEnd;
      it = map.emplace_hint(it, at, std::move(gap));
    } else if (it->second.end > b) {
      Segment tail = it->second;
      it->second.end = b;
      map.emplace_hint(std::next(it), b, std::move(tail));
    }
    if (first == map.end())
      first = it;
    at = it->second.end;
  }
  return first;
}

std::vector<Hazard> findHazards(const std::vector<DispatchAccesses> &ds) {
  std::map<BufferKey, ShadowMap> shadow;
  std::vector<Hazard> hazards;
  auto add = [&](int32_t i, int32_t j, const Range &like, uint64_t a,
                 uint64_t b) {
    Range r = like;
    r.offset = a;
    r.bytes = b - a;
    hazards.push_back({i, j, r});
  };
  for (size_t jj = 0; jj < ds.size(); ++jj) {
    int32_t j = int32_t(jj);
    for (int pass = 0; pass < 2; ++pass) {
      bool writes = pass == 1; // reads first: a dispatch reading and
                               // writing the same bytes conflicts with
                               // nobody but earlier dispatches
      for (const Access &acc : ds[jj].accesses) {
        if (acc.write != writes || acc.range.bytes == 0)
          continue;
        ShadowMap &map = shadow[keyOf(acc.range)];
        uint64_t a = acc.range.offset, b = a + acc.range.bytes;
        for (auto it = cover(map, a, b); it != map.end() && it->first < b;
             ++it) {
          Segment &seg = it->second;
          if (seg.writer >= 0 && seg.writer != j)
            add(seg.writer, j, acc.range, it->first, seg.end);
          if (writes) {
            for (int32_t r : seg.readers)
              if (r != j)
                add(r, j, acc.range, it->first, seg.end);
            seg.writer = j;
            seg.readers.clear();
          } else if (seg.readers.empty() || seg.readers.back() != j) {
            seg.readers.push_back(j);
          }
        }
      }
    }
  }
  return hazards;
}

/// Sorts by buffer and offset and merges overlapping or touching ranges.
std::vector<Range> mergeRanges(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const Range &x, const Range &y) {
    return std::make_tuple(int(x.buffer), x.index, x.offset) <
           std::make_tuple(int(y.buffer), y.index, y.offset);
  });
  std::vector<Range> out;
  for (const Range &r : ranges) {
    if (r.bytes == 0)
      continue;
    if (!out.empty() && keyOf(out.back()) == keyOf(r) &&
        r.offset <= out.back().offset + out.back().bytes) {
      uint64_t end = std::max(out.back().offset + out.back().bytes,
                              r.offset + r.bytes);
      out.back().bytes = end - out.back().offset;
      continue;
    }
    out.push_back(r);
  }
  return out;
}

bool overlap(const Range &x, const Range &y, uint64_t &a, uint64_t &b) {
  if (keyOf(x) != keyOf(y))
    return false;
  a = std::max(x.offset, y.offset);
  b = std::min(x.offset + x.bytes, y.offset + y.bytes);
  return a < b;
}

/// True when the union of `cover` (ranges of the same buffer) holds [a, b).
bool covered(std::vector<std::pair<uint64_t, uint64_t>> &cover, uint64_t a,
             uint64_t b) {
  std::sort(cover.begin(), cover.end());
  uint64_t at = a;
  for (auto &c : cover) {
    if (c.first > at)
      break;
    at = std::max(at, c.second);
    if (at >= b)
      return true;
  }
  return at >= b;
}

/// Removes [a, b) from a set of disjoint intervals.
void subtract(std::vector<std::pair<uint64_t, uint64_t>> &set, uint64_t a,
              uint64_t b) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto &u : set) {
    if (u.second <= a || b <= u.first) {
      out.push_back(u);
      continue;
    }
    if (u.first < a)
      out.push_back({u.first, a});
    if (b < u.second)
      out.push_back({b, u.second});
  }
  set.swap(out);
}

std::string describe(const Range &r) {
  return std::string(bufferKindName(r.buffer)) + "#" +
         std::to_string(r.index) + " [" + std::to_string(r.offset) + ", " +
         std::to_string(r.offset + r.bytes) + ")";
}

} // namespace

BarrierSchedule
scheduleBarriers(const std::vector<DispatchAccesses> &dispatches) {
  size_t D = dispatches.size();
  BarrierSchedule schedule;
  schedule.barrierBefore.resize(D);
  std::vector<Hazard> hazards = findHazards(dispatches);
  // Open hazards by start; count of open hazards ending at each position.
  std::vector<std::vector<int32_t>> startingAt(D);
  for (size_t h = 0; h < hazards.size(); ++h)
    startingAt[hazards[h].before].push_back(int32_t(h));
  std::vector<int32_t> open, endingAt(D + 1, 0);
  for (size_t p = 1; p < D; ++p) {
    for (int32_t h : startingAt[p - 1]) {
      open.push_back(h);
      ++endingAt[hazards[h].after];
    }
    if (endingAt[p] == 0)
      continue;
    std::vector<Range> ranges;
    ranges.reserve(open.size());
    for (int32_t h : open) {
      ranges.push_back(hazards[h].range);
      --endingAt[hazards[h].after];
    }
    open.clear();
    schedule.barrierBefore[p] = mergeRanges(std::move(ranges));
    ++schedule.barrierCount;
  }
  return schedule;
}

bool verifyBarriers(const std::vector<DispatchAccesses> &dispatches,
                    const BarrierSchedule &schedule, std::string &error) {
  size_t D = dispatches.size();
  if (schedule.barrierBefore.size() != D) {
    error = "the schedule has " +
            std::to_string(schedule.barrierBefore.size()) +
            " barrier slots for " + std::to_string(D) + " dispatches";
    return false;
  }
  uint32_t count = 0;
  for (size_t p = 0; p < D; ++p)
    count += !schedule.barrierBefore[p].empty();
  if (count != schedule.barrierCount) {
    error = "barrierCount is " + std::to_string(schedule.barrierCount) +
            " but " + std::to_string(count) + " dispatches have a barrier";
    return false;
  }
  // Every pair of conflicting accesses, by brute force.
  std::vector<Hazard> hazards;
  std::vector<std::pair<uint64_t, uint64_t>> cover, uncovered;
  for (size_t j = 0; j < D; ++j)
    for (const Access &y : dispatches[j].accesses)
      for (size_t i = 0; i < j; ++i)
        for (const Access &x : dispatches[i].accesses) {
          uint64_t a, b;
          if (!(x.write || y.write) || !overlap(x.range, y.range, a, b))
            continue;
          Range common = x.range;
          common.offset = a;
          common.bytes = b - a;
          hazards.push_back({int32_t(i), int32_t(j), common});
          // Subtract the barriers in (i, j] from the common bytes.
          uncovered.assign(1, {a, b});
          for (size_t p = i + 1; p <= j && !uncovered.empty(); ++p)
            for (const Range &r : schedule.barrierBefore[p]) {
              uint64_t ca, cb;
              if (overlap(r, common, ca, cb))
                subtract(uncovered, ca, cb);
            }
          if (!uncovered.empty()) {
            const char *kind = x.write && y.write ? "write-after-write"
                               : x.write          ? "read-after-write"
                                                  : "write-after-read";
            error = std::string(kind) + " hazard on " + describe(common) +
                    " between dispatch " + std::to_string(i) +
                    " and dispatch " + std::to_string(j) +
                    " is not covered by a barrier";
            return false;
          }
        }
  // Every byte a barrier lists belongs to a hazard it resolves.
  for (size_t p = 0; p < D; ++p)
    for (const Range &r : schedule.barrierBefore[p]) {
      if (r.bytes == 0) {
        error = "the barrier before dispatch " + std::to_string(p) +
                " lists an empty range";
        return false;
      }
      cover.clear();
      for (const Hazard &h : hazards) {
        uint64_t a, b;
        if (h.before < int32_t(p) && int32_t(p) <= h.after &&
            overlap(h.range, r, a, b))
          cover.push_back({a, b});
      }
      if (!covered(cover, r.offset, r.offset + r.bytes)) {
        error = "the barrier before dispatch " + std::to_string(p) +
                " covers " + describe(r) +
                ", where no access before it conflicts with one after";
        return false;
      }
    }
  return true;
}

} // namespace cgc::planning
