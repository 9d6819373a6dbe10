//===- stem.cpp - Direct convolution of a few input channels --------------===//
//
//   y[n, o, h, w] = bias[o] + sum_{c, i, j} wt[o, c, i, j] *
//                   x[n, c, h * sh - pt + i * dh, w * sw - pl + j * dw]
//
// for float32 x in any layout, y dense channels-last, few input channels.
//
// Work: output rows (n, oh) in one contiguous piece per pool thread. A row
// is computed one block of up to 64 output channels (V vectors) at a time,
// in tiles of R = 24 / V output pixels (24 accumulators): for each tap
// (c, i, j) inside the input, V weight vectors are loaded and each pixel's
// input value is broadcast into V FMAs. Kernel rows outside the input are
// skipped for the whole row; columns whose taps leave the input on the
// left or right run as one-pixel tiles over their valid taps only.
// Weights are prepared as [C][KH][KW][O] (a tap's output channels
// contiguous) with the bias after them.
//
//===----------------------------------------------------------------------===//

#include "stem.h"

#include "onednn.h"
#include "tile_table.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace cgc::cpu {
namespace {

/// One tile as the tile function sees it (element strides).
struct TileArgs {
  const float *x;        // input image n at channel 0, row 0, column 0
  int64_t ih0;           // input row of kernel row 0
  int64_t xC, xH, xW;    // input strides
  int64_t inC, kernelH, kernelW, dilationH, dilationW, strideW;
  int64_t khLo, khHi;    // kernel rows inside the input
  int64_t kwLo, kwHi;    // kernel columns inside the input for every pixel of the tile
  int64_t iw0;           // input column of the tile's first pixel's tap 0
  const float *w;        // prepared weights at the channel block
  int64_t tap;           // floats between two taps' weights (the output channels)
  const float *bias;     // prepared bias at the channel block
  float *y;              // the tile's first output pixel at the channel block
  int64_t yPixel;        // floats between output pixels
  __mmask16 lastMask;    // the output channels of the block's last vector
  float lo, hi, zero;    // each result becomes min(hi, max(lo, result)) + zero
  bool clamp, addZero;   // lo or hi finite; zero is +0 (a relu: -0 becomes +0)
};

/// R output pixels x V vectors of output channels.
template <int R, int V> CGC_TARGET_AVX512 void stemTile(const TileArgs &args) {
  const TileArgs a = args; // a local copy: vector stores cannot alias it
  __m512 acc[R][V];
#pragma clang loop unroll(full)
  for (int v = 0; v < V; ++v) {
    const __m512 b = _mm512_loadu_ps(a.bias + 16 * v);
#pragma clang loop unroll(full)
    for (int r = 0; r < R; ++r)
      acc[r][v] = b;
  }
  const int64_t pixelStep = a.strideW * a.xW;
  for (int64_t c = 0; c < a.inC; ++c)
    for (int64_t i = a.khLo; i < a.khHi; ++i) {
      const int64_t rowOffset = c * a.xC + (a.ih0 + i * a.dilationH) * a.xH;
      const float *wr = a.w + (c * a.kernelH + i) * a.kernelW * a.tap;
      for (int64_t j = a.kwLo; j < a.kwHi; ++j) {
        __m512 wv[V];
#pragma clang loop unroll(full)
        for (int v = 0; v < V; ++v)
          wv[v] = _mm512_loadu_ps(wr + j * a.tap + 16 * v);
        // Only taps inside the input form addresses.
        const float *xp = a.x + rowOffset + (a.iw0 + j * a.dilationW) * a.xW;
#pragma clang loop unroll(full)
        for (int r = 0; r < R; ++r) {
          const __m512 xv = _mm512_set1_ps(xp[r * pixelStep]);
#pragma clang loop unroll(full)
          for (int v = 0; v < V; ++v)
            acc[r][v] = _mm512_fmadd_ps(xv, wv[v], acc[r][v]);
        }
      }
    }
  if (a.clamp) {
    const __m512 lo = _mm512_set1_ps(a.lo), hi = _mm512_set1_ps(a.hi);
    const __m512 zero = _mm512_set1_ps(a.zero);
#pragma clang loop unroll(full)
    for (int r = 0; r < R; ++r)
#pragma clang loop unroll(full)
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[r][v]));
        if (a.addZero)
          acc[r][v] = _mm512_add_ps(acc[r][v], zero);
      }
  }
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r) {
#pragma clang loop unroll(full)
    for (int v = 0; v + 1 < V; ++v)
      _mm512_storeu_ps(a.y + r * a.yPixel + 16 * v, acc[r][v]);
    _mm512_mask_storeu_ps(a.y + r * a.yPixel + 16 * (V - 1), a.lastMask, acc[r][V - 1]);
  }
}

using TileFn = void (*)(const TileArgs &);

/// stemTile<R, V>, for pickTile.
template <int R, int V> struct StemTilePick {
  static constexpr TileFn value = &stemTile<R, V>;
};

/// stemTile<rows, vectors>, rows <= 24 / vectors.
TileFn tileFn(int64_t rows, int64_t vectors) {
  return pickTile<TileFn, StemTilePick>(rows, vectors);
}

/// Taps [lo, hi) of a kernel of `k` taps, dilation `d`, that fall inside
/// [0, size) when tap 0 is at `start`.
std::pair<int64_t, int64_t> validTaps(int64_t start, int64_t k, int64_t d, int64_t size) {
  const int64_t lo = start < 0 ? std::min(k, (-start + d - 1) / d) : 0;
  const int64_t hi = start > size - 1 ? 0 : std::min(k, (size - 1 - start) / d + 1);
  return {lo, std::max(lo, hi)};
}

/// Output rows per run of the fused chain (112 x 32 floats a row: 14 KB).
constexpr int64_t kEpilogueRows = 4;

/// The kernel's work on output rows, without the chain after a leading
/// clamp (the kernel applies it per block of rows).
class ChannelsLastStemRows final : public StemRows {
public:
  ChannelsLastStemRows(const StemGeometry &g, const KernelDesc &anchor,
                       const std::vector<KernelDesc> &chain, bool constantParams,
                       const std::string &what)
      : g_(g), params_(*anchor.inputs[1], constantParams) {
    const std::vector<int64_t> xs = anchor.inputs[0]->effectiveStrides();
    xN_ = xs[0], xC_ = xs[1], xH_ = xs[2], xW_ = xs[3];
    wStrides_ = anchor.inputs[1]->effectiveStrides();
    if (g.hasBias)
      bStride_ = anchor.inputs[2]->effectiveStrides()[0];
    clamp_ = leadingClamp(chain, anchor.outputs[0].shape);
    // Interior columns: every tap inside the input.
    const int64_t extW = g.dilationW * (g.kernelW - 1);
    owLo_ = std::min(g.outW, (g.padLeft + g.strideW - 1) / g.strideW);
    const int64_t last = g.inW - 1 - extW + g.padLeft; // last start column + padLeft
    owHi_ = std::max(owLo_, last < 0 ? 0 : std::min(g.outW, last / g.strideW + 1));
    const int64_t vectors = std::min<int64_t>(4, (g.outC + 15) / 16);
    description_ = cat(what, chainSummary(chain), " (direct, ", g.inC,
                       " input channels read in place, AVX-512 ", 24 / vectors, "x",
                       16 * vectors, " register tiles",
                       clamp_.name.empty() ? "" : ", " + clamp_.name + " before the store",
                       params_.constant() ? ", weights prepared once" : "");
  }

  std::string describe() const override { return description_; }
  size_t clampOps() const override { return size_t(clamp_.ops); }

  const float *prepare(const float *w, const float *b, Scratch &scratch) const override {
    const size_t bytes =
        size_t((g_.inC * g_.kernelH * g_.kernelW + 1) * paddedOutC()) * sizeof(float);
    return params_.get(w, b, bytes, scratch, [&](float *p) { fill(w, b, p); });
  }

  void computeRow(const float *x, const float *params, float *row, int64_t r) const override {
    const StemGeometry &g = g_;
    const int64_t n = r / g.outH, oh = r % g.outH;
    const int64_t ih0 = oh * g.strideH - g.padTop;
    const auto [khLo, khHi] = validTaps(ih0, g.kernelH, g.dilationH, g.inH);
    TileArgs a;
    a.x = x + n * xN_;
    a.ih0 = ih0;
    a.xC = xC_, a.xH = xH_, a.xW = xW_;
    a.inC = g.inC, a.kernelH = g.kernelH, a.kernelW = g.kernelW;
    a.dilationH = g.dilationH, a.dilationW = g.dilationW, a.strideW = g.strideW;
    a.khLo = khLo, a.khHi = khHi;
    a.tap = paddedOutC();
    a.yPixel = g.outC;
    a.lo = clamp_.lo, a.hi = clamp_.hi, a.zero = clamp_.zero;
    a.clamp = clamp_.ops != 0;
    a.addZero = clamp_.ops != 0 && !std::signbit(clamp_.zero);
    const float *bias = params + g.inC * g.kernelH * g.kernelW * paddedOutC();
    for (int64_t c0 = 0; c0 < g.outC; c0 += 64) {
      const int64_t vectors = std::min<int64_t>(4, (g.outC - c0 + 15) / 16);
      const int64_t last = g.outC - c0 - 16 * (vectors - 1);
      a.lastMask = last >= 16 ? __mmask16(0xffff) : __mmask16((1u << last) - 1);
      const int64_t tileRows = 24 / vectors;
      a.w = params + c0;
      a.bias = bias + c0;
      // Interior pixels in tiles of tileRows.
      a.kwLo = 0, a.kwHi = g.kernelW;
      for (int64_t ow = owLo_; ow < owHi_; ow += tileRows) {
        const int64_t count = std::min(tileRows, owHi_ - ow);
        a.iw0 = ow * g.strideW - g.padLeft;
        a.y = row + ow * g.outC + c0;
        tileFn(count, vectors)(a);
      }
      // Border pixels one at a time over their taps inside the input.
      const TileFn one = tileFn(1, vectors);
      for (int64_t ow = 0; ow < g.outW; ++ow) {
        if (ow >= owLo_ && ow < owHi_)
          continue;
        a.iw0 = ow * g.strideW - g.padLeft;
        std::tie(a.kwLo, a.kwHi) = validTaps(a.iw0, g.kernelW, g.dilationW, g.inW);
        a.y = row + ow * g.outC + c0;
        one(a);
      }
    }
  }

private:
  /// The output channels rounded up to whole vectors (the prepared weights'
  /// and bias's row length; the channels past outC are zeros, computed and
  /// never stored).
  int64_t paddedOutC() const { return (g_.outC + 15) / 16 * 16; }

  /// Weights [C][KH][KW][O padded], then the bias [O padded] (zeros without
  /// one).
  void fill(const float *w, const float *b, float *p) const {
    const int64_t O = g_.outC, P = paddedOutC();
    for (int64_t c = 0; c < g_.inC; ++c)
      for (int64_t i = 0; i < g_.kernelH; ++i)
        for (int64_t j = 0; j < g_.kernelW; ++j)
          for (int64_t o = 0; o < P; ++o)
            p[((c * g_.kernelH + i) * g_.kernelW + j) * P + o] =
                o < O ? w[o * wStrides_[0] + c * wStrides_[1] + i * wStrides_[2] +
                          j * wStrides_[3]]
                      : 0.0f;
    float *bias = p + g_.inC * g_.kernelH * g_.kernelW * P;
    for (int64_t o = 0; o < P; ++o)
      bias[o] = b && o < O ? b[o * bStride_] : 0.0f;
  }

  StemGeometry g_;
  onednn::PreparedWeights params_;
  int64_t xN_ = 0, xC_ = 0, xH_ = 0, xW_ = 0;
  std::vector<int64_t> wStrides_;
  int64_t bStride_ = 0;
  int64_t owLo_ = 0, owHi_ = 0;
  LeadingClamp clamp_;
  std::string description_;
};

class StemKernel final : public KernelBase {
public:
  StemKernel(const StemGeometry &g, const KernelDesc &anchor, const std::vector<KernelDesc> &chain,
             bool constantParams, const std::string &what)
      : g_(g), rows_(g, anchor, chain, constantParams, what),
        firstExtra_(anchor.inputs.size()) {
    const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
    const std::vector<int64_t> ys = out.effectiveStrides();
    yN_ = ys[0], yH_ = ys[2];
    const std::vector<KernelDesc> rest(chain.begin() + int64_t(rows_.clampOps()), chain.end());
    epilogue_ = Epilogue(anchor.outputs[0].shape, CGC_DTYPE_FLOAT32, rest, ys, {0, 2, 3, 1});
    description_ = rows_.describe() + ", split across the pool)";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    float *y = static_cast<float *>(args.outputs[0]);
    Scratch scratch;
    const float *params =
        rows_.prepare(static_cast<const float *>(args.inputs[1]),
                      g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr, scratch);
    const void *const *extra = args.inputs + firstExtra_;
    const int64_t rows = g_.batch * g_.outH;
    const int64_t pieces = std::min<int64_t>(rows, pool.size());
    const int64_t rowElems = g_.outW * g_.outC;
    pool.run(size_t(pieces), [&](size_t p) {
      int64_t begin, end;
      evenSplit(rows, pieces, int64_t(p), begin, end);
      // The chain over blocks of rows while they are in cache.
      for (int64_t b0 = begin; b0 < end; b0 += kEpilogueRows) {
        const int64_t b1 = std::min(end, b0 + kEpilogueRows);
        for (int64_t r = b0; r < b1; ++r)
          rows_.computeRow(x, params, y + (r / g_.outH) * yN_ + (r % g_.outH) * yH_, r);
        if (!epilogue_.empty())
          epilogue_.apply(reinterpret_cast<char *>(y), extra, b0 * rowElems, b1 * rowElems);
      }
    });
  }

private:
  StemGeometry g_;
  ChannelsLastStemRows rows_;
  size_t firstExtra_;
  int64_t yN_ = 0, yH_ = 0;
  Epilogue epilogue_;
};

} // namespace

std::string stemConvolutionMismatch(const StemGeometry &g, const KernelDesc &anchor,
                                    const KernelOperand &out) {
  if (std::string why = avx512Float32Mismatch(anchor, out); !why.empty())
    return why;
  if (g.inC > kStemMaxInputChannels)
    return cat("more than ", kStemMaxInputChannels, " input channels");
  if (g.outC == 0)
    return "no output channels";
  if (!channelsLast(anchor.outputs[0]) || !channelsLast(out))
    return "the result is not dense channels-last";
  const KernelOperand &x = *anchor.inputs[0];
  const std::vector<int64_t> xs = x.effectiveStrides();
  for (size_t d = 0; d < xs.size(); ++d)
    if (x.shape[d] != 1 && xs[d] <= 0)
      return "the input has a zero or negative stride";
  return "";
}

std::unique_ptr<Kernel> makeStemConvolution(const StemGeometry &g, const KernelDesc &anchor,
                                            const std::vector<KernelDesc> &chain,
                                            bool constantParams, const std::string &what) {
  return std::make_unique<StemKernel>(g, anchor, chain, constantParams, what);
}

std::unique_ptr<StemRows> makeStemRows(const StemGeometry &g, const KernelDesc &anchor,
                                       const std::vector<KernelDesc> &chain, bool constantParams,
                                       const std::string &what) {
  return std::make_unique<ChannelsLastStemRows>(g, anchor, chain, constantParams, what);
}

} // namespace cgc::cpu
