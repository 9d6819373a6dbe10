// Checks the spec's listing in examples/spec/output-ir.mlir: it parses and
// verifies, prints as expected, and round-trips through text and bytecode.
//
// RUN: cgc-opt %cgc_src_root/examples/spec/output-ir.mlir | FileCheck %s
// RUN: cgc-opt %cgc_src_root/examples/spec/output-ir.mlir -o %t.txt
// RUN: cgc-opt %t.txt | diff %t.txt -
// RUN: cgc-opt %cgc_src_root/examples/spec/output-ir.mlir -emit-bytecode -o %t.mlirbc
// RUN: cgc-opt %t.mlirbc | diff %t.txt -

// CHECK-LABEL: cgc.subgraph @convReluAdd attributes {origin = "driverTarget"}
// CHECK:         cgc.functional_definition private @convReluAddFunctional
// CHECK:           cgc_op.convolution
// CHECK-NEXT:      cgc_op.relu
// CHECK-NEXT:      cgc_op.add
// CHECK-LABEL: cgc.partition @driverPartition
// CHECK-SAME:    %{{.*}}: !cgc.memref<constant 1x1x3x3x!cgc.float32>
// CHECK:         cgc.invoke @convReluAdd(%{{.*}}, %{{.*}}, %{{.*}}, %[[S:[^)]*]])
// CHECK-NEXT:    cgc.invoke @convReluAdd(%[[S]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-LABEL: cgc.subgraph @upsample attributes {origin = "fallbackTarget"}
// CHECK:         cgc_op.upsample
// CHECK-LABEL: cgc.partition @fallbackPartition
// CHECK-LABEL: cgc.program @main
// CHECK:         %[[V0:.*]] = cgc.view_memref %{{.*}}[0] : !cgc.memref<128x!cgc.int8> to !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK:         %[[V1:.*]] = cgc.view_memref %{{.*}}[64] : !cgc.memref<128x!cgc.int8> to !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK:         cgc.invoke @driverPartition({{.*}}, %[[V0]], %[[V1]])
// CHECK:         cgc.invoke @fallbackPartition(%[[V0]], %{{.*}})
