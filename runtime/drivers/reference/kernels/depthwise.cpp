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
// rows outside the input are skipped; input columns outside it read a
// vector of zeros instead, in the border segments only. A channel count
// that is not a multiple of 16 ends with a masked vector. Kernels 3 and 5
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
// Threads: output rows of all images in about two contiguous pieces per pool
// thread (ThreadPool::run claims them), unless the convolution is too small
// to be worth splitting.
//
//===----------------------------------------------------------------------===//

#include "depthwise.h"

#include "math.h"
#include "onednn.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <utility>


namespace cgc::ref {
namespace {

/// The widest column segment (accumulator registers).
constexpr int kMaxColumns = 16;
/// L1 budget for the input rows one channel group reads over a band.
constexpr int64_t kGroupBytes = 48 << 10;
/// Below this many multiply-adds a convolution runs in one piece.
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
};

/// Computes output columns [ow0, ow0 + R) of a row for channels [c0, c1)
/// (c0 a multiple of 16; c1 too unless it is the channel count).
using SegmentFn = void (*)(const RowArgs &, int64_t ow0, int64_t c0, int64_t c1);

/// Sixteen zeros: what an input column outside the input reads. (Loading
/// from it instead of masking a load of an address outside the row: a
/// masked-off load that touches an unmapped page, which the columns left of
/// a tensor's first pixel may be, is architecturally harmless but measured
/// 5x slower for a whole 7x7 convolution on this machine.)
alignas(64) const float kZeros[16] = {};

/// Keeps `p` opaque to the optimizer: pointers stepped through a row stay a
/// chain of additions instead of one precomputed offset per column (which
/// for 16+ columns spilled to the stack and cost a reload per load).
template <class T> CGC_INLINE void opaque(T *&p) { asm("" : "+r"(p)); }

/// R output columns x 16 channels from `c`, kernel KW wide, stride SW, no
/// dilation along W. Checked: input columns outside [0, inW) read zeros;
/// Tail: only `lanes` are read and written (the last, partial channel
/// vector).
template <int KW, int SW, int R, bool Checked, bool Tail>
CGC_TARGET_AVX512 CGC_INLINE void tileFixed(const RowArgs &a, int64_t ow0, int64_t c,
                                            __mmask16 lanes) {
  constexpr int NJ = (R - 1) * SW + KW; // input columns read
  const int64_t ix0 = ow0 * SW - a.padLeft;
  uint64_t inside = 0; // bit j: input column ix0 + j is inside the input
  if constexpr (Checked) {
#pragma clang loop unroll(full)
    for (int j = 0; j < NJ; ++j)
      inside |= uint64_t(uint64_t(ix0 + j) < uint64_t(a.inW)) << j;
  }
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
    // Column ix0 (Checked: possibly left of the row, then never read).
    const float *p = Checked ? a.rows[i] + c : a.rows[i] + c + ix0 * xp;
    if constexpr (Checked)
      p = reinterpret_cast<const float *>(reinterpret_cast<uintptr_t>(p) + ix0 * xp * 4);
#pragma clang loop unroll(full)
    for (int j = 0; j < NJ; ++j) {
      const float *q = p;
      if constexpr (Checked)
        q = (inside >> j) & 1 ? p : kZeros;
      __m512 v = Tail ? _mm512_maskz_loadu_ps(lanes, q) : _mm512_loadu_ps(q);
      if constexpr (Checked)
        p = reinterpret_cast<const float *>(reinterpret_cast<uintptr_t>(p) + xp * 4);
      else
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
    if constexpr (Tail)
      _mm512_mask_storeu_ps(out, lanes, acc[r]);
    else
      _mm512_storeu_ps(out, acc[r]);
    out += a.yPixel;
    opaque(out);
  }
}

/// Checked: some input column of the segment is outside the input.
template <int KW, int SW, int R, bool Checked>
CGC_TARGET_AVX512 void segmentFixed(const RowArgs &args, int64_t ow0, int64_t c0, int64_t c1) {
  const RowArgs a = args; // a local copy: vector stores cannot alias it
  int64_t c = c0;
  for (; c + 16 <= c1; c += 16)
    tileFixed<KW, SW, R, Checked, false>(a, ow0, c, __mmask16(0xffff));
  if (c < c1)
    tileFixed<KW, SW, R, Checked, true>(a, ow0, c, __mmask16((1u << (c1 - c)) - 1));
}

/// Any kernel width, stride and dilation along W: a runtime loop over the
/// taps; per tap the R columns' inputs are loaded straight into the FMAs
/// (one load per FMA, no reuse across taps, which dilation breaks).
template <int R, bool Checked, bool Tail>
CGC_TARGET_AVX512 CGC_INLINE void tileAny(const RowArgs &a, int64_t ow0, int64_t c,
                                          __mmask16 lanes) {
  __m512 acc[R];
  const __m512 b = _mm512_load_ps(a.bias + c);
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r)
    acc[r] = b;
  const int64_t cp = a.paddedChannels, xp = a.xPixel;
  const int64_t ix0 = ow0 * a.strideW - a.padLeft;
  const uintptr_t stepR = uintptr_t(a.strideW * xp * 4), stepK = uintptr_t(a.dilationW * xp * 4);
  for (int64_t i = 0; i < a.numRows; ++i) {
    const float *wr = a.weights + i * a.kernelW * cp + c;
    // Column ix0 of the row (Checked: possibly outside it, then never read).
    uintptr_t pk = reinterpret_cast<uintptr_t>(a.rows[i] + c) + uintptr_t(ix0 * xp * 4);
    for (int64_t k = 0; k < a.kernelW; ++k, pk += stepK) {
      const __m512 wv = _mm512_load_ps(wr + k * cp);
      const float *p = reinterpret_cast<const float *>(pk);
      const int64_t col0 = ix0 + k * a.dilationW;
#pragma clang loop unroll(full)
      for (int r = 0; r < R; ++r) {
        const float *q = p;
        if constexpr (Checked)
          q = uint64_t(col0 + r * a.strideW) < uint64_t(a.inW) ? p : kZeros;
        const __m512 v = Tail ? _mm512_maskz_loadu_ps(lanes, q) : _mm512_loadu_ps(q);
        acc[r] = _mm512_fmadd_ps(v, wv, acc[r]);
        p = reinterpret_cast<const float *>(reinterpret_cast<uintptr_t>(p) + stepR);
        opaque(p);
      }
    }
  }
  float *out = a.y + ow0 * a.yPixel + c;
#pragma clang loop unroll(full)
  for (int r = 0; r < R; ++r) {
    if constexpr (Tail)
      _mm512_mask_storeu_ps(out, lanes, acc[r]);
    else
      _mm512_storeu_ps(out, acc[r]);
    out += a.yPixel;
    opaque(out);
  }
}

template <int R, bool Checked>
CGC_TARGET_AVX512 void segmentAny(const RowArgs &args, int64_t ow0, int64_t c0, int64_t c1) {
  const RowArgs a = args; // a local copy: vector stores cannot alias it
  int64_t c = c0;
  for (; c + 16 <= c1; c += 16)
    tileAny<R, Checked, false>(a, ow0, c, __mmask16(0xffff));
  if (c < c1)
    tileAny<R, Checked, true>(a, ow0, c, __mmask16((1u << (c1 - c)) - 1));
}

/// Segment functions for R = 1..kMaxColumns.
using SegmentTable = std::array<SegmentFn, kMaxColumns>;

template <int KW, int SW, bool Checked, size_t... I>
constexpr SegmentTable fixedTable(std::index_sequence<I...>) {
  return {{&segmentFixed<KW, SW, int(I) + 1, Checked>...}};
}
template <bool Checked, size_t... I>
constexpr SegmentTable anyTable(std::index_sequence<I...>) {
  return {{&segmentAny<int(I) + 1, Checked>...}};
}

/// The segment function for R columns; `checked` if they read outside
/// the input's columns.
SegmentFn segmentFunction(const DepthwiseGeometry &g, int r, bool checked) {
  using Seq = std::make_index_sequence<kMaxColumns>;
  static const SegmentTable any[2] = {anyTable<false>(Seq{}), anyTable<true>(Seq{})};
  static const SegmentTable tables[2][2][2] = {
      // [kernel 3/5][stride 1/2][checked]
      {{fixedTable<3, 1, false>(Seq{}), fixedTable<3, 1, true>(Seq{})},
       {fixedTable<3, 2, false>(Seq{}), fixedTable<3, 2, true>(Seq{})}},
      {{fixedTable<5, 1, false>(Seq{}), fixedTable<5, 1, true>(Seq{})},
       {fixedTable<5, 2, false>(Seq{}), fixedTable<5, 2, true>(Seq{})}},
  };
  if (!channelsLastDepthwiseUnrolled(g))
    return any[checked][size_t(r - 1)];
  return tables[g.kernelW == 5][g.strideW == 2][checked][size_t(r - 1)];
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

class ChannelsLastDepthwiseKernel final : public KernelBase {
public:
  ChannelsLastDepthwiseKernel(const DepthwiseGeometry &g, const KernelDesc &anchor,
                              const std::vector<KernelDesc> &chain, bool constantParams,
                              const std::string &what)
      : g_(g), firstExtra_(anchor.inputs.size()), constant_(constantParams) {
    const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
    std::vector<int64_t> xs = anchor.inputs[0]->effectiveStrides();
    std::vector<int64_t> ys = out.effectiveStrides();
    xN_ = xs[0], xH_ = xs[2], xW_ = xs[3];
    yN_ = ys[0], yH_ = ys[2], yW_ = ys[3];
    const KernelOperand &w = *anchor.inputs[1];
    wStrides_ = w.effectiveStrides();
    weights_.dims = w.shape;
    weights_.strides = wStrides_;
    if (g.hasBias)
      bStride_ = anchor.inputs[2]->effectiveStrides()[0];
    paddedC_ = (g.channels + 15) / 16 * 16;
    epilogue_ = Epilogue(anchor.outputs[0].shape, CGC_DTYPE_FLOAT32, chain, ys, {0, 2, 3, 1});
    outSpan_ = byteSpan(out);
    for (const KernelDesc &op : chain)
      for (size_t i = 1; i < op.inputs.size(); ++i)
        extraSpans_.push_back(byteSpan(*op.inputs[i]));
    // Column segments: equal sizes of at most kMaxColumns.
    const int64_t W = g.inW, extW = g.dilationW * (g.kernelW - 1);
    // Columns [owLo, owHi) read only inside the input.
    const int64_t owLo = (g.padLeft + g.strideW - 1) / g.strideW;
    const int64_t last = W - 1 - extW + g.padLeft; // last input start column + padLeft
    const int64_t owHi = last < 0 ? 0 : std::min(g.outW, last / g.strideW + 1);
    const int64_t maxCols = maxColumns(g);
    const int64_t count = (g.outW + maxCols - 1) / maxCols;
    int widest = 0;
    for (int64_t i = 0, ow = 0; i < count; ++i) {
      int r = int(g.outW / count + (i < g.outW % count ? 1 : 0));
      bool checked = ow < owLo || ow + r > owHi;
      segments_.push_back({ow, segmentFunction(g, r, checked)});
      widest = std::max(widest, r);
      ow += r;
    }
    // Bands of up to 8 rows whose results (about 256 KB) stay in L2 for the
    // epilogue; channel groups whose input rows over a band fit in L1.
    const int64_t rowBytes = g.outW * g.channels * 4;
    bandRows_ = std::clamp<int64_t>((256 << 10) / std::max<int64_t>(1, rowBytes), 2, 8);
    const int64_t bandInRows = (bandRows_ - 1) * g.strideH + g.dilationH * (g.kernelH - 1) + 1;
    groupChannels_ = std::max<int64_t>(16, kGroupBytes / (bandInRows * g.inW * 4) / 16 * 16);
    std::string summary;
    for (const KernelDesc &op : chain)
      summary += "+" + op.op.substr(7);
    const bool fixed = channelsLastDepthwiseUnrolled(g);
    description_ = cat(what, summary, " (direct depthwise, channels-last AVX-512, ", widest,
                       "-column blocks", fixed ? "" : ", generic taps",
                       constant_ ? ", weights prepared once" : "", ")");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    float *y = static_cast<float *>(args.outputs[0]);
    Scratch paramScratch;
    const float *params = prepare(args, paramScratch);
    std::vector<const void *> extra(epilogue_.numExtraOperands());
    for (size_t i = 0; i < extra.size(); ++i)
      extra[i] = args.inputs[firstExtra_ + i];
    // An extra operand sharing bytes with the result: stage the rows.
    bool overlap = false;
    const char *yb = reinterpret_cast<const char *>(y);
    for (size_t i = 0; i < extra.size(); ++i) {
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
    const int64_t rows = g_.batch * g_.outH;
    const int64_t macs = rows * g_.outW * g_.channels * g_.kernelH * g_.kernelW;
    const int64_t pieces =
        pool.size() == 1 || macs < kMinSplitMacs ? 1 : std::min<int64_t>(rows, 2 * pool.size());
    auto range = [&](int64_t p, int64_t &begin, int64_t &end) {
      begin = p * (rows / pieces) + std::min(p, rows % pieces);
      end = begin + rows / pieces + (p < rows % pieces ? 1 : 0);
    };
    pool.run(size_t(pieces), [&](size_t p) {
      int64_t begin, end;
      range(int64_t(p), begin, end);
      computeRows(x, params, dst, extra.data(), begin, end);
    });
    if (overlap)
      pool.run(size_t(pieces), [&](size_t p) {
        int64_t begin, end;
        range(int64_t(p), begin, end);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t off = (r / g_.outH) * yN_ + (r % g_.outH) * yH_;
          for (int64_t ow = 0; ow < g_.outW; ++ow)
            std::copy(dst + off + ow * yW_, dst + off + ow * yW_ + g_.channels,
                      y + off + ow * yW_);
        }
      });
  }

private:
  struct Segment {
    int64_t ow0;
    SegmentFn fn;
  };
  struct Prepared {
    const void *weights, *bias;
    std::shared_ptr<AlignedBuffer> data;
  };

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

  const float *prepare(const KernelArgs &args, Scratch &scratch) const {
    const float *w = static_cast<const float *>(args.inputs[1]);
    const float *b = g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    const size_t bytes = size_t((g_.kernelH * g_.kernelW + 1) * paddedC_) * sizeof(float);
    if (!constant_) {
      scratch.allocate(bytes);
      fill(w, b, scratch.as<float>());
      return scratch.as<float>();
    }
    const float *ready;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const Prepared &p : prepared_)
        if (p.weights == w && p.bias == b)
          return static_cast<const float *>(p.data->data());
      auto data = std::make_shared<AlignedBuffer>(bytes);
      fill(w, b, static_cast<float *>(data->data()));
      prepared_.push_back({w, b, data});
      ready = static_cast<const float *>(data->data());
    }
    // Only the prepared copy is read from now on.
    pageOut_.release(weights_, w);
    return ready;
  }

  /// Output rows [begin, end) (of all images, n * outH + oh) in bands:
  /// each band is computed one channel group at a time, so the input rows a
  /// group reads stay in L1 across the band's rows, then the epilogue runs
  /// over the band while it is in L2.
  void computeRows(const float *x, const float *params, float *y, const void *const *extra,
                   int64_t begin, int64_t end) const {
    const DepthwiseGeometry &g = g_;
    std::vector<const float *> rowPtrs(size_t(g.kernelH));
    RowArgs a;
    a.rows = rowPtrs.data();
    a.bias = params + g.kernelH * g.kernelW * paddedC_;
    a.channels = g.channels;
    a.paddedChannels = paddedC_;
    a.xPixel = xW_;
    a.inW = g.inW;
    a.kernelW = g.kernelW;
    a.strideW = g.strideW;
    a.dilationW = g.dilationW;
    a.padLeft = g.padLeft;
    a.yPixel = yW_;
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
            rowPtrs[size_t(i)] = x + n * xN_ + (ih0 + (lo + i) * g.dilationH) * xH_;
          a.weights = params + lo * g.kernelW * paddedC_;
          a.y = y + n * yN_ + oh * yH_;
          for (const Segment &s : segments_)
            s.fn(a, s.ow0, c0, c1);
        }
      }
      if (!epilogue_.empty())
        epilogue_.apply(reinterpret_cast<char *>(y), extra, b0 * rowElems, b1 * rowElems);
    }
  }

  DepthwiseGeometry g_;
  size_t firstExtra_;
  bool constant_;
  int64_t xN_ = 0, xH_ = 0, xW_ = 0, yN_ = 0, yH_ = 0, yW_ = 0;
  std::vector<int64_t> wStrides_;
  int64_t bStride_ = 0;
  int64_t paddedC_ = 0;
  onednn::PlainOperand weights_; // for handing the source pages back
  std::vector<Segment> segments_;
  int64_t bandRows_ = 1, groupChannels_ = 16;
  Epilogue epilogue_;
  std::pair<int64_t, int64_t> outSpan_;
  std::vector<std::pair<int64_t, int64_t>> extraSpans_;
  mutable std::mutex mutex_;
  mutable std::vector<Prepared> prepared_;
  mutable onednn::SourcePageOut pageOut_;
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
  if (!cpuHasAvx512())
    return "the CPU has no AVX-512";
  for (const auto &in : anchor.inputs)
    if (in && in->dtype != CGC_DTYPE_FLOAT32)
      return "an operand is not float32";
  if (out.dtype != CGC_DTYPE_FLOAT32)
    return "the result is not float32";
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
  return std::make_unique<ChannelsLastDepthwiseKernel>(g, anchor, chain, constantParams, what);
}

} // namespace cgc::ref
