//===- DispatchGraph.h - Partitioned Input IR as a planning graph -*- C++ -*-===//
//
// The bridge between the annotated entry point (cgc.call ops with a
// cgc.partition each) and compiler/Planning: one node per dispatch (a
// partition), one tensor per value that crosses a subgraph boundary.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PIPELINE_DISPATCHGRAPH_H
#define CGC_COMPILER_PIPELINE_DISPATCHGRAPH_H

#include "cgc/IR/CGCOps.h"
#include "compiler/Planning/Planning.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace cgc {

struct DispatchGraph {
  /// Nodes in a topological order of the partitions (ties: first call).
  planning::Graph graph;
  /// Tensor id -> the SSA value (entry argument or call result).
  std::vector<mlir::Value> values;
  llvm::DenseMap<mlir::Value, int32_t> tensorOf;
  /// Node -> its calls in block order, and its cgc.partition number.
  std::vector<llvm::SmallVector<CallOp>> calls;
  std::vector<int64_t> partitionIds;
};

/// Builds the dispatch graph of a partitioned entry point. Model inputs are
/// Input tensors (by argument number), returned values Output tensors (by
/// result number), every other call result an intermediate (Scratch).
/// Constants are left out: they are never written. With `inPlace`, a
/// dispatch of one all-elementwise subgraph offers its same-typed
/// intermediate inputs for in-place reuse. Errors are emitted at the op.
mlir::FailureOr<DispatchGraph> buildDispatchGraph(EntryPointOp entry,
                                                  bool inPlace);

/// Parses the `schedule` option.
mlir::FailureOr<planning::ScheduleMode> parseScheduleMode(llvm::StringRef name);

} // namespace cgc

#endif // CGC_COMPILER_PIPELINE_DISPATCHGRAPH_H
