//===- strided.cpp - Iterating strided, broadcast operands ----------------===//

#include "strided.h"

#include "common.h"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>

namespace cgc::cpu {

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
  // Order by the output's (operand 0's) stride magnitude, outermost first;
  // equal magnitudes keep their order (std::sort with the index as the
  // tie-break: std::stable_sort's buffer is deprecated in this libstdc++).
  if (reorder && numOperands_ > 0)
    std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) {
      const int64_t sa = std::llabs(strides[0][a]), sb = std::llabs(strides[0][b]);
      return sa != sb ? sa > sb : a < b;
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

/// A row of 4-byte elements contiguous on one side and `k` (2, 4 or 8)
/// elements apart on the other: an interleave (a channel shuffle's halves
/// into their slots) or the reverse. Each 64-byte vector of the strided side
/// holds 16 / k elements: expanded into its lanes and stored under a mask
/// (the other lanes keep what other copies wrote there), or loaded and
/// compressed. A scalar loop moved one element per cycle at best.
CGC_TARGET_AVX512 void copyRowInterleaved32(char *d, const char *a, int64_t dStride,
                                            int64_t sStride, int64_t n) {
  const bool scatter = sStride == 4;
  const int64_t k = (scatter ? dStride : sStride) / 4, per = 16 / k;
  uint32_t bits = 0;
  for (int64_t lane = 0; lane < 16; lane += k)
    bits |= 1u << lane;
  const __mmask16 every = __mmask16(bits);
  float *out = reinterpret_cast<float *>(d);
  const float *in = reinterpret_cast<const float *>(a);
  for (int64_t i = 0; i < n; i += per) {
    const int64_t count = std::min(per, n - i);
    // The lanes of the strided side's vector that hold elements i..i+count.
    const __mmask16 lanes = count == per ? every : __mmask16(bits & ((1u << (k * (count - 1) + 1)) - 1));
    const __mmask16 dense = __mmask16((1u << count) - 1);
    if (scatter) {
      const __m512 x = _mm512_maskz_loadu_ps(dense, in + i);
      _mm512_mask_storeu_ps(out + i * k, lanes, _mm512_maskz_expand_ps(lanes, x));
    } else {
      const __m512 x = _mm512_maskz_loadu_ps(lanes, in + i * k);
      _mm512_mask_storeu_ps(out + i, dense, _mm512_maskz_compress_ps(lanes, x));
    }
  }
}

void copyRow32(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  const bool interleave = (s[1] == 4 && (s[0] == 8 || s[0] == 16 || s[0] == 32)) ||
                          (s[0] == 4 && (s[1] == 8 || s[1] == 16 || s[1] == 32));
  if (interleave && n >= 4 && cpuHasAvx512())
    return copyRowInterleaved32(p[0], p[1], s[0], s[1], n);
  copyRowT<uint32_t>(ctx, p, s, n);
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
  case 4: return &copyRow32;
  case 8: return &copyRowT<uint64_t>;
  default: return &copyRowBytes;
  }
}

constexpr int64_t kTile = 16;

/// Rows of at most this many bytes are short (CopyPlan::runRows).
constexpr int64_t kShortRowBytes = 1024;
/// Rows per work item of runRows.
constexpr int64_t kRowBlock = 64;

namespace {
/// `count` rows of `bytes` (at most kShortRowBytes) from s to d, each row
/// `sRow` / `dRow` bytes after the last: whole 64-byte pieces, then the
/// rest (one masked move on AVX-512).
CGC_TARGET_AVX512 void copyRowsAvx512(char *d, const char *s, int64_t dRow, int64_t sRow,
                                      int64_t count, int64_t bytes) {
  const int64_t whole = bytes / 64 * 64;
  const __mmask64 tail = _cvtu64_mask64(whole == bytes ? 0 : ~0ull >> (64 - (bytes - whole)));
  for (int64_t r = 0; r < count; ++r, d += dRow, s += sRow) {
    for (int64_t i = 0; i < whole; i += 64)
      _mm512_storeu_si512(d + i, _mm512_loadu_si512(s + i));
    if (tail)
      _mm512_mask_storeu_epi8(d + whole, tail, _mm512_maskz_loadu_epi8(tail, s + whole));
  }
}
void copyRowsBase(char *d, const char *s, int64_t dRow, int64_t sRow, int64_t count,
                  int64_t bytes) {
  for (int64_t r = 0; r < count; ++r, d += dRow, s += sRow)
    std::memcpy(d, s, size_t(bytes));
}
} // namespace

CopyPlan::CopyPlan(const std::vector<int64_t> &shape, size_t elemSize,
                   const std::vector<int64_t> &dstStrides,
                   const std::vector<int64_t> &srcStrides)
    : plan_(shape, {dstStrides, srcStrides}, {elemSize, elemSize}),
      row_(copyRowFor(elemSize)), elemSize_(elemSize) {
  // A short inner row (a channel shuffle's two groups, innermost in the
  // destination) would cost a call per two elements: a long dimension that
  // is contiguous on one side and 2, 4 or 8 elements apart on the other
  // (copyRow32's interleave) runs as the inner one instead.
  if (elemSize == 4 && plan_.rank() >= 2 && plan_.innerSize() < 8) {
    auto interleaved = [&](size_t d) {
      const int64_t a = std::llabs(dstStrides[d]), b = std::llabs(srcStrides[d]);
      return shape[d] >= 16 && ((b == 1 && (a == 2 || a == 4 || a == 8)) ||
                                (a == 1 && (b == 2 || b == 4 || b == 8)));
    };
    std::vector<size_t> order(shape.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const int64_t sa = std::llabs(dstStrides[a]), sb = std::llabs(dstStrides[b]);
      return sa != sb ? sa > sb : a < b;
    });
    auto inner = std::find_if(order.rbegin(), order.rend(), interleaved);
    if (inner != order.rend()) {
      std::rotate(inner.base() - 1, inner.base(), order.end());
      std::vector<int64_t> s, d, a;
      for (size_t i : order) {
        s.push_back(shape[i]);
        d.push_back(dstStrides[i]);
        a.push_back(srcStrides[i]);
      }
      plan_ = LoopPlan(s, {d, a}, {elemSize, elemSize}, /*reorder=*/false);
    }
  }
  size_t rank = plan_.rank();
  const int64_t e = int64_t(elemSize);
  if (rank >= 2 && (elemSize == 1 || elemSize == 2 || elemSize == 4 || elemSize == 8) &&
      plan_.stride(rank - 1, 0) == e && plan_.stride(rank - 1, 1) != e &&
      plan_.shape()[rank - 1] >= kTile) {
    for (size_t d = 0; d + 1 < rank; ++d)
      if (plan_.stride(d, 1) == e && plan_.shape()[d] >= kTile) {
        tiled_ = true;
        inner_ = rank - 1;
        across_ = d;
      }
    if (tiled_) {
      tilesAcross_ = (plan_.shape()[across_] + kTile - 1) / kTile;
      tilesInner_ = (plan_.shape()[inner_] + kTile - 1) / kTile;
      // Gathers take 32-bit byte offsets: 15 source rows must fit.
      const int64_t sB = plan_.stride(inner_, 1);
      gather32_ = elemSize == 4 && cpuHasAvx512() && sB > 0 && sB <= INT_MAX / kTile;
    }
  }
  if (!tiled_ && rank >= 2 && plan_.stride(rank - 1, 0) == e && plan_.stride(rank - 1, 1) == e &&
      plan_.shape()[rank - 1] * e <= kShortRowBytes) {
    shortRows_ = true;
    copyRows_ = cpuHasAvx512() ? &copyRowsAvx512 : &copyRowsBase;
    rowBlocks_ = (plan_.shape()[rank - 2] + kRowBlock - 1) / kRowBlock;
  }
}

namespace {
/// tile() for a whole 16 x 16 tile of 4-byte elements on AVX-512: each
/// destination row is one gather of a source column. The scalar tile, with
/// a memcpy per row, ran NCHW -> NHWC permutes at ~1 ns per element
/// (ConvNeXt-T: 96x56x56 in 319 us, 3.1 ms of its 54 per run).
CGC_TARGET_AVX512 void tile32Avx512(char *dst, const char *src, int64_t dA, int64_t sB) {
  const __m512i offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(sB)));
  for (int64_t a = 0; a < kTile; ++a)
    _mm512_storeu_si512(dst + a * dA, _mm512_i32gather_epi32(offsets, src + 4 * a, 1));
}

template <class T>
void tile(char *dst, const char *src, int64_t na, int64_t nb, int64_t dA, int64_t sB) {
  // dst[a][b] (b contiguous) = src[b][a] (a contiguous); a < na, b < nb.
  T t[kTile][kTile];
  for (int64_t b = 0; b < nb; ++b) {
    const T *s = reinterpret_cast<const T *>(src + b * sB);
    for (int64_t a = 0; a < na; ++a)
      t[a][b] = s[a];
  }
  for (int64_t a = 0; a < na; ++a)
    std::memcpy(dst + a * dA, t[a], size_t(nb) * sizeof(T));
}
} // namespace

void CopyPlan::runTiles(void *dst, const void *src, int64_t begin, int64_t end) const {
  // Work items: (position over the other dims, tile row along `across_`).
  const size_t rank = plan_.rank();
  const int64_t na = plan_.shape()[across_], nb = plan_.shape()[inner_];
  const int64_t dA = plan_.stride(across_, 0), sB = plan_.stride(inner_, 1);
  for (int64_t item = begin; item < end; ++item) {
    int64_t rest = item / tilesAcross_, ta = item % tilesAcross_;
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    for (size_t k = rank; k-- > 0;) {
      if (k == across_ || k == inner_)
        continue;
      int64_t idx = rest % plan_.shape()[k];
      rest /= plan_.shape()[k];
      d += idx * plan_.stride(k, 0);
      s += idx * plan_.stride(k, 1);
    }
    int64_t a0 = ta * kTile, an = std::min(kTile, na - a0);
    d += a0 * dA;
    s += a0 * int64_t(elemSize_);
    for (int64_t b0 = 0; b0 < nb; b0 += kTile) {
      int64_t bn = std::min(kTile, nb - b0);
      char *dd = d + b0 * int64_t(elemSize_);
      const char *ss = s + b0 * sB;
      if (gather32_ && an == kTile && bn == kTile) {
        tile32Avx512(dd, ss, dA, sB);
        continue;
      }
      switch (elemSize_) {
      case 1: tile<uint8_t>(dd, ss, an, bn, dA, sB); break;
      case 2: tile<uint16_t>(dd, ss, an, bn, dA, sB); break;
      case 4: tile<uint32_t>(dd, ss, an, bn, dA, sB); break;
      default: tile<uint64_t>(dd, ss, an, bn, dA, sB); break;
      }
    }
  }
}

void CopyPlan::runRows(void *dst, const void *src, int64_t begin, int64_t end) const {
  // Work items: (position over the outer dims, block of rows along the
  // second-innermost one); each row is `bytes` contiguous on both sides.
  const size_t rank = plan_.rank(), mid = rank - 2;
  const int64_t rows = plan_.shape()[mid];
  const int64_t bytes = plan_.shape()[rank - 1] * int64_t(elemSize_);
  const int64_t dRow = plan_.stride(mid, 0), sRow = plan_.stride(mid, 1);
  for (int64_t item = begin; item < end; ++item) {
    int64_t rest = item / rowBlocks_;
    const int64_t r0 = item % rowBlocks_ * kRowBlock, r1 = std::min(rows, r0 + kRowBlock);
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    for (size_t k = mid; k-- > 0;) {
      const int64_t idx = rest % plan_.shape()[k];
      rest /= plan_.shape()[k];
      d += idx * plan_.stride(k, 0);
      s += idx * plan_.stride(k, 1);
    }
    d += r0 * dRow;
    s += r0 * sRow;
    copyRows_(d, s, dRow, sRow, r1 - r0, bytes);
  }
}

int64_t CopyPlan::workItems() const {
  const size_t rank = plan_.rank();
  if (shortRows_)
    return plan_.total() / (plan_.shape()[rank - 2] * plan_.shape()[rank - 1]) * rowBlocks_;
  if (tiled_)
    return plan_.total() / (plan_.shape()[across_] * plan_.shape()[inner_]) * tilesAcross_;
  return plan_.total();
}

int64_t CopyPlan::itemElements() const {
  if (shortRows_)
    return kRowBlock * plan_.shape()[plan_.rank() - 1];
  if (tiled_)
    return kTile * plan_.shape()[inner_];
  return 1;
}

void CopyPlan::runItems(void *dst, const void *src, int64_t begin, int64_t end) const {
  if (shortRows_)
    runRows(dst, src, begin, end);
  else if (tiled_)
    runTiles(dst, src, begin, end);
  else
    runRange(dst, src, begin, end);
}

void CopyPlan::run(ThreadPool &pool, void *dst, const void *src) const {
  if (shortRows_ || tiled_) {
    const int64_t grainBytes = shortRows_ ? 4 * 65536 : 65536 * int64_t(elemSize_);
    pool.parallelFor(workItems(),
                     std::max<int64_t>(1, grainBytes / (itemElements() * int64_t(elemSize_))),
                     [&](int64_t b, int64_t e) { runItems(dst, src, b, e); });
    return;
  }
  char *bases[2] = {static_cast<char *>(dst), const_cast<char *>(static_cast<const char *>(src))};
  plan_.run(pool, bases, row_, &elemSize_, 65536);
}

void CopyPlan::runRange(void *dst, const void *src, int64_t begin, int64_t end) const {
  char *bases[2] = {static_cast<char *>(dst), const_cast<char *>(static_cast<const char *>(src))};
  plan_.runRange(bases, row_, &elemSize_, begin, end);
}

} // namespace cgc::cpu
