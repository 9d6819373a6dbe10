//===- reduce.cpp - Reductions, arg reductions, softmax, cumsum, top_k ----===//
//
// Every op here walks one group of input elements per output (the reduced
// dimensions, or one line along `axis`), reads the whole group, computes in
// double (floats) or exactly in 128-bit integers (integer dtypes), and
// stores. Axes follow the dialect ([0, rank)); negative ones count from the
// end, as in ONNX.
//
// Integer results are exact modulo the dtype's width (sum, prod, l1,
// sum_square, cumsum wrap like numpy); integer mean truncates the exact mean
// toward zero; l2, log_sum and log_sum_exp of integers apply the float
// function to the exact integer sum and convert as cgc_op.cast does
// (truncated, saturated, NaN as 0). NaN is larger than every number where
// elements are ranked (argmax, argmin, hardmax and top_k pick it, as numpy
// does), and max/min reductions propagate it.
//
//===----------------------------------------------------------------------===//

#include "ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cgc::reference {
namespace {

/// An integer element: every integer dtype (uint64 included) and their sums
/// fit.
using Wide = __int128;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool isNumeric(cgc_dtype_t dtype) { return isFloat(dtype) || isInteger(dtype); }

const char *dtypeName(cgc_dtype_t dtype) {
  const char *name = cgc_dtype_name(dtype);
  return name ? name : "invalid";
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// "" when `desc` has exactly `inputs` inputs, all present, and `outputs`
/// outputs.
std::string checkCounts(const KernelDesc &desc, size_t inputs, size_t outputs) {
  if (desc.inputs.size() != inputs)
    return "expects " + std::to_string(inputs) + " input(s), got " +
           std::to_string(desc.inputs.size());
  for (size_t i = 0; i < inputs; ++i)
    if (!desc.inputs[i])
      return "input " + std::to_string(i) + " is absent";
  if (desc.outputs.size() != outputs)
    return "expects " + std::to_string(outputs) + " output(s), got " +
           std::to_string(desc.outputs.size());
  return "";
}

std::string checkOutput(const KernelOperand &out, const char *what, cgc_dtype_t dtype,
                        const std::vector<int64_t> &shape) {
  if (out.dtype != dtype)
    return std::string(what) + " has dtype " + dtypeName(out.dtype) + ", expected " +
           dtypeName(dtype);
  if (out.shape != shape)
    return std::string(what) + " has shape " + shapeStr(out.shape) + ", expected " +
           shapeStr(shape);
  return "";
}

/// The integer attribute `name` in `value`, or a reason it is missing.
std::string intAttr(const KernelDesc &desc, const char *name, int64_t &value) {
  const AttrValue *a = desc.attr(name);
  if (!a || a->kind != AttrValue::Kind::Int)
    return std::string("attribute '") + name + "' must be an integer";
  value = a->i;
  return "";
}

/// The attribute `axis`, normalized into [0, rank), or a reason.
std::string axisAttr(const KernelDesc &desc, int64_t rank, int64_t &axis) {
  if (std::string why = intAttr(desc, "axis", axis); !why.empty())
    return why;
  if (axis < -rank || axis >= rank)
    return "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
  if (axis < 0)
    axis += rank;
  return "";
}

/// The element at `off` as an exact integer (uint64 as unsigned).
Wide getWide(const View &v, int64_t off) {
  int64_t i = v.getInt(off);
  return v.dtype == CGC_DTYPE_UINT64 ? Wide(uint64_t(i)) : Wide(i);
}

/// Stores `w` modulo the dtype's width.
void setWide(const View &v, int64_t off, Wide w) { v.setInt(off, int64_t(uint64_t(w))); }

/// The smallest and largest values of an integer dtype.
void intRange(cgc_dtype_t dtype, Wide &lo, Wide &hi) {
  int bits = int(cgc_dtype_size(dtype)) * 8;
  bool isSigned = dtype == CGC_DTYPE_INT8 || dtype == CGC_DTYPE_INT16 ||
                  dtype == CGC_DTYPE_INT32 || dtype == CGC_DTYPE_INT64;
  lo = isSigned ? -(Wide(1) << (bits - 1)) : Wide(0);
  hi = isSigned ? (Wide(1) << (bits - 1)) - 1 : (Wide(1) << bits) - 1;
}

/// Stores a float result into any dtype; into an integer dtype as
/// cgc_op.cast converts: truncated toward zero, saturated, NaN as 0.
void setConverted(const View &v, int64_t off, double x) {
  if (isFloat(v.dtype)) {
    v.set(off, x);
    return;
  }
  Wide lo, hi;
  intRange(v.dtype, lo, hi);
  if (std::isnan(x))
    setWide(v, off, 0);
  else if (x <= double(lo))
    setWide(v, off, lo);
  else if (x >= double(hi))
    setWide(v, off, hi);
  else
    setWide(v, off, Wide(std::trunc(x)));
}

/// `shape` with dimension `axis` set to 1: one index per line along `axis`.
std::vector<int64_t> linesOf(std::vector<int64_t> shape, int64_t axis) {
  shape[size_t(axis)] = 1;
  return shape;
}

/// Whether `a` ranks above `b` (NaN above every number); with `largest`
/// false, below (NaN still above). A strict weak order for both.
template <class T> bool ranksBefore(T a, T b, bool largest) {
  if constexpr (std::is_same_v<T, double>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb)
      return largest ? na && !nb : nb && !na;
  }
  return largest ? a > b : a < b;
}

/// The position of the first (or, with `last`, the last) maximum or minimum
/// of `values`; NaN wins both (numpy's argmax and argmin).
template <class T> int64_t argExtreme(const std::vector<T> &values, bool isMax, bool last) {
  int64_t best = 0;
  for (int64_t i = 1; i < int64_t(values.size()); ++i) {
    T x = values[size_t(i)], b = values[size_t(best)];
    bool tie = x == b, better = isMax ? x > b : x < b;
    if constexpr (std::is_same_v<T, double>) {
      tie = tie || (std::isnan(x) && std::isnan(b));
      better = !std::isnan(b) && (std::isnan(x) || better);
    }
    if (better || (tie && last))
      best = i;
  }
  return best;
}

//===----------------------------------------------------------------------===//
// reduce_* (ONNX Reduce*, opset 18: empty `axes` reduces every axis)
//===----------------------------------------------------------------------===//

/// The reduced dimensions of a reduction, or a reason.
std::string reducedMask(const KernelDesc &desc, int64_t rank, std::vector<bool> &mask) {
  const AttrValue *a = desc.attr("axes");
  if (a && a->kind != AttrValue::Kind::Ints)
    return "attribute 'axes' must be a list of integers";
  std::vector<int64_t> axes = desc.getInts("axes");
  mask.assign(size_t(rank), axes.empty());
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return "axis " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank);
    int64_t d = axis < 0 ? axis + rank : axis;
    if (mask[size_t(d)])
      return "axis " + std::to_string(axis) + " is repeated";
    mask[size_t(d)] = true;
  }
  return "";
}

std::vector<int64_t> reducedShape(const std::vector<int64_t> &shape,
                                  const std::vector<bool> &mask, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!mask[d])
      out.push_back(shape[d]);
    else if (keepdims)
      out.push_back(1);
  return out;
}

std::string checkReduce(const KernelDesc &desc) {
  if (std::string why = checkCounts(desc, 1, 1); !why.empty())
    return why;
  const KernelOperand &in = *desc.inputs[0];
  if (!isNumeric(in.dtype))
    return std::string("input dtype ") + dtypeName(in.dtype) + " is not a number type";
  std::vector<bool> mask;
  if (std::string why = reducedMask(desc, int64_t(in.shape.size()), mask); !why.empty())
    return why;
  return checkOutput(desc.outputs[0], "output", in.dtype,
                     reducedShape(in.shape, mask, desc.getBool("keepdims", true)));
}

double reduceFloats(OpKind kind, const std::vector<double> &v) {
  const double n = double(v.size());
  double sum = 0, abs = 0, squares = 0, prod = 1;
  bool nan = false;
  for (double x : v) {
    sum += x;
    abs += std::fabs(x);
    squares += x * x;
    prod *= x;
    nan |= std::isnan(x);
  }
  switch (kind) {
  case OpKind::ReduceSum: return sum;
  case OpKind::ReduceMean: return sum / n;
  case OpKind::ReduceProd: return prod;
  case OpKind::ReduceL1: return abs;
  case OpKind::ReduceL2: return std::sqrt(squares);
  case OpKind::ReduceSumSquare: return squares;
  case OpKind::ReduceLogSum: return std::log(sum);
  case OpKind::ReduceMax:
  case OpKind::ReduceMin: {
    if (nan)
      return kNaN;
    bool isMax = kind == OpKind::ReduceMax;
    double m = isMax ? -kInf : kInf;
    for (double x : v)
      m = isMax ? std::max(m, x) : std::min(m, x);
    return m;
  }
  case OpKind::ReduceLogSumExp: {
    // max + log(sum(exp(x - max))), with max = -inf (empty or all -inf)
    // giving -inf and max = +inf giving +inf.
    if (nan)
      return kNaN;
    double m = -kInf;
    for (double x : v)
      m = std::max(m, x);
    if (std::isinf(m))
      return m;
    double s = 0;
    for (double x : v)
      s += std::exp(x - m);
    return m + std::log(s);
  }
  default: return kNaN;
  }
}

/// An integer reduction of `v`, exact, stored at `off` of `out`.
void reduceIntegers(OpKind kind, const std::vector<Wide> &v, const View &out, int64_t off) {
  Wide sum = 0, abs = 0;
  // Exact unless 64-bit squares sum past 2^128 (sum_square keeps the low
  // bits, which stay exact; only l2 would be off).
  unsigned __int128 squares = 0;
  uint64_t prod = 1; // modulo 2^64, as the stored result
  for (Wide x : v) {
    Wide a = x < 0 ? -x : x;
    sum += x;
    abs += a;
    squares += (unsigned __int128)a * (unsigned __int128)a;
    prod *= uint64_t(x);
  }
  Wide lo, hi;
  intRange(out.dtype, lo, hi);
  switch (kind) {
  case OpKind::ReduceSum: setWide(out, off, sum); return;
  case OpKind::ReduceMean: setWide(out, off, v.empty() ? Wide(0) : sum / Wide(v.size())); return;
  case OpKind::ReduceProd: setWide(out, off, Wide(prod)); return;
  case OpKind::ReduceL1: setWide(out, off, abs); return;
  case OpKind::ReduceSumSquare: setWide(out, off, Wide(uint64_t(squares))); return;
  case OpKind::ReduceL2: setConverted(out, off, std::sqrt(double(squares))); return;
  case OpKind::ReduceLogSum: setConverted(out, off, std::log(double(sum))); return;
  case OpKind::ReduceLogSumExp: {
    std::vector<double> d(v.begin(), v.end());
    setConverted(out, off, reduceFloats(kind, d));
    return;
  }
  case OpKind::ReduceMax:
  case OpKind::ReduceMin: {
    bool isMax = kind == OpKind::ReduceMax;
    Wide m = isMax ? lo : hi; // an empty reduction: the dtype's extreme
    for (Wide x : v)
      m = isMax ? std::max(m, x) : std::min(m, x);
    setWide(out, off, m);
    return;
  }
  default: return;
  }
}

void runReduce(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0);
  const View &y = ops.out[0];
  std::vector<bool> mask;
  reducedMask(desc, x.rank(), mask);
  const bool keepdims = desc.getBool("keepdims", true);
  const OpKind kind = desc.kind();
  std::vector<int64_t> groupShape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (mask[size_t(d)])
      groupShape.push_back(x.shape[size_t(d)]);
  forEachIndex(y.shape, [&](const std::vector<int64_t> &outIndex) {
    // The input index of the group's first element, then each element's.
    std::vector<int64_t> index(size_t(x.rank()), 0);
    size_t o = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      if (!mask[d])
        index[d] = outIndex[o];
      if (!mask[d] || keepdims)
        ++o;
    }
    std::vector<double> floats;
    std::vector<Wide> ints;
    forEachIndex(groupShape, [&](const std::vector<int64_t> &g) {
      size_t k = 0;
      for (size_t d = 0; d < index.size(); ++d)
        if (mask[d])
          index[d] = g[k++];
      if (isFloat(x.dtype))
        floats.push_back(x.at(index));
      else
        ints.push_back(getWide(x, x.offset(index)));
    });
    if (isFloat(x.dtype))
      y.set(y.offset(outIndex), reduceFloats(kind, floats));
    else
      reduceIntegers(kind, ints, y, y.offset(outIndex));
  });
}

//===----------------------------------------------------------------------===//
// argmax, argmin (ONNX ArgMax/ArgMin with select_last_index; int64 result)
//===----------------------------------------------------------------------===//

std::string checkArg(const KernelDesc &desc) {
  if (std::string why = checkCounts(desc, 1, 1); !why.empty())
    return why;
  const KernelOperand &in = *desc.inputs[0];
  if (!isNumeric(in.dtype))
    return std::string("input dtype ") + dtypeName(in.dtype) + " is not a number type";
  int64_t axis;
  if (std::string why = axisAttr(desc, int64_t(in.shape.size()), axis); !why.empty())
    return why;
  std::vector<int64_t> shape = in.shape;
  if (desc.getBool("keepdims", true))
    shape[size_t(axis)] = 1;
  else
    shape.erase(shape.begin() + axis);
  if (std::string why = checkOutput(desc.outputs[0], "output", CGC_DTYPE_INT64, shape);
      !why.empty())
    return why;
  if (in.shape[size_t(axis)] == 0 && desc.outputs[0].numElements() != 0)
    return "cannot take the index of an extreme over the empty axis " + std::to_string(axis);
  return "";
}

void runArg(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0);
  const View &y = ops.out[0];
  int64_t axis = 0;
  axisAttr(desc, x.rank(), axis);
  const bool isMax = desc.kind() == OpKind::ArgMax;
  const bool last = desc.getBool("select_last_index", false);
  const bool keepdims = desc.getBool("keepdims", true);
  const int64_t len = x.shape[size_t(axis)], stride = x.strides[size_t(axis)];
  forEachIndex(linesOf(x.shape, axis), [&](const std::vector<int64_t> &index) {
    int64_t base = x.offset(index);
    int64_t best;
    if (isFloat(x.dtype)) {
      std::vector<double> v;
      for (int64_t i = 0; i < len; ++i)
        v.push_back(x.get(base + i * stride));
      best = argExtreme(v, isMax, last);
    } else {
      std::vector<Wide> v;
      for (int64_t i = 0; i < len; ++i)
        v.push_back(getWide(x, base + i * stride));
      best = argExtreme(v, isMax, last);
    }
    std::vector<int64_t> outIndex = index;
    if (!keepdims)
      outIndex.erase(outIndex.begin() + axis);
    y.setInt(y.offset(outIndex), best);
  });
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax, hardmax (ONNX opset 13: along the one `axis`)
//===----------------------------------------------------------------------===//

std::string checkSoft(const KernelDesc &desc) {
  if (std::string why = checkCounts(desc, 1, 1); !why.empty())
    return why;
  const KernelOperand &in = *desc.inputs[0];
  if (!isFloat(in.dtype))
    return std::string("input dtype ") + dtypeName(in.dtype) + " is not a float type";
  int64_t axis;
  if (std::string why = axisAttr(desc, int64_t(in.shape.size()), axis); !why.empty())
    return why;
  return checkOutput(desc.outputs[0], "output", in.dtype, in.shape);
}

/// softmax: exp(x - max) / sum(exp(x - max)); log_softmax: x - max -
/// log(sum(exp(x - max))). A NaN, or a +inf maximum (inf - inf), gives NaN,
/// as the formula does. hardmax: 1 at the first maximum, where a NaN counts
/// as the maximum (argmax's choice, as ONNX's reference does).
void runSoft(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0);
  const View &y = ops.out[0];
  int64_t axis = 0;
  axisAttr(desc, x.rank(), axis);
  const OpKind kind = desc.kind();
  const int64_t len = x.shape[size_t(axis)];
  const int64_t xs = x.strides[size_t(axis)], ys = y.strides[size_t(axis)];
  forEachIndex(linesOf(x.shape, axis), [&](const std::vector<int64_t> &index) {
    const int64_t xb = x.offset(index), yb = y.offset(index);
    std::vector<double> v;
    for (int64_t i = 0; i < len; ++i)
      v.push_back(x.get(xb + i * xs));
    std::vector<double> r(v.size());
    if (kind == OpKind::Hardmax) {
      int64_t best = argExtreme(v, true, false);
      for (int64_t i = 0; i < len; ++i)
        r[size_t(i)] = i == best ? 1 : 0;
    } else {
      double m = -kInf;
      for (double e : v)
        m = std::isnan(e) || std::isnan(m) ? kNaN : std::max(m, e);
      double sum = 0;
      for (double e : v)
        sum += std::exp(e - m);
      for (int64_t i = 0; i < len; ++i)
        r[size_t(i)] = kind == OpKind::Softmax ? std::exp(v[size_t(i)] - m) / sum
                                               : v[size_t(i)] - m - std::log(sum);
    }
    for (int64_t i = 0; i < len; ++i)
      y.set(yb + i * ys, r[size_t(i)]);
  });
}

//===----------------------------------------------------------------------===//
// cumsum (ONNX CumSum with `axis` an attribute)
//===----------------------------------------------------------------------===//

std::string checkCumSum(const KernelDesc &desc) {
  if (std::string why = checkCounts(desc, 1, 1); !why.empty())
    return why;
  const KernelOperand &in = *desc.inputs[0];
  if (!isNumeric(in.dtype))
    return std::string("input dtype ") + dtypeName(in.dtype) + " is not a number type";
  int64_t axis;
  if (std::string why = axisAttr(desc, int64_t(in.shape.size()), axis); !why.empty())
    return why;
  return checkOutput(desc.outputs[0], "output", in.dtype, in.shape);
}

/// Output i sums inputs j <= i (exclusive: j < i); reversed, j >= i (j > i).
void runCumSum(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0);
  const View &y = ops.out[0];
  int64_t axis = 0;
  axisAttr(desc, x.rank(), axis);
  const bool exclusive = desc.getBool("exclusive", false);
  const bool reverse = desc.getBool("reverse", false);
  const int64_t len = x.shape[size_t(axis)];
  const int64_t xs = x.strides[size_t(axis)], ys = y.strides[size_t(axis)];
  const bool fl = isFloat(x.dtype);
  forEachIndex(linesOf(x.shape, axis), [&](const std::vector<int64_t> &index) {
    const int64_t xb = x.offset(index), yb = y.offset(index);
    std::vector<double> fv;
    std::vector<Wide> iv;
    for (int64_t i = 0; i < len; ++i) {
      if (fl)
        fv.push_back(x.get(xb + i * xs));
      else
        iv.push_back(getWide(x, xb + i * xs));
    }
    double fsum = 0;
    Wide isum = 0;
    for (int64_t step = 0; step < len; ++step) {
      int64_t i = reverse ? len - 1 - step : step;
      if (fl) {
        double before = fsum;
        fsum += fv[size_t(i)];
        y.set(yb + i * ys, exclusive ? before : fsum);
      } else {
        Wide before = isum;
        isum += iv[size_t(i)];
        setWide(y, yb + i * ys, exclusive ? before : isum);
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// top_k (ONNX TopK, sorted; equal values in index order)
//===----------------------------------------------------------------------===//

std::string checkTopK(const KernelDesc &desc) {
  if (std::string why = checkCounts(desc, 1, 2); !why.empty())
    return why;
  const KernelOperand &in = *desc.inputs[0];
  if (!isNumeric(in.dtype))
    return std::string("input dtype ") + dtypeName(in.dtype) + " is not a number type";
  int64_t axis, k;
  if (std::string why = axisAttr(desc, int64_t(in.shape.size()), axis); !why.empty())
    return why;
  if (std::string why = intAttr(desc, "k", k); !why.empty())
    return why;
  if (k < 0 || k > in.shape[size_t(axis)])
    return "k = " + std::to_string(k) + " must be in [0, " +
           std::to_string(in.shape[size_t(axis)]) + "] (dimension " + std::to_string(axis) + ")";
  std::vector<int64_t> shape = in.shape;
  shape[size_t(axis)] = k;
  if (std::string why = checkOutput(desc.outputs[0], "values", in.dtype, shape); !why.empty())
    return why;
  return checkOutput(desc.outputs[1], "indices", CGC_DTYPE_INT64, shape);
}

/// The positions of `v` from the largest value (the smallest unless
/// `largest`) on, equal values in order of position.
template <class T> std::vector<int64_t> rankedPositions(const std::vector<T> &v, bool largest) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    T va = v[size_t(a)], vb = v[size_t(b)];
    if (ranksBefore(va, vb, largest) || ranksBefore(vb, va, largest))
      return ranksBefore(va, vb, largest);
    return a < b;
  });
  return order;
}

void runTopK(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0);
  const View &values = ops.out[0], &indices = ops.out[1];
  int64_t axis = 0, k = 0;
  axisAttr(desc, x.rank(), axis);
  intAttr(desc, "k", k);
  const bool largest = desc.getBool("largest", true);
  const int64_t len = x.shape[size_t(axis)], xs = x.strides[size_t(axis)];
  const int64_t vs = values.strides[size_t(axis)], is = indices.strides[size_t(axis)];
  forEachIndex(linesOf(x.shape, axis), [&](const std::vector<int64_t> &index) {
    const int64_t xb = x.offset(index), vb = values.offset(index), ib = indices.offset(index);
    std::vector<int64_t> order;
    if (isFloat(x.dtype)) {
      std::vector<double> v;
      for (int64_t i = 0; i < len; ++i)
        v.push_back(x.get(xb + i * xs));
      order = rankedPositions(v, largest);
    } else {
      std::vector<Wide> v;
      for (int64_t i = 0; i < len; ++i)
        v.push_back(getWide(x, xb + i * xs));
      order = rankedPositions(v, largest);
    }
    for (int64_t i = 0; i < k; ++i) {
      values.copyFrom(vb + i * vs, x, xb + order[size_t(i)] * xs);
      indices.setInt(ib + i * is, order[size_t(i)]);
    }
  });
}

} // namespace

void addReductionOps(std::vector<OpDef> &ops) {
  for (OpKind kind : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin,
                      OpKind::ReduceProd, OpKind::ReduceL1, OpKind::ReduceL2,
                      OpKind::ReduceLogSum, OpKind::ReduceLogSumExp, OpKind::ReduceSumSquare})
    ops.push_back({kind, checkReduce, runReduce});
  ops.push_back({OpKind::ArgMax, checkArg, runArg});
  ops.push_back({OpKind::ArgMin, checkArg, runArg});
  for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::Hardmax})
    ops.push_back({kind, checkSoft, runSoft});
  ops.push_back({OpKind::CumSum, checkCumSum, runCumSum});
  ops.push_back({OpKind::TopK, checkTopK, runTopK});
}

} // namespace cgc::reference
