//===- UntrustedBytecode.h - Reading MLIR bytecode from outside -*- C++ -*-===//
//
// MLIR bytecode that crosses a process or file boundary (the CPU driver
// driver's Partition IR, MLIR_EXCHANGE parts, .mlirbc inputs) may be
// corrupted. MLIR 22's reader is not written for that:
//
//  - it trusts counts in its input (BytecodeCheck.h rejects those first);
//  - attribute and type entries with a custom (dialect) encoding are read on
//    demand and may refer to other entries. Entries that refer to each other
//    in a cycle make it spin forever: past 5 levels of nesting it defers the
//    inner entry to a worklist and retries the outer one after it, and in a
//    cycle neither ever succeeds. A cycle through an optional attribute
//    restarts its depth count and recurses until the stack overflows. One
//    flipped byte in an attribute index is enough.
//
// readUntrustedBytecode runs the structural check, then MLIR's reader with
// attribute and type callbacks that read each custom entry with its
// dialect's own bytecode interface (exactly what the reader would do next)
// and bound the work: at most kMaxNestedEntries entries being read inside one
// another, and at most 16 failed reads per entry in the file between two
// successful ones. Acyclic input reads as before (the bound is above what
// the reader's worklist can need without a cycle); a cycle fails with an
// error instead. No timers.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_COMMON_UNTRUSTEDBYTECODE_H
#define CGC_COMPILER_TARGETS_COMMON_UNTRUSTEDBYTECODE_H

#include "mlir/Support/LLVM.h"

#include "llvm/Support/MemoryBufferRef.h"

namespace mlir {
class Block;
class MLIRContext;
} // namespace mlir

namespace cgc {

/// Entries being read inside one another beyond which reading fails.
constexpr unsigned kMaxNestedEntries = 256;

/// Reads MLIR bytecode `buffer` into `block` with `context`, as
/// mlir::readBytecodeFile does (verifying what it read), after
/// checkBytecodeStructure and with the bounds above. Errors are emitted as
/// diagnostics on `context`.
mlir::LogicalResult readUntrustedBytecode(llvm::MemoryBufferRef buffer,
                                          mlir::Block *block,
                                          mlir::MLIRContext *context);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_COMMON_UNTRUSTEDBYTECODE_H
