//===- ExpandDepthwiseTest.cpp - A 1x1 expansion fused into a depthwise ---===//
//
// createExpandDepthwise computes a 1x1 convolution and its chain, then a
// depthwise convolution and its chain on that result, without storing the
// expanded value (expand_depthwise.h). Every case runs the same ops as
// separate kernels too, and the results must agree; pairs the kernel does
// not take are refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "common.h" // cpuHasAvx512
#include "sgemm.h"  // PackedSgemm::available

#include <cstdlib>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

AttrValue F(double v) { return AttrValue::ofFloat(v); }

/// One elementwise op of a chain; `extra` is the shape of its second
/// operand (none for unary ops).
struct Op {
  std::string name;
  std::vector<std::pair<std::string, AttrValue>> attrs = {};
  std::optional<std::vector<int64_t>> extra = std::nullopt;
};

struct Case {
  int64_t batch, inC, midC, H, W;
  int64_t k, stride;
  std::vector<int64_t> padBegin, padEnd;
  std::vector<Op> expandChain, depthwiseChain;
  int64_t dilationH = 1; // the depthwise kernel's vertical dilation
  /// No expansion: x (midC channels) goes to the depthwise convolution.
  bool expand = true;
  /// A projection to `outC` channels after the depthwise chain (0: none),
  /// with a bias if `projectBias`, then `projectChain`.
  int64_t outC = 0;
  bool projectBias = true;
  std::vector<Op> projectChain = {};
  /// With `expand`: a 3x3 stride-2 stem convolution of an NCHW image of
  /// inC channels (2H x 2W) instead of the 1x1 expansion.
  bool stem = false;
};

Desc convolution(const Tensor &x, const Tensor &w, const Tensor *b, const Tensor &y,
                 int64_t stride, std::vector<int64_t> padBegin, std::vector<int64_t> padEnd,
                 int64_t groups, int64_t dilationH = 1) {
  Desc d("cgc_op.convolution");
  d.in(x).in(w);
  if (b)
    d.in(*b);
  d.out(y).ints("strides", {stride, stride}).ints("dilations", {dilationH, 1})
      .ints("start_padding", padBegin).ints("end_padding", padEnd).i("groups", groups);
  return d;
}

/// The fused kernel and the ops one by one on the same operands.
struct Pair {
  std::vector<Tensor> tensors; // every operand; stable addresses (reserved)
  std::vector<KernelDesc> expandChain, depthwiseChain, projectChain;
  KernelDesc expand, depthwise, project;
  std::vector<const Tensor *> fusedInputs;
  const Tensor *expanded = nullptr; // the unfused expanded value
  /// The depthwise convolution's inputs after the first, then its chain's
  /// extra operands.
  std::vector<const Tensor *> depthwiseInputs;
  KernelOptions options;
  Tensor *y = nullptr;
  std::vector<double> unfused;
};

/// Builds the case: x channels-last, the expanded value and every chain
/// value channels-last, extra operands as their shapes say (full-size ones
/// channels-last); runs the ops one by one into `unfused`.
Pair build(const Case &c, std::mt19937 &rng) {
  Pair p;
  p.tensors.reserve(64);
  auto add = [&](std::vector<int64_t> shape, Layout layout, double lo, double hi) -> Tensor & {
    p.tensors.emplace_back(CGC_DTYPE_FLOAT32, std::move(shape), layout);
    fillRandom(p.tensors.back(), rng, lo, hi);
    return p.tensors.back();
  };
  const int64_t OH = (c.H + c.padBegin[0] + c.padEnd[0] - c.dilationH * (c.k - 1) - 1) / c.stride + 1;
  const int64_t OW = (c.W + c.padBegin[1] + c.padEnd[1] - c.k) / c.stride + 1;
  const std::vector<int64_t> mid = {c.batch, c.midC, c.H, c.W}, out = {c.batch, c.midC, OH, OW};
  Tensor &x = add({c.batch, c.expand ? c.inC : c.midC, c.H, c.W}, Layout::ChannelsLast, -1, 1);
  Tensor *value = &x;
  p.fusedInputs = {&x};
  std::vector<bool> constant = {false};
  // Each op with its inputs and its result.
  struct Unfused {
    KernelDesc desc;
    std::vector<const Tensor *> inputs;
    Tensor *result;
  };
  std::vector<Unfused> unfused;
  if (c.stem) {
    // The image replaces x: NCHW, twice the plane.
    p.tensors.pop_back();
    Tensor &image = add({c.batch, c.inC, 2 * c.H, 2 * c.W}, Layout::Contiguous, -1, 1);
    p.fusedInputs = {&image};
    Tensor &w = add({c.midC, c.inC, 3, 3}, Layout::Contiguous, -0.5, 0.5);
    Tensor &b = add({c.midC}, Layout::Contiguous, -0.5, 0.5);
    value = &add(mid, Layout::ChannelsLast, 0, 0);
    p.expand = convolution(image, w, &b, *value, 2, {1, 1}, {1, 1}, 1).get();
    p.fusedInputs.insert(p.fusedInputs.end(), {&w, &b});
    constant.insert(constant.end(), {true, true});
    unfused.push_back({p.expand, {&image, &w, &b}, value});
  } else if (c.expand) {
    Tensor &w = add({c.midC, c.inC, 1, 1}, Layout::Contiguous, -0.5, 0.5);
    Tensor &b = add({c.midC}, Layout::Contiguous, -0.5, 0.5);
    value = &add(mid, Layout::ChannelsLast, 0, 0);
    p.expand = convolution(x, w, &b, *value, 1, {0, 0}, {0, 0}, 1).get();
    p.fusedInputs.insert(p.fusedInputs.end(), {&w, &b});
    constant.insert(constant.end(), {true, true});
    unfused.push_back({p.expand, {&x, &w, &b}, value});
  }
  auto chain = [&](const std::vector<Op> &ops, const std::vector<int64_t> &shape,
                   std::vector<KernelDesc> &descs) {
    for (const Op &op : ops) {
      Desc d(op.name);
      d.in(*value);
      std::vector<const Tensor *> ins = {value};
      if (op.extra) {
        Tensor &e = add(*op.extra, *op.extra == shape ? Layout::ChannelsLast : Layout::Contiguous,
                        -1, 1);
        d.in(e);
        ins.push_back(&e);
        p.fusedInputs.push_back(&e);
        constant.push_back(false);
      }
      for (const auto &[k, v] : op.attrs)
        d.attr(k, v);
      value = &add(shape, Layout::ChannelsLast, 0, 0);
      d.out(*value);
      descs.push_back(d.get());
      unfused.push_back({descs.back(), ins, value});
    }
  };
  chain(c.expandChain, mid, p.expandChain);
  Tensor &dw = add({c.midC, 1, c.k, c.k}, Layout::Contiguous, -0.5, 0.5);
  Tensor &db = add({c.midC}, Layout::Contiguous, -0.5, 0.5);
  const Tensor *expanded = value;
  value = &add(out, Layout::ChannelsLast, 0, 0);
  p.depthwise =
      convolution(*expanded, dw, &db, *value, c.stride, c.padBegin, c.padEnd, c.midC, c.dilationH)
          .get();
  unfused.push_back({p.depthwise, {expanded, &dw, &db}, value});
  p.fusedInputs.insert(p.fusedInputs.end(), {&dw, &db});
  constant.insert(constant.end(), {true, true});
  const size_t firstDepthwise = p.fusedInputs.size() - 2;
  chain(c.depthwiseChain, out, p.depthwiseChain);
  p.expanded = expanded;
  p.depthwiseInputs.assign(p.fusedInputs.begin() + int64_t(firstDepthwise), p.fusedInputs.end());
  if (c.outC) {
    const std::vector<int64_t> projected = {c.batch, c.outC, OH, OW};
    Tensor &pw = add({c.outC, c.midC, 1, 1}, Layout::Contiguous, -0.5, 0.5);
    Tensor *pb = c.projectBias ? &add({c.outC}, Layout::Contiguous, -0.5, 0.5) : nullptr;
    const Tensor *filtered = value;
    value = &add(projected, Layout::ChannelsLast, 0, 0);
    p.project = convolution(*filtered, pw, pb, *value, 1, {0, 0}, {0, 0}, 1).get();
    std::vector<const Tensor *> ins = {filtered, &pw};
    if (pb)
      ins.push_back(pb);
    unfused.push_back({p.project, ins, value});
    p.fusedInputs.insert(p.fusedInputs.end(), ins.begin() + 1, ins.end());
    constant.insert(constant.end(), ins.size() - 1, true);
    chain(c.projectChain, projected, p.projectChain);
  }
  p.y = value;
  p.options.constantInputs = constant;
  for (const Unfused &u : unfused) {
    auto kernel = make(u.desc, {});
    EXPECT_TRUE(kernel) << u.desc.op << ": " << makeError(u.desc);
    if (!kernel)
      return p;
    runKernel(*kernel, u.inputs, {u.result}, pool1());
  }
  p.unfused = p.y->values();
  return p;
}

/// The fused kernel on 1 and on 3 threads (pieces of rows meeting inside an
/// image and across images) against the ops run one by one.
void expectMatchesRunApart(const Kernel &fused, const Pair &p, const std::string &what) {
  for (ThreadPool *pool : {&pool1(), &pool3()}) {
    Tensor y(CGC_DTYPE_FLOAT32, p.y->shape(), Layout::ChannelsLast);
    runKernel(fused, p.fusedInputs, {&y}, *pool);
    EXPECT_TRUE(closeTo(y, p.unfused, 1e-4, 1e-4,
                        what + (pool == &pool1() ? " 1 thread" : " 3 threads") + " [" +
                            fused.describe() + "]"));
  }
}

/// False if environment variable `name` is "0" (a kernel choice turned off).
bool choiceOn(const char *name) {
  const char *value = std::getenv(name);
  return !(value && std::string(value) == "0");
}

/// The kernel is on: AVX-512, the packed GEMM, not turned off.
bool fusionExpected() {
  const char *off = std::getenv("CGC_CPU_EXPAND_DEPTHWISE");
  return cpuHasAvx512() && PackedSgemm::available() && !(off && std::string(off) == "0");
}

std::string name(const Case &c) {
  std::string s = cat(c.stem ? "stem, " : "", "k", c.k, " s", c.stride, " ", c.inC, "->",
                      c.midC, " on ", c.H, "x", c.W, " batch ", c.batch, ":");
  for (const Op &op : c.expandChain)
    s += " " + op.name;
  s += " |";
  for (const Op &op : c.depthwiseChain)
    s += " " + op.name;
  if (c.outC) {
    s += cat(" | -> ", c.outC, c.projectBias ? " +bias" : "");
    for (const Op &op : c.projectChain)
      s += " " + op.name;
  }
  return s;
}

/// createDepthwiseBlock on the case's block.
std::unique_ptr<Kernel> fuseBlock(const Case &c, const Pair &p, std::string &reason) {
  DepthwiseBlock block;
  if (c.expand) {
    block.expand = &p.expand;
    block.expandChain = p.expandChain;
  }
  block.depthwise = &p.depthwise;
  block.depthwiseChain = p.depthwiseChain;
  if (c.outC) {
    block.project = &p.project;
    block.projectChain = p.projectChain;
  }
  return createDepthwiseBlock(block, p.options, reason);
}

/// The block kernel takes a projection: AVX-512, the packed GEMM, and
/// neither CGC_CPU_DEPTHWISE_PROJECT=0 nor (with an expansion)
/// CGC_CPU_EXPAND_DEPTHWISE=0.
bool projectionExpected(const Case &c) {
  const char *off = std::getenv("CGC_CPU_DEPTHWISE_PROJECT");
  const char *expandOff = std::getenv("CGC_CPU_EXPAND_DEPTHWISE");
  return cpuHasAvx512() && PackedSgemm::available() && !(off && std::string(off) == "0") &&
         !(c.expand && expandOff && std::string(expandOff) == "0");
}

TEST(ExpandDepthwise, MatchesTheTwoKernelsRunApart) {
  // MobileNetV2's relu6 blocks (the chain in the GEMM's epilogue) and
  // EfficientNet's swish blocks (the chain per run of ring rows); 3x3 and
  // 5x5, strides 1 and 2, symmetric and asymmetric padding, batch 2, a
  // channel count that is not a multiple of 16, per-channel operands in both
  // chains and a full-size residual after the depthwise convolution. Every
  // expanded value is over the 1 MB below which the pair is not fused. On 1
  // and on 3 threads (pieces of rows meeting inside an image and across
  // images).
  std::mt19937 rng(91);
  const Op relu6{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}};
  const Op swish{"cgc_op.swish"};
  auto perChannel = [](int64_t c) { return std::vector<int64_t>{1, c, 1, 1}; };
  std::vector<Case> cases = {
      {1, 16, 96, 56, 56, 3, 2, {0, 0}, {1, 1}, {relu6}, {relu6}},
      {2, 24, 40, 58, 62, 3, 1, {1, 1}, {1, 1}, {relu6}, {relu6}},
      {1, 16, 96, 56, 56, 3, 1, {1, 1}, {1, 1}, {swish}, {swish}},
      {2, 24, 40, 58, 62, 5, 2, {2, 1}, {1, 2}, {swish}, {swish}},
      {1, 8, 48, 75, 77, 5, 1, {2, 2}, {2, 2},
       {{"cgc_op.mul", {}, perChannel(48)}, {"cgc_op.add", {}, perChannel(48)}, swish},
       {{"cgc_op.add", {}, std::vector<int64_t>{1, 48, 75, 77}}}},
      {1, 32, 64, 64, 64, 3, 1, {1, 1}, {1, 1}, {{"cgc_op.relu"}}, {}},
      {1, 16, 96, 56, 56, 3, 2, {1, 1}, {1, 1}, {}, {relu6, {"cgc_op.mul", {}, perChannel(96)}}},
      // Vertical dilation: the ring holds the rows the dilated kernel
      // reaches.
      {2, 16, 48, 60, 58, 3, 1, {2, 1}, {2, 1}, {relu6}, {swish}, 2},
      {1, 16, 64, 64, 67, 5, 2, {4, 2}, {3, 2}, {swish}, {}, 2},
  };
  for (const Case &c : cases) {
    Pair p = build(c, rng);
    ASSERT_FALSE(p.unfused.empty()) << name(c);
    std::string reason;
    std::unique_ptr<Kernel> fused = createExpandDepthwise(p.expand, p.expandChain, p.depthwise,
                                                          p.depthwiseChain, p.options, reason);
    if (!fusionExpected()) {
      EXPECT_FALSE(fused) << name(c);
      EXPECT_FALSE(reason.empty());
      continue;
    }
    ASSERT_TRUE(fused) << name(c) << ": " << reason;
    const std::string description = fused->describe();
    EXPECT_NE(description.find("never stored"), std::string::npos) << description;
    EXPECT_NE(description.find("direct depthwise"), std::string::npos) << description;
    expectMatchesRunApart(*fused, p, name(c));
  }
}

TEST(ExpandDepthwise, WithTheGlobalAveragePoolOfTheResult) {
  // createDepthwisePool (a depthwise convolution alone) and
  // createExpandDepthwise with a pool: the pool's means are taken from each
  // band of rows; both outputs match the kernels run apart (the pool kernel
  // on the unfused result). Batch 2, a partial channel vector, 1 and 3
  // threads, a residual added after the depthwise convolution.
  if (!fusionExpected())
    GTEST_SKIP() << "no AVX-512, or a kernel choice turned off: never fused";
  const char *off = std::getenv("CGC_CPU_DEPTHWISE_POOL");
  if (off && std::string(off) == "0")
    GTEST_SKIP() << "CGC_CPU_DEPTHWISE_POOL=0";
  std::mt19937 rng(93);
  const Op swish{"cgc_op.swish"};
  const std::vector<Case> cases = {
      {2, 24, 40, 58, 62, 3, 1, {1, 1}, {1, 1}, {swish}, {swish}},
      {1, 16, 96, 56, 56, 5, 2, {2, 2}, {2, 2}, {swish}, {swish}},
      {1, 16, 96, 56, 56, 3, 1, {1, 1}, {1, 1}, {}, {{"cgc_op.add", {}, std::vector<int64_t>{1, 96, 56, 56}}}},
  };
  for (const Case &c : cases) {
    Pair p = build(c, rng);
    ASSERT_FALSE(p.unfused.empty()) << name(c);
    Tensor pooled(CGC_DTYPE_FLOAT32, {c.batch, c.midC, 1, 1});
    KernelDesc pool = Desc("cgc_op.global_avg_pool").in(*p.y).out(pooled).get();
    runKernel(*make(pool), {p.y}, {&pooled}, pool1());
    const std::vector<double> expectedPool = pooled.values();
    // The depthwise convolution alone, on the stored expanded value.
    std::vector<const Tensor *> alone = {p.expanded};
    alone.insert(alone.end(), p.depthwiseInputs.begin(), p.depthwiseInputs.end());
    KernelOptions aloneOptions;
    aloneOptions.constantInputs = {false, true, true};
    std::string reason;
    std::unique_ptr<Kernel> dwPool =
        createDepthwisePool(p.depthwise, p.depthwiseChain, pool, aloneOptions, reason);
    ASSERT_TRUE(dwPool) << name(c) << ": " << reason;
    EXPECT_NE(dwPool->describe().find("global average pool"), std::string::npos)
        << dwPool->describe();
    for (ThreadPool *threads : {&pool1(), &pool3()}) {
      Tensor y(CGC_DTYPE_FLOAT32, p.y->shape(), Layout::ChannelsLast);
      Tensor means(CGC_DTYPE_FLOAT32, {c.batch, c.midC, 1, 1});
      runKernel(*dwPool, alone, {&y, &means}, *threads);
      EXPECT_TRUE(closeTo(y, p.unfused, 1e-4, 1e-4, name(c) + " alone, result"));
      EXPECT_TRUE(closeTo(means, expectedPool, 1e-5, 1e-6, name(c) + " alone, pool"));
    }
    std::unique_ptr<Kernel> both = createExpandDepthwise(
        p.expand, p.expandChain, p.depthwise, p.depthwiseChain, p.options, reason, &pool);
    ASSERT_TRUE(both) << name(c) << ": " << reason;
    EXPECT_NE(both->describe().find("global average pool"), std::string::npos) << both->describe();
    for (ThreadPool *threads : {&pool1(), &pool3()}) {
      Tensor y(CGC_DTYPE_FLOAT32, p.y->shape(), Layout::ChannelsLast);
      Tensor means(CGC_DTYPE_FLOAT32, {c.batch, c.midC, 1, 1});
      runKernel(*both, p.fusedInputs, {&y, &means}, *threads);
      EXPECT_TRUE(closeTo(y, p.unfused, 1e-4, 1e-4, name(c) + " result"));
      EXPECT_TRUE(closeTo(means, expectedPool, 1e-5, 1e-6, name(c) + " pool [" + both->describe() + "]"));
    }
  }
}

TEST(ExpandDepthwise, RefusesWhatItDoesNotTakeWithAReason) {
  if (!fusionExpected())
    GTEST_SKIP() << "no AVX-512, or CGC_CPU_PACKED_GEMM=0 or "
                    "CGC_CPU_EXPAND_DEPTHWISE=0: never fused";
  std::mt19937 rng(92);
  const Op relu6{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}};
  struct Refused {
    Case c;
    std::string reason;
  };
  std::vector<Refused> refused = {
      // 1 x 96 x 28 x 28 floats: 301 KB, in L2 between two kernels anyway.
      {{1, 24, 96, 28, 28, 3, 1, {1, 1}, {1, 1}, {relu6}, {relu6}}, "stays in L2"},
      // A residual added to the expanded value needs each row's place in the
      // whole value, which the ring does not keep.
      {{1, 16, 96, 56, 56, 3, 1, {1, 1}, {1, 1},
        {{"cgc_op.add", {}, std::vector<int64_t>{1, 96, 56, 56}}}, {}},
       "varies across positions"},
      // 7x7 depthwise: the direct kernel's generic taps are not faster than
      // oneDNN's, so the unfused depthwise runs there.
      {{1, 16, 96, 56, 56, 7, 1, {3, 3}, {3, 3}, {}, {}}, "does not run"},
  };
  for (const Refused &r : refused) {
    Pair p = build(r.c, rng);
    std::string reason;
    std::unique_ptr<Kernel> fused = createExpandDepthwise(p.expand, p.expandChain, p.depthwise,
                                                          p.depthwiseChain, p.options, reason);
    EXPECT_FALSE(fused) << name(r.c) << ": " << fused->describe();
    EXPECT_NE(reason.find(r.reason), std::string::npos) << name(r.c) << ": " << reason;
  }
  // Weights that are not constant: the GEMM packs them once per address.
  Pair p = build({1, 16, 96, 56, 56, 3, 1, {1, 1}, {1, 1}, {relu6}, {relu6}}, rng);
  p.options.constantInputs[1] = false;
  std::string reason;
  EXPECT_FALSE(createExpandDepthwise(p.expand, p.expandChain, p.depthwise, p.depthwiseChain,
                                     p.options, reason));
  EXPECT_NE(reason.find("constant weights"), std::string::npos) << reason;
}

TEST(DepthwiseBlock, ProjectionMatchesTheKernelsRunApart) {
  // A 1x1 projection of the depthwise result computed from each block of
  // depthwise rows (the result never stored), with and without the
  // expansion before it: MobileNetV2's first block (no expansion, 32 -> 16
  // on 112x112), its inverted residuals (relu6, then the projection plus
  // the block's input), strides 1 and 2, 3x3 and 5x5, batch 2, channel
  // counts that are not multiples of 16, no projection bias, a clip after
  // the residual, a vertically dilated depthwise kernel. On 1 and 3
  // threads (pieces of rows meeting inside an image and across images).
  std::mt19937 rng(94);
  const Op relu6{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}};
  auto residual = [](int64_t n, int64_t c, int64_t h, int64_t w) {
    return Op{"cgc_op.add", {}, std::vector<int64_t>{n, c, h, w}};
  };
  std::vector<Case> cases = {
      {1, 0, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {}, {relu6}, 1, false, 16},
      {2, 0, 40, 116, 124, 5, 2, {2, 2}, {2, 2}, {}, {{"cgc_op.relu"}}, 1, false, 24, false,
       {residual(2, 24, 58, 62), relu6}},
      {1, 24, 144, 56, 56, 3, 1, {1, 1}, {1, 1}, {relu6}, {relu6}, 1, true, 24, true,
       {residual(1, 24, 56, 56)}},
      {2, 16, 96, 80, 80, 3, 2, {0, 0}, {1, 1}, {relu6}, {relu6}, 1, true, 24, false},
      {1, 16, 80, 60, 58, 3, 1, {2, 1}, {2, 1}, {relu6}, {}, 2, true, 40, true,
       {residual(1, 40, 60, 58)}},
  };
  for (const Case &c : cases) {
    Pair p = build(c, rng);
    ASSERT_FALSE(p.unfused.empty()) << name(c);
    std::string reason;
    std::unique_ptr<Kernel> fused = fuseBlock(c, p, reason);
    if (!projectionExpected(c)) {
      EXPECT_FALSE(fused) << name(c);
      EXPECT_FALSE(reason.empty());
      continue;
    }
    ASSERT_TRUE(fused) << name(c) << ": " << reason;
    const std::string description = fused->describe();
    EXPECT_NE(description.find("depthwise rows, which are never stored"), std::string::npos)
        << description;
    EXPECT_EQ(description.find("ring") != std::string::npos, c.expand) << description;
    expectMatchesRunApart(*fused, p, name(c));
  }
}

TEST(DepthwiseBlock, RefusesAProjectionItDoesNotTakeWithAReason) {
  const Case plain = {1, 0, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {}, {}, 1, false, 16};
  if (!projectionExpected(plain))
    GTEST_SKIP() << "no AVX-512, or CGC_CPU_PACKED_GEMM=0 or "
                    "CGC_CPU_DEPTHWISE_PROJECT=0: never fused";
  std::mt19937 rng(95);
  const Op relu6{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}};
  struct Refused {
    Case c;
    std::string reason;
  };
  std::vector<Refused> refused = {
      // 1 x 96 x 28 x 28 floats: 301 KB, in L2 between two kernels anyway.
      {{1, 0, 96, 28, 28, 3, 1, {1, 1}, {1, 1}, {}, {relu6}, 1, false, 24}, "stays in L2"},
      // Swish after the depthwise convolution is a pass over its stored
      // rows: a block buffer holds only some of them.
      {{1, 0, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {}, {{"cgc_op.swish"}}, 1, false, 16},
       "more than a clip or relu"},
      // Swish after the projection has no form in the packed GEMM's
      // epilogue.
      {{1, 0, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {}, {}, 1, false, 16, true,
        {{"cgc_op.swish"}}},
       "packed GEMM's epilogue"},
      // Neither an expansion nor a projection: the depthwise kernel alone.
      {{1, 0, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {}, {}, 1, false, 0}, "neither"},
  };
  for (const Refused &r : refused) {
    Pair p = build(r.c, rng);
    std::string reason;
    std::unique_ptr<Kernel> fused = fuseBlock(r.c, p, reason);
    EXPECT_FALSE(fused) << name(r.c) << ": " << (fused ? fused->describe() : "");
    EXPECT_NE(reason.find(r.reason), std::string::npos) << name(r.c) << ": " << reason;
  }
}

TEST(DepthwiseBlock, StemRowsIntoTheRing) {
  // A CNN's first convolution (3 channels of an NCHW image, 3x3 stride 2)
  // making the ring's rows in place of an expansion: MobileNetV2's start
  // (relu6, the depthwise convolution, its 32->16 projection; the stem's
  // 112x112x32 result and the depthwise result never stored), EfficientNet's
  // (swish after both: the stem's swish per run of ring rows), a stride-2
  // depthwise convolution on batch 2. On 1 and 3 threads.
  std::mt19937 rng(97);
  const Op relu6{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}};
  const Op swish{"cgc_op.swish"};
  std::vector<Case> cases = {
      {1, 3, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {relu6}, {relu6}, 1, true, 16, true, {}, true},
      {1, 3, 32, 112, 112, 3, 1, {1, 1}, {1, 1}, {swish}, {swish}, 1, true, 0, true, {}, true},
      {2, 3, 96, 80, 80, 3, 2, {0, 0}, {1, 1}, {relu6}, {relu6}, 1, true, 24, false, {}, true},
  };
  for (const Case &c : cases) {
    Pair p = build(c, rng);
    ASSERT_FALSE(p.unfused.empty()) << name(c);
    std::string reason;
    std::unique_ptr<Kernel> fused = fuseBlock(c, p, reason);
    // The stem's rows need no packed GEMM; a projection does.
    const bool expected = cpuHasAvx512() && choiceOn("CGC_CPU_EXPAND_DEPTHWISE") &&
                          choiceOn("CGC_CPU_STEM_DEPTHWISE") &&
                          choiceOn("CGC_CPU_STEM_CONVOLUTION") &&
                          choiceOn("CGC_CPU_CHANNELS_LAST_DEPTHWISE") &&
                          (!c.outC || projectionExpected(c));
    if (!expected) {
      EXPECT_FALSE(fused) << name(c) << ": " << fused->describe();
      continue;
    }
    ASSERT_TRUE(fused) << name(c) << ": " << reason;
    const std::string description = fused->describe();
    EXPECT_NE(description.find("input channels read in place"), std::string::npos)
        << description;
    EXPECT_NE(description.find("into a ring"), std::string::npos) << description;
    expectMatchesRunApart(*fused, p, name(c));
  }
}

} // namespace
