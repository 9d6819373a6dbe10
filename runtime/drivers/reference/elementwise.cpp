//===- elementwise.cpp - Elementwise ops: math, activations, logic, cast --===//
//
// Every elementwise op of the cgc_op dialect, plus the kernel library's
// fused swish and erf_gelu: each output element comes from the input
// elements at the same index, inputs broadcast numpy-style to the output.
// Floats are computed in double and rounded once when stored; integers are
// exact (int64 or uint64) and wrap to the element width like C++ unsigned
// arithmetic, as numpy does.
//
//===----------------------------------------------------------------------===//

#include "ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace cgc::reference {
namespace {

using Kind = AttrValue::Kind;
using Index = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Element types and shapes
//===----------------------------------------------------------------------===//

bool isUnsigned(cgc_dtype_t dtype) {
  return dtype == CGC_DTYPE_UINT8 || dtype == CGC_DTYPE_UINT16 || dtype == CGC_DTYPE_UINT32 ||
         dtype == CGC_DTYPE_UINT64;
}

bool isSigned(cgc_dtype_t dtype) { return isInteger(dtype) && !isUnsigned(dtype); }

/// The element type constraints of CGCOpBase.td.
enum class Types { Float, Signed, Numeric, Unsigned, Bool, Any };

bool accepts(Types types, cgc_dtype_t dtype) {
  switch (types) {
  case Types::Float: return isFloat(dtype);
  case Types::Signed: return isFloat(dtype) || isSigned(dtype);
  case Types::Numeric: return isFloat(dtype) || isInteger(dtype);
  case Types::Unsigned: return isUnsigned(dtype);
  case Types::Bool: return dtype == CGC_DTYPE_BOOL;
  case Types::Any: return cgc_dtype_size(dtype) != 0;
  }
  return false;
}

const char *describe(Types types) {
  switch (types) {
  case Types::Float: return "a float type";
  case Types::Signed: return "a float or signed integer type";
  case Types::Numeric: return "a float or integer type";
  case Types::Unsigned: return "an unsigned integer type";
  case Types::Bool: return "bool";
  case Types::Any: return "any element type";
  }
  return "?";
}

std::string dtypeText(cgc_dtype_t dtype) {
  const char *name = cgc_dtype_name(dtype);
  return name ? name : "dtype " + std::to_string(int(dtype));
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The numpy broadcast of `a` and `b`; false when they are incompatible.
bool broadcastShapes(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                     std::vector<int64_t> &result) {
  size_t rank = std::max(a.size(), b.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    result[i] = da == 1 ? db : da;
  }
  return true;
}

/// `v` rounded to `dtype` as a store rounds it.
double roundTo(cgc_dtype_t dtype, double v) {
  uint64_t bits = 0;
  View scratch;
  scratch.dtype = dtype;
  scratch.data = reinterpret_cast<uint8_t *>(&bits);
  scratch.set(0, v);
  return scratch.get(0);
}

/// Stores `v` into an integer element truncated toward zero and saturated
/// to the element type's range, NaN as 0 (cgc_op.cast's float to integer,
/// as the CPU kernels do it: ONNX leaves out-of-range values unspecified).
void storeTruncated(const View &out, int64_t off, double v) {
  if (std::isnan(v)) {
    out.setInt(off, 0);
    return;
  }
  const int bits = int(8 * cgc_dtype_size(out.dtype));
  const double t = std::trunc(v);
  if (isUnsigned(out.dtype)) {
    const uint64_t max = bits == 64 ? std::numeric_limits<uint64_t>::max()
                                    : (uint64_t(1) << bits) - 1;
    uint64_t u = t <= 0 ? 0 : t >= std::ldexp(1.0, bits) ? max : uint64_t(t);
    out.setInt(off, int64_t(u));
  } else {
    const double limit = std::ldexp(1.0, bits - 1); // -limit is the minimum
    const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max()
                                   : (int64_t(1) << (bits - 1)) - 1;
    int64_t s = t <= -limit ? -max - 1 : t >= limit ? max : int64_t(t);
    out.setInt(off, s);
  }
}

/// `v` stored into an integer element by storeTruncated, read back.
int64_t truncateTo(cgc_dtype_t dtype, double v) {
  uint64_t bits = 0;
  View scratch;
  scratch.dtype = dtype;
  scratch.data = reinterpret_cast<uint8_t *>(&bits);
  storeTruncated(scratch, 0, v);
  return scratch.getInt(0);
}

// max/min that return NaN when either operand is NaN (numpy.maximum).
double maxNaN(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : a > b ? a : b; }
double minNaN(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : a < b ? a : b; }

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

struct Operand {
  const char *name;
  Types types;
};

/// All of `operands` present with their element types and no negative
/// dimension.
std::string checkInputs(const KernelDesc &d, const std::vector<Operand> &operands) {
  if (d.inputs.size() != operands.size())
    return "expected " + std::to_string(operands.size()) + " inputs, got " +
           std::to_string(d.inputs.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string name = std::string("input '") + operands[i].name + "'";
    if (!d.inputs[i])
      return name + " is absent";
    const KernelOperand &in = *d.inputs[i];
    if (!accepts(operands[i].types, in.dtype))
      return name + " has element type " + dtypeText(in.dtype) + "; expected " +
             describe(operands[i].types);
    for (int64_t dim : in.shape)
      if (dim < 0)
        return name + " has a negative dimension: " + shapeText(in.shape);
  }
  return "";
}

/// Inputs `a` and `b` (both present) have one element type.
std::string checkSameDType(const KernelDesc &d, size_t a, size_t b,
                           const std::vector<Operand> &operands) {
  if (d.inputs[a]->dtype == d.inputs[b]->dtype)
    return "";
  return std::string("inputs '") + operands[a].name + "' (" + dtypeText(d.inputs[a]->dtype) +
         ") and '" + operands[b].name + "' (" + dtypeText(d.inputs[b]->dtype) +
         ") must have the same element type";
}

/// The broadcast of every input's shape (all present).
std::string broadcastInputs(const KernelDesc &d, std::vector<int64_t> &shape) {
  shape.clear();
  for (const auto &in : d.inputs) {
    std::vector<int64_t> next;
    if (!broadcastShapes(shape, in->shape, next))
      return "input shapes " + shapeText(shape) + " and " + shapeText(in->shape) +
             " do not broadcast";
    shape = next;
  }
  return "";
}

std::string checkOutput(const KernelDesc &d, cgc_dtype_t dtype, const std::vector<int64_t> &shape) {
  if (d.outputs.size() != 1)
    return "expected 1 output, got " + std::to_string(d.outputs.size());
  const KernelOperand &out = d.outputs[0];
  if (out.dtype != dtype)
    return "output has element type " + dtypeText(out.dtype) + "; expected " + dtypeText(dtype);
  if (out.shape != shape)
    return "output has shape " + shapeText(out.shape) + "; expected " + shapeText(shape);
  return "";
}

/// Attribute `name` absent (unless `required`) or of `kind` (an integer
/// also reads as a float or a bool, as KernelDesc's getters read it).
std::string checkAttr(const KernelDesc &d, const char *name, Kind kind, bool required = false) {
  const AttrValue *a = d.attr(name);
  if (!a)
    return required ? std::string("missing attribute '") + name + "'" : "";
  if (a->kind == kind || (a->kind == Kind::Int && (kind == Kind::Float || kind == Kind::Bool)))
    return "";
  const char *what = kind == Kind::Float    ? "a float"
                     : kind == Kind::Bool   ? "a bool"
                     : kind == Kind::String ? "a string"
                     : kind == Kind::DType  ? "an element type"
                                            : "an integer";
  return std::string("attribute '") + name + "' must be " + what;
}

/// A string attribute (ODS default `fallback` when absent) among `allowed`.
std::string checkEnumAttr(const KernelDesc &d, const char *name, const std::string &fallback,
                          const std::vector<std::string> &allowed, bool required = false) {
  if (std::string why = checkAttr(d, name, Kind::String, required); !why.empty())
    return why;
  std::string value = d.getString(name, fallback), list;
  for (const std::string &a : allowed) {
    if (value == a)
      return "";
    list += (list.empty() ? "" : ", ") + a;
  }
  return std::string("attribute '") + name + "' is \"" + value + "\"; expected one of: " + list;
}

/// The shared form: `operands` of one element type when `sameDType`,
/// broadcast together into one output of that shape, of element type bool
/// (`boolResult`) or input 0's.
std::string checkElementwise(const KernelDesc &d, const std::vector<Operand> &operands,
                             bool boolResult, bool sameDType = true) {
  if (std::string why = checkInputs(d, operands); !why.empty())
    return why;
  for (size_t i = 1; sameDType && i < operands.size(); ++i)
    if (std::string why = checkSameDType(d, 0, i, operands); !why.empty())
      return why;
  std::vector<int64_t> shape;
  if (std::string why = broadcastInputs(d, shape); !why.empty())
    return why;
  return checkOutput(d, boolResult ? CGC_DTYPE_BOOL : d.inputs[0]->dtype, shape);
}

std::string checkUnary(const KernelDesc &d, Types types, bool boolResult = false) {
  return checkElementwise(d, {{"input", types}}, boolResult);
}

//===----------------------------------------------------------------------===//
// Element loops
//===----------------------------------------------------------------------===//

/// Calls `f(out, at)` for every output element: `out` is its offset, `at[i]`
/// the offset of input i at the broadcast index. `f` reads its inputs before
/// it writes the output, so an input may be the output itself (in place).
void forEachElement(const KernelDesc &d, const Operands &ops,
                    const std::function<void(int64_t, const Index &)> &f) {
  std::vector<const View *> in;
  for (size_t i = 0; i < d.inputs.size(); ++i)
    in.push_back(&ops.input(d, i));
  const View &out = ops.out[0];
  Index at(in.size());
  forEachIndex(out.shape, [&](const Index &index) {
    for (size_t i = 0; i < in.size(); ++i)
      at[i] = in[i]->offset(broadcastIndex(index, in[i]->shape));
    f(out.offset(index), at);
  });
}

using Fn = std::function<double(double)>;

/// A unary op on floats: `make` reads the attributes and returns the
/// function; `checkAttrs` (if any) validates them.
OpDef floatUnary(OpKind kind, std::function<Fn(const KernelDesc &)> make,
                 std::function<std::string(const KernelDesc &)> checkAttrs = nullptr) {
  return {kind,
          [checkAttrs](const KernelDesc &d) {
            std::string why = checkUnary(d, Types::Float);
            return why.empty() && checkAttrs ? checkAttrs(d) : why;
          },
          [make](const KernelDesc &d, const Operands &ops) {
            const Fn fn = make(d);
            const View &x = ops.input(d, 0), &y = ops.out[0];
            forEachElement(d, ops, [&](int64_t o, const Index &at) { y.set(o, fn(x.get(at[0]))); });
          }};
}

OpDef floatUnary(OpKind kind, double (*fn)(double)) {
  return floatUnary(kind, [fn](const KernelDesc &) { return Fn(fn); });
}

/// Checks that the float attributes `names` are floats (or absent).
std::function<std::string(const KernelDesc &)> floatAttrs(std::vector<const char *> names) {
  return [names](const KernelDesc &d) {
    for (const char *name : names)
      if (std::string why = checkAttr(d, name, Kind::Float); !why.empty())
        return why;
    return std::string();
  };
}

/// A unary op on numbers: `f` on floats, `s` on signed integers, `u` on
/// unsigned ones (exact).
struct NumericUnary {
  OpKind kind;
  Types types;
  double (*f)(double);
  int64_t (*s)(int64_t);
  uint64_t (*u)(uint64_t);
};

OpDef numericUnary(const NumericUnary &op) {
  return {op.kind, [op](const KernelDesc &d) { return checkUnary(d, op.types); },
          [op](const KernelDesc &d, const Operands &ops) {
            const View &x = ops.input(d, 0), &y = ops.out[0];
            forEachElement(d, ops, [&](int64_t o, const Index &at) {
              if (isFloat(x.dtype))
                y.set(o, op.f(x.get(at[0])));
              else if (isUnsigned(x.dtype))
                y.setInt(o, int64_t(op.u(uint64_t(x.getInt(at[0])))));
              else
                y.setInt(o, op.s(x.getInt(at[0])));
            });
          }};
}

/// A binary op with broadcasting, both operands of one element type: `f` on
/// floats, `s` on signed integers and bool, `u` on unsigned integers; a
/// `boolResult` op's functions return 0 or 1.
struct Binary {
  OpKind kind;
  Types types;
  bool boolResult;
  double (*f)(double, double);
  int64_t (*s)(int64_t, int64_t);
  uint64_t (*u)(uint64_t, uint64_t);
};

void runBinary(const Binary &op, const KernelDesc &d, const Operands &ops) {
  const View &a = ops.input(d, 0), &b = ops.input(d, 1), &y = ops.out[0];
  forEachElement(d, ops, [&](int64_t o, const Index &at) {
    if (isFloat(a.dtype))
      y.set(o, op.f(a.get(at[0]), b.get(at[1])));
    else if (isUnsigned(a.dtype))
      y.setInt(o, int64_t(op.u(uint64_t(a.getInt(at[0])), uint64_t(b.getInt(at[1])))));
    else
      y.setInt(o, op.s(a.getInt(at[0]), b.getInt(at[1])));
  });
}

OpDef binary(const Binary &op) {
  return {op.kind,
          [op](const KernelDesc &d) {
            return checkElementwise(d, {{"lhs", op.types}, {"rhs", op.types}}, op.boolResult);
          },
          [op](const KernelDesc &d, const Operands &ops) { runBinary(op, d, ops); }};
}

//===----------------------------------------------------------------------===//
// Integer arithmetic (wrapping, no undefined behaviour)
//===----------------------------------------------------------------------===//

int64_t wrap(uint64_t v) { return int64_t(v); }

// Integer division truncates toward zero (ONNX Div; its reference divides
// and casts back); by zero it gives 0, as numpy's integer division does.
int64_t divSigned(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return wrap(0 - uint64_t(a)); // INT64_MIN / -1 wraps
  return a / b;
}
uint64_t divUnsigned(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b; }

// Remainder: with `fmod` that of truncated division (sign of the dividend),
// else of floored division (sign of the divisor, Python's %); by zero 0.
int64_t modSigned(int64_t a, int64_t b, bool fmod) {
  if (b == 0 || b == -1)
    return 0;
  int64_t r = a % b;
  if (!fmod && r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

/// base^e modulo 2^64 (square and multiply).
uint64_t powWrapped(uint64_t base, uint64_t e) {
  uint64_t result = 1;
  for (; e; e >>= 1, base *= base)
    if (e & 1)
      result *= base;
  return result;
}

//===----------------------------------------------------------------------===//
// Ops with their own rules
//===----------------------------------------------------------------------===//

// Round (ONNX Round): to the nearest integer, ties to even.
double roundHalfEven(double x) {
  if (std::fabs(x - std::trunc(x)) == 0.5)
    return 2.0 * std::round(x / 2.0);
  return std::round(x);
}

double softplus(double x) {
  // log(1 + exp(x)) without overflow.
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double clamp01(double t) { return t < 0 ? 0.0 : t > 1 ? 1.0 : t; } // NaN stays NaN

// Clip (ODS): min(max(x, min), max) with optional bounds, a NaN bound
// clamping nothing. On integers the bounds are the integers inside
// [min, max] (ceil(min), floor(max)), saturated to the element type.
OpDef clipOp() {
  auto check = [](const KernelDesc &d) {
    std::string why = checkUnary(d, Types::Numeric);
    if (why.empty())
      why = checkAttr(d, "min", Kind::Float);
    if (why.empty())
      why = checkAttr(d, "max", Kind::Float);
    return why;
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const View &x = ops.input(d, 0), &y = ops.out[0];
    const AttrValue *minAttr = d.attr("min"), *maxAttr = d.attr("max");
    const double lo = minAttr ? d.getFloat("min", 0) : NAN;
    const double hi = maxAttr ? d.getFloat("max", 0) : NAN;
    if (isFloat(x.dtype)) {
      forEachElement(d, ops, [&](int64_t o, const Index &at) {
        double v = x.get(at[0]);
        v = v < lo ? lo : v;
        y.set(o, v > hi ? hi : v);
      });
      return;
    }
    const bool hasLo = !std::isnan(lo), hasHi = !std::isnan(hi);
    const int64_t l = truncateTo(x.dtype, std::ceil(lo)), h = truncateTo(x.dtype, std::floor(hi));
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      if (isUnsigned(x.dtype)) {
        uint64_t v = uint64_t(x.getInt(at[0]));
        v = hasLo && v < uint64_t(l) ? uint64_t(l) : v;
        y.setInt(o, int64_t(hasHi && v > uint64_t(h) ? uint64_t(h) : v));
      } else {
        int64_t v = x.getInt(at[0]);
        v = hasLo && v < l ? l : v;
        y.setInt(o, hasHi && v > h ? h : v);
      }
    });
  };
  return {OpKind::Clip, check, run};
}

// Cast (ODS, ONNX Cast): float to integer truncates toward zero, saturated,
// NaN as 0 (storeTruncated); integer to integer wraps (numpy astype); to
// bool is x != 0. Integer to float64 or float32 rounds once; to float16 and
// bfloat16 through float32, as the CPU kernels do (for float16 the same).
OpDef castOp() {
  auto check = [](const KernelDesc &d) {
    std::string why = checkInputs(d, {{"input", Types::Any}});
    if (why.empty())
      why = checkAttr(d, "to", Kind::DType, true);
    if (!why.empty())
      return why;
    cgc_dtype_t to = d.attr("to")->dtype;
    if (cgc_dtype_size(to) == 0)
      return "attribute 'to' is an unknown element type (" + std::to_string(int(to)) + ")";
    return checkOutput(d, to, d.inputs[0]->shape);
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const View &x = ops.input(d, 0), &y = ops.out[0];
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      const int64_t i = at[0];
      if (x.dtype == y.dtype) {
        y.copyFrom(o, x, i);
      } else if (y.dtype == CGC_DTYPE_BOOL) {
        y.setInt(o, isFloat(x.dtype) ? x.get(i) != 0 : x.getInt(i) != 0);
      } else if (isFloat(y.dtype)) {
        if (!isInteger(x.dtype))
          y.set(o, x.get(i)); // float or bool
        else if (y.dtype == CGC_DTYPE_FLOAT64)
          y.set(o, isUnsigned(x.dtype) ? double(uint64_t(x.getInt(i))) : double(x.getInt(i)));
        else
          y.set(o, isUnsigned(x.dtype) ? double(float(uint64_t(x.getInt(i))))
                                       : double(float(x.getInt(i))));
      } else if (isFloat(x.dtype)) {
        storeTruncated(y, o, x.get(i));
      } else {
        y.setInt(o, x.getInt(i));
      }
    });
  };
  return {OpKind::Cast, check, run};
}

// Mod (ODS, ONNX Mod): floats need fmod (C fmod, exact in double).
OpDef modOp() {
  auto check = [](const KernelDesc &d) {
    std::string why =
        checkElementwise(d, {{"lhs", Types::Numeric}, {"rhs", Types::Numeric}}, false);
    if (why.empty())
      why = checkAttr(d, "fmod", Kind::Bool);
    if (why.empty() && isFloat(d.inputs[0]->dtype) && !d.getBool("fmod", false))
      why = "floating-point mod requires fmod = true";
    return why;
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const bool fmod = d.getBool("fmod", false);
    const View &a = ops.input(d, 0), &b = ops.input(d, 1), &y = ops.out[0];
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      if (isFloat(a.dtype)) {
        y.set(o, std::fmod(a.get(at[0]), b.get(at[1])));
      } else if (isUnsigned(a.dtype)) {
        uint64_t u = uint64_t(a.getInt(at[0])), v = uint64_t(b.getInt(at[1]));
        y.setInt(o, int64_t(v == 0 ? 0 : u % v));
      } else {
        y.setInt(o, modSigned(a.getInt(at[0]), b.getInt(at[1]), fmod));
      }
    });
  };
  return {OpKind::Mod, check, run};
}

// Pow (ODS, ONNX Pow): the result has the base's element type. A float
// base: pow in double. An integer base with a float exponent: pow in double
// converted as cast does. Integer base and exponent: exact, wrapping; a
// negative exponent gives 1 / base^|e| truncated (0 unless |base| is 1; 0
// for a zero base, which ONNX leaves undefined).
OpDef powOp() {
  auto check = [](const KernelDesc &d) {
    return checkElementwise(d, {{"base", Types::Numeric}, {"exponent", Types::Numeric}}, false,
                            false);
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const View &a = ops.input(d, 0), &b = ops.input(d, 1), &y = ops.out[0];
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      if (isFloat(a.dtype)) {
        y.set(o, std::pow(a.get(at[0]), b.get(at[1])));
      } else if (isFloat(b.dtype)) {
        storeTruncated(y, o, std::pow(a.get(at[0]), b.get(at[1])));
      } else {
        const int64_t base = a.getInt(at[0]), e = b.getInt(at[1]);
        if (isSigned(b.dtype) && e < 0) {
          const bool minusOne = isSigned(a.dtype) && base == -1;
          y.setInt(o, base == 1 ? 1 : minusOne ? ((e & 1) ? -1 : 1) : 0);
        } else {
          y.setInt(o, wrap(powWrapped(uint64_t(base), uint64_t(e))));
        }
      }
    });
  };
  return {OpKind::Pow, check, run};
}

// BitShift (ONNX BitShift, unsigned only as the ODS verifier requires): a
// shift by the element width or more gives 0 (as numpy).
OpDef bitShiftOp() {
  auto check = [](const KernelDesc &d) {
    std::string why =
        checkElementwise(d, {{"lhs", Types::Unsigned}, {"rhs", Types::Unsigned}}, false);
    return why.empty() ? checkEnumAttr(d, "direction", "", {"left", "right"}, true) : why;
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const bool left = d.getString("direction", "") == "left";
    const View &a = ops.input(d, 0), &b = ops.input(d, 1), &y = ops.out[0];
    const uint64_t width = 8 * cgc_dtype_size(a.dtype);
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      uint64_t v = uint64_t(a.getInt(at[0])), n = uint64_t(b.getInt(at[1]));
      y.setInt(o, wrap(n >= width ? 0 : left ? v << n : v >> n));
    });
  };
  return {OpKind::BitShift, check, run};
}

// PRelu (ODS, ONNX PRelu): slope broadcasts to the input's shape only.
OpDef preluOp() {
  auto check = [](const KernelDesc &d) {
    std::vector<Operand> operands = {{"input", Types::Signed}, {"slope", Types::Signed}};
    std::string why = checkInputs(d, operands);
    if (why.empty())
      why = checkSameDType(d, 0, 1, operands);
    if (!why.empty())
      return why;
    std::vector<int64_t> shape;
    if (!broadcastShapes(d.inputs[0]->shape, d.inputs[1]->shape, shape) ||
        shape != d.inputs[0]->shape)
      return "slope shape " + shapeText(d.inputs[1]->shape) +
             " does not broadcast to the input shape " + shapeText(d.inputs[0]->shape);
    return checkOutput(d, d.inputs[0]->dtype, shape);
  };
  Binary op{OpKind::PRelu, Types::Signed, false,
            [](double x, double slope) { return x < 0 ? slope * x : x; },
            [](int64_t x, int64_t slope) {
              return x < 0 ? wrap(uint64_t(slope) * uint64_t(x)) : x;
            },
            [](uint64_t x, uint64_t) { return x; }};
  return {OpKind::PRelu, check,
          [op](const KernelDesc &d, const Operands &ops) { runBinary(op, d, ops); }};
}

// Where: x where condition, else y; all three broadcast.
OpDef whereOp() {
  auto check = [](const KernelDesc &d) {
    std::vector<Operand> operands = {
        {"condition", Types::Bool}, {"x", Types::Any}, {"y", Types::Any}};
    std::string why = checkInputs(d, operands);
    if (why.empty())
      why = checkSameDType(d, 1, 2, operands);
    std::vector<int64_t> shape;
    if (why.empty())
      why = broadcastInputs(d, shape);
    return why.empty() ? checkOutput(d, d.inputs[1]->dtype, shape) : why;
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const View &c = ops.input(d, 0), &x = ops.input(d, 1), &y = ops.input(d, 2);
    const View &out = ops.out[0];
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      if (c.getInt(at[0]))
        out.copyFrom(o, x, at[1]);
      else
        out.copyFrom(o, y, at[2]);
    });
  };
  return {OpKind::Where, check, run};
}

// IsInf (ODS, ONNX IsInf): +inf if detect_positive, -inf if detect_negative.
OpDef isInfOp() {
  auto check = [](const KernelDesc &d) {
    std::string why = checkUnary(d, Types::Float, true);
    if (why.empty())
      why = checkAttr(d, "detect_positive", Kind::Bool);
    return why.empty() ? checkAttr(d, "detect_negative", Kind::Bool) : why;
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const bool positive = d.getBool("detect_positive", true);
    const bool negative = d.getBool("detect_negative", true);
    const View &x = ops.input(d, 0), &y = ops.out[0];
    forEachElement(d, ops, [&](int64_t o, const Index &at) {
      const double v = x.get(at[0]);
      y.setInt(o, std::isinf(v) && (v > 0 ? positive : negative));
    });
  };
  return {OpKind::IsInf, check, run};
}

// erf_gelu(x, k1, k2, k3) (a kernel-library op the cpu target folds
// PyTorch's exported GELU into, runtime/drivers/cpu/kernels/ops/gelu.cpp):
// the five layers y = x * (erf(x / k1) + k2) * k3, x * k1 with `multiply`,
// each rounded to the element type as the unfused layers store it, so the
// result is the unfused chain's. k1, k2, k3 have one element each.
OpDef erfGeluOp() {
  auto check = [](const KernelDesc &d) {
    std::vector<Operand> operands = {
        {"input", Types::Float}, {"k1", Types::Float}, {"k2", Types::Float}, {"k3", Types::Float}};
    std::string why = checkInputs(d, operands);
    for (size_t i = 1; why.empty() && i < 4; ++i) {
      why = checkSameDType(d, 0, i, operands);
      int64_t n = 1;
      for (int64_t dim : d.inputs[i]->shape)
        n *= dim;
      if (why.empty() && n != 1)
        why = std::string("input '") + operands[i].name + "' has shape " +
              shapeText(d.inputs[i]->shape) + "; expected one element";
    }
    if (why.empty())
      why = checkAttr(d, "multiply", Kind::Bool);
    return why.empty() ? checkOutput(d, d.inputs[0]->dtype, d.inputs[0]->shape) : why;
  };
  auto run = [](const KernelDesc &d, const Operands &ops) {
    const bool multiply = d.getBool("multiply", false);
    const View &x = ops.input(d, 0), &y = ops.out[0];
    const double k1 = ops.input(d, 1).get(0), k2 = ops.input(d, 2).get(0),
                 k3 = ops.input(d, 3).get(0);
    const cgc_dtype_t t = x.dtype;
    // Only input 0 has the output's shape: the constants are read above.
    forEachIndex(y.shape, [&](const Index &index) {
      const double v = x.at(index);
      const double scaled = roundTo(t, multiply ? v * k1 : v / k1);
      const double sum = roundTo(t, roundTo(t, std::erf(scaled)) + k2);
      y.set(y.offset(index), roundTo(t, v * sum) * k3);
    });
  };
  return {OpKind::ErfGelu, check, run};
}

} // namespace

void addElementwiseOps(std::vector<OpDef> &ops) {
  //===--- Unary math on floats ---===//
  const std::pair<OpKind, double (*)(double)> math[] = {
      {OpKind::Acos, [](double x) { return std::acos(x); }},
      {OpKind::Acosh, [](double x) { return std::acosh(x); }},
      {OpKind::Asin, [](double x) { return std::asin(x); }},
      {OpKind::Asinh, [](double x) { return std::asinh(x); }},
      {OpKind::Atan, [](double x) { return std::atan(x); }},
      {OpKind::Atanh, [](double x) { return std::atanh(x); }},
      {OpKind::Ceil, [](double x) { return std::ceil(x); }},
      {OpKind::Cos, [](double x) { return std::cos(x); }},
      {OpKind::Cosh, [](double x) { return std::cosh(x); }},
      {OpKind::Erf, [](double x) { return std::erf(x); }},
      {OpKind::Exp, [](double x) { return std::exp(x); }},
      {OpKind::Floor, [](double x) { return std::floor(x); }},
      {OpKind::Log, [](double x) { return std::log(x); }},
      {OpKind::Reciprocal, [](double x) { return 1.0 / x; }},
      {OpKind::Round, roundHalfEven},
      {OpKind::Sin, [](double x) { return std::sin(x); }},
      {OpKind::Sinh, [](double x) { return std::sinh(x); }},
      {OpKind::Sqrt, [](double x) { return std::sqrt(x); }},
      {OpKind::Tan, [](double x) { return std::tan(x); }},
      {OpKind::Tanh, [](double x) { return std::tanh(x); }},
      {OpKind::Sigmoid, sigmoid},
      {OpKind::Softplus, softplus},
      {OpKind::Softsign, [](double x) { return x / (1.0 + std::fabs(x)); }},
      // ONNX HardSwish: x * hard_sigmoid(x) with alpha 1/6, beta 0.5.
      {OpKind::HardSwish, [](double x) { return x * clamp01(x / 6.0 + 0.5); }},
      {OpKind::Mish, [](double x) { return x * std::tanh(softplus(x)); }},
      // swish (SiLU, x * sigmoid(x)): the cpu target's fold of sigmoid + mul.
      {OpKind::Swish, [](double x) { return x * sigmoid(x); }},
  };
  for (const auto &[kind, fn] : math)
    ops.push_back(floatUnary(kind, fn));

  //===--- Activations with attributes (ODS defaults when absent) ---===//
  // Gelu: `approximate` "none" (erf) or "tanh" (ONNX Gelu-20).
  ops.push_back(floatUnary(
      OpKind::Gelu,
      [](const KernelDesc &d) -> Fn {
        if (d.getString("approximate", "none") == "tanh")
          return [](double x) {
            const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
            return 0.5 * x * (1.0 + std::tanh(inner));
          };
        return [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); };
      },
      [](const KernelDesc &d) {
        return checkEnumAttr(d, "approximate", "none", {"none", "tanh"});
      }));
  ops.push_back(floatUnary(
      OpKind::LeakyRelu,
      [](const KernelDesc &d) -> Fn {
        const double alpha = d.getFloat("alpha", 0.01f);
        return [alpha](double x) { return x >= 0 ? x : alpha * x; };
      },
      floatAttrs({"alpha"})));
  ops.push_back(floatUnary(
      OpKind::Elu,
      [](const KernelDesc &d) -> Fn {
        const double alpha = d.getFloat("alpha", 1.0);
        return [alpha](double x) { return x >= 0 ? x : alpha * std::expm1(x); };
      },
      floatAttrs({"alpha"})));
  ops.push_back(floatUnary(
      OpKind::Selu,
      [](const KernelDesc &d) -> Fn {
        const double alpha = d.getFloat("alpha", 1.67326319217681884765625);
        const double gamma = d.getFloat("gamma", 1.05070102214813232421875);
        return [alpha, gamma](double x) {
          return x > 0 ? gamma * x : gamma * alpha * std::expm1(x);
        };
      },
      floatAttrs({"alpha", "gamma"})));
  // Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha != 0.
  ops.push_back(floatUnary(
      OpKind::Celu,
      [](const KernelDesc &d) -> Fn {
        const double alpha = d.getFloat("alpha", 1.0);
        return [alpha](double x) {
          return maxNaN(0.0, x) + minNaN(0.0, alpha * std::expm1(x / alpha));
        };
      },
      [](const KernelDesc &d) {
        std::string why = checkAttr(d, "alpha", Kind::Float);
        return why.empty() && d.getFloat("alpha", 1.0) == 0 ? "attribute 'alpha' must not be 0"
                                                             : why;
      }));
  ops.push_back(floatUnary(
      OpKind::HardSigmoid,
      [](const KernelDesc &d) -> Fn {
        const double alpha = d.getFloat("alpha", 0.2f), beta = d.getFloat("beta", 0.5);
        return [alpha, beta](double x) { return clamp01(alpha * x + beta); };
      },
      floatAttrs({"alpha", "beta"})));
  ops.push_back(floatUnary(
      OpKind::ThresholdedRelu,
      [](const KernelDesc &d) -> Fn {
        const double alpha = d.getFloat("alpha", 1.0);
        return [alpha](double x) { return x > alpha ? x : 0.0; };
      },
      floatAttrs({"alpha"})));
  ops.push_back(floatUnary(
      OpKind::Shrink,
      [](const KernelDesc &d) -> Fn {
        const double bias = d.getFloat("bias", 0.0), lambd = d.getFloat("lambd", 0.5);
        return [bias, lambd](double x) {
          return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0;
        };
      },
      floatAttrs({"bias", "lambd"})));
  ops.push_back(clipOp());

  //===--- Unary ops on integers too ---===//
  ops.push_back(numericUnary(
      {OpKind::Relu, Types::Signed, [](double x) { return std::isnan(x) ? x : x > 0 ? x : 0.0; },
       [](int64_t x) { return x > 0 ? x : int64_t(0); }, [](uint64_t x) { return x; }}));
  ops.push_back(numericUnary({OpKind::Neg, Types::Signed, [](double x) { return -x; },
                              [](int64_t x) { return wrap(0 - uint64_t(x)); },
                              [](uint64_t x) { return 0 - x; }}));
  ops.push_back(numericUnary({OpKind::Abs, Types::Numeric, [](double x) { return std::fabs(x); },
                              [](int64_t x) { return x < 0 ? wrap(0 - uint64_t(x)) : x; },
                              [](uint64_t x) { return x; }}));
  // Sign: -1, 0 or 1; NaN stays NaN.
  ops.push_back(numericUnary(
      {OpKind::Sign, Types::Numeric,
       [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : std::isnan(x) ? x : 0.0; },
       [](int64_t x) { return int64_t(x > 0) - int64_t(x < 0); },
       [](uint64_t x) { return uint64_t(x > 0); }}));

  //===--- Unary tests, logic and copies ---===//
  ops.push_back({OpKind::IsNaN,
                 [](const KernelDesc &d) { return checkUnary(d, Types::Float, true); },
                 [](const KernelDesc &d, const Operands &ops) {
                   const View &x = ops.input(d, 0), &y = ops.out[0];
                   forEachElement(d, ops, [&](int64_t o, const Index &at) {
                     y.setInt(o, std::isnan(x.get(at[0])));
                   });
                 }});
  ops.push_back(isInfOp());
  ops.push_back({OpKind::Not, [](const KernelDesc &d) { return checkUnary(d, Types::Bool); },
                 [](const KernelDesc &d, const Operands &ops) {
                   const View &x = ops.input(d, 0), &y = ops.out[0];
                   forEachElement(d, ops, [&](int64_t o, const Index &at) {
                     y.setInt(o, x.getInt(at[0]) == 0);
                   });
                 }});
  ops.push_back({OpKind::Identity, [](const KernelDesc &d) { return checkUnary(d, Types::Any); },
                 [](const KernelDesc &d, const Operands &ops) {
                   const View &x = ops.input(d, 0), &y = ops.out[0];
                   forEachElement(d, ops, [&](int64_t o, const Index &at) {
                     y.copyFrom(o, x, at[0]);
                   });
                 }});
  ops.push_back(castOp());

  //===--- Binary ---===//
  const Binary binaries[] = {
      {OpKind::Add, Types::Numeric, false, [](double a, double b) { return a + b; },
       [](int64_t a, int64_t b) { return wrap(uint64_t(a) + uint64_t(b)); },
       [](uint64_t a, uint64_t b) { return a + b; }},
      {OpKind::Sub, Types::Numeric, false, [](double a, double b) { return a - b; },
       [](int64_t a, int64_t b) { return wrap(uint64_t(a) - uint64_t(b)); },
       [](uint64_t a, uint64_t b) { return a - b; }},
      {OpKind::Mul, Types::Numeric, false, [](double a, double b) { return a * b; },
       [](int64_t a, int64_t b) { return wrap(uint64_t(a) * uint64_t(b)); },
       [](uint64_t a, uint64_t b) { return a * b; }},
      {OpKind::Div, Types::Numeric, false, [](double a, double b) { return a / b; }, divSigned,
       divUnsigned},
      // Max, Min: NaN if either operand is NaN (ONNX's reference: numpy).
      {OpKind::Max, Types::Numeric, false, maxNaN,
       [](int64_t a, int64_t b) { return std::max(a, b); },
       [](uint64_t a, uint64_t b) { return std::max(a, b); }},
      {OpKind::Min, Types::Numeric, false, minNaN,
       [](int64_t a, int64_t b) { return std::min(a, b); },
       [](uint64_t a, uint64_t b) { return std::min(a, b); }},
      {OpKind::Equal, Types::Any, true, [](double a, double b) { return double(a == b); },
       [](int64_t a, int64_t b) { return int64_t(a == b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a == b); }},
      {OpKind::Less, Types::Numeric, true, [](double a, double b) { return double(a < b); },
       [](int64_t a, int64_t b) { return int64_t(a < b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a < b); }},
      {OpKind::LessOrEqual, Types::Numeric, true, [](double a, double b) { return double(a <= b); },
       [](int64_t a, int64_t b) { return int64_t(a <= b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a <= b); }},
      {OpKind::Greater, Types::Numeric, true, [](double a, double b) { return double(a > b); },
       [](int64_t a, int64_t b) { return int64_t(a > b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a > b); }},
      {OpKind::GreaterOrEqual, Types::Numeric, true,
       [](double a, double b) { return double(a >= b); },
       [](int64_t a, int64_t b) { return int64_t(a >= b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a >= b); }},
      // And, Or, Xor on bool (the int64 path).
      {OpKind::And, Types::Bool, false, [](double a, double b) { return double(a && b); },
       [](int64_t a, int64_t b) { return int64_t(a && b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a && b); }},
      {OpKind::Or, Types::Bool, false, [](double a, double b) { return double(a || b); },
       [](int64_t a, int64_t b) { return int64_t(a || b); },
       [](uint64_t a, uint64_t b) { return uint64_t(a || b); }},
      {OpKind::Xor, Types::Bool, false,
       [](double a, double b) { return double((a != 0) != (b != 0)); },
       [](int64_t a, int64_t b) { return int64_t((a != 0) != (b != 0)); },
       [](uint64_t a, uint64_t b) { return uint64_t((a != 0) != (b != 0)); }},
  };
  for (const Binary &op : binaries)
    ops.push_back(binary(op));
  ops.push_back(modOp());
  ops.push_back(powOp());
  ops.push_back(bitShiftOp());
  ops.push_back(preluOp());
  ops.push_back(whereOp());
  ops.push_back(erfGeluOp());
}

} // namespace cgc::reference
