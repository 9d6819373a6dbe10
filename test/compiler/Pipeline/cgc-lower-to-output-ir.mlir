// The spec's example end to end: with a target that declares only
// conv -> relu -> add, the 7-layer network of examples/spec/input-ir.mlir
// lowers to Output IR equivalent to the spec's listing
// (examples/spec/output-ir.mlir, docs/spec-listings.md): two conv+relu+add
// subgraphs in the driver's partition, upsample in the fallback's, views
// into scratch.
//
// RUN: cgc-opt %cgc_src_root/examples/spec/input-ir.mlir --cgc-lower-to-output-ir="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" | FileCheck %s
// The result verifies and round-trips through bytecode.
// RUN: cgc-opt %cgc_src_root/examples/spec/input-ir.mlir --cgc-lower-to-output-ir="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" -emit-bytecode -o %t.mlirbc
// RUN: cgc-opt %t.mlirbc --verify-each | FileCheck %s
// The spec's alternative: one partition per subgraph (three partitions).
// RUN: cgc-opt %cgc_src_root/examples/spec/input-ir.mlir --cgc-lower-to-output-ir="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir granularity=subgraph" | FileCheck %s --check-prefix=FINE

// CHECK-LABEL: cgc.subgraph @convReluAdd attributes {origin = "driverTarget", pattern = "convReluAdd"}
// CHECK-NEXT:    cgc.functional_definition private @convReluAddFunctional(%[[IN:.*]]: !cgc.tensor<1x1x4x4x!cgc.float32>, %[[W:.*]]: !cgc.tensor<constant 1x1x3x3x!cgc.float32>, %[[B:.*]]: !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
// CHECK-NEXT:      %[[C:.*]] = cgc_op.convolution(%[[IN]], %[[W]], %[[B]])
// CHECK-NEXT:      %[[R:.*]] = cgc_op.relu(%[[C]])
// CHECK-NEXT:      %[[A:.*]] = cgc_op.add(%[[R]], %[[IN]])
// CHECK-NEXT:      cgc.return %[[A]]
// CHECK-LABEL: cgc.subgraph @upsample attributes {origin = "fallback", pattern = "layer"}
// CHECK:           cgc_op.upsample
//
// The driver partition: in, w1, b1, w2, b2, output, scratch.
// CHECK-LABEL: cgc.partition @partition0(
// CHECK-SAME:    %[[PIN:[^:]*]]: !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK-SAME:    %[[PW1:[^:]*]]: !cgc.memref<constant 1x1x3x3x!cgc.float32> {cgc.name = "w1"}
// CHECK-SAME:    %[[PB1:[^:]*]]: !cgc.memref<constant 1x!cgc.float32> {cgc.name = "b1"}
// CHECK-SAME:    %[[PW2:[^:]*]]: !cgc.memref<constant 1x1x3x3x!cgc.float32> {cgc.name = "w2"}
// CHECK-SAME:    %[[PB2:[^:]*]]: !cgc.memref<constant 1x!cgc.float32> {cgc.name = "b2"}
// CHECK-SAME:    %[[POUT:[^:]*]]: !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK-SAME:    %[[PSCR:[^:]*]]: !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK-NEXT:    cgc.invoke @convReluAdd(%[[PIN]], %[[PW1]], %[[PB1]], %[[PSCR]])
// CHECK-NEXT:    cgc.invoke @convReluAdd(%[[PSCR]], %[[PW2]], %[[PB2]], %[[POUT]])
// CHECK-NEXT:    cgc.return
// CHECK-LABEL: cgc.partition @partition1(
// CHECK-SAME:    %[[FIN:[^:]*]]: !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK-SAME:    %[[FOUT:[^:]*]]: !cgc.memref<1x1x8x8x!cgc.float32>
// CHECK-NEXT:    cgc.invoke @upsample(%[[FIN]], %[[FOUT]])
//
// The program: inputs, outputs, scratch; constants by name; views into
// scratch; the partitions in order with the one barrier the plan needs.
// CHECK-LABEL: cgc.program @main(
// CHECK-SAME:    %[[IN0:[^:]*]]: !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK-SAME:    %[[OUT0:[^:]*]]: !cgc.memref<1x1x8x8x!cgc.float32>
// CHECK-SAME:    %[[SCRATCH:[^:]*]]: !cgc.memref<128x!cgc.int8> {cgc.name = "scratch"}
// CHECK-SAME:    cgc.memory = {alignment = 64 : i64, footprint = 128 : i64, lower_bound = 128 : i64, naive = 128 : i64
// CHECK-SAME:    cgc.schedule = {barriers = 1 : i64, dispatches = 2 : i64}
// CHECK-DAG:     %[[W1:.*]] = cgc.constant("w1") : !cgc.memref<constant 1x1x3x3x!cgc.float32>
// CHECK-DAG:     %[[B1:.*]] = cgc.constant("b1") : !cgc.memref<constant 1x!cgc.float32>
// CHECK-DAG:     %[[W2:.*]] = cgc.constant("w2") : !cgc.memref<constant 1x1x3x3x!cgc.float32>
// CHECK-DAG:     %[[B2:.*]] = cgc.constant("b2") : !cgc.memref<constant 1x!cgc.float32>
// CHECK-DAG:     %[[V0:.*]] = cgc.view_memref %[[SCRATCH]][{{0|64}}] : !cgc.memref<128x!cgc.int8> to !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK-DAG:     %[[V1:.*]] = cgc.view_memref %[[SCRATCH]][{{0|64}}] : !cgc.memref<128x!cgc.int8> to !cgc.memref<1x1x4x4x!cgc.float32>
// CHECK:         cgc.invoke @partition0(%[[IN0]], %[[W1]], %[[B1]], %[[W2]], %[[B2]], %[[V1]], %[[V0]])
// CHECK-NEXT:    cgc.barrier %[[SCRATCH]][{{0|64}}, 64] : !cgc.memref<128x!cgc.int8>
// CHECK-NEXT:    cgc.invoke @partition1(%[[V1]], %[[OUT0]])
// CHECK-NEXT:    cgc.return

// FINE-COUNT-3: cgc.partition @partition
// FINE-LABEL: cgc.program @main
// FINE:         cgc.invoke @partition0
// FINE-NEXT:    cgc.barrier
// FINE-NEXT:    cgc.invoke @partition1
// FINE-NEXT:    cgc.barrier
// FINE-NEXT:    cgc.invoke @partition2
