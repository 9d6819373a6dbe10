//===- thread_pool.h - The reference driver's worker threads ----*- C++ -*-===//
//
// A fixed pool of worker threads shared by the executor (independent
// dispatches run concurrently) and by the kernels (work inside one kernel is
// split with parallelFor). parallelFor may be called from inside a pool task:
// the caller always takes part in the work, so nested use cannot deadlock.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_THREAD_POOL_H
#define CGC_REFERENCE_THREAD_POOL_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cgc::ref {

class ThreadPool {
public:
  /// `threads` counts the calling thread: 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return threads_; }

  /// Runs `body(begin, end)` over [0, n) split into at most size() chunks of
  /// at least `grain` iterations; returns when all chunks are done.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &body);

  /// Runs every task, concurrently where workers are free; returns when all
  /// are done.
  void runAll(const std::vector<std::function<void()>> &tasks);

private:
  void workerLoop();
  /// Pops and runs one queued task; false if the queue was empty.
  bool runOne(std::unique_lock<std::mutex> &lock);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
};

} // namespace cgc::ref

#endif // CGC_REFERENCE_THREAD_POOL_H
