//===- ScatterTest.cpp - cumsum, scatters, top_k, grid_sample -------------===//

#include "KernelTestUtil.h"

#include <limits>
#include <numeric>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

TEST(Scan, CumSumEveryDtypeAxisAndMode) {
  std::mt19937 rng(90);
  for (cgc_dtype_t dt : kNumericTypes)
    for (int64_t axis : {0, 1, 2})
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          Tensor x(dt, {3, 5, 4}, axis == 1 ? Layout::Transposed : Layout::Contiguous);
          fillRandom(x, rng, isUnsignedInt(dt) ? 0 : -9, 9);
          Tensor y(dt, x.shape());
          auto k = make(Desc("cgc_op.cumsum").in(x).out(y).i("axis", axis).b("exclusive", exclusive)
                            .b("reverse", reverse));
          runKernel(*k, {&x}, {&y}, pool3());
          std::vector<double> e;
          for (int64_t i = 0; i < y.size(); ++i) {
            std::vector<int64_t> c = coords(i, y.shape());
            int64_t at = c[size_t(axis)], len = x.shape()[size_t(axis)];
            double s = 0;
            for (int64_t j = 0; j < len; ++j) {
              bool take = reverse ? (exclusive ? j > at : j >= at) : (exclusive ? j < at : j <= at);
              if (!take)
                continue;
              c[size_t(axis)] = j;
              s += x.get(linear(c, x.shape()));
            }
            e.push_back(isFloat(dt) ? s : wrapTo(dt, s));
          }
          EXPECT_TRUE(closeTo(y, e, relTol(dt) * 4, absTol(dt) * 10,
                              "cumsum " + dtypeStr(dt) + " axis " + std::to_string(axis)));
        }
}

double combineOracle(const std::string &red, double a, double b, cgc_dtype_t dt) {
  double r = red == "none" ? b
             : red == "add" ? a + b
             : red == "mul" ? a * b
             : red == "max" ? std::max(a, b)
                            : std::min(a, b);
  return isFloat(dt) ? roundTo(dt, r) : wrapTo(dt, r);
}

TEST(Scatter, ScatterElementsEveryReductionAndDtype) {
  std::mt19937 rng(91);
  for (cgc_dtype_t dt : kAllTypes)
    for (const char *red : {"none", "add", "mul", "max", "min"})
      for (int64_t axis : {0, 1}) {
        if (dt == CGC_DTYPE_BOOL && std::string(red) != "none")
          continue;
        Tensor data(dt, {4, 5}, Layout::Padded);
        fillRandom(data, rng, isUnsignedInt(dt) ? 0 : -5, 5);
        Tensor idx(CGC_DTYPE_INT64, {3, 4}), upd(dt, {3, 4});
        int64_t len = data.shape()[size_t(axis)];
        fillRandom(idx, rng, -len, len - 1); // duplicates and negatives
        fillRandom(upd, rng, isUnsignedInt(dt) ? 0 : -5, 5);
        Tensor y(dt, data.shape());
        auto k = make(Desc("cgc_op.scatter_elements").in(data).in(idx).in(upd).out(y).i("axis", axis)
                          .s("reduction", red));
        runKernel(*k, {&data, &idx, &upd}, {&y}, pool3());
        std::vector<double> e = data.values();
        for (int64_t p = 0; p < idx.size(); ++p) {
          std::vector<int64_t> c = coords(p, idx.shape());
          int64_t v = int64_t(idx.get(p));
          c[size_t(axis)] = v < 0 ? v + len : v;
          double &t = e[size_t(linear(c, data.shape()))];
          t = combineOracle(red, t, upd.get(p), dt);
        }
        EXPECT_TRUE(closeTo(y, e, relTol(dt) * 2, absTol(dt) * 2,
                            std::string("scatter_elements ") + red + " " + dtypeStr(dt)));
      }
}

TEST(Scatter, ScatterNdTuplesOfEveryLength) {
  std::mt19937 rng(92);
  for (cgc_dtype_t dt : {CGC_DTYPE_FLOAT32, CGC_DTYPE_INT32, CGC_DTYPE_FLOAT16, CGC_DTYPE_BOOL})
    for (int64_t k : {0, 1, 2, 3})
      for (const char *red : {"none", "add", "max"}) {
        if (dt == CGC_DTYPE_BOOL && std::string(red) != "none")
          continue;
        std::vector<int64_t> ds = {3, 4, 2};
        Tensor data(dt, ds);
        fillRandom(data, rng, -5, 5);
        std::vector<int64_t> is = {5, k};
        Tensor idx(CGC_DTYPE_INT32, is, Layout::Transposed);
        for (int64_t t = 0; t < 5; ++t)
          for (int64_t j = 0; j < k; ++j) {
            int64_t dim = ds[size_t(j)];
            idx.set(t * k + j, double(std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng)));
          }
        std::vector<int64_t> us = {5};
        us.insert(us.end(), ds.begin() + k, ds.end());
        Tensor upd(dt, us);
        fillRandom(upd, rng, -5, 5);
        Tensor y(dt, ds);
        auto kern = make(Desc("cgc_op.scatter_nd").in(data).in(idx).in(upd).out(y).s("reduction", red));
        runKernel(*kern, {&data, &idx, &upd}, {&y}, pool1());
        std::vector<double> e = data.values();
        int64_t slice = count(std::vector<int64_t>(ds.begin() + k, ds.end()));
        for (int64_t t = 0; t < 5; ++t) {
          std::vector<int64_t> c(ds.size(), 0);
          for (int64_t j = 0; j < k; ++j) {
            int64_t v = int64_t(idx.get(t * k + j));
            c[size_t(j)] = v < 0 ? v + ds[size_t(j)] : v;
          }
          int64_t base = linear(c, ds);
          for (int64_t q = 0; q < slice; ++q) {
            double &dst = e[size_t(base + q)];
            dst = combineOracle(red, dst, upd.get(t * slice + q), dt);
          }
        }
        EXPECT_TRUE(closeTo(y, e, relTol(dt) * 2, absTol(dt) * 2,
                            std::string("scatter_nd k=") + std::to_string(k) + " " + red + " " +
                                dtypeStr(dt)));
      }
}

TEST(Selection, TopKTiesNaNAndEveryAxis) {
  std::mt19937 rng(93);
  for (cgc_dtype_t dt : kNumericTypes)
    for (bool largest : {true, false})
      for (int64_t axis : {0, 1})
        for (int64_t k : {0, 1, 3, 6}) {
          Tensor x(dt, {6, 7}, Layout::Transposed);
          fillRandom(x, rng, 0, 4); // many ties
          if (isFloat(dt))
            x.set(3, std::numeric_limits<double>::quiet_NaN());
          std::vector<int64_t> shape = x.shape();
          shape[size_t(axis)] = k;
          Tensor v(dt, shape), ix(CGC_DTYPE_INT64, shape);
          auto kern = make(Desc("cgc_op.top_k").in(x).out(v).out(ix).i("k", k).i("axis", axis).b(
              "largest", largest));
          runKernel(*kern, {&x}, {&v, &ix}, pool3());
          std::vector<double> ev, ei;
          std::vector<int64_t> kshape = x.shape();
          kshape[size_t(axis)] = 1;
          std::vector<std::vector<std::pair<double, double>>> perSlice;
          for (int64_t s = 0; s < count(kshape); ++s) {
            std::vector<int64_t> c = coords(s, kshape);
            std::vector<std::pair<double, int64_t>> items;
            for (int64_t j = 0; j < x.shape()[size_t(axis)]; ++j) {
              c[size_t(axis)] = j;
              items.push_back({x.get(linear(c, x.shape())), j});
            }
            // Equal values keep index order (std::sort with the index as the
            // tie-break: std::stable_sort's buffer is deprecated here).
            std::sort(items.begin(), items.end(), [&](const auto &a, const auto &b) {
              bool na = std::isnan(a.first), nb = std::isnan(b.first);
              if (na != nb)
                return largest ? na : nb;
              if (!na && a.first != b.first)
                return largest ? a.first > b.first : a.first < b.first;
              return a.second < b.second;
            });
            std::vector<std::pair<double, double>> top;
            for (int64_t j = 0; j < k; ++j)
              top.push_back({items[size_t(j)].first, double(items[size_t(j)].second)});
            perSlice.push_back(top);
          }
          for (int64_t i = 0; i < v.size(); ++i) {
            std::vector<int64_t> c = coords(i, shape);
            int64_t j = c[size_t(axis)];
            c[size_t(axis)] = 0;
            const auto &top = perSlice[size_t(linear(c, kshape))];
            ev.push_back(top[size_t(j)].first);
            ei.push_back(top[size_t(j)].second);
          }
          std::string what = "top_k " + dtypeStr(dt) + (largest ? " largest" : " smallest") +
                             " axis " + std::to_string(axis) + " k " + std::to_string(k);
          EXPECT_TRUE(closeTo(v, ev, 0, 0, what + " values"));
          EXPECT_TRUE(closeTo(ix, ei, 0, 0, what + " indices"));
        }
}

TEST(Sampling, GridSampleIdentityAndInteriorBilinear) {
  std::mt19937 rng(94);
  for (cgc_dtype_t dt : kFloatTypes) {
    const int64_t H = 5, W = 7;
    Tensor x(dt, {2, 3, H, W});
    fillRandom(x, rng, -3, 3);
    // An identity grid with align_corners hits pixel centers exactly: every
    // mode and padding returns the input.
    Tensor g(dt, {2, H, W, 2});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          g.set(((n * H + i) * W + j) * 2, -1.0 + 2.0 * double(j) / double(W - 1));
          g.set(((n * H + i) * W + j) * 2 + 1, -1.0 + 2.0 * double(i) / double(H - 1));
        }
    for (const char *mode : {"bilinear", "nearest", "bicubic"})
      for (const char *pad : {"zeros", "border", "reflection"}) {
        Tensor y(dt, {2, 3, H, W});
        auto k = make(Desc("cgc_op.grid_sample").in(x).in(g).out(y).s("mode", mode).s(
            "padding_mode", pad).b("align_corners", true));
        runKernel(*k, {&x, &g}, {&y}, pool3());
        EXPECT_TRUE(closeTo(y, x.values(), relTol(dt) * 4, absTol(dt) * 4,
                            std::string("grid_sample identity ") + mode + " " + pad + " " +
                                dtypeStr(dt)));
      }
    // Random interior points, bilinear without align_corners, by hand; and
    // border padding far outside reads the clamped corner.
    Tensor gi(dt, {2, 4, 6, 2});
    fillRandom(gi, rng, -0.6, 0.6);
    Tensor yi(dt, {2, 3, 4, 6});
    auto k = make(Desc("cgc_op.grid_sample").in(x).in(gi).out(yi));
    runKernel(*k, {&x, &gi}, {&yi}, pool1());
    std::vector<double> e;
    for (int64_t i = 0; i < yi.size(); ++i) {
      std::vector<int64_t> c = coords(i, yi.shape());
      int64_t gp = ((c[0] * 4 + c[2]) * 6 + c[3]) * 2;
      double px = ((gi.get(gp) + 1) * double(W) - 1) / 2, py = ((gi.get(gp + 1) + 1) * double(H) - 1) / 2;
      int64_t x0 = int64_t(std::floor(px)), y0 = int64_t(std::floor(py));
      double dx = px - double(x0), dy = py - double(y0);
      auto at = [&](int64_t yy, int64_t xx) { return x.get(linear({c[0], c[1], yy, xx}, x.shape())); };
      e.push_back((1 - dy) * ((1 - dx) * at(y0, x0) + dx * at(y0, x0 + 1)) +
                  dy * ((1 - dx) * at(y0 + 1, x0) + dx * at(y0 + 1, x0 + 1)));
    }
    EXPECT_TRUE(closeTo(yi, e, relTol(dt) * 4, absTol(dt) * 4, "grid_sample interior " + dtypeStr(dt)));
    Tensor go(dt, {2, 1, 1, 2});
    for (int64_t i = 0; i < 4; ++i)
      go.set(i, 5.0);
    Tensor yo(dt, {2, 3, 1, 1});
    auto kb = make(Desc("cgc_op.grid_sample").in(x).in(go).out(yo).s("padding_mode", "border"));
    runKernel(*kb, {&x, &go}, {&yo}, pool1());
    std::vector<double> eb;
    for (int64_t nc = 0; nc < 6; ++nc)
      eb.push_back(x.get(nc * H * W + H * W - 1));
    EXPECT_TRUE(closeTo(yo, eb, relTol(dt), absTol(dt), "grid_sample border " + dtypeStr(dt)));
  }
}

TEST(Scatter, OutOfRangeIndexFailsTheRun) {
  auto runError = [](const Kernel &kernel, std::vector<const Tensor *> inputs,
                     std::vector<Tensor *> outputs) -> std::string {
    try {
      runKernel(kernel, inputs, outputs, pool1());
    } catch (const RunError &e) {
      return e.what();
    }
    return "";
  };
  Tensor data(CGC_DTYPE_FLOAT32, {2, 3}), y(CGC_DTYPE_FLOAT32, {2, 3});
  data.setValues({0, 1, 2, 3, 4, 5});
  Tensor idx(CGC_DTYPE_INT64, {1, 3}), upd(CGC_DTYPE_FLOAT32, {1, 3});
  upd.setValues({9, 9, 9});
  auto se = make(Desc("cgc_op.scatter_elements").in(data).in(idx).in(upd).out(y).i("axis", 0));
  idx.setValues({1, -2, -1});
  EXPECT_EQ(runError(*se, {&data, &idx, &upd}, {&y}), "");
  EXPECT_TRUE(closeTo(y, {0, 9, 2, 9, 4, 9}, 0, 0, "scatter_elements at the ends"));
  idx.setValues({0, 2, 1});
  EXPECT_EQ(runError(*se, {&data, &idx, &upd}, {&y}),
            "cgc_op.scatter_elements: index 2 at indices[0, 1] is out of range for dimension 0 "
            "of size 2 (valid: -2 to 1)");

  Tensor ndIdx(CGC_DTYPE_INT32, {2, 2}), ndUpd(CGC_DTYPE_FLOAT32, {2});
  ndUpd.setValues({7, 8});
  auto snd = make(Desc("cgc_op.scatter_nd").in(data).in(ndIdx).in(ndUpd).out(y));
  ndIdx.setValues({1, 2, 0, -4});
  EXPECT_EQ(runError(*snd, {&data, &ndIdx, &ndUpd}, {&y}),
            "cgc_op.scatter_nd: index -4 at indices[1, 1] is out of range for dimension 1 of "
            "size 3 (valid: -3 to 2)");
}

TEST(Scatter, RejectsBadDescriptors) {
  Tensor data(CGC_DTYPE_FLOAT32, {3, 4}), idx(CGC_DTYPE_INT64, {2, 5}), upd(CGC_DTYPE_FLOAT32, {2, 5});
  EXPECT_NE(makeError(Desc("cgc_op.scatter_elements").in(data).in(idx).in(upd).out(data).i("axis", 0))
                .find("exceeds"),
            std::string::npos);
  Tensor fidx(CGC_DTYPE_FLOAT32, {2, 4}), fupd(CGC_DTYPE_FLOAT32, {2, 4});
  EXPECT_NE(makeError(Desc("cgc_op.scatter_elements").in(data).in(fidx).in(fupd).out(data))
                .find("int32 or int64"),
            std::string::npos);
  Tensor v(CGC_DTYPE_FLOAT32, {3, 5}), i(CGC_DTYPE_INT64, {3, 5});
  EXPECT_NE(makeError(Desc("cgc_op.top_k").in(data).out(v).out(i).i("k", 5).i("axis", 1)).find("k = 5"),
            std::string::npos);
  Tensor b(CGC_DTYPE_BOOL, {3, 4}), bi(CGC_DTYPE_INT64, {3, 4});
  EXPECT_NE(makeError(Desc("cgc_op.scatter_elements").in(b).in(bi).in(b).out(b).s("reduction", "add"))
                .find("bool"),
            std::string::npos);
}

} // namespace
