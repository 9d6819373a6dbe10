//===- CGCPatternDialect.td - The cgc_pattern dialect ------*- tablegen -*-===//
//
// The `cgc_pattern` dialect is the language in which compilation targets
// declare the subgraphs they implement (CGC_SUBGRAPH_DECLARATION), state
// target-side rejection rules, and answer specialization requests
// (CGC_SUBGRAPH_SPECIALIZATION). docs/patterns.md explains it with examples.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PATTERN_DIALECT_TD
#define CGC_PATTERN_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def CGCPattern_Dialect : Dialect {
  let name = "cgc_pattern";
  let cppNamespace = "::cgc::pattern";
  let summary = "Subgraph patterns declared by compilation targets";
  let description = [{
    A target tells the compiler which subgraphs of `cgc_op` layers it can
    implement by answering `CGC_SUBGRAPH_DECLARATION_REQUEST` with a
    `cgc.module` of `cgc_pattern.pattern`s. A pattern is a small dataflow graph
    over `!cgc_pattern.value`s:

    - `cgc_pattern.input` stands for a tensor that comes from outside the
      match (a graph input, a constant, or a result of an unmatched layer);
    - `cgc_pattern.op` matches one layer by name or by class
      (`"elementwise"`, `"any"`), with its operands, attribute values and the
      type of its result;
    - `cgc_pattern.chain` matches a dynamic run of layers (for example "any
      number of elementwise layers": epilogue fusion), each consuming the
      previous one's result, whose other operands come from outside;
    - `cgc_pattern.yield` names the values the subgraph produces.

    Every value can be constrained by element type, rank, shape, dimension
    multiples, element count, memory layout (contiguity) and alignment; ops
    by attribute values; patterns carry a priority. The compiler matches
    patterns deterministically (higher priority, then larger matches win),
    then asks the target to specialize each concrete match
    (`CGC_SUBGRAPH_SPECIALIZATION_REQUEST`); the target answers per subgraph
    with `cgc_pattern.accept` or `cgc_pattern.reject`. Targets that are
    described by a file state their rejections declaratively with
    `cgc_pattern.reject_when`.

    The dialect shares the CGC IR version with `cgc` and `cgc_op`.
  }];
  let dependentDialects = ["::cgc::CGCDialect", "::cgc::op::CGCOpDialect"];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
}

class CGCPattern_Op<string mnemonic, list<Trait> traits = []>
    : Op<CGCPattern_Dialect, mnemonic, traits>;

#endif // CGC_PATTERN_DIALECT_TD
