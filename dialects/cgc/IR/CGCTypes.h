//===- CGCTypes.h - Types of the cgc dialect --------------------*- C++ -*-===//

#ifndef CGC_IR_CGCTYPES_H
#define CGC_IR_CGCTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace cgc {

/// The scalar kinds of CGC element types. The values are those of ONNX's
/// TensorProto.DataType so that importers and runtimes convert by value.
enum class ElementKind : uint8_t {
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

/// Size in bytes of one element (a bool takes one byte).
unsigned getByteSize(ElementKind kind);
bool isFloatKind(ElementKind kind);
bool isIntegerKind(ElementKind kind); // excludes bool
bool isSignedIntegerKind(ElementKind kind);
/// The type mnemonic without the dialect prefix: "float32", "int8", ...
llvm::StringRef stringifyElementKind(ElementKind kind);
std::optional<ElementKind> symbolizeElementKind(llvm::StringRef name);

/// Returns the `!cgc.<kind>` element type.
mlir::Type getElementType(mlir::MLIRContext *context, ElementKind kind);

} // namespace cgc

#include "cgc/IR/CGCTypeInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "cgc/IR/CGCTypes.h.inc"

namespace cgc {

/// True if `type` is a CGC element type.
inline bool isElementType(mlir::Type type) {
  return llvm::isa<ElementTypeInterface>(type);
}
/// The element kind of a CGC element type, or of the elements of a CGC
/// tensor/memref. Asserts on anything else.
ElementKind getElementKind(mlir::Type type);
/// True if `type` is a tensor or memref whose element kind is in `kinds`.
bool hasElementKind(mlir::Type type, std::initializer_list<ElementKind> kinds);
/// True if `type` is a tensor or memref of floating-point elements.
bool hasFloatElements(mlir::Type type);
/// True if `type` is a tensor or memref of integer (not bool) elements.
bool hasIntegerElements(mlir::Type type);
/// Contiguous row-major strides (in elements) of `shape`.
llvm::SmallVector<int64_t> getContiguousStrides(llvm::ArrayRef<int64_t> shape);
/// Bytes of a contiguous tensor/memref of this shaped type.
int64_t getContiguousByteSize(TensorLikeType type);

} // namespace cgc

#endif // CGC_IR_CGCTYPES_H
