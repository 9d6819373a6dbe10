// Round trips of every cgc type and op.
// RUN: cgc-opt %s -split-input-file | FileCheck %s
// RUN: cgc-opt %s -split-input-file | cgc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: cgc.entry_point @types
// CHECK-SAME: !cgc.tensor<2x!cgc.float32>, %{{.*}}: !cgc.tensor<2x!cgc.float16>, %{{.*}}: !cgc.tensor<2x!cgc.bfloat16>, %{{.*}}: !cgc.tensor<2x!cgc.float64>
// CHECK-SAME: !cgc.tensor<2x!cgc.int8>, %{{.*}}: !cgc.tensor<2x!cgc.uint8>, %{{.*}}: !cgc.tensor<2x!cgc.int16>, %{{.*}}: !cgc.tensor<2x!cgc.uint16>
// CHECK-SAME: !cgc.tensor<2x!cgc.int32>, %{{.*}}: !cgc.tensor<2x!cgc.uint32>, %{{.*}}: !cgc.tensor<2x!cgc.int64>, %{{.*}}: !cgc.tensor<2x!cgc.uint64>
// CHECK-SAME: !cgc.tensor<2x!cgc.bool>, %{{.*}}: !cgc.tensor<!cgc.float32>, %{{.*}}: !cgc.tensor<0x3x!cgc.int8>
cgc.module {
  cgc.entry_point @types(%a: !cgc.tensor<2x!cgc.float32>, %b: !cgc.tensor<2x!cgc.float16>,
                         %c: !cgc.tensor<2x!cgc.bfloat16>, %d: !cgc.tensor<2x!cgc.float64>,
                         %e: !cgc.tensor<2x!cgc.int8>, %f: !cgc.tensor<2x!cgc.uint8>,
                         %g: !cgc.tensor<2x!cgc.int16>, %h: !cgc.tensor<2x!cgc.uint16>,
                         %i: !cgc.tensor<2x!cgc.int32>, %j: !cgc.tensor<2x!cgc.uint32>,
                         %k: !cgc.tensor<2x!cgc.int64>, %l: !cgc.tensor<2x!cgc.uint64>,
                         %m: !cgc.tensor<2x!cgc.bool>, %scalar: !cgc.tensor<!cgc.float32>,
                         %empty: !cgc.tensor<0x3x!cgc.int8>) -> !cgc.tensor<2x!cgc.float32> {
    // CHECK: %w = cgc.constant("w") : !cgc.tensor<constant 2x!cgc.float32>
    %w = cgc.constant("w") : !cgc.tensor<constant 2x!cgc.float32>
    // Constant names that are not identifiers still print as a valid SSA name.
    // CHECK: %{{.*}} = cgc.constant("layer1.0/conv weight") : !cgc.tensor<constant 2x!cgc.float32>
    %w2 = cgc.constant("layer1.0/conv weight") : !cgc.tensor<constant 2x!cgc.float32>
    cgc.return %a : !cgc.tensor<2x!cgc.float32>
  }
}

// -----

// CHECK-LABEL: cgc.program @memrefs
// CHECK-SAME: !cgc.memref<4x4x!cgc.float32, strides = [1, 4]>
// CHECK-SAME: !cgc.memref<constant 16x!cgc.int8>
// CHECK:      cgc.view_memref %{{.*}}[8] : !cgc.memref<constant 16x!cgc.int8> to !cgc.memref<constant 2x!cgc.float32>
// A view with explicit contiguous strides prints without them.
// CHECK:      cgc.view_memref %{{.*}}[0] : !cgc.memref<64x!cgc.int8> to !cgc.memref<2x2x!cgc.float32>
cgc.module {
  cgc.program @memrefs(%t: !cgc.memref<4x4x!cgc.float32, strides = [1, 4]>,
                       %c: !cgc.memref<constant 16x!cgc.int8>,
                       %s: !cgc.memref<64x!cgc.int8>) {
    %0 = cgc.view_memref %c[8] : !cgc.memref<constant 16x!cgc.int8> to !cgc.memref<constant 2x!cgc.float32>
    %1 = cgc.view_memref %s[0] : !cgc.memref<64x!cgc.int8> to !cgc.memref<2x2x!cgc.float32, strides = [2, 1]>
    cgc.return
  }
}

// -----

// A named module, a subgraph invoked twice from a partition, and the program
// binding constants by name.
// CHECK-LABEL: cgc.module @net
// CHECK: cgc.subgraph @relu attributes {origin = "fallback"}
// CHECK: cgc.functional_definition private @reluFunctional
// CHECK: cgc.partition @p(
// CHECK: cgc.invoke @relu(%{{.*}}, %{{.*}}) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
// CHECK: cgc.program @main(
// CHECK: %w = cgc.constant("w") : !cgc.memref<constant 4x!cgc.float32>
// CHECK: cgc.invoke @p(
cgc.module @net {
  cgc.subgraph @relu attributes {origin = "fallback"} {
    cgc.functional_definition private @reluFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.subgraph @add attributes {origin = "fallback"} {
    cgc.functional_definition private @addFunctional(%x: !cgc.tensor<4x!cgc.float32>, %y: !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.add(%x, %y) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.partition @p(%in: !cgc.memref<4x!cgc.float32>, %w: !cgc.memref<constant 4x!cgc.float32>,
                   %tmp: !cgc.memref<4x!cgc.float32>, %out: !cgc.memref<4x!cgc.float32>) {
    cgc.invoke @relu(%in, %tmp) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.invoke @add(%tmp, %w, %out) : !cgc.memref<4x!cgc.float32>, !cgc.memref<constant 4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
  cgc.program @main(%in: !cgc.memref<4x!cgc.float32>, %out: !cgc.memref<4x!cgc.float32>, %scratch: !cgc.memref<16x!cgc.int8>) {
    %w = cgc.constant("w") : !cgc.memref<constant 4x!cgc.float32>
    %0 = cgc.view_memref %scratch[0] : !cgc.memref<16x!cgc.int8> to !cgc.memref<4x!cgc.float32>
    cgc.invoke @p(%in, %w, %0, %out) : !cgc.memref<4x!cgc.float32>, !cgc.memref<constant 4x!cgc.float32>, !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}
