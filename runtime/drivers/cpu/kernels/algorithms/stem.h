//===- stem.h - Direct convolution of a few input channels ------*- C++ -*-===//
//
// A CNN's first convolution reads the image's 3 colour channels (NCHW, as
// the application binds it) and writes 32 or 64 channels-last: MobileNetV2
// and EfficientNet-B0 3->32 3x3 s2, ResNet-50 3->64 7x7 s2. oneDNN 2.6
// reorders the image to nhwc on every run and then runs brgconv, which with
// so few input channels reached 101 GFLOP/s on MobileNetV2's stem. This
// kernel reads the input in place (any strides) and keeps a row of output
// pixels x up to 64 channels in 24 zmm accumulators over all C x KH x KW
// taps: each tap is one broadcast per pixel and one weight load per vector.
// conv.cpp decides when it runs. Private to cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_STEM_H
#define CGC_CPU_KERNELS_STEM_H

#include "elementwise.h"

namespace cgc::cpu {

/// A 2-D ungrouped convolution; the output size implies the end padding.
struct StemGeometry {
  int64_t batch = 0, inC = 0, outC = 0;
  int64_t inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;
  bool hasBias = false;
};

/// At most this many input channels.
constexpr int64_t kStemMaxInputChannels = 4;

/// Empty if the kernel can run `anchor` (geometry `g`) writing `out`, else
/// why not: no AVX-512, not float32, more than kStemMaxInputChannels input
/// channels, no output channels, a result that is not dense channels-last,
/// an input stride that is not positive.
std::string stemConvolutionMismatch(const StemGeometry &g, const KernelDesc &anchor,
                                    const KernelOperand &out);

/// The kernel for `anchor` followed by `chain` (elementwise ops that keep
/// the shape and dtype; may be empty: a leading relu or clip is applied
/// before the store, the rest to each output row while it is in cache).
/// Weights and bias are prepared once per address when `constantParams`.
/// Throws DescError (naming the op) when an op of the chain cannot be an
/// epilogue.
std::unique_ptr<Kernel> makeStemConvolution(const StemGeometry &g, const KernelDesc &anchor,
                                            const std::vector<KernelDesc> &chain,
                                            bool constantParams, const std::string &what);

/// The kernel's work on output rows, for a kernel that consumes the rows
/// as they are made (expand_depthwise.h): the convolution and the leading
/// clip or relu of its chain, applied before the store; the rest of the
/// chain is the caller's.
class StemRows {
public:
  virtual ~StemRows() = default;
  /// "what+chain (direct, ..." without the closing parenthesis.
  virtual std::string describe() const = 0;
  /// How many ops at the front of the chain the rows apply (0 or 1).
  virtual size_t clampOps() const = 0;
  /// The weights `w` and bias `b` (may be null) as the rows read them:
  /// prepared once per address when the parameters are constant, else into
  /// `scratch` on every call.
  virtual const float *prepare(const float *w, const float *b, Scratch &scratch) const = 0;
  /// Output row r (n * outH + oh) of the image `x`, every channel, into
  /// `row`: outW pixels of outC channels, channels innermost.
  virtual void computeRow(const float *x, const float *params, float *row,
                          int64_t r) const = 0;
};

/// The rows of `anchor` followed by `chain`, as makeStemConvolution computes
/// them (stemConvolutionMismatch must be empty for `anchor`).
std::unique_ptr<StemRows> makeStemRows(const StemGeometry &g, const KernelDesc &anchor,
                                       const std::vector<KernelDesc> &chain, bool constantParams,
                                       const std::string &what);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_STEM_H
