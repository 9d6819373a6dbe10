//===- conv_patches.cpp - Convolutions whose windows tile the input ------===//
//
// A 2-D convolution whose stride equals its kernel, with no padding,
// dilation or groups (a vision transformer's patch embedding, ConvNeXt's
// stem and downsampling layers) reads every input element once: output
// position p is the product of its patch (C x KH x KW values) and the
// weights. Gathered into a [positions, C*KH*KW] matrix X, the convolution is
// one product:
//
//   channels-last result [positions, O] = X . W^T   (W^T packed once)
//   NCHW result          [O, positions] = W . X^T   (X packed each run)
//
// on the packed GEMM (sgemm.h), the bias in its epilogue. oneDNN ran these
// at 22-86 GFLOP/s, reordering NCHW activations (ConvNeXt-T's 3->96 4x4 s4
// 1.32 ms, its three 2x2 s2 downsamplings 1.35-1.59 ms each; ViT-B/32's
// 3->768 32x32 s32 3.3 ms).
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "sgemm.h"

#include <algorithm>

namespace cgc::cpu::conv {
namespace {

class PatchConvKernel final : public KernelBase {
public:
  PatchConvKernel(const ConvGeom &g, const KernelOperand &x, const KernelOperand &w,
                  const KernelOperand &y, bool constantWeights)
      : g_(g), k_(g.inC * g.kernel[0] * g.kernel[1]), positions_(g.out[0] * g.out[1]),
        channelsLast_(!y.isContiguous()), ws_(w.effectiveStrides()), gather_(patchCopy(g, x)),
        gemm_(channelsLast_ ? g.batch * positions_ : g.outC, k_,
              channelsLast_ ? g.outC : positions_, ops(g, !y.isContiguous())),
        weights_(w, constantWeights) {
    description_ = cat(geomText(g), " (patches gathered, one product of ",
                       channelsLast_ ? cat(g.batch * positions_, "x", k_, "x", g.outC)
                                     : cat(g.outC, "x", k_, "x", positions_),
                       channelsLast_ ? ", channels-last" : ", NCHW", " on the packed GEMM, AVX-512 ",
                       gemm_.tileText(),
                       channelsLast_ ? (weights_.constant() ? ", weights packed once"
                                                            : ", weights packed each run")
                                     : ", patches packed each run",
                       ", split across the pool)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    const float *w = static_cast<const float *>(args.inputs[1]);
    const float *bias = g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *y = static_cast<float *>(args.outputs[0]);
    // The patches, [N * positions, K] with K in the weights' (c, i, j) order.
    Scratch patchScratch(size_t(gather_.bytes()));
    float *patches = patchScratch.as<float>();
    gather_.run(pool, patches, x);
    const float *operands[1] = {bias};
    PackedSgemm::Args ga;
    ga.operands = operands;
    if (channelsLast_) {
      Scratch weightScratch;
      ga.a = patches;
      ga.lda = k_;
      ga.b = weights_.get(w, nullptr, gemm_.packedBytes(), weightScratch,
                          [&](float *p) { packWeights(w, p); });
      ga.c = y;
      ga.ldc = g_.outC;
      gemm_.runAll(ga, g_.batch * positions_, pool);
      return;
    }
    // NCHW: per image, W (read in place when dense, else gathered once per
    // run) times the patches, packed as B.
    Scratch dense;
    const float *a = w;
    if (!denseWeights()) {
      dense.allocate(size_t(g_.outC * k_) * sizeof(float));
      float *d = dense.as<float>();
      for (int64_t o = 0; o < g_.outC; ++o)
        for (int64_t k = 0; k < k_; ++k)
          d[o * k_ + k] = w[weightOffset(o, k)];
      a = d;
    }
    Scratch packed(gemm_.packedBytes());
    for (int64_t n = 0; n < g_.batch; ++n) {
      gemm_.pack(patches + n * positions_ * k_, 1, k_, packed.as<float>());
      ga.a = a;
      ga.lda = k_;
      ga.b = packed.as<float>();
      ga.c = y + n * g_.outC * positions_;
      ga.ldc = positions_;
      gemm_.runAll(ga, g_.outC, pool);
    }
  }

private:
  /// The bias in the epilogue: one value per column of a channels-last
  /// result, per row of an NCHW one.
  static std::vector<SgemmOp> ops(const ConvGeom &g, bool channelsLast) {
    if (!g.hasBias)
      return {};
    SgemmOp bias{SgemmOp::Kind::Add};
    bias.operand = 0;
    bias.rowStride = channelsLast ? 0 : 1;
    bias.colStride = channelsLast ? 1 : 0;
    return {bias};
  }

  bool denseWeights() const {
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1];
    return ws_[3] == 1 && ws_[2] == kw && ws_[1] == kh * kw && ws_[0] == k_;
  }

  int64_t weightOffset(int64_t o, int64_t k) const {
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1];
    const int64_t c = k / (kh * kw), i = k / kw % kh, j = k % kw;
    return o * ws_[0] + c * ws_[1] + i * ws_[2] + j * ws_[3];
  }

  /// W^T as B: element (k, o) = w[o, c, i, j].
  void packWeights(const float *w, float *dst) const {
    if (denseWeights()) {
      gemm_.pack(w, 1, k_, dst);
      return;
    }
    std::vector<float> b(size_t(k_ * g_.outC));
    for (int64_t o = 0; o < g_.outC; ++o)
      for (int64_t k = 0; k < k_; ++k)
        b[size_t(k * g_.outC + o)] = w[weightOffset(o, k)];
    gemm_.pack(b.data(), g_.outC, 1, dst);
  }

  /// patches[(n * OH + py) * OW + px][(c * KH + i) * KW + j] =
  /// x[n, c, py * KH + i, px * KW + j]: a strided copy of x seen as
  /// [N, OH, OW, C, KH, KW].
  static CopyPlan patchCopy(const ConvGeom &g, const KernelOperand &x) {
    const int64_t kh = g.kernel[0], kw = g.kernel[1];
    const std::vector<int64_t> xs = x.effectiveStrides();
    const std::vector<int64_t> shape = {g.batch, g.out[0], g.out[1], g.inC, kh, kw};
    const std::vector<int64_t> src = {xs[0], xs[2] * kh, xs[3] * kw, xs[1], xs[2], xs[3]};
    return CopyPlan(shape, sizeof(float), contiguousStrides(shape), src);
  }

  ConvGeom g_;
  int64_t k_, positions_;
  bool channelsLast_;
  std::vector<int64_t> ws_;
  CopyPlan gather_;
  PackedSgemm gemm_;
  onednn::PreparedWeights weights_;
};

} // namespace

std::string patchConvolutionMismatch(const ConvGeom &g, const KernelDesc &desc,
                                     const KernelOperand &out) {
  if (!PackedSgemm::available())
    return "no AVX-512 for the packed GEMM";
  if (g.transpose || g.spatial() != 2 || g.groups != 1)
    return "not a 2-D ungrouped convolution";
  for (size_t d = 0; d < 2; ++d)
    if (g.kernel[d] != g.stride[d] || g.padBegin[d] != 0 || g.padEnd[d] != 0 ||
        g.dilation[d] != 1 || g.out[d] * g.stride[d] > g.in[d])
      return "its windows do not tile the input (stride = kernel, no padding or dilation)";
  // Where it pays (one process per layer, 1 thread, 2026-11-29, against
  // oneDNN): few input channels or large windows -- ViT-B/32's 3->768
  // 32x32 3.3 -> 2.6 ms, ConvNeXt-T's 3->96 4x4 1.32 -> 0.75 ms; its 2x2
  // downsamplings of 96-384 channels were not faster (1.55 -> 1.83 ms at
  // 96->192).
  if (g.kernelSize() < 16 && g.inC > 4)
    return "small windows over many channels (oneDNN is faster)";
  for (const auto &in : desc.inputs)
    if (in && in->dtype != CGC_DTYPE_FLOAT32)
      return "not float32";
  if (out.dtype != CGC_DTYPE_FLOAT32 || !(out.isContiguous() || channelsLast(out)))
    return "the result is not dense NCHW or channels-last";
  for (int64_t s : desc.inputs[0]->effectiveStrides())
    if (s < 0)
      return "a negative input stride";
  for (int64_t s : desc.inputs[1]->effectiveStrides())
    if (s < 0)
      return "a negative weight stride";
  if (g.hasBias && desc.inputs[2]->shape.at(0) != 1 && desc.inputs[2]->effectiveStrides()[0] != 1)
    return "the bias is not a dense vector";
  if (g.batch * g.outC * g.out[0] * g.out[1] == 0)
    return "an empty convolution";
  return "";
}

std::unique_ptr<Kernel> makePatchConvolution(const ConvGeom &g, const KernelDesc &desc,
                                             bool constantWeights) {
  return std::make_unique<PatchConvKernel>(g, *desc.inputs[0], *desc.inputs[1],
                                           desc.outputs[0], constantWeights);
}

} // namespace cgc::cpu::conv
