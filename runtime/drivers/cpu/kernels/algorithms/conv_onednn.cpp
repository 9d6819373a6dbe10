//===- conv_onednn.cpp - Convolutions on oneDNN ---------------------------===//
//
// float32/bfloat16 convolutions and deconvolutions on oneDNN's primitives,
// their work split across the ThreadPool (DnnlConvKernel): channels-last
// operands go to oneDNN as they are; every other convolution reorders its
// input into the layout oneDNN picks (blocked nChw16c on AVX-512), runs the
// blocked kernel and reorders the result back, which measured 1.3-1.7x
// faster than the plain-layout kernel for 3x3 convolutions on this machine
// even with both reorders. Weights are reordered into the primitive's
// layout once per address when the caller marks them constant
// (KernelOptions), else on every run. Fused epilogues become oneDNN
// post-ops (eltwise; binary ops whose second operand may be a per-channel
// vector or a full residual in its own layout), or run after the
// convolution as our own epilogue where they have no post-op form.
// conv.cpp decides when this runs.
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "gemm.h"
#include "prepared.h"
#include "math.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

namespace cgc::cpu::conv {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// True if `rows` split into `bands` row bands leaves the longest band more
/// than 10% over an even share (7 rows in 2: 4 and 3).
bool unevenBands(int64_t rows, int64_t bands) {
  return (rows + bands - 1) / bands * bands * 10 > rows * 11;
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
/// against 73 (step times, CGC_CPU_PROFILE).
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
/// True for the convolutions the CPU driver runs with Winograd's
/// minimal filtering when oneDNN has a kernel for them: float32, 2-D, 3x3,
/// stride 1, no dilation, ungrouped, with enough channels to be compute
/// bound (oneDNN's F(2x2,3x3) / F(4x4,3x3) kernels measured 1.3-2.3x faster
/// than its direct kernel for ResNet-50's 3x3 layers on this machine, with a
/// max |difference| of 2e-6 of the result's scale). CGC_CPU_WINOGRAD=0
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
        logistic = logistic || e.kind() == OpKind::Swish || e.kind() == OpKind::Sigmoid;
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
    std::shared_ptr<AlignedBuffer> data; // null for a block from a database
    const void *ready;
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
  /// from a dense temporary alike. CGC_CPU_WINOGRAD_CHANNEL_BLOCKS=0
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
      // CGC_CPU_PROFILE).
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
        return p.ready;
    const size_t bytes = pc.pd.weights_desc().get_size();
    prepared::Context *context = nullptr;
    std::string key;
    if (const void *mapped = prepared::lookup(site_, onednn::layoutText(pc.pd.weights_desc()), src,
                                              nullptr, bytes, context, key)) {
      prepared_.push_back({src, pc.pd.weights_desc(), nullptr, mapped});
      return mapped;
    }
    auto data = std::make_shared<AlignedBuffer>(bytes);
    reorder(data->data());
    prepared::done(context, key, data->data(), bytes);
    prepared_.push_back({src, pc.pd.weights_desc(), data, data->data()});
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
  int site_ = prepared::nextSite(); // of prepared_ (prepared.h)
  mutable std::vector<Prepared> prepared_;
  mutable onednn::SourcePageOut weightsPageOut_;
};

} // namespace

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
  return makeSubsampled(std::move(gather), size_t(numElements(sub.shape)) * elem,
                        std::move(inner), numInputs);
}

} // namespace cgc::cpu::conv
