//===- pointwise.h - 1x1 convolutions as a packed GEMM ----------*- C++ -*-===//
//
// A 1x1, stride-1, unpadded, ungrouped float32 convolution on channels-last
// operands is a matrix product: its positions (N x H x W) are the rows of A
// and of C, the input channels K, the output channels N. It runs on
// PackedSgemm with the weights packed once per address, the bias and the
// fused chain applied to each register tile before its one store where the
// GEMM's epilogue has the ops (bias, relu, clip, residual add), else by our
// elementwise Epilogue over each block of rows right after the GEMM wrote
// it (swish, sigmoid: the block is still in cache).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_KERNELS_POINTWISE_H
#define CGC_REFERENCE_KERNELS_POINTWISE_H

#include "common.h"

namespace cgc::ref {

/// The convolution `anchor` (inputs x, w[, bias]) with the elementwise
/// `chain` after it (may be empty) as a packed GEMM; null, with `reason`, if
/// it is not a pointwise float32 channels-last convolution with constant
/// weights (and a constant bias) or the CPU has no AVX-512.
std::unique_ptr<Kernel> makePointwiseConvolution(const KernelDesc &anchor,
                                                 const std::vector<KernelDesc> &chain,
                                                 const KernelOptions &options,
                                                 const std::string &what, std::string &reason);

} // namespace cgc::ref

#endif // CGC_REFERENCE_KERNELS_POINTWISE_H
