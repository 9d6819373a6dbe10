//===- winograd.cpp - 3x3 convolutions as Winograd products ---------------===//
//
// The transforms of F(4x4, 3x3) with the points 0, -1, 1, 1/2, -2 and
// infinity (Toom-Cook; Barabasz et al.'s better-conditioned choice for
// F(4,3), where Lavin & Gray's 0, 1, -1, 2, -2 round ~2.5-3x more: the
// float32 error of a 6x6-patch product over 64-512 channels, normwise
// against double, 1.1e-5 -> 4.4e-6; ResNet-101's 33 stacked 3x3 layers
// left ONNX Runtime by 2.2e-4 with the old points):
//
//   B^T = [1 -3/2   -2  3/2    1  0]   G = [    1      0      0]
//         [0    1 -5/2  1/2    1  0]       [ -1/3    1/3   -1/3]
//         [0   -1  1/2  5/2    1  0]       [  1/3    1/3    1/3]
//         [0   -2   -1    2    1  0]       [-16/15 -8/15  -4/15]
//         [0  1/2   -1 -1/2    1  0]       [ 1/15  -2/15   4/15]
//         [0    1 -3/2   -2  3/2  1]       [    0      0      1]
//
//   A^T = [1  1 1   1  1 0]
//         [0 -1 1 1/2 -2 0]
//         [0  1 1 1/4  4 0]
//         [0 -1 1 1/8 -8 1]
//
// (F(2x2,3x3)'s are with its struct below.) A run has three steps: the
// input transform (V: points x tiles x inC floats; 36 points for
// F(4x4,3x3), 16 for F(2x2,3x3)), one product per point, and the output
// transform with the bias, the leading clamp and the rest of the chain,
// per band of tiles (a tile's rows of output). Where
// the transformed weights are no larger than V and M, each thread takes
// whole bands through all three; else each step is split across the pool
// on its own (the products by point, so each thread streams only its
// points' weights).
//
//===----------------------------------------------------------------------===//

#include "winograd.h"

#include "onednn.h"
#include "sgemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cgc::cpu {
namespace {

/// F(4x4,3x3): 6x6 patches, 4x4 output tiles; G in double for the weight
/// transform, B^T and A^T as the passes below (see the file comment).
struct F4x4 {
  static constexpr int kAlpha = 6, kTile = 4, kPoints = kAlpha * kAlpha;
  static constexpr const char *kName = "F(4x4,3x3)";
  static constexpr double kG[kAlpha][3] = {{1, 0, 0},
                                           {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                                           {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                           {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                           {1.0 / 15, -2.0 / 15, 4.0 / 15},
                                           {0, 0, 1}};

  /// r = B^T d over six vectors.
  [[gnu::always_inline]] CGC_TARGET_AVX512 static void inputPass(const __m512 (&d)[kAlpha],
                                                                 __m512 (&r)[kAlpha]) {
    const __m512 half = _mm512_set1_ps(0.5f), two = _mm512_set1_ps(2.0f),
                 oneHalf = _mm512_set1_ps(1.5f), twoHalf = _mm512_set1_ps(2.5f);
    const __m512 d31 = _mm512_sub_ps(d[3], d[1]); // d3 - d1
    const __m512 d42 = _mm512_sub_ps(d[4], d[2]); // d4 - d2
    // d0 - 3/2 d1 - 2 d2 + 3/2 d3 + d4
    r[0] = _mm512_fmadd_ps(oneHalf, d31, _mm512_fnmadd_ps(two, d[2], _mm512_add_ps(d[0], d[4])));
    // d1 - 5/2 d2 + 1/2 d3 + d4
    r[1] = _mm512_fmadd_ps(half, d[3], _mm512_fnmadd_ps(twoHalf, d[2], _mm512_add_ps(d[4], d[1])));
    // -d1 + 1/2 d2 + 5/2 d3 + d4
    r[2] = _mm512_fmadd_ps(twoHalf, d[3], _mm512_fmadd_ps(half, d[2], _mm512_sub_ps(d[4], d[1])));
    r[3] = _mm512_fmadd_ps(two, d31, d42);   // -2 d1 - d2 + 2 d3 + d4
    r[4] = _mm512_fnmadd_ps(half, d31, d42); // 1/2 d1 - d2 - 1/2 d3 + d4
    // d1 - 3/2 d2 - 2 d3 + 3/2 d4 + d5
    r[5] = _mm512_fmadd_ps(oneHalf, d42, _mm512_fnmadd_ps(two, d[3], _mm512_add_ps(d[1], d[5])));
  }

  /// y = A^T m over six vectors.
  [[gnu::always_inline]] CGC_TARGET_AVX512 static void outputPass(const __m512 (&m)[kAlpha],
                                                                  __m512 (&y)[kTile]) {
    const __m512 s = _mm512_add_ps(m[1], m[2]), t = _mm512_sub_ps(m[2], m[1]);
    y[0] = _mm512_add_ps(_mm512_add_ps(m[0], s), _mm512_add_ps(m[3], m[4]));
    y[1] = _mm512_fnmadd_ps(_mm512_set1_ps(2.0f), m[4], _mm512_fmadd_ps(_mm512_set1_ps(0.5f), m[3], t));
    y[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), m[4], _mm512_fmadd_ps(_mm512_set1_ps(0.25f), m[3], s));
    y[3] = _mm512_add_ps(
        _mm512_fnmadd_ps(_mm512_set1_ps(8.0f), m[4], _mm512_fmadd_ps(_mm512_set1_ps(0.125f), m[3], t)),
        m[5]);
  }
};

/// F(2x2,3x3) (points 0, 1, -1 and infinity): 4x4 patches, 2x2 output
/// tiles, 16 products instead of 36. For planes too small to fill enough
/// 4x4 tiles (7x7: 4 tiles, against 16 of 2x2):
///
///   B^T = [1  0 -1  0]   G = [  1    0    0]   A^T = [1 1  1  0]
///         [0  1  1  0]       [1/2  1/2  1/2]         [0 1 -1 -1]
///         [0 -1  1  0]       [1/2 -1/2  1/2]
///         [0  1  0 -1]       [  0    0    1]
struct F2x2 {
  static constexpr int kAlpha = 4, kTile = 2, kPoints = kAlpha * kAlpha;
  static constexpr const char *kName = "F(2x2,3x3)";
  static constexpr double kG[kAlpha][3] = {
      {1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

  [[gnu::always_inline]] CGC_TARGET_AVX512 static void inputPass(const __m512 (&d)[kAlpha],
                                                                 __m512 (&r)[kAlpha]) {
    r[0] = _mm512_sub_ps(d[0], d[2]);
    r[1] = _mm512_add_ps(d[1], d[2]);
    r[2] = _mm512_sub_ps(d[2], d[1]);
    r[3] = _mm512_sub_ps(d[1], d[3]);
  }

  [[gnu::always_inline]] CGC_TARGET_AVX512 static void outputPass(const __m512 (&m)[kAlpha],
                                                                  __m512 (&y)[kTile]) {
    y[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
    y[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
  }
};

/// Rounds `n` up to whole zmm vectors.
int64_t roundVectors(int64_t n) { return (n + 15) / 16 * 16; }

/// Where the phases read and write: V and M hold `rows` tiles from
/// `firstTile` on ([points][rows][ldv] and [points][rows][ldm]).
struct Buffers {
  const float *x = nullptr;
  float *v = nullptr;
  float *m = nullptr;
  float *y = nullptr;
  const float *packed = nullptr; // the packed U of every point, then the bias
  int64_t firstTile = 0, rows = 0;
};

/// Bytes of transformed tiles (V and M) a thread holds at once when it
/// takes whole bands through all three phases.
constexpr int64_t kChunkBytes = int64_t(1) << 20;

template <class F> class WinogradKernel final : public KernelBase {
  static constexpr int kAlpha = F::kAlpha, kTile = F::kTile, kPoints = F::kPoints;

public:
  WinogradKernel(const WinogradGeometry &g, const KernelDesc &anchor,
                 const std::vector<KernelDesc> &chain, bool constantParams,
                 const std::string &what)
      : g_(g), tiles_(g.tiles()), ldv_(roundVectors(g.inC)), ldm_(roundVectors(g.outC)),
        gemm_(tiles_, g.inC, g.outC, {}), params_(*anchor.inputs[1], constantParams),
        firstExtra_(anchor.inputs.size()) {
    const std::vector<int64_t> xs = anchor.inputs[0]->effectiveStrides();
    xN_ = xs[0], xH_ = xs[2], xW_ = xs[3];
    wStrides_ = anchor.inputs[1]->effectiveStrides();
    if (g.hasBias)
      bStride_ = anchor.inputs[2]->effectiveStrides()[0];
    const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
    const std::vector<int64_t> ys = out.effectiveStrides();
    yN_ = ys[0], yH_ = ys[2], yW_ = ys[3];
    clamp_ = leadingClamp(chain, anchor.outputs[0].shape);
    const std::vector<KernelDesc> rest(chain.begin() + int64_t(clamp_.ops), chain.end());
    epilogue_ = Epilogue(anchor.outputs[0].shape, CGC_DTYPE_FLOAT32, rest, ys, {0, 2, 3, 1});
    packedFloats_ = int64_t(gemm_.packedBytes() / sizeof(float));
    description_ = cat(what, chainSummary(chain), " (Winograd ", F::kName, " on the packed GEMM: ",
                       kPoints, " products of ", tiles_, "x", g.inC, "x", g.outC,
                       g.dilationH * g.dilationW > 1
                           ? cat(" (dilation ", g.dilationH, "x", g.dilationW, ": ",
                                 g.dilationH * g.dilationW, " phases tiled apart)")
                           : std::string(),
                       ", AVX-512 ",
                       gemm_.tileText(),
                       clamp_.name.empty() ? "" : ", " + clamp_.name + " before the store",
                       epilogue_.empty() ? "" : ", epilogue per block of rows",
                       params_.constant() ? ", weights prepared once (transformed and packed)"
                                          : ", weights prepared each run",
                       ", split across the pool)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    Scratch paramScratch;
    const float *w = static_cast<const float *>(args.inputs[1]);
    const float *b = g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    const size_t paramBytes =
        size_t(kPoints * packedFloats_ + roundVectors(g_.outC)) * sizeof(float);
    Buffers io;
    io.packed = params_.get(w, b, paramBytes, paramScratch, [&](float *p) { fill(w, b, p); });
    io.x = static_cast<const float *>(args.inputs[0]);
    io.y = static_cast<float *>(args.outputs[0]);
    const void *const *extra = args.inputs + firstExtra_;
    const int64_t threads = pool.size(), bands = g_.bands();
    // Transformed weights no larger than the transformed tiles (V and M)
    // are read by every thread, which takes whole bands of tiles through
    // all three phases: no barrier between them, no tile data crossing
    // cores. Larger ones are split by point, so that each is streamed once,
    // and the tiles cross instead. At 2 threads (bench-kernels): 16->64 @55
    // 0.09 ms by bands against 0.17-0.20 by points, 256->256 @56 2.9-3.0
    // against 3.1-3.4; 2048->512 @28 10.4-11.7 by points against 14.2-16.3,
    // 256->256 @28 0.76-0.78 against 0.82-0.88.
    const int64_t weightFloats = kPoints * packedFloats_;
    const int64_t tileFloats = kPoints * tiles_ * (ldv_ + ldm_);
    if (threads == 1 || (weightFloats <= tileFloats && bands >= threads)) {
      const int64_t pieces = std::min(threads, bands);
      pool.run(size_t(pieces), [&](size_t p) {
        int64_t b0, b1;
        evenSplit(bands, pieces, int64_t(p), b0, b1);
        // Bands in chunks whose transformed tiles (V and M) stay in L2,
        // rather than all of a thread's at once: a 160x160 plane of 96
        // channels is 1600 tiles, 27 MB of V and M. bench-kernels, 1 / 2
        // threads: DBNet's 96->24 @160 5.77 / 2.67 -> 3.64 / 1.73 ms, @80
        // 1.19 / 0.54 -> 0.85 / 0.42, 128->32 @56 0.78 -> 0.68 at 1 thread,
        // the large layers unchanged. Each chunk reads all the transformed
        // weights again: a chunk holds at least twice their bytes (256->256
        // @14 keeps its 4 bands together).
        const int64_t chunkBytes =
            std::max<int64_t>(kChunkBytes, 2 * weightFloats * int64_t(sizeof(float)));
        const int64_t chunk = std::max<int64_t>(
            1, chunkBytes / (kPoints * g_.tilesPerBand() * (ldv_ + ldm_) * int64_t(sizeof(float))));
        Buffers mine = io;
        mine.rows = std::min(chunk, b1 - b0) * g_.tilesPerBand();
        const Scratch transformed = transformedFor(mine);
        for (int64_t c0 = b0; c0 < b1; c0 += chunk) {
          const int64_t c1 = std::min(b1, c0 + chunk);
          mine.firstTile = c0 * g_.tilesPerBand();
          mine.rows = (c1 - c0) * g_.tilesPerBand();
          for (int64_t t = 0; t < mine.rows; ++t)
            inputTile(mine, mine.firstTile + t);
          for (int64_t xi = 0; xi < kPoints; ++xi)
            product(mine, xi);
          for (int64_t band = c0; band < c1; ++band)
            outputBand(mine, band, extra);
        }
      });
      return;
    }
    // Three phases across the pool: tiles, points, bands.
    io.rows = tiles_;
    const Scratch transformed = transformedFor(io);
    const int64_t tilePieces = std::min(threads, tiles_);
    pool.run(size_t(tilePieces), [&](size_t p) {
      int64_t begin, end;
      evenSplit(tiles_, tilePieces, int64_t(p), begin, end);
      for (int64_t t = begin; t < end; ++t)
        inputTile(io, t);
    });
    const int64_t pointPieces = std::min<int64_t>(threads, kPoints);
    pool.run(size_t(pointPieces), [&](size_t p) {
      int64_t begin, end;
      evenSplit(kPoints, pointPieces, int64_t(p), begin, end);
      for (int64_t xi = begin; xi < end; ++xi)
        product(io, xi);
    });
    const int64_t bandPieces = std::min(threads, bands);
    pool.run(size_t(bandPieces), [&](size_t p) {
      int64_t begin, end;
      evenSplit(bands, bandPieces, int64_t(p), begin, end);
      for (int64_t band = begin; band < end; ++band)
        outputBand(io, band, extra);
    });
  }

private:
  /// Scratch for V and M of the `io.rows` tiles `io` holds, pointed to by
  /// io.v and io.m.
  Scratch transformedFor(Buffers &io) const {
    Scratch transformed(size_t(kPoints * io.rows * (ldv_ + ldm_)) * sizeof(float));
    io.v = transformed.as<float>();
    io.m = io.v + kPoints * io.rows * ldv_;
    return transformed;
  }

  /// Product xi for the tiles `io` holds: M_xi = V_xi U_xi.
  void product(const Buffers &io, int64_t xi) const {
    PackedSgemm::Args ga;
    ga.a = io.v + xi * io.rows * ldv_;
    ga.lda = ldv_;
    ga.b = io.packed + xi * packedFloats_;
    ga.c = io.m + xi * io.rows * ldm_;
    ga.ldc = ldm_;
    gemm_.run(ga, 0, io.rows, 0, gemm_.panels());
  }

  /// The output tiles of band `band` (up to kTile output rows, dilationH
  /// apart), then the rest of the chain over each of those rows while they
  /// are in cache.
  void outputBand(const Buffers &io, int64_t band, const void *const *extra) const {
    for (int64_t i = 0; i < g_.tilesPerBand(); ++i)
      outputTile(io, band * g_.tilesPerBand() + i);
    if (epilogue_.empty())
      return;
    const int64_t th = band % g_.tilesH(), ph = band / g_.tilesH() % g_.dilationH,
                  n = band / g_.tilesH() / g_.dilationH;
    const int64_t rowElems = g_.outW * g_.outC;
    for (int64_t i = 0; i < kTile; ++i) {
      const int64_t oh = ph + g_.dilationH * (th * kTile + i);
      if (oh < g_.outH)
        epilogue_.apply(reinterpret_cast<char *>(io.y), extra, (n * g_.outH + oh) * rowElems,
                        (n * g_.outH + oh + 1) * rowElems);
    }
  }

  /// Tile `t`: its image, phase and place in the phase.
  struct TilePlace {
    int64_t n, ph, pw, th, tw;
  };
  TilePlace place(int64_t t) const {
    TilePlace p;
    p.tw = t % g_.tilesW();
    t /= g_.tilesW();
    p.pw = t % g_.dilationW;
    t /= g_.dilationW;
    p.th = t % g_.tilesH();
    t /= g_.tilesH();
    p.ph = t % g_.dilationH;
    p.n = t / g_.dilationH;
    return p;
  }

  /// U_xi = G g G^T for every filter, in double, rounded once, packed as
  /// the products' B (inC x outC each) a block of input channels at a time
  /// (no copy of all of them at once); then the bias (zeros without one),
  /// padded to whole vectors.
  void fill(const float *w, const float *b, float *p) const {
    const int64_t inC = g_.inC, outC = g_.outC;
    const int64_t block = 32; // input channels per block (even: K in pairs)
    // The block's taps, [c - c0][i * 3 + j][o]: read filter by filter (a
    // filter's taps for the block's channels are adjacent in OIHW).
    std::vector<double> blockTaps(static_cast<size_t>(block * 9 * outC));
    std::vector<double> half(static_cast<size_t>(kAlpha * 3 * outC));
    std::vector<float> u(static_cast<size_t>(kPoints * block * outC));
    for (int64_t c0 = 0; c0 < inC; c0 += block) {
      const int64_t rows = std::min(block, inC - c0);
      for (int64_t o = 0; o < outC; ++o)
        for (int64_t c = c0; c < c0 + rows; ++c)
          for (int q = 0; q < 9; ++q)
            blockTaps[size_t(((c - c0) * 9 + q) * outC + o)] =
                w[o * wStrides_[0] + c * wStrides_[1] + q / 3 * wStrides_[2] +
                  q % 3 * wStrides_[3]];
      for (int64_t c = c0; c < c0 + rows; ++c) {
        const double *taps = &blockTaps[size_t((c - c0) * 9 * outC)];
        // half[a][j] = sum_i G[a][i] g[i][j].
        for (int a = 0; a < kAlpha; ++a)
          for (int j = 0; j < 3; ++j) {
            double *dst = &half[size_t((a * 3 + j) * outC)];
            const double *g0 = &taps[size_t(j * outC)], *g1 = &taps[size_t((3 + j) * outC)],
                         *g2 = &taps[size_t((6 + j) * outC)];
            for (int64_t o = 0; o < outC; ++o)
              dst[o] = F::kG[a][0] * g0[o] + F::kG[a][1] * g1[o] + F::kG[a][2] * g2[o];
          }
        // u[a][b] = sum_j half[a][j] G[b][j].
        for (int a = 0; a < kAlpha; ++a)
          for (int bb = 0; bb < kAlpha; ++bb) {
            float *dst = &u[size_t(((a * kAlpha + bb) * block + (c - c0)) * outC)];
            const double *h0 = &half[size_t(a * 3 * outC)], *h1 = h0 + outC, *h2 = h1 + outC;
            for (int64_t o = 0; o < outC; ++o)
              dst[o] = float(h0[o] * F::kG[bb][0] + h1[o] * F::kG[bb][1] + h2[o] * F::kG[bb][2]);
          }
      }
      for (int64_t xi = 0; xi < kPoints; ++xi)
        gemm_.packRows(&u[size_t(xi * block * outC)], outC, 1, c0, rows,
                       p + xi * packedFloats_);
    }
    float *bias = p + kPoints * packedFloats_;
    for (int64_t o = 0; o < roundVectors(outC); ++o)
      bias[o] = b && o < outC ? b[o * bStride_] : 0.0f;
  }

  /// Tile `t`'s transformed patch, every input channel, into point xi's
  /// row t of V.
  CGC_TARGET_AVX512 void inputTile(const Buffers &io, int64_t t) const {
    const TilePlace tp = place(t);
    const int64_t dH = g_.dilationH, dW = g_.dilationW;
    const int64_t ih0 = tp.ph - g_.padTop + dH * tp.th * kTile;
    const int64_t iw0 = tp.pw - g_.padLeft + dW * tp.tw * kTile;
    bool rowIn[kAlpha], colIn[kAlpha];
    for (int i = 0; i < kAlpha; ++i) {
      rowIn[i] = ih0 + dH * i >= 0 && ih0 + dH * i < g_.inH;
      colIn[i] = iw0 + dW * i >= 0 && iw0 + dW * i < g_.inW;
    }
    const float *x = io.x + tp.n * xN_ + ih0 * xH_ + iw0 * xW_;
    const int64_t rowStep = dH * xH_, colStep = dW * xW_;
    float *v = io.v + (t - io.firstTile) * ldv_;
    const int64_t pointStride = io.rows * ldv_;
    for (int64_t c0 = 0; c0 < g_.inC; c0 += 16) {
      const int64_t live = std::min<int64_t>(16, g_.inC - c0);
      const __mmask16 mask = __mmask16((1u << live) - 1);
      // Columns first: t[a][j] = sum_i B^T[a][i] d[i][j].
      __m512 cols[kAlpha][kAlpha]; // [j][a]
      for (int j = 0; j < kAlpha; ++j) {
        __m512 d[kAlpha];
        for (int i = 0; i < kAlpha; ++i)
          d[i] = rowIn[i] && colIn[j]
                     ? _mm512_maskz_loadu_ps(mask, x + i * rowStep + j * colStep + c0)
                     : _mm512_setzero_ps();
        F::inputPass(d, cols[j]);
      }
      // Then rows: v[a][b] = sum_j t[a][j] B^T[b][j].
      for (int a = 0; a < kAlpha; ++a) {
        __m512 row[kAlpha], r[kAlpha];
        for (int j = 0; j < kAlpha; ++j)
          row[j] = cols[j][a];
        F::inputPass(row, r);
        for (int bb = 0; bb < kAlpha; ++bb)
          _mm512_store_ps(v + (a * kAlpha + bb) * pointStride + c0, r[bb]);
      }
    }
  }

  /// Tile `t`'s output pixels, every output channel, from the products:
  /// A^T M A, plus the bias, through the leading clamp.
  CGC_TARGET_AVX512 void outputTile(const Buffers &io, int64_t t) const {
    const TilePlace tp = place(t);
    const int64_t dH = g_.dilationH, dW = g_.dilationW;
    const int64_t oh0 = tp.ph + dH * tp.th * kTile, ow0 = tp.pw + dW * tp.tw * kTile;
    // Pixels of the tile inside the output (none in a phase's last tiles
    // past a shorter phase's end).
    const int rows = int(std::clamp<int64_t>((g_.outH - oh0 + dH - 1) / dH, 0, kTile));
    const int cols = int(std::clamp<int64_t>((g_.outW - ow0 + dW - 1) / dW, 0, kTile));
    if (rows == 0 || cols == 0)
      return;
    const int64_t rowStep = dH * yH_, colStep = dW * yW_;
    const float *m = io.m + (t - io.firstTile) * ldm_;
    const float *bias = io.packed + kPoints * packedFloats_;
    float *y = io.y + tp.n * yN_ + oh0 * yH_ + ow0 * yW_;
    const int64_t pointStride = io.rows * ldm_;
    const __m512 lo = _mm512_set1_ps(clamp_.lo), hi = _mm512_set1_ps(clamp_.hi),
                 zero = _mm512_set1_ps(clamp_.zero);
    const bool clamp = clamp_.ops != 0;
    for (int64_t o0 = 0; o0 < g_.outC; o0 += 16) {
      const int64_t live = std::min<int64_t>(16, g_.outC - o0);
      const __mmask16 mask = __mmask16((1u << live) - 1);
      // Columns first: s[a'][b] = sum_a A^T[a'][a] m[a][b].
      __m512 sums[kAlpha][kTile]; // [b][a']
      for (int bb = 0; bb < kAlpha; ++bb) {
        __m512 d[kAlpha];
        for (int a = 0; a < kAlpha; ++a)
          d[a] = _mm512_maskz_loadu_ps(mask, m + (a * kAlpha + bb) * pointStride + o0);
        F::outputPass(d, sums[bb]);
      }
      const __m512 b = _mm512_load_ps(bias + o0);
      for (int i = 0; i < rows; ++i) {
        __m512 row[kAlpha], r[kTile];
        for (int bb = 0; bb < kAlpha; ++bb)
          row[bb] = sums[bb][i];
        F::outputPass(row, r);
        for (int j = 0; j < cols; ++j) {
          __m512 z = _mm512_add_ps(r[j], b);
          if (clamp)
            z = _mm512_add_ps(_mm512_min_ps(hi, _mm512_max_ps(lo, z)), zero);
          _mm512_mask_storeu_ps(y + i * rowStep + j * colStep + o0, mask, z);
        }
      }
    }
  }

  WinogradGeometry g_;
  int64_t tiles_, ldv_, ldm_;
  PackedSgemm gemm_;
  int64_t packedFloats_ = 0;
  onednn::PreparedWeights params_;
  size_t firstExtra_;
  int64_t xN_ = 0, xH_ = 0, xW_ = 0;
  int64_t yN_ = 0, yH_ = 0, yW_ = 0;
  std::vector<int64_t> wStrides_;
  int64_t bStride_ = 0;
  LeadingClamp clamp_;
  Epilogue epilogue_;
};

} // namespace

std::string winogradConvolutionMismatch(const WinogradGeometry &g, const KernelDesc &anchor,
                                        const KernelOperand &out) {
  if (activeConfig().winogradGemm == 0 || !PackedSgemm::available())
    return "no AVX-512 for the packed GEMM (or winograd-gemm=0)";
  if (std::string why = avx512Float32Mismatch(anchor, out); !why.empty())
    return why;
  if (!channelsLast(*anchor.inputs[0]) || !channelsLast(anchor.outputs[0]) || !channelsLast(out))
    return "the input or the result is not dense channels-last";
  if (out.shape != anchor.outputs[0].shape)
    return "the chain changes the shape";
  if (g.hasBias && anchor.inputs[2]->shape.at(0) != 1 &&
      anchor.inputs[2]->effectiveStrides()[0] <= 0)
    return "the bias has a zero or negative stride";
  if (g.inC <= 0 || g.outC <= 0 || g.tiles() <= 0)
    return "an empty convolution";
  return "";
}

int64_t winogradTile(const WinogradGeometry &g) {
  // For comparisons: wherever it can run.
  const bool everywhere = activeConfig().winogradGemm == 2;
  if (g.inC < kWinogradGemmMinChannels || g.outC < kWinogradGemmMinChannels)
    return everywhere ? 4 : 0;
  // Measured against oneDNN's kernels (bench-kernels, "3x3 convolutions,
  // channels-last", weights in cache): F(4x4,3x3) 1.3-2.6x faster with 49
  // tiles or more and 16 channels or more each way (16->16 @112 1.3x,
  // 128->32 @56 2.2x), 1.1-1.5x with 16 tiles (256->256 @14, 48->192 @13),
  // 0.8x with 4 (512->512 @7). In ResNet-50 at 1 thread, with the weights
  // streaming (4x the filter's bytes), its five 256->256 @14 took
  // 3.58-3.70 ms against 4.11-4.23 on oneDNN's F(2x2,3x3), its two
  // 512->512 @7 3.24-3.29 against 2.33-2.50 (F(2x2,3x3) on ours: see
  // docs/cpu-kernels.md).
  // DeepLabV3's atrous convolutions (dilation 12, 24 and 36 on 28x28) fill
  // 34%, 9% and 4% of their 4x4 tiles: the model ran 610 ms with them here
  // against 225 on oneDNN, whose direct kernel skips the taps in the
  // padding. FCN ResNet-50's (dilation 2 and 4 on 28x28) fill 77%.
  for (int64_t tile : {4, 2}) {
    WinogradGeometry t = g;
    t.tile = tile;
    if (t.tiles() >= kWinogradGemmMinTiles && t.filled() >= kWinogradGemmMinFilled)
      return tile;
  }
  return everywhere ? 4 : 0;
}

std::unique_ptr<Kernel> makeWinogradConvolution(const WinogradGeometry &g,
                                                const KernelDesc &anchor,
                                                const std::vector<KernelDesc> &chain,
                                                bool constantParams, const std::string &what) {
  if (g.tile == 2)
    return std::make_unique<WinogradKernel<F2x2>>(g, anchor, chain, constantParams, what);
  return std::make_unique<WinogradKernel<F4x4>>(g, anchor, chain, constantParams, what);
}

} // namespace cgc::cpu
