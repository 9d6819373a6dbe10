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

} // namespace
