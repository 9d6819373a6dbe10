//===- InPlaceResidualTest.cpp - Results placed over a dying input --------===//
//
// CompiledProgram::create moves a step's result into the temporary of the
// input its kernel would rather overwrite (Kernel::inPlaceInput: a
// convolution accumulating its residual) when that input dies at the step.
// The program must compute the same, and the move must not happen when the
// input is read later.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "program.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace cgc;

namespace {

using S = KernelOperand::Storage;
using test::f32;
using test::layer;

constexpr int64_t kC = 64, kO = 256, kH = 14, kW = 14, kP = kH * kW;

KernelOperand channelsLast(S storage, uint32_t index, int64_t channels) {
  KernelOperand o = f32(storage, index, {1, channels, kH, kW});
  o.strides = {kP * channels, 1, kW * channels, channels};
  return o;
}

/// Bindings: 0 x (channels-last), 1 weights, 2 bias, 3 r, 4 k (one
/// element), 5 y, 6 z (the residual again, when `residualReadLater`).
/// Temporaries: 0 relu(r), 1 the convolution's result, 2 the sum.
/// y = k * (conv(x) + relu(r)) [, z = relu(r) + 0].
KernelProgram residualProgram(bool residualReadLater) {
  KernelProgram p;
  test::addF32Binding(p, "x", kC * kP, false);
  test::addF32Binding(p, "weights", kO * kC, true);
  test::addF32Binding(p, "bias", kO, true);
  test::addF32Binding(p, "r", kO * kP, false);
  test::addF32Binding(p, "k", 1, false);
  test::addF32Binding(p, "y", kO * kP, false);
  test::addF32Binding(p, "z", kO * kP, false);
  for (int t = 0; t < 3; ++t)
    p.temporaries.push_back({uint64_t(kO * kP * 4), 64});
  KernelOperand res = channelsLast(S::Temporary, 0, kO);
  KernelOperand conv = channelsLast(S::Temporary, 1, kO);
  KernelOperand sum = channelsLast(S::Temporary, 2, kO);
  p.kernels.push_back(layer("cgc_op.relu", {channelsLast(S::Binding, 3, kO)}, res));
  p.kernels.push_back(test::pointwiseConvolution(channelsLast(S::Binding, 0, kC),
                                                 f32(S::Binding, 1, {kO, kC, 1, 1}),
                                                 f32(S::Binding, 2, {kO}), conv));
  p.kernels.push_back(layer("cgc_op.add", {conv, res}, sum));
  // k first: the chain after the add stops here.
  p.kernels.push_back(
      layer("cgc_op.mul", {f32(S::Binding, 4, {}), sum}, channelsLast(S::Binding, 5, kO)));
  if (residualReadLater)
    p.kernels.push_back(layer("cgc_op.relu", {res}, channelsLast(S::Binding, 6, kO)));
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

TEST(CpuInPlace, ResidualResultTakesTheResidualsTemporary) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  for (bool later : {false, true}) {
    SCOPED_TRACE(later ? "residual read later" : "residual dies at the sum");
    KernelProgram p = residualProgram(later);
    std::string error;
    auto compiled = cpu::CompiledProgram::create(p, error);
    ASSERT_TRUE(compiled) << error;
    // relu, convolution + add, mul (, relu).
    ASSERT_EQ(compiled->steps().size(), later ? 4u : 3u);
    const auto &step = compiled->steps()[1];
    ASSERT_EQ(step.kernels, (std::vector<size_t>{1, 2}));
    // The residual (the step's input 3, after x, weights and bias) is the
    // one the kernel would overwrite: oneDNN's sum post-op, or the packed
    // GEMM's add.
    ASSERT_EQ(step.kernel->inPlaceInput(), 3) << step.kernel->describe();
    const KernelOperand &out = step.outputs[0];
    EXPECT_EQ(out.storage, S::Temporary);
    EXPECT_EQ(out.index == 0, !later) << "result in temporary " << out.index;
    EXPECT_EQ(compiled->steps()[2].inputs[1]->index, out.index);

    std::vector<std::vector<float>> buffers;
    for (size_t b = 0; b < p.bindings.size(); ++b)
      buffers.push_back(test::randomFloats(p.bindings[b].bytes / 4, unsigned(b + 11)));
    for (int threads : {1, 2}) {
      cpu::ThreadPool pool(threads);
      for (int run = 0; run < 2; ++run) {
        buffers[4][0] = run == 0 ? 0.5f : -2.0f;
        std::vector<uint8_t *> bindings;
        for (auto &b : buffers)
          bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
        compiled->run(bindings, pool);
        for (int64_t q = 0; q < kP; ++q)
          for (int64_t o = 0; o < kO; ++o) {
            double acc = buffers[2][size_t(o)];
            for (int64_t c = 0; c < kC; ++c)
              acc += double(buffers[1][size_t(o * kC + c)]) * buffers[0][size_t(q * kC + c)];
            const size_t at = size_t(q * kO + o);
            const double residual = std::max(0.0f, buffers[3][at]);
            const double e = buffers[4][0] * (acc + residual);
            ASSERT_NEAR(buffers[5][at], e, 1e-4 * (1 + std::fabs(e)))
                << threads << " threads, run " << run << ", position " << q << " channel " << o;
            if (later)
              ASSERT_EQ(buffers[6][at], float(residual));
          }
      }
    }
  }
}

} // namespace
