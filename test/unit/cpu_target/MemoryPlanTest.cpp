//===- MemoryPlanTest.cpp - The CPU driver's per-run memory ---------===//
//
// planning::planTemporaries (planning/temporaries.h) on random block
// sets, checked here independently of the planner's own verifier; random
// kernel programs (elementwise layers and fused matrix products) compiled
// by the driver, whose temporaries must never share bytes while live at the
// same step and whose results must match a naive evaluation that gives
// every value its own memory, run after run and from several threads.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <thread>

namespace cgc::test {
namespace {

using MemoryBlock = planning::TemporaryBlock;
using MemoryPlan = planning::TemporaryPlan;

/// Checks `plan` for `blocks` without the planner's code: offsets aligned,
/// inside the footprint, apart while live together; the footprint between
/// the lower bound (computed here) and the blocks laid one after another.
void expectValidPlan(const std::vector<MemoryBlock> &blocks, const MemoryPlan &plan,
                     const std::string &what) {
  ASSERT_EQ(plan.offsets.size(), blocks.size()) << what;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  uint64_t sequential = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const MemoryBlock &b = blocks[i];
    if (b.bytes == 0 || b.first > b.last)
      continue;
    lo = std::min(lo, b.first);
    hi = std::max(hi, b.last);
    sequential = (sequential + b.alignment - 1) / b.alignment * b.alignment + b.bytes;
    EXPECT_EQ(plan.offsets[i] % b.alignment, 0u) << what << ": block " << i;
    EXPECT_LE(plan.offsets[i] + b.bytes, plan.bytes) << what << ": block " << i;
    for (size_t j = 0; j < i; ++j) {
      const MemoryBlock &c = blocks[j];
      if (c.bytes == 0 || c.first > c.last || c.last < b.first || b.last < c.first)
        continue;
      bool apart = plan.offsets[i] + b.bytes <= plan.offsets[j] ||
                   plan.offsets[j] + c.bytes <= plan.offsets[i];
      EXPECT_TRUE(apart) << what << ": blocks " << j << " and " << i << " share bytes";
    }
  }
  uint64_t lowerBound = 0;
  for (int64_t step = lo; step <= hi; ++step) {
    uint64_t live = 0;
    for (const MemoryBlock &b : blocks)
      if (b.bytes && b.first <= step && step <= b.last)
        live += b.bytes;
    lowerBound = std::max(lowerBound, live);
  }
  EXPECT_EQ(plan.lowerBound, lowerBound) << what;
  EXPECT_EQ(plan.unplannedBytes, sequential) << what;
  EXPECT_GE(plan.bytes, lowerBound) << what;
  EXPECT_LE(plan.bytes, sequential) << what;
}

TEST(CpuMemoryPlan, RandomBlocksNeverShareBytesWhileLiveTogether) {
  std::mt19937_64 rng(7);
  uint64_t planned = 0, unplanned = 0, bound = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    size_t n = 1 + rng() % 60;
    int64_t steps = 1 + int64_t(rng() % 40);
    std::vector<MemoryBlock> blocks(n);
    for (MemoryBlock &b : blocks) {
      // Sizes from tiny to large, some empty; alignments up to a page.
      static const uint64_t aligns[] = {1, 4, 64, 64, 64, 128, 256, 4096};
      b.alignment = aligns[rng() % 8];
      b.bytes = rng() % 10 == 0 ? 0 : 1 + rng() % (rng() % 2 ? 300 : 200000);
      b.first = int64_t(rng() % uint64_t(steps));
      b.last = b.first + int64_t(rng() % uint64_t(rng() % 3 == 0 ? steps : 4));
      if (rng() % 15 == 0)
        b.last = b.first - 1; // never touched
    }
    MemoryPlan plan = planning::planTemporaries(blocks);
    std::string what = "trial " + std::to_string(trial);
    expectValidPlan(blocks, plan, what);
    std::string error;
    EXPECT_TRUE(planning::verifyTemporaryPlan(blocks, plan, error)) << what << ": " << error;
    planned += plan.bytes;
    unplanned += plan.unplannedBytes;
    bound += plan.lowerBound;
    if (HasFailure())
      return;
  }
  // Reuse is real: far below the blocks laid one after another, near the
  // bound.
  EXPECT_LT(double(planned), 0.6 * double(unplanned));
  EXPECT_LT(double(planned), 1.25 * double(bound));
}

TEST(CpuMemoryPlan, SmallCases) {
  // A chain, each block live from its producer to its one reader: two
  // blocks' worth, whatever the length.
  std::vector<MemoryBlock> chain;
  for (int i = 0; i < 20; ++i)
    chain.push_back({4096, 64, i, i + 1});
  MemoryPlan plan = planning::planTemporaries(chain);
  expectValidPlan(chain, plan, "chain");
  EXPECT_EQ(plan.bytes, 2u * 4096);
  EXPECT_EQ(plan.unplannedBytes, 20u * 4096);
  // Disjoint lifetimes share offset 0.
  std::vector<MemoryBlock> disjoint = {{100, 64, 0, 0}, {300, 64, 1, 1}, {200, 64, 2, 5}};
  plan = planning::planTemporaries(disjoint);
  expectValidPlan(disjoint, plan, "disjoint");
  EXPECT_EQ(plan.bytes, 300u);
  // Alignment beyond 64 is kept: the second block may not start at 100.
  std::vector<MemoryBlock> aligned = {{100, 64, 0, 1}, {64, 4096, 1, 2}};
  plan = planning::planTemporaries(aligned);
  expectValidPlan(aligned, plan, "aligned");
  EXPECT_EQ(plan.offsets[1] % 4096, 0u);
  // Nothing to place.
  plan = planning::planTemporaries({{0, 64, 0, 3}, {128, 64, 2, 1}});
  EXPECT_EQ(plan.bytes, 0u);
  EXPECT_EQ(plan.lowerBound, 0u);
}

TEST(CpuMemoryPlan, VerifyRejectsBadPlans) {
  std::vector<MemoryBlock> blocks = {{128, 64, 0, 2}, {128, 64, 2, 3}, {128, 64, 4, 4}};
  MemoryPlan plan;
  plan.offsets = {0, 128, 0};
  plan.bytes = 256;
  std::string error;
  EXPECT_TRUE(planning::verifyTemporaryPlan(blocks, plan, error)) << error;
  plan.offsets = {0, 64, 0}; // live together at step 2, overlapping
  EXPECT_FALSE(planning::verifyTemporaryPlan(blocks, plan, error));
  EXPECT_NE(error.find("share bytes"), std::string::npos) << error;
  plan.offsets = {0, 160, 0}; // apart, but not aligned
  plan.bytes = 320;
  EXPECT_FALSE(planning::verifyTemporaryPlan(blocks, plan, error));
  EXPECT_NE(error.find("not aligned"), std::string::npos) << error;
  plan.offsets = {0, 128, 0};
  plan.bytes = 200; // block 1 ends past it
  EXPECT_FALSE(planning::verifyTemporaryPlan(blocks, plan, error));
  EXPECT_NE(error.find("past the footprint"), std::string::npos) << error;
}

TEST(CpuRunMemory, BlocksAreReusedAndReplacedWhenTooSmall) {
  cpu::RunMemory memory;
  cpu::RunMemory::Block a = memory.acquire(100), b = memory.acquire(200);
  ASSERT_TRUE(a.data && b.data);
  EXPECT_NE(a.data, b.data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 64, 0u);
  std::fill(a.data, a.data + 100, 1);
  std::fill(b.data, b.data + 200, 2);
  EXPECT_EQ(memory.heldBlocks(), 2u);
  EXPECT_EQ(memory.heldBytes(), 300u);
  memory.release(a);
  memory.release(b);
  // The smallest free block that holds the request.
  cpu::RunMemory::Block c = memory.acquire(150);
  EXPECT_EQ(c.data, b.data);
  cpu::RunMemory::Block d = memory.acquire(50);
  EXPECT_EQ(d.data, a.data);
  memory.release(c);
  memory.release(d);
  // Too large for every free block: they make room for one that fits.
  cpu::RunMemory::Block e = memory.acquire(1 << 20);
  EXPECT_EQ(memory.heldBlocks(), 1u);
  EXPECT_EQ(memory.heldBytes(), uint64_t(1) << 20);
  std::fill(e.data, e.data + (1 << 20), 3);
  memory.release(e);
  EXPECT_EQ(memory.acquire(10).data, e.data);
}

//===----------------------------------------------------------------------===//
// Random programs through the driver
//===----------------------------------------------------------------------===//

/// A random program over float32 [8, c] values: elementwise layers and
/// matrix products ([8, 8] x [8, c]), each result a new temporary (random
/// alignment), some products followed at once by an epilogue only it reads
/// (the driver fuses those). Each width has an input binding and an output
/// binding written at the end; bindings 0.. are inputs, then outputs.
struct RandomProgram {
  KernelProgram program;
  std::vector<int64_t> widths;
  size_t inputs = 0;
};

KernelOperand value(KernelOperand::Storage storage, uint32_t index, int64_t width) {
  return f32(storage, index, {8, width});
}

RandomProgram randomProgram(std::mt19937_64 &rng) {
  using S = KernelOperand::Storage;
  RandomProgram r;
  std::vector<int64_t> all = {8, 16, 40, 100, 256};
  std::shuffle(all.begin(), all.end(), rng);
  r.widths.assign(all.begin(), all.begin() + 2 + rng() % 3);
  if (std::find(r.widths.begin(), r.widths.end(), 8) == r.widths.end())
    r.widths.push_back(8); // products need [8, 8] operands
  KernelProgram &p = r.program;
  std::map<int64_t, std::vector<KernelOperand>> pool;
  for (int64_t w : r.widths) {
    p.bindings.push_back({"in" + std::to_string(w), uint64_t(8 * w * 4)});
    pool[w].push_back(value(S::Binding, uint32_t(p.bindings.size() - 1), w));
  }
  r.inputs = p.bindings.size();
  auto pick = [&](int64_t w) {
    // Mostly recent values, so lifetimes are short and varied.
    auto &v = pool[w];
    size_t back = rng() % 4 == 0 ? rng() % v.size() : std::min<size_t>(v.size() - 1, rng() % 3);
    return v[v.size() - 1 - back];
  };
  auto temporary = [&](int64_t w) {
    static const uint64_t aligns[] = {64, 64, 128, 256, 4096};
    p.temporaries.push_back({uint64_t(8 * w * 4), aligns[rng() % 5]});
    return value(S::Temporary, uint32_t(p.temporaries.size() - 1), w);
  };
  static const char *unary[] = {"cgc_op.relu", "cgc_op.neg", "cgc_op.abs"};
  static const char *binary[] = {"cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.max"};
  size_t layers = 5 + rng() % 40;
  for (size_t l = 0; l < layers; ++l) {
    int64_t w = r.widths[rng() % r.widths.size()];
    unsigned kind = rng() % 10;
    if (kind < 3) {
      KernelOperand out = temporary(w);
      p.kernels.push_back(layer("cgc_op.matmul", {pick(8), pick(w)}, out));
      // An epilogue chain only the product's result feeds.
      size_t chain = rng() % 3;
      for (size_t c = 0; c < chain; ++c) {
        KernelOperand next = temporary(w);
        if (rng() % 2)
          p.kernels.push_back(layer(unary[rng() % 3], {out}, next));
        else
          p.kernels.push_back(layer(binary[rng() % 4], {out, pick(w)}, next));
        out = next;
      }
      pool[w].push_back(out);
    } else if (kind < 6) {
      KernelOperand out = temporary(w);
      p.kernels.push_back(layer(unary[rng() % 3], {pick(w)}, out));
      pool[w].push_back(out);
    } else {
      KernelOperand out = temporary(w);
      p.kernels.push_back(layer(binary[rng() % 4], {pick(w), pick(w)}, out));
      pool[w].push_back(out);
    }
  }
  for (int64_t w : r.widths) {
    p.bindings.push_back({"out" + std::to_string(w), uint64_t(8 * w * 4)});
    p.kernels.push_back(layer("cgc_op.add", {pool[w].back(), pick(w)},
                              value(S::Binding, uint32_t(p.bindings.size() - 1), w)));
  }
  return r;
}

/// Evaluates `program` with every binding and temporary in memory of its own.
void evaluateNaively(const KernelProgram &program, std::vector<std::vector<float>> &bindings) {
  std::vector<std::vector<float>> temporaries;
  for (const auto &t : program.temporaries)
    temporaries.emplace_back(t.bytes / 4);
  auto data = [&](const KernelOperand &o) -> float * {
    return o.storage == KernelOperand::Storage::Binding ? bindings[o.index].data()
                                                        : temporaries[o.index].data();
  };
  for (const KernelDesc &k : program.kernels) {
    const KernelOperand &out = k.outputs[0];
    int64_t n = out.numElements(), w = out.shape[1];
    float *y = data(out);
    const float *a = data(*k.inputs[0]);
    const float *b = k.inputs.size() > 1 ? data(*k.inputs[1]) : nullptr;
    std::vector<float> result(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (k.op == "cgc_op.matmul") {
        int64_t row = i / w, col = i % w;
        double acc = 0;
        for (int64_t x = 0; x < 8; ++x)
          acc += double(a[row * 8 + x]) * b[x * w + col];
        result[size_t(i)] = float(acc);
      } else if (k.op == "cgc_op.relu") {
        result[size_t(i)] = std::max(a[i], 0.0f);
      } else if (k.op == "cgc_op.neg") {
        result[size_t(i)] = -a[i];
      } else if (k.op == "cgc_op.abs") {
        result[size_t(i)] = std::fabs(a[i]);
      } else if (k.op == "cgc_op.add") {
        result[size_t(i)] = a[i] + b[i];
      } else if (k.op == "cgc_op.sub") {
        result[size_t(i)] = a[i] - b[i];
      } else if (k.op == "cgc_op.mul") {
        result[size_t(i)] = a[i] * b[i];
      } else if (k.op == "cgc_op.max") {
        result[size_t(i)] = std::max(a[i], b[i]);
      } else {
        ADD_FAILURE() << "no naive " << k.op;
      }
    }
    std::copy(result.begin(), result.end(), y);
  }
}

/// Steps of `compiled` at which each temporary is read or written, from the
/// steps' own operands.
std::vector<std::pair<int64_t, int64_t>> lifetimes(const cpu::CompiledProgram &compiled) {
  std::vector<std::pair<int64_t, int64_t>> live(compiled.program().temporaries.size(),
                                                {INT64_MAX, -1});
  const auto &steps = compiled.steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    auto touch = [&](const KernelOperand &o) {
      if (o.storage != KernelOperand::Storage::Temporary)
        return;
      live[o.index].first = std::min(live[o.index].first, int64_t(s));
      live[o.index].second = std::max(live[o.index].second, int64_t(s));
    };
    for (const auto &in : steps[s].inputs)
      if (in)
        touch(*in);
    for (const auto &out : steps[s].outputs)
      touch(out);
  }
  return live;
}

void expectClose(const std::vector<std::vector<float>> &got,
                 const std::vector<std::vector<float>> &expected, size_t from,
                 const std::string &what) {
  for (size_t b = from; b < expected.size(); ++b)
    for (size_t i = 0; i < expected[b].size(); ++i) {
      float e = expected[b][i];
      ASSERT_NEAR(got[b][i], e, 1e-4f * (1.0f + std::fabs(e))) << what << ": binding " << b
                                                               << " element " << i;
    }
}

TEST(CpuMemoryPlan, RandomProgramsKeepLiveTemporariesApartAndComputeTheSame) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  std::mt19937_64 rng(11);
  cpu::ThreadPool pool(2);
  uint64_t planned = 0, unplanned = 0;
  size_t fused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    RandomProgram r = randomProgram(rng);
    std::string what = "program " + std::to_string(trial);
    std::string error;
    auto compiled = cpu::CompiledProgram::create(r.program, error);
    ASSERT_TRUE(compiled) << what << ": " << error;
    fused += compiled->fusedCount();
    const auto &temps = r.program.temporaries;
    auto live = lifetimes(*compiled);
    for (size_t a = 0; a < temps.size(); ++a) {
      if (live[a].second < 0)
        continue;
      EXPECT_EQ(compiled->temporaryOffset(uint32_t(a)) % temps[a].alignment, 0u) << what;
      EXPECT_LE(compiled->temporaryOffset(uint32_t(a)) + temps[a].bytes,
                compiled->memoryStats().perRunBytes)
          << what;
      for (size_t b = 0; b < a; ++b) {
        if (live[b].second < 0 || live[a].second < live[b].first || live[b].second < live[a].first)
          continue;
        uint64_t oa = compiled->temporaryOffset(uint32_t(a)),
                 ob = compiled->temporaryOffset(uint32_t(b));
        EXPECT_TRUE(oa + temps[a].bytes <= ob || ob + temps[b].bytes <= oa)
            << what << ": temporaries " << b << " and " << a << " live together share bytes";
      }
    }
    planned += compiled->memoryStats().perRunBytes;
    unplanned += compiled->memoryStats().unplannedBytes;

    std::vector<std::vector<float>> expected;
    for (size_t b = 0; b < r.program.bindings.size(); ++b)
      expected.push_back(b < r.inputs ? randomFloats(r.program.bindings[b].bytes / 4, 100 + b)
                                      : std::vector<float>(r.program.bindings[b].bytes / 4));
    std::vector<std::vector<float>> got = expected;
    evaluateNaively(r.program, expected);
    std::vector<uint8_t *> addresses;
    for (auto &b : got)
      addresses.push_back(reinterpret_cast<uint8_t *>(b.data()));
    // Twice: the second run finds the first one's values in its memory.
    for (int run = 0; run < 2; ++run) {
      compiled->run(addresses, pool);
      expectClose(got, expected, r.inputs, what + " run " + std::to_string(run));
    }
    if (HasFailure())
      return;
  }
  EXPECT_GT(fused, 0u);
  EXPECT_LT(planned, unplanned);
}

TEST(CpuMemoryPlan, ProgramsRunOneAfterAnotherShareOneBlock) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  std::mt19937_64 rng(3);
  std::shared_ptr<cpu::RunMemory> memory = cpu::RunMemory::shared();
  std::vector<RandomProgram> programs;
  std::vector<std::shared_ptr<cpu::CompiledProgram>> compiled;
  uint64_t largest = 0;
  cpu::ThreadPool pool(2);
  for (int i = 0; i < 6; ++i) {
    programs.push_back(randomProgram(rng));
    std::string error;
    compiled.push_back(cpu::CompiledProgram::create(programs.back().program, error));
    ASSERT_TRUE(compiled.back()) << error;
    EXPECT_EQ(memory.get(), cpu::RunMemory::shared().get());
    largest = std::max(largest, compiled.back()->memoryStats().perRunBytes);
  }
  uint64_t before = memory->heldBytes();
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < programs.size(); ++i) {
      std::vector<std::vector<float>> buffers;
      for (const auto &b : programs[i].program.bindings)
        buffers.emplace_back(b.bytes / 4, 0.5f);
      std::vector<uint8_t *> addresses;
      for (auto &b : buffers)
        addresses.push_back(reinterpret_cast<uint8_t *>(b.data()));
      compiled[i]->run(addresses, pool);
    }
  // One block, as large as the largest program needs (or one another test
  // of this process left, if larger).
  EXPECT_EQ(memory->heldBlocks(), 1u);
  EXPECT_EQ(memory->heldBytes(), std::max(before, largest));
}

TEST(CpuMemoryPlan, ConcurrentRunsEachHaveTheirOwnMemory) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  std::mt19937_64 rng(5);
  RandomProgram r = randomProgram(rng);
  while (r.program.kernels.size() < 20)
    r = randomProgram(rng);
  std::string error;
  auto compiled = cpu::CompiledProgram::create(r.program, error);
  ASSERT_TRUE(compiled) << error;
  const int threads = 4;
  std::vector<std::thread> workers;
  std::vector<int> failures(threads, 0);
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      cpu::ThreadPool pool(1);
      std::vector<std::vector<float>> expected;
      for (size_t b = 0; b < r.program.bindings.size(); ++b)
        expected.push_back(b < r.inputs
                               ? randomFloats(r.program.bindings[b].bytes / 4, 1000 * t + b)
                               : std::vector<float>(r.program.bindings[b].bytes / 4));
      std::vector<std::vector<float>> got = expected;
      evaluateNaively(r.program, expected);
      std::vector<uint8_t *> addresses;
      for (auto &b : got)
        addresses.push_back(reinterpret_cast<uint8_t *>(b.data()));
      for (int run = 0; run < 20; ++run) {
        compiled->run(addresses, pool);
        for (size_t b = r.inputs; b < expected.size(); ++b)
          for (size_t i = 0; i < expected[b].size(); ++i)
            if (std::fabs(got[b][i] - expected[b][i]) > 1e-4f * (1 + std::fabs(expected[b][i])))
              ++failures[size_t(t)];
      }
    });
  for (auto &w : workers)
    w.join();
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
  // At most one block per run in flight.
  EXPECT_LE(cpu::RunMemory::shared()->heldBlocks(), size_t(threads));
}

} // namespace
} // namespace cgc::test
