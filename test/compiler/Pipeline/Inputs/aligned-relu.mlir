// A target whose relu needs its input at a 256-byte boundary.
cgc.module @aligned {
  cgc_pattern.pattern @alignedRelu {
    %x = cgc_pattern.input {alignment = 256 : i64}
    %r = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %r
  }
}
