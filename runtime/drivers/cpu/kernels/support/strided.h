//===- strided.h - Iterating strided, broadcast operands --------*- C++ -*-===//
//
// A LoopPlan walks up to kMaxOperands operands of one shape (operand 0 is
// usually the output) in row-major order of the output. Each operand has its
// own byte strides (0 on broadcast dimensions, negative for reversed views).
// Size-1 dimensions are dropped, dimensions are ordered by the output's
// strides, and dimensions that are contiguous for every operand are merged,
// so a dense elementwise op over any shape becomes one long row.
//
// A row function processes `n` elements of the innermost dimension given the
// operands' pointers and inner byte strides; it checks for the unit-stride
// and broadcast (stride 0) cases itself.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_STRIDED_H
#define CGC_CPU_KERNELS_STRIDED_H

#include "common.h"

#include <array>

namespace cgc::cpu {

constexpr int kMaxOperands = 4;
constexpr size_t kMaxLoopRank = 40;

using RowFn = void (*)(const void *ctx, char *const *ptrs, const int64_t *strides, int64_t n);

class LoopPlan {
public:
  /// `strides[k]` are operand k's element strides over `shape` (already
  /// broadcast: 0 on broadcast dimensions); `sizes[k]` its element size.
  LoopPlan(const std::vector<int64_t> &shape,
           const std::vector<std::vector<int64_t>> &strides,
           const std::vector<size_t> &sizes, bool reorder = true);
  LoopPlan() = default;

  int64_t total() const { return total_; }
  int numOperands() const { return numOperands_; }
  size_t rank() const { return shape_.size(); }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t stride(size_t dim, int operand) const { return strides_[dim][operand]; }
  /// The innermost dimension's length (1 for an empty or rank-0 plan).
  int64_t innerSize() const { return shape_.empty() ? 1 : shape_.back(); }

  /// Calls body(ptrs, innerStrides, n) for the rows covering linear
  /// positions [begin, end) of the iteration space.
  template <class Body>
  void forRange(char *const *bases, int64_t begin, int64_t end, Body &&body) const;

  /// Runs `row` over everything, split across `pool` in chunks of at least
  /// `grain` elements.
  void run(ThreadPool &pool, char *const *bases, RowFn row, const void *ctx,
           int64_t grain) const;
  /// Runs `row` over [begin, end) on the calling thread.
  void runRange(char *const *bases, RowFn row, const void *ctx, int64_t begin,
                int64_t end) const;

private:
  int numOperands_ = 0;
  int64_t total_ = 0;
  std::vector<int64_t> shape_;
  std::vector<std::array<int64_t, kMaxOperands>> strides_; // bytes
};

/// A row function copying elements of `elemSize` bytes (1, 2, 4, 8, or any
/// size via memcpy) from operand 1 to operand 0.
RowFn copyRowFor(size_t elemSize);

/// Copies one strided tensor into another of the same shape and dtype.
class CopyPlan {
public:
  CopyPlan() = default;
  CopyPlan(const std::vector<int64_t> &shape, size_t elemSize,
           const std::vector<int64_t> &dstStrides, const std::vector<int64_t> &srcStrides);
  void run(ThreadPool &pool, void *dst, const void *src) const;
  void runRange(void *dst, const void *src, int64_t begin, int64_t end) const;
  int64_t total() const { return plan_.total(); }
  int64_t bytes() const { return plan_.total() * int64_t(elemSize_); }
  /// The copy as run() splits it across threads: work items (blocks of
  /// short rows, tile rows of a transposing copy, else elements in the
  /// plan's order) of itemElements() elements each (at most), items
  /// [begin, end) of which runItems() copies on the calling thread.
  int64_t workItems() const;
  int64_t itemElements() const;
  void runItems(void *dst, const void *src, int64_t begin, int64_t end) const;

private:
  void runTiles(void *dst, const void *src, int64_t begin, int64_t end) const;
  void runRows(void *dst, const void *src, int64_t begin, int64_t end) const;

  LoopPlan plan_;
  RowFn row_ = nullptr;
  size_t elemSize_ = 0;
  // A transposing copy (dst contiguous along dimension `inner_`, src
  // contiguous along `across_`) runs in square tiles so both sides are read
  // and written a cache line at a time.
  bool tiled_ = false;
  bool gather32_ = false; // whole tiles of 4-byte elements gather on AVX-512
  size_t inner_ = 0, across_ = 0;
  int64_t tilesAcross_ = 0, tilesInner_ = 0;
  // Short rows contiguous on both sides (a channels-last concat's or
  // split's piece: one pixel's channels of one input) are copied a block of
  // rows per work item, without a call per row.
  bool shortRows_ = false;
  void (*copyRows_)(char *, const char *, int64_t, int64_t, int64_t, int64_t) = nullptr;
  int64_t rowBlocks_ = 0; // blocks of rows along the second-innermost dimension
};

template <class Body>
void LoopPlan::forRange(char *const *bases, int64_t begin, int64_t end, Body &&body) const {
  if (begin >= end)
    return;
  const size_t rank = shape_.size();
  std::array<int64_t, kMaxOperands> inner{};
  if (rank == 0) {
    char *ptrs[kMaxOperands];
    for (int k = 0; k < numOperands_; ++k)
      ptrs[k] = bases[k];
    body(ptrs, inner.data(), int64_t(1));
    return;
  }
  inner = strides_[rank - 1];
  int64_t idx[kMaxLoopRank];
  int64_t rem = begin;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = rem % shape_[d];
    rem /= shape_[d];
  }
  // The operands' pointers at the start of the current row (the inner
  // index 0), moved one dimension step at a time: rows can be a few
  // elements long (a channels-last copy's pixels), and recomputing every
  // pointer from the index per row cost more than the row.
  char *row[kMaxOperands];
  for (int k = 0; k < numOperands_; ++k) {
    char *p = bases[k];
    for (size_t d = 0; d + 1 < rank; ++d)
      p += idx[d] * strides_[d][k];
    row[k] = p;
  }
  char *ptrs[kMaxOperands];
  int64_t pos = begin;
  const int64_t innerLen = shape_[rank - 1];
  int64_t at = idx[rank - 1];
  while (pos < end) {
    int64_t n = std::min(end - pos, innerLen - at);
    for (int k = 0; k < numOperands_; ++k)
      ptrs[k] = row[k] + at * inner[k];
    body(static_cast<char *const *>(ptrs), inner.data(), n);
    pos += n;
    if (pos >= end)
      break;
    at = 0;
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < shape_[d]) {
        for (int k = 0; k < numOperands_; ++k)
          row[k] += strides_[d][k];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < numOperands_; ++k)
        row[k] -= (shape_[d] - 1) * strides_[d][k];
    }
  }
}

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_STRIDED_H
