//===- strided.cpp - Iterating strided, broadcast operands ----------------===//

#include "strided.h"

#include <algorithm>
#include <numeric>

namespace cgc::ref {

LoopPlan::LoopPlan(const std::vector<int64_t> &shape,
                   const std::vector<std::vector<int64_t>> &strides,
                   const std::vector<size_t> &sizes, bool reorder) {
  numOperands_ = int(strides.size());
  if (numOperands_ > kMaxOperands || sizes.size() != strides.size())
    fail("internal error: LoopPlan with too many operands");
  total_ = numElements(shape);
  // Drop size-1 dimensions.
  std::vector<size_t> dims;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      dims.push_back(d);
  if (total_ == 0)
    dims.clear();
  // Order by the output's (operand 0's) stride magnitude, outermost first.
  if (reorder && numOperands_ > 0)
    std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) {
      return std::llabs(strides[0][a]) > std::llabs(strides[0][b]);
    });
  for (size_t d : dims) {
    std::array<int64_t, kMaxOperands> s{};
    for (int k = 0; k < numOperands_; ++k)
      s[k] = strides[k][d] * int64_t(sizes[k]);
    if (!shape_.empty()) {
      // Merge with the previous (outer) dimension if contiguous for all.
      bool merge = true;
      for (int k = 0; k < numOperands_; ++k)
        if (strides_.back()[k] != s[k] * shape[d])
          merge = false;
      if (merge) {
        shape_.back() *= shape[d];
        strides_.back() = s;
        continue;
      }
    }
    shape_.push_back(shape[d]);
    strides_.push_back(s);
  }
  if (shape_.size() > kMaxLoopRank)
    fail("internal error: loop nest deeper than supported");
}

void LoopPlan::runRange(char *const *bases, RowFn row, const void *ctx, int64_t begin,
                        int64_t end) const {
  forRange(bases, begin, end, [&](char *const *ptrs, const int64_t *strides, int64_t n) {
    row(ctx, ptrs, strides, n);
  });
}

void LoopPlan::run(ThreadPool &pool, char *const *bases, RowFn row, const void *ctx,
                   int64_t grain) const {
  if (total_ == 0)
    return;
  std::array<char *, kMaxOperands> b{};
  for (int k = 0; k < numOperands_; ++k)
    b[k] = bases[k];
  if (total_ <= grain || pool.size() == 1) {
    runRange(b.data(), row, ctx, 0, total_);
    return;
  }
  pool.parallelFor(total_, grain, [&](int64_t begin, int64_t end) {
    runRange(b.data(), row, ctx, begin, end);
  });
}

namespace {
template <class T>
void copyRowT(const void *, char *const *p, const int64_t *s, int64_t n) {
  if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T))) {
    std::memcpy(p[0], p[1], size_t(n) * sizeof(T));
    return;
  }
  char *d = p[0];
  const char *a = p[1];
  if (s[1] == 0) {
    T v;
    std::memcpy(&v, a, sizeof(T));
    for (int64_t i = 0; i < n; ++i, d += s[0])
      std::memcpy(d, &v, sizeof(T));
    return;
  }
  for (int64_t i = 0; i < n; ++i, d += s[0], a += s[1])
    std::memcpy(d, a, sizeof(T));
}

void copyRowBytes(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  size_t size = *static_cast<const size_t *>(ctx);
  char *d = p[0];
  const char *a = p[1];
  for (int64_t i = 0; i < n; ++i, d += s[0], a += s[1])
    std::memcpy(d, a, size);
}
} // namespace

RowFn copyRowFor(size_t elemSize) {
  switch (elemSize) {
  case 1: return &copyRowT<uint8_t>;
  case 2: return &copyRowT<uint16_t>;
  case 4: return &copyRowT<uint32_t>;
  case 8: return &copyRowT<uint64_t>;
  default: return &copyRowBytes;
  }
}

CopyPlan::CopyPlan(const std::vector<int64_t> &shape, size_t elemSize,
                   const std::vector<int64_t> &dstStrides,
                   const std::vector<int64_t> &srcStrides)
    : plan_(shape, {dstStrides, srcStrides}, {elemSize, elemSize}),
      row_(copyRowFor(elemSize)), elemSize_(elemSize) {}

void CopyPlan::run(ThreadPool &pool, void *dst, const void *src) const {
  char *bases[2] = {static_cast<char *>(dst), const_cast<char *>(static_cast<const char *>(src))};
  plan_.run(pool, bases, row_, &elemSize_, 65536);
}

void CopyPlan::runRange(void *dst, const void *src, int64_t begin, int64_t end) const {
  char *bases[2] = {static_cast<char *>(dst), const_cast<char *>(static_cast<const char *>(src))};
  plan_.runRange(bases, row_, &elemSize_, begin, end);
}

} // namespace cgc::ref
