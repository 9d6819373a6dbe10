// cgc-specialize-subgraphs: each target is asked about its concrete
// subgraphs; rejected ones fall to the next candidate, then to the fallback.
//
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/picky.mlir" --cgc-specialize-subgraphs="targets=patterns:%S/Inputs/picky.mlir" 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// 16 elements: conv+relu+add is accepted as matched.
// CHECK-LABEL: cgc.subgraph @convReluAdd attributes {origin = "picky", pattern = "convReluAdd"}
// CHECK-LABEL: cgc.entry_point @accepted
// CHECK-NEXT:    %[[W:.*]] = cgc.constant
// CHECK-NEXT:    %[[C:.*]] = cgc.call @convReluAdd(%arg0, %[[W]], %arg1)
// CHECK-NEXT:    cgc.return %[[C]]
cgc.module {
  cgc.entry_point @accepted(%x: !cgc.tensor<1x1x4x4x!cgc.float32>, %y: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32> {
    %w = cgc.constant("w") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %a = cgc_op.add(%r, %y) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    cgc.return %a : !cgc.tensor<1x1x4x4x!cgc.float32>
  }
}

// -----

// 32 elements: conv+relu+add is rejected; its layers get the next candidate,
// conv+relu, and the add goes to the fallback target.
// REMARK: remark: target 'picky' rejected subgraph 'convReluAdd' (pattern 'convReluAdd'): inputs of more than 16 elements are not supported
// CHECK-LABEL: cgc.subgraph @convRelu attributes {origin = "picky", pattern = "convRelu"}
// CHECK-LABEL: cgc.subgraph @add attributes {origin = "fallback", pattern = "layer"}
// CHECK-LABEL: cgc.entry_point @nextCandidate
// CHECK:         %[[R:.*]] = cgc.call @convRelu(%arg0, %{{.*}})
// CHECK-NEXT:    %[[A:.*]] = cgc.call @add(%[[R]], %arg1)
// CHECK-NEXT:    cgc.return %[[A]]
cgc.module {
  cgc.entry_point @nextCandidate(%x: !cgc.tensor<1x2x4x4x!cgc.float32>, %y: !cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32> {
    %w = cgc.constant("w") : !cgc.tensor<constant 2x2x3x3x!cgc.float32>
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %a = cgc_op.add(%r, %y) : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    cgc.return %a : !cgc.tensor<1x2x4x4x!cgc.float32>
  }
}

// -----

// 8 channels: both candidates are rejected in turn; every layer falls to the
// fallback target.
// REMARK: remark: target 'picky' rejected subgraph 'convReluAdd' (pattern 'convReluAdd'): inputs of more than 16 elements are not supported
// REMARK: remark: target 'picky' rejected subgraph 'convRelu' (pattern 'convRelu'): 8-channel outputs are not supported
// CHECK-LABEL: cgc.entry_point @allRejected
// CHECK:         %[[C:.*]] = cgc.call @convolution(%arg0, %{{.*}})
// CHECK-NEXT:    %[[R:.*]] = cgc.call @relu(%[[C]])
// CHECK-NEXT:    %[[A:.*]] = cgc.call @add(%[[R]], %arg1)
// CHECK-NEXT:    cgc.return %[[A]]
cgc.module {
  cgc.entry_point @allRejected(%x: !cgc.tensor<1x8x2x2x!cgc.float32>, %y: !cgc.tensor<1x8x2x2x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32> {
    %w = cgc.constant("w") : !cgc.tensor<constant 8x8x1x1x!cgc.float32>
    %c = cgc_op.convolution(%x, %w) {start_padding = [0, 0], end_padding = [0, 0], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x8x2x2x!cgc.float32>, !cgc.tensor<constant 8x8x1x1x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x8x2x2x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32>
    %a = cgc_op.add(%r, %y) : (!cgc.tensor<1x8x2x2x!cgc.float32>, !cgc.tensor<1x8x2x2x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32>
    cgc.return %a : !cgc.tensor<1x8x2x2x!cgc.float32>
  }
}
