//===- ModelZooTest.cpp - The synthetic model zoo -------------------------===//

#include "compiler/Planning/Planning.h"
#include "compiler/Planning/SyntheticGraphs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace cgc::planning;
using namespace cgc::planning::synthetic;

namespace {

size_t countEnding(const Graph &g, const std::string &end) {
  size_t n = 0;
  for (const Node &node : g.nodes)
    n += node.name.size() >= end.size() &&
         node.name.compare(node.name.size() - end.size(), end.size(), end) == 0;
  return n;
}

size_t countNodes(const Graph &g, const std::string &part) {
  size_t n = 0;
  for (const Node &node : g.nodes)
    n += node.name.find(part) != std::string::npos;
  return n;
}

uint64_t largest(const Graph &g) {
  uint64_t m = 0;
  for (const Tensor &t : g.tensors)
    if (t.kind == BufferKind::Scratch)
      m = std::max(m, t.bytes);
  return m;
}

TEST(ModelZoo, GraphsFollowTheirArchitectures) {
  for (Granularity g : {Granularity::Fused, Granularity::Layers}) {
    Graph r = resnet50(g);
    // 1 stem + 16 x 3 + 4 projection convolutions.
    EXPECT_EQ(g == Granularity::Fused ? countNodes(r, "(conv")
                                      : countEnding(r, ".conv"),
              53u);
    EXPECT_EQ(g == Granularity::Fused ? countNodes(r, "+add")
                                      : countEnding(r, ".add"),
              16u);
    EXPECT_EQ(largest(r), 64ULL * 112 * 112 * 4);
    Graph m = mobileNetV2(g);
    EXPECT_EQ(countNodes(m, ".dw"), g == Granularity::Fused ? 17u : 17u * 3);
    // Residual adds where stride is 1 and channels match: 10 blocks.
    EXPECT_EQ(g == Granularity::Fused ? countNodes(m, "+add")
                                      : countEnding(m, ".add"),
              10u);
    Graph e = efficientNetB0(g);
    EXPECT_EQ(countNodes(e, ".se.scale"), 16u);
    // Stage 2's first expansion: 96 channels at 112 x 112.
    EXPECT_EQ(largest(e), 96ULL * 112 * 112 * 4);
    Graph b = bertBase(g);
    EXPECT_EQ(countNodes(b, ".softmax"), 12u);
    EXPECT_EQ(largest(b), 128ULL * 3072 * 4); // the FFN intermediate
  }
}

TEST(ModelZoo, EveryGraphPlansAtTheLowerBound) {
  std::printf("[ planning ] %-28s %-15s %6s %12s %12s %12s %8s %8s\n", "graph",
              "mode", "nodes", "footprint", "lower bound", "naive", "ms",
              "barriers");
  for (const auto &entry : modelZoo()) {
    std::string error;
    ASSERT_TRUE(validateGraph(entry.graph, error)) << entry.name << ": "
                                                   << error;
    for (ScheduleMode mode :
         {ScheduleMode::MinMemory, ScheduleMode::MaxConcurrency}) {
      MemoryPlanOptions options;
      options.mode = mode;
      auto t0 = std::chrono::steady_clock::now();
      std::vector<int32_t> order = orderNodes(entry.graph, mode, options);
      MemoryPlan plan = planMemory(entry.graph, order, options);
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
      EXPECT_TRUE(verifyMemoryPlan(entry.graph, plan, error))
          << entry.name << ": " << error;
      EXPECT_EQ(plan.footprint, plan.lowerBound)
          << entry.name << " (" << scheduleModeName(mode) << ")";
      EXPECT_LT(plan.footprint, plan.naiveSum / 3) << entry.name;
      auto accesses = dispatchAccesses(entry.graph, plan);
      BarrierSchedule barriers = scheduleBarriers(accesses);
      EXPECT_TRUE(verifyBarriers(accesses, barriers, error))
          << entry.name << ": " << error;
      std::printf("[ planning ] %-28s %-15s %6zu %12llu %12llu %12llu %8.3f "
                  "%8u\n",
                  entry.name.c_str(), scheduleModeName(mode),
                  entry.graph.nodes.size(),
                  (unsigned long long)plan.footprint,
                  (unsigned long long)plan.lowerBound,
                  (unsigned long long)plan.naiveSum, ms,
                  barriers.barrierCount);
    }
  }
}

TEST(ModelZoo, ResNet50PlansWellUnderFiftyMilliseconds) {
  for (Granularity g : {Granularity::Fused, Granularity::Layers}) {
    Graph graph = resnet50(g);
    std::vector<double> times;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      MemoryPlanOptions options;
      MemoryPlan plan =
          planMemory(graph, orderNodes(graph, options.mode, options), options);
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count());
      ASSERT_EQ(plan.footprint, plan.lowerBound);
    }
    std::sort(times.begin(), times.end());
    EXPECT_LT(times[2], 25.0) << granularityName(g);
  }
}

} // namespace
