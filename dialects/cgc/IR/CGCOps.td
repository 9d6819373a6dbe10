//===- CGCOps.td - Structural ops of the cgc dialect -------*- tablegen -*-===//

#ifndef CGC_OPS_TD
#define CGC_OPS_TD

include "cgc/IR/CGCDialect.td"
include "cgc/IR/CGCTypes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def CGC_AnyTensor : Type<CPred<"::llvm::isa<::cgc::TensorType>($_self)">,
                         "cgc tensor", "::cgc::TensorType">;
def CGC_AnyMemRef : Type<CPred<"::llvm::isa<::cgc::MemRefType>($_self)">,
                         "cgc memref", "::cgc::MemRefType">;
def CGC_AnyShaped : AnyTypeOf<[CGC_AnyTensor, CGC_AnyMemRef]>;

//===----------------------------------------------------------------------===//
// cgc.module
//===----------------------------------------------------------------------===//

def CGC_ModuleOp : CGC_Op<"module", [
    IsolatedFromAbove, SymbolTable, NoRegionArguments]
    # GraphRegionNoTerminator.traits> {
  let summary = "The top-level container of a CGC IR";
  let description = [{
    Holds a whole CGC IR: the entry point of Input IR, or the subgraphs,
    partitions and program of Output IR, or the isolated subset of symbols that
    a single partition reaches (Partition IR). Symbols inside must be unique.

    ```mlir
    cgc.module {
      cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
        %0 = cgc_op.relu(%in) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
        cgc.return %0 : !cgc.tensor<4x!cgc.float32>
      }
    }
    ```
  }];
  let arguments = (ins OptionalAttr<SymbolNameAttr>:$sym_name);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = "($sym_name^)? attr-dict-with-keyword $bodyRegion";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins)>];
  let extraClassDeclaration = [{
    /// The single entry point (Input IR), or null.
    EntryPointOp getEntryPoint();
    /// The single program (Output IR), or null.
    ProgramOp getProgram();
  }];
}

//===----------------------------------------------------------------------===//
// Function-like ops
//===----------------------------------------------------------------------===//

class CGC_FunctionLikeOp<string mnemonic, list<Trait> traits = []>
    : CGC_Op<mnemonic, !listconcat(traits, [
        IsolatedFromAbove, FunctionOpInterface])> {
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<StrAttr>:$sym_visibility,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::mlir::FunctionType":$type)>];
  code extraFunctionDeclaration = [{
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    bool isDeclaration() { return false; }
    /// Adds the entry block with one argument per input type.
    ::mlir::Block &addEntryBlock(::mlir::Location loc);
  }];
  let extraClassDeclaration = extraFunctionDeclaration;
}

def CGC_EntryPointOp : CGC_FunctionLikeOp<"entry_point", [HasParent<"ModuleOp">]> {
  let summary = "The entry point of CGC Input IR";
  let description = [{
    A function over tensors: its arguments are the graph's inputs, its results
    the graph's outputs. The body is a dataflow graph of `cgc_op` layers over
    the arguments and externally bound named constants (`cgc.constant`).

    ```mlir
    cgc.entry_point @main(%in: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32> {
      %0 = cgc_op.relu(%in) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<1x1x4x4x!cgc.float32>
    }
    ```
  }];
}

def CGC_FunctionalDefinitionOp
    : CGC_FunctionLikeOp<"functional_definition", [HasParent<"SubgraphOp">]> {
  let summary = "The meaning of a subgraph as a DAG of input IR ops";
  let description = [{
    Defines what a `cgc.subgraph` computes, in terms of `cgc_op` layers over
    tensors. Parameters qualified `constant` receive constants.

    ```mlir
    cgc.functional_definition private @reluFunctional(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%in) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
    ```
  }];
}

def CGC_PartitionOp : CGC_FunctionLikeOp<"partition", [HasParent<"ModuleOp">]> {
  let summary = "A unit of work compiled and dispatched as one MLIR program";
  let description = [{
    A partition is a DAG of `cgc.invoke`s of subgraphs over memrefs. Its
    arguments are the bind points of the MLIR program: each must be a memref,
    and a partition returns nothing (outputs are written through memref
    arguments).

    ```mlir
    cgc.partition @p(%in: !cgc.memref<4x!cgc.float32>, %out: !cgc.memref<4x!cgc.float32>) {
      cgc.invoke @relu(%in, %out) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
      cgc.return
    }
    ```
  }];
}

def CGC_ProgramOp : CGC_FunctionLikeOp<"program", [HasParent<"ModuleOp">]> {
  let summary = "The entry point for end-to-end execution of Output IR";
  let description = [{
    Orchestrates execution: takes the model's inputs, outputs and scratch
    buffers as memref arguments, binds constants with `cgc.constant`, carves
    views out of buffers with `cgc.view_memref` and invokes partitions in
    order.

    ```mlir
    cgc.program @main(%in: !cgc.memref<4x!cgc.float32>, %out: !cgc.memref<4x!cgc.float32>) {
      cgc.invoke @p(%in, %out) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
      cgc.return
    }
    ```
  }];
}

//===----------------------------------------------------------------------===//
// cgc.subgraph
//===----------------------------------------------------------------------===//

def CGC_SubgraphOp : CGC_Op<"subgraph", [
    Symbol, SymbolTable, IsolatedFromAbove, NoRegionArguments,
    HasParent<"ModuleOp">] # GraphRegionNoTerminator.traits> {
  let summary = "A connected subgraph implemented by one target";
  let description = [{
    An externally implemented function, typically a fusion of several layers,
    whose meaning is given by the `cgc.functional_definition` it contains and
    whose implementation is the responsibility of the target named by
    `origin`. Invoked from partitions in destination-passing style: one memref
    per parameter of the functional definition, then one memref per result.

    ```mlir
    cgc.subgraph @relu attributes {origin = "fallbackTarget"} {
      cgc.functional_definition private @reluFunctional(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
        %0 = cgc_op.relu(%in) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
        cgc.return %0 : !cgc.tensor<4x!cgc.float32>
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$origin);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $bodyRegion";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The functional definition (the verifier guarantees exactly one).
    FunctionalDefinitionOp getFunctionalDefinition();
    /// The memref types an invoke must pass, in order: one per parameter of
    /// the functional definition, then one per result.
    ::llvm::SmallVector<::mlir::Type> getInvokeTypes();
  }];
}

//===----------------------------------------------------------------------===//
// cgc.constant
//===----------------------------------------------------------------------===//

def CGC_ConstantOp : CGC_Op<"constant", [
    Pure, DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A reference to an externally bound named constant";
  let description = [{
    Refers to a constant (a weight) by name instead of by position: its bytes
    are not in the IR but bound from the model's constants store. In Input IR
    the result is a `constant` tensor; in a program it is a `constant` memref
    into the constants buffer. All uses of one name in a module agree on shape
    and element type.

    ```mlir
    %w1 = cgc.constant("w1") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs CGC_AnyShaped:$result);
  let assemblyFormat = "`(` $name `)` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// cgc.return
//===----------------------------------------------------------------------===//

def CGC_ReturnOp : CGC_Op<"return", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["EntryPointOp", "FunctionalDefinitionOp", "PartitionOp",
                 "ProgramOp"]>]> {
  let summary = "Returns from a function-like op";
  let description = [{
    Terminates an entry point or functional definition with its results, or a
    partition or program with no operands.

    ```mlir
    cgc.return %0 : !cgc.tensor<1x1x8x8x!cgc.float32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// cgc.invoke
//===----------------------------------------------------------------------===//

def CGC_InvokeOp : CGC_Op<"invoke", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    ParentOneOf<["PartitionOp", "ProgramOp"]>]> {
  let summary = "Invokes a subgraph (in a partition) or a partition (in a program)";
  let description = [{
    In a partition, invokes a subgraph in destination-passing style: one memref
    per parameter of its functional definition (same shape and element type; a
    `constant` parameter takes a `constant` memref), then one non-constant
    memref per result. In a program, invokes a partition with exactly its
    argument types.

    ```mlir
    cgc.invoke @convReluAdd(%in, %w1, %b1, %scratch) : !cgc.memref<1x1x4x4x!cgc.float32>, !cgc.memref<constant 1x1x3x3x!cgc.float32>, !cgc.memref<constant 1x!cgc.float32>, !cgc.memref<1x1x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<CGC_AnyMemRef>:$operands);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict (`:` type($operands)^)?
  }];
}

//===----------------------------------------------------------------------===//
// cgc.view_memref
//===----------------------------------------------------------------------===//

def CGC_ViewMemRefOp : CGC_Op<"view_memref", [Pure]> {
  let summary = "A typed view at a byte offset into a buffer";
  let description = [{
    Reinterprets the bytes of `source` starting at `offset` (in bytes) as the
    result memref. The view must lie within the source, start at a multiple of
    the result's element size, and keep the source's `constant` qualifier.

    ```mlir
    %0 = cgc.view_memref %scratch[0] : !cgc.memref<64x!cgc.int8> to !cgc.memref<1x1x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGC_AnyMemRef:$source, I64Attr:$offset);
  let results = (outs CGC_AnyMemRef:$result);
  let assemblyFormat = [{
    $source `[` $offset `]` attr-dict `:` qualified(type($source)) `to` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Lowering IR: cgc.call and cgc.barrier
//===----------------------------------------------------------------------===//

def CGC_CallOp : CGC_Op<"call", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    HasParent<"EntryPointOp">]> {
  let summary = "Calls a subgraph on tensors (Lowering IR)";
  let description = [{
    The tensor-level form of a subgraph invocation, used between subgraph
    matching and program construction: the layers a target's pattern matched
    are outlined into a `cgc.subgraph` and the entry point calls it. Operand
    and result types are exactly the parameter and result types of the
    subgraph's functional definition.

    ```mlir
    %0 = cgc.call @convReluAdd(%in, %w1, %b1, %in) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Variadic<CGC_AnyTensor>:$operands);
  let results = (outs Variadic<CGC_AnyTensor>:$results);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, $results)
  }];
  let extraClassDeclaration = [{
    /// The called subgraph, or null if the symbol does not resolve.
    SubgraphOp getSubgraph();
  }];
}

def CGC_BarrierOp : CGC_Op<"barrier", [HasParent<"ProgramOp">]> {
  let summary = "Orders the dispatches around it on byte ranges of buffers";
  let description = [{
    A barrier between the partition dispatches of a program: every dispatch
    before it that reads or writes one of the listed byte ranges completes
    before any dispatch after it touches them. Each range is
    `buffer[offset, bytes]` with `buffer` a memref argument of the program
    (the scratch buffer, a model input or output). Dispatches that are not
    separated by a barrier may run concurrently. The compiler inserts
    barriers only where the byte ranges written and read by dispatches
    actually overlap.

    ```mlir
    cgc.barrier %scratch[0, 64], %out[0, 256] : !cgc.memref<128x!cgc.int8>, !cgc.memref<1x1x8x8x!cgc.float32>
    ```
  }];
  let arguments = (ins Variadic<CGC_AnyMemRef>:$buffers,
                       DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$sizes);
  let assemblyFormat = [{
    custom<BarrierRanges>($buffers, $offsets, $sizes) attr-dict `:` type($buffers)
  }];
  let hasVerifier = 1;
}

#endif // CGC_OPS_TD
