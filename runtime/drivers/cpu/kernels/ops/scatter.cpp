//===- scatter.cpp - cumsum, scatter_elements, scatter_nd, top_k ----------===//
//
// Operands are contiguous here (the registry packs strided ones). Scatters
// copy `data` to the output and then apply the updates in row-major order of
// the indices, on one thread: with reductions or repeated indices the order
// is part of the result. An index outside its dimension (after wrapping
// negatives) fails the run with a RunError naming the op and the index
// (kernels.h); the updates before it have been applied.
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace cgc::cpu {
namespace {

template <class I> int64_t readIndex(const void *base, int64_t i) {
  return int64_t(static_cast<const I *>(base)[i]);
}

int64_t indexAt(bool wide, const void *base, int64_t i) {
  return wide ? readIndex<int64_t>(base, i) : readIndex<int32_t>(base, i);
}

/// Outer x axis x inner view of a contiguous shape.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
  AxisView(const std::vector<int64_t> &shape, size_t axis) {
    for (size_t d = 0; d < axis; ++d)
      outer *= shape[d];
    len = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= shape[d];
  }
};

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

template <class T> class CumSumKernel final : public KernelBase {
  using W = std::conditional_t<isFloatType<T>(), double,
                               std::conditional_t<std::is_signed_v<Compute<T>>, int64_t, uint64_t>>;

public:
  CumSumKernel(const std::vector<int64_t> &shape, size_t axis, bool exclusive, bool reverse)
      : view_(shape, axis), exclusive_(exclusive), reverse_(reverse) {
    description_ = cat("cumsum ", shapeStr(shape), " axis ", axis, exclusive ? " exclusive" : "",
                       reverse ? " reverse" : "");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *y = static_cast<T *>(args.outputs[0]);
    const int64_t outer = view_.outer, len = view_.len, inner = view_.inner;
    if (outer * len * inner == 0)
      return;
    // Each (outer, inner) column is independent; blocks of inner positions
    // advance together so loads stay unit-stride.
    pool.parallelFor(outer, std::max<int64_t>(1, 16384 / (len * inner)), [&](int64_t b, int64_t e) {
      std::vector<W> acc(static_cast<size_t>(inner));
      for (int64_t o = b; o < e; ++o) {
        std::fill(acc.begin(), acc.end(), W(0));
        for (int64_t step = 0; step < len; ++step) {
          int64_t i = reverse_ ? len - 1 - step : step;
          const T *src = x + (o * len + i) * inner;
          T *dst = y + (o * len + i) * inner;
          for (int64_t j = 0; j < inner; ++j) {
            W v = W(load(src[j]));
            if (exclusive_) {
              dst[j] = narrow(acc[size_t(j)]);
              acc[size_t(j)] = add(acc[size_t(j)], v);
            } else {
              acc[size_t(j)] = add(acc[size_t(j)], v);
              dst[j] = narrow(acc[size_t(j)]);
            }
          }
        }
      }
    });
  }

private:
  static W add(W a, W b) {
    if constexpr (std::is_same_v<W, int64_t>)
      return int64_t(uint64_t(a) + uint64_t(b));
    else
      return a + b;
  }
  static T narrow(W v) { return store<T>(Compute<T>(v)); }

  AxisView view_;
  bool exclusive_, reverse_;
};

std::unique_ptr<Kernel> makeCumSum(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", DTypeClass::Numeric);
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", x.shape);
  int64_t axis = r.getInt("axis");
  if (axis < 0 || axis >= int64_t(x.shape.size()))
    r.error(cat("axis ", axis, " is out of range for rank ", x.shape.size()));
  bool exclusive = r.getBool("exclusive", false), reverse = r.getBool("reverse", false);
  std::unique_ptr<Kernel> kernel;
  visitDType(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, Bool>)
      kernel = std::make_unique<CumSumKernel<T>>(x.shape, size_t(axis), exclusive, reverse);
  });
  return kernel;
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

enum class Reduction { None, Add, Mul, Max, Min };

Reduction parseReduction(const DescReader &r, cgc_dtype_t dtype) {
  std::string s = r.getString("reduction", "none", {"none", "add", "mul", "max", "min"});
  Reduction red = s == "add"   ? Reduction::Add
                  : s == "mul" ? Reduction::Mul
                  : s == "max" ? Reduction::Max
                  : s == "min" ? Reduction::Min
                               : Reduction::None;
  if (red != Reduction::None && dtype == CGC_DTYPE_BOOL)
    r.error(cat("reduction '", s, "' is not defined for bool"));
  return red;
}

/// dst = combine(dst, src) for one element of type T.
template <class T> void combine(Reduction red, T &dst, const T &src) {
  if constexpr (std::is_same_v<T, Bool>) {
    dst = src;
  } else {
    using C = Compute<T>;
    C a = load(dst), b = load(src);
    C r;
    switch (red) {
    case Reduction::None: r = b; break;
    case Reduction::Add:
      if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
        r = C(std::make_unsigned_t<C>(a) + std::make_unsigned_t<C>(b));
      else
        r = C(a + b);
      break;
    case Reduction::Mul:
      if constexpr (std::is_integral_v<C>) {
        using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
        r = C(U(a) * U(b));
      } else {
        r = a * b;
      }
      break;
    case Reduction::Max: r = b > a ? b : a; break;
    case Reduction::Min: r = b < a ? b : a; break;
    }
    dst = store<T>(r);
  }
}

template <class T> class ScatterElementsKernel final : public KernelBase {
public:
  ScatterElementsKernel(const KernelOperand &data, const KernelOperand &indices, size_t axis,
                        Reduction red)
      : dataShape_(data.shape), idxShape_(indices.shape), axis_(axis), red_(red),
        wide_(indices.dtype == CGC_DTYPE_INT64) {
    dataStrides_ = contiguousStrides(data.shape);
    description_ = cat("scatter_elements ", dtypeName(data.dtype), " ", shapeStr(data.shape),
                       " axis ", axis);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *data = static_cast<const T *>(args.inputs[0]);
    const void *idx = args.inputs[1];
    const T *upd = static_cast<const T *>(args.inputs[2]);
    T *out = static_cast<T *>(args.outputs[0]);
    int64_t n = numElements(dataShape_);
    if (out != data && n > 0)
      std::memcpy(out, data, size_t(n) * sizeof(T));
    const int64_t total = numElements(idxShape_);
    const size_t rank = idxShape_.size();
    const int64_t len = dataShape_[axis_];
    std::vector<int64_t> c(rank, 0);
    for (int64_t p = 0; p < total; ++p) {
      const int64_t index = indexAt(wide_, idx, p);
      int64_t k = index < 0 ? index + len : index;
      if (k < 0 || k >= len)
        throwIndexOutOfRange(opName(OpKind::ScatterElements), index, p, idxShape_, int64_t(axis_), len);
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d)
        off += (d == axis_ ? k : c[d]) * dataStrides_[d];
      combine(red_, out[off], upd[p]);
      for (size_t d = rank; d-- > 0;) {
        if (++c[d] < idxShape_[d])
          break;
        c[d] = 0;
      }
    }
  }

private:
  std::vector<int64_t> dataShape_, idxShape_, dataStrides_;
  size_t axis_;
  Reduction red_;
  bool wide_;
};

std::unique_ptr<Kernel> makeScatterElements(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(3, 3);
  r.expectOutputs(1, 1);
  const KernelOperand &data = r.input(0, "data"), &indices = r.input(1, "indices"),
                      &updates = r.input(2, "updates");
  r.expectDType(indices, "indices", DTypeClass::Index);
  r.expectSameDType(data, "data", updates, "updates");
  r.expectSameDType(data, "data", r.output(0), "output");
  r.expectShape(r.output(0), "output", data.shape);
  int64_t axis = r.getInt("axis", 0);
  if (indices.shape.size() != data.shape.size())
    r.error(cat("indices rank ", indices.shape.size(), " must equal data rank ", data.shape.size()));
  if (indices.shape != updates.shape)
    r.error(cat("indices shape ", shapeStr(indices.shape), " must equal updates shape ",
                shapeStr(updates.shape)));
  if (axis < 0 || axis >= int64_t(data.shape.size()))
    r.error(cat("axis ", axis, " is out of range for rank ", data.shape.size()));
  for (size_t d = 0; d < data.shape.size(); ++d)
    if (int64_t(d) != axis && indices.shape[d] > data.shape[d])
      r.error(cat("indices dimension ", d, " (", indices.shape[d], ") exceeds the data dimension (",
                  data.shape[d], ")"));
  Reduction red = parseReduction(r, data.dtype);
  std::unique_ptr<Kernel> kernel;
  visitDType(data.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<ScatterElementsKernel<T>>(data, indices, size_t(axis), red);
  });
  return kernel;
}

template <class T> class ScatterNDKernel final : public KernelBase {
public:
  ScatterNDKernel(const KernelOperand &data, const KernelOperand &indices, Reduction red)
      : dataShape_(data.shape), idxShape_(indices.shape), red_(red),
        wide_(indices.dtype == CGC_DTYPE_INT64) {
    k_ = indices.shape.back();
    tuples_ = numElements(indices.shape) / std::max<int64_t>(k_, 1);
    if (k_ == 0)
      tuples_ = numElements(std::vector<int64_t>(indices.shape.begin(), indices.shape.end() - 1));
    slice_ = numElements(std::vector<int64_t>(data.shape.begin() + k_, data.shape.end()));
    dataStrides_ = contiguousStrides(data.shape);
    description_ = cat("scatter_nd ", dtypeName(data.dtype), " ", shapeStr(data.shape), " by ",
                       shapeStr(indices.shape));
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *data = static_cast<const T *>(args.inputs[0]);
    const void *idx = args.inputs[1];
    const T *upd = static_cast<const T *>(args.inputs[2]);
    T *out = static_cast<T *>(args.outputs[0]);
    int64_t n = numElements(dataShape_);
    if (out != data && n > 0)
      std::memcpy(out, data, size_t(n) * sizeof(T));
    for (int64_t t = 0; t < tuples_; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k_; ++j) {
        const int64_t index = indexAt(wide_, idx, t * k_ + j);
        int64_t dim = dataShape_[size_t(j)];
        int64_t v = index < 0 ? index + dim : index;
        if (v < 0 || v >= dim)
          throwIndexOutOfRange(opName(OpKind::ScatterND), index, t * k_ + j, idxShape_, j, dim);
        off += v * dataStrides_[size_t(j)];
      }
      const T *src = upd + t * slice_;
      T *dst = out + off;
      if (red_ == Reduction::None)
        std::memcpy(dst, src, size_t(slice_) * sizeof(T));
      else
        for (int64_t i = 0; i < slice_; ++i)
          combine(red_, dst[i], src[i]);
    }
  }

private:
  std::vector<int64_t> dataShape_, idxShape_, dataStrides_;
  Reduction red_;
  bool wide_;
  int64_t k_ = 0, tuples_ = 0, slice_ = 1;
};

std::unique_ptr<Kernel> makeScatterND(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(3, 3);
  r.expectOutputs(1, 1);
  const KernelOperand &data = r.input(0, "data"), &indices = r.input(1, "indices"),
                      &updates = r.input(2, "updates");
  r.expectDType(indices, "indices", DTypeClass::Index);
  r.expectSameDType(data, "data", updates, "updates");
  r.expectSameDType(data, "data", r.output(0), "output");
  r.expectShape(r.output(0), "output", data.shape);
  if (indices.shape.empty())
    r.error("indices must have rank >= 1");
  int64_t k = indices.shape.back();
  if (k > int64_t(data.shape.size()))
    r.error(cat("index tuples of length ", k, " exceed the data rank ", data.shape.size()));
  std::vector<int64_t> expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  r.expectShape(updates, "updates", expected);
  Reduction red = parseReduction(r, data.dtype);
  std::unique_ptr<Kernel> kernel;
  visitDType(data.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<ScatterNDKernel<T>>(data, indices, red);
  });
  return kernel;
}

//===----------------------------------------------------------------------===//
// top_k
//===----------------------------------------------------------------------===//

template <class T> class TopKKernel final : public KernelBase {
  using C = Compute<T>;

public:
  TopKKernel(const std::vector<int64_t> &shape, size_t axis, int64_t k, bool largest)
      : view_(shape, axis), k_(k), largest_(largest) {
    description_ = cat("top_k ", k, largest ? " largest " : " smallest ", shapeStr(shape),
                       " axis ", axis);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *values = static_cast<T *>(args.outputs[0]);
    int64_t *indices = static_cast<int64_t *>(args.outputs[1]);
    const int64_t outer = view_.outer, len = view_.len, inner = view_.inner;
    const int64_t slices = outer * inner;
    if (slices == 0 || k_ == 0)
      return;
    pool.parallelFor(slices, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)),
                     [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(len));
      std::vector<C> v(static_cast<size_t>(len));
      for (int64_t s = b; s < e; ++s) {
        int64_t o = s / inner, j = s % inner;
        const T *src = x + o * len * inner + j;
        for (int64_t i = 0; i < len; ++i)
          v[size_t(i)] = load(src[i * inner]);
        std::iota(order.begin(), order.end(), int64_t(0));
        // NaN is larger than every number; equal values keep index order.
        auto before = [&](int64_t a, int64_t c) {
          C va = v[size_t(a)], vc = v[size_t(c)];
          bool na = false, nc = false;
          if constexpr (std::is_floating_point_v<C>) {
            na = va != va;
            nc = vc != vc;
          }
          if (na || nc) {
            if (na && nc)
              return a < c;
            return largest_ ? na : nc;
          }
          if (va != vc)
            return largest_ ? va > vc : va < vc;
          return a < c;
        };
        std::partial_sort(order.begin(), order.begin() + k_, order.end(), before);
        T *vo = values + o * k_ * inner + j;
        int64_t *io = indices + o * k_ * inner + j;
        for (int64_t i = 0; i < k_; ++i) {
          vo[i * inner] = src[order[size_t(i)] * inner];
          io[i * inner] = order[size_t(i)];
        }
      }
    });
  }

private:
  AxisView view_;
  int64_t k_;
  bool largest_;
};

std::unique_ptr<Kernel> makeTopK(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(2, 2);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", DTypeClass::Numeric);
  int64_t axis = r.getInt("axis"), k = r.getInt("k");
  bool largest = r.getBool("largest", true);
  if (axis < 0 || axis >= int64_t(x.shape.size()))
    r.error(cat("axis ", axis, " is out of range for rank ", x.shape.size()));
  if (k < 0 || k > x.shape[size_t(axis)])
    r.error(cat("k = ", k, " must be in [0, ", x.shape[size_t(axis)], "] (dimension ", axis, ")"));
  std::vector<int64_t> shape = x.shape;
  shape[size_t(axis)] = k;
  r.expectSameDType(x, "input", r.output(0), "values");
  r.expectShape(r.output(0), "values", shape);
  if (r.output(1).dtype != CGC_DTYPE_INT64)
    r.error(cat("indices must be int64, got ", dtypeName(r.output(1).dtype)));
  r.expectShape(r.output(1), "indices", shape);
  std::unique_ptr<Kernel> kernel;
  visitDType(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, Bool>)
      kernel = std::make_unique<TopKKernel<T>>(x.shape, size_t(axis), k, largest);
  });
  return kernel;
}

} // namespace

void registerScatterOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::CumSum, makeCumSum, false});
  ops.push_back({OpKind::ScatterElements, makeScatterElements, false});
  ops.push_back({OpKind::ScatterND, makeScatterND, false});
  ops.push_back({OpKind::TopK, makeTopK, false});
}

} // namespace cgc::cpu
