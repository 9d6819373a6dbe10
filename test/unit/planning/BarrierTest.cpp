//===- BarrierTest.cpp - Barriers from byte-range hazards -----------------===//

#include "PlanningTestUtil.h"

#include "compiler/Planning/Planning.h"
#include "compiler/Planning/SyntheticGraphs.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace cgc::planning;
using namespace cgc::planning::testing;

namespace {

Access access(uint64_t offset, uint64_t bytes, bool write,
              BufferKind buffer = BufferKind::Scratch, int32_t index = 0) {
  Access a;
  a.range.buffer = buffer;
  a.range.index = index;
  a.range.offset = offset;
  a.range.bytes = bytes;
  a.write = write;
  return a;
}

/// The test's own checks: every hazard covered by the barriers between its
/// dispatches, every barrier range part of a hazard it resolves.
void checkSchedule(const std::vector<DispatchAccesses> &ds,
                   const BarrierSchedule &schedule, const std::string &what) {
  SCOPED_TRACE(what);
  std::string error;
  EXPECT_TRUE(verifyBarriers(ds, schedule, error)) << error;
  ASSERT_EQ(schedule.barrierBefore.size(), ds.size());
  if (!ds.empty())
    EXPECT_TRUE(schedule.barrierBefore[0].empty());
  uint32_t count = 0;
  for (const auto &b : schedule.barrierBefore)
    count += !b.empty();
  EXPECT_EQ(schedule.barrierCount, count);
  std::vector<TestHazard> hazards = allHazards(ds);
  for (const TestHazard &h : hazards) {
    std::vector<Range> between;
    for (int32_t p = h.before + 1; p <= h.after; ++p)
      between.insert(between.end(), schedule.barrierBefore[p].begin(),
                     schedule.barrierBefore[p].end());
    EXPECT_TRUE(coveredBy(between, h.common))
        << "hazard between dispatches " << h.before << " and " << h.after
        << " on bytes [" << h.common.offset << ", "
        << h.common.offset + h.common.bytes << ")";
  }
  for (size_t p = 0; p < ds.size(); ++p)
    for (const Range &r : schedule.barrierBefore[p]) {
      bool resolves = false;
      for (const TestHazard &h : hazards)
        if (h.before < int32_t(p) && int32_t(p) <= h.after &&
            meets({h.common}, r))
          resolves = true;
      EXPECT_TRUE(resolves) << "barrier before dispatch " << p
                            << " resolves no hazard";
    }
}

TEST(Barriers, EachKindOfHazardGetsExactlyItsBytes) {
  // Read after write: only the common bytes.
  std::vector<DispatchAccesses> raw = {{{access(0, 100, true)}},
                                       {{access(50, 100, false)}}};
  BarrierSchedule s = scheduleBarriers(raw);
  checkSchedule(raw, s, "raw");
  ASSERT_EQ(s.barrierBefore[1].size(), 1u);
  EXPECT_EQ(s.barrierBefore[1][0].offset, 50u);
  EXPECT_EQ(s.barrierBefore[1][0].bytes, 50u);
  // Write after read.
  std::vector<DispatchAccesses> war = {{{access(0, 64, false)}},
                                       {{access(32, 64, true)}}};
  s = scheduleBarriers(war);
  checkSchedule(war, s, "war");
  ASSERT_EQ(s.barrierBefore[1].size(), 1u);
  EXPECT_EQ(s.barrierBefore[1][0].offset, 32u);
  EXPECT_EQ(s.barrierBefore[1][0].bytes, 32u);
  // Write after write, in another buffer.
  std::vector<DispatchAccesses> waw = {
      {{access(0, 8, true, BufferKind::Output, 2)}},
      {{access(4, 8, true, BufferKind::Output, 2)}}};
  s = scheduleBarriers(waw);
  checkSchedule(waw, s, "waw");
  ASSERT_EQ(s.barrierBefore[1].size(), 1u);
  EXPECT_EQ(s.barrierBefore[1][0].buffer, BufferKind::Output);
  EXPECT_EQ(s.barrierBefore[1][0].index, 2);
  // Reads after reads, disjoint writes, and the same bytes of different
  // buffers need nothing.
  std::vector<DispatchAccesses> none = {
      {{access(0, 64, false), access(0, 64, true, BufferKind::Output, 0)}},
      {{access(0, 64, false), access(64, 64, true)}},
      {{access(0, 64, true, BufferKind::Output, 1)}}};
  s = scheduleBarriers(none);
  checkSchedule(none, s, "none");
  EXPECT_EQ(s.barrierCount, 0u);
  // A dispatch reading and writing the same bytes (in place) needs none
  // against itself.
  std::vector<DispatchAccesses> self = {
      {{access(0, 64, false), access(0, 64, true)}}};
  s = scheduleBarriers(self);
  checkSchedule(self, s, "self");
  EXPECT_EQ(s.barrierCount, 0u);
}

TEST(Barriers, SpecExampleKeepsIndependentDispatchesTogether) {
  // A writes a; B and C read a; D reads b; E reads d and c. Separate
  // tensors: barriers after A, before D and before E only.
  std::vector<DispatchAccesses> ds = {
      {{access(0, 64, true)}},                          // A: a
      {{access(0, 64, false), access(64, 64, true)}},   // B: a -> b
      {{access(0, 64, false), access(128, 64, true)}},  // C: a -> c
      {{access(64, 64, false), access(192, 64, true)}}, // D: b -> d
      {{access(192, 64, false), access(128, 64, false),
        access(0, 64, true, BufferKind::Output, 0)}}};  // E
  BarrierSchedule s = scheduleBarriers(ds);
  checkSchedule(ds, s, "spec");
  EXPECT_FALSE(s.barrierBefore[1].empty());
  EXPECT_TRUE(s.barrierBefore[2].empty()); // B and C run together
  EXPECT_FALSE(s.barrierBefore[3].empty());
  EXPECT_FALSE(s.barrierBefore[4].empty());
  EXPECT_EQ(s.barrierCount, 3u);
  // The barrier before D also resolves C -> E on c, so none is needed
  // between C's write and E.
  EXPECT_TRUE(coveredBy(s.barrierBefore[3], access(128, 64, false).range));
}

/// The fewest barriers by brute force: a set of positions is enough when
/// every hazard (i, j) has one in (i, j].
uint32_t fewestBarriers(const std::vector<DispatchAccesses> &ds) {
  std::vector<TestHazard> hazards = allHazards(ds);
  size_t D = ds.size();
  uint32_t best = uint32_t(D);
  for (uint32_t mask = 0; mask < (1u << D); ++mask) {
    if (mask & 1u)
      continue; // never before the first dispatch
    bool ok = true;
    for (const TestHazard &h : hazards) {
      bool hit = false;
      for (int32_t p = h.before + 1; p <= h.after && !hit; ++p)
        hit = mask & (1u << p);
      ok &= hit;
    }
    if (ok)
      best = std::min<uint32_t>(best, uint32_t(__builtin_popcount(mask)));
  }
  return best;
}

TEST(Barriers, RandomAccessListsGetTheFewestBarriers) {
  uint64_t state = 12345;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (int round = 0; round < 300; ++round) {
    size_t D = 2 + next(9);
    std::vector<DispatchAccesses> ds(D);
    for (auto &d : ds) {
      size_t n = 1 + next(3);
      for (size_t k = 0; k < n; ++k) {
        Access a = access(next(16) * 16, 1 + next(64), next(2) == 0,
                          next(5) == 0 ? BufferKind::Output : BufferKind::Scratch,
                          int32_t(next(2)));
        d.accesses.push_back(a);
      }
    }
    BarrierSchedule s = scheduleBarriers(ds);
    checkSchedule(ds, s, "round " + std::to_string(round));
    EXPECT_EQ(s.barrierCount, fewestBarriers(ds)) << "round " << round;
  }
}

TEST(Barriers, RandomPlansAreCoveredAndConcurrencyGroupsStayTogether) {
  int fewer = 0, graphs = 0;
  synthetic::RandomGraphOptions ro;
  ro.maxNodes = 80;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    Graph g = synthetic::randomGraph(40000 + seed, ro);
    MemoryPlanOptions options;
    options.alignment = seed % 2 ? 64 : 1;
    options.mode = seed % 2 ? ScheduleMode::MaxConcurrency
                            : ScheduleMode::MinMemory;
    MemoryPlan plan = planMemory(g, orderNodes(g, options.mode, options),
                                 options);
    std::vector<DispatchAccesses> ds = dispatchAccesses(g, plan);
    ASSERT_EQ(ds.size(), g.nodes.size());
    // The accesses are the nodes' tensors at their planned places.
    for (size_t s = 0; s < ds.size(); ++s) {
      const Node &n = g.nodes[plan.order[s]];
      for (const Access &a : ds[s].accesses) {
        bool found = false;
        for (int32_t t : a.write ? n.outputs : n.inputs) {
          const Tensor &tensor = g.tensors[t];
          uint64_t off = tensor.kind == BufferKind::Scratch ? plan.offsets[t]
                                                            : 0;
          found |= tensor.kind == a.range.buffer && off == a.range.offset &&
                   tensor.bytes == a.range.bytes;
        }
        EXPECT_TRUE(found) << "seed " << seed << " step " << s;
      }
    }
    BarrierSchedule schedule = scheduleBarriers(ds);
    checkSchedule(ds, schedule, "seed " + std::to_string(seed));
    EXPECT_LE(schedule.barrierCount, ds.empty() ? 0 : ds.size() - 1);
    if (options.mode == ScheduleMode::MaxConcurrency) {
      // Barriers only where a concurrency group starts.
      for (size_t s = 1; s < ds.size(); ++s)
        if (plan.stepGroup[s] == plan.stepGroup[s - 1])
          EXPECT_TRUE(schedule.barrierBefore[s].empty())
              << "seed " << seed << ": a barrier inside a group at step " << s;
      int32_t groups = plan.stepGroup.empty() ? 0 : plan.stepGroup.back() + 1;
      EXPECT_LE(schedule.barrierCount, uint32_t(std::max(groups - 1, 0)));
      if (size_t(groups) < ds.size()) {
        ++graphs;
        fewer += schedule.barrierCount + 1 < ds.size();
      }
    }
    if (::testing::Test::HasFatalFailure())
      return;
  }
  std::printf("[ planning ] max-concurrency plans with independent branches: "
              "%d of %d have fewer barriers than dispatch boundaries\n",
              fewer, graphs);
  EXPECT_EQ(fewer, graphs);
  EXPECT_GT(graphs, 100);
}

TEST(Barriers, VerifierRejectsBrokenSchedules) {
  int tried = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Graph g = synthetic::randomGraph(50000 + seed);
    MemoryPlanOptions options;
    MemoryPlan plan = planMemory(g, orderNodes(g, options.mode), options);
    std::vector<DispatchAccesses> ds = dispatchAccesses(g, plan);
    BarrierSchedule s = scheduleBarriers(ds);
    std::string error;
    ASSERT_TRUE(verifyBarriers(ds, s, error)) << error;
    size_t p = 1;
    while (p < ds.size() && s.barrierBefore[p].empty())
      ++p;
    if (p >= ds.size())
      continue;
    ++tried;
    BarrierSchedule broken = s;
    broken.barrierBefore[p].pop_back();
    broken.barrierCount -= broken.barrierBefore[p].empty();
    EXPECT_FALSE(verifyBarriers(ds, broken, error)) << "missing range";
    broken = s;
    broken.barrierBefore[p].back().bytes -= 1;
    if (broken.barrierBefore[p].back().bytes > 0)
      EXPECT_FALSE(verifyBarriers(ds, broken, error)) << "short range";
    broken = s;
    broken.barrierCount += 1;
    EXPECT_FALSE(verifyBarriers(ds, broken, error)) << "wrong count";
    broken = s;
    Range bogus;
    bogus.buffer = BufferKind::Scratch;
    bogus.offset = 1ULL << 40; // no tensor lives there
    bogus.bytes = 64;
    broken.barrierBefore[p].push_back(bogus);
    EXPECT_FALSE(verifyBarriers(ds, broken, error)) << "needless range";
    broken = s;
    broken.barrierBefore[0].push_back(bogus);
    broken.barrierCount += 1;
    EXPECT_FALSE(verifyBarriers(ds, broken, error)) << "barrier first";
  }
  EXPECT_GT(tried, 50);
}

} // namespace
