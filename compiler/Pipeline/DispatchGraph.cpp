//===- DispatchGraph.cpp - Partitioned Input IR as a planning graph -------===//

#include "compiler/Pipeline/DispatchGraph.h"

#include "compiler/Pipeline/SubgraphMatcher.h"
#include "cgc_op/IR/CGCOpOps.h"

#include "llvm/ADT/STLExtras.h"

#include <map>
#include <queue>

using namespace mlir;

namespace cgc {

FailureOr<planning::ScheduleMode> parseScheduleMode(StringRef name) {
  if (name == "min-memory")
    return planning::ScheduleMode::MinMemory;
  if (name == "max-concurrency")
    return planning::ScheduleMode::MaxConcurrency;
  return failure();
}

/// True if every layer of the subgraph is elementwise: each output element
/// depends on input elements at the same position only.
static bool isAllElementwise(SubgraphOp subgraph) {
  FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
  return llvm::all_of(definition.getBody().front().without_terminator(),
                      [](Operation &op) { return op::isElementwise(&op); });
}

FailureOr<DispatchGraph> buildDispatchGraph(EntryPointOp entry, bool inPlace) {
  DispatchGraph result;
  Block &block = entry.getBody().front();
  auto returnOp = cast<ReturnOp>(block.getTerminator());

  // Partitions and their calls.
  std::map<int64_t, unsigned> nodeOfPartition;
  std::vector<SmallVector<CallOp>> calls;
  std::vector<int64_t> ids;
  DenseMap<Operation *, unsigned> nodeOfCall;
  for (Operation &op : block) {
    if (isa<ConstantOp, ReturnOp>(op))
      continue;
    auto call = dyn_cast<CallOp>(op);
    if (!call)
      return op.emitOpError("is not in a subgraph; the planner needs a "
                            "partitioned entry point (cgc-match-subgraphs, "
                            "cgc-partition)");
    auto partition = call->getAttrOfType<IntegerAttr>(kPartitionAttr);
    if (!partition)
      return call.emitOpError("has no '")
             << kPartitionAttr << "'; run cgc-partition first";
    auto [it, inserted] =
        nodeOfPartition.try_emplace(partition.getInt(), calls.size());
    if (inserted) {
      calls.emplace_back();
      ids.push_back(partition.getInt());
    }
    calls[it->second].push_back(call);
    nodeOfCall[call] = it->second;
  }

  // A topological order of the partitions (Kahn; ties by first call).
  unsigned numNodes = calls.size();
  std::vector<llvm::SmallVector<unsigned>> successors(numNodes);
  std::vector<unsigned> indegree(numNodes, 0);
  for (unsigned node = 0; node < numNodes; ++node) {
    llvm::SmallVector<unsigned> preds;
    for (CallOp call : calls[node])
      for (Value operand : call.getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (auto it = nodeOfCall.find(def);
              it != nodeOfCall.end() && it->second != node &&
              !llvm::is_contained(preds, it->second))
            preds.push_back(it->second);
    for (unsigned pred : preds) {
      successors[pred].push_back(node);
      ++indegree[node];
    }
  }
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<unsigned>>
      ready;
  for (unsigned node = 0; node < numNodes; ++node)
    if (indegree[node] == 0)
      ready.push(node);
  std::vector<unsigned> order;
  while (!ready.empty()) {
    unsigned node = ready.top();
    ready.pop();
    order.push_back(node);
    for (unsigned next : successors[node])
      if (--indegree[next] == 0)
        ready.push(next);
  }
  if (order.size() != numNodes)
    return entry.emitOpError("the partitions depend on each other in a "
                             "cycle; a partition must be convex");
  for (unsigned node : order) {
    result.calls.push_back(calls[node]);
    result.partitionIds.push_back(ids[node]);
  }

  // Tensors.
  planning::Graph &graph = result.graph;
  auto addTensor = [&](Value value, std::string name, planning::BufferKind kind,
                       int32_t index) {
    planning::Tensor tensor;
    tensor.name = std::move(name);
    tensor.bytes = static_cast<uint64_t>(
        getContiguousByteSize(cast<TensorLikeType>(value.getType())));
    tensor.kind = kind;
    tensor.index = index;
    result.tensorOf[value] = graph.tensors.size();
    result.values.push_back(value);
    graph.tensors.push_back(std::move(tensor));
  };
  for (BlockArgument argument : block.getArguments()) {
    std::string name = "input" + std::to_string(argument.getArgNumber());
    if (auto attr = entry.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                                       kNameAttr))
      name = attr.getValue().str();
    addTensor(argument, name, planning::BufferKind::Input,
              argument.getArgNumber());
  }
  DenseMap<Value, unsigned> outputIndex;
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
    if (!value.getDefiningOp<CallOp>())
      return returnOp.emitOpError("returns operand #")
             << index << ", which no subgraph produces; run "
             << "cgc-match-subgraphs first";
    if (!outputIndex.try_emplace(value, index).second)
      return returnOp.emitOpError("returns the same value twice (operand #")
             << index << "); run cgc-match-subgraphs first";
  }
  unsigned callNumber = 0;
  for (auto &nodeCalls : result.calls)
    for (CallOp call : nodeCalls) {
      for (OpResult value : call->getResults()) {
        std::string name = (call.getCallee() + "." + Twine(callNumber)).str();
        if (call->getNumResults() > 1)
          name += "#" + std::to_string(value.getResultNumber());
        if (auto it = outputIndex.find(value); it != outputIndex.end()) {
          if (auto attr =
                  entry.getResultAttrOfType<StringAttr>(it->second, kNameAttr))
            name = attr.getValue().str();
          addTensor(value, name, planning::BufferKind::Output, it->second);
        } else {
          addTensor(value, name, planning::BufferKind::Scratch, 0);
        }
      }
      ++callNumber;
    }

  // Nodes.
  for (auto &nodeCalls : result.calls) {
    planning::Node node;
    node.name = ("partition" + Twine(result.partitionIds[graph.nodes.size()]))
                    .str();
    llvm::SmallPtrSet<Operation *, 8> mine;
    for (CallOp call : nodeCalls)
      mine.insert(call);
    for (CallOp call : nodeCalls) {
      for (Value operand : call.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (isa_and_nonnull<ConstantOp>(def) || (def && mine.contains(def)))
          continue;
        int32_t id = result.tensorOf.lookup(operand);
        if (!llvm::is_contained(node.inputs, id))
          node.inputs.push_back(id);
      }
      for (Value value : call->getResults())
        node.outputs.push_back(result.tensorOf.lookup(value));
    }
    node.inPlaceOf.assign(node.outputs.size(), -1);
    if (inPlace && nodeCalls.size() == 1 && node.outputs.size() == 1 &&
        isAllElementwise(nodeCalls.front().getSubgraph())) {
      Type outputType = result.values[node.outputs.front()].getType();
      for (int32_t input : node.inputs)
        if (graph.tensors[input].kind == planning::BufferKind::Scratch &&
            result.values[input].getType() == outputType) {
          node.inPlaceOf.front() = input;
          break;
        }
    }
    graph.nodes.push_back(std::move(node));
  }

  std::string error;
  if (!planning::validateGraph(graph, error))
    return entry.emitOpError("internal error: invalid dispatch graph: ")
           << error;
  return result;
}

CallGraph buildCallGraph(const DispatchGraph &dispatch,
                         ArrayRef<int32_t> partitionOrder) {
  CallGraph result;
  planning::Graph &graph = result.graph;
  graph.tensors = dispatch.graph.tensors;
  for (int32_t partition : partitionOrder) {
    const SmallVector<CallOp> &calls = dispatch.calls[partition];
    const planning::Node &whole = dispatch.graph.nodes[partition];
    size_t first = graph.nodes.size();
    for (auto [index, constCall] : llvm::enumerate(calls)) {
      CallOp call = constCall;
      planning::Node node;
      node.name = (whole.name + "." + call.getCallee() + "." + Twine(index)).str();
      for (Value operand : call.getOperands()) {
        if (isa_and_nonnull<ConstantOp>(operand.getDefiningOp()))
          continue;
        int32_t id = dispatch.tensorOf.lookup(operand);
        if (!llvm::is_contained(node.inputs, id))
          node.inputs.push_back(id);
      }
      for (Value value : call->getResults())
        node.outputs.push_back(dispatch.tensorOf.lookup(value));
      graph.nodes.push_back(std::move(node));
      result.partitionOf.push_back(partition);
    }
    // In-place reuse as the partition offered it: a partition of one call.
    if (calls.size() == 1)
      graph.nodes[first].inPlaceOf = whole.inPlaceOf;
    else
      for (size_t n = first; n < graph.nodes.size(); ++n)
        graph.nodes[n].inPlaceOf.assign(graph.nodes[n].outputs.size(), -1);
  }
  result.order.resize(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    result.order[n] = static_cast<int32_t>(n);
  return result;
}

} // namespace cgc
