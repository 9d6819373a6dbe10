//===- deconv_direct.cpp - Transposed convolutions whose taps do not overlap ===//
//
// A 2-D conv_transpose whose stride equals its kernel (2x2 s2, the
// upsampling of detection and segmentation heads, U-Net's decoders) with no
// padding, dilation or groups: every input position writes its own kh x kw
// block of the output, so
//
//   y[n, o, y*kh + i, x*kw + j] = b[o] + sum_c x[n, c, y, x] * w[c, o, i, j]
//
// with no accumulation across positions. Per output row band (n, o, y) and
// tap row i, kw accumulator rows over the input row (FMAs of a broadcast
// weight and a row of x, vectorized along x), then interleaved into the
// output rows. The useful FLOPs are all there is; oneDNN's deconvolution
// took 9.2 ms for 24 -> 1 2x2 s2 on 320x320 (issue 29). With 2-wide taps
// (kw = 2, kh <= 4) on AVX-512, any number of output channels: the taps'
// accumulators of up to 64 columns stay in registers over all input
// channels (each input vector loaded once for the 2*kh taps) and are
// interleaved into the output rows from there; oneDNN's deconvolution took
// 16.8 ms for DBNet's 24 -> 24 2x2 s2 on 160x160, this kernel ~1 ms. Other
// tap shapes: few output channels only (outC * kh * kw <= 64), each input row
// read from cache for every (o, i, j).
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "elementwise.h"

#include <algorithm>
#include <cstring>

#include <immintrin.h>

namespace cgc::cpu::conv {

namespace {

/// One band: acc[t][0..W) = bias + sum_c w[c*O*T + t] * x[c][0..W) for the
/// T = kh * kw taps of one output channel (w already at [0, o]), each input
/// row read once for all taps; then the taps interleaved into the kh output
/// rows. The same source twice: for AVX-512 and for the baseline.
#define CGC_DECONV_BAND_BODY                                                        \
  for (int64_t t = 0; t < T; ++t)                                                   \
    std::fill(acc + t * W, acc + (t + 1) * W, bias);                                \
  for (int64_t c = 0; c < C; ++c) {                                                 \
    const float *xc = x + c * planeStride;                                          \
    const float *wc = w + c * wStride;                                              \
    for (int64_t t = 0; t < T; ++t) {                                               \
      const float wv = wc[t];                                                       \
      float *__restrict a = acc + t * W;                                            \
      for (int64_t q = 0; q < W; ++q)                                               \
        a[q] += wv * xc[q];                                                         \
    }                                                                               \
  }                                                                                 \
  for (int64_t i = 0; i < KH; ++i) {                                                \
    float *__restrict row = out + i * outRowStride;                                 \
    for (int64_t q = 0; q < W; ++q)                                                 \
      for (int64_t j = 0; j < KW; ++j)                                              \
        row[q * KW + j] = acc[(i * KW + j) * W + q];                                \
  }

/// 2-wide taps, KH tap rows: the 2 * KH accumulators of Q vectors of input
/// columns (cols of them valid, 16 * (Q - 1) < cols <= 16 * Q) summed over the
/// C input channels in registers, then each pair of tap rows interleaved
/// 16 + 16 -> 32 outputs with two permutes and stored.
template <int KH, int Q>
CGC_TARGET_AVX512 void block2(const float *x, int64_t planeStride, const float *w,
                              int64_t wStride, float bias, int64_t C, int64_t cols, float *out,
                              int64_t outRowStride) {
  constexpr int T = 2 * KH;
  const int64_t lastCols = cols - 16 * (Q - 1);
  const __mmask16 last = lastCols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << lastCols) - 1);
  __m512 acc[T][Q];
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < Q; ++v)
      acc[t][v] = _mm512_set1_ps(bias);
  for (int64_t c = 0; c < C; ++c) {
    const float *xc = x + c * planeStride;
    const float *wc = w + c * wStride;
    __m512 xv[Q];
    for (int v = 0; v + 1 < Q; ++v)
      xv[v] = _mm512_loadu_ps(xc + 16 * v);
    xv[Q - 1] = _mm512_maskz_loadu_ps(last, xc + 16 * (Q - 1));
    for (int t = 0; t < T; ++t) {
      const __m512 wv = _mm512_set1_ps(wc[t]);
      for (int v = 0; v < Q; ++v)
        acc[t][v] = _mm512_fmadd_ps(wv, xv[v], acc[t][v]);
    }
  }
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15,
                                       31);
  for (int i = 0; i < KH; ++i) {
    float *row = out + i * outRowStride;
    for (int v = 0; v < Q; ++v) {
      const __m512 a = _mm512_permutex2var_ps(acc[2 * i][v], lo, acc[2 * i + 1][v]);
      const __m512 b = _mm512_permutex2var_ps(acc[2 * i][v], hi, acc[2 * i + 1][v]);
      float *dst = row + 32 * v;
      if (v + 1 < Q || lastCols == 16) {
        _mm512_storeu_ps(dst, a);
        _mm512_storeu_ps(dst + 16, b);
      } else {
        const int64_t n = 2 * lastCols; // outputs of the last vector: 2 .. 30
        _mm512_mask_storeu_ps(dst, __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1), a);
        if (n > 16)
          _mm512_mask_storeu_ps(dst + 16, __mmask16((1u << (n - 16)) - 1), b);
      }
    }
  }
}

using Block2Fn = void (*)(const float *, int64_t, const float *, int64_t, float, int64_t, int64_t,
                          float *, int64_t);

/// Vectors per block by tap rows: 2 * KH * Q accumulators of at most 24.
constexpr int kBlock2Vectors[4] = {4, 4, 4, 3};

template <int KH> constexpr Block2Fn block2For(int q) {
  return q == 1 ? block2<KH, 1> : q == 2 ? block2<KH, 2> : q == 3 ? block2<KH, 3> : block2<KH, 4>;
}

Block2Fn block2Fn(int64_t KH, int q) {
  switch (KH) {
  case 1: return block2For<1>(q);
  case 2: return block2For<2>(q);
  case 3: return block2For<3>(q);
  default: return block2For<4>(std::min(q, 3));
  }
}

CGC_TARGET_AVX512 void bandAvx512(const float *x, int64_t planeStride, const float *w,
                                  int64_t wStride, float bias, int64_t C, int64_t KH, int64_t KW,
                                  int64_t W, float *acc, float *out, int64_t outRowStride) {
  const int64_t T = KH * KW;
  if (KW != 2 || KH > 4) {
    CGC_DECONV_BAND_BODY
    return;
  }
  const int64_t step = 16 * kBlock2Vectors[KH - 1];
  for (int64_t q0 = 0; q0 < W; q0 += step) {
    const int64_t cols = std::min(step, W - q0);
    block2Fn(KH, int((cols + 15) / 16))(x + q0, planeStride, w, wStride, bias, C, cols,
                                        out + 2 * q0, outRowStride);
  }
}

void bandBase(const float *x, int64_t planeStride, const float *w, int64_t wStride, float bias,
              int64_t C, int64_t KH, int64_t KW, int64_t W, float *acc, float *out,
              int64_t outRowStride) {
  const int64_t T = KH * KW;
  CGC_DECONV_BAND_BODY
}

#undef CGC_DECONV_BAND_BODY

class NonOverlappingDeconv final : public KernelBase {
public:
  NonOverlappingDeconv(const ConvGeom &g, bool channelsLastInput, Epilogue epilogue,
                       size_t firstExtra, std::string summary)
      : g_(g), channelsLastInput_(channelsLastInput), epilogue_(std::move(epilogue)),
        firstExtra_(firstExtra) {
    description_ = geomText(g) + summary + " (direct, taps do not overlap: one block per input" +
                   (channelsLastInput ? ", channels-last input rows transposed" : "") + ")";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    const float *w = static_cast<const float *>(args.inputs[1]);
    const float *b = g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *y = static_cast<float *>(args.outputs[0]);
    const int64_t C = g_.inC, O = g_.outC, H = g_.in[0], W = g_.in[1];
    const int64_t KH = g_.kernel[0], KW = g_.kernel[1], OH = g_.out[0], OW = g_.out[1];
    std::vector<const void *> extra(epilogue_.numExtraOperands());
    for (size_t i = 0; i < extra.size(); ++i)
      extra[i] = args.inputs[firstExtra_ + i];
    // One task per (n, input row): KH output rows of every output channel.
    // A channels-last input row ([W, C]) is transposed to [C, W] once for
    // all of them.
    const int64_t bands = g_.batch * H;
    auto band = cpuHasAvx512() ? bandAvx512 : bandBase;
    pool.parallelFor(bands, 1, [&](int64_t begin, int64_t end) {
      Scratch buf(size_t(KH * KW * W + (channelsLastInput_ ? C * W : 0)) * sizeof(float));
      float *acc = buf.as<float>();
      float *rowT = acc + KH * KW * W;
      for (int64_t b0 = begin; b0 < end; ++b0) {
        const int64_t row = b0 % H, n = b0 / H;
        const float *xr = x + (n * C * H + row) * W;
        int64_t planeStride = H * W;
        if (channelsLastInput_) {
          const float *src = x + (n * H + row) * W * C;
          for (int64_t q = 0; q < W; ++q)
            for (int64_t c = 0; c < C; ++c)
              rowT[c * W + q] = src[q * C + c];
          xr = rowT;
          planeStride = W;
        }
        for (int64_t o = 0; o < O; ++o) {
          const int64_t first = ((n * O + o) * OH + row * KH) * OW;
          band(xr, planeStride, w + o * KH * KW, O * KH * KW, b ? b[o] : 0.0f, C, KH, KW, W, acc,
               y + first, OW);
          if (!epilogue_.empty())
            epilogue_.apply(reinterpret_cast<char *>(y), extra.data(), first, first + KH * OW);
        }
      }
    });
  }

private:
  ConvGeom g_;
  bool channelsLastInput_;
  Epilogue epilogue_;
  size_t firstExtra_;
};

} // namespace

bool nonOverlappingDeconvApplies(const ConvGeom &g, const KernelDesc &desc,
                                 const KernelOperand &out) {
  if (!g.transpose || g.spatial() != 2 || g.groups != 1)
    return false;
  // Many outputs per position: the register-blocked 2-wide taps only.
  if (g.outC * g.kernelSize() > 64 && !(g.kernel[1] == 2 && g.kernel[0] <= 4 && cpuHasAvx512()))
    return false;
  for (size_t d = 0; d < 2; ++d)
    if (g.stride[d] != g.kernel[d] || g.dilation[d] != 1 || g.padBegin[d] != 0 ||
        g.padEnd[d] != 0 || g.outPad[d] != 0 || g.out[d] != g.in[d] * g.kernel[d])
      return false;
  // The input NCHW or channels-last (dense), the rest contiguous.
  for (size_t i = 0; i < desc.inputs.size(); ++i) {
    const auto &in = desc.inputs[i];
    if (in && (in->dtype != CGC_DTYPE_FLOAT32 ||
               !(in->isContiguous() || (i == 0 && channelsLast(*in)))))
      return false;
  }
  return out.dtype == CGC_DTYPE_FLOAT32 && out.isContiguous() && numElements(out.shape) > 0 &&
         g.batch * g.inC * g.in[0] * g.in[1] > 0;
}

std::unique_ptr<Kernel> makeNonOverlappingDeconv(const ConvGeom &g, const KernelOperand &x,
                                                 Epilogue epilogue, size_t firstExtra,
                                                 std::string summary) {
  return std::make_unique<NonOverlappingDeconv>(g, !x.isContiguous(), std::move(epilogue),
                                                firstExtra, std::move(summary));
}

} // namespace cgc::cpu::conv
