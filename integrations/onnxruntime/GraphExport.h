//===- GraphExport.h - ONNX Runtime graphs as ONNX models -------*- C++ -*-===//
//
// Writes a set of nodes of an OrtGraph (the nodes ONNX Runtime asks the EP
// about, or a fused subgraph it gives the EP to compile) as a binary ONNX
// model for cgc's compiler. The model is canonical: nodes in a deterministic
// topological order (by node id), inputs and outputs in the order given, so
// the same nodes give the same bytes whether they come from GetCapability or
// from Compile (the EP compiles each group once).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_ORT_EP_GRAPHEXPORT_H
#define CGC_ORT_EP_GRAPHEXPORT_H

#include "Common.h"

#include <map>
#include <string>
#include <vector>

namespace cgc::ort_ep {

/// A node the exporter cannot write (a string tensor attribute, a sparse
/// tensor, a non-tensor value): the EP leaves it to other EPs.
struct Unexportable {
  const OrtNode *node;
  std::string reason;
};

struct ExportedValue {
  std::string name;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims; // -1: symbolic or unknown
  bool isStatic() const;
};

struct ExportedModel {
  /// The model; assemble() with values for some inputs gives the model with
  /// those inputs turned into initializers (value specialization).
  std::string bytes;
  std::string assemble(const std::map<std::string, std::string> &frozen) const;
  std::string header;                  // ModelProto fields but the graph
  std::string graphBody;               // GraphProto fields but the inputs
  std::vector<std::string> inputInfos; // ValueInfoProto per input
  std::vector<ExportedValue> inputs; // graph inputs (not the constants)
  std::vector<ExportedValue> outputs;
  /// The names the exported nodes carry (unique), to find the ORT node an
  /// error of the compiler names.
  std::map<std::string, const OrtNode *> nodeNames;
  bool isStatic() const;
};

/// Exports `nodes` of `graph` with these outputs (values the nodes produce).
/// Values the nodes read and do not produce become inputs, or initializers
/// when they are constant initializers of `graph`. Throws Unexportable for
/// a node it cannot write and Error for a failed ORT call.
ExportedModel exportNodes(const OrtGraph *graph, const std::vector<const OrtNode *> &nodes,
                          const std::vector<std::string> &outputs);

/// A serialized onnx.TensorProto holding `size` bytes of `type` and shape
/// `dims`.
std::string tensorProto(const std::string &name, ONNXTensorElementDataType type,
                        const std::vector<int64_t> &dims, const void *data, size_t size);

/// Helpers over the ORT graph API.
std::string valueName(const OrtValueInfo *value);
std::vector<const OrtNode *> graphNodes(const OrtGraph *graph);
std::vector<const OrtValueInfo *> graphInputs(const OrtGraph *graph);
std::vector<const OrtValueInfo *> graphOutputs(const OrtGraph *graph);
std::vector<const OrtValueInfo *> graphInitializers(const OrtGraph *graph);
std::vector<const OrtValueInfo *> nodeInputs(const OrtNode *node);
std::vector<const OrtValueInfo *> nodeOutputs(const OrtNode *node);
std::vector<const OrtValueInfo *> nodeImplicitInputs(const OrtNode *node);
std::string nodeOpType(const OrtNode *node);
std::string nodeDomain(const OrtNode *node);
std::string nodeName(const OrtNode *node);
size_t nodeId(const OrtNode *node);
/// "'name' (OpType)" for messages.
std::string describeNode(const OrtNode *node);
/// A string attribute's bytes; false when the node has no such attribute.
bool stringAttribute(const OrtNode *node, const char *name, std::string &value);
bool intAttribute(const OrtNode *node, const char *name, int64_t &value);

} // namespace cgc::ort_ep

#endif // CGC_ORT_EP_GRAPHEXPORT_H
