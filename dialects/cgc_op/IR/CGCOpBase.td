//===- CGCOpBase.td - The cgc_op dialect and its op classes -*- tablegen -*-===//
//
// Adding an op: one ODS entry (usually from one of the classes below) plus, if
// the class does not supply them, its shape function `inferReturnTypes` in
// CGCOpShapes.cpp. Shape functions also validate attributes and operand
// shapes; their errors surface at the op's location when it is verified.
//
//===----------------------------------------------------------------------===//

#ifndef CGCOP_BASE_TD
#define CGCOP_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def CGCOp_Dialect : Dialect {
  let name = "cgc_op";
  let cppNamespace = "::cgc::op";
  let summary = "Abstract ML layers of the CGC IRs";
  let description = [{
    The `cgc_op` dialect holds abstract, hardware-agnostic representations of
    ML layers, ONNX-like in meaning: convolutions, matrix multiplications,
    normalizations, pooling, elementwise math with numpy broadcasting,
    reductions and data movement. All ops work on `!cgc.tensor` values with
    static shapes, are free of side effects, and infer their result types:
    each op's shape function checks its operands and attributes and computes
    the result type, and the verifier compares it with the written one.

    Every op prints as `cgc_op.<name>(operands) {attributes} : (operand
    types) -> result types`.
  }];
  let dependentDialects = ["::cgc::CGCDialect"];
  let extraClassDeclaration = [{
    void registerOps();
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def CGCOp_Tensor : Type<CPred<"::llvm::isa<::cgc::TensorType>($_self)">,
                        "tensor", "::cgc::TensorType">;

class CGCOp_TensorWith<Pred elementPred, string desc>
    : Type<And<[CGCOp_Tensor.predicate, elementPred]>, desc, "::cgc::TensorType">;

def CGCOp_FloatTensor : CGCOp_TensorWith<CPred<"::cgc::hasFloatElements($_self)">,
                                         "tensor of floating-point values">;
def CGCOp_IntegerTensor : CGCOp_TensorWith<CPred<"::cgc::hasIntegerElements($_self)">,
                                           "tensor of integers">;
def CGCOp_BoolTensor : CGCOp_TensorWith<
    CPred<"::cgc::hasElementKind($_self, {::cgc::ElementKind::Bool})">,
    "tensor of booleans">;
def CGCOp_NumericTensor : CGCOp_TensorWith<
    Or<[CPred<"::cgc::hasFloatElements($_self)">,
        CPred<"::cgc::hasIntegerElements($_self)">]>,
    "tensor of numbers (float or integer)">;
def CGCOp_SignedTensor : CGCOp_TensorWith<
    Or<[CPred<"::cgc::hasFloatElements($_self)">,
        CPred<"::cgc::isSignedIntegerKind(::cgc::getElementKind($_self))">]>,
    "tensor of signed numbers">;
def CGCOp_IndexTensor : CGCOp_TensorWith<
    CPred<"::cgc::hasElementKind($_self, {::cgc::ElementKind::Int32, ::cgc::ElementKind::Int64})">,
    "tensor of int32 or int64 indices">;
def CGCOp_AnyTensor : Type<CGCOp_Tensor.predicate, "tensor", "::cgc::TensorType">;

//===----------------------------------------------------------------------===//
// Attribute constraints
//===----------------------------------------------------------------------===//

// A string attribute whose value must be one of `values`.
class CGCOp_StrEnumAttr<list<string> values>
    : StringBasedAttr<And<[
        CPred<"::llvm::isa<::mlir::StringAttr>($_self)">,
        CPred<"::llvm::is_contained(::llvm::ArrayRef<::llvm::StringRef>{"
              # !interleave(!foreach(v, values, "\"" # v # "\""), ", ")
              # "}, ::llvm::cast<::mlir::StringAttr>($_self).getValue())">]>,
        "string, one of: " # !interleave(values, ", ")>;

class CGCOp_DefaultStrEnumAttr<list<string> values, string default>
    : DefaultValuedStrAttr<CGCOp_StrEnumAttr<values>, default>;

//===----------------------------------------------------------------------===//
// Marker traits, used by target patterns (e.g. "any elementwise op")
//===----------------------------------------------------------------------===//

def CGCOp_Elementwise : NativeOpTrait<"ElementwiseOp"> {
  let cppNamespace = "::cgc::op::OpTrait";
}

//===----------------------------------------------------------------------===//
// Op classes
//===----------------------------------------------------------------------===//

class CGCOp_Op<string mnemonic, list<Trait> traits = []>
    : Op<CGCOp_Dialect, mnemonic,
         !listconcat([Pure], InferTypeOpAdaptor.traits, traits)> {
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

// An elementwise op with one operand whose result has the operand's shape.
// `resultKind` is "same" (the operand's element type) or "bool".
class CGCOp_UnaryElementwiseOp<string mnemonic, Type operandType,
                               string summaryText, string meaning,
                               string resultKind = "same",
                               list<Trait> traits = []>
    : CGCOp_Op<mnemonic, !listconcat([CGCOp_Elementwise], traits)> {
  let summary = summaryText;
  let description = meaning # [{

    Elementwise: the result has the input's shape.

    ```mlir
    %y = cgc_op.}] # mnemonic # [{(%x) : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.}]
      # !if(!eq(resultKind, "bool"), "bool", "float32") # [{>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferUnaryElementwise(location,
          adaptor.getInput().getType(), }] #
          !if(!eq(resultKind, "bool"), "true", "false") # [{, inferred);
    }
  }];
}

// An elementwise op with two operands of one element type and numpy-style
// multidirectional broadcasting. `resultKind` is "same" or "bool".
class CGCOp_BinaryElementwiseOp<string mnemonic, Type operandType,
                                string summaryText, string meaning,
                                string resultKind = "same",
                                list<Trait> traits = []>
    : CGCOp_Op<mnemonic, !listconcat([CGCOp_Elementwise], traits)> {
  let summary = summaryText;
  let description = meaning # [{

    Elementwise with numpy-style broadcasting: both operands have the same
    element type; the result shape is the broadcast of the operand shapes.

    ```mlir
    %z = cgc_op.}] # mnemonic # [{(%x, %y) : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.}]
      # !if(!eq(resultKind, "bool"), "bool", "float32") # [{>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferBinaryElementwise(location,
          adaptor.getLhs().getType(), adaptor.getRhs().getType(), }] #
          !if(!eq(resultKind, "bool"), "true", "false") # [{, inferred);
    }
  }];
}

// A reduction over `axes` (non-negative, unique; empty means all axes) that
// keeps reduced dimensions as size 1 when `keepdims` is set.
class CGCOp_ReductionOp<string mnemonic, Type operandType, string summaryText,
                        string meaning>
    : CGCOp_Op<mnemonic> {
  let summary = summaryText;
  let description = meaning # [{

    Reduces over `axes` (each in [0, rank), no repeats; empty reduces every
    axis). With `keepdims` the reduced dimensions stay as size 1.

    ```mlir
    %y = cgc_op.}] # mnemonic # [{(%x) {axes = [1], keepdims = true} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x1x!cgc.float32>
    ```
  }];
  let arguments = (ins operandType:$input,
                       DefaultValuedAttr<I64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferReduction(location, adaptor.getInput().getType(),
          adaptor.getAxes(), adaptor.getKeepdims(), inferred);
    }
  }];
}

#endif // CGCOP_BASE_TD
