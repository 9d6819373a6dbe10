//===- sgemm.cpp - A register-blocked float32 GEMM for AVX-512 ------------===//

#include "sgemm.h"

#include "tile_table.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace cgc::ref {
namespace {

using Args = PackedSgemm::Args;

// The AVX-512 level of CGC_TARGET_AVX512 and prefetchw, on every function of
// the tile (a helper with other target features would not inline into it).
#define CGC_SGEMM_TARGET                                                        \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2,lzcnt,"     \
                        "popcnt,prfchw")))
using Kind = SgemmOp::Kind;

/// x op y for the binary op K.
template <Kind K> CGC_SGEMM_TARGET inline __m512 binary(__m512 x, __m512 y) {
  if constexpr (K == Kind::Add)
    return _mm512_add_ps(x, y);
  else if constexpr (K == Kind::Sub)
    return _mm512_sub_ps(x, y);
  else if constexpr (K == Kind::Mul)
    return _mm512_mul_ps(x, y);
  else
    return _mm512_div_ps(x, y);
}

/// The binary op K of `op` on the MR x NV accumulators of the tile at
/// (row, col).
template <Kind K, int MR, int NV>
CGC_SGEMM_TARGET inline void applyBinary(const Args &g, const SgemmOp &op,
                                         __m512 (&acc)[MR][NV], int64_t row, int64_t col,
                                         __mmask16 last) {
  auto mask = [&](int v) { return v == NV - 1 ? last : __mmask16(0xffff); };
  const float *base = g.operands[op.operand] + row * op.rowStride;
  if (op.rowStride == 0) {
    // One operand row for the whole tile (a bias): NV loads.
    __m512 y[NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      y[v] = op.colStride == 0 ? _mm512_set1_ps(*base)
                               : _mm512_maskz_loadu_ps(mask(v), base + col + 16 * v);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = binary<K>(acc[i][v], y[v]);
    return;
  }
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    const float *p = base + i * op.rowStride;
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) {
      const __m512 y = op.colStride == 0 ? _mm512_set1_ps(*p)
                                         : _mm512_maskz_loadu_ps(mask(v), p + col + 16 * v);
      acc[i][v] = binary<K>(acc[i][v], y);
    }
  }
}

/// Applies `op` to the MR x NV accumulators of the tile at (row, col). The
/// switch on the op's kind is outside the loops over the accumulators: per
/// accumulator it cost a third of a 16-deep tile's time (MobileNetV2's
/// 16->96 1x1 convolution with bias and relu6: 256 -> 180 us).
template <int MR, int NV>
CGC_SGEMM_TARGET inline void applyOp(const Args &g, const SgemmOp &op, __m512 (&acc)[MR][NV],
                                     int64_t row, int64_t col, __mmask16 last) {
  switch (op.kind) {
  case Kind::Scale: {
    const __m512 alpha = _mm512_set1_ps(op.alpha);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_mul_ps(acc[i][v], alpha);
    return;
  }
  case Kind::Relu: {
    const __m512 alpha = _mm512_set1_ps(op.alpha), zero = _mm512_setzero_ps();
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v) {
        const __mmask16 negative = _mm512_cmp_ps_mask(acc[i][v], zero, _CMP_LT_OQ);
        acc[i][v] = _mm512_mask_mul_ps(acc[i][v], negative, acc[i][v], alpha);
      }
    return;
  }
  case Kind::Clip: {
    // max/min return their second operand when either is NaN: NaN stays.
    const __m512 lo = _mm512_set1_ps(op.alpha), hi = _mm512_set1_ps(op.beta);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][v]));
    return;
  }
  case Kind::Linear: {
    const __m512 alpha = _mm512_set1_ps(op.alpha), beta = _mm512_set1_ps(op.beta);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(acc[i][v], alpha, beta);
    return;
  }
  case Kind::Add:
    return applyBinary<Kind::Add>(g, op, acc, row, col, last);
  case Kind::Sub:
    return applyBinary<Kind::Sub>(g, op, acc, row, col, last);
  case Kind::Mul:
    return applyBinary<Kind::Mul>(g, op, acc, row, col, last);
  case Kind::Div:
    return applyBinary<Kind::Div>(g, op, acc, row, col, last);
  }
}

/// Rows [row, row + MR) x columns [col, col + 16 * NV) of C (the last vector
/// holding `lastCols` columns) from panel `bp`, whose rows are `width`
/// floats apart (the last panel of a product may need fewer than
/// width / 16 vectors); prefetches the `pfLines` cache lines from `pf` (a
/// share of the next panel) on the way.
template <int MR, int NV>
CGC_SGEMM_TARGET void tile(const Args &g, const SgemmOp *ops, size_t opCount, int64_t k,
                            int64_t row, int64_t col, const float *bp, int64_t width,
                            int lastCols, const char *pf, int64_t pfLines) {
  __m512 acc[MR][NV];
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_setzero_ps();
  const float *a = g.a + row * g.lda;
  {
    // The next tile's lines of C, for writing: a result that is not in
    // cache (most are: a model's activations and weights pass through L3
    // between two uses) otherwise stalls the stores on their reads for
    // ownership (MobileNetV2 24->144 @56 at 2 threads: 256 -> 178 us).
    // After the last tile these addresses lie past C: prefetches are hints
    // and never fault.
    const float *next = g.c + (row + MR) * g.ldc + col;
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        __builtin_prefetch(next + i * g.ldc + 16 * v, 1, 3);
    // And the rows of full operands (a residual) it will read.
    for (size_t o = 0; o < opCount; ++o) {
      const SgemmOp &op = ops[o];
      if (!op.binary() || op.rowStride == 0 || op.colStride == 0)
        continue;
      const float *y = g.operands[op.operand] + (row + MR) * op.rowStride + col;
#pragma clang loop unroll(full)
      for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
        for (int v = 0; v < NV; ++v)
          __builtin_prefetch(y + i * op.rowStride + 16 * v, 0, 3);
    }
  }
  for (int64_t p = 0; p < k; ++p, bp += width) {
    if (p < pfLines)
      _mm_prefetch(pf + 64 * p, _MM_HINT_T0);
    __m512 b[NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      b[v] = _mm512_load_ps(bp + 16 * v);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i) {
      const __m512 x = _mm512_set1_ps(a[i * g.lda + p]);
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(x, b[v], acc[i][v]);
    }
  }
  const __mmask16 last = __mmask16((1u << lastCols) - 1);
  for (size_t o = 0; o < opCount; ++o)
    applyOp<MR, NV>(g, ops[o], acc, row, col, last);
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    float *c = g.c + (row + i) * g.ldc + col;
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) {
      if (v == NV - 1 && lastCols != 16)
        _mm512_mask_storeu_ps(c + 16 * v, last, acc[i][v]);
      else
        _mm512_storeu_ps(c + 16 * v, acc[i][v]);
    }
  }
}

using TileFn = void (*)(const Args &, const SgemmOp *, size_t, int64_t, int64_t, int64_t,
                        const float *, int64_t, int, const char *, int64_t);

/// tile<MR, NV>, for pickTile.
template <int MR, int NV> struct TilePick {
  static constexpr TileFn value = &tile<MR, NV>;
};

TileFn tileFn(int64_t rows, int64_t vectors) { return pickTile<TileFn, TilePick>(rows, vectors); }

/// The tile (in vectors of 16 columns; 24 / vectors rows) whose padding of
/// the `m` x `n` result is least, the wider on a tie (a wider tile loads
/// fewer A values per FMA: 6x64 10 loads per 24 FMAs, 24x16 25). BERT's
/// 128 rows take 8x48 (6x64 would leave a 2-row tile); its N of 768 / 3072
/// fits both. 24x16 only while its 24 rows of A fit in 32 KB (K <= 341):
/// beyond, each of its many 16-column panels streams all of A from L2
/// again, and EfficientNet-B0's 196-row 480->80, 480->112 and 672->112
/// convolutions ran 9-12% faster on 8x48 / 6x64 despite their padding
/// (alternating runs, per-step profile).
int64_t vectorsFor(int64_t m, int64_t k, int64_t n) {
  int64_t best = 4, bestArea = -1;
  for (int64_t v = 4; v >= 1; --v) {
    const int64_t width = 16 * v, rows = 24 / v;
    if (v == 1 && rows * k * int64_t(sizeof(float)) > (32 << 10))
      continue;
    const int64_t area = (m + rows - 1) / rows * rows * ((n + width - 1) / width * width);
    if (bestArea < 0 || area < bestArea) {
      best = v;
      bestArea = area;
    }
  }
  return best;
}

} // namespace

bool PackedSgemm::available() {
  static const bool enabled = cpuHasAvx512() && kernelChoiceOn("CGC_REFERENCE_PACKED_GEMM");
  return enabled;
}

PackedSgemm::PackedSgemm(int64_t m, int64_t k, int64_t n, std::vector<SgemmOp> ops)
    : k_(k), n_(n), vectors_(vectorsFor(m, k, n)), ops_(std::move(ops)) {}

void PackedSgemm::pack(const float *b, int64_t bk, int64_t bn, float *dst) const {
  const int64_t width = panelWidth();
  for (int64_t q = 0; q < panels(); ++q) {
    const int64_t col0 = q * width, cols = std::min(width, n_ - col0);
    float *panel = dst + q * k_ * width;
    for (int64_t p = 0; p < k_; ++p) {
      float *row = panel + p * width;
      const float *src = b + p * bk + col0 * bn;
      for (int64_t j = 0; j < cols; ++j)
        row[j] = src[j * bn];
      std::fill(row + cols, row + width, 0.0f);
    }
  }
}

void PackedSgemm::run(const Args &args, int64_t row0, int64_t row1, int64_t panel0,
                      int64_t panel1) const {
  const int64_t width = panelWidth(), rows = tileRows();
  for (int64_t q = panel0; q < panel1; ++q) {
    const int64_t col = q * width, cols = std::min(width, n_ - col);
    const int64_t vectors = (cols + 15) / 16;
    const int lastCols = int(cols - 16 * (vectors - 1));
    const float *bp = args.b + q * k_ * width;
    // The next panel comes from memory while this one is computed: tiles
    // prefetch shares of it (B is read once per run, usually from DRAM:
    // BERT's weights are 340 MB; 128x768x768 195 -> 207 GFLOP/s measured).
    const char *next = q + 1 < panel1 ? reinterpret_cast<const char *>(bp + k_ * width) : nullptr;
    const int64_t lines = next ? k_ * width / 16 : 0;
    const int64_t tiles = (row1 - row0 + rows - 1) / rows;
    // The first half of the tiles share the prefetches, so the next panel
    // is in before this one ends. 128x768x768 with its B streaming from
    // DRAM (40 copies), 5 alternating runs: 198-207 GFLOP/s with every tile
    // taking a share, 206-211 with the first half; BERT at 2 threads
    // 61.8-62.7 -> 60.1-60.9 ms (at 1 thread within the noise). A distance
    // of two panels ran 186-197.
    const int64_t sharing = std::max<int64_t>(1, tiles / 2);
    const int64_t share = (lines + sharing - 1) / sharing;
    const TileFn full = tileFn(rows, vectors); // the last panel may have fewer

    int64_t row = row0;
    for (int64_t t = 0; row < row1; row += rows, ++t) {
      const int64_t from = std::min(lines, t * share);
      const int64_t count = std::min(lines, from + share) - from;
      const char *pf = next ? next + 64 * from : nullptr;
      const TileFn fn = row + rows <= row1 ? full : tileFn(row1 - row, vectors);
      fn(args, ops_.data(), ops_.size(), k_, row, col, bp, width, lastCols, pf, count);
    }
  }
}

void PackedSgemm::runAll(const Args &args, int64_t rows, ThreadPool &pool, int64_t rowUnit,
                         RowsDone done) const {
  const int64_t threads = pool.size();
  const double flops = 2.0 * double(rows) * double(k_) * double(n_);
  const int64_t units = rowUnit > 0 ? rows / rowUnit : 0;
  // Row pieces whole units, and even (<= 10% over an even share: 7 rows in
  // 2 are not); else panels when A is the smaller operand; else row tiles.
  // A few microseconds of work is not split: that costs more than it saves.
  enum { Whole, Units, Panels, Tiles } how = Whole;
  if (threads > 1 && flops >= 4e6) {
    if (units >= threads && (units + threads - 1) / threads * threads * 10 <= units * 11)
      how = Units;
    else if ((rowUnit > 0 || rows <= n_) && panels() >= threads)
      how = Panels;
    else
      how = Tiles;
  }
  const int64_t tileRows = this->tileRows();
  // Rows [r0, r1) whole, then handed to `done` in blocks while in cache.
  auto rowRange = [&](int64_t r0, int64_t r1) {
    if (!done) {
      run(args, r0, r1, 0, panels());
      return;
    }
    const int64_t block = std::max<int64_t>(1, kDoneRows / tileRows) * tileRows;
    for (int64_t r = r0; r < r1; r += block) {
      const int64_t e = std::min(r1, r + block);
      run(args, r, e, 0, panels());
      (*done)(r, e);
    }
  };
  const int64_t tiles = (rows + tileRows - 1) / tileRows;
  switch (how) {
  case Whole:
    rowRange(0, rows);
    return;
  case Units:
    pool.run(size_t(threads), [&](size_t i) {
      int64_t begin, end;
      evenSplit(units, threads, int64_t(i), begin, end);
      rowRange(begin * rowUnit, i + 1 == size_t(threads) ? rows : end * rowUnit);
    });
    return;
  case Tiles: {
    const int64_t pieces = std::min(threads, tiles);
    pool.run(size_t(pieces), [&](size_t i) {
      int64_t begin, end;
      evenSplit(tiles, pieces, int64_t(i), begin, end);
      rowRange(begin * tileRows, std::min(rows, end * tileRows));
    });
    return;
  }
  case Panels:
    pool.run(size_t(threads), [&](size_t i) {
      int64_t begin, end;
      evenSplit(panels(), threads, int64_t(i), begin, end);
      run(args, 0, rows, begin, end);
    });
    if (done)
      pool.run(size_t(threads), [&](size_t i) {
        int64_t begin, end;
        evenSplit(tiles, threads, int64_t(i), begin, end);
        if (begin < end)
          (*done)(begin * tileRows, std::min(rows, end * tileRows));
      });
    return;
  }
}

} // namespace cgc::ref
