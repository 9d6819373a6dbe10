// Every user-facing error of the Lowering-IR ops cgc.call and cgc.barrier.
// RUN: cgc-opt %s -split-input-file -verify-diagnostics

cgc.module {
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{callee 'nowhere' does not resolve to a symbol}}
    %0 = cgc.call @nowhere(%in) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{must call a cgc.subgraph, but 'main' is a 'cgc.entry_point'}}
    %0 = cgc.call @main(%in) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.subgraph @relu attributes {origin = "t"} {
    cgc.functional_definition private @reluFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{passes 2 operand(s) but subgraph 'relu' takes 1 input(s)}}
    %0 = cgc.call @relu(%in, %in) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.subgraph @relu attributes {origin = "t"} {
    cgc.functional_definition private @reluFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{has 2 result(s) but subgraph 'relu' produces 1}}
    %0:2 = cgc.call @relu(%in) : (!cgc.tensor<4x!cgc.float32>) -> (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>)
    cgc.return %0#0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.subgraph @relu attributes {origin = "t"} {
    cgc.functional_definition private @reluFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.entry_point @main(%in: !cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{operand #0 has type '!cgc.tensor<8x!cgc.float32>' but input #0 of subgraph 'relu' is '!cgc.tensor<4x!cgc.float32>'}}
    %0 = cgc.call @relu(%in) : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.subgraph @relu attributes {origin = "t"} {
    cgc.functional_definition private @reluFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float16> {
    // expected-error @+1 {{result #0 has type '!cgc.tensor<4x!cgc.float16>' but output #0 of subgraph 'relu' is '!cgc.tensor<4x!cgc.float32>'}}
    %0 = cgc.call @relu(%in) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float16>
    cgc.return %0 : !cgc.tensor<4x!cgc.float16>
  }
}

// -----

cgc.module {
  cgc.program @main(%in: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.call' op expects parent op 'cgc.entry_point'}}
    cgc.call @main(%in) : (!cgc.memref<4x!cgc.float32>) -> ()
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%scratch: !cgc.memref<64x!cgc.int8>) {
    %0 = cgc.view_memref %scratch[0] : !cgc.memref<64x!cgc.int8> to !cgc.memref<4x!cgc.float32>
    // expected-error @+1 {{range #0 must be on an argument of the program (a whole buffer), not on a view}}
    cgc.barrier %0[0, 16] : !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%scratch: !cgc.memref<64x!cgc.int8>) {
    // expected-error @+1 {{range #0 [60, 16] ends at byte 76, past the 64-byte buffer}}
    cgc.barrier %scratch[60, 16] : !cgc.memref<64x!cgc.int8>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%scratch: !cgc.memref<64x!cgc.int8>) {
    // expected-error @+1 {{range #0 [0, 0] must have a non-negative offset and a positive size}}
    cgc.barrier %scratch[0, 0] : !cgc.memref<64x!cgc.int8>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%scratch: !cgc.memref<64x!cgc.int8>) {
    // expected-error @+1 {{has 1 buffer(s) but 2 offset(s) and 1 size(s)}}
    "cgc.barrier"(%scratch) <{offsets = array<i64: 0, 1>, sizes = array<i64: 4>}> : (!cgc.memref<64x!cgc.int8>) -> ()
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main() {
    // expected-error @+1 {{must list at least one range}}
    "cgc.barrier"() <{offsets = array<i64>, sizes = array<i64>}> : () -> ()
    cgc.return
  }
}

// -----

cgc.module {
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{'cgc.barrier' op expects parent op 'cgc.program'}}
    "cgc.barrier"() <{offsets = array<i64>, sizes = array<i64>}> : () -> ()
    cgc.return %in : !cgc.tensor<4x!cgc.float32>
  }
}
