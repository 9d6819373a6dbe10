// A target that calls itself 'fallback'.
cgc.module @fallback {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}
