//===- Passes.h - The lowering pipeline's passes ----------------*- C++ -*-===//

#ifndef CGC_COMPILER_PIPELINE_PASSES_H
#define CGC_COMPILER_PIPELINE_PASSES_H

#include "cgc/IR/CGCOps.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "cgc_pattern/IR/CGCPatternDialect.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace cgc {

#define GEN_PASS_DECL
#include "compiler/Pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Pipeline/Passes.h.inc"

} // namespace cgc

#endif // CGC_COMPILER_PIPELINE_PASSES_H
