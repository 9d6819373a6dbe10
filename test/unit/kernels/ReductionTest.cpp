//===- ReductionTest.cpp - Reductions, arg reductions, softmax ------------===//

#include "KernelTestUtil.h"

#include <limits>
#include <numeric>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

struct RedOracle {
  const char *op;
  std::function<double(const std::vector<double> &, cgc_dtype_t)> f;
};

double sum(const std::vector<double> &v) { return std::accumulate(v.begin(), v.end(), 0.0); }

std::vector<RedOracle> oracles() {
  return {
      {"cgc_op.reduce_sum", [](const std::vector<double> &v, cgc_dtype_t) { return sum(v); }},
      {"cgc_op.reduce_mean",
       [](const std::vector<double> &v, cgc_dtype_t d) {
         double s = sum(v) / double(v.size());
         return isFloat(d) ? s : std::trunc(s);
       }},
      {"cgc_op.reduce_max",
       [](const std::vector<double> &v, cgc_dtype_t) {
         double m = -kInf;
         for (double x : v)
           m = std::max(m, x);
         return m;
       }},
      {"cgc_op.reduce_min",
       [](const std::vector<double> &v, cgc_dtype_t) {
         double m = kInf;
         for (double x : v)
           m = std::min(m, x);
         return m;
       }},
      {"cgc_op.reduce_prod",
       [](const std::vector<double> &v, cgc_dtype_t) {
         double p = 1;
         for (double x : v)
           p *= x;
         return p;
       }},
      {"cgc_op.reduce_l1",
       [](const std::vector<double> &v, cgc_dtype_t) {
         double s = 0;
         for (double x : v)
           s += std::fabs(x);
         return s;
       }},
      {"cgc_op.reduce_l2",
       [](const std::vector<double> &v, cgc_dtype_t d) {
         double s = 0;
         for (double x : v)
           s += x * x;
         return isFloat(d) ? std::sqrt(s) : std::trunc(std::sqrt(s));
       }},
      {"cgc_op.reduce_log_sum",
       [](const std::vector<double> &v, cgc_dtype_t d) {
         return isFloat(d) ? std::log(sum(v)) : std::trunc(std::log(sum(v)));
       }},
      {"cgc_op.reduce_log_sum_exp",
       [](const std::vector<double> &v, cgc_dtype_t d) {
         double s = 0;
         for (double x : v)
           s += std::exp(x);
         return isFloat(d) ? std::log(s) : std::trunc(std::log(s));
       }},
      {"cgc_op.reduce_sum_square",
       [](const std::vector<double> &v, cgc_dtype_t) {
         double s = 0;
         for (double x : v)
           s += x * x;
         return s;
       }},
  };
}

/// Reduces `x` over `axes` (empty: all) with `f`, in double.
std::vector<double> reduceOracle(const Tensor &x, const std::vector<int64_t> &axes, bool keepdims,
                                 const std::function<double(const std::vector<double> &)> &f,
                                 std::vector<int64_t> &outShape) {
  const std::vector<int64_t> &s = x.shape();
  std::vector<bool> red(s.size(), axes.empty());
  for (int64_t a : axes)
    red[size_t(a)] = true;
  std::vector<int64_t> kept;
  outShape.clear();
  for (size_t d = 0; d < s.size(); ++d) {
    if (!red[d]) {
      kept.push_back(s[d]);
      outShape.push_back(s[d]);
    } else if (keepdims) {
      outShape.push_back(1);
    }
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(count(kept)));
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> c = coords(i, s), kc;
    for (size_t d = 0; d < s.size(); ++d)
      if (!red[d])
        kc.push_back(c[d]);
    groups[size_t(linear(kc, kept))].push_back(x.get(i));
  }
  std::vector<double> out;
  for (auto &g : groups)
    out.push_back(f(g));
  return out;
}

TEST(Reduction, EveryOpDtypeAxesAndLayout) {
  std::mt19937 rng(20);
  std::vector<std::vector<int64_t>> axesSets = {{}, {0}, {2}, {1, 2}, {0, 2}, {0, 1, 2}};
  for (const RedOracle &o : oracles())
    for (cgc_dtype_t dt : kNumericTypes)
      for (const auto &axes : axesSets)
        for (bool keep : {true, false})
          for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Reversed}) {
            std::string op = o.op;
            bool logish = op.find("log") != std::string::npos || op == "cgc_op.reduce_l2";
            Tensor x(dt, {3, 4, 5}, layout);
            double lo = isUnsignedInt(dt) || logish ? 0 : -4, hi = 4;
            if (op == "cgc_op.reduce_prod")
              lo = isUnsignedInt(dt) ? 0 : -2, hi = 2;
            if (op == "cgc_op.reduce_log_sum")
              lo = 0.1;
            fillRandom(x, rng, lo, hi);
            if (op == "cgc_op.reduce_log_sum" && !isFloat(dt))
              for (int64_t i = 0; i < x.size(); ++i)
                x.set(i, x.get(i) + 1); // positive sums
            std::vector<int64_t> outShape;
            std::vector<double> e = reduceOracle(
                x, axes, keep, [&](const std::vector<double> &v) { return o.f(v, dt); }, outShape);
            for (double &v : e)
              v = isFloat(dt) ? v : wrapTo(dt, v);
            Tensor y(dt, outShape);
            Desc d(o.op);
            d.in(x).out(y).b("keepdims", keep);
            if (!axes.empty())
              d.ints("axes", axes);
            auto k = make(d);
            if (!k)
              continue;
            runKernel(*k, {&x}, {&y}, pool3());
            double rel = relTol(dt) * (dt == CGC_DTYPE_FLOAT16 || dt == CGC_DTYPE_BFLOAT16 ? 2 : 5);
            EXPECT_TRUE(closeTo(y, e, rel, absTol(dt) * 10,
                                op + " " + dtypeStr(dt) + " axes " + std::to_string(axes.size()) +
                                    (keep ? " keep " : " drop ") + layoutName(layout)));
          }
}

TEST(Reduction, LargeReductionsSplitAcrossThreads) {
  std::mt19937 rng(21);
  struct C {
    std::vector<int64_t> shape, axes;
    Layout layout = Layout::Contiguous;
  } cases[] = {{{300000}, {}},        // one output, split over the reduced range
               {{2, 150000}, {1}},    // few outputs
               {{512, 300}, {0}},     // column order: rows split across threads
               {{1, 2048, 7, 7}, {2, 3}},
               // A channels-last plane (global average pooling): bands of rows.
               {{1, 96, 37, 41}, {2, 3}, Layout::ChannelsLast}};
  for (const C &c : cases)
    for (const char *op : {"cgc_op.reduce_sum", "cgc_op.reduce_max", "cgc_op.reduce_mean",
                           "cgc_op.reduce_log_sum_exp"}) {
      Tensor x(CGC_DTYPE_FLOAT32, c.shape, c.layout);
      fillRandom(x, rng, -1, 1);
      RedOracle o = oracles()[0];
      for (const RedOracle &r : oracles())
        if (std::string(r.op) == op)
          o = r;
      std::vector<int64_t> outShape;
      std::vector<double> e = reduceOracle(
          x, c.axes, true,
          [&](const std::vector<double> &v) { return o.f(v, CGC_DTYPE_FLOAT32); }, outShape);
      Tensor y(CGC_DTYPE_FLOAT32, outShape);
      Desc d(op);
      d.in(x).out(y);
      if (!c.axes.empty())
        d.ints("axes", c.axes);
      auto k = make(d);
      runKernel(*k, {&x}, {&y}, pool3());
      EXPECT_TRUE(closeTo(y, e, 1e-5, 1e-4, std::string(op) + " large"));
    }
}

TEST(Reduction, EmptyReductionGivesIdentity) {
  Tensor x(CGC_DTYPE_FLOAT32, {3, 0});
  struct E {
    const char *op;
    double value;
  } cases[] = {{"cgc_op.reduce_sum", 0},
               {"cgc_op.reduce_prod", 1},
               {"cgc_op.reduce_max", -kInf},
               {"cgc_op.reduce_min", kInf},
               {"cgc_op.reduce_log_sum_exp", -kInf},
               {"cgc_op.reduce_mean", std::numeric_limits<double>::quiet_NaN()}};
  for (const E &c : cases) {
    Tensor y(CGC_DTYPE_FLOAT32, {3, 1});
    auto k = make(Desc(c.op).in(x).out(y).ints("axes", {1}));
    runKernel(*k, {&x}, {&y}, pool1());
    EXPECT_TRUE(closeTo(y, {c.value, c.value, c.value}, 0, 0, c.op));
  }
}

TEST(Reduction, RankZeroAndNaN) {
  Tensor x(CGC_DTYPE_FLOAT32, {}), y(CGC_DTYPE_FLOAT32, {});
  x.set(0, 2.5);
  auto k = make(Desc("cgc_op.reduce_sum").in(x).out(y));
  runKernel(*k, {&x}, {&y}, pool1());
  EXPECT_TRUE(closeTo(y, {2.5}, 0, 0, "rank 0"));
  Tensor v(CGC_DTYPE_FLOAT32, {4}), m(CGC_DTYPE_FLOAT32, {1});
  v.setValues({1, std::nan(""), 3, 2});
  auto km = make(Desc("cgc_op.reduce_max").in(v).out(m));
  runKernel(*km, {&v}, {&m}, pool1());
  EXPECT_TRUE(std::isnan(m.get(0))) << "reduce_max propagates NaN";
}

TEST(Reduction, RejectsBadAxes) {
  Tensor x(CGC_DTYPE_FLOAT32, {2, 3}), y(CGC_DTYPE_FLOAT32, {1, 3});
  EXPECT_NE(makeError(Desc("cgc_op.reduce_sum").in(x).out(y).ints("axes", {2})).find("out of range"),
            std::string::npos);
  EXPECT_NE(makeError(Desc("cgc_op.reduce_sum").in(x).out(y).ints("axes", {0, 0})).find("repeated"),
            std::string::npos);
  EXPECT_NE(makeError(Desc("cgc_op.reduce_sum").in(x).out(x).ints("axes", {0})).find("shape"),
            std::string::npos);
}

TEST(Reduction, ArgMaxArgMinTiesAndLayouts) {
  std::mt19937 rng(22);
  for (cgc_dtype_t dt : kNumericTypes)
    for (const char *op : {"cgc_op.argmax", "cgc_op.argmin"})
      for (bool last : {false, true})
        for (int64_t axis : {0, 1, 2})
          for (bool keep : {true, false}) {
            Tensor x(dt, {3, 6, 4}, Layout::Transposed);
            fillRandom(x, rng, 0, 3); // many ties
            std::vector<int64_t> shape = x.shape();
            if (keep)
              shape[size_t(axis)] = 1;
            else
              shape.erase(shape.begin() + axis);
            Tensor y(CGC_DTYPE_INT64, shape);
            auto k = make(Desc(op).in(x).out(y).i("axis", axis).b("keepdims", keep).b(
                "select_last_index", last));
            runKernel(*k, {&x}, {&y}, pool3());
            std::vector<double> e;
            std::vector<int64_t> kshape = x.shape();
            kshape[size_t(axis)] = 1;
            for (int64_t o = 0; o < count(kshape); ++o) {
              std::vector<int64_t> c = coords(o, kshape);
              int64_t best = 0;
              double bv = 0;
              for (int64_t j = 0; j < x.shape()[size_t(axis)]; ++j) {
                c[size_t(axis)] = j;
                double v = x.get(linear(c, x.shape()));
                bool better = j == 0 || (op[12] == 'x' ? (last ? v >= bv : v > bv)
                                                      : (last ? v <= bv : v < bv));
                if (better) {
                  bv = v;
                  best = j;
                }
              }
              e.push_back(double(best));
            }
            EXPECT_TRUE(closeTo(y, e, 0, 0,
                                std::string(op) + " " + dtypeStr(dt) + " axis " +
                                    std::to_string(axis) + (last ? " last" : " first")));
          }
}

std::vector<double> softOracle(const Tensor &x, int64_t axis, const std::string &op) {
  std::vector<double> out(static_cast<size_t>(x.size()));
  std::vector<int64_t> s = x.shape(), ks = s;
  ks[size_t(axis)] = 1;
  for (int64_t o = 0; o < count(ks); ++o) {
    std::vector<int64_t> c = coords(o, ks);
    std::vector<double> v;
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < s[size_t(axis)]; ++j) {
      c[size_t(axis)] = j;
      idx.push_back(linear(c, s));
      v.push_back(x.get(idx.back()));
    }
    double m = *std::max_element(v.begin(), v.end());
    double z = 0;
    for (double t : v)
      z += std::exp(t - m);
    size_t arg = size_t(std::max_element(v.begin(), v.end()) - v.begin());
    for (size_t j = 0; j < v.size(); ++j) {
      double r;
      if (op == "cgc_op.softmax")
        r = std::exp(v[j] - m) / z;
      else if (op == "cgc_op.log_softmax")
        r = v[j] - m - std::log(z);
      else
        r = j == arg ? 1 : 0;
      out[size_t(idx[j])] = r;
    }
  }
  return out;
}

TEST(Reduction, SoftmaxRowsWithTermsFarBelowTheirMax) {
  // Rows whose values lie up to 1000 below their maximum (masked attention
  // scores): terms under exp(-87) of the max count as 0, so probabilities
  // below ~1.6e-38 come out 0 (within 1e-37 of the exact ones) and the rest,
  // and every log-softmax value, stay within float tolerance.
  std::mt19937 rng(25);
  for (const char *op : {"cgc_op.softmax", "cgc_op.log_softmax"}) {
    Tensor x(CGC_DTYPE_FLOAT32, {4, 160});
    fillRandom(x, rng, -1000, 0);
    for (int64_t r = 0; r < 4; ++r)
      x.set(r * 160 + r * 7, 3.0); // one maximum per row, others near it
    x.set(17, 1.5);
    x.set(160 + 30, -80.0);
    Tensor y(CGC_DTYPE_FLOAT32, x.shape());
    auto k = make(Desc(op).in(x).out(y).i("axis", 1));
    runKernel(*k, {&x}, {&y}, pool3());
    // log-softmax's values at the maxima are -2.7e-10 and the like, which
    // float's x - shift (shift ~3) rounds to 0: absolute tolerance there.
    bool log = std::string(op) == "cgc_op.log_softmax";
    EXPECT_TRUE(closeTo(y, softOracle(x, 1, op), 1e-5, log ? 1e-6 : 1e-37, op));
  }
}

TEST(Reduction, SoftmaxSpecialValuesAndRowLengths) {
  // Rows of 1 to 40 floats (whole vectors, a partial one, both) with a NaN,
  // a +inf (inf - inf), every value -inf (0 / 0): the row is NaN; a -inf
  // among finite values is a 0 term; otherwise the oracle's values.
  const double nan = std::nan("");
  for (const char *op : {"cgc_op.softmax", "cgc_op.log_softmax"})
    for (int64_t n : {1, 5, 16, 17, 33, 40}) {
      Tensor x(CGC_DTYPE_FLOAT32, {5, n});
      std::mt19937 rng{uint32_t(n)};
      fillRandom(x, rng, -4, 4);
      x.set(0 * n + n / 2, nan);
      x.set(1 * n + n - 1, kInf);
      for (int64_t j = 0; j < n; ++j)
        x.set(2 * n + j, -kInf);
      x.set(3 * n, -kInf);
      Tensor y(CGC_DTYPE_FLOAT32, x.shape());
      auto k = make(Desc(op).in(x).out(y).i("axis", 1));
      runKernel(*k, {&x}, {&y}, pool1());
      const bool log = std::string(op) == "cgc_op.log_softmax";
      for (int64_t row : {0, 1, 2})
        for (int64_t j = 0; j < n; ++j)
          EXPECT_TRUE(std::isnan(y.get(row * n + j)))
              << op << " n " << n << " row " << row << " element " << j << ": " << y.get(row * n + j);
      // Rows 3 and 4 against the oracle (row 3 starts with -inf: a 0 term,
      // or -inf for log-softmax; alone in a row of 1 it makes the row NaN).
      std::vector<double> expected = softOracle(x, 1, op), got = y.values();
      for (int64_t i = 3 * n; i < 5 * n; ++i) {
        if (n == 1 && i == 3)
          continue;
        const double e = expected[size_t(i)], g = got[size_t(i)];
        if (std::isinf(e))
          EXPECT_EQ(g, e) << op << " n " << n << " element " << i;
        else
          EXPECT_NEAR(g, e, 1e-6 * (log ? 1 + std::fabs(e) : 1)) << op << " n " << n << " element " << i;
      }
    }
}

TEST(Reduction, SoftmaxFamilyEveryAxisAndDtype) {
  std::mt19937 rng(23);
  for (const char *op : {"cgc_op.softmax", "cgc_op.log_softmax", "cgc_op.hardmax"})
    for (cgc_dtype_t dt : kFloatTypes)
      for (int64_t axis : {0, 1, 2})
        for (Layout layout : {Layout::Contiguous, Layout::Padded}) {
          Tensor x(dt, {3, 5, 130}, layout);
          fillRandom(x, rng, -8, 8);
          Tensor y(dt, x.shape());
          auto k = make(Desc(op).in(x).out(y).i("axis", axis));
          runKernel(*k, {&x}, {&y}, pool3());
          EXPECT_TRUE(closeTo(y, softOracle(x, axis, op), relTol(dt) * 2, absTol(dt),
                              std::string(op) + " " + dtypeStr(dt) + " axis " +
                                  std::to_string(axis)));
        }
}

TEST(Reduction, GlobalPools) {
  std::mt19937 rng(24);
  for (cgc_dtype_t dt : kFloatTypes)
    for (const char *op : {"cgc_op.global_avg_pool", "cgc_op.global_max_pool",
                           "cgc_op.global_lp_pool"})
      for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
        Tensor x(dt, {2, 3, 5, 7}, layout);
        fillRandom(x, rng, -3, 3);
        Tensor y(dt, {2, 3, 1, 1});
        Desc d(op);
        d.in(x).out(y);
        int64_t p = 3;
        if (std::string(op) == "cgc_op.global_lp_pool")
          d.i("p", p);
        auto k = make(d);
        runKernel(*k, {&x}, {&y}, pool3());
        std::vector<double> e;
        for (int64_t nc = 0; nc < 6; ++nc) {
          double s = 0, m = -kInf;
          for (int64_t i = 0; i < 35; ++i) {
            double v = x.get(nc * 35 + i);
            s += std::string(op) == "cgc_op.global_lp_pool" ? std::pow(std::fabs(v), 3) : v;
            m = std::max(m, v);
          }
          e.push_back(std::string(op) == "cgc_op.global_avg_pool"   ? s / 35
                      : std::string(op) == "cgc_op.global_max_pool" ? m
                                                                    : std::cbrt(s));
        }
        EXPECT_TRUE(closeTo(y, e, relTol(dt) * 2, absTol(dt) * 2,
                            std::string(op) + " " + dtypeStr(dt) + " " + layoutName(layout)));
      }
}

} // namespace
