//===- matmul.cpp - matmul and gemm ---------------------------------------===//
//
// float32 products with a constant B (weights) run on the packed GEMM of
// sgemm.h where the CPU has AVX-512 and the epilogue has its ops; the rest of
// float32 and bfloat16 run on oneDNN's matmul primitive (brgemm on AVX-512),
// with operand strides passed through, so transposes and batch broadcasting
// cost no copies; gemm's alpha, beta and C become post-ops, and fused
// epilogues append theirs. A constant B (KernelOptions) is reordered once
// per address into the layout oneDNN prefers. Other dtypes (float64,
// float16, integers with wrap-around) use genericGemm per batch.
//
//===----------------------------------------------------------------------===//

#include "batched_gemm.h"
#include "elementwise.h"
#include "gemm.h"
#include "gemv.h"
#include "onednn.h"
#include "prepared.h"
#include "sgemm.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>


namespace cgc::cpu {
namespace {

using dt = dnnl::memory::data_type;

/// The geometry of a (batched, broadcast, transposed) matrix product: the
/// batched packed GEMM's (batch = the broadcast batch shape, element
/// strides), and the operands' own batch dimensions and ranks.
struct MatGeom : BatchedGeometry {
  std::vector<int64_t> aBatch, bBatch; // operand batch dims (1 = broadcast)
  bool aVector = false, bVector = false;
};

MatGeom matmulGeometry(const DescReader &r, const KernelOperand &a, const KernelOperand &b,
                       const KernelOperand &out, bool ta, bool tb) {
  MatGeom g;
  if (a.shape.empty() || b.shape.empty())
    r.error("matmul operands must have rank >= 1");
  std::vector<int64_t> as = a.shape, bs = b.shape;
  std::vector<int64_t> ast = a.effectiveStrides(), bst = b.effectiveStrides();
  g.aVector = as.size() == 1;
  g.bVector = bs.size() == 1;
  if (g.aVector) {
    as.insert(as.begin(), 1);
    ast.insert(ast.begin(), 0);
  } else if (ta) {
    std::swap(as[as.size() - 1], as[as.size() - 2]);
    std::swap(ast[ast.size() - 1], ast[ast.size() - 2]);
  }
  if (g.bVector) {
    bs.push_back(1);
    bst.push_back(0);
  } else if (tb) {
    std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
    std::swap(bst[bst.size() - 1], bst[bst.size() - 2]);
  }
  g.m = as[as.size() - 2];
  g.k = as.back();
  g.n = bs.back();
  if (bs[bs.size() - 2] != g.k)
    r.error(cat("contraction dimensions differ: ", g.k, " (a) vs ", bs[bs.size() - 2], " (b)"));
  g.am = ast[ast.size() - 2];
  g.ak = ast.back();
  g.bk = bst[bst.size() - 2];
  g.bn = bst.back();
  std::vector<int64_t> aB(as.begin(), as.end() - 2), bB(bs.begin(), bs.end() - 2);
  if (!broadcastShapes(aB, bB, g.batch))
    r.error(cat("batch dimensions ", shapeStr(aB), " and ", shapeStr(bB),
                " are not broadcast-compatible"));
  size_t rank = g.batch.size();
  g.aBatch.assign(rank, 1);
  g.bBatch.assign(rank, 1);
  g.aBatchStr.assign(rank, 0);
  g.bBatchStr.assign(rank, 0);
  for (size_t i = 0; i < aB.size(); ++i) {
    g.aBatch[rank - aB.size() + i] = aB[i];
    g.aBatchStr[rank - aB.size() + i] = aB[i] == 1 ? 0 : ast[i];
  }
  for (size_t i = 0; i < bB.size(); ++i) {
    g.bBatch[rank - bB.size() + i] = bB[i];
    g.bBatchStr[rank - bB.size() + i] = bB[i] == 1 ? 0 : bst[i];
  }
  std::vector<int64_t> shape = g.batch;
  if (!g.aVector)
    shape.push_back(g.m);
  if (!g.bVector)
    shape.push_back(g.n);
  r.expectShape(out, "output", shape);
  std::vector<int64_t> ost = out.effectiveStrides();
  g.cBatchStr.assign(ost.begin(), ost.begin() + rank);
  size_t pos = rank;
  g.cm = g.aVector ? 0 : ost[pos++];
  g.cn = g.bVector ? 0 : ost[pos++];
  return g;
}

/// gemm's C as a binary post-op operand. Patterns oneDNN's matmul has no
/// optimized kernel for (C varying along M only) are expanded to the full
/// M x N result shape into scratch on every run.
struct GemmC {
  int arg = 0;
  dnnl::memory::desc desc;
  bool expand = false;
  CopyPlan plan; // C -> dense [M, N]
  size_t bytes = 0;
};

/// Canonical strides for size-1 dims so descriptors stay plain.
void fillUnitStrides(const std::vector<int64_t> &dims, std::vector<int64_t> &strides) {
  int64_t dense = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1 || strides[i] == 0)
      strides[i] = dense;
    dense = std::max(dense, strides[i] * dims[i]);
  }
}

bool anyNegative(const std::vector<int64_t> &v) {
  return std::any_of(v.begin(), v.end(), [](int64_t x) { return x < 0; });
}

//===----------------------------------------------------------------------===//
// oneDNN path
//===----------------------------------------------------------------------===//

/// The matmul on the packed GEMM (nativeProduct) or on oneDNN, its work split
/// across the ThreadPool. On oneDNN every primitive
/// is single-threaded (OpenMP never starts a thread team), and the product is
/// cut along one dimension of the result into more pieces than threads,
/// which the pool's workers take from its queue (a busy or descheduled core
/// does not hold the others up). The split dimension is, in order of
/// preference: a batch dimension (attention), N in 64-column multiples (each
/// piece reads and, for a constant B, packs only its columns), M.
class DnnlMatMulKernel final : public KernelBase {
public:
  /// `post` holds gemm's C (see GemmC) and the fused chain's post-ops;
  /// `erfGelu` (set: its `multiply`) an erf_gelu after them, whose k1, k2,
  /// k3 are the chain's last three extra operands: only the packed GEMM
  /// runs it (its epilogue), so without that this throws.
  DnnlMatMulKernel(const MatGeom &g, dt type, bool constantB, onednn::PostOps post,
                   std::vector<GemmC> gemmC, float outputScale, std::string what,
                   std::optional<bool> erfGelu = std::nullopt)
      : g_(g), constantB_(constantB), post_(std::move(post)), gemmC_(std::move(gemmC)),
        outputScale_(outputScale), erfGelu_(erfGelu) {
    std::vector<int64_t> ad = g.aBatch, bd = g.bBatch, cd = g.batch;
    std::vector<int64_t> as = g.aBatchStr, bs = g.bBatchStr, cs = g.cBatchStr;
    ad.insert(ad.end(), {g.m, g.k});
    as.insert(as.end(), {g.am, g.ak});
    bd.insert(bd.end(), {g.k, g.n});
    bs.insert(bs.end(), {g.bk, g.bn});
    cd.insert(cd.end(), {g.m, g.n});
    cs.insert(cs.end(), {g.cm, g.cn});
    fillUnitStrides(ad, as);
    fillUnitStrides(bd, bs);
    fillUnitStrides(cd, cs);
    a_ = {ad, as, type};
    b_ = {bd, bs, type};
    c_ = {cd, cs, type};
    rank_ = int(cd.size());
    // The binary post-op operands (gemm's C first, then the chain's), in
    // post-op order, with their argument ids.
    for (int i = 0; i < post_.ops.len(); ++i) {
      if (post_.ops.kind(i) != dnnl::primitive::kind::binary)
        continue;
      dnnl::algorithm alg;
      dnnl::memory::desc d;
      post_.ops.get_params_binary(i, alg, d);
      binaries_.push_back({i, onednn::plainOperand(d)});
    }
    collapseBatchIntoRows();
    if (type == dt::f32 && constantB)
      native_ = nativeProduct(PackedSgemm::Algorithm::Classic);
    if (erfGelu_ && !native_)
      throw dnnl::error(dnnl_unimplemented,
                        "erf_gelu fuses only into the packed GEMM (a float32 2-D product with "
                        "a constant B)");
    if (native_) {
      nativeB_.emplace(b_, true);
      // Strassen where it suits the shape and the setting `strassen` is on
      // (off by default: config.h), run by a pool of one thread.
      // At 2 threads it ran BERT's products 1-15% slower than the classic
      // product (each thread's share of the panels is half as long, and two
      // cores streaming B leave each less of DRAM's bandwidth), at 1 thread
      // 1-4% faster (per-step profile, alternating runs) on an earlier VM,
      // 3-8% slower on the current one (hence off).
      if (PackedSgemm::algorithmFor(c_.dims[0], g_.k, g_.n) ==
          PackedSgemm::Algorithm::Strassen) {
        strassen_ = nativeProduct(PackedSgemm::Algorithm::Strassen);
        strassenB_.emplace(b_, true);
      }
      description_ = cat(what, " ", shapeStr(g.batch), "x", g.m, "x", g.k, "x", g.n,
                         post_.summary, erfGelu_ ? "+erf_gelu" : "", " (AVX-512 ",
                         native_->tileText(), ", packed B",
                         strassen_ ? ", one level of Strassen-Winograd on 1 thread" : "",
                         collapsedRows_ ? cat(", as ", collapsedRows_, " rows") : std::string(),
                         ", split across the pool)");
      return;
    }
    // Validate with the whole product in one piece.
    const Piece &whole = piece(-1, 0);
    implName_ = whole.pd.impl_info_str();
    // oneDNN falls back to its reference matmul for some post-op broadcast
    // patterns (a [M, 1] binary operand: 0.2 GFLOP/s measured); that is no
    // implementation for us.
    if (implName_.rfind("ref", 0) == 0)
      throw dnnl::error(dnnl_unimplemented, "only oneDNN's reference matmul applies");
    description_ = cat(what, " ", shapeStr(g.batch), "x", g.m, "x", g.k, "x", g.n,
                       post_.summary, " (oneDNN ", implName_, constantB ? ", packed B" : "",
                       collapsedRows_ ? cat(", as ", collapsedRows_, " rows") : std::string(),
                       ", split across the pool)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    // Operand base pointers (bytes).
    Scratch expandedC;
    std::vector<const char *> extraBase(binaries_.size());
    size_t nextChain = 0, nextC = 0;
    for (size_t i = 0; i < binaries_.size(); ++i) {
      if (nextC < gemmC_.size() && gemmC_[nextC].arg == argOf(binaries_[i].index)) {
        const GemmC &c = gemmC_[nextC++];
        if (c.expand) {
          expandedC.allocate(c.bytes);
          c.plan.run(pool, expandedC.data(), args.inputs[2]);
          extraBase[i] = static_cast<const char *>(expandedC.data());
        } else {
          extraBase[i] = static_cast<const char *>(args.inputs[2]);
        }
      } else {
        extraBase[i] = static_cast<const char *>(args.inputs[firstExtra_ + nextChain++]);
      }
    }
    if (erfGelu_) // k1, k2, k3: the chain's last extra operands
      for (int j = 0; j < 3; ++j)
        extraBase.push_back(static_cast<const char *>(args.inputs[firstExtra_ + nextChain++]));
    const char *a = static_cast<const char *>(args.inputs[0]);
    const char *b = static_cast<const char *>(args.inputs[1]);
    char *c = static_cast<char *>(args.outputs[0]);
    if (native_) {
      runNative(a, b, c, extraBase, pool);
      return;
    }
    // Split: about one piece per thread (splitCandidates).
    int threads = pool.size();
    int dim = -1;
    int64_t extent = 1, step = 1;
    const double flops = 2.0 * double(numElements(g_.batch)) * double(g_.m) * double(g_.n) *
                         double(g_.k);
    // A few microseconds of work: splitting costs more than it saves.
    if (threads > 1 && flops >= 4e6) {
      const Split split = chooseSplit(threads);
      dim = split.dim;
      extent = split.extent;
      step = split.step;
    }
    std::vector<std::function<void()>> tasks;
    for (int64_t start = 0; start < extent; start += step) {
      int64_t len = std::min(step, extent - start);
      tasks.push_back([&, start, len] { runPiece(dim, start, len, a, b, c, extraBase); });
    }
    pool.runAll(tasks);
    if (!epilogue_.empty()) {
      const void *const *extra = args.inputs + firstExtra_;
      pool.parallelFor(numElements(c_.dims), 32768, [&](int64_t begin, int64_t end) {
        epilogue_.apply(c, extra, begin, end);
      });
    }
    if (constantB_) {
      bool allPacked = true;
      for (int64_t len : {step, extent % step})
        if (len != 0 || dim < 0)
          allPacked = allPacked && piece(dim, dim < 0 ? 0 : len).reorderB;
      if (allPacked)
        bPageOut_.release(b_, b);
    }
  }

  void setFirstExtra(size_t index) { firstExtra_ = index; }

  /// The fused chain as our Epilogue over the whole result after the
  /// product (made without post-ops, their summary naming the chain).
  void setEpilogue(Epilogue epilogue) {
    epilogue_ = std::move(epilogue);
    description_.insert(description_.size() - 1, ", epilogue after");
  }

private:
  /// Merges the leading dimensions [0, rank - 1) of `op` into one whose
  /// extent is `rows` (or 1 where the operand broadcasts over all of them).
  /// False if its strides do not allow that (a broadcast over some of the
  /// merged dimensions only, or gaps between them).
  static bool mergeRows(onednn::PlainOperand &op, int64_t rows) {
    const size_t r = op.dims.size();
    int64_t extent = 1, stride = 0;
    bool first = true;
    for (size_t d = r - 1; d-- > 0;) {
      if (op.dims[d] == 1)
        continue;
      if (first) {
        stride = op.strides[d];
        first = false;
      } else if (op.strides[d] != extent * stride) {
        return false;
      }
      extent *= op.dims[d];
    }
    if (extent != 1 && extent != rows)
      return false;
    onednn::PlainOperand merged = op;
    merged.dims = {extent, op.dims[r - 1]};
    merged.strides = {first ? op.dims[r - 1] * op.strides[r - 1] : stride, op.strides[r - 1]};
    merged.normalize();
    op = merged;
    return true;
  }

  /// A product whose B has no batch (a weight shared by every row, as in a
  /// transformer's projections) runs as one 2-D product of (batch * M) rows
  /// when A, C and every post-op operand allow that view: oneDNN's matmul
  /// picks a blocked layout for a constant B only for 2-D products
  /// (measured 128x3072x768: 3.93 ms with the 3-D plain B vs 3.19 ms with
  /// the 2-D blocked one, one thread), and the rows split across the pool
  /// like any M.
  void collapseBatchIntoRows() {
    if (rank_ <= 2 || numElements(g_.bBatch) != 1)
      return;
    const int64_t rows = numElements(g_.batch) * g_.m;
    onednn::PlainOperand a = a_, c = c_;
    if (!mergeRows(a, rows) || a.dims[0] != rows || !mergeRows(c, rows) || c.dims[0] != rows)
      return;
    std::vector<Binary> binaries = binaries_;
    for (Binary &bin : binaries)
      if (!mergeRows(bin.operand, rows))
        return;
    onednn::PlainOperand b = b_;
    b.dims.erase(b.dims.begin(), b.dims.end() - 2);
    b.strides.erase(b.strides.begin(), b.strides.end() - 2);
    a_ = a;
    b_ = b;
    c_ = c;
    binaries_ = std::move(binaries);
    rank_ = 2;
    collapsedRows_ = rows;
  }

  /// The product as a PackedSgemm: a float32 2-D product (batches merged
  /// into rows or none) with a constant B, A and C with unit column strides,
  /// and post-ops it has (output scale, relu, clip, linear, scale, and
  /// add/sub/mul/div by an operand that varies along rows and columns with
  /// unit column stride, or is broadcast along either). Null otherwise
  /// (oneDNN runs it).
  std::unique_ptr<PackedSgemm> nativeProduct(PackedSgemm::Algorithm algorithm) const {
    if (!PackedSgemm::available() || rank_ != 2 || g_.aVector || g_.bVector ||
        a_.strides[1] != 1 || c_.strides[1] != 1 || a_.dims[0] != c_.dims[0])
      return nullptr;
    std::vector<SgemmOp> ops;
    if (outputScale_ != 1.0f)
      ops.push_back({SgemmOp::Kind::Scale, outputScale_});
    if (!onednn::sgemmOps(post_.ops, ops))
      return nullptr;
    for (SgemmOp &op : ops) {
      if (!op.binary())
        continue;
      const onednn::PlainOperand &y = binaries_[size_t(op.operand)].operand;
      if (y.dims.size() != 2 || (y.dims[1] != 1 && y.strides[1] != 1))
        return nullptr;
      op.rowStride = y.dims[0] == 1 ? 0 : y.strides[0];
      op.colStride = y.dims[1] == 1 ? 0 : 1;
    }
    if (erfGelu_) {
      SgemmOp gelu{SgemmOp::Kind::ErfGelu, *erfGelu_ ? 1.0f : 0.0f};
      gelu.operand = int(binaries_.size()); // after the binaries' operands (run())
      ops.push_back(gelu);
    }
    return std::make_unique<PackedSgemm>(c_.dims[0], g_.k, g_.n, std::move(ops), algorithm);
  }

  void runNative(const char *a, const char *b, char *c, const std::vector<const char *> &extraBase,
                 ThreadPool &pool) const {
    const float *bf = reinterpret_cast<const float *>(b);
    Scratch unused; // a constant B: packed once per address (and algorithm)
    const bool strassen = strassen_ && pool.size() == 1;
    const PackedSgemm &gemm = strassen ? *strassen_ : *native_;
    const float *packed = (strassen ? strassenB_ : nativeB_)
                              ->get(bf, nullptr, gemm.packedBytes(), unused, [&](float *p) {
                                gemm.pack(bf, b_.strides[0], b_.strides[1], p);
                              });
    std::vector<const float *> operands(extraBase.size());
    for (size_t i = 0; i < extraBase.size(); ++i)
      operands[i] = reinterpret_cast<const float *>(extraBase[i]);
    PackedSgemm::Args args;
    args.a = reinterpret_cast<const float *>(a);
    args.lda = a_.strides[0];
    args.b = packed;
    args.c = reinterpret_cast<float *>(c);
    args.ldc = c_.strides[0];
    args.operands = operands.data();
    gemm.runAll(args, c_.dims[0], pool);
  }

  struct Piece {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
    size_t scratchpad = 0;
    bool reorderB = false;
    dnnl::reorder reorderBPrim;
    onednn::PlainOperand a, b, c;
    std::vector<onednn::PlainOperand> extras;
  };

  static int argOf(int postOpIndex) {
    return DNNL_ARG_ATTR_MULTIPLE_POST_OP(postOpIndex) | DNNL_ARG_SRC_1;
  }

  /// The result dimension `dim` of an operand: A has no N, B has no M.
  int operandDim(char which, int dim) const {
    if (dim < 0)
      return -1;
    if (which == 'a' && dim == rank_ - 1)
      return -1;
    if (which == 'b' && dim == rank_ - 2)
      return -1;
    return dim;
  }

  struct Split {
    int dim = -1; // -1: the whole product in one piece
    int64_t extent = 1, step = 1;
  };

  /// The split for `threads`: the first of splitCandidates() for which
  /// oneDNN has a real implementation of every piece (slicing can leave an
  /// operand layout only its reference implementation takes: the N slices
  /// of a product with a packed B and a strided result do), else none.
  Split chooseSplit(int threads) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = splits_.find(threads);
      if (it != splits_.end())
        return it->second;
    }
    Split chosen;
    for (const Split &candidate : splitCandidates(threads)) {
      bool ok = true;
      for (int64_t len : {candidate.step, candidate.extent % candidate.step}) {
        if (len == 0)
          continue;
        try {
          ok = ok && std::string(piece(candidate.dim, len).pd.impl_info_str()).rfind("ref", 0) != 0;
        } catch (const dnnl::error &) {
          ok = false;
        }
      }
      if (ok) {
        chosen = candidate;
        break;
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    splits_[threads] = chosen;
    return chosen;
  }

  /// Splits into about one piece per thread, in order of preference: the
  /// largest batch dimension if it alone gives every thread work, then N in
  /// multiples of 64 columns, then M in blocks of at least 16 rows.
  std::vector<Split> splitCandidates(int threads) const {
    // One piece per thread: two per thread measured slower (BERT encoder,
    // 2 threads, median 79.6-81.5 -> 73.0-73.2 ms; each piece re-reads the
    // other operand and runs a smaller product), the pieces being equal.
    const int64_t pieces = threads;
    std::vector<Split> out;
    int bestBatch = -1;
    for (int d = 0; d < rank_ - 2; ++d)
      if (bestBatch < 0 || c_.dims[size_t(d)] > c_.dims[size_t(bestBatch)])
        bestBatch = d;
    if (bestBatch >= 0 && c_.dims[size_t(bestBatch)] >= threads) {
      int64_t extent = c_.dims[size_t(bestBatch)];
      out.push_back({bestBatch, extent, std::max<int64_t>(1, (extent + pieces - 1) / pieces)});
    }
    if (g_.n >= 128)
      out.push_back({rank_ - 1, g_.n,
                     std::max<int64_t>(64, (g_.n + pieces - 1) / pieces / 64 * 64)});
    const int64_t rows = c_.dims[size_t(rank_ - 2)];
    if (rows >= 32)
      out.push_back({rank_ - 2, rows, std::max<int64_t>(16, (rows + pieces - 1) / pieces)});
    return out;
  }

  /// The primitive for pieces of `len` along `dim` (-1: the whole product).
  const Piece &piece(int dim, int64_t len) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(dim, len);
    auto it = pieces_.find(key);
    if (it != pieces_.end())
      return *it->second;
    auto p = std::make_unique<Piece>();
    int64_t unused;
    p->a = a_.slice(operandDim('a', dim), 0, len, unused);
    p->b = b_.slice(operandDim('b', dim), 0, len, unused);
    p->c = c_.slice(dim, 0, len, unused);
    dnnl::post_ops ops;
    size_t next = 0;
    for (int i = 0; i < post_.ops.len(); ++i) {
      if (post_.ops.kind(i) == dnnl::primitive::kind::eltwise) {
        float scale, alpha, beta;
        dnnl::algorithm alg;
        post_.ops.get_params_eltwise(i, scale, alg, alpha, beta);
        ops.append_eltwise(scale, alg, alpha, beta);
      } else {
        dnnl::algorithm alg;
        dnnl::memory::desc d;
        post_.ops.get_params_binary(i, alg, d);
        onednn::PlainOperand e = binaries_[next++].operand.slice(dim, 0, len, unused);
        ops.append_binary(alg, e.desc());
        p->extras.push_back(e);
      }
    }
    onednn::ThreadScope scope(1);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    if (outputScale_ != 1.0f)
      attr.set_output_scales(0, {outputScale_});
    dnnl::memory::desc bdesc = p->b.desc();
    dnnl::memory::desc wdesc =
        constantB_ ? dnnl::memory::desc(bdesc.dims(), bdesc.data_type(), dnnl::memory::format_tag::any)
                   : bdesc;
    p->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(p->a.desc(), wdesc, p->c.desc()), attr,
                                         onednn::engine());
    p->prim = dnnl::matmul(p->pd);
    p->scratchpad = p->pd.scratchpad_desc().get_size();
    p->reorderB = p->pd.weights_desc() != bdesc;
    if (p->reorderB) {
      dnnl::primitive_attr rattr;
      rattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      p->reorderBPrim = dnnl::reorder(dnnl::reorder::primitive_desc(
          onednn::engine(), bdesc, onednn::engine(), p->pd.weights_desc(), rattr));
    }
    const Piece &ref = *p;
    pieces_.emplace(key, std::move(p));
    return ref;
  }

  /// The packed copy of B's slice at `src` for `piece` (constant B: made
  /// once per address and slice; shared by pieces with the same layout).
  const void *packedB(const Piece &pc, const void *src) const {
    std::lock_guard<std::mutex> lock(packMutex_);
    for (const Packed &p : packed_)
      if (p.src == src && p.desc == pc.pd.weights_desc())
        return p.ready;
    const size_t bytes = pc.pd.weights_desc().get_size();
    prepared::Context *context = nullptr;
    std::string key;
    if (const void *mapped = prepared::lookup(site_, onednn::layoutText(pc.pd.weights_desc()), src,
                                              nullptr, bytes, context, key)) {
      packed_.push_back({src, pc.pd.weights_desc(), nullptr, mapped});
      return mapped;
    }
    auto data = std::make_shared<AlignedBuffer>(bytes);
    reorder(pc, src, data->data());
    prepared::done(context, key, data->data(), bytes);
    packed_.push_back({src, pc.pd.weights_desc(), data, data->data()});
    return data->data();
  }

  void reorder(const Piece &pc, const void *src, void *dst) const {
    std::unordered_map<int, dnnl::memory> rargs = {
        {DNNL_ARG_FROM, onednn::wrap(pc.b.desc(), src)},
        {DNNL_ARG_TO, onednn::wrap(pc.pd.weights_desc(), dst)}};
    onednn::execute(pc.reorderBPrim, 0, rargs);
  }

  void runPiece(int dim, int64_t start, int64_t len, const char *a, const char *b, char *c,
                const std::vector<const char *> &extraBase) const {
    const Piece &pc = piece(dim, dim < 0 ? 0 : len);
    onednn::ThreadScope scope(1);
    const int64_t elem = int64_t(dnnl::memory::data_type_size(c_.type));
    int64_t off;
    a_.slice(operandDim('a', dim), start, len, off);
    const char *ap = a + off * elem;
    b_.slice(operandDim('b', dim), start, len, off);
    const char *bp = b + off * elem;
    c_.slice(dim, start, len, off);
    char *cp = c + off * elem;
    std::unordered_map<int, dnnl::memory> margs;
    margs[DNNL_ARG_SRC] = onednn::wrap(pc.a.desc(), ap);
    margs[DNNL_ARG_DST] = onednn::wrap(pc.c.desc(), cp);
    Scratch packedNow;
    if (pc.reorderB) {
      const void *w;
      if (constantB_) {
        w = packedB(pc, bp);
      } else {
        packedNow.allocate(pc.pd.weights_desc().get_size());
        reorder(pc, bp, packedNow.data());
        w = packedNow.data();
      }
      margs[DNNL_ARG_WEIGHTS] = onednn::wrap(pc.pd.weights_desc(), w);
    } else {
      margs[DNNL_ARG_WEIGHTS] = onednn::wrap(pc.b.desc(), bp);
    }
    for (size_t i = 0; i < binaries_.size(); ++i) {
      binaries_[i].operand.slice(dim, start, len, off);
      margs[argOf(binaries_[i].index)] =
          onednn::wrap(pc.extras[i].desc(), extraBase[i] + off * elem);
    }
    onednn::execute(pc.prim, pc.scratchpad, margs);
  }

  struct Binary {
    int index; // post-op index
    onednn::PlainOperand operand;
  };
  struct Packed {
    const void *src;
    dnnl::memory::desc desc;
    std::shared_ptr<AlignedBuffer> data; // null for a block from a database
    const void *ready;
  };

  MatGeom g_;
  bool constantB_;
  onednn::PostOps post_;
  std::vector<GemmC> gemmC_;
  float outputScale_ = 1.0f;
  size_t firstExtra_ = 0;
  std::optional<bool> erfGelu_; // a trailing erf_gelu (its `multiply`), see the constructor
  Epilogue epilogue_; // set: the chain, run after the product
  onednn::PlainOperand a_, b_, c_;
  int rank_ = 2;
  int64_t collapsedRows_ = 0; // batch * M when the batch was merged into M
  std::vector<Binary> binaries_;
  std::string implName_;
  std::unique_ptr<PackedSgemm> native_; // set: the product runs on it, not oneDNN
  std::optional<onednn::PreparedWeights> nativeB_; // B packed for native_
  /// Set: a pool of one thread runs the product on this instead (B packed
  /// for it in strassenB_, on its first such run).
  std::unique_ptr<PackedSgemm> strassen_;
  std::optional<onednn::PreparedWeights> strassenB_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, int64_t>, std::unique_ptr<Piece>> pieces_;
  mutable std::map<int, Split> splits_;
  mutable std::mutex packMutex_;
  int site_ = prepared::nextSite(); // of packed_ (prepared.h)
  mutable std::vector<Packed> packed_;
  mutable onednn::SourcePageOut bPageOut_;
};

//===----------------------------------------------------------------------===//
// Generic path
//===----------------------------------------------------------------------===//

template <class T> class GenericMatMulKernel final : public KernelBase {
public:
  GenericMatMulKernel(const MatGeom &g, std::string what, double alpha, double beta,
                      std::optional<KernelOperand> c)
      : g_(g), alpha_(alpha), beta_(beta) {
    if (c && beta != 0) {
      hasC_ = true;
      std::vector<int64_t> outShape = {g.m, g.n};
      std::vector<int64_t> outStrides = {g.cm, g.cn};
      cPlan_ = LoopPlan(outShape, {outStrides, broadcastStrides(*c, outShape)},
                        {sizeof(T), sizeof(T)}, false);
    }
    description_ = cat(what, " ", shapeStr(g.batch), "x", g.m, "x", g.k, "x", g.n,
                       " (blocked GEMM)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *a = static_cast<const T *>(args.inputs[0]);
    const T *b = static_cast<const T *>(args.inputs[1]);
    T *c = static_cast<T *>(args.outputs[0]);
    GemmShape s{g_.m, g_.n, g_.k, g_.am, g_.ak, g_.bk, g_.bn, g_.cm, g_.cn};
    int64_t batches = numElements(g_.batch);
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t rem = bi, ao = 0, bo = 0, co = 0;
      for (size_t d = g_.batch.size(); d-- > 0;) {
        int64_t i = rem % g_.batch[d];
        rem /= g_.batch[d];
        ao += i * g_.aBatchStr[d];
        bo += i * g_.bBatchStr[d];
        co += i * g_.cBatchStr[d];
      }
      genericGemm<T>(s, a + ao, b + bo, c + co, &pool);
    }
    if (alpha_ != 1.0 || hasC_) {
      // Gemm: out = alpha * out + beta * C (broadcast), in double.
      const T *cin = hasC_ ? static_cast<const T *>(args.inputs[2]) : nullptr;
      char *bases[2] = {reinterpret_cast<char *>(c), const_cast<char *>(reinterpret_cast<const char *>(cin))};
      struct Ctx {
        double alpha, beta;
        bool hasC;
      } ctx{alpha_, beta_, hasC_};
      if (hasC_) {
        cPlan_.runRange(bases, &scaleRow, &ctx, 0, cPlan_.total());
      } else {
        for (int64_t i = 0; i < g_.m; ++i)
          for (int64_t j = 0; j < g_.n; ++j) {
            T &v = c[i * g_.cm + j * g_.cn];
            v = convert<T>(alpha_ * double(load(v)));
          }
      }
    }
  }

private:
  static void scaleRow(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
    struct Ctx {
      double alpha, beta;
      bool hasC;
    };
    const Ctx &c = *static_cast<const Ctx *>(ctx);
    char *o = p[0];
    const char *x = p[1];
    for (int64_t i = 0; i < n; ++i, o += s[0], x += s[1]) {
      T &v = *reinterpret_cast<T *>(o);
      double r = c.alpha * double(load(v)) + c.beta * double(load(*reinterpret_cast<const T *>(x)));
      v = convert<T>(r);
    }
  }

  MatGeom g_;
  double alpha_, beta_;
  bool hasC_ = false;
  LoopPlan cPlan_;
};

//===----------------------------------------------------------------------===//
// Factories
//===----------------------------------------------------------------------===//

struct Parsed {
  MatGeom geom;
  bool gemm = false;
  double alpha = 1, beta = 1;
  std::optional<KernelOperand> c;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  bool anyNegativeStride = false;
};

Parsed parse(const KernelDesc &desc) {
  DescReader r(desc);
  Parsed p;
  p.gemm = desc.kind() == OpKind::Gemm;
  r.expectInputs(2, p.gemm ? 3 : 2);
  r.expectOutputs(1, 1);
  const KernelOperand &a = r.input(0, "a"), &b = r.input(1, "b");
  r.expectDType(a, "a", DTypeClass::Numeric);
  r.expectSameDType(a, "a", b, "b");
  r.expectSameDType(a, "a", r.output(0), "output");
  bool ta = r.getBool("transpose_a", false), tb = r.getBool("transpose_b", false);
  if (p.gemm) {
    if (a.shape.size() != 2 || b.shape.size() != 2)
      r.error("gemm operands a and b must be 2-D");
    p.alpha = r.getFloat("alpha", 1.0);
    p.beta = r.getFloat("beta", 1.0);
    if (r.hasInput(2)) {
      p.c = *desc.inputs[2];
      r.expectSameDType(a, "a", *p.c, "c");
    }
  }
  p.geom = matmulGeometry(r, a, b, r.output(0), ta, tb);
  if (p.c) {
    std::vector<int64_t> bc;
    std::vector<int64_t> mn = {p.geom.m, p.geom.n};
    if (!broadcastShapes(p.c->shape, mn, bc) || bc != mn)
      r.error(cat("c shape ", shapeStr(p.c->shape), " does not broadcast to [", p.geom.m, ", ",
                  p.geom.n, "]"));
  }
  p.dtype = a.dtype;
  for (const auto &in : desc.inputs)
    if (in && anyNegative(in->effectiveStrides()))
      p.anyNegativeStride = true;
  if (anyNegative(desc.outputs[0].effectiveStrides()))
    p.anyNegativeStride = true;
  return p;
}

bool useDnnl(const Parsed &p) {
  return (p.dtype == CGC_DTYPE_FLOAT32 || p.dtype == CGC_DTYPE_BFLOAT16) && !p.anyNegativeStride &&
         p.geom.m > 0 && p.geom.n > 0 && p.geom.k > 0 && p.geom.batch.size() + 2 <= 12 &&
         numElements(p.geom.batch) > 0;
}

/// The product on the packed GEMM with B packed per batch
/// (batched_gemm.h) when it is a float32 matmul whose B differs from batch
/// to batch and is not a constant (attention's Q.K^T and P.V), and `chain`
/// (if any) ends where the product's result is; else null with `reason`.
std::unique_ptr<Kernel> batchedPacked(const Parsed &p, const KernelDesc &anchor,
                                      const std::vector<KernelDesc> &chain,
                                      const KernelOptions &options, std::string &reason) {
  const MatGeom &g = p.geom;
  if (p.gemm || p.dtype != CGC_DTYPE_FLOAT32 || p.anyNegativeStride || g.aVector || g.bVector ||
      numElements(g.bBatch) <= 1 || options.isConstant(1)) {
    reason = "not a float32 matmul with a B per batch";
    return nullptr;
  }
  if (!chain.empty() && chain.back().outputs.size() == 1 &&
      chain.back().outputs[0].effectiveStrides() != anchor.outputs[0].effectiveStrides()) {
    reason = "the epilogue's result must have the anchor's layout";
    return nullptr;
  }
  return makeBatchedPackedProduct(g, chain, anchor.inputs.size(),
                                  anchor.op.substr(7) + " " + dtypeName(p.dtype), reason);
}

/// gemm's alpha, beta and C as leading post-ops.
void gemmPrefix(const Parsed &p, onednn::PostOps &prefix, std::vector<GemmC> &cArgs,
                float &outputScale) {
  using A = dnnl::algorithm;
  dt type;
  onednn::dataType(p.dtype, type);
  bool withC = p.c && p.beta != 0;
  // alpha (over beta when C is added) is the primitive's output scale,
  // applied before the post-ops.
  outputScale = float(withC ? p.alpha / p.beta : p.alpha);
  if (withC) {
    GemmC c;
    std::vector<int64_t> dims(p.geom.batch.size() + 2, 1), strides(dims.size(), 0);
    std::vector<int64_t> own = p.c->effectiveStrides();
    size_t off = dims.size() - p.c->shape.size();
    for (size_t i = 0; i < p.c->shape.size(); ++i) {
      dims[off + i] = p.c->shape[i];
      strides[off + i] = own[i];
    }
    bool alongMOnly = dims[dims.size() - 2] != 1 && dims.back() == 1;
    if (alongMOnly) {
      std::vector<int64_t> mn = {p.geom.m, p.geom.n};
      c.expand = true;
      c.plan = CopyPlan(mn, cgc_dtype_size(p.dtype), contiguousStrides(mn),
                        broadcastStrides(*p.c, mn));
      c.bytes = size_t(p.geom.m * p.geom.n) * cgc_dtype_size(p.dtype);
      dims = {p.geom.m, p.geom.n};
      strides = contiguousStrides(dims);
    }
    fillUnitStrides(dims, strides);
    c.desc = onednn::plainDesc(dims, strides, type);
    c.arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(prefix.ops.len()) | DNNL_ARG_SRC_1;
    prefix.ops.append_binary(A::binary_add, c.desc);
    cArgs.push_back(std::move(c));
    if (p.beta != 1.0) {
      std::string unused;
      prefix.appendEltwise(A::eltwise_linear, float(p.beta), 0.f, unused);
    }
  }
}

/// One product to choose a kernel for: `anchor` alone (`epilogue` empty) or
/// with the elementwise chain the driver fuses after it.
struct MatMulCase {
  const KernelDesc &anchor;
  const std::vector<KernelDesc> &epilogue;
  const KernelOptions &options;
  Parsed p;
  std::string what; // "matmul float32", for the kernel's description
  dt type = dt::undef;
  bool constantB = false;
  /// gemm's alpha, beta and C as leading post-ops, then the chain's.
  onednn::PostOps post;
  std::vector<GemmC> cArgs;
  float scale = 1.0f;
  /// A chain that ends with an erf_gelu runs it in the packed GEMM's
  /// epilogue (its multiply form), the rest as post-ops.
  std::optional<bool> erfGelu;
  /// Empty when oneDNN's product takes the chain (or there is none); else
  /// why not.
  std::string chainReason;
  /// The chain has a binary op.
  bool binary = false;

  MatMulCase(const KernelDesc &anchor, const std::vector<KernelDesc> &epilogue,
             const KernelOptions &options)
      : anchor(anchor), epilogue(epilogue), options(options), p(parse(anchor)),
        what(anchor.op.substr(7) + " " + dtypeName(p.dtype)) {
    if (useDnnl(p)) {
      onednn::dataType(p.dtype, type);
      if (p.gemm)
        gemmPrefix(p, post, cArgs, scale);
    }
    constantB = options.isConstant(1) && numElements(p.geom.bBatch) == 1;
    if (!fused())
      return;
    for (const KernelDesc &op : epilogue)
      binary = binary || op.inputs.size() > 1;
    if (!useDnnl(p)) {
      chainReason = cat(anchor.op, ": only float32/bfloat16 products on oneDNN fuse (",
                        dtypeName(p.dtype), p.anyNegativeStride ? ", negative strides" : "", ")");
      return;
    }
    if (p.geom.aVector || p.geom.bVector) {
      chainReason = cat(anchor.op, ": products with a 1-D operand do not fuse");
      return;
    }
    // An erf_gelu last (a transformer's FFN: matmul + bias + GELU) runs in
    // the packed GEMM's epilogue, on each tile in registers: BERT's 12
    // GELUs of 128 x 3072 had been a pass of their own (the
    // DnnlMatMulKernel refuses it where the packed GEMM does not run the
    // product).
    std::vector<KernelDesc> chain = epilogue;
    if (chain.back().kind() == OpKind::ErfGelu) {
      if (!activeConfig().gemmGelu) {
        chainReason = "cgc_op.erf_gelu: the configuration says gemm-gelu=0";
        return;
      }
      const KernelDesc &gelu = chain.back();
      const bool multiply = checkErfGelu(gelu); // throws DescError with the reason
      if (p.dtype != CGC_DTYPE_FLOAT32 || gelu.inputs[0]->shape != anchor.outputs[0].shape) {
        chainReason = "cgc_op.erf_gelu: a fused erf_gelu takes the float32 product";
        return;
      }
      erfGelu = multiply;
      chain.pop_back();
    }
    if (!onednn::buildPostOps(chain, anchor.outputs[0].shape, p.dtype, post, chainReason))
      return;
    if (epilogue.back().outputs.size() != 1 ||
        epilogue.back().outputs[0].effectiveStrides() != anchor.outputs[0].effectiveStrides())
      chainReason = "the epilogue's result must have the anchor's layout";
  }
  bool fused() const { return !epilogue.empty(); }
  /// A batched product (B per batch: attention) whose chain has a binary op.
  bool batchedWithBinaryChain() const {
    return fused() && !p.gemm && numElements(p.geom.bBatch) > 1 && binary && !erfGelu;
  }
};

using MatMulImplementation = Implementation<MatMulCase>;

/// The implementations in order of preference, for a product alone and with
/// a chain alike (selectMatMul).
const MatMulImplementation kMatMulImplementations[] = {
    {"row products (one row: dots of B's rows, or B's rows combined)",
     [](const MatMulCase &c) {
       const MatGeom &g = c.p.geom;
       std::string why = rowProductMismatch(
           c.p.dtype == CGC_DTYPE_FLOAT32, g.m == 1 && numElements(g.batch) == 1 && !g.bVector,
           (g.bk == 1 || (g.bn == 1 && g.cn == 1)) && (g.ak == 1 || g.k == 1), cpuHasAvx512());
       if (why.empty() && c.fused() &&
           (c.epilogue.back().outputs.size() != 1 ||
            c.epilogue.back().outputs[0].effectiveStrides() !=
                c.anchor.outputs[0].effectiveStrides()))
         why = "the chain's result must have the product's layout";
       return why;
     },
     [](const MatMulCase &c, std::string &) -> std::unique_ptr<Kernel> {
       const MatGeom &g = c.p.geom;
       RowProduct product;
       product.n = g.n;
       product.k = g.k;
       product.bByRows = g.bk != 1;
       product.bRowStride = product.bByRows ? g.bk : g.bn;
       product.yStride = g.cn;
       product.alpha = c.p.alpha;
       product.beta = c.p.beta;
       product.c = c.p.c;
       product.output = c.fused() ? c.epilogue.back().outputs[0] : c.anchor.outputs[0];
       return makeRowProduct(product, c.epilogue, c.anchor.inputs.size(), c.what);
     }},
    {"packed GEMM with a B per batch",
     [](const MatMulCase &) { return std::string(); },
     [](const MatMulCase &c, std::string &reason) {
       return batchedPacked(c.p, c.anchor, c.epilogue, c.options, reason);
     }},
    {"oneDNN with the chain after it",
     // oneDNN 2.6's binary post-ops on a batched product cost more than the
     // product (BERT's scores with their scale and mask: 250 us per layer
     // against 160 for the product alone), so the chain runs as our
     // Epilogue over the result after it, while it is in cache.
     [](const MatMulCase &c) {
       if (!c.batchedWithBinaryChain())
         return std::string("not a batched product with a binary op in its chain");
       return c.chainReason;
     },
     [](const MatMulCase &c, std::string &) -> std::unique_ptr<Kernel> {
       const KernelOperand &out = c.anchor.outputs[0];
       std::vector<size_t> order(out.shape.size());
       for (size_t i = 0; i < order.size(); ++i)
         order[i] = i;
       Epilogue chain(out.shape, c.p.dtype, c.epilogue, out.effectiveStrides(), order);
       onednn::PostOps none; // no post-ops; the description names the chain
       none.summary = chainSummary(c.epilogue);
       auto kernel = std::make_unique<DnnlMatMulKernel>(c.p.geom, c.type, false, none,
                                                        std::vector<GemmC>(), 1.0f, c.what);
       kernel->setFirstExtra(c.anchor.inputs.size());
       kernel->setEpilogue(std::move(chain));
       return kernel;
     }},
    {"oneDNN (the packed GEMM where it runs the product)",
     [](const MatMulCase &c) {
       if (!useDnnl(c.p))
         return std::string("not float32/bfloat16, empty, or negative strides");
       return c.chainReason;
     },
     [](const MatMulCase &c, std::string &) -> std::unique_ptr<Kernel> {
       auto kernel = std::make_unique<DnnlMatMulKernel>(c.p.geom, c.type, c.constantB, c.post,
                                                        c.cArgs, c.scale, c.what, c.erfGelu);
       if (c.fused())
         kernel->setFirstExtra(c.anchor.inputs.size());
       return kernel;
     }},
    {"generic",
     [](const MatMulCase &c) {
       if (c.fused())
         return std::string("takes no chain");
       return unlessReason(c.p.dtype != CGC_DTYPE_BOOL, "no bool products");
     },
     [](const MatMulCase &c, std::string &) {
       std::unique_ptr<Kernel> kernel;
       visitDType(c.p.dtype, [&](auto tag) {
         using T = typename decltype(tag)::type;
         if constexpr (!std::is_same_v<T, Bool>)
           kernel = std::make_unique<GenericMatMulKernel<T>>(c.p.geom, c.what, c.p.alpha,
                                                             c.p.beta, c.p.c);
       });
       return kernel;
     }},
};

/// The first of kMatMulImplementations that takes `c` and creates a kernel.
std::unique_ptr<Kernel> selectMatMul(const MatMulCase &c, std::string &reason) {
  return selectImplementation(kMatMulImplementations, c, c.anchor.op, reason);
}

std::unique_ptr<Kernel> makeMatMul(const KernelDesc &desc, const KernelOptions &options) {
  static const std::vector<KernelDesc> kAlone;
  std::string reason;
  std::unique_ptr<Kernel> kernel = selectMatMul(MatMulCase(desc, kAlone, options), reason);
  if (!kernel)
    fail(reason);
  return kernel;
}

} // namespace

std::unique_ptr<Kernel> createFusedMatMul(const KernelDesc &anchor,
                                          const std::vector<KernelDesc> &epilogue,
                                          const KernelOptions &options, std::string &reason) {
  return selectMatMul(MatMulCase(anchor, epilogue, options), reason);
}

void registerMatMulOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::MatMul, makeMatMul, true});
  ops.push_back({OpKind::Gemm, makeMatMul, true});
}

} // namespace cgc::cpu
