//===- HostTensor.h - Small tensors evaluated at import time ----*- C++ -*-===//
//
// A dense tensor held on the host while importing: the values of small
// constants that become attributes (shapes, axes, pads), and the results of
// constant subgraphs the importer folds (Shape -> Gather -> Concat ->
// Reshape). Integers and booleans are held as int64 (uint64 by bit pattern),
// floating-point values as double rounded to their element type after every
// store, so that folding matches the element type's arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_HOSTTENSOR_H
#define CGC_COMPILER_IMPORT_HOSTTENSOR_H

#include "cgc/IR/CGCTypes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cgc {

class HostTensor {
public:
  HostTensor() = default;
  /// A zero-filled tensor.
  HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  static HostTensor fromInts(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> values);
  static HostTensor fromFloats(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                               llvm::ArrayRef<double> values);
  /// Decodes little-endian bytes of `kind` (`bytes.size()` must match).
  static HostTensor fromBytes(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                              llvm::ArrayRef<uint8_t> bytes);
  /// Encodes as little-endian bytes of the element kind.
  std::vector<uint8_t> toBytes() const;

  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return shape.size(); }
  int64_t getNumElements() const { return count; }
  bool isFloat() const { return isFloatKind(kind); }

  /// Element `i` (row-major) as a double / as an int64. Reading a float as
  /// an integer truncates toward zero.
  double getFloat(int64_t i) const {
    return isFloat() ? floats[i] : intAsDouble(ints[i]);
  }
  int64_t getInt(int64_t i) const {
    return isFloat() ? floatToInt(floats[i]) : ints[i];
  }
  /// Stores with the element type's rounding or wrap-around (casts).
  void setFloat(int64_t i, double value);
  void setInt(int64_t i, int64_t value);
  /// Copies element `from` of `other` (same kind) into element `i`.
  void copyElement(int64_t i, const HostTensor &other, int64_t from) {
    if (isFloat())
      floats[i] = other.floats[from];
    else
      ints[i] = other.ints[from];
  }

  /// All elements as int64 / as double.
  llvm::SmallVector<int64_t> getInts() const;
  llvm::SmallVector<double> getFloats() const;

  /// The same elements with another shape of the same element count.
  HostTensor withShape(llvm::ArrayRef<int64_t> newShape) const;

  /// True if every element equals the first (or there are none).
  bool isSplat() const;

  /// Rounds `value` to what `kind` can hold (float kinds) or wraps it
  /// (integer kinds, after truncation toward zero).
  static double roundFloat(ElementKind kind, double value);
  static int64_t wrapInt(ElementKind kind, int64_t value);

private:
  double intAsDouble(int64_t value) const;
  static int64_t floatToInt(double value);

  ElementKind kind = ElementKind::Float32;
  llvm::SmallVector<int64_t, 4> shape;
  int64_t count = 0;
  std::vector<double> floats;
  std::vector<int64_t> ints;
};

/// Row-major strides of `shape` in elements.
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);

} // namespace cgc

#endif // CGC_COMPILER_IMPORT_HOSTTENSOR_H
