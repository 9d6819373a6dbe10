//===- ElementwiseTest.cpp - Elementwise ops against double oracles -------===//

#include "KernelTestUtil.h"

#include <limits>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

struct UnaryCase {
  std::string op;
  std::vector<cgc_dtype_t> dtypes;
  double lo, hi;
  std::function<double(double)> oracle;
  std::vector<std::pair<std::string, AttrValue>> attrs = {};
  bool boolResult = false;
};

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double softplus(double x) { return std::log1p(std::exp(x)); }

std::vector<UnaryCase> unaryCases() {
  auto F = kFloatTypes;
  return {
      {"cgc_op.relu", kSignedTypes, -50, 50, [](double x) { return x > 0 ? x : 0.0; }},
      {"cgc_op.sigmoid", F, -12, 12, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"cgc_op.swish", F, -12, 12, [](double x) { return x / (1 + std::exp(-x)); }},
      {"cgc_op.tanh", F, -6, 6, [](double x) { return std::tanh(x); }},
      {"cgc_op.erf", F, -4, 4, [](double x) { return std::erf(x); }},
      {"cgc_op.exp", F, -10, 10, [](double x) { return std::exp(x); }},
      {"cgc_op.log", F, 0.001, 1000, [](double x) { return std::log(x); }},
      {"cgc_op.sqrt", F, 0, 100, [](double x) { return std::sqrt(x); }},
      {"cgc_op.reciprocal", F, 0.1, 8, [](double x) { return 1 / x; }},
      {"cgc_op.neg", kSignedTypes, -100, 100, [](double x) { return -x; }},
      {"cgc_op.abs", kNumericTypes, -100, 100, [](double x) { return std::fabs(x); }},
      {"cgc_op.sign", kNumericTypes, -3, 3,
       [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }},
      {"cgc_op.floor", F, -20, 20, [](double x) { return std::floor(x); }},
      {"cgc_op.ceil", F, -20, 20, [](double x) { return std::ceil(x); }},
      {"cgc_op.round", F, -20, 20, [](double x) { return std::nearbyint(x); }},
      {"cgc_op.sin", F, -6, 6, [](double x) { return std::sin(x); }},
      {"cgc_op.cos", F, -6, 6, [](double x) { return std::cos(x); }},
      {"cgc_op.tan", F, -1.2, 1.2, [](double x) { return std::tan(x); }},
      {"cgc_op.asin", F, -1, 1, [](double x) { return std::asin(x); }},
      {"cgc_op.acos", F, -1, 1, [](double x) { return std::acos(x); }},
      {"cgc_op.atan", F, -10, 10, [](double x) { return std::atan(x); }},
      {"cgc_op.sinh", F, -5, 5, [](double x) { return std::sinh(x); }},
      {"cgc_op.cosh", F, -5, 5, [](double x) { return std::cosh(x); }},
      {"cgc_op.asinh", F, -10, 10, [](double x) { return std::asinh(x); }},
      {"cgc_op.acosh", F, 1, 10, [](double x) { return std::acosh(x); }},
      {"cgc_op.atanh", F, -0.95, 0.95, [](double x) { return std::atanh(x); }},
      {"cgc_op.softplus", F, -20, 20, softplus},
      {"cgc_op.softsign", F, -10, 10, [](double x) { return x / (1 + std::fabs(x)); }},
      {"cgc_op.hard_swish", F, -8, 8,
       [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
      {"cgc_op.mish", F, -10, 10, [](double x) { return x * std::tanh(softplus(x)); }},
      {"cgc_op.isnan", F, -10, 10, [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, {}, true},
      {"cgc_op.not", {CGC_DTYPE_BOOL}, 0, 1, [](double x) { return x != 0 ? 0.0 : 1.0; }},
      {"cgc_op.identity", kAllTypes, -100, 100, [](double x) { return x; }},
      {"cgc_op.gelu", F, -6, 6, gelu},
      {"cgc_op.gelu", F, -6, 6, geluTanh, {{"approximate", AttrValue::ofString("tanh")}}},
      {"cgc_op.leaky_relu", F, -5, 5, [](double x) { return x >= 0 ? x : 0.01 * x; }},
      {"cgc_op.leaky_relu", F, -5, 5, [](double x) { return x >= 0 ? x : 0.25 * x; },
       {{"alpha", AttrValue::ofFloat(0.25)}}},
      {"cgc_op.elu", F, -5, 5, [](double x) { return x >= 0 ? x : 0.5 * std::expm1(x); },
       {{"alpha", AttrValue::ofFloat(0.5)}}},
      {"cgc_op.selu", F, -5, 5,
       [](double x) {
         double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
         return x > 0 ? g * x : g * a * std::expm1(x);
       }},
      {"cgc_op.celu", F, -5, 5,
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * std::expm1(x / 2.0)); },
       {{"alpha", AttrValue::ofFloat(2.0)}}},
      {"cgc_op.hard_sigmoid", F, -6, 6,
       [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); }},
      {"cgc_op.thresholded_relu", F, -3, 3, [](double x) { return x > 1.0 ? x : 0.0; }},
      {"cgc_op.shrink", F, -3, 3,
       [](double x) { return x < -1.5 ? x + 0.25 : (x > 1.5 ? x - 0.25 : 0.0); },
       {{"lambd", AttrValue::ofFloat(1.5)}, {"bias", AttrValue::ofFloat(0.25)}}},
      {"cgc_op.clip", kNumericTypes, -20, 20,
       [](double x) { return std::min(std::max(x, -2.5), 6.0); },
       {{"min", AttrValue::ofFloat(-2.5)}, {"max", AttrValue::ofFloat(6.0)}}},
      {"cgc_op.clip", kNumericTypes, -20, 20, [](double x) { return std::min(x, 3.0); },
       {{"max", AttrValue::ofFloat(3.0)}}},
      {"cgc_op.isinf", F, -10, 10, [](double x) { return std::isinf(x) ? 1.0 : 0.0; }, {}, true},
  };
}

std::string caseName(const UnaryCase &c) {
  std::string n = c.op;
  for (const auto &[k, v] : c.attrs)
    n += " " + k;
  return n;
}

/// Values the tolerance must allow for: results computed from `x` where a
/// function is steep (exp near its limits) get relative tolerance only.
void checkUnary(const UnaryCase &c, cgc_dtype_t dtype, const std::vector<int64_t> &shape,
                Layout inLayout, Layout outLayout, std::mt19937 &rng, ThreadPool &pool) {
  Tensor x(dtype, shape, inLayout);
  fillRandom(x, rng, c.lo, c.hi);
  cgc_dtype_t outType = c.boolResult ? CGC_DTYPE_BOOL : dtype;
  Tensor y(outType, shape, outLayout);
  Desc d(c.op);
  d.in(x).out(y);
  for (const auto &[k, v] : c.attrs)
    d.attr(k, v);
  std::unique_ptr<Kernel> k = make(d);
  if (!k)
    return;
  runKernel(*k, {&x}, {&y}, pool);
  std::vector<double> expected;
  for (double v : x.values()) {
    double e = c.oracle(v);
    if (!isFloat(outType))
      e = wrapTo(outType, e);
    expected.push_back(e);
  }
  double rel = relTol(outType), abs = absTol(outType);
  EXPECT_TRUE(closeTo(y, expected, rel, abs,
                      caseName(c) + " " + dtypeStr(dtype) + " in " + layoutName(inLayout) +
                          " out " + layoutName(outLayout)));
}

TEST(Elementwise, UnaryOpsEveryDtypeAndLayout) {
  std::mt19937 rng(1);
  for (const UnaryCase &c : unaryCases()) {
    for (cgc_dtype_t dtype : c.dtypes) {
      for (Layout in : {Layout::Contiguous, Layout::Padded, Layout::Transposed, Layout::Reversed})
        checkUnary(c, dtype, {2, 3, 17}, in, Layout::Contiguous, rng, pool3());
      checkUnary(c, dtype, {5, 7}, Layout::Contiguous, Layout::Transposed, rng, pool1());
      checkUnary(c, dtype, {}, Layout::Contiguous, Layout::Contiguous, rng, pool1());
      checkUnary(c, dtype, {0, 4}, Layout::Contiguous, Layout::Contiguous, rng, pool3());
    }
  }
}

TEST(Elementwise, LargeTensorsSplitAcrossThreads) {
  std::mt19937 rng(2);
  for (const UnaryCase &c : unaryCases()) {
    if (std::find(c.dtypes.begin(), c.dtypes.end(), CGC_DTYPE_FLOAT32) == c.dtypes.end())
      continue;
    checkUnary(c, CGC_DTYPE_FLOAT32, {3, 70001}, Layout::Contiguous, Layout::Contiguous, rng,
               pool3());
  }
}

TEST(Elementwise, UnaryBroadcastInputView) {
  // A stride-0 input (one row seen 4 times).
  std::mt19937 rng(3);
  Tensor x = Tensor::withStrides(CGC_DTYPE_FLOAT32, {4, 9}, {0, 1});
  fillRandom(x, rng, -3, 3);
  Tensor y(CGC_DTYPE_FLOAT32, {4, 9});
  auto k = make(Desc("cgc_op.tanh").in(x).out(y));
  runKernel(*k, {&x}, {&y}, pool3());
  std::vector<double> e;
  for (double v : x.values())
    e.push_back(std::tanh(v));
  EXPECT_TRUE(closeTo(y, e, 2e-5, 1e-6, "tanh of a broadcast view"));
}

TEST(Elementwise, SigmoidSwishAndErfAcrossTheFloatRange) {
  // Dense sweeps over [-100, 100] (the AVX-512 path's range reduction and
  // polynomials everywhere, the subnormal results below -87 included),
  // against long double: within 1e-6 relative (the kernels' documented
  // worst: swish 4e-7 above -80, erf 3.5e-7), plus |x| * 1.5e-45 absolute:
  // below -87 exp(-|x|) is subnormal, its last bit 1.4e-45, and swish
  // multiplies its rounding by x; and a subnormal result's last bit.
  std::vector<double> vals;
  for (int64_t i = -400000; i <= 400000; ++i)
    vals.push_back(double(float(i * 0.00025)));
  for (double v : {1e-40, -3e-39, 1e-20, 3.9, -3.95, 4.0, 1e30})
    vals.push_back(double(float(v)));
  Tensor x(CGC_DTYPE_FLOAT32, {int64_t(vals.size())});
  x.setValues(vals);
  for (const std::string op : {"cgc_op.sigmoid", "cgc_op.swish", "cgc_op.erf"}) {
    Tensor y(CGC_DTYPE_FLOAT32, {int64_t(vals.size())});
    auto k = make(Desc(op).in(x).out(y));
    runKernel(*k, {&x}, {&y}, pool1());
    int bad = 0;
    for (size_t i = 0; i < vals.size(); ++i) {
      const long double v = vals[i];
      const long double s = 1 / (1 + std::exp(-v));
      const long double exact = op == "cgc_op.erf" ? std::erf(v) : op == "cgc_op.swish" ? v * s : s;
      const double e = double(exact), got = y.get(int64_t(i));
      const double err = std::fabs(got - e);
      if (err > 1e-6 * std::fabs(e) + (1 + std::fabs(vals[i])) * 1.5e-45 && ++bad <= 3)
        ADD_FAILURE() << op << "(" << vals[i] << ") = " << got << ", expected " << e
                      << " (relative error " << err / std::fabs(e) << ")";
    }
    EXPECT_EQ(bad, 0) << op;
  }
}

TEST(Elementwise, SpecialFloatValues) {
  std::vector<double> vals = {0.0,  -0.0, 0.5,  1.5,   2.5,  -0.5, -1.5, -2.5, kNaN, kInf,
                              -kInf, 1e-30, -1e-30, 88.0, -88.0, 100.0, -100.0, 1e-40};
  struct S {
    const char *op;
    std::function<double(double)> f;
  } ops[] = {
      {"cgc_op.round", [](double x) { return std::nearbyint(x); }},
      {"cgc_op.relu", [](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }},
      {"cgc_op.exp", [](double x) { return double(std::exp(float(x))); }},
      {"cgc_op.tanh", [](double x) { return std::tanh(x); }},
      {"cgc_op.sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"cgc_op.swish", [](double x) { return x / (1 + std::exp(-x)); }},
      {"cgc_op.erf", [](double x) { return std::erf(x); }},
      {"cgc_op.abs", [](double x) { return std::fabs(x); }},
      {"cgc_op.isnan", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }},
      {"cgc_op.isinf", [](double x) { return std::isinf(x) ? 1.0 : 0.0; }},
      {"cgc_op.sign", [](double x) { return std::isnan(x) ? x : (x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0); }},
  };
  for (const S &s : ops) {
    bool boolOut = std::string(s.op) == "cgc_op.isnan" || std::string(s.op) == "cgc_op.isinf";
    Tensor x(CGC_DTYPE_FLOAT32, {int64_t(vals.size())});
    x.setValues(vals);
    Tensor y(boolOut ? CGC_DTYPE_BOOL : CGC_DTYPE_FLOAT32, {int64_t(vals.size())});
    auto k = make(Desc(s.op).in(x).out(y));
    runKernel(*k, {&x}, {&y}, pool1());
    std::vector<double> e;
    for (double v : x.values())
      e.push_back(boolOut ? s.f(v) : double(float(s.f(v))));
    EXPECT_TRUE(closeTo(y, e, 2e-6, 1e-37, s.op));
  }
  // log: 0 -> -inf, negative -> NaN, inf -> inf, subnormal input.
  std::vector<double> lv = {0.0, -1.0, kInf, 1e-40, 1.0, kNaN};
  Tensor x(CGC_DTYPE_FLOAT32, {6});
  x.setValues(lv);
  Tensor y(CGC_DTYPE_FLOAT32, {6});
  auto k = make(Desc("cgc_op.log").in(x).out(y));
  runKernel(*k, {&x}, {&y}, pool1());
  std::vector<double> e;
  for (double v : x.values())
    e.push_back(std::log(v));
  EXPECT_TRUE(closeTo(y, e, 2e-6, 0, "log special values"));
}

TEST(Elementwise, IntegerEdgeValuesWrap) {
  for (cgc_dtype_t dt : kSignedIntTypes) {
    int bits = int(cgc_dtype_size(dt) * 8);
    double mn = -std::ldexp(1.0, bits - 1), mx = std::ldexp(1.0, bits - 1) - 1;
    std::vector<double> vals = {mn, mx, 0, -1, 1};
    for (const char *op : {"cgc_op.neg", "cgc_op.abs"}) {
      Tensor x(dt, {5});
      x.setValues(vals);
      Tensor y(dt, {5});
      auto k = make(Desc(op).in(x).out(y));
      runKernel(*k, {&x}, {&y}, pool1());
      std::vector<double> e;
      for (double v : x.values())
        e.push_back(wrapTo(dt, std::string(op) == "cgc_op.neg" ? -v : std::fabs(v)));
      EXPECT_TRUE(closeTo(y, e, 0, 0, std::string(op) + " " + dtypeStr(dt)));
    }
  }
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

struct BinaryCase {
  std::string op;
  std::vector<cgc_dtype_t> dtypes;
  std::function<double(double, double, cgc_dtype_t)> oracle;
  bool boolResult = false;
  double lo = -20, hi = 20;
  bool nonzeroRhs = false;
};

double truncDiv(double a, double b) { return std::trunc(a / b); }

std::vector<BinaryCase> binaryCases() {
  return {
      {"cgc_op.add", kNumericTypes, [](double a, double b, cgc_dtype_t) { return a + b; }},
      {"cgc_op.sub", kNumericTypes, [](double a, double b, cgc_dtype_t) { return a - b; }},
      {"cgc_op.mul", kNumericTypes, [](double a, double b, cgc_dtype_t) { return a * b; }},
      {"cgc_op.div", kNumericTypes,
       [](double a, double b, cgc_dtype_t d) { return isFloat(d) ? a / b : truncDiv(a, b); },
       false, -20, 20, true},
      {"cgc_op.max", kNumericTypes, [](double a, double b, cgc_dtype_t) { return std::max(a, b); }},
      {"cgc_op.min", kNumericTypes, [](double a, double b, cgc_dtype_t) { return std::min(a, b); }},
      {"cgc_op.equal", kAllTypes, [](double a, double b, cgc_dtype_t) { return double(a == b); },
       true, -2, 2},
      {"cgc_op.less", kNumericTypes, [](double a, double b, cgc_dtype_t) { return double(a < b); },
       true, -2, 2},
      {"cgc_op.less_or_equal", kNumericTypes,
       [](double a, double b, cgc_dtype_t) { return double(a <= b); }, true, -2, 2},
      {"cgc_op.greater", kNumericTypes,
       [](double a, double b, cgc_dtype_t) { return double(a > b); }, true, -2, 2},
      {"cgc_op.greater_or_equal", kNumericTypes,
       [](double a, double b, cgc_dtype_t) { return double(a >= b); }, true, -2, 2},
      {"cgc_op.and", {CGC_DTYPE_BOOL}, [](double a, double b, cgc_dtype_t) { return double(a && b); }},
      {"cgc_op.or", {CGC_DTYPE_BOOL}, [](double a, double b, cgc_dtype_t) { return double(a || b); }},
      {"cgc_op.xor", {CGC_DTYPE_BOOL}, [](double a, double b, cgc_dtype_t) { return double(a != b); }},
  };
}

void checkBinary(const BinaryCase &c, cgc_dtype_t dtype, const std::vector<int64_t> &as,
                 const std::vector<int64_t> &bs, Layout al, Layout bl, Layout ol,
                 std::mt19937 &rng, ThreadPool &pool) {
  Tensor a(dtype, as, al), b(dtype, bs, bl);
  double lo = c.lo, hi = c.hi;
  if (isUnsignedInt(dtype))
    lo = 0;
  fillRandom(a, rng, lo, hi);
  fillRandom(b, rng, c.nonzeroRhs ? std::max(lo, 1.0) : lo, hi);
  if (c.nonzeroRhs && !isUnsignedInt(dtype))
    for (int64_t i = 0; i < b.size(); ++i)
      if (rng() & 1)
        b.set(i, -b.get(i));
  std::vector<int64_t> shape = broadcast(as, bs);
  cgc_dtype_t outType = c.boolResult ? CGC_DTYPE_BOOL : dtype;
  Tensor y(outType, shape, ol);
  auto k = make(Desc(c.op).in(a).in(b).out(y));
  if (!k)
    return;
  runKernel(*k, {&a, &b}, {&y}, pool);
  std::vector<double> e;
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> cc = coords(i, shape);
    double r = c.oracle(a.get(broadcastIndex(cc, as)), b.get(broadcastIndex(cc, bs)), dtype);
    e.push_back(isFloat(outType) ? r : wrapTo(outType, r));
  }
  EXPECT_TRUE(closeTo(y, e, relTol(outType), absTol(outType),
                      c.op + " " + dtypeStr(dtype) + " " + std::to_string(as.size()) + "D/" +
                          std::to_string(bs.size()) + "D " + layoutName(al) + "/" +
                          layoutName(bl) + " -> " + layoutName(ol)));
}

TEST(Elementwise, BinaryOpsBroadcastingEveryDtype) {
  std::mt19937 rng(4);
  struct Shapes {
    std::vector<int64_t> a, b;
  } shapes[] = {{{2, 3, 5}, {2, 3, 5}}, {{2, 3, 5}, {5}},     {{2, 1, 5}, {3, 1}},
                {{}, {4, 3}},           {{4, 1}, {}},         {{1, 6}, {5, 1}},
                {{0, 3}, {3}},          {{3, 4, 1, 6}, {4, 7, 6}}};
  for (const BinaryCase &c : binaryCases())
    for (cgc_dtype_t dt : c.dtypes) {
      for (const Shapes &s : shapes)
        checkBinary(c, dt, s.a, s.b, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous,
                    rng, pool3());
      checkBinary(c, dt, {3, 4, 5}, {3, 4, 5}, Layout::Transposed, Layout::Reversed,
                  Layout::Padded, rng, pool3());
      checkBinary(c, dt, {4, 6}, {6}, Layout::Padded, Layout::Reversed, Layout::Transposed, rng,
                  pool1());
    }
}

TEST(Elementwise, BinaryLargeBroadcastSplitsAcrossThreads) {
  std::mt19937 rng(5);
  for (const char *op : {"cgc_op.add", "cgc_op.mul", "cgc_op.max"}) {
    BinaryCase c = binaryCases()[0];
    for (const BinaryCase &b : binaryCases())
      if (b.op == op)
        c = b;
    checkBinary(c, CGC_DTYPE_FLOAT32, {2, 64, 56, 56}, {64, 1, 1}, Layout::Contiguous,
                Layout::Contiguous, Layout::Contiguous, rng, pool3());
    checkBinary(c, CGC_DTYPE_FLOAT32, {1, 128, 768}, {768}, Layout::Contiguous,
                Layout::Contiguous, Layout::Contiguous, rng, pool3());
  }
}

TEST(Elementwise, MaxMinPropagateNaN) {
  Tensor a(CGC_DTYPE_FLOAT32, {4}), b(CGC_DTYPE_FLOAT32, {4});
  a.setValues({kNaN, 1.0, kNaN, -kInf});
  b.setValues({1.0, kNaN, kNaN, 3.0});
  for (const char *op : {"cgc_op.max", "cgc_op.min"}) {
    Tensor y(CGC_DTYPE_FLOAT32, {4});
    auto k = make(Desc(op).in(a).in(b).out(y));
    runKernel(*k, {&a, &b}, {&y}, pool1());
    double last = std::string(op) == "cgc_op.max" ? 3.0 : -kInf;
    EXPECT_TRUE(closeTo(y, {kNaN, kNaN, kNaN, last}, 0, 0, op));
  }
}

TEST(Elementwise, IntegerDivisionByZeroAndOverflowDoNotTrap) {
  for (cgc_dtype_t dt : kSignedIntTypes) {
    int bits = int(cgc_dtype_size(dt) * 8);
    double mn = -std::ldexp(1.0, bits - 1);
    Tensor a(dt, {3}), b(dt, {3}), y(dt, {3});
    a.setValues({7, mn, -7});
    b.setValues({0, -1, 2});
    auto k = make(Desc("cgc_op.div").in(a).in(b).out(y));
    runKernel(*k, {&a, &b}, {&y}, pool1());
    // 7/0 is undefined in ONNX: the kernel gives 0 instead of trapping.
    EXPECT_TRUE(closeTo(y, {0, wrapTo(dt, -mn), -3}, 0, 0, "div " + dtypeStr(dt)));
    Tensor m(dt, {3});
    auto km = make(Desc("cgc_op.mod").in(a).in(b).out(m));
    runKernel(*km, {&a, &b}, {&m}, pool1());
    EXPECT_TRUE(closeTo(m, {0, 0, 1}, 0, 0, "mod " + dtypeStr(dt)));
  }
}

TEST(Elementwise, ModBothSignConventions) {
  std::mt19937 rng(6);
  for (cgc_dtype_t dt : kNumericTypes) {
    for (bool fmod : {false, true}) {
      Tensor a(dt, {4, 9}), b(dt, {9});
      fillRandom(a, rng, isUnsignedInt(dt) ? 0 : -50, 50);
      fillRandom(b, rng, 1, 9);
      if (!isUnsignedInt(dt))
        for (int64_t i = 0; i < b.size(); i += 2)
          b.set(i, -b.get(i));
      Tensor y(dt, {4, 9});
      Desc d("cgc_op.mod");
      d.in(a).in(b).out(y).b("fmod", fmod);
      if (isFloat(dt) && !fmod) {
        EXPECT_NE(makeError(d).find("fmod"), std::string::npos);
        continue;
      }
      auto k = make(d);
      runKernel(*k, {&a, &b}, {&y}, pool1());
      std::vector<double> e;
      for (int64_t i = 0; i < y.size(); ++i) {
        double x = a.get(i), m = b.get(i % 9);
        double r = std::fmod(x, m);
        if (!fmod && r != 0 && ((r < 0) != (m < 0)))
          r += m;
        e.push_back(r);
      }
      EXPECT_TRUE(closeTo(y, e, relTol(dt) * 10, absTol(dt) * 10,
                          "mod fmod=" + std::to_string(fmod) + " " + dtypeStr(dt)));
    }
  }
}

TEST(Elementwise, PowMixedExponentTypes) {
  std::mt19937 rng(7);
  struct P {
    cgc_dtype_t base, exp;
    double blo, bhi, elo, ehi;
  } cases[] = {
      {CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT32, 0.1, 4, -3, 3},
      {CGC_DTYPE_FLOAT32, CGC_DTYPE_INT64, -4, 4, -3, 4},
      {CGC_DTYPE_FLOAT64, CGC_DTYPE_FLOAT32, 0.1, 4, -3, 3},
      {CGC_DTYPE_FLOAT16, CGC_DTYPE_FLOAT32, 0.5, 3, -2, 2},
      {CGC_DTYPE_BFLOAT16, CGC_DTYPE_INT32, -3, 3, 0, 3},
      {CGC_DTYPE_INT32, CGC_DTYPE_INT32, -5, 5, -2, 6},
      {CGC_DTYPE_INT64, CGC_DTYPE_INT64, -9, 9, 0, 12},
      {CGC_DTYPE_UINT8, CGC_DTYPE_UINT8, 0, 5, 0, 3},
      {CGC_DTYPE_INT32, CGC_DTYPE_FLOAT32, 1, 9, 0, 2.5},
  };
  for (const P &p : cases) {
    Tensor a(p.base, {3, 7}), b(p.exp, {7});
    fillRandom(a, rng, p.blo, p.bhi);
    fillRandom(b, rng, p.elo, p.ehi);
    Tensor y(p.base, {3, 7});
    auto k = make(Desc("cgc_op.pow").in(a).in(b).out(y));
    runKernel(*k, {&a, &b}, {&y}, pool1());
    std::vector<double> e;
    for (int64_t i = 0; i < y.size(); ++i) {
      double x = a.get(i), n = b.get(i % 7);
      double r = std::pow(x, n);
      if (!isFloat(p.base)) {
        // Integer results truncate (1/x^n too); 0^-n is undefined and
        // reads as 0.
        r = x == 0 && n < 0 ? 0.0 : wrapTo(p.base, std::trunc(r));
      }
      e.push_back(r);
    }
    EXPECT_TRUE(closeTo(y, e, relTol(p.base) * 4, absTol(p.base),
                        "pow " + dtypeStr(p.base) + "^" + dtypeStr(p.exp)));
  }
}

// A scalar exponent 2 (a decomposed layer norm's square) runs as x * x:
// the correctly rounded square, special values as pow has them; any other
// scalar exponent still runs pow.
TEST(Elementwise, PowByScalarTwoSquares) {
  std::mt19937 rng(17);
  for (cgc_dtype_t dt : {CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT64, CGC_DTYPE_FLOAT16}) {
    for (double exponent : {2.0, 2.5, 3.0}) {
      Tensor a(dt, {5, 67}), b(dt, {});
      fillRandom(a, rng, -40, 40);
      const double inf = std::numeric_limits<double>::infinity();
      const double specials[] = {0.0, -0.0, inf, -inf, std::nan(""), 1e-30, -3e30, 1.0};
      for (size_t i = 0; i < std::size(specials); ++i)
        a.set(int64_t(i), specials[i]);
      b.set(0, exponent);
      Tensor y(dt, {5, 67});
      auto k = make(Desc("cgc_op.pow").in(a).in(b).out(y));
      runKernel(*k, {&a, &b}, {&y}, pool1());
      int bad = 0;
      for (int64_t i = 0; i < y.size(); ++i) {
        const double x = a.get(i), got = y.get(i);
        // In the base's own type: a float32 square rounds to float32.
        Tensor one(dt, {}), sq(dt, {});
        one.set(0, x);
        sq.set(0, exponent == 2.0 ? one.get(0) * one.get(0) : std::pow(one.get(0), exponent));
        const double want = sq.get(0);
        const bool same = (std::isnan(want) && std::isnan(got)) ||
                          (want == got && std::signbit(want) == std::signbit(got));
        const bool close = exponent != 2.0 && std::fabs(got - want) <= 4 * relTol(dt) *
                                                                            std::fabs(want);
        if (!same && !close && ++bad <= 3)
          ADD_FAILURE() << dtypeStr(dt) << " " << x << "^" << exponent << " = " << got
                        << ", want " << want;
      }
      EXPECT_EQ(bad, 0);
    }
  }
}

TEST(Elementwise, BitShift) {
  std::mt19937 rng(8);
  for (cgc_dtype_t dt : kUnsignedTypes) {
    for (const char *dir : {"left", "right"}) {
      Tensor a(dt, {20}), b(dt, {20}), y(dt, {20});
      fillRandom(a, rng, 0, 200);
      int bits = int(cgc_dtype_size(dt) * 8);
      fillRandom(b, rng, 0, bits + 2);
      auto k = make(Desc("cgc_op.bit_shift").in(a).in(b).out(y).s("direction", dir));
      runKernel(*k, {&a, &b}, {&y}, pool1());
      std::vector<double> e;
      for (int64_t i = 0; i < 20; ++i) {
        double x = a.get(i), s = b.get(i);
        double r = s >= bits ? 0 : (dir[0] == 'l' ? wrapTo(dt, x * std::ldexp(1.0, int(s)))
                                                  : std::floor(x / std::ldexp(1.0, int(s))));
        e.push_back(r);
      }
      EXPECT_TRUE(closeTo(y, e, 0, 0, std::string("bit_shift ") + dir + " " + dtypeStr(dt)));
    }
    Tensor s(CGC_DTYPE_INT32, {2});
    EXPECT_NE(makeError(Desc("cgc_op.bit_shift").in(s).in(s).out(s).s("direction", "left"))
                  .find("unsigned"),
              std::string::npos);
  }
}

TEST(Elementwise, PReluBroadcastsSlope) {
  std::mt19937 rng(9);
  for (cgc_dtype_t dt : kSignedTypes) {
    Tensor x(dt, {2, 4, 3, 3}, Layout::Padded), slope(dt, {4, 1, 1});
    fillRandom(x, rng, -10, 10);
    fillRandom(slope, rng, -3, 3);
    Tensor y(dt, {2, 4, 3, 3});
    auto k = make(Desc("cgc_op.prelu").in(x).in(slope).out(y));
    runKernel(*k, {&x, &slope}, {&y}, pool3());
    std::vector<double> e;
    for (int64_t i = 0; i < y.size(); ++i) {
      double v = x.get(i), s = slope.get(coords(i, y.shape())[1]);
      e.push_back(wrapTo(dt, v < 0 ? s * v : v));
    }
    EXPECT_TRUE(closeTo(y, e, relTol(dt), absTol(dt), "prelu " + dtypeStr(dt)));
  }
}

TEST(Elementwise, WhereEveryDtypeWithBroadcast) {
  std::mt19937 rng(10);
  for (cgc_dtype_t dt : kAllTypes) {
    Tensor c(CGC_DTYPE_BOOL, {3, 1}), x(dt, {3, 5}, Layout::Transposed), y(dt, {5});
    fillRandom(c, rng, 0, 1);
    fillRandom(x, rng, 0, 50);
    fillRandom(y, rng, 0, 50);
    Tensor z(dt, {3, 5});
    auto k = make(Desc("cgc_op.where").in(c).in(x).in(y).out(z));
    runKernel(*k, {&c, &x, &y}, {&z}, pool1());
    std::vector<double> e;
    for (int64_t i = 0; i < 15; ++i)
      e.push_back(c.get(i / 5) ? x.get(i) : y.get(i % 5));
    EXPECT_TRUE(closeTo(z, e, 0, 0, "where " + dtypeStr(dt)));
  }
}

TEST(Elementwise, CastEveryPair) {
  std::mt19937 rng(11);
  for (cgc_dtype_t from : kAllTypes)
    for (cgc_dtype_t to : kAllTypes) {
      Tensor x(from, {4, 6}, Layout::Transposed);
      // Values every destination represents after truncation (non-negative
      // for unsigned destinations: negative float -> unsigned is undefined).
      double lo = isUnsignedInt(to) || isUnsignedInt(from) ? 0 : -100;
      fillRandom(x, rng, lo, 100);
      if (isFloat(from))
        for (int64_t i = 0; i < x.size(); ++i)
          x.set(i, roundTo(from, x.get(i) + 0.25 * double(i % 4)));
      Tensor y(to, {4, 6});
      auto k = make(Desc("cgc_op.cast").in(x).out(y).attr("to", AttrValue::ofDType(to)));
      runKernel(*k, {&x}, {&y}, pool1());
      std::vector<double> e;
      for (double v : x.values()) {
        double r;
        if (to == CGC_DTYPE_BOOL)
          r = v != 0;
        else if (isFloat(to))
          r = roundTo(to, v);
        else
          r = wrapTo(to, std::trunc(v));
        e.push_back(r);
      }
      EXPECT_TRUE(closeTo(y, e, 0, 0, "cast " + dtypeStr(from) + " -> " + dtypeStr(to)));
    }
}

TEST(Elementwise, FloatToIntCastSaturatesInsteadOfUndefinedBehaviour) {
  Tensor x(CGC_DTYPE_FLOAT32, {4}), y(CGC_DTYPE_INT8, {4});
  x.setValues({1e10, -1e10, kNaN, -3.7});
  auto k = make(Desc("cgc_op.cast").in(x).out(y).attr("to", AttrValue::ofDType(CGC_DTYPE_INT8)));
  runKernel(*k, {&x}, {&y}, pool1());
  EXPECT_TRUE(closeTo(y, {127, -128, 0, -3}, 0, 0, "saturating cast"));
}

TEST(Elementwise, RejectsBadDescriptors) {
  Tensor f(CGC_DTYPE_FLOAT32, {2, 3}), g(CGC_DTYPE_FLOAT32, {4}), i(CGC_DTYPE_INT32, {2, 3}),
      b(CGC_DTYPE_BOOL, {2, 3});
  // Incompatible broadcast.
  EXPECT_NE(makeError(Desc("cgc_op.add").in(f).in(g).out(f)).find("broadcast"), std::string::npos);
  // Mixed element types.
  EXPECT_NE(makeError(Desc("cgc_op.add").in(f).in(i).out(f)).find("same element type"),
            std::string::npos);
  // A float-only op on integers names the op, operand and dtype.
  std::string e = makeError(Desc("cgc_op.exp").in(i).out(i));
  EXPECT_NE(e.find("cgc_op.exp"), std::string::npos) << e;
  EXPECT_NE(e.find("int32"), std::string::npos) << e;
  // Wrong output shape / dtype.
  EXPECT_NE(makeError(Desc("cgc_op.relu").in(f).out(g)).find("shape"), std::string::npos);
  EXPECT_NE(makeError(Desc("cgc_op.less").in(f).in(f).out(f)).find("bool"), std::string::npos);
  // Bool is not numeric.
  EXPECT_FALSE(makeError(Desc("cgc_op.add").in(b).in(b).out(b)).empty());
  // Wrong arity, bad attribute kind, unknown op.
  EXPECT_FALSE(makeError(Desc("cgc_op.add").in(f).out(f)).empty());
  EXPECT_NE(makeError(Desc("cgc_op.leaky_relu").in(f).out(f).s("alpha", "x")).find("alpha"),
            std::string::npos);
  EXPECT_NE(makeError(Desc("cgc_op.no_such_op").in(f).out(f)).find("no kernel"),
            std::string::npos);
  // Unknown dtype value and bad strides never crash.
  KernelDesc bad = Desc("cgc_op.relu").in(f).out(f);
  bad.inputs[0]->dtype = cgc_dtype_t(30); // no such dtype (but a value the enum can hold)
  EXPECT_FALSE(makeError(bad).empty());
  KernelDesc badStrides = Desc("cgc_op.relu").in(f).out(f);
  badStrides.inputs[0]->strides = {1};
  EXPECT_NE(makeError(badStrides).find("strides"), std::string::npos);
  KernelDesc negDim = Desc("cgc_op.relu").in(f).out(f);
  negDim.inputs[0]->shape = {-1, 3};
  EXPECT_NE(makeError(negDim).find("negative"), std::string::npos);
}

TEST(Registry, KnowsEveryOp) {
  std::vector<std::string> ops = supportedOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  for (const std::string &op : ops)
    EXPECT_TRUE(hasKernel(op)) << op;
  EXPECT_FALSE(hasKernel("cgc_op.nonexistent"));
  EXPECT_GE(ops.size(), 105u);
}

} // namespace
