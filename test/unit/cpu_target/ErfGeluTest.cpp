//===- ErfGeluTest.cpp - The JIT's erf-GELU fold --------------------------===//
//
// optimizeKernelProgram folds x * (erf(x / k1) + k2) * k3 (PyTorch's GELU
// export) into one cgc_op.erf_gelu kernel. The folded program must compute
// exactly what the five layers compute (run with the driver's executor on
// both), and programs where the fold would change the result are left alone.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "RunProgram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace cgc;

namespace {

using test::f32;
using test::layer;

constexpr int64_t kRows = 6, kCols = 40, kCount = kRows * kCols;

/// Bindings: 0 x, 1 k1, 2 k2, 3 k3, 4 y. Temporaries 0..3: the chain's
/// intermediates. `swapped` writes every commutative layer the other way
/// round; `multiply` scales x by k1 instead of dividing.
KernelProgram geluProgram(bool swapped, bool multiply) {
  using S = KernelOperand::Storage;
  const std::vector<int64_t> shape = {kRows, kCols};
  KernelProgram p;
  for (const char *name : {"x", "k1", "k2", "k3", "y"}) {
    KernelProgram::Binding b;
    b.name = name;
    b.bytes = (std::strlen(name) == 1 ? kCount : 1) * 4;
    p.bindings.push_back(b);
  }
  for (int i = 0; i < 4; ++i)
    p.temporaries.push_back({uint64_t(kCount * 4), 64});
  auto x = f32(S::Binding, 0, shape), y = f32(S::Binding, 4, shape);
  auto k = [&](uint32_t i) { return f32(S::Binding, i, {}); };
  auto t = [&](uint32_t i) { return f32(S::Temporary, i, shape); };
  p.kernels.push_back(layer(multiply ? "cgc_op.mul" : "cgc_op.div", {x, k(1)}, t(0)));
  p.kernels.push_back(layer("cgc_op.erf", {t(0)}, t(1)));
  p.kernels.push_back(
      layer("cgc_op.add", swapped ? std::vector{k(2), t(1)} : std::vector{t(1), k(2)}, t(2)));
  p.kernels.push_back(
      layer("cgc_op.mul", swapped ? std::vector{t(2), x} : std::vector{x, t(2)}, t(3)));
  p.kernels.push_back(
      layer("cgc_op.mul", swapped ? std::vector{k(3), t(3)} : std::vector{t(3), k(3)}, y));
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

std::vector<std::vector<float>> geluBuffers(float k1) {
  std::vector<std::vector<float>> buffers = {test::randomFloats(kCount, 7), {k1}, {1.0f}, {0.5f},
                                             std::vector<float>(kCount, -1.0f)};
  for (float &v : buffers[0])
    v *= 4; // across erf's two ranges
  buffers[0][3] = 0;
  buffers[0][5] = -0.0f;
  return buffers;
}

/// The program's result: binding 4.
std::vector<float> runProgram(const KernelProgram &program,
                              std::vector<std::vector<float>> buffers) {
  return test::runProgram(program, std::move(buffers), 4);
}

TEST(CpuErfGelu, FiveLayersBecomeOneKernelWithTheSameResult) {
  for (bool swapped : {false, true})
    for (bool multiply : {false, true}) {
      KernelProgram original = geluProgram(swapped, multiply);
      KernelProgram folded = original;
      cpu_target::RewriteStats stats = cpu_target::optimizeKernelProgram(folded);
      EXPECT_EQ(stats.foldedErfGelu, 1u);
      ASSERT_EQ(folded.kernels.size(), 1u);
      const KernelDesc &k = folded.kernels[0];
      EXPECT_EQ(k.op, "cgc_op.erf_gelu");
      ASSERT_EQ(k.inputs.size(), 4u);
      for (uint32_t i = 0; i < 4; ++i)
        EXPECT_EQ(k.inputs[i]->index, i);
      EXPECT_EQ(k.outputs[0].index, 4u);
      EXPECT_EQ(k.getBool("multiply", false), multiply);
      EXPECT_TRUE(folded.temporaries.empty());
      if (!cpu_target::haveKernelLibrary())
        continue;
      float k1 = multiply ? float(M_SQRT1_2) : float(M_SQRT2);
      std::vector<float> expected = runProgram(original, geluBuffers(k1));
      std::vector<float> got = runProgram(folded, geluBuffers(k1));
      ASSERT_EQ(got.size(), expected.size());
      // The same float operations in the same order: bitwise equal.
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * 4), 0);
      std::vector<float> x = geluBuffers(k1)[0];
      for (int64_t i = 0; i < kCount; ++i)
        EXPECT_NEAR(got[i], 0.5 * x[i] * (1 + std::erf(x[i] / M_SQRT2)), 1e-5) << i;
      // Other constants: the chain's arithmetic, not GELU's.
      std::vector<std::vector<float>> other = geluBuffers(3.0f);
      other[2][0] = -2.0f;
      other[3][0] = 1.5f;
      std::vector<float> e2 = runProgram(original, other), g2 = runProgram(folded, other);
      EXPECT_EQ(std::memcmp(g2.data(), e2.data(), g2.size() * 4), 0);
    }
}

TEST(CpuErfGelu, LeavesChainsItWouldChangeAlone) {
  using S = KernelOperand::Storage;
  const std::vector<int64_t> shape = {kRows, kCols};
  // The erf's result is also read by another layer.
  {
    KernelProgram p = geluProgram(false, false);
    p.bindings.push_back({"z", uint64_t(kCount * 4)});
    p.kernels.push_back(layer("cgc_op.relu", {f32(S::Temporary, 1, shape)},
                              f32(S::Binding, 5, shape)));
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedErfGelu, 0u);
    EXPECT_EQ(p.kernels.size(), 6u);
  }
  // x is overwritten between the erf branch and the product.
  {
    KernelProgram p = geluProgram(false, false);
    p.kernels.insert(p.kernels.begin() + 2,
                     layer("cgc_op.relu", {f32(S::Binding, 2, {})}, f32(S::Binding, 0, shape)));
    std::string error;
    ASSERT_TRUE(p.validate(error)) << error;
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedErfGelu, 0u);
  }
  // The product is not with the erf's own input.
  {
    KernelProgram p = geluProgram(false, false);
    p.kernels[3].inputs[0] = f32(S::Binding, 4, shape);
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedErfGelu, 0u);
  }
  // A scale that is not one element.
  {
    KernelProgram p = geluProgram(false, false);
    p.bindings[3].bytes = kCols * 4;
    p.kernels[4].inputs[1] = f32(S::Binding, 3, {kCols});
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedErfGelu, 0u);
  }
  // float64 is not folded.
  {
    KernelProgram p = geluProgram(false, false);
    for (KernelDesc &k : p.kernels) {
      for (auto &in : k.inputs)
        in->dtype = CGC_DTYPE_FLOAT64;
      k.outputs[0].dtype = CGC_DTYPE_FLOAT64;
    }
    for (auto &b : p.bindings)
      b.bytes *= 2;
    for (auto &t : p.temporaries)
      t.bytes *= 2;
    EXPECT_EQ(cpu_target::optimizeKernelProgram(p).foldedErfGelu, 0u);
  }
}

} // namespace
