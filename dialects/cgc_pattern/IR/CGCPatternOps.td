//===- CGCPatternOps.td - Ops of the cgc_pattern dialect ---*- tablegen -*-===//

#ifndef CGC_PATTERN_OPS_TD
#define CGC_PATTERN_OPS_TD

include "cgc_pattern/IR/CGCPatternDialect.td"
include "cgc_pattern/IR/CGCPatternTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

// The constraints every pattern value (and a rejection rule) may state about
// the concrete tensor it stands for. All are optional; an absent constraint
// accepts anything. docs/patterns.md gives their exact meaning.
defvar CGCPattern_ValueConstraints = (ins
  OptionalAttr<TypeArrayAttr>:$element_types,
  OptionalAttr<I64ArrayAttr>:$ranks,
  OptionalAttr<I64ArrayAttr>:$shape,
  OptionalAttr<ArrayAttr>:$dim_multiple,
  OptionalAttr<I64Attr>:$min_elements,
  OptionalAttr<I64Attr>:$max_elements,
  UnitAttr:$contiguous,
  OptionalAttr<I64Attr>:$alignment);

//===----------------------------------------------------------------------===//
// cgc_pattern.pattern
//===----------------------------------------------------------------------===//

def CGCPattern_PatternOp : CGCPattern_Op<"pattern", [
    Symbol, IsolatedFromAbove, NoRegionArguments,
    HasParent<"::cgc::ModuleOp">]> {
  let summary = "A subgraph a target implements";
  let description = [{
    Declares one kind of subgraph. The body is a dataflow graph of
    `cgc_pattern.input`, `cgc_pattern.op` and at most one `cgc_pattern.chain`,
    ending in `cgc_pattern.yield`. The first yielded value (or, with a chain,
    the chain's source) is the root: matching starts from it and walks
    operands backwards, so every op of the body must be reachable from it.

    - `priority` (default 0): among overlapping candidate matches, higher
      priority wins, then the match with more layers, then the target listed
      first, then the pattern declared first, then the match that starts
      earlier in the graph.
    - `naming`: `"pattern"` (default) names the matched subgraphs after the
      pattern; `"ops"` after the layers they contain (`convolutionRelu`).

    The fixed DAG conv -> relu -> add of the spec:

    ```mlir
    cgc_pattern.pattern @convReluAdd attributes {priority = 10 : i64} {
      %x = cgc_pattern.input {element_types = [!cgc.float32]}
      %w = cgc_pattern.input {constant = true}
      %b = cgc_pattern.input {constant = true, optional}
      %r = cgc_pattern.input
      %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w, %b) {attrs = {groups = 1 : i64}}
      %a = cgc_pattern.op ["cgc_op.relu"](%c)
      %s = cgc_pattern.op ["cgc_op.add"](%a, %r) {commutative}
      cgc_pattern.yield %s
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       DefaultValuedAttr<I64Attr, "0">:$priority,
                       DefaultValuedStrAttr<StrAttr, "pattern">:$naming);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator.
    YieldOp getYield();
    /// The chain of the pattern, or null.
    ChainOp getChain();
    /// The op matching starts from: the chain's source, or the first yielded
    /// value's defining op.
    MatchOp getRoot();
    /// Number of cgc_pattern.op in the body (a chain counts as what it
    /// matches).
    unsigned getNumFixedOps();
  }];
}

//===----------------------------------------------------------------------===//
// cgc_pattern.input
//===----------------------------------------------------------------------===//

def CGCPattern_InputOp : CGCPattern_Op<"input", [HasParent<"PatternOp">]> {
  let summary = "A tensor from outside the match";
  let description = [{
    Stands for an operand of the matched subgraph: a graph input, a constant
    or the result of a layer that is not part of the match. One input used
    twice must bind the same tensor both times.

    - `constant = true` requires a constant (a weight), `constant = false` a
      non-constant tensor; absent, either.
    - `optional` lets the input match an absent optional operand; it must
      then be among the trailing operands of the ops that use it.
    - plus the value constraints (docs/patterns.md).

    ```mlir
    %w = cgc_pattern.input {constant = true, ranks = [4], element_types = [!cgc.float32, !cgc.float16]}
    ```
  }];
  let arguments = !con((ins OptionalAttr<BoolAttr>:$constant,
                            UnitAttr:$optional),
                       CGCPattern_ValueConstraints);
  let results = (outs CGCPattern_ValueType:$result);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// cgc_pattern.op
//===----------------------------------------------------------------------===//

def CGCPattern_MatchOp : CGCPattern_Op<"op", [HasParent<"PatternOp">]> {
  let summary = "Matches one layer";
  let description = [{
    Matches a `cgc_op` layer whose name is in `names`. An entry without a dot
    is a class: `"elementwise"` (any layer marked elementwise) or `"any"`
    (any `cgc_op` layer).

    Operands are matched position by position; with `open` they match a
    prefix of the layer's operands and the remaining operands become inputs
    of the subgraph (so `["cgc_op.convolution", "cgc_op.matmul"] {open}`
    matches either whatever its operands). `commutative` (two operands) also
    tries them swapped.

    - `attrs`: attribute values the layer must have (defaults included, so
      `{groups = 1 : i64}` also matches a convolution that omits `groups`);
    - `attrs_one_of`: for each attribute, the list of allowed values;
    - plus the value constraints on the layer's (first) result.

    ```mlir
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w, %b) {attrs = {groups = 1 : i64}, attrs_one_of = {strides = [[1, 1], [2, 2]]}}
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open}
    ```
  }];
  let arguments = !con((ins StrArrayAttr:$names,
                            Variadic<CGCPattern_ValueType>:$operands,
                            UnitAttr:$open, UnitAttr:$commutative,
                            OptionalAttr<DictionaryAttr>:$attrs,
                            OptionalAttr<DictionaryAttr>:$attrs_one_of),
                       CGCPattern_ValueConstraints);
  let results = (outs CGCPattern_ValueType:$result);
  let assemblyFormat = "$names (`(` $operands^ `)`)? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// cgc_pattern.chain
//===----------------------------------------------------------------------===//

def CGCPattern_ChainOp : CGCPattern_Op<"chain", [HasParent<"PatternOp">]> {
  let summary = "Matches a run of layers after a value (epilogue fusion)";
  let description = [{
    Starting from `source`, repeatedly takes the one layer that uses the
    current value, as long as that value has no other use, the layer's name
    is in `names` (classes as in `cgc_pattern.op`) and the layer's other
    operands come from outside the match (a residual tensor, a bias, ...).
    The chain is as long as possible, up to `max_length` layers (-1: no
    limit), and must reach `min_length`. With `keep_shape` every layer must
    keep the source's shape. The result is the chain's last value (the
    source itself for an empty chain); it may only be yielded.

    "A convolution or matrix product followed by any chain of elementwise
    layers":

    ```mlir
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open}
    %e = cgc_pattern.chain ["elementwise"](%m) {keep_shape}
    cgc_pattern.yield %e
    ```
  }];
  let arguments = !con((ins CGCPattern_ValueType:$source,
                            StrArrayAttr:$names,
                            DefaultValuedAttr<I64Attr, "0">:$min_length,
                            DefaultValuedAttr<I64Attr, "-1">:$max_length,
                            UnitAttr:$keep_shape),
                       CGCPattern_ValueConstraints);
  let results = (outs CGCPattern_ValueType:$result);
  let assemblyFormat = "$names `(` $source `)` attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// cgc_pattern.yield
//===----------------------------------------------------------------------===//

def CGCPattern_YieldOp : CGCPattern_Op<"yield", [
    HasParent<"PatternOp">, Terminator]> {
  let summary = "The values a matched subgraph produces";
  let description = [{
    Lists the pattern values whose tensors the subgraph produces. A matched
    layer whose result is used outside the match must be yielded; results of
    yielded layers that nothing uses are dropped.

    ```mlir
    cgc_pattern.yield %s
    ```
  }];
  let arguments = (ins Variadic<CGCPattern_ValueType>:$values);
  let assemblyFormat = "$values attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// cgc_pattern.reject_when
//===----------------------------------------------------------------------===//

def CGCPattern_RejectWhenOp : CGCPattern_Op<"reject_when", [
    HasParent<"::cgc::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A target-side rule that rejects concrete matches";
  let description = [{
    Read by targets described in a file (`--target=patterns:FILE.mlir`) when
    they answer a specialization request: a subgraph matched by `pattern` is
    rejected with `reason` if the selected tensor satisfies every given value
    constraint. `input = i` selects the subgraph's input #i, `output = i` its
    output #i; with neither, any input or output.

    ```mlir
    cgc_pattern.reject_when @convReluAdd "input wider than 4 pixels is not supported" {input = 0 : i64, min_elements = 17 : i64}
    ```
  }];
  let arguments = !con((ins FlatSymbolRefAttr:$pattern, StrAttr:$reason,
                            OptionalAttr<I64Attr>:$input,
                            OptionalAttr<I64Attr>:$output),
                       CGCPattern_ValueConstraints);
  let assemblyFormat = "$pattern $reason attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Specialization answers
//===----------------------------------------------------------------------===//

def CGCPattern_AcceptOp : CGCPattern_Op<"accept", [HasParent<"::cgc::ModuleOp">]> {
  let summary = "A target accepts a concrete subgraph";
  let description = [{
    One line of a target's answer to `CGC_SUBGRAPH_SPECIALIZATION_REQUEST`:
    the subgraph named `subgraph` in the request will be implemented.

    ```mlir
    cgc_pattern.accept @convReluAdd
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$subgraph);
  let assemblyFormat = "$subgraph attr-dict";
}

def CGCPattern_RejectOp : CGCPattern_Op<"reject", [HasParent<"::cgc::ModuleOp">]> {
  let summary = "A target rejects a concrete subgraph";
  let description = [{
    One line of a target's answer to `CGC_SUBGRAPH_SPECIALIZATION_REQUEST`:
    the subgraph named `subgraph` in the request cannot be implemented, for
    `reason`. The compiler then tries the next candidate match for its
    layers, down to the fallback target.

    ```mlir
    cgc_pattern.reject @convReluAdd "3x3 convolutions with 1 channel are not supported"
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$subgraph, StrAttr:$reason);
  let assemblyFormat = "$subgraph $reason attr-dict";
}

#endif // CGC_PATTERN_OPS_TD
