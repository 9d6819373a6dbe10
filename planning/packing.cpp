//===- packing.cpp - Offset assignment for intervals ----------------------===//
//
// Dynamic storage allocation for the memory planner. Three layers:
//
//  1. A portfolio of greedy placements. Each visits the items in one order
//     and puts every item at the lowest (first fit) or tightest (best fit)
//     gap among the already placed items whose intervals intersect its own.
//     Orders: size, lifetime, area, the busiest step an item crosses,
//     breadth (Pisarchyk and Lee's greedy by breadth) and chronology. A
//     gravity pass then drops every item to its lowest feasible offset.
//  2. Randomised restarts of the best orders (nearby swaps).
//  3. If the best is above the lower bound: an exact branch-and-bound search
//     for a placement within a capacity C. It builds bottom-left-justified
//     placements in order of increasing offset, in the spirit of MiniMalloc
//     (Moffitt, ASPLOS 2023): every unplaced item has a skyline (the highest
//     end of the placed items it meets), the search takes the lowest level o
//     among the skylines, picks the segment of time with the least slack at
//     o (fail first) and branches on an item resting there: place it at o,
//     or forbid it from o (it then has to rest on an item placed later;
//     identical items are forbidden with it). Any placement within C can be
//     normalised into one this search produces, so exhausting it proves C
//     infeasible. Pruning, per time segment: the items still to place there
//     fit above their lowest possible offsets ((lowest offset) + (summed
//     sizes) <= C, and the same for every higher threshold); per item:
//     lowest offset + size <= C. Value ordering prefers items whose top
//     lines up with the skyline just before and after their lifetime.
//     The capacity is first the lower bound itself, with restarts (Luby's
//     sequence of node limits, rankings by size and by greedy offset,
//     perturbed); then the search bisects between the lower bound and the
//     best footprint found.
//
//===----------------------------------------------------------------------===//

#include "planning/packing.h"
#include "planning/sort.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <tuple>

namespace cgc::planning {
namespace {

constexpr uint64_t kNone = UINT64_MAX;

/// A small deterministic generator (splitmix64), independent of the
/// standard library's distributions so results are the same everywhere.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

/// The items with nonzero size, their time segments and conflicts.
struct Instance {
  const std::vector<PackItem> &items;
  std::vector<int> live;                  // indices of nonzero items
  std::vector<std::vector<int>> overlaps; // per item: intersecting items
  std::vector<std::vector<int>> twins;    // per item: identical items, itself
                                          // included
  std::vector<int> segFirst, segLast;     // per item: segment span
  std::vector<std::vector<int>> segItems; // per segment: items live there
  std::vector<uint64_t> segLoad;          // per segment: summed sizes
  uint64_t lowerBound = 0;
  uint64_t granule = 1; // gcd of the sizes: every offset is a multiple

  explicit Instance(const std::vector<PackItem> &items) : items(items) {
    size_t n = items.size();
    overlaps.resize(n);
    segFirst.assign(n, 0);
    segLast.assign(n, -1);
    uint64_t g = 0;
    std::vector<int32_t> bounds;
    for (size_t i = 0; i < n; ++i) {
      if (items[i].size == 0)
        continue;
      live.push_back(int(i));
      g = std::gcd(g, items[i].size);
      bounds.push_back(items[i].first);
      bounds.push_back(items[i].last + 1);
    }
    granule = g ? g : 1;
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    size_t segs = bounds.empty() ? 0 : bounds.size() - 1;
    segItems.resize(segs);
    segLoad.assign(segs, 0);
    for (int i : live) {
      int a = int(std::lower_bound(bounds.begin(), bounds.end(),
                                   items[i].first) - bounds.begin());
      int b = int(std::lower_bound(bounds.begin(), bounds.end(),
                                   items[i].last + 1) - bounds.begin());
      segFirst[i] = a;
      segLast[i] = b - 1;
      for (int s = a; s < b; ++s) {
        segItems[s].push_back(i);
        segLoad[s] += items[i].size;
      }
    }
    for (uint64_t load : segLoad)
      lowerBound = std::max(lowerBound, load);
    twins.resize(n);
    std::vector<int> byKey = live;
    std::sort(byKey.begin(), byKey.end(), [&](int a, int b) {
      return std::make_tuple(items[a].first, items[a].last, items[a].size, a) <
             std::make_tuple(items[b].first, items[b].last, items[b].size, b);
    });
    for (size_t x = 0; x < byKey.size();) {
      size_t z = x;
      while (z < byKey.size() && items[byKey[z]].first == items[byKey[x]].first &&
             items[byKey[z]].last == items[byKey[x]].last &&
             items[byKey[z]].size == items[byKey[x]].size)
        ++z;
      for (size_t a = x; a < z; ++a)
        for (size_t b = x; b < z; ++b)
          twins[byKey[a]].push_back(byKey[b]);
      x = z;
    }
    // Conflicts: a sweep over items sorted by first step.
    std::vector<int> byFirst = live;
    std::sort(byFirst.begin(), byFirst.end(), [&](int a, int b) {
      return items[a].first < items[b].first;
    });
    for (size_t x = 0; x < byFirst.size(); ++x) {
      int i = byFirst[x];
      for (size_t y = x + 1; y < byFirst.size(); ++y) {
        int j = byFirst[y];
        if (items[j].first > items[i].last)
          break;
        overlaps[i].push_back(j);
        overlaps[j].push_back(i);
      }
    }
  }

  uint64_t size(int i) const { return items[i].size; }
  int64_t length(int i) const {
    return int64_t(items[i].last) - items[i].first + 1;
  }
};

//===----------------------------------------------------------------------===//
// Greedy placements
//===----------------------------------------------------------------------===//

bool liveTogether(const PackItem &a, const PackItem &b) {
  return a.first <= b.last && b.first <= a.last;
}

/// The lowest gap (first fit) or the tightest gap (best fit, where the room
/// between the highest neighbour and `footprint` counts as a gap too) for
/// item i among `byOffset`, placed items sorted by offset; `skip` is left
/// out.
uint64_t findGap(const Instance &inst, const std::vector<int> &byOffset,
                 const std::vector<uint64_t> &off, int i, int skip,
                 bool bestFit, uint64_t footprint, uint64_t limit = kNone) {
  const PackItem &item = inst.items[i];
  uint64_t size = item.size, cursor = 0, best = kNone, bestGap = kNone;
  for (int j : byOffset) {
    if (j == skip || !liveTogether(item, inst.items[j]))
      continue;
    if (off[j] > cursor) {
      uint64_t gap = off[j] - cursor;
      if (gap >= size) {
        if (!bestFit)
          return cursor;
        if (gap < bestGap) {
          bestGap = gap;
          best = cursor;
        }
      }
    }
    cursor = std::max(cursor, off[j] + inst.size(j));
    if (cursor >= limit)
      return kNone;
  }
  if (best == kNone ||
      (cursor + size <= footprint && footprint - cursor < bestGap))
    best = cursor;
  return best;
}

/// Inserts item i into `byOffset` at its offset.
void insertByOffset(std::vector<int> &byOffset, const std::vector<uint64_t> &off,
                    int i) {
  auto at = std::upper_bound(byOffset.begin(), byOffset.end(), off[i],
                             [&](uint64_t o, int j) { return o < off[j]; });
  byOffset.insert(at, i);
}

/// Places the items of `order` one by one; returns the footprint.
uint64_t greedyPlace(const Instance &inst, const std::vector<int> &order,
                     bool bestFit, std::vector<uint64_t> &off) {
  off.assign(inst.items.size(), 0);
  std::vector<int> byOffset;
  byOffset.reserve(order.size());
  uint64_t footprint = 0;
  for (int i : order) {
    off[i] = findGap(inst, byOffset, off, i, -1, bestFit, footprint);
    insertByOffset(byOffset, off, i);
    footprint = std::max(footprint, off[i] + inst.size(i));
  }
  return footprint;
}

/// Drops every item to its lowest feasible offset given all the others,
/// lowest items first, until nothing moves. Never raises the footprint.
uint64_t gravity(const Instance &inst, std::vector<uint64_t> &off) {
  std::vector<int> byOffset = inst.live;
  std::sort(byOffset.begin(), byOffset.end(), [&](int a, int b) {
    return off[a] != off[b] ? off[a] < off[b] : a < b;
  });
  for (int pass = 0; pass < 4; ++pass) {
    bool moved = false;
    std::vector<int> visit = byOffset;
    for (int i : visit) {
      uint64_t low = findGap(inst, byOffset, off, i, i, false, 0, off[i]);
      if (low == kNone || low >= off[i])
        continue;
      byOffset.erase(std::find(byOffset.begin(), byOffset.end(), i));
      off[i] = low;
      insertByOffset(byOffset, off, i);
      moved = true;
    }
    if (!moved)
      break;
  }
  uint64_t footprint = 0;
  for (int i : inst.live)
    footprint = std::max(footprint, off[i] + inst.size(i));
  return footprint;
}

struct Strategy {
  const char *name;
  std::vector<int> order;
};

std::vector<Strategy> greedyOrders(const Instance &inst) {
  const auto &items = inst.items;
  std::vector<Strategy> out;
  auto sorted = [&](const char *name, auto less) {
    std::vector<int> order = inst.live;
    sortIndices(order, less);
    out.push_back({name, std::move(order)});
  };
  auto bySize = [&](int a, int b) {
    if (inst.size(a) != inst.size(b))
      return inst.size(a) > inst.size(b);
    if (inst.length(a) != inst.length(b))
      return inst.length(a) > inst.length(b);
    return items[a].first < items[b].first;
  };
  sorted("size", bySize);
  sorted("lifetime", [&](int a, int b) {
    if (inst.length(a) != inst.length(b))
      return inst.length(a) > inst.length(b);
    return bySize(a, b);
  });
  sorted("area", [&](int a, int b) {
    long double x = (long double)inst.size(a) * inst.length(a);
    long double y = (long double)inst.size(b) * inst.length(b);
    if (x != y)
      return x > y;
    return bySize(a, b);
  });
  // The busiest segment each item crosses: items at the peak go first.
  std::vector<uint64_t> peak(items.size(), 0);
  for (int i : inst.live)
    for (int s = inst.segFirst[i]; s <= inst.segLast[i]; ++s)
      peak[i] = std::max(peak[i], inst.segLoad[s]);
  sorted("peak", [&](int a, int b) {
    if (peak[a] != peak[b])
      return peak[a] > peak[b];
    return bySize(a, b);
  });
  sorted("chronological", [&](int a, int b) {
    if (items[a].first != items[b].first)
      return items[a].first < items[b].first;
    return bySize(a, b);
  });
  // Greedy by breadth: segments from the busiest down, each contributing its
  // unvisited items by decreasing size.
  {
    std::vector<int> segs(inst.segLoad.size());
    std::iota(segs.begin(), segs.end(), 0);
    sortIndices(segs, [&](int a, int b) {
      return inst.segLoad[a] > inst.segLoad[b];
    });
    std::vector<char> seen(items.size(), 0);
    std::vector<int> order, here;
    for (int s : segs) {
      here.clear();
      for (int i : inst.segItems[s])
        if (!seen[i])
          here.push_back(i);
      sortIndices(here, bySize);
      for (int i : here) {
        seen[i] = 1;
        order.push_back(i);
      }
    }
    out.push_back({"breadth", std::move(order)});
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Exact search
//===----------------------------------------------------------------------===//

class ExactSearch {
public:
  enum Status { Found, Infeasible, Aborted };

  /// `work` counts the items and segments visited, across every search that
  /// shares it; a search stops when it reaches `workLimit`.
  ExactSearch(const Instance &inst, std::vector<int> rank, uint64_t &work,
              uint64_t workLimit)
      : inst(inst), rank(std::move(rank)), work(work), workLimit(workLimit) {}

  /// Looks for a placement within `capacity` spending at most `budget`
  /// nodes; on Found, `out` holds the offsets.
  Status run(uint64_t capacity, uint64_t budget, std::vector<uint64_t> &out,
             uint64_t &nodesUsed) {
    C = capacity;
    size_t n = inst.items.size(), segs = inst.segLoad.size();
    y.assign(n, kNone);
    sky.assign(n, 0);
    minY.assign(n, 0);
    rem = inst.segLoad;
    m.assign(segs, 0);
    refreshed.assign(segs, 0);
    epoch = 0;
    trail.clear();
    placedCount = 0;
    uint64_t nodes = 0;
    Status status = search(budget, nodes);
    // Every run costs at least a node, so callers looping on runs always
    // make progress through their budget.
    nodesUsed += std::max<uint64_t>(nodes, 1);
    if (status == Found) {
      out.assign(n, 0);
      for (int i : inst.live)
        out[i] = y[i];
    }
    return status;
  }

private:
  enum Kind : uint8_t { KSky, KMinY, KRem, KM, KY };
  struct Entry {
    Kind kind;
    int32_t idx;
    uint64_t old;
  };
  struct Frame {
    int k;
    uint64_t o;
    size_t mark;
    bool forbidden;
  };

  const Instance &inst;
  std::vector<int> rank; // lower: tried first
  uint64_t C = 0;
  std::vector<uint64_t> y, sky, minY, rem, m;
  uint64_t &work;
  uint64_t workLimit;
  std::vector<uint64_t> refreshed; // epoch of each segment's last refresh
  std::vector<int> raised;         // items whose skyline place() raised
  uint64_t epoch = 0;
  std::vector<Entry> trail;
  size_t placedCount = 0;

  uint64_t eff(int i) const { return std::max(sky[i], minY[i]); }

  void set(Kind kind, int idx, uint64_t value) {
    std::vector<uint64_t> &v = kind == KSky    ? sky
                               : kind == KMinY ? minY
                               : kind == KRem  ? rem
                               : kind == KM    ? m
                                               : y;
    trail.push_back({kind, int32_t(idx), v[idx]});
    v[idx] = value;
  }

  void undo(size_t mark) {
    while (trail.size() > mark) {
      Entry e = trail.back();
      trail.pop_back();
      switch (e.kind) {
      case KSky: sky[e.idx] = e.old; break;
      case KMinY: minY[e.idx] = e.old; break;
      case KRem: rem[e.idx] = e.old; break;
      case KM: m[e.idx] = e.old; break;
      case KY:
        y[e.idx] = e.old;
        --placedCount;
        break;
      }
    }
  }

  /// Recomputes the lowest possible offset in segments [a, b] and checks
  /// the segment bound there.
  bool refreshSegments(int a, int b) {
    for (int s = a; s <= b; ++s) {
      uint64_t low = kNone, high = 0;
      work += inst.segItems[s].size();
      for (int i : inst.segItems[s])
        if (y[i] == kNone) {
          uint64_t e = eff(i);
          low = std::min(low, e);
          high = std::max(high, e);
        }
      if (low != m[s])
        set(KM, s, low);
      if (low == kNone)
        continue;
      if (low > C || rem[s] > C - low)
        return false;
      // The items that must sit at or above h fit in [h, C), for every h
      // (only worth sorting when the highest h could fail).
      if (high > low && (high > C || rem[s] > C - high) && !spreadFits(s))
        return false;
    }
    return true;
  }

  std::vector<std::pair<uint64_t, uint64_t>> scratch;
  /// For every h among the lowest possible offsets of the items to place in
  /// segment s, the ones that cannot go below h fit in [h, C).
  bool spreadFits(int s) {
    scratch.clear();
    for (int i : inst.segItems[s])
      if (y[i] == kNone)
        scratch.push_back({eff(i), inst.size(i)});
    std::sort(scratch.begin(), scratch.end(),
              [](const auto &x, const auto &y) { return x.first > y.first; });
    uint64_t sum = 0;
    for (auto &e : scratch) {
      sum += e.second;
      if (e.first > C || sum > C - e.first)
        return false;
    }
    return true;
  }

  bool fits(int i) const {
    return eff(i) <= C && inst.size(i) <= C - eff(i);
  }

  bool place(int k, uint64_t o) {
    uint64_t end = o + inst.size(k);
    if (end > C)
      return false;
    set(KY, k, o);
    ++placedCount;
    int a = inst.segFirst[k], b = inst.segLast[k];
    for (int s = a; s <= b; ++s)
      set(KRem, s, rem[s] - inst.size(k));
    raised.clear();
    for (int j : inst.overlaps[k]) {
      if (y[j] != kNone || sky[j] >= end)
        continue;
      set(KSky, j, end);
      if (!fits(j))
        return false;
      raised.push_back(j);
    }
    // Refresh k's segments and those of the raised items, each once.
    ++epoch;
    auto refresh = [&](int first, int last) {
      for (int s = first; s <= last; ++s) {
        if (refreshed[s] == epoch)
          continue;
        refreshed[s] = epoch;
        if (!refreshSegments(s, s))
          return false;
      }
      return true;
    };
    if (!refresh(a, b))
      return false;
    for (int j : raised)
      if (!refresh(inst.segFirst[j], inst.segLast[j]))
        return false;
    return true;
  }

  /// Forbids k from offset o, and with it every unplaced item identical to
  /// k (same interval and size) that could rest there: a placement with one
  /// of them at o is the one with k at o, which has been searched.
  bool forbid(int k, uint64_t o) {
    for (int j : inst.twins[k]) {
      if (y[j] != kNone || sky[j] != o || minY[j] > o)
        continue;
      set(KMinY, j, o + inst.granule);
      if (!fits(j))
        return false;
    }
    return refreshSegments(inst.segFirst[k], inst.segLast[k]);
  }

  /// The next decision, or k = -1 at a dead end. The level o is the lowest
  /// skyline among the items that may rest on theirs; every item still to
  /// place lands at o or above. The item is the best-ranked one resting at o
  /// in the segment with the least slack at that level (fail first: with no
  /// slack, one of that segment's candidates must fill the spot at o).
  void choose(int &k, uint64_t &o) const {
    k = -1;
    o = kNone;
    for (int i : inst.live)
      if (y[i] == kNone && sky[i] >= minY[i])
        o = std::min(o, sky[i]);
    if (o == kNone)
      return;
    int bestSeg = -1;
    uint64_t bestSlack = kNone;
    size_t bestCount = 0;
    work += rem.size() + inst.live.size();
    for (size_t sIdx = 0; sIdx < rem.size(); ++sIdx) {
      if (rem[sIdx] == 0)
        continue;
      uint64_t low = std::max(m[sIdx], o);
      if (low > C || rem[sIdx] > C - low)
        return; // the rising level leaves this segment too little room
      if (m[sIdx] > o)
        continue;
      uint64_t slack = C - low - rem[sIdx];
      if (slack > bestSlack)
        continue;
      size_t count = 0;
      work += inst.segItems[sIdx].size();
      for (int i : inst.segItems[sIdx])
        count += y[i] == kNone && sky[i] == o && sky[i] >= minY[i];
      if (count == 0)
        continue;
      if (slack < bestSlack || count < bestCount) {
        bestSeg = int(sIdx);
        bestSlack = slack;
        bestCount = count;
      }
    }
    if (bestSeg < 0)
      return;
    int bestAlign = -1;
    for (int i : inst.segItems[bestSeg]) {
      if (y[i] != kNone || sky[i] != o || sky[i] < minY[i])
        continue;
      int align = 0;
      // Prefer an item whose top lines up with the placed items just
      // before and after its lifetime: aligned skylines leave room for the
      // items that span them.
      uint64_t end = o + inst.size(i);
      int a = inst.segFirst[i] - 1, b = inst.segLast[i] + 1;
      if (a >= 0 && top(a) == end)
        ++align;
      if (b < int(rem.size()) && top(b) == end)
        ++align;
      if (k < 0 || align > bestAlign ||
          (align == bestAlign && rank[i] < rank[k])) {
        k = i;
        bestAlign = align;
      }
    }
  }

  /// The highest end of the items placed in segment s.
  uint64_t top(int s) const {
    uint64_t t = 0;
    for (int i : inst.segItems[s])
      if (y[i] != kNone)
        t = std::max(t, y[i] + inst.size(i));
    return t;
  }

  Status search(uint64_t budget, uint64_t &nodes) {
    if (!refreshSegments(0, int(inst.segLoad.size()) - 1))
      return Infeasible;
    std::vector<Frame> stack;
    for (;;) {
      if (placedCount == inst.live.size())
        return Found;
      if (nodes >= budget || work >= workLimit)
        return Aborted;
      ++nodes;
      int k;
      uint64_t o;
      choose(k, o);
      bool ok = false;
      if (k >= 0) {
        stack.push_back({k, o, trail.size(), false});
        ok = place(k, o);
      }
      while (!ok) {
        if (stack.empty())
          return Infeasible;
        Frame &f = stack.back();
        undo(f.mark);
        if (f.forbidden) {
          stack.pop_back();
          continue;
        }
        f.forbidden = true;
        ok = forbid(f.k, f.o);
      }
    }
  }
};

/// Items and segments the exact search may visit per node of its budget.
constexpr uint64_t kWorkPerNode = 256;

/// Luby's restart sequence: 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ... (i >= 1).
uint64_t luby(uint64_t i) {
  for (;;) {
    uint64_t k = 1;
    while ((1ULL << k) - 1 < i)
      ++k;
    if ((1ULL << k) - 1 == i)
      return 1ULL << (k - 1);
    i -= (1ULL << (k - 1)) - 1;
  }
}

} // namespace

uint64_t packLowerBound(const std::vector<PackItem> &items) {
  return Instance(items).lowerBound;
}

PackResult packIntervals(const std::vector<PackItem> &items,
                         const PackOptions &options) {
  Instance inst(items);
  PackResult result;
  result.lowerBound = inst.lowerBound;
  result.offsets.assign(items.size(), 0);
  if (inst.live.empty()) {
    result.strategy = "empty";
    result.optimal = true;
    return result;
  }

  // 1. The greedy portfolio.
  std::vector<Strategy> orders = greedyOrders(inst);
  std::vector<uint64_t> off;
  uint64_t best = kNone;
  std::vector<std::pair<uint64_t, size_t>> scores; // footprint, order
  auto consider = [&](uint64_t footprint, const std::string &name) {
    if (footprint < best) {
      best = footprint;
      result.offsets = off;
      result.strategy = name;
    }
  };
  if (!options.heuristics) {
    // The trivial placement: every item on top of the previous one.
    uint64_t top = 0;
    off.assign(items.size(), 0);
    for (int i : inst.live) {
      off[i] = top;
      top += inst.size(i);
    }
    consider(top, "stacked");
  }
  for (size_t o = 0; o < orders.size() && best > inst.lowerBound &&
                     options.heuristics;
       ++o) {
    for (int fit = 0; fit < 2 && best > inst.lowerBound; ++fit) {
      uint64_t footprint = greedyPlace(inst, orders[o].order, fit, off);
      scores.push_back({footprint, o * 2 + fit});
      consider(footprint,
               std::string("greedy-") + orders[o].name +
                   (fit ? "/best-fit" : "/first-fit"));
      if (footprint > inst.lowerBound) {
        uint64_t dropped = gravity(inst, off);
        consider(dropped, std::string("greedy-") + orders[o].name +
                              (fit ? "/best-fit" : "/first-fit") + "+gravity");
      }
    }
  }

  // 2. Randomised restarts of the best orders: swaps of nearby items.
  std::sort(scores.begin(), scores.end());
  for (uint32_t r = 0; r < options.randomRestarts && !scores.empty() &&
                     best > inst.lowerBound;
       ++r) {
    size_t pick = scores[r % std::min<size_t>(scores.size(), 4)].second;
    std::vector<int> order = orders[pick / 2].order;
    Rng rng(0x5eed0000ULL + r);
    size_t swaps = 1 + order.size() / 8;
    for (size_t s = 0; s < swaps && order.size() > 1; ++s) {
      size_t i = rng.below(order.size() - 1);
      size_t j = std::min(order.size() - 1, i + 1 + rng.below(3));
      std::swap(order[i], order[j]);
    }
    uint64_t footprint = greedyPlace(inst, order, pick % 2, off);
    if (footprint > inst.lowerBound)
      footprint = gravity(inst, off);
    consider(footprint, std::string("greedy-") + orders[pick / 2].name +
                            "/randomised");
  }

  // 3. Exact search.
  result.footprint = best;
  uint64_t proven = inst.lowerBound; // no placement below this exists
  if (best > inst.lowerBound && options.searchBudget > 0) {
    // Rank: lower offset in the best greedy placement first, then larger.
    std::vector<int> byOffset = inst.live;
    sortIndices(byOffset, [&](int a, int b) {
      if (result.offsets[a] != result.offsets[b])
        return result.offsets[a] < result.offsets[b];
      return inst.size(a) > inst.size(b);
    });
    std::vector<int> rankOffset(items.size(), 0), rankSize(items.size(), 0);
    for (size_t r = 0; r < byOffset.size(); ++r)
      rankOffset[byOffset[r]] = int(r);
    for (size_t r = 0; r < orders[0].order.size(); ++r)
      rankSize[orders[0].order[r]] = int(r);

    uint64_t spent = 0, budget = options.searchBudget;
    // A second limit on the items and segments the searches visit, so that
    // a budget of nodes costs about the same time on large instances as on
    // small ones.
    uint64_t work = 0, workLimit = budget * kWorkPerNode;
    std::vector<uint64_t> found;
    // The lower bound itself first, with restarts: node limits growing as
    // Luby's sequence (unit 256: 256, 256, 512, 256, 256, 512, 1024, ...)
    // and rankings alternating between size and greedy offset, perturbed
    // after the first two runs. Early wrong turns of a depth-first search
    // are costly, and restarting escapes them; a run that ends without
    // running out of nodes is still a proof.
    const uint64_t phase1 = budget * 3 / 4, unit = 256;
    for (uint32_t r = 0;
         best > inst.lowerBound && spent < phase1 && work < workLimit * 3 / 4;
         ++r) {
      std::vector<int> rank = r % 2 == 0 ? rankSize : rankOffset;
      if (r >= 2) {
        Rng rng(0xfeed0000ULL + r);
        std::vector<int> order = inst.live;
        sortIndices(order,
                            [&](int a, int b) { return rank[a] < rank[b]; });
        size_t swaps = 1 + order.size() / 4;
        for (size_t x = 0; x < swaps && order.size() > 1; ++x) {
          size_t i = rng.below(order.size() - 1);
          size_t j = std::min(order.size() - 1, i + 1 + rng.below(4));
          std::swap(order[i], order[j]);
        }
        for (size_t x = 0; x < order.size(); ++x)
          rank[order[x]] = int(x);
      }
      ExactSearch search(inst, rank, work, workLimit);
      ExactSearch::Status s = search.run(
          inst.lowerBound, std::min(phase1 - spent, unit * luby(r + 1)),
          found, spent);
      if (s == ExactSearch::Found) {
        best = inst.lowerBound;
        result.offsets = found;
        result.strategy = "exact-search";
      } else if (s == ExactSearch::Infeasible) {
        proven = inst.lowerBound + inst.granule;
        break;
      }
    }
    // Then bisect between what is proven (or given up on) and the best
    // footprint: each capacity gets a share of the nodes left; a capacity
    // that runs out is given up on and the probe moves up.
    ExactSearch search(inst, rankOffset, work, workLimit);
    uint64_t low = proven; // capacities below are infeasible or given up
    while (best > low && spent < budget && work < workLimit) {
      uint64_t g = inst.granule;
      uint64_t capacity = (low + (best - low) / 2) / g * g;
      if (capacity < low)
        capacity = low;
      if (capacity >= best)
        capacity = best - g;
      uint64_t slice = std::max<uint64_t>((budget - spent) / 3, 1);
      ExactSearch::Status st = search.run(capacity, slice, found, spent);
      if (st == ExactSearch::Found) {
        uint64_t footprint = 0;
        for (int i : inst.live)
          footprint = std::max(footprint, found[i] + inst.size(i));
        best = footprint;
        result.offsets = found;
        result.strategy = "exact-search";
      } else {
        if (st == ExactSearch::Infeasible && capacity + g > proven &&
            low == proven)
          proven = capacity + g;
        low = capacity + g;
      }
    }
    result.searchNodes = spent;
    result.footprint = best;
  }
  result.optimal = result.footprint <= proven;
  return result;
}

bool verifyPacking(const std::vector<PackItem> &items,
                   const std::vector<uint64_t> &offsets, uint64_t footprint,
                   std::string &error) {
  if (offsets.size() != items.size()) {
    error = "offsets for " + std::to_string(offsets.size()) + " of " +
            std::to_string(items.size()) + " items";
    return false;
  }
  Instance inst(items);
  for (int i : inst.live) {
    if (offsets[i] > footprint || items[i].size > footprint - offsets[i]) {
      error = "item " + std::to_string(i) + " ends past the footprint";
      return false;
    }
    for (int j : inst.overlaps[i]) {
      if (j < i)
        continue;
      uint64_t a = offsets[i], b = offsets[j];
      if (a < b + items[j].size && b < a + items[i].size) {
        error = "items " + std::to_string(i) + " and " + std::to_string(j) +
                " are live together and share bytes";
        return false;
      }
    }
  }
  return true;
}

} // namespace cgc::planning
