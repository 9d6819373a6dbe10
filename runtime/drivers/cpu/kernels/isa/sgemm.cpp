//===- sgemm.cpp - A register-blocked float32 GEMM for AVX-512 ------------===//

#include "sgemm.h"

#include "sgemm_tile.h"
#include "tile_table.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

namespace cgc::cpu {

namespace {

using namespace tile_detail;

/// Rows [row, row + MR) x columns [col, col + 16 * NV) of C (the last vector
/// holding `lastCols` columns) from panel `bp`, whose rows are `width`
/// floats apart (the last panel of a product may need fewer than
/// width / 16 vectors); prefetches the `pfLines` cache lines from `pf` (a
/// share of the next panel) on the way.
/// Prefetches the lines of C that the next tile down (rows [row + MR, row +
/// 2 MR) x NV vectors from `col`) writes, for writing: a result that is not
/// in cache (most are: a model's activations and weights pass through L3
/// between two uses) otherwise stalls the stores on their reads for
/// ownership (MobileNetV2 24->144 @56 at 2 threads: 256 -> 178 us). And the
/// rows of full operands (a residual) it will read. After the last tile
/// these addresses lie past C: prefetches are hints and never fault.
template <int MR, int NV>
CGC_SGEMM_INLINE void prefetchNextTile(const Args &g, const SgemmOp *ops, size_t opCount,
                                       int64_t row, int64_t col) {
  const float *next = g.c + (row + MR) * g.ldc + col;
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      __builtin_prefetch(next + i * g.ldc + 16 * v, 1, 3);
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

template <int MR, int NV>
CGC_SGEMM_TARGET void tile(const Args &g, const SgemmOp *ops, size_t opCount, int64_t k,
                            int64_t row, int64_t col, const float *bp, int64_t width,
                            int lastCols, const char *pf, int64_t pfLines) {
  prefetchNextTile<MR, NV>(g, ops, opCount, row, col);
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

/// Pair row `p` of the panel `bp` into the accumulators: each row's
/// (A(i, 2 p), A(i, 2 p + 1)) broadcast as a 64-bit pair if `Both`, else
/// A(i, 2 p) alone (the last row of an odd K).
template <int MR, int NV, bool Both>
CGC_SGEMM_INLINE void pairStep(__m512 (&acc)[MR][NV], const float *a, int64_t lda,
                               const float *bp, int64_t p) {
  __m512 b[NV];
#pragma clang loop unroll(full)
  for (int v = 0; v < NV; ++v)
    b[v] = _mm512_load_ps(bp + (p * NV + v) * 16);
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    const float *x = a + i * lda + 2 * p;
    __m512 xs;
    if constexpr (Both) {
      double d;
      __builtin_memcpy(&d, x, sizeof d);
      xs = _mm512_castpd_ps(_mm512_set1_pd(d));
    } else {
      xs = _mm512_set1_ps(*x);
    }
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_fmadd_ps(xs, b[v], acc[i][v]);
  }
}

/// Rows [row, row + MR) of C, all N = 8 NV columns, from a panel packed
/// with K in pairs (PackedSgemm::kPairs): accumulator v of a row holds
/// columns [8 v, 8 v + 8), lane 2 j + e the sum over the k of parity e for
/// column 8 v + j. A row of A feeds it by 64-bit broadcasts of (A(i, 2 p),
/// A(i, 2 p + 1)); an odd K ends with a broadcast of the last A alone (the
/// packed row pairs it with zeros). The lane pairs are then added into
/// ceil(NV / 2) vectors of 16 columns for the epilogue and the store.
template <int MR, int NV>
CGC_SGEMM_TARGET void pairTile(const Args &g, const SgemmOp *ops, size_t opCount, int64_t k,
                               int64_t row, const float *bp) {
  constexpr int NO = (NV + 1) / 2;
  prefetchNextTile<MR, NO>(g, ops, opCount, row, 0);
  __m512 acc[MR][NV];
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_setzero_ps();
  const float *a = g.a + row * g.lda;
  const int64_t pairs = k / 2;
  for (int64_t p = 0; p < pairs; ++p)
    pairStep<MR, NV, true>(acc, a, g.lda, bp, p);
  if (k % 2)
    pairStep<MR, NV, false>(acc, a, g.lda, bp, pairs);
  // Even lanes of (x, y), then odd lanes: the two parities of 16 columns.
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29,
                                        31);
  __m512 out[MR][NO];
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
    for (int w = 0; w < NO; ++w) {
      const __m512 x = acc[i][2 * w], y = 2 * w + 1 < NV ? acc[i][2 * w + 1] : x;
      out[i][w] = _mm512_add_ps(_mm512_permutex2var_ps(x, even, y),
                                _mm512_permutex2var_ps(x, odd, y));
    }
  finishTile<MR, NO>(g, ops, opCount, out, row, 0, NV % 2 ? 8 : 16);
}

using PairTileFn = void (*)(const Args &, const SgemmOp *, size_t, int64_t, int64_t,
                            const float *);

/// pairTile<MR, NV>, for pickTileOf.
template <int MR, int NV> struct PairTilePick {
  static constexpr PairTileFn value = &pairTile<MR, NV>;
};

/// The tiles K in pairs uses: N / 8 vectors (1, 2, 3, 5 or 7), up to
/// 24 / vectors rows.
PairTileFn pairTileFn(int64_t rows, int64_t vectors) {
  const PairTileFn fn = pickTileOf<PairTileFn, PairTilePick, 1, 2, 3, 5, 7>(rows, vectors);
  assert(fn && "K in pairs for N of 8, 16, 24, 40 or 56");
  return fn;
}

/// True for the N that K in pairs runs (one panel of all N) and fills
/// better than 16-column vectors: 16 (half the A loads per FMA: 24x16
/// tiles load 25 values per 24 FMAs) and odd multiples of 8 up to 56 (no
/// half-empty last vector). Measured at 1 thread (M = 240, A in cache):
/// N = 24 1.33x (176 -> 233 GFLOP/s), N = 16 1.06-1.09x; N = 32 and 48
/// even.
bool pairsSuit(int64_t n) { return n == 8 || n == 16 || n == 24 || n == 40 || n == 56; }

/// Rows per tile for `m` rows on tiles of at most `maxRows`: the fewest
/// tiles, the rows spread evenly over them (49 rows on tiles of up to 8:
/// seven of 7, not six of 8 and one of 1). With
/// CGC_CPU_GEMM_BALANCED_ROWS=0, `maxRows` (a tail tile for the rest).
int64_t rowsPerTile(int64_t m, int64_t maxRows) {
  if (!activeConfig().gemmBalancedRows)
    return maxRows;
  const int64_t tiles = (std::max<int64_t>(1, m) + maxRows - 1) / maxRows;
  return (std::max<int64_t>(1, m) + tiles - 1) / tiles;
}

struct TileShape {
  int64_t vectors, rows;
};

/// The tile (vectors of 16 columns, up to 24 / vectors rows, rowsPerTile
/// of `m`) whose padding of the `m` x `n` result is least, the wider on a
/// tie (a wider tile loads fewer A values per FMA: 6x64 10 loads per 24
/// FMAs, 24x16 25). BERT's 128 rows take 8x48 (6x64 would pad them to
/// 132); its N of 768 / 3072 fits both. A 7x7 plane's 49 rows take 7x48
/// (320->1280) or 10x32 (960->160) where the tiles of 24 accumulators
/// padded them to 54 or 60. 24x16 only while its 24 rows of A fit in
/// 32 KB (K <= 341): beyond, each of its many 16-column panels streams all
/// of A from L2 again, and EfficientNet-B0's 196-row 480->80, 480->112 and
/// 672->112 convolutions ran 9-12% faster on 8x48 / 6x64 despite their
/// padding (alternating runs, per-step profile). In MobileNetV2's 7x7
/// stage the balanced tiles measured within the noise of the padded ones.
TileShape tileFor(int64_t m, int64_t k, int64_t n) {
  TileShape best{4, 6};
  int64_t bestArea = -1;
  for (int64_t v = 4; v >= 1; --v) {
    const int64_t width = 16 * v, maxRows = 24 / v;
    if (v == 1 && maxRows * k * int64_t(sizeof(float)) > (32 << 10))
      continue;
    const int64_t rows = rowsPerTile(m, maxRows);
    int64_t area = (m + rows - 1) / rows * rows * ((n + width - 1) / width * width);
    // A 16-wide tile loads about one A value per FMA: ~10% slower per FMA
    // than the wider ones (N = 16 at 1 thread: 215 against 233 GFLOP/s).
    if (v == 1)
      area += area / 10;
    if (bestArea < 0 || area < bestArea) {
      best = {v, rows};
      bestArea = area;
    }
  }
  return best;
}

} // namespace

bool PackedSgemm::available() {
  return cpuHasAvx512() && activeConfig().packedGemm;
}

PackedSgemm::Algorithm PackedSgemm::algorithmFor(int64_t m, int64_t k, int64_t n) {
  const bool enabled = activeConfig().strassen;
  const bool suits = k % 2 == 0 && n % 2 == 0 && k >= 512 && n >= 512 && m >= 64;
  return enabled && suits ? Algorithm::Strassen : Algorithm::Classic;
}

PackedSgemm::PackedSgemm(int64_t m, int64_t k, int64_t n, std::vector<SgemmOp> ops,
                         Algorithm algorithm, Layout layout)
    : k_(k), n_(n), ops_(std::move(ops)), algorithm_(algorithm),
      rowBlocks_(activeConfig().gemmRowBlocks) {
  assert((algorithm == Algorithm::Classic || (k % 2 == 0 && n % 2 == 0)) &&
         "Strassen needs an even K and N");
  for (size_t o = 0; o + 1 < ops_.size(); ++o)
    if (ops_[o].kind == SgemmOp::Kind::ErfGelu)
      fail("internal error: a packed GEMM's erf_gelu must be its last epilogue op");
  const TileShape shape = algorithm == Algorithm::Classic
                              ? tileFor(m, k, n)
                              : tileFor((std::min(m, kStrassenRows) + 1) / 2, k / 2, n / 2);
  vectors_ = shape.vectors;
  rows_ = shape.rows;
  const bool pairsOn = activeConfig().gemmKPairs;
  if (algorithm == Algorithm::Classic && layout == Layout::Any && pairsOn && pairsSuit(n)) {
    pairs_ = true;
    vectors_ = n / 8;
    rows_ = rowsPerTile(m, 24 / vectors_);
  }
}

std::string PackedSgemm::tileText() const {
  return cat(tileRows(), "x", panelWidth(), " register tiles", pairs_ ? " with K in pairs" : "");
}

int64_t PackedSgemm::panels() const {
  if (pairs_)
    return 1;
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

void PackedSgemm::packRows(const float *b, int64_t bk, int64_t bn, int64_t row0, int64_t rows,
                           float *dst) const {
  assert(algorithm_ == Algorithm::Classic && row0 >= 0 && row0 + rows <= k_);
  if (!pairs_) {
    const int64_t width = panelWidth();
    packPanels(b, bk, bn, rows, n_, dst + row0 * width, k_ * width);
    return;
  }
  // Row p of pairs: vector v, lane 2 j + e = B(2 p + e, 8 v + j) (zero
  // past K).
  assert(row0 % 2 == 0 && (rows % 2 == 0 || row0 + rows == k_));
  for (int64_t p = row0 / 2; p < (row0 + rows + 1) / 2; ++p)
    for (int64_t v = 0; v < vectors_; ++v)
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t e = 0; e < 2; ++e) {
          const int64_t row = 2 * p + e;
          dst[(p * vectors_ + v) * 16 + 2 * j + e] =
              row < k_ ? b[(row - row0) * bk + (8 * v + j) * bn] : 0.0f;
        }
}

void PackedSgemm::pack(const float *b, int64_t bk, int64_t bn, float *dst) const {
  const int64_t width = panelWidth();
  if (algorithm_ == Algorithm::Classic) {
    packRows(b, bk, bn, 0, k_, dst);
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

void PackedSgemm::runPairs(const Args &args, int64_t row0, int64_t row1) const {
  const int64_t rows = tileRows();
  const PairTileFn full = pairTileFn(rows, vectors_);
  for (int64_t row = row0; row < row1; row += rows) {
    const PairTileFn fn = row + rows <= row1 ? full : pairTileFn(row1 - row, vectors_);
    fn(args, ops_.data(), ops_.size(), k_, row, args.b);
  }
}

void PackedSgemm::run(const Args &args, int64_t row0, int64_t row1, int64_t panel0,
                      int64_t panel1) const {
  assert(algorithm_ == Algorithm::Classic && "a Strassen product runs whole (runAll)");
  if (pairs_) {
    if (panel0 < panel1)
      runPairs(args, row0, row1);
    return;
  }
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

int64_t PackedSgemm::rowBlock(int64_t rows) const {
  if (!rowBlocks_ || pairs_ || algorithm_ != Algorithm::Classic)
    return rows;
  const int64_t aBytes = rows * k_ * int64_t(sizeof(float)),
                bBytes = int64_t(packedBytes());
  if (aBytes < 4 * bBytes || bBytes > kRowBlockB)
    return rows;
  const int64_t fit = kRowBlockA / (k_ * int64_t(sizeof(float))) / tileRows();
  return std::max<int64_t>(4, fit) * tileRows();
}

void PackedSgemm::runRows(const Args &args, int64_t r0, int64_t r1, RowsDone done) const {
  if (!done) {
    const int64_t block = rowBlock(r1 - r0);
    for (int64_t r = r0; r < r1; r += block)
      run(args, r, std::min(r1, r + block), 0, panels());
    return;
  }
  const int64_t block = std::max<int64_t>(1, kDoneRows / tileRows()) * tileRows();
  for (int64_t r = r0; r < r1; r += block) {
    const int64_t e = std::min(r1, r + block);
    run(args, r, e, 0, panels());
    (*done)(r, e);
  }
}

int64_t PackedSgemm::panelBoundary(int64_t share, int64_t shares) const {
  if (share <= 0)
    return 0;
  if (share >= shares)
    return panels();
  // The panel boundary nearest to an even share of the columns: the last
  // panel may be narrower, so equal panel counts are not equal work (400
  // columns in 48-wide panels split 5 / 4 gave 240 / 160 columns; 4 / 5
  // gives 192 / 208).
  const double target = double(n_) * double(share) / double(shares);
  const int64_t p = int64_t(target / double(panelWidth()) + 0.5);
  return std::clamp<int64_t>(p, 0, panels());
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
      run(args, 0, rows, panelBoundary(int64_t(i), threads),
          panelBoundary(int64_t(i) + 1, threads));
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

} // namespace cgc::cpu
