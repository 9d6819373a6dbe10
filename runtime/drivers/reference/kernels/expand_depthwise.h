//===- expand_depthwise.h - A 1x1 expansion fused into a depthwise -*- C++ -*-===//
//
// The inverted residual block of MobileNetV2 and EfficientNet expands its
// channels with a 1x1 convolution (16 -> 96 on 112x112), then filters the
// expanded value with a depthwise convolution. Run as two kernels, the
// expanded value (112 x 112 x 96 floats: 4.8 MB) is written to memory by the
// first and read back by the second, both beyond L2. Fused, each thread
// computes the expanded rows that a band of depthwise output rows needs into
// a ring of rows that stays in L2 (the packed GEMM of pointwise.h, then the
// expansion's chain), and the depthwise kernel (depthwise.h) reads them
// there: the expanded value is never stored. Rows that two bands share are
// computed once; only where two threads' pieces meet are a few rows
// computed twice. Private to cgc_ref_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_KERNELS_EXPAND_DEPTHWISE_H
#define CGC_REFERENCE_KERNELS_EXPAND_DEPTHWISE_H

#include "depthwise.h"

namespace cgc::ref {

/// The kernel computing `expand` (a 1x1 channels-last convolution that
/// pointwiseMismatch accepts) and its `expandChain`, then the depthwise
/// convolution `depthwise` (geometry `g`, which the direct channels-last
/// kernel runs) on that result and its `depthwiseChain`. Inputs in
/// KernelArgs order: the expansion's inputs, the expansion chain's extra
/// operands, the depthwise convolution's inputs after the first, the
/// depthwise chain's extra operands. Null, with `reason`, if the pair does
/// not fuse: an extra operand of the expansion chain varies across
/// positions, the depthwise parameters are not constant, the expanded
/// value fits in L2 anyway (fusing then only costs). `expandWhat` and
/// `depthwiseWhat` name the two convolutions in the description. With
/// `pool` (a global_avg_pool of the depthwise chain's whole result), the
/// kernel writes the pool's result too (output 1), from each band of rows
/// while it is in cache.
std::unique_ptr<Kernel> makeExpandDepthwise(const KernelDesc &expand,
                                            const std::vector<KernelDesc> &expandChain,
                                            const DepthwiseGeometry &g,
                                            const KernelDesc &depthwise,
                                            const std::vector<KernelDesc> &depthwiseChain,
                                            const KernelOptions &options,
                                            const std::string &expandWhat,
                                            const std::string &depthwiseWhat,
                                            const KernelDesc *pool, std::string &reason);

} // namespace cgc::ref

#endif // CGC_REFERENCE_KERNELS_EXPAND_DEPTHWISE_H
