//===- MovementTest.cpp - Data movement ops and resize --------------------===//

#include "KernelTestUtil.h"
#include "config.h"

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

/// Runs `d` on `x` (one input) into `y` and compares with `expected`.
void expectOp(const Desc &d, const Tensor &x, Tensor &y, const std::vector<double> &expected,
              const std::string &what) {
  auto k = make(d);
  if (!k)
    return;
  runKernel(*k, {&x}, {&y}, pool3());
  EXPECT_TRUE(closeTo(y, expected, 0, 0, what + " [" + k->describe() + "]"));
}

const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Padded, Layout::Transposed,
                                      Layout::Reversed};

TEST(Movement, ReshapeTransposeEveryDtypeLayout) {
  std::mt19937 rng(60);
  for (cgc_dtype_t dt : kAllTypes)
    for (Layout in : kLayouts)
      for (Layout out : {Layout::Contiguous, Layout::Padded}) {
        Tensor x(dt, {2, 3, 4}, in);
        fillRandom(x, rng, 0, 100);
        Tensor r(dt, {4, 6}, out);
        expectOp(Desc("cgc_op.reshape").in(x).out(r).ints("shape", {4, 6}), x, r, x.values(),
                 "reshape " + dtypeStr(dt));
        Tensor t(dt, {4, 2, 3}, out);
        std::vector<double> e;
        for (int64_t i = 0; i < 24; ++i) {
          std::vector<int64_t> c = coords(i, {4, 2, 3});
          e.push_back(x.get(linear({c[1], c[2], c[0]}, {2, 3, 4})));
        }
        expectOp(Desc("cgc_op.transpose").in(x).out(t).ints("perm", {2, 0, 1}), x, t, e,
                 "transpose " + dtypeStr(dt) + " " + layoutName(in) + "->" + layoutName(out));
      }
}

TEST(Movement, LargeTransposeSplitsAcrossThreads) {
  std::mt19937 rng(61);
  Tensor x(CGC_DTYPE_FLOAT32, {1, 128, 12, 64});
  fillRandom(x, rng, -1, 1);
  Tensor y(CGC_DTYPE_FLOAT32, {1, 12, 64, 128});
  std::vector<double> e;
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = coords(i, y.shape());
    e.push_back(x.get(linear({c[0], c[3], c[1], c[2]}, x.shape())));
  }
  expectOp(Desc("cgc_op.transpose").in(x).out(y).ints("perm", {0, 2, 3, 1}), x, y, e,
           "bert key transpose");
}

TEST(Movement, TiledTransposeEdgesEveryElementSize) {
  std::mt19937 rng(67);
  for (cgc_dtype_t dt : {CGC_DTYPE_UINT8, CGC_DTYPE_FLOAT16, CGC_DTYPE_FLOAT32, CGC_DTYPE_INT64})
    for (Layout out : {Layout::Contiguous, Layout::Padded}) {
      Tensor x(dt, {3, 37, 45});
      fillRandom(x, rng, 0, 100);
      Tensor y(dt, {3, 45, 37}, out);
      std::vector<double> e;
      for (int64_t i = 0; i < y.size(); ++i) {
        std::vector<int64_t> c = coords(i, y.shape());
        e.push_back(x.get(linear({c[0], c[2], c[1]}, x.shape())));
      }
      expectOp(Desc("cgc_op.transpose").in(x).out(y).ints("perm", {0, 2, 1}), x, y, e,
               "tiled transpose " + dtypeStr(dt) + " " + layoutName(out));
    }
}

TEST(Movement, InterleavingTransposes) {
  // [n, k] <-> [k, n] for k = 2, 4, 8: each row of one side is contiguous
  // and k elements apart on the other (a channel shuffle's groups). 4-byte
  // elements take the expand / compress rows on AVX-512, whole vectors of
  // 16 / k elements and a masked tail; other sizes the scalar loop.
  std::mt19937 rng(69);
  for (cgc_dtype_t dt : {CGC_DTYPE_FLOAT32, CGC_DTYPE_INT32, CGC_DTYPE_FLOAT16})
    for (int64_t k : {2, 4, 8})
      for (int64_t n : {3, 4, 5, 15, 16, 17, 31, 33, 100}) {
        Tensor x(dt, {n, k});
        fillRandom(x, rng, 0, 100);
        Tensor y(dt, {k, n}), z(dt, {n, k});
        std::vector<double> e;
        for (int64_t i = 0; i < y.size(); ++i)
          e.push_back(x.get((i % n) * k + i / n));
        const std::string what = dtypeStr(dt) + " k=" + std::to_string(k) + " n=" + std::to_string(n);
        expectOp(Desc("cgc_op.transpose").in(x).out(y).ints("perm", {1, 0}), x, y, e,
                 "gather " + what);
        expectOp(Desc("cgc_op.transpose").in(y).out(z).ints("perm", {1, 0}), y, z, x.values(),
                 "scatter " + what);
      }
}

TEST(Movement, SeparableResizeMatchesTheGenericPath) {
  // Float resizes that change one or two dimensions run as tabled taps in
  // float (separable), the rest through the generic per-element recursion
  // in double, which the ONNX node tests check against ONNX's reference.
  // Here the two paths on the same resizes: up and down (the permuted
  // window and the gathers of the AVX-512 rows), every mode, NCHW rows (own
  // taps per column) and channels-last rows (shared taps), nearest as row
  // copies, one changed
  // dimension, float16; three changed dimensions stay generic.
  struct Case {
    std::vector<int64_t> in, out;
    std::string mode, coord;
    Layout layout;
    cgc_dtype_t dtype;
    bool separable;
  };
  const std::vector<Case> cases = {
      {{1, 3, 7, 9}, {1, 3, 29, 37}, "linear", "half_pixel", Layout::Contiguous, CGC_DTYPE_FLOAT32, true},
      {{1, 3, 7, 9}, {1, 3, 29, 37}, "linear", "half_pixel", Layout::ChannelsLast, CGC_DTYPE_FLOAT32, true},
      {{1, 2, 40, 50}, {1, 2, 13, 17}, "linear", "align_corners", Layout::Contiguous, CGC_DTYPE_FLOAT32, true},
      {{1, 2, 10, 12}, {1, 2, 25, 40}, "cubic", "half_pixel", Layout::Contiguous, CGC_DTYPE_FLOAT32, true},
      {{1, 2, 10, 12}, {1, 2, 25, 40}, "cubic", "pytorch_half_pixel", Layout::ChannelsLast, CGC_DTYPE_FLOAT32, true},
      {{1, 4, 5, 6}, {1, 4, 15, 18}, "nearest", "asymmetric", Layout::Contiguous, CGC_DTYPE_FLOAT32, true},
      // Nearest copies rows, and repeats the previous output row where it
      // read the same input row (2x up, down, channels-last, float16).
      {{2, 5, 6, 7}, {2, 5, 12, 14}, "nearest", "asymmetric", Layout::ChannelsLast, CGC_DTYPE_FLOAT32, true},
      {{1, 3, 9, 11}, {1, 3, 18, 22}, "nearest", "asymmetric", Layout::Contiguous, CGC_DTYPE_FLOAT32, true},
      {{1, 3, 20, 21}, {1, 3, 9, 10}, "nearest", "half_pixel", Layout::ChannelsLast, CGC_DTYPE_FLOAT32, true},
      {{1, 6, 4, 5}, {1, 6, 12, 5}, "nearest", "asymmetric", Layout::Contiguous, CGC_DTYPE_FLOAT16, true},
      {{2, 3, 4, 20}, {2, 3, 4, 47}, "linear", "half_pixel", Layout::Contiguous, CGC_DTYPE_FLOAT32, true},
      {{1, 3, 7, 9}, {1, 3, 29, 37}, "linear", "half_pixel", Layout::Contiguous, CGC_DTYPE_FLOAT16, true},
      {{1, 2, 3, 4}, {1, 4, 6, 8}, "linear", "half_pixel", Layout::Contiguous, CGC_DTYPE_FLOAT32, false},
  };
  std::mt19937 rng(70);
  for (const Case &c : cases) {
    Tensor x(c.dtype, c.in, c.layout);
    fillRandom(x, rng, -1, 1);
    std::vector<double> scales;
    for (size_t d = 0; d < c.in.size(); ++d)
      scales.push_back(double(c.out[d]) / double(c.in[d]));
    Desc d("cgc_op.resize");
    Tensor fast(c.dtype, c.out, c.layout), generic(c.dtype, c.out, c.layout);
    d.in(x).out(fast).ints("sizes", c.out).floats("scales", scales).s("mode", c.mode)
        .s("coordinate_transformation_mode", c.coord);
    const std::string what = c.mode + " " + c.coord + " " + layoutName(c.layout) + " " +
                             dtypeStr(c.dtype) + " to " + std::to_string(c.out[2]) + "x" +
                             std::to_string(c.out[3]);
    auto k = make(d);
    EXPECT_EQ(k->describe().find("separable") != std::string::npos, c.separable) << what;
    runKernel(*k, {&x}, {&fast}, pool3());
    auto g = [&] {
      KernelConfig generic = KernelConfig::process();
      generic.separableResize = false;
      ConfigScope scope(generic);
      return make(d);
    }();
    EXPECT_EQ(g->describe().find("separable"), std::string::npos) << what;
    runKernel(*g, {&x}, {&generic}, pool3());
    const double tol = c.dtype == CGC_DTYPE_FLOAT16 ? 1e-3 : 1e-5;
    EXPECT_TRUE(closeTo(fast, generic.values(), tol, tol, "separable resize " + what));
  }
}

TEST(Movement, ConcatSplit) {
  std::mt19937 rng(62);
  for (cgc_dtype_t dt : {CGC_DTYPE_FLOAT32, CGC_DTYPE_INT8, CGC_DTYPE_BOOL, CGC_DTYPE_FLOAT16,
                         CGC_DTYPE_INT64})
    for (int64_t axis : {0, 1, 2}) {
      std::vector<Tensor> parts;
      std::vector<int64_t> sizes = {2, 0, 3, 1};
      std::vector<int64_t> outShape = {4, 5, 6};
      outShape[size_t(axis)] = 6;
      Desc d("cgc_op.concat");
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<int64_t> s = {4, 5, 6};
        s[size_t(axis)] = sizes[i];
        parts.emplace_back(dt, s, i % 2 ? Layout::Transposed : Layout::Padded);
        fillRandom(parts.back(), rng, 0, 100);
      }
      for (const Tensor &p : parts)
        d.in(p);
      Tensor y(dt, outShape);
      d.out(y).i("axis", axis);
      auto k = make(d);
      std::vector<const Tensor *> ins;
      for (const Tensor &p : parts)
        ins.push_back(&p);
      runKernel(*k, ins, {&y}, pool3());
      std::vector<double> e;
      for (int64_t i = 0; i < y.size(); ++i) {
        std::vector<int64_t> c = coords(i, outShape);
        int64_t at = c[size_t(axis)];
        size_t part = 0;
        while (at >= sizes[part]) {
          at -= sizes[part];
          ++part;
        }
        c[size_t(axis)] = at;
        e.push_back(parts[part].get(linear(c, parts[part].shape())));
      }
      EXPECT_TRUE(closeTo(y, e, 0, 0, "concat " + dtypeStr(dt)));
      // Split the result back.
      Desc s("cgc_op.split");
      s.in(y).i("axis", axis).ints("sizes", sizes);
      std::vector<Tensor> outs;
      for (size_t i = 0; i < sizes.size(); ++i)
        outs.emplace_back(dt, parts[i].shape(), i % 2 ? Layout::Padded : Layout::Contiguous);
      for (const Tensor &o : outs)
        s.out(o);
      auto ks = make(s);
      std::vector<Tensor *> outPtrs;
      for (Tensor &o : outs)
        outPtrs.push_back(&o);
      runKernel(*ks, {&y}, outPtrs, pool3());
      for (size_t i = 0; i < sizes.size(); ++i)
        EXPECT_TRUE(closeTo(outs[i], parts[i].values(), 0, 0, "split " + dtypeStr(dt)));
    }
}

TEST(Movement, ChannelsLastConcatAndSplitOfShortRows) {
  // Channels-last concats and splits copy each input's run of a pixel's
  // channels: short rows (a few bytes to 1 KB, whole 64-byte pieces and a
  // tail) copied a block of rows at a time, over batches and row blocks;
  // a longer run takes the general copy, an NCHW part the transposing one.
  // At pool3 the pieces are copied in three shares of one parallel region;
  // within a share they advance together in slices of ~32 KiB (tens of
  // slices here, pieces of unequal item counts, some slices empty for the
  // small pieces).
  std::mt19937 rng(68);
  for (cgc_dtype_t dt : {CGC_DTYPE_UINT8, CGC_DTYPE_FLOAT16, CGC_DTYPE_FLOAT32, CGC_DTYPE_INT64}) {
    const std::vector<int64_t> channels = {3, 16, 32, 17, 69, 300};
    int64_t total = 0;
    std::vector<Tensor> parts;
    Desc d("cgc_op.concat");
    for (int64_t c : channels) {
      parts.emplace_back(dt, std::vector<int64_t>{2, c, 7, 70},
                         c == 69 ? Layout::Contiguous : Layout::ChannelsLast);
      fillRandom(parts.back(), rng, 0, 100);
      d.in(parts.back());
      total += c;
    }
    Tensor y(dt, {2, total, 7, 70}, Layout::ChannelsLast);
    d.out(y).i("axis", 1);
    std::vector<const Tensor *> ins;
    for (const Tensor &p : parts)
      ins.push_back(&p);
    std::vector<double> e;
    for (int64_t i = 0; i < y.size(); ++i) {
      std::vector<int64_t> c = coords(i, y.shape());
      size_t part = 0;
      while (c[1] >= channels[part])
        c[1] -= channels[part++];
      e.push_back(parts[part].get(linear(c, parts[part].shape())));
    }
    for (ThreadPool *pool : {&pool1(), &pool3()}) {
      auto k = make(d);
      runKernel(*k, ins, {&y}, *pool);
      EXPECT_TRUE(closeTo(y, e, 0, 0, "channels-last concat " + dtypeStr(dt)));
      Desc split("cgc_op.split");
      split.in(y).i("axis", 1).ints("sizes", channels);
      std::vector<Tensor> outs;
      for (const Tensor &p : parts)
        outs.emplace_back(dt, p.shape(), Layout::ChannelsLast);
      for (const Tensor &o : outs)
        split.out(o);
      std::vector<Tensor *> outPtrs;
      for (Tensor &o : outs)
        outPtrs.push_back(&o);
      auto ks = make(split);
      runKernel(*ks, {&y}, outPtrs, *pool);
      for (size_t i = 0; i < outs.size(); ++i)
        EXPECT_TRUE(closeTo(outs[i], parts[i].values(), 0, 0,
                            "channels-last split " + dtypeStr(dt) + " part " + std::to_string(i)));
    }
  }
}

TEST(Movement, SliceForwardAndReverse) {
  std::mt19937 rng(63);
  struct S {
    std::vector<int64_t> starts, ends, steps;
  } cases[] = {{{0, 1, 0}, {2, 4, 5}, {1, 2, 1}},
               {{1, 3, 4}, {-1, -1, 0}, {-1, -2, -3}},
               {{0, 2, 1}, {2, 2, 5}, {1, 1, 2}},      // empty
               {{1, 0, 4}, {2, 4, -1}, {1, 3, -1}}};
  for (const S &s : cases)
    for (Layout layout : kLayouts) {
      Tensor x(CGC_DTYPE_INT32, {2, 4, 5}, layout);
      fillRandom(x, rng, -1000, 1000);
      std::vector<int64_t> shape;
      for (size_t d = 0; d < 3; ++d) {
        int64_t st = s.starts[d], en = s.ends[d], sp = s.steps[d];
        shape.push_back(sp > 0 ? std::max<int64_t>(0, (en - st + sp - 1) / sp)
                               : std::max<int64_t>(0, (st - en + (-sp) - 1) / (-sp)));
      }
      Tensor y(CGC_DTYPE_INT32, shape);
      std::vector<double> e;
      for (int64_t i = 0; i < y.size(); ++i) {
        std::vector<int64_t> c = coords(i, shape);
        for (size_t d = 0; d < 3; ++d)
          c[d] = s.starts[d] + c[d] * s.steps[d];
        e.push_back(x.get(linear(c, x.shape())));
      }
      expectOp(Desc("cgc_op.slice").in(x).out(y).ints("starts", s.starts).ints("ends", s.ends)
                   .ints("steps", s.steps),
               x, y, e, std::string("slice ") + layoutName(layout));
    }
}

TEST(Movement, ExpandTileDepthSpace) {
  std::mt19937 rng(64);
  Tensor x(CGC_DTYPE_FLOAT16, {3, 1}, Layout::Padded);
  fillRandom(x, rng, -5, 5);
  Tensor y(CGC_DTYPE_FLOAT16, {2, 3, 4});
  std::vector<double> e;
  for (int64_t i = 0; i < 24; ++i)
    e.push_back(x.get(coords(i, {2, 3, 4})[1]));
  expectOp(Desc("cgc_op.expand").in(x).out(y).ints("shape", {2, 1, 4}), x, y, e, "expand");

  Tensor t(CGC_DTYPE_UINT16, {2, 3}, Layout::Transposed);
  fillRandom(t, rng, 0, 1000);
  Tensor ty(CGC_DTYPE_UINT16, {4, 9});
  e.clear();
  for (int64_t i = 0; i < 36; ++i) {
    std::vector<int64_t> c = coords(i, {4, 9});
    e.push_back(t.get(linear({c[0] % 2, c[1] % 3}, {2, 3})));
  }
  expectOp(Desc("cgc_op.tile").in(t).out(ty).ints("repeats", {2, 3}), t, ty, e, "tile");

  for (const char *mode : {"DCR", "CRD"}) {
    int64_t b = 2;
    Tensor d(CGC_DTYPE_FLOAT32, {2, 8, 3, 2}, Layout::Padded);
    fillRandom(d, rng, -5, 5);
    Tensor dy(CGC_DTYPE_FLOAT32, {2, 2, 6, 4});
    e.clear();
    for (int64_t i = 0; i < dy.size(); ++i) {
      std::vector<int64_t> c = coords(i, dy.shape());
      int64_t bi = c[2] % b, bj = c[3] % b;
      int64_t ch = std::string(mode) == "DCR" ? (bi * b + bj) * 2 + c[1] : c[1] * b * b + bi * b + bj;
      e.push_back(d.get(linear({c[0], ch, c[2] / b, c[3] / b}, d.shape())));
    }
    expectOp(Desc("cgc_op.depth_to_space").in(d).out(dy).i("blocksize", b).s("mode", mode), d, dy,
             e, std::string("depth_to_space ") + mode);
    // space_to_depth inverts DCR.
    if (std::string(mode) == "DCR") {
      Tensor back(CGC_DTYPE_FLOAT32, {2, 8, 3, 2});
      expectOp(Desc("cgc_op.space_to_depth").in(dy).out(back).i("blocksize", b), dy, back,
               d.values(), "space_to_depth");
    }
  }
}

/// The oracle of cgc_op.pad: `x` padded to `shape` by ONNX `pads` (begins,
/// then ends) in `mode`, the constant 1.5.
std::vector<double> padOracle(const Tensor &x, const std::vector<int64_t> &shape,
                              const std::vector<int64_t> &pads, const std::string &mode,
                              cgc_dtype_t dt) {
  std::vector<double> e;
  for (int64_t i = 0; i < count(shape); ++i) {
    std::vector<int64_t> c = coords(i, shape);
    bool pad = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t n = x.shape()[d], v = c[d] - pads[d];
      if (v < 0 || v >= n) {
        if (mode == "constant")
          pad = true;
        else if (mode == "edge")
          v = std::clamp<int64_t>(v, 0, n - 1);
        else
          v = v < 0 ? -v : 2 * (n - 1) - v;
      }
      c[d] = v;
    }
    e.push_back(pad ? roundTo(dt, 1.5) : x.get(linear(c, x.shape())));
  }
  return e;
}

TEST(Movement, PadEveryMode) {
  std::mt19937 rng(65);
  for (const char *mode : {"constant", "reflect", "edge"})
    for (std::vector<int64_t> pads : {std::vector<int64_t>{1, 2, 2, 0}, {0, -1, 1, 2}, {2, 0, 0, 1}})
      for (cgc_dtype_t dt : {CGC_DTYPE_FLOAT32, CGC_DTYPE_INT64, CGC_DTYPE_BFLOAT16}) {
        Tensor x(dt, {3, 4}, Layout::Transposed);
        fillRandom(x, rng, -20, 20);
        std::vector<int64_t> shape = {3 + pads[0] + pads[2], 4 + pads[1] + pads[3]};
        Tensor y(dt, shape);
        expectOp(Desc("cgc_op.pad").in(x).out(y).ints("pads", pads).s("mode", mode).f("value", 1.5),
                 x, y, padOracle(x, shape, pads, mode, dt),
                 std::string("pad ") + mode + " " + dtypeStr(dt));
      }
}

// Channels-last activations padded along their planes (Inception's pad
// before an average pool, inside the cpu target's partitions): the
// kernel runs along the contiguous channels.
TEST(Movement, PadChannelsLastPlanes) {
  std::mt19937 rng(68);
  for (const char *mode : {"constant", "reflect", "edge"})
    for (cgc_dtype_t dt : {CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT16}) {
      Tensor x(dt, {2, 19, 5, 6}, Layout::ChannelsLast);
      fillRandom(x, rng, -20, 20);
      const std::vector<int64_t> pads = {0, 0, 1, 2, 0, 0, 2, 1};
      const std::vector<int64_t> shape = {2, 19, 8, 9};
      Tensor y(dt, shape, Layout::ChannelsLast);
      expectOp(Desc("cgc_op.pad").in(x).out(y).ints("pads", pads).s("mode", mode).f("value", 1.5),
               x, y, padOracle(x, shape, pads, mode, dt),
               std::string("channels-last pad ") + mode + " " + dtypeStr(dt));
    }
}

TEST(Movement, GatherAndGatherElements) {
  std::mt19937 rng(66);
  for (cgc_dtype_t it : {CGC_DTYPE_INT32, CGC_DTYPE_INT64})
    for (int64_t axis : {0, 1, 2}) {
      Tensor data(CGC_DTYPE_FLOAT32, {5, 4, 3}, Layout::Padded);
      fillRandom(data, rng, -10, 10);
      int64_t len = data.shape()[size_t(axis)];
      Tensor idx(it, {2, 3});
      fillRandom(idx, rng, -len, len - 1); // negative indices wrap
      std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + axis);
      shape.insert(shape.end(), {2, 3});
      shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
      Tensor y(CGC_DTYPE_FLOAT32, shape);
      std::vector<double> e;
      for (int64_t i = 0; i < y.size(); ++i) {
        std::vector<int64_t> c = coords(i, shape);
        int64_t k = int64_t(idx.get(linear({c[size_t(axis)], c[size_t(axis) + 1]}, {2, 3})));
        if (k < 0)
          k += len;
        std::vector<int64_t> dc(c.begin(), c.begin() + axis);
        dc.push_back(k);
        dc.insert(dc.end(), c.begin() + axis + 2, c.end());
        e.push_back(data.get(linear(dc, data.shape())));
      }
      auto k = make(Desc("cgc_op.gather").in(data).in(idx).out(y).i("axis", axis));
      runKernel(*k, {&data, &idx}, {&y}, pool3());
      EXPECT_TRUE(closeTo(y, e, 0, 0, "gather axis " + std::to_string(axis)));

      Tensor ei(it, {5, 4, 3});
      fillRandom(ei, rng, -len, len - 1);
      Tensor ey(CGC_DTYPE_FLOAT32, {5, 4, 3});
      e.clear();
      for (int64_t i = 0; i < ey.size(); ++i) {
        std::vector<int64_t> c = coords(i, ey.shape());
        int64_t kk = int64_t(ei.get(i));
        c[size_t(axis)] = kk < 0 ? kk + len : kk;
        e.push_back(data.get(linear(c, data.shape())));
      }
      auto ke = make(Desc("cgc_op.gather_elements").in(data).in(ei).out(ey).i("axis", axis));
      runKernel(*ke, {&data, &ei}, {&ey}, pool3());
      EXPECT_TRUE(closeTo(ey, e, 0, 0, "gather_elements axis " + std::to_string(axis)));
    }
}

/// The message of the RunError running `kernel` throws; "" if it runs.
std::string runError(const Kernel &kernel, std::vector<const Tensor *> inputs,
                     std::vector<Tensor *> outputs, ThreadPool &pool) {
  try {
    runKernel(kernel, inputs, outputs, pool);
  } catch (const RunError &e) {
    return e.what();
  }
  return "";
}

TEST(Movement, OutOfRangeIndexFailsTheRun) {
  Tensor data(CGC_DTYPE_FLOAT32, {3, 2}), idx(CGC_DTYPE_INT64, {2}), y(CGC_DTYPE_FLOAT32, {2, 2});
  data.setValues({1, 2, 3, 4, 5, 6});
  auto k = make(Desc("cgc_op.gather").in(data).in(idx).out(y));
  for (ThreadPool *pool : {&pool1(), &pool3()}) {
    idx.setValues({-3, 2}); // the ends of the range
    EXPECT_EQ(runError(*k, {&data, &idx}, {&y}, *pool), "");
    EXPECT_TRUE(closeTo(y, {1, 2, 5, 6}, 0, 0, "gather at the ends"));
    idx.setValues({1, 1000000});
    EXPECT_EQ(runError(*k, {&data, &idx}, {&y}, *pool),
              "cgc_op.gather: index 1000000 at indices[1] is out of range for dimension 0 of "
              "size 3 (valid: -3 to 2)");
    idx.setValues({-1000000, 0});
    EXPECT_EQ(runError(*k, {&data, &idx}, {&y}, *pool),
              "cgc_op.gather: index -1000000 at indices[0] is out of range for dimension 0 of "
              "size 3 (valid: -3 to 2)");
  }
  // int32 indices, gather along axis 1.
  Tensor idx32(CGC_DTYPE_INT32, {1, 2}), y1(CGC_DTYPE_FLOAT32, {3, 1, 2});
  idx32.setValues({0, 2});
  auto k1 = make(Desc("cgc_op.gather").in(data).in(idx32).out(y1).i("axis", 1));
  EXPECT_EQ(runError(*k1, {&data, &idx32}, {&y1}, pool3()),
            "cgc_op.gather: index 2 at indices[0, 1] is out of range for dimension 1 of size 2 "
            "(valid: -2 to 1)");

  Tensor ei(CGC_DTYPE_INT64, {3, 2}), ey(CGC_DTYPE_FLOAT32, {3, 2});
  ei.setValues({0, 1, 1, -2, 0, 2});
  auto ke = make(Desc("cgc_op.gather_elements").in(data).in(ei).out(ey).i("axis", 1));
  EXPECT_EQ(runError(*ke, {&data, &ei}, {&ey}, pool3()),
            "cgc_op.gather_elements: index 2 at indices[2, 1] is out of range for dimension 1 "
            "of size 2 (valid: -2 to 1)");
}

TEST(Movement, GatherElementsRefusesIndicesLargerThanData) {
  Tensor data(CGC_DTYPE_FLOAT32, {2, 2}), ei(CGC_DTYPE_INT64, {3, 1}), ey(CGC_DTYPE_FLOAT32, {3, 1});
  EXPECT_NE(makeError(Desc("cgc_op.gather_elements").in(data).in(ei).out(ey).i("axis", 1))
                .find("indices dimension 0 (3) exceeds the data dimension (2)"),
            std::string::npos);
}

TEST(Movement, RejectsBadDescriptors) {
  Tensor x(CGC_DTYPE_FLOAT32, {2, 3}), y(CGC_DTYPE_FLOAT32, {7});
  EXPECT_NE(makeError(Desc("cgc_op.reshape").in(x).out(y).ints("shape", {7})).find("cannot reshape"),
            std::string::npos);
  EXPECT_NE(makeError(Desc("cgc_op.transpose").in(x).out(x).ints("perm", {0, 0})).find("permutation"),
            std::string::npos);
  Tensor s(CGC_DTYPE_FLOAT32, {2, 3});
  EXPECT_NE(makeError(Desc("cgc_op.slice").in(x).out(s).ints("starts", {0, 0}).ints("ends", {2, 9})
                          .ints("steps", {1, 1}))
                .find("normalized"),
            std::string::npos);
  Tensor f(CGC_DTYPE_FLOAT32, {2});
  EXPECT_NE(makeError(Desc("cgc_op.gather").in(x).in(f).out(x)).find("int32 or int64"),
            std::string::npos);
  EXPECT_NE(makeError(Desc("cgc_op.pad").in(x).out(x).ints("pads", {0, 3, 0, 3}).s("mode", "reflect"))
                .find("reflect"),
            std::string::npos);
}

} // namespace
