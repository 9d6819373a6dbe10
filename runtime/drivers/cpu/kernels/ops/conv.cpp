//===- conv.cpp - convolution and conv_transpose: the kernel choice -------===//
//
// The op's entry points (makeConv, createFusedConvolution and the fused
// blocks around a depthwise convolution) and the one ordered list of
// implementations a convolution's kernel is chosen from, alone or with the
// elementwise chain fused after it (kConvImplementations,
// selectConvolution): the direct channels-last depthwise kernel
// (depthwise.cpp), the direct NCHW one (conv_depthwise_nchw.cpp), the
// packed GEMM's pointwise kernel (pointwise.h) and its strided form, the
// direct stem kernel (stem.h), the packed GEMM's Winograd products
// (winograd.h), oneDNN (conv_onednn.cpp), and im2col + the blocked GEMM for
// other types (conv_generic.cpp). Activations arrive in the layout their
// operand strides give (plain NCHW at partition boundaries, channels-last
// inside compiled CNNs).
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "depthwise.h"
#include "expand_depthwise.h"
#include "stem.h"
#include "winograd.h"
#include "elementwise.h"
#include "gemm.h"
#include "math.h"
#include "onednn.h"
#include "pointwise.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>


namespace cgc::cpu {
namespace conv {


ConvGeom parseConv(const KernelDesc &desc) {
  DescReader r(desc);
  ConvGeom g;
  g.transpose = desc.kind() == OpKind::ConvTranspose;
  r.expectInputs(2, 3);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input"), &w = r.input(1, "weight");
  r.expectDType(x, "input", DTypeClass::Float);
  r.expectSameDType(x, "input", w, "weight");
  r.expectSameDType(x, "input", r.output(0), "output");
  size_t rank = x.shape.size();
  if (rank < 3)
    r.error(cat("input must be N x C x D1 x ... (rank >= 3), got rank ", rank));
  if (w.shape.size() != rank)
    r.error(cat("weight rank ", w.shape.size(), " must equal input rank ", rank));
  size_t sp = rank - 2;
  g.groups = r.getInt("groups", 1);
  if (g.groups < 1)
    r.error(cat("groups must be >= 1, got ", g.groups));
  g.batch = x.shape[0];
  g.inC = x.shape[1];
  if (g.inC % g.groups != 0)
    r.error(cat("input channels (", g.inC, ") must be divisible by groups (", g.groups, ")"));
  if (!g.transpose) {
    g.outC = w.shape[0];
    if (g.outC % g.groups != 0)
      r.error(cat("filters (", g.outC, ") must be divisible by groups (", g.groups, ")"));
    if (w.shape[1] * g.groups != g.inC)
      r.error(cat("weight has ", w.shape[1], " input channels per group but the input has ",
                  g.inC, " channels in ", g.groups, " group(s)"));
  } else {
    if (w.shape[0] != g.inC)
      r.error(cat("weight dimension 0 (", w.shape[0], ") must equal the input channels (", g.inC,
                  ")"));
    g.outC = w.shape[1] * g.groups;
  }
  g.in.assign(x.shape.begin() + 2, x.shape.end());
  g.kernel.assign(w.shape.begin() + 2, w.shape.end());
  g.stride = r.getInts("strides");
  g.dilation = r.getInts("dilations");
  g.padBegin = r.getInts("start_padding");
  g.padEnd = r.getInts("end_padding");
  g.outPad = g.transpose ? r.getInts("output_padding") : std::vector<int64_t>(sp, 0);
  auto check = [&](const std::vector<int64_t> &v, const char *name, int64_t min) {
    if (v.size() != sp)
      r.error(cat("'", name, "' must have ", sp, " entries (one per spatial dimension), got ",
                  v.size()));
    for (int64_t e : v)
      if (e < min)
        r.error(cat("'", name, "' entries must be >= ", min, ", got ", shapeStr(v)));
  };
  check(g.stride, "strides", 1);
  check(g.dilation, "dilations", 1);
  check(g.padBegin, "start_padding", g.transpose ? INT64_MIN : 0);
  check(g.padEnd, "end_padding", g.transpose ? INT64_MIN : 0);
  check(g.outPad, "output_padding", 0);
  std::vector<int64_t> shape = {g.batch, g.outC};
  for (size_t i = 0; i < sp; ++i) {
    int64_t ext = g.dilation[i] * (g.kernel[i] - 1) + 1;
    int64_t size;
    if (!g.transpose) {
      int64_t padded = g.in[i] + g.padBegin[i] + g.padEnd[i];
      if (ext > padded)
        r.error(cat("window of extent ", ext, " is larger than the padded input (", padded,
                    ") in spatial dimension ", i));
      size = (padded - ext) / g.stride[i] + 1;
    } else {
      size = g.stride[i] * (g.in[i] - 1) + g.outPad[i] + ext - g.padBegin[i] - g.padEnd[i];
      if (size < 0)
        r.error(cat("output spatial dimension ", i, " would be negative (", size, ")"));
    }
    shape.push_back(size);
    g.out.push_back(size);
  }
  r.expectShape(r.output(0), "output", shape);
  if (r.hasInput(2)) {
    const KernelOperand &b = *desc.inputs[2];
    r.expectSameDType(x, "input", b, "bias");
    r.expectShape(b, "bias", {g.outC});
    g.hasBias = true;
  }
  return g;
}

std::string geomText(const ConvGeom &g) {
  std::string k, s;
  for (size_t i = 0; i < g.kernel.size(); ++i) {
    k += (i ? "x" : "") + std::to_string(g.kernel[i]);
    s += (i ? "x" : "") + std::to_string(g.stride[i]);
  }
  return cat(g.transpose ? "conv_transpose " : "convolution ", g.inC, "->", g.outC, " ", k, " s",
             s, g.groups > 1 ? cat(" g", g.groups) : std::string(), " on ", shapeStr(g.in));
}

/// A 1x1, stride-1, unpadded, ungrouped convolution on channels-last
/// operands: a matrix product over its positions (pointwise.h).
bool pointwiseChannelsLast(const ConvGeom &g, const KernelOperand &x, const KernelOperand &out) {
  if (g.transpose || g.groups != 1 || !channelsLast(x) || !channelsLast(out))
    return false;
  for (size_t i = 0; i < g.kernel.size(); ++i)
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.padBegin[i] != 0 || g.padEnd[i] != 0)
      return false;
  return true;
}

/// The element strides of a dense channels-last (N, C, spatial...) value
/// shaped `dims`: channels innermost, then the spatial dimensions, then N.
std::vector<int64_t> channelsLastStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size());
  strides[1] = 1;
  int64_t extent = dims[1];
  for (size_t d = dims.size(); d-- > 2;) {
    strides[d] = extent;
    extent *= dims[d];
  }
  strides[0] = extent;
  return strides;
}



/// A strided 1x1 convolution without padding reads only every s-th input
/// position: the kernel gathers those into a dense [N, C, OH, OW] buffer and
/// runs the stride-1 1x1 convolution on it, which takes oneDNN's in-place
/// GEMM path instead of the blocked kernel with two full-size reorders.
namespace {
class SubsampledConvKernel final : public KernelBase {
public:
  SubsampledConvKernel(CopyPlan gather, size_t bytes, std::unique_ptr<Kernel> inner,
                       size_t numInputs)
      : gather_(std::move(gather)), bytes_(bytes), inner_(std::move(inner)),
        numInputs_(numInputs) {
    description_ = inner_->describe() + " [strided 1x1: input subsampled]";
  }
  void run(const KernelArgs &args, ThreadPool &pool) const override {
    Scratch buf(bytes_);
    gather_.run(pool, buf.data(), args.inputs[0]);
    std::vector<const void *> ins(args.inputs, args.inputs + numInputs_);
    ins[0] = buf.data();
    KernelArgs inner{ins.data(), args.outputs};
    inner_->run(inner, pool);
  }

private:
  CopyPlan gather_;
  size_t bytes_;
  std::unique_ptr<Kernel> inner_;
  size_t numInputs_;
};
} // namespace

std::unique_ptr<Kernel> makeSubsampled(CopyPlan gather, size_t bytes,
                                       std::unique_ptr<Kernel> inner, size_t numInputs) {
  return std::make_unique<SubsampledConvKernel>(std::move(gather), bytes, std::move(inner),
                                                numInputs);
}

} // namespace conv

namespace {

using namespace conv;

/// A strided 1x1 convolution without padding on channels-last operands (a
/// ResNet's downsample convolutions): its used input positions gathered
/// into a dense channels-last buffer, then the packed GEMM's pointwise
/// kernel with `chain` as its epilogue. oneDNN's brgconv_1x1 ran ResNet-50's
/// three at 158-192 GFLOP/s, the packed GEMM's stride-1 ones of the same
/// sizes at ~190-215. Null where the pointwise kernel does not apply (its
/// reason in `reason`). CGC_CPU_SUBSAMPLED_POINTWISE=0 keeps oneDNN.
std::unique_ptr<Kernel> makeSubsampledPointwise(const ConvGeom &g, const KernelDesc &desc,
                                                const std::vector<KernelDesc> &chain,
                                                const KernelOptions &options,
                                                std::string &reason) {
  const bool enabled = activeConfig().subsampledPointwise;
  const KernelOperand &x = *desc.inputs[0];
  bool applies = enabled && !g.transpose && g.groups == 1 && channelsLast(x) &&
                 numElements(g.out) > 0;
  bool strided = false;
  for (size_t i = 0; applies && i < g.kernel.size(); ++i) {
    applies = g.kernel[i] == 1 && g.padBegin[i] == 0 && g.padEnd[i] == 0 && g.dilation[i] == 1;
    strided = strided || g.stride[i] > 1;
  }
  if (!applies || !strided)
    return nullptr;
  // The gathered input: [N, C, out...] with channels innermost.
  KernelOperand sub = x;
  sub.shape = {g.batch, g.inC};
  sub.shape.insert(sub.shape.end(), g.out.begin(), g.out.end());
  sub.strides = channelsLastStrides(sub.shape);
  std::vector<int64_t> view = x.effectiveStrides();
  for (size_t i = 0; i < g.stride.size(); ++i)
    view[2 + i] *= g.stride[i];
  const size_t elem = cgc_dtype_size(x.dtype);
  CopyPlan gather(sub.shape, elem, sub.strides, view);
  KernelDesc dense = desc;
  dense.inputs[0] = sub;
  dense.setAttr("strides", AttrValue::ofInts(std::vector<int64_t>(g.stride.size(), 1)));
  auto inner = makePointwiseConvolution(dense, chain, options, geomText(g), reason);
  if (!inner)
    return nullptr;
  return makeSubsampled(std::move(gather), size_t(numElements(sub.shape)) * elem,
                        std::move(inner), desc.inputs.size() + chainExtraOperands(chain));
}

//===----------------------------------------------------------------------===//
// Depthwise 2-D float32 convolution on channels-last operands
//===----------------------------------------------------------------------===//

/// 2-D, groups == input channels == output channels > 1.
bool isDepthwise2d(const ConvGeom &g) {
  return !g.transpose && g.spatial() == 2 && g.groups == g.inC && g.outC == g.inC && g.inC > 1 &&
         g.kernelSize() > 0;
}

/// The fields the direct kernels' geometries (DepthwiseGeometry,
/// StemGeometry) share, from a 2-D convolution's `g`.
template <class Geometry> Geometry planeGeometry(const ConvGeom &g) {
  Geometry d;
  d.batch = g.batch;
  d.inH = g.in[0], d.inW = g.in[1], d.outH = g.out[0], d.outW = g.out[1];
  d.kernelH = g.kernel[0], d.kernelW = g.kernel[1];
  d.strideH = g.stride[0], d.strideW = g.stride[1];
  d.dilationH = g.dilation[0], d.dilationW = g.dilation[1];
  d.padTop = g.padBegin[0], d.padLeft = g.padBegin[1];
  d.hasBias = g.hasBias;
  return d;
}

DepthwiseGeometry depthwiseGeometry(const ConvGeom &g) {
  DepthwiseGeometry d = planeGeometry<DepthwiseGeometry>(g);
  d.channels = g.inC;
  return d;
}

/// True if the channels-last direct kernel (depthwise.cpp) can run a
/// depthwise convolution whose result is laid out as `out`.
/// CGC_CPU_CHANNELS_LAST_DEPTHWISE=0 turns it off, leaving oneDNN's
/// nhwc kernel (read when a kernel is created, so a benchmark can build
/// both).
bool channelsLastDepthwise(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out) {
  return activeConfig().channelsLastDepthwise && isDepthwise2d(g) &&
         numElements(out.shape) > 0 &&
         channelsLastDepthwiseMismatch(depthwiseGeometry(g), desc, out).empty();
}

/// Where the direct kernel is faster than oneDNN 2.6's brdgmm_dw nhwc kernel:
/// bench-kernels (every MobileNetV2 / EfficientNet-B0 depthwise layer with
/// its fused relu6 / swish, 64-byte aligned channels-last operands as the
/// driver's plan gives them, old and new timed in alternating batches),
/// medians at 1 thread, oneDNN -> direct in ms:
///   3x3 s1: 32 @112 0.095 -> 0.066, 144 @56 0.104 -> 0.080,
///           192 @28 0.038 -> 0.022, 384 @14 0.019 -> 0.009,
///           576 @14 0.030 -> 0.015, 960 @7 0.012 -> 0.006;
///   3x3 s2: 96 @112 0.098 -> 0.085, 144 @56 0.038 -> 0.033,
///           576 @14 0.0095 -> 0.0053;
///   5x5 s1 (+swish): 240 @28 0.158 -> 0.104, 672 @14 0.100 -> 0.071,
///           1152 @7 0.037 -> 0.028;
///   5x5 s2 (+swish): 144 @56 0.116 -> 0.083, 672 @14 0.028 -> 0.020.
/// So kernels 3 and 5 wide with strides 1 and 2 (the unrolled shapes) take
/// the direct kernel. Its generic segments (other widths, strides,
/// dilation along W) are not faster overall (+relu6: 7x7 96 @56 0.27 vs
/// 0.29 ms but 192 @28 0.166 vs 0.147; 3x3 dilation 2 144 @56 0.133 vs
/// 0.084; 9x9 128 @28 0.178 vs 0.152): those stay on oneDNN unless the
/// fused chain has no oneDNN post-op form.
bool channelsLastDepthwiseFaster(const ConvGeom &g) {
  return channelsLastDepthwiseUnrolled(depthwiseGeometry(g));
}

/// True if the direct channels-last kernel runs `desc` by choice (its
/// unrolled shapes), followed by a chain whose result `out` keeps the
/// convolution's shape.
bool directDepthwise(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out) {
  return out.shape == desc.outputs[0].shape && channelsLastDepthwise(g, desc, out) &&
         channelsLastDepthwiseFaster(g);
}

/// The weights (input 1) and the bias, if any (input 2), are constants:
/// the direct kernels prepare them once per address.
bool constantParams(const ConvGeom &g, const KernelOptions &options) {
  return options.isConstant(1) && (!g.hasBias || options.isConstant(2));
}

/// False with CGC_CPU_DEPTHWISE_POOL=0: a global average pool of a
/// depthwise convolution's result stays its own kernel (read once per
/// process).
bool depthwisePoolEnabled() {
  return activeConfig().depthwisePool;
}

// Direct convolution of a few input channels (a CNN's stem)
//===----------------------------------------------------------------------===//

StemGeometry stemGeometry(const ConvGeom &g) {
  StemGeometry s = planeGeometry<StemGeometry>(g);
  s.inC = g.inC, s.outC = g.outC;
  return s;
}

/// True if the direct kernel of stem.h runs `desc` (geometry `g`) writing
/// `out`: a 2-D ungrouped convolution of at most kStemMaxInputChannels
/// input channels. oneDNN 2.6 reorders such an input on every run and then
/// ran at 101 GFLOP/s (MobileNetV2's 3->32 3x3 s2), 184 (ResNet-50's 3->64
/// 7x7 s2); see stem.h for what the direct kernel reaches.
/// CGC_CPU_STEM_CONVOLUTION=0 keeps oneDNN (read once per process).
bool stemConvolution(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out) {
  return activeConfig().stemConvolution && !g.transpose && g.spatial() == 2 && g.groups == 1 &&
         numElements(out.shape) > 0 && numElements(desc.inputs[0]->shape) > 0 &&
         stemConvolutionMismatch(stemGeometry(g), desc, out).empty();
}

/// True if the Winograd kernel of winograd.h runs `desc` (geometry `g`)
/// writing `out`, with its geometry in `w`: a 2-D 3x3, stride-1 (dilated or
/// not), ungrouped float32 convolution on channels-last operands, large enough
/// that its products beat oneDNN's kernels (winogradTile picks F(4x4,3x3)
/// or F(2x2,3x3)).
bool winogradGemm(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out,
                  WinogradGeometry &w) {
  if (g.transpose || g.spatial() != 2 || g.groups != 1)
    return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.kernel[i] != 3 || g.stride[i] != 1)
      return false;
  w.batch = g.batch, w.inC = g.inC, w.outC = g.outC;
  w.inH = g.in[0], w.inW = g.in[1], w.outH = g.out[0], w.outW = g.out[1];
  w.padTop = g.padBegin[0], w.padLeft = g.padBegin[1];
  w.dilationH = g.dilation[0], w.dilationW = g.dilation[1];
  w.hasBias = g.hasBias;
  w.tile = winogradTile(w);
  return w.tile != 0 && winogradConvolutionMismatch(w, desc, out).empty();
}

bool dnnlType(cgc_dtype_t d) { return d == CGC_DTYPE_FLOAT32 || d == CGC_DTYPE_BFLOAT16; }

bool hasNegativeStrides(const KernelDesc &desc) {
  for (const auto &in : desc.inputs)
    if (in)
      for (int64_t s : in->effectiveStrides())
        if (s < 0)
          return true;
  for (int64_t s : desc.outputs[0].effectiveStrides())
    if (s < 0)
      return true;
  return false;
}

/// One convolution to choose a kernel for: `anchor` alone (`epilogue`
/// empty) or with the elementwise chain after it fused.
struct ConvCase {
  const KernelDesc &anchor;
  const std::vector<KernelDesc> &epilogue;
  const KernelOptions &options;
  ConvGeom g;
  /// The chain's final result (the anchor's own result when alone).
  const KernelOperand &out;
  bool empty;
  /// The chain keeps the convolution's shape.
  bool sameShape;
  /// Small planes (7x7, 14x14) are per-plane overhead on NCHW; oneDNN's
  /// channel-blocked kernel is faster there despite its reorders (measured).
  bool largePlanes;
  /// The chain has a oneDNN post-op form (trivially, when alone); else why not.
  bool postOk;
  onednn::PostOps post;
  std::string postReason;

  ConvCase(const KernelDesc &anchor, const std::vector<KernelDesc> &epilogue,
           const KernelOptions &options)
      : anchor(anchor), epilogue(epilogue), options(options), g(parseConv(anchor)),
        out(epilogue.empty() ? anchor.outputs[0] : epilogue.back().outputs.at(0)) {
    const KernelOperand &x = *anchor.inputs[0];
    empty = numElements(anchor.outputs[0].shape) == 0 || numElements(x.shape) == 0 ||
            g.kernelSize() == 0;
    sameShape = out.shape == anchor.outputs[0].shape;
    largePlanes = numElements(g.out) >= kDwMinPlane;
    postOk = epilogue.empty() ||
             onednn::buildPostOps(epilogue, anchor.outputs[0].shape, x.dtype, post, postReason);
  }
  bool fused() const { return !epilogue.empty(); }
  const KernelOperand &x() const { return *anchor.inputs[0]; }
  const KernelOperand &w() const { return *anchor.inputs[1]; }
  size_t extraEnd() const { return anchor.inputs.size() + chainExtraOperands(epilogue); }
};

using ConvImplementation = Implementation<ConvCase>;

/// The implementations in order of preference, for a convolution alone and
/// with a chain alike: the first that takes a case and creates a kernel
/// runs it (selectConvolution).
const ConvImplementation kConvImplementations[] = {
    {"direct depthwise (channels-last)",
     // Its unrolled shapes by choice; any other shape it runs too when the
     // chain has no oneDNN post-op form.
     [](const ConvCase &c) {
       if (!activeConfig().channelsLastDepthwise)
         return std::string("off (channels-last-depthwise=0)");
       if (c.empty || !c.sameShape)
         return std::string("empty, or a chain that changes the shape");
       if (!channelsLastDepthwise(c.g, c.anchor, c.out))
         return std::string("not a channels-last 2-D depthwise convolution it runs");
       return unlessReason(channelsLastDepthwiseFaster(c.g) || !c.postOk,
                     "oneDNN is faster at this shape");
     },
     [](const ConvCase &c, std::string &) {
       return makeChannelsLastDepthwise(depthwiseGeometry(c.g), c.anchor, c.epilogue,
                                        constantParams(c.g, c.options), geomText(c.g));
     }},
    {"direct depthwise (NCHW)",
     [](const ConvCase &c) {
       if (!depthwiseApplies(c.g, c.anchor, c.out) || !c.sameShape)
         return std::string("not a contiguous float32 2-D depthwise convolution");
       return unlessReason(c.largePlanes || !c.postOk, "planes too small (oneDNN is faster)");
     },
     [](const ConvCase &c, std::string &) -> std::unique_ptr<Kernel> {
       Epilogue chain = c.fused() ? Epilogue(c.anchor.outputs[0].shape, c.x().dtype, c.epilogue)
                                  : Epilogue();
       return makeNchwDepthwise(c.g, std::move(chain), c.anchor.inputs.size(),
                                chainSummary(c.epilogue));
     }},
    {"packed GEMM pointwise",
     [](const ConvCase &c) {
       return unlessReason(!c.empty && pointwiseChannelsLast(c.g, c.x(), c.anchor.outputs[0]),
                     "not a channels-last 1x1 convolution");
     },
     [](const ConvCase &c, std::string &reason) {
       return makePointwiseConvolution(c.anchor, c.epilogue, c.options, geomText(c.g), reason);
     }},
    {"subsampled pointwise",
     [](const ConvCase &c) {
       if (!activeConfig().subsampledPointwise)
         return std::string("off (subsampled-pointwise=0)");
       return unlessReason(!c.empty, "empty");
     },
     [](const ConvCase &c, std::string &reason) {
       std::unique_ptr<Kernel> kernel =
           makeSubsampledPointwise(c.g, c.anchor, c.epilogue, c.options, reason);
       if (!kernel && reason.empty())
         reason = "not a strided channels-last 1x1 convolution without padding";
       return kernel;
     }},
    {"direct stem",
     [](const ConvCase &c) {
       if (!activeConfig().stemConvolution)
         return std::string("off (stem-convolution=0)");
       return unlessReason(c.sameShape && stemConvolution(c.g, c.anchor, c.out),
                     "not a 2-D convolution of a few input channels");
     },
     [](const ConvCase &c, std::string &) {
       return makeStemConvolution(stemGeometry(c.g), c.anchor, c.epilogue,
                                  constantParams(c.g, c.options), geomText(c.g));
     }},
    {"patches on the packed GEMM",
     [](const ConvCase &c) {
       if (!activeConfig().patchConvolution)
         return std::string("off (patch-convolution=0)");
       if (c.empty)
         return std::string("empty");
       return patchConvolutionMismatch(c.g, c.anchor, c.epilogue, c.out);
     },
     [](const ConvCase &c, std::string &) {
       return makePatchConvolution(c.g, c.anchor, c.epilogue, c.out, c.options.isConstant(1));
     }},
    {"direct transposed (taps do not overlap)",
     [](const ConvCase &c) {
       if (!activeConfig().directDeconvolution)
         return std::string("off (direct-deconvolution=0)");
       return unlessReason(c.sameShape && nonOverlappingDeconvApplies(c.g, c.anchor, c.out),
                     "not a 2-D conv_transpose with stride = kernel, no padding, few outputs "
                     "or 2-wide taps");
     },
     [](const ConvCase &c, std::string &) -> std::unique_ptr<Kernel> {
       Epilogue chain = c.fused() ? Epilogue(c.anchor.outputs[0].shape, c.x().dtype, c.epilogue)
                                  : Epilogue();
       return makeNonOverlappingDeconv(c.g, c.x(), std::move(chain), c.anchor.inputs.size(),
                                       chainSummary(c.epilogue));
     }},
    {"packed-GEMM Winograd",
     [](const ConvCase &c) {
       if (activeConfig().winogradGemm == 0)
         return std::string("off (winograd-gemm=0)");
       WinogradGeometry wg;
       return unlessReason(!c.empty && winogradGemm(c.g, c.anchor, c.out, wg),
                     "not a large channels-last 3x3 stride-1 float32 convolution");
     },
     [](const ConvCase &c, std::string &) {
       WinogradGeometry wg;
       winogradGemm(c.g, c.anchor, c.out, wg);
       return makeWinogradConvolution(wg, c.anchor, c.epilogue, c.options.isConstant(1),
                                      geomText(c.g));
     }},
    {"oneDNN with the chain after it",
     // No oneDNN post-op form (an erf_gelu): the chain runs as our epilogue
     // after oneDNN's convolution, on the result in its layout.
     [](const ConvCase &c) {
       if (!c.fused() || c.postOk)
         return std::string("no chain, or one oneDNN takes as post-ops");
       return unlessReason(c.sameShape && (c.out.isContiguous() || channelsLast(c.out)),
                     c.postReason.c_str());
     },
     [](const ConvCase &c, std::string &) {
       // The chain as an epilogue at all (its reason otherwise).
       Epilogue probe(c.anchor.outputs[0].shape, c.x().dtype, c.epilogue);
       return makeDnnlConv(c.g, c.x(), c.w(), c.out, c.options.isConstant(1), onednn::PostOps(),
                           c.anchor.inputs.size(), c.extraEnd(), &c.epilogue);
     }},
    {"oneDNN",
     [](const ConvCase &c) {
       if (!c.postOk)
         return c.postReason;
       return unlessReason(dnnlType(c.x().dtype) && !c.empty && !hasNegativeStrides(c.anchor),
                     "not float32/bfloat16, empty, or negative strides");
     },
     [](const ConvCase &c, std::string &) {
       if (!c.fused())
         return makeDnnlConv(c.g, c.x(), c.w(), c.out, c.options.isConstant(1), onednn::PostOps(),
                             0, c.anchor.inputs.size(), nullptr);
       return makeDnnlConv(c.g, c.x(), c.w(), c.out, c.options.isConstant(1), c.post,
                           c.anchor.inputs.size(), c.extraEnd(), &c.epilogue);
     }},
    {"generic",
     [](const ConvCase &c) { return unlessReason(!c.fused(), "takes no chain"); },
     [](const ConvCase &c, std::string &) {
       return makeDenseAdapted(c.anchor,
                               [&](const KernelDesc &) { return makeGenericConv(c.g, c.x().dtype); });
     }},
};

/// The first of kConvImplementations that takes `c` and creates a kernel.
std::unique_ptr<Kernel> selectConvolution(const ConvCase &c, std::string &reason) {
  return selectImplementation(kConvImplementations, c, c.anchor.op, reason);
}

std::unique_ptr<Kernel> makeConv(const KernelDesc &desc, const KernelOptions &options) {
  static const std::vector<KernelDesc> kAlone;
  std::string reason;
  std::unique_ptr<Kernel> kernel = selectConvolution(ConvCase(desc, kAlone, options), reason);
  if (!kernel)
    fail(reason);
  return kernel;
}

} // namespace

std::unique_ptr<Kernel> createFusedConvolution(const KernelDesc &anchor,
                                               const std::vector<KernelDesc> &epilogue,
                                               const KernelOptions &options, std::string &reason) {
  // What keeps any kernel from fusing this convolution.
  const KernelOperand &x = *anchor.inputs[0];
  if (!dnnlType(x.dtype)) {
    reason = cat(anchor.op, ": only float32/bfloat16 convolutions fuse, got ", dtypeName(x.dtype));
    return nullptr;
  }
  if (hasNegativeStrides(anchor)) {
    reason = cat(anchor.op, ": operands with negative strides do not fuse");
    return nullptr;
  }
  if (numElements(anchor.outputs[0].shape) == 0 || numElements(x.shape) == 0) {
    reason = cat(anchor.op, ": empty tensors do not fuse");
    return nullptr;
  }
  return selectConvolution(ConvCase(anchor, epilogue, options), reason);
}

std::unique_ptr<Kernel> createFusedDepthwiseBlock(const DepthwiseBlock &block,
                                                  const KernelOptions &options,
                                                  const KernelDesc *pool, std::string &reason) {
  if (pool && !depthwisePoolEnabled()) {
    reason = "CGC_CPU_DEPTHWISE_POOL=0";
    return nullptr;
  }
  const KernelDesc &depthwise = *block.depthwise;
  for (const KernelDesc *conv : {block.expand, block.depthwise, block.project})
    if (conv && conv->kind() != OpKind::Convolution) {
      reason = cat(conv->op, ": a depthwise block is made of convolutions");
      return nullptr;
    }
  DepthwiseBlockNames names;
  // True if `conv` is a 2-D 1x1 channels-last convolution; `name` gets its
  // description.
  auto pointwise = [&](const KernelDesc &conv, std::string &name) {
    const ConvGeom g = parseConv(conv);
    name = geomText(g);
    if (g.spatial() == 2 && pointwiseChannelsLast(g, *conv.inputs[0], conv.outputs[0]))
      return true;
    reason = cat(conv.op, ": not a 2-D 1x1 channels-last convolution (", name, ")");
    return false;
  };
  std::unique_ptr<StemRows> stem;
  if (block.expand) {
    const KernelOperand &mid = block.expandChain.empty()
                                   ? block.expand->outputs[0]
                                   : block.expandChain.back().outputs.at(0);
    // A 1x1 expansion, or a CNN's stem (3 input channels: the image;
    // CGC_CPU_STEM_DEPTHWISE=0 keeps it a step of its own).
    const bool stemFuses = activeConfig().stemDepthwise;
    const ConvGeom e = parseConv(*block.expand);
    if (stemConvolution(e, *block.expand, mid)) {
      if (!stemFuses) {
        reason = "the configuration says stem-depthwise=0";
        return nullptr;
      }
      names.expand = geomText(e);
      try {
        stem = makeStemRows(stemGeometry(e), *block.expand, block.expandChain,
                            constantParams(e, options), names.expand);
      } catch (const DescError &err) {
        reason = err.message;
        return nullptr;
      }
    } else if (!pointwise(*block.expand, names.expand)) {
      return nullptr;
    }
    if (!(*depthwise.inputs[0] == mid)) {
      reason = cat(depthwise.op, ": its input is not the expanded value");
      return nullptr;
    }
    if (numElements(block.expand->inputs[0]->shape) == 0) {
      reason = cat(block.expand->op, ": an empty input");
      return nullptr;
    }
  }
  if (block.project && !pointwise(*block.project, names.project))
    return nullptr;
  const ConvGeom d = parseConv(depthwise);
  names.depthwise = geomText(d);
  const KernelOperand &out = block.depthwiseChain.empty()
                                 ? depthwise.outputs[0]
                                 : block.depthwiseChain.back().outputs.at(0);
  if (!directDepthwise(d, depthwise, out)) {
    reason = cat(depthwise.op, ": the direct channels-last depthwise kernel does not run ",
                 names.depthwise);
    return nullptr;
  }
  return makeDepthwiseBlock(block, depthwiseGeometry(d), options, names, pool, std::move(stem),
                            reason);
}

std::unique_ptr<Kernel> createFusedDepthwisePool(const KernelDesc &anchor,
                                                 const std::vector<KernelDesc> &chain,
                                                 const KernelDesc &pool,
                                                 const KernelOptions &options,
                                                 std::string &reason) {
  if (!depthwisePoolEnabled()) {
    reason = "CGC_CPU_DEPTHWISE_POOL=0";
    return nullptr;
  }
  if (anchor.kind() != OpKind::Convolution) {
    reason = cat(anchor.op, ": not a convolution");
    return nullptr;
  }
  const ConvGeom g = parseConv(anchor);
  const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
  if (hasNegativeStrides(anchor) || !directDepthwise(g, anchor, out)) {
    reason = cat(anchor.op, ": the direct channels-last depthwise kernel does not run ",
                 geomText(g));
    return nullptr;
  }
  return makeChannelsLastDepthwisePool(depthwiseGeometry(g), anchor, chain, pool,
                                       constantParams(g, options), geomText(g), reason);
}

void registerConvolutionOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::Convolution, makeConv, true});
  ops.push_back({OpKind::ConvTranspose, makeConv, true});
}

} // namespace cgc::cpu
