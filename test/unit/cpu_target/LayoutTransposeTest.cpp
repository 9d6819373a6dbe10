//===- LayoutTransposeTest.cpp - Permutes the layouts made free -----------===//
//
// ConvNeXt's block permutes a convolution's NCHW result to [N, H, W, C] for
// its layer norm and Linear layers, and permutes their result back. Once
// the convolution's activations are channels-last, both permutes copy bytes
// in the order they already have: optimizeKernelProgram removes them and
// their readers read the source. The rewritten program must compute what
// the original computes (both run with the driver's executor), and a
// permute whose source changes before its readers are done, or whose
// layouts differ, must stay.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "RunProgram.h"

#include <gtest/gtest.h>


using namespace cgc;

namespace {

using S = KernelOperand::Storage;
using test::f32;
using test::layer;
using test::countOps;
using test::transposeLayer;

constexpr int64_t kC = 8, kH = 3, kW = 5, kPlane = kH * kW;

KernelDesc layerNorm(KernelOperand x, KernelOperand scale, KernelOperand bias, KernelOperand out) {
  KernelDesc d = layer("cgc_op.layer_norm", {std::move(x), std::move(scale), std::move(bias)},
                       std::move(out));
  d.setAttr("axis", AttrValue::ofInt(3));
  d.setAttr("epsilon", AttrValue::ofFloat(1e-5));
  return d;
}

/// A ConvNeXt block on [1, C, H, W] after a convolution: t0 = conv(x);
/// t1 = conv(t0) (the block's depthwise convolution); t2 = permute(t1) to
/// [1, H, W, C]; t3 = layer_norm(t2); t4 = t3 . w2 + b2; t5 = permute back;
/// t6 = gamma * t5 + t0; out = conv(t6). Bindings: 0 x, 1 conv weights,
/// 2 conv bias, 3 norm scale, 4 norm bias, 5 w2 [C, C], 6 b2 [C], 7 gamma
/// [C, 1, 1], 8 out. With `overwrite`, a kernel writes t1 again after the
/// first permute and before the layer norm reads its result.
KernelProgram blockProgram(bool overwrite = false) {
  KernelProgram p;
  test::addF32Binding(p, "x", kC * kPlane, false);
  test::addF32Binding(p, "w", kC * kC, true);
  test::addF32Binding(p, "b", kC, true);
  test::addF32Binding(p, "scale", kC, true);
  test::addF32Binding(p, "shift", kC, true);
  test::addF32Binding(p, "w2", kC * kC, true);
  test::addF32Binding(p, "b2", kC, true);
  test::addF32Binding(p, "gamma", kC, true);
  test::addF32Binding(p, "out", kC * kPlane, false);
  for (int i = 0; i < 9; ++i)
    p.temporaries.push_back({uint64_t(kC * kPlane * 4), 64});
  const std::vector<int64_t> nchw = {1, kC, kH, kW}, nhwc = {1, kH, kW, kC};
  auto t = [&](uint32_t i, std::vector<int64_t> shape) { return f32(S::Temporary, i, shape); };
  auto conv = [&](KernelOperand in, KernelOperand out) {
    return test::pointwiseConvolution(in, f32(S::Binding, 1, {kC, kC, 1, 1}),
                                      f32(S::Binding, 2, {kC}), out);
  };
  p.kernels.push_back(conv(f32(S::Binding, 0, nchw), t(0, nchw)));
  p.kernels.push_back(conv(t(0, nchw), t(1, nchw)));
  p.kernels.push_back(transposeLayer(t(1, nchw), t(2, nhwc), {0, 2, 3, 1}));
  if (overwrite)
    p.kernels.push_back(layer("cgc_op.relu", {t(0, nchw)}, t(1, nchw)));
  p.kernels.push_back(layerNorm(t(2, nhwc), f32(S::Binding, 3, {kC}), f32(S::Binding, 4, {kC}),
                                t(3, nhwc)));
  p.kernels.push_back(layer("cgc_op.matmul", {t(3, nhwc), f32(S::Binding, 5, {kC, kC})}, t(4, nhwc)));
  p.kernels.push_back(layer("cgc_op.add", {t(4, nhwc), f32(S::Binding, 6, {kC})}, t(5, nhwc)));
  p.kernels.push_back(transposeLayer(t(5, nhwc), t(6, nchw), {0, 3, 1, 2}));
  p.kernels.push_back(layer("cgc_op.mul", {f32(S::Binding, 7, {kC, 1, 1}), t(6, nchw)}, t(7, nchw)));
  p.kernels.push_back(layer("cgc_op.add", {t(7, nchw), t(0, nchw)}, t(8, nchw)));
  p.kernels.push_back(conv(t(8, nchw), f32(S::Binding, 8, nchw)));
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

std::vector<std::vector<float>> blockBuffers() {
  std::vector<std::vector<float>> b;
  const int64_t sizes[] = {kC * kPlane, kC * kC, kC, kC, kC, kC * kC, kC, kC};
  for (size_t i = 0; i < 8; ++i)
    b.push_back(test::randomFloats(size_t(sizes[i]), unsigned(i + 1)));
  b.push_back(std::vector<float>(size_t(kC * kPlane), -7.0f));
  return b;
}

/// The block's result (binding 8) from both programs, where the kernels
/// are built in.
void expectSameBlockResult(const KernelProgram &original, const KernelProgram &rewritten) {
  if (cpu_target::haveKernelLibrary())
    test::expectSameResult(original, rewritten, blockBuffers(), 8);
}

TEST(CpuLayoutTransposes, ConvNeXtBlockPermutesAreRemoved) {
  KernelProgram original = blockProgram(), folded = original;
  cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(folded);
  EXPECT_GT(stats.channelsLast, 0u);
  EXPECT_EQ(stats.foldedLayoutTransposes, 2u);
  EXPECT_EQ(countOps(folded, "cgc_op.transpose"), 0u);
  std::string error;
  EXPECT_TRUE(folded.validate(error)) << error;
  // The layer norm reads the convolution's channels-last result as rows of
  // C; the product's rows are read back as a channels-last [1, C, H, W].
  for (const KernelDesc &k : folded.kernels) {
    if (k.op == "cgc_op.layer_norm") {
      EXPECT_EQ(k.inputs[0]->shape, (std::vector<int64_t>{1, kH, kW, kC}));
      EXPECT_EQ(k.inputs[0]->effectiveStrides(), (std::vector<int64_t>{kC * kPlane, kW * kC, kC, 1}));
    }
    if (k.op == "cgc_op.mul")
      for (const auto &in : k.inputs)
        if (in->shape.size() == 4)
          EXPECT_EQ(in->effectiveStrides(), (std::vector<int64_t>{kC * kPlane, 1, kW * kC, kC}));
  }
  expectSameBlockResult(original, folded);
}

TEST(CpuLayoutTransposes, PermutesThatStillMoveDataStay) {
  // The source is written again before the permute's result is read: the
  // readers cannot read it in place.
  {
    KernelProgram original = blockProgram(/*overwrite=*/true), folded = original;
    cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(folded);
    EXPECT_EQ(stats.foldedLayoutTransposes, 1u); // only the permute back
    EXPECT_EQ(countOps(folded, "cgc_op.transpose"), 1u);
    expectSameBlockResult(original, folded);
  }
  // No convolution: NCHW stays, and the permute to [N, H, W, C] reorders.
  {
    KernelProgram p;
    test::addF32Binding(p, "x", kC * kPlane, false);
    test::addF32Binding(p, "y", kC * kPlane, false);
    p.temporaries.push_back({uint64_t(kC * kPlane * 4), 64});
    p.temporaries.push_back({uint64_t(kC * kPlane * 4), 64});
    p.kernels.push_back(layer("cgc_op.relu", {f32(S::Binding, 0, {1, kC, kH, kW})},
                              f32(S::Temporary, 0, {1, kC, kH, kW})));
    p.kernels.push_back(transposeLayer(f32(S::Temporary, 0, {1, kC, kH, kW}),
                                       f32(S::Temporary, 1, {1, kH, kW, kC}), {0, 2, 3, 1}));
    p.kernels.push_back(layer("cgc_op.relu", {f32(S::Temporary, 1, {1, kH, kW, kC})},
                              f32(S::Binding, 1, {1, kH, kW, kC})));
    cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(p);
    EXPECT_EQ(stats.foldedLayoutTransposes, 0u);
    EXPECT_EQ(countOps(p, "cgc_op.transpose"), 1u);
  }
}

} // namespace
