//===- ExpandDepthwiseProgramTest.cpp - One step, no expanded temporary ---===//
//
// CompiledProgram::create runs a 1x1 convolution (and its chain) whose
// result only a depthwise convolution reads as one step with that
// convolution and its chain (createExpandDepthwise): the expanded value is
// then never stored, so it takes no per-run memory. When something else
// reads the expanded value too, the two stay apart. A global average pool
// of the result joins the step that computes it (mergePools). A depthwise
// convolution whose result only a 1x1 projection reads joins that
// projection's step (createDepthwiseBlock). All must compute what the
// layers mean.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "program.h"
#include "sgemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

using namespace cgc;

namespace {

using S = KernelOperand::Storage;
using test::f32;
using test::layer;

constexpr int64_t kIn = 16, kMid = 96, kH = 56, kW = 56, kOH = 28, kOW = 28;

KernelOperand channelsLast(S storage, uint32_t index, int64_t channels, int64_t h, int64_t w) {
  KernelOperand o = f32(storage, index, {1, channels, h, w});
  o.strides = {h * w * channels, 1, w * channels, channels};
  return o;
}

/// A depthwise 3x3 convolution of `channels` channels.
KernelDesc depthwise3x3(KernelOperand in, KernelOperand w, KernelOperand b, KernelOperand out,
                        int64_t stride, std::vector<int64_t> padBegin,
                        std::vector<int64_t> padEnd, int64_t channels) {
  KernelDesc dw = layer("cgc_op.convolution", {std::move(in), std::move(w), std::move(b)},
                        std::move(out));
  dw.setAttr("strides", AttrValue::ofInts({stride, stride}));
  dw.setAttr("dilations", AttrValue::ofInts({1, 1}));
  dw.setAttr("start_padding", AttrValue::ofInts(std::move(padBegin)));
  dw.setAttr("end_padding", AttrValue::ofInts(std::move(padEnd)));
  dw.setAttr("groups", AttrValue::ofInt(channels));
  return dw;
}

/// The packed GEMM runs and the kernel choice `env` is not turned off.
bool fusionOn(const char *env) {
  const char *off = std::getenv(env);
  return cpu::PackedSgemm::available() && !(off && std::string(off) == "0");
}

/// Output (oh, ow) of channel ch of a 3x3 depthwise convolution in double:
/// input x [h][w][c], weights [c][3][3], bias [c], stride `stride`, `pad`
/// rows and columns of zeros before the first.
template <class Values>
double depthwise3x3At(const Values &x, int64_t h, int64_t w, int64_t c,
                      const std::vector<float> &weights, const std::vector<float> &bias,
                      int64_t stride, int64_t pad, int64_t oh, int64_t ow, int64_t ch) {
  double acc = bias[size_t(ch)];
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t ih = oh * stride + i - pad, iw = ow * stride + j - pad;
      if (ih >= 0 && ih < h && iw >= 0 && iw < w)
        acc += double(weights[size_t(ch * 9 + i * 3 + j)]) *
               double(x[size_t((ih * w + iw) * c + ch)]);
    }
  return acc;
}

/// Runs `compiled` on `threads` threads with `buffers` as its bindings.
void runOn(const cpu::CompiledProgram &compiled, std::vector<std::vector<float>> &buffers,
           int threads) {
  cpu::ThreadPool pool(threads);
  std::vector<uint8_t *> bindings;
  for (auto &b : buffers)
    bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
  compiled.run(bindings, pool);
}

/// `p`, after checking that it validates.
KernelProgram validated(KernelProgram p) {
  std::string error;
  EXPECT_TRUE(p.validate(error)) << error;
  return p;
}

KernelDesc relu6(KernelOperand in, KernelOperand out) {
  KernelDesc d = layer("cgc_op.clip", {std::move(in)}, std::move(out));
  d.setAttr("min", AttrValue::ofFloat(0));
  d.setAttr("max", AttrValue::ofFloat(6));
  return d;
}

/// Bindings: 0 x, 1 expansion weights, 2 its bias, 3 depthwise weights,
/// 4 its bias, 5 y, 6 z, 7 m. Temporaries: 0 the expansion, 1 its relu6, 2
/// the depthwise result. y = relu6(dw3x3s2(relu6(conv1x1(x)))), m =
/// global_avg_pool(y) [, z = relu(relu6(conv1x1(x))) when
/// `expandedReadLater`].
KernelProgram blockProgram(bool expandedReadLater) {
  KernelProgram p;
  test::addF32Binding(p, "x", kIn * kH * kW, false);
  test::addF32Binding(p, "w1", kMid * kIn, true);
  test::addF32Binding(p, "b1", kMid, true);
  test::addF32Binding(p, "w2", kMid * 9, true);
  test::addF32Binding(p, "b2", kMid, true);
  test::addF32Binding(p, "y", kMid * kOH * kOW, false);
  test::addF32Binding(p, "z", kMid * kH * kW, false);
  test::addF32Binding(p, "m", kMid, false);
  p.temporaries.push_back({uint64_t(kMid * kH * kW * 4), 64});
  p.temporaries.push_back({uint64_t(kMid * kH * kW * 4), 64});
  p.temporaries.push_back({uint64_t(kMid * kOH * kOW * 4), 64});
  const KernelOperand expanded = channelsLast(S::Temporary, 0, kMid, kH, kW);
  const KernelOperand clipped = channelsLast(S::Temporary, 1, kMid, kH, kW);
  const KernelOperand filtered = channelsLast(S::Temporary, 2, kMid, kOH, kOW);
  p.kernels.push_back(test::pointwiseConvolution(channelsLast(S::Binding, 0, kIn, kH, kW),
                                                 f32(S::Binding, 1, {kMid, kIn, 1, 1}),
                                                 f32(S::Binding, 2, {kMid}), expanded));
  p.kernels.push_back(relu6(expanded, clipped));
  p.kernels.push_back(depthwise3x3(clipped, f32(S::Binding, 3, {kMid, 1, 3, 3}),
                                   f32(S::Binding, 4, {kMid}), filtered, 2, {0, 0}, {1, 1},
                                   kMid));
  p.kernels.push_back(relu6(filtered, channelsLast(S::Binding, 5, kMid, kOH, kOW)));
  p.kernels.push_back(layer("cgc_op.global_avg_pool",
                            {channelsLast(S::Binding, 5, kMid, kOH, kOW)},
                            f32(S::Binding, 7, {1, kMid, 1, 1})));
  if (expandedReadLater)
    p.kernels.push_back(
        layer("cgc_op.relu", {clipped}, channelsLast(S::Binding, 6, kMid, kH, kW)));
  return validated(std::move(p));
}

TEST(CpuExpandDepthwise, OneStepAndNoExpandedTemporary) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  const bool fuses = fusionOn("CGC_CPU_EXPAND_DEPTHWISE");
  for (bool later : {false, true}) {
    SCOPED_TRACE(later ? "expanded value read later" : "only the depthwise reads it");
    std::string error;
    auto compiled = cpu::CompiledProgram::create(blockProgram(later), error);
    ASSERT_TRUE(compiled) << error;
    const char *poolOff = std::getenv("CGC_CPU_DEPTHWISE_POOL");
    // The pool joins the depthwise step whether or not the expansion did.
    const bool pools = cpu::cpuHasAvx512() && !(poolOff && std::string(poolOff) == "0");
    if (!later && fuses) {
      ASSERT_EQ(compiled->steps().size(), pools ? 1u : 2u)
          << compiled->steps()[0].kernel->describe();
      const std::vector<size_t> kernels =
          pools ? std::vector<size_t>{0, 1, 2, 3, 4} : std::vector<size_t>{0, 1, 2, 3};
      EXPECT_EQ(compiled->steps()[0].kernels, kernels);
      EXPECT_NE(compiled->steps()[0].kernel->describe().find("never stored"), std::string::npos)
          << compiled->steps()[0].kernel->describe();
      EXPECT_EQ(compiled->memoryStats().temporaries, 0u);
      EXPECT_EQ(compiled->memoryStats().perRunBytes, 0u);
    } else {
      // conv + relu6, depthwise + relu6 + pool (, relu): the expanded value
      // stored.
      EXPECT_EQ(compiled->steps().size(), (later ? 3u : 2u) + (pools ? 0u : 1u));
      EXPECT_GE(compiled->memoryStats().perRunBytes, uint64_t(kMid * kH * kW * 4));
    }

    std::vector<std::vector<float>> buffers;
    for (size_t b = 0; b < blockProgram(later).bindings.size(); ++b)
      buffers.push_back(test::randomFloats(compiled->program().bindings[b].bytes / 4,
                                           unsigned(b + 21)));
    // The block in double: x is [h][w][c], weights [o][c], dw [c][3][3].
    std::vector<double> mid(size_t(kH * kW * kMid));
    for (int64_t q = 0; q < kH * kW; ++q)
      for (int64_t o = 0; o < kMid; ++o) {
        double acc = buffers[2][size_t(o)];
        for (int64_t c = 0; c < kIn; ++c)
          acc += double(buffers[1][size_t(o * kIn + c)]) * buffers[0][size_t(q * kIn + c)];
        mid[size_t(q * kMid + o)] = std::clamp(acc, 0.0, 6.0);
      }
    for (int threads : {1, 2}) {
      runOn(*compiled, buffers, threads);
      for (int64_t oh = 0; oh < kOH; ++oh)
        for (int64_t ow = 0; ow < kOW; ++ow)
          for (int64_t c = 0; c < kMid; ++c) {
            const double e = std::clamp(
                depthwise3x3At(mid, kH, kW, kMid, buffers[3], buffers[4], 2, 0, oh, ow, c), 0.0,
                6.0);
            ASSERT_NEAR(buffers[5][size_t((oh * kOW + ow) * kMid + c)], e, 1e-4 * (1 + e))
                << threads << " threads, (" << oh << ", " << ow << ") channel " << c;
          }
      for (int64_t c = 0; c < kMid; ++c) {
        double mean = 0;
        for (int64_t q = 0; q < kOH * kOW; ++q)
          mean += buffers[5][size_t(q * kMid + c)];
        mean /= double(kOH * kOW);
        ASSERT_NEAR(buffers[7][size_t(c)], mean, 1e-5 * (1 + mean)) << "mean of channel " << c;
      }
      if (later)
        for (size_t i = 0; i < mid.size(); ++i)
          ASSERT_NEAR(buffers[6][i], mid[i], 1e-4 * (1 + mid[i])) << "z element " << i;
    }
  }
}

/// MobileNetV2's first block: bindings 0 x (32 x 112 x 112), 1 depthwise
/// weights, 2 its bias, 3 projection weights (16 x 32), 4 its bias, 5 y;
/// temporaries 0 the depthwise result, 1 its relu6. y = conv1x1(relu6(
/// dw3x3(x))).
KernelProgram depthwiseProjectProgram() {
  constexpr int64_t c = 32, o = 16, h = 112, w = 112;
  KernelProgram p;
  test::addF32Binding(p, "x", c * h * w, false);
  test::addF32Binding(p, "w1", c * 9, true);
  test::addF32Binding(p, "b1", c, true);
  test::addF32Binding(p, "w2", o * c, true);
  test::addF32Binding(p, "b2", o, true);
  test::addF32Binding(p, "y", o * h * w, false);
  p.temporaries.push_back({uint64_t(c * h * w * 4), 64});
  p.temporaries.push_back({uint64_t(c * h * w * 4), 64});
  const KernelOperand filtered = channelsLast(S::Temporary, 0, c, h, w);
  const KernelOperand clipped = channelsLast(S::Temporary, 1, c, h, w);
  p.kernels.push_back(depthwise3x3(channelsLast(S::Binding, 0, c, h, w),
                                   f32(S::Binding, 1, {c, 1, 3, 3}), f32(S::Binding, 2, {c}),
                                   filtered, 1, {1, 1}, {1, 1}, c));
  p.kernels.push_back(relu6(filtered, clipped));
  p.kernels.push_back(test::pointwiseConvolution(clipped, f32(S::Binding, 3, {o, c, 1, 1}),
                                                 f32(S::Binding, 4, {o}),
                                                 channelsLast(S::Binding, 5, o, h, w)));
  return validated(std::move(p));
}

TEST(CpuDepthwiseProject, OneStepAndNoDepthwiseTemporary) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "the kernel library has no kernels in this build";
  const bool fuses = fusionOn("CGC_CPU_DEPTHWISE_PROJECT");
  std::string error;
  auto compiled = cpu::CompiledProgram::create(depthwiseProjectProgram(), error);
  ASSERT_TRUE(compiled) << error;
  if (fuses) {
    ASSERT_EQ(compiled->steps().size(), 1u);
    EXPECT_EQ(compiled->steps()[0].kernels, (std::vector<size_t>{0, 1, 2}));
    EXPECT_NE(compiled->steps()[0].kernel->describe().find("never stored"), std::string::npos)
        << compiled->steps()[0].kernel->describe();
    EXPECT_EQ(compiled->memoryStats().perRunBytes, 0u);
  } else {
    EXPECT_EQ(compiled->steps().size(), 2u);
  }

  constexpr int64_t c = 32, o = 16, h = 112, w = 112;
  std::vector<std::vector<float>> buffers;
  for (const auto &binding : compiled->program().bindings)
    buffers.push_back(test::randomFloats(binding.bytes / 4, unsigned(buffers.size() + 31)));
  // The block in double: x is [h][w][c], dw [c][3][3], projection [o][c].
  std::vector<double> mid(size_t(h * w * c));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t ch = 0; ch < c; ++ch)
        mid[size_t((y * w + x) * c + ch)] = std::clamp(
            depthwise3x3At(buffers[0], h, w, c, buffers[1], buffers[2], 1, 1, y, x, ch), 0.0,
            6.0);
  for (int threads : {1, 2}) {
    runOn(*compiled, buffers, threads);
    for (int64_t q = 0; q < h * w; ++q)
      for (int64_t n = 0; n < o; ++n) {
        double e = buffers[4][size_t(n)];
        for (int64_t ch = 0; ch < c; ++ch)
          e += double(buffers[3][size_t(n * c + ch)]) * mid[size_t(q * c + ch)];
        ASSERT_NEAR(buffers[5][size_t(q * o + n)], e, 1e-4 * (1 + std::fabs(e)))
            << threads << " threads, position " << q << " channel " << n;
      }
  }
}

} // namespace
