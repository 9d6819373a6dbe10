//===- sgemm.h - A register-blocked float32 GEMM for AVX-512 ----*- C++ -*-===//
//
// C = epilogue(A x B) for a B that is packed once (a constant: weights) into
// column panels of 16, 32, 48 or 64 (the tile that pads the result least).
// Each output tile of 24 / (width / 16) rows x width columns (24x16, 12x32,
// 8x48, 6x64) lives in 24 zmm registers over all of K (no partial sums in
// memory), then goes through the epilogue (bias, residual, clip, ...) and is
// stored once.
//
// Measured on this project's VM (AMD EPYC Zen 5, one core's FMA peak 227
// GFLOP/s): 128x768x768 at ~220 GFLOP/s and 128x768x3072 at ~219, where
// oneDNN 2.6's brgemm matmul ran the same products at 182-187 GFLOP/s in the
// BERT encoder (docs/cpu-kernels.md).
//
// A is read in place (row stride lda, unit column stride); C has unit
// column stride. Only AVX-512 is implemented: callers check available()
// and keep oneDNN otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_SGEMM_H
#define CGC_CPU_KERNELS_SGEMM_H

#include "common.h"
#include "thread_pool.h"

#include <string>
#include <vector>

namespace cgc::cpu {

/// One epilogue step, applied to every result element in order.
struct SgemmOp {
  enum class Kind { Scale, Relu, Clip, Linear, ErfGelu, Add, Sub, Mul, Div };
  Kind kind = Kind::Scale;
  /// Scale: x * alpha. Relu: x < 0 ? x * alpha : x. Clip: to [alpha, beta].
  /// Linear: alpha * x + beta. ErfGelu (the last op only): the erf_gelu
  /// kernel's x * (erf(x / k1) + k2) * k3 (x * k1 when alpha is not 0)
  /// with k1, k2, k3 the floats at operands[operand], [operand + 1],
  /// [operand + 2] (read at run time: they are bind points), applied to
  /// each tile once it is stored.
  float alpha = 0, beta = 0;
  /// Binary ops (x op y): y(i, j) = operands[operand][i * rowStride +
  /// j * colStride], colStride 0 (one value per row) or 1.
  int operand = -1;
  int64_t rowStride = 0, colStride = 0;

  bool binary() const { return kind >= Kind::Add; }
};

class PackedSgemm {
public:
  /// True if the CPU can run this kernel (AVX-512 F/BW/DQ/VL) and
  /// CGC_CPU_PACKED_GEMM is not 0 (which keeps oneDNN's kernels, for
  /// comparisons).
  static bool available();

  /// How the product is computed.
  enum class Algorithm {
    /// Every row of A times every panel of B.
    Classic,
    /// One level of Strassen-Winograd (strassen.cpp): each block of up to
    /// kStrassenRows rows is split in halves and K and N in halves, and C
    /// comes from 7 half-size products instead of 8 (12.5% fewer FMAs).
    /// B is packed as its four quarters; the three sums of quarters the
    /// algorithm multiplies by are formed per panel while it runs, so the
    /// packed weights take no more memory than the classic product's.
    /// Rounding differs from the classic product's: the sums of quarters
    /// of A and B carry their own rounding into the products.
    Strassen,
  };
  /// Rows per independent Strassen block (its halves are tiled like a
  /// classic product of kStrassenRows / 2 rows).
  static constexpr int64_t kStrassenRows = 256;
  /// Strassen for products where it may pay, when the setting `strassen`
  /// is on (off by default; CGC_CPU_STRASSEN=1): K and N even and at least
  /// 512 (each half-size product then runs long enough tiles that forming
  /// the sums costs a few percent), and about 64 rows or more (32-row
  /// halves).
  static Algorithm algorithmFor(int64_t m, int64_t k, int64_t n);

  /// How B may be packed (Classic only).
  enum class Layout {
    /// Panels of 16-column vectors, or K in pairs where that fills the
    /// register tiles better.
    Any,
    /// Panels of 16-column vectors, K rows each: for callers that pack B
    /// themselves (batched_gemm.cpp).
    Columns,
  };

  /// A product with K = `k` and N = `n`, followed by `ops`, for results of
  /// about `m` rows (which picks the tile shape; any row count may run).
  PackedSgemm(int64_t m, int64_t k, int64_t n, std::vector<SgemmOp> ops,
              Algorithm algorithm = Algorithm::Classic, Layout layout = Layout::Any);

  Algorithm algorithm() const { return algorithm_; }

  /// K in pairs: for N of 8, 16, 24, 40 or 56 (one panel of all N), each
  /// zmm accumulator holds 8 columns for two consecutive k, even k in the
  /// even lanes: one FMA does two k-steps of 8 columns, a 64-bit broadcast
  /// of A feeds it, and the pairs are added when the tile is done. A 24-wide
  /// product then fills every lane where 16-column vectors leave a quarter
  /// of the tile empty (MobileNetV2's 144->24 projections), and a 16-wide
  /// one loads half as many A values per FMA. B is packed as rows of K / 2
  /// pairs (a zero row after an odd K).
  bool kPairs() const { return pairs_; }

  /// Columns per packed panel (16 x vectors; N with K in pairs) and rows per
  /// register tile (at most 24 / vectors: fewer when that spreads the rows
  /// of the product evenly over its tiles).
  int64_t panelWidth() const { return pairs_ ? 8 * vectors_ : 16 * vectors_; }
  int64_t tileRows() const { return rows_; }
  /// "8x48 register tiles" (rows x columns), "8x24 register tiles with K in
  /// pairs", for kernel descriptions.
  std::string tileText() const;
  /// Panels of the packed B (Classic: of all N; Strassen: of N / 2, each
  /// panel holding the four quarters' columns).
  int64_t panels() const;
  /// Floats per packed panel: K x panelWidth(); Strassen: the four
  /// quarters (B11, B12, B21, B22) of its columns, K / 2 x panelWidth()
  /// each.
  int64_t panelFloats() const {
    if (pairs_)
      return (k_ + 1) / 2 * 16 * vectors_;
    return (algorithm_ == Algorithm::Classic ? k_ : 2 * k_) * panelWidth();
  }
  /// Bytes of the packed B: panels() panels, padded with zeros.
  size_t packedBytes() const { return size_t(panels() * panelFloats()) * sizeof(float); }
  /// Packs B (element (p, j) at b[p * bk + j * bn]) into `dst`, which
  /// holds packedBytes() and is 64-byte aligned.
  void pack(const float *b, int64_t bk, int64_t bn, float *dst) const;
  /// Packs rows [row0, row0 + rows) of B (element (row0 + p, j) at
  /// b[p * bk + j * bn]) into their place in `dst`, the whole packed B, so
  /// that a B too large to hold at once can be packed in blocks of rows.
  /// Classic only; with K in pairs, row0 is even and so is `rows` unless
  /// the block ends B.
  void packRows(const float *b, int64_t bk, int64_t bn, int64_t row0, int64_t rows,
                float *dst) const;

  struct Args {
    const float *a = nullptr; // A(i, p) at a[i * lda + p]
    int64_t lda = 0;
    const float *b = nullptr; // packed by pack()
    float *c = nullptr;       // C(i, j) at c[i * ldc + j]
    int64_t ldc = 0;
    const float *const *operands = nullptr; // the binary ops' operands
  };
  /// Computes rows [row0, row1) x panels [panel0, panel1) of C. An element
  /// of C is read (by a binary op whose operand is C itself) only before it
  /// is written, so an operand may alias C exactly. Classic only.
  void run(const Args &args, int64_t row0, int64_t row1, int64_t panel0, int64_t panel1) const;

  /// Called with row ranges [r0, r1) of C once they are complete (every
  /// panel written), for work on them while they are in cache.
  using RowsDone = const FunctionRef<void(int64_t, int64_t)> *;
  /// Rows per call of a RowsDone within a piece (64 rows of up to 1280
  /// columns: <= 320 KiB, in L2).
  static constexpr int64_t kDoneRows = 64;

  /// Rows [r0, r1) of C on the calling thread, every panel, handed to
  /// `done` (may be null) in blocks of about kDoneRows as they complete.
  /// Without `done`, every panel passes over one block of rows
  /// (rowBlock()) before the next block, where A is the large operand.
  /// Classic only.
  void runRows(const Args &args, int64_t r0, int64_t r1, RowsDone done) const;

  /// Rows per block for runRows over `rows` rows: all of them (panel by
  /// panel over all rows: B passes once, A once per panel) unless A is at
  /// least 4x the packed B and B at most kRowBlockB, then blocks whose A
  /// is about kRowBlockA (at least 4 tiles): A passes once from memory and
  /// each block's rows stay in L1/L2 while B's panels (in L2) pass over
  /// them. Per-step profiles at 1 thread, two runs each way: ResNet-50's
  /// 64->256 1x1 @56 with its residual 2969 / 3003 -> 2504 / 2397 us
  /// (A 0.8 MB, B 64 KB), 256->128 @56 1562 / 1504 -> 1401 / 1400;
  /// ConvNeXt-T's 3136x96x384 FFN products 7826 / 7724 -> 6521 / 6388 us.
  /// With `gemm-row-blocks=0`, all rows.
  int64_t rowBlock(int64_t rows) const;
  static constexpr int64_t kRowBlockA = 32 << 10;
  static constexpr int64_t kRowBlockB = 512 << 10;

  /// Computes all `rows` rows, split across `pool` when the product is large
  /// enough: into pieces of whole `rowUnit`s of rows (a convolution's plane
  /// rows, so that a thread gets the rows its neighbours' kernels give it)
  /// if they split evenly; else by panels if the rows are units of a plane
  /// or A is the smaller operand (each thread then reads all of A and its
  /// own panels of B); else by row tiles. `done` (may be null) sees every
  /// row once it is complete. Strassen ignores `rowUnit`: each block's
  /// panels are split.
  void runAll(const Args &args, int64_t rows, ThreadPool &pool, int64_t rowUnit = 0,
              RowsDone done = nullptr) const;

private:
  /// The first panel of share `share` of `shares` when runAll splits a
  /// product by panels: shares of nearly equal column counts.
  int64_t panelBoundary(int64_t share, int64_t shares) const;
  void packPanels(const float *b, int64_t bk, int64_t bn, int64_t k, int64_t n, float *dst,
                  int64_t panelStride) const;
  void runStrassen(const Args &args, int64_t rows, ThreadPool &pool, RowsDone done) const;

  void runPairs(const Args &args, int64_t row0, int64_t row1) const;

  int64_t k_, n_;
  int64_t vectors_; // zmm vectors per tile row: 1 to 4 (K in pairs: N / 8)
  int64_t rows_;    // rows per full tile: at most 24 / vectors_
  bool pairs_ = false;
  std::vector<SgemmOp> ops_;
  Algorithm algorithm_;
  bool rowBlocks_; // gemm-row-blocks when created
};

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_SGEMM_H
