//===- weight_arena.h - One address range for prepared constants ----------===//
//
// The driver's prepared constants (packed weights, oneDNN's reordered
// weights) are read on every run of a model and live as long as its
// kernels. Each of them used to be its own C-heap block, and glibc serves a
// block over its mmap threshold (128 KiB, raised as mmapped blocks are freed)
// with a mapping of its own: a large model's weights ended up partly in the
// heap and partly in hundreds of separate mappings placed downwards.
//
// On this project's VMs that placement made whole processes slow: BERT-base
// at 1 thread ran its first layer's attention block 1.4-1.9 ms slower than
// the other layers' in most processes, and its FFN blocks at 8.2-8.9 ms
// instead of 5.7-6.1 in some; with every packed product in a mapping of its
// own it ran at 125-272 ms against 108-130 with all on the heap, in the same
// phases. The heap and one mapping carved upwards ran every process seen
// fast (docs/cpu-kernels.md, Memory). The cause was not found: a
// stream over 40 separate 9.4 MB mappings reads as fast as over the heap.
//
// WeightArena is that one mapping: a reserved (PROT_NONE) range of address
// space, committed upwards in whole pages as blocks are taken, first fit
// from the lowest free address. A freed block's pages go back to the system
// (MADV_DONTNEED) and its range to the free list, merged with its
// neighbours; the top of the range is uncommitted again. When the range
// cannot hold a block (or the reservation failed: an address-space limit),
// allocate() returns null and the caller uses the C heap: the same bytes,
// only placed elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_WEIGHT_ARENA_H
#define CGC_CPU_KERNELS_WEIGHT_ARENA_H

#include <cstddef>
#include <map>
#include <mutex>

namespace cgc::cpu {

class WeightArena {
public:
  /// Blocks smaller than this come from the C heap (glibc's own heap serves
  /// them; the arena's page granularity would waste more).
  static constexpr size_t kMinBytes = size_t(128) << 10;

  /// The process's arena; null when CGC_CPU_WEIGHT_ARENA=0 (read
  /// once) or the reservation failed.
  static WeightArena *shared();

  /// Reserves `reserveBytes` of address space (rounded up to pages);
  /// valid() is false if that failed.
  explicit WeightArena(size_t reserveBytes);
  ~WeightArena();
  WeightArena(const WeightArena &) = delete;
  WeightArena &operator=(const WeightArena &) = delete;

  bool valid() const { return base_ != nullptr; }
  /// A page-aligned block of at least `bytes`, or null if the range has no
  /// room for it (or the system refuses to commit it).
  void *allocate(size_t bytes);
  /// Returns a block from allocate() of the same `bytes`.
  void release(void *block, size_t bytes);
  bool owns(const void *p) const {
    return p >= base_ && static_cast<const char *>(p) < base_ + reserved_;
  }
  /// Bytes committed (the top of the used range, free blocks below it
  /// included).
  size_t committedBytes() const;
  static size_t pageSize();

private:
  size_t roundToPages(size_t bytes) const;

  char *base_ = nullptr;
  size_t reserved_ = 0;
  mutable std::mutex mutex_;
  size_t top_ = 0;                  // committed: [0, top_)
  std::map<size_t, size_t> free_;   // offset -> bytes, below top_, merged
};

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_WEIGHT_ARENA_H
