// A target with one dynamic pattern: a convolution, matrix product or gemm
// (whatever its operands) followed by any chain of elementwise layers that
// keep its shape (epilogue fusion; other operands of the chain, such as a
// residual, come from outside). Subgraphs are named after their layers.
cgc.module @epilogueTarget {
  cgc_pattern.pattern @anchorEpilogue attributes {naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open}
    %e = cgc_pattern.chain ["elementwise"](%m) {keep_shape}
    cgc_pattern.yield %e
  }
}
