//===- GraphExport.cpp - ONNX Runtime graphs as ONNX models ---------------===//

#include "GraphExport.h"

#include "ProtoWriter.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <set>

namespace cgc::ort_ep {

using namespace onnx_field;

//===----------------------------------------------------------------------===//
// Helpers over the ORT graph API
//===----------------------------------------------------------------------===//

std::string valueName(const OrtValueInfo *value) {
  if (!value)
    return "";
  const char *name = nullptr;
  check(ort->GetValueInfoName(value, &name), "GetValueInfoName");
  return name ? name : "";
}

namespace {

/// A list the ORT graph API gives in two calls: its length (`count`), then
/// its items (`get`), both members of OrtApi taking `handle`.
template <typename Item, typename Handle, typename CountFn, typename GetFn>
std::vector<Item> listOf(const Handle *handle, CountFn OrtApi::*count, GetFn OrtApi::*get,
                         const char *what) {
  size_t n = 0;
  check((ort->*count)(handle, &n), what);
  std::vector<Item> items(n);
  if (n)
    check((ort->*get)(handle, items.data(), n), what);
  return items;
}

} // namespace

std::vector<const OrtNode *> graphNodes(const OrtGraph *graph) {
  return listOf<const OrtNode *>(graph, &OrtApi::Graph_GetNumNodes, &OrtApi::Graph_GetNodes,
                                 "Graph_GetNodes");
}

std::vector<const OrtValueInfo *> graphInputs(const OrtGraph *graph) {
  return listOf<const OrtValueInfo *>(graph, &OrtApi::Graph_GetNumInputs,
                                      &OrtApi::Graph_GetInputs, "Graph_GetInputs");
}

std::vector<const OrtValueInfo *> graphOutputs(const OrtGraph *graph) {
  return listOf<const OrtValueInfo *>(graph, &OrtApi::Graph_GetNumOutputs,
                                      &OrtApi::Graph_GetOutputs, "Graph_GetOutputs");
}

std::vector<const OrtValueInfo *> graphInitializers(const OrtGraph *graph) {
  return listOf<const OrtValueInfo *>(graph, &OrtApi::Graph_GetNumInitializers,
                                      &OrtApi::Graph_GetInitializers, "Graph_GetInitializers");
}

std::vector<const OrtValueInfo *> nodeInputs(const OrtNode *node) {
  return listOf<const OrtValueInfo *>(node, &OrtApi::Node_GetNumInputs, &OrtApi::Node_GetInputs,
                                      "Node_GetInputs");
}

std::vector<const OrtValueInfo *> nodeOutputs(const OrtNode *node) {
  return listOf<const OrtValueInfo *>(node, &OrtApi::Node_GetNumOutputs,
                                      &OrtApi::Node_GetOutputs, "Node_GetOutputs");
}

std::vector<const OrtValueInfo *> nodeImplicitInputs(const OrtNode *node) {
  return listOf<const OrtValueInfo *>(node, &OrtApi::Node_GetNumImplicitInputs,
                                      &OrtApi::Node_GetImplicitInputs, "Node_GetImplicitInputs");
}

std::string nodeOpType(const OrtNode *node) {
  const char *s = nullptr;
  check(ort->Node_GetOperatorType(node, &s), "Node_GetOperatorType");
  return s ? s : "";
}

std::string nodeDomain(const OrtNode *node) {
  const char *s = nullptr;
  check(ort->Node_GetDomain(node, &s), "Node_GetDomain");
  return s ? s : "";
}

std::string nodeName(const OrtNode *node) {
  const char *s = nullptr;
  check(ort->Node_GetName(node, &s), "Node_GetName");
  return s ? s : "";
}

size_t nodeId(const OrtNode *node) {
  size_t id = 0;
  check(ort->Node_GetId(node, &id), "Node_GetId");
  return id;
}

std::string describeNode(const OrtNode *node) {
  std::string name = nodeName(node);
  return "node '" + (name.empty() ? "#" + std::to_string(nodeId(node)) : name) + "' (" +
         nodeOpType(node) + ")";
}

namespace {

const OrtOpAttr *findAttribute(const OrtNode *node, const char *name) {
  const OrtOpAttr *attr = nullptr;
  OrtStatus *status = ort->Node_GetAttributeByName(node, name, &attr);
  if (status) { // ORT reports a missing attribute as an error
    ort->ReleaseStatus(status);
    return nullptr;
  }
  return attr;
}

/// ReadOpAttr into a buffer sized by a first call.
std::string readAttribute(const OrtOpAttr *attr, OrtOpAttrType type) {
  size_t size = 0;
  if (OrtStatus *status = ort->ReadOpAttr(attr, type, nullptr, 0, &size))
    ort->ReleaseStatus(status); // "buffer too small", with the size needed
  std::string bytes(size, '\0');
  if (size)
    check(ort->ReadOpAttr(attr, type, bytes.data(), size, &size), "ReadOpAttr");
  bytes.resize(size);
  return bytes;
}

} // namespace

bool stringAttribute(const OrtNode *node, const char *name, std::string &value) {
  const OrtOpAttr *attr = findAttribute(node, name);
  if (!attr)
    return false;
  OrtOpAttrType type;
  check(ort->OpAttr_GetType(attr, &type), "OpAttr_GetType");
  if (type != ORT_OP_ATTR_STRING)
    return false;
  value = readAttribute(attr, ORT_OP_ATTR_STRING);
  return true;
}

bool intAttribute(const OrtNode *node, const char *name, int64_t &value) {
  const OrtOpAttr *attr = findAttribute(node, name);
  if (!attr)
    return false;
  OrtOpAttrType type;
  check(ort->OpAttr_GetType(attr, &type), "OpAttr_GetType");
  if (type != ORT_OP_ATTR_INT)
    return false;
  size_t size = 0;
  check(ort->ReadOpAttr(attr, ORT_OP_ATTR_INT, &value, sizeof(value), &size), "ReadOpAttr");
  return true;
}

bool ExportedValue::isStatic() const {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

bool ExportedModel::isStatic() const {
  return std::all_of(inputs.begin(), inputs.end(),
                     [](const ExportedValue &v) { return v.isStatic(); });
}

//===----------------------------------------------------------------------===//
// The exporter
//===----------------------------------------------------------------------===//

namespace {

class Exporter {
public:
  explicit Exporter(const OrtGraph *graph) : graph(graph) {}

  ExportedModel run(const std::vector<const OrtNode *> &nodes,
                    const std::vector<std::string> &outputs);

private:
  /// Nodes in topological order, ready nodes by id: the same order for the
  /// same nodes wherever they come from.
  std::vector<const OrtNode *> sorted(const std::vector<const OrtNode *> &nodes);
  ExportedValue describe(const OrtValueInfo *value, const OrtNode *user, bool withShape);
  void writeValueInfo(ProtoWriter &g, int field, const ExportedValue &value, bool withShape);
  void writeTensor(ProtoWriter &t, const std::string &name, const OrtValue *value,
                   const OrtNode *user);
  void writeNode(ProtoWriter &g, const OrtNode *node, const std::string &name);
  void writeSubgraph(ProtoWriter &g, const OrtGraph *graph, const OrtNode *owner);
  std::string uniqueName(const OrtNode *node);

  const OrtGraph *graph;
  std::set<std::string> usedNames;
  std::set<std::string> domainsUsed = {""}; // ai.onnx always
  ExportedModel model;
};

std::vector<const OrtNode *> Exporter::sorted(const std::vector<const OrtNode *> &nodes) {
  std::map<std::string, size_t> producer; // value -> index in nodes
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const OrtValueInfo *v : nodeOutputs(nodes[i]))
      if (v)
        producer[valueName(v)] = i;
  std::vector<std::vector<size_t>> users(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0), ids(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    ids[i] = nodeId(nodes[i]);
    std::set<size_t> from;
    auto add = [&](const OrtValueInfo *v) {
      if (!v)
        return;
      auto it = producer.find(valueName(v));
      if (it != producer.end() && it->second != i)
        from.insert(it->second);
    };
    for (const OrtValueInfo *v : nodeInputs(nodes[i]))
      add(v);
    for (const OrtValueInfo *v : nodeImplicitInputs(nodes[i]))
      add(v);
    pending[i] = from.size();
    for (size_t p : from)
      users[p].push_back(i);
  }
  using Item = std::pair<size_t, size_t>; // (id, index)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!pending[i])
      ready.push({ids[i], i});
  std::vector<const OrtNode *> order;
  while (!ready.empty()) {
    size_t i = ready.top().second;
    ready.pop();
    order.push_back(nodes[i]);
    for (size_t u : users[i])
      if (--pending[u] == 0)
        ready.push({ids[u], u});
  }
  if (order.size() != nodes.size())
    fail(ORT_INVALID_GRAPH, "the nodes given to the EP form a cycle");
  return order;
}

ExportedValue Exporter::describe(const OrtValueInfo *value, const OrtNode *user,
                                 bool withShape) {
  ExportedValue out;
  out.name = valueName(value);
  const OrtTypeInfo *type = nullptr;
  check(ort->GetValueInfoTypeInfo(value, &type), "GetValueInfoTypeInfo");
  if (!type)
    return out;
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  check(ort->GetOnnxTypeFromTypeInfo(type, &kind), "GetOnnxTypeFromTypeInfo");
  if (kind != ONNX_TYPE_TENSOR)
    throw Unexportable{user, "value '" + out.name + "' is not a tensor (cgc binds tensors only)"};
  const OrtTensorTypeAndShapeInfo *info = nullptr;
  check(ort->CastTypeInfoToTensorInfo(type, &info), "CastTypeInfoToTensorInfo");
  check(ort->GetTensorElementType(info, &out.type), "GetTensorElementType");
  if (out.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
    throw Unexportable{user, "value '" + out.name + "' is a string tensor"};
  if (withShape) {
    size_t rank = 0;
    check(ort->GetDimensionsCount(info, &rank), "GetDimensionsCount");
    out.dims.resize(rank);
    if (rank)
      check(ort->GetDimensions(info, out.dims.data(), rank), "GetDimensions");
  }
  return out;
}

void Exporter::writeValueInfo(ProtoWriter &g, int field, const ExportedValue &value,
                              bool withShape) {
  ProtoWriter info, type, tensor;
  info.string(kValueInfoName, value.name);
  if (value.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {
    tensor.varint(kTensorTypeElemType, static_cast<uint64_t>(value.type));
    if (withShape) {
      ProtoWriter shape;
      for (int64_t d : value.dims) {
        ProtoWriter dim;
        if (d >= 0)
          dim.signedVarint(kDimValue, d);
        shape.message(kShapeDim, dim);
      }
      tensor.message(kTensorTypeShape, shape);
    }
    type.message(kTypeTensor, tensor);
    info.message(kValueInfoType, type);
  }
  g.message(field, info);
}

void Exporter::writeTensor(ProtoWriter &t, const std::string &name, const OrtValue *value,
                           const OrtNode *user) {
  OrtTensorTypeAndShapeInfo *info = nullptr;
  check(ort->GetTensorTypeAndShape(value, &info), "GetTensorTypeAndShape");
  ONNXTensorElementDataType type;
  size_t rank = 0;
  OrtStatus *status = ort->GetTensorElementType(info, &type);
  if (!status)
    status = ort->GetDimensionsCount(info, &rank);
  std::vector<int64_t> dims(rank);
  if (!status && rank)
    status = ort->GetDimensions(info, dims.data(), rank);
  ort->ReleaseTensorTypeAndShapeInfo(info);
  check(status, "tensor shape");
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
    throw Unexportable{user, "tensor '" + name + "' holds strings"};
  size_t bytes = 0;
  check(ort->GetTensorSizeInBytes(value, &bytes), "GetTensorSizeInBytes");
  const void *data = nullptr;
  check(ort->GetTensorData(value, &data), "GetTensorData");
  for (int64_t d : dims)
    t.signedVarint(kTensorDims, d);
  t.varint(kTensorDataType, static_cast<uint64_t>(type));
  if (!name.empty())
    t.string(kTensorName, name);
  t.bytes(kTensorRawData, data, bytes);
}

std::string Exporter::uniqueName(const OrtNode *node) {
  std::string name = nodeName(node);
  if (name.empty() || usedNames.count(name))
    name = nodeOpType(node) + "_" + std::to_string(nodeId(node));
  while (usedNames.count(name))
    name += "_";
  usedNames.insert(name);
  return name;
}

void Exporter::writeNode(ProtoWriter &g, const OrtNode *node, const std::string &name) {
  ProtoWriter n;
  for (const OrtValueInfo *v : nodeInputs(node))
    n.string(kNodeInput, valueName(v));
  for (const OrtValueInfo *v : nodeOutputs(node))
    n.string(kNodeOutput, valueName(v));
  n.string(kNodeName, name);
  n.string(kNodeOpType, nodeOpType(node));
  std::string domain = nodeDomain(node);
  if (!domain.empty())
    n.string(kNodeDomain, domain);
  domainsUsed.insert(domain == "ai.onnx" ? "" : domain);

  for (const OrtOpAttr *attr : listOf<const OrtOpAttr *>(node, &OrtApi::Node_GetNumAttributes,
                                                        &OrtApi::Node_GetAttributes,
                                                        "Node_GetAttributes")) {
    const char *attrName = nullptr;
    check(ort->OpAttr_GetName(attr, &attrName), "OpAttr_GetName");
    OrtOpAttrType type;
    check(ort->OpAttr_GetType(attr, &type), "OpAttr_GetType");
    ProtoWriter a;
    a.string(kAttrName, attrName);
    switch (type) {
    case ORT_OP_ATTR_INT: {
      int64_t v = 0;
      size_t size = 0;
      check(ort->ReadOpAttr(attr, type, &v, sizeof(v), &size), "ReadOpAttr");
      a.signedVarint(kAttrI, v);
      a.varint(kAttrType, kAttrTypeInt);
      break;
    }
    case ORT_OP_ATTR_FLOAT: {
      float v = 0;
      size_t size = 0;
      check(ort->ReadOpAttr(attr, type, &v, sizeof(v), &size), "ReadOpAttr");
      a.float32(kAttrF, v);
      a.varint(kAttrType, kAttrTypeFloat);
      break;
    }
    case ORT_OP_ATTR_INTS: {
      std::string bytes = readAttribute(attr, type);
      std::vector<int64_t> v(bytes.size() / sizeof(int64_t));
      std::memcpy(v.data(), bytes.data(), v.size() * sizeof(int64_t));
      a.packedInt64(kAttrInts, v.data(), v.size());
      a.varint(kAttrType, kAttrTypeInts);
      break;
    }
    case ORT_OP_ATTR_FLOATS: {
      std::string bytes = readAttribute(attr, type);
      std::vector<float> v(bytes.size() / sizeof(float));
      std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
      a.packedFloat(kAttrFloats, v.data(), v.size());
      a.varint(kAttrType, kAttrTypeFloats);
      break;
    }
    case ORT_OP_ATTR_STRING:
      a.string(kAttrS, readAttribute(attr, type));
      a.varint(kAttrType, kAttrTypeString);
      break;
    case ORT_OP_ATTR_STRINGS: {
      // ReadOpAttr gives the strings one after another, each followed by a
      // NUL (ONNX Runtime 1.30); attribute strings hold no NUL themselves.
      std::string bytes = readAttribute(attr, type);
      size_t start = 0;
      while (start < bytes.size()) {
        size_t end = bytes.find('\0', start);
        if (end == std::string::npos)
          end = bytes.size();
        a.string(kAttrStrings, std::string_view(bytes).substr(start, end - start));
        start = end + 1;
      }
      a.varint(kAttrType, kAttrTypeStrings);
      break;
    }
    case ORT_OP_ATTR_TENSOR: {
      OrtValue *value = nullptr;
      check(ort->OpAttr_GetTensorAttributeAsOrtValue(attr, &value), "tensor attribute");
      if (!value)
        throw Unexportable{node, std::string("attribute '") + attrName + "' has no tensor"};
      ProtoWriter t;
      try {
        writeTensor(t, "", value, node);
      } catch (...) {
        ort->ReleaseValue(value);
        throw;
      }
      ort->ReleaseValue(value);
      a.message(kAttrT, t);
      a.varint(kAttrType, kAttrTypeTensor);
      break;
    }
    case ORT_OP_ATTR_GRAPH:
      continue; // written from Node_GetSubgraphs below
    default:
      throw Unexportable{node, std::string("attribute '") + attrName +
                                   "' has a type the ORT graph API does not expose"};
    }
    n.message(kNodeAttribute, a);
  }

  size_t subgraphs = 0;
  check(ort->Node_GetNumSubgraphs(node, &subgraphs), "Node_GetNumSubgraphs");
  if (subgraphs) {
    std::vector<const OrtGraph *> graphs(subgraphs);
    std::vector<const char *> names(subgraphs);
    check(ort->Node_GetSubgraphs(node, graphs.data(), subgraphs, names.data()),
          "Node_GetSubgraphs");
    for (size_t i = 0; i < subgraphs; ++i) {
      ProtoWriter a, sub;
      a.string(kAttrName, names[i] ? names[i] : "");
      writeSubgraph(sub, graphs[i], node);
      a.message(kAttrG, sub);
      a.varint(kAttrType, kAttrTypeGraph);
      n.message(kNodeAttribute, a);
    }
  }
  g.message(kGraphNode, n);
}

void Exporter::writeSubgraph(ProtoWriter &g, const OrtGraph *sub, const OrtNode *owner) {
  const char *name = nullptr;
  check(ort->Graph_GetName(sub, &name), "Graph_GetName");
  std::vector<const OrtNode *> nodes = sorted(graphNodes(sub));
  for (const OrtNode *node : nodes) {
    const char *ep = nullptr;
    check(ort->Node_GetEpName(node, &ep), "Node_GetEpName");
    if (ep && std::strcmp(ep, CGC_ORT_EP_NAME) == 0)
      throw Unexportable{owner, "its body holds nodes the cgc EP fused already"};
    writeNode(g, node, uniqueName(node));
  }
  g.string(kGraphName, name ? name : "subgraph");

  for (const OrtValueInfo *v : graphInitializers(sub)) {
    const OrtValue *value = nullptr;
    check(ort->ValueInfo_GetInitializerValue(v, &value), "ValueInfo_GetInitializerValue");
    if (!value)
      continue;
    ProtoWriter t;
    writeTensor(t, valueName(v), value, owner);
    g.message(kGraphInitializer, t);
  }
  for (const OrtValueInfo *v : graphInputs(sub))
    writeValueInfo(g, kGraphInput, describe(v, owner, true), true);
  for (const OrtValueInfo *v : graphOutputs(sub))
    writeValueInfo(g, kGraphOutput, describe(v, owner, true), true);
}

ExportedModel Exporter::run(const std::vector<const OrtNode *> &nodes,
                            const std::vector<std::string> &outputs) {
  std::vector<const OrtNode *> order = sorted(nodes);
  std::map<std::string, const OrtValueInfo *> produced;
  for (const OrtNode *node : order)
    for (const OrtValueInfo *v : nodeOutputs(node))
      if (v)
        produced[valueName(v)] = v;

  ProtoWriter g;
  for (const OrtNode *node : order) {
    std::string name = uniqueName(node);
    model.nodeNames[name] = node;
    writeNode(g, node, name);
  }
  g.string(kGraphName, "cgc_partition");

  // What the nodes read and do not produce, in the order of first use.
  std::set<std::string> seen;
  for (const OrtNode *node : order) {
    std::vector<const OrtValueInfo *> reads = nodeInputs(node);
    for (const OrtValueInfo *v : nodeImplicitInputs(node))
      reads.push_back(v);
    for (const OrtValueInfo *v : reads) {
      std::string name = valueName(v);
      if (name.empty() || produced.count(name) || !seen.insert(name).second)
        continue;
      const OrtValue *initializer = nullptr;
      check(ort->ValueInfo_GetInitializerValue(v, &initializer), "ValueInfo_GetInitializerValue");
      bool constant = false;
      if (initializer)
        check(ort->ValueInfo_IsConstantInitializer(v, &constant), "ValueInfo_IsConstantInitializer");
      if (initializer && constant) {
        ProtoWriter t;
        writeTensor(t, name, initializer, node);
        g.message(kGraphInitializer, t);
        continue;
      }
      ExportedValue input = describe(v, node, true);
      ProtoWriter info;
      writeValueInfo(info, kGraphInput, input, true);
      model.inputInfos.push_back(info.take());
      model.inputs.push_back(std::move(input));
    }
  }
  // Outputs in a canonical order too: by producer, then output index.
  std::map<std::string, std::pair<size_t, size_t>> rank;
  for (size_t i = 0; i < order.size(); ++i) {
    std::vector<const OrtValueInfo *> outs = nodeOutputs(order[i]);
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k])
        rank[valueName(outs[k])] = {i, k};
  }
  std::vector<std::string> ordered = outputs;
  std::sort(ordered.begin(), ordered.end(),
            [&](const std::string &a, const std::string &b) { return rank[a] < rank[b]; });
  ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
  for (const std::string &name : ordered) {
    auto it = produced.find(name);
    if (it == produced.end())
      fail(ORT_INVALID_GRAPH, "output '" + name + "' is not produced by the EP's nodes");
    ExportedValue output = describe(it->second, nullptr, true);
    // The element type only: the compiler infers shapes, and an unknown
    // rank would read as a scalar.
    writeValueInfo(g, kGraphOutput, output, false);
    model.outputs.push_back(std::move(output));
  }

  model.graphBody = g.take();
  ProtoWriter m;
  int64_t irVersion = 8;
  check(ort->Graph_GetOnnxIRVersion(graph, &irVersion), "Graph_GetOnnxIRVersion");
  m.signedVarint(kModelIrVersion, irVersion);
  m.string(kModelProducerName, "cgc onnxruntime EP");
  size_t opsets = 0;
  check(ort->Graph_GetNumOperatorSets(graph, &opsets), "Graph_GetNumOperatorSets");
  std::vector<const char *> domains(opsets);
  std::vector<int64_t> versions(opsets);
  if (opsets)
    check(ort->Graph_GetOperatorSets(graph, domains.data(), versions.data(), opsets),
          "Graph_GetOperatorSets");
  // The model's opsets of the domains the nodes use (ONNX Runtime lists every
  // domain it knows).
  for (size_t i = 0; i < opsets; ++i) {
    std::string domain = domains[i] ? domains[i] : "";
    if (!domainsUsed.count(domain == "ai.onnx" ? "" : domain))
      continue;
    ProtoWriter o;
    if (domains[i] && *domains[i])
      o.string(kOpsetDomain, domains[i]);
    o.signedVarint(kOpsetVersion, versions[i]);
    m.message(kModelOpsetImport, o);
  }
  model.header = m.take();
  model.bytes = model.assemble({});
  return std::move(model);
}

} // namespace

std::string tensorProto(const std::string &name, ONNXTensorElementDataType type,
                        const std::vector<int64_t> &dims, const void *data, size_t size) {
  ProtoWriter t;
  for (int64_t d : dims)
    t.signedVarint(kTensorDims, d);
  t.varint(kTensorDataType, static_cast<uint64_t>(type));
  t.string(kTensorName, name);
  t.bytes(kTensorRawData, data, size);
  return t.take();
}

std::string ExportedModel::assemble(const std::map<std::string, std::string> &frozen) const {
  // Fields of one message may come in any order and a repeated field's
  // entries are read in order, so the parts are concatenated as written:
  // the inputs (each field 11, a ValueInfoProto, already tagged) after the
  // body, the frozen values as initializers.
  std::string graph = graphBody;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = frozen.find(inputs[i].name);
    if (it == frozen.end()) {
      graph += inputInfos[i];
      continue;
    }
    ProtoWriter init;
    init.bytes(kGraphInitializer, it->second.data(), it->second.size());
    graph += init.data();
  }
  ProtoWriter m;
  m.bytes(kModelGraph, graph.data(), graph.size());
  return header + m.data();
}

ExportedModel exportNodes(const OrtGraph *graph, const std::vector<const OrtNode *> &nodes,
                          const std::vector<std::string> &outputs) {
  return Exporter(graph).run(nodes, outputs);
}

} // namespace cgc::ort_ep
