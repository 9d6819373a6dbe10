// A target that declares more than it implements: it rejects, when asked to
// specialize, conv+relu+add whose input has more than 16 elements and
// conv+relu producing 8 channels.
cgc.module @picky {
  cgc_pattern.pattern @convReluAdd attributes {priority = 10 : i64} {
    %x = cgc_pattern.input
    %w = cgc_pattern.input {constant = true}
    %r = cgc_pattern.input
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w)
    %a = cgc_pattern.op ["cgc_op.relu"](%c)
    %s = cgc_pattern.op ["cgc_op.add"](%a, %r) {commutative}
    cgc_pattern.yield %s
  }
  cgc_pattern.pattern @convRelu attributes {priority = 5 : i64} {
    %x = cgc_pattern.input
    %w = cgc_pattern.input {constant = true}
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w)
    %a = cgc_pattern.op ["cgc_op.relu"](%c)
    cgc_pattern.yield %a
  }
  cgc_pattern.reject_when @convReluAdd "inputs of more than 16 elements are not supported" {input = 0 : i64, min_elements = 17 : i64}
  cgc_pattern.reject_when @convRelu "8-channel outputs are not supported" {output = 0 : i64, shape = [-1, 8, -1, -1]}
}
