//===- expand_depthwise.cpp - A 1x1 expansion fused into a depthwise ------===//
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
// EfficientNet-B0: see makeExpandDepthwise for when the pair fuses.
//
//===----------------------------------------------------------------------===//

#include "expand_depthwise.h"

#include "onednn.h"
#include "pointwise.h"
#include "sgemm.h"

#include <algorithm>

namespace cgc::ref {
namespace {

/// The ring's size per thread: a band and its halo in L2 next to the
/// depthwise kernel's working set.
constexpr int64_t kRingBytes = 192 << 10;
/// Below this size the expanded value stays in L2 between two separate
/// kernels, and the fused kernel's smaller GEMM calls only cost.
constexpr int64_t kMinExpandedBytes = 1 << 20;

class ExpandDepthwiseKernel final : public KernelBase {
public:
  ExpandDepthwiseKernel(const KernelDesc &expand, std::vector<SgemmOp> ops, size_t expandExtras,
                        const DepthwiseGeometry &g, std::unique_ptr<DepthwiseRows> rows,
                        size_t firstDepthwise, size_t depthwiseParams, bool depthwiseBias,
                        int64_t band, int64_t ring,
                        const std::string &expandWhat)
      : g_(g), inC_(expand.inputs[0]->shape[1]), midC_(g.channels),
        imageStride_(expand.inputs[0]->effectiveStrides()[0]), firstExtra_(expand.inputs.size()),
        firstDepthwise_(firstDepthwise), depthwiseBias_(depthwiseBias),
        firstDepthwiseExtra_(firstDepthwise + depthwiseParams), band_(band), ring_(ring),
        product_(expand, band * g.strideH * g.inW, std::move(ops), expandExtras, true),
        rows_(std::move(rows)) {
    macs_ = g.batch * g.inH * g.inW * inC_ * midC_ +
            g.batch * g.outH * g.outW * g.channels * g.kernelH * g.kernelW;
    expandWhat_ = expandWhat;
  }

  /// The expansion's chain when the GEMM's epilogue lacks an op of it:
  /// applied to each run of ring rows after the GEMM (`chain` rewritten to
  /// the ring's shape).
  void setRingEpilogue(Epilogue epilogue) { ringEpilogue_ = std::move(epilogue); }

  /// Also the global average pool of the result into output 1 (strides pN
  /// and pC along N and C).
  void setPool(int64_t pN, int64_t pC) {
    pool_ = true;
    pN_ = pN, pC_ = pC;
  }

  void describeAs(const std::string &expandSummary) {
    description_ = cat(expandWhat_, expandSummary, " (AVX-512 ", product_.gemm().tileRows(), "x",
                       product_.gemm().panelWidth(), " register tiles into a ring of ", ring_,
                       " rows per thread, never stored",
                       ringEpilogue_.empty() ? "" : ", chain per run of rows",
                       ", weights packed once) then ", rows_->describe(), ", bands of ", band_,
                       " rows", pool_ ? ", then its global average pool from each band" : "",
                       ")");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    Scratch unused; // constant weights: packed once per address
    std::vector<const float *> operands;
    const PackedSgemm::Args product = product_.bind(args, unused, operands);
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
                          piece(args, product, params, y, begin, end, done);
                        });
  }

private:
  /// Depthwise output rows [begin, end) into `y`, their expanded input rows
  /// made in this thread's ring.
  void piece(const KernelArgs &args, const PackedSgemm::Args &product, const float *params,
             float *y, int64_t begin, int64_t end, const DepthwiseRows::BandDone *done) const {
    const DepthwiseGeometry &g = g_;
    const int64_t rowFloats = g.inW * midC_;
    Scratch ring(size_t(ring_ * rowFloats) * sizeof(float));
    float *base = ring.as<float>();
    const float *x = static_cast<const float *>(args.inputs[0]);
    const void *const *expandExtra = args.inputs + firstExtra_;
    const void *const *extra = args.inputs + firstDepthwiseExtra_;
    PackedSgemm::Args a = product; // A and C per run of ring rows
    auto row = [&](int64_t, int64_t ih) -> const float * {
      return base + (ih % ring_) * rowFloats;
    };
    const DepthwiseInput in{row, midC_};
    const int64_t extent = g.dilationH * (g.kernelH - 1) + 1;
    // Rows [.., have) of image `image` are in the ring.
    int64_t image = -1, have = 0;
    for (int64_t b0 = begin, b1; b0 < end; b0 = b1) {
      const int64_t n = b0 / g.outH;
      b1 = std::min({end, b0 + band_, (n + 1) * g.outH});
      const int64_t oh0 = b0 - n * g.outH, oh1 = b1 - n * g.outH;
      // The expanded rows [lo, hi) the band reads.
      const int64_t lo = std::clamp<int64_t>(oh0 * g.strideH - g.padTop, 0, g.inH);
      const int64_t hi =
          std::clamp<int64_t>((oh1 - 1) * g.strideH - g.padTop + extent, 0, g.inH);
      if (n != image || have < lo)
        image = n, have = lo;
      for (int64_t p = have; p < hi;) {
        const int64_t slot = p % ring_, count = std::min(hi - p, ring_ - slot);
        a.a = x + n * imageStride_ + p * g.inW * inC_;
        a.c = base + slot * rowFloats;
        product_.gemm().run(a, 0, count * g.inW, 0, product_.gemm().panels());
        if (!ringEpilogue_.empty())
          ringEpilogue_.apply(reinterpret_cast<char *>(base), expandExtra, slot * rowFloats,
                              (slot + count) * rowFloats);
        p += count;
      }
      have = std::max(have, hi);
      rows_->computeRows(in, params, y, extra, b0, b1, done);
    }
  }

  DepthwiseGeometry g_;
  int64_t inC_, midC_, imageStride_;
  size_t firstExtra_;
  size_t firstDepthwise_;
  bool depthwiseBias_;
  size_t firstDepthwiseExtra_;
  int64_t band_, ring_;
  int64_t macs_ = 0;
  PointwiseProduct product_;
  std::unique_ptr<DepthwiseRows> rows_;
  Epilogue ringEpilogue_;
  bool pool_ = false;
  int64_t pN_ = 0, pC_ = 0; // the pool's strides along N and C
  std::string expandWhat_;
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
  static const bool enabled = kernelChoiceOn("CGC_REFERENCE_EXPAND_DEPTHWISE");
  return enabled;
}

} // namespace

std::unique_ptr<Kernel> makeExpandDepthwise(const KernelDesc &expand,
                                            const std::vector<KernelDesc> &expandChain,
                                            const DepthwiseGeometry &g,
                                            const KernelDesc &depthwise,
                                            const std::vector<KernelDesc> &depthwiseChain,
                                            const KernelOptions &options,
                                            const std::string &expandWhat,
                                            const std::string &depthwiseWhat,
                                            const KernelDesc *pool, std::string &reason) {
  if (!fusionEnabled()) {
    reason = "CGC_REFERENCE_EXPAND_DEPTHWISE=0";
    return nullptr;
  }
  reason = pointwiseMismatch(expand, expandChain);
  if (!reason.empty())
    return nullptr;
  if (!options.isConstant(1)) {
    reason = "the expansion's weights are not constant weights (packed once per address)";
    return nullptr;
  }
  const int64_t expandedBytes = g.batch * g.inH * g.inW * g.channels * int64_t(sizeof(float));
  if (expandedBytes < kMinExpandedBytes) {
    reason = cat("the expanded value (", expandedBytes, " bytes) stays in L2 unfused");
    return nullptr;
  }
  size_t expandExtras = 0;
  for (const KernelDesc &op : expandChain)
    expandExtras += op.inputs.size() - 1;
  const size_t firstDepthwise = expand.inputs.size() + expandExtras;
  const bool depthwiseBias = depthwise.inputs.size() > 2 && depthwise.inputs[2];
  const bool constantParams = options.isConstant(firstDepthwise) &&
                              (!depthwiseBias || options.isConstant(firstDepthwise + 1));

  // Bands of output rows whose expanded rows (with the kernel's reach) fill
  // about kRingBytes.
  const int64_t rowBytes = g.inW * g.channels * int64_t(sizeof(float));
  const int64_t extent = g.dilationH * (g.kernelH - 1) + 1;
  const int64_t budget = std::max(extent, kRingBytes / std::max<int64_t>(1, rowBytes));
  const int64_t band = std::clamp<int64_t>((budget - extent) / g.strideH + 1, 1, g.outH);
  const int64_t ring = (band - 1) * g.strideH + extent;

  PointwiseEpilogue ops = pointwiseEpilogue(expand, expandChain);
  // The GEMM computes runs of ring rows: an operand must not depend on the
  // row (only the bias and per-channel operands qualify).
  bool chainInGemm = ops.chainInGemm;
  for (const SgemmOp &op : ops.ops)
    chainInGemm = chainInGemm && (!op.binary() || op.rowStride == 0);
  Epilogue ringEpilogue;
  if (!chainInGemm) {
    ops.ops.resize(expand.inputs.size() > 2 && expand.inputs[2] ? 1 : 0); // the bias
    std::vector<KernelDesc> chain;
    if (!ringChain(expandChain, g.channels, ring * g.inW, chain, reason))
      return nullptr;
    const int64_t positions = ring * g.inW;
    try {
      ringEpilogue = Epilogue({1, g.channels, 1, positions}, CGC_DTYPE_FLOAT32, chain,
                              {positions * g.channels, 1, positions * g.channels, g.channels},
                              {0, 2, 3, 1});
    } catch (const DescError &e) {
      reason = e.message;
      return nullptr;
    }
  }
  std::unique_ptr<DepthwiseRows> rows;
  try {
    rows = makeChannelsLastDepthwiseRows(g, depthwise, depthwiseChain, constantParams,
                                         depthwiseWhat);
  } catch (const DescError &e) {
    reason = e.message;
    return nullptr;
  }
  auto kernel = std::make_unique<ExpandDepthwiseKernel>(expand, std::move(ops.ops), ops.extras, g,
                                                        std::move(rows), firstDepthwise,
                                                        depthwise.inputs.size() - 1, depthwiseBias,
                                                        band, ring, expandWhat);
  kernel->setRingEpilogue(std::move(ringEpilogue));
  if (pool) {
    const KernelOperand &out =
        depthwiseChain.empty() ? depthwise.outputs[0] : depthwiseChain.back().outputs.at(0);
    reason = wholePoolMismatch(*pool, out);
    if (!reason.empty())
      return nullptr;
    const std::vector<int64_t> ps = pool->outputs[0].effectiveStrides();
    kernel->setPool(ps[0], ps[1]);
  }
  const std::string summary = chainSummary(expandChain);
  kernel->describeAs(summary);
  return kernel;
}

} // namespace cgc::ref
