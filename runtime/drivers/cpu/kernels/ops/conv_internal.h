//===- conv_internal.h - What the convolution files share ------*- C++ -*-===//
//
// Private to the kernel library: a convolution's geometry and the kernels
// conv.cpp chooses among that live in files of their own (oneDNN's in
// conv_onednn.cpp, the generic im2col path in conv_generic.cpp, the direct
// NCHW depthwise kernel in conv_depthwise_nchw.cpp). conv.cpp holds the
// op's entry points and the one selection loop (kConvImplementations).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_CONV_INTERNAL_H
#define CGC_CPU_KERNELS_CONV_INTERNAL_H

#include "common.h"
#include "elementwise.h"
#include "onednn.h"
#include "strided.h"

#include <memory>
#include <string>
#include <vector>

namespace cgc::cpu::conv {

/// A convolution's (or conv_transpose's) geometry, checked (parseConv).
struct ConvGeom {
  bool transpose = false;
  int64_t batch = 0, inC = 0, outC = 0, groups = 1;
  std::vector<int64_t> in, out, kernel, stride, dilation, padBegin, padEnd, outPad;
  bool hasBias = false;
  size_t spatial() const { return in.size(); }
  int64_t kernelSize() const { return numElements(kernel); }
};

/// Reads and checks a convolution or conv_transpose descriptor; throws
/// DescError naming what is wrong.
ConvGeom parseConv(const KernelDesc &desc);
/// "convolution 64->64 3x3 s1x1 on [56, 56]", for profiles.
std::string geomText(const ConvGeom &g);
/// The element strides of a dense channels-last (N, C, spatial...) value
/// shaped `dims`.
std::vector<int64_t> channelsLastStrides(const std::vector<int64_t> &dims);

/// A kernel that gathers its input 0 with `gather` into a buffer of `bytes`
/// and runs `inner` (which reads `numInputs` inputs) on it: a strided 1x1
/// convolution run as a stride-1 one.
std::unique_ptr<Kernel> makeSubsampled(CopyPlan gather, size_t bytes,
                                       std::unique_ptr<Kernel> inner, size_t numInputs);

/// oneDNN's convolution (conv_onednn.cpp), with strided 1x1 convolutions on
/// contiguous NCHW subsampled first; `post` its post-ops, and `chain` (when
/// not null) the elementwise chain whose extra operands are inputs
/// [firstExtra, numInputs). Throws dnnl::error when oneDNN has no
/// implementation.
std::unique_ptr<Kernel> makeDnnlConv(const ConvGeom &g, const KernelOperand &x,
                                     const KernelOperand &w, const KernelOperand &out,
                                     bool constantWeights, onednn::PostOps post, size_t firstExtra,
                                     size_t numInputs, const std::vector<KernelDesc> *chain);

/// im2col / col2im + the blocked GEMM for any float type (conv_generic.cpp);
/// null for other types.
std::unique_ptr<Kernel> makeGenericConv(const ConvGeom &g, cgc_dtype_t dtype);

/// Output planes smaller than this go to oneDNN rather than the direct NCHW
/// depthwise kernel.
constexpr int64_t kDwMinPlane = 256;
/// True if the direct NCHW depthwise kernel (conv_depthwise_nchw.cpp) runs
/// `desc` writing `out`: 2-D, float32, contiguous operands.
bool depthwiseApplies(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out);
/// That kernel, with `epilogue` applied to planes while they are in cache
/// (its extra operands from input `firstExtra`).
std::unique_ptr<Kernel> makeNchwDepthwise(const ConvGeom &g, Epilogue epilogue,
                                          size_t firstExtra, std::string summary);

/// True if the direct transposed convolution of deconv_direct.cpp runs
/// `desc` writing `out`: 2-D, stride equal to the kernel, no padding,
/// dilation or groups, at most 64 outputs per input position (outC * kh *
/// kw) unless its taps are 2 wide (kw = 2, kh <= 4) on AVX-512, float32
/// operands: the input contiguous or dense channels-last, the rest
/// contiguous.
bool nonOverlappingDeconvApplies(const ConvGeom &g, const KernelDesc &desc,
                                 const KernelOperand &out);
/// That kernel for input `x`, with `epilogue` applied to each band of output
/// rows while it is in cache (its extra operands from input `firstExtra`).
std::unique_ptr<Kernel> makeNonOverlappingDeconv(const ConvGeom &g, const KernelOperand &x,
                                                 Epilogue epilogue, size_t firstExtra,
                                                 std::string summary);

/// Empty if the patch kernel of conv_patches.cpp can run `desc` (geometry
/// `g`) with `chain` after it, writing `out`: a 2-D ungrouped float32
/// convolution without padding, its result dense NCHW or channels-last, a
/// chain of unary ops only, AVX-512, and either windows that tile the input
/// (stride = kernel, of at most 4 input channels or windows of 16 taps or
/// more) or a small convolution (up to 2M multiply-adds, its gathered
/// patches in L2); else why not.
std::string patchConvolutionMismatch(const ConvGeom &g, const KernelDesc &desc,
                                     const std::vector<KernelDesc> &chain,
                                     const KernelOperand &out);
/// That kernel (constant weights packed once, for a channels-last result);
/// null if it does not apply.
std::unique_ptr<Kernel> makePatchConvolution(const ConvGeom &g, const KernelDesc &desc,
                                             const std::vector<KernelDesc> &chain,
                                             const KernelOperand &out, bool constantWeights);

} // namespace cgc::cpu::conv

#endif // CGC_CPU_KERNELS_CONV_INTERNAL_H
