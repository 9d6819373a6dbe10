// The CPU driver's built-in declaration: its answer to
// CGC_SUBGRAPH_DECLARATION_REQUEST unless CGC_CPU_PATTERNS names a
// patterns file (docs/cpu-target.md). Embedded into the library at
// build time, so this file is exactly what the driver declares.
//
// Only fusions the driver runs better as a unit than layer by layer are
// declared; everything else goes to the fallback target. The measurements
// behind each pattern are in docs/cpu-target.md.
cgc.module @cpu {
  // Epilogue fusion: a convolution (or transposed one), matrix product or
  // gemm followed by a
  // chain of the elementwise layers the kernel library applies as oneDNN
  // post-ops (activations, and add/sub/mul/div/max/min with a residual, a
  // bias or a per-channel tensor that broadcasts to the result). One pass
  // over the result instead of one per layer, and no intermediate in memory.
  // float32/bfloat16 only: other types run on the generic kernels, which do
  // not fuse. A lone anchor gains nothing here and stays with the fallback.
  cgc_pattern.pattern @anchorEpilogue attributes {priority = 10 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.conv_transpose", "cgc_op.matmul", "cgc_op.gemm"] {open, element_types = [!cgc.float32, !cgc.bfloat16]}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%m) {keep_shape, min_length = 1 : i64}
    cgc_pattern.yield %e
  }

  // SiLU after an anchor: x * sigmoid(x) with x the anchor's result (the
  // sigmoid and the product both read it, so no chain can take them), then
  // any epilogue chain. The driver's JIT folds the sigmoid and the product
  // into one swish that oneDNN applies as a post-op: one dispatch instead of
  // three, and neither the sigmoid nor the anchor's result is written.
  cgc_pattern.pattern @anchorSwish attributes {priority = 10 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open, element_types = [!cgc.float32, !cgc.bfloat16]}
    %s = cgc_pattern.op ["cgc_op.sigmoid"](%m)
    %y = cgc_pattern.op ["cgc_op.mul"](%m, %s) {commutative}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%y) {keep_shape}
    cgc_pattern.yield %e
  }

  // A convolution on its own (ResNet's downsample branch, a projection
  // without activation). Nothing to fuse, but inside the driver's partition
  // its activations can stay channels-last (the JIT plans the layout of
  // intermediates only its partition touches), where as a fallback dispatch
  // it would cut the partition and force plain NCHW on both sides. A lone
  // conv_transpose too (a detection or segmentation head's upsampling
  // followed by a BatchNormalization): as a fallback dispatch it split
  // DBNet's head into three programs, and the convolution before it wrote
  // NCHW for it.
  cgc_pattern.pattern @convolution attributes {priority = 5 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.conv_transpose"] {open, element_types = [!cgc.float32, !cgc.bfloat16]}
    cgc_pattern.yield %m
  }

  // A matrix product with constant weights on its own (a transformer's
  // attention output projection as PyTorch exports it: a lone Gemm; a
  // classifier's last Linear). Nothing to fuse, but as the driver's subgraph
  // its packed weights are prepared when the state object is created, where
  // as a fallback kernel program they are packed in its first run (ViT-B/32:
  // twelve 768x768 projections, ~2.7 ms each, in the first run only).
  cgc_pattern.pattern @weightedProduct attributes {priority = 5 : i64, naming = "ops"} {
    %a = cgc_pattern.input {constant = false}
    %w = cgc_pattern.input {constant = true}
    %m = cgc_pattern.op ["cgc_op.matmul", "cgc_op.gemm"](%a, %w) {open, element_types = [!cgc.float32, !cgc.bfloat16]}
    cgc_pattern.yield %m
  }

  // Pooling, and the scaling and gating of squeeze-excitation, on 4-D
  // activations, each on its own: nothing to fuse, but inside the driver's
  // partitions the convolutions around them keep their activations
  // channels-last, where fallback dispatches would cut the partition (and
  // add a dispatch and a barrier each). Not add/relu/clip: after a
  // convolution they fuse anyway, and elsewhere (an attention mask) they are
  // better left to the fallback target.
  cgc_pattern.pattern @pooling attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.global_avg_pool", "cgc_op.global_max_pool", "cgc_op.max_pool", "cgc_op.avg_pool", "cgc_op.pad"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    cgc_pattern.yield %m
  }
  // Resizes of 4-D activations (segmentation heads: LR-ASPP's and
  // DeepLabV3's bilinear upsampling), each on its own, for the same reason:
  // the kernel reads and writes any layout, so the convolutions around it
  // keep theirs.
  cgc_pattern.pattern @resize attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.resize"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    cgc_pattern.yield %m
  }
  // Concats of 4-D activations (DenseNet's dense blocks, Inception's and
  // SqueezeNet's branches joined along channels), each on its own, for the
  // same reason: the kernel is a strided copy per input, so its inputs and
  // result stay channels-last with the convolutions around them.
  cgc_pattern.pattern @concat attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.concat"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    cgc_pattern.yield %m
  }
  // A channel shuffle (ShuffleNet: reshape [N, C, H, W] -> [N, g, C/g, H,
  // W], swap the two channel dimensions, reshape back) and the 4-D slices
  // that split channels after it, each on its own, for the same reason:
  // inside the driver's partitions the reshapes are views and only the
  // transpose copies. As fallback dispatches, ShuffleNetV2's 16 shuffles
  // cut it into 93 partitions (3 with these): 2.55 -> 2.39-2.51 ms at 1
  // thread, 2.70-2.72 -> 2.58-2.60 at 2 (cgc-run medians, 2026-11-23).
  cgc_pattern.pattern @channelShuffle attributes {priority = 1 : i64, naming = "ops"} {
    %x = cgc_pattern.input
    %r = cgc_pattern.op ["cgc_op.reshape"](%x) {element_types = [!cgc.float32, !cgc.bfloat16], ranks = [5]}
    %t = cgc_pattern.op ["cgc_op.transpose"](%r) {ranks = [5]}
    %y = cgc_pattern.op ["cgc_op.reshape"](%t) {ranks = [4]}
    cgc_pattern.yield %y
  }
  // A CNN's flatten before its classifier (reshape [N, C, H, W] ->
  // [N, C * H * W]), on its own, for the same reason: inside the driver's
  // partition it is a view of the pooled or convolved tensor, so the
  // classifier joins the convolutions' dispatch. As a fallback dispatch it
  // split every such network into three programs (LeNet-5: 3 dispatches
  // for ~12 us of kernels).
  cgc_pattern.pattern @flatten attributes {priority = 1 : i64, naming = "ops"} {
    %x = cgc_pattern.input {ranks = [4]}
    %y = cgc_pattern.op ["cgc_op.reshape"](%x) {element_types = [!cgc.float32, !cgc.bfloat16], ranks = [2]}
    cgc_pattern.yield %y
  }
  cgc_pattern.pattern @slice attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.slice", "cgc_op.split"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    cgc_pattern.yield %m
  }
  // A batch norm on 4-D activations and the activations after it
  // (DenseNet's pre-activation BN-ReLU before each convolution), for the
  // same reason: inside the driver's partitions the convolutions around
  // them keep their activations channels-last.
  cgc_pattern.pattern @batchNorm attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.batch_norm"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%m) {keep_shape}
    cgc_pattern.yield %e
  }
  // A 4-D transpose and a 4-D layer norm, each on its own (ConvNeXt's
  // blocks: a depthwise convolution, a permute to channels-last, a layer
  // norm over the channels, the pointwise Linear layers, a permute back;
  // its downsampling layers: permute, layer norm, permute, convolution).
  // Inside the driver's partitions the convolution writes channels-last,
  // which is already the permuted order: the JIT then removes the
  // permutes (`foldLayoutTransposes`), where as fallback dispatches each
  // copied its tensor and cut the partition at NCHW.
  cgc_pattern.pattern @layoutTranspose attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.transpose"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    cgc_pattern.yield %m
  }
  cgc_pattern.pattern @layerNorm attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.layer_norm"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4]}
    cgc_pattern.yield %m
  }
  cgc_pattern.pattern @activationScale attributes {priority = 1 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.mul", "cgc_op.sigmoid"] {open, element_types = [!cgc.float32, !cgc.bfloat16], ranks = [4], min_elements = 1024 : i64}
    cgc_pattern.yield %m
  }

  // Elementwise fusion with no anchor: an elementwise layer and the chain
  // of elementwise layers after it, each continuing the previous one's
  // result (hard-swish written as x * clip(x + 3, 0, 6) / 6, SiLU as
  // x * sigmoid(x), Mish, GELU pieces, after a resize, a concat or a
  // model's input rather than a convolution). The driver runs them as one
  // kernel that applies every layer to a block of the result while it is in
  // cache: one pass over memory instead of one per layer, and one dispatch.
  // At least 4096 elements: small ones (an attention mask's arithmetic) gain
  // nothing and stay with the fallback target.
  cgc_pattern.pattern @elementwiseChain attributes {priority = 2 : i64, naming = "ops"} {
    %h = cgc_pattern.op ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"] {open, element_types = [!cgc.float32, !cgc.bfloat16], min_elements = 4096 : i64}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%h) {keep_shape, min_length = 1}
    cgc_pattern.yield %e
  }

  // A transpose feeding a matrix product: the driver's JIT folds the
  // transpose into the product's operand strides (oneDNN's matmul reads
  // strided operands), so the transposed copy is never written. Attention's
  // Q.K^T and the head split before it. Any epilogue chain fuses as above.
  cgc_pattern.pattern @transposedMatMulB attributes {priority = 10 : i64, naming = "ops"} {
    %a = cgc_pattern.input
    %x = cgc_pattern.input
    %t = cgc_pattern.op ["cgc_op.transpose"](%x) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %m = cgc_pattern.op ["cgc_op.matmul"](%a, %t) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min", "cgc_op.softmax"](%m) {keep_shape}
    cgc_pattern.yield %e
  }
  cgc_pattern.pattern @transposedMatMulA attributes {priority = 10 : i64, naming = "ops"} {
    %x = cgc_pattern.input
    %b = cgc_pattern.input
    %t = cgc_pattern.op ["cgc_op.transpose"](%x) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %m = cgc_pattern.op ["cgc_op.matmul"](%t, %b) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%m) {keep_shape}
    cgc_pattern.yield %e
  }
  cgc_pattern.pattern @transposedMatMulAB attributes {priority = 10 : i64, naming = "ops"} {
    %x = cgc_pattern.input
    %y = cgc_pattern.input
    %ta = cgc_pattern.op ["cgc_op.transpose"](%x) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %tb = cgc_pattern.op ["cgc_op.transpose"](%y) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %m = cgc_pattern.op ["cgc_op.matmul"](%ta, %tb) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min", "cgc_op.softmax"](%m) {keep_shape}
    cgc_pattern.yield %e
  }

  // GELU as PyTorch exports it, x * (erf(x / sqrt(2)) + 1) * 0.5, after an
  // anchor (and its bias): x feeds both the erf branch and the product, so
  // no chain can take it. The driver's JIT folds the five layers into one
  // cgc_op.erf_gelu kernel (the same arithmetic in one pass, for whatever
  // constants), run in the anchor's dispatch after the fused bias: one
  // dispatch instead of six and one pass over the result instead of five.
  // A transformer's feed-forward layer.
  cgc_pattern.pattern @anchorBiasGeluErf attributes {priority = 10 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open, element_types = [!cgc.float32]}
    %bias = cgc_pattern.input
    %x = cgc_pattern.op ["cgc_op.add"](%m, %bias) {commutative}
    %k1 = cgc_pattern.input {max_elements = 1 : i64}
    %d = cgc_pattern.op ["cgc_op.div", "cgc_op.mul"](%x, %k1)
    %e = cgc_pattern.op ["cgc_op.erf"](%d)
    %k2 = cgc_pattern.input {max_elements = 1 : i64}
    %a = cgc_pattern.op ["cgc_op.add"](%e, %k2) {commutative}
    %p = cgc_pattern.op ["cgc_op.mul"](%x, %a) {commutative}
    %k3 = cgc_pattern.input {max_elements = 1 : i64}
    %y = cgc_pattern.op ["cgc_op.mul"](%p, %k3) {commutative}
    %c = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%y) {keep_shape}
    cgc_pattern.yield %c
  }
  cgc_pattern.pattern @anchorGeluErf attributes {priority = 10 : i64, naming = "ops"} {
    %x = cgc_pattern.op ["cgc_op.convolution", "cgc_op.matmul", "cgc_op.gemm"] {open, element_types = [!cgc.float32]}
    %k1 = cgc_pattern.input {max_elements = 1 : i64}
    %d = cgc_pattern.op ["cgc_op.div", "cgc_op.mul"](%x, %k1)
    %e = cgc_pattern.op ["cgc_op.erf"](%d)
    %k2 = cgc_pattern.input {max_elements = 1 : i64}
    %a = cgc_pattern.op ["cgc_op.add"](%e, %k2) {commutative}
    %p = cgc_pattern.op ["cgc_op.mul"](%x, %a) {commutative}
    %k3 = cgc_pattern.input {max_elements = 1 : i64}
    %y = cgc_pattern.op ["cgc_op.mul"](%p, %k3) {commutative}
    %c = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min"](%y) {keep_shape}
    cgc_pattern.yield %c
  }

  // Attention's head split and merge around its two products: a reshape
  // between dense tensors is a view and a transpose a stride permutation,
  // so the JIT removes both (reshapes become views of their source or
  // destination, transposes fold into the product's operand or result
  // strides) and no copy of Q, K, V or the context is written. Scores:
  // transpose(reshape(q)) . transpose(reshape(k)), then the scale and mask
  // as the epilogue chain. Context: p . transpose(reshape(v)), its result's
  // heads merged back into rows by transpose and reshape.
  cgc_pattern.pattern @attentionScores attributes {priority = 10 : i64, naming = "ops"} {
    %q = cgc_pattern.input
    %k = cgc_pattern.input
    %rq = cgc_pattern.op ["cgc_op.reshape"](%q) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %tq = cgc_pattern.op ["cgc_op.transpose"](%rq)
    %rk = cgc_pattern.op ["cgc_op.reshape"](%k) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %tk = cgc_pattern.op ["cgc_op.transpose"](%rk)
    %m = cgc_pattern.op ["cgc_op.matmul"](%tq, %tk) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %e = cgc_pattern.chain ["cgc_op.relu", "cgc_op.leaky_relu", "cgc_op.elu", "cgc_op.selu", "cgc_op.celu", "cgc_op.tanh", "cgc_op.sigmoid", "cgc_op.gelu", "cgc_op.clip", "cgc_op.hard_swish", "cgc_op.hard_sigmoid", "cgc_op.exp", "cgc_op.log", "cgc_op.sqrt", "cgc_op.abs", "cgc_op.neg", "cgc_op.softplus", "cgc_op.mish", "cgc_op.round", "cgc_op.reciprocal", "cgc_op.add", "cgc_op.sub", "cgc_op.mul", "cgc_op.div", "cgc_op.max", "cgc_op.min", "cgc_op.softmax"](%m) {keep_shape}
    cgc_pattern.yield %e
  }
  cgc_pattern.pattern @attentionContext attributes {priority = 10 : i64, naming = "ops"} {
    %p = cgc_pattern.input
    %v = cgc_pattern.input
    %rv = cgc_pattern.op ["cgc_op.reshape"](%v) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %tv = cgc_pattern.op ["cgc_op.transpose"](%rv)
    %m = cgc_pattern.op ["cgc_op.matmul"](%p, %tv) {element_types = [!cgc.float32, !cgc.bfloat16]}
    %t = cgc_pattern.op ["cgc_op.transpose"](%m)
    %r = cgc_pattern.op ["cgc_op.reshape"](%t)
    cgc_pattern.yield %r
  }
}
