//===- depthwise.cpp - Direct depthwise convolution, channels-last --------===//
//
//   y[n, c, h, w] = bias[c] + sum_{i, j} wt[c, 0, i, j] *
//                   x[n, c, h * sh - pt + i * dh, w * sw - pl + j * dw]
//
// on float32 operands whose channels are innermost (NHWC strides), with
// AVX-512. Inside a compiled CNN the driver keeps intermediates
// channels-last, where oneDNN 2.6 runs depthwise convolutions on its
// brdgmm_dw nhwc kernel, 1.2-2.4x slower than its blocked jit_dw kernel
// (which needs nChw16c, and reorders would cost more than they save: a
// depthwise convolution is one pass over memory). See conv.cpp for the
// measurements that decide when this kernel runs.
//
// Work: output rows (n, oh) go in bands of up to 8 whose results stay in L2,
// and a band is computed one channel group at a time (a multiple of 16
// channels whose input rows over the band fit in L1, so each input vector
// comes from L2 about once, not once per kernel row using it). A row is cut
// into column segments of at most 16 (3 wide, stride 1), 12 (wider) or 8
// (stride 2) outputs, sizes as equal as possible. A segment runs over the
// group's channels 16 at a time with one accumulator register per output
// column: for each kernel row inside the input it loads that row's KW weight
// vectors, then every input vector the segment reads once ((R - 1) * SW +
// KW loads for R columns) and feeds it to each output column that uses it
// (R * KW FMAs), so weights and inputs are reused from registers. Kernel
// rows outside the input are skipped; input columns in the padding (up to
// two per side, compile-time parameters of the segments at the row's ends)
// are neither loaded nor multiplied. (No masked loads of addresses outside
// the row: a masked-off load touching an unmapped page, as left of a
// tensor's first pixel, is harmless but made a whole 7x7 convolution 5x
// slower on this machine.) A channel count that is not a multiple of 16
// ends with a masked vector. Wider padding and the generic segments use
// border columns instead: segments cover the output columns whose taps are
// all inside the input, the others are computed one at a time with only
// their taps inside, four channel vectors at a time. Kernels 3 and 5
// wide with strides 1 and 2 (no dilation along W) are unrolled at compile
// time; other widths, strides and dilations run a generic segment with the
// same blocking. Weights and bias are prepared as [KH * KW + 1][C rounded up
// to 16] (zero-padded, aligned vectors).
//
// The fused elementwise chain (Epilogue, positions in channels-last order)
// runs over each band right after it is computed, while it is in cache. An
// extra operand of the chain that shares bytes with the result (a residual
// computed in place) would be overwritten before the chain reads it: then
// rows go to a staging copy laid out like the result and are copied out
// after all of them are done.
//
// Threads: output rows of all images in one contiguous piece per pool thread,
// unless the convolution is too small to be worth splitting. One piece each,
// not two (for balance), keeps the rows where the convolutions around it put
// them: they split a channels-last plane into one row band per thread too,
// and the pool's caller takes the first piece, so each thread reads the rows
// it just wrote from its own cache. With two pieces per thread half of them
// came from the other core's cache: MobileNetV2 at 2 threads 2.97 -> 2.53 ms
// (its depthwise layers 1.5-3x faster; 144->144 @56 138 -> 61 us).
//
//===----------------------------------------------------------------------===//

#include "depthwise.h"

#include "math.h"
#include "onednn.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>

namespace cgc::cpu {
namespace {

/// The widest column segment (accumulator registers).
constexpr int kMaxColumns = 16;
/// L1 budget for the input rows one channel group reads over a band.
constexpr int64_t kGroupBytes = 48 << 10;
/// Below this many multiply-adds a convolution runs in one piece. Lower than
/// the 4 MFLOP of oneDNN convolutions (conv.cpp): measured inside the models
/// at 2 threads, where the pool's workers are already spinning between
/// dispatches, splitting the small depthwise layers too pays (MobileNetV2
/// median 3.17-3.29 ms with this threshold vs 3.49-3.64 ms with 2M,
/// EfficientNet-B0 6.52-6.70 vs 6.75-7.06 ms, interleaved runs), although
/// bench-kernels, timing one layer alone on this loaded 2-core machine,
/// shows those layers faster in one piece.
constexpr int64_t kMinSplitMacs = 1 << 17;

/// One output row as a segment function sees it (element strides).
struct RowArgs {
  const float *const *rows; // input rows of the valid kernel rows, at column 0, channel 0
  const float *weights;     // prepared weights of the first valid kernel row
  const float *bias;        // prepared bias (C rounded up to 16 entries)
  int64_t numRows;          // valid kernel rows
  int64_t channels, paddedChannels;
  int64_t xPixel, inW;      // input column stride and width
  int64_t kernelW, strideW, dilationW, padLeft;
  float *y;                 // output row at column 0, channel 0
  int64_t yPixel;           // output column stride
  float lo, hi, zero;       // each result becomes min(hi, max(lo, result)) + zero
};

/// The clamp a result goes through before it is stored: a fused clip or
/// relu leading the chain, computed as the elementwise kernels compute it
/// (NaN stays NaN: vmaxps/vminps return their second operand when one is
/// NaN; relu(-0) is +0: + zero, which is -0 otherwise and then changes
/// nothing), or (-inf, inf, -0): no change.
CGC_INLINE CGC_TARGET_AVX512 __m512 clamp(const RowArgs &a, __m512 v) {
  v = _mm512_max_ps(_mm512_set1_ps(a.lo), v);
  v = _mm512_min_ps(_mm512_set1_ps(a.hi), v);
  return _mm512_add_ps(v, _mm512_set1_ps(a.zero));
}

/// Computes output columns [ow0, ow0 + R) of a row for channels [c0, c1)
/// (c0 a multiple of 16; c1 too unless it is the channel count); every
/// input column they read is inside the input.
using SegmentFn = void (*)(const RowArgs &, int64_t ow0, int64_t c0, int64_t c1);

/// Keeps `p` opaque to the optimizer: pointers stepped through a row stay a
/// chain of additions instead of one precomputed offset per column (which
/// for 16+ columns spilled to the stack and cost a reload per load).
template <class T> CGC_INLINE void opaque(T *&p) { asm("" : "+r"(p)); }

/// R output columns x 16 channels from `c` (`lanes` of them: the last
/// vector may be partial; masked loads and stores cost the same as plain
/// ones here), kernel KW wide, stride SW, no dilation along W. The first JL
/// and the last JR of the input columns the segment spans are outside the
/// input (left and right padding): they are neither loaded nor multiplied.
template <int KW, int SW, int R, int JL, int JR>
CGC_TARGET_AVX512 CGC_INLINE void tileFixed(const RowArgs &a, int64_t ow0, int64_t c,
                                            __mmask16 lanes) {
  constexpr int NJ = (R - 1) * SW + KW; // input columns spanned
  const int64_t ix0 = ow0 * SW - a.padLeft;
  __m512 acc[R];
  const __m512 b = _mm512_load_ps(a.bias + c);
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r)
    acc[r] = b;
  const int64_t cp = a.paddedChannels, xp = a.xPixel;
  for (int64_t i = 0; i < a.numRows; ++i) {
    const float *wr = a.weights + i * KW * cp + c;
    __m512 wv[KW];
#pragma clang loop unroll(full)
    for (int k = 0; k < KW; ++k)
      wv[k] = _mm512_load_ps(wr + k * cp);
    const float *p = a.rows[i] + c + (ix0 + JL) * xp;
#pragma clang loop unroll(full)
    for (int j = JL; j < NJ - JR; ++j) {
      const __m512 v = _mm512_maskz_loadu_ps(lanes, p);
      p += xp;
      opaque(p);
#pragma clang loop unroll(full)
      for (int k = 0; k < KW; ++k) {
        const int t = j - k; // output column t / SW uses input column j at tap k
        if (t >= 0 && t % SW == 0 && t / SW < R)
          acc[t / SW] = _mm512_fmadd_ps(v, wv[k], acc[t / SW]);
      }
    }
  }
  float *out = a.y + ow0 * a.yPixel + c;
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(out, lanes, clamp(a, acc[r]));
    out += a.yPixel;
    opaque(out);
  }
}

/// The lanes of channels [c, c1) in a vector from c.
CGC_INLINE __mmask16 lanesFrom(int64_t c, int64_t c1) {
  return c1 - c >= 16 ? __mmask16(0xffff) : __mmask16((1u << (c1 - c)) - 1);
}

template <int KW, int SW, int R, int JL, int JR>
CGC_TARGET_AVX512 void segmentFixed(const RowArgs &args, int64_t ow0, int64_t c0, int64_t c1) {
  const RowArgs a = args; // a local copy: vector stores cannot alias it
  for (int64_t c = c0; c < c1; c += 16)
    tileFixed<KW, SW, R, JL, JR>(a, ow0, c, lanesFrom(c, c1));
}

/// Any kernel width, stride and dilation along W: a runtime loop over the
/// taps; per tap the R columns' inputs are loaded straight into the FMAs
/// (one load per FMA, no reuse across taps, which dilation breaks).
template <int R>
CGC_TARGET_AVX512 CGC_INLINE void tileAny(const RowArgs &a, int64_t ow0, int64_t c,
                                          __mmask16 lanes) {
  __m512 acc[R];
  const __m512 b = _mm512_load_ps(a.bias + c);
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r)
    acc[r] = b;
  const int64_t cp = a.paddedChannels, xp = a.xPixel;
  const int64_t ix0 = ow0 * a.strideW - a.padLeft;
  const int64_t stepR = a.strideW * xp, stepK = a.dilationW * xp;
  for (int64_t i = 0; i < a.numRows; ++i) {
    const float *wr = a.weights + i * a.kernelW * cp + c;
    const float *pk = a.rows[i] + c + ix0 * xp;
    for (int64_t k = 0; k < a.kernelW; ++k, pk += stepK) {
      const __m512 wv = _mm512_load_ps(wr + k * cp);
      const float *p = pk;
#pragma clang loop unroll(full)
      for (int r = 0; r < R; ++r) {
        acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, p), wv, acc[r]);
        p += stepR;
        opaque(p);
      }
    }
  }
  float *out = a.y + ow0 * a.yPixel + c;
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(out, lanes, clamp(a, acc[r]));
    out += a.yPixel;
    opaque(out);
  }
}

template <int R>
CGC_TARGET_AVX512 void segmentAny(const RowArgs &args, int64_t ow0, int64_t c0, int64_t c1) {
  const RowArgs a = args; // a local copy: vector stores cannot alias it
  for (int64_t c = c0; c < c1; c += 16)
    tileAny<R>(a, ow0, c, lanesFrom(c, c1));
}

/// V channel vectors from `c` of one output column whose taps [kLo, kHi)
/// are inside the input (a column at the left or right border), V
/// independent accumulators; `last` masks the last vector.
template <int V>
CGC_TARGET_AVX512 CGC_INLINE void tileColumn(const RowArgs &a, int64_t ix, int64_t kLo,
                                             int64_t kHi, int64_t c, __mmask16 last,
                                             float *out) {
  __m512 acc[V];
#pragma clang loop unroll(full)
  for (int v = 0; v < V; ++v)
    acc[v] = _mm512_load_ps(a.bias + c + 16 * v);
  const int64_t cp = a.paddedChannels, xp = a.xPixel;
  for (int64_t i = 0; i < a.numRows; ++i) {
    const float *wr = a.weights + i * a.kernelW * cp + c;
    for (int64_t k = kLo; k < kHi; ++k) {
      const float *p = a.rows[i] + c + (ix + k * a.dilationW) * xp;
#pragma clang loop unroll(full)
      for (int v = 0; v < V; ++v) {
        const __m512 x = v == V - 1 ? _mm512_maskz_loadu_ps(last, p + 16 * v)
                                    : _mm512_loadu_ps(p + 16 * v);
        acc[v] = _mm512_fmadd_ps(x, _mm512_load_ps(wr + k * cp + 16 * v), acc[v]);
      }
    }
  }
#pragma clang loop unroll(full)
  for (int v = 0; v < V; ++v) {
    if (v == V - 1)
      _mm512_mask_storeu_ps(out + c + 16 * v, last, clamp(a, acc[v]));
    else
      _mm512_storeu_ps(out + c + 16 * v, clamp(a, acc[v]));
  }
}

/// Output column `ow` of a row for channels [c0, c1) when some of its taps
/// fall outside the input's columns: only the taps inside are computed.
/// Border columns are few (one or two per side for 3x3 and 5x5 with the
/// usual padding); four channel vectors at a time keep the FMA chains
/// independent.
CGC_TARGET_AVX512 void borderColumn(const RowArgs &args, int64_t ow, int64_t c0, int64_t c1) {
  const RowArgs a = args; // a local copy: vector stores cannot alias it
  const int64_t ix = ow * a.strideW - a.padLeft, dw = a.dilationW;
  const int64_t kLo = ix < 0 ? std::min(a.kernelW, (-ix + dw - 1) / dw) : 0;
  const int64_t kHi = ix > a.inW - 1 ? 0 : std::min(a.kernelW, (a.inW - 1 - ix) / dw + 1);
  float *out = a.y + ow * a.yPixel;
  for (int64_t c = c0; c < c1; c += 64) {
    const int64_t n = std::min<int64_t>(64, c1 - c);
    const __mmask16 last = n % 16 ? __mmask16((1u << (n % 16)) - 1) : __mmask16(0xffff);
    switch ((n + 15) / 16) {
    case 4: tileColumn<4>(a, ix, kLo, kHi, c, last, out); break;
    case 3: tileColumn<3>(a, ix, kLo, kHi, c, last, out); break;
    case 2: tileColumn<2>(a, ix, kLo, kHi, c, last, out); break;
    default: tileColumn<1>(a, ix, kLo, kHi, c, last, out); break;
    }
  }
}

/// Segment functions for R = 1..kMaxColumns.
using SegmentTable = std::array<SegmentFn, kMaxColumns>;
/// The most padding columns a segment of the unrolled kernels may span on
/// either side (2: 5x5 with padding 2); more run as border columns.
constexpr int kMaxPadColumns = 2;
using PadTables = std::array<std::array<SegmentTable, kMaxPadColumns + 1>, kMaxPadColumns + 1>;

template <int KW, int SW, int JL, int JR, size_t... I>
constexpr SegmentTable fixedTable(std::index_sequence<I...>) {
  return {{&segmentFixed<KW, SW, int(I) + 1, JL, JR>...}};
}
template <int KW, int SW, int JL, size_t... JR>
constexpr std::array<SegmentTable, kMaxPadColumns + 1> fixedTables(std::index_sequence<JR...>) {
  return {{fixedTable<KW, SW, JL, int(JR)>(std::make_index_sequence<kMaxColumns>{})...}};
}
template <int KW, int SW, size_t... JL> constexpr PadTables padTables(std::index_sequence<JL...>) {
  return {{fixedTables<KW, SW, int(JL)>(std::make_index_sequence<kMaxPadColumns + 1>{})...}};
}
template <size_t... I> constexpr SegmentTable anyTable(std::index_sequence<I...>) {
  return {{&segmentAny<int(I) + 1>...}};
}

/// Padding columns the segment [ow0, ow0 + r) spans left and right.
std::pair<int64_t, int64_t> padColumns(const DepthwiseGeometry &g, int64_t ow0, int64_t r) {
  const int64_t first = ow0 * g.strideW - g.padLeft;
  const int64_t last = (ow0 + r - 1) * g.strideW - g.padLeft + g.dilationW * (g.kernelW - 1);
  return {std::max<int64_t>(0, -first), std::max<int64_t>(0, last - (g.inW - 1))};
}

/// The segment function for [ow0, ow0 + r), or null if the unrolled
/// kernels do not cover its padding (or the shape).
SegmentFn segmentFunction(const DepthwiseGeometry &g, int64_t ow0, int64_t r) {
  using Pads = std::make_index_sequence<kMaxPadColumns + 1>;
  static const PadTables tables[2][2] = {
      // [kernel 3/5][stride 1/2][left pad columns][right pad columns][r - 1]
      {padTables<3, 1>(Pads{}), padTables<3, 2>(Pads{})},
      {padTables<5, 1>(Pads{}), padTables<5, 2>(Pads{})},
  };
  static const SegmentTable any = anyTable(std::make_index_sequence<kMaxColumns>{});
  auto [jl, jr] = padColumns(g, ow0, r);
  if (!channelsLastDepthwiseUnrolled(g))
    return jl == 0 && jr == 0 ? any[size_t(r - 1)] : nullptr;
  if (jl > kMaxPadColumns || jr > kMaxPadColumns)
    return nullptr;
  return tables[g.kernelW == 5][g.strideW == 2][size_t(jl)][size_t(jr)][size_t(r - 1)];
}

/// Columns per segment, measured on this machine (AMD EPYC, Zen 5) with
/// oneDNN's layers of MobileNetV2/EfficientNet-B0: 16 for 3-wide kernels
/// with stride 1 (the 14-wide rows of 14x14 planes in one segment: 576
/// channels 0.0166 vs 0.0180 ms with 8), 12 for wider ones (5x5 on 28x28:
/// 0.054 vs 0.059 ms with 16), 8 with stride 2 (5x5 on 56x56: 0.053 vs
/// 0.076 ms with 16: twice the input columns per output).
int64_t maxColumns(const DepthwiseGeometry &g) {
  if (g.strideW != 1)
    return 8;
  return g.kernelW <= 3 ? 16 : 12;
}

/// Byte offsets [lo, hi) an operand's elements span from its address.
std::pair<int64_t, int64_t> byteSpan(const KernelOperand &o) {
  int64_t lo = 0, hi = 0;
  std::vector<int64_t> s = o.effectiveStrides();
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (o.shape[d] == 0)
      return {0, 0};
    (s[d] < 0 ? lo : hi) += (o.shape[d] - 1) * s[d];
  }
  int64_t elem = int64_t(cgc_dtype_size(o.dtype));
  return {lo * elem, (hi + 1) * elem};
}

class ChannelsLastDepthwiseRows final : public DepthwiseRows {
public:
  ChannelsLastDepthwiseRows(const DepthwiseGeometry &g, const KernelDesc &anchor,
                            const std::vector<KernelDesc> &chain, bool constantParams,
                            const std::string &what)
      : g_(g), params_(*anchor.inputs[1], constantParams) {
    const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
    std::vector<int64_t> ys = out.effectiveStrides();
    yN_ = ys[0], yH_ = ys[2], yW_ = ys[3];
    const KernelOperand &w = *anchor.inputs[1];
    wStrides_ = w.effectiveStrides();
    if (g.hasBias)
      bStride_ = anchor.inputs[2]->effectiveStrides()[0];
    paddedC_ = (g.channels + 15) / 16 * 16;
    // A clip or relu leading the chain is applied to the accumulators before
    // they are stored (MobileNetV2's relu6: no pass over the result); the
    // rest of the chain runs as the Epilogue.
    const LeadingClamp clamp = leadingClamp(chain, anchor.outputs[0].shape);
    lo_ = clamp.lo, hi_ = clamp.hi, zero_ = clamp.zero;
    const std::vector<KernelDesc> rest(chain.begin() + clamp.ops, chain.end());
    epilogue_ = Epilogue(anchor.outputs[0].shape, CGC_DTYPE_FLOAT32, rest, ys, {0, 2, 3, 1});
    foldedOp_ = clamp.name;
    outSpan_ = byteSpan(out);
    for (const KernelDesc &op : chain)
      for (size_t i = 1; i < op.inputs.size(); ++i)
        extraSpans_.push_back(byteSpan(*op.inputs[i]));
    // Equal segments of at most maxColumns(g) over the row; where the
    // unrolled kernels do not cover a shape or its padding, segments over
    // the columns [owLo, owHi) whose taps are all inside the input, and
    // border columns for the others.
    const int64_t maxCols = maxColumns(g);
    auto plan = [&](int64_t from, int64_t to) {
      const int64_t count = (to - from + maxCols - 1) / maxCols;
      for (int64_t i = 0, ow = from; i < count; ++i) {
        const int64_t r = (to - from) / count + (i < (to - from) % count ? 1 : 0);
        segments_.push_back({ow, r, segmentFunction(g, ow, r)});
        ow += r;
      }
    };
    plan(0, g.outW);
    bool covered = true;
    for (const Segment &s : segments_)
      covered = covered && s.fn;
    if (!covered) {
      segments_.clear();
      const int64_t extW = g.dilationW * (g.kernelW - 1);
      const int64_t owLo = std::min(g.outW, (g.padLeft + g.strideW - 1) / g.strideW);
      const int64_t last = g.inW - 1 - extW + g.padLeft; // last start column + padLeft
      const int64_t owHi =
          std::max(owLo, last < 0 ? 0 : std::min(g.outW, last / g.strideW + 1));
      plan(owLo, owHi);
      for (int64_t ow = 0; ow < g.outW; ++ow)
        if (ow < owLo || ow >= owHi)
          borderColumns_.push_back(ow);
    }
    int64_t widest = 0;
    for (const Segment &s : segments_)
      widest = std::max(widest, s.columns);
    // Bands of up to 8 rows whose results (about 256 KB) stay in L2 for the
    // epilogue; channel groups whose input rows over a band fit in L1.
    const int64_t rowBytes = g.outW * g.channels * 4;
    bandRows_ = std::clamp<int64_t>((256 << 10) / std::max<int64_t>(1, rowBytes), 2, 8);
    const int64_t bandInRows = (bandRows_ - 1) * g.strideH + g.dilationH * (g.kernelH - 1) + 1;
    groupChannels_ = std::max<int64_t>(16, kGroupBytes / (bandInRows * g.inW * 4) / 16 * 16);
    const std::string summary = chainSummary(chain);
    const bool fixed = channelsLastDepthwiseUnrolled(g);
    description_ = cat(what, summary, " (direct depthwise, channels-last AVX-512, ",
                       widest ? cat(widest, "-column blocks") : std::string("no blocks"),
                       fixed ? "" : ", generic taps",
                       borderColumns_.empty() ? "" : ", border columns",
                       foldedOp_.empty() ? "" : ", " + foldedOp_ + " before the store",
                       params_.constant() ? ", weights prepared once" : "");
  }

  const DepthwiseGeometry &geometry() const override { return g_; }
  std::string describe() const override { return description_; }
  bool chainInRegisters() const override { return epilogue_.empty(); }

  const float *prepare(const float *w, const float *b, Scratch &scratch) const override {
    const size_t bytes = size_t((g_.kernelH * g_.kernelW + 1) * paddedC_) * sizeof(float);
    return params_.get(w, b, bytes, scratch, [&](float *p) { fill(w, b, p); });
  }

  void forEachPiece(ThreadPool &pool, float *y, const void *const *extra, int64_t macs,
                    const PoolOutput *means,
                    FunctionRef<void(int64_t, int64_t, float *, const BandDone *)> rows)
      const override {
    // An extra operand sharing bytes with the result: stage the rows.
    bool overlap = false;
    const char *yb = reinterpret_cast<const char *>(y);
    for (size_t i = 0; i < extraSpans_.size(); ++i) {
      const char *e = static_cast<const char *>(extra[i]);
      overlap = overlap || (e + extraSpans_[i].first < yb + outSpan_.second &&
                            yb + outSpan_.first < e + extraSpans_[i].second);
    }
    Scratch staging;
    float *dst = y;
    if (overlap) {
      staging.allocate(size_t(outSpan_.second));
      dst = staging.as<float>();
    }
    const int64_t total = g_.batch * g_.outH;
    const int64_t pieces =
        pool.size() == 1 || macs < kMinSplitMacs ? 1 : std::min<int64_t>(total, pool.size());
    // With the pool: one slot of channel sums [N][C rounded up to 16] per
    // piece (whole cache lines each).
    const int64_t slotFloats = means ? g_.batch * paddedC_ : 0;
    Scratch sums(size_t(pieces * slotFloats) * sizeof(float));
    std::fill(sums.as<float>(), sums.as<float>() + pieces * slotFloats, 0.0f);
    pool.run(size_t(pieces), [&](size_t p) {
      int64_t begin, end;
      evenSplit(total, pieces, int64_t(p), begin, end);
      float *slot = sums.as<float>() + int64_t(p) * slotFloats;
      auto add = [&](int64_t b0, int64_t b1) { addChannelSums(dst, b0, b1, slot); };
      const BandDone done(add);
      rows(begin, end, dst, means ? &done : nullptr);
    });
    if (means)
      writeMeans(sums.as<float>(), pieces, *means);
    if (overlap)
      pool.run(size_t(pieces), [&](size_t p) {
        int64_t begin, end;
        evenSplit(total, pieces, int64_t(p), begin, end);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t off = (r / g_.outH) * yN_ + (r % g_.outH) * yH_;
          for (int64_t ow = 0; ow < g_.outW; ++ow)
            std::copy(dst + off + ow * yW_, dst + off + ow * yW_ + g_.channels,
                      y + off + ow * yW_);
        }
      });
  }

  /// Output rows [begin, end) (of all images, n * outH + oh) in bands:
  /// each band is computed one channel group at a time, so the input rows a
  /// group reads stay in L1 across the band's rows, then the epilogue runs
  /// over the band while it is in L2.
  void computeRows(const DepthwiseInput &in, const float *params, float *y,
                   const void *const *extra, int64_t begin, int64_t end, const BandDone *done,
                   int64_t firstRow) const override {
    const DepthwiseGeometry &g = g_;
    assert((firstRow == 0 || chainInRegisters()) && "a partial buffer needs the whole chain "
                                                      "in registers");
    // Where `y` starts in the whole result.
    const int64_t origin = (firstRow / g.outH) * yN_ + (firstRow % g.outH) * yH_;
    std::vector<const float *> rowPtrs(size_t(g.kernelH));
    RowArgs a;
    a.rows = rowPtrs.data();
    a.bias = params + g.kernelH * g.kernelW * paddedC_;
    a.channels = g.channels;
    a.paddedChannels = paddedC_;
    a.xPixel = in.pixel;
    a.inW = g.inW;
    a.kernelW = g.kernelW;
    a.strideW = g.strideW;
    a.dilationW = g.dilationW;
    a.padLeft = g.padLeft;
    a.yPixel = yW_;
    a.lo = lo_, a.hi = hi_, a.zero = zero_;
    const int64_t rowElems = g.outW * g.channels;
    for (int64_t b0 = begin; b0 < end; b0 += bandRows_) {
      const int64_t b1 = std::min(end, b0 + bandRows_);
      for (int64_t c0 = 0; c0 < g.channels; c0 += groupChannels_) {
        const int64_t c1 = std::min(g.channels, c0 + groupChannels_);
        for (int64_t r = b0; r < b1; ++r) {
          const int64_t n = r / g.outH, oh = r % g.outH;
          const int64_t ih0 = oh * g.strideH - g.padTop;
          // Kernel rows [lo, hi) inside the input.
          const int64_t lo = ih0 < 0 ? (-ih0 + g.dilationH - 1) / g.dilationH : 0;
          const int64_t hi = ih0 > g.inH - 1
                                 ? 0
                                 : std::min(g.kernelH, (g.inH - 1 - ih0) / g.dilationH + 1);
          a.numRows = std::max<int64_t>(0, hi - lo);
          for (int64_t i = 0; i < a.numRows; ++i)
            rowPtrs[size_t(i)] = in.row(n, ih0 + (lo + i) * g.dilationH);
          a.weights = params + lo * g.kernelW * paddedC_;
          a.y = y + (n * yN_ + oh * yH_ - origin);
          for (const Segment &s : segments_)
            s.fn(a, s.ow0, c0, c1);
          for (int64_t ow : borderColumns_)
            borderColumn(a, ow, c0, c1);
        }
      }
      if (!epilogue_.empty())
        epilogue_.apply(reinterpret_cast<char *>(y), extra, b0 * rowElems, b1 * rowElems);
      if (done)
        (*done)(b0, b1);
    }
  }

private:
  struct Segment {
    int64_t ow0, columns;
    SegmentFn fn;
  };

  /// The means of the channel sums in `count` slots (sums in float, their
  /// total in double) into `out`.
  void writeMeans(const float *slots, int64_t count, const PoolOutput &out) const {
    const double positions = double(g_.outH * g_.outW);
    const int64_t slotFloats = g_.batch * paddedC_;
    for (int64_t n = 0; n < g_.batch; ++n)
      for (int64_t c = 0; c < g_.channels; ++c) {
        double total = 0;
        for (int64_t s = 0; s < count; ++s)
          total += double(slots[s * slotFloats + n * paddedC_ + c]);
        out.means[n * out.pN + c * out.pC] = float(total / positions);
      }
  }

  /// Adds the channels of output rows [b0, b1) of `y` into `slot` ([N][C
  /// rounded up to 16]), 16 channels at a time over each row's pixels.
  CGC_TARGET_AVX512 void addChannelSums(const float *y, int64_t b0, int64_t b1,
                                        float *slot) const {
    const DepthwiseGeometry &g = g_;
    const int64_t full = g.channels / 16 * 16;
    const __mmask16 tail = __mmask16((1u << (g.channels - full)) - 1);
    for (int64_t r = b0; r < b1; ++r) {
      const int64_t n = r / g.outH, oh = r % g.outH;
      const float *rowStart = y + n * yN_ + oh * yH_;
      float *s = slot + n * paddedC_;
      for (int64_t c = 0; c < g.channels; c += 16) {
        const __mmask16 lanes = c < full ? __mmask16(0xffff) : tail;
        __m512 acc = _mm512_load_ps(s + c);
        for (int64_t ow = 0; ow < g.outW; ++ow)
          acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(lanes, rowStart + ow * yW_ + c));
        _mm512_store_ps(s + c, acc);
      }
    }
  }
  /// Weights [KH * KW][paddedC] then bias [paddedC], zero-padded.
  void fill(const float *w, const float *b, float *p) const {
    const int64_t taps = g_.kernelH * g_.kernelW;
    std::fill(p, p + (taps + 1) * paddedC_, 0.0f);
    for (int64_t c = 0; c < g_.channels; ++c) {
      for (int64_t i = 0; i < g_.kernelH; ++i)
        for (int64_t j = 0; j < g_.kernelW; ++j)
          p[(i * g_.kernelW + j) * paddedC_ + c] =
              w[c * wStrides_[0] + i * wStrides_[2] + j * wStrides_[3]];
      if (b)
        p[taps * paddedC_ + c] = b[c * bStride_];
    }
  }

  DepthwiseGeometry g_;
  onednn::PreparedWeights params_;
  int64_t yN_ = 0, yH_ = 0, yW_ = 0;
  std::vector<int64_t> wStrides_;
  int64_t bStride_ = 0;
  int64_t paddedC_ = 0;
  std::vector<Segment> segments_;
  std::vector<int64_t> borderColumns_;
  // The clamp applied before stores (see clamp()) and the op it comes from.
  float lo_ = -std::numeric_limits<float>::infinity(), hi_ = std::numeric_limits<float>::infinity();
  float zero_ = -0.0f;
  std::string foldedOp_;
  int64_t bandRows_ = 1, groupChannels_ = 16;
  Epilogue epilogue_;
  std::pair<int64_t, int64_t> outSpan_;
  std::vector<std::pair<int64_t, int64_t>> extraSpans_;
  std::string description_;
};

/// The depthwise convolution as a kernel: its input rows are those of
/// input 0. With `pool`, also the global average pool of the result
/// (output 1): each thread adds the channels of its bands of rows as they
/// complete into its own slot, the slots' means are written after.
class ChannelsLastDepthwiseKernel final : public KernelBase {
public:
  ChannelsLastDepthwiseKernel(const DepthwiseGeometry &g, const KernelDesc &anchor,
                              const std::vector<KernelDesc> &chain, const KernelDesc *pool,
                              bool constantParams, const std::string &what)
      : rows_(g, anchor, chain, constantParams, what), firstExtra_(anchor.inputs.size()),
        pool_(pool != nullptr) {
    std::vector<int64_t> xs = anchor.inputs[0]->effectiveStrides();
    xN_ = xs[0], xH_ = xs[2], xW_ = xs[3];
    if (pool) {
      std::vector<int64_t> ps = pool->outputs[0].effectiveStrides();
      pN_ = ps[0], pC_ = ps[1];
    }
    description_ =
        rows_.describe() + (pool_ ? ", then its global average pool from each band)" : ")");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const DepthwiseGeometry &g = rows_.geometry();
    const float *x = static_cast<const float *>(args.inputs[0]);
    Scratch paramScratch;
    const float *params =
        rows_.prepare(static_cast<const float *>(args.inputs[1]),
                      g.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr,
                      paramScratch);
    const void *const *extra = args.inputs + firstExtra_;
    auto row = [&](int64_t n, int64_t ih) { return x + n * xN_ + ih * xH_; };
    const DepthwiseInput in{row, xW_};
    const int64_t macs = g.batch * g.outH * g.outW * g.channels * g.kernelH * g.kernelW;
    const DepthwiseRows::PoolOutput means{
        pool_ ? static_cast<float *>(args.outputs[1]) : nullptr, pN_, pC_};
    rows_.forEachPiece(pool, static_cast<float *>(args.outputs[0]), extra, macs,
                       pool_ ? &means : nullptr,
                       [&](int64_t begin, int64_t end, float *y,
                           const DepthwiseRows::BandDone *done) {
                         rows_.computeRows(in, params, y, extra, begin, end, done, 0);
                       });
  }

private:
  ChannelsLastDepthwiseRows rows_;
  size_t firstExtra_;
  bool pool_;
  int64_t pN_ = 0, pC_ = 0; // the pool's strides along N and C
  int64_t xN_ = 0, xH_ = 0, xW_ = 0;
};

bool positiveOrUnit(const KernelOperand &o) {
  std::vector<int64_t> s = o.effectiveStrides();
  for (size_t d = 0; d < s.size(); ++d)
    if (o.shape[d] != 1 && s[d] <= 0)
      return false;
  return true;
}

} // namespace

bool channelsLastDepthwiseUnrolled(const DepthwiseGeometry &g) {
  return (g.kernelW == 3 || g.kernelW == 5) && (g.strideW == 1 || g.strideW == 2) &&
         g.dilationW == 1;
}

std::string channelsLastDepthwiseMismatch(const DepthwiseGeometry &g, const KernelDesc &anchor,
                                          const KernelOperand &out) {
  if (std::string why = avx512Float32Mismatch(anchor, out); !why.empty())
    return why;
  const KernelOperand &x = *anchor.inputs[0];
  if (x.shape.size() != 4 || out.shape.size() != 4 || g.channels < 2)
    return "not a 2-D convolution over several channels";
  if (x.effectiveStrides()[1] != 1 || out.effectiveStrides()[1] != 1)
    return "the channels of the input or the result are not innermost";
  for (const auto &in : anchor.inputs)
    if (in && !positiveOrUnit(*in))
      return "an operand has a zero or negative stride";
  if (!positiveOrUnit(out))
    return "the result has a zero or negative stride";
  return "";
}

std::unique_ptr<Kernel> makeChannelsLastDepthwise(const DepthwiseGeometry &g,
                                                  const KernelDesc &anchor,
                                                  const std::vector<KernelDesc> &chain,
                                                  bool constantParams, const std::string &what) {
  return std::make_unique<ChannelsLastDepthwiseKernel>(g, anchor, chain, nullptr, constantParams,
                                                       what);
}

std::unique_ptr<DepthwiseRows> makeChannelsLastDepthwiseRows(const DepthwiseGeometry &g,
                                                             const KernelDesc &anchor,
                                                             const std::vector<KernelDesc> &chain,
                                                             bool constantParams,
                                                             const std::string &what) {
  return std::make_unique<ChannelsLastDepthwiseRows>(g, anchor, chain, constantParams, what);
}

std::string wholePoolMismatch(const KernelDesc &pool, const KernelOperand &result) {
  if (pool.kind() != OpKind::GlobalAvgPool || pool.inputs.size() != 1 || !pool.inputs[0] ||
      !(*pool.inputs[0] == result) || pool.outputs.size() != 1 || result.shape.size() != 4 ||
      pool.outputs[0].dtype != CGC_DTYPE_FLOAT32 ||
      pool.outputs[0].shape != std::vector<int64_t>{result.shape[0], result.shape[1], 1, 1})
    return cat(pool.op, ": not a float32 global average pool of the whole result");
  return "";
}

std::unique_ptr<Kernel> makeChannelsLastDepthwisePool(const DepthwiseGeometry &g,
                                                      const KernelDesc &anchor,
                                                      const std::vector<KernelDesc> &chain,
                                                      const KernelDesc &pool, bool constantParams,
                                                      const std::string &what,
                                                      std::string &reason) {
  const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
  reason = wholePoolMismatch(pool, out);
  if (!reason.empty())
    return nullptr;
  return std::make_unique<ChannelsLastDepthwiseKernel>(g, anchor, chain, &pool, constantParams,
                                                       what);
}

} // namespace cgc::cpu
