// Two patterns of equal priority that overlap: the larger one wins.
cgc.module @sizes {
  cgc_pattern.pattern @reluOnly {
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
