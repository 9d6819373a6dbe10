//===- thread_pool.cpp - The reference driver's worker threads ------------===//

#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace cgc::ref {

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_ && queue_.empty())
      return;
    runOne(lock);
  }
}

bool ThreadPool::runOne(std::unique_lock<std::mutex> &lock) {
  if (queue_.empty())
    return false;
  std::function<void()> task = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  task();
  lock.lock();
  return true;
}

void ThreadPool::runAll(const std::vector<std::function<void()>> &tasks) {
  if (tasks.empty())
    return;
  if (threads_ == 1 || tasks.size() == 1) {
    for (const auto &task : tasks)
      task();
    return;
  }
  // `remaining` only changes under doneMutex, so once the caller has seen it
  // reach zero and taken doneMutex, no task touches this frame any more.
  size_t remaining = tasks.size();
  std::mutex doneMutex;
  std::condition_variable done;
  std::exception_ptr firstError;
  auto wrap = [&](const std::function<void()> &task) {
    return [&, task] {
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(doneMutex);
      if (error && !firstError)
        firstError = error;
      if (--remaining == 0)
        done.notify_all();
    };
  };
  auto finished = [&] {
    std::lock_guard<std::mutex> lock(doneMutex);
    return remaining == 0;
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 1; i < tasks.size(); ++i)
      queue_.push_back(wrap(tasks[i]));
  }
  wake_.notify_all();
  wrap(tasks[0])();
  // Help with queued work (ours or anyone's) until our tasks are done.
  while (!finished()) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (runOne(lock))
      continue;
    lock.unlock();
    std::unique_lock<std::mutex> doneLock(doneMutex);
    done.wait_for(doneLock, std::chrono::microseconds(50),
                  [&] { return remaining == 0; });
  }
  if (firstError)
    std::rethrow_exception(firstError);
}

void ThreadPool::parallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(threads_, (n + grain - 1) / grain);
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  std::vector<std::function<void()>> tasks;
  int64_t per = n / chunks, extra = n % chunks, begin = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t end = begin + per + (c < extra ? 1 : 0);
    tasks.push_back([&body, begin, end] { body(begin, end); });
    begin = end;
  }
  runAll(tasks);
}

} // namespace cgc::ref
