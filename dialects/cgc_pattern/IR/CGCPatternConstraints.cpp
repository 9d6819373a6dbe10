//===- CGCPatternConstraints.cpp - Value constraints of patterns ----------===//
//
// The constraints shared by cgc_pattern.input, op, chain and reject_when:
// their verification and their evaluation against concrete types.
//
//===----------------------------------------------------------------------===//

#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace cgc::pattern {

namespace {
/// The constraint attributes of a pattern op, read by name (four op classes
/// share them).
struct Constraints {
  ArrayAttr elementTypes, ranks, shape, dimMultiple;
  IntegerAttr minElements, maxElements, alignment;
  bool contiguous = false;

  explicit Constraints(Operation *op) {
    elementTypes = op->getAttrOfType<ArrayAttr>("element_types");
    ranks = op->getAttrOfType<ArrayAttr>("ranks");
    shape = op->getAttrOfType<ArrayAttr>("shape");
    dimMultiple = op->getAttrOfType<ArrayAttr>("dim_multiple");
    minElements = op->getAttrOfType<IntegerAttr>("min_elements");
    maxElements = op->getAttrOfType<IntegerAttr>("max_elements");
    alignment = op->getAttrOfType<IntegerAttr>("alignment");
    contiguous = static_cast<bool>(op->getAttr("contiguous"));
  }
};

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

std::string listString(ArrayAttr list) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(list, os, [&](Attribute a) {
    if (auto i = dyn_cast<IntegerAttr>(a))
      os << i.getInt();
    else if (auto t = dyn_cast<TypeAttr>(a))
      t.getValue().print(os);
    else
      a.print(os);
  });
  os << "]";
  return text;
}
} // namespace

LogicalResult verifyValueConstraints(Operation *op) {
  Constraints c(op);
  if (c.elementTypes) {
    if (c.elementTypes.empty())
      return op->emitOpError("'element_types' must not be empty");
    for (Attribute a : c.elementTypes)
      if (!isElementType(cast<TypeAttr>(a).getValue()))
        return op->emitOpError("'element_types' entry ")
               << cast<TypeAttr>(a).getValue()
               << " is not a CGC element type";
  }
  if (c.ranks)
    for (APInt value : c.ranks.getAsValueRange<IntegerAttr>())
      if (int64_t rank = value.getSExtValue(); rank < 0)
        return op->emitOpError("'ranks' entries must be non-negative, got ")
               << rank;
  if (c.shape) {
    for (APInt value : c.shape.getAsValueRange<IntegerAttr>())
      if (int64_t dim = value.getSExtValue(); dim < -1)
        return op->emitOpError("'shape' entries must be sizes or -1 (any), "
                               "got ")
               << dim;
    if (c.ranks &&
        !llvm::any_of(c.ranks.getAsValueRange<IntegerAttr>(),
                      [&](const APInt &r) {
                        return r.getSExtValue() ==
                               static_cast<int64_t>(c.shape.size());
                      }))
      return op->emitOpError("'shape' has rank ")
             << c.shape.size() << ", which 'ranks' does not allow";
  }
  if (c.dimMultiple)
    for (Attribute entry : c.dimMultiple) {
      auto pair = dyn_cast<ArrayAttr>(entry);
      if (!pair || pair.size() != 2 || !isa<IntegerAttr>(pair[0]) ||
          !isa<IntegerAttr>(pair[1]))
        return op->emitOpError("'dim_multiple' entries must be [axis, "
                               "multiple] pairs of integers");
      if (cast<IntegerAttr>(pair[1]).getInt() < 1)
        return op->emitOpError("'dim_multiple' multiple must be positive, "
                               "got ")
               << cast<IntegerAttr>(pair[1]).getInt();
    }
  if (c.minElements && c.minElements.getInt() < 0)
    return op->emitOpError("'min_elements' must be non-negative");
  if (c.maxElements && c.maxElements.getInt() < 0)
    return op->emitOpError("'max_elements' must be non-negative");
  if (c.minElements && c.maxElements &&
      c.minElements.getInt() > c.maxElements.getInt())
    return op->emitOpError("'min_elements' exceeds 'max_elements'");
  if (c.alignment) {
    int64_t a = c.alignment.getInt();
    if (a < 1 || !llvm::isPowerOf2_64(a))
      return op->emitOpError("'alignment' must be a power of two, got ") << a;
  }
  return success();
}

bool satisfiesValueConstraints(Operation *op, TensorLikeType type,
                               int64_t byteOffset, std::string &why) {
  Constraints c(op);
  llvm::raw_string_ostream os(why);
  Type elementType = type.getElementType();
  if (c.elementTypes &&
      !llvm::any_of(c.elementTypes, [&](Attribute a) {
        return cast<TypeAttr>(a).getValue() == elementType;
      })) {
    os << "element type " << typeString(elementType) << " is not one of "
       << listString(c.elementTypes);
    return false;
  }
  int64_t rank = type.getRank();
  if (c.ranks && !llvm::any_of(c.ranks.getAsValueRange<IntegerAttr>(),
                               [&](const APInt &r) {
                                 return r.getSExtValue() == rank;
                               })) {
    os << "rank " << rank << " is not one of " << listString(c.ranks);
    return false;
  }
  ArrayRef<int64_t> shape = type.getShape();
  if (c.shape) {
    bool ok = static_cast<int64_t>(c.shape.size()) == rank;
    for (auto [want, have] :
         llvm::zip(c.shape.getAsValueRange<IntegerAttr>(), shape))
      ok &= want.getSExtValue() == -1 || want.getSExtValue() == have;
    if (!ok) {
      os << "shape " << typeString(type) << " does not match "
         << listString(c.shape);
      return false;
    }
  }
  if (c.dimMultiple)
    for (Attribute entry : c.dimMultiple) {
      auto pair = cast<ArrayAttr>(entry);
      int64_t axis = cast<IntegerAttr>(pair[0]).getInt();
      int64_t multiple = cast<IntegerAttr>(pair[1]).getInt();
      int64_t normalized = axis < 0 ? axis + rank : axis;
      if (normalized < 0 || normalized >= rank) {
        os << "dim_multiple axis " << axis << " is out of range for rank "
           << rank;
        return false;
      }
      if (shape[normalized] % multiple != 0) {
        os << "dimension " << normalized << " (" << shape[normalized]
           << ") is not a multiple of " << multiple;
        return false;
      }
    }
  int64_t elements = type.getNumElements();
  if (c.minElements && elements < c.minElements.getInt()) {
    os << elements << " elements is fewer than the minimum "
       << c.minElements.getInt();
    return false;
  }
  if (c.maxElements && elements > c.maxElements.getInt()) {
    os << elements << " elements is more than the maximum "
       << c.maxElements.getInt();
    return false;
  }
  if (auto memref = dyn_cast<MemRefType>(type)) {
    if (c.contiguous && !memref.isContiguous()) {
      os << "memref " << typeString(type) << " is not contiguous";
      return false;
    }
    if (c.alignment && byteOffset >= 0 &&
        byteOffset % c.alignment.getInt() != 0) {
      os << "byte offset " << byteOffset << " is not a multiple of "
         << c.alignment.getInt();
      return false;
    }
  }
  return true;
}

int64_t getRequiredAlignment(Operation *op) {
  if (auto alignment = op->getAttrOfType<IntegerAttr>("alignment"))
    return alignment.getInt();
  return 1;
}

DictionaryAttr getEffectiveAttributes(Operation *op) {
  NamedAttrList attrs(op->getAttrDictionary());
  if (std::optional<RegisteredOperationName> name = op->getRegisteredInfo())
    name->populateDefaultAttrs(attrs);
  return attrs.getDictionary(op->getContext());
}

} // namespace cgc::pattern
