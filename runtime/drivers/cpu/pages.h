//===- pages.h - Zeroed, lazily faulted host memory -------------*- C++ -*-===//
//
// Memory the CPU driver hands out in large blocks (heaps, the per-run
// memory of a program) comes straight from anonymous mappings: the kernel
// gives zeroed pages on first touch, so a block costs resident memory only
// for the pages something writes or reads. (aligned_alloc + memset would make
// every page resident at once; glibc may also serve a large block from its
// heap, where freed pages stay resident.)
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_PAGES_H
#define CGC_CPU_PAGES_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace cgc::cpu {

/// The size of the mapping allocatePages makes for `bytes` at `alignment`.
inline size_t pageMappingSize(size_t bytes, size_t alignment) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t align = alignment > page ? alignment : page;
  return (bytes + align - 1) / align * align;
}

/// `bytes` of zeroed memory at a multiple of `alignment` (a power of two),
/// faulted in page by page as it is touched; null when the system has no
/// room. Release with freePages(pointer, bytes, alignment).
inline void *allocatePages(size_t bytes, size_t alignment) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t size = pageMappingSize(bytes, alignment);
  size_t extra = alignment > page ? alignment - page : 0;
  void *p = mmap(nullptr, size + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  if (!extra)
    return p;
  // Over-allocated by alignment - page: trim to an aligned start.
  uintptr_t start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
  if (aligned > start)
    munmap(p, aligned - start);
  size_t tail = (start + size + extra) - (aligned + size);
  if (tail)
    munmap(reinterpret_cast<void *>(aligned + size), tail);
  return reinterpret_cast<void *>(aligned);
}

inline void freePages(void *pointer, size_t bytes, size_t alignment) {
  if (pointer)
    munmap(pointer, pageMappingSize(bytes, alignment));
}

} // namespace cgc::cpu

#endif // CGC_CPU_PAGES_H
