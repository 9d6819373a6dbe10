//===- InputScaleTest.cpp - A per-channel scale folded into a convolution -===//
//
// CompiledProgram::create folds mul(x, s) with s one factor per channel into
// the convolution that alone reads the product (conv(x * s, W) =
// conv(x, W * s), input_scale.h) when the plane is large next to the
// convolution's output channels. The folded step must compute what the two
// kernels compute, follow s when it changes between runs (the scaled
// weights are never kept), and the fold must stay off where it does not
// apply.
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

struct Case {
  int64_t channels, outChannels, h, w;
  bool channelsLast; // x and the intermediates
  bool scaleFirst;   // mul(s, x) instead of mul(x, s)
  bool residual;     // conv + add(r)
};

/// Bindings: 0 x, 1 s, 2 weights (constant), 3 bias (constant), 4 r, 5 y.
/// Temporaries: 0 the product, 1 the convolution's result.
KernelProgram scaleProgram(const Case &c, bool productReadTwice = false) {
  const int64_t C = c.channels, O = c.outChannels, H = c.h, W = c.w;
  KernelProgram p;
  test::addF32Binding(p, "x", C * H * W, false);
  test::addF32Binding(p, "s", C, false);
  test::addF32Binding(p, "weights", O * C, true);
  test::addF32Binding(p, "bias", O, true);
  test::addF32Binding(p, "r", O * H * W, false);
  test::addF32Binding(p, "y", O * H * W + (productReadTwice ? C * H * W : 0), false);
  p.temporaries.push_back({uint64_t(C * H * W * 4), 64});
  p.temporaries.push_back({uint64_t(O * H * W * 4), 64});
  auto plane = [&](S storage, uint32_t index, int64_t channels) {
    KernelOperand o = f32(storage, index, {1, channels, H, W});
    if (c.channelsLast)
      o.strides = {H * W * channels, 1, W * channels, channels};
    return o;
  };
  KernelOperand x = plane(S::Binding, 0, C), t = plane(S::Temporary, 0, C);
  KernelOperand s = f32(S::Binding, 1, {1, C, 1, 1});
  p.kernels.push_back(layer("cgc_op.mul", c.scaleFirst ? std::vector{s, x} : std::vector{x, s}, t));
  KernelOperand convOut = c.residual ? plane(S::Temporary, 1, O) : f32(S::Binding, 5, {1, O, H, W});
  p.kernels.push_back(test::pointwiseConvolution(t, f32(S::Binding, 2, {O, C, 1, 1}),
                                                 f32(S::Binding, 3, {O}), convOut));
  if (c.residual)
    p.kernels.push_back(layer("cgc_op.add", {convOut, f32(S::Binding, 4, {1, O, H, W})},
                              f32(S::Binding, 5, {1, O, H, W})));
  if (productReadTwice) {
    // The product is also copied out: it must be computed, no fold.
    KernelOperand copy = f32(S::Binding, 5, {1, C, H, W});
    copy.offset = uint64_t(O * H * W * 4);
    p.kernels.push_back(layer("cgc_op.relu", {t}, copy));
  }
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

/// y = W (x * s) + b (+ r) in double, NCHW.
std::vector<double> expected(const Case &c, const std::vector<std::vector<float>> &b) {
  const int64_t C = c.channels, O = c.outChannels, P = c.h * c.w;
  std::vector<double> y(size_t(O * P));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t q = 0; q < P; ++q) {
      double acc = b[3][size_t(o)];
      for (int64_t ch = 0; ch < C; ++ch) {
        // x in its layout: NCHW or channels-last (position q, channel ch).
        size_t xi = size_t(c.channelsLast ? q * C + ch : ch * P + q);
        acc += double(b[2][size_t(o * C + ch)]) * double(b[0][xi]) * double(b[1][size_t(ch)]);
      }
      if (c.residual)
        acc += b[4][size_t(o * P + q)];
      y[size_t(o * P + q)] = acc;
    }
  return y;
}

void checkRuns(const Case &c, const cpu::CompiledProgram &program, int threads) {
  std::vector<std::vector<float>> buffers;
  for (size_t i = 0; i < 6; ++i)
    buffers.push_back(test::randomFloats(program.program().bindings[i].bytes / 4, unsigned(i + 3)));
  cpu::ThreadPool pool(threads);
  // Twice, with another scale the second time: the weights follow s.
  for (int run = 0; run < 2; ++run) {
    if (run == 1)
      for (float &v : buffers[1])
        v = 2.0f - v;
    std::vector<uint8_t *> bindings;
    for (auto &b : buffers)
      bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
    program.run(bindings, pool);
    std::vector<double> e = expected(c, buffers);
    for (size_t i = 0; i < e.size(); ++i)
      ASSERT_NEAR(buffers[5][i], e[i], 1e-4 * (1.0 + std::fabs(e[i])))
          << "run " << run << " at " << threads << " threads, element " << i;
  }
}

TEST(CpuInputScale, FoldsIntoTheConvolutionAndComputesTheSame) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  const Case cases[] = {
      {32, 16, 40, 40, true, true, false},  // SE block: mul(s, x), channels-last
      {24, 8, 30, 23, true, false, true},   // mul(x, s), residual added after
      {16, 12, 33, 32, false, false, false}, // NCHW
  };
  for (const Case &c : cases) {
    KernelProgram p = scaleProgram(c);
    std::string error;
    auto compiled = cpu::CompiledProgram::create(p, error);
    ASSERT_TRUE(compiled) << error;
    ASSERT_EQ(compiled->steps().size(), 1u);
    EXPECT_EQ(compiled->steps()[0].kernels.size(), c.residual ? 3u : 2u);
    EXPECT_NE(compiled->steps()[0].kernel->describe().find("input scaled per channel"),
              std::string::npos)
        << compiled->steps()[0].kernel->describe();
    checkRuns(c, *compiled, 1);
    checkRuns(c, *compiled, 3);
  }
}

TEST(CpuInputScale, StaysOffWhereItDoesNotApply) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  // A small plane next to the output channels (7 * 7 < 64 * 16), and a
  // product something else reads too: mul and convolution run as they are,
  // with the same results.
  const Case small = {32, 16, 7, 7, true, true, false};
  const Case large = {32, 16, 40, 40, true, true, false};
  for (auto [c, twice] : {std::pair{small, false}, std::pair{large, true}}) {
    KernelProgram p = scaleProgram(c, twice);
    std::string error;
    auto compiled = cpu::CompiledProgram::create(p, error);
    ASSERT_TRUE(compiled) << error;
    ASSERT_GE(compiled->steps().size(), 2u);
    EXPECT_EQ(compiled->steps()[0].kernels, std::vector<size_t>{0});
    for (const auto &step : compiled->steps())
      EXPECT_EQ(step.kernel->describe().find("input scaled"), std::string::npos);
    checkRuns(c, *compiled, 2);
  }
}

} // namespace
