// The cpu target's built-in patterns (compiler/Targets/Cpu/
// patterns.mlir) as the compiler sees them: declared through the exchange,
// matched by cgc-match-subgraphs. The fallback target claims the rest.
//
// RUN: env -u CGC_CPU_PATTERNS cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=cpu" | FileCheck %s

// The spec's network: conv -> relu -> add twice (the add's result has two
// users, so each chain ends there), then upsample for the fallback.
// CHECK-LABEL: cgc.subgraph @convolutionReluAdd attributes {{{.*}}origin = "cpu", pattern = "anchorEpilogue"}
// CHECK:         cgc_op.convolution
// CHECK-NEXT:    cgc_op.relu
// CHECK-NEXT:    cgc_op.add
// CHECK-NEXT:    cgc.return
// CHECK-LABEL: cgc.subgraph @upsample attributes {{{.*}}origin = "fallback"
// CHECK-LABEL: cgc.entry_point @spec
// CHECK:         %[[A:.*]] = cgc.call @convolutionReluAdd(%arg0, %w1, %b1)
// CHECK-NEXT:    %[[B:.*]] = cgc.call @convolutionReluAdd(%[[A]], %w2, %b2)
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
    %add2 = cgc_op.add(%relu2, %add1) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %up = cgc_op.upsample(%add2) {scale_size = [2, 2]} : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32>
    cgc.return %up : !cgc.tensor<1x1x8x8x!cgc.float32>
  }
}

// -----

// A ResNet bottleneck's end: 1x1 convolution, residual add (residual on
// either side), relu; the max pool after it is no epilogue: a subgraph of
// its own, still the driver's (pooling between convolutions stays inside its
// partitions).
// CHECK-LABEL: cgc.subgraph @convolutionAddRelu attributes {{{.*}}origin = "cpu", pattern = "anchorEpilogue"}
// CHECK:         %[[C:.*]] = cgc_op.convolution
// CHECK-NEXT:    %[[S:.*]] = cgc_op.add(%arg{{[0-9]}}, %[[C]])
// CHECK-NEXT:    cgc_op.relu(%[[S]])
// CHECK-LABEL: cgc.subgraph @maxPool attributes {{{.*}}origin = "cpu", pattern = "pooling"
// CHECK-LABEL: cgc.entry_point @bottleneck
// CHECK:         %[[A:.*]] = cgc.call @convolutionAddRelu(%arg0, %w, %b, %arg1)
// CHECK-NEXT:    cgc.call @maxPool(%[[A]])
cgc.module {
  cgc.entry_point @bottleneck(%x: !cgc.tensor<1x8x4x4x!cgc.float32>, %r: !cgc.tensor<1x16x4x4x!cgc.float32>) -> !cgc.tensor<1x16x2x2x!cgc.float32> {
    %w = cgc.constant("w") : !cgc.tensor<constant 16x8x1x1x!cgc.float32>
    %b = cgc.constant("b") : !cgc.tensor<constant 16x!cgc.float32>
    %c = cgc_op.convolution(%x, %w, %b) {start_padding = [0, 0], end_padding = [0, 0], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x8x4x4x!cgc.float32>, !cgc.tensor<constant 16x8x1x1x!cgc.float32>, !cgc.tensor<constant 16x!cgc.float32>) -> !cgc.tensor<1x16x4x4x!cgc.float32>
    %s = cgc_op.add(%r, %c) : (!cgc.tensor<1x16x4x4x!cgc.float32>, !cgc.tensor<1x16x4x4x!cgc.float32>) -> !cgc.tensor<1x16x4x4x!cgc.float32>
    %a = cgc_op.relu(%s) : (!cgc.tensor<1x16x4x4x!cgc.float32>) -> !cgc.tensor<1x16x4x4x!cgc.float32>
    %p = cgc_op.max_pool(%a) {kernel_shape = [2, 2], strides = [2, 2], start_padding = [0, 0], end_padding = [0, 0], dilations = [1, 1]} : (!cgc.tensor<1x16x4x4x!cgc.float32>) -> !cgc.tensor<1x16x2x2x!cgc.float32>
    cgc.return %p : !cgc.tensor<1x16x2x2x!cgc.float32>
  }
}

// -----

// Matrix products: matmul + bias + gelu (a transformer's FFN), gemm + relu.
// CHECK-LABEL: cgc.subgraph @matmulAddGelu attributes {{{.*}}origin = "cpu", pattern = "anchorEpilogue"}
// CHECK-LABEL: cgc.subgraph @gemmRelu attributes {{{.*}}origin = "cpu", pattern = "anchorEpilogue"}
// CHECK-LABEL: cgc.entry_point @products
// CHECK:         cgc.call @matmulAddGelu(%arg0, %w, %b)
// CHECK:         cgc.call @gemmRelu(
cgc.module {
  cgc.entry_point @products(%x: !cgc.tensor<1x8x16x!cgc.float32>, %y: !cgc.tensor<4x16x!cgc.float32>) -> (!cgc.tensor<1x8x32x!cgc.float32>, !cgc.tensor<4x8x!cgc.float32>) {
    %w = cgc.constant("w") : !cgc.tensor<constant 16x32x!cgc.float32>
    %b = cgc.constant("b") : !cgc.tensor<constant 32x!cgc.float32>
    %m = cgc_op.matmul(%x, %w) : (!cgc.tensor<1x8x16x!cgc.float32>, !cgc.tensor<constant 16x32x!cgc.float32>) -> !cgc.tensor<1x8x32x!cgc.float32>
    %s = cgc_op.add(%m, %b) : (!cgc.tensor<1x8x32x!cgc.float32>, !cgc.tensor<constant 32x!cgc.float32>) -> !cgc.tensor<1x8x32x!cgc.float32>
    %g = cgc_op.gelu(%s) : (!cgc.tensor<1x8x32x!cgc.float32>) -> !cgc.tensor<1x8x32x!cgc.float32>
    %v = cgc.constant("v") : !cgc.tensor<constant 8x16x!cgc.float32>
    %p = cgc_op.gemm(%y, %v) {transpose_b = true} : (!cgc.tensor<4x16x!cgc.float32>, !cgc.tensor<constant 8x16x!cgc.float32>) -> !cgc.tensor<4x8x!cgc.float32>
    %r = cgc_op.relu(%p) : (!cgc.tensor<4x8x!cgc.float32>) -> !cgc.tensor<4x8x!cgc.float32>
    cgc.return %g, %r : !cgc.tensor<1x8x32x!cgc.float32>, !cgc.tensor<4x8x!cgc.float32>
  }
}

// -----

// Attention scores: the transpose of K folds into the product, the scaling
// and the softmax after it join the product's chain (the driver applies the
// scale in its register tiles and the softmax to each block of rows while
// in cache). The head split of V before the second product folds as well.
// CHECK-LABEL: cgc.subgraph @transposeMatmulDivSoftmax attributes {{{.*}}origin = "cpu", pattern = "transposedMatMulB"}
// CHECK:         %[[T:.*]] = cgc_op.transpose(%arg0) {perm = [0, 1, 3, 2]}
// CHECK-NEXT:    %[[M:.*]] = cgc_op.matmul(%arg1, %[[T]])
// CHECK-NEXT:    %[[D:.*]] = cgc_op.div(%[[M]], %arg2)
// CHECK-NEXT:    cgc_op.softmax(%[[D]]) {axis = 3 : i64}
// CHECK-LABEL: cgc.subgraph @transposeMatmul attributes {{{.*}}origin = "cpu", pattern = "transposedMatMulB"}
// CHECK:         %[[T:.*]] = cgc_op.transpose(%arg0) {perm = [0, 2, 1, 3]}
// CHECK-NEXT:    cgc_op.matmul(%arg1, %[[T]])
// CHECK-LABEL: cgc.entry_point @attention
// CHECK:         %[[P:.*]] = cgc.call @transposeMatmulDivSoftmax(%arg1, %arg0, %scale)
// CHECK-NEXT:    cgc.call @transposeMatmul(%arg2, %[[P]])
cgc.module {
  cgc.entry_point @attention(%q: !cgc.tensor<1x2x8x4x!cgc.float32>, %k: !cgc.tensor<1x2x8x4x!cgc.float32>, %v: !cgc.tensor<1x8x2x4x!cgc.float32>) -> !cgc.tensor<1x2x8x4x!cgc.float32> {
    %scale = cgc.constant("scale") : !cgc.tensor<constant 1x!cgc.float32>
    %kt = cgc_op.transpose(%k) {perm = [0, 1, 3, 2]} : (!cgc.tensor<1x2x8x4x!cgc.float32>) -> !cgc.tensor<1x2x4x8x!cgc.float32>
    %s = cgc_op.matmul(%q, %kt) : (!cgc.tensor<1x2x8x4x!cgc.float32>, !cgc.tensor<1x2x4x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
    %d = cgc_op.div(%s, %scale) : (!cgc.tensor<1x2x8x8x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
    %p = cgc_op.softmax(%d) {axis = 3 : i64} : (!cgc.tensor<1x2x8x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
    %vt = cgc_op.transpose(%v) {perm = [0, 2, 1, 3]} : (!cgc.tensor<1x8x2x4x!cgc.float32>) -> !cgc.tensor<1x2x8x4x!cgc.float32>
    %o = cgc_op.matmul(%p, %vt) : (!cgc.tensor<1x2x8x8x!cgc.float32>, !cgc.tensor<1x2x8x4x!cgc.float32>) -> !cgc.tensor<1x2x8x4x!cgc.float32>
    cgc.return %o : !cgc.tensor<1x2x8x4x!cgc.float32>
  }
}

// -----

// ShuffleNet's channel shuffle (4-D -> 5-D reshape, swap of the channel
// groups, reshape back) and the 4-D slices that split it are the driver's;
// a window partition's 6-D reshape and transpose (Swin) is not a channel
// shuffle and stays with the fallback.
// CHECK-LABEL: cgc.subgraph @reshapeTransposeReshape attributes {{{.*}}origin = "cpu", pattern = "channelShuffle"}
// CHECK:         cgc_op.reshape
// CHECK-NEXT:    cgc_op.transpose
// CHECK-NEXT:    cgc_op.reshape
// CHECK-LABEL: cgc.subgraph @slice attributes {{{.*}}origin = "cpu", pattern = "slice"}
// CHECK-LABEL: cgc.subgraph @slice_1 attributes {{{.*}}origin = "cpu", pattern = "slice"}
// CHECK-LABEL: cgc.subgraph @reshape attributes {{{.*}}origin = "fallback"
// CHECK-LABEL: cgc.subgraph @transpose attributes {{{.*}}origin = "fallback"
cgc.module {
  cgc.entry_point @shuffle(%x: !cgc.tensor<1x8x4x4x!cgc.float32>, %w: !cgc.tensor<1x4x4x8x!cgc.float32>) -> (!cgc.tensor<1x4x4x4x!cgc.float32>, !cgc.tensor<1x4x4x4x!cgc.float32>, !cgc.tensor<1x2x2x2x2x8x!cgc.float32>) {
    %r = cgc_op.reshape(%x) {shape = [1, 2, 4, 4, 4]} : (!cgc.tensor<1x8x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x4x!cgc.float32>
    %t = cgc_op.transpose(%r) {perm = [0, 2, 1, 3, 4]} : (!cgc.tensor<1x2x4x4x4x!cgc.float32>) -> !cgc.tensor<1x4x2x4x4x!cgc.float32>
    %s = cgc_op.reshape(%t) {shape = [1, 8, 4, 4]} : (!cgc.tensor<1x4x2x4x4x!cgc.float32>) -> !cgc.tensor<1x8x4x4x!cgc.float32>
    %a = cgc_op.slice(%s) {ends = [1, 4, 4, 4], starts = [0, 0, 0, 0], steps = [1, 1, 1, 1]} : (!cgc.tensor<1x8x4x4x!cgc.float32>) -> !cgc.tensor<1x4x4x4x!cgc.float32>
    %b = cgc_op.slice(%s) {ends = [1, 8, 4, 4], starts = [0, 4, 0, 0], steps = [1, 1, 1, 1]} : (!cgc.tensor<1x8x4x4x!cgc.float32>) -> !cgc.tensor<1x4x4x4x!cgc.float32>
    %wr = cgc_op.reshape(%w) {shape = [1, 2, 2, 2, 2, 8]} : (!cgc.tensor<1x4x4x8x!cgc.float32>) -> !cgc.tensor<1x2x2x2x2x8x!cgc.float32>
    %wt = cgc_op.transpose(%wr) {perm = [0, 1, 3, 2, 4, 5]} : (!cgc.tensor<1x2x2x2x2x8x!cgc.float32>) -> !cgc.tensor<1x2x2x2x2x8x!cgc.float32>
    cgc.return %a, %b, %wt : !cgc.tensor<1x4x4x4x!cgc.float32>, !cgc.tensor<1x4x4x4x!cgc.float32>, !cgc.tensor<1x2x2x2x2x8x!cgc.float32>
  }
}

// -----

// A CNN's flatten before its classifier (4-D -> 2-D) is the driver's, so
// the classifier shares the convolutions' partition; a reshape of 3-D
// tokens into rows is not and stays with the fallback.
// CHECK-LABEL: cgc.subgraph @reshape attributes {{{.*}}origin = "cpu", pattern = "flatten"}
// CHECK:         cgc_op.reshape
// CHECK-NEXT:    cgc.return
// CHECK-LABEL: cgc.subgraph @reshape_1 attributes {{{.*}}origin = "fallback"
// CHECK-LABEL: cgc.entry_point @flatten
// CHECK:         cgc.call @reshape(%arg0)
// CHECK:         cgc.call @reshape_1(%arg1)
cgc.module {
  cgc.entry_point @flatten(%x: !cgc.tensor<1x8x2x2x!cgc.float32>, %t: !cgc.tensor<1x4x8x!cgc.float32>) -> (!cgc.tensor<1x32x!cgc.float32>, !cgc.tensor<4x8x!cgc.float32>) {
    %f = cgc_op.reshape(%x) {shape = [1, 32]} : (!cgc.tensor<1x8x2x2x!cgc.float32>) -> !cgc.tensor<1x32x!cgc.float32>
    %r = cgc_op.reshape(%t) {shape = [4, 8]} : (!cgc.tensor<1x4x8x!cgc.float32>) -> !cgc.tensor<4x8x!cgc.float32>
    cgc.return %f, %r : !cgc.tensor<1x32x!cgc.float32>, !cgc.tensor<4x8x!cgc.float32>
  }
}

// -----

// Not declared: a lone convolution or product (nothing to fuse), float16
// layers (the fused kernels are float32/bfloat16), a transpose whose result
// is also used elsewhere (it must be written anyway).
// CHECK-LABEL: cgc.entry_point @unclaimed
// CHECK-NOT:     cgc.call @{{.*}}Relu
// CHECK-DAG:     cgc.call @convolution(
// CHECK-DAG:     cgc.call @matmul(
// CHECK-DAG:     cgc.call @relu(
// CHECK-DAG:     cgc.call @transpose(
// CHECK-NOT:   origin = "cpu"
cgc.module {
  cgc.entry_point @unclaimed(%x: !cgc.tensor<1x2x4x4x!cgc.float32>, %h: !cgc.tensor<1x2x4x4x!cgc.float16>, %a: !cgc.tensor<4x4x!cgc.float32>) -> (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float16>, !cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>) {
    %w = cgc.constant("w") : !cgc.tensor<constant 2x2x1x1x!cgc.float32>
    %c = cgc_op.convolution(%x, %w) {start_padding = [0, 0], end_padding = [0, 0], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<constant 2x2x1x1x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %wh = cgc.constant("wh") : !cgc.tensor<constant 2x2x1x1x!cgc.float16>
    %ch = cgc_op.convolution(%h, %wh) {start_padding = [0, 0], end_padding = [0, 0], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float16>, !cgc.tensor<constant 2x2x1x1x!cgc.float16>) -> !cgc.tensor<1x2x4x4x!cgc.float16>
    %rh = cgc_op.relu(%ch) : (!cgc.tensor<1x2x4x4x!cgc.float16>) -> !cgc.tensor<1x2x4x4x!cgc.float16>
    %t = cgc_op.transpose(%a) {perm = [1, 0]} : (!cgc.tensor<4x4x!cgc.float32>) -> !cgc.tensor<4x4x!cgc.float32>
    %m = cgc_op.matmul(%a, %t) : (!cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>) -> !cgc.tensor<4x4x!cgc.float32>
    cgc.return %c, %rh, %m, %t : !cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float16>, !cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>
  }
}
