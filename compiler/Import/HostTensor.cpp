//===- HostTensor.cpp - Small tensors evaluated at import time ------------===//

#include "compiler/Import/HostTensor.h"

#include "llvm/ADT/APFloat.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;

namespace cgc {

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

HostTensor::HostTensor(ElementKind kind, ArrayRef<int64_t> shape)
    : kind(kind), shape(shape.begin(), shape.end()) {
  count = 1;
  for (int64_t dim : shape)
    count *= dim;
  if (isFloatKind(kind))
    floats.assign(count, 0.0);
  else
    ints.assign(count, 0);
}

HostTensor HostTensor::fromInts(ElementKind kind, ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> values) {
  HostTensor tensor(kind, shape);
  assert(static_cast<int64_t>(values.size()) == tensor.count);
  for (int64_t i = 0; i < tensor.count; ++i)
    tensor.setInt(i, values[i]);
  return tensor;
}

HostTensor HostTensor::fromFloats(ElementKind kind, ArrayRef<int64_t> shape,
                                  ArrayRef<double> values) {
  HostTensor tensor(kind, shape);
  assert(static_cast<int64_t>(values.size()) == tensor.count);
  for (int64_t i = 0; i < tensor.count; ++i)
    tensor.setFloat(i, values[i]);
  return tensor;
}

double HostTensor::roundFloat(ElementKind kind, double value) {
  switch (kind) {
  case ElementKind::Float64:
    return value;
  case ElementKind::Float32:
    return static_cast<double>(static_cast<float>(value));
  case ElementKind::Float16:
  case ElementKind::BFloat16: {
    llvm::APFloat f(value);
    bool lossy;
    f.convert(kind == ElementKind::Float16 ? llvm::APFloat::IEEEhalf()
                                           : llvm::APFloat::BFloat(),
              llvm::APFloat::rmNearestTiesToEven, &lossy);
    f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lossy);
    return f.convertToDouble();
  }
  default:
    return value;
  }
}

int64_t HostTensor::wrapInt(ElementKind kind, int64_t value) {
  switch (kind) {
  case ElementKind::Bool:
    return value != 0;
  case ElementKind::Int8:
    return static_cast<int8_t>(value);
  case ElementKind::UInt8:
    return static_cast<uint8_t>(value);
  case ElementKind::Int16:
    return static_cast<int16_t>(value);
  case ElementKind::UInt16:
    return static_cast<uint16_t>(value);
  case ElementKind::Int32:
    return static_cast<int32_t>(value);
  case ElementKind::UInt32:
    return static_cast<uint32_t>(value);
  default:
    return value;
  }
}

int64_t HostTensor::floatToInt(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (value <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

double HostTensor::intAsDouble(int64_t value) const {
  if (kind == ElementKind::UInt64)
    return static_cast<double>(static_cast<uint64_t>(value));
  return static_cast<double>(value);
}

void HostTensor::setFloat(int64_t i, double value) {
  if (isFloat()) {
    floats[i] = roundFloat(kind, value);
    return;
  }
  if (kind == ElementKind::Bool) {
    ints[i] = value != 0.0;
    return;
  }
  if (kind == ElementKind::UInt64 && value >= 9.2233720368547758e18) {
    ints[i] = value >= 1.8446744073709552e19
                  ? -1
                  : static_cast<int64_t>(static_cast<uint64_t>(value));
    return;
  }
  ints[i] = wrapInt(kind, floatToInt(value));
}

void HostTensor::setInt(int64_t i, int64_t value) {
  if (isFloat())
    floats[i] = roundFloat(kind, static_cast<double>(value));
  else
    ints[i] = wrapInt(kind, value);
}

SmallVector<int64_t> HostTensor::getInts() const {
  SmallVector<int64_t> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i)
    values.push_back(getInt(i));
  return values;
}

SmallVector<double> HostTensor::getFloats() const {
  SmallVector<double> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i)
    values.push_back(getFloat(i));
  return values;
}

HostTensor HostTensor::withShape(ArrayRef<int64_t> newShape) const {
  HostTensor result = *this;
  result.shape.assign(newShape.begin(), newShape.end());
  return result;
}

bool HostTensor::isSplat() const {
  for (int64_t i = 1; i < count; ++i) {
    if (isFloat() ? std::memcmp(&floats[i], &floats[0], sizeof(double)) != 0
                  : ints[i] != ints[0])
      return false;
  }
  return true;
}

template <typename T>
static T loadLE(const uint8_t *bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

template <typename T>
static void storeLE(uint8_t *bytes, T value) {
  std::memcpy(bytes, &value, sizeof(T));
}

static double halfToDouble(uint16_t bits, bool bfloat) {
  llvm::APInt raw(16, bits);
  llvm::APFloat f(bfloat ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf(),
                  raw);
  bool lossy;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lossy);
  return f.convertToDouble();
}

static uint16_t doubleToHalf(double value, bool bfloat) {
  llvm::APFloat f(value);
  bool lossy;
  f.convert(bfloat ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf(),
            llvm::APFloat::rmNearestTiesToEven, &lossy);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

HostTensor HostTensor::fromBytes(ElementKind kind, ArrayRef<int64_t> shape,
                                 ArrayRef<uint8_t> bytes) {
  HostTensor tensor(kind, shape);
  unsigned size = getByteSize(kind);
  assert(bytes.size() == static_cast<size_t>(tensor.count) * size);
  const uint8_t *p = bytes.data();
  for (int64_t i = 0; i < tensor.count; ++i, p += size) {
    switch (kind) {
    case ElementKind::Float32:
      tensor.floats[i] = loadLE<float>(p);
      break;
    case ElementKind::Float64:
      tensor.floats[i] = loadLE<double>(p);
      break;
    case ElementKind::Float16:
      tensor.floats[i] = halfToDouble(loadLE<uint16_t>(p), false);
      break;
    case ElementKind::BFloat16:
      tensor.floats[i] = halfToDouble(loadLE<uint16_t>(p), true);
      break;
    case ElementKind::Bool:
      tensor.ints[i] = *p != 0;
      break;
    case ElementKind::Int8:
      tensor.ints[i] = loadLE<int8_t>(p);
      break;
    case ElementKind::UInt8:
      tensor.ints[i] = loadLE<uint8_t>(p);
      break;
    case ElementKind::Int16:
      tensor.ints[i] = loadLE<int16_t>(p);
      break;
    case ElementKind::UInt16:
      tensor.ints[i] = loadLE<uint16_t>(p);
      break;
    case ElementKind::Int32:
      tensor.ints[i] = loadLE<int32_t>(p);
      break;
    case ElementKind::UInt32:
      tensor.ints[i] = loadLE<uint32_t>(p);
      break;
    case ElementKind::Int64:
    case ElementKind::UInt64:
      tensor.ints[i] = loadLE<int64_t>(p);
      break;
    }
  }
  return tensor;
}

std::vector<uint8_t> HostTensor::toBytes() const {
  unsigned size = getByteSize(kind);
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * size);
  uint8_t *p = bytes.data();
  for (int64_t i = 0; i < count; ++i, p += size) {
    switch (kind) {
    case ElementKind::Float32:
      storeLE<float>(p, static_cast<float>(floats[i]));
      break;
    case ElementKind::Float64:
      storeLE<double>(p, floats[i]);
      break;
    case ElementKind::Float16:
      storeLE<uint16_t>(p, doubleToHalf(floats[i], false));
      break;
    case ElementKind::BFloat16:
      storeLE<uint16_t>(p, doubleToHalf(floats[i], true));
      break;
    case ElementKind::Bool:
    case ElementKind::Int8:
    case ElementKind::UInt8:
      *p = static_cast<uint8_t>(ints[i]);
      break;
    case ElementKind::Int16:
    case ElementKind::UInt16:
      storeLE<uint16_t>(p, static_cast<uint16_t>(ints[i]));
      break;
    case ElementKind::Int32:
    case ElementKind::UInt32:
      storeLE<uint32_t>(p, static_cast<uint32_t>(ints[i]));
      break;
    case ElementKind::Int64:
    case ElementKind::UInt64:
      storeLE<int64_t>(p, ints[i]);
      break;
    }
  }
  return bytes;
}

} // namespace cgc
