//===- pointwise.cpp - 1x1 convolutions as a packed GEMM ------------------===//

#include "pointwise.h"

#include "elementwise.h"
#include "onednn.h"
#include "sgemm.h"

#include <algorithm>

namespace cgc::cpu {
namespace {

/// Row and column strides of a binary operand (dims and strides over the
/// result's N, C, spatial...) on the result viewed as [positions, C]; false
/// if it varies along some positions dimensions but not all, or its channels
/// are not unit-stride.
bool operandStrides(const onednn::PlainOperand &y, const std::vector<int64_t> &outShape,
                    SgemmOp &op) {
  const size_t rank = outShape.size();
  if (y.dims.size() != rank)
    return false;
  if (y.dims[1] == 1)
    op.colStride = 0;
  else if (y.strides[1] == 1)
    op.colStride = 1;
  else
    return false;
  bool varies = false, broadcast = false;
  int64_t span = 1;
  std::vector<size_t> positions;
  for (size_t d = rank; d-- > 2;)
    positions.push_back(d);
  positions.push_back(0);
  for (size_t d : positions) {
    if (outShape[d] == 1)
      continue;
    if (y.dims[d] == 1) {
      broadcast = true;
      continue;
    }
    if (!varies) {
      op.rowStride = y.strides[d];
      varies = true;
    } else if (y.strides[d] != op.rowStride * span) {
      return false;
    }
    span *= y.dims[d];
  }
  if (!varies)
    op.rowStride = 0;
  return !(varies && broadcast);
}

class PointwiseConvKernel final : public KernelBase {
public:
  /// `ops` read the chain's `extras` operands (0..extras-1) and the bias
  /// (operand `extras`). `what` names the convolution and its chain.
  /// Constant weights are packed once per address, others on every run.
  PointwiseConvKernel(const KernelDesc &anchor, std::vector<SgemmOp> ops, size_t extras,
                      Epilogue epilogue, int inPlace, bool constantWeights,
                      const std::string &what)
      : positions_(numElements(anchor.outputs[0].shape) / anchor.outputs[0].shape[1]),
        outC_(anchor.outputs[0].shape[1]),
        rowUnit_(numElements(std::vector<int64_t>(anchor.outputs[0].shape.begin() + 3,
                                                  anchor.outputs[0].shape.end()))),
        firstExtra_(anchor.inputs.size()), inPlace_(inPlace),
        product_(anchor, positions_, std::move(ops), extras, constantWeights),
        epilogue_(std::move(epilogue)) {
    const PackedSgemm &gemm = product_.gemm();
    description_ = cat(what, " (AVX-512 ", gemm.tileText(), " over ", positions_, " positions",
                       epilogue_.empty() ? "" : ", epilogue per block of rows",
                       inPlace_ >= 0 ? ", residual may be in place" : "",
                       product_.constantWeights() ? ", weights packed once"
                                                  : ", weights packed each run",
                       ", split across the pool)");
  }

  int inPlaceInput() const override { return inPlace_; }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    Scratch packed;
    std::vector<const float *> operands;
    PackedSgemm::Args g = product_.bind(args, packed, operands);
    g.a = static_cast<const float *>(args.inputs[0]);
    g.c = static_cast<float *>(args.outputs[0]);
    const void *const *extra = args.inputs + firstExtra_;
    char *out = static_cast<char *>(args.outputs[0]);
    auto apply = [&](int64_t r0, int64_t r1) {
      epilogue_.apply(out, extra, r0 * outC_, r1 * outC_);
    };
    FunctionRef<void(int64_t, int64_t)> finish(apply);
    product_.gemm().runAll(g, positions_, pool, rowUnit_, epilogue_.empty() ? nullptr : &finish);
  }

private:
  int64_t positions_, outC_;
  int64_t rowUnit_; // positions per row of the plane
  size_t firstExtra_;
  int inPlace_;
  PointwiseProduct product_;
  Epilogue epilogue_;
};

} // namespace

PointwiseProduct::PointwiseProduct(const KernelDesc &anchor, int64_t rows,
                                   std::vector<SgemmOp> ops, size_t extras, bool constantWeights)
    : inC_(anchor.inputs[0]->shape[1]), outC_(anchor.outputs[0].shape[1]),
      hasBias_(anchor.inputs.size() > 2 && anchor.inputs[2]),
      firstExtra_(anchor.inputs.size()), extraCount_(extras),
      gemm_(rows, inC_, outC_, std::move(ops)), weights_(*anchor.inputs[1], constantWeights) {
  const std::vector<int64_t> ws = anchor.inputs[1]->effectiveStrides();
  wStrideN_ = ws[0], wStrideK_ = ws[1];
}

PackedSgemm::Args PointwiseProduct::bind(const KernelArgs &args, Scratch &scratch,
                                         std::vector<const float *> &operands) const {
  const float *w = static_cast<const float *>(args.inputs[1]);
  // Weights that may change between runs (a squeeze-excitation scale folded
  // into them, input_scale.h) are packed on every run: K x N floats next to
  // M x K x N multiply-adds.
  PackedSgemm::Args g;
  g.b = weights_.get(w, nullptr, gemm_.packedBytes(), scratch,
                     [&](float *p) { gemm_.pack(w, wStrideK_, wStrideN_, p); });
  operands.assign(extraCount_ + 1, nullptr);
  for (size_t i = 0; i < extraCount_; ++i)
    operands[i] = static_cast<const float *>(args.inputs[firstExtra_ + i]);
  if (hasBias_)
    operands[extraCount_] = static_cast<const float *>(args.inputs[2]);
  g.operands = operands.data();
  g.lda = inC_;
  g.ldc = outC_;
  return g;
}

std::string pointwiseMismatch(const KernelDesc &anchor, const std::vector<KernelDesc> &chain) {
  const KernelOperand &x = *anchor.inputs[0];
  const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
  if (!PackedSgemm::available())
    return "no AVX-512 (or CGC_CPU_PACKED_GEMM=0)";
  if (x.dtype != CGC_DTYPE_FLOAT32 || out.dtype != CGC_DTYPE_FLOAT32 || !channelsLast(x) ||
      !channelsLast(anchor.outputs[0]) || !channelsLast(out) ||
      out.shape != anchor.outputs[0].shape)
    return "not a float32 channels-last convolution";
  if (anchor.inputs.size() > 2 && anchor.inputs[2]) {
    const KernelOperand &b = *anchor.inputs[2];
    if (b.dtype != CGC_DTYPE_FLOAT32 || (b.shape.at(0) != 1 && b.effectiveStrides()[0] != 1))
      return "the bias is not a dense float32 vector";
  }
  return "";
}

PointwiseEpilogue pointwiseEpilogue(const KernelDesc &anchor,
                                    const std::vector<KernelDesc> &chain) {
  const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
  const int64_t outC = out.shape[1];
  PointwiseEpilogue result;
  result.extras = chainExtraOperands(chain);
  if (anchor.inputs.size() > 2 && anchor.inputs[2]) {
    SgemmOp bias{SgemmOp::Kind::Add};
    bias.operand = int(result.extras);
    bias.colStride = outC == 1 ? 0 : 1;
    result.ops.push_back(bias);
  }
  onednn::PostOps post;
  std::string unused;
  std::vector<SgemmOp> chainOps;
  bool inGemm = chain.empty() ||
                (onednn::buildPostOps(chain, out.shape, out.dtype, post, unused) &&
                 onednn::sgemmOps(post.ops, chainOps));
  int inPlace = -1;
  for (size_t i = 0; inGemm && i < chainOps.size(); ++i) {
    SgemmOp &op = chainOps[i];
    if (!op.binary())
      continue;
    inGemm = operandStrides(onednn::plainOperand(post.extraDescs[size_t(op.operand)]), out.shape,
                            op);
    // A residual laid out like the result may be the result's own bytes:
    // each element is read before its tile is stored.
    if (inGemm && inPlace < 0 && op.kind == SgemmOp::Kind::Add && op.rowStride == outC &&
        op.colStride == 1)
      inPlace = int(anchor.inputs.size()) + op.operand;
  }
  result.chainInGemm = inGemm;
  if (inGemm) {
    result.ops.insert(result.ops.end(), chainOps.begin(), chainOps.end());
    result.inPlace = inPlace;
  }
  return result;
}

std::unique_ptr<Kernel> makePointwiseConvolution(const KernelDesc &anchor,
                                                 const std::vector<KernelDesc> &chain,
                                                 const KernelOptions &options,
                                                 const std::string &what, std::string &reason) {
  reason = pointwiseMismatch(anchor, chain);
  if (!reason.empty())
    return nullptr;
  const KernelOperand &out = chain.empty() ? anchor.outputs[0] : chain.back().outputs.at(0);
  PointwiseEpilogue ops = pointwiseEpilogue(anchor, chain);
  Epilogue epilogue;
  if (!ops.chainInGemm) {
    std::vector<size_t> order(out.shape.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::rotate(order.begin() + 1, order.begin() + 2, order.end());
    try {
      epilogue = Epilogue(out.shape, out.dtype, chain, out.effectiveStrides(), order);
    } catch (const DescError &e) {
      reason = e.message;
      return nullptr;
    }
  }
  const std::string summary = chainSummary(chain);
  return std::make_unique<PointwiseConvKernel>(anchor, std::move(ops.ops), ops.extras,
                                               std::move(epilogue), ops.inPlace,
                                               options.isConstant(1), what + summary);
}

} // namespace cgc::cpu
