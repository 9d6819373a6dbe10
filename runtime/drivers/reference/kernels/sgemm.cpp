//===- sgemm.cpp - A register-blocked float32 GEMM for AVX-512 ------------===//

#include "sgemm.h"

#include "sgemm_tile.h"
#include "tile_table.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <array>
#include <string>
#include <utility>

namespace cgc::ref {
namespace {

using namespace tile_detail;

/// Rows [row, row + MR) x columns [col, col + 16 * NV) of C (the last vector
/// holding `lastCols` columns) from panel `bp`, whose rows are `width`
/// floats apart (the last panel of a product may need fewer than
/// width / 16 vectors); prefetches the `pfLines` cache lines from `pf` (a
/// share of the next panel) on the way.
template <int MR, int NV>
CGC_SGEMM_TARGET void tile(const Args &g, const SgemmOp *ops, size_t opCount, int64_t k,
                            int64_t row, int64_t col, const float *bp, int64_t width,
                            int lastCols, const char *pf, int64_t pfLines) {
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
  __m512 acc[MR][NV];
  accumulate<MR, NV>(acc, g.a + row * g.lda, g.lda, PackedRows{bp, width}, k, pf, pfLines);
  finishTile<MR, NV>(g, ops, opCount, acc, row, col, lastCols);
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

PackedSgemm::Algorithm PackedSgemm::algorithmFor(int64_t m, int64_t k, int64_t n) {
  static const bool enabled = kernelChoiceOn("CGC_REFERENCE_STRASSEN");
  const bool suits = k % 2 == 0 && n % 2 == 0 && k >= 512 && n >= 512 && m >= 64;
  return enabled && suits ? Algorithm::Strassen : Algorithm::Classic;
}

PackedSgemm::PackedSgemm(int64_t m, int64_t k, int64_t n, std::vector<SgemmOp> ops,
                         Algorithm algorithm)
    : k_(k), n_(n),
      vectors_(algorithm == Algorithm::Classic
                   ? vectorsFor(m, k, n)
                   : vectorsFor((std::min(m, kStrassenRows) + 1) / 2, k / 2, n / 2)),
      ops_(std::move(ops)), algorithm_(algorithm) {
  assert((algorithm == Algorithm::Classic || (k % 2 == 0 && n % 2 == 0)) &&
         "Strassen needs an even K and N");
}

int64_t PackedSgemm::panels() const {
  const int64_t n = algorithm_ == Algorithm::Classic ? n_ : n_ / 2;
  return (n + panelWidth() - 1) / panelWidth();
}

void PackedSgemm::packPanels(const float *b, int64_t bk, int64_t bn, int64_t k, int64_t n,
                             float *dst, int64_t panelStride) const {
  const int64_t width = panelWidth();
  for (int64_t q = 0; q * width < n; ++q) {
    const int64_t col0 = q * width, cols = std::min(width, n - col0);
    float *panel = dst + q * panelStride;
    for (int64_t p = 0; p < k; ++p) {
      float *row = panel + p * width;
      const float *src = b + p * bk + col0 * bn;
      for (int64_t j = 0; j < cols; ++j)
        row[j] = src[j * bn];
      std::fill(row + cols, row + width, 0.0f);
    }
  }
}

void PackedSgemm::pack(const float *b, int64_t bk, int64_t bn, float *dst) const {
  const int64_t width = panelWidth();
  if (algorithm_ == Algorithm::Classic) {
    packPanels(b, bk, bn, k_, n_, dst, k_ * width);
    return;
  }
  // Panel q holds, for its columns [q * width, (q + 1) * width) of each
  // half, B11, T2, B21 and B22 (K / 2 rows each, adjacent: one Strassen
  // panel step reads all four). T2 = B22 - B12 + B11 takes B12's place: no
  // product multiplies by B12, and the three other sums Strassen needs are
  // one subtraction from these (strassen.cpp). It is rounded once, from
  // double.
  const int64_t hk = k_ / 2, hn = n_ / 2;
  std::vector<float> t2(size_t(hk * hn));
  for (int64_t p = 0; p < hk; ++p)
    for (int64_t j = 0; j < hn; ++j) {
      auto at = [&](int64_t r, int64_t s) {
        return double(b[(r * hk + p) * bk + (s * hn + j) * bn]);
      };
      t2[size_t(p * hn + j)] = float(at(1, 1) - at(0, 1) + at(0, 0));
    }
  const float *quarters[4] = {b, t2.data(), b + hk * bk, b + hk * bk + hn * bn};
  const int64_t rowStride[4] = {bk, hn, bk, bk}, colStride[4] = {bn, 1, bn, bn};
  for (int64_t i = 0; i < 4; ++i)
    packPanels(quarters[i], rowStride[i], colStride[i], hk, hn, dst + i * hk * width,
               panelFloats());
}

void PackedSgemm::run(const Args &args, int64_t row0, int64_t row1, int64_t panel0,
                      int64_t panel1) const {
  assert(algorithm_ == Algorithm::Classic && "a Strassen product runs whole (runAll)");
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

void PackedSgemm::runRows(const Args &args, int64_t r0, int64_t r1, RowsDone done) const {
  if (!done) {
    run(args, r0, r1, 0, panels());
    return;
  }
  const int64_t block = std::max<int64_t>(1, kDoneRows / tileRows()) * tileRows();
  for (int64_t r = r0; r < r1; r += block) {
    const int64_t e = std::min(r1, r + block);
    run(args, r, e, 0, panels());
    (*done)(r, e);
  }
}

void PackedSgemm::runAll(const Args &args, int64_t rows, ThreadPool &pool, int64_t rowUnit,
                         RowsDone done) const {
  if (algorithm_ == Algorithm::Strassen) {
    runStrassen(args, rows, pool, done);
    return;
  }
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
  auto rowRange = [&](int64_t r0, int64_t r1) { runRows(args, r0, r1, done); };
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
