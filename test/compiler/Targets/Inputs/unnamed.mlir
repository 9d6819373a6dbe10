// A patterns module without a name: the target is named after the file.
cgc.module {
  cgc_pattern.pattern @reluPattern {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}
