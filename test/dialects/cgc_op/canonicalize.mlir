// RUN: cgc-opt -split-input-file --canonicalize %s | FileCheck %s
// The structural folders of cgc_op (values are folded by the importer:
// constants are named references whose bytes are not in the IR).

// An identity, a cast to the same type, a reshape to the same shape and the
// identity permutation all fold to their input.
// CHECK-LABEL: cgc.entry_point @same_type
// CHECK-NEXT: cgc.return %arg0
cgc.module {
  cgc.entry_point @same_type(%x: !cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    %0 = cgc_op.identity(%x) : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    %1 = cgc_op.cast(%0) {to = !cgc.float32} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    %2 = cgc_op.reshape(%1) {shape = [2, 3]} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    %3 = cgc_op.transpose(%2) {perm = [0, 1]} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %3 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

// A cast that converts stays.
// CHECK-LABEL: cgc.entry_point @real_cast
// CHECK: cgc_op.cast
cgc.module {
  cgc.entry_point @real_cast(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float16> {
    %0 = cgc_op.cast(%x) {to = !cgc.float16} : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float16>
    cgc.return %0 : !cgc.tensor<4x!cgc.float16>
  }
}

// -----

// Two reshapes are one; a transpose of a transpose is one transpose by the
// composed permutation, or nothing when that is the identity.
// CHECK-LABEL: cgc.entry_point @chains
// CHECK-NEXT: %[[R:.*]] = cgc_op.reshape(%arg0) {shape = [6, 4]} : (!cgc.tensor<2x3x4x!cgc.float32>) -> !cgc.tensor<6x4x!cgc.float32>
// CHECK-NEXT: %[[T:.*]] = cgc_op.transpose(%arg0) {perm = [2, 0, 1]} : (!cgc.tensor<2x3x4x!cgc.float32>) -> !cgc.tensor<4x2x3x!cgc.float32>
// CHECK-NEXT: cgc.return %[[R]], %[[T]], %arg0
cgc.module {
  cgc.entry_point @chains(%x: !cgc.tensor<2x3x4x!cgc.float32>) -> (!cgc.tensor<6x4x!cgc.float32>, !cgc.tensor<4x2x3x!cgc.float32>, !cgc.tensor<2x3x4x!cgc.float32>) {
    %0 = cgc_op.reshape(%x) {shape = [24]} : (!cgc.tensor<2x3x4x!cgc.float32>) -> !cgc.tensor<24x!cgc.float32>
    %1 = cgc_op.reshape(%0) {shape = [6, 4]} : (!cgc.tensor<24x!cgc.float32>) -> !cgc.tensor<6x4x!cgc.float32>
    %2 = cgc_op.transpose(%x) {perm = [1, 2, 0]} : (!cgc.tensor<2x3x4x!cgc.float32>) -> !cgc.tensor<3x4x2x!cgc.float32>
    %3 = cgc_op.transpose(%2) {perm = [1, 2, 0]} : (!cgc.tensor<3x4x2x!cgc.float32>) -> !cgc.tensor<4x2x3x!cgc.float32>
    %4 = cgc_op.transpose(%2) {perm = [2, 0, 1]} : (!cgc.tensor<3x4x2x!cgc.float32>) -> !cgc.tensor<2x3x4x!cgc.float32>
    cgc.return %1, %3, %4 : !cgc.tensor<6x4x!cgc.float32>, !cgc.tensor<4x2x3x!cgc.float32>, !cgc.tensor<2x3x4x!cgc.float32>
  }
}
