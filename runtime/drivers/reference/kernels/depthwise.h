//===- depthwise.h - Direct depthwise convolution, channels-last -*- C++ -*-===//
//
// The direct kernel for 2-D float32 depthwise convolutions (channel
// multiplier 1) whose activations are channels-last, the layout the JIT gives
// a CNN's intermediates. conv.cpp decides when it runs (makeConv,
// createFusedConvolution); this file has the AVX-512 kernel. Private to
// cgc_ref_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_KERNELS_DEPTHWISE_H
#define CGC_REFERENCE_KERNELS_DEPTHWISE_H

#include "elementwise.h"

namespace cgc::ref {

/// A 2-D depthwise convolution: groups == input channels == output
/// channels. The output size implies the end padding.
struct DepthwiseGeometry {
  int64_t batch = 0, channels = 0;
  int64_t inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;
  bool hasBias = false;
};

/// Empty if the channels-last depthwise kernel can run `anchor` (a
/// convolution with `g`'s geometry) writing a result laid out as `out`,
/// else why not: the CPU lacks AVX-512, an operand is not float32, the
/// input or the result does not have its channels innermost (stride 1) and
/// positive strides elsewhere.
std::string channelsLastDepthwiseMismatch(const DepthwiseGeometry &g, const KernelDesc &anchor,
                                          const KernelOperand &out);

/// True for the shapes the kernel has compile-time unrolled segments for
/// (kernels 3 or 5 wide, stride 1 or 2 and no dilation along W; any height,
/// vertical stride and dilation). Others run generic segments (runtime
/// loops over the taps), measured slower than oneDNN's nhwc kernel.
bool channelsLastDepthwiseUnrolled(const DepthwiseGeometry &g);

/// The kernel for `anchor` followed by `chain` (elementwise ops that keep
/// the shape and dtype; may be empty), applied to each output row while it
/// is in cache; the chain's extra operands are the inputs after the
/// anchor's. Weights and bias are prepared once per address when
/// `constantParams`. The description is `what` + " (direct depthwise,
/// channels-last AVX-512...)". Throws DescError (naming the op) when an op
/// of the chain cannot be an epilogue.
std::unique_ptr<Kernel> makeChannelsLastDepthwise(const DepthwiseGeometry &g,
                                                  const KernelDesc &anchor,
                                                  const std::vector<KernelDesc> &chain,
                                                  bool constantParams, const std::string &what);

} // namespace cgc::ref

#endif // CGC_REFERENCE_KERNELS_DEPTHWISE_H
