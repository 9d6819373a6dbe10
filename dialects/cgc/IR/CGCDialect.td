//===- CGCDialect.td - The cgc dialect ---------------------*- tablegen -*-===//
//
// The `cgc` dialect holds the foundational elements of the CGC IRs: element
// types, tensors and memory references, and the structural ops (module, entry
// point, subgraph, partition, program, invoke, view) of the Input, Output and
// Partition IRs described by the D3D12 "MLIR programs" spec.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_DIALECT_TD
#define CGC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def CGC_Dialect : Dialect {
  let name = "cgc";
  let cppNamespace = "::cgc";
  let summary = "Foundational types and structural ops of the CGC IRs";
  let description = [{
    The `cgc` dialect carries what every CGC IR shares: the element types
    (`!cgc.float32`, `!cgc.int8`, ...), abstract tensors (`!cgc.tensor`) and
    concrete strided memory references (`!cgc.memref`), both optionally
    qualified `constant`, and the ops that structure a compiled graph:

    - Input IR: `cgc.module` > `cgc.entry_point` with `cgc.constant` and
      `cgc_op` layers, ending in `cgc.return`.
    - Output IR: `cgc.module` > `cgc.subgraph` (each wrapping a
      `cgc.functional_definition`), `cgc.partition` (a DAG of `cgc.invoke`s of
      subgraphs over memrefs) and one `cgc.program` that invokes partitions on
      views (`cgc.view_memref`) of its arguments and scratch buffer.

    The CGC dialects are versioned together with a semantic version that is
    written into MLIR bytecode; a reader rejects bytecode with a newer major
    version.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
}

class CGC_Op<string mnemonic, list<Trait> traits = []>
    : Op<CGC_Dialect, mnemonic, traits>;

#endif // CGC_DIALECT_TD
