// cgc-build-program: partitions and the program of Output IR from the
// planned entry point.
//
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/epilogue.mlir" --cgc-partition --cgc-plan-memory --cgc-schedule-barriers --cgc-build-program | FileCheck %s
// RUN: not cgc-opt %s -split-input-file --cgc-match-subgraphs --cgc-partition --cgc-plan-memory --cgc-build-program 2>&1 | FileCheck %s --check-prefix=NOSCHED

// A model output that a later dispatch reads: the first dispatch writes the
// output buffer, a barrier on that buffer's range orders it before the
// dispatch that reads it. Inputs and outputs keep their names.
// CHECK-LABEL: cgc.partition @partition0(
// CHECK-SAME:    {cgc.name = "x"}
// CHECK-SAME:    {cgc.name = "y"}
// CHECK-LABEL: cgc.partition @partition1(
// CHECK-SAME:    {cgc.name = "y"}
// CHECK-SAME:    {cgc.name = "z"}
// CHECK-LABEL: cgc.program @main(
// CHECK-SAME:    %[[X:[^:]*]]: !cgc.memref<16x!cgc.float32> {cgc.name = "x"}
// CHECK-SAME:    %[[Y:[^:]*]]: !cgc.memref<16x!cgc.float32> {cgc.name = "y"}
// CHECK-SAME:    %[[Z:[^:]*]]: !cgc.memref<16x!cgc.float32> {cgc.name = "z"}
// CHECK-NOT:     scratch
// CHECK:         cgc.invoke @partition0(%[[X]], %[[Y]])
// CHECK-NEXT:    cgc.barrier %[[Y]][0, 64] : !cgc.memref<16x!cgc.float32>
// CHECK-NEXT:    cgc.invoke @partition1(%[[Y]], %[[Z]])
// NOSCHED: error: 'cgc.entry_point' op has no barrier schedule; run cgc-schedule-barriers first
cgc.module {
  cgc.entry_point @main(%x: !cgc.tensor<16x!cgc.float32> {cgc.name = "x"}) -> (!cgc.tensor<16x!cgc.float32> {cgc.name = "y"}, !cgc.tensor<16x!cgc.float32> {cgc.name = "z"}) {
    %y = cgc_op.neg(%x) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    %z = cgc_op.exp(%y) : (!cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<16x!cgc.float32>
    cgc.return %y, %z : !cgc.tensor<16x!cgc.float32>, !cgc.tensor<16x!cgc.float32>
  }
}

// -----

// A partition with an internal intermediate: two matmul+epilogue subgraphs
// of one target in one partition. Bind points: the external inputs in order
// of first use, then what the partition produces for others, then its
// internal intermediate (marked `cgc.internal`: only this partition touches
// its bytes); every intermediate is a view into scratch.
// CHECK-LABEL: cgc.partition @partition0(
// CHECK-SAME:    %[[A:[^:]*]]: !cgc.memref<8x8x!cgc.float32> {cgc.name = "a"}
// CHECK-SAME:    %[[B:[^:]*]]: !cgc.memref<8x8x!cgc.float32> {cgc.name = "b"}
// CHECK-SAME:    %[[C:[^:]*]]: !cgc.memref<8x8x!cgc.float32> {cgc.name = "c"}
// CHECK-SAME:    %[[OUT:[^:]*]]: !cgc.memref<8x8x!cgc.float32> {cgc.name = "out"}
// CHECK-SAME:    %[[T:[^:]*]]: !cgc.memref<8x8x!cgc.float32> {cgc.internal, cgc.name = "matmulRelu.0"}
// CHECK-NEXT:    cgc.invoke @matmulRelu(%[[A]], %[[B]], %[[T]])
// CHECK-NEXT:    cgc.invoke @matmulTanh(%[[T]], %[[C]], %[[OUT]])
// CHECK-LABEL: cgc.program @main(
// CHECK-SAME:    %[[SCRATCH:[^:]*]]: !cgc.memref<256x!cgc.int8> {cgc.name = "scratch"}
// CHECK:         %[[V:.*]] = cgc.view_memref %[[SCRATCH]][0] : !cgc.memref<256x!cgc.int8> to !cgc.memref<8x8x!cgc.float32>
// CHECK-NEXT:    cgc.invoke @partition0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[V]])
// CHECK-NEXT:    cgc.return
cgc.module {
  cgc.entry_point @main(%a: !cgc.tensor<8x8x!cgc.float32> {cgc.name = "a"}, %b: !cgc.tensor<8x8x!cgc.float32> {cgc.name = "b"}, %c: !cgc.tensor<8x8x!cgc.float32> {cgc.name = "c"}) -> (!cgc.tensor<8x8x!cgc.float32> {cgc.name = "out"}) {
    %m1 = cgc_op.matmul(%a, %b) : (!cgc.tensor<8x8x!cgc.float32>, !cgc.tensor<8x8x!cgc.float32>) -> !cgc.tensor<8x8x!cgc.float32>
    %r = cgc_op.relu(%m1) : (!cgc.tensor<8x8x!cgc.float32>) -> !cgc.tensor<8x8x!cgc.float32>
    %m2 = cgc_op.matmul(%r, %c) : (!cgc.tensor<8x8x!cgc.float32>, !cgc.tensor<8x8x!cgc.float32>) -> !cgc.tensor<8x8x!cgc.float32>
    %t = cgc_op.tanh(%m2) : (!cgc.tensor<8x8x!cgc.float32>) -> !cgc.tensor<8x8x!cgc.float32>
    cgc.return %t : !cgc.tensor<8x8x!cgc.float32>
  }
}
