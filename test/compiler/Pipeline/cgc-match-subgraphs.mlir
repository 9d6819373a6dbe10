// cgc-match-subgraphs: targets' patterns outline subgraphs; the fallback
// target claims the rest.
//
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/driver-conv-relu-add.mlir" | FileCheck %s --check-prefix=SPEC
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/epilogue.mlir" | FileCheck %s --check-prefix=EPI
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/constraints.mlir" | FileCheck %s --check-prefix=CONS
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/sizes.mlir" | FileCheck %s --check-prefix=SIZE
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/priorities.mlir" | FileCheck %s --check-prefix=PRIO
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs="targets=patterns:%S/Inputs/conv-add-escaping.mlir" | FileCheck %s --check-prefix=ESC
// RUN: cgc-opt %s -split-input-file --cgc-match-subgraphs | FileCheck %s --check-prefix=FALL

// The spec's network: conv -> relu -> add twice, then upsample. Both
// conv+relu+add matches share one subgraph (same layers, shapes and
// attributes); the add's residual is the convolution's own input. Upsample
// goes to the fallback target, named after its layer.
// SPEC-LABEL: cgc.subgraph @convReluAdd attributes {{{.*}}origin = "driverTarget", pattern = "convReluAdd"}
// SPEC:         cgc.functional_definition private @convReluAddFunctional(%[[IN:.*]]: !cgc.tensor<1x1x4x4x!cgc.float32>, %{{.*}}: !cgc.tensor<constant 1x1x3x3x!cgc.float32>, %{{.*}}: !cgc.tensor<constant 1x!cgc.float32>)
// SPEC:           cgc_op.convolution(%[[IN]]
// SPEC-NEXT:      %[[R:.*]] = cgc_op.relu
// SPEC-NEXT:      cgc_op.add(%[[R]], %[[IN]])
// SPEC-LABEL: cgc.subgraph @upsample attributes {{{.*}}origin = "fallback", pattern = "layer"}
// SPEC-LABEL: cgc.entry_point @main
// SPEC:         %[[A:.*]] = cgc.call @convReluAdd(%arg0, %w1, %b1)
// SPEC-NEXT:    %[[B:.*]] = cgc.call @convReluAdd(%[[A]], %w2, %b2)
// SPEC-NEXT:    %[[U:.*]] = cgc.call @upsample(%[[B]])
// SPEC-NEXT:    cgc.return %[[U]]
// SPEC-NOT:   cgc_op.
cgc.module {
  cgc.entry_point @main(%in: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32> {
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

// The residual on the left: the pattern's add is commutative.
// SPEC-LABEL: cgc.subgraph @convReluAdd attributes
// SPEC:           %[[R:.*]] = cgc_op.relu
// SPEC-NEXT:      cgc_op.add(%{{.*}}, %[[R]])
// SPEC-LABEL: cgc.entry_point @swapped
// SPEC-NEXT:    %[[W:.*]] = cgc.constant("w1")
// SPEC-NEXT:    %[[C:.*]] = cgc.call @convReluAdd(%arg1, %[[W]], %arg0)
// SPEC-NEXT:    cgc.return %[[C]]
cgc.module {
  cgc.entry_point @swapped(%residual: !cgc.tensor<1x1x4x4x!cgc.float32>, %in: !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32> {
    %w1 = cgc.constant("w1") : !cgc.tensor<constant 1x1x3x3x!cgc.float32>
    %conv1 = cgc_op.convolution(%in, %w1) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %relu1 = cgc_op.relu(%conv1) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    %add1 = cgc_op.add(%residual, %relu1) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    cgc.return %add1 : !cgc.tensor<1x1x4x4x!cgc.float32>
  }
}

// -----

// Epilogue fusion: the chain after the convolution takes the relu and the
// residual add (its other operand is an input of the graph), and stops at
// the add because its result has two users. Without a bias the convolution
// still matches (the pattern's operands are open). A matmul followed by gelu
// is another anchor + chain. Layers after the chain go to the fallback.
// EPI-LABEL: cgc.subgraph @convolutionReluAdd attributes {{{.*}}origin = "epilogueTarget", pattern = "anchorEpilogue"}
// EPI:         cgc_op.convolution
// EPI-NEXT:    cgc_op.relu
// EPI-NEXT:    cgc_op.add
// EPI-NEXT:    cgc.return
// EPI-LABEL: cgc.subgraph @sigmoid attributes {{{.*}}origin = "fallback"
// EPI-LABEL: cgc.subgraph @mul attributes {{{.*}}origin = "fallback"
// EPI-LABEL: cgc.subgraph @matmulGelu attributes {{{.*}}origin = "epilogueTarget"
// EPI-LABEL: cgc.entry_point @epilogue
// EPI:         %[[A:.*]] = cgc.call @convolutionReluAdd(%arg0, %w, %arg1)
// EPI:         %[[S:.*]] = cgc.call @sigmoid(%[[A]])
// EPI:         %[[M:.*]] = cgc.call @mul(%[[S]], %[[A]])
// EPI:         cgc.call @matmulGelu(%arg2)
cgc.module {
  cgc.entry_point @epilogue(%x: !cgc.tensor<1x2x4x4x!cgc.float32>, %residual: !cgc.tensor<1x2x4x4x!cgc.float32>, %q: !cgc.tensor<8x8x!cgc.float32>) -> (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<8x8x!cgc.float32>) {
    %w = cgc.constant("w") : !cgc.tensor<constant 2x2x3x3x!cgc.float32>
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %a = cgc_op.add(%r, %residual) : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %s = cgc_op.sigmoid(%a) : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %m = cgc_op.mul(%s, %a) : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %p = cgc_op.matmul(%q, %q) : (!cgc.tensor<8x8x!cgc.float32>, !cgc.tensor<8x8x!cgc.float32>) -> !cgc.tensor<8x8x!cgc.float32>
    %g = cgc_op.gelu(%p) : (!cgc.tensor<8x8x!cgc.float32>) -> !cgc.tensor<8x8x!cgc.float32>
    cgc.return %m, %g : !cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<8x8x!cgc.float32>
  }
}

// -----

// Constraints: the float32 relu is not the float16 pattern's; the grouped
// convolution and the one with strides 3 are not plain convolutions, nor is
// the one with 3 output channels; the sigmoid of 1x8 matches, that of 2x8
// does not.
// CONS-DAG: cgc.subgraph @halfRelu attributes {{{.*}}origin = "constrained"
// CONS-DAG: cgc.subgraph @relu attributes {{{.*}}origin = "fallback"
// CONS-DAG: cgc.subgraph @plainConv attributes {{{.*}}origin = "constrained"
// CONS-DAG: cgc.subgraph @smallSigmoid attributes {{{.*}}origin = "constrained"
// CONS-DAG: cgc.subgraph @sigmoid attributes {{{.*}}origin = "fallback"
// CONS-LABEL: cgc.entry_point @constraints
// CONS:         cgc.call @halfRelu(%arg1)
// CONS-NEXT:    cgc.call @relu(%arg0)
// CONS-NEXT:    cgc.call @plainConv(%arg2, %w)
// CONS-NEXT:    cgc.call @convolution(%arg2, %wg)
// CONS-NEXT:    cgc.call @convolution_1(%arg2, %w)
// CONS-NEXT:    cgc.call @convolution_2(%arg2, %w3)
// CONS-NEXT:    cgc.call @smallSigmoid(%arg3)
// CONS-NEXT:    cgc.call @sigmoid(%arg4)
cgc.module {
  cgc.entry_point @constraints(%f32: !cgc.tensor<4x!cgc.float32>, %f16: !cgc.tensor<4x!cgc.float16>, %x: !cgc.tensor<1x2x6x6x!cgc.float32>, %s1: !cgc.tensor<1x8x!cgc.float32>, %s2: !cgc.tensor<2x8x!cgc.float32>)
      -> (!cgc.tensor<4x!cgc.float16>, !cgc.tensor<4x!cgc.float32>, !cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<1x2x2x2x!cgc.float32>, !cgc.tensor<1x3x6x6x!cgc.float32>, !cgc.tensor<1x8x!cgc.float32>, !cgc.tensor<2x8x!cgc.float32>) {
    %w = cgc.constant("w") : !cgc.tensor<constant 2x2x3x3x!cgc.float32>
    %wg = cgc.constant("wg") : !cgc.tensor<constant 2x1x3x3x!cgc.float32>
    %w3 = cgc.constant("w3") : !cgc.tensor<constant 3x2x3x3x!cgc.float32>
    %h = cgc_op.relu(%f16) : (!cgc.tensor<4x!cgc.float16>) -> !cgc.tensor<4x!cgc.float16>
    %r = cgc_op.relu(%f32) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    %c1 = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x6x6x!cgc.float32>
    %c2 = cgc_op.convolution(%x, %wg) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1], groups = 2} : (!cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<constant 2x1x3x3x!cgc.float32>) -> !cgc.tensor<1x2x6x6x!cgc.float32>
    %c3 = cgc_op.convolution(%x, %w) {start_padding = [0, 0], end_padding = [0, 0], strides = [3, 3], dilations = [1, 1]} : (!cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x2x2x!cgc.float32>
    %c4 = cgc_op.convolution(%x, %w3) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<constant 3x2x3x3x!cgc.float32>) -> !cgc.tensor<1x3x6x6x!cgc.float32>
    %g1 = cgc_op.sigmoid(%s1) : (!cgc.tensor<1x8x!cgc.float32>) -> !cgc.tensor<1x8x!cgc.float32>
    %g2 = cgc_op.sigmoid(%s2) : (!cgc.tensor<2x8x!cgc.float32>) -> !cgc.tensor<2x8x!cgc.float32>
    cgc.return %h, %r, %c1, %c2, %c3, %c4, %g1, %g2 : !cgc.tensor<4x!cgc.float16>, !cgc.tensor<4x!cgc.float32>, !cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<1x2x6x6x!cgc.float32>, !cgc.tensor<1x2x2x2x!cgc.float32>, !cgc.tensor<1x3x6x6x!cgc.float32>, !cgc.tensor<1x8x!cgc.float32>, !cgc.tensor<2x8x!cgc.float32>
  }
}

// -----

// Overlapping candidates: with equal priority conv+relu (2 layers) beats the
// relu alone; with the relu pattern at a higher priority it wins and the
// convolution goes to the fallback target.
// SIZE-LABEL: cgc.entry_point @overlap
// SIZE:         %[[R:.*]] = cgc.call @convRelu(
// SIZE-NEXT:    cgc.return %[[R]]
// PRIO-LABEL: cgc.entry_point @overlap
// PRIO:         %[[C:.*]] = cgc.call @convolution(
// PRIO-NEXT:    cgc.call @reluOnly(%[[C]])
cgc.module {
  cgc.entry_point @overlap(%x: !cgc.tensor<1x2x4x4x!cgc.float32>, %w: !cgc.tensor<2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32> {
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %r = cgc_op.relu(%c) : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    cgc.return %r : !cgc.tensor<1x2x4x4x!cgc.float32>
  }
}

// -----

// Convexity: conv -> add where the add's other operand is computed from the
// convolution (through a sigmoid outside the match) would make the outlined
// subgraph both feed and consume the sigmoid, a cycle; it is not matched.
// The second conv -> add has its residual from outside and is matched, with
// the convolution's result escaping (the pattern yields it).
// ESC-LABEL: cgc.entry_point @convex
// ESC:         %[[C:.*]] = cgc.call @convolution(%arg0, %arg1)
// ESC-NEXT:    %[[S:.*]] = cgc.call @sigmoid(%[[C]])
// ESC-NEXT:    %[[A:.*]] = cgc.call @add(%[[C]], %[[S]])
// ESC-NEXT:    %[[M:.*]]:2 = cgc.call @convAdd(%arg0, %arg1, %arg2)
// ESC-NEXT:    cgc.return %[[A]], %[[M]]#1, %[[M]]#0
cgc.module {
  cgc.entry_point @convex(%x: !cgc.tensor<1x2x4x4x!cgc.float32>, %w: !cgc.tensor<2x2x3x3x!cgc.float32>, %y: !cgc.tensor<1x2x4x4x!cgc.float32>) -> (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>) {
    %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %s = cgc_op.sigmoid(%c) : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %a = cgc_op.add(%c, %s) : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %c2 = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    %a2 = cgc_op.add(%c2, %y) : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    cgc.return %a, %a2, %c2 : !cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<1x2x4x4x!cgc.float32>
  }
}

// -----

// With no target but the fallback: one subgraph per layer; unused layers
// (and constants) are removed first; a returned input and a value returned
// twice each get an identity layer, so every output is written by a
// dispatch. Identical layers share a subgraph.
// FALL-LABEL: cgc.entry_point @returns
// FALL-NOT:     cgc_op.
// FALL-NOT:     cgc.constant
// FALL:         %[[N:.*]] = cgc.call @neg(%arg0)
// FALL-NEXT:    %[[I0:.*]] = cgc.call @identity(%arg0)
// FALL-NEXT:    %[[I1:.*]] = cgc.call @identity(%[[N]])
// FALL-NEXT:    cgc.return %[[N]], %[[I0]], %[[I1]]
cgc.module {
  cgc.entry_point @returns(%x: !cgc.tensor<4x!cgc.float32>) -> (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>) {
    %k = cgc.constant("k") : !cgc.tensor<constant 4x!cgc.float32>
    %unused = cgc_op.add(%x, %k) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    %n = cgc_op.neg(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %n, %x, %n : !cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>
  }
}
