//===- PackingTest.cpp - Offset assignment on random intervals ------------===//

#include "planning/packing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

using namespace cgc::planning;

namespace {

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

std::vector<PackItem> randomItems(uint64_t seed, size_t n, int32_t steps,
                                  uint64_t unit) {
  Rng rng(seed + 1);
  std::vector<PackItem> items(n);
  for (PackItem &it : items) {
    it.first = int32_t(rng.below(uint64_t(steps)));
    it.last = it.first + int32_t(rng.below(uint64_t(std::max(1, steps / 3))));
    it.size = unit * (1 + rng.below(rng.below(2) ? 4 : 40));
    if (rng.below(25) == 0)
      it.size = 0;
  }
  return items;
}

bool intersect(const PackItem &a, const PackItem &b) {
  return a.first <= b.last && b.first <= a.last;
}

/// The test's own check: no two items live together share a byte, and the
/// footprint is the highest end.
void expectValid(const std::vector<PackItem> &items, const PackResult &r) {
  uint64_t top = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].size == 0)
      continue;
    top = std::max(top, r.offsets[i] + items[i].size);
    for (size_t j = i + 1; j < items.size(); ++j) {
      if (items[j].size == 0 || !intersect(items[i], items[j]))
        continue;
      bool share = r.offsets[i] < r.offsets[j] + items[j].size &&
                   r.offsets[j] < r.offsets[i] + items[i].size;
      EXPECT_FALSE(share) << "items " << i << " and " << j;
    }
  }
  EXPECT_EQ(r.footprint, top);
}

uint64_t liveMax(const std::vector<PackItem> &items) {
  int32_t end = 0;
  for (const PackItem &it : items)
    end = std::max(end, it.last + 1);
  uint64_t best = 0;
  for (int32_t s = 0; s < end; ++s) {
    uint64_t sum = 0;
    for (const PackItem &it : items)
      if (it.first <= s && s <= it.last)
        sum += it.size;
    best = std::max(best, sum);
  }
  return best;
}

/// The optimum by exhaustive search: every placement within a capacity can
/// be normalised to one where, in some order, each item sits on the highest
/// end of the earlier items it meets, so the best over all orders is
/// optimal. Depth-first over orders, cutting branches that reach the best
/// footprint found so far.
void orders(const std::vector<PackItem> &items, std::vector<int> &left,
            std::vector<int> &done, std::vector<uint64_t> &off, uint64_t top,
            uint64_t &best) {
  if (left.empty()) {
    best = std::min(best, top);
    return;
  }
  for (size_t x = 0; x < left.size(); ++x) {
    int i = left[x];
    uint64_t o = 0;
    for (int j : done)
      if (intersect(items[i], items[j]))
        o = std::max(o, off[j] + items[j].size);
    if (o + items[i].size >= best)
      continue;
    off[i] = o;
    left.erase(left.begin() + x);
    done.push_back(i);
    orders(items, left, done, off, std::max(top, o + items[i].size), best);
    done.pop_back();
    left.insert(left.begin() + x, i);
  }
}

uint64_t bruteForceOptimum(const std::vector<PackItem> &items) {
  std::vector<int> left, done;
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].size)
      left.push_back(int(i));
  std::vector<uint64_t> off(items.size(), 0);
  uint64_t best = 1;
  for (const PackItem &it : items)
    best += it.size;
  orders(items, left, done, off, 0, best);
  return left.empty() ? 0 : best;
}

TEST(Packing, RandomIntervalsArePackedValidly) {
  double sum = 0, worst = 0;
  int count = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    size_t n = 1 + seed % 120;
    uint64_t unit = seed % 2 ? 64 : 1;
    std::vector<PackItem> items = randomItems(seed, n, int32_t(4 + n / 2), unit);
    PackResult r = packIntervals(items, PackOptions());
    ASSERT_EQ(r.offsets.size(), items.size());
    expectValid(items, r);
    EXPECT_EQ(r.lowerBound, liveMax(items));
    EXPECT_GE(r.footprint, r.lowerBound);
    for (size_t i = 0; i < items.size(); ++i)
      if (items[i].size)
        EXPECT_EQ(r.offsets[i] % unit, 0u);
    std::string error;
    EXPECT_TRUE(verifyPacking(items, r.offsets, r.footprint, error)) << error;
    if (r.lowerBound) {
      double ratio = double(r.footprint) / double(r.lowerBound);
      sum += ratio;
      worst = std::max(worst, ratio);
      ++count;
    }
  }
  std::printf("[ planning ] random intervals: %d instances, footprint / "
              "lower bound mean %.4f max %.4f\n",
              count, sum / count, worst);
  EXPECT_LE(sum / count, 1.05);
}

TEST(Packing, SmallInstancesAreSolvedOptimally) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::vector<PackItem> items = randomItems(1000 + seed, 2 + seed % 6, 5, 1);
    uint64_t optimum = bruteForceOptimum(items);
    for (bool heuristics : {true, false}) {
      PackOptions options;
      options.searchBudget = 1000000;
      options.heuristics = heuristics;
      PackResult r = packIntervals(items, options);
      expectValid(items, r);
      EXPECT_EQ(r.footprint, optimum)
          << "seed " << seed << (heuristics ? "" : ", search only");
      EXPECT_TRUE(r.optimal) << "seed " << seed;
    }
  }
}

/// Random items topped up, step by step, with one item each to the same
/// live total: every step is full at the lower bound, which big single-step
/// items often make unreachable.
std::vector<PackItem> toppedUp(uint64_t seed, size_t n) {
  Rng rng(seed + 3);
  int32_t steps = 3 + int32_t(rng.below(3));
  std::vector<PackItem> items;
  for (size_t i = 0; i < n; ++i) {
    PackItem it;
    it.first = int32_t(rng.below(uint64_t(steps)));
    it.last = std::min(steps - 1, it.first + int32_t(rng.below(3)));
    it.size = 1 + rng.below(4);
    items.push_back(it);
  }
  std::vector<uint64_t> load(size_t(steps), 0);
  for (const PackItem &it : items)
    for (int32_t s = it.first; s <= it.last; ++s)
      load[s] += it.size;
  uint64_t peak = *std::max_element(load.begin(), load.end());
  for (int32_t s = 0; s < steps; ++s)
    if (load[s] < peak)
      items.push_back({s, s, peak - load[s]});
  return items;
}

TEST(Packing, OptimaAboveTheBoundAreFoundAndProven) {
  int checked = 0;
  for (uint64_t seed = 0; seed < 20000 && checked < 10; ++seed) {
    std::vector<PackItem> items = toppedUp(seed, 5 + seed % 3);
    if (items.size() > 10)
      continue;
    PackOptions options;
    options.searchBudget = 1000000;
    PackResult r = packIntervals(items, options);
    expectValid(items, r);
    EXPECT_TRUE(r.optimal) << "seed " << seed;
    if (r.footprint == r.lowerBound)
      continue;
    // Above the bound: confirm that nothing better exists, with and without
    // the greedy portfolio.
    ++checked;
    EXPECT_EQ(r.footprint, bruteForceOptimum(items)) << "seed " << seed;
    options.heuristics = false;
    PackResult s = packIntervals(items, options);
    expectValid(items, s);
    EXPECT_EQ(s.footprint, r.footprint) << "seed " << seed;
    EXPECT_TRUE(s.optimal) << "seed " << seed;
  }
  EXPECT_GE(checked, 10);
}

TEST(Packing, TightStripsReachTheBound) {
  // Perfect packings: a strip of capacity C cut, step after step, into
  // pieces that either live on (keeping their offset) or end, the gaps
  // refilled with new pieces. Every step is full, so the bound is C and a
  // placement at C exists (the one built, checked below); greedy placements
  // rarely find it, and the search has to.
  int atBound = 0, bySearch = 0;
  const int instances = 200;
  for (uint64_t seed = 0; seed < uint64_t(instances); ++seed) {
    Rng rng(seed + 77);
    const uint64_t C = 64;
    std::vector<PackItem> items;
    std::vector<uint64_t> known;
    int32_t steps = 6 + int32_t(rng.below(6));
    struct Piece {
      uint64_t off, size;
      size_t item;
    };
    std::vector<Piece> active;
    auto cut = [&](uint64_t from, uint64_t to, int32_t step) {
      while (from < to) {
        uint64_t size = std::min<uint64_t>(to - from, 1 + rng.below(24));
        items.push_back({step, step, size});
        known.push_back(from);
        active.push_back({from, size, items.size() - 1});
        from += size;
      }
    };
    cut(0, C, 0);
    for (int32_t s = 1; s < steps; ++s) {
      std::vector<Piece> kept;
      for (Piece &p : active) {
        if (rng.below(2)) {
          items[p.item].last = s;
          kept.push_back(p);
        }
      }
      std::sort(kept.begin(), kept.end(),
                [](const Piece &a, const Piece &b) { return a.off < b.off; });
      active = kept;
      uint64_t at = 0;
      for (const Piece &p : kept) {
        cut(at, p.off, s);
        at = p.off + p.size;
      }
      cut(at, C, s);
    }
    std::string error;
    ASSERT_TRUE(verifyPacking(items, known, C, error)) << error;
    PackOptions options;
    options.searchBudget = 200000;
    PackResult r = packIntervals(items, options);
    expectValid(items, r);
    EXPECT_EQ(r.lowerBound, C);
    atBound += r.footprint == C;
    bySearch += r.footprint == C && r.strategy == "exact-search";
  }
  std::printf("[ planning ] tight strips: %d of %d at the bound, %d of them "
              "found by the exact search\n",
              atBound, instances, bySearch);
  // Measured: 195 of 200 with this budget (docs/memory-planning.md).
  EXPECT_GE(atBound, instances * 92 / 100);
  EXPECT_GT(bySearch, instances / 2);
}

} // namespace
