//===- BindPointAliasingTest.cpp - Bind points that share bytes -----------===//
//
// The compiler places a partition's values by its order of invocations, so
// two bind points of one dispatch may share bytes: an input only the first
// invocation reads and an output the last one writes. The CPU
// driver's steps may access them in another order -- a fusion writes the
// output at its anchor's step, which reads the input -- and then it runs one
// of them on a copy (CompiledProgram::layoutFor's shadows). An elementwise
// step's in-place operands and two inputs read together need no copy.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace cgc;

namespace {

using S = KernelOperand::Storage;
using test::f32;
using test::layer;

constexpr int64_t kM = 48, kK = 32, kN = 64;

std::shared_ptr<cpu::CompiledProgram> compile(const KernelProgram &p) {
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  auto compiled = cpu::CompiledProgram::create(p, error);
  EXPECT_TRUE(compiled) << error;
  return compiled;
}

/// y = relu(x . w): the matmul and the relu are two invocations to the
/// compiler (x dies at the first, y is born at the second), one fused step
/// to the driver.
KernelProgram matmulRelu() { return test::matmulReluProgram(kM, kK, kN); }

TEST(BindPointAliasing, AFusedStepThatReadsAndWritesSharedBytesRunsOnACopy) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  auto compiled = compile(matmulRelu());
  ASSERT_TRUE(compiled);
  ASSERT_EQ(compiled->steps().size(), 1u) << "the relu fuses into the matmul";

  std::vector<float> x = test::randomFloats(size_t(kM * kK), 3);
  std::vector<float> w = test::randomFloats(size_t(kK * kN), 4);
  std::vector<float> expected(size_t(kM * kN));
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < kK; ++k)
        acc += double(x[size_t(i * kK + k)]) * w[size_t(k * kN + j)];
      expected[size_t(i * kN + j)] = float(std::max(acc, 0.0));
    }

  // x and y start at the same byte, as the compiler may place them.
  alignas(64) static float shared[kM * kN];
  for (int threads : {1, 2}) {
    std::fill(std::begin(shared), std::end(shared), 0.0f);
    std::memcpy(shared, x.data(), x.size() * 4);
    std::vector<uint8_t *> bindings = {reinterpret_cast<uint8_t *>(shared),
                                       reinterpret_cast<uint8_t *>(w.data()),
                                       reinterpret_cast<uint8_t *>(shared)};
    auto layout = compiled->layoutFor(bindings, false);
    ASSERT_EQ(layout->shadows.size(), 1u);
    // The smaller of the two (x, 6 KiB) is copied in; y stays in place.
    EXPECT_EQ(layout->shadows[0].binding, 0u);
    EXPECT_TRUE(layout->shadows[0].copyIn);
    EXPECT_FALSE(layout->shadows[0].copyOut);
    EXPECT_EQ(layout->shadowedBytes, uint64_t(kM * kK * 4));
    cpu::ThreadPool pool(threads);
    compiled->run(bindings, pool);
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(shared[i], expected[i], 1e-4f * (1 + std::abs(expected[i])))
          << threads << " threads, element " << i;
  }

  // Apart, nothing is copied.
  std::vector<float> y(size_t(kM * kN));
  auto apart = compiled->layoutFor({reinterpret_cast<uint8_t *>(x.data()),
                                    reinterpret_cast<uint8_t *>(w.data()),
                                    reinterpret_cast<uint8_t *>(y.data())},
                                   false);
  EXPECT_TRUE(apart->shadows.empty());
}

TEST(BindPointAliasing, ElementwiseInPlaceAndSharedInputsNeedNoCopy) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  constexpr int64_t n = 1000;
  // b = relu(a) over a's bytes (the compiler's in-place offer); c = a + a2
  // with a2 bound to a's bytes too (two reads).
  KernelProgram p;
  test::addF32Binding(p, "a", n, false);
  test::addF32Binding(p, "b", n, false);
  test::addF32Binding(p, "a2", n, false);
  test::addF32Binding(p, "c", n, false);
  p.kernels.push_back(layer("cgc_op.add", {f32(S::Binding, 0, {n}), f32(S::Binding, 2, {n})},
                            f32(S::Binding, 3, {n})));
  p.kernels.push_back(layer("cgc_op.relu", {f32(S::Binding, 0, {n})}, f32(S::Binding, 1, {n})));
  auto compiled = compile(p);
  ASSERT_TRUE(compiled);

  std::vector<float> a = test::randomFloats(size_t(n), 9);
  std::vector<float> c(static_cast<size_t>(n));
  std::vector<float> original = a;
  uint8_t *at = reinterpret_cast<uint8_t *>(a.data());
  std::vector<uint8_t *> bindings = {at, at, at, reinterpret_cast<uint8_t *>(c.data())};
  EXPECT_TRUE(compiled->layoutFor(bindings, false)->shadows.empty());
  cpu::ThreadPool pool(1);
  compiled->run(bindings, pool);
  for (size_t i = 0; i < size_t(n); ++i) {
    ASSERT_EQ(c[i], original[i] + original[i]) << i;
    ASSERT_EQ(a[i], std::max(original[i], 0.0f)) << i;
  }
}

TEST(BindPointAliasing, AnInternalBindPointIsCopiedNeitherInNorOut) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  // As matmulRelu, with x internal (a value only this partition touches,
  // written by a first kernel): its shadow carries nothing.
  KernelProgram p = matmulRelu();
  p.bindings[0].internal = true;
  test::addF32Binding(p, "x0", kM * kK, false);
  p.kernels.insert(p.kernels.begin(), layer("cgc_op.neg", {f32(S::Binding, 3, {kM, kK})},
                                            f32(S::Binding, 0, {kM, kK})));
  auto compiled = compile(p);
  ASSERT_TRUE(compiled);
  std::vector<float> x0 = test::randomFloats(size_t(kM * kK), 5);
  std::vector<float> w = test::randomFloats(size_t(kK * kN), 6);
  alignas(64) static float shared[kM * kN];
  std::vector<uint8_t *> bindings = {
      reinterpret_cast<uint8_t *>(shared), reinterpret_cast<uint8_t *>(w.data()),
      reinterpret_cast<uint8_t *>(shared), reinterpret_cast<uint8_t *>(x0.data())};
  auto layout = compiled->layoutFor(bindings, false);
  ASSERT_EQ(layout->shadows.size(), 1u);
  EXPECT_EQ(layout->shadows[0].binding, 0u);
  EXPECT_FALSE(layout->shadows[0].copyIn);
  EXPECT_FALSE(layout->shadows[0].copyOut);
  cpu::ThreadPool pool(1);
  compiled->run(bindings, pool);
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < kK; ++k)
        acc -= double(x0[size_t(i * kK + k)]) * w[size_t(k * kN + j)];
      float e = float(std::max(acc, 0.0));
      ASSERT_NEAR(shared[i * kN + j], e, 1e-4f * (1 + std::abs(e))) << i << "," << j;
    }
}

} // namespace

namespace {

TEST(BindPointAliasing, TwoWrittenBindPointsOnCommonBytesAreAnError) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  // x read at steps 0 to 2; y1 = relu(x . w) written at step 0 (fused), y2
  // = neg(x) at step 1; x, y1 and y2 bound to one address. Both outputs
  // need a shadow, and both would be written back over the same bytes.
  constexpr int64_t n = 16;
  KernelProgram p;
  test::addF32Binding(p, "x", kM * kK, false);
  test::addF32Binding(p, "w", kK * n, true);
  test::addF32Binding(p, "y1", kM * n, false);
  test::addF32Binding(p, "y2", kM * kK, false);
  test::addF32Binding(p, "y3", kM * kK, false);
  p.temporaries.push_back({uint64_t(kM * n * 4), 64});
  p.kernels.push_back(layer("cgc_op.matmul",
                            {f32(S::Binding, 0, {kM, kK}), f32(S::Binding, 1, {kK, n})},
                            f32(S::Temporary, 0, {kM, n})));
  p.kernels.push_back(
      layer("cgc_op.relu", {f32(S::Temporary, 0, {kM, n})}, f32(S::Binding, 2, {kM, n})));
  p.kernels.push_back(
      layer("cgc_op.neg", {f32(S::Binding, 0, {kM, kK})}, f32(S::Binding, 3, {kM, kK})));
  p.kernels.push_back(
      layer("cgc_op.relu", {f32(S::Binding, 0, {kM, kK})}, f32(S::Binding, 4, {kM, kK})));
  auto compiled = compile(p);
  ASSERT_TRUE(compiled);
  ASSERT_EQ(compiled->steps().size(), 3u);
  alignas(64) static float shared[kM * kK];
  std::vector<float> w = test::randomFloats(size_t(kK * n), 7), y3(size_t(kM * kK));
  uint8_t *at = reinterpret_cast<uint8_t *>(shared);
  std::vector<uint8_t *> bindings = {at, reinterpret_cast<uint8_t *>(w.data()), at, at,
                                     reinterpret_cast<uint8_t *>(y3.data())};
  try {
    compiled->layoutFor(bindings, false);
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "bind points 'y1' and 'y2' are bound to common bytes and the "
                           "dispatch writes both");
  }
  cpu::ThreadPool pool(1);
  EXPECT_THROW(compiled->run(bindings, pool), std::invalid_argument);
}

} // namespace
