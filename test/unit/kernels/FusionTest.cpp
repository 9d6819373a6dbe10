//===- FusionTest.cpp - Fused anchors vs the same ops one by one ----------===//
//
// Each chain runs twice: as one fused kernel, and as separate kernels
// (createKernel per op, intermediate tensors in between). The results must
// agree; fusions oneDNN cannot express must be refused with a reason.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "common.h" // cpuHasAvx512
#include "sgemm.h"  // PackedSgemm::available

#include <cmath>
#include <cstring>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

/// One epilogue step: an op, its attributes and the shape of its extra
/// operand (none for unary ops).
struct Step {
  std::string op;
  std::vector<std::pair<std::string, AttrValue>> attrs = {};
  std::optional<std::vector<int64_t>> extraShape = std::nullopt;
};

struct FusedRun {
  std::vector<double> fused, unfused;
  std::vector<double> fusedOnOneThread; // the fused kernel run again on pool1
  std::string reason, description;
};

/// Builds anchor + chain, runs fused (on 3 threads, then on 1) and unfused.
/// The anchor's result, the chain's values and its full-size extra operands
/// are laid out as `layout`, `residualLayout`.
FusedRun runChain(const Desc &anchorDesc, std::vector<const Tensor *> anchorIns,
                  const std::vector<int64_t> &outShape, const std::vector<Step> &chain,
                  std::mt19937 &rng, const KernelOptions &options = {},
                  Layout layout = Layout::Contiguous,
                  Layout residualLayout = Layout::Contiguous) {
  FusedRun r;
  cgc_dtype_t dt = CGC_DTYPE_FLOAT32;
  // Unfused: anchor into t0, each step into t_{i+1}.
  std::vector<Tensor> values;
  values.emplace_back(dt, outShape, layout);
  std::vector<Tensor> extras;
  extras.reserve(chain.size());
  std::vector<KernelDesc> epilogue;
  Desc anchor = anchorDesc;
  // The anchor's own output operand is the first intermediate.
  KernelDesc a = anchor.get();
  a.outputs = {values[0].operand()};
  auto ka = make(a, options);
  if (!ka)
    return r;
  std::vector<Tensor *> out0 = {&values[0]};
  runKernel(*ka, anchorIns, out0, pool3());
  for (const Step &s : chain) {
    Desc d(s.op);
    d.in(values.back());
    const Tensor *extra = nullptr;
    if (s.extraShape) {
      extras.emplace_back(dt, *s.extraShape,
                          *s.extraShape == outShape ? residualLayout : Layout::Contiguous);
      fillRandom(extras.back(), rng, s.op == "cgc_op.div" ? 0.5 : -1, 2);
      extra = &extras.back();
      d.in(*extra);
    }
    for (const auto &[k, v] : s.attrs)
      d.attr(k, v);
    Tensor next(dt, outShape, layout);
    d.out(next);
    epilogue.push_back(d.get());
    auto k = make(d);
    if (!k)
      return r;
    std::vector<const Tensor *> ins = {&values.back()};
    if (extra)
      ins.push_back(extra);
    runKernel(*k, ins, {&next}, pool3());
    values.push_back(std::move(next));
  }
  r.unfused = values.back().values();
  // Fused.
  Tensor out(dt, outShape, layout);
  epilogue.back().outputs = {out.operand()};
  std::unique_ptr<Kernel> fused = createFusedKernel(anchor.get(), epilogue, options, r.reason);
  if (!fused)
    return r;
  r.description = fused->describe();
  std::vector<const Tensor *> ins = anchorIns;
  for (const Tensor &e : extras)
    ins.push_back(&e);
  runKernel(*fused, ins, {&out}, pool3());
  r.fused = out.values();
  Tensor again(dt, outShape, layout);
  runKernel(*fused, ins, {&again}, pool1());
  r.fusedOnOneThread = again.values();
  return r;
}

/// " op1 op2 ...": a chain's ops, for messages.
std::string chainName(const std::vector<Step> &chain) {
  std::string name;
  for (const Step &s : chain)
    name += " " + s.op;
  return name;
}

Desc convDesc(const Tensor &x, const Tensor &w, const Tensor *b, const Tensor &y,
              std::vector<int64_t> pads, int64_t groups = 1) {
  Desc d("cgc_op.convolution");
  d.in(x).in(w);
  if (b)
    d.in(*b);
  d.out(y).ints("strides", {1, 1}).ints("dilations", {1, 1}).ints("start_padding", pads)
      .ints("end_padding", pads).i("groups", groups);
  return d;
}

AttrValue F(double v) { return AttrValue::ofFloat(v); }

std::vector<std::vector<Step>> chains(const std::vector<int64_t> &out, int64_t channels) {
  std::vector<int64_t> perChannel = {channels, 1, 1};
  return {
      {{"cgc_op.relu"}},
      {{"cgc_op.add", {}, out}, {"cgc_op.relu"}},              // residual + relu
      {{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}}},       // relu6
      {{"cgc_op.mul", {}, perChannel}, {"cgc_op.add", {}, perChannel}, {"cgc_op.sigmoid"}},
      {{"cgc_op.hard_swish"}},
      {{"cgc_op.gelu"}},
      {{"cgc_op.gelu", {{"approximate", AttrValue::ofString("tanh")}}}},
      {{"cgc_op.leaky_relu", {{"alpha", F(0.1)}}}, {"cgc_op.sub", {}, std::vector<int64_t>{1}}},
      {{"cgc_op.elu", {{"alpha", F(0.7)}}}, {"cgc_op.tanh"}},
      {{"cgc_op.hard_sigmoid", {{"alpha", F(0.3)}, {"beta", F(0.4)}}}},
      {{"cgc_op.selu"}, {"cgc_op.abs"}, {"cgc_op.neg"}},
      {{"cgc_op.celu", {{"alpha", F(1.5)}}}, {"cgc_op.max", {}, perChannel}},
      {{"cgc_op.relu"}, {"cgc_op.sqrt"}, {"cgc_op.min", {}, out}},
      {{"cgc_op.softplus"}, {"cgc_op.log"}, {"cgc_op.exp"}},
      {{"cgc_op.div", {}, perChannel}, {"cgc_op.mish"}, {"cgc_op.identity"}},
      {{"cgc_op.relu"}, {"cgc_op.add", {}, std::vector<int64_t>{1}}, {"cgc_op.reciprocal"}},
      {{"cgc_op.round"}},
      {{"cgc_op.swish"}},                                      // SiLU, folded by the JIT
      {{"cgc_op.swish"}, {"cgc_op.add", {}, out}},
  };
}

TEST(Fusion, ConvolutionChainsMatchUnfused) {
  std::mt19937 rng(70);
  // 12x10 outputs: 1x1 convolutions take oneDNN's GEMM path (chain applied
  // after), 3x3 the blocked kernel (chain as post-ops); stride 2 1x1 is
  // subsampled first.
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast})
    for (int64_t groups : {1, 8})
      for (int64_t k : {1, 3})
        for (int64_t stride : {1, 2}) {
        if (stride == 2 && (k != 1 || groups != 1))
          continue;
        // 64 -> 96 channels on 24x20: every variant is big enough to be
        // split across the pool (row bands, channel blocks).
        Tensor x(CGC_DTYPE_FLOAT32, {1, 64, 24 * stride, 20 * stride}, layout);
        Tensor w(CGC_DTYPE_FLOAT32, {96, 64 / groups, k, k}), b(CGC_DTYPE_FLOAT32, {96});
        fillRandom(x, rng, -1, 1);
        fillRandom(w, rng, -0.2, 0.2);
        fillRandom(b, rng, -0.5, 0.5);
        std::vector<int64_t> out = {1, 96, 24, 20};
        Tensor y(CGC_DTYPE_FLOAT32, out);
        int64_t p = k / 2;
        for (const auto &chain : chains(out, 96)) {
          KernelOptions options;
          options.constantInputs = {false, true, true};
          Desc conv = convDesc(x, w, &b, y, {p, p}, groups);
          conv.ints("strides", {stride, stride});
          FusedRun r = runChain(conv, {&x, &w, &b}, out, chain, rng, options);
          const std::string name = chainName(chain);
          ASSERT_FALSE(r.fused.empty()) << "not fused:" << name << ": " << r.reason;
          if (k == 1 && groups == 1 && layout == Layout::Contiguous)
            EXPECT_NE(r.description.find("epilogue after"), std::string::npos) << r.description;
          if (stride == 2 && layout == Layout::Contiguous)
            EXPECT_NE(r.description.find("subsampled"), std::string::npos) << r.description;
          Tensor t(CGC_DTYPE_FLOAT32, out);
          t.setValues(r.fused);
          EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "conv" + name + " [" + r.description + "]"));
        }
      }
}

TEST(Fusion, SmallConvolutionChainsMatchUnfused) {
  // A small unpadded convolution (LeNet's 6->16 5x5 on 14x14) with every
  // chain: those of unary ops run in the patch kernel's epilogue (its
  // windows gathered into the packed GEMM's B), the others elsewhere; all
  // match the unfused run.
  std::mt19937 rng(71);
  Tensor x(CGC_DTYPE_FLOAT32, {1, 6, 14, 14});
  Tensor w(CGC_DTYPE_FLOAT32, {16, 6, 5, 5}), b(CGC_DTYPE_FLOAT32, {16});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.2, 0.2);
  fillRandom(b, rng, -0.5, 0.5);
  std::vector<int64_t> out = {1, 16, 10, 10};
  Tensor y(CGC_DTYPE_FLOAT32, out);
  int patchRuns = 0;
  for (const auto &chain : chains(out, 16)) {
    KernelOptions options;
    options.constantInputs = {false, true, true};
    FusedRun r = runChain(convDesc(x, w, &b, y, {0, 0}, 1), {&x, &w, &b}, out, chain, rng, options);
    const std::string name = chainName(chain);
    ASSERT_FALSE(r.fused.empty()) << "not fused:" << name << ": " << r.reason;
    patchRuns += r.description.find("overlapping windows") != std::string::npos;
    Tensor t(CGC_DTYPE_FLOAT32, out);
    t.setValues(r.fused);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "conv" + name + " [" + r.description + "]"));
  }
  if (PackedSgemm::available() && activeConfig().patchConvolution)
    EXPECT_GE(patchRuns, 3); // relu, clip, hard_sigmoid at least
}

TEST(Fusion, ChannelsLastLogisticChainsRunAsEpilogue) {
  // Swish and sigmoid after a channels-last convolution run as our epilogue
  // over the result (oneDNN's post-op injector for them is slower), in
  // channels-last order, with whatever follows them in the chain: 1x1 and
  // 3x3, split across the pool and on one thread. With AVX-512 the 1x1
  // convolution is the packed GEMM's, which runs the epilogue over each
  // block of rows it finished.
  std::mt19937 rng(71);
  std::vector<int64_t> out = {1, 96, 24, 20};
  std::vector<int64_t> perChannel = {96, 1, 1};
  const std::vector<std::vector<Step>> logisticChains = {
      {{"cgc_op.swish"}},
      {{"cgc_op.sigmoid"}},
      {{"cgc_op.swish"}, {"cgc_op.add", {}, out}},
      {{"cgc_op.mul", {}, perChannel}, {"cgc_op.add", {}, perChannel}, {"cgc_op.swish"}},
  };
  for (int64_t k : {1, 3}) {
    Tensor x(CGC_DTYPE_FLOAT32, {1, 64, 24, 20}, Layout::ChannelsLast);
    Tensor w(CGC_DTYPE_FLOAT32, {96, 64, k, k}), b(CGC_DTYPE_FLOAT32, {96});
    fillRandom(x, rng, -1, 1);
    fillRandom(w, rng, -0.2, 0.2);
    fillRandom(b, rng, -0.5, 0.5);
    Tensor y(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
    for (const auto &chain : logisticChains) {
      KernelOptions options;
      options.constantInputs = {false, true, true};
      Desc conv = convDesc(x, w, &b, y, {k / 2, k / 2});
      FusedRun r = runChain(conv, {&x, &w, &b}, out, chain, rng, options, Layout::ChannelsLast,
                            Layout::ChannelsLast);
      const std::string name = chainName(chain);
      ASSERT_FALSE(r.fused.empty()) << "not fused:" << name << ": " << r.reason;
      EXPECT_TRUE(r.description.find("epilogue after") != std::string::npos ||
                  r.description.find("epilogue per block of rows") != std::string::npos)
          << r.description;
      Tensor t(CGC_DTYPE_FLOAT32, out);
      t.setValues(r.fused);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "conv" + name + " [" + r.description + "]"));
      t.setValues(r.fusedOnOneThread);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "conv" + name + " on one thread"));
    }
  }
}

TEST(Fusion, ResidualAddedInPlaceAsOneDnnSum) {
  // A channels-last 1x1 convolution + residual add + relu: the residual runs
  // as oneDNN's sum post-op (result preloaded with it) — copied in when it
  // is another buffer, nothing copied when it is the result itself. On a
  // 7x7 plane at pool3 the pieces are channel blocks computed in dense
  // temporaries, the residual gathered into them. With AVX-512 the packed
  // GEMM runs it instead and adds the residual in each tile's epilogue,
  // reading each element before it stores over it (the same two cases).
  for (int64_t side : {14, 7}) {
    SCOPED_TRACE("plane " + std::to_string(side));
    std::mt19937 rng(76);
    const std::vector<int64_t> shape = {1, 256, side, side};
    const int64_t inC = side == 7 ? 512 : 64; // enough work to split
    Tensor x(CGC_DTYPE_FLOAT32, {1, inC, side, side}, Layout::ChannelsLast);
    Tensor w(CGC_DTYPE_FLOAT32, {256, inC, 1, 1}), b(CGC_DTYPE_FLOAT32, {256});
    Tensor r(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
    Tensor t(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
    Tensor y(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
    fillRandom(x, rng, -1, 1);
    fillRandom(w, rng, -0.2, 0.2);
    fillRandom(b, rng, -0.5, 0.5);
    fillRandom(r, rng, -1, 1);
    KernelOptions options;
    options.constantInputs = {false, true, true, false};
    Desc conv = convDesc(x, w, &b, t, {0, 0});
    KernelDesc add = Desc("cgc_op.add").in(t).in(r).out(t).get();
    KernelDesc relu = Desc("cgc_op.relu").in(t).out(y).get();
    // Unfused reference.
    runKernel(*make(conv.get(), options), {&x, &w, &b}, {&t}, pool1());
    runKernel(*make(add), {&t, &r}, {&t}, pool1());
    runKernel(*make(relu), {&t}, {&y}, pool1());
    std::vector<double> expected = y.values();
    std::string reason;
    std::unique_ptr<Kernel> fused = createFusedKernel(conv.get(), {add, relu}, options, reason);
    ASSERT_TRUE(fused) << reason;
    EXPECT_TRUE(fused->describe().find("residual accumulated in place") != std::string::npos ||
                fused->describe().find("residual may be in place") != std::string::npos)
        << fused->describe();
    EXPECT_EQ(fused->inPlaceInput(), 3) << fused->describe();
    for (ThreadPool *pool : {&pool1(), &pool3()}) {
      // The residual in its own buffer: it stays unchanged.
      std::vector<double> residual = r.values();
      Tensor out(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
      runKernel(*fused, {&x, &w, &b, &r}, {&out}, *pool);
      EXPECT_TRUE(
          closeTo(out, expected, 1e-5, 1e-5, "residual copied [" + fused->describe() + "]"));
      EXPECT_EQ(r.values(), residual);
      // In place: the result buffer holds the residual.
      Tensor inPlace(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
      inPlace.setValues(residual);
      runKernel(*fused, {&x, &w, &b, &inPlace}, {&inPlace}, *pool);
      EXPECT_TRUE(closeTo(inPlace, expected, 1e-5, 1e-5, "in place"));
    }
  }
}

/// A float32 convolution of `in` (N, C, H, W) into `outC` channels, k x k
/// with `stride`, `dilation` and `pad` on every side, on channels-last
/// operands with random constant weights, then `chain` (its full-size
/// operands laid out as `residualLayout`): checks that fused and unfused
/// (the same convolution kernel, then each op) agree on 3 threads and on
/// 1, and returns the fused kernel's description.
std::string checkChannelsLastConvChain(const std::vector<int64_t> &in, int64_t outC, int64_t k,
                                       int64_t stride, int64_t dilation, int64_t pad,
                                       const std::vector<Step> &chain, Layout residualLayout,
                                       std::mt19937 &rng) {
  std::vector<int64_t> out = {in[0], outC};
  for (size_t d = 2; d < 4; ++d)
    out.push_back((in[d] + 2 * pad - dilation * (k - 1) - 1) / stride + 1);
  Tensor x(CGC_DTYPE_FLOAT32, in, Layout::ChannelsLast);
  Tensor w(CGC_DTYPE_FLOAT32, {outC, in[1], k, k}), b(CGC_DTYPE_FLOAT32, {outC});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.2, 0.2);
  fillRandom(b, rng, -0.5, 0.5);
  Tensor y(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
  KernelOptions options;
  options.constantInputs = {false, true, true};
  Desc conv = convDesc(x, w, &b, y, {pad, pad});
  conv.ints("strides", {stride, stride}).ints("dilations", {dilation, dilation});
  FusedRun r = runChain(conv, {&x, &w, &b}, out, chain, rng, options, Layout::ChannelsLast,
                        residualLayout);
  EXPECT_FALSE(r.fused.empty()) << "not fused: " << r.reason;
  if (r.fused.empty())
    return "";
  Tensor t(CGC_DTYPE_FLOAT32, out);
  t.setValues(r.fused);
  EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "fused [" + r.description + "]"));
  t.setValues(r.fusedOnOneThread);
  EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "fused on one thread"));
  return r.description;
}

TEST(Fusion, StridedPointwiseTakesItsChain) {
  // A strided channels-last 1x1 convolution (its input gathered for the
  // packed GEMM, Convolution.StridedPointwiseChannelsLastRunsOnThePackedGemm)
  // with a residual add and a relu, as a ResNet's downsample path would
  // have them.
  std::mt19937 rng(76);
  const std::vector<int64_t> out = {1, 128, 14, 14};
  const std::string what = checkChannelsLastConvChain(
      {1, 64, 28, 28}, 128, 1, 2, 1, 0, {{"cgc_op.add", {}, out}, {"cgc_op.relu"}},
      Layout::ChannelsLast, rng);
  if (PackedSgemm::available() && activeConfig().subsampledPointwise)
    EXPECT_NE(what.find("input subsampled"), std::string::npos) << what;
}

TEST(Fusion, WinogradConvolutionAppliesItsChain) {
  // A 3x3 convolution on Winograd's F(4x4,3x3) on the packed GEMM
  // (Convolution.WinogradOnThePackedGemmMatchesTheOracle), dilated (a
  // band's output rows are 2 apart), with a clip leading its chain
  // (applied before the store) and a residual add after it (on each output
  // row), the residual NCHW while the result is channels-last.
  std::mt19937 rng(77);
  const std::vector<int64_t> out = {1, 96, 22, 25};
  const std::vector<Step> chain = {{"cgc_op.clip", {{"min", F(-0.5)}, {"max", F(0.75)}}},
                                   {"cgc_op.add", {}, out}};
  const std::string what =
      checkChannelsLastConvChain({1, 64, 22, 25}, 96, 3, 1, 2, 2, chain, Layout::Contiguous, rng);
  if (PackedSgemm::available() && activeConfig().winogradGemm != 0) {
    EXPECT_NE(what.find("Winograd F(4x4,3x3) on the packed GEMM"), std::string::npos) << what;
    EXPECT_NE(what.find("clip before the store"), std::string::npos) << what;
  }
}

TEST(Fusion, ResidualInAnotherLayoutThanTheResult) {
  // Every combination of layouts of input, result and full-size residual:
  // the fused kernel (when it is created) agrees with the unfused ops.
  // oneDNN 2.6's GEMM convolution reads such a residual in the result's
  // layout; that fusion must be refused.
  std::mt19937 rng(75);
  for (int64_t k : {1, 3})
    for (Layout xl : {Layout::Contiguous, Layout::ChannelsLast})
      for (Layout yl : {Layout::Contiguous, Layout::ChannelsLast})
        for (Layout rl : {Layout::Contiguous, Layout::ChannelsLast}) {
          Tensor x(CGC_DTYPE_FLOAT32, {1, 64, 14, 14}, xl);
          Tensor w(CGC_DTYPE_FLOAT32, {64, 64, k, k}), b(CGC_DTYPE_FLOAT32, {64});
          Tensor r(CGC_DTYPE_FLOAT32, {1, 64, 14, 14}, rl);
          fillRandom(x, rng, -1, 1);
          fillRandom(w, rng, -0.2, 0.2);
          fillRandom(b, rng, -0.5, 0.5);
          fillRandom(r, rng, -1, 1);
          Tensor t(CGC_DTYPE_FLOAT32, {1, 64, 14, 14}, yl), y(CGC_DTYPE_FLOAT32, {1, 64, 14, 14}, yl);
          KernelOptions options;
          options.constantInputs = {false, true, true, false};
          Desc conv = convDesc(x, w, &b, t, {k / 2, k / 2});
          KernelDesc add = Desc("cgc_op.add").in(t).in(r).out(t).get();
          KernelDesc relu = Desc("cgc_op.relu").in(t).out(y).get();
          // Unfused.
          auto kc = make(conv.get(), options);
          runKernel(*kc, {&x, &w, &b}, {&t}, pool3());
          auto ka = make(add);
          runKernel(*ka, {&t, &r}, {&t}, pool3());
          auto kr = make(relu);
          runKernel(*kr, {&t}, {&y}, pool3());
          std::vector<double> expected = y.values();
          // Fused.
          std::string reason;
          Tensor out(CGC_DTYPE_FLOAT32, {1, 64, 14, 14}, yl);
          relu.outputs = {out.operand()};
          auto fused = createFusedKernel(conv.get(), {add, relu}, options, reason);
          std::string name = "k" + std::to_string(k) + " x" + std::to_string(int(xl)) + " y" +
                             std::to_string(int(yl)) + " r" + std::to_string(int(rl));
          if (!fused) {
            EXPECT_NE(reason.find("laid out unlike the result"), std::string::npos) << name << ": " << reason;
            continue;
          }
          runKernel(*fused, {&x, &w, &b, &r}, {&out}, pool3());
          EXPECT_TRUE(closeTo(out, expected, 1e-4, 1e-4, name + " [" + fused->describe() + "]"));
        }
}

// Constant weights mapped from a file (as the runtime maps a compiled
// model's constants): once prepared, their pages are handed back
// (MADV_PAGEOUT), and a split for another thread count prepares them again
// from the re-read file.
TEST(Fusion, ConvolutionWeightsFromAFileStayCorrectAfterTheirPagesAreReleased) {
  std::mt19937 rng(76);
  Tensor x(CGC_DTYPE_FLOAT32, {1, 128, 14, 14}, Layout::ChannelsLast);
  Tensor w(CGC_DTYPE_FLOAT32, {256, 128, 3, 3}), b(CGC_DTYPE_FLOAT32, {256}); // 1.1 MB
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.1, 0.1);
  fillRandom(b, rng, -0.5, 0.5);
  char path[] = "/tmp/cgc-conv-weights-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  size_t bytes = size_t(w.size()) * 4;
  ASSERT_EQ(write(fd, w.data(), bytes), ssize_t(bytes));
  void *mapped = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  unlink(path);
  ASSERT_NE(mapped, MAP_FAILED);
  Tensor y0(CGC_DTYPE_FLOAT32, {1, 256, 14, 14}, Layout::ChannelsLast);
  auto plain = make(convDesc(x, w, &b, y0, {1, 1}).get());
  runKernel(*plain, {&x, &w, &b}, {&y0}, pool1());
  std::vector<double> expected = y0.values();
  Tensor y(CGC_DTYPE_FLOAT32, {1, 256, 14, 14}, Layout::ChannelsLast);
  KernelOptions options;
  options.constantInputs = {false, true, true};
  auto kernel = make(convDesc(x, w, &b, y, {1, 1}).get(), options);
  ASSERT_TRUE(kernel);
  EXPECT_NE(kernel->describe().find("weights prepared once"), std::string::npos)
      << kernel->describe();
  for (ThreadPool *pool : {&pool1(), &pool3(), &pool1()}) {
    const void *in[] = {x.data(), mapped, b.data()};
    void *out[] = {y.data()};
    kernel->run({in, out}, *pool);
    EXPECT_TRUE(closeTo(y, expected, 1e-5, 1e-4, kernel->describe() + " on " +
                                                     std::to_string(pool->size()) + " threads"));
  }
  munmap(mapped, bytes);
}

TEST(Fusion, ChannelSplitConvolutionSlicesExtraOperands) {
  // 7x7 outputs with 64 filters run as output-channel blocks: per-channel and
  // full-shape extra operands are sliced with them. (5x5: a 3x3 would run
  // unfused on Winograd, fused on the direct kernel, and the chain's
  // reciprocal turns their last-bit differences near zero into 1e-4.)
  std::mt19937 rng(74);
  Tensor x(CGC_DTYPE_FLOAT32, {1, 96, 7, 7}), w(CGC_DTYPE_FLOAT32, {64, 96, 5, 5}),
      b(CGC_DTYPE_FLOAT32, {64});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.3, 0.3);
  fillRandom(b, rng, -0.5, 0.5);
  std::vector<int64_t> out = {1, 64, 7, 7};
  Tensor y(CGC_DTYPE_FLOAT32, out);
  for (const auto &chain : chains(out, 64)) {
    KernelOptions options;
    options.constantInputs = {false, true, true};
    FusedRun r = runChain(convDesc(x, w, &b, y, {2, 2}), {&x, &w, &b}, out, chain, rng, options);
    ASSERT_FALSE(r.fused.empty()) << r.reason;
    Tensor t(CGC_DTYPE_FLOAT32, out);
    t.setValues(r.fused);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "channel split [" + r.description + "]"));
  }
}

TEST(Fusion, DirectDepthwiseTakesAnyElementwiseChain) {
  // Planes big enough for the direct kernel; chains with ops oneDNN has no
  // post-op for (floor, sign, pow) fuse there too.
  std::mt19937 rng(73);
  Tensor x(CGC_DTYPE_FLOAT32, {2, 6, 20, 24}), w(CGC_DTYPE_FLOAT32, {6, 1, 3, 3}),
      b(CGC_DTYPE_FLOAT32, {6});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -1, 1);
  fillRandom(b, rng, -1, 1);
  std::vector<int64_t> out = {2, 6, 20, 24};
  Tensor y(CGC_DTYPE_FLOAT32, out);
  std::vector<std::vector<Step>> extra = chains(out, 6);
  extra.push_back({{"cgc_op.floor"}, {"cgc_op.sign"}});
  extra.push_back({{"cgc_op.pow", {}, std::vector<int64_t>{1}}, {"cgc_op.add", {}, out}});
  for (const auto &chain : extra) {
    FusedRun r = runChain(convDesc(x, w, &b, y, {1, 1}, 6), {&x, &w, &b}, out, chain, rng);
    const std::string name = chainName(chain);
    ASSERT_FALSE(r.fused.empty()) << "not fused:" << name << ": " << r.reason;
    EXPECT_NE(r.description.find("direct depthwise"), std::string::npos) << r.description;
    Tensor t(CGC_DTYPE_FLOAT32, out);
    t.setValues(r.fused);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "depthwise" + name + " [" + r.description + "]"));
  }
}

TEST(Fusion, ChannelsLastDepthwiseTakesAnyElementwiseChain) {
  // Channels-last depthwise convolutions run on the direct AVX-512 kernel
  // with the chain applied per output row: clip (relu6), swish, full-size
  // residuals laid out channels-last and NCHW, per-channel operands, and the
  // whole chain list; 3x3 stride 1 and 5x5 stride 2 with asymmetric
  // padding, 40 channels (a partial last vector), batch 2; on 3 threads and
  // on 1.
  std::mt19937 rng(77);
  struct Shape {
    int64_t k, stride;
    std::vector<int64_t> padB, padE;
    int64_t H, W;
  };
  // The last one is large enough (2.2M multiply-adds) to be split across
  // the pool in pieces of rows.
  for (const Shape &sh : {Shape{3, 1, {1, 1}, {1, 1}, 13, 11}, Shape{5, 2, {2, 1}, {1, 2}, 13, 11},
                          Shape{3, 1, {1, 1}, {1, 1}, 60, 50}})
    for (Layout residual : {Layout::ChannelsLast, Layout::Contiguous}) {
      const int64_t C = 40, H = sh.H, W = sh.W;
      Tensor x(CGC_DTYPE_FLOAT32, {2, C, H, W}, Layout::ChannelsLast);
      Tensor w(CGC_DTYPE_FLOAT32, {C, 1, sh.k, sh.k}), b(CGC_DTYPE_FLOAT32, {C});
      fillRandom(x, rng, -1, 1);
      fillRandom(w, rng, -0.5, 0.5);
      fillRandom(b, rng, -0.5, 0.5);
      std::vector<int64_t> out = {2, C, (H + sh.padB[0] + sh.padE[0] - sh.k) / sh.stride + 1,
                                  (W + sh.padB[1] + sh.padE[1] - sh.k) / sh.stride + 1};
      Tensor y(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
      std::vector<std::vector<Step>> all = chains(out, C);
      all.push_back({{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}}, {"cgc_op.add", {}, out}});
      all.push_back({{"cgc_op.mul", {}, std::vector<int64_t>{1, C, 1, 1}}, {"cgc_op.swish"}});
      all.push_back({{"cgc_op.floor"}, {"cgc_op.sign"}});
      if (H > 13) // the split shape: relu6, swish, residual, per-channel
        all = {all[2], all[17], all[1], all[all.size() - 2]};
      for (const auto &chain : all) {
        KernelOptions options;
        options.constantInputs = {false, true, true};
        Desc conv = convDesc(x, w, &b, y, sh.padB, C);
        conv.ints("strides", {sh.stride, sh.stride}).ints("end_padding", sh.padE);
        FusedRun r = runChain(conv, {&x, &w, &b}, out, chain, rng, options,
                              Layout::ChannelsLast, residual);
        const std::string name = "k" + std::to_string(sh.k) + chainName(chain);
        ASSERT_FALSE(r.fused.empty()) << "not fused:" << name << ": " << r.reason;
        EXPECT_EQ(r.description.find("channels-last AVX-512") != std::string::npos,
                  cpuHasAvx512())
            << r.description;
        Tensor t(CGC_DTYPE_FLOAT32, out);
        t.setValues(r.fused);
        EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, name + " [" + r.description + "]"));
        t.setValues(r.fusedOnOneThread);
        EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, name + " 1 thread"));
      }
    }
}

TEST(Fusion, StemConvolutionTakesAnyElementwiseChain) {
  // The few-input-channel direct kernel (stem.h): relu and clip before the
  // store, every other chain over blocks of rows (swish, residuals laid out
  // channels-last and NCHW, per-channel operands).
  std::mt19937 rng(81);
  const int64_t C = 32, H = 23, W = 21;
  Tensor x(CGC_DTYPE_FLOAT32, {2, 3, H, W});
  Tensor w(CGC_DTYPE_FLOAT32, {C, 3, 3, 3}), b(CGC_DTYPE_FLOAT32, {C});
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.5, 0.5);
  fillRandom(b, rng, -0.5, 0.5);
  const std::vector<int64_t> out = {2, C, (H + 1 - 3) / 2 + 1, (W + 1 - 3) / 2 + 1};
  Tensor y(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
  for (Layout residual : {Layout::ChannelsLast, Layout::Contiguous})
    for (const auto &chain : chains(out, C)) {
      KernelOptions options;
      options.constantInputs = {false, true, true};
      Desc conv = convDesc(x, w, &b, y, {0, 0}, 1);
      conv.ints("strides", {2, 2}).ints("end_padding", {1, 1});
      FusedRun r = runChain(conv, {&x, &w, &b}, out, chain, rng, options, Layout::ChannelsLast,
                            residual);
      const std::string name = "stem" + chainName(chain);
      ASSERT_FALSE(r.fused.empty()) << "not fused:" << name << ": " << r.reason;
      if (cpuHasAvx512())
        EXPECT_NE(r.description.find("read in place"), std::string::npos) << r.description;
      Tensor t(CGC_DTYPE_FLOAT32, out);
      t.setValues(r.fused);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, name + " [" + r.description + "]"));
      t.setValues(r.fusedOnOneThread);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, name + " 1 thread"));
    }
}

TEST(Fusion, ChannelsLastDepthwiseRefusesWhatItsEpilogueCannotRun) {
  // The direct kernel takes any elementwise chain that keeps the shape and
  // dtype; anything else is refused with the reason, not run another way.
  Tensor x(CGC_DTYPE_FLOAT32, {1, 32, 10, 10}, Layout::ChannelsLast);
  Tensor w(CGC_DTYPE_FLOAT32, {32, 1, 3, 3}), b(CGC_DTYPE_FLOAT32, {32});
  Tensor t(CGC_DTYPE_FLOAT32, {1, 32, 10, 10}, Layout::ChannelsLast);
  Tensor ints(CGC_DTYPE_INT32, {32, 1, 1});
  Desc conv = convDesc(x, w, &b, t, {1, 1}, 32);
  struct Case {
    KernelDesc op;
    std::string reason;
  };
  std::vector<Case> cases = {
      {Desc("cgc_op.softmax").in(t).out(t).i("axis", 1).get(), "not an elementwise op"},
      {Desc("cgc_op.add").in(t).in(ints).out(t).get(), "cgc_op.add"},
  };
  for (const Case &c : cases) {
    std::string reason;
    std::unique_ptr<Kernel> fused = createFusedKernel(conv.get(), {c.op}, reason);
    EXPECT_FALSE(fused) << fused->describe();
    EXPECT_NE(reason.find(c.reason), std::string::npos) << c.op.op << ": " << reason;
  }
}

TEST(Fusion, ChannelsLastDepthwiseResidualInPlace) {
  // The result bound to the same bytes as the residual the chain adds (an
  // in-place add): rows are staged and copied out after the chain read the
  // residual, so the result is the unfused one.
  std::mt19937 rng(78);
  const std::vector<int64_t> shape = {1, 96, 52, 52}; // split across the pool
  Tensor x(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
  Tensor w(CGC_DTYPE_FLOAT32, {96, 1, 3, 3}), b(CGC_DTYPE_FLOAT32, {96});
  Tensor r(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
  Tensor t(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
  fillRandom(x, rng, -1, 1);
  fillRandom(w, rng, -0.5, 0.5);
  fillRandom(b, rng, -0.5, 0.5);
  fillRandom(r, rng, -1, 1);
  KernelOptions options;
  options.constantInputs = {false, true, true, false};
  Desc conv = convDesc(x, w, &b, t, {1, 1}, 96);
  KernelDesc clip =
      Desc("cgc_op.clip").in(t).out(t).attr("min", F(0)).attr("max", F(6)).get();
  KernelDesc add = Desc("cgc_op.add").in(t).in(r).out(t).get();
  runKernel(*make(conv.get(), options), {&x, &w, &b}, {&t}, pool1());
  runKernel(*make(clip), {&t}, {&t}, pool1());
  runKernel(*make(add), {&t, &r}, {&t}, pool1());
  std::vector<double> expected = t.values();
  std::string reason;
  std::unique_ptr<Kernel> fused = createFusedKernel(conv.get(), {clip, add}, options, reason);
  ASSERT_TRUE(fused) << reason;
  EXPECT_EQ(fused->describe().find("channels-last AVX-512") != std::string::npos, cpuHasAvx512())
      << fused->describe();
  for (ThreadPool *pool : {&pool1(), &pool3()}) {
    Tensor inPlace(CGC_DTYPE_FLOAT32, shape, Layout::ChannelsLast);
    inPlace.setValues(r.values());
    runKernel(*fused, {&x, &w, &b, &inPlace}, {&inPlace}, *pool);
    EXPECT_TRUE(closeTo(inPlace, expected, 1e-5, 1e-5, "in place [" + fused->describe() + "]"));
  }
}

TEST(Fusion, ChannelsLastDepthwiseClipAndReluBeforeTheStore) {
  // A clip or relu leading the chain is applied to the accumulators before
  // they are stored: bit for bit what the elementwise kernels give, NaN and
  // the sign of zero included (relu(-0) = +0, clip(-0) = -0, NaN stays NaN,
  // a clip without min). Outputs whose taps all fall in the padding are the
  // bias itself (-0, NaN, ...); a NaN input pixel spreads to its neighbours.
  std::mt19937 rng(79);
  const int64_t C = 20;
  Tensor x(CGC_DTYPE_FLOAT32, {1, C, 4, 5}, Layout::ChannelsLast);
  Tensor w(CGC_DTYPE_FLOAT32, {C, 1, 3, 3}), b(CGC_DTYPE_FLOAT32, {C});
  fillRandom(x, rng, -4, 4);
  fillRandom(w, rng, -1, 1);
  fillRandom(b, rng, -1, 1);
  const double special[] = {-0.0, 0.0, std::nan(""), -3.0, 7.0, 6.0, -INFINITY, INFINITY};
  for (int64_t c = 0; c < 8; ++c)
    b.set(c, special[c]);
  x.set(2 * 4 * 5 + 1 * 5 + 2, std::nan("")); // channel 2, (1, 2)
  // Padding 3 on the left: border columns; 1: segments spanning it.
  for (int64_t padW : {3, 1}) {
    const int64_t OW = 5 + 2 * padW - 2;
    const std::vector<int64_t> out = {1, C, 8, OW};
    Tensor t(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
    Desc conv = convDesc(x, w, &b, t, {3, padW}, C);
    KernelOptions options;
    options.constantInputs = {false, true, true};
    auto plain = make(conv.get(), options);
    ASSERT_TRUE(plain);
    if (cpuHasAvx512())
      EXPECT_EQ(plain->describe().find("border columns") != std::string::npos, padW == 3)
          << plain->describe();
    runKernel(*plain, {&x, &w, &b}, {&t}, pool1());
    // Output row 0 has no taps inside the input: it is the bias, bit for bit.
    for (int64_t c = 0; c < C; ++c) {
      float e = float(b.get(c)), a = float(t.get(c * 8 * OW + 2));
      EXPECT_TRUE(std::isnan(e) ? std::isnan(a) : std::memcmp(&e, &a, 4) == 0)
          << "channel " << c << ": " << a << " vs bias " << e << " [" << plain->describe() << "]";
    }
    std::vector<KernelDesc> chains[] = {
        {Desc("cgc_op.relu").in(t).out(t).get()},
        {Desc("cgc_op.clip").in(t).out(t).attr("min", F(-2)).attr("max", F(3)).get(),
         Desc("cgc_op.relu").in(t).out(t).get()},
        {Desc("cgc_op.clip").in(t).out(t).attr("min", F(0)).attr("max", F(6)).get()},
        {Desc("cgc_op.clip").in(t).out(t).attr("max", F(-0.5)).get()},
        {Desc("cgc_op.clip").in(t).out(t).attr("min", F(-1)).get(),
         Desc("cgc_op.abs").in(t).out(t).get()},
    };
    for (const auto &chain : chains) {
      Tensor expected(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
      expected.setValues(t.values());
      for (const KernelDesc &op : chain)
        runKernel(*make(op), {&expected}, {&expected}, pool1());
      std::string reason;
      std::unique_ptr<Kernel> fused = createFusedKernel(conv.get(), chain, options, reason);
      ASSERT_TRUE(fused) << reason;
      if (cpuHasAvx512())
        EXPECT_NE(fused->describe().find("before the store"), std::string::npos)
            << fused->describe();
      for (ThreadPool *pool : {&pool1(), &pool3()}) {
        Tensor y(CGC_DTYPE_FLOAT32, out, Layout::ChannelsLast);
        runKernel(*fused, {&x, &w, &b}, {&y}, *pool);
        int mismatches = 0;
        for (int64_t i = 0; i < y.size(); ++i) {
          float e = float(expected.get(i)), a = float(y.get(i));
          bool same = std::isnan(e) ? std::isnan(a) : std::memcmp(&e, &a, 4) == 0;
          if (!same && ++mismatches <= 3)
            ADD_FAILURE() << chain[0].op << " element " << i << ": " << a << " vs " << e << " ["
                          << fused->describe() << "]";
        }
        EXPECT_EQ(mismatches, 0);
      }
    }
  }
}

TEST(Fusion, MatMulAndGemmChainsMatchUnfused) {
  std::mt19937 rng(71);
  // BERT feed-forward: matmul + bias + gelu, and a residual add.
  Tensor a(CGC_DTYPE_FLOAT32, {1, 16, 48}), w(CGC_DTYPE_FLOAT32, {48, 64});
  fillRandom(a, rng, -1, 1);
  fillRandom(w, rng, -0.3, 0.3);
  std::vector<int64_t> out = {1, 16, 64};
  Tensor y(CGC_DTYPE_FLOAT32, out);
  std::vector<std::vector<Step>> mmChains = {
      {{"cgc_op.add", {}, std::vector<int64_t>{64}}, {"cgc_op.gelu"}},
      {{"cgc_op.add", {}, out}},
      {{"cgc_op.mul", {}, std::vector<int64_t>{1}}, {"cgc_op.tanh"}},
      {{"cgc_op.add", {}, std::vector<int64_t>{16, 1}}, {"cgc_op.relu"}},
  };
  for (bool constant : {false, true})
    for (const auto &chain : mmChains) {
      KernelOptions options;
      options.constantInputs = {false, constant};
      FusedRun r = runChain(Desc("cgc_op.matmul").in(a).in(w).out(y), {&a, &w}, out, chain, rng,
                            options);
      if (chain[0].extraShape == std::vector<int64_t>{16, 1}) {
        // A per-row operand: oneDNN has only its reference kernel for it,
        // which must be refused rather than run at 0.2 GFLOP/s.
        if (r.fused.empty()) {
          EXPECT_NE(r.reason.find("reference"), std::string::npos) << r.reason;
          continue;
        }
        EXPECT_EQ(r.description.find("ref:"), std::string::npos) << r.description;
      }
      ASSERT_FALSE(r.fused.empty()) << "matmul not fused: " << r.reason;
      EXPECT_EQ(r.description.find("ref:"), std::string::npos) << r.description;
      Tensor t(CGC_DTYPE_FLOAT32, out);
      t.setValues(r.fused);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "matmul chain [" + r.description + "]"));
    }
  Tensor ga(CGC_DTYPE_FLOAT32, {12, 20}), gb(CGC_DTYPE_FLOAT32, {30, 20}), gc(CGC_DTYPE_FLOAT32, {30});
  fillRandom(ga, rng, -1, 1);
  fillRandom(gb, rng, -1, 1);
  fillRandom(gc, rng, -1, 1);
  Tensor gy(CGC_DTYPE_FLOAT32, {12, 30});
  FusedRun r = runChain(Desc("cgc_op.gemm").in(ga).in(gb).in(gc).out(gy).b("transpose_b", true)
                            .f("alpha", 0.5).f("beta", 2.0),
                        {&ga, &gb, &gc}, {12, 30}, {{"cgc_op.relu"}, {"cgc_op.add", {}, std::vector<int64_t>{12, 30}}},
                        rng);
  ASSERT_FALSE(r.fused.empty()) << "gemm not fused: " << r.reason;
  Tensor t(CGC_DTYPE_FLOAT32, {12, 30});
  t.setValues(r.fused);
  EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "gemm chain [" + r.description + "]"));
}

TEST(Fusion, AttentionScoresChainRunsInTheTiles) {
  // Q K^T / scale + mask, batched over heads (B per head): on AVX-512 the
  // packed GEMM with B packed per batch applies the chain to its register
  // tiles (batched_gemm.h); elsewhere it runs as our Epilogue over the
  // result after oneDNN's product. Broadcast operands: a scalar, a mask per
  // key, a mask per head and key; on 3 threads and on 1.
  std::mt19937 rng(74);
  const std::vector<int64_t> out = {2, 3, 40, 20};
  Tensor q(CGC_DTYPE_FLOAT32, {2, 3, 40, 16}), kt(CGC_DTYPE_FLOAT32, {2, 3, 16, 20});
  fillRandom(q, rng, -1, 1);
  fillRandom(kt, rng, -1, 1);
  Tensor y(CGC_DTYPE_FLOAT32, out);
  const std::vector<std::vector<Step>> chains = {
      {{"cgc_op.div", {}, std::vector<int64_t>{1}}, {"cgc_op.add", {}, std::vector<int64_t>{2, 1, 1, 20}}},
      {{"cgc_op.mul", {}, std::vector<int64_t>{1}}, {"cgc_op.add", {}, std::vector<int64_t>{1, 3, 1, 20}},
       {"cgc_op.relu"}},
  };
  const char *expected = PackedSgemm::available() ? "B packed per batch" : "epilogue after";
  for (const auto &chain : chains) {
    FusedRun r = runChain(Desc("cgc_op.matmul").in(q).in(kt).out(y), {&q, &kt}, out, chain, rng);
    ASSERT_FALSE(r.fused.empty()) << "not fused: " << r.reason;
    EXPECT_NE(r.description.find(expected), std::string::npos) << r.description;
    Tensor t(CGC_DTYPE_FLOAT32, out);
    t.setValues(r.fused);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "scores [" + r.description + "]"));
    t.setValues(r.fusedOnOneThread);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "scores, 1 thread"));
  }
}

// A softmax over the last axis ends the scores' chain on AVX-512: it runs on
// each block of rows the packed GEMM completes. K^T is a transposed view
// (its panels packed by 16 x 16 transposes; K and N not multiples of 16),
// the mask varies per batch and key; the heads split across threads, or
// with fewer heads than threads each head's rows do. A softmax over
// another axis does not fuse.
TEST(Fusion, AttentionSoftmaxFusesIntoTheScores) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "the batched packed GEMM needs AVX-512";
  std::mt19937 rng(75);
  struct Case {
    std::vector<int64_t> q, kt;
  } cases[] = {
      {{2, 3, 40, 16}, {2, 3, 16, 20}},
      {{2, 3, 33, 37}, {2, 3, 37, 45}},
      {{1, 2, 200, 64}, {1, 2, 64, 200}}, // 2 heads on 3 threads
  };
  for (const Case &c : cases) {
    const std::vector<int64_t> out = {c.q[0], c.q[1], c.q[2], c.kt[3]};
    Tensor q(CGC_DTYPE_FLOAT32, c.q), kt(CGC_DTYPE_FLOAT32, c.kt, Layout::Transposed);
    fillRandom(q, rng, -1, 1);
    fillRandom(kt, rng, -1, 1);
    Tensor y(CGC_DTYPE_FLOAT32, out);
    const std::vector<Step> chain = {
        {"cgc_op.div", {}, std::vector<int64_t>{1}},
        {"cgc_op.add", {}, std::vector<int64_t>{out[0], 1, 1, out[3]}},
        {"cgc_op.softmax", {{"axis", AttrValue::ofInt(3)}}},
    };
    FusedRun r = runChain(Desc("cgc_op.matmul").in(q).in(kt).out(y), {&q, &kt}, out, chain, rng);
    ASSERT_FALSE(r.fused.empty()) << "not fused: " << r.reason;
    EXPECT_NE(r.description.find("softmax on each block of rows"), std::string::npos)
        << r.description;
    Tensor t(CGC_DTYPE_FLOAT32, out);
    t.setValues(r.fused);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-7, "probabilities [" + r.description + "]"));
    t.setValues(r.fusedOnOneThread);
    EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-7, "probabilities, 1 thread"));
    // Rows sum to 1: the softmax really ran on the fused result.
    for (int64_t row = 0; row * out[3] < int64_t(r.fused.size()); ++row) {
      double sum = 0;
      for (int64_t j = 0; j < out[3]; ++j)
        sum += r.fused[size_t(row * out[3] + j)];
      ASSERT_NEAR(sum, 1.0, 1e-5) << "row " << row;
    }
  }
  Tensor q(CGC_DTYPE_FLOAT32, {2, 3, 40, 16}), kt(CGC_DTYPE_FLOAT32, {2, 3, 16, 20});
  fillRandom(q, rng, -1, 1);
  fillRandom(kt, rng, -1, 1);
  Tensor y(CGC_DTYPE_FLOAT32, {2, 3, 40, 20});
  FusedRun r = runChain(Desc("cgc_op.matmul").in(q).in(kt).out(y), {&q, &kt}, {2, 3, 40, 20},
                        {{"cgc_op.softmax", {{"axis", AttrValue::ofInt(2)}}}}, rng);
  EXPECT_TRUE(r.fused.empty()) << r.description;
  EXPECT_NE(r.reason.find("softmax"), std::string::npos) << r.reason;
}

// A product whose B has no batch runs as one 2-D product of batch * M rows
// (oneDNN packs a constant B only for 2-D products) when A, the result and
// every post-op operand allow that view; otherwise it keeps its batch.
TEST(Fusion, SharedWeightProductsMergeTheBatchIntoRows) {
  std::mt19937 rng(73);
  std::vector<int64_t> out = {3, 40, 64};
  struct Case {
    std::vector<Step> chain;
    Layout aLayout;
    bool merged;
  } cases[] = {
      {{{"cgc_op.add", {}, std::vector<int64_t>{64}}, {"cgc_op.gelu"}}, Layout::Contiguous, true},
      {{{"cgc_op.add", {}, std::vector<int64_t>{64}}, {"cgc_op.add", {}, out}},
       Layout::Contiguous, true},
      {{{"cgc_op.mul", {}, std::vector<int64_t>{1}}}, Layout::Contiguous, true},
      // Varies along the batch but not along M: no 2-D view.
      {{{"cgc_op.add", {}, std::vector<int64_t>{3, 1, 64}}}, Layout::Contiguous, false},
      // A's rows are not one progression (dims reversed in memory).
      {{{"cgc_op.add", {}, std::vector<int64_t>{64}}}, Layout::Transposed, false},
  };
  for (bool constant : {false, true})
    for (const Case &c : cases) {
      Tensor a(CGC_DTYPE_FLOAT32, {3, 40, 48}, c.aLayout), w(CGC_DTYPE_FLOAT32, {48, 64});
      fillRandom(a, rng, -1, 1);
      fillRandom(w, rng, -0.3, 0.3);
      Tensor y(CGC_DTYPE_FLOAT32, out);
      KernelOptions options;
      options.constantInputs = {false, constant};
      FusedRun r = runChain(Desc("cgc_op.matmul").in(a).in(w).out(y), {&a, &w}, out, c.chain, rng,
                            options);
      ASSERT_FALSE(r.fused.empty()) << "matmul not fused: " << r.reason;
      EXPECT_EQ(r.description.find("as 120 rows") != std::string::npos, c.merged) << r.description;
      Tensor t(CGC_DTYPE_FLOAT32, out);
      t.setValues(r.fused);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "batched matmul chain [" + r.description + "]"));
    }
  // Unfused, with the batch split across the pool's threads as rows.
  Tensor a(CGC_DTYPE_FLOAT32, {4, 50, 32}), w(CGC_DTYPE_FLOAT32, {32, 40});
  fillRandom(a, rng, -1, 1);
  fillRandom(w, rng, -1, 1);
  Tensor y(CGC_DTYPE_FLOAT32, {4, 50, 40});
  KernelOptions options;
  options.constantInputs = {false, true};
  auto k = make(Desc("cgc_op.matmul").in(a).in(w).out(y), options);
  ASSERT_TRUE(k);
  EXPECT_NE(k->describe().find("as 200 rows"), std::string::npos) << k->describe();
  runKernel(*k, {&a, &w}, {&y}, pool3());
  std::vector<double> e;
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t i = 0; i < 50; ++i)
      for (int64_t j = 0; j < 40; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < 32; ++p)
          acc += a.get((b * 50 + i) * 32 + p) * w.get(p * 40 + j);
        e.push_back(acc);
      }
  EXPECT_TRUE(closeTo(y, e, 1e-5, 1e-4, k->describe()));
}

TEST(Fusion, RefusesWhatItCannotFuseWithAReason) {
  std::mt19937 rng(72);
  Tensor x(CGC_DTYPE_FLOAT32, {1, 4, 6, 6}), w(CGC_DTYPE_FLOAT32, {4, 4, 3, 3});
  Tensor y(CGC_DTYPE_FLOAT32, {1, 4, 6, 6});
  Desc conv = convDesc(x, w, nullptr, y, {1, 1});
  auto reasonFor = [&](const KernelDesc &step) {
    std::string reason;
    auto k = createFusedKernel(conv.get(), {step}, reason);
    EXPECT_EQ(k, nullptr);
    return reason;
  };
  Tensor yb(CGC_DTYPE_BOOL, {1, 4, 6, 6}), yi(CGC_DTYPE_INT32, {1, 4, 6, 6});
  EXPECT_NE(reasonFor(Desc("cgc_op.cast").in(y).out(yi).attr("to", AttrValue::ofDType(CGC_DTYPE_INT32))),
            "");
  EXPECT_NE(reasonFor(Desc("cgc_op.isnan").in(y).out(yb)).find("isnan"), std::string::npos);
  // An op that is not elementwise (a pow, which has no oneDNN post-op
  // either, runs as the epilogue after the convolution since the erf GELU
  // needed that path).
  EXPECT_NE(reasonFor(Desc("cgc_op.softmax").in(y).out(y).i("axis", 1)).find("softmax"),
            std::string::npos);
  // An extra operand that would broadcast the result to a larger shape.
  Tensor big(CGC_DTYPE_FLOAT32, {2, 4, 6, 6});
  EXPECT_NE(reasonFor(Desc("cgc_op.add").in(y).in(big).out(big)).find("cgc_op.add"),
            std::string::npos);
  std::string reason;
  // Not an anchor nor an elementwise op (an elementwise op heads a chain
  // of its own, Fusion.ElementwiseChainsWithoutAnchorMatchUnfused).
  EXPECT_EQ(createFusedKernel(Desc("cgc_op.softmax").in(y).out(y).i("axis", 1).get(),
                              {Desc("cgc_op.relu").in(y).out(y).get()}, reason),
            nullptr);
  EXPECT_NE(reason.find("not a fusion anchor"), std::string::npos) << reason;
  // float64 convolutions run on the generic path, which does not fuse.
  Tensor xd(CGC_DTYPE_FLOAT64, {1, 4, 6, 6}), wd(CGC_DTYPE_FLOAT64, {4, 4, 3, 3}),
      yd(CGC_DTYPE_FLOAT64, {1, 4, 6, 6});
  EXPECT_EQ(createFusedKernel(convDesc(xd, wd, nullptr, yd, {1, 1}).get(),
                              {Desc("cgc_op.relu").in(yd).out(yd).get()}, reason),
            nullptr);
  EXPECT_NE(reason.find("float64"), std::string::npos) << reason;
}

//===----------------------------------------------------------------------===//
// Concurrency
//===----------------------------------------------------------------------===//

TEST(Concurrency, RunFromManyThreadsOnDifferentOperands) {
  std::mt19937 rng(80);
  // A fused conv with constant weights (shared cache), a matmul and an
  // elementwise kernel, each run by 4 threads at once on their own
  // operands, with pools of their own and one shared pool.
  Tensor w(CGC_DTYPE_FLOAT32, {16, 8, 3, 3}), b(CGC_DTYPE_FLOAT32, {16});
  fillRandom(w, rng, -0.5, 0.5);
  fillRandom(b, rng, -0.5, 0.5);
  Tensor x0(CGC_DTYPE_FLOAT32, {1, 8, 12, 12}), y0(CGC_DTYPE_FLOAT32, {1, 16, 12, 12});
  Desc conv = convDesc(x0, w, &b, y0, {1, 1});
  KernelDesc relu = Desc("cgc_op.relu").in(y0).out(y0).get();
  KernelOptions options;
  options.constantInputs = {false, true, true};
  std::string reason;
  std::unique_ptr<Kernel> fused = createFusedKernel(conv.get(), {relu}, options, reason);
  ASSERT_TRUE(fused) << reason;
  Tensor a0(CGC_DTYPE_FLOAT32, {64, 96}), bm(CGC_DTYPE_FLOAT32, {96, 80}), c0(CGC_DTYPE_FLOAT32, {64, 80});
  fillRandom(bm, rng, -1, 1);
  auto mm = make(Desc("cgc_op.matmul").in(a0).in(bm).out(c0));
  auto ew = make(Desc("cgc_op.sigmoid").in(c0).out(c0));

  constexpr int kThreads = 4;
  std::vector<Tensor> xs, ys, as, cs, ss;
  std::vector<std::vector<double>> yRef, cRef, sRef;
  for (int t = 0; t < kThreads; ++t) {
    xs.emplace_back(CGC_DTYPE_FLOAT32, x0.shape());
    fillRandom(xs.back(), rng, -1, 1);
    as.emplace_back(CGC_DTYPE_FLOAT32, a0.shape());
    fillRandom(as.back(), rng, -1, 1);
    ys.emplace_back(CGC_DTYPE_FLOAT32, y0.shape());
    cs.emplace_back(CGC_DTYPE_FLOAT32, c0.shape());
    ss.emplace_back(CGC_DTYPE_FLOAT32, c0.shape());
  }
  // References, one at a time.
  for (int t = 0; t < kThreads; ++t) {
    runKernel(*fused, {&xs[size_t(t)], &w, &b}, {&ys[size_t(t)]}, pool1());
    yRef.push_back(ys[size_t(t)].values());
    runKernel(*mm, {&as[size_t(t)], &bm}, {&cs[size_t(t)]}, pool1());
    cRef.push_back(cs[size_t(t)].values());
    runKernel(*ew, {&cs[size_t(t)]}, {&ss[size_t(t)]}, pool1());
    sRef.push_back(ss[size_t(t)].values());
  }
  ThreadPool shared(2);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ThreadPool own(2);
      for (int rep = 0; rep < 20; ++rep) {
        ThreadPool &pool = (rep % 2) ? own : shared;
        Tensor y(CGC_DTYPE_FLOAT32, y0.shape()), c(CGC_DTYPE_FLOAT32, c0.shape()),
            s(CGC_DTYPE_FLOAT32, c0.shape());
        runKernel(*fused, {&xs[size_t(t)], &w, &b}, {&y}, pool);
        runKernel(*mm, {&as[size_t(t)], &bm}, {&c}, pool);
        runKernel(*ew, {&c}, {&s}, pool);
        // Thread counts differ from the references' (1): allow for a
        // different summation order, nothing more.
        if (!closeTo(y, yRef[size_t(t)], 1e-5, 1e-5) || !closeTo(c, cRef[size_t(t)], 1e-5, 1e-5) ||
            !closeTo(s, sRef[size_t(t)], 1e-5, 1e-6))
          ++failures;
      }
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, KernelsInsidePoolTasks) {
  // The executor runs independent dispatches with runAll; kernels inside
  // those tasks (nested parallelFor, oneDNN with one thread) must finish and
  // agree with a lone run.
  std::mt19937 rng(81);
  Tensor a(CGC_DTYPE_FLOAT32, {128, 256}), bm(CGC_DTYPE_FLOAT32, {256, 64});
  fillRandom(a, rng, -1, 1);
  fillRandom(bm, rng, -1, 1);
  Tensor ref(CGC_DTYPE_FLOAT32, {128, 64});
  auto mm = make(Desc("cgc_op.matmul").in(a).in(bm).out(ref));
  runKernel(*mm, {&a, &bm}, {&ref}, pool3());
  auto ew = make(Desc("cgc_op.exp").in(a).out(a));
  Tensor eref(CGC_DTYPE_FLOAT32, {128, 256});
  runKernel(*ew, {&a}, {&eref}, pool3());
  std::vector<Tensor> outs, eouts;
  for (int i = 0; i < 6; ++i) {
    outs.emplace_back(CGC_DTYPE_FLOAT32, ref.shape());
    eouts.emplace_back(CGC_DTYPE_FLOAT32, eref.shape());
  }
  std::vector<std::function<void()>> tasks;
  for (int i = 0; i < 6; ++i)
    tasks.push_back([&, i] {
      runKernel(*mm, {&a, &bm}, {&outs[size_t(i)]}, pool3());
      runKernel(*ew, {&a}, {&eouts[size_t(i)]}, pool3());
    });
  pool3().runAll(tasks);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(closeTo(outs[size_t(i)], ref.values(), 1e-6, 1e-6, "matmul in task"));
    EXPECT_TRUE(closeTo(eouts[size_t(i)], eref.values(), 0, 0, "exp in task"));
  }
}

TEST(Fusion, BatchNormTakesALeadingReluOrClip) {
  // DenseNet's pre-activation (batch_norm then relu on a concat): one pass,
  // the clamp before the store, in any layout; the same values, NaN
  // included, as the two kernels run apart.
  std::mt19937 rng(41);
  const std::vector<int64_t> shape = {2, 16, 5, 7};
  std::vector<std::vector<Step>> clamps = {
      {{"cgc_op.relu"}},
      {{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}}},
      {{"cgc_op.clip", {{"max", F(-0.25)}}}},
  };
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast})
    for (const std::vector<Step> &chain : clamps) {
      Tensor x(CGC_DTYPE_FLOAT32, shape, layout);
      fillRandom(x, rng, -3, 3);
      x.set(5, std::numeric_limits<double>::quiet_NaN());
      Tensor s(CGC_DTYPE_FLOAT32, {16}), b(CGC_DTYPE_FLOAT32, {16}), m(CGC_DTYPE_FLOAT32, {16}),
          v(CGC_DTYPE_FLOAT32, {16});
      fillRandom(s, rng, -2, 2);
      fillRandom(b, rng, -1, 1);
      fillRandom(m, rng, -1, 1);
      fillRandom(v, rng, 0.1, 3);
      Tensor y(CGC_DTYPE_FLOAT32, shape, layout);
      Desc bn = Desc("cgc_op.batch_norm").in(x).in(s).in(b).in(m).in(v).out(y).f("epsilon", 1e-3);
      FusedRun r = runChain(bn, {&x, &s, &b, &m, &v}, shape, chain, rng, {}, layout);
      const std::string what = chainName(chain) + " " + layoutName(layout);
      ASSERT_FALSE(r.fused.empty()) << what << ": " << r.reason;
      EXPECT_NE(r.description.find(" before the store)"), std::string::npos) << r.description;
      EXPECT_TRUE(std::isnan(r.fused[5])) << what;
      for (const std::vector<double> *fused : {&r.fused, &r.fusedOnOneThread}) {
        Tensor t(CGC_DTYPE_FLOAT32, shape);
        t.setValues(*fused);
        EXPECT_TRUE(closeTo(t, r.unfused, 1e-6, 1e-6, "batch_norm" + what));
      }
    }
  // Anything after the clamp, or another op, is refused with the reason
  // (the driver then runs a shorter chain).
  Tensor x(CGC_DTYPE_FLOAT32, shape), p(CGC_DTYPE_FLOAT32, {16}), y(CGC_DTYPE_FLOAT32, shape);
  KernelDesc bn = Desc("cgc_op.batch_norm").in(x).in(p).in(p).in(p).in(p).out(y).get();
  KernelDesc relu = Desc("cgc_op.relu").in(y).out(y).get();
  KernelDesc add = Desc("cgc_op.add").in(y).in(x).out(y).get();
  KernelDesc sigmoid = Desc("cgc_op.sigmoid").in(y).out(y).get();
  for (const std::vector<KernelDesc> &chain :
       {std::vector<KernelDesc>{relu, add}, std::vector<KernelDesc>{sigmoid}}) {
    std::string reason;
    std::unique_ptr<Kernel> fused = createFusedKernel(bn, chain, reason);
    EXPECT_FALSE(fused) << fused->describe();
    EXPECT_NE(reason.find("batch_norm fuses a relu or clip, not"), std::string::npos) << reason;
  }
}

TEST(Fusion, ErfGeluInThePackedGemmEpilogue) {
  // A transformer FFN's first product: matmul + bias + erf_gelu (k1..k3
  // scalar bind points) in one kernel on the packed GEMM, the GELU on each
  // tile in registers: the same bits as the three kernels run apart, on 1
  // and 3 threads and with x * k1. A product the packed GEMM does not run
  // (B not constant) refuses the GELU with the reason, and the driver then
  // keeps it a step of its own.
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512 or CGC_CPU_PACKED_GEMM=0";
  std::mt19937 rng(43);
  Tensor a(CGC_DTYPE_FLOAT32, {1, 70, 96}), w(CGC_DTYPE_FLOAT32, {96, 200}),
      bias(CGC_DTYPE_FLOAT32, {200});
  fillRandom(a, rng, -1, 1);
  fillRandom(w, rng, -0.3, 0.3);
  fillRandom(bias, rng, -1, 1);
  Tensor k1(CGC_DTYPE_FLOAT32, {}), k2(CGC_DTYPE_FLOAT32, {}), k3(CGC_DTYPE_FLOAT32, {});
  k2.set(0, 1.0);
  k3.set(0, 0.5);
  Tensor t(CGC_DTYPE_FLOAT32, {1, 70, 200}), u(CGC_DTYPE_FLOAT32, {1, 70, 200}),
      y(CGC_DTYPE_FLOAT32, {1, 70, 200}), fused(CGC_DTYPE_FLOAT32, {1, 70, 200});
  KernelOptions options;
  options.constantInputs = {false, true};
  KernelDesc mm = Desc("cgc_op.matmul").in(a).in(w).out(t).get();
  KernelDesc add = Desc("cgc_op.add").in(t).in(bias).out(u).get();
  for (bool multiply : {false, true}) {
    k1.set(0, multiply ? 0.70710678 : 1.41421356);
    KernelDesc gelu = Desc("cgc_op.erf_gelu").in(u).in(k1).in(k2).in(k3).out(y)
                          .attr("multiply", AttrValue::ofBool(multiply)).get();
    auto km = make(mm, options), ka = make(add), kg = make(gelu);
    ASSERT_TRUE(km && ka && kg);
    runKernel(*km, {&a, &w}, {&t}, pool1());
    runKernel(*ka, {&t, &bias}, {&u}, pool1());
    runKernel(*kg, {&u, &k1, &k2, &k3}, {&y}, pool1());
    KernelDesc last = gelu;
    last.outputs = {fused.operand()};
    std::string reason;
    std::unique_ptr<Kernel> k = createFusedKernel(mm, {add, last}, options, reason);
    ASSERT_TRUE(k) << reason;
    EXPECT_NE(k->describe().find("+add+erf_gelu (AVX-512"), std::string::npos) << k->describe();
    for (ThreadPool *pool : {&pool1(), &pool3()}) {
      runKernel(*k, {&a, &w, &bias, &k1, &k2, &k3}, {&fused}, *pool);
      EXPECT_TRUE(closeTo(fused, y.values(), 0, 0, cat("fused erf_gelu, multiply ", multiply)));
    }
    std::unique_ptr<Kernel> notPacked = createFusedKernel(mm, {add, last}, KernelOptions{}, reason);
    EXPECT_FALSE(notPacked) << notPacked->describe();
    EXPECT_NE(reason.find("erf_gelu fuses only into the packed GEMM"), std::string::npos) << reason;
  }
}

} // namespace

namespace {

TEST(Fusion, ErfGeluAfterEveryConvolutionKind) {
  // MaxViT's convolutions before a GELU written with erf (one erf_gelu after
  // the compiler's fold): a 1x1 convolution on the packed GEMM, a
  // depthwise one (channels-last and NCHW) and a dense 3x3 one on oneDNN
  // (which has no post-op for it) all take the erf_gelu as an epilogue:
  // the same values as the convolution and the erf_gelu kernel run apart
  // (the epilogue calls the kernel's own row), on 1 and 3 threads.
  struct Case {
    const char *what;
    int64_t inC, outC, kernel, groups;
    Layout layout;
    int64_t size;
  };
  const std::vector<Case> cases = {
      {"1x1 channels-last", 32, 48, 1, 1, Layout::ChannelsLast, 14},
      {"depthwise 3x3 channels-last", 32, 32, 3, 32, Layout::ChannelsLast, 14},
      {"depthwise 3x3 NCHW", 16, 16, 3, 16, Layout::Contiguous, 20},
      {"dense 3x3 NCHW", 8, 24, 3, 1, Layout::Contiguous, 12},
  };
  std::mt19937 rng(71);
  KernelOptions options;
  options.constantInputs = {false, true, true};
  for (const Case &c : cases)
    for (bool multiply : {false, true}) {
      Tensor x(CGC_DTYPE_FLOAT32, {1, c.inC, c.size, c.size}, c.layout);
      Tensor w(CGC_DTYPE_FLOAT32, {c.outC, c.inC / c.groups, c.kernel, c.kernel});
      Tensor b(CGC_DTYPE_FLOAT32, {c.outC});
      fillRandom(x, rng, -1, 1);
      fillRandom(w, rng, -0.5, 0.5);
      fillRandom(b, rng, -1, 1);
      Tensor k1(CGC_DTYPE_FLOAT32, {}), k2(CGC_DTYPE_FLOAT32, {}), k3(CGC_DTYPE_FLOAT32, {});
      k1.set(0, multiply ? 0.70710678 : 1.41421356);
      k2.set(0, 1.0);
      k3.set(0, 0.5);
      const std::vector<int64_t> out = {1, c.outC, c.size, c.size};
      Tensor t(CGC_DTYPE_FLOAT32, out, c.layout), y(CGC_DTYPE_FLOAT32, out, c.layout),
          fused(CGC_DTYPE_FLOAT32, out, c.layout);
      const int64_t pad = c.kernel / 2;
      KernelDesc conv = convDesc(x, w, &b, t, {pad, pad}, c.groups).get();
      KernelDesc gelu = Desc("cgc_op.erf_gelu").in(t).in(k1).in(k2).in(k3).out(y)
                            .attr("multiply", AttrValue::ofBool(multiply)).get();
      auto kc = make(conv, options), kg = make(gelu);
      ASSERT_TRUE(kc && kg);
      runKernel(*kc, {&x, &w, &b}, {&t}, pool1());
      runKernel(*kg, {&t, &k1, &k2, &k3}, {&y}, pool1());
      KernelDesc last = gelu;
      last.outputs = {fused.operand()};
      std::string reason;
      std::unique_ptr<Kernel> k = createFusedKernel(conv, {last}, options, reason);
      ASSERT_TRUE(k) << c.what << ": " << reason;
      EXPECT_NE(k->describe().find("erf_gelu"), std::string::npos) << k->describe();
      for (ThreadPool *pool : {&pool1(), &pool3()}) {
        fused.setValues(std::vector<double>(size_t(fused.size()), -7.0));
        runKernel(*k, {&x, &w, &b, &k1, &k2, &k3}, {&fused}, *pool);
        EXPECT_TRUE(closeTo(fused, y.values(), 1e-5, 1e-6,
                            cat(c.what, " + erf_gelu, multiply ", multiply, ": ",
                                k->describe())));
      }
    }
}

} // namespace

// Elementwise fusion with no anchor: an elementwise op heads the chain
// after it (the decompositions exporters write: hard-swish as
// add/clip/div/mul, SiLU, Mish, GELU pieces), one kernel that runs every
// op on a block while it is in cache. Every chain of the convolution tests
// and the decompositions, contiguous and channels-last, split across the
// pool and on one thread, against the ops one by one.
TEST(Fusion, ElementwiseChainsWithoutAnchorMatchUnfused) {
  std::mt19937 rng(71);
  const std::vector<int64_t> out = {1, 24, 40, 36}; // 34560 elements: 3 blocks
  std::vector<std::vector<Step>> all = chains(out, 24);
  const std::vector<int64_t> one = {1};
  all.push_back({{"cgc_op.clip", {{"min", F(0)}, {"max", F(6)}}},
                 {"cgc_op.div", {}, one},
                 {"cgc_op.mul", {}, out}}); // hard-swish's tail, x as the residual
  all.push_back({{"cgc_op.sigmoid"}, {"cgc_op.mul", {}, out}}); // SiLU written out
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast})
    for (const auto &chain : all) {
      // The head: x + c (c one value), the first op of hard-swish.
      Tensor x(CGC_DTYPE_FLOAT32, out, layout), c(CGC_DTYPE_FLOAT32, {1}), y(CGC_DTYPE_FLOAT32, out,
                                                                           layout);
      fillRandom(x, rng, -4, 4);
      fillRandom(c, rng, 2, 3);
      Desc head("cgc_op.add");
      head.in(x).in(c).out(y);
      FusedRun r = runChain(head, {&x, &c}, out, chain, rng, {}, layout, layout);
      const std::string name = chainName(chain);
      ASSERT_FALSE(r.fused.empty()) << "not fused: add" << name << ": " << r.reason;
      EXPECT_NE(r.description.find("elementwise chain add"), std::string::npos) << r.description;
      Tensor t(CGC_DTYPE_FLOAT32, out);
      t.setValues(r.fused);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "add" + name + " [" + r.description + "]"));
      t.setValues(r.fusedOnOneThread);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-5, 1e-5, "add" + name + " (1 thread)"));
    }
}

// A head whose input 0 is broadcast (1 - x written as sub(1, x)) has no
// running value to start from: refused with the reason, the ops then run
// one by one. A result placed over a later op's operand (a residual) is
// computed in scratch first, never read after it was overwritten.
TEST(Fusion, ElementwiseChainRefusalsAndAliasing) {
  std::mt19937 rng(72);
  const std::vector<int64_t> shape = {2, 8, 30, 30};
  Tensor one(CGC_DTYPE_FLOAT32, {1}), x(CGC_DTYPE_FLOAT32, shape), y(CGC_DTYPE_FLOAT32, shape);
  fillRandom(x, rng, -1, 1);
  fillRandom(one, rng, 1, 1);
  Desc sub("cgc_op.sub");
  sub.in(one).in(x).out(y);
  Desc relu("cgc_op.relu");
  relu.in(y).out(y);
  std::string reason;
  EXPECT_FALSE(createFusedKernel(sub.get(), {relu.get()}, reason));
  EXPECT_NE(reason.find("no running value to start from"), std::string::npos) << reason;

  // residual r; head abs(x) -> add(., r) -> relu, its result in r's bytes.
  Tensor r(CGC_DTYPE_FLOAT32, shape), t(CGC_DTYPE_FLOAT32, shape), u(CGC_DTYPE_FLOAT32, shape);
  fillRandom(r, rng, -1, 1);
  std::vector<double> xs = x.values(), rs = r.values(), expected(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    expected[i] = std::max(0.0, double(float(std::fabs(xs[i]) + float(rs[i]))));
  Desc abs("cgc_op.abs");
  abs.in(x).out(t);
  Desc add("cgc_op.add");
  add.in(t).in(r).out(u);
  Desc relu2("cgc_op.relu");
  relu2.in(u).out(r); // the result where the residual is
  auto fused = createFusedKernel(abs.get(), {add.get(), relu2.get()}, reason);
  ASSERT_TRUE(fused) << reason;
  runKernel(*fused, {&x, &r}, {&r}, pool3());
  EXPECT_TRUE(closeTo(r, expected, 1e-6, 1e-6, "abs -> add (residual in place) -> relu"));
}

// conv_transpose is an anchor too: its chain runs on each band of the
// direct kernel's output (taps that do not overlap), or as oneDNN's
// post-ops / after it (overlapping taps), against the ops one by one.
TEST(Fusion, TransposedConvolutionChainsMatchUnfused) {
  std::mt19937 rng(73);
  struct Geometry {
    int64_t k, stride, pad, outC;
  };
  for (const Geometry &geo : {Geometry{2, 2, 0, 3}, Geometry{4, 2, 1, 3}}) {
    const int64_t inC = 8, h = 9, w = 11;
    const int64_t oh = (h - 1) * geo.stride + geo.k - 2 * geo.pad,
                  ow = (w - 1) * geo.stride + geo.k - 2 * geo.pad;
    Tensor x(CGC_DTYPE_FLOAT32, {1, inC, h, w}), wt(CGC_DTYPE_FLOAT32, {inC, geo.outC, geo.k, geo.k}),
        b(CGC_DTYPE_FLOAT32, {geo.outC});
    fillRandom(x, rng, -1, 1);
    fillRandom(wt, rng, -0.5, 0.5);
    fillRandom(b, rng, -0.5, 0.5);
    std::vector<int64_t> out = {1, geo.outC, oh, ow};
    Tensor y(CGC_DTYPE_FLOAT32, out);
    for (const auto &chain : std::vector<std::vector<Step>>{
             {{"cgc_op.relu"}},
             {{"cgc_op.sigmoid"}},
             {{"cgc_op.add", {}, out}, {"cgc_op.relu"}},
             {{"cgc_op.mul", {}, std::vector<int64_t>{geo.outC, 1, 1}}, {"cgc_op.tanh"}}}) {
      Desc d("cgc_op.conv_transpose");
      d.in(x).in(wt).in(b).out(y).ints("strides", {geo.stride, geo.stride})
          .ints("dilations", {1, 1}).ints("start_padding", {geo.pad, geo.pad})
          .ints("end_padding", {geo.pad, geo.pad}).ints("output_padding", {0, 0}).i("groups", 1);
      KernelOptions options;
      options.constantInputs = {false, true, true};
      FusedRun r = runChain(d, {&x, &wt, &b}, out, chain, rng, options);
      const std::string name = chainName(chain);
      if (r.fused.empty()) {
        // oneDNN may not take a chain as post-ops for a deconvolution: then
        // it must say why, and the direct kernel must always fuse.
        EXPECT_NE(geo.stride, geo.k) << "not fused:" << name << ": " << r.reason;
        EXPECT_FALSE(r.reason.empty());
        continue;
      }
      if (geo.stride == geo.k)
        EXPECT_NE(r.description.find("taps do not overlap"), std::string::npos) << r.description;
      Tensor t(CGC_DTYPE_FLOAT32, out);
      t.setValues(r.fused);
      EXPECT_TRUE(closeTo(t, r.unfused, 1e-4, 1e-4, "conv_transpose" + name + " [" + r.description + "]"));
    }
  }
}
