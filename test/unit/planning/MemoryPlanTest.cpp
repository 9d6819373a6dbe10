//===- MemoryPlanTest.cpp - Memory plans on random DAGs -------------------===//

#include "PlanningTestUtil.h"

#include "compiler/Planning/Planning.h"
#include "compiler/Planning/SyntheticGraphs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <fstream>

using namespace cgc::planning;
using namespace cgc::planning::testing;

namespace {

constexpr uint64_t kNone = UINT64_MAX;
const uint64_t kAlignments[] = {1, 4, 16, 64, 256, 4096};

/// Checks `plan` against the graph with the test's own code.
void checkPlan(const Graph &g, const MemoryPlan &plan, uint64_t alignment,
                   ScheduleMode mode, const std::string &what) {
  SCOPED_TRACE(what);
  std::string error;
  EXPECT_TRUE(verifyMemoryPlan(g, plan, error)) << error;
  std::vector<Life> life = lifetimes(g, plan.order);
  size_t steps = plan.order.size();
  // The unit of time within which memory is never reused.
  std::vector<int32_t> unit(steps);
  if (mode == ScheduleMode::MaxConcurrency)
    unit = dependencyFreeRuns(g, plan.order);
  else
    for (size_t s = 0; s < steps; ++s)
      unit[s] = int32_t(s);
  EXPECT_EQ(plan.stepGroup, unit);

  size_t T = g.tensors.size();
  auto size = [&](size_t t) { return roundUp(g.tensors[t].bytes, alignment); };
  auto isIntermediate = [&](size_t t) {
    return g.tensors[t].kind == BufferKind::Scratch && life[t].first >= 0;
  };
  uint64_t naive = 0;
  for (size_t t = 0; t < T; ++t) {
    if (!isIntermediate(t)) {
      EXPECT_EQ(plan.offsets[t], kNone) << g.tensors[t].name;
      EXPECT_EQ(plan.inPlaceOf[t], -1) << g.tensors[t].name;
      continue;
    }
    naive += size(t);
    EXPECT_EQ(plan.firstStep[t], life[t].first) << g.tensors[t].name;
    EXPECT_EQ(plan.lastStep[t], life[t].last) << g.tensors[t].name;
    ASSERT_NE(plan.offsets[t], kNone) << g.tensors[t].name;
    EXPECT_EQ(plan.offsets[t] % alignment, 0u) << g.tensors[t].name;
    EXPECT_LE(plan.offsets[t] + size(t), plan.footprint) << g.tensors[t].name;
  }
  EXPECT_EQ(plan.naiveSum, naive);

  // In-place pairs: allowed by the node, the input dies there, and (in
  // MaxConcurrency mode) its other readers are in earlier units.
  for (size_t b = 0; b < T; ++b) {
    int32_t a = plan.inPlaceOf[b];
    if (a < 0)
      continue;
    int32_t s = life[b].first;
    const Node &n = g.nodes[plan.order[s]];
    bool listed = false;
    for (size_t k = 0; k < n.outputs.size() && k < n.inPlaceOf.size(); ++k)
      listed |= n.outputs[k] == int32_t(b) && n.inPlaceOf[k] == a;
    EXPECT_TRUE(listed) << g.tensors[b].name;
    EXPECT_EQ(life[a].last, s) << g.tensors[b].name;
    EXPECT_EQ(size(a), size(b));
    EXPECT_EQ(plan.offsets[a], plan.offsets[b]);
    for (int32_t r : life[a].readSteps)
      if (r != s)
        EXPECT_LT(unit[r], unit[s]) << g.tensors[b].name;
  }

  // No two intermediates live in a common unit share a byte.
  for (size_t t = 0; t < T; ++t) {
    if (!isIntermediate(t) || size(t) == 0)
      continue;
    for (size_t u = t + 1; u < T; ++u) {
      if (!isIntermediate(u) || size(u) == 0)
        continue;
      bool shareBytes = plan.offsets[t] < plan.offsets[u] + size(u) &&
                        plan.offsets[u] < plan.offsets[t] + size(t);
      if (!shareBytes || plan.inPlaceOf[t] == int32_t(u) ||
          plan.inPlaceOf[u] == int32_t(t))
        continue;
      bool together = unit[life[t].first] <= unit[life[u].last] &&
                      unit[life[u].first] <= unit[life[t].last];
      EXPECT_FALSE(together)
          << g.tensors[t].name << " and " << g.tensors[u].name
          << " share bytes while both live";
      // Reuse never orders two nodes of one unit: every access to the
      // earlier tenant is in a unit before the later tenant's writer.
      size_t early = life[t].first < life[u].first ? t : u;
      size_t late = early == t ? u : t;
      EXPECT_LT(unit[life[early].first], unit[life[late].first]);
      for (int32_t r : life[early].readSteps)
        EXPECT_LT(unit[r], unit[life[late].first]);
    }
  }

  // The live-bytes maximum, in-place pairs counted once.
  int32_t units = steps ? unit.back() + 1 : 0;
  std::vector<uint64_t> liveBytes(size_t(units), 0);
  for (size_t t = 0; t < T; ++t) {
    if (!isIntermediate(t))
      continue;
    for (int32_t x = unit[life[t].first]; x <= unit[life[t].last]; ++x)
      liveBytes[x] += size(t);
    if (plan.inPlaceOf[t] >= 0)
      liveBytes[unit[life[t].first]] -= size(t);
  }
  uint64_t bound = 0;
  for (uint64_t b : liveBytes)
    bound = std::max(bound, b);
  EXPECT_EQ(plan.lowerBound, bound);
  EXPECT_GE(plan.footprint, bound);
}

struct RatioStats {
  double sum = 0, max = 0;
  int count = 0, atBound = 0;
  void add(const MemoryPlan &plan) {
    double r = plan.lowerBound ? double(plan.footprint) / plan.lowerBound : 1;
    sum += r;
    max = std::max(max, r);
    ++count;
    atBound += plan.footprint == plan.lowerBound;
  }
  double mean() const { return count ? sum / count : 0; }
};

void runRandomDags(ScheduleMode mode, RatioStats &stats) {
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    synthetic::RandomGraphOptions ro;
    ro.maxNodes = seed % 4 == 0 ? 300 : 120;
    Graph g = synthetic::randomGraph(seed, ro);
    std::string error;
    ASSERT_TRUE(validateGraph(g, error)) << "seed " << seed << ": " << error;
    MemoryPlanOptions options;
    options.alignment = kAlignments[seed % 6];
    options.allowInPlace = seed % 7 != 3;
    options.mode = mode;
    // Plan the optimised order, and every third graph its given order too.
    std::vector<int32_t> order = orderNodes(g, mode, options);
    ASSERT_TRUE(validateOrder(g, order, error)) << error;
    MemoryPlan plan = planMemory(g, order, options);
    checkPlan(g, plan, options.alignment, mode,
              "seed " + std::to_string(seed));
    if (!options.allowInPlace)
      for (int32_t a : plan.inPlaceOf)
        EXPECT_EQ(a, -1);
    stats.add(plan);
    if (mode == ScheduleMode::MinMemory && seed % 3 == 0) {
      std::vector<int32_t> given(g.nodes.size());
      for (size_t i = 0; i < given.size(); ++i)
        given[i] = int32_t(i);
      MemoryPlan p2 = planMemory(g, given, options);
      checkPlan(g, p2, options.alignment, mode,
                "seed " + std::to_string(seed) + " (given order)");
      stats.add(p2);
    }
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

void report(const char *what, const RatioStats &stats) {
  std::printf("[ planning ] %s: %d plans, footprint / lower bound mean %.4f "
              "max %.4f, %d at the bound\n",
              what, stats.count, stats.mean(), stats.max, stats.atBound);
}

TEST(MemoryPlan, RandomDagsMinMemory) {
  RatioStats stats;
  runRandomDags(ScheduleMode::MinMemory, stats);
  report("random DAGs, min-memory", stats);
  EXPECT_GE(stats.count, 1000);
  EXPECT_LE(stats.mean(), 1.05);
}

TEST(MemoryPlan, RandomDagsMaxConcurrency) {
  RatioStats stats;
  runRandomDags(ScheduleMode::MaxConcurrency, stats);
  report("random DAGs, max-concurrency", stats);
  EXPECT_GE(stats.count, 1000);
  EXPECT_LE(stats.mean(), 1.05);
}

/// The spec's example: A -> a -> {B, C}; B -> b -> D -> d -> E; C -> c -> E,
/// all tensors the same size.
Graph specExample(uint64_t bytes) {
  Graph g;
  auto tensor = [&](const char *name, BufferKind kind) {
    g.tensors.push_back({name, bytes, kind, 0});
    return int32_t(g.tensors.size() - 1);
  };
  int32_t in = tensor("in", BufferKind::Input), a = tensor("a", BufferKind::Scratch),
          b = tensor("b", BufferKind::Scratch), c = tensor("c", BufferKind::Scratch),
          d = tensor("d", BufferKind::Scratch), out = tensor("out", BufferKind::Output);
  g.nodes = {{"A", {in}, {a}, {}},
             {"B", {a}, {b}, {}},
             {"C", {a}, {c}, {}},
             {"D", {b}, {d}, {}},
             {"E", {d, c}, {out}, {}}};
  return g;
}

TEST(MemoryPlan, SpecExampleReusesAOnlyWhenItAddsNoSameLevelDependency) {
  Graph g = specExample(1024);
  MemoryPlanOptions options;
  options.alignment = 64;
  // MinMemory: three slots suffice (a and d can share, as in the spec).
  MemoryPlan minMem = planMemory(g, {0, 1, 2, 3, 4}, options);
  checkPlan(g, minMem, 64, ScheduleMode::MinMemory, "min-memory");
  EXPECT_EQ(minMem.footprint, minMem.lowerBound);
  EXPECT_EQ(minMem.lowerBound, 3u * 1024);
  // MaxConcurrency: C and D may run together, so a (read by C) and d
  // (written by D) must not share memory if C and D are in one group.
  options.mode = ScheduleMode::MaxConcurrency;
  std::vector<int32_t> order = orderNodes(g, options.mode, options);
  MemoryPlan maxConc = planMemory(g, order, options);
  checkPlan(g, maxConc, 64, ScheduleMode::MaxConcurrency, "max-concurrency");
  std::vector<int32_t> step(5);
  for (size_t s = 0; s < order.size(); ++s)
    step[order[s]] = int32_t(s);
  if (maxConc.stepGroup[step[2]] == maxConc.stepGroup[step[3]]) {
    bool share = maxConc.offsets[1] < maxConc.offsets[4] + 1024 &&
                 maxConc.offsets[4] < maxConc.offsets[1] + 1024;
    EXPECT_FALSE(share);
  }
  EXPECT_EQ(maxConc.footprint, maxConc.lowerBound);
}

TEST(MemoryPlan, InPlaceChainsShareOneSlot) {
  // x -> relu (in place) -> add (in place) -> y; sizes equal.
  Graph g;
  g.tensors = {{"in", 4096, BufferKind::Input, 0},
               {"x", 4096, BufferKind::Scratch, 0},
               {"r", 4096, BufferKind::Scratch, 0},
               {"s", 4096, BufferKind::Scratch, 0},
               {"out", 16, BufferKind::Output, 0}};
  g.nodes = {{"conv", {0}, {1}, {}},
             {"relu", {1}, {2}, {1}},
             {"add", {2, 0}, {3}, {2}},
             {"reduce", {3}, {4}, {}}};
  MemoryPlanOptions options;
  MemoryPlan plan = planMemory(g, orderNodes(g, options.mode), options);
  checkPlan(g, plan, options.alignment, options.mode, "chain");
  EXPECT_EQ(plan.inPlaceOf[2], 1);
  EXPECT_EQ(plan.inPlaceOf[3], 2);
  EXPECT_EQ(plan.footprint, 4096u);
  options.allowInPlace = false;
  MemoryPlan apart = planMemory(g, plan.order, options);
  checkPlan(g, apart, options.alignment, options.mode, "no in-place");
  EXPECT_EQ(apart.footprint, 2u * 4096);
}

/// The graph whose intermediates live as `path` lists them (bytes, first
/// step, last step, in place of): node s writes what starts at step s and
/// reads what ends there, offering its results in place as listed.
Graph graphOfIntervals(const std::string &path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  struct Row {
    uint64_t bytes;
    int32_t first, last, inPlaceOf;
  };
  std::vector<Row> rows;
  std::string line;
  int32_t steps = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    Row r;
    fields >> r.bytes >> r.first >> r.last >> r.inPlaceOf;
    rows.push_back(r);
    steps = std::max(steps, r.last + 1);
  }
  Graph g;
  g.nodes.resize(size_t(steps));
  for (int32_t s = 0; s < steps; ++s)
    g.nodes[size_t(s)].name = "step" + std::to_string(s);
  for (size_t t = 0; t < rows.size(); ++t) {
    g.tensors.push_back({"t" + std::to_string(t), rows[t].bytes, BufferKind::Scratch, 0});
    Node &writer = g.nodes[size_t(rows[t].first)];
    writer.outputs.push_back(int32_t(t));
    writer.inPlaceOf.push_back(rows[t].inPlaceOf);
    if (rows[t].last > rows[t].first)
      g.nodes[size_t(rows[t].last)].inputs.push_back(int32_t(t));
  }
  return g;
}

TEST(MemoryPlan, InPlacePairsThatCostFootprintAreDropped) {
  // Swin-T's residual stream runs in place of itself from block to block,
  // which fixes the stream to one offset across attention peaks that need
  // it at different ones: 9.19 MiB placed with the pairs, 8.04 (the bound)
  // without. The plan keeps the smaller.
  Graph g = graphOfIntervals(std::string(CGC_SOURCE_DIR) +
                             "/test/unit/planning/Inputs/swin_t_intervals.txt");
  std::string error;
  ASSERT_TRUE(validateGraph(g, error)) << error;
  std::vector<int32_t> order(g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = int32_t(i);
  MemoryPlanOptions options;
  MemoryPlan plan = planMemory(g, order, options);
  checkPlan(g, plan, options.alignment, options.mode, "swin_t");
  options.allowInPlace = false;
  MemoryPlan apart = planMemory(g, order, options);
  checkPlan(g, apart, options.alignment, options.mode, "swin_t without in-place");
  EXPECT_EQ(apart.footprint, apart.lowerBound);
  EXPECT_EQ(plan.footprint, apart.footprint);
  EXPECT_EQ(plan.footprint, plan.lowerBound);
}

TEST(MemoryPlan, InPlaceIsDeclinedWhenTheInputLivesOn) {
  Graph g;
  g.tensors = {{"in", 256, BufferKind::Input, 0},
               {"x", 256, BufferKind::Scratch, 0},
               {"y", 256, BufferKind::Scratch, 0},
               {"z", 256, BufferKind::Scratch, 0},
               {"out", 256, BufferKind::Output, 0}};
  // relu wants to write y over x, but x is read again by the add.
  g.nodes = {{"conv", {0}, {1}, {}},
             {"relu", {1}, {2}, {1}},
             {"add", {1, 2}, {3}, {}},
             {"copy", {3}, {4}, {}}};
  MemoryPlanOptions options;
  MemoryPlan plan = planMemory(g, {0, 1, 2, 3}, options);
  checkPlan(g, plan, options.alignment, options.mode, "declined");
  EXPECT_EQ(plan.inPlaceOf[2], -1);
  EXPECT_NE(plan.offsets[1], plan.offsets[2]);
}

TEST(MemoryPlan, VerifierRejectsBrokenPlans) {
  int tried = 0;
  for (uint64_t seed = 0; seed < 200 && tried < 40; ++seed) {
    Graph g = synthetic::randomGraph(5000 + seed);
    MemoryPlanOptions options;
    options.alignment = 64;
    MemoryPlan plan = planMemory(g, orderNodes(g, options.mode), options);
    std::string error;
    ASSERT_TRUE(verifyMemoryPlan(g, plan, error)) << error;
    std::vector<Life> life = lifetimes(g, plan.order);
    // Two intermediates live together (and not an in-place pair).
    int32_t x = -1, y = -1;
    for (size_t t = 0; t < g.tensors.size() && x < 0; ++t)
      for (size_t u = t + 1; u < g.tensors.size(); ++u) {
        if (plan.offsets[t] == kNone || plan.offsets[u] == kNone ||
            g.tensors[t].bytes == 0 || g.tensors[u].bytes == 0 ||
            plan.inPlaceOf[t] == int32_t(u) || plan.inPlaceOf[u] == int32_t(t))
          continue;
        if (life[t].first <= life[u].last && life[u].first <= life[t].last) {
          x = int32_t(t);
          y = int32_t(u);
          break;
        }
      }
    if (x < 0 || plan.inPlaceOf[x] >= 0 || plan.inPlaceOf[y] >= 0)
      continue;
    bool xSource = false, ySource = false;
    for (int32_t a : plan.inPlaceOf) {
      xSource |= a == x;
      ySource |= a == y;
    }
    if (xSource || ySource)
      continue;
    ++tried;
    MemoryPlan broken = plan;
    broken.offsets[y] = broken.offsets[x];
    broken.footprint = std::max(broken.footprint,
                                broken.offsets[y] + roundUp(g.tensors[y].bytes, 64));
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "overlap, seed " << seed;
    broken = plan;
    broken.offsets[x] += 32;
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "misaligned";
    broken = plan;
    broken.lowerBound += 64;
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "wrong lower bound";
    broken = plan;
    broken.footprint -= 64;
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "short footprint";
    broken = plan;
    broken.inPlaceOf[y] = x;
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "illegal in-place";
    broken = plan;
    broken.lastStep[x] += 1;
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "wrong lifetime";
    broken = plan;
    broken.naiveSum += 1;
    EXPECT_FALSE(verifyMemoryPlan(g, broken, error)) << "wrong naive sum";
  }
  EXPECT_GE(tried, 20);
}

TEST(MemoryPlan, ValidationNamesTheProblem) {
  Graph good = specExample(64);
  std::string error;
  ASSERT_TRUE(validateGraph(good, error)) << error;

  Graph g = good;
  g.nodes[1].inputs.push_back(17);
  EXPECT_FALSE(validateGraph(g, error));
  EXPECT_NE(error.find("tensor 17"), std::string::npos) << error;

  g = good;
  g.nodes[3].outputs.push_back(3); // c written by D too
  EXPECT_FALSE(validateGraph(g, error));
  EXPECT_NE(error.find("'c' is written by"), std::string::npos) << error;

  g = good;
  g.nodes[0].outputs.push_back(0); // A writes the model input
  EXPECT_FALSE(validateGraph(g, error));
  EXPECT_NE(error.find("model input"), std::string::npos) << error;

  g = good;
  std::swap(g.nodes[0], g.nodes[1]); // B reads a before A writes it
  EXPECT_FALSE(validateGraph(g, error));
  EXPECT_NE(error.find("before any node writes it"), std::string::npos)
      << error;

  g = good;
  g.nodes[1].inPlaceOf = {2}; // c is not an input of B
  EXPECT_FALSE(validateGraph(g, error));
  EXPECT_NE(error.find("does not read"), std::string::npos) << error;

  g = good;
  g.nodes[1].inPlaceOf = {1, -1}; // one entry per output
  EXPECT_FALSE(validateGraph(g, error));

  EXPECT_FALSE(validateOrder(good, {0, 2, 1, 4, 3}, error));
  EXPECT_NE(error.find("before"), std::string::npos) << error;
  EXPECT_FALSE(validateOrder(good, {0, 1, 1, 3, 4}, error));
  EXPECT_FALSE(validateOrder(good, {0, 1, 2, 3}, error));
  EXPECT_TRUE(validateOrder(good, {0, 2, 1, 3, 4}, error)) << error;
}

} // namespace
