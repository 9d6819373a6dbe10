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
// on the packed GEMM (sgemm.h), the bias and a chain of unary ops in its
// epilogue. oneDNN ran these at 22-86 GFLOP/s, reordering NCHW activations
// (ConvNeXt-T's 3->96 4x4 s4 1.32 ms, its three 2x2 s2 downsamplings
// 1.35-1.59 ms each; ViT-B/32's 3->768 32x32 s32 3.3 ms).
//
// Small convolutions whose windows do not tile the input (they overlap, or
// skip input: LeNet's 6->16 5x5 on 14x14, a 3x3 stride 2)
// run the same way into an NCHW result: X^T, [C*KH*KW, positions], is
// gathered straight into the packed B's panels, one AVX-512 gather per 16
// positions and tap, from a table of window origins. oneDNN's fixed cost
// per run is most of their time there.
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "onednn.h"
#include "sgemm.h"

#include <algorithm>
#include <climits>
#include <immintrin.h>

namespace cgc::cpu::conv {
namespace {

/// Convolutions whose windows overlap take the patch kernel up to this many
/// multiply-adds, their gathered patches up to this many floats (256 KiB,
/// in L2). bench-kernels, "Small unpadded convolutions" (1 thread,
/// 2026-11-30, against oneDNN): LeNet's 6->16 5x5 @14 (240K multiply-adds)
/// 9.6 -> 7.3 us, 8->16 3x3 s2 @16 6.3 -> 1.9 us, 20->50 5x5 @12 (1.6M)
/// 33 -> 26 us; 16->32 and 32->32 3x3 @14-16 (2.6M) even; 64->64 3x3 @8
/// (2.4M, 36 positions: a third of the last vector empty) 0.89x; 16->32
/// 5x5 @28 (7.4M) 0.80x, 64->128 3x3 @28 0.55x (oneDNN's Winograd).
constexpr int64_t kMaxOverlappingMacs = 2'000'000;
constexpr int64_t kMaxOverlappingPatches = 64 * 1024;

class PatchConvKernel final : public KernelBase {
public:
  PatchConvKernel(const ConvGeom &g, const KernelOperand &x, const KernelOperand &w,
                  const KernelOperand &y, std::vector<SgemmOp> chain, bool constantWeights,
                  const std::string &summary)
      : g_(g), k_(g.inC * g.kernel[0] * g.kernel[1]), positions_(g.out[0] * g.out[1]),
        channelsLast_(!y.isContiguous()), overlapping_(!tiles(g)), ws_(w.effectiveStrides()),
        gather_(overlapping_ ? CopyPlan() : patchCopy(g, x)),
        gemm_(channelsLast_ ? g.batch * positions_ : g.outC, k_,
              channelsLast_ ? g.outC : positions_, ops(g, !y.isContiguous(), std::move(chain)),
              PackedSgemm::Algorithm::Classic,
              overlapping_ ? PackedSgemm::Layout::Columns : PackedSgemm::Layout::Any),
        weights_(w, constantWeights) {
    if (overlapping_)
      windowTables(x);
    description_ = cat(geomText(g), summary, " (patches gathered, one product of ",
                       channelsLast_ ? cat(g.batch * positions_, "x", k_, "x", g.outC)
                                     : cat(g.outC, "x", k_, "x", positions_),
                       channelsLast_ ? ", channels-last" : ", NCHW", " on the packed GEMM, AVX-512 ",
                       gemm_.tileText(),
                       channelsLast_ ? (weights_.constant() ? ", weights packed once"
                                                            : ", weights packed each run")
                       : overlapping_ ? ", overlapping windows gathered into the packed B"
                                      : ", patches packed each run",
                       ", split across the pool)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    const float *w = static_cast<const float *>(args.inputs[1]);
    const float *bias = g_.hasBias ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *y = static_cast<float *>(args.outputs[0]);
    if (overlapping_) {
      runWindows(x, w, bias, y, pool);
      return;
    }
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
    const float *a = denseA(w, dense);
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
  static bool tiles(const ConvGeom &g) {
    for (size_t d = 0; d < 2; ++d)
      if (g.kernel[d] != g.stride[d] || g.dilation[d] != 1)
        return false;
    return true;
  }

  /// W as a dense [O, K] A: in place when it is, else gathered into `dense`.
  const float *denseA(const float *w, Scratch &dense) const {
    if (denseWeights())
      return w;
    dense.allocate(size_t(g_.outC * k_) * sizeof(float));
    float *d = dense.as<float>();
    for (int64_t o = 0; o < g_.outC; ++o)
      for (int64_t k = 0; k < k_; ++k)
        d[o * k_ + k] = w[weightOffset(o, k)];
    return d;
  }

  /// Element offsets within an image: of each tap (c, i, j) from its
  /// window's origin, and of each position's window origin (padded with
  /// zeros to whole panels).
  void windowTables(const KernelOperand &x) {
    const std::vector<int64_t> xs = x.effectiveStrides();
    imageStride_ = xs[0];
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1];
    for (int64_t c = 0; c < g_.inC; ++c)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          taps_.push_back(int32_t(c * xs[1] + i * g_.dilation[0] * xs[2] +
                                  j * g_.dilation[1] * xs[3]));
    const int64_t width = gemm_.panelWidth();
    origins_.assign(size_t((positions_ + width - 1) / width * width), 0);
    for (int64_t py = 0; py < g_.out[0]; ++py)
      for (int64_t px = 0; px < g_.out[1]; ++px)
        origins_[size_t(py * g_.out[1] + px)] =
            int32_t(py * g_.stride[0] * xs[2] + px * g_.stride[1] * xs[3]);
  }

  /// X^T of one image into the packed B: panel p, row k, lane l holds
  /// x[taps[k] + origins[p * width + l]], zero past the last position.
  CGC_TARGET_AVX512 void packWindows(const float *x, float *dst) const {
    const int64_t width = gemm_.panelWidth();
    for (int64_t col0 = 0; col0 < positions_; col0 += width) {
      float *panel = dst + col0 / width * k_ * width;
      for (int64_t v = 0; v < width / 16; ++v) {
        const int64_t lanes = std::clamp<int64_t>(positions_ - col0 - 16 * v, 0, 16);
        const __mmask16 mask = __mmask16((1u << lanes) - 1);
        const __m512i origin = _mm512_loadu_si512(origins_.data() + col0 + 16 * v);
        for (int64_t k = 0; k < k_; ++k)
          _mm512_store_ps(panel + k * width + 16 * v,
                          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, origin,
                                                   x + taps_[size_t(k)], 4));
      }
    }
  }

  void runWindows(const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool) const {
    Scratch dense;
    const float *operands[1] = {bias};
    PackedSgemm::Args ga;
    ga.operands = operands;
    ga.a = denseA(w, dense);
    ga.lda = k_;
    ga.ldc = positions_;
    Scratch packed(gemm_.packedBytes());
    ga.b = packed.as<float>();
    for (int64_t n = 0; n < g_.batch; ++n) {
      packWindows(x + n * imageStride_, packed.as<float>());
      ga.c = y + n * g_.outC * positions_;
      gemm_.runAll(ga, g_.outC, pool);
    }
  }

  /// The bias in the epilogue (one value per column of a channels-last
  /// result, per row of an NCHW one), then the chain's unary ops.
  static std::vector<SgemmOp> ops(const ConvGeom &g, bool channelsLast,
                                  std::vector<SgemmOp> chain) {
    std::vector<SgemmOp> result;
    if (g.hasBias) {
      SgemmOp bias{SgemmOp::Kind::Add};
      bias.operand = 0;
      bias.rowStride = channelsLast ? 0 : 1;
      bias.colStride = channelsLast ? 1 : 0;
      result.push_back(bias);
    }
    result.insert(result.end(), chain.begin(), chain.end());
    return result;
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
  /// x[n, c, py * SH + i * DH, px * SW + j * DW]: a strided copy of x seen
  /// as [N, OH, OW, C, KH, KW] (im2col; used for windows that tile the
  /// input, where SH = KH and DH = 1).
  static CopyPlan patchCopy(const ConvGeom &g, const KernelOperand &x) {
    const int64_t kh = g.kernel[0], kw = g.kernel[1];
    const std::vector<int64_t> xs = x.effectiveStrides();
    const std::vector<int64_t> shape = {g.batch, g.out[0], g.out[1], g.inC, kh, kw};
    const std::vector<int64_t> src = {xs[0],      xs[2] * g.stride[0],   xs[3] * g.stride[1],
                                      xs[1],      xs[2] * g.dilation[0], xs[3] * g.dilation[1]};
    return CopyPlan(shape, sizeof(float), contiguousStrides(shape), src);
  }

  ConvGeom g_;
  int64_t k_, positions_;
  bool channelsLast_;
  bool overlapping_; // windows do not tile the input: gathered by windowTables' tables
  std::vector<int64_t> ws_;
  std::vector<int32_t> taps_, origins_;
  int64_t imageStride_ = 0;
  CopyPlan gather_;
  PackedSgemm gemm_;
  onednn::PreparedWeights weights_;
};

} // namespace

/// The chain as unary epilogue ops of the product; false (with why) if it
/// has another form.
static bool unaryChainOps(const KernelDesc &desc,
                          const std::vector<KernelDesc> &chain, std::vector<SgemmOp> &ops,
                          std::string &reason) {
  ops.clear();
  if (chain.empty())
    return true;
  onednn::PostOps post;
  if (chain.back().outputs.at(0).shape != desc.outputs[0].shape) {
    reason = "a chain that changes the shape";
    return false;
  }
  if (!onednn::buildPostOps(chain, desc.outputs[0].shape, CGC_DTYPE_FLOAT32, post, reason))
    return false;
  if (!onednn::sgemmOps(post.ops, ops) ||
      std::any_of(ops.begin(), ops.end(), [](const SgemmOp &op) {
        return op.binary() || op.kind == SgemmOp::Kind::ErfGelu;
      })) {
    reason = "a chain with operands";
    return false;
  }
  return true;
}

std::string patchConvolutionMismatch(const ConvGeom &g, const KernelDesc &desc,
                                     const std::vector<KernelDesc> &chain,
                                     const KernelOperand &out) {
  if (!PackedSgemm::available())
    return "no AVX-512 for the packed GEMM";
  if (g.transpose || g.spatial() != 2 || g.groups != 1)
    return "not a 2-D ungrouped convolution";
  bool tiles = true;
  for (size_t d = 0; d < 2; ++d) {
    if (g.padBegin[d] != 0 || g.padEnd[d] != 0)
      return "padded";
    tiles = tiles && g.kernel[d] == g.stride[d] && g.dilation[d] == 1;
  }
  const int64_t k = g.inC * g.kernelSize(), positions = g.out[0] * g.out[1];
  if (tiles) {
    // Where it pays (one process per layer, 1 thread, 2026-11-29, against
    // oneDNN): few input channels or large windows -- ViT-B/32's 3->768
    // 32x32 3.3 -> 2.6 ms, ConvNeXt-T's 3->96 4x4 1.32 -> 0.75 ms; its 2x2
    // downsamplings of 96-384 channels were not faster (1.55 -> 1.83 ms at
    // 96->192).
    if (g.kernelSize() < 16 && g.inC > 4)
      return "small windows over many channels (oneDNN is faster)";
  } else {
    // Overlapping windows read each input element up to KH x KW times: only
    // small convolutions, where oneDNN's fixed cost per run dominates.
    if (positions * k > kMaxOverlappingPatches || g.outC * positions * k > kMaxOverlappingMacs)
      return "windows that do not tile the input, and not a small convolution";
    if (!out.isContiguous())
      return "overlapping windows into a channels-last result";
    const std::vector<int64_t> xs = desc.inputs[0]->effectiveStrides();
    int64_t reach = 0;
    for (size_t d = 1; d < 4; ++d)
      reach += (desc.inputs[0]->shape[d] - 1) * xs[d];
    if (reach > INT_MAX)
      return "an image too large for 32-bit gather offsets";
  }
  std::vector<SgemmOp> ops;
  std::string reason;
  if (!unaryChainOps(desc, chain, ops, reason))
    return reason;
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
                                             const std::vector<KernelDesc> &chain,
                                             const KernelOperand &out, bool constantWeights) {
  std::vector<SgemmOp> ops;
  std::string reason;
  if (!unaryChainOps(desc, chain, ops, reason))
    return nullptr;
  return std::make_unique<PatchConvKernel>(g, *desc.inputs[0], *desc.inputs[1], out,
                                           std::move(ops), constantWeights, chainSummary(chain));
}

} // namespace cgc::cpu::conv
