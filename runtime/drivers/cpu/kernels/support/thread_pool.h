//===- thread_pool.h - The CPU driver's worker threads ----*- C++ -*-===//
//
// A fixed pool of worker threads shared by the executor (independent
// dispatches run concurrently) and by the kernels (work inside one kernel is
// split with parallelFor). The calling thread always takes part in the work,
// so nested use (parallelFor inside a pool task) cannot deadlock: a job can
// always be finished by its caller alone.
//
// Built for many small jobs (a model runs hundreds of dispatches, each split
// in a few pieces): a job is a function over indices [0, n) that lives on the
// caller's stack (no allocation, no std::function per piece); threads claim
// indices with an atomic counter. Idle workers spin on an atomic epoch for a
// short while ($CGC_CPU_SPIN_US, default 300 µs; none where the pool has more
// threads than the process may use cores) before sleeping on a
// futex, so back-to-back jobs start without a wake-up; a caller waiting for
// the last pieces spins the same way before sleeping.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_THREAD_POOL_H
#define CGC_CPU_THREAD_POOL_H

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace cgc::cpu {

/// A non-owning reference to a callable (no allocation); the callable must
/// outlive the call it is passed to.
template <class Signature> class FunctionRef;
template <class R, class... Args> class FunctionRef<R(Args...)> {
public:
  template <class F, class = std::enable_if_t<
                         !std::is_same_v<std::decay_t<F>, FunctionRef> &&
                         std::is_invocable_r_v<R, F &, Args...>>>
  FunctionRef(F &&f) // NOLINT: implicit, like std::function
      : object_(const_cast<void *>(static_cast<const void *>(std::addressof(f)))),
        call_([](void *o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F> *>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

private:
  void *object_;
  R (*call_)(void *, Args...);
};

/// The CPUs this process may run on: its affinity mask (taskset, a
/// container's cpuset), at least 1. std::thread::hardware_concurrency()
/// counts every online CPU, so one thread per CPU it counts can put several
/// spinning threads on one allowed core.
int usableCores();

/// Part `i` of [0, n) cut into `parts` contiguous parts whose lengths
/// differ by at most one (14 in 4: 4, 4, 3, 3), as [begin, end).
inline void evenSplit(int64_t n, int64_t parts, int64_t i, int64_t &begin, int64_t &end) {
  begin = i * (n / parts) + std::min(i, n % parts);
  end = begin + n / parts + (i < n % parts ? 1 : 0);
}

/// The lock of the pool's job list. Its critical sections are a few loads
/// and stores, and every dispatch split across the pool takes it on each
/// thread, at the same moment: contended, a std::mutex sleeps in the kernel
/// and its owner's unlock makes a second system call to wake it (a split
/// dispatch at 2 threads took 4 us at p90, against 0.55 us for a round trip
/// of a cache line between the two cores). This one spins, then yields the
/// core (an owner descheduled while holding it must get to run).
class SpinMutex {
public:
  void lock();
  void unlock() { locked_.store(false, std::memory_order_release); }

private:
  std::atomic<bool> locked_{false};
};

class ThreadPool {
public:
  /// `threads` counts the calling thread: 1 runs everything inline.
  /// `threads` in all (the caller's and threads - 1 workers), idle workers
  /// spinning `spinMicroseconds` (0 where there are more threads than
  /// usableCores()) before they sleep. Without it, the process configuration's.
  explicit ThreadPool(int threads);
  ThreadPool(int threads, int spinMicroseconds);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return threads_; }

  /// Runs `body(i)` for every i in [0, n), concurrently where threads are
  /// free (the caller takes part); returns when all are done. The first
  /// exception a call throws is rethrown here once all have finished.
  void run(size_t n, FunctionRef<void(size_t)> body);

  /// Runs `body(begin, end)` over [0, n) split into at most size() chunks of
  /// at least `grain` iterations; returns when all chunks are done.
  void parallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body);

  /// Runs every task, concurrently where workers are free; returns when all
  /// are done.
  void runAll(const std::vector<std::function<void()>> &tasks);

private:
  struct Job;
  /// Stops and joins the workers.
  void stop();
  void workerLoop();
  /// Claims an index of a published job; null if none is left.
  Job *claim(size_t &index);
  /// Runs index `index` of `job` and counts it done (the job may be gone
  /// once this returns).
  void execute(Job *job, size_t index);
  /// Waits until every index of `job` is done.
  void waitDone(Job &job);

  int threads_;
  int64_t spinNs_;
  std::vector<std::thread> workers_;

  SpinMutex jobsMutex_;
  Job *jobs_ = nullptr; // published jobs with indices left, newest first
  bool stopping_ = false;

  // Futex words (32 bits). `epoch_` changes whenever a job is published (and
  // on shutdown): idle workers wait on it. `doneEpoch_` changes whenever a
  // job's last index finishes: callers waiting for stragglers wait on it.
  alignas(64) std::atomic<uint32_t> epoch_{0};
  std::atomic<int32_t> sleepers_{0};
  alignas(64) std::atomic<uint32_t> doneEpoch_{0};
  std::atomic<int32_t> doneSleepers_{0};
};

} // namespace cgc::cpu

#endif // CGC_CPU_THREAD_POOL_H
