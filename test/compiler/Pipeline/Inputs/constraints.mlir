// Patterns with constraints: element types, attribute values, shapes and
// dimension multiples.
cgc.module @constrained {
  // Only float16 relus.
  cgc_pattern.pattern @halfRelu {
    %x = cgc_pattern.input {element_types = [!cgc.float16]}
    %r = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %r
  }
  // Only ungrouped convolutions with unit or double strides, whose output
  // has a channel count that is a multiple of 2.
  cgc_pattern.pattern @plainConv {
    %x = cgc_pattern.input
    %w = cgc_pattern.input {constant = true}
    %b = cgc_pattern.input {constant = true, optional}
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w, %b) {attrs = {groups = 1 : i64}, attrs_one_of = {strides = [[1, 1], [2, 2]]}, dim_multiple = [[1, 2]]}
    cgc_pattern.yield %c
  }
  // Sigmoid of an exactly 1x8 tensor.
  cgc_pattern.pattern @smallSigmoid {
    %x = cgc_pattern.input {shape = [1, 8]}
    %s = cgc_pattern.op ["cgc_op.sigmoid"](%x)
    cgc_pattern.yield %s
  }
}
