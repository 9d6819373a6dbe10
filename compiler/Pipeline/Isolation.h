//===- Isolation.h - Partition IR out of Output IR --------------*- C++ -*-===//

#ifndef CGC_COMPILER_PIPELINE_ISOLATION_H
#define CGC_COMPILER_PIPELINE_ISOLATION_H

#include "cgc/IR/CGCOps.h"

#include "mlir/IR/OwningOpRef.h"

namespace cgc {

/// The Partition IR of `partition`: a new cgc.module holding the subgraphs
/// it invokes (in module order) and the partition, nothing else.
mlir::OwningOpRef<ModuleOp> isolatePartition(ModuleOp module,
                                             PartitionOp partition);

/// The partition named `nameOrIndex`, or the one at that index in module
/// order; null if none.
PartitionOp findPartition(ModuleOp module, llvm::StringRef nameOrIndex);

} // namespace cgc

#endif // CGC_COMPILER_PIPELINE_ISOLATION_H
