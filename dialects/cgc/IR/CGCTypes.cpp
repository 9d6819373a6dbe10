//===- CGCTypes.cpp - Types of the cgc dialect ----------------------------===//

#include "cgc/IR/CGCTypes.h"
#include "cgc/IR/CGCDialect.h"
#include "cgc/checked.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace cgc {

//===----------------------------------------------------------------------===//
// Element kinds
//===----------------------------------------------------------------------===//

unsigned cgc::getByteSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::Bool:
  case ElementKind::Int8:
  case ElementKind::UInt8:
    return 1;
  case ElementKind::Int16:
  case ElementKind::UInt16:
  case ElementKind::Float16:
  case ElementKind::BFloat16:
    return 2;
  case ElementKind::Int32:
  case ElementKind::UInt32:
  case ElementKind::Float32:
    return 4;
  case ElementKind::Int64:
  case ElementKind::UInt64:
  case ElementKind::Float64:
    return 8;
  }
  llvm_unreachable("unknown element kind");
}

bool cgc::isFloatKind(ElementKind kind) {
  return kind == ElementKind::Float32 || kind == ElementKind::Float16 ||
         kind == ElementKind::BFloat16 || kind == ElementKind::Float64;
}

bool cgc::isIntegerKind(ElementKind kind) {
  return !isFloatKind(kind) && kind != ElementKind::Bool;
}

bool cgc::isSignedIntegerKind(ElementKind kind) {
  return kind == ElementKind::Int8 || kind == ElementKind::Int16 ||
         kind == ElementKind::Int32 || kind == ElementKind::Int64;
}

StringRef cgc::stringifyElementKind(ElementKind kind) {
  switch (kind) {
  case ElementKind::Float32: return "float32";
  case ElementKind::Float16: return "float16";
  case ElementKind::BFloat16: return "bfloat16";
  case ElementKind::Float64: return "float64";
  case ElementKind::Int8: return "int8";
  case ElementKind::UInt8: return "uint8";
  case ElementKind::Int16: return "int16";
  case ElementKind::UInt16: return "uint16";
  case ElementKind::Int32: return "int32";
  case ElementKind::UInt32: return "uint32";
  case ElementKind::Int64: return "int64";
  case ElementKind::UInt64: return "uint64";
  case ElementKind::Bool: return "bool";
  }
  llvm_unreachable("unknown element kind");
}

std::optional<ElementKind> cgc::symbolizeElementKind(StringRef name) {
  for (ElementKind kind :
       {ElementKind::Float32, ElementKind::Float16, ElementKind::BFloat16,
        ElementKind::Float64, ElementKind::Int8, ElementKind::UInt8,
        ElementKind::Int16, ElementKind::UInt16, ElementKind::Int32,
        ElementKind::UInt32, ElementKind::Int64, ElementKind::UInt64,
        ElementKind::Bool})
    if (stringifyElementKind(kind) == name)
      return kind;
  return std::nullopt;
}

Type cgc::getElementType(MLIRContext *context, ElementKind kind) {
  switch (kind) {
  case ElementKind::Float32: return Float32Type::get(context);
  case ElementKind::Float16: return Float16Type::get(context);
  case ElementKind::BFloat16: return BFloat16Type::get(context);
  case ElementKind::Float64: return Float64Type::get(context);
  case ElementKind::Int8: return Int8Type::get(context);
  case ElementKind::UInt8: return UInt8Type::get(context);
  case ElementKind::Int16: return Int16Type::get(context);
  case ElementKind::UInt16: return UInt16Type::get(context);
  case ElementKind::Int32: return Int32Type::get(context);
  case ElementKind::UInt32: return UInt32Type::get(context);
  case ElementKind::Int64: return Int64Type::get(context);
  case ElementKind::UInt64: return UInt64Type::get(context);
  case ElementKind::Bool: return BoolType::get(context);
  }
  llvm_unreachable("unknown element kind");
}

ElementKind cgc::getElementKind(Type type) {
  if (auto shaped = dyn_cast<TensorLikeType>(type))
    type = shaped.getElementType();
  return cast<ElementTypeInterface>(type).getKind();
}

bool cgc::hasElementKind(Type type, std::initializer_list<ElementKind> kinds) {
  auto shaped = dyn_cast<TensorLikeType>(type);
  if (!shaped || !isElementType(shaped.getElementType()))
    return false;
  ElementKind kind = getElementKind(type);
  return llvm::is_contained(kinds, kind);
}

bool cgc::hasFloatElements(Type type) {
  auto shaped = dyn_cast<TensorLikeType>(type);
  return shaped && isElementType(shaped.getElementType()) &&
         isFloatKind(getElementKind(type));
}

bool cgc::hasIntegerElements(Type type) {
  auto shaped = dyn_cast<TensorLikeType>(type);
  return shaped && isElementType(shaped.getElementType()) &&
         isIntegerKind(getElementKind(type));
}

SmallVector<int64_t> cgc::getContiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return strides;
}

int64_t cgc::getContiguousByteSize(TensorLikeType type) {
  return type.getNumElements() * getByteSize(type.getElementKind());
}

//===----------------------------------------------------------------------===//
// Shared parsing and printing of `<[constant] DIMSx ELT [, strides = [..]]>`
//===----------------------------------------------------------------------===//

namespace {
struct ShapedBody {
  SmallVector<int64_t> shape;
  Type elementType;
  bool isConstant = false;
  SmallVector<int64_t> strides;
};
} // namespace

static ParseResult parseShapedBody(AsmParser &parser, ShapedBody &body,
                                   bool allowStrides) {
  if (parser.parseLess())
    return failure();
  body.isConstant = succeeded(parser.parseOptionalKeyword("constant"));
  if (parser.parseDimensionList(body.shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(body.elementType))
    return failure();
  if (allowStrides && succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("strides") || parser.parseEqual() ||
        parser.parseLSquare())
      return failure();
    if (failed(parser.parseOptionalRSquare())) {
      do {
        int64_t stride;
        if (parser.parseInteger(stride))
          return failure();
        body.strides.push_back(stride);
      } while (succeeded(parser.parseOptionalComma()));
      if (parser.parseRSquare())
        return failure();
    }
  }
  return parser.parseGreater();
}

static void printShapedBody(AsmPrinter &printer, ArrayRef<int64_t> shape,
                            Type elementType, bool isConstant,
                            ArrayRef<int64_t> strides) {
  printer << "<";
  if (isConstant)
    printer << "constant ";
  for (int64_t dim : shape)
    printer << dim << "x";
  printer.printType(elementType);
  if (!strides.empty()) {
    printer << ", strides = [";
    llvm::interleaveComma(strides, printer);
    printer << "]";
  }
  printer << ">";
}

static LogicalResult verifyShapedParams(function_ref<InFlightDiagnostic()> emitError,
                                        StringRef what, ArrayRef<int64_t> shape,
                                        Type elementType) {
  if (!isElementType(elementType))
    return emitError() << what << " element type must be a cgc element type "
                       << "(!cgc.float32, !cgc.int8, ...), got " << elementType;
  for (int64_t dim : shape)
    if (dim < 0)
      return emitError() << what << " dimensions must be static and "
                         << "non-negative, got " << dim;
  size_t elementSize =
      getByteSize(cast<ElementTypeInterface>(elementType).getKind());
  if (!tensorBytes(shape, elementSize))
    return emitError() << what << " is too large: "
                       << tensorSizeError(shape, elementSize);
  return success();
}

//===----------------------------------------------------------------------===//
// TensorType
//===----------------------------------------------------------------------===//

Type TensorType::parse(AsmParser &parser) {
  ShapedBody body;
  SMLoc loc = parser.getCurrentLocation();
  if (parseShapedBody(parser, body, /*allowStrides=*/false))
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), body.shape, body.elementType,
                    body.isConstant);
}

void TensorType::print(AsmPrinter &printer) const {
  printShapedBody(printer, getShape(), getElementType(), getIsConstant(), {});
}

LogicalResult TensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType,
                                 bool isConstant) {
  return verifyShapedParams(emitError, "tensor", shape, elementType);
}

//===----------------------------------------------------------------------===//
// MemRefType
//===----------------------------------------------------------------------===//

ArrayRef<int64_t> MemRefType::normalizeStrides(ArrayRef<int64_t> shape,
                                               ArrayRef<int64_t> strides) {
  if (strides.empty() || strides.size() != shape.size())
    return strides;
  if (ArrayRef<int64_t>(getContiguousStrides(shape)) == strides)
    return {};
  return strides;
}

SmallVector<int64_t> MemRefType::getEffectiveStrides() const {
  if (isContiguous())
    return getContiguousStrides(getShape());
  return SmallVector<int64_t>(getStrides());
}

int64_t MemRefType::getByteSpan() const {
  int64_t elementBytes = getByteSize(getElementKind());
  if (getNumElements() == 0)
    return 0;
  int64_t lastElement = 0;
  SmallVector<int64_t> strides = getEffectiveStrides();
  for (auto [dim, stride] : llvm::zip(getShape(), strides))
    lastElement += (dim - 1) * stride;
  return (lastElement + 1) * elementBytes;
}

Type MemRefType::parse(AsmParser &parser) {
  ShapedBody body;
  SMLoc loc = parser.getCurrentLocation();
  if (parseShapedBody(parser, body, /*allowStrides=*/true))
    return {};
  return getChecked([&] { return parser.emitError(loc); }, body.shape,
                    body.elementType, body.isConstant, body.strides);
}

void MemRefType::print(AsmPrinter &printer) const {
  printShapedBody(printer, getShape(), getElementType(), getIsConstant(),
                  getStrides());
}

LogicalResult MemRefType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType,
                                 bool isConstant, ArrayRef<int64_t> strides) {
  if (failed(verifyShapedParams(emitError, "memref", shape, elementType)))
    return failure();
  if (!strides.empty() && strides.size() != shape.size())
    return emitError() << "memref has " << strides.size()
                       << " strides but rank " << shape.size();
  for (int64_t stride : strides)
    if (stride < 0)
      return emitError() << "memref strides must be non-negative, got "
                         << stride;
  // The bytes the strides span (getByteSpan) must be a size cgc can hold.
  if (!strides.empty() && llvm::none_of(shape, [](int64_t d) { return d == 0; })) {
    std::optional<uint64_t> last = 0;
    for (auto [dim, stride] : llvm::zip(shape, strides)) {
      std::optional<uint64_t> step = checkedMul(uint64_t(dim - 1), uint64_t(stride));
      last = step && last ? checkedAdd(*last, *step) : std::nullopt;
    }
    size_t elementSize =
        getByteSize(cast<ElementTypeInterface>(elementType).getKind());
    std::optional<uint64_t> span =
        last ? checkedAdd(*last, 1) : std::nullopt;
    if (!span || !tensorBytes(int64_t(std::min<uint64_t>(*span, kMaxTensorBytes + 1)),
                              elementSize))
      return emitError() << "memref strides span more than cgc's limit of "
                         << maxTensorBytesText();
  }
  return success();
}

} // namespace cgc

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

#include "cgc/IR/CGCTypeInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "cgc/IR/CGCTypes.cpp.inc"

void cgc::CGCDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "cgc/IR/CGCTypes.cpp.inc"
      >();
}
