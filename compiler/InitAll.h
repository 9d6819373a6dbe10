//===- InitAll.h - Register every cgc dialect and pass ----------*- C++ -*-===//
//
// The one place that lists what the cgc tools register, so that `cgc-opt`
// and `cgc-compile` see the same dialects, passes and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_INITALL_H
#define CGC_COMPILER_INITALL_H

#include "cgc/IR/CGCDialect.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "cgc_pattern/IR/CGCPatternDialect.h"
#include "compiler/Pipeline/Passes.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Targets/Registry.h"

#include "mlir/IR/DialectRegistry.h"

namespace cgc {

/// Adds every CGC dialect to `registry`.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<cgc::CGCDialect, cgc::op::CGCOpDialect,
                  cgc::pattern::CGCPatternDialect>();
}

/// Registers every CGC pass and pass pipeline with the global registry, and
/// the built-in compilation targets.
inline void registerAllPasses() {
  registerCGCPipelinePasses();
  registerPipelines();
  registerBuiltinTargets();
}

} // namespace cgc

#endif // CGC_COMPILER_INITALL_H
