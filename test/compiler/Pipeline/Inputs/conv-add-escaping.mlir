// conv -> add whose other operand comes from outside; the convolution's
// result may also be used outside (it is yielded).
cgc.module @escaping {
  cgc_pattern.pattern @convAdd {
    %x = cgc_pattern.input
    %w = cgc_pattern.input
    %r = cgc_pattern.input
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w)
    %a = cgc_pattern.op ["cgc_op.add"](%c, %r)
    cgc_pattern.yield %a, %c
  }
}
