// RUN: cgc-opt -split-input-file -verify-diagnostics %s
// One case per error of the cgc_op shape functions added with the importer;
// a shape function error is followed by the verifier's own summary.

cgc.module {
  cgc.entry_point @cumsum_axis(%x: !cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{axis 2 is out of range for rank 2}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.cumsum(%x) {axis = 2} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_elements_types(%x: !cgc.tensor<2x3x!cgc.float32>, %i: !cgc.tensor<2x2x!cgc.int64>, %u: !cgc.tensor<2x2x!cgc.int32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{data and updates must have the same element type}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_elements(%x, %i, %u) {axis = 1} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x2x!cgc.int64>, !cgc.tensor<2x2x!cgc.int32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_elements_rank(%x: !cgc.tensor<2x3x!cgc.float32>, %i: !cgc.tensor<2x!cgc.int64>, %u: !cgc.tensor<2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{indices rank 1 must equal data rank 2}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_elements(%x, %i, %u) {axis = 1} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x!cgc.int64>, !cgc.tensor<2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_elements_shapes(%x: !cgc.tensor<2x3x!cgc.float32>, %i: !cgc.tensor<2x2x!cgc.int64>, %u: !cgc.tensor<2x1x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{indices shape [2, 2] must equal updates shape [2, 1]}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_elements(%x, %i, %u) {axis = 1} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x2x!cgc.int64>, !cgc.tensor<2x1x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_elements_axis(%x: !cgc.tensor<2x3x!cgc.float32>, %i: !cgc.tensor<2x2x!cgc.int64>, %u: !cgc.tensor<2x2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{axis -1 is out of range for rank 2}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_elements(%x, %i, %u) {axis = -1} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x2x!cgc.int64>, !cgc.tensor<2x2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_elements_extent(%x: !cgc.tensor<2x3x!cgc.float32>, %i: !cgc.tensor<3x2x!cgc.int64>, %u: !cgc.tensor<3x2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{indices dimension 0 (3) exceeds the data dimension (2)}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_elements(%x, %i, %u) {axis = 1} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<3x2x!cgc.int64>, !cgc.tensor<3x2x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_nd_tuple(%x: !cgc.tensor<4x!cgc.float32>, %i: !cgc.tensor<2x2x!cgc.int64>, %u: !cgc.tensor<2x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+2 {{index tuples of length 2 exceed the data rank 1}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_nd(%x, %i, %u) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<2x2x!cgc.int64>, !cgc.tensor<2x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_nd_updates(%x: !cgc.tensor<4x3x!cgc.float32>, %i: !cgc.tensor<2x1x!cgc.int64>, %u: !cgc.tensor<2x!cgc.float32>) -> !cgc.tensor<4x3x!cgc.float32> {
    // expected-error @+2 {{updates shape [2] must be [2, 3]}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_nd(%x, %i, %u) : (!cgc.tensor<4x3x!cgc.float32>, !cgc.tensor<2x1x!cgc.int64>, !cgc.tensor<2x!cgc.float32>) -> !cgc.tensor<4x3x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @scatter_nd_rank(%x: !cgc.tensor<4x!cgc.float32>, %i: !cgc.tensor<!cgc.int64>, %u: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+2 {{indices must have rank >= 1}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.scatter_nd(%x, %i, %u) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<!cgc.int64>, !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @top_k_k(%x: !cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x4x!cgc.float32> {
    // expected-error @+2 {{k = 4 must be in [0, 3] (dimension 1)}}
    // expected-error @+1 {{failed to infer returned types}}
    %v, %i = cgc_op.top_k(%x) {k = 4, axis = 1} : (!cgc.tensor<2x3x!cgc.float32>) -> (!cgc.tensor<2x4x!cgc.float32>, !cgc.tensor<2x4x!cgc.int64>)
    cgc.return %v : !cgc.tensor<2x4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @top_k_axis(%x: !cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32> {
    // expected-error @+2 {{axis 2 is out of range for rank 2}}
    // expected-error @+1 {{failed to infer returned types}}
    %v, %i = cgc_op.top_k(%x) {k = 1, axis = 2} : (!cgc.tensor<2x3x!cgc.float32>) -> (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.int64>)
    cgc.return %v : !cgc.tensor<2x3x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @grid_sample_input(%x: !cgc.tensor<3x4x4x!cgc.float32>, %g: !cgc.tensor<1x2x2x2x!cgc.float32>) -> !cgc.tensor<3x4x4x!cgc.float32> {
    // expected-error @+2 {{input must be N x C x H x W}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.grid_sample(%x, %g) : (!cgc.tensor<3x4x4x!cgc.float32>, !cgc.tensor<1x2x2x2x!cgc.float32>) -> !cgc.tensor<3x4x4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<3x4x4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @grid_sample_grid(%x: !cgc.tensor<1x3x4x4x!cgc.float32>, %g: !cgc.tensor<1x2x2x3x!cgc.float32>) -> !cgc.tensor<1x3x2x2x!cgc.float32> {
    // expected-error @+2 {{grid must be N x Ho x Wo x 2, got [1, 2, 2, 3]}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.grid_sample(%x, %g) : (!cgc.tensor<1x3x4x4x!cgc.float32>, !cgc.tensor<1x2x2x3x!cgc.float32>) -> !cgc.tensor<1x3x2x2x!cgc.float32>
    cgc.return %0 : !cgc.tensor<1x3x2x2x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @grid_sample_batch(%x: !cgc.tensor<1x3x4x4x!cgc.float32>, %g: !cgc.tensor<2x2x2x2x!cgc.float32>) -> !cgc.tensor<1x3x2x2x!cgc.float32> {
    // expected-error @+2 {{grid batch 2 differs from input batch 1}}
    // expected-error @+1 {{failed to infer returned types}}
    %0 = cgc_op.grid_sample(%x, %g) : (!cgc.tensor<1x3x4x4x!cgc.float32>, !cgc.tensor<2x2x2x2x!cgc.float32>) -> !cgc.tensor<1x3x2x2x!cgc.float32>
    cgc.return %0 : !cgc.tensor<1x3x2x2x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @grid_sample_mode(%x: !cgc.tensor<1x3x4x4x!cgc.float32>, %g: !cgc.tensor<1x2x2x2x!cgc.float32>) -> !cgc.tensor<1x3x2x2x!cgc.float32> {
    // expected-error @+1 {{attribute 'mode' failed to satisfy constraint: string, one of: bilinear, nearest, bicubic}}
    %0 = cgc_op.grid_sample(%x, %g) {mode = "cubic"} : (!cgc.tensor<1x3x4x4x!cgc.float32>, !cgc.tensor<1x2x2x2x!cgc.float32>) -> !cgc.tensor<1x3x2x2x!cgc.float32>
    cgc.return %0 : !cgc.tensor<1x3x2x2x!cgc.float32>
  }
}
