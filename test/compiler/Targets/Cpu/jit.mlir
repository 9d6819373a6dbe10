// The CPU driver's JIT (compilePartition, through the JIT table as the
// driver calls it): Partition IR bytecode in, the kernel program the driver
// runs out, with the rewrites that let its kernels fuse.
//
// RUN: cgc-cpu-exchange jit %s | FileCheck %s
// RUN: env -u CGC_CPU_PATTERNS cgc-opt %cgc_src_root/examples/spec/input-ir.mlir --cgc-lower-to-output-ir="targets=cpu" --cgc-isolate-partition=partition=partition0 | cgc-cpu-exchange jit - | FileCheck %s --check-prefix=SPEC
// RUN: cgc-opt %s -emit-bytecode -o %t.bc
// RUN: head -c 200 %t.bc > %t.cut.bc
// RUN: not cgc-cpu-exchange jit-bytes %t.cut.bc | FileCheck %s --check-prefix=CUT
// RUN: not cgc-cpu-exchange jit-bytes %s | FileCheck %s --check-prefix=TEXT

// Bind points in order, with their names and byte sizes.
// CHECK:      binding 0 'x' 200 bytes
// CHECK-NEXT: binding 1 'w' 144 bytes
// CHECK-NEXT: binding 2 'b' 8 bytes
// CHECK-NEXT: binding 3 'q' 512 bytes
// CHECK-NEXT: binding 4 'k' 512 bytes
// CHECK-NEXT: binding 5 'scale' 4 bytes
// CHECK-NEXT: binding 6 'y' 200 bytes
// CHECK-NEXT: binding 7 'probs' 512 bytes
// CHECK-NEXT: binding 8 'scratch' 1024 bytes
// The residual add had the residual first: swapped so it fuses.
// CHECK:      kernel 0 cgc_op.convolution (b0 1x2x5x5, b1 2x2x3x3, b2 2) -> (t[[C:[0-9]+]] 1x2x5x5)
// CHECK-NEXT: kernel 1 cgc_op.relu (t[[C]] 1x2x5x5) -> (t[[R:[0-9]+]] 1x2x5x5)
// CHECK-NEXT: kernel 2 cgc_op.add (t[[R]] 1x2x5x5, b0 1x2x5x5) -> (b6 1x2x5x5)
// The transpose of K is gone: the product reads K through permuted strides;
// the scores land in scratch at the view's offset, where softmax reads them.
// CHECK-NEXT: kernel 3 cgc_op.matmul (b3 1x2x8x8, b4 1x2x8x8 strides 128x64x1x8) -> (t[[M:[0-9]+]] 1x2x8x8)
// CHECK-NEXT: kernel 4 cgc_op.div (t[[M]] 1x2x8x8, b5 1) -> (b8+256 1x2x8x8)
// CHECK-NEXT: kernel 5 cgc_op.softmax (b8+256 1x2x8x8) -> (b7 1x2x8x8)
// CHECK-NEXT: fusion candidate: kernel 0 + 1 2
// CHECK-NEXT: fusion candidate: kernel 3 + 4
// CHECK-NEXT: kernels: ok, 3 fused

// The spec's example compiled for the CPU driver: its first partition
// is the spec's driver partition, two fused convolution + relu + add. The
// intermediate between them (bind point 6, internal: only this partition
// uses it) is a temporary: the driver keeps it in its own memory.
// SPEC:      binding 0 'input0' 64 bytes
// SPEC:      binding 1 'w1' 36 bytes constant
// SPEC:      binding 5 '{{.*}}' 64 bytes{{$}}
// SPEC:      binding 6 '{{.*}}' 64 bytes internal
// SPEC-NOT:  binding 7
// SPEC:      kernel 0 cgc_op.convolution (b0 1x1x4x4, b1 1x1x3x3, b2 1)
// SPEC:      kernel 2 cgc_op.add ({{.*}}, b0 1x1x4x4) -> (t[[T:[0-9]+]] 1x1x4x4)
// SPEC:      kernel 3 cgc_op.convolution (t[[T]] 1x1x4x4, b3 1x1x3x3, b4 1)
// SPEC:      kernel 5 cgc_op.add ({{.*}}, t[[T]] 1x1x4x4) -> (b5 1x1x4x4)
// SPEC-NOT:  b6
// SPEC:      kernels: ok, 4 fused

// CUT: error: cannot read the Partition IR bytecode: malformed MLIR bytecode at byte {{[0-9]+}}:
// TEXT: error: the Partition IR is not MLIR bytecode
cgc.module {
  cgc.subgraph @convolutionReluAdd attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @convolutionReluAddFunctional(%x: !cgc.tensor<1x2x5x5x!cgc.float32>, %w: !cgc.tensor<constant 2x2x3x3x!cgc.float32>, %b: !cgc.tensor<constant 2x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x5x5x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>, !cgc.tensor<constant 2x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x2x5x5x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      %2 = cgc_op.add(%x, %1) : (!cgc.tensor<1x2x5x5x!cgc.float32>, !cgc.tensor<1x2x5x5x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      cgc.return %2 : !cgc.tensor<1x2x5x5x!cgc.float32>
    }
  }
  cgc.subgraph @transposeMatmulDiv attributes {origin = "cpu", pattern = "transposedMatMulB"} {
    cgc.functional_definition private @transposeMatmulDivFunctional(%q: !cgc.tensor<1x2x8x8x!cgc.float32>, %k: !cgc.tensor<1x2x8x8x!cgc.float32>, %s: !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32> {
      %t = cgc_op.transpose(%k) {perm = [0, 1, 3, 2]} : (!cgc.tensor<1x2x8x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
      %m = cgc_op.matmul(%q, %t) : (!cgc.tensor<1x2x8x8x!cgc.float32>, !cgc.tensor<1x2x8x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
      %d = cgc_op.div(%m, %s) : (!cgc.tensor<1x2x8x8x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
      cgc.return %d : !cgc.tensor<1x2x8x8x!cgc.float32>
    }
  }
  cgc.subgraph @softmax attributes {origin = "fallback", pattern = "layer"} {
    cgc.functional_definition private @softmaxFunctional(%in: !cgc.tensor<1x2x8x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32> {
      %0 = cgc_op.softmax(%in) {axis = 3 : i64} : (!cgc.tensor<1x2x8x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
      cgc.return %0 : !cgc.tensor<1x2x8x8x!cgc.float32>
    }
  }
  cgc.partition @partition0(%x: !cgc.memref<1x2x5x5x!cgc.float32> {cgc.name = "x"},
                            %w: !cgc.memref<constant 2x2x3x3x!cgc.float32> {cgc.name = "w"},
                            %b: !cgc.memref<constant 2x!cgc.float32> {cgc.name = "b"},
                            %q: !cgc.memref<1x2x8x8x!cgc.float32> {cgc.name = "q"},
                            %k: !cgc.memref<1x2x8x8x!cgc.float32> {cgc.name = "k"},
                            %s: !cgc.memref<constant 1x!cgc.float32> {cgc.name = "scale"},
                            %y: !cgc.memref<1x2x5x5x!cgc.float32> {cgc.name = "y"},
                            %p: !cgc.memref<1x2x8x8x!cgc.float32> {cgc.name = "probs"},
                            %scratch: !cgc.memref<1024x!cgc.int8> {cgc.name = "scratch"}) {
    %scores = cgc.view_memref %scratch[256] : !cgc.memref<1024x!cgc.int8> to !cgc.memref<1x2x8x8x!cgc.float32>
    cgc.invoke @convolutionReluAdd(%x, %w, %b, %y) : !cgc.memref<1x2x5x5x!cgc.float32>, !cgc.memref<constant 2x2x3x3x!cgc.float32>, !cgc.memref<constant 2x!cgc.float32>, !cgc.memref<1x2x5x5x!cgc.float32>
    cgc.invoke @transposeMatmulDiv(%q, %k, %s, %scores) : !cgc.memref<1x2x8x8x!cgc.float32>, !cgc.memref<1x2x8x8x!cgc.float32>, !cgc.memref<constant 1x!cgc.float32>, !cgc.memref<1x2x8x8x!cgc.float32>
    cgc.invoke @softmax(%scores, %p) : !cgc.memref<1x2x8x8x!cgc.float32>, !cgc.memref<1x2x8x8x!cgc.float32>
    cgc.return
  }
}
