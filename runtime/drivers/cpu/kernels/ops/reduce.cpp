//===- reduce.cpp - Reductions, arg reductions, softmax, global pools -----===//
//
// Reductions split the input's dimensions into kept ones (one output element
// each) and reduced ones. Each output accumulates over its reduced set in
// "row" order (innermost reduced dimension as a contiguous run) or, when the
// innermost input dimension is kept, in "column" order (a block of outputs
// advances together over the reduced positions, so loads stay unit-stride).
// Parallel over outputs; a reduction to few outputs splits the reduced range
// instead and merges partial results. Float sums accumulate in double.
//
// Softmax, log-softmax and hardmax work on [outer, axis, inner] views, with a
// vectorized path for inner == 1 (the last axis).
//
//===----------------------------------------------------------------------===//

#include "logistic.h"
#include "math.h"
#include "strided.h"

#include <algorithm>
#include <memory>

namespace cgc::cpu {
namespace {

//===----------------------------------------------------------------------===//
// Reduction functors: A init(); A step(A, C); A merge(A, A); R finish(A, n)
//===----------------------------------------------------------------------===//

template <class T> using WideOf =
    std::conditional_t<isFloatType<T>(), double,
                       std::conditional_t<std::is_signed_v<Compute<T>>, int64_t, uint64_t>>;

template <class T> CGC_INLINE WideOf<T> wideMul(WideOf<T> a, WideOf<T> b) {
  if constexpr (std::is_same_v<WideOf<T>, int64_t>)
    return int64_t(uint64_t(a) * uint64_t(b));
  else
    return a * b;
}

template <class T> CGC_INLINE WideOf<T> wideAbs(Compute<T> x) {
  using W = WideOf<T>;
  if constexpr (std::is_floating_point_v<W>)
    return std::fabs(W(x));
  else if constexpr (std::is_signed_v<W>)
    return x < 0 ? W(0) - W(x) : W(x);
  else
    return W(x);
}

template <class T> struct SumRed {
  using A = WideOf<T>;
  CGC_INLINE A init() const { return A(0); }
  CGC_INLINE A step(A a, Compute<T> x) const { return wrapAdd(a, A(x)); }
  CGC_INLINE A merge(A a, A b) const { return wrapAdd(a, b); }
  CGC_INLINE T finish(A a, int64_t) const { return convertWide(a); }
  CGC_INLINE static A wrapAdd(A a, A b) {
    if constexpr (std::is_same_v<A, int64_t>)
      return int64_t(uint64_t(a) + uint64_t(b));
    else
      return a + b;
  }
  CGC_INLINE static T convertWide(A a) {
    if constexpr (std::is_floating_point_v<A>)
      return store<T>(Compute<T>(a));
    else
      return store<T>(Compute<T>(a)); // modular, as the wrapped sum
  }
};

template <class T> struct MeanRed : SumRed<T> {
  using A = WideOf<T>;
  CGC_INLINE T finish(A a, int64_t n) const {
    if constexpr (std::is_floating_point_v<A>)
      return store<T>(Compute<T>(a / A(n)));
    else
      return n == 0 ? store<T>(Compute<T>(0)) : store<T>(Compute<T>(a / A(n)));
  }
};

template <class T> struct SumSquareRed : SumRed<T> {
  using A = WideOf<T>;
  CGC_INLINE A step(A a, Compute<T> x) const { return SumRed<T>::wrapAdd(a, wideMul<T>(A(x), A(x))); }
};

template <class T> struct L1Red : SumRed<T> {
  using A = WideOf<T>;
  CGC_INLINE A step(A a, Compute<T> x) const { return SumRed<T>::wrapAdd(a, wideAbs<T>(x)); }
};

/// Reductions whose result goes through a float function (l2, log_sum):
/// integer inputs accumulate exactly and convert at the end.
template <class T> struct L2Red : SumSquareRed<T> {
  using A = WideOf<T>;
  CGC_INLINE T finish(A a, int64_t) const { return convert<T>(std::sqrt(double(a))); }
};
template <class T> struct LogSumRed : SumRed<T> {
  using A = WideOf<T>;
  CGC_INLINE T finish(A a, int64_t) const { return convert<T>(std::log(double(a))); }
};

template <class T> struct ProdRed {
  using A = WideOf<T>;
  CGC_INLINE A init() const { return A(1); }
  CGC_INLINE A step(A a, Compute<T> x) const { return wideMul<T>(a, A(x)); }
  CGC_INLINE A merge(A a, A b) const { return wideMul<T>(a, b); }
  CGC_INLINE T finish(A a, int64_t) const { return store<T>(Compute<T>(a)); }
};

template <class T> struct MaxRed {
  using A = Compute<T>;
  CGC_INLINE A init() const {
    if constexpr (std::is_floating_point_v<A>)
      return -std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::lowest();
  }
  CGC_INLINE A step(A a, A x) const {
    if constexpr (std::is_floating_point_v<A>)
      return (x > a || x != x) && a == a ? x : a; // NaN sticks
    else
      return x > a ? x : a;
  }
  CGC_INLINE A merge(A a, A b) const { return step(a, b); }
  CGC_INLINE T finish(A a, int64_t) const { return store<T>(a); }
};

template <class T> struct MinRed {
  using A = Compute<T>;
  CGC_INLINE A init() const {
    if constexpr (std::is_floating_point_v<A>)
      return std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::max();
  }
  CGC_INLINE A step(A a, A x) const {
    if constexpr (std::is_floating_point_v<A>)
      return (x < a || x != x) && a == a ? x : a;
    else
      return x < a ? x : a;
  }
  CGC_INLINE A merge(A a, A b) const { return step(a, b); }
  CGC_INLINE T finish(A a, int64_t) const { return store<T>(a); }
};

/// log(sum(exp(x))) by the streaming (max, scaled sum) form.
template <class T> struct LogSumExpRed {
  struct A {
    double max, sum;
  };
  CGC_INLINE A init() const { return {-std::numeric_limits<double>::infinity(), 0.0}; }
  CGC_INLINE A step(A a, Compute<T> xc) const { return merge(a, A{double(xc), 1.0}); }
  CGC_INLINE A merge(A a, A b) const {
    if (b.sum == 0)
      return a;
    if (a.sum == 0)
      return b;
    if (std::isnan(a.max) || std::isnan(b.max))
      return {std::numeric_limits<double>::quiet_NaN(), 1.0};
    if (b.max > a.max)
      std::swap(a, b);
    if (a.max == std::numeric_limits<double>::infinity())
      return {a.max, 1.0};
    return {a.max, a.sum + b.sum * std::exp(b.max - a.max)};
  }
  CGC_INLINE T finish(A a, int64_t) const {
    if (a.sum == 0)
      return convert<T>(-std::numeric_limits<double>::infinity());
    return convert<T>(a.max + std::log(a.sum));
  }
};

/// (sum |x|^p)^(1/p) for global_lp_pool.
template <class T> struct LpRed {
  double p = 2;
  using A = double;
  CGC_INLINE A init() const { return 0.0; }
  CGC_INLINE A step(A a, Compute<T> x) const {
    double ax = std::fabs(double(x));
    return a + (p == 2 ? ax * ax : (p == 1 ? ax : std::pow(ax, p)));
  }
  CGC_INLINE A merge(A a, A b) const { return a + b; }
  CGC_INLINE T finish(A a, int64_t) const {
    return store<T>(Compute<T>(p == 2 ? std::sqrt(a) : (p == 1 ? a : std::pow(a, 1.0 / p))));
  }
};

//===----------------------------------------------------------------------===//
// The reduction engine
//===----------------------------------------------------------------------===//

/// Dimensions of one side (kept or reduced), coalesced, with input strides
/// (elements) and, for kept ones, output strides.
struct DimSet {
  std::vector<int64_t> size, in, out;
  int64_t count() const { return numElements(size); }
  void add(int64_t n, int64_t inStride, int64_t outStride) {
    if (n == 1)
      return;
    if (!size.empty() && in.back() == inStride * n && out.back() == outStride * n) {
      size.back() *= n;
      in.back() = inStride;
      out.back() = outStride;
      return;
    }
    size.push_back(n);
    in.push_back(inStride);
    out.push_back(outStride);
  }
  /// Offsets (input, output) of linear position `i`.
  void offsets(int64_t i, int64_t &inOff, int64_t &outOff) const {
    inOff = outOff = 0;
    for (size_t d = size.size(); d-- > 0;) {
      int64_t k = i % size[d];
      i /= size[d];
      inOff += k * in[d];
      outOff += k * out[d];
    }
  }
};

struct ReducePlan {
  DimSet kept, reduced;
  int64_t reducedCount = 1;
};

/// acc combined with the n contiguous elements at p, in 8 independent lanes
/// (so the loop vectorizes; merge is associative for every reducer).
template <class T, class Red, class A>
CGC_INLINE A rowLanes(const Red &red, const T *p, int64_t n, A acc) {
  constexpr int L = 8;
  A lanes[L];
  for (int l = 0; l < L; ++l)
    lanes[l] = red.init();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l)
      lanes[l] = red.step(lanes[l], load(p[i + l]));
  for (; i < n; ++i)
    lanes[0] = red.step(lanes[0], load(p[i]));
  for (int l = 0; l < L; ++l)
    acc = red.merge(acc, lanes[l]);
  return acc;
}
template <class T, class Red, class A>
CGC_TARGET_AVX512 A rowLanesAvx512(const Red &red, const T *p, int64_t n, A acc) {
  return rowLanes<T, Red, A>(red, p, n, acc);
}
template <class T, class Red, class A>
A rowLanesBase(const Red &red, const T *p, int64_t n, A acc) {
  return rowLanes<T, Red, A>(red, p, n, acc);
}

/// acc[i] = step(acc[i], p[i]) for a block of outputs (column order).
template <class T, class Red, class A>
CGC_INLINE void columnStep(const Red &red, A *acc, const T *p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] = red.step(acc[i], load(p[i]));
}
template <class T, class Red, class A>
CGC_TARGET_AVX512 void columnStepAvx512(const Red &red, A *acc, const T *p, int64_t n) {
  columnStep<T, Red, A>(red, acc, p, n);
}
template <class T, class Red, class A>
void columnStepBase(const Red &red, A *acc, const T *p, int64_t n) {
  columnStep<T, Red, A>(red, acc, p, n);
}

template <class T, class Red> class ReduceKernel final : public KernelBase {
  /// Outputs reduced together per pass over the reduced positions.
  static constexpr int64_t kColumnBlock = 256;
  /// Column reductions with more outputs than this split by outputs (the
  /// partial results of a split of the reduced positions would not fit in
  /// cache).
  static constexpr int64_t kMaxSplitColumns = 1 << 14;

public:
  ReduceKernel(ReducePlan plan, Red red, std::string description)
      : plan_(std::move(plan)), red_(red) {
    description_ = std::move(description);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *in = static_cast<const T *>(args.inputs[0]);
    T *out = static_cast<T *>(args.outputs[0]);
    const int64_t outputs = plan_.kept.count();
    const int64_t reduced = plan_.reducedCount;
    if (outputs == 0)
      return;
    const int threads = pool.size();
    const bool column = !plan_.kept.size.empty() && plan_.kept.in.back() == 1 &&
                        (plan_.reduced.in.empty() || plan_.reduced.in.back() != 1);
    if (outputs < 4 * threads && reduced >= 65536 && threads > 1) {
      splitReduced(in, out, pool, false);
      return;
    }
    const int64_t work = outputs * std::max<int64_t>(reduced, 1);
    if (column && threads > 1 && work >= 32768 && reduced >= 8 * threads &&
        outputs <= kMaxSplitColumns) {
      splitReduced(in, out, pool, true);
      return;
    }
    const int64_t grainOutputs = std::max<int64_t>(1, 32768 / std::max<int64_t>(reduced, 1));
    auto body = [&](int64_t begin, int64_t end) {
      if (column)
        columns(in, out, begin, end);
      else
        rows(in, out, begin, end);
    };
    if (work < 32768 || threads == 1)
      body(0, outputs);
    else
      pool.parallelFor(outputs, grainOutputs, body);
  }

private:
  using A = decltype(std::declval<Red>().init());

  /// Accumulates the reduced set starting at `base` for reduced positions
  /// [rb, re).
  A accumulate(const T *base, int64_t rb, int64_t re) const {
    A acc = red_.init();
    const DimSet &r = plan_.reduced;
    if (r.size.empty()) {
      if (rb < re)
        acc = red_.step(acc, load(base[0]));
      return acc;
    }
    const int64_t inner = r.size.back(), innerStride = r.in.back();
    int64_t pos = rb;
    while (pos < re) {
      int64_t inOff, outOff;
      r.offsets(pos, inOff, outOff);
      int64_t k = pos % inner;
      int64_t n = std::min(re - pos, inner - k);
      const T *p = base + inOff;
      if (innerStride == 1) {
        acc = (cpuHasAvx512() ? rowLanesAvx512<T, Red, A> : rowLanesBase<T, Red, A>)(red_, p, n,
                                                                                  acc);
      } else {
        for (int64_t i = 0; i < n; ++i)
          acc = red_.step(acc, load(p[i * innerStride]));
      }
      pos += n;
    }
    return acc;
  }

  void rows(const T *in, T *out, int64_t begin, int64_t end) const {
    for (int64_t o = begin; o < end; ++o) {
      int64_t inOff, outOff;
      plan_.kept.offsets(o, inOff, outOff);
      out[outOff] = red_.finish(accumulate(in + inOff, 0, plan_.reducedCount), plan_.reducedCount);
    }
  }

  /// Outputs [begin, end) in blocks along the innermost kept dimension
  /// (unit input stride), advancing together over the reduced positions.
  void columns(const T *in, T *out, int64_t begin, int64_t end) const {
    const DimSet &k = plan_.kept;
    const int64_t innerLen = k.size.back(), outInner = k.out.back();
    A acc[kColumnBlock];
    int64_t o = begin;
    while (o < end) {
      int64_t n = std::min({end - o, innerLen - o % innerLen, kColumnBlock});
      for (int64_t i = 0; i < n; ++i)
        acc[i] = red_.init();
      accumulateColumns(in, acc, o, o + n, 0, plan_.reducedCount);
      int64_t inOff, outOff;
      k.offsets(o, inOff, outOff);
      for (int64_t i = 0; i < n; ++i)
        out[outOff + i * outInner] = red_.finish(acc[i], plan_.reducedCount);
      o += n;
    }
  }

  /// Adds reduced positions [rb, re) of outputs [begin, end) (the innermost
  /// kept dimension contiguous) into acc[0, end - begin), a block of outputs
  /// at a time over the reduced range.
  void accumulateColumns(const T *in, A *acc, int64_t begin, int64_t end, int64_t rb,
                         int64_t re) const {
    const DimSet &k = plan_.kept, &r = plan_.reduced;
    const int64_t innerLen = k.size.back();
    auto step = cpuHasAvx512() ? columnStepAvx512<T, Red, A> : columnStepBase<T, Red, A>;
    int64_t o = begin;
    while (o < end) {
      int64_t n = std::min({end - o, innerLen - o % innerLen, kColumnBlock});
      int64_t inOff, outOff;
      k.offsets(o, inOff, outOff);
      for (int64_t rp = rb; rp < re; ++rp) {
        int64_t rin, rout;
        r.offsets(rp, rin, rout);
        step(red_, acc + (o - begin), in + inOff + rin, n);
      }
      o += n;
    }
  }

  /// Threads take slices of the reduced range for every output; partial
  /// results merge in order. Used for few outputs with many reduced
  /// elements, and for column reductions (`columns`: global average pooling
  /// of channels-last planes), whose slices are bands of rows: splitting
  /// their outputs (channel ranges) instead had every thread read every
  /// row, half of them from the other core's cache (EfficientNet-B0's
  /// 32-channel 112x112 pooling: 69 us on 1 thread, 290 us on 2).
  void splitReduced(const T *in, T *out, ThreadPool &pool, bool columns) const {
    const int64_t outputs = plan_.kept.count();
    const int threads = pool.size();
    // Each thread's partial results in cache lines of their own: a line
    // shared by two slices moved between the cores on every reduced row
    // (EfficientNet-B0's 32-channel 112x112 pooling: 118 us at 2 threads,
    // 63 at 1).
    static_assert(std::is_trivially_copyable_v<A> && std::is_trivially_destructible_v<A>);
    std::vector<std::unique_ptr<AlignedBuffer>> slices;
    for (int t = 0; t < threads; ++t) {
      slices.push_back(std::make_unique<AlignedBuffer>(size_t(outputs) * sizeof(A)));
      std::uninitialized_fill_n(static_cast<A *>(slices.back()->data()), outputs, red_.init());
    }
    auto partialAt = [&](int t) { return static_cast<A *>(slices[size_t(t)]->data()); };
    const int64_t reduced = plan_.reducedCount;
    pool.parallelFor(threads, 1, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        int64_t rb = reduced * t / threads, re = reduced * (t + 1) / threads;
        A *slice = partialAt(int(t));
        if (columns) {
          accumulateColumns(in, slice, 0, outputs, rb, re);
          continue;
        }
        for (int64_t o = 0; o < outputs; ++o) {
          int64_t inOff, outOff;
          plan_.kept.offsets(o, inOff, outOff);
          slice[o] = accumulate(in + inOff, rb, re);
        }
      }
    });
    for (int64_t o = 0; o < outputs; ++o) {
      A acc = partialAt(0)[o];
      for (int t = 1; t < threads; ++t)
        acc = red_.merge(acc, partialAt(t)[o]);
      int64_t inOff, outOff;
      plan_.kept.offsets(o, inOff, outOff);
      out[outOff] = red_.finish(acc, reduced);
    }
  }

  ReducePlan plan_;
  Red red_;
};

/// Builds the plan of reducing `in` over `reducedMask` into `out` (whose
/// dimensions are the kept ones, with or without size-1 placeholders).
ReducePlan makeReducePlan(const KernelOperand &in, const std::vector<bool> &reducedMask,
                          const KernelOperand &out, bool keepdims) {
  ReducePlan plan;
  std::vector<int64_t> inStrides = in.effectiveStrides();
  std::vector<int64_t> outStrides = out.effectiveStrides();
  size_t outDim = 0;
  // Kept dims in order (their output strides); reduced dims likewise.
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (reducedMask[d]) {
      plan.reduced.add(in.shape[d], inStrides[d], 0);
      if (keepdims)
        ++outDim;
    } else {
      plan.kept.add(in.shape[d], inStrides[d], outStrides[outDim]);
      ++outDim;
    }
  }
  plan.reducedCount = 1;
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (reducedMask[d])
      plan.reducedCount *= in.shape[d];
  return plan;
}

template <template <class> class Red, class Extra = int>
std::unique_ptr<Kernel> makeReduceFor(const DescReader &r, const KernelOperand &in,
                                      const ReducePlan &plan, const std::string &description,
                                      Extra extra = Extra()) {
  std::unique_ptr<Kernel> kernel;
  visitDType(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, Bool>) {
      Red<T> red;
      if constexpr (std::is_same_v<Red<T>, LpRed<T>>)
        red.p = double(extra);
      kernel = std::make_unique<ReduceKernel<T, Red<T>>>(plan, red, description);
    }
  });
  if (!kernel)
    r.error(cat("element type ", dtypeName(in.dtype), " is not supported"));
  return kernel;
}

std::unique_ptr<Kernel> makeReduction(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  r.expectDType(in, "input", DTypeClass::Numeric);
  const KernelOperand &out = r.output(0);
  r.expectSameDType(in, "input", out, "output");
  std::vector<int64_t> axes = r.getInts("axes", std::vector<int64_t>{});
  bool keepdims = r.getBool("keepdims", true);
  const int64_t rank = int64_t(in.shape.size());
  std::vector<bool> mask(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    if (a < 0 || a >= rank)
      r.error(cat("axis ", a, " is out of range for rank ", rank));
    if (mask[size_t(a)])
      r.error(cat("axis ", a, " is repeated"));
    mask[size_t(a)] = true;
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!mask[size_t(d)])
      shape.push_back(in.shape[size_t(d)]);
    else if (keepdims)
      shape.push_back(1);
  r.expectShape(out, "output", shape);
  ReducePlan plan = makeReducePlan(in, mask, out, keepdims);
  std::string description = cat(desc.op.substr(7), " ", dtypeName(in.dtype), " ",
                                shapeStr(in.shape), " -> ", shapeStr(out.shape));
  const std::string &op = desc.op;
  if (opKindOf(op) == OpKind::ReduceSum)
    return makeReduceFor<SumRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceMean)
    return makeReduceFor<MeanRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceMax)
    return makeReduceFor<MaxRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceMin)
    return makeReduceFor<MinRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceProd)
    return makeReduceFor<ProdRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceL1)
    return makeReduceFor<L1Red>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceL2)
    return makeReduceFor<L2Red>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceLogSum)
    return makeReduceFor<LogSumRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceLogSumExp)
    return makeReduceFor<LogSumExpRed>(r, in, plan, description);
  if (opKindOf(op) == OpKind::ReduceSumSquare)
    return makeReduceFor<SumSquareRed>(r, in, plan, description);
  r.error("unknown reduction");
}

std::unique_ptr<Kernel> makeGlobalPool(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  r.expectDType(in, "input", DTypeClass::Float);
  const KernelOperand &out = r.output(0);
  r.expectSameDType(in, "input", out, "output");
  if (in.shape.size() < 3)
    r.error(cat("input must be N x C x D1 x ... (rank >= 3), got rank ", in.shape.size()));
  std::vector<int64_t> shape = in.shape;
  std::vector<bool> mask(in.shape.size(), false);
  for (size_t d = 2; d < shape.size(); ++d) {
    shape[d] = 1;
    mask[d] = true;
  }
  r.expectShape(out, "output", shape);
  ReducePlan plan = makeReducePlan(in, mask, out, true);
  std::string description = cat(desc.op.substr(7), " ", dtypeName(in.dtype), " ",
                                shapeStr(in.shape));
  if (desc.kind() == OpKind::GlobalAvgPool)
    return makeReduceFor<MeanRed>(r, in, plan, description);
  if (desc.kind() == OpKind::GlobalMaxPool)
    return makeReduceFor<MaxRed>(r, in, plan, description);
  int64_t p = r.getInt("p", 2);
  if (p < 1)
    r.error(cat("p must be >= 1, got ", p));
  return makeReduceFor<LpRed>(r, in, plan, description, p);
}

//===----------------------------------------------------------------------===//
// Arg reductions
//===----------------------------------------------------------------------===//

template <class T> class ArgKernel final : public KernelBase {
public:
  ArgKernel(const KernelOperand &in, const KernelOperand &out, int64_t axis, bool isMax,
            bool last, bool keepdims)
      : isMax_(isMax), last_(last) {
    std::vector<int64_t> inStrides = in.effectiveStrides(), outStrides = out.effectiveStrides();
    size_t od = 0;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      if (int64_t(d) == axis) {
        axisLen_ = in.shape[d];
        axisStride_ = inStrides[d];
        if (keepdims)
          ++od;
        continue;
      }
      kept_.add(in.shape[d], inStrides[d], outStrides[od]);
      ++od;
    }
    description_ = cat(isMax ? "argmax " : "argmin ", dtypeName(in.dtype), " ",
                       shapeStr(in.shape), " axis ", axis);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *in = static_cast<const T *>(args.inputs[0]);
    int64_t *out = static_cast<int64_t *>(args.outputs[0]);
    int64_t outputs = kept_.count();
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        int64_t inOff, outOff;
        kept_.offsets(o, inOff, outOff);
        out[outOff] = isMax_ ? scan<true>(in + inOff) : scan<false>(in + inOff);
      }
    };
    int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(axisLen_, 1));
    pool.parallelFor(outputs, grain, body);
  }

private:
  template <bool Max> int64_t scan(const T *p) const {
    using C = Compute<T>;
    C best = load(p[0]);
    int64_t index = 0;
    for (int64_t i = 1; i < axisLen_; ++i) {
      C x = load(p[i * axisStride_]);
      bool take;
      bool xNaN = false, bestNaN = false;
      if constexpr (std::is_floating_point_v<C>) {
        xNaN = x != x;
        bestNaN = best != best;
      }
      if (bestNaN)
        take = last_ && xNaN; // NaN wins (numpy); ties among NaNs by index rule
      else if (xNaN)
        take = true;
      else if (last_)
        take = Max ? x >= best : x <= best;
      else
        take = Max ? x > best : x < best;
      if (take) {
        best = x;
        index = i;
      }
    }
    return index;
  }

  bool isMax_, last_;
  int64_t axisLen_ = 1, axisStride_ = 1;
  DimSet kept_;
};

std::unique_ptr<Kernel> makeArgReduction(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  r.expectDType(in, "input", DTypeClass::Numeric);
  const KernelOperand &out = r.output(0);
  if (out.dtype != CGC_DTYPE_INT64)
    r.error(cat("output must be int64, got ", dtypeName(out.dtype)));
  int64_t axis = r.getInt("axis");
  bool keepdims = r.getBool("keepdims", true);
  bool last = r.getBool("select_last_index", false);
  int64_t rank = int64_t(in.shape.size());
  if (axis < 0 || axis >= rank)
    r.error(cat("axis ", axis, " is out of range for rank ", rank));
  std::vector<int64_t> shape = in.shape;
  if (keepdims)
    shape[size_t(axis)] = 1;
  else
    shape.erase(shape.begin() + axis);
  r.expectShape(out, "output", shape);
  if (in.shape[size_t(axis)] == 0 && numElements(shape) != 0)
    r.error(cat("cannot take ", desc.op.substr(7), " over the empty axis ", axis));
  std::unique_ptr<Kernel> kernel;
  bool isMax = desc.kind() == OpKind::ArgMax;
  visitDType(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, Bool>)
      kernel = std::make_unique<ArgKernel<T>>(in, out, axis, isMax, last, keepdims);
  });
  return kernel;
}

//===----------------------------------------------------------------------===//
// Softmax family (contiguous operands; strided ones are packed by the
// registry)
//===----------------------------------------------------------------------===//

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

/// One contiguous row: softmax / log-softmax from `in` to `out` (which may
/// alias). Reductions keep 16 independent lanes so the loops vectorize
/// without reassociation flags; float rows use the vectorizable exp.
template <class C> CGC_INLINE C expOfC(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastmath::expf(x);
  else
    return std::exp(x);
}

template <class C>
CGC_INLINE void softRowBody(SoftKind kind, const C *in, C *out, int64_t n) {
  constexpr int L = 16;
  const C inf = std::numeric_limits<C>::infinity();
  C lanes[L];
  for (int l = 0; l < L; ++l)
    lanes[l] = -inf;
  bool nan = false;
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      C v = in[i + l];
      nan |= v != v;
      lanes[l] = v > lanes[l] ? v : lanes[l];
    }
  C m = -inf;
  for (; i < n; ++i) {
    nan |= in[i] != in[i];
    m = in[i] > m ? in[i] : m;
  }
  for (int l = 0; l < L; ++l)
    m = lanes[l] > m ? lanes[l] : m;
  if (nan || m == inf) {
    // NaN in, or inf - inf: NaN out, as the formula gives.
    for (int64_t k = 0; k < n; ++k)
      out[k] = std::numeric_limits<C>::quiet_NaN();
    return;
  }
  if (m == -inf)
    m = 0; // all -inf: exp gives zeros, the sum is 0 and the result NaN
  // exp(x - m) into out (softmax) or just summed (log-softmax). Terms
  // below exp(-87) (1.6e-38, next to a sum >= 1) count as 0: computing them
  // yields subnormal floats, whose arithmetic made BERT's attention softmax
  // (masked and far-below-max scores) 2.3x slower (284 vs 126 us per layer).
  C sums[L] = {};
  i = 0;
  auto term = [&](C v) {
    C d = v - m;
    if constexpr (std::is_same_v<C, float>) {
      C e = expOfC<C>(d < C(-87) ? C(-87) : d);
      return d < C(-87) ? C(0) : e;
    } else {
      return expOfC<C>(d);
    }
  };
  if (kind == SoftKind::Softmax) {
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) {
        C e = term(in[i + l]);
        out[i + l] = e;
        sums[l] += e;
      }
    for (; i < n; ++i) {
      C e = term(in[i]);
      out[i] = e;
      sums[0] += e;
    }
  } else {
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; ++l)
        sums[l] += term(in[i + l]);
    for (; i < n; ++i)
      sums[0] += term(in[i]);
  }
  double total = 0;
  for (int l = 0; l < L; ++l)
    total += double(sums[l]);
  if (kind == SoftKind::Softmax) {
    C inv = C(1.0 / total);
    for (int64_t k = 0; k < n; ++k)
      out[k] *= inv;
  } else {
    C shift = m + C(std::log(total));
    for (int64_t k = 0; k < n; ++k)
      out[k] = in[k] - shift;
  }
}

/// exp(v - m) in `lanes`, 0 in the others and below exp(-87) (subnormal
/// arithmetic is slow: see softRowBody).
[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 softTerm(__m512 v, __m512 m,
                                                                __mmask16 lanes) {
  const __m512 d = _mm512_sub_ps(v, m);
  const __mmask16 keep = _mm512_mask_cmp_ps_mask(lanes, d, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);
  return _mm512_maskz_mov_ps(keep, expMinusAbs(d));
}

/// softRowBody<float> on zmm registers: exp(x - m) by logistic.h's
/// exp(-|d|) (13 operations, where the autovectorized fastmath::expf takes
/// about 25), the lane reductions by the reduce instructions. The same
/// special cases: NaN in or a +inf maximum make the row NaN, terms below
/// exp(-87) count as 0, each lane's sum in float and their total in
/// double. BERT's attention softmax (128 x 128 per head) 1.6 -> 0.75 ms per
/// run at 1 thread.
CGC_TARGET_AVX512 void softRowFloatAvx512(SoftKind kind, const float *in, float *out, int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (n - full)) - 1);
  __m512 mx = _mm512_set1_ps(-inf);
  __mmask16 nan = 0;
  for (int64_t i = 0; i < full; i += 16) {
    const __m512 v = _mm512_loadu_ps(in + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    mx = _mm512_max_ps(mx, v);
  }
  if (tail) {
    const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-inf), tail, in + full);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    mx = _mm512_max_ps(mx, v);
  }
  float m = _mm512_reduce_max_ps(mx);
  if (nan || m == inf) {
    // NaN in, or inf - inf: NaN out, as the formula gives.
    std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (m == -inf)
    m = 0; // all -inf: exp gives zeros, the sum is 0 and the result NaN
  const __m512 mv = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < full; i += 16) {
    const __m512 e = softTerm(_mm512_loadu_ps(in + i), mv, 0xffff);
    if (kind == SoftKind::Softmax)
      _mm512_storeu_ps(out + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail) {
    const __m512 e = softTerm(_mm512_maskz_loadu_ps(tail, in + full), mv, tail);
    if (kind == SoftKind::Softmax)
      _mm512_mask_storeu_ps(out + full, tail, e);
    sum = _mm512_add_ps(sum, e);
  }
  const double total =
      _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(sum)),
                                         _mm512_cvtps_pd(_mm512_extractf32x8_ps(sum, 1))));
  if (kind == SoftKind::Softmax) {
    const __m512 inv = _mm512_set1_ps(float(1.0 / total));
    for (int64_t i = 0; i < full; i += 16)
      _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(out + i), inv));
    if (tail)
      _mm512_mask_storeu_ps(out + full, tail,
                            _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, out + full), inv));
  } else {
    const __m512 shift = _mm512_set1_ps(m + float(std::log(total)));
    for (int64_t i = 0; i < full; i += 16)
      _mm512_storeu_ps(out + i, _mm512_sub_ps(_mm512_loadu_ps(in + i), shift));
    if (tail)
      _mm512_mask_storeu_ps(out + full, tail,
                            _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, in + full), shift));
  }
}
void softRowFloatBase(SoftKind kind, const float *in, float *out, int64_t n) {
  softRowBody<float>(kind, in, out, n);
}

template <class T> class SoftKernel final : public KernelBase {
public:
  SoftKernel(SoftKind kind, const std::vector<int64_t> &shape, int64_t axis) : kind_(kind) {
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer_ *= shape[size_t(d)];
    len_ = shape[size_t(axis)];
    for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
      inner_ *= shape[d];
    const char *names[] = {"softmax", "log_softmax", "hardmax"};
    description_ = cat(names[int(kind)], " ", shapeStr(shape), " axis ", axis);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *in = static_cast<const T *>(args.inputs[0]);
    T *out = static_cast<T *>(args.outputs[0]);
    if (outer_ * len_ * inner_ == 0)
      return;
    const int64_t rows = outer_ * inner_;
    const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(len_, 1));
    pool.parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      using C = Compute<T>;
      std::vector<C> buf(static_cast<size_t>(len_));
      for (int64_t row = begin; row < end; ++row) {
        int64_t o = row / inner_, j = row % inner_;
        const T *src = in + o * len_ * inner_ + j;
        T *dst = out + o * len_ * inner_ + j;
        if (kind_ == SoftKind::Hardmax) {
          int64_t best = 0;
          C bv = load(src[0]);
          for (int64_t i = 1; i < len_; ++i) {
            C x = load(src[i * inner_]);
            if (x > bv) {
              bv = x;
              best = i;
            }
          }
          for (int64_t i = 0; i < len_; ++i)
            dst[i * inner_] = store<T>(C(i == best ? 1 : 0));
          continue;
        }
        if constexpr (std::is_same_v<T, float>) {
          if (inner_ == 1) {
            (cpuHasAvx512() ? softRowFloatAvx512 : softRowFloatBase)(kind_, src, dst, len_);
            continue;
          }
        }
        for (int64_t i = 0; i < len_; ++i)
          buf[size_t(i)] = load(src[i * inner_]);
        if constexpr (std::is_same_v<C, float>)
          (cpuHasAvx512() ? softRowFloatAvx512 : softRowFloatBase)(kind_, buf.data(), buf.data(),
                                                                  len_);
        else
          softRowBody<C>(kind_, buf.data(), buf.data(), len_);
        for (int64_t i = 0; i < len_; ++i)
          dst[i * inner_] = store<T>(buf[size_t(i)]);
      }
    });
  }

private:
  SoftKind kind_;
  int64_t outer_, len_, inner_;
};

std::unique_ptr<Kernel> makeSoft(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  r.expectDType(in, "input", DTypeClass::Float);
  const KernelOperand &out = r.output(0);
  r.expectSameDType(in, "input", out, "output");
  r.expectShape(out, "output", in.shape);
  int64_t axis = r.getInt("axis");
  if (axis < 0 || axis >= int64_t(in.shape.size()))
    r.error(cat("axis ", axis, " is out of range for rank ", in.shape.size()));
  SoftKind kind = desc.kind() == OpKind::Softmax       ? SoftKind::Softmax
                  : desc.kind() == OpKind::LogSoftmax ? SoftKind::LogSoftmax
                                                    : SoftKind::Hardmax;
  std::unique_ptr<Kernel> kernel;
  visitDType(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<SoftKernel<T>>(kind, in.shape, axis);
  });
  return kernel;
}

} // namespace

void softmaxRowFloat(const float *in, float *out, int64_t n) {
  (cpuHasAvx512() ? softRowFloatAvx512 : softRowFloatBase)(SoftKind::Softmax, in, out, n);
}

void registerReductionOps(std::vector<OpEntry> &ops) {
  for (OpKind name :
       {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
        OpKind::ReduceProd, OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceLogSum,
        OpKind::ReduceLogSumExp, OpKind::ReduceSumSquare})
    ops.push_back({name, makeReduction, true});
  for (OpKind name : {OpKind::GlobalAvgPool, OpKind::GlobalMaxPool,
                           OpKind::GlobalLpPool})
    ops.push_back({name, makeGlobalPool, true});
  ops.push_back({OpKind::ArgMax, makeArgReduction, true});
  ops.push_back({OpKind::ArgMin, makeArgReduction, true});
  for (OpKind name : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    ops.push_back({name, makeSoft, false});
}

} // namespace cgc::cpu
