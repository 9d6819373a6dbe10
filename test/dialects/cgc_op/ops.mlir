// RUN: cgc-opt -split-input-file %s | cgc-opt -split-input-file | FileCheck %s
// Round trip of cgc_op ops: printed, parsed again and verified.

// CHECK-LABEL: cgc.entry_point @scans_and_scatters
cgc.module {
  cgc.entry_point @scans_and_scatters(%x: !cgc.tensor<2x3x!cgc.float32>, %i: !cgc.tensor<2x2x!cgc.int64>, %u: !cgc.tensor<2x2x!cgc.float32>, %t: !cgc.tensor<4x1x!cgc.int64>, %v: !cgc.tensor<4x3x!cgc.float32>) -> (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<4x3x!cgc.float32>) {
    // CHECK: cgc_op.cumsum(%{{.*}}) {axis = 1 : i64, exclusive = true, reverse = true}
    %0 = cgc_op.cumsum(%x) {axis = 1, exclusive = true, reverse = true} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    // CHECK: cgc_op.scatter_elements(%{{.*}}, %{{.*}}, %{{.*}}) {axis = 1 : i64, reduction = "add"}
    %1 = cgc_op.scatter_elements(%x, %i, %u) {axis = 1, reduction = "add"} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x2x!cgc.int64>, !cgc.tensor<2x2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    %big = cgc_op.concat(%x, %x) {axis = 0} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<4x3x!cgc.float32>
    // CHECK: cgc_op.scatter_nd(%{{.*}}, %{{.*}}, %{{.*}}) :
    %2 = cgc_op.scatter_nd(%big, %t, %v) : (!cgc.tensor<4x3x!cgc.float32>, !cgc.tensor<4x1x!cgc.int64>, !cgc.tensor<4x3x!cgc.float32>) -> !cgc.tensor<4x3x!cgc.float32>
    cgc.return %0, %1, %2 : !cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<4x3x!cgc.float32>
  }
}

// -----

// CHECK-LABEL: cgc.entry_point @selection_and_sampling
cgc.module {
  cgc.entry_point @selection_and_sampling(%x: !cgc.tensor<2x10x!cgc.float32>, %img: !cgc.tensor<1x3x4x4x!cgc.float32>, %grid: !cgc.tensor<1x6x5x2x!cgc.float32>) -> (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.int64>, !cgc.tensor<1x3x6x5x!cgc.float32>) {
    // CHECK: cgc_op.top_k(%{{.*}}) {axis = 1 : i64, k = 3 : i64, largest = false} : (!cgc.tensor<2x10x!cgc.float32>) -> (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.int64>)
    %v, %i = cgc_op.top_k(%x) {k = 3, axis = 1, largest = false} : (!cgc.tensor<2x10x!cgc.float32>) -> (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.int64>)
    // CHECK: cgc_op.grid_sample(%{{.*}}, %{{.*}}) {align_corners = true, mode = "bicubic", padding_mode = "reflection"}
    %s = cgc_op.grid_sample(%img, %grid) {mode = "bicubic", padding_mode = "reflection", align_corners = true} : (!cgc.tensor<1x3x4x4x!cgc.float32>, !cgc.tensor<1x6x5x2x!cgc.float32>) -> !cgc.tensor<1x3x6x5x!cgc.float32>
    cgc.return %v, %i, %s : !cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.int64>, !cgc.tensor<1x3x6x5x!cgc.float32>
  }
}
