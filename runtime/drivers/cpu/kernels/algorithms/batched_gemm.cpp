//===- batched_gemm.cpp - Per-batch products on the packed GEMM -----------===//

#include "batched_gemm.h"

#include "onednn.h"
#include "sgemm.h"

#include <immintrin.h>


namespace cgc::cpu {
namespace {

/// The 16 x 16 floats in `r` (row i in r[i]) transposed in place.
[[gnu::always_inline]] CGC_TARGET_AVX512 inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  // Pairs of rows interleaved, then pairs of pairs: each 128-bit lane holds
  // a 4 x 4 block transposed...
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  // ...then the 4 x 4 blocks themselves move, lanes across registers.
  for (int h = 0; h < 2; ++h)
    for (int q = 0; q < 4; ++q) {
      t[8 * h + q] = _mm512_shuffle_f32x4(r[8 * h + q], r[8 * h + 4 + q], 0x88);
      t[8 * h + 4 + q] = _mm512_shuffle_f32x4(r[8 * h + q], r[8 * h + 4 + q], 0xdd);
    }
  for (int q = 0; q < 8; ++q) {
    r[q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0x88);
    r[8 + q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0xdd);
  }
}

/// Panel `dst` (`k` rows of `width` floats; columns from `cols` on are
/// zeros) of a B whose columns are contiguous: column j is src[j * bn + p].
/// Blocks of 16 x 16 are loaded along the columns and transposed in
/// registers. Attention's K^T (BERT: 64 x 128 per head) took ~4.6 us per
/// head with a gather per 16 elements of a row; it takes ~0.3 us.
CGC_TARGET_AVX512 void transposePanel(const float *src, int64_t bn, int64_t k, int64_t cols,
                                      int64_t width, float *dst) {
  for (int64_t j0 = 0; j0 < width; j0 += 16) {
    const int64_t liveCols = std::clamp<int64_t>(cols - j0, 0, 16);
    for (int64_t p0 = 0; p0 < k; p0 += 16) {
      const int64_t liveRows = std::min<int64_t>(16, k - p0);
      const __mmask16 mask = __mmask16((1u << liveRows) - 1);
      __m512 r[16];
      for (int64_t j = 0; j < 16; ++j)
        r[j] = j < liveCols ? _mm512_maskz_loadu_ps(mask, src + (j0 + j) * bn + p0)
                            : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t p = 0; p < liveRows; ++p)
        _mm512_store_ps(dst + (p0 + p) * width + j0, r[p]);
    }
  }
}

/// Packs B (element (p, j) at b[p * bk + j * bn]) into the layout of
/// `gemm`'s packed B: panels of panelWidth() columns, k rows each, padded
/// with zeros.
void packB(const PackedSgemm &gemm, const float *b, int64_t bk, int64_t bn, int64_t k, int64_t n,
           float *dst) {
  const int64_t width = gemm.panelWidth();
  const bool transposed = bk == 1 && bn != 1;
  for (int64_t col0 = 0; col0 < n; col0 += width) {
    const int64_t cols = std::min(width, n - col0);
    float *panel = dst + col0 / width * k * width;
    if (transposed) {
      transposePanel(b + col0 * bn, bn, k, cols, width, panel);
      continue;
    }
    for (int64_t p = 0; p < k; ++p) {
      float *row = panel + p * width;
      const float *src = b + p * bk + col0 * bn;
      if (bn == 1) {
        std::memcpy(row, src, size_t(cols) * sizeof(float));
      } else {
        for (int64_t j = 0; j < cols; ++j)
          row[j] = src[j * bn];
      }
      std::fill(row + cols, row + width, 0.0f);
    }
  }
}

/// One binary epilogue op's operand: its strides over the result's batch
/// dimensions (the row and column strides are in its SgemmOp).
struct OperandView {
  std::vector<int64_t> batchStr;
};

class BatchedPackedKernel final : public KernelBase {
public:
  BatchedPackedKernel(const BatchedGeometry &g, std::vector<SgemmOp> ops,
                      std::vector<OperandView> views, bool softmax, size_t firstExtra,
                      const std::string &what, const std::string &summary)
      : g_(g), gemm_(g.m, g.k, g.n, std::move(ops), PackedSgemm::Algorithm::Classic,
              PackedSgemm::Layout::Columns), views_(std::move(views)), softmax_(softmax),
        firstExtra_(firstExtra) {
    description_ = cat(what, " ", shapeStr(g.batch), "x", g.m, "x", g.k, "x", g.n, summary,
                       " (AVX-512 ", gemm_.tileText(), ", B packed per batch",
                       softmax ? ", softmax on each block of rows in cache" : "", ")");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *a = static_cast<const float *>(args.inputs[0]);
    const float *b = static_cast<const float *>(args.inputs[1]);
    float *c = static_cast<float *>(args.outputs[0]);
    const int64_t slices = numElements(g_.batch);
    const size_t packedBytes = gemm_.packedBytes();
    // Batch `s`: pack its B into `packed`, then its rows, on `rowsPool`
    // (null: this thread alone).
    auto slice = [&](int64_t s, float *packed, const float **operands, ThreadPool *rowsPool) {
      int64_t ao = 0, bo = 0, co = 0;
      std::vector<int64_t> index(g_.batch.size());
      for (size_t d = g_.batch.size(), rem = size_t(s); d-- > 0;) {
        index[d] = int64_t(rem % size_t(g_.batch[d]));
        rem /= size_t(g_.batch[d]);
        ao += index[d] * g_.aBatchStr[d];
        bo += index[d] * g_.bBatchStr[d];
        co += index[d] * g_.cBatchStr[d];
      }
      for (size_t i = 0; i < views_.size(); ++i) {
        int64_t off = 0;
        for (size_t d = 0; d < index.size(); ++d)
          off += index[d] * views_[i].batchStr[d];
        operands[i] = static_cast<const float *>(args.inputs[firstExtra_ + i]) + off;
      }
      packB(gemm_, b + bo, g_.bk, g_.bn, g_.k, g_.n, packed);
      PackedSgemm::Args ga;
      ga.a = a + ao;
      ga.lda = g_.am;
      ga.b = packed;
      ga.c = c + co;
      ga.ldc = g_.cm;
      ga.operands = operands;
      auto softmaxRows = [&](int64_t r0, int64_t r1) {
        // Even rows, then odd rows: a row's first loads then never share a
        // cache line with the stores that just ended the row before (rows
        // that are not whole lines share them). In order, Swin-T's rows of
        // 49 stalled on those stores: 64 x 3 heads 0.73 -> 0.48 ms.
        for (int64_t parity = 0; parity < 2; ++parity)
          for (int64_t r = r0 + parity; r < r1; r += 2)
            softmaxRowFloat(ga.c + r * g_.cm, ga.c + r * g_.cm, g_.n);
      };
      FunctionRef<void(int64_t, int64_t)> done(softmaxRows);
      // Blocks of rows whole (every panel), each softmaxed while in cache.
      if (rowsPool)
        gemm_.runAll(ga, g_.m, *rowsPool, 0, softmax_ ? &done : nullptr);
      else
        gemm_.runRows(ga, 0, g_.m, softmax_ ? &done : nullptr);
    };
    const int64_t threads = pool.size();
    if (slices >= threads) {
      // Whole batches per thread (attention's heads), each packing its B
      // into its own scratch.
      pool.run(size_t(threads), [&](size_t t) {
        int64_t begin, end;
        evenSplit(slices, threads, int64_t(t), begin, end);
        Scratch packed(packedBytes);
        std::vector<const float *> operands(views_.size());
        for (int64_t s = begin; s < end; ++s)
          slice(s, packed.as<float>(), operands.data(), nullptr);
      });
      return;
    }
    // Fewer batches than threads: each batch's rows split across the pool.
    Scratch packed(packedBytes);
    std::vector<const float *> operands(views_.size());
    for (int64_t s = 0; s < slices; ++s)
      slice(s, packed.as<float>(), operands.data(), &pool);
  }

private:
  BatchedGeometry g_;
  PackedSgemm gemm_;
  std::vector<OperandView> views_;
  bool softmax_;
  size_t firstExtra_;
};

} // namespace

std::unique_ptr<Kernel> makeBatchedPackedProduct(const BatchedGeometry &g,
                                                 const std::vector<KernelDesc> &chain,
                                                 size_t firstExtra, const std::string &what,
                                                 std::string &reason) {
  if (!activeConfig().batchedGemm || !PackedSgemm::available()) {
    reason = "no AVX-512 for the packed GEMM (or batched-gemm=0)";
    return nullptr;
  }
  if (g.ak != 1 || g.cn != 1 || g.m <= 0 || g.n <= 0 || g.k <= 0) {
    reason = "the packed GEMM needs A and C with unit column strides and a non-empty product";
    return nullptr;
  }
  if (g.m < kBatchedPackedMinRows) {
    reason = cat("fewer than ", kBatchedPackedMinRows,
                 " rows: packing B per batch would cost a large share of the product");
    return nullptr;
  }
  std::vector<int64_t> outShape = g.batch;
  outShape.push_back(g.m);
  outShape.push_back(g.n);
  const int64_t rank = int64_t(outShape.size());
  // A softmax over the last axis may end the chain.
  std::vector<KernelDesc> elementwise = chain;
  bool softmax = false;
  if (!elementwise.empty() && elementwise.back().kind() == OpKind::Softmax) {
    const KernelDesc &s = elementwise.back();
    int64_t axis = DescReader(s).getInt("axis");
    if (axis < 0)
      axis += rank;
    if (axis != rank - 1 || s.inputs.size() != 1 || !s.inputs[0] ||
        s.inputs[0]->dtype != CGC_DTYPE_FLOAT32 || s.inputs[0]->shape != outShape ||
        s.outputs.size() != 1 || s.outputs[0].dtype != CGC_DTYPE_FLOAT32 ||
        s.outputs[0].shape != outShape) {
      reason = "only a float32 softmax over the last axis of the product fuses";
      return nullptr;
    }
    softmax = true;
    elementwise.pop_back();
  }
  std::vector<SgemmOp> ops;
  std::vector<OperandView> views;
  if (!elementwise.empty()) {
    onednn::PostOps post;
    if (!onednn::buildPostOps(elementwise, outShape, CGC_DTYPE_FLOAT32, post, reason))
      return nullptr;
    if (!onednn::sgemmOps(post.ops, ops)) {
      reason = cat("the packed GEMM's epilogue has no form of", post.summary);
      return nullptr;
    }
  }
  // The binary ops' operands, in chain order (one extra operand each).
  std::vector<SgemmOp *> binaries;
  for (SgemmOp &op : ops)
    if (op.binary())
      binaries.push_back(&op);
  for (const KernelDesc &op : elementwise) {
    if (op.inputs.size() < 2)
      continue;
    const KernelOperand &y = *op.inputs[1];
    const std::vector<int64_t> s = broadcastStrides(y, outShape);
    if (views.size() == binaries.size()) {
      reason = "internal error: the chain has more operands than binary ops";
      return nullptr;
    }
    if (y.dtype != CGC_DTYPE_FLOAT32 || std::any_of(s.begin(), s.end(), [](int64_t v) { return v < 0; }) || s[size_t(rank - 1)] > 1) {
      reason = cat(op.op, ": its operand must be float32 with a unit or broadcast column stride");
      return nullptr;
    }
    SgemmOp &sop = *binaries[views.size()];
    sop.rowStride = s[size_t(rank - 2)];
    sop.colStride = s[size_t(rank - 1)];
    views.push_back({std::vector<int64_t>(s.begin(), s.end() - 2)});
  }
  if (views.size() != binaries.size()) {
    reason = "internal error: the chain has fewer operands than binary ops";
    return nullptr;
  }
  std::string summary = chainSummary(chain);
  return std::make_unique<BatchedPackedKernel>(g, std::move(ops), std::move(views), softmax,
                                               firstExtra, what, summary);
}

} // namespace cgc::cpu
