//===- OrderTest.cpp - Execution orders ------------------------------------===//

#include "PlanningTestUtil.h"

#include "compiler/Planning/Planning.h"
#include "compiler/Planning/SyntheticGraphs.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace cgc::planning;
using namespace cgc::planning::testing;

namespace {

/// Peak of live intermediate bytes over `order`, no in-place, computed with
/// the test's own lifetimes.
uint64_t peakLiveBytes(const Graph &g, const std::vector<int32_t> &order,
                       uint64_t alignment) {
  std::vector<Life> life = lifetimes(g, order);
  std::vector<uint64_t> live(order.size() + 1, 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].kind != BufferKind::Scratch || life[t].first < 0)
      continue;
    for (int32_t s = life[t].first; s <= life[t].last; ++s)
      live[s] += roundUp(g.tensors[t].bytes, alignment);
  }
  return *std::max_element(live.begin(), live.end());
}

std::vector<int32_t> givenOrder(const Graph &g) {
  std::vector<int32_t> order(g.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

TEST(Order, OrdersAreTopologicalAndMinMemoryNeverLosesToTheGivenOrder) {
  int better = 0;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    Graph g = synthetic::randomGraph(20000 + seed);
    MemoryPlanOptions options;
    options.allowInPlace = false;
    std::string error;
    for (ScheduleMode mode :
         {ScheduleMode::MinMemory, ScheduleMode::MaxConcurrency}) {
      std::vector<int32_t> order = orderNodes(g, mode, options);
      EXPECT_TRUE(validateOrder(g, order, error)) << "seed " << seed << ": "
                                                  << error;
    }
    std::vector<int32_t> order = orderNodes(g, ScheduleMode::MinMemory, options);
    uint64_t mine = peakLiveBytes(g, order, options.alignment);
    uint64_t given = peakLiveBytes(g, givenOrder(g), options.alignment);
    EXPECT_LE(mine, given) << "seed " << seed;
    better += mine < given;
  }
  std::printf("[ planning ] min-memory orders: lower peak than the given "
              "order on %d of 500 random graphs\n",
              better);
  EXPECT_GT(better, 0);
}

TEST(Order, MinMemoryFinishesOneBranchBeforeExpandingTheNext) {
  // Two branches x -> big_i -> small_i joined at the end, listed with both
  // expansions first.
  const uint64_t big = 1 << 20, small = 1 << 10;
  Graph g;
  g.tensors = {{"x", 64, BufferKind::Input, 0},
               {"big0", big, BufferKind::Scratch, 0},
               {"big1", big, BufferKind::Scratch, 0},
               {"small0", small, BufferKind::Scratch, 0},
               {"small1", small, BufferKind::Scratch, 0},
               {"out", 64, BufferKind::Output, 0}};
  g.nodes = {{"expand0", {0}, {1}, {}},
             {"expand1", {0}, {2}, {}},
             {"reduce0", {1}, {3}, {}},
             {"reduce1", {2}, {4}, {}},
             {"join", {3, 4}, {5}, {}}};
  std::vector<int32_t> order = orderNodes(g, ScheduleMode::MinMemory);
  EXPECT_GE(peakLiveBytes(g, givenOrder(g), 64), 2 * big);
  EXPECT_LE(peakLiveBytes(g, order, 64), big + 2 * small);
}

TEST(Order, MaxConcurrencyNeedsNoMoreGroupsThanLevels) {
  int wider = 0;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    Graph g = synthetic::randomGraph(30000 + seed);
    std::vector<int32_t> levels = asapLevels(g);
    EXPECT_EQ(dependencyLevels(g), levels) << "seed " << seed;
    int32_t depth = *std::max_element(levels.begin(), levels.end()) + 1;
    std::vector<int32_t> order = orderNodes(g, ScheduleMode::MaxConcurrency);
    std::vector<int32_t> runs = dependencyFreeRuns(g, order);
    EXPECT_EQ(concurrencyGroups(g, order), runs) << "seed " << seed;
    int32_t groups = runs.back() + 1;
    EXPECT_LE(groups, depth) << "seed " << seed;
    wider += size_t(groups) < g.nodes.size();
    // The given order splits into groups the same way.
    EXPECT_EQ(concurrencyGroups(g, givenOrder(g)),
              dependencyFreeRuns(g, givenOrder(g)));
  }
  EXPECT_GT(wider, 100);
}

TEST(Order, ModelZooOrdersNeverRaiseThePeak) {
  for (const auto &entry : synthetic::modelZoo()) {
    MemoryPlanOptions options;
    options.allowInPlace = false;
    std::vector<int32_t> order =
        orderNodes(entry.graph, ScheduleMode::MinMemory, options);
    std::string error;
    ASSERT_TRUE(validateOrder(entry.graph, order, error)) << error;
    EXPECT_LE(peakLiveBytes(entry.graph, order, 64),
              peakLiveBytes(entry.graph, givenOrder(entry.graph), 64))
        << entry.name;
  }
}

} // namespace
