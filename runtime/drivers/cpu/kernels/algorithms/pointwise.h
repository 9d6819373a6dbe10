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

#ifndef CGC_CPU_KERNELS_POINTWISE_H
#define CGC_CPU_KERNELS_POINTWISE_H

#include "common.h"
#include "onednn.h"
#include "sgemm.h"

namespace cgc::cpu {

/// Empty if `anchor` (a 1x1, stride-1, unpadded, ungrouped convolution:
/// inputs x, w[, bias]) followed by `chain` can run on the packed GEMM, else
/// why not: no AVX-512, not float32 channels-last operands, a bias that is
/// not a dense vector.
std::string pointwiseMismatch(const KernelDesc &anchor, const std::vector<KernelDesc> &chain);

/// How the bias of `anchor` and the elementwise `chain` after it run in the
/// GEMM's epilogue. The ops' operands are the chain's extra operands in
/// order (0 .. extras - 1), then the bias (operand `extras`).
struct PointwiseEpilogue {
  std::vector<SgemmOp> ops; // the bias, then the chain's ops if chainInGemm
  bool chainInGemm = false; // else the chain needs an Epilogue after the GEMM
  size_t extras = 0;
  /// The input (KernelArgs order) that is a residual laid out like the
  /// result, which may then be the result's bytes; -1 if none.
  int inPlace = -1;
};
PointwiseEpilogue pointwiseEpilogue(const KernelDesc &anchor, const std::vector<KernelDesc> &chain);

/// The product of a 1x1 convolution (inputs x, w[, bias], then the fused
/// chain's extra operands) on the packed GEMM, as the kernels running one
/// bind it on each run: its weights packed (once per address when they are
/// constants, else on every run), the epilogue ops' operands gathered (the
/// chain's extras in order, then the bias: pointwiseEpilogue's numbering).
class PointwiseProduct {
public:
  /// Rows of about `rows` (tile choice), `ops` over `extras` chain operands.
  PointwiseProduct(const KernelDesc &anchor, int64_t rows, std::vector<SgemmOp> ops,
                   size_t extras, bool constantWeights);
  const PackedSgemm &gemm() const { return gemm_; }
  bool constantWeights() const { return weights_.constant(); }
  /// The GEMM's arguments for a run with `args`: B, the operands (kept in
  /// `operands`; per-run packed weights in `scratch`) and the row strides
  /// of A and C (dense channels-last: the input and output channels). A and
  /// C themselves are the caller's to set.
  PackedSgemm::Args bind(const KernelArgs &args, Scratch &scratch,
                         std::vector<const float *> &operands) const;

private:
  int64_t inC_, outC_;
  bool hasBias_;
  size_t firstExtra_, extraCount_;
  PackedSgemm gemm_;
  onednn::PreparedWeights weights_;
  int64_t wStrideN_, wStrideK_;
};

/// The convolution `anchor` (inputs x, w[, bias]) with the elementwise
/// `chain` after it (may be empty) as a packed GEMM; null, with `reason`, if
/// it is not a pointwise float32 channels-last convolution or the CPU has no
/// AVX-512. Constant weights are packed once per address, others on every
/// run.
std::unique_ptr<Kernel> makePointwiseConvolution(const KernelDesc &anchor,
                                                 const std::vector<KernelDesc> &chain,
                                                 const KernelOptions &options,
                                                 const std::string &what, std::string &reason);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_POINTWISE_H
