// Round trips of every cgc_pattern op, through text and bytecode.
// RUN: cgc-opt %s -split-input-file | FileCheck %s
// RUN: cgc-opt %s -split-input-file | cgc-opt -split-input-file | FileCheck %s

// The spec's fixed DAG: conv -> relu -> add, with the residual from outside.
// CHECK-LABEL: cgc_pattern.pattern @convReluAdd attributes {priority = 10 : i64} {
// CHECK:         %[[X:.*]] = cgc_pattern.input {element_types = [!cgc.float32], ranks = [4]}
// CHECK:         %[[W:.*]] = cgc_pattern.input {constant = true}
// CHECK:         %[[B:.*]] = cgc_pattern.input {constant = true, optional}
// CHECK:         %[[R:.*]] = cgc_pattern.input
// CHECK:         %[[C:.*]] = cgc_pattern.op ["cgc_op.convolution"](%[[X]], %[[W]], %[[B]]) {attrs = {groups = 1 : i64}, attrs_one_of = {strides = {{\[\[}}1, 1], [2, 2]]}}
// CHECK:         %[[A:.*]] = cgc_pattern.op ["cgc_op.relu"](%[[C]])
// CHECK:         %[[S:.*]] = cgc_pattern.op ["cgc_op.add"](%[[A]], %[[R]]) {commutative}
// CHECK:         cgc_pattern.yield %[[S]]
cgc.module @driverTarget {
  cgc_pattern.pattern @convReluAdd attributes {priority = 10 : i64} {
    %x = cgc_pattern.input {element_types = [!cgc.float32], ranks = [4]}
    %w = cgc_pattern.input {constant = true}
    %b = cgc_pattern.input {constant = true, optional}
    %r = cgc_pattern.input
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w, %b) {attrs = {groups = 1 : i64}, attrs_one_of = {strides = [[1, 1], [2, 2]]}}
    %a = cgc_pattern.op ["cgc_op.relu"](%c)
    %s = cgc_pattern.op ["cgc_op.add"](%a, %r) {commutative}
    cgc_pattern.yield %s
  }
  // CHECK: cgc_pattern.reject_when @convReluAdd "too large" {input = 0 : i64, min_elements = 17 : i64}
  cgc_pattern.reject_when @convReluAdd "too large" {input = 0 : i64, min_elements = 17 : i64}
}

// -----

// A dynamic pattern: an anchor (conv or matmul, any operands) followed by any
// chain of elementwise layers that keep its shape; layout and alignment
// constraints on the result.
// CHECK-LABEL: cgc_pattern.pattern @epilogue attributes {naming = "ops"} {
// CHECK:         %[[M:.*]] = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {dim_multiple = {{\[\[}}-1, 8]], open}
// CHECK:         %[[E:.*]] = cgc_pattern.chain ["elementwise"](%[[M]]) {alignment = 256 : i64, contiguous, keep_shape, max_length = 4 : i64}
// CHECK:         cgc_pattern.yield %[[E]]
cgc.module {
  cgc_pattern.pattern @epilogue attributes {naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open, dim_multiple = [[-1, 8]]}
    %e = cgc_pattern.chain ["elementwise"](%m) {keep_shape, max_length = 4 : i64, contiguous, alignment = 256 : i64}
    cgc_pattern.yield %e
  }
}

// -----

// The fallback target's single pattern and a specialization answer.
// CHECK-LABEL: cgc.module
// CHECK:         cgc_pattern.pattern @anyLayer attributes {naming = "ops", priority = -1000000 : i64}
// CHECK:           cgc_pattern.op ["any"] {open}
// CHECK:         cgc_pattern.accept @convReluAdd
// CHECK:         cgc_pattern.reject @upsample "no upsampling"
cgc.module {
  cgc_pattern.pattern @anyLayer attributes {priority = -1000000 : i64, naming = "ops"} {
    %o = cgc_pattern.op ["any"] {open}
    cgc_pattern.yield %o
  }
  cgc_pattern.accept @convReluAdd
  cgc_pattern.reject @upsample "no upsampling"
}
