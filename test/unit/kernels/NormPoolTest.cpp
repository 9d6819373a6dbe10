//===- NormPoolTest.cpp - Normalizations and pooling ----------------------===//

#include "KernelTestUtil.h"
#include "common.h" // cpuHasAvx512
#include "config.h"

#include <cmath>
#include <limits>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

TEST(Normalization, BatchNormEveryFloatTypeAndLayout) {
  std::mt19937 rng(30);
  for (cgc_dtype_t dt : kFloatTypes)
    for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast, Layout::Padded})
      for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 5, 4, 3}, {3, 5}, {1, 5, 7}}) {
        Tensor x(dt, shape, layout);
        fillRandom(x, rng, -3, 3);
        Tensor s(dt, {5}), b(dt, {5}), m(dt, {5}), v(dt, {5});
        fillRandom(s, rng, -2, 2);
        fillRandom(b, rng, -1, 1);
        fillRandom(m, rng, -1, 1);
        fillRandom(v, rng, 0.1, 3);
        Tensor y(dt, shape, layout == Layout::Padded ? Layout::Contiguous : layout);
        auto k = make(Desc("cgc_op.batch_norm").in(x).in(s).in(b).in(m).in(v).out(y).f("epsilon", 1e-3));
        runKernel(*k, {&x, &s, &b, &m, &v}, {&y}, pool3());
        std::vector<double> e;
        for (int64_t i = 0; i < x.size(); ++i) {
          int64_t c = coords(i, shape)[1];
          e.push_back(s.get(c) * (x.get(i) - m.get(c)) / std::sqrt(v.get(c) + 1e-3) + b.get(c));
        }
        EXPECT_TRUE(closeTo(y, e, relTol(dt) * 2, absTol(dt) * 4,
                            "batch_norm " + dtypeStr(dt) + " " + layoutName(layout)));
      }
}

TEST(Pooling, LargeChannelsLastMaxPoolAcrossThreads) {
  // Big enough to split across the pool: channel ranges of NCHW, bands of
  // output rows of channels-last (a channel range of it is not dense, and
  // oneDNN has only its reference kernel for that).
  std::mt19937 rng(36);
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    Tensor x(CGC_DTYPE_FLOAT32, {1, 64, 56, 56}, layout);
    fillRandom(x, rng, -3, 3);
    Tensor y(CGC_DTYPE_FLOAT32, {1, 64, 28, 28}, layout);
    auto k = make(Desc("cgc_op.max_pool").in(x).out(y).ints("kernel_shape", {3, 3})
                      .ints("strides", {2, 2}).ints("start_padding", {1, 1})
                      .ints("end_padding", {1, 1}).ints("dilations", {1, 1}));
    EXPECT_EQ(k->describe().find("ref"), std::string::npos) << k->describe();
    runKernel(*k, {&x}, {&y}, pool3());
    std::vector<double> e;
    for (int64_t c = 0; c < 64; ++c)
      for (int64_t oh = 0; oh < 28; ++oh)
        for (int64_t ow = 0; ow < 28; ++ow) {
          double m = -kInf;
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j) {
              int64_t ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;
              if (ih >= 0 && ih < 56 && iw >= 0 && iw < 56)
                m = std::max(m, x.get((c * 56 + ih) * 56 + iw));
            }
          e.push_back(m);
        }
    EXPECT_TRUE(closeTo(y, e, 0, 0, std::string("max_pool ") + layoutName(layout)));
  }
}

TEST(Normalization, LayerNormAxesBroadcastScaleOptionalBias) {
  std::mt19937 rng(31);
  for (cgc_dtype_t dt : kFloatTypes)
    for (int64_t axis : {1, 2})
      for (bool bias : {true, false})
        for (bool broadcastScale : {false, true}) {
          std::vector<int64_t> shape = {2, 6, 40};
          Tensor x(dt, shape, Layout::Transposed);
          fillRandom(x, rng, -4, 4);
          std::vector<int64_t> norm(shape.begin() + axis, shape.end());
          std::vector<int64_t> scaleShape = norm;
          if (broadcastScale)
            scaleShape = {norm.back()};
          Tensor g(dt, scaleShape), bb(dt, norm);
          fillRandom(g, rng, 0.5, 2);
          fillRandom(bb, rng, -1, 1);
          Tensor y(dt, shape);
          Desc d("cgc_op.layer_norm");
          d.in(x).in(g);
          if (bias)
            d.in(bb);
          d.out(y).i("axis", axis).f("epsilon", 1e-5);
          auto k = make(d);
          std::vector<const Tensor *> ins = {&x, &g};
          if (bias)
            ins.push_back(&bb);
          runKernel(*k, ins, {&y}, pool3());
          int64_t len = count(norm), rows = x.size() / len;
          std::vector<double> e;
          for (int64_t r = 0; r < rows; ++r) {
            double mean = 0, var = 0;
            for (int64_t j = 0; j < len; ++j)
              mean += x.get(r * len + j);
            mean /= double(len);
            for (int64_t j = 0; j < len; ++j)
              var += std::pow(x.get(r * len + j) - mean, 2);
            var /= double(len);
            for (int64_t j = 0; j < len; ++j) {
              std::vector<int64_t> c = coords(j, norm);
              double gv = g.get(broadcastIndex(c, scaleShape));
              double v = (x.get(r * len + j) - mean) / std::sqrt(var + 1e-5) * gv;
              if (bias)
                v += bb.get(j);
              e.push_back(v);
            }
          }
          EXPECT_TRUE(closeTo(y, e, relTol(dt) * 4, absTol(dt) * 8,
                              "layer_norm " + dtypeStr(dt) + " axis " + std::to_string(axis)));
        }
}

TEST(Normalization, InstanceNorm) {
  std::mt19937 rng(32);
  for (cgc_dtype_t dt : kFloatTypes) {
    Tensor x(dt, {2, 3, 5, 6}, Layout::Padded), s(dt, {3}), b(dt, {3});
    fillRandom(x, rng, -3, 3);
    fillRandom(s, rng, -2, 2);
    fillRandom(b, rng, -1, 1);
    Tensor y(dt, x.shape());
    auto k = make(Desc("cgc_op.instance_norm").in(x).in(s).in(b).out(y).f("epsilon", 1e-4));
    runKernel(*k, {&x, &s, &b}, {&y}, pool3());
    std::vector<double> e;
    for (int64_t nc = 0; nc < 6; ++nc) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < 30; ++i)
        mean += x.get(nc * 30 + i);
      mean /= 30;
      for (int64_t i = 0; i < 30; ++i)
        var += std::pow(x.get(nc * 30 + i) - mean, 2);
      var /= 30;
      for (int64_t i = 0; i < 30; ++i)
        e.push_back(s.get(nc % 3) * (x.get(nc * 30 + i) - mean) / std::sqrt(var + 1e-4) +
                    b.get(nc % 3));
    }
    EXPECT_TRUE(closeTo(y, e, relTol(dt) * 4, absTol(dt) * 8, "instance_norm " + dtypeStr(dt)));
  }
}

TEST(Normalization, Lrn) {
  std::mt19937 rng(33);
  for (cgc_dtype_t dt : kFloatTypes)
    for (int64_t size : {1, 3, 4}) {
      Tensor x(dt, {2, 7, 3, 2});
      fillRandom(x, rng, -3, 3);
      Tensor y(dt, x.shape());
      auto k = make(Desc("cgc_op.lrn").in(x).out(y).i("size", size).f("alpha", 0.02).f("beta", 0.6).f("bias", 1.5));
      runKernel(*k, {&x}, {&y}, pool3());
      std::vector<double> e;
      for (int64_t i = 0; i < x.size(); ++i) {
        std::vector<int64_t> c = coords(i, x.shape());
        int64_t lo = std::max<int64_t>(0, c[1] - (size - 1) / 2);
        int64_t hi = std::min<int64_t>(6, c[1] + (size - 1) - (size - 1) / 2);
        double sq = 0;
        for (int64_t ch = lo; ch <= hi; ++ch) {
          std::vector<int64_t> cc = c;
          cc[1] = ch;
          sq += std::pow(x.get(linear(cc, x.shape())), 2);
        }
        e.push_back(x.get(i) / std::pow(1.5 + 0.02 / double(size) * sq, 0.6));
      }
      EXPECT_TRUE(closeTo(y, e, relTol(dt) * 2, absTol(dt) * 2,
                          "lrn size " + std::to_string(size) + " " + dtypeStr(dt)));
    }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  std::vector<int64_t> shape, kernel, stride, dilation, padB, padE;
  bool ceil = false, includePad = false;
};

std::vector<int64_t> poolOutShape(const PoolCase &c) {
  std::vector<int64_t> out = {c.shape[0], c.shape[1]};
  for (size_t i = 0; i < c.kernel.size(); ++i) {
    int64_t in = c.shape[2 + i];
    int64_t padded = in + c.padB[i] + c.padE[i];
    int64_t ext = c.dilation[i] * (c.kernel[i] - 1) + 1;
    int64_t num = padded - ext;
    int64_t size = (c.ceil ? (num + c.stride[i] - 1) / c.stride[i] : num / c.stride[i]) + 1;
    if (c.ceil && (size - 1) * c.stride[i] >= in + c.padB[i])
      --size;
    out.push_back(size);
  }
  return out;
}

/// `op` over `x` into `y` with case `c`'s window (ceil_mode and
/// count_include_pad only when the case sets them).
Desc poolDesc(const std::string &op, const PoolCase &c, const Tensor &x, const Tensor &y) {
  Desc d(op);
  d.in(x).out(y).ints("kernel_shape", c.kernel).ints("strides", c.stride).ints(
      "dilations", c.dilation).ints("start_padding", c.padB).ints("end_padding", c.padE);
  if (c.ceil)
    d.b("ceil_mode", true);
  if (c.includePad)
    d.b("count_include_pad", true);
  return d;
}

/// What the reference evaluator computes for case `c`.
std::vector<double> poolOracle(const Tensor &x, const PoolCase &c, const std::string &op,
                               int64_t p, const std::vector<int64_t> &outShape) {
  Tensor y(x.dtype(), outShape);
  Desc d(op);
  d.in(x).out(y).ints("kernel_shape", c.kernel).ints("strides", c.stride).ints(
      "dilations", c.dilation).ints("start_padding", c.padB).ints("end_padding", c.padE);
  d.b("ceil_mode", c.ceil).b("count_include_pad", c.includePad).i("p", p);
  return referenceValues(d, {&x});
}

std::vector<PoolCase> poolCases() {
  return {
      {{1, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {{2, 2, 10, 11}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true},           // ceil
      {{2, 2, 10, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {0, 1}, true, true},     // ceil + include pad
      {{1, 2, 12, 12}, {2, 3}, {1, 2}, {2, 1}, {1, 1}, {2, 0}},                 // dilation, asym
      {{1, 4, 7, 7}, {7, 7}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},                   // global-like
      {{1, 2, 16}, {4}, {3}, {1}, {2}, {1}, true},                              // 1-D
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}}, // 3-D
      {{1, 1, 5, 5}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, false, true},
  };
}

TEST(Pooling, MaxAvgLpEveryCaseAndDtype) {
  std::mt19937 rng(34);
  for (const char *op : {"cgc_op.max_pool", "cgc_op.avg_pool", "cgc_op.lp_pool"})
    for (const PoolCase &c : poolCases())
      for (cgc_dtype_t dt : std::string(op) == "cgc_op.max_pool" ? kNumericTypes : kFloatTypes)
        for (Layout layout : {Layout::Contiguous, Layout::Padded}) {
          Tensor x(dt, c.shape, layout);
          fillRandom(x, rng, isUnsignedInt(dt) ? 0 : -5, 5);
          std::vector<int64_t> outShape = poolOutShape(c);
          Tensor y(dt, outShape);
          PoolCase cc = c;
          cc.includePad = std::string(op) == "cgc_op.avg_pool" && c.includePad;
          Desc d = poolDesc(op, cc, x, y);
          int64_t p = 2;
          if (std::string(op) == "cgc_op.lp_pool") {
            p = 3;
            d.i("p", p);
          }
          auto k = make(d);
          if (!k)
            continue;
          runKernel(*k, {&x}, {&y}, pool3());
          EXPECT_TRUE(closeTo(y, poolOracle(x, cc, op, p, outShape), relTol(dt) * 2,
                              absTol(dt) * 2,
                              std::string(op) + " " + dtypeStr(dt) + " " + layoutName(layout) +
                                  " case " + k->describe()));
        }
}

TEST(Pooling, ResNetStemUsesOneDnnAndMatches) {
  std::mt19937 rng(35);
  PoolCase c{{1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}};
  Tensor x(CGC_DTYPE_FLOAT32, c.shape);
  fillRandom(x, rng, -2, 2);
  std::vector<int64_t> outShape = poolOutShape(c);
  Tensor y(CGC_DTYPE_FLOAT32, outShape);
  auto k = make(Desc("cgc_op.max_pool").in(x).out(y).ints("kernel_shape", c.kernel).ints(
      "strides", c.stride).ints("dilations", c.dilation).ints("start_padding", c.padB).ints(
      "end_padding", c.padE));
  EXPECT_NE(k->describe().find("oneDNN"), std::string::npos) << k->describe();
  runKernel(*k, {&x}, {&y}, pool3());
  EXPECT_TRUE(closeTo(y, poolOracle(x, c, "cgc_op.max_pool", 2, outShape), 0, 0, "stem"));
}

TEST(Pooling, ChannelsLastRowBandsMatchTheOracle) {
  // Channels-last pooling large enough to split runs in bands of output
  // rows, each with its input rows, halo and share of the padding: max and
  // average (padding counted or not, a ceil-mode overhang), bands
  // of unequal height; a batch of 2 runs whole (a band of several images
  // is not dense: oneDNN has only its reference kernel for it). With the
  // direct kernels off (direct-pool=0): they take these pools otherwise.
  KernelConfig config = KernelConfig::process();
  config.directPool = false;
  ConfigScope scope(config);
  std::mt19937 rng(37);
  std::vector<std::pair<std::string, PoolCase>> cases = {
      {"cgc_op.max_pool", {{1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}}},
      {"cgc_op.avg_pool", {{1, 64, 57, 57}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true}},
      {"cgc_op.avg_pool", {{1, 48, 45, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, true}},
      {"cgc_op.max_pool", {{2, 32, 41, 33}, {3, 2}, {1, 1}, {1, 1}, {2, 0}, {1, 1}}},
  };
  for (const auto &[op, c] : cases) {
    Tensor x(CGC_DTYPE_FLOAT32, c.shape, Layout::ChannelsLast);
    fillRandom(x, rng, -3, 3);
    std::vector<int64_t> outShape = poolOutShape(c);
    Tensor y(CGC_DTYPE_FLOAT32, outShape, Layout::ChannelsLast);
    auto k = make(poolDesc(op, c, x, y));
    ASSERT_TRUE(k);
    EXPECT_NE(k->describe().find("oneDNN"), std::string::npos) << k->describe();
    runKernel(*k, {&x}, {&y}, pool3());
    EXPECT_TRUE(closeTo(y, poolOracle(x, c, op, 2, outShape), 1e-6, 1e-6, op + " " +
                                                                              k->describe()));
  }
}

TEST(Pooling, SmallPoolsRunOnGathersAndMatchTheOracle) {
  // Small float32 2-D pools run on the direct gather kernel: max (with NaN
  // inputs, which stick as in the generic kernel) and average (padding
  // counted or not, a ceil-mode overhang), rows of more than one vector,
  // dilation, input and result NCHW, channels-last (stores scattered) or
  // with padded rows; on 3 threads. Larger ones stay on oneDNN.
  if (!cpuHasAvx512() || !activeConfig().directPool)
    GTEST_SKIP() << "no AVX-512, or direct-pool=0";
  std::mt19937 rng(38);
  const std::vector<std::pair<std::string, PoolCase>> cases = {
      {"cgc_op.max_pool", {{1, 6, 28, 28}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}},
      {"cgc_op.max_pool", {{2, 1, 9, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}},
      {"cgc_op.max_pool", {{1, 2, 12, 37}, {2, 3}, {1, 2}, {2, 1}, {1, 1}, {2, 0}}},
      {"cgc_op.avg_pool", {{1, 16, 10, 10}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}}},
      {"cgc_op.avg_pool", {{2, 2, 10, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {0, 1}, true, true}},
      {"cgc_op.avg_pool", {{1, 3, 11, 35}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {1, 1}, true}},
      {"cgc_op.avg_pool", {{1, 1, 5, 5}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, false, true}},
  };
  for (const auto &[op, c] : cases)
    for (Layout in : {Layout::Contiguous, Layout::ChannelsLast, Layout::Padded})
      for (Layout out : {Layout::Contiguous, Layout::ChannelsLast}) {
        Tensor x(CGC_DTYPE_FLOAT32, c.shape, in);
        fillRandom(x, rng, -3, 3);
        if (op == "cgc_op.max_pool")
          for (int64_t i = 5; i < x.size(); i += 97)
            x.set(i, std::nan(""));
        std::vector<int64_t> outShape = poolOutShape(c);
        Tensor y(CGC_DTYPE_FLOAT32, outShape, out);
        auto k = make(poolDesc(op, c, x, y));
        ASSERT_TRUE(k);
        EXPECT_NE(k->describe().find("gathers"), std::string::npos) << k->describe();
        runKernel(*k, {&x}, {&y}, pool3());
        EXPECT_TRUE(closeTo(y, poolOracle(x, c, op, 2, outShape), 1e-6, 1e-6,
                            op + " " + layoutName(in) + " -> " + layoutName(out) + " " +
                                k->describe()));
      }
  PoolCase large{{1, 64, 16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}};
  Tensor x(CGC_DTYPE_FLOAT32, large.shape), y(CGC_DTYPE_FLOAT32, poolOutShape(large));
  auto k = make(Desc("cgc_op.max_pool").in(x).out(y).ints("kernel_shape", large.kernel).ints(
      "strides", large.stride).ints("dilations", large.dilation).ints(
      "start_padding", large.padB).ints("end_padding", large.padE));
  ASSERT_TRUE(k);
  EXPECT_NE(k->describe().find("oneDNN"), std::string::npos) << k->describe();
}

TEST(Pooling, ChannelsLastPoolsRunOnChannelVectorsAndMatchTheOracle) {
  // Float32 2-D pools larger than the gather kernel takes, channels-last in
  // and out, run on vectors of channels: max with NaN inputs (they stick),
  // averages counting padding or not with a ceil-mode overhang, dilation
  // and asymmetric padding, channel counts that leave a partial last
  // vector (3, 40) or fill whole ones (64), a batch of 2, split across 3
  // threads and run on 1.
  if (!cpuHasAvx512() || !activeConfig().directPool)
    GTEST_SKIP() << "no AVX-512, or direct-pool=0";
  std::mt19937 rng(39);
  const std::vector<std::pair<std::string, PoolCase>> cases = {
      {"cgc_op.max_pool", {{1, 64, 56, 56}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}}},
      {"cgc_op.max_pool", {{2, 40, 27, 27}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true}},
      {"cgc_op.max_pool", {{1, 3, 41, 33}, {3, 2}, {1, 1}, {2, 1}, {2, 0}, {1, 1}}},
      {"cgc_op.avg_pool", {{1, 40, 57, 57}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true}},
      {"cgc_op.avg_pool", {{1, 48, 45, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, true}},
      {"cgc_op.avg_pool", {{2, 17, 30, 30}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {0, 1}, true, true}},
  };
  for (const auto &[op, c] : cases)
    for (ThreadPool *pool : {&pool3(), &pool1()}) {
      Tensor x(CGC_DTYPE_FLOAT32, c.shape, Layout::ChannelsLast);
      fillRandom(x, rng, -3, 3);
      if (op == "cgc_op.max_pool")
        for (int64_t i = 11; i < x.size(); i += 389)
          x.set(i, std::nan(""));
      std::vector<int64_t> outShape = poolOutShape(c);
      Tensor y(CGC_DTYPE_FLOAT32, outShape, Layout::ChannelsLast);
      auto k = make(poolDesc(op, c, x, y));
      ASSERT_TRUE(k);
      EXPECT_NE(k->describe().find("direct channels-last"), std::string::npos) << k->describe();
      runKernel(*k, {&x}, {&y}, *pool);
      EXPECT_TRUE(closeTo(y, poolOracle(x, c, op, 2, outShape), 1e-6, 1e-6,
                          op + " " + k->describe()));
    }
}

TEST(Pooling, RejectsBadWindows) {
  Tensor x(CGC_DTYPE_FLOAT32, {1, 1, 4, 4}), y(CGC_DTYPE_FLOAT32, {1, 1, 2, 2});
  auto d = [&](std::vector<int64_t> k, std::vector<int64_t> s) {
    return Desc("cgc_op.max_pool").in(x).out(y).ints("kernel_shape", k).ints("strides", s).ints(
        "dilations", {1, 1}).ints("start_padding", {0, 0}).ints("end_padding", {0, 0});
  };
  EXPECT_NE(makeError(d({2}, {2, 2})).find("kernel_shape"), std::string::npos);
  EXPECT_NE(makeError(d({2, 2}, {0, 2})).find("strides"), std::string::npos);
  EXPECT_NE(makeError(d({5, 5}, {1, 1})).find("larger"), std::string::npos);
  EXPECT_NE(makeError(d({1, 1}, {1, 1})).find("shape"), std::string::npos);
  EXPECT_EQ(makeError(d({2, 2}, {2, 2})), "");
}

} // namespace
