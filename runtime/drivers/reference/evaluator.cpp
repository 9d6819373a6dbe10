//===- evaluator.cpp - Operand views and the op table ---------------------===//

#include "ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace cgc::reference {

bool isFloat(cgc_dtype_t dtype) {
  return dtype == CGC_DTYPE_FLOAT32 || dtype == CGC_DTYPE_FLOAT64 || dtype == CGC_DTYPE_FLOAT16 ||
         dtype == CGC_DTYPE_BFLOAT16;
}

bool isInteger(cgc_dtype_t dtype) {
  switch (dtype) {
  case CGC_DTYPE_INT8: case CGC_DTYPE_UINT8: case CGC_DTYPE_INT16: case CGC_DTYPE_UINT16:
  case CGC_DTYPE_INT32: case CGC_DTYPE_UINT32: case CGC_DTYPE_INT64: case CGC_DTYPE_UINT64:
    return true;
  default:
    return false;
  }
}

void fail(const std::string &message) { throw EvalError(message); }

namespace {

template <class T> T loadAs(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T> void storeAs(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

double bf16ToDouble(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

/// Round to nearest even from float (the value first rounds to float).
uint16_t doubleToBf16(double v) {
  float f = float(v);
  uint32_t word;
  std::memcpy(&word, &f, 4);
  if (std::isnan(f))
    return uint16_t((word >> 16) | 0x40); // quiet
  uint32_t rounding = 0x7FFF + ((word >> 16) & 1);
  return uint16_t((word + rounding) >> 16);
}

/// A C++ cast through int64 of a double that may be out of range or NaN
/// (undefined behaviour in C++): saturated, NaN as 0.
int64_t toInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775807.0)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

} // namespace

View::View(const KernelOperand &operand, const void *bytes)
    : dtype(operand.dtype), shape(operand.shape), strides(operand.effectiveStrides()),
      data(static_cast<uint8_t *>(const_cast<void *>(bytes))) {}

int64_t View::count() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t View::offset(const std::vector<int64_t> &index) const {
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i)
    off += index[i] * strides[i];
  return off;
}

double View::get(int64_t off) const {
  const uint8_t *p = data + off * int64_t(cgc_dtype_size(dtype));
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: return loadAs<float>(p);
  case CGC_DTYPE_FLOAT64: return loadAs<double>(p);
  case CGC_DTYPE_FLOAT16: return double(loadAs<_Float16>(p));
  case CGC_DTYPE_BFLOAT16: return bf16ToDouble(loadAs<uint16_t>(p));
  case CGC_DTYPE_BOOL: return *p ? 1.0 : 0.0;
  case CGC_DTYPE_UINT64: return double(loadAs<uint64_t>(p));
  default: return double(getInt(off));
  }
}

void View::set(int64_t off, double v) const {
  uint8_t *p = data + off * int64_t(cgc_dtype_size(dtype));
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: storeAs(p, float(v)); return;
  case CGC_DTYPE_FLOAT64: storeAs(p, v); return;
  case CGC_DTYPE_FLOAT16: storeAs(p, _Float16(v)); return;
  case CGC_DTYPE_BFLOAT16: storeAs(p, doubleToBf16(v)); return;
  case CGC_DTYPE_BOOL: *p = v != 0 ? 1 : 0; return;
  case CGC_DTYPE_UINT64:
    storeAs(p, v >= 18446744073709551616.0 || std::isnan(v) ? uint64_t(0)
               : v < 0 ? uint64_t(toInt64(v)) : uint64_t(v));
    return;
  default: setInt(off, toInt64(v)); return;
  }
}

int64_t View::getInt(int64_t off) const {
  const uint8_t *p = data + off * int64_t(cgc_dtype_size(dtype));
  switch (dtype) {
  case CGC_DTYPE_INT8: return loadAs<int8_t>(p);
  case CGC_DTYPE_UINT8: return loadAs<uint8_t>(p);
  case CGC_DTYPE_INT16: return loadAs<int16_t>(p);
  case CGC_DTYPE_UINT16: return loadAs<uint16_t>(p);
  case CGC_DTYPE_INT32: return loadAs<int32_t>(p);
  case CGC_DTYPE_UINT32: return loadAs<uint32_t>(p);
  case CGC_DTYPE_INT64: return loadAs<int64_t>(p);
  case CGC_DTYPE_UINT64: return int64_t(loadAs<uint64_t>(p));
  case CGC_DTYPE_BOOL: return *p ? 1 : 0;
  default: return toInt64(get(off));
  }
}

void View::setInt(int64_t off, int64_t v) const {
  uint8_t *p = data + off * int64_t(cgc_dtype_size(dtype));
  switch (dtype) {
  case CGC_DTYPE_INT8: storeAs(p, int8_t(v)); return;
  case CGC_DTYPE_UINT8: storeAs(p, uint8_t(v)); return;
  case CGC_DTYPE_INT16: storeAs(p, int16_t(v)); return;
  case CGC_DTYPE_UINT16: storeAs(p, uint16_t(v)); return;
  case CGC_DTYPE_INT32: storeAs(p, int32_t(v)); return;
  case CGC_DTYPE_UINT32: storeAs(p, uint32_t(v)); return;
  case CGC_DTYPE_INT64: storeAs(p, v); return;
  case CGC_DTYPE_UINT64: storeAs(p, uint64_t(v)); return;
  case CGC_DTYPE_BOOL: *p = v != 0 ? 1 : 0; return;
  default: set(off, double(v)); return;
  }
}

void View::copyFrom(int64_t off, const View &src, int64_t srcOff) const {
  size_t size = cgc_dtype_size(dtype);
  std::memcpy(data + off * int64_t(size), src.data + srcOff * int64_t(size), size);
}

void forEachIndex(const std::vector<int64_t> &shape,
                  const std::function<void(const std::vector<int64_t> &)> &f) {
  for (int64_t d : shape)
    if (d <= 0)
      return;
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    f(index);
    size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
      if (d == 0)
        return;
    }
    if (shape.empty())
      return;
  }
}

std::vector<int64_t> broadcastIndex(const std::vector<int64_t> &index,
                                    const std::vector<int64_t> &inputShape) {
  std::vector<int64_t> result(inputShape.size(), 0);
  size_t lead = index.size() - inputShape.size();
  for (size_t i = 0; i < inputShape.size(); ++i)
    result[i] = inputShape[i] == 1 ? 0 : index[lead + i];
  return result;
}

int64_t normalizeAxis(const std::string &op, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    fail(op + ": axis " + std::to_string(axis) + " is outside a rank-" + std::to_string(rank) +
         " operand");
  return a;
}

const View &Operands::input(const KernelDesc &desc, size_t i) const {
  if (!has(i))
    fail(desc.op + ": input " + std::to_string(i) + " is absent");
  return *in[i];
}

namespace {

const std::map<OpKind, OpDef> &table() {
  static const std::map<OpKind, OpDef> ops = [] {
    std::vector<OpDef> list;
    addElementwiseOps(list);
    addReductionOps(list);
    addNormalizationOps(list);
    addLinearOps(list);
    addPoolingOps(list);
    addMovementOps(list);
    std::map<OpKind, OpDef> map;
    for (OpDef &def : list)
      map.emplace(def.kind, std::move(def));
    return map;
  }();
  return ops;
}

} // namespace

std::string unsupported(const KernelDesc &desc) {
  auto it = table().find(desc.kind());
  if (it == table().end())
    return (desc.op.empty() ? std::string("<empty op name>") : desc.op) +
           ": the reference evaluator does not implement this op";
  for (const auto &in : desc.inputs)
    if (in && (cgc_dtype_size(in->dtype) == 0 || in->strides.size() > in->shape.size() ||
               (!in->strides.empty() && in->strides.size() != in->shape.size())))
      return desc.op + ": an input with an invalid dtype or strides";
  for (const auto &out : desc.outputs)
    if (cgc_dtype_size(out.dtype) == 0 ||
        (!out.strides.empty() && out.strides.size() != out.shape.size()))
      return desc.op + ": an output with an invalid dtype or strides";
  if (it->second.check) {
    std::string why = it->second.check(desc);
    if (!why.empty())
      return desc.op + ": " + why;
  }
  return "";
}

void evaluate(const KernelDesc &desc, const void *const *inputs, void *const *outputs) {
  auto it = table().find(desc.kind());
  if (it == table().end())
    fail(desc.op + ": the reference evaluator does not implement this op");
  Operands operands;
  for (size_t i = 0; i < desc.inputs.size(); ++i) {
    if (desc.inputs[i] && inputs[i])
      operands.in.emplace_back(View(*desc.inputs[i], inputs[i]));
    else
      operands.in.emplace_back(std::nullopt);
  }
  for (size_t i = 0; i < desc.outputs.size(); ++i)
    operands.out.emplace_back(desc.outputs[i], outputs[i]);
  it->second.run(desc, operands);
}

std::vector<std::string> supportedOps() {
  std::vector<std::string> names;
  for (const auto &[kind, def] : table())
    names.emplace_back(opName(kind));
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace cgc::reference
