
cgc.module {
  cgc.subgraph @convReluAdd attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @convReluAddFunctional(%x: !cgc.tensor<1x2x5x5x!cgc.float32>, %w: !cgc.tensor<constant 2x2x3x3x!cgc.float32>, %b: !cgc.tensor<constant 2x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x5x5x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>, !cgc.tensor<constant 2x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x2x5x5x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      %2 = cgc_op.add(%x, %1) : (!cgc.tensor<1x2x5x5x!cgc.float32>, !cgc.tensor<1x2x5x5x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      cgc.return %2 : !cgc.tensor<1x2x5x5x!cgc.float32>
    }
  }
  cgc.subgraph @transposeMatmulAddGelu attributes {origin = "cpu", pattern = "transposedMatMulB"} {
    cgc.functional_definition private @transposeMatmulAddGeluFunctional(%a: !cgc.tensor<2x3x4x!cgc.float32>, %k: !cgc.tensor<2x5x4x!cgc.float32>, %bias: !cgc.tensor<constant 5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32> {
      %t = cgc_op.transpose(%k) {perm = [0, 2, 1]} : (!cgc.tensor<2x5x4x!cgc.float32>) -> !cgc.tensor<2x4x5x!cgc.float32>
      %m = cgc_op.matmul(%a, %t) : (!cgc.tensor<2x3x4x!cgc.float32>, !cgc.tensor<2x4x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      %s = cgc_op.add(%m, %bias) : (!cgc.tensor<2x3x5x!cgc.float32>, !cgc.tensor<constant 5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      %g = cgc_op.gelu(%s) : (!cgc.tensor<2x3x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      cgc.return %g : !cgc.tensor<2x3x5x!cgc.float32>
    }
  }
  cgc.subgraph @softmax attributes {origin = "fallback", pattern = "layer"} {
    cgc.functional_definition private @softmaxFunctional(%y: !cgc.tensor<2x3x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32> {
      %0 = cgc_op.softmax(%y) {axis = 2 : i64} : (!cgc.tensor<2x3x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      cgc.return %0 : !cgc.tensor<2x3x5x!cgc.float32>
    }
  }
  cgc.partition @p(%x: !cgc.memref<1x2x5x5x!cgc.float32>,
                   %w: !cgc.memref<constant 2x2x3x3x!cgc.float32>,
                   %b: !cgc.memref<constant 2x!cgc.float32>,
                   %a: !cgc.memref<2x3x4x!cgc.float32>,
                   %k: !cgc.memref<2x5x4x!cgc.float32>,
                   %bias: !cgc.memref<constant 5x!cgc.float32>,
                   %out1: !cgc.memref<1x2x5x5x!cgc.float32>,
                   %out2: !cgc.memref<2x3x5x!cgc.float32>,
                   %scratch: !cgc.memref<256x!cgc.int8>) {
    %v = cgc.view_memref %scratch[64] : !cgc.memref<256x!cgc.int8> to !cgc.memref<2x3x5x!cgc.float32>
    cgc.invoke @convReluAdd(%x, %w, %b, %out1) : !cgc.memref<1x2x5x5x!cgc.float32>, !cgc.memref<constant 2x2x3x3x!cgc.float32>, !cgc.memref<constant 2x!cgc.float32>, !cgc.memref<1x2x5x5x!cgc.float32>
    cgc.invoke @transposeMatmulAddGelu(%a, %k, %bias, %v) : !cgc.memref<2x3x4x!cgc.float32>, !cgc.memref<2x5x4x!cgc.float32>, !cgc.memref<constant 5x!cgc.float32>, !cgc.memref<2x3x5x!cgc.float32>
    cgc.invoke @softmax(%v, %out2) : !cgc.memref<2x3x5x!cgc.float32>, !cgc.memref<2x3x5x!cgc.float32>
    cgc.return
  }
}
