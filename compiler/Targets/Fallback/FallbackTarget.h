//===- FallbackTarget.h - The target of last resort -------------*- C++ -*-===//
//
// The fallback target claims every cgc_op layer no other target claimed, one
// single-layer subgraph each: it declares one pattern (any layer, lowest
// priority) and accepts a subgraph when the generic kernel lowering can turn
// it into a kernel program (cgc/kernel_program.h), which is how it is
// executed: one compute-shader-like dispatch per subgraph.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_FALLBACK_FALLBACKTARGET_H
#define CGC_COMPILER_TARGETS_FALLBACK_FALLBACKTARGET_H

#include "compiler/Targets/Target.h"

#include "llvm/ADT/StringRef.h"

namespace cgc {

constexpr llvm::StringLiteral kFallbackTargetName = "fallback";

/// The fallback target (its own MLIR context, shared by all handles).
TargetHandle createFallbackTarget();

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_FALLBACK_FALLBACKTARGET_H
