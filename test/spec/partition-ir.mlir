// Checks the spec's listing in examples/spec/partition-ir.mlir: it parses and
// verifies, prints as expected, and round-trips through text and bytecode.
//
// RUN: cgc-opt %cgc_src_root/examples/spec/partition-ir.mlir | FileCheck %s
// RUN: cgc-opt %cgc_src_root/examples/spec/partition-ir.mlir -o %t.txt
// RUN: cgc-opt %t.txt | diff %t.txt -
// RUN: cgc-opt %cgc_src_root/examples/spec/partition-ir.mlir -emit-bytecode -o %t.mlirbc
// RUN: cgc-opt %t.mlirbc | diff %t.txt -

// CHECK-LABEL: cgc.subgraph @convReluAdd attributes {origin = "ihv.driver"}
// CHECK-LABEL: cgc.partition @driverPartition
// CHECK-COUNT-2: cgc.invoke @convReluAdd
// CHECK-NOT:   cgc.program
