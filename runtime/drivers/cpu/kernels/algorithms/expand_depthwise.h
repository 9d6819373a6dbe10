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
// computed twice.
//
// The block then projects the depthwise result back to fewer channels with
// another 1x1 convolution (144 -> 24 on 56x56, plus the residual). Fused,
// the depthwise rows go to a per-thread block of about 64 KB, and the
// projection's GEMM reads them from there: the depthwise result (1.8 MB) is
// not stored either. The kernel fuses an expansion, a projection or both
// with the depthwise convolution. Private to cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_EXPAND_DEPTHWISE_H
#define CGC_CPU_KERNELS_EXPAND_DEPTHWISE_H

#include "depthwise.h"
#include "kernels.h"
#include "stem.h"

#include <string>

namespace cgc::cpu {

/// How the description names the block's convolutions ("convolution 16->96
/// 1x1 s1x1 on [112, 112]").
struct DepthwiseBlockNames {
  std::string expand, depthwise, project;
};

/// The kernel computing `block` (kernels.h; `g`: the depthwise geometry,
/// which the direct channels-last kernel runs):
///   - an expansion (a 1x1 channels-last convolution that pointwiseMismatch
///     accepts, with constant weights) is computed into a ring of rows per
///     thread: its result is never stored. Not when the expanded value fits
///     in L2 anyway (fusing then only costs), or an extra operand of its
///     chain varies across positions. With `stem` (the rows of the block's
///     `expand`, a CNN's first convolution that stem.h runs), that
///     convolution makes the ring's rows instead, row by row;
///   - a projection (a 1x1 channels-last convolution whose chain is all in
///     the packed GEMM's epilogue: bias, residual add, clip) runs on each
///     block of depthwise output rows right after they are computed: the
///     depthwise result is never stored. Not when that result fits in L2
///     anyway, or the depthwise chain is more than a clip or relu;
///   - with `pool` (a global_avg_pool of the depthwise chain's whole
///     result; not with a projection), the kernel writes the pool's result
///     too (output 1), from each band of rows while it is in cache.
/// Inputs in KernelArgs order: [the expansion's inputs, its chain's extra
/// operands,] the depthwise convolution's inputs (after the first with an
/// expansion), its chain's extra operands[, the projection's inputs after
/// the first, its chain's extra operands]. Null, with `reason`, if the
/// block does not fuse.
std::unique_ptr<Kernel> makeDepthwiseBlock(const DepthwiseBlock &block,
                                           const DepthwiseGeometry &g,
                                           const KernelOptions &options,
                                           const DepthwiseBlockNames &names,
                                           const KernelDesc *pool, std::unique_ptr<StemRows> stem,
                                           std::string &reason);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_EXPAND_DEPTHWISE_H
