cgc.module @broken {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%y)
    cgc_pattern.yield %a
  }
}
