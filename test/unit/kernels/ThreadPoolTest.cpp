//===- ThreadPoolTest.cpp - The CPU driver's worker threads ---------===//
//
// Every kernel splits its work with ThreadPool::run / parallelFor, and
// dispatches run concurrently on the same pool: each index runs exactly once,
// nested and concurrent jobs finish, an exception reaches the caller, and the
// job list's lock excludes.
//
//===----------------------------------------------------------------------===//

#include "thread_pool.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace cgc::cpu;

namespace {

TEST(ThreadPool, EveryIndexRunsExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(7), size_t(64), size_t(1000)}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 20; ++rep)
        pool.run(n, [&](size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 20) << "index " << i << " of " << n << " on " << threads;
    }
  }
}

TEST(ThreadPool, ParallelForCoversTheRangeInDisjointChunks) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 5, 17, 1000})
    for (int64_t grain : {1, 4, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> chunks{0};
      pool.parallelFor(n, grain, [&](int64_t begin, int64_t end) {
        EXPECT_LT(begin, end);
        chunks.fetch_add(1);
        for (int64_t i = begin; i < end; ++i)
          hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[size_t(i)].load(), 1) << i << " of " << n << ", grain " << grain;
      EXPECT_LE(chunks.load(), std::min<int64_t>(3, (n + grain - 1) / grain));
    }
}

TEST(ThreadPool, NestedJobsFinish) {
  ThreadPool pool(2);
  std::atomic<int> leaves{0};
  for (int rep = 0; rep < 200; ++rep)
    pool.run(4, [&](size_t) {
      pool.run(3, [&](size_t) {
        pool.parallelFor(5, 1, [&](int64_t b, int64_t e) { leaves.fetch_add(int(e - b)); });
      });
    });
  EXPECT_EQ(leaves.load(), 200 * 4 * 3 * 5);
}

TEST(ThreadPool, ConcurrentCallersShareThePool) {
  // Dispatches run concurrently from the device's threads onto one pool.
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 500; ++rep)
        pool.run(3, [&](size_t i) { sum.fetch_add(int64_t(i) + 1); });
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(sum.load(), 4 * 500 * (1 + 2 + 3));
}

TEST(ThreadPool, AnExceptionReachesTheCallerAfterEveryIndexFinished) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 50; ++rep) {
    std::atomic<int> finished{0};
    try {
      pool.run(8, [&](size_t i) {
        if (i == 5)
          throw std::runtime_error("index 5");
        finished.fetch_add(1);
      });
      FAIL() << "no exception";
    } catch (const std::runtime_error &e) {
      EXPECT_EQ(std::string(e.what()), "index 5");
    }
    EXPECT_EQ(finished.load(), 7);
  }
  // The pool still works.
  std::atomic<int> after{0};
  pool.run(5, [&](size_t) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 5);
}

TEST(ThreadPool, SpinMutexExcludes) {
  // More threads than this machine's cores too: an owner that is descheduled
  // while holding the lock must get to run (the waiters yield).
  SpinMutex mutex;
  int64_t counter = 0; // plain: a lost update shows as a short count
  const int threads = 2 * int(std::max(2u, std::thread::hardware_concurrency()));
  constexpr int kIncrements = 20000;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        std::lock_guard<SpinMutex> lock(mutex);
        int64_t v = counter;
        if (i % 64 == 0)
          std::this_thread::yield(); // widen the window a broken lock leaves
        counter = v + 1;
      }
    });
  for (std::thread &w : workers)
    w.join();
  EXPECT_EQ(counter, int64_t(threads) * kIncrements);
}

TEST(ThreadPool, UsableCoresFollowTheAffinityMask) {
  // Run on a thread of its own: its mask is changed, the test runner's not.
  std::thread([] {
    cpu_set_t all;
    ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
    EXPECT_EQ(usableCores(), CPU_COUNT(&all));
    int first = 0;
    while (!CPU_ISSET(first, &all))
      ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    EXPECT_EQ(usableCores(), 1);
    // More threads than allowed cores (the workers inherit the mask): they
    // do not spin (they would hold the one core from each other for whole
    // scheduler slices), and every index still runs once.
    ThreadPool pool(4);
    std::vector<std::atomic<int>> hits(64);
    for (int rep = 0; rep < 200; ++rep)
      pool.run(hits.size(), [&](size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
    for (size_t i = 0; i < hits.size(); ++i)
      EXPECT_EQ(hits[i].load(), 200) << i;
  }).join();
}

} // namespace
