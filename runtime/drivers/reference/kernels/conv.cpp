//===- conv.cpp - convolution and conv_transpose --------------------------===//
//
// float32/bfloat16 run on oneDNN. Activations arrive in the layout their
// operand strides give (plain NCHW at partition boundaries, channels-last
// inside compiled CNNs): channels-last operands go to oneDNN as they are,
// except float32 depthwise convolutions 3 or 5 wide with stride 1 or 2,
// which run the direct kernel of depthwise.cpp (faster than oneDNN's nhwc
// kernel, see channelsLastDepthwiseFaster), and float32 1x1, stride-1,
// unpadded, ungrouped ones with constant weights, which run on the packed
// GEMM where the CPU has AVX-512 (pointwise.h); a 1x1, stride-1, unpadded,
// ungrouped convolution on plain NCHW runs directly (oneDNN's GEMM
// formulation needs no reorder);
// every other convolution reorders its input into the layout oneDNN picks
// (blocked nChw16c on AVX-512), runs the blocked kernel and reorders the
// result back, which measured 1.3-1.7x faster than the plain-layout kernel
// for 3x3 convolutions on this machine even with both reorders.
//
// Weights are reordered into the primitive's layout: once per address when
// the caller marks them constant (KernelOptions), else on every run.
//
// Fused epilogues become oneDNN post-ops (eltwise; binary ops whose second
// operand may be a per-channel vector or a full residual in its own layout).
//
// Other dtypes (float64, float16) use im2col (col2im for conv_transpose)
// with genericGemm, in bounded column blocks.
//
//===----------------------------------------------------------------------===//

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


namespace cgc::ref {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct ConvGeom {
  bool transpose = false;
  int64_t batch = 0, inC = 0, outC = 0, groups = 1;
  std::vector<int64_t> in, out, kernel, stride, dilation, padBegin, padEnd, outPad;
  bool hasBias = false;
  size_t spatial() const { return in.size(); }
  int64_t kernelSize() const { return numElements(kernel); }
};

ConvGeom parseConv(const KernelDesc &desc) {
  DescReader r(desc);
  ConvGeom g;
  g.transpose = desc.op == "cgc_op.conv_transpose";
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

/// True if `rows` split into `bands` row bands leaves the longest band more
/// than 10% over an even share (7 rows in 2: 4 and 3).
bool unevenBands(int64_t rows, int64_t bands) {
  return (rows + bands - 1) / bands * bands * 10 > rows * 11;
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

/// A dense channels-last operand shaped like `dims` with `channels`
/// channels (dimension 1).
onednn::PlainOperand denseChannelsLast(std::vector<int64_t> dims, int64_t channels,
                                       dnnl::memory::data_type type) {
  dims[1] = channels;
  std::vector<int64_t> strides = channelsLastStrides(dims);
  return {dims, strides, type};
}

/// Copies `channels` channels of every position from `from` (laid out as
/// `fromLayout`) to `to` (`toLayout`), both channels-last: each position's
/// channels are contiguous on both sides.
void copyChannels(const onednn::PlainOperand &fromLayout, const char *from,
                  const onednn::PlainOperand &toLayout, char *to, int64_t channels) {
  const size_t rank = toLayout.dims.size();
  const int64_t elem = int64_t(dnnl::memory::data_type_size(toLayout.type));
  const size_t bytes = size_t(channels * elem);
  std::vector<int64_t> index(rank, 0);
  int64_t positions = toLayout.dims[0];
  for (size_t d = 2; d < rank; ++d)
    positions *= toLayout.dims[d];
  for (int64_t p = 0; p < positions; ++p) {
    int64_t fo = 0, too = 0;
    for (size_t d = 0; d < rank; ++d) {
      fo += index[d] * fromLayout.strides[d];
      too += index[d] * toLayout.strides[d];
    }
    std::memcpy(to + too * elem, from + fo * elem, bytes);
    for (size_t d = rank; d-- > 0;) {
      if (d == 1)
        continue;
      if (++index[d] < toLayout.dims[d])
        break;
      index[d] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// oneDNN
//===----------------------------------------------------------------------===//

/// 1x1 convolutions on NCHW with at least this many output positions run on
/// oneDNN's GEMM formulation in place; smaller ones (7x7) are faster blocked
/// even with the reorders (measured 512->2048 @7: 206 vs 138 GFLOP/s).
constexpr int64_t kGemmMinSpatial = 100;
/// Convolutions and matmuls smaller than this run in one piece (splitting a
/// few microseconds of work costs more than it saves).
constexpr double kMinSplitFlops = 4e6;
/// Output planes up to this size split by output channels, not row bands.
constexpr int64_t kSmallPlane = 256;
/// Winograd convolutions split into row bands of at least this many output
/// rows, and into output-channel blocks when the plane is too short for
/// that (see split()). At 2 threads, ResNet-50's 64->64 @56 ran fastest in
/// bands of 28 rows, its 128->128 @28 in channel blocks (fastest of 3 runs:
/// 384-423 us vs 503-618 us in bands of 14 rows, whose 4-row F(4x4,3x3)
/// tiles overhang).
constexpr int64_t kWinogradMinBandRows = 28;
/// Winograd bands that read no padding (split() keeps the edge rows apart)
/// are equal, so they share one primitive and one copy of the transformed
/// weights: they need only enough rows for the F(2x2,3x3) tiles to fill
/// them (ResNet-50's 64->64 @56 at 2 threads: 27 each).
constexpr int64_t kWinogradMinInteriorRows = 16;
/// Fewer channels than this and Winograd's transforms outweigh its savings
/// (16 -> 16 @112: 1.2x; 32 -> 32 @56: 1.6x, measured with oneDNN 2.6).
constexpr int64_t kWinogradMinChannels = 32;
/// Fewer input or output channels than this: not oneDNN's F(4x4,3x3)
/// kernel (see its use).
constexpr int64_t kWinograd4x3MinChannels = 128;
/// Less work than this (direct FLOPs) and Winograd's activation reorders
/// outweigh its savings: DenseNet-121's 128->32 @7 (3.6 MFLOP) ran 40 us
/// with it against 26 direct at 1 thread, its 128->32 @14 (14.5 MFLOP) 69
/// against 73 (step times, CGC_REFERENCE_PROFILE).
constexpr double kWinogradMinFlops = 10e6;
/// Output-channel blocks of fewer channels than this do not split a
/// Winograd convolution: every block transforms the whole input, which
/// then outweighs its share of the products. DenseNet-121's 128->32 at 2
/// threads in blocks of 16 against direct row bands: @28 176 vs 160 us,
/// @14 59 vs 53 (1 thread, Winograd: 182 and 69); SqueezeNet's 32->128
/// @27 in blocks of 64 139 vs 138.
constexpr int64_t kWinogradMinBlockChannels = 32;

/// The oneDNN convolution (or deconvolution), its work split across the
/// ThreadPool. Every primitive is single-threaded (OpenMP never starts a
/// thread team, so nothing spins beside the pool's threads), and the
/// problem is cut into more pieces than threads, taken from the pool's
/// queue: along the batch when it is large enough, else into bands of output
/// rows (first spatial dimension; each band reads its input rows with the
/// halo and carries its own share of the padding), and for deconvolutions
/// into output-channel blocks. Each piece reorders its own input (the halo
/// twice, a few rows), runs, and reorders its result into place, so pieces
/// are independent. Weights are prepared once per address and layout when
/// constant.
/// True for the convolutions the reference driver runs with Winograd's
/// minimal filtering when oneDNN has a kernel for them: float32, 2-D, 3x3,
/// stride 1, no dilation, ungrouped, with enough channels to be compute
/// bound (oneDNN's F(2x2,3x3) / F(4x4,3x3) kernels measured 1.3-2.3x faster
/// than its direct kernel for ResNet-50's 3x3 layers on this machine, with a
/// max |difference| of 2e-6 of the result's scale). CGC_REFERENCE_WINOGRAD=0
/// turns it off (direct convolution only).
bool winogradApplies(const ConvGeom &g, dt type) {
  if (!activeConfig().winograd || type != dt::f32 || g.transpose || g.groups != 1 || g.kernel.size() != 2)
    return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.kernel[i] != 3 || g.stride[i] != 1 || g.dilation[i] != 1)
      return false;
  const double flops = 2.0 * double(g.batch) * double(g.outC) * double(g.inC) * 9.0 *
                       double(numElements(g.out));
  return g.inC >= kWinogradMinChannels && g.outC >= kWinogradMinChannels &&
         flops >= kWinogradMinFlops;
}

class DnnlConvKernel final : public KernelBase {
public:
  /// `chain` (may be null) is the fused epilogue `post` was built from.
  DnnlConvKernel(const ConvGeom &g, const KernelOperand &x, const KernelOperand &w,
                 const KernelOperand &out, bool constantWeights, onednn::PostOps post,
                 size_t firstExtra, const std::vector<KernelDesc> *chain = nullptr)
      : g_(g), constantWeights_(constantWeights), post_(std::move(post)), firstExtra_(firstExtra) {
    dt type;
    onednn::dataType(x.dtype, type);
    dnnl::memory::desc src, dst;
    if (!onednn::plainDesc(x, src) || !onednn::plainDesc(out, dst))
      throw dnnl::error(dnnl_invalid_arguments, "negative strides");
    src_ = onednn::plainOperand(src);
    dst_ = onednn::plainOperand(dst);
    // Weights as oneDNN sees them: [G,] O, I, K...
    std::vector<int64_t> ws = w.effectiveStrides();
    std::vector<int64_t> dims, strides;
    int64_t G = g.groups;
    if (!g.transpose) {
      if (G > 1) {
        dims = {G, g.outC / G, g.inC / G};
        strides = {g.outC / G * ws[0], ws[0], ws[1]};
      } else {
        dims = {g.outC, g.inC};
        strides = {ws[0], ws[1]};
      }
    } else {
      // ONNX: [C_in, M/G, K...] = (i, o) per group.
      if (G > 1) {
        dims = {G, g.outC / G, g.inC / G};
        strides = {g.inC / G * ws[0], ws[1], ws[0]};
      } else {
        dims = {g.outC, g.inC};
        strides = {ws[1], ws[0]};
      }
    }
    for (size_t i = 0; i < g.kernel.size(); ++i) {
      dims.push_back(g.kernel[i]);
      strides.push_back(ws[2 + i]);
    }
    for (int64_t st : strides)
      if (st < 0)
        throw dnnl::error(dnnl_invalid_arguments, "negative strides");
    weights_ = {dims, strides, type};
    if (g.hasBias)
      bias_ = {{g.outC}, {1}, type};
    // Layout choice (see the file comment).
    bool oneByOne = !g.transpose && G == 1;
    for (size_t i = 0; i < g.kernel.size(); ++i)
      oneByOne = oneByOne && g.kernel[i] == 1 && g.stride[i] == 1 && g.padBegin[i] == 0 &&
                 g.padEnd[i] == 0;
    channelsLast_ = channelsLast(x) && channelsLast(out);
    winograd_ = winogradApplies(g, type);
    if (channelsLast_)
      mode_ = Mode::User;
    else if (oneByOne && x.isContiguous() && out.isContiguous() &&
             (numElements(g.out) >= kGemmMinSpatial || numElements(g.out) == 1))
      mode_ = Mode::User; // (1x1 planes: squeeze-excitation FCs, no reorders)
    else
      mode_ = Mode::Any;
    for (int i = 0; i < post_.ops.len(); ++i) {
      if (post_.ops.kind(i) != dnnl::primitive::kind::binary)
        continue;
      dnnl::algorithm alg;
      dnnl::memory::desc d;
      post_.ops.get_params_binary(i, alg, d);
      binaries_.push_back({i, onednn::plainOperand(d)});
    }
    // (A chain with no post-op form has no post-op summary: name its ops.)
    std::string summary = post_.ops.len() == 0 && chain ? chainSummary(*chain) : post_.summary;
    const bool outChannelsLast = channelsLast(out);
    if (chain && !chain->empty() && (out.isContiguous() || outChannelsLast)) {
      // The chain runs as our vectorized epilogue over the result instead
      // of as oneDNN post-ops where those are slow:
      // - oneDNN's GEMM-based convolution (1x1 on NCHW) applies eltwise
      //   post-ops in a scalar loop that cost as much as the GEMM (measured
      //   256->64 @56: 1.05 ms vs 0.55 without);
      // - swish and sigmoid: oneDNN 2.6's post-op injector for them cost
      //   0.46 ns per element (16->96 @112 channels-last brgemm: 202 us, 765
      //   with swish, 710 with logistic), our epilogue's pass 0.28 (333 us
      //   for those 1.2M elements).
      std::string impl = piece(wholePiece()).pd.impl_info_str();
      bool logistic = false;
      for (const KernelDesc &e : *chain)
        logistic = logistic || e.op == "cgc_op.swish" || e.op == "cgc_op.sigmoid";
      // - a chain with no post-op form at all (an erf_gelu: MaxViT's
      //   convolutions before each GELU), which came with no post-ops.
      if ((impl.find("gemm") != std::string::npos && out.isContiguous()) || logistic ||
          post_.ops.len() == 0) {
        // Positions in the result's memory order: N, spatial..., C when
        // channels-last.
        std::vector<size_t> order(out.shape.size());
        std::iota(order.begin(), order.end(), size_t(0));
        if (outChannelsLast)
          std::rotate(order.begin() + 1, order.begin() + 2, order.end());
        epilogue_ = Epilogue(out.shape, out.dtype, *chain, out.effectiveStrides(), order);
        post_ = onednn::PostOps();
        binaries_.clear();
        std::lock_guard<std::mutex> lock(mutex_);
        pieces_.clear();
      }
    }
    const Piece &whole = piece(wholePiece());
    implName_ = whole.pd.impl_info_str();
    chooseSumForm(whole);
    if (implName_.rfind("ref", 0) == 0)
      throw dnnl::error(dnnl_unimplemented, "only oneDNN's reference implementation applies");
    if (implName_.find("gemm") != std::string::npos && !sameLayoutBinaries(whole.pd.dst_desc()))
      throw dnnl::error(dnnl_unimplemented,
                        "oneDNN's GEMM convolution misreads a full-size binary post-op operand "
                        "laid out unlike the result");
    description_ = cat(geomText(g), summary, " (oneDNN ", implName_,
                       whole.winograd ? ", Winograd" : "",
                       sumBinary_ >= 0 ? ", residual accumulated in place" : "",
                       whole.reorderSrc || whole.reorderDst ? ", activations reordered" : "",
                       epilogue_.empty() ? "" : ", epilogue after",
                       constantWeights ? ", weights prepared once" : "", ", split across the pool)");
  }

  /// The residual of the sum form: in place, nothing is copied.
  int inPlaceInput() const override {
    return sumBinary_ >= 0 ? int(firstExtra_) + sumBinary_ : -1;
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    std::vector<Geometry> pieces =
        usableSplit(pool.size(), sumBinary_ >= 0 && residualFitsSum(args));
    std::vector<std::function<void()>> tasks;
    for (const Geometry &pg : pieces)
      tasks.push_back([&, pg] { runPiece(pg, args); });
    pool.runAll(tasks);
    if (constantWeights_) {
      bool allPrepared = true;
      for (const Geometry &pg : pieces)
        allPrepared = allPrepared && piece(pg).reorderWeights;
      if (allPrepared)
        weightsPageOut_.release(weights_, args.inputs[1]);
    }
    if (!epilogue_.empty()) {
      std::vector<const void *> extra(epilogue_.numExtraOperands());
      for (size_t i = 0; i < extra.size(); ++i)
        extra[i] = args.inputs[firstExtra_ + i];
      char *out = static_cast<char *>(args.outputs[0]);
      int64_t total = numElements(g_.out) * g_.batch * g_.outC;
      pool.parallelFor(total, 16384, [&](int64_t b, int64_t e) {
        epilogue_.apply(out, extra.data(), b, e);
      });
    }
  }

private:
  enum class Mode { User, Any };
  /// How usableSplit cuts the problem: split(), split() in output-channel
  /// blocks, or not at all.
  enum class SplitForm { Split, Channels, Whole };
  /// One piece: a range along dimension `dim` of the output (0: batch,
  /// 1: channels, 2: first spatial; -1: everything) and, for row bands, the
  /// input rows it reads and its padding there.
  struct Geometry {
    int dim = -1;
    int64_t start = 0, len = 0;
    int64_t inStart = 0, inLen = 0; // rows (dim 2) of the input
    int64_t padB = 0, padE = 0;     // of that spatial dimension
    /// Built with binaries_[sumBinary_] as oneDNN's sum post-op (the
    /// residual copied into the result first) instead of a binary add.
    bool sum = false;
    /// The direct convolution even where the problem is Winograd's.
    bool direct = false;
    bool operator<(const Geometry &o) const {
      return std::tie(dim, len, inLen, padB, padE, sum, direct) <
             std::tie(o.dim, o.len, o.inLen, o.padB, o.padE, o.sum, o.direct);
    }
  };
  struct Piece {
    dnnl::primitive_desc pd;
    bool winograd = false; // pd is oneDNN's Winograd convolution
    dnnl::reorder sumCopy; // the residual into the result (Geometry::sum)
    size_t sumCopyScratch = 0;
    /// Bytes to memcpy instead when residual and result slices are dense
    /// and alike (0: use sumCopy). oneDNN 2.6 copies a strided slice (a row
    /// band of channels-last) with its scalar "simple:any" reorder: 2.5 ms
    /// per ResNet-50 run at 2 threads.
    size_t sumCopyBytes = 0;
    dnnl::primitive prim;
    size_t scratchpad = 0;
    /// A channel block of a channels-last result, computed into a dense
    /// temporary and copied into place (see split()).
    bool denseBlock = false;
    bool reorderSrc = false, reorderDst = false, reorderWeights = false;
    dnnl::reorder srcReorder, dstReorder, weightsReorder;
    size_t srcReorderScratch = 0, dstReorderScratch = 0, weightsReorderScratch = 0;
    onednn::PlainOperand src, dst, weights, bias;
    std::vector<onednn::PlainOperand> extras;
  };
  struct Binary {
    int index;
    onednn::PlainOperand operand;
  };
  struct Prepared {
    const void *src;
    dnnl::memory::desc desc;
    std::shared_ptr<AlignedBuffer> data;
  };

  Geometry wholePiece() const { return Geometry(); }

  /// oneDNN 2.6 has no brgemm 1x1 convolution with a full-size binary post-op
  /// and takes its older jit_1x1 kernel instead (ResNet-50's residual
  /// convolutions, one thread: 64->256 @56 0.58 vs 0.52 ms, 256->1024 @14
  /// 0.55 vs 0.49 ms). A residual added first in the chain, shaped and laid
  /// out like the result, can be oneDNN's sum post-op instead (the result
  /// preloaded with the residual): used when that gets a brgemm kernel and
  /// the result is written in place (no reorder of the result).
  void chooseSumForm(const Piece &whole) {
    if (binaries_.empty() || binaries_[0].index != 0 || whole.reorderDst || whole.winograd ||
        implName_.rfind("brg", 0) == 0 || !epilogue_.empty())
      return;
    dnnl::algorithm alg;
    dnnl::memory::desc d;
    post_.ops.get_params_binary(0, alg, d);
    const onednn::PlainOperand &r = binaries_[0].operand;
    if (alg != dnnl::algorithm::binary_add || r.type != dst_.type || r.dims != dst_.dims ||
        r.desc() != dst_.desc())
      return;
    sumBinary_ = 0;
    try {
      Geometry g = wholePiece();
      g.sum = true;
      const Piece &p = piece(g);
      if (std::string(p.pd.impl_info_str()).rfind("brg", 0) == 0 && !p.reorderDst)
        return;
    } catch (const dnnl::error &) {
    }
    sumBinary_ = -1;
  }

  /// The sum form needs the residual and the result to be the same bytes or
  /// disjoint: a partial overlap (which no planned program has; operands of
  /// one kernel that partly alias are undefined for any kernel) keeps the
  /// binary form rather than preload over residual values.
  bool residualFitsSum(const KernelArgs &args) const {
    const int64_t elem = int64_t(dnnl::memory::data_type_size(dst_.type));
    const char *r = static_cast<const char *>(args.inputs[firstExtra_ + size_t(sumBinary_)]);
    const char *y = static_cast<const char *>(args.outputs[0]);
    if (r == y)
      return true;
    return r + binaries_[size_t(sumBinary_)].operand.spanElements() * elem <= y ||
           y + dst_.spanElements() * elem <= r;
  }

  /// False if a binary post-op operand has the result's full shape but not
  /// the layout of `dst` (oneDNN 2.6's GEMM-based convolution then reads it
  /// as if it had dst's layout: wrong results, measured on a channels-last
  /// convolution with an NCHW residual).
  bool sameLayoutBinaries(const dnnl::memory::desc &dst) const {
    const dnnl_memory_desc_t &d = dst.data;
    if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0)
      return binaries_.empty();
    for (const Binary &b : binaries_) {
      const onednn::PlainOperand &o = b.operand;
      if (o.dims.size() != size_t(d.ndims))
        return false;
      bool full = true, same = true;
      for (int i = 0; i < d.ndims; ++i) {
        full = full && o.dims[size_t(i)] == d.dims[i];
        same = same && (d.dims[i] == 1 || o.strides[size_t(i)] == d.format_desc.blocking.strides[i]);
      }
      if (full && !same)
        return false;
    }
    return true;
  }

  /// split(threads) (with the residual as a sum post-op when `sum`), or
  /// the whole problem in one piece if oneDNN has only its reference
  /// implementation for some piece (decided once per count and form).
  ///
  /// A Winograd problem whose row bands oneDNN runs only directly (its
  /// F(2x2,3x3) kernel takes no band: ResNet-50's 64->64 @56 ran as brgconv
  /// bands at 2 threads, 0.61 ms as at 1 thread) takes output-channel
  /// blocks, which keep Winograd, when its result is not channels-last
  /// (each block is then dense): 0.36 ms at 2 threads (bench-kernels). On a
  /// channels-last result the blocks measured no faster than the direct
  /// bands (ResNet-50 at 2 threads: 64->64 steps 591-770 vs 571-733 us,
  /// alternating runs), the block's result reordered into place or copied
  /// from a dense temporary alike. CGC_REFERENCE_WINOGRAD_CHANNEL_BLOCKS=0
  /// turns the blocks off.
  std::vector<Geometry> usableSplit(int threads, bool sum) const {
    auto withSum = [&](std::vector<Geometry> pieces) {
      for (Geometry &pg : pieces)
        pg.sum = sum;
      return pieces;
    };
    auto form = [&](SplitForm f) {
      switch (f) {
      case SplitForm::Whole:
        return withSum({wholePiece()});
      case SplitForm::Channels:
        return withSum(split(threads, /*channelBlocks=*/true));
      case SplitForm::Split:
        break;
      }
      return withSum(split(threads));
    };
    const std::pair<int, bool> key(threads, sum);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = splitForm_.find(key);
      if (it != splitForm_.end())
        return form(it->second);
    }
    // Whether every piece has a kernel other than oneDNN's reference one,
    // and whether every piece is Winograd.
    auto check = [&](const std::vector<Geometry> &pieces, bool &allWinograd) {
      bool ok = true;
      allWinograd = true;
      for (const Geometry &pg : pieces) {
        try {
          const Piece &p = piece(pg);
          ok = ok && std::string(p.pd.impl_info_str()).rfind("ref", 0) != 0;
          allWinograd = allWinograd && (p.winograd || pg.direct);
        } catch (const dnnl::error &) {
          ok = false;
        }
      }
      return ok;
    };
    SplitForm chosen = SplitForm::Whole;
    bool winograd = false;
    const std::vector<Geometry> pieces = form(SplitForm::Split);
    if (check(pieces, winograd))
      chosen = SplitForm::Split;
    if (activeConfig().winogradChannelBlocks && winograd_ && !channelsLast_ && !winograd && pieces.size() > 1 &&
        g_.outC >= kWinogradMinBlockChannels * threads && piece(wholePiece()).winograd) {
      const std::vector<Geometry> blocks = form(SplitForm::Channels);
      bool blocksWinograd = false;
      if (check(blocks, blocksWinograd) && blocksWinograd && blocks.size() > 1)
        chosen = SplitForm::Channels;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    splitForm_[key] = chosen;
    return form(chosen);
  }

  /// Pieces for `threads` threads (one per thread); output-channel blocks
  /// (whole 16-channel blocks for Winograd) when `channelBlocks`.
  std::vector<Geometry> split(int threads, bool channelBlocks = false) const {
    std::vector<Geometry> out;
    // One piece per thread: two per thread (for balance) measured slower in
    // every model at 2 threads (each piece re-reads the weights and runs a
    // smaller GEMM; median ResNet-50 23.4 -> 22.3 ms, MobileNetV2 3.03 ->
    // 2.96, EfficientNet-B0 6.27 -> 6.06), the pieces being equal anyway.
    int64_t want = int64_t(threads);
    auto ranges = [&](int dim, int64_t extent, int64_t minLen) {
      if (dim == 1) {
        int64_t step = std::max(minLen, (extent + want - 1) / want);
        if (winograd_) // whole 16-channel blocks
          step = (step + 15) / 16 * 16;
        for (int64_t s = 0; s < extent; s += step) {
          Geometry pg;
          pg.dim = dim;
          pg.start = s;
          pg.len = std::min(step, extent - s);
          out.push_back(pg);
        }
        return;
      }
      // Images and row bands: `count` pieces whose lengths differ by at most
      // one (14 rows in 4 pieces: 4, 4, 3, 3, not 4, 4, 4, 2, which left one
      // thread 8 rows and the other 6).
      int64_t count = std::max<int64_t>(1, std::min(want, extent / std::max<int64_t>(1, minLen)));
      for (int64_t i = 0; i < count; ++i) {
        Geometry pg;
        pg.dim = dim;
        int64_t end;
        evenSplit(extent, count, i, pg.start, end);
        pg.len = end - pg.start;
        out.push_back(pg);
      }
    };
    const double flops = 2.0 * double(g_.batch) * double(g_.outC) * double(g_.inC / g_.groups) *
                         double(g_.kernelSize()) * double(numElements(g_.out));
    if (threads <= 1 || flops < kMinSplitFlops) {
      out.push_back(wholePiece());
    } else if (channelBlocks) {
      ranges(1, g_.outC, 16);
    } else if (g_.batch >= threads) {
      ranges(0, g_.batch, 1);
    } else if (winograd_ && g_.out[0] < kWinogradMinBandRows * threads &&
               g_.outC >= kWinogradMinBlockChannels * threads) {
      // Small planes: one output-channel block per thread. oneDNN lays out a
      // Winograd piece's weights for its whole problem, so short row bands
      // would each get their own transformed copy (measured 512->512 @7:
      // 16.8 MB whole, 37.7 MB per half-height band, and 2.3 vs 0.83 ms),
      // while channel blocks split the weights. Large planes take row bands
      // (below): there each channel block would transform the whole input
      // again: at 2 threads ResNet-50's 64->64 @56 ran 1.28x faster than at
      // one thread as channel blocks, 1.6-2.2x as row bands (step times,
      // CGC_REFERENCE_PROFILE).
      want = threads;
      ranges(1, g_.outC, 16);
    } else if (channelsLast_ && !g_.transpose && g_.groups == 1 && g_.outC >= 32 * want &&
               !g_.out.empty() && unevenBands(g_.out[0], want)) {
      // Short channels-last planes whose rows do not split evenly (7 rows
      // in 4 and 3 kept one of 2 threads idle for 1/8 of ResNet-50's 7x7
      // stage): output-channel blocks, each computed into a dense
      // temporary and copied into place (oneDNN's kernels for a channel
      // block of channels-last in place, not dense, measured 2x slower than
      // dense row bands). Each block reads the whole (small) input.
      ranges(1, g_.outC, 16);
    } else if (mode_ == Mode::User && !channelsLast_ && g_.groups == 1 && g_.outC >= 32) {
      // The GEMM path on NCHW needs dense operands: output-channel blocks
      // (a block of one image is dense; a row band is not).
      ranges(1, g_.outC, 16);
    } else if (!g_.transpose && g_.groups == 1 && g_.outC >= 64 &&
               numElements(g_.out) <= kSmallPlane && !channelsLast_) {
      // Small planes (7x7): row bands would be 1-2 rows with a large halo;
      // output-channel blocks each read the small input whole instead.
      // (Not channels-last: a channel block of it is not dense, and oneDNN's
      // kernels for that measured 2x slower than dense row bands.)
      ranges(1, g_.outC, 16);
    } else if (!g_.transpose && !g_.out.empty() && g_.out[0] >= 2) {
      const int64_t window = g_.dilation[0] * (g_.kernel[0] - 1) + 1;
      // Output rows [lo, hi) read no padding rows.
      int64_t lo = 0, hi = g_.out[0];
      while (lo < hi && lo * g_.stride[0] < g_.padBegin[0])
        ++lo;
      while (hi > lo && (hi - 1) * g_.stride[0] - g_.padBegin[0] + window > g_.in[0])
        --hi;
      const bool interior = winograd_ && (lo > 0 || hi < g_.out[0]) &&
                            (hi - lo) / want >= kWinogradMinInteriorRows;
      if (interior) {
        // oneDNN's F(2x2,3x3) kernel takes a band that reads no padding but
        // not one with padding on one side only: the interior rows in one
        // band per thread, which keep Winograd, and the edge rows (one each
        // for a 3x3 with padding 1) as direct pieces of their own, claimed
        // last. ResNet-50's 64->64 @56 at 2 threads: two Winograd bands of
        // 27 rows; it had run as two direct bands of 28.
        const int64_t count = want;
        for (int64_t i = 0; i < count; ++i) {
          Geometry pg;
          pg.dim = 2;
          int64_t begin, end;
          evenSplit(hi - lo, count, i, begin, end);
          pg.start = lo + begin;
          pg.len = end - begin;
          out.push_back(pg);
        }
        for (auto [start, len] : {std::pair{int64_t(0), lo}, std::pair{hi, g_.out[0] - hi}})
          if (len > 0) {
            Geometry pg;
            pg.dim = 2;
            pg.start = start;
            pg.len = len;
            pg.direct = true;
            out.push_back(pg);
          }
      } else {
        ranges(2, g_.out[0], 1);
      }
      // Input rows of each band, with its share of the padding.
      for (Geometry &pg : out) {
        BandInput band;
        if (!bandInput(pg.start, pg.len, g_.stride[0], window, g_.padBegin[0], g_.in[0], band))
          return {wholePiece()}; // a band entirely in the padding: do not split
        pg.inStart = band.start;
        pg.inLen = band.len;
        pg.padB = band.padB;
        pg.padE = band.padE;
      }
      // No Winograd on short bands (see kWinogradMinBandRows): a Winograd
      // problem cut this way (its channel blocks would be too narrow) runs
      // direct.
      if (winograd_ && !interior && out.size() > 1 && out.front().len < kWinogradMinBandRows)
        for (Geometry &pg : out)
          pg.direct = true;
    } else if (g_.transpose && g_.groups == 1 && g_.outC >= 32) {
      ranges(1, g_.outC, 16);
    } else {
      out.push_back(wholePiece());
    }
    return out;
  }

  /// The primitive for pieces shaped like `pg` (offsets aside).
  const Piece &piece(const Geometry &pg) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pieces_.find(pg);
    if (it != pieces_.end())
      return *it->second;
    auto p = std::make_unique<Piece>();
    int64_t off;
    p->src = src_;
    p->dst = dst_;
    p->weights = weights_;
    p->bias = bias_;
    std::vector<int64_t> padB = g_.padBegin, padE = g_.padEnd;
    if (pg.dim == 0) {
      p->src = src_.slice(0, 0, pg.len, off);
      p->dst = dst_.slice(0, 0, pg.len, off);
    } else if (pg.dim == 2) {
      p->src = src_.slice(2, 0, pg.inLen, off);
      p->dst = dst_.slice(2, 0, pg.len, off);
      padB[0] = pg.padB;
      padE[0] = pg.padE;
    } else if (pg.dim == 1 && channelsLast_ && !winograd_) {
      p->dst = denseChannelsLast(dst_.dims, pg.len, dst_.type);
      p->denseBlock = true;
      p->weights = weights_.slice(0, 0, pg.len, off);
      if (g_.hasBias)
        p->bias = bias_.slice(0, 0, pg.len, off);
    } else if (pg.dim == 1) {
      p->dst = dst_.slice(1, 0, pg.len, off);
      p->weights = weights_.slice(0, 0, pg.len, off);
      if (g_.hasBias)
        p->bias = bias_.slice(0, 0, pg.len, off);
    }
    dnnl::post_ops ops;
    size_t next = 0;
    for (int i = 0; i < post_.ops.len(); ++i) {
      if (post_.ops.kind(i) == dnnl::primitive::kind::eltwise) {
        float scale, alpha, beta;
        dnnl::algorithm alg;
        post_.ops.get_params_eltwise(i, scale, alg, alpha, beta);
        ops.append_eltwise(scale, alg, alpha, beta);
      } else {
        dnnl::algorithm alg;
        dnnl::memory::desc d;
        post_.ops.get_params_binary(i, alg, d);
        bool asSum = pg.sum && int(next) == sumBinary_;
        onednn::PlainOperand e = binaries_[next++].operand.slice(pg.dim, 0, pg.len, off);
        if (asSum)
          ops.append_sum(1.f);
        else
          ops.append_binary(alg, e.desc());
        p->extras.push_back(e);
      }
    }
    onednn::ThreadScope scope(1);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    dnnl::memory::desc src = p->src.desc(), dst = p->dst.desc();
    if (mode_ == Mode::Any) {
      src = dnnl::memory::desc(src.dims(), src.data_type(), tag::any);
      dst = dnnl::memory::desc(dst.dims(), dst.data_type(), tag::any);
    }
    dnnl::memory::desc userWeights = p->weights.desc();
    dnnl::memory::desc weights(userWeights.dims(), userWeights.data_type(), tag::any);
    dnnl::memory::dims strides(g_.stride.begin(), g_.stride.end());
    dnnl::memory::dims dil, pl(padB.begin(), padB.end()), pr(padE.begin(), padE.end());
    for (int64_t d : g_.dilation)
      dil.push_back(d - 1);
    if (g_.transpose)
      for (size_t i = 0; i < pr.size(); ++i)
        pr[i] -= g_.outPad[i]; // output_padding extends the end
    auto prop = dnnl::prop_kind::forward_inference;
    dnnl::memory::desc bias = g_.hasBias ? p->bias.desc() : dnnl::memory::desc();
    if (!g_.transpose) {
      auto convolution = [&](dnnl::algorithm alg, const dnnl::memory::desc &s,
                             const dnnl::memory::desc &d) {
        auto cd = g_.hasBias ? dnnl::convolution_forward::desc(prop, alg, s, weights, bias, d,
                                                               strides, dil, pl, pr)
                             : dnnl::convolution_forward::desc(prop, alg, s, weights, d, strides,
                                                               dil, pl, pr);
        return dnnl::convolution_forward::primitive_desc(cd, attr, onednn::engine());
      };
      if (winograd_ && !pg.direct) {
        // Winograd runs on oneDNN's blocked layout: activations reordered
        // around it (cheap next to the 1.3-2.3x it saves, see the file
        // comment). Its F(2x2,3x3) kernel always; its F(4x4,3x3) one
        // (jit_wino_4x3, chosen for larger planes) only with at least 128
        // input and output channels: its transforms cost per tile grows
        // with the channels, its products with their product, and with few
        // channels it ran far slower than the direct kernel (Inception-v3's
        // 32->64 @147 17.3 ms at 1 thread and 80->192 @73 24.9 ms at 2,
        // DenseNet-121's 128->32 @56 4.3 ms, against 3.9, 3.9 and 1.15 ms
        // direct) while ResNet-50's 128->128 @28 gains from it (the model
        // 37 -> 41.7 ms at 1 thread without it). Where oneDNN has no such
        // kernel for the piece (post-ops, shapes), the direct convolution
        // below.
        try {
          p->pd = convolution(dnnl::algorithm::convolution_winograd,
                              dnnl::memory::desc(src.dims(), src.data_type(), tag::any),
                              dnnl::memory::desc(dst.dims(), dst.data_type(), tag::any));
          const std::string impl = p->pd.impl_info_str();
          p->winograd = impl.rfind("jit_fp32_wino_2x3", 0) == 0 ||
                        (impl.rfind("jit_wino_4x3", 0) == 0 &&
                         std::min(g_.inC, g_.outC) >= kWinograd4x3MinChannels);
        } catch (const dnnl::error &) {
          p->winograd = false;
        }
      }
      if (!p->winograd)
        p->pd = convolution(dnnl::algorithm::convolution_direct, src, dst);
    } else {
      auto d = g_.hasBias
                   ? dnnl::deconvolution_forward::desc(prop, dnnl::algorithm::deconvolution_direct,
                                                       src, weights, bias, dst, strides, dil, pl, pr)
                   : dnnl::deconvolution_forward::desc(prop, dnnl::algorithm::deconvolution_direct,
                                                       src, weights, dst, strides, dil, pl, pr);
      p->pd = dnnl::deconvolution_forward::primitive_desc(d, attr, onednn::engine());
    }
    p->prim = dnnl::primitive(p->pd);
    p->scratchpad = p->pd.scratchpad_desc().get_size();
    p->reorderSrc = p->pd.src_desc() != p->src.desc();
    p->reorderDst = p->pd.dst_desc() != p->dst.desc();
    p->reorderWeights = p->pd.weights_desc() != userWeights;
    if (p->reorderSrc)
      p->srcReorder = makeReorder(p->src.desc(), p->pd.src_desc(), p->srcReorderScratch);
    if (p->reorderDst)
      p->dstReorder = makeReorder(p->pd.dst_desc(), p->dst.desc(), p->dstReorderScratch);
    if (p->reorderWeights)
      p->weightsReorder = makeReorder(userWeights, p->pd.weights_desc(), p->weightsReorderScratch);
    if (pg.sum && !p->denseBlock) {
      const onednn::PlainOperand &r = p->extras[size_t(sumBinary_)];
      const int64_t count = numElements(p->dst.dims);
      if (r.dims == p->dst.dims && r.strides == p->dst.strides && p->dst.spanElements() == count)
        p->sumCopyBytes = size_t(count) * dnnl::memory::data_type_size(p->dst.type);
      else
        p->sumCopy = makeReorder(r.desc(), p->dst.desc(), p->sumCopyScratch);
    }
    const Piece &ref = *p;
    pieces_.emplace(pg, std::move(p));
    return ref;
  }

  static dnnl::reorder makeReorder(const dnnl::memory::desc &from, const dnnl::memory::desc &to,
                                   size_t &scratch) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::reorder::primitive_desc pd(onednn::engine(), from, onednn::engine(), to, attr);
    scratch = pd.scratchpad_desc().get_size();
    return dnnl::reorder(pd);
  }

  /// Weights in `pc`'s layout: prepared once per address and layout when
  /// constant (pieces with the same layout share them), else into `scratch`.
  const void *weightsFor(const Piece &pc, const void *src, Scratch &scratch) const {
    auto reorder = [&](void *dst) {
      std::unordered_map<int, dnnl::memory> rargs = {
          {DNNL_ARG_FROM, onednn::wrap(pc.weights.desc(), src)},
          {DNNL_ARG_TO, onednn::wrap(pc.pd.weights_desc(), dst)}};
      onednn::execute(pc.weightsReorder, pc.weightsReorderScratch, rargs);
    };
    if (!constantWeights_) {
      scratch.allocate(pc.pd.weights_desc().get_size());
      reorder(scratch.data());
      return scratch.data();
    }
    std::lock_guard<std::mutex> lock(preparedMutex_);
    for (const Prepared &p : prepared_)
      if (p.src == src && p.desc == pc.pd.weights_desc())
        return p.data->data();
    auto data = std::make_shared<AlignedBuffer>(pc.pd.weights_desc().get_size());
    reorder(data->data());
    prepared_.push_back({src, pc.pd.weights_desc(), data});
    return data->data();
  }

  void runPiece(const Geometry &pg, const KernelArgs &args) const {
    const Piece &pc = piece(pg);
    onednn::ThreadScope scope(1);
    const int64_t elem = int64_t(dnnl::memory::data_type_size(src_.type));
    int64_t srcOff = 0, dstOff = 0, wOff = 0, bOff = 0;
    if (pg.dim == 0) {
      src_.slice(0, pg.start, pg.len, srcOff);
      dst_.slice(0, pg.start, pg.len, dstOff);
    } else if (pg.dim == 2) {
      src_.slice(2, pg.inStart, pg.inLen, srcOff);
      dst_.slice(2, pg.start, pg.len, dstOff);
    } else if (pg.dim == 1) {
      dst_.slice(1, pg.start, pg.len, dstOff);
      weights_.slice(0, pg.start, pg.len, wOff);
      if (g_.hasBias)
        bias_.slice(0, pg.start, pg.len, bOff);
    }
    const char *x = static_cast<const char *>(args.inputs[0]) + srcOff * elem;
    const char *w = static_cast<const char *>(args.inputs[1]) + wOff * elem;
    char *y = static_cast<char *>(args.outputs[0]) + dstOff * elem;
    std::unordered_map<int, dnnl::memory> margs;
    Scratch srcBuf, dstBuf, wBuf, blockBuf;
    // A dense block's result goes to a temporary first (copied into y last).
    char *target = y;
    if (pc.denseBlock) {
      blockBuf.allocate(size_t(numElements(pc.dst.dims) * elem));
      target = blockBuf.as<char>();
    }
    dnnl::memory userSrc = onednn::wrap(pc.src.desc(), x);
    dnnl::memory userDst = onednn::wrap(pc.dst.desc(), target);
    if (pc.reorderSrc) {
      srcBuf.allocate(pc.pd.src_desc().get_size());
      dnnl::memory internal = onednn::wrap(pc.pd.src_desc(), srcBuf.data());
      std::unordered_map<int, dnnl::memory> rargs = {{DNNL_ARG_FROM, userSrc},
                                                     {DNNL_ARG_TO, internal}};
      onednn::execute(pc.srcReorder, pc.srcReorderScratch, rargs);
      margs[DNNL_ARG_SRC] = internal;
    } else {
      margs[DNNL_ARG_SRC] = userSrc;
    }
    if (pc.reorderWeights)
      margs[DNNL_ARG_WEIGHTS] = onednn::wrap(pc.pd.weights_desc(), weightsFor(pc, w, wBuf));
    else
      margs[DNNL_ARG_WEIGHTS] = onednn::wrap(pc.weights.desc(), w);
    if (g_.hasBias)
      margs[DNNL_ARG_BIAS] = onednn::wrap(pc.bias.desc(), static_cast<const char *>(args.inputs[2]) +
                                                             bOff * elem);
    for (size_t i = 0; i < binaries_.size(); ++i) {
      int64_t off;
      binaries_[i].operand.slice(pg.dim, pg.start, pg.len, off);
      const char *operand = static_cast<const char *>(args.inputs[firstExtra_ + i]) + off * elem;
      if (pg.sum && int(i) == sumBinary_) {
        // oneDNN's sum post-op adds what the result holds: the residual,
        // unless it already is the result (computed in place).
        if (pc.denseBlock) {
          copyChannels(binaries_[i].operand, operand, pc.dst, target, pg.len);
        } else if (operand != y && pc.sumCopyBytes) {
          std::memcpy(y, operand, pc.sumCopyBytes);
        } else if (operand != y) {
          std::unordered_map<int, dnnl::memory> rargs = {
              {DNNL_ARG_FROM, onednn::wrap(pc.extras[i].desc(), operand)},
              {DNNL_ARG_TO, userDst}};
          onednn::execute(pc.sumCopy, pc.sumCopyScratch, rargs);
        }
        continue;
      }
      margs[DNNL_ARG_ATTR_MULTIPLE_POST_OP(binaries_[i].index) | DNNL_ARG_SRC_1] =
          onednn::wrap(pc.extras[i].desc(), operand);
    }
    dnnl::memory dst = userDst;
    if (pc.reorderDst) {
      dstBuf.allocate(pc.pd.dst_desc().get_size());
      dst = onednn::wrap(pc.pd.dst_desc(), dstBuf.data());
    }
    margs[DNNL_ARG_DST] = dst;
    onednn::execute(pc.prim, pc.scratchpad, margs);
    if (pc.reorderDst) {
      std::unordered_map<int, dnnl::memory> rargs = {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, userDst}};
      onednn::execute(pc.dstReorder, pc.dstReorderScratch, rargs);
    }
    if (pc.denseBlock)
      copyChannels(pc.dst, target, dst_, y, pg.len);
  }

  ConvGeom g_;
  bool constantWeights_;
  onednn::PostOps post_;
  size_t firstExtra_;
  Mode mode_ = Mode::Any;
  bool channelsLast_ = false;
  bool winograd_ = false; // try oneDNN's Winograd convolution first
  int sumBinary_ = -1;    // binaries_ entry run as a sum post-op (chooseSumForm)
  Epilogue epilogue_; // the fused chain when it runs after oneDNN
  onednn::PlainOperand src_, dst_, weights_, bias_;
  std::vector<Binary> binaries_;
  std::string implName_;
  mutable std::mutex mutex_;
  mutable std::map<Geometry, std::unique_ptr<Piece>> pieces_;
  mutable std::map<std::pair<int, bool>, SplitForm> splitForm_;
  mutable std::mutex preparedMutex_;
  mutable std::vector<Prepared> prepared_;
  mutable onednn::SourcePageOut weightsPageOut_;
};

//===----------------------------------------------------------------------===//
// Generic: im2col / col2im + genericGemm (contiguous operands)
//===----------------------------------------------------------------------===//

template <class T> class GenericConvKernel final : public KernelBase {
public:
  explicit GenericConvKernel(const ConvGeom &g) : g_(g) {
    description_ = geomText(g) + " (im2col + blocked GEMM)";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    const T *w = static_cast<const T *>(args.inputs[1]);
    const T *bias = g_.hasBias ? static_cast<const T *>(args.inputs[2]) : nullptr;
    T *y = static_cast<T *>(args.outputs[0]);
    const int64_t inSp = numElements(g_.in), outSp = numElements(g_.out);
    const int64_t G = g_.groups, cg = g_.inC / G, mg = g_.outC / G, ks = g_.kernelSize();
    if (g_.batch * g_.outC * outSp == 0)
      return;
    if (!g_.transpose) {
      // y[n, g*mg + m, o] = sum_{c, k} w[g*mg + m, c, k] * col[c*ks + k, o]
      const int64_t block = std::max<int64_t>(1, std::min<int64_t>(outSp, (1 << 22) / std::max<int64_t>(cg * ks, 1)));
      Scratch colBuf(size_t(cg * ks * block) * sizeof(T));
      T *col = colBuf.as<T>();
      for (int64_t n = 0; n < g_.batch; ++n)
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t o0 = 0; o0 < outSp; o0 += block) {
            int64_t nb = std::min(block, outSp - o0);
            im2col(x + (n * g_.inC + gi * cg) * inSp, cg, o0, nb, col);
            GemmShape s{mg, nb, cg * ks, cg * ks, 1, nb, 1, outSp, 1};
            genericGemm<T>(s, w + gi * mg * cg * ks, col, y + (n * g_.outC + gi * mg) * outSp + o0,
                           &pool);
          }
    } else {
      // cols[m*ks + k, i] = sum_c w[g*cg + c, m, k] * x[n, g*cg + c, i]; then
      // col2im scatters cols into y.
      std::fill(y, y + g_.batch * g_.outC * outSp, store<T>(Compute<T>(0)));
      const int64_t block = std::max<int64_t>(1, std::min<int64_t>(inSp, (1 << 22) / std::max<int64_t>(mg * ks, 1)));
      Scratch colBuf(size_t(mg * ks * block) * sizeof(T));
      T *col = colBuf.as<T>();
      for (int64_t n = 0; n < g_.batch; ++n)
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t i0 = 0; i0 < inSp; i0 += block) {
            int64_t nb = std::min(block, inSp - i0);
            // A = w_g^T: (mg*ks) x cg with A(r, c) = w[(g*cg + c)*mg*ks + r]
            GemmShape s{mg * ks, nb, cg, 1, mg * ks, inSp, 1, nb, 1};
            genericGemm<T>(s, w + gi * cg * mg * ks, x + (n * g_.inC + gi * cg) * inSp + i0, col,
                           &pool);
            col2im(col, mg, i0, nb, y + (n * g_.outC + gi * mg) * outSp);
          }
    }
    if (bias) {
      for (int64_t n = 0; n < g_.batch; ++n)
        for (int64_t m = 0; m < g_.outC; ++m) {
          Compute<T> b = load(bias[m]);
          T *p = y + (n * g_.outC + m) * outSp;
          for (int64_t o = 0; o < outSp; ++o)
            p[o] = store<T>(load(p[o]) + b);
        }
    }
  }

private:
  /// Maps linear position `pos` in `shape` to coordinates.
  static void coords(int64_t pos, const std::vector<int64_t> &shape, int64_t *c) {
    for (size_t d = shape.size(); d-- > 0;) {
      c[d] = pos % shape[d];
      pos /= shape[d];
    }
  }

  void im2col(const T *x, int64_t channels, int64_t o0, int64_t nb, T *col) const {
    const size_t sp = g_.spatial();
    const int64_t ks = g_.kernelSize(), inSp = numElements(g_.in);
    int64_t kc[16], oc[16];
    for (int64_t k = 0; k < ks; ++k) {
      coords(k, g_.kernel, kc);
      for (int64_t j = 0; j < nb; ++j) {
        coords(o0 + j, g_.out, oc);
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < sp; ++d) {
          int64_t i = oc[d] * g_.stride[d] - g_.padBegin[d] + kc[d] * g_.dilation[d];
          if (i < 0 || i >= g_.in[d]) {
            inside = false;
            break;
          }
          off = off * g_.in[d] + i;
        }
        for (int64_t c = 0; c < channels; ++c)
          col[(c * ks + k) * nb + j] = inside ? x[c * inSp + off] : store<T>(Compute<T>(0));
      }
    }
  }

  void col2im(const T *col, int64_t channels, int64_t i0, int64_t nb, T *y) const {
    const size_t sp = g_.spatial();
    const int64_t ks = g_.kernelSize(), outSp = numElements(g_.out);
    int64_t kc[16], ic[16];
    for (int64_t k = 0; k < ks; ++k) {
      coords(k, g_.kernel, kc);
      for (int64_t j = 0; j < nb; ++j) {
        coords(i0 + j, g_.in, ic);
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < sp; ++d) {
          int64_t o = ic[d] * g_.stride[d] - g_.padBegin[d] + kc[d] * g_.dilation[d];
          if (o < 0 || o >= g_.out[d]) {
            inside = false;
            break;
          }
          off = off * g_.out[d] + o;
        }
        if (!inside)
          continue;
        for (int64_t m = 0; m < channels; ++m) {
          T &dst = y[m * outSp + off];
          dst = store<T>(load(dst) + load(col[(m * ks + k) * nb + j]));
        }
      }
    }
  }

  ConvGeom g_;
};

/// A strided 1x1 convolution without padding reads only every s-th input
/// position: the kernel gathers those into a dense [N, C, OH, OW] buffer and
/// runs the stride-1 1x1 convolution on it, which takes oneDNN's in-place
/// GEMM path instead of the blocked kernel with two full-size reorders.
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

/// The oneDNN convolution kernel, with strided 1x1 convolutions on
/// contiguous NCHW subsampled first.
std::unique_ptr<Kernel> makeDnnlConv(const ConvGeom &g, const KernelOperand &x,
                                     const KernelOperand &w, const KernelOperand &out,
                                     bool constantWeights, onednn::PostOps post, size_t firstExtra,
                                     size_t numInputs, const std::vector<KernelDesc> *chain) {
  bool subsample = !g.transpose && g.groups == 1 && x.isContiguous() && out.isContiguous() &&
                   numElements(g.out) >= kGemmMinSpatial;
  bool strided = false;
  for (size_t i = 0; i < g.kernel.size(); ++i) {
    subsample = subsample && g.kernel[i] == 1 && g.padBegin[i] == 0 && g.padEnd[i] == 0 &&
                g.dilation[i] == 1;
    strided = strided || g.stride[i] > 1;
  }
  if (!subsample || !strided)
    return std::make_unique<DnnlConvKernel>(g, x, w, out, constantWeights, std::move(post),
                                            firstExtra, chain);
  ConvGeom dense = g;
  dense.in = g.out;
  dense.stride.assign(g.stride.size(), 1);
  KernelOperand sub = x;
  sub.shape = {g.batch, g.inC};
  sub.shape.insert(sub.shape.end(), g.out.begin(), g.out.end());
  sub.strides.clear();
  std::vector<int64_t> view = x.effectiveStrides();
  for (size_t i = 0; i < g.stride.size(); ++i)
    view[2 + i] *= g.stride[i];
  size_t elem = cgc_dtype_size(x.dtype);
  CopyPlan gather(sub.shape, elem, contiguousStrides(sub.shape), view);
  auto inner = std::make_unique<DnnlConvKernel>(dense, sub, w, out, constantWeights,
                                                std::move(post), firstExtra, chain);
  return std::make_unique<SubsampledConvKernel>(std::move(gather),
                                                size_t(numElements(sub.shape)) * elem,
                                                std::move(inner), numInputs);
}

/// A strided 1x1 convolution without padding on channels-last operands (a
/// ResNet's downsample convolutions): its used input positions gathered
/// into a dense channels-last buffer, then the packed GEMM's pointwise
/// kernel with `chain` as its epilogue. oneDNN's brgconv_1x1 ran ResNet-50's
/// three at 158-192 GFLOP/s, the packed GEMM's stride-1 ones of the same
/// sizes at ~190-215. Null where the pointwise kernel does not apply (its
/// reason in `reason`). CGC_REFERENCE_SUBSAMPLED_POINTWISE=0 keeps oneDNN.
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
  return std::make_unique<SubsampledConvKernel>(
      std::move(gather), size_t(numElements(sub.shape)) * elem, std::move(inner),
      desc.inputs.size() + chainExtraOperands(chain));
}

//===----------------------------------------------------------------------===//
// Depthwise 2-D float32 convolution on plain NCHW
//===----------------------------------------------------------------------===//

/// One output row: out[x] = bias + sum over the kernel taps of w * in[...],
/// from a zero-padded input plane (no bounds checks). Blocks of 64 outputs
/// (four AVX-512 vectors, independent FMA chains) accumulate every tap in
/// registers and are stored once; the padded buffer has slack after the
/// plane so the last block may read past it.
constexpr int64_t kDwBlock = 64; // the widest block (slack is sized for it)
/// Output planes smaller than this go to oneDNN (see makeConv).
constexpr int64_t kDwMinPlane = 256;

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

bool depthwiseApplies(const ConvGeom &g, const KernelDesc &desc, const KernelOperand &out) {
  if (g.transpose || g.spatial() != 2 || g.groups != g.inC || g.outC != g.inC || g.inC == 1)
    return false;
  for (const auto &in : desc.inputs)
    if (in && (in->dtype != CGC_DTYPE_FLOAT32 || !in->isContiguous()))
      return false;
  return out.dtype == CGC_DTYPE_FLOAT32 && out.isContiguous() && numElements(out.shape) > 0;
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
/// CGC_REFERENCE_CHANNELS_LAST_DEPTHWISE=0 turns it off, leaving oneDNN's
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

/// False with CGC_REFERENCE_DEPTHWISE_POOL=0: a global average pool of a
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
/// CGC_REFERENCE_STEM_CONVOLUTION=0 keeps oneDNN (read once per process).
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

std::unique_ptr<Kernel> makeGeneric(const ConvGeom &g, cgc_dtype_t dtype) {
  std::unique_ptr<Kernel> kernel;
  visitDType(dtype, [&](auto tagT) {
    using T = typename decltype(tagT)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<GenericConvKernel<T>>(g);
  });
  return kernel;
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

/// A convolution kernel the driver may choose: whether it takes a case
/// (empty, or why not) and how to create it (null with a reason, or a
/// DescError / dnnl::error, when it cannot after all).
struct ConvImplementation {
  const char *name;
  std::string (*applies)(const ConvCase &);
  std::unique_ptr<Kernel> (*create)(const ConvCase &, std::string &reason);
};

std::string unless(bool ok, const char *why) { return ok ? std::string() : std::string(why); }

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
       return unless(channelsLastDepthwiseFaster(c.g) || !c.postOk,
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
       return unless(c.largePlanes || !c.postOk, "planes too small (oneDNN is faster)");
     },
     [](const ConvCase &c, std::string &) -> std::unique_ptr<Kernel> {
       Epilogue chain = c.fused() ? Epilogue(c.anchor.outputs[0].shape, c.x().dtype, c.epilogue)
                                  : Epilogue();
       return std::make_unique<DepthwiseKernel>(c.g, std::move(chain), c.anchor.inputs.size(),
                                                chainSummary(c.epilogue));
     }},
    {"packed GEMM pointwise",
     [](const ConvCase &c) {
       return unless(!c.empty && pointwiseChannelsLast(c.g, c.x(), c.anchor.outputs[0]),
                     "not a channels-last 1x1 convolution");
     },
     [](const ConvCase &c, std::string &reason) {
       return makePointwiseConvolution(c.anchor, c.epilogue, c.options, geomText(c.g), reason);
     }},
    {"subsampled pointwise",
     [](const ConvCase &c) {
       if (!activeConfig().subsampledPointwise)
         return std::string("off (subsampled-pointwise=0)");
       return unless(!c.empty, "empty");
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
       return unless(c.sameShape && stemConvolution(c.g, c.anchor, c.out),
                     "not a 2-D convolution of a few input channels");
     },
     [](const ConvCase &c, std::string &) {
       return makeStemConvolution(stemGeometry(c.g), c.anchor, c.epilogue,
                                  constantParams(c.g, c.options), geomText(c.g));
     }},
    {"packed-GEMM Winograd",
     [](const ConvCase &c) {
       if (activeConfig().winogradGemm == 0)
         return std::string("off (winograd-gemm=0)");
       WinogradGeometry wg;
       return unless(!c.empty && winogradGemm(c.g, c.anchor, c.out, wg),
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
       return unless(c.sameShape && (c.out.isContiguous() || channelsLast(c.out)),
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
       return unless(dnnlType(c.x().dtype) && !c.empty && !hasNegativeStrides(c.anchor),
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
     [](const ConvCase &c) { return unless(!c.fused(), "takes no chain"); },
     [](const ConvCase &c, std::string &) {
       return makeDenseAdapted(c.anchor,
                               [&](const KernelDesc &) { return makeGeneric(c.g, c.x().dtype); });
     }},
};

/// The first implementation of kConvImplementations that takes `c` and
/// creates a kernel; the kernel records the ones passed over and why (the
/// profile prints them). Null when none does, with every reason.
std::unique_ptr<Kernel> selectConvolution(const ConvCase &c, std::string &reason) {
  std::string passed;
  for (const ConvImplementation &implementation : kConvImplementations) {
    std::string why = implementation.applies(c);
    if (why.empty()) {
      try {
        if (std::unique_ptr<Kernel> kernel = implementation.create(c, why)) {
          kernel->passedOver = std::move(passed);
          return kernel;
        }
        if (why.empty())
          why = "no kernel";
      } catch (const DescError &e) {
        why = e.message;
      } catch (const dnnl::error &e) {
        why = cat("no oneDNN implementation (", e.what(), ")");
      }
    }
    passed += cat(passed.empty() ? "" : "; ", implementation.name, ": ", why);
  }
  reason = cat(c.anchor.op, ": no convolution kernel takes it (", passed, ")");
  return nullptr;
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
    reason = "CGC_REFERENCE_DEPTHWISE_POOL=0";
    return nullptr;
  }
  const KernelDesc &depthwise = *block.depthwise;
  for (const KernelDesc *conv : {block.expand, block.depthwise, block.project})
    if (conv && conv->op != "cgc_op.convolution") {
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
    // CGC_REFERENCE_STEM_DEPTHWISE=0 keeps it a step of its own).
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
    reason = "CGC_REFERENCE_DEPTHWISE_POOL=0";
    return nullptr;
  }
  if (anchor.op != "cgc_op.convolution") {
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
  ops.push_back({"cgc_op.convolution", makeConv, true});
  ops.push_back({"cgc_op.conv_transpose", makeConv, true});
}

} // namespace cgc::ref
