//===- WeightArenaTest.cpp - The prepared constants' address range --------===//

#include "common.h"
#include "weight_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

using namespace cgc::cpu;

namespace {

const size_t kPage = WeightArena::pageSize();

TEST(WeightArena, BlocksArePageAlignedAscendingAndWritable) {
  WeightArena arena(64 * kPage);
  ASSERT_TRUE(arena.valid());
  char *a = static_cast<char *>(arena.allocate(1));
  char *b = static_cast<char *>(arena.allocate(2 * kPage + 1));
  char *c = static_cast<char *>(arena.allocate(kPage));
  ASSERT_TRUE(a && b && c);
  for (char *p : {a, b, c}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kPage, 0u);
    EXPECT_TRUE(arena.owns(p));
  }
  EXPECT_EQ(b, a + kPage);
  EXPECT_EQ(c, b + 3 * kPage);
  EXPECT_EQ(arena.committedBytes(), 5 * kPage);
  std::memset(b, 0x5a, 3 * kPage);
  std::memset(a, 1, kPage);
  std::memset(c, 2, kPage);
  EXPECT_EQ(b[0], 0x5a);
  EXPECT_EQ(b[3 * kPage - 1], 0x5a);
  int outside = 0;
  EXPECT_FALSE(arena.owns(&outside));
}

TEST(WeightArena, FreedRangesMergeAndAreReusedLowestFirstAsZeros) {
  WeightArena arena(64 * kPage);
  ASSERT_TRUE(arena.valid());
  char *a = static_cast<char *>(arena.allocate(kPage));
  char *b = static_cast<char *>(arena.allocate(2 * kPage));
  char *c = static_cast<char *>(arena.allocate(kPage));
  char *d = static_cast<char *>(arena.allocate(kPage));
  std::memset(a, 7, 5 * kPage);
  // Free b, then a: one free range of 3 pages at a.
  arena.release(b, 2 * kPage);
  arena.release(a, kPage);
  EXPECT_EQ(arena.committedBytes(), 5 * kPage);
  char *e = static_cast<char *>(arena.allocate(3 * kPage));
  EXPECT_EQ(e, a) << "the merged range is reused";
  for (size_t i = 0; i < 3 * kPage; i += 512)
    ASSERT_EQ(e[i], 0) << "released pages went back to the system";
  EXPECT_EQ(c[0], 7) << "a neighbour keeps its bytes";
  // A smaller block takes the lowest free range that fits.
  arena.release(e, 3 * kPage);
  char *f = static_cast<char *>(arena.allocate(kPage));
  EXPECT_EQ(f, a);
  char *g = static_cast<char *>(arena.allocate(kPage));
  EXPECT_EQ(g, a + kPage);
  // Freeing the top uncommits it, down through a free range below it.
  arena.release(d, kPage);
  EXPECT_EQ(arena.committedBytes(), 4 * kPage);
  arena.release(c, kPage);
  arena.release(g, kPage);
  arena.release(f, kPage);
  EXPECT_EQ(arena.committedBytes(), 0u);
}

TEST(WeightArena, AFullRangeRefuses) {
  WeightArena arena(4 * kPage);
  ASSERT_TRUE(arena.valid());
  void *a = arena.allocate(3 * kPage);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(arena.allocate(2 * kPage), nullptr);
  void *b = arena.allocate(kPage);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(arena.allocate(1), nullptr);
  EXPECT_EQ(arena.allocate(0), nullptr);
  arena.release(a, 3 * kPage);
  EXPECT_EQ(arena.allocate(3 * kPage), a);
}

TEST(WeightArena, ConcurrentBlocksDoNotOverlap) {
  WeightArena arena(4096 * kPage);
  ASSERT_TRUE(arena.valid());
  std::vector<std::thread> threads;
  std::vector<std::vector<std::pair<char *, size_t>>> blocks(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes = size_t(1 + (i * 7 + t) % 5) * kPage - size_t(i % 3);
        char *p = static_cast<char *>(arena.allocate(bytes));
        ASSERT_NE(p, nullptr);
        std::memset(p, t + 1, bytes);
        blocks[size_t(t)].push_back({p, bytes});
        if (i % 3 == 2) { // check and free an earlier block: ranges are reused
          auto &[q, n] = blocks[size_t(t)][size_t(i / 2)];
          if (!q)
            continue;
          for (size_t j = 0; j < n; j += 256)
            ASSERT_EQ(q[j], t + 1) << "another thread wrote into this block";
          arena.release(q, n);
          q = nullptr;
        }
      }
    });
  for (std::thread &th : threads)
    th.join();
  for (int t = 0; t < 4; ++t)
    for (auto [p, n] : blocks[size_t(t)])
      if (p)
        for (size_t j = 0; j < n; j += 256)
          ASSERT_EQ(p[j], t + 1);
}

TEST(WeightArena, LargeAlignedBuffersLiveInTheSharedArena) {
  WeightArena *arena = WeightArena::shared();
  if (!arena)
    GTEST_SKIP() << "CGC_CPU_WEIGHT_ARENA=0 or no address space to reserve";
  AlignedBuffer big(WeightArena::kMinBytes), small(WeightArena::kMinBytes - 64);
  EXPECT_TRUE(big.inArena());
  EXPECT_TRUE(arena->owns(big.data()));
  EXPECT_FALSE(small.inArena());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  std::memset(big.data(), 3, big.size());
  std::memset(small.data(), 4, small.size());
}

} // namespace
