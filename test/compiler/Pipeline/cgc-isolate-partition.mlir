// cgc-isolate-partition: the Partition IR of one partition, as the spec's
// "isolated snippet" (examples/spec/partition-ir.mlir): the partition and
// the subgraphs it invokes, nothing else.
//
// RUN: cgc-opt %cgc_src_root/examples/spec/output-ir.mlir --cgc-isolate-partition="partition=driverPartition" | FileCheck %s
// RUN: cgc-opt %cgc_src_root/examples/spec/output-ir.mlir --cgc-isolate-partition="partition=1" | FileCheck %s --check-prefix=INDEX
// RUN: not cgc-opt %cgc_src_root/examples/spec/output-ir.mlir --cgc-isolate-partition="partition=nowhere" 2>&1 | FileCheck %s --check-prefix=MISSING
// The isolated module is valid IR on its own (it round-trips).
// RUN: cgc-opt %cgc_src_root/examples/spec/output-ir.mlir --cgc-isolate-partition="partition=0" -emit-bytecode | cgc-opt | FileCheck %s

// CHECK:       cgc.module {
// CHECK-NEXT:    cgc.subgraph @convReluAdd attributes {origin = "driverTarget"}
// CHECK-NOT:     cgc.subgraph
// CHECK:         cgc.partition @driverPartition(
// CHECK-NOT:     cgc.partition
// CHECK-NOT:     cgc.program
// CHECK-NOT:     @upsample

// INDEX:       cgc.subgraph @upsample
// INDEX:       cgc.partition @fallbackPartition
// INDEX-NOT:   @convReluAdd
// MISSING: error: no partition 'nowhere' (give a partition's name or its index; the module has 2 partition(s))
