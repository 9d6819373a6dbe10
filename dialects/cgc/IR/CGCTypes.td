//===- CGCTypes.td - Types of the cgc dialect --------------*- tablegen -*-===//

#ifndef CGC_TYPES_TD
#define CGC_TYPES_TD

include "cgc/IR/CGCDialect.td"
include "mlir/IR/AttrTypeBase.td"

//===----------------------------------------------------------------------===//
// Interfaces
//===----------------------------------------------------------------------===//

def CGC_ElementTypeInterface : TypeInterface<"ElementTypeInterface"> {
  let cppNamespace = "::cgc";
  let description = [{
    Implemented by every CGC element type. Gives the scalar kind, from which
    the bit width, byte size, signedness and float-ness follow.
  }];
  let methods = [
    InterfaceMethod<"Returns the scalar kind of this element type.",
      "::cgc::ElementKind", "getKind">,
  ];
}

def CGC_ShapedTypeInterface : TypeInterface<"TensorLikeType"> {
  let cppNamespace = "::cgc";
  let description = [{
    Implemented by `!cgc.tensor` and `!cgc.memref`: a static shape, a CGC
    element type and the `constant` qualifier.
  }];
  let methods = [
    InterfaceMethod<"Returns the static shape.", "::llvm::ArrayRef<int64_t>", "getShape">,
    InterfaceMethod<"Returns the element type.", "::mlir::Type", "getElementType">,
    InterfaceMethod<"Returns true if qualified `constant`.", "bool", "getIsConstant">,
  ];
  let extraSharedClassDeclaration = [{
    int64_t getRank() const { return $_type.getShape().size(); }
    /// Number of elements (1 for rank 0).
    int64_t getNumElements() const {
      int64_t n = 1;
      for (int64_t d : $_type.getShape()) n *= d;
      return n;
    }
    ::cgc::ElementKind getElementKind() const {
      return ::llvm::cast<::cgc::ElementTypeInterface>($_type.getElementType()).getKind();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

class CGC_ElementType<string name, string typeMnemonic, string kind,
                      string desc>
    : TypeDef<CGC_Dialect, name, [CGC_ElementTypeInterface]> {
  let mnemonic = typeMnemonic;
  let summary = desc;
  let description = "The `!cgc." # typeMnemonic # "` element type: " # desc # ".";
  let extraClassDeclaration = [{
    ::cgc::ElementKind getKind() const { return ::cgc::ElementKind::}] # kind # [{; }
  }];
}

def CGC_Float32 : CGC_ElementType<"Float32", "float32", "Float32", "32-bit IEEE-754 float">;
def CGC_Float16 : CGC_ElementType<"Float16", "float16", "Float16", "16-bit IEEE-754 float">;
def CGC_BFloat16 : CGC_ElementType<"BFloat16", "bfloat16", "BFloat16", "16-bit brain float">;
def CGC_Float64 : CGC_ElementType<"Float64", "float64", "Float64", "64-bit IEEE-754 float">;
def CGC_Int8 : CGC_ElementType<"Int8", "int8", "Int8", "8-bit signed integer">;
def CGC_UInt8 : CGC_ElementType<"UInt8", "uint8", "UInt8", "8-bit unsigned integer">;
def CGC_Int16 : CGC_ElementType<"Int16", "int16", "Int16", "16-bit signed integer">;
def CGC_UInt16 : CGC_ElementType<"UInt16", "uint16", "UInt16", "16-bit unsigned integer">;
def CGC_Int32 : CGC_ElementType<"Int32", "int32", "Int32", "32-bit signed integer">;
def CGC_UInt32 : CGC_ElementType<"UInt32", "uint32", "UInt32", "32-bit unsigned integer">;
def CGC_Int64 : CGC_ElementType<"Int64", "int64", "Int64", "64-bit signed integer">;
def CGC_UInt64 : CGC_ElementType<"UInt64", "uint64", "UInt64", "64-bit unsigned integer">;
def CGC_Bool : CGC_ElementType<"Bool", "bool", "Bool", "boolean stored in one byte">;

//===----------------------------------------------------------------------===//
// Tensors and memrefs
//===----------------------------------------------------------------------===//

def CGC_TensorType : TypeDef<CGC_Dialect, "Tensor", [CGC_ShapedTypeInterface]> {
  let mnemonic = "tensor";
  let summary = "An abstract n-dimensional value with a static shape";
  let description = [{
    A tensor is a value with a static shape and a CGC element type, with no
    statement about where it is stored. The `constant` qualifier marks values
    that are bound externally and never change (model weights).

    ```mlir
    !cgc.tensor<1x3x224x224x!cgc.float32>
    !cgc.tensor<constant 64x3x7x7x!cgc.float32>
    !cgc.tensor<!cgc.int64>            // rank 0
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "static shape">:$shape,
    "::mlir::Type":$elementType,
    DefaultValuedParameter<"bool", "false">:$isConstant);
  let builders = [
    TypeBuilderWithInferredContext<(ins "::llvm::ArrayRef<int64_t>":$shape,
        "::mlir::Type":$elementType, CArg<"bool", "false">:$isConstant), [{
      return $_get(elementType.getContext(), shape, elementType, isConstant);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The same tensor with or without the `constant` qualifier.
    TensorType withConstant(bool isConstant) const {
      return get(getShape(), getElementType(), isConstant);
    }
    TensorType withShape(::llvm::ArrayRef<int64_t> shape) const {
      return get(shape, getElementType(), getIsConstant());
    }
    TensorType withElementType(::mlir::Type elementType) const {
      return get(getShape(), elementType, getIsConstant());
    }
  }];
}

def CGC_MemRefType : TypeDef<CGC_Dialect, "MemRef", [CGC_ShapedTypeInterface]> {
  let mnemonic = "memref";
  let summary = "A strided view of a buffer";
  let description = [{
    A memref is a concrete view of memory in a bound buffer: a static shape, a
    CGC element type and strides in elements. Without `strides` the view is
    contiguous and row-major. The `constant` qualifier marks read-only views of
    the constants buffer. Offsets into buffers are given by
    `cgc.view_memref`, not by the type.

    ```mlir
    !cgc.memref<1x1x4x4x!cgc.float32>
    !cgc.memref<constant 1x1x3x3x!cgc.float32>
    !cgc.memref<4x4x!cgc.float32, strides = [1, 4]>   // a transposed view
    !cgc.memref<64x!cgc.int8>                          // a raw 64-byte buffer
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "static shape">:$shape,
    "::mlir::Type":$elementType,
    DefaultValuedParameter<"bool", "false">:$isConstant,
    OptionalArrayRefParameter<"int64_t", "strides in elements; empty means contiguous">:$strides);
  let skipDefaultBuilders = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "::llvm::ArrayRef<int64_t>":$shape,
        "::mlir::Type":$elementType, CArg<"bool", "false">:$isConstant,
        CArg<"::llvm::ArrayRef<int64_t>", "{}">:$strides), [{
      return $_get(elementType.getContext(), shape, elementType, isConstant,
                   normalizeStrides(shape, strides));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Returns `strides` unless they equal the contiguous row-major strides of
    /// `shape`, in which case returns an empty list (the canonical spelling).
    static ::llvm::ArrayRef<int64_t> normalizeStrides(
        ::llvm::ArrayRef<int64_t> shape, ::llvm::ArrayRef<int64_t> strides);
    /// The strides in elements, computed when the view is contiguous.
    ::llvm::SmallVector<int64_t> getEffectiveStrides() const;
    bool isContiguous() const { return getStrides().empty(); }
    /// Bytes from the first to one past the last addressed element.
    int64_t getByteSpan() const;
    MemRefType withConstant(bool isConstant) const {
      return get(getShape(), getElementType(), isConstant, getStrides());
    }
  }];
}

#endif // CGC_TYPES_TD
