//===- ConvMatMulTest.cpp - Convolutions and matrix products --------------===//

#include "KernelTestUtil.h"

#include "batched_gemm.h" // kBatchedPackedMinRows
#include "sgemm.h"

#include "common.h" // cpuHasAvx512

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

struct ConvCase {
  int64_t n, c, m, groups;
  std::vector<int64_t> in, kernel, stride, dilation, padB, padE;
  bool bias = true;
  std::vector<int64_t> outPad = {}; // conv_transpose
};

std::vector<int64_t> convOut(const ConvCase &c, bool transpose) {
  std::vector<int64_t> s = {c.n, c.m};
  for (size_t i = 0; i < c.in.size(); ++i) {
    int64_t ext = c.dilation[i] * (c.kernel[i] - 1) + 1;
    if (!transpose)
      s.push_back((c.in[i] + c.padB[i] + c.padE[i] - ext) / c.stride[i] + 1);
    else
      s.push_back(c.stride[i] * (c.in[i] - 1) + (c.outPad.empty() ? 0 : c.outPad[i]) + ext -
                  c.padB[i] - c.padE[i]);
  }
  return s;
}

/// Why a test of an AVX-512 kernel cannot run here: no AVX-512, or one of
/// `knobs` (kernel choices, docs/runtime.md) set to anything but 1. Empty
/// if it can.
std::string avx512KernelOff(std::initializer_list<const char *> knobs) {
  if (!cpuHasAvx512())
    return "no AVX-512";
  for (const char *name : knobs)
    if (const char *env = std::getenv(name); env && std::string(env) != "1")
      return std::string(name) + "=" + env;
  return "";
}

/// The descriptor of case `c` (a convolution, or conv_transpose), with the
/// bias operand when `b` is given.
Desc convCaseDesc(const ConvCase &c, const Tensor &x, const Tensor &w, const Tensor *b,
                  const Tensor &y, bool transpose = false) {
  Desc d(transpose ? "cgc_op.conv_transpose" : "cgc_op.convolution");
  d.in(x).in(w);
  if (b)
    d.in(*b);
  d.out(y).ints("strides", c.stride).ints("dilations", c.dilation).ints("start_padding", c.padB)
      .ints("end_padding", c.padE).i("groups", c.groups);
  if (transpose)
    d.ints("output_padding", c.outPad.empty() ? std::vector<int64_t>(c.in.size(), 0) : c.outPad);
  return d;
}

/// What the reference evaluator computes for case `c` (in double).
std::vector<double> convOracle(const Tensor &x, const Tensor &w, const Tensor *b,
                               const ConvCase &c, const std::vector<int64_t> &outShape) {
  Tensor y(x.dtype(), outShape);
  return referenceValues(convCaseDesc(c, x, w, b, y), {&x, &w, b});
}

std::vector<double> convTransposeOracle(const Tensor &x, const Tensor &w, const Tensor *b,
                                        const ConvCase &c, const std::vector<int64_t> &outShape) {
  Tensor y(x.dtype(), outShape);
  return referenceValues(convCaseDesc(c, x, w, b, y, true), {&x, &w, b});
}

std::vector<ConvCase> convCases() {
  return {
      // n, c, m, groups, in, kernel, stride, dilation, padB, padE
      {1, 8, 16, 1, {9, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 6, 4, 1, {8, 8}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},       // 1x1 direct
      {1, 5, 7, 1, {11, 9}, {3, 2}, {2, 3}, {2, 1}, {1, 0}, {2, 1}},      // strides, dilation, asym pad
      {1, 8, 8, 8, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},     // depthwise
      {1, 6, 9, 3, {7, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}},       // grouped
      {2, 3, 5, 1, {17}, {4}, {2}, {2}, {3}, {1}},                         // 1-D
      {1, 4, 6, 2, {5, 6, 4}, {3, 2, 3}, {1, 2, 1}, {1, 1, 1}, {1, 0, 1}, {1, 1, 0}}, // 3-D
      {1, 3, 4, 1, {7, 7}, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false}, // no bias, 1x1 output
      // 1x1 stride 2 on NCHW (subsampled, then GEMM) and 1x1 on a small
      // plane (blocked).
      {1, 6, 10, 1, {24, 22}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {2, 16, 24, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      // Big enough (>= 4 MFLOP) to be split across the pool: 7x7 planes by
      // output channels, larger planes by row bands, the 1x1 GEMM path by
      // output channels, a batch by images.
      {1, 64, 128, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 32, 1, {20, 21}, {3, 3}, {1, 2}, {1, 1}, {1, 0}, {1, 2}},
      {1, 64, 64, 1, {24, 24}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {4, 16, 24, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Pointwise (the packed GEMM on channels-last operands): 1-D and 3-D,
      // no bias with channel counts that leave tails in every tile shape,
      // and a batch split across the pool by plane rows.
      {2, 5, 17, 1, {13}, {1}, {1}, {1}, {0}, {0}},
      {1, 7, 33, 1, {3, 4, 5}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 20, 70, 1, {9, 11}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false},
      {3, 48, 100, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      // Depthwise on planes large enough for the direct kernel: narrow rows
      // (flattened), stride 2 with dilation, wide rows.
      {1, 6, 6, 6, {20, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 4, 4, 4, {17, 150}, {3, 5}, {2, 2}, {1, 2}, {1, 2}, {0, 1}},
      {1, 3, 3, 3, {30, 140}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, false},
  };
}

double convAbsTol(cgc_dtype_t dt) {
  switch (dt) {
  case CGC_DTYPE_FLOAT32: return 1e-4;
  case CGC_DTYPE_FLOAT64: return 1e-10;
  case CGC_DTYPE_FLOAT16: return 3e-2;
  default: return 1.5e-1;
  }
}

void checkConv(const ConvCase &c, cgc_dtype_t dt, bool transpose, Layout inLayout,
               Layout outLayout, bool constantWeights, std::mt19937 &rng) {
  std::vector<int64_t> xs = {c.n, c.c};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  std::vector<int64_t> ws = transpose ? std::vector<int64_t>{c.c, c.m / c.groups}
                                      : std::vector<int64_t>{c.m, c.c / c.groups};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  Tensor x(dt, xs, inLayout), w(dt, ws), b(dt, {c.m});
  fillRandom(x, rng, -2, 2);
  fillRandom(w, rng, -1, 1);
  fillRandom(b, rng, -1, 1);
  std::vector<int64_t> outShape = convOut(c, transpose);
  Tensor y(dt, outShape, outLayout);
  Desc d = convCaseDesc(c, x, w, c.bias ? &b : nullptr, y, transpose);
  KernelOptions options;
  options.constantInputs = {false, constantWeights, constantWeights};
  auto k = make(d, options);
  if (!k)
    return;
  std::vector<const Tensor *> ins = {&x, &w};
  if (c.bias)
    ins.push_back(&b);
  std::string what = std::string(transpose ? "conv_transpose " : "convolution ") + dtypeStr(dt) +
                     " " + layoutName(inLayout) + "->" + layoutName(outLayout) + " [" +
                     k->describe() + "]";
  // Winograd's F(4x4,3x3) rounds more than a direct sum: it is held to
  // 2e-5 of the result's largest element (WinogradOnThePackedGemm...).
  const bool f4x4 = k->describe().find("Winograd F(4x4,3x3)") != std::string::npos;
  for (int rep = 0; rep < 2; ++rep) {
    runKernel(*k, ins, {&y}, rep ? pool1() : pool3());
    std::vector<double> e = transpose ? convTransposeOracle(x, w, c.bias ? &b : nullptr, c, outShape)
                                      : convOracle(x, w, c.bias ? &b : nullptr, c, outShape);
    double abs = convAbsTol(dt);
    for (double v : e)
      abs = f4x4 ? std::max(abs, 2e-5 * std::abs(v)) : abs;
    EXPECT_TRUE(closeTo(y, e, relTol(dt) * 4, abs, what + " run " + std::to_string(rep)));
    if (!constantWeights) // weights that change between runs are re-read
      fillRandom(w, rng, -1, 1);
  }
}

double convFlops(const ConvCase &c) {
  double f = 2.0 * double(c.n * c.m * (c.c / c.groups));
  for (size_t i = 0; i < c.kernel.size(); ++i)
    f *= double(c.kernel[i]) * double(c.in[i]) / double(c.stride[i]);
  return f;
}

TEST(Convolution, EveryCaseFloatTypesAndLayouts) {
  std::mt19937 rng(40);
  for (const ConvCase &c : convCases())
    for (cgc_dtype_t dt : kFloatTypes) {
      if (convFlops(c) > 2e6 && dt != CGC_DTYPE_FLOAT32) {
        // The split cases exercise the oneDNN paths; other dtypes are
        // covered by the small cases (and the naive oracle is slow).
        continue;
      }
      checkConv(c, dt, false, Layout::Contiguous, Layout::Contiguous, false, rng);
      checkConv(c, dt, false, Layout::Contiguous, Layout::Contiguous, true, rng);
      if (dt == CGC_DTYPE_FLOAT32 || dt == CGC_DTYPE_FLOAT64) {
        checkConv(c, dt, false, Layout::ChannelsLast, Layout::ChannelsLast, true, rng);
        checkConv(c, dt, false, Layout::Padded, Layout::Transposed, false, rng);
        checkConv(c, dt, false, Layout::Reversed, Layout::Contiguous, false, rng);
      }
    }
}

// Float32 1x1 convolutions on channels-last operands with constant weights
// run on the packed GEMM where the CPU has AVX-512 (their results are
// checked by EveryCaseFloatTypesAndLayouts); weights that are not constant,
// or NCHW operands, stay on oneDNN.
TEST(Convolution, PointwiseChannelsLastRunsOnThePackedGemm) {
  if (!cpuHasAvx512())
    GTEST_SKIP() << "no AVX-512";
  const ConvCase c{3, 48, 100, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
  for (Layout layout : {Layout::ChannelsLast, Layout::Contiguous})
    for (bool constant : {true, false}) {
      Tensor x(CGC_DTYPE_FLOAT32, {3, 48, 14, 14}, layout), w(CGC_DTYPE_FLOAT32, {100, 48, 1, 1});
      Tensor b(CGC_DTYPE_FLOAT32, {100}), y(CGC_DTYPE_FLOAT32, {3, 100, 14, 14}, layout);
      KernelOptions options;
      options.constantInputs = {false, constant, constant};
      auto k = make(convCaseDesc(c, x, w, &b, y), options);
      ASSERT_TRUE(k);
      const bool packed = k->describe().find("register tiles") != std::string::npos;
      const bool env = std::getenv("CGC_CPU_PACKED_GEMM") &&
                       std::string(std::getenv("CGC_CPU_PACKED_GEMM")) == "0";
      EXPECT_EQ(packed, layout == Layout::ChannelsLast && !env) << k->describe();
      if (packed)
        EXPECT_NE(k->describe().find(constant ? "packed once" : "packed each run"),
                  std::string::npos)
            << k->describe();
    }
}

TEST(Convolution, StridedPointwiseChannelsLastRunsOnThePackedGemm) {
  // A strided 1x1 convolution without padding on channels-last operands (a
  // ResNet's downsample convolution) gathers the positions it reads and
  // runs on the packed GEMM: strides 2 and 3x2, a batch of two, odd
  // planes, no bias, weights constant or read afresh, on 3 threads and on
  // 1 (checkConv; with a chain: Fusion.StridedPointwiseTakesItsChain).
  // NCHW operands keep oneDNN's in-place GEMM path.
  if (std::string off = avx512KernelOff(
          {"CGC_CPU_SUBSAMPLED_POINTWISE", "CGC_CPU_PACKED_GEMM"});
      !off.empty())
    GTEST_SKIP() << off;
  std::mt19937 rng(46);
  const std::vector<ConvCase> cases = {
      // n, c, m, groups, in, kernel, stride, dilation, padB, padE
      {1, 64, 128, 1, {28, 28}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {2, 48, 40, 1, {15, 17}, {1, 1}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, false},
  };
  for (const ConvCase &c : cases)
    for (Layout layout : {Layout::ChannelsLast, Layout::Contiguous}) {
      Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, layout);
      Tensor w(CGC_DTYPE_FLOAT32, {c.m, c.c, 1, 1}), b(CGC_DTYPE_FLOAT32, {c.m});
      Tensor y(CGC_DTYPE_FLOAT32, convOut(c, false), layout);
      auto k = make(convCaseDesc(c, x, w, c.bias ? &b : nullptr, y));
      ASSERT_TRUE(k);
      const bool packed = k->describe().find("register tiles") != std::string::npos &&
                          k->describe().find("input subsampled") != std::string::npos;
      EXPECT_EQ(packed, layout == Layout::ChannelsLast) << k->describe();
      for (bool constant : {true, false})
        checkConv(c, CGC_DTYPE_FLOAT32, false, layout, layout, constant, rng);
    }
}

TEST(Convolution, FewInputChannelsRunDirect) {
  // A CNN's stem (3 colour channels; 1 and 4 too) into channels-last
  // outputs of 6 to 128 channels (one or several blocks of up to 64, the
  // last vector partial or not): the
  // direct kernel of stem.h, input NCHW or channels-last read in place;
  // padding, strides, dilation, border columns, batch 2, without a bias,
  // weights constant or read afresh; on 3 threads and on 1.
  std::mt19937 rng(31);
  const std::vector<ConvCase> cases = {
      // n, c, m, groups, in, kernel, stride, dilation, padB, padE
      {1, 3, 32, 1, {30, 29}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},  // MobileNetV2
      {1, 3, 64, 1, {40, 37}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}},  // ResNet-50
      {2, 1, 16, 1, {19, 23}, {5, 5}, {1, 1}, {2, 2}, {4, 1}, {2, 3}},  // dilation, asymmetric
      {1, 4, 48, 1, {12, 33}, {3, 2}, {2, 1}, {1, 1}, {1, 0}, {1, 1}},  // 3 vectors
      {1, 3, 128, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false}, // two blocks
      {1, 2, 16, 1, {3, 4}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},   // no interior column
      // Output channels that leave a partial vector (LeNet's 1->6,
      // ShuffleNet's 3->24, 70 = one full block and a partial one).
      {1, 1, 6, 1, {32, 32}, {5, 5}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 3, 24, 1, {21, 22}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {2, 3, 70, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
  };
  const bool env = std::getenv("CGC_CPU_STEM_CONVOLUTION") &&
                   std::string(std::getenv("CGC_CPU_STEM_CONVOLUTION")) == "0";
  for (const ConvCase &c : cases)
    for (Layout in : {Layout::Contiguous, Layout::ChannelsLast})
      for (bool constant : {true, false}) {
        checkConv(c, CGC_DTYPE_FLOAT32, false, in, Layout::ChannelsLast, constant, rng);
        // checkConv's kernel, described: the direct one where it can run.
        std::vector<int64_t> xs = {c.n, c.c, c.in[0], c.in[1]};
        Tensor x(CGC_DTYPE_FLOAT32, xs, in), w(CGC_DTYPE_FLOAT32, {c.m, c.c, c.kernel[0], c.kernel[1]});
        Tensor b(CGC_DTYPE_FLOAT32, {c.m}), y(CGC_DTYPE_FLOAT32, convOut(c, false), Layout::ChannelsLast);
        auto k = make(convCaseDesc(c, x, w, c.bias ? &b : nullptr, y));
        ASSERT_TRUE(k);
        EXPECT_EQ(k->describe().find("input channels read in place") != std::string::npos,
                  cpuHasAvx512() && !env)
            << k->describe();
      }
}

TEST(Convolution, LargeDepthwiseUsesTheDirectKernel) {
  std::mt19937 rng(44);
  ConvCase c{1, 8, 8, 8, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  Tensor x(CGC_DTYPE_FLOAT32, {1, 8, 40, 40}), w(CGC_DTYPE_FLOAT32, {8, 1, 3, 3}),
      b(CGC_DTYPE_FLOAT32, {8});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -1, 1);
  fillRandom(b, rng, -1, 1);
  Tensor y(CGC_DTYPE_FLOAT32, {1, 8, 40, 40});
  auto k = make(Desc("cgc_op.convolution").in(x).in(w).in(b).out(y).ints("strides", c.stride)
                    .ints("dilations", c.dilation).ints("start_padding", c.padB)
                    .ints("end_padding", c.padE).i("groups", 8));
  EXPECT_NE(k->describe().find("direct depthwise"), std::string::npos) << k->describe();
  runKernel(*k, {&x, &w, &b}, {&y}, pool3());
  EXPECT_TRUE(closeTo(y, convOracle(x, w, &b, c, y.shape()), 1e-5, 1e-5, "direct depthwise"));
}

TEST(Convolution, ChannelsLastDepthwiseDirectKernel) {
  // Depthwise convolutions on channels-last float32 operands with kernels 3
  // or 5 wide and stride 1 or 2 run on the direct AVX-512 kernel
  // (depthwise.cpp) where the CPU has AVX-512: asymmetric padding, channel
  // counts with a partial last vector and below 16, rows narrower than a
  // register block, batches, vertical dilation, kernel rows entirely in the
  // padding, no bias, rows whose every column is a border column; pieces
  // across 3 threads and whole on 1 (checkConv runs both), constant weights
  // prepared once and weights re-read on every run.
  std::mt19937 rng(46);
  std::vector<ConvCase> cases = {
      // n, c, m, groups, in, kernel, stride, dilation, padB, padE
      {1, 32, 32, 32, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 40, 40, 40, {11, 13}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 0}},
      {1, 24, 24, 24, {14, 15}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
      {1, 20, 20, 20, {15, 16}, {5, 5}, {2, 2}, {1, 1}, {1, 2}, {2, 1}},
      {2, 5, 5, 5, {6, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},      // W 3 < block
      {1, 7, 7, 7, {9, 10}, {3, 3}, {1, 1}, {2, 1}, {2, 1}, {2, 1}},     // dilation along H
      {1, 16, 16, 16, {9, 40}, {7, 5}, {3, 1}, {1, 1}, {3, 2}, {1, 2}, false},
      {1, 16, 16, 16, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {3, 3}, {3, 3}},   // rows all padding
      {2, 80, 80, 80, {9, 18}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}},  // bands across images
      {2, 48, 48, 48, {32, 32}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}}, // split (2.5M MACs)
      {1, 200, 200, 200, {12, 33}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, // channel groups
      {1, 100, 100, 100, {6, 6}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},   // borders only
  };
  for (const ConvCase &c : cases) {
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, Layout::ChannelsLast);
    Tensor w(CGC_DTYPE_FLOAT32, {c.m, 1, c.kernel[0], c.kernel[1]}), b(CGC_DTYPE_FLOAT32, {c.m});
    Tensor y(CGC_DTYPE_FLOAT32, convOut(c, false), Layout::ChannelsLast);
    Desc d = convCaseDesc(c, x, w, c.bias ? &b : nullptr, y);
    auto k = make(d);
    ASSERT_TRUE(k);
    EXPECT_EQ(k->describe().find("channels-last AVX-512") != std::string::npos, cpuHasAvx512())
        << k->describe();
    checkConv(c, CGC_DTYPE_FLOAT32, false, Layout::ChannelsLast, Layout::ChannelsLast, true, rng);
    checkConv(c, CGC_DTYPE_FLOAT32, false, Layout::ChannelsLast, Layout::ChannelsLast, false, rng);
  }
}

TEST(Convolution, ChannelsLastDepthwiseGenericTaps) {
  // Other widths, strides and dilations along W stay on oneDNN (faster than
  // the direct kernel's generic segments), except when the fused chain has
  // no oneDNN post-op form: then the direct kernel runs them. A cast to
  // float32 is such a chain and changes no value, so the fused result is the
  // convolution's: checked against the oracle on 1 and 3 threads.
  std::mt19937 rng(47);
  std::vector<ConvCase> cases = {
      {1, 7, 7, 7, {9, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}},     // dilation 2
      {1, 16, 16, 16, {5, 40}, {3, 5}, {1, 3}, {1, 1}, {1, 2}, {1, 2}},  // W stride 3
      {1, 33, 33, 33, {7, 7}, {7, 7}, {1, 1}, {1, 1}, {3, 3}, {3, 3}, false},
      {2, 20, 20, 20, {12, 25}, {3, 9}, {2, 1}, {1, 2}, {1, 8}, {0, 7}}, // 9 wide, dilated
  };
  for (const ConvCase &c : cases) {
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, Layout::ChannelsLast);
    Tensor w(CGC_DTYPE_FLOAT32, {c.m, 1, c.kernel[0], c.kernel[1]}), b(CGC_DTYPE_FLOAT32, {c.m});
    fillRandom(x, rng, -2, 2);
    fillRandom(w, rng, -1, 1);
    fillRandom(b, rng, -1, 1);
    std::vector<int64_t> os = convOut(c, false);
    Tensor y(CGC_DTYPE_FLOAT32, os, Layout::ChannelsLast);
    Desc d = convCaseDesc(c, x, w, c.bias ? &b : nullptr, y);
    auto plain = make(d);
    ASSERT_TRUE(plain);
    EXPECT_NE(plain->describe().find("oneDNN"), std::string::npos) << plain->describe();
    KernelDesc cast =
        Desc("cgc_op.cast").in(y).out(y).attr("to", AttrValue::ofDType(CGC_DTYPE_FLOAT32)).get();
    KernelOptions options;
    options.constantInputs = {false, true, true};
    std::string reason;
    std::unique_ptr<Kernel> fused = createFusedKernel(d.get(), {cast}, options, reason);
    if (!cpuHasAvx512()) {
      EXPECT_FALSE(fused);
      continue;
    }
    ASSERT_TRUE(fused) << reason;
    EXPECT_NE(fused->describe().find("generic taps"), std::string::npos) << fused->describe();
    std::vector<const Tensor *> ins = {&x, &w};
    if (c.bias)
      ins.push_back(&b);
    std::vector<double> expected = convOracle(x, w, c.bias ? &b : nullptr, c, os);
    for (ThreadPool *pool : {&pool1(), &pool3()}) {
      Tensor out(CGC_DTYPE_FLOAT32, os, Layout::ChannelsLast);
      runKernel(*fused, ins, {&out}, *pool);
      EXPECT_TRUE(closeTo(out, expected, 4 * relTol(CGC_DTYPE_FLOAT32), 1e-4,
                          fused->describe() + " on " + std::to_string(pool->size())));
    }
  }
}

TEST(Convolution, TransposeEveryCase) {
  std::mt19937 rng(41);
  std::vector<ConvCase> cases = {
      {1, 4, 6, 1, {5, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, {1, 1}},
      {2, 4, 6, 2, {4, 3}, {2, 3}, {3, 2}, {1, 2}, {0, 1}, {1, 0}, true, {2, 0}},
      {1, 3, 2, 1, {6}, {4}, {2}, {1}, {1}, {2}, false, {1}},
      {1, 2, 4, 1, {3, 4, 2}, {2, 2, 2}, {2, 1, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, true, {0, 0, 1}},
      {1, 6, 6, 6, {5, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, {1, 1}}, // depthwise
      {1, 32, 64, 1, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 1}, true, {1, 0}}, // channel split
  };
  for (const ConvCase &c : cases)
    for (cgc_dtype_t dt : kFloatTypes) {
      checkConv(c, dt, true, Layout::Contiguous, Layout::Contiguous, false, rng);
      checkConv(c, dt, true, Layout::Contiguous, Layout::Contiguous, true, rng);
    }
}

TEST(Convolution, CachedWeightsFollowTheAddress) {
  // Constant weights are prepared once per address: two weight buffers at
  // two addresses through one kernel give two different, correct results.
  std::mt19937 rng(42);
  ConvCase c = convCases()[0];
  Tensor x(CGC_DTYPE_FLOAT32, {1, 8, 9, 10}), w1(CGC_DTYPE_FLOAT32, {16, 8, 3, 3}),
      w2(CGC_DTYPE_FLOAT32, {16, 8, 3, 3}), b(CGC_DTYPE_FLOAT32, {16});
  fillRandom(x, rng, -1, 1);
  fillRandom(w1, rng, -1, 1);
  fillRandom(w2, rng, -1, 1);
  fillRandom(b, rng, -1, 1);
  std::vector<int64_t> os = convOut(c, false);
  Tensor y(CGC_DTYPE_FLOAT32, os);
  KernelOptions options;
  options.constantInputs = {false, true, true};
  auto k = make(Desc("cgc_op.convolution").in(x).in(w1).in(b).out(y).ints("strides", c.stride)
                    .ints("dilations", c.dilation).ints("start_padding", c.padB)
                    .ints("end_padding", c.padE),
                options);
  for (int rep = 0; rep < 2; ++rep)
    for (Tensor *w : {&w1, &w2}) {
      runKernel(*k, {&x, w, &b}, {&y}, pool3());
      EXPECT_TRUE(closeTo(y, convOracle(x, *w, &b, c, os), 1e-5, 1e-4, "weights by address"));
    }
}

TEST(Convolution, ResNetStyle3x3PicksBlockedOneDnn) {
  std::mt19937 rng(43);
  ConvCase c{1, 32, 32, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  Tensor x(CGC_DTYPE_FLOAT32, {1, 32, 28, 28}), w(CGC_DTYPE_FLOAT32, {32, 32, 3, 3}),
      b(CGC_DTYPE_FLOAT32, {32});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.1, 0.1);
  fillRandom(b, rng, -1, 1);
  Tensor y(CGC_DTYPE_FLOAT32, {1, 32, 28, 28});
  KernelOptions options;
  options.constantInputs = {false, true, true};
  auto k = make(Desc("cgc_op.convolution").in(x).in(w).in(b).out(y).ints("strides", c.stride)
                    .ints("dilations", c.dilation).ints("start_padding", c.padB)
                    .ints("end_padding", c.padE),
                options);
  EXPECT_NE(k->describe().find("oneDNN"), std::string::npos) << k->describe();
  EXPECT_NE(k->describe().find("reordered"), std::string::npos) << k->describe();
  runKernel(*k, {&x, &w, &b}, {&y}, pool3());
  EXPECT_TRUE(closeTo(y, convOracle(x, w, &b, c, y.shape()), 1e-5, 1e-4, "3x3 blocked"));
}

TEST(Convolution, Winograd3x3MatchesTheOracle) {
  // 3x3 stride-1 float32 convolutions with >= 32 channels and >= 10 MFLOP
  // run on oneDNN's Winograd kernels (unless CGC_CPU_WINOGRAD=0): the
  // results stay within the float32 tolerance of the double oracle for
  // whole runs (pool1) and every way pool3 splits them: the interior rows
  // of a tall plane in one band per thread (88 rows: 29, 29 and 28 that
  // read no padding, Winograd where oneDNN takes them) and each edge row a
  // direct piece; output-channel blocks instead where oneDNN runs those
  // bands direct and the result is NCHW (32 -> 96 @88x9); channel blocks
  // of >= 32 channels on shorter planes (128 -> 96 @7); direct short bands
  // where the blocks would be narrower (128 -> 32 @28); batches, odd sizes,
  // asymmetric padding, channels-last operands, and problems too small for
  // Winograd (the batch of two, 4.3 MFLOP). (oneDNN 2.6 has no Winograd kernel for asymmetric padding:
  // those run on the direct kernel.) oneDNN's F(4x4,3x3) kernel is taken
  // only with >= 128 channels each way. (Channels-last operands run
  // Winograd's F(4x4,3x3) on the packed GEMM instead, with the tolerance of
  // WinogradOnThePackedGemmMatchesTheOracle.)
  std::mt19937 rng(45);
  const char *env = std::getenv("CGC_CPU_WINOGRAD");
  bool enabled = !(env && std::string(env) == "0");
  std::vector<ConvCase> cases = {
      {1, 64, 64, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 48, 1, {19, 23}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 32, 32, 1, {9, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
      {1, 128, 96, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 48, 1, {88, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 96, 1, {88, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 128, 32, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
  for (const ConvCase &c : cases) {
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}), w(CGC_DTYPE_FLOAT32, {c.m, c.c, 3, 3});
    Tensor y(CGC_DTYPE_FLOAT32, convOut(c, false));
    auto k = make(convCaseDesc(c, x, w, nullptr, y));
    ASSERT_TRUE(k);
    const std::string what = k->describe();
    const bool winograd = what.find("Winograd") != std::string::npos;
    if (!enabled || &c == &cases.front()) // ResNet-50's shape: always Winograd when on
      EXPECT_EQ(winograd, enabled) << what;
    if (convFlops(c) < 10e6) // too small: the reorders would cost more
      EXPECT_FALSE(winograd) << what;
    if (winograd && std::min(c.c, c.m) < 128)
      EXPECT_NE(what.find("jit_fp32_wino_2x3"), std::string::npos) << what;
    checkConv(c, CGC_DTYPE_FLOAT32, false, Layout::Contiguous, Layout::Contiguous, false, rng);
    checkConv(c, CGC_DTYPE_FLOAT32, false, Layout::ChannelsLast, Layout::ChannelsLast, true, rng);
  }
}

TEST(Convolution, WinogradOnThePackedGemmMatchesTheOracle) {
  // 3x3 stride-1 float32 convolutions on channels-last operands with >= 16
  // channels each way and >= 16 output tiles of 4x4 (at least half of
  // their pixels outputs) run Winograd's F(4x4,3x3) on the packed GEMM
  // (winograd.h), smaller planes F(2x2,3x3) where 2x2 tiles qualify; on 1
  // thread and on 3 (bands of tiles per thread, or each step split its own
  // way where the transformed weights outweigh the tiles): channel counts
  // that leave a partial vector (70 in, 72 out), planes that leave partial
  // tiles (23x27), asymmetric and no padding, a batch of two, no bias, a
  // plane of more bands than one thread takes at once,
  // weights constant or read afresh. F(4x4,3x3) rounds more than a direct
  // sum (its transforms scale by up to 8): each element is held to 1e-4 of
  // itself plus 2e-5 of the result's largest (about 5e-6 measured); a wrong
  // transform or a misplaced tile is off by the order of the result.
  // Smaller problems and NCHW operands keep oneDNN.
  if (std::string off =
          avx512KernelOff({"CGC_CPU_WINOGRAD_GEMM", "CGC_CPU_PACKED_GEMM"});
      !off.empty())
    GTEST_SKIP() << off;
  std::mt19937 rng(48);
  const std::vector<ConvCase> cases = {
      // n, c, m, groups, in, kernel, stride, dilation, padB, padE
      {1, 64, 64, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 70, 72, 1, {23, 27}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 96, 64, 1, {26, 30}, {3, 3}, {1, 1}, {1, 1}, {0, 2}, {2, 0}},
      {1, 64, 80, 1, {30, 30}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 64, 64, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
      // Bands taken in chunks that stay in cache (10 bands of 18 tiles, 8
      // per chunk on one thread: a chunk of 8, then of 2).
      {1, 32, 16, 1, {40, 72}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Transformed weights larger than the transformed tiles: the
      // products split across the pool by point, not by bands.
      {1, 256, 192, 1, {13, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      // Dilated (a segmentation network's): each phase of the output tiled
      // on its own; phases of unequal size (27 rows in 4), padding other
      // than the dilation.
      {1, 64, 64, 1, {28, 28}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}},
      {1, 48, 40, 1, {27, 30}, {3, 3}, {1, 1}, {4, 3}, {4, 2}, {4, 4}},
      // F(2x2,3x3): a 7x9 plane (6 tiles of 4x4, 20 of 2x2), and a dilated
      // 10x10 whose 5x5 phases fill 39% of 4x4 tiles, 69% of 2x2 ones.
      {1, 64, 48, 1, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {1, 32, 32, 1, {10, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}},
  };
  for (const ConvCase &c : cases) {
    const bool small = &c >= &cases[cases.size() - 2];
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, Layout::ChannelsLast);
    Tensor w(CGC_DTYPE_FLOAT32, {c.m, c.c, 3, 3}), b(CGC_DTYPE_FLOAT32, {c.m});
    fillRandom(w, rng, -1, 1);
    fillRandom(b, rng, -1, 1);
    const std::vector<int64_t> shape = convOut(c, false);
    for (bool constant : {true, false}) {
      Tensor y(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
      KernelOptions options;
      options.constantInputs = {false, constant, constant};
      auto k = make(convCaseDesc(c, x, w, c.bias ? &b : nullptr, y), options);
      ASSERT_TRUE(k);
      EXPECT_NE(k->describe().find(small ? "Winograd F(2x2,3x3) on the packed GEMM"
                                         : "Winograd F(4x4,3x3) on the packed GEMM"),
                std::string::npos)
          << k->describe();
      for (ThreadPool *pool : {&pool3(), &pool1()}) {
        // A new input each run: nothing a run leaves in scratch memory can
        // pass for its result.
        fillRandom(x, rng, -2, 2);
        const std::vector<double> e = convOracle(x, w, c.bias ? &b : nullptr, c, shape);
        double scale = 0;
        for (double v : e)
          scale = std::max(scale, std::abs(v));
        std::vector<const Tensor *> ins = {&x, &w};
        if (c.bias)
          ins.push_back(&b);
        runKernel(*k, ins, {&y}, *pool);
        EXPECT_TRUE(closeTo(y, e, 1e-4, 2e-5 * scale, k->describe()));
      }
    }
  }
  // Too few tiles (a 3x3 plane: 4 of 2x2), too few channels, tiles mostly
  // past the output (DeepLabV3's dilation 12 on 28x28: 144 phases of 2x2
  // or 3x3 pixels, filling 34% of 4x4 tiles and of 2x2 ones), NCHW
  // operands: not this kernel.
  const std::vector<std::pair<ConvCase, Layout>> others = {
      {{1, 64, 64, 1, {28, 28}, {3, 3}, {1, 1}, {12, 12}, {12, 12}, {12, 12}},
       Layout::ChannelsLast},
      {{1, 512, 512, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, Layout::ChannelsLast},
      {{1, 8, 64, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, Layout::ChannelsLast},
      {{1, 64, 64, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, Layout::Contiguous},
  };
  for (const auto &[c, layout] : others) {
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, layout);
    Tensor w(CGC_DTYPE_FLOAT32, {c.m, c.c, 3, 3}), b(CGC_DTYPE_FLOAT32, {c.m});
    Tensor y(CGC_DTYPE_FLOAT32, convOut(c, false), layout);
    auto k = make(convCaseDesc(c, x, w, &b, y));
    ASSERT_TRUE(k);
    EXPECT_EQ(k->describe().find("on the packed GEMM"), std::string::npos) << k->describe();
  }
}

TEST(Convolution, PatchConvolutionsRunOnThePackedGemm) {
  // A convolution whose stride equals its kernel (a patch embedding,
  // ConvNeXt's stem and downsamplings) runs as one product of its gathered
  // patches (conv_patches.cpp): NCHW and channels-last results, inputs in
  // either layout, a plane the windows do not cover to its last row and
  // column, a batch of two, no bias, more output channels than one panel,
  // weights constant or read afresh; on 3 threads and on 1 (checkConv).
  // Padding, 1x1 and 2x2 windows over many channels (ConvNeXt's
  // downsamplings: oneDNN is faster) and large overlapping ones are not it.
  if (std::string off = avx512KernelOff({"CGC_CPU_PATCH_CONVOLUTION", "CGC_CPU_PACKED_GEMM"});
      !off.empty())
    GTEST_SKIP() << off;
  std::mt19937 rng(51);
  const std::vector<ConvCase> cases = {
      // n, c, m, groups, in, kernel, stride, dilation, padB, padE
      {1, 3, 40, 1, {32, 32}, {8, 8}, {8, 8}, {1, 1}, {0, 0}, {0, 0}},   // ViT-like
      {2, 12, 24, 1, {17, 15}, {4, 4}, {4, 4}, {1, 1}, {0, 0}, {0, 0}},  // 12 channels, 4x4
      {1, 3, 96, 1, {20, 24}, {4, 4}, {4, 4}, {1, 1}, {0, 0}, {0, 0}, false},
      {1, 2, 7, 1, {9, 10}, {3, 2}, {3, 2}, {1, 1}, {0, 0}, {0, 0}},
  };
  // Each case in every layout against the reference, then whether the
  // kernel chosen for it describes itself with `marker` (`expected`).
  auto checkCases = [&](const std::vector<ConvCase> &list, const char *marker,
                        const std::function<bool(const ConvCase &, Layout)> &expected) {
    for (const ConvCase &c : list)
      for (Layout in : {Layout::Contiguous, Layout::ChannelsLast})
        for (Layout out : {Layout::Contiguous, Layout::ChannelsLast}) {
          for (bool constant : {true, false})
            checkConv(c, CGC_DTYPE_FLOAT32, false, in, out, constant, rng);
          Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, in);
          Tensor w(CGC_DTYPE_FLOAT32, {c.m, c.c, c.kernel[0], c.kernel[1]}),
              b(CGC_DTYPE_FLOAT32, {c.m}), y(CGC_DTYPE_FLOAT32, convOut(c, false), out);
          auto k = make(convCaseDesc(c, x, w, c.bias ? &b : nullptr, y));
          ASSERT_TRUE(k);
          EXPECT_EQ(k->describe().find(marker) != std::string::npos, expected(c, out))
              << k->describe();
        }
  };
  // (A stem of few input channels into a channels-last result keeps the
  // direct stem kernel.)
  checkCases(cases, "patches gathered", [](const ConvCase &c, Layout out) {
    return !(c.c <= 4 && out == Layout::ChannelsLast);
  });
  // Small convolutions whose windows do not tile the input: their windows
  // are gathered straight into the packed B, for an NCHW result only.
  // LeNet's second, a batch of two at stride 2, stride and dilation
  // differing by dimension, no bias, a 1x1 stride 2 (windows that skip
  // input), more output channels than a register tile.
  const std::vector<ConvCase> windows = {
      {1, 6, 16, 1, {14, 14}, {5, 5}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {2, 8, 16, 1, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {1, 5, 20, 1, {15, 13}, {3, 3}, {1, 2}, {2, 1}, {0, 0}, {0, 0}, false},
      {1, 9, 33, 1, {11, 12}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
  };
  checkCases(windows, "overlapping windows gathered",
             [](const ConvCase &, Layout out) { return out == Layout::Contiguous; });
  // Not it: padding, small tiling windows over many channels, and windows
  // that do not tile the input in a convolution of more than 2M
  // multiply-adds.
  for (const ConvCase &c : std::vector<ConvCase>{
           {1, 32, 64, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
           {1, 8, 16, 1, {16, 16}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
           {1, 8, 16, 1, {16, 16}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
           {1, 8, 16, 1, {16, 16}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}}) {
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]});
    Tensor w(CGC_DTYPE_FLOAT32, {c.m, c.c, c.kernel[0], c.kernel[1]}),
        b(CGC_DTYPE_FLOAT32, {c.m}), y(CGC_DTYPE_FLOAT32, convOut(c, false));
    auto k = make(convCaseDesc(c, x, w, &b, y));
    ASSERT_TRUE(k);
    EXPECT_EQ(k->describe().find("patches gathered"), std::string::npos) << k->describe();
  }
}

TEST(Convolution, ChannelsLastShortPlanesSplitIntoDenseChannelBlocks) {
  // Channels-last planes whose rows do not split evenly across the pool (7
  // rows at pool3) split into output-channel blocks, each computed into a
  // dense temporary and copied into place: 1x1, strided 3x3 and 1x1, 3x1
  // on a batch of 2, planes whose width differs from their height, channel
  // counts that leave a shorter last block, constant and changing weights.
  std::mt19937 rng(47);
  std::vector<ConvCase> cases = {
      {1, 256, 192, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {1, 96, 112, 1, {14, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 400, 104, 1, {13, 13}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, false},
      {2, 128, 192, 1, {5, 3}, {3, 1}, {1, 1}, {1, 1}, {1, 0}, {1, 0}}, // batch of 2
  };
  for (const ConvCase &c : cases) {
    checkConv(c, CGC_DTYPE_FLOAT32, false, Layout::ChannelsLast, Layout::ChannelsLast, true, rng);
    checkConv(c, CGC_DTYPE_FLOAT32, false, Layout::ChannelsLast, Layout::ChannelsLast, false, rng);
  }
}

TEST(Convolution, RejectsBadDescriptors) {
  Tensor x(CGC_DTYPE_FLOAT32, {1, 4, 5, 5}), w(CGC_DTYPE_FLOAT32, {6, 3, 3, 3}),
      y(CGC_DTYPE_FLOAT32, {1, 6, 3, 3}), wi(CGC_DTYPE_INT32, {6, 4, 3, 3});
  auto d = [&](const Tensor &ww, int64_t groups) {
    return Desc("cgc_op.convolution").in(x).in(ww).out(y).ints("strides", {1, 1}).ints(
        "dilations", {1, 1}).ints("start_padding", {0, 0}).ints("end_padding", {0, 0}).i(
        "groups", groups);
  };
  EXPECT_NE(makeError(d(w, 1)).find("input channels per group"), std::string::npos);
  EXPECT_NE(makeError(d(w, 3)).find("divisible"), std::string::npos);
  EXPECT_NE(makeError(d(wi, 1)).find("element type"), std::string::npos);
  Tensor w4(CGC_DTYPE_FLOAT32, {6, 4, 3, 3});
  EXPECT_EQ(makeError(d(w4, 1)), "");
  KernelDesc noStrides = d(w4, 1);
  noStrides.attrs.erase(noStrides.attrs.begin() + 3); // drop one attribute
  EXPECT_FALSE(makeError(noStrides).empty());
}

//===----------------------------------------------------------------------===//
// matmul, gemm
//===----------------------------------------------------------------------===//

struct MMCase {
  std::vector<int64_t> a, b;
  bool ta = false, tb = false;
};

/// The result's shape (numpy.matmul's) into `outShape`, and what the
/// reference evaluator computes.
std::vector<double> matmulOracle(const Tensor &a, const Tensor &b, bool ta, bool tb,
                                 std::vector<int64_t> &outShape) {
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  bool av = as.size() == 1, bv = bs.size() == 1;
  if (av)
    as.insert(as.begin(), 1);
  if (bv)
    bs.push_back(1);
  int64_t m = ta && !av ? as[as.size() - 1] : as[as.size() - 2];
  int64_t n = tb && !bv ? bs[bs.size() - 2] : bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  std::vector<int64_t> batch = broadcast(ab, bb);
  outShape = batch;
  if (!av)
    outShape.push_back(m);
  if (!bv)
    outShape.push_back(n);
  Tensor y(a.dtype(), outShape);
  return referenceValues(
      Desc("cgc_op.matmul").in(a).in(b).out(y).b("transpose_a", ta).b("transpose_b", tb), {&a, &b});
}

TEST(MatMul, BatchedBroadcastTransposedEveryDtype) {
  std::mt19937 rng(50);
  std::vector<MMCase> cases = {
      {{2, 3, 4, 5}, {5, 6}},
      {{3, 1, 4, 5}, {2, 5, 7}},
      {{4, 5}, {3, 5, 2}},
      {{2, 6, 5}, {2, 7, 6}, true, true},
      {{6, 5}, {6, 3}, true, false},
      {{5}, {5, 4}},
      {{3, 5}, {5}},
      {{5}, {5}},
      {{2, 4, 0}, {0, 3}},
      {{1, 33, 70}, {70, 40}},
      {{256, 128}, {128, 64}}, // split along M
  };
  for (const MMCase &c : cases)
    for (cgc_dtype_t dt : kNumericTypes)
      for (Layout al : {Layout::Contiguous, Layout::Transposed}) {
        Tensor a(dt, c.a, al), b(dt, c.b);
        double lo = isUnsignedInt(dt) ? 0 : -3;
        fillRandom(a, rng, lo, 3);
        fillRandom(b, rng, lo, 3);
        std::vector<int64_t> os;
        std::vector<double> e = matmulOracle(a, b, c.ta, c.tb, os);
        for (double &v : e)
          v = isFloat(dt) ? v : wrapTo(dt, v);
        Tensor y(dt, os);
        auto k = make(Desc("cgc_op.matmul").in(a).in(b).out(y).b("transpose_a", c.ta).b(
            "transpose_b", c.tb));
        if (!k)
          continue;
        runKernel(*k, {&a, &b}, {&y}, pool3());
        double abs = isFloat(dt) ? (dt == CGC_DTYPE_FLOAT32 ? 1e-4 : convAbsTol(dt)) : 0;
        if (dt == CGC_DTYPE_FLOAT64)
          abs = 1e-10;
        EXPECT_TRUE(closeTo(y, e, relTol(dt) * 4, abs,
                            "matmul " + dtypeStr(dt) + " " + layoutName(al) + " [" +
                                k->describe() + "]"));
      }
}

TEST(MatMul, BertShapesWithConstantPackedWeights) {
  std::mt19937 rng(51);
  Tensor a(CGC_DTYPE_FLOAT32, {1, 128, 768}), w(CGC_DTYPE_FLOAT32, {768, 256});
  fillRandom(a, rng, -1, 1);
  fillRandom(w, rng, -0.1, 0.1);
  Tensor y(CGC_DTYPE_FLOAT32, {1, 128, 256});
  KernelOptions options;
  options.constantInputs = {false, true};
  auto k = make(Desc("cgc_op.matmul").in(a).in(w).out(y), options);
  runKernel(*k, {&a, &w}, {&y}, pool3());
  std::vector<int64_t> os;
  EXPECT_TRUE(closeTo(y, matmulOracle(a, w, false, false, os), 1e-5, 1e-4, k->describe()));
  // Attention scores: both operands are activations; transposed view of K.
  Tensor q(CGC_DTYPE_FLOAT32, {1, 4, 128, 64}), kk(CGC_DTYPE_FLOAT32, {1, 4, 64, 128}, Layout::Transposed);
  fillRandom(q, rng, -1, 1);
  fillRandom(kk, rng, -1, 1);
  Tensor s(CGC_DTYPE_FLOAT32, {1, 4, 128, 128});
  auto ks = make(Desc("cgc_op.matmul").in(q).in(kk).out(s));
  runKernel(*ks, {&q, &kk}, {&s}, pool3());
  EXPECT_TRUE(closeTo(s, matmulOracle(q, kk, false, false, os), 1e-5, 1e-4, ks->describe()));
}

// A float32 product whose B differs per batch runs on the packed GEMM with
// B packed per batch on AVX-512 (batched_gemm.h) when it has 32 rows or
// more: B contiguous (row copies), transposed (16 x 16 transposes) or padded
// (element by element); shapes with K and N off multiples of 16, broadcast
// batches on either side, and fewer batches than threads. Fewer rows (a
// decoder's one query row) stay on oneDNN. Checked against the oracle on 3
// threads and on 1.
TEST(MatMul, PerBatchBOnThePackedGemm) {
  std::mt19937 rng(52);
  struct Case {
    std::vector<int64_t> a, b;
  } cases[] = {
      {{2, 3, 40, 16}, {2, 3, 16, 20}},
      {{3, 33, 37}, {3, 37, 45}},
      {{2, 1, 37, 33}, {1, 4, 33, 70}}, // batches broadcast both ways
      {{40, 19}, {5, 19, 17}},          // one A for every batch
      {{2, 150, 64}, {2, 64, 130}},     // 2 batches on 3 threads
      {{2, 3, 1, 64}, {2, 3, 64, 50}},  // one row: oneDNN
      {{3, 31, 37}, {3, 37, 45}},       // 31 rows: oneDNN
  };
  for (const Case &c : cases)
    for (Layout bl : {Layout::Contiguous, Layout::Transposed, Layout::Padded}) {
      Tensor a(CGC_DTYPE_FLOAT32, c.a), b(CGC_DTYPE_FLOAT32, c.b, bl);
      fillRandom(a, rng, -1, 1);
      fillRandom(b, rng, -1, 1);
      std::vector<int64_t> os;
      std::vector<double> expected = matmulOracle(a, b, false, false, os);
      Tensor y(CGC_DTYPE_FLOAT32, os);
      auto k = make(Desc("cgc_op.matmul").in(a).in(b).out(y));
      ASSERT_TRUE(k);
      const std::string what = k->describe() + " B " + layoutName(bl);
      if (PackedSgemm::available())
        EXPECT_EQ(what.find("B packed per batch") != std::string::npos,
                  c.a[c.a.size() - 2] >= kBatchedPackedMinRows)
            << what;
      for (ThreadPool *pool : {&pool3(), &pool1()}) {
        runKernel(*k, {&a, &b}, {&y}, *pool);
        EXPECT_TRUE(closeTo(y, expected, 1e-5, 1e-5, what));
      }
    }
}

// A product whose shape suits Strassen (K and N even and >= 512, 64 rows or
// more) runs it on a pool of one thread and the classic product on more;
// both agree with the oracle, and their rounding differs (so each path
// really ran), including back on one thread after B was packed for both.
TEST(MatMul, StrassenOnOneThreadClassicOnMore) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  KernelConfig config = KernelConfig::process();
  config.strassen = true; // off by default
  ConfigScope scope(config);
  ASSERT_EQ(PackedSgemm::algorithmFor(64, 512, 512), PackedSgemm::Algorithm::Strassen);
  std::mt19937 rng(54);
  const int64_t m = 66, k = 512, n = 514;
  Tensor a(CGC_DTYPE_FLOAT32, {1, m, k}), w(CGC_DTYPE_FLOAT32, {k, n});
  fillRandom(a, rng, -1, 1);
  fillRandom(w, rng, -0.1, 0.1);
  std::vector<double> expected(size_t(m * n), 0.0);
  const float *af = static_cast<const float *>(a.data());
  const float *wf = static_cast<const float *>(w.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        expected[size_t(i * n + j)] += double(af[i * k + p]) * double(wf[p * n + j]);
  Tensor y(CGC_DTYPE_FLOAT32, {1, m, n});
  KernelOptions options;
  options.constantInputs = {false, true};
  auto kernel = make(Desc("cgc_op.matmul").in(a).in(w).out(y), options);
  ASSERT_TRUE(kernel);
  EXPECT_NE(kernel->describe().find("Strassen-Winograd on 1 thread"), std::string::npos)
      << kernel->describe();
  std::vector<std::vector<float>> results;
  for (ThreadPool *pool : {&pool1(), &pool3(), &pool1()}) {
    runKernel(*kernel, {&a, &w}, {&y}, *pool);
    EXPECT_TRUE(closeTo(y, expected, 1e-5, 1e-4,
                        kernel->describe() + " on " + std::to_string(pool->size()) + " threads"));
    const float *yf = static_cast<const float *>(y.data());
    results.emplace_back(yf, yf + m * n);
  }
  EXPECT_NE(results[0], results[1]) << "one and three threads rounded alike";
  EXPECT_EQ(results[0], results[2]) << "one thread rounded differently the second time";
}

// A constant B mapped from a file (as the runtime maps a compiled model's
// constants): once packed, its pages are handed back (MADV_PAGEOUT), and a
// later split for another thread count packs again from the re-read file.
TEST(MatMul, ConstantWeightsFromAFileStayCorrectAfterTheirPagesAreReleased) {
  std::mt19937 rng(53);
  const int64_t k = 256, n = 1536; // 1.5 MB of weights: whole pages
  Tensor a(CGC_DTYPE_FLOAT32, {2, 64, k}), w(CGC_DTYPE_FLOAT32, {k, n});
  fillRandom(a, rng, -1, 1);
  fillRandom(w, rng, -0.1, 0.1);
  char path[] = "/tmp/cgc-matmul-weights-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  size_t bytes = size_t(k * n) * 4;
  ASSERT_EQ(write(fd, w.data(), bytes), ssize_t(bytes));
  void *mapped = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  unlink(path);
  ASSERT_NE(mapped, MAP_FAILED);
  std::vector<int64_t> os;
  std::vector<double> expected = matmulOracle(a, w, false, false, os);
  Tensor y(CGC_DTYPE_FLOAT32, os);
  KernelOptions options;
  options.constantInputs = {false, true};
  auto kernel = make(Desc("cgc_op.matmul").in(a).in(w).out(y), options);
  ASSERT_TRUE(kernel);
  EXPECT_NE(kernel->describe().find("packed B"), std::string::npos) << kernel->describe();
  for (ThreadPool *pool : {&pool1(), &pool3(), &pool1()}) {
    std::fill_n(static_cast<float *>(y.data()), count(os), -1.0f);
    const void *in[] = {a.data(), mapped};
    void *out[] = {y.data()};
    kernel->run({in, out}, *pool);
    EXPECT_TRUE(closeTo(y, expected, 1e-5, 1e-4, kernel->describe() + " on " +
                                                     std::to_string(pool->size()) + " threads"));
  }
  munmap(mapped, bytes);
}

TEST(Gemm, AlphaBetaAndBroadcastC) {
  std::mt19937 rng(52);
  struct G {
    std::vector<int64_t> c;
    double alpha, beta;
    bool ta, tb;
  } cases[] = {{{6}, 1, 1, false, true},     {{4, 1}, 0.5, 2, true, false},
               {{4, 6}, 2, -1, false, false}, {{}, 1, 0.25, true, true},
               {{1, 6}, 1, 0, false, false},  {{-1}, 3, 1, false, false}};
  for (const G &g : cases)
    for (cgc_dtype_t dt : kNumericTypes) {
      bool isInt = !isFloat(dt);
      double alpha = isInt ? std::round(g.alpha + 0.5) : g.alpha;
      double beta = isInt ? std::round(g.beta) : g.beta;
      if (isUnsignedInt(dt))
        beta = std::fabs(beta); // a negative result has no unsigned value
      Tensor a(dt, g.ta ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5});
      Tensor b(dt, g.tb ? std::vector<int64_t>{6, 5} : std::vector<int64_t>{5, 6});
      bool hasC = g.c.empty() || g.c[0] != -1;
      Tensor c(dt, hasC ? g.c : std::vector<int64_t>{1});
      double lo = isUnsignedInt(dt) ? 0 : -2;
      fillRandom(a, rng, lo, 2);
      fillRandom(b, rng, lo, 2);
      fillRandom(c, rng, lo, 2);
      Tensor y(dt, {4, 6});
      Desc d("cgc_op.gemm");
      d.in(a).in(b);
      if (hasC)
        d.in(c);
      d.out(y).f("alpha", alpha).f("beta", beta).b("transpose_a", g.ta).b("transpose_b", g.tb);
      auto k = make(d);
      if (!k)
        continue;
      if (dt == CGC_DTYPE_FLOAT32 || dt == CGC_DTYPE_BFLOAT16)
        EXPECT_NE(k->describe().find("oneDNN"), std::string::npos) << k->describe();
      std::vector<const Tensor *> ins = {&a, &b};
      if (hasC)
        ins.push_back(&c);
      runKernel(*k, ins, {&y}, pool1());
      std::vector<double> e;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 6; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < 5; ++p)
            acc += a.get(g.ta ? p * 4 + i : i * 5 + p) * b.get(g.tb ? j * 5 + p : p * 6 + j);
          double cv = hasC ? c.get(broadcastIndex({i, j}, g.c)) : 0;
          double r = alpha * acc + beta * cv;
          e.push_back(isInt ? wrapTo(dt, std::trunc(r)) : r);
        }
      EXPECT_TRUE(closeTo(y, e, relTol(dt) * 4, isInt ? 0 : convAbsTol(dt) / 2,
                          "gemm " + dtypeStr(dt) + " [" + k->describe() + "]"));
    }
}

TEST(MatMul, RejectsBadDescriptors) {
  Tensor a(CGC_DTYPE_FLOAT32, {3, 4}), b(CGC_DTYPE_FLOAT32, {5, 6}), y(CGC_DTYPE_FLOAT32, {3, 6});
  EXPECT_NE(makeError(Desc("cgc_op.matmul").in(a).in(b).out(y)).find("contraction"),
            std::string::npos);
  Tensor c(CGC_DTYPE_FLOAT32, {4, 6}), yy(CGC_DTYPE_FLOAT32, {3, 7});
  EXPECT_NE(makeError(Desc("cgc_op.matmul").in(a).in(c).out(yy)).find("shape"), std::string::npos);
  Tensor b3(CGC_DTYPE_FLOAT32, {2, 4, 6});
  EXPECT_NE(makeError(Desc("cgc_op.gemm").in(a).in(b3).out(y)).find("2-D"), std::string::npos);
}

} // namespace

namespace {

// One-row products with B stored N x K (a Linear layer at batch 1) run as
// row dot products over B as stored, with B stored K x N as combinations of
// its rows: gemm with C of every broadcast shape,
// alpha and beta, a fused chain, a 1-D matmul operand, K not a multiple of
// 16 or 32, on 1 and 3 threads, against the reference evaluator. With
// row-product=0 the packed GEMM takes them, with the same results.
TEST(MatMul, OneRowProductsRunAsRowDotProducts) {
  if (!cpuHasAvx512())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(77);
  struct Case {
    int64_t n, k;
    std::vector<int64_t> c; // empty: no C
    double alpha, beta;
    bool relu;
  };
  const Case cases[] = {{1000, 2048, {1000}, 1, 1, false}, {37, 53, {1, 37}, 0.5, 2, true},
                        {64, 7, {1}, 1, 1, true},          {5, 300, {}, 2, 1, false},
                        {129, 1030, {1, 1}, 1, -1, true}};
  for (const Case &c : cases)
    for (bool rowProduct : {true, false}) {
      KernelConfig config = KernelConfig::process();
      config.rowProduct = rowProduct;
      ConfigScope scope(config);
      Tensor a(CGC_DTYPE_FLOAT32, {1, c.k}), w(CGC_DTYPE_FLOAT32, {c.n, c.k}),
          bias(CGC_DTYPE_FLOAT32, c.c.empty() ? std::vector<int64_t>{1} : c.c),
          y(CGC_DTYPE_FLOAT32, {1, c.n}), r(CGC_DTYPE_FLOAT32, {1, c.n});
      fillRandom(a, rng, -1, 1);
      fillRandom(w, rng, -1, 1);
      fillRandom(bias, rng, -1, 1);
      Desc gemm("cgc_op.gemm");
      gemm.in(a).in(w);
      if (!c.c.empty())
        gemm.in(bias);
      gemm.out(y).b("transpose_b", true).f("alpha", c.alpha).f("beta", c.beta);
      std::vector<const Tensor *> inputs = {&a, &w};
      if (!c.c.empty())
        inputs.push_back(&bias);
      std::vector<double> expected = referenceValues(gemm, inputs);
      std::unique_ptr<Kernel> k;
      Tensor *out = &y;
      if (c.relu) {
        for (double &v : expected)
          v = std::max(v, 0.0);
        std::string reason;
        k = createFusedKernel(gemm, {Desc("cgc_op.relu").in(y).out(r).get()}, reason);
        ASSERT_TRUE(k) << reason;
        out = &r;
      } else {
        k = make(gemm);
        ASSERT_TRUE(k);
      }
      EXPECT_EQ(k->describe().find("row dot products") != std::string::npos, rowProduct)
          << k->describe();
      for (ThreadPool *pool : {&pool1(), &pool3()}) {
        runKernel(*k, inputs, {out}, *pool);
        // float32 sums of k products of values in [-1, 1]: the error grows
        // with k (oneDNN's order of summation differs from the evaluator's).
        EXPECT_TRUE(closeTo(*out, expected, 1e-5, 1e-6 + 5e-8 * double(c.k),
                            "n " + std::to_string(c.n) + " k " + std::to_string(c.k) + " " +
                                k->describe()));
      }
    }
  // A 1-D A (numpy's promotion) with B transposed.
  Tensor x(CGC_DTYPE_FLOAT32, {70}), w(CGC_DTYPE_FLOAT32, {33, 70}), y(CGC_DTYPE_FLOAT32, {33});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -1, 1);
  Desc mm("cgc_op.matmul");
  mm.in(x).in(w).out(y).b("transpose_b", true);
  auto k = make(mm);
  ASSERT_TRUE(k);
  EXPECT_NE(k->describe().find("row dot products"), std::string::npos) << k->describe();
  runKernel(*k, {&x, &w}, {&y}, pool3());
  EXPECT_TRUE(closeTo(y, referenceValues(mm, {&x, &w}), 1e-5, 1e-5, k->describe()));
  // B stored K x N (x @ W): its rows combined, every tail of 128 columns.
  for (int64_t n : {1, 15, 16, 17, 127, 128, 129, 300})
    for (int64_t kk : {1, 9, 200}) {
      Tensor a(CGC_DTYPE_FLOAT32, {1, kk}), b(CGC_DTYPE_FLOAT32, {kk, n}),
          out(CGC_DTYPE_FLOAT32, {1, n});
      fillRandom(a, rng, -1, 1);
      fillRandom(b, rng, -1, 1);
      Desc d("cgc_op.matmul");
      d.in(a).in(b).out(out);
      auto kernel = make(d);
      ASSERT_TRUE(kernel);
      // (One column is a row of B along K: its dot product.)
      EXPECT_EQ(kernel->describe().find("row combinations") != std::string::npos, n > 1)
          << kernel->describe();
      for (ThreadPool *pool : {&pool1(), &pool3()}) {
        runKernel(*kernel, {&a, &b}, {&out}, *pool);
        EXPECT_TRUE(closeTo(out, referenceValues(d, {&a, &b}), 1e-5, 1e-5,
                            "n " + std::to_string(n) + " k " + std::to_string(kk)));
      }
    }
}

} // namespace

// conv_transpose whose stride equals its kernel (2x2 s2, 3x2 s3x2, 2x3 s2x3, with and
// without bias, one and several output channels, batch 2, widths that are
// not a multiple of 16 and of 1-4 vectors per register block): the direct
// kernel that writes one block per input position, against the oracle, and
// its choice. Many outputs take it with 2-wide taps (2x2, 4x2: DBNet's 24 ->
// 24 head) on AVX-512; a channels-last input too. Layers it does not take
// (overlapping taps, padding, many outputs of 3-wide taps) keep oneDNN.
TEST(Convolution, NonOverlappingTransposeRunsDirect) {
  std::mt19937 rng(43);
  std::vector<ConvCase> cases = {
      {1, 24, 1, 1, {20, 19}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}},
      {2, 8, 4, 1, {7, 33}, {3, 2}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, false, {0, 0}},
      {1, 5, 16, 1, {9, 9}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}},
      {1, 6, 2, 1, {5, 21}, {2, 3}, {2, 3}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}}, // 3-wide taps
  };
  if (cpuHasAvx512())
    for (const ConvCase &c : std::vector<ConvCase>{
             {1, 24, 24, 1, {6, 77}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}},
             {2, 9, 20, 1, {3, 130}, {4, 2}, {4, 2}, {1, 1}, {0, 0}, {0, 0}, false, {0, 0}},
             {1, 7, 40, 1, {4, 48}, {1, 2}, {1, 2}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}},
             {1, 3, 33, 1, {2, 5}, {3, 2}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}}})
      cases.push_back(c);
  for (const ConvCase &c : cases) {
    checkConv(c, CGC_DTYPE_FLOAT32, true, Layout::Contiguous, Layout::Contiguous, false, rng);
    checkConv(c, CGC_DTYPE_FLOAT32, true, Layout::Contiguous, Layout::Contiguous, true, rng);
    // A channels-last input (the CPU target's layout after a convolution):
    // its rows transposed, the result NCHW.
    checkConv(c, CGC_DTYPE_FLOAT32, true, Layout::ChannelsLast, Layout::Contiguous, true, rng);
    {
      Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}, Layout::ChannelsLast);
      Tensor w(CGC_DTYPE_FLOAT32, {c.c, c.m, c.kernel[0], c.kernel[1]}),
          b(CGC_DTYPE_FLOAT32, {c.m}), y(CGC_DTYPE_FLOAT32, convOut(c, true));
      auto k = make(convCaseDesc(c, x, w, c.bias ? &b : nullptr, y, true));
      ASSERT_TRUE(k);
      EXPECT_NE(k->describe().find("channels-last input rows transposed"), std::string::npos)
          << k->describe();
    }
    std::vector<int64_t> xs = {c.n, c.c, c.in[0], c.in[1]};
    Tensor x(CGC_DTYPE_FLOAT32, xs), w(CGC_DTYPE_FLOAT32, {c.c, c.m, c.kernel[0], c.kernel[1]}),
        b(CGC_DTYPE_FLOAT32, {c.m}), y(CGC_DTYPE_FLOAT32, convOut(c, true));
    auto k = make(convCaseDesc(c, x, w, c.bias ? &b : nullptr, y, true));
    ASSERT_TRUE(k);
    EXPECT_NE(k->describe().find("taps do not overlap"), std::string::npos) << k->describe();
  }
  // Overlapping taps (4x4 s2) and 8 x 3 x 3 outputs per position: not it.
  for (const ConvCase &c : std::vector<ConvCase>{
           {1, 8, 2, 1, {6, 6}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, {0, 0}},
           {1, 8, 8, 1, {6, 6}, {3, 3}, {3, 3}, {1, 1}, {0, 0}, {0, 0}, true, {0, 0}}}) {
    Tensor x(CGC_DTYPE_FLOAT32, {c.n, c.c, c.in[0], c.in[1]}),
        w(CGC_DTYPE_FLOAT32, {c.c, c.m, c.kernel[0], c.kernel[1]}), b(CGC_DTYPE_FLOAT32, {c.m}),
        y(CGC_DTYPE_FLOAT32, convOut(c, true));
    auto k = make(convCaseDesc(c, x, w, &b, y, true));
    ASSERT_TRUE(k);
    EXPECT_EQ(k->describe().find("taps do not overlap"), std::string::npos) << k->describe();
  }
}
