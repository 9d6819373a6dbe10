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

/// The same intermediates at the granularity of subgraph invocations: one
/// node per call, the calls of each partition consecutive in the order of
/// `partitionOrder` (node indices of `dispatch.graph`) and, inside a
/// partition, in block order (the order the partition invokes them). Tensor
/// ids are those of `dispatch.graph`; the nodes are in execution order.
///
/// Every value lives exactly from the call that writes it to the last call
/// that reads it, values that cross a partition's boundary too: the peak of
/// live bytes over this order is the op-level lower bound the tools print,
/// and min-memory plans place the intermediates on this graph. Two bind
/// points of one dispatch may then share bytes (a value only the
/// partition's first call reads, one its last call writes); a driver whose
/// order of work inside the dispatch differs orders those accesses itself
/// (the spec leaves synchronization inside an MLIR program to the driver;
/// the CPU driver's CompiledProgram::layoutFor).
struct CallGraph {
  planning::Graph graph;
  std::vector<int32_t> order; // 0..n-1: the nodes are in execution order
  /// Node -> its partition's node in `dispatch.graph`.
  std::vector<int32_t> partitionOf;
};
CallGraph buildCallGraph(const DispatchGraph &dispatch,
                         llvm::ArrayRef<int32_t> partitionOrder);

/// Parses the `schedule` option.
mlir::FailureOr<planning::ScheduleMode> parseScheduleMode(llvm::StringRef name);

} // namespace cgc

#endif // CGC_COMPILER_PIPELINE_DISPATCHGRAPH_H
