// The cpu target's specialization verdicts: the kernel library decides,
// the reason names the op, and a rejected match falls to the fallback target.
//
// RUN: env -u CGC_CPU_PATTERNS cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu" --cgc-specialize-subgraphs="targets=cpu" 2>/dev/null | FileCheck %s
// RUN: env -u CGC_CPU_PATTERNS cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu" --cgc-specialize-subgraphs="targets=cpu" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: env -u CGC_CPU_PATTERNS cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu" -o %t.matched.mlir
// RUN: env -u CGC_CPU_PATTERNS cgc-cpu-exchange specialize %t.matched.mlir | FileCheck %s --check-prefix=ANSWER

// A product with a 1-D operand matches (the pattern cannot see operand ranks)
// but does not fuse: rejected, the layers go to the fallback target. The
// convolution's epilogue fuses: accepted.
// The reason lists every product kernel the library has and why each
// passed it over.
// REMARK: remark: target 'cpu' rejected subgraph 'matmulRelu' (pattern 'anchorEpilogue'): kernel 0 (cgc_op.matmul) does not fuse with cgc_op.relu after it: cgc_op.matmul: no kernel takes it (row products (one row: dots of B's rows, or B's rows combined): not a product of one row {{.*}}; packed GEMM with a B per batch: {{.*}}; oneDNN (the packed GEMM where it runs the product): cgc_op.matmul: products with a 1-D operand do not fuse; generic: takes no chain)
// REMARK-NOT: remark:
// CHECK-LABEL: cgc.subgraph @convolutionRelu attributes {origin = "cpu", pattern = "anchorEpilogue"}
// CHECK-LABEL: cgc.entry_point @verdicts
// CHECK:         cgc.call @convolutionRelu(
// CHECK:         %[[M:.*]] = cgc.call @matmul(
// CHECK-NEXT:    cgc.call @relu(%[[M]])

// The verdicts as the target writes them.
// ANSWER:      cgc_pattern.accept @convolutionRelu
// ANSWER-NEXT: cgc_pattern.reject @matmulRelu "kernel 0 (cgc_op.matmul) does not fuse with cgc_op.relu after it: cgc_op.matmul: no kernel takes it ({{.*}}cgc_op.matmul: products with a 1-D operand do not fuse; generic: takes no chain)"
cgc.module {
  cgc.entry_point @verdicts(%x: !cgc.tensor<1x8x6x6x!cgc.float32>, %v: !cgc.tensor<16x!cgc.float32>) -> (!cgc.tensor<1x8x6x6x!cgc.float32>, !cgc.tensor<4x!cgc.float32>) {
    %w = cgc.constant("w") : !cgc.tensor<constant 8x8x3x3x!cgc.float32>
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x8x6x6x!cgc.float32>, !cgc.tensor<constant 8x8x3x3x!cgc.float32>) -> !cgc.tensor<1x8x6x6x!cgc.float32>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x8x6x6x!cgc.float32>) -> !cgc.tensor<1x8x6x6x!cgc.float32>
    %m = cgc.constant("m") : !cgc.tensor<constant 4x16x!cgc.float32>
    %p = cgc_op.matmul(%m, %v) : (!cgc.tensor<constant 4x16x!cgc.float32>, !cgc.tensor<16x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    %q = cgc_op.relu(%p) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %r, %q : !cgc.tensor<1x8x6x6x!cgc.float32>, !cgc.tensor<4x!cgc.float32>
  }
}
