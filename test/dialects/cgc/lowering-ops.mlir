// Round trips of the Lowering-IR ops of the cgc dialect: cgc.call and
// cgc.barrier.
// RUN: cgc-opt %s -split-input-file | FileCheck %s
// RUN: cgc-opt %s -split-input-file | cgc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: cgc.entry_point @main
// CHECK:         %[[C:.*]] = cgc.call @reluAdd(%{{.*}}, %{{.*}}) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
// CHECK:         cgc.return %[[C]]
cgc.module {
  cgc.subgraph @reluAdd attributes {origin = "t"} {
    cgc.functional_definition private @reluAddFunctional(%x: !cgc.tensor<4x!cgc.float32>, %w: !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      %1 = cgc_op.add(%0, %w) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %1 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    %w = cgc.constant("w") : !cgc.tensor<constant 4x!cgc.float32>
    %0 = cgc.call @reluAdd(%in, %w) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

// CHECK-LABEL: cgc.program @main
// CHECK:         cgc.barrier %{{.*}}[0, 16], %{{.*}}[0, 16] : !cgc.memref<64x!cgc.int8>, !cgc.memref<4x!cgc.float32>
cgc.module {
  cgc.program @main(%in: !cgc.memref<4x!cgc.float32>, %out: !cgc.memref<4x!cgc.float32>, %scratch: !cgc.memref<64x!cgc.int8>) {
    cgc.barrier %scratch[0, 16], %out[0, 16] : !cgc.memref<64x!cgc.int8>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}
