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
// took 9.2 ms for 24 -> 1 2x2 s2 on 320x320 (issue 29). Few output channels
// only (outC * kh * kw <= 64): there each input row is read from cache for
// every (o, i, j); with more, oneDNN's GEMM-based kernel keeps the weights
// and rows in registers better.
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

CGC_TARGET_AVX512 void bandAvx512(const float *x, int64_t planeStride, const float *w,
                                  int64_t wStride, float bias, int64_t C, int64_t KH, int64_t KW,
                                  int64_t W, float *acc, float *out, int64_t outRowStride) {
  const int64_t T = KH * KW;
  if (KW != 2) {
    CGC_DECONV_BAND_BODY
    return;
  }
  // 2-wide taps (the common 2x2 s2): the same sums, then each pair of tap
  // rows interleaved 16 + 16 -> 32 outputs with two permutes.
  for (int64_t t = 0; t < T; ++t)
    std::fill(acc + t * W, acc + (t + 1) * W, bias);
  for (int64_t c = 0; c < C; ++c) {
    const float *xc = x + c * planeStride;
    const float *wc = w + c * wStride;
    for (int64_t t = 0; t < T; ++t) {
      const float wv = wc[t];
      float *__restrict a = acc + t * W;
      for (int64_t q = 0; q < W; ++q)
        a[q] += wv * xc[q];
    }
  }
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15,
                                       31);
  for (int64_t i = 0; i < KH; ++i) {
    const float *a0 = acc + (i * 2) * W, *a1 = acc + (i * 2 + 1) * W;
    float *row = out + i * outRowStride;
    int64_t q = 0;
    for (; q + 16 <= W; q += 16) {
      const __m512 v0 = _mm512_loadu_ps(a0 + q), v1 = _mm512_loadu_ps(a1 + q);
      _mm512_storeu_ps(row + 2 * q, _mm512_permutex2var_ps(v0, lo, v1));
      _mm512_storeu_ps(row + 2 * q + 16, _mm512_permutex2var_ps(v0, hi, v1));
    }
    for (; q < W; ++q) {
      row[2 * q] = a0[q];
      row[2 * q + 1] = a1[q];
    }
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
  NonOverlappingDeconv(const ConvGeom &g, Epilogue epilogue, size_t firstExtra,
                       std::string summary)
      : g_(g), epilogue_(std::move(epilogue)), firstExtra_(firstExtra) {
    description_ = geomText(g) + summary + " (direct, taps do not overlap: one block per input)";
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
    // One task per (n, o, input row): KH output rows.
    const int64_t bands = g_.batch * O * H;
    auto band = cpuHasAvx512() ? bandAvx512 : bandBase;
    pool.parallelFor(bands, 1, [&](int64_t begin, int64_t end) {
      Scratch buf(size_t(KH * KW * W) * sizeof(float));
      float *acc = buf.as<float>();
      for (int64_t b0 = begin; b0 < end; ++b0) {
        const int64_t row = b0 % H, o = (b0 / H) % O, n = b0 / (H * O);
        float *out = y + ((n * O + o) * OH + row * KH) * OW;
        band(x + (n * C * H + row) * W, H * W, w + o * KH * KW, O * KH * KW, b ? b[o] : 0.0f, C,
             KH, KW, W, acc, out, OW);
        if (!epilogue_.empty()) {
          const int64_t first = ((n * O + o) * OH + row * KH) * OW;
          epilogue_.apply(reinterpret_cast<char *>(y), extra.data(), first, first + KH * OW);
        }
      }
    });
  }

private:
  ConvGeom g_;
  Epilogue epilogue_;
  size_t firstExtra_;
};

} // namespace

bool nonOverlappingDeconvApplies(const ConvGeom &g, const KernelDesc &desc,
                                 const KernelOperand &out) {
  if (!g.transpose || g.spatial() != 2 || g.groups != 1 || g.outC * g.kernelSize() > 64)
    return false;
  for (size_t d = 0; d < 2; ++d)
    if (g.stride[d] != g.kernel[d] || g.dilation[d] != 1 || g.padBegin[d] != 0 ||
        g.padEnd[d] != 0 || g.outPad[d] != 0 || g.out[d] != g.in[d] * g.kernel[d])
      return false;
  for (const auto &in : desc.inputs)
    if (in && (in->dtype != CGC_DTYPE_FLOAT32 || !in->isContiguous()))
      return false;
  return out.dtype == CGC_DTYPE_FLOAT32 && out.isContiguous() && numElements(out.shape) > 0 &&
         g.batch * g.inC * g.in[0] * g.in[1] > 0;
}

std::unique_ptr<Kernel> makeNonOverlappingDeconv(const ConvGeom &g, Epilogue epilogue,
                                                 size_t firstExtra, std::string summary) {
  return std::make_unique<NonOverlappingDeconv>(g, std::move(epilogue), firstExtra,
                                                std::move(summary));
}

} // namespace cgc::cpu::conv
