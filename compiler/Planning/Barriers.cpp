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
#include <set>
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

/// The buffers some dispatch writes; accesses to the others never conflict.
std::set<BufferKey> writtenBuffers(const std::vector<DispatchAccesses> &ds) {
  std::set<BufferKey> written;
  for (const DispatchAccesses &d : ds)
    for (const Access &acc : d.accesses)
      if (acc.write && acc.range.bytes)
        written.insert(keyOf(acc.range));
  return written;
}

std::vector<Hazard> findHazards(const std::vector<DispatchAccesses> &ds) {
  std::set<BufferKey> written = writtenBuffers(ds);
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
        if (acc.write != writes || acc.range.bytes == 0 ||
            !written.count(keyOf(acc.range)))
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

namespace {

using Intervals = std::vector<std::pair<uint64_t, uint64_t>>;

/// Sorts and merges overlapping or touching intervals.
Intervals normalize(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (auto &x : v) {
    if (x.first >= x.second)
      continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

/// The intersection of two normalized lists.
Intervals intersect(const Intervals &x, const Intervals &y) {
  Intervals out;
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    uint64_t a = std::max(x[i].first, y[j].first);
    uint64_t b = std::min(x[i].second, y[j].second);
    if (a < b)
      out.push_back({a, b});
    if (x[i].second < y[j].second)
      ++i;
    else
      ++j;
  }
  return out;
}

const char *hazardKind(bool earlierWrites, bool laterWrites) {
  return earlierWrites && laterWrites ? "write-after-write"
         : earlierWrites              ? "read-after-write"
                                      : "write-after-read";
}

} // namespace

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

  // Coverage, by simulation: every access stays pending (per byte) until a
  // barrier covers its bytes; an access conflicting with a pending one of
  // an earlier dispatch is an uncovered hazard.
  struct Piece {
    uint64_t a, b;
    int32_t dispatch;
    bool write;
  };
  std::set<BufferKey> written = writtenBuffers(dispatches);
  std::map<BufferKey, std::vector<Piece>> pending;
  for (size_t p = 0; p < D; ++p) {
    for (const Range &r : schedule.barrierBefore[p]) {
      auto it = pending.find(keyOf(r));
      if (it == pending.end())
        continue;
      std::vector<Piece> kept;
      uint64_t a = r.offset, b = r.offset + r.bytes;
      for (const Piece &x : it->second) {
        if (x.b <= a || b <= x.a) {
          kept.push_back(x);
          continue;
        }
        if (x.a < a)
          kept.push_back({x.a, a, x.dispatch, x.write});
        if (b < x.b)
          kept.push_back({b, x.b, x.dispatch, x.write});
      }
      it->second.swap(kept);
    }
    for (const Access &acc : dispatches[p].accesses) {
      if (acc.range.bytes == 0 || !written.count(keyOf(acc.range)))
        continue;
      uint64_t a = acc.range.offset, b = a + acc.range.bytes;
      for (const Piece &x : pending[keyOf(acc.range)]) {
        if (!(acc.write || x.write) || x.b <= a || b <= x.a)
          continue;
        Range common = acc.range;
        common.offset = std::max(a, x.a);
        common.bytes = std::min(b, x.b) - common.offset;
        error = std::string(hazardKind(x.write, acc.write)) + " hazard on " +
                describe(common) + " between dispatch " +
                std::to_string(x.dispatch) + " and dispatch " +
                std::to_string(p) + " is not covered by a barrier";
        return false;
      }
    }
    for (const Access &acc : dispatches[p].accesses)
      if (acc.range.bytes && written.count(keyOf(acc.range)))
        pending[keyOf(acc.range)].push_back(
            {acc.range.offset, acc.range.offset + acc.range.bytes, int32_t(p),
             acc.write});
  }

  // Every byte a barrier lists is one where an access before it and an
  // access at or after it conflict: a write before and any access after,
  // or any access before and a write after.
  struct Located {
    int32_t dispatch;
    const Access *access;
  };
  std::map<BufferKey, std::vector<Located>> byBuffer;
  for (size_t q = 0; q < D; ++q)
    for (const Access &acc : dispatches[q].accesses)
      if (written.count(keyOf(acc.range)))
        byBuffer[keyOf(acc.range)].push_back({int32_t(q), &acc});
  static const std::vector<Located> none;
  for (size_t p = 0; p < D; ++p)
    for (const Range &r : schedule.barrierBefore[p]) {
      if (r.bytes == 0) {
        error = "the barrier before dispatch " + std::to_string(p) +
                " lists an empty range";
        return false;
      }
      uint64_t a = r.offset, b = r.offset + r.bytes;
      Intervals writesBefore, before, writesAfter, after;
      auto found = byBuffer.find(keyOf(r));
      for (const Located &l : found == byBuffer.end() ? none : found->second) {
        const Access &acc = *l.access;
        uint64_t x = std::max(a, acc.range.offset);
        uint64_t y = std::min(b, acc.range.offset + acc.range.bytes);
        if (x >= y)
          continue;
        bool early = size_t(l.dispatch) < p;
        (early ? before : after).push_back({x, y});
        if (acc.write)
          (early ? writesBefore : writesAfter).push_back({x, y});
      }
      Intervals needed = intersect(normalize(writesBefore), normalize(after));
      Intervals war = intersect(normalize(before), normalize(writesAfter));
      needed.insert(needed.end(), war.begin(), war.end());
      needed = normalize(needed);
      if (needed.size() != 1 || needed[0].first != a || needed[0].second != b) {
        error = "the barrier before dispatch " + std::to_string(p) +
                " covers " + describe(r) +
                ", where no access before it conflicts with one after";
        return false;
      }
    }
  return true;
}

} // namespace cgc::planning
