// The spec's isolated Partition IR listing ("DX Compute Graph Compiler >
// Partition IR"): what the driver receives for the driver partition. As
// printed, with types filled in. docs/spec-listings.md lists every change.

cgc.module
{
    cgc.subgraph @convReluAdd attributes {origin = "ihv.driver"}
    {
        cgc.functional_definition private @convReluAddFunctional(
            %in: !cgc.tensor<1x1x4x4x!cgc.float32>,
            %w:  !cgc.tensor<constant 1x1x3x3x!cgc.float32>,
            %b:  !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
        {
            %0 = cgc_op.convolution (%in, %w, %b) { start_padding=[1,1], end_padding=[1,1], strides=[1,1], dilations=[1,1], groups=1 }
                : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
            %1 = cgc_op.relu (%0) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
            %2 = cgc_op.add (%1, %in) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
            cgc.return %2 : !cgc.tensor<1x1x4x4x!cgc.float32>
        }
    }

    cgc.partition @driverPartition(
        %in:      !cgc.memref<1x1x4x4x!cgc.float32>,
        %w1:      !cgc.memref<constant 1x1x3x3x!cgc.float32>,
        %b1:      !cgc.memref<constant 1x!cgc.float32>,
        %w2:      !cgc.memref<constant 1x1x3x3x!cgc.float32>,
        %b2:      !cgc.memref<constant 1x!cgc.float32>,
        %output:  !cgc.memref<1x1x4x4x!cgc.float32>,
        %scratch: !cgc.memref<1x1x4x4x!cgc.float32>)
    {
        cgc.invoke @convReluAdd(%in, %w1, %b1, %scratch)
            : !cgc.memref<1x1x4x4x!cgc.float32>, !cgc.memref<constant 1x1x3x3x!cgc.float32>, !cgc.memref<constant 1x!cgc.float32>, !cgc.memref<1x1x4x4x!cgc.float32>
        cgc.invoke @convReluAdd(%scratch, %w2, %b2, %output)
            : !cgc.memref<1x1x4x4x!cgc.float32>, !cgc.memref<constant 1x1x3x3x!cgc.float32>, !cgc.memref<constant 1x!cgc.float32>, !cgc.memref<1x1x4x4x!cgc.float32>
        cgc.return
    }
}
