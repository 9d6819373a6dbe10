// cgc-partition: subgraph calls grouped into partitions.
//
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" --cgc-partition | FileCheck %s --check-prefix=TARGET
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" --cgc-partition="granularity=subgraph" | FileCheck %s --check-prefix=EACH
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" --cgc-partition="max-subgraphs=1" | FileCheck %s --check-prefix=EACH
// RUN: not cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition="granularity=layer" 2>&1 | FileCheck %s --check-prefix=BAD

// The spec's network: both conv+relu+add calls in the driver's partition,
// the upsample (fallback) in its own.
// TARGET-LABEL: cgc.entry_point @main
// TARGET:         cgc.call @convReluAdd({{.*}}) {cgc.partition = 0 : i64}
// TARGET-NEXT:    cgc.call @convReluAdd({{.*}}) {cgc.partition = 0 : i64}
// TARGET-NEXT:    cgc.call @upsample({{.*}}) {cgc.partition = 1 : i64}
// One partition per call.
// EACH-LABEL: cgc.entry_point @main
// EACH:         cgc.call @convReluAdd({{.*}}) {cgc.partition = 0 : i64}
// EACH-NEXT:    cgc.call @convReluAdd({{.*}}) {cgc.partition = 1 : i64}
// EACH-NEXT:    cgc.call @upsample({{.*}}) {cgc.partition = 2 : i64}
// BAD: error: unknown partition granularity 'layer'; use 'subgraph' or 'target'
cgc.module {
  cgc.entry_point @main(%in: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32> {
    %w1 = cgc.constant("w1") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %w2 = cgc.constant("w2") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %conv1 = cgc_op.convolution(%in, %w1) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %relu1 = cgc_op.relu(%conv1) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %add1 = cgc_op.add(%relu1, %in) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %conv2 = cgc_op.convolution(%add1, %w2) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %relu2 = cgc_op.relu(%conv2) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %add2 = cgc_op.add(%relu2, %add1) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %up = cgc_op.upsample(%add2) {scale_size = [2, 2]} : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32>
    cgc.return %up : !cgc.tensor<1x1x8x8x!cgc.float32>
  }
}

// -----

// Partitions stay acyclic: the second driver call consumes the sigmoid
// (fallback), which consumes the first driver call, so the two cannot share
// a partition. A third, independent driver call joins the most recent
// driver partition it can.
// TARGET-LABEL: cgc.entry_point @acyclic
// TARGET:         %[[A:.*]] = cgc.call @convReluAdd(%arg0, {{.*}}) {cgc.partition = 0 : i64}
// TARGET-NEXT:    %[[S:.*]] = cgc.call @sigmoid(%[[A]]) {cgc.partition = 1 : i64}
// TARGET-NEXT:    %[[B:.*]] = cgc.call @convReluAdd(%[[S]], {{.*}}) {cgc.partition = 2 : i64}
// TARGET-NEXT:    %[[C:.*]] = cgc.call @convReluAdd(%arg1, {{.*}}) {cgc.partition = 2 : i64}
cgc.module {
  cgc.entry_point @acyclic(%x: !cgc.tensor<1x1x4x4x!cgc.float32>, %z: !cgc.tensor<1x1x4x4x!cgc.float32>) -> (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) {
    %w = cgc.constant("w") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %c1 = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %r1 = cgc_op.relu(%c1) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %a1 = cgc_op.add(%r1, %x) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %s = cgc_op.sigmoid(%a1) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %c2 = cgc_op.convolution(%s, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %r2 = cgc_op.relu(%c2) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %a2 = cgc_op.add(%r2, %s) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %c3 = cgc_op.convolution(%z, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %r3 = cgc_op.relu(%c3) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %a3 = cgc_op.add(%r3, %z) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    cgc.return %a2, %a3 : !cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>
  }
}
