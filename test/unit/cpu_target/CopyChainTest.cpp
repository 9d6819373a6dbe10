//===- CopyChainTest.cpp - Copies through copies, as one ------------------===//
//
// optimizeKernelProgram composes a slice or transpose with the copy layer
// that wrote what it reads (foldCopyChains), and stores a channel shuffle's
// split views channels-last only when the shuffle folds. Each rewritten
// program must compute, element for element, what the original computes
// (both run with the driver's executor), and the rewrite must leave alone
// what it would get wrong.
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
using test::reshapeLayer;
using test::countOps;
using test::expectSameResult;
using test::transposeLayer;

KernelDesc sliceLayer(KernelOperand in, KernelOperand out, std::vector<int64_t> starts,
                      std::vector<int64_t> ends, std::vector<int64_t> steps = {}) {
  if (steps.empty())
    steps.assign(starts.size(), 1);
  KernelDesc d = layer("cgc_op.slice", {std::move(in)}, std::move(out));
  d.setAttr("starts", AttrValue::ofInts(std::move(starts)));
  d.setAttr("ends", AttrValue::ofInts(std::move(ends)));
  d.setAttr("steps", AttrValue::ofInts(std::move(steps)));
  return d;
}

KernelDesc concatLayer(std::vector<KernelOperand> in, KernelOperand out, int64_t axis) {
  KernelDesc d = layer("cgc_op.concat", std::move(in), std::move(out));
  d.setAttr("axis", AttrValue::ofInt(axis));
  return d;
}

constexpr int64_t kH = 3, kW = 4;

/// Two ShuffleNetV2 blocks on `channels` channels (even): convolutions
/// around each block's split, concat and channel shuffle (reshape to two
/// groups, transpose, reshape back), then the next block's split.
/// Bindings: 0 x, 1 full weights, 2 full bias, 3 half weights, 4 half bias,
/// 5 out [1, channels, H, W].
KernelProgram shuffleProgram(int64_t channels, bool splitLayer = false) {
  const int64_t c = channels, h = c / 2, plane = kH * kW;
  KernelProgram p;
  test::addF32Binding(p, "x", c * plane, false);
  test::addF32Binding(p, "w", c * c, true);
  test::addF32Binding(p, "b", c, true);
  test::addF32Binding(p, "wh", h * h, true);
  test::addF32Binding(p, "bh", h, true);
  test::addF32Binding(p, "out", c * plane, false);
  const std::vector<int64_t> full = {1, c, kH, kW}, half = {1, h, kH, kW},
                             groups = {1, 2, h, kH, kW}, shuffled = {1, h, 2, kH, kW};
  // Temporaries 1, 2, 3, 8, 9, 10 hold a half.
  for (int i = 0; i < 11; ++i) {
    const bool halfSized = i == 1 || i == 2 || i == 3 || i >= 8;
    p.temporaries.push_back({uint64_t((halfSized ? h : c) * plane * 4), 64});
  }
  auto t = [&](uint32_t i, std::vector<int64_t> shape) { return f32(S::Temporary, i, shape); };
  auto conv = [&](KernelOperand in, KernelOperand out, bool wide) {
    const int64_t n = wide ? c : h;
    return test::pointwiseConvolution(in, f32(S::Binding, wide ? 1 : 3, {n, n, 1, 1}),
                                      f32(S::Binding, wide ? 2 : 4, {n}), out);
  };
  p.kernels.push_back(conv(f32(S::Binding, 0, full), t(0, full), true));
  // Block 1: split, the branch, concat, shuffle.
  p.kernels.push_back(sliceLayer(t(0, full), t(1, half), {0, 0, 0, 0}, {1, h, kH, kW}));
  p.kernels.push_back(sliceLayer(t(0, full), t(2, half), {0, h, 0, 0}, {1, c, kH, kW}));
  p.kernels.push_back(conv(t(2, half), t(3, half), false));
  p.kernels.push_back(concatLayer({t(1, half), t(3, half)}, t(4, full), 1));
  p.kernels.push_back(reshapeLayer(t(4, full), t(5, groups)));
  p.kernels.push_back(transposeLayer(t(5, groups), t(6, shuffled), {0, 2, 1, 3, 4}));
  p.kernels.push_back(reshapeLayer(t(6, shuffled), t(7, full)));
  // Block 2's split (two slices, or one split layer); its branch; the
  // result.
  if (splitLayer) {
    KernelDesc split;
    split.op = "cgc_op.split";
    split.inputs = {t(7, full)};
    split.outputs = {t(8, half), t(9, half)};
    split.setAttr("axis", AttrValue::ofInt(1));
    split.setAttr("sizes", AttrValue::ofInts({h, h}));
    p.kernels.push_back(std::move(split));
  } else {
    p.kernels.push_back(sliceLayer(t(7, full), t(8, half), {0, 0, 0, 0}, {1, h, kH, kW}));
    p.kernels.push_back(sliceLayer(t(7, full), t(9, half), {0, h, 0, 0}, {1, c, kH, kW}));
  }
  p.kernels.push_back(conv(t(9, half), t(10, half), false));
  p.kernels.push_back(concatLayer({t(8, half), t(10, half)}, f32(S::Binding, 5, full), 1));
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

std::vector<std::vector<float>> shuffleBuffers(int64_t c) {
  const int64_t h = c / 2;
  return {test::randomFloats(size_t(c * kH * kW), 1), test::randomFloats(size_t(c * c), 2),
          test::randomFloats(size_t(c), 3),           test::randomFloats(size_t(h * h), 4),
          test::randomFloats(size_t(h), 5),           std::vector<float>(size_t(c * kH * kW), -7.0f)};
}

/// Optimizes a shuffle program of `channels` channels: `folds` copy layers
/// fold, no transpose or split is left, the result's concat and `slices`
/// slices are, and the result is the original's.
KernelProgram expectShuffleFolds(int64_t channels, bool splitLayer, unsigned folds,
                                 size_t slices) {
  KernelProgram original = shuffleProgram(channels, splitLayer), folded = original;
  EXPECT_EQ(cpu_target::optimizeKernelProgram(folded).foldedCopyChains, folds);
  EXPECT_EQ(countOps(folded, "cgc_op.transpose"), 0u);
  EXPECT_EQ(countOps(folded, "cgc_op.split"), 0u);
  EXPECT_EQ(countOps(folded, "cgc_op.concat"), 1u); // the result's
  EXPECT_EQ(countOps(folded, "cgc_op.slice"), slices);
  std::string error;
  EXPECT_TRUE(folded.validate(error)) << error;
  expectSameResult(original, folded, shuffleBuffers(channels), 5);
  return folded;
}

TEST(CpuCopyChains, ChannelShuffleMovesItsDataOnce) {
#if !CGC_CPU_HAVE_KERNELS
  GTEST_SKIP() << "the kernel library has no kernels in this build";
#endif
  // 12 channels: each half of the shuffled tensor is 3 x 2 channels of the
  // concat's two inputs. Block 1's transpose and concat and the slice of
  // its split that the concat read are gone: block 2's halves are copied
  // per input of the concat straight from the first convolution's result
  // and the branch's (two slices each), and block 1's other slice feeds
  // its branch.
  KernelProgram folded = expectShuffleFolds(12, /*splitLayer=*/false, 3, 5);
  // Every convolution still reads channels-last (the pixel stride is the
  // channel count), block 2's branch included.
  for (const KernelDesc &k : folded.kernels)
    if (k.op == "cgc_op.convolution" && k.inputs[0]->storage == S::Temporary)
      EXPECT_EQ(k.inputs[0]->effectiveStrides().back(), k.inputs[0]->shape[1]);
}

TEST(CpuCopyChains, ASplitLayerReadsThroughTheShuffleToo) {
#if !CGC_CPU_HAVE_KERNELS
  GTEST_SKIP() << "the kernel library has no kernels in this build";
#endif
  // Block 2's halves taken by one split layer (as other exporters write a
  // chunk): the split reads through the shuffle and the concat as the two
  // slices did, one copy per output and concat input.
  expectShuffleFolds(12, /*splitLayer=*/true, 3, 5);
}

TEST(CpuCopyChains, OddHalvesFoldOnlyTheConcatIntoTheShuffle) {
#if !CGC_CPU_HAVE_KERNELS
  GTEST_SKIP() << "the kernel library has no kernels in this build";
#endif
  // 10 channels: a half is 5 channels, which is no whole number of the
  // shuffle's pairs, so block 2's split cannot read through the shuffle.
  // The concat still folds into the transpose (and block 1's slice that
  // fed the concat into that): two copies write the shuffled tensor, every
  // other channel each, and block 2's split reads it.
  expectShuffleFolds(10, /*splitLayer=*/false, 2, 5);
  // The same with the branch's result laid out as it is (NCHW: a binding
  // the caller reads): the shuffle's copies then permute a pixel's few
  // channels across planes, so no view is laid out with split channels,
  // and the shuffled tensor stays NCHW.
  KernelProgram outside = shuffleProgram(10);
  test::addF32Binding(outside, "branch", 5 * kH * kW, false);
  auto toBinding = [](KernelOperand &o) {
    if (o.storage == S::Temporary && o.index == 3) {
      o.storage = S::Binding;
      o.index = 6;
    }
  };
  for (KernelDesc &k : outside.kernels) {
    for (auto &in : k.inputs)
      if (in)
        toBinding(*in);
    toBinding(k.outputs[0]);
  }
  std::vector<std::vector<float>> buffers = shuffleBuffers(10);
  buffers.push_back(std::vector<float>(5 * kH * kW, 0.0f));
  KernelProgram laid = outside;
  cpu_target::optimizeKernelProgram(laid);
  for (const KernelDesc &k : laid.kernels)
    for (const KernelOperand &o : k.outputs)
      if (o.shape.size() == 5)
        EXPECT_TRUE(o.isContiguous()) << k.op;
  expectSameResult(outside, laid, buffers, 5);
}

/// Bindings: 0 x [4, 6, 5], 1 out; a transpose, then `reader` of it.
KernelProgram chain(KernelDesc reader, std::vector<int64_t> outShape) {
  KernelProgram p;
  test::addF32Binding(p, "x", 4 * 6 * 5, false);
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  test::addF32Binding(p, "out", n, false);
  p.temporaries.push_back({uint64_t(4 * 6 * 5 * 4), 64});
  p.kernels.push_back(
      transposeLayer(f32(S::Binding, 0, {4, 6, 5}), f32(S::Temporary, 0, {5, 4, 6}), {2, 0, 1}));
  p.kernels.push_back(std::move(reader));
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

TEST(CpuCopyChains, TransposesAndStridedSlicesCompose) {
#if !CGC_CPU_HAVE_KERNELS
  GTEST_SKIP() << "the kernel library has no kernels in this build";
#endif
  // `reader` of the transpose, writing `elements` elements, becomes one
  // copy from x.
  auto expectOneCopy = [](KernelDesc reader, std::vector<int64_t> outShape, size_t elements) {
    KernelProgram p = chain(std::move(reader), std::move(outShape)), q = p;
    EXPECT_EQ(cpu_target::optimizeKernelProgram(q).foldedCopyChains, 1u);
    EXPECT_EQ(q.kernels.size(), 1u);
    expectSameResult(p, q, {test::randomFloats(120, 7), std::vector<float>(elements, -7.0f)}, 1);
  };
  // A transpose of the transpose.
  expectOneCopy(transposeLayer(f32(S::Temporary, 0, {5, 4, 6}), f32(S::Binding, 1, {6, 5, 4}),
                               {2, 0, 1}),
                {6, 5, 4}, 120);
  // A slice with steps of 2 and 3, from an offset, of the transpose.
  expectOneCopy(sliceLayer(f32(S::Temporary, 0, {5, 4, 6}), f32(S::Binding, 1, {2, 3, 2}),
                           {1, 0, 1}, {5, 3, 6}, {2, 1, 3}),
                {2, 3, 2}, 12);
}

TEST(CpuCopyChains, LeavesWhatItWouldChangeAlone) {
  // Something other than a slice or transpose reads the transpose's result.
  {
    KernelProgram p = chain(layer("cgc_op.relu", {f32(S::Temporary, 0, {5, 4, 6})},
                                  f32(S::Binding, 1, {5, 4, 6})),
                            {5, 4, 6});
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedCopyChains, 0u);
    EXPECT_EQ(countOps(p, "cgc_op.transpose"), 1u);
  }
  // The transpose's source is overwritten before the slice reads it.
  {
    KernelProgram p = chain(sliceLayer(f32(S::Temporary, 0, {5, 4, 6}),
                                       f32(S::Binding, 1, {5, 4, 3}), {0, 0, 0}, {5, 4, 3}),
                            {5, 4, 3});
    p.kernels.insert(p.kernels.begin() + 1, layer("cgc_op.relu", {f32(S::Binding, 0, {4, 6, 5})},
                                                  f32(S::Binding, 0, {4, 6, 5})));
    std::string error;
    ASSERT_TRUE(p.validate(error)) << error;
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedCopyChains, 0u);
  }
  // The transpose's result is a binding: the caller may read it.
  {
    KernelProgram p;
    test::addF32Binding(p, "x", 120, false);
    test::addF32Binding(p, "t", 120, false);
    test::addF32Binding(p, "out", 60, false);
    p.kernels.push_back(
        transposeLayer(f32(S::Binding, 0, {4, 6, 5}), f32(S::Binding, 1, {5, 4, 6}), {2, 0, 1}));
    p.kernels.push_back(sliceLayer(f32(S::Binding, 1, {5, 4, 6}), f32(S::Binding, 2, {5, 4, 3}),
                                   {0, 0, 0}, {5, 4, 3}));
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedCopyChains, 0u);
  }
  // A slice that runs across a dimension of the transposed result from
  // inside it (6 elements of a merged [5, 24] view starting at 3, or at 1,
  // of a dimension of 6) has no single stride there.
  for (int64_t start : {3, 1}) {
    KernelProgram p = chain(sliceLayer(f32(S::Temporary, 0, {5, 24}), f32(S::Binding, 1, {5, 6}),
                                       {0, start}, {5, start + 6}),
                            {5, 6});
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedCopyChains, 0u) << "from " << start;
  }
}

} // namespace
