//===- PlanningBench.cpp - Memory planner benchmark -----------------------===//
//
// Prints, for every synthetic model-zoo graph, the time to order and plan it
// and its footprint against the lower bound and the naive sum, in both
// schedule modes, with the barrier count; then the same over random graphs.
//
//   cgc-planning-bench [--random N] [--max-nodes M] [--seed S]
//                      [--reps R] [--budget B] [--alignment A]
//                      [--report-dir DIR]
//
// --report-dir writes a text, SVG and HTML memory report per zoo graph.
//
//===----------------------------------------------------------------------===//

#include "compiler/Planning/Planning.h"
#include "compiler/Planning/SyntheticGraphs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace cgc::planning;

namespace {

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

struct Timed {
  std::vector<int32_t> order;
  MemoryPlan plan;
  double orderMs = 0, planMs = 0;
};

/// Orders and plans `reps` times; keeps the median times.
Timed run(const Graph &graph, const MemoryPlanOptions &options, int reps) {
  Timed out;
  std::vector<double> orderTimes, planTimes;
  for (int r = 0; r < reps; ++r) {
    double t0 = nowMs();
    std::vector<int32_t> order = orderNodes(graph, options.mode, options);
    double t1 = nowMs();
    MemoryPlan plan = planMemory(graph, order, options);
    double t2 = nowMs();
    orderTimes.push_back(t1 - t0);
    planTimes.push_back(t2 - t1);
    out.order = std::move(order);
    out.plan = std::move(plan);
  }
  std::sort(orderTimes.begin(), orderTimes.end());
  std::sort(planTimes.begin(), planTimes.end());
  out.orderMs = orderTimes[orderTimes.size() / 2];
  out.planMs = planTimes[planTimes.size() / 2];
  return out;
}

/// The baseline most runtimes use (TensorFlow Lite's greedy-by-size): the
/// same lifetimes and in-place pairs as `plan`, tensors by decreasing size,
/// each in the smallest gap that fits among the tensors live with it, else
/// on top. Returns its footprint.
uint64_t baselineGreedyBestFit(const Graph &graph, const MemoryPlan &plan) {
  struct Item {
    int32_t first, last;
    uint64_t size, offset;
  };
  std::vector<Item> items;
  std::vector<int32_t> itemOf(graph.tensors.size(), -1);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (plan.offsets[t] == UINT64_MAX)
      continue;
    int32_t root = int32_t(t);
    while (plan.inPlaceOf[root] >= 0)
      root = plan.inPlaceOf[root];
    int32_t first = plan.stepGroup[plan.firstStep[t]];
    int32_t last = plan.stepGroup[plan.lastStep[t]];
    uint64_t size = alignUp(graph.tensors[t].bytes, plan.alignment);
    if (itemOf[root] < 0) {
      itemOf[root] = int32_t(items.size());
      items.push_back({first, last, size, 0});
    }
    Item &it = items[itemOf[root]];
    it.first = std::min(it.first, first);
    it.last = std::max(it.last, last);
    it.size = std::max(it.size, size);
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].size != items[b].size ? items[a].size > items[b].size
                                          : a < b;
  });
  std::vector<size_t> placed;
  uint64_t footprint = 0;
  for (size_t i : order) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed)
      if (items[j].first <= items[i].last && items[i].first <= items[j].last)
        busy.push_back({items[j].offset, items[j].offset + items[j].size});
    std::sort(busy.begin(), busy.end());
    uint64_t cursor = 0, best = UINT64_MAX, bestGap = UINT64_MAX;
    for (auto &b : busy) {
      if (b.first > cursor && b.first - cursor >= items[i].size &&
          b.first - cursor < bestGap) {
        bestGap = b.first - cursor;
        best = cursor;
      }
      cursor = std::max(cursor, b.second);
    }
    items[i].offset = best == UINT64_MAX ? cursor : best;
    footprint = std::max(footprint, items[i].offset + items[i].size);
    placed.push_back(i);
  }
  return footprint;
}

std::string sanitize(std::string s) {
  for (char &c : s)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      c = '_';
  return s;
}

} // namespace

int main(int argc, char **argv) {
  int randomCount = 1000, maxNodes = 120, reps = 5;
  uint64_t seed = 1;
  MemoryPlanOptions base;
  std::string reportDir;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char *flag) -> const char * {
      if (std::strcmp(argv[i], flag) != 0 || i + 1 >= argc)
        return nullptr;
      return argv[++i];
    };
    if (const char *v = value("--random"))
      randomCount = std::atoi(v);
    else if (const char *v = value("--max-nodes"))
      maxNodes = std::atoi(v);
    else if (const char *v = value("--seed"))
      seed = std::strtoull(v, nullptr, 10);
    else if (const char *v = value("--reps"))
      reps = std::max(1, std::atoi(v));
    else if (const char *v = value("--budget"))
      base.searchBudget = std::strtoull(v, nullptr, 10);
    else if (const char *v = value("--alignment"))
      base.alignment = std::strtoull(v, nullptr, 10);
    else if (const char *v = value("--report-dir"))
      reportDir = v;
    else {
      std::fprintf(stderr,
                   "usage: %s [--random N] [--max-nodes M] [--seed S] "
                   "[--reps R] [--budget B] [--alignment A] "
                   "[--report-dir DIR]\n",
                   argv[0]);
      return 2;
    }
  }

  bool ok = true;
  std::printf("Synthetic model zoo (fp32, batch 1), alignment %llu, search "
              "budget %llu, median of %d runs\n",
              (unsigned long long)base.alignment,
              (unsigned long long)base.searchBudget, reps);
  std::printf("%-28s %-15s %5s %6s %12s %12s %12s %8s %8s %8s %8s %8s %6s "
              "%6s  %s\n",
              "graph", "mode", "nodes", "tensors", "footprint", "lower bound",
              "naive", "fp/lb", "fp/naive", "tflite/lb", "order ms",
              "plan ms", "groups", "barrs", "placed by");
  for (const auto &entry : synthetic::modelZoo()) {
    std::string error;
    if (!validateGraph(entry.graph, error)) {
      std::printf("%s: invalid graph: %s\n", entry.name.c_str(),
                  error.c_str());
      ok = false;
      continue;
    }
    for (ScheduleMode mode :
         {ScheduleMode::MinMemory, ScheduleMode::MaxConcurrency}) {
      MemoryPlanOptions options = base;
      options.mode = mode;
      Timed t = run(entry.graph, options, reps);
      if (!verifyMemoryPlan(entry.graph, t.plan, error)) {
        std::printf("%s: invalid plan: %s\n", entry.name.c_str(),
                    error.c_str());
        ok = false;
      }
      auto accesses = dispatchAccesses(entry.graph, t.plan);
      BarrierSchedule barriers = scheduleBarriers(accesses);
      size_t tensors = 0;
      for (uint64_t o : t.plan.offsets)
        tensors += o != UINT64_MAX;
      std::printf("%-28s %-15s %5zu %6zu %12llu %12llu %12llu %8.4f %8.4f "
                  "%8.4f %8.3f %8.3f %6d %6u  %s\n",
                  entry.name.c_str(), scheduleModeName(mode),
                  entry.graph.nodes.size(), tensors,
                  (unsigned long long)t.plan.footprint,
                  (unsigned long long)t.plan.lowerBound,
                  (unsigned long long)t.plan.naiveSum,
                  double(t.plan.footprint) / double(t.plan.lowerBound),
                  double(t.plan.footprint) / double(t.plan.naiveSum),
                  double(baselineGreedyBestFit(entry.graph, t.plan)) /
                      double(t.plan.lowerBound),
                  t.orderMs, t.planMs,
                  t.plan.stepGroup.empty() ? 0 : t.plan.stepGroup.back() + 1,
                  barriers.barrierCount, t.plan.strategy.c_str());
      if (!reportDir.empty()) {
        std::string stem = reportDir + "/" + sanitize(entry.name) + "." +
                           scheduleModeName(mode);
        std::ofstream(stem + ".txt")
            << renderMemoryReportText(entry.graph, t.plan);
        std::ofstream(stem + ".svg")
            << renderMemoryReportSVG(entry.graph, t.plan);
        std::ofstream(stem + ".html") << renderMemoryReportHTML(
            entry.graph, t.plan, entry.name + " (" + scheduleModeName(mode) +
                                     ")");
      }
    }
  }

  if (randomCount > 0) {
    std::printf("\nRandom graphs: %d graphs of 2-%d nodes from seed %llu\n",
                randomCount, maxNodes, (unsigned long long)seed);
    synthetic::RandomGraphOptions ro;
    ro.maxNodes = maxNodes;
    for (ScheduleMode mode :
         {ScheduleMode::MinMemory, ScheduleMode::MaxConcurrency}) {
      double sumRatio = 0, maxRatio = 0, sumNaive = 0, sumMs = 0, maxMs = 0;
      double sumBase = 0, maxBase = 0;
      int atBound = 0, baseAtBound = 0;
      for (int i = 0; i < randomCount; ++i) {
        Graph graph = synthetic::randomGraph(seed + uint64_t(i), ro);
        MemoryPlanOptions options = base;
        options.mode = mode;
        Timed t = run(graph, options, 1);
        std::string error;
        if (!verifyMemoryPlan(graph, t.plan, error)) {
          std::printf("random graph %d: invalid plan: %s\n", i,
                      error.c_str());
          ok = false;
        }
        double r = t.plan.lowerBound
                       ? double(t.plan.footprint) / double(t.plan.lowerBound)
                       : 1.0;
        sumRatio += r;
        maxRatio = std::max(maxRatio, r);
        sumNaive += t.plan.naiveSum
                        ? double(t.plan.footprint) / double(t.plan.naiveSum)
                        : 1.0;
        atBound += t.plan.footprint == t.plan.lowerBound;
        uint64_t base = baselineGreedyBestFit(graph, t.plan);
        double rb = t.plan.lowerBound
                        ? double(base) / double(t.plan.lowerBound)
                        : 1.0;
        sumBase += rb;
        maxBase = std::max(maxBase, rb);
        baseAtBound += base == t.plan.lowerBound;
        double ms = t.orderMs + t.planMs;
        sumMs += ms;
        maxMs = std::max(maxMs, ms);
      }
      std::printf("%-15s footprint/lower bound mean %.4f max %.4f; at the "
                  "bound %d/%d; footprint/naive mean %.4f; order+plan ms "
                  "mean %.3f max %.3f\n",
                  scheduleModeName(mode), sumRatio / randomCount, maxRatio,
                  atBound, randomCount, sumNaive / randomCount,
                  sumMs / randomCount, maxMs);
      std::printf("%-15s baseline greedy-by-size best fit: footprint/lower "
                  "bound mean %.4f max %.4f; at the bound %d/%d\n",
                  "", sumBase / randomCount, maxBase, baseAtBound,
                  randomCount);
    }
  }
  return ok ? 0 : 1;
}
