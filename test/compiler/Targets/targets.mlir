// The target registry and the file target: names, priority order and every
// error a user can make with --target.
//
// RUN: cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/unnamed.mlir" | FileCheck %s --check-prefix=FILENAME
// RUN: cgc-opt %s --cgc-match-subgraphs="targets=fallback" | FileCheck %s --check-prefix=FALLBACK
// Two targets that both declare relu: the first listed wins the tie.
// RUN: cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/unnamed.mlir,patterns:%cgc_src_root/test/compiler/Pipeline/Inputs/sizes.mlir" | FileCheck %s --check-prefix=ORDER1
// RUN: cgc-opt %s --cgc-match-subgraphs="targets=patterns:%cgc_src_root/test/compiler/Pipeline/Inputs/sizes.mlir,patterns:%S/Inputs/unnamed.mlir" | FileCheck %s --check-prefix=ORDER2
//
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=nvidia" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns" 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/missing.mlir" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/not-patterns.mlir" 2>&1 | FileCheck %s --check-prefix=NOTPATTERNS
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/empty.mlir" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/bad-syntax.mlir" 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/unnamed.mlir,patterns:%S/Inputs/unnamed.mlir" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=fallback,patterns:%S/Inputs/unnamed.mlir" 2>&1 | FileCheck %s --check-prefix=NOTLAST
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=patterns:%S/Inputs/named-fallback.mlir" 2>&1 | FileCheck %s --check-prefix=IMPOSTOR
// RUN: not cgc-opt %s --cgc-match-subgraphs="targets=fallback:extra" 2>&1 | FileCheck %s --check-prefix=FALLBACKARG

// FILENAME: cgc.subgraph @reluPattern attributes {{{.*}}origin = "unnamed", pattern = "reluPattern"}
// FALLBACK: cgc.subgraph @relu attributes {{{.*}}origin = "fallback", pattern = "layer"}
// ORDER1: origin = "unnamed", pattern = "reluPattern"
// ORDER2: origin = "sizes", pattern = "reluOnly"
// UNKNOWN: error: unknown target 'nvidia'; known targets:
// UNKNOWN-NEXT:  cpu
// UNKNOWN-NEXT:  device
// UNKNOWN-NEXT:  fallback
// UNKNOWN-NEXT:  patterns
// NOFILE: error: target 'patterns' needs a file: --target=patterns:FILE.mlir
// MISSING: error: cannot read patterns file '{{.*}}missing.mlir': No such file or directory
// NOTPATTERNS: error: patterns file '{{.*}}not-patterns.mlir' holds a 'cgc.entry_point'; it may hold cgc_pattern.pattern and cgc_pattern.reject_when only
// EMPTY: error: patterns file '{{.*}}empty.mlir' declares no pattern
// SYNTAX: error: patterns file '{{.*}}bad-syntax.mlir': cannot parse the MLIR: {{.*}}use of undeclared SSA value name
// TWICE: error: two targets are named 'unnamed'; the name is the origin of their subgraphs and must be unique
// NOTLAST: error: target 'fallback' must be the last target
// IMPOSTOR: error: a target other than the fallback is named 'fallback'
// FALLBACKARG: error: target 'fallback' takes no argument
cgc.module {
  cgc.entry_point @main(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}
