//===- conv_depthwise_nchw.cpp - Depthwise convolutions on NCHW -----------===//
//
// The direct kernel for 2-D float32 depthwise convolutions on contiguous
// NCHW operands with planes of at least kDwMinPlane outputs: each plane
// zero-padded once, its rows computed in AVX-512 blocks, a fused chain
// applied to planes while they are in cache. conv.cpp decides when it runs.
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "math.h"

#include <algorithm>
#include <cstring>

namespace cgc::cpu::conv {
namespace {


/// One output row: out[x] = bias + sum over the kernel taps of w * in[...],
/// from a zero-padded input plane (no bounds checks). Blocks of 64 outputs
/// (four AVX-512 vectors, independent FMA chains) accumulate every tap in
/// registers and are stored once; the padded buffer has slack after the
/// plane so the last block may read past it.
constexpr int64_t kDwBlock = 64; // the widest block (slack is sized for it)

template <int64_t B>
CGC_INLINE void dwRowBody(const float *padded, int64_t paddedW, const float *w, int64_t kh,
                          int64_t kw, int64_t sw, int64_t dh, int64_t dw, int64_t ow, float bias,
                          float *out) {
  for (int64_t x0 = 0; x0 < ow; x0 += B) {
    float acc[B];
    for (int64_t l = 0; l < B; ++l)
      acc[l] = bias;
    for (int64_t i = 0; i < kh; ++i) {
      const float *row = padded + i * dh * paddedW + x0 * sw;
      for (int64_t j = 0; j < kw; ++j) {
        const float wv = w[i * kw + j];
        const float *src = row + j * dw;
        if (sw == 1) {
          for (int64_t l = 0; l < B; ++l)
            acc[l] += wv * src[l];
        } else if (sw == 2) {
          for (int64_t l = 0; l < B; ++l)
            acc[l] += wv * src[2 * l];
        } else {
          for (int64_t l = 0; l < B; ++l)
            acc[l] += wv * src[l * sw];
        }
      }
    }
    int64_t n = std::min(B, ow - x0);
    if (n == B) {
      for (int64_t l = 0; l < B; ++l)
        out[x0 + l] = acc[l];
    } else {
      for (int64_t l = 0; l < n; ++l)
        out[x0 + l] = acc[l];
    }
  }
}

/// Copies n floats; inline for the short rows of small planes (a libc
/// call per 7-float row costs more than the copy).
CGC_INLINE void copyFloats(float *dst, const float *src, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    __builtin_memcpy(dst + i, src + i, 8 * sizeof(float));
  for (; i < n; ++i)
    dst[i] = src[i];
}

/// Picks the block width for the row length.
CGC_INLINE void dwRowDispatch(const float *padded, int64_t paddedW, const float *w, int64_t kh,
                              int64_t kw, int64_t sw, int64_t dh, int64_t dw, int64_t ow,
                              float bias, float *out) {
  if (ow <= 16)
    dwRowBody<16>(padded, paddedW, w, kh, kw, sw, dh, dw, ow, bias, out);
  else if (ow <= 32)
    dwRowBody<32>(padded, paddedW, w, kh, kw, sw, dh, dw, ow, bias, out);
  else
    dwRowBody<64>(padded, paddedW, w, kh, kw, sw, dh, dw, ow, bias, out);
}
CGC_TARGET_AVX512 void dwRowAvx512(const float *padded, int64_t paddedW, const float *w,
                                   int64_t kh, int64_t kw, int64_t sw, int64_t dh, int64_t dw,
                                   int64_t ow, float bias, float *out) {
  dwRowDispatch(padded, paddedW, w, kh, kw, sw, dh, dw, ow, bias, out);
}
void dwRowBase(const float *padded, int64_t paddedW, const float *w, int64_t kh, int64_t kw,
               int64_t sw, int64_t dh, int64_t dw, int64_t ow, float bias, float *out) {
  dwRowDispatch(padded, paddedW, w, kh, kw, sw, dh, dw, ow, bias, out);
}

/// Channel multiplier 1 (groups == in == out channels), 2-D, float32, plain
/// NCHW operands. oneDNN's depthwise kernels need the blocked layout, and
/// the two reorders cost more than the convolution itself on NCHW
/// activations; this kernel works on the planes directly, one (n, c) plane
/// per task, and applies a fused epilogue to each output row while it is in
/// cache.
class DepthwiseKernel final : public KernelBase {
public:
  DepthwiseKernel(const ConvGeom &g, Epilogue epilogue, size_t firstExtra, std::string summary)
      : g_(g), epilogue_(std::move(epilogue)), firstExtra_(firstExtra) {
    description_ = geomText(g) + summary + " (direct depthwise)";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    const float *w = static_cast<const float *>(args.inputs[1]);
    const float *b = g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *y = static_cast<float *>(args.outputs[0]);
    const int64_t C = g_.inC, H = g_.in[0], W = g_.in[1], OH = g_.out[0], OW = g_.out[1];
    const int64_t KH = g_.kernel[0], KW = g_.kernel[1];
    const int64_t PT = g_.padBegin[0], PL = g_.padBegin[1];
    // Padded plane: rows and columns every tap of every output can read.
    const int64_t PH = (OH - 1) * g_.stride[0] + g_.dilation[0] * (KH - 1) + 1;
    const int64_t PW = (OW - 1) * g_.stride[1] + g_.dilation[1] * (KW - 1) + 1;
    std::vector<const void *> extra(epilogue_.numExtraOperands());
    for (size_t i = 0; i < extra.size(); ++i)
      extra[i] = args.inputs[firstExtra_ + i];
    auto row = cpuHasAvx512() ? dwRowAvx512 : dwRowBase;
    int64_t planes = g_.batch * C;
    // Slack after the plane: the last block of a row may read up to
    // kDwBlock * stride columns past it.
    const int64_t slack = kDwBlock * g_.stride[1] + 16;
    pool.parallelFor(planes, 1, [&](int64_t begin, int64_t end) {
      Scratch buf(size_t(PH * PW + slack) * sizeof(float));
      float *padded = buf.as<float>();
      std::fill(padded + PH * PW, padded + PH * PW + slack, 0.0f);
      Scratch full(size_t(OH * PW + kDwBlock) * sizeof(float));
      int64_t pendingFrom = begin * OH * OW;
      // The border of the padded plane is the same zeros for every plane:
      // clear the buffer once, then copy only the interior per plane.
      std::fill(padded, padded + PH * PW, 0.0f);
      const int64_t rowLo = std::max<int64_t>(0, PT), rowHi = std::min(PH, PT + H);
      const int64_t cols = std::max<int64_t>(0, std::min(W, PW - PL));
      for (int64_t plane = begin; plane < end; ++plane) {
        int64_t c = plane % C;
        const float *src = x + plane * H * W;
        for (int64_t r = rowLo; r < rowHi; ++r)
          copyFloats(padded + r * PW + PL, src + (r - PT) * W, cols);
        float *out = y + plane * OH * OW;
        const float *wc = w + c * KH * KW;
        const float bc = b ? b[c] : 0.0f;
        if (g_.stride[0] == 1 && g_.stride[1] == 1 && OW < 2 * kDwBlock) {
          // Narrow planes: one pass over the flattened padded grid (rows of
          // PW; the PW - OW extra columns are dropped) keeps blocks full.
          float *f = full.as<float>();
          row(padded, PW, wc, KH, KW, 1, g_.dilation[0], g_.dilation[1], (OH - 1) * PW + OW, bc, f);
          for (int64_t oh = 0; oh < OH; ++oh)
            copyFloats(out + oh * OW, f + oh * PW, OW);
        } else {
          for (int64_t oh = 0; oh < OH; ++oh)
            row(padded + oh * g_.stride[0] * PW, PW, wc, KH, KW, g_.stride[1], g_.dilation[0],
                g_.dilation[1], OW, bc, out + oh * OW);
        }
        if (!epilogue_.empty()) {
          // Applied to the planes done since the last application (still
          // in cache), at least ~8K elements at a time.
          int64_t doneEnd = (plane + 1) * OH * OW;
          if (doneEnd - pendingFrom >= 8192 || plane + 1 == end) {
            epilogue_.apply(reinterpret_cast<char *>(y), extra.data(), pendingFrom, doneEnd);
            pendingFrom = doneEnd;
          }
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

bool depthwiseApplies(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out) {
  if (g.transpose || g.spatial() != 2 || g.groups != g.inC || g.outC != g.inC || g.inC == 1)
    return false;
  for (const auto &in : desc.inputs)
    if (in && (in->dtype != CGC_DTYPE_FLOAT32 || !in->isContiguous()))
      return false;
  return out.dtype == CGC_DTYPE_FLOAT32 && out.isContiguous() && numElements(out.shape) > 0;
}

std::unique_ptr<Kernel> makeNchwDepthwise(const ConvGeom &g, Epilogue epilogue,
                                          size_t firstExtra, std::string summary) {
  return std::make_unique<DepthwiseKernel>(g, std::move(epilogue), firstExtra,
                                           std::move(summary));
}

} // namespace cgc::cpu::conv
