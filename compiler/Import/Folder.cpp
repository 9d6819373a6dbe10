//===- Folder.cpp - Import-time evaluation of cgc_op ops ------------------===//
//
// Evaluates cgc_op ops whose operands are all small constants, following each
// op's documented semantics, so that constant subgraphs (the shape
// computations of exported models, the constant parts of expanded function
// bodies) become constants. Ops and element types not handled here stay in
// the IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace cgc::import {
namespace {

using op::getI64Array;

TensorType resultType(Operation *op, unsigned i = 0) {
  return cast<TensorType>(op->getResult(i).getType());
}

HostTensor emptyResult(Operation *op, unsigned i = 0) {
  TensorType type = resultType(op, i);
  return HostTensor(type.getElementKind(), type.getShape());
}

/// Strides of `shape` broadcast against `outShape` (0 on broadcast dims).
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                      ArrayRef<int64_t> outShape) {
  SmallVector<int64_t> strides(outShape.size(), 0);
  SmallVector<int64_t> own = rowMajorStrides(shape);
  size_t offset = outShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    strides[offset + i] = shape[i] == 1 ? 0 : own[i];
  return strides;
}

/// Calls `fn(outIndex, inIndices...)` for every element of `outShape`.
void forEachBroadcast(ArrayRef<int64_t> outShape,
                      ArrayRef<SmallVector<int64_t>> strides,
                      function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  int64_t total = 1;
  for (int64_t dim : outShape)
    total *= dim;
  size_t rank = outShape.size();
  SmallVector<int64_t> index(rank, 0);
  SmallVector<int64_t> offsets(strides.size(), 0);
  for (int64_t out = 0; out < total; ++out) {
    fn(out, offsets);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < strides.size(); ++k)
        offsets[k] += strides[k][d];
      if (index[d] < outShape[d])
        break;
      for (size_t k = 0; k < strides.size(); ++k)
        offsets[k] -= strides[k][d] * index[d];
      index[d] = 0;
    }
  }
}

bool isUnsigned64(ElementKind kind) { return kind == ElementKind::UInt64; }

/// Elementwise unary op: `f` on doubles for floats, `i` on ints (or null).
LogicalResult unary(Operation *op, const HostTensor &x,
                    std::function<double(double)> f,
                    std::function<int64_t(int64_t)> i,
                    SmallVectorImpl<HostTensor> &results) {
  HostTensor out = emptyResult(op);
  if (x.isFloat()) {
    if (!f)
      return failure();
    for (int64_t k = 0; k < x.getNumElements(); ++k)
      out.setFloat(k, f(x.getFloat(k)));
  } else {
    if (!i)
      return failure();
    for (int64_t k = 0; k < x.getNumElements(); ++k)
      out.setInt(k, i(x.getInt(k)));
  }
  results.push_back(std::move(out));
  return success();
}

/// Elementwise binary op with broadcasting; `f` (doubles) for float
/// operands, `i` (ints, may fail) otherwise. Results go through the result
/// element type (bool for comparisons).
LogicalResult binary(Operation *op, const HostTensor &a, const HostTensor &b,
                     std::function<double(double, double)> f,
                     std::function<std::optional<int64_t>(int64_t, int64_t)> i,
                     SmallVectorImpl<HostTensor> &results) {
  HostTensor out = emptyResult(op);
  SmallVector<SmallVector<int64_t>> strides = {
      broadcastStrides(a.getShape(), out.getShape()),
      broadcastStrides(b.getShape(), out.getShape())};
  bool ok = true;
  bool floats = a.isFloat();
  if ((floats && !f) || (!floats && !i))
    return failure();
  forEachBroadcast(out.getShape(), strides,
                   [&](int64_t o, ArrayRef<int64_t> in) {
                     if (floats) {
                       out.setFloat(o, f(a.getFloat(in[0]), b.getFloat(in[1])));
                       return;
                     }
                     std::optional<int64_t> v = i(a.getInt(in[0]), b.getInt(in[1]));
                     if (!v)
                       ok = false;
                     else
                       out.setInt(o, *v);
                   });
  if (!ok)
    return failure();
  results.push_back(std::move(out));
  return success();
}

template <typename Cmp>
LogicalResult comparison(Operation *op, const HostTensor &a,
                         const HostTensor &b, Cmp cmp,
                         SmallVectorImpl<HostTensor> &results) {
  bool u64 = isUnsigned64(a.getKind());
  return binary(
      op, a, b, [&](double x, double y) -> double { return cmp(x, y); },
      [&](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (u64)
          return cmp(static_cast<uint64_t>(x), static_cast<uint64_t>(y));
        return cmp(x, y);
      },
      results);
}

double roundHalfEven(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5)
    r = 2.0 * std::round(x / 2.0);
  return r;
}

/// Element offsets of `shape` visited in row-major order, as a permutation
/// of an input with `inShape`: out index i -> input offset.
LogicalResult transposeFold(op::TransposeOp op, const HostTensor &x,
                            SmallVectorImpl<HostTensor> &results) {
  HostTensor out = emptyResult(op);
  SmallVector<int64_t> perm = getI64Array(op.getPerm());
  SmallVector<int64_t> inStrides = rowMajorStrides(x.getShape());
  SmallVector<SmallVector<int64_t>> strides(1);
  for (int64_t p : perm)
    strides[0].push_back(inStrides[p]);
  forEachBroadcast(out.getShape(), strides,
                   [&](int64_t o, ArrayRef<int64_t> in) {
                     out.copyElement(o, x, in[0]);
                   });
  results.push_back(std::move(out));
  return success();
}

LogicalResult sliceFold(ArrayRef<int64_t> starts, ArrayRef<int64_t> steps,
                        const HostTensor &x, HostTensor out,
                        SmallVectorImpl<HostTensor> &results) {
  SmallVector<int64_t> inStrides = rowMajorStrides(x.getShape());
  int64_t base = 0;
  SmallVector<SmallVector<int64_t>> strides(1);
  for (size_t d = 0; d < inStrides.size(); ++d) {
    base += starts[d] * inStrides[d];
    strides[0].push_back(steps[d] * inStrides[d]);
  }
  forEachBroadcast(out.getShape(), strides,
                   [&](int64_t o, ArrayRef<int64_t> in) {
                     out.copyElement(o, x, base + in[0]);
                   });
  results.push_back(std::move(out));
  return success();
}

/// Calls fn(outer, inner) over the dims before and after `axis`.
struct AxisSplit {
  int64_t outer = 1, axisSize = 1, inner = 1;
  AxisSplit(ArrayRef<int64_t> shape, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    axisSize = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= shape[d];
  }
};

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

LogicalResult reduceFold(Operation *op, const HostTensor &x, ArrayAttr axesAttr,
                         Reduce kind, SmallVectorImpl<HostTensor> &results) {
  HostTensor out = emptyResult(op);
  int64_t rank = x.getRank();
  SmallVector<int64_t> axes = getI64Array(axesAttr);
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes)
    reduced[axis] = true;
  // Output offset of each input element (keepdims does not change offsets).
  SmallVector<int64_t> keptShape;
  for (int64_t d = 0; d < rank; ++d)
    keptShape.push_back(reduced[d] ? 1 : x.getShape()[d]);
  SmallVector<int64_t> keptStrides = rowMajorStrides(keptShape);
  SmallVector<SmallVector<int64_t>> strides(1);
  for (int64_t d = 0; d < rank; ++d)
    strides[0].push_back(reduced[d] ? 0 : keptStrides[d]);
  int64_t count = x.getNumElements() / std::max<int64_t>(out.getNumElements(), 1);
  bool floats = x.isFloat();
  std::vector<double> accF(out.getNumElements());
  std::vector<int64_t> accI(out.getNumElements());
  std::vector<bool> seen(out.getNumElements(), false);
  if (!floats && (kind == Reduce::L2 || kind == Reduce::LogSum ||
                  kind == Reduce::LogSumExp || kind == Reduce::Mean))
    return failure();
  forEachBroadcast(x.getShape(), strides, [&](int64_t i, ArrayRef<int64_t> o) {
    int64_t k = o[0];
    if (floats) {
      double v = x.getFloat(i);
      double &acc = accF[k];
      bool first = !seen[k];
      seen[k] = true;
      switch (kind) {
      case Reduce::Sum: case Reduce::Mean: case Reduce::LogSum: acc += v; break;
      case Reduce::Max: acc = first ? v : std::max(acc, v); break;
      case Reduce::Min: acc = first ? v : std::min(acc, v); break;
      case Reduce::Prod: acc = first ? v : acc * v; break;
      case Reduce::L1: acc += std::fabs(v); break;
      case Reduce::L2: case Reduce::SumSquare: acc += v * v; break;
      case Reduce::LogSumExp: acc += std::exp(v); break;
      }
    } else {
      int64_t v = x.getInt(i);
      int64_t &acc = accI[k];
      bool first = !seen[k];
      seen[k] = true;
      switch (kind) {
      case Reduce::Sum: acc += v; break;
      case Reduce::Max: acc = first ? v : std::max(acc, v); break;
      case Reduce::Min: acc = first ? v : std::min(acc, v); break;
      case Reduce::Prod: acc = first ? v : acc * v; break;
      case Reduce::L1: acc += v < 0 ? -v : v; break;
      case Reduce::SumSquare: acc += v * v; break;
      default: break;
      }
    }
  });
  for (int64_t k = 0; k < out.getNumElements(); ++k) {
    if (floats) {
      double v = accF[k];
      if (!seen[k]) {
        // An empty reduction: the identity of the operation.
        v = kind == Reduce::Prod ? 1.0
            : kind == Reduce::Max ? -std::numeric_limits<double>::infinity()
            : kind == Reduce::Min ? std::numeric_limits<double>::infinity()
            : kind == Reduce::LogSum || kind == Reduce::LogSumExp
                ? -std::numeric_limits<double>::infinity()
                : 0.0;
        if (kind == Reduce::LogSum || kind == Reduce::LogSumExp) {
          out.setFloat(k, v);
          continue;
        }
      }
      switch (kind) {
      case Reduce::Mean: v = v / static_cast<double>(count); break;
      case Reduce::L2: v = std::sqrt(v); break;
      case Reduce::LogSum: case Reduce::LogSumExp: v = std::log(v); break;
      default: break;
      }
      out.setFloat(k, v);
    } else {
      if (!seen[k] && (kind == Reduce::Max || kind == Reduce::Min))
        return failure();
      out.setInt(k, !seen[k] && kind == Reduce::Prod ? 1 : accI[k]);
    }
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult argFold(Operation *op, const HostTensor &x, int64_t axis,
                      bool selectLast, bool isMax,
                      SmallVectorImpl<HostTensor> &results) {
  HostTensor out = emptyResult(op);
  AxisSplit split(x.getShape(), axis);
  if (split.axisSize == 0)
    return failure();
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t in = 0; in < split.inner; ++in) {
      int64_t best = 0;
      for (int64_t a = 1; a < split.axisSize; ++a) {
        int64_t i = (o * split.axisSize + a) * split.inner + in;
        int64_t b = (o * split.axisSize + best) * split.inner + in;
        double vi = x.getFloat(i), vb = x.getFloat(b);
        bool better = isMax ? (vi > vb || (selectLast && vi == vb))
                            : (vi < vb || (selectLast && vi == vb));
        if (better)
          best = a;
      }
      out.setInt(o * split.inner + in, best);
    }
  results.push_back(std::move(out));
  return success();
}

} // namespace

LogicalResult foldOperation(Operation *op, ArrayRef<const HostTensor *> operands,
                            SmallVectorImpl<HostTensor> &results) {
  auto in = [&](unsigned i) -> const HostTensor & { return *operands[i]; };
  using F = std::function<double(double)>;
  using I = std::function<int64_t(int64_t)>;
  using BF = std::function<double(double, double)>;
  using BI = std::function<std::optional<int64_t>(int64_t, int64_t)>;
  auto u = [&](F f, I i) { return unary(op, in(0), f, i, results); };
  auto b = [&](BF f, BI i) { return binary(op, in(0), in(1), f, i, results); };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Unary
      .Case([&](op::ReluOp) {
        return u([](double x) { return x > 0 ? x : 0.0; },
                 [](int64_t x) { return x > 0 ? x : 0; });
      })
      .Case([&](op::NegOp) {
        return u([](double x) { return -x; }, [](int64_t x) { return -x; });
      })
      .Case([&](op::AbsOp) {
        return u([](double x) { return std::fabs(x); },
                 [&](int64_t x) {
                   return isUnsigned64(in(0).getKind()) || x >= 0 ? x : -x;
                 });
      })
      .Case([&](op::SignOp) {
        return u([](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; },
                 [&](int64_t x) -> int64_t {
                   if (isUnsigned64(in(0).getKind()))
                     return x != 0;
                   return x > 0 ? 1 : x < 0 ? -1 : 0;
                 });
      })
      .Case([&](op::IdentityOp) {
        results.push_back(in(0));
        return success();
      })
      .Case([&](op::NotOp) {
        return u(nullptr, [](int64_t x) -> int64_t { return !x; });
      })
      .Case([&](op::FloorOp) { return u([](double x) { return std::floor(x); }, nullptr); })
      .Case([&](op::CeilOp) { return u([](double x) { return std::ceil(x); }, nullptr); })
      .Case([&](op::RoundOp) { return u(roundHalfEven, nullptr); })
      .Case([&](op::SqrtOp) { return u([](double x) { return std::sqrt(x); }, nullptr); })
      .Case([&](op::ExpOp) { return u([](double x) { return std::exp(x); }, nullptr); })
      .Case([&](op::LogOp) { return u([](double x) { return std::log(x); }, nullptr); })
      .Case([&](op::ReciprocalOp) { return u([](double x) { return 1.0 / x; }, nullptr); })
      .Case([&](op::SigmoidOp) {
        return u([](double x) { return 1.0 / (1.0 + std::exp(-x)); }, nullptr);
      })
      .Case([&](op::TanhOp) { return u([](double x) { return std::tanh(x); }, nullptr); })
      .Case([&](op::ErfOp) { return u([](double x) { return std::erf(x); }, nullptr); })
      .Case([&](op::SinOp) { return u([](double x) { return std::sin(x); }, nullptr); })
      .Case([&](op::CosOp) { return u([](double x) { return std::cos(x); }, nullptr); })
      .Case([&](op::TanOp) { return u([](double x) { return std::tan(x); }, nullptr); })
      .Case([&](op::AsinOp) { return u([](double x) { return std::asin(x); }, nullptr); })
      .Case([&](op::AcosOp) { return u([](double x) { return std::acos(x); }, nullptr); })
      .Case([&](op::AtanOp) { return u([](double x) { return std::atan(x); }, nullptr); })
      .Case([&](op::SinhOp) { return u([](double x) { return std::sinh(x); }, nullptr); })
      .Case([&](op::CoshOp) { return u([](double x) { return std::cosh(x); }, nullptr); })
      .Case([&](op::AsinhOp) { return u([](double x) { return std::asinh(x); }, nullptr); })
      .Case([&](op::AcoshOp) { return u([](double x) { return std::acosh(x); }, nullptr); })
      .Case([&](op::AtanhOp) { return u([](double x) { return std::atanh(x); }, nullptr); })
      .Case([&](op::SoftplusOp) {
        return u([](double x) { return std::log1p(std::exp(x)); }, nullptr);
      })
      .Case([&](op::SoftsignOp) {
        return u([](double x) { return x / (1.0 + std::fabs(x)); }, nullptr);
      })
      .Case([&](op::IsNaNOp) {
        HostTensor out = emptyResult(op);
        for (int64_t k = 0; k < out.getNumElements(); ++k)
          out.setInt(k, std::isnan(in(0).getFloat(k)));
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::IsInfOp isInf) {
        HostTensor out = emptyResult(op);
        for (int64_t k = 0; k < out.getNumElements(); ++k) {
          double x = in(0).getFloat(k);
          out.setInt(k, (isInf.getDetectPositive() && x == INFINITY) ||
                            (isInf.getDetectNegative() && x == -INFINITY));
        }
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::ClipOp clip) {
        std::optional<double> lo, hi;
        if (auto attr = clip.getMinAttr())
          lo = attr.getValueAsDouble();
        if (auto attr = clip.getMaxAttr())
          hi = attr.getValueAsDouble();
        return u(
            [&](double x) {
              if (lo && x < *lo)
                x = *lo;
              if (hi && x > *hi)
                x = *hi;
              return x;
            },
            [&](int64_t x) {
              if (lo && x < static_cast<int64_t>(*lo))
                x = static_cast<int64_t>(*lo);
              if (hi && x > static_cast<int64_t>(*hi))
                x = static_cast<int64_t>(*hi);
              return x;
            });
      })
      .Case([&](op::CastOp) {
        HostTensor out = emptyResult(op);
        const HostTensor &x = in(0);
        for (int64_t k = 0; k < x.getNumElements(); ++k) {
          if (x.isFloat())
            out.setFloat(k, x.getFloat(k));
          else if (isUnsigned64(x.getKind()) && out.isFloat())
            out.setFloat(k, x.getFloat(k));
          else
            out.setInt(k, x.getInt(k));
        }
        results.push_back(std::move(out));
        return success();
      })
      // Binary
      .Case([&](op::AddOp) {
        return b([](double x, double y) { return x + y; },
                 [](int64_t x, int64_t y) -> std::optional<int64_t> {
                   return static_cast<int64_t>(static_cast<uint64_t>(x) +
                                               static_cast<uint64_t>(y));
                 });
      })
      .Case([&](op::SubOp) {
        return b([](double x, double y) { return x - y; },
                 [](int64_t x, int64_t y) -> std::optional<int64_t> {
                   return static_cast<int64_t>(static_cast<uint64_t>(x) -
                                               static_cast<uint64_t>(y));
                 });
      })
      .Case([&](op::MulOp) {
        return b([](double x, double y) { return x * y; },
                 [](int64_t x, int64_t y) -> std::optional<int64_t> {
                   return static_cast<int64_t>(static_cast<uint64_t>(x) *
                                               static_cast<uint64_t>(y));
                 });
      })
      .Case([&](op::DivOp) {
        bool u64 = isUnsigned64(in(0).getKind());
        return b([](double x, double y) { return x / y; },
                 [&](int64_t x, int64_t y) -> std::optional<int64_t> {
                   if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1))
                     return std::nullopt;
                   if (u64)
                     return static_cast<int64_t>(static_cast<uint64_t>(x) /
                                                 static_cast<uint64_t>(y));
                   return x / y;
                 });
      })
      .Case([&](op::ModOp mod) {
        bool fmod = mod.getFmod();
        bool u64 = isUnsigned64(in(0).getKind());
        return b([](double x, double y) { return std::fmod(x, y); },
                 [&](int64_t x, int64_t y) -> std::optional<int64_t> {
                   if (y == 0)
                     return std::nullopt;
                   if (u64)
                     return static_cast<int64_t>(static_cast<uint64_t>(x) %
                                                 static_cast<uint64_t>(y));
                   if (y == -1)
                     return 0;
                   int64_t r = x % y;
                   if (!fmod && r != 0 && ((r < 0) != (y < 0)))
                     r += y;
                   return r;
                 });
      })
      .Case([&](op::MaxOp) {
        bool u64 = isUnsigned64(in(0).getKind());
        return b([](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); },
                 [&](int64_t x, int64_t y) -> std::optional<int64_t> {
                   if (u64)
                     return static_cast<uint64_t>(x) > static_cast<uint64_t>(y) ? x : y;
                   return std::max(x, y);
                 });
      })
      .Case([&](op::MinOp) {
        bool u64 = isUnsigned64(in(0).getKind());
        return b([](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); },
                 [&](int64_t x, int64_t y) -> std::optional<int64_t> {
                   if (u64)
                     return static_cast<uint64_t>(x) < static_cast<uint64_t>(y) ? x : y;
                   return std::min(x, y);
                 });
      })
      .Case([&](op::PowOp) {
        const HostTensor &base = in(0), &exponent = in(1);
        HostTensor out = emptyResult(op);
        SmallVector<SmallVector<int64_t>> strides = {
            broadcastStrides(base.getShape(), out.getShape()),
            broadcastStrides(exponent.getShape(), out.getShape())};
        bool ok = true;
        forEachBroadcast(out.getShape(), strides,
                         [&](int64_t o, ArrayRef<int64_t> idx) {
                           if (base.isFloat() || exponent.isFloat()) {
                             out.setFloat(o, std::pow(base.getFloat(idx[0]),
                                                      exponent.getFloat(idx[1])));
                             return;
                           }
                           int64_t e = exponent.getInt(idx[1]);
                           if (e < 0) {
                             ok = false;
                             return;
                           }
                           int64_t r = 1, x = base.getInt(idx[0]);
                           for (int64_t k = 0; k < e && k < 64; ++k)
                             r = static_cast<int64_t>(static_cast<uint64_t>(r) *
                                                      static_cast<uint64_t>(x));
                           out.setInt(o, r);
                         });
        if (!ok)
          return failure();
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::EqualOp) {
        return comparison(op, in(0), in(1), [](auto x, auto y) { return x == y; }, results);
      })
      .Case([&](op::LessOp) {
        return comparison(op, in(0), in(1), [](auto x, auto y) { return x < y; }, results);
      })
      .Case([&](op::LessOrEqualOp) {
        return comparison(op, in(0), in(1), [](auto x, auto y) { return x <= y; }, results);
      })
      .Case([&](op::GreaterOp) {
        return comparison(op, in(0), in(1), [](auto x, auto y) { return x > y; }, results);
      })
      .Case([&](op::GreaterOrEqualOp) {
        return comparison(op, in(0), in(1), [](auto x, auto y) { return x >= y; }, results);
      })
      .Case([&](op::AndOp) {
        return b(nullptr, [](int64_t x, int64_t y) -> std::optional<int64_t> { return x && y; });
      })
      .Case([&](op::OrOp) {
        return b(nullptr, [](int64_t x, int64_t y) -> std::optional<int64_t> { return x || y; });
      })
      .Case([&](op::XorOp) {
        return b(nullptr, [](int64_t x, int64_t y) -> std::optional<int64_t> { return (x != 0) != (y != 0); });
      })
      .Case([&](op::WhereOp) {
        HostTensor out = emptyResult(op);
        SmallVector<SmallVector<int64_t>> strides = {
            broadcastStrides(in(0).getShape(), out.getShape()),
            broadcastStrides(in(1).getShape(), out.getShape()),
            broadcastStrides(in(2).getShape(), out.getShape())};
        forEachBroadcast(out.getShape(), strides,
                         [&](int64_t o, ArrayRef<int64_t> idx) {
                           if (in(0).getInt(idx[0]))
                             out.copyElement(o, in(1), idx[1]);
                           else
                             out.copyElement(o, in(2), idx[2]);
                         });
        results.push_back(std::move(out));
        return success();
      })
      // Data movement
      .Case([&](op::ReshapeOp) {
        results.push_back(in(0).withShape(resultType(op).getShape()));
        return success();
      })
      .Case([&](op::TransposeOp transpose) {
        return transposeFold(transpose, in(0), results);
      })
      .Case([&](op::ExpandOp) {
        HostTensor out = emptyResult(op);
        SmallVector<SmallVector<int64_t>> strides = {
            broadcastStrides(in(0).getShape(), out.getShape())};
        forEachBroadcast(out.getShape(), strides,
                         [&](int64_t o, ArrayRef<int64_t> idx) {
                           out.copyElement(o, in(0), idx[0]);
                         });
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::SliceOp slice) {
        return sliceFold(getI64Array(slice.getStarts()),
                         getI64Array(slice.getSteps()), in(0),
                         emptyResult(op), results);
      })
      .Case([&](op::ConcatOp concat) {
        HostTensor out = emptyResult(op);
        int64_t axis = concat.getAxis();
        AxisSplit outSplit(out.getShape(), axis);
        int64_t offset = 0;
        for (const HostTensor *piece : operands) {
          AxisSplit split(piece->getShape(), axis);
          for (int64_t o = 0; o < split.outer; ++o)
            for (int64_t a = 0; a < split.axisSize; ++a)
              for (int64_t i = 0; i < split.inner; ++i)
                out.copyElement(
                    (o * outSplit.axisSize + offset + a) * outSplit.inner + i,
                    *piece, (o * split.axisSize + a) * split.inner + i);
          offset += split.axisSize;
        }
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::SplitOp split) {
        int64_t axis = split.getAxis();
        int64_t offset = 0;
        SmallVector<int64_t> steps(in(0).getRank(), 1);
        for (unsigned r = 0; r < op->getNumResults(); ++r) {
          SmallVector<int64_t> starts(in(0).getRank(), 0);
          starts[axis] = offset;
          if (failed(sliceFold(starts, steps, in(0), emptyResult(op, r), results)))
            return failure();
          offset += resultType(op, r).getShape()[axis];
        }
        return success();
      })
      .Case([&](op::GatherOp gather) {
        const HostTensor &data = in(0), &indices = in(1);
        int64_t axis = gather.getAxis();
        AxisSplit split(data.getShape(), axis);
        HostTensor out = emptyResult(op);
        int64_t n = indices.getNumElements();
        for (int64_t o = 0; o < split.outer; ++o)
          for (int64_t k = 0; k < n; ++k) {
            int64_t index = indices.getInt(k);
            if (index < 0)
              index += split.axisSize;
            if (index < 0 || index >= split.axisSize)
              return failure();
            for (int64_t i = 0; i < split.inner; ++i)
              out.copyElement((o * n + k) * split.inner + i, data,
                              (o * split.axisSize + index) * split.inner + i);
          }
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::GatherElementsOp gather) {
        const HostTensor &data = in(0), &indices = in(1);
        int64_t axis = gather.getAxis();
        HostTensor out = emptyResult(op);
        SmallVector<int64_t> dataStrides = rowMajorStrides(data.getShape());
        SmallVector<int64_t> outStrides = rowMajorStrides(out.getShape());
        for (int64_t k = 0; k < out.getNumElements(); ++k) {
          int64_t offset = 0, rest = k;
          for (int64_t d = 0; d < out.getRank(); ++d) {
            int64_t coord = rest / outStrides[d];
            rest %= outStrides[d];
            if (d == axis) {
              coord = indices.getInt(k);
              if (coord < 0)
                coord += data.getShape()[d];
              if (coord < 0 || coord >= data.getShape()[d])
                return failure();
            }
            offset += coord * dataStrides[d];
          }
          out.copyElement(k, data, offset);
        }
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::TileOp) {
        HostTensor out = emptyResult(op);
        const HostTensor &x = in(0);
        SmallVector<int64_t> outStrides = rowMajorStrides(out.getShape());
        SmallVector<int64_t> inStrides = rowMajorStrides(x.getShape());
        for (int64_t k = 0; k < out.getNumElements(); ++k) {
          int64_t offset = 0, rest = k;
          for (int64_t d = 0; d < out.getRank(); ++d) {
            int64_t coord = rest / outStrides[d];
            rest %= outStrides[d];
            offset += (coord % x.getShape()[d]) * inStrides[d];
          }
          out.copyElement(k, x, offset);
        }
        results.push_back(std::move(out));
        return success();
      })
      .Case([&](op::PadOp pad) {
        if (pad.getMode() != "constant")
          return failure();
        HostTensor out = emptyResult(op);
        const HostTensor &x = in(0);
        SmallVector<int64_t> pads = getI64Array(pad.getPads());
        int64_t rank = x.getRank();
        double value = pad.getValue().convertToDouble();
        SmallVector<int64_t> outStrides = rowMajorStrides(out.getShape());
        SmallVector<int64_t> inStrides = rowMajorStrides(x.getShape());
        for (int64_t k = 0; k < out.getNumElements(); ++k) {
          int64_t offset = 0, rest = k;
          bool inside = true;
          for (int64_t d = 0; d < rank; ++d) {
            int64_t coord = rest / outStrides[d] - pads[d];
            rest %= outStrides[d];
            if (coord < 0 || coord >= x.getShape()[d])
              inside = false;
            offset += coord * inStrides[d];
          }
          if (inside)
            out.copyElement(k, x, offset);
          else
            out.setFloat(k, value);
        }
        results.push_back(std::move(out));
        return success();
      })
      // Reductions
      .Case([&](op::ReduceSumOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::Sum, results); })
      .Case([&](op::ReduceMeanOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::Mean, results); })
      .Case([&](op::ReduceMaxOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::Max, results); })
      .Case([&](op::ReduceMinOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::Min, results); })
      .Case([&](op::ReduceProdOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::Prod, results); })
      .Case([&](op::ReduceL1Op r) { return reduceFold(op, in(0), r.getAxes(), Reduce::L1, results); })
      .Case([&](op::ReduceL2Op r) { return reduceFold(op, in(0), r.getAxes(), Reduce::L2, results); })
      .Case([&](op::ReduceLogSumOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::LogSum, results); })
      .Case([&](op::ReduceLogSumExpOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::LogSumExp, results); })
      .Case([&](op::ReduceSumSquareOp r) { return reduceFold(op, in(0), r.getAxes(), Reduce::SumSquare, results); })
      .Case([&](op::ArgMaxOp r) {
        return argFold(op, in(0), r.getAxis(), r.getSelectLastIndex(), true, results);
      })
      .Case([&](op::ArgMinOp r) {
        return argFold(op, in(0), r.getAxis(), r.getSelectLastIndex(), false, results);
      })
      .Default([](Operation *) { return failure(); });
}

} // namespace cgc::import
