//===- PrepareConstantsTest.cpp - Constants prepared before the first run -===//
//
// CompiledProgram::prepareConstants: with the constants' addresses declared
// final, the kernels prepare what they keep per constant address in one run
// over private memory. It writes nothing the caller can see, happens once
// per set of constant addresses, and the runs after it compute what they
// would have.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "program.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace cgc;

namespace {

using S = KernelOperand::Storage;
using test::f32;
using test::layer;

constexpr int64_t kM = 64, kK = 96, kN = 80;

/// y = relu(x . w) with w constant (the packed GEMM packs it per address).
KernelProgram product() { return test::matmulReluProgram(kM, kK, kN); }

TEST(PrepareConstants, OncePerAddressesNothingVisibleWrittenSameResults) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  std::string error;
  auto compiled = cpu::CompiledProgram::create(product(), error);
  ASSERT_TRUE(compiled) << error;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(kM * kK), w(kK * kN), y(kM * kN, 7.0f), w2;
  for (float &v : x)
    v = dist(rng);
  for (float &v : w)
    v = dist(rng);
  w2 = w;
  for (float &v : w2)
    v = -v;
  const std::vector<float> xBefore = x;
  cpu::ThreadPool pool(2);
  auto bind = [&](std::vector<float> &weights) {
    return std::vector<uint8_t *>{reinterpret_cast<uint8_t *>(x.data()),
                                  reinterpret_cast<uint8_t *>(weights.data()),
                                  reinterpret_cast<uint8_t *>(y.data())};
  };
  // Only the constants matter: the others may be null.
  std::vector<uint8_t *> constantsOnly = {nullptr, reinterpret_cast<uint8_t *>(w.data()), nullptr};
  EXPECT_TRUE(compiled->prepareConstants(constantsOnly, pool));
  EXPECT_EQ(compiled->preparedConstantSets(), 1u);
  EXPECT_FALSE(compiled->prepareConstants(bind(w), pool)) << "the same constants again";
  EXPECT_EQ(compiled->preparedConstantSets(), 1u);
  for (float v : y)
    ASSERT_EQ(v, 7.0f) << "the preparation wrote into a binding";
  EXPECT_EQ(x, xBefore);

  compiled->run(bind(w), pool);
  std::vector<float> prepared = y;
  // Other weights at another address: prepared apart, their own results.
  EXPECT_TRUE(compiled->prepareConstants(bind(w2), pool));
  EXPECT_EQ(compiled->preparedConstantSets(), 2u);
  compiled->run(bind(w2), pool);
  std::vector<float> other = y;

  // The same runs on a program that prepared nothing.
  auto fresh = cpu::CompiledProgram::create(product(), error);
  ASSERT_TRUE(fresh) << error;
  fresh->run(bind(w), pool);
  EXPECT_EQ(prepared, y);
  fresh->run(bind(w2), pool);
  EXPECT_EQ(other, y);
  EXPECT_NE(prepared, other);
  double sum = 0;
  for (float v : prepared)
    sum += v;
  EXPECT_GT(sum, 1.0) << "relu of random products is mostly positive somewhere";
}

TEST(PrepareConstants, NothingForAProgramWithoutConstantsOrWhenConfiguredOff) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  KernelProgram p;
  test::addF32Binding(p, "x", 16, false);
  test::addF32Binding(p, "y", 16, false);
  p.kernels.push_back(
      layer("cgc_op.relu", {f32(S::Binding, 0, {16})}, f32(S::Binding, 1, {16})));
  std::string error;
  auto plain = cpu::CompiledProgram::create(p, error);
  ASSERT_TRUE(plain) << error;
  cpu::ThreadPool pool(1);
  EXPECT_FALSE(plain->prepareConstants({nullptr, nullptr}, pool));

  cpu::KernelConfig off = cpu::KernelConfig::process();
  off.prepareConstants = false;
  auto compiled = cpu::CompiledProgram::create(product(), off, error);
  ASSERT_TRUE(compiled) << error;
  std::vector<float> w(kK * kN, 0.5f);
  EXPECT_FALSE(compiled->prepareConstants({nullptr, reinterpret_cast<uint8_t *>(w.data()), nullptr},
                                          pool));
  EXPECT_EQ(compiled->preparedConstantSets(), 0u);
}

} // namespace
