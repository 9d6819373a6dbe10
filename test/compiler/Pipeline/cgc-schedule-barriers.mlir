// cgc-schedule-barriers: barriers only where dispatches' byte ranges overlap.
//
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" --cgc-partition --cgc-plan-memory="schedule=max-concurrency" --cgc-schedule-barriers="verify=true" | FileCheck %s
// RUN: not cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-schedule-barriers 2>&1 | FileCheck %s --check-prefix=UNPLANNED

// The spec's network: the upsample reads what the driver partition wrote to
// scratch; one barrier, on exactly those 64 bytes.
// CHECK-LABEL: cgc.entry_point @main
// CHECK-SAME:    cgc.schedule = {barriers = 1 : i64, dispatches = 2 : i64}
// CHECK:         cgc.call @convReluAdd({{.*}}) {cgc.offsets = array<i64: {{[0-9]+}}>
// CHECK-NOT:       cgc.barrier_before
// CHECK-NEXT:    cgc.call @convReluAdd({{.*}}) {cgc.offsets = array<i64: [[O:[0-9]+]]>
// CHECK-NEXT:    cgc.call @upsample({{.*}}) {cgc.barrier_before = [{buffer = "scratch", bytes = 64 : i64, index = 0 : i64, offset = [[O]] : i64}]
// UNPLANNED: error: 'cgc.entry_point' op has no memory plan; run cgc-plan-memory first
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

// The spec's execution-scheduling diamond, planned for concurrency: B (exp)
// and C (sigmoid) both only read A, so no barrier separates them; three
// barriers in all (after A, after B and C, after D), each on the bytes of
// the tensors that cross it.
// CHECK-LABEL: cgc.entry_point @diamond
// CHECK-SAME:    cgc.schedule = {barriers = 3 : i64, dispatches = 5 : i64}
// CHECK:         cgc.call @neg(%arg0) {cgc.offsets = array<i64: [[A:[0-9]+]]>
// CHECK-NEXT:    cgc.call @exp({{.*}}) {cgc.barrier_before = [{buffer = "scratch", bytes = 64 : i64, index = 0 : i64, offset = [[A]] : i64}]
// CHECK-NEXT:    cgc.call @sigmoid({{.*}}) {cgc.offsets
// CHECK-NEXT:    cgc.call @tanh({{.*}}) {cgc.barrier_before
// CHECK-NEXT:    cgc.call @add({{.*}}) {cgc.barrier_before
cgc.module {
  cgc.entry_point @diamond(%x: !cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32> {
    %a = cgc_op.neg(%x) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %b = cgc_op.exp(%a) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %c = cgc_op.sigmoid(%a) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %d = cgc_op.tanh(%b) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %e = cgc_op.add(%d, %c) : (!cgc.tensor<16x!cgc.float32>, !cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    cgc.return %e : !cgc.tensor<16x!cgc.float32>
  }
}

// -----

// Two independent chains that write different model outputs: nothing
// overlaps, no barrier at all.
// CHECK-LABEL: cgc.entry_point @independent
// CHECK-SAME:    cgc.schedule = {barriers = 0 : i64, dispatches = 2 : i64}
// CHECK-NOT:     cgc.barrier_before
cgc.module {
  cgc.entry_point @independent(%x: !cgc.tensor<16x!cgc.float32>, %y: !cgc.tensor<16x!cgc.float32>) -> (!cgc.tensor<16x!cgc.float32>, !cgc.tensor<16x!cgc.float32>) {
    %a = cgc_op.neg(%x) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %b = cgc_op.exp(%y) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    cgc.return %a, %b : !cgc.tensor<16x!cgc.float32>, !cgc.tensor<16x!cgc.float32>
  }
}
