// Checks the spec's listing in examples/spec/input-ir.mlir: it parses and
// verifies, prints as expected, and round-trips through text and bytecode.
//
// RUN: cgc-opt %cgc_src_root/examples/spec/input-ir.mlir | FileCheck %s
// RUN: cgc-opt %cgc_src_root/examples/spec/input-ir.mlir -o %t.txt
// RUN: cgc-opt %t.txt | diff %t.txt -
// RUN: cgc-opt %cgc_src_root/examples/spec/input-ir.mlir -emit-bytecode -o %t.mlirbc
// RUN: cgc-opt %t.mlirbc | diff %t.txt -

// CHECK-LABEL: cgc.entry_point @main
// CHECK-SAME:    (%{{.*}}: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32>
// CHECK-DAG:     %[[W1:.*]] = cgc.constant("w1") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
// CHECK-DAG:     %[[B1:.*]] = cgc.constant("b1") : !cgc.tensor<constant 1x!cgc.float32>
// CHECK-DAG:     %[[W2:.*]] = cgc.constant("w2")
// CHECK-DAG:     %[[B2:.*]] = cgc.constant("b2")
// CHECK:         %[[C1:.*]] = cgc_op.convolution(%{{.*}}, %[[W1]], %[[B1]])
// CHECK:         %[[R1:.*]] = cgc_op.relu(%[[C1]])
// CHECK:         %[[A1:.*]] = cgc_op.add(%[[R1]], %{{.*}})
// CHECK:         %[[C2:.*]] = cgc_op.convolution(%[[A1]], %[[W2]], %[[B2]])
// CHECK:         %[[R2:.*]] = cgc_op.relu(%[[C2]])
// CHECK:         %[[A2:.*]] = cgc_op.add(%[[R2]], %[[A1]])
// CHECK:         %[[U:.*]] = cgc_op.upsample(%[[A2]]) {scale_size = [2, 2]}
// CHECK:         cgc.return %[[U]] : !cgc.tensor<1x1x8x8x!cgc.float32>
