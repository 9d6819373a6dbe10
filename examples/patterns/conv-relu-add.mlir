// The spec's driver declaration ("DX Compute Graph Compiler > Output IR"):
// the driver fuses only conv -> relu -> add, where the add's other operand
// comes from outside the match (the residual). Everything else goes to the
// fallback target.
//
// Use it as the CPU driver's declaration:
//   CGC_CPU_PATTERNS=examples/patterns/conv-relu-add.mlir
// or as a target of the compiler:
//   cgc-opt --cgc-lower-to-output-ir="targets=cpu:examples/patterns/conv-relu-add.mlir"
//   cgc-opt --cgc-lower-to-output-ir="targets=patterns:examples/patterns/conv-relu-add.mlir"
// (the second names the subgraphs' origin 'convReluAddDriver', after the
// module; the cpu target always calls itself 'cpu').
cgc.module @convReluAddDriver {
  cgc_pattern.pattern @convReluAdd attributes {priority = 10 : i64} {
    %x = cgc_pattern.input {constant = false}
    %w = cgc_pattern.input {constant = true}
    %b = cgc_pattern.input {constant = true, optional}
    %r = cgc_pattern.input
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w, %b)
    %a = cgc_pattern.op ["cgc_op.relu"](%c)
    %s = cgc_pattern.op ["cgc_op.add"](%a, %r) {commutative}
    cgc_pattern.yield %s
  }
}
