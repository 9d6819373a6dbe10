// The spec's driver target: it declares only conv -> relu -> add, where the
// add's other operand comes from outside the match.
cgc.module @driverTarget {
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
