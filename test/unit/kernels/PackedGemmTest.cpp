//===- PackedGemmTest.cpp - The AVX-512 packed float32 GEMM ---------------===//
//
// PackedSgemm against a double oracle: every tail of the 8 x 48 register
// tile, strided and transposed B, every epilogue op with each operand
// pattern, an operand that is C itself (a residual accumulated in place),
// and the split across threads by panels and by rows.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "common.h"
#include "config.h"
#include "sgemm.h"

#include <cmath>
#include <cstdlib>
#include <random>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

using Kind = SgemmOp::Kind;

std::vector<float> randomFloats(size_t n, std::mt19937 &rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// `op` on x; y is a binary op's operand value, k an ErfGelu's k1..k3.
double applyOp(const SgemmOp &op, double x, double y, const double (&k)[3]) {
  switch (op.kind) {
  case Kind::Scale:
    return x * op.alpha;
  case Kind::Relu:
    return x < 0 ? x * op.alpha : x;
  case Kind::Clip:
    return std::min<double>(op.beta, std::max<double>(op.alpha, x));
  case Kind::Linear:
    return op.alpha * x + op.beta;
  case Kind::ErfGelu:
    return x * (std::erf(op.alpha != 0 ? x * k[0] : x / k[0]) + k[1]) * k[2];
  case Kind::Add:
    return x + y;
  case Kind::Sub:
    return x - y;
  case Kind::Mul:
    return x * y;
  case Kind::Div:
    return x / y;
  }
  return x;
}

struct Product {
  int64_t m, k, n;
  bool transposedB;
  PackedSgemm::Algorithm algorithm = PackedSgemm::Algorithm::Classic;
};

/// Runs C = ops(A x B) on `pool` with `ops` whose operands are `operands`
/// (an operand may be the C buffer, given as nullptr and filled with
/// `cInit`), and compares with the oracle.
void check(const Product &p, const std::vector<SgemmOp> &ops,
           std::vector<std::vector<float>> operands, const std::vector<float> &cInit,
           ThreadPool &pool, std::mt19937 &rng, const std::string &what) {
  std::vector<float> a = randomFloats(size_t(p.m * p.k), rng, -1, 1);
  std::vector<float> b = randomFloats(size_t(p.k * p.n), rng, -1, 1);
  const int64_t bk = p.transposedB ? 1 : p.n, bn = p.transposedB ? p.k : 1;
  std::vector<float> c = cInit;
  c.resize(size_t(p.m * p.n), 0.0f);
  PackedSgemm gemm(p.m, p.k, p.n, ops, p.algorithm);
  AlignedBuffer packed(gemm.packedBytes());
  gemm.pack(b.data(), bk, bn, static_cast<float *>(packed.data()));
  std::vector<const float *> ptrs;
  for (auto &o : operands)
    ptrs.push_back(o.empty() ? c.data() : o.data());
  std::vector<double> expected(c.size());
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double x = 0;
      for (int64_t q = 0; q < p.k; ++q)
        x += double(a[size_t(i * p.k + q)]) * double(b[size_t(q * bk + j * bn)]);
      for (const SgemmOp &op : ops) {
        double y = 0, k[3] = {0, 0, 0};
        if (op.binary())
          y = ptrs[size_t(op.operand)][i * op.rowStride + j * op.colStride];
        if (op.kind == Kind::ErfGelu)
          for (int q = 0; q < 3; ++q)
            k[q] = *ptrs[size_t(op.operand + q)];
        x = applyOp(op, x, y, k);
      }
      expected[size_t(i * p.n + j)] = x;
    }
  PackedSgemm::Args args;
  args.a = a.data();
  args.lda = p.k;
  args.b = static_cast<const float *>(packed.data());
  args.c = c.data();
  args.ldc = p.n;
  args.operands = ptrs.data();
  gemm.runAll(args, p.m, pool);
  int bad = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    double tol = 1e-5 * std::sqrt(double(p.k)) * (1 + std::fabs(expected[i]));
    if (!(std::fabs(c[i] - expected[i]) <= tol) && ++bad <= 3)
      ADD_FAILURE() << what << " " << p.m << "x" << p.k << "x" << p.n << " element " << i
                    << ": " << c[i] << " vs " << expected[i] << " on " << pool.size()
                    << " threads" << (gemm.algorithm() == PackedSgemm::Algorithm::Strassen
                                          ? " (Strassen)"
                                          : "");
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(PackedGemm, EveryTileTailAndLayoutOfB) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(90);
  // N picks the panel width (16: 24x16 tiles, 32: 12x32, 48: 8x48, 64: 6x64)
  // and tails in it; M covers full tiles and tails of each.
  // N of 8, 16, 24, 40 and 56 run with K in pairs (kPairs): odd K ends on
  // a lone k.
  for (int64_t m : {1, 5, 8, 9, 13, 25, 37})
    for (int64_t n : {1, 8, 15, 16, 17, 24, 32, 40, 47, 48, 49, 56, 64, 100, 130})
      for (int64_t k : {1, 2, 3, 70})
        for (bool t : {false, true})
          check({m, k, n, t}, {}, {}, {}, pool1(), rng, "plain");
}

TEST(PackedGemm, EpilogueOpsWithEveryOperandPattern) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(91);
  const Product p{21, 33, 70, false};
  // Per column (a bias), per row, full, scalar.
  struct Pattern {
    const char *name;
    int64_t rowStride, colStride, size;
  } patterns[] = {{"column", 0, 1, p.n}, {"row", 1, 0, p.m}, {"full", p.n, 1, p.m * p.n},
                  {"scalar", 0, 0, 1}};
  for (Kind kind : {Kind::Add, Kind::Sub, Kind::Mul, Kind::Div})
    for (const Pattern &pat : patterns) {
      SgemmOp op;
      op.kind = kind;
      op.operand = 0;
      op.rowStride = pat.rowStride;
      op.colStride = pat.colStride;
      // Divisors kept away from zero.
      std::vector<float> y = randomFloats(size_t(pat.size), rng, 0.5f, 2.0f);
      check(p, {op}, {y}, {}, pool1(), rng, std::string("binary ") + pat.name);
    }
  SgemmOp relu{Kind::Relu, 0.1f}, clip{Kind::Clip, -0.5f, 0.75f}, lin{Kind::Linear, 2.0f, -1.0f},
      scale{Kind::Scale, 0.25f}, bias{Kind::Add};
  bias.operand = 0;
  bias.colStride = 1;
  std::vector<float> b = randomFloats(size_t(p.n), rng, -1, 1);
  check(p, {scale, bias, relu}, {b}, {}, pool1(), rng, "scale+bias+leaky relu");
  check(p, {bias, clip}, {b}, {}, pool1(), rng, "bias+clip");
  check(p, {lin, relu, clip}, {b}, {}, pool1(), rng, "linear+relu+clip");
  // A transformer FFN's bias and erf GELU (k1..k3 operands 1-3), in the
  // classic tiles, with K in pairs (N = 24) and in Strassen's epilogue.
  const std::vector<std::vector<float>> geluOperands = {b, {1.41421356f}, {1.0f}, {0.5f}};
  for (bool multiply : {false, true}) {
    SgemmOp gelu{Kind::ErfGelu, multiply ? 0.70710678f : 0.0f};
    gelu.operand = 1;
    std::vector<std::vector<float>> operands = geluOperands;
    if (multiply)
      operands[1] = {0.70710678f};
    check(p, {bias, gelu}, operands, {}, pool1(), rng, "bias+erf_gelu");
    std::vector<std::vector<float>> narrow = operands;
    narrow[0].resize(24);
    check({37, 50, 24, false}, {bias, gelu}, narrow, {}, pool1(), rng, "bias+erf_gelu, K in pairs");
    std::vector<std::vector<float>> wide = operands;
    wide[0] = randomFloats(512, rng, -1, 1);
    check({66, 512, 512, false, PackedSgemm::Algorithm::Strassen}, {bias, gelu}, wide, {},
          pool1(), rng, "bias+erf_gelu, Strassen");
  }
}

TEST(PackedGemm, TilesSpreadTheRowsEvenly) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  const char *off = std::getenv("CGC_CPU_GEMM_BALANCED_ROWS");
  if (off && std::string(off) == "0")
    GTEST_SKIP() << "CGC_CPU_GEMM_BALANCED_ROWS=0";
  struct Shape {
    int64_t m, k, n, rows, width;
  } shapes[] = {
      {49, 320, 1280, 7, 48},  // 7x7 plane: seven tiles of 7, not 6 x 9 = 54 rows
      {49, 960, 160, 10, 32},  // 5 x 10 = 50 rows, not 5 x 12 = 60
      {128, 768, 768, 8, 48},  // BERT: 16 x 8
      {196, 96, 576, 6, 64},   // 33 x 6 = 198
      {13, 64, 64, 7, 32},     // two 7x32 tiles (6x64: three of 5; 13x16 loads more)
      {48, 64, 16, 24, 16},    // N = 16 without K in pairs: two tiles of 24
  };
  for (const Shape &s : shapes) {
    PackedSgemm gemm(s.m, s.k, s.n, {}, PackedSgemm::Algorithm::Classic,
                     PackedSgemm::Layout::Columns);
    EXPECT_EQ(gemm.tileRows(), s.rows) << s.m << "x" << s.k << "x" << s.n;
    EXPECT_EQ(gemm.panelWidth(), s.width) << s.m << "x" << s.k << "x" << s.n;
  }
}

TEST(PackedGemm, KInPairsWhereItFillsTheTiles) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  const char *off = std::getenv("CGC_CPU_GEMM_K_PAIRS");
  const bool on = !(off && std::string(off) == "0");
  for (int64_t n : {8, 16, 24, 40, 56}) {
    PackedSgemm gemm(3136, 144, n, {});
    EXPECT_EQ(gemm.kPairs(), on) << n;
    EXPECT_EQ(gemm.panels(), on ? 1 : (n + gemm.panelWidth() - 1) / gemm.panelWidth()) << n;
  }
  for (int64_t n : {1, 15, 32, 48, 64, 72, 100})
    EXPECT_FALSE(PackedSgemm(3136, 144, n, {}).kPairs()) << n;
  // Callers that pack B themselves, and Strassen, keep 16-column panels.
  EXPECT_FALSE(PackedSgemm(3136, 144, 24, {}, PackedSgemm::Algorithm::Classic,
                           PackedSgemm::Layout::Columns)
                   .kPairs());
  // MobileNetV2's projections with their bias and residual, split across
  // threads by rows; a residual that is the result itself.
  std::mt19937 rng(96);
  SgemmOp bias{Kind::Add}, residual{Kind::Add}, clip{Kind::Clip, 0.0f, 6.0f};
  bias.operand = 0;
  bias.colStride = 1;
  residual.operand = 1;
  residual.colStride = 1;
  for (int64_t n : {16, 24, 40}) {
    const Product p{301, 95, n, false};
    residual.rowStride = n;
    std::vector<float> b = randomFloats(size_t(n), rng, -1, 1);
    std::vector<float> r = randomFloats(size_t(p.m * n), rng, -1, 1);
    check(p, {bias, residual, clip}, {b, r}, {}, pool3(), rng, "bias+residual+clip");
    check(p, {bias, residual}, {b, {}}, r, pool1(), rng, "residual in place");
  }
}

// One level of Strassen-Winograd: odd and even row counts (the bottom half
// one row short), several blocks of kStrassenRows, half-widths that end in
// a partial panel, every panel width, B transposed.
TEST(PackedGemm, StrassenEveryShapeTail) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(94);
  const auto strassen = PackedSgemm::Algorithm::Strassen;
  for (int64_t m : {1, 2, 7, 16, 33, 128, 257, 600})
    for (int64_t n : {2, 34, 96, 130, 200})
      for (int64_t k : {2, 64, 198})
        check({m, k, n, m % 2 == 1, strassen}, {}, {}, {}, m > 200 ? pool3() : pool1(), rng,
              "Strassen");
}

TEST(PackedGemm, StrassenEpilogueAndResidualInPlace) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(95);
  const auto strassen = PackedSgemm::Algorithm::Strassen;
  for (ThreadPool *pool : {&pool1(), &pool3()})
    for (Product p : {Product{129, 96, 260, false, strassen}, Product{64, 512, 1024, true, strassen}}) {
      SgemmOp bias{Kind::Add}, sum{Kind::Add}, clip{Kind::Clip, -2.0f, 6.0f},
          perRow{Kind::Mul};
      bias.operand = 0;
      bias.colStride = 1;
      sum.operand = 1;
      sum.rowStride = p.n;
      sum.colStride = 1;
      perRow.operand = 2;
      perRow.rowStride = 1;
      std::vector<float> b = randomFloats(size_t(p.n), rng, -1, 1);
      std::vector<float> residual = randomFloats(size_t(p.m * p.n), rng, -3, 3);
      std::vector<float> scale = randomFloats(size_t(p.m), rng, 0.5f, 2.0f);
      check(p, {bias, sum, perRow, clip}, {b, {}, scale}, residual, *pool, rng,
            "Strassen bias+residual in place+row scale+clip");
    }
}

// Which products take Strassen: K and N even and >= 512, about 64 rows.
TEST(PackedGemm, StrassenOnlyWhereItPays) {
  using Algorithm = PackedSgemm::Algorithm;
  KernelConfig config = KernelConfig::process();
  config.strassen = false; // the default
  {
    ConfigScope scope(config);
    EXPECT_EQ(PackedSgemm::algorithmFor(128, 768, 768), Algorithm::Classic);
  }
  config.strassen = true;
  ConfigScope scope(config);
  EXPECT_EQ(PackedSgemm::algorithmFor(128, 768, 768), Algorithm::Strassen);
  EXPECT_EQ(PackedSgemm::algorithmFor(128, 3072, 768), Algorithm::Strassen);
  EXPECT_EQ(PackedSgemm::algorithmFor(3136, 512, 1024), Algorithm::Strassen);
  EXPECT_EQ(PackedSgemm::algorithmFor(63, 768, 768), Algorithm::Classic);
  EXPECT_EQ(PackedSgemm::algorithmFor(128, 767, 768), Algorithm::Classic);
  EXPECT_EQ(PackedSgemm::algorithmFor(128, 768, 770 - 3), Algorithm::Classic);
  EXPECT_EQ(PackedSgemm::algorithmFor(128, 256, 768), Algorithm::Classic);
  EXPECT_EQ(PackedSgemm::algorithmFor(128, 768, 256), Algorithm::Classic);
}

// A residual already in C, added in place (C is the operand): every element
// is read before its tile writes it.
TEST(PackedGemm, ResidualOperandMayBeTheResultItself) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(92);
  for (ThreadPool *pool : {&pool1(), &pool3()})
    for (Product p : {Product{200, 40, 24, false}, Product{16, 64, 400, true}}) {
      SgemmOp sum{Kind::Add}, clip{Kind::Clip, 0.0f, 6.0f};
      sum.operand = 0;
      sum.rowStride = p.n;
      sum.colStride = 1;
      std::vector<float> residual = randomFloats(size_t(p.m * p.n), rng, -3, 3);
      check(p, {sum, clip}, {{}}, residual, *pool, rng, "in-place residual");
    }
}

// Many rows and a small B (a 1x1 convolution at 56x56): every panel passes
// over a block of rows before the next block; the tiles and their sums are
// the same, so the result matches the oracle (a residual in place
// included) and is bit for bit the result without row blocks.
TEST(PackedGemm, RowBlocksWhereAIsTheLargeOperand) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  KernelConfig config = KernelConfig::process();
  config.gemmRowBlocks = true;
  std::vector<float> blocked;
  {
    ConfigScope scope(config);
    PackedSgemm resnet(3136, 64, 256, {}), bert(128, 768, 768, {}), pairs(3136, 24, 24, {});
    const int64_t block = resnet.rowBlock(3136);
    EXPECT_LT(block, 3136);
    EXPECT_EQ(block % resnet.tileRows(), 0);
    EXPECT_GE(block, 4 * resnet.tileRows());
    EXPECT_EQ(bert.rowBlock(128), 128); // B (2.4 MB) is the large operand
    EXPECT_EQ(pairs.rowBlock(3136), 3136); // K in pairs: one panel
    std::mt19937 rng(94);
    SgemmOp sum{Kind::Add}, relu{Kind::Relu};
    sum.operand = 0;
    sum.rowStride = 64;
    sum.colStride = 1;
    for (ThreadPool *pool : {&pool1(), &pool3()}) {
      std::vector<float> residual = randomFloats(size_t(1500 * 64), rng, -3, 3);
      check({1500, 16, 64, false}, {sum, relu}, {{}}, residual, *pool, rng, "row blocks");
      check({700, 40, 100, true}, {}, {}, {}, *pool, rng, "row blocks, tails");
    }
  }
  // Bit for bit against gemm-row-blocks=0.
  std::mt19937 rng(95);
  const int64_t m = 2000, k = 32, n = 96;
  std::vector<float> a = randomFloats(size_t(m * k), rng, -1, 1),
                     b = randomFloats(size_t(k * n), rng, -1, 1);
  for (bool on : {true, false}) {
    config.gemmRowBlocks = on;
    ConfigScope scope(config);
    PackedSgemm gemm(m, k, n, {});
    EXPECT_EQ(gemm.rowBlock(m) < m, on);
    AlignedBuffer packed(gemm.packedBytes());
    gemm.pack(b.data(), n, 1, static_cast<float *>(packed.data()));
    std::vector<float> c(size_t(m * n));
    PackedSgemm::Args args;
    args.a = a.data();
    args.lda = k;
    args.b = static_cast<const float *>(packed.data());
    args.c = c.data();
    args.ldc = n;
    gemm.runAll(args, m, pool1());
    if (on)
      blocked = c;
    else
      EXPECT_EQ(c, blocked);
  }
}

// Split by panels (few rows, wide B) and by rows (many rows, narrow B).
TEST(PackedGemm, SplitAcrossThreadsByPanelsAndByRows) {
  if (!PackedSgemm::available())
    GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(93);
  SgemmOp bias{Kind::Add};
  bias.operand = 0;
  bias.colStride = 1;
  // By panels the shares are nearly equal column counts, not panel counts
  // (a narrower last panel: RegNetX's 49x400x400, 1000 columns; one
  // column past whole panels), on 3 threads and 2.
  ThreadPool pool2(2);
  for (Product p : {Product{64, 128, 520, false}, Product{1000, 96, 40, false},
                    Product{123, 200, 150, true}, Product{49, 400, 400, false},
                    Product{40, 96, 1000, false}, Product{30, 400, 193, false}}) {
    std::vector<float> b = randomFloats(size_t(p.n), rng, -1, 1);
    check(p, {bias}, {b}, {}, pool3(), rng, "split");
    check(p, {bias}, {b}, {}, pool2, rng, "split in 2");
  }
}

} // namespace
