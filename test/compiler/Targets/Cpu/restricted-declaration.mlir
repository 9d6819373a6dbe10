// A CPU driver that declares only the spec's conv -> relu -> add
// (examples/patterns/conv-relu-add.mlir, through CGC_CPU_PATTERNS or
// the target's argument): float32 matches are accepted; the pattern does not
// constrain the element type, so a float16 match is offered and the kernel
// library rejects it (its fused kernels are float32/bfloat16), and the
// layers go to the fallback target.
//
// RUN: env CGC_CPU_PATTERNS=%cgc_src_root/examples/patterns/conv-relu-add.mlir cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu" --cgc-specialize-subgraphs="targets=cpu" 2>/dev/null | FileCheck %s
// RUN: env CGC_CPU_PATTERNS=%cgc_src_root/examples/patterns/conv-relu-add.mlir cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu" --cgc-specialize-subgraphs="targets=cpu" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: env -u CGC_CPU_PATTERNS cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu:%cgc_src_root/examples/patterns/conv-relu-add.mlir" --cgc-specialize-subgraphs="targets=cpu:%cgc_src_root/examples/patterns/conv-relu-add.mlir" 2>/dev/null | FileCheck %s

// The second add has the residual on the left: a subgraph of its own.
// CHECK-LABEL: cgc.subgraph @convReluAdd attributes {origin = "cpu", pattern = "convReluAdd"}
// CHECK-LABEL: cgc.subgraph @convReluAdd_1 attributes {origin = "cpu", pattern = "convReluAdd"}
// CHECK:         cgc_op.add(%arg0,
// CHECK-LABEL: cgc.subgraph @upsample attributes {origin = "fallback", pattern = "layer"}
// CHECK-LABEL: cgc.entry_point @spec
// CHECK:         %[[A:.*]] = cgc.call @convReluAdd(%arg0, %w1, %b1)
// CHECK-NEXT:    %[[B:.*]] = cgc.call @convReluAdd_1(%[[A]], %w2, %b2)
// CHECK-NEXT:    cgc.call @upsample(%[[B]])
cgc.module {
  cgc.entry_point @spec(%in: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32> {
    %w1 = cgc.constant("w1") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %b2 = cgc.constant("b2") : !cgc.tensor<constant 1x!cgc.float32>
    %w2 = cgc.constant("w2") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %b1 = cgc.constant("b1") : !cgc.tensor<constant 1x!cgc.float32>
    %conv1 = cgc_op.convolution(%in, %w1, %b1) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %relu1 = cgc_op.relu(%conv1) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %add1 = cgc_op.add(%relu1, %in) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %conv2 = cgc_op.convolution(%add1, %w2, %b2) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %relu2 = cgc_op.relu(%conv2) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %add2 = cgc_op.add(%add1, %relu2) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %up = cgc_op.upsample(%add2) {scale_size = [2, 2]} : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32>
    cgc.return %up : !cgc.tensor<1x1x8x8x!cgc.float32>
  }
}

// -----

// REMARK: remark: target 'cpu' rejected subgraph 'convReluAdd' (pattern 'convReluAdd'): kernel 0 (cgc_op.convolution) does not fuse with cgc_op.relu after it: cgc_op.convolution: only float32/bfloat16 convolutions fuse, got float16
// REMARK-NOT: remark:
// CHECK-LABEL: cgc.entry_point @half
// CHECK:         %[[C:.*]] = cgc.call @convolution(%arg0, %w)
// CHECK-NEXT:    %[[R:.*]] = cgc.call @relu(%[[C]])
// CHECK-NEXT:    cgc.call @add(%[[R]], %arg0)
// CHECK-NOT:   origin = "cpu"
cgc.module {
  cgc.entry_point @half(%x: !cgc.tensor<1x4x6x6x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16> {
    %w = cgc.constant("w") : !cgc.tensor<constant 4x4x3x3x!cgc.float16>
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x4x6x6x!cgc.float16>, !cgc.tensor<constant 4x4x3x3x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x4x6x6x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16>
    %s = cgc_op.add(%r, %x) : (!cgc.tensor<1x4x6x6x!cgc.float16>, !cgc.tensor<1x4x6x6x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16>
    cgc.return %s : !cgc.tensor<1x4x6x6x!cgc.float16>
  }
}
