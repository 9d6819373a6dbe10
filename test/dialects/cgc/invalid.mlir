// Every user-facing verifier error of the cgc dialect, one case each.
// RUN: cgc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{tensor element type must be a cgc element type (!cgc.float32, !cgc.int8, ...), got 'f32'}}
cgc.module { cgc.entry_point @f(%a: !cgc.tensor<4xf32>) { cgc.return } }

// -----

// expected-error @+1 {{memref has 1 strides but rank 2}}
cgc.module { cgc.program @f(%a: !cgc.memref<2x3x!cgc.float32, strides = [1]>) { cgc.return } }

// -----

// expected-error @+1 {{memref strides must be non-negative, got -1}}
cgc.module { cgc.program @f(%a: !cgc.memref<2x3x!cgc.float32, strides = [-1, 1]>) { cgc.return } }

// -----

// A shape whose byte size wraps in 64 bits (to 0 bytes here) is refused.
// expected-error @+1 {{tensor is too large: its shape 99999999999999x99999999999999 of 4-byte elements is larger than cgc's limit of 2^47 bytes (128 TiB)}}
cgc.module { cgc.entry_point @f(%a: !cgc.tensor<99999999999999x99999999999999x!cgc.float32>) { cgc.return } }

// -----

// expected-error @+1 {{memref is too large: its shape 4611686018427387905x4 of 4-byte elements is larger than cgc's limit of 2^47 bytes (128 TiB)}}
cgc.module { cgc.program @f(%a: !cgc.memref<4611686018427387905x4x!cgc.float32>) { cgc.return } }

// -----

// Strides that span more than the limit, though the shape itself is small.
// expected-error @+1 {{memref strides span more than cgc's limit of 2^47 bytes (128 TiB)}}
cgc.module { cgc.program @f(%a: !cgc.memref<2x3x!cgc.float32, strides = [4611686018427387904, 1]>) { cgc.return } }

// -----

cgc.module {
  // expected-note @+1 {{first entry point here}}
  cgc.entry_point @a() { cgc.return }
  // expected-error @+1 {{'cgc.entry_point' op is a second entry point; a cgc.module has at most one}}
  cgc.entry_point @b() { cgc.return }
}

// -----

cgc.module {
  // expected-note @+1 {{first program here}}
  cgc.program @a() { cgc.return }
  // expected-error @+1 {{'cgc.program' op is a second program; a cgc.module has at most one}}
  cgc.program @b() { cgc.return }
}

// -----

cgc.module {
  cgc.entry_point @main() {
    // expected-note @+1 {{other use here}}
    %0 = cgc.constant("w") : !cgc.tensor<constant 4x!cgc.float32>
    // expected-error @+1 {{constant "w" has type '!cgc.tensor<constant 8x!cgc.float32>' but another use of the same name has type '!cgc.tensor<constant 4x!cgc.float32>'}}
    %1 = cgc.constant("w") : !cgc.tensor<constant 8x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.entry_point' op argument #0 must be a !cgc.tensor, got '!cgc.memref<4x!cgc.float32>'}}
  cgc.entry_point @main(%a: !cgc.memref<4x!cgc.float32>) { cgc.return }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.entry_point' op argument #0 must not be qualified 'constant'; constants are bound by name with cgc.constant}}
  cgc.entry_point @main(%a: !cgc.tensor<constant 4x!cgc.float32>) { cgc.return }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.entry_point' op result #0 must be a !cgc.tensor, got '!cgc.memref<4x!cgc.float32>'}}
  cgc.entry_point @main() -> !cgc.memref<4x!cgc.float32> { cgc.return }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.entry_point' op result #0 must not be qualified 'constant'}}
  cgc.entry_point @main() -> !cgc.tensor<constant 4x!cgc.float32> { cgc.return }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.partition' op partition argument #1 must be a !cgc.memref (a bind point), got '!cgc.tensor<4x!cgc.float32>'}}
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>, %b: !cgc.tensor<4x!cgc.float32>) { cgc.return }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.partition' op a partition has no results; outputs are written through memref arguments}}
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>) -> !cgc.memref<4x!cgc.float32> { cgc.return %a : !cgc.memref<4x!cgc.float32> }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.program' op program argument #0 must be a !cgc.memref (a bind point), got '!cgc.tensor<4x!cgc.float32>'}}
  cgc.program @main(%a: !cgc.tensor<4x!cgc.float32>) { cgc.return }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.subgraph' op requires attribute 'origin'}}
  cgc.subgraph @s {
  }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.subgraph' op must name its origin: the target that implements it (origin = "...")}}
  cgc.subgraph @s attributes {origin = ""} {
    cgc.functional_definition private @f() { cgc.return }
  }
}

// -----

cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f() { cgc.return }
    // expected-error @+1 {{'cgc.partition' op is not allowed in a cgc.subgraph; a subgraph holds exactly one cgc.functional_definition}}
    "cgc.partition"() <{sym_name = "p", function_type = () -> ()}> ({ cgc.return }) : () -> ()
  }
}

// -----

cgc.module {
  // expected-error @+1 {{'cgc.subgraph' op must contain exactly one cgc.functional_definition, found 0}}
  cgc.subgraph @s attributes {origin = "t"} {
  }
}

// -----

cgc.module {
  cgc.entry_point @main() {
    // expected-error @+1 {{'cgc.constant' op name must not be empty}}
    %0 = cgc.constant("") : !cgc.tensor<constant 4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.entry_point @main() {
    // expected-error @+1 {{'cgc.constant' op result must be qualified 'constant', got '!cgc.tensor<4x!cgc.float32>'}}
    %0 = cgc.constant("w") : !cgc.tensor<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.partition @p() {
    // expected-error @+1 {{'cgc.constant' op is not allowed in a partition; constants reach a partition through its memref arguments}}
    %0 = cgc.constant("w") : !cgc.memref<constant 4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main() {
    // expected-error @+1 {{'cgc.constant' op in a program must produce a !cgc.memref, got '!cgc.tensor<constant 4x!cgc.float32>'}}
    %0 = cgc.constant("w") : !cgc.tensor<constant 4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.entry_point @main() {
    // expected-error @+1 {{'cgc.constant' op in an entry point or functional definition must produce a !cgc.tensor, got '!cgc.memref<constant 4x!cgc.float32>'}}
    %0 = cgc.constant("w") : !cgc.memref<constant 4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.entry_point @main(%a: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    // expected-error @+1 {{'cgc.return' op returns 0 value(s) but the enclosing 'cgc.entry_point' has 1 result(s)}}
    cgc.return
  }
}

// -----

cgc.module {
  cgc.entry_point @main(%a: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float16> {
    // expected-error @+1 {{'cgc.return' op operand #0 has type '!cgc.tensor<4x!cgc.float32>' but the enclosing function returns '!cgc.tensor<4x!cgc.float16>'}}
    cgc.return %a : !cgc.tensor<4x!cgc.float32>
  }
}

// -----

cgc.module {
  cgc.program @main(%a: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op callee 'missing' does not resolve to a symbol}}
    cgc.invoke @missing(%a) : !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> { cgc.return %x : !cgc.tensor<4x!cgc.float32> }
  }
  cgc.program @main(%a: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op in a program must invoke a cgc.partition, but 's' is a 'cgc.subgraph'}}
    cgc.invoke @s(%a, %a) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

// The spec's printed Output IR passes six operands to a seven-bind-point
// partition (docs/spec-listings.md).
cgc.module {
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>, %b: !cgc.memref<4x!cgc.float32>) { cgc.return }
  cgc.program @main(%a: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op passes 1 operand(s) but partition 'p' has 2 bind point(s)}}
    cgc.invoke @p(%a) : !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>) { cgc.return }
  cgc.program @main(%a: !cgc.memref<4x!cgc.float16>) {
    // expected-error @+1 {{'cgc.invoke' op operand #0 has type '!cgc.memref<4x!cgc.float16>' but bind point #0 of partition 'p' is '!cgc.memref<4x!cgc.float32>'}}
    cgc.invoke @p(%a) : !cgc.memref<4x!cgc.float16>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.partition @q(%a: !cgc.memref<4x!cgc.float32>) { cgc.return }
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op in a partition must invoke a cgc.subgraph, but 'q' is a 'cgc.partition'}}
    cgc.invoke @q(%a) : !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> { cgc.return %x : !cgc.tensor<4x!cgc.float32> }
  }
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op passes 1 operand(s) but subgraph 's' takes 1 input(s) and 1 output(s)}}
    cgc.invoke @s(%a) : !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> { cgc.return %x : !cgc.tensor<4x!cgc.float32> }
  }
  cgc.partition @p(%a: !cgc.memref<8x!cgc.float32>, %b: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op operand #0 has type '!cgc.memref<8x!cgc.float32>' but input #0 of subgraph 's' is '!cgc.tensor<4x!cgc.float32>'}}
    cgc.invoke @s(%a, %b) : !cgc.memref<8x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> { cgc.return %x : !cgc.tensor<4x!cgc.float32> }
  }
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>, %b: !cgc.memref<constant 4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op operand #1 receives output #0 of subgraph 's' and must not be qualified 'constant'}}
    cgc.invoke @s(%a, %b) : !cgc.memref<4x!cgc.float32>, !cgc.memref<constant 4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%w: !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%w) : (!cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>, %b: !cgc.memref<4x!cgc.float32>) {
    // expected-error @+1 {{'cgc.invoke' op operand #0 feeds 'constant' input #0 of subgraph 's' and must be a 'constant' memref}}
    cgc.invoke @s(%a, %b) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%s: !cgc.memref<8x8x!cgc.float32, strides = [1, 8]>) {
    // expected-error @+1 {{'cgc.view_memref' op source must be a contiguous buffer, got '!cgc.memref<8x8x!cgc.float32, strides = [1, 8]>'}}
    %0 = cgc.view_memref %s[0] : !cgc.memref<8x8x!cgc.float32, strides = [1, 8]> to !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%s: !cgc.memref<constant 64x!cgc.int8>) {
    // expected-error @+1 {{'cgc.view_memref' op result must keep the source's 'constant' qualifier}}
    %0 = cgc.view_memref %s[0] : !cgc.memref<constant 64x!cgc.int8> to !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%s: !cgc.memref<64x!cgc.int8>) {
    // expected-error @+1 {{'cgc.view_memref' op offset must be non-negative, got -4}}
    %0 = cgc.view_memref %s[-4] : !cgc.memref<64x!cgc.int8> to !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%s: !cgc.memref<64x!cgc.int8>) {
    // expected-error @+1 {{'cgc.view_memref' op offset 6 is not a multiple of the 4-byte element size of the view}}
    %0 = cgc.view_memref %s[6] : !cgc.memref<64x!cgc.int8> to !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}

// -----

cgc.module {
  cgc.program @main(%s: !cgc.memref<64x!cgc.int8>) {
    // expected-error @+1 {{'cgc.view_memref' op view of 64 bytes at offset 16 ends at byte 80, past the 64-byte source}}
    %0 = cgc.view_memref %s[16] : !cgc.memref<64x!cgc.int8> to !cgc.memref<1x1x4x4x!cgc.float32>
    cgc.return
  }
}
