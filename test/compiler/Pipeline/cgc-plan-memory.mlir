// cgc-plan-memory: dispatch order and scratch offsets from compiler/Planning.
//
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" --cgc-partition --cgc-plan-memory | FileCheck %s --check-prefix=SPEC
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" --cgc-partition --cgc-plan-memory="alignment=256" | FileCheck %s --check-prefix=ALIGN
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory | FileCheck %s --check-prefix=INPLACE
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory="in-place=false" | FileCheck %s --check-prefix=NOINPLACE
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory="schedule=max-concurrency" | FileCheck %s --check-prefix=CONC
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/aligned-relu.mlir" --cgc-partition --cgc-plan-memory | FileCheck %s --check-prefix=PATTERN
// RUN: not cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory="schedule=fastest" 2>&1 | FileCheck %s --check-prefix=BADMODE
// RUN: not cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory="alignment=48" 2>&1 | FileCheck %s --check-prefix=BADALIGN
// RUN: not cgc-opt %s -split-input-file --cgc-plan-memory 2>&1 | FileCheck %s --check-prefix=UNMATCHED
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory="report=%t.txt" -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.txt

// The spec's network. The driver partition writes both 64-byte
// intermediates in the same dispatch, so both are live at once: the
// footprint is 128, which is also the lower bound and the naive sum.
// SPEC-LABEL: cgc.entry_point @main
// SPEC-SAME:    cgc.memory = {alignment = 64 : i64, footprint = 128 : i64, lower_bound = 128 : i64, naive = 128 : i64, schedule = "min-memory"}
// SPEC:         cgc.call @convReluAdd({{.*}}) {cgc.offsets = array<i64: [[O1:[0-9]+]]>, cgc.partition = 0 : i64}
// SPEC-NEXT:    cgc.call @convReluAdd({{.*}}) {cgc.offsets = array<i64: [[O2:[0-9]+]]>, cgc.partition = 0 : i64}
// The upsample writes the model output: no scratch offset.
// SPEC-NEXT:    cgc.call @upsample({{.*}}) {cgc.offsets = array<i64: -1>, cgc.partition = 1 : i64}
// With 256-byte alignment each intermediate takes 256 bytes.
// ALIGN-LABEL: cgc.entry_point @main
// ALIGN-SAME:    cgc.memory = {alignment = 256 : i64, footprint = 512 : i64, lower_bound = 512 : i64, naive = 512 : i64
// ALIGN:         cgc.offsets = array<i64: {{0|256}}>
// ALIGN:         cgc.offsets = array<i64: {{0|256}}>
// REPORT: footprint
// REPORT: lower bound
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

// The spec's memory-planning diamond A -> {B, C}, B -> D, {C, D} -> E with
// 64-byte tensors, all on the fallback target (one dispatch per layer).
//
// min-memory with in-place: C (sigmoid) is A's last reader and elementwise,
// so it writes over A; at most two intermediates are live at once: 128.
// INPLACE-LABEL: cgc.entry_point @diamond
// INPLACE-SAME:    footprint = 128 : i64, lower_bound = 128 : i64, naive = 256 : i64
// INPLACE:         cgc.call @neg(%arg0) {cgc.offsets = array<i64: [[A:[0-9]+]]>
// INPLACE:         cgc.call @sigmoid({{.*}}) {cgc.offsets = array<i64: [[A]]>
// Without in-place, A, B and C are live together while C runs: 192.
// NOINPLACE-LABEL: cgc.entry_point @diamond
// NOINPLACE-SAME:    footprint = 192 : i64, lower_bound = 192 : i64, naive = 256 : i64
// max-concurrency: B and C may run together, so neither reuses A's bytes
// (which the other reads) and they do not share bytes with each other.
// CONC-LABEL: cgc.entry_point @diamond
// CONC-SAME:    footprint = 192 : i64, lower_bound = 192 : i64, naive = 256 : i64, schedule = "max-concurrency"
// CONC:         cgc.call @neg(%arg0) {cgc.offsets = array<i64: [[A:[0-9]+]]>
// CONC-NEXT:    cgc.call @exp({{.*}}) {cgc.offsets = array<i64: [[B:[0-9]+]]>
// CONC-NOT:       array<i64: [[A]]>
// CONC-NEXT:    cgc.call @sigmoid({{.*}}) {cgc.offsets = array<i64:
// CONC-NOT:       [[A]]>
// CONC-NOT:       [[B]]>
// CONC-SAME:      cgc.partition = 2
// UNMATCHED: error: 'cgc_op.neg' op is not in a subgraph; the planner needs a partitioned entry point
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

// A pattern's alignment constraint raises the plan's alignment.
// PATTERN-LABEL: cgc.subgraph @alignedRelu attributes {alignment = 256 : i64
// PATTERN-LABEL: cgc.entry_point @aligned
// PATTERN-SAME:    cgc.memory = {alignment = 256 : i64
// BADMODE: error: unknown schedule 'fastest'; use 'min-memory' or 'max-concurrency'
// BADALIGN: error: alignment must be a power of two of at most 65536, got 48
cgc.module {
  cgc.entry_point @aligned(%x: !cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32> {
    %a = cgc_op.neg(%x) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %b = cgc_op.relu(%a) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    cgc.return %b : !cgc.tensor<16x!cgc.float32>
  }
}
