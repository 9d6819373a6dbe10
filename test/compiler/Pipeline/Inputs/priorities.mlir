// The same two patterns, the smaller one with a higher priority: it wins.
cgc.module @priorities {
  cgc_pattern.pattern @reluOnly attributes {priority = 1 : i64} {
    %x = cgc_pattern.input
    %r = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %r
  }
  cgc_pattern.pattern @convRelu {
    %x = cgc_pattern.input
    %w = cgc_pattern.input
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w)
    %r = cgc_pattern.op ["cgc_op.relu"](%c)
    cgc_pattern.yield %r
  }
}
