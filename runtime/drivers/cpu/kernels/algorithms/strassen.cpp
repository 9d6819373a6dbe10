//===- strassen.cpp - One level of Strassen-Winograd on the packed GEMM ---===//
//
// C = A x B for a block of rows, with A split into row halves and K halves
// and B into K and N halves (Winograd's variant of Strassen):
//
//   S1 = A21 + A22   S2 = S1 - A11   S3 = A11 - A21   S4 = A12 - S2
//   T1 = B12 - B11   T2 = B22 - T1   T3 = B22 - B12   T4 = T2 - B21
//   P1 = A11 B11  P2 = A12 B21  P3 = S4 B22  P4 = A22 T4
//   P5 = S1 T1    P6 = S2 T2    P7 = S3 T3
//   C11 = P1 + P2          C12 = P1 + P6 + P5 + P3
//   C21 = P1 + P6 + P7 - P4  C22 = P1 + P6 + P7 + P5
//
// B is packed as B11, T2, B21, B22 (pack(): T2 in place of B12, which no
// product needs), so the packed weights take no more memory than the
// classic product's. The other T are one subtraction from these
// (T1 = B22 - T2, T3 = T2 - B11, T4 = T2 - B21), formed per panel by the
// first row tile of their product while it runs. The S are formed once per
// block of rows (a few hundred KB, in L2). Each product's register tile
// adds into the four quarters' running sums for its rows (a thread's
// scratch, in L1/L2); the last product of a quarter applies the epilogue
// and stores it to C, so every element of C is written once.
//
//===----------------------------------------------------------------------===//

#include "sgemm.h"

#include "sgemm_tile.h"
#include "tile_table.h"

#include <immintrin.h>

#include <algorithm>
#include <array>

namespace cgc::cpu {
namespace {

using namespace tile_detail;

/// The A operands of the seven products: A11, A12 in place; the rest in the
/// block's scratch.
enum AOperand { kA11, kA12, kA22, kS1, kS2, kS3, kS4, kAOperands };
/// The B operands: four packed (B11, T2, B21, B22), three formed per panel.
enum BOperand { kB11, kB21, kB22, kT1, kT2, kT3, kT4 };

/// What a product does to a quarter of C (C11, C12, C21, C22).
enum Effect : int8_t { kNone, kSet, kAdd, kSub };

struct Step {
  AOperand a;
  BOperand b;
  std::array<Effect, 4> effect;
  /// The quarters this product completes.
  std::array<bool, 4> last;
};

/// The products in the order they run: each quarter is complete after its
/// last one.
constexpr std::array<Step, 7> kSteps = {{
    {kA11, kB11, {kSet, kSet, kSet, kSet}, {false, false, false, false}}, // P1
    {kS2, kT2, {kNone, kAdd, kAdd, kAdd}, {false, false, false, false}},  // P6
    {kS1, kT1, {kNone, kAdd, kNone, kAdd}, {false, false, false, false}}, // P5
    {kA12, kB21, {kAdd, kNone, kNone, kNone}, {true, false, false, false}}, // P2
    {kS4, kB22, {kNone, kAdd, kNone, kNone}, {false, true, false, false}},  // P3
    {kS3, kT3, {kNone, kNone, kAdd, kAdd}, {false, false, false, true}},    // P7
    {kA22, kT4, {kNone, kNone, kSub, kNone}, {false, false, true, false}},  // P4
}};

/// Where one tile's product goes.
struct TileTarget {
  const Step *step;
  /// The four quarters' running sums for this tile's rows: `width` floats
  /// per row.
  float *sums[4];
  /// C's coordinates of the tile's first element in each quarter.
  int64_t row[4], col[4];
  /// Rows of the tile that exist in the top and the bottom half (the bottom
  /// half of an odd block has one row fewer).
  int topRows, bottomRows;
  /// Set on the first row tile of a product by a formed T: the tile forms
  /// the panel it multiplies by, form[0] - form[1], into `formed` (where
  /// the other row tiles read it).
  const float *form[2] = {nullptr, nullptr};
  float *formed = nullptr;
};

/// Panel rows for accumulate() on the first row tile of a product by a
/// formed panel: row p is formed (x - y), stored to `dst` for the other row
/// tiles and used at once. Forming the panels in a pass of their own cost
/// ~10% of the Strassen product (BERT's 128x768x768); here the sources are
/// read while the FMAs run.
struct FormedRows {
  const float *x, *y;
  float *dst;
  int64_t width;
  template <int NV> CGC_SGEMM_INLINE void load(int64_t p, __m512 (&b)[NV]) const {
    const int64_t o = p * width;
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) {
      b[v] = _mm512_sub_ps(_mm512_load_ps(x + o + 16 * v), _mm512_load_ps(y + o + 16 * v));
      _mm512_store_ps(dst + o + 16 * v, b[v]);
    }
  }
};

/// One product tile: MR rows of the A operand at `a` times the panel at
/// `bp`, over the half K `k`, added into the quarters `t` names; a quarter
/// completed here gets the epilogue and goes to C.
template <int MR, int NV>
CGC_SGEMM_TARGET void strassenTile(const Args &g, const SgemmOp *ops, size_t opCount,
                                   const float *a, int64_t lda, const float *bp, int64_t width,
                                   int64_t k, int lastCols, const char *pf, int64_t pfLines,
                                   const TileTarget &t) {
  __m512 acc[MR][NV];
  if (!t.form[0])
    accumulate<MR, NV>(acc, a, lda, PackedRows{bp, width}, k, pf, pfLines);
  else
    accumulate<MR, NV>(acc, a, lda, FormedRows{t.form[0], t.form[1], t.formed, width}, k, pf,
                       pfLines);
  for (int q = 0; q < 4; ++q) {
    const Effect effect = t.step->effect[size_t(q)];
    if (effect == kNone)
      continue;
    float *sums = t.sums[q];
    const int rows = q < 2 ? t.topRows : t.bottomRows;
    const bool last = t.step->last[size_t(q)];
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i) {
      if (i < rows) {
        float *s = sums + i * width;
        __m512 x[1][NV];
#pragma clang loop unroll(full)
        for (int v = 0; v < NV; ++v) {
          if (effect == kSet)
            x[0][v] = acc[i][v];
          else if (effect == kAdd)
            x[0][v] = _mm512_add_ps(_mm512_load_ps(s + 16 * v), acc[i][v]);
          else
            x[0][v] = _mm512_sub_ps(_mm512_load_ps(s + 16 * v), acc[i][v]);
        }
        if (last) {
          finishTile<1, NV>(g, ops, opCount, x, t.row[q] + i, t.col[q], lastCols);
        } else {
#pragma clang loop unroll(full)
          for (int v = 0; v < NV; ++v)
            _mm512_store_ps(s + 16 * v, x[0][v]);
        }
      }
    }
  }
}

using StrassenTileFn = void (*)(const Args &, const SgemmOp *, size_t, const float *, int64_t,
                                const float *, int64_t, int64_t, int, const char *, int64_t,
                                const TileTarget &);

template <int MR, int NV> struct StrassenTilePick {
  static constexpr StrassenTileFn value = &strassenTile<MR, NV>;
};

/// The operands of the seven products for one block of rows: A11, A12 and
/// (for an even block) A22 in place; S1..S4 and (for an odd block) A22
/// padded with a zero row in the block's scratch, `half` rows of `hk`
/// floats each.
struct BlockOperands {
  const float *base[kAOperands];
  int64_t stride[kAOperands];
};

/// Forms rows [i0, i1) of the scratch operands (S1..S4, then A22 when
/// `scratch[4]` is set) of a block whose rows start at `a` (row stride
/// lda): the top half has `half` rows, the bottom `bottom` (half or
/// half - 1; the missing row is zeros).
CGC_SGEMM_TARGET void formRows(const float *a, int64_t lda, int64_t half, int64_t bottom,
                               int64_t hk, float *const scratch[4 + 1], int64_t i0, int64_t i1) {
  float *s1 = scratch[0], *s2 = scratch[1], *s3 = scratch[2], *s4 = scratch[3],
        *a22 = scratch[4];
  for (int64_t i = i0; i < i1; ++i) {
    const float *a11 = a + i * lda, *a12 = a11 + hk;
    const bool exists = i < bottom;
    const float *a21 = a + (half + i) * lda, *a22In = a21 + hk;
    const int64_t o = i * hk;
    int64_t p = 0;
    for (; p + 16 <= hk; p += 16) {
      const __m512 x11 = _mm512_loadu_ps(a11 + p), x12 = _mm512_loadu_ps(a12 + p);
      const __m512 x21 = exists ? _mm512_loadu_ps(a21 + p) : _mm512_setzero_ps();
      const __m512 x22 = exists ? _mm512_loadu_ps(a22In + p) : _mm512_setzero_ps();
      const __m512 y1 = _mm512_add_ps(x21, x22), y2 = _mm512_sub_ps(y1, x11);
      if (a22)
        _mm512_storeu_ps(a22 + o + p, x22);
      _mm512_storeu_ps(s1 + o + p, y1);
      _mm512_storeu_ps(s2 + o + p, y2);
      _mm512_storeu_ps(s3 + o + p, _mm512_sub_ps(x11, x21));
      _mm512_storeu_ps(s4 + o + p, _mm512_sub_ps(x12, y2));
    }
    for (; p < hk; ++p) {
      const float x11 = a11[p], x12 = a12[p];
      const float x21 = exists ? a21[p] : 0.0f, x22 = exists ? a22In[p] : 0.0f;
      const float y1 = x21 + x22, y2 = y1 - x11;
      if (a22)
        a22[o + p] = x22;
      s1[o + p] = y1;
      s2[o + p] = y2;
      s3[o + p] = x11 - x21;
      s4[o + p] = x12 - y2;
    }
  }
}

} // namespace

void PackedSgemm::runStrassen(const Args &args, int64_t rows, ThreadPool &pool,
                              RowsDone done) const {
  const int64_t hk = k_ / 2, hn = n_ / 2;
  const int64_t width = panelWidth(), tileRows = this->tileRows(), vectors = vectors_;
  const int64_t panelCount = panels();
  const int64_t threads = std::min<int64_t>(pool.size(), panelCount);
  // The ops the tiles apply: all but a trailing erf_gelu (run per block).
  const size_t tileOps =
      ops_.size() - (!ops_.empty() && ops_.back().kind == SgemmOp::Kind::ErfGelu ? 1 : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += kStrassenRows) {
    const int64_t blockRows = std::min(kStrassenRows, rows - r0);
    const int64_t half = (blockRows + 1) / 2, bottom = blockRows - half;
    const float *a = args.a + r0 * args.lda;

    // S1..S4 (and a padded A22) for the whole block, shared by every
    // thread.
    const bool padded = bottom < half;
    Scratch operands(size_t((padded ? 5 : 4) * half * hk) * sizeof(float));
    float *const formed[5] = {operands.as<float>(), operands.as<float>() + half * hk,
                              operands.as<float>() + 2 * half * hk,
                              operands.as<float>() + 3 * half * hk,
                              padded ? operands.as<float>() + 4 * half * hk : nullptr};
    pool.parallelFor(half, std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(1, hk)),
                     [&](int64_t i0, int64_t i1) {
                       formRows(a, args.lda, half, bottom, hk, formed, i0, i1);
                     });
    BlockOperands in;
    in.base[kA11] = a;
    in.base[kA12] = a + hk;
    in.base[kA22] = padded ? formed[4] : a + half * args.lda + hk;
    in.stride[kA11] = in.stride[kA12] = args.lda;
    in.stride[kA22] = padded ? hk : args.lda;
    const AOperand scratchOrder[4] = {kS1, kS2, kS3, kS4};
    for (int j = 0; j < 4; ++j) {
      in.base[scratchOrder[j]] = formed[j];
      in.stride[scratchOrder[j]] = hk;
    }

    pool.run(size_t(threads), [&](size_t thread) {
      int64_t q0, q1;
      evenSplit(panelCount, threads, int64_t(thread), q0, q1);
      if (q0 == q1)
        return;
      // The quarters' running sums (half rows of one panel each) and the
      // formed panel of B.
      const int64_t quarterFloats = hk * width;
      Scratch scratch(size_t(4 * half * width + quarterFloats) * sizeof(float));
      float *sums = scratch.as<float>();
      float *formed = sums + 4 * half * width;
      const int64_t tiles = (half + tileRows - 1) / tileRows;
      const StrassenTileFn full = pickTile<StrassenTileFn, StrassenTilePick>(tileRows, vectors);
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t col = q * width, cols = std::min(width, hn - col);
        const int64_t panelVectors = (cols + 15) / 16;
        const int lastCols = int(cols - 16 * (panelVectors - 1));
        const StrassenTileFn fullFn =
            panelVectors == vectors ? full
                                    : pickTile<StrassenTileFn, StrassenTilePick>(tileRows,
                                                                                 panelVectors);
        const float *panel = args.b + q * panelFloats();
        const float *b11 = panel, *t2 = panel + quarterFloats, *b21 = panel + 2 * quarterFloats,
                    *b22 = panel + 3 * quarterFloats;
        // Prefetches, shared by tile products: on a thread's first panel,
        // its last three quarters during the first product (by B11; the
        // panel before it was not there to prefetch them); then the next
        // panel's four (adjacent) during the first half of the rest.
        const char *current =
            q == q0 ? reinterpret_cast<const char *>(panel + quarterFloats) : nullptr;
        const int64_t currentLines = current ? 3 * quarterFloats / 16 : 0;
        const int64_t currentShare = (currentLines + tiles - 1) / tiles;
        const char *next =
            q + 1 < q1 ? reinterpret_cast<const char *>(panel + panelFloats()) : nullptr;
        const int64_t lines = next ? panelFloats() / 16 : 0;
        const int64_t sharing = std::max<int64_t>(1, 6 * tiles / 2);
        const int64_t share = (lines + sharing - 1) / sharing;
        // Tile product `index`'s share: lines [from, from + count) of `base`.
        auto prefetchFor = [&](int64_t index, const char *&base, int64_t &count) {
          const char *region = index < tiles ? current : next;
          const int64_t total = index < tiles ? currentLines : lines;
          const int64_t each = index < tiles ? currentShare : share;
          const int64_t slot = index < tiles ? index : index - tiles;
          const int64_t from = std::min(total, slot * each);
          count = std::min(total, from + each) - from;
          base = region ? region + 64 * from : nullptr;
        };
        int64_t tileIndex = 0;
        for (const Step &step : kSteps) {
          // The panel this product multiplies by, and for a formed T the
          // two its first row tile subtracts.
          const float *bp = formed;
          std::array<const float *, 2> form = {nullptr, nullptr};
          switch (step.b) {
          case kB11:
            bp = b11;
            break;
          case kB21:
            bp = b21;
            break;
          case kB22:
            bp = b22;
            break;
          case kT2:
            bp = t2;
            break;
          case kT1: // B12 - B11 = B22 - T2
            form = {b22, t2};
            break;
          case kT3: // B22 - B12 = T2 - B11
            form = {t2, b11};
            break;
          case kT4: // T2 - B21
            form = {t2, b21};
            break;
          }
          const float *aBase = in.base[step.a];
          const int64_t lda = in.stride[step.a];
          for (int64_t t = 0; t < tiles; ++t, ++tileIndex) {
            const int64_t i = t * tileRows, count = std::min(tileRows, half - i);
            TileTarget target;
            target.step = &step;
            for (int quarter = 0; quarter < 4; ++quarter) {
              target.sums[quarter] = sums + (quarter * half + i) * width;
              target.row[quarter] = r0 + (quarter < 2 ? 0 : half) + i;
              target.col[quarter] = (quarter % 2 ? hn : 0) + col;
            }
            target.topRows = int(count);
            target.bottomRows = int(std::clamp<int64_t>(bottom - i, 0, count));
            if (t == 0 && form[0]) {
              std::copy(form.begin(), form.end(), target.form);
              target.formed = formed;
            }
            const char *pf;
            int64_t pfCount;
            prefetchFor(tileIndex, pf, pfCount);
            const StrassenTileFn fn =
                count == tileRows ? fullFn
                                  : pickTile<StrassenTileFn, StrassenTilePick>(count,
                                                                               panelVectors);
            fn(args, ops_.data(), tileOps, aBase + i * lda, lda, bp, width, hk, lastCols,
               pf, pfCount, target);
          }
        }
      }
    });
    // A trailing erf_gelu over the block's rows, now complete: the tiles
    // finish one row of a quarter at a time, and a GELU call per row
    // (erfGeluRows) cost BERT 1.7 ms per run at 1 thread.
    if (tileOps < ops_.size())
      pool.parallelFor(blockRows, 8, [&](int64_t b, int64_t e) {
        erfGeluRows(args, ops_.back(), r0 + b, 0, e - b, n_);
      });
  }
  if (!done)
    return;
  const int64_t pieces = std::min<int64_t>(pool.size(), (rows + tileRows - 1) / tileRows);
  pool.run(size_t(pieces), [&](size_t i) {
    int64_t begin, end;
    evenSplit(rows, pieces, int64_t(i), begin, end);
    if (begin < end)
      (*done)(begin, end);
  });
}

} // namespace cgc::cpu
