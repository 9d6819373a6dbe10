//===- expand_depthwise.cpp - A depthwise convolution and its neighbours --===//
//
// (The expansion, or the stem, before a depthwise convolution and the
// projection after it: expand_depthwise.h.)
//
// Work: the depthwise convolution's output rows split into one contiguous
// piece per thread (DepthwiseRows::forEachPiece, as the unfused kernel
// splits them). A piece runs in bands of output rows; before a band, the
// expanded rows it reads that are not yet in the thread's ring are computed
// into it: row ih of the expanded value lives in slot ih % ringRows, each
// run of slots without a wrap is one call of the packed GEMM over those
// rows' positions (the bias and a clip/relu chain in the GEMM's epilogue,
// other chains such as swish by our Epilogue right after, while the rows are
// in L1/L2). The band's depthwise rows then read their input rows from the
// ring.
//
// The ring holds about kRingBytes: the rows of a band plus those the kernel
// reaches above and below it, which the next band reuses. Measured on this
// machine (AMD EPYC Zen 5, 1 MB L2 per core) in MobileNetV2 and
// EfficientNet-B0: see makeDepthwiseBlock for when the parts fuse.
//
//===----------------------------------------------------------------------===//

#include "expand_depthwise.h"

#include "onednn.h"
#include "pointwise.h"
#include "sgemm.h"
#include "stem.h"

#include <algorithm>

namespace cgc::cpu {
namespace {

/// The ring's size per thread: a band and its halo in L2 next to the
/// depthwise kernel's working set.
constexpr int64_t kRingBytes = 192 << 10;
/// Below this size the expanded value stays in L2 between two separate
/// kernels, and the fused kernel's smaller GEMM calls only cost.
constexpr int64_t kMinExpandedBytes = 1 << 20;
/// The depthwise result a projection reads per GEMM call: rows that the
/// depthwise kernel has just stored to L1/L2.
constexpr int64_t kBlockBytes = 64 << 10;
/// Below this size the depthwise result stays in L2 between two separate
/// kernels.
constexpr int64_t kMinDepthwiseResultBytes = 1 << 20;

/// The projection of a depthwise convolution's result: a 1x1 convolution
/// (packed GEMM) run on each block of depthwise output rows while they are
/// in L1/L2, its chain (bias, residual add) in the GEMM's epilogue.
struct Projection {
  /// The convolution's inputs after the first (weights, bias), then its
  /// chain's extra operands, from KernelArgs input `firstInput` on; the
  /// convolution has `inputs` inputs (an absent bias is a slot too).
  size_t firstInput = 0, inputs = 0, extras = 0;
  int64_t outC = 0;
  /// Depthwise output rows per GEMM call.
  int64_t rows = 0;
  /// Per GEMM operand: its elements' step from one position to the next
  /// (0 for one value per channel, such as the bias).
  std::vector<int64_t> operandRowStrides;
};

/// An inverted residual block's convolutions, or the part of it that fuses:
/// [a 1x1 expansion, or a CNN's stem, and its chain, computed into a ring
/// of rows ->] the depthwise convolution and its chain [-> a 1x1
/// projection and its chain, computed from each block of depthwise rows].
/// Neither the ring's rows nor the depthwise result is stored when the
/// kernel makes or consumes it.
class DepthwiseBlockKernel final : public KernelBase {
public:
  DepthwiseBlockKernel(const DepthwiseGeometry &g, const KernelOperand &x,
                       std::unique_ptr<DepthwiseRows> rows, size_t firstDepthwise,
                       size_t depthwiseParams, bool depthwiseBias, int64_t band)
      : g_(g), inC_(x.shape[1]), xStrides_(x.effectiveStrides()),
        firstDepthwise_(firstDepthwise), depthwiseBias_(depthwiseBias),
        firstDepthwiseExtra_(firstDepthwise + depthwiseParams), band_(band),
        rows_(std::move(rows)) {
    macs_ = g.batch * g.outH * g.outW * g.channels * g.kernelH * g.kernelW;
  }

  /// The expansion (input 0 times its weights, input 1) into a ring of
  /// `ring` rows; `ops` read the chain's `extras` operands, then the bias.
  void setExpansion(const KernelDesc &expand, std::vector<SgemmOp> ops, size_t extras,
                    int64_t ring, Epilogue ringEpilogue, std::string what) {
    expand_.emplace(expand, band_ * g_.strideH * g_.inW, std::move(ops), extras, true);
    firstExpandExtra_ = expand.inputs.size();
    ring_ = ring;
    ringEpilogue_ = std::move(ringEpilogue);
    expandWhat_ = std::move(what);
    macs_ += g_.batch * g_.inH * g_.inW * inC_ * g_.channels;
  }

  /// A stem convolution (a few input channels: the image) with the leading
  /// clamp of its chain, computed row by row into a ring of `ring` rows;
  /// its chain's other ops run as `ringEpilogue`.
  void setStem(const KernelDesc &stem, std::unique_ptr<StemRows> rows, int64_t ring,
               Epilogue ringEpilogue) {
    stem_ = std::move(rows);
    stemBias_ = stem.inputs.size() > 2 && stem.inputs[2];
    firstExpandExtra_ = stem.inputs.size();
    ring_ = ring;
    ringEpilogue_ = std::move(ringEpilogue);
    const std::vector<int64_t> &w = stem.inputs[1]->shape;
    macs_ += g_.batch * g_.inH * g_.inW * g_.channels * w[1] * w[2] * w[3];
  }

  /// The projection `project` of the depthwise result (inputs as
  /// `projection` says) into output 0.
  void setProjection(const KernelDesc &project, std::vector<SgemmOp> ops, Projection projection,
                     bool constantWeights, std::string what) {
    projection_ = std::move(projection);
    project_.emplace(project, projection_.rows * g_.outW, std::move(ops), projection_.extras,
                     constantWeights);
    projectWhat_ = std::move(what);
    macs_ += g_.batch * g_.outH * g_.outW * g_.channels * projection_.outC;
  }

  /// Also the global average pool of the result into output 1 (strides pN
  /// and pC along N and C). Not with a projection.
  void setPool(int64_t pN, int64_t pC) {
    pool_ = true;
    pN_ = pN, pC_ = pC;
  }

  bool depthwiseChainInRegisters() const { return rows_->chainInRegisters(); }

  void describeAs(const std::string &expandSummary, const std::string &projectSummary) {
    std::string text;
    const std::string ring =
        cat(" into a ring of ", ring_, " rows per thread, never stored",
            ringEpilogue_.empty() ? "" : ", chain per run of rows");
    if (expand_)
      text = cat(expandWhat_, expandSummary, " (AVX-512 ", expand_->gemm().tileText(), ring,
                 ", weights packed once) then ");
    else if (stem_)
      text = cat(stem_->describe(), ",", ring, ") then ");
    text += cat(rows_->describe(), ", bands of ", band_, " rows",
                pool_ ? ", then its global average pool from each band" : "", ")");
    if (project_) {
      const PackedSgemm &p = project_->gemm();
      text += cat(" then ", projectWhat_, projectSummary, " (AVX-512 ", p.tileText(),
                  " on each ", projection_.rows,
                  " depthwise rows, which are never stored, weights packed ",
                  project_->constantWeights() ? "once" : "each run", ")");
    }
    description_ = text;
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    // Constant expansion weights: packed once per address.
    Scratch unusedExpand, projectPacked;
    std::vector<const float *> expandOperands, projectOperands;
    PackedSgemm::Args expandArgs, projectArgs;
    if (expand_)
      expandArgs = expand_->bind(args, unusedExpand, expandOperands);
    std::vector<const void *> projectInputs;
    if (project_) {
      // The projection's inputs as its own kernel would see them (x is the
      // depthwise rows, set per call).
      const Projection &p = projection_;
      projectInputs.assign(p.inputs + p.extras, nullptr);
      for (size_t i = 1; i < projectInputs.size(); ++i)
        projectInputs[i] = args.inputs[p.firstInput + i - 1];
      KernelArgs own;
      own.inputs = projectInputs.data();
      projectArgs = project_->bind(own, projectPacked, projectOperands);
      projectArgs.c = static_cast<float *>(args.outputs[0]);
    }
    Scratch stemScratch;
    const float *stemParams =
        stem_ ? stem_->prepare(static_cast<const float *>(args.inputs[1]),
                               stemBias_ ? static_cast<const float *>(args.inputs[2]) : nullptr,
                               stemScratch)
              : nullptr;
    Scratch paramScratch;
    const float *params = rows_->prepare(
        static_cast<const float *>(args.inputs[firstDepthwise_]),
        depthwiseBias_ ? static_cast<const float *>(args.inputs[firstDepthwise_ + 1]) : nullptr,
        paramScratch);
    const void *const *extra = args.inputs + firstDepthwiseExtra_;
    const DepthwiseRows::PoolOutput means{
        pool_ ? static_cast<float *>(args.outputs[1]) : nullptr, pN_, pC_};
    rows_->forEachPiece(pool, static_cast<float *>(args.outputs[0]), extra, macs_,
                        pool_ ? &means : nullptr,
                        [&](int64_t begin, int64_t end, float *y,
                            const DepthwiseRows::BandDone *done) {
                          piece(args, expandArgs, stemParams, projectArgs, params, y, begin,
                                end, done);
                        });
  }

private:
  /// Depthwise output rows [begin, end): their input rows made in this
  /// thread's ring (with an expansion) or read in place, their result into
  /// `y` or, with a projection, into a block of rows that the projection
  /// reads.
  void piece(const KernelArgs &args, const PackedSgemm::Args &expandArgs,
             const float *stemParams, const PackedSgemm::Args &projectArgs, const float *params,
             float *y, int64_t begin, int64_t end, const DepthwiseRows::BandDone *done) const {
    const DepthwiseGeometry &g = g_;
    const int64_t rowFloats = g.inW * g.channels;
    Scratch ring(size_t(ring_ * rowFloats) * sizeof(float));
    float *base = ring.as<float>();
    const float *x = static_cast<const float *>(args.inputs[0]);
    const void *const *expandExtra = args.inputs + firstExpandExtra_;
    const void *const *extra = args.inputs + firstDepthwiseExtra_;
    PackedSgemm::Args a = expandArgs; // A and C per run of ring rows
    auto ringRow = [&](int64_t, int64_t ih) -> const float * {
      return base + (ih % ring_) * rowFloats;
    };
    auto inputRow = [&](int64_t n, int64_t ih) -> const float * {
      return x + n * xStrides_[0] + ih * xStrides_[2];
    };
    const DepthwiseInput in = ring_ ? DepthwiseInput{ringRow, g.channels}
                                    : DepthwiseInput{inputRow, xStrides_[3]};

    // With a projection: the depthwise rows [held, have) in `block`.
    const int64_t outRowFloats = g.outW * g.channels;
    Scratch block(project_ ? size_t((projection_.rows + band_) * outRowFloats) * sizeof(float)
                           : 0);
    int64_t held = begin, have = begin;
    // The projection's operands moved to the block's first position.
    std::vector<const float *> operands(projection_.operandRowStrides.size());
    auto project = [&]() {
      if (have == held)
        return;
      const Projection &p = projection_;
      const int64_t position = held * g.outW;
      PackedSgemm::Args c = projectArgs;
      for (size_t i = 0; i < operands.size(); ++i)
        operands[i] = projectArgs.operands[i]
                          ? projectArgs.operands[i] + position * p.operandRowStrides[i]
                          : nullptr;
      c.operands = operands.data();
      c.a = block.as<float>();
      c.c = projectArgs.c + position * p.outC;
      project_->gemm().run(c, 0, (have - held) * g.outW, 0, project_->gemm().panels());
      held = have;
    };

    // Expanded rows [.., made) of image `image` are in the ring.
    int64_t image = -1, made = 0;
    const int64_t extent = g.dilationH * (g.kernelH - 1) + 1;
    for (int64_t b0 = begin, b1; b0 < end; b0 = b1) {
      const int64_t n = b0 / g.outH;
      b1 = std::min({end, b0 + band_, (n + 1) * g.outH});
      if (ring_) {
        const int64_t oh0 = b0 - n * g.outH, oh1 = b1 - n * g.outH;
        // The expanded rows [lo, hi) the band reads.
        const int64_t lo = std::clamp<int64_t>(oh0 * g.strideH - g.padTop, 0, g.inH);
        const int64_t hi =
            std::clamp<int64_t>((oh1 - 1) * g.strideH - g.padTop + extent, 0, g.inH);
        if (n != image || made < lo)
          image = n, made = lo;
        for (int64_t p = made; p < hi;) {
          const int64_t slot = p % ring_, count = std::min(hi - p, ring_ - slot);
          if (expand_) {
            a.a = x + n * xStrides_[0] + p * g.inW * inC_;
            a.c = base + slot * rowFloats;
            expand_->gemm().run(a, 0, count * g.inW, 0, expand_->gemm().panels());
          } else {
            for (int64_t q = 0; q < count; ++q)
              stem_->computeRow(x, stemParams, base + (slot + q) * rowFloats,
                                n * g.inH + p + q);
          }
          if (!ringEpilogue_.empty())
            ringEpilogue_.apply(reinterpret_cast<char *>(base), expandExtra, slot * rowFloats,
                                (slot + count) * rowFloats);
          p += count;
        }
        made = std::max(made, hi);
      }
      if (!project_) {
        rows_->computeRows(in, params, y, extra, b0, b1, done);
        continue;
      }
      rows_->computeRows(in, params, block.as<float>(), extra, b0, b1, nullptr, held);
      have = b1;
      if (have - held >= projection_.rows)
        project();
    }
    project();
  }

  DepthwiseGeometry g_;
  int64_t inC_;
  std::vector<int64_t> xStrides_; // input 0's (N, C, H, W)
  size_t firstDepthwise_;
  bool depthwiseBias_;
  size_t firstDepthwiseExtra_;
  int64_t band_, ring_ = 0;
  int64_t macs_ = 0;
  std::unique_ptr<DepthwiseRows> rows_;
  std::optional<PointwiseProduct> expand_;
  std::unique_ptr<StemRows> stem_; // instead of an expansion
  bool stemBias_ = false;
  size_t firstExpandExtra_ = 0;
  Epilogue ringEpilogue_;
  std::string expandWhat_;
  std::optional<PointwiseProduct> project_;
  Projection projection_;
  std::string projectWhat_;
  bool pool_ = false;
  int64_t pN_ = 0, pC_ = 0; // the pool's strides along N and C
};

/// `chain` (running value: the expanded value) rewritten to run on `ring`
/// rows of `width` positions of `channels` (shape [1, C, 1, rows * width]);
/// empty with `reason` if an extra operand varies across positions (it
/// would need the positions' place in the whole value).
bool ringChain(const std::vector<KernelDesc> &chain, int64_t channels, int64_t positions,
               std::vector<KernelDesc> &rewritten, std::string &reason) {
  const std::vector<int64_t> shape = {1, channels, 1, positions};
  for (KernelDesc op : chain) {
    for (size_t i = 1; i < op.inputs.size(); ++i) {
      const KernelOperand &e = *op.inputs[i];
      for (size_t d = 0; d < e.shape.size(); ++d) {
        const size_t dim = d + 4 - std::min<size_t>(4, e.shape.size());
        if (e.shape.size() > 4 || (dim != 1 && e.shape[d] != 1)) {
          reason = cat(op.op, ": operand ", i, " ", shapeStr(e.shape),
                       " varies across positions");
          return false;
        }
      }
    }
    op.inputs[0]->shape = shape;
    op.inputs[0]->strides.clear();
    op.outputs[0].shape = shape;
    op.outputs[0].strides.clear();
    rewritten.push_back(std::move(op));
  }
  return true;
}

bool fusionEnabled() {
  return activeConfig().expandDepthwise;
}

bool projectionEnabled() {
  return activeConfig().depthwiseProject;
}

} // namespace

std::unique_ptr<Kernel> makeDepthwiseBlock(const DepthwiseBlock &block,
                                           const DepthwiseGeometry &g,
                                           const KernelOptions &options,
                                           const DepthwiseBlockNames &names,
                                           const KernelDesc *pool, std::unique_ptr<StemRows> stem,
                                           std::string &reason) {
  const KernelDesc &depthwise = *block.depthwise;
  const KernelDesc *expand = block.expand, *project = block.project;
  if (expand && !fusionEnabled()) {
    reason = "CGC_CPU_EXPAND_DEPTHWISE=0";
    return nullptr;
  }
  if (project && !projectionEnabled()) {
    reason = "CGC_CPU_DEPTHWISE_PROJECT=0";
    return nullptr;
  }
  if (!expand && !project) {
    reason = "neither an expansion nor a projection to fuse with the depthwise convolution";
    return nullptr;
  }
  if (project && pool) {
    reason = "a projection and a pool of the depthwise result do not fuse together";
    return nullptr;
  }
  const size_t expandExtras = chainExtraOperands(block.expandChain);
  if (expand) {
    if (!stem) {
      reason = pointwiseMismatch(*expand, block.expandChain);
      if (!reason.empty())
        return nullptr;
    }
    if (!options.isConstant(1)) {
      reason = "the expansion's weights are not constant weights (packed once per address)";
      return nullptr;
    }
    const int64_t expandedBytes = g.batch * g.inH * g.inW * g.channels * int64_t(sizeof(float));
    if (expandedBytes < kMinExpandedBytes) {
      reason = cat("the expanded value (", expandedBytes, " bytes) stays in L2 unfused");
      return nullptr;
    }
  }
  // KernelArgs order: [the expansion's inputs and its chain's extras,] the
  // depthwise convolution's inputs (after the first with an expansion), its
  // chain's extras[, the projection's inputs after the first and its
  // chain's extras].
  const size_t firstDepthwise = expand ? expand->inputs.size() + expandExtras : 0;
  const size_t depthwiseParams = depthwise.inputs.size() - 1;
  const size_t firstWeights = expand ? firstDepthwise : 1;
  const bool depthwiseBias = depthwise.inputs.size() > 2 && depthwise.inputs[2];
  const bool constantParams = options.isConstant(firstWeights) &&
                              (!depthwiseBias || options.isConstant(firstWeights + 1));
  const size_t depthwiseExtras = chainExtraOperands(block.depthwiseChain);
  const KernelOperand &result = block.depthwiseChain.empty()
                                    ? depthwise.outputs[0]
                                    : block.depthwiseChain.back().outputs.at(0);

  std::unique_ptr<DepthwiseRows> rows;
  try {
    rows = makeChannelsLastDepthwiseRows(g, depthwise, block.depthwiseChain, constantParams,
                                         names.depthwise);
  } catch (const DescError &e) {
    reason = e.message;
    return nullptr;
  }

  // Output rows per band. With an expansion: bands whose expanded rows
  // (with the kernel's reach) fill about kRingBytes. Without: blocks of
  // about kBlockBytes of depthwise result for the projection.
  const int64_t extent = g.dilationH * (g.kernelH - 1) + 1;
  const int64_t outRowBytes = g.outW * g.channels * int64_t(sizeof(float));
  const int64_t blockRows =
      std::clamp<int64_t>(kBlockBytes / std::max<int64_t>(1, outRowBytes), 1, g.outH);
  int64_t band = blockRows, ring = 0;
  if (expand) {
    const int64_t rowBytes = g.inW * g.channels * int64_t(sizeof(float));
    const int64_t budget = std::max(extent, kRingBytes / std::max<int64_t>(1, rowBytes));
    band = std::clamp<int64_t>((budget - extent) / g.strideH + 1, 1, g.outH);
    ring = (band - 1) * g.strideH + extent;
  }
  auto kernel = std::make_unique<DepthwiseBlockKernel>(
      g, expand ? *expand->inputs[0] : *depthwise.inputs[0], std::move(rows), firstWeights,
      depthwiseParams, depthwiseBias, band);

  // The chain of the ring's producer that runs per run of ring rows,
  // rewritten to their shape.
  auto ringEpilogue = [&](const std::vector<KernelDesc> &chain, Epilogue &epilogue) {
    std::vector<KernelDesc> rewritten;
    if (!ringChain(chain, g.channels, ring * g.inW, rewritten, reason))
      return false;
    const int64_t positions = ring * g.inW;
    try {
      epilogue = Epilogue({1, g.channels, 1, positions}, CGC_DTYPE_FLOAT32, rewritten,
                          {positions * g.channels, 1, positions * g.channels, g.channels},
                          {0, 2, 3, 1});
    } catch (const DescError &e) {
      reason = e.message;
      return false;
    }
    return true;
  };
  if (stem) {
    const std::vector<KernelDesc> rest(block.expandChain.begin() + int64_t(stem->clampOps()),
                                       block.expandChain.end());
    Epilogue epilogue;
    if (!rest.empty() && !ringEpilogue(rest, epilogue))
      return nullptr;
    kernel->setStem(*expand, std::move(stem), ring, std::move(epilogue));
  } else if (expand) {
    PointwiseEpilogue ops = pointwiseEpilogue(*expand, block.expandChain);
    // The GEMM computes runs of ring rows: an operand must not depend on
    // the row (only the bias and per-channel operands qualify).
    bool chainInGemm = ops.chainInGemm;
    for (const SgemmOp &op : ops.ops)
      chainInGemm = chainInGemm && (!op.binary() || op.rowStride == 0);
    Epilogue epilogue;
    if (!chainInGemm) {
      ops.ops.resize(expand->inputs.size() > 2 && expand->inputs[2] ? 1 : 0); // the bias
      if (!ringEpilogue(block.expandChain, epilogue))
        return nullptr;
    }
    kernel->setExpansion(*expand, std::move(ops.ops), ops.extras, ring, std::move(epilogue),
                         names.expand);
  }

  if (project) {
    const int64_t resultBytes = g.batch * g.outH * outRowBytes;
    if (resultBytes < kMinDepthwiseResultBytes) {
      reason = cat("the depthwise result (", resultBytes, " bytes) stays in L2 unfused");
      return nullptr;
    }
    if (!project->inputs[0] || !(*project->inputs[0] == result)) {
      reason = cat(project->op, ": its input is not the depthwise result");
      return nullptr;
    }
    if (!channelsLast(result) || !kernel->depthwiseChainInRegisters()) {
      reason = "the depthwise chain is more than a clip or relu before the store, or its result "
               "is not dense channels-last";
      return nullptr;
    }
    reason = pointwiseMismatch(*project, block.projectChain);
    if (!reason.empty())
      return nullptr;
    PointwiseEpilogue ops = pointwiseEpilogue(*project, block.projectChain);
    if (!ops.chainInGemm) {
      reason = cat(project->op, ": its chain", chainSummary(block.projectChain),
                   " is not all in the packed GEMM's epilogue");
      return nullptr;
    }
    Projection p;
    p.firstInput = firstWeights + depthwiseParams + depthwiseExtras;
    p.inputs = project->inputs.size();
    p.extras = ops.extras;
    p.outC = project->outputs[0].shape[1];
    // Whole bands of at least blockRows rows.
    p.rows = (std::max(blockRows, band) + band - 1) / band * band;
    p.operandRowStrides.assign(ops.extras + 1, 0);
    for (const SgemmOp &op : ops.ops)
      if (op.binary())
        p.operandRowStrides[size_t(op.operand)] = op.rowStride;
    const bool constantWeights = options.isConstant(p.firstInput);
    kernel->setProjection(*project, std::move(ops.ops), std::move(p), constantWeights,
                          names.project);
  }

  if (pool) {
    reason = wholePoolMismatch(*pool, result);
    if (!reason.empty())
      return nullptr;
    const std::vector<int64_t> ps = pool->outputs[0].effectiveStrides();
    kernel->setPool(ps[0], ps[1]);
  }
  kernel->describeAs(chainSummary(block.expandChain), chainSummary(block.projectChain));
  return kernel;
}

} // namespace cgc::cpu
