//===- weight_arena.cpp - One address range for prepared constants --------===//

#include "weight_arena.h"

#include "common.h"

#include <iterator>

#include <sys/mman.h>
#include <unistd.h>

namespace cgc::cpu {

namespace {
/// Address space the process's arena reserves: no memory until committed,
/// and far more than any model's prepared weights.
constexpr size_t kSharedReserve = size_t(64) << 30;
} // namespace

size_t WeightArena::pageSize() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

size_t WeightArena::roundToPages(size_t bytes) const {
  const size_t page = pageSize();
  return (bytes + page - 1) / page * page;
}

WeightArena *WeightArena::shared() {
  static WeightArena *arena = []() -> WeightArena * {
    // Never destroyed: blocks may be released by static destructors of
    // whoever holds them.
    auto *a = new WeightArena(kSharedReserve);
    if (a->valid())
      return a;
    delete a;
    return nullptr;
  }();
  return arena;
}

WeightArena::WeightArena(size_t reserveBytes) {
  const size_t bytes = roundToPages(reserveBytes);
  void *p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return;
  base_ = static_cast<char *>(p);
  reserved_ = bytes;
}

WeightArena::~WeightArena() {
  if (base_)
    munmap(base_, reserved_);
}

void *WeightArena::allocate(size_t bytes) {
  if (!base_ || bytes == 0)
    return nullptr;
  const size_t size = roundToPages(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // First fit from the lowest address: blocks stay packed low and upwards.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size)
      continue;
    const size_t offset = it->first, left = it->second - size;
    free_.erase(it);
    if (left)
      free_.emplace(offset + size, left);
    return base_ + offset;
  }
  if (size > reserved_ - top_)
    return nullptr;
  // Commit the next pages (a strict-overcommit system may refuse).
  if (mprotect(base_ + top_, size, PROT_READ | PROT_WRITE) != 0)
    return nullptr;
  void *block = base_ + top_;
  top_ += size;
  return block;
}

void WeightArena::release(void *block, size_t bytes) {
  if (!block)
    return;
  const size_t size = roundToPages(bytes);
  size_t offset = size_t(static_cast<char *>(block) - base_);
  // The pages go back to the system now; the range is reused later (and
  // reads as zeros until written).
  madvise(block, size, MADV_DONTNEED);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t length = size;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + length) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  if (offset + length == top_) {
    // The top of the committed range: uncommit it.
    mprotect(base_ + offset, length, PROT_NONE);
    top_ = offset;
    return;
  }
  free_.emplace(offset, length);
}

size_t WeightArena::committedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return top_;
}

} // namespace cgc::cpu
