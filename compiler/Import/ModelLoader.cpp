//===- ModelLoader.cpp - Reading and checking an ONNX model ---------------===//
//
// Everything before conversion: reading the file (binary protobuf, ONNX text
// syntax or protobuf text), moving constant bytes into the ConstantStore
// (taking over protobuf's strings, mapping external data), checking the graph
// (names, dangling inputs, cycles, op support, node validity), binding input
// shapes and frozen inputs, and running ONNX shape inference.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include "cgc/IR/CGCDialect.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "compiler/Import/Locations.h"
#include "compiler/Import/MappedModel.h"
#include "compiler/Import/OnnxGlue.h"
#include "cgc/checked.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Errno.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>
#include <set>
#include <queue>

using namespace mlir;

namespace cgc {
namespace {

using import::getElementTypeForONNX;
using import::getONNXDataTypeName;
using import::nodeLabel;

/// Constants at most this large keep a copy of their bytes in the protobuf
/// so that ONNX shape inference can read them (shape operands); larger ones
/// live only in the ConstantStore.
constexpr size_t kKeepForShapeInference = 64 * 1024;

/// How deep subgraphs (If branches, Loop and Scan bodies) may nest. Real
/// models nest a few levels; the importer's walks recurse once per level.
constexpr unsigned kMaxSubgraphDepth = 16;
/// How deep brackets may nest in ONNX text syntax (each subgraph takes a few
/// levels): ONNX's parser recurses on them without a limit.
constexpr unsigned kMaxTextNesting = 128;

/// Notes naming unsupported nodes at their locations, at most (diagnostic
/// handlers print the first few; the ONNX Runtime EP reads them all).
constexpr size_t kMaxUnsupportedNotes = 4096;
/// The most tensors a sequence graph input may hold (each is a model input
/// of its own).
constexpr int64_t kMaxSequenceInputLength = 4096;

/// Every name `graph` and its subgraphs define.
void collectDefinedNames(const onnx::GraphProto &graph, llvm::StringSet<> &names) {
  for (const onnx::ValueInfoProto &input : graph.input())
    names.insert(input.name());
  for (const onnx::TensorProto &initializer : graph.initializer())
    names.insert(initializer.name());
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &output : node.output())
      names.insert(output);
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g())
        collectDefinedNames(attribute.g(), names);
      for (const onnx::GraphProto &subgraph : attribute.graphs())
        collectDefinedNames(subgraph, names);
    }
  }
}

/// Renames every read of `from` to `to` in `graph`'s nodes, subgraphs
/// included (ONNX names are unique across nested graphs).
void renameReads(onnx::GraphProto &graph, const std::string &from, const std::string &to) {
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    for (std::string &input : *node.mutable_input())
      if (input == from)
        input = to;
    for (onnx::AttributeProto &attribute : *node.mutable_attribute()) {
      if (attribute.has_g())
        renameReads(*attribute.mutable_g(), from, to);
      for (onnx::GraphProto &subgraph : *attribute.mutable_graphs())
        renameReads(subgraph, from, to);
    }
  }
}

std::string normalizeDomain(StringRef domain) {
  return domain == "ai.onnx" ? "" : domain.str();
}

std::string domainLabel(StringRef domain) {
  return domain.empty() ? "ai.onnx" : domain.str();
}

class ModelLoader {
public:
  ModelLoader(MLIRContext *context, StringRef path,
              const ImportOptions &options, onnx::ModelProto &model,
              ConstantStore &store)
      : context(context), path(path.str()), options(options), model(model),
        store(store), fileLoc(getONNXFileLoc(context, path)) {}

  LogicalResult read();
  /// The model's bytes are `bytes`, not the file at `path`.
  void setBytes(std::shared_ptr<llvm::MemoryBuffer> bytes) { given = std::move(bytes); }
  LogicalResult checkHeader();
  LogicalResult moveConstants();
  LogicalResult checkGraph();
  LogicalResult bindInputs();
  LogicalResult inferShapes();

private:
  InFlightDiagnostic error() { return emitError(fileLoc); }
  Location nodeLoc(const onnx::NodeProto &node) {
    return getONNXNodeLoc(context, nodeLabel(node), node.op_type(), path);
  }
  Location valueLoc(StringRef name) {
    return getONNXValueLoc(context, name, path);
  }

  LogicalResult moveTensor(onnx::TensorProto &tensor, StringRef storeName,
                           std::optional<ArrayRef<uint8_t>> mappedRaw);
  FailureOr<std::shared_ptr<llvm::MemoryBuffer>>
  openExternalFile(StringRef location, StringRef tensorName);
  LogicalResult checkGraphStructure(onnx::GraphProto &graph,
                                    const llvm::StringSet<> &outer);
  void collectFreeNames(const onnx::GraphProto &graph,
                        llvm::StringSet<> &names);
  LogicalResult checkNodes(const onnx::GraphProto &graph);
  LogicalResult checkAxesBeforeInference();
  LogicalResult expandAggregateInputs(const llvm::StringSet<> &initializers);
  bool isSupported(const onnx::NodeProto &node, int opset,
                   const onnx::OpSchema *schema);

  MLIRContext *context;
  std::string path;
  std::shared_ptr<llvm::MemoryBuffer> given;
  const ImportOptions &options;
  /// options.inputShapes with positional names (#N) resolved (bindInputs).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  onnx::ModelProto &model;
  ConstantStore &store;
  Location fileLoc;
  import::OpsetMap opsets;
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> externalFiles;
  /// Where the raw data of the model's tensors lie in the mapped file.
  import::MappedTensorData mapped;
  /// Unsupported op type -> number of nodes and the first node names.
  std::map<std::string, std::pair<int, std::vector<std::string>>> unsupported;
  /// The first unsupported nodes, for notes at their locations (which tell
  /// integrations such as the ONNX Runtime EP which nodes to leave).
  std::vector<Location> unsupportedNodes;
};

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

LogicalResult ModelLoader::read() {
  StringRef extension = given ? StringRef() : llvm::sys::path::extension(path);
  bool onnxText = extension == ".onnxtxt";
  bool protoText = extension == ".pbtxt" || extension == ".textproto";
  if (onnxText || protoText) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      return error() << "cannot read the model: " << buffer.getError().message();
    std::string text = (*buffer)->getBuffer().str();
    // ONNX's text parser recurses once per bracket level (subgraphs, types
    // like seq(seq(...))) with no limit of its own: bound the nesting first.
    if (onnxText) {
      unsigned depth = 0, deepest = 0;
      for (size_t i = 0; i < text.size() && deepest <= kMaxTextNesting; ++i) {
        char c = text[i];
        if (c == '"') { // a string literal: skip it, escapes included
          for (++i; i < text.size() && text[i] != '"'; ++i)
            i += text[i] == '\\';
        } else if (c == '#') { // a comment, to the end of the line
          while (i < text.size() && text[i] != '\n')
            ++i;
        } else if (c == '(' || c == '[' || c == '{') {
          deepest = std::max(deepest, ++depth);
        } else if ((c == ')' || c == ']' || c == '}') && depth) {
          --depth;
        }
      }
      if (deepest > kMaxTextNesting)
        return error() << "cannot parse the model as ONNX text syntax: "
                          "brackets nest more than "
                       << kMaxTextNesting << " deep";
    }
    std::string message = onnxText ? onnx_glue::parseTextModel(text, model)
                                   : onnx_glue::parseProtoTextModel(text, model);
    if (!message.empty())
      return error() << "cannot parse the model as "
                     << (onnxText ? "ONNX text syntax" : "protobuf text")
                     << ": " << message;
    return success();
  }

  // Mapped, not read: the weights stay in the file's pages (see
  // MappedModel.h), which become resident only when something reads them.
  std::shared_ptr<llvm::MemoryBuffer> bytes = given;
  if (!bytes) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false,
                                              /*IsVolatile=*/false);
    if (!buffer)
      return error() << "cannot open the model: " << buffer.getError().message();
    bytes = std::move(*buffer);
  }
  if (bytes->getBufferSize() == 0)
    return error() << (given ? "the model is empty (0 bytes)" : "the model file is empty");
  size_t size = bytes->getBufferSize();
  std::string message = import::parseMappedModel(std::move(bytes), model,
                                                 mapped);
  if (!message.empty())
    return error() << "not a valid ONNX model (" << size
                   << " bytes; truncated or another format): " << message;
  return success();
}

LogicalResult ModelLoader::checkHeader() {
  if (!model.has_graph())
    return error() << "not a valid ONNX model: it has no graph";
  // Every later step walks subgraphs recursively: their nesting is bounded
  // first, without recursion.
  std::vector<std::pair<const onnx::GraphProto *, unsigned>> pending = {
      {&model.graph(), 0}};
  while (!pending.empty()) {
    auto [graph, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxSubgraphDepth)
      return error() << "subgraphs (of If, Loop, Scan) nest more than "
                     << kMaxSubgraphDepth << " deep";
    for (const onnx::NodeProto &node : graph->node())
      for (const onnx::AttributeProto &attribute : node.attribute()) {
        if (attribute.has_g())
          pending.push_back({&attribute.g(), depth + 1});
        for (const onnx::GraphProto &subgraph : attribute.graphs())
          pending.push_back({&subgraph, depth + 1});
      }
  }
  if (model.ir_version() <= 0)
    return error() << "not a valid ONNX model: it has no IR version";
  if (model.ir_version() > 10)
    return error() << "ONNX IR version " << model.ir_version()
                   << " is newer than cgc knows (up to 10)";
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    std::string domain = normalizeDomain(opset.domain());
    if (opsets.count(domain))
      return error() << "the model imports opset domain '"
                     << domainLabel(domain) << "' twice";
    opsets[domain] = static_cast<int>(opset.version());
    auto [low, high] = onnx_glue::getOpsetRange(domain);
    bool local = llvm::any_of(model.functions(), [&](const auto &function) {
      return normalizeDomain(function.domain()) == domain;
    });
    if (high == 0) {
      if (!local)
        continue; // an unknown domain; nodes using it are reported below
    } else if (opset.version() < low || opset.version() > high) {
      return error() << "the model imports opset " << domainLabel(domain)
                     << " version " << opset.version()
                     << ", which cgc does not know (it supports versions "
                     << low << " to " << high << ")";
    }
  }
  if (!opsets.count(""))
    opsets[""] = 1;
  return success();
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

FailureOr<std::shared_ptr<llvm::MemoryBuffer>>
ModelLoader::openExternalFile(StringRef location, StringRef tensorName) {
  if (location.empty() || llvm::sys::path::is_absolute(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return emitError(valueLoc(tensorName))
           << "external data location '" << location
           << "' must be a relative path inside the model's directory";
  auto it = externalFiles.find(location);
  if (it != externalFiles.end())
    return it->second;
  if (given && llvm::sys::path::parent_path(path).empty())
    return emitError(valueLoc(tensorName))
           << "external data location '" << location
           << "': the model was given as bytes without a path, so it has no "
              "directory to read external data from";
  SmallString<256> full = llvm::sys::path::parent_path(path);
  llvm::sys::path::append(full, location);
  // The location is relative and has no '..', but a symbolic link inside the
  // model's directory (the file or a folder on the way) may still lead out of
  // it: the resolved path must lie inside the resolved directory.
  SmallString<256> directory = llvm::sys::path::parent_path(path);
  if (directory.empty())
    directory = ".";
  SmallString<256> realDirectory, realFull;
  if (!llvm::sys::fs::real_path(directory, realDirectory) &&
      !llvm::sys::fs::real_path(full, realFull)) {
    StringRef inside(realFull);
    if (!inside.consume_front(realDirectory) ||
        !(inside.empty() || llvm::sys::path::is_separator(inside.front())))
      return emitError(valueLoc(tensorName))
             << "external data location '" << location
             << "' leads out of the model's directory through a symbolic "
                "link (to '"
             << realFull << "')";
  }
  // Mapped, not read: only the pages the importer looks at become resident.
  auto buffer = llvm::MemoryBuffer::getFile(full, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false,
                                            /*IsVolatile=*/false);
  if (!buffer)
    return emitError(valueLoc(tensorName))
           << "cannot open external data file '" << full.str()
           << "': " << buffer.getError().message();
  std::shared_ptr<llvm::MemoryBuffer> shared = std::move(*buffer);
  externalFiles[location] = shared;
  return shared;
}

LogicalResult
ModelLoader::moveTensor(onnx::TensorProto &tensor, StringRef storeName,
                        std::optional<ArrayRef<uint8_t>> mappedRaw) {
  Location loc = valueLoc(storeName);
  if (!getElementTypeForONNX(context, tensor.data_type()))
    return emitError(loc) << "constant '" << storeName << "' has element type "
                          << getONNXDataTypeName(tensor.data_type())
                          << ", which cgc does not support";
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  for (int64_t dim : shape)
    if (dim < 0)
      return emitError(loc) << "constant '" << storeName
                            << "' has a negative dimension (" << dim << ")";
  auto dtype = static_cast<cgc_dtype_t>(tensor.data_type());
  std::optional<uint64_t> checkedBytes =
      tensorBytes(shape, cgc_dtype_size(dtype));
  if (!checkedBytes)
    return emitError(loc) << "constant '" << storeName << "': "
                          << tensorSizeError(shape, cgc_dtype_size(dtype));
  size_t bytes = *checkedBytes;

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
      unsigned long long value = 0;
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset" || entry.key() == "length") {
        if (StringRef(entry.value()).trim().starts_with("-"))
          return emitError(loc) << "external data " << entry.key() << " '"
                                << entry.value() << "' of '" << storeName
                                << "' is negative";
        if (!llvm::to_integer(entry.value(), value, 10))
          return emitError(loc) << "external data " << entry.key() << " '"
                                << entry.value() << "' of '" << storeName
                                << "' is not a number";
        if (entry.key() == "offset")
          offset = value;
        else
          length = value;
      }
    }
    if (location.empty())
      return emitError(loc) << "external data of '" << storeName
                            << "' has no location";
    FailureOr<std::shared_ptr<llvm::MemoryBuffer>> file =
        openExternalFile(location, storeName);
    if (failed(file))
      return failure();
    if (length && *length != bytes)
      return emitError(loc) << "external data of '" << storeName << "' is "
                            << *length << " bytes but its shape and type need "
                            << bytes;
    size_t fileSize = (*file)->getBufferSize();
    if (offset > fileSize || bytes > fileSize - offset)
      return emitError(loc) << "external data of '" << storeName
                            << "' needs bytes [" << offset << ", "
                            << (checkedAdd(uint64_t(offset), uint64_t(bytes))
                                    ? std::to_string(offset + bytes)
                                    : std::string("2^64 and beyond"))
                            << ") of '" << location
                            << "', which has only " << fileSize << " bytes";
    const uint8_t *data =
        reinterpret_cast<const uint8_t *>((*file)->getBufferStart()) + offset;
    store.addView(storeName, dtype, shape, data, bytes, *file);
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::DEFAULT);
    if (bytes <= kKeepForShapeInference)
      tensor.set_raw_data(data, bytes);
    return success();
  }

  if (mappedRaw) {
    if (mappedRaw->size() != bytes)
      return emitError(loc) << "constant '" << storeName << "' has "
                            << mappedRaw->size()
                            << " bytes of data but its shape and type need "
                            << bytes;
    store.addView(storeName, dtype, shape, mappedRaw->data(), bytes,
                  mapped.file);
    if (bytes <= kKeepForShapeInference)
      tensor.set_raw_data(mappedRaw->data(), bytes);
    return success();
  }

  if (!tensor.raw_data().empty()) {
    if (tensor.raw_data().size() != bytes)
      return emitError(loc) << "constant '" << storeName << "' has "
                            << tensor.raw_data().size()
                            << " bytes of data but its shape and type need "
                            << bytes;
    // Take over the parsed bytes: no copy of the weights is made.
    std::unique_ptr<std::string> raw(tensor.release_raw_data());
    if (bytes <= kKeepForShapeInference)
      tensor.set_raw_data(*raw);
    store.add(storeName, dtype, shape, std::move(*raw));
    return success();
  }

  HostTensor value;
  std::string message = import::decodeTensorProto(tensor, value);
  if (!message.empty())
    return emitError(loc) << message;
  std::vector<uint8_t> encoded = value.toBytes();
  if (bytes > kKeepForShapeInference) {
    tensor.clear_float_data();
    tensor.clear_int32_data();
    tensor.clear_int64_data();
    tensor.clear_double_data();
    tensor.clear_uint64_data();
  }
  store.add(storeName, dtype, shape, std::move(encoded));
  return success();
}

LogicalResult ModelLoader::moveConstants() {
  onnx::GraphProto &graph = *model.mutable_graph();
  for (int i = 0; i < graph.initializer_size(); ++i) {
    onnx::TensorProto &initializer = *graph.mutable_initializer(i);
    if (initializer.name().empty())
      return error() << "an initializer has no name";
    if (store.contains(initializer.name()))
      return emitError(valueLoc(initializer.name()))
             << "two initializers are named '" << initializer.name() << "'";
    std::optional<ArrayRef<uint8_t>> raw;
    if (static_cast<size_t>(i) < mapped.initializers.size())
      raw = mapped.initializers[i];
    if (failed(moveTensor(initializer, initializer.name(), raw)))
      return failure();
  }
  if (graph.sparse_initializer_size() > 0)
    return emitError(valueLoc(graph.sparse_initializer(0).values().name()))
           << "sparse initializers are not supported";

  // Constant nodes holding a tensor become initializers, so that their bytes
  // too move to the store once and shape inference still sees them. Other
  // tensor attributes get their mapped bytes back.
  auto *nodes = graph.mutable_node();
  auto becomesInitializer = [&](const onnx::NodeProto &node) {
    return node.op_type() == "Constant" &&
           normalizeDomain(node.domain()).empty() &&
           node.attribute_size() == 1 && node.attribute(0).name() == "value" &&
           node.attribute(0).has_t() && node.output_size() == 1 &&
           !node.output(0).empty() && !store.contains(node.output(0));
  };
  for (const auto &[position, raw] : mapped.nodeAttributes) {
    auto [nodeIndex, attributeIndex] = position;
    onnx::NodeProto &node = (*nodes)[nodeIndex];
    if (!becomesInitializer(node))
      node.mutable_attribute(attributeIndex)
          ->mutable_t()
          ->set_raw_data(raw.data(), raw.size());
  }
  for (int i = 0, original = 0; i < nodes->size(); ++original) {
    onnx::NodeProto &node = (*nodes)[i];
    if (!becomesInitializer(node)) {
      ++i;
      continue;
    }
    onnx::TensorProto tensor = std::move(*node.mutable_attribute(0)->mutable_t());
    tensor.set_name(node.output(0));
    std::optional<ArrayRef<uint8_t>> raw;
    auto it = mapped.nodeAttributes.find({original, 0});
    if (it != mapped.nodeAttributes.end())
      raw = it->second;
    if (failed(moveTensor(tensor, tensor.name(), raw)))
      return failure();
    *graph.add_initializer() = std::move(tensor);
    nodes->erase(nodes->begin() + i);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Graph checks
//===----------------------------------------------------------------------===//

/// Names a graph and its nested subgraphs read without defining them.
void ModelLoader::collectFreeNames(const onnx::GraphProto &graph,
                                   llvm::StringSet<> &names) {
  llvm::StringSet<> defined;
  for (const auto &input : graph.input())
    defined.insert(input.name());
  for (const auto &initializer : graph.initializer())
    defined.insert(initializer.name());
  for (const auto &node : graph.node())
    for (const std::string &output : node.output())
      defined.insert(output);
  auto use = [&](const std::string &name) {
    if (!name.empty() && !defined.contains(name))
      names.insert(name);
  };
  for (const auto &node : graph.node()) {
    for (const std::string &input : node.input())
      use(input);
    for (const auto &attribute : node.attribute()) {
      llvm::StringSet<> inner;
      if (attribute.has_g())
        collectFreeNames(attribute.g(), inner);
      for (const auto &subgraph : attribute.graphs())
        collectFreeNames(subgraph, inner);
      for (const auto &name : inner)
        use(name.getKey().str());
    }
  }
  for (const auto &output : graph.output())
    use(output.name());
}

LogicalResult
ModelLoader::checkGraphStructure(onnx::GraphProto &graph,
                                 const llvm::StringSet<> &outer) {
  llvm::StringSet<> graphValues; // inputs and initializers
  for (const auto &input : graph.input()) {
    if (input.name().empty())
      return error() << "a graph input has no name";
    if (!graphValues.insert(input.name()).second)
      return emitError(valueLoc(input.name()))
             << "two graph inputs are named '" << input.name() << "'";
  }
  for (const auto &initializer : graph.initializer())
    graphValues.insert(initializer.name());

  // Every value has one producer.
  llvm::StringMap<int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &output : node.output()) {
      if (output.empty())
        continue;
      if (graphValues.contains(output))
        return emitError(nodeLoc(node))
               << "output '" << output
               << "' redefines a graph input or initializer of that name";
      auto [it, inserted] = producer.try_emplace(output, i);
      if (!inserted) {
        const onnx::NodeProto &first = graph.node(it->second);
        return emitError(nodeLoc(node))
               << "output '" << output << "' is also produced by node '"
               << nodeLabel(first) << "' (" << first.op_type()
               << "); every value must have one producer";
      }
    }
  }

  // Every input is defined.
  auto isDefined = [&](const std::string &name) {
    return graphValues.contains(name) || producer.count(name) ||
           outer.contains(name);
  };
  std::vector<llvm::StringSet<>> nodeReads(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (int j = 0; j < node.input_size(); ++j) {
      const std::string &input = node.input(j);
      if (input.empty())
        continue;
      if (!isDefined(input))
        return emitError(nodeLoc(node))
               << "input #" << j << " '" << input
               << "' is not a graph input, an initializer or the output of "
                  "any node (a dangling input)";
      nodeReads[i].insert(input);
    }
    for (const auto &attribute : node.attribute()) {
      llvm::StringSet<> free;
      if (attribute.has_g())
        collectFreeNames(attribute.g(), free);
      for (const auto &subgraph : attribute.graphs())
        collectFreeNames(subgraph, free);
      for (const auto &name : free) {
        if (!isDefined(name.getKey().str()))
          return emitError(nodeLoc(node))
                 << "subgraph '" << attribute.name() << "' reads '"
                 << name.getKey() << "', which is not defined";
        nodeReads[i].insert(name.getKey());
      }
    }
  }
  for (const auto &output : graph.output())
    if (!isDefined(output.name()))
      return emitError(valueLoc(output.name()))
             << "graph output '" << output.name()
             << "' is not produced by any node, graph input or initializer";

  // Topological order (Kahn, keeping the original order where it is valid).
  int count = graph.node_size();
  std::vector<int> pending(count, 0);
  std::vector<std::vector<int>> users(count);
  for (int i = 0; i < count; ++i)
    for (const auto &read : nodeReads[i]) {
      auto it = producer.find(read.getKey());
      if (it == producer.end())
        continue;
      ++pending[i];
      users[it->second].push_back(i);
    }
  // The lowest-numbered ready node first: a sorted graph keeps its order.
  std::vector<int> order;
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i)
    if (pending[i] == 0)
      ready.push(i);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int user : users[i])
      if (--pending[user] == 0)
        ready.push(user);
  }
  if (static_cast<int>(order.size()) != count) {
    // Peel the nodes that only hang below a cycle: what stays is on one.
    std::vector<bool> left(count);
    for (int i = 0; i < count; ++i)
      left[i] = pending[i] != 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = 0; i < count; ++i) {
        if (!left[i])
          continue;
        bool feedsCycle = llvm::any_of(users[i], [&](int u) { return left[u]; });
        if (!feedsCycle) {
          left[i] = false;
          changed = true;
        }
      }
    }
    for (int i = 0; i < count; ++i)
      pending[i] = left[i] ? pending[i] : 0;
    InFlightDiagnostic diag = error();
    diag << "the graph has a cycle: ";
    int listed = 0;
    for (int i = 0; i < count && listed < 5; ++i) {
      if (pending[i] == 0)
        continue;
      diag << (listed++ ? ", " : "nodes ") << "'" << nodeLabel(graph.node(i))
           << "' (" << graph.node(i).op_type() << ")";
    }
    diag << " depend on each other";
    return failure();
  }
  bool sorted = true;
  for (int i = 0; i < count; ++i)
    sorted = sorted && order[i] == i;
  if (!sorted) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> reordered;
    for (int i : order)
      *reordered.Add() = std::move(*graph.mutable_node(i));
    graph.mutable_node()->Swap(&reordered);
  }

  // Subgraphs see every value of this graph and the enclosing ones.
  llvm::StringSet<> visible = outer;
  for (const auto &name : graphValues)
    visible.insert(name.getKey());
  for (const auto &entry : producer)
    visible.insert(entry.getKey());
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attribute : *node.mutable_attribute()) {
      if (attribute.has_g() &&
          failed(checkGraphStructure(*attribute.mutable_g(), visible)))
        return failure();
      for (onnx::GraphProto &subgraph : *attribute.mutable_graphs())
        if (failed(checkGraphStructure(subgraph, visible)))
          return failure();
    }
  return success();
}

bool ModelLoader::isSupported(const onnx::NodeProto &node, int opset,
                              const onnx::OpSchema *schema) {
  std::string domain = normalizeDomain(node.domain());
  if (llvm::any_of(model.functions(), [&](const onnx::FunctionProto &f) {
        return normalizeDomain(f.domain()) == domain &&
               f.name() == node.op_type();
      }))
    return true;
  if (!schema)
    return false;
  return import::getConverters().lookup(domain, node.op_type()) ||
         onnx_glue::hasFunctionBody(*schema);
}

LogicalResult ModelLoader::checkNodes(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node()) {
    std::string domain = normalizeDomain(node.domain());
    auto it = opsets.find(domain);
    const onnx::OpSchema *schema =
        it == opsets.end()
            ? nullptr
            : onnx_glue::lookupSchema(node.op_type(), domain, it->second);
    if (it == opsets.end() || !isSupported(node, it->second, schema)) {
      std::string key = (domain.empty() ? "" : domain + ".") + node.op_type();
      auto &[count, names] = unsupported[key];
      ++count;
      if (names.size() < 3)
        names.push_back(nodeLabel(node));
      if (unsupportedNodes.size() < kMaxUnsupportedNotes)
        unsupportedNodes.push_back(nodeLoc(node));
    }
    for (const auto &attribute : node.attribute()) {
      if (attribute.has_g() && failed(checkNodes(attribute.g())))
        return failure();
      for (const auto &subgraph : attribute.graphs())
        if (failed(checkNodes(subgraph)))
          return failure();
    }
  }
  return success();
}

LogicalResult ModelLoader::checkGraph() {
  onnx::GraphProto &graph = *model.mutable_graph();
  if (failed(checkGraphStructure(graph, {})))
    return failure();
  if (failed(checkNodes(graph)))
    return failure();
  if (!unsupported.empty()) {
    int nodes = 0;
    for (const auto &entry : unsupported)
      nodes += entry.second.first;
    std::vector<std::pair<std::string, std::pair<int, std::vector<std::string>>>>
        ranked(unsupported.begin(), unsupported.end());
    // Most nodes first, then by name (the map's order).
    std::sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) {
      if (a.second.first != b.second.first)
        return a.second.first > b.second.first;
      return a.first < b.first;
    });
    InFlightDiagnostic diag = error();
    diag << "the model uses " << ranked.size() << " op type"
         << (ranked.size() == 1 ? "" : "s") << " that cgc cannot import ("
         << nodes << " node" << (nodes == 1 ? "" : "s") << "): ";
    bool first = true;
    for (const auto &[type, entry] : ranked) {
      diag << (first ? "" : "; ") << type << " (" << entry.first << " node"
           << (entry.first == 1 ? "" : "s") << ": ";
      first = false;
      for (size_t i = 0; i < entry.second.size(); ++i)
        diag << (i ? ", " : "") << "'" << entry.second[i] << "'";
      if (entry.first > static_cast<int>(entry.second.size()))
        diag << ", ...";
      diag << ")";
    }
    for (Location loc : unsupportedNodes)
      diag.attachNote(loc) << "cgc cannot import this node";
    return failure();
  }
  // Each node against its schema (arity, attribute names and types).
  std::function<LogicalResult(const onnx::GraphProto &)> verifyNodes =
      [&](const onnx::GraphProto &g) -> LogicalResult {
    for (const onnx::NodeProto &node : g.node()) {
      std::string domain = normalizeDomain(node.domain());
      const onnx::OpSchema *schema =
          onnx_glue::lookupSchema(node.op_type(), domain, opsets[domain]);
      if (schema) {
        std::string message = onnx_glue::verifyNode(*schema, node);
        if (!message.empty()) {
          // libonnx's messages end with a copy of the node; keep the first
          // line.
          message = StringRef(message).split('\n').first.trim().str();
          return emitError(nodeLoc(node)) << "invalid node: " << message;
        }
      }
      for (const auto &attribute : node.attribute()) {
        if (attribute.has_g() && failed(verifyNodes(attribute.g())))
          return failure();
        for (const auto &subgraph : attribute.graphs())
          if (failed(verifyNodes(subgraph)))
            return failure();
      }
    }
    return success();
  };
  return verifyNodes(graph);
}

//===----------------------------------------------------------------------===//
// Input shapes and frozen inputs
//===----------------------------------------------------------------------===//

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

LogicalResult ModelLoader::bindInputs() {
  onnx::GraphProto &graph = *model.mutable_graph();
  llvm::StringSet<> initializers;
  for (const auto &initializer : graph.initializer())
    initializers.insert(initializer.name());
  if (failed(expandAggregateInputs(initializers)))
    return failure();
  llvm::StringMap<onnx::ValueInfoProto *> inputs;
  std::string inputList;
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    if (initializers.contains(input.name()))
      continue;
    inputs[input.name()] = &input;
    inputList += (inputList.empty() ? "'" : ", '") + input.name() + "'";
  }
  if (inputList.empty())
    inputList = "none";
  // Positional names (#N) become the N-th input's name.
  std::vector<std::string> order;
  for (const onnx::ValueInfoProto &input : graph.input())
    if (!initializers.contains(input.name()))
      order.push_back(input.name());
  std::map<std::string, std::vector<int64_t>> byName;
  for (const auto &[key, shape] : options.inputShapes) {
    std::string name = key;
    if (!key.empty() && key[0] == '#') {
      unsigned index = 0;
      if (StringRef(key).drop_front().getAsInteger(10, index) || index >= order.size())
        return error() << "--input-shape names input " << key << ", but the model has "
                       << order.size() << " input" << (order.size() == 1 ? "" : "s")
                       << " (" << inputList << ")";
      name = order[index];
    }
    if (byName.count(name))
      return error() << "--input-shape gives input '" << name
                     << "' twice (by name and by position)";
    byName[name] = shape;
  }
  inputShapes = std::move(byName);
  for (const auto &[name, shape] : inputShapes)
    if (!inputs.count(name))
      return error() << "--input-shape names '" << name
                     << "', which is not an input of the model (inputs: "
                     << inputList << ")";
  for (const auto &[name, file] : options.frozenInputs)
    if (!inputs.count(name))
      return error() << "--freeze-input names '" << name
                     << "', which is not an input of the model (inputs: "
                     << inputList << ")";

  // Frozen inputs become initializers.
  for (const auto &[name, file] : options.frozenInputs) {
    onnx::ValueInfoProto &input = *inputs[name];
    Location loc = valueLoc(name);
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return emitError(loc) << "cannot read --freeze-input file '" << file
                            << "': " << buffer.getError().message();
    onnx::TensorProto tensor;
    if (!tensor.ParseFromArray((*buffer)->getBufferStart(),
                               static_cast<int>((*buffer)->getBufferSize())) ||
        tensor.data_type() == 0)
      return emitError(loc) << "--freeze-input file '" << file
                            << "' is not a serialized onnx.TensorProto";
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
      return emitError(loc) << "--freeze-input file '" << file
                            << "' refers to external data; inline it";
    const auto &declared = input.type().tensor_type();
    if (!input.type().has_tensor_type() ||
        declared.elem_type() != tensor.data_type())
      return emitError(loc)
             << "--freeze-input file '" << file << "' holds "
             << getONNXDataTypeName(tensor.data_type())
             << " values but input '" << name << "' is "
             << (input.type().has_tensor_type()
                     ? getONNXDataTypeName(declared.elem_type())
                     : std::string("not a tensor"));
    if (declared.has_shape()) {
      bool matches = declared.shape().dim_size() == tensor.dims_size();
      for (int i = 0; matches && i < tensor.dims_size(); ++i)
        matches = !declared.shape().dim(i).has_dim_value() ||
                  declared.shape().dim(i).dim_value() == tensor.dims(i);
      if (!matches)
        return emitError(loc)
               << "--freeze-input file '" << file << "' holds a tensor of shape ["
               << shapeText(SmallVector<int64_t>(tensor.dims().begin(),
                                                 tensor.dims().end()))
               << "], which input '" << name << "' does not accept";
    }
    tensor.set_name(name);
    if (failed(moveTensor(tensor, name, std::nullopt)))
      return failure();
    *graph.add_initializer() = std::move(tensor);
    initializers.insert(name);
  }
  if (!options.frozenInputs.empty()) {
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      if (!options.frozenInputs.count(input.name()))
        *kept.Add() = std::move(input);
    graph.mutable_input()->Swap(&kept);
  }

  // Every remaining input gets a static shape.
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    const std::string &name = input.name();
    if (initializers.contains(name))
      continue;
    Location loc = valueLoc(name);
    if (!input.type().has_tensor_type())
      return emitError(loc) << "graph input '" << name << "' is "
                            << (input.type().has_sequence_type()   ? "a sequence"
                                : input.type().has_optional_type() ? "an optional"
                                : input.type().has_map_type()      ? "a map"
                                                                   : "untyped")
                            << "; cgc supports tensor inputs only";
    auto *tensor = input.mutable_type()->mutable_tensor_type();
    if (!getElementTypeForONNX(context, tensor->elem_type()))
      return emitError(loc) << "graph input '" << name << "' has element type "
                            << getONNXDataTypeName(tensor->elem_type())
                            << ", which cgc does not support";
    auto bound = inputShapes.find(name);
    if (bound != inputShapes.end()) {
      const std::vector<int64_t> &shape = bound->second;
      if (tensor->has_shape()) {
        const auto &dims = tensor->shape().dim();
        if (dims.size() != static_cast<int>(shape.size()))
          return emitError(loc)
                 << "--input-shape gives input '" << name << "' rank "
                 << shape.size() << " but the model declares rank "
                 << dims.size();
        for (int i = 0; i < dims.size(); ++i)
          if (dims[i].has_dim_value() && dims[i].dim_value() != shape[i])
            return emitError(loc)
                   << "--input-shape gives dimension " << i << " of input '"
                   << name << "' as " << shape[i]
                   << " but the model declares it as " << dims[i].dim_value();
      }
      size_t elementSize = cgc_dtype_size(
          static_cast<cgc_dtype_t>(tensor->elem_type()));
      if (!tensorBytes(shape, elementSize))
        return emitError(loc) << "--input-shape gives input '" << name
                              << "' a size cgc cannot hold: "
                              << tensorSizeError(shape, elementSize);
      auto *dims = tensor->mutable_shape();
      dims->clear_dim();
      for (int64_t dim : shape)
        dims->add_dim()->set_dim_value(dim);
      continue;
    }
    if (!tensor->has_shape())
      return emitError(loc) << "graph input '" << name
                            << "' has no shape in the model; bind one with "
                               "--input-shape "
                            << name << "=D0xD1x...";
    std::string symbolic, suggestion;
    int unbound = 0;
    for (int i = 0; i < tensor->shape().dim_size(); ++i)
      if (tensor->shape().dim(i).has_dim_value() &&
          tensor->shape().dim(i).dim_value() < 0)
        return emitError(loc)
               << "graph input '" << name << "' has a negative dimension "
               << i << " (" << tensor->shape().dim(i).dim_value()
               << "); a dimension is a size >= 0 or a symbolic name";
    SmallVector<int64_t> staticShape;
    for (int i = 0; i < tensor->shape().dim_size(); ++i)
      staticShape.push_back(tensor->shape().dim(i).has_dim_value()
                                ? tensor->shape().dim(i).dim_value()
                                : 1);
    size_t elementSize =
        cgc_dtype_size(static_cast<cgc_dtype_t>(tensor->elem_type()));
    if (!tensorBytes(staticShape, elementSize))
      return emitError(loc) << "graph input '" << name << "': "
                            << tensorSizeError(staticShape, elementSize);
    for (int i = 0; i < tensor->shape().dim_size(); ++i) {
      const auto &dim = tensor->shape().dim(i);
      suggestion += i ? "x" : "";
      if (dim.has_dim_value() && dim.dim_value() >= 0) {
        suggestion += std::to_string(dim.dim_value());
        continue;
      }
      std::string label = dim.has_dim_param() && !dim.dim_param().empty()
                              ? dim.dim_param()
                              : "D" + std::to_string(i);
      symbolic += (unbound++ ? ", " : "") + std::to_string(i) + " ('" +
                  (dim.has_dim_param() ? dim.dim_param() : "?") + "')";
      suggestion += "<" + label + ">";
    }
    if (unbound)
      return emitError(loc) << "graph input '" << name << "' has "
                            << (unbound == 1 ? "a symbolic dimension: "
                                             : "symbolic dimensions: ")
                            << symbolic << "; bind "
                            << (unbound == 1 ? "it" : "them")
                            << " with --input-shape " << name << "="
                            << suggestion;
  }

  // Sequence and optional outputs become tensor results (see
  // Importer::bindOutputs); maps and sparse tensors are refused.
  for (const onnx::ValueInfoProto &output : graph.output()) {
    if (!output.has_type() || output.type().has_tensor_type() ||
        output.type().has_sequence_type() || output.type().has_optional_type())
      continue;
    return emitError(valueLoc(output.name()))
           << "graph output '" << output.name()
           << "' is not a tensor, sequence or optional; cgc does not support it";
  }
  return success();
}

/// Sequence and optional graph inputs become tensor inputs and the nodes
/// that build the value from them, first in the graph: a sequence `x` of N
/// tensors is read from inputs `x[0]` ... `x[N-1]` by a SequenceConstruct
/// (SequenceEmpty for none); an optional `x` holding a tensor is read from
/// the tensor input `x` by an Optional node (its readers are renamed to the
/// node's output), one holding a sequence from `x[i]` likewise, and one
/// holding no value is an Optional without input. The importer then sees
/// only tensor inputs, and the nodes build the aggregates it resolves.
LogicalResult ModelLoader::expandAggregateInputs(const llvm::StringSet<> &initializers) {
  onnx::GraphProto &graph = *model.mutable_graph();
  llvm::StringSet<> aggregateNames;
  for (const onnx::ValueInfoProto &input : graph.input())
    if (!initializers.contains(input.name()) &&
        (input.type().has_sequence_type() || input.type().has_optional_type()))
      aggregateNames.insert(input.name());
  for (const auto &[name, length] : options.sequenceLengths)
    if (!aggregateNames.contains(name))
      return error() << "--input-shape " << name << "=sequence(" << length
                     << ") names '" << name << "', which is not a sequence input of the model";
  for (const std::string &name : options.absentInputs) {
    bool optional = llvm::any_of(graph.input(), [&](const onnx::ValueInfoProto &input) {
      return input.name() == name && input.type().has_optional_type();
    });
    if (!optional || initializers.contains(name))
      return error() << "--input-shape " << name << "=none names '" << name
                     << "', which is not an optional input of the model";
  }
  if (aggregateNames.empty())
    return success();

  llvm::StringSet<> used;
  collectDefinedNames(graph, used);
  auto freshName = [&](const std::string &base) {
    std::string name = base;
    for (int i = 1; used.contains(name); ++i)
      name = base + "_" + std::to_string(i);
    used.insert(name);
    return name;
  };

  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> prologue;
  // Tensor inputs x[0], x[1], ... and the node building sequence `result`.
  auto expandSequence = [&](const std::string &name, const onnx::TypeProto &elementType,
                            const std::string &result) -> LogicalResult {
    Location loc = valueLoc(name);
    if (!elementType.has_tensor_type())
      return emitError(loc) << "graph input '" << name
                            << "' is a sequence of non-tensors; cgc's sequences hold tensors";
    auto length = options.sequenceLengths.find(name);
    if (length == options.sequenceLengths.end())
      return emitError(loc) << "graph input '" << name
                            << "' is a sequence; bind its length with --input-shape " << name
                            << "=sequence(N) (its tensors are then the inputs '" << name
                            << "[0]' ... '" << name << "[N-1]')";
    onnx::NodeProto &node = *prologue.Add();
    node.set_name(name + "/sequence");
    node.add_output(result);
    if (length->second == 0) {
      node.set_op_type("SequenceEmpty");
      onnx::AttributeProto &dtype = *node.add_attribute();
      dtype.set_name("dtype");
      dtype.set_type(onnx::AttributeProto::INT);
      dtype.set_i(elementType.tensor_type().elem_type());
    } else {
      node.set_op_type("SequenceConstruct");
    }
    for (int64_t i = 0; i < length->second; ++i) {
      std::string element = name + "[" + std::to_string(i) + "]";
      if (used.contains(element))
        return emitError(loc) << "sequence input '" << name << "' would read its tensor " << i
                              << " from input '" << element
                              << "', but the model already has a value of that name";
      used.insert(element);
      onnx::ValueInfoProto &input = *inputs.Add();
      input.set_name(element);
      *input.mutable_type() = elementType;
      node.add_input(element);
    }
    return success();
  };
  auto addOptional = [&](const std::string &name, const std::string &input,
                         const onnx::TypeProto &type) {
    onnx::NodeProto &node = *prologue.Add();
    node.set_name(name + "/optional");
    node.set_op_type("Optional");
    if (!input.empty())
      node.add_input(input);
    node.add_output(name);
    onnx::AttributeProto &attribute = *node.add_attribute();
    attribute.set_name("type");
    attribute.set_type(onnx::AttributeProto::TYPE_PROTO);
    *attribute.mutable_tp() = type;
  };

  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    const std::string name = input.name();
    if (!aggregateNames.contains(name)) {
      *inputs.Add() = std::move(input);
      continue;
    }
    if (input.type().has_sequence_type()) {
      if (failed(expandSequence(name, input.type().sequence_type().elem_type(), name)))
        return failure();
      continue;
    }
    const onnx::TypeProto &held = input.type().optional_type().elem_type();
    if (options.absentInputs.count(name)) {
      addOptional(name, "", held);
      continue;
    }
    if (held.has_sequence_type()) {
      std::string sequence = freshName(name + "/sequence");
      if (failed(expandSequence(name, held.sequence_type().elem_type(), sequence)))
        return failure();
      addOptional(name, sequence, held);
      continue;
    }
    if (!held.has_tensor_type())
      return emitError(valueLoc(name)) << "graph input '" << name
                                       << "' is an optional of neither a tensor nor a sequence";
    if (llvm::any_of(graph.output(),
                     [&](const onnx::ValueInfoProto &output) { return output.name() == name; }))
      return emitError(valueLoc(name)) << "optional graph input '" << name
                                       << "' is also a graph output; pass it through a node";
    // The tensor input keeps the name the application binds; the optional
    // built from it takes a new one.
    std::string optional = freshName(name + "/optional");
    renameReads(graph, name, optional);
    onnx::ValueInfoProto &tensor = *inputs.Add();
    tensor.set_name(name);
    *tensor.mutable_type() = held;
    addOptional(optional, name, held);
  }
  graph.mutable_input()->Swap(&inputs);
  for (onnx::NodeProto &node : *graph.mutable_node())
    *prologue.Add() = std::move(node);
  graph.mutable_node()->Swap(&prologue);
  return success();
}

/// The range an op's `axis` attribute may take for an input of rank `rank`:
/// [-rank, rank) for most, one more for the ops whose result has a dimension
/// more (OneHot) or that split before any dimension (Flatten).
static std::pair<int64_t, int64_t> axisRange(StringRef opType, int64_t rank) {
  if (opType == "Flatten")
    return {-rank, rank};
  if (opType == "OneHot")
    return {-rank - 1, rank};
  return {-rank, rank - 1};
}

LogicalResult ModelLoader::checkAxesBeforeInference() {
  // libonnx's shape inference trusts some attributes: LayerNormalization
  // with axis -18 on a rank-3 input read out of bounds and crashed (found
  // by the onnx-import fuzzer). An `axis` out of range for an input whose
  // rank the model declares is refused here, before it runs.
  const onnx::GraphProto &graph = model.graph();
  llvm::StringMap<int64_t> ranks;
  auto note = [&](const onnx::ValueInfoProto &value) {
    if (value.type().has_tensor_type() && value.type().tensor_type().has_shape())
      ranks[value.name()] = value.type().tensor_type().shape().dim_size();
  };
  for (const onnx::ValueInfoProto &value : graph.input())
    note(value);
  for (const onnx::ValueInfoProto &value : graph.value_info())
    note(value);
  for (const onnx::TensorProto &initializer : graph.initializer())
    ranks[initializer.name()] = initializer.dims_size();
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.input_size() == 0)
      continue;
    auto rank = ranks.find(node.input(0));
    if (rank == ranks.end())
      continue;
    // (De)QuantizeLinear ignore `axis` for a per-tensor (scalar) scale, and
    // ONNX Runtime writes the default axis 1 into every such node.
    if ((node.op_type() == "QuantizeLinear" || node.op_type() == "DequantizeLinear") &&
        node.input_size() > 1) {
      auto scale = ranks.find(node.input(1));
      if (scale == ranks.end() || scale->second == 0)
        continue;
    }
    // libonnx's convolution and pooling inference (convPoolShapeInference)
    // indexes the input's spatial dimensions with these lists unchecked: an
    // attribute of the wrong length or a non-positive stride crashed it
    // (the onnx-import fuzzer). Refused here first.
    static const std::set<std::string> convPool = {
        "Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "MaxPool", "AveragePool",
        "LpPool", "MaxUnpool", "MaxRoiPool"};
    if (convPool.count(node.op_type()) && rank->second >= 2) {
      int64_t spatial = rank->second - 2;
      // The weight's rank must be the input's: its dimensions give the
      // kernel's spatial size.
      int weightIndex = node.op_type() == "QLinearConv" ? 3 : 1;
      bool hasWeight = node.op_type().find("Conv") != std::string::npos;
      if (hasWeight && node.input_size() > weightIndex) {
        auto weight = ranks.find(node.input(weightIndex));
        if (weight != ranks.end() && weight->second != rank->second)
          return emitError(nodeLoc(node))
                 << "the weight '" << node.input(weightIndex) << "' of node '"
                 << nodeLabel(node) << "' (" << node.op_type() << ") has rank "
                 << weight->second << " and its input '" << node.input(0) << "' rank "
                 << rank->second;
      }
      for (const onnx::AttributeProto &attribute : node.attribute()) {
        const std::string &name = attribute.name();
        int64_t expected = name == "pads" ? 2 * spatial : spatial;
        bool positive = name == "kernel_shape" || name == "strides" || name == "dilations";
        if (name != "pads" && !positive && name != "output_padding" && name != "output_shape")
          continue;
        if (attribute.type() != onnx::AttributeProto::INTS)
          continue;
        if (name != "output_shape" && attribute.ints_size() != expected)
          return emitError(nodeLoc(node))
                 << "attribute '" << name << "' of node '" << nodeLabel(node) << "' ("
                 << node.op_type() << ") has " << attribute.ints_size() << " values; input '"
                 << node.input(0) << "' of rank " << rank->second << " needs " << expected;
        for (int64_t v : attribute.ints())
          if ((positive && v <= 0) || (!positive && v < 0))
            return emitError(nodeLoc(node))
                   << "attribute '" << name << "' of node '" << nodeLabel(node) << "' ("
                   << node.op_type() << ") holds " << v;
      }
    }
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.name() != "axis" || attribute.type() != onnx::AttributeProto::INT)
        continue;
      auto [low, high] = axisRange(node.op_type(), rank->second);
      if (attribute.i() < low || attribute.i() > high)
        return emitError(nodeLoc(node))
               << "attribute 'axis' of node '"
               << nodeLabel(node)
               << "' (" << node.op_type() << ") is " << attribute.i()
               << ", outside [" << low << ", " << high << "] for input '" << node.input(0)
               << "' of rank " << rank->second;
    }
  }
  return success();
}

/// libonnx 1.12 counts one STFT frame too many when a window gives the
/// frame length and frame_step does not divide the signal evenly (8000
/// samples, a 400-sample window every 160: it infers 49 frames where the
/// spec's 1 + floor((8000 - 400) / 160), ONNX Runtime and numpy give 48),
/// every shape it infers after the STFT inherits the count, and a model
/// declaring the right count fails its inference. The values computed from
/// an STFT (this function's result) are therefore typed by cgc's own shape
/// functions only: their declared shapes are hidden from libonnx
/// (forgetShapes before inference), what it infers for them is dropped
/// (after), and the graph's outputs are checked against what the model
/// declared (restoreDeclaredOutputs).
static llvm::StringSet<> valuesAfterSTFT(const onnx::GraphProto &graph) {
  llvm::StringSet<> computed;
  for (const onnx::NodeProto &node : graph.node()) {
    bool reads = node.op_type() == "STFT" && node.domain().empty();
    for (const std::string &input : node.input())
      reads = reads || computed.contains(input);
    if (reads)
      for (const std::string &output : node.output())
        computed.insert(output);
  }
  return computed;
}

/// Drops the value_info entries of `names` and the shapes of the graph
/// outputs among them (their element types stay).
static void forgetShapes(onnx::GraphProto &graph, const llvm::StringSet<> &names) {
  if (names.empty())
    return;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (onnx::ValueInfoProto &info : *graph.mutable_value_info())
    if (!names.contains(info.name()))
      *kept.Add() = std::move(info);
  graph.mutable_value_info()->Swap(&kept);
  for (onnx::ValueInfoProto &output : *graph.mutable_output())
    if (names.contains(output.name()) && output.type().has_tensor_type())
      output.mutable_type()->mutable_tensor_type()->clear_shape();
}

/// libonnx's STFT inference reads the signal's dimensions 1 and 2
/// unchecked: a rank-1 signal crashed it (the onnx-import fuzzer, seeded
/// with the log-mel model), whether the model declared the rank or an
/// upstream op produced it. Since cgc types everything an STFT computes
/// itself (valuesAfterSTFT), libonnx never sees an STFT: for the length of
/// its inference every STFT node, in every graph, subgraph and function,
/// carries an op type without a schema, which libonnx skips, and gets its
/// own back afterwards (cgc's converter then checks the signal's rank).
class HiddenFromInference {
public:
  explicit HiddenFromInference(onnx::ModelProto &model) {
    for (onnx::FunctionProto &function : *model.mutable_functions())
      hide(*function.mutable_node());
    hide(*model.mutable_graph()->mutable_node());
  }
  ~HiddenFromInference() {
    for (onnx::NodeProto *node : hidden)
      node->set_op_type("STFT");
  }
  HiddenFromInference(const HiddenFromInference &) = delete;
  HiddenFromInference &operator=(const HiddenFromInference &) = delete;

private:
  static constexpr const char *kHiddenType = "cgc.STFT.typed_by_cgc";

  void hide(google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes) {
    for (onnx::NodeProto &node : nodes) {
      for (onnx::AttributeProto &attribute : *node.mutable_attribute()) {
        if (attribute.has_g())
          hide(*attribute.mutable_g()->mutable_node());
        for (onnx::GraphProto &graph : *attribute.mutable_graphs())
          hide(*graph.mutable_node());
      }
      if (node.op_type() == "STFT" && node.domain().empty()) {
        node.set_op_type(kHiddenType);
        hidden.push_back(&node);
      }
    }
  }

  std::vector<onnx::NodeProto *> hidden;
};

static void restoreDeclaredOutputs(
    onnx::GraphProto &graph, const llvm::StringSet<> &names,
    const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> &declared) {
  for (onnx::ValueInfoProto &output : *graph.mutable_output())
    if (names.contains(output.name()))
      for (const onnx::ValueInfoProto &original : declared)
        if (original.name() == output.name())
          *output.mutable_type() = original.type();
}

LogicalResult ModelLoader::inferShapes() {
  if (failed(checkAxesBeforeInference()))
    return failure();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> declaredOutputs =
      model.graph().output();
  llvm::StringSet<> miscounted = valuesAfterSTFT(model.graph());
  forgetShapes(*model.mutable_graph(), miscounted);
  std::string message;
  {
    HiddenFromInference hidden(model);
    message = onnx_glue::inferShapes(model);
  }
  if (message.empty()) {
    forgetShapes(*model.mutable_graph(), miscounted);
    restoreDeclaredOutputs(*model.mutable_graph(), miscounted, declaredOutputs);
    return success();
  }
  // libonnx names the node as "(op_type:Add, node name: add): <error>";
  // report at that node when there is one.
  StringRef text = StringRef(message).trim();
  size_t at = text.find("(op_type:");
  if (at != StringRef::npos) {
    StringRef rest = text.substr(at + strlen("(op_type:"));
    auto [where, detail] = rest.split("): ");
    auto [opType, name] = where.split(", node name: ");
    if (!opType.empty() && !detail.empty()) {
      std::string label = name.str();
      if (label.empty())
        for (const onnx::NodeProto &node : model.graph().node())
          if (node.op_type() == opType && node.name().empty()) {
            label = nodeLabel(node);
            break;
          }
      return emitError(getONNXNodeLoc(context, label, opType, path))
             << "ONNX shape inference failed: " << detail.trim();
    }
  }
  return error() << "ONNX shape inference failed: " << text;
}

} // namespace

std::string import::nodeLabel(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  for (const std::string &output : node.output())
    if (!output.empty())
      return output;
  return "<unnamed>";
}

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

void registerImportDialects(DialectRegistry &registry) {
  registry.insert<CGCDialect, op::CGCOpDialect>();
}

/// Imports the model at `path`, or `bytes` (labelled `path`) when given.
static FailureOr<ImportedModel> importModel(StringRef path,
                                            std::shared_ptr<llvm::MemoryBuffer> bytes,
                                            const ImportOptions &options,
                                            MLIRContext &context) {
  context.loadDialect<CGCDialect, op::CGCOpDialect>();
  auto model = std::make_unique<onnx::ModelProto>();
  ImportedModel result;
  ModelLoader loader(&context, path, options, *model, result.constants);
  if (bytes)
    loader.setBytes(std::move(bytes));
  if (failed(loader.read()) || failed(loader.checkHeader()) ||
      failed(loader.moveConstants()) || failed(loader.checkGraph()) ||
      failed(loader.bindInputs()))
    return failure();
  if (options.onnxShapeInference && failed(loader.inferShapes()))
    return failure();
  import::Importer importer(&context, options, path, *model, result.constants);
  FailureOr<OwningOpRef<ModuleOp>> module = importer.run();
  if (failed(module))
    return failure();
  result.module = std::move(*module);
  return result;
}

FailureOr<ImportedModel> importONNX(StringRef path, const ImportOptions &options,
                                    MLIRContext &context) {
  return importModel(path, nullptr, options, context);
}

FailureOr<ImportedModel>
importONNXBuffer(std::shared_ptr<llvm::MemoryBuffer> bytes, StringRef name,
                 const ImportOptions &options, MLIRContext &context) {
  if (!bytes) {
    emitError(getONNXFileLoc(&context, name)) << "no model bytes were given";
    return failure();
  }
  return importModel(name, std::move(bytes), options, context);
}

static std::string splitOption(StringRef text, StringRef flag,
                               std::string &name, StringRef &value) {
  auto [left, right] = text.split('=');
  if (!text.contains('=') || left.empty())
    return flag.str() + " expects NAME=VALUE, got '" + text.str() + "'";
  name = left.str();
  value = right;
  return "";
}

std::string parseInputShapeOption(StringRef text, ImportOptions &options) {
  std::string name;
  StringRef value;
  std::string error = splitOption(text, "--input-shape", name, value);
  if (!error.empty())
    return error;
  bool given = options.inputShapes.count(name) || options.sequenceLengths.count(name) ||
               options.absentInputs.count(name);
  if (given)
    return "--input-shape gives input '" + name + "' twice";
  if (value == "none") {
    options.absentInputs.insert(name);
    return "";
  }
  if (value.consume_front("sequence(")) {
    int64_t length = 0;
    if (!value.consume_back(")") || value.getAsInteger(10, length) || length < 0 ||
        length > kMaxSequenceInputLength)
      return "--input-shape " + text.str() +
             ": a sequence's length is written sequence(N), N in [0, " +
             std::to_string(kMaxSequenceInputLength) + "]";
    options.sequenceLengths[name] = length;
    return "";
  }
  std::vector<int64_t> shape;
  if (!value.empty()) {
    SmallVector<StringRef> dims;
    value.split(dims, 'x');
    for (StringRef dim : dims) {
      int64_t size;
      if (dim.getAsInteger(10, size) || size < 0)
        return "--input-shape " + text.str() +
               ": dimensions must be non-negative integers separated by 'x'";
      shape.push_back(size);
    }
  }
  if (!elementCount(shape))
    return "--input-shape " + text.str() + ": the shape has more than 2^" +
           std::to_string(llvm::Log2_64(kMaxTensorElements)) +
           " elements (cgc's limit)";
  options.inputShapes[name] = std::move(shape);
  return "";
}

std::string parseFreezeInputOption(StringRef text, ImportOptions &options) {
  std::string name;
  StringRef value;
  std::string error = splitOption(text, "--freeze-input", name, value);
  if (!error.empty())
    return error;
  if (value.empty())
    return "--freeze-input " + text.str() + ": the file path is empty";
  if (options.frozenInputs.count(name))
    return "--freeze-input gives input '" + name + "' twice";
  options.frozenInputs[name] = value.str();
  return "";
}

} // namespace cgc
