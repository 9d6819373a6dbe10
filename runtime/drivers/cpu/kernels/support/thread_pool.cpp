//===- thread_pool.cpp - The CPU driver's worker threads ------------===//

#include "thread_pool.h"
#include "config.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <system_error>
#include <chrono>
#include <climits>
#include <cstdlib>

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cgc::cpu {

namespace {

void futexWait(std::atomic<uint32_t> *word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futexWake(std::atomic<uint32_t> *word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Spins until `ready()` or `budgetNs` passed; true if ready.
template <class F> bool spinUntil(int64_t budgetNs, F &&ready) {
  if (ready())
    return true;
  if (budgetNs <= 0)
    return false;
  int64_t deadline = nowNs() + budgetNs;
  while (true) {
    for (int i = 0; i < 32; ++i) {
      cpuRelax();
      if (ready())
        return true;
    }
    if (nowNs() >= deadline)
      return false;
  }
}

} // namespace

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

void SpinMutex::lock() {
  int spins = 0;
  while (locked_.exchange(true, std::memory_order_acquire)) {
    while (locked_.load(std::memory_order_relaxed)) {
      if (++spins < 4096)
        cpuRelax();
      else
        std::this_thread::yield();
    }
  }
}

struct ThreadPool::Job {
  Job(FunctionRef<void(size_t)> body, size_t n) : body(body), n(n) {}
  FunctionRef<void(size_t)> body;
  const size_t n;
  std::atomic<size_t> next{0}; // the next index to claim
  std::atomic<size_t> done{0}; // indices finished
  std::atomic<bool> failed{false};
  std::exception_ptr error; // written once, by whoever set `failed`
  // In the pool's list while `listed` (both under jobsMutex_).
  Job *prevJob = nullptr, *nextJob = nullptr;
  bool listed = false;
};

ThreadPool::ThreadPool(int threads) : ThreadPool(threads, KernelConfig::process().spinUs) {}

ThreadPool::ThreadPool(int threads, int spinMicroseconds) : threads_(std::max(1, threads)) {
  // Spinning only pays when every thread has a core of its own.
  int64_t spinUs = std::max(0, spinMicroseconds);
  if (threads_ > usableCores())
    spinUs = 0;
  spinNs_ = spinUs * 1000;
  try {
    for (int i = 1; i < threads_; ++i) {
      workers_.emplace_back([this] { workerLoop(); });
      const std::string name = "cgc-pool-" + std::to_string(i); // in top, perf, gdb
      pthread_setname_np(workers_.back().native_handle(), name.c_str());
    }
  } catch (const std::system_error &e) {
    // Out of threads (a process or address-space limit): the workers that
    // started stop, and the creator (CreateDevice) reports why.
    int started = int(workers_.size()) + 1;
    stop();
    throw std::runtime_error("cannot start worker thread " + std::to_string(started) + " of " +
                             std::to_string(threads_) + ": " + e.what());
  }
}

void ThreadPool::stop() {
  {
    std::lock_guard<SpinMutex> lock(jobsMutex_);
    stopping_ = true;
  }
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  futexWake(&epoch_, INT_MAX);
  for (std::thread &worker : workers_)
    worker.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() { stop(); }

ThreadPool::Job *ThreadPool::claim(size_t &index) {
  for (Job *j = jobs_, *next = nullptr; j; j = next) {
    next = j->nextJob;
    size_t i = j->next.fetch_add(1, std::memory_order_relaxed);
    if (i < j->n) {
      index = i;
      return j;
    }
    // Nothing left to claim: out of the list (its caller waits for it).
    if (j->prevJob)
      j->prevJob->nextJob = j->nextJob;
    else
      jobs_ = j->nextJob;
    if (j->nextJob)
      j->nextJob->prevJob = j->prevJob;
    j->listed = false;
  }
  return nullptr;
}

void ThreadPool::execute(Job *job, size_t index) {
  const size_t n = job->n;
  try {
    job->body(index);
  } catch (...) {
    if (!job->failed.exchange(true, std::memory_order_relaxed))
      job->error = std::current_exception();
  }
  // After this increment the job may be gone: touch only the pool.
  if (job->done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
    doneEpoch_.fetch_add(1, std::memory_order_seq_cst);
    if (doneSleepers_.load(std::memory_order_seq_cst) > 0)
      futexWake(&doneEpoch_, INT_MAX);
  }
}

void ThreadPool::workerLoop() {
  while (true) {
    uint32_t seen = epoch_.load(std::memory_order_acquire);
    Job *job;
    size_t index = 0;
    {
      std::lock_guard<SpinMutex> lock(jobsMutex_);
      job = claim(index);
      if (!job && stopping_)
        return;
    }
    if (job) {
      execute(job, index);
      continue;
    }
    if (spinUntil(spinNs_, [&] { return epoch_.load(std::memory_order_relaxed) != seen; }))
      continue;
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (epoch_.load(std::memory_order_seq_cst) == seen)
      futexWait(&epoch_, seen);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void ThreadPool::waitDone(Job &job) {
  auto finished = [&] { return job.done.load(std::memory_order_acquire) == job.n; };
  if (spinUntil(spinNs_, finished))
    return;
  while (!finished()) {
    uint32_t seen = doneEpoch_.load(std::memory_order_seq_cst);
    doneSleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (job.done.load(std::memory_order_seq_cst) != job.n)
      futexWait(&doneEpoch_, seen);
    doneSleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void ThreadPool::run(size_t n, FunctionRef<void(size_t)> body) {
  if (n == 0)
    return;
  if (threads_ == 1 || n == 1) {
    for (size_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  Job job(body, n);
  {
    std::lock_guard<SpinMutex> lock(jobsMutex_);
    job.nextJob = jobs_;
    if (jobs_)
      jobs_->prevJob = &job;
    jobs_ = &job;
    job.listed = true;
  }
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0)
    futexWake(&epoch_, int(std::min<size_t>(n - 1, workers_.size())));
  // The caller takes indices too, until none is left.
  while (true) {
    size_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= n)
      break;
    execute(&job, i);
  }
  {
    std::lock_guard<SpinMutex> lock(jobsMutex_);
    if (job.listed) {
      if (job.prevJob)
        job.prevJob->nextJob = job.nextJob;
      else
        jobs_ = job.nextJob;
      if (job.nextJob)
        job.nextJob->prevJob = job.prevJob;
      job.listed = false;
    }
  }
  waitDone(job);
  if (job.failed.load(std::memory_order_relaxed))
    std::rethrow_exception(job.error);
}

void ThreadPool::runAll(const std::vector<std::function<void()>> &tasks) {
  run(tasks.size(), [&](size_t i) { tasks[i](); });
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(threads_, (n + grain - 1) / grain);
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  run(size_t(chunks), [&](size_t c) {
    int64_t begin, end;
    evenSplit(n, chunks, int64_t(c), begin, end);
    body(begin, end);
  });
}

} // namespace cgc::cpu
