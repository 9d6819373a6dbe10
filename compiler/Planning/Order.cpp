//===- Order.cpp - Execution orders for the memory planner ----------------===//
//
// MinMemory: a topological order with a low peak of live intermediate bytes
// (the memory plan's lower bound). Finding the best order is NP-hard; this
// builds candidate orders with list-scheduling heuristics (the order given,
// least growth of live bytes, least live bytes in the step, and a
// depth-first variant that finishes the consumers of the last output
// first), keeps the one with the lowest peak, then improves it by moving
// single nodes within their dependency window while the peak (then the sum
// of live bytes over steps) falls, within a budget of order evaluations;
// only moves across the step at the peak are tried, as no other move can
// lower it.
//
// MaxConcurrency: the nodes sorted by dependency level, ASAP (longest path
// from a source) or ALAP (longest path to a sink), whichever gives the
// lower group-level peak.
//
//===----------------------------------------------------------------------===//

#include "compiler/Planning/Analysis.h"
#include "compiler/Planning/Planning.h"

#include <algorithm>
#include <numeric>

namespace cgc::planning {

using namespace detail;

namespace {

/// The graph's dependency structure and sizes, precomputed once.
struct OrderContext {
  const Graph &graph;
  uint64_t alignment;
  bool allowInPlace;
  size_t N, T;
  std::vector<std::vector<int32_t>> inputs; // distinct inputs per node
  std::vector<std::vector<int32_t>> preds, succs;
  std::vector<int32_t> producer;
  std::vector<uint64_t> size; // aligned; 0 for non-intermediates
  std::vector<int32_t> readers; // distinct reader nodes per tensor

  // Scratch for evaluate(), and the first step at the peak it found.
  std::vector<int32_t> produced, lastRead;
  int32_t peakStep = 0;
  std::vector<char> taken, inPlaceB;
  std::vector<int64_t> delta;

  OrderContext(const Graph &graph, uint64_t alignment, bool allowInPlace)
      : graph(graph), alignment(std::max<uint64_t>(alignment, 1)),
        allowInPlace(allowInPlace), N(graph.nodes.size()),
        T(graph.tensors.size()) {
    inputs.resize(N);
    preds.resize(N);
    succs.resize(N);
    producer.assign(T, -1);
    size.assign(T, 0);
    readers.assign(T, 0);
    for (size_t t = 0; t < T; ++t)
      if (graph.tensors[t].kind == BufferKind::Scratch)
        size[t] = alignUp(graph.tensors[t].bytes, this->alignment);
    for (size_t n = 0; n < N; ++n)
      for (int32_t t : graph.nodes[n].outputs)
        producer[t] = int32_t(n);
    for (size_t n = 0; n < N; ++n) {
      for (int32_t t : graph.nodes[n].inputs) {
        if (std::find(inputs[n].begin(), inputs[n].end(), t) !=
            inputs[n].end())
          continue;
        inputs[n].push_back(t);
        ++readers[t];
        int32_t p = producer[t];
        if (p >= 0 && std::find(preds[n].begin(), preds[n].end(), p) ==
                          preds[n].end()) {
          preds[n].push_back(p);
          succs[p].push_back(int32_t(n));
        }
      }
    }
    produced.resize(T);
    lastRead.resize(T);
    taken.resize(T);
    inPlaceB.resize(T);
  }

  /// Peak and sum over steps of live intermediate bytes for a MinMemory
  /// order, with the in-place pairs planMemory would take.
  std::pair<uint64_t, uint64_t> evaluate(const std::vector<int32_t> &order) {
    std::fill(produced.begin(), produced.end(), -1);
    std::fill(lastRead.begin(), lastRead.end(), -1);
    for (size_t s = 0; s < order.size(); ++s) {
      int32_t v = order[s];
      for (int32_t t : inputs[v])
        lastRead[t] = int32_t(s);
      for (int32_t t : graph.nodes[v].outputs)
        produced[t] = int32_t(s);
    }
    std::fill(taken.begin(), taken.end(), 0);
    std::fill(inPlaceB.begin(), inPlaceB.end(), 0);
    if (allowInPlace) {
      for (size_t s = 0; s < order.size(); ++s) {
        const Node &node = graph.nodes[order[s]];
        if (node.inPlaceOf.size() != node.outputs.size())
          continue;
        for (size_t k = 0; k < node.outputs.size(); ++k) {
          int32_t a = node.inPlaceOf[k], b = node.outputs[k];
          if (a < 0 || taken[a] || inPlaceB[b] || size[a] == 0 ||
              size[a] != size[b] || lastRead[a] != int32_t(s) ||
              graph.tensors[b].kind != BufferKind::Scratch)
            continue;
          taken[a] = 1;
          inPlaceB[b] = 1;
        }
      }
    }
    delta.assign(order.size() + 1, 0);
    for (size_t t = 0; t < T; ++t) {
      if (size[t] == 0 || produced[t] < 0)
        continue;
      int32_t first = produced[t], last = std::max(first, lastRead[t]);
      delta[first] += int64_t(size[t]);
      delta[last + 1] -= int64_t(size[t]);
      if (inPlaceB[t]) {
        delta[first] -= int64_t(size[t]);
        delta[first + 1] += int64_t(size[t]);
      }
    }
    uint64_t peak = 0, area = 0;
    int64_t running = 0;
    peakStep = 0;
    for (size_t s = 0; s < order.size(); ++s) {
      running += delta[s];
      if (uint64_t(running) > peak) {
        peak = uint64_t(running);
        peakStep = int32_t(s);
      }
      area += uint64_t(running);
    }
    return {peak, area};
  }

  enum class Rule { LeastGrowth, LeastStepPeak, DepthFirst };

  /// List scheduling: repeatedly runs the ready node the rule prefers.
  std::vector<int32_t> listSchedule(Rule rule) {
    std::vector<int32_t> pending(N), left(readers), order;
    std::vector<char> ready(N, 0), takenLocal(T, 0);
    for (size_t n = 0; n < N; ++n) {
      pending[n] = int32_t(preds[n].size());
      ready[n] = pending[n] == 0;
    }
    int64_t live = 0;
    int32_t last = -1;
    order.reserve(N);
    std::vector<int32_t> dying;
    for (size_t step = 0; step < N; ++step) {
      int32_t best = -1;
      int64_t bestGrowth = 0, bestPeak = 0;
      bool bestAffine = false;
      for (size_t v = 0; v < N; ++v) {
        if (!ready[v])
          continue;
        int64_t alloc = 0, freed = 0;
        dying.clear();
        for (int32_t a : inputs[v])
          if (size[a] && left[a] == 1) {
            dying.push_back(a);
            freed += int64_t(size[a]);
          }
        const Node &node = graph.nodes[v];
        bool hasInPlace =
            allowInPlace && node.inPlaceOf.size() == node.outputs.size();
        for (size_t k = 0; k < node.outputs.size(); ++k) {
          int32_t b = node.outputs[k];
          if (!size[b])
            continue;
          int32_t a = hasInPlace ? node.inPlaceOf[k] : -1;
          auto it = a >= 0 ? std::find(dying.begin(), dying.end(), a)
                           : dying.end();
          if (it != dying.end() && size[a] == size[b]) {
            freed -= int64_t(size[a]);
            dying.erase(it);
            if (readers[b] == 0)
              freed += int64_t(size[b]);
            continue;
          }
          alloc += int64_t(size[b]);
          if (readers[b] == 0)
            freed += int64_t(size[b]);
        }
        int64_t growth = alloc - freed, peak = live + alloc;
        bool affine = false;
        if (rule == Rule::DepthFirst && last >= 0)
          for (int32_t p : preds[v])
            if (p == last)
              affine = true;
        bool better;
        if (best < 0) {
          better = true;
        } else if (rule == Rule::DepthFirst && affine != bestAffine) {
          better = affine;
        } else if (rule == Rule::LeastStepPeak) {
          better = peak < bestPeak || (peak == bestPeak && growth < bestGrowth);
        } else {
          better = growth < bestGrowth ||
                   (growth == bestGrowth && peak < bestPeak);
        }
        if (better) {
          best = int32_t(v);
          bestGrowth = growth;
          bestPeak = peak;
          bestAffine = affine;
        }
      }
      order.push_back(best);
      ready[best] = 0;
      live += bestGrowth;
      last = best;
      for (int32_t a : inputs[best])
        --left[a];
      for (int32_t s : succs[best])
        if (--pending[s] == 0)
          ready[s] = 1;
    }
    return order;
  }

  /// Moves single nodes within their dependency window while the
  /// (peak, area) pair falls, spending at most `budget` evaluations. Only
  /// moves across the first step at the peak can lower the live bytes
  /// there, so those are the ones tried: a node from just before the peak
  /// step to after it, or from after to before.
  void improve(std::vector<int32_t> &order, std::pair<uint64_t, uint64_t> &score,
               uint64_t budget) {
    constexpr int32_t kWindow = 12;
    std::vector<int32_t> pos(N), moved;
    uint64_t spent = 0;
    evaluate(order);
    int32_t peak = peakStep;
    bool improved = true;
    while (improved && spent < budget) {
      improved = false;
      for (size_t s = 0; s < N; ++s)
        pos[order[s]] = int32_t(s);
      int32_t first = std::max(0, peak - kWindow);
      int32_t last = std::min(int32_t(N) - 1, peak + kWindow);
      for (int32_t i = first; i <= last && !improved && spent < budget; ++i) {
        int32_t v = order[i];
        int32_t lo = 0, hi = int32_t(N) - 1;
        for (int32_t p : preds[v])
          lo = std::max(lo, pos[p] + 1);
        for (int32_t s : succs[v])
          hi = std::min(hi, pos[s] - 1);
        lo = std::max(lo, i - kWindow);
        hi = std::min(hi, i + kWindow);
        // Across the peak: i <= peak < j, or j <= peak < i.
        if (i <= peak)
          lo = std::max(lo, peak + 1);
        else
          hi = std::min(hi, peak);
        for (int32_t j = lo; j <= hi && spent < budget; ++j) {
          moved = order;
          if (j < i)
            std::rotate(moved.begin() + j, moved.begin() + i,
                        moved.begin() + i + 1);
          else
            std::rotate(moved.begin() + i, moved.begin() + i + 1,
                        moved.begin() + j + 1);
          auto candidate = evaluate(moved);
          ++spent;
          if (candidate < score) {
            order.swap(moved);
            score = candidate;
            peak = peakStep;
            improved = true;
            break;
          }
        }
      }
    }
  }
};

uint64_t groupPeak(const Graph &graph, const std::vector<int32_t> &order,
                   const MemoryPlanOptions &options) {
  uint64_t alignment = std::max<uint64_t>(options.alignment, 1);
  Liveness live = analyze(graph, order, alignment, options.allowInPlace,
                          ScheduleMode::MaxConcurrency);
  std::vector<int32_t> itemOf;
  return packLowerBound(placementItems(graph, live, alignment, itemOf));
}

std::vector<int32_t> byLevel(const std::vector<int32_t> &level) {
  std::vector<int32_t> order(level.size());
  std::iota(order.begin(), order.end(), 0);
  detail::sortIndices(order, [&](int32_t a, int32_t b) { return level[a] < level[b]; });
  return order;
}

} // namespace

std::vector<int32_t> orderNodes(const Graph &graph, ScheduleMode mode) {
  return orderNodes(graph, mode, MemoryPlanOptions());
}

std::vector<int32_t> orderNodes(const Graph &graph, ScheduleMode mode,
                                const MemoryPlanOptions &options) {
  size_t N = graph.nodes.size();
  if (mode == ScheduleMode::MaxConcurrency) {
    std::vector<int32_t> asap = dependencyLevels(graph);
    // ALAP: depth minus the longest path to a sink.
    OrderContext ctx(graph, options.alignment, options.allowInPlace);
    std::vector<int32_t> height(N, 0);
    for (size_t n = N; n-- > 0;)
      for (int32_t s : ctx.succs[n])
        height[n] = std::max(height[n], height[s] + 1);
    int32_t depth = 0;
    for (int32_t l : asap)
      depth = std::max(depth, l);
    std::vector<int32_t> alap(N);
    for (size_t n = 0; n < N; ++n)
      alap[n] = depth - height[n];
    std::vector<int32_t> early = byLevel(asap), late = byLevel(alap);
    if (groupPeak(graph, late, options) < groupPeak(graph, early, options))
      return late;
    return early;
  }

  OrderContext ctx(graph, options.alignment, options.allowInPlace);
  std::vector<int32_t> given(N);
  std::iota(given.begin(), given.end(), 0);
  std::vector<int32_t> best = given;
  auto bestScore = ctx.evaluate(given);
  for (auto rule : {OrderContext::Rule::LeastGrowth,
                    OrderContext::Rule::LeastStepPeak,
                    OrderContext::Rule::DepthFirst}) {
    std::vector<int32_t> order = ctx.listSchedule(rule);
    auto score = ctx.evaluate(order);
    if (score < bestScore) {
      best = std::move(order);
      bestScore = score;
    }
  }
  ctx.improve(best, bestScore, options.orderBudget);
  return best;
}

} // namespace cgc::planning
