//===- ViewFoldTest.cpp - Reshapes as views, transposes into results ------===//
//
// optimizeKernelProgram removes attention's head split and merge: dense
// reshapes become views, the transpose before a product folds into its
// operand strides and the transpose after it into its result strides. The
// rewritten program must compute what the original computes (both run with
// the driver's executor, and against a naive product), and rewrites that
// would change the result must not happen.
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
using test::runProgram;
using test::transposeLayer;

constexpr int64_t kSeq = 5, kHeads = 2, kDim = 3, kHidden = kHeads * kDim;

/// Attention's context: out = merge(p . split(v)), split(v) =
/// transpose(reshape(v, [1, S, H, D]), [0, 2, 1, 3]), merge the inverse.
/// Bindings: 0 p [1, H, S, S], 1 v [1, S, H*D], 2 out [1, S, H*D].
KernelProgram contextProgram() {
  KernelProgram p;
  p.bindings.push_back({"p", uint64_t(kHeads * kSeq * kSeq * 4)});
  p.bindings.push_back({"v", uint64_t(kSeq * kHidden * 4)});
  p.bindings.push_back({"out", uint64_t(kSeq * kHidden * 4)});
  for (int i = 0; i < 4; ++i)
    p.temporaries.push_back({uint64_t(kSeq * kHidden * 4), 64});
  const std::vector<int64_t> split = {1, kSeq, kHeads, kDim}, heads = {1, kHeads, kSeq, kDim};
  p.kernels.push_back(reshapeLayer(f32(S::Binding, 1, {1, kSeq, kHidden}), f32(S::Temporary, 0, split)));
  p.kernels.push_back(transposeLayer(f32(S::Temporary, 0, split), f32(S::Temporary, 1, heads), {0, 2, 1, 3}));
  p.kernels.push_back(layer("cgc_op.matmul",
                            {f32(S::Binding, 0, {1, kHeads, kSeq, kSeq}), f32(S::Temporary, 1, heads)},
                            f32(S::Temporary, 2, heads)));
  p.kernels.push_back(transposeLayer(f32(S::Temporary, 2, heads), f32(S::Temporary, 3, split), {0, 2, 1, 3}));
  p.kernels.push_back(reshapeLayer(f32(S::Temporary, 3, split), f32(S::Binding, 2, {1, kSeq, kHidden})));
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

TEST(CpuViewFold, AttentionContextRunsAsOneStridedProduct) {
  KernelProgram original = contextProgram();
  KernelProgram folded = original;
  cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(folded);
  EXPECT_EQ(stats.foldedReshapes, 2u);
  EXPECT_EQ(stats.foldedTransposes, 1u);
  EXPECT_EQ(stats.foldedResultTransposes, 1u);
  ASSERT_EQ(folded.kernels.size(), 1u);
  const KernelDesc &m = folded.kernels[0];
  EXPECT_EQ(m.op, "cgc_op.matmul");
  // v read in place as [1, H, S, D] and out written in place.
  EXPECT_EQ(m.inputs[1]->storage, S::Binding);
  EXPECT_EQ(m.inputs[1]->index, 1u);
  EXPECT_EQ(m.inputs[1]->effectiveStrides(), (std::vector<int64_t>{kSeq * kHidden, kDim, kHidden, 1}));
  EXPECT_EQ(m.outputs[0].storage, S::Binding);
  EXPECT_EQ(m.outputs[0].index, 2u);
  EXPECT_EQ(m.outputs[0].effectiveStrides(), (std::vector<int64_t>{kSeq * kHidden, kDim, kHidden, 1}));
  EXPECT_TRUE(folded.temporaries.empty());
  if (!cpu_target::haveKernelLibrary())
    return;
  std::vector<std::vector<float>> buffers = {test::randomFloats(kHeads * kSeq * kSeq, 3),
                                             test::randomFloats(kSeq * kHidden, 4),
                                             std::vector<float>(kSeq * kHidden, -7.0f)};
  std::vector<float> expected = runProgram(original, buffers, 2), got = runProgram(folded, buffers, 2);
  ASSERT_EQ(got.size(), size_t(kSeq * kHidden));
  for (int64_t s = 0; s < kSeq; ++s)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t d = 0; d < kDim; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < kSeq; ++j)
          acc += double(buffers[0][(h * kSeq + s) * kSeq + j]) * buffers[1][j * kHidden + h * kDim + d];
        size_t o = size_t(s * kHidden + h * kDim + d);
        EXPECT_NEAR(got[o], acc, 1e-5) << s << "," << h << "," << d;
        EXPECT_NEAR(expected[o], acc, 1e-5) << s << "," << h << "," << d;
      }
}

TEST(CpuViewFold, LeavesWhatItWouldChangeAlone) {
  // The split V is also read by another layer: the reshape stays (its
  // result has two readers) and so does the transpose's source.
  {
    KernelProgram p = contextProgram();
    p.bindings.push_back({"z", uint64_t(kSeq * kHidden * 4)});
    p.kernels.push_back(layer("cgc_op.relu", {f32(S::Temporary, 0, {1, kSeq, kHeads, kDim})},
                              f32(S::Binding, 3, {1, kSeq, kHeads, kDim})));
    cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(p);
    EXPECT_EQ(stats.foldedReshapes, 1u); // only the merge
    bool reshapeLeft = false;
    for (const KernelDesc &k : p.kernels)
      reshapeLeft |= k.op == "cgc_op.reshape";
    EXPECT_TRUE(reshapeLeft);
  }
  // v is overwritten after the reshape and before its reader.
  {
    KernelProgram p = contextProgram();
    p.kernels.insert(p.kernels.begin() + 1,
                     layer("cgc_op.relu", {f32(S::Binding, 2, {1, kSeq, kHidden})},
                           f32(S::Binding, 1, {1, kSeq, kHidden})));
    std::string error;
    ASSERT_TRUE(p.validate(error)) << error;
    KernelProgram q = p;
    cpu_target::optimizeKernelProgram(q);
    EXPECT_EQ(q.kernels[0].op, "cgc_op.reshape");
  }
  // The transposed result comes from an elementwise layer, not a product.
  {
    KernelProgram p = contextProgram();
    p.kernels[2] = layer("cgc_op.relu", {f32(S::Temporary, 1, {1, kHeads, kSeq, kDim})},
                         f32(S::Temporary, 2, {1, kHeads, kSeq, kDim}));
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedResultTransposes, 0u);
  }
  // The product's result is read by another layer too.
  {
    KernelProgram p = contextProgram();
    p.bindings.push_back({"z", uint64_t(kSeq * kHidden * 4)});
    p.kernels.push_back(layer("cgc_op.relu", {f32(S::Temporary, 2, {1, kHeads, kSeq, kDim})},
                              f32(S::Binding, 3, {1, kHeads, kSeq, kDim})));
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedResultTransposes, 0u);
  }
}

// Two bind points may share bytes: the compiler places a partition's values
// by its order of invocations, so an input only the first layer reads and
// an output a later layer writes can be one range (test_rnn_seq_length: a
// slice of W reshaped for the product, R's slice reshaped into bytes W's
// had). A reshape whose source is a bind point is not folded into a reader
// after a layer that writes another bind point: the reader would then read
// the source after it was overwritten.
TEST(CpuViewFold, ReshapeOfABindPointKeepsTheCompilersOrder) {
  const std::vector<int64_t> shape = {1, 5, 3}, flat = {5, 3};
  KernelProgram p;
  p.bindings.push_back({"w", 60});
  p.bindings.push_back({"r", 60});
  p.bindings.push_back({"r_flat", 60}); // the compiler may place it over w
  p.bindings.push_back({"out", 60});
  p.temporaries.push_back({60, 64});
  p.kernels.push_back(reshapeLayer(f32(S::Binding, 0, shape), f32(S::Temporary, 0, flat)));
  p.kernels.push_back(reshapeLayer(f32(S::Binding, 1, shape), f32(S::Binding, 2, flat)));
  p.kernels.push_back(layer("cgc_op.relu", {f32(S::Temporary, 0, flat)}, f32(S::Binding, 3, flat)));
  std::string error;
  ASSERT_TRUE(p.validate(error)) << error;
  KernelProgram q = p;
  cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(q);
  EXPECT_FALSE(stats.keptForBindingOrder);
  EXPECT_EQ(cpu_target::reversedBindingOrder(p, q), "");
  // w is still read by the first layer, before r_flat is written.
  ASSERT_FALSE(q.kernels.empty());
  EXPECT_TRUE(q.kernels[0].inputs[0] && q.kernels[0].inputs[0]->storage == S::Binding &&
              q.kernels[0].inputs[0]->index == 0u);
  // Without the layer in between the fold is made (w read by the relu).
  KernelProgram r = p;
  r.kernels.erase(r.kernels.begin() + 1);
  EXPECT_EQ(cpu_target::optimizeKernelProgram(r).foldedReshapes, 1u);
}

// reversedBindingOrder: a bind point x accessed wholly before one whose
// value starts in the program (written first), then the other way round;
// not for a later one that is read first (a partition input: live from the
// start, never in x's bytes), nor for a constant one (its bytes are nobody
// else's).
TEST(CpuViewFold, ReversedBindingOrderNamesTheSwappedPair) {
  const std::vector<int64_t> shape = {4};
  KernelProgram before;
  before.bindings.push_back({"a", 16});
  before.bindings.push_back({"b", 16});
  before.bindings.push_back({"c", 16});
  before.bindings.push_back({"d", 16});
  before.kernels.push_back(layer("cgc_op.relu", {f32(S::Binding, 0, shape)}, f32(S::Binding, 2, shape)));
  before.kernels.push_back(layer("cgc_op.relu", {f32(S::Binding, 1, shape)}, f32(S::Binding, 3, shape)));
  KernelProgram after = before;
  std::swap(after.kernels[0], after.kernels[1]);
  // (a and b are only read: the first pair is a, read before d is written.)
  EXPECT_EQ(cpu_target::reversedBindingOrder(before, after), "'a' and 'd'");
  EXPECT_EQ(cpu_target::reversedBindingOrder(before, before), "");
  // A constant bind point read after a write is no hazard.
  {
    KernelProgram c;
    c.bindings.push_back({"weights", 16});
    c.bindings.push_back({"out", 16});
    c.bindings[0].constant = true;
    c.temporaries.push_back({16, 64});
    c.temporaries.push_back({16, 64});
    c.kernels.push_back(layer("cgc_op.relu", {f32(S::Binding, 0, shape)}, f32(S::Temporary, 0, shape)));
    c.kernels.push_back(layer("cgc_op.relu", {f32(S::Temporary, 1, shape)}, f32(S::Binding, 1, shape)));
    KernelProgram swapped = c;
    std::swap(swapped.kernels[0], swapped.kernels[1]);
    EXPECT_EQ(cpu_target::reversedBindingOrder(c, swapped), "");
    c.bindings[0].constant = swapped.bindings[0].constant = false;
    EXPECT_EQ(cpu_target::reversedBindingOrder(c, swapped), "'weights' and 'out'");
  }
  // b is read by the second kernel, so it was live before c was written:
  // c before b and then b before c is no hazard; c before d is.
  KernelProgram shared = before;
  shared.kernels[1] = layer("cgc_op.add", {f32(S::Binding, 0, shape), f32(S::Binding, 1, shape)},
                            f32(S::Binding, 3, shape));
  KernelProgram sharedAfter = shared;
  std::swap(sharedAfter.kernels[0], sharedAfter.kernels[1]);
  EXPECT_EQ(cpu_target::reversedBindingOrder(shared, sharedAfter), "'c' and 'd'");
}

} // namespace
