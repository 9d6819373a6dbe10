// Every user-facing error of the cgc_pattern dialect.
// RUN: cgc-opt %s -split-input-file -verify-diagnostics

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'cgc_op.nope' is not a cgc_op layer}}
    %a = cgc_pattern.op ["cgc_op.nope"] {open}
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{unknown class 'pointwise'}}
    %a = cgc_pattern.op ["pointwise"] {open}
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'names' must list at least one layer or class}}
    %a = cgc_pattern.op [] {open}
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    // expected-error @+1 {{'commutative' needs exactly two operands, got 1}}
    %a = cgc_pattern.op ["cgc_op.relu"](%x) {commutative}
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %b = cgc_pattern.input {optional}
    %w = cgc_pattern.input
    // expected-error @+1 {{operand #2 follows an optional input; optional inputs must be the trailing operands}}
    %a = cgc_pattern.op ["cgc_op.convolution"](%x, %b, %w)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'attrs_one_of' entry 'groups' must be a non-empty list of allowed values}}
    %a = cgc_pattern.op ["cgc_op.convolution"] {open, attrs_one_of = {groups = 1 : i64}}
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'element_types' entry 'i32' is not a CGC element type}}
    %x = cgc_pattern.input {element_types = [i32]}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'ranks' entries must be non-negative, got -2}}
    %x = cgc_pattern.input {ranks = [-2]}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'shape' entries must be sizes or -1 (any), got -3}}
    %x = cgc_pattern.input {shape = [1, -3]}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'shape' has rank 2, which 'ranks' does not allow}}
    %x = cgc_pattern.input {shape = [1, 2], ranks = [4]}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'dim_multiple' entries must be [axis, multiple] pairs of integers}}
    %x = cgc_pattern.input {dim_multiple = [[1]]}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'dim_multiple' multiple must be positive, got 0}}
    %x = cgc_pattern.input {dim_multiple = [[1, 0]]}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'min_elements' exceeds 'max_elements'}}
    %x = cgc_pattern.input {min_elements = 8 : i64, max_elements = 4 : i64}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'min_elements' must be non-negative}}
    %x = cgc_pattern.input {min_elements = -1 : i64}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'max_elements' must be non-negative}}
    %x = cgc_pattern.input {max_elements = -1 : i64}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    // expected-error @+1 {{'alignment' must be a power of two, got 48}}
    %x = cgc_pattern.input {alignment = 48 : i64}
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %a = cgc_pattern.op ["cgc_op.convolution"] {open}
    %b = cgc_pattern.chain ["elementwise"](%a)
    // expected-error @+1 {{is a second chain; a pattern has at most one cgc_pattern.chain}}
    %c = cgc_pattern.chain ["elementwise"](%a)
    cgc_pattern.yield %b, %c
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %a = cgc_pattern.op ["cgc_op.convolution"] {open}
    // expected-error @+1 {{result may only be yielded; a chain ends the pattern}}
    %b = cgc_pattern.chain ["elementwise"](%a)
    %c = cgc_pattern.op ["cgc_op.relu"](%b)
    cgc_pattern.yield %c
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    // expected-error @+1 {{source must be the result of a cgc_pattern.op}}
    %b = cgc_pattern.chain ["elementwise"](%x)
    cgc_pattern.yield %b
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %a = cgc_pattern.op ["cgc_op.convolution"] {open}
    // expected-error @+1 {{'min_length' must be non-negative, got -1}}
    %b = cgc_pattern.chain ["elementwise"](%a) {min_length = -1 : i64}
    cgc_pattern.yield %b
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %a = cgc_pattern.op ["cgc_op.convolution"] {open}
    // expected-error @+1 {{'max_length' must be -1 (no limit) or at least 'min_length', got 1}}
    %b = cgc_pattern.chain ["elementwise"](%a) {min_length = 2 : i64, max_length = 1 : i64}
    cgc_pattern.yield %b
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    // expected-error @+1 {{operand #1 is a cgc_pattern.input; a pattern yields results of matched layers}}
    cgc_pattern.yield %a, %x
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    // expected-error @+1 {{is not reachable from the pattern's root (the first yielded value)}}
    %b = cgc_pattern.op ["cgc_op.sigmoid"](%x)
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a, %b
  }
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    // expected-error @+1 {{must yield at least one value}}
    cgc_pattern.yield
  }
}

// -----

// expected-error @+1 {{expects parent op 'cgc.module'}}
cgc_pattern.pattern @outer {
  %a = cgc_pattern.op ["any"] {open}
  cgc_pattern.yield %a
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
  // expected-error @+1 {{'q' does not name a cgc_pattern.pattern}}
  cgc_pattern.reject_when @q "no"
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
  // expected-error @+1 {{selects either an input or an output, not both}}
  cgc_pattern.reject_when @p "no" {input = 0 : i64, output = 0 : i64}
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
  // expected-error @+1 {{input/output index must be non-negative}}
  cgc_pattern.reject_when @p "no" {input = -1 : i64}
}

// -----

cgc.module {
  cgc_pattern.pattern @p {
    %x = cgc_pattern.input
    %a = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %a
  }
  // expected-error @+1 {{must give a reason}}
  cgc_pattern.reject_when @p ""
}
